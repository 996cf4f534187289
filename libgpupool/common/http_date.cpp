#include "common/http_date.hpp"

#include <array>
#include <cstdio>

namespace gpupool::detail {

namespace {
constexpr std::array<const char*, 7> kDays{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::array<const char*, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
}  // namespace

std::string format_http_date(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  auto secs = floor<seconds>(t);
  auto days = floor<std::chrono::days>(secs);
  year_month_day ymd{days};
  hh_mm_ss hms{secs - days};
  weekday wd{days};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s, %02u %s %04d %02ld:%02ld:%02ld GMT", kDays[wd.c_encoding()],
                static_cast<unsigned>(ymd.day()), kMonths[static_cast<unsigned>(ymd.month()) - 1],
                static_cast<int>(ymd.year()), static_cast<long>(hms.hours().count()),
                static_cast<long>(hms.minutes().count()), static_cast<long>(hms.seconds().count()));
  return buf;
}

std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view text) {
  using namespace std::chrono;
  if (text.size() != 29 || text.substr(25) != " GMT") return std::nullopt;
  std::string s(text);
  char month[4] = {};
  int day = 0, year = 0, h = 0, m = 0, sec = 0;
  if (std::sscanf(s.c_str() + 5, "%2d %3s %4d %2d:%2d:%2d", &day, month, &year, &h, &m, &sec) != 6) return std::nullopt;
  unsigned mon = 0;
  for (unsigned i = 0; i < kMonths.size(); ++i)
    if (std::string_view(kMonths[i]) == month) mon = i + 1;
  year_month_day ymd{std::chrono::year{year}, std::chrono::month{mon}, std::chrono::day{static_cast<unsigned>(day)}};
  if (!mon || !ymd.ok() || h > 23 || m > 59 || sec > 60) return std::nullopt;
  return sys_days{ymd} + hours{h} + minutes{m} + seconds{sec};
}

}  // namespace gpupool::detail
