// bench_submit — the submit comparison's server and its gpupool C++ client. Run by bench/run.sh.
//
//   bench_submit serve <dir> [--no-pvc]  start the embedded API server (seed topology) with the claim
//                                     "data" the Deployments mount (bound, as the guide's users mount an
//                                     existing PVC; --no-pvc leaves it missing, so every pod fails the
//                                     scheduler's VolumeBinding PreFilter), write its admin kubeconfig
//                                     path to <dir>/kubeconfig.path, serve until stdin closes
//   bench_submit cxx <kubeconfig> N C [prefix]  create N Deployments (tolerations + PVC mount) through
//                                     gpupool::Client, C threads sharing one Client; prints jobs/s and
//                                     client CPU per job (getrusage of this process: the server runs in
//                                     another one)
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "gpupool/client.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/kubeconfig.hpp"

namespace json = boost::json;

namespace {

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// The same object bench_py.py's deployment() sends.
json::object deployment(const std::string& name) {
  json::object labels{{"app", name}};
  json::object container{{"name", "trainer"},
                         {"image", "harbor.example.org/library/pytorch:2.1.0-cuda12"},
                         {"command", json::array{"bash", "-c", "python train.py --data /data"}},
                         {"resources", json::object{{"limits", json::object{{"nvidia.com/gpu", "1"}}}}},
                         {"volumeMounts", json::array{json::object{{"name", "data"}, {"mountPath", "/data"}}}}};
  json::object pvc{{"name", "data"}, {"persistentVolumeClaim", json::object{{"claimName", "data"}}}};
  json::array tolerations{
      json::object{{"key", "gpu_node"}, {"operator", "Equal"}, {"value", "invalid"}, {"effect", "NoSchedule"}},
      json::object{{"key", "ssd_node"}, {"operator", "Exists"}}};
  json::object pod_spec{{"containers", json::array{std::move(container)}},
                        {"volumes", json::array{std::move(pvc)}},
                        {"tolerations", std::move(tolerations)}};
  json::object tmpl{{"metadata", json::object{{"labels", labels}}}, {"spec", std::move(pod_spec)}};
  json::object spec{
      {"replicas", 1}, {"selector", json::object{{"matchLabels", labels}}}, {"template", std::move(tmpl)}};
  return json::object{{"apiVersion", "apps/v1"},
                      {"kind", "Deployment"},
                      {"metadata", json::object{{"name", name}, {"labels", labels}}},
                      {"spec", std::move(spec)}};
}

int cmd_serve(const std::string& dir, bool with_pvc) {
  gpupool::EmbeddedOptions options;
  options.topology = "seed";
  gpupool::EmbeddedServer server(options);
  if (with_pvc) {
    // The claim every benchmark Deployment mounts (bench_py.py sends the same objects), created
    // through the API like any user's; the default StorageClass binds it at once.
    gpupool::KubeConfigOptions kopts;
    kopts.path = server.admin_kubeconfig();
    gpupool::Client client(gpupool::load_kubeconfig(kopts));
    client.create(
        gpupool::ResourceRef{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true}, "default",
        json::object{
            {"apiVersion", "v1"},
            {"kind", "PersistentVolumeClaim"},
            {"metadata", json::object{{"name", "data"}}},
            {"spec", json::object{{"accessModes", json::array{"ReadWriteOnce"}},
                                  {"resources", json::object{{"requests", json::object{{"storage", "10Gi"}}}}}}}});
  }
  {
    std::ofstream out(dir + "/kubeconfig.path");
    out << server.admin_kubeconfig() << "\n";
  }
  std::string line;
  while (std::getline(std::cin, line)) {}
  return 0;
}

int cmd_cxx(const std::string& kubeconfig, int n, int conc, const std::string& prefix) {
  const double c0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  gpupool::KubeConfigOptions kopts;
  kopts.path = kubeconfig;
  gpupool::Client client(gpupool::load_kubeconfig(kopts));
  const gpupool::ResourceRef deployments{"apps", "v1", "deployments", "Deployment", true};
  std::atomic<int> next{0}, failed{0};
  auto work = [&] {
    for (int i = next++; i < n; i = next++) {
      try {
        client.create(deployments, "default",
                      deployment(prefix + "bench-cxx-c" + std::to_string(conc) + "-" + std::to_string(i)));
      } catch (const std::exception& e) {
        if (failed++ == 0) std::fprintf(stderr, "bench_submit: %s\n", e.what());
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < conc; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - c0;
  std::printf("gpupool C++ Client, %d client thread(s): %d jobs in %.2f s = %.1f jobs/s, client CPU %.3f ms/job%s\n",
              conc, n, wall, n / wall, cpu / n * 1e3, failed ? " (SOME FAILED)" : "");
  std::printf("RESULT submit_cxx_c%d_n%d %.3f %.4f\n", conc, n, n / wall, cpu / n * 1e3);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "serve" && argc == 3) return cmd_serve(argv[2], true);
    if (cmd == "serve" && argc == 4 && std::string(argv[3]) == "--no-pvc") return cmd_serve(argv[2], false);
    if (cmd == "cxx" && (argc == 5 || argc == 6))
      return cmd_cxx(argv[2], std::stoi(argv[3]), std::stoi(argv[4]), argc == 6 ? argv[5] : "");
    std::fprintf(stderr, "usage: bench_submit serve <dir> [--no-pvc] | cxx <kubeconfig> N concurrency [name-prefix]\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_submit: %s\n", e.what());
    return 1;
  }
}
