// A SOCKS5 proxy on 127.0.0.1 for tests (RFC 1928, with RFC 1929's user and password when asked):
// every CONNECT, whatever it names, is tunnelled to 127.0.0.1:`port`; what it named is recorded.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kube/http_test_server.hpp"  // send_all, pipe_both_ways

namespace gpupool::test {

class Socks5TestServer {
 public:
  /// `user`/`password` non-empty: only that pair is let through (method 2), else no authentication.
  explicit Socks5TestServer(int port, std::string user = {}, std::string password = {})
      : target_port_(port), user_(std::move(user)), password_(std::move(password)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 64) != 0)
      throw std::runtime_error("socks5 test server: cannot listen");
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accept_thread_ = std::thread([this] {
      for (int fd; (fd = ::accept(listen_fd_, nullptr, nullptr)) >= 0;) {
        std::lock_guard lock(mu_);
        fds_.push_back(fd);
        threads_.emplace_back([this, fd] { serve(fd); });
      }
    });
  }
  ~Socks5TestServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    accept_thread_.join();
    {
      std::lock_guard lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : threads_) t.join();
    for (int fd : fds_) ::close(fd);
    ::close(listen_fd_);
  }
  int port() const { return port_; }
  std::string url(const std::string& scheme = "socks5") const {
    return scheme + "://127.0.0.1:" + std::to_string(port_);
  }
  /// What each CONNECT named: "host:port" ("[v6]:port"), and the user it authenticated as.
  std::vector<std::string> targets() {
    std::lock_guard lock(mu_);
    return targets_;
  }

 private:
  static bool read_exactly(int fd, unsigned char* buf, std::size_t n) {
    for (std::size_t got = 0; got < n;) {
      const ssize_t k = ::recv(fd, buf + got, n - got, 0);
      if (k <= 0) return false;
      got += static_cast<std::size_t>(k);
    }
    return true;
  }
  void serve(int fd) {
    unsigned char b[512];
    if (!read_exactly(fd, b, 2) || b[0] != 5 || !read_exactly(fd, b + 2, b[1])) return;
    const bool want_auth = !user_.empty();
    bool offered = false;
    for (int i = 0; i < b[1]; ++i) offered |= b[2 + i] == (want_auth ? 2 : 0);
    const unsigned char method[2] = {5, static_cast<unsigned char>(offered ? (want_auth ? 2 : 0) : 0xff)};
    if (!send_all(fd, method, 2) || !offered) return;
    std::string who;
    if (want_auth) {
      if (!read_exactly(fd, b, 2) || !read_exactly(fd, b + 2, b[1])) return;
      const std::string user(reinterpret_cast<char*>(b + 2), b[1]);
      unsigned char plen = 0;
      if (!read_exactly(fd, &plen, 1) || !read_exactly(fd, b, plen)) return;
      const std::string password(reinterpret_cast<char*>(b), plen);
      const bool ok = user == user_ && password == password_;
      const unsigned char answer[2] = {1, static_cast<unsigned char>(ok ? 0 : 1)};
      if (!send_all(fd, answer, 2) || !ok) return;
      who = " as " + user;
    }
    if (!read_exactly(fd, b, 4) || b[0] != 5 || b[1] != 1) return;
    std::string host;
    if (b[3] == 1) {
      if (!read_exactly(fd, b + 4, 4)) return;
      char text[INET_ADDRSTRLEN];
      host = ::inet_ntop(AF_INET, b + 4, text, sizeof text);
    } else if (b[3] == 4) {
      if (!read_exactly(fd, b + 4, 16)) return;
      char text[INET6_ADDRSTRLEN];
      host = "[" + std::string(::inet_ntop(AF_INET6, b + 4, text, sizeof text)) + "]";
    } else {
      unsigned char len = 0;
      if (!read_exactly(fd, &len, 1) || !read_exactly(fd, b + 4, len)) return;
      host.assign(reinterpret_cast<char*>(b + 4), len);
    }
    unsigned char port[2];
    if (!read_exactly(fd, port, 2)) return;
    {
      std::lock_guard lock(mu_);
      targets_.push_back(host + ":" + std::to_string(port[0] << 8 | port[1]) + who);
    }
    const int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(target_port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool connected = ::connect(up, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    const unsigned char reply[10] = {5, static_cast<unsigned char>(connected ? 0 : 5), 0, 1, 127, 0, 0, 1, 0, 0};
    if (!send_all(fd, reply, sizeof reply) || !connected) {
      ::close(up);
      return;
    }
    {
      std::lock_guard lock(mu_);
      fds_.push_back(up);
    }
    pipe_both_ways(fd, up);
    ::shutdown(up, SHUT_RDWR);
    ::shutdown(fd, SHUT_RDWR);
  }

  int target_port_;
  std::string user_, password_;
  int listen_fd_ = -1, port_ = 0;
  std::mutex mu_;
  std::vector<std::string> targets_;
  std::list<int> fds_;
  std::thread accept_thread_;
  std::list<std::thread> threads_;
};

}  // namespace gpupool::test
