#include "connection.hpp"

#include "gpupool/embedded_cluster.hpp"
#include "gpupool/embedded_state.hpp"
#include "gpupool/error.hpp"
#include "gpupool/logger.hpp"
#include "gpupool/profile.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string_view>

namespace gpupool::cli {

Connection::~Connection() = default;
Connection::Connection(Connection&&) noexcept = default;

namespace {

std::string embedded_topology(const ParsedArgs& args) {
  std::string topology = args.get("embedded");
  if (topology.empty() && !args.has("kubeconfig") && !args.has("context"))
    if (const char* e = std::getenv("GPUPOOL_EMBEDDED"); e && *e) topology = e;
  return topology;
}

/// Where the command keeps what outlives it (discovery documents, TLS sessions), as kubectl keeps
/// ~/.kube/cache: $GPUPOOL_CACHE_DIR ("off" keeps nothing), else $XDG_CACHE_HOME/gpupool, else
/// ~/.cache/gpupool.
std::string cache_dir() {
  if (const char* d = std::getenv("GPUPOOL_CACHE_DIR")) return std::string_view(d) == "off" ? std::string() : d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/gpupool";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/gpupool";
  return {};
}

}  // namespace

RunMode run_mode_flag(const ParsedArgs& args) {
  if (!args.has("run")) return RunMode::Simulate;
  try {
    return parse_run_mode(args.get("run"), "--run");
  } catch (const ValidationError& e) {
    throw UsageError(e.what());
  }
}

RunMode embedded_run_mode(const ParsedArgs& args, const std::string& topology) {
  if (!args.has("run")) return remembered_run_mode(EmbeddedStatePaths::of(topology));  // the last --run's
  return run_mode_flag(args);
}

Connection Connection::open(const ParsedArgs& args) {
  Connection c;
  const std::string topology = embedded_topology(args);
  ConnectOptions co;
  // The library never prints: its notes (insecure TLS, a kubeconfig readable by others, retries)
  // go to stderr here, warnings always, info/debug with --loglevel.
  co.logger = stream_logger(std::cerr, parse_log_level(args.get("loglevel", "warning"), "--loglevel"));
  co.namespace_ = args.get("namespace");
  co.profile = args.get("profile");
  // A --profile that names no profile (or a file that is not one) is bad usage: exit 2.
  if (!co.profile.empty()) try {
      (void)Profile::resolve(co.profile);
    } catch (const ConfigError& e) {
      throw UsageError(std::string("--profile: ") + e.what());
    }
  if (!topology.empty()) {
    // The topology's shared state (issue #16): joined over HTTPS while `cluster serve` (or Python)
    // serves it, else owned by this command until close(), other commands waiting for the lock.
    c.embedded_ = std::make_unique<EmbeddedCluster>(
        EmbeddedClusterOptions{.topology = topology,
                               .state = "",
                               .serve = false,
                               .connect = co,
                               .on_wait = [](const std::string& m) { std::cerr << m << "\n"; },
                               .server = EmbeddedOptions{.run = embedded_run_mode(args, topology)}});
    // Started with it: later commands on this cluster keep the mode (embedded_state.hpp).
    if (args.has("run")) remember_run_mode(EmbeddedStatePaths::of(topology), run_mode_flag(args));
  } else {
    if (args.has("run")) throw UsageError("--run: a run mode is for an embedded cluster; add --embedded TOPOLOGY");
    co.kubeconfig = args.get("kubeconfig");
    co.context = args.get("context");
    co.cache_dir = cache_dir();
    const auto start = std::chrono::steady_clock::now();
    c.remote_ = std::make_unique<Cluster>(Cluster::connect(co));
    co.logger(LogLevel::debug,
              fmt::format("kubeconfig read, client ready: {:.2f} ms (no request yet)",
                          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()));
  }
  return c;
}

Cluster& Connection::cluster() { return embedded_ ? *embedded_ : *remote_; }

void Connection::close() {
  if (embedded_) embedded_->stop();
}

}  // namespace gpupool::cli
