// Adding a scheduler rule takes one plugin and one registration: this file defines a toy plugin
// (a NodeSpec filter with its reason and cache key, and a score) and registers it for each test
// case; place(), explain() and the embedded scheduler then apply it, with no other change.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "embedded/scheduler.hpp"
#include "embedded/store.hpp"
#include "gpupool/scheduling.hpp"
#include "gpupool/topology.hpp"
#include "model/plugins/plugin.hpp"

using namespace gpupool;
namespace json = boost::json;

namespace {

constexpr const char* kDeny = "toy.gpupool.io/deny";    // a node refusing pods of this namespace
constexpr const char* kScore = "toy.gpupool.io/score";  // a node's toy score, 0..100

std::string namespace_of(const PodRequirements& pod) { return pod.name.substr(0, pod.name.find('/')); }

// The toy rule: a node labelled toy.gpupool.io/deny=<namespace> rejects that namespace's pods, and
// nodes score their toy.gpupool.io/score label.
class ToyNamespaceDeny final : public plugins::Plugin {
 public:
  explicit ToyNamespaceDeny(bool scores = true) : scores_(scores) {}
  std::string_view name() const override { return "ToyNamespaceDeny"; }
  plugins::Reads filter_reads() const override { return plugins::Reads::NodeSpec; }
  bool filter(const plugins::Cycle& c, const NodeInfo& n) const override {
    auto it = n.node.labels.find(kDeny);
    return it == n.node.labels.end() || it->second != namespace_of(c.pod);
  }
  std::vector<std::string> reasons(const plugins::Cycle& c, const NodeInfo&) const override {
    return {"node(s) deny namespace " + namespace_of(c.pod)};
  }
  bool shape_key(const PodRequirements& pod, std::string& out) const override {
    plugins::put_key(out, namespace_of(pod));  // what the filter reads of the pod
    return true;
  }
  int weight() const override { return scores_ ? 1 : 0; }
  plugins::Reads score_reads() const override { return plugins::Reads::NodeSpec; }
  std::int64_t score(const plugins::Cycle&, const NodeInfo& n) const override {
    auto it = n.node.labels.find(kScore);
    return it == n.node.labels.end() ? 0 : std::stoll(it->second);
  }

 private:
  bool scores_;
};

Node worker(std::string name, std::map<std::string, std::string> labels = {}) {
  Node n;
  n.name = std::move(name);
  n.labels = std::move(labels);
  n.ready_status = "True";
  n.allocatable = {
      {"cpu", Quantity::parse("8")}, {"memory", Quantity::parse("32Gi")}, {"pods", Quantity::parse("110")}};
  return n;
}

PodRequirements pod_in(const std::string& ns) {
  PodRequirements p;
  p.name = ns + "/p";
  p.requests = {{"cpu", Quantity::parse("1")}};
  return p;
}

}  // namespace

TEST_CASE("a plugin registered in one line is applied by place() and explain(), and keys the cache") {
  PlacementState state;
  std::vector<NodeInfo> nodes;
  nodes.push_back(state.make_node_info(worker("a", {{kDeny, "team-a"}})));
  nodes.push_back(state.make_node_info(worker("b")));
  nodes.push_back(state.make_node_info(worker("c", {{kScore, "100"}})));

  // Without the plugin the three equal nodes tie: the first in evaluation order wins.
  CHECK(place(pod_in("team-a"), nodes, state).chosen_node == "a");
  state.next_start_index = 0;

  {
    plugins::ScopedRegistration toy(std::make_unique<ToyNamespaceDeny>());
    // The same state: verdicts cached before the registration are not served.
    auto r = place(pod_in("team-a"), nodes, state);
    CHECK(r.chosen_node == "c");  // its score decides, and "a" is filtered out
    state.next_start_index = 0;

    auto e = explain(pod_in("team-a"), nodes, state);
    REQUIRE(e.verdicts.size() == 3);
    for (const auto& v : e.verdicts) {
      CAPTURE(v.node);
      CHECK(v.fits == (v.node != "a"));
      if (v.node == "a") {
        CHECK(v.plugin == "ToyNamespaceDeny");
        CHECK(v.reasons == std::vector<std::string>{"node(s) deny namespace team-a"});
      }
    }

    // The cache key holds the namespace: another namespace's pod with the same constraints fits "a".
    state.record_verdicts = true;
    auto other = place(pod_in("team-b"), nodes, state);
    state.record_verdicts = false;
    REQUIRE(other.verdicts.size() == 3);
    for (const auto& v : other.verdicts) CHECK(v.fits);
    // ...and team-a's pods are still refused there, from the cache.
    for (int i = 0; i < 3; ++i) CHECK(place(pod_in("team-a"), nodes, state).chosen_node != "a");

    // Every node refusing: the FailedScheduling message carries the plugin's reason.
    std::vector<NodeInfo> denying;
    for (const char* n : {"x", "y"}) denying.push_back(state.make_node_info(worker(n, {{kDeny, "team-a"}})));
    auto none = place(pod_in("team-a"), denying, state);
    CHECK_FALSE(none.chosen);
    CHECK(none.failed_scheduling_message() ==
          "0/2 nodes are available: 2 node(s) deny namespace team-a. preemption: 0/2 nodes are available: 2 "
          "Preemption is not helpful for scheduling.");
  }

  // A filter alone keeps place() on its indexed walk, which reads the same cached verdicts.
  {
    plugins::ScopedRegistration toy(std::make_unique<ToyNamespaceDeny>(false));
    for (int i = 0; i < 6; ++i) {
      auto r = place(pod_in("team-a"), nodes, state);
      CHECK((r.chosen_node == "b" || r.chosen_node == "c"));
    }
    CHECK(place(pod_in("team-b"), nodes, state).chosen);
  }

  // Unregistered: the rule is gone again.
  state.next_start_index = 0;
  CHECK(place(pod_in("team-a"), nodes, state).chosen_node == "a");
}

TEST_CASE("a registered plugin is applied by the embedded scheduler") {
  plugins::ScopedRegistration toy(std::make_unique<ToyNamespaceDeny>());
  embedded::Clock clock = embedded::Clock::manual();
  embedded::Store store{clock};
  embedded::Scheduler scheduler{store, clock};
  const auto& nodes = store.type("", "nodes");
  const auto& pods = store.type("", "pods");
  store.create(store.type("", "namespaces"), "", json::parse(R"({"metadata":{"name":"default"}})").as_object());
  const std::vector<std::string> workers{"cn-beijing.192.168.3.228", "cn-beijing.192.168.3.229",
                                         "cn-beijing.192.168.3.230"};
  for (const auto& n : Topology::builtin("seed").nodes) {
    json::object o = n.to_node_object(clock.now());
    if (std::find(workers.begin(), workers.end(), n.name) != workers.end())
      o["metadata"].as_object()["labels"].as_object()[kDeny] = "default";
    store.create(nodes, "", o);
  }
  store.create(
      pods, "default",
      json::parse(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x"}]}})").as_object());

  auto pod = store.get(pods, "default", "p");
  CHECK(embedded::field_value(pod, "spec.nodeName").empty());
  std::string message;
  for (const auto& e : store.list(store.type("", "events"), "default").items)
    if (embedded::field_value(*e, "reason") == "FailedScheduling") message = embedded::field_value(*e, "message");
  CHECK(message ==
        "0/6 nodes are available: 3 node(s) deny namespace default, 3 node(s) had untolerated taint "
        "{node-role.kubernetes.io/master: }. preemption: 0/6 nodes are available: 6 Preemption is not helpful for "
        "scheduling.");

  // The label removed from one worker: the pod is retried and lands there.
  store.mutate(nodes, "", workers[1],
               [](json::object& n) { n["metadata"].as_object()["labels"].as_object().erase(kDeny); });
  CHECK(embedded::field_value(store.get(pods, "default", "p"), "spec.nodeName") == workers[1]);
}
