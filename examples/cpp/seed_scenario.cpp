// The seed's whole walkthrough (Arena's --toleration feature) in C++, on an embedded cluster:
//   kubectl taint nodes cn-beijing.192.168.3.228 gpu_node=invalid:NoSchedule   (and .229)
//   kubectl taint nodes cn-beijing.192.168.3.230 ssd_node=invalid:NoSchedule
//   arena submit mpi --name=mpi-dist --gpus=1 --workers=1 --toleration ssd_node --tensorboard ...
//   arena get mpi-dist      -> every instance runs on 192.168.3.230, the only node it tolerates
// Usage: seed_scenario [TOLERATION...]   (default: ssd_node; try "ssd_node gpu_node" or "all")
#include <gpupool/gpupool.hpp>

#include <chrono>
#include <iostream>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  try {
    gpupool::EmbeddedCluster cluster({.topology = "seed"});  // six nodes, a manual clock

    for (const char* node : {"cn-beijing.192.168.3.228", "cn-beijing.192.168.3.229"})
      std::cout << "node/" << node << " " << cluster.taint(node, {"gpu_node=invalid:NoSchedule"}) << "\n";
    std::cout << "node/cn-beijing.192.168.3.230 "
              << cluster.taint("cn-beijing.192.168.3.230", {"ssd_node=invalid:NoSchedule"}) << "\n";

    gpupool::SubmitOptions job;
    job.kind = "mpi";
    job.name = "mpi-dist";
    job.image = "registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5";
    job.gpus = 1;
    job.workers = 1;
    job.tolerations = argc > 1 ? std::vector<std::string>(argv + 1, argv + argc) : std::vector<std::string>{"ssd_node"};
    job.tensorboard = true;
    job.command = "mpirun python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py --model resnet101";
    for (const auto& created : cluster.submit(gpupool::to_workload(job)).created) std::cout << created << " created\n";

    cluster.server().advance(5s);  // the simulated kubelet starts the pods on the cluster clock
    const gpupool::JobInfo info = cluster.wait("mpi-dist", gpupool::WaitFor::Running, 30s);
    std::cout << "\n" << info.to_text() << "\n";
    for (const auto& instance : info.instances)
      std::cout << instance.name << " landed on " << instance.node << " (" << instance.node_ip << ")\n";
    return 0;
  } catch (const gpupool::Error& e) {
    std::cerr << "seed_scenario: " << e.what() << "\n";
    return 1;
  }
}
