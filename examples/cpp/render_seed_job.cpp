// A tiny C++ application using gpupool: the seed's Arena job
//   arena submit mpi --name=mpi-dist --gpus=1 --workers=1 --toleration ssd_node
//     --image=registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5
//     --tensorboard "mpirun python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py ..."
// built as a gpupool Workload and printed as the YAML `kubectl apply -f` takes.
// Usage: render_seed_job [profile]   (a built-in profile name, default "generic")
#include <gpupool/error.hpp>
#include <gpupool/manifest.hpp>
#include <gpupool/profile.hpp>
#include <gpupool/render.hpp>
#include <gpupool/taint.hpp>
#include <gpupool/workload.hpp>

#include <iostream>

int main(int argc, char** argv) {
  try {
    gpupool::Workload job;
    job.name = "mpi-dist";
    job.kind = gpupool::WorkloadKind::MPIJob;
    job.image = "registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5";
    job.shell =
        "mpirun python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py --model resnet101 --batch_size 64 "
        "    --variable_update horovod --train_dir=/training_logs --summary_verbosity=3 --save_summaries_steps=10";
    job.resources.gpus = 1;
    job.replicas.workers = 1;
    job.tolerations = gpupool::parse_tolerations({"ssd_node"});
    job.tensorboard.enabled = true;
    job.tensorboard.log_dir = "/training_logs";

    gpupool::Profile profile = gpupool::Profile::builtin(argc > 1 ? argv[1] : "generic");
    std::cout << "# toleration " << job.tolerations.front().to_string() << "\n"
              << gpupool::to_yaml(gpupool::render(job, profile).objects);
    return 0;
  } catch (const gpupool::Error& e) {
    std::cerr << "render_seed_job: " << e.what() << "\n";
    return 1;
  }
}
