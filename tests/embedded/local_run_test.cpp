// RunMode::Local: the kubelet runs each container's command as a real local process.
#include <doctest/doctest.h>

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

#include "embedded/kubelet.hpp"
#include "embedded/local_runtime.hpp"
#include "embedded/store.hpp"
#include "gpupool/error.hpp"
#include "gpupool/topology.hpp"

using namespace gpupool::embedded;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

json::object parse_obj(std::string_view text) { return json::parse(text).as_object(); }

struct LocalCluster {
  std::string root;
  Clock clock = Clock::manual();
  Store store{clock};
  const ResourceType& pods = store.type("", "pods");
  Kubelet kubelet{store, clock, KubeletOptions{}};
  // Every committed change bumps `changes`: waits are on it, bounded, never on wall-clock sleeps.
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t changes = 0;
  std::uint64_t subscription = 0;

  LocalCluster() {
    char tmpl[] = "/tmp/gpupool-local-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    root = tmpl;
    kubelet.run_locally(root, true);
    subscription = store.subscribe([this](const WatchEvent&) {
      std::lock_guard lk(mu);
      ++changes;
      cv.notify_all();
    });
    store.create(store.type("", "namespaces"), "", parse_obj(R"({"metadata":{"name":"default"}})"));
    for (const auto& n : gpupool::Topology::builtin("seed").nodes)
      store.create(store.type("", "nodes"), "", n.to_node_object(clock.now()));
  }
  ~LocalCluster() {
    store.unsubscribe(subscription);
    kubelet.stop_local();
  }

  json::object pod(std::string_view name) const { return store.get(pods, "default", name); }
  std::string phase(std::string_view name) const { return field_value(pod(name), "status.phase"); }

  /// Creates a pod bound to the seed's .230 node: `spec` is the rest of the spec's JSON.
  void run(std::string_view name, const std::string& spec, const std::string& restart = "Never") {
    store.create(
        pods, "default",
        parse_obj(R"({"metadata":{"name":")" + std::string(name) +
                  R"(","labels":{"app":"demo"}},"spec":{"nodeName":"cn-beijing.192.168.3.230","restartPolicy":")" +
                  restart + R"(",)" + spec + "}}"));
  }

  /// Waits (at most 30 s) until `pred` holds, re-checking after every change in the store.
  template <class Pred>
  bool wait(Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
      std::uint64_t seen;
      {
        std::lock_guard lk(mu);
        seen = changes;
      }
      if (pred()) return true;
      std::unique_lock lk(mu);
      if (!cv.wait_until(lk, deadline, [&] { return changes != seen; })) return pred();
    }
  }
  bool wait_phase(std::string_view name, std::string_view phase_wanted) {
    return wait([&] { return phase(name) == phase_wanted; });
  }
  std::string log(std::string_view name, LogOptions o = {}) { return kubelet.logs("default", std::string(name), o); }
};

std::string container_spec(const std::string& command_json) {
  return R"("containers":[{"name":"main","image":"python:3.11",)" + command_json + "}]";
}

bool has_event(Store& store, std::string_view reason, std::string_view message_part) {
  for (const auto& e : store.list(store.type("", "events"), "default").items)
    if (field_value(*e, "reason") == reason && field_value(*e, "message").find(message_part) != std::string::npos)
      return true;
  return false;
}

}  // namespace

TEST_CASE("local run: the command runs for real; its exit code and output become the pod's") {
  LocalCluster c;
  c.run("fail", container_spec(R"("command":["sh","-c","echo hello; echo oops >&2; exit 3"])"));
  REQUIRE(c.wait_phase("fail", "Failed"));
  const auto p = c.pod("fail");
  const auto& term = p.at("status").at("containerStatuses").at(0).at("state").at("terminated").as_object();
  CHECK(term.at("exitCode").as_int64() == 3);
  CHECK(term.at("reason") == "Error");
  CHECK(field_value(p, "status.hostIP") == "192.168.3.230");
  CHECK(c.log("fail") == "hello\noops\n");
  LogOptions tail;
  tail.tail_lines = 1;
  CHECK(c.log("fail", tail) == "oops\n");
  // The event says what ran instead of the image.
  CHECK(has_event(c.store, "LocalProcess", "image not pulled or run"));
  CHECK(has_event(c.store, "LocalProcess", "sh -c 'echo hello; echo oops >&2; exit 3'"));

  c.run("ok", container_spec(R"("command":["true"])"));
  REQUIRE(c.wait_phase("ok", "Succeeded"));
  const auto okpod = c.pod("ok");
  const auto& ok = okpod.at("status").at("containerStatuses").at(0).at("state").at("terminated").as_object();
  CHECK(ok.at("exitCode").as_int64() == 0);
  CHECK(ok.at("reason") == "Completed");
}

TEST_CASE("local run: env, downward-API fieldRefs, $(VAR) in args and the per-pod directory") {
  LocalCluster c;
  c.run("envpod", container_spec(R"("command":["sh","-c"],
      "args":["echo \"$GREETING|$(GREETING)|$POD_NAME|$POD_NS|$NODE|$POD_IP|$APP\"; pwd"],
      "env":[{"name":"GREETING","value":"hi"},
             {"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},
             {"name":"POD_NS","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}},
             {"name":"NODE","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}},
             {"name":"POD_IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},
             {"name":"APP","valueFrom":{"fieldRef":{"fieldPath":"metadata.labels['app']"}}}])"));
  REQUIRE(c.wait_phase("envpod", "Succeeded"));
  const auto p = c.pod("envpod");
  const std::string ip = field_value(p, "status.podIP");
  CHECK(ip.rfind("10.244.", 0) == 0);
  const std::string dir = c.root + "/default/envpod." + field_value(p, "metadata.uid");
  CHECK(c.log("envpod") == "hi|hi|envpod|default|cn-beijing.192.168.3.230|" + ip + "|demo\n" +
                               std::filesystem::canonical(dir).string() + "\n");
}

TEST_CASE("local run: init containers run in order before the main container") {
  LocalCluster c;
  c.run("inits", R"("initContainers":[{"name":"first","image":"busybox","command":["sh","-c","echo one > order"]},
                                      {"name":"second","image":"busybox","command":["sh","-c","echo two >> order"]}],
                    "containers":[{"name":"main","image":"busybox","command":["cat","order"]}])");
  REQUIRE(c.wait_phase("inits", "Succeeded"));
  const auto p = c.pod("inits");
  CHECK(c.log("inits") == "one\ntwo\n");
  for (int i = 0; i < 2; ++i)
    CHECK(p.at("status").at("initContainerStatuses").at(i).at("state").at("terminated").at("reason") == "Completed");

  // A failing init container with restartPolicy Never fails the pod; the main container never runs.
  c.run("badinit", R"("initContainers":[{"name":"setup","image":"busybox","command":["sh","-c","exit 2"]}],
                      "containers":[{"name":"main","image":"busybox","command":["sh","-c","echo ran"]}])");
  REQUIRE(c.wait_phase("badinit", "Failed"));
  const auto b = c.pod("badinit");
  CHECK(b.at("status").at("initContainerStatuses").at(0).at("state").at("terminated").at("exitCode") == 2);
  CHECK(b.at("status").at("containerStatuses").at(0).at("state").at("waiting").at("reason") == "PodInitializing");
}

TEST_CASE("local run: OnFailure restarts a failed container after the backoff, on the cluster's clock") {
  LocalCluster c;
  c.run(
      "retry",
      container_spec(
          R"("command":["sh","-c","if [ -f tried ]; then echo second; exit 0; fi; touch tried; echo first; exit 1"])"),
      "OnFailure");
  auto waiting_reason = [&] {
    const auto p = c.pod("retry");
    const json::value* cs = p.at("status").as_object().if_contains("containerStatuses");
    if (!cs) return std::string();
    return field_value(cs->as_array().at(0).as_object(), "state.waiting.reason");
  };
  REQUIRE(c.wait([&] { return waiting_reason() == "CrashLoopBackOff"; }));
  CHECK(c.phase("retry") == "Running");
  CHECK(c.kubelet.next_due() == c.clock.now() + 10s);
  c.clock.advance(10s);
  c.kubelet.sync();
  REQUIRE(c.wait_phase("retry", "Succeeded"));
  const auto p = c.pod("retry");
  const auto& cs = p.at("status").at("containerStatuses").at(0).as_object();
  CHECK(cs.at("restartCount") == 1);
  CHECK(cs.at("lastState").at("terminated").at("exitCode") == 1);
  CHECK(c.log("retry") == "second\n");
  LogOptions prev;
  prev.previous = true;
  CHECK(c.log("retry", prev) == "first\n");
}

TEST_CASE("local run: deleting the pod kills its process group") {
  LocalCluster c;
  // The shell prints its PID (the group leader), then waits on a child sleeping in its group. ($$
  // is the kubelet's escape of $, as in Kubernetes: the shell sees `echo $$`.)
  c.run("sleeper", container_spec(R"("command":["sh","-c","echo $$$$; sleep 1000 & wait"])") +
                       R"(,"terminationGracePeriodSeconds":5)");
  REQUIRE(c.wait([&] { return c.phase("sleeper") == "Running" && !c.log("sleeper").empty(); }));
  const pid_t pid = std::stoi(c.log("sleeper"));
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  REQUIRE(pidfd >= 0);
  c.store.remove(c.pods, "default", "sleeper");
  ::pollfd f{pidfd, POLLIN, 0};
  CHECK(::poll(&f, 1, 30000) == 1);  // readable once the process has ended (bounded wait)
  ::close(pidfd);
}

TEST_CASE("local run: a command that cannot start is a StartError; a pod without a command says why") {
  LocalCluster c;
  c.run("missing", container_spec(R"("command":["gpupool-no-such-command-xyz"])"));
  REQUIRE(c.wait_phase("missing", "Failed"));
  const auto p = c.pod("missing");
  const auto& term = p.at("status").at("containerStatuses").at(0).at("state").at("terminated").as_object();
  CHECK(term.at("reason") == "StartError");
  CHECK(term.at("exitCode") == 128);
  CHECK(term.at("message") == "exec: \"gpupool-no-such-command-xyz\": executable file not found in $PATH");

  c.run("nocommand", R"("containers":[{"name":"main","image":"python:3.11"}])");
  REQUIRE(c.wait_phase("nocommand", "Failed"));
  const auto n = c.pod("nocommand");
  CHECK(field_value(n.at("status").at("containerStatuses").at(0).as_object(), "state.terminated.message")
            .find("set command") != std::string::npos);
}

TEST_CASE("local run: exec runs in the pod's directory with its env") {
  LocalCluster c;
  c.run("shell", container_spec(R"("command":["sleep","1000"],"env":[{"name":"WHO","value":"me"}])"));
  REQUIRE(c.wait_phase("shell", "Running"));
  auto handler = local_stream_handler(*c.kubelet.local_runtime());
  int out[2];
  REQUIRE(::pipe(out) == 0);
  gpupool::ExecRequest r;
  r.pod = {"default", "shell", field_value(c.pod("shell"), "metadata.uid"), "cn-beijing.192.168.3.230"};
  r.container = "main";
  r.command = {"sh", "-c", "echo $WHO; pwd; exit 4"};
  r.stdout_fd = out[1];
  CHECK(handler->exec(r) == 4);
  ::close(out[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  const std::string dir = c.root + "/default/shell." + field_value(c.pod("shell"), "metadata.uid");
  CHECK(got == "me\n" + std::filesystem::canonical(dir).string() + "\n");
  r.pod.name = "nosuchpod";
  CHECK_THROWS_AS(handler->exec(r), gpupool::Error);
}

TEST_CASE("run mode: parsed by name, errors name the field") {
  CHECK(gpupool::parse_run_mode("local") == gpupool::RunMode::Local);
  CHECK(gpupool::parse_run_mode("simulate") == gpupool::RunMode::Simulate);
  CHECK(gpupool::EmbeddedOptions{}.run == gpupool::RunMode::Simulate);  // the default stays Simulate
  try {
    gpupool::parse_run_mode("container", "--run");
    FAIL("no error");
  } catch (const gpupool::ValidationError& e) {
    CHECK(std::string(e.what()).find("--run") != std::string::npos);
  }
}

TEST_CASE("local run: a followed log gets the process's new lines, then ends with it") {
  LocalCluster c;
  std::mutex mu;
  std::condition_variable cv;
  std::string got;
  bool ended = false;
  // Prints one line, then a second once the test creates `go` in the pod's directory.
  c.run("chatty",
        container_spec(R"("command":["sh","-c","echo one; while [ ! -f go ]; do sleep 0.01; done; echo two"])"));
  REQUIRE(c.wait([&] { return c.phase("chatty") == "Running" && c.log("chatty") == "one\n"; }));
  c.kubelet.follow(
      "default", "chatty", {},
      [&](const std::string& line) {
        std::lock_guard lk(mu);
        got += line;
      },
      [&] {
        std::lock_guard lk(mu);
        ended = true;
        cv.notify_all();
      });
  const std::string dir = c.root + "/default/chatty." + field_value(c.pod("chatty"), "metadata.uid");
  std::FILE* go = std::fopen((dir + "/go").c_str(), "w");
  REQUIRE(go);
  std::fclose(go);
  // The exit makes the kubelet sync, which feeds followers and ends them once the pod has finished.
  std::unique_lock lk(mu);
  REQUIRE(cv.wait_for(lk, 30s, [&] { return ended; }));
  CHECK(got == "two\n");  // only what was printed after follow(): the earlier lines are logs()'s
}
