#include <doctest/doctest.h>

#include <optional>

#include "embedded/clock.hpp"

using namespace gpupool::embedded;
using namespace std::chrono_literals;

TEST_CASE("manual clock stands still until advanced") {
  auto clock = Clock::manual();
  const auto t0 = clock.now();
  CHECK(clock.now() == t0);
  clock.advance(30s);
  CHECK(clock.now() - t0 == 30s);
  clock.advance(-5s);  // time never goes back
  CHECK(clock.now() - t0 == 30s);
  Clock copy = clock;
  copy.advance(1s);
  CHECK(clock.now() - t0 == 30s);
  CHECK(copy.now() - t0 == 31s);
}

TEST_CASE("rfc3339 formatting and parsing") {
  struct Row {
    const char* text;
    bool ok;
    const char* canonical;
  };
  const Row rows[] = {
      {"2024-01-01T00:00:00Z", true, "2024-01-01T00:00:00Z"},
      {"2024-02-29T23:59:59Z", true, "2024-02-29T23:59:59Z"},
      {"2024-01-01T08:00:00+08:00", true, "2024-01-01T00:00:00Z"},
      {"2023-12-31T19:30:00-04:30", true, "2024-01-01T00:00:00Z"},
      {"2024-01-01T00:00:00.5Z", true, "2024-01-01T00:00:00Z"},
      {"2023-02-29T00:00:00Z", false, ""},
      {"2024-01-01 00:00:00Z", false, ""},
      {"2024-01-01T00:00:00", false, ""},
      {"2024-13-01T00:00:00Z", false, ""},
      {"2024-01-01T00:00:00Zjunk", false, ""},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    Clock::time_point t{};
    REQUIRE(parse_rfc3339(r.text, t) == r.ok);
    if (r.ok) CHECK(to_rfc3339(t) == r.canonical);
  }
  CHECK(to_rfc3339(Clock::default_start()) == "2024-01-01T00:00:00Z");
  CHECK(to_rfc3339_micro(Clock::default_start() + 1500us) == "2024-01-01T00:00:00.001500Z");
}

// ---- the simulated kubelet ---------------------------------------------------------------------

#include <boost/json.hpp>

#include "embedded/kubelet.hpp"
#include "embedded/store.hpp"
#include "gpupool/topology.hpp"

namespace json = boost::json;

namespace {

json::object parse_obj(std::string_view text) { return json::parse(text).as_object(); }

std::string at(const json::object& o, std::string_view path) { return field_value(o, path); }

// The Status message of the StatusError `fn` throws ("" when it throws none).
template <class Fn>
std::string status_message(Fn&& fn) {
  try {
    fn();
  } catch (const StatusError& e) {
    return e.status_message();
  }
  return "";
}

struct Cluster {
  Clock clock = Clock::manual();
  Store store{clock};
  const ResourceType& pods = store.type("", "pods");
  Kubelet kubelet{store, clock, KubeletOptions{}};
  Cluster() {
    store.create(store.type("", "namespaces"), "", parse_obj(R"({"metadata":{"name":"default"}})"));
    for (const auto& n : gpupool::Topology::builtin("seed").nodes)
      store.create(store.type("", "nodes"), "", n.to_node_object(clock.now()));
  }
  json::object pod(std::string_view name) const { return store.get(pods, "default", name); }
  void run(std::string_view name, std::string annotations, std::string restart = "Never", bool host_network = false) {
    store.create(
        pods, "default",
        parse_obj(R"({"metadata":{"name":")" + std::string(name) + R"(","annotations":)" + annotations +
                  R"(},"spec":{"nodeName":"cn-beijing.192.168.3.230","restartPolicy":")" + restart +
                  R"(","hostNetwork":)" + (host_network ? "true" : "false") +
                  R"(,"containers":[{"name":"main","image":"horovod","command":["mpirun","python","train.py"],)"
                  R"("args":["--batch_size 64"]}]}})"));
  }
};

}  // namespace

TEST_CASE("kubelet: Pending (ContainerCreating) -> Running -> Succeeded/Failed on the clock") {
  struct Row {
    const char* name;
    const char* annotations;
    const char* restart;
    const char* final_phase;
    int exit_code;
    const char* reason;
  };
  const Row rows[] = {
      {"ok", R"({"gpupool.io/simulate-duration":"30s"})", "Never", "Succeeded", 0, "Completed"},
      {"bad", R"({"gpupool.io/simulate-duration":"30s","gpupool.io/simulate-exit-code":"3"})", "Never", "Failed", 3,
       "Error"},
      {"onfail-ok", R"({"gpupool.io/simulate-duration":"30s"})", "OnFailure", "Succeeded", 0, "Completed"},
  };
  for (const auto& r : rows) {
    CAPTURE(std::string(r.name));
    Cluster c;
    c.run(r.name, r.annotations, r.restart);
    // The kubelet reports the bound pod at once.
    auto p = c.pod(r.name);
    CHECK(at(p, "status.phase") == "Pending");
    CHECK(at(p, "status.hostIP") == "192.168.3.230");
    CHECK(at(p, "status.startTime") == "2024-01-01T00:00:00Z");
    CHECK(p.at("status").at("containerStatuses").at(0).at("state").at("waiting").at("reason") == "ContainerCreating");
    CHECK(c.kubelet.next_due() == Clock::default_start() + 1s);

    c.clock.advance(1s);
    CHECK(c.kubelet.sync() == 1);
    p = c.pod(r.name);
    CHECK(at(p, "status.phase") == "Running");
    CHECK(at(p, "status.podIP").rfind("10.244.", 0) == 0);
    const auto& cs = p.at("status").at("containerStatuses").at(0).as_object();
    CHECK(cs.at("ready") == true);
    CHECK(cs.at("state").at("running").at("startedAt") == "2024-01-01T00:00:01Z");
    bool ready = false;
    for (const auto& cond : p.at("status").at("conditions").as_array())
      if (cond.at("type") == "Ready") ready = cond.at("status") == "True";
    CHECK(ready);

    c.clock.advance(29s);  // 1s short of the run time
    CHECK(c.kubelet.sync() == 0);
    CHECK(at(c.pod(r.name), "status.phase") == "Running");
    c.clock.advance(1s);
    CHECK(c.kubelet.sync() == 1);
    p = c.pod(r.name);
    CHECK(at(p, "status.phase") == r.final_phase);
    const auto& term = p.at("status").at("containerStatuses").at(0).at("state").at("terminated").as_object();
    CHECK(term.at("exitCode").as_int64() == r.exit_code);
    CHECK(term.at("reason") == r.reason);
    CHECK(term.at("finishedAt") == "2024-01-01T00:00:31Z");
    CHECK(!c.kubelet.next_due());
  }
}

TEST_CASE("kubelet: restart policies restart containers; Deployment-style pods run forever") {
  Cluster c;
  c.run("always", R"({"gpupool.io/simulate-duration":"10s"})", "Always");
  c.run("onfailure", R"({"gpupool.io/simulate-duration":"10s","gpupool.io/simulate-exit-code":"1"})", "OnFailure");
  c.run("forever", "{}", "Always");
  c.clock.advance(1s);
  c.kubelet.sync();
  c.clock.advance(25s);  // two restarts each
  c.kubelet.sync();
  for (const char* name : {"always", "onfailure"}) {
    CAPTURE(std::string(name));
    auto p = c.pod(name);
    CHECK(at(p, "status.phase") == "Running");
    const auto& cs = p.at("status").at("containerStatuses").at(0).as_object();
    CHECK(cs.at("restartCount").as_int64() == 2);
    CHECK(cs.at("state").at("running").at("startedAt") == "2024-01-01T00:00:21Z");
    CHECK(cs.at("lastState").at("terminated").at("finishedAt") == "2024-01-01T00:00:21Z");
  }
  c.clock.advance(std::chrono::hours(24 * 30));
  c.kubelet.sync();
  CHECK(at(c.pod("forever"), "status.phase") == "Running");
  CHECK(c.pod("forever").at("status").at("containerStatuses").at(0).at("restartCount").as_int64() == 0);
}

TEST_CASE("kubelet: hostNetwork pods take the node's IP; other pods get distinct pod IPs") {
  Cluster c;
  c.run("host", "{}", "Always", true);
  c.run("a", "{}", "Always");
  c.run("b", "{}", "Always");
  c.clock.advance(1s);
  c.kubelet.sync();
  CHECK(at(c.pod("host"), "status.podIP") == "192.168.3.230");
  CHECK(at(c.pod("a"), "status.podIP") != at(c.pod("b"), "status.podIP"));
  CHECK(at(c.pod("a"), "status.podIP") != "192.168.3.230");
}

TEST_CASE("kubelet: bad simulation annotations are rejected with a field path") {
  const char* bad[] = {R"({"gpupool.io/simulate-duration":"soon"})", R"({"gpupool.io/simulate-exit-code":"256"})",
                       R"({"gpupool.io/simulate-exit-code":"x"})", R"({"gpupool.io/simulate-startup":"-1s"})"};
  for (const char* a : bad) {
    CAPTURE(std::string(a));
    auto pod = parse_obj(R"({"metadata":{"name":"p","annotations":)" + std::string(a) + "}}");
    try {
      validate_simulation_annotations(pod);
      FAIL("expected Invalid");
    } catch (const StatusError& e) {
      CHECK(e.code() == 422);
      REQUIRE(e.causes().size() == 1);
      CHECK(e.causes()[0].field.rfind("metadata.annotations[gpupool.io/simulate-", 0) == 0);
    }
  }
  CHECK_NOTHROW(validate_simulation_annotations(
      parse_obj(R"({"metadata":{"annotations":{"gpupool.io/simulate-duration":"forever"}}})")));
}

TEST_CASE("pod logs: command line, progress on the clock, exit line, options and errors") {
  Cluster c;
  c.run("job", R"({"gpupool.io/simulate-duration":"30s","gpupool.io/simulate-exit-code":"2"})");
  // Before the container starts: the kubelet's waiting error.
  CHECK(status_message([&] { c.kubelet.logs("default", "job", {}); }) ==
        "container \"main\" in pod \"job\" is waiting to start: ContainerCreating");
  c.clock.advance(1s);
  c.kubelet.sync();
  c.clock.advance(20s);
  c.kubelet.sync();
  CHECK(c.kubelet.logs("default", "job", {}) ==
        "+ mpirun python train.py '--batch_size 64'\n"
        "gpupool-sim: container main of pod job started on node cn-beijing.192.168.3.230\n"
        "gpupool-sim: step 1: 10s elapsed of 30s\n"
        "gpupool-sim: step 2: 20s elapsed of 30s\n");
  LogOptions tail;
  tail.tail_lines = 1;
  tail.timestamps = true;
  CHECK(c.kubelet.logs("default", "job", tail) ==
        "2024-01-01T00:00:21.000000000Z gpupool-sim: step 2: 20s elapsed of 30s\n");
  LogOptions limit;
  limit.limit_bytes = 5;
  CHECK(c.kubelet.logs("default", "job", limit) == "+ mpi");

  // Follow: lines arrive as the clock advances; the stream ends with the container.
  std::string followed;
  bool ended = false;
  c.kubelet.follow(
      "default", "job", {}, [&](const std::string& l) { followed += l; }, [&] { ended = true; });
  c.clock.advance(10s);
  c.kubelet.sync();
  CHECK(followed == "gpupool-sim: exiting with code 2\n");
  CHECK(ended);
  CHECK(at(c.pod("job"), "status.phase") == "Failed");

  LogOptions other;
  other.container = "sidecar";
  CHECK(status_message([&] { c.kubelet.logs("default", "job", other); }) ==
        "container sidecar is not valid for pod job");
  LogOptions previous;
  previous.previous = true;
  CHECK(status_message([&] { c.kubelet.logs("default", "job", previous); }) ==
        "previous terminated container \"main\" in pod \"job\" not found");
  CHECK_THROWS_AS(c.kubelet.logs("default", "nope", {}), StatusError);
}

TEST_CASE("pod logs: several containers need a name; previous shows the last attempt") {
  auto pod = parse_obj(R"({"metadata":{"name":"two"},"spec":{"containers":[{"name":"a"},{"name":"b"}]}})");
  CHECK(status_message([&] { pod_log(pod, {}, Clock::default_start(), {}); }) ==
        "a container name must be specified for pod two, choose one of: [a b]");
  Cluster c;
  c.run("crash", R"({"gpupool.io/simulate-duration":"10s","gpupool.io/simulate-exit-code":"1"})", "OnFailure");
  c.clock.advance(1s);
  c.kubelet.sync();
  c.clock.advance(15s);
  c.kubelet.sync();
  LogOptions previous;
  previous.previous = true;
  const std::string prev = c.kubelet.logs("default", "crash", previous);
  CHECK(prev.find("exiting with code 1") != std::string::npos);
  CHECK(c.kubelet.logs("default", "crash", {}).find("exiting") == std::string::npos);
}

TEST_CASE("kubelet: only a node that exists runs its pods; a deleted pod is stopped, then removed") {
  Cluster c;
  const auto& nodes = c.store.type("", "nodes");
  // Bound to a node not registered yet: no kubelet reports it.
  c.store.create(c.pods, "default", parse_obj(R"({"metadata":{"name":"early"},"spec":{"nodeName":"late-node",
      "containers":[{"name":"main","image":"busybox"}]}})"));
  c.clock.advance(5s);
  c.kubelet.sync();
  CHECK(at(c.pod("early"), "status.hostIP").empty());  // (phase Pending from its create)
  // Deleted meanwhile, it stays Terminating: no kubelet confirms it.
  c.store.remove(c.pods, "default", "early");
  CHECK(!at(c.pod("early"), "metadata.deletionTimestamp").empty());
  // The node registers: its kubelet takes the pod up and finishes the deletion.
  auto node = gpupool::Topology::builtin("seed").nodes.back();
  node.name = "late-node";
  c.store.create(nodes, "", node.to_node_object(c.clock.now()));
  c.kubelet.sync();
  CHECK(!c.store.find(c.pods, "default", "early"));

  // A pod on a registered node: watchers see it marked (MODIFIED), stopped (MODIFIED: Failed, its
  // container killed by SIGTERM, as the kubelet's status manager reports before the final delete),
  // then gone (DELETED).
  c.run("p", R"({})");
  c.clock.advance(5s);
  c.kubelet.sync();
  REQUIRE(at(c.pod("p"), "status.phase") == "Running");
  std::vector<std::string> seen;
  const auto sub = c.store.subscribe([&](const WatchEvent& e) {
    if (e.type_info == &c.pods) seen.push_back(std::string(to_string(e.type)));
  });
  std::optional<json::object> stopped;
  const auto last = c.store.subscribe([&](const WatchEvent& e) {
    if (e.type_info == &c.pods && e.type == EventType::Modified && at(*e.object, "status.phase") == "Failed")
      stopped = *e.object;
  });
  c.store.remove(c.pods, "default", "p");
  c.store.unsubscribe(sub);
  c.store.unsubscribe(last);
  CHECK(seen == std::vector<std::string>{"MODIFIED", "MODIFIED", "DELETED"});
  REQUIRE(stopped);
  const auto& terminated = stopped->at("status").at("containerStatuses").at(0).at("state").at("terminated");
  CHECK(terminated.at("exitCode") == 143);
  CHECK(terminated.at("reason") == "Error");
  CHECK(!c.store.find(c.pods, "default", "p"));
}

TEST_CASE("kubelet: an ephemeral container added to a running pod (kubectl debug) is reported running") {
  Cluster c;
  c.run("p", R"({})");
  c.clock.advance(2s);
  c.kubelet.sync();
  REQUIRE(at(c.pod("p"), "status.phase") == "Running");
  // pods/ephemeralcontainers: only spec.ephemeralContainers is taken from the body.
  json::object next = c.pod("p");
  next["spec"].as_object()["ephemeralContainers"] =
      json::parse(R"([{"name":"dbg","image":"busybox","targetContainerName":"main"}])");
  next["metadata"].as_object()["labels"] = json::object{{"ignored", "yes"}};
  c.store.update(c.pods, "default", std::move(next), {}, "ephemeralcontainers");
  const auto updated = c.pod("p");
  CHECK(at(updated, "metadata.labels.ignored").empty());
  CHECK(updated.at("spec").at("ephemeralContainers").at(0).at("imagePullPolicy") == "Always");  // defaulted
  c.kubelet.sync();
  const auto p = c.pod("p");
  const auto& eph = p.at("status").at("ephemeralContainerStatuses").at(0);
  CHECK(eph.at("name") == "dbg");
  CHECK(eph.at("ready") == false);
  CHECK(eph.at("state").at("running").at("startedAt") == json::value(to_rfc3339(c.clock.now())));
  // It stays as it started: the start time is kept as the clock moves on.
  c.clock.advance(5s);
  c.kubelet.sync();
  CHECK(c.pod("p").at("status").at("ephemeralContainerStatuses").at(0).at("state") == eph.at("state"));
  // Removing it is refused.
  json::object without = c.pod("p");
  without["spec"].as_object().erase("ephemeralContainers");
  CHECK(status_message([&] {
          c.store.update(c.pods, "default", without, {}, "ephemeralcontainers");
        }).find("existing ephemeral containers \"dbg\" may not be removed") != std::string::npos);
}
