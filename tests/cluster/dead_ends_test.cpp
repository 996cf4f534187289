// Dead ends a job can sit in for ever (issue #20 item 4): get and explain say why — a scheduler
// that does not run, pods the API refuses, a TensorBoard that is not running — and objects too
// large for the API server are refused before anything is sent.
#include <doctest/doctest.h>

#include "seed_cluster.hpp"

#include "gpupool/cluster.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/error.hpp"
#include "gpupool/render.hpp"
#include "gpupool/submit_options.hpp"

#include <boost/json.hpp>

#include <algorithm>

using namespace std::chrono_literals;
using namespace gpupool;
namespace json = boost::json;

namespace {

using testing::Seed;

SubmitOptions job(const char* kind, const char* name) {
  SubmitOptions o;
  o.kind = kind;
  o.name = name;
  o.image = "busybox";
  o.command = "sleep 1000";
  return o;
}

bool any_note(const std::vector<std::string>& notes, const std::string& text) {
  return std::any_of(notes.begin(), notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("get and explain name a scheduler that does not run") {
  Seed seed;
  SubmitOptions o = job("job", "lost");
  o.scheduler_name = "no-such-scheduler";
  seed.admin.submit(to_workload(o));
  // A new pod is not called stuck: a running scheduler looks at it within milliseconds.
  CHECK(seed.admin.get("lost").notes.empty());
  seed.server.advance(1min);
  JobInfo info = seed.admin.get("lost");
  CAPTURE(info.to_text());
  REQUIRE(info.notes.size() == 1);
  CHECK(info.notes[0].rfind("no scheduler named \"no-such-scheduler\" seems to run in this cluster: pod lost-", 0) ==
        0);
  CHECK(info.notes[0].find("has waited 60s without any scheduler looking at it") != std::string::npos);
  CHECK(info.to_text().find("\nNOTE: no scheduler named \"no-such-scheduler\"") != std::string::npos);
  CHECK(any_note(seed.admin.explain("lost").notes, "no scheduler named \"no-such-scheduler\""));

  // A pod the default scheduler found unschedulable has been looked at: no such note.
  SubmitOptions big = job("job", "too-big");
  big.gpus = 64;
  seed.admin.submit(to_workload(big));
  seed.server.advance(1min);
  CHECK_FALSE(any_note(seed.admin.get("too-big").notes, "scheduler"));

  // Once any pod with that schedulerName is on a node, the scheduler exists (it may be busy).
  const std::string node = seed.admin.nodes().rows.front().node.name;
  seed.admin.client().create(ResourceRef{"", "v1", "pods", "Pod"}, "default",
                             json::parse(R"({"metadata":{"name":"bound"},"spec":{"schedulerName":"no-such-scheduler",
                               "nodeName":")" +
                                         node + R"(","containers":[{"name":"c","image":"busybox"}]}})")
                                 .as_object());
  CHECK_FALSE(any_note(seed.admin.get("lost").notes, "scheduler"));
}

TEST_CASE("get and explain show every reason the API refused a job's pods (FailedCreate)") {
  Seed seed;
  // Made without gpupool's pre-flight (which refuses it first), as kubectl apply would.
  SubmitOptions o = job("deployment", "nopc");
  o.priority_class = "nosuch";
  for (const auto& object : seed.admin.render(to_workload(o)).objects)
    seed.admin.client().create(ResourceRef{"apps", "v1", "deployments", "Deployment"}, "default", object);
  JobInfo info = seed.admin.get("nopc");
  CAPTURE(info.to_text());
  CHECK(info.status == JobStatus::Pending);
  REQUIRE(info.notes.size() == 1);
  CHECK(info.notes[0].rfind("replicaset nopc-", 0) == 0);
  CHECK(info.notes[0].find(" could not create pods: ") != std::string::npos);
  CHECK(info.notes[0].find("no PriorityClass with name nosuch was found") != std::string::npos);
  const Explanation e = seed.admin.explain("nopc");
  CHECK(any_note(e.notes, "no PriorityClass with name nosuch was found"));
  CHECK(e.to_text().find("no pods to explain") == std::string::npos);
}

TEST_CASE("the TensorBoard URL is given once its pod runs; until then, why not") {
  Seed seed;
  SubmitOptions o = job("job", "tb");
  o.tensorboard = true;
  // The TensorBoard pod cannot be placed on a node none has.
  seed.admin.submit(to_workload(o));
  JobInfo info = seed.admin.get("tb");
  CAPTURE(info.to_text());
  CHECK_FALSE(info.tensorboard_url);
  CHECK(any_note(info.notes, "TensorBoard is not running yet: pod tb-tensorboard-"));
  CHECK(info.to_text().find("Your tensorboard will be available on") == std::string::npos);
  seed.server.advance(1min);
  info = seed.admin.get("tb");
  CAPTURE(info.to_text());
  CHECK(info.tensorboard_url);
  CHECK_FALSE(any_note(info.notes, "TensorBoard"));
}

TEST_CASE("an object larger than the API server stores is refused before anything is sent") {
  Seed seed;
  SubmitOptions o = job("deployment", "huge");
  o.command = "echo " + std::string(2 * 1024 * 1024, 'x');
  try {
    seed.admin.submit(to_workload(o));
    FAIL("no error");
  } catch (const ValidationError& e) {
    CHECK(e.field() == "deployment.apps/huge");
    CHECK(std::string(e.what()).find("the API server stores at most 1572864 bytes per object") != std::string::npos);
  }
  CHECK_THROWS_AS(seed.admin.get("huge"), ApiError);  // nothing created
  // The same rule for manifests given to apply.
  json::object cm{{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata", {{"name", "big"}}},
                  {"data", {{"blob", std::string(1600 * 1024, 'y')}}}};
  json::object small{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "small"}}}};
  CHECK_THROWS_AS(seed.admin.apply({small, cm}), ValidationError);
  CHECK_THROWS_AS(seed.admin.client().get(ResourceRef{"", "v1", "configmaps", "ConfigMap"}, "default", "small"),
                  ApiError);
}

TEST_CASE("get and explain name a Kubeflow kind no operator acts on") {
  // The CRDs are served, no operator runs.
  EmbeddedCluster admin({.topology = "seed", .server = {.kubeflow_operators = false}});
  EmbeddedServer& server = admin.server();
  for (const char* kind : {"mpi", "tf", "pytorch"}) {
    CAPTURE(kind);
    const std::string name = std::string("orphan-") + kind;
    SubmitOptions o = job(kind, name.c_str());
    o.workers = 1;
    admin.submit(to_workload(o));
  }
  CHECK(admin.get("orphan-mpi").notes.empty());  // an operator acts within a second or so
  server.advance(2min);
  const JobInfo mpi = admin.get("orphan-mpi");
  CAPTURE(mpi.to_text());
  REQUIRE(mpi.notes.size() == 1);
  CHECK(mpi.notes[0] ==
        "no operator has acted on mpijob.kubeflow.org/orphan-mpi in 2m (no status, no pods): the cluster serves the "
        "MPIJob API but nothing runs it; install the MPI Operator (kubeflow/mpi-operator) or ask the cluster's admin");
  CHECK(
      admin.get("orphan-tf").notes.at(0).find("install the Kubeflow Training Operator (kubeflow/training-operator)") !=
      std::string::npos);
  const Explanation e = admin.explain("orphan-pytorch");
  CHECK(e.to_text().find("no pods to explain") == std::string::npos);
  CHECK(e.to_text().find("NOTE: no operator has acted on pytorchjob.kubeflow.org/orphan-pytorch") != std::string::npos);

  // With the operators running, the same jobs get a status and pods: no note.
  Seed seed;
  SubmitOptions o = job("mpi", "run-mpi");
  o.workers = 1;
  seed.admin.submit(to_workload(o));
  seed.server.advance(2min);
  CHECK_FALSE(any_note(seed.admin.get("run-mpi").notes, "operator"));
}

TEST_CASE("a Deployment rollout that cannot go on: get names the pod it waits for and the fix") {
  Seed seed;
  const ResourceRef deployments{"apps", "v1", "deployments", "Deployment"};
  // Every GPU of the seed taken by 3 pods of 2 GPUs, from a manifest with Kubernetes' default
  // strategy (as kubectl apply of one's own YAML makes it): maxSurge 1, maxUnavailable 0.
  SubmitOptions o = job("deployment", "full");
  o.gpus = 2;
  o.workers = 3;
  o.tolerations = {"all"};
  for (auto object : seed.admin.render(to_workload(o)).objects) {
    object["spec"].as_object().erase("strategy");
    seed.admin.client().create(deployments, "default", object);
  }
  seed.server.advance(5s);
  REQUIRE(seed.admin.get("full").status == JobStatus::Running);
  CHECK(seed.admin.get("full").notes.empty());
  const auto new_image =
      json::parse(R"({"spec":{"template":{"spec":{"containers":[{"name":"main","image":"busybox:2"}]}}}})");
  seed.admin.client().patch(deployments, "default", "full", PatchType::strategic, new_image);
  seed.server.advance(5s);
  JobInfo info = seed.admin.get("full");
  CAPTURE(info.to_text());
  REQUIRE(info.notes.size() == 1);
  CHECK(info.notes[0].rfind("deployment full is rolling out (1 of 3 pods updated) and its new pod full-", 0) == 0);
  CHECK(info.notes[0].find("cannot be placed: 0/6 nodes are available") != std::string::npos);
  CHECK(info.notes[0].find("Its RollingUpdate (maxSurge 1, maxUnavailable 0)") != std::string::npos);
  CHECK(
      info.notes[0].find(
          R"(kubectl patch deployment full --type=merge -p '{"spec":{"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":1}}}}')") !=
      std::string::npos);
  CHECK(any_note(seed.admin.explain("full").notes, "is rolling out"));
  // Past progressDeadlineSeconds (600 s), the Deployment's own verdict is shown too.
  seed.server.advance(11min);
  info = seed.admin.get("full");
  CHECK(any_note(info.notes, "the rollout of deployment full exceeded its progress deadline (600s): ReplicaSet "));
  // The fix the note gives lets the rollout finish.
  seed.admin.client().patch(
      deployments, "default", "full", PatchType::merge,
      json::parse(R"({"spec":{"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":1}}}})"));
  for (int i = 0; i < 10; ++i) seed.server.advance(2s);
  info = seed.admin.get("full");
  CAPTURE(info.to_text());
  CHECK(info.notes.empty());
  for (const auto& inst : info.instances) CHECK(inst.phase == "Running");

  // gpupool renders a GPU Deployment old-pod-first: the same change goes through at once.
  SubmitOptions g = job("deployment", "full2");
  g.gpus = 2;
  g.workers = 3;
  g.tolerations = {"all"};
  seed.admin.delete_job("full");
  seed.server.advance(5s);
  seed.admin.submit(to_workload(g));
  seed.server.advance(5s);
  seed.admin.client().patch(deployments, "default", "full2", PatchType::strategic, new_image);
  for (int i = 0; i < 10; ++i) seed.server.advance(2s);
  info = seed.admin.get("full2");
  CAPTURE(info.to_text());
  CHECK(info.notes.empty());
  CHECK(info.instances.size() == 3);
  const auto d = seed.admin.client().get(deployments, "default", "full2");
  CHECK(d.at("status").at("updatedReplicas") == 3);
  CHECK(d.at("status").at("availableReplicas") == 3);
}

TEST_CASE("a Job between a failed pod and its retry: get says it waits out the back-off") {
  Seed seed;
  const ResourceRef jobs{"batch", "v1", "jobs", "Job"};
  SubmitOptions o = job("job", "flaky");
  o.command = "exit 1";
  for (auto object : seed.admin.render(to_workload(o)).objects) {
    // The simulated kubelet's knobs: the container exits with 1 after 2 s.
    auto& tmpl_md = object["spec"].as_object()["template"].as_object()["metadata"].as_object();
    auto& ann = tmpl_md["annotations"];
    if (!ann.is_object()) ann = json::object{};
    ann.as_object()["gpupool.io/simulate-duration"] = "2s";
    ann.as_object()["gpupool.io/simulate-exit-code"] = "1";
    seed.admin.client().create(jobs, "default", object);
  }
  CHECK(seed.admin.get("flaky").notes.empty());  // running its first pod
  seed.server.advance(5s);                       // failed at 2 s (its 2 s run)
  JobInfo info = seed.admin.get("flaky");
  CAPTURE(info.to_text());
  REQUIRE(info.notes.size() == 1);
  CHECK(info.notes[0].rfind("job flaky is waiting to retry: 1 of its pods failed (backoffLimit ", 0) == 0);
  CHECK(info.notes[0].find("makes the next one in 8s") != std::string::npos);  // 10 s after 2 s, at 5 s: 7 s + 1
  seed.server.advance(8s);                                                     // the retry is made: nothing to explain
  info = seed.admin.get("flaky");
  CAPTURE(info.to_text());
  CHECK(!any_note(info.notes, "waiting to retry"));
  CHECK(info.instances.size() == 2);
}
