// libFuzzer target: the taint and toleration flag syntaxes (parse_taint_change, parse_toleration).
#include "fuzz_util.hpp"
#include "gpupool/taint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gpupool_fuzz::run(data, size, [](std::string_view text) { (void)gpupool::parse_taint_change(text); });
  gpupool_fuzz::run(data, size, [](std::string_view text) { (void)gpupool::parse_toleration(text); });
  return 0;
}
