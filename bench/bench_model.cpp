// bench_model — placement (place/explain) and cluster-snapshot decode, each against a baseline
// measured in the same run. Run by bench/run.sh; see bench/README.md for the method.
//
//   bench_model gen <dir>                      write nodes.json / pods.json (full) and *_small.json
//   bench_model decode <dir>                   decode time vs boost::json::parse of the same bytes
//   bench_model mem <file> parse|decode        (child) peak RSS growth while parsing/decoding <file>
//   bench_model place <dir>                    place() and explain() throughput
//
// The generated cluster is deterministic (fixed seed): 5,000 nodes (GPU nodes with 8 GPUs, some
// tainted gpu_node / ssd_node NoSchedule, some PreferNoSchedule, a few cordoned) and 150,000 pods
// (plain, nodeSelector, required node affinity, GPU requests with tolerations, ssd tolerations),
// shaped like what the API server returns for `kubectl get pods -A -o json`.
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "cluster_gen.hpp"
#include "cpu_time.hpp"
#include "gpupool/node.hpp"
#include "gpupool/scheduling.hpp"

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

using bench::kNodes;
using bench::kPods;
using bench::make_node;
using bench::make_pod;
constexpr int kSmallNodes = 500, kSmallPods = 5000;  // the subset the Python client decodes

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

using bench::cpu_seconds;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  // Read straight into a string of the right size: no second copy that would inflate the peak RSS
  // the memory measurement starts from.
  in.seekg(0, std::ios::end);
  std::string text(static_cast<std::size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return text;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string list_json(const char* kind, json::array items) {
  return json::serialize(json::object{{"kind", kind},
                                      {"apiVersion", "v1"},
                                      {"metadata", json::object{{"resourceVersion", "999999"}}},
                                      {"items", std::move(items)}});
}

int cmd_gen(const std::string& dir) {
  std::mt19937 rng(42);
  json::array nodes, pods;
  for (int i = 0; i < kNodes; ++i) nodes.push_back(make_node(i, rng));
  for (int i = 0; i < kPods; ++i) pods.push_back(make_pod(i));
  json::array small_nodes(nodes.begin(), nodes.begin() + kSmallNodes);
  json::array small_pods(pods.begin(), pods.begin() + kSmallPods);
  write_file(dir + "/nodes.json", list_json("NodeList", std::move(nodes)));
  write_file(dir + "/pods.json", list_json("PodList", std::move(pods)));
  write_file(dir + "/nodes_small.json", list_json("NodeList", std::move(small_nodes)));
  write_file(dir + "/pods_small.json", list_json("PodList", std::move(small_pods)));
  return 0;
}

struct Decoded {
  std::vector<gpupool::Node> nodes;
  std::vector<gpupool::PodRequirements> pods;
};

// The gpupool path: the list's bytes decoded into gpupool objects, each item as soon as it is parsed.
void decode_nodes(const std::string& text, Decoded& out) { out.nodes = gpupool::Node::list_from_json(text); }
void decode_pods(const std::string& text, Decoded& out) { out.pods = gpupool::PodRequirements::list_from_json(text); }

// Peak RSS of a child that reads `file` and then parses or decodes it, less the peak after reading
// (the bytes themselves), in bytes. A fresh process per measurement, so peaks do not mix.
long child_peak_growth(const std::string& self, const std::string& file, const char* mode) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    execl(self.c_str(), self.c_str(), "mem", file.c_str(), mode, static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  char buf[64] = {};
  const ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return n > 0 ? std::atol(buf) : -1;
}

// Peak resident memory of this process image (VmHWM). Not getrusage's ru_maxrss: Linux carries that
// over fork and exec from the parent, whose resident size after the timed runs may exceed the
// child's whole peak (the earlier figures read 0 growth that way).
long max_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6) * 1024L;
  throw std::runtime_error("no VmHWM in /proc/self/status");
}

int cmd_mem(const std::string& file, const std::string& mode) {
  const std::string text = read_file(file);
  const long before = max_rss_bytes();
  Decoded d;
  std::size_t keep = 0;
  if (mode == "parse") {
    const json::value v = json::parse(text);
    keep = v.at("items").as_array().size();
  } else if (file.find("nodes") != std::string::npos) {
    decode_nodes(text, d);
    keep = d.nodes.size();
  } else {
    decode_pods(text, d);
    keep = d.pods.size();
  }
  std::printf("%ld %zu\n", max_rss_bytes() - before, keep);
  return 0;
}

int cmd_decode(const std::string& dir, const std::string& self) {
  std::printf("== snapshot decode (5,000-node NodeList + 150,000-pod PodList; median of 3) ==\n");
  for (const char* base : {"nodes", "pods", "nodes_small", "pods_small"}) {
    const std::string path = dir + "/" + base + ".json";
    const std::string text = read_file(path);
    const bool is_nodes = std::string(base).rfind("nodes", 0) == 0;
    // CPU time (this process only, single-threaded) is the measure; wall time is shown next to it.
    std::vector<double> t_parse, t_decode, w_parse, w_decode;
    std::size_t items = 0;
    const int reps = 3;
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      double c0 = cpu_seconds();
      {
        const json::value v = json::parse(text);
        items = v.at("items").as_array().size();
      }
      t_parse.push_back(cpu_seconds() - c0);
      w_parse.push_back(seconds_since(t0));
      t0 = Clock::now();
      c0 = cpu_seconds();
      {
        Decoded d;
        if (is_nodes)
          decode_nodes(text, d);
        else
          decode_pods(text, d);
      }
      t_decode.push_back(cpu_seconds() - c0);
      w_decode.push_back(seconds_since(t0));
    }
    const double p = median(t_parse), d = median(t_decode);
    std::printf(
        "%-12s %9zu items %7.1f MB  boost::json::parse %8.1f ms CPU (%.1f wall)   gpupool decode %8.1f ms CPU"
        " (%.1f wall; %.2f us/item)  ratio decode/parse %.2fx (target <= 1.5x)\n",
        base, items, text.size() / 1e6, p * 1e3, median(w_parse) * 1e3, d * 1e3, median(w_decode) * 1e3,
        d * 1e6 / static_cast<double>(items), d / p);
    std::printf("RESULT decode_us_per_item %s %.3f\n", base, d * 1e6 / static_cast<double>(items));
    std::printf("RESULT decode_over_parse %s %.3f\n", base, d / p);
    if (std::string(base).find("small") == std::string::npos) {
      const long mp = child_peak_growth(self, path, "parse"), md = child_peak_growth(self, path, "decode");
      const double rp = static_cast<double>(mp) / static_cast<double>(text.size());
      const double rd = static_cast<double>(md) / static_cast<double>(text.size());
      std::printf("%-12s peak RSS growth: parse %.1f MB (%.2fx JSON), decode %.1f MB (%.2fx JSON; target < 2x)\n", base,
                  mp / 1e6, rp, md / 1e6, rd);
      std::printf("RESULT peak_rss_over_json %s %.3f %.3f\n", base, rp, rd);
    }
  }
  return 0;
}

std::vector<gpupool::NodeInfo> build_infos(const std::vector<gpupool::Node>& nodes, gpupool::PlacementState& state) {
  std::vector<gpupool::NodeInfo> infos;
  infos.reserve(nodes.size());
  for (const auto& n : nodes) infos.push_back(state.make_node_info(n));
  return infos;
}

// BENCH_REPS (default 3) repetitions; BENCH_PODS (default all) places only the first pods, for a
// quick run on a loaded machine (the figure is then for a less full cluster: say so).
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

int cmd_place(const std::string& dir) {
  Decoded d;
  decode_nodes(read_file(dir + "/nodes.json"), d);
  decode_pods(read_file(dir + "/pods.json"), d);
  const int reps = env_int("BENCH_REPS", 3);
  const auto limit = static_cast<std::size_t>(env_int("BENCH_PODS", kPods));
  if (limit < d.pods.size()) d.pods.resize(limit);
  std::printf("== placement (%zu pods onto %zu nodes; median of %d) ==\n", d.pods.size(), d.nodes.size(), reps);
  std::vector<double> times, cpu_times;
  std::size_t bound = 0, visited = 0;
  std::uint64_t choices = 0;  // FNV-1a of the chosen node indices: equal across versions iff every choice is
  for (int r = 0; r < reps; ++r) {
    choices = 14695981039346656037ULL;
    gpupool::PlacementState state;
    auto infos = build_infos(d.nodes, state);
    bound = 0;
    visited = 0;
    const auto t0 = Clock::now();
    const double c0 = cpu_seconds();
    for (const auto& pod : d.pods) {
      const std::size_t before = state.next_start_index;
      const auto res = gpupool::place(pod, infos, state);
      // place() advances the start index by the nodes it evaluated (a full turn reads as 0).
      const std::size_t step = (state.next_start_index + infos.size() - before) % infos.size();
      visited += step == 0 ? infos.size() : step;
      choices = (choices ^ (res.chosen ? *res.chosen : infos.size())) * 1099511628211ULL;
      if (res.chosen) {
        state.add_pod(infos[*res.chosen], pod);
        ++bound;
      }
    }
    cpu_times.push_back(cpu_seconds() - c0);
    times.push_back(seconds_since(t0));
  }
  const double t = median(times), ct = median(cpu_times);
  const double rate = static_cast<double>(d.pods.size()) / t, cpu_rate = static_cast<double>(d.pods.size()) / ct;
  std::printf(
      "place()   %8.0f pods/s wall, %8.0f pods per CPU second  (%.2f s; %zu bound, %zu unschedulable)"
      "  ratio to target 100,000 pods/s: %.2fx (per CPU second %.2fx)\n",
      rate, cpu_rate, t, bound, d.pods.size() - bound, rate / 1e5, cpu_rate / 1e5);
  std::printf("RESULT place_pods_per_s %.0f %.0f\n", rate, cpu_rate);
  std::printf("place()   choices hash %016llx (FNV-1a of every chosen node index, in order)\n",
              static_cast<unsigned long long>(choices));
  const double per_pod = static_cast<double>(visited) / static_cast<double>(d.pods.size());
  std::printf(
      "place()   evaluates %.0f nodes per pod on average (it stops at numFeasibleNodesToFind = %zu feasible"
      " ones): %.1f ns per evaluated node\n",
      per_pod, gpupool::num_feasible_nodes_to_find(d.nodes.size()), ct * 1e9 / static_cast<double>(visited));

  // explain() evaluates and scores every node, so it is timed on a sample of pods (every 75th:
  // 2,000 pods, every kind) against the cluster after the placement run above. BENCH_EXPLAIN=0
  // skips it (for a profile of place() alone).
  if (env_int("BENCH_EXPLAIN", 1) == 0) return 0;
  gpupool::PlacementState state;
  auto infos = build_infos(d.nodes, state);
  for (const auto& pod : d.pods) {
    const auto res = gpupool::place(pod, infos, state);
    if (res.chosen) state.add_pod(infos[*res.chosen], pod);
  }
  std::vector<double> et;
  std::size_t sample = 0;
  for (int r = 0; r < reps; ++r) {
    sample = 0;
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < d.pods.size(); i += 75, ++sample) {
      const auto res = gpupool::explain(d.pods[i], infos, state);
      if (res.verdicts.size() != infos.size()) std::printf("explain: unexpected verdict count\n");
    }
    et.push_back(seconds_since(t0));
  }
  const double e = median(et);
  const double erate = static_cast<double>(sample) / e;
  std::printf("explain() %8.0f pods/s  (%zu pods x %zu nodes = %.0f node verdicts/s)  ratio to place(): %.4fx\n", erate,
              sample, infos.size(), erate * static_cast<double>(infos.size()), erate / rate);
  std::printf("RESULT explain_pods_per_s %.0f\n", erate);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows through `tee`
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "gen" && argc == 3) return cmd_gen(argv[2]);
    if (cmd == "decode" && argc == 3) return cmd_decode(argv[2], "/proc/self/exe");
    if (cmd == "mem" && argc == 4) return cmd_mem(argv[2], argv[3]);
    if (cmd == "place" && argc == 3) return cmd_place(argv[2]);
    std::fprintf(stderr, "usage: bench_model gen|decode|place <dir> | mem <file> parse|decode\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_model: %s\n", e.what());
    return 1;
  }
}
