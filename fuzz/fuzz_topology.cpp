// libFuzzer target: Topology::parse (embedded cluster topology YAML).
#include "fuzz_util.hpp"
#include "gpupool/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpupool_fuzz::run(data, size, [](std::string_view text) { (void)gpupool::Topology::parse(text); });
}
