#include <doctest/doctest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "embedded/store.hpp"

using namespace gpupool::embedded;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

ListOptions page(std::int64_t limit, std::string token = {}) {
  ListOptions o;
  o.limit = limit;
  o.continue_token = std::move(token);
  return o;
}
DeleteOptions propagate(Propagation p) {
  DeleteOptions o;
  o.propagation = p;
  return o;
}
template <class T>
T dry() {
  T o;
  o.dry_run = true;
  return o;
}

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

std::string md(const json::object& o, std::string_view key) { return field_value(o, "metadata." + std::string(key)); }

struct Fixture {
  Clock clock = Clock::manual();
  Store store{clock, Store::Options{.history = 8}};
  const ResourceType& ns = store.type("", "namespaces");
  const ResourceType& pods = store.type("", "pods");
  const ResourceType& deploys = store.type("apps", "deployments");
  const ResourceType& rs = store.type("apps", "replicasets");
  Fixture() {
    store.create(ns, "", obj(R"({"metadata":{"name":"alice"}})"));
    store.create(ns, "", obj(R"({"metadata":{"name":"bob"}})"));
  }
  /// A valid Deployment `name` with `spec_extra` fields ("\"replicas\":1,") in its spec.
  static json::object deployment(std::string name, std::string spec_extra = "") { return workload(name, spec_extra); }
  /// The same body serves a ReplicaSet (selector, template).
  static json::object workload(std::string name, std::string spec_extra = "") {
    return obj(R"({"metadata":{"name":")" + name + R"("},"spec":{)" + spec_extra +
               R"("selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},)"
               R"("spec":{"containers":[{"name":"c","image":"busybox"}]}}}})");
  }
  json::object pod(std::string name, std::string labels = "{}", std::string node = "") {
    return obj(R"({"metadata":{"name":")" + name + R"(","labels":)" + labels + R"(},"spec":{"nodeName":")" + node +
               R"(","containers":[{"name":"c","image":"busybox"}]}})");
  }
};

}  // namespace

TEST_CASE("create fills metadata; errors are Status errors worded like the API server") {
  Fixture f;
  f.clock.advance(90s);
  auto p = f.store.create(f.pods, "alice", f.pod("p1"));
  CHECK(md(p, "namespace") == "alice");
  CHECK(md(p, "creationTimestamp") == "2024-01-01T00:01:30Z");
  CHECK(md(p, "uid").size() == 36);
  CHECK_FALSE(
      p["metadata"].as_object().contains("generation"));  // pods have none in v1.32 (the pod strategy sets none)
  CHECK(p["kind"] == "Pod");
  CHECK(p["apiVersion"] == "v1");
  const auto rv1 = std::stoull(md(p, "resourceVersion"));
  auto p2 = f.store.create(f.pods, "alice", f.pod("p2"));
  CHECK(std::stoull(md(p2, "resourceVersion")) == rv1 + 1);
  CHECK(md(p, "uid") != md(p2, "uid"));

  auto gen = obj(R"({"metadata":{"generateName":"web-"},"spec":{"containers":[{"name":"c","image":"x"}]}})");
  auto g = f.store.create(f.pods, "alice", gen);
  CHECK(md(g, "name").size() == 9);
  CHECK(md(g, "name").rfind("web-", 0) == 0);

  struct Row {
    std::function<void()> call;
    int code;
    std::string reason, message;
  };
  const Row rows[] = {
      {[&] { f.store.get(f.pods, "alice", "nope"); }, 404, "NotFound", "pods \"nope\" not found"},
      {[&] { f.store.create(f.pods, "alice", f.pod("p1")); }, 409, "AlreadyExists", "pods \"p1\" already exists"},
      {[&] { f.store.create(f.pods, "ghost", f.pod("p1")); }, 404, "NotFound", "namespaces \"ghost\" not found"},
      {[&] {
         f.store.create(f.deploys, "alice", Fixture::deployment("x"));
         f.store.get(f.deploys, "alice", "y");
       },
       404, "NotFound", "deployments.apps \"y\" not found"},
      {[&] { f.store.create(f.pods, "alice", f.pod("Bad_Name")); }, 422, "Invalid",
       "Pod \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must "
       "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
       "character (e.g. 'example.com', regex used for validation is "
       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"},
      {[&] { f.store.create(f.pods, "alice", obj(R"({"metadata":{}})")); }, 422, "Invalid",
       // (with the object's other errors: ValidateObjectMeta is part of the kind's validation)
       "Pod \"\" is invalid: [metadata.name: Required value: name or generateName is required, spec.containers: "
       "Required value]"},
      {[&] {
         auto stale = f.store.get(f.pods, "alice", "p1");
         f.store.mutate(f.pods, "alice", "p1", [](json::object& o) {
           o["metadata"].as_object()["labels"] = json::object{{"a", "b"}};
         });
         f.store.update(f.pods, "alice", stale);
       },
       409, "Conflict",
       "Operation cannot be fulfilled on pods \"p1\": the object has been modified; please apply your changes to the "
       "latest version and try again"},
      {[&] { f.store.list(f.pods, "alice", page(0, "garbage")); }, 400, "BadRequest",
       "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"},
      {[&] { LabelSelector::parse("a in (b"); }, 400, "BadRequest",
       "unable to parse requirement: found '', expected: ',' or ')'"},
      {[&] { parse_propagation("Sideways"); }, 400, "BadRequest",
       "propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", "
       "\"Orphan\""},
  };
  for (const auto& r : rows) {
    CAPTURE(r.message);
    try {
      r.call();
      FAIL("no error");
    } catch (const StatusError& e) {
      CHECK(e.code() == r.code);
      CHECK(e.reason() == r.reason);
      CHECK(e.status_message() == r.message);
      auto s = e.to_status();
      CHECK(s["kind"] == "Status");
      CHECK(s["status"] == "Failure");
      CHECK(s["code"].as_int64() == r.code);
    }
  }
}

TEST_CASE("update: generation bumps on spec change only, status subresource, no-op writes nothing") {
  Fixture f;
  auto d = f.store.create(f.deploys, "alice", Fixture::deployment("d", R"("replicas":1,)"));
  const auto rv0 = f.store.revision();
  auto same = f.store.update(f.deploys, "alice", d);
  CHECK(f.store.revision() == rv0);
  CHECK(md(same, "resourceVersion") == md(d, "resourceVersion"));

  d["spec"].as_object()["replicas"] = 3;
  d["status"] = obj(R"({"replicas":99})");  // ignored by the main endpoint
  auto u = f.store.update(f.deploys, "alice", d);
  CHECK(u["metadata"].as_object()["generation"].as_int64() == 2);
  CHECK(u.at("status") == json::object{});  // the zero status of the create, kept
  u["metadata"].as_object()["labels"] = json::object{{"x", "y"}};
  auto l = f.store.update(f.deploys, "alice", u);
  CHECK(l["metadata"].as_object()["generation"].as_int64() == 2);
  l["status"] = obj(R"({"replicas":3})");
  l["spec"].as_object()["replicas"] = 7;  // ignored by the status endpoint
  auto s = f.store.update(f.deploys, "alice", l, {}, "status");
  CHECK(s["status"].as_object()["replicas"].as_int64() == 3);
  CHECK(s["spec"].as_object()["replicas"].as_int64() == 3);
  CHECK(md(s, "uid") == md(d, "uid"));
}

TEST_CASE("create takes no status from the client but a Node's; a PersistentVolume stamps its phase changes") {
  // The registry strategies' PrepareForCreate (pkg/registry/*/strategy.go): the status struct's
  // zero, a pod's phase and QoS class, a PV's phase Pending and lastPhaseTransitionTime.
  Fixture f;
  auto p = f.pod("p");
  p["status"] = obj(R"({"phase":"Running","hostIP":"10.0.0.1"})");
  CHECK(f.store.create(f.pods, "alice", p).at("status") == obj(R"({"phase":"Pending","qosClass":"BestEffort"})"));
  auto rs = Fixture::workload("rs");
  rs["status"] = obj(R"({"replicas":5,"readyReplicas":2})");
  CHECK(f.store.create(f.rs, "alice", rs).at("status") == obj(R"({"replicas":0})"));
  const auto& nodes = f.store.type("", "nodes");
  auto n = obj(R"({"metadata":{"name":"n1"},"status":{"capacity":{"cpu":"4"},"phase":"Running"}})");
  const auto node = f.store.create(nodes, "", n);
  CHECK(node.at("status").at("phase") == "Running");
  CHECK(node.at("status").at("allocatable") == obj(R"({"cpu":"4"})"));  // SetDefaults_NodeStatus

  const auto& pvs = f.store.type("", "persistentvolumes");
  const auto created = f.clock.now();
  auto pv = f.store.create(pvs, "", obj(R"({"metadata":{"name":"pv1"},"spec":{"capacity":{"storage":"1Gi"},
      "accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp/x"}},"status":{"phase":"Bound","message":"m"}})"));
  CHECK(pv.at("status") == json::object{{"phase", "Pending"}, {"lastPhaseTransitionTime", to_rfc3339(created)}});
  // persistentvolumeStatusStrategy.PrepareForUpdate: a new phase is stamped now, the same phase
  // keeps the old time, a time the client set with the new phase is kept.
  f.clock.advance(60s);
  pv["status"] = obj(R"({"phase":"Available"})");
  pv = f.store.update(pvs, "", pv, {}, "status");
  CHECK(pv.at("status").at("lastPhaseTransitionTime") == json::value(to_rfc3339(f.clock.now())));
  const auto available = pv.at("status").at("lastPhaseTransitionTime");
  f.clock.advance(60s);
  pv["status"] = obj(R"({"phase":"Available","message":"again"})");
  pv = f.store.update(pvs, "", pv, {}, "status");
  CHECK(pv.at("status").at("lastPhaseTransitionTime") == available);
  pv["status"] = obj(R"({"phase":"Released","lastPhaseTransitionTime":"2030-01-01T00:00:00Z"})");
  pv = f.store.update(pvs, "", pv, {}, "status");
  CHECK(pv.at("status").at("lastPhaseTransitionTime") == "2030-01-01T00:00:00Z");
}

TEST_CASE("list: label and field selectors, namespaces, pagination") {
  Fixture f;
  f.store.create(f.pods, "alice", f.pod("a1", R"({"app":"web","tier":"fe"})", "n1"));
  f.store.create(f.pods, "alice", f.pod("a2", R"({"app":"web"})", "n2"));
  f.store.create(f.pods, "alice", f.pod("a3", R"({"app":"db"})", "n1"));
  f.store.create(f.pods, "bob", f.pod("b1", R"({"app":"web"})", "n1"));
  struct Row {
    std::string ns, labels, fields;
    std::vector<std::string> names;
  };
  const Row rows[] = {
      {"", "", "", {"a1", "a2", "a3", "b1"}},
      {"alice", "", "", {"a1", "a2", "a3"}},
      {"", "app=web", "", {"a1", "a2", "b1"}},
      {"", "app!=web", "", {"a3"}},
      {"", "app in (db, web),tier", "", {"a1"}},
      {"", "!tier", "", {"a2", "a3", "b1"}},
      {"", "app notin (web)", "", {"a3"}},
      {"", "", "spec.nodeName=n1", {"a1", "a3", "b1"}},
      {"alice", "app=web", "spec.nodeName!=n1", {"a2"}},
      {"", "", "metadata.name=b1,metadata.namespace=bob", {"b1"}},
      {"", "", "status.phase=Running", {}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.labels);
    CAPTURE(r.fields);
    auto res =
        f.store.list(f.pods, r.ns, ListOptions{LabelSelector::parse(r.labels), FieldSelector::parse(r.fields), 0, ""});
    std::vector<std::string> names;
    for (const auto& i : res.items) names.push_back(md(*i, "name"));
    CHECK(names == r.names);
  }
  // Pages of two over all namespaces, then the rest.
  auto p1 = f.store.list(f.pods, "", page(2));
  REQUIRE(p1.items.size() == 2);
  CHECK(p1.remaining == 2);
  REQUIRE(!p1.continue_token.empty());
  f.store.create(f.pods, "alice", f.pod("a0"));  // before the cursor: not seen by later pages
  auto p2 = f.store.list(f.pods, "", page(2, p1.continue_token));
  REQUIRE(p2.items.size() == 2);
  CHECK(md(*p2.items[0], "name") == "a3");
  CHECK(md(*p2.items[1], "name") == "b1");
  CHECK(p2.continue_token.empty());
  CHECK(p2.resource_version == p1.resource_version);
}

TEST_CASE("delete: ownerReference garbage collection per propagation policy") {
  for (auto policy : {Propagation::Background, Propagation::Foreground, Propagation::Orphan, Propagation::Default}) {
    CAPTURE(static_cast<int>(policy));
    Fixture f;
    auto d = f.store.create(f.deploys, "alice", Fixture::deployment("d"));
    auto owner = [](const json::object& o) {
      return json::array{json::object{{"apiVersion", o.at("apiVersion")},
                                      {"kind", o.at("kind")},
                                      {"name", o.at("metadata").at("name")},
                                      {"uid", o.at("metadata").at("uid")}}};
    };
    auto r = Fixture::workload("d-1");
    r["metadata"].as_object()["ownerReferences"] = owner(d);
    auto rsobj = f.store.create(f.rs, "alice", r);
    auto p = f.pod("d-1-x");
    p["metadata"].as_object()["ownerReferences"] = owner(rsobj);
    f.store.create(f.pods, "alice", p);
    f.store.create(f.pods, "alice", f.pod("unrelated"));
    f.store.remove(f.deploys, "alice", "d", propagate(policy));
    CHECK(!f.store.find(f.deploys, "alice", "d"));
    const bool orphan = policy == Propagation::Orphan;
    auto left = f.store.find(f.rs, "alice", "d-1");
    CHECK(bool(left) == orphan);
    if (left) CHECK(!left->at("metadata").as_object().contains("ownerReferences"));
    CHECK(bool(f.store.find(f.pods, "alice", "d-1-x")) == orphan);
    CHECK(f.store.find(f.pods, "alice", "unrelated"));
  }
}

TEST_CASE("delete: an object restored without a uid has no dependents (the orphans are not its)") {
  for (auto policy : {Propagation::Background, Propagation::Orphan, Propagation::Foreground}) {
    CAPTURE(static_cast<int>(policy));
    Fixture f;
    f.store.create(f.pods, "alice", f.pod("orphan-1"));
    f.store.create(f.pods, "alice", f.pod("orphan-2"));
    const auto before = f.store.find(f.pods, "alice", "orphan-1");
    // A snapshot (a state file written by hand, an older version) may hold an object without a uid.
    Clock clock = Clock::manual();
    auto snap = f.store.snapshot();
    auto nouid = Fixture::workload("no-uid");
    nouid["apiVersion"] = "apps/v1";
    nouid["kind"] = "ReplicaSet";
    nouid["metadata"].as_object()["namespace"] = "alice";
    snap["objects"].as_array().push_back(
        json::object{{"group", "apps"}, {"resource", "replicasets"}, {"object", std::move(nouid)}});
    Store restored(clock);
    restored.restore(snap);
    restored.remove(restored.type("apps", "replicasets"), "alice", "no-uid", propagate(policy));
    CHECK(!restored.find(restored.type("apps", "replicasets"), "alice", "no-uid"));
    const auto after = restored.find(restored.type("", "pods"), "alice", "orphan-1");
    REQUIRE(after);
    CHECK(md(*after, "resourceVersion") == md(*before, "resourceVersion"));  // not rewritten either
    CHECK(restored.find(restored.type("", "pods"), "alice", "orphan-2"));
  }
}

TEST_CASE("dryRun stores nothing") {
  Fixture f;
  const auto rv = f.store.revision();
  auto p = f.store.create(f.pods, "alice", f.pod("dry"), dry<WriteOptions>());
  CHECK(md(p, "name") == "dry");
  CHECK(!f.store.find(f.pods, "alice", "dry"));
  f.store.create(f.pods, "alice", f.pod("real"));
  f.store.remove(f.pods, "alice", "real", dry<DeleteOptions>());
  CHECK(f.store.find(f.pods, "alice", "real"));
  CHECK(f.store.revision() == rv + 1);
}

TEST_CASE("watch: replay from a resourceVersion, selector transitions, 410 when too old") {
  Fixture f;
  auto a = f.store.create(f.pods, "alice", f.pod("w1", R"({"app":"web"})"));
  const auto rv_a = std::stoull(md(a, "resourceVersion"));
  auto q = f.store.open_watch(f.pods, "alice", rv_a, LabelSelector::parse("app=web"));
  f.store.create(f.pods, "bob", f.pod("other", R"({"app":"web"})"));  // other namespace
  f.store.create(f.pods, "alice", f.pod("w2", R"({"app":"web"})"));
  f.store.mutate(f.pods, "alice", "w1", [](json::object& o) {
    o["metadata"].as_object()["labels"] = json::object{{"app", "db"}};
  });
  f.store.remove(f.pods, "alice", "w2");
  auto evs = q->next(0ms);
  std::vector<std::string> got;
  std::uint64_t last = rv_a;
  for (const auto& e : evs) {
    got.push_back(std::string(to_string(e.type)) + " " + md(*e.object, "name"));
    CHECK(e.resource_version > last);
    last = e.resource_version;
  }
  CHECK(got == std::vector<std::string>{"ADDED w2", "DELETED w1", "DELETED w2"});

  // Resuming from the first version replays the same events.
  auto q2 = f.store.open_watch(f.pods, "alice", rv_a);
  CHECK(q2->next(0ms).size() == 3);
  // resourceVersion 0: the current state as ADDED events.
  auto q3 = f.store.open_watch(f.pods, "", 0);
  auto now = q3->next(0ms);
  REQUIRE(now.size() == 2);
  CHECK(now[0].type == EventType::Added);

  for (int i = 0; i < 10; ++i) f.store.create(f.pods, "bob", f.pod("fill" + std::to_string(i)));
  try {
    f.store.open_watch(f.pods, "alice", rv_a);
    FAIL("expected 410");
  } catch (const StatusError& e) {
    CHECK(e.code() == 410);
    CHECK(e.reason() == "Expired");
    CHECK(e.status_message().rfind("too old resource version: " + std::to_string(rv_a) + " (", 0) == 0);
  }
}

namespace {
/// A subscriber that notes each event in `seen` ("ADDED pods p") and, as a toy controller, gives
/// every new Deployment a ReplicaSet.
Store::SubscriptionId subscribe_toy_controller(Fixture& f, std::vector<std::string>& seen) {
  return f.store.subscribe([&f, &seen](const WatchEvent& e) {
    seen.push_back(std::string(to_string(e.type)) + " " + e.type_info->resource + " " + md(*e.object, "name"));
    if (e.type == EventType::Added && e.type_info->resource == "deployments")
      f.store.create(f.rs, md(*e.object, "namespace"), Fixture::workload("rs-of-d"));
  });
}
}  // namespace

TEST_CASE("subscribers see every change in order, including changes made by subscribers") {
  Fixture f;
  std::vector<std::string> seen;
  auto id = subscribe_toy_controller(f, seen);
  f.store.create(f.deploys, "alice", Fixture::deployment("d"));
  f.store.create(f.pods, "alice", f.pod("after"));
  CHECK(seen == std::vector<std::string>{"ADDED deployments d", "ADDED replicasets rs-of-d", "ADDED pods after"});
  f.store.unsubscribe(id);
  f.store.create(f.pods, "alice", f.pod("unseen"));
  CHECK(seen.size() == 3);
}

TEST_CASE("a subscriber that throws loses that event alone; the others and later events are delivered") {
  Clock clock = Clock::manual();
  Store s(clock);
  const auto& ns = s.type("", "namespaces");
  std::vector<std::string> first, second;
  const auto a = s.subscribe([&](const WatchEvent& e) {
    first.push_back(field_value(*e.object, "metadata.name"));
    if (first.size() == 1) throw StatusError::not_found(ns, "boom");
  });
  const auto b = s.subscribe([&](const WatchEvent& e) { second.push_back(field_value(*e.object, "metadata.name")); });
  s.create(ns, "", obj(R"({"metadata":{"name":"one"}})"));
  s.create(ns, "", obj(R"({"metadata":{"name":"two"}})"));
  CHECK(first == std::vector<std::string>{"one", "two"});
  CHECK(second == std::vector<std::string>{"one", "two"});
  CHECK(s.subscriber_failures() == 1);
  s.unsubscribe(a);
  s.unsubscribe(b);
}

TEST_CASE("DeferDispatch: the writes are stored and watched at once, the subscribers run at finish()") {
  Fixture f;
  std::vector<std::string> seen;
  auto id = subscribe_toy_controller(f, seen);
  auto watch = f.store.open_watch(f.deploys, "alice", f.store.revision());
  {
    Store::DeferDispatch defer(f.store);
    f.store.create(f.deploys, "alice", Fixture::deployment("d"));
    f.store.create(f.pods, "alice", f.pod("p"));
    // Committed: readable and on the watch; the subscribers (controllers) have not run.
    CHECK(f.store.find(f.deploys, "alice", "d") != nullptr);
    CHECK(watch->next(0ms).size() == 1);
    CHECK(seen.empty());
    CHECK(f.store.find(f.rs, "alice", "rs-of-d") == nullptr);
    // Another thread's write is not deferred: it delivers what is queued with its own, in commit
    // order (the toy controller's ReplicaSet is committed while the deployment is delivered).
    std::thread([&] { f.store.create(f.pods, "alice", f.pod("other")); }).join();
    CHECK(seen == std::vector<std::string>{"ADDED deployments d", "ADDED pods p", "ADDED pods other",
                                           "ADDED replicasets rs-of-d"});
    seen.clear();
    f.store.create(f.pods, "alice", f.pod("q"));
    CHECK(seen.empty());
    defer.finish();
    CHECK(seen == std::vector<std::string>{"ADDED pods q"});
    f.store.create(f.pods, "alice", f.pod("r"));  // after finish(): delivered before create returns
    CHECK(seen.size() == 2);
  }
  f.store.settle();  // nothing is being delivered: returns at once
  f.store.unsubscribe(id);
}

TEST_CASE(
    "delete: Foreground keeps the owner (deletionTimestamp, foregroundDeletion) until blocking dependents are gone") {
  Fixture f;
  const auto& cms = f.store.type("", "configmaps");
  auto owner = f.store.create(cms, "alice", obj(R"({"metadata":{"name":"owner"}})"));
  auto ref = [&](bool block) {
    return json::array{json::object{{"apiVersion", "v1"},
                                    {"kind", "ConfigMap"},
                                    {"name", "owner"},
                                    {"uid", owner.at("metadata").at("uid")},
                                    {"blockOwnerDeletion", block}}};
  };
  // A dependent another controller still has to clean up (its own finalizer), one that deletes at
  // once, and one that does not block its owner.
  auto held = obj(R"({"metadata":{"name":"held","finalizers":["example.com/cleanup"]}})");
  held["metadata"].as_object()["ownerReferences"] = ref(true);
  f.store.create(cms, "alice", held);
  auto quick = obj(R"({"metadata":{"name":"quick"}})");
  quick["metadata"].as_object()["ownerReferences"] = ref(true);
  f.store.create(cms, "alice", quick);
  f.clock.advance(30s);
  bool deleted = true;
  auto now = f.store.remove(cms, "alice", "owner", propagate(Propagation::Foreground), &deleted);
  CHECK_FALSE(deleted);
  CHECK(md(now, "deletionTimestamp") == "2024-01-01T00:00:30Z");
  // GET still shows the owner, marked for deletion with the GC's finalizer.
  auto still = f.store.get(cms, "alice", "owner");
  CHECK(json::serialize(still.at("metadata").at("finalizers")) == R"(["foregroundDeletion"])");
  CHECK(md(still, "deletionTimestamp") == "2024-01-01T00:00:30Z");
  CHECK(still.at("metadata").at("deletionGracePeriodSeconds") == 0);
  CHECK(!f.store.find(cms, "alice", "quick"));
  auto h = f.store.get(cms, "alice", "held");  // being deleted, held by its finalizer
  CHECK(md(h, "deletionTimestamp") == "2024-01-01T00:00:30Z");
  // A second delete changes nothing.
  const auto rv = f.store.revision();
  f.store.remove(cms, "alice", "owner", propagate(Propagation::Foreground), &deleted);
  CHECK_FALSE(deleted);
  CHECK(f.store.revision() == rv);
  // Updates cannot clear deletionTimestamp.
  h.at("metadata").as_object().erase("deletionTimestamp");
  h["data"] = json::object{{"k", "v"}};
  h = f.store.update(cms, "alice", h);
  CHECK(md(h, "deletionTimestamp") == "2024-01-01T00:00:30Z");
  // The dependent's controller finishes: its last finalizer goes, it is deleted, then the owner.
  h.at("metadata").as_object().erase("finalizers");
  h.at("metadata").as_object().erase("resourceVersion");
  f.store.update(cms, "alice", h);
  CHECK(!f.store.find(cms, "alice", "held"));
  CHECK(!f.store.find(cms, "alice", "owner"));
}

TEST_CASE("GC: an object none of whose owners exists is deleted; references to absent owners pruned") {
  Fixture f;
  const auto& cms = f.store.type("", "configmaps");
  const std::string uid = md(f.store.create(cms, "alice", obj(R"({"metadata":{"name":"owner"}})")), "uid");
  auto with_refs = [&](const std::string& name, const std::string& refs) {
    return obj(R"({"metadata":{"name":")" + name + R"(","ownerReferences":)" + refs + "}}");
  };
  const std::string ghost = R"({"apiVersion":"v1","kind":"ConfigMap","name":"ghost","uid":"1111"})";
  const std::string owner = R"({"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":")" + uid + R"("})";
  f.store.create(cms, "alice", with_refs("dangling", "[" + ghost + "]"));
  f.store.create(cms, "alice",
                 with_refs("wronguid", R"([{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"2222"}])"));
  f.store.create(cms, "alice", with_refs("mixed", "[" + ghost + "," + owner + "]"));
  f.store.create(cms, "alice",
                 with_refs("unknownkind", R"([{"apiVersion":"example.com/v1","kind":"Foo","name":"g","uid":"3"}])"));
  // The owner's namespace is the dependent's: in another one it is absent.
  f.store.create(cms, "bob", with_refs("elsewhere", "[" + owner + "]"));
  CHECK_FALSE(f.store.find(cms, "alice", "dangling"));
  CHECK_FALSE(f.store.find(cms, "alice", "wronguid"));
  CHECK_FALSE(f.store.find(cms, "bob", "elsewhere"));
  CHECK(f.store.find(cms, "alice", "unknownkind"));  // the GC cannot resolve it: left alone
  const auto mixed = f.store.get(cms, "alice", "mixed");
  REQUIRE(mixed.at("metadata").at("ownerReferences").as_array().size() == 1);
  CHECK(mixed.at("metadata").at("ownerReferences").at(0).at("name") == "owner");
  // An update that names only an absent owner deletes the object too.
  f.store.mutate(cms, "alice", "mixed", [&](json::object& o) {
    o["metadata"].as_object()["ownerReferences"] = json::parse("[" + ghost + "]");
  });
  CHECK_FALSE(f.store.find(cms, "alice", "mixed"));
}

TEST_CASE("delete: a non-blocking dependent does not hold the owner; finalizers hold a Background delete") {
  Fixture f;
  const auto& cms = f.store.type("", "configmaps");
  auto owner = f.store.create(cms, "alice", obj(R"({"metadata":{"name":"owner","finalizers":["example.com/x"]}})"));
  auto dep = obj(R"({"metadata":{"name":"dep","finalizers":["example.com/y"]}})");
  dep["metadata"].as_object()["ownerReferences"] = json::array{json::object{
      {"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "owner"}, {"uid", owner.at("metadata").at("uid")}}};
  f.store.create(cms, "alice", dep);
  // Background with a finalizer on the owner: the owner stays, its dependent is untouched.
  bool deleted = true;
  f.store.remove(cms, "alice", "owner", propagate(Propagation::Background), &deleted);
  CHECK_FALSE(deleted);
  CHECK(md(f.store.get(cms, "alice", "dep"), "deletionTimestamp").empty());
  // Foreground now: the finalizer is added; "dep" does not block (no blockOwnerDeletion).
  f.store.remove(cms, "alice", "owner", propagate(Propagation::Foreground), &deleted);
  auto o = f.store.get(cms, "alice", "owner");
  CHECK(json::serialize(o.at("metadata").at("finalizers")) == R"(["example.com/x"])");
  CHECK(!md(f.store.get(cms, "alice", "dep"), "deletionTimestamp").empty());
  // Removing the owner's own finalizer deletes it; the dependent (held by its finalizer) stays marked.
  o.at("metadata").as_object().erase("finalizers");
  f.store.update(cms, "alice", o);
  CHECK(!f.store.find(cms, "alice", "owner"));
  CHECK(f.store.find(cms, "alice", "dep"));
}

TEST_CASE("dependents: the owner-uid index follows creates, ownerReference edits and deletes") {
  Fixture f;
  auto rs = f.store.create(f.rs, "alice", Fixture::workload("r"));
  const std::string uid = md(rs, "uid");
  auto owned_pod = [&](const std::string& name, const std::string& ns = "alice") {
    auto p = f.pod(name);
    p["metadata"].as_object()["ownerReferences"] = json::array{json::object{
        {"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "r"}, {"uid", uid}, {"controller", true}}};
    return f.store.create(f.pods, ns, p);
  };
  auto names = [&](const ResourceType& t, const std::string& ns) {
    std::vector<std::string> out;
    for (const auto& o : f.store.dependents(t, ns, uid)) out.push_back(md(*o, "name"));
    return out;
  };
  owned_pod("r-b");
  owned_pod("r-a");
  // Same uid in another namespace: not this namespace's dependent (its owner is absent there, so
  // the GC deletes it: a finalizer keeps it to look at).
  {
    auto p = f.pod("r-z");
    p["metadata"].as_object()["finalizers"] = json::array{"example.com/hold"};
    p["metadata"].as_object()["ownerReferences"] = json::array{json::object{
        {"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "r"}, {"uid", uid}, {"controller", true}}};
    f.store.create(f.pods, "bob", p);
  }
  f.store.create(f.pods, "alice", f.pod("unrelated"));
  CHECK(names(f.pods, "alice") == std::vector<std::string>{"r-a", "r-b"});  // key order, as a list
  CHECK(names(f.pods, "bob") == std::vector<std::string>{"r-z"});
  CHECK(names(f.rs, "alice").empty());  // other types are not mixed in
  // Dropping the ownerReference (as orphaning does) takes the pod out of the index.
  f.store.mutate(f.pods, "alice", "r-b", [](json::object& p) { p["metadata"].as_object().erase("ownerReferences"); });
  CHECK(names(f.pods, "alice") == std::vector<std::string>{"r-a"});
  f.store.remove(f.pods, "alice", "r-a");
  CHECK(names(f.pods, "alice").empty());
  CHECK(f.store.dependents(f.pods, "alice", "no-such-uid").empty());
}

TEST_CASE("WakeBatch: every write is committed and queued at once; the watch reader is woken once, at its end") {
  Fixture f;
  auto q = f.store.open_watch(f.pods, "alice", f.store.revision());
  const std::uint64_t wakes = q->wakes();
  {
    Store::WakeBatch batch(f.store);
    Store::WakeBatch nested(f.store);  // nests: the outer one wakes
    for (int i = 0; i < 3; ++i) {
      f.store.create(f.pods, "alice", f.pod("p" + std::to_string(i)));
      // Visible to reads at once: only the wake of the watch reader waits for the batch.
      CHECK(f.store.find(f.pods, "alice", "p" + std::to_string(i)) != nullptr);
    }
    for (int i = 0; i < 3; ++i)
      f.store.mutate(f.pods, "alice", "p" + std::to_string(i), [](json::object& o) {
        o["metadata"].as_object()["labels"] = json::object{{"bound", "yes"}};
      });
    CHECK(q->wakes() == wakes);  // without the batch the first create would have woken it
  }
  CHECK(q->wakes() == wakes + 1);
  const auto got = q->next(0ms);
  REQUIRE(got.size() == 6);
  std::uint64_t last = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].type == (i < 3 ? EventType::Added : EventType::Modified));
    CHECK(md(*got[i].object, "name") == "p" + std::to_string(i % 3));
    CHECK(got[i].resource_version > last);
    last = got[i].resource_version;
  }
  // Another thread's writes are not held back by this thread's batch.
  Store::WakeBatch batch(f.store);
  std::thread([&] { f.store.create(f.pods, "alice", f.pod("other")); }).join();
  CHECK(q->wakes() == wakes + 2);
  CHECK(q->next(0ms).size() == 1);
}

// Every write stores quantities as Go prints them (validation's last step, schema
// canonical_quantities), wherever the kind's schema has one — and only there: the walk skips
// whatever cannot hold a Quantity (an Event, a ConfigMap, a pod's metadata), so text that looks like
// a quantity elsewhere is kept as written.
TEST_CASE("quantities canonical wherever the schema has one, other text as written") {
  Clock clock = Clock::manual();
  Store store(clock);
  store.create(store.type("", "namespaces"), "", json::parse(R"({"metadata":{"name":"q"}})").as_object());
  const auto pod = store.create(store.type("", "pods"), "q",
                                json::parse(R"({"metadata":{"name":"p",
      "labels":{"size":"1000m"},"annotations":{"a":"1024Mi"}},
      "spec":{"overhead":{"cpu":"250m","memory":"2048Mi"},
        "initContainers":[{"name":"i","image":"x","resources":{"requests":{"cpu":"2000m"}}}],
        "containers":[{"name":"c","image":"x","args":["1000m"],
          "resources":{"requests":{"cpu":"1000m","memory":"1024Mi"},"limits":{"memory":"1.5Gi"}}}]}})")
                                    .as_object());
  const auto& spec = pod.at("spec").as_object();
  const auto& c = spec.at("containers").as_array()[0].as_object();
  CHECK(c.at("resources").at("requests").at("cpu") == "1");
  CHECK(c.at("resources").at("requests").at("memory") == "1Gi");
  CHECK(c.at("resources").at("limits").at("memory") == "1536Mi");
  CHECK(spec.at("initContainers").as_array()[0].at("resources").at("requests").at("cpu") == "2");
  CHECK(spec.at("overhead").at("memory") == "2Gi");
  CHECK(spec.at("overhead").at("cpu") == "250m");
  CHECK(c.at("args").as_array()[0] == "1000m");
  CHECK(pod.at("metadata").at("labels").at("size") == "1000m");
  CHECK(pod.at("metadata").at("annotations").at("a") == "1024Mi");
  const auto quota = store.create(
      store.type("", "resourcequotas"), "q",
      json::parse(R"({"metadata":{"name":"rq"},"spec":{"hard":{"requests.cpu":"4000m","pods":"10"}}})").as_object());
  CHECK(quota.at("spec").at("hard").at("requests.cpu") == "4");
  const auto cm = store.create(store.type("", "configmaps"), "q",
                               json::parse(R"({"metadata":{"name":"cm"},"data":{"cpu":"1000m"}})").as_object());
  CHECK(cm.at("data").at("cpu") == "1000m");
  const auto ev = store.create(store.type("", "events"), "q",
                               json::parse(R"({"metadata":{"name":"e"},
      "involvedObject":{"kind":"Pod","name":"p","namespace":"q"},"reason":"R","message":"1000m","type":"Normal"})")
                                   .as_object());
  CHECK(ev.at("message") == "1000m");
}

TEST_CASE("label selectors parse, refuse and match as kube-apiserver (data/selectors.json, recorded)") {
  // The lexer and parser of labels.Parse: Gt and Lt, "in"/"notin" as values, empty values, keys and
  // values validated with their messages, and every parse error's wording.
  std::ifstream in(std::string(GPUPOOL_SOURCE_DIR) + "/tests/embedded/data/selectors.json");
  std::stringstream text;
  text << in.rdbuf();
  const json::object golden = json::parse(text.str()).as_object();
  Fixture f;
  const auto& cms = f.store.type("", "configmaps");
  for (const auto& [name, labels] : golden.at("objects").as_object())
    f.store.create(cms, "alice", json::object{{"metadata", json::object{{"name", name}, {"labels", labels}}}});
  const json::array& cases = golden.at("labelSelector").as_array();
  REQUIRE(cases.size() > 80);
  int refused = 0;
  for (const auto& v : cases) {
    const auto& c = v.as_object();
    const std::string selector(c.at("selector").as_string());
    CAPTURE(selector);
    std::optional<LabelSelector> sel;
    std::string error;
    try {
      sel = LabelSelector::parse(selector);
    } catch (const StatusError& e) {
      CHECK(e.code() == 400);
      error = e.status_message();
    }
    if (const auto* want = c.if_contains("error")) {
      ++refused;
      CHECK(error == want->as_string());
      continue;
    }
    REQUIRE(error == "");
    json::array got;
    for (const auto& o : f.store.list(cms, "alice", ListOptions{*sel, {}, 0, ""}).items)
      got.push_back(json::string(md(*o, "name")));
    CHECK(json::serialize(got) == json::serialize(c.at("matches")));
  }
  CHECK(refused > 30);
  CHECK(refused < static_cast<int>(cases.size()) - 30);
}

TEST_CASE("label selectors read an object's labels in place as they read the copied labels") {
  const std::vector<std::string> selectors{"app=web", "app!=web",   "app in (web,db)", "app notin (web,db)",
                                           "tier",    "!tier",      "app=web,tier",    "app==web,!gone",
                                           "n=1",     "app,tier!=x"};
  const std::vector<std::string> objects{
      R"({"metadata":{"labels":{"app":"web","tier":"front"}}})",
      R"({"metadata":{"labels":{"app":"db"}}})",
      R"({"metadata":{"labels":{}}})",
      R"({"metadata":{}})",
      R"({"kind":"Pod"})",
      R"({"metadata":{"labels":{"app":"web","n":1,"tier":null}}})",  // not strings: no such labels
      R"({"metadata":{"labels":"app=web"}})",
  };
  int matched = 0;
  for (const auto& text : objects) {
    const json::object o = json::parse(text).as_object();
    for (const auto& s : selectors) {
      CAPTURE(text);
      CAPTURE(s);
      const auto sel = LabelSelector::parse(s);
      CHECK(sel.matches_labels_of(o) == sel.matches(gpupool::embedded::labels_of(o)));
      matched += sel.matches_labels_of(o) ? 1 : 0;
    }
  }
  CHECK(matched > 0);
  CHECK(matched < static_cast<int>(objects.size() * selectors.size()));
}

TEST_CASE("delete: a pod on a node is deleted gracefully; a shorter grace period, 0, and pods that go at once") {
  // rest.BeforeDelete and the pod strategy's CheckGracefulDelete: no kubelet runs here, so a pod
  // on a node stays marked (Terminating), as on a cluster whose kubelet is gone.
  Clock clock = Clock::manual();
  Store s(clock);
  s.create(s.type("", "namespaces"), "", obj(R"({"metadata":{"name":"default"}})"));
  const auto& pods = s.type("", "pods");
  auto pod = [&](const char* name, const char* extra) {
    s.create(pods, "default",
             obj(std::string(R"({"metadata":{"name":")") + name + R"("},"spec":{)" + extra +
                 R"("containers":[{"name":"c","image":"busybox"}]}})"));
  };
  pod("bound", R"("nodeName":"n1",)");
  std::vector<std::string> seen;
  const auto sub = s.subscribe([&](const WatchEvent& e) {
    if (e.type_info == &pods) seen.push_back(std::string(to_string(e.type)));
  });
  bool deleted = true;
  const json::object answer = s.remove(pods, "default", "bound", {}, &deleted);
  CHECK_FALSE(deleted);
  const auto marked = s.find(pods, "default", "bound");
  REQUIRE(marked);
  CHECK(field_value(*marked, "metadata.deletionTimestamp") == to_rfc3339(clock.now() + std::chrono::seconds(30)));
  CHECK(marked->at("metadata").at("deletionGracePeriodSeconds") == 30);
  CHECK(answer.at("metadata").at("deletionTimestamp") == marked->at("metadata").at("deletionTimestamp"));
  CHECK(seen == std::vector<std::string>{"MODIFIED"});
  // Again without a grace period: still pending, nothing written.
  s.remove(pods, "default", "bound");
  CHECK(seen.size() == 1);
  // A shorter one moves the deadline back by the difference.
  DeleteOptions shorter;
  shorter.grace_period = 10;
  s.remove(pods, "default", "bound", shorter);
  CHECK(field_value(*s.find(pods, "default", "bound"), "metadata.deletionTimestamp") ==
        to_rfc3339(clock.now() + std::chrono::seconds(10)));
  CHECK(s.find(pods, "default", "bound")->at("metadata").at("deletionGracePeriodSeconds") == 10);
  // 0 (what the kubelet sends once the containers stopped, or --force --grace-period=0) removes it.
  DeleteOptions now;
  now.grace_period = 0;
  s.remove(pods, "default", "bound", now, &deleted);
  CHECK(deleted);
  CHECK(!s.find(pods, "default", "bound"));
  CHECK(seen == std::vector<std::string>{"MODIFIED", "MODIFIED", "DELETED"});
  s.unsubscribe(sub);
  // A pod on no node, and one that has finished, go at once.
  pod("pending", "");
  s.remove(pods, "default", "pending");
  CHECK(!s.find(pods, "default", "pending"));
  pod("done", R"("nodeName":"n1",)");
  s.mutate(
      pods, "default", "done",
      [](json::object& p) {
        p["status"].as_object()["phase"] = "Succeeded";  // (qosClass kept: it is immutable)
      },
      {}, "status");
  s.remove(pods, "default", "done");
  CHECK(!s.find(pods, "default", "done"));
  // ShouldDeleteDuringUpdate: a finalizer taken off a pod whose grace period still runs leaves it
  // for its kubelet; once that grace is 0, the update that empties the finalizers deletes it.
  const auto hold = [&](const char* name) {
    pod(name, R"("nodeName":"n1",)");
    s.mutate(pods, "default", name,
             [](json::object& p) { p["metadata"].as_object()["finalizers"] = json::array{"example.com/hold"}; });
  };
  const auto unfinalize = [&](const char* name) {
    s.mutate(pods, "default", name, [](json::object& p) { p["metadata"].as_object().erase("finalizers"); });
  };
  hold("held");
  s.remove(pods, "default", "held");
  unfinalize("held");
  REQUIRE(s.find(pods, "default", "held"));
  CHECK(s.find(pods, "default", "held")->at("metadata").at("deletionGracePeriodSeconds") == 30);
  s.remove(pods, "default", "held", now, &deleted);
  CHECK(deleted);
  hold("held2");
  s.remove(pods, "default", "held2", now, &deleted);
  CHECK_FALSE(deleted);  // the finalizer holds it
  CHECK(s.find(pods, "default", "held2")->at("metadata").at("deletionGracePeriodSeconds") == 0);
  unfinalize("held2");
  CHECK(!s.find(pods, "default", "held2"));
}
