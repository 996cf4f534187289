// The embedded API server's sockets behave as the real one's: Go sets TCP_NODELAY on every TCP
// connection, so no response waits for the client's delayed ACK.
#include <doctest/doctest.h>

#include "gpupool/embedded.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

int port_of(const std::string& url) { return std::atoi(url.substr(url.rfind(':') + 1).c_str()); }

/// TCP_NODELAY of the server's end of the connection from `client_port` (the server runs in this
/// process, so its socket is one of our descriptors); -1 while it has not been accepted yet.
int server_side_nodelay(int server_port, int client_port) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* e = ::readdir(dir)) {
    int fd = std::atoi(e->d_name);
    sockaddr_in local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (fd <= 2 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0 || local.sin_family != AF_INET ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0)
      continue;
    if (ntohs(local.sin_port) != server_port || ntohs(peer.sin_port) != client_port) continue;
    int on = 0;
    socklen_t len = sizeof on;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &len) == 0) found = on;
  }
  ::closedir(dir);
  return found;
}

}  // namespace

TEST_CASE("accepted connections have TCP_NODELAY, as Go's API server's do") {
  gpupool::EmbeddedOptions o;
  o.topology = "seed";
  gpupool::EmbeddedServer server(o);
  const int server_port = port_of(server.url());
  REQUIRE(server_port > 0);

  int client = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(client >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  sockaddr_in mine{};
  socklen_t ml = sizeof mine;
  REQUIRE(::getsockname(client, reinterpret_cast<sockaddr*>(&mine), &ml) == 0);
  const int client_port = ntohs(mine.sin_port);

  // The server's accept thread sets the option right after accept(); wait for that condition
  // (bounded), not for a fixed time.
  int nodelay = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((nodelay = server_side_nodelay(server_port, client_port)) != 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  CHECK(nodelay == 1);
  ::close(client);
}
