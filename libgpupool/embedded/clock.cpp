#include "embedded/clock.hpp"

#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "gpupool/error.hpp"
#include "gpupool/node.hpp"

namespace gpupool::embedded {
namespace {

std::tm utc(Clock::time_point t) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t).time_since_epoch().count();
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return tm;
}

}  // namespace

std::string to_rfc3339(Clock::time_point t) {
  // One RFC 3339 rule for the library: the model's metav1.Time formatting (gpupool/node.hpp).
  return format_rfc3339(std::chrono::floor<std::chrono::seconds>(t));
}

std::string to_rfc3339_micro(Clock::time_point t) {
  const std::tm tm = utc(t);
  const auto since = t - std::chrono::floor<std::chrono::seconds>(t);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since).count();
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
}

bool parse_rfc3339(const std::string& text, Clock::time_point& out) {
  // The model's parser (gpupool/node.hpp) keeps whole seconds, as metav1.Time does.
  try {
    out = std::chrono::time_point_cast<Clock::duration>(gpupool::parse_rfc3339(text));
    return true;
  } catch (const ValidationError&) {
    return false;
  }
}

std::optional<Clock::duration> parse_duration(std::string_view text) {
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
  if (text == "0") return Clock::duration::zero();
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
  return Clock::duration(static_cast<std::int64_t>(total + 0.5L));
}

}  // namespace gpupool::embedded
