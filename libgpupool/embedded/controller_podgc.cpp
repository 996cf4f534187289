// embedded/controller_podgc.cpp — the pod garbage collector (pkg/controller/podgc/gc_controller.go,
// v1.32): terminated pods past the threshold (gcTerminated) are deleted, pods bound to a node that
// no longer exists (gcOrphaned) and unscheduled pods being deleted (gcUnscheduledTerminating) are
// marked Failed and deleted at once. Controllers runs them on the cluster's clock
// (controllers.cpp: gc_pods_later).
#include "embedded/controllers.hpp"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

namespace {

// markFailedAndDeletePodWithCondition: a pod that has not ended gets phase Failed and `condition`
// (apipod.UpdatePodCondition: lastTransitionTime now, kept when the status is the same) through
// its status, then it is deleted with gracePeriodSeconds 0 (a pod already deleted with 0 is left:
// that delete changes nothing).
void mark_failed_and_delete(Store& store, const json::object& pod, const json::object* condition,
                            Clock::time_point now) {
  const ResourceType& pods = store.type("", "pods");
  const std::string ns = namespace_of(pod), name = name_of(pod);
  const std::string uid = uid_of(pod);
  try {
    if (!terminal(pod)) {
      // utilpod.PatchPodStatus: a patch with the uid as its only precondition, so another write to
      // the pod meanwhile is no conflict (read again and changed, as long as it is the same pod).
      store.mutate(
          pods, ns, name,
          [&](json::object& cur) {
            if (uid_of(cur) != uid) throw StatusError::not_found(pods, name);  // replaced: not this pod
            if (terminal(cur)) return;                                         // it ended meanwhile
            json::object& status = ensure_object(cur, "status");
            status["phase"] = "Failed";
            if (condition) {
              json::object c = *condition;
              c["lastTransitionTime"] = to_rfc3339(now);
              json::value& conds = status["conditions"];
              if (!conds.is_array()) conds = json::array{};
              util::set_condition(conds.as_array(), c);
            }
          },
          {}, "status");
    }
    const json::object* md = object_at(pod, {"metadata"});
    if (deleting(pod) && util::int_of(md, "deletionGracePeriodSeconds", -1) == 0) return;
    DeleteOptions now_options;
    now_options.grace_period = 0;
    now_options.precondition_uid = uid;
    store.remove(pods, ns, name, now_options);
  } catch (const StatusError&) {
    // Gone or replaced meanwhile, or refused: gcOrphaned logs it (utilruntime.HandleError) and goes
    // on with the node's other pods.
  }
}

}  // namespace

void podgc_orphaned(Store& store, const std::string& node, Clock::time_point now) {
  if (store.find(store.type("", "nodes"), "", node)) return;  // checkIfNodeExists: it came back
  // gcOrphaned: the DisruptionTarget condition tells why.
  const json::object condition{{"type", "DisruptionTarget"},
                               {"status", "True"},
                               {"lastProbeTime", nullptr},
                               {"reason", "DeletionByPodGC"},
                               {"message", "PodGC: node no longer exists"}};
  for (const auto& p : store.list(store.type("", "pods"), "").items)
    if (string_of(object_at(*p, {"spec"}), "nodeName") == node) mark_failed_and_delete(store, *p, &condition, now);
}

void podgc_terminated(Store& store, std::int64_t threshold, Clock::time_point now) {
  if (threshold <= 0) return;
  std::vector<std::shared_ptr<const json::object>> terminated;
  for (auto& p : store.list(store.type("", "pods"), "").items)
    if (pod_terminated(*p)) terminated.push_back(std::move(p));
  const std::int64_t excess = static_cast<std::int64_t>(terminated.size()) - threshold;
  if (excess <= 0) return;
  // byEvictionAndCreationTimestamp: evicted pods (Failed, reason Evicted) first, then by
  // creationTimestamp (RFC 3339 at one precision: its text orders as its time), then name.
  auto order = [](const std::shared_ptr<const json::object>& p) {
    const json::object* st = object_at(*p, {"status"});
    const bool evicted = string_of(st, "phase") == "Failed" && string_of(st, "reason") == "Evicted";
    const json::object* md = object_at(*p, {"metadata"});
    return std::tuple{!evicted, string_of(md, "creationTimestamp"), string_of(md, "name")};
  };
  std::partial_sort(terminated.begin(), terminated.begin() + excess, terminated.end(),
                    [&](const auto& a, const auto& b) { return order(a) < order(b); });
  for (std::int64_t i = 0; i < excess; ++i) mark_failed_and_delete(store, *terminated[i], nullptr, now);
}

void podgc_unscheduled_terminating(Store& store, const std::string& ns, const std::string& name,
                                   Clock::time_point now) {
  const auto pod = store.find(store.type("", "pods"), ns, name);
  if (pod && deleting(*pod) && string_of(object_at(*pod, {"spec"}), "nodeName").empty())
    mark_failed_and_delete(store, *pod, nullptr, now);
}

}  // namespace gpupool::embedded
