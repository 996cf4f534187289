// Why a job is stuck, when gpupool can tell (see diagnose.cpp).
#pragma once

#include "cluster/impl.hpp"

#include <boost/json.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace gpupool::detail {

/// How long an unbound pod may wait without any scheduler looking at it before the scheduler is
/// called missing; kube-scheduler looks at a new pod within milliseconds.
inline constexpr std::chrono::seconds kSchedulerGrace{30};
/// How long a Kubeflow job may go without a status before its operator is called missing.
inline constexpr std::chrono::seconds kOperatorGrace{30};

struct StuckInput {
  WorkloadKind kind;
  std::string group;                          ///< the job's API group ("kubeflow.org", "apps", "")
  const boost::json::object& job;             ///< the job object as read
  const boost::json::array& pods;             ///< its pods (not the TensorBoard's)
  const boost::json::array* events;           ///< the namespace's events, or nullptr when not read
  std::chrono::system_clock::time_point now;  ///< the server's time
};

/// One line per dead end found: a Kubeflow job no operator acts on, pods no scheduler looks at
/// (the scheduler does not run), each distinct FailedCreate refusal of its controllers.
std::vector<std::string> stuck_notes(const detail::ClusterImpl& impl, const StuckInput& in);

/// Whether a Deployment (as read) has pods of an older template left or has timed out rolling out.
bool rollout_unfinished(const boost::json::object& deployment);

/// Why a TensorBoard pod is not running: its phase and the scheduler's message.
std::string tensorboard_note(const boost::json::object& pod);

}  // namespace gpupool::detail
