// How a command reaches its cluster: a kubeconfig (real clusters) or an embedded cluster whose
// state persists between commands (--embedded TOPOLOGY).
#pragma once

#include "args.hpp"

#include "gpupool/cluster.hpp"

#include <memory>

namespace gpupool::cli {

/// A connected cluster plus, for --embedded, the in-process server that serves it (its state is
/// saved when the Connection is closed).
class Connection {
 public:
  static Connection open(const ParsedArgs& args);
  ~Connection();
  Connection(Connection&&) noexcept;
  Cluster& cluster() { return *cluster_; }
  /// Saves the embedded cluster's state (no-op for real clusters). Called on success.
  void close();

 private:
  Connection() = default;
  struct Embedded;
  std::unique_ptr<Embedded> embedded_;
  std::unique_ptr<Cluster> cluster_;
};

}  // namespace gpupool::cli
