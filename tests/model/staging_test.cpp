// SSD staging: the generated scripts are run with /bin/sh on temporary directories.
#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/staging.hpp"

#include <fcntl.h>
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

// Runs argv (argv[0] looked up in PATH=`path`) and returns its exit status.
int run(const std::vector<std::string>& argv, const std::string& path) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (int null_fd = open("/dev/null", O_WRONLY); null_fd >= 0) dup2(null_fd, 2);  // keep test output clean
    std::string env_path = "PATH=" + path;
    char* envp[] = {env_path.data(), nullptr};
    execve("/bin/sh", args.data(), envp);  // argv[0] is always "sh" here
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string read(const fs::path& p) {
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
  const std::string texts[] = {"plain", "with space", "it's", "'", "''", "$HOME", "`id`", "a\nb", "\"q\"", "-n", "*", ""};
  for (const auto& t : texts) {
    CAPTURE(t);
    TempDir dir;
    fs::path out = dir.path / "out";
    std::string script = "printf '%s' " + shell_quote(t) + " > " + shell_quote(out.string());
    REQUIRE(run({"sh", "-c", script}, "/usr/bin:/bin") == 0);
    CHECK(read(out) == t);
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
    SsdStaging s{source.string(), cache.string(), "", ""};
    REQUIRE(run({"sh", "-c", stage_in_script(s)}, path) == 0);
    CHECK(read(cache / "a.txt") == "alpha");
    CHECK(read(cache / "sub dir" / "b'.txt") == "beta");
    CHECK_FALSE(fs::exists(cache / "it's data"));  // the contents, not the directory itself
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
      SsdStaging s{"/unused", "/unused", results.string(), target.string()};
      // The user's string reaches the script only as "$@": OUT is set in that shell, not in ours.
      std::string user = "OUT=" + shell_quote(results.string()) + "; " + r.shell;
      std::vector<std::string> argv = staged_command(s, {"sh", "-c", user});
      REQUIRE(argv.size() == 7);
      CHECK(argv[0] == "sh");
      CHECK(argv[1] == "-c");
      CHECK(argv[6] == user);  // one argv element, untouched
      CHECK(run(argv, path) == r.status);
      CHECK(read(target / "result.txt") == (r.status == 0 ? "done" : r.status == 3 ? "partial" : ""));
    }
  }
}

TEST_CASE("run script: a failed copy-back fails a successful run, and never hides a failure") {
  TempDir dir;
  SsdStaging s{"/unused", "/unused", (dir.path / "missing results").string(), (dir.path / "target").string()};
  CHECK(run(staged_command(s, {"true"}), "/usr/bin:/bin") == 1);
  CHECK(run(staged_command(s, {"sh", "-c", "exit 7"}), "/usr/bin:/bin") == 7);
}

TEST_CASE("run script without results only runs the command and keeps its status") {
  SsdStaging s{"/src", "/cache", "", ""};
  CHECK(run(staged_command(s, {"sh", "-c", "exit 5"}), "/usr/bin:/bin") == 5);
  CHECK(run_script(s).find("copying results back") == std::string::npos);
}

TEST_CASE("staging paths are validated") {
  struct Row {
    SsdStaging s;
    std::string field;
  };
  const Row rows[] = {
      {{"rel", "/c", "", ""}, "staging.source"},
      {{"/s", "", "", ""}, "staging.cache"},
      {{"/s", "/c", "out", "/t"}, "staging.results"},
      {{"/s", "/c", "/out", "t"}, "staging.results_target"},
      {{"/s", "/c", "/out", ""}, "staging.results_target"},
      {{"/s", "/c", "", "/t"}, "staging.results"},
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
  CHECK_NOTHROW(validate(SsdStaging{"/pvc/d", "/mnt/data1/d", "/mnt/data1/out", "/pvc/out"}));
}
