// embedded/controller_job.cpp — the batch/v1 Job controller (pkg/controller/job, v1.32): plan_job.
//
// A port of job_controller.go syncJob with its tracking: every pod it makes carries the finalizer
// batch.kubernetes.io/job-tracking; a pod that finished (or is being deleted, which counts as a
// failure) is first recorded in status.uncountedTerminatedPods, then loses its finalizer, then is
// counted in status.succeeded / status.failed — so the counts survive the pods' deletion. The
// terminal condition waits for the pods being deleted (JobPodReplacementPolicy and JobManagedBy are
// on in v1.32: FailureTarget / SuccessCriteriaMet first); podFailurePolicy's and successPolicy's rules,
// backoffLimitPerIndex.
#include "embedded/controllers.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "common/join.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"
#include "embedded/typecheck.hpp"
#include "gpupool/job_backoff.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

namespace {

constexpr std::int64_t kMaxUncountedPods = 500;           // job_controller.go MaxUncountedPods
constexpr std::int64_t kMaxPodCreateDeletePerSync = 500;  // MaxPodCreateDeletePerSync

const json::object kEmpty;

// indexed_job_utils.go orderedIntervals: completed indexes as sorted, disjoint [first, last].
using Intervals = std::vector<std::pair<std::int64_t, std::int64_t>>;

// parseIndexesFromString: "1,3-5" (a part that is no number is skipped; indexes past completions
// end it). strconv.Atoi reads the numbers (go_parse_int).
Intervals parse_indexes(std::string_view text, std::int64_t completions) {
  Intervals out;
  if (text.empty()) return out;
  for (const auto part : text::split(text, ',')) {
    const auto limits = text::split(part, '-');
    const auto first = go_parse_int(limits[0]);
    if (!first) continue;
    if (*first >= completions) break;
    std::int64_t last = *first;
    if (limits.size() > 1) {
      const auto l = go_parse_int(limits[1]);
      if (!l) continue;
      last = std::min(*l, completions - 1);
    }
    if (!out.empty() && out.back().second == *first - 1)
      out.back().second = last;
    else
      out.emplace_back(*first, last);
  }
  return out;
}

// orderedIntervals.merge
Intervals merge(const Intervals& a, const Intervals& b) {
  Intervals out;
  auto add = [&](const std::pair<std::int64_t, std::int64_t>& iv) {
    if (out.empty() || iv.first > out.back().second + 1)
      out.push_back(iv);
    else if (out.back().second < iv.second)
      out.back().second = iv.second;
  };
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) add(a[i].first < b[j].first ? a[i++] : b[j++]);
  while (i < a.size()) add(a[i++]);
  while (j < b.size()) add(b[j++]);
  return out;
}

Intervals with_indexes(const Intervals& a, const std::set<std::int64_t>& ixs) {
  Intervals b;
  for (auto ix : ixs) b.emplace_back(ix, ix);
  return merge(a, b);
}

std::int64_t total(const Intervals& iv) {
  std::int64_t n = 0;
  for (const auto& [f, l] : iv) n += l - f + 1;
  return n;
}

bool has_index(const Intervals& iv, std::int64_t ix) {
  return std::any_of(iv.begin(), iv.end(), [&](const auto& p) { return p.first <= ix && ix <= p.second; });
}

// orderedIntervals.String
std::string to_text(const Intervals& iv) {
  std::string out;
  for (const auto& [f, l] : iv) {
    if (!out.empty()) out += ',';
    out += std::to_string(f);
    if (l > f) out += (l == f + 1 ? "," : "-") + std::to_string(l);
  }
  return out;
}

// getCompletionIndex: the batch.kubernetes.io/job-completion-index annotation, -1 when absent or
// no non-negative number.
std::int64_t completion_index(const json::object& pod) {
  const auto ix = util::annotation(pod, "batch.kubernetes.io/job-completion-index");
  const auto n = ix ? go_parse_int(*ix) : std::nullopt;  // strconv.Atoi
  return n && *n >= 0 ? *n : -1;
}

// parseIndexFailureCountAnnotation / parseIndexFailureIgnoreCountAnnotation: an int32 annotation,
// 0 when absent or no number in range.
std::int64_t count_annotation(const json::object& pod, std::string_view key) {
  const auto v = util::annotation(pod, key);
  const auto n = v ? go_parse_int(*v) : std::nullopt;  // parseInt32: strconv.Atoi, then the range
  return n && *n >= 0 && *n <= 2147483647 ? *n : 0;
}
constexpr std::string_view kIndexFailures = "batch.kubernetes.io/job-index-failure-count";
constexpr std::string_view kIndexIgnoredFailures = "batch.kubernetes.io/job-index-ignored-failure-count";

std::set<std::string> uid_set(const json::object* uncounted, std::string_view key) {
  std::set<std::string> out;
  if (const json::value* v = uncounted ? uncounted->if_contains(key) : nullptr; v && v->is_array())
    for (const auto& u : v->as_array())
      if (u.is_string()) out.insert(std::string(u.get_string()));
  return out;
}

// The sum of a pod's containers' (and init containers') restartCount.
std::int64_t restarts(const json::object& pod) {
  std::int64_t n = 0;
  for (const char* list : {"initContainerStatuses", "containerStatuses"})
    if (const json::array* cs = util::array_at(pod, {"status"}, list))
      for (const auto& c : *cs) n += util::int_of(c.if_object(), "restartCount", 0);
  return n;
}

json::object job_condition(std::string_view type, bool status, std::string_view reason, std::string_view message,
                           Clock::time_point now) {
  // newCondition: a Job's conditions carry lastProbeTime as well.
  json::object c = condition(type, status, reason, message, now);
  c["lastProbeTime"] = to_rfc3339(now);
  return c;
}

// ensureJobConditionStatus: whether the list changed (a False condition is not added anew).
bool ensure_condition(json::array& conditions, std::string_view type, bool status, std::string_view reason,
                      std::string_view message, Clock::time_point now) {
  const std::string want = status ? "True" : "False";
  for (auto& c : conditions) {
    if (!c.is_object() || string_of(&c.as_object(), "type") != type) continue;
    const json::object& had = c.as_object();
    if (string_of(&had, "status") == want && string_of(&had, "reason") == reason &&
        string_of(&had, "message") == message)
      return false;
    c = job_condition(type, status, reason, message, now);
    return true;
  }
  if (!status) return false;
  conditions.push_back(job_condition(type, status, reason, message, now));
  return true;
}

const json::object* true_condition(const json::array& conditions, std::string_view type) {
  const json::object* c = util::find_condition(&conditions, type);
  return c && string_of(c, "status") == "True" ? c : nullptr;
}

// pod_failure_policy.go matchPodFailurePolicy: the first rule a failed pod matches — onExitCodes
// (a container, then an init container, terminated with a non-zero code In / NotIn the values,
// of the named container if one is named) or onPodConditions (a condition of that type and
// status). Ignore: not counted; FailJob: the Job fails with the rule's message; Count and FailIndex
// (no backoffLimitPerIndex here): counted; no rule matched: counted.
struct FailureMatch {
  std::optional<std::string> fail_job;
  bool count = true;
  bool fail_index = false;  // FailIndex (with backoffLimitPerIndex)
};
// What a rule matches of a failed pod, worded as the FailJob message words it; nullopt: no match.
std::optional<std::string> rule_matches(const json::object& rule, const json::object& pod) {
  if (const json::object* req = object_at(rule, {"onExitCodes"})) {
    const std::string only = string_of(req, "containerName");
    const std::string op = string_of(req, "operator");
    const json::array* values = util::array_at(*req, {}, "values");
    for (const char* list : {"containerStatuses", "initContainerStatuses"})
      if (const json::array* cs = util::array_at(pod, {"status"}, list))
        for (const auto& c : *cs) {
          const json::object* st = c.if_object();
          const json::object* term = st ? object_at(*st, {"state", "terminated"}) : nullptr;
          if (!term || (!only.empty() && only != string_of(st, "name"))) continue;
          const std::int64_t code = int_of(term, "exitCode", 0);
          if (code == 0) continue;
          const bool listed = values && std::any_of(values->begin(), values->end(), [&](const json::value& v) {
                                return v.is_int64() && v.as_int64() == code;
                              });
          if ((op == "In" && listed) || (op == "NotIn" && !listed))
            return fmt::format("Container {} for pod {}/{} failed with exit code {}", string_of(st, "name"),
                               namespace_of(pod), name_of(pod), code);
        }
  } else if (const json::array* patterns = util::array_at(rule, {}, "onPodConditions")) {
    if (const json::array* conds = util::array_at(pod, {"status"}, "conditions"))
      for (const auto& c : *conds)
        for (const auto& pat : *patterns)
          if (c.is_object() && pat.is_object() &&
              string_of(&c.as_object(), "type") == string_of(&pat.as_object(), "type") &&
              string_of(&c.as_object(), "status") == string_of(&pat.as_object(), "status"))
            return fmt::format("Pod {}/{} has condition {}", namespace_of(pod), name_of(pod),
                               string_of(&c.as_object(), "type"));
  }
  return std::nullopt;
}

FailureMatch match_failure_policy(const json::object& policy, const json::object& pod) {
  const json::array* rules = util::array_at(policy, {}, "rules");
  for (std::size_t i = 0; rules && i < rules->size(); ++i) {
    const json::object* rule = (*rules)[i].if_object();
    const auto what = rule ? rule_matches(*rule, pod) : std::nullopt;
    if (!what) continue;
    const std::string action = string_of(rule, "action");
    if (action == "Ignore") return {std::nullopt, false};
    if (action == "FailJob") return {fmt::format("{} matching FailJob rule at index {}", *what, i), true};
    if (action == "Count") return {};
    if (action == "FailIndex") return {std::nullopt, true, true};
  }
  return {};
}

// success_policy.go matchSucceededIndexesRule: the rule's indexes all succeeded, or at least
// succeededCount of them.
bool succeeded_indexes_rule(const Intervals& rule, const Intervals& done, std::optional<std::int64_t> count) {
  std::int64_t contains = 0;
  std::size_t r = 0, d = 0;
  while (r < rule.size() && d < done.size()) {
    const std::int64_t overlap = std::min(rule[r].second, done[d].second) - std::max(rule[r].first, done[d].first) + 1;
    if (overlap > 0) contains += overlap;
    if (done[d].second < rule[r].second)
      ++d;
    else if (done[d].second > rule[r].second)
      ++r;
    else
      ++d, ++r;
  }
  return contains == total(rule) || (count && contains >= *count);
}

// matchSuccessPolicy: the message of the first rule the completed indexes meet.
std::optional<std::string> match_success_policy(const json::object& policy, std::int64_t completions,
                                                const Intervals& done) {
  const json::array* rules = util::array_at(policy, {}, "rules");
  if (!rules || done.empty()) return std::nullopt;
  for (std::size_t i = 0; i < rules->size(); ++i) {
    const json::object* rule = (*rules)[i].if_object();
    if (!rule) continue;
    const json::value* count_v = rule->if_contains("succeededCount");
    const std::optional<std::int64_t> count =
        count_v && count_v->is_int64() ? std::optional<std::int64_t>(count_v->as_int64()) : std::nullopt;
    if (const json::value* ix = rule->if_contains("succeededIndexes"); ix && ix->is_string()) {
      const Intervals required = parse_indexes(ix->get_string(), completions);
      if (required.empty()) continue;  // (an unparsable rule)
      if (succeeded_indexes_rule(required, done, count)) return fmt::format("Matched rules at index {}", i);
    } else if (count && total(done) >= *count) {
      return fmt::format("Matched rules at index {}", i);
    }
  }
  return std::nullopt;
}

bool job_finished(const json::object& job) {
  const json::array* conditions = util::array_at(job, {"status"}, "conditions");
  return conditions && (true_condition(*conditions, "Complete") || true_condition(*conditions, "Failed"));
}

// resolveControllerRef: the Job a controller reference names, when it is that Job (same uid).
std::shared_ptr<const json::object> controller_job(const Store& store, const json::object& pod,
                                                   const json::object& ref) {
  if (string_of(&ref, "kind") != "Job" || string_of(&ref, "apiVersion") != "batch/v1") return nullptr;
  auto job = store.find(store.type("batch", "jobs"), namespace_of(pod), string_of(&ref, "name"));
  return job && uid_of(*job) == string_of(&ref, "uid") ? job : nullptr;
}

}  // namespace

bool job_orphan_candidate(const Store& store, const json::object& pod) {
  if (!holds_finalizer(pod, kJobTrackingFinalizer)) return false;
  const json::object* ref = util::controller_ref(pod);
  if (!ref) return true;
  if (!deleting(pod)) return false;
  const auto job = controller_job(store, pod, *ref);
  return !job || job_finished(*job);
}

void release_job_orphan(Store& store, const std::string& ns, const std::string& name) {
  const ResourceType& pods = store.type("", "pods");
  const auto pod = store.find(pods, ns, name);
  if (!pod || !holds_finalizer(*pod, kJobTrackingFinalizer)) return;
  if (const json::object* ref = util::controller_ref(*pod)) {
    if (string_of(ref, "kind") != "Job" || string_of(ref, "apiVersion") != "batch/v1") return;
    if (const auto job = controller_job(store, *pod, *ref)) {
      const std::string by = string_of(object_at(*job, {"spec"}), "managedBy");
      if (!by.empty() && by != "kubernetes.io/job-controller") return;
      if (!job_finished(*job)) return;  // adopted meanwhile
    }
  }
  try {
    store.mutate(pods, ns, name,
                 [](json::object& o) { set_finalizer(ensure_object(o, "metadata"), kJobTrackingFinalizer, false); });
  } catch (const StatusError& e) {
    if (e.code() != 404) throw;
  }
}

Plan plan_job(const json::object& job, const Children& pods, Clock::time_point now, JobBackoffRecord& backoff) {
  Plan plan;
  const json::object* spec = object_at(job, {"spec"});
  // syncJob: a Job another controller manages (spec.managedBy other than
  // kubernetes.io/job-controller, e.g. Kueue's MultiKueue; the JobManagedBy gate is on in v1.32) is
  // left to it whole: no pods, no status (managedByExternalController).
  if (const std::string by = string_of(spec, "managedBy"); !by.empty() && by != "kubernetes.io/job-controller")
    return plan;
  json::array conditions;
  if (const json::array* c = util::array_at(job, {"status"}, "conditions")) conditions = *c;
  // IsJobFinished: a finished Job is not synced again.
  if (true_condition(conditions, "Complete") || true_condition(conditions, "Failed")) {
    backoff = {};  // removeBackoffRecord
    return plan;
  }
  const std::string mode = string_of(spec, "completionMode");
  if (!mode.empty() && mode != "NonIndexed" && mode != "Indexed") {
    plan.events.push_back({"Warning", "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown"});
    return plan;
  }
  const bool indexed = mode == "Indexed";
  const std::int64_t parallelism = count_of(spec, "parallelism", 1);
  const json::value* completions_v = spec ? spec->if_contains("completions") : nullptr;
  const bool has_completions = completions_v && completions_v->is_int64();
  const std::int64_t completions = has_completions ? completions_v->as_int64() : 0;
  const std::int64_t backoff_limit = int_of(spec, "backoffLimit", 6);
  const json::value* suspend_v = spec ? spec->if_contains("suspend") : nullptr;
  const bool suspended = suspend_v && suspend_v->is_bool() && suspend_v->as_bool();
  const bool job_deleting = deleting(job);
  // onlyReplaceFailedPods: podReplacementPolicy Failed, or a podFailurePolicy.
  const bool only_failed = string_of(spec, "podReplacementPolicy") == "Failed" ||
                           (spec && spec->if_contains("podFailurePolicy") && !spec->at("podFailurePolicy").is_null());
  // isPodFailed: a pod being deleted that has not succeeded counts as failed, unless only failed
  // pods are replaced.
  auto pod_failed = [&](const json::object& p) {
    const std::string ph = phase_of(p);
    if (ph == "Failed") return true;
    if (only_failed) return false;
    return deleting(p) && ph != "Succeeded";
  };
  auto valid_index = [&](const json::object& p) {
    const std::int64_t ix = completion_index(p);
    return ix >= 0 && ix < completions;
  };

  json::object status = object_at(job, {"status"}) ? *object_at(job, {"status"}) : json::object{};
  const json::object* uncounted_in = object_at(job, {"status", "uncountedTerminatedPods"});
  std::set<std::string> uncounted_succeeded = uid_set(uncounted_in, "succeeded");
  std::set<std::string> uncounted_failed = uid_set(uncounted_in, "failed");
  json::array uncounted_succeeded_list, uncounted_failed_list;  // in the order recorded
  for (const char* k : {"succeeded", "failed"})
    if (const json::value* v = uncounted_in ? uncounted_in->if_contains(k) : nullptr; v && v->is_array())
      (std::string_view(k) == "succeeded" ? uncounted_succeeded_list : uncounted_failed_list) = v->as_array();

  // The pods: active (controller.FilterActivePods), terminating (IsPodTerminating).
  std::vector<const json::object*> active_pods;
  std::int64_t terminating = 0, ready = 0;
  for (const auto& p : pods) {
    if (!terminal(*p) && !deleting(*p)) {
      active_pods.push_back(p.get());
      if (pod_ready(*p)) ++ready;
    }
    if (!terminal(*p) && deleting(*p)) ++terminating;
  }
  std::int64_t active = static_cast<std::int64_t>(active_pods.size());
  // getNewFinishedPods: pods with the finalizer, not yet recorded as uncounted.
  std::vector<const json::object*> new_succeeded, new_failed;
  for (const auto& p : pods) {
    if (!holds_finalizer(*p, kJobTrackingFinalizer) || (indexed && !valid_index(*p))) continue;
    const std::string uid = uid_of(*p);
    if (phase_of(*p) == "Succeeded" && !uncounted_succeeded.count(uid)) new_succeeded.push_back(p.get());
    if (pod_failed(*p) && !uncounted_failed.count(uid)) new_failed.push_back(p.get());
  }
  const json::object* failure_policy = object_at(job, {"spec", "podFailurePolicy"});
  const auto counts_failed = [&](const json::object& p) {
    return !failure_policy || match_failure_policy(*failure_policy, p).count;
  };
  std::int64_t succeeded = int_of(&status, "succeeded", 0) + static_cast<std::int64_t>(new_succeeded.size()) +
                           static_cast<std::int64_t>(uncounted_succeeded.size());
  // nonIgnoredFailedPodsCount: failures a podFailurePolicy ignores are not counted.
  const std::int64_t failed =
      int_of(&status, "failed", 0) +
      std::count_if(new_failed.begin(), new_failed.end(), [&](const json::object* p) { return counts_failed(*p); }) +
      static_cast<std::int64_t>(uncounted_failed.size());
  if (!status.contains("startTime") && !suspended) status["startTime"] = to_rfc3339(now);
  const JobBackoffRecord new_backoff = job_backoff_record(backoff, new_succeeded, new_failed);

  // The end state, in syncJob's order: a SuccessCriteriaMet or FailureTarget already recorded, the
  // backoff limit, the active deadline; then (below) the completions.
  std::optional<json::object> finished;  // jobCtx.finishedCondition
  const bool success_met = true_condition(conditions, "SuccessCriteriaMet") != nullptr;
  if (const json::object* c = true_condition(conditions, "SuccessCriteriaMet"))
    finished = job_condition("SuccessCriteriaMet", true, string_of(c, "reason"), string_of(c, "message"), now);
  else if (const json::object* f = true_condition(conditions, "FailureTarget"))
    // newFailedConditionForFailureTarget
    finished = job_condition("Failed", true, string_of(f, "reason"), string_of(f, "message"), now);
  else if (failure_policy)
    // getFailJobMessage: the first failed pod a FailJob rule matches.
    for (const auto& p : pods)
      if (pod_failed(*p))
        if (auto m = match_failure_policy(*failure_policy, *p); m.fail_job) {
          finished = job_condition("FailureTarget", true, "PodFailurePolicy", *m.fail_job, now);
          break;
        }
  if (!finished) {
    // pastBackoffLimitOnFailure: with restartPolicy OnFailure the restarts of running and pending
    // pods count.
    bool past_on_failure = false;
    if (string_of(object_at(job, {"spec", "template", "spec"}), "restartPolicy") == "OnFailure") {
      std::int64_t n = 0;
      for (const auto& p : pods)
        if (phase_of(*p) == "Running" || phase_of(*p) == "Pending") n += restarts(*p);
      past_on_failure = backoff_limit == 0 ? n > 0 : n >= backoff_limit;
    }
    const json::value* ads = spec ? spec->if_contains("activeDeadlineSeconds") : nullptr;
    const auto start = time_from_rfc3339(string_of(&status, "startTime"));
    if (failed > backoff_limit || past_on_failure) {
      finished = job_condition("FailureTarget", true, "BackoffLimitExceeded",
                               "Job has reached the specified backoff limit", now);
    } else if (ads && ads->is_int64() && start && !suspended) {
      // pastActiveDeadline, else sync again when it comes.
      const auto deadline = *start + std::chrono::seconds(ads->as_int64());
      if (now >= deadline)
        finished = job_condition("FailureTarget", true, "DeadlineExceeded",
                                 "Job was active longer than specified deadline", now);
      else
        plan.requeue_after = deadline - now;
    }
  }
  // Indexed: the completed indexes (calculateSucceededIndexes) decide succeeded.
  Intervals prev_indexes, succeeded_indexes;
  if (indexed) {
    prev_indexes = parse_indexes(string_of(&status, "completedIndexes"), completions);
    std::set<std::int64_t> fresh;
    for (const auto& p : pods)
      if (phase_of(*p) == "Succeeded" && valid_index(*p) && holds_finalizer(*p, kJobTrackingFinalizer))
        fresh.insert(completion_index(*p));
    succeeded_indexes = with_indexes(prev_indexes, fresh);
    succeeded = total(succeeded_indexes);
  }
  // backoffLimitPerIndex (JobBackoffLimitPerIndex, on in v1.32): an index fails once its pods'
  // counted failures reach the limit (or a FailIndex rule matched); the failed indexes are not
  // run again; too many of them, or all indexes done with some failed, fail the Job.
  const json::value* per_index_v = spec ? spec->if_contains("backoffLimitPerIndex") : nullptr;
  const bool per_index = indexed && per_index_v && per_index_v->is_int64();
  Intervals failed_indexes;
  std::map<std::int64_t, const json::object*> delayed;  // podsWithDelayedDeletionPerIndex
  if (per_index) {
    const auto index_failed = [&](const json::object& p) {  // isIndexFailed
      if (!pod_failed(p)) return false;
      if (failure_policy) {
        const FailureMatch m = match_failure_policy(*failure_policy, p);
        if (m.fail_index) return true;
        if (!m.count) return false;
      }
      return count_annotation(p, kIndexFailures) >= per_index_v->as_int64();
    };
    std::set<std::int64_t> fresh;
    for (const auto& p : pods)
      if (valid_index(*p) && holds_finalizer(*p, kJobTrackingFinalizer) && index_failed(*p))
        fresh.insert(completion_index(*p));
    failed_indexes = with_indexes(parse_indexes(string_of(&status, "failedIndexes"), completions), fresh);
    if (!finished) {
      const json::value* max_v = spec->if_contains("maxFailedIndexes");
      if (max_v && max_v->is_int64() && total(failed_indexes) > max_v->as_int64())
        finished = job_condition("FailureTarget", true, "MaxFailedIndexesExceeded",
                                 "Job has exceeded the specified maximal number of failed indexes", now);
      else if (total(failed_indexes) > 0 && total(failed_indexes) + total(succeeded_indexes) >= completions)
        finished = job_condition("FailureTarget", true, "FailedIndexes", "Job has failed indexes", now);
    }
    // getPodsWithDelayedDeletionPerIndex: an index's last failed pod keeps its finalizer until its
    // replacement is made (which takes its failure count from it).
    std::set<std::int64_t> active_indexes;
    for (const json::object* p : active_pods)
      if (completion_index(*p) >= 0) active_indexes.insert(completion_index(*p));
    for (const auto& p : pods) {
      if (!holds_finalizer(*p, kJobTrackingFinalizer) || !valid_index(*p) || !pod_failed(*p)) continue;
      const std::int64_t ix = completion_index(*p);
      if (has_index(succeeded_indexes, ix) || has_index(failed_indexes, ix) || active_indexes.count(ix)) continue;
      const auto absolute = [](const json::object& q) {
        return count_annotation(q, kIndexFailures) + count_annotation(q, kIndexIgnoredFailures);
      };
      auto [it, added] = delayed.emplace(ix, p.get());
      if (!added && absolute(*it->second) <= absolute(*p) &&
          !(job_pod_finished_time(*p) < job_pod_finished_time(*it->second)))
        it->second = p.get();
    }
  }
  // The successPolicy's rules (JobSuccessPolicy, beta and on in v1.32).
  if (const json::object* sp = object_at(job, {"spec", "successPolicy"}); indexed && sp && !finished)
    if (auto msg = match_success_policy(*sp, completions, succeeded_indexes))
      finished = job_condition("SuccessCriteriaMet", true, "SuccessPolicy", *msg, now);

  bool suspend_changed = false;
  const auto remove_pods = [&](const std::vector<const json::object*>& victims, bool drop_finalizer) {
    for (const json::object* p : victims) {
      plan.remove.push_back({"", "pods", name_of(*p), drop_finalizer ? std::string(kJobTrackingFinalizer) : ""});
      if (pod_ready(*p)) --ready;
    }
    active -= static_cast<std::int64_t>(victims.size());
    terminating += static_cast<std::int64_t>(victims.size());
  };
  if (finished) {
    // deleteActivePods: with their finalizers (taken off below).
    remove_pods(active_pods, false);
  } else {
    bool managed = false;
    if (!job_deleting) {
      // manageJob
      managed = true;
      std::vector<const json::object*> candidates = active_pods;
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const json::object* a, const json::object* b) { return active_pods_less(*a, *b); });
      if (suspended) {
        remove_pods(candidates, true);
      } else {
        std::int64_t want = 0;
        if (!has_completions)
          want = succeeded > 0 ? active : parallelism;
        else
          want = std::clamp<std::int64_t>(completions - succeeded, 0, parallelism);
        // activePodsForRemoval: an Indexed Job's pods without a valid index and the repeats of an
        // index first (the best of each index kept), then the rest in ActivePods order.
        std::vector<const json::object*> rm, left;
        if (indexed) {
          std::map<std::int64_t, std::vector<const json::object*>> by_index;
          for (const json::object* p : candidates) {
            if (!valid_index(*p))
              rm.push_back(p);
            else
              by_index[completion_index(*p)].push_back(p);
          }
          for (auto& entry : by_index) {
            auto& same = entry.second;
            rm.insert(rm.end(), same.begin(), same.end() - 1);
            left.push_back(same.back());
          }
          std::stable_sort(left.begin(), left.end(),
                           [](const json::object* a, const json::object* b) { return active_pods_less(*a, *b); });
        } else {
          left = candidates;
        }
        const std::int64_t rm_at_least = std::max<std::int64_t>(0, active - want);
        for (std::size_t i = 0; static_cast<std::int64_t>(rm.size()) < rm_at_least && i < left.size(); ++i)
          rm.push_back(left[i]);
        if (static_cast<std::int64_t>(rm.size()) > kMaxPodCreateDeletePerSync) rm.resize(kMaxPodCreateDeletePerSync);
        if (!rm.empty()) {
          remove_pods(rm, true);
        } else if (std::int64_t diff = want - (only_failed ? terminating : 0) - active; diff > 0) {
          const auto wall = std::chrono::time_point_cast<std::chrono::system_clock::duration>(now);
          // (With backoffLimitPerIndex each index backs off on its own, below.)
          if (const auto wait = per_index ? std::chrono::nanoseconds(0) : job_backoff_remaining(new_backoff, wall);
              wait > std::chrono::nanoseconds(0)) {
            // enqueueSyncJobWithDelay. (v1.32's manageJob answers 0 active here, a regression
            // fixed upstream, kubernetes#139457: with ready pods the apiserver refuses that status,
            // ready > active. The active pods are reported, as the fix does; FIDELITY.md.)
            const auto d = std::chrono::duration_cast<Clock::duration>(wait);
            plan.requeue_after = plan.requeue_after ? std::min(*plan.requeue_after, d) : d;
          } else {
            diff = std::min(diff, kMaxPodCreateDeletePerSync);
            // firstPendingIndexes: the lowest indexes neither completed nor held by an active
            // pod (nor a terminating one, when only failed pods are replaced).
            std::vector<std::int64_t> indexes;
            if (indexed) {
              std::set<std::int64_t> busy;
              for (const json::object* p : active_pods)
                if (completion_index(*p) >= 0) busy.insert(completion_index(*p));
              if (only_failed)
                for (const auto& p : pods)
                  if (!terminal(*p) && deleting(*p) && completion_index(*p) >= 0) busy.insert(completion_index(*p));
              const Intervals non_pending = merge(with_indexes(succeeded_indexes, busy), failed_indexes);
              for (std::int64_t c = 0; c < completions && static_cast<std::int64_t>(indexes.size()) < diff; ++c)
                if (!has_index(non_pending, c)) indexes.push_back(c);
              if (per_index) {
                // getPodCreationInfoForIndependentIndexes: the indexes whose last failed pod's
                // backoff is over (its failures so far plus one); none: sync again at the first.
                std::vector<std::int64_t> now_ready;
                std::optional<std::chrono::nanoseconds> soonest;
                for (const std::int64_t ix : indexes) {
                  std::chrono::nanoseconds wait{0};
                  if (auto d = delayed.find(ix); d != delayed.end())
                    wait = job_backoff_remaining({count_annotation(*d->second, kIndexFailures) +
                                                      count_annotation(*d->second, kIndexIgnoredFailures) + 1,
                                                  job_pod_finished_time(*d->second)},
                                                 wall);
                  if (wait == std::chrono::nanoseconds(0))
                    now_ready.push_back(ix);
                  else if (!soonest || wait < *soonest)
                    soonest = wait;
                }
                if (now_ready.empty() && soonest) {  // (active kept, as above)
                  const auto d = std::chrono::duration_cast<Clock::duration>(*soonest);
                  plan.requeue_after = plan.requeue_after ? std::min(*plan.requeue_after, d) : d;
                }
                indexes = std::move(now_ready);
              }
              diff = static_cast<std::int64_t>(indexes.size());
            }
            const json::object* tmpl = object_at(job, {"spec", "template"});
            const std::string uid = uid_of(job);
            for (std::int64_t i = 0; i < diff; ++i) {
              std::map<std::string, std::string> labels{{"batch.kubernetes.io/controller-uid", uid},
                                                        {"batch.kubernetes.io/job-name", name_of(job)},
                                                        {"controller-uid", uid},
                                                        {"job-name", name_of(job)}};
              std::string prefix = name_of(job) + "-";
              const std::int64_t index = indexed ? indexes[static_cast<std::size_t>(i)] : -1;
              if (indexed) {
                labels["batch.kubernetes.io/job-completion-index"] = std::to_string(index);
                prefix = fmt::format("{}-{}-", name_of(job), index);
              }
              json::object pod = pod_from_template(tmpl ? *tmpl : kEmpty, job, "", prefix, labels);
              auto& md = pod["metadata"].as_object();
              set_finalizer(md, kJobTrackingFinalizer, true);  // appendJobCompletionFinalizerIfNotFound
              if (indexed) {
                auto& ann = ensure_object(md, "annotations");
                ann["batch.kubernetes.io/job-completion-index"] = std::to_string(index);
                if (per_index) {
                  // addIndexFailureCountAnnotation: the replaced pod's counts, one more.
                  std::int64_t failures = 0, ignored = 0;
                  if (auto d = delayed.find(index); d != delayed.end()) {
                    failures = count_annotation(*d->second, kIndexFailures);
                    ignored = count_annotation(*d->second, kIndexIgnoredFailures);
                    (counts_failed(*d->second) ? failures : ignored) += 1;
                  }
                  ann[kIndexFailures] = std::to_string(failures);
                  if (ignored > 0) ann[kIndexIgnoredFailures] = std::to_string(ignored);
                }
                auto& ps = pod["spec"].as_object();
                ps["hostname"] = fmt::format("{}-{}", name_of(job), index);
                // addCompletionIndexEnvVariables
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
                             json::object{
                                 {"fieldRef",
                                  json::object{{"fieldPath",
                                                "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}}}});
                    }
              }
              plan.create.push_back({"", "pods", std::move(pod)});
            }
            active += diff;
          }
        }
      }
    }
    // The completions reached (a Job without completions: a success and nothing left running).
    const bool complete = has_completions ? succeeded >= completions && active == 0 : succeeded > 0 && active == 0;
    if (complete) {
      finished = job_condition("SuccessCriteriaMet", true, "CompletionsReached",
                               "Reached expected number of succeeded pods", now);
    } else if (managed) {
      if (suspended) {
        if (ensure_condition(conditions, "Suspended", true, "JobSuspended", "Job suspended", now)) {
          suspend_changed = true;
          plan.events.push_back({"Normal", "Suspended", "Job suspended"});
        }
      } else if (ensure_condition(conditions, "Suspended", false, "JobResumed", "Job resumed", now)) {
        // A resumed Job's startTime is now (ActiveDeadlineSeconds counts from the resume).
        suspend_changed = true;
        plan.events.push_back({"Normal", "Resumed", "Job resumed"});
        status["startTime"] = to_rfc3339(now);
      }
    }
  }

  const json::object* old = object_at(job, {"status"});
  // needsStatusUpdate: the suspension, or the counts of active, ready or terminating pods.
  bool needs_flush = suspend_changed || active != int_of(old, "active", 0) || !old || !old->contains("ready") ||
                     ready != int_of(old, "ready", 0) || !old->contains("terminating") ||
                     terminating != int_of(old, "terminating", 0);
  auto set_count = [&](const char* k, std::int64_t v) {
    if (v)
      status[k] = v;
    else
      status.erase(k);
  };
  set_count("active", active);
  status["ready"] = ready;
  status["terminating"] = terminating;
  if (!conditions.empty()) status["conditions"] = conditions;

  // trackJobStatusAndRemoveFinalizers
  std::set<std::string> with_finalizer;
  for (const auto& p : pods)
    if (holds_finalizer(*p, kJobTrackingFinalizer)) with_finalizer.insert(uid_of(*p));
  // cleanUncountedPodsWithoutFinalizers: the uncounted pods whose finalizers are gone are counted.
  auto clean_uncounted = [&](const std::set<std::string>& keep) {
    bool changed = false;
    for (auto [key, list] : {std::pair<const char*, json::array*>{"succeeded", &uncounted_succeeded_list},
                             std::pair<const char*, json::array*>{"failed", &uncounted_failed_list}}) {
      json::array kept;
      for (const auto& u : *list)
        if (u.is_string() && keep.count(std::string(u.get_string()))) kept.push_back(u);
      if (kept.size() != list->size()) {
        changed = true;
        // (An Indexed Job's succeeded is its completed indexes' count.)
        if (!(indexed && std::string_view(key) == "succeeded"))
          set_count(key, int_of(&status, key, 0) + static_cast<std::int64_t>(list->size() - kept.size()));
        *list = std::move(kept);
      }
    }
    return changed;
  };
  auto put_uncounted = [&] {
    status["uncountedTerminatedPods"] = json::object{};
    auto& u = status["uncountedTerminatedPods"].as_object();
    if (!uncounted_succeeded_list.empty()) u["succeeded"] = uncounted_succeeded_list;
    if (!uncounted_failed_list.empty()) u["failed"] = uncounted_failed_list;
  };
  if (clean_uncounted(with_finalizer)) needs_flush = true;
  std::vector<const json::object*> to_unfinalize;
  std::set<std::int64_t> new_indexes;
  bool reached_max = false;
  std::vector<const json::object*> ordered;
  for (const auto& p : pods) ordered.push_back(p.get());
  if (indexed)  // byCompletionIndex: completed indexes come in order
    std::stable_sort(ordered.begin(), ordered.end(), [](const json::object* a, const json::object* b) {
      return completion_index(*a) < completion_index(*b);
    });
  const bool finishing_failed = finished && string_of(&*finished, "type") != "SuccessCriteriaMet";
  for (const json::object* p : ordered) {
    if (!holds_finalizer(*p, kJobTrackingFinalizer)) continue;
    const bool considered_failed = pod_failed(*p);
    // canRemoveFinalizer (an index's last failed pod waits for its replacement)
    if (!(job_deleting || finished || phase_of(*p) == "Succeeded" || considered_failed)) continue;
    if (!(job_deleting || finished || phase_of(*p) == "Succeeded") && per_index)
      if (auto d = delayed.find(completion_index(*p)); d != delayed.end() && d->second == p) continue;
    to_unfinalize.push_back(p);
    const std::string uid = uid_of(*p);
    if (phase_of(*p) == "Succeeded" && !uncounted_failed.count(uid)) {
      if (indexed) {
        if (valid_index(*p) && !has_index(prev_indexes, completion_index(*p))) {
          new_indexes.insert(completion_index(*p));
          needs_flush = true;
        }
      } else if (!uncounted_succeeded.count(uid)) {
        needs_flush = true;
        uncounted_succeeded_list.emplace_back(uid);
        uncounted_succeeded.insert(uid);
      }
    } else if (considered_failed || finishing_failed) {
      if (!uncounted_failed.count(uid) && (!indexed || valid_index(*p)) && counts_failed(*p)) {
        needs_flush = true;
        uncounted_failed_list.emplace_back(uid);
        uncounted_failed.insert(uid);
      }
    }
    if (static_cast<std::int64_t>(new_indexes.size() + uncounted_succeeded_list.size() +
                                  uncounted_failed_list.size()) >= kMaxUncountedPods) {
      reached_max = true;
      break;
    }
  }
  if (indexed) {
    const Intervals done = with_indexes(succeeded_indexes, new_indexes);
    const std::string text = to_text(done);
    if (text != string_of(&status, "completedIndexes")) needs_flush = true;
    set_count("succeeded", total(done));
    if (per_index) {
      const std::string failed_text = to_text(failed_indexes);
      if (failed_text != string_of(&status, "failedIndexes") || !status.contains("failedIndexes")) needs_flush = true;
      status["failedIndexes"] = failed_text;
    }
    if (text.empty())
      status.erase("completedIndexes");
    else
      status["completedIndexes"] = text;
  }
  // The interim condition goes in before the finalizers, the terminal one after.
  if (finished && string_of(&*finished, "type") == "FailureTarget") {
    conditions.push_back(*finished);
    needs_flush = true;
    finished = job_condition("Failed", true, string_of(&*finished, "reason"), string_of(&*finished, "message"), now);
  }
  if (finished && string_of(&*finished, "type") == "SuccessCriteriaMet") {
    if (!success_met) {
      conditions.push_back(*finished);
      needs_flush = true;
    }
    finished = job_condition("Complete", true, string_of(&*finished, "reason"), string_of(&*finished, "message"), now);
  }
  if (!conditions.empty()) status["conditions"] = conditions;
  put_uncounted();
  // flushUncountedAndRemoveFinalizers: the first flush, the finalizers, the counts.
  if (needs_flush) {
    plan.status_first = status;
    backoff = new_backoff;  // updateBackoffRecord
    needs_flush = false;
  }
  for (const json::object* p : to_unfinalize) {
    plan.unfinalize.push_back({"", "pods", name_of(*p), std::string(kJobTrackingFinalizer)});
    with_finalizer.erase(uid_of(*p));
  }
  if (clean_uncounted(with_finalizer)) needs_flush = true;
  put_uncounted();
  // enactJobFinished: once nothing is uncounted and no pod is still terminating.
  if (!reached_max && finished && uncounted_succeeded_list.empty() && uncounted_failed_list.empty() &&
      terminating == 0) {
    const std::string type = string_of(&*finished, "type");
    ensure_condition(conditions, type, true, string_of(&*finished, "reason"), string_of(&*finished, "message"), now);
    status["conditions"] = conditions;
    if (type == "Complete") status["completionTime"] = to_rfc3339(now);
    needs_flush = true;
    // recordJobFinished
    if (type == "Complete") {
      if (has_completions && int_of(&status, "succeeded", 0) > completions)
        plan.events.push_back(
            {"Warning", "TooManySucceededPods", "Too many succeeded pods running after completion count reached"});
      plan.events.push_back({"Normal", "Completed", "Job completed"});
    } else {
      plan.events.push_back({"Warning", string_of(&*finished, "reason"), string_of(&*finished, "message")});
    }
  }
  if (needs_flush || plan.status_first) {
    plan.status = std::move(status);
    if (plan.status_first && util::json_equal(*plan.status_first, *plan.status)) plan.status_first.reset();
    if (plan.status_first && old && util::json_equal(*plan.status_first, *old)) plan.status_first.reset();
    if (old && util::json_equal(*old, *plan.status)) plan.status.reset();
  }
  return plan;
}

}  // namespace gpupool::embedded
