// gpupool/queues.hpp — Kueue (kueue.x-k8s.io/v1beta1) queues as gpupool shows them: LocalQueues
// and ClusterQueues with their quota per flavor (`gpupool queues`, Cluster::queues()), and where a
// queued job stands (`get`'s QUEUE column, `explain`).
//
// A job joins a LocalQueue by the label kueue.x-k8s.io/queue-name (Workload::queue, `--queue`);
// Kueue creates a Workload for it and admits it when its ClusterQueue has quota for all its pods.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

/// The label naming a job's LocalQueue (Kueue's pkg/controller/constants QueueLabel).
inline constexpr std::string_view kQueueNameLabel = "kueue.x-k8s.io/queue-name";
/// The Kueue API group and version gpupool speaks.
inline constexpr std::string_view kKueueApiVersion = "kueue.x-k8s.io/v1beta1";

/// One resource of one flavor of a ClusterQueue: its nominal quota and what admitted workloads use.
struct FlavorQuota {
  std::string flavor;
  std::string resource;  ///< "nvidia.com/gpu", "cpu", ...
  std::string nominal;   ///< the quantity as the ClusterQueue spells it ("2", "32Gi")
  std::string used;      ///< status.flavorsReservation's total ("0" when none)
};

struct ClusterQueueInfo {
  std::string name;
  std::string cohort;
  std::string queueing_strategy;    ///< StrictFIFO | BestEffortFIFO
  std::vector<FlavorQuota> quotas;  ///< GPU resources first, then the order of spec.resourceGroups
  std::int64_t pending = 0;
  std::int64_t admitted = 0;
};

struct LocalQueueInfo {
  std::string namespace_;
  std::string name;
  std::string cluster_queue;
  std::int64_t pending = 0;
  std::int64_t admitted = 0;
};

/// What `gpupool queues` lists.
struct QueuesReport {
  std::vector<LocalQueueInfo> local_queues;      ///< of the namespace asked (or all)
  std::vector<ClusterQueueInfo> cluster_queues;  ///< all (cluster-scoped)
  /// Two tables: LocalQueues (NAMESPACE NAME CLUSTERQUEUE PENDING ADMITTED) and ClusterQueues
  /// (NAME FLAVOR RESOURCE NOMINAL USED PENDING ADMITTED), one row per flavor resource.
  std::string to_text() const;
};

/// Where a queued job stands, from its Workload's conditions.
struct QueueStatus {
  std::string queue;          ///< the LocalQueue (the job's label)
  std::string workload;       ///< the Workload's name ("" when Kueue has not made one yet)
  std::string state;          ///< "admitted", "pending", "finished", "evicted", or "" (no Workload)
  std::int64_t position = 0;  ///< 1-based among the LocalQueue's pending workloads (pending only)
  std::string reason;         ///< the QuotaReserved (or Evicted) condition's message
  /// "admitted", "pending #2: couldn't assign flavors ...", "finished", ...
  std::string summary() const;
};

}  // namespace gpupool
