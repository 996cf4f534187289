// gpupool — launch GPU training workloads on Kubernetes from a terminal.
#include "commands.hpp"

#include "common/openssl_errors.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>

namespace {

double ms(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// This process is the command's own: OpenSSL starts beside the command (its first use is ~1 ms),
// before the static initialisers of the other files run, and loads its error texts only if one is
// worded.
__attribute__((constructor(101))) void start_openssl_first() { gpupool::start_openssl_in_background(); }

}  // namespace

int main(int argc, char** argv) {
  // The process's CPU time so far is what exec, the dynamic loader and static initialisers cost.
  const double cpu_at_main = ms(CLOCK_PROCESS_CPUTIME_ID), wall_at_main = ms(CLOCK_MONOTONIC);
  std::vector<std::string> args(argv + 1, argv + argc);
  gpupool::cli::Io io{std::cout, std::cerr, isatty(STDOUT_FILENO) != 0};
  const int code = gpupool::cli::run(args, io);
  // GPUPOOL_TIMING=1: where a command's time went (bench/bench_cmd.py reads it).
  if (const char* t = std::getenv("GPUPOOL_TIMING"); t && *t && *t != '0') {
    std::cout.flush();
    std::fprintf(stderr, "timing: cpu-before-main %.3f ms, cpu-total %.3f ms, wall-in-main %.3f ms\n", cpu_at_main,
                 ms(CLOCK_PROCESS_CPUTIME_ID), ms(CLOCK_MONOTONIC) - wall_at_main);
  }
  // Leave without the exit handlers: OpenSSL's cleanup and the static destructors
  // free what the process is about to give back whole (a few percent of a short command's CPU).
  // Everything the command writes is flushed first; the embedded cluster's state was saved by
  // Connection::close().
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(code);
}
