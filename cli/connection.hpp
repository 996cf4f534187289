// How a command reaches its cluster: a kubeconfig (real clusters) or an embedded cluster whose
// state persists between commands (--embedded TOPOLOGY).
#pragma once

#include "args.hpp"

#include "gpupool/cluster.hpp"
#include "gpupool/embedded_cluster.hpp"

#include <memory>

namespace gpupool::cli {

/// --run simulate|local (default simulate); a bad value is a UsageError naming --run.
RunMode run_mode_flag(const ParsedArgs& args);
/// --run for the embedded cluster `topology`'s shared state: the flag, else the mode the last --run
/// on it asked for (Simulate when none); the caller remembers a given --run once the cluster started.
RunMode embedded_run_mode(const ParsedArgs& args, const std::string& topology);

/// A connected cluster: a kubeconfig's, or for --embedded an EmbeddedCluster on the topology's
/// shared state (saved when the Connection is closed).
class Connection {
 public:
  static Connection open(const ParsedArgs& args);
  ~Connection();
  Connection(Connection&&) noexcept;
  Cluster& cluster();
  /// Saves the embedded cluster's state (no-op for real clusters). Called on success.
  void close();

 private:
  Connection() = default;
  std::unique_ptr<EmbeddedCluster> embedded_;
  std::unique_ptr<Cluster> remote_;
};

}  // namespace gpupool::cli
