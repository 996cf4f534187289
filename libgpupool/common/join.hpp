// Joining strings: one home, on fmt::join (a dependency already), for every layer.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace gpupool::text {

/// The elements of `range` separated by `sep` ("" for an empty range).
template <class Range>
std::string join(const Range& range, std::string_view sep) {
  return fmt::format("{}", fmt::join(range, sep));
}

}  // namespace gpupool::text
