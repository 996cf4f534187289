// embedded/scheduler.hpp — the embedded cluster's scheduler.
//
// The scheduler watches the store for pods without spec.nodeName whose spec.schedulerName it
// serves ("default-scheduler" plus any configured name, e.g. a site profile's "orion-scheduler"),
// builds gpupool::NodeInfo from the store's nodes and bound pods, asks the model's place() (the one
// implementation of kube-scheduler's rules, include/gpupool/scheduling.hpp), and then either binds
// the pod (pods/binding semantics: spec.nodeName, condition PodScheduled=True, a Normal "Scheduled"
// event "Successfully assigned ns/pod to node") or records the failure as kube-scheduler does: a
// Warning event reason FailedScheduling with failed_scheduling_message(), and the condition
// PodScheduled=False reason Unschedulable. Unschedulable pods wait, as in kube-scheduler's
// unschedulablePods, until an event that may make them schedulable: a node added or its labels,
// taints, allocatable, conditions or spec.unschedulable changed; an assigned pod deleted or
// finished; a claim created or bound, a StorageClass added or changed; the pod itself updated —
// or until 5 minutes of the cluster clock have passed since their last attempt
// (podMaxInUnschedulablePodsDuration). Creating other pods does not retry them.
// Finished (Succeeded/Failed) pods no longer count against their node, as the kubelet admits them.
// (ResourceQuota admission and the quota controller: embedded/quota.hpp.)
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "embedded/clock.hpp"
#include "gpupool/quantity.hpp"

namespace gpupool::embedded {

class Store;
struct WatchEvent;
namespace json = boost::json;

struct SchedulerOptions {
  std::vector<std::string> scheduler_names{"default-scheduler"};
};

/// pods/binding: sets spec.nodeName (409 Conflict when already bound) and PodScheduled=True.
void bind_pod(Store& store, const std::string& ns, const std::string& pod, const std::string& node);

class Scheduler {
 public:
  Scheduler(Store& store, const Clock& clock, SchedulerOptions options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Schedules every pending pod it serves, after moving back the unschedulable pods whose last
  /// attempt is more than 5 minutes old on the clock. Returns the number of pods bound.
  std::size_t sync();
  /// Scheduling attempts (place() calls, PreFilter rejections included) so far.
  std::uint64_t attempts() const;
  /// Pods currently waiting as unschedulable ("ns/name").
  std::vector<std::string> unschedulable() const;

 private:
  struct Impl;
  void on_event(const WatchEvent& e);
  Store& store_;
  const Clock& clock_;
  std::unique_ptr<Impl> impl_;
  std::uint64_t subscription_ = 0;
};

}  // namespace gpupool::embedded
