// Arena's submit flags on the command line: listed in --help where they apply, refused in one
// line with exit code 2 where they don't, rendered offline (--dry-run=client), and `top job`.
#include <doctest/doctest.h>

#include "args.hpp"
#include "commands.hpp"
#include "run_cli.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using gpupool::cli::testing::one_line;
using gpupool::cli::testing::Result;
using gpupool::cli::testing::run_cli;
using gpupool::cli::testing::run_shell;

namespace {

Result offline(const std::string& kind, std::vector<std::string> flags) {
  std::vector<std::string> args{"submit",           kind, "--name", "arena", "--image", "busybox:1.36",
                                "--dry-run=client", "-o", "json"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("python train.py");
  return run_cli(args);
}

/// Whether --help has a flag line for the flag ("    --ps N  ..." or "-l, --label K=V  ...").
bool lists(const std::string& help, const std::string& flag) {
  return help.find("   --" + flag + " ") != std::string::npos || help.find(", --" + flag + " ") != std::string::npos;
}

}  // namespace

TEST_CASE("submit --help lists Arena's flags where they apply to the kind") {
  const std::vector<std::string> common{
      "annotation", "label",       "image-pull-secret", "image-pull-policy", "tensorboard-image",
      "shell",      "config-file", "sync-mode",         "sync-source",       "sync-image",
      "device"};
  for (const char* kind : {"mpi", "tf", "pytorch", "job", "deployment", "pod"}) {
    CAPTURE(kind);
    Result h = run_cli({"submit", kind, "--help"});
    REQUIRE(h.code == 0);
    for (const auto& f : common) {
      CAPTURE(f);
      CHECK(lists(h.out, f));
    }
    const std::string k = kind;
    const bool kubeflow = k == "mpi" || k == "tf" || k == "pytorch";
    CHECK(lists(h.out, "retry") == (k != "pod" && k != "deployment"));
    CHECK(lists(h.out, "ttl-after-finished") == (k != "pod" && k != "deployment"));
    CHECK(lists(h.out, "running-timeout") == (k != "deployment"));
    CHECK(lists(h.out, "clean-task-policy") == kubeflow);
    for (const char* tf : {"ps", "ps-image", "worker-image", "evaluator", "chief"})
      CHECK(lists(h.out, tf) == (k == "tf"));
    CHECK(lists(h.out, "mpi-api") == (k == "mpi"));
    // TFJob's per-role flags: in tf's --help only.
    for (const char* tf : {"worker-cpu",
                           "worker-memory-limit",
                           "worker-port",
                           "worker-selector",
                           "ps-cpu",
                           "ps-memory",
                           "ps-gpus",
                           "ps-port",
                           "ps-selector",
                           "chief-cpu",
                           "chief-memory",
                           "chief-port",
                           "chief-selector",
                           "evaluator-cpu",
                           "evaluator-memory-limit",
                           "evaluator-selector",
                           "worker-affinity-policy",
                           "worker-affinity-constraint",
                           "ps-affinity-policy",
                           "ps-affinity-constraint"})
      CHECK(lists(h.out, tf) == (k == "tf"));
    CHECK(lists(h.out, "workers") == (k != "pod"));
    CHECK(lists(h.out, "share-memory") == (k == "tf" || k == "pytorch"));
    CHECK(lists(h.out, "nproc-per-node") == (k == "pytorch"));
    CHECK(lists(h.out, "mounts-on-launcher") == (k == "mpi"));
    CHECK(lists(h.out, "success-policy") == (k == "tf"));
    // Refused for every kind: in no --help.
    for (const char* no : {"role-sequence", "starting-timeout", "gputopology", "rdma", "model-name", "model-source"})
      CHECK_FALSE(lists(h.out, no));
  }
  // pytorch's --workers says it counts the master, as Arena does.
  CHECK(run_cli({"submit", "pytorch", "--help"}).out.find("the master included") != std::string::npos);
}

TEST_CASE("a flag that cannot apply to the kind: one line naming it and why, exit 2") {
  struct Case {
    const char* kind;
    std::vector<std::string> flags;
    const char* flag;
  };
  const Case cases[] = {
      {"pytorch", {"--ps", "1"}, "--ps"},
      {"mpi", {"--evaluator"}, "--evaluator"},
      {"job", {"--ps-image", "busybox:1.36"}, "--ps-image"},
      {"pytorch", {"--worker-image", "busybox:1.36"}, "--worker-image"},
      {"deployment", {"--chief"}, "--chief"},
      {"deployment", {"--retry", "2"}, "--retry"},
      {"pod", {"--ttl-after-finished", "1h"}, "--ttl-after-finished"},
      {"deployment", {"--running-timeout", "1h"}, "--running-timeout"},
      {"job", {"--clean-task-policy", "All"}, "--clean-task-policy"},
      {"tf", {"--mpi-api", "v1"}, "--mpi-api"},
      {"pod", {"--workers", "2"}, "--workers"},
      {"pytorch", {"--worker-cpu", "4"}, "--worker-cpu"},
      {"mpi", {"--ps-gpus", "1"}, "--ps-gpus"},
      {"job", {"--chief-selector", "pool=a"}, "--chief-selector"},
      {"tf", {"--ps-cpu", "2"}, "--ps-cpu"},                        // no --ps: "give --ps N too"
      {"tf", {"--evaluator-memory", "1Gi"}, "--evaluator-memory"},  // no --evaluator
      {"mpi", {"--share-memory", "2Gi"}, "--share-memory"},
      {"pytorch", {"--worker-affinity-policy", "spread"}, "--worker-affinity-policy"},
      {"tf", {"--worker-affinity-constraint", "required"}, "--worker-affinity-constraint"},  // no policy
      {"tf", {"--ps-affinity-policy", "spread"}, "--ps-affinity-policy"},                    // no --ps
      {"tf", {"--nproc-per-node", "2"}, "--nproc-per-node"},
      {"pytorch", {"--mounts-on-launcher"}, "--mounts-on-launcher"},
      {"pytorch", {"--success-policy", "AllWorkers"}, "--success-policy"},
      // Arena flags refused for every kind, saying what is missing.
      {"tf", {"--role-sequence", "w,p"}, "--role-sequence"},
      {"tf", {"--starting-timeout", "5m"}, "--starting-timeout"},
      {"mpi", {"--gputopology"}, "--gputopology"},
      {"pytorch", {"--rdma"}, "--rdma"},
      {"tf", {"--model-name", "resnet"}, "--model-name"},
      {"pytorch", {"--model-source", "pvc://ns/models/resnet"}, "--model-source"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.kind);
    CAPTURE(c.flag);
    Result r = offline(c.kind, c.flags);
    CHECK(r.code == 2);
    CHECK(one_line(r.err));
    CHECK(r.err.find(c.flag) != std::string::npos);
    CHECK(r.out.empty());
  }
  // Bad values: exit 2, the flag named.
  for (const auto& bad : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--image-pull-policy", "Sometimes"}, "--image-pull-policy"},
           {{"--sync-mode", "hdfs", "--sync-source", "x"}, "--sync-mode"},
           {{"--sync-mode", "git"}, "--sync-source"},
           {{"--running-timeout", "soon"}, "--running-timeout"},
           {{"--device", "amd.com/gpu=half"}, "--device"},
           {{"--tensorboard-image", "tensorflow/tensorflow:2.15.0"}, "--tensorboard-image"},
           {{"--config-file", "/nonexistent/gpupool.yaml:/etc/x"}, "--config-file"},
           {{"--label", "nolabel"}, "--label"}}) {
    const std::string& flag = bad.second;  // (no structured binding: CAPTURE is a lambda)
    CAPTURE(flag);
    Result r = offline("job", bad.first);
    CHECK(r.code == 2);
    CHECK(one_line(r.err));
    CHECK(r.err.find(flag) != std::string::npos);
  }
}

TEST_CASE("Arena's flags rendered offline: every one reaches the objects") {
  const auto file = std::filesystem::temp_directory_path() / ("gpupool-arena-cli-" + std::to_string(::getpid()));
  std::ofstream(file) << "batch: 32\n";
  Result tf = offline("tf", {"--workers",
                             "2",
                             "--ps",
                             "1",
                             "--chief",
                             "--evaluator",
                             "--ps-image",
                             "tensorflow/tensorflow:2.15.0",
                             "--worker-image",
                             "tensorflow/tensorflow:2.15.0-gpu",
                             "--annotation",
                             "team=vision",
                             "-l",
                             "project=resnet",
                             "--image-pull-secret",
                             "harbor-cred",
                             "--image-pull-policy",
                             "IfNotPresent",
                             "--retry",
                             "3",
                             "--shell",
                             "bash",
                             "--running-timeout",
                             "2h",
                             "--ttl-after-finished",
                             "30m",
                             "--clean-task-policy",
                             "All",
                             "--config-file",
                             file.string() + ":/etc/train/config.yaml",
                             "--sync-mode",
                             "git",
                             "--sync-source",
                             "https://github.com/kubeflow/arena.git",
                             "--device",
                             "amd.com/gpu=1"});
  std::filesystem::remove(file);
  CAPTURE(tf.err);
  REQUIRE(tf.code == 0);
  for (const char* want :
       {"\"kind\": \"ConfigMap\"", "\"config-0\": \"batch: 32\\n\"", "\"Evaluator\"", "\"Chief\"",
        "\"image\": \"tensorflow/tensorflow:2.15.0\"", "\"image\": \"tensorflow/tensorflow:2.15.0-gpu\"",
        "\"team\": \"vision\"", "\"project\": \"resnet\"", "\"name\": \"harbor-cred\"",
        "\"imagePullPolicy\": \"IfNotPresent\"", "\"backoffLimit\": 3", "\"bash\"", "\"activeDeadlineSeconds\": 7200",
        "\"ttlSecondsAfterFinished\": 1800", "\"cleanPodPolicy\": \"All\"", "\"mountPath\": \"/etc/train/config.yaml\"",
        "\"name\": \"init-code\"", "\"GIT_SYNC_REPO\"", "\"amd.com/gpu\": \"1\""}) {
    CAPTURE(want);
    CHECK(tf.out.find(want) != std::string::npos);
  }
  // TF's per-role flags reach their ReplicaSpec.
  Result roles = offline("tf", {"--ps", "1", "--ps-cpu", "2", "--ps-gpus", "1", "--ps-port", "2224", "--worker-memory",
                                "2Gi", "--worker-selector", "pool=gpu", "--chief", "--chief-port", "2225"});
  CAPTURE(roles.err);
  REQUIRE(roles.code == 0);
  for (const char* want : {"\"containerPort\": 2224", "\"containerPort\": 2225", "\"pool\": \"gpu\"",
                           "\"memory\": \"2Gi\"", "\"cleanPodPolicy\": \"Running\""}) {
    CAPTURE(want);
    CHECK(roles.out.find(want) != std::string::npos);
  }
  // --share-memory / --nproc-per-node (pytorch), --success-policy (tf).
  Result more = offline("pytorch", {"--share-memory", "2Gi", "--nproc-per-node", "auto"});
  CAPTURE(more.err);
  REQUIRE(more.code == 0);
  for (const char* want : {"\"sizeLimit\": \"2Gi\"", "\"mountPath\": \"/dev/shm\"", "\"PET_NPROC_PER_NODE\""}) {
    CAPTURE(want);
    CHECK(more.out.find(want) != std::string::npos);
  }
  Result success = offline("tf", {"--success-policy", "AllWorkers", "--workers", "2", "--worker-affinity-policy",
                                  "spread", "--worker-affinity-constraint", "required"});
  REQUIRE(success.code == 0);
  CHECK(success.out.find("\"successPolicy\": \"AllWorkers\"") != std::string::npos);
  CHECK(success.out.find("\"podAntiAffinity\"") != std::string::npos);
  Result rdma = offline("tf", {"--rdma"});
  CHECK(rdma.code == 2);
  CHECK(rdma.err.find("--rdma is not supported: Arena's RDMA needs ACK's RDMA device plugin") != std::string::npos);
  // pytorch --workers 3: the master and 2 workers.
  Result py = offline("pytorch", {"--workers", "3"});
  REQUIRE(py.code == 0);
  const auto worker = py.out.find("\"Worker\"");
  REQUIRE(worker != std::string::npos);
  CHECK(py.out.find("\"replicas\": 2", worker) != std::string::npos);
}

TEST_CASE("top job: GPUs requested and allocated per job on the embedded cluster") {
  const auto state = std::filesystem::temp_directory_path() / ("gpupool-top-job-" + std::to_string(::getpid()));
  std::filesystem::create_directories(state);
  const std::string gp = "GPUPOOL_STATE_DIR='" + state.string() + "' '" GPUPOOL_CLI "' --embedded seed ";
  REQUIRE(run_shell(gp + "submit mpi --name topjob --gpus 1 --workers 2 --toleration all --image busybox 'sleep 1d'")
              .code == 0);
  REQUIRE(run_shell(gp + "wait topjob --for Running --timeout 1m").code == 0);
  Result top = run_shell(gp + "top job");
  CAPTURE(top.out);
  REQUIRE(top.code == 0);
  CHECK(top.out.rfind("NAME    STATUS   TRAINER  AGE", 0) == 0);
  CHECK(top.out.find("GPU(Requested)  GPU(Allocated)  NODE") != std::string::npos);
  // Two workers of one GPU each: 2 requested, 2 held once both run; the launcher asks none.
  CHECK(top.out.find("topjob  RUNNING  MPIJOB") != std::string::npos);
  CHECK(top.out.find("Total Allocated/Requested GPUs of Training Jobs: 2/2\n") != std::string::npos);
  CHECK(run_shell(gp + "top --help").out.find("top node|job") != std::string::npos);
  CHECK(run_shell(gp + "--help").out.find("top job ") != std::string::npos);
  std::filesystem::remove_all(state);
}
