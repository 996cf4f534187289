// bench_load — loads cluster_gen.hpp's cluster into a real API server through its API, for the
// whole-cluster views measured against the real control plane (issue 18 item 1: "the real control
// plane of ../shared/oracle at a size it can hold"). bench_views serve fills an embedded server
// through its store; a real server can only be filled through its API, which is what this does.
//
//   bench_load <kubeconfig> <pods> [threads]   make_pod's 200 namespaces (user-0 ... user-199),
//       the 5,000 nodes, then <pods> pods created already bound (spec.nodeName set, as the binding
//       would leave them: the oracle has no kubelets, so they stay Pending), plus the pending bare
//       Pod "bench-explain" in user-0 asking 16 GPUs. Existing objects are left as they are
//       (AlreadyExists is not an error), so a run can be resumed.
//
// What differs from bench_views serve, because a real control plane would otherwise undo it: no
// ownerReferences (the garbage collector deletes pods whose owner does not exist), no
// resourceVersion/uid/creationTimestamp (the server sets them), the default NoExecute tolerations
// without tolerationSeconds (the nodes have no kubelet, so the node lifecycle controller taints
// them unreachable and would evict the pods after 300 s), and no pods marked Succeeded (a status
// write per pod; all pods are bound and unfinished, so the views' field selector drops none of
// them: the comparison is the least favourable to gpupool). Placement is round robin, GPU pods on
// GPU nodes: the views sum what is bound where, they do not judge it.
#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "cluster_gen.hpp"
#include "gpupool/client.hpp"
#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"

namespace json = boost::json;

namespace {

const gpupool::ResourceRef kNamespacesRef{"", "v1", "namespaces", "Namespace", false};
const gpupool::ResourceRef kNodesRef{"", "v1", "nodes", "Node", false};
const gpupool::ResourceRef kPodsRef{"", "v1", "pods", "Pod", true};

void strip_server_fields(json::object& o) {
  auto& md = o["metadata"].as_object();
  for (const char* k : {"uid", "resourceVersion", "creationTimestamp", "ownerReferences", "generateName"}) md.erase(k);
}

/// Creates; an object that already exists counts as done.
bool create(const gpupool::Client& c, const gpupool::ResourceRef& ref, const std::string& ns, const json::object& o) {
  try {
    c.create(ref, ns, o);
    return true;
  } catch (const gpupool::ApiError& e) {
    if (e.code() == 409) return false;
    throw;
  }
}

/// Runs fn(i) for i in [0, n) on `threads` threads.
template <class Fn>
void parallel(int n, int threads, Fn fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> ts;
  std::exception_ptr failed;
  std::mutex mu;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      try {
        for (int i; (i = next++) < n;) fn(i);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!failed) failed = std::current_exception();
        next = n;
      }
    });
  for (auto& t : ts) t.join();
  if (failed) std::rethrow_exception(failed);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: bench_load <kubeconfig> <pods> [threads]\n");
    return 2;
  }
  const int pods = std::stoi(argv[2]);
  const int threads = argc > 3 ? std::stoi(argv[3]) : 8;
  try {
    gpupool::ClientOptions co;
    co.transport.max_idle_connections = static_cast<std::size_t>(threads) * 2;
    gpupool::KubeConfigOptions ko;
    ko.path = argv[1];
    const gpupool::Client client(gpupool::load_kubeconfig(ko), co);
    parallel(200, threads, [&](int n) {
      create(client, kNamespacesRef, "", json::object{{"metadata", {{"name", "user-" + std::to_string(n)}}}});
    });
    std::mt19937 rng(42);
    std::vector<json::object> nodes;
    for (int i = 0; i < bench::kNodes; ++i) {
      nodes.push_back(bench::make_node(i, rng));
      strip_server_fields(nodes.back());
    }
    parallel(bench::kNodes, threads, [&](int i) { create(client, kNodesRef, "", nodes[i]); });
    std::printf("bench_load: 200 namespaces, %d nodes\n", bench::kNodes);
    std::atomic<int> made{0};
    parallel(pods, threads, [&](int i) {
      json::object p = bench::make_pod(i);
      strip_server_fields(p);
      auto& spec = p["spec"].as_object();
      for (auto& t : spec["tolerations"].as_array()) t.as_object().erase("tolerationSeconds");
      // make_node: node i is a GPU node when i % 5 < 3; GPU pods go to those, the rest anywhere.
      const bool gpu =
          spec["containers"].as_array()[0].at("resources").at("requests").as_object().contains("nvidia.com/gpu");
      int node = i % bench::kNodes;
      if (gpu) node = (i / 3 * 5 + i % 3) % bench::kNodes;
      spec["nodeName"] = "gpu-node-" + std::to_string(node);
      const std::string ns(p["metadata"].as_object()["namespace"].as_string());
      if (create(client, kPodsRef, ns, p)) ++made;
      if ((i + 1) % 5000 == 0) std::printf("bench_load: %d pods\n", i + 1), std::fflush(stdout);
    });
    json::object explain = json::parse(R"({"metadata":{"name":"bench-explain","namespace":"user-0"},
      "spec":{"containers":[{"name":"main","image":"busybox","resources":{"requests":{"nvidia.com/gpu":"16"},
      "limits":{"nvidia.com/gpu":"16"}}}]}})")
                               .as_object();
    create(client, kPodsRef, "user-0", explain);
    std::printf("bench_load: %d pods (%d new) and user-0/bench-explain\n", pods, made.load());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_load: %s\n", e.what());
    return 1;
  }
  return 0;
}
