// bench/cpu_time.hpp — CPU time of this process, user + system (what getrusage(RUSAGE_SELF) sums).
// On a shared machine the rate per CPU second is the figure that does not depend on how much of a
// core the process got; every bench prints wall-clock rates next to it.
#pragma once

#include <time.h>

namespace bench {

inline double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

}  // namespace bench

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace bench {

// The timed part of a section, for a profiler: with BENCH_PERF_CTL naming the control FIFO of
// `perf record --control=fifo:CTL -D -1` (started disabled), perf samples only while one of these
// is alive, so a profile shows the timed work and not the fill or the teardown.
class ProfileWindow {
 public:
  ProfileWindow() { send("enable\n"); }
  ~ProfileWindow() { send("disable\n"); }
  ProfileWindow(const ProfileWindow&) = delete;
  ProfileWindow& operator=(const ProfileWindow&) = delete;

 private:
  static void send(const char* command) {
    const char* path = std::getenv("BENCH_PERF_CTL");
    if (!path || !*path) return;
    const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    [[maybe_unused]] const auto n = ::write(fd, command, std::strlen(command));
    ::close(fd);
  }
};

}  // namespace bench
