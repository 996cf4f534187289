// libFuzzer target: Quantity::parse, plus the round trip parse(to_string(q)) == q.
#include <cstdlib>

#include "fuzz_util.hpp"
#include "gpupool/quantity.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpupool_fuzz::run(data, size, [](std::string_view text) {
    const auto q = gpupool::Quantity::parse(text);
    const auto printed = q.to_string();
    // The canonical form must parse back to the same value (Go's Quantity round-trips).
    if (!(gpupool::Quantity::parse(printed) == q)) std::abort();
  });
}
