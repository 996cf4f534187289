// The apps/v1 StatefulSet controller (controller_statefulset.cpp) with the simulated kubelet on a
// manual clock: OrderedReady's one pod at a time, identities and claims, scale-down from the
// highest ordinal, the rolling update's order, Parallel. (Against kube-controller-manager: the
// fidelity scenario `statefulset`.)
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "controller_world.hpp"
#include "embedded/controllers.hpp"
#include "embedded/store.hpp"

using namespace gpupool::embedded;
using namespace gpupool::embedded::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

json::object statefulset(const std::string& name, int replicas, const std::string& policy = "OrderedReady") {
  return obj(fmt::format(R"({{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{{"name":"{}"}},
    "spec":{{"replicas":{},"serviceName":"{}","podManagementPolicy":"{}",
      "selector":{{"matchLabels":{{"app":"{}"}}}},
      "template":{{"metadata":{{"labels":{{"app":"{}"}}}},"spec":{{"containers":[{{"name":"c","image":"busybox"}}]}}}},
      "volumeClaimTemplates":[{{"metadata":{{"name":"data"}},"spec":{{"accessModes":["ReadWriteOnce"],
        "resources":{{"requests":{{"storage":"1Gi"}}}}}}}}]}}}})",
                         name, replicas, name, policy, name, name));
}

bool ready(const json::object& p) {
  if (!p.contains("status") || !p.at("status").as_object().contains("conditions")) return false;
  for (const auto& c : p.at("status").at("conditions").as_array())
    if (c.at("type") == "Ready" && c.at("status") == "True") return true;
  return false;
}

struct StsWorld : World {
  const ResourceType& sets = store.type("apps", "statefulsets");
  // name -> (ready, terminating)
  std::map<std::string, std::pair<bool, bool>> pods_state() const {
    std::map<std::string, std::pair<bool, bool>> out;
    for (const auto& p : list("", "pods"))
      out[at(p, "metadata.name")] = {ready(p), p.at("metadata").as_object().contains("deletionTimestamp")};
    return out;
  }
};

}  // namespace

TEST_CASE("StatefulSet OrderedReady: one pod at a time, each once the one before is ready; claims; identity") {
  StsWorld w;
  w.store.create(w.sets, "default", statefulset("web", 3));
  CHECK(w.pod_names() == std::set<std::string>{"web-0"});
  bool ordered = true;
  for (int i = 0; i < 60 && w.pod_names().size() < 3; ++i) {
    const auto state = w.pods_state();
    for (int k = 1; k < 3; ++k)
      if (state.count(fmt::format("web-{}", k)) && !state.at(fmt::format("web-{}", k - 1)).first) ordered = false;
    w.advance(1s);
  }
  for (int i = 0; i < 10; ++i) w.advance(1s);
  CHECK(ordered);
  CHECK(w.pod_names() == std::set<std::string>{"web-0", "web-1", "web-2"});
  std::set<std::string> claims;
  for (const auto& c : w.list("", "persistentvolumeclaims")) claims.insert(at(c, "metadata.name"));
  CHECK(claims == std::set<std::string>{"data-web-0", "data-web-1", "data-web-2"});
  const json::object pod = w.get("", "pods", "web-1");
  CHECK(at(pod, "spec.hostname") == "web-1");
  CHECK(at(pod, "spec.subdomain") == "web");
  const json::object& labels = pod.at("metadata").at("labels").as_object();
  CHECK(labels.at("statefulset.kubernetes.io/pod-name") == "web-1");
  CHECK(labels.at("apps.kubernetes.io/pod-index") == "1");
  const json::object st = w.get("apps", "statefulsets", "web").at("status").as_object();
  CHECK(st.at("replicas") == 3);
  CHECK(st.at("readyReplicas") == 3);
  CHECK(st.at("currentRevision") == st.at("updateRevision"));

  // Scale down: the highest ordinal first, the next only once it is gone.
  w.store.mutate(w.sets, "default", "web", [](json::object& s) { s["spec"].as_object()["replicas"] = 1; });
  bool reverse = true;
  for (int i = 0; i < 60 && w.pod_names().size() > 1; ++i) {
    const auto state = w.pods_state();
    if (state.count("web-2") && state.count("web-1") && state.at("web-1").second) reverse = false;
    w.advance(1s);
  }
  CHECK(reverse);
  CHECK(w.pod_names() == std::set<std::string>{"web-0"});
  CHECK(w.list("", "persistentvolumeclaims").size() == 3);  // Retain: the claims stay
}

TEST_CASE("StatefulSet rolling update: highest ordinal first, each replaced once the one above is ready") {
  StsWorld w;
  w.store.create(w.sets, "default", statefulset("web", 3));
  for (int i = 0; i < 40; ++i) w.advance(1s);
  REQUIRE(w.pod_names().size() == 3);
  w.store.mutate(w.sets, "default", "web", [](json::object& s) {
    s["spec"].as_object()["template"].as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["image"] =
        "busybox:2";
  });
  std::vector<std::string> replaced;  // in the order the new image appeared
  for (int i = 0; i < 120 && replaced.size() < 3; ++i) {
    for (const auto& p : w.list("", "pods"))
      if (p.at("spec").at("containers").at(0).at("image") == "busybox:2" &&
          std::find(replaced.begin(), replaced.end(), at(p, "metadata.name")) == replaced.end())
        replaced.push_back(at(p, "metadata.name"));
    w.advance(1s);
  }
  CHECK(replaced == std::vector<std::string>{"web-2", "web-1", "web-0"});
  for (int i = 0; i < 10; ++i) w.advance(1s);
  const json::object st = w.get("apps", "statefulsets", "web").at("status").as_object();
  CHECK(st.at("updatedReplicas") == 3);
  CHECK(st.at("currentRevision") == st.at("updateRevision"));
  CHECK(w.list("apps", "controllerrevisions").size() == 2);
}

TEST_CASE("StatefulSet Parallel: every replica at once, scaled down at once") {
  StsWorld w;
  w.store.create(w.sets, "default", statefulset("par", 4, "Parallel"));
  CHECK(w.pod_names().size() == 4);
  w.advance(1s);
  w.store.mutate(w.sets, "default", "par", [](json::object& s) { s["spec"].as_object()["replicas"] = 1; });
  for (int i = 0; i < 5; ++i) w.advance(1s);
  CHECK(w.pod_names() == std::set<std::string>{"par-0"});
}

TEST_CASE("StatefulSet persistentVolumeClaimRetentionPolicy: Delete takes the claims with the set, or on scale-down") {
  for (const bool when_scaled : {false, true}) {
    CAPTURE(when_scaled);
    StsWorld w;
    json::object s = statefulset("web", 2, "Parallel");
    s["spec"].as_object()["persistentVolumeClaimRetentionPolicy"] = json::object{
        {"whenDeleted", when_scaled ? "Retain" : "Delete"}, {"whenScaled", when_scaled ? "Delete" : "Retain"}};
    w.store.create(w.sets, "default", s);
    for (int i = 0; i < 10; ++i) w.advance(1s);
    auto claims = [&] {
      std::set<std::string> out;
      for (const auto& c : w.list("", "persistentvolumeclaims"))
        if (!c.at("metadata").as_object().contains("deletionTimestamp")) out.insert(at(c, "metadata.name"));
      return out;
    };
    REQUIRE(claims() == std::set<std::string>{"data-web-0", "data-web-1"});
    if (when_scaled) {
      w.store.mutate(w.sets, "default", "web", [](json::object& o) { o["spec"].as_object()["replicas"] = 1; });
      for (int i = 0; i < 10; ++i) w.advance(1s);
      CHECK(w.pod_names() == std::set<std::string>{"web-0"});
      CHECK(claims() == std::set<std::string>{"data-web-0"});
    } else {
      const json::object c0 = w.get("", "persistentvolumeclaims", "data-web-0");
      CHECK(c0.at("metadata").at("ownerReferences").at(0).at("kind") == "StatefulSet");
      w.store.remove(w.sets, "default", "web");
      for (int i = 0; i < 10; ++i) w.advance(1s);
      CHECK(claims().empty());
    }
  }
}

TEST_CASE("StatefulSet with 2^31 - 1 replicas: no slot per replica, one pod at a time") {
  // (A vector of 2^31 pod slots, as Go's replicas slice, would be 16 GiB here.)
  StsWorld w;
  w.store.create(w.sets, "default", statefulset("big", 2147483647));
  CHECK(w.pod_names() == std::set<std::string>{"big-0"});
  CHECK(w.get("apps", "statefulsets", "big").at("status").at("replicas") == 1);
}
