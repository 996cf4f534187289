#include "embedded/clock.hpp"

#include <cstdio>
#include <ctime>

#include <fmt/format.h>

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
  const std::tm tm = utc(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::string to_rfc3339_micro(Clock::time_point t) {
  const std::tm tm = utc(t);
  const auto since = t - std::chrono::floor<std::chrono::seconds>(t);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since).count();
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
}

bool parse_rfc3339(const std::string& text, Clock::time_point& out) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) != 6)
    return false;
  if (consumed != 19 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return false;
  std::size_t i = 19;
  std::int64_t frac_ns = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    std::int64_t scale = 100000000;
    const std::size_t begin = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      frac_ns += (text[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == begin) return false;
  }
  long offset_s = 0;
  if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
    ++i;
  } else if (i + 6 == text.size() && (text[i] == '+' || text[i] == '-') && text[i + 3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(text.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return false;
    offset_s = (oh * 3600L + om * 60L) * (text[i] == '+' ? 1 : -1);
    i += 6;
  } else {
    return false;
  }
  if (i != text.size()) return false;
  using namespace std::chrono;
  const sys_days day = year{y} / month{static_cast<unsigned>(mo)} / std::chrono::day{static_cast<unsigned>(d)};
  if (!(year{y} / month{static_cast<unsigned>(mo)} / std::chrono::day{static_cast<unsigned>(d)}).ok()) return false;
  out = Clock::time_point(duration_cast<Clock::duration>(day.time_since_epoch()) + hours(h) + minutes(mi) +
                          seconds(s) - seconds(offset_s) + nanoseconds(frac_ns));
  return true;
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
