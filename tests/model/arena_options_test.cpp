// Arena's submit flags as SubmitOptions: what each sets in the Workload, and what each refuses
// (one ValidationError naming the flag).
#include "gpupool/error.hpp"
#include "gpupool/submit_options.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace gpupool;

namespace {

SubmitOptions opts(const std::string& kind) {
  SubmitOptions o;
  o.kind = kind;
  o.name = "arena";
  o.image = "busybox:1.36";
  o.command = "python train.py";
  return o;
}

/// The error to_workload raises for the options (field "" and rule "" when it accepts them).
ValidationError refusal(const SubmitOptions& o) {
  try {
    (void)to_workload(o);
  } catch (const ValidationError& e) {
    return e;
  }
  return ValidationError("", "", "");
}

/// The flag (field) to_workload names when it refuses the options, or "" when it accepts them.
std::string refused_flag(const SubmitOptions& o) { return refusal(o).field(); }
std::string refusal_rule(const SubmitOptions& o) { return refusal(o).rule(); }

struct TempFile {
  std::filesystem::path path;
  TempFile(const std::string& name, const std::string& content)
      : path(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    std::ofstream(path) << content;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("--annotation, --label, --image-pull-secret and --image-pull-policy fill the workload") {
  auto o = opts("job");
  o.annotations = {"team=vision", "note=a=b"};
  o.labels = {"project=resnet"};
  o.image_pull_secrets = {"harbor-cred"};
  o.image_pull_policy = "IfNotPresent";
  Workload w = to_workload(o);
  CHECK(w.annotations.at("team") == "vision");
  CHECK(w.annotations.at("note") == "a=b");  // the first '=' splits, as Arena's transformSliceToMap
  CHECK(w.labels.at("project") == "resnet");
  CHECK(w.image_pull_secrets == std::vector<std::string>{"harbor-cred"});
  CHECK(w.image_pull_policy == "IfNotPresent");

  struct Case {
    void (*set)(SubmitOptions&);
    const char* flag;
  };
  const Case refusals[] = {
      {[](SubmitOptions& x) { x.labels = {"no-equals"}; }, "--label[0]"},
      {[](SubmitOptions& x) { x.labels = {"bad key!=x"}; }, "--label"},
      {[](SubmitOptions& x) { x.annotations = {"=x"}; }, "--annotation[0]"},
      {[](SubmitOptions& x) { x.image_pull_secrets = {"Not_A_Name"}; }, "--image-pull-secret[0]"},
      {[](SubmitOptions& x) { x.image_pull_policy = "Sometimes"; }, "--image-pull-policy"},
  };
  for (const auto& c : refusals) {
    auto bad = opts("job");
    c.set(bad);
    CAPTURE(c.flag);
    CHECK(refused_flag(bad) == c.flag);
  }
  auto bad = opts("job");
  bad.image_pull_policy = "Sometimes";
  CHECK(refusal_rule(bad).find("IfNotPresent") != std::string::npos);
}

TEST_CASE("--retry, --running-timeout, --ttl-after-finished, --clean-task-policy per kind") {
  auto o = opts("tf");
  o.retry = 3;
  o.running_timeout = "2h22m";
  o.ttl_after_finished = "1m30s";
  o.clean_task_policy = "All";
  Workload w = to_workload(o);
  CHECK(w.backoff_limit == 3);
  CHECK(w.active_deadline_seconds == 2 * 3600 + 22 * 60);
  CHECK(w.ttl_seconds_after_finished == 90);
  CHECK(w.clean_pod_policy == CleanPodPolicy::All);

  auto pod = opts("pod");
  pod.running_timeout = "10m";
  CHECK(to_workload(pod).active_deadline_seconds == 600);

  auto job = opts("job");
  job.retry = 0;
  job.running_timeout = "1.5h";  // Go durations: fractions too
  CHECK(to_workload(job).backoff_limit == 0);
  CHECK(to_workload(job).active_deadline_seconds == 5400);

  struct Case {
    const char* kind;
    void (*set)(SubmitOptions&);
    const char* flag;
  };
  const Case refusals[] = {
      {"deployment", [](SubmitOptions& x) { x.retry = 1; }, "--retry"},
      {"pod", [](SubmitOptions& x) { x.retry = 1; }, "--retry"},
      {"deployment", [](SubmitOptions& x) { x.running_timeout = "1h"; }, "--running-timeout"},
      {"pod", [](SubmitOptions& x) { x.ttl_after_finished = "1h"; }, "--ttl-after-finished"},
      {"deployment", [](SubmitOptions& x) { x.ttl_after_finished = "1h"; }, "--ttl-after-finished"},
      {"job", [](SubmitOptions& x) { x.clean_task_policy = "All"; }, "--clean-task-policy"},
      {"pod", [](SubmitOptions& x) { x.clean_task_policy = "All"; }, "--clean-task-policy"},
      {"mpi", [](SubmitOptions& x) { x.clean_task_policy = "Sometimes"; }, "--clean-task-policy"},
      {"job", [](SubmitOptions& x) { x.running_timeout = "soon"; }, "--running-timeout"},
      {"job", [](SubmitOptions& x) { x.running_timeout = "500ms"; }, "--running-timeout"},
      {"job", [](SubmitOptions& x) { x.ttl_after_finished = "0s"; }, "--ttl-after-finished"},
      {"job", [](SubmitOptions& x) { x.retry = -2; }, "--retry"},
  };
  for (const auto& c : refusals) {
    auto x = opts(c.kind);
    c.set(x);
    CAPTURE(c.kind);
    CAPTURE(c.flag);
    CHECK(refused_flag(x) == c.flag);
  }
  // The reason names the flag and says what to do instead.
  auto d = opts("deployment");
  d.retry = 2;
  CHECK(refusal_rule(d) == option_refusal(WorkloadKind::Deployment, "--retry"));
  CHECK(refusal_rule(d).find("--retry") != std::string::npos);
}

TEST_CASE("--shell runs the command string in that shell; not with an argv") {
  auto o = opts("job");
  o.shell = "bash";
  Workload w = to_workload(o);
  CHECK(w.shell_program == "bash");
  CHECK(to_workload(opts("job")).shell_program == "sh");  // Arena's default

  auto argv = opts("job");
  argv.command.clear();
  argv.argv = {"python", "train.py"};
  argv.shell = "bash";
  CHECK(refused_flag(argv) == "--shell");
  auto spaced = opts("job");
  spaced.shell = "bash -e";
  CHECK(refused_flag(spaced) == "--shell");
}

TEST_CASE("--tensorboard-image needs --tensorboard") {
  auto o = opts("job");
  o.tensorboard_image = "tensorflow/tensorflow:2.15.0";
  CHECK(refused_flag(o) == "--tensorboard-image");
  o.tensorboard = true;
  CHECK(to_workload(o).tensorboard.image == "tensorflow/tensorflow:2.15.0");
}

TEST_CASE("--sync-mode, --sync-source, --sync-image") {
  auto o = opts("pytorch");
  o.sync_mode = "git";
  o.sync_source = "https://github.com/kubeflow/arena.git";
  Workload w = to_workload(o);
  REQUIRE(w.code_sync);
  CHECK(w.code_sync->mode == "git");
  CHECK(w.code_sync->source == "https://github.com/kubeflow/arena.git");
  CHECK(w.code_sync->image.empty());

  auto no_source = opts("job");
  no_source.sync_mode = "rsync";
  CHECK(refused_flag(no_source) == "--sync-source");
  auto bad_mode = opts("job");
  bad_mode.sync_mode = "hdfs";
  bad_mode.sync_source = "x";
  CHECK(refused_flag(bad_mode) == "--sync-mode");
  auto no_mode = opts("job");
  no_mode.sync_image = "alpine/git:2.43.0";
  CHECK(refused_flag(no_mode) == "--sync-image");
  auto bad_image = opts("job");
  bad_image.sync_mode = "git";
  bad_image.sync_source = "https://example.com/a.git";
  bad_image.sync_image = "alpine git";
  CHECK(refused_flag(bad_image) == "--sync-image");
}

TEST_CASE("--config-file reads the host file; the container path defaults to the host's") {
  TempFile f("gpupool-arena-config", "lr: 0.1\n");
  auto o = opts("job");
  o.config_files = {f.path.string() + ":/etc/train/train.yaml", f.path.string()};
  Workload w = to_workload(o);
  REQUIRE(w.config_files.size() == 2);
  CHECK(w.config_files[0].path == "/etc/train/train.yaml");
  CHECK(w.config_files[0].content == "lr: 0.1\n");
  CHECK(w.config_files[1].path == f.path.string());

  auto missing = opts("job");
  missing.config_files = {"/nonexistent/gpupool-config.yaml:/etc/x"};
  CHECK(refused_flag(missing) == "--config-file[0]");
  auto relative = opts("job");
  relative.config_files = {f.path.string() + ":etc/x"};
  CHECK(refused_flag(relative) == "--config-file[0]");
  auto twice = opts("job");
  twice.config_files = {f.path.string() + ":/etc/x", f.path.string() + ":/etc/x"};
  CHECK(refused_flag(twice) == "--config-file");
}

TEST_CASE("TF's --ps-image, --worker-image, --evaluator, --chief; refused for other kinds") {
  auto o = opts("tf");
  o.ps = 2;
  o.chief = true;
  o.evaluator = true;
  o.ps_image = "tensorflow/tensorflow:2.15.0";
  o.worker_image = "tensorflow/tensorflow:2.15.0-gpu";
  Workload w = to_workload(o);
  CHECK(w.replicas.ps == 2);
  CHECK(w.replicas.chief == 1);
  CHECK(w.replicas.evaluator == 1);
  CHECK(w.ps_image == "tensorflow/tensorflow:2.15.0");
  CHECK(w.worker_image == "tensorflow/tensorflow:2.15.0-gpu");
  const auto names = derived_replica_names(w);
  CHECK(std::find(names.begin(), names.end(), "arena-evaluator-0") != names.end());

  for (const char* kind : {"pytorch", "mpi", "job", "deployment", "pod"}) {
    CAPTURE(kind);
    auto x = opts(kind);
    x.evaluator = true;
    CHECK(refused_flag(x) == "--evaluator");
    x = opts(kind);
    x.ps_image = "busybox:1.36";
    CHECK(refused_flag(x) == "--ps-image");
    x = opts(kind);
    x.worker_image = "busybox:1.36";
    CHECK(refused_flag(x) == "--worker-image");
    x = opts(kind);
    x.ps = 1;
    CHECK(refused_flag(x) == "--ps");
    x = opts(kind);
    x.chief = true;
    CHECK(refused_flag(x) == "--chief");
  }
}

TEST_CASE("pytorch --workers counts the master, as Arena does") {
  auto o = opts("pytorch");
  o.workers = 3;
  Workload w = to_workload(o);
  CHECK(w.replicas.master == 1);
  CHECK(w.replicas.workers == 2);
  o.workers = 1;
  CHECK(to_workload(o).replicas.workers == 0);  // the master alone
  o.workers = 0;
  CHECK(refused_flag(o) == "--workers");
  // Other kinds keep --workers as the worker count.
  auto mpi = opts("mpi");
  mpi.workers = 3;
  CHECK(to_workload(mpi).replicas.workers == 3);
  auto pod = opts("pod");
  pod.workers = 2;
  CHECK(refused_flag(pod) == "--workers");
}

TEST_CASE("--device adds extra resources; a bad name or count names the flag") {
  auto o = opts("job");
  o.devices = {"amd.com/gpu=1", "example.com/fpga=2"};
  Workload w = to_workload(o);
  CHECK(w.resources.extra.at("amd.com/gpu").value() == 1);
  CHECK(w.resources.extra.at("example.com/fpga").value() == 2);

  auto bad = opts("job");
  bad.devices = {"amd.com/gpu"};
  CHECK(refused_flag(bad) == "--device[0]");
  bad.devices = {"amd.com/gpu=lots"};
  CHECK(refused_flag(bad) == "--device[0]");
  bad.devices = {"amd.com/gpu=0.5"};  // extended resources are whole units
  CHECK(refused_flag(bad) == "--device");
  bad.devices = {"cpu=2"};
  CHECK(refused_flag(bad) == "--device");
}

TEST_CASE("option_refusal: empty where a flag applies, a sentence naming it where not") {
  CHECK(option_refusal(WorkloadKind::TFJob, "--ps").empty());
  CHECK(option_refusal(WorkloadKind::PyTorchJob, "--clean-task-policy").empty());
  CHECK(option_refusal(WorkloadKind::Pod, "--running-timeout").empty());
  CHECK(option_refusal(WorkloadKind::Job, "--label").empty());
  const std::string why = option_refusal(WorkloadKind::PyTorchJob, "--ps");
  CHECK(why.rfind("--ps ", 0) == 0);
  CHECK(why.find('\n') == std::string::npos);
  CHECK(option_refusal(WorkloadKind::Job, "--mpi-api").find("--mpi-api") != std::string::npos);
}

TEST_CASE("one table: a refusal names the option, the kinds it applies to and the fix, in one line") {
  // Kinds an option applies to: no refusal; others: the flag first, the kinds, and what to type.
  const std::string ps = option_refusal(WorkloadKind::PyTorchJob, "--ps-cpu");
  CHECK(ps == "--ps-cpu applies to a TFJob only (submit tf): a PyTorchJob has no PS replicas; use --cpu");
  CHECK(option_refusal(WorkloadKind::PyTorchJob, "--ps-cpu", OptionNames::Keyword) ==
        "ps_cpu applies to a TFJob only (kind=\"tf\"): a PyTorchJob has no PS replicas; use cpu");
  CHECK(option_refusal(WorkloadKind::Deployment, "--retry") ==
        "--retry applies to a Job, MPIJob, TFJob, PyTorchJob or JobSet only (submit job|mpi|tf|pytorch|jobset): "
        "a Deployment has no backoffLimit of its own");
  CHECK(option_refusal(WorkloadKind::Job, "--worker-selector", OptionNames::Keyword).rfind("worker_selectors ", 0) ==
        0);
  for (const char* flag : {"--worker-cpu", "--ps-memory-limit", "--ps-gpus", "--chief-port", "--evaluator-selector"}) {
    CAPTURE(flag);
    CHECK(option_refusal(WorkloadKind::TFJob, flag).empty());
    for (WorkloadKind k : {WorkloadKind::MPIJob, WorkloadKind::PyTorchJob, WorkloadKind::Job, WorkloadKind::Pod}) {
      const std::string why = option_refusal(k, flag);
      CHECK(why.rfind(std::string(flag) + " applies to a TFJob only (submit tf)", 0) == 0);
      CHECK(why.find('\n') == std::string::npos);
    }
  }
  // The same table refuses at to_workload, the value as typed.
  auto pt = opts("pytorch");
  pt.ps_gpus = 1;
  const ValidationError e = refusal(pt);
  CHECK(e.field() == "--ps-gpus");
  CHECK(e.value() == "1");
  CHECK(e.rule() == option_refusal(WorkloadKind::PyTorchJob, "--ps-gpus"));
  // Keyword names for Python: plural for repeatable flags.
  CHECK(option_keyword("--data-dir") == "data_dirs");
  CHECK(option_keyword("--chief-selector") == "chief_selectors");
  CHECK(option_keyword("--ps-cpu-limit") == "ps_cpu_limit");
}

TEST_CASE("TF's per-role flags: each role's resources, GPUs, port and nodeSelector") {
  auto o = opts("tf");
  o.workers = 2;
  o.ps = 1;
  o.chief = true;
  o.evaluator = true;
  o.cpu = "1";
  o.selectors = {"pool=any"};
  o.worker_cpu = "4";
  o.worker_memory = "8Gi";
  o.worker_memory_limit = "16Gi";
  o.worker_port = 2223;
  o.worker_selectors = {"pool=gpu"};
  o.ps_cpu = "2";
  o.ps_cpu_limit = "3";
  o.ps_gpus = 1;
  o.ps_port = 2224;
  o.ps_selectors = {"pool=cpu", "zone=a"};
  o.chief_memory = "4Gi";
  o.chief_port = 2225;
  o.chief_selectors = {"pool=chief"};
  o.evaluator_cpu = "500m";
  o.evaluator_selectors = {"pool=eval"};
  Workload w = to_workload(o);
  const RoleSettings& worker = w.role_settings.at("Worker");
  CHECK(worker.cpu_request->to_string() == "4");
  CHECK(worker.cpu_limit->to_string() == "4");  // the chart's limit: the request when no -limit flag
  CHECK(worker.memory_request->to_string() == "8Gi");
  CHECK(worker.memory_limit->to_string() == "16Gi");
  CHECK(worker.port == 2223);
  CHECK(worker.node_selector == std::map<std::string, std::string>{{"pool", "gpu"}});
  const RoleSettings& ps = w.role_settings.at("PS");
  CHECK(ps.cpu_limit->to_string() == "3");
  CHECK(ps.gpus == 1);
  CHECK(ps.node_selector.size() == 2);
  CHECK(w.role_settings.at("Chief").memory_limit->to_string() == "4Gi");
  CHECK(w.role_settings.at("Chief").port == 2225);
  CHECK(w.role_settings.at("Evaluator").cpu_request->to_string() == "500m");
  // The workload's own settings stay for what no role flag overrides.
  CHECK(w.node_selector.at("pool") == "any");
  CHECK(resources_of(w, "Chief").cpu_request->to_string() == "1");
  CHECK(resources_of(w, "PS").gpus == 1);
  CHECK(resources_of(w, "Worker").cpu_request->to_string() == "4");

  // A role's flag without the role: refused, naming what to add.
  struct Case {
    void (*set)(SubmitOptions&);
    const char* flag;
    const char* needs;
  };
  const Case refusals[] = {
      {[](SubmitOptions& x) { x.ps_memory = "1Gi"; }, "--ps-memory", "--ps N"},
      {[](SubmitOptions& x) { x.chief_cpu = "1"; }, "--chief-cpu", "--chief"},
      {[](SubmitOptions& x) { x.evaluator_selectors = {"a=b"}; }, "--evaluator-selector", "--evaluator"},
      {[](SubmitOptions& x) {
         x.workers = 0;
         x.chief = true;
         x.worker_port = 2222;
       },
       "--worker-port", "--workers N"},
  };
  for (const auto& c : refusals) {
    auto x = opts("tf");
    c.set(x);
    CAPTURE(c.flag);
    const ValidationError e = refusal(x);
    CHECK(e.field() == c.flag);
    CHECK(e.rule().find(c.needs) != std::string::npos);
  }
  // Bad values name the flag.
  auto bad = opts("tf");
  bad.worker_cpu = "lots";
  CHECK(refused_flag(bad) == "--worker-cpu");
  bad = opts("tf");
  bad.ps = 1;
  bad.ps_port = 70000;
  CHECK(refused_flag(bad) == "--ps-port");
  bad = opts("tf");
  bad.worker_selectors = {"nolabel"};
  CHECK(refused_flag(bad) == "--worker-selector[0]");
  bad = opts("tf");
  bad.worker_cpu = "2";
  bad.worker_cpu_limit = "1";  // request over limit, as the API server says it
  CHECK(refused_flag(bad) == "--worker-cpu");
  CHECK(refusal_rule(bad).find("must be less than or equal to cpu limit") != std::string::npos);
}

TEST_CASE("Arena's default --clean-task-policy: Running for tf, as given otherwise") {
  CHECK(to_workload(opts("tf")).clean_pod_policy == CleanPodPolicy::Running);
  // PyTorchJob: the operator's default (the workers' pods and logs stay); MPIJob: Arena's All is
  // for its chart's v1alpha1 MPIJob, render() keeps Running.
  CHECK_FALSE(to_workload(opts("pytorch")).clean_pod_policy.has_value());
  CHECK_FALSE(to_workload(opts("mpi")).clean_pod_policy.has_value());
  CHECK_FALSE(to_workload(opts("job")).clean_pod_policy.has_value());
  auto none = opts("tf");
  none.clean_task_policy = "None";
  CHECK(to_workload(none).clean_pod_policy == CleanPodPolicy::None);
}

TEST_CASE("Arena's labels app and release on a TFJob and a PyTorchJob, for `arena list`; --label wins") {
  const Workload tf = to_workload(opts("tf"));
  CHECK(tf.labels.at("app") == "tfjob");
  CHECK(tf.labels.at("release") == "arena");
  CHECK(to_workload(opts("pytorch")).labels.at("app") == "pytorchjob");
  for (const char* kind : {"mpi", "job", "pod", "deployment", "trainjob", "jobset"}) {
    CAPTURE(kind);
    CHECK(to_workload(opts(kind)).labels.empty());
  }
  auto mine = opts("tf");
  mine.labels = {"app=resnet"};
  CHECK(to_workload(mine).labels.at("app") == "resnet");
}

TEST_CASE("--share-memory: Arena's /dev/shm for tf and pytorch, the same field as --shm") {
  for (const char* kind : {"tf", "pytorch"}) {
    CAPTURE(kind);
    auto o = opts(kind);
    o.share_memory = "2Gi";
    const Workload w = to_workload(o);
    REQUIRE(w.shm_size);
    CHECK(w.shm_size->to_string() == "2Gi");
  }
  auto both = opts("tf");
  both.share_memory = "2Gi";
  both.shm = "4Gi";
  CHECK(refused_flag(both) == "--share-memory");
  CHECK(refusal_rule(both).find("--shm") != std::string::npos);
  auto bad = opts("pytorch");
  bad.share_memory = "two";
  CHECK(refused_flag(bad) == "--share-memory");
  auto mpi = opts("mpi");
  mpi.share_memory = "2Gi";
  CHECK(refusal_rule(mpi) == option_refusal(WorkloadKind::MPIJob, "--share-memory"));
  CHECK(refusal_rule(mpi).find("use --shm") != std::string::npos);
}

TEST_CASE("--nproc-per-node: PET_NPROC_PER_NODE in a PyTorchJob, over an --env of that name") {
  for (const char* n : {"auto", "cpu", "gpu", "4"}) {
    CAPTURE(n);
    auto o = opts("pytorch");
    o.env = {"PET_NPROC_PER_NODE=1", "A=b"};
    o.nproc_per_node = n;
    const Workload w = to_workload(o);
    CHECK(std::count_if(w.env.begin(), w.env.end(), [](const EnvVar& e) { return e.name == "PET_NPROC_PER_NODE"; }) ==
          1);
    CHECK(w.env.back() == EnvVar{"PET_NPROC_PER_NODE", n, ""});
  }
  for (const char* bad : {"0", "-1", "many", "4x"}) {
    CAPTURE(bad);
    auto o = opts("pytorch");
    o.nproc_per_node = bad;
    CHECK(refused_flag(o) == "--nproc-per-node");
  }
  auto tf = opts("tf");
  tf.nproc_per_node = "2";
  CHECK(refusal_rule(tf).rfind("--nproc-per-node applies to a PyTorchJob only (submit pytorch)", 0) == 0);
}

TEST_CASE("--mounts-on-launcher: an MPIJob's only; the launcher has the data mounts") {
  auto o = opts("mpi");
  o.mounts_on_launcher = true;
  o.data = {"train-data:/data"};
  const Workload w = to_workload(o);
  CHECK(w.mounts.size() == 1);
  auto tf = opts("tf");
  tf.mounts_on_launcher = true;
  CHECK(refusal_rule(tf) == "--mounts-on-launcher applies to an MPIJob only (submit mpi): a TFJob has no launcher");
}

TEST_CASE("--success-policy: a TFJob's spec.successPolicy, ChiefWorker being the operator's empty default") {
  auto o = opts("tf");
  o.success_policy = "AllWorkers";
  CHECK(to_workload(o).success_policy == "AllWorkers");
  o.success_policy = "ChiefWorker";
  CHECK(to_workload(o).success_policy.empty());
  o.success_policy = "allworkers";
  CHECK(refused_flag(o) == "--success-policy");
  CHECK(refusal_rule(o).find("AllWorkers") != std::string::npos);
  auto pt = opts("pytorch");
  pt.success_policy = "AllWorkers";
  CHECK(refusal_rule(pt) == option_refusal(WorkloadKind::PyTorchJob, "--success-policy"));
  // The Workload check keeps the field to a TFJob and to the operator's values.
  Workload w = to_workload(opts("pytorch"));
  w.success_policy = "AllWorkers";
  CHECK_THROWS_AS(validate(w), ValidationError);
}

TEST_CASE("Arena flags a plain cluster cannot honour: refused for every kind, saying what is missing") {
  struct Case {
    void (*set)(SubmitOptions&);
    const char* flag;
    const char* missing;
  };
  const Case cases[] = {
      {[](SubmitOptions& o) { o.role_sequence = "w,p"; }, "--role-sequence", "only ACK's training operator"},
      {[](SubmitOptions& o) { o.starting_timeout = "5m"; }, "--starting-timeout", "startingDeadlineSeconds"},
      {[](SubmitOptions& o) { o.gputopology = true; }, "--gputopology", "gpu-topology scheduler"},
      {[](SubmitOptions& o) { o.rdma = true; }, "--rdma", "RDMA device plugin"},
      {[](SubmitOptions& o) { o.model_name = "m"; }, "--model-name", "model registry"},
      {[](SubmitOptions& o) { o.model_source = "pvc://ns/p/m"; }, "--model-source", "model registry"},
  };
  for (const Case& c : cases)
    for (const char* kind : {"tf", "pytorch", "mpi", "job"}) {
      CAPTURE(c.flag);
      CAPTURE(kind);
      auto o = opts(kind);
      c.set(o);
      const ValidationError e = refusal(o);
      CHECK(e.field() == c.flag);
      CHECK(e.rule().rfind(std::string(c.flag) + " is not supported: ", 0) == 0);
      CHECK(e.rule().find(c.missing) != std::string::npos);
      CHECK(e.rule() == option_refusal(parse_workload_kind(kind), c.flag));
    }
  CHECK(option_refusal(WorkloadKind::TFJob, "--rdma", OptionNames::Keyword).rfind("rdma is not supported: ", 0) == 0);
}

TEST_CASE("--worker/--ps-affinity-policy and -constraint: the role's placement, checked") {
  auto o = opts("tf");
  o.workers = 2;
  o.ps = 1;
  o.worker_affinity_policy = "spread";
  o.worker_affinity_constraint = "required";
  o.ps_affinity_policy = "binpack";
  Workload w = to_workload(o);
  CHECK(w.role_settings.at("Worker").affinity_policy == "spread");
  CHECK(w.role_settings.at("Worker").affinity_required);
  CHECK(w.role_settings.at("PS").affinity_policy == "binpack");
  CHECK_FALSE(w.role_settings.at("PS").affinity_required);  // Arena's default constraint: preferred
  o.ps_affinity_policy = "none";                            // Arena's default: nothing
  CHECK(to_workload(o).role_settings.count("PS") == 1);
  CHECK(to_workload(o).role_settings.at("PS").affinity_policy.empty());

  auto bad = opts("tf");
  bad.worker_affinity_policy = "pack";
  CHECK(refused_flag(bad) == "--worker-affinity-policy");
  bad = opts("tf");
  bad.worker_affinity_policy = "spread";
  bad.worker_affinity_constraint = "always";
  CHECK(refused_flag(bad) == "--worker-affinity-constraint");
  bad = opts("tf");
  bad.worker_affinity_constraint = "required";  // without a policy
  CHECK(refused_flag(bad) == "--worker-affinity-constraint");
  CHECK(refusal_rule(bad).find("give it too") != std::string::npos);
  bad = opts("tf");
  bad.ps_affinity_policy = "spread";  // without --ps
  CHECK(refused_flag(bad) == "--ps-affinity-policy");
  CHECK(refusal_rule(bad).find("give --ps N too") != std::string::npos);
  auto pt = opts("pytorch");
  pt.worker_affinity_policy = "spread";
  CHECK(refusal_rule(pt) == option_refusal(WorkloadKind::PyTorchJob, "--worker-affinity-policy"));
}
