// How render() applies a profile to a workload, and what it refuses.
#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/render.hpp"
#include "gpupool/submit_options.hpp"
#include "pod_spec.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <functional>
#include <optional>
#include <set>
#include <string>

using namespace gpupool;
using gpupool::testing::container_of;
using gpupool::testing::pod_spec_of;
namespace json = boost::json;

namespace {

Workload job(WorkloadKind kind = WorkloadKind::Job) {
  Workload w;
  w.name = "train";
  w.kind = kind;
  w.image = "ubuntu-pytorch:1.5.0";
  w.command = {"python", "train.py"};
  return w;
}

bool has_env(const json::object& container, std::string_view name) {
  if (!container.contains("env")) return false;
  for (const auto& e : container.at("env").as_array())
    if (e.at("name").as_string() == name) return true;
  return false;
}

const Profile& iiis() {
  static const Profile p = Profile::builtin("iiis");
  return p;
}
const Profile& generic() {
  static const Profile p = Profile::builtin("generic");
  return p;
}

}  // namespace

TEST_CASE("the profile resolves catalog shorthand and refuses unknown tags") {
  Workload w = job();
  CHECK(container_of(pod_spec_of(render(w, iiis()).workload())).at("image") ==
        "harbor.iiis.co/library/ubuntu-pytorch:1.5.0");
  CHECK(container_of(pod_spec_of(render(w, generic()).workload())).at("image") == "ubuntu-pytorch:1.5.0");
  w.image = "ubuntu-pytorch:1.6.0";
  CHECK_THROWS_WITH_AS(render(w, iiis()), doctest::Contains("available tags: 1.5.0"), ValidationError);
}

TEST_CASE("GPUs: the profile's resource name, env and scheduler go to the replicas that compute") {
  struct Row {
    WorkloadKind kind;
    std::string replica;
    bool gets_gpus;
  };
  const Row rows[] = {
      {WorkloadKind::Pod, "", true},
      {WorkloadKind::Deployment, "", true},
      {WorkloadKind::Job, "", true},
      {WorkloadKind::MPIJob, "Launcher", false},
      {WorkloadKind::MPIJob, "Worker", true},
      {WorkloadKind::TFJob, "PS", false},
      {WorkloadKind::TFJob, "Worker", true},
      {WorkloadKind::TFJob, "Chief", true},
      {WorkloadKind::PyTorchJob, "Master", true},
      {WorkloadKind::PyTorchJob, "Worker", true},
  };
  for (const auto& r : rows) {
    CAPTURE(to_string(r.kind));
    CAPTURE(r.replica);
    Workload w = job(r.kind);
    w.resources.gpus = 2;
    if (r.kind == WorkloadKind::TFJob) w.replicas = Replicas{1, 1, 1, 1};
    if (r.kind == WorkloadKind::Deployment) w.restart_policy.reset();
    Submission sub1 = render(w, iiis());
    const json::object& spec = pod_spec_of(sub1.workload(), r.replica);
    const json::object& c = container_of(spec);
    bool has_gpu_limit =
        c.contains("resources") && c.at("resources").at("limits").as_object().contains("virtaitech.com/gpu");
    CHECK(has_gpu_limit == r.gets_gpus);
    CHECK(has_env(c, "ORION_VGPU") == r.gets_gpus);
    if (r.gets_gpus) CHECK(c.at("resources").at("requests").at("virtaitech.com/gpu") == "2");
    // The scheduler is a property of the whole job: every pod of a GPU job uses the GPU scheduler.
    CHECK(spec.at("schedulerName") == "orion-scheduler");
  }
}

TEST_CASE("scheduler, host networking: profile defaults and workload overrides") {
  Workload w = job();
  Submission sub2 = render(w, iiis());
  const json::object& cpu_only = pod_spec_of(sub2.workload());
  CHECK_FALSE(cpu_only.contains("schedulerName"));  // no GPUs: the default scheduler
  CHECK(cpu_only.at("hostNetwork") == true);
  CHECK(cpu_only.at("dnsPolicy") == "ClusterFirstWithHostNet");
  CHECK(cpu_only.at("hostIPC") == true);

  w.resources.gpus = 1;
  w.scheduler_name = "volcano";
  w.host_network = false;
  w.host_ipc = false;
  Submission sub3 = render(w, iiis());
  const json::object& overridden = pod_spec_of(sub3.workload());
  CHECK(overridden.at("schedulerName") == "volcano");
  CHECK_FALSE(overridden.contains("hostNetwork"));
  CHECK_FALSE(overridden.contains("dnsPolicy"));
  CHECK_FALSE(overridden.contains("hostIPC"));

  Submission plain_submission = render(job(), generic());
  const json::object& plain = pod_spec_of(plain_submission.workload());
  CHECK_FALSE(plain.contains("hostNetwork"));
}

TEST_CASE("runtime class: the workload's on every pod it renders, the profile's for GPU workloads") {
  struct Row {
    WorkloadKind kind;
    std::vector<std::string> replicas;
  };
  const Row rows[] = {
      {WorkloadKind::Pod, {""}},
      {WorkloadKind::Deployment, {""}},
      {WorkloadKind::Job, {""}},
      {WorkloadKind::MPIJob, {"Launcher", "Worker"}},
      {WorkloadKind::TFJob, {"PS", "Worker", "Chief"}},
      {WorkloadKind::PyTorchJob, {"Master", "Worker"}},
  };
  Profile nvidia = generic();
  nvidia.gpu.runtime_class = "nvidia";
  for (const auto& r : rows) {
    CAPTURE(to_string(r.kind));
    Workload w = job(r.kind);
    if (r.kind == WorkloadKind::TFJob) w.replicas = Replicas{1, 1, 1, 1};
    if (r.kind == WorkloadKind::Deployment) w.restart_policy.reset();
    // None by default, and none from the profile for a workload without GPUs.
    for (const Profile* p : {&generic(), static_cast<const Profile*>(&nvidia)}) {
      const Submission none = render(w, *p);
      for (const auto& replica : r.replicas)
        CHECK_FALSE(pod_spec_of(none.workload(), replica).contains("runtimeClassName"));
    }
    // The profile's for a GPU workload: every pod of the job, as its scheduler.
    w.resources.gpus = 1;
    const Submission gpu = render(w, nvidia);
    for (const auto& replica : r.replicas) {
      CAPTURE(replica);
      CHECK(pod_spec_of(gpu.workload(), replica).at("runtimeClassName") == "nvidia");
    }
    // The workload's own wins, with or without GPUs.
    w.runtime_class_name = "kata";
    for (int gpus : {0, 1}) {
      w.resources.gpus = gpus;
      const Submission own = render(w, nvidia);
      for (const auto& replica : r.replicas)
        CHECK(pod_spec_of(own.workload(), replica).at("runtimeClassName") == "kata");
    }
  }
  // A RuntimeClass's name is a DNS subdomain (ValidateRuntimeClassName).
  Workload bad = job();
  bad.runtime_class_name = "Bad_Name";
  CHECK_THROWS_WITH_AS(render(bad, generic()), doctest::Contains("runtimeClassName"), ValidationError);
  CHECK_THROWS_WITH_AS(Profile::parse("name: x\ngpu: {runtime_class: Bad_Name}\n"),
                       doctest::Contains("gpu.runtime_class"), ConfigError);
  CHECK(Profile::parse("name: x\ngpu: {runtime_class: nvidia}\n").gpu.runtime_class == "nvidia");
}

TEST_CASE("ssd=true and nfs=true mount what the profile names; the user's own NFS directory only") {
  Workload w = job();
  w.namespace_ = "zhangsan";
  w.ssd = true;
  w.nfs = true;
  Submission sub4 = render(w, iiis());
  const json::object& spec = pod_spec_of(sub4.workload());
  const json::array& mounts = container_of(spec).at("volumeMounts").as_array();
  REQUIRE(mounts.size() == 4);
  CHECK(mounts[0] == json::parse(R"({"name": "local-ssd-1", "mountPath": "/mnt/data1"})"));
  CHECK(mounts[1] == json::parse(R"({"name": "local-ssd-2", "mountPath": "/mnt/data2"})"));
  CHECK(mounts[2] ==
        json::parse(
            R"({"name": "nfs-share", "mountPath": "/share/datasets", "subPath": "share/datasets", "readOnly": true})"));
  CHECK(mounts[3] ==
        json::parse(R"({"name": "nfs-share", "mountPath": "/share/zhangsan", "subPath": "share/zhangsan"})"));
  const json::array& volumes = spec.at("volumes").as_array();
  CHECK(volumes[0] == json::parse(R"({"name": "local-ssd-1", "hostPath": {"path": "/data"}})"));
  CHECK(volumes[2] ==
        json::parse(R"({"name": "nfs-share", "nfs": {"server": "172.16.112.175", "path": "/nfs_data"}})"));

  CHECK_THROWS_WITH_AS(render(w, generic()), doctest::Contains("has no local SSDs"), ValidationError);
  w.ssd = false;
  CHECK_THROWS_WITH_AS(render(w, generic()), doctest::Contains("has no NFS share"), ValidationError);
}

TEST_CASE("a user mount clashing with a profile mount is caught after the profile is applied") {
  Workload w = job();
  w.ssd = true;
  w.volumes = {Volume{"mine", EmptyDirSource{}}};
  w.mounts = {VolumeMount{"mine", "/mnt/data1", "", false}};
  CHECK_THROWS_WITH_AS(render(w, iiis()), doctest::Contains("must be unique"), ValidationError);
}

TEST_CASE("PVCs: storage class aliases, canonical sizes, and the namespace default") {
  Workload w = job();
  w.pvcs = {PvcRequest{"data", "nfs", Quantity::parse("1024Mi"), {AccessMode::ReadWriteMany}},
            PvcRequest{"cache", "", Quantity::parse("0.5Gi"), {AccessMode::ReadWriteOnce}}};
  Submission s = render(w, iiis());
  REQUIRE(s.objects.size() == 3);
  CHECK(s.objects[0].at("spec") == json::parse(R"({"storageClassName": "managed-nfs-storage",
      "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}})"));
  CHECK_FALSE(s.objects[1].at("spec").as_object().contains("storageClassName"));
  CHECK(s.objects[1].at("spec").at("resources").at("requests").at("storage") == "512Mi");
  CHECK(s.objects[0].at("metadata").at("namespace") == "default");
  CHECK(s.workload().at("kind") == "Job");
}

TEST_CASE("quantities come out canonical") {
  Workload w = job();
  w.resources.cpu_request = Quantity::parse("0.5");
  w.resources.cpu_limit = Quantity::parse("1000m");
  w.resources.memory_limit = Quantity::parse("1024Mi");
  Submission sub5 = render(w, generic());
  const json::object& r = container_of(pod_spec_of(sub5.workload())).at("resources").as_object();
  CHECK(r.at("requests").at("cpu") == "500m");
  CHECK(r.at("limits").at("cpu") == "1");
  CHECK(r.at("limits").at("memory") == "1Gi");
}

TEST_CASE("every object carries the gpupool labels; user labels cannot replace them") {
  Workload w = job(WorkloadKind::MPIJob);
  w.tensorboard.enabled = true;
  w.pvcs = {PvcRequest{"logs", "", Quantity::parse("1Gi"), {AccessMode::ReadWriteMany}}};
  w.labels = {{"team", "vision"}, {"app.kubernetes.io/managed-by", "someone-else"}};
  Submission s = render(w, generic());
  REQUIRE(s.objects.size() == 4);
  for (const auto& o : s.objects) {
    CAPTURE(json::serialize(o.at("kind")));
    const json::object& labels = o.at("metadata").at("labels").as_object();
    CHECK(labels.at("app.kubernetes.io/managed-by") == "gpupool");
    CHECK(labels.at("gpupool.io/job-name") == "train");
    CHECK(labels.at("gpupool.io/kind") == "mpijob");
  }
  CHECK(s.objects[1].at("metadata").at("labels").at("team") == "vision");
  CHECK(s.objects[2].at("kind") == "Deployment");
  CHECK(s.objects[2].at("metadata").at("labels").at("gpupool.io/component") == "tensorboard");
  CHECK(s.objects[3].at("kind") == "Service");
  CHECK(s.objects[3].at("spec").at("type") == "NodePort");
}

TEST_CASE("TensorBoard reads the volume that holds the log dir when there is one") {
  Workload w = job();
  w.tensorboard.enabled = true;
  w.tensorboard.log_dir = "/pvc/logs/run1";
  w.volumes = {Volume{"results", PvcSource{"results", false}}};
  w.mounts = {VolumeMount{"results", "/pvc", "", false}};
  Submission s = render(w, generic());
  const json::object& tb = s.objects[1].at("spec").at("template").at("spec").as_object();
  CHECK(tb.at("volumes") == json::parse(R"([{"name": "results", "persistentVolumeClaim": {"claimName": "results"}}])"));
  CHECK(tb.at("containers").at(0).at("volumeMounts") ==
        json::parse(R"([{"name": "results", "mountPath": "/pvc", "readOnly": true}])"));
  // No extra hostPath volume in the job when a mount covers the log dir.
  CHECK(pod_spec_of(s.workload()).at("volumes").as_array().size() == 1);
  CHECK_FALSE(tb.contains("affinity"));  // a PVC is reachable from any node
}

TEST_CASE("TensorBoard over a node-local log dir runs beside the training pods") {
  struct Row {
    WorkloadKind kind;
    std::string key, value;
  };
  const Row rows[] = {{WorkloadKind::MPIJob, "training.kubeflow.org/replica-type", "worker"},
                      {WorkloadKind::Job, "gpupool.io/component", "workload"}};
  for (const auto& r : rows) {
    CAPTURE(to_string(r.kind));
    Workload w = job(r.kind);
    w.tensorboard.enabled = true;
    Submission s = render(w, generic());
    const json::object& tb = s.objects[1].at("spec").at("template").at("spec").as_object();
    const json::value& term =
        tb.at("affinity").at("podAffinity").at("requiredDuringSchedulingIgnoredDuringExecution").at(0);
    CHECK(term.at("topologyKey") == "kubernetes.io/hostname");
    CHECK(term.at("labelSelector").at("matchLabels").at("gpupool.io/job-name") == "train");
    CHECK(term.at("labelSelector").at("matchLabels").at(r.key) == json::value(r.value));
    CHECK(tb.at("volumes").at(0).at("hostPath").at("path") == "/tmp/gpupool-tensorboard/default/train");
  }
}

TEST_CASE("MPIJob shapes: v1 workers run no command, v2beta1 workers run sshd") {
  Workload w = job(WorkloadKind::MPIJob);
  w.resources.gpus = 4;
  json::object v1 = render(w, generic()).workload();
  CHECK(v1.at("apiVersion") == "kubeflow.org/v1");
  CHECK(v1.at("spec").at("slotsPerWorker") == 4);
  CHECK(v1.at("spec").at("runPolicy").at("cleanPodPolicy") == "Running");
  CHECK_FALSE(container_of(pod_spec_of(v1, "Worker")).contains("command"));
  CHECK(container_of(pod_spec_of(v1, "Launcher")).at("command") == json::parse(R"(["python", "train.py"])"));
  w.mpi_api = MpiJobApi::V2Beta1;
  w.slots_per_worker = 1;
  json::object v2 = render(w, generic()).workload();
  CHECK(v2.at("apiVersion") == "kubeflow.org/v2beta1");
  CHECK(v2.at("spec").at("slotsPerWorker") == 1);
  CHECK(v2.at("spec").at("sshAuthMountPath") == "/root/.ssh");
  CHECK(container_of(pod_spec_of(v2, "Worker")).at("command") == json::parse(R"(["/usr/sbin/sshd", "-De"])"));
}

TEST_CASE("a shell string is one argv element of sh -c") {
  Workload w = job();
  w.command.clear();
  w.shell = "echo \"$HOME\"; python train.py --lr=0.1 && echo 'done'";
  CHECK(container_of(pod_spec_of(render(w, generic()).workload())).at("command") ==
        json::array{"sh", "-c", "echo \"$HOME\"; python train.py --lr=0.1 && echo 'done'"});
}

TEST_CASE("what render refuses, beyond validate()") {
  using Mutate = std::function<void(Workload&)>;
  struct Row {
    Mutate mutate;
    std::string field, rule_part;
  };
  const Row rows[] = {
      {[](Workload& w) { w.name = "Bad_Name"; }, "metadata.name", "DNS-1123"},
      {[](Workload& w) {
         w.kind = WorkloadKind::Deployment;
         w.backoff_limit = 3;
       },
       "backoffLimit", "a Deployment has no such field"},
      {[](Workload& w) {
         w.kind = WorkloadKind::Pod;
         w.ttl_seconds_after_finished = 3;
       },
       "ttlSecondsAfterFinished", "a Pod"},
      {[](Workload& w) {
         w.staging = SsdStaging{{{"/pvc/data", "/mnt/data1/x"}}, "", ""};
       },
       "staging.inputs[0].source", "not under any mount"},
      {[](Workload& w) {
         w.volumes = {Volume{"d", PvcSource{"d", false}}};
         w.mounts = {VolumeMount{"d", "/pvc", "", false}};
         w.staging = SsdStaging{{{"/pvc/data", "/mnt/data1/x"}}, "", ""};
       },
       "staging.inputs[0].cache", "ssd=true"},
      {[](Workload& w) {
         w.kind = WorkloadKind::MPIJob;
         w.ssd = true;
         w.volumes = {Volume{"d", PvcSource{"d", false}}};
         w.mounts = {VolumeMount{"d", "/pvc", "", false}};
         w.staging = SsdStaging{{{"/pvc/data", "/mnt/data1/x"}}, "/mnt/data1/out", "/pvc/out"};
       },
       "staging.results", "launcher"},
      {[](Workload& w) {
         w.command.clear();
         w.ssd = true;
         w.volumes = {Volume{"d", PvcSource{"d", false}}};
         w.mounts = {VolumeMount{"d", "/pvc", "", false}};
         w.staging = SsdStaging{{{"/pvc/data", "/mnt/data1/x"}}, "/mnt/data1/out", "/pvc/out"};
       },
       "staging.results", "needs a command"},
  };
  // validate(w, profile) refuses exactly what render refuses, with the same error; validate(w)
  // already refuses the rules that need no profile (names, fields per kind).
  const std::set<std::string> profile_free = {"metadata.name", "backoffLimit", "ttlSecondsAfterFinished"};
  for (const auto& r : rows) {
    CAPTURE(r.field);
    Workload w = job();
    r.mutate(w);
    std::string rendered_error;
    try {
      (void)render(w, iiis());
      FAIL("accepted");
    } catch (const ValidationError& e) {
      CHECK(e.field() == r.field);
      CHECK(std::string(e.what()).find(r.rule_part) != std::string::npos);
      rendered_error = e.what();
    }
    try {
      validate(w, iiis());
      FAIL("validate(w, profile) accepted what render refuses");
    } catch (const ValidationError& e) {
      CHECK(e.what() == rendered_error);
    }
    if (profile_free.count(r.field))
      CHECK_THROWS_AS(validate(w), ValidationError);
    else
      CHECK_NOTHROW(validate(w));
  }
  CHECK_NOTHROW(validate(job(), iiis()));
}

TEST_CASE("staging: a stage-out target or a cache on a read-only mount is refused, naming the mount") {
  struct Row {
    const char* what;
    std::optional<Volume> volume;  // mounted at `mount`
    const char* mount;
    bool mount_read_only;
    SsdStaging staging;
    const char* field;
    const char* path;
    const char* why;  // the mount and why it is read-only
  };
  const Row rows[] = {
      {"PVC mounted :ro", Volume{"d", PvcSource{"d", false}}, "/pvc", true,
       SsdStaging{{}, "/mnt/data1/out", "/pvc/out"}, "staging.results_target", "/pvc/out",
       "is on the read-only mount /pvc (volume \"d\", readOnly)"},
      {"PVC source readOnly", Volume{"d", PvcSource{"claim-x", true}}, "/pvc", false,
       SsdStaging{{}, "/mnt/data1/out", "/pvc/out"}, "staging.results_target", "/pvc/out",
       "(volume \"d\", persistentVolumeClaim claim-x is readOnly)"},
      {"the profile's NFS datasets (read-only)", std::nullopt, "", false,
       SsdStaging{{}, "/mnt/data1/out", "/share/datasets/out"}, "staging.results_target", "/share/datasets/out",
       "is on the read-only mount /share/datasets (volume \"nfs-share\""},
      {"a hostPath mounted readOnly", Volume{"h", HostPathSource{"/data", HostPathType::Directory}}, "/host", true,
       SsdStaging{{}, "/mnt/data1/out", "/host/out"}, "staging.results_target", "/host/out",
       "is on the read-only mount /host (volume \"h\", readOnly)"},
      {"an NFS volume readOnly, stage-in cache on it", Volume{"n", NfsSource{"nfs.example", "/export", true}}, "/nfs",
       false, SsdStaging{{{"/mnt/data1/in", "/mnt/data1/x"}, {"/mnt/data1/in", "/nfs/cache"}}, "", ""},
       "staging.inputs[1].cache", "/nfs/cache", "(volume \"n\", nfs readOnly)"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.what);
    Workload w = job();
    w.ssd = true;
    w.nfs = !r.volume;  // the profile's share
    if (r.volume) {
      w.volumes = {*r.volume};
      w.mounts = {VolumeMount{r.volume->name, r.mount, "", r.mount_read_only}};
    }
    w.staging = r.staging;
    try {
      (void)render(w, iiis());
      FAIL("accepted");
    } catch (const ValidationError& e) {
      CHECK(e.field() == r.field);
      CHECK(e.value() == r.path);
      CHECK(e.rule().find(r.why) != std::string::npos);
    }
  }
  // The deepest mount decides: a writable directory mounted inside a read-only one takes results.
  Workload w = job();
  w.ssd = true;
  w.nfs = true;
  w.volumes = {Volume{"d", PvcSource{"d", false}}};
  w.mounts = {VolumeMount{"d", "/share/datasets/mine", "", false}};
  w.staging = SsdStaging{{}, "/mnt/data1/out", "/share/datasets/mine/out"};
  CHECK_NOTHROW(render(w, iiis()));
  w.staging = SsdStaging{{}, "/mnt/data1/out", "/share/zhangsan/out"};  // the NFS home is writable
  w.namespace_ = "zhangsan";
  CHECK_NOTHROW(render(w, iiis()));
}

TEST_CASE("staging: options with a read-only stage-out target fail with one error naming --stage-out and the mount") {
  SubmitOptions o;
  o.name = "ro-target";
  o.image = "busybox";
  o.command = "python train.py";
  o.ssd = true;
  o.data = {"results-pvc:/results:ro"};
  o.stage_out = "/mnt/data1/out:/results/run-1";
  Workload w = to_workload(o);  // the flags are well formed; the mounts are checked with the profile's
  try {
    (void)render(w, iiis());
    FAIL("accepted");
  } catch (const ValidationError& e) {
    ValidationError named = with_option_names(e);
    CHECK(std::string(named.what()) ==
          "--stage-out: invalid value \"/results/run-1\": is on the read-only mount /results (volume "
          "\"results-pvc\", readOnly); choose a path on a writable mount");
  }
}

TEST_CASE("staging: stage-out alone wraps the command, adds no init container, and sets the grace period") {
  Workload w = job();
  w.ssd = true;
  w.volumes = {Volume{"d", PvcSource{"d", false}}};
  w.mounts = {VolumeMount{"d", "/pvc", "", false}};
  w.staging = SsdStaging{{}, "/mnt/data1/out", "/pvc/out"};
  Submission sub = render(w, iiis());
  const json::object& spec = pod_spec_of(sub.workload());
  CHECK_FALSE(spec.contains("initContainers"));
  CHECK(spec.at("terminationGracePeriodSeconds") == json::value(kDefaultStageOutGraceSeconds));
  json::array expected;
  for (const auto& a : staged_command(*w.staging, {"python", "train.py"})) expected.emplace_back(a);
  CHECK(container_of(spec).at("command") == expected);
  w.staging->grace_period_seconds = 900;
  CHECK(pod_spec_of(render(w, iiis()).workload()).at("terminationGracePeriodSeconds") == json::value(900));
  // Stage-in alone: the init container, the command as it is, Kubernetes' default grace period.
  w.staging = SsdStaging{{{"/pvc/a", "/mnt/data1/a"}, {"/pvc/b", "/mnt/data1/b"}}, "", ""};
  Submission sub2 = render(w, iiis());
  const json::object& spec2 = pod_spec_of(sub2.workload());
  CHECK(spec2.at("initContainers").at(0).at("command").at(2) == json::value(stage_in_script(*w.staging)));
  CHECK_FALSE(spec2.contains("terminationGracePeriodSeconds"));
  CHECK(container_of(spec2).at("command") == json::array{"python", "train.py"});
}

TEST_CASE("staging: stage-in init container on computing pods, the command wrapped for copy-back") {
  Workload w = job();
  w.ssd = true;
  w.volumes = {Volume{"d", PvcSource{"d", false}}};
  w.mounts = {VolumeMount{"d", "/pvc", "", false}};
  w.staging = SsdStaging{{{"/pvc/data", "/mnt/data1/x"}}, "/mnt/data1/out", "/pvc/out"};
  Submission sub6 = render(w, iiis());
  const json::object& spec = pod_spec_of(sub6.workload());
  const json::object& init = spec.at("initContainers").at(0).as_object();
  CHECK(init.at("name") == "stage-in");
  CHECK(init.at("command").at(2) == json::value(stage_in_script(*w.staging)));
  CHECK(init.at("volumeMounts") == container_of(spec).at("volumeMounts"));
  json::array expected;
  for (const auto& a : staged_command(*w.staging, {"python", "train.py"})) expected.emplace_back(a);
  CHECK(container_of(spec).at("command") == expected);
}

TEST_CASE("kubectl_name: kind.group/name as kubectl prints it, core group without a suffix") {
  CHECK(kubectl_name("MPIJob", "kubeflow.org", "mpi-dist") == "mpijob.kubeflow.org/mpi-dist");
  CHECK(kubectl_name("Service", "", "tb") == "service/tb");
  CHECK(kubectl_name(boost::json::object{
            {"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"metadata", boost::json::object{{"name", "x"}}}}) ==
        "deployment.apps/x");
  CHECK(kubectl_name(boost::json::object{{"apiVersion", "v1"},
                                         {"kind", "PersistentVolumeClaim"},
                                         {"metadata", boost::json::object{{"name", "data"}}}}) ==
        "persistentvolumeclaim/data");
}

TEST_CASE("a Deployment with GPUs replaces its pods old-first; without GPUs it keeps Kubernetes' default") {
  // The default RollingUpdate starts the new pod first: with GPUs (or a GPU quota) the old pods
  // hold, it never fits and `kubectl rollout restart` waits for ever.
  Workload w = job(WorkloadKind::Deployment);
  w.restart_policy.reset();
  w.resources.gpus = 2;
  const json::object gpu = render(w, generic()).workload();
  CHECK(gpu.at("spec").at("strategy") ==
        json::parse(R"({"type":"RollingUpdate","rollingUpdate":{"maxSurge":0,"maxUnavailable":1}})"));
  w.resources.gpus = 0;
  const json::object cpu = render(w, generic()).workload();
  CHECK(!cpu.at("spec").as_object().contains("strategy"));
}
