#include "gpupool/submit_options.hpp"
#include "gpupool/error.hpp"

#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

using namespace gpupool;

namespace {
SubmitOptions seed_mpi() {
  SubmitOptions o;
  o.kind = "mpi";
  o.name = "mpi-dist";
  o.gpus = 1;
  o.workers = 1;
  o.tolerations = {"ssd_node"};
  o.image = "registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5";
  o.tensorboard = true;
  o.command = "mpirun python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py --model resnet101";
  return o;
}
}  // namespace

TEST_CASE("the seed's arena submit mpi options become an MPIJob workload") {
  Workload w = to_workload(seed_mpi());
  CHECK(w.kind == WorkloadKind::MPIJob);
  CHECK(w.name == "mpi-dist");
  CHECK(w.resources.gpus == 1);
  CHECK(w.replicas.workers == 1);
  REQUIRE(w.tolerations.size() == 1);
  CHECK(w.tolerations[0].key == "ssd_node");
  CHECK(w.tolerations[0].op == TolerationOperator::Exists);
  CHECK_FALSE(w.tolerations[0].effect.has_value());
  CHECK(w.tensorboard.enabled);
  CHECK(w.shell == seed_mpi().command);
  CHECK(w.command.empty());
}

TEST_CASE("repeated tolerations accumulate, and 'all' tolerates everything") {
  auto o = seed_mpi();
  o.tolerations = {"ssd_node", "gpu_node"};
  auto w = to_workload(o);
  REQUIRE(w.tolerations.size() == 2);
  CHECK(w.tolerations[1].key == "gpu_node");
  o.tolerations = {"all"};
  w = to_workload(o);
  REQUIRE(w.tolerations.size() == 1);
  CHECK(w.tolerations[0] == Toleration::all());
}

TEST_CASE("storage options become volumes and mounts") {
  auto o = seed_mpi();
  o.data = {"my-pvc:/data", "other:/ro-data:ro"};
  o.data_dirs = {"/data2:/mnt/data2"};
  o.pvc_create = {"results:nfs-client:10Gi:/results", "cache:cephfs:1Ti"};
  auto w = to_workload(o);
  REQUIRE(w.volumes.size() == 4);
  REQUIRE(w.mounts.size() == 4);
  CHECK(std::get<PvcSource>(w.volumes[0].source).claim_name == "my-pvc");
  CHECK(w.mounts[0].mount_path == "/data");
  CHECK_FALSE(w.mounts[0].read_only);
  CHECK(w.mounts[1].read_only);
  CHECK(std::get<PvcSource>(w.volumes[1].source).read_only);
  CHECK(std::get<HostPathSource>(w.volumes[2].source).path == "/data2");
  CHECK(w.mounts[2].mount_path == "/mnt/data2");
  REQUIRE(w.pvcs.size() == 2);
  CHECK(w.pvcs[0].storage_class == "nfs-client");
  CHECK(w.pvcs[0].size == Quantity::parse("10Gi"));
  CHECK(w.pvcs[1].size == Quantity::parse("1Ti"));
  CHECK(w.mounts[3].mount_path == "/results");
}

TEST_CASE("env, selectors, resources, staging") {
  auto o = seed_mpi();
  o.env = {"A=1", "B=x=y"};
  o.selectors = {"gpu=v100"};
  o.cpu = "500m";
  o.memory = "16Gi";
  o.stage_in = {"/pvc/data:/mnt/data1/job"};
  o.stage_out = "/mnt/data1/job/out:/pvc/results";
  auto w = to_workload(o);
  REQUIRE(w.env.size() == 2);
  CHECK(w.env[1].name == "B");
  CHECK(w.env[1].value == "x=y");
  CHECK(w.node_selector.at("gpu") == "v100");
  CHECK(w.resources.cpu_request == Quantity::parse("0.5"));
  CHECK(w.resources.memory_request == Quantity::parse("16384Mi"));
  REQUIRE(w.staging.has_value());
  REQUIRE(w.staging->inputs.size() == 1);
  CHECK(w.staging->inputs[0].source == "/pvc/data");
  CHECK(w.staging->inputs[0].cache == "/mnt/data1/job");
  CHECK(w.staging->grace_period_seconds == kDefaultStageOutGraceSeconds);
  CHECK(w.staging->results_target == "/pvc/results");
}

TEST_CASE("bad options name the flag") {
  struct Row {
    const char* what;
    void (*mutate)(SubmitOptions&);
    const char* field;
  };
  const std::vector<Row> rows = {
      {"no name", [](SubmitOptions& o) { o.name.clear(); }, "--name"},
      {"no image", [](SubmitOptions& o) { o.image.clear(); }, "--image"},
      {"malformed toleration",
       [](SubmitOptions& o) {
         o.tolerations = {"ssd_node", "a=b:Sometimes"};
       },
       "--toleration"},
      {"data without path", [](SubmitOptions& o) { o.data = {"pvc-only"}; }, "--data[0]"},
      {"data with bad mode", [](SubmitOptions& o) { o.data = {"pvc:/x:rx"}; }, "--data[0]"},
      {"relative host dir", [](SubmitOptions& o) { o.data_dirs = {"data:/mnt"}; }, "--data-dir[0]"},
      {"pvc-create missing size", [](SubmitOptions& o) { o.pvc_create = {"a:nfs"}; }, "--pvc-create[0]"},
      {"pvc-create bad size", [](SubmitOptions& o) { o.pvc_create = {"a:nfs:lots"}; }, "--pvc-create[0]"},
      {"env without =",
       [](SubmitOptions& o) {
         o.env = {"A=1", "JUSTKEY"};
       },
       "--env[1]"},
      {"selector without key", [](SubmitOptions& o) { o.selectors = {"=v"}; }, "--selector[0]"},
      {"bad cpu", [](SubmitOptions& o) { o.cpu = "two"; }, "--cpu"},
      {"negative memory", [](SubmitOptions& o) { o.memory = "-1Gi"; }, "--memory"},
      {"negative gpus", [](SubmitOptions& o) { o.gpus = -1; }, "--gpus"},
      {"unknown mpi api", [](SubmitOptions& o) { o.mpi_api = "v3"; }, "--mpi-api"},
      {"both command forms",
       [](SubmitOptions& o) {
         o.argv = {"python", "x.py"};
       },
       "command"},
      {"bad stage-in",
       [](SubmitOptions& o) {
         o.stage_in = {"/a:/b", "/only-one"};
       },
       "--stage-in[1]"},
      {"relative stage-in cache",
       [](SubmitOptions& o) {
         o.stage_in = {"/a:/b", "/c:d"};
       },
       "--stage-in[1]"},
      {"relative stage-out target", [](SubmitOptions& o) { o.stage_out = "/ssd/out:pvc/out"; }, "--stage-out"},
      {"stage-out without target", [](SubmitOptions& o) { o.stage_out = "/ssd/out"; }, "--stage-out"},
      {"grace without stage-out", [](SubmitOptions& o) { o.stage_out_grace = 60; }, "--stage-out-grace"},
      {"grace too short",
       [](SubmitOptions& o) {
         o.stage_out = "/ssd/out:/pvc/out";
         o.stage_out_grace = 1;
       },
       "--stage-out-grace"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.what);
    auto o = seed_mpi();
    row.mutate(o);
    try {
      (void)to_workload(o);
      FAIL("accepted: " << row.what);
    } catch (const ValidationError& e) {
      CHECK(std::string(e.field()).rfind(row.field, 0) == 0);
    }
  }
}

TEST_CASE("parse_count and parse_key_value") {
  CHECK(parse_count("3", "--gpus") == 3);
  CHECK(parse_count("0", "--gpus") == 0);
  for (const char* bad : {"", "-1", "1.5", "two", "3x"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_count(bad, "--gpus"), ValidationError);
  }
  CHECK(parse_key_value("a=b", "f") == std::pair<std::string, std::string>{"a", "b"});
  CHECK(parse_key_value("a=", "f") == std::pair<std::string, std::string>{"a", ""});
}

TEST_CASE("staging options: --stage-in is repeatable, --stage-out works alone, --stage-out-grace sets the grace") {
  auto o = seed_mpi();
  o.kind = "job";
  o.stage_in = {"/pvc/a:/mnt/data1/a", "/share/datasets/b:/mnt/data1/b"};
  Workload w = to_workload(o);
  REQUIRE(w.staging.has_value());
  CHECK(w.staging->inputs == std::vector<StageIn>{{"/pvc/a", "/mnt/data1/a"}, {"/share/datasets/b", "/mnt/data1/b"}});
  CHECK(w.staging->results.empty());

  o.stage_in.clear();
  o.stage_out = "/mnt/data1/out:/pvc/out";
  w = to_workload(o);
  REQUIRE(w.staging.has_value());
  CHECK(w.staging->inputs.empty());
  CHECK(w.staging->results == "/mnt/data1/out");
  CHECK(w.staging->results_target == "/pvc/out");
  CHECK(w.staging->grace_period_seconds == kDefaultStageOutGraceSeconds);

  o.stage_out_grace = 900;
  CHECK(to_workload(o).staging->grace_period_seconds == 900);
}

TEST_CASE("with_option_names renames the staging fields a later check names to their flags") {
  struct Row {
    const char* field;
    const char* option;
  };
  const Row rows[] = {
      {"staging.inputs[0].source", "--stage-in[0]"},
      {"staging.inputs[12].cache", "--stage-in[12]"},
      {"staging.results", "--stage-out"},
      {"staging.results_target", "--stage-out"},
      {"staging.grace_period_seconds", "--stage-out-grace"},
      {"ssd", "--ssd"},
      {"spec.containers[0].image", "spec.containers[0].image"},  // not an option's: unchanged
  };
  for (const auto& r : rows) {
    CAPTURE(r.field);
    ValidationError e = with_option_names(ValidationError(r.field, "/pvc/out", "is on the read-only mount /pvc"));
    CHECK(e.field() == r.option);
    CHECK(e.value() == "/pvc/out");
    CHECK(e.rule() == "is on the read-only mount /pvc");
  }
}
