// Joining and splitting strings: one home, on fmt::join (a dependency already), for every layer.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

namespace gpupool::text {

/// The elements of `range` separated by `sep` ("" for an empty range).
template <class Range>
std::string join(const Range& range, std::string_view sep) {
  return fmt::format("{}", fmt::join(range, sep));
}

/// Go's strings.Split(text, sep): every piece, empty ones included ("" gives one empty piece).
/// The pieces view `text`.
inline std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0;;) {
    const auto next = text.find(sep, at);
    out.push_back(text.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

}  // namespace gpupool::text
