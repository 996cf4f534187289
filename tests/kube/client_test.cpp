#include <doctest/doctest.h>

#include "kube/status.hpp"

#include <atomic>
#include <boost/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "gpupool/client.hpp"
#include "gpupool/error.hpp"
#include "kube/fake_transport.hpp"
#include "kube/mutator.hpp"
#include "kube/temp_dir.hpp"

using namespace std::chrono_literals;
namespace json = boost::json;
using gpupool::ApiError;
using gpupool::Client;
using gpupool::HttpRequest;
using gpupool::HttpResponse;
using gpupool::RequestCredentials;
using gpupool::ResourceRef;
using gpupool::test::FakeTransport;
using gpupool::test::respond;
using gpupool::test::status_body;

namespace {

const char* kToken = "SECRET-TOKEN-123";
const ResourceRef kPods{"", "v1", "pods", "Pod", true};
const ResourceRef kNodes{"", "v1", "nodes", "Node", false};
const ResourceRef kMpiJobs{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};

struct Harness {
  std::shared_ptr<FakeTransport> transport;
  std::vector<std::chrono::milliseconds> sleeps;
  std::vector<std::string> logs;
  std::mutex log_mutex;
  std::unique_ptr<Client> client;

  explicit Harness(FakeTransport::Handler handler, gpupool::KubeConfig cfg = {}, std::size_t max_response_bytes = 0) {
    if (cfg.cluster.server.empty()) {
      cfg.cluster.server = "https://k8s.example:6443";
      cfg.namespace_name = "alice";
      cfg.user.token = kToken;
    }
    transport = std::make_shared<FakeTransport>(std::move(handler));
    gpupool::ClientOptions o;
    o.transport_override = transport;
    if (max_response_bytes) o.transport.max_response_bytes = max_response_bytes;
    o.retry.initial_backoff = 100ms;
    o.retry.sleep = [this](std::chrono::milliseconds d) { sleeps.push_back(d); };
    o.retry.random = [] { return 0.0; };
    o.logger = [this](gpupool::LogLevel, const std::string& m) {
      std::lock_guard lock(log_mutex);
      logs.push_back(m);
    };
    client = std::make_unique<Client>(cfg, o);
  }
  std::vector<std::string> targets() const {
    std::vector<std::string> out;
    for (const auto& r : transport->requests()) out.push_back(r.method + " " + r.target);
    return out;
  }
};

std::string header(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "";
}

json::object pod(const std::string& name, const std::string& rv = "1") {
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", {{"name", name}, {"namespace", "alice"}, {"resourceVersion", rv}}}};
}

}  // namespace

TEST_CASE("request paths, namespaces and queries") {
  Harness h([](const HttpRequest&, const RequestCredentials&) { return respond(200, R"({"kind":"X","items":[]})"); });
  auto& c = *h.client;
  c.get(kPods, "", "p1");
  c.get(kPods, "bob", "p 2");
  c.get(kNodes, "ignored", "node-1");
  c.get(kMpiJobs, "", "job");
  c.list(kPods, "", {.label_selector = "app=train,tier!=web", .field_selector = "spec.nodeName=n1", .limit = 5});
  c.list(kPods, "", {.all_namespaces = true});
  c.create(kPods, "", pod("p"), {.dry_run = true, .field_manager = "gpupool"});
  c.patch(kPods, "", "p", gpupool::PatchType::apply, json::object{{"metadata", json::object{}}},
          {.field_manager = "gpupool", .force = true});
  CHECK(h.targets() == std::vector<std::string>{
                           "GET /api/v1/namespaces/alice/pods/p1",
                           "GET /api/v1/namespaces/bob/pods/p%202",
                           "GET /api/v1/nodes/node-1",
                           "GET /apis/kubeflow.org/v2beta1/namespaces/alice/mpijobs/job",
                           "GET "
                           "/api/v1/namespaces/alice/"
                           "pods?labelSelector=app%3Dtrain%2Ctier%21%3Dweb&fieldSelector=spec.nodeName%3Dn1&limit=5",
                           "GET /api/v1/pods",
                           "POST /api/v1/namespaces/alice/pods?dryRun=All&fieldManager=gpupool",
                           "PATCH /api/v1/namespaces/alice/pods/p?fieldManager=gpupool&force=true",
                       });
  for (const auto& cred : h.transport->credentials()) CHECK(cred.bearer_token == kToken);
}

TEST_CASE("get_each: one batch for every type; 404 is nullopt; other failures as get() has them") {
  const ResourceRef a{"x.io", "v1", "as", "A", true}, b{"x.io", "v1", "bs", "B", true},
      c{"x.io", "v1", "cs", "C", true}, d{"x.io", "v1", "ds", "D", true};
  std::map<std::string, int> asked;
  Harness h([&](const HttpRequest& r, const RequestCredentials&) {
    const int n = ++asked[r.target];
    if (r.target.find("/as/") != std::string::npos)
      return respond(404, status_body(404, "NotFound", "as \"j\" not found"));
    if (r.target.find("/bs/") != std::string::npos) return respond(200, R"({"kind":"B","metadata":{"name":"j"}})");
    if (r.target.find("/cs/") != std::string::npos)  // fails once, then answers
      return n == 1 ? respond(503, status_body(503, "ServiceUnavailable", "busy")) : respond(200, R"({"kind":"C"})");
    return respond(403, status_body(403, "Forbidden", "ds \"j\" is forbidden: User \"u\" cannot get resource"));
  });
  // Stopping at the first found: C's 503 and D's 403 come after B and are not looked at.
  auto first = h.client->get_each({a, b, c, d}, "", "j", true);
  REQUIRE(first.size() == 4);
  CHECK_FALSE(first[0]);
  REQUIRE(first[1]);
  CHECK(json::value_to<std::string>(first[1]->at("kind")) == "B");
  CHECK_FALSE(first[2]);
  CHECK_FALSE(first[3]);
  CHECK(h.transport->batch_sizes() == std::vector<std::size_t>{4});
  CHECK(h.targets() ==
        std::vector<std::string>{"GET /apis/x.io/v1/namespaces/alice/as/j", "GET /apis/x.io/v1/namespaces/alice/bs/j",
                                 "GET /apis/x.io/v1/namespaces/alice/cs/j", "GET /apis/x.io/v1/namespaces/alice/ds/j"});
  // Every answer wanted: C's 503 is asked again alone (get()'s retry, after its back-off) and D's
  // 403 is thrown as get() throws it, without asking again.
  asked.clear();
  try {
    h.client->get_each({a, b, c, d}, "", "j");
    FAIL("the 403 should have been thrown");
  } catch (const ApiError& e) {
    CHECK(e.code() == 403);
  }
  CHECK(asked["/apis/x.io/v1/namespaces/alice/cs/j"] == 2);
  CHECK(asked["/apis/x.io/v1/namespaces/alice/ds/j"] == 1);
  // A 429's Retry-After is waited for before the request goes again, alone.
  bool busy = true;
  Harness r([&](const HttpRequest& req, const RequestCredentials&) {
    if (req.target.find("/bs/") != std::string::npos && std::exchange(busy, false))
      return respond(429, status_body(429, "TooManyRequests", "slow down"), {{"Retry-After", "3"}});
    return respond(404, status_body(404, "NotFound", "not found"));
  });
  auto none = r.client->get_each({a, b}, "", "j");
  CHECK_FALSE(none[0]);
  CHECK_FALSE(none[1]);
  CHECK(r.sleeps == std::vector<std::chrono::milliseconds>{3s});
  CHECK(r.targets().size() == 3);
  auto cs = h.client->get_each({a, c}, "", "j");
  CHECK_FALSE(cs[0]);
  CHECK(cs[1]);
  CHECK_THROWS_AS(h.client->get_each({a}, "", ""), gpupool::ValidationError);
}

TEST_CASE("read_each: objects and lists in one batch; a paged list is read whole; a speculative read never throws") {
  const ResourceRef a{"x.io", "v1", "as", "A", true}, pods{"", "v1", "pods", "Pod", true},
      svcs{"", "v1", "services", "Service", true};
  std::map<std::string, int> asked;
  Harness h([&](const HttpRequest& r, const RequestCredentials&) {
    ++asked[r.target];
    if (r.target.find("/as/") != std::string::npos) return respond(200, R"({"kind":"A","metadata":{"name":"j"}})");
    if (r.target.find("/pods?") != std::string::npos) {
      if (r.target.find("continue=next") == std::string::npos)  // two pages
        return respond(200,
                       R"({"kind":"PodList","metadata":{"continue":"next"},"items":[{"metadata":{"name":"p0"}}]})");
      return respond(200, R"({"kind":"PodList","metadata":{},"items":[{"metadata":{"name":"p1"}}]})");
    }
    return respond(403, status_body(403, "Forbidden", "services is forbidden: User \"u\" cannot list resource"));
  });
  gpupool::ListOptions selected;
  selected.label_selector = "app=j";
  auto got = h.client->read_each({{a, "", "j"}, {pods, "", "", selected}, {svcs, "", "", selected, true}});
  REQUIRE(got.size() == 3);
  REQUIRE(got[0].object);
  CHECK(got[0].ok);
  CHECK(json::value_to<std::string>(got[0].object->at("kind")) == "A");
  CHECK(got[1].ok);
  REQUIRE(got[1].items.size() == 2);  // the first page came with the batch, the second after it
  CHECK(got[1].items[1].at("metadata").at("name") == "p1");
  CHECK_FALSE(got[2].ok);  // speculative: its 403 is not thrown, nor asked again
  CHECK(got[2].items.empty());
  CHECK(h.transport->batch_sizes() == std::vector<std::size_t>{3});
  CHECK(h.targets() ==
        std::vector<std::string>{"GET /apis/x.io/v1/namespaces/alice/as/j",
                                 "GET /api/v1/namespaces/alice/pods?labelSelector=app%3Dj",
                                 "GET /api/v1/namespaces/alice/services?labelSelector=app%3Dj",
                                 "GET /api/v1/namespaces/alice/pods?labelSelector=app%3Dj&continue=next"});
  // The same list read for need is thrown as list_all() throws it.
  CHECK_THROWS_AS(h.client->read_each({{svcs, "", "", selected}}), ApiError);
}

TEST_CASE("read_each: a dry-run create goes with the reads; a speculative read waits out a 429's Retry-After") {
  const ResourceRef a{"x.io", "v1", "as", "A", true}, pods{"", "v1", "pods", "Pod", true};
  int dry_runs = 0;
  std::vector<HttpRequest> posts;
  Harness h([&](const HttpRequest& r, const RequestCredentials&) {
    if (r.method == "POST") {
      posts.push_back(r);
      if (++dry_runs == 1)
        return respond(429, status_body(429, "TooManyRequests", "slow down"), {{"Retry-After", "2"}});
      return respond(201, R"({"kind":"Pod","metadata":{"name":"gpupool-preflight-x"},"spec":{"priority":0}})");
    }
    return respond(404, status_body(404, "NotFound", "as.x.io \"j\" not found"));
  });
  const json::object pod{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"generateName", "gpupool-preflight-"}}}};
  Client::Read dry{pods, "", ""};
  dry.speculative = true;
  dry.dry_run_create = &pod;
  dry.field_manager = "gpupool";
  auto got = h.client->read_each({{a, "", "j"}, dry});
  REQUIRE(got.size() == 2);
  CHECK(got[0].ok);
  CHECK_FALSE(got[0].object);  // 404: not there
  REQUIRE(got[1].ok);          // the 429 was waited out (Retry-After: 2 s) and the dry run sent again
  REQUIRE(got[1].object);
  CHECK(got[1].object->at("spec").at("priority") == 0);
  CHECK(h.sleeps == std::vector<std::chrono::milliseconds>{2000ms});
  CHECK(h.transport->batch_sizes() == std::vector<std::size_t>{2});  // the first dry run went with the GET
  REQUIRE(posts.size() == 2);
  CHECK(posts[0].target == "/api/v1/namespaces/alice/pods?dryRun=All&fieldManager=gpupool");
  CHECK(posts[0].no_side_effects);
  CHECK(json::parse(posts[0].body) == json::value(pod));
  // Not speculative, a refusal is thrown as create() throws it.
  Harness refused([](const HttpRequest& r, const RequestCredentials&) {
    if (r.method == "POST")
      return respond(403, status_body(403, "Forbidden", "pods \"x\" is forbidden: exceeded quota: q"));
    return respond(404, status_body(404, "NotFound", "not found"));
  });
  dry.speculative = false;
  CHECK_THROWS_WITH_AS(refused.client->read_each({{a, "", "j"}, dry}), doctest::Contains("exceeded quota: q"),
                       ApiError);
}

TEST_CASE("patch content types and argument checks") {
  Harness h([](const HttpRequest&, const RequestCredentials&) { return respond(200, "{}"); });
  struct Case {
    gpupool::PatchType type;
    json::value patch;
    std::string content_type;
  };
  const std::vector<Case> cases = {
      {gpupool::PatchType::merge, json::object{{"spec", json::object{}}}, "application/merge-patch+json"},
      {gpupool::PatchType::strategic, json::object{{"spec", json::object{}}}, "application/strategic-merge-patch+json"},
      {gpupool::PatchType::json, json::array{json::object{{"op", "remove"}, {"path", "/spec/x"}}},
       "application/json-patch+json"},
      {gpupool::PatchType::apply, json::object{{"apiVersion", "v1"}}, "application/apply-patch+yaml"},
  };
  for (const auto& tc : cases) {
    h.client->patch(kPods, "", "p", tc.type, tc.patch, {.field_manager = "fm"});
    auto req = h.transport->requests().back();
    CHECK(header(req, "Content-Type") == tc.content_type);
    CHECK(json::parse(req.body) == tc.patch);
  }
  CHECK_THROWS_AS(h.client->patch(kPods, "", "p", gpupool::PatchType::apply, json::object{}), gpupool::ValidationError);
  CHECK_THROWS_AS(h.client->patch(kPods, "", "p", gpupool::PatchType::json, json::object{}), gpupool::ValidationError);
  CHECK_THROWS_AS(h.client->patch(kPods, "", "p", gpupool::PatchType::merge, json::object{}, {.force = true}),
                  gpupool::ValidationError);
}

TEST_CASE("delete sends DeleteOptions; a retried delete that finds nothing succeeded") {
  int calls = 0;
  Harness h([&](const HttpRequest&, const RequestCredentials&) {
    ++calls;
    if (calls == 1) throw gpupool::TransportError("connection reset");  // the first DELETE went through
    return respond(404, status_body(404, "NotFound", "pods \"p\" not found"));
  });
  auto out = h.client->remove(kPods, "", "p",
                              {.propagation = gpupool::PropagationPolicy::foreground,
                               .dry_run = false,
                               .grace_period_seconds = 0,
                               .precondition_uid = "u-1"});
  CHECK(out.at("status").as_string() == "Success");
  auto body = json::parse(h.transport->requests()[0].body).as_object();
  CHECK(body.at("propagationPolicy").as_string() == "Foreground");
  CHECK(body.at("gracePeriodSeconds").as_int64() == 0);
  CHECK(body.at("preconditions").at("uid").as_string() == "u-1");
  // A first-attempt 404 is the caller's business.
  calls = 1;
  CHECK_THROWS_AS(h.client->remove(kPods, "", "p"), ApiError);
}

TEST_CASE("list_all follows continue tokens") {
  Harness h([](const HttpRequest& r, const RequestCredentials&) {
    if (r.target.find("continue=t2") != std::string::npos)
      return respond(200,
                     R"({"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"c"}}]})");
    if (r.target.find("continue=t1") != std::string::npos)
      return respond(200, R"({"kind":"PodList","metadata":{"continue":"t2"},"items":[{"metadata":{"name":"b"}}]})");
    return respond(200, R"({"kind":"PodList","metadata":{"continue":"t1"},"items":[{"metadata":{"name":"a"}}]})");
  });
  auto items = h.client->list_all(kPods, "", {.limit = 1});
  REQUIRE(items.size() == 3);
  CHECK(items[2].at("metadata").at("name").as_string() == "c");
  CHECK(h.targets().size() == 3);
  for (const auto& t : h.targets()) CHECK(t.find("limit=1") != std::string::npos);
}

TEST_CASE("retries follow the policy: verbs, Retry-After, caps") {
  struct Case {
    std::string name;
    std::vector<HttpResponse> script;  // status 0 = connection failure
    bool post;                         // create (not replay-safe) instead of get
    int expected_calls;
    bool succeeds;
    std::vector<std::chrono::milliseconds> sleeps;
  };
  auto ok = respond(200, "{}");
  const std::vector<Case> cases = {
      {"GET 503 then ok", {respond(503, ""), ok}, false, 2, true, {100ms}},
      {"POST 503 without Retry-After is final", {respond(503, ""), ok}, true, 1, false, {}},
      {"POST 503 with Retry-After", {respond(503, "", {{"Retry-After", "2"}}), ok}, true, 2, true, {2000ms}},
      {"POST 429", {respond(429, status_body(429, "TooManyRequests", "slow")), ok}, true, 2, true, {100ms}},
      {"GET reset twice", {respond(0, ""), respond(0, ""), ok}, false, 3, true, {100ms, 200ms}},
      {"POST reset is final", {respond(0, ""), ok}, true, 1, false, {}},
      {"GET 404 is final", {respond(404, status_body(404, "NotFound", "x")), ok}, false, 1, false, {}},
  };
  for (const auto& tc : cases) {
    CAPTURE(tc.name);
    std::size_t i = 0;
    Harness h([&](const HttpRequest&, const RequestCredentials&) {
      const HttpResponse& r = tc.script.at(std::min(i++, tc.script.size() - 1));
      if (r.status == 0) throw gpupool::TransportError("connection reset by peer");
      return r;
    });
    bool ok_result = true;
    try {
      if (tc.post) {
        h.client->create(kPods, "", pod("p"));
      } else {
        h.client->get(kPods, "", "p");
      }
    } catch (const gpupool::Error&) {
      ok_result = false;
    }
    CHECK(ok_result == tc.succeeds);
    CHECK(static_cast<int>(i) == tc.expected_calls);
    CHECK(h.sleeps == tc.sleeps);
  }
  // The cap: 1 try + max_retries.
  int n = 0;
  Harness h([&](const HttpRequest&, const RequestCredentials&) {
    ++n;
    return respond(500, "", {{"Retry-After", "0"}});
  });
  CHECK_THROWS_AS(h.client->get(kPods, "", "p"), ApiError);
  CHECK(n == 11);
}

TEST_CASE("create_idempotent: a lost response is recognised on retry; another owner's object is not ours") {
  std::map<std::string, json::object> store;
  bool lose_first_response = true;
  Harness h([&](const HttpRequest& r, const RequestCredentials&) {
    if (r.method == "POST") {
      auto obj = json::parse(r.body).as_object();
      std::string name(obj.at("metadata").at("name").as_string());
      if (store.count(name))
        return respond(409, status_body(409, "AlreadyExists", "pods \\\"" + name + "\\\" already exists"));
      store[name] = obj;
      if (lose_first_response) {
        lose_first_response = false;
        throw gpupool::TransportError("connection reset after the request was sent");
      }
      return respond(201, json::serialize(obj));
    }
    std::string name = r.target.substr(r.target.rfind('/') + 1);
    return respond(200, json::serialize(store.at(name)));
  });
  auto created = h.client->create_idempotent(kPods, "", pod("train-1"));
  const auto& ann = created.at("metadata").at("annotations").as_object();
  CHECK(ann.at("gpupool.io/submission-id").as_string().size() == 32);
  CHECK(h.targets() == std::vector<std::string>{"POST /api/v1/namespaces/alice/pods",
                                                "POST /api/v1/namespaces/alice/pods",
                                                "GET /api/v1/namespaces/alice/pods/train-1"});
  // Exactly one object exists.
  CHECK(store.size() == 1);
  // Someone else's object with the same name: a clear error.
  store["taken"] = pod("taken");
  try {
    h.client->create_idempotent(kPods, "", pod("taken"));
    FAIL("no error");
  } catch (const ApiError& e) {
    CHECK(e.code() == 409);
    CHECK(std::string(e.what()).find("name is already taken") != std::string::npos);
    CHECK(std::string(e.what()).find("namespace \"alice\"") != std::string::npos);
  }
  // A caller-supplied id is kept, so a whole call can be repeated safely.
  auto with_id = pod("train-2");
  with_id["metadata"].as_object()["annotations"] = json::object{{"gpupool.io/submission-id", "my-id"}};
  h.client->create_idempotent(kPods, "", with_id);
  CHECK(h.client->create_idempotent(kPods, "", with_id).at("metadata").at("name").as_string() == "train-2");
  CHECK_THROWS_AS(
      h.client->create_idempotent(kPods, "", json::object{{"metadata", json::object{{"generateName", "x-"}}}}),
      gpupool::ValidationError);
}

TEST_CASE("a 403 in another namespace says which namespace the kubeconfig gives") {
  Harness h([](const HttpRequest&, const RequestCredentials&) {
    return respond(403, status_body(403, "Forbidden",
                                    "pods is forbidden: User \\\"alice\\\" cannot list resource \\\"pods\\\" in API "
                                    "group \\\"\\\" in the namespace \\\"bob\\\""));
  });
  try {
    h.client->list(kPods, "bob");
    FAIL("no error");
  } catch (const ApiError& e) {
    CHECK(e.code() == 403);
    CHECK(std::string(e.what()).find(
              "namespace \"bob\"; your kubeconfig's namespace is \"alice\": pass -n alice or omit --namespace") !=
          std::string::npos);
  }
  try {
    h.client->list(kPods, "");
    FAIL("no error");
  } catch (const ApiError& e) {
    CHECK(std::string(e.what()).find("your kubeconfig's namespace") == std::string::npos);
  }
}

TEST_CASE("a 403 that is not about the namespace gets no namespace hint") {
  // Admission refusals (quota, a missing PriorityClass) are 403 too; they are about the object.
  for (const char* message :
       {"pods \\\"p\\\" is forbidden: exceeded quota: q, requested: cpu=2, used: cpu=0, limited: cpu=1",
        "pods \\\"p\\\" is forbidden: no PriorityClass with name nosuch was found"}) {
    Harness h([&](const HttpRequest&, const RequestCredentials&) {
      return respond(403, status_body(403, "Forbidden", message));
    });
    try {
      h.client->create(kPods, "bob", pod("p"));
      FAIL("no error");
    } catch (const ApiError& e) {
      CHECK(e.code() == 403);
      CHECK(std::string(e.what()).find("is forbidden: ") != std::string::npos);
      CHECK(std::string(e.what()).find("kubeconfig") == std::string::npos);
    }
  }
}

TEST_CASE("the server's Warning headers are logged, one line each, as kubectl prints them") {
  Harness h([](const HttpRequest&, const RequestCredentials&) {
    HttpResponse r = respond(201, json::serialize(pod("p")));
    r.headers.emplace_back("Warning",
                           "299 - \"spec.containers[0].env[1]: hides previous definition of \\\"A\\\", which may be "
                           "dropped when using apply\"");
    r.headers.emplace_back("warning",
                           "299 - \"first\", 299 - \"second, with a comma\" \"Wed, 21 Oct 2015 07:28:00 GMT\"");
    r.headers.emplace_back("Warning", "malformed");
    return r;
  });
  h.client->create(kPods, "alice", pod("p"));
  CHECK(h.logs ==
        std::vector<std::string>{
            "spec.containers[0].env[1]: hides previous definition of \"A\", which may be dropped when using apply",
            "first", "second, with a comma"});
}

TEST_CASE("Warning header values parse as client-go's ParseWarningHeader reads them") {
  using gpupool::kube::warning_texts;
  CHECK(warning_texts("299 - \"a\"") == std::vector<std::string>{"a"});
  CHECK(warning_texts("299 kube-apiserver \"a \\\"b\\\"\"") == std::vector<std::string>{"a \"b\""});
  CHECK(warning_texts("299 - \"a\",299 - \"b\"") == std::vector<std::string>{"a", "b"});
  CHECK(warning_texts("299 - \"unterminated").empty());
  CHECK(warning_texts("29 - \"short code\"").empty());
  CHECK(warning_texts("299 \"no agent\"").empty());
  CHECK(warning_texts("").empty());
}

TEST_CASE("a 401 re-reads a changed token file once, then gives up") {
  gpupool::test::TempDir dir;
  gpupool::KubeConfig cfg;
  cfg.cluster.server = "https://k";
  cfg.user.token_file = dir.write("token", "old");
  Harness h(
      [&](const HttpRequest&, const RequestCredentials& c) {
        if (c.bearer_token == "old") {
          dir.write("token", "rotated-token");  // rotated behind our back
          return respond(401, status_body(401, "Unauthorized", "Unauthorized"));
        }
        return respond(c.bearer_token == "rotated-token" ? 200 : 401, "{}");
      },
      cfg);
  h.client->get(kPods, "", "p");
  CHECK(h.transport->credentials().back().bearer_token == "rotated-token");
  dir.write("token", "bad-but-different");
  // "bad-but-different" gets 401; the file does not change again, so no second retry.
  CHECK_THROWS_AS(h.client->get(kPods, "", "p"), ApiError);
}

TEST_CASE("watch: delivers events, resumes from the last resourceVersion and bookmark, re-lists on 410") {
  int watch_calls = 0, list_calls = 0;
  auto line = [](const std::string& type, const std::string& name, const std::string& rv) {
    return R"({"type":")" + type + R"(","object":{"metadata":{"name":")" + name +
           R"(","namespace":"alice","resourceVersion":")" + rv + "\"}}}\n";
  };
  Harness h([&](const HttpRequest& r, const RequestCredentials&) {
    if (r.target.find("watch=1") == std::string::npos) {
      ++list_calls;
      if (list_calls == 1)
        return respond(
            200,
            R"({"metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"a","namespace":"alice","resourceVersion":"5"}}]})");
      // after 410: "a" is gone, "b" changed, "c" is new
      return respond(200, R"({"metadata":{"resourceVersion":"30"},"items":[
        {"metadata":{"name":"b","namespace":"alice","resourceVersion":"25"}},
        {"metadata":{"name":"c","namespace":"alice","resourceVersion":"26"}}]})");
    }
    ++watch_calls;
    if (watch_calls == 1) return respond(200, line("ADDED", "b", "11") + line("BOOKMARK", "", "15"));
    if (watch_calls == 2) throw gpupool::TransportError("connection reset");
    if (watch_calls == 3)
      return respond(200,
                     R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})"
                     "\n");
    return respond(200, line("MODIFIED", "c", "31") + line("DELETED", "b", "32"));
  });
  std::vector<std::string> seen;
  std::string last = h.client->watch(kPods, "", {.label_selector = "app=x"}, [&](const gpupool::WatchEvent& e) {
    seen.push_back(e.type + " " + std::string(e.object.at("metadata").at("name").as_string()));
    return seen.size() < 7;
  });
  CHECK(seen == std::vector<std::string>{"ADDED a", "ADDED b", "DELETED a", "MODIFIED b", "ADDED c", "MODIFIED c",
                                         "DELETED b"});
  CHECK(last == "32");
  auto t = h.targets();
  REQUIRE(t.size() == 6);
  CHECK(t[1].find("watch=1&allowWatchBookmarks=true&resourceVersion=10&labelSelector=app%3Dx") != std::string::npos);
  CHECK(t[2].find("resourceVersion=15") != std::string::npos);  // resumed from the bookmark
  CHECK(t[3].find("resourceVersion=15") != std::string::npos);
  CHECK(t[5].find("resourceVersion=30") != std::string::npos);  // after the re-list
  CHECK(h.sleeps.size() == 1);                                  // one backoff for the reset
}

TEST_CASE("watch stops on cancel and passes non-retryable errors up") {
  gpupool::CancelToken cancel;
  int calls = 0;
  Harness h([&](const HttpRequest&, const RequestCredentials&) {
    if (++calls == 3) cancel.cancel();
    return respond(200, "");  // the server closes each watch at once
  });
  h.client->watch(
      kPods, "", {.resource_version = "7"}, [](const gpupool::WatchEvent&) { return true; }, cancel);
  CHECK(calls == 3);
  CHECK(h.sleeps.size() == 1);  // connections closing empty-handed are retried with a backoff
  Harness forbidden(
      [](const HttpRequest&, const RequestCredentials&) { return respond(403, status_body(403, "Forbidden", "no")); });
  CHECK_THROWS_AS(
      forbidden.client->watch(kPods, "bob", {.resource_version = "1"}, [](const gpupool::WatchEvent&) { return true; }),
      ApiError);
}

TEST_CASE("logs arrive line by line with the query kubectl sends") {
  Harness h([](const HttpRequest&, const RequestCredentials&) {
    return respond(200, "epoch 1 loss 0.9\r\nepoch 2 loss 0.5\nlast line");
  });
  std::vector<std::string> lines;
  h.client->logs("", "trainer-0",
                 {.container = "main", .follow = true, .previous = true, .timestamps = false, .tail_lines = 100},
                 [&](std::string_view l) {
                   lines.emplace_back(l);
                   return true;
                 });
  CHECK(lines == std::vector<std::string>{"epoch 1 loss 0.9", "epoch 2 loss 0.5", "last line"});
  CHECK(h.targets().at(0) ==
        "GET /api/v1/namespaces/alice/pods/trainer-0/log?container=main&follow=true&previous=true&tailLines=100");
  lines.clear();
  h.client->logs("", "p", {}, [&](std::string_view l) {
    lines.emplace_back(l);
    return false;  // stop after one
  });
  CHECK(lines.size() == 1);
}

TEST_CASE("a watch or log line longer than max_response_bytes stops the stream, unretried") {
  // A hostile or broken server must not make the client buffer without bound.
  const std::string big(300, 'x');
  int calls = 0;
  Harness watch(
      [&](const HttpRequest&, const RequestCredentials&) {
        ++calls;
        return respond(200, R"({"type":"ADDED","object":)" + json::serialize(pod("a", "2")) +
                                "}\n{\"type\":\"ADDED\",\"object\":\"" + big);
      },
      {}, 200);
  std::vector<std::string> seen;
  CHECK_THROWS_WITH_AS(watch.client->watch(kPods, "", {.resource_version = "1"},
                                           [&](const gpupool::WatchEvent& e) {
                                             seen.push_back(e.type);
                                             return true;
                                           }),
                       doctest::Contains("longer than 200 bytes"), gpupool::ResponseTooLargeError);
  CHECK(seen == std::vector<std::string>{"ADDED"});  // the short line before it was delivered
  CHECK(calls == 1);
  CHECK(watch.sleeps.empty());

  calls = 0;
  Harness logs(
      [&](const HttpRequest&, const RequestCredentials&) {
        ++calls;
        return respond(200, "epoch 1\n" + big);
      },
      {}, 200);
  std::vector<std::string> lines;
  CHECK_THROWS_AS(logs.client->logs("", "p", {.follow = true},
                                    [&](std::string_view l) {
                                      lines.emplace_back(l);
                                      return true;
                                    }),
                  gpupool::ResponseTooLargeError);
  CHECK(lines == std::vector<std::string>{"epoch 1"});
  CHECK(calls == 1);
  // The same log within the limit arrives whole.
  Harness fits([&](const HttpRequest&, const RequestCredentials&) { return respond(200, "epoch 1\n" + big); }, {}, 400);
  lines.clear();
  fits.client->logs("", "p", {}, [&](std::string_view l) {
    lines.emplace_back(l);
    return true;
  });
  CHECK(lines == std::vector<std::string>{"epoch 1", big});
}

TEST_CASE("discovery: server version and which MPIJob version is served") {
  struct Case {
    std::string apis, preferred_version;
  };
  const std::vector<Case> cases = {
      {R"({"groups":[{"name":"kubeflow.org","versions":[{"groupVersion":"kubeflow.org/v2beta1","version":"v2beta1"},{"groupVersion":"kubeflow.org/v1","version":"v1"}],"preferredVersion":{"version":"v2beta1"}}]})",
       "v2beta1"},
      {R"({"groups":[{"name":"kubeflow.org","versions":[{"version":"v1"}],"preferredVersion":{"version":"v1"}}]})",
       "v1"},
      {R"({"groups":[{"name":"apps","versions":[{"version":"v1"}],"preferredVersion":{"version":"v1"}}]})", ""},
  };
  for (const auto& tc : cases) {
    Harness h([&](const HttpRequest& r, const RequestCredentials&) {
      if (r.target == "/version")
        return respond(200, R"({"major":"1","minor":"29","gitVersion":"v1.29.3","platform":"linux/amd64"})");
      if (r.target == "/apis") return respond(200, tc.apis);
      if (r.target == "/apis/kubeflow.org/v1" && tc.preferred_version == "v2beta1")
        return respond(200, R"({"resources":[{"name":"pytorchjobs","kind":"PyTorchJob","namespaced":true}]})");
      if (r.target.rfind("/apis/kubeflow.org/", 0) == 0)
        return respond(200,
                       R"({"resources":[{"name":"mpijobs","kind":"MPIJob","namespaced":true,"verbs":["get","list"]},
                                               {"name":"mpijobs/status","kind":"MPIJob","namespaced":true}]})");
      return respond(404, status_body(404, "NotFound", "nope"));
    });
    CHECK(h.client->server_version().git_version == "v1.29.3");
    auto found = h.client->find_resource("kubeflow.org", "MPIJob");
    CHECK(found.has_value() == !tc.preferred_version.empty());
    if (found) CHECK(*found == ResourceRef{"kubeflow.org", tc.preferred_version, "mpijobs", "MPIJob", true});
  }
}

TEST_CASE("secrets never appear in errors or logs") {
  // Exercise every failure path we can reach without a server and collect all text produced.
  std::vector<std::string> texts;
  auto collect = [&](auto&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      texts.emplace_back(e.what());
    }
  };
  Harness h([](const HttpRequest& r, const RequestCredentials& c) -> HttpResponse {
    // A hostile server echoing the Authorization it got is out of scope; everything else fails.
    (void)c;
    if (r.target.find("reset") != std::string::npos) throw gpupool::TransportError("reset");
    if (r.target.find("html") != std::string::npos) return respond(502, "<html>bad gateway</html>");
    return respond(401, status_body(401, "Unauthorized", "Unauthorized"));
  });
  collect([&] { h.client->get(kPods, "", "x"); });
  collect([&] { h.client->get(kPods, "", "html"); });
  collect([&] { h.client->get(kPods, "", "reset"); });
  collect([&] { h.client->create(kPods, "", pod("reset")); });
  // The real HTTP transport against a closed port, with a token, a client key and a password.
  gpupool::KubeConfig cfg;
  cfg.cluster.server = "https://127.0.0.1:1";
  cfg.user.token = kToken;
  gpupool::ClientOptions o;
  o.retry.max_retries = 0;
  o.logger = [&](gpupool::LogLevel, const std::string& m) { texts.push_back(m); };
  Client real(cfg, o);
  collect([&] { real.get(kPods, "", "x"); });
  cfg.user.token.clear();
  cfg.user.username = "u";
  cfg.user.password = kToken;
  Client basic(cfg, o);
  collect([&] { basic.list(kPods, ""); });
  collect([&] {
    gpupool::parse_kubeconfig(std::string("current-context: c\nclusters: [{name: k, cluster: {server: https://k}}]\n"
                                          "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                                          "users: [{name: u, user: {token: ") +
                                  kToken + ", username: x}}]\n",
                              "kc");
  });
  texts.insert(texts.end(), h.logs.begin(), h.logs.end());
  CHECK(texts.size() >= 7);
  for (const auto& t : texts) {
    CAPTURE(t);
    CHECK(t.find(kToken) == std::string::npos);
  }
}

TEST_CASE("mangled server responses give gpupool errors, never crashes or foreign exceptions") {
  const std::vector<std::string> bodies = {
      R"({"kind":"PodList","metadata":{"resourceVersion":"5","continue":""},"items":[{"metadata":{"name":"a","namespace":"alice","resourceVersion":"4"}}]})",
      R"({"groups":[{"name":"kubeflow.org","versions":[{"groupVersion":"kubeflow.org/v1","version":"v1"}],"preferredVersion":{"version":"v1"}}]})",
      R"({"resources":[{"name":"mpijobs","kind":"MPIJob","namespaced":true,"verbs":["get"],"shortNames":["mj"]}]})",
      R"({"major":"1","minor":"29","gitVersion":"v1.29.0"})",
      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"6\"}}}\n{\"type\":\"ERROR\","
      "\"object\":{\"kind\":\"Status\",\"code\":410}}\n",
  };
  gpupool::test::Mutator mutator(7, "{}[]:,\"0aZ\n\\ ");
  int errors = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string body = mutator.mutate(bodies[mutator.next() % bodies.size()], 3);
    const int status = mutator.next() % 5 == 0 ? 500 : 200;
    int calls = 0;
    Harness h([&](const HttpRequest&, const RequestCredentials&) {
      if (++calls > 6) return respond(404, "");  // end watches and retries quickly
      return respond(status, body);
    });
    try {
      switch (i % 5) {
        case 0:
          h.client->list_all(kPods, "");
          break;
        case 1:
          h.client->served_versions("kubeflow.org");
          break;
        case 2:
          h.client->resources("kubeflow.org", "v1");
          break;
        case 3:
          h.client->server_version();
          break;
        default:
          h.client->watch(kPods, "", {.resource_version = "1"}, [](const gpupool::WatchEvent&) { return true; });
      }
    } catch (const gpupool::Error&) {
      ++errors;
    } catch (const std::exception& e) {
      const std::string why = std::string("unexpected exception: ") + e.what() + " for body: " + body;
      FAIL(why);
    }
  }
  CHECK(errors > 100);
}

TEST_CASE("a client needs an http(s) server URL") {
  for (std::string server : {"", "k8s.example:6443", "ftp://k8s"}) {
    gpupool::KubeConfig cfg;
    cfg.cluster.server = server;
    CHECK_THROWS_AS(Client(cfg, {}), gpupool::ConfigError);
  }
}
