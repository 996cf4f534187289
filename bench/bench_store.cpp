// The embedded API server's store at Kubernetes' supported maxima: 5,000 nodes and 150,000 pods.
// Prints each figure and its ratio against a baseline measured in the same run: serializing and
// parsing the same objects with plain Boost.JSON (what any in-memory store has to at least pay to
// accept and hand out JSON).
//
// Then the embedded scheduler (issue 7, placement "in the embedded scheduler"): a store holding
// bench_model's generated cluster (cluster_gen.hpp: 5,000 nodes, 150,000 pending pods of the same
// mix, each pod's PersistentVolumeClaim bound), and the time for embedded::Scheduler to bind them
// all: constructing it (it queues the pending pods) and sync(), which per pod reads it from the
// store, runs VolumeBinding's PreFilter and place(), binds it (spec.nodeName, PodScheduled=True)
// and records the Scheduled event, each write going through the store's watch fan-out. The fill
// is not timed. Only the scheduler is subscribed (no controllers, no kubelet).
//
//   bench_store [pods] [nodes]      (defaults 150000 5000) both sections; BENCH_SCHED=0 skips the second
//   bench_store sched [pods]        the scheduler section only (default 150000 pods; 5,000 nodes)
#include "embedded/clock.hpp"
#include "embedded/scheduler.hpp"
#include "embedded/store.hpp"

#include "cluster_gen.hpp"
#include "cpu_time.hpp"
#include "store_fill.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <boost/json.hpp>

#include <atomic>
#include <cstdio>
#include <thread>

#include <malloc.h>
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace json = boost::json;
using gpupool::embedded::Clock;
using gpupool::embedded::FieldSelector;
using gpupool::embedded::LabelSelector;
using gpupool::embedded::ListOptions;
using gpupool::embedded::Scheduler;
using gpupool::embedded::Store;
using Steady = std::chrono::steady_clock;

namespace {

double seconds_since(Steady::time_point t0) { return std::chrono::duration<double>(Steady::now() - t0).count(); }

using bench::cpu_seconds;

/// Resident memory now, in KiB (/proc/self/statm; max RSS would still hold the baseline's peak).
long rss_kib() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/// Bytes malloc has handed out and not had back (glibc's mallinfo2 uordblks + hblkhd): the live
/// heap, without the free memory the allocator keeps resident.
double heap_in_use_mib() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1 << 20);
}

json::object node(int i) {
  return json::parse(fmt::format(R"({{"apiVersion": "v1", "kind": "Node",
    "metadata": {{"name": "node-{0:05}", "labels": {{"kubernetes.io/hostname": "node-{0:05}", "gpu": "{1}"}}}},
    "spec": {{"taints": [{{"key": "gpu_node", "value": "invalid", "effect": "NoSchedule"}}]}},
    "status": {{"capacity": {{"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}},
                "allocatable": {{"cpu": "63800m", "memory": "500Gi", "pods": "110", "nvidia.com/gpu": "8"}},
                "addresses": [{{"type": "InternalIP", "address": "10.0.{2}.{3}"}}]}}}})",
                                 i, i % 3 ? "v100" : "a100", i / 250, i % 250))
      .as_object();
}

json::object pod(int i, int nodes) {
  return json::parse(fmt::format(R"({{"apiVersion": "v1", "kind": "Pod",
    "metadata": {{"name": "job-{0}-worker-{1}", "labels": {{"app": "job-{0}", "tier": "{2}"}}}},
    "spec": {{"nodeName": "node-{3:05}",
              "tolerations": [{{"key": "gpu_node", "operator": "Exists"}}],
              "containers": [{{"name": "main", "image": "harbor.iiis.co/library/ubuntu-pytorch:1.5.0",
                               "resources": {{"requests": {{"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"}},
                                              "limits": {{"nvidia.com/gpu": "1"}}}}}}]}},
    "status": {{"phase": "Running"}}}})",
                                 i / 8, i % 8, i % 2 ? "train" : "eval", i % nodes))
      .as_object();
}

// The embedded scheduler binding `pods` pending pods of the generated mix onto 5,000 nodes.
int sched_section(int pods) {
  const long rss_before = rss_kib();
  const double heap_before = heap_in_use_mib();
  Clock clock = Clock::manual();
  Store store(clock);
  const auto& pod_type = store.type("", "pods");
  bench::fill_store(store, pods);
  const long rss_filled = rss_kib();
  const double heap_filled = heap_in_use_mib();

  // A watcher of every pod (what `kubectl get pods -A -w` or an informer opens), drained by a
  // thread of its own as the HTTP layer drains it: it must see every binding, so the timing includes
  // the watch fan-out. Its CPU is counted (it is this process).
  auto watch = store.open_watch(pod_type, "", store.revision());
  std::atomic<bool> done{false};
  std::size_t seen_bindings = 0, watch_batches = 0;
  std::thread watcher([&] {
    for (;;) {
      const bool last = done.load();
      auto events = watch->next(std::chrono::milliseconds(20));
      if (!events.empty()) ++watch_batches;
      // A binding: spec.nodeName going from empty to set (read in place, as an informer's handler
      // would compare the typed old and new pods).
      const auto assigned = [](const json::object& pod) {
        const json::value* spec = pod.if_contains("spec");
        const json::value* node = spec && spec->is_object() ? spec->as_object().if_contains("nodeName") : nullptr;
        return node && node->is_string() && !node->as_string().empty();
      };
      for (const auto& e : events)
        if (e.type == gpupool::embedded::EventType::Modified && e.old_object && !assigned(*e.old_object) &&
            assigned(*e.object))
          ++seen_bindings;
      if (watch->closed() || (last && events.empty())) return;
    }
  });
  const std::uint64_t rv0 = store.revision();
  const auto t0 = Steady::now();
  const double c0 = cpu_seconds();
  // Kept past the timing: a server's scheduler lives on, and its teardown is not scheduling.
  std::unique_ptr<Scheduler> scheduler;
  std::size_t bound = 0;
  std::uint64_t attempts = 0;
  {
    const bench::ProfileWindow profiled;
    scheduler = std::make_unique<Scheduler>(store, clock);
    bound = scheduler->sync();
    attempts = scheduler->attempts();
    done = true;
    watcher.join();  // every binding delivered to the watcher
  }
  const double cpu = cpu_seconds() - c0, wall = seconds_since(t0);
  const long rss_bound = rss_kib();
  const double heap_bound = heap_in_use_mib();
  const std::uint64_t writes = store.revision() - rv0;
  const bool watch_overflowed = watch->closed();
  const std::uint64_t watch_wakes = watch->wakes();
  store.close_watch(watch);
  // Then a label added to one node (a scheduling property) and one more pod created: what the
  // scheduler pays for a node update with every pod bound.
  const double c1 = cpu_seconds();
  store.mutate(store.type("", "nodes"), "", "gpu-node-1",
               [](json::object& n) { n["metadata"].as_object()["labels"].as_object()["bench"] = "1"; });
  json::object extra = bench::make_pod(pods);
  const std::string extra_ns(extra["metadata"].as_object()["namespace"].as_string());
  store.create(pod_type, extra_ns, std::move(extra));
  const double node_update = cpu_seconds() - c1;
  std::size_t on_nodes = 0;
  for (const auto& p : store.list(pod_type, "").items)
    if (!gpupool::embedded::field_value(*p, "spec.nodeName").empty()) ++on_nodes;
  fmt::print("embedded scheduler: {} pending pods onto {} nodes (bench_model's mix), scheduler alone\n", pods,
             bench::kNodes);
  fmt::print(
      "  bind all                {:8.3f} s CPU ({:.3f} wall)  {:8.0f} pods per CPU second ({:.0f}/s wall)"
      "  {} bound, {} attempts  ratio to target 100,000 pods/s: {:.2f}x\n",
      cpu, wall, pods / cpu, pods / wall, bound, attempts, pods / cpu / 1e5);
  fmt::print(
      "  store writes per bound pod {:.2f} (binding + Scheduled event); a pod watcher saw {} bindings in {} "
      "batches ({} wakes){}\n",
      static_cast<double>(writes) / static_cast<double>(std::max<std::size_t>(bound, 1)), seen_bindings, watch_batches,
      watch_wakes, watch_overflowed ? " (its queue overflowed: closed)" : "");
  fmt::print("  node label changed, then one pod created and bound: {:.1f} ms CPU\n", node_update * 1e3);
  fmt::print(
      "  memory: filled store {:.0f} MiB resident, {:.0f} MiB heap in use; after binding (pods, events, the "
      "history) {:.0f} MiB resident, {:.0f} MiB heap in use\n",
      (rss_filled - rss_before) / 1024.0, heap_filled - heap_before, (rss_bound - rss_before) / 1024.0,
      heap_bound - heap_before);
  fmt::print("RESULT sched_embedded_pods_per_s {:.0f} {:.0f}\n", pods / wall, pods / cpu);
  fmt::print("RESULT sched_embedded_node_update_ms {:.2f}\n", node_update * 1e3);
  return on_nodes == bound + 1 && bound == static_cast<std::size_t>(pods) && seen_bindings == bound ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "sched") return sched_section(argc > 2 ? std::atoi(argv[2]) : 150000);
  const int pods = argc > 1 ? std::atoi(argv[1]) : 150000;
  const int nodes = argc > 2 ? std::atoi(argv[2]) : 5000;
  const int namespaces = 100;
  std::vector<json::object> node_objs, pod_objs;
  for (int i = 0; i < nodes; ++i) node_objs.push_back(node(i));
  for (int i = 0; i < pods; ++i) pod_objs.push_back(pod(i, nodes));

  // Baseline: serialize + parse every object once (accepting JSON), then serialize again (listing).
  auto t0 = Steady::now();
  std::size_t bytes = 0;
  std::vector<json::value> copies;
  copies.reserve(node_objs.size() + pod_objs.size());
  for (const auto* set : {&node_objs, &pod_objs})
    for (const auto& o : *set) {
      std::string text = json::serialize(o);
      bytes += text.size();
      copies.push_back(json::parse(text));
    }
  const double baseline_accept = seconds_since(t0);
  t0 = Steady::now();
  std::size_t out = 0;
  for (const auto& v : copies) out += json::serialize(v).size();
  const double baseline_list = seconds_since(t0);
  copies.clear();
  copies.shrink_to_fit();

  const long rss0 = rss_kib();
  const double heap0 = heap_in_use_mib();
  Clock clock = Clock::manual();
  Store store(clock);
  const auto& ns_type = store.type("", "namespaces");
  for (int n = 0; n < namespaces; ++n)
    store.create(ns_type, "", json::object{{"metadata", {{"name", fmt::format("team-{}", n)}}}});
  const auto& node_type = store.type("", "nodes");
  const auto& pod_type = store.type("", "pods");

  t0 = Steady::now();
  for (auto& o : node_objs) store.create(node_type, "", std::move(o));
  for (int i = 0; i < pods; ++i)
    store.create(pod_type, fmt::format("team-{}", i % namespaces), std::move(pod_objs[static_cast<std::size_t>(i)]));
  const double create = seconds_since(t0);
  const long rss1 = rss_kib();
  const double heap1 = heap_in_use_mib();

  t0 = Steady::now();
  auto all = store.list(pod_type, "");
  std::size_t listed = 0;
  for (const auto& p : all.items) listed += json::serialize(*p).size();
  const double list_all = seconds_since(t0);

  t0 = Steady::now();
  auto one_ns = store.list(pod_type, "team-7");
  const double list_ns = seconds_since(t0);

  ListOptions by_label;
  by_label.labels = LabelSelector::parse("app=job-42");
  t0 = Steady::now();
  auto labelled = store.list(pod_type, "", by_label);
  const double list_label = seconds_since(t0);

  ListOptions by_node;
  by_node.fields = FieldSelector::parse("spec.nodeName=node-00007");
  t0 = Steady::now();
  auto on_node = store.list(pod_type, "", by_node);
  const double list_field = seconds_since(t0);

  t0 = Steady::now();
  auto all_nodes = store.list(node_type, "");
  const double list_nodes = seconds_since(t0);

  fmt::print("embedded store: {} nodes, {} pods in {} namespaces ({:.1f} MiB of JSON)\n", nodes, pods, namespaces,
             static_cast<double>(bytes) / (1 << 20));
  fmt::print("  baseline (Boost.JSON serialize+parse of every object): {:.3f} s; serialize all: {:.3f} s\n",
             baseline_accept, baseline_list);
  fmt::print("  create all objects      {:8.3f} s  {:8.0f} objects/s  ratio {:.2f}x baseline\n", create,
             (nodes + pods) / create, create / baseline_accept);
  fmt::print("  list all pods (+JSON)   {:8.3f} s  ({} items)  ratio {:.2f}x serialize-all\n", list_all,
             all.items.size(), list_all / baseline_list);
  fmt::print("  list one namespace      {:8.4f} s  ({} items)\n", list_ns, one_ns.items.size());
  fmt::print("  list by label           {:8.4f} s  ({} items)\n", list_label, labelled.items.size());
  fmt::print("  list by spec.nodeName   {:8.4f} s  ({} items)\n", list_field, on_node.items.size());
  fmt::print("  list all nodes          {:8.4f} s  ({} items)\n", list_nodes, all_nodes.items.size());
  fmt::print("  memory: resident grew {:.0f} MiB for {:.0f} MiB of JSON ({:.2f}x)\n", (rss1 - rss0) / 1024.0,
             static_cast<double>(bytes) / (1 << 20), (rss1 - rss0) * 1024.0 / static_cast<double>(bytes));
  fmt::print("  memory: heap in use grew {:.0f} MiB (the objects given to create() were built before either figure)\n",
             heap1 - heap0);
  const bool ok = all.items.size() == static_cast<std::size_t>(pods) && out > 0 && listed > 0;
  const char* sched = std::getenv("BENCH_SCHED");
  if (sched && std::string(sched) == "0") return ok ? 0 : 1;
  return sched_section(pods) == 0 && ok ? 0 : 1;
}
