#include <doctest/doctest.h>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "embedded/controllers.hpp"
#include "embedded/kubelet.hpp"
#include "embedded/quota.hpp"
#include "embedded/scheduler.hpp"
#include "embedded/store.hpp"
#include "gpupool/topology.hpp"

using namespace gpupool::embedded;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

json::object obj(std::string_view text) { return json::parse(text).as_object(); }
std::string at(const json::object& o, std::string_view path) { return field_value(o, path); }

// The seed cluster with the walkthrough's taints, and every control loop running.
struct Seed {
  Clock clock = Clock::manual();
  Store store{clock};
  const ResourceType& pods = store.type("", "pods");
  const ResourceType& nodes = store.type("", "nodes");
  QuotaController quota{store};
  Controllers controllers{store, clock};
  Scheduler scheduler{store, clock, SchedulerOptions{{"default-scheduler", "orion-scheduler"}}};
  Kubelet kubelet{store, clock};
  explicit Seed(bool tainted = true) {
    store.create(store.type("", "namespaces"), "", obj(R"({"metadata":{"name":"default"}})"));
    for (const auto& n : gpupool::Topology::builtin("seed").nodes)
      store.create(nodes, "", n.to_node_object(clock.now()));
    if (tainted) {
      taint("cn-beijing.192.168.3.228", "gpu_node");
      taint("cn-beijing.192.168.3.229", "gpu_node");
      taint("cn-beijing.192.168.3.230", "ssd_node");
    }
  }
  void taint(const std::string& node, const std::string& key) {
    store.mutate(nodes, "", node, [&](json::object& n) {
      json::value& ts = n["spec"].as_object()["taints"];
      if (!ts.is_array()) ts = json::array{};
      ts.as_array().push_back(json::object{{"key", key}, {"value", "invalid"}, {"effect", "NoSchedule"}});
    });
  }
  void untaint(const std::string& node) {
    store.mutate(nodes, "", node, [&](json::object& n) { n["spec"].as_object().erase("taints"); });
  }
  // Arena's `submit mpi --workers=1 --gpus=1 --toleration ...` as an MPIJob v1.
  void submit_mpi(const std::string& name, const std::string& tolerations) {
    auto tmpl = [&](int gpus) {
      return fmt::format(
          R"({{"spec":{{"tolerations":{},"containers":[{{"name":"mpi","image":"horovod:0.13.11",
          "command":["mpirun","python","tf_cnn_benchmarks.py"],"resources":{{"limits":{{"nvidia.com/gpu":"{}"}}}}}}]}}}})",
          tolerations, gpus);
    };
    store.create(store.type("kubeflow.org", "mpijobs"), "default",
                 obj(fmt::format(R"({{"apiVersion":"kubeflow.org/v1","kind":"MPIJob","metadata":{{"name":"{}"}},
                   "spec":{{"mpiReplicaSpecs":{{
                     "Launcher":{{"replicas":1,"template":{}}},
                     "Worker":{{"replicas":1,"template":{}}}}}}}}})",
                                 name, tmpl(0), tmpl(1))));
  }
  json::object pod(const std::string& name) const { return store.get(pods, "default", name); }
  std::vector<json::object> events_for(const std::string& pod_name) const {
    std::vector<json::object> out;
    for (const auto& e : store.list(store.type("", "events"), "default").items)
      if (at(*e, "involvedObject.name") == pod_name) out.push_back(*e);
    return out;
  }
};

const char* kSsd = R"([{"key":"ssd_node","operator":"Exists"}])";
const char* kBoth = R"([{"key":"ssd_node","operator":"Exists"},{"key":"gpu_node","operator":"Exists"}])";

}  // namespace

TEST_CASE("seed walkthrough: tolerating ssd_node puts launcher and worker on .230") {
  Seed s;
  s.submit_mpi("mpi-dist", kSsd);
  CHECK(at(s.pod("mpi-dist-launcher"), "spec.nodeName") == "cn-beijing.192.168.3.230");
  CHECK(at(s.pod("mpi-dist-worker-0"), "spec.nodeName") == "cn-beijing.192.168.3.230");
  // Bound pods carry PodScheduled=True and a Scheduled event.
  bool scheduled = false;
  const auto worker = s.pod("mpi-dist-worker-0");
  for (const auto& c : worker.at("status").at("conditions").as_array())
    if (c.at("type") == "PodScheduled") scheduled = c.at("status") == "True";
  CHECK(scheduled);
  const auto evs = s.events_for("mpi-dist-worker-0");
  REQUIRE(!evs.empty());
  CHECK(at(evs[0], "reason") == "Scheduled");
  CHECK(at(evs[0], "message") == "Successfully assigned default/mpi-dist-worker-0 to cn-beijing.192.168.3.230");
  // The kubelet runs them; the MPIJob goes Running with the operator's reason and message.
  s.clock.advance(1s);
  s.kubelet.sync();
  CHECK(at(s.pod("mpi-dist-worker-0"), "status.hostIP") == "192.168.3.230");
  const auto job = s.store.get(s.store.type("kubeflow.org", "mpijobs"), "default", "mpi-dist");
  std::set<std::string> reasons;
  for (const auto& c : job.at("status").at("conditions").as_array())
    if (c.at("status") == "True") reasons.insert(std::string(c.at("reason").as_string()));
  CHECK(reasons == std::set<std::string>{"MPIJobCreated", "MPIJobRunning"});
}

TEST_CASE("seed walkthrough: tolerating both taints spreads the two pods") {
  Seed s;
  s.submit_mpi("mpi-dist", kBoth);
  const std::string launcher = at(s.pod("mpi-dist-launcher"), "spec.nodeName");
  const std::string worker = at(s.pod("mpi-dist-worker-0"), "spec.nodeName");
  const std::set<std::string> workers{"cn-beijing.192.168.3.228", "cn-beijing.192.168.3.229",
                                      "cn-beijing.192.168.3.230"};
  CHECK(workers.count(launcher));
  CHECK(workers.count(worker));
  CHECK(launcher != worker);
}

TEST_CASE("seed walkthrough: no toleration -> FailedScheduling with kube-scheduler's message; retried after untaint") {
  Seed s;
  s.submit_mpi("mpi-dist", "[]");
  const auto p = s.pod("mpi-dist-worker-0");
  CHECK(at(p, "spec.nodeName").empty());
  const std::string expected =
      "0/6 nodes are available: 1 node(s) had untolerated taint {ssd_node: invalid}, 2 node(s) had untolerated taint "
      "{gpu_node: invalid}, 3 node(s) had untolerated taint {node-role.kubernetes.io/master: }. preemption: 0/6 nodes "
      "are available: 6 Preemption is not helpful for scheduling.";
  const auto evs = s.events_for("mpi-dist-worker-0");
  REQUIRE(evs.size() == 1);
  CHECK(at(evs[0], "type") == "Warning");
  CHECK(at(evs[0], "reason") == "FailedScheduling");
  // events.k8s.io events (the scheduler's recorder) show source {} and reportingComponent in core/v1.
  CHECK(at(evs[0], "reportingComponent") == "default-scheduler");
  CHECK(at(evs[0], "involvedObject.kind") == "Pod");
  CHECK(at(evs[0], "message").rfind(expected, 0) == 0);
  bool unschedulable = false;
  for (const auto& c : p.at("status").at("conditions").as_array())
    if (c.at("type") == "PodScheduled")
      unschedulable =
          c.at("status") == "False" && c.at("reason") == "Unschedulable" && c.at("message") == evs[0].at("message");
  CHECK(unschedulable);
  CHECK(s.scheduler.unschedulable().size() == 2);

  // `kubectl taint nodes cn-beijing.192.168.3.230 ssd_node-`: both pods schedule there.
  s.untaint("cn-beijing.192.168.3.230");
  CHECK(at(s.pod("mpi-dist-worker-0"), "spec.nodeName") == "cn-beijing.192.168.3.230");
  CHECK(at(s.pod("mpi-dist-launcher"), "spec.nodeName") == "cn-beijing.192.168.3.230");
  CHECK(s.scheduler.unschedulable().empty());
}

TEST_CASE("scheduler: resources, schedulerName, and freeing resources retries pending pods") {
  Seed s(false);
  auto gpu_pod = [&](const std::string& name, int gpus, const std::string& scheduler = "default-scheduler") {
    s.store.create(
        s.pods, "default",
        obj(fmt::format(R"({{"metadata":{{"name":"{}","annotations":{{"gpupool.io/simulate-duration":"30s"}}}},
                     "spec":{{"schedulerName":"{}","restartPolicy":"Never","containers":[{{"name":"c","image":"x",
                     "resources":{{"limits":{{"nvidia.com/gpu":"{}"}}}}}}]}}}})",
                        name, scheduler, gpus)));
  };
  struct Row {
    const char* name;
    int gpus;
    const char* scheduler;
    bool bound;
  };
  const Row rows[] = {
      {"a", 2, "default-scheduler", true},  {"b", 2, "orion-scheduler", true}, {"c", 2, "default-scheduler", true},
      {"d", 1, "default-scheduler", false},  // the three workers have 2 GPUs each, all taken
      {"e", 1, "someone-else", false},       // not ours: left alone, no event
  };
  for (const auto& r : rows) gpu_pod(r.name, r.gpus, r.scheduler);
  for (const auto& r : rows) {
    CAPTURE(std::string(r.name));
    CHECK(at(s.pod(r.name), "spec.nodeName").empty() != r.bound);
  }
  CHECK(s.events_for("e").empty());
  REQUIRE(s.events_for("d").size() == 1);
  CHECK(at(s.events_for("d")[0], "message").find("3 Insufficient nvidia.com/gpu") != std::string::npos);
  // When "a" finishes its GPUs are free again and "d" lands on its node.
  s.clock.advance(1s);
  s.kubelet.sync();
  s.clock.advance(30s);
  s.kubelet.sync();
  CHECK(at(s.pod("a"), "status.phase") == "Succeeded");
  CHECK(at(s.pod("d"), "spec.nodeName") == at(s.pod("a"), "spec.nodeName"));
}

TEST_CASE("scheduler: a pod's overhead (set by RuntimeClass admission) counts in NodeResourcesFit") {
  Seed s(false);
  // The GPU workers have 16 CPUs: 15 plus an overhead of 1.5 fits none of them, 15 plus 1 does.
  auto pod = [&](const std::string& name, const std::string& overhead) {
    s.store.create(s.pods, "default",
                   obj(fmt::format(R"({{"metadata":{{"name":"{}"}},"spec":{{"overhead":{{"cpu":"{}"}},
                     "containers":[{{"name":"c","image":"x","resources":{{"requests":{{"cpu":"15"}}}}}}]}}}})",
                                   name, overhead)));
  };
  pod("too-big", "1500m");
  CHECK(at(s.pod("too-big"), "spec.nodeName").empty());
  REQUIRE(s.events_for("too-big").size() == 1);
  CHECK(at(s.events_for("too-big")[0], "message").find("3 Insufficient cpu") != std::string::npos);
  pod("fits", "1");
  CHECK_FALSE(at(s.pod("fits"), "spec.nodeName").empty());
}

TEST_CASE("ResourceQuota admission: the API server's message, and status.used kept current") {
  Seed s(false);
  s.store.create(
      s.store.type("", "resourcequotas"), "default",
      obj(R"({"metadata":{"name":"gpu-quota"},"spec":{"hard":{"requests.nvidia.com/gpu":"3","pods":"10"}}})"));
  auto make = [&](const std::string& name, int gpus) {
    s.store.create(s.pods, "default",
                   obj(fmt::format(R"({{"metadata":{{"name":"{}"}},"spec":{{"containers":[{{"name":"c","image":"x",
                     "resources":{{"limits":{{"nvidia.com/gpu":"{}"}}}}}}]}}}})",
                                   name, gpus)));
  };
  make("one", 1);
  make("two", 1);
  try {
    make("big", 2);
    FAIL("expected Forbidden");
  } catch (const StatusError& e) {
    CHECK(e.code() == 403);
    CHECK(e.reason() == "Forbidden");
    CHECK(e.status_message() ==
          "pods \"big\" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=2, used: "
          "requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=3");
  }
  const auto q = s.store.get(s.store.type("", "resourcequotas"), "default", "gpu-quota");
  CHECK(at(q, "status.used.requests.nvidia.com/gpu").empty());  // dotted path cannot address the key
  CHECK(q.at("status").at("used").at("requests.nvidia.com/gpu") == "2");
  CHECK(q.at("status").at("used").at("pods") == "2");
  CHECK(q.at("status").at("hard").at("pods") == "10");
  s.store.remove(s.pods, "default", "one");
  make("big", 2);  // fits now
  CHECK(s.store.get(s.store.type("", "resourcequotas"), "default", "gpu-quota")
            .at("status")
            .at("used")
            .at("requests.nvidia.com/gpu") == "3");
}

// ---- the scheduling queue: unschedulablePods and the events that move them ------------------------

namespace {

void gpu_pod(Seed& s, const std::string& name, int gpus, const std::string& claim = {}) {
  const std::string volumes =
      claim.empty() ? ""
                    : fmt::format(R"(,"volumes":[{{"name":"d","persistentVolumeClaim":{{"claimName":"{}"}}}}])", claim);
  s.store.create(s.pods, "default",
                 obj(fmt::format(R"({{"metadata":{{"name":"{}"}},"spec":{{"containers":[{{"name":"c","image":"x",
                   "resources":{{"limits":{{"nvidia.com/gpu":"{}"}}}}}}]{}}}}})",
                                 name, gpus, volumes)));
}
std::string scheduled_message(const Seed& s, const std::string& name) {
  const json::object pod = s.pod(name);
  for (const auto& c : pod.at("status").at("conditions").as_array())
    if (c.at("type") == "PodScheduled") return at(c.as_object(), "message");
  return {};
}
bool bound(const Seed& s, const std::string& name) { return !at(s.pod(name), "spec.nodeName").empty(); }
std::int64_t failed_count(const Seed& s, const std::string& name) {
  for (const auto& e : s.events_for(name))
    // An events.k8s.io event: the first attempt records it, a repeat for the same resourceVersion
    // sets series.count (kube-scheduler's recorder); no "count" field.
    if (at(e, "reason") == "FailedScheduling") {
      const auto* series = e.if_contains("series");
      return series && series->is_object() ? series->as_object().at("count").as_int64() : 1;
    }
  return 0;
}

}  // namespace

TEST_CASE(
    "scheduling queue: an unschedulable pod is not retried by unrelated creates, only by events that may help it") {
  Seed s(false);
  // The three workers have 2 GPUs each: a, b, c take them all, d waits.
  for (const char* n : {"a", "b", "c"}) gpu_pod(s, n, 2);
  gpu_pod(s, "d", 1);
  REQUIRE(!bound(s, "d"));
  REQUIRE(s.scheduler.unschedulable() == std::vector<std::string>{"default/d"});
  const auto tried = s.scheduler.attempts();
  CHECK(failed_count(s, "d") == 1);

  // Five pods that fit and one more that does not: each is tried once, d is not tried again.
  for (int i = 0; i < 5; ++i) gpu_pod(s, "x" + std::to_string(i), 0);
  gpu_pod(s, "e", 1);
  CHECK(s.scheduler.attempts() == tried + 6);
  CHECK(s.scheduler.unschedulable() == std::vector<std::string>{"default/d", "default/e"});
  // A node update that changes no scheduling property (status.daemonEndpoints) moves nothing either.
  s.store.mutate(s.nodes, "", "cn-beijing.192.168.3.228", [](json::object& n) {
    n["status"].as_object()["daemonEndpoints"] = obj(R"({"kubeletEndpoint":{"Port":10251}})");
  });
  s.scheduler.sync();
  CHECK(s.scheduler.attempts() == tried + 6);
  CHECK(failed_count(s, "d") == 1);
  const std::string a_node = at(s.pod("a"), "spec.nodeName");

  SUBCASE("an assigned pod deleted (EventAssignedPodDelete) frees its GPUs") {
    s.store.remove(s.pods, "default", "a");
    CHECK(s.scheduler.attempts() == tried + 8);  // d and e, once each
    CHECK(at(s.pod("d"), "spec.nodeName") == a_node);
    CHECK(at(s.pod("e"), "spec.nodeName") == a_node);
    CHECK(s.scheduler.unschedulable().empty());
  }
  SUBCASE("a node added (NodeAdd)") {
    json::object n = s.store.get(s.nodes, "", "cn-beijing.192.168.3.228");
    json::object& md = n["metadata"].as_object();
    for (const char* k : {"uid", "resourceVersion", "creationTimestamp", "managedFields"}) md.erase(k);
    md["name"] = "cn-beijing.192.168.3.231";
    md["labels"].as_object()["kubernetes.io/hostname"] = "cn-beijing.192.168.3.231";
    s.store.create(s.nodes, "", std::move(n));
    CHECK(at(s.pod("d"), "spec.nodeName") == "cn-beijing.192.168.3.231");
    CHECK(at(s.pod("e"), "spec.nodeName") == "cn-beijing.192.168.3.231");
  }
  SUBCASE("more than 5 minutes of the cluster clock (flushUnschedulablePodsLeftover)") {
    s.clock.advance(5min);
    s.scheduler.sync();
    CHECK(s.scheduler.attempts() == tried + 6);  // exactly 5 minutes: not yet (the rule is '>')
    s.clock.advance(1s);
    s.scheduler.sync();
    CHECK(s.scheduler.attempts() == tried + 8);  // d and e tried again, still no GPU free
    CHECK(s.scheduler.unschedulable().size() == 2);
    s.scheduler.sync();
    CHECK(s.scheduler.attempts() == tried + 8);  // their timestamps were refreshed by that attempt
  }
}

TEST_CASE("scheduling queue: a node's taint removed, and a claim bound, move waiting pods back") {
  SUBCASE("taint removed (NodeUpdate, UpdateNodeTaint)") {
    Seed s;  // every node tainted
    gpu_pod(s, "t", 0);
    REQUIRE(!bound(s, "t"));
    const auto tried = s.scheduler.attempts();
    s.untaint("cn-beijing.192.168.3.229");
    CHECK(s.scheduler.attempts() == tried + 1);
    CHECK(at(s.pod("t"), "spec.nodeName") == "cn-beijing.192.168.3.229");
  }
  SUBCASE("claim created, then bound (PersistentVolumeClaim Add / Update)") {
    Seed s(false);
    gpu_pod(s, "v", 0, "data");
    REQUIRE(!bound(s, "v"));
    CHECK(scheduled_message(s, "v").find("persistentvolumeclaim \"data\" not found") != std::string::npos);
    const auto tried = s.scheduler.attempts();
    const auto& pvcs = s.store.type("", "persistentvolumeclaims");
    s.store.create(pvcs, "default",
                   obj(R"({"metadata":{"name":"data"},"spec":{"storageClassName":"none","accessModes":["ReadWriteOnce"],
                     "resources":{"requests":{"storage":"1Gi"}}}})"));
    CHECK(s.scheduler.attempts() == tried + 1);  // tried again: now the claim is unbound
    CHECK(!bound(s, "v"));
    s.store.mutate(
        pvcs, "default", "data", [](json::object& c) { c["status"] = obj(R"({"phase":"Bound"})"); }, {}, "status");
    CHECK(s.scheduler.attempts() == tried + 2);
    CHECK(bound(s, "v"));
  }
}

// pods/binding as the registry's setPodNodeAndMetadata: sets spec.nodeName once and PodScheduled=True;
// a pod already assigned, or being deleted, is refused with 409 Conflict and left as it was.
TEST_CASE("bind_pod: nodeName and PodScheduled; refused when already assigned or being deleted") {
  Clock clock = Clock::manual();
  Store store(clock);
  const auto& pods = store.type("", "pods");
  store.create(store.type("", "namespaces"), "", obj(R"({"metadata":{"name":"default"}})"));
  const char* spec = R"("spec":{"containers":[{"name":"c","image":"busybox"}]})";
  store.create(pods, "default", obj(fmt::format(R"({{"metadata":{{"name":"a"}},{}}})", spec)));
  bind_pod(store, "default", "a", "node-1");
  auto a = store.get(pods, "default", "a");
  CHECK(at(a, "spec.nodeName") == "node-1");
  bool scheduled = false;
  for (const auto& c : a.at("status").at("conditions").as_array())
    if (c.at("type") == "PodScheduled") scheduled = c.at("status") == "True";
  CHECK(scheduled);
  // Binding `pod` to node-2 answers 409 with `message` and leaves the pod's nodeName as it was.
  auto refused = [&](const std::string& pod, const std::string& message) {
    const std::string before = at(store.get(pods, "default", pod), "spec.nodeName");
    try {
      bind_pod(store, "default", pod, "node-2");
      FAIL("the binding of " << pod << " must be refused");
    } catch (const StatusError& e) {
      CHECK(e.code() == 409);
      CHECK(std::string(e.what()).find(message) != std::string::npos);
    }
    CHECK(at(store.get(pods, "default", pod), "spec.nodeName") == before);
  };
  refused("a", "pod a is already assigned to node \"node-1\"");

  // A finalizer keeps the deleted pod, with a deletionTimestamp.
  store.create(pods, "default",
               obj(fmt::format(R"({{"metadata":{{"name":"b","finalizers":["example.com/keep"]}},{}}})", spec)));
  store.remove(pods, "default", "b");
  REQUIRE(!at(store.get(pods, "default", "b"), "metadata.deletionTimestamp").empty());
  refused("b", "pod b is being deleted, cannot be assigned to a host");
  CHECK(at(store.get(pods, "default", "b"), "spec.nodeName").empty());
}

// A node update changes only that node's cache entry (cache.UpdateNode), keeping the pods already
// accounted on it; an added node takes pods at once. Binds must keep counting what each node holds.
namespace {
// Creates pod default/<name> asking for `gpus` GPUs; returns the node the scheduler bound it to.
std::string create_gpu_pod(Store& store, const std::string& name, int gpus) {
  store.create(store.type("", "pods"), "default",
               obj(fmt::format(R"({{"metadata":{{"name":"{}"}},"spec":{{"containers":[{{"name":"c",
      "image":"busybox","resources":{{"limits":{{"nvidia.com/gpu":"{}"}}}}}}]}}}})",
                               name, gpus)));
  return at(store.get(store.type("", "pods"), "default", name), "spec.nodeName");
}
}  // namespace

// A deletion that does not wait for a kubelet (none runs in these tests): a grace period of 0, as
// `kubectl delete --force --grace-period=0`; a pod on a node is otherwise only marked.
const DeleteOptions kNow = [] {
  DeleteOptions o;
  o.grace_period = 0;
  return o;
}();

TEST_CASE("scheduler: a node changed or added updates its cache entry with the pods bound to it") {
  Clock clock = Clock::manual();
  Store store(clock);
  Scheduler scheduler(store, clock);
  const auto& pods = store.type("", "pods");
  const auto& nodes = store.type("", "nodes");
  store.create(store.type("", "namespaces"), "", obj(R"({"metadata":{"name":"default"}})"));
  auto node = [](const std::string& name) {
    return obj(fmt::format(R"({{"metadata":{{"name":"{}"}},"status":{{"allocatable":
      {{"cpu":"8","memory":"32Gi","pods":"110","nvidia.com/gpu":"2"}}}}}})",
                           name));
  };
  auto gpu_pod = [&](const std::string& name) { return create_gpu_pod(store, name, 2); };
  store.create(nodes, "", node("n1"));
  store.create(nodes, "", node("n2"));
  const std::string first = gpu_pod("p1");
  REQUIRE((first == "n1" || first == "n2"));
  const std::string other = first == "n1" ? "n2" : "n1";
  // A label (a scheduling property) and, separately, an annotation change on the full node.
  store.mutate(nodes, "", first, [](json::object& n) {
    n["metadata"].as_object()["labels"] = json::object{{"pool", "a"}};
  });
  store.mutate(nodes, "", first, [](json::object& n) {
    n["metadata"].as_object()["annotations"] = json::object{{"x", "y"}};
  });
  CHECK(gpu_pod("p2") == other);  // p1's GPUs still count on `first`
  CHECK(gpu_pod("p3").empty());   // both nodes full
  CHECK(scheduler.unschedulable() == std::vector<std::string>{"default/p3"});
  store.create(nodes, "", node("n3"));  // NodeAdd: p3 is retried and fits there
  CHECK(at(store.get(pods, "default", "p3"), "spec.nodeName") == "n3");
  // Allocatable raised on `first`: the bound pod still counts, 2 of 4 GPUs are free.
  store.mutate(
      nodes, "", first,
      [](json::object& n) { n["status"].as_object()["allocatable"].as_object()["nvidia.com/gpu"] = "4"; }, {},
      "status");
  CHECK(gpu_pod("p4") == first);
  CHECK(gpu_pod("p5").empty());
  // p4 deleted: p5 takes its GPUs; a later change of that node counts p1 and p5, not p4.
  store.remove(pods, "default", "p4", kNow);
  CHECK(at(store.get(pods, "default", "p5"), "spec.nodeName") == first);
  store.mutate(nodes, "", first, [](json::object& n) {
    n["metadata"].as_object()["labels"] = json::object{{"pool", "b"}};
  });
  CHECK(gpu_pod("p6").empty());
}

TEST_CASE("scheduler: pods deleted in any order from a node's cache entry leave exactly the others") {
  // The node cache keeps each node's bound pods as a list it removes from by swapping in the last:
  // deleting the first, then the last, then a middle one, a node update must re-add exactly the
  // pods still bound (each takes one of the node's GPUs: what fits afterwards counts them).
  Clock clock = Clock::manual();
  Store store(clock);
  store.create(store.type("", "namespaces"), "", obj(R"({"metadata":{"name":"default"}})"));
  const auto& nodes = store.type("", "nodes");
  store.create(nodes, "", obj(R"({"metadata":{"name":"n1"},"status":{"allocatable":
      {"cpu":"8","memory":"32Gi","pods":"110","nvidia.com/gpu":"5"}}})"));
  Scheduler scheduler(store, clock);  // from here on every pod is bound as it is created
  const auto& pods = store.type("", "pods");
  auto gpu_pod = [&](const std::string& name) { return create_gpu_pod(store, name, 1); };
  auto relabel = [&](const std::string& pool) {  // a scheduling property: the entry is rebuilt
    store.mutate(nodes, "", "n1", [&](json::object& n) {
      n["metadata"].as_object()["labels"] = json::object{{"pool", pool}};
    });
  };
  for (const char* p : {"p1", "p2", "p3", "p4", "p5"}) REQUIRE(gpu_pod(p) == "n1");
  CHECK(gpu_pod("full-1").empty());
  store.remove(pods, "default", "full-1", kNow);
  store.remove(pods, "default", "p1", kNow);  // the first of the list
  store.remove(pods, "default", "p5", kNow);  // now the last
  store.remove(pods, "default", "p3", kNow);  // one in the middle
  relabel("a");                               // rebuilt from p2 and p4: 3 of 5 GPUs free
  CHECK(gpu_pod("q1") == "n1");
  CHECK(gpu_pod("q2") == "n1");
  CHECK(gpu_pod("q3") == "n1");
  CHECK(gpu_pod("full-2").empty());
  store.remove(pods, "default", "full-2", kNow);
  store.remove(pods, "default", "q2", kNow);
  store.remove(pods, "default", "p2", kNow);
  relabel("b");  // p4, q1, q3 left: 2 free
  CHECK(gpu_pod("r1") == "n1");
  CHECK(gpu_pod("r2") == "n1");
  CHECK(gpu_pod("full-3").empty());
}

TEST_CASE("scheduler: a watcher sees every binding of a run longer than one wake batch, in order") {
  Clock clock = Clock::manual();
  Store store{clock};
  const ResourceType& pods = store.type("", "pods");
  store.create(store.type("", "namespaces"), "", obj(R"({"metadata":{"name":"default"}})"));
  WriteOptions seeded;
  seeded.seeded_node = true;
  for (int n = 0; n < 3; ++n)
    store.create(store.type("", "nodes"), "",
                 obj(fmt::format(R"({{"metadata":{{"name":"n{}"}},"status":{{
                   "capacity":{{"cpu":"64","memory":"256Gi","pods":"250"}},
                   "allocatable":{{"cpu":"64","memory":"256Gi","pods":"250"}}}}}})",
                                 n)),
                 seeded);
  // 600 pending pods before the scheduler starts: one sync() binds them all, across three of the
  // scheduler's wake batches (256 pods each).
  constexpr int kPods = 600;
  for (int i = 0; i < kPods; ++i)
    store.create(pods, "default",
                 obj(fmt::format(R"({{"metadata":{{"name":"p{}"}},"spec":{{"containers":[{{"name":"c","image":"x",
                   "resources":{{"requests":{{"cpu":"100m"}}}}}}]}}}})",
                                 i)));
  auto q = store.open_watch(pods, "", store.revision());
  Scheduler scheduler{store, clock};
  const std::size_t n = scheduler.sync();
  std::set<std::string> bound;
  std::uint64_t last = 0;
  bool ordered = true;
  for (const auto& e : q->next(0ms)) {
    ordered = ordered && e.resource_version > last;
    last = e.resource_version;
    if (e.type == EventType::Modified && e.old_object && at(*e.old_object, "spec.nodeName").empty() &&
        !at(*e.object, "spec.nodeName").empty())
      bound.insert(at(*e.object, "metadata.name"));
  }
  CHECK(n == kPods);
  CHECK(bound.size() == kPods);
  CHECK(ordered);
  std::size_t on_nodes = 0;
  for (const auto& p : store.list(pods, "default").items) on_nodes += at(*p, "spec.nodeName").empty() ? 0 : 1;
  CHECK(on_nodes == kPods);
}

// What the scheduler writes for one pod, member by member and in order: the bound pod and its
// Scheduled event as stored (the event's name, uid and the pod's uid masked: they are random or
// time-derived). Guards every change to how those objects are built.
TEST_CASE("scheduler: the bound pod and its Scheduled event as stored, byte for byte") {
  Clock clock = Clock::manual();
  Store store(clock);
  store.create(store.type("", "namespaces"), "", obj(R"({"metadata":{"name":"default"}})"));
  WriteOptions seeded;
  seeded.seeded_node = true;
  store.create(store.type("", "nodes"), "",
               obj(R"({"metadata":{"name":"n0"},"status":{"capacity":{"cpu":"8","memory":"16Gi","pods":"110"},
                   "allocatable":{"cpu":"8","memory":"16Gi","pods":"110"}}})"),
               seeded);
  store.create(store.type("", "pods"), "default",
               obj(R"({"metadata":{"name":"p","labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"x",
                   "resources":{"requests":{"cpu":"100m"}}}]}})"));
  Scheduler scheduler{store, clock};
  scheduler.sync();
  json::object pod = store.get(store.type("", "pods"), "default", "p");
  const auto events = store.list(store.type("", "events"), "default").items;
  REQUIRE(events.size() == 1);
  json::object ev = *events[0];
  const std::string pod_uid(pod["metadata"].as_object()["uid"].as_string());
  CHECK(std::string(ev["involvedObject"].as_object()["uid"].as_string()) == pod_uid);
  CHECK(std::string(ev["metadata"].as_object()["name"].as_string()).starts_with("p."));
  pod["metadata"].as_object()["uid"] = "UID";
  ev["metadata"].as_object()["uid"] = "EVUID";
  ev["metadata"].as_object()["name"] = "NAME";
  ev["involvedObject"].as_object()["uid"] = "UID";
  ev["reportingInstance"] = "default-scheduler-HOST";
  CHECK(json::serialize(ev) ==
        R"({"reason":"Scheduled","message":"Successfully assigned default/p to n0","source":{},)"
        R"("firstTimestamp":null,"lastTimestamp":null,"type":"Normal","eventTime":"2024-01-01T00:00:00.000000Z",)"
        R"("action":"Binding","reportingComponent":"default-scheduler","reportingInstance":"default-scheduler-HOST",)"
        R"("apiVersion":"v1","kind":"Event","metadata":{"name":"NAME","namespace":"default","uid":"EVUID",)"
        // kube-scheduler's entry, as the events.k8s.io/v1 recorder's write records it.
        R"("managedFields":[{"manager":"kube-scheduler","operation":"Update","apiVersion":"events.k8s.io/v1",)"
        R"("time":"2024-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:reason":{},"f:note":{},"f:type":{},)"
        R"("f:eventTime":{},"f:action":{},"f:reportingController":{},"f:reportingInstance":{},"f:regarding":{}}}],)"
        R"("creationTimestamp":"2024-01-01T00:00:00Z","resourceVersion":"6"},"involvedObject":{"kind":"Pod",)"
        R"("name":"p","uid":"UID","apiVersion":"v1","resourceVersion":"4","namespace":"default"}})");
  CHECK(json::serialize(pod) ==
        R"({"metadata":{"name":"p","labels":{"app":"x"},"namespace":"default","uid":"UID",)"
        R"("creationTimestamp":"2024-01-01T00:00:00Z","resourceVersion":"5"},"spec":{"containers":[{"name":"c",)"
        R"("image":"x","resources":{"requests":{"cpu":"100m"}},"imagePullPolicy":"Always",)"
        R"("terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],)"
        R"("restartPolicy":"Always","dnsPolicy":"ClusterFirst","schedulerName":"default-scheduler",)"
        R"("terminationGracePeriodSeconds":30,"securityContext":{},"enableServiceLinks":true,"tolerations":[)"
        R"({"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},)"
        R"({"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],)"
        R"("nodeName":"n0"},"apiVersion":"v1","kind":"Pod","status":{"phase":"Pending","qosClass":"Burstable",)"
        R"("conditions":[{"type":"PodScheduled","status":"True","lastProbeTime":null,)"
        R"("lastTransitionTime":"2024-01-01T00:00:00Z"}]}})");
}
