// gpupool/job_backoff.hpp — when a batch/v1 Job makes its next pod after failures (model layer,
// no I/O): kube-controller-manager v1.32's rule (pkg/controller/job: job_controller.go manageJob,
// backoff_utils.go), for the embedded Job controller and for the client's explanation of a Job
// waiting to retry.
#pragma once

#include <boost/json/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace gpupool {

/// DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff.
inline constexpr std::chrono::seconds kJobPodFailureBackOff{10};
inline constexpr std::chrono::minutes kMaxJobPodFailureBackOff{10};

/// A finished pod's finish time as the Job controller reads it (getFinishedTime): its containers'
/// last finishedAt, else its Ready=False condition's transition, else the start of its deletion,
/// else its creation.
std::chrono::system_clock::time_point job_pod_finished_time(const boost::json::object& pod);

/// The failures since the Job's last success and how long its next pod still waits at `now`:
/// 10 s after the last of those failures, doubled for each further one, at most 10 minutes
/// (zero when there is none, or the wait is over). `pods`: the Job's pods, any phase.
struct JobBackoff {
  std::int64_t failures = 0;
  std::chrono::nanoseconds remaining{0};
};
JobBackoff job_failure_backoff(const std::vector<const boost::json::object*>& pods,
                               std::chrono::system_clock::time_point now);

/// The Job controller's memory of a Job's failures (backoff_utils.go backoffRecord): the failures
/// since its last success and when the last of them finished.
struct JobBackoffRecord {
  std::int64_t failures = 0;
  std::optional<std::chrono::system_clock::time_point> last_failure;
};
/// newBackoffRecord: `old` updated with the pods that finished since the Job was last counted
/// (the Job's newly succeeded and failed pods, in any order).
JobBackoffRecord job_backoff_record(const JobBackoffRecord& old,
                                    const std::vector<const boost::json::object*>& succeeded,
                                    const std::vector<const boost::json::object*>& failed);
/// getRemainingTime: how long the Job's next pod still waits at `now` after the record's failures.
std::chrono::nanoseconds job_backoff_remaining(const JobBackoffRecord& record,
                                               std::chrono::system_clock::time_point now);

}  // namespace gpupool
