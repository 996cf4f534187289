// The command table of `gpupool`: every command's flags and help, and its handler.
#pragma once

#include "args.hpp"

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace gpupool::cli {

/// Where a handler writes; tests pass string streams.
struct Io {
  std::ostream& out;
  std::ostream& err;
  bool out_is_terminal = false;
};

using Handler = std::function<int(const ParsedArgs&, Io&)>;

struct Command {
  CommandSpec spec;
  Handler run;  ///< empty for a group ("submit", "cluster") that only lists its subcommands
  /// Builds spec.flags when they are needed (a `submit KIND` has ~100 flags, and a command that
  /// runs another one should not pay for building them); null: spec.flags is complete.
  std::function<std::vector<FlagSpec>()> lazy_flags;
};

/// Flags every command accepts (--kubeconfig, --context, -n, --profile, --embedded, --help).
const std::vector<FlagSpec>& global_flags();
/// Every command, groups included, each with its flags.
const std::vector<Command>& commands();

/// Runs the command line (argv without the program name); returns the exit code:
/// 0 success, 1 failure, 2 bad usage. Errors are one line on io.err.
int run(const std::vector<std::string>& args, Io& io);

}  // namespace gpupool::cli
