// The doctest main of every test binary, with a leak check: the binary is the subreaper of every
// process its tests start (a process whose parent has gone is re-parented here, not to init), and
// after the tests any process still alive (after a 10 s grace for those being stopped) is listed
// and fails the run. RunMode::Local's processes must all be gone when their cluster stops.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// Live children of this process (zombies reaped first).
std::vector<std::pair<int, std::string>> live_children() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
  std::vector<std::pair<int, std::string>> out;
  DIR* tasks = ::opendir("/proc/self/task");
  if (!tasks) return out;
  while (const dirent* t = ::readdir(tasks)) {
    if (t->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + t->d_name + "/children");
    for (int pid; in >> pid;) {
      std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline");
      std::string line;
      std::getline(cmd, line, '\0');
      std::string state;
      std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
      std::getline(st, state);
      const auto close = state.rfind(')');
      if (close != std::string::npos && close + 2 < state.size() && state[close + 2] == 'Z') continue;
      out.emplace_back(pid, line);
    }
  }
  ::closedir(tasks);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;
  auto left = live_children();
  // Processes being stopped (SIGTERM, then SIGKILL after a grace period) get time to go.
  for (int i = 0; i < 200 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = live_children();
  }
  if (left.empty()) return result;
  std::fprintf(stderr, "leak check: %zu process(es) started by the tests outlived them:\n", left.size());
  for (const auto& [pid, cmd] : left) {
    std::fprintf(stderr, "  pid %d: %s\n", pid, cmd.c_str());
    ::kill(pid, SIGKILL);
  }
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
  return result != 0 ? result : 1;
}
