// The embedded Kueue (embedded/controller_kueue.cpp): Workloads for queued Jobs, Kubeflow jobs,
// JobSets and TrainJobs, quota by flavor, FIFO, all-or-nothing admission, preemption by priority,
// queue status. The clock is the store's manual clock; pods finish by the simulated kubelet
// (gpupool.io/simulate-duration).
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <set>
#include <string>

#include <fmt/format.h>

#include "controller_world.hpp"
#include "embedded/controller_kueue.hpp"
#include "embedded/crd_schema.hpp"

using namespace gpupool::embedded;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }
// The value at a JSON pointer ("/status/admission/podSetAssignments/0/flavors/nvidia.com~1gpu")
// as text: strings bare, other values serialized; "" when missing.
std::string at(const json::object& o, std::string_view pointer) {
  std::error_code ec;
  const json::value root(o);
  const json::value* v = root.find_pointer(pointer, ec);
  if (!v) return {};
  return v->is_string() ? std::string(v->as_string()) : json::serialize(*v);
}

// The seed nodes, the controllers and a kubelet (testing::World: bind_all, advance), with Kueue's objects.
struct Kueue : testing::World {
  const ResourceType& jobs = store.type("batch", "jobs");
  const ResourceType& workloads = store.type("kueue.x-k8s.io", "workloads");

  // A 2-GPU ClusterQueue (flavor "a100", nodeLabels of the seed's P100 nodes) behind LocalQueue "team" in "default".
  explicit Kueue(std::string_view strategy = "BestEffortFIFO", std::string_view preemption = "Never", int gpus = 2) {
    store.create(store.type("kueue.x-k8s.io", "resourceflavors"), "", obj(R"({"metadata":{"name":"a100"},
                        "spec":{"nodeLabels":{"aliyun.accelerator/nvidia_name":"Tesla-P100-PCIE-16GB"}}})"));
    store.create(store.type("kueue.x-k8s.io", "clusterqueues"), "",
                 obj(fmt::format(R"({{"metadata":{{"name":"gpus"}},"spec":{{"namespaceSelector":{{}},
                   "queueingStrategy":"{}","preemption":{{"withinClusterQueue":"{}"}},
                   "resourceGroups":[{{"coveredResources":["cpu","nvidia.com/gpu"],
                     "flavors":[{{"name":"a100","resources":[{{"name":"cpu","nominalQuota":"32"}},
                                                            {{"name":"nvidia.com/gpu","nominalQuota":{}}}]}}]}}]}}}})",
                                 strategy, preemption, gpus)));
    store.create(store.type("kueue.x-k8s.io", "localqueues"), "default",
                 obj(R"({"metadata":{"name":"team"},"spec":{"clusterQueue":"gpus"}})"));
    store.create(store.type("scheduling.k8s.io", "priorityclasses"), "",
                 obj(R"({"metadata":{"name":"high"},"value":1000})"));
  }
  // A queued Job as gpupool renders it: the queue label, spec.suspend true.
  void submit(const std::string& name, int pods_n, int gpus_each, std::string_view duration = "10s",
              std::string_view priority_class = "") {
    store.create(jobs, "default",
                 obj(fmt::format(R"({{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"{}",
                   "labels":{{"kueue.x-k8s.io/queue-name":"team"}}}},
                   "spec":{{"suspend":true,"parallelism":{},"completions":{},
                   "template":{{"metadata":{{"annotations":{{"gpupool.io/simulate-duration":"{}"}}}},
                   "spec":{{"restartPolicy":"Never",{}"containers":[{{"name":"c","image":"busybox",
                     "resources":{{"limits":{{"nvidia.com/gpu":"{}"}}}}}}]}}}}}}}})",
                                 name, pods_n, pods_n, duration,
                                 priority_class.empty() ? std::string()
                                                        : fmt::format(R"("priorityClassName":"{}",)", priority_class),
                                 gpus_each)));
  }
  json::object job(const std::string& name) const { return store.get(jobs, "default", name); }
  json::object workload_of(const std::string& job_name) const {
    const std::string uid = at(job(job_name), "/metadata/uid");
    return store.get(workloads, "default", kueue_workload_name("Job", "batch", job_name, uid));
  }
  std::size_t pods_of(const std::string& job_name) const {
    std::size_t n = 0;
    for (const auto& p : store.list(pods, "default").items)
      if (at(*p, "/metadata/labels/job-name") == job_name) ++n;
    return n;
  }
  static const json::object* condition(const json::object& o, std::string_view type) {
    const json::value* st = o.if_contains("status");
    const json::value* cs = st && st->is_object() ? st->as_object().if_contains("conditions") : nullptr;
    if (cs && cs->is_array())
      for (const auto& c : cs->as_array())
        if (c.at("type").is_string() && c.at("type").as_string() == type) return &c.as_object();
    return nullptr;
  }
  static std::string cond(const json::object& o, std::string_view type) {
    const json::object* c = condition(o, type);
    return c ? fmt::format("{} {}: {}", json::value_to<std::string>(c->at("status")),
                           json::value_to<std::string>(c->at("reason")), json::value_to<std::string>(c->at("message")))
             : "none";
  }
};

}  // namespace

TEST_CASE("kueue_workload_name: jobframework's <kind>-<name>-<sha1 of kind, group, name, uid>") {
  // Expected values from Python's hashlib: sha1(b"Job\nbatch\ntrain\n<uid>").hexdigest()[:5].
  CHECK(kueue_workload_name("Job", "batch", "train", "0f5a6b2e-1c2d-4e5f-8a9b-0c1d2e3f4a5b") == "job-train-661d4");
  CHECK(kueue_workload_name("PyTorchJob", "kubeflow.org", "bert", "11111111-2222-3333-4444-555555555555") ==
        "pytorchjob-bert-faf8e");
}

TEST_CASE("two 2-GPU jobs on a 2-GPU quota: the second waits, then runs when the first finishes") {
  for (const char* strategy : {"StrictFIFO", "BestEffortFIFO"}) {
    CAPTURE(std::string(strategy));
    Kueue k(strategy);
    k.submit("first", 1, 2, "10s");
    k.submit("second", 1, 2, "10s");

    // The first is admitted and started: unsuspended, the flavor's nodeLabels in its nodeSelector.
    json::object w1 = k.workload_of("first");
    CHECK(Kueue::cond(w1, "QuotaReserved") == "True QuotaReserved: Quota reserved in ClusterQueue gpus");
    CHECK(Kueue::cond(w1, "Admitted") == "True Admitted: The workload is admitted");
    CHECK(at(w1, "/status/admission/clusterQueue") == "gpus");
    CHECK(at(w1, "/status/admission/podSetAssignments/0/flavors/nvidia.com~1gpu") == "a100");
    CHECK(at(w1, "/spec/podSets/0/name") == "main");
    CHECK(at(w1, "/spec/podSets/0/count") == "1");
    CHECK(at(w1, "/spec/queueName") == "team");
    CHECK(at(k.job("first"), "/spec/suspend") == "false");
    CHECK(at(k.job("first"), "/spec/template/spec/nodeSelector/aliyun.accelerator~1nvidia_name") ==
          "Tesla-P100-PCIE-16GB");
    CHECK(k.pods_of("first") == 1);

    // The second waits with Kueue's message, its Job suspended and without pods.
    json::object w2 = k.workload_of("second");
    CHECK(Kueue::cond(w2, "QuotaReserved") ==
          "False Pending: couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
          "flavor a100, 2 more needed");
    CHECK(Kueue::condition(w2, "Admitted") == nullptr);
    CHECK(at(k.job("second"), "/spec/suspend") == "true");
    CHECK(k.pods_of("second") == 0);
    CHECK(Kueue::cond(k.job("second"), "Suspended") == "True JobSuspended: Job suspended");

    // Queue status as Kueue reports it.
    json::object cq = k.store.get(k.store.type("kueue.x-k8s.io", "clusterqueues"), "", "gpus");
    CHECK(at(cq, "/status/pendingWorkloads") == "1");
    CHECK(at(cq, "/status/admittedWorkloads") == "1");
    CHECK(at(cq, "/status/flavorsReservation/0/resources/1/total") == "2");
    json::object lq = k.store.get(k.store.type("kueue.x-k8s.io", "localqueues"), "default", "team");
    CHECK(at(lq, "/status/pendingWorkloads") == "1");
    CHECK(at(lq, "/status/flavorUsage/0/resources/1/total") == "2");

    // The first finishes: its Workload is Finished, the quota goes to the second.
    for (int i = 0; i < 3; ++i) k.advance(5s);
    CHECK(Kueue::cond(k.job("first"), "Complete").rfind("True", 0) == 0);
    CHECK(Kueue::cond(k.workload_of("first"), "Finished") ==
          "True Succeeded: Reached expected number of succeeded pods");
    w2 = k.workload_of("second");
    CHECK(Kueue::cond(w2, "QuotaReserved") == "True QuotaReserved: Quota reserved in ClusterQueue gpus");
    CHECK(at(k.job("second"), "/spec/suspend") == "false");
    CHECK(Kueue::cond(k.job("second"), "Suspended") == "False JobResumed: Job resumed");
    CHECK(k.pods_of("second") == 1);
    cq = k.store.get(k.store.type("kueue.x-k8s.io", "clusterqueues"), "", "gpus");
    CHECK(at(cq, "/status/pendingWorkloads") == "0");
    CHECK(at(cq, "/status/admittedWorkloads") == "1");
  }
}

TEST_CASE("all or nothing: a job whose pods do not all fit gets none; StrictFIFO blocks, BestEffortFIFO goes on") {
  struct Row {
    const char* strategy;
    std::size_t small_pods;  // pods of the 1-GPU job queued behind the 3-GPU one
  };
  for (const Row r : {Row{"StrictFIFO", 0}, Row{"BestEffortFIFO", 1}}) {
    CAPTURE(std::string(r.strategy));
    Kueue k(r.strategy);
    k.submit("big", 3, 1);  // 3 pods x 1 GPU > the 2-GPU quota
    k.submit("small", 1, 1);
    CHECK(k.pods_of("big") == 0);
    CHECK(Kueue::cond(k.workload_of("big"), "QuotaReserved") ==
          "False Pending: couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor "
          "a100, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)");
    CHECK(k.pods_of("small") == r.small_pods);
  }
}

TEST_CASE("preemption within the ClusterQueue: a higher-priority job evicts a lower one, which is suspended again") {
  Kueue k("BestEffortFIFO", "LowerPriority");
  k.submit("low", 1, 2, "1000s");
  CHECK(k.pods_of("low") == 1);
  // Admitted: the flavor's nodeLabels and the podSet label are on the template.
  CHECK(at(k.job("low"), "/spec/template/spec/nodeSelector/aliyun.accelerator~1nvidia_name") == "Tesla-P100-PCIE-16GB");
  CHECK(at(k.job("low"), "/spec/template/metadata/labels/kueue.x-k8s.io~1podset") == "main");
  k.submit("high", 1, 2, "10s", "high");
  // Evicted: RestorePodSpec gives the template back as the Workload recorded it.
  CHECK(at(k.job("low"), "/spec/template/spec/nodeSelector").empty());
  CHECK(at(k.job("low"), "/spec/template/metadata/labels/kueue.x-k8s.io~1podset").empty());
  CHECK(at(k.job("low"), "/spec/template/metadata/labels/job-name") == "low");
  CHECK(at(k.job("low"), "/spec/template/metadata/annotations/gpupool.io~1simulate-duration") == "1000s");
  json::object low = k.workload_of("low");
  CHECK(Kueue::cond(low, "Evicted").rfind("True Preempted: Preempted to accommodate a workload (UID: ", 0) == 0);
  CHECK(Kueue::cond(low, "Preempted").rfind("True InClusterQueue: ", 0) == 0);
  CHECK(Kueue::cond(low, "QuotaReserved").rfind("False Pending: ", 0) == 0);
  CHECK(at(k.job("low"), "/spec/suspend") == "true");
  CHECK(k.pods_of("low") == 0);
  CHECK(at(k.workload_of("high"), "/spec/priority") == "1000");
  CHECK(Kueue::cond(k.workload_of("high"), "Admitted") == "True Admitted: The workload is admitted");
  CHECK(k.pods_of("high") == 1);
  // Without LowerPriority the low job keeps its quota.
  Kueue never("BestEffortFIFO", "Never");
  never.submit("low", 1, 2, "1000s");
  never.submit("high", 1, 2, "10s", "high");
  CHECK(never.pods_of("low") == 1);
  CHECK(never.pods_of("high") == 0);
}

TEST_CASE("a Workload of a missing LocalQueue is Inadmissible with Kueue's message") {
  Kueue k;
  k.store.create(k.jobs, "default", obj(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"lost",
                   "labels":{"kueue.x-k8s.io/queue-name":"nowhere"}},
                   "spec":{"suspend":true,"template":{"spec":{"restartPolicy":"Never",
                   "containers":[{"name":"c","image":"busybox"}]}}}})"));
  CHECK(Kueue::cond(k.workload_of("lost"), "QuotaReserved") == "False Inadmissible: LocalQueue nowhere doesn't exist");
  CHECK(k.pods_of("lost") == 0);
}

TEST_CASE("a queued PyTorchJob: one podSet per replica type, all admitted together, runPolicy.suspend") {
  Kueue k;
  const ResourceType& pytorchjobs = k.store.type("kubeflow.org", "pytorchjobs");
  auto submit = [&](const std::string& name) {
    k.store.create(pytorchjobs, "default",
                   obj(fmt::format(R"({{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{{"name":"{}",
                     "labels":{{"kueue.x-k8s.io/queue-name":"team"}}}},
                     "spec":{{"runPolicy":{{"suspend":true}},"pytorchReplicaSpecs":{{
                       "Master":{{"replicas":1,"template":{{"spec":{{"containers":[{{"name":"pytorch","image":"b",
                         "resources":{{"limits":{{"nvidia.com/gpu":"1"}}}}}}]}}}}}},
                       "Worker":{{"replicas":1,"template":{{"spec":{{"containers":[{{"name":"pytorch","image":"b",
                         "resources":{{"limits":{{"nvidia.com/gpu":"1"}}}}}}]}}}}}}}}}}}})",
                                   name)));
  };
  auto pods_of = [&](const std::string& job) {
    std::size_t n = 0;
    for (const auto& p : k.store.list(k.pods, "default").items)
      if (at(*p, "/metadata/labels/training.kubeflow.org~1job-name") == job) ++n;
    return n;
  };
  submit("ddp");
  submit("ddp2");
  const json::object job = k.store.get(pytorchjobs, "default", "ddp");
  const json::object w = k.store.get(
      k.workloads, "default", kueue_workload_name("PyTorchJob", "kubeflow.org", "ddp", at(job, "/metadata/uid")));
  CHECK(at(w, "/spec/podSets/0/name") == "master");
  CHECK(at(w, "/spec/podSets/1/name") == "worker");
  CHECK(at(w, "/status/admission/podSetAssignments/1/resourceUsage/nvidia.com~1gpu") == "1");
  CHECK(at(job, "/spec/runPolicy/suspend") == "false");
  CHECK(pods_of("ddp") == 2);
  // The second needs 2 GPUs too: suspended by its operator, no pods at all.
  const json::object job2 = k.store.get(pytorchjobs, "default", "ddp2");
  CHECK(at(job2, "/spec/runPolicy/suspend") == "true");
  CHECK(Kueue::cond(job2, "Suspended") == "True PyTorchJobSuspended: PyTorchJob ddp2 is suspended.");
  CHECK(pods_of("ddp2") == 0);
}

namespace {

// Kueue's world with Trainer's default runtimes, and a flavor that also carries a toleration.
struct TrainerKueue : Kueue {
  const ResourceType& trainjobs = store.type("trainer.kubeflow.org", "trainjobs");
  const ResourceType& jobsets = store.type("jobset.x-k8s.io", "jobsets");
  TrainerKueue() {
    for (auto& r : crd::default_cluster_training_runtimes())
      store.create(store.type("trainer.kubeflow.org", "clustertrainingruntimes"), "", std::move(r));
    store.mutate(store.type("kueue.x-k8s.io", "resourceflavors"), "", "a100", [](json::object& o) {
      o["spec"].as_object()["tolerations"] =
          json::parse(R"([{"key":"gpupool.io/kueue","operator":"Exists","effect":"NoSchedule"}])");
    });
  }
  // A queued TrainJob as gpupool renders it: `nodes` nodes of 1 GPU on torch-distributed, suspended,
  // gpupool's runtime patch (a simulated 10 s run).
  void submit_trainjob(const std::string& name, int nodes) {
    store.create(trainjobs, "default",
                 obj(fmt::format(R"({{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob",
      "metadata":{{"name":"{0}","labels":{{"kueue.x-k8s.io/queue-name":"team"}}}},
      "spec":{{"suspend":true,"runtimeRef":{{"name":"torch-distributed","apiGroup":"trainer.kubeflow.org",
        "kind":"ClusterTrainingRuntime"}},
        "trainer":{{"image":"python:3.11","command":["torchrun","train.py"],"numNodes":{1},
          "resourcesPerNode":{{"limits":{{"nvidia.com/gpu":"1"}}}}}},
        "runtimePatches":[{{"manager":"gpupool.io/submit","trainingRuntimeSpec":{{"template":{{"spec":{{
          "replicatedJobs":[{{"name":"node","template":{{"spec":{{"template":{{"metadata":{{
            "annotations":{{"gpupool.io/simulate-duration":"10s"}}}}}}}}}}}}]}}}}}}}}]}}}})",
                                 name, nodes)));
  }
  // A queued JobSet: a 1-pod CPU "driver" and a "workers" replicatedJob of 2 replicas x 1 pod x 1 GPU.
  void submit_jobset(const std::string& name) {
    store.create(jobsets, "default",
                 obj(fmt::format(R"({{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet",
      "metadata":{{"name":"{0}","labels":{{"kueue.x-k8s.io/queue-name":"team"}}}},
      "spec":{{"suspend":true,"replicatedJobs":[
        {{"name":"driver","replicas":1,"template":{{"spec":{{"parallelism":1,"completions":1,"template":{{
          "metadata":{{"annotations":{{"gpupool.io/simulate-duration":"10s"}}}},
          "spec":{{"restartPolicy":"Never","containers":[{{"name":"c","image":"busybox",
            "resources":{{"requests":{{"cpu":"1"}}}}}}]}}}}}}}}}},
        {{"name":"workers","replicas":2,"template":{{"spec":{{"parallelism":1,"completions":1,"template":{{
          "metadata":{{"annotations":{{"gpupool.io/simulate-duration":"10s"}}}},
          "spec":{{"restartPolicy":"Never","containers":[{{"name":"c","image":"busybox",
            "resources":{{"limits":{{"nvidia.com/gpu":"1"}}}}}}]}}}}}}}}}}]}}}})",
                                 name)));
  }
  json::object workload(std::string_view kind, std::string_view group, const ResourceType& t,
                        const std::string& name) const {
    return store.get(workloads, "default",
                     kueue_workload_name(kind, group, name, at(store.get(t, "default", name), "/metadata/uid")));
  }
  // A Workload's podSets: "name xCOUNT, ...".
  static std::string podsets_text(const json::object& w) {
    std::string out;
    for (const auto& p : w.at("spec").at("podSets").as_array())
      out += fmt::format("{}{} x{}", out.empty() ? "" : ", ", json::value_to<std::string>(p.at("name")),
                         p.at("count").as_int64());
    return out;
  }
  // The pods of a JobSet (and so of a TrainJob, whose JobSet is named as it).
  std::vector<json::object> pods_of_jobset(const std::string& name) const {
    std::vector<json::object> out;
    for (const auto& p : store.list(pods, "default").items)
      if (at(*p, "/metadata/labels/jobset.sigs.k8s.io~1jobset-name") == name) out.push_back(*p);
    return out;
  }
};

}  // namespace

TEST_CASE("two 2-node x 1-GPU TrainJobs on a 2-GPU quota: the second waits, then runs when the first finishes") {
  TrainerKueue k;
  k.submit_trainjob("first", 2);
  k.submit_trainjob("second", 2);

  // Kueue's TrainJob integration: a Workload trainjob-<name>-<hash> with the podSets of the JobSet
  // the runtime builds (one per replicatedJob, the trainer's `node` of numNodes pods).
  json::object w1 = k.workload("TrainJob", "trainer.kubeflow.org", k.trainjobs, "first");
  CHECK(at(w1, "/metadata/name").rfind("trainjob-first-", 0) == 0);
  CHECK(at(w1, "/metadata/ownerReferences/0/kind") == "TrainJob");
  CHECK(TrainerKueue::podsets_text(w1) == "node x2");
  CHECK(at(w1, "/spec/podSets/0/template/spec/containers/0/resources/limits/nvidia.com~1gpu") == "1");
  CHECK(Kueue::cond(w1, "Admitted") == "True Admitted: The workload is admitted");
  CHECK(at(w1, "/status/admission/podSetAssignments/0/resourceUsage/nvidia.com~1gpu") == "2");

  // Started: unsuspended, the flavor's nodeLabels and tolerations in Kueue's runtime patch, and so on
  // the JobSet and every pod.
  const json::object tj1 = k.store.get(k.trainjobs, "default", "first");
  CHECK(at(tj1, "/spec/suspend") == "false");
  CHECK(at(tj1, "/spec/runtimePatches/0/manager") == "gpupool.io/submit");
  CHECK(at(tj1, "/spec/runtimePatches/1/manager") == "kueue.x-k8s.io/manager");
  CHECK(at(tj1, "/spec/runtimePatches/1/trainingRuntimeSpec/template/spec/replicatedJobs/0/name") == "node");
  const json::object js1 = k.store.get(k.jobsets, "default", "first");
  CHECK(at(js1, "/spec/suspend") == "false");
  CHECK(at(js1, "/spec/replicatedJobs/0/template/spec/template/spec/nodeSelector/aliyun.accelerator~1nvidia_name") ==
        "Tesla-P100-PCIE-16GB");
  // (The TrainJob's JobSet is part of it: no Workload of its own.)
  CHECK(k.store.list(k.workloads, "default").items.size() == 2);
  auto pods1 = k.pods_of_jobset("first");
  REQUIRE(pods1.size() == 2);
  for (const auto& p : pods1) {
    CHECK(at(p, "/spec/nodeSelector/aliyun.accelerator~1nvidia_name") == "Tesla-P100-PCIE-16GB");
    CHECK(at(p, "/metadata/labels/kueue.x-k8s.io~1podset") == "node");
    CHECK(at(p, "/spec/tolerations").find(R"("key":"gpupool.io/kueue")") != std::string::npos);
  }

  // The second waits: its Workload pending with Kueue's message, TrainJob and JobSet suspended, no pods.
  json::object w2 = k.workload("TrainJob", "trainer.kubeflow.org", k.trainjobs, "second");
  CHECK(Kueue::cond(w2, "QuotaReserved") ==
        "False Pending: couldn't assign flavors to pod set node: insufficient unused quota for nvidia.com/gpu in "
        "flavor a100, 2 more needed");
  CHECK(at(k.store.get(k.trainjobs, "default", "second"), "/spec/suspend") == "true");
  CHECK(at(k.store.get(k.jobsets, "default", "second"), "/spec/suspend") == "true");
  CHECK(k.pods_of_jobset("second").empty());

  // The first completes: its Workload is Finished, the second is admitted and runs.
  for (int i = 0; i < 4; ++i) k.advance(5s);
  CHECK(Kueue::cond(k.store.get(k.trainjobs, "default", "first"), "Complete").rfind("True", 0) == 0);
  CHECK(Kueue::cond(k.workload("TrainJob", "trainer.kubeflow.org", k.trainjobs, "first"), "Finished") ==
        "True Succeeded: jobset completed successfully");
  w2 = k.workload("TrainJob", "trainer.kubeflow.org", k.trainjobs, "second");
  CHECK(Kueue::cond(w2, "QuotaReserved") == "True QuotaReserved: Quota reserved in ClusterQueue gpus");
  CHECK(at(k.store.get(k.trainjobs, "default", "second"), "/spec/suspend") == "false");
  auto pods2 = k.pods_of_jobset("second");
  REQUIRE(pods2.size() == 2);
  CHECK(at(pods2[0], "/spec/nodeSelector/aliyun.accelerator~1nvidia_name") == "Tesla-P100-PCIE-16GB");
  for (int i = 0; i < 4; ++i) k.advance(5s);
  CHECK(Kueue::cond(k.workload("TrainJob", "trainer.kubeflow.org", k.trainjobs, "second"), "Finished")
            .rfind("True Succeeded", 0) == 0);
}

TEST_CASE("a preempted TrainJob is suspended again and Kueue's runtime patch emptied") {
  TrainerKueue k;
  k.store.mutate(k.store.type("kueue.x-k8s.io", "clusterqueues"), "", "gpus", [](json::object& o) {
    o["spec"].as_object()["preemption"].as_object()["withinClusterQueue"] = "LowerPriority";
  });
  k.submit_trainjob("low", 2);
  REQUIRE(k.pods_of_jobset("low").size() == 2);
  k.submit("high", 1, 2, "10s", "high");
  CHECK(Kueue::cond(k.workload("TrainJob", "trainer.kubeflow.org", k.trainjobs, "low"), "Evicted")
            .rfind("True Preempted: ", 0) == 0);
  const json::object low = k.store.get(k.trainjobs, "default", "low");
  CHECK(at(low, "/spec/suspend") == "true");
  CHECK(at(low, "/spec/runtimePatches/1/manager") == "kueue.x-k8s.io/manager");
  CHECK(at(low, "/spec/runtimePatches/1/trainingRuntimeSpec/template/spec/replicatedJobs").empty());
  CHECK(at(k.store.get(k.jobsets, "default", "low"), "/spec/suspend") == "true");
  CHECK(k.pods_of("high") == 1);
}

TEST_CASE("two queued JobSets of 2 GPUs on a 2-GPU quota: a podSet per replicatedJob; the second waits") {
  TrainerKueue k;
  k.submit_jobset("first");
  k.submit_jobset("second");
  json::object w1 = k.workload("JobSet", "jobset.x-k8s.io", k.jobsets, "first");
  CHECK(at(w1, "/metadata/name").rfind("jobset-first-", 0) == 0);
  // jobs/jobset PodSets: one per replicatedJob, replicas x min(parallelism, completions) pods.
  CHECK(TrainerKueue::podsets_text(w1) == "driver x1, workers x2");
  CHECK(Kueue::cond(w1, "Admitted") == "True Admitted: The workload is admitted");
  CHECK(at(w1, "/status/admission/podSetAssignments/1/resourceUsage/nvidia.com~1gpu") == "2");
  const json::object js1 = k.store.get(k.jobsets, "default", "first");
  CHECK(at(js1, "/spec/suspend") == "false");
  CHECK(at(js1, "/spec/replicatedJobs/1/template/spec/template/metadata/labels/kueue.x-k8s.io~1podset") == "workers");
  // The Jobs created while suspended take the template's nodeSelector when the JobSet resumes them.
  auto pods1 = k.pods_of_jobset("first");
  REQUIRE(pods1.size() == 3);
  for (const auto& p : pods1) {
    CHECK(at(p, "/spec/nodeSelector/aliyun.accelerator~1nvidia_name") == "Tesla-P100-PCIE-16GB");
    CHECK(at(p, "/spec/tolerations").find(R"("key":"gpupool.io/kueue")") != std::string::npos);
  }

  CHECK(Kueue::cond(k.workload("JobSet", "jobset.x-k8s.io", k.jobsets, "second"), "QuotaReserved") ==
        "False Pending: couldn't assign flavors to pod set workers: insufficient unused quota for nvidia.com/gpu in "
        "flavor a100, 2 more needed");
  CHECK(at(k.store.get(k.jobsets, "default", "second"), "/spec/suspend") == "true");
  CHECK(k.pods_of_jobset("second").empty());

  for (int i = 0; i < 4; ++i) k.advance(5s);
  CHECK(Kueue::cond(k.workload("JobSet", "jobset.x-k8s.io", k.jobsets, "first"), "Finished") ==
        "True Succeeded: jobset completed successfully");
  CHECK(Kueue::cond(k.workload("JobSet", "jobset.x-k8s.io", k.jobsets, "second"), "Admitted") ==
        "True Admitted: The workload is admitted");
  CHECK(k.pods_of_jobset("second").size() == 3);
}
