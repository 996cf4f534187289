// gpupool/gpupool.hpp — the whole public API in one include. Read it top to bottom:
//
//   values        quantity, taint (+ tolerations), time, names, node, image, storage, resources,
//                 staging, workload, submit_options, profile, topology
//   objects       render (Workload + Profile -> Kubernetes objects), manifest (YAML / JSON text)
//   talking       error, logger, retry, transport, kubeconfig, client (any resource, any verb)
//   the facade    cluster (nodes, taints, PVCs, submit / get / list / logs / wait / explain / delete)
//   in-process    embedded (an API server), embedded_state (its shared state), embedded_cluster
//                 (server + connected Cluster), scheduling (kube-scheduler's rules)
//
//   #include <gpupool/gpupool.hpp>
//   gpupool::EmbeddedCluster cluster({.topology = "seed"});
//   std::cout << cluster.nodes().to_text();
#pragma once

#include "gpupool/version.hpp"

#include "gpupool/image.hpp"
#include "gpupool/names.hpp"
#include "gpupool/node.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/quantity.hpp"
#include "gpupool/resources.hpp"
#include "gpupool/staging.hpp"
#include "gpupool/storage.hpp"
#include "gpupool/submit_options.hpp"
#include "gpupool/taint.hpp"
#include "gpupool/time.hpp"
#include "gpupool/topology.hpp"
#include "gpupool/workload.hpp"

#include "gpupool/manifest.hpp"
#include "gpupool/render.hpp"

#include "gpupool/client.hpp"
#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "gpupool/logger.hpp"
#include "gpupool/retry.hpp"
#include "gpupool/transport.hpp"

#include "gpupool/cluster.hpp"

#include "gpupool/embedded.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/embedded_state.hpp"
#include "gpupool/scheduling.hpp"
