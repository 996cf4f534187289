// Bad input for the manifest reader (issue 8 item 4) and its fuzz regressions (fuzz/fuzz_manifest).
#include "gpupool/error.hpp"
#include "gpupool/manifest.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {
std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("YAML alias bombs are refused with one ConfigError instead of hanging") {
  // 9 levels of 10 aliases: 10^9 nodes once expanded (found by fuzz_manifest as a timeout).
  const std::string bomb =
      read(std::filesystem::path(GPUPOOL_SOURCE_DIR) / "tests/fuzz_regressions/manifest/billion-laughs.yaml");
  REQUIRE(bomb.size() > 100);
  for (int which = 0; which < 2; ++which) {
    CAPTURE(which);
    try {
      if (which == 0)
        (void)gpupool::parse_manifests(bomb, "bomb.yaml");
      else
        (void)gpupool::parse_yaml(bomb, "bomb.yaml");
      FAIL_CHECK("accepted");
    } catch (const gpupool::ConfigError& e) {
      CHECK(e.file() == "bomb.yaml");
      CHECK(std::string(e.what()).find("excessive aliasing") != std::string::npos);
    }
  }
}

TEST_CASE("an alias inside its own anchor's value is a ConfigError, not a stack overflow") {
  // Found by fuzz_manifest (ASan stack-overflow): yaml-cpp builds a cycle that a recursive
  // conversion follows forever. go-yaml: "anchor 'x' value contains itself".
  for (const char* name : {"alias-contains-itself-minimal.yaml", "alias-contains-itself-1c82ea7d.yaml"}) {
    CAPTURE(name);
    const std::string text = read(std::filesystem::path(GPUPOOL_SOURCE_DIR) / "tests/fuzz_regressions/manifest" / name);
    REQUIRE(text.find('*') != std::string::npos);
    for (int which = 0; which < 2; ++which) {
      CAPTURE(which);
      try {
        if (which == 0)
          (void)gpupool::parse_manifests(text, name);
        else
          (void)gpupool::parse_yaml(text, name);
        FAIL_CHECK("accepted");
      } catch (const gpupool::ConfigError& e) {
        CHECK(e.file() == name);
        CHECK(std::string(e.what()).find("must not contain itself") != std::string::npos);
      }
    }
  }
  // Deep but finite nesting that yaml-cpp's parser accepts still converts.
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "[";
  for (int i = 0; i < 200; ++i) deep += "]";
  CHECK_NOTHROW((void)gpupool::parse_yaml(deep, "deep.json"));
}

TEST_CASE("ordinary anchors and aliases still expand") {
  const auto objects = gpupool::parse_manifests(
      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: &l {x: y}}\ndata: {}\nextra: [*l, *l]\n");
  REQUIRE(objects.size() == 1);
  CHECK(objects[0].at("extra").as_array().size() == 2);
  CHECK(objects[0].at("extra").as_array()[1].as_object().at("x").as_string() == "y");
}

TEST_CASE("a ',' outside a flow collection is a ConfigError, not an endless loop in yaml-cpp's LoadAll") {
  // Found by fuzz_manifest (timeout, 20+ GB): yaml-cpp 0.7 LoadAll appends null documents forever.
  for (const char* name : {"loadall-loop-minimal.yaml", "loadall-loop-df0766f5.yaml"}) {
    CAPTURE(name);
    const std::string text = read(std::filesystem::path(GPUPOOL_SOURCE_DIR) / "tests/fuzz_regressions/manifest" / name);
    REQUIRE(text.find(',') != std::string::npos);
    try {
      (void)gpupool::parse_manifests(text, name);
      FAIL_CHECK("accepted");
    } catch (const gpupool::ConfigError& e) {
      CHECK(e.file() == name);
      CHECK(std::string(e.what()).find("not valid YAML") != std::string::npos);
    }
    CHECK_THROWS_AS((void)gpupool::parse_yaml(text, name), gpupool::ConfigError);
  }
  // Several ordinary documents, empty ones included, still load.
  CHECK(gpupool::parse_manifests("---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\n---\n"
                                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
            .size() == 2);
}

TEST_CASE("every fuzz_manifest regression input ends in objects or one ConfigError") {
  std::size_t inputs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(GPUPOOL_SOURCE_DIR) /
                                                               "tests/fuzz_regressions/manifest")) {
    CAPTURE(entry.path().filename().string());
    ++inputs;
    try {
      (void)gpupool::parse_manifests(read(entry.path()), entry.path().filename().string());
    } catch (const gpupool::ConfigError&) {}
  }
  CHECK(inputs >= 3);
}
