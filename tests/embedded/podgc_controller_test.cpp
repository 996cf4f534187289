// The pod garbage collector (controller_podgc.cpp, pkg/controller/podgc/gc_controller.go) on a
// manual clock: a deleted node's pods are marked Failed with DisruptionTarget (DeletionByPodGC)
// and deleted once the node has been missing 40 s (at the first of its 20 s runs after that), not
// when the node comes back first; an unscheduled pod being deleted is marked Failed at its next
// run. (Against kube-controller-manager: the fidelity scenario `podgc`.)
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

json::object node(const std::string& name) {
  return obj(fmt::format(R"({{"apiVersion":"v1","kind":"Node","metadata":{{"name":"{}",
    "annotations":{{"gpupool.io/simulate-kubelet":"stopped"}}}}}})",
                         name));
}

json::object pod(const std::string& name, const std::string& node_name, bool held) {
  return obj(fmt::format(
      R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}"{}}},
    "spec":{{{}"containers":[{{"name":"c","image":"busybox"}}]}}}})",
      name, held ? R"(,"finalizers":["example.com/hold"])" : "",
      node_name.empty() ? R"("nodeSelector":{"x":"nowhere"},)" : fmt::format(R"("nodeName":"{}",)", node_name)));
}

struct GcWorld : World {
  const ResourceType& nodes = store.type("", "nodes");
  // Time passes without the test world's binding of every pod (these stay where they are put).
  void tick(Clock::duration d = 1s) {
    clock.advance(d);
    controllers.sync();
  }
  bool exists(const std::string& name) const { return store.find(pods, "default", name) != nullptr; }
};

}  // namespace

TEST_CASE("pod GC: a deleted node's pods are marked Failed and deleted after the 40 s quarantine") {
  GcWorld w;
  w.store.create(w.nodes, "", node("gc-node"));
  w.store.create(w.pods, "default", pod("held", "gc-node", true));
  w.store.create(w.pods, "default", pod("free", "gc-node", false));
  w.tick(100s);  // the node has been there a while: nothing happens
  CHECK(w.exists("free"));
  w.store.remove(w.nodes, "", "gc-node");
  int waited = 0;
  for (; waited < 120 && w.exists("free"); ++waited) w.tick();
  // The first run at or after the deletion (every 20 s) queues the node for 40 s.
  CHECK(waited >= 40);
  CHECK(waited <= 61);
  const json::object held = w.get("", "pods", "held");
  CHECK(at(held, "status.phase") == "Failed");
  CHECK(at(held, "metadata.deletionGracePeriodSeconds") == "0");
  const json::array& conds = held.at("status").at("conditions").as_array();
  REQUIRE(conds.size() == 1);
  CHECK(conds[0].at("type") == "DisruptionTarget");
  CHECK(conds[0].at("reason") == "DeletionByPodGC");
  CHECK(conds[0].at("message") == "PodGC: node no longer exists");
  CHECK(conds[0].at("status") == "True");
  CHECK(conds[0].as_object().contains("lastProbeTime"));
  // Nothing more to do for it: later runs write nothing.
  const std::string rv = at(held, "metadata.resourceVersion");
  w.tick(100s);
  CHECK(at(w.get("", "pods", "held"), "metadata.resourceVersion") == rv);
}

TEST_CASE("pod GC: a node back within the quarantine keeps its pods; a pod bound to no node at all goes") {
  GcWorld w;
  w.store.create(w.nodes, "", node("flaky"));
  w.store.create(w.pods, "default", pod("stays", "flaky", false));
  w.store.remove(w.nodes, "", "flaky");
  w.tick(10s);
  w.store.create(w.nodes, "", node("flaky"));
  w.tick(100s);
  CHECK(w.exists("stays"));
  CHECK(at(w.get("", "pods", "stays"), "status.phase") != "Failed");
  // Created bound to a node that never existed: an orphan as well.
  w.store.create(w.pods, "default", pod("lost", "never-registered", false));
  w.tick(30s);
  CHECK(w.exists("lost"));
  w.tick(31s);
  CHECK_FALSE(w.exists("lost"));
}

TEST_CASE("pod GC: an unscheduled pod being deleted is marked Failed at the next run") {
  GcWorld w;
  w.store.create(w.pods, "default", pod("pending", "", true));
  w.store.remove(w.pods, "default", "pending");
  int waited = 0;
  for (; waited < 60 && at(w.get("", "pods", "pending"), "status.phase") != "Failed"; ++waited) w.tick();
  CHECK(waited <= 20);
  const json::object p = w.get("", "pods", "pending");
  CHECK(at(p, "status.phase") == "Failed");
  CHECK_FALSE(p.at("status").as_object().contains("conditions"));
  // Its finalizer removed: gone.
  w.store.mutate(w.pods, "default", "pending", [](json::object& o) { o["metadata"].as_object().erase("finalizers"); });
  CHECK_FALSE(w.exists("pending"));
}

namespace {

// Only the controllers, whose controller-manager runs with --terminated-pod-gc-threshold=N; its
// pods are never scheduled (no scheduler) and end when the test says.
struct ThresholdWorld {
  Clock clock = Clock::manual();
  Store store{clock};
  const ResourceType& pods = store.type("", "pods");
  Controllers controllers;
  explicit ThresholdWorld(std::int64_t threshold) : controllers(store, clock, true, threshold) {
    store.create(store.type("", "namespaces"), "", obj(R"({"metadata":{"name":"default"}})"));
  }
  void start(const std::string& name) { store.create(pods, "default", pod(name, "", false)); }
  void finish(const std::string& name, const char* phase, const char* reason = nullptr) {
    store.mutate(
        pods, "default", name,
        [&](json::object& p) {
          json::object& st = p["status"].as_object();
          st["phase"] = phase;
          if (reason) st["reason"] = reason;
        },
        {}, "status");
  }
  void tick(Clock::duration d) {
    clock.advance(d);
    controllers.sync();
  }
  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& p : store.list(pods, "default").items) out.insert(at(*p, "metadata.name"));
    return out;
  }
};

}  // namespace

TEST_CASE("pod GC: past the terminated-pod threshold the evicted, then the oldest terminated pods go") {
  ThresholdWorld w(3);
  // Created a second apart: b-old is the oldest by creationTimestamp though not by name.
  for (const char* name : {"b-old", "a-mid", "c-new", "d-newer", "running", "evicted"}) {
    w.start(name);
    w.tick(1s);
  }
  w.finish("b-old", "Succeeded");
  w.finish("a-mid", "Failed");
  w.finish("c-new", "Succeeded");
  w.tick(30s);  // three terminated: at the threshold, none goes
  CHECK(w.names().size() == 6);
  w.finish("d-newer", "Succeeded");
  w.finish("evicted", "Failed", "Evicted");
  // Five terminated, two over: at the next run (every 20 s) the evicted pod and the oldest go.
  w.tick(1s);
  int waited = 1;
  for (; waited < 60 && w.names().size() == 6; ++waited) w.tick(1s);
  CHECK(waited <= 21);
  CHECK(w.names() == std::set<std::string>{"a-mid", "c-new", "d-newer", "running"});
  // A pod that is running is never counted; one more terminated pod takes the next oldest.
  w.finish("running", "Succeeded");
  w.tick(21s);
  CHECK(w.names() == std::set<std::string>{"c-new", "d-newer", "running"});
}

TEST_CASE("pod GC: a threshold of 0 keeps every terminated pod") {
  ThresholdWorld w(0);
  for (int i = 0; i < 3; ++i) {
    w.start(fmt::format("done-{}", i));
    w.finish(fmt::format("done-{}", i), "Succeeded");
  }
  w.tick(60s);
  CHECK(w.names().size() == 3);
}
