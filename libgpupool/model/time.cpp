// Time as people type it and as Kubernetes prints it: Go durations, kubectl's HumanDuration
// (k8s.io/apimachinery/pkg/util/duration) and metav1.Time's RFC 3339.
#include "gpupool/time.hpp"

#include "gpupool/error.hpp"

#include <cstdint>
#include <cstdio>
#include <string>

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

std::string human_duration(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  // "Allow deviation no more than 2 seconds(excluded) to tolerate machine time inconsistence".
  const long long seconds = duration_cast<std::chrono::seconds>(d).count();  // truncates like int(d.Seconds())
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return std::to_string(seconds) + "s";
  const long long minutes = seconds / 60;
  if (minutes < 10) {
    const long long s = seconds % 60;
    return s == 0 ? std::to_string(minutes) + "m" : std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  const long long hours = minutes / 60;
  if (hours < 8) {
    const long long m = minutes % 60;
    return m == 0 ? std::to_string(hours) + "h" : std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    const long long h = hours % 24;
    return h == 0 ? std::to_string(hours / 24) + "d" : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const long long dy = (hours / 24) % 365;
    return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                   : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

std::string format_rfc3339(std::chrono::sys_seconds t) {
  using namespace std::chrono;
  const sys_days day = floor<days>(t);
  const year_month_day ymd(day);
  const hh_mm_ss<seconds> hms(t - day);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02ld:%02ld:%02ldZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<long>(hms.hours().count()), static_cast<long>(hms.minutes().count()),
                static_cast<long>(hms.seconds().count()));
  return buf;
}

std::chrono::sys_seconds parse_rfc3339(std::string_view text, std::string_view field) {
  auto bad = [&]() -> ValidationError {
    return ValidationError(std::string(field), std::string(text),
                           "must be an RFC 3339 timestamp such as \"2024-01-01T00:00:00Z\"");
  };
  auto num = [&](std::size_t pos, std::size_t len) {
    if (pos + len > text.size()) throw bad();
    int v = 0;
    for (std::size_t i = pos; i < pos + len; ++i) {
      if (text[i] < '0' || text[i] > '9') throw bad();
      v = v * 10 + (text[i] - '0');
    }
    return v;
  };
  auto expect = [&](std::size_t pos, char c) {
    if (pos >= text.size() || (text[pos] != c && !(c == 'T' && text[pos] == 't'))) throw bad();
  };
  const int y = num(0, 4);
  expect(4, '-');
  const int mo = num(5, 2);
  expect(7, '-');
  const int d = num(8, 2);
  expect(10, 'T');
  const int h = num(11, 2);
  expect(13, ':');
  const int mi = num(14, 2);
  expect(16, ':');
  const int s = num(17, 2);
  std::size_t i = 19;
  if (i < text.size() && text[i] == '.') {
    const std::size_t begin = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == begin) throw bad();
  }
  long offset = 0;
  if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
    ++i;
  } else if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    const int oh = num(i + 1, 2);
    expect(i + 3, ':');
    const int om = num(i + 4, 2);
    offset = (oh * 3600L + om * 60L) * (text[i] == '+' ? 1 : -1);
    i += 6;
  } else {
    throw bad();
  }
  using namespace std::chrono;
  const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
  if (i != text.size() || !ymd.ok() || h > 23 || mi > 59 || s > 60) throw bad();
  return time_point_cast<seconds>(sys_days(ymd)) + hours(h) + minutes(mi) + seconds(s) - seconds(offset);
}

}  // namespace gpupool
