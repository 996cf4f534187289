// libFuzzer target: Quantity::parse, plus the round trip parse(to_string(q)) == q.
#include <cstdlib>

#include "fuzz_util.hpp"
#include "gpupool/quantity.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpupool_fuzz::run(data, size, [](std::string_view text) {
    const auto q = gpupool::Quantity::parse(text);
    const auto printed = q.to_string();
    // The canonical form must parse back to the same value, as Go's Quantity does below 1000E:
    // from 10^21 on, Go prints a DecimalSI value without its exponent (no suffix above E; the
    // oracle stores "1000000000000000000000000" as "1"), and gpupool prints what Go prints.
    static const auto top = gpupool::Quantity::parse("1000E"), bottom = gpupool::Quantity::parse("-1000E");
    if (q >= top || q <= bottom) return;
    if (!(gpupool::Quantity::parse(printed) == q)) std::abort();
  });
}
