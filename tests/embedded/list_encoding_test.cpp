// Lists served from the stored objects' cached encodings (Store::list_encodings, Api::serve_list):
// the same items, pages and continue tokens as the objects themselves, never a stale encoding.
#include <doctest/doctest.h>

#include "api_fixture.hpp"
#include "embedded/api.hpp"
#include "embedded/store.hpp"

using namespace gpupool::embedded;
namespace json = boost::json;

namespace {

struct Fixture {
  Clock clock = Clock::manual();
  Store store;
  Api api{store, {}};
  const ResourceType& pods = store.type("", "pods");
  explicit Fixture(Store::Options o = {}) : store(clock, o) {
    for (const char* ns : {"alice", "bob"})
      store.create(store.type("", "namespaces"), "", json::object{{"metadata", json::object{{"name", ns}}}});
  }
  Response get(const std::string& path, std::map<std::string, std::string> query = {}) {
    Request r = testing::admin_request("GET", path, "", /*content_type=*/"");
    for (auto& [k, v] : query) r.query.emplace(k, v);
    return api.handle(r);
  }
  json::object list(const std::string& path, std::map<std::string, std::string> query = {}) {
    const Response r = get(path, std::move(query));
    REQUIRE(r.status == 200);
    return json::parse(r.body).as_object();
  }
  void create_pod(const std::string& ns, const std::string& name, const std::string& node = {}) {
    json::object spec{{"containers", json::array{json::object{{"name", "c"}, {"image", "busybox"}}}}};
    if (!node.empty()) spec["nodeName"] = node;
    store.create(pods, ns, json::object{{"metadata", json::object{{"name", name}}}, {"spec", std::move(spec)}});
  }
  void set_phase(const std::string& ns, const std::string& name, const std::string& phase) {
    store.mutate(
        pods, ns, name,
        [&](json::object& o) {
          o["status"].as_object()["phase"] = phase;  // (qosClass kept: it is immutable)
        },
        {}, "status");
  }
};

// What a list item of a built-in kind is: the stored object without kind and apiVersion.
json::object bare(const json::object& o) {
  json::object out;
  for (const auto& kv : o)
    if (kv.key() != "kind" && kv.key() != "apiVersion") out.emplace(kv.key(), kv.value());
  return out;
}
json::array expected_items(const ListResult& res) {
  json::array out;
  for (const auto& o : res.items) out.push_back(bare(*o));
  return out;
}
std::string label(const json::value& item, const char* key) {
  const auto* l = item.at("metadata").as_object().if_contains("labels");
  if (!l) return "";
  const auto* v = l->as_object().if_contains(key);
  return v ? std::string(v->as_string()) : "";
}

}  // namespace

TEST_CASE("a list serves each stored object's encoding, cached once and replaced by a write") {
  Store::Options o;
  o.history = 1;  // replaced objects are freed at once (the watch history keeps them alive otherwise)
  Fixture f(o);
  for (const char* n : {"p1", "p2", "p3"}) f.create_pod("alice", n);
  f.create_pod("bob", "q1");
  const auto before = f.store.encoding_stats();
  const Response first = f.get("/api/v1/pods");
  REQUIRE(first.status == 200);
  auto body = json::parse(first.body).as_object();
  CHECK(body.at("kind") == "PodList");
  CHECK(body.at("apiVersion") == "v1");
  CHECK(json::value_to<std::string>(body.at("metadata").as_object().at("resourceVersion")) ==
        std::to_string(f.store.revision()));
  CHECK(body.at("items").as_array() == expected_items(f.store.list(f.pods, "")));
  auto s = f.store.encoding_stats();
  CHECK(s.misses - before.misses == 4);
  CHECK(s.hits - before.hits == 0);

  // Unchanged objects: the same bytes, from the cache.
  const Response again = f.get("/api/v1/pods");
  CHECK(again.body == first.body);
  CHECK(f.store.encoding_stats().hits - s.hits == 4);

  // Each write stores a new object; the next list shows it, and encodes only it (the replaced
  // versions are freed as the one-event history drops them).
  for (int gen = 1; gen <= 20; ++gen) {
    CAPTURE(gen);
    f.store.mutate(f.pods, "alice", "p2", [&](json::object& o) {
      o["metadata"].as_object()["labels"] = json::object{{"gen", std::to_string(gen)}};
    });
    s = f.store.encoding_stats();
    const auto items = f.list("/api/v1/namespaces/alice/pods").at("items").as_array();
    REQUIRE(items.size() == 3);
    CHECK(label(items[1], "gen") == std::to_string(gen));
    CHECK(items == expected_items(f.store.list(f.pods, "alice")));
    CHECK(f.store.encoding_stats().misses - s.misses == 1);  // p2 only
  }

  // A deleted object is gone from the next list.
  f.store.remove(f.pods, "alice", "p3");
  const auto items = f.list("/api/v1/namespaces/alice/pods").at("items").as_array();
  REQUIRE(items.size() == 2);
  CHECK(items[1].at("metadata").as_object().at("name") == "p2");

  // A cluster-scoped kind, and a single GET, which keeps kind and apiVersion.
  f.store.create(f.store.type("", "nodes"), "", json::object{{"metadata", json::object{{"name", "n1"}}}});
  const auto nodes = f.list("/api/v1/nodes", {{"resourceVersion", "0"}});
  CHECK(nodes.at("kind") == "NodeList");
  CHECK(nodes.at("items").as_array() == expected_items(f.store.list(f.store.type("", "nodes"), "")));
  const auto pod = json::parse(f.get("/api/v1/namespaces/alice/pods/p2").body).as_object();
  CHECK(pod == *f.store.find(f.pods, "alice", "p2"));
}

TEST_CASE("paged lists with a field selector: the store's items and continue tokens, page by page") {
  Fixture f;
  for (int i = 0; i < 30; ++i) {
    const std::string ns = i % 3 == 0 ? "bob" : "alice";
    const std::string name = "p" + std::to_string(100 + i);
    f.create_pod(ns, name, i % 4 == 0 ? "" : "node-" + std::to_string(i % 5));
    if (i % 5 == 0) f.set_phase(ns, name, "Succeeded");
    if (i % 7 == 0) f.set_phase(ns, name, "Failed");
    if (i % 6 == 1) f.set_phase(ns, name, "Running");
  }
  struct Case {
    std::string selector;
    int limit;
  };
  // The views' selector (pods bound and unfinished), and none (kubectl get pods -A: remainingItemCount).
  const Case cases[] = {{"spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed", 4},
                        {"spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed", 1000},
                        {"", 7}};
  for (const auto& c : cases) {
    CAPTURE(c.selector);
    CAPTURE(c.limit);
    // Twice: the first run encodes, the second is served from the cache; both the same.
    for (int run = 0; run < 2; ++run) {
      ListOptions lo;
      lo.fields = FieldSelector::parse(c.selector);
      lo.limit = c.limit;
      std::string token;
      std::size_t seen = 0, pages = 0;
      do {
        lo.continue_token = token;
        const ListResult want = f.store.list(f.pods, "", lo);
        std::map<std::string, std::string> query{{"limit", std::to_string(c.limit)}};
        if (!c.selector.empty()) query["fieldSelector"] = c.selector;
        if (!token.empty()) query["continue"] = token;
        const auto got = f.list("/api/v1/pods", query);
        const auto& md = got.at("metadata").as_object();
        CHECK(got.at("items").as_array() == expected_items(want));
        CHECK(json::value_to<std::string>(md.at("resourceVersion")) == std::to_string(want.resource_version));
        CHECK((md.contains("continue") ? std::string(md.at("continue").as_string()) : "") == want.continue_token);
        CHECK(md.contains("remainingItemCount") == want.remaining.has_value());
        if (want.remaining) CHECK(md.at("remainingItemCount").to_number<std::int64_t>() == *want.remaining);
        seen += want.items.size();
        ++pages;
        token = want.continue_token;
      } while (!token.empty());
      // Every matching pod exactly once.
      ListOptions all;
      all.fields = FieldSelector::parse(c.selector);
      CHECK(seen == f.store.list(f.pods, "", all).items.size());
      if (c.limit < 10) CHECK(pages > 1);
    }
  }
}

TEST_CASE("the encodings of replaced objects are swept once the cache doubles") {
  Store::Options o;
  o.history = 10;  // the watch history keeps replaced objects alive; keep it short
  Fixture f(o);
  const auto& cms = f.store.type("", "configmaps");
  for (int i = 0; i < 1500; ++i)
    f.store.create(cms, "alice", json::object{{"metadata", json::object{{"name", "cm" + std::to_string(i)}}}});
  f.list("/api/v1/namespaces/alice/configmaps");
  CHECK(f.store.encoding_stats().entries == 1500);
  for (int i = 0; i < 1500; ++i)
    f.store.mutate(cms, "alice", "cm" + std::to_string(i), [](json::object& c) {
      c["data"] = json::object{{"k", "v"}};
    });
  const auto items = f.list("/api/v1/namespaces/alice/configmaps").at("items").as_array();
  REQUIRE(items.size() == 1500);
  CHECK(items[0].at("data").as_object().at("k") == "v");
  const auto s = f.store.encoding_stats();
  // The 1,500 new encodings; those of the replaced objects no longer alive swept (the few the
  // short watch history still holds stay until it drops them).
  CHECK(s.entries == s.live);
  CHECK(s.entries >= 1500);
  CHECK(s.entries < 1550);
}

TEST_CASE("a list at resourceVersion=0 is one page whatever the limit, as the watch cache serves it") {
  // kube-apiserver v1.32.13 (apiserver storage/cacher computeListLimit): with resourceVersion=0 the
  // limit is ignored; without it (or at another version) the list is paged.
  Fixture f;
  for (int i = 0; i < 5; ++i) f.create_pod("alice", "p" + std::to_string(i));
  const json::object whole = f.list("/api/v1/namespaces/alice/pods", {{"resourceVersion", "0"}, {"limit", "2"}});
  CHECK(whole.at("items").as_array().size() == 5);
  CHECK_FALSE(whole.at("metadata").as_object().contains("continue"));
  const json::object paged = f.list("/api/v1/namespaces/alice/pods", {{"limit", "2"}});
  CHECK(paged.at("items").as_array().size() == 2);
  CHECK(paged.at("metadata").as_object().contains("continue"));
}
