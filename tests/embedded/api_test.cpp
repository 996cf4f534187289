// The REST layer without HTTP: Status errors, patch types, tables, dryRun, watch streams, faults.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "api_fixture.hpp"
#include "embedded/api.hpp"
#include "embedded/faults.hpp"
#include "embedded/http_server.hpp"
#include "embedded/patch.hpp"
#include "embedded/table.hpp"

using namespace gpupool;
using namespace gpupool::embedded;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

const char* kPod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"app":"a"}},
  "spec":{"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"1"}}}]}})";

struct Fixture {
  Clock clock = Clock::manual();
  Store store{clock};
  Api api{store, {}};
  Fixture() {
    for (const char* ns : {"alice", "bob"})
      store.create(store.type("", "namespaces"), "", json::object{{"metadata", json::object{{"name", ns}}}});
    store.create(store.type("", "nodes"), "",
                 json::parse(R"({"metadata":{"name":"n1","labels":{"node-role.kubernetes.io/master":""}},
                   "status":{"conditions":[{"type":"Ready","status":"True"}],"nodeInfo":{"kubeletVersion":"v1.32.0"}}})")
                     .as_object());
  }
  Response call(std::string method, std::string path, std::string body = "", std::string user = "admin",
                std::string content_type = "application/json", std::string accept = "application/json") {
    Request r = testing::admin_request(std::move(method), std::move(path), std::move(body), std::move(content_type),
                                       std::move(accept));
    if (user != "admin") r.groups.clear();  // any other user is in no group
    r.user = std::move(user);
    return api.handle(r);
  }
  json::object json_of(const Response& r) { return json::parse(r.body).as_object(); }
  /// kPod named `name` in alice's namespace, written to the store directly.
  void create_pod(const std::string& name) {
    auto p = json::parse(kPod).as_object();
    p["metadata"].as_object()["name"] = name;
    store.create(store.type("", "pods"), "alice", p);
  }
};

}  // namespace

TEST_CASE("every Status error, as the API server sends it") {
  Fixture f;
  REQUIRE(f.call("POST", "/api/v1/namespaces/alice/pods", kPod).status == 201);
  auto stale = f.json_of(f.call("GET", "/api/v1/namespaces/alice/pods/p"));
  REQUIRE(f.call("PATCH", "/api/v1/namespaces/alice/pods/p", R"({"metadata":{"labels":{"x":"y"}}})", "admin",
                 "application/merge-patch+json")
              .status == 200);
  struct Row {
    std::string method, path, body, user, content_type;
    int code;
    std::string reason, message;
  };
  const Row rows[] = {
      {"GET", "/api/v1/namespaces/alice/pods/nope", "", "admin", "", 404, "NotFound", "pods \"nope\" not found"},
      {"POST", "/api/v1/namespaces/alice/pods", kPod, "admin", "application/json", 409, "AlreadyExists",
       "pods \"p\" already exists"},
      {"PUT", "/api/v1/namespaces/alice/pods/p", json::serialize(stale), "admin", "application/json", 409, "Conflict",
       "Operation cannot be fulfilled on pods \"p\": the object has been modified; please apply your changes to the "
       "latest version and try again"},
      {"POST", "/api/v1/namespaces/alice/pods",
       R"({"metadata":{"name":"UPPER"},"spec":{"containers":[{"name":"c","image":"x"}]}})", "admin", "application/json",
       422, "Invalid",
       "Pod \"UPPER\" is invalid: metadata.name: Invalid value: \"UPPER\": a lowercase RFC 1123 subdomain must consist "
       "of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
       "'example.com', regex used for validation is "
       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"},
      {"GET", "/api/v1/namespaces/bob/pods", "", "alice", "", 403, "Forbidden",
       "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"bob\""},
      {"PATCH", "/api/v1/nodes/n1", "{}", "alice", "application/merge-patch+json", 403, "Forbidden",
       "nodes \"n1\" is forbidden: User \"alice\" cannot patch resource \"nodes\" in API group \"\" at the cluster "
       "scope"},
      {"GET", "/api/v1/namespaces/alice/pods", "", "", "", 401, "Unauthorized", "Unauthorized"},
      {"POST", "/api/v1/namespaces/alice/pods", "{not json", "admin", "application/json", 400, "BadRequest", ""},
      {"GET", "/api/v1/namespaces/alice/pods?labelSelector=a%20in%20(b", "", "admin", "", 400, "BadRequest", ""},
      {"PATCH", "/api/v1/namespaces/alice/pods/p", "{}", "admin", "text/plain", 415, "UnsupportedMediaType", ""},
      {"PATCH", "/api/v1/namespaces/alice/pods/p", "{}", "admin", "application/apply-patch+yaml", 422, "Invalid",
       "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"},
      {"POST", "/api/v1/namespaces/alice/pods?dryRun=Some", kPod, "admin", "application/json", 422, "Invalid",
       "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"Some\"}: supported values: "
       "\"All\""},
      {"GET", "/api/v1/namespaces/alice/widgets", "", "admin", "", 404, "NotFound",
       "the server could not find the requested resource"},
      {"OPTIONS", "/api/v1/namespaces/alice/pods", "", "admin", "", 405, "MethodNotAllowed",
       "OPTIONS is not supported"},
      {"POST", "/api/v1/namespaces/ghost/pods", kPod, "admin", "application/json", 404, "NotFound",
       "namespaces \"ghost\" not found"},
      // CBOR (client-go's opt-in encoding) is not decoded; protobuf is (see the protobuf test).
      {"POST", "/api/v1/namespaces", "\xd9\xd9\xf7", "admin", "application/cbor", 415, "UnsupportedMediaType", ""},
  };
  for (const auto& r : rows) {
    CAPTURE(r.method);
    CAPTURE(r.path);
    auto resp = f.call(r.method, r.path, r.body, r.user, r.content_type);
    CHECK(resp.status == r.code);
    auto s = f.json_of(resp);
    CHECK(s["kind"] == "Status");
    CHECK(s["apiVersion"] == "v1");
    CHECK(s["status"] == "Failure");
    CHECK(s["reason"] == json::value(r.reason));
    CHECK(s["code"] == r.code);
    if (!r.message.empty()) CHECK(s["message"] == json::value(r.message));
  }
  // A path no built-in API serves gets Go's http.NotFound page, not a Status (kube-apiserver
  // v1.32.13: its not-found handler after apiextensions-apiserver found no CRD); a built-in group's
  // unknown resource or version is a Status (above, and apps/v1 here).
  for (const char* path :
       {"/apis/nope.example.com/v1", "/apis/nope.example.com/v1/namespaces/alice/things", "/apis/nope.example.com",
        "/apis/kubeflow.org/v9", "/apis/kubeflow.org/v1/namespaces/alice/ghosts"}) {
    CAPTURE(path);
    auto resp = f.call("GET", path);
    CHECK(resp.status == 404);
    CHECK(resp.content_type == "text/plain; charset=utf-8");
    CHECK(resp.body == "404 page not found\n");
  }
  for (const char* path : {"/apis/apps/v1/namespaces/alice/nothings", "/apis/apps/v9"}) {
    CAPTURE(path);
    auto resp = f.call("GET", path);
    CHECK(resp.status == 404);
    CHECK(f.json_of(resp)["message"] == "the server could not find the requested resource");
  }
  // Invalid carries field causes; NotFound names the object in details.
  auto inv = f.json_of(f.call("POST", "/api/v1/namespaces/alice/pods",
                              R"({"metadata":{"name":"UPPER"},"spec":{"containers":[{"name":"c","image":"x"}]}})"));
  CHECK(inv["details"].at("causes").at(0).at("field") == "metadata.name");
  CHECK(inv["details"].at("kind") == "Pod");
  auto nf = f.json_of(f.call("GET", "/apis/apps/v1/namespaces/alice/deployments/gone"));
  CHECK(nf["details"] == json::parse(R"({"name":"gone","group":"apps","kind":"deployments"})"));
  // 429 from the fault injector carries Retry-After.
  auto tmr = status_response(
      StatusError(429, "TooManyRequests", "Too many requests, please try again later.", {}, {}, {}, {}, 3));
  CHECK(tmr.headers == std::vector<std::pair<std::string, std::string>>{{"Retry-After", "3"}});
  CHECK(f.json_of(tmr)["details"].at("retryAfterSeconds") == 3);
}

TEST_CASE("field selectors of a list: terms, escapes and field labels as kube-apiserver (data/selectors.json)") {
  // fields.ParseSelector (terms sorted, escapes "\\\\", "\\,", "\\="; nothing trimmed), then the
  // kind's field label check, meeting the terms in the same sorted order.
  std::ifstream in(std::string(GPUPOOL_SOURCE_DIR) + "/tests/embedded/data/selectors.json");
  std::stringstream text;
  text << in.rdbuf();
  const json::object golden = json::parse(text.str()).as_object();
  testing::ApiFixture f;
  for (const auto& [name, labels] : golden.at("objects").as_object())
    f.store.create(f.store.type("", "configmaps"), "default",
                   json::object{{"metadata", json::object{{"name", name}, {"labels", labels}}}});
  const json::array& cases = golden.at("fieldSelector").as_array();
  REQUIRE(cases.size() > 30);
  int refused = 0;
  for (const auto& v : cases) {
    const auto& c = v.as_object();
    const std::string selector(c.at("selector").as_string());
    CAPTURE(selector);
    Request r = testing::admin_request("GET", "/api/v1/namespaces/default/configmaps");
    r.query.emplace("fieldSelector", selector);
    const Response resp = f.api.handle(r);
    const json::object body = json::parse(resp.body).as_object();
    if (const auto* want = c.if_contains("error")) {
      ++refused;
      CHECK(resp.status == 400);
      CHECK(body.at("message") == want->as_string());
      continue;
    }
    REQUIRE(resp.status == 200);
    json::array got;
    for (const auto& item : body.at("items").as_array()) got.push_back(item.at("metadata").at("name"));
    CHECK(json::serialize(got) == json::serialize(c.at("matches")));
  }
  CHECK(refused > 10);
  CHECK(refused < static_cast<int>(cases.size()) - 10);
}

TEST_CASE("patch types: merge, JSON, strategic (merge keys and directives), server-side apply, scale") {
  Fixture f;
  REQUIRE(f.call("POST", "/apis/apps/v1/namespaces/alice/deployments", R"({"metadata":{"name":"d"},"spec":{"replicas":1,
    "selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{
    "containers":[{"name":"a","image":"x:1","env":[{"name":"E1","value":"1"}]},{"name":"b","image":"y:1"}],
    "tolerations":[{"key":"k","operator":"Exists"}]}}}})")
              .status == 201);
  auto patch = [&](const std::string& ct, const std::string& body, const std::string& extra = "") {
    auto r = f.call("PATCH", "/apis/apps/v1/namespaces/alice/deployments/d" + extra, body, "admin", ct);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    return f.json_of(r);
  };
  const std::string spec_path = "spec.template.spec.";
  // Strategic: containers merge by name, env by name; tolerations are replaced.
  auto d = patch("application/strategic-merge-patch+json", R"({"spec":{"template":{"spec":{
    "containers":[{"name":"b","image":"y:2"},{"name":"a","env":[{"name":"E2","value":"2"}]}],
    "tolerations":[{"key":"other","operator":"Exists"}]}}}})");
  auto cs = d["spec"].at("template").at("spec").at("containers").as_array();
  REQUIRE(cs.size() == 2);
  // The patch's order first (strategicpatch normalizeElementOrder; kube-apiserver v1.32 answers
  // `b=y:2 a=x:1` to this patch).
  CHECK(cs[0].at("image") == "y:2");
  CHECK(cs[1].at("image") == "x:1");
  CHECK(cs[1].at("env").as_array().size() == 2);
  CHECK(d["spec"].at("template").at("spec").at("tolerations") ==
        json::parse(R"([{"key":"other","operator":"Exists"}])"));
  CHECK(d["metadata"].at("generation") == 2);
  // $patch: delete and $setElementOrder.
  d = patch("application/strategic-merge-patch+json", R"({"spec":{"template":{"spec":{
    "$setElementOrder/containers":[{"name":"b"}],"containers":[{"$patch":"delete","name":"a"}]}}}})");
  cs = d["spec"].at("template").at("spec").at("containers").as_array();
  REQUIRE(cs.size() == 1);
  CHECK(cs[0].at("name") == "b");
  // JSON merge patch replaces lists; null deletes.
  d = patch("application/merge-patch+json",
            R"({"metadata":{"labels":{"l":"1"}},"spec":{"template":{"spec":{"tolerations":null}}}})");
  CHECK(!d["spec"].at("template").at("spec").as_object().contains("tolerations"));
  CHECK(d["metadata"].at("labels").at("l") == "1");
  // JSON patch, including a failed test (422).
  d = patch("application/json-patch+json", R"([{"op":"replace","path":"/spec/replicas","value":5},
    {"op":"add","path":"/metadata/labels/m","value":"2"},{"op":"remove","path":"/metadata/labels/l"}])");
  CHECK(d["spec"].at("replicas") == 5);
  CHECK(d["metadata"].at("labels") == json::parse(R"({"m":"2"})"));
  auto failed = f.call("PATCH", "/apis/apps/v1/namespaces/alice/deployments/d",
                       R"([{"op":"test","path":"/spec/replicas","value":1}])", "admin", "application/json-patch+json");
  CHECK(failed.status == 422);
  // Scale subresource (kubectl scale sends a merge patch to .../scale).
  auto sc = patch("application/merge-patch+json", R"({"spec":{"replicas":7}})", "/scale");
  CHECK(sc["kind"] == "Scale");
  CHECK(sc["spec"].at("replicas") == 7);
  CHECK(sc["status"].at("selector") == "app=d");
  CHECK(f.store.get(f.store.type("apps", "deployments"), "alice", "d").at("spec").at("replicas") == 7);
  // Server-side apply creates, then merges, recording the field manager.
  auto ap = f.call("PATCH", "/api/v1/namespaces/alice/services/svc?fieldManager=gpupool",
                   "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\nspec:\n  ports:\n  - port: 80\n", "admin",
                   "application/apply-patch+yaml");
  REQUIRE_MESSAGE(ap.status == 201, ap.body);
  ap =
      f.call("PATCH", "/api/v1/namespaces/alice/services/svc?fieldManager=gpupool",
             "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n  labels: {a: b}\nspec:\n  ports:\n  - port: 80\n",
             "admin", "application/apply-patch+yaml");
  REQUIRE(ap.status == 200);
  auto svc = f.json_of(ap);
  CHECK(svc["metadata"].at("labels").at("a") == "b");
  CHECK(svc["metadata"].at("managedFields").at(0).at("manager") == "gpupool");
  // Strategic merge on a custom resource is refused (415), as for CRDs.
  auto mpi = f.call("POST", "/apis/kubeflow.org/v1/namespaces/alice/mpijobs",
                    R"({"metadata":{"name":"m"},"spec":{"mpiReplicaSpecs":{}}})");
  REQUIRE(mpi.status == 201);
  CHECK(f.call("PATCH", "/apis/kubeflow.org/v1/namespaces/alice/mpijobs/m", "{}", "admin",
               "application/strategic-merge-patch+json")
            .status == 415);
}

TEST_CASE("patch functions (table)") {
  struct Row {
    const char* target;
    const char* patch;
    const char* kind;  // "" = merge patch
    const char* result;
  };
  const Row rows[] = {
      {R"({"a":1,"b":{"c":2}})", R"({"b":{"c":null,"d":3}})", "", R"({"a":1,"b":{"d":3}})"},
      {R"({"a":[1,2]})", R"({"a":[3]})", "", R"({"a":[3]})"},
      {R"({"spec":{"containers":[{"name":"a","image":"1"}]}})", R"({"spec":{"containers":[{"name":"b","image":"2"}]}})",
       "Pod", R"({"spec":{"containers":[{"name":"b","image":"2"},{"name":"a","image":"1"}]}})"},  // patch items first
      {R"({"spec":{"containers":[{"name":"a","image":"1"}]}})",
       R"({"spec":{"containers":[{"$patch":"replace"},{"name":"b","image":"2"}]}})", "Pod",
       R"({"spec":{"containers":[{"name":"b","image":"2"}]}})"},
      {R"({"spec":{"taints":[{"key":"a","effect":"NoSchedule"},{"key":"b","effect":"NoSchedule"}]}})",
       R"({"spec":{"taints":[{"key":"b","effect":"NoSchedule"}]}})", "Node",
       R"({"spec":{"taints":[{"key":"b","effect":"NoSchedule"}]}})"},
      {R"({"metadata":{"finalizers":["x"]}})", R"({"metadata":{"finalizers":["y"]}})", "Pod",
       R"({"metadata":{"finalizers":["y","x"]}})"},  // the oracle: ["a.io/y","a.io/x"]
      {R"({"metadata":{"finalizers":["x","y"]}})", R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]}})",
       "Pod", R"({"metadata":{"finalizers":["y"]}})"},
      {R"({"spec":{"a":1,"b":2}})", R"({"spec":{"$retainKeys":["b"],"b":3}})", "Pod", R"({"spec":{"b":3}})"},
      {R"({"spec":{"x":{"y":1}}})", R"({"spec":{"x":{"$patch":"replace","z":2}}})", "Pod", R"({"spec":{"x":{"z":2}}})"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.patch);
    const auto t = json::parse(r.target), p = json::parse(r.patch);
    const auto out = std::string(r.kind).empty() ? merge_patch(t, p) : strategic_merge_patch(t, p, r.kind);
    CHECK(json::serialize(out) == json::serialize(json::parse(r.result)));
  }
}

TEST_CASE("tables: columns kubectl prints, -o wide columns at priority 1, ages from the clock") {
  Fixture f;
  auto r =
      f.call("GET", "/api/v1/nodes", "", "admin", "", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
  auto t = f.json_of(r);
  CHECK(t["kind"] == "Table");
  std::vector<std::string> names, wide;
  for (const auto& c : t["columnDefinitions"].as_array())
    (c.at("priority") == 0 ? names : wide).emplace_back(c.at("name").as_string());
  CHECK(names == std::vector<std::string>{"Name", "Status", "Roles", "Age", "Version"});
  CHECK(wide.front() == "Internal-IP");
  CHECK(t["rows"].at(0).at("cells") ==
        json::parse(R"(["n1","Ready","master","0s","v1.32.0","<none>","<none>","","",""])"));
  CHECK(t["rows"].at(0).at("object").at("kind") == "PartialObjectMetadata");
  // ROLES is the model's findNodeRoles: an empty legacy kubernetes.io/role label is no role.
  f.store.create(
      f.store.type("", "nodes"), "",
      json::parse(R"({"metadata":{"name":"n2","labels":{"kubernetes.io/role":"","node-role.kubernetes.io/gpu":""}}})")
          .as_object());
  auto two =
      f.json_of(f.call("GET", "/api/v1/nodes/n2", "", "admin", "", "application/json;as=Table;v=v1;g=meta.k8s.io"));
  CHECK(two["rows"].at(0).at("cells").at(2) == "gpu");
  f.store.remove(f.store.type("", "nodes"), "", "n2");
  f.clock.advance(std::chrono::hours(70));
  t = f.json_of(f.call("GET", "/api/v1/nodes?includeObject=None", "", "admin", "",
                       "application/json;as=Table;v=v1;g=meta.k8s.io"));
  CHECK(t["rows"].at(0).at("cells").at(3) == "2d22h");
  CHECK(!t["rows"].at(0).as_object().contains("object"));

  struct Age {
    std::chrono::seconds d;
    const char* text;
  };
  const Age ages[] = {{0s, "0s"},
                      {119s, "119s"},
                      {120s, "2m"},
                      {150s, "2m30s"},
                      {600s, "10m"},
                      {3h, "3h"},
                      {std::chrono::seconds(3 * 3600 + 300), "3h5m"},
                      {9h, "9h"},
                      {48h, "2d"},
                      {49h, "2d1h"},
                      {std::chrono::hours(24 * 9), "9d"},
                      {std::chrono::hours(24 * 800), "2y70d"},
                      {std::chrono::hours(24 * 365 * 9), "9y"}};
  for (const auto& a : ages) CHECK(human_duration(a.d) == a.text);
}

TEST_CASE("list, dryRun, delete propagation and a watch stream over the API") {
  Fixture f;
  REQUIRE(f.call("POST", "/api/v1/namespaces/alice/pods?dryRun=All", kPod).status == 201);
  CHECK(f.call("GET", "/api/v1/namespaces/alice/pods/p").status == 404);
  const auto rv0 = f.store.revision();
  REQUIRE(f.call("POST", "/api/v1/namespaces/alice/pods", kPod).status == 201);
  auto list = f.json_of(f.call("GET", "/api/v1/namespaces/alice/pods?limit=1&fieldSelector=metadata.name=p"));
  CHECK(list["kind"] == "PodList");
  CHECK(list["items"].as_array().size() == 1);

  // Watch from rv0: the ADDED event, then a MODIFIED made after the stream started.
  Request w;
  w.method = "GET";
  w.path = "/api/v1/namespaces/alice/pods";
  w.query = {{"watch", "true"}, {"resourceVersion", std::to_string(rv0)}, {"timeoutSeconds", "1"}};
  w.user = "alice";
  auto resp = f.api.handle(w);
  REQUIRE(resp.stream);
  f.store.mutate(f.store.type("", "pods"), "alice", "p",
                 [](json::object& o) { o["metadata"].as_object()["labels"] = json::object{}; });
  std::vector<std::string> lines;
  std::atomic<bool> stop{false};
  resp.stream(
      [&](std::string_view s) {
        if (s.empty()) return true;  // a liveness probe
        lines.emplace_back(s);
        if (lines.size() == 2) stop = true;
        return true;
      },
      stop);
  REQUIRE(lines.size() == 2);
  CHECK(json::parse(lines[0]).at("type") == "ADDED");
  CHECK(json::parse(lines[1]).at("type") == "MODIFIED");

  // A version older than the history: the stream reports 410 Expired as an ERROR event.
  Clock c2 = Clock::manual();
  Store small(c2, Store::Options{.history = 2, .mpijob_version = "v1"});
  Api api2(small, {});
  small.create(small.type("", "namespaces"), "", json::object{{"metadata", json::object{{"name", "x"}}}});
  for (int i = 0; i < 5; ++i)
    small.create(small.type("", "configmaps"), "x",
                 json::object{{"metadata", json::object{{"name", "c" + std::to_string(i)}}}});
  w.path = "/api/v1/namespaces/x/configmaps";
  w.query = {{"watch", "1"}, {"resourceVersion", "2"}};
  w.groups = {"system:masters"};
  auto expired = api2.handle(w);
  REQUIRE(expired.stream);
  std::string line;
  expired.stream(
      [&](std::string_view s) {
        line = s;
        return true;
      },
      stop);
  auto ev = json::parse(line).as_object();
  CHECK(ev["type"] == "ERROR");
  CHECK(ev["object"].at("code") == 410);
  CHECK(ev["object"].at("reason") == "Expired");

  // Deleting a Deployment in the background removes what it owns; pods return the object.
  const std::string spec =
      R"("spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},)"
      R"("spec":{"containers":[{"name":"c","image":"busybox"}]}}})";
  auto dep = f.json_of(
      f.call("POST", "/apis/apps/v1/namespaces/alice/deployments", R"({"metadata":{"name":"d"},)" + spec + "}"));
  auto rs = json::parse(R"({"metadata":{"name":"d-1"},)" + spec + "}").as_object();
  rs["metadata"].as_object()["ownerReferences"] = json::array{json::object{
      {"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "d"}, {"uid", dep["metadata"].at("uid")}}};
  f.store.create(f.store.type("apps", "replicasets"), "alice", rs);
  auto del = f.json_of(
      f.call("DELETE", "/apis/apps/v1/namespaces/alice/deployments/d", R"({"propagationPolicy":"Background"})"));
  CHECK(del["status"] == "Success");
  CHECK(f.call("GET", "/apis/apps/v1/namespaces/alice/replicasets/d-1").status == 404);
  CHECK(f.json_of(f.call("DELETE", "/api/v1/namespaces/alice/pods/p"))["kind"] == "Pod");
}

TEST_CASE("discovery lists built-in kinds and CRDs registered at run time") {
  Fixture f;
  auto v1 = f.json_of(f.call("GET", "/api/v1"));
  bool pods = false, binding = false;
  for (const auto& r : v1["resources"].as_array()) {
    if (r.at("name") == "pods") pods = r.at("shortNames").at(0) == "po";
    if (r.at("name") == "pods/binding") binding = true;
  }
  CHECK(pods);
  CHECK(binding);
  auto groups = f.json_of(f.call("GET", "/apis"));
  std::vector<std::string> names;
  for (const auto& g : groups["groups"].as_array()) names.emplace_back(g.at("name").as_string());
  CHECK(std::find(names.begin(), names.end(), "kubeflow.org") != names.end());
  CHECK(f.call("GET", "/apis/example.com/v1").status == 404);
  auto crd = f.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                    R"({"metadata":{"name":"widgets.example.com"},
    "spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget","singular":"widget"},
    "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}}}]}})");
  REQUIRE_MESSAGE(crd.status == 201, crd.body);
  auto gv = f.json_of(f.call("GET", "/apis/example.com/v1"));
  CHECK(gv["resources"].at(0).at("name") == "widgets");
  CHECK(
      f.call("POST", "/apis/example.com/v1/namespaces/alice/widgets", R"({"metadata":{"name":"w"}})", "alice").status ==
      201);
  auto established =
      f.json_of(f.call("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"));
  CHECK(established["status"].at("conditions").at(1).at("type") == "Established");
  CHECK(f.call("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com").status == 200);
  CHECK(f.call("GET", "/apis/example.com/v1/namespaces/alice/widgets").status == 404);
  // Only the admin may define kinds.
  CHECK(f.call("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", "alice").status == 403);
}

TEST_CASE("fault injection is deterministic per seed, per verb, and counted") {
  FaultConfig cfg;
  cfg.seed = 42;
  cfg.rules["create"] = FaultRule{.too_many_requests = 0.2,
                                  .internal_error = 0.1,
                                  .unavailable = 0.1,
                                  .connection_reset = 0.1,
                                  .latency = 0ms,
                                  .retry_after_seconds = 2};
  auto draw = [&] {
    FaultInjector fi(cfg);
    std::vector<int> out;
    for (int i = 0; i < 400; ++i) out.push_back(static_cast<int>(fi.decide(i % 2 ? "create" : "get").action));
    return std::make_pair(out, fi.counters());
  };
  auto [a, ca] = draw();
  auto [b, cb] = draw();
  CHECK(a == b);
  CHECK(ca.requests == 400);
  for (std::size_t i = 0; i < a.size(); i += 2) CHECK(a[i] == 0);  // "get" has no rule
  CHECK(ca.total() > 40);
  CHECK(ca.total() < 140);
  CHECK(ca.too_many_requests > ca.internal_error);
  CHECK(ca.connection_reset > 0);
  FaultConfig all;
  all.rules["*"] = FaultRule{.unavailable = 1.0, .retry_after_seconds = 1};
  FaultInjector fi(all);
  CHECK(fi.decide("watch").action == FaultInjector::Action::Unavailable);

  struct Row {
    const char* method;
    const char* path;
    const char* query;
    const char* verb;
  };
  const Row rows[] = {{"GET", "/api/v1/namespaces/a/pods", "", "list"},
                      {"GET", "/api/v1/namespaces/a/pods/p", "", "get"},
                      {"GET", "/api/v1/namespaces/a/pods", "true", "watch"},
                      {"GET", "/api/v1/nodes/n", "", "get"},
                      {"GET", "/apis/apps/v1/namespaces/a/deployments", "", "list"},
                      {"POST", "/api/v1/namespaces/a/pods", "", "create"},
                      {"DELETE", "/api/v1/namespaces/a/pods", "", "deletecollection"},
                      {"DELETE", "/apis/batch/v1/namespaces/a/jobs/j", "", "delete"},
                      {"PATCH", "/api/v1/nodes/n", "", "patch"}};
  for (const auto& r : rows) {
    Request q;
    q.method = r.method;
    q.path = r.path;
    if (std::string(r.query) == "true") q.query.emplace("watch", "true");
    CHECK(verb_of(q) == r.verb);
  }
}

TEST_CASE("validation of pods and pod templates: quantities, tolerations, containers, volumes and mounts") {
  Fixture f;
  auto pod = [](const std::string& spec) { return R"({"metadata":{"name":"v"},"spec":)" + spec + "}"; };
  struct Row {
    std::string body;
    std::string message;  // the Status message; empty = accepted
  };
  const Row rows[] = {
      {pod(R"({"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"-1"}}}]})"),
       "Pod \"v\" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than "
       "or equal to 0"},
      // (An unparsable quantity is refused earlier, by decoding: 400, tests/embedded/schema_test.cpp.)
      {pod(R"({"containers":[{"name":"c","image":"x","resources":{"limits":{"cpu":"1"},"requests":{"cpu":"2"}}}]})"),
       // (validateResourceRequirements names the requests, not the resource: golden podvalues.)
       "Pod \"v\" is invalid: spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or "
       "equal to cpu limit of 1"},
      {pod(R"({"containers":[{"name":"c","image":"x"},{"name":"c","image":"y"}]})"),
       "Pod \"v\" is invalid: spec.containers[1].name: Duplicate value: \"c\""},
      {pod(R"({"containers":[{"name":"c","image":"x","volumeMounts":[{"name":"data","mountPath":"/d"}]}]})"),
       "Pod \"v\" is invalid: spec.containers[0].volumeMounts[0].name: Not found: \"data\""},
      {pod(R"({"volumes":[{"name":"a","emptyDir":{}},{"name":"a","emptyDir":{}}],"containers":[{"name":"c","image":"x"}]})"),
       "Pod \"v\" is invalid: spec.volumes[1].name: Duplicate value: \"a\""},
      {pod(R"({"volumes":[{"name":"a","emptyDir":{}}],"containers":[{"name":"c","image":"x",
             "volumeMounts":[{"name":"a","mountPath":"/d"},{"name":"a","mountPath":"/d"}]}]})"),
       "Pod \"v\" is invalid: spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/d\": must be unique"},
      {pod(R"({"containers":[]})"), "Pod \"v\" is invalid: spec.containers: Required value"},
      {pod(R"({"containers":[{"name":"c","image":"x"}],"tolerations":[{"key":"k","operator":"Exists","value":"v"}]})"),
       ""},  // filled below: the model's rule words the message
      {pod(R"({"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"500m","virtaitech.com/gpu":1},
                                                                   "limits":{"virtaitech.com/gpu":1}}}],
             "volumes":[{"name":"ssd","hostPath":{"path":"/data"}}],
             "tolerations":[{"key":"gpu_node","operator":"Exists"}]})"),
       ""},
  };
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    const auto& r = rows[i];
    CAPTURE(r.body);
    auto resp = f.call("POST", "/api/v1/namespaces/alice/pods?dryRun=All", r.body);
    if (r.body.find(R"("operator":"Exists","value":"v")") != std::string::npos) {
      CHECK(resp.status == 422);
      CHECK(f.json_of(resp)["details"].at("causes").at(0).at("field") == "spec.tolerations[0].operator");
      continue;
    }
    if (r.message.empty()) {
      CHECK(resp.status == 201);
      continue;
    }
    CHECK(resp.status == 422);
    CHECK(f.json_of(resp)["message"] == json::value(r.message));
  }
  // Templates are validated with their own paths; defaults are filled in on create.
  auto bad = f.call(
      "POST", "/apis/apps/v1/namespaces/alice/deployments",
      R"({"metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},)"
      R"("spec":{"containers":[{"name":"Bad","image":"x"}]}}}})");
  REQUIRE_MESSAGE(bad.status == 422, bad.body);
  CHECK(f.json_of(bad)["details"].at("causes").at(0).at("field") == "spec.template.spec.containers[0].name");
  auto good =
      f.json_of(f.call("POST", "/api/v1/namespaces/alice/pods", pod(R"({"containers":[{"name":"c","image":"x:1"}]})")));
  CHECK(good["status"].at("phase") == "Pending");
  CHECK(good["spec"].at("restartPolicy") == "Always");
  CHECK(good["spec"].at("schedulerName") == "default-scheduler");
  CHECK(good["spec"].at("containers").at(0).at("imagePullPolicy") == "IfNotPresent");
  // Node taints are validated as validateNodeTaints does (only the admin edits nodes), under
  // metadata's path as kube-apiserver v1.32 names them (sic).
  auto taint = f.call("PATCH", "/api/v1/nodes/n1", R"({"spec":{"taints":[{"key":"bad key","effect":"NoSchedule"}]}})",
                      "admin", "application/merge-patch+json");
  CHECK(taint.status == 422);
  CHECK(f.json_of(taint)["details"].at("causes").at(0).at("field") == "metadata.taints[0].key");
}

TEST_CASE("watch bookmarks follow the cluster clock: one a minute with allowWatchBookmarks, none without") {
  for (const bool allow : {true, false}) {
    CAPTURE(allow);
    Fixture f;
    auto pod = [&](const std::string& name) { f.create_pod(name); };
    Request w;
    w.method = "GET";
    w.path = "/api/v1/namespaces/alice/pods";
    w.query = {{"watch", "1"}, {"resourceVersion", std::to_string(f.store.revision())}};
    if (allow) w.query.emplace("allowWatchBookmarks", "true");
    w.user = "alice";
    auto resp = f.api.handle(w);
    REQUIRE(resp.stream);
    pod("p1");
    // The client reacts to each line: after p1, 30s pass and p2 is created (no bookmark yet);
    // after p2, 31s more (a minute in all) and p3 is created.
    std::vector<json::object> lines;
    std::atomic<bool> stop{false};
    int idle_probes_after_p3 = 0;  // the stream's liveness probes while nothing happens
    resp.stream(
        [&](std::string_view s) {
          if (s.empty()) {
            if (lines.size() >= 3) ++idle_probes_after_p3;
            return true;
          }
          lines.push_back(json::parse(s).as_object());
          const auto& l = lines.back();
          const auto name = l.at("object").at("metadata").as_object().if_contains("name");
          if (l.at("type") == "ADDED" && name && *name == "p1") {
            f.clock.advance(30s);
            pod("p2");
          } else if (l.at("type") == "ADDED" && name && *name == "p2") {
            f.clock.advance(31s);
            pod("p3");
          } else {
            stop = l.at("type") == "BOOKMARK" || (name && *name == "p3" && !allow);
          }
          return true;
        },
        stop);
    std::vector<std::string> seen;
    for (const auto& l : lines) seen.emplace_back(l.at("type").as_string());
    if (!allow) {
      CHECK(seen == std::vector<std::string>{"ADDED", "ADDED", "ADDED"});
      continue;
    }
    // p3 was committed before the bookmark was due to be sent: it comes first, and the bookmark's
    // version covers it.
    REQUIRE(seen == std::vector<std::string>{"ADDED", "ADDED", "ADDED", "BOOKMARK"});
    CHECK(idle_probes_after_p3 == 0);  // sent as the clock passed the minute, not after waiting
    const auto& bm = lines.back().at("object").as_object();
    CHECK(bm.at("kind") == "Pod");
    CHECK(bm.at("apiVersion") == "v1");
    // An empty object's metadata: the version and the zero creationTimestamp metav1.Time encodes as null.
    CHECK(bm.at("metadata").as_object().size() == 2);
    CHECK(bm.at("metadata").at("creationTimestamp").is_null());
    CHECK(bm.at("metadata").at("resourceVersion") == json::value(std::to_string(f.store.revision())));
    CHECK(bm.at("metadata").at("resourceVersion") == lines[2].at("object").at("metadata").at("resourceVersion"));
  }
}

TEST_CASE("watch lists: sendInitialEvents=true sends the objects, then a bookmark marks the end") {
  for (const bool allow : {true, false}) {
    CAPTURE(allow);
    Fixture f;
    const auto& pods = f.store.type("", "pods");
    auto pod = [&](const std::string& name) { f.create_pod(name); };
    pod("a");
    pod("b");
    const std::string rv_initial = std::to_string(f.store.revision());
    Request w;
    w.method = "GET";
    w.path = "/api/v1/namespaces/alice/pods";
    w.query = {{"watch", "1"},
               {"sendInitialEvents", "true"},
               {"resourceVersionMatch", "NotOlderThan"},
               {"resourceVersion", "1"}};
    if (allow) w.query.emplace("allowWatchBookmarks", "true");
    w.user = "alice";
    auto resp = f.api.handle(w);
    REQUIRE(resp.stream);
    std::vector<json::object> lines;
    std::atomic<bool> stop{false};
    resp.stream(
        [&](std::string_view s) {
          if (s.empty()) {
            // Idle: the initial events are out. A change now is a plain event after them.
            if (f.store.find(pods, "alice", "c") == nullptr) pod("c");
            return true;
          }
          lines.push_back(json::parse(s).as_object());
          const auto* name = lines.back().at("object").at("metadata").as_object().if_contains("name");
          stop = name && *name == "c";
          return true;
        },
        stop);
    std::vector<std::string> seen;
    for (const auto& l : lines) {
      const auto* name = l.at("object").at("metadata").as_object().if_contains("name");
      seen.push_back(std::string(l.at("type").as_string()) + " " + (name ? std::string(name->as_string()) : ""));
    }
    if (!allow) {
      // No bookmark for a watcher that does not allow them (cacher.go setInitialEventsEndBookmarkIfRequested).
      CHECK(seen == std::vector<std::string>{"ADDED a", "ADDED b", "ADDED c"});
      continue;
    }
    REQUIRE(seen == std::vector<std::string>{"ADDED a", "ADDED b", "BOOKMARK ", "ADDED c"});
    const auto& md = lines[2].at("object").at("metadata").as_object();
    CHECK(md.at("annotations") == json::object{{"k8s.io/initial-events-end", "true"}});
    // The bookmark's version is the state the initial events showed, not the later change's.
    CHECK(md.at("resourceVersion") == json::value(rv_initial));
    CHECK(lines[3].at("object").at("metadata").at("resourceVersion") ==
          json::value(std::to_string(f.store.revision())));
  }
}

TEST_CASE("watch and list options are validated as the API server does (ListOptions 422)") {
  Fixture f;
  auto reason = [&](const std::string& query) {
    auto r = f.call("GET", "/api/v1/namespaces/alice/pods?" + query, "", "alice");
    CAPTURE(query);
    CHECK(r.status == 422);
    return r.status == 422 ? std::string(f.json_of(r).at("message").as_string()) : r.body;
  };
  CHECK(reason("watch=1&sendInitialEvents=true") ==
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
        "resourceVersionMatch to NotOlderThan");
  CHECK(
      reason("watch=1&resourceVersionMatch=NotOlderThan") ==
      "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for "
      "watch unless sendInitialEvents is provided");
  CHECK(reason("resourceVersionMatch=Exact") ==
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden "
        "unless resourceVersion is provided");
  CHECK(
      reason("sendInitialEvents=false") ==
      "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list");
  CHECK(reason("resourceVersion=0&resourceVersionMatch=Exact") ==
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is "
        "forbidden for resourceVersion \"0\"");
  // Valid combinations pass.
  CHECK(f.call("GET", "/api/v1/namespaces/alice/pods?resourceVersion=0&resourceVersionMatch=NotOlderThan", "", "alice")
            .status == 200);
}

TEST_CASE("events.k8s.io/v1 and core/v1 serve one store of Events, fields converted") {
  Fixture f;
  // Created through events.k8s.io/v1 (as client-go's new event recorder writes them) ...
  auto created = f.call("POST", "/apis/events.k8s.io/v1/namespaces/alice/events", R"({
    "apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e1"},
    "eventTime":"2024-01-01T00:00:00.000000Z","reportingController":"gpupool.io/trainer",
    "reportingInstance":"trainer-0","action":"Checkpoint","reason":"Saved","type":"Normal",
    "note":"checkpoint 3 written","regarding":{"kind":"Pod","namespace":"alice","name":"p","apiVersion":"v1"}})",
                        "alice");
  REQUIRE_MESSAGE(created.status == 201, created.body);
  auto v1 = f.json_of(created);
  CHECK(v1["apiVersion"] == "events.k8s.io/v1");
  CHECK(v1["note"] == "checkpoint 3 written");
  // ... they are core/v1 Events.
  auto core = f.json_of(f.call("GET", "/api/v1/namespaces/alice/events/e1", "", "alice"));
  CHECK(core["apiVersion"] == "v1");
  CHECK(core["message"] == "checkpoint 3 written");
  CHECK(core["involvedObject"].at("name") == "p");
  CHECK(core["reportingComponent"] == "gpupool.io/trainer");
  CHECK(core["reportingInstance"] == "trainer-0");
  CHECK(core["eventTime"] == "2024-01-01T00:00:00.000000Z");
  CHECK(!core.contains("note"));
  CHECK(!core.contains("regarding"));
  CHECK(f.call("GET", "/apis/events.k8s.io/v1/namespaces/alice/events/e1", "", "alice").status == 200);

  // A core event (the scheduler's kind) seen through events.k8s.io/v1.
  REQUIRE(f.call("POST", "/api/v1/namespaces/alice/events", R"({"metadata":{"name":"e2"},
    "involvedObject":{"kind":"Pod","namespace":"alice","name":"p"},"reason":"FailedScheduling","message":"0/1 nodes",
    "source":{"component":"default-scheduler"},"firstTimestamp":"2024-01-01T00:00:00Z",
    "lastTimestamp":"2024-01-01T00:00:05Z","count":2,"type":"Warning"})",
                 "alice")
              .status == 201);
  auto list = f.json_of(f.call("GET", "/apis/events.k8s.io/v1/namespaces/alice/events", "", "alice"));
  CHECK(list["kind"] == "EventList");
  CHECK(list["apiVersion"] == "events.k8s.io/v1");
  REQUIRE(list["items"].as_array().size() == 2);
  const auto& e2 = list["items"].at(1).as_object();
  CHECK(e2.at("note") == "0/1 nodes");
  CHECK(e2.at("regarding").at("name") == "p");
  CHECK(e2.at("deprecatedSource").at("component") == "default-scheduler");
  CHECK(e2.at("deprecatedFirstTimestamp") == "2024-01-01T00:00:00Z");
  CHECK(e2.at("deprecatedLastTimestamp") == "2024-01-01T00:00:05Z");
  CHECK(e2.at("deprecatedCount") == 2);
  CHECK(e2.at("eventTime").is_null());
  CHECK(!e2.contains("message"));
  CHECK(f.json_of(f.call("GET", "/api/v1/namespaces/alice/events", "", "alice"))["items"].as_array().size() == 2);

  // A patch through events.k8s.io edits the note; core sees the message change.
  auto patched = f.call("PATCH", "/apis/events.k8s.io/v1/namespaces/alice/events/e1",
                        R"({"note":"checkpoint 4 written"})", "alice", "application/merge-patch+json");
  REQUIRE_MESSAGE(patched.status == 200, patched.body);
  CHECK(f.json_of(patched)["note"] == "checkpoint 4 written");
  CHECK(f.json_of(f.call("GET", "/api/v1/namespaces/alice/events/e1", "", "alice"))["message"] ==
        "checkpoint 4 written");

  // events.k8s.io/v1 creation is validated strictly (ValidateEventCreate; the causes as
  // kube-apiserver v1.32 gives them: without eventTime the legacy rules check the namespaces).
  auto bad = f.call("POST", "/apis/events.k8s.io/v1/namespaces/alice/events",
                    R"({"metadata":{"name":"e3"},"note":"x","type":"Normal","deprecatedCount":3})", "alice");
  REQUIRE_MESSAGE(bad.status == 422, bad.body);
  const auto status = f.json_of(bad);
  std::vector<std::string> fields;
  for (const auto& c : status.at("details").at("causes").as_array()) fields.emplace_back(c.at("field").as_string());
  CHECK(fields == std::vector<std::string>{"involvedObject.namespace", "eventTime", "count"});

  // Deleting through one API removes it from both.
  CHECK(f.call("DELETE", "/apis/events.k8s.io/v1/namespaces/alice/events/e2", "", "alice").status == 200);
  CHECK(f.call("GET", "/api/v1/namespaces/alice/events/e2", "", "alice").status == 404);
  auto missing = f.json_of(f.call("GET", "/apis/events.k8s.io/v1/namespaces/alice/events/e2", "", "alice"));
  CHECK(missing["message"] == "events.events.k8s.io \"e2\" not found");
  CHECK(missing["details"].at("group") == "events.k8s.io");
  CHECK(f.store.list(f.store.type("events.k8s.io", "events"), "").items.empty());  // nothing stored twice
}

TEST_CASE("server-side apply: conflicts name keyed list items and group by manager; updates take fields") {
  Fixture f;
  const std::string path = "/apis/apps/v1/namespaces/alice/deployments/d";
  auto apply = [&](const std::string& body, const std::string& query = "") {
    return f.call("PATCH", path + "?fieldManager=ci" + query, body, "alice", "application/apply-patch+yaml");
  };
  const std::string config = R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
    "spec":{"replicas":2,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},
    "spec":{"containers":[{"name":"c","image":"busybox:1","ports":[{"containerPort":80}]}]}}}})";
  auto created = apply(config);
  REQUIRE_MESSAGE(created.status == 201, created.body);
  const auto fields = f.json_of(created)["metadata"].at("managedFields").at(0).at("fieldsV1");
  // Container ports are keyed by containerPort and protocol (defaulted TCP), the selector is atomic.
  CHECK(fields.at("f:spec")
            .at("f:template")
            .at("f:spec")
            .at("f:containers")
            .at(R"(k:{"name":"c"})")
            .at("f:ports")
            .as_object()
            .contains(R"(k:{"containerPort":80,"protocol":"TCP"})"));
  CHECK(fields.at("f:spec").at("f:selector").as_object().empty());
  // A PUT-style update by "ops" (User-Agent ops/1.0, no fieldManager) changes image and replicas.
  Request put;
  put.method = "PATCH";
  put.path = path;
  put.body = R"({"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"c","image":"busybox:2"}]}}}})";
  put.content_type = "application/strategic-merge-patch+json";
  put.user = "alice";
  put.user_agent = "ops/1.0 (linux)";
  REQUIRE(f.api.handle(put).status == 200);
  auto conflict = apply(config);
  REQUIRE(conflict.status == 409);
  auto status = f.json_of(conflict);
  CHECK(status["reason"] == "Conflict");
  CHECK(status["message"] ==
        "Apply failed with 2 conflicts: conflicts with \"ops\" using apps/v1:\n- .spec.replicas\n"
        "- .spec.template.spec.containers[name=\"c\"].image");
  const auto& causes = status["details"].at("causes").as_array();
  REQUIRE(causes.size() == 2);
  CHECK(causes[1].at("reason") == "FieldManagerConflict");
  CHECK(causes[1].at("message") == "conflict with \"ops\" using apps/v1");
  CHECK(causes[1].at("field") == ".spec.template.spec.containers[name=\"c\"].image");
  // Applying the values "ops" set is no conflict (shared ownership); force takes the rest.
  std::string agree = config;
  agree.replace(agree.find("\"replicas\":2"), 12, "\"replicas\":5");
  agree.replace(agree.find("busybox:1"), 9, "busybox:2");
  CHECK(apply(agree).status == 200);
  auto forced = apply(config, "&force=true");
  REQUIRE(forced.status == 200);
  auto d = f.json_of(forced);
  CHECK(d["spec"].at("replicas") == 2);
  CHECK(d["spec"].at("template").at("spec").at("containers").at(0).at("image") == "busybox:1");
  const auto& mf = d["metadata"].at("managedFields").as_array();
  REQUIRE(mf.size() == 1);  // "ops" owned nothing else
  CHECK(mf[0].at("manager") == "ci");
}

TEST_CASE("apply-patch YAML bodies: scalar typing, aliases budget, errors") {
  Fixture f;
  // A ConfigMap with an extra top-level field `x` (kept, as the store keeps unknown fields) holding
  // whatever the YAML scalar decodes to.
  auto decode = [&](const std::string& value) -> json::value {
    auto r =
        f.call("PATCH", "/api/v1/namespaces/alice/configmaps/y?fieldManager=t",
               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\nbinaryData: {}\ndata: {}\nx: " + value + "\n",
               "alice", "application/apply-patch+yaml");
    REQUIRE_MESSAGE(r.status < 300, r.body);
    auto o = f.json_of(r);
    f.call("DELETE", "/api/v1/namespaces/alice/configmaps/y", "", "alice");
    return o.contains("x") ? o["x"] : json::value("<absent>");
  };
  struct Row {
    std::string yaml;
    json::value want;
  };
  const Row rows[] = {
      {"true", true},
      {"False", false},
      {"TRUE", true},
      {"null", nullptr},
      {"~", nullptr},
      {"42", 42},
      {"-7", -7},
      {"+3", 3},
      {"0x1F", 31},
      {"0o17", 15},
      {"1.5", 1.5},
      {"1e3", 1000.0},
      {"\"42\"", "42"},
      {"'true'", "true"},
      {"web-1", "web-1"},
      {"12:30", "12:30"},
      // YAML 1.1 words (go-yaml v2 would read yes/on as booleans): YAML 1.2's core schema, as every
      // YAML reader of gpupool, keeps them strings.
      {"yes", "yes"},
      {"on", "on"},
      {"0777", 777},
  };
  for (const auto& r : rows) {
    CAPTURE(r.yaml);
    CHECK(decode(r.yaml) == r.want);
  }
  // A billion-laughs body is refused as go-yaml refuses it, instead of expanding.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c)
    bomb += std::string(1, c) + ": &" + c + " [*" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" +
            char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) +
            ", *" + char(c - 1) + "]\n";
  auto refused = f.call("PATCH", "/api/v1/namespaces/alice/configmaps/y?fieldManager=t", bomb, "alice",
                        "application/apply-patch+yaml");
  CHECK(refused.status == 400);
  CHECK(f.json_of(refused)["message"].as_string().find("excessive aliasing") != std::string::npos);
  // Malformed YAML is a 400 naming the problem.
  auto bad = f.call("PATCH", "/api/v1/namespaces/alice/configmaps/y?fieldManager=t", "a: [1, 2\n", "alice",
                    "application/apply-patch+yaml");
  CHECK(bad.status == 400);
  CHECK(f.json_of(bad)["message"] ==
        "error converting YAML to JSON: body:2: not valid YAML or JSON: end of sequence flow not found");
}

TEST_CASE("protobuf bodies: kubectl 1.32's `create deployment web --image=nginx`, byte for byte") {
  // The body `kubectl create deployment web --image=nginx -v=8` printed.
  const unsigned char bytes[] = {
      0x6b, 0x38, 0x73, 0x00, 0x0a, 0x15, 0x0a, 0x07, 0x61, 0x70, 0x70, 0x73, 0x2f, 0x76, 0x31, 0x12, 0x0a, 0x44, 0x65,
      0x70, 0x6c, 0x6f, 0x79, 0x6d, 0x65, 0x6e, 0x74, 0x12, 0xab, 0x01, 0x0a, 0x1f, 0x0a, 0x03, 0x77, 0x65, 0x62, 0x12,
      0x00, 0x1a, 0x00, 0x22, 0x00, 0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42, 0x00, 0x5a, 0x0a, 0x0a, 0x03, 0x61, 0x70,
      0x70, 0x12, 0x03, 0x77, 0x65, 0x62, 0x12, 0x7a, 0x08, 0x01, 0x12, 0x0c, 0x0a, 0x0a, 0x0a, 0x03, 0x61, 0x70, 0x70,
      0x12, 0x03, 0x77, 0x65, 0x62, 0x1a, 0x60, 0x0a, 0x1c, 0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00, 0x2a, 0x00,
      0x32, 0x00, 0x38, 0x00, 0x42, 0x00, 0x5a, 0x0a, 0x0a, 0x03, 0x61, 0x70, 0x70, 0x12, 0x03, 0x77, 0x65, 0x62, 0x12,
      0x40, 0x12, 0x22, 0x0a, 0x05, 0x6e, 0x67, 0x69, 0x6e, 0x78, 0x12, 0x05, 0x6e, 0x67, 0x69, 0x6e, 0x78, 0x2a, 0x00,
      0x42, 0x00, 0x6a, 0x00, 0x72, 0x00, 0x80, 0x01, 0x00, 0x88, 0x01, 0x00, 0x90, 0x01, 0x00, 0xa2, 0x01, 0x00, 0x1a,
      0x00, 0x32, 0x00, 0x42, 0x00, 0x4a, 0x00, 0x52, 0x00, 0x58, 0x00, 0x60, 0x00, 0x68, 0x00, 0x82, 0x01, 0x00, 0x8a,
      0x01, 0x00, 0x9a, 0x01, 0x00, 0xc2, 0x01, 0x00, 0x22, 0x02, 0x0a, 0x00, 0x28, 0x00, 0x38, 0x00, 0x1a, 0x0c, 0x08,
      0x00, 0x10, 0x00, 0x18, 0x00, 0x20, 0x00, 0x28, 0x00, 0x38, 0x00, 0x1a, 0x00, 0x22, 0x00};
  const std::string body(reinterpret_cast<const char*>(bytes), sizeof bytes);
  Fixture f;
  auto created = f.call("POST", "/apis/apps/v1/namespaces/alice/deployments?fieldManager=kubectl-create", body, "alice",
                        "application/vnd.kubernetes.protobuf");
  REQUIRE_MESSAGE(created.status == 201, created.body);
  auto d = f.store.get(f.store.type("apps", "deployments"), "alice", "web");
  // Zero values of non-pointer fields are gone (as `omitempty` drops them), so defaults applied;
  // replicas (a pointer) keeps its value.
  CHECK(json::serialize(d.at("metadata").at("labels")) == R"({"app":"web"})");
  CHECK(d.at("spec").at("replicas") == 1);
  CHECK(json::serialize(d.at("spec").at("selector")) == R"({"matchLabels":{"app":"web"}})");
  CHECK(json::serialize(d.at("spec").at("template").at("metadata")) ==
        R"({"labels":{"app":"web"},"creationTimestamp":null})");
  const auto& container = d.at("spec").at("template").at("spec").at("containers").at(0).as_object();
  CHECK(container.at("name") == "nginx");
  CHECK(container.at("image") == "nginx");
  CHECK(!container.contains("workingDir"));
  CHECK(!container.contains("stdin"));
  CHECK(d.at("spec").at("strategy").at("type") == "RollingUpdate");
  CHECK(d.at("spec").at("template").at("spec").at("restartPolicy") == "Always");
  // Truncated or foreign bodies are errors, not crashes: every prefix of the body, and every
  // single-byte corruption of it, is answered with a Status (never a 500).
  CHECK(f.call("POST", "/apis/apps/v1/namespaces/alice/deployments", body.substr(0, 40), "alice",
               "application/vnd.kubernetes.protobuf")
            .status == 400);
  for (std::size_t n = 0; n < body.size(); ++n) {
    std::string corrupt = body;
    corrupt[n] = static_cast<char>(corrupt[n] ^ 0x5a);
    for (const std::string& b : {body.substr(0, n), corrupt}) {
      auto reply =
          f.call("POST", "/apis/apps/v1/namespaces/bob/deployments", b, "admin", "application/vnd.kubernetes.protobuf");
      CAPTURE(n);
      CHECK(reply.status != 500);
      CHECK(f.json_of(reply).contains("kind"));
      if (reply.status == 201)
        f.store.remove(f.store.type("apps", "deployments"), "bob", field_value(f.json_of(reply), "metadata.name"));
    }
  }
  CHECK(
      f.call("POST", "/apis/apps/v1/namespaces/alice/deployments", "{}", "alice", "application/vnd.kubernetes.protobuf")
          .status == 400);
}

TEST_CASE("impersonation: RBAC on users, service accounts, uids and extras; headers without a user") {
  // staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go
  Fixture f;
  const char* role =
      R"({"metadata":{"name":"imp"},"rules":[{"apiGroups":[""],"resources":["users"],"verbs":["impersonate"]},
    {"apiGroups":["authentication.k8s.io"],"resources":["userextras/scopes"],"verbs":["impersonate"]}]})";
  f.store.create(f.store.type("rbac.authorization.k8s.io", "clusterroles"), "", json::parse(role).as_object());
  f.store.create(f.store.type("rbac.authorization.k8s.io", "clusterrolebindings"), "",
                 json::parse(R"({"metadata":{"name":"imp"},
                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"imp"},
                   "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"imp"}]})")
                     .as_object());
  const auto as = [&](auto&& fill) {
    Request r =
        testing::admin_request("GET", "/api/v1/namespaces/alice/pods", "", "application/json", "application/json");
    r.user = "imp";
    r.groups = {"system:authenticated"};
    fill(r);
    return f.api.handle(r);
  };
  const auto message = [&](const Response& r) { return std::string(f.json_of(r).at("message").as_string()); };
  // Allowed: the user and its `scopes` extra; the pods of alice are then alice's to list.
  CHECK(as([](Request& r) {
          r.impersonate_user = "alice";
          r.impersonate_extra["scopes"] = {"a"};
        }).status == 200);
  Response uid = as([](Request& r) {
    r.impersonate_user = "alice";
    r.impersonate_uid = "x";
  });
  CHECK(uid.status == 403);
  CHECK(message(uid) ==
        "uids.authentication.k8s.io \"x\" is forbidden: User \"imp\" cannot impersonate resource "
        "\"uids\" in API group \"authentication.k8s.io\" at the cluster scope");
  Response extra = as([](Request& r) {
    r.impersonate_user = "alice";
    r.impersonate_extra["team"] = {"t"};
  });
  CHECK(extra.status == 403);
  CHECK(message(extra) ==
        "userextras.authentication.k8s.io \"t\" is forbidden: User \"imp\" cannot impersonate "
        "resource \"userextras/team\" in API group \"authentication.k8s.io\" at the cluster scope");
  Response sa = as([](Request& r) { r.impersonate_user = "system:serviceaccount:alice:robot"; });
  CHECK(sa.status == 403);
  CHECK(message(sa) ==
        "serviceaccounts \"robot\" is forbidden: User \"imp\" cannot impersonate resource "
        "\"serviceaccounts\" in API group \"\" in the namespace \"alice\"");
  // Not a service account's name (a capital letter): a user, whom imp may impersonate.
  CHECK(as([](Request& r) { r.impersonate_user = "system:serviceaccount:alice:Robot"; }).status == 403);
  Response nouser = as([](Request& r) {
    r.target = "/api/v1/namespaces/alice/pods?limit=1&x=<a>";
    r.impersonate_extra["x"] = {"a"};
    r.impersonate_uid = "u";
  });
  CHECK(nouser.status == 500);
  CHECK(nouser.content_type == "text/plain; charset=utf-8");
  CHECK(nouser.body ==
        "Internal Server Error: \"/api/v1/namespaces/alice/pods?limit=1&amp;x=&lt;a&gt;\": requested [{UserExtra  a  "
        "authentication.k8s.io/v1  x} {UID  u  authentication.k8s.io/v1  }] without impersonating a user\n");
}
