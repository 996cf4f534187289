// One embedded cluster per topology shared by every process (issue #16), tried as users do: many
// `gpupool --embedded` commands at once, `gpupool cluster serve` with kubectl beside it, kill -9 in
// the middle of a burst, a damaged state file.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "run_cli.hpp"

namespace fs = std::filesystem;

namespace {

struct Shell {
  int code;
  std::string out;
};

/// Runs a shell command line; stdout captured, stderr merged into it.
Shell sh(const std::string& cmd) {
  const auto r = gpupool::cli::testing::run_shell(cmd);
  return {r.code, r.out};
}

int count_lines_starting(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.rfind(prefix, 0) == 0;
  return n;
}

/// A fresh state directory; `gp(args)` runs `gpupool args` with it.
struct StateDir {
  fs::path path = fs::temp_directory_path() /
                  ("gpupool-cli-state-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
  StateDir() { fs::create_directories(path); }
  ~StateDir() { fs::remove_all(path); }
  std::string env() const { return "GPUPOOL_STATE_DIR='" + path.string() + "' "; }
  Shell gp(const std::string& args) const { return sh(env() + "'" GPUPOOL_CLI "' " + args); }
};

/// `gpupool cluster serve` in the background, on a state directory.
struct Serve {
  pid_t pid = -1;
  int out = -1;
  std::string banner, admin;

  explicit Serve(const StateDir& state, const std::string& extra = "") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::setenv("GPUPOOL_STATE_DIR", state.path.c_str(), 1);
      const std::string cmd = "exec '" GPUPOOL_CLI "' cluster serve --topology seed " + extra;
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    out = fds[0];
    char c;
    while (banner.find("press Ctrl-C to stop\n") == std::string::npos && ::read(out, &c, 1) == 1) banner += c;
    const auto at = banner.find("admin kubeconfig: ");
    if (at != std::string::npos) admin = banner.substr(at + 18, banner.find('\n', at) - at - 18);
  }
  ~Serve() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out >= 0) ::close(out);
  }
  std::string kubectl(const std::string& args) const { return "/usr/bin/kubectl --kubeconfig '" + admin + "' " + args; }
  int wait_exit() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  void kill9() {
    ::kill(pid, SIGKILL);
    wait_exit();
  }
};

}  // namespace

TEST_CASE("8 processes x 25 concurrent --embedded submits: exactly 200 jobs, three runs") {
  for (int run = 0; run < 3; ++run) {
    CAPTURE(run);
    StateDir state;
    // Each process submits its 25 jobs one after another; the 8 run at the same time.
    std::string script = "for p in 1 2 3 4 5 6 7 8; do ( for j in $(seq 25); do " + state.env() +
                         "'" GPUPOOL_CLI
                         "' --embedded seed submit job --name p$p-$j --image busybox -- true >/dev/null 2>&1 "
                         "|| echo FAILED p$p-$j; done ) & done; wait";
    const Shell burst = sh(script);
    CHECK(burst.out.find("FAILED") == std::string::npos);
    const Shell list = state.gp("--embedded seed list");
    REQUIRE(list.code == 0);
    CHECK(count_lines_starting(list.out, "p") == 200);
  }
}

TEST_CASE("cluster serve shares the state: --embedded commands and kubectl see one cluster") {
  StateDir state;
  CHECK(state.gp("--embedded seed taint cn-beijing.192.168.3.228 gpu_node=invalid:NoSchedule").code == 0);
  {
    Serve serve(state);
    REQUIRE(!serve.admin.empty());
    CHECK(serve.banner.find("shared with `gpupool --embedded seed` commands") != std::string::npos);
    // What a command did before the server started is there.
    CHECK(sh(serve.kubectl("get node cn-beijing.192.168.3.228 -o jsonpath='{.spec.taints[0].key}'")).out == "gpu_node");
    const Shell status = state.gp("cluster status seed");
    CHECK(status.out.find("served by: pid " + std::to_string(serve.pid) + " on https://127.0.0.1:") !=
          std::string::npos);
    // A second server for the same state is refused, naming the first.
    const Shell second = state.gp("cluster serve --topology seed");
    CHECK(second.code == 1);
    CHECK(second.out.find("already served by pid " + std::to_string(serve.pid)) != std::string::npos);
    // Commands and kubectl at the same time.
    std::string script;
    for (int p = 0; p < 4; ++p)
      script += "( for j in $(seq 10); do " + state.env() + "'" GPUPOOL_CLI "' --embedded seed submit job --name s" +
                std::to_string(p) + "-$j --image busybox -- true >/dev/null 2>&1 || echo FAILED; done ) & " +
                "( for j in $(seq 10); do " + serve.kubectl("create configmap w" + std::to_string(p) + "-$j") +
                " >/dev/null 2>&1 || echo FAILED; done ) & ";
    CHECK(sh(script + "wait").out.find("FAILED") == std::string::npos);
    CHECK(count_lines_starting(sh(serve.kubectl("get jobs -o name")).out, "job.batch/s") == 40);
    CHECK(count_lines_starting(sh(serve.kubectl("get configmaps -o name")).out, "configmap/w") == 40);
    CHECK(count_lines_starting(state.gp("--embedded seed list").out, "s") == 40);
    // Reset is refused while it is served.
    CHECK(state.gp("cluster reset seed").out.find("stop it first: gpupool cluster stop seed") != std::string::npos);
    const Shell stop = state.gp("cluster stop seed");
    CHECK(stop.out == "embedded cluster \"seed\" stopped\n");
    CHECK(serve.wait_exit() == 0);
  }
  // Stopped cleanly: everything is in the snapshot, and in-process commands see it.
  CHECK(state.gp("cluster status seed").out.find("served by: none") != std::string::npos);
  CHECK(count_lines_starting(state.gp("--embedded seed list").out, "s") == 40);
  CHECK(state.gp("cluster reset seed").code == 0);
  CHECK(count_lines_starting(state.gp("--embedded seed list").out, "s") == 0);
}

TEST_CASE("kill -9 of cluster serve during 500 kubectl creates: every reported create is kept, none doubled") {
  StateDir state;
  const fs::path manifest = state.path / "cms.yaml";
  {
    std::ofstream m(manifest);
    for (int i = 0; i < 500; ++i)
      m << "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-" << i << "\ndata:\n  i: \"" << i << "\"\n";
  }
  std::set<std::string> reported;
  {
    Serve serve(state);
    REQUIRE(!serve.admin.empty());
    FILE* kc = ::popen((serve.kubectl("create -f '" + manifest.string() + "'") + " 2>/dev/null").c_str(), "r");
    REQUIRE(kc != nullptr);
    char line[256];
    while (reported.size() < 150 && fgets(line, sizeof line, kc)) {
      std::string l(line);
      if (l.rfind("configmap/", 0) == 0 && l.find(" created") != std::string::npos)
        reported.insert(l.substr(10, l.find(' ') - 10));
    }
    serve.kill9();  // mid-burst
    while (fgets(line, sizeof line, kc)) {
      std::string l(line);
      if (l.rfind("configmap/", 0) == 0 && l.find(" created") != std::string::npos)
        reported.insert(l.substr(10, l.find(' ') - 10));
    }
    ::pclose(kc);
  }
  REQUIRE(reported.size() >= 150);
  Serve again(state);
  REQUIRE(!again.admin.empty());
  const Shell names = sh(again.kubectl("get configmaps -o name"));
  std::set<std::string> stored;
  std::multiset<std::string> all;
  std::istringstream in(names.out);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("configmap/cm-", 0) == 0) {
      stored.insert(l.substr(10));
      all.insert(l.substr(10));
    }
  CAPTURE(reported.size());
  CAPTURE(stored.size());
  for (const auto& r : reported) CHECK_MESSAGE(stored.count(r) == 1, r);
  CHECK(all.size() == stored.size());
  // kubectl sends one create at a time: at most the one in flight was stored without a report.
  CHECK(stored.size() <= reported.size() + 1);
  // The server came back with versions after the old ones: a fresh create lands after them all.
  CHECK(sh(again.kubectl("create configmap after")).code == 0);
}

TEST_CASE("a damaged state file is refused in one line naming it and the fix, and kept as it was") {
  StateDir state;
  REQUIRE(state.gp("--embedded seed nodes").code == 0);
  const fs::path snapshot = state.path / "embedded-seed.json";
  REQUIRE(fs::exists(snapshot));
  std::ofstream(snapshot, std::ios::trunc) << "{\"revision\": 12, \"obj";
  const Shell refused = state.gp("--embedded seed nodes");
  CHECK(refused.code == 1);
  CHECK(refused.out == "error: " + snapshot.string() +
                           ": not a gpupool state file (truncated or corrupt); run `gpupool cluster reset` to start "
                           "afresh (its objects are lost)\n");
  CHECK(fs::file_size(snapshot) == 21);
  CHECK(state.gp("cluster reset seed").code == 0);
  CHECK(state.gp("--embedded seed nodes").code == 0);
}

TEST_CASE("apply -f: a directory, standard input, -R, and what bad input says") {
  StateDir state;
  const std::string dir = std::string(GPUPOOL_SOURCE_DIR) + "/examples/manifests";
  Shell applied = state.gp("--embedded iiis apply -f '" + dir + "'");
  CHECK(applied.code == 0);
  CHECK(applied.out == "persistentvolumeclaim/my-pvc created\ndeployment.apps/my-first-ubuntu-tf created\n");
  Shell again =
      sh("cat '" + dir + "/ubuntu-tf-example.yaml' | " + state.env() + "'" GPUPOOL_CLI "' --embedded iiis apply -f -");
  CHECK(again.out == "deployment.apps/my-first-ubuntu-tf unchanged\n");
  // -R: subdirectories too (nothing new there, so all unchanged).
  const fs::path nested = state.path / "m" / "deeper";
  fs::create_directories(nested);
  fs::copy_file(dir + "/nfs-pvc-example.yaml", nested / "pvc.yaml");
  CHECK(state.gp("--embedded iiis apply -f '" + (state.path / "m").string() + "'").code == 2);  // no files at the top
  CHECK(state.gp("--embedded iiis apply -R -f '" + (state.path / "m").string() + "'").out ==
        "persistentvolumeclaim/my-pvc unchanged\n");
  // Bad input: one line, exit 2, nothing applied.
  Shell missing = state.gp("--embedded iiis apply -f /no/such/file.yaml");
  CHECK(missing.code == 2);
  CHECK(missing.out == "error: --filename: invalid value \"/no/such/file.yaml\": no such file or directory\n");
  CHECK(state.gp("--embedded iiis apply").code == 2);
}

TEST_CASE(
    "cluster serve --fresh: a cluster of its own, the shared state untouched; --state with --fresh is bad usage") {
  StateDir state;
  {
    Serve fresh(state, "--fresh");
    REQUIRE(!fresh.admin.empty());
    CHECK(fresh.banner.find("state:") == std::string::npos);
    CHECK(sh(fresh.kubectl("create configmap only-here")).code == 0);
    CHECK(state.gp("cluster status seed").out.find("served by: none") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(state.path / "embedded-seed.json"));
  CHECK(state.gp("cluster serve --state --fresh").code == 2);
}

TEST_CASE("cluster serve --run local: a submitted job runs for real; logs and kubectl exec reach it") {
  StateDir state;
  Serve serve(state, "--run local");
  REQUIRE(!serve.admin.empty());
  CHECK(state.gp("--embedded seed submit job --name localrun-hi --image busybox \"echo hi; exit 0\"").code == 0);
  // kubectl wait watches the pod: a bounded wait on events, no sleep.
  const Shell waited =
      sh(serve.kubectl("wait --for=jsonpath='{.status.phase}'=Succeeded pod -l job-name=localrun-hi "
                       "--timeout=60s"));
  CHECK(waited.code == 0);
  CHECK(state.gp("--embedded seed logs localrun-hi").out == "hi\n");
  const Shell events =
      sh(serve.kubectl("get events --field-selector reason=LocalProcess -o jsonpath='{.items[0].message}'"));
  CHECK(events.out.find("image not pulled or run") != std::string::npos);

  // A pod that keeps running: kubectl exec runs in its directory with its env.
  CHECK(state.gp("--embedded seed submit pod --name localrun-sleeper --image busybox -- sleep 1000").code == 0);
  CHECK(sh(serve.kubectl("wait --for=condition=Ready pod/localrun-sleeper --timeout=60s")).code == 0);
  const Shell exec = sh(serve.kubectl("exec localrun-sleeper -- sh -c 'echo $HOSTNAME; basename $(pwd)'"));
  CHECK(exec.code == 0);
  CHECK(exec.out.rfind("localrun-sleeper\nlocalrun-sleeper.", 0) == 0);
  CHECK(sh(serve.kubectl("delete pod localrun-sleeper --wait=true --timeout=60s")).code == 0);

  // A bad run mode is one usage error naming the flag.
  const Shell bad = state.gp("--embedded seed --run vm list");
  CHECK(bad.code == 2);
  CHECK(bad.out.find("--run") != std::string::npos);
}

TEST_CASE("--run is remembered by the embedded state: later commands and cluster serve keep it") {
  StateDir state;
  auto remembered = [&] {
    std::ifstream in(state.path / "embedded-seed.run");
    std::string mode;
    in >> mode;
    return mode;
  };
  CHECK(remembered().empty());
  CHECK(state.gp("--embedded seed --run local list").code == 0);
  CHECK(remembered() == "local");
  CHECK(state.gp("--embedded seed list").code == 0);  // no --run: the mode stays
  CHECK(remembered() == "local");
  {
    Serve serve(state);  // no --run: it runs pods as local processes, as the last --run asked
    REQUIRE(!serve.admin.empty());
    CHECK(state.gp("--embedded seed submit job --name remembered --image busybox \"echo remembered\"").code == 0);
    CHECK(sh(serve.kubectl("wait --for=jsonpath='{.status.phase}'=Succeeded pod -l job-name=remembered "
                           "--timeout=60s"))
              .code == 0);
    CHECK(state.gp("--embedded seed logs remembered").out == "remembered\n");
  }
  CHECK(state.gp("--embedded seed --run simulate list").code == 0);
  CHECK(remembered() == "simulate");
  // A run mode the cluster cannot start with is not remembered.
  CHECK(state.gp("--embedded seed --run vm list").code == 2);
  CHECK(remembered() == "simulate");
}
