// Requests that must not crash or fool the embedded API server (issue #20): negative counts,
// wrongly typed fields, over-large objects. Every expected answer was recorded from kube-apiserver
// v1.32.13 (the oracle), code, reason, message and causes.
#include <doctest/doctest.h>

#include "embedded/api.hpp"
#include "embedded/controllers.hpp"

using namespace gpupool;
using namespace gpupool::embedded;
namespace json = boost::json;

namespace {

struct Fixture {
  Clock clock = Clock::manual();
  Store store{clock};
  Api api{store, {}};
  Fixture() { store.create(store.type("", "namespaces"), "", json::object{{"metadata", json::object{{"name", "default"}}}}); }
  Response call(std::string method, std::string path, std::string body = "",
                std::string content_type = "application/json") {
    Request r;
    r.method = std::move(method);
    const auto qm = path.find('?');
    r.path = path.substr(0, qm);
    if (qm != std::string::npos) {
      const auto q = path.substr(qm + 1);
      const auto eq = q.find('=');
      r.query.emplace(q.substr(0, eq), q.substr(eq + 1));
    }
    r.body = std::move(body);
    r.content_type = std::move(content_type);
    r.accept = "application/json";
    r.user = "admin";
    r.groups = {"system:masters"};
    return api.handle(r);
  }
};

std::string deployment(const std::string& kind, const std::string& replicas) {
  return R"({"apiVersion":"apps/v1","kind":")" + kind + R"(","metadata":{"name":"d1"},"spec":{"replicas":)" + replicas +
         R"(,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}})";
}

std::string status_of(const Response& r) {
  // code reason message | causes (reason field message)
  const auto s = json::parse(r.body).as_object();
  std::string out = std::to_string(r.status) + " " + std::string(s.at("reason").as_string()) + " " +
                    std::string(s.at("message").as_string());
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
      {"create", "POST", "/apis/apps/v1/namespaces/default/deployments", deployment("Deployment", "-1"), "application/json",
       dep_invalid},
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
    const auto rs = json::parse(std::string(R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"r","namespace":"default","uid":"u"},"spec":{"replicas":)") +
                                replicas + "}}").as_object();
    const Plan p = plan_replicaset(rs, none, Clock::time_point{});
    CHECK(p.create.empty());
    CHECK(p.remove.empty());
    const auto job = json::parse(std::string(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"default","uid":"u"},"spec":{"parallelism":)") +
                                 replicas + R"(,"completions":5}})").as_object();
    CHECK(plan_job(job, none, Clock::time_point{}).create.empty());
  }
  // A huge count creates at most 500 pods per sync (burstReplicas), as the real controllers do.
  const auto big = json::parse(R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"r","namespace":"default","uid":"u"},"spec":{"replicas":1e300}})").as_object();
  CHECK(plan_replicaset(big, none, Clock::time_point{}).create.size() == 500);
  const auto bigjob = json::parse(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"default","uid":"u"},"spec":{"parallelism":2000000000,"completions":2000000000}})").as_object();
  CHECK(plan_job(bigjob, none, Clock::time_point{}).create.size() == 500);
}
