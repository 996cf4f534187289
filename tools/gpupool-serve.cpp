// gpupool-serve — runs the embedded Kubernetes API server in the foreground until SIGINT/SIGTERM.
//
//   gpupool-serve [--port N] [--user NAME]... [--topology seed|iiis|FILE] [--kubeconfig-dir DIR]
//                 [--mpijob-version v1|v2beta1] [--manual-clock]
// Prints the URL and the kubeconfig paths, then serves with a wall-clock clock (unless
// --manual-clock). Until `gpupool cluster serve` exists, this is the command-line way in.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "gpupool/embedded.hpp"
#include "gpupool/error.hpp"

namespace {
int usage(const char* argv0) {
  fmt::print(stderr,
             "usage: {} [--port N] [--user NAME]... [--topology seed|iiis|FILE] [--kubeconfig-dir DIR]\n"
             "          [--mpijob-version v1|v2beta1] [--manual-clock]\n",
             argv0);
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  gpupool::EmbeddedOptions options;
  options.manual_clock = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "{}: {} needs a value\n", argv[0], a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--port") {
      const std::string v = value();
      char* end = nullptr;
      const long p = std::strtol(v.c_str(), &end, 10);
      if (!end || *end || p < 0 || p > 65535) {
        fmt::print(stderr, "{}: --port: invalid value \"{}\": must be a number from 0 to 65535\n", argv[0], v);
        return 2;
      }
      options.port = static_cast<int>(p);
    } else if (a == "--user") {
      options.users.push_back(value());
    } else if (a == "--topology") {
      options.topology = value();
    } else if (a == "--kubeconfig-dir") {
      options.kubeconfig_dir = value();
    } else if (a == "--mpijob-version") {
      options.mpijob_version = value();
    } else if (a == "--manual-clock") {
      options.manual_clock = true;
    } else if (a == "-h" || a == "--help") {
      usage(argv[0]);
      return 0;
    } else {
      fmt::print(stderr, "{}: unknown argument \"{}\"\n", argv[0], a);
      return usage(argv[0]);
    }
  }
  // Block the signals in every thread, then wait for one in main.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  try {
    gpupool::EmbeddedServer server(options);
    fmt::print("gpupool embedded cluster serving at {}\n", server.url());
    fmt::print("admin kubeconfig: {}\n", server.admin_kubeconfig());
    for (const auto& u : options.users)
      fmt::print("user {}: {} (token), {} (client certificate)\n", u, server.kubeconfig(u), server.cert_kubeconfig(u));
    std::fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    fmt::print("received {}, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    server.stop();
  } catch (const gpupool::Error& e) {
    fmt::print(stderr, "gpupool-serve: {}\n", e.what());
    return 1;
  }
  return 0;
}
