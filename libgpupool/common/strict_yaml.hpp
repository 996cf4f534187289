// common/strict_yaml.hpp — reading gpupool's own YAML files (site profiles, topologies) strictly:
// every error is a ConfigError naming the file, the key's path ("gpu.scheduler", "nodes[2].age")
// and the 1-based line, and a key nobody reads is an error listing the keys that are read there.
// (Kubernetes objects are read by render's parse_manifests/parse_yaml instead.)
#pragma once

#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/block_yaml.hpp"
#include "gpupool/error.hpp"

namespace gpupool::detail {

class StrictYamlReader {
 public:
  using Fields = std::map<std::string, std::function<void(const YAML::Node&, const std::string&)>>;

  explicit StrictYamlReader(std::string file) : file_(std::move(file)) {}
  const std::string& file() const noexcept { return file_; }

  /// The 1-based line of a node, 0 when it has none (absent nodes).
  static int line_of(const YAML::Node& node);
  /// Parses the text (one document); malformed YAML is a ConfigError with `key` and the line.
  YAML::Node load(std::string_view text, const std::string& key = "") const;
  /// load() through the block-style reader (common/block_yaml.hpp) when it takes the text: its
  /// nodes have no lines, so a caller that meets a ConfigError reads the text again with load()
  /// to word it (read_with_lines).
  YAML::Node load_fast(std::string_view text, const std::string& key = "") const;
  /// `read(node)` of the text, its errors worded with their lines (detail::read_with_lines).
  template <class Read>
  auto read_with_lines(std::string_view text, Read&& read) const {
    return detail::read_with_lines([&](bool fast) { return read(fast ? load_fast(text) : load(text)); });
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key, const std::string& message) const;

  /// Runs the reader of each key of a mapping; a key without one is an error listing the known keys.
  void mapping(const YAML::Node& node, const std::string& path, const Fields& fields) const;

  std::string string(const YAML::Node& node, const std::string& path) const;
  bool boolean(const YAML::Node& node, const std::string& path) const;
  std::vector<std::string> strings(const YAML::Node& node, const std::string& path) const;

  template <class F>
  void sequence(const YAML::Node& node, const std::string& path, F&& each) const {
    if (!node.IsSequence()) fail(node, path, "must be a list");
    for (std::size_t i = 0; i < node.size(); ++i) each(node[i], fmt::format("{}[{}]", path, i));
  }
  /// Runs a model validator and turns its ValidationError into a ConfigError at this node.
  template <class F>
  void check(const YAML::Node& node, const std::string& path, F&& validator) const {
    try {
      validator();
    } catch (const ValidationError& e) {
      fail(node, path, fmt::format("invalid value \"{}\": {}", e.value(), e.rule()));
    }
  }

 private:
  std::string file_;
};

}  // namespace gpupool::detail
