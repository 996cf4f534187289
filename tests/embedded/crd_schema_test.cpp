// A custom resource's structural schema (embedded/crd_schema.hpp): pruning, nulls, defaults,
// kube-openapi's validation messages, list types, printer-column JSONPath — and every Kubeflow job
// gpupool renders passes its operator's CRD as released, with no field pruned.
// (The same rules against kubectl and the real server: the fidelity scenario "crd".)
#include <doctest/doctest.h>

#include "common/json_depth.hpp"
#include "embedded/crd_schema.hpp"
#include "golden_manifests.hpp"

using namespace gpupool;
using namespace gpupool::embedded;
namespace json = boost::json;

namespace {

crd::Schema widget_schema() {
  crd::Schema s;
  s.root = std::make_shared<const json::object>(json::parse(R"({"type":"object","properties":{
    "spec":{"type":"object","required":["size"],"properties":{
      "size":{"type":"string","enum":["small","large"]},
      "replicas":{"type":"integer","minimum":0,"maximum":1000000,"default":1},
      "ratio":{"type":"number","maximum":0.00001,"exclusiveMaximum":true},
      "tags":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set"},
      "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name","proto"],
               "items":{"type":"object","properties":{"name":{"type":"string"},"proto":{"type":"string"},
                                                      "port":{"type":"integer","default":80}}}},
      "note":{"type":"string","nullable":true},
      "mode":{"type":"string","default":"fast"},
      "extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"known":{"type":"object"}}},
      "template":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object"}}},
      "owner":{"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"owner is immutable"}]}}},
    "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}})")
                                                    .as_object());
  s.has_validation_rules = true;
  s.spec_replicas_path = ".spec.replicas";
  return s;
}

json::object spec_of(std::string_view spec) {
  return json::object{
      {"apiVersion", "x.io/v1"}, {"kind", "W"}, {"metadata", json::object{{"name", "w"}}}, {"spec", json::parse(spec)}};
}

std::string causes_text(const std::vector<StatusCause>& cs) {
  std::string out;
  for (const auto& c : cs) out += c.field + ": " + c.message + "\n";
  return out;
}

}  // namespace

TEST_CASE("coerce: unknown fields pruned and reported sorted; nulls dropped unless nullable; meta fields kept") {
  const auto s = widget_schema();
  auto obj = spec_of(R"({"size":"small","zz":1,"aa":{"b":1},"note":null,"mode":null,"ports":[{"name":"a","bad":1}],
                         "extra":{"free":1,"known":{"x":1}},"template":{"apiVersion":"v1","kind":"Pod","other":2}})");
  obj["status"] = json::object{{"replicas", 1}, {"foo", 2}};
  obj["unknownTop"] = 1;
  const auto unknown = crd::coerce(obj, s);
  CHECK(unknown == std::vector<std::string>{"spec.aa", "spec.extra.known.x", "spec.ports[0].bad", "spec.template.other",
                                            "spec.zz", "status.foo", "unknownTop"});
  const auto& sp = obj.at("spec").as_object();
  CHECK(sp.contains("note"));                    // nullable: kept
  CHECK(sp.at("mode").is_null());                // not nullable, but it has a default: kept for defaulting
  CHECK(sp.at("extra").at("free") == 1);         // preserved unknown field
  CHECK(sp.at("template").at("kind") == "Pod");  // an embedded resource keeps its meta fields
  CHECK(obj.at("metadata").at("name") == "w");
  crd::apply_defaults(obj, s);
  CHECK(obj.at("spec").at("mode") == "fast");
}

TEST_CASE("apply_defaults: missing and null non-nullable properties get their default at every depth") {
  const auto s = widget_schema();
  auto obj = spec_of(R"({"size":"small","ports":[{"name":"a"},{"name":"b","port":81}]})");
  crd::apply_defaults(obj, s);
  CHECK(obj.at("spec").at("replicas") == 1);
  CHECK(obj.at("spec").at("mode") == "fast");
  CHECK(obj.at("spec").at("ports").at(0).at("port") == 80);
  CHECK(obj.at("spec").at("ports").at(1).at("port") == 81);
}

TEST_CASE("validate: kube-openapi's messages as apiextensions turns them into causes") {
  const auto s = widget_schema();
  struct Row {
    const char* spec;
    const char* want;
  } rows[] = {
      {R"({"size":"small"})", ""},
      {R"({})",
       "spec.size: Required value\n"
       "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; "
       "correct the existing errors to complete validation\n"},
      {R"({"size":"medium"})",
       "spec.size: Unsupported value: \"medium\": supported values: \"small\", \"large\"\n"
       "<nil>: Invalid value: \"null\": some validation rules were not checked because the object "
       "was invalid; correct the existing errors to complete validation\n"},
      // Go prints float64 bounds with %v: 1e+06, 1e-05.
      {R"({"size":"small","replicas":1000001})",
       "spec.replicas: Invalid value: 1000001: spec.replicas in body should be less than or equal to 1e+06\n"},
      {R"({"size":"small","ratio":0.5})",
       "spec.ratio: Invalid value: 0.5: spec.ratio in body should be less than 1e-05\n"},
      {R"({"size":"small","replicas":-1})",
       "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0\n"
       ".spec.replicas: Invalid value: -1: should be a non-negative integer\n"},
      {R"({"size":"small","replicas":2.5})",
       "spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\"\n"
       ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: 2.5 is of the type float64, expected int64\n"
       "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; "
       "correct the existing errors to complete validation\n"},
      // An integral float passes as an integer, but is no int64 to the scale's replicas path
      // (apimachinery decodes 3.0 as a float64).
      {R"({"size":"small","replicas":3.0})",
       ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: 3 is of the type float64, expected int64\n"},
      {R"({"size":"small","tags":["a","b","a","a"]})", "spec.tags[2]: Duplicate value: \"a\"\n"},
      {R"({"size":"small","ports":[{"name":"a","proto":"TCP"},{"name":"a","proto":"UDP"},{"name":"a","proto":"TCP","port":1}]})",
       "spec.ports[2]: Duplicate value: map[string]interface {}{\"name\":\"a\", \"proto\":\"TCP\"}\n"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.spec);
    CHECK(causes_text(crd::validate(spec_of(r.spec), nullptr, s)) == r.want);
  }
}

TEST_CASE("validate: the transition rule self == oldSelf on update, and status by its own schema") {
  const auto s = widget_schema();
  const auto old = spec_of(R"({"size":"small","owner":"me"})");
  CHECK(causes_text(crd::validate(spec_of(R"({"size":"small","owner":"you"})"), &old, s)) ==
        "spec.owner: Invalid value: \"string\": owner is immutable\n");
  CHECK(crd::validate(spec_of(R"({"size":"small","owner":"me"})"), &old, s).empty());
  CHECK(crd::validate(spec_of(R"({"size":"small","owner":"you"})"), nullptr, s).empty());  // create: no old self
  auto with_status = old;
  with_status["status"] = json::object{{"replicas", "x"}};
  CHECK(causes_text(crd::validate_status(with_status, old, s)) ==
        "status.replicas: Invalid value: \"string\": replicas in body must be of type integer: \"string\"\n"
        "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation\n");
}

TEST_CASE("json_path: the printer columns' JSONPath subset") {
  const json::value v =
      json::parse(R"({"status":{"conditions":[{"type":"Created"},{"type":"Running"}]},"spec":{"a.b":1}})");
  auto one = [&](std::string_view p) {
    auto r = crd::json_path(v, p);
    return r.empty() ? std::string("<none>") : json::serialize(*r.front());
  };
  CHECK(one(".status.conditions[-1:].type") == "\"Running\"");
  CHECK(one(".status.conditions[0].type") == "\"Created\"");
  CHECK(one(".status.conditions[*].type") == "\"Created\"");
  CHECK(one(".status.conditions[5].type") == "<none>");
  CHECK(one(".spec['a.b']") == "1");
  CHECK(one(".missing.deeper") == "<none>");
  CHECK(crd::json_path(v, ".status.conditions[*].type").size() == 2);
}

TEST_CASE("every Kubeflow job gpupool renders passes its operator's CRD as released, nothing pruned") {
  int checked = 0;
  for (auto& [name, object] : test::rendered_golden_objects()) {
    {
      const std::string file = name;  // (a structured binding cannot be captured by clang 14)
      json::object& obj = object;
      const std::string api(obj.at("apiVersion").as_string());
      if (!api.starts_with("kubeflow.org/")) continue;
      const std::string version = api.substr(api.find('/') + 1);
      CAPTURE(file);
      const ResourceType* type = nullptr;
      std::optional<ResourceType> t;
      for (const auto& c : crd::kubeflow_crds(version))
        if ((t = crd::resource_type(*c)) && t->kind == obj.at("kind").as_string() && t->version == version) {
          type = &*t;
          break;
        }
      REQUIRE(type);
      REQUIRE(type->schema);
      CHECK(crd::coerce(obj, *type->schema).empty());
      crd::apply_defaults(obj, *type->schema);
      CHECK(causes_text(crd::validate(obj, nullptr, *type->schema)) == "");
      ++checked;
    }
  }
  CHECK(checked >= 4);  // MPIJob v1 and v2beta1, TFJob, PyTorchJob
}

TEST_CASE("the shipped Kubeflow CRDs define the kinds the embedded server serves") {
  for (const char* v : {"v1", "v2beta1"}) {
    std::vector<std::string> kinds;
    for (const auto& c : crd::kubeflow_crds(v)) {
      auto t = crd::resource_type(*c);
      REQUIRE(t);
      CHECK(t->schema);
      kinds.push_back(t->kind + "/" + t->version);
    }
    CHECK(kinds == std::vector<std::string>{std::string("MPIJob/") + v, "TFJob/v1", "PyTorchJob/v1",
                                            "TrainJob/v1alpha1", "TrainingRuntime/v1alpha1",
                                            "ClusterTrainingRuntime/v1alpha1", "JobSet/v1alpha2"});
  }
}

TEST_CASE("validate ratchets schema errors on update: unchanged values keep their old errors silently") {
  const auto s = widget_schema();
  // Stored before a stricter schema: replicas over the maximum, and an odd item in a list-type map.
  const auto old = spec_of(R"({"size":"small","replicas":2000000,"ports":[{"name":"a","proto":"tcp","port":"x"}]})");
  // Another field changes: the unchanged bad values are let be.
  CHECK(
      causes_text(crd::validate(
                      spec_of(R"({"size":"large","replicas":2000000,"ports":[{"name":"a","proto":"tcp","port":"x"}]})"),
                      &old, s))
          .empty());
  // The item is found again by its keys, wherever it moved; changing a value brings its errors back.
  CHECK(causes_text(crd::validate(spec_of(R"({"size":"small","replicas":2000001,
                                             "ports":[{"name":"b","proto":"tcp"},{"name":"a","proto":"tcp","port":"x"}]})"),
                                  &old, s)) ==
        "spec.replicas: Invalid value: 2000001: spec.replicas in body should be less than or equal to 1e+06\n");
  // On create, nothing is ratcheted.
  CHECK_FALSE(causes_text(crd::validate(old, nullptr, s)).empty());
}

TEST_CASE("validate_status ratchets the status by its old value") {
  auto s = widget_schema();
  const auto with_status = [](json::value status) {
    auto o = spec_of(R"({"size":"small"})");
    o["status"] = std::move(status);
    return o;
  };
  const auto old = with_status(json::object{{"replicas", "x"}});
  CHECK(causes_text(crd::validate_status(with_status(json::object{{"replicas", "x"}}), old, s)).empty());
  CHECK(causes_text(crd::validate_status(with_status(json::object{{"replicas", "y"}}), old, s)) ==
        "status.replicas: Invalid value: \"string\": replicas in body must be of type integer: \"string\"\n"
        "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; "
        "correct the "
        "existing errors to complete validation\n");
}
