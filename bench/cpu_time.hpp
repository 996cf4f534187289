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
