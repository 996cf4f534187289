// The apps/v1 DaemonSet controller (controller_daemonset.cpp) on the seed topology (Arena's
// walkthrough: three masters tainted node-role.kubernetes.io/master:NoSchedule, three GPU
// workers) and a manual clock: where daemon pods go, how a NoSchedule and a NoExecute taint
// change that, the rolling update's pace, the history. (The API's rules and the controller against
// kube-controller-manager: the fidelity scenarios `daemonsetapi` and `daemonset`.)
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <map>
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

json::object daemonset(const std::string& name, const std::string& image, const std::string& tolerations = "") {
  return obj(fmt::format(R"({{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{{"name":"{}"}},
    "spec":{{"selector":{{"matchLabels":{{"app":"{}"}}}},
      "template":{{"metadata":{{"labels":{{"app":"{}"}}}},
        "spec":{{{}"containers":[{{"name":"c","image":"{}"}}]}}}}}}}})",
                         name, name, name, tolerations.empty() ? "" : "\"tolerations\":" + tolerations + ",", image));
}

const std::string kMaster = R"([{"key":"node-role.kubernetes.io/master","operator":"Exists"}])";

struct DsWorld : World {
  const ResourceType& daemonsets = store.type("apps", "daemonsets");
  // The scheduler's part for daemon pods: each to the node its affinity names.
  void bind_daemon_pods() {
    for (const auto& p : list("", "pods")) {
      if (!at(p, "spec.nodeName").empty()) continue;
      const json::value& terms = p.at("spec")
                                     .at("affinity")
                                     .at("nodeAffinity")
                                     .at("requiredDuringSchedulingIgnoredDuringExecution")
                                     .at("nodeSelectorTerms");
      const std::string node(terms.at(0).at("matchFields").at(0).at("values").at(0).as_string());
      store.mutate(
          pods, "default", at(p, "metadata.name"), [&](json::object& o) { o["spec"].as_object()["nodeName"] = node; },
          {}, "binding");
    }
  }
  void step(Clock::duration d = 1s) {
    bind_daemon_pods();
    clock.advance(d);
    kubelet.sync();
    bind_daemon_pods();
    kubelet.sync();
    controllers.sync();
  }
  // node -> images of the daemon pods of `app` on it (not being deleted).
  std::map<std::string, std::multiset<std::string>> placement(const std::string& app) const {
    std::map<std::string, std::multiset<std::string>> out;
    for (const auto& p : list("", "pods")) {
      if (at(p, "metadata.labels.app") != app || p.at("metadata").as_object().contains("deletionTimestamp")) continue;
      const json::value& terms = p.at("spec")
                                     .at("affinity")
                                     .at("nodeAffinity")
                                     .at("requiredDuringSchedulingIgnoredDuringExecution")
                                     .at("nodeSelectorTerms");
      out[std::string(terms.at(0).at("matchFields").at(0).at("values").at(0).as_string())].insert(
          std::string(p.at("spec").at("containers").at(0).at("image").as_string()));
    }
    return out;
  }
  std::int64_t status(const std::string& ds, const char* key) const {
    const json::object st = get("apps", "daemonsets", ds).at("status").as_object();
    return st.contains(key) ? st.at(key).as_int64() : 0;
  }
  void taint(const std::string& node, const std::string& key, const std::string& effect) {
    store.mutate(store.type("", "nodes"), "", node, [&](json::object& n) {
      auto& spec = n["spec"].as_object();
      if (!spec.contains("taints")) spec["taints"] = json::array{};
      spec["taints"].as_array().push_back(json::object{{"key", key}, {"value", "x"}, {"effect", effect}});
    });
  }
};

const std::string kWorker1 = "cn-beijing.192.168.3.228", kWorker2 = "cn-beijing.192.168.3.229";

}  // namespace

TEST_CASE("DaemonSet: a pod on each node whose taints it tolerates, pinned there, with the daemon tolerations") {
  DsWorld w;
  w.store.create(w.daemonsets, "default", daemonset("agent", "busybox"));
  w.store.create(w.daemonsets, "default", daemonset("everywhere", "busybox", kMaster));
  w.step();
  CHECK(w.placement("agent").size() == 3);  // the three workers: the masters' NoSchedule taint is not tolerated
  for (const char* master : {"cn-beijing.192.168.3.225", "cn-beijing.192.168.3.226", "cn-beijing.192.168.3.227"})
    CHECK(w.placement("agent").count(master) == 0);
  CHECK(w.placement("everywhere").size() == 6);
  const json::object pod = w.list("", "pods").front();
  CHECK(pod.at("spec").at("tolerations").as_array().size() >= 6);  // not-ready, unreachable, the pressures...
  CHECK(!at(pod, "metadata.labels.controller-revision-hash").empty());
  // Run by the kubelet: all ready and available, one revision.
  for (int i = 0; i < 5; ++i) w.step();
  CHECK(w.status("agent", "desiredNumberScheduled") == 3);
  CHECK(w.status("agent", "currentNumberScheduled") == 3);
  CHECK(w.status("agent", "numberReady") == 3);
  CHECK(w.status("agent", "numberAvailable") == 3);
  CHECK(w.status("agent", "updatedNumberScheduled") == 3);
  CHECK(w.status("agent", "numberUnavailable") == 0);
  CHECK(w.status("everywhere", "numberReady") == 6);
  CHECK(w.list("apps", "controllerrevisions").size() == 2);  // one per DaemonSet
}

TEST_CASE("DaemonSet and taints: NoSchedule keeps a running pod (misscheduled), NoExecute takes it away") {
  DsWorld w;
  w.store.create(w.daemonsets, "default", daemonset("agent", "busybox"));
  for (int i = 0; i < 5; ++i) w.step();
  REQUIRE(w.placement("agent").size() == 3);
  // Arena's walkthrough: gpu_node=invalid:NoSchedule on a worker.
  w.taint(kWorker1, "gpu_node", "NoSchedule");
  w.step();
  CHECK(w.placement("agent").count(kWorker1) == 1);  // NodeShouldRunDaemonPod: shouldContinueRunning
  CHECK(w.status("agent", "desiredNumberScheduled") == 2);
  CHECK(w.status("agent", "numberMisscheduled") == 1);
  w.taint(kWorker2, "evict", "NoExecute");
  for (int i = 0; i < 3; ++i) w.step();
  CHECK(w.placement("agent").count(kWorker2) == 0);
  CHECK(w.status("agent", "desiredNumberScheduled") == 1);
  // A NoExecute taint the template tolerates: the pod comes back.
  w.store.mutate(w.daemonsets, "default", "agent", [](json::object& d) {
    d["spec"].as_object()["template"].as_object()["spec"].as_object()["tolerations"] =
        json::array{json::object{{"key", "evict"}, {"operator", "Exists"}}};
  });
  for (int i = 0; i < 10; ++i) w.step();
  CHECK(w.placement("agent").count(kWorker2) == 1);
}

TEST_CASE("DaemonSet rolling update: never more than maxUnavailable nodes without an available pod") {
  DsWorld w;
  w.store.create(w.daemonsets, "default", daemonset("agent", "busybox", kMaster));
  for (int i = 0; i < 5; ++i) w.step();
  REQUIRE(w.status("agent", "numberAvailable") == 6);
  w.store.mutate(w.daemonsets, "default", "agent", [](json::object& d) {
    d["spec"].as_object()["template"].as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["image"] =
        "busybox:2";
  });
  int max_down = 0, steps = 0;
  for (; steps < 200; ++steps) {
    int ready = 0;
    for (const auto& p : w.list("", "pods")) {
      bool is_ready = false;
      if (p.contains("status") && p.at("status").as_object().contains("conditions"))
        for (const auto& c : p.at("status").at("conditions").as_array())
          if (c.at("type") == "Ready" && c.at("status") == "True") is_ready = true;
      if (is_ready && !p.at("metadata").as_object().contains("deletionTimestamp")) ++ready;
    }
    max_down = std::max(max_down, 6 - ready);
    bool done = true;
    for (const auto& [node, images] : w.placement("agent"))
      done = done && images == std::multiset<std::string>{"busybox:2"};
    if (done && w.placement("agent").size() == 6 && w.status("agent", "numberAvailable") == 6) break;
    w.step();
  }
  CHECK(steps < 200);
  CHECK(max_down == 1);  // maxUnavailable 1 (the default)
  CHECK(w.status("agent", "updatedNumberScheduled") == 6);
  std::set<std::int64_t> revisions;
  for (const auto& r : w.list("apps", "controllerrevisions")) revisions.insert(r.at("revision").as_int64());
  CHECK(revisions == std::set<std::int64_t>{1, 2});
}

TEST_CASE("DaemonSet rolling update with maxSurge: the new pod first, the old one gone once the new is available") {
  DsWorld w;
  json::object ds = daemonset("agent", "busybox", kMaster);
  ds["spec"].as_object()["updateStrategy"] =
      obj(R"({"type":"RollingUpdate","rollingUpdate":{"maxSurge":1,"maxUnavailable":0}})");
  w.store.create(w.daemonsets, "default", ds);
  for (int i = 0; i < 5; ++i) w.step();
  REQUIRE(w.status("agent", "numberAvailable") == 6);
  w.store.mutate(w.daemonsets, "default", "agent", [](json::object& d) {
    d["spec"].as_object()["template"].as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["image"] =
        "busybox:2";
  });
  std::size_t most_on_a_node = 0;
  std::int64_t least_available = 6;
  int steps = 0;
  for (; steps < 200; ++steps) {
    bool done = w.placement("agent").size() == 6;
    for (const auto& [node, images] : w.placement("agent")) {
      most_on_a_node = std::max(most_on_a_node, images.size());
      done = done && images == std::multiset<std::string>{"busybox:2"};
    }
    least_available = std::min(least_available, w.status("agent", "numberAvailable"));
    if (done && w.status("agent", "numberAvailable") == 6) break;
    w.step();
  }
  CHECK(steps < 200);
  CHECK(most_on_a_node == 2);   // surging: old and new side by side on a node
  CHECK(least_available >= 5);  // (the status counts the oldest pod of a node: at most one node in between)
}
