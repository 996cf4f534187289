// Node from/to JSON and kubectl's node columns (printNode, findNodeRoles, HumanDuration).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "gpupool/error.hpp"
#include "gpupool/node.hpp"

using namespace gpupool;
namespace json = boost::json;
using namespace std::chrono;

namespace {
json::value fixture(const std::string& name) {
  std::ifstream in(std::string(GPUPOOL_SOURCE_DIR) + "/tests/model/data/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}
json::value minimal(const std::string& extra_labels = "{}") {
  return json::parse(R"({"metadata":{"name":"n1","labels":)" + extra_labels + "}}");
}
}  // namespace

TEST_CASE("human_duration follows apimachinery's HumanDuration") {
  struct Row {
    nanoseconds d;
    std::string expect;
  };
  const std::vector<Row> rows = {
      {seconds(-2), "<invalid>"},
      {milliseconds(-1999), "0s"},  // int(d.Seconds()) truncates to -1
      {seconds(-1), "0s"},
      {seconds(0), "0s"},
      {milliseconds(1500), "1s"},
      {seconds(29), "29s"},
      {seconds(119), "119s"},
      {seconds(120), "2m"},
      {seconds(121), "2m1s"},
      {minutes(5) + seconds(10), "5m10s"},
      {seconds(599), "9m59s"},
      {minutes(10), "10m"},
      {minutes(10) + seconds(59), "10m"},
      {minutes(179), "179m"},
      {minutes(180), "3h"},
      {hours(3) + minutes(5), "3h5m"},
      {hours(7) + minutes(59), "7h59m"},
      {hours(8) + minutes(30), "8h"},
      {hours(47), "47h"},
      {hours(48), "2d"},
      {hours(71), "2d23h"},
      {hours(24 * 7 + 23), "7d23h"},
      {hours(24 * 8), "8d"},
      {hours(24 * 729), "729d"},
      {hours(24 * 730), "2y"},
      {hours(24 * 731), "2y1d"},
      {hours(24 * (365 * 7 + 364)), "7y364d"},
      {hours(24 * 365 * 8), "8y"},
      {hours(24 * 365 * 20 + 100), "20y"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.expect);
    CHECK(human_duration(r.d) == r.expect);
  }
}

TEST_CASE("RFC 3339 timestamps") {
  const auto t = parse_rfc3339("2024-03-01T08:15:30Z");
  CHECK(format_rfc3339(t) == "2024-03-01T08:15:30Z");
  CHECK(parse_rfc3339("2024-03-01T10:15:30+02:00") == t);
  CHECK(parse_rfc3339("2024-03-01T08:15:30.123456Z") == t);
  CHECK(format_rfc3339(Node::time_point(seconds(0))) == "1970-01-01T00:00:00Z");
  for (const char* bad : {"", "2024-03-01", "2024-13-01T00:00:00Z", "2024-02-30T00:00:00Z", "2024-03-01T08:15:30",
                          "2024-03-01T25:00:00Z", "2024-03-01T08:15:30Zjunk", "yesterday"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_rfc3339(bad, "metadata.creationTimestamp"), ValidationError);
  }
}

TEST_CASE("Node::from_json reads a real Node object") {
  Node n = Node::from_json(fixture("node_gpu_worker.json"));
  CHECK(n.name == "cn-beijing.192.168.3.229");
  CHECK(n.internal_ip() == "192.168.3.229");
  CHECK(n.kubelet_version == "v1.12.6-aliyun.1");
  CHECK(n.os_image == "CentOS Linux 7 (Core)");
  CHECK(n.kernel_version == "3.10.0-693.2.2.el7.x86_64");
  CHECK(n.container_runtime_version == "docker://17.6.2");
  CHECK(n.external_ip().empty());
  CHECK(n.ready_status == "True");
  CHECK(n.status_column() == "Ready");
  CHECK(n.roles_column() == "<none>");
  CHECK(n.labels.at("nvidia.com/gpu.product") == "Tesla-V100-SXM2-16GB");
  CHECK(n.annotations.size() == 2);
  REQUIRE(n.taints.size() == 2);
  CHECK(n.taints[0] == Taint{"gpu_node", "invalid", TaintEffect::NoSchedule});
  CHECK(n.taints[1] == Taint{"maintenance", "", TaintEffect::PreferNoSchedule});
  CHECK(n.capacity.at("cpu").milli_value() == 32000);
  CHECK(n.allocatable.at("cpu").milli_value() == 31800);
  CHECK(n.allocatable.at("memory").value() == 257663460LL * 1024);
  CHECK(n.allocatable.at("nvidia.com/gpu").value() == 8);
  CHECK(n.allocatable.at("pods").value() == 110);
  CHECK(n.capacity.at("hugepages-1Gi").is_zero());
  CHECK(n.capacity.size() == 6);
  REQUIRE(n.created.has_value());
  CHECK(format_rfc3339(*n.created) == "2024-03-01T08:15:30Z");
  const auto now = system_clock::time_point(*n.created) + hours(71) + minutes(5);
  CHECK(n.age(now) == "2d23h");
}

TEST_CASE("Node::to_json round-trips") {
  Node n = Node::from_json(fixture("node_gpu_worker.json"));
  json::object o = n.to_json();
  CHECK(o.at("kind").as_string() == "Node");
  CHECK(o.at("apiVersion").as_string() == "v1");
  CHECK(o.at("status").at("allocatable").at("memory").as_string() == "257663460Ki");
  CHECK(o.at("status").at("capacity").at("cpu").as_string() == "32");
  CHECK(o.at("spec").at("taints").at(0).at("key").as_string() == "gpu_node");
  CHECK(Node::from_json(o) == n);

  Node built;
  built.name = "cn-beijing.192.168.3.225";
  built.labels["node-role.kubernetes.io/master"] = "";
  built.taints = {{"node-role.kubernetes.io/master", "", TaintEffect::NoSchedule}};
  built.unschedulable = true;
  built.ready_status = "False";
  built.addresses = {{"InternalIP", "192.168.3.225"}, {"ExternalIP", "47.95.1.2"}};
  built.os_image = "Ubuntu 22.04.4 LTS";
  built.capacity["virtaitech.com/gpu"] = Quantity::parse("4");
  built.allocatable["virtaitech.com/gpu"] = Quantity::parse("4");
  built.created = parse_rfc3339("2024-01-01T00:00:00Z");
  json::object bo = built.to_json();
  CHECK(bo.at("spec").at("unschedulable").as_bool());
  CHECK(Node::from_json(bo) == built);
  CHECK(Node::from_json(bo).status_column() == "NotReady,SchedulingDisabled");
  CHECK(Node::from_json(bo).external_ip() == "47.95.1.2");
  CHECK(Node::from_json(bo).internal_ip() == "192.168.3.225");
}

TEST_CASE("kubectl columns: roles and status") {
  struct Row {
    std::string labels;
    std::string roles;
  };
  const std::vector<Row> rows = {
      {R"({})", "<none>"},
      {R"({"node-role.kubernetes.io/master":""})", "master"},
      {R"({"node-role.kubernetes.io/master":"","node-role.kubernetes.io/control-plane":""})", "control-plane,master"},
      {R"({"kubernetes.io/role":"worker"})", "worker"},
      {R"({"kubernetes.io/role":""})", "<none>"},
      {R"({"kubernetes.io/role":"master","node-role.kubernetes.io/master":""})", "master"},
      {R"({"node-role.kubernetes.io/":""})", "<none>"},
      {R"({"node-role.kubernetes.io/gpu":"false"})", "gpu"},  // the value does not matter
  };
  for (const auto& r : rows) {
    CAPTURE(r.labels);
    CHECK(Node::from_json(minimal(r.labels)).roles_column() == r.roles);
  }
  Node n = Node::from_json(minimal());
  CHECK(n.status_column() == "Unknown");
  CHECK(n.age(system_clock::now()) == "<unknown>");
  CHECK(n.internal_ip().empty());
  n.ready_status = "Unknown";
  CHECK(n.status_column() == "NotReady");
  n.ready_status = "True";
  n.unschedulable = true;
  CHECK(n.status_column() == "Ready,SchedulingDisabled");
}

TEST_CASE("Node::from_json names the bad field") {
  struct Row {
    std::string json;
    std::string field;
  };
  const std::vector<Row> rows = {
      {R"([])", "node"},
      {R"({})", "metadata.name"},
      {R"({"metadata":{}})", "metadata.name"},
      {R"({"metadata":{"name":5}})", "metadata.name"},
      {R"({"metadata":{"name":"n","labels":{"a":1}}})", "metadata.labels[a]"},
      {R"({"metadata":{"name":"n","creationTimestamp":"soon"}})", "metadata.creationTimestamp"},
      {R"({"metadata":{"name":"n"},"spec":{"unschedulable":"yes"}})", "spec.unschedulable"},
      {R"({"metadata":{"name":"n"},"spec":{"taints":[{"key":"a","effect":"Never"}]}})", "spec.taints[0].effect"},
      {R"({"metadata":{"name":"n"},"spec":{"taints":{}}})", "spec.taints"},
      {R"({"metadata":{"name":"n"},"status":{"capacity":{"cpu":"lots"}}})", "status.capacity[cpu]"},
      {R"({"metadata":{"name":"n"},"status":{"allocatable":{"memory":1.5}}})", "status.allocatable[memory]"},
      {R"({"metadata":{"name":"n"},"status":{"addresses":[{"type":"InternalIP","address":7}]}})",
       "status.addresses[0].address"},
      {R"({"metadata":{"name":"n"},"status":{"nodeInfo":{"kubeletVersion":1}}})", "status.nodeInfo.kubeletVersion"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.json);
    try {
      Node::from_json(json::parse(r.json));
      FAIL("expected a ValidationError");
    } catch (const ValidationError& e) {
      CHECK(e.field() == r.field);
    }
  }
  // surrounding whitespace is trimmed and a bare integer accepted, as Quantity's UnmarshalJSON does
  CHECK(Node::from_json(json::parse(R"({"metadata":{"name":"n"},"status":{"capacity":{"cpu":" 4 "}}})"))
            .capacity.at("cpu")
            .milli_value() == 4000);
  CHECK_THROWS_AS(Node::from_json(json::parse(R"({"metadata":{"name":"n"},"status":{"capacity":{"cpu":"  "}}})")),
                  ValidationError);
  CHECK(Node::from_json(json::parse(R"({"metadata":{"name":"n"},"status":{"capacity":{"pods":110}}})"))
            .capacity.at("pods")
            .value() == 110);
}

TEST_CASE("Node::list_from_json decodes a NodeList item by item") {
  const json::value real = fixture("node_gpu_worker.json");
  // A list with other top-level fields around the items (nested arrays and objects are skipped) and
  // string escapes inside an item.
  const std::string list =
      R"({"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"7","x":[[1],{"items":[2]}]},"items":[)" +
      json::serialize(real) +
      R"(,{"metadata":{"name":"n\u0032","labels":{"a\"b":"c\\d"}},"spec":{"taints":[]}}],"z":null})";
  const std::vector<Node> nodes = Node::list_from_json(list);
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0] == Node::from_json(real));
  CHECK(nodes[1].name == "n2");
  CHECK(nodes[1].labels.at("a\"b") == "c\\d");
  CHECK(Node::list_from_json(R"({"kind":"NodeList"})").empty());
  CHECK(Node::list_from_json(R"({"items":null})").empty());
  CHECK(Node::list_from_json(R"({"items":[]})").empty());

  struct Row {
    std::string json, field, rule_part;
  };
  const std::vector<Row> rows = {
      {R"({"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b","labels":{"k":1}}}]})",
       "items[1].metadata.labels[k]", "string"},
      {R"({"items":[{"metadata":{"name":"a"}},5]})", "items[1].node", "object"},
      {R"({"items":{}})", "items", "array"},
      {R"({"items":"x"})", "items", "array"},
      {R"([{"metadata":{"name":"a"}}])", "items", "list object"},
      {R"("NodeList")", "items", "list object"},
      {R"({"items":[{"metadata":{"name":"a"}})", "items", "valid JSON"},
      {R"({"items":[{"metadata":{"name":"a"}}]} trailing)", "items", "valid JSON"},
      {R"({"items":[{"metadata":{"name":"a"},}]})", "items", "valid JSON"},
      {"", "items", "valid JSON"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.json);
    try {
      Node::list_from_json(r.json);
      FAIL("expected a ValidationError");
    } catch (const ValidationError& e) {
      CHECK(e.field() == r.field);
      CHECK(e.rule().find(r.rule_part) != std::string::npos);
    }
  }
}

TEST_CASE("Node::for_each_in_list hands over each node as decoded; those before a bad item came first") {
  const std::string list = R"({"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}},)"
                           R"({"metadata":{"name":"c"},"spec":{"taints":[{"key":"k","effect":"Never"}]}}]})";
  std::vector<std::string> seen;
  try {
    Node::for_each_in_list(list, [&](Node&& n) { seen.push_back(n.name); });
    FAIL("expected a ValidationError");
  } catch (const ValidationError& e) {
    CHECK(e.field() == "items[2].spec.taints[0].effect");
  }
  CHECK(seen == std::vector<std::string>{"a", "b"});
}

// NodeSummary: what `gpupool nodes` / `top node` keep of a node: the same columns as the Node's.
TEST_CASE("NodeSummary keeps a node's columns and allocatable figures") {
  const Node n = Node::from_json(fixture("node_gpu_worker.json"));
  const NodeSummary s = NodeSummary::of(n, "nvidia.com/gpu");
  CHECK(s.name == "cn-beijing.192.168.3.229");
  CHECK(s.status == n.status_column());
  CHECK(s.roles == n.roles_column());
  CHECK(s.kubelet_version == n.kubelet_version);
  CHECK(s.internal_ip == "192.168.3.229");
  CHECK(s.created == n.created);
  CHECK(s.taints == n.taints);
  CHECK(s.taints_column() == "gpu_node=invalid:NoSchedule,maintenance:PreferNoSchedule");
  CHECK(s.milli_cpu == 31800);
  CHECK(s.memory == 257663460LL * 1024);
  CHECK(s.gpus == 8);
  const auto now = system_clock::time_point(*n.created) + hours(50);
  CHECK(s.age(now) == n.age(now));
  CHECK(s.age(now) == "2d2h");
  CHECK(NodeSummary::of(n, "virtaitech.com/gpu").gpus == 0);

  Node bare = Node::from_json(minimal(R"({"node-role.kubernetes.io/master":""})"));
  bare.unschedulable = true;
  const NodeSummary b = NodeSummary::of(bare, "nvidia.com/gpu");
  CHECK(b.status == "Unknown,SchedulingDisabled");
  CHECK(b.roles == "master");
  CHECK(b.internal_ip.empty());
  CHECK(b.taints_column() == "<none>");
  CHECK(b.age(system_clock::now()) == "<unknown>");
  CHECK((b.milli_cpu == 0 && b.memory == 0 && b.gpus == 0));
}
