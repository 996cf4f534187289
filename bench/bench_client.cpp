// bench_client — the C++ side of the Python submit comparison (issue 18, Python submit CPU):
//
//   bench_client <kubeconfig> N    on a server that has the PVC `data` (bench_submit serve):
//     create   N Deployments through gpupool::Client::create (the object built once per job, as
//              bench_submit cxx does): the bare client, one request per job;
//     submit   N jobs through gpupool::Cluster::submit of the Workload that Arena-style options
//              render (the same options bench_py.py's Python submit passes), i.e. what Python's
//              Cluster.submit does below the binding: the name checked against every kind, the
//              pre-flight dry run and quota read, then the create.
//   Prints client CPU per job (getrusage of this process: user + system) and `RESULT` lines;
//   bench_py.py submit-ratio runs it and puts Python's figures beside them.
#include <sys/resource.h>

#include <cstdio>
#include <string>

#include <boost/json.hpp>

#include "gpupool/client.hpp"
#include "gpupool/cluster.hpp"
#include "gpupool/kubeconfig.hpp"
#include "gpupool/submit_options.hpp"

namespace json = boost::json;

namespace {

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// bench_submit's object (and bench_py.py's deployment()).
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
      gpupool::KubeConfigOptions ko;
      ko.path = kubeconfig;
      gpupool::Client client(gpupool::load_kubeconfig(ko));
      const gpupool::ResourceRef deployments{"apps", "v1", "deployments", "Deployment", true};
      client.create(deployments, "default", deployment("bench-client-warm"));  // the connection, once
      const double c0 = cpu_seconds();
      for (int i = 0; i < n; ++i)
        client.create(deployments, "default", deployment("bench-client-create-" + std::to_string(i)));
      const double cpu = (cpu_seconds() - c0) / n;
      std::printf("gpupool C++ Client::create: %d jobs, client CPU %.3f ms/job\n", n, cpu * 1e3);
      std::printf("RESULT submit_client_create %.4f\n", cpu * 1e3);
    }
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
      cluster.submit(workload("bench-client-submit-warm"));
      const double c0 = cpu_seconds();
      for (int i = 0; i < n; ++i) cluster.submit(workload("bench-client-submit-" + std::to_string(i)));
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
