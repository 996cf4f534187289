// Decoding by Kubernetes' published schemas (embedded/schema.hpp): field types, unknown fields
// under each fieldValidation, the /openapi/v3 documents — and every object gpupool renders decodes
// without an unknown field (a real API server would drop it and warn).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "api_fixture.hpp"
#include "common/json_depth.hpp"
#include "embedded/api.hpp"
#include "embedded/schema.hpp"
#include "embedded/typecheck.hpp"
#include "golden_manifests.hpp"
#include "gpupool/manifest.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace gpupool;
using namespace gpupool::embedded;
namespace json = boost::json;

namespace {

schema::Decoded decode(std::string_view group, std::string_view kind, std::string_view text, bool prune = false) {
  auto obj = json::parse(text).as_object();
  return schema::decode(group, "v1", kind, obj, prune);
}

std::pair<std::string, std::string> group_version(const json::object& o) {
  const std::string api = std::string(o.at("apiVersion").as_string());
  const auto slash = api.find('/');
  return slash == std::string::npos ? std::pair{std::string(), api}
                                    : std::pair{api.substr(0, slash), api.substr(slash + 1)};
}

// Every pod template inside a Kubeflow job (spec.<x>ReplicaSpecs.<role>.template).
void pod_templates(const json::value& v, std::vector<json::object>& out) {
  if (v.is_object()) {
    for (const auto& [k, c] : v.as_object()) {
      if (k == "template" && c.is_object()) {
        json::object pod{{"apiVersion", "v1"}, {"kind", "Pod"}};
        for (const char* f : {"metadata", "spec"})
          if (const auto* x = c.as_object().if_contains(f)) pod[f] = *x;
        out.push_back(std::move(pod));
      } else {
        pod_templates(c, out);
      }
    }
  } else if (v.is_array()) {
    for (const auto& c : v.as_array()) pod_templates(c, out);
  }
}

}  // namespace

TEST_CASE("schema decoding: the Go decoder's type errors, from the published schema of any built-in kind") {
  CHECK(decode("apps", "Deployment", R"({"spec":{"replicas":"x"}})").type_error ==
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32");
  // Kinds the hand-written tables never covered.
  CHECK(decode("scheduling.k8s.io", "PriorityClass", R"({"value":"high"})").type_error ==
        "json: cannot unmarshal string into Go struct field PriorityClass.value of type int32");
  CHECK(decode("", "Pod", R"({"spec":{"containers":{"name":"c"}}})").type_error ==
        "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container");
  CHECK(
      decode("", "Pod", R"({"spec":{"containers":[{"name":"c","ports":[{"containerPort":"eighty"}]}]}})").type_error ==
      "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type "
      "int32");
  CHECK(decode("", "ConfigMap", R"({"data":{"a":1}})").type_error ==
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string");
  CHECK(decode("", "Pod", R"({"spec":{"priority":3000000000}})").type_error ==
        "json: cannot unmarshal number 3000000000 into Go struct field PodSpec.spec.priority of type int32");
  // The first misfit in document order wins; types that decode themselves take any value.
  CHECK(decode("apps", "Deployment", R"({"spec":{"paused":1,"replicas":"x"}})").misfit_go_type == "bool");
  CHECK_FALSE(
      decode("", "Pod", R"({"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":2}}}]}})").type_error);
  CHECK_FALSE(decode("", "Service", R"({"spec":{"ports":[{"port":80,"targetPort":"http"}]}})").type_error);
  CHECK_FALSE(decode("", "Pod", R"({"spec":{"containers":null}})").type_error);
}

TEST_CASE("schema decoding: a quantity that does not parse stops decoding (400, as the oracle answers)") {
  // kubectl create of a pod requesting memory "lots" on kube-apiserver v1.32.13: BadRequest `Pod in
  // version "v1" cannot be handled as a Pod: quantities must match the regular expression ...`.
  const auto d = decode("", "Pod", R"({"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":"lots"}}}],
                                        "priority":"x"}})");
  CHECK(d.decode_error ==
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  CHECK_FALSE(d.type_error);  // decoding stopped before spec.priority
  CHECK(decode("", "Pod", R"({"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":{"a":1}}}}]}})")
            .decode_error.has_value());
  // A bare number and null are quantities too.
  CHECK_FALSE(
      decode("", "Pod", R"({"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":1.5,"memory":null}}}]}})")
          .decode_error);
  // Fields set to null are Go's zero value, so validation sees them as absent (a top-level string
  // without omitempty, as the provisioner, is then written "").
  auto sc = json::parse(R"({"metadata":{"name":"s"},"provisioner":null,"parameters":{"a":"b"}})").as_object();
  schema::decode("storage.k8s.io", "v1", "StorageClass", sc, true);
  CHECK(json::serialize(sc) == R"({"metadata":{"name":"s"},"parameters":{"a":"b"},"provisioner":""})");
}

TEST_CASE("schema decoding: Time and MicroTime are stored in UTC as MarshalJSON writes them, any year") {
  // metav1.Time: t.UTC().Format(RFC3339), the fraction dropped; MicroTime: RFC3339Micro. (Lease and
  // Event values recorded from kube-apiserver v1.32.13: scenario `lease`.) Years outside the
  // nanosecond clock's 1678-2262 stay what they are.
  struct Case {
    const char* in;
    const char* time;
    const char* micro;
  };
  for (const Case& c :
       {Case{"2026-01-01T01:00:05.500000+01:00", "2026-01-01T00:00:05Z", "2026-01-01T00:00:05.500000Z"},
        Case{"0001-01-01T00:00:00.000000Z", "0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z"},
        Case{"9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999999Z"},
        Case{"2024-03-01T00:30:00.000001-01:00", "2024-03-01T01:30:00Z", "2024-03-01T01:30:00.000001Z"}}) {
    CAPTURE(c.in);
    auto lease =
        json::parse(fmt::format(R"({{"metadata":{{"name":"l"}},"spec":{{"renewTime":"{}"}}}})", c.in)).as_object();
    schema::decode("coordination.k8s.io", "v1", "Lease", lease, true);
    CHECK(lease.at("spec").at("renewTime") == c.micro);
    std::string t(c.in);
    t.erase(t.find('.'), 7);  // RFC3339 (a Time takes a fraction too: dropped)
    auto ev =
        json::parse(fmt::format(R"({{"metadata":{{"name":"e"}},"firstTimestamp":"{}","lastTimestamp":"{}"}})", t, c.in))
            .as_object();
    schema::decode("", "v1", "Event", ev, true);
    CHECK(ev.at("firstTimestamp") == c.time);
    CHECK(ev.at("lastTimestamp") == c.time);
  }
}

TEST_CASE("stored objects: empty lists and maps of fields without omitempty read back null, as from protobuf") {
  // kube-apiserver v1.32.13 answers `"rules": null` for a Role created with `rules: []`, and a
  // StatefulSet's template `"containers": null` (scenario `smpkinds`, fuzz case of seed 2701).
  auto role =
      json::parse(R"({"metadata":{"name":"r","labels":{}},"rules":[{"verbs":["get"],"apiGroups":[]}]})").as_object();
  schema::omit_empty("rbac.authorization.k8s.io", "v1", "Role", role);
  schema::nil_empty_collections("rbac.authorization.k8s.io", "v1", "Role", role);
  CHECK(json::serialize(role) == R"({"metadata":{"name":"r"},"rules":[{"verbs":["get"]}]})");
  auto empty = json::parse(R"({"metadata":{"name":"r"},"rules":[]})").as_object();
  schema::nil_empty_collections("rbac.authorization.k8s.io", "v1", "Role", empty);
  CHECK(json::serialize(empty) == R"({"metadata":{"name":"r"},"rules":null})");
  // Deep in a struct, beside an omitempty list (tolerations: kept as [] by this one; omit_empty drops it).
  auto sts =
      json::parse(R"({"spec":{"template":{"spec":{"containers":[],"tolerations":[]}},"replicas":0}})").as_object();
  schema::nil_empty_collections("apps", "v1", "StatefulSet", sts);
  // (spec.selector, a *LabelSelector without omitempty, is absent here: nil, so null too.)
  CHECK(json::serialize(sts) ==
        R"({"spec":{"template":{"spec":{"containers":null,"tolerations":[]}},"replicas":0,"selector":null}})");
  // A pointer to a string without omitempty: an Ingress backend's resource apiGroup.
  auto ing = json::parse(R"({"spec":{"defaultBackend":{"resource":{"kind":"K","name":"n"}}}})").as_object();
  schema::nil_empty_collections("networking.k8s.io", "v1", "Ingress", ing);
  CHECK(json::serialize(ing) == R"({"spec":{"defaultBackend":{"resource":{"kind":"K","name":"n","apiGroup":null}}}})");
  // A kept list that is not empty, a kind with no schema (a custom resource): unchanged.
  auto full = json::parse(R"({"rules":[{"verbs":["get"]}]})").as_object();
  schema::nil_empty_collections("rbac.authorization.k8s.io", "v1", "Role", full);
  CHECK(json::serialize(full) == R"({"rules":[{"verbs":["get"]}]})");
  auto cr = json::parse(R"({"spec":{"items":[]}})").as_object();
  schema::nil_empty_collections("example.com", "v1", "Widget", cr);
  CHECK(json::serialize(cr) == R"({"spec":{"items":[]}})");
}

TEST_CASE("schema decoding: unknown fields are named as sigs.k8s.io/json names them, and pruned") {
  const char* body = R"({"metadata":{"name":"d","bogus":1,"labels":{"any-key":"v"}},
    "spec":{"replica":2,"template":{"spec":{"containers":[{"name":"a"},{"name":"b","imagee":"x",
      "ports":[{"containerPort":80,"hostport":1}]}]}}},"status":{"x":1}})";
  auto d = decode("apps", "Deployment", body);
  CHECK(d.unknown_fields == std::vector<std::string>{"metadata.bogus", "spec.replica",
                                                     "spec.template.spec.containers[1].imagee",
                                                     "spec.template.spec.containers[1].ports[0].hostport", "status.x"});
  auto obj = json::parse(body).as_object();
  schema::decode("apps", "v1", "Deployment", obj, true);
  // (Below the top level, each struct that is no pointer is there once decoded: a container's
  // resources, the template's metadata, the strategy.)
  CHECK(json::serialize(obj) ==
        R"({"metadata":{"name":"d","labels":{"any-key":"v"}},"spec":{"template":{"spec":{"containers":[)"
        R"({"name":"a","resources":{}},{"name":"b","ports":[{"containerPort":80}],"resources":{}}]},"metadata":{}},)"
        R"("strategy":{}},"status":{}})");
  // Free-form fields keep what they hold: annotations, managedFields' FieldsV1, a CRD's schema.
  CHECK(decode("", "Pod", R"({"metadata":{"managedFields":[{"fieldsV1":{"f:spec":{"f:x":{}}}}]}})")
            .unknown_fields.empty());
  CHECK(
      decode(
          "apiextensions.k8s.io", "CustomResourceDefinition",
          R"({"spec":{"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true,
                  "properties":{"spec":{"type":"object","default":{"a":1}}}}}}]}})")
          .unknown_fields.empty());
  // Custom resources have no recorded schema: they decode as they are.
  CHECK_FALSE(schema::known("kubeflow.org", "v1", "TFJob"));
  CHECK(decode("kubeflow.org", "TFJob", R"({"spec":{"anything":1}})").unknown_fields.empty());
}

TEST_CASE("every object gpupool renders decodes without a type error or an unknown field") {
  int objects = 0, templates = 0;
  for (auto& [name, object] : test::rendered_golden_objects()) {
    {
      const std::string file = name;  // (a structured binding cannot be captured by clang 14)
      json::object& obj = object;
      CAPTURE(file);
      CAPTURE(json::serialize(obj));
      const auto [group, version] = group_version(obj);
      std::vector<json::object> to_check;
      if (schema::known(group, version, std::string(obj.at("kind").as_string()))) {
        to_check.push_back(obj);
        ++objects;
      } else {
        pod_templates(obj, to_check);
        templates += static_cast<int>(to_check.size());
      }
      for (auto& o : to_check) {
        const auto [g, v] = group_version(o);
        auto d = schema::decode(g, v, std::string(o.at("kind").as_string()), o, false);
        CHECK_FALSE(d.type_error);
        CHECK(d.unknown_fields.empty());
      }
    }
  }
  // The goldens hold a Deployment, a Job, a Pod, Services and PVCs, and Kubeflow jobs' templates.
  CHECK(objects >= 5);
  CHECK(templates >= 6);
}

TEST_CASE("fieldValidation: Strict refuses unknown fields, Warn warns, Ignore drops them silently") {
  Clock clock = Clock::manual();
  Store store{clock};
  Api api{store, {}};
  store.create(store.type("", "namespaces"), "", json::object{{"metadata", json::object{{"name", "a"}}}});
  auto create = [&](const std::string& name, const std::string& fv) {
    Request r = testing::admin_request(
        "POST", "/api/v1/namespaces/a/configmaps",
        R"({"metadata":{"name":")" + name + R"(","colour":"red"},"data":{"k":"v"},"extra":1})", "application/json",
        /*accept=*/"");
    if (!fv.empty()) r.query.emplace("fieldValidation", fv);
    auto resp = api.handle(r);
    return std::pair{resp, r.warnings};
  };
  auto [strict, w1] = create("s", "Strict");
  CHECK(strict.status == 400);
  CHECK(json::parse(strict.body).at("message") ==
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field "
        "\"metadata.colour\", unknown field \"extra\"");
  CHECK(w1.empty());
  CHECK_FALSE(store.find(store.type("", "configmaps"), "a", "s"));

  auto [warn, w2] = create("w", "");  // no directive: Warn
  CHECK(warn.status == 201);
  CHECK(w2 == std::vector<std::string>{"unknown field \"metadata.colour\"", "unknown field \"extra\""});
  auto stored = store.find(store.type("", "configmaps"), "a", "w");
  REQUIRE(stored);
  CHECK_FALSE(stored->contains("extra"));
  CHECK_FALSE(stored->at("metadata").as_object().contains("colour"));

  auto [ignore, w3] = create("i", "Ignore");
  CHECK(ignore.status == 201);
  CHECK(w3.empty());
  CHECK_FALSE(store.find(store.type("", "configmaps"), "a", "i")->contains("extra"));

  auto [bogus, w4] = create("b", "Bogus");
  CHECK(bogus.status == 422);
  CHECK(json::parse(bogus.body).at("message") ==
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Bogus\": supported values: "
        "\"\", \"Ignore\", \"Strict\", \"Warn\"");
}

TEST_CASE("/openapi/v3 serves the kinds' schemas, which kubectl explain reads") {
  Clock clock = Clock::manual();
  Store store{clock};
  Api api{store, {}};
  Request r = testing::admin_request("GET", "/openapi/v3/apis/apps/v1", "", /*content_type=*/"", /*accept=*/"");
  auto resp = api.handle(r);
  REQUIRE(resp.status == 200);
  const auto doc = json::parse(resp.body).as_object();
  const auto& schemas = doc.at("components").at("schemas").as_object();
  const auto& deployment = schemas.at("io.k8s.api.apps.v1.Deployment").as_object();
  CHECK(deployment.at("x-kubernetes-group-version-kind").at(0).at("kind") == "Deployment");
  CHECK(schemas.at("io.k8s.api.apps.v1.DeploymentSpec").at("properties").at("replicas").at("format") == "int32");
  // The PATCH operations kubectl's field-validation check looks for are still there.
  CHECK(doc.at("paths").as_object().contains("/apis/apps/v1/namespaces/{namespace}/deployments/{name}"));
  // Custom resources: the CRD's schema (the Kubeflow kinds': training-operator's as released).
  r.path = "/openapi/v3/apis/kubeflow.org/v1";
  auto cr = json::parse(api.handle(r).body, {}, deep_json()).as_object();
  const auto& tf = cr.at("components").at("schemas").at("org.kubeflow.v1.TFJob").as_object();
  CHECK(tf.at("properties").at("spec").at("required").at(0) == "tfReplicaSpecs");
  CHECK(tf.at("x-kubernetes-group-version-kind").at(0).at("kind") == "TFJob");
}

TEST_CASE("zero_object: the kind's zero value as Go encodes it (what the field manager compares a create with)") {
  // json.Marshal(appsv1.Deployment{}) and json.Marshal(corev1.Pod{}), v1.32.
  CHECK(json::serialize(schema::zero_object("apps", "v1", "Deployment")) ==
        R"({"metadata":{"creationTimestamp":null},"spec":{"selector":null,"strategy":{},)"
        R"("template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}}},"status":{}})");
  CHECK(json::serialize(schema::zero_object("", "v1", "Pod")) ==
        R"({"metadata":{"creationTimestamp":null},"spec":{"containers":null},"status":{}})");
  CHECK(schema::zero_object("kubeflow.org", "v1", "TFJob").empty());
}

TEST_CASE("a Service without a spec is defaulted without touching freed memory (fuzz_api finding, ASan)") {
  // fuzz/corpus/api/regress-use-after-free-b3fd19df: admission kept a reference to metadata while
  // the defaults inserted spec and status, which rehashed the object (heap-use-after-free under
  // ASan; tests run under it in scripts/sanitize.sh).
  Clock clock = Clock::manual();
  Store store{clock};
  Api api{store, {}};
  store.create(store.type("", "namespaces"), "", json::object{{"metadata", json::object{{"name", "a"}}}});
  auto create = [&](const char* body) {
    return api.handle(
        testing::admin_request("POST", "/api/v1/namespaces/a/services", body, "application/json", /*accept=*/""));
  };
  // Without a spec: defaulted (spec inserted), then refused as kube-apiserver refuses it.
  for (const char* body :
       {R"({"metadata":{"name":"s1"}})", R"({"kind":"Service","apiVersion":"v1","metadata":{"name":"s2"}})"}) {
    CAPTURE(body);
    const auto resp = create(body);
    REQUIRE(resp.status == 422);
    CHECK(json::parse(resp.body).at("message").as_string().ends_with("spec.ports: Required value"));
  }
  for (const char* body : {R"({"metadata":{"name":"s3","labels":{"a":"b"}},"spec":{"ports":[{"port":80}]}})",
                           R"({"metadata":{"name":"s4"},"spec":{"clusterIP":"None"}})"}) {
    CAPTURE(body);
    const auto resp = create(body);
    REQUIRE(resp.status == 201);
    const auto svc = json::parse(resp.body).as_object();
    CHECK(svc.at("spec").at("type") == "ClusterIP");
    CHECK(svc.at("spec").at("clusterIPs").as_array().size() == 1);
  }
}

TEST_CASE("syntax and base64 errors as Go words them (data/go_decode_errors.json, recorded from Go 1.23)") {
  // The patch handler reports encoding/json's syntax errors; the decoder reports encoding/base64's
  // for a []byte field (a Secret's data), as a type error.
  std::ifstream in(std::string(GPUPOOL_SOURCE_DIR) + "/tests/embedded/data/go_decode_errors.json");
  std::stringstream text;
  text << in.rdbuf();
  const json::array items = json::parse(text.str()).as_array();
  REQUIRE(items.size() > 90);
  int checked = 0;
  for (const auto& v : items) {
    const auto& item = v.as_object();
    const std::string want(item.at("error").as_string());
    if (const auto* s = item.if_contains("json")) {
      const std::string input(s->as_string());
      INFO("JSON input: " << json::serialize(*s));
      CHECK(go_json_syntax_error(input).value_or("") == want);
    } else {
      const json::value& input = item.at("base64");
      INFO("base64 input: " << json::serialize(input));
      json::object secret{{"data", json::object{{"k", input}}}};
      const auto d = schema::decode("", "v1", "Secret", secret, false);
      CHECK(d.type_error.value_or("") == want);
    }
    ++checked;
  }
  CHECK(checked == static_cast<int>(items.size()));
}
