// Runs the command in-process, as main() does, and captures what it prints and its exit code.
#pragma once

#include "commands.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace gpupool::cli::testing {

struct Result {
  int code;
  std::string out, err;
};

inline Result run_cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  Io io{out, err, false};
  int code = run(args, io);
  return {code, out.str(), err.str()};
}

/// Runs a shell command line: its exit code and its stdout with stderr merged in.
inline Result run_shell(const std::string& cmd) {
  Result r{0, "", ""};
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "", "popen failed"};
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Exactly one line, newline-terminated.
inline bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == s.size() - 1; }

}  // namespace gpupool::cli::testing
