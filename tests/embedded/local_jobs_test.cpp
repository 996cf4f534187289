// RunMode::Local with the Kubeflow operators: each replica gets the env its operator sets, and the
// Service names in it reach the local peer processes (127.0.0.1 and the ports the runtime assigned).
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "embedded/base64.hpp"
#include "embedded/controllers.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/crd_schema.hpp"
#include "local_cluster.hpp"

using namespace local_test;

namespace {

// A LocalCluster with the controllers; pods are bound to the .230 node as they appear.
struct JobCluster : LocalCluster {
  using LocalCluster::LocalCluster;
  Controllers controllers{store, clock};
  // The processes (whose exits make the kubelet write, which the controllers see) stop first.
  ~JobCluster() { kubelet.stop_local(); }
  void bind_all() {
    for (const auto& p : store.list(pods, "default").items)
      if (field_value(*p, "spec.nodeName").empty())
        store.mutate(
            pods, "default", field_value(*p, "metadata.name"),
            [](json::object& o) { o["spec"].as_object()["nodeName"] = "cn-beijing.192.168.3.230"; }, {}, "binding");
  }
  bool wait_job_phases(std::initializer_list<std::pair<const char*, const char*>> want) {
    return wait([&] {
      bind_all();
      for (const auto& [name, phase_wanted] : want) {
        if (!store.find(pods, "default", name)) return false;
        if (phase(name) != phase_wanted) return false;
      }
      return true;
    });
  }
  // The pods whose name starts with `prefix` (the Job controller's pods have a random suffix).
  std::vector<std::string> pods_named(const std::string& prefix) {
    std::vector<std::string> out;
    for (const auto& p : store.list(pods, "default").items)
      if (const std::string n = field_value(*p, "metadata.name"); n.rfind(prefix, 0) == 0) out.push_back(n);
    return out;
  }
  // Whether the object's condition `type` is True (binding the pods the controllers made meanwhile).
  bool condition_true(const std::string& group, const std::string& resource, const std::string& name,
                      const std::string& type) {
    bind_all();
    auto o = store.find(store.type(group, resource), "default", name);
    const json::object* c = o ? util::find_condition(util::array_at(*o, {"status"}, "conditions"), type) : nullptr;
    return c && c->at("status") == "True";
  }
  std::string env_of(const std::string& pod_name, const std::string& var) {
    const auto p = pod(pod_name);
    for (const auto& e : p.at("spec").at("containers").at(0).at("env").as_array())
      if (e.at("name").as_string() == var) return std::string(e.at("value").as_string());
    return "<unset>";
  }
};

std::string quoted(const std::string& s) { return json::serialize(json::string(s)); }

// Rank 0 listens on the address and port the env names; the other ranks connect and say who they
// are. `word` names a rank in what they print ("rank", "node").
std::string rendezvous_script(const std::string& addr, const std::string& port, const std::string& rank,
                              const std::string& world, const std::string& word) {
  return "import os, socket, time\n"
         "addr, port = os.environ['" +
         addr + "'], int(os.environ['" + port +
         "'])\n"
         "rank, world = int(os.environ['" +
         rank + "']), int(os.environ['" + world +
         "'])\n"
         "if rank == 0:\n"
         "    s = socket.socket()\n"
         "    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
         "    s.bind((addr, port))\n"
         "    s.listen()\n"
         "    for _ in range(world - 1):\n"
         "        c, _ = s.accept()\n"
         "        print('" +
         word +
         " 0 of', world, 'got:', c.recv(100).decode())\n"
         "else:\n"
         "    for _ in range(600):\n"
         "        try:\n"
         "            c = socket.create_connection((addr, port))\n"
         "            break\n"
         "        except OSError:\n"
         "            time.sleep(0.05)\n"
         "    c.sendall(('hello from " +
         word +
         " %d' % rank).encode())\n"
         "    print('" +
         word + "', rank, 'sent')\n";
}

const std::string kTorchScript = rendezvous_script("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "rank");

// Worker 0 listens on its own TF_CONFIG address; worker 1 connects to it.
const std::string kTfScript = R"(import json, os, socket, time
tf = json.loads(os.environ["TF_CONFIG"])
workers, me = tf["cluster"]["worker"], tf["task"]["index"]
host, port = workers[0].rsplit(":", 1)
if me == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen()
    c, _ = s.accept()
    print("worker 0 got:", c.recv(100).decode())
else:
    for _ in range(600):
        try:
            c = socket.create_connection((host, int(port)))
            break
        except OSError:
            time.sleep(0.05)
    c.sendall(b"hello from worker 1")
    print("worker 1 sent")
)";

std::string replica(const std::string& container, const std::string& script, int replicas) {
  return R"({"replicas":)" + std::to_string(replicas) +
         R"(,"restartPolicy":"Never","template":{"spec":{"containers":[{"name":")" + container +
         R"(","image":"python:3.11","command":["/usr/bin/python3","-c",)" + quoted(script) + "]}]}}}";
}

}  // namespace

TEST_CASE("local jobs: a PyTorchJob's master and worker talk through MASTER_ADDR:MASTER_PORT and exit 0") {
  JobCluster c;
  c.store.create(
      c.store.type("kubeflow.org", "pytorchjobs"), "default",
      parse_obj(R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"ptj"},
                               "spec":{"pytorchReplicaSpecs":{"Master":)" +
                replica("pytorch", kTorchScript, 1) + R"(,"Worker":)" + replica("pytorch", kTorchScript, 1) + "}}}"));
  REQUIRE(c.wait_job_phases({{"ptj-master-0", "Succeeded"}, {"ptj-worker-0", "Succeeded"}}));
  CHECK(c.log("ptj-master-0") == "rank 0 of 2 got: hello from rank 1\n");
  CHECK(c.log("ptj-worker-0") == "rank 1 sent\n");
  // The pod keeps the operator's env (the same manifest as on a cluster); the process got local addresses.
  CHECK(c.env_of("ptj-worker-0", "MASTER_ADDR") == "ptj-master-0");
  CHECK(c.env_of("ptj-worker-0", "MASTER_PORT") == "23456");
  // As training-operator's setPodEnv (pytorch/envvar.go) lists them, in its order.
  std::vector<std::string> names;
  const auto worker = c.pod("ptj-worker-0");
  for (const auto& e : worker.at("spec").at("containers").at(0).at("env").as_array())
    names.emplace_back(e.at("name").as_string());
  CHECK(names == std::vector<std::string>{"PYTHONUNBUFFERED", "MASTER_PORT", "PET_MASTER_PORT", "MASTER_ADDR",
                                          "PET_MASTER_ADDR", "WORLD_SIZE", "RANK", "PET_NODE_RANK", "PET_NNODES"});
  CHECK(c.env_of("ptj-worker-0", "RANK") == "1");
  CHECK(c.env_of("ptj-master-0", "RANK") == "0");
  CHECK(c.env_of("ptj-worker-0", "WORLD_SIZE") == "2");
  CHECK(c.env_of("ptj-worker-0", "PET_NNODES") == "2");
  // The master's port as the runtime mapped it, recorded on the pod.
  const auto master = c.pod("ptj-master-0");
  const auto ports = json::parse(master.at("metadata").at("annotations").at("gpupool.io/local-ports").as_string());
  CHECK(ports.as_object().at("23456").as_int64() > 0);
}

TEST_CASE("local jobs: a TFJob's two workers talk through TF_CONFIG and exit 0") {
  JobCluster c;
  c.store.create(c.store.type("kubeflow.org", "tfjobs"), "default",
                 parse_obj(R"({"apiVersion":"kubeflow.org/v1","kind":"TFJob","metadata":{"name":"tfj"},
                               "spec":{"tfReplicaSpecs":{"Worker":)" +
                           replica("tensorflow", kTfScript, 2) + "}}}"));
  REQUIRE(c.wait_job_phases({{"tfj-worker-0", "Succeeded"}, {"tfj-worker-1", "Succeeded"}}));
  CHECK(c.log("tfj-worker-0") == "worker 0 got: hello from worker 1\n");
  CHECK(c.log("tfj-worker-1") == "worker 1 sent\n");
  CHECK(c.env_of("tfj-worker-1", "TF_CONFIG") ==
        R"({"cluster":{"worker":["tfj-worker-0.default.svc:2222","tfj-worker-1.default.svc:2222"]},)"
        R"("task":{"type":"worker","index":1},"environment":"cloud"})");
}

TEST_CASE("local jobs: Service names become 127.0.0.1 and their ports the local ports") {
  const std::vector<LocalPeer> peers{
      {{"job-master-0", "job-master-0.ns", "job-master-0.ns.svc", "job-master-0.ns.svc.cluster.local"},
       {{23456, 40001}}},
      {{"job-worker-0", "job-worker-0.ns", "job-worker-0.ns.svc"}, {{2222, 40002}}}};
  CHECK(rewrite_peer_addresses("job-master-0", peers) == "127.0.0.1");
  CHECK(rewrite_peer_addresses("job-master-0.ns.svc:23456", peers) == "127.0.0.1:40001");
  CHECK(rewrite_peer_addresses(R"(["job-worker-0.ns.svc:2222","job-master-0:9"])", peers) ==
        R"(["127.0.0.1:40002","127.0.0.1:9"])");
  CHECK(rewrite_peer_addresses("job-master-01 xjob-master-0 job-master-0.other", peers) ==
        "job-master-01 xjob-master-0 job-master-0.other");
  const std::map<int, int> own{{6006, 41000}, {80, 80}};
  CHECK(rewrite_own_ports("6006", own) == "41000");
  CHECK(rewrite_own_ports("--port=6006", own) == "--port=41000");
  CHECK(rewrite_own_ports("0.0.0.0:6006", own) == "0.0.0.0:41000");
  CHECK(rewrite_own_ports("--steps6006", own) == "--steps6006");
  CHECK(rewrite_own_ports("16006", own) == "16006");
}

namespace {

// Each rank: where it runs (the worker pod's own env: HOSTNAME, K_MPI_JOB_ROLE) and its MPI rank.
const std::string kRankProgram =
    "import os; e = os.environ; "
    "print('rank', e['OMPI_COMM_WORLD_RANK'], 'of', e['OMPI_COMM_WORLD_SIZE'], 'on', e['HOSTNAME'], "
    "e['K_MPI_JOB_ROLE'])";

std::string mpi_job(const std::string& name, const std::string& launcher_command) {
  // The workers have no command: mpi-operator makes them sshd, which Local mode replaces.
  return R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":")" + name +
         R"("},"spec":{"slotsPerWorker":1,"mpiImplementation":"OpenMPI","mpiReplicaSpecs":{
           "Launcher":{"replicas":1,"template":{"spec":{"containers":[{"name":"mpi","image":"mpioperator/openmpi",
             "command":["sh","-c",)" +
         quoted(launcher_command) + R"(]}]}}},
           "Worker":{"replicas":2,"template":{"spec":{"containers":[{"name":"mpi","image":"mpioperator/openmpi"}]}}}}}})";
}

}  // namespace

TEST_CASE(
    "mpi-operator v2beta1: the ConfigMap, the SSH Secret and the pods' env and mounts, as mpi_job_controller.go") {
  // Simulate mode too: these are API objects (the kubelet here never runs anything).
  Clock clock = Clock::manual();
  Store store{clock, Store::Options{.mpijob_version = "v2beta1"}};
  Controllers controllers{store, clock};
  store.create(store.type("", "namespaces"), "", parse_obj(R"({"metadata":{"name":"default"}})"));
  store.create(store.type("kubeflow.org", "mpijobs"), "default", parse_obj(mpi_job("pi", "mpirun -n 2 ./pi")));
  const auto cm = store.get(store.type("", "configmaps"), "default", "pi-config");
  CHECK(cm.at("data").at("hostfile") == "pi-worker-0.pi.default.svc slots=1\npi-worker-1.pi.default.svc slots=1\n");
  CHECK(cm.at("data").at("discover_hosts.sh") == "#!/bin/sh\n");  // no worker runs yet
  CHECK(cm.at("metadata").at("ownerReferences").at(0).at("kind") == "MPIJob");
  const auto secret = store.get(store.type("", "secrets"), "default", "pi-ssh");
  CHECK(secret.at("type") == "kubernetes.io/ssh-auth");
  const auto pub = gpupool::base64_decode(std::string(secret.at("data").at("ssh-publickey").as_string()));
  REQUIRE(pub);
  CHECK(std::string(pub->begin(), pub->end()).rfind("ecdsa-sha2-nistp521 AAAAE2VjZHNhLXNoYTItbmlzdHA1MjE", 0) == 0);
  const auto priv = gpupool::base64_decode(std::string(secret.at("data").at("ssh-privatekey").as_string()));
  REQUIRE(priv);
  CHECK(std::string(priv->begin(), priv->end()).rfind("-----BEGIN EC PRIVATE KEY-----", 0) == 0);

  // A worker: sshd, K_MPI_JOB_ROLE, the SSH keys at /root/.ssh, its DNS name under the job's Service.
  const auto w = store.get(store.type("", "pods"), "default", "pi-worker-1");
  const auto& wc = w.at("spec").at("containers").at(0).as_object();
  CHECK(json::serialize(wc.at("command")) == R"(["/usr/sbin/sshd","-De"])");
  CHECK(json::serialize(wc.at("env")) == R"([{"name":"K_MPI_JOB_ROLE","value":"worker"}])");
  CHECK(json::serialize(wc.at("volumeMounts")) == R"([{"name":"ssh-auth","mountPath":"/root/.ssh"}])");
  CHECK(field_value(w, "spec.hostname") == "pi-worker-1");
  CHECK(field_value(w, "spec.subdomain") == "pi");
  CHECK(pod_dns_names(w).at(2) == "pi-worker-1.pi.default.svc");  // the hostfile's name for it

  // The launcher Job's pod template: the implementation's env and the ConfigMap at /etc/mpi.
  const auto job = store.get(store.type("batch", "jobs"), "default", "pi-launcher");
  const auto& lspec = job.at("spec").at("template").at("spec").as_object();
  std::vector<std::string> names;
  for (const auto& e : lspec.at("containers").at(0).at("env").as_array()) names.emplace_back(e.at("name").as_string());
  CHECK(names == std::vector<std::string>{"K_MPI_JOB_ROLE", "OMPI_MCA_orte_keep_fqdn_hostnames",
                                          "OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args",
                                          "OMPI_MCA_orte_set_default_slots", "NVIDIA_VISIBLE_DEVICES",
                                          "NVIDIA_DRIVER_CAPABILITIES"});
  CHECK(json::serialize(lspec.at("containers").at(0).at("volumeMounts")) ==
        R"([{"name":"ssh-auth","mountPath":"/root/.ssh"},{"name":"mpi-job-config","mountPath":"/etc/mpi"}])");
  CHECK(
      json::serialize(lspec.at("volumes").at(1)) ==
      R"({"name":"mpi-job-config","configMap":{"name":"pi-config","items":[{"key":"hostfile","path":"hostfile","mode":292},)"
      R"({"key":"discover_hosts.sh","path":"discover_hosts.sh","mode":365}],"defaultMode":420}})");
  CHECK(field_value(job, "spec.template.spec.hostname") == "pi-launcher");

  // discover_hosts.sh lists the Running workers, as they start.
  Kubelet kubelet{store, clock, KubeletOptions{}};
  store.create(store.type("", "nodes"), "", parse_obj(R"({"metadata":{"name":"n1"}})"));  // its node's kubelet
  for (const auto& p : store.list(store.type("", "pods"), "default").items)
    store.mutate(
        store.type("", "pods"), "default", field_value(*p, "metadata.name"),
        [](json::object& o) { o["spec"].as_object()["nodeName"] = "n1"; }, {}, "binding");
  clock.advance(60s);
  kubelet.sync();
  CHECK(store.get(store.type("", "configmaps"), "default", "pi-config").at("data").at("discover_hosts.sh") ==
        "#!/bin/sh\necho pi-worker-0.pi.default.svc\necho pi-worker-1.pi.default.svc\n");
}

TEST_CASE("local jobs: an MPIJob's launcher runs mpirun over its two workers through the hostfile, exit 0") {
  if (!on_path("mpirun")) {
    MESSAGE("mpirun is not on PATH (scripts/setup.sh installs openmpi-bin): the local MPIJob case is skipped");
    return;
  }
  // A local process on an X display's port that never answers (here as TensorBoard's 6006 is
  // display :6 to hwloc, which mpirun and orted ask for GPUs): the job must not hang on it.
  const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(silent >= 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(6006);
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int one = 1;
  ::setsockopt(silent, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(silent, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 || ::listen(silent, 1) != 0)
    MESSAGE("127.0.0.1:6006 is taken already: the silent neighbour is whatever holds it");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{silent};
  // Each way the pods may see their volumes (local_mounts.hpp): the launcher reads /etc/mpi/hostfile.
  for (const std::string method : {"", "paths", "userns"}) {
    CAPTURE(method);
    if (method == "userns" && !userns_allowed()) continue;
    std::optional<MountsEnv> mounts;
    if (!method.empty()) mounts.emplace(method.c_str());
    JobCluster c(Store::Options{.mpijob_version = "v2beta1"});
    // OpenMPI refuses root unless told; the worker ranks run with each worker pod's own env.
    c.store.create(
        c.store.type("kubeflow.org", "mpijobs"), "default",
        parse_obj(mpi_job("pi", "cat /etc/mpi/hostfile; mpirun --allow-run-as-root -n 2 /usr/bin/python3 -c " +
                                    json::serialize(json::string(kRankProgram)))));
    const bool ok = c.wait([&] { return c.condition_true("kubeflow.org", "mpijobs", "pi", "Succeeded"); });
    if (!ok)
      for (const auto& n : c.pods_named("pi-")) MESSAGE(n, ": ", c.log(n));
    REQUIRE(ok);
    const auto launchers = c.pods_named("pi-launcher-");
    REQUIRE(launchers.size() == 1);
    const std::string log = c.log(launchers[0]);
    CAPTURE(log);
    CHECK(log.rfind("pi-worker-0.pi.default.svc slots=1\npi-worker-1.pi.default.svc slots=1\n", 0) == 0);
    CHECK(log.find("rank 0 of 2 on pi-worker-0 worker\n") != std::string::npos);
    CHECK(log.find("rank 1 of 2 on pi-worker-1 worker\n") != std::string::npos);
    CHECK(c.phase(launchers[0]) == "Succeeded");
    // The workers run a stand-in for sshd, and the event says so; it goes with the cluster.
    CHECK(c.phase("pi-worker-0") == "Running");
    CHECK(has_event(c.store, "LocalProcess", "sleep infinity` in place of `/usr/sbin/sshd -De`"));
    std::ifstream entry(c.root + "/hosts/pi-worker-0.pi.default.svc");
    pid_t pid = 0;
    entry >> pid;
    REQUIRE(pid > 0);
    CHECK(::kill(pid, 0) == 0);
    c.kubelet.stop_local();
    CHECK(::kill(pid, 0) == -1);
  }
}

namespace {

// Node rank 0 listens on PET_MASTER_ADDR:PET_MASTER_PORT; the other nodes connect and say who they are.
const std::string kPetScript =
    rendezvous_script("PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NODE_RANK", "PET_NNODES", "node");

}  // namespace

TEST_CASE("local jobs: a 2-node TrainJob's nodes talk through PET_MASTER_ADDR:PET_MASTER_PORT, then Complete") {
  JobCluster c;
  for (auto& r : crd::default_cluster_training_runtimes())
    c.store.create(c.store.type("trainer.kubeflow.org", "clustertrainingruntimes"), "", std::move(r));
  c.store.create(c.store.type("trainer.kubeflow.org", "trainjobs"), "default",
                 parse_obj(R"({"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"tj"},
                   "spec":{"runtimeRef":{"name":"torch-distributed","apiGroup":"trainer.kubeflow.org",
                                         "kind":"ClusterTrainingRuntime"},
                           "trainer":{"image":"python:3.11","numNodes":2,
                                      "command":["/usr/bin/python3","-c",)" +
                           quoted(kPetScript) + "]}}}"));
  REQUIRE(c.wait([&] { return c.condition_true("trainer.kubeflow.org", "trainjobs", "tj", "Complete"); }));
  const auto master = c.pods_named("tj-node-0-0-"), worker = c.pods_named("tj-node-0-1-");
  REQUIRE(master.size() == 1);
  REQUIRE(worker.size() == 1);
  CHECK(c.log(master[0]) == "node 0 of 2 got: hello from node 1\n");
  CHECK(c.log(worker[0]) == "node 1 sent\n");
  // The pods keep the torch plugin's values: the master's DNS name under the JobSet's Service.
  CHECK(c.env_of(worker[0], "PET_MASTER_ADDR") == "tj-node-0-0.tj");
  CHECK(c.env_of(worker[0], "PET_MASTER_PORT") == "29500");
}
