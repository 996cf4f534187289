// TrainJob (Kubeflow Trainer v2.3.0) and JobSet (v0.12.0) manifests: the field names the APIs
// define, placement and storage through the TrainJob's runtimePatches, and what a runtimePatch
// cannot carry.
#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/render.hpp"
#include "gpupool/submit_options.hpp"

#include <boost/json/serialize.hpp>

#include <set>
#include <string>

using namespace gpupool;
namespace json = boost::json;

namespace {

const Profile& generic() {
  static const Profile p = Profile::builtin("generic");
  return p;
}

SubmitOptions options(const std::string& kind) {
  SubmitOptions o;
  o.kind = kind;
  o.name = "tj";
  o.image = "docker.io/library/python:3.11";
  o.workers = 3;
  o.gpus = 2;
  o.cpu = "4";
  o.argv = {"torchrun", "train.py"};
  o.env = {"EPOCHS=3"};
  o.tolerations = {"ssd_node"};
  o.selectors = {"gpu=a100"};
  o.data = {"datasets:/data:ro"};
  return o;
}

const json::object& obj(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::object* cur = &o;
  for (auto k : path) cur = &cur->at(k).as_object();
  return *cur;
}
const json::object& obj(const json::value& v, std::initializer_list<std::string_view> path) {
  return obj(v.as_object(), path);
}

}  // namespace

TEST_CASE("TrainJob: runtimeRef, trainer fields, and placement and storage as a runtimePatch of \"node\"") {
  const Submission s = render(to_workload(options("trainjob")), generic());
  const json::object& tj = s.workload();
  CHECK(tj.at("apiVersion") == "trainer.kubeflow.org/v1alpha1");
  CHECK(tj.at("kind") == "TrainJob");
  const json::object& spec = tj.at("spec").as_object();
  CHECK(json::serialize(spec.at("runtimeRef")) ==
        R"({"name":"torch-distributed","apiGroup":"trainer.kubeflow.org","kind":"ClusterTrainingRuntime"})");
  const json::object& trainer = spec.at("trainer").as_object();
  CHECK(trainer.at("image") == "docker.io/library/python:3.11");
  CHECK(json::serialize(trainer.at("command")) == R"(["torchrun","train.py"])");
  CHECK(trainer.at("numNodes") == 3);
  CHECK(obj(trainer, {"resourcesPerNode", "requests"}).at("nvidia.com/gpu") == "2");
  CHECK(obj(trainer, {"resourcesPerNode", "requests"}).at("cpu") == "4");
  CHECK(obj(trainer, {"resourcesPerNode", "limits"}).at("nvidia.com/gpu") == "2");
  CHECK(json::serialize(trainer.at("env")).find(R"({"name":"EPOCHS","value":"3"})") != std::string::npos);
  // Only Trainer's own keys: a TrainJob has no pod template of its own.
  for (const auto& [k, v] : trainer)
    CHECK(std::set<std::string>{"image", "command", "args", "env", "numNodes", "resourcesPerNode"}.count(k) == 1);

  const json::array& patches = spec.at("runtimePatches").as_array();
  REQUIRE(patches.size() == 1);
  CHECK(patches[0].at("manager") == "gpupool.io/submit");
  const json::array& rjobs =
      obj(patches[0], {"trainingRuntimeSpec", "template", "spec"}).at("replicatedJobs").as_array();
  REQUIRE(rjobs.size() == 1);
  CHECK(rjobs[0].at("name") == "node");
  const json::object& pod = obj(rjobs[0], {"template", "spec", "template"});
  CHECK(obj(pod, {"metadata", "labels"}).at("gpupool.io/job-name") == "tj");
  CHECK(obj(pod, {"metadata", "labels"}).at("gpupool.io/kind") == "trainjob");
  const json::object& ps = pod.at("spec").as_object();
  CHECK(json::serialize(ps.at("tolerations")) == R"([{"key":"ssd_node","operator":"Exists"}])");
  CHECK(json::serialize(ps.at("nodeSelector")) == R"({"gpu":"a100"})");
  REQUIRE(ps.at("volumes").as_array().size() == 1);
  CHECK(obj(ps.at("volumes").at(0), {"persistentVolumeClaim"}).at("claimName") == "datasets");
  // ContainerPatch: the trainer container by name, its mounts only.
  REQUIRE(ps.at("containers").as_array().size() == 1);
  const json::object& c = ps.at("containers").at(0).as_object();
  CHECK(c.size() == 2);
  CHECK(c.at("name") == "node");
  CHECK(c.at("volumeMounts").at(0).at("mountPath") == "/data");
}

TEST_CASE("TrainJob: --runtime names the ClusterTrainingRuntime; it applies to TrainJobs only") {
  SubmitOptions o = options("trainjob");
  o.runtime = "deepspeed-distributed";
  CHECK(render(to_workload(o), generic()).workload().at("spec").at("runtimeRef").at("name") == "deepspeed-distributed");
  o.runtime = "Not_A_Name";
  CHECK_THROWS_WITH_AS(to_workload(o), doctest::Contains("runtime"), ValidationError);
  SubmitOptions p = options("pytorch");
  p.runtime = "torch-distributed";
  CHECK_THROWS_WITH_AS(to_workload(p), doctest::Contains("applies to a TrainJob only"), ValidationError);
}

TEST_CASE("TrainJob: what a runtimePatch cannot carry is refused, naming the field and the way out") {
  // Refused with the field named and the message saying `says`.
  auto refused = [](const SubmitOptions& o, const char* field, const char* says) {
    try {
      (void)render(to_workload(o), generic());
      FAIL("rendered");
    } catch (const ValidationError& e) {
      CHECK(e.field() == field);
      CHECK(std::string(e.what()).find(says) != std::string::npos);
    }
  };
  SubmitOptions o = options("trainjob");
  o.scheduler_name = "volcano";
  refused(o, "schedulerName", "use kind jobset or pytorch");
  // Nor a runtime class (Trainer's PodSpecPatch has no runtimeClassName).
  o = options("trainjob");
  o.runtime_class = "nvidia";
  refused(o, "runtimeClassName", "--runtime-class");
  // A JobSet's pods carry it.
  o = options("jobset");
  o.runtime_class = "nvidia";
  CHECK(obj(render(to_workload(o), generic()).workload().at("spec").at("replicatedJobs").at(0),
            {"template", "spec", "template", "spec"})
            .at("runtimeClassName") == "nvidia");
  // The iiis profile runs pods on the host network: a TrainJob cannot say so.
  o = options("trainjob");
  o.gpus = 0;
  CHECK_THROWS_WITH_AS((void)render(to_workload(o), Profile::builtin("iiis")),
                       doctest::Contains("a TrainJob cannot set"), ValidationError);
  // The torch plugin's own variables.
  o = options("trainjob");
  o.env = {"PET_NNODES=4"};
  CHECK_THROWS_WITH_AS(to_workload(o), doctest::Contains("env[0].name"), ValidationError);
}

TEST_CASE("JobSet: one replicatedJob \"node\" of Indexed pods, restart policy and backoff on its Job") {
  Workload w = to_workload(options("jobset"));
  w.backoff_limit = 2;
  w.ttl_seconds_after_finished = 60;
  const Submission s = render(w, generic());
  const json::object& js = s.workload();
  CHECK(js.at("apiVersion") == "jobset.x-k8s.io/v1alpha2");
  CHECK(js.at("kind") == "JobSet");
  CHECK(js.at("spec").at("ttlSecondsAfterFinished") == 60);
  const json::array& rjobs = js.at("spec").at("replicatedJobs").as_array();
  REQUIRE(rjobs.size() == 1);
  CHECK(rjobs[0].at("name") == "node");
  CHECK(rjobs[0].at("replicas") == 1);
  const json::object& job = obj(rjobs[0], {"template", "spec"});
  CHECK(job.at("parallelism") == 3);
  CHECK(job.at("completions") == 3);
  CHECK(job.at("completionMode") == "Indexed");
  CHECK(job.at("backoffLimit") == 2);
  const json::object& ps = obj(job, {"template", "spec"});
  CHECK(ps.at("restartPolicy") == "Never");
  CHECK(json::serialize(ps.at("tolerations")) == R"([{"key":"ssd_node","operator":"Exists"}])");
  CHECK(ps.at("containers").at(0).at("name") == "node");
  w.restart_policy = RestartPolicy::Always;
  CHECK_THROWS_WITH_AS(validate(w), doctest::Contains("JobSet's pods use"), ValidationError);
}

TEST_CASE("TrainJob and JobSet names: a DNS-1035 label whose pod hostnames fit in 63 characters") {
  for (const char* kind : {"trainjob", "jobset"}) {
    CAPTURE(kind);
    SubmitOptions o = options(kind);
    o.name = std::string(55, 'a');  // aaa...-node-0-2 is 64 characters
    CHECK_THROWS_WITH_AS(to_workload(o), doctest::Contains("pod hostname"), ValidationError);
    o.name = std::string(50, 'a');
    CHECK_NOTHROW(to_workload(o));
  }
  CHECK(parse_workload_kind("TrainJob") == WorkloadKind::TrainJob);
  CHECK(parse_workload_kind("jobset") == WorkloadKind::JobSet);
  CHECK(to_string(WorkloadKind::TrainJob) == "TrainJob");
}
