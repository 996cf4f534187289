#include "connection.hpp"

#include "gpupool/embedded.hpp"
#include "gpupool/embedded_state.hpp"
#include "gpupool/error.hpp"
#include "gpupool/logger.hpp"
#include "gpupool/profile.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

namespace gpupool::cli {

struct Connection::Embedded {
  std::unique_ptr<EmbeddedSession> session;
};

Connection::~Connection() = default;
Connection::Connection(Connection&&) noexcept = default;

Connection Connection::open(const ParsedArgs& args) {
  Connection c;
  std::string topology = args.get("embedded");
  if (topology.empty() && !args.has("kubeconfig") && !args.has("context"))
    if (const char* e = std::getenv("GPUPOOL_EMBEDDED"); e && *e) topology = e;
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
    c.embedded_ = std::make_unique<Embedded>();
    EmbeddedSessionOptions so;
    so.topology = topology;
    so.server.manual_clock = false;
    so.on_wait = [](const std::string& m) { std::cerr << m << "\n"; };
    if (co.profile.empty() && topology == "iiis") co.profile = "iiis";
    c.embedded_->session = std::make_unique<EmbeddedSession>(std::move(so));
    co.kubeconfig = c.embedded_->session->admin_kubeconfig();
  } else {
    co.kubeconfig = args.get("kubeconfig");
    co.context = args.get("context");
  }
  c.cluster_ = std::make_unique<Cluster>(Cluster::connect(co));
  return c;
}

void Connection::close() {
  if (embedded_) embedded_->session->close();
}

}  // namespace gpupool::cli
