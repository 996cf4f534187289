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
#include "store_fill.hpp"

namespace json = boost::json;
using gpupool::detail::kActivePodsSelector;

namespace {

int cmd_serve(const std::string& dir, int pods) {
  gpupool::EmbeddedOptions options;
  options.topology = "none";
  gpupool::EmbeddedServer server(options);
  auto& store = gpupool::embedded::store_of(server);
  bench::fill_store(store, pods);
  // One pod in five finished (Succeeded, as its kubelet reports): the views' field selector keeps
  // them off the wire; a client that lists every pod receives them and drops them itself.
  const auto& pod_type = store.type("", "pods");
  for (int i = 0; i < pods; i += 5) {
    const json::object p = bench::make_pod(i);
    const auto& pmd = p.at("metadata").as_object();
    store.mutate(
        pod_type, pmd.at("namespace").as_string(), pmd.at("name").as_string(),
        [](json::object& o) {
          json::value& status = o["status"];
          if (!status.is_object()) status = json::object{};
          status.as_object()["phase"] = "Succeeded";
        },
        {}, "status");
  }
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

struct Lists {
  double nodes_pods = 0, events = 0, workloads = 0;
  std::size_t largest_page = 0, pods = 0, nodes = 0;
};

// Each page: GET + parse (Client::list), then the next; the serialized size of the largest page.
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
  nodes.resource_version = "0";
  nodes.limit = gpupool::detail::kNodePage;
  l.nodes = all_pages(client, gpupool::detail::kNodes, "", nodes, l.largest_page);
  gpupool::ListOptions pods;
  pods.field_selector = std::string(kActivePodsSelector);
  pods.limit = gpupool::detail::kPodPage;
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
    std::fprintf(stderr, "usage: bench_views serve <dir> [pods] | lists <kubeconfig>\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_views: %s\n", e.what());
    return 1;
  }
}
