// libFuzzer target: Profile::parse (site profile YAML).
#include "fuzz_util.hpp"
#include "gpupool/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpupool_fuzz::run(data, size, [](std::string_view text) { (void)gpupool::Profile::parse(text); });
}
