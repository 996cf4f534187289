#include "common/strict_yaml.hpp"

#include "common/block_yaml.hpp"

namespace gpupool::detail {

int StrictYamlReader::line_of(const YAML::Node& node) {
  return node.IsDefined() && node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
}

YAML::Node StrictYamlReader::load(std::string_view text, const std::string& key) const {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(file_, key, fmt::format("not valid YAML: {}", e.msg), e.mark.line >= 0 ? e.mark.line + 1 : 0);
  }
}

YAML::Node StrictYamlReader::load_fast(std::string_view text, const std::string& key) const {
  if (auto node = load_block_yaml(text)) return std::move(*node);
  return load(text, key);
}

void StrictYamlReader::fail(const YAML::Node& node, const std::string& key, const std::string& message) const {
  throw ConfigError(file_, key, message, line_of(node));
}

void StrictYamlReader::mapping(const YAML::Node& node, const std::string& path, const Fields& fields) const {
  if (!node.IsMap()) fail(node, path, "must be a mapping (key: value lines)");
  for (const auto& kv : node) {
    const std::string key = string(kv.first, path);
    const std::string at = path.empty() ? key : path + "." + key;
    auto it = fields.find(key);
    if (it == fields.end()) {
      std::string known;
      for (const auto& [k, f] : fields) known += (known.empty() ? "" : ", ") + k;
      fail(kv.first, at, fmt::format("unknown key; known keys here: {}", known));
    }
    it->second(kv.second, at);
  }
}

std::string StrictYamlReader::string(const YAML::Node& node, const std::string& path) const {
  if (!node.IsScalar()) fail(node, path, "must be a string");
  return node.Scalar();
}

bool StrictYamlReader::boolean(const YAML::Node& node, const std::string& path) const {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) fail(node, path, "must be true or false");
  return value;
}

std::vector<std::string> StrictYamlReader::strings(const YAML::Node& node, const std::string& path) const {
  if (!node.IsSequence()) fail(node, path, "must be a list of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i) out.push_back(string(node[i], fmt::format("{}[{}]", path, i)));
  return out;
}

}  // namespace gpupool::detail
