// pods/eviction and the disruption controller's disruptedPods (the oracle's answers are in the
// fidelity scenario `eviction`); here what needs the cluster's clock: a disruption an eviction took
// is counted until the pod goes, for at most DeletionTimeout (2 minutes).
#include <doctest/doctest.h>

#include <chrono>

#include "api_fixture.hpp"
#include "embedded/api.hpp"
#include "embedded/disruption.hpp"
#include "embedded/store.hpp"

using namespace gpupool;
using namespace gpupool::embedded;
namespace json = boost::json;

namespace {

struct Fixture {
  Clock clock = Clock::manual();
  Store store{clock};
  DisruptionController disruption{store, clock};
  Api api{store, {}};
  const ResourceType& pods = store.type("", "pods");
  const ResourceType& pdbs = store.type("policy", "poddisruptionbudgets");
  Fixture() {
    store.create(store.type("", "namespaces"), "", json::object{{"metadata", json::object{{"name", "e"}}}});
    for (const char* name : {"p1", "p2", "p3"}) {
      store.create(pods, "e", json::parse(fmt_pod(name)).as_object());
      store.mutate(
          pods, "e", name,
          [](json::object& p) {
            // (qosClass kept: the status strategy refuses a change of it)
            auto& st = p["status"].as_object();
            st["phase"] = "Running";
            st["conditions"] = json::array{json::object{{"type", "Ready"}, {"status", "True"}}};
          },
          {}, "status");
    }
    store.create(
        pdbs, "e",
        json::parse(R"({"metadata":{"name":"b"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"e"}}}})")
            .as_object());
  }
  static std::string fmt_pod(const char* name) {
    return std::string(R"({"metadata":{"name":")") + name +
           R"(","labels":{"app":"e"}},"spec":{"containers":[{"name":"main","image":"busybox"}]}})";
  }
  int evict(const std::string& pod) {
    return api
        .handle(testing::admin_request(
            "POST", "/api/v1/namespaces/e/pods/" + pod + "/eviction",
            R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":")" + pod + R"("}})"))
        .status;
  }
  json::object status() { return store.get(pdbs, "e", "b").at("status").as_object(); }
};

}  // namespace

TEST_CASE("eviction: a disruption is used up, the pod counted as disrupted until it goes or 2 minutes pass") {
  Fixture f;
  CHECK(f.status().at("disruptionsAllowed") == 2);
  // p1 is evicted: the disruption is taken before the pod is deleted (the map names it), then the
  // pod's deletion ends its entry (its deletionTimestamp or its absence).
  CHECK(f.evict("p1") == 201);
  CHECK(f.status().at("disruptionsAllowed") == 1);
  CHECK_FALSE(f.status().contains("disruptedPods"));
  // An eviction whose pod did not go (a deletion that never came): the map keeps the pod out of
  // the healthy count for 2 minutes of the cluster's clock, then the controller lets it count.
  f.store.mutate(
      f.pdbs, "e", "b",
      [&](json::object& b) {
        b["status"].as_object()["disruptedPods"] = json::object{{"p2", to_rfc3339(f.clock.now())}};
      },
      {}, "status");
  f.store.mutate(f.pods, "e", "p3",
                 [](json::object& p) { p["metadata"].as_object()["labels"].as_object()["x"] = "1"; });
  CHECK(f.status().at("currentHealthy") == 1);  // p3 alone: p2 is disrupted
  CHECK(f.status().at("disruptionsAllowed") == 0);
  CHECK(f.evict("p3") == 429);
  f.clock.advance(std::chrono::minutes(2) + std::chrono::seconds(1));
  f.store.mutate(f.pods, "e", "p3",
                 [](json::object& p) { p["metadata"].as_object()["labels"].as_object()["x"] = "2"; });
  CHECK(f.status().at("currentHealthy") == 2);
  CHECK_FALSE(f.status().contains("disruptedPods"));
  CHECK(f.evict("p3") == 201);
  CHECK(f.store.list(f.pods, "e").items.size() == 1);
}
