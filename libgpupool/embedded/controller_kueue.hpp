// embedded/controller_kueue.hpp — a Kueue-compatible admission controller (Kueue v0.14,
// kueue.x-k8s.io/v1beta1) for the embedded cluster.
//
// What it does, as Kueue's controllers do (sources cited in controller_kueue.cpp):
//  - a job labelled kueue.x-k8s.io/queue-name gets a Workload `<kind>-<name>-<hash>` (owned by the
//    job) with its podSets: a batch/v1 Job one "main" of min(parallelism, completions) pods; an
//    MPIJob/TFJob/PyTorchJob one per replica type; a JobSet one per replicatedJob (replicas x pods
//    per Job); a TrainJob those of the JobSet its runtime builds (a TrainJob's JobSet gets none);
//  - the Workload's LocalQueue names its ClusterQueue; pending workloads are taken in order of
//    priority, then creation (StrictFIFO: the head blocks the queue; BestEffortFIFO: the next is
//    tried), and admitted when every podSet fits, in one flavor per resource group, within the
//    nominal quota left (all or nothing): status.admission, QuotaReserved and Admitted True;
//  - an admitted job is started: unsuspended, the flavor's nodeLabels and tolerations on its pod
//    templates (a TrainJob: in its runtime patch of manager kueue.x-k8s.io/manager); a finished job
//    finishes its Workload (Finished True) and frees its quota;
//  - withinClusterQueue: LowerPriority preemption evicts lower-priority admitted workloads
//    (Evicted + Preempted conditions, the job suspended again) to make room;
//  - ClusterQueue and LocalQueue status: pending/reserving/admitted counts, flavorsReservation,
//    flavorsUsage, the Active condition.
// Not done: cohorts and borrowing, admission checks, partial admission, topology-aware scheduling,
// the pod and Deployment integrations (a Pod or Deployment with the label runs unqueued here).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "embedded/clock.hpp"

namespace gpupool::embedded {

class Store;
struct WatchEvent;

/// The Workload Kueue makes for a job (jobframework GetWorkloadNameForOwnerWithGVK):
/// `<kind lower case>-<name>-<5 hex digits of a SHA-1 of kind, group, name and uid>`.
std::string kueue_workload_name(std::string_view kind, std::string_view group, const std::string& name,
                                const std::string& uid);

class KueueController {
 public:
  KueueController(Store& store, const Clock& clock);
  ~KueueController();
  KueueController(const KueueController&) = delete;
  KueueController& operator=(const KueueController&) = delete;

  /// Runs the queues until nothing changes (also what every relevant store event triggers).
  void sync();

 private:
  void on_event(const WatchEvent& e);
  void sync_once();

  Store& store_;
  const Clock& clock_;
  std::uint64_t subscription_ = 0;
  std::recursive_mutex mu_;
  bool running_ = false;
  bool dirty_ = false;
};

}  // namespace gpupool::embedded
