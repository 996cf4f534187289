// The batch/v1 CronJob controller (controller_cronjob.cpp) on a manual clock: when it starts Jobs,
// what it names and annotates them, its active list and times, concurrencyPolicy, the history
// limits, suspend, startingDeadlineSeconds, time zones. (The API's rules for CronJobs:
// validation_test and the fidelity scenario `cronjob`, recorded from kube-controller-manager.)
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <set>
#include <string>

#include <fmt/format.h>

#include "controller_world.hpp"
#include "embedded/controllers.hpp"
#include "embedded/store.hpp"

using namespace gpupool::embedded;
using namespace gpupool::embedded::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

// A CronJob whose Jobs' pods run `duration` (the simulated kubelet's annotation) and exit 0.
json::object cronjob(const std::string& name, const std::string& schedule, const std::string& extra_spec = "",
                     const std::string& duration = "30s") {
  return obj(fmt::format(R"({{"apiVersion":"batch/v1","kind":"CronJob","metadata":{{"name":"{}"}},
    "spec":{{"schedule":"{}"{},"jobTemplate":{{"metadata":{{"labels":{{"team":"a"}},"annotations":{{"note":"x"}}}},
      "spec":{{"template":{{"metadata":{{"annotations":{{"gpupool.io/simulate-duration":"{}"}}}},
        "spec":{{"restartPolicy":"Never","containers":[{{"name":"c","image":"busybox"}}]}}}}}}}}}}}})",
                         name, schedule, extra_spec, duration));
}

struct CronWorld : World {
  const ResourceType& cronjobs = store.type("batch", "cronjobs");
  const ResourceType& jobs = store.type("batch", "jobs");
  std::set<std::string> job_names() const {
    std::set<std::string> out;
    for (const auto& j : list("batch", "jobs")) out.insert(at(j, "metadata.name"));
    return out;
  }
  json::object cj(const std::string& name) const { return get("batch", "cronjobs", name); }
  std::size_t active(const std::string& name) const {
    const json::object c = cj(name);
    const json::value* a = c.at("status").as_object().if_contains("active");
    return a ? a->as_array().size() : 0;
  }
  std::size_t events(const std::string& reason) const {
    std::size_t n = 0;
    for (const auto& e : list("", "events"))
      if (at(e, "reason") == reason) ++n;
    return n;
  }
  // Advances in steps of at most `step` (the kubelet and controllers see each one).
  void run_for(Clock::duration d, Clock::duration step = 10s) {
    for (Clock::duration done{}; done < d; done += step) advance(step);
  }
};

// Minutes since the epoch of 2024-01-01T00:00:00Z (the manual clock's start), + `m` minutes.
std::string minute_name(const std::string& cj, int m) { return fmt::format("{}-{}", cj, 1704067200 / 60 + m); }

}  // namespace

TEST_CASE("CronJob: a Job at each scheduled time, named by its minute, annotated, in the active list") {
  CronWorld w;
  w.store.create(w.cronjobs, "default", cronjob("report", "*/5 * * * *"));
  CHECK(w.cj("report").at("status").as_object().empty());  // PrepareForCreate: an empty status
  w.run_for(4min + 50s);
  CHECK(w.job_names().empty());  // nothing before 00:05
  w.run_for(20s, 1s);
  REQUIRE(w.job_names() == std::set<std::string>{minute_name("report", 5)});
  const json::object job = w.get("batch", "jobs", minute_name("report", 5));
  // getJobFromTemplate2: the template's labels and annotations, the scheduled time, the controller
  // reference, the template's spec.
  CHECK(at(job, "metadata.labels.team") == "a");
  CHECK(at(job, "metadata.annotations.note") == "x");
  CHECK(job.at("metadata").at("annotations").at("batch.kubernetes.io/cronjob-scheduled-timestamp") ==
        "2024-01-01T00:05:00Z");
  CHECK(job.at("metadata").at("ownerReferences").at(0).at("kind") == "CronJob");
  CHECK(job.at("metadata").at("ownerReferences").at(0).at("controller") == true);
  CHECK(at(job, "spec.template.spec.restartPolicy") == "Never");
  const json::object st = w.cj("report").at("status").as_object();
  CHECK(st.at("lastScheduleTime") == "2024-01-01T00:05:00Z");
  REQUIRE(w.active("report") == 1);
  const json::object& ref = st.at("active").at(0).as_object();
  CHECK(ref.at("kind") == "Job");
  CHECK(ref.at("apiVersion") == "batch/v1");
  CHECK(ref.at("name").as_string() == minute_name("report", 5));
  CHECK(ref.at("uid") == job.at("metadata").at("uid"));
  CHECK(ref.at("resourceVersion").as_string().size() > 0);
  CHECK(w.events("SuccessfulCreate") >= 1);
  // The Job finishes (its pod runs 30 s): out of the active list, lastSuccessfulTime set.
  w.run_for(1min);
  CHECK(w.active("report") == 0);
  CHECK(w.cj("report").at("status").as_object().contains("lastSuccessfulTime"));
  CHECK(w.events("SawCompletedJob") == 1);
  // Every five minutes one more, never two for one time.
  w.run_for(10min);
  CHECK(w.job_names() ==
        std::set<std::string>{minute_name("report", 5), minute_name("report", 10), minute_name("report", 15)});
}

TEST_CASE("CronJob history limits: the oldest finished Jobs past successfulJobsHistoryLimit are deleted") {
  CronWorld w;
  w.store.create(w.cronjobs, "default", cronjob("h", "* * * * *", R"(,"successfulJobsHistoryLimit":2)"));
  w.run_for(6min + 5s);
  // Runs at minutes 1..6; the one of minute 6 may still run, the finished ones beyond two are gone.
  const auto names = w.job_names();
  CHECK(names.count(minute_name("h", 6)) == 1);
  CHECK(names.count(minute_name("h", 5)) == 1);
  CHECK(names.count(minute_name("h", 1)) == 0);
  CHECK(names.count(minute_name("h", 2)) == 0);
  CHECK(names.size() <= 3);
  CHECK(w.events("SuccessfulDelete") >= 3);
  // Deleted in the background: no pod of a deleted Job is left.
  for (const auto& p : w.list("", "pods")) CHECK(names.count(at(p, "metadata.labels.job-name")) == 1);
}

TEST_CASE("CronJob concurrencyPolicy: Allow runs Jobs side by side, Forbid skips, Replace replaces") {
  for (const std::string policy : {"Allow", "Forbid", "Replace"}) {
    CAPTURE(policy);
    CronWorld w;
    // Each Job runs ten minutes; the schedule is every minute.
    w.store.create(w.cronjobs, "default",
                   cronjob("c", "* * * * *", fmt::format(R"(,"concurrencyPolicy":"{}")", policy), "10m"));
    w.run_for(3min + 30s);
    const auto names = w.job_names();
    if (policy == "Allow") {
      CHECK(names.size() == 3);
      CHECK(w.active("c") == 3);
    } else if (policy == "Forbid") {
      CHECK(names == std::set<std::string>{minute_name("c", 1)});
      CHECK(w.active("c") == 1);
      CHECK(w.events("JobAlreadyActive") >= 1);
    } else {
      CHECK(names == std::set<std::string>{minute_name("c", 3)});
      CHECK(w.active("c") == 1);
      CHECK(w.cj("c").at("status").at("active").at(0).at("name").as_string() == minute_name("c", 3));
    }
  }
}

TEST_CASE("CronJob suspend and startingDeadlineSeconds: a missed time runs late, unless past the deadline") {
  for (const bool deadline : {false, true}) {
    CAPTURE(deadline);
    CronWorld w;
    w.store.create(w.cronjobs, "default",
                   cronjob("s", "*/5 * * * *",
                           std::string(R"(,"suspend":true)") + (deadline ? R"(,"startingDeadlineSeconds":30)" : "")));
    w.run_for(11min);
    CHECK(w.job_names().empty());  // suspended
    w.store.mutate(w.cronjobs, "default", "s", [](json::object& o) { o["spec"].as_object()["suspend"] = false; });
    w.advance(1s);
    if (deadline) {
      CHECK(w.job_names().empty());  // 00:10 is more than 30 s ago: skipped
      w.run_for(4min, 5s);           // the next one, 00:15, runs
      CHECK(w.job_names() == std::set<std::string>{minute_name("s", 15)});
    } else {
      // The most recent missed time (00:10, not 00:05 too) starts late.
      CHECK(w.job_names() == std::set<std::string>{minute_name("s", 10)});
    }
  }
}

TEST_CASE("CronJob timeZone: the schedule read in the zone, the annotation in its offset") {
  CronWorld w;
  // 05:30 in Kolkata (UTC+05:30) is 00:00 UTC: the manual clock starts at 2024-01-01T00:00:00Z.
  w.store.create(w.cronjobs, "default", cronjob("tz", "45 5 * * *", R"(,"timeZone":"Asia/Kolkata")"));
  w.run_for(14min, 30s);
  CHECK(w.job_names().empty());
  w.run_for(2min, 5s);
  REQUIRE(w.job_names() == std::set<std::string>{minute_name("tz", 15)});
  const json::object job = w.get("batch", "jobs", minute_name("tz", 15));
  CHECK(job.at("metadata").at("annotations").at("batch.kubernetes.io/cronjob-scheduled-timestamp") ==
        "2024-01-01T05:45:00+05:30");
  CHECK(w.cj("tz").at("status").at("lastScheduleTime") == "2024-01-01T00:15:00Z");
}

TEST_CASE("CronJob: deleting it deletes its Jobs and their pods; a schedule that never comes starts nothing") {
  CronWorld w;
  w.store.create(w.cronjobs, "default", cronjob("d", "* * * * *", "", "10m"));
  w.store.create(w.cronjobs, "default", cronjob("never", "0 0 30 2 *"));
  w.run_for(2min + 5s);
  CHECK(w.job_names().size() == 2);
  CHECK(!w.pod_names().empty());
  w.store.remove(w.cronjobs, "default", "d");  // batch/v1 CronJob: DeleteDependents
  w.advance(1s);
  CHECK(w.job_names().empty());
  CHECK(w.pod_names().empty());
  CHECK(w.cj("never").at("status").as_object().empty());
}

TEST_CASE("CronJob: a refused Job create is an event, the time is not taken, and it is tried again") {
  // cronjob_controllerv2.go syncCronJob: FailedCreate "Error creating job: %v", the status written
  // without the Job, the key requeued (rate-limited). Here an admission plugin refuses Jobs (as
  // quota would: the bare store of these tests runs no quota admission) until told otherwise.
  CronWorld w;
  bool refuse = true;
  w.store.add_admission([&](AdmissionRequest& r) {
    if (refuse && r.operation == AdmissionRequest::Operation::Create && r.type->resource == "jobs")
      throw StatusError(403, "Forbidden", "exceeded quota: nojobs, requested: count/jobs.batch=1");
  });
  w.store.create(w.cronjobs, "default", cronjob("q", "* * * * *"));
  w.run_for(1min + 5s, 1s);
  CHECK(w.job_names().empty());
  CHECK(w.events("FailedCreate") >= 1);
  CHECK(!w.cj("q").at("status").as_object().contains("lastScheduleTime"));
  CHECK(w.active("q") == 0);
  // Allowed again: the next try (within the retry delay, before the next minute) makes it.
  refuse = false;
  w.run_for(15s, 1s);
  CHECK(w.job_names() == std::set<std::string>{minute_name("q", 1)});
  CHECK(w.active("q") == 1);
}
