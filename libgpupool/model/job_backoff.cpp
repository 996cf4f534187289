#include "gpupool/job_backoff.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <optional>
#include <string>

#include "common/json_path.hpp"
#include "gpupool/error.hpp"
#include "gpupool/time.hpp"

namespace gpupool {

namespace json = boost::json;

namespace {

using jpath::value_at;

std::string text_at(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::value* v = value_at(o, path);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::optional<std::chrono::system_clock::time_point> time_of(const std::string& text) {
  if (text.empty()) return std::nullopt;
  try {
    return std::chrono::system_clock::time_point(parse_rfc3339(text));
  } catch (const ValidationError&) {
    return std::nullopt;
  }
}

std::string phase_of(const json::object& pod) { return text_at(pod, {"status", "phase"}); }

}  // namespace

std::chrono::system_clock::time_point job_pod_finished_time(const json::object& pod) {
  std::optional<std::chrono::system_clock::time_point> latest;
  if (const json::value* cs = value_at(pod, {"status", "containerStatuses"}); cs && cs->is_array())
    for (const auto& c : cs->as_array())
      if (c.is_object())
        if (auto t = time_of(text_at(c.as_object(), {"state", "terminated", "finishedAt"})))
          latest = latest ? std::max(*latest, *t) : *t;
  if (latest) return *latest;
  if (const json::value* conds = value_at(pod, {"status", "conditions"}); conds && conds->is_array())
    for (const auto& c : conds->as_array())
      if (c.is_object() && text_at(c.as_object(), {"type"}) == "Ready" && text_at(c.as_object(), {"status"}) == "False")
        if (auto t = time_of(text_at(c.as_object(), {"lastTransitionTime"}))) return *t;
  if (auto t = time_of(text_at(pod, {"metadata", "deletionTimestamp"}))) {
    const json::value* g = value_at(pod, {"metadata", "deletionGracePeriodSeconds"});
    return *t - std::chrono::seconds(g && g->is_int64() ? g->as_int64() : 0);
  }
  return time_of(text_at(pod, {"metadata", "creationTimestamp"})).value_or(std::chrono::system_clock::time_point{});
}

JobBackoff job_failure_backoff(const std::vector<const json::object*>& pods,
                               std::chrono::system_clock::time_point now) {
  // newBackoffRecord, without the controller's memory: the failures finished after the last
  // success, the last of them, then getRemainingTimeForFailuresCount.
  std::optional<std::chrono::system_clock::time_point> last_success, last_failure;
  for (const json::object* p : pods)
    if (phase_of(*p) == "Succeeded") {
      const auto t = job_pod_finished_time(*p);
      last_success = last_success ? std::max(*last_success, t) : t;
    }
  JobBackoff b;
  for (const json::object* p : pods) {
    if (phase_of(*p) != "Failed") continue;
    const auto t = job_pod_finished_time(*p);
    if (last_success && t <= *last_success) continue;
    ++b.failures;
    last_failure = last_failure ? std::max(*last_failure, t) : t;
  }
  if (b.failures == 0) return b;
  b.remaining = job_backoff_remaining({b.failures, last_failure}, now);
  return b;
}

JobBackoffRecord job_backoff_record(const JobBackoffRecord& old, const std::vector<const json::object*>& succeeded,
                                    const std::vector<const json::object*>& failed) {
  JobBackoffRecord r = old;
  if (failed.empty() && succeeded.empty()) return r;
  std::vector<std::chrono::system_clock::time_point> failed_at;
  for (const json::object* p : failed) failed_at.push_back(job_pod_finished_time(*p));
  std::sort(failed_at.begin(), failed_at.end());
  if (succeeded.empty()) {
    r.failures += static_cast<std::int64_t>(failed_at.size());
    r.last_failure = failed_at.back();
    return r;
  }
  // A success resets the count: only failures that finished after the last success count.
  std::chrono::system_clock::time_point last_success = job_pod_finished_time(*succeeded.front());
  for (const json::object* p : succeeded) last_success = std::max(last_success, job_pod_finished_time(*p));
  r = {};
  for (auto it = failed_at.rbegin(); it != failed_at.rend() && *it > last_success; ++it) {
    if (!r.last_failure) r.last_failure = *it;
    ++r.failures;
  }
  return r;
}

std::chrono::nanoseconds job_backoff_remaining(const JobBackoffRecord& record,
                                               std::chrono::system_clock::time_point now) {
  // getRemainingTimeForFailuresCount: 10 s doubled per further failure, at most 10 minutes.
  if (record.failures == 0 || !record.last_failure) return std::chrono::nanoseconds(0);
  std::chrono::nanoseconds backoff = kJobPodFailureBackOff;
  for (std::int64_t i = 1; i < record.failures; ++i) {
    backoff *= 2;
    if (backoff >= kMaxJobPodFailureBackOff) {
      backoff = kMaxJobPodFailureBackOff;
      break;
    }
  }
  const auto elapsed = now - *record.last_failure;
  return backoff < elapsed ? std::chrono::nanoseconds(0) : backoff - elapsed;
}

}  // namespace gpupool
