// The TrainJob (Kubeflow Trainer v2.3.0) and JobSet (v0.12.0) controllers of the embedded cluster:
// TrainJob + ClusterTrainingRuntime -> JobSet -> Jobs -> Pods with the real names, the torch
// plugin's env, the headless Service, conditions and suspend; on the manual clock.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>

#include "controller_world.hpp"
#include "embedded/crd_schema.hpp"

using namespace gpupool::embedded;
using namespace gpupool::embedded::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

// The controllers' world with Kubeflow Trainer's default runtimes installed, as the server ships them.
struct TrainerWorld : World {
  TrainerWorld() {
    for (auto& r : crd::default_cluster_training_runtimes())
      store.create(store.type("trainer.kubeflow.org", "clustertrainingruntimes"), "", std::move(r));
  }
  void set_suspend(const std::string& group, const std::string& resource, const std::string& name, bool s) {
    store.mutate(store.type(group, resource), "default", name,
                 [&](json::object& o) { o["spec"].as_object()["suspend"] = s; });
  }
};

// A TrainJob on torch-distributed: `nodes` nodes, 2 GPUs each, placement and a simulated run
// through its runtimePatches, as gpupool renders it.
std::string trainjob(const std::string& name, int nodes, bool suspend, const std::string& runtime = "torch-distributed",
                     const std::string& kind = "ClusterTrainingRuntime") {
  return fmt::format(R"({{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob",
    "metadata":{{"name":"{0}"}},
    "spec":{{"suspend":{2},"runtimeRef":{{"name":"{3}","apiGroup":"trainer.kubeflow.org","kind":"{4}"}},
      "trainer":{{"image":"python:3.11","command":["torchrun","train.py"],"env":[{{"name":"EPOCHS","value":"3"}}],
        "numNodes":{1},"resourcesPerNode":{{"limits":{{"nvidia.com/gpu":"2"}},"requests":{{"nvidia.com/gpu":"2"}}}}}},
      "runtimePatches":[{{"manager":"gpupool.io/submit","trainingRuntimeSpec":{{"template":{{"spec":{{
        "replicatedJobs":[{{"name":"node","template":{{"spec":{{"template":{{
          "metadata":{{"labels":{{"gpupool.io/job-name":"{0}"}},
            "annotations":{{"gpupool.io/simulate-duration":"10s","gpupool.io/simulate-exit-code":"0"}}}},
          "spec":{{"tolerations":[{{"key":"ssd_node","operator":"Exists"}}],
            "volumes":[{{"name":"data","emptyDir":{{}}}}],
            "containers":[{{"name":"node","volumeMounts":[{{"name":"data","mountPath":"/data"}}]}}]}}}}}}}}}}]}}}}}}}}]}}}})",
                     name, nodes, suspend ? "true" : "false", runtime, kind);
}

// A copy: the objects tests read are temporaries.
std::optional<json::object> condition(const json::object& o, std::string_view type) {
  if (const json::object* c = util::find_condition(util::array_at(o, {"status"}, "conditions"), type)) return *c;
  return std::nullopt;
}

std::string env_of(const json::object& container, std::string_view name) {
  for (const auto& e : container.at("env").as_array())
    if (e.at("name").as_string() == name)
      return e.as_object().contains("value") ? std::string(e.at("value").as_string())
                                             : json::serialize(e.at("valueFrom"));
  return "<unset>";
}

}  // namespace

TEST_CASE("TrainJob -> JobSet -> Job -> pods <trainjob>-node-0-<index>-xxxxx with the torch env, then Complete") {
  TrainerWorld w;
  w.store.create(w.store.type("trainer.kubeflow.org", "trainjobs"), "default", obj(trainjob("tj", 2, false)));
  const json::object tj = w.get("trainer.kubeflow.org", "trainjobs", "tj");

  // The JobSet: named as the TrainJob, owned by it, the runtime's template with the patches.
  const json::object js = w.get("jobset.x-k8s.io", "jobsets", "tj");
  const json::object& ref = js.at("metadata").at("ownerReferences").at(0).as_object();
  CHECK(ref.at("kind") == "TrainJob");
  CHECK(ref.at("apiVersion") == "trainer.kubeflow.org/v1alpha1");
  CHECK(ref.at("uid") == tj.at("metadata").at("uid"));
  CHECK(ref.at("controller") == true);
  CHECK(ref.at("blockOwnerDeletion") == true);
  const json::object& rjob = js.at("spec").at("replicatedJobs").at(0).as_object();
  CHECK(rjob.at("name") == "node");
  CHECK(rjob.at("replicas") == 1);
  CHECK(rjob.at("template").at("spec").at("parallelism") == 2);
  CHECK(rjob.at("template").at("spec").at("completions") == 2);

  // One Job per replicatedJob replica, and the headless Service.
  const json::object job = w.get("batch", "jobs", "tj-node-0");
  CHECK(job.at("metadata").at("labels").at("jobset.sigs.k8s.io/jobset-name") == "tj");
  CHECK(job.at("metadata").at("labels").at("jobset.sigs.k8s.io/replicatedjob-name") == "node");
  CHECK(job.at("metadata").at("labels").at("jobset.sigs.k8s.io/job-index") == "0");
  CHECK(job.at("metadata").at("labels").at("jobset.sigs.k8s.io/job-key").as_string().size() == 40);
  CHECK(job.at("spec").at("completionMode") == "Indexed");
  const json::object svc = w.get("", "services", "tj");
  CHECK(svc.at("spec").at("clusterIP") == "None");
  CHECK(svc.at("spec").at("selector").at("jobset.sigs.k8s.io/jobset-name") == "tj");
  CHECK(svc.at("spec").at("publishNotReadyAddresses") == true);

  // The pods: the real names, hostnames under the Service, the patches, the torch plugin's env.
  auto pods = w.list("", "pods");
  REQUIRE(pods.size() == 2);
  std::set<std::string> hostnames;
  for (const auto& p : pods) {
    const std::string name = at(p, "metadata.name");
    const std::string index(
        p.at("metadata").at("annotations").at("batch.kubernetes.io/job-completion-index").as_string());
    CAPTURE(name);
    CHECK(name.rfind("tj-node-0-" + index + "-", 0) == 0);
    CHECK(name.size() == std::string("tj-node-0-0-xxxxx").size());
    hostnames.insert(at(p, "spec.hostname"));
    CHECK(at(p, "spec.subdomain") == "tj");
    CHECK(at(p, "spec.restartPolicy") == "OnFailure");  // the JobSet webhook's default
    CHECK(json::serialize(p.at("spec").at("tolerations").at(0)) == R"({"key":"ssd_node","operator":"Exists"})");
    CHECK(p.at("metadata").at("labels").at("gpupool.io/job-name") == "tj");
    const json::object& c = p.at("spec").at("containers").at(0).as_object();
    CHECK(c.at("image") == "python:3.11");
    CHECK(c.at("volumeMounts").at(0).at("mountPath") == "/data");
    CHECK(c.at("resources").at("limits").at("nvidia.com/gpu") == "2");
    CHECK(env_of(c, "EPOCHS") == "3");
    CHECK(env_of(c, "PET_NNODES") == "2");
    CHECK(env_of(c, "PET_NPROC_PER_NODE") == "auto");  // GPUs per node: torchrun decides
    CHECK(env_of(c, "PET_NODE_RANK")
              .find(R"("fieldPath":"metadata.annotations['batch.kubernetes.io/job-completion-index']")") !=
          std::string::npos);
    CHECK(env_of(c, "PET_MASTER_ADDR") == "tj-node-0-0.tj");
    CHECK(env_of(c, "PET_MASTER_PORT") == "29500");
    CHECK(c.at("ports").at(0).at("containerPort") == 29500);
  }
  CHECK(hostnames == std::set<std::string>{"tj-node-0-0", "tj-node-0-1"});
  CHECK(!condition(w.get("trainer.kubeflow.org", "trainjobs", "tj"), "Complete").has_value());

  for (int i = 0; i < 6; ++i) w.advance(5s);
  const json::object done_js = w.get("jobset.x-k8s.io", "jobsets", "tj");
  auto completed = condition(done_js, "Completed");
  REQUIRE(completed.has_value());
  CHECK(at(*completed, "reason") == "AllJobsCompleted");
  CHECK(at(*completed, "message") == "jobset completed successfully");
  CHECK(at(done_js, "status.terminalState") == "Completed");
  const json::object done = w.get("trainer.kubeflow.org", "trainjobs", "tj");
  auto complete = condition(done, "Complete");
  REQUIRE(complete.has_value());
  CHECK(at(*complete, "status") == "True");
  CHECK(at(*complete, "reason") == "AllJobsCompleted");
  CHECK(json::serialize(done.at("status").at("jobsStatus")) ==
        R"([{"name":"node","ready":0,"succeeded":1,"failed":0,"active":0,"suspended":0}])");
}

TEST_CASE("suspend: a suspended TrainJob's JobSet and Job run no pods until it is resumed") {
  TrainerWorld w;
  w.store.create(w.store.type("trainer.kubeflow.org", "trainjobs"), "default", obj(trainjob("sus", 1, true)));
  CHECK(w.get("jobset.x-k8s.io", "jobsets", "sus").at("spec").at("suspend") == true);
  CHECK(w.get("batch", "jobs", "sus-node-0").at("spec").at("suspend") == true);
  CHECK(w.list("", "pods").empty());
  auto s = condition(w.get("trainer.kubeflow.org", "trainjobs", "sus"), "Suspended");
  REQUIRE(s.has_value());
  CHECK(at(*s, "status") == "True");
  CHECK(at(*s, "reason") == "Suspended");
  CHECK(at(*s, "message") == "TrainJob is suspended");
  auto jss = condition(w.get("jobset.x-k8s.io", "jobsets", "sus"), "Suspended");
  REQUIRE(jss.has_value());
  CHECK(at(*jss, "reason") == "SuspendedJobs");
  auto jobs = condition(w.get("batch", "jobs", "sus-node-0"), "Suspended");
  REQUIRE(jobs.has_value());
  CHECK(at(*jobs, "reason") == "JobSuspended");

  // Kueue admits it: suspend false on the TrainJob resumes the whole chain.
  w.set_suspend("trainer.kubeflow.org", "trainjobs", "sus", false);
  CHECK(w.get("jobset.x-k8s.io", "jobsets", "sus").at("spec").at("suspend") == false);
  CHECK(w.get("batch", "jobs", "sus-node-0").at("spec").at("suspend") == false);
  REQUIRE(w.list("", "pods").size() == 1);
  s = condition(w.get("trainer.kubeflow.org", "trainjobs", "sus"), "Suspended");
  REQUIRE(s.has_value());
  CHECK(at(*s, "status") == "False");
  CHECK(at(*s, "reason") == "Resumed");
  CHECK(at(*s, "message") == "TrainJob is resumed");
  jss = condition(w.get("jobset.x-k8s.io", "jobsets", "sus"), "Suspended");
  REQUIRE(jss.has_value());
  CHECK(at(*jss, "status") == "False");
  CHECK(at(*jss, "reason") == "ResumeJobs");

  // Suspending again stops the pods.
  w.set_suspend("trainer.kubeflow.org", "trainjobs", "sus", true);
  CHECK(w.get("batch", "jobs", "sus-node-0").at("spec").at("suspend") == true);
  CHECK(w.list("", "pods").empty());
}

TEST_CASE("JobSet: replicas make one Job each; a failed Job fails the JobSet, naming it") {
  TrainerWorld w;
  w.store.create(w.store.type("jobset.x-k8s.io", "jobsets"), "default", obj(R"({
    "apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"js"},
    "spec":{"replicatedJobs":[
      {"name":"a","replicas":2,"template":{"spec":{"parallelism":1,"completions":1,"backoffLimit":0,
        "template":{"metadata":{"annotations":{"gpupool.io/simulate-duration":"10s","gpupool.io/simulate-exit-code":"0"}},
          "spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}},
      {"name":"b","template":{"spec":{"backoffLimit":0,
        "template":{"metadata":{"annotations":{"gpupool.io/simulate-duration":"10s","gpupool.io/simulate-exit-code":"1"}},
          "spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}]}})"));
  std::set<std::string> jobs;
  for (const auto& j : w.list("batch", "jobs")) jobs.insert(at(j, "metadata.name"));
  CHECK(jobs == std::set<std::string>{"js-a-0", "js-a-1", "js-b-0"});
  const json::object a1 = w.get("batch", "jobs", "js-a-1");
  CHECK(a1.at("metadata").at("labels").at("jobset.sigs.k8s.io/job-global-index") == "1");
  CHECK(a1.at("metadata").at("labels").at("jobset.sigs.k8s.io/global-replicas") == "3");
  CHECK(w.get("batch", "jobs", "js-b-0").at("metadata").at("labels").at("jobset.sigs.k8s.io/job-global-index") == "2");
  for (int i = 0; i < 4; ++i) w.advance(5s);
  const json::object js = w.get("jobset.x-k8s.io", "jobsets", "js");
  auto failed = condition(js, "Failed");
  REQUIRE(failed.has_value());
  CHECK(at(*failed, "reason") == "FailedJobs");
  CHECK(at(*failed, "message") == "jobset failed due to one or more job failures (first failed job: js-b-0)");
  CHECK(at(js, "status.terminalState") == "Failed");
  CHECK(!condition(js, "Completed").has_value());
}

TEST_CASE("TrainJob: a missing runtime is an event; a runtime of another kind fails it") {
  TrainerWorld w;
  w.store.create(w.store.type("trainer.kubeflow.org", "trainjobs"), "default",
                 obj(trainjob("missing", 1, false, "no-such-runtime")));
  CHECK(!w.store.find(w.store.type("jobset.x-k8s.io", "jobsets"), "default", "missing"));
  bool event = false;
  for (const auto& e : w.list("", "events"))
    if (at(e, "reason") == "TrainJobResourcesCreationFailed")
      event = at(e, "message") ==
              "TrainJob resources reconciliation failed: not found ClusterTrainingRuntime specified in TrainJob: "
              "clustertrainingruntimes.trainer.kubeflow.org \"no-such-runtime\" not found";
  CHECK(event);

  w.store.create(w.store.type("trainer.kubeflow.org", "trainjobs"), "default",
                 obj(trainjob("odd", 1, false, "torch-distributed", "OddRuntime")));
  auto failed = condition(w.get("trainer.kubeflow.org", "trainjobs", "odd"), "Failed");
  REQUIRE(failed.has_value());
  CHECK(at(*failed, "reason") == "TrainingRuntimeNotSupported");
  CHECK(at(*failed, "message") == "unsupported runtime: OddRuntime.trainer.kubeflow.org");
}

TEST_CASE("the default ClusterTrainingRuntimes are Kubeflow Trainer v2.3.0's") {
  std::set<std::string> names;
  for (const auto& r : crd::default_cluster_training_runtimes()) names.insert(at(r, "metadata.name"));
  CHECK(names.count("torch-distributed") == 1);
  CHECK(names.count("deepspeed-distributed") == 1);
  CHECK(names.count("jax-distributed") == 1);
  CHECK(names.size() == 8);
}
