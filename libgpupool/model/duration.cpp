#include "gpupool/duration.hpp"

#include <cstdint>

namespace gpupool {

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  // Units of Go's time.ParseDuration (src/time/format.go unitMap), plus "d".
  struct Unit {
    std::string_view name;
    std::int64_t nanos;
  };
  static constexpr Unit units[] = {{"ns", 1},
                                   {"us", 1000},
                                   {"\u00b5s", 1000},
                                   {"\u03bcs", 1000},
                                   {"ms", 1000000},
                                   {"s", 1000000000LL},
                                   {"m", 60LL * 1000000000LL},
                                   {"h", 3600LL * 1000000000LL},
                                   {"d", 86400LL * 1000000000LL}};
  if (text.empty()) return std::nullopt;
  if (text == "0") return std::chrono::nanoseconds::zero();
  long double total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t begin = i;
    long double number = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') number = number * 10 + (text[i++] - '0');
    bool digits = i > begin;
    if (i < text.size() && text[i] == '.') {
      ++i;
      long double scale = 0.1L;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        number += (text[i++] - '0') * scale;
        scale /= 10;
        digits = true;
      }
    }
    if (!digits) return std::nullopt;
    const std::size_t unit_begin = i;
    while (i < text.size() && !(text[i] >= '0' && text[i] <= '9') && text[i] != '.') ++i;
    const auto unit = text.substr(unit_begin, i - unit_begin);
    const Unit* found = nullptr;
    for (const auto& u : units)
      if (u.name == unit) found = &u;
    if (!found) return std::nullopt;
    total += number * static_cast<long double>(found->nanos);
    if (total > 9.2e18L) return std::nullopt;
  }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(total + 0.5L));
}

}  // namespace gpupool
