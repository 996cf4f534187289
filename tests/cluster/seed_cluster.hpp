// An embedded cluster with the seed's nodes (topology "seed") and its admin: the fixture the
// cluster tests share.
#pragma once

#include "gpupool/embedded_cluster.hpp"

namespace gpupool::testing {

struct Seed {
  EmbeddedCluster admin{};  // the seed topology, a cluster of its own, on a manual clock
  EmbeddedServer& server = admin.server();
};

}  // namespace gpupool::testing
