// Kueue helpers the facade's other files call (queues.cpp): a job's place in its queue for get(),
// what its ClusterQueue lacks for explain(), and --gang's check.
#pragma once

#include "gpupool/queues.hpp"
#include "gpupool/workload.hpp"

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpupool {
namespace detail {
struct ClusterImpl;

/// Whether the cluster serves Kueue's API (kueue.x-k8s.io/v1beta1 LocalQueues), by discovery.
bool serves_kueue(const ClusterImpl& impl);
/// Where a job labelled with a queue stands (its Workload's conditions); nullopt for a job with no
/// queue label or a cluster without Kueue.
std::optional<QueueStatus> queue_status(const ClusterImpl& impl, const boost::json::object& job);
/// For a pending queued job, one line per thing its ClusterQueue lacks (a missing LocalQueue or
/// ClusterQueue, a resource with too little nominal quota left, a resource it has no quota for).
std::vector<std::string> queue_lacks(const ClusterImpl& impl, const std::string& ns, const QueueStatus& status);
/// --gang: Kueue admits all of a job's pods or none, so the job must go through a queue: the
/// workload's, else the profile's default; ValidationError naming --gang when the cluster has no
/// Kueue or no queue is known.
void require_kueue_for_gang(const ClusterImpl& impl, Workload& workload);

}  // namespace detail
}  // namespace gpupool
