// embedded/controller_replicaset.cpp — the ReplicaSet controller (pkg/controller/replicaset):
// plan_replicaset.
#include "embedded/controllers.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

Plan plan_replicaset(const json::object& rs, const Children& pods, Clock::time_point now) {
  Plan plan;
  const std::int64_t want = replicas_of(rs);
  // controller.FilterActivePods: a pod that finished or is being deleted no longer counts (a
  // replacement is made while it terminates).
  std::vector<const json::object*> active;
  for (const auto& p : pods)
    if (!terminal(*p) && !deleting(*p)) active.push_back(p.get());
  const std::int64_t have = static_cast<std::int64_t>(active.size());
  const json::object empty;
  const json::object* tmpl = object_at(rs, {"spec", "template"});
  for (std::int64_t i = have; i < want && i - have < kBurstReplicas; ++i)
    plan.create.push_back({"", "pods", pod_from_template(tmpl ? *tmpl : empty, rs, "", name_of(rs) + "-", {})});
  if (have > want) {
    // pkg/controller/replicaset getPodsToDelete: ActivePods' order (ActivePodsWithRanks without
    // the ranks of pods sharing a node).
    std::stable_sort(active.begin(), active.end(),
                     [](const json::object* a, const json::object* b) { return active_pods_less(*a, *b); });
    for (std::int64_t i = 0; i < std::min(have - want, kBurstReplicas); ++i)
      plan.remove.push_back({"", "pods", name_of(*active[static_cast<std::size_t>(i)])});
  }
  // calculateStatus: a ready pod is available once Ready for minReadySeconds
  // (podutil.IsPodAvailable: lastTransitionTime + minReadySeconds before now).
  const std::int64_t min_ready = int_of(object_at(rs, {"spec"}), "minReadySeconds", 0);
  // A pod that became ready is looked at again minReadySeconds + 1 s after (replica_set.go
  // updatePod: enqueueRSAfter), here from its Ready condition's transition time.
  std::int64_t ready = 0, available = 0;
  std::optional<Clock::time_point> recheck;
  for (const auto* p : active) {
    if (!pod_ready(*p)) continue;
    ++ready;
    if (pod_available(*p, min_ready, now)) {
      ++available;
    } else if (const auto since = time_from_rfc3339(
                   string_of(util::find_condition(util::array_at(*p, {"status"}, "conditions"), "Ready"),
                             "lastTransitionTime"))) {
      const auto at = *since + std::chrono::seconds(min_ready + 1);
      recheck = recheck ? std::min(*recheck, at) : at;
    }
  }
  if (recheck) plan.requeue_after = std::max(Clock::duration::zero(), *recheck - now);
  json::object status{{"replicas", have},
                      {"fullyLabeledReplicas", have},
                      {"observedGeneration", int_of(object_at(rs, {"metadata"}), "generation", 1)}};
  if (ready) status["readyReplicas"] = ready;
  if (available) status["availableReplicas"] = available;
  // replica_set.go syncReplicaSet: every replica ready but not all available yet: look again
  // once minReadySeconds have passed (at the latest).
  if (min_ready > 0 && ready == want && available != want && !plan.requeue_after)
    plan.requeue_after = std::chrono::seconds(min_ready);
  const json::object* old = object_at(rs, {"status"});
  // Conditions (ReplicaFailure) are the reconcile's to set or clear, from how the creates went.
  if (const json::value* c = old ? old->if_contains("conditions") : nullptr) status["conditions"] = *c;
  if (!old || !util::json_equal(*old, status)) plan.status = std::move(status);
  return plan;
}

}  // namespace gpupool::embedded
