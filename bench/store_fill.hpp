// bench/store_fill.hpp — loads cluster_gen.hpp's generated cluster into an embedded API server's
// store (bench_store's scheduler section, bench_views' server): make_pod's 200 namespaces, each with
// the bound claim its pods mount, the nodes, then the pods and the ReplicaSets that own them (ten
// pods each), all through Store::create (admission, validation, watch fan-out). Whatever is
// subscribed to the store (a server's scheduler, kubelet, controllers) reacts to each create as it
// would to a client's.
//
// The owners must exist: a pod whose owners are all absent is deleted by the garbage collector
// (garbagecollector.go attemptToDeleteItem; the embedded store does it as the reference is written).
// Where no ReplicaSet controller runs (a bare Store), each ReplicaSet is created first and its pods
// name its uid. Where one runs (a server), a ReplicaSet created first would make its own ten pods at
// once, so the pods come first, as orphans, and the ReplicaSet adopts them (controller_ref_manager.go
// ClaimPods: ten matching pods for ten replicas, nothing created or deleted).
#pragma once

#include <algorithm>
#include <random>
#include <string>

#include <boost/json.hpp>

#include "cluster_gen.hpp"
#include "embedded/store.hpp"

namespace bench {

enum class Owners {
  Before,  ///< a bare Store: each ReplicaSet created before its pods, which name its uid
  Adopt,   ///< a server whose ReplicaSet controller runs: orphan pods first, then their ReplicaSet
};

struct FillOptions {
  Owners owners = Owners::Before;
  /// Every n-th pod (i % n == 0) reported Succeeded by its kubelet (a status write); 0: none. With
  /// Owners::Adopt it finishes before its ReplicaSet comes, which neither adopts it (only active
  /// pods are claimed) nor counts it (replicas are the active ones), so nothing is replaced.
  int finished_every = 0;
};

// The ReplicaSet that make_pod(first)... owns: its name, namespace and labels are the pods'.
inline json::object make_replicaset(const json::object& pod, int replicas) {
  const auto& md = pod.at("metadata").as_object();
  const auto& ref = md.at("ownerReferences").as_array().at(0).as_object();
  const json::object& labels = md.at("labels").as_object();
  return json::object{
      {"apiVersion", "apps/v1"},
      {"kind", "ReplicaSet"},
      {"metadata", json::object{{"name", ref.at("name")}, {"namespace", md.at("namespace")}, {"labels", labels}}},
      {"spec", json::object{{"replicas", replicas},
                            {"selector", json::object{{"matchLabels", labels}}},
                            {"template",
                             json::object{{"metadata", json::object{{"labels", labels}}}, {"spec", pod.at("spec")}}}}}};
}

inline void fill_store(gpupool::embedded::Store& store, int pods, const FillOptions& options = {}) {
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
  const auto& rs_type = store.type("apps", "replicasets");
  const auto finished = [&](int i) { return options.finished_every > 0 && i % options.finished_every == 0; };
  const bool adopt = options.owners == Owners::Adopt;
  for (int first = 0; first < pods; first += 10) {  // make_pod: ten replicas per owner
    const int last = std::min(first + 10, pods);
    int replicas = last - first;
    if (adopt)
      for (int i = first; i < last; ++i) replicas -= finished(i) ? 1 : 0;
    const json::object rs = make_replicaset(make_pod(first), replicas);
    const std::string ns(rs.at("metadata").at("namespace").as_string());
    std::string uid;
    if (!adopt) uid = store.create(rs_type, ns, rs).at("metadata").at("uid").as_string();
    for (int i = first; i < last; ++i) {
      json::object p = make_pod(i);
      auto& md = p["metadata"].as_object();
      const std::string name(md.at("name").as_string());
      if (adopt)
        md.erase("ownerReferences");
      else
        md["ownerReferences"].as_array()[0].as_object()["uid"] = uid;
      store.create(pod_type, ns, std::move(p));
      if (finished(i))
        store.mutate(
            pod_type, ns, name,
            [](json::object& o) {
              json::value& status = o["status"];
              if (!status.is_object()) status = json::object{};
              status.as_object()["phase"] = "Succeeded";
            },
            {}, "status");
    }
    if (adopt) store.create(rs_type, ns, rs);
  }
}

}  // namespace bench
