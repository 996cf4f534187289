// isPodUpdated (kube-scheduler's scheduling_queue.go): which updates of an unschedulable pod move it
// back to the active queue. The scheduler compares the pods in place (embedded/scheduler.cpp
// pod_updated); these cases pin what it must see and ignore.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <functional>
#include <string>

#include "embedded/scheduler.hpp"
#include "embedded/store.hpp"
#include "gpupool/topology.hpp"

using namespace gpupool::embedded;
namespace json = boost::json;

namespace {

struct Cluster {
  Clock clock = Clock::manual();
  Store store{clock};
  const ResourceType& pods = store.type("", "pods");
  Scheduler scheduler{store, clock, SchedulerOptions{{"default-scheduler"}}};
  Cluster() {
    store.create(store.type("", "namespaces"), "", json::parse(R"({"metadata":{"name":"default"}})").as_object());
    for (const auto& n : gpupool::Topology::builtin("seed").nodes)
      store.create(store.type("", "nodes"), "", n.to_node_object(clock.now()));
    // 3 GPU workers with 2 GPUs each: "waiting" (9 GPUs) never fits.
    store.create(pods, "default",
                 json::parse(R"({"metadata":{"name":"waiting","labels":{"app":"a"}},
      "spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":"9"}}}]}})")
                     .as_object());
  }
  // Applies `change` to the waiting pod (as `subresource`) and says whether the scheduler tried it again.
  bool retried_after(const std::function<void(json::object&)>& change, std::string_view subresource = {}) {
    REQUIRE(scheduler.unschedulable() == std::vector<std::string>{"default/waiting"});
    const auto before = scheduler.attempts();
    store.mutate(pods, "default", "waiting", change, {}, subresource);
    scheduler.sync();
    return scheduler.attempts() > before;
  }
};

}  // namespace

TEST_CASE("an unschedulable pod is retried when it changes outside status and bookkeeping metadata") {
  Cluster c;
  SUBCASE("a status-only change: not retried") {
    CHECK_FALSE(c.retried_after([](json::object& p) { p["status"].as_object()["message"] = "x"; }, "status"));
  }
  SUBCASE("managedFields only: not retried") {
    CHECK_FALSE(c.retried_after([](json::object& p) {
      p["metadata"].as_object()["managedFields"] = json::array{json::object{{"manager", "m"}}};
    }));
  }
  SUBCASE("a label: retried") {
    CHECK(c.retried_after([](json::object& p) { p["metadata"].as_object()["labels"].as_object()["app"] = "b"; }));
  }
  SUBCASE("an annotation added: retried") {
    CHECK(c.retried_after([](json::object& p) {
      p["metadata"].as_object()["annotations"] = json::object{{"k", "v"}};
    }));
  }
  SUBCASE("a toleration added to the spec: retried") {
    CHECK(c.retried_after([](json::object& p) {
      p["spec"].as_object()["tolerations"] = json::array{json::object{{"key", "k"}, {"operator", "Exists"}}};
    }));
  }
}
