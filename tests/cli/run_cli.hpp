// Runs the command in-process, as main() does, and captures what it prints and its exit code.
#pragma once

#include "commands.hpp"

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

/// Exactly one line, newline-terminated.
inline bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == s.size() - 1; }

}  // namespace gpupool::cli::testing
