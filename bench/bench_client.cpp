// bench_client — the C++ side of the Python submit comparison (issue 18, Python submit CPU):
//
//   bench_client <kubeconfig> N    on a server that has the PVC `data` (bench_submit serve): N jobs
//     through gpupool::Cluster::submit of the Workload that Arena-style options render (the same
//     options bench_py.py's Python submit passes), i.e. what Python's Cluster.submit does below the
//     binding: the name checked against every kind, the pre-flight dry run and quota read, then the
//     create. (The bare client, Client::create of a built object, is bench_submit cxx.)
//   Prints client CPU per job (CPU time of this process: user + system, cpu_time.hpp) and `RESULT` lines;
//   bench_py.py submit-ratio runs it and puts Python's figures beside them.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "cpu_time.hpp"
#include "gpupool/cluster.hpp"
#include "gpupool/submit_options.hpp"

namespace {

using bench::cpu_seconds;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bench_client <kubeconfig> N\n");
    return 2;
  }
  const std::string kubeconfig = argv[1];
  const int n = std::stoi(argv[2]);
  try {
    {
      gpupool::ConnectOptions co;
      co.kubeconfig = kubeconfig;
      co.namespace_ = "default";
      gpupool::Cluster cluster = gpupool::Cluster::connect(co);
      auto workload = [](const std::string& name) {
        gpupool::SubmitOptions o;
        o.kind = "deployment";
        o.name = name;
        o.image = "harbor.example.org/library/pytorch:2.1.0-cuda12";
        o.gpus = 1;
        o.tolerations = {"gpu_node=invalid:NoSchedule", "ssd_node"};
        o.data = {"data:/data"};
        o.command = "python train.py --data /data";
        return gpupool::to_workload(o);
      };
      const std::string prefix = "bench-client-" + std::to_string(::getpid()) + "-";  // unique per run
      cluster.submit(workload(prefix + "warm"));
      const double c0 = cpu_seconds();
      for (int i = 0; i < n; ++i) cluster.submit(workload(prefix + std::to_string(i)));
      const double cpu = (cpu_seconds() - c0) / n;
      std::printf("gpupool C++ Cluster::submit (options rendered each time): %d jobs, client CPU %.3f ms/job\n", n,
                  cpu * 1e3);
      std::printf("RESULT submit_cluster_submit %.4f\n", cpu * 1e3);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_client: %s\n", e.what());
    return 1;
  }
  return 0;
}
