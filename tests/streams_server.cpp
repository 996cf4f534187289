// For tests/python/test_streams.py: an embedded server (seed topology, manual clock) whose
// StreamHandler runs exec as local processes and forwards ports 80 and 6006 to an echo server
// (tests/local_stream_handler.hpp). Prints the admin kubeconfig's path, then obeys lines on
// stdin: "advance SECONDS" (answers "ok"); EOF stops it.
#include <iostream>
#include <string>

#include "gpupool/embedded.hpp"
#include "local_stream_handler.hpp"

int main() {
  gpupool::testing::EchoServer echo;
  gpupool::EmbeddedOptions o;
  o.topology = "seed";
  o.stream_handler = std::make_shared<gpupool::testing::LocalStreamHandler>(echo.port());
  gpupool::EmbeddedServer server(o);
  std::cout << server.admin_kubeconfig() << std::endl;
  std::string word;
  long seconds = 0;
  while (std::cin >> word >> seconds) {
    if (word == "advance") server.advance(std::chrono::seconds(seconds));
    std::cout << "ok" << std::endl;
  }
  return 0;
}
