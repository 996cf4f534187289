// tests/shell_run.hpp — runs a shell command line (e.g. a real kubectl) for a test: its exit code,
// its stdout, and its stderr apart (kept in a file under `scratch`).
#pragma once

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace gpupool::testing {

struct ShellRun {
  int code = -1;
  std::string out, err;
};

inline ShellRun shell_run(const std::string& cmd, const std::string& scratch) {
  ShellRun r;
  const std::string err_path = scratch + "/stderr.txt";
  FILE* p = ::popen((cmd + " 2>" + err_path).c_str(), "r");
  REQUIRE(p);
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_path);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  return r;
}

}  // namespace gpupool::testing
