// EmbeddedCluster: "start an embedded server (or join the shared state's) and connect as the admin",
// written once for the command, Python, the tests and the examples.
#include "gpupool/embedded_cluster.hpp"

#include "gpupool/embedded_state.hpp"
#include "gpupool/error.hpp"
#include "gpupool/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace gpupool {

std::string topology_profile(const std::string& topology) {
  if (topology.empty() || topology == "none") return "";
  if (std::filesystem::exists(topology)) return Topology::load(topology).profile;
  const auto names = Topology::builtin_names();
  if (std::find(names.begin(), names.end(), topology) != names.end()) return Topology::builtin(topology).profile;
  return "";  // not a topology (anymore): the server's own error, or its saved state, says the rest
}

struct EmbeddedCluster::Impl {
  ConnectOptions connect;                    ///< the admin's (kubeconfig, profile, logger, retry); users' copy it
  std::unique_ptr<EmbeddedServer> server;    ///< a cluster of its own
  std::unique_ptr<EmbeddedSession> session;  ///< a shared state, owned or joined
};

struct EmbeddedCluster::Started {
  std::unique_ptr<Impl> impl;
  Cluster admin;
};

EmbeddedCluster::Started EmbeddedCluster::start(const EmbeddedClusterOptions& options) {
  auto impl = std::make_unique<Impl>();
  EmbeddedOptions server = options.server;
  server.topology = options.topology;
  server.manual_clock = options.manual_clock.value_or(!options.state.has_value());
  ConnectOptions& c = impl->connect;
  c = options.connect;
  if (options.state) {
    impl->session = std::make_unique<EmbeddedSession>(EmbeddedSessionOptions{.topology = options.topology,
                                                                             .state_dir = *options.state,
                                                                             .serve = options.serve,
                                                                             .may_join = options.may_join,
                                                                             .server = std::move(server),
                                                                             .on_wait = options.on_wait});
    c.kubeconfig = impl->session->admin_kubeconfig();
  } else {
    impl->server = std::make_unique<EmbeddedServer>(server);
    c.kubeconfig = impl->server->admin_kubeconfig();
  }
  c.context.clear();
  if (c.profile.empty()) c.profile = topology_profile(options.topology);
  Cluster admin = Cluster::connect(c);
  return Started{std::move(impl), std::move(admin)};
}

EmbeddedCluster::EmbeddedCluster(const EmbeddedClusterOptions& options) : EmbeddedCluster(start(options)) {}
EmbeddedCluster::EmbeddedCluster(Started started) : Cluster(std::move(started.admin)), impl_(std::move(started.impl)) {}
EmbeddedCluster::EmbeddedCluster(EmbeddedCluster&&) noexcept = default;
EmbeddedCluster& EmbeddedCluster::operator=(EmbeddedCluster&&) noexcept = default;

EmbeddedCluster::~EmbeddedCluster() {
  try {
    stop();
  } catch (...) {  // a destructor does not throw; stop() explicitly to see the error
  }
}

void EmbeddedCluster::stop() {
  if (!impl_) return;  // moved from
  std::unique_ptr<EmbeddedServer> server = std::move(impl_->server);
  std::unique_ptr<EmbeddedSession> session = std::move(impl_->session);
  server.reset();                 // ~EmbeddedServer stops serving
  if (session) session->close();  // an owner folds its journal into the snapshot and lets go of the lock
}

bool EmbeddedCluster::stopped() const { return !impl_ || (!impl_->server && !impl_->session); }

bool EmbeddedCluster::joined() const { return impl_ && impl_->session && impl_->session->joined(); }

EmbeddedServer& EmbeddedCluster::server() const {
  if (stopped()) throw Error("the embedded cluster was stopped; start a new EmbeddedCluster");
  if (joined())
    throw Error(
        fmt::format("this EmbeddedCluster joined the one served by another process ({}); its server, "
                    "clock and user kubeconfigs are that process's",
                    impl_->session->url()));
  return impl_->server ? *impl_->server : *impl_->session->server();
}

std::string EmbeddedCluster::url() const {
  if (stopped()) throw Error("the embedded cluster was stopped; start a new EmbeddedCluster");
  return impl_->session ? impl_->session->url() : impl_->server->url();
}

std::string EmbeddedCluster::admin_kubeconfig() const {
  if (stopped()) throw Error("the embedded cluster was stopped; start a new EmbeddedCluster");
  return impl_->session ? impl_->session->admin_kubeconfig() : impl_->server->admin_kubeconfig();
}

Cluster EmbeddedCluster::connect(const std::string& user, const std::string& profile) const {
  ConnectOptions c = impl_ ? impl_->connect : ConnectOptions{};
  c.kubeconfig = server().kubeconfig(user);
  c.profile = profile.empty() ? this->profile().name : profile;
  c.namespace_.clear();
  return Cluster::connect(c);
}

}  // namespace gpupool
