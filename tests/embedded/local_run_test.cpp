// RunMode::Local: the kubelet runs each container's command as a real local process.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "embedded/controllers_util.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/error.hpp"
#include "gpupool/topology.hpp"
#include "local_cluster.hpp"

using namespace gpupool::embedded;
using namespace std::chrono_literals;
namespace json = boost::json;

using namespace local_test;

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
  const std::string dir = c.root + "/pods/default/envpod." + field_value(p, "metadata.uid");
  CHECK(c.log("envpod") == "hi|hi|envpod|default|cn-beijing.192.168.3.230|" + ip + "|demo\n" +
                               std::filesystem::canonical(dir).string() + "\n");
}

TEST_CASE("local run: the service environment reaches the API server and the Services as local addresses") {
  // The kubelet's getServiceEnvVarMap / envvars.FromServices: the `kubernetes` Service of default
  // always (its targetPort is the server's own port), the pod's namespace's Services unless
  // enableServiceLinks is false; the names keep the Services' ports, the values are local.
  LocalCluster c;
  const auto& services = c.store.type("", "services");
  c.store.create(services, "default", parse_obj(R"({"metadata":{"name":"kubernetes"},"spec":{"clusterIP":"10.96.0.1",
      "ports":[{"name":"https","port":443,"protocol":"TCP","targetPort":6443}]}})"));
  c.store.create(services, "default", parse_obj(R"({"metadata":{"name":"tensor-board"},"spec":{
      "selector":{"role":"tb"},"ports":[{"name":"http","port":80,"targetPort":6006}]}})"));
  c.store.create(services, "default", parse_obj(R"({"metadata":{"name":"headless"},"spec":{"clusterIP":"None",
      "selector":{"role":"tb"},"ports":[{"port":80}]}})"));
  c.store.create(c.pods, "default", parse_obj(R"({"metadata":{"name":"tb","labels":{"role":"tb"}},"spec":{
                   "nodeName":"cn-beijing.192.168.3.230","restartPolicy":"Never","containers":[{"name":"main",
                   "image":"python:3.11","command":["sleep","1000"],"ports":[{"containerPort":6006}]}]}})"));
  const std::string show = R"("command":["sh","-c","env | grep -E '^(KUBERNETES|TENSOR_BOARD|HEADLESS|API)' | sort"])";
  c.run("links",
        container_spec(show +
                       R"j(,"env":[{"name":"API","value":"$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"}])j"));
  c.run("nolinks", container_spec(show) + R"(,"enableServiceLinks":false)");
  c.run("own", container_spec(show + R"(,"env":[{"name":"KUBERNETES_SERVICE_HOST","value":"mine"}])") +
                   R"(,"enableServiceLinks":false)");
  REQUIRE(c.wait_phase("links", "Succeeded"));
  REQUIRE(c.wait_phase("nolinks", "Succeeded"));
  REQUIRE(c.wait_phase("own", "Succeeded"));
  const auto tb_port = c.kubelet.local_runtime()->local_port("default/tb", 6006);
  REQUIRE(tb_port);
  const std::string tb = std::to_string(*tb_port);
  const std::string kube =
      "KUBERNETES_PORT=tcp://127.0.0.1:6443\n"
      "KUBERNETES_PORT_443_TCP=tcp://127.0.0.1:6443\n"
      "KUBERNETES_PORT_443_TCP_ADDR=127.0.0.1\n"
      "KUBERNETES_PORT_443_TCP_PORT=6443\n"
      "KUBERNETES_PORT_443_TCP_PROTO=tcp\n"
      "KUBERNETES_SERVICE_HOST=127.0.0.1\n"
      "KUBERNETES_SERVICE_PORT=6443\n"
      "KUBERNETES_SERVICE_PORT_HTTPS=6443\n";
  CHECK(c.log("links") == "API=127.0.0.1:6443\n" + kube + "TENSOR_BOARD_PORT=tcp://127.0.0.1:" + tb +
                              "\nTENSOR_BOARD_PORT_80_TCP=tcp://127.0.0.1:" + tb +
                              "\nTENSOR_BOARD_PORT_80_TCP_ADDR=127.0.0.1\nTENSOR_BOARD_PORT_80_TCP_PORT=" + tb +
                              "\nTENSOR_BOARD_PORT_80_TCP_PROTO=tcp\nTENSOR_BOARD_SERVICE_HOST=127.0.0.1\n"
                              "TENSOR_BOARD_SERVICE_PORT=" +
                              tb + "\nTENSOR_BOARD_SERVICE_PORT_HTTP=" + tb + "\n");
  CHECK(c.log("nolinks") == kube);  // the master service's always
  // A name the container defines itself is its own (the kubelet skips the service variable).
  std::string own = kube;
  own.replace(own.find("KUBERNETES_SERVICE_HOST=127.0.0.1"), 33, "KUBERNETES_SERVICE_HOST=mine");
  CHECK(c.log("own") == own);
}

TEST_CASE("local run: env from secretKeyRef, configMapKeyRef and envFrom; the secret never in what gpupool writes") {
  LocalCluster c;
  const std::string secret_value = "s3cr3t-Pa55word-7f1d";  // base64: czNjcjN0LVBhNTV3b3JkLTdmMWQ=
  c.store.create(c.store.type("", "secrets"), "default",
                 parse_obj(R"({"metadata":{"name":"creds"},"data":{"password":"czNjcjN0LVBhNTV3b3JkLTdmMWQ=",
                               "token":"dG9rLTQy"}})"));
  c.store.create(c.store.type("", "configmaps"), "default",
                 parse_obj(R"({"metadata":{"name":"settings"},"data":{"color":"blue","size":"L"}})"));
  // The values go to a file (the pod's log is the program's own output, whatever it prints).
  c.run("secretenv", container_spec(R"j("command":["sh","-c",
      "printf '%s|%s|%s|%s|%s|%s' \"$PASSWORD\" \"$COLOR\" \"$S_password\" \"$S_token\" \"$C_size\" \"$ARG\" > seen; echo done"],
      "args":[],
      "env":[{"name":"PASSWORD","valueFrom":{"secretKeyRef":{"name":"creds","key":"password"}}},
             {"name":"COLOR","valueFrom":{"configMapKeyRef":{"name":"settings","key":"color"}}},
             {"name":"ARG","value":"pw=$(PASSWORD)"}],
      "envFrom":[{"prefix":"S_","secretRef":{"name":"creds"}},{"prefix":"C_","configMapRef":{"name":"settings"}}])j"));
  REQUIRE(c.wait_phase("secretenv", "Succeeded"));
  const auto p = c.pod("secretenv");
  const std::string dir = c.root + "/pods/default/secretenv." + field_value(p, "metadata.uid");
  std::ifstream in(dir + "/seen");
  std::string seen;
  std::getline(in, seen);
  CHECK(seen == secret_value + "|blue|" + secret_value + "|tok-42|L|pw=" + secret_value);
  CHECK(c.log("secretenv") == "done\n");
  // Nothing gpupool wrote carries it: events, the pod (status, annotations), its host entries.
  std::string written;
  for (const auto& e : c.store.list(c.store.type("", "events"), "").items) written += json::serialize(*e);
  written += json::serialize(p);
  for (const auto& f : std::filesystem::recursive_directory_iterator(c.root + "/hosts")) {
    std::ifstream h(f.path());
    written += std::string(std::istreambuf_iterator<char>(h), {});
  }
  CHECK(written.find("LocalProcess") != std::string::npos);  // the events are there
  CHECK(written.find(secret_value) == std::string::npos);
  CHECK(written.find("tok-42") == std::string::npos);

  // A missing key: the container waits, the message names the key and the Secret, not values.
  c.run("missingkey", container_spec(R"("command":["true"],
      "env":[{"name":"X","valueFrom":{"secretKeyRef":{"name":"creds","key":"nope"}}}])"));
  auto waiting = [&]() -> json::object {
    const auto mk = c.pod("missingkey");
    const json::object* w = util::object_at(mk, {"status"});
    if (const json::array* cs = util::array_at(mk, {"status"}, "containerStatuses"); cs && !cs->empty())
      w = util::object_at(cs->at(0).as_object(), {"state", "waiting"});
    else
      w = nullptr;
    return w ? *w : json::object{};
  };
  REQUIRE(c.wait([&] {
    const json::object w = waiting();
    return util::string_of(&w, "reason") == "CreateContainerConfigError";
  }));
  CHECK(waiting().at("message") == "couldn't find key nope in Secret default/creds");
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
  const std::string dir = c.root + "/pods/default/shell." + field_value(c.pod("shell"), "metadata.uid");
  CHECK(got == "me\n" + std::filesystem::canonical(dir).string() + "\n");
  r.pod.name = "nosuchpod";
  CHECK_THROWS_AS(handler->exec(r), gpupool::Error);
}

TEST_CASE("run mode: parsed by name, errors name the field") {
  CHECK(gpupool::parse_run_mode("local") == gpupool::RunMode::Local);
  CHECK(gpupool::parse_run_mode("simulate") == gpupool::RunMode::Simulate);
  CHECK(gpupool::parse_run_mode("container") == gpupool::RunMode::Container);
  for (auto m : {gpupool::RunMode::Simulate, gpupool::RunMode::Local, gpupool::RunMode::Container})
    CHECK(gpupool::parse_run_mode(gpupool::to_string(m)) == m);
  CHECK(gpupool::EmbeddedOptions{}.run == gpupool::RunMode::Simulate);  // the default stays Simulate
  try {
    gpupool::parse_run_mode("vm", "--run");
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
  const std::string dir = c.root + "/pods/default/chatty." + field_value(c.pod("chatty"), "metadata.uid");
  std::FILE* go = std::fopen((dir + "/go").c_str(), "w");
  REQUIRE(go);
  std::fclose(go);
  // The exit makes the kubelet sync, which feeds followers and ends them once the pod has finished.
  std::unique_lock lk(mu);
  REQUIRE(cv.wait_for(lk, 30s, [&] { return ended; }));
  CHECK(got == "two\n");  // only what was printed after follow(): the earlier lines are logs()'s
}

TEST_CASE("run mode container: refused with one clear error when neither podman nor docker is on PATH") {
  char tmpl[] = "/tmp/gpupool-empty-path-XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  const std::string old = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", tmpl, 1);
  std::string error;
  try {
    gpupool::EmbeddedServer server({.run = gpupool::RunMode::Container});
  } catch (const gpupool::Error& e) {
    error = e.what();
  }
  CHECK(find_container_runtime().empty());
  ::setenv("PATH", old.c_str(), 1);
  ::rmdir(tmpl);
  CHECK(error ==
        "run mode container: neither podman nor docker is on PATH; install one of them, or use --run local to run "
        "the commands as local processes");
}

TEST_CASE("run mode container: the podman argv runs the image with the env, volumes, command and args") {
  const auto c = parse_obj(R"({"name":"main","image":"python:3.11","workingDir":"/work",
                               "command":["python","-u"],"args":["train.py","--epochs=1"]})");
  const std::vector<LocalMount> mounts{{"/state/volumes/default/data", "/pvc", false},
                                       {"/state/nfs/srv/x", "/share", true}};
  CHECK(container_run_argv("/usr/bin/podman", "gpupool-default-p-main", c,
                           {"PATH=/bin", "HOME=/root", "HOSTNAME=p", "RANK=0"},
                           mounts) == std::vector<std::string>{"/usr/bin/podman",
                                                               "run",
                                                               "--rm",
                                                               "--network",
                                                               "host",
                                                               "--name",
                                                               "gpupool-default-p-main",
                                                               "-e",
                                                               "HOSTNAME=p",
                                                               "-e",
                                                               "RANK=0",
                                                               "-v",
                                                               "/state/volumes/default/data:/pvc",
                                                               "-v",
                                                               "/state/nfs/srv/x:/share:ro",
                                                               "-w",
                                                               "/work",
                                                               "--entrypoint",
                                                               R"(["python","-u"])",
                                                               "python:3.11",
                                                               "train.py",
                                                               "--epochs=1"});
  // Without a command, the image's ENTRYPOINT runs with the args as its CMD.
  const auto args_only = parse_obj(R"({"name":"main","image":"busybox","args":["echo","hi"]})");
  CHECK(container_run_argv("docker", "n", args_only, {}, {}) ==
        std::vector<std::string>{"docker", "run", "--rm", "--network", "host", "--name", "n", "busybox", "echo", "hi"});
}

TEST_CASE("local run: a deleted pod stays Terminating while its process stops, then is removed") {
  // Graceful deletion (rest.BeforeDelete, the kubelet's status manager): the pod is marked with
  // deletionTimestamp (now + its grace period) and deletionGracePeriodSeconds, its process gets
  // SIGTERM, and only once it has exited does the kubelet delete the pod (grace 0) — the guide's
  // "copy results back" after SIGTERM finishes while the pod is still there.
  LocalCluster c;
  const std::string saved = c.root + "/saved";
  c.run("stager", container_spec(R"("command":["sh","-c","trap 'sleep 1; echo results > )" + saved +
                                 R"(; exit 0' TERM; echo ready; while true; do sleep 0.05; done"])") +
                      R"(,"terminationGracePeriodSeconds":20)");
  REQUIRE(c.wait([&] { return c.phase("stager") == "Running" && c.log("stager").find("ready") != std::string::npos; }));
  const json::object answer = c.store.remove(c.pods, "default", "stager");
  CHECK(answer.at("metadata").at("deletionGracePeriodSeconds") == 20);
  const auto pod = c.store.find(c.pods, "default", "stager");
  REQUIRE(pod);  // still there: its process has its grace period to stop in
  CHECK(field_value(*pod, "metadata.deletionTimestamp") == to_rfc3339(c.clock.now() + std::chrono::seconds(20)));
  CHECK(!std::filesystem::exists(saved));
  CHECK(c.wait([&] { return !c.store.find(c.pods, "default", "stager"); }));
  CHECK(std::filesystem::exists(saved));  // the trap ran to its end before the pod went
}

TEST_CASE("local run: a deleted pod's terminal status has each process's real exit, and its phase follows") {
  // The status the kubelet writes before the final delete (status_manager syncPod) reports what
  // each stopped process really exited with (convertToAPIContainerStatuses), and the phase
  // getPhase gives a terminal pod: Succeeded only if every container exited 0, else Failed.
  LocalCluster c;
  std::mutex mu;
  std::map<std::string, json::object> final_status;  // pod -> the status written before its delete
  const auto sub = c.store.subscribe([&](const WatchEvent& e) {
    if (e.type_info != &c.pods || e.type != EventType::Modified || !e.object) return;
    const std::string phase = field_value(*e.object, "status.phase");
    if (phase != "Succeeded" && phase != "Failed") return;
    std::lock_guard lk(mu);
    final_status[field_value(*e.object, "metadata.name")] = e.object->at("status").as_object();
  });
  // A process that traps SIGTERM (the guide's "copy the results back, then exit 0"), one that exits
  // 3 on it, one the signal kills (128 + 15), and one that ignores it until SIGKILL after its grace
  // period (128 + 9; the grace period is the only wait).
  const std::map<std::string, std::pair<std::string, int>> pods{
      {"saver", {"trap 'exit 0' TERM", 20}},
      {"failer", {"trap 'exit 3' TERM", 20}},
      {"plain", {"true", 20}},
      {"stubborn", {"trap '' TERM", 1}},
  };
  // Each process says it is ready (its trap set) through a FIFO the test holds both ends of, so
  // the wait is on that, bounded, and the pod is deleted only then.
  std::map<std::string, int> ready;  // pod -> the FIFO's read end
  std::vector<int> fds;
  for (const auto& p : pods) {
    const std::string fifo = c.root + "/" + p.first + ".ready";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    ready[p.first] = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    REQUIRE(ready[p.first] >= 0);
    fds.push_back(ready[p.first]);
    fds.push_back(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));  // no hangup between writers
    REQUIRE(fds.back() >= 0);
    c.run(p.first, container_spec(R"("command":["sh","-c",")" + p.second.first + "; echo ready > " + fifo +
                                  R"(; while true; do sleep 0.05; done"])") +
                       R"(,"terminationGracePeriodSeconds":)" + std::to_string(p.second.second));
  }
  for (const auto& p : pods) {
    const std::string& name = p.first;
    REQUIRE(c.wait_phase(name, "Running"));
    ::pollfd f{ready[name], POLLIN, 0};
    REQUIRE(::poll(&f, 1, 30000) == 1);  // bounded wait
  }
  for (int fd : fds) ::close(fd);
  for (const auto& p : pods) c.store.remove(c.pods, "default", p.first);
  // Gone, and its terminal status seen (another thread may deliver the writes' events later).
  for (const auto& p : pods) {
    const std::string& name = p.first;
    REQUIRE(c.wait([&] {
      std::lock_guard lk(mu);
      return final_status.count(name) == 1 && !c.store.find(c.pods, "default", name);
    }));
  }
  c.store.unsubscribe(sub);

  auto check = [&](const std::string& name, int code, const std::string& reason, const std::string& phase) {
    CAPTURE(name);
    std::lock_guard lk(mu);
    REQUIRE(final_status.count(name) == 1);
    const json::object& status = final_status.at(name);
    CHECK(std::string(status.at("phase").as_string()) == phase);
    const auto& cs = status.at("containerStatuses").at(0).as_object();
    const auto& terminated = cs.at("state").at("terminated").as_object();
    CHECK(terminated.at("exitCode").as_int64() == code);
    CHECK(std::string(terminated.at("reason").as_string()) == reason);
    CHECK(cs.at("ready") == false);
    CHECK(cs.at("started") == false);
  };
  check("saver", 0, "Completed", "Succeeded");
  check("failer", 3, "Error", "Failed");
  check("plain", 143, "Error", "Failed");
  check("stubborn", 137, "Error", "Failed");
}
