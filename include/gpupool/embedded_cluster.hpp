// gpupool/embedded_cluster.hpp — an embedded API server and a Cluster connected to it as the admin:
// what the command's --embedded, Python's EmbeddedCluster and the tests start.
//
//   gpupool::EmbeddedCluster cluster({.topology = "seed"});   // a cluster of its own, manual clock
//   cluster.taint("cn-beijing.192.168.3.230", {"ssd_node=invalid:NoSchedule"});
//   cluster.submit(gpupool::to_workload({.kind = "mpi", .name = "mpi-dist", ...}));
//   cluster.server().advance(std::chrono::seconds(30));     // pods start on the cluster clock
//   std::cout << cluster.get("mpi-dist").to_text();
//
// With `state`, the cluster is the topology's shared state (embedded_state.hpp): the one
// `gpupool --embedded TOPOLOGY` commands and kubectl see, served by this process or joined over
// HTTPS when another process serves it already.
#pragma once

#include "gpupool/cluster.hpp"
#include "gpupool/embedded.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace gpupool {

struct EmbeddedClusterOptions {
  /// A built-in topology ("seed", "iiis"), a topology file, or "none" / empty: no nodes.
  std::string topology = "seed";
  /// nullopt: a cluster of its own, gone when this object goes. A string: the topology's shared
  /// state in that directory ("": EmbeddedStatePaths::default_dir()).
  std::optional<std::string> state{};
  /// With state: true serves it to other processes until stop() (Python, `cluster serve`); false
  /// owns it only while this object lives (one command). Either way, when another process serves
  /// it already, the cluster joins that one (or, without may_join, throws saying who serves it).
  bool serve = true;
  bool may_join = true;
  /// nullopt: a manual clock (time moves by server().advance()) for a cluster of its own, the wall
  /// clock for a shared state (other processes see it move).
  std::optional<bool> manual_clock{};
  /// How the admin connects (namespace, logger, retry; the kubeconfig is the admin's). An empty
  /// profile takes the topology's (Topology::profile: "iiis" for the iiis topology), else generic.
  ConnectOptions connect{};
  /// Told while another process holds the shared state's lock (see EmbeddedSessionOptions::on_wait).
  std::function<void(const std::string&)> on_wait{};
  /// The rest of the server's options (users, port, kubeconfig_dir, mpijob_version, faults, ...);
  /// its topology, manual_clock and state_file are the ones above.
  EmbeddedOptions server{};
};

/// The site profile a client of `topology` uses when none is asked for: the topology's own
/// (Topology::profile), "" (generic) for "none", an empty name or a topology without one.
std::string topology_profile(const std::string& topology);

/// A Cluster whose server runs in this process (or, with a shared state, in the process that
/// serves it). Copies of the Cluster base share the connection but not the server's lifetime; own
/// it as an EmbeddedCluster (Cluster has no virtual destructor).
class EmbeddedCluster : public Cluster {
 public:
  /// Starts the server (or joins the shared state's) and connects as the admin. Throws
  /// gpupool::Error when it cannot (port taken, a corrupt state file, a bad profile...).
  explicit EmbeddedCluster(const EmbeddedClusterOptions& options = {});
  ~EmbeddedCluster();  ///< stop()
  EmbeddedCluster(EmbeddedCluster&&) noexcept;
  EmbeddedCluster& operator=(EmbeddedCluster&&) noexcept;

  /// Stops the server it owns (watches end); an owner of the shared state folds its journal into
  /// the snapshot and lets go of the lock. Idempotent.
  void stop();
  bool stopped() const;
  /// True when the shared state was served by another process and this cluster joined it.
  bool joined() const;

  /// The in-process server. Throws gpupool::Error when stopped or joined (the server, its clock
  /// and its user kubeconfigs are then another process's).
  EmbeddedServer& server() const;
  std::string url() const;               ///< "https://127.0.0.1:<port>" (also when joined)
  std::string admin_kubeconfig() const;  ///< path (also when joined)
  /// A Cluster acting as one of the server's users, in the user's own namespace; an empty profile
  /// takes this cluster's.
  Cluster connect(const std::string& user, const std::string& profile = "") const;

 private:
  struct Impl;
  struct Started;
  explicit EmbeddedCluster(Started started);
  static Started start(const EmbeddedClusterOptions& options);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpupool
