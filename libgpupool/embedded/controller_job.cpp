// embedded/controller_job.cpp — the batch/v1 Job controller (pkg/controller/job): plan_job.
#include "embedded/controllers.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"
#include "gpupool/job_backoff.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

Plan plan_job(const json::object& job, const Children& pods, Clock::time_point now) {
  Plan plan;
  const json::object* spec = object_at(job, {"spec"});
  // syncJob: a Job another controller manages (spec.managedBy other than
  // kubernetes.io/job-controller, e.g. Kueue's MultiKueue; the JobManagedBy gate is on in v1.32) is
  // left to it whole: no pods, no status (managedByExternalController).
  if (const std::string by = string_of(spec, "managedBy"); !by.empty() && by != "kubernetes.io/job-controller")
    return plan;
  const std::int64_t parallelism = count_of(spec, "parallelism", 1);
  const std::int64_t completions = count_of(spec, "completions", 1);
  const std::int64_t backoff_limit = int_of(spec, "backoffLimit", 6);
  std::int64_t active = 0, succeeded = 0, failed = 0, ready = 0;
  for (const auto& p_ptr : pods) {
    const json::object& p = *p_ptr;
    const std::string ph = phase_of(p);
    if (ph == "Succeeded")
      ++succeeded;
    else if (ph == "Failed")
      ++failed;
    else {
      ++active;
      if (pod_ready(p)) ++ready;
    }
  }
  json::object status = object_at(job, {"status"}) ? *object_at(job, {"status"}) : json::object{};
  json::array conditions;
  if (const json::array* c = util::array_at(job, {"status"}, "conditions")) conditions = *c;
  const bool finished = util::find_condition(&conditions, "Complete") || util::find_condition(&conditions, "Failed");
  // spec.suspend (Kueue suspends queued jobs): job_controller.go syncJob sets startTime only while
  // not suspended, manageJob deletes the active pods of a suspended Job and creates none.
  const json::value* suspend_v = spec ? spec->if_contains("suspend") : nullptr;
  const bool suspended = suspend_v && suspend_v->is_bool() && suspend_v->as_bool();
  if (!status.contains("startTime") && !suspended) status["startTime"] = to_rfc3339(now);
  auto stop_active = [&] {
    for (const auto& p : pods)
      if (!terminal(*p)) plan.remove.push_back({"", "pods", name_of(*p)});
  };
  if (!finished) {
    // pkg/controller/job/job_controller.go (v1.31+): FailureTarget/SuccessCriteriaMet first, then
    // the terminal Failed/Complete condition, with the same reason and message.
    // A Job's conditions carry lastProbeTime as well (job_controller.go newCondition).
    auto job_condition = [&](std::string_view type, std::string_view reason, std::string_view msg) {
      json::object c = condition(type, true, reason, msg, now);
      c["lastProbeTime"] = to_rfc3339(now);
      return c;
    };
    if (failed > backoff_limit) {
      const char* msg = "Job has reached the specified backoff limit";
      util::set_condition(conditions, job_condition("FailureTarget", "BackoffLimitExceeded", msg));
      util::set_condition(conditions, job_condition("Failed", "BackoffLimitExceeded", msg));
      // job_controller.go: the failure's reason and message as a Warning event.
      plan.events.push_back({"Warning", "BackoffLimitExceeded", msg});
      stop_active();
      active = 0;
      ready = 0;
    } else if (succeeded >= completions) {
      const char* msg = "Reached expected number of succeeded pods";
      util::set_condition(conditions, job_condition("SuccessCriteriaMet", "CompletionsReached", msg));
      util::set_condition(conditions, job_condition("Complete", "CompletionsReached", msg));
      plan.events.push_back({"Normal", "Completed", "Job completed"});
      status["completionTime"] = to_rfc3339(now);
      stop_active();
      active = 0;
      ready = 0;
    } else if (suspended) {
      // ensureJobConditionStatus(JobSuspended, True, "JobSuspended", "Job suspended").
      json::object c = job_condition("Suspended", "JobSuspended", "Job suspended");
      const json::object* had = util::find_condition(&conditions, "Suspended");
      if (!had || string_of(had, "status") != "True") {
        util::set_condition(conditions, c);
        plan.events.push_back({"Normal", "Suspended", "Job suspended"});
      }
      stop_active();
      active = 0;
      ready = 0;
    } else {
      // A resumed Job: Suspended False "JobResumed", and startTime reset to now (job_controller.go:
      // the ActiveDeadlineSeconds timer counts from the resume).
      if (const json::object* had = util::find_condition(&conditions, "Suspended");
          had && string_of(had, "status") == "True") {
        json::object c = condition("Suspended", false, "JobResumed", "Job resumed", now);
        c["lastProbeTime"] = to_rfc3339(now);
        util::set_condition(conditions, c);
        plan.events.push_back({"Normal", "Resumed", "Job resumed"});
        status["startTime"] = to_rfc3339(now);
      }
      const std::int64_t want_active = std::min(parallelism, completions - succeeded);
      // manageJob: pods to create wait out the failure backoff; the Job is synced again then.
      Clock::duration backoff = Clock::duration::zero();
      if (active < want_active) {
        std::vector<const json::object*> all;
        for (const auto& p : pods) all.push_back(p.get());
        backoff = std::chrono::duration_cast<Clock::duration>(
            job_failure_backoff(all, std::chrono::time_point_cast<std::chrono::system_clock::duration>(now)).remaining);
      }
      if (backoff > Clock::duration::zero()) plan.requeue_after = backoff;
      const std::string uid = uid_of(job);
      const json::object empty;
      const json::object* tmpl = object_at(job, {"spec", "template"});
      // completionMode Indexed (job_controller.go manageJob, indexed_job_utils.go): each pod gets
      // a free completion index as annotation and label, the hostname `<job>-<index>`, the name
      // prefix `<job>-<index>-` and JOB_COMPLETION_INDEX in every container.
      const bool indexed = string_of(spec, "completionMode") == "Indexed";
      std::set<std::int64_t> taken;
      if (indexed)
        for (const auto& p : pods)
          if (phase_of(*p) != "Failed")
            if (auto ix = util::annotation(*p, "batch.kubernetes.io/job-completion-index"))
              if (!ix->empty() && ix->size() < 10 && std::all_of(ix->begin(), ix->end(), ::isdigit))
                taken.insert(std::stoll(*ix));
      std::int64_t next_index = 0;
      for (std::int64_t i = active;
           backoff == Clock::duration::zero() && i < want_active && i - active < kBurstReplicas; ++i) {
        std::map<std::string, std::string> labels{{"batch.kubernetes.io/controller-uid", uid},
                                                  {"batch.kubernetes.io/job-name", name_of(job)},
                                                  {"controller-uid", uid},
                                                  {"job-name", name_of(job)}};
        std::string prefix = name_of(job) + "-";
        std::int64_t index = -1;
        if (indexed) {
          while (taken.count(next_index)) ++next_index;
          if (next_index >= completions) break;
          index = next_index++;
          labels["batch.kubernetes.io/job-completion-index"] = std::to_string(index);
          prefix = fmt::format("{}-{}-", name_of(job), index);
        }
        json::object pod = pod_from_template(tmpl ? *tmpl : empty, job, "", prefix, labels);
        if (indexed) {
          auto& md = pod["metadata"].as_object();
          ensure_object(md, "annotations")["batch.kubernetes.io/job-completion-index"] = std::to_string(index);
          auto& ps = pod["spec"].as_object();
          ps["hostname"] = fmt::format("{}-{}", name_of(job), index);
          for (const char* list : {"initContainers", "containers"})
            if (auto* cs = ps.if_contains(list); cs && cs->is_array())
              for (auto& c : cs->as_array()) {
                auto& env = c.as_object()["env"];
                if (!env.is_array()) env = json::array{};
                bool has = false;
                for (const auto& e : env.as_array())
                  has = has || (e.is_object() && string_of(&e.as_object(), "name") == "JOB_COMPLETION_INDEX");
                if (!has)
                  env.as_array().push_back(json::object{
                      {"name", "JOB_COMPLETION_INDEX"},
                      {"valueFrom",
                       json::object{{"fieldRef",
                                     json::object{{"fieldPath",
                                                   "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}}}});
              }
        }
        plan.create.push_back({"", "pods", std::move(pod)});
      }
      if (backoff == Clock::duration::zero()) active = std::max(active, std::min(want_active, active + kBurstReplicas));
    }
  }
  auto set_count = [&](const char* k, std::int64_t v) {
    if (v)
      status[k] = v;
    else
      status.erase(k);
  };
  set_count("active", active);
  set_count("succeeded", succeeded);
  set_count("failed", failed);
  status["ready"] = ready;
  status["terminating"] = 0;
  status["uncountedTerminatedPods"] = json::object{};
  if (!conditions.empty()) status["conditions"] = std::move(conditions);
  const json::object* old = object_at(job, {"status"});
  if (!old || !util::json_equal(*old, status)) plan.status = std::move(status);
  return plan;
}

}  // namespace gpupool::embedded
