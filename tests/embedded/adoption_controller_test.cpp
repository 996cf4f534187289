// Adoption and release (ctrl::claim, pkg/controller/controller_ref_manager.go): the ReplicaSet,
// Deployment, StatefulSet, DaemonSet and Job controllers take the orphans their selector matches
// (an owner deleted with propagation Orphan and made again), release what no longer matches (a
// pod's labels edited), and leave alone what another controller owns, what is being deleted, and
// everything while they are being deleted themselves. (Against kube-controller-manager: the
// fidelity scenario `adoption`.)
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

std::string workload(const std::string& kind, const std::string& name, const std::string& extra_spec) {
  return fmt::format(R"({{"apiVersion":"apps/v1","kind":"{}","metadata":{{"name":"{}"}},
    "spec":{{{}"selector":{{"matchLabels":{{"app":"{}"}}}},
      "template":{{"metadata":{{"labels":{{"app":"{}"}}}},"spec":{{"containers":[{{"name":"c","image":"busybox"}}]}}}}}}}})",
                     kind, name, extra_spec, name, name);
}

json::object replicaset(const std::string& name, int replicas) {
  return obj(workload("ReplicaSet", name, fmt::format(R"("replicas":{},)", replicas)));
}

json::object bare_pod(const std::string& name, const std::string& app, const std::string& extra_metadata = "") {
  return obj(fmt::format(R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}",{}"labels":{{"app":"{}"}}}},
    "spec":{{"containers":[{{"name":"c","image":"busybox"}}]}}}})",
                         name, extra_metadata, app));
}

struct AdoptWorld : World {
  // name -> the uid of its controller ("" for none), for the objects of a type.
  std::map<std::string, std::string> controllers_of(const std::string& group, const std::string& resource) const {
    std::map<std::string, std::string> out;
    for (const auto& o : list(group, resource))
      out[at(o, "metadata.name")] = gpupool::embedded::util::controller_uid(o);
    return out;
  }
  std::map<std::string, std::string> pod_uids() const {
    std::map<std::string, std::string> out;
    for (const auto& p : list("", "pods")) out[at(p, "metadata.name")] = at(p, "metadata.uid");
    return out;
  }
  std::string uid(const std::string& group, const std::string& resource, const std::string& name) const {
    return at(get(group, resource, name), "metadata.uid");
  }
  // Every pod's controller is `uid` ("": none).
  void check_pods_controlled_by(const std::string& uid) const {
    // No structured binding: clang 14 refuses one captured by CHECK_MESSAGE's lambda.
    for (const auto& pod : controllers_of("", "pods")) CHECK_MESSAGE(pod.second == uid, pod.first);
  }
  // The one ControllerRevision's controller.
  std::string sole_revision_controller() const {
    const auto revisions = controllers_of("apps", "controllerrevisions");
    REQUIRE(revisions.size() == 1);
    return revisions.begin()->second;
  }
  void orphan(const std::string& group, const std::string& resource, const std::string& name) {
    DeleteOptions how;
    how.propagation = Propagation::Orphan;
    store.remove(store.type(group, resource), "default", name, how);
  }
};

}  // namespace

TEST_CASE("StatefulSet deleted with --cascade=orphan and made again adopts its pods and revision") {
  AdoptWorld w;
  const ResourceType& sets = w.store.type("apps", "statefulsets");
  w.store.create(sets, "default", obj(workload("StatefulSet", "web", R"("replicas":2,"serviceName":"web",)")));
  for (int i = 0; i < 20 && w.pod_names().size() < 2; ++i) w.advance(1s);
  const auto pods_before = w.pod_uids();
  REQUIRE(pods_before.size() == 2);
  w.orphan("apps", "statefulsets", "web");
  w.check_pods_controlled_by("");
  // Made again with a changed immutable field: the same pods (no 409 on web-0), the same revision.
  w.store.create(sets, "default", obj(workload("StatefulSet", "web", R"("replicas":2,"serviceName":"other",)")));
  const std::string set_uid = w.uid("apps", "statefulsets", "web");
  w.advance(1s);
  CHECK(w.pod_uids() == pods_before);
  w.check_pods_controlled_by(set_uid);
  CHECK(w.sole_revision_controller() == set_uid);
  const json::object st = w.get("apps", "statefulsets", "web").at("status").as_object();
  CHECK(st.at("replicas") == 2);
  // A pod of the set's labels but not of its name (isMemberOf) is not adopted.
  w.store.create(w.pods, "default", bare_pod("web-extra", "web"));
  w.advance(1s);
  CHECK(w.controllers_of("", "pods").at("web-extra").empty());
}

TEST_CASE("ReplicaSet: orphans adopted, a pod whose labels no longer match released and replaced") {
  AdoptWorld w;
  const ResourceType& rss = w.store.type("apps", "replicasets");
  w.store.create(rss, "default", replicaset("rs", 2));
  const auto before = w.pod_uids();
  REQUIRE(before.size() == 2);
  w.orphan("apps", "replicasets", "rs");
  w.store.create(rss, "default", replicaset("rs", 2));
  const std::string rs_uid = w.uid("apps", "replicasets", "rs");
  CHECK(w.pod_uids() == before);  // adopted, none made
  w.check_pods_controlled_by(rs_uid);

  const std::string moved = before.begin()->first;
  w.store.mutate(w.pods, "default", moved, [](json::object& p) {
    p["metadata"].as_object()["labels"] = json::object{{"app", "elsewhere"}};
  });
  const json::object released = w.get("", "pods", moved);
  CHECK_FALSE(released.at("metadata").as_object().contains("ownerReferences"));
  const auto owners = w.controllers_of("", "pods");
  CHECK(owners.size() == 3);  // a replacement
  int owned = 0;
  for (const auto& [name, owner] : owners) owned += owner == rs_uid;
  CHECK(owned == 2);

  // Labelled back: adopted again, and one too many deleted.
  w.store.mutate(w.pods, "default", moved, [](json::object& p) {
    p["metadata"].as_object()["labels"] = json::object{{"app", "rs"}};
  });
  int active = 0;
  for (const auto& p : w.list("", "pods"))
    if (!p.at("metadata").as_object().contains("deletionTimestamp") &&
        gpupool::embedded::util::controller_uid(p) == rs_uid)
      ++active;
  CHECK(active == 2);
}

TEST_CASE("claim leaves alone another controller's pods, pods being deleted, and adopts nothing while deleted") {
  AdoptWorld w;
  const ResourceType& rss = w.store.type("apps", "replicasets");
  // Another controller's pod with the labels: ignored.
  const std::string other = at(
      w.store.create(w.store.type("", "configmaps"), "default", obj(R"({"metadata":{"name":"x"}})")), "metadata.uid");
  w.store.create(w.pods, "default",
                 bare_pod("theirs", "rs",
                          fmt::format(R"("ownerReferences":[{{"apiVersion":"v1","kind":"ConfigMap","name":"x",
      "uid":"{}","controller":true}}],)",
                                      other)));
  // An orphan being deleted (held by a finalizer): not adopted.
  w.store.create(w.pods, "default", bare_pod("going", "rs", R"("finalizers":["example.com/hold"],)"));
  w.store.remove(w.pods, "default", "going");
  REQUIRE(w.get("", "pods", "going").at("metadata").as_object().contains("deletionTimestamp"));
  w.store.create(rss, "default", replicaset("rs", 1));
  const auto owners = w.controllers_of("", "pods");
  CHECK(owners.at("theirs") == other);
  CHECK(owners.at("going").empty());
  CHECK(owners.size() == 3);  // its own pod made besides

  // A ReplicaSet being deleted (a finalizer holds it) adopts no orphan.
  json::object held = replicaset("held", 0);
  held["metadata"].as_object()["finalizers"] = json::array{"example.com/hold"};
  w.store.create(rss, "default", held);
  w.store.remove(rss, "default", "held");
  w.store.create(w.pods, "default", bare_pod("orphan", "held"));
  w.advance(1s);
  CHECK(w.controllers_of("", "pods").at("orphan").empty());
}

TEST_CASE("DaemonSet and Deployment made again after --cascade=orphan adopt pods, revisions, ReplicaSets") {
  AdoptWorld w;
  const ResourceType& dss = w.store.type("apps", "daemonsets");
  w.store.create(dss, "default", obj(workload("DaemonSet", "agent", "")));
  const auto ds_pods = w.pod_uids();
  REQUIRE_FALSE(ds_pods.empty());
  w.orphan("apps", "daemonsets", "agent");
  w.store.create(dss, "default", obj(workload("DaemonSet", "agent", "")));
  const std::string ds_uid = w.uid("apps", "daemonsets", "agent");
  CHECK(w.pod_uids() == ds_pods);
  w.check_pods_controlled_by(ds_uid);
  CHECK(w.sole_revision_controller() == ds_uid);

  const ResourceType& deployments = w.store.type("apps", "deployments");
  w.store.create(deployments, "default", obj(workload("Deployment", "web", R"("replicas":2,)")));
  const auto rs_before = w.controllers_of("apps", "replicasets");
  REQUIRE(rs_before.size() == 1);
  w.orphan("apps", "deployments", "web");
  w.store.create(deployments, "default", obj(workload("Deployment", "web", R"("replicas":2,)")));
  const auto rs_after = w.controllers_of("apps", "replicasets");
  REQUIRE(rs_after.size() == 1);
  CHECK(rs_after.begin()->first == rs_before.begin()->first);
  CHECK(rs_after.begin()->second == w.uid("apps", "deployments", "web"));
}

TEST_CASE("a Job with a manual selector adopts the orphans it selects") {
  AdoptWorld w;
  w.store.create(w.pods, "default", bare_pod("stray", "batch"));
  w.store.create(w.store.type("batch", "jobs"), "default",
                 obj(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},
    "spec":{"manualSelector":true,"parallelism":1,"completions":1,"selector":{"matchLabels":{"app":"batch"}},
      "template":{"metadata":{"labels":{"app":"batch"}},
        "spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}})"));
  const auto owners = w.controllers_of("", "pods");
  CHECK(owners.size() == 1);  // the stray is its one active pod
  CHECK(owners.at("stray") == w.uid("batch", "jobs", "j"));
}

TEST_CASE("statefulset_member: <set>-<digits> only") {
  CHECK(statefulset_member("web-0", "web"));
  CHECK(statefulset_member("web-12", "web"));
  CHECK(statefulset_member("a-b-3", "a-b"));
  CHECK_FALSE(statefulset_member("web-3", "we"));
  CHECK_FALSE(statefulset_member("web-x", "web"));
  CHECK_FALSE(statefulset_member("web-", "web"));
  CHECK_FALSE(statefulset_member("web0", "web"));
  CHECK_FALSE(statefulset_member("web-1-2", "web"));
}
