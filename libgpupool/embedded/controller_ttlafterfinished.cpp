// embedded/controller_ttlafterfinished.cpp — the TTL-after-finished controller
// (pkg/controller/ttlafterfinished/ttlafterfinished_controller.go, v1.32): a finished Job (a
// Complete or Failed condition True) with spec.ttlSecondsAfterFinished is deleted, Foreground and
// with its uid as precondition, once that many seconds have passed since the condition's
// lastTransitionTime. Controllers queues such Jobs and syncs them again when their time comes
// (controllers.cpp: the "ttl-jobs" keys and their timers on the cluster's clock).
#include "embedded/controllers.hpp"

#include <string>

#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

namespace {

// jobutil.FinishedCondition: the first Complete or Failed condition that is True, or null.
const json::object* finished_condition(const json::object& job) {
  const json::array* conds = util::array_at(job, {"status"}, "conditions");
  if (!conds) return nullptr;
  for (const json::value& c : *conds) {
    if (!c.is_object()) continue;
    const std::string type = string_of(&c.as_object(), "type");
    if ((type == "Complete" || type == "Failed") && string_of(&c.as_object(), "status") == "True")
      return &c.as_object();
  }
  return nullptr;
}

}  // namespace

bool ttl_job_needs_cleanup(const json::object& job) {
  // addJob / updateJob: not being deleted, and needsCleanup (a TTL, and jobutil.IsJobFinished).
  const json::object* spec = object_at(job, {"spec"});
  const json::value* ttl = spec ? spec->if_contains("ttlSecondsAfterFinished") : nullptr;
  return !deleting(job) && ttl && (ttl->is_int64() || ttl->is_uint64()) && finished_condition(job);
}

std::optional<Clock::duration> ttl_after_finished(Store& store, const std::string& ns, const std::string& name,
                                                  Clock::time_point now) {
  // processJob: the Job as it is now (the controller's final check reads it again; here the
  // store is that fresh read), processTTL, then the delete once the TTL has expired.
  const ResourceType& jobs = store.type("batch", "jobs");
  const auto job = store.find(jobs, ns, name);
  if (!job || !ttl_job_needs_cleanup(*job)) return std::nullopt;
  // jobFinishTime: that condition's lastTransitionTime (none: "unable to find the time when the
  // Job ... finished", an error the controller retries; nothing to wait for here).
  const auto finished = time_from_rfc3339(string_of(finished_condition(*job), "lastTransitionTime"));
  if (!finished) return std::nullopt;
  const std::int64_t ttl = util::int_of(object_at(*job, {"spec"}), "ttlSecondsAfterFinished", 0);
  // timeLeft: expireAt (finishAt + TTL) minus now; expired when not positive.
  const Clock::duration left = *finished + std::chrono::seconds(ttl) - now;
  if (left > Clock::duration::zero()) return left;  // enqueueAfter(job, timeLeft)
  DeleteOptions how;
  how.propagation = Propagation::Foreground;
  how.precondition_uid = uid_of(*job);
  try {
    store.remove(jobs, ns, name, how);
  } catch (const StatusError& e) {
    if (e.code() != 404 && e.code() != 409) throw;  // gone, or another Job of that name now
  }
  return std::nullopt;
}

}  // namespace gpupool::embedded
