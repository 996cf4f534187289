// Scheduler rules: every filter and its wording, FitError assembly, PreFilter narrowing,
// numFeasibleNodesToFind, scoring and the seed's walkthrough (Arena --toleration on six nodes).
#include <doctest/doctest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "gpupool/error.hpp"
#include "gpupool/scheduling.hpp"

using namespace gpupool;
namespace json = boost::json;
using Op = NodeSelectorOperator;

namespace {

Quantity q(const char* s) { return Quantity::parse(s); }

Node make_node(std::string name, std::vector<Taint> taints = {}, std::map<std::string, std::string> labels = {},
               std::map<std::string, Quantity> alloc = {}) {
  Node n;
  n.name = std::move(name);
  n.taints = std::move(taints);
  n.labels = std::move(labels);
  n.ready_status = "True";
  n.allocatable = {{"cpu", q("32")}, {"memory", q("256Gi")}, {"pods", q("110")}};
  for (auto& [k, v] : alloc) n.allocatable[k] = v;
  n.capacity = n.allocatable;
  return n;
}

const Taint kMaster{"node-role.kubernetes.io/master", "", TaintEffect::NoSchedule};
const Taint kGpu{"gpu_node", "invalid", TaintEffect::NoSchedule};
const Taint kSsd{"ssd_node", "invalid", TaintEffect::NoSchedule};

// The seed: cn-beijing.192.168.3.225-230; three masters, two gpu_node workers, one ssd_node worker.
std::vector<Node> seed_nodes() {
  std::vector<Node> nodes;
  for (int i = 225; i <= 230; ++i) {
    std::string name = "cn-beijing.192.168.3." + std::to_string(i);
    if (i <= 227)
      nodes.push_back(make_node(name, {kMaster}, {{"node-role.kubernetes.io/master", ""}}));
    else
      nodes.push_back(make_node(name, {i == 230 ? kSsd : kGpu}, {}, {{"nvidia.com/gpu", q("8")}}));
  }
  return nodes;
}

PodRequirements gpu_pod(std::vector<Toleration> tolerations, const char* gpus = "1") {
  PodRequirements p;
  p.name = "default/mpi-dist-worker-0";
  p.requests = {{"nvidia.com/gpu", q(gpus)}, {"cpu", q("1")}, {"memory", q("2Gi")}};
  p.tolerations = std::move(tolerations);
  return p;
}

Toleration exists(std::string key) {
  Toleration t;
  t.key = std::move(key);
  t.op = TolerationOperator::Exists;
  return t;
}

std::vector<NodeInfo> infos(PlacementState& st, const std::vector<Node>& nodes) {
  std::vector<NodeInfo> out;
  for (const auto& n : nodes) out.push_back(st.make_node_info(n));
  return out;
}

const NodeVerdict* verdict(const PlacementResult& r, const std::string& node) {
  for (const auto& v : r.verdicts)
    if (v.node == node) return &v;
  return nullptr;
}

}  // namespace

TEST_CASE("the seed: Arena --toleration on six tainted nodes") {
  const auto nodes = seed_nodes();
  PlacementState st;
  auto ni = infos(st, nodes);

  SUBCASE("--toleration ssd_node lands on .230") {
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto r = place(gpu_pod({parse_toleration("ssd_node")}), ni, st);
      REQUIRE(r.chosen);
      CHECK(r.chosen_node == "cn-beijing.192.168.3.230");
      CHECK(r.failed_scheduling_message().empty());
    }
  }
  SUBCASE("--toleration gpu_node --toleration ssd_node lands on a worker") {
    auto pod = gpu_pod(parse_tolerations({"gpu_node", "ssd_node"}));
    std::set<std::string> used;
    for (int i = 0; i < 3; ++i) {
      auto r = place(pod, ni, st);
      REQUIRE(r.chosen);
      used.insert(r.chosen_node);
      st.add_pod(ni[*r.chosen], pod);
    }
    // LeastAllocated spreads the three pods over the three workers, never a master.
    CHECK(used ==
          std::set<std::string>{"cn-beijing.192.168.3.228", "cn-beijing.192.168.3.229", "cn-beijing.192.168.3.230"});
  }
  SUBCASE("--toleration all may land anywhere") {
    auto pod = gpu_pod({Toleration::all()}, "0");
    auto r = explain(pod, ni, st);
    CHECK(r.chosen);
    CHECK(r.verdicts.size() == 6);
    for (const auto& v : r.verdicts) CHECK(v.fits);
  }
  SUBCASE("no toleration: the FailedScheduling message") {
    auto r = place(gpu_pod({}), ni, st);
    CHECK_FALSE(r.chosen);
    CHECK(r.failed_scheduling_message() ==
          "0/6 nodes are available: 1 node(s) had untolerated taint {ssd_node: invalid}, 2 node(s) had untolerated "
          "taint {gpu_node: invalid}, 3 node(s) had untolerated taint {node-role.kubernetes.io/master: }. "
          "preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.");
    REQUIRE(r.verdicts.size() == 6);
    const NodeVerdict* v = verdict(r, "cn-beijing.192.168.3.230");
    REQUIRE(v);
    CHECK(v->plugin == "TaintToleration");
    CHECK(v->reasons == std::vector<std::string>{"node(s) had untolerated taint {ssd_node: invalid}"});
  }
}

TEST_CASE("filters: each plugin's rule and wording") {
  struct Row {
    const char* what;
    Node node;
    PodRequirements pod;
    std::string plugin;  // "" : feasible
    std::vector<std::string> reasons;
  };
  auto pod_with = [](auto&& f) {
    PodRequirements p;
    f(p);
    return p;
  };
  Node cordoned = make_node("cordoned");
  cordoned.unschedulable = true;
  Node gpu = make_node("gpu", {}, {{"accelerator", "v100"}, {"gpus", "8"}}, {{"nvidia.com/gpu", q("8")}});
  NodeSelectorTerm v100{{{"accelerator", Op::In, {"v100", "a100"}}}, {}};
  NodeSelectorTerm not_v100{{{"accelerator", Op::NotIn, {"v100"}}}, {}};
  NodeSelectorTerm has_acc{{{"accelerator", Op::Exists, {}}}, {}};
  NodeSelectorTerm no_acc{{{"accelerator", Op::DoesNotExist, {}}}, {}};
  NodeSelectorTerm gt4{{{"gpus", Op::Gt, {"4"}}}, {}};
  NodeSelectorTerm lt4{{{"gpus", Op::Lt, {"4"}}}, {}};
  NodeSelectorTerm gt_bad{{{"accelerator", Op::Gt, {"4"}}}, {}};  // label not an integer
  NodeSelectorTerm name_gpu{{}, {{"metadata.name", Op::In, {"gpu"}}}};
  NodeSelectorTerm name_not_gpu{{}, {{"metadata.name", Op::NotIn, {"gpu"}}}};
  NodeSelectorTerm both{{{"accelerator", Op::In, {"v100"}}, {"gpus", Op::Lt, {"4"}}}, {}};  // ANDed
  NodeSelectorTerm empty{};
  const std::string affinity = "node(s) didn't match Pod's node affinity/selector";

  const std::vector<Row> rows = {
      {"plain pod, plain node", make_node("n"), PodRequirements{}, "", {}},
      {"cordoned node", cordoned, PodRequirements{}, "NodeUnschedulable", {"node(s) were unschedulable"}},
      {"cordoned node, pod tolerates the unschedulable taint",
       cordoned,
       pod_with([](auto& p) { p.tolerations = {parse_toleration("node.kubernetes.io/unschedulable:NoSchedule")}; }),
       "",
       {}},
      {"cordoned node, toleration for another effect",
       cordoned,
       pod_with([](auto& p) { p.tolerations = {parse_toleration("node.kubernetes.io/unschedulable:NoExecute")}; }),
       "NodeUnschedulable",
       {"node(s) were unschedulable"}},
      {"cordoned node, tolerate everything",
       cordoned,
       pod_with([](auto& p) { p.tolerations = {Toleration::all()}; }),
       "",
       {}},
      {"nodeName elsewhere",
       make_node("n"),
       pod_with([](auto& p) { p.node_name = "other"; }),
       "NodeName",
       {"node(s) didn't match the requested node name"}},
      {"nodeName here", make_node("n"), pod_with([](auto& p) { p.node_name = "n"; }), "", {}},
      {"NoExecute taint filters",
       make_node("n", {{"evict", "x", TaintEffect::NoExecute}}),
       PodRequirements{},
       "TaintToleration",
       {"node(s) had untolerated taint {evict: x}"}},
      {"PreferNoSchedule taint does not filter",
       make_node("n", {{"soft", "", TaintEffect::PreferNoSchedule}}),
       PodRequirements{},
       "",
       {}},
      {"first untolerated taint is reported",
       make_node("n", {kMaster, kGpu}),
       pod_with([](auto& p) { p.tolerations = {exists("node-role.kubernetes.io/master")}; }),
       "TaintToleration",
       {"node(s) had untolerated taint {gpu_node: invalid}"}},
      {"nodeSelector matches",
       gpu,
       pod_with([](auto& p) {
         p.node_selector = {{"accelerator", "v100"}};
       }),
       "",
       {}},
      {"nodeSelector value differs",
       gpu,
       pod_with([](auto& p) {
         p.node_selector = {{"accelerator", "a100"}};
       }),
       "NodeAffinity",
       {affinity}},
      {"nodeSelector label missing",
       make_node("n"),
       pod_with([](auto& p) {
         p.node_selector = {{"ssd", "true"}};
       }),
       "NodeAffinity",
       {affinity}},
      {"affinity In", gpu, pod_with([&](auto& p) { p.required_node_affinity = {v100}; }), "", {}},
      {"affinity NotIn",
       gpu,
       pod_with([&](auto& p) { p.required_node_affinity = {not_v100}; }),
       "NodeAffinity",
       {affinity}},
      {"affinity NotIn, label absent",
       make_node("n"),
       pod_with([&](auto& p) { p.required_node_affinity = {not_v100}; }),
       "",
       {}},
      {"affinity Exists", gpu, pod_with([&](auto& p) { p.required_node_affinity = {has_acc}; }), "", {}},
      {"affinity DoesNotExist",
       gpu,
       pod_with([&](auto& p) { p.required_node_affinity = {no_acc}; }),
       "NodeAffinity",
       {affinity}},
      {"affinity Gt", gpu, pod_with([&](auto& p) { p.required_node_affinity = {gt4}; }), "", {}},
      {"affinity Lt", gpu, pod_with([&](auto& p) { p.required_node_affinity = {lt4}; }), "NodeAffinity", {affinity}},
      {"affinity Gt on a non-integer label",
       gpu,
       pod_with([&](auto& p) { p.required_node_affinity = {gt_bad}; }),
       "NodeAffinity",
       {affinity}},
      {"expressions of a term are ANDed",
       gpu,
       pod_with([&](auto& p) { p.required_node_affinity = {both}; }),
       "NodeAffinity",
       {affinity}},
      {"terms are ORed",
       gpu,
       pod_with([&](auto& p) {
         p.required_node_affinity = {lt4, v100};
       }),
       "",
       {}},
      {"an empty term matches nothing",
       gpu,
       pod_with([&](auto& p) { p.required_node_affinity = {empty}; }),
       "NodeAffinity",
       {affinity}},
      {"matchFields NotIn",
       gpu,
       pod_with([&](auto& p) { p.required_node_affinity = {name_not_gpu}; }),
       "NodeAffinity",
       {affinity}},
      {"matchFields In", gpu, pod_with([&](auto& p) { p.required_node_affinity = {name_gpu}; }), "", {}},
      {"nodeSelector and affinity must both hold",
       gpu,
       pod_with([&](auto& p) {
         p.node_selector = {{"accelerator", "a100"}};
         p.required_node_affinity = {v100};
       }),
       "NodeAffinity",
       {affinity}},
      {"GPUs fit",
       gpu,
       pod_with([](auto& p) {
         p.requests = {{"nvidia.com/gpu", q("8")}};
       }),
       "",
       {}},
      {"too many GPUs",
       gpu,
       pod_with([](auto& p) {
         p.requests = {{"nvidia.com/gpu", q("9")}};
       }),
       "NodeResourcesFit",
       {"Insufficient nvidia.com/gpu"}},
      {"GPU on a node without any",
       make_node("n"),
       pod_with([](auto& p) {
         p.requests = {{"nvidia.com/gpu", q("1")}};
       }),
       "NodeResourcesFit",
       {"Insufficient nvidia.com/gpu"}},
      {"virtual GPUs",
       make_node("n", {}, {}, {{"virtaitech.com/gpu", q("4")}}),
       pod_with([](auto& p) {
         p.requests = {{"virtaitech.com/gpu", q("5")}};
       }),
       "NodeResourcesFit",
       {"Insufficient virtaitech.com/gpu"}},
      {"zero request is skipped",
       make_node("n"),
       pod_with([](auto& p) {
         p.requests = {{"nvidia.com/gpu", q("0")}};
       }),
       "",
       {}},
      {"cpu, memory and ephemeral-storage",
       make_node("n", {}, {}, {{"ephemeral-storage", q("100Gi")}}),
       pod_with([](auto& p) {
         p.requests = {{"cpu", q("33")}, {"memory", q("257Gi")}, {"ephemeral-storage", q("101Gi")}};
       }),
       "NodeResourcesFit",
       {"Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage"}},
      {"millicores count",
       make_node("n"),
       pod_with([](auto& p) {
         p.requests = {{"cpu", q("32001m")}};
       }),
       "NodeResourcesFit",
       {"Insufficient cpu"}},
      {"exactly the allocatable fits",
       make_node("n"),
       pod_with([](auto& p) {
         p.requests = {{"cpu", q("32")}, {"memory", q("256Gi")}};
       }),
       "",
       {}},
      {"no pods allowed",
       make_node("n", {}, {}, {{"pods", q("0")}}),
       PodRequirements{},
       "NodeResourcesFit",
       {"Too many pods"}},
      {"unprefixed unknown resources are not scheduled on",
       make_node("n"),
       pod_with([](auto& p) {
         p.requests = {{"widgets", q("5")}};
       }),
       "",
       {}},
      {"taints are checked before resources",
       make_node("n", {kGpu}),
       pod_with([](auto& p) {
         p.requests = {{"nvidia.com/gpu", q("1")}};
       }),
       "TaintToleration",
       {"node(s) had untolerated taint {gpu_node: invalid}"}},
  };
  for (const auto& r : rows) {
    CAPTURE(std::string(r.what));
    auto res = explain(r.pod, std::vector<Node>{r.node});
    REQUIRE(res.verdicts.size() == 1);
    const auto& v = res.verdicts[0];
    CHECK(v.fits == r.plugin.empty());
    CHECK(v.plugin == r.plugin);
    CHECK(v.reasons == r.reasons);
    CHECK(res.chosen.has_value() == r.plugin.empty());
  }
}

TEST_CASE("NodeResourcesFit counts what is already bound") {
  PlacementState st;
  auto ni = infos(st, {make_node("a", {}, {}, {{"nvidia.com/gpu", q("2")}, {"pods", q("2")}})});
  auto pod = gpu_pod({}, "1");
  for (int i = 0; i < 2; ++i) {
    auto r = place(pod, ni, st);
    REQUIRE(r.chosen);
    st.add_pod(ni[*r.chosen], pod);
  }
  CHECK(ni[0].requested.get(st.resource_id("nvidia.com/gpu")) == 2);
  CHECK(ni[0].allocatable.get(st.resource_id("nvidia.com/gpu")) == 2);
  CHECK(ni[0].allocatable.get(st.resource_id("cpu")) == 32000);
  CHECK(ni[0].requested.get(st.resource_id("cpu")) == 2000);
  CHECK(ni[0].pod_count == 2);
  auto r = place(pod, ni, st);
  CHECK_FALSE(r.chosen);
  REQUIRE(r.verdicts.size() == 1);
  CHECK(r.verdicts[0].reasons == std::vector<std::string>{"Too many pods", "Insufficient nvidia.com/gpu"});
  CHECK(r.failed_scheduling_message() ==
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu, 1 Too many pods. preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod.");
  st.remove_pod(ni[0], pod);
  CHECK(place(pod, ni, st).chosen);
}

TEST_CASE("FailedScheduling messages as kube-scheduler v1.32 assembles them") {
  SUBCASE("resources and taints mix, preemption sentence splits them") {
    std::vector<Node> nodes = {
        make_node("cp", {{"node-role.kubernetes.io/control-plane", "", TaintEffect::NoSchedule}}), make_node("worker")};
    auto r = explain(gpu_pod({}), nodes);
    CHECK(r.failed_scheduling_message() ==
          "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint "
          "{node-role.kubernetes.io/control-plane: }. preemption: 0/2 nodes are available: 1 No preemption victims "
          "found for incoming pod, 1 Preemption is not helpful for scheduling.");
  }
  SUBCASE("reasons are sorted as strings, counts included") {
    std::vector<Node> nodes;
    for (int i = 0; i < 10; ++i) nodes.push_back(make_node("t" + std::to_string(i), {kGpu}));
    for (int i = 0; i < 2; ++i) nodes.push_back(make_node("s" + std::to_string(i), {kSsd}));
    auto r = explain(PodRequirements{}, nodes);
    CHECK(r.failed_scheduling_message() ==
          "0/12 nodes are available: 10 node(s) had untolerated taint {gpu_node: invalid}, 2 node(s) had untolerated "
          "taint {ssd_node: invalid}. preemption: 0/12 nodes are available: 12 Preemption is not helpful for "
          "scheduling.");
  }
  SUBCASE("one node with several insufficient resources counts in each") {
    auto pod = gpu_pod({}, "1");
    pod.requests["cpu"] = q("64");
    auto r = explain(pod, std::vector<Node>{make_node("a"), make_node("b", {}, {}, {{"nvidia.com/gpu", q("1")}})});
    CHECK(r.failed_scheduling_message() ==
          "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 2 Insufficient cpu. preemption: 0/2 nodes are "
          "available: 2 No preemption victims found for incoming pod.");
  }
  SUBCASE("unschedulable and affinity") {
    Node c = make_node("c");
    c.unschedulable = true;
    PodRequirements pod;
    pod.node_selector = {{"disktype", "ssd"}};
    auto r = explain(pod, std::vector<Node>{c, make_node("d"), make_node("e")});
    CHECK(r.failed_scheduling_message() ==
          "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node "
          "affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.");
  }
  SUBCASE("an empty cluster") {
    PlacementState st;
    auto r = place(PodRequirements{}, std::span<const NodeInfo>{}, st);
    CHECK(r.failed_scheduling_message() == "no nodes available to schedule pods");
  }
}

TEST_CASE("NodeAffinity PreFilter narrows to the nodes named by matchFields") {
  std::vector<Node> nodes;
  for (int i = 0; i < 46; ++i) nodes.push_back(make_node("ip-" + std::to_string(i)));
  nodes[7].allocatable["pods"] = q("4");
  PlacementState st;
  auto ni = infos(st, nodes);
  for (int i = 0; i < 4; ++i) st.add_pod(ni[7], PodRequirements{});
  PodRequirements pinned;
  pinned.required_node_affinity = {NodeSelectorTerm{{}, {{"metadata.name", Op::In, {"ip-7"}}}}};
  auto r = place(pinned, ni, st);
  CHECK_FALSE(r.chosen);
  CHECK(r.failed_scheduling_message() ==
        "0/46 nodes are available: 1 Too many pods, 45 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: "
        "0/46 nodes are available: 1 No preemption victims found for incoming pod, 45 Preemption is not helpful for "
        "scheduling.");
  auto e = explain(pinned, ni, st);
  CHECK(e.verdicts.size() == 46);
  CHECK(e.failed_scheduling_message() == r.failed_scheduling_message());
  pinned.required_node_affinity[0].match_fields[0].values = {"ip-8"};
  auto ok = place(pinned, ni, st);
  REQUIRE(ok.chosen);
  CHECK(ok.chosen_node == "ip-8");

  PodRequirements conflict;
  conflict.required_node_affinity = {
      NodeSelectorTerm{{}, {{"metadata.name", Op::In, {"ip-1"}}, {"metadata.name", Op::In, {"ip-2"}}}}};
  auto c = place(conflict, ni, st);
  CHECK(c.failed_scheduling_message() ==
        "0/46 nodes are available: pod affinity terms conflict. preemption: 0/46 nodes are available: 46 Preemption is "
        "not helpful for scheduling.");
}

TEST_CASE("VolumeBinding PreFilter: the pod's claims, read from spec.volumes") {
  json::value pod = json::parse(R"({"metadata":{"name":"p","namespace":"team"},"spec":{"containers":[],"volumes":[
      {"name":"a","persistentVolumeClaim":{"claimName":"data"}},{"name":"b","emptyDir":{}},
      {"name":"c","persistentVolumeClaim":{"claimName":"out","readOnly":true}}]}})");
  PodRequirements req = PodRequirements::from_pod_json(pod);
  REQUIRE(req.claims == std::vector<PodClaim>{{"data", ClaimStatus::Unknown}, {"out", ClaimStatus::Unknown}});
  CHECK_THROWS_AS(PodRequirements::from_pod_json(
                      json::parse(R"({"spec":{"volumes":[{"name":"a","persistentVolumeClaim":{"claimName":7}}]}})")),
                  ValidationError);

  auto nodes = seed_nodes();
  PlacementState st;
  auto ni = infos(st, nodes);
  req.tolerations = {exists("ssd_node"), exists("gpu_node"), exists("node-role.kubernetes.io/master")};
  auto message = [&](ClaimStatus first, ClaimStatus second) {
    PodRequirements r = req;
    r.claims[0].status = first;
    r.claims[1].status = second;
    return place(r, ni, st).failed_scheduling_message();
  };
  // Claims not looked up, bound, or waiting for their first consumer do not stop the pod.
  for (ClaimStatus ok : {ClaimStatus::Unknown, ClaimStatus::Bound, ClaimStatus::UnboundWaitForFirstConsumer})
    CHECK(message(ok, ClaimStatus::Bound).empty());
  const std::string tail = ". preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.";
  CHECK(message(ClaimStatus::Missing, ClaimStatus::Bound) ==
        "0/6 nodes are available: persistentvolumeclaim \"data\" not found" + tail);
  CHECK(message(ClaimStatus::Bound, ClaimStatus::Deleting) ==
        "0/6 nodes are available: persistentvolumeclaim \"out\" is being deleted" + tail);
  CHECK(message(ClaimStatus::UnboundImmediate, ClaimStatus::Bound) ==
        "0/6 nodes are available: pod has unbound immediate PersistentVolumeClaims" + tail);
  // GetPodVolumeClaims returns at the first missing claim, even after an unbound immediate one.
  CHECK(message(ClaimStatus::UnboundImmediate, ClaimStatus::Missing) ==
        "0/6 nodes are available: persistentvolumeclaim \"out\" not found" + tail);
  // The rejection comes from a PreFilter: no node is filtered, none is chosen.
  PodRequirements r = req;
  r.claims[0].status = ClaimStatus::UnboundImmediate;
  auto placed = place(r, ni, st);
  CHECK_FALSE(placed.chosen);
  CHECK(placed.verdicts.empty());
}

TEST_CASE("numFeasibleNodesToFind") {
  struct Row {
    std::size_t nodes;
    int percentage;
    std::size_t expect;
  };
  const std::vector<Row> rows = {
      {0, 0, 0},         {10, 0, 10},     {99, 0, 99},    {100, 0, 100},  {200, 0, 100},
      {1000, 0, 420},    {1500, 0, 570},  {5000, 0, 500}, {6000, 0, 300}, {15000, 0, 750},
      {1000, 100, 1000}, {1000, 50, 500}, {1000, 1, 100}, {50, 10, 50},
  };
  for (const auto& r : rows) {
    CAPTURE(r.nodes);
    CAPTURE(r.percentage);
    CHECK(num_feasible_nodes_to_find(r.nodes, r.percentage) == r.expect);
  }
}

TEST_CASE("large clusters: stop after numFeasibleNodesToFind and rotate the start index") {
  std::vector<Node> nodes;
  for (int i = 0; i < 5000; ++i) nodes.push_back(make_node("n" + std::to_string(i)));
  PlacementState st;
  auto ni = infos(st, nodes);
  st.record_verdicts = true;
  auto r = place(PodRequirements{}, ni, st);
  REQUIRE(r.chosen);
  CHECK(r.verdicts.size() == 500);  // 10% of 5000 evaluated
  CHECK(st.next_start_index == 500);
  CHECK(*r.chosen < 500);
  auto r2 = place(PodRequirements{}, ni, st);
  REQUIRE(r2.chosen);
  CHECK(*r2.chosen >= 500);
  CHECK(*r2.chosen < 1000);
  CHECK(st.next_start_index == 1000);
  st.next_start_index = 4900;  // wraps around
  auto r3 = place(PodRequirements{}, ni, st);
  CHECK(st.next_start_index == 400);
  REQUIRE(r3.chosen);
  CHECK((*r3.chosen >= 4900 || *r3.chosen < 400));
}

TEST_CASE("scoring") {
  PlacementState st;
  SUBCASE("PreferNoSchedule taints lower the score") {
    auto ni = infos(st, {make_node("soft", {{"soft", "", TaintEffect::PreferNoSchedule}}), make_node("clean")});
    auto r = place(PodRequirements{}, ni, st);
    REQUIRE(r.chosen);
    CHECK(r.chosen_node == "clean");
    PodRequirements tolerant;
    tolerant.tolerations = {exists("soft")};
    auto e = explain(tolerant, ni, st);
    REQUIRE(e.verdicts.size() == 2);
    CHECK(e.verdicts[0].score == e.verdicts[1].score);
    CHECK(e.chosen_node == "soft");  // a tie: the first in evaluation order
  }
  SUBCASE("LeastAllocated prefers the emptier node") {
    auto ni = infos(st, {make_node("busy"), make_node("idle")});
    PodRequirements big;
    big.requests = {{"cpu", q("16")}, {"memory", q("128Gi")}};
    st.add_pod(ni[0], big);
    auto r = place(big, ni, st);
    REQUIRE(r.chosen);
    CHECK(r.chosen_node == "idle");
  }
  SUBCASE("pods with the same spread key spread out") {
    auto ni = infos(st, {make_node("a"), make_node("b")});
    PodRequirements replica;
    replica.spread_key = "default/ReplicaSet/web";
    PodRequirements other;
    other.spread_key = "default/ReplicaSet/db";
    // each node carries one pod; only a already runs a replica of web.
    st.add_pod(ni[0], replica);
    st.add_pod(ni[1], other);
    auto r = place(replica, ni, st);
    REQUIRE(r.chosen);
    CHECK(r.chosen_node == "b");
    const int web = st.spread_id("default/ReplicaSet/web");
    CHECK(ni[0].spread_count(web) == 1);
    CHECK(ni[1].spread_count(web) == 0);
    CHECK(ni[1].spread_count(st.spread_id("default/ReplicaSet/db")) == 1);
    st.remove_pod(ni[0], replica);
    CHECK(ni[0].spread_count(web) == 0);
    CHECK(ni[0].spread_counts.empty());
  }
  SUBCASE("a single feasible node is chosen without scoring") {
    auto ni = infos(st, {make_node("a", {kGpu}), make_node("b")});
    st.record_verdicts = true;
    auto r = place(PodRequirements{}, ni, st);
    REQUIRE(r.chosen);
    CHECK(r.chosen_node == "b");
    const NodeVerdict* v = verdict(r, "b");
    REQUIRE(v);
    CHECK_FALSE(v->score.has_value());
  }
}

TEST_CASE("effective_pod_requests: containers, init containers, sidecars, overhead, limits") {
  auto res = [](std::map<std::string, Quantity> req, std::map<std::string, Quantity> lim = {}, bool sidecar = false) {
    return ContainerResources{std::move(req), std::move(lim), sidecar};
  };
  struct Row {
    const char* what;
    std::vector<ContainerResources> containers, inits;
    std::map<std::string, Quantity> overhead;
    std::map<std::string, std::string> expect;
  };
  const std::vector<Row> rows = {
      {"containers add up",
       {res({{"cpu", q("500m")}}), res({{"cpu", q("1")}, {"memory", q("1Gi")}})},
       {},
       {},
       {{"cpu", "1500m"}, {"memory", "1Gi"}}},
      {"a limit without a request is the request",
       {res({}, {{"nvidia.com/gpu", q("2")}, {"cpu", q("2")}})},
       {},
       {},
       {{"cpu", "2"}, {"nvidia.com/gpu", "2"}}},
      {"a request wins over its limit", {res({{"cpu", q("1")}}, {{"cpu", q("4")}})}, {}, {}, {{"cpu", "1"}}},
      {"an init container larger than the sum wins",
       {res({{"cpu", q("1")}})},
       {res({{"cpu", q("3")}, {"memory", q("1Gi")}})},
       {},
       {{"cpu", "3"}, {"memory", "1Gi"}}},
      {"a smaller init container changes nothing",
       {res({{"cpu", q("2")}})},
       {res({{"cpu", q("1")}})},
       {},
       {{"cpu", "2"}}},
      {"sidecars add to the containers and to later init containers",
       {res({{"cpu", q("1")}})},
       {res({{"cpu", q("500m")}}, {}, true), res({{"cpu", q("2")}})},
       {},
       {{"cpu", "2500m"}}},
      {"overhead is added",
       {res({{"cpu", q("1")}})},
       {},
       {{"cpu", q("250m")}, {"memory", q("120Mi")}},
       {{"cpu", "1250m"}, {"memory", "120Mi"}}},
  };
  for (const auto& r : rows) {
    CAPTURE(std::string(r.what));
    auto got = effective_pod_requests(r.containers, r.inits, r.overhead);
    std::map<std::string, std::string> printed;
    for (const auto& [k, v] : got) printed[k] = v.to_string();
    CHECK(printed == r.expect);
  }
  auto nonzero = effective_pod_requests({res({}), res({{"cpu", q("1")}})}, {}, {}, true);
  CHECK(nonzero.at("cpu").milli_value() == 1100);
  CHECK(nonzero.at("memory").value() == 2 * 200LL * 1024 * 1024);
}

TEST_CASE("PodRequirements::from_pod_json") {
  auto pod = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "mpi-dist-worker-0", "namespace": "team-a",
                 "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "name": "mpi-dist",
                                      "uid": "u1", "controller": true}]},
    "spec": {
      "nodeName": "",
      "nodeSelector": {"gpu": "v100"},
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["bad"]}]}]}}},
      "tolerations": [{"key": "ssd_node", "operator": "Exists"},
                      {"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"},
                      {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                       "tolerationSeconds": 300}],
      "initContainers": [{"name": "stage", "resources": {"requests": {"cpu": "2"}}}],
      "containers": [{"name": "worker", "resources": {"limits": {"nvidia.com/gpu": 1, "memory": "8Gi"},
                                                      "requests": {"cpu": "500m"}}},
                     {"name": "sidecar"}]
    }})");
  auto p = PodRequirements::from_pod_json(pod);
  CHECK(p.name == "team-a/mpi-dist-worker-0");
  CHECK(p.spread_key == "team-a/MPIJob/mpi-dist");
  CHECK(p.requests.at("cpu").to_string() == "2");
  CHECK(p.requests.at("memory").to_string() == "8Gi");
  CHECK(p.requests.at("nvidia.com/gpu").value() == 1);
  CHECK(p.nonzero_milli_cpu == 2000);  // max(500m + 100m default, 2)
  CHECK(p.nonzero_memory == 8LL * 1024 * 1024 * 1024 + 200LL * 1024 * 1024);
  CHECK(p.node_selector == std::map<std::string, std::string>{{"gpu", "v100"}});
  REQUIRE(p.required_node_affinity.size() == 2);
  CHECK(p.required_node_affinity[0].match_expressions[0] == NodeSelectorRequirement{"zone", Op::In, {"a", "b"}});
  CHECK(p.required_node_affinity[1].match_fields[0].op == Op::NotIn);
  REQUIRE(p.tolerations.size() == 3);
  CHECK(p.tolerations[0] == exists("ssd_node"));
  CHECK(p.tolerations[1].effect == TaintEffect::NoSchedule);
  CHECK(p.tolerations[2].toleration_seconds == 300);

  struct Bad {
    std::string spec;
    std::string field;
  };
  const std::vector<Bad> bad = {
      {R"({"containers": [{"resources": {"requests": {"cpu": "lots"}}}]})",
       "spec.containers[0].resources.requests[cpu]"},
      {R"({"containers": [{"resources": {"limits": {"memory": 1.5}}}]})",
       "spec.containers[0].resources.limits[memory]"},
      {R"({"containers": {}})", "spec.containers"},
      {R"({"tolerations": [{"key": "a", "operator": "Maybe"}]})", "spec.tolerations[0].operator"},
      {R"({"tolerations": [{"key": "a", "operator": "Exists", "value": "x"}]})", "spec.tolerations[0].operator"},
      {R"({"tolerations": [{"key": "a", "effect": "Sometimes"}]})", "spec.tolerations[0].effect"},
      {R"({"nodeSelector": {"a": 1}})", "spec.nodeSelector[a]"},
      {R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}}})",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
       "matchExpressions[0]"
       ".values"},
      {R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["1", "2"]}]}]}}}})",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
       "matchExpressions[0]"
       ".values"},
      {R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}]}}}})",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0]"
       ".key"},
      {R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["x"]}]}]}}}})",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
       "matchExpressions[0]"
       ".operator"},
  };
  // kube-apiserver v1.32 takes a Gt/Lt value that is no integer ("many", "1-2"); it never matches.
  CHECK_NOTHROW(PodRequirements::from_pod_json(json::parse(
      R"({"metadata": {"name": "p"}, "spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
          {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["many"]}]}]}}}}})")));
  for (const auto& b : bad) {
    CAPTURE(b.spec);
    try {
      PodRequirements::from_pod_json(json::parse(R"({"metadata": {"name": "p"}, "spec": )" + b.spec + "}"));
      FAIL("expected a ValidationError");
    } catch (const ValidationError& e) {
      CHECK(e.field() == b.field);
    }
  }
}

namespace {
void check_same_requirements(const PodRequirements& a, const PodRequirements& b) {
  CHECK(a.name == b.name);
  CHECK(a.spread_key == b.spread_key);
  CHECK(a.requests == b.requests);
  CHECK(a.nonzero_milli_cpu == b.nonzero_milli_cpu);
  CHECK(a.nonzero_memory == b.nonzero_memory);
  CHECK(a.node_selector == b.node_selector);
  CHECK(a.required_node_affinity == b.required_node_affinity);
  CHECK(a.tolerations == b.tolerations);
  CHECK(a.node_name == b.node_name);
  CHECK(a.claims == b.claims);
}
json::object cache_pod(const std::string& name, const std::string& owner, const std::string& spec) {
  const std::string owners = owner.empty() ? ""
                                           : R"(, "ownerReferences": [{"kind": "ReplicaSet", "name": ")" + owner +
                                                 R"(", "controller": true}])";
  return json::parse(R"({"metadata": {"name": ")" + name + R"(", "namespace": "team-a")" + owners + R"(}, "spec": )" +
                     spec + "}")
      .as_object();
}
}  // namespace

TEST_CASE("PodRequirementsCache: from_pod_json's requirements and errors, each spec decoded once") {
  const std::string a = R"({"containers": [{"name": "c", "image": "x:1", "env": [{"name": "A", "value": "1"}],
      "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}}],
    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}, {"name": "e", "emptyDir": {}}],
    "tolerations": [{"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"},
                    {"key": "ssd_node", "operator": "Exists"}],
    "nodeSelector": {"pool": "train"}})";
  // Differs from `a` only in members from_pod_json does not read (image, env, a volume's source
  // other than a claim): the same entry.
  const std::string a_twin = R"({"containers": [{"name": "other", "image": "y:2", "env": [],
      "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}}],
    "volumes": [{"name": "d2", "persistentVolumeClaim": {"claimName": "data"}}, {"name": "e", "configMap": {"name": "m"}}],
    "tolerations": [{"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"},
                    {"key": "ssd_node", "operator": "Exists"}],
    "nodeSelector": {"pool": "train"}})";
  // Each differs from `a` in one member it reads.
  const std::vector<std::string> others = {
      R"({"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}}],
          "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
          "tolerations": [{"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"},
                          {"key": "ssd_node", "operator": "Exists"}], "nodeSelector": {"pool": "train"}})",
      R"({"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}}],
          "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "other"}}],
          "tolerations": [{"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"},
                          {"key": "ssd_node", "operator": "Exists"}], "nodeSelector": {"pool": "train"}})",
      R"({"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}}],
          "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
          "tolerations": [{"key": "ssd_node", "operator": "Exists"},
                          {"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"}],
          "nodeSelector": {"pool": "train"}})",
      R"({"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}}],
          "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
          "tolerations": [{"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"},
                          {"key": "ssd_node", "operator": "Exists"}], "nodeSelector": {"pool": "train"},
          "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}})",
      R"({"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}}],
          "initContainers": [{"resources": {"requests": {"cpu": "3"}}, "restartPolicy": "Always"}],
          "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
          "tolerations": [{"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"},
                          {"key": "ssd_node", "operator": "Exists"}], "nodeSelector": {"pool": "train"}})",
      R"({"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}}],
          "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}], "overhead": {"cpu": "250m"},
          "tolerations": [{"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"},
                          {"key": "ssd_node", "operator": "Exists"}], "nodeSelector": {"pool": "train"}})",
      R"({"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}}],
          "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}], "nodeName": "n1",
          "tolerations": [{"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"},
                          {"key": "ssd_node", "operator": "Exists"}], "nodeSelector": {"pool": "train"}})",
  };
  PodRequirementsCache cache;
  std::vector<json::object> pods;
  for (int round = 0; round < 3; ++round) {
    const std::string r = std::to_string(round);
    pods.push_back(cache_pod("a-" + r, "rs-" + r, a));
    pods.push_back(cache_pod("twin-" + r, round == 1 ? "" : "rs-twin", a_twin));  // other owners, or none
    for (std::size_t i = 0; i < others.size(); ++i)
      pods.push_back(cache_pod("o" + std::to_string(i) + "-" + r, "", others[i]));
  }
  for (const auto& pod : pods) {
    CAPTURE(json::serialize(pod));
    check_same_requirements(cache.read(pod), PodRequirements::from_pod_json(pod));
  }
  // One decode for `a` and its twin, one for each of the others; every later pod is a hit.
  CHECK(cache.misses() == 1 + others.size());
  CHECK(cache.hits() == pods.size() - cache.misses());
  // The same members in another order: the same requirements (whether or not the entry is shared).
  const std::string a_reordered = R"({"nodeSelector": {"pool": "train"},
    "tolerations": [{"effect": "NoSchedule", "value": "invalid", "operator": "Equal", "key": "gpu_node"},
                    {"operator": "Exists", "key": "ssd_node"}],
    "volumes": [{"persistentVolumeClaim": {"claimName": "data"}, "name": "d"}, {"name": "e", "emptyDir": {}}],
    "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"memory": "1Gi", "cpu": "500m"}}}]})";
  for (const auto& pod : {cache_pod("r1", "rs-r", a_reordered), cache_pod("r2", "", a_reordered)})
    check_same_requirements(cache.read(pod), PodRequirements::from_pod_json(pod));
  // The pod's own name and owner, not the remembered pod's.
  CHECK(cache.read(cache_pod("x", "rs-x", a)).spread_key == "team-a/ReplicaSet/rs-x");
  CHECK(cache.read(cache_pod("y", "", a_twin)).spread_key.empty());
  CHECK(cache.read(cache_pod("y", "", a_twin)).name == "team-a/y");

  // Errors: the same field as from_pod_json, on a miss (the spec) and on a hit (the metadata);
  // nothing is remembered for a pod that fails.
  const auto field_of = [](const auto& read) -> std::string {
    try {
      read();
    } catch (const ValidationError& e) {
      return e.field();
    }
    return "no error";
  };
  const json::object bad_spec =
      cache_pod("bad", "", R"({"containers": [{"resources": {"requests": {"cpu": "lots"}}}]})");
  CHECK(field_of([&] { cache.read(bad_spec); }) == "spec.containers[0].resources.requests[cpu]");
  CHECK(field_of([&] { cache.read(bad_spec); }) == "spec.containers[0].resources.requests[cpu]");
  CHECK(field_of([&] { cache.read(cache_pod("c", "", R"({"containers": {}})")); }) == "spec.containers");
  json::object bad_owner = cache_pod("bad-owner", "rs", a);
  bad_owner["metadata"].as_object()["ownerReferences"].as_array()[0].as_object()["kind"] = 7;
  CHECK(field_of([&] { cache.read(bad_owner); }) == field_of([&] { PodRequirements::from_pod_json(bad_owner); }));
  CHECK(field_of([&] { cache.read(bad_owner); }) == "metadata.ownerReferences[0].kind");
  bad_owner["metadata"].as_object()["ownerReferences"].as_array()[0] = "rs";
  CHECK(field_of([&] { cache.read(bad_owner); }) == "metadata.ownerReferences[0]");

  // Capacity: full, it forgets everything and decodes again.
  PodRequirementsCache small(2);
  small.read(cache_pod("p1", "", a));
  small.read(cache_pod("p2", "", others[0]));
  small.read(cache_pod("p3", "", others[1]));  // full: forgets a and others[0]
  small.read(cache_pod("p4", "", others[1]));
  CHECK(small.misses() == 3);
  CHECK(small.hits() == 1);
  small.read(cache_pod("p5", "", a));
  CHECK(small.misses() == 4);
}

// Random nodes (taints, labels, cordons) and pods (tolerations, nodeSelector, required affinity)
// for the differential tests below.
struct RandomShapes {
  std::mt19937 rng;
  explicit RandomShapes(unsigned seed) : rng(seed) {}
  int pick(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); }
  static constexpr const char* keys[] = {"gpu_node", "ssd_node", "maint"};
  static constexpr const char* values[] = {"invalid", "soon", ""};
  static constexpr TaintEffect effects[] = {TaintEffect::NoSchedule, TaintEffect::PreferNoSchedule,
                                            TaintEffect::NoExecute};
  Node random_node(int i, std::map<std::string, Quantity> alloc = {}) {
    std::vector<Taint> taints;
    for (int k = 0; k < 3; ++k)
      if (pick(3) == 0) taints.push_back({keys[k], values[pick(3)], effects[pick(3)]});
    std::map<std::string, std::string> labels{{"zone", "z" + std::to_string(pick(3))}};
    if (pick(2)) labels["pool"] = pick(2) ? "train" : "infer";
    if (pick(4) == 0) labels["rank"] = std::to_string(pick(10));
    Node n = make_node("n" + std::to_string(i), taints, labels, std::move(alloc));
    n.unschedulable = pick(10) == 0;
    return n;
  }
  PodRequirements random_pod() {
    PodRequirements p;
    for (int k = 0; k < 3; ++k) {
      if (pick(3) != 0) continue;
      Toleration t;
      t.key = keys[k];
      t.op = pick(2) ? TolerationOperator::Exists : TolerationOperator::Equal;
      if (t.op == TolerationOperator::Equal) t.value = values[pick(3)];
      if (pick(2)) t.effect = effects[pick(3)];
      p.tolerations.push_back(t);
    }
    if (pick(6) == 0) p.tolerations.push_back(exists("node.kubernetes.io/unschedulable"));
    if (pick(3) == 0) p.node_selector["pool"] = pick(2) ? "train" : "infer";
    if (pick(3) == 0) {
      NodeSelectorTerm term;
      const Op ops[] = {Op::In, Op::NotIn, Op::Exists, Op::DoesNotExist, Op::Gt, Op::Lt};
      const Op op = ops[pick(6)];
      NodeSelectorRequirement r{op == Op::Gt || op == Op::Lt ? "rank" : "zone", op, {}};
      if (op == Op::In || op == Op::NotIn) r.values = {"z" + std::to_string(pick(3))};
      if (op == Op::Gt || op == Op::Lt) r.values = {std::to_string(pick(10))};
      term.match_expressions.push_back(r);
      p.required_node_affinity.push_back(term);
    }
    return p;
  }
};

// place() caches the filters that read only the pod's constraints and the node (see PlacementState).
// Every answer from a state whose cache has seen other pods and rebuilt nodes must equal the answer of
// a fresh state.
TEST_CASE("cached filter verdicts equal a fresh state's, across pods and rebuilt nodes") {
  RandomShapes gen(7);
  auto pick = [&](int n) { return gen.pick(n); };
  auto random_node = [&](int i) { return gen.random_node(i); };
  auto random_pod = [&]() { return gen.random_pod(); };
  std::vector<Node> nodes;
  for (int i = 0; i < 40; ++i) nodes.push_back(random_node(i));
  PlacementState st;
  auto ni = infos(st, nodes);
  int compared = 0, differing_answers = 0;
  std::string first_answer;
  for (int round = 0; round < 300; ++round) {
    if (round % 50 == 49) {  // rebuild a few nodes in place, with other taints and labels
      for (int k = 0; k < 5; ++k) {
        const auto i = static_cast<std::size_t>(pick(40));
        nodes[i] = random_node(static_cast<int>(i));
        ni[i] = st.make_node_info(nodes[i]);
      }
    }
    const PodRequirements pod = random_pod();
    const PlacementResult cached = explain(pod, ni, st);
    const PlacementResult fresh = explain(pod, std::span<const Node>(nodes));
    REQUIRE(cached.verdicts.size() == fresh.verdicts.size());
    std::string answer;
    for (std::size_t i = 0; i < fresh.verdicts.size(); ++i) {
      const auto &a = cached.verdicts[i], &b = fresh.verdicts[i];
      CHECK(a.node == b.node);
      CHECK(a.fits == b.fits);
      CHECK(a.plugin == b.plugin);
      CHECK(a.reasons == b.reasons);
      CHECK(a.score == b.score);
      answer += a.plugin + (a.score ? std::to_string(*a.score) : "") + ";";
    }
    CHECK(cached.chosen_node == fresh.chosen_node);
    // place() with the warm cache picks what a fresh state picks from the same start index.
    PlacementState cold;
    auto cold_infos = infos(cold, nodes);
    cold.next_start_index = st.next_start_index;
    const PlacementResult placed = place(pod, ni, st), placed_fresh = place(pod, cold_infos, cold);
    CHECK(placed.chosen == placed_fresh.chosen);
    CHECK(placed.failed_scheduling_message() == placed_fresh.failed_scheduling_message());
    if (round == 0) first_answer = answer;
    if (answer != first_answer) ++differing_answers;
    ++compared;
  }
  CHECK(compared == 300);
  CHECK(differing_answers > 100);  // the generated pods and nodes do exercise different verdicts
}

// place() walks only the nodes its per-constraint-set index says pass the static filters. It must
// choose, word failures and advance next_start_index exactly as the node-by-node walk does (the one
// taken when verdicts are recorded), with pods bound, nodes rebuilt and the span moved in between.
TEST_CASE("the index of statically passing nodes answers as the node-by-node walk") {
  RandomShapes gen(11);
  const std::size_t kNodes = 600;
  auto node = [&](std::size_t i) {
    return gen.random_node(static_cast<int>(i), {{"cpu", Quantity::from_int(8 + gen.pick(32))},
                                                 {"pods", Quantity::from_int(1 + gen.pick(5))}});
  };
  std::vector<Node> nodes;
  for (std::size_t i = 0; i < kNodes; ++i) nodes.push_back(node(i));
  PlacementState indexed, walked;
  walked.record_verdicts = true;
  // numFeasibleNodesToFind is then 100: walks of the pods that pass many nodes stop early.
  indexed.percentage_of_nodes_to_score = walked.percentage_of_nodes_to_score = 10;
  auto a = infos(indexed, nodes), b = infos(walked, nodes);
  // Another cluster of the same size, built before the loop: now and then placed on in between.
  std::vector<Node> others;
  for (std::size_t i = 0; i < kNodes; ++i) others.push_back(node(i));
  const auto other_a = infos(indexed, others), other_b = infos(walked, others);
  std::vector<PodRequirements> shapes{PodRequirements{}};
  for (int i = 0; i < 6; ++i) shapes.push_back(gen.random_pod());
  int stopped_early = 0, unschedulable = 0, chosen_differs_from_first = 0;
  for (int round = 0; round < 3000; ++round) {
    if (round % 400 == 399) {  // rebuild some nodes (their bound pods are forgotten in both)
      for (int k = 0; k < 10; ++k) {
        const auto i = static_cast<std::size_t>(gen.pick(static_cast<int>(kNodes)));
        nodes[i] = node(i);
        a[i] = indexed.make_node_info(nodes[i]);
        b[i] = walked.make_node_info(nodes[i]);
      }
    }
    if (round % 700 == 350) a = std::vector<NodeInfo>(a.begin(), a.end());  // the same nodes elsewhere
    PodRequirements pod = shapes[static_cast<std::size_t>(gen.pick(static_cast<int>(shapes.size())))];
    pod.requests["cpu"] = Quantity::from_milli(500 * (1 + gen.pick(4)));
    pod.spread_key = "ns/ReplicaSet/rs" + std::to_string(gen.pick(4));
    const std::size_t before = indexed.next_start_index;
    REQUIRE(before == walked.next_start_index);
    const PlacementResult ra = place(pod, a, indexed), rb = place(pod, b, walked);
    CHECK(ra.chosen == rb.chosen);
    CHECK(indexed.next_start_index == walked.next_start_index);
    CHECK(ra.failed_scheduling_message() == rb.failed_scheduling_message());
    if (round % 10 == 0) {
      const PlacementResult oa = place(pod, other_a, indexed), ob = place(pod, other_b, walked);
      CHECK(oa.chosen == ob.chosen);
      CHECK(indexed.next_start_index == walked.next_start_index);
      indexed.next_start_index = walked.next_start_index = before;
    }
    if (rb.chosen) {
      indexed.add_pod(a[*ra.chosen], pod);
      walked.add_pod(b[*rb.chosen], pod);
      if (*rb.chosen != before) ++chosen_differs_from_first;
    } else {
      ++unschedulable;
    }
    if (walked.next_start_index != before) ++stopped_early;  // a full turn leaves it in place
  }
  // The sequence exercises early stops, full walks and unschedulable pods.
  CHECK(stopped_early > 200);
  CHECK(unschedulable > 100);
  CHECK(chosen_differs_from_first > 1000);
}

// place()'s indexed walk reads its own table of the nodes' hot fields (kept current by add_pod and
// remove_pod, re-read when a node changes any other way), computes LeastAllocated and
// BalancedAllocation with two-lane divisions and the normalized TaintToleration and spread scores by
// table, and reads spread counts from a per-key list of nodes. Over thousands of pods with binds
// and unbinds, on nodes whose resources make every score vary (capacities below the 100m default,
// ordinary ones, ones beyond the exact-double range, no memory at all, nodes overcommitted by pods
// bound elsewhere; GPUs and more extended resources than a node holds inline), it must choose
// exactly what the node-by-node walk (the plain formulas, one node at a time, taken when verdicts
// are recorded) chooses from the same state, and advance next_start_index alike. One state and one
// span, so that the table is updated in place between pods as in a scheduler.
TEST_CASE("the indexed walk's node table and score arithmetic choose as the node-by-node walk") {
  RandomShapes gen(23);
  const std::size_t kNodes = 400;
  const std::vector<std::string> extended{"nvidia.com/gpu", "example.com/a", "example.com/b",
                                          "example.com/c",  "example.com/d", "example.com/e"};
  auto node = [&](std::size_t i) {
    std::map<std::string, Quantity> alloc{{"pods", Quantity::from_int(2 + gen.pick(30))}};
    switch (gen.pick(6)) {  // cpu
      case 0:
        alloc["cpu"] = Quantity::from_milli(50 + gen.pick(200));
        break;  // below the 100m default
      case 1:
        alloc["cpu"] = Quantity::from_milli(std::int64_t{1} << 50);
        break;  // (cap - req) * 100 beyond 2^53
      default:
        alloc["cpu"] = Quantity::from_milli(1000 * (4 + gen.pick(60)) + gen.pick(1000));
    }
    switch (gen.pick(6)) {  // memory
      case 0:
        alloc["memory"] = Quantity::from_int(0);
        break;  // no capacity: left out of both scores
      case 1:
        alloc["memory"] = Quantity::from_int(std::int64_t{1} << 55);
        break;
      default:
        alloc["memory"] = Quantity::from_int((std::int64_t{1} << 30) * (8 + gen.pick(500)) + gen.pick(1 << 20));
    }
    for (const auto& r : extended)
      if (gen.pick(3) == 0) alloc[r] = Quantity::from_int(gen.pick(8));
    return gen.random_node(static_cast<int>(i), std::move(alloc));
  };
  std::vector<Node> nodes;
  for (std::size_t i = 0; i < kNodes; ++i) nodes.push_back(node(i));
  PlacementState st, foreign;
  st.percentage_of_nodes_to_score = 10;  // numFeasibleNodesToFind 100: walks stop early
  auto a = infos(st, nodes);
  REQUIRE(st.resource_count() > 8);  // some extended resources are past the inline ones
  std::vector<PodRequirements> shapes{PodRequirements{}};
  for (int i = 0; i < 5; ++i) shapes.push_back(gen.random_pod());
  std::vector<std::pair<std::size_t, PodRequirements>> bound;  // node index, pod
  int unschedulable = 0, scored_choice = 0, removed = 0, outside = 0;
  for (int round = 0; round < 4000; ++round) {
    if (round % 500 == 499) {  // rebuild some nodes; their bound pods are forgotten
      for (int k = 0; k < 10; ++k) {
        const auto i = static_cast<std::size_t>(gen.pick(static_cast<int>(kNodes)));
        nodes[i] = node(i);
        a[i] = st.make_node_info(nodes[i]);
        std::erase_if(bound, [&](const auto& e) { return e.first == i; });
      }
    }
    if (round % 900 == 450) a = std::vector<NodeInfo>(a.begin(), a.end());  // the same nodes elsewhere
    if (round % 13 == 5) {
      // A pod bound by someone else, fitting or not (spec.nodeName set directly), accounted through
      // another state: the table must notice the change.
      const auto i = static_cast<std::size_t>(gen.pick(static_cast<int>(kNodes)));
      PodRequirements other;
      other.requests = {{"cpu", Quantity::from_int(2)}, {"memory", Quantity::from_int(std::int64_t{4} << 30)}};
      foreign.add_pod(a[i], other);
      bound.emplace_back(i, other);
      ++outside;
    }
    if (round % 7 == 3 && !bound.empty()) {  // an unbind
      const auto k = static_cast<std::size_t>(gen.pick(static_cast<int>(bound.size())));
      st.remove_pod(a[bound[k].first], bound[k].second);
      bound.erase(bound.begin() + static_cast<std::ptrdiff_t>(k));
      ++removed;
    }
    PodRequirements pod = shapes[static_cast<std::size_t>(gen.pick(static_cast<int>(shapes.size())))];
    if (gen.pick(4)) pod.requests["cpu"] = Quantity::from_milli(100 * (1 + gen.pick(40)));
    if (gen.pick(4)) pod.requests["memory"] = Quantity::from_int((std::int64_t{1} << 28) * (1 + gen.pick(16)));
    if (gen.pick(4) == 0)
      pod.requests[extended[static_cast<std::size_t>(gen.pick(6))]] = Quantity::from_int(1 + gen.pick(2));
    pod.spread_key = gen.pick(5) == 0 ? "" : "ns/ReplicaSet/rs" + std::to_string(gen.pick(6));
    // The reference first (it reads only the NodeInfos), then the indexed walk from the same index.
    const std::size_t before = st.next_start_index;
    st.record_verdicts = true;
    const PlacementResult rb = place(pod, a, st);
    const std::size_t after = st.next_start_index;
    st.record_verdicts = false;
    st.next_start_index = before;
    const PlacementResult ra = place(pod, a, st);
    REQUIRE(ra.chosen == rb.chosen);
    REQUIRE(st.next_start_index == after);
    if (!rb.chosen) {
      ++unschedulable;
      continue;
    }
    st.add_pod(a[*ra.chosen], pod);
    bound.emplace_back(*rb.chosen, pod);
    // The scores decided: the choice is not the first feasible node in walk order.
    for (const auto& v : rb.verdicts)
      if (v.fits) {
        if (v.node != rb.chosen_node) ++scored_choice;
        break;
      }
  }
  CHECK(unschedulable > 20);
  CHECK(scored_choice > 1500);
  CHECK(removed > 400);
  CHECK(outside > 250);
}

TEST_CASE("a hand-built NodeInfo (serial 0) is filtered without the cache") {
  PlacementState st;
  std::vector<NodeInfo> ni(1);
  const Node hand = make_node("hand", {kGpu});
  ni[0].node = hand;
  ni[0].has_filtering_taints = true;
  ni[0].allocatable = st.make_node_info(hand).allocatable;
  auto r = place(PodRequirements{}, ni, st);
  CHECK_FALSE(r.chosen);
  ni[0].node.taints.clear();  // allowed for serial 0: nothing was cached
  ni[0].has_filtering_taints = false;
  CHECK(place(PodRequirements{}, ni, st).chosen);
}

TEST_CASE("more constraint sets than the cache keeps") {
  PlacementState st;
  std::vector<Node> nodes;
  for (int i = 0; i < 10; ++i) nodes.push_back(make_node("n" + std::to_string(i), {}, {{"slot", std::to_string(i)}}));
  auto ni = infos(st, nodes);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 200; ++i) {  // 200 distinct nodeSelectors, each matching one node
      PodRequirements p;
      p.node_selector["slot"] = std::to_string(i % 10);
      p.tolerations = {exists("k" + std::to_string(i))};
      auto r = place(p, ni, st);
      REQUIRE(r.chosen);
      CHECK(r.chosen_node == "n" + std::to_string(i % 10));
    }
  }
}

TEST_CASE("PodRequirements::list_from_json reads a PodList item by item") {
  const std::string list = R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","x":[1,[2]]},
    "items":[{"metadata":{"name":"a","namespace":"ns"},"spec":{"nodeName":"n1","containers":[{"name":"c",
      "resources":{"requests":{"cpu":"500m"}}}]}},
     {"metadata":{"name":"b","namespace":"ns"},"spec":{"tolerations":[{"key":"gpu_node","operator":"Exists"}]}}],
    "trailing":{"items":[5]}})";
  const auto pods = PodRequirements::list_from_json(list);
  REQUIRE(pods.size() == 2);
  const json::value doc = json::parse(list);
  CHECK(pods[0].name == "ns/a");
  CHECK(pods[0].node_name == "n1");
  CHECK(pods[0].requests == PodRequirements::from_pod_json(doc.at("items").at(0)).requests);
  CHECK(pods[1].tolerations == PodRequirements::from_pod_json(doc.at("items").at(1)).tolerations);
  try {
    PodRequirements::list_from_json(R"({"items":[{"spec":{}},{"spec":{"tolerations":[{"operator":"Sometimes"}]}}]})");
    FAIL("expected a ValidationError");
  } catch (const ValidationError& e) {
    CHECK(e.field() == "items[1].spec.tolerations[0].operator");
  }
}

TEST_CASE("PodRequirements::for_each_in_list hands over each pod as decoded") {
  std::vector<std::string> seen;
  PodRequirements::for_each_in_list(
      R"({"items":[{"metadata":{"name":"a","namespace":"ns"},"spec":{"nodeName":"n1"}},
                   {"metadata":{"name":"b","namespace":"ns"},"spec":{}}]})",
      [&](PodRequirements&& p) { seen.push_back(p.name + "@" + p.node_name); });
  CHECK(seen == std::vector<std::string>{"ns/a@n1", "ns/b@"});
  seen.clear();
  CHECK_THROWS_AS(PodRequirements::for_each_in_list(
                      R"({"items":[{"metadata":{"name":"a"},"spec":{}},{"spec":{"tolerations":[{"operator":"X"}]}}]})",
                      [&](PodRequirements&& p) { seen.push_back(p.name); }),
                  ValidationError);
  CHECK(seen.size() == 1);
}

// The scheduler's node table keeps what placement reads (name, labels, taints, unschedulable,
// allocatable) and drops the rest of the Node, so explain's table of thousands of nodes stays small.
TEST_CASE("make_node_info keeps what placement reads and drops the node's other fields") {
  Node n = make_node("a", {}, {}, {{"nvidia.com/gpu", q("8")}});
  n.labels["zone"] = "z1";
  n.taints.push_back({"gpu_node", "invalid", TaintEffect::NoSchedule});
  n.unschedulable = true;
  n.annotations["note"] = "x";
  n.addresses.push_back({"InternalIP", "10.0.0.1"});
  n.capacity = n.allocatable;
  n.ready_status = "True";
  n.kubelet_version = "v1.32.13";
  n.os_image = "Ubuntu";
  n.created = std::chrono::sys_seconds(std::chrono::seconds(1700000000));
  PlacementState st;
  const NodeInfo info = st.make_node_info(n);
  CHECK(info.node.name == n.name);
  CHECK(info.node.labels == n.labels);
  CHECK(info.node.taints == n.taints);
  CHECK(info.node.unschedulable);
  CHECK(info.node.allocatable == n.allocatable);
  CHECK(info.allocatable.get(st.resource_id("nvidia.com/gpu")) == 8);
  // The labels are a sorted vector read by find(), equal to the map only entry for entry.
  REQUIRE(info.node.labels.find("zone") != info.node.labels.end());
  CHECK(info.node.labels.find("zone")->second == "z1");
  CHECK(info.node.labels.find("zon") == info.node.labels.end());
  CHECK(info.node.labels.find("zone1") == info.node.labels.end());
  auto other = n.labels;
  other["zone"] = "z2";
  CHECK_FALSE(info.node.labels == other);
  other.erase("zone");
  CHECK_FALSE(info.node.labels == other);
  CHECK_FALSE(info.node.allocatable == std::map<std::string, Quantity>{{"nvidia.com/gpu", q("4")}});
  CHECK(info.node.allocatable.find("nvidia.com/gpu") == 8);
  CHECK_FALSE(info.node.allocatable.find("example.com/fpga"));
  // Amounts as placement reads them: cpu in millicores, so 2 and 2000m are the same allocatable.
  const PlacementAmounts cpu(std::map<std::string, Quantity>{{"cpu", q("2")}});
  CHECK(cpu.find("cpu") == 2000);
  CHECK(cpu == std::map<std::string, Quantity>{{"cpu", q("2000m")}});
  CHECK_FALSE(cpu == std::map<std::string, Quantity>{{"cpu", q("2001m")}});
  CHECK_FALSE(cpu == std::map<std::string, Quantity>{{"memory", q("2")}});
}

TEST_CASE("NodeAffinity reads a PlacementNode's labels as a Node's") {
  Node n = make_node("a");
  n.labels = {{"a", "1"}, {"pool", "train"}, {"size", "12"}, {"zone", "z1"}};
  const PlacementNode p(n);
  using O = NodeSelectorOperator;
  const std::vector<NodeSelectorRequirement> rs{
      {"pool", O::In, {"train"}}, {"pool", O::In, {"infer"}}, {"pool", O::NotIn, {"train"}},
      {"zone", O::Exists, {}},    {"missing", O::Exists, {}}, {"missing", O::DoesNotExist, {}},
      {"size", O::Gt, {"11"}},    {"size", O::Lt, {"11"}},    {"a", O::In, {"1", "2"}}};
  int held = 0;
  for (const auto& r : rs) {
    CAPTURE(r.key);
    CHECK(matches(r, p, false) == matches(r, n, false));
    held += matches(r, p, false);
  }
  CHECK(held == 5);
  CHECK(matches(NodeSelectorRequirement{"metadata.name", O::In, {"a"}}, p, true));
  PodRequirements pod;
  pod.node_selector = {{"pool", "train"}};
  CHECK(pod.matches_node_affinity(p));
  pod.node_selector = {{"pool", "infer"}};
  CHECK_FALSE(pod.matches_node_affinity(p));
  pod.node_selector = {};
  pod.required_node_affinity = {NodeSelectorTerm{{{"zone", O::In, {"z1"}}}, {}}};
  CHECK(pod.matches_node_affinity(p) == pod.matches_node_affinity(n));
  CHECK(pod.matches_node_affinity(p));
}

TEST_CASE("spread counts stay exact with many keys on a node (the Bloom filter only skips)") {
  PlacementState st;
  auto ni = infos(st, {make_node("a")});
  std::vector<PodRequirements> pods;
  for (int i = 0; i < 600; ++i) {
    PodRequirements p;
    p.spread_key = "ns/ReplicaSet/job-" + std::to_string(i);
    pods.push_back(p);
  }
  for (int i = 0; i < 600; i += 2) st.add_pod(ni[0], pods[static_cast<std::size_t>(i)]);  // the even keys
  st.add_pod(ni[0], pods[4]);
  int present = 0;
  for (int i = 0; i < 600; ++i) {
    const int n = ni[0].spread_count(st.spread_id(pods[static_cast<std::size_t>(i)].spread_key));
    CHECK(n == (i % 2 ? 0 : (i == 4 ? 2 : 1)));
    present += n > 0;
  }
  CHECK(present == 300);
  for (int i = 0; i < 600; i += 2) st.remove_pod(ni[0], pods[static_cast<std::size_t>(i)]);
  CHECK(ni[0].spread_count(st.spread_id(pods[4].spread_key)) == 1);
  CHECK(ni[0].spread_count(st.spread_id(pods[2].spread_key)) == 0);
  st.remove_pod(ni[0], pods[4]);
  CHECK(ni[0].spread_counts.empty());
  CHECK(ni[0].spread_mask == std::array<std::uint64_t, 4>{});
}
