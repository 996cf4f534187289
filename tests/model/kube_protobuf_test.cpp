// The protobuf reader of PodList / NodeList (model/kube_protobuf.hpp) against the real server: the
// fixtures in data/protobuf are the same lists recorded from kube-apiserver v1.32.13 once as JSON
// and once as protobuf (data/protobuf/record.py), so what gpupool reads of each pod and node from
// the protobuf must equal what it reads from the JSON.
#include <doctest/doctest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "gpupool/error.hpp"
#include "gpupool/node.hpp"
#include "gpupool/scheduling.hpp"
#include "model/json_fields.hpp"
#include "model/kube_protobuf.hpp"
#include "model/protobuf_fixture.hpp"

namespace json = boost::json;
using namespace gpupool;

namespace {

std::string fixture(const std::string& name) { return gpupool::test::protobuf_fixture(name); }

struct Both {
  std::vector<json::object> from_json, from_protobuf;
  std::vector<json::object> model;  ///< the same items read with ItemFields::model
  protobuf::ListMeta meta;
  json::object json_meta;
};

Both read_both(const std::string& name) {
  Both b;
  const json::object list = json::parse(fixture(name + ".json")).as_object();
  for (const auto& item : list.at("items").as_array()) b.from_json.push_back(item.as_object());
  b.json_meta = list.at("metadata").as_object();
  b.meta = protobuf::for_each_item(fixture(name + ".pb"),
                                   [&](json::object&& item) { b.from_protobuf.push_back(std::move(item)); });
  const protobuf::ListMeta model_meta = protobuf::for_each_item(
      fixture(name + ".pb"), [&](json::object&& item) { b.model.push_back(std::move(item)); },
      protobuf::ItemFields::model);
  REQUIRE(b.from_json.size() == b.from_protobuf.size());
  REQUIRE(b.model.size() == b.from_protobuf.size());
  CHECK(model_meta.resource_version == b.meta.resource_version);
  CHECK(model_meta.continue_token == b.meta.continue_token);
  return b;
}

}  // namespace

TEST_CASE("protobuf PodList: every pod reads as from the JSON of the same list") {
  int pods = 0, owned = 0, sidecars = 0, claims = 0, affinity = 0;
  for (const char* name : {"pods", "bench-pods", "bench-pods-4", "bench-pods-5"}) {
    CAPTURE(name);
    const Both b = read_both(name);
    for (std::size_t i = 0; i < b.from_json.size(); ++i) {
      const auto& j = b.from_json[i];
      const auto& p = b.from_protobuf[i];
      CAPTURE(j.at("metadata").at("name"));
      const PodRequirements want = PodRequirements::from_pod_json(j);
      const PodRequirements got = PodRequirements::from_pod_json(p);
      // ItemFields::model: what from_pod_json reads and nothing else, read the same.
      const json::object& m = b.model[i];
      const PodRequirements narrow = PodRequirements::from_pod_json(m);
      CHECK(narrow.name == want.name);
      CHECK(narrow.requests == want.requests);
      CHECK(narrow.nonzero_milli_cpu == want.nonzero_milli_cpu);
      CHECK(narrow.nonzero_memory == want.nonzero_memory);
      CHECK(narrow.node_selector == want.node_selector);
      CHECK(narrow.required_node_affinity == want.required_node_affinity);
      CHECK(narrow.tolerations == want.tolerations);
      CHECK(narrow.node_name == want.node_name);
      CHECK(narrow.spread_key == want.spread_key);
      CHECK(narrow.claims == want.claims);
      CHECK(m.at("status").at("phase") == j.at("status").at("phase"));
      CHECK_FALSE(m.at("metadata").as_object().contains("uid"));
      CHECK_FALSE(m.at("spec").at("containers").at(0).as_object().contains("image"));
      CHECK(json::serialize(m).size() < json::serialize(p).size());
      CHECK(got.name == want.name);
      CHECK(got.requests == want.requests);
      CHECK(got.nonzero_milli_cpu == want.nonzero_milli_cpu);
      CHECK(got.nonzero_memory == want.nonzero_memory);
      CHECK(got.node_selector == want.node_selector);
      CHECK(got.required_node_affinity == want.required_node_affinity);
      CHECK(got.tolerations == want.tolerations);
      CHECK(got.node_name == want.node_name);
      CHECK(got.spread_key == want.spread_key);
      CHECK(got.claims == want.claims);
      // What the views read besides: phase, namespace, name, the controller.
      CHECK(p.at("status").as_object().if_contains("phase") != nullptr);
      CHECK(p.at("status").at("phase") == j.at("status").at("phase"));
      CHECK(p.at("metadata").at("namespace") == j.at("metadata").at("namespace"));
      CHECK(p.at("metadata").at("creationTimestamp") == j.at("metadata").at("creationTimestamp"));
      CHECK(p.at("metadata").at("uid") == j.at("metadata").at("uid"));
      ++pods;
      owned += !want.spread_key.empty();
      claims += !want.claims.empty();
      affinity += !want.required_node_affinity.empty();
      for (const auto& c : j.at("spec").as_object().if_contains("initContainers")
                               ? j.at("spec").at("initContainers").as_array()
                               : json::array{})
        sidecars += c.as_object().if_contains("restartPolicy") != nullptr;
    }
  }
  // The fixtures hold what the comparison is for.
  CHECK(pods >= 10);
  CHECK(owned >= 2);
  CHECK(sidecars == 1);
  CHECK(claims >= 3);
  CHECK(affinity >= 2);
}

TEST_CASE("protobuf NodeList: every node reads as from the JSON; the list's continue and count") {
  int tainted = 0, nodes = 0;
  for (const char* name : {"nodes", "nodes-more"}) {
    CAPTURE(name);
    const Both b = read_both(name);
    for (std::size_t i = 0; i < b.from_json.size(); ++i) {
      const Node want = Node::from_json(b.from_json[i]);
      const Node got = Node::from_json(b.from_protobuf[i]);
      CAPTURE(want.name);
      CHECK(got == want);
      // ItemFields::model: what Node::from_json reads, the same Node.
      CHECK(Node::from_json(b.model[i]) == want);
      CHECK_FALSE(b.model[i].at("metadata").as_object().contains("uid"));
      CHECK(json::serialize(b.model[i]).size() < json::serialize(b.from_protobuf[i]).size());
      tainted += want.taints.size() > 1;
      ++nodes;
    }
    CHECK(b.meta.resource_version == std::string(b.json_meta.at("resourceVersion").as_string()));
    if (const auto* c = b.json_meta.if_contains("continue")) {
      CHECK(b.meta.continue_token == std::string(c->as_string()));
      CHECK(b.meta.remaining_item_count == b.json_meta.at("remainingItemCount").as_int64());
    } else {
      CHECK(b.meta.continue_token.empty());
    }
  }
  CHECK(nodes == 5);
  CHECK(tainted >= 1);
}

TEST_CASE("protobuf lists: a kind not read, a truncated body, no magic") {
  const std::string pods = fixture("pods.pb");
  auto ignore = [](json::object&&) {};
  CHECK_THROWS_AS(protobuf::for_each_item(pods.substr(0, pods.size() - 7), ignore), protobuf::DecodeError);
  CHECK_THROWS_AS(protobuf::for_each_item("{\"kind\":\"PodList\"}", ignore), protobuf::DecodeError);
  // A Pod (not a list) is not a list.
  try {
    protobuf::for_each_item(std::string("k8s\0\n\x09\n\x02v1\x12\x03Pod\x12\x00", 17), ignore);
    FAIL("decoded");
  } catch (const protobuf::DecodeError& e) {
    CHECK(e.unknown_kind());
    CHECK(e.kind() == "Pod");
  }
}

namespace {

// Feeds `reader` the pieces of `body` that `cuts` marks (ascending offsets), then the rest; returns
// what its finish() returns.
template <class Reader>
auto feed_in_pieces(Reader& reader, std::string_view body, const std::vector<std::size_t>& cuts) {
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    reader.feed(body.substr(from, cut - from));
    from = cut;
  }
  reader.feed(body.substr(from));
  return reader.finish();
}

// The items and metadata ItemReader makes of `body` fed in the pieces `cuts` marks, as text to
// compare.
std::vector<std::string> read_in_pieces(std::string_view body, const std::vector<std::size_t>& cuts,
                                        protobuf::ItemFields fields, protobuf::ListMeta* meta = nullptr) {
  std::vector<std::string> items;
  protobuf::ItemReader reader([&](json::object&& item) { items.push_back(json::serialize(item)); }, fields);
  const protobuf::ListMeta m = feed_in_pieces(reader, body, cuts);
  if (meta) *meta = m;
  return items;
}

}  // namespace

TEST_CASE("protobuf lists fed piece by piece: the same items and metadata as the whole body") {
  for (const char* name : {"pods", "bench-pods", "nodes", "nodes-more"}) {
    CAPTURE(name);
    const std::string body = fixture(std::string(name) + ".pb");
    for (auto fields : {protobuf::ItemFields::all, protobuf::ItemFields::model}) {
      std::vector<std::string> whole;
      const protobuf::ListMeta whole_meta = protobuf::for_each_item(
          body, [&](json::object&& item) { whole.push_back(json::serialize(item)); }, fields);
      REQUIRE(!whole.empty());
      // Cut in two at every byte.
      for (std::size_t cut = 0; cut <= body.size(); ++cut) {
        CAPTURE(cut);
        protobuf::ListMeta meta;
        const auto got = read_in_pieces(body, {cut}, fields, &meta);
        REQUIRE(got == whole);
        REQUIRE(meta.resource_version == whole_meta.resource_version);
        REQUIRE(meta.continue_token == whole_meta.continue_token);
      }
      // One byte at a time, and pieces of random sizes (a fixed seed: the same cuts each run).
      std::vector<std::size_t> every;
      for (std::size_t i = 1; i < body.size(); ++i) every.push_back(i);
      CHECK(read_in_pieces(body, every, fields) == whole);
      std::mt19937 random(7);
      for (int run = 0; run < 50; ++run) {
        std::vector<std::size_t> cuts;
        for (std::size_t at = random() % 300; at < body.size(); at += 1 + random() % 1500) cuts.push_back(at);
        REQUIRE(read_in_pieces(body, cuts, fields) == whole);
      }
    }
  }
}

TEST_CASE("protobuf lists fed piece by piece: a body cut short never reads as a shorter list") {
  const std::string body = fixture("pods.pb");
  std::vector<std::string> whole;
  protobuf::for_each_item(body, [&](json::object&& item) { whole.push_back(json::serialize(item)); });
  int thrown = 0;
  for (std::size_t end = 0; end < body.size(); ++end) {
    CAPTURE(end);
    try {
      const auto got = read_in_pieces(body.substr(0, end), {end / 2}, protobuf::ItemFields::all);
      REQUIRE(got == whole);  // only the trailing empty fields after the list may be missing
    } catch (const protobuf::DecodeError&) {
      ++thrown;
    }
  }
  CHECK(thrown >= static_cast<int>(body.size()) - 8);
  // No magic: found by the first piece that shows it, not at the end.
  protobuf::ItemReader reader([](json::object&&) {});
  CHECK_THROWS_AS(reader.feed("{\"ki"), protobuf::DecodeError);
}

namespace {

std::vector<std::string> json_in_pieces(std::string_view body, const std::vector<std::size_t>& cuts) {
  std::vector<std::string> items;
  json_fields::ListItemReader reader([&](const json::value& item, std::size_t index) {
    items.push_back(std::to_string(index) + json::serialize(item));
  });
  feed_in_pieces(reader, body, cuts);
  return items;
}

}  // namespace

TEST_CASE("JSON lists fed piece by piece: the same items as the whole document; cut short, an error") {
  for (const char* name : {"pods", "bench-pods", "nodes", "nodes-more"}) {
    CAPTURE(name);
    const std::string body = fixture(std::string(name) + ".json");
    const auto whole = json_in_pieces(body, {});
    REQUIRE(!whole.empty());
    std::vector<std::string> listed;  // for_each_list_item, the whole-document reader
    json_fields::for_each_list_item(body, [&](const json::value& item, std::size_t index) {
      listed.push_back(std::to_string(index) + json::serialize(item));
    });
    REQUIRE(listed == whole);
    for (std::size_t cut = 0; cut <= body.size(); ++cut) {
      CAPTURE(cut);
      REQUIRE(json_in_pieces(body, {cut}) == whole);
    }
    std::mt19937 random(11);
    for (int run = 0; run < 30; ++run) {
      std::vector<std::size_t> cuts;
      for (std::size_t at = random() % 200; at < body.size(); at += 1 + random() % 700) cuts.push_back(at);
      REQUIRE(json_in_pieces(body, cuts) == whole);
    }
    const std::size_t end = body.find_last_not_of(" \n\r\t") + 1;
    for (std::size_t short_end = 0; short_end < end; ++short_end) {
      CAPTURE(short_end);
      CHECK_THROWS_AS(json_in_pieces(std::string_view(body).substr(0, short_end), {short_end / 2}), ValidationError);
    }
  }
  // An item's ValidationError names the item, as for_each_list_item's.
  json_fields::ListItemReader reader([](const json::value&, std::size_t index) {
    if (index == 1) throw ValidationError("spec", "", "bad");
  });
  reader.feed(R"({"items":[{},{)");
  try {
    reader.feed("}]}");
    FAIL("no error");
  } catch (const ValidationError& e) {
    CHECK(e.field() == "items[1].spec");
  }
}
