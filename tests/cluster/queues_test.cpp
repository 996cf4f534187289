// Kueue through the facade, on the embedded cluster (which runs a Kueue-compatible controller):
// Cluster::queues(), get()'s queue state, explain()'s "what the ClusterQueue lacks", --gang.
#include <doctest/doctest.h>

#include "gpupool/embedded_cluster.hpp"
#include "gpupool/error.hpp"
#include "gpupool/manifest.hpp"
#include "gpupool/submit_options.hpp"

#include <chrono>
#include <cstdlib>
#include <string>

using namespace gpupool;
using namespace std::chrono_literals;

namespace {

// A 2-GPU ClusterQueue "gpus" (flavor a100) behind LocalQueue "team" in "default".
constexpr const char* kQueues = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: gpus}
spec:
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - {name: cpu, nominalQuota: "16"}
      - {name: nvidia.com/gpu, nominalQuota: 2}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team, namespace: default}
spec: {clusterQueue: gpus}
)";

Workload gpu_job(const std::string& name, std::int64_t gpus, const std::string& queue = "team",
                 const std::string& kind = "job", std::int32_t workers = 1) {
  SubmitOptions o;
  o.kind = kind;
  o.workers = workers;
  o.name = name;
  o.image = "busybox";
  o.gpus = gpus;
  o.queue = queue;
  o.command = "train";
  Workload w = to_workload(o);
  w.annotations["gpupool.io/simulate-duration"] = "30s";
  return w;
}

}  // namespace

TEST_CASE("queues(), get() and explain() of two 2-GPU jobs on a 2-GPU quota; the second runs after the first") {
  EmbeddedCluster c;
  c.apply(parse_manifests(kQueues));
  c.submit(gpu_job("first", 2));
  c.submit(gpu_job("second", 2));

  const QueuesReport q = c.queues();
  REQUIRE(q.local_queues.size() == 1);
  CHECK(q.local_queues[0].cluster_queue == "gpus");
  CHECK(q.local_queues[0].pending == 1);
  CHECK(q.local_queues[0].admitted == 1);
  REQUIRE(q.cluster_queues.size() == 1);
  REQUIRE(q.cluster_queues[0].quotas.size() == 2);
  // GPUs first, whatever the order in the ClusterQueue.
  CHECK(q.cluster_queues[0].quotas[0].resource == "nvidia.com/gpu");
  CHECK(q.cluster_queues[0].quotas[0].nominal == "2");
  CHECK(q.cluster_queues[0].quotas[0].used == "2");
  const std::string text = q.to_text();
  CHECK(text.find("gpus") != std::string::npos);
  CHECK(text.find("a100") != std::string::npos);

  const JobInfo first = c.get("first");
  REQUIRE(first.queue);
  CHECK(first.queue->state == "admitted");
  const JobInfo second = c.get("second");
  REQUIRE(second.queue);
  CHECK(second.queue->queue == "team");
  CHECK(second.queue->state == "pending");
  CHECK(second.queue->position == 1);
  CHECK(second.queue->reason ==
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100, 2 more "
        "needed");
  CHECK(second.to_text().find("QUEUE: team (pending #1: couldn't assign flavors") != std::string::npos);
  CHECK(second.to_json().at("queue").at("state") == "pending");

  const Explanation e = c.explain("second");
  bool lacks = false;
  for (const auto& n : e.notes)
    lacks = lacks || n == "ClusterQueue \"gpus\" lacks nvidia.com/gpu in flavor a100: nominal quota 2, 2 in use by "
                          "admitted workloads, the job asks for 2";
  CHECK(lacks);

  c.server().advance(40s);  // the first job's pod ends; Kueue gives its quota to the second
  CHECK(c.get("first").queue->state == "finished");
  CHECK(c.get("second").queue->state == "admitted");
  CHECK(c.get("second").instances.size() == 1);
}

TEST_CASE("explain: more than the whole quota can never be admitted; a missing LocalQueue is named") {
  EmbeddedCluster c;
  c.apply(parse_manifests(kQueues));
  c.submit(gpu_job("huge", 4));
  bool never = false;
  for (const auto& n : c.explain("huge").notes)
    never = never || n.find("it can never be admitted") != std::string::npos;
  CHECK(never);
  c.submit(gpu_job("lost", 1, "nowhere"));
  CHECK(c.get("lost").queue->reason == "LocalQueue nowhere doesn't exist");
  bool named = false;
  for (const auto& n : c.explain("lost").notes)
    named = named || n.find("LocalQueue \"nowhere\" does not exist") != std::string::npos;
  CHECK(named);
}

TEST_CASE("--gang: a queue is required; with one the job goes through Kueue") {
  EmbeddedCluster c;
  c.apply(parse_manifests(kQueues));
  Workload w = gpu_job("gang", 1, "");
  w.gang = true;
  CHECK_THROWS_WITH_AS(c.submit(w), doctest::Contains("--queue NAME"), ValidationError);
  w.queue = "team";
  c.submit(w);
  CHECK(c.get("gang").queue->state == "admitted");
}

TEST_CASE("two 2-node x 1-GPU TrainJobs (and JobSets) in a 2-GPU queue: get() shows admitted and pending #1") {
  for (const char* kind : {"trainjob", "jobset"}) {
    CAPTURE(std::string(kind));
    EmbeddedCluster c;
    c.apply(parse_manifests(kQueues));
    for (const char* name : {"first", "second"}) c.submit(gpu_job(name, 1, "team", kind, 2));
    CHECK(c.get("first").queue->state == "admitted");
    CHECK(c.get("first").instances.size() == 2);
    const JobInfo second = c.get("second");
    REQUIRE(second.queue);
    CHECK(second.queue->state == "pending");
    CHECK(second.queue->position == 1);
    CHECK(second.queue->workload.rfind(std::string(kind) + "-second-", 0) == 0);
    CHECK(second.to_text().find("QUEUE: team (pending #1: couldn't assign flavors to pod set ") != std::string::npos);
    CHECK(second.instances.empty());

    c.server().advance(40s);  // the first's pods end; Kueue gives its quota to the second
    CHECK(c.get("first").queue->state == "finished");
    CHECK(c.get("second").queue->state == "admitted");
    CHECK(c.get("second").instances.size() == 2);
  }
}

TEST_CASE("--gang on a cluster without Kueue's API: one clear error, nothing created") {
  EmbeddedCluster c;
  // The cluster as one without Kueue: its LocalQueue CRD removed (kubectl, a real client).
  const std::string kubectl = "kubectl --kubeconfig '" + c.admin_kubeconfig() + "' ";
  REQUIRE(std::system((kubectl + "delete crd localqueues.kueue.x-k8s.io >/dev/null").c_str()) == 0);
  Cluster cluster = Cluster::connect({c.admin_kubeconfig()});
  Workload w = gpu_job("gang", 1);
  w.gang = true;
  CHECK_THROWS_WITH_AS(
      cluster.submit(w),
      "--gang: invalid value \"true\": gang scheduling needs Kueue (kueue.x-k8s.io), which this cluster does not "
      "serve: install Kueue, or submit without --gang",
      ValidationError);
  CHECK_THROWS_AS(cluster.get("gang"), Error);
}
