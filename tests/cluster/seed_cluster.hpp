// An embedded cluster with the seed's nodes (topology "seed") and its admin: the fixture the
// cluster tests share.
#pragma once

#include "gpupool/cluster.hpp"
#include "gpupool/embedded.hpp"

namespace gpupool::testing {

struct Seed {
  static EmbeddedOptions options() {
    EmbeddedOptions eo;
    eo.topology = "seed";
    return eo;
  }
  EmbeddedServer server{options()};
  Cluster admin = Cluster::connect({.kubeconfig = server.admin_kubeconfig()});
};

}  // namespace gpupool::testing
