// How render() writes the fields Arena's submit flags set (SubmitOptions -> Workload -> objects).
#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/render.hpp"
#include "gpupool/submit_options.hpp"
#include "pod_spec.hpp"

#include <boost/json/serialize.hpp>

#include <string>

using namespace gpupool;
using gpupool::testing::container_of;
using gpupool::testing::pod_spec_of;
namespace json = boost::json;

namespace {

Workload arena_job(WorkloadKind kind) {
  Workload w;
  w.name = "arena";
  w.kind = kind;
  w.image = "busybox:1.36";
  w.shell = "python train.py";
  return w;
}

const Profile& generic() {
  static const Profile p = Profile::builtin("generic");
  return p;
}

/// A training job of `kind` named "arena" with two workers (Arena counts a PyTorchJob's master).
SubmitOptions training(const char* kind) {
  SubmitOptions o;
  o.kind = kind;
  o.name = "arena";
  o.image = "busybox:1.36";
  o.command = "python train.py";
  o.workers = 2;
  return o;
}

}  // namespace

TEST_CASE("--image-pull-policy and --shell reach every main container") {
  Workload w = arena_job(WorkloadKind::Job);
  w.image_pull_policy = "Never";
  w.shell_program = "bash";
  const auto s = render(w, generic());
  const auto& c = container_of(pod_spec_of(s.workload()));
  CHECK(c.at("imagePullPolicy") == "Never");
  CHECK(json::serialize(c.at("command")) == R"(["bash","-c","python train.py"])");
}

TEST_CASE("--running-timeout: a Pod's and a Job's spec, the Kubeflow kinds' runPolicy") {
  Workload pod = arena_job(WorkloadKind::Pod);
  pod.active_deadline_seconds = 600;
  CHECK(render(pod, generic()).workload().at("spec").at("activeDeadlineSeconds") == 600);

  Workload job = arena_job(WorkloadKind::Job);
  job.active_deadline_seconds = 60;
  job.backoff_limit = 2;
  const Submission job_objects = render(job, generic());
  const auto& js = job_objects.workload().at("spec").as_object();
  CHECK(js.at("activeDeadlineSeconds") == 60);
  CHECK(js.at("backoffLimit") == 2);
  CHECK_FALSE(js.at("template").at("spec").as_object().contains("activeDeadlineSeconds"));

  Workload py = arena_job(WorkloadKind::PyTorchJob);
  py.active_deadline_seconds = 7200;
  py.ttl_seconds_after_finished = 60;
  py.clean_pod_policy = CleanPodPolicy::All;
  py.backoff_limit = 3;
  const Submission py_objects = render(py, generic());
  const auto& rp = py_objects.workload().at("spec").at("runPolicy").as_object();
  CHECK(rp.at("activeDeadlineSeconds") == 7200);
  CHECK(rp.at("ttlSecondsAfterFinished") == 60);
  CHECK(rp.at("cleanPodPolicy") == "All");
  CHECK(rp.at("backoffLimit") == 3);

  Workload deployment = arena_job(WorkloadKind::Deployment);
  deployment.active_deadline_seconds = 60;
  CHECK_THROWS_WITH_AS(render(deployment, generic()), doctest::Contains("Deployment"), ValidationError);
}

TEST_CASE("TFJob: PS image, worker image for Worker / Chief / Evaluator, an Evaluator replica") {
  Workload w = arena_job(WorkloadKind::TFJob);
  w.replicas.workers = 2;
  w.replicas.ps = 1;
  w.replicas.chief = 1;
  w.replicas.evaluator = 1;
  w.resources.gpus = 1;
  w.ps_image = "tensorflow/tensorflow:2.15.0";
  w.worker_image = "tensorflow/tensorflow:2.15.0-gpu";
  const Submission objects = render(w, generic());
  const auto& tf = objects.workload();
  const auto& specs = tf.at("spec").at("tfReplicaSpecs").as_object();
  CHECK(specs.at("Evaluator").at("replicas") == 1);
  CHECK(container_of(pod_spec_of(tf, "PS")).at("image") == "tensorflow/tensorflow:2.15.0");
  for (const char* r : {"Worker", "Chief", "Evaluator"}) {
    CAPTURE(r);
    const auto& c = container_of(pod_spec_of(tf, r));
    CHECK(c.at("image") == "tensorflow/tensorflow:2.15.0-gpu");
    CHECK(c.at("resources").at("limits").at("nvidia.com/gpu") == "1");  // as Arena's chart: GPUs there
  }
  // Without per-replica images every replica runs --image.
  Workload plain = arena_job(WorkloadKind::TFJob);
  plain.replicas.ps = 1;
  CHECK(container_of(pod_spec_of(render(plain, generic()).workload(), "PS")).at("image") == "busybox:1.36");
}

TEST_CASE("--sync-mode git: Arena's init-code container with git-sync's env, code at <working-dir>/code") {
  Workload w = arena_job(WorkloadKind::PyTorchJob);
  w.working_dir = "/root";
  w.code_sync = CodeSync{"git", "https://github.com/kubeflow/arena.git/", ""};
  w.resources.cpu_request = Quantity::parse("2");
  const Submission objects = render(w, generic());
  const auto& spec = pod_spec_of(objects.workload(), "Master");
  const auto& init = spec.at("initContainers").at(0).as_object();
  CHECK(init.at("name") == "init-code");
  CHECK(init.at("image") == "registry.cn-zhangjiakou.aliyuncs.com/acs/git-sync:v3.3.5");
  CHECK(json::serialize(init.at("env")) ==
        R"([{"name":"GIT_SYNC_REPO","value":"https://github.com/kubeflow/arena.git/"},)"
        R"({"name":"GIT_SYNC_DEST","value":"arena"},{"name":"GIT_SYNC_ROOT","value":"/code"},)"
        R"({"name":"GIT_SYNC_ONE_TIME","value":"true"}])");
  CHECK(json::serialize(init.at("volumeMounts")) == R"([{"name":"code-sync","mountPath":"/code"}])");
  CHECK(init.at("resources").at("limits").at("cpu") == "2");
  const auto& mounts = container_of(spec).at("volumeMounts").as_array();
  bool code = false;
  for (const auto& m : mounts) code = code || (m.at("name") == "code-sync" && m.at("mountPath") == "/root/code");
  CHECK(code);
  bool volume = false;
  for (const auto& v : spec.at("volumes").as_array()) volume = volume || v.at("name") == "code-sync";
  CHECK(volume);
}

TEST_CASE("--sync-mode rsync with --sync-image: rsync -avP SOURCE /code; /code without a working dir") {
  Workload w = arena_job(WorkloadKind::Job);
  w.code_sync = CodeSync{"rsync", "10.0.0.5::code/project", "instrumentisto/rsync-ssh:alpine3.20"};
  const Submission objects = render(w, generic());
  const auto& spec = pod_spec_of(objects.workload());
  const auto& init = spec.at("initContainers").at(0).as_object();
  CHECK(init.at("image") == "instrumentisto/rsync-ssh:alpine3.20");
  CHECK(json::serialize(init.at("command")) == R"(["rsync","-avP","10.0.0.5::code/project","/code"])");
  CHECK_FALSE(init.contains("env"));
  bool code = false;
  for (const auto& m : container_of(spec).at("volumeMounts").as_array())
    code = code || (m.at("name") == "code-sync" && m.at("mountPath") == "/code");
  CHECK(code);
}

TEST_CASE("--config-file: one ConfigMap before the workload, each file mounted read-only by subPath") {
  Workload w = arena_job(WorkloadKind::MPIJob);
  w.config_files = {{"/etc/train/train.yaml", "lr: 0.1\n"}, {"/opt/hosts", "a\nb\n"}};
  const auto s = render(w, generic());
  REQUIRE(s.objects.size() == 2);
  const auto& cm = s.objects[0];
  CHECK(cm.at("kind") == "ConfigMap");
  CHECK(cm.at("metadata").at("name") == "arena-config");
  CHECK(cm.at("metadata").at("labels").at(kComponentLabel) == "config");
  CHECK(cm.at("data").at("config-0") == "lr: 0.1\n");
  CHECK(cm.at("data").at("config-1") == "a\nb\n");
  CHECK(s.workload().at("kind") == "MPIJob");
  for (const char* r : {"Launcher", "Worker"}) {
    CAPTURE(r);
    const auto& spec = pod_spec_of(s.workload(), r);
    const auto& mounts = container_of(spec).at("volumeMounts").as_array();
    REQUIRE(mounts.size() == 2);
    CHECK(json::serialize(mounts[0]) ==
          R"({"name":"config-files","mountPath":"/etc/train/train.yaml","subPath":"config-0","readOnly":true})");
    CHECK(json::serialize(spec.at("volumes").as_array().back()) ==
          R"({"name":"config-files","configMap":{"name":"arena-config"}})");
  }
  // ValidateConfigMap: at most 1 MiB of data.
  w.config_files = {{"/big", std::string(1024 * 1024 + 1, 'x')}};
  CHECK_THROWS_WITH_AS(render(w, generic()), doctest::Contains("1048576"), ValidationError);
}

TEST_CASE("--annotation / --label / --image-pull-secret / --device from options to objects") {
  SubmitOptions o;
  o.kind = "job";
  o.name = "arena";
  o.image = "busybox:1.36";
  o.annotations = {"team=vision"};
  o.labels = {"project=resnet"};
  o.image_pull_secrets = {"harbor-cred"};
  o.devices = {"amd.com/gpu=1"};
  const Submission objects = render(to_workload(o), generic());
  const auto& job = objects.workload();
  CHECK(job.at("metadata").at("annotations").at("team") == "vision");
  CHECK(job.at("metadata").at("labels").at("project") == "resnet");
  const auto& tmpl = job.at("spec").at("template").as_object();
  CHECK(tmpl.at("metadata").at("annotations").at("team") == "vision");
  CHECK(tmpl.at("metadata").at("labels").at("project") == "resnet");
  CHECK(json::serialize(tmpl.at("spec").at("imagePullSecrets")) == R"([{"name":"harbor-cred"}])");
  const auto& res = container_of(tmpl.at("spec").as_object()).at("resources").as_object();
  CHECK(res.at("limits").at("amd.com/gpu") == "1");
  CHECK(res.at("requests").at("amd.com/gpu") == "1");
}

TEST_CASE("TF's per-role flags land in their ReplicaSpec only (charts/tfjob/templates/tfjob.yaml)") {
  SubmitOptions o = training("tf");
  o.ps = 1;
  o.chief = true;
  o.gpus = 1;
  o.cpu = "1";
  o.selectors = {"pool=any"};
  o.ps_cpu = "2";
  o.ps_memory = "4Gi";
  o.ps_memory_limit = "8Gi";
  o.ps_gpus = 2;
  o.ps_port = 2224;
  o.ps_selectors = {"pool=cpu"};
  o.worker_port = 2223;
  o.chief_cpu = "3";
  const Submission s = render(to_workload(o), generic());
  const auto& specs = s.workload().at("spec").at("tfReplicaSpecs").as_object();
  auto spec = [&](const char* type) -> const json::object& {
    return specs.at(type).at("template").at("spec").as_object();
  };
  const auto& ps = container_of(spec("PS"));
  CHECK(
      json::serialize(ps.at("resources")) ==
      R"({"limits":{"cpu":"2","memory":"8Gi","nvidia.com/gpu":"2"},"requests":{"cpu":"2","memory":"4Gi","nvidia.com/gpu":"2"}})");
  CHECK(json::serialize(ps.at("ports")) == R"([{"containerPort":2224,"name":"tfjob-port"}])");
  CHECK(json::serialize(spec("PS").at("nodeSelector")) == R"({"pool":"cpu"})");  // replaces --selector
  const auto& worker = container_of(spec("Worker"));
  // The Worker keeps --cpu and --gpus (no --worker-* resource flag given).
  CHECK(worker.at("resources").at("requests").at("cpu") == "1");
  CHECK(worker.at("resources").at("requests").at("nvidia.com/gpu") == "1");
  CHECK(json::serialize(worker.at("ports")) == R"([{"containerPort":2223,"name":"tfjob-port"}])");
  CHECK(json::serialize(spec("Worker").at("nodeSelector")) == R"({"pool":"any"})");
  const auto& chief = container_of(spec("Chief"));
  CHECK(chief.at("resources").at("requests").at("cpu") == "3");
  CHECK(chief.at("resources").at("limits").at("cpu") == "3");
  CHECK_FALSE(chief.contains("ports"));
  // Arena's default cleanPodPolicy for a TFJob.
  CHECK(s.workload().at("spec").at("runPolicy").at("cleanPodPolicy") == "Running");
}

TEST_CASE("each TF per-role flag: the field it renders, in its role's ReplicaSpec only") {
  struct Row {
    void (*set)(SubmitOptions&);
    const char* role;  // tfReplicaSpecs key
    const char* path;  // under the role's first container, or the pod spec with "spec:"
    const char* want;
  };
  const Row rows[] = {
      {[](SubmitOptions& o) { o.worker_cpu = "2"; }, "Worker", "resources.requests.cpu", "\"2\""},
      {[](SubmitOptions& o) { o.worker_cpu_limit = "3"; }, "Worker", "resources.limits.cpu", "\"3\""},
      {[](SubmitOptions& o) { o.worker_memory = "2Gi"; }, "Worker", "resources.limits.memory", "\"2Gi\""},
      {[](SubmitOptions& o) { o.worker_memory_limit = "5Gi"; }, "Worker", "resources.limits.memory", "\"5Gi\""},
      {[](SubmitOptions& o) { o.worker_port = 3000; }, "Worker", "ports",
       R"([{"containerPort":3000,"name":"tfjob-port"}])"},
      {[](SubmitOptions& o) { o.worker_selectors = {"a=b"}; }, "Worker", "spec:nodeSelector", R"({"a":"b"})"},
      {[](SubmitOptions& o) { o.ps_cpu = "1"; }, "PS", "resources.limits.cpu", "\"1\""},
      {[](SubmitOptions& o) { o.ps_cpu_limit = "4"; }, "PS", "resources.limits.cpu", "\"4\""},
      {[](SubmitOptions& o) { o.ps_memory = "1Gi"; }, "PS", "resources.requests.memory", "\"1Gi\""},
      {[](SubmitOptions& o) { o.ps_memory_limit = "3Gi"; }, "PS", "resources.limits.memory", "\"3Gi\""},
      {[](SubmitOptions& o) { o.ps_gpus = 2; }, "PS", "resources.limits.nvidia.com/gpu", "\"2\""},
      {[](SubmitOptions& o) { o.ps_port = 3001; }, "PS", "ports", R"([{"containerPort":3001,"name":"tfjob-port"}])"},
      {[](SubmitOptions& o) { o.ps_selectors = {"c=d"}; }, "PS", "spec:nodeSelector", R"({"c":"d"})"},
      {[](SubmitOptions& o) { o.chief_cpu = "5"; }, "Chief", "resources.requests.cpu", "\"5\""},
      {[](SubmitOptions& o) { o.chief_cpu_limit = "6"; }, "Chief", "resources.limits.cpu", "\"6\""},
      {[](SubmitOptions& o) { o.chief_memory = "6Gi"; }, "Chief", "resources.requests.memory", "\"6Gi\""},
      {[](SubmitOptions& o) { o.chief_memory_limit = "7Gi"; }, "Chief", "resources.limits.memory", "\"7Gi\""},
      {[](SubmitOptions& o) { o.chief_port = 3002; }, "Chief", "ports",
       R"([{"containerPort":3002,"name":"tfjob-port"}])"},
      {[](SubmitOptions& o) { o.chief_selectors = {"e=f"}; }, "Chief", "spec:nodeSelector", R"({"e":"f"})"},
      {[](SubmitOptions& o) { o.evaluator_cpu = "7"; }, "Evaluator", "resources.requests.cpu", "\"7\""},
      {[](SubmitOptions& o) { o.evaluator_cpu_limit = "8"; }, "Evaluator", "resources.limits.cpu", "\"8\""},
      {[](SubmitOptions& o) { o.evaluator_memory = "8Gi"; }, "Evaluator", "resources.requests.memory", "\"8Gi\""},
      {[](SubmitOptions& o) { o.evaluator_memory_limit = "9Gi"; }, "Evaluator", "resources.limits.memory", "\"9Gi\""},
      {[](SubmitOptions& o) { o.evaluator_selectors = {"g=h"}; }, "Evaluator", "spec:nodeSelector", R"({"g":"h"})"},
  };
  // The value at a dotted path whose last key may hold dots (nvidia.com/gpu); "" when absent.
  auto value_at = [](const json::object& from, std::string path) -> std::string {
    const json::object* o = &from;
    while (true) {
      if (o->contains(path)) return json::serialize(o->at(path));
      const auto dot = path.find('.');
      if (dot == std::string::npos || !o->contains(path.substr(0, dot))) return "";
      o = &o->at(path.substr(0, dot)).as_object();
      path = path.substr(dot + 1);
    }
  };
  for (const auto& r : rows) {
    SubmitOptions o;
    o.kind = "tf";
    o.name = "roles";
    o.image = "busybox:1.36";
    o.command = "python train.py";
    o.ps = 1;
    o.chief = true;
    o.evaluator = true;
    r.set(o);
    const Submission s = render(to_workload(o), generic());
    const auto& specs = s.workload().at("spec").at("tfReplicaSpecs").as_object();
    for (const char* role : {"Worker", "PS", "Chief", "Evaluator"}) {
      const auto& spec = specs.at(role).at("template").at("spec").as_object();
      const std::string path = r.path;
      const std::string got =
          path.rfind("spec:", 0) == 0 ? value_at(spec, path.substr(5)) : value_at(container_of(spec), path);
      CAPTURE(r.path);
      CAPTURE(role);
      if (std::string_view(role) == r.role)
        CHECK(got == r.want);
      else
        CHECK(got != r.want);  // the other roles keep the workload's
    }
  }
}

TEST_CASE("--share-memory, --nproc-per-node, --success-policy, --mounts-on-launcher rendered") {
  // --share-memory: the charts' emptyDir "dshm", medium Memory, sizeLimit, at /dev/shm.
  SubmitOptions pt = training("pytorch");
  pt.share_memory = "2Gi";
  pt.nproc_per_node = "gpu";
  const Submission p = render(to_workload(pt), generic());
  for (const char* type : {"Master", "Worker"}) {
    CAPTURE(type);
    const auto& spec = p.workload().at("spec").at("pytorchReplicaSpecs").at(type).at("template").at("spec");
    bool dshm = false;
    for (const auto& v : spec.at("volumes").as_array())
      if (v.at("name") == "dshm") {
        dshm = true;
        CHECK(json::serialize(v.at("emptyDir")) == R"({"medium":"Memory","sizeLimit":"2Gi"})");
      }
    CHECK(dshm);
    const auto& c = container_of(spec.as_object());
    bool mounted = false;
    for (const auto& m : c.at("volumeMounts").as_array())
      mounted = mounted || (m.at("name") == "dshm" && m.at("mountPath") == "/dev/shm");
    CHECK(mounted);
    bool nproc = false;
    for (const auto& e : c.at("env").as_array())
      nproc = nproc || (e.at("name") == "PET_NPROC_PER_NODE" && e.at("value") == "gpu");
    CHECK(nproc);
  }
  // --success-policy AllWorkers: spec.successPolicy; ChiefWorker writes nothing (the operator's "").
  SubmitOptions tf = training("tf");
  tf.success_policy = "AllWorkers";
  CHECK(render(to_workload(tf), generic()).workload().at("spec").at("successPolicy") == "AllWorkers");
  tf.success_policy = "ChiefWorker";
  CHECK_FALSE(render(to_workload(tf), generic()).workload().at("spec").as_object().contains("successPolicy"));
  // --mounts-on-launcher: the launcher mounts the data (as gpupool's launcher always does).
  SubmitOptions mpi = training("mpi");
  mpi.mpi_api = "v1";
  mpi.mounts_on_launcher = true;
  mpi.data = {"train-data:/data"};
  const Submission m = render(to_workload(mpi), generic());
  const auto& launcher =
      container_of(m.workload().at("spec").at("mpiReplicaSpecs").at("Launcher").at("template").at("spec").as_object());
  bool data = false;
  for (const auto& v : launcher.at("volumeMounts").as_array())
    data = data || (v.at("name") == "train-data" && v.at("mountPath") == "/data");
  CHECK(data);
}

TEST_CASE("--worker/--ps-affinity-*: the chart helpers' pod (anti-)affinity on the role's pods") {
  SubmitOptions o = training("tf");
  o.ps = 1;
  o.worker_affinity_policy = "spread";
  o.ps_affinity_policy = "binpack";
  const Submission s = render(to_workload(o), generic());
  const auto& specs = s.workload().at("spec").at("tfReplicaSpecs");
  const auto& worker = specs.at("Worker").at("template").at("spec").at("affinity");
  CHECK(json::serialize(worker) ==
        R"({"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"podAffinityTerm":)"
        R"({"labelSelector":{"matchExpressions":[{"key":"gpupool.io/job-name","operator":"In","values":["arena"]},)"
        R"({"key":"training.kubeflow.org/replica-type","operator":"In","values":["worker"]}]},)"
        R"("topologyKey":"kubernetes.io/hostname"}}]}})");
  const auto& ps = specs.at("PS").at("template").at("spec").at("affinity").at("podAffinity");
  const auto& terms = ps.at("preferredDuringSchedulingIgnoredDuringExecution").as_array();
  REQUIRE(terms.size() == 3);
  CHECK(terms[0].at("weight") == 100);
  CHECK(json::serialize(terms[0].at("podAffinityTerm").at("labelSelector")) ==
        R"({"matchExpressions":[{"key":"gpupool.io/job-name","operator":"In","values":["arena"]}]})");
  CHECK(terms[1].at("weight") == 60);  // the other type first, as the chart's setPSAffinityFunction
  CHECK(terms[1].at("podAffinityTerm").at("labelSelector").at("matchExpressions").at(0).at("values").at(0) == "worker");
  CHECK(terms[2].at("weight") == 30);
  // Required: one term, the job's pods of the type; next to a nodeAffinity (--selector stays apart).
  o.ps_affinity_constraint = "required";
  const Submission r = render(to_workload(o), generic());
  const auto& required = r.workload()
                             .at("spec")
                             .at("tfReplicaSpecs")
                             .at("PS")
                             .at("template")
                             .at("spec")
                             .at("affinity")
                             .at("podAffinity")
                             .at("requiredDuringSchedulingIgnoredDuringExecution")
                             .as_array();
  REQUIRE(required.size() == 1);
  CHECK(required[0].at("labelSelector").at("matchExpressions").as_array().size() == 2);
  // Only the roles given: no affinity on a Chief.
  o.chief = true;
  const Submission c = render(to_workload(o), generic());
  CHECK_FALSE(c.workload()
                  .at("spec")
                  .at("tfReplicaSpecs")
                  .at("Chief")
                  .at("template")
                  .at("spec")
                  .as_object()
                  .contains("affinity"));
}
