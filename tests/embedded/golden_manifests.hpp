// The objects gpupool renders, as recorded in tests/render/golden/*.yaml (file name, object).
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gpupool/manifest.hpp"

namespace gpupool::test {

inline std::vector<std::pair<std::string, boost::json::object>> rendered_golden_objects() {
  const std::filesystem::path dir = std::filesystem::path(GPUPOOL_SOURCE_DIR) / "tests/render/golden";
  std::vector<std::pair<std::string, boost::json::object>> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    for (auto& obj : parse_manifests(text.str(), entry.path().string()))
      out.emplace_back(entry.path().filename().string(), std::move(obj));
  }
  return out;
}

}  // namespace gpupool::test
