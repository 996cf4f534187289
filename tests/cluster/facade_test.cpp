// The Cluster facade end to end against the embedded cluster over HTTPS: the seed's toleration
// walkthrough, explain, dry runs, rollback of half-done submissions, wait, logs, namespaces.
#include <doctest/doctest.h>
#include <optional>

#include "embedded/server_store.hpp"
#include "gpupool/client.hpp"
#include "gpupool/cluster.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "gpupool/submit_options.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using namespace gpupool;

namespace {

const ResourceRef kPvcs{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"};
const ResourceRef kBatchJobs{"batch", "v1", "jobs", "Job"};

constexpr const char* kHorovod =
    "registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5";

Workload seed_mpi(const std::string& name, std::vector<std::string> tolerations) {
  SubmitOptions o;
  o.kind = "mpi";
  o.name = name;
  o.gpus = 1;
  o.workers = 1;
  o.tolerations = std::move(tolerations);
  o.image = kHorovod;
  o.tensorboard = true;
  o.command = "mpirun python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py --model resnet101";
  return to_workload(o);
}

struct SeedCluster {
  EmbeddedCluster admin{{.topology = "seed", .server = {.users = {"alice", "bob"}}}};
  EmbeddedServer& server = admin.server();

  void taint_like_the_seed() {
    admin.taint("cn-beijing.192.168.3.228", {parse_taint_change("gpu_node=invalid:NoSchedule")});
    admin.taint("cn-beijing.192.168.3.229", {parse_taint_change("gpu_node=invalid:NoSchedule")});
    admin.taint("cn-beijing.192.168.3.230", {parse_taint_change("ssd_node=invalid:NoSchedule")});
  }
};

std::string ips(const JobInfo& info) {
  std::string out;
  for (const auto& i : info.instances) out += i.name + "@" + i.node_ip + " ";
  return out;
}

}  // namespace

TEST_CASE("nodes: the seed's kubectl get nodes columns, taints and GPUs") {
  SeedCluster c;
  NodeList nodes = c.admin.nodes();
  REQUIRE(nodes.rows.size() == 6);
  std::string text = nodes.to_text();
  CHECK(text.rfind("NAME                       STATUS   ROLES    AGE", 0) == 0);
  CHECK(text.find("cn-beijing.192.168.3.225   Ready    master") != std::string::npos);
  CHECK(text.find("cn-beijing.192.168.3.228   Ready    <none>") != std::string::npos);
  CHECK(text.find("v1.12.6-aliyun.1") != std::string::npos);

  c.taint_like_the_seed();
  nodes = c.admin.nodes();
  auto row = std::find_if(nodes.rows.begin(), nodes.rows.end(),
                          [](const NodeRow& r) { return r.node.name == "cn-beijing.192.168.3.230"; });
  REQUIRE(row != nodes.rows.end());
  CHECK(row->node.taints == std::vector<Taint>{{"ssd_node", "invalid", TaintEffect::NoSchedule}});
  CHECK(row->gpus_total > 0);
  CHECK(nodes.to_text(true).find("ssd_node=invalid:NoSchedule") != std::string::npos);

  // Untaint (kubectl's KEY- form) and tainting twice is an error naming the taint.
  c.admin.taint("cn-beijing.192.168.3.230", {parse_taint_change("ssd_node-")});
  nodes = c.admin.nodes();
  row = std::find_if(nodes.rows.begin(), nodes.rows.end(),
                     [](const NodeRow& r) { return r.node.name == "cn-beijing.192.168.3.230"; });
  CHECK(row->node.taints.empty());
}

// The GPUs `nodes` / `top node` count as allocated: pods bound to the node and not finished, read in
// pages with the field selector spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed, from
// every namespace for the admin and from its own for a user who may not list the others.
TEST_CASE("nodes: GPUs allocated by bound unfinished pods, every namespace or the user's own") {
  SeedCluster c;
  KubeConfigOptions ko;
  ko.path = c.server.admin_kubeconfig();
  Client admin(load_kubeconfig(ko));
  const ResourceRef pods{"", "v1", "pods", "Pod"};
  const std::string node = "cn-beijing.192.168.3.228";
  auto pod = [&](const std::string& ns, const std::string& name, int gpus) {
    boost::json::object p{
        {"metadata", {{"name", name}}},
        {"spec",
         {{"nodeName", node},
          {"containers",
           boost::json::array{{{"name", "c"},
                               {"image", "busybox"},
                               {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
    admin.create(pods, ns, p);
  };
  auto allocated = [&](const Cluster& cluster) {
    for (const auto& row : cluster.nodes().rows)
      if (row.node.name == node) return row.gpus_allocated;
    FAIL("no row for " << node);
    return std::int64_t{-1};
  };
  pod("alice", "a-running", 2);
  pod("bob", "b-running", 1);
  pod("bob", "b-done", 4);
  // Finished as the kubelet reports it (a status write; the Client has no status subresource call).
  auto& store = embedded::store_of(c.server);
  store.mutate(
      store.type("", "pods"), "bob", "b-done",
      [](boost::json::object& p) {
        boost::json::value& status = p["status"];
        if (!status.is_object()) status = boost::json::object{};
        status.as_object()["phase"] = "Succeeded";
      },
      {}, "status");
  CHECK(allocated(c.admin) == 3);  // b-done finished: its 4 GPUs are free
  CHECK(!c.admin.nodes().allocation_from_own_namespace_only);
  Cluster alice = c.admin.connect("alice");
  CHECK(allocated(alice) == 2);
  CHECK(alice.nodes().allocation_from_own_namespace_only);
}

TEST_CASE("the seed's walkthrough: --toleration ssd_node lands on .230, both tolerations spread") {
  SeedCluster c;
  c.taint_like_the_seed();
  c.admin.submit(seed_mpi("mpi-dist", {"ssd_node"}));
  c.server.advance(30s);
  JobInfo info = c.admin.get("mpi-dist");
  CAPTURE(info.to_text());
  CHECK(info.status == JobStatus::Running);
  CHECK(info.namespace_ == "default");
  CHECK(info.trainer() == "MPIJOB");
  REQUIRE(info.instances.size() == 2);
  for (const auto& i : info.instances) CHECK(i.node_ip == "192.168.3.230");
  CHECK(info.instances[0].name.rfind("mpi-dist-launcher", 0) == 0);
  CHECK(info.instances[1].name == "mpi-dist-worker-0");
  std::string text = info.to_text();
  CHECK(text.rfind("STATUS: RUNNING\nNAMESPACE: default\nPRIORITY: N/A\nTRAINING DURATION: ", 0) == 0);
  CHECK(text.find("NAME      STATUS   TRAINER  AGE  INSTANCE") != std::string::npos);
  CHECK(text.find("mpi-dist  RUNNING  MPIJOB") != std::string::npos);
  REQUIRE(info.tensorboard_url.has_value());
  CHECK(info.tensorboard_url->rfind("http://192.168.3.", 0) == 0);
  CHECK(text.find("Your tensorboard will be available on:\n" + *info.tensorboard_url) != std::string::npos);

  CHECK(c.admin.delete_job("mpi-dist") == "mpijob.kubeflow.org/mpi-dist");
  c.server.advance(1s);
  CHECK_THROWS_AS(c.admin.get("mpi-dist"), ApiError);

  c.admin.submit(seed_mpi("mpi-dist", {"ssd_node", "gpu_node"}));
  c.server.advance(30s);
  info = c.admin.get("mpi-dist");
  CAPTURE(ips(info));
  CHECK(info.status == JobStatus::Running);
  for (const auto& i : info.instances)
    CHECK((i.node_ip == "192.168.3.228" || i.node_ip == "192.168.3.229" || i.node_ip == "192.168.3.230"));
  CHECK(c.admin.list().size() == 1);
  CHECK(jobs_to_text(c.admin.list()).find("mpi-dist  RUNNING  MPIJOB") != std::string::npos);
}

TEST_CASE("explain: the scheduler's message and a local fit check of every node") {
  SeedCluster c;
  c.taint_like_the_seed();
  c.admin.submit(seed_mpi("stuck", {}));
  c.server.advance(30s);
  JobInfo info = c.admin.get("stuck");
  CHECK(info.status == JobStatus::Pending);
  Explanation e = c.admin.explain("stuck");
  REQUIRE(!e.pods.empty());
  const auto& p = e.pods.front();
  CHECK(p.phase == "Pending");
  REQUIRE(!p.events.empty());
  // The scheduler's retries repeat the message; explain shows it once, with a count.
  CHECK(std::set<std::string>(p.events.begin(), p.events.end()).size() == p.events.size());
  CHECK(p.events.back().find("0/6 nodes are available: 1 node(s) had untolerated taint {ssd_node: invalid}, 2 node(s) "
                             "had untolerated taint {gpu_node: invalid}, 3 node(s) had untolerated taint "
                             "{node-role.kubernetes.io/master: }") != std::string::npos);
  REQUIRE(p.nodes.size() == 6);
  for (const auto& v : p.nodes) {
    CAPTURE(v.node);
    CHECK_FALSE(v.fits);
    REQUIRE(v.reasons.size() == 1);
  }
  CHECK(e.to_text().find("gpu_node: invalid") != std::string::npos);

  // Not submitted: where would it fit?
  Explanation would = c.admin.explain(seed_mpi("would", {"ssd_node"}));
  REQUIRE(!would.pods.empty());
  for (const auto& pod : would.pods) {
    auto fits = std::count_if(pod.nodes.begin(), pod.nodes.end(), [](const auto& v) { return v.fits; });
    CHECK(fits == 1);
  }
}

TEST_CASE("dry runs store nothing; a half-done submission is rolled back") {
  SeedCluster c;
  auto w = seed_mpi("dry", {"ssd_node"});
  SubmitResult r = c.admin.submit(w, /*dry_run=*/true);
  CHECK(r.created.size() >= 3);  // MPIJob, TensorBoard Deployment and Service
  CHECK_THROWS_AS(c.admin.get("dry"), ApiError);

  // A Job named "taken" exists already (created by someone else); a submission that first creates
  // a PVC and then fails on the Job must delete the PVC again.
  boost::json::object other = boost::json::parse(R"({"apiVersion": "batch/v1", "kind": "Job",
      "metadata": {"name": "taken"},
      "spec": {"template": {"spec": {"restartPolicy": "Never",
                                     "containers": [{"name": "c", "image": "busybox"}]}}}})")
                                  .as_object();
  c.admin.client().create(kBatchJobs, "default", other);
  SubmitOptions o;
  o.kind = "job";
  o.name = "taken";
  o.image = "busybox";
  o.pvc_create = {"taken-data:standard:1Gi:/data"};
  try {
    c.admin.submit(to_workload(o));
    FAIL("a taken name was accepted");
  } catch (const ApiError& e) {
    CHECK(e.code() == 409);
  }
  CHECK_THROWS_AS(c.admin.client().get(kPvcs, "default", "taken-data"), ApiError);
}

TEST_CASE("pvcs: a claim a scheduled pod uses stays Terminating after delete, then goes with the pod") {
  // The PVC protection of a real cluster (FIDELITY.md difference 7): the claim's delete is
  // accepted, the claim stays while the Job's pod names it, and `pvcs()` says Terminating as
  // kubectl does; deleting the Job (and so its pod) lets it go.
  SeedCluster c;
  SubmitOptions o;
  o.kind = "job";
  o.name = "holder";
  o.image = "busybox";
  o.command = "sleep 3600";
  o.pvc_create = {"holder-data:standard:1Gi:/data"};
  c.admin.submit(to_workload(o));
  auto status_of = [&](const std::string& name) -> std::optional<std::string> {
    for (const auto& p : c.admin.pvcs())
      if (p.name == name) return p.status;
    return std::nullopt;
  };
  REQUIRE(status_of("holder-data"));
  CHECK(*status_of("holder-data") != "Terminating");
  c.admin.delete_pvc("holder-data");
  CHECK(status_of("holder-data") == std::optional<std::string>("Terminating"));
  c.admin.delete_job("holder");
  CHECK_FALSE(status_of("holder-data"));
}

TEST_CASE("wait follows the job through watches; logs stream") {
  SeedCluster c;
  SubmitOptions o;
  o.kind = "job";
  o.name = "short";
  o.image = "busybox";
  o.command = "echo hello";
  Workload w = to_workload(o);
  w.annotations["gpupool.io/simulate-duration"] = "20s";
  c.admin.submit(w);
  std::atomic<bool> done{false};
  std::thread clock([&] {
    // Time moves only when this thread moves it; wait() must notice each change by watch.
    while (!done) {
      c.server.advance(5s);
      std::this_thread::yield();
    }
  });
  std::vector<JobStatus> seen;
  JobInfo info;
  try {
    info = c.admin.wait("short", WaitFor::Succeeded, 60s, [&](const JobInfo& j) { seen.push_back(j.status); });
  } catch (...) {
    done = true;
    clock.join();
    throw;
  }
  done = true;
  clock.join();
  CHECK(info.status == JobStatus::Succeeded);
  REQUIRE(!seen.empty());
  CHECK(seen.back() == JobStatus::Succeeded);

  std::vector<std::string> lines;
  c.admin.logs("short", {}, [&](const std::string& line) {
    lines.push_back(line);
    return true;
  });
  CHECK(!lines.empty());
}

TEST_CASE("users work in their own namespace; elsewhere the error says which one to use") {
  SeedCluster c;
  Cluster alice = Cluster::connect({.kubeconfig = c.server.kubeconfig("alice")});
  CHECK(alice.namespace_name() == "alice");
  SubmitOptions o;
  o.kind = "deployment";
  o.name = "notebook";
  o.image = "busybox";
  alice.submit(to_workload(o));
  c.server.advance(10s);
  CHECK(alice.get("notebook").namespace_ == "alice");
  CHECK(alice.nodes().rows.size() == 6);

  Cluster intruder = Cluster::connect({.kubeconfig = c.server.kubeconfig("alice"), .namespace_ = "bob"});
  try {
    intruder.submit(to_workload(o));
    FAIL("alice submitted into bob's namespace");
  } catch (const ApiError& e) {
    CHECK(e.code() == 403);
    CHECK(std::string(e.what()).find("\"alice\"") != std::string::npos);
  }
  // Only the admin changes nodes.
  CHECK_THROWS_AS(alice.taint("cn-beijing.192.168.3.230", {parse_taint_change("x=y:NoSchedule")}), ApiError);
}

TEST_CASE("the whole lifecycle for every workload kind") {
  SeedCluster c;
  struct Row {
    const char* kind;
    int workers;
    std::vector<std::string> pod_prefixes;  // instances, in display order
    const char* trainer;
  };
  const std::vector<Row> rows = {
      {"mpi", 2, {"life-mpi-launcher", "life-mpi-worker-0", "life-mpi-worker-1"}, "MPIJOB"},
      {"tf", 2, {"life-tf-worker-0", "life-tf-worker-1"}, "TFJOB"},
      // pytorch --workers counts the master, as Arena does: 2 is the master and one worker.
      {"pytorch", 2, {"life-pytorch-master-0", "life-pytorch-worker-0"}, "PYTORCHJOB"},
      {"job", 1, {"life-job-"}, "JOB"},
      {"deployment", 2, {"life-deployment-", "life-deployment-"}, "DEPLOYMENT"},
      {"pod", 1, {"life-pod"}, "POD"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.kind);
    SubmitOptions o;
    o.kind = row.kind;
    o.name = std::string("life-") + row.kind;
    o.image = "busybox";
    o.workers = row.workers;
    o.gpus = 1;
    o.command = "sleep 3600";
    c.admin.submit(to_workload(o));
    c.server.advance(10s);
    JobInfo info = c.admin.get(o.name);
    CAPTURE(info.to_text());
    CHECK(info.status == JobStatus::Running);
    CHECK(info.trainer() == row.trainer);
    REQUIRE(info.instances.size() == row.pod_prefixes.size());
    for (size_t i = 0; i < row.pod_prefixes.size(); ++i) {
      CHECK(info.instances[i].name.rfind(row.pod_prefixes[i], 0) == 0);
      CHECK(info.instances[i].phase == "Running");
      CHECK_FALSE(info.instances[i].node_ip.empty());
    }
    c.admin.delete_job(o.name);
    c.server.advance(1s);
    CHECK_THROWS_AS(c.admin.get(o.name), ApiError);
  }
  CHECK(c.admin.list().empty());
}
