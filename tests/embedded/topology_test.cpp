#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <string>

#include "embedded/clock.hpp"
#include "gpupool/error.hpp"
#include "gpupool/topology.hpp"

using gpupool::ConfigError;
using gpupool::Quantity;
using gpupool::Topology;
using namespace std::chrono_literals;
namespace json = boost::json;

TEST_CASE("built-in topologies are listed and resolvable") {
  const auto names = Topology::builtin_names();
  CHECK(names == std::vector<std::string>{"iiis", "seed"});
  for (const auto& n : names) CHECK(Topology::resolve(n).name == n);
  // A file on disk reads the same as the built-in copy.
  const auto from_file = Topology::resolve(GPUPOOL_SOURCE_DIR "/data/topologies/seed.yaml");
  CHECK(from_file.nodes.size() == Topology::builtin("seed").nodes.size());
}

TEST_CASE("seed topology matches the walkthrough's kubectl get nodes") {
  const auto topo = Topology::builtin("seed");
  REQUIRE(topo.nodes.size() == 6);
  struct Row {
    const char* name;
    const char* ip;
    bool master;
    std::chrono::seconds age;
  };
  const Row rows[] = {
      {"cn-beijing.192.168.3.225", "192.168.3.225", true, 71h},
      {"cn-beijing.192.168.3.226", "192.168.3.226", true, 71h},
      {"cn-beijing.192.168.3.227", "192.168.3.227", true, 71h},
      {"cn-beijing.192.168.3.228", "192.168.3.228", false, 70h},
      {"cn-beijing.192.168.3.229", "192.168.3.229", false, 70h},
      {"cn-beijing.192.168.3.230", "192.168.3.230", false, 70h},
  };
  for (std::size_t i = 0; i < 6; ++i) {
    const auto& n = topo.nodes[i];
    const auto& r = rows[i];
    CAPTURE(r.name);
    CHECK(n.name == r.name);
    CHECK(n.internal_ip == r.ip);
    CHECK(n.kubelet_version == "v1.12.6-aliyun.1");
    CHECK(n.age == r.age);
    if (r.master) {
      CHECK(n.roles == std::vector<std::string>{"master"});
      REQUIRE(n.taints.size() == 1);
      CHECK(n.taints[0].to_string() == "node-role.kubernetes.io/master:NoSchedule");
      CHECK(n.allocatable.count("nvidia.com/gpu") == 0);
    } else {
      CHECK(n.roles.empty());
      CHECK(n.taints.empty());  // the scenario adds gpu_node / ssd_node itself
      CHECK(n.allocatable.at("nvidia.com/gpu") == Quantity::from_int(2));
    }
    CHECK(n.allocatable.at("pods") == Quantity::from_int(110));
    CHECK(n.allocatable.at("memory") <= n.capacity.at("memory"));
  }
}

TEST_CASE("iiis topology: virtual GPUs and two SSDs per GPU node") {
  const auto topo = Topology::builtin("iiis");
  int gpu_nodes = 0;
  for (const auto& n : topo.nodes) {
    if (!n.roles.empty()) continue;
    ++gpu_nodes;
    CAPTURE(n.name);
    CHECK(n.allocatable.at("virtaitech.com/gpu") == Quantity::from_int(8));
    CHECK(n.allocatable.count("nvidia.com/gpu") == 0);
    CHECK(n.labels.at("iiis.gpupool.io/local-ssd-count") == "2");
    CHECK(n.allocatable.at("cpu") == Quantity::from_int(54));  // defaults.allocatable overrides capacity
    CHECK(n.capacity.at("cpu") == Quantity::from_int(56));
  }
  CHECK(gpu_nodes == 8);
}

TEST_CASE("a topology node becomes the Node object a kubelet registers") {
  const auto topo = Topology::builtin("seed");
  const auto now = gpupool::embedded::Clock::default_start();
  const json::object master = topo.nodes[0].to_node_object(now);
  CHECK(master.at("kind") == "Node");
  CHECK(master.at("apiVersion") == "v1");
  const auto& md = master.at("metadata").as_object();
  CHECK(md.at("name") == "cn-beijing.192.168.3.225");
  CHECK(md.at("creationTimestamp") == "2023-12-29T01:00:00Z");  // 2d23h before 2024-01-01T00:00:00Z
  const auto& labels = md.at("labels").as_object();
  CHECK(labels.at("node-role.kubernetes.io/master") == "");
  CHECK(labels.at("kubernetes.io/hostname") == "cn-beijing.192.168.3.225");
  CHECK(labels.at("failure-domain.beta.kubernetes.io/region") == "cn-beijing");
  const auto& taint = master.at("spec").at("taints").at(0).as_object();
  CHECK(taint.at("key") == "node-role.kubernetes.io/master");
  CHECK(taint.at("effect") == "NoSchedule");
  CHECK(!taint.contains("value"));
  const auto& status = master.at("status").as_object();
  CHECK(status.at("addresses").at(0).at("type") == "InternalIP");
  CHECK(status.at("addresses").at(0).at("address") == "192.168.3.225");
  CHECK(status.at("nodeInfo").at("kubeletVersion") == "v1.12.6-aliyun.1");
  CHECK(status.at("capacity").at("memory") == "8010196Ki");
  bool ready = false;
  for (const auto& c : status.at("conditions").as_array())
    if (c.at("type") == "Ready") ready = c.at("status") == "True";
  CHECK(ready);

  const json::object worker = topo.nodes[5].to_node_object(now);
  CHECK(!worker.at("metadata").at("labels").as_object().contains("node-role.kubernetes.io/master"));
  CHECK(!worker.at("spec").as_object().contains("taints"));
  CHECK(worker.at("status").at("allocatable").at("nvidia.com/gpu") == "2");
}

TEST_CASE("bad topology files are ConfigErrors naming file, line and key") {
  struct Row {
    const char* yaml;
    const char* key;
    int line;
    const char* message_part;
  };
  const Row rows[] = {
      {"nodes: [", "(yaml)", 1, ""},
      {"- a\n- b\n", "(root)", 1, "map"},
      {"name: x\n", "nodes", 1, "required"},
      {"nodes: []\n", "nodes", 1, "non-empty"},
      {"nodes:\n  - name: a\n", "nodes[0].internalIP", 2, "required"},
      {"nodes:\n  - internalIP: 10.0.0.1\n", "nodes[0].name", 2, "required"},
      {"nodes:\n  - name: Bad_Name\n    internalIP: 10.0.0.1\n", "nodes[0].name", 2, "RFC 1123"},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.300\n", "nodes[0].internalIP", 3, "IPv4"},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.1\n    capacity:\n      cpu: 4x\n", "nodes[0].capacity.cpu", 5,
       "invalid quantity \"4x\""},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.1\n    capacity: {cpu: \"-1\"}\n", "nodes[0].capacity.cpu", 4,
       "greater than or equal to 0"},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.1\n    capacity: {cpu: 4}\n    allocatable: {cpu: 5}\n",
       "nodes[0].allocatable.cpu", 2, "exceeds capacity 4"},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.1\n    allocatable: {memory: 1Gi}\n", "nodes[0].allocatable.memory",
       2, "no capacity"},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.1\n    taints: [\"gpu_node=invalid:Sometimes\"]\n",
       "nodes[0].taints[0]", 4, ""},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.1\n    taints:\n      - {key: k, value: v}\n",
       "nodes[0].taints[0].effect", 5, "required"},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.1\n    taints: [\"k=v:NoSchedule\", \"k=w:NoSchedule\"]\n",
       "nodes[0].taints[1]", 4, "duplicate taint k:NoSchedule"},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.1\n    age: forever\n", "nodes[0].age", 4, "duration"},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.1\n    colour: blue\n", "nodes[0].colour", 4, "unknown key"},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.1\n    labels: {\"bad key!\": x}\n", "nodes[0].labels.bad key!", 4,
       "label key"},
      {"nodes:\n  - name: a\n    internalIP: 10.0.0.1\n    unschedulable: maybe\n", "nodes[0].unschedulable", 4,
       "true or false"},
      {"nodes:\n  - {name: a, internalIP: 10.0.0.1}\n  - {name: a, internalIP: 10.0.0.2}\n", "nodes[1].name", 3,
       "duplicate node name"},
      {"nodes:\n  - {name: a, internalIP: 10.0.0.1}\n  - {name: b, internalIP: 10.0.0.1}\n", "nodes[1].internalIP", 3,
       "duplicate address"},
      {"defaults:\n  name: x\nnodes:\n  - {name: a, internalIP: 10.0.0.1}\n", "defaults.name", 2, "unknown key"},
      {"colour: blue\nnodes:\n  - {name: a, internalIP: 10.0.0.1}\n", "colour", 1, "unknown key"},
      {"nodes: [{name: a, internalIP: 10.0.0.1}]\nruntimeClasses: {name: x}\n", "runtimeClasses", 2, "list"},
      {"nodes: [{name: a, internalIP: 10.0.0.1}]\nruntimeClasses:\n  - handler: x\n", "runtimeClasses[0].name", 3,
       "required"},
      {"nodes: [{name: a, internalIP: 10.0.0.1}]\nruntimeClasses:\n  - {name: Bad_Name, handler: x}\n",
       "runtimeClasses[0].name", 3, "RFC 1123 subdomain"},
      {"nodes: [{name: a, internalIP: 10.0.0.1}]\nruntimeClasses:\n  - {name: nvidia.com, handler: x.y}\n",
       "runtimeClasses[0].handler", 3, "dots"},
      {"nodes: [{name: a, internalIP: 10.0.0.1}]\nruntimeClasses:\n  - {name: a.b}\n", "runtimeClasses[0].handler", 3,
       "dots"},  // the handler defaults to the name
      {"nodes: [{name: a, internalIP: 10.0.0.1}]\nruntimeClasses:\n  - {name: x, tolerations: [\"k=v:Sometimes\"]}\n",
       "runtimeClasses[0].tolerations[0]", 3, "Sometimes"},
      {"nodes: [{name: a, internalIP: 10.0.0.1}]\nruntimeClasses:\n  - {name: x, overhead: {cpu: -1}}\n",
       "runtimeClasses[0].overhead.cpu", 3, "greater than or equal to 0"},
      {"nodes: [{name: a, internalIP: 10.0.0.1}]\nruntimeClasses:\n  - {name: x, colour: blue}\n",
       "runtimeClasses[0].colour", 3, "unknown key"},
      {"nodes: [{name: a, internalIP: 10.0.0.1}]\nruntimeClasses:\n  - {name: x}\n  - {name: x}\n",
       "runtimeClasses[1].name", 4, "duplicate RuntimeClass"},
  };
  for (const auto& r : rows) {
    const std::string yaml = r.yaml;
    CAPTURE(yaml);
    try {
      Topology::parse(r.yaml, "my.yaml");
      FAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      CAPTURE(what);
      CHECK(e.file() == "my.yaml");
      CHECK(e.key() == r.key);
      CHECK(e.line() == r.line);
      CHECK(std::string(e.what()).find(r.message_part) != std::string::npos);
    }
  }
}

TEST_CASE("a topology's runtimeClasses: the node.k8s.io/v1 objects the cluster starts with") {
  const auto topo = Topology::parse(R"(
nodes: [{name: a, internalIP: 10.0.0.1}]
runtimeClasses:
  - name: nvidia
    overhead: {cpu: 0.1}
    nodeSelector: {nvidia.com/gpu.present: "true"}
    tolerations: ["nvidia.com/gpu:NoSchedule", "all"]
  - {name: kata, handler: kata-qemu}
)");
  REQUIRE(topo.runtime_classes.size() == 2);
  CHECK(
      json::serialize(topo.runtime_classes[0].to_object()) ==
      R"({"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"nvidia"},"handler":"nvidia",)"
      R"("overhead":{"podFixed":{"cpu":"100m"}},"scheduling":{"nodeSelector":{"nvidia.com/gpu.present":"true"},)"
      R"("tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"},{"operator":"Exists"}]}})");
  CHECK(json::serialize(topo.runtime_classes[1].to_object()) ==
        R"({"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"kata"},"handler":"kata-qemu"})");
  CHECK(Topology::builtin("seed").runtime_classes.empty());
}

TEST_CASE("defaults apply to every node, labels merge, node keys win") {
  const auto topo = Topology::parse(R"(
name: t
defaults:
  kubeletVersion: v1.30.1
  age: 1h30m
  labels: {zone: a, tier: gpu}
  capacity: {cpu: "8", nvidia.com/gpu: "4"}
nodes:
  - {name: n1, internalIP: 10.0.0.1}
  - name: n2
    internalIP: 10.0.0.2
    kubeletVersion: v1.31.0
    labels: {zone: b}
    capacity: {cpu: "16"}
    unschedulable: true
)");
  REQUIRE(topo.nodes.size() == 2);
  CHECK(topo.nodes[0].kubelet_version == "v1.30.1");
  CHECK(topo.nodes[0].age == 90min);
  CHECK(topo.nodes[1].kubelet_version == "v1.31.0");
  CHECK(topo.nodes[1].labels.at("zone") == "b");
  CHECK(topo.nodes[1].labels.at("tier") == "gpu");
  CHECK(topo.nodes[1].capacity.at("cpu") == Quantity::from_int(16));
  CHECK(topo.nodes[1].allocatable.at("nvidia.com/gpu") == Quantity::from_int(4));
  CHECK(topo.nodes[1].to_node_object(gpupool::embedded::Clock::default_start()).at("spec").at("unschedulable") == true);
}

TEST_CASE("missing files and unknown built-ins say what to do") {
  CHECK_THROWS_WITH_AS(Topology::load("/nonexistent/t.yaml"), doctest::Contains("cannot read"), ConfigError);
  CHECK_THROWS_WITH_AS(Topology::builtin("nope"), doctest::Contains("iiis, seed"), ConfigError);
}
