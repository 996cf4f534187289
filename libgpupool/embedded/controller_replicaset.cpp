// embedded/controller_replicaset.cpp — the ReplicaSet controller (pkg/controller/replicaset):
// plan_replicaset.
#include "embedded/controllers.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

Plan plan_replicaset(const json::object& rs, const Children& pods, Clock::time_point) {
  Plan plan;
  const std::int64_t want = replicas_of(rs);
  std::vector<const json::object*> active;
  for (const auto& p : pods)
    if (!terminal(*p)) active.push_back(p.get());
  const std::int64_t have = static_cast<std::int64_t>(active.size());
  const json::object empty;
  const json::object* tmpl = object_at(rs, {"spec", "template"});
  for (std::int64_t i = have; i < want && i - have < kBurstReplicas; ++i)
    plan.create.push_back({"", "pods", pod_from_template(tmpl ? *tmpl : empty, rs, "", name_of(rs) + "-", {})});
  if (have > want) {
    // pkg/controller/replicaset getPodsToDelete: unscheduled before scheduled, pending before
    // running, not ready before ready, then the newest first.
    std::stable_sort(active.begin(), active.end(), [](const json::object* a, const json::object* b) {
      auto rank = [](const json::object* p) {
        const bool bound = !string_of(object_at(*p, {"spec"}), "nodeName").empty();
        return std::make_tuple(bound, phase_of(*p) == "Running", pod_ready(*p));
      };
      if (rank(a) != rank(b)) return rank(a) < rank(b);
      return string_of(object_at(*a, {"metadata"}), "creationTimestamp") >
             string_of(object_at(*b, {"metadata"}), "creationTimestamp");
    });
    for (std::int64_t i = 0; i < std::min(have - want, kBurstReplicas); ++i)
      plan.remove.push_back({"", "pods", name_of(*active[static_cast<std::size_t>(i)])});
  }
  std::int64_t ready = 0;
  for (const auto* p : active) ready += pod_ready(*p) ? 1 : 0;
  json::object status{{"replicas", have},
                      {"fullyLabeledReplicas", have},
                      {"observedGeneration", int_of(object_at(rs, {"metadata"}), "generation", 1)}};
  if (ready) {
    status["readyReplicas"] = ready;
    status["availableReplicas"] = ready;  // minReadySeconds 0: ready pods are available
  }
  const json::object* old = object_at(rs, {"status"});
  // Conditions (ReplicaFailure) are the reconcile's to set or clear, from how the creates went.
  if (const json::value* c = old ? old->if_contains("conditions") : nullptr) status["conditions"] = *c;
  if (!old || !util::json_equal(*old, status)) plan.status = std::move(status);
  return plan;
}

}  // namespace gpupool::embedded
