// bench/store_fill.hpp — loads cluster_gen.hpp's generated cluster into an embedded API server's
// store (bench_store's scheduler section, bench_views' server): make_pod's 200 namespaces, each with
// the bound claim its pods mount, the nodes, then the pods, all through Store::create (admission,
// validation, watch fan-out). Whatever is subscribed to the store (a server's scheduler, kubelet,
// controllers) reacts to each create as it would to a client's.
#pragma once

#include <random>
#include <string>

#include <boost/json.hpp>

#include "cluster_gen.hpp"
#include "embedded/store.hpp"

namespace bench {

inline void fill_store(gpupool::embedded::Store& store, int pods) {
  const auto& pod_type = store.type("", "pods");
  const auto& pvc_type = store.type("", "persistentvolumeclaims");
  for (int n = 0; n < 200; ++n) {  // make_pod's namespaces, each with the claim its pods mount
    const std::string ns = "user-" + std::to_string(n);
    if (!store.find(store.type("", "namespaces"), "", ns))
      store.create(store.type("", "namespaces"), "", json::object{{"metadata", {{"name", ns}}}});
    store.create(
        pvc_type, ns,
        json::parse(R"({"metadata":{"name":"data-)" + ns +
                    R"("},"spec":{"accessModes":["ReadWriteMany"],"resources":{"requests":{"storage":"1Ti"}}}})")
            .as_object());
    store.mutate(
        pvc_type, ns, "data-" + ns,
        [](json::object& pvc) {
          pvc["status"] = json::object{{"phase", "Bound"}};
        },
        {}, "status");
  }
  // Seeded as a topology's nodes are: Ready at once, without the not-ready taint an API-created
  // node gets until its kubelet reports (a server's TaintNodesByCondition admission).
  gpupool::embedded::WriteOptions seeded;
  seeded.seeded_node = true;
  std::mt19937 rng(42);
  for (int i = 0; i < kNodes; ++i) store.create(store.type("", "nodes"), "", make_node(i, rng), seeded);
  for (int i = 0; i < pods; ++i) {
    json::object p = make_pod(i);
    const std::string ns(p["metadata"].as_object()["namespace"].as_string());
    store.create(pod_type, ns, std::move(p));
  }
}

}  // namespace bench
