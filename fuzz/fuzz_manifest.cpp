// libFuzzer target: parse_manifests (multi-document YAML/JSON manifests), and to_yaml of the result
// read back again.
#include "fuzz_util.hpp"
#include "gpupool/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpupool_fuzz::run(data, size, [](std::string_view text) {
    const auto objects = gpupool::parse_manifests(text);
    (void)gpupool::parse_manifests(gpupool::to_yaml(objects));
  });
}
