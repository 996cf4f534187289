// bench_views — the whole-cluster views (`gpupool nodes`, `top node`, `explain`, `list`) against an
// embedded API server holding cluster_gen.hpp's cluster (5,000 nodes, 150,000 pods). Run by
// bench/run.sh (section views); bench_py.py `views` times the commands and the kubectl / official
// Python client baselines against the same server.
//
//   bench_views serve <dir> [pods]   an embedded server (no topology) loaded through its store with
//                                    the generated cluster (its scheduler binds the pods as they are
//                                    created; one in five is then marked Succeeded), plus one pending bare Pod
//                                    "bench-explain" in user-0 asking 16 GPUs, which no node has (what `gpupool
//                                    explain` explains); writes <dir>/kubeconfig.path, serves until stdin closes
//   bench_views lists <kubeconfig>   the floor: the lists the views need, each page downloaded and
//                                    then decoded (Client::list: GET, then Boost.JSON parse), no
//                                    overlap: the nodes (resourceVersion=0, pages of 500), the bound
//                                    unfinished pods (the views' field selector, pages of 1,000), the
//                                    events of user-0 (explain), the six workload kinds of user-0 by
//                                    gpupool's labels (list). Median of 3, wall seconds; also the
//                                    largest page in bytes (the memory target's unit).
//   bench_views kept                 what a view keeps per node of cluster_gen's 5,000 nodes, in heap
//                                    bytes (mallinfo2): the decoded Nodes (what the views kept before),
//                                    the NodeSummary rows of `nodes` / `top node`, the scheduler's
//                                    NodeInfos of `explain`; against the NodeList's size as JSON.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "cluster/resources.hpp"
#include "embedded/server_store.hpp"
#include "gpupool/client.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/kubeconfig.hpp"
#include "gpupool/render.hpp"
#include "gpupool/scheduling.hpp"
#include "store_fill.hpp"

namespace json = boost::json;
using gpupool::detail::kActivePodsSelector;

namespace {

int cmd_serve(const std::string& dir, int pods) {
  gpupool::EmbeddedOptions options;
  options.topology = "none";
  gpupool::EmbeddedServer server(options);
  auto& store = gpupool::embedded::store_of(server);
  // One pod in five finished (Succeeded, as its kubelet reports): the views' field selector keeps
  // them off the wire; a client that lists every pod receives them and drops them itself.
  bench::fill_store(store, pods, {.owners = bench::Owners::Adopt, .finished_every = 5});
  json::object pending = bench::make_pod(0);
  auto& md = pending["metadata"].as_object();
  md["name"] = "bench-explain";
  md["namespace"] = "user-0";
  md.erase("ownerReferences");
  md["labels"] = json::object{{std::string(gpupool::kManagedByLabel), "gpupool"}};
  auto& c = pending["spec"].as_object()["containers"].as_array()[0].as_object();
  c["resources"] = json::object{{"limits", json::object{{"nvidia.com/gpu", "16"}}}};
  store.create(store.type("", "pods"), "user-0", std::move(pending));
  {
    std::ofstream out(dir + "/kubeconfig.path");
    out << server.admin_kubeconfig() << "\n";
  }
  std::string line;
  while (std::getline(std::cin, line)) {}
  return 0;
}

// Heap bytes in use (glibc's mallinfo2: small and mmapped blocks).
std::size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

int cmd_kept() {
  std::mt19937 rng(42);
  json::array items;
  for (int i = 0; i < bench::kNodes; ++i) items.push_back(bench::make_node(i, rng));
  const std::string text = json::serialize(json::object{{"kind", "NodeList"}, {"items", std::move(items)}});
  auto kept = [&](auto&& keep) {
    const std::size_t before = heap_in_use();
    auto held = keep();
    const std::size_t bytes = heap_in_use() - before;
    return std::make_pair(bytes, held.size());
  };
  const auto [nodes, n] = kept([&] { return gpupool::Node::list_from_json(text); });
  const auto [rows, r] = kept([&] {
    std::vector<gpupool::NodeSummary> out;
    gpupool::Node::for_each_in_list(
        text, [&](gpupool::Node&& node) { out.push_back(gpupool::NodeSummary::of(node, "nvidia.com/gpu")); });
    return out;
  });
  gpupool::PlacementState state;
  const auto [infos, k] = kept([&] {
    std::vector<gpupool::NodeInfo> out;
    gpupool::Node::for_each_in_list(
        text, [&](gpupool::Node&& node) { out.push_back(state.make_node_info(std::move(node))); });
    return out;
  });
  auto line = [&](const char* what, std::size_t bytes, std::size_t count) {
    std::printf("  %-38s %7.2f MiB, %5zu bytes per node, %.2fx the NodeList JSON\n", what, bytes / 1048576.0,
                bytes / count, static_cast<double>(bytes) / static_cast<double>(text.size()));
  };
  std::printf("kept per node of %zu generated nodes (NodeList JSON %.2f MiB):\n", n, text.size() / 1048576.0);
  line("decoded Nodes (the views before)", nodes, n);
  line("NodeSummary rows (nodes, top node)", rows, r);
  line("NodeInfos (explain's node table)", infos, k);
  std::printf("RESULT views_kept %zu %zu %zu %zu %zu\n", n, text.size(), nodes, rows, infos);
  return 0;
}

struct Lists {
  double nodes_pods = 0, events = 0, workloads = 0;
  std::size_t largest_page = 0, pods = 0, nodes = 0;
};

// Each page: GET + parse (Client::list), then the next; the serialized size of the largest page. The
// views' lists are one page each (resourceVersion=0, no limit; cluster/resources.cpp), so is this.
std::size_t all_pages(const gpupool::Client& client, const gpupool::ResourceRef& ref, const std::string& ns,
                      gpupool::ListOptions lo, std::size_t& largest) {
  std::size_t items = 0;
  for (;;) {
    gpupool::ListPage page = client.list(ref, ns, lo);
    items += page.items.size();
    largest = std::max(largest, json::serialize(page.items).size());
    if (page.continue_token.empty()) return items;
    lo.continue_token = page.continue_token;
  }
}

Lists time_lists(const gpupool::Client& client) {
  using Steady = std::chrono::steady_clock;
  Lists l;
  auto t0 = Steady::now();
  gpupool::ListOptions nodes;
  nodes.resource_version = "0";  // as the views ask: one page from kube-apiserver's watch cache
  l.nodes = all_pages(client, gpupool::detail::kNodes, "", nodes, l.largest_page);
  gpupool::ListOptions pods;
  pods.field_selector = std::string(kActivePodsSelector);
  pods.resource_version = "0";
  pods.all_namespaces = true;
  l.pods = all_pages(client, gpupool::detail::kPods, "", pods, l.largest_page);
  l.nodes_pods = std::chrono::duration<double>(Steady::now() - t0).count();
  t0 = Steady::now();
  all_pages(client, gpupool::detail::kEvents, "user-0", {}, l.largest_page);
  l.events = std::chrono::duration<double>(Steady::now() - t0).count();
  t0 = Steady::now();
  gpupool::ListOptions managed;
  managed.label_selector =
      fmt::format("{}=gpupool,{}!=tensorboard", gpupool::kManagedByLabel, gpupool::kComponentLabel);
  for (const auto* ref : {&gpupool::detail::kMpiJobsV1, &gpupool::detail::kTfJobs, &gpupool::detail::kPyTorchJobs,
                          &gpupool::detail::kJobs, &gpupool::detail::kDeployments, &gpupool::detail::kPods})
    all_pages(client, *ref, "user-0", managed, l.largest_page);
  l.workloads = std::chrono::duration<double>(Steady::now() - t0).count();
  return l;
}

int cmd_lists(const std::string& kubeconfig) {
  gpupool::KubeConfigOptions kopts;
  kopts.path = kubeconfig;
  gpupool::Client client(gpupool::load_kubeconfig(kopts));
  std::vector<Lists> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(time_lists(client));
  auto median = [&](double Lists::*f) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.*f);
    std::sort(v.begin(), v.end());
    return v[1];
  };
  const Lists& r = runs.front();
  std::printf(
      "lists the views need, downloaded then decoded page by page (Client::list), median of 3:\n"
      "  nodes (%zu) + bound unfinished pods (%zu): %.3f s; events of user-0: %.3f s; gpupool's workloads of "
      "user-0: %.3f s; largest page %zu bytes\n",
      r.nodes, r.pods, median(&Lists::nodes_pods), median(&Lists::events), median(&Lists::workloads), r.largest_page);
  std::printf("RESULT views_lists %.4f %.4f %.4f %zu\n", median(&Lists::nodes_pods), median(&Lists::events),
              median(&Lists::workloads), r.largest_page);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "serve" && (argc == 3 || argc == 4))
      return cmd_serve(argv[2], argc == 4 ? std::stoi(argv[3]) : bench::kPods);
    if (cmd == "lists" && argc == 3) return cmd_lists(argv[2]);
    if (cmd == "kept" && argc == 2) return cmd_kept();
    std::fprintf(stderr, "usage: bench_views serve <dir> [pods] | lists <kubeconfig> | kept\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_views: %s\n", e.what());
    return 1;
  }
}
