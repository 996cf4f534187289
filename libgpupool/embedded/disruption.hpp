// embedded/disruption.hpp — the disruption controller (kube-controller-manager's
// pkg/controller/disruption): every PodDisruptionBudget's status follows the pods it selects —
// expectedPods, currentHealthy (Ready and not being deleted), desiredHealthy (minAvailable, or the
// expected count less maxUnavailable; percentages of the controllers' scale, rounded up),
// disruptionsAllowed and the DisruptionAllowed condition (SufficientPods / InsufficientPods) — and
// a budget that selects no pod gets the event NoPods "No matching pods found".
#pragma once

#include <cstdint>
#include <string>

#include "embedded/clock.hpp"

#include <boost/json.hpp>

namespace gpupool::embedded {

class Store;
struct WatchEvent;

/// POST pods/NAME/eviction (pkg/registry/core/pod/storage/eviction.go, v1.32): `eviction` is the
/// policy/v1 Eviction body, `dry_run` the request's dryRun=All. A pod that is Pending, done or being
/// deleted is deleted at once; otherwise the one budget selecting it must allow a disruption (429
/// TooManyRequests "Cannot evict pod as it would violate the pod's disruption budget." with a
/// DisruptionBudget cause; 500 Status for a pod with two budgets), which is then used up
/// (status.disruptionsAllowed, status.disruptedPods); the pod gets the DisruptionTarget condition
/// and is deleted with the eviction's deleteOptions. Returns the Status to answer (Success, 201; or
/// the two-budgets Failure, 500); throws StatusError for the refusals.
boost::json::object evict_pod(Store& store, Clock::time_point now, const std::string& ns, const std::string& name,
                              const boost::json::object& eviction, bool dry_run);

class DisruptionController {
 public:
  DisruptionController(Store& store, const Clock& clock);
  ~DisruptionController();
  DisruptionController(const DisruptionController&) = delete;
  DisruptionController& operator=(const DisruptionController&) = delete;

 private:
  void on_event(const WatchEvent& e);
  void sync(const std::string& ns, const std::string& name);  ///< trySync of one budget
  Store& store_;
  const Clock& clock_;
  std::uint64_t subscription_ = 0;
};

}  // namespace gpupool::embedded
