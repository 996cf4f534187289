// SSD staging: the generated scripts are run with /bin/sh on temporary directories.
#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/staging.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace gpupool;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gpupool-staging-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Starts `shell` with argv (argv[0] is always "sh" here, which puts bash in POSIX mode; commands looked up in
// PATH=`path`), its stdin from `in` (or /dev/null; "-": closed), stdout and stderr into `log` (or /dev/null: clean test
// output).
pid_t spawn(const std::vector<std::string>& argv, const std::string& path, const std::string& in = "",
            const std::string& log = "", const std::string& shell = "/bin/sh") {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);  // a group of its own: finish() ends whatever the script left behind
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int in_fd = open(in.empty() || in == "-" ? "/dev/null" : in.c_str(), O_RDONLY);
    int log_fd = open(log.empty() ? "/dev/null" : log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in_fd < 0 || log_fd < 0) _exit(126);
    dup2(in_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    if (in == "-") close(0);  // no stdin at all
    std::string env_path = "PATH=" + path;
    char* envp[] = {env_path.data(), nullptr};
    execve(shell.c_str(), args.data(), envp);
    _exit(127);
  }
  return pid;
}

// Waits (at most `seconds`) for `pid` to exit; its exit status, 128 + the signal that killed it,
// or -1 when it is still running (then it is killed). Then ends what is left of its process group.
int finish(pid_t pid, int seconds = 60) {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  REQUIRE(pidfd >= 0);
  pollfd p{pidfd, POLLIN, 0};
  int ready = poll(&p, 1, seconds * 1000);
  close(pidfd);
  if (ready != 1) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  kill(-pid, SIGKILL);  // the script's group: a command or watchdog still running is not leaked
  if (ready != 1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

// Runs argv (see spawn) and returns its exit status.
int run(const std::vector<std::string>& argv, const std::string& path, const std::string& log = "") {
  return finish(spawn(argv, path, "", log));
}

// A FIFO the main command writes one byte to once it runs: the test waits for that byte (bounded)
// instead of sleeping.
struct ReadySignal {
  fs::path path;
  int fd = -1;
  explicit ReadySignal(const fs::path& p) : path(p) {
    REQUIRE(mkfifo(p.c_str(), 0600) == 0);
    fd = open(p.c_str(), O_RDONLY | O_NONBLOCK);  // a reader exists: the writer's open does not block
    REQUIRE(fd >= 0);
  }
  ~ReadySignal() { close(fd); }
  bool wait(int seconds = 60) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, seconds * 1000) != 1) return false;
    char c = 0;
    return read(fd, &c, 1) == 1;
  }
};

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A PATH with only what the scripts need besides rsync, to exercise the `cp -a` fallback.
std::string path_without_rsync(const fs::path& dir) {
  fs::create_directories(dir);
  for (const char* tool : {"mkdir", "cp", "sh", "cat", "printf", "echo", "test", "[", "true", "false"}) {
    for (const char* bin : {"/bin/", "/usr/bin/"}) {
      fs::path from = fs::path(bin) / tool;
      if (fs::exists(from) && !fs::exists(dir / tool)) fs::create_symlink(from, dir / tool);
    }
  }
  return dir.string();
}

bool have_rsync() { return std::system("command -v rsync >/dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("shell_quote makes one word whose value is the text, whatever it holds") {
  const std::string texts[] = {"plain", "with space", "it's",  "'",  "''", "$HOME",
                               "`id`",  "a\nb",       "\"q\"", "-n", "*",  ""};
  for (const auto& t : texts) {
    CAPTURE(t);
    TempDir dir;
    fs::path out = dir.path / "out";
    std::string script = "printf '%s' " + shell_quote(t) + " > " + shell_quote(out.string());
    REQUIRE(run({"sh", "-c", script}, "/usr/bin:/bin") == 0);
    CHECK(slurp(out) == t);
  }
  CHECK(shell_quote("it's") == "'it'\\''s'");
}

TEST_CASE("stage-in copies the source tree into the cache, with rsync or cp -a, paths with spaces and quotes") {
  std::vector<std::pair<std::string, std::string>> paths;  // (label, PATH)
  TempDir tools;
  paths.emplace_back("cp -a", path_without_rsync(tools.path / "bin"));
  if (have_rsync()) paths.emplace_back("rsync", "/usr/bin:/bin");
  for (const auto& entry : paths) {
    const std::string& label = entry.first;
    const std::string& path = entry.second;
    CAPTURE(label);
    TempDir dir;
    fs::path source = dir.path / "pvc dir" / "it's data";
    fs::path cache = dir.path / "ssd \"cache\"" / "job $1";
    write(source / "a.txt", "alpha");
    write(source / "sub dir" / "b'.txt", "beta");
    fs::path source2 = dir.path / "pvc dir" / "labels";
    fs::path cache2 = dir.path / "ssd \"cache\"" / "labels";
    write(source2 / "l.txt", "gamma");
    SsdStaging s{{{source.string(), cache.string()}, {source2.string(), cache2.string()}}, "", ""};
    fs::path log = dir.path / "log";
    REQUIRE(run({"sh", "-c", stage_in_script(s)}, path, log.string()) == 0);
    CHECK(slurp(cache / "a.txt") == "alpha");
    CHECK(slurp(cache / "sub dir" / "b'.txt") == "beta");
    CHECK_FALSE(fs::exists(cache / "it's data"));  // the contents, not the directory itself
    CHECK(slurp(cache2 / "l.txt") == "gamma");     // every input is copied
    CHECK(slurp(log) == "gpupool: staging " + source.string() + " into the SSD cache " + cache.string() + "\n" +
                            "gpupool: staging " + source2.string() + " into the SSD cache " + cache2.string() + "\n");
  }
}

TEST_CASE("run script: the main command's exit status is kept and results are copied back") {
  std::vector<std::pair<std::string, std::string>> paths;
  TempDir tools;
  paths.emplace_back("cp -a", path_without_rsync(tools.path / "bin"));
  if (have_rsync()) paths.emplace_back("rsync", "/usr/bin:/bin");
  struct Row {
    std::string shell;  // the user's command, run as sh -c <shell>
    int status;
  };
  const Row rows[] = {
      {"printf done > \"$OUT/result.txt\"; exit 0", 0},
      {"printf partial > \"$OUT/result.txt\"; exit 3", 3},
      {"printf '%s' \"$1\" > \"$OUT/result.txt\"; exit 42", 42},
  };
  for (const auto& entry : paths) {
    const std::string& label = entry.first;
    const std::string& path = entry.second;
    for (const auto& r : rows) {
      CAPTURE(label);
      CAPTURE(r.shell);
      TempDir dir;
      fs::path results = dir.path / "ssd" / "out 'x'";
      fs::path target = dir.path / "pvc" / "results; rm -rf \"$HOME\"";
      fs::create_directories(results);
      SsdStaging s{{}, results.string(), target.string()};
      // The user's string reaches the script only as "$@": OUT is set in that shell, not in ours.
      std::string user = "OUT=" + shell_quote(results.string()) + "; " + r.shell;
      std::vector<std::string> argv = staged_command(s, {"sh", "-c", user});
      REQUIRE(argv.size() == 7);
      CHECK(argv[0] == "sh");
      CHECK(argv[1] == "-c");
      CHECK(argv[6] == user);  // one argv element, untouched
      fs::path log = dir.path / "log";
      CHECK(run(argv, path, log.string()) == r.status);
      CHECK(slurp(target / "result.txt") == (r.status == 0 ? "done" : r.status == 3 ? "partial" : ""));
      // The pod's log says what is copied, and why now.
      CHECK(slurp(log) == fmt::format("gpupool: the command exited (status {}): copying results back from {} to {}\n"
                                      "gpupool: results copied back to {}\n",
                                      r.status, results.string(), target.string(), target.string()));
    }
  }
}

TEST_CASE("run script: a failed copy-back fails a successful run, and never hides a failure") {
  TempDir dir;
  SsdStaging s{{}, (dir.path / "missing results").string(), (dir.path / "target").string()};
  fs::path log = dir.path / "log";
  CHECK(run(staged_command(s, {"true"}), "/usr/bin:/bin", log.string()) == 1);
  CHECK(slurp(log).find("gpupool: copying results back to " + (dir.path / "target").string() + " failed\n") !=
        std::string::npos);
  CHECK(run(staged_command(s, {"sh", "-c", "exit 7"}), "/usr/bin:/bin") == 7);
}

TEST_CASE("run script without results only runs the command and keeps its status") {
  SsdStaging s{{{"/src", "/cache"}}, "", ""};
  CHECK(run(staged_command(s, {"sh", "-c", "exit 5"}), "/usr/bin:/bin") == 5);
  CHECK(run_script(s).find("copying results back") == std::string::npos);
}

TEST_CASE("run script: the main command reads the container's stdin") {
  TempDir dir;
  fs::path results = dir.path / "ssd", target = dir.path / "pvc";
  fs::create_directories(results);
  write(dir.path / "stdin", "typed input");
  SsdStaging s{{}, results.string(), target.string()};
  pid_t pid = spawn(staged_command(s, {"sh", "-c", "cat > \"$0\"/in.txt", results.string()}), "/usr/bin:/bin",
                    (dir.path / "stdin").string());
  CHECK(finish(pid) == 0);
  CHECK(slurp(target / "in.txt") == "typed input");
  // Without a stdin at all, the command runs (and finds none).
  fs::path log = dir.path / "log";
  pid = spawn(staged_command(s, {"sh", "-c", "printf ran > \"$0\"/ran.txt", results.string()}), "/usr/bin:/bin", "-",
              log.string());
  CHECK(finish(pid) == 0);
  CHECK(slurp(target / "ran.txt") == "ran");
}

// The kubelet's stop: SIGTERM to the container's PID 1 (the script), SIGKILL after the grace period.
// Runs `main` as the staged command (sh -c main <results> <fifo>) until it writes to the FIFO to
// say it runs, then sends SIGTERM to the script, as the kubelet does to PID 1; the script's status.
int run_and_terminate(const SsdStaging& s, const fs::path& dir, const std::string& main, const std::string& log = "",
                      const std::string& shell = "/bin/sh") {
  ReadySignal ready(dir / "ready");
  pid_t pid =
      spawn(staged_command(s, {"sh", "-c", main, s.results, ready.path.string()}), "/usr/bin:/bin", "", log, shell);
  REQUIRE(ready.wait());
  REQUIRE(kill(pid, SIGTERM) == 0);
  return finish(pid);
}

// The shells images have as /bin/sh: dash (Debian, Ubuntu) and bash (RHEL, CentOS), when installed.
std::vector<std::string> shells() {
  std::vector<std::string> out;
  for (const char* sh : {"/bin/sh", "/bin/dash", "/bin/bash", "/bin/busybox"})
    if (fs::exists(sh)) out.emplace_back(sh);
  return out;
}

TEST_CASE("run script on SIGTERM: stops the command, copies results back, returns its status") {
  for (const auto& shell : shells()) {
    CAPTURE(shell);
    TempDir dir;
    fs::path results = dir.path / "ssd out", target = dir.path / "pvc" / "it's results";
    fs::create_directories(results);
    fs::path log = dir.path / "log";
    SsdStaging s{{}, results.string(), target.string()};
    // The main command writes a checkpoint, says it runs, and waits to be stopped.
    const std::string main = "printf epoch-3 > \"$0/ckpt\"; printf x > \"$1\"; exec sleep 1000";
    // The command's own status: killed by the forwarded SIGTERM.
    CHECK(run_and_terminate(s, dir.path, main, log.string(), shell) == 128 + SIGTERM);
    CHECK(slurp(target / "ckpt") == "epoch-3");
    std::string text = slurp(log);
    CHECK(text.find("gpupool: SIGTERM: stopping the command (SIGKILL after 150s), then copying results back\n") !=
          std::string::npos);
    CHECK(text.find(fmt::format("gpupool: the pod is being terminated (status 143): copying results back from {} to "
                                "{}\n",
                                results.string(), target.string())) != std::string::npos);
    CHECK(text.find("gpupool: results copied back to " + target.string() + "\n") != std::string::npos);
  }
}

TEST_CASE("run script on SIGTERM: a command that handles SIGTERM exits with its own status") {
  TempDir dir;
  fs::path results = dir.path / "ssd", target = dir.path / "pvc";
  fs::create_directories(results);
  SsdStaging s{{}, results.string(), target.string()};
  // It saves on SIGTERM and exits 0 (a graceful stop), which the script returns.
  CHECK(run_and_terminate(s, dir.path,
                          "trap 'printf saved > \"$0/ckpt\"; exit 0' TERM; printf x > \"$1\"; sleep 1000 & wait $!") ==
        0);
  CHECK(slurp(target / "ckpt") == "saved");
}

TEST_CASE("run script on SIGTERM: a command that ignores it is killed after half the grace period") {
  TempDir dir;
  fs::path results = dir.path / "ssd", target = dir.path / "pvc";
  fs::create_directories(results);
  SsdStaging s{{}, results.string(), target.string()};
  s.grace_period_seconds = kMinStageOutGraceSeconds;  // the script's own wait: 1 s before SIGKILL
  CHECK(run_and_terminate(s, dir.path, "trap '' TERM; printf kept > \"$0/ckpt\"; printf x > \"$1\"; exec sleep 1000") ==
        128 + SIGKILL);
  CHECK(slurp(target / "ckpt") == "kept");
}

TEST_CASE("run script on SIGTERM: a failed copy-back keeps the command's failure") {
  TempDir dir;
  fs::path log = dir.path / "log";
  SsdStaging s{{}, (dir.path / "never written").string(), (dir.path / "target").string()};
  CHECK(run_and_terminate(s, dir.path, "printf x > \"$1\"; exec sleep 1000", log.string()) == 128 + SIGTERM);
  CHECK(slurp(log).find("gpupool: copying results back to " + (dir.path / "target").string() + " failed\n") !=
        std::string::npos);
}

TEST_CASE("staging paths are validated") {
  struct Row {
    SsdStaging s;
    std::string field;
  };
  const Row rows[] = {
      {{{{"rel", "/c"}}, "", ""}, "staging.inputs[0].source"},
      {{{{"/s", "/c"}, {"/s", ""}}, "", ""}, "staging.inputs[1].cache"},
      {{{{"/s", "/c"}}, "out", "/t"}, "staging.results"},
      {{{{"/s", "/c"}}, "/out", "t"}, "staging.results_target"},
      {{{{"/s", "/c"}}, "/out", ""}, "staging.results_target"},
      {{{{"/s", "/c"}}, "", "/t"}, "staging.results"},
      {{{}, "", ""}, "staging"},
      {{{}, "/out", "/t", 1}, "staging.grace_period_seconds"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.field);
    try {
      validate(r.s);
      FAIL("accepted");
    } catch (const ValidationError& e) {
      CHECK(e.field() == r.field);
    }
  }
  CHECK_NOTHROW(validate(SsdStaging{{{"/pvc/d", "/mnt/data1/d"}}, "/mnt/data1/out", "/pvc/out"}));
  CHECK_NOTHROW(validate(SsdStaging{{}, "/mnt/data1/out", "/pvc/out"}));      // stage-out alone
  CHECK_NOTHROW(validate(SsdStaging{{{"/pvc/d", "/mnt/data1/d"}}, "", ""}));  // stage-in alone
}
