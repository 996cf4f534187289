// The whole-cluster views' output (`gpupool nodes`, `nodes -o wide`, `top node`, the HTML table and
// `explain`) on a generated cluster, compared byte for byte with tests/cluster/data/node_views.txt.
// The file was recorded before the views kept compact rows (NodeSummary) instead of whole Nodes, so
// this test shows the rows print exactly what the Nodes printed. The cluster covers every column's
// cases: roles from both label forms, Ready True/False/Unknown/absent, cordoned, no or several
// addresses, taints of each effect, nodes without GPUs or kubelet version, names created out of
// order, different ages, and GPUs allocated by bound pods in two namespaces.
// GPUPOOL_RECORD_NODE_VIEWS=1 rewrites the file (only to record a deliberate change of output).
#include <doctest/doctest.h>

#include "gpupool/client.hpp"
#include "gpupool/cluster.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/kubeconfig.hpp"
#include "gpupool/submit_options.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace std::chrono_literals;
using namespace gpupool;
namespace json = boost::json;

namespace {

const ResourceRef kNodeRef{"", "v1", "nodes", "Node", false};
const ResourceRef kPodRef{"", "v1", "pods", "Pod"};

json::object generated_node(int i) {
  json::object labels{{"kubernetes.io/hostname", fmt::format("nv-{:02}", i)},
                      {"topology.kubernetes.io/zone", fmt::format("zone-{}", i % 3)}};
  if (i % 5 == 0) labels["node-role.kubernetes.io/control-plane"] = "";
  if (i % 7 == 0) labels["kubernetes.io/role"] = "worker";
  if (i % 11 == 0) labels["node-role.kubernetes.io/gpu"] = "";
  if (i % 3 != 2) labels["accelerator"] = i % 2 ? "nvidia-a100" : "nvidia-v100";
  json::array taints;
  if (i % 3 == 0) taints.push_back(json::object{{"key", "gpu_node"}, {"value", "invalid"}, {"effect", "NoSchedule"}});
  if (i % 4 == 0) taints.push_back(json::object{{"key", "maintenance"}, {"effect", "PreferNoSchedule"}});
  if (i % 13 == 0) taints.push_back(json::object{{"key", "broken"}, {"value", "disk"}, {"effect", "NoExecute"}});
  json::object spec;
  if (!taints.empty()) spec["taints"] = std::move(taints);
  if (i % 6 == 0) spec["unschedulable"] = true;
  json::object alloc{{"cpu", i % 2 ? "63500m" : "32"}, {"memory", "256Gi"}, {"pods", "110"}};
  if (i % 3 == 0) alloc["nvidia.com/gpu"] = "8";
  if (i % 3 == 1) alloc["nvidia.com/gpu"] = "4";
  json::object status{{"capacity", alloc}, {"allocatable", alloc}};
  if (i % 10 != 0)
    status["conditions"] = json::array{json::object{{"type", "MemoryPressure"}, {"status", "False"}},
                                       json::object{{"type", "Ready"},
                                                    {"status", i % 8 == 0   ? "False"
                                                               : i % 9 == 0 ? "Unknown"
                                                                            : "True"}}};
  json::array addresses;
  if (i % 5 == 1)
    addresses.push_back(json::object{{"type", "ExternalIP"}, {"address", fmt::format("203.0.113.{}", i)}});
  if (i % 12 != 0) addresses.push_back(json::object{{"type", "InternalIP"}, {"address", fmt::format("10.1.0.{}", i)}});
  addresses.push_back(json::object{{"type", "Hostname"}, {"address", fmt::format("nv-{:02}", i)}});
  status["addresses"] = std::move(addresses);
  if (i % 14 != 0) status["nodeInfo"] = json::object{{"kubeletVersion", i % 4 ? "v1.32.13" : "v1.31.2"}};
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Node"},
                      {"metadata", json::object{{"name", fmt::format("nv-{:02}", i)}, {"labels", std::move(labels)}}},
                      {"spec", std::move(spec)},
                      {"status", std::move(status)}};
}

std::string views(EmbeddedCluster& cluster) {
  KubeConfigOptions ko;
  ko.path = cluster.server().admin_kubeconfig();
  Client admin(load_kubeconfig(ko));
  constexpr int kNodes = 40;
  for (int k = 0; k < kNodes; ++k) {
    const int i = (k * 17) % kNodes;  // created out of name order, minutes apart
    admin.create(kNodeRef, "", generated_node(i));
    cluster.server().advance(std::chrono::minutes(7 * (k % 5) + 1));
  }
  for (int k = 0; k < 12; ++k) {
    const int node = (k * 5) % kNodes;
    json::object pod{{"metadata", {{"name", fmt::format("p{}", k)}}},
                     {"spec",
                      {{"nodeName", fmt::format("nv-{:02}", node)},
                       {"tolerations", json::array{json::object{{"operator", "Exists"}}}},
                       {"containers", json::array{{{"name", "c"},
                                                   {"image", "busybox"},
                                                   {"resources",
                                                    {{"limits", {{"nvidia.com/gpu", std::to_string(1 + k % 3)}}},
                                                     {"requests", {{"cpu", "2"}, {"memory", "8Gi"}}}}}}}}}}};
    admin.create(kPodRef, k % 2 ? "alice" : "default", pod);
  }
  cluster.server().advance(26h);

  std::string out;
  NodeList nodes = cluster.nodes();
  out += "== nodes\n" + nodes.to_text() + "== nodes -o wide\n" + nodes.to_text(true) + "== top node\n" +
         nodes.to_top_text() + "== html\n" + nodes.to_html();
  SubmitOptions o;
  o.kind = "job";
  o.name = "fit";
  o.gpus = 4;
  o.image = "busybox";
  o.cpu = "40";
  o.tolerations = {"gpu_node", "node.kubernetes.io/not-ready"};
  o.command = "true";
  out += "== explain\n" + cluster.explain(to_workload(o)).to_text();
  o.name = "fit-a100";
  o.cpu = "";
  o.tolerations = {"all"};
  o.selectors = {"accelerator=nvidia-a100"};
  out += "== explain a100\n" + cluster.explain(to_workload(o)).to_text();
  return out;
}

}  // namespace

TEST_CASE("node views: nodes, -o wide, top node, HTML and explain print the recorded output") {
  EmbeddedCluster cluster{{.topology = "none", .server = {.users = {"alice"}}}};
  const std::string got = views(cluster);
  const std::string path = std::string(GPUPOOL_SOURCE_DIR) + "/tests/cluster/data/node_views.txt";
  if (const char* rec = std::getenv("GPUPOOL_RECORD_NODE_VIEWS"); rec && std::string(rec) == "1") {
    std::ofstream(path, std::ios::binary) << got;
    MESSAGE("recorded " << path);
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing " << path);
  std::stringstream want;
  want << in.rdbuf();
  CHECK(got == want.str());
}
