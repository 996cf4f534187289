// gpupool/job_backoff.hpp: the Job controller's pod failure back-off (backoff_utils.go).
#include <doctest/doctest.h>

#include "gpupool/job_backoff.hpp"
#include "gpupool/time.hpp"

#include <boost/json.hpp>

#include <string>
#include <vector>

using namespace gpupool;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

json::object finished(const char* phase, const char* at) {
  return json::parse(std::string(R"({"metadata":{"creationTimestamp":"2026-01-01T00:00:00Z"},"status":{"phase":")") +
                     phase + R"(","containerStatuses":[{"state":{"terminated":{"finishedAt":")" + at + R"("}}}]}})")
      .as_object();
}

std::chrono::system_clock::time_point at(const char* text) {
  return std::chrono::system_clock::time_point(parse_rfc3339(text));
}

}  // namespace

TEST_CASE(
    "job_failure_backoff: 10 s after the last failure, doubled per failure since the last success, at most 10 min") {
  const auto f1 = finished("Failed", "2026-01-01T00:01:00Z");
  const auto f2 = finished("Failed", "2026-01-01T00:02:00Z");
  const auto ok = finished("Succeeded", "2026-01-01T00:01:30Z");
  // One failure: 10 s from its finish.
  auto b = job_failure_backoff({&f1}, at("2026-01-01T00:01:04Z"));
  CHECK(b.failures == 1);
  CHECK(b.remaining == 6s);
  CHECK(job_failure_backoff({&f1}, at("2026-01-01T00:01:11Z")).remaining == 0s);
  // Two: 20 s from the later one.
  b = job_failure_backoff({&f1, &f2}, at("2026-01-01T00:02:05Z"));
  CHECK(b.failures == 2);
  CHECK(b.remaining == 15s);
  // A success in between: only the failure after it counts.
  b = job_failure_backoff({&f1, &ok, &f2}, at("2026-01-01T00:02:05Z"));
  CHECK(b.failures == 1);
  CHECK(b.remaining == 5s);
  // Many: capped at 10 minutes.
  std::vector<json::object> many(12, f2);
  std::vector<const json::object*> ptrs;
  for (const auto& p : many) ptrs.push_back(&p);
  CHECK(job_failure_backoff(ptrs, at("2026-01-01T00:02:00Z")).remaining == 10min);
  // None failed: no wait.
  CHECK(job_failure_backoff({&ok}, at("2026-01-01T00:02:00Z")).failures == 0);
  // The finish time falls back to Ready=False, then the deletion, then the creation.
  const auto ready = json::parse(R"({"status":{"phase":"Failed","conditions":[{"type":"Ready","status":"False",
      "lastTransitionTime":"2026-01-01T00:03:00Z"}]}})")
                         .as_object();
  CHECK(job_pod_finished_time(ready) == at("2026-01-01T00:03:00Z"));
  const auto deleting = json::parse(R"({"metadata":{"deletionTimestamp":"2026-01-01T00:04:30Z",
      "deletionGracePeriodSeconds":30},"status":{"phase":"Failed"}})")
                            .as_object();
  CHECK(job_pod_finished_time(deleting) == at("2026-01-01T00:04:00Z"));
  const auto bare =
      json::parse(R"({"metadata":{"creationTimestamp":"2026-01-01T00:05:00Z"},"status":{"phase":"Failed"}})")
          .as_object();
  CHECK(job_pod_finished_time(bare) == at("2026-01-01T00:05:00Z"));
}
