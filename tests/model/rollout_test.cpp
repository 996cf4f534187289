// gpupool/rollout.hpp: intstr.GetScaledValueFromIntOrPercent and deployment/util
// ResolveFenceposts, MaxSurge and MaxUnavailable, as kube-controller-manager v1.32 computes them.
#include <doctest/doctest.h>

#include "gpupool/rollout.hpp"

#include <boost/json.hpp>

#include <string>

using namespace gpupool;
namespace json = boost::json;

TEST_CASE("rollout_bounds: maxSurge rounded up, maxUnavailable down, the fenceposts") {
  struct Row {
    const char* spec;  // the Deployment's spec
    std::int64_t surge, unavailable;
  };
  const Row rows[] = {
      {R"({"replicas":4})", 1, 1},  // 25% of 4 both ways
      {R"({"replicas":3})", 1, 0},  // ceil(0.75), floor(0.75): a new pod before an old one goes
      {R"({"replicas":1})", 1, 0},
      {R"({})", 1, 0},              // replicas default to 1
      {R"({"replicas":0})", 0, 0},  // MaxUnavailable: none for 0 replicas (25% of 0 surge is 0)
      {R"({"replicas":10,"strategy":{"rollingUpdate":{"maxSurge":"50%","maxUnavailable":"15%"}}})", 5, 1},
      {R"({"replicas":5,"strategy":{"rollingUpdate":{"maxSurge":"50%","maxUnavailable":"50%"}}})", 3, 2},
      {R"({"replicas":3,"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":0}}})", 0, 1},  // both 0: 1
      {R"({"replicas":3,"strategy":{"rollingUpdate":{"maxSurge":"0%","maxUnavailable":"10%"}}})", 0, 1},
      {R"({"replicas":3,"strategy":{"rollingUpdate":{"maxSurge":2,"maxUnavailable":10}}})", 2, 3},  // at most 3
      {R"({"replicas":2,"strategy":{"type":"Recreate"}})", 0, 0},
      {R"({"replicas":2,"strategy":{"rollingUpdate":{"maxSurge":"999999999999%"}}})", 2147483647, 0},
  };
  for (const auto& r : rows) {
    CAPTURE(std::string(r.spec));
    json::object d{{"spec", json::parse(r.spec)}};
    const RolloutBounds b = rollout_bounds(d);
    CHECK(b.max_surge == r.surge);
    CHECK(b.max_unavailable == r.unavailable);
  }
  CHECK(rolling_update(json::object{{"spec", json::object{}}}));
  CHECK_FALSE(rolling_update(json::parse(R"({"spec":{"strategy":{"type":"Recreate"}}})").as_object()));
}

TEST_CASE("scaled_int_or_percent: integers as they are, percents of the total") {
  const json::value half = "50%", n = 7, junk = nullptr;
  CHECK(scaled_int_or_percent(&half, "", 3, true) == 2);
  CHECK(scaled_int_or_percent(&half, "", 3, false) == 1);
  CHECK(scaled_int_or_percent(&n, "", 3, true) == 7);
  CHECK(scaled_int_or_percent(nullptr, "25%", 10, true) == 3);
  CHECK(scaled_int_or_percent(&junk, "", 10, true) == 0);
}
