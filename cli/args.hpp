// The command's argument parser: subcommands, long/short flags, repeatable flags, positionals,
// generated --help. Usage mistakes throw UsageError (exit code 2).
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpupool::cli {

/// Bad usage: unknown flag, missing value, wrong positional count. The command exits with 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FlagSpec {
  std::string name;        ///< long name without dashes, e.g. "toleration"
  char short_name = 0;     ///< e.g. 'n'; 0 for none
  std::string value_name;  ///< empty: a boolean switch; else shown as --name VALUE
  std::string help;
  bool repeatable = false;
  /// A switch (empty value_name) that also takes one of these as --name=VALUE, e.g. --dry-run=client;
  /// the plain switch reads as "true".
  std::vector<std::string> switch_values{};
  /// Parsed but left out of --help (e.g. a submit flag that does not apply to the kind: the library
  /// refuses it with the reason).
  bool hidden = false;
};

struct CommandSpec {
  std::string path;         ///< "submit mpi", "get", "cluster serve"
  std::string summary;      ///< one line
  std::string usage;        ///< positional part of the usage line, e.g. "NAME"
  std::string description;  ///< optional longer text and examples
  std::vector<FlagSpec> flags;
  int min_positionals = 0;
  int max_positionals = 0;  ///< -1: unbounded
};

/// The result of parsing one command line.
class ParsedArgs {
 public:
  bool has(const std::string& flag) const;
  /// Last value of a flag, or the default.
  std::string get(const std::string& flag, const std::string& fallback = "") const;
  std::optional<std::string> optional(const std::string& flag) const;
  /// Every value of a repeatable flag, in order.
  const std::vector<std::string>& all(const std::string& flag) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  friend class Parser;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
};

/// Parses argv for one command spec (global flags are merged into every command).
class Parser {
 public:
  Parser(std::string program, std::vector<FlagSpec> global_flags);
  /// Parses args (without the command path). "--" ends flags; "--flag=value" and "--flag value" both
  /// work; short flags take "-n value" or "-nvalue". Throws UsageError.
  ParsedArgs parse(const CommandSpec& spec, const std::vector<std::string>& args) const;
  /// The text --help prints for a command.
  std::string help(const CommandSpec& spec) const;

 private:
  std::string program_;
  std::vector<FlagSpec> global_;
};

}  // namespace gpupool::cli
