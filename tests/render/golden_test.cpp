// Golden manifests: every kind rendered with a built-in profile, compared byte for byte with
// tests/render/golden/<case>.yaml. To regenerate after an intended change:
//   GPUPOOL_UPDATE_GOLDEN=1 build/<dir>/tests/test_render -tc='golden*'
// then review the diff against the Kubeflow CRDs before committing.
#include <doctest/doctest.h>

#include "gpupool/manifest.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/render.hpp"
#include "gpupool/workload.hpp"

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

using namespace gpupool;

namespace {

std::string golden_path(const std::string& name) {
  return std::string(GPUPOOL_SOURCE_DIR) + "/tests/render/golden/" + name;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void compare_golden(const std::string& name, const std::string& actual) {
  std::string path = golden_path(name);
  if (std::getenv("GPUPOOL_UPDATE_GOLDEN")) {
    std::ofstream(path, std::ios::binary) << actual;
    MESSAGE("updated " << path);
  }
  std::string expected = read_file(path);
  CAPTURE(path);
  CHECK(actual == expected);
}

Workload seed_mpi() {
  Workload w;
  w.name = "mpi-dist";
  w.kind = WorkloadKind::MPIJob;
  w.image = "registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5";
  w.shell =
      "mpirun python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py --model resnet101 --batch_size 64 "
      "    --variable_update horovod --train_dir=/training_logs --summary_verbosity=3 --save_summaries_steps=10";
  w.resources.gpus = 1;
  w.replicas.workers = 1;
  w.tolerations = parse_tolerations({"ssd_node"});
  w.tensorboard.enabled = true;
  return w;
}

Workload mpi_v2() {
  Workload w;
  w.name = "hvd-v2";
  w.namespace_ = "zhangsan";
  w.kind = WorkloadKind::MPIJob;
  w.mpi_api = MpiJobApi::V2Beta1;
  w.image = "mpioperator/tensorflow-benchmarks:latest";
  w.command = {"mpirun", "-np", "4", "python", "/benchmarks/train.py"};
  w.resources.gpus = 2;
  w.resources.cpu_request = Quantity::parse("2");
  w.resources.memory_limit = Quantity::parse("16384Mi");
  w.replicas.workers = 2;
  w.clean_pod_policy = CleanPodPolicy::All;
  w.ttl_seconds_after_finished = 600;
  w.backoff_limit = 2;
  w.tolerations = parse_tolerations({"gpu_node=invalid:NoSchedule", "ssd_node:NoSchedule"});
  return w;
}

Workload tfjob() {
  Workload w;
  w.name = "tf-dist";
  w.namespace_ = "zhangsan";
  w.kind = WorkloadKind::TFJob;
  w.image = "ubuntu-tensorflow:1.14.1";
  w.command = {"python", "/share/zhangsan/train.py", "--epochs=10"};
  w.resources.gpus = 1;
  w.resources.cpu_request = Quantity::parse("4");
  w.resources.cpu_limit = Quantity::parse("4");
  w.resources.memory_request = Quantity::parse("8Gi");
  w.resources.memory_limit = Quantity::parse("10Gi");
  w.replicas = Replicas{2, 1, 1, 1};
  w.nfs = true;
  w.restart_policy = RestartPolicy::ExitCode;
  return w;
}

Workload pytorchjob() {
  Workload w;
  w.name = "torch-ddp";
  w.namespace_ = "zhangsan";
  w.kind = WorkloadKind::PyTorchJob;
  w.image = "ubuntu-pytorch:1.5.0";
  w.shell = "python train.py --data /mnt/data1/torch-ddp/data --out /mnt/data1/torch-ddp/out";
  w.working_dir = "/workspace";
  w.resources.gpus = 2;
  w.replicas.workers = 1;
  w.ssd = true;
  w.shm_size = Quantity::parse("8Gi");
  w.pvcs = {PvcRequest{"torch-data", "cephfs", Quantity::parse("100Gi"), {AccessMode::ReadWriteMany}}};
  w.volumes = {Volume{"data", PvcSource{"torch-data", false}}};
  w.mounts = {VolumeMount{"data", "/pvc", "", false}};
  w.staging =
      SsdStaging{{{"/pvc/dataset", "/mnt/data1/torch-ddp/data"}}, "/mnt/data1/torch-ddp/out", "/pvc/results/torch-ddp"};
  w.env = {{"NCCL_DEBUG", "INFO", ""}, {"ORION_GMEM", "20000", ""}};
  return w;
}

Workload deployment() {
  // The guide's ubuntu-tf+local-disk+pvc example, as a gpupool workload.
  Workload w;
  w.name = "my-first-ubuntu-tf";
  w.kind = WorkloadKind::Deployment;
  w.image = "ubuntu-tensorflow:2.3.0";
  w.command = {"bash", "-c", "--", "while true; do sleep 30; done;"};
  w.resources.gpus = 1;
  w.resources.cpu_request = Quantity::parse("4");
  w.resources.cpu_limit = Quantity::parse("4");
  w.resources.memory_request = Quantity::parse("8Gi");
  w.resources.memory_limit = Quantity::parse("10Gi");
  w.ssd = true;
  w.pvcs = {PvcRequest{"my-pvc-demo", "nfs", Quantity::parse("1Gi"), {AccessMode::ReadWriteOnce}}};
  w.volumes = {Volume{"my-pvc", PvcSource{"my-pvc-demo", false}}};
  w.mounts = {VolumeMount{"my-pvc", "/pvc", "", false}};
  return w;
}

Workload job() {
  Workload w;
  w.name = "preprocess";
  w.kind = WorkloadKind::Job;
  w.image = "python:3.11";
  w.command = {"python", "-c", "print('10000')"};
  w.env = {{"MODE", "yes", ""}, {"POD_NAME", "", "metadata.name"}};
  w.resources.cpu_request = Quantity::parse("0.5");
  w.resources.memory_request = Quantity::parse("1024Mi");
  w.resources.extra = {{"example.com/fpga", Quantity::parse("1")}};
  w.replicas.workers = 3;
  w.backoff_limit = 4;
  w.ttl_seconds_after_finished = 3600;
  w.restart_policy = RestartPolicy::OnFailure;
  w.node_selector = {{"disktype", "ssd"}};
  w.required_node_affinity = {{"kubernetes.io/hostname", NodeSelectorOperator::In, {"node-1", "node-2"}},
                              {"gpu", NodeSelectorOperator::Exists, {}}};
  w.volumes = {Volume{"datasets", NfsSource{"10.0.0.5", "/exports/datasets", true}},
               Volume{"scratch", EmptyDirSource{false, Quantity::parse("10Gi")}},
               Volume{"cache", HostPathSource{"/var/cache/jobs", HostPathType::DirectoryOrCreate}}};
  w.mounts = {VolumeMount{"datasets", "/datasets", "", true}, VolumeMount{"scratch", "/scratch", "", false},
              VolumeMount{"cache", "/cache", "preprocess", false}};
  w.priority_class_name = "low-priority";
  w.image_pull_secrets = {"regcred"};
  w.labels = {{"team", "vision"}};
  w.annotations = {{"example.com/note", "true"}};
  w.host_network = true;
  return w;
}

Workload pod() {
  Workload w;
  w.name = "debug-shell";
  w.kind = WorkloadKind::Pod;
  w.image = "ubuntu-pytorch:1.5.0";
  w.command = {"sleep", "infinity"};
  w.resources.gpus = 1;
  w.tolerations = {Toleration::all()};
  w.host_ipc = false;
  return w;
}

struct Case {
  std::string name;
  std::string profile;
  std::function<Workload()> build;
};

const Case kCases[] = {
    {"mpijob_v1_seed", "generic", seed_mpi},
    {"mpijob_v2beta1", "generic", mpi_v2},
    {"tfjob_iiis", "iiis", tfjob},
    {"pytorchjob_iiis", "iiis", pytorchjob},
    {"deployment_iiis", "iiis", deployment},
    {"job_generic", "generic", job},
    {"pod_iiis", "iiis", pod},
};

}  // namespace

TEST_CASE("golden manifests: every kind renders exactly as reviewed") {
  for (const auto& c : kCases) {
    CAPTURE(c.name);
    Submission s = render(c.build(), Profile::builtin(c.profile));
    compare_golden(c.name + ".yaml", to_yaml(s.objects));
  }
}

TEST_CASE("golden manifests: the seed job as JSON (a v1 List)") {
  Submission s = render(seed_mpi(), Profile::builtin("generic"));
  compare_golden("mpijob_v1_seed.json", to_json(s.objects));
}

TEST_CASE("golden manifests read back into the same objects, from YAML and from JSON") {
  for (const auto& c : kCases) {
    CAPTURE(c.name);
    Submission s = render(c.build(), Profile::builtin(c.profile));
    CHECK(parse_manifests(to_yaml(s.objects)) == s.objects);
    CHECK(parse_manifests(to_json(s.objects)) == s.objects);
    CHECK(parse_manifests(read_file(golden_path(c.name + ".yaml")), c.name) == s.objects);
  }
}
