// gpupool — launch GPU training workloads on Kubernetes from a terminal.
#include "commands.hpp"

#include <unistd.h>

#include <iostream>

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  gpupool::cli::Io io{std::cout, std::cerr, isatty(STDOUT_FILENO) != 0};
  return gpupool::cli::run(args, io);
}
