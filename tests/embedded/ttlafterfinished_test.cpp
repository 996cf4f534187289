// The TTL-after-finished controller (controller_ttlafterfinished.cpp,
// pkg/controller/ttlafterfinished/ttlafterfinished_controller.go) on a manual clock: a finished
// Job with spec.ttlSecondsAfterFinished is deleted once that many seconds have passed since its
// Complete or Failed condition, not a second earlier; a Job that has not finished, or has no TTL,
// stays; a TTL raised before it expires is the one that counts. (Against kube-controller-manager:
// the fidelity scenario `ttlafterfinished`.)
#include <doctest/doctest.h>

#include <boost/json.hpp>
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

// A Job with no pods to run (completions 0: Complete at its first sync), or one that runs for an
// hour (`extra` may give it a deadline).
json::object ttl_job(const std::string& name, const std::string& extra, bool runs = false) {
  return obj(fmt::format(
      R"({{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"{}"}},"spec":{{{}{}
      "template":{{"metadata":{{"annotations":{{"gpupool.io/simulate-duration":"1h"}}}},
      "spec":{{"restartPolicy":"Never","containers":[{{"name":"c","image":"busybox"}}]}}}}}}}})",
      name, runs ? "" : R"("completions":0,)", extra));
}

struct TtlWorld : World {
  const ResourceType& jobs = store.type("batch", "jobs");
  bool exists(const std::string& name) const { return store.find(jobs, "default", name) != nullptr; }
};

}  // namespace

TEST_CASE("ttlSecondsAfterFinished: a Complete Job is deleted at its TTL, not a second before") {
  TtlWorld w;
  w.store.create(w.jobs, "default", ttl_job("done", R"("ttlSecondsAfterFinished":100,)"));
  w.store.create(w.jobs, "default", ttl_job("kept", ""));  // no TTL: never deleted
  const json::object done = w.get("batch", "jobs", "done");
  REQUIRE(done.at("status").at("conditions").as_array().size() == 2);  // SuccessCriteriaMet, Complete
  w.advance(99s);
  CHECK(w.exists("done"));
  w.advance(1s);
  CHECK_FALSE(w.exists("done"));
  w.advance(1000s);
  CHECK(w.exists("kept"));
}

TEST_CASE("ttlSecondsAfterFinished: 0 deletes a finished Job at once; its pods go with it") {
  TtlWorld w;
  w.store.create(w.jobs, "default", ttl_job("zero", R"("ttlSecondsAfterFinished":0,)"));
  CHECK_FALSE(w.exists("zero"));
  // A failed Job (activeDeadlineSeconds) too, with its pods (Foreground).
  w.store.create(w.jobs, "default",
                 ttl_job("late", R"("activeDeadlineSeconds":5,"ttlSecondsAfterFinished":10,)", true));
  w.advance(1s);
  CHECK(w.pod_names().size() == 1);
  for (int i = 0; i < 5; ++i) w.advance(1s);
  const json::object late = w.get("batch", "jobs", "late");
  CHECK(late.at("status").at("conditions").as_array().back().at("type") == "Failed");
  const auto failed_at = time_from_rfc3339(
      std::string(late.at("status").at("conditions").as_array().back().at("lastTransitionTime").as_string()));
  REQUIRE(failed_at);
  w.advance(*failed_at + 9s - w.clock.now());
  CHECK(w.exists("late"));
  w.advance(1s);
  CHECK_FALSE(w.exists("late"));
  CHECK(w.pod_names().empty());
}

TEST_CASE("ttlSecondsAfterFinished: a running Job stays; a TTL raised before it expires counts") {
  TtlWorld w;
  w.store.create(w.jobs, "default", ttl_job("running", R"("ttlSecondsAfterFinished":0,)", true));
  w.advance(100s);
  CHECK(w.exists("running"));
  w.store.create(w.jobs, "default", ttl_job("raised", R"("ttlSecondsAfterFinished":10,)"));
  w.advance(5s);
  w.store.mutate(w.jobs, "default", "raised",
                 [](json::object& j) { j["spec"].as_object()["ttlSecondsAfterFinished"] = 60; });
  w.advance(5s);  // the first timer fires and finds the new TTL
  CHECK(w.exists("raised"));
  w.advance(49s);
  CHECK(w.exists("raised"));
  w.advance(1s);
  CHECK_FALSE(w.exists("raised"));
}
