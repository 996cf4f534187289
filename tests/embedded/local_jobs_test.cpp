// RunMode::Local with the Kubeflow operators: each replica gets the env its operator sets, and the
// Service names in it reach the local peer processes (127.0.0.1 and the ports the runtime assigned).
#include <doctest/doctest.h>

#include <string>

#include "embedded/controllers.hpp"
#include "local_cluster.hpp"

using namespace local_test;

namespace {

// A LocalCluster with the controllers; pods are bound to the .230 node as they appear.
struct JobCluster : LocalCluster {
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
  std::string env_of(const std::string& pod_name, const std::string& var) {
    const auto p = pod(pod_name);
    for (const auto& e : p.at("spec").at("containers").at(0).at("env").as_array())
      if (e.at("name").as_string() == var) return std::string(e.at("value").as_string());
    return "<unset>";
  }
};

std::string quoted(const std::string& s) { return json::serialize(json::string(s)); }

// Rank 0 listens on MASTER_ADDR:MASTER_PORT; the other ranks connect and say who they are.
const std::string kTorchScript = R"(import os, socket, time
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
if rank == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen()
    for _ in range(world - 1):
        c, _ = s.accept()
        print("rank 0 of", world, "got:", c.recv(100).decode())
else:
    for _ in range(600):
        try:
            c = socket.create_connection((addr, port))
            break
        except OSError:
            time.sleep(0.05)
    c.sendall(("hello from rank %d" % rank).encode())
    print("rank", rank, "sent")
)";

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
