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

namespace gpupool::embedded {

class Store;
struct WatchEvent;

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
