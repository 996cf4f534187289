// Requests that must not crash or fool the embedded API server (issue #20): negative counts,
// wrongly typed fields, over-large objects. Every expected answer was recorded from kube-apiserver
// v1.32.13 (the oracle), code, reason, message and causes.
#include <doctest/doctest.h>

#include <array>

#include "api_fixture.hpp"
#include "embedded/api.hpp"
#include "embedded/controllers.hpp"

using namespace gpupool;
using namespace gpupool::embedded;
namespace json = boost::json;

namespace {

using Fixture = testing::ApiFixture;

std::string deployment(const std::string& kind, const std::string& replicas) {
  return R"({"apiVersion":"apps/v1","kind":")" + kind + R"(","metadata":{"name":"d1"},"spec":{"replicas":)" + replicas +
         R"(,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}})";
}

std::string status_of(const Response& r) {
  // code reason message | causes (reason field message)
  const auto s = json::parse(r.body).as_object();
  std::string out = std::to_string(r.status) + " ";
  if (const auto* reason = s.if_contains("reason")) out += std::string(reason->as_string()) + " ";  // etcd's have none
  out += std::string(s.at("message").as_string());
  if (const auto* d = s.if_contains("details"))
    if (const auto* cs = d->as_object().if_contains("causes"))
      for (const auto& c : cs->as_array())
        out += " | " + std::string(c.at("reason").as_string()) + " " + std::string(c.at("field").as_string()) + " " +
               std::string(c.at("message").as_string());
  return out;
}

}  // namespace

TEST_CASE("negative counts: 422 as kube-apiserver, never a crash") {
  const std::string dep_invalid =
      "422 Invalid Deployment.apps \"d1\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal "
      "to 0 | FieldValueInvalid spec.replicas Invalid value: -1: must be greater than or equal to 0";
  struct Row {
    std::string what, method, path, body, content_type, expected;
  };
  const Row rows[] = {
      {"create", "POST", "/apis/apps/v1/namespaces/default/deployments", deployment("Deployment", "-1"),
       "application/json", dep_invalid},
      {"dry run", "POST", "/apis/apps/v1/namespaces/default/deployments?dryRun=All", deployment("Deployment", "-1"),
       "application/json", dep_invalid},
      {"replicaset", "POST", "/apis/apps/v1/namespaces/default/replicasets", deployment("ReplicaSet", "-1"),
       "application/json",
       "422 Invalid ReplicaSet.apps \"d1\" is invalid: spec.replicas: Invalid value: -1: must be greater than or "
       "equal to 0 | FieldValueInvalid spec.replicas Invalid value: -1: must be greater than or equal to 0"},
      {"merge patch", "PATCH", "/apis/apps/v1/namespaces/default/deployments/ok", R"({"spec":{"replicas":-1}})",
       "application/merge-patch+json",
       "422 Invalid Deployment.apps \"ok\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal "
       "to 0 | FieldValueInvalid spec.replicas Invalid value: -1: must be greater than or equal to 0"},
      {"scale", "PATCH", "/apis/apps/v1/namespaces/default/deployments/ok/scale", R"({"spec":{"replicas":-1}})",
       "application/merge-patch+json",
       "422 Invalid Scale.autoscaling \"ok\" is invalid: spec.replicas: Invalid value: -1: must be greater than or "
       "equal to 0 | FieldValueInvalid spec.replicas Invalid value: -1: must be greater than or equal to 0"},
      {"job", "POST", "/apis/batch/v1/namespaces/default/jobs",
       R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j1"},"spec":{"parallelism":-1,"completions":-1,
           "template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}})",
       "application/json",
       "422 Invalid Job.batch \"j1\" is invalid: [spec.parallelism: Invalid value: -1: must be greater than or equal "
       "to 0, spec.completions: Invalid value: -1: must be greater than or equal to 0] | FieldValueInvalid "
       "spec.parallelism Invalid value: -1: must be greater than or equal to 0 | FieldValueInvalid spec.completions "
       "Invalid value: -1: must be greater than or equal to 0"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.what);
    Fixture f;
    auto ok = deployment("Deployment", "1");
    ok.replace(ok.find("\"d1\""), 4, "\"ok\"");
    REQUIRE(f.call("POST", "/apis/apps/v1/namespaces/default/deployments", ok).status == 201);
    CHECK(status_of(f.call(row.method, row.path, row.body, row.content_type)) == row.expected);
    CHECK(f.store.find(f.store.type("apps", "deployments"), "default", "d1") == nullptr);
  }
}

TEST_CASE("controllers: a negative or huge count that slipped past validation neither crashes nor floods") {
  // The crash of issue #20: a ReplicaSet wanting -1 pods with none had `have - want` = 1 pod to
  // delete from an empty list.
  Children none;
  for (const char* replicas : {"-1", "-9223372036854775807", "-1e300"}) {
    CAPTURE(replicas);
    const auto rs =
        json::parse(
            std::string(
                R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"r","namespace":"default","uid":"u"},"spec":{"replicas":)") +
            replicas + "}}")
            .as_object();
    const Plan p = plan_replicaset(rs, none, Clock::time_point{});
    CHECK(p.create.empty());
    CHECK(p.remove.empty());
    const auto job =
        json::parse(
            std::string(
                R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"default","uid":"u"},"spec":{"parallelism":)") +
            replicas + R"(,"completions":5}})")
            .as_object();
    JobBackoffRecord backoff;
    CHECK(plan_job(job, none, Clock::time_point{}, backoff).create.empty());
  }
  // A huge count creates at most 500 pods per sync (burstReplicas), as the real controllers do.
  const auto big =
      json::parse(
          R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"r","namespace":"default","uid":"u"},"spec":{"replicas":1e300}})")
          .as_object();
  CHECK(plan_replicaset(big, none, Clock::time_point{}).create.size() == 500);
  const auto bigjob =
      json::parse(
          R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"default","uid":"u"},"spec":{"parallelism":2000000000,"completions":2000000000}})")
          .as_object();
  JobBackoffRecord backoff;
  CHECK(plan_job(bigjob, none, Clock::time_point{}, backoff).create.size() == 500);
}

TEST_CASE("wrongly typed fields and bad values are refused as kube-apiserver refuses them") {
  const std::string pod_env =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2"},"spec":{"containers":[{"name":"c","image":"busybox",
      "env":[{"name":"\u00e9","value":"1"},{"name":"1X","value":"1"},{"name":"A B","value":"2"},{"name":"","value":"3"}]}]}})";
  const std::string subdomain =
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
      "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  struct Row {
    std::string what, method, path, body, content_type, expected;
  };
  const Row rows[] = {
      {"replicas a string", "POST", "/apis/apps/v1/namespaces/default/deployments", deployment("Deployment", "\"x\""),
       "application/json",
       "400 BadRequest Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string "
       "into Go struct field DeploymentSpec.spec.replicas of type int32"},
      {"replicas 1.5", "POST", "/apis/apps/v1/namespaces/default/deployments", deployment("Deployment", "1.5"),
       "application/json",
       "400 BadRequest Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal number "
       "1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"},
      {"replicas over int32", "POST", "/apis/apps/v1/namespaces/default/deployments",
       deployment("Deployment", "10000000000"), "application/json",
       "400 BadRequest Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal number "
       "10000000000 into Go struct field DeploymentSpec.spec.replicas of type int32"},
      {"replicas an object", "POST", "/apis/apps/v1/namespaces/default/deployments", deployment("Deployment", "{}"),
       "application/json",
       "400 BadRequest Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal object "
       "into Go struct field DeploymentSpec.spec.replicas of type int32"},
      {"containerPort a string", "POST", "/api/v1/namespaces/default/pods",
       R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},"spec":{"containers":[{"name":"c","image":"busybox","ports":[{"containerPort":"eighty"}]}]}})",
       "application/json",
       "400 BadRequest Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal string into Go struct "
       "field ContainerPort.spec.containers.ports.containerPort of type int32"},
      {"containerPort in a template", "POST", "/apis/apps/v1/namespaces/default/deployments",
       [] {
         auto d = deployment("Deployment", "1");
         d.replace(d.find("\"image\":\"busybox\""), 17, R"("image":"busybox","ports":[{"containerPort":"eighty"}])");
         return d;
       }(),
       "application/json",
       "400 BadRequest Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string "
       "into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32"},
      {"job parallelism a string", "POST", "/apis/batch/v1/namespaces/default/jobs",
       R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j1"},"spec":{"parallelism":"x",
           "template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}})",
       "application/json",
       "400 BadRequest Job in version \"v1\" cannot be handled as a Job: json: cannot unmarshal string into Go struct "
       "field JobSpec.spec.parallelism of type int32"},
      {"strategic merge patch", "PATCH", "/apis/apps/v1/namespaces/default/deployments/ok",
       R"({"spec":{"replicas":"x"}})", "application/strategic-merge-patch+json",
       "422 Invalid  \"\" is invalid: patch: Invalid value: \"map[spec:map[replicas:x]]\": unrecognized type: int32 | "
       "FieldValueInvalid patch Invalid value: \"map[spec:map[replicas:x]]\": unrecognized type: int32"},
      {"json patch remove of a missing path", "PATCH", "/apis/apps/v1/namespaces/default/deployments/ok",
       R"([{"op":"remove","path":"/spec/nothere"}])", "application/json-patch+json",
       "422 Invalid the server rejected our request due to an error in our request"},
      {"json patch test that fails", "PATCH", "/apis/apps/v1/namespaces/default/deployments/ok",
       R"([{"op":"test","path":"/spec/replicas","value":7}])", "application/json-patch+json",
       "422 Invalid the server rejected our request due to an error in our request"},
      {"env names", "POST", "/api/v1/namespaces/default/pods?dryRun=All", pod_env, "application/json",
       "422 Invalid Pod \"p2\" is invalid: [spec.containers[0].env[0].name: Invalid value: \"\xc3\xa9\": a valid "
       "environment variable name must consist only of printable ASCII characters other than '=', "
       "spec.containers[0].env[3].name: Required value] | FieldValueInvalid spec.containers[0].env[0].name Invalid "
       "value: \"\xc3\xa9\": a valid environment variable name must consist only of printable ASCII characters other "
       "than '=' | FieldValueRequired spec.containers[0].env[3].name Required value"},
      {"pvc storage class", "POST", "/api/v1/namespaces/default/persistentvolumeclaims?dryRun=All",
       R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"v1"},"spec":{"storageClassName":"Bad_Class",
           "accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})",
       "application/json",
       "422 Invalid PersistentVolumeClaim \"v1\" is invalid: spec.storageClassName: Invalid value: \"Bad_Class\": " +
           subdomain + " | FieldValueInvalid spec.storageClassName Invalid value: \"Bad_Class\": " + subdomain},
      {"storage class name", "POST", "/apis/storage.k8s.io/v1/storageclasses?dryRun=All",
       R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"Bad_Class"},"provisioner":"x"})",
       "application/json",
       "422 Invalid StorageClass.storage.k8s.io \"Bad_Class\" is invalid: metadata.name: Invalid value: "
       "\"Bad_Class\": " +
           subdomain + " | FieldValueInvalid metadata.name Invalid value: \"Bad_Class\": " + subdomain},
      {"2 MB pod", "POST", "/api/v1/namespaces/default/pods",
       R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"big"},"spec":{"containers":[{"name":"c","image":"busybox",
           "env":[{"name":"E","value":")" +
           std::string(2000000, 'y') + R"("}]}]}})",
       "application/json", "500 etcdserver: request is too large"},
      {"3 MiB body", "POST", "/api/v1/namespaces/default/pods",
       R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"big2"},"spec":{"containers":[{"name":"c","image":"busybox",
           "env":[{"name":"E","value":")" +
           std::string(3 * 1024 * 1024, 'y') + R"("}]}]}})",
       "application/json", "413 RequestEntityTooLarge Request entity too large: limit is 3145728"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.what);
    Fixture f;
    auto ok = deployment("Deployment", "1");
    ok.replace(ok.find("\"d1\""), 4, "\"ok\"");
    REQUIRE(f.call("POST", "/apis/apps/v1/namespaces/default/deployments", ok).status == 201);
    const auto before = f.store.revision();
    const auto resp = f.call(row.method, row.path, row.body, row.content_type);
    CAPTURE(resp.body.substr(0, 300));
    CHECK(status_of(resp) == row.expected);
    CHECK(f.store.revision() == before);  // nothing stored
  }
}

TEST_CASE("a merge or JSON patch that leaves a field of the wrong type is refused with the patched object") {
  Fixture f;
  REQUIRE(f.call("POST", "/apis/apps/v1/namespaces/default/deployments", deployment("Deployment", "1")).status == 201);
  for (const auto& step :
       {std::pair<std::string, std::string>{"application/merge-patch+json", R"({"spec":{"replicas":"x"}})"},
        {"application/json-patch+json", R"([{"op":"replace","path":"/spec/replicas","value":"x"}])"}}) {
    const std::string& ct = step.first;  // (a structured binding cannot be captured by clang 14)
    const std::string& patch = step.second;
    CAPTURE(ct);
    const auto r = f.call("PATCH", "/apis/apps/v1/namespaces/default/deployments/d1", patch, ct);
    CHECK(r.status == 422);
    const auto s = json::parse(r.body).as_object();
    const std::string msg(s.at("message").as_string());
    CHECK(msg.rfind(R"( "" is invalid: patch: Invalid value: "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",)",
                    0) == 0);
    const std::string tail =
        R"(}": json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32)";
    CHECK(msg.substr(msg.size() - tail.size()) == tail);
    const auto& cause = s.at("details").at("causes").at(0).as_object();
    CHECK(cause.at("field").as_string() == "patch");
    CHECK(std::string(cause.at("message").as_string()) == msg.substr(std::string(R"( "" is invalid: patch: )").size()));
  }
  CHECK(f.store.get(f.store.type("apps", "deployments"), "default", "d1").at("spec").at("replicas") == 1);
}

TEST_CASE("watch from before the watch cache's window: 410 Expired, not a replay") {
  // kube-apiserver's watch cache keeps at least 100 events per resource type and grows only while
  // its oldest event is fresher than 75 s; an older resourceVersion is `too old resource version`.
  Fixture f;
  const auto& cms = f.store.type("", "configmaps");
  auto cm = [&](int i) {
    f.store.create(cms, "default", json::object{{"metadata", json::object{{"name", "c" + std::to_string(i)}}}});
  };
  cm(0);
  const auto first = f.store.revision();
  for (int i = 1; i < 150; ++i) cm(i);  // fresh events: the window grows to 200, nothing dropped
  CHECK_NOTHROW(f.store.open_watch(cms, "default", first - 1, {}, {}));
  for (int i = 150; i < 250; ++i) {
    f.clock.advance(std::chrono::seconds(2));  // old events, then a full window: the oldest leave
    cm(i);
  }
  try {
    f.store.open_watch(cms, "default", first, {}, {});
    FAIL("no 410");
  } catch (const StatusError& e) {
    CHECK(e.code() == 410);
    CHECK(e.reason() == "Expired");
    CHECK(std::string(e.what()).find("too old resource version: " + std::to_string(first) + " (") != std::string::npos);
  }
  // Over HTTP: the watch starts, then sends the Status as an ERROR event (client-go re-lists).
  const auto r =
      f.call("GET", "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=" + std::to_string(first));
  std::string body;
  std::atomic<bool> stop{false};
  REQUIRE(r.stream);
  r.stream(
      [&](std::string_view chunk) {
        body += chunk;
        return true;
      },
      stop);
  CHECK(body.find(R"({"type":"ERROR","object":{"kind":"Status")") == 0);
  CHECK(body.find(R"("reason":"Expired")") != std::string::npos);
  CHECK(body.find("ADDED") == std::string::npos);
  // Another type's window is its own: pods have no dropped events.
  CHECK_NOTHROW(f.store.open_watch(f.store.type("", "pods"), "default", 1, {}, {}));
  // A recent version still resumes.
  CHECK_NOTHROW(f.store.open_watch(cms, "default", f.store.revision() - 5, {}, {}));
}

TEST_CASE("a valid but huge replica count does not hold the write for millions of pods") {
  // 2,000,000,000 is a valid int32: kube-apiserver stores it and its controller creates pods 500
  // per sync for ever. The embedded controllers run inside the write: one owner syncs at most 20
  // times per second of the cluster's clock (10,000 pods), and goes on at an event after that.
  Fixture f;
  Controllers controllers(f.store, f.clock);
  auto rs = deployment("ReplicaSet", "2000000000");
  REQUIRE(f.call("POST", "/apis/apps/v1/namespaces/default/replicasets", rs).status == 201);
  // (a generated name that collides with another fails that one create: 10,000 or a little under)
  const auto first = f.store.list(f.store.type("", "pods"), "default").items.size();
  CHECK(first <= 10000);
  CHECK(first >= 9900);
  f.clock.advance(std::chrono::seconds(1));
  REQUIRE(f.call("PATCH", "/apis/apps/v1/namespaces/default/replicasets/d1", R"({"metadata":{"labels":{"x":"y"}}})",
                 "application/merge-patch+json")
              .status == 200);
  const auto more = f.store.list(f.store.type("", "pods"), "default").items.size();
  CHECK(more > first + 9000);  // it went on in the next second, again within 20 syncs
  CHECK(more <= 20000);
}

// ValidatePodSpec's value rules (embedded/validation_pod.cpp). Each expected Status is what
// kube-apiserver v1.32.13 answered (tests/fidelity/golden/podvalues.txt has them all, in kubectl's
// words): causes in its order, the message joining them.
TEST_CASE("pod spec values: the causes of ValidatePodSpec in Kubernetes' order") {
  Fixture f;
  auto pod = [](const std::string& spec) {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"v"},"spec":)" + spec + "}";
  };
  auto one = [](const std::string& containers_extra, const std::string& spec_extra = "") {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"v"},"spec":{)" + spec_extra +
           R"("containers":[{"name":"main","image":"busybox")" + containers_extra + "}]}}";
  };
  // A 422's status_of: the causes as `reason field message`, and the message built from them.
  auto invalid = [](const std::string& kind, const std::vector<std::array<std::string, 3>>& causes) {
    std::string list, tail;
    for (const auto& [reason, field, message] : causes) {
      list += (list.empty() ? "" : ", ") + field + ": " + message;
      tail += " | " + reason + " " + field + " " + message;
    }
    return "422 Invalid " + kind + " \"v\" is invalid: " + (causes.size() > 1 ? "[" + list + "]" : list) + tail;
  };
  const std::string port_range = "must be between 1 and 65535, inclusive";
  struct Row {
    std::string what, path, body, expected;
  };
  const Row rows[] = {
      {"ports: required, range, protocol", "pods",
       one(R"(,"ports":[{"containerPort":0},{"containerPort":70000,"hostPort":-1,"protocol":"tcp"}])"),
       invalid(
           "Pod",
           {{{"FieldValueRequired", "spec.containers[0].ports[0].containerPort", "Required value"},
             {"FieldValueInvalid", "spec.containers[0].ports[1].containerPort", "Invalid value: 70000: " + port_range},
             {"FieldValueInvalid", "spec.containers[0].ports[1].hostPort", "Invalid value: -1: " + port_range},
             {"FieldValueNotSupported", "spec.containers[0].ports[1].protocol",
              "Unsupported value: \"tcp\": supported values: \"SCTP\", \"TCP\", \"UDP\""}}})},
      {"host ports conflict across containers", "pods",
       pod(R"({"containers":[{"name":"a","image":"b","ports":[{"containerPort":80,"hostPort":8080}]},
                             {"name":"c","image":"b","ports":[{"containerPort":81,"hostPort":8080}]}]})"),
       invalid("Pod",
               {{{"FieldValueDuplicate", "spec.containers[1].ports[0].hostPort", "Duplicate value: \"TCP//8080\""}}})},
      {"valueFrom without a source", "pods", one(R"(,"env":[{"name":"A","valueFrom":{}}])"),
       invalid("Pod", {{{"FieldValueInvalid", "spec.containers[0].env[0].valueFrom",
                         "Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` "
                         "or `secretKeyRef`"}}})},
      {"a GPU request without a limit", "pods", one(R"(,"resources":{"requests":{"nvidia.com/gpu":"1"}})"),
       invalid("Pod", {{{"FieldValueRequired", "spec.containers[0].resources.limits",
                         "Required value: Limit must be set for non overcommitable resources"}}})},
      {"a GPU request other than its limit", "pods",
       one(R"(,"resources":{"limits":{"nvidia.com/gpu":"2"},"requests":{"nvidia.com/gpu":"1"}})"),
       invalid("Pod", {{{"FieldValueInvalid", "spec.containers[0].resources.requests",
                         "Invalid value: \"1\": must be equal to nvidia.com/gpu limit of 2"}}})},
      {"half a GPU (the limit, and the request defaulted from it)", "pods",
       one(R"(,"resources":{"limits":{"nvidia.com/gpu":"0.5"}})"),
       [&] {
         const std::string q =
             "Invalid value: resource.Quantity{i:resource.int64Amount{value:5, scale:-1}, "
             "d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"DecimalSI\"}: must be an integer";
         return invalid("Pod", {{{"FieldValueInvalid", "spec.containers[0].resources.limits[nvidia.com/gpu]", q},
                                 {"FieldValueInvalid", "spec.containers[0].resources.requests[nvidia.com/gpu]", q}}});
       }()},
      {"an unknown resource name", "pods", one(R"(,"resources":{"requests":{"foo":"1"}})"),
       invalid("Pod", {{{"FieldValueInvalid", "spec.containers[0].resources.requests[foo]",
                         "Invalid value: foo: must be a standard resource type or fully qualified"},
                        {"FieldValueInvalid", "spec.containers[0].resources.requests[foo]",
                         "Invalid value: foo: must be a standard resource for containers"}}})},
      {"a subPath with '..' (the list is named, not the mount)", "pods",
       one(R"(,"volumeMounts":[{"name":"v","mountPath":"/b","subPath":"../x"}])", R"("volumes":[{"name":"v"}],)"),
       invalid("Pod", {{{"FieldValueInvalid", "spec.containers[0].volumeMounts.subPath",
                         "Invalid value: \"../x\": must not contain '..'"}}})},
      {"a probe without handler (its counts are defaulted)", "pods",
       one(R"(,"livenessProbe":{}, "startupProbe":{"exec":{"command":["x"]},"successThreshold":2})"),
       invalid("Pod", {{{"FieldValueRequired", "spec.containers[0].livenessProbe",
                         "Required value: must specify a handler type"},
                        {"FieldValueInvalid", "spec.containers[0].startupProbe.successThreshold",
                         "Invalid value: 2: must be 1"}}})},
      {"a preStop sleep of zero", "pods",
       one(R"(,"lifecycle":{"preStop":{"sleep":{"seconds":0}}})", R"("terminationGracePeriodSeconds":10,)"),
       invalid("Pod",
               {{{"FieldValueInvalid", "spec.containers[0].lifecycle.preStop.sleep",
                  "Invalid value: 0: must be greater than 0 and less than terminationGracePeriodSeconds (10). Enable "
                  "AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep."}}})},
      {"security contexts' ids", "pods",
       one(R"(,"securityContext":{"runAsUser":-1})", R"("securityContext":{"fsGroup":-1},)"),
       invalid("Pod", {{{"FieldValueInvalid", "spec.containers[0].securityContext.runAsUser",
                         "Invalid value: -1: must be between 0 and 2147483647, inclusive"},
                        {"FieldValueInvalid", "spec.securityContext.fsGroup",
                         "Invalid value: -1: must be between 0 and 2147483647, inclusive"}}})},
      {"dnsPolicy None without dnsConfig", "pods", one("", R"("dnsPolicy":"None",)"),
       invalid("Pod", {{{"FieldValueRequired", "spec.dnsConfig",
                         "Required value: must provide `dnsConfig` when `dnsPolicy` is None"}}})},
      {"a toleration's unknown operator", "pods", one("", R"("tolerations":[{"key":"a","operator":"Bogus"}],)"),
       invalid("Pod", {{{"FieldValueNotSupported", "spec.tolerations[0].operator",
                         "Unsupported value: \"Bogus\": supported values: \"Equal\", \"Exists\""}}})},
      {"two volume sources: the volume is not there for its mount", "pods",
       one(R"(,"volumeMounts":[{"name":"two","mountPath":"/two"}])",
           R"("volumes":[{"name":"two","emptyDir":{},"hostPath":{"path":"/x"}}],)"),
       invalid("Pod", {{{"FieldValueForbidden", "spec.volumes[0].hostPath",
                         "Forbidden: may not specify more than 1 volume type"},
                        {"FieldValueNotFound", "spec.containers[0].volumeMounts[0].name", "Not found: \"two\""}}})},
      {"init containers: restartPolicy Never, a probe without Always", "pods",
       one("",
           R"("initContainers":[{"name":"i","image":"b","restartPolicy":"Never","livenessProbe":{"exec":{"command":["x"]}}},
                                    {"name":"side","image":"b","restartPolicy":"Always","livenessProbe":{"exec":{"command":["x"]}}}],)"),
       invalid("Pod", {{{"FieldValueNotSupported", "spec.initContainers[0].restartPolicy",
                         "Unsupported value: \"Never\": supported values: \"Always\""},
                        {"FieldValueForbidden", "spec.initContainers[0].livenessProbe",
                         "Forbidden: may not be set for init containers without restartPolicy=Always"}}})},
      {"a regular container's restartPolicy", "pods", one(R"(,"restartPolicy":"Always")"),
       invalid("Pod", {{{"FieldValueForbidden", "spec.containers[0].restartPolicy",
                         "Forbidden: may not be set for non-init containers"}}})},
      {"hugepages not a whole number of pages (limit, and the request defaulted from it)", "pods",
       one(R"(,"resources":{"limits":{"hugepages-2Mi":"3Mi","memory":"1Gi"}})"),
       invalid("Pod", {{{"FieldValueInvalid", "spec.containers[0].resources.limits[hugepages-2Mi]",
                         "Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi"},
                        {"FieldValueInvalid", "spec.containers[0].resources.requests[hugepages-2Mi]",
                         "Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi"}}})},
      {"affinity: weights and a pod affinity term's topologyKey", "pods",
       one("",
           R"("affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":0,"preference":{}}]},
                  "podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"zone"},{"topologyKey":""}]}},)"),
       invalid(
           "Pod",
           {{{"FieldValueInvalid",
              "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
              "Invalid value: 0: must be in the range 1-100"},
             {"FieldValueRequired",
              "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey",
              "Required value: can not be empty"},
             {"FieldValueInvalid",
              "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey",
              "Invalid value: \"\": name part must be non-empty"},
             {"FieldValueInvalid",
              "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey",
              "Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
              "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
              "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"}}})},
      {"an ephemeral container's ports, then the create's refusal", "pods",
       one("", R"("ephemeralContainers":[{"name":"e","image":"b","ports":[{"containerPort":80}]}],)"),
       invalid("Pod", {{{"FieldValueForbidden", "spec.ephemeralContainers[0].ports",
                         "Forbidden: cannot be set for an Ephemeral Container"},
                        {"FieldValueForbidden", "spec.ephemeralContainers", "Forbidden: cannot be set on create"}}})},
      {"a template's bad port, with the template's path", "deployments",
       R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"v"},"spec":{"selector":{"matchLabels":{"a":"b"}},
           "template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"b","ports":[{"containerPort":0}]}]}}}})",
       invalid("Deployment.apps", {{{"FieldValueRequired", "spec.template.spec.containers[0].ports[0].containerPort",
                                     "Required value"}}})},
  };
  for (const auto& r : rows) {
    CAPTURE(r.what);
    const std::string path = r.path == "pods" ? "/api/v1/namespaces/default/pods?dryRun=All"
                                              : "/apis/apps/v1/namespaces/default/deployments?dryRun=All";
    CHECK(status_of(f.call("POST", path, r.body)) == r.expected);
  }
}

TEST_CASE("pod spec values: a fractional extended resource in any notation is a 422, never a crash") {
  Fixture f;
  for (const std::string q : {"0.0005Ki", "1e-1", "1.5e0", "0.1234567890123456789", "0.0000000001", "+0.5"}) {
    CAPTURE(q);
    const std::string body =
        std::string(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"v"},"spec":{"containers":[)") +
        R"({"name":"main","image":"busybox","resources":{"limits":{"example.com/x":")" + q + R"("}}}]}})";
    const auto resp = f.call("POST", "/api/v1/namespaces/default/pods?dryRun=All", body);
    CHECK(resp.status == 422);
    CHECK(resp.body.find("must be an integer") != std::string::npos);
  }
}

TEST_CASE("pod spec values: what v1.32 takes is stored with the defaults its rules rely on") {
  Fixture f;
  const std::string body =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"good"},"spec":{"hostNetwork":true,"containers":[{"name":"main","image":"busybox",
          "ports":[{"containerPort":80}],"livenessProbe":{"httpGet":{"port":"http"}},"startupProbe":{"grpc":{"port":9000}}}],
          "volumes":[{"name":"dflt"}],"tolerations":[{"key":"gpu","operator":"Exists","effect":"NoExecute","tolerationSeconds":60}]}})";
  const auto resp = f.call("POST", "/api/v1/namespaces/default/pods", body);
  REQUIRE(resp.status == 201);
  const auto spec = json::parse(resp.body).at("spec").as_object();
  const auto& c = spec.at("containers").at(0).as_object();
  // SetDefaults_Probe, SetDefaults_HTTPGetAction, the gRPC service, defaultHostNetworkPorts, SetDefaults_Volume.
  CHECK(c.at("livenessProbe") ==
        json::parse(R"({"httpGet":{"port":"http","path":"/","scheme":"HTTP"},"timeoutSeconds":1,
                                                 "periodSeconds":10,"successThreshold":1,"failureThreshold":3})"));
  CHECK(c.at("startupProbe").at("grpc") == json::parse(R"({"port":9000,"service":""})"));
  CHECK(c.at("ports").at(0).at("hostPort") == 80);
  CHECK(spec.at("volumes").at(0) == json::parse(R"({"name":"dflt","emptyDir":{}})"));
}

TEST_CASE("pod spec values: the fields of v1.32's disabled feature gates are dropped, not validated") {
  Fixture f;
  // Golden podvalues, pod "gated": hostUsers, pod-level resources, resource claims, resize policies,
  // image volumes go; a procMount, even an unknown one, becomes Default; 0.0001 cpu becomes 1m.
  const std::string body =
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"gated"},"spec":{"hostUsers":false,"resources":{"limits":{"cpu":"1"}},
          "volumes":[{"name":"img","image":{"reference":"busybox"}}],
          "containers":[{"name":"main","image":"busybox","resizePolicy":[{"resourceName":"cpu","restartPolicy":"NotRequired"}],
                         "securityContext":{"procMount":"Bogus"},"resources":{"requests":{"cpu":"0.0001"}}}]}})";
  const auto resp = f.call("POST", "/api/v1/namespaces/default/pods", body);
  REQUIRE(resp.status == 201);
  const auto spec = json::parse(resp.body).at("spec").as_object();
  CHECK_FALSE(spec.contains("hostUsers"));
  CHECK_FALSE(spec.contains("resources"));
  CHECK_FALSE(spec.contains("volumes"));
  const auto& c = spec.at("containers").at(0).as_object();
  CHECK_FALSE(c.contains("resizePolicy"));
  CHECK(c.at("securityContext").at("procMount") == "Default");
  CHECK(c.at("resources").at("requests").at("cpu") == "1m");
}

TEST_CASE("pod updates: only images, a shorter deadline and added tolerations may change (ValidatePodUpdate)") {
  // Answers of kube-apiserver v1.32.13 (golden podvalues, pod "upd"); Kubernetes appends a go-cmp
  // diff of the two specs to the Forbidden message, which is not reproduced (FIDELITY.md).
  Fixture f;
  REQUIRE(f.call("POST", "/api/v1/namespaces/default/pods",
                 R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"u"},"spec":{"activeDeadlineSeconds":100,
                     "containers":[{"name":"main","image":"busybox","env":[{"name":"A","value":"1"}]}]}})")
              .status == 201);
  auto patch = [&](const std::string& ops) {
    return status_of(f.call("PATCH", "/api/v1/namespaces/default/pods/u", ops, "application/json-patch+json"));
  };
  CHECK(
      patch(R"([{"op":"replace","path":"/spec/containers/0/env/0/value","value":"2"}])") ==
      "422 Invalid Pod \"u\" is invalid: spec: Forbidden: pod updates may not change fields other than "
      "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
      "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
      "previously negative) | FieldValueForbidden spec Forbidden: pod updates may not change fields other than "
      "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
      "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
      "previously negative)");
  CHECK(
      patch(R"([{"op":"replace","path":"/spec/activeDeadlineSeconds","value":200}])") ==
      "422 Invalid Pod \"u\" is invalid: spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to "
      "previous value | FieldValueInvalid spec.activeDeadlineSeconds Invalid value: 200: must be less than or equal to "
      "previous value");
  // An empty image: validation's cause and ValidateContainerUpdates' are both kept; the message says it once.
  CHECK(patch(R"([{"op":"replace","path":"/spec/containers/0/image","value":""}])") ==
        "422 Invalid Pod \"u\" is invalid: spec.containers[0].image: Required value | FieldValueRequired "
        "spec.containers[0].image Required value | FieldValueRequired spec.containers[0].image Required value");
  CHECK(f.call("PATCH", "/api/v1/namespaces/default/pods/u",
               R"([{"op":"replace","path":"/spec/containers/0/image","value":"busybox:1.36"},
                   {"op":"replace","path":"/spec/activeDeadlineSeconds","value":50},
                   {"op":"add","path":"/spec/tolerations/-","value":{"key":"c","operator":"Exists"}}])",
               "application/json-patch+json")
            .status == 200);
}

TEST_CASE("built-in kinds: node podCIDRs, LimitRange bounds, budgets (answers pasted from the oracle)") {
  Fixture f;
  auto post = [&](const std::string& path, const std::string& body) {
    return status_of(f.call("POST", path + "?dryRun=All", body));
  };
  // ValidateNode: each CIDR, then the dual-stack rules (the Internal error names the first bad one).
  CHECK(
      post(
          "/api/v1/nodes",
          R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"spec":{"podCIDRs":["x","10.0.0.0/24","x"]}})") ==
      "422 Invalid Node \"n\" is invalid: [spec.podCIDRs[0]: Invalid value: \"x\": must be a valid CIDR value, (e.g. "
      "10.9.8.0/24 or "
      "2001:db8::/64), spec.podCIDRs[2]: Invalid value: \"x\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
      "2001:db8::/64), "
      "spec.podCIDRs: Internal error: invalid PodCIDRs. failed to check with dual stack with error:invalid CIDR[0]: "
      "<nil> (invalid "
      "CIDR address: x), spec.podCIDRs: Invalid value: []string{\"x\", \"10.0.0.0/24\", \"x\"}: may specify no more "
      "than one CIDR "
      "for each IP family, spec.podCIDRs[2]: Duplicate value: \"x\"]"
      " | FieldValueInvalid spec.podCIDRs[0] Invalid value: \"x\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
      "2001:db8::/64)"
      " | FieldValueInvalid spec.podCIDRs[2] Invalid value: \"x\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
      "2001:db8::/64)"
      " | InternalError spec.podCIDRs Internal error: invalid PodCIDRs. failed to check with dual stack with "
      "error:invalid CIDR[0]: "
      "<nil> (invalid CIDR address: x)"
      " | FieldValueInvalid spec.podCIDRs Invalid value: []string{\"x\", \"10.0.0.0/24\", \"x\"}: may specify no more "
      "than one CIDR "
      "for each IP family"
      " | FieldValueDuplicate spec.podCIDRs[2] Duplicate value: \"x\"");
  // podCIDR wins over a podCIDRs starting elsewhere; once set, neither changes.
  auto created = f.call(
      "POST", "/api/v1/nodes",
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"spec":{"podCIDR":"10.0.0.0/24","podCIDRs":["10.1.0.0/24","fd00::/64"],"providerID":"p"}})");
  REQUIRE(created.status == 201);
  const auto spec = json::parse(created.body).at("spec").as_object();
  CHECK(json::serialize(spec.at("podCIDRs")) == R"(["10.0.0.0/24"])");
  CHECK(spec.at("podCIDR") == "10.0.0.0/24");
  auto patch = [&](const std::string& body) {
    return f.call("PATCH", "/api/v1/nodes/n1", body, "application/merge-patch+json");
  };
  CHECK(status_of(patch(R"({"spec":{"podCIDRs":["10.0.0.0/24","fd00::/64"],"providerID":"q"}})")) ==
        "422 Invalid Node \"n1\" is invalid: [spec.podCIDRs: Forbidden: node updates may not change podCIDR except "
        "from \"\" to valid, "
        "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid]"
        " | FieldValueForbidden spec.podCIDRs Forbidden: node updates may not change podCIDR except from \"\" to valid"
        " | FieldValueForbidden spec.providerID Forbidden: node updates may not change providerID except from \"\" to "
        "valid");
  CHECK(patch(R"({"spec":{"unschedulable":true}})").status == 200);

  // ValidateLimitRange: the Quantity printed as Go's %#v, after Cmp made it an inf.Dec.
  const std::string lr = post(
      "/api/v1/namespaces/default/limitranges",
      R"({"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr"},"spec":{"limits":[{"type":"Container","min":{"memory":"2Gi"},"max":{"memory":"1.5Gi"}}]}})");
  CHECK(lr.find(" | FieldValueInvalid spec.limits[0].min[memory] Invalid value: "
                "resource.Quantity{i:resource.int64Amount{value:0, "
                "scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(0xc000000000)}, s:\"2Gi\", Format:\"BinarySI\"}: min "
                "value 2Gi is "
                "greater than max value 1536Mi") != std::string::npos);
  CHECK(
      post(
          "/api/v1/namespaces/default/limitranges",
          R"({"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr"},"spec":{"limits":[{"type":"Container","min":{"cpu":"1"},"max":{"cpu":"2"},"maxLimitRequestRatio":{"cpu":"3"}}]}})")
          .ends_with(" | FieldValueInvalid spec.limits[0].maxLimitRequestRatio[cpu] Invalid value: "
                     "resource.Quantity{i:resource.int64Amount{"
                     "value:3, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"3\", Format:\"DecimalSI\"}: "
                     "ratio 3 is greater "
                     "than max/min = 2.000000"));
  // ValidatePodDisruptionBudgetSpec: not both bounds; percents up to 100%.
  const std::string both = post(
      "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
      R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"b"},"spec":{"minAvailable":1,"maxUnavailable":"150%"}})");
  CHECK(both.find(" | FieldValueInvalid spec Invalid value: "
                  "policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0xc000000000), "
                  "Selector:(*v1.LabelSelector)(nil), MaxUnavailable:(*intstr.IntOrString)(0xc000000000), "
                  "UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(nil)}: minAvailable and "
                  "maxUnavailable cannot be both "
                  "set | FieldValueInvalid spec.maxUnavailable Invalid value: intstr.IntOrString{Type:1, IntVal:0, "
                  "StrVal:\"150%\"}: must "
                  "not be greater than 100%") != std::string::npos);
}

TEST_CASE("cluster kinds: a budget's metadata after its spec, classes, RBAC, volumes, endpoints (oracle's answers)") {
  // rest.BeforeCreate checks a PodDisruptionBudget's metadata (path-segment names) only once its
  // spec passes; ValidateStorageClass's topologies (an empty term is a duplicate of the nil maps
  // its list starts with); ValidatePriorityClass's metadata; ValidateRBACName, the roleRef and
  // subjects; a ClusterRole's aggregation selectors; ValidatePersistentVolumeSpec (its sources'
  // PV variants, a capacity's ResourceList shown with %#v) and checkMountOption; Endpoints' subsets
  // and an EndpointSlice's addresses by type, hints and ports.
  Fixture f;
  struct Row {
    std::string path, body, expected;
  };
  const Row
      rows
          [] =
              {
                  {"/apis/policy/v1/namespaces/default/poddisruptionbudgets",
                   R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"A.b","generateName":"x/","labels":{"a":"-"}},"spec":{"minAvailable":1}})",
                   R"(422 Invalid PodDisruptionBudget.policy "A.b" is invalid: [metadata.generateName: Invalid value: "x/": may not contain '/', metadata.labels: Invalid value: "-": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')] | FieldValueInvalid metadata.generateName Invalid value: "x/": may not contain '/' | FieldValueInvalid metadata.labels Invalid value: "-": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'))"},
                  {"/apis/policy/v1/namespaces/default/poddisruptionbudgets",
                   R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"a/b"},"spec":{"minAvailable":-1}})",
                   R"(422 Invalid PodDisruptionBudget.policy "a/b" is invalid: spec.minAvailable: Invalid value: -1: must be greater than or equal to 0 | FieldValueInvalid spec.minAvailable Invalid value: -1: must be greater than or equal to 0)"},
                  {"/apis/storage.k8s.io/v1/storageclasses",
                   R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"s"},"provisioner":"Example.com/X_","parameters":{"":"v"},"reclaimPolicy":"","allowedTopologies":[{},{"matchLabelExpressions":[{"key":"z","values":["a","a"]},{"key":"z","values":["b"]}]},{"matchLabelExpressions":[{"key":"z","values":["b"]}]}]})", R"(422 Invalid StorageClass.storage.k8s.io "s" is invalid: [provisioner: Invalid value: "example.com/x_": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), parameters: Invalid value: "": field can not be empty., allowedTopologies[0].matchLabelExpressions: Duplicate value: "", allowedTopologies[1].matchLabelExpressions[0].values[1]: Duplicate value: "a", allowedTopologies[1].matchLabelExpressions[1].key: Duplicate value: "z", allowedTopologies[2].matchLabelExpressions: Duplicate value: ""] | FieldValueInvalid provisioner Invalid value: "example.com/x_": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') | FieldValueInvalid parameters Invalid value: "": field can not be empty. | FieldValueDuplicate allowedTopologies[0].matchLabelExpressions Duplicate value: "" | FieldValueDuplicate allowedTopologies[0].matchLabelExpressions Duplicate value: "" | FieldValueDuplicate allowedTopologies[0].matchLabelExpressions Duplicate value: "" | FieldValueDuplicate allowedTopologies[1].matchLabelExpressions[0].values[1] Duplicate value: "a" | FieldValueDuplicate allowedTopologies[1].matchLabelExpressions[1].key Duplicate value: "z" | FieldValueDuplicate allowedTopologies[2].matchLabelExpressions Duplicate value: "")"},
                  {"/apis/scheduling.k8s.io/v1/priorityclasses",
                   R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"system-x","labels":{"a":"-"}},"preemptionPolicy":""})",
                   R"(422 Invalid PriorityClass.scheduling.k8s.io "system-x" is invalid: [metadata.labels: Invalid value: "-": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'), metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-x is not a known system priority class, preemptionPolicy: Required value] | FieldValueInvalid metadata.labels Invalid value: "-": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?') | FieldValueForbidden metadata.name Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-x is not a known system priority class | FieldValueRequired preemptionPolicy Required value)"},
                  {"/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                   R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":".."},"roleRef":{"apiGroup":"x","kind":"Role","name":"a%b"},"subjects":[{"kind":"ServiceAccount","name":"A","apiGroup":"rbac.authorization.k8s.io"},{"kind":"User","name":"u","apiGroup":"x"}]})", R"(422 Invalid RoleBinding.rbac.authorization.k8s.io ".." is invalid: [metadata.name: Invalid value: "..": may not be '..', roleRef.apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io", roleRef.name: Invalid value: "a%b": may not contain '%', subjects[0].name: Invalid value: "A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: "", subjects[1].apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"] | FieldValueInvalid metadata.name Invalid value: "..": may not be '..' | FieldValueNotSupported roleRef.apiGroup Unsupported value: "x": supported values: "rbac.authorization.k8s.io" | FieldValueInvalid roleRef.name Invalid value: "a%b": may not contain '%' | FieldValueInvalid subjects[0].name Invalid value: "A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') | FieldValueNotSupported subjects[0].apiGroup Unsupported value: "rbac.authorization.k8s.io": supported values: "" | FieldValueNotSupported subjects[1].apiGroup Unsupported value: "x": supported values: "rbac.authorization.k8s.io")"},
                  {"/apis/rbac.authorization.k8s.io/v1/clusterroles",
                   R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"c"},"rules":[{"verbs":["get"],"nonResourceURLs":["/x"],"resources":["pods"]}],"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"a":"-"}}]}})", R"(422 Invalid ClusterRole.rbac.authorization.k8s.io "c" is invalid: [rules[0].nonResourceURLs: Invalid value: []string{"/x"}: rules cannot apply to both regular resources and non-resource URLs, aggregationRule.clusterRoleSelectors[0].matchLabels: Invalid value: "-": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'), aggregationRule.clusterRoleSelectors[0]: Invalid value: "null": invalid label selector.] | FieldValueInvalid rules[0].nonResourceURLs Invalid value: []string{"/x"}: rules cannot apply to both regular resources and non-resource URLs | FieldValueInvalid aggregationRule.clusterRoleSelectors[0].matchLabels Invalid value: "-": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?') | FieldValueInvalid aggregationRule.clusterRoleSelectors[0] Invalid value: "null": invalid label selector.)"},
                  {"/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
                   R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r"},"rules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]})",
                   R"(422 Invalid Role.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid value: []string{"/x"}: namespaced rules cannot apply to non-resource URLs | FieldValueInvalid rules[0].nonResourceURLs Invalid value: []string{"/x"}: namespaced rules cannot apply to non-resource URLs)"},
                  {"/api/v1/persistentvolumes",
                   R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"p","annotations":{"volume.beta.kubernetes.io/mount-options":"x"}},"spec":{"accessModes":["ReadWriteOncePod","ReadOnlyMany","X"],"capacity":{"storage":"-1.5","cpu":"1"},"persistentVolumeReclaimPolicy":"Recycle","hostPath":{"path":"/a/.."},"local":{"path":"../x"},"flexVolume":{"driver":""},"storageClassName":"A","volumeMode":"x"}})",
                   R"(422 Invalid PersistentVolume "p" is invalid: [spec.accessModes: Unsupported value: "X": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod", spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes, spec.capacity: Unsupported value: core.ResourceList{"cpu":resource.Quantity{i:resource.int64Amount{value:1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"1", Format:"DecimalSI"}, "storage":resource.Quantity{i:resource.int64Amount{value:-15, scale:-1}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"", Format:"DecimalSI"}}: supported values: "storage", spec.capacity[storage]: Invalid value: -2: must be a valid resource quantity, spec.capacity[storage]: Invalid value: "-1500m": must be greater than zero, spec.hostPath.path: Invalid value: "/a/..": must not contain '..', spec.flexVolume.driver: Required value, spec.local: Forbidden: may not specify more than 1 volume type, spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/', spec.storageClassName: Invalid value: "A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), spec.volumeMode: Unsupported value: "x": supported values: "Block", "Filesystem", metadata.annotations.volume.beta.kubernetes.io/mount-options: Forbidden: may not specify mount options for this volume type] | FieldValueNotSupported spec.accessModes Unsupported value: "X": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod" | FieldValueForbidden spec.accessModes Forbidden: may not use ReadWriteOncePod with other access modes | FieldValueNotSupported spec.capacity Unsupported value: core.ResourceList{"cpu":resource.Quantity{i:resource.int64Amount{value:1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"1", Format:"DecimalSI"}, "storage":resource.Quantity{i:resource.int64Amount{value:-15, scale:-1}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"", Format:"DecimalSI"}}: supported values: "storage" | FieldValueInvalid spec.capacity[storage] Invalid value: -2: must be a valid resource quantity | FieldValueInvalid spec.capacity[storage] Invalid value: "-1500m": must be greater than zero | FieldValueInvalid spec.hostPath.path Invalid value: "/a/..": must not contain '..' | FieldValueRequired spec.flexVolume.driver Required value | FieldValueForbidden spec.local Forbidden: may not specify more than 1 volume type | FieldValueForbidden spec.persistentVolumeReclaimPolicy Forbidden: may not be 'recycle' for a hostPath mount of '/' | FieldValueInvalid spec.storageClassName Invalid value: "A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') | FieldValueNotSupported spec.volumeMode Unsupported value: "x": supported values: "Block", "Filesystem" | FieldValueForbidden metadata.annotations.volume.beta.kubernetes.io/mount-options Forbidden: may not specify mount options for this volume type)"},
                  {"/api/v1/persistentvolumes",
                   R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"p"},"spec":{"accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"},"local":{"path":"/mnt/ssd"},"nodeAffinity":{}}})",
                   R"(422 Invalid PersistentVolume "p" is invalid: spec.nodeAffinity.required: Required value: must specify required node constraints | FieldValueRequired spec.nodeAffinity.required Required value: must specify required node constraints)"},
                  {"/api/v1/persistentvolumes",
                   R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"p"},"spec":{"accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"},"iscsi":{"targetPortal":"10.0.0.1:3260","iqn":"foo","lun":300,"initiatorName":"bar","chapAuthSession":true},"csi":{"driver":"x"}}})",
                   R"(422 Invalid PersistentVolume "p" is invalid: [spec.iscsi.iqn: Invalid value: "foo": must be valid format, spec.iscsi.lun: Invalid value: 300: must be between 0 and 255, inclusive, spec.iscsi.secretRef: Required value, spec.iscsi.initiatorname: Invalid value: "bar": must be valid format, spec.csi: Forbidden: may not specify more than 1 volume type] | FieldValueInvalid spec.iscsi.iqn Invalid value: "foo": must be valid format | FieldValueInvalid spec.iscsi.lun Invalid value: 300: must be between 0 and 255, inclusive | FieldValueRequired spec.iscsi.secretRef Required value | FieldValueInvalid spec.iscsi.initiatorname Invalid value: "bar": must be valid format | FieldValueForbidden spec.csi Forbidden: may not specify more than 1 volume type)"},
                  {"/api/v1/persistentvolumes",
                   R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"p"},"spec":{"accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"},"csi":{"driver":"Driver_X","nodePublishSecretRef":{"name":"A"},"controllerExpandSecretRef":{"namespace":"a.b"}}}})",
                   R"(422 Invalid PersistentVolume "p" is invalid: [spec.csi.driver: Invalid value: "Driver_X": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), spec.csi.volumeHandle: Required value, spec.csi.controllerExpandSecretRef.name: Required value, spec.csi.controllerExpandSecretRef.namespace: Invalid value: "a.b": must not contain dots, spec.csi.nodePublishSecretRef.name: Invalid value: "A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), spec.csi.nodePublishSecretRef.namespace: Required value] | FieldValueInvalid spec.csi.driver Invalid value: "Driver_X": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') | FieldValueRequired spec.csi.volumeHandle Required value | FieldValueRequired spec.csi.controllerExpandSecretRef.name Required value | FieldValueInvalid spec.csi.controllerExpandSecretRef.namespace Invalid value: "a.b": must not contain dots | FieldValueInvalid spec.csi.nodePublishSecretRef.name Invalid value: "A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') | FieldValueRequired spec.csi.nodePublishSecretRef.namespace Required value)"},
                  {"/api/v1/persistentvolumes",
                   R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"p"},"spec":{"accessModes":["ReadWriteOnce"],"capacity":{},"persistentVolumeReclaimPolicy":"Recycle","cephfs":{"monitors":["m"]},"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"beta.kubernetes.io/arch","operator":"In","values":["amd64"]}]}]}}}})", R"(422 Invalid PersistentVolume "p" is invalid: [spec.capacity: Required value, spec.capacity: Unsupported value: core.ResourceList{}: supported values: "storage"] | FieldValueRequired spec.capacity Required value | FieldValueNotSupported spec.capacity Unsupported value: core.ResourceList{}: supported values: "storage")"},
                  {"/api/v1/namespaces/default/endpoints",
                   R"({"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"e"},"subsets":[{"addresses":[{"ip":"127.0.0.1","hostname":"A","nodeName":"N_1"}],"notReadyAddresses":[{"ip":"x"}],"ports":[{"port":0,"protocol":"x"},{"name":"b","port":1,"appProtocol":"a/b/c"}]},{"ports":[{"port":80}]}]})",
                   R"(422 Invalid Endpoints "e" is invalid: [subsets[0].addresses[0].hostname: Invalid value: "A": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'), subsets[0].addresses[0].nodeName: Invalid value: "N_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128), subsets[0].notReadyAddresses[0].ip: Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff), subsets[0].notReadyAddresses[0].ip: Invalid value: "x": must be a valid IP address, subsets[0].ports[0].name: Required value, subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, subsets[0].ports[0].protocol: Unsupported value: "x": supported values: "SCTP", "TCP", "UDP", subsets[0].ports[1].appProtocol: Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName'), subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`] | FieldValueInvalid subsets[0].addresses[0].hostname Invalid value: "A": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?') | FieldValueInvalid subsets[0].addresses[0].nodeName Invalid value: "N_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') | FieldValueInvalid subsets[0].addresses[0].ip Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128) | FieldValueInvalid subsets[0].notReadyAddresses[0].ip Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff) | FieldValueInvalid subsets[0].notReadyAddresses[0].ip Invalid value: "x": must be a valid IP address | FieldValueRequired subsets[0].ports[0].name Required value | FieldValueInvalid subsets[0].ports[0].port Invalid value: 0: must be between 1 and 65535, inclusive | FieldValueNotSupported subsets[0].ports[0].protocol Unsupported value: "x": supported values: "SCTP", "TCP", "UDP" | FieldValueInvalid subsets[0].ports[1].appProtocol Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName') | FieldValueRequired subsets[1] Required value: must specify `addresses` or `notReadyAddresses`)"},
                  {"/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
                   R"({"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s"},"addressType":"IPv4","endpoints":[{"addresses":["::1","169.254.0.1"],"nodeName":"A","hostname":"h.x","hints":{"forZones":[{"name":"a"},{"name":"a"}]}},{"addresses":[]}],"ports":[{"protocol":""},{"name":"","appProtocol":"é"}]})", R"(422 Invalid EndpointSlice.discovery.k8s.io "s" is invalid: [endpoints[0].addresses[0]: Invalid value: "::1": must be a valid IPv4 address, endpoints[0].addresses[0]: Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128), endpoints[0].addresses[1]: Invalid value: "169.254.0.1": may not be in the link-local range (169.254.0.0/16, fe80::/10), endpoints[0].nodeName: Invalid value: "A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), endpoints[0].hostname: Invalid value: "h.x": must not contain dots, endpoints[0].hints.forZones[1].name: Duplicate value: "a", endpoints[1].addresses: Required value: must contain at least 1 address, ports[0].protocol: Unsupported value: "": supported values: "SCTP", "TCP", "UDP", ports[1].name: Duplicate value: "", ports[1].appProtocol: Invalid value: "é": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')] | FieldValueInvalid endpoints[0].addresses[0] Invalid value: "::1": must be a valid IPv4 address | FieldValueInvalid endpoints[0].addresses[0] Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128) | FieldValueInvalid endpoints[0].addresses[1] Invalid value: "169.254.0.1": may not be in the link-local range (169.254.0.0/16, fe80::/10) | FieldValueInvalid endpoints[0].nodeName Invalid value: "A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') | FieldValueInvalid endpoints[0].hostname Invalid value: "h.x": must not contain dots | FieldValueDuplicate endpoints[0].hints.forZones[1].name Duplicate value: "a" | FieldValueRequired endpoints[1].addresses Required value: must contain at least 1 address | FieldValueNotSupported ports[0].protocol Unsupported value: "": supported values: "SCTP", "TCP", "UDP" | FieldValueDuplicate ports[1].name Duplicate value: "" | FieldValueInvalid ports[1].appProtocol Invalid value: "é": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'))"},
                  {"/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
                   R"({"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s"},"addressType":"FQDN","endpoints":[{"addresses":["a.example.com.","x","A_B.c",""]}]})", R"(422 Invalid EndpointSlice.discovery.k8s.io "s" is invalid: [endpoints[0].addresses[1]: Invalid value: "x": should be a domain with at least two segments separated by dots, endpoints[0].addresses[2]: Invalid value: "A_B.c": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), endpoints[0].addresses[3]: Required value] | FieldValueInvalid endpoints[0].addresses[1] Invalid value: "x": should be a domain with at least two segments separated by dots | FieldValueInvalid endpoints[0].addresses[2] Invalid value: "A_B.c": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') | FieldValueRequired endpoints[0].addresses[3] Required value)"},
              };
  for (const auto& row : rows) {
    CAPTURE(row.body);
    CHECK(status_of(f.call("POST", row.path + "?dryRun=All", row.body)) == row.expected);
  }
}

TEST_CASE("pod spec values: volume sources, windowsOptions and annotations against the fields") {
  Fixture f;
  auto pod = [](const std::string& annotations, const std::string& spec) {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"v","annotations":)" + annotations + R"(},"spec":)" +
           spec + "}";
  };
  auto post = [&](const std::string& body) {
    return f.call("POST", "/api/v1/namespaces/default/pods?dryRun=All", body);
  };
  const std::string c = R"({"name":"main","image":"busybox"})";
  auto has = [](const Response& r, const std::string& cause) {
    CAPTURE(r.body);
    return status_of(r).find(" | " + cause) != std::string::npos;
  };
  const auto vols =
      post(pod("{}", R"({"containers":[)" + c +
                         R"(],"volumes":[{"name":"g","gcePersistentDisk":{"partition":256}},)"
                         R"({"name":"i","iscsi":{"targetPortal":"t","iqn":"eui.123"}},{"name":"e","ephemeral":{}}]})"));
  CHECK(vols.status == 422);
  CHECK(has(vols, "FieldValueRequired spec.volumes[0].persistentDisk.pdName Required value"));
  CHECK(has(vols,
            "FieldValueInvalid spec.volumes[0].persistentDisk.partition Invalid value: 256: must be between 1 and 255, "
            "inclusive"));
  CHECK(has(vols, "FieldValueInvalid spec.volumes[1].iscsi.iqn Invalid value: \"eui.123\": must be valid format"));
  CHECK(has(vols, "FieldValueRequired spec.volumes[2].ephemeral.volumeClaimTemplate Required value"));
  const auto win = post(pod(
      "{}",
      R"({"containers":[{"name":"main","image":"busybox","securityContext":{"windowsOptions":{"runAsUserName":"a\\b\\c","hostProcess":true}}}]})"));
  CHECK(has(win,
            "FieldValueInvalid spec.containers[0].securityContext.windowsOptions.runAsUserName Invalid value: "
            "\"a\\\\b\\\\c\": "
            "runAsUserName cannot contain more than one backslash"));
  CHECK(has(win,
            "FieldValueInvalid spec.hostNetwork Invalid value: false: hostNetwork must be true if pod contains any "
            "hostProcess containers"));
  const auto mismatch = post(pod(
      R"({"container.seccomp.security.alpha.kubernetes.io/main":"unconfined"})",
      R"({"containers":[{"name":"main","image":"busybox","securityContext":{"seccompProfile":{"type":"RuntimeDefault"}}}]})"));
  CHECK(has(mismatch,
            "FieldValueForbidden spec.containers[0].securityContext.seccompProfile.type Forbidden: seccomp type in "
            "annotation and field must match"));
  const auto tol =
      post(pod(R"({"scheduler.alpha.kubernetes.io/tolerations":"[{\"key\":1}]"})", R"({"containers":[)" + c + "]}"));
  CHECK(has(tol,
            "FieldValueInvalid metadata.annotations Invalid value: \"scheduler.alpha.kubernetes.io/tolerations\": "
            "json: cannot "
            "unmarshal number into Go struct field Toleration.Key of type string"));
  // applyAppArmorVersionSkew: an annotation becomes the container's field.
  const auto skew = post(
      pod(R"({"container.apparmor.security.beta.kubernetes.io/main":"localhost/x"})", R"({"containers":[)" + c + "]}"));
  REQUIRE(skew.status == 201);
  CHECK(json::serialize(json::parse(skew.body).at("spec").at("containers").at(0).at("securityContext")) ==
        R"({"appArmorProfile":{"type":"Localhost","localhostProfile":"x"}})");
}
