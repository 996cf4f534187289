// Admission as kube-apiserver v1.32 does it: ResourceQuota, LimitRanger, Priority, immutable fields,
// and the controllers' FailedCreate events when admission refuses a pod. Every expected message
// below is what a real kube-apiserver v1.32.13 answered to the same request (the oracle of
// ../shared/oracle), with the names of this test.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "api_fixture.hpp"
#include "embedded/admission.hpp"
#include "embedded/api.hpp"
#include "embedded/controllers.hpp"
#include "embedded/namespace_controllers.hpp"
#include "embedded/quota.hpp"
#include "embedded/store.hpp"

using namespace gpupool;
using namespace gpupool::embedded;
namespace json = boost::json;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

struct Fixture {
  Clock clock = Clock::manual();
  Store store{clock};
  bool plugins = (install_admission_plugins(store), create_system_priority_classes(store), true);
  NamespaceControllers namespaces{store, "-----BEGIN CERTIFICATE-----\n"};  // each namespace's "default" account
  QuotaController quota{store};
  Controllers controllers{store, clock};
  Api api{store, {}};
  Fixture() {
    for (const char* ns : {"q1", "q2"})
      store.create(store.type("", "namespaces"), "", json::object{{"metadata", json::object{{"name", ns}}}});
  }
  // An admin request through the REST layer: the status code and the body.
  std::pair<int, json::object> call(const std::string& method, const std::string& path, const std::string& body = "") {
    auto resp = api.handle(testing::admin_request(method, path, body));
    return {resp.status, json::parse(resp.body).as_object()};
  }
  std::string message(const std::string& path, const std::string& body) {
    auto [code, st] = call("POST", path, body);
    if (code < 400) return fmt::format("{} created", code);
    return fmt::format("{} {}", code, std::string(st.at("message").as_string()));
  }
  json::object used(const std::string& ns, const std::string& name) {
    return store.get(store.type("", "resourcequotas"), ns, name).at("status").at("used").as_object();
  }
};

std::string gpu_pod(const std::string& name, const std::string& gpus) {
  return fmt::format(R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}"}},"spec":{{"containers":[{{"name":"c",
    "image":"x","resources":{{"limits":{{"nvidia.com/gpu":"{}"}}}}}}]}}}})",
                     name, gpus);
}

const char* kComputeQuota = R"({"metadata":{"name":"compute"},"spec":{"hard":{"limits.cpu":"2","limits.memory":"2Gi",
  "requests.cpu":"1","requests.nvidia.com/gpu":"2","pods":"3","count/services":"1","count/deployments.apps":"1",
  "configmaps":"2"}}})";  // kube-root-ca.crt, which every namespace holds, counts as one

}  // namespace

TEST_CASE("ResourceQuota: limits and requests must be set, with the real message and a 403") {
  Fixture f;
  f.store.create(f.store.type("", "resourcequotas"), "q1", obj(kComputeQuota));
  // `main` sets nothing; `side` sets limits.cpu only (its requests.cpu is defaulted from it).
  auto [code, st] = f.call("POST", "/api/v1/namespaces/q1/pods", R"({"apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"p1"},"spec":{"containers":[{"name":"main","image":"busybox"},
    {"name":"side","image":"busybox","resources":{"limits":{"cpu":"100m"}}}]}})");
  CHECK(code == 403);
  CHECK(
      json::serialize(st) ==
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"p1\" is forbidden: )"
      R"(failed quota: compute: must specify limits.cpu for: main; limits.memory for: main,side; requests.cpu for: main",)"
      R"("reason":"Forbidden","details":{"name":"p1","kind":"pods"},"code":403})");
  // A generated name is named as generated (the quota plugin validates after the name exists).
  const std::string msg =
      f.message("/api/v1/namespaces/q1/pods",
                R"({"metadata":{"generateName":"gen-"},"spec":{"containers":[{"name":"main","image":"b"}]}})");
  CHECK(msg.starts_with("403 pods \"gen-"));
  CHECK(msg.ends_with(
      "\" is forbidden: failed quota: compute: must specify limits.cpu for: main; limits.memory for: main; "
      "requests.cpu for: main"));
  CHECK(msg.size() ==
        std::string("403 pods \"gen-xxxxx\" is forbidden: failed quota: compute: must specify limits.cpu for: "
                    "main; limits.memory for: main; requests.cpu for: main")
            .size());
}

TEST_CASE("ResourceQuota: exceeded quota for requests, limits, GPUs, pods and object counts") {
  Fixture f;
  f.store.create(f.store.type("", "resourcequotas"), "q1", obj(kComputeQuota));
  const char* p2 = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"NAME"},"spec":{"containers":[{"name":"main",
    "image":"busybox","resources":{"limits":{"cpu":"1500m","memory":"1Gi","nvidia.com/gpu":"1"},"requests":{"cpu":"600m"}}}]}})";
  auto pod = [&](const std::string& name) {
    std::string b = p2;
    b.replace(b.find("NAME"), 4, name);
    return b;
  };
  CHECK(f.message("/api/v1/namespaces/q1/pods", pod("p2")) == "201 created");
  CHECK(f.message("/api/v1/namespaces/q1/pods", pod("p3")) ==
        "403 pods \"p3\" is forbidden: exceeded quota: compute, requested: limits.cpu=1500m,requests.cpu=600m, used: "
        "limits.cpu=1500m,requests.cpu=600m, limited: limits.cpu=2,requests.cpu=1");
  // status.used as the real quota controller and admission keep it.
  CHECK(
      json::serialize(f.used("q1", "compute")) ==
      R"({"configmaps":"1","count/deployments.apps":"0","count/services":"0","limits.cpu":"1500m","limits.memory":"1Gi",)"
      R"("pods":"1","requests.cpu":"600m","requests.nvidia.com/gpu":"1"})");
  CHECK(f.store.get(f.store.type("", "resourcequotas"), "q1", "compute").at("status").at("hard") ==
        f.store.get(f.store.type("", "resourcequotas"), "q1", "compute").at("spec").at("hard"));

  // Object counts: count/<resource>.<group>, count/<core resource>, the legacy names.
  auto deploy = [](const std::string& name) {
    return fmt::format(R"({{"metadata":{{"name":"{}"}},"spec":{{"selector":{{"matchLabels":{{"a":"b"}}}},
      "template":{{"metadata":{{"labels":{{"a":"b"}}}},"spec":{{"containers":[{{"name":"c","image":"x"}}]}}}}}}}})",
                       name);
  };
  CHECK(f.message("/apis/apps/v1/namespaces/q1/deployments", deploy("d1")) == "201 created");
  CHECK(f.message("/apis/apps/v1/namespaces/q1/deployments", deploy("d2")) ==
        "403 deployments.apps \"d2\" is forbidden: exceeded quota: compute, requested: count/deployments.apps=1, used: "
        "count/deployments.apps=1, limited: count/deployments.apps=1");
  auto [dcode, dst] = f.call("POST", "/apis/apps/v1/namespaces/q1/deployments", deploy("d3"));
  CHECK(dcode == 403);
  CHECK(json::serialize(dst.at("details")) == R"({"name":"d3","group":"apps","kind":"deployments"})");
  const char* svc = R"({"metadata":{"name":"NAME"},"spec":{"ports":[{"port":80}]}})";
  auto service = [&](const std::string& name) {
    std::string b = svc;
    b.replace(b.find("NAME"), 4, name);
    return b;
  };
  CHECK(f.message("/api/v1/namespaces/q1/services", service("s1")) == "201 created");
  CHECK(
      f.message("/api/v1/namespaces/q1/services", service("s2")) ==
      "403 services \"s2\" is forbidden: exceeded quota: compute, requested: count/services=1, used: count/services=1, "
      "limited: count/services=1");
  CHECK(f.message("/api/v1/namespaces/q1/configmaps", R"({"metadata":{"name":"c0"}})") == "201 created");
  CHECK(f.message("/api/v1/namespaces/q1/configmaps", R"({"metadata":{"name":"c1"}})") ==
        "403 configmaps \"c1\" is forbidden: exceeded quota: compute, requested: configmaps=1, used: configmaps=2, "
        "limited: configmaps=2");
  // A deletion gives the usage back (the controller's replenishment).
  CHECK(f.call("DELETE", "/api/v1/namespaces/q1/services/s1").first == 200);
  CHECK(f.used("q1", "compute").at("count/services") == "0");
  CHECK(f.message("/api/v1/namespaces/q1/services", service("s2")) == "201 created");
  // A dry run is checked but charges nothing.
  CHECK(f.message("/api/v1/namespaces/q1/configmaps?dryRun=All", R"({"metadata":{"name":"c2"}})").starts_with("403"));
  CHECK(f.used("q1", "compute").at("count/services") == "1");
}

TEST_CASE("ResourceQuota: GPUs, pod counts, claims by storage class and node ports") {
  Fixture f;
  f.store.create(f.store.type("", "resourcequotas"), "q2", obj(R"({"metadata":{"name":"gpu"},"spec":{"hard":{
    "requests.nvidia.com/gpu":"2","pods":"2","requests.storage":"1Gi","persistentvolumeclaims":"2",
    "fast.storageclass.storage.k8s.io/requests.storage":"500Mi","services.nodeports":"1"}}})"));
  const std::string pods = "/api/v1/namespaces/q2/pods";
  CHECK(f.message(pods, gpu_pod("a", "1")) == "201 created");
  CHECK(f.message(pods, gpu_pod("b", "2")) ==
        "403 pods \"b\" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=2, used: "
        "requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=2");
  CHECK(f.message(pods, gpu_pod("b0", "0")) == "201 created");
  CHECK(f.message(pods, gpu_pod("c", "0")) ==
        "403 pods \"c\" is forbidden: exceeded quota: gpu, requested: pods=1, used: pods=2, limited: pods=2");
  auto pvc = [](const std::string& name, const std::string& size, const std::string& cls) {
    return fmt::format(
        R"({{"metadata":{{"name":"{}"}},"spec":{{"accessModes":["ReadWriteOnce"],{}"resources":{{"requests":{{"storage":"{}"}}}}}}}})",
        name, cls.empty() ? "" : "\"storageClassName\":\"" + cls + "\",", size);
  };
  const std::string claims = "/api/v1/namespaces/q2/persistentvolumeclaims";
  CHECK(f.message(claims, pvc("v1", "600Mi", "fast")) ==
        "403 persistentvolumeclaims \"v1\" is forbidden: exceeded quota: gpu, requested: "
        "fast.storageclass.storage.k8s.io/requests.storage=600Mi, used: "
        "fast.storageclass.storage.k8s.io/requests.storage=0, "
        "limited: fast.storageclass.storage.k8s.io/requests.storage=500Mi");
  CHECK(f.message(claims, pvc("v2", "600Mi", "")) == "201 created");
  CHECK(f.message(claims, pvc("v3", "100Mi", "fast")) == "201 created");
  CHECK(
      f.message(claims, pvc("v4", "1.5", "")) ==
      "403 persistentvolumeclaims \"v4\" is forbidden: exceeded quota: gpu, requested: persistentvolumeclaims=1, used: "
      "persistentvolumeclaims=2, limited: persistentvolumeclaims=2");
  CHECK(
      f.message(
          "/api/v1/namespaces/q2/services",
          R"({"metadata":{"name":"np"},"spec":{"type":"NodePort","ports":[{"name":"80","port":80},{"name":"81","port":81}]}})") ==
      "403 services \"np\" is forbidden: exceeded quota: gpu, requested: services.nodeports=2, used: "
      "services.nodeports=0, "
      "limited: services.nodeports=1");
  CHECK(json::serialize(f.used("q2", "gpu")) ==
        R"({"fast.storageclass.storage.k8s.io/requests.storage":"100Mi","persistentvolumeclaims":"2","pods":"2",)"
        R"("requests.nvidia.com/gpu":"1","requests.storage":"700Mi","services.nodeports":"0"})");
  // A pod that finishes releases its usage (count/pods would still count it).
  f.store.mutate(
      f.store.type("", "pods"), "q2", "a", [](json::object& p) { p["status"].as_object()["phase"] = "Succeeded"; }, {},
      "status");
  CHECK(f.used("q2", "gpu").at("requests.nvidia.com/gpu") == "0");
  CHECK(f.used("q2", "gpu").at("pods") == "1");
  CHECK(f.message(pods, gpu_pod("b", "2")) == "201 created");
}

TEST_CASE("ResourceQuota: scopes select the pods a quota counts") {
  Fixture f;
  f.store.create(f.store.type("", "resourcequotas"), "q1", obj(R"({"metadata":{"name":"be"},"spec":{"hard":{"pods":"1"},
    "scopes":["BestEffort"]}})"));
  f.store.create(f.store.type("", "resourcequotas"), "q1",
                 obj(R"({"metadata":{"name":"high"},"spec":{"hard":{"pods":"1"},
    "scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["high"]}]}}})"));
  const std::string pods = "/api/v1/namespaces/q1/pods";
  auto pod = [](const std::string& name, const std::string& extra) {
    return fmt::format(R"({{"metadata":{{"name":"{}"}},"spec":{{{}"containers":[{{"name":"c","image":"x"}}]}}}})", name,
                       extra);
  };
  CHECK(f.message(pods, pod("a", "")) == "201 created");
  CHECK(f.message(pods, pod("b", "")) ==
        "403 pods \"b\" is forbidden: exceeded quota: be, requested: pods=1, used: pods=1, limited: pods=1");
  // GPUs alone leave a pod BestEffort (QoS looks at cpu and memory only); a cpu request does not.
  CHECK(f.message(pods, gpu_pod("g", "1")).starts_with("403 pods \"g\" is forbidden: exceeded quota: be"));
  CHECK(f.message(pods, R"({"metadata":{"name":"burst"},"spec":{"containers":[{"name":"c","image":"x",
    "resources":{"requests":{"cpu":"1"}}}]}})") == "201 created");
  CHECK(f.used("q1", "be").at("pods") == "1");
  CHECK(f.used("q1", "high").at("pods") == "0");
}

// ---- FailedCreate: the ReplicaSet and Job controllers when admission refuses their pods ---------

namespace {
std::vector<json::object> events_of(Fixture& f, const std::string& ns, const std::string& kind,
                                    const std::string& name) {
  std::vector<json::object> out;
  for (const auto& e : f.store.list(f.store.type("", "events"), ns).items)
    if (field_value(*e, "involvedObject.kind") == kind && field_value(*e, "involvedObject.name") == name)
      out.push_back(*e);
  return out;
}
const json::object* condition_of(const json::object& o, const std::string& type) {
  if (const auto* st = o.if_contains("status"); st && st->is_object())
    if (const auto* cs = st->as_object().if_contains("conditions"); cs && cs->is_array())
      for (const auto& c : cs->as_array())
        if (c.as_object().at("type").as_string() == type) return &c.as_object();
  return nullptr;
}
}  // namespace

TEST_CASE("FailedCreate: a Deployment and a Job under a quota their pods do not satisfy") {
  Fixture f;
  f.store.create(f.store.type("", "resourcequotas"), "q1", obj(kComputeQuota));
  // `kubectl create deployment d1 --image=busybox` and `kubectl create job j1 --image=busybox`.
  CHECK(f.message("/apis/apps/v1/namespaces/q1/deployments", R"({"metadata":{"name":"d1","labels":{"app":"d1"}},"spec":{
    "replicas":1,"selector":{"matchLabels":{"app":"d1"}},"template":{"metadata":{"labels":{"app":"d1"}},"spec":{
    "containers":[{"name":"busybox","image":"busybox"}]}}}})") == "201 created");
  const auto rss = f.store.list(f.store.type("apps", "replicasets"), "q1").items;
  REQUIRE(rss.size() == 1);
  const std::string rs = field_value(*rss[0], "metadata.name");
  CHECK(f.store.list(f.store.type("", "pods"), "q1").items.empty());
  const auto evs = events_of(f, "q1", "ReplicaSet", rs);
  REQUIRE(evs.size() == 1);  // slow start: the first refusal stops the batch
  const json::object& ev = evs[0];
  CHECK(ev.at("type") == "Warning");
  CHECK(ev.at("reason") == "FailedCreate");
  const std::string msg(ev.at("message").as_string());
  const std::string why =
      "\" is forbidden: failed quota: compute: must specify limits.cpu for: busybox; limits.memory for: "
      "busybox; requests.cpu for: busybox";
  CHECK(msg.starts_with("Error creating: pods \"" + rs + "-"));
  CHECK(msg.ends_with(why));
  CHECK(field_value(ev, "source.component") == "replicaset-controller");
  CHECK(ev.at("reportingComponent") == "replicaset-controller");
  CHECK(ev.at("reportingInstance") == "");
  CHECK(field_value(ev, "involvedObject.apiVersion") == "apps/v1");
  // The ReplicaSet's ReplicaFailure condition, and the Deployment's copy of it.
  const auto rs_obj = f.store.get(f.store.type("apps", "replicasets"), "q1", rs);
  const json::object* cond = condition_of(rs_obj, "ReplicaFailure");
  REQUIRE(cond);
  CHECK(cond->at("status") == "True");
  CHECK(cond->at("reason") == "FailedCreate");
  CHECK(cond->at("message").as_string() == msg.substr(std::string("Error creating: ").size()));
  const auto d = f.store.get(f.store.type("apps", "deployments"), "q1", "d1");
  const json::object* dcond = condition_of(d, "ReplicaFailure");
  REQUIRE(dcond);
  CHECK(dcond->at("message") == cond->at("message"));
  CHECK(dcond->at("lastUpdateTime") == cond->at("lastTransitionTime"));

  CHECK(f.message("/apis/batch/v1/namespaces/q1/jobs", R"({"metadata":{"name":"j1"},"spec":{"template":{"spec":{
    "containers":[{"name":"j1","image":"busybox"}],"restartPolicy":"Never"}}}})") == "201 created");
  const auto jevs = events_of(f, "q1", "Job", "j1");
  REQUIRE(jevs.size() == 1);
  CHECK(std::string(jevs[0].at("message").as_string()).starts_with("Error creating: pods \"j1-"));
  CHECK(std::string(jevs[0].at("message").as_string())
            .ends_with("\" is forbidden: failed quota: compute: must specify limits.cpu for: j1; limits.memory for: "
                       "j1; requests.cpu for: j1"));
  CHECK(field_value(jevs[0], "source.component") == "job-controller");
  const auto job = f.store.get(f.store.type("batch", "jobs"), "q1", "j1");
  CHECK(job.at("status").as_object().if_contains("active") == nullptr);  // nothing was created

  // The quota goes: the controllers retry, the pods are created and the condition is cleared.
  f.store.remove(f.store.type("", "resourcequotas"), "q1", "compute");
  CHECK(f.store.list(f.store.type("", "pods"), "q1").items.size() == 2);
  CHECK(!condition_of(f.store.get(f.store.type("apps", "replicasets"), "q1", rs), "ReplicaFailure"));
  CHECK(!condition_of(f.store.get(f.store.type("apps", "deployments"), "q1", "d1"), "ReplicaFailure"));
  CHECK(f.store.get(f.store.type("batch", "jobs"), "q1", "j1").at("status").at("active") == 1);
}

// ---- LimitRanger ----------------------------------------------------------------------------------

TEST_CASE("LimitRange: defaults filled in and noted, min/max refused with the real messages") {
  Fixture f;
  CHECK(f.message("/api/v1/namespaces/q1/limitranges", R"({"metadata":{"name":"lim"},"spec":{"limits":[
    {"type":"Container","default":{"cpu":"500m"},"min":{"memory":"10Mi"},"max":{"cpu":"2","memory":"1Gi"}},
    {"type":"Pod","max":{"cpu":"3"}},
    {"type":"PersistentVolumeClaim","min":{"storage":"1Gi"},"max":{"storage":"5Gi"}}]}})") == "201 created");
  // SetDefaults_LimitRangeItem: default from max, defaultRequest from default.
  const auto lr = f.store.get(f.store.type("", "limitranges"), "q1", "lim");
  CHECK(
      json::serialize(lr.at("spec").at("limits").at(0)) ==
      R"({"type":"Container","default":{"cpu":"500m","memory":"1Gi"},"min":{"memory":"10Mi"},"max":{"cpu":"2","memory":"1Gi"},)"
      R"("defaultRequest":{"cpu":"500m","memory":"1Gi"}})");
  auto pod = [](const std::string& name, const std::string& containers) {
    return fmt::format(R"({{"metadata":{{"name":"{}"}},"spec":{{"containers":[{}]}}}})", name, containers);
  };
  const std::string pods = "/api/v1/namespaces/q1/pods";
  CHECK(f.message(pods, pod("a", R"({"name":"c","image":"x"})")) == "201 created");
  auto a = f.store.get(f.store.type("", "pods"), "q1", "a");
  CHECK(field_value(a, "metadata.annotations.kubernetes.io/limit-ranger").empty());  // dotted path: read it directly
  CHECK(a.at("metadata").at("annotations").at("kubernetes.io/limit-ranger") ==
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c");
  CHECK(json::serialize(a.at("spec").at("containers").at(0).at("resources")) ==
        R"({"limits":{"cpu":"500m","memory":"1Gi"},"requests":{"cpu":"500m","memory":"1Gi"}})");
  CHECK(f.message(pods, pod("b", R"({"name":"c","image":"x","resources":{"requests":{"memory":"20Mi"}}})")) ==
        "201 created");
  CHECK(f.store.get(f.store.type("", "pods"), "q1", "b")
            .at("metadata")
            .at("annotations")
            .at("kubernetes.io/limit-ranger") ==
        "LimitRanger plugin set: cpu request for container c; cpu, memory limit for container c");
  CHECK(
      f.message(
          pods,
          pod("c",
              R"({"name":"c","image":"x","resources":{"limits":{"cpu":"3","memory":"2Gi"},"requests":{"memory":"5Mi"}}})")) ==
      "403 pods \"c\" is forbidden: [minimum memory usage per Container is 10Mi, but request is 5Mi, maximum cpu usage "
      "per "
      "Container is 2, but limit is 3, maximum memory usage per Container is 1Gi, but limit is 2Gi]");
  CHECK(f.message(pods, pod("d", R"({"name":"c","image":"x","resources":{"limits":{"cpu":"2","memory":"20Mi"}}},
    {"name":"e","image":"x","resources":{"limits":{"cpu":"2","memory":"20Mi"}}})")) ==
        "403 pods \"d\" is forbidden: maximum cpu usage per Pod is 3, but limit is 4");
  auto pvc = [](const std::string& name, const std::string& size) {
    return fmt::format(
        R"({{"metadata":{{"name":"{}"}},"spec":{{"accessModes":["ReadWriteOnce"],"resources":{{"requests":{{"storage":"{}"}}}}}}}})",
        name, size);
  };
  const std::string claims = "/api/v1/namespaces/q1/persistentvolumeclaims";
  CHECK(f.message(claims, pvc("small", "500Mi")) ==
        "403 persistentvolumeclaims \"small\" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, "
        "but request "
        "is 500Mi");
  CHECK(f.message(claims, pvc("big", "6Gi")) ==
        "403 persistentvolumeclaims \"big\" is forbidden: maximum storage usage per PersistentVolumeClaim is 5Gi, but "
        "request is "
        "6Gi");
  CHECK(f.message(claims, pvc("ok", "2Gi")) == "201 created");
}

TEST_CASE("LimitRange defaults come before ResourceQuota's must-specify check") {
  Fixture f;
  f.store.create(f.store.type("", "resourcequotas"), "q1", obj(kComputeQuota));
  f.store.create(f.store.type("", "limitranges"), "q1", obj(R"({"metadata":{"name":"defaults"},"spec":{"limits":[
    {"type":"Container","default":{"cpu":"200m","memory":"256Mi"},"defaultRequest":{"cpu":"100m"}}]}})"));
  CHECK(f.message("/api/v1/namespaces/q1/pods",
                  R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"main","image":"x"}]}})") == "201 created");
  CHECK(
      json::serialize(f.used("q1", "compute")) ==
      R"({"configmaps":"1","count/deployments.apps":"0","count/services":"0","limits.cpu":"200m","limits.memory":"256Mi",)"
      R"("pods":"1","requests.cpu":"100m","requests.nvidia.com/gpu":"0"})");
}

TEST_CASE("mutating admission comes before validation: LimitRange defaults are validated, Priority refuses first") {
  // Answers of kube-apiserver v1.32.13 (golden podvalues, its last steps).
  Fixture f;
  f.store.create(
      f.store.type("", "limitranges"), "q1",
      obj(R"({"metadata":{"name":"lr"},"spec":{"limits":[{"type":"Container","default":{"cpu":"500m"}}]}})"));
  CHECK(
      f.message(
          "/api/v1/namespaces/q1/pods",
          R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"main","image":"x","resources":{"requests":{"cpu":"1"}}}]}})") ==
      "422 Pod \"p\" is invalid: spec.containers[0].resources.requests: Invalid value: \"1\": must be less than or "
      "equal to cpu "
      "limit of 500m");
  CHECK(
      f.message(
          "/api/v1/namespaces/q1/pods",
          R"({"metadata":{"name":"p"},"spec":{"priorityClassName":"nope","containers":[{"name":"Bad_Name","image":"x"}]}})") ==
      "403 pods \"p\" is forbidden: no PriorityClass with name nope was found");
}

// ---- Priority ---------------------------------------------------------------------------------------

TEST_CASE("Priority: built-in classes, unknown classes refused, spec.priority filled, one global default") {
  Fixture f;
  const auto& pcs = f.store.type("scheduling.k8s.io", "priorityclasses");
  const auto critical = f.store.get(pcs, "", "system-cluster-critical");
  CHECK(critical.at("value") == 2000000000);
  CHECK(critical.at("preemptionPolicy") == "PreemptLowerPriority");
  CHECK(critical.at("description") ==
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.");
  CHECK(f.store.get(pcs, "", "system-node-critical").at("value") == 2000001000);
  auto pod = [](const std::string& meta, const std::string& spec) {
    return fmt::format(R"({{"metadata":{{{}}},"spec":{{{}"containers":[{{"name":"c","image":"x"}}]}}}})", meta, spec);
  };
  const std::string pods = "/api/v1/namespaces/q1/pods";
  CHECK(f.message(pods, pod(R"("name":"a")", "")) == "201 created");
  auto a = f.store.get(f.store.type("", "pods"), "q1", "a");
  CHECK(a.at("spec").at("priority") == 0);
  CHECK(a.at("spec").at("preemptionPolicy") == "PreemptLowerPriority");
  CHECK(f.message(pods, pod(R"("name":"b")", R"("priorityClassName":"nope",)")) ==
        "403 pods \"b\" is forbidden: no PriorityClass with name nope was found");
  // A mutating plugin names a generateName pod by its prefix (the name does not exist yet).
  CHECK(f.message(pods, pod(R"("generateName":"g-")", R"("priorityClassName":"nope",)")) ==
        "403 pods \"g-\" is forbidden: no PriorityClass with name nope was found");
  CHECK(f.message(pods, pod(R"("name":"c")", R"("priorityClassName":"system-cluster-critical",)")) == "201 created");
  CHECK(f.store.get(f.store.type("", "pods"), "q1", "c").at("spec").at("priority") == 2000000000);
  CHECK(f.message(pods, pod(R"("name":"d")", R"("priority":5,)")) ==
        "403 pods \"d\" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority "
        "admission "
        "controller computed 0 from the given PriorityClass name");

  const std::string classes = "/apis/scheduling.k8s.io/v1/priorityclasses";
  auto [code, high] = f.call("POST", classes, R"({"metadata":{"name":"high"},"value":1000,"globalDefault":true})");
  CHECK(code == 201);
  CHECK(high.at("preemptionPolicy") == "PreemptLowerPriority");
  CHECK(f.message(classes, R"({"metadata":{"name":"high2"},"value":100,"globalDefault":true})") ==
        "403 priorityclasses.scheduling.k8s.io \"high2\" is forbidden: PriorityClass high is already marked as "
        "default. Only "
        "one default can exist");
  auto [c1, system_x] = f.call("POST", classes, R"({"metadata":{"name":"system-x"},"value":100})");
  CHECK(c1 == 422);
  CHECK(
      json::serialize(system_x.at("details").at("causes")) ==
      R"([{"reason":"FieldValueForbidden","message":"Forbidden: priority class names with 'system-' prefix are reserved for )"
      R"(system use only. error: system-x is not a known system priority class","field":"metadata.name"}])");
  auto [c2, huge] = f.call("POST", classes, R"({"metadata":{"name":"huge"},"value":2000000000})");
  CHECK(c2 == 422);
  CHECK(json::serialize(huge.at("details").at("causes")) ==
        R"([{"reason":"FieldValueForbidden","message":"Forbidden: maximum allowed value of a user defined priority is )"
        R"(1000000000","field":"value"}])");
  auto [c3, changed] =
      f.call("PUT", classes + "/high", R"({"metadata":{"name":"high"},"value":5,"globalDefault":true})");
  CHECK(c3 == 422);
  CHECK(std::string(changed.at("message").as_string())
            .ends_with(" \"high\" is invalid: value: Forbidden: may not be changed in an update."));
  // The global default applies to pods without a class.
  CHECK(f.message(pods, pod(R"("name":"e")", "")) == "201 created");
  auto e = f.store.get(f.store.type("", "pods"), "q1", "e");
  CHECK(e.at("spec").at("priorityClassName") == "high");
  CHECK(e.at("spec").at("priority") == 1000);
}

// ---- immutable fields ----------------------------------------------------------------------------

// ---- RuntimeClass ------------------------------------------------------------------------------------

TEST_CASE("RuntimeClass: a pod gets the class's overhead, node selector and tolerations (MergeTolerations)") {
  Fixture f;
  const std::string classes = "/apis/node.k8s.io/v1/runtimeclasses";
  CHECK(f.message(classes, R"({"metadata":{"name":"nvidia"},"handler":"nvidia",
    "overhead":{"podFixed":{"cpu":"0.25","memory":"0.5Gi"}},
    "scheduling":{"nodeSelector":{"gpu":"true"},"tolerations":[
      {"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]}})") == "201 created");
  CHECK(f.message(classes, R"({"metadata":{"name":"all"},"handler":"runc",
    "scheduling":{"tolerations":[{"operator":"Exists"}]}})") == "201 created");
  const std::string pods = "/api/v1/namespaces/q1/pods";
  auto pod = [](const std::string& name, const std::string& spec) {
    return fmt::format(R"({{"metadata":{{"name":"{}"}},"spec":{{{}"containers":[{{"name":"c","image":"x"}}]}}}})", name,
                       spec);
  };
  const auto& pod_type = f.store.type("", "pods");
  CHECK(f.message(pods, pod("a", R"("runtimeClassName":"nvidia",)")) == "201 created");
  const auto a = f.store.get(pod_type, "q1", "a").at("spec").as_object();
  CHECK(json::serialize(a.at("overhead")) == R"({"cpu":"250m","memory":"512Mi"})");
  CHECK(json::serialize(a.at("nodeSelector")) == R"({"gpu":"true"})");
  // DefaultTolerationSeconds' two come first (that plugin runs before RuntimeClass).
  CHECK(json::serialize(a.at("tolerations")) ==
        R"([{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},)"
        R"({"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},)"
        R"({"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}])");
  // The pod's own selector keeps its keys; a toleration the class's is a superset of goes.
  CHECK(f.message(pods, pod("b", R"("runtimeClassName":"nvidia","nodeSelector":{"zone":"a"},"tolerations":[
    {"key":"nvidia.com/gpu","operator":"Equal","value":"x","effect":"NoSchedule"},
    {"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute"}],)")) == "201 created");
  const auto b = f.store.get(pod_type, "q1", "b").at("spec").as_object();
  CHECK(json::serialize(b.at("nodeSelector")) == R"({"zone":"a","gpu":"true"})");
  CHECK(json::serialize(b.at("tolerations")) ==
        R"([{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute"},)"
        R"({"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},)"
        R"({"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}])");
  // `operator: Exists` without a key tolerates everything: it is all that is left.
  CHECK(f.message(pods, pod("c", R"("runtimeClassName":"all",)")) == "201 created");
  const auto c = f.store.get(pod_type, "q1", "c").at("spec").as_object();
  CHECK(json::serialize(c.at("tolerations")) == R"([{"operator":"Exists"}])");
  CHECK_FALSE(c.contains("overhead"));
  CHECK_FALSE(c.contains("nodeSelector"));
  // Refusals, in the plugin's words.
  CHECK(f.message(pods, pod("d", R"("runtimeClassName":"nvidia","nodeSelector":{"gpu":"false"},)")) ==
        "403 pods \"d\" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[gpu] = true; "
        "pod.spec.nodeSelector[gpu] = false");
  CHECK(f.message(pods, pod("e", R"("runtimeClassName":"nvidia","overhead":{"cpu":"1"},)")) ==
        "403 pods \"e\" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead");
  CHECK(f.message(pods, pod("f", R"("runtimeClassName":"nvidia","overhead":{"memory":"536870912","cpu":"250m"},)")) ==
        "201 created");
  CHECK(f.message(pods, pod("g", R"("runtimeClassName":"all","overhead":{"cpu":"1"},)")) ==
        "403 pods \"g\" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined "
        "Overhead");
  CHECK(f.message(pods, pod("h", R"("runtimeClassName":"gvisor",)")) ==
        "403 pods \"h\" is forbidden: pod rejected: RuntimeClass \"gvisor\" not found");
  // An update is not admitted again: the class may change, the pod keeps what it got.
  CHECK(f.store.get(pod_type, "q1", "a").at("spec").at("runtimeClassName") == "nvidia");
}

TEST_CASE("RuntimeClass: a Deployment whose pods named a missing class gets them once the class exists") {
  Fixture f;
  CHECK(f.message("/apis/apps/v1/namespaces/q1/deployments", R"({"metadata":{"name":"d1"},"spec":{
    "replicas":2,"selector":{"matchLabels":{"app":"d1"}},"template":{"metadata":{"labels":{"app":"d1"}},"spec":{
    "runtimeClassName":"nvidia","containers":[{"name":"c","image":"busybox"}]}}}})") == "201 created");
  CHECK(f.store.list(f.store.type("", "pods"), "q1").items.empty());
  CHECK(f.message("/apis/node.k8s.io/v1/runtimeclasses",
                  R"({"metadata":{"name":"nvidia"},"handler":"nvidia","overhead":{"podFixed":{"cpu":"100m"}}})") ==
        "201 created");
  const auto pods = f.store.list(f.store.type("", "pods"), "q1").items;
  REQUIRE(pods.size() == 2);
  CHECK(pods[0]->at("spec").at("overhead").at("cpu") == "100m");
}

TEST_CASE("Immutable fields: Job template and selector, Deployment selector, Service clusterIP, PVC spec") {
  Fixture f;
  auto patch = [&](const std::string& path, const std::string& body) {
    auto resp =
        f.api.handle(testing::admin_request("PATCH", path, body, "application/merge-patch+json", /*accept=*/""));
    return std::pair{resp.status, json::parse(resp.body).as_object()};
  };
  // A Job's selector is generated on its uid (a selector given without manualSelector is refused).
  CHECK(f.message("/apis/batch/v1/namespaces/q1/jobs",
                  R"({"metadata":{"name":"m"},"spec":{"selector":{"matchLabels":{"job":"m"}},
    "template":{"metadata":{"labels":{"job":"m"}},"spec":{"containers":[{"name":"j","image":"busybox"}],"restartPolicy":"Never"}}}})")
            .find("`selector` not auto-generated") != std::string::npos);
  CHECK(f.message("/apis/batch/v1/namespaces/q1/jobs", R"({"metadata":{"name":"j"},"spec":{
    "template":{"spec":{"containers":[{"name":"j","image":"busybox"}],"restartPolicy":"Never"}}}})") == "201 created");
  const std::string uid(f.store.get(f.store.type("batch", "jobs"), "q1", "j").at("metadata").at("uid").as_string());
  auto [c1, s1] = patch("/apis/batch/v1/namespaces/q1/jobs/j",
                        R"({"spec":{"template":{"spec":{"containers":[{"name":"j","image":"busybox:2"}]}}}})");
  CHECK(c1 == 422);
  REQUIRE(s1.at("details").at("causes").as_array().size() == 1);
  CHECK(s1.at("details").at("causes").at(0).at("field") == "spec.template");
  CHECK(std::string(s1.at("details").at("causes").at(0).at("message").as_string()).ends_with(": field is immutable"));
  // kube-apiserver v1.32.13 gives these three causes, in this order, for this patch.
  auto [c2, s2] = patch("/apis/batch/v1/namespaces/q1/jobs/j", R"({"spec":{"selector":{"matchLabels":{"a":"b"}}}})");
  CHECK(c2 == 422);
  const std::string sel =
      "v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"b\", \"batch.kubernetes.io/controller-uid\":\"" + uid +
      "\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}";
  CHECK(
      std::string(s2.at("message").as_string()) ==
      "Job.batch \"j\" is invalid: [spec.selector: Invalid value: " + sel +
          ": `selector` not auto-generated, "
          "spec.template.metadata.labels: Invalid value: map[string]string{\"batch.kubernetes.io/controller-uid\":\"" +
          uid + "\", \"batch.kubernetes.io/job-name\":\"j\", \"controller-uid\":\"" + uid +
          "\", \"job-name\":\"j\"}: `selector` does "
          "not match template `labels`, spec.selector: Invalid value: " +
          sel + ": field is immutable]");

  CHECK(f.message("/apis/apps/v1/namespaces/q1/deployments",
                  R"({"metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"d"}},
    "template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}})") ==
        "201 created");
  auto [c3, s3] =
      patch("/apis/apps/v1/namespaces/q1/deployments/d",
            R"({"spec":{"selector":{"matchLabels":{"x":"y"}},"template":{"metadata":{"labels":{"x":"y"}}}}})");
  CHECK(c3 == 422);
  CHECK(std::string(s3.at("message").as_string())
            .ends_with(" \"d\" is invalid: spec.selector: Invalid value: "
                       "v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"d\", "
                       "\"x\":\"y\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"));
  // The template alone may change.
  CHECK(patch("/apis/apps/v1/namespaces/q1/deployments/d",
              R"({"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox:2"}]}}}})")
            .first == 200);

  CHECK(f.message("/api/v1/namespaces/q1/services", R"({"metadata":{"name":"s"},"spec":{"ports":[{"port":80}]}})") ==
        "201 created");
  auto [c4, s4] = patch("/api/v1/namespaces/q1/services/s", R"({"spec":{"clusterIP":"10.0.0.99"}})");
  CHECK(c4 == 422);
  CHECK(
      s4.at("message") ==
      "Service \"s\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.0.0.99\"}: may not change once set");
  // A full update that leaves the address out keeps it.
  auto svc = f.store.get(f.store.type("", "services"), "q1", "s");
  const auto ip = svc.at("spec").at("clusterIP");
  svc["spec"].as_object().erase("clusterIP");
  CHECK(f.store.update(f.store.type("", "services"), "q1", svc).at("spec").at("clusterIP") == ip);

  CHECK(f.message("/api/v1/namespaces/q1/persistentvolumeclaims",
                  R"({"metadata":{"name":"c"},"spec":{"accessModes":["ReadWriteOnce"],
    "storageClassName":"manual","resources":{"requests":{"storage":"1Gi"}}}})") == "201 created");
  auto [c5, s5] =
      patch("/api/v1/namespaces/q1/persistentvolumeclaims/c", R"({"spec":{"accessModes":["ReadWriteMany"]}})");
  CHECK(c5 == 422);
  CHECK(std::string(s5.at("message").as_string())
            .starts_with("PersistentVolumeClaim \"c\" is invalid: spec: Forbidden: spec is immutable after creation "
                         "except resources.requests and "
                         "volumeAttributesClassName for bound claims"));
  // The binder may set volumeName once.
  CHECK(patch("/api/v1/namespaces/q1/persistentvolumeclaims/c", R"({"spec":{"volumeName":"pv1"}})").first == 200);
  CHECK(patch("/api/v1/namespaces/q1/persistentvolumeclaims/c", R"({"spec":{"volumeName":"pv2"}})").first == 422);
}
