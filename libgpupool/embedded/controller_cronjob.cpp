// embedded/controller_cronjob.cpp — the batch/v1 CronJob controller (kube-controller-manager
// v1.32, pkg/controller/cronjob: cronjob_controllerv2.go sync, cleanupFinishedJobs and
// syncCronJob; utils.go mostRecentScheduleTime, nextScheduleTime, nextScheduleTimeDuration,
// getJobFromTemplate2): plan_cronjob. Schedules are read by gpupool/cron.hpp (robfig/cron v3's
// ParseStandard, as the controller parses them), on the cluster's clock.
#include "embedded/controllers.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/time_zone_file.hpp"
#include "embedded/controllers_util.hpp"
#include "gpupool/cron.hpp"
#include "gpupool/error.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

namespace {

using std::chrono::sys_seconds;

// cronjob_controllerv2.go nextScheduleDelta: a requeue lands this long after the scheduled time.
constexpr std::chrono::milliseconds kNextScheduleDelta{100};
// mostRecentScheduleTime: more missed start times than this is "many" (TooManyMissedTimes).
constexpr std::int64_t kManyMissed = 100;

sys_seconds floor_seconds(Clock::time_point t) { return std::chrono::floor<std::chrono::seconds>(t); }
// A schedule's time on the cluster clock (nanoseconds since 1970, which end in 2262): a later one
// (an @every of centuries) is held at 2200, which no cluster clock reaches.
Clock::time_point at(sys_seconds t) {
  constexpr sys_seconds kFar{std::chrono::seconds(7258118400)};  // 2200-01-01T00:00:00Z
  return std::chrono::time_point_cast<Clock::duration>(std::min(t, kFar));
}
// startingDeadlineSeconds as a duration the clock can subtract (an int64 of seconds may not fit in
// nanoseconds: a century is more than any deadline can mean).
std::chrono::seconds deadline_of(const json::object* spec) {
  return std::chrono::seconds(std::clamp<std::int64_t>(int_of(spec, "startingDeadlineSeconds", 0), 0, 3155760000));
}

// The Job's finished condition (Complete or Failed with status True), "" while it runs
// (getFinishedStatus, jobutil.IsJobFinished).
std::string finished_condition(const json::object& job) {
  if (const json::array* cs = util::array_at(job, {"status"}, "conditions"))
    for (const auto& c : *cs)
      if (c.is_object() && string_of(&c.as_object(), "status") == "True") {
        const std::string type = string_of(&c.as_object(), "type");
        if (type == "Complete" || type == "Failed") return type;
      }
  return {};
}

std::optional<Clock::time_point> time_at(const json::object* o, std::string_view key) {
  const std::string text = string_of(o, key);
  if (text.empty()) return std::nullopt;
  return time_from_rfc3339(text);
}

// The next activation strictly after `t` (schedule.Next), nullopt for Go's zero time.
std::optional<Clock::time_point> next_after(const CronSchedule& s, Clock::time_point t) {
  if (auto n = s.next(floor_seconds(t), TimeZone::utc())) return at(*n);
  return std::nullopt;
}

struct MostRecent {
  Clock::time_point earliest;
  std::optional<Clock::time_point> most_recent;
  std::int64_t missed = 0;  // numberOfMissedSchedules (0: none missed)
  bool invalid = false;     // "time difference between two schedules is less than 1 second"
};

// utils.go mostRecentScheduleTime.
MostRecent most_recent_schedule_time(const json::object& cj, Clock::time_point now, const CronSchedule& s,
                                     bool with_starting_deadline) {
  MostRecent r;
  r.earliest = time_at(object_at(cj, {"metadata"}), "creationTimestamp").value_or(now);
  if (auto last = time_at(object_at(cj, {"status"}), "lastScheduleTime")) r.earliest = *last;
  const json::object* spec = object_at(cj, {"spec"});
  if (const json::value* d = spec ? spec->if_contains("startingDeadlineSeconds") : nullptr;
      with_starting_deadline && d && !d->is_null()) {
    const Clock::time_point deadline = now - deadline_of(spec);
    if (deadline > r.earliest) r.earliest = deadline;
  }
  // A schedule with no time within five years gives Go's zero time (year 1), which is before any
  // `now`: the difference of two of them (or of one and a real time) is below a second, and the
  // schedule is reported invalid.
  const auto t1 = next_after(s, r.earliest);
  if (t1 && now < *t1) return r;
  const auto t2 = t1 ? next_after(s, *t1) : std::nullopt;
  if (!t1 || !t2) {
    r.invalid = true;
    return r;
  }
  if (now < *t2) {
    r.most_recent = t1;
    return r;
  }
  const std::int64_t between =
      std::chrono::round<std::chrono::seconds>(*t2 - *t1).count();  // t2.Sub(t1).Round(time.Second)
  if (between < 1) {
    r.invalid = true;
    return r;
  }
  const std::int64_t elapsed = std::chrono::duration_cast<std::chrono::seconds>(now - *t1).count();
  r.missed = elapsed / between + 1;
  const Clock::time_point potential = *t1 + std::chrono::seconds((r.missed - 1 - 1) * between);
  for (auto t = next_after(s, potential); t && *t <= now; t = next_after(s, *t)) r.most_recent = t;
  return r;
}

// utils.go nextScheduleTimeDuration: how long until the sync after the next scheduled time.
Clock::duration next_schedule_duration(const json::object& cj, Clock::time_point now, const CronSchedule& s) {
  const MostRecent r = most_recent_schedule_time(cj, now, s, false);
  Clock::time_point from = now;
  if (!r.invalid) from = r.most_recent ? *r.most_recent : r.missed == 0 ? r.earliest : now;
  const auto next = next_after(s, from);
  if (!next) return std::chrono::hours(24 * 365 * 5);  // never again: Go's zero time, far in the past
  return *next + kNextScheduleDelta - now;
}

// RFC 3339 in the schedule's zone, as time.Format(time.RFC3339) writes it ("Z" for UTC, else
// the offset).
std::string rfc3339_in(sys_seconds t, const TimeZone& zone) {
  const TimeZone::Local l = zone.to_local(t);
  std::string offset = "Z";
  if (l.offset.count() != 0) {
    const auto off = l.offset.count();
    const auto a = off < 0 ? -off : off;
    offset = fmt::format("{}{:02}:{:02}", off < 0 ? '-' : '+', a / 3600, a / 60 % 60);
  }
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}", l.year, l.month, l.day, l.hour, l.minute, l.second,
                     offset);
}

// time.RFC1123Z of a UTC time: "Mon, 02 Jan 2006 15:04:05 -0700".
std::string rfc1123z_utc(sys_seconds t) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const TimeZone::Local l = TimeZone::utc().to_local(t);
  return fmt::format("{}, {:02} {} {:04} {:02}:{:02}:{:02} +0000", kDays[l.weekday % 7], l.day,
                     kMonths[(l.month + 11) % 12], l.year, l.hour, l.minute, l.second);
}

bool in_active(const json::array& active, std::string_view key, std::string_view value) {
  return std::any_of(active.begin(), active.end(),
                     [&](const json::value& r) { return r.is_object() && string_of(&r.as_object(), key) == value; });
}

void erase_from_active(json::array& active, std::string_view uid) {
  active.erase(
      std::remove_if(active.begin(), active.end(),
                     [&](const json::value& r) { return r.is_object() && string_of(&r.as_object(), "uid") == uid; }),
      active.end());
}

}  // namespace

json::object cronjob_job_reference(const json::object& job) {
  // ref.GetReference: an ObjectReference in its field order.
  return json::object{{"kind", "Job"},
                      {"namespace", namespace_of(job)},
                      {"name", name_of(job)},
                      {"uid", uid_of(job)},
                      {"apiVersion", "batch/v1"},
                      {"resourceVersion", string_of(object_at(job, {"metadata"}), "resourceVersion")}};
}

Plan plan_cronjob(const json::object& cj, const Children& jobs, Clock::time_point now) {
  Plan plan;
  const json::object* spec = object_at(cj, {"spec"});
  json::object status = object_at(cj, {"status"}) ? *object_at(cj, {"status"}) : json::object{};
  json::array active;
  if (const json::value* a = status.if_contains("active"); a && a->is_array()) active = a->as_array();
  bool update = false;
  auto event = [&](const char* type, const char* reason, std::string message) {
    plan.events.push_back({type, reason, std::move(message)});
  };
  auto remove_job = [&](const json::object& job) {  // deleteJob: Background, then the reference
    plan.remove.push_back({"batch", "jobs", name_of(job)});
    erase_from_active(active, uid_of(job));
    event("Normal", "SuccessfulDelete", "Deleted job " + name_of(job));
    update = true;
  };

  // cleanupFinishedJobs: the oldest finished Jobs past each history limit (by status.startTime,
  // unstarted last, then by name).
  std::vector<const json::object*> succeeded, failed;
  for (const auto& j : jobs) {
    const std::string fin = finished_condition(*j);
    if (fin == "Complete") succeeded.push_back(j.get());
    if (fin == "Failed") failed.push_back(j.get());
  }
  auto remove_oldest = [&](std::vector<const json::object*>& list, std::string_view limit_key) {
    const json::value* lv = spec ? spec->if_contains(limit_key) : nullptr;
    if (!lv || lv->is_null()) return;
    const std::int64_t excess = static_cast<std::int64_t>(list.size()) - count_of(spec, limit_key, 0);
    if (excess <= 0) return;
    std::sort(list.begin(), list.end(), [](const json::object* a, const json::object* b) {  // byJobStartTime
      const auto sa = time_at(object_at(*a, {"status"}), "startTime");
      const auto sb = time_at(object_at(*b, {"status"}), "startTime");
      if (sa.has_value() != sb.has_value()) return sa.has_value();
      if (sa == sb) return name_of(*a) < name_of(*b);
      return *sa < *sb;
    });
    for (std::int64_t i = 0; i < excess; ++i) remove_job(*list[static_cast<std::size_t>(i)]);
  };
  remove_oldest(succeeded, "successfulJobsHistoryLimit");
  remove_oldest(failed, "failedJobsHistoryLimit");

  // syncCronJob: the active list against the Jobs the CronJob controls.
  std::set<std::string> children;
  for (const auto& j : jobs) {
    const json::object& job = *j;
    children.insert(uid_of(job));
    const bool found = in_active(active, "uid", uid_of(job));
    const std::string fin = finished_condition(job);
    if (!found && fin.empty()) {
      event("Warning", "UnexpectedJob", "Saw a job that the controller did not create or forgot: " + name_of(job));
    } else if (!fin.empty()) {
      if (found) {
        erase_from_active(active, uid_of(job));
        event("Normal", "SawCompletedJob", fmt::format("Saw completed job: {}, condition: {}", name_of(job), fin));
        update = true;
      }
      if (fin == "Complete") {
        const json::value* done =
            object_at(job, {"status"}) ? object_at(job, {"status"})->if_contains("completionTime") : nullptr;
        const json::value* last = status.if_contains("lastSuccessfulTime");
        if (!last || last->is_null()) {
          if (done && done->is_string())
            status["lastSuccessfulTime"] = *done;
          else
            status.erase("lastSuccessfulTime");
          update = true;
        } else if (done && done->is_string()) {
          const auto d = time_from_rfc3339(std::string(done->as_string()));
          const auto l = last->is_string() ? time_from_rfc3339(std::string(last->as_string())) : std::nullopt;
          if (d && (!l || *d > *l)) {
            status["lastSuccessfulTime"] = *done;
            update = true;
          }
        }
      }
    }
  }
  // An active reference whose Job is gone (a missing one is looked up in the store by the
  // caller's children: the Jobs whose controller reference is this CronJob).
  for (const auto& r : json::array(active))
    if (r.is_object() && !children.count(string_of(&r.as_object(), "uid"))) {
      event("Normal", "MissingJob", "Active job went missing: " + string_of(&r.as_object(), "name"));
      erase_from_active(active, string_of(&r.as_object(), "uid"));
      update = true;
    }
  auto finish = [&]() -> Plan {
    if (update) {
      if (active.empty())
        status.erase("active");
      else
        status["active"] = active;
      plan.status = std::move(status);
    }
    return std::move(plan);
  };

  if (deleting(cj)) return finish();
  const std::string schedule_text = string_of(spec, "schedule");
  const json::value* tzv = spec ? spec->if_contains("timeZone") : nullptr;
  const bool has_tz = tzv && tzv->is_string();
  const std::string tz = has_tz ? std::string(tzv->as_string()) : std::string();
  TimeZone zone = TimeZone::utc();
  if (has_tz) {
    try {
      zone = load_time_zone(tz);
    } catch (const ValidationError& e) {
      event("Warning", "UnknownTimeZone", fmt::format("invalid timeZone: \"{}\": {}", tz, e.rule()));
      return finish();
    }
  }
  if (const json::value* s = spec ? spec->if_contains("suspend") : nullptr; s && s->is_bool() && s->as_bool())
    return finish();
  // formatSchedule: a schedule naming its own zone is used as written (and warned about); a
  // timeZone becomes a TZ= prefix.
  std::string formatted = schedule_text;
  if (schedule_text.find("TZ") != std::string::npos)
    event("Warning", "UnsupportedSchedule",
          fmt::format("CRON_TZ or TZ used in schedule \"{}\" is not officially supported, see "
                      "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                      schedule_text));
  else if (has_tz)
    formatted = fmt::format("TZ={} {}", tz, schedule_text);
  std::optional<CronSchedule> sched;
  try {
    sched = CronSchedule::parse(formatted, [](std::string_view z) { return load_time_zone(z); });
  } catch (const ValidationError& e) {
    event("Warning", "UnparseableSchedule", fmt::format("unparseable schedule: \"{}\" : {}", schedule_text, e.rule()));
    return finish();
  }
  // nextScheduleTime (with startingDeadlineSeconds).
  const MostRecent due = most_recent_schedule_time(cj, now, *sched, true);
  if (due.invalid) {
    event("Warning", "InvalidSchedule",
          fmt::format("invalid schedule: {} : time difference between two schedules is less than 1 second",
                      schedule_text));
    return finish();
  }
  if (due.missed > kManyMissed && due.most_recent && *due.most_recent <= now)
    event("Warning", "TooManyMissedTimes",
          "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew");
  if (!due.most_recent || *due.most_recent > now) {
    plan.requeue_after = next_schedule_duration(cj, now, *sched);
    return finish();
  }
  const Clock::time_point scheduled = *due.most_recent;
  if (const json::value* d = spec ? spec->if_contains("startingDeadlineSeconds") : nullptr; d && !d->is_null()) {
    if (scheduled + deadline_of(spec) < now) {
      event("Warning", "MissSchedule",
            "Missed scheduled time to start a job: " + rfc1123z_utc(floor_seconds(scheduled)));
      plan.requeue_after = next_schedule_duration(cj, now, *sched);
      return finish();
    }
  }
  // getJobName: <cronjob>-<scheduled time in minutes since the epoch>.
  const std::string job_name = fmt::format(
      "{}-{}", name_of(cj), std::chrono::duration_cast<std::chrono::minutes>(scheduled.time_since_epoch()).count());
  if (in_active(active, "name", job_name) || time_at(&status, "lastScheduleTime") == scheduled) {
    plan.requeue_after = next_schedule_duration(cj, now, *sched);
    return finish();
  }
  const std::string policy = string_of(spec, "concurrencyPolicy");
  if (policy == "Forbid" && !active.empty()) {
    event("Normal", "JobAlreadyActive",
          "Not starting job because prior execution is running and concurrency policy is Forbid");
    plan.requeue_after = next_schedule_duration(cj, now, *sched);
    return finish();
  }
  if (policy == "Replace")
    for (const auto& r : json::array(active)) {
      const std::string uid = r.is_object() ? string_of(&r.as_object(), "uid") : std::string();
      const auto it = std::find_if(jobs.begin(), jobs.end(), [&](const auto& j) { return uid_of(*j) == uid; });
      if (it != jobs.end()) remove_job(**it);
    }
  // getJobFromTemplate2: the template's labels and annotations, the scheduled time annotation
  // (CronJobsScheduledAnnotation, GA in v1.32) in the CronJob's zone, the controller reference and
  // the template's spec. (The server sets the creation time.)
  const json::object* tmpl = spec ? object_at(*spec, {"jobTemplate"}) : nullptr;
  json::object meta;
  meta["name"] = job_name;
  if (const json::object* l = tmpl ? object_at(*tmpl, {"metadata", "labels"}) : nullptr) meta["labels"] = *l;
  json::object annotations;
  if (const json::object* a = tmpl ? object_at(*tmpl, {"metadata", "annotations"}) : nullptr) annotations = *a;
  annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"] = rfc3339_in(floor_seconds(scheduled), zone);
  meta["annotations"] = std::move(annotations);
  meta["ownerReferences"] = json::array{util::controller_reference(cj)};
  json::object job{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", std::move(meta)}};
  if (const json::object* js = tmpl ? object_at(*tmpl, {"spec"}) : nullptr) job["spec"] = *js;
  plan.create.push_back({"batch", "jobs", std::move(job)});
  event("Normal", "SuccessfulCreate", "Created job " + job_name);
  // The new Job's reference: its uid and resourceVersion are filled in by the caller once it is
  // created (cronjob_job_reference).
  active.push_back(json::object{{"kind", "Job"}, {"namespace", namespace_of(cj)}, {"name", job_name}});
  status["lastScheduleTime"] = to_rfc3339(scheduled);
  update = true;
  plan.requeue_after = next_schedule_duration(cj, now, *sched);
  return finish();
}

}  // namespace gpupool::embedded
