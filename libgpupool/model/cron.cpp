// Cron schedules and time zones as Kubernetes v1.32 runs batch/v1 CronJobs (gpupool/cron.hpp).
//
// Sources of the rules (read, not copied):
//  - robfig/cron v3.0.1, vendored by Kubernetes (vendor/github.com/robfig/cron/v3): parser.go
//    (Parse, normalizeFields, getField, getRange, parseIntOrName, mustParseInt, getBits,
//    parseDescriptor), spec.go (bounds, starBit, SpecSchedule.Next, dayMatches), constantdelay.go
//    (Every, ConstantDelaySchedule.Next).
//  - Go's time package (Kubernetes v1.32.13 is built with Go 1.24): zoneinfo_read.go
//    (LoadLocationFromTZData), zoneinfo.go (LoadLocation, Location.lookup, lookupFirstZone, tzset,
//    tzsetName, tzsetOffset, tzsetRule, tzsetNum, tzruleTime), time.go (Date, norm, AddDate, Add,
//    Truncate), format.go (ParseDuration, leadingInt, leadingFraction, quote); strconv (Atoi,
//    ParseInt, ParseUint, NumError, Quote); strings (Fields, TrimSpace, ToLower); unicode.IsSpace.
//  - pkg/controller/cronjob: the controller parses "TZ=<spec.timeZone> <spec.schedule>"
//    (formatSchedule) and calls Next with times in its local zone, so a schedule without a zone of
//    its own is evaluated in the zone of the time given (spec.go: "schedules without a time zone
//    specified (time.Local) are treated as local to the time provided").
#include "gpupool/cron.hpp"

#include "common/go_text.hpp"
#include "gpupool/error.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace gpupool {

namespace {

using i64 = std::int64_t;
using u64 = std::uint64_t;

constexpr i64 kSecondsPerDay = 86400;
constexpr i64 kSecondsPerHour = 3600;
constexpr i64 kAlpha = std::numeric_limits<i64>::min();  // Go's alpha: the beginning of time
constexpr i64 kOmega = std::numeric_limits<i64>::max();  // Go's omega: the end of time

// ---------------------------------------------------------------------------------------------
// The proleptic Gregorian calendar, on 64-bit Unix seconds.

i64 floor_div(i64 a, i64 b) {
  i64 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

bool is_leap(i64 year) { return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0); }

// Go's daysBefore: days in the year before month m (1-based), February as 28 days.
constexpr int kDaysBefore[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365};

int days_in_month(int month, i64 year) {
  if (month == 2 && is_leap(year)) return 29;
  return kDaysBefore[month] - kDaysBefore[month - 1];
}

// Days from 1970-01-01 to year-month-day (month 1..12; day linear, so day 0 or 32 overflow into
// the neighbouring months as Go's Date adds day-1 to the start of the month).
i64 days_from_civil(i64 year, int month, i64 day) {
  year -= month <= 2 ? 1 : 0;
  const i64 era = floor_div(year, 400);
  const i64 yoe = year - era * 400;
  const i64 mp = (month + 9) % 12;
  const i64 doy = (153 * mp + 2) / 5 + day - 1;
  const i64 doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

struct Fields {
  i64 year = 0;
  int month = 0, day = 0, hour = 0, minute = 0, second = 0, weekday = 0, yearday = 0;
};

// The calendar fields of `local`, seconds since 1970-01-01 00:00 of the wall clock.
Fields civil(i64 local) {
  const i64 days = floor_div(local, kSecondsPerDay);
  const i64 secs = local - days * kSecondsPerDay;
  const i64 z = days + 719468;
  const i64 era = floor_div(z, 146097);
  const i64 doe = z - era * 146097;
  const i64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const i64 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const i64 mp = (5 * doy + 2) / 153;
  Fields f;
  f.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  f.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  f.year = yoe + era * 400 + (f.month <= 2 ? 1 : 0);
  f.hour = static_cast<int>(secs / 3600);
  f.minute = static_cast<int>(secs % 3600 / 60);
  f.second = static_cast<int>(secs % 60);
  f.weekday = static_cast<int>(days + 4 - floor_div(days + 4, 7) * 7);  // 1970-01-01: a Thursday
  f.yearday = static_cast<int>(days - days_from_civil(f.year, 1, 1) + 1);
  return f;
}

// ---------------------------------------------------------------------------------------------
// Go's tzset: the POSIX TZ string of a TZif footer, e.g. "EST5EDT,M3.2.0,M11.1.0",
// "CET-1CEST,M3.5.0,M10.5.0/3", "IST-5:30", "<+0630>-6:30". Parsed once here (Go parses it at each
// lookup; the result depends on the string only, so parsing it once changes nothing).

enum class RuleKind { julian, day_of_year, month_week_day };

struct TzRule {
  RuleKind kind = RuleKind::julian;
  int day = 0, week = 0, month = 0;
  int time = 0;  // seconds after local midnight
};

struct TzExtend {
  std::string std_name, dst_name;
  int std_offset = 0, dst_offset = 0;  // seconds east of UTC (the TZ string's sign negated)
  bool has_dst = false;
  TzRule start, end;
};

// tzsetNum: a number in [min, max] at the start of s.
bool tz_num(std::string_view& s, int min, int max, int& out) {
  if (s.empty()) return false;
  int num = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') {
      if (i == 0 || num < min) return false;
      out = num;
      s.remove_prefix(i);
      return true;
    }
    num = num * 10 + (c - '0');
    if (num > max) return false;
  }
  if (num < min) return false;
  out = num;
  s = {};
  return true;
}

// tzsetName: "<...>" or at least three characters up to a digit, ',', '-' or '+'.
bool tz_name(std::string_view& s, std::string& out) {
  if (s.empty()) return false;
  if (s[0] != '<') {
    for (std::size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if ((c >= '0' && c <= '9') || c == ',' || c == '-' || c == '+') {
        if (i < 3) return false;
        out = std::string(s.substr(0, i));
        s.remove_prefix(i);
        return true;
      }
    }
    if (s.size() < 3) return false;
    out = std::string(s);
    s = {};
    return true;
  }
  const std::size_t close = s.find('>');
  if (close == std::string_view::npos) return false;
  out = std::string(s.substr(1, close - 1));
  s.remove_prefix(close + 1);
  return true;
}

// tzsetOffset: [+-]hh[:mm[:ss]], hours up to 24*7 as tzcode allows.
bool tz_offset(std::string_view& s, int& out) {
  if (s.empty()) return false;
  bool neg = false;
  if (s[0] == '+') {
    s.remove_prefix(1);
  } else if (s[0] == '-') {
    s.remove_prefix(1);
    neg = true;
  }
  int hours = 0;
  if (!tz_num(s, 0, 24 * 7, hours)) return false;
  int off = hours * 3600;
  for (int part = 0; part < 2; ++part) {
    if (s.empty() || s[0] != ':') break;
    s.remove_prefix(1);
    int n = 0;
    if (!tz_num(s, 0, 59, n)) return false;
    off += part == 0 ? n * 60 : n;
  }
  out = neg ? -off : off;
  return true;
}

// tzsetRule: Jn, n or Mm.w.d, then an optional /time (default 02:00).
bool tz_rule(std::string_view& s, TzRule& r) {
  if (s.empty()) return false;
  if (s[0] == 'J') {
    s.remove_prefix(1);
    if (!tz_num(s, 1, 365, r.day)) return false;
    r.kind = RuleKind::julian;
  } else if (s[0] == 'M') {
    s.remove_prefix(1);
    if (!tz_num(s, 1, 12, r.month) || s.empty() || s[0] != '.') return false;
    s.remove_prefix(1);
    if (!tz_num(s, 1, 5, r.week) || s.empty() || s[0] != '.') return false;
    s.remove_prefix(1);
    if (!tz_num(s, 0, 6, r.day)) return false;
    r.kind = RuleKind::month_week_day;
  } else {
    if (!tz_num(s, 0, 365, r.day)) return false;
    r.kind = RuleKind::day_of_year;
  }
  if (s.empty() || s[0] != '/') {
    r.time = 2 * 3600;
    return true;
  }
  s.remove_prefix(1);
  return tz_offset(s, r.time);
}

// The parsing half of tzset; nullopt where tzset reports !ok (lookup then keeps the last
// transition's zone).
std::optional<TzExtend> parse_extend(std::string_view s) {
  TzExtend e;
  if (!tz_name(s, e.std_name) || !tz_offset(s, e.std_offset)) return std::nullopt;
  e.std_offset = -e.std_offset;            // TZ strings count west of UTC
  if (s.empty() || s[0] == ',') return e;  // no daylight saving time
  if (!tz_name(s, e.dst_name)) return std::nullopt;
  if (s.empty() || s[0] == ',') {
    e.dst_offset = e.std_offset + 3600;
  } else {
    if (!tz_offset(s, e.dst_offset)) return std::nullopt;
    e.dst_offset = -e.dst_offset;
  }
  if (s.empty()) s = ",M3.2.0,M11.1.0";  // tzcode's default rules
  if (s[0] != ',' && s[0] != ';') return std::nullopt;
  s.remove_prefix(1);
  if (!tz_rule(s, e.start) || s.empty() || s[0] != ',') return std::nullopt;
  s.remove_prefix(1);
  if (!tz_rule(s, e.end) || !s.empty()) return std::nullopt;
  e.has_dst = true;
  return e;
}

// tzruleTime: seconds from the start of `year` (UTC) to the moment rule r takes effect, r's time
// being local time at offset `off`.
i64 tz_rule_time(i64 year, const TzRule& r, int off) {
  i64 s = 0;
  switch (r.kind) {
    case RuleKind::julian:
      s = static_cast<i64>(r.day - 1) * kSecondsPerDay;
      if (is_leap(year) && r.day >= 60) s += kSecondsPerDay;
      break;
    case RuleKind::day_of_year:
      s = static_cast<i64>(r.day) * kSecondsPerDay;
      break;
    case RuleKind::month_week_day: {
      // Zeller's congruence: the weekday of the first of r.month, as Go computes it.
      const i64 m1 = (r.month + 9) % 12 + 1;
      i64 yy0 = year;
      if (r.month <= 2) --yy0;
      const i64 yy1 = yy0 / 100;
      const i64 yy2 = yy0 % 100;
      i64 dow = ((26 * m1 - 2) / 10 + 1 + yy2 + yy2 / 4 + yy1 / 4 - 2 * yy1) % 7;
      if (dow < 0) dow += 7;
      i64 d = r.day - dow;
      if (d < 0) d += 7;
      for (int i = 1; i < r.week; ++i) {
        if (d + 7 >= days_in_month(r.month, year)) break;
        d += 7;
      }
      d += kDaysBefore[r.month - 1];
      if (is_leap(year) && r.month > 2) ++d;
      s = d * kSecondsPerDay;
      break;
    }
  }
  return s + r.time - off;
}

// ---------------------------------------------------------------------------------------------
// Go's Location: zones, transitions, lookup.

struct Zone {
  std::string name;
  int offset = 0;
  bool dst = false;
};

struct Transition {
  i64 when = 0;
  std::uint8_t index = 0;
};

struct Lookup {
  const std::string* name = nullptr;
  int offset = 0;
  i64 start = 0, end = 0;  // the span of instants with this zone (as far as Go reports it)
  bool dst = false;
};

// The evaluating half of tzset for `sec` after the last transition `last_tx`. As in Go, the span
// it reports is exact near a transition and otherwise the start or end of the (UTC) year.
Lookup eval_extend(const TzExtend& e, i64 last_tx, i64 sec) {
  if (!e.has_dst) return Lookup{.name = &e.std_name, .offset = e.std_offset, .start = last_tx, .end = kOmega};
  const Fields f = civil(sec);
  const i64 year_start = days_from_civil(f.year, 1, 1) * kSecondsPerDay;
  const i64 ysec = static_cast<i64>(f.yearday - 1) * kSecondsPerDay + sec % kSecondsPerDay;
  i64 start = tz_rule_time(f.year, e.start, e.std_offset);
  i64 end = tz_rule_time(f.year, e.end, e.dst_offset);
  const std::string* std_name = &e.std_name;
  const std::string* dst_name = &e.dst_name;
  int std_offset = e.std_offset, dst_offset = e.dst_offset;
  bool std_is_dst = false, dst_is_dst = true;
  if (end < start) {  // southern hemisphere: the labels flip, as in Go
    std::swap(start, end);
    std::swap(std_name, dst_name);
    std::swap(std_offset, dst_offset);
    std::swap(std_is_dst, dst_is_dst);
  }
  if (ysec < start) {
    return Lookup{
        .name = std_name, .offset = std_offset, .start = year_start, .end = start + year_start, .dst = std_is_dst};
  }
  if (ysec >= end) {
    return Lookup{.name = std_name,
                  .offset = std_offset,
                  .start = end + year_start,
                  .end = year_start + 365 * kSecondsPerDay,
                  .dst = std_is_dst};
  }
  return Lookup{
      .name = dst_name, .offset = dst_offset, .start = start + year_start, .end = end + year_start, .dst = dst_is_dst};
}

// How many steps SpecSchedule.Next may take. Go has no such limit; the longest legitimate search
// (an empty minute list such as "," tried minute by minute for five years) takes about 2.7 million,
// so this only stops a loop that a pathological zone file could make endless.
constexpr u64 kMaxNextSteps = 50'000'000;
struct StepLimit {};

}  // namespace

struct TimeZone::Data {
  std::string name;
  std::vector<Zone> zones;  // empty: UTC
  std::vector<Transition> tx;
  std::optional<TzExtend> extend;  // the footer, when Go's tzset accepts it
  std::size_t first_zone = 0;      // lookupFirstZone()
};

namespace {

// Location.lookup (without its cache, which only saves time: it holds what lookup computes).
Lookup lookup(const TimeZone::Data& l, i64 sec) {
  static const std::string utc_name = "UTC";
  if (l.zones.empty()) return Lookup{.name = &utc_name, .offset = 0, .start = kAlpha, .end = kOmega};
  if (l.tx.empty() || sec < l.tx[0].when) {
    const Zone& z = l.zones[l.first_zone];
    return Lookup{.name = &z.name,
                  .offset = z.offset,
                  .start = kAlpha,
                  .end = l.tx.empty() ? kOmega : l.tx[0].when,
                  .dst = z.dst};
  }
  // The last transition at or before sec.
  i64 end = kOmega;
  std::size_t lo = 0, hi = l.tx.size();
  while (hi - lo > 1) {
    const std::size_t m = lo + (hi - lo) / 2;
    if (sec < l.tx[m].when) {
      end = l.tx[m].when;
      hi = m;
    } else {
      lo = m;
    }
  }
  const Zone& z = l.zones[l.tx[lo].index];
  if (lo == l.tx.size() - 1 && l.extend) return eval_extend(*l.extend, l.tx[lo].when, sec);
  return Lookup{.name = &z.name, .offset = z.offset, .start = l.tx[lo].when, .end = end, .dst = z.dst};
}

Fields wall_fields(const TimeZone::Data& l, i64 sec) { return civil(sec + lookup(l, sec).offset); }

// Go's norm: hi, lo with lo moved into [0, base).
void norm(i64& hi, i64& lo, i64 base) {
  if (lo < 0) {
    const i64 n = (-lo - 1) / base + 1;
    hi -= n;
    lo += n * base;
  }
  if (lo >= base) {
    const i64 n = lo / base;
    hi += n;
    lo -= n * base;
  }
}

// time.Date(year, month, day, hour, min, sec, 0, loc).Unix().
i64 go_date(const TimeZone::Data& l, i64 year, i64 month, i64 day, i64 hour, i64 min, i64 sec) {
  i64 m = month - 1;
  norm(year, m, 12);
  norm(min, sec, 60);
  norm(hour, min, 60);
  norm(day, hour, 24);
  i64 unix =
      days_from_civil(year, static_cast<int>(m + 1), day) * kSecondsPerDay + hour * kSecondsPerHour + min * 60 + sec;
  // Go: look up the offset for the wall-clock reading taken as UTC "in the hope that it will not be
  // too close to a zone transition"; if unix - offset falls outside the span of that zone, use the
  // offset in effect at unix - offset instead. Once; a zone of offset 0 is taken as it is.
  const Lookup first = lookup(l, unix);
  int offset = first.offset;
  if (offset != 0) {
    const i64 utc = unix - offset;
    if (utc < first.start || utc >= first.end) offset = lookup(l, utc).offset;
    unix -= offset;
  }
  return unix;
}

// ---------------------------------------------------------------------------------------------
// Go's text: UTF-8 runes, unicode.IsSpace (strconv.Quote, time's quote and time.ParseDuration
// are common/go_text.hpp's).

struct Rune {
  char32_t r;
  std::size_t width;
  bool valid;
};

// utf8.DecodeRuneInString: an invalid or short sequence is one byte of RuneError.
Rune decode_rune(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char b0 = b(0);
  if (b0 < 0x80) return {b0, 1, true};
  const Rune bad{0xFFFD, 1, false};
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 < 0xC2) return bad;
  if (b0 < 0xE0) {
    n = 2;
  } else if (b0 < 0xF0) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 < 0xF5) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return bad;
  }
  if (i + n > s.size()) return bad;
  if (b(1) < lo || b(1) > hi) return bad;
  for (std::size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xBF) return bad;
  }
  char32_t r = b0 & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (std::size_t k = 1; k < n; ++k) r = (r << 6) | (b(k) & 0x3F);
  return {r, n, true};
}

// unicode.IsSpace.
bool is_space(char32_t r) {
  switch (r) {
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case ' ':
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return r >= 0x2000 && r <= 0x200A;
  }
}

// strings.Fields: the runs of non-space runes.
std::vector<std::string_view> go_fields(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0, start = std::string_view::npos;
  while (i < s.size()) {
    const Rune r = decode_rune(s, i);
    const bool space = r.valid && is_space(r.r);
    if (space && start != std::string_view::npos) {
      out.push_back(s.substr(start, i - start));
      start = std::string_view::npos;
    } else if (!space && start == std::string_view::npos) {
      start = i;
    }
    i += r.width;
  }
  if (start != std::string_view::npos) out.push_back(s.substr(start));
  return out;
}

// strings.TrimSpace.
std::string_view go_trim_space(std::string_view s) {
  std::size_t i = 0, begin = s.size(), end = 0;
  while (i < s.size()) {
    const Rune r = decode_rune(s, i);
    if (!(r.valid && is_space(r.r))) {
      if (begin == s.size()) begin = i;
      end = i + r.width;
    }
    i += r.width;
  }
  return begin >= end ? std::string_view{} : s.substr(begin, end - begin);
}

// strconv.Atoi's error text: the function is always reported as Atoi and the number as given.
std::string atoi_error(std::string_view s, bool range) {
  return "strconv.Atoi: parsing " + gotext::quote(s) + (range ? ": value out of range" : ": invalid syntax");
}

// strconv.Atoi on a 64-bit platform: an optional sign and decimal digits. Returns the error text
// (NumError.Error()) or empty.
std::string go_atoi(std::string_view s, i64& out) {
  if (!s.empty() && s.size() < 19) {  // the fast path for values that fit
    std::string_view d = s;
    if (d[0] == '-' || d[0] == '+') {
      d.remove_prefix(1);
      if (d.empty()) return atoi_error(s, false);
    }
    i64 n = 0;
    for (const char c : d) {
      if (c < '0' || c > '9') return atoi_error(s, false);
      n = n * 10 + (c - '0');
    }
    out = s[0] == '-' ? -n : n;
    return {};
  }
  // ParseInt(s, 10, 0): ParseUint on the digits, stopping at the first bad byte or overflow.
  if (s.empty()) return atoi_error(s, false);
  std::string_view d = s;
  bool neg = false;
  if (d[0] == '+' || d[0] == '-') {
    neg = d[0] == '-';
    d.remove_prefix(1);
  }
  if (d.empty()) return atoi_error(s, false);
  constexpr u64 kCutoff = std::numeric_limits<u64>::max() / 10 + 1;
  u64 n = 0;
  for (const char c : d) {
    if (c < '0' || c > '9') return atoi_error(s, false);
    if (n >= kCutoff) return atoi_error(s, true);
    n *= 10;
    const u64 n1 = n + static_cast<u64>(c - '0');
    if (n1 < n) return atoi_error(s, true);
    n = n1;
  }
  constexpr u64 kInt64Cutoff = u64{1} << 63;
  if (!neg && n >= kInt64Cutoff) return atoi_error(s, true);
  if (neg && n > kInt64Cutoff) return atoi_error(s, true);
  out = neg ? static_cast<i64>(0 - n) : static_cast<i64>(n);
  return {};
}

// ---------------------------------------------------------------------------------------------
// robfig/cron's fields.

// robfig's error text, before parse() wraps it in a ValidationError.
struct RuleError {
  std::string rule;
};

constexpr u64 kStarBit = u64{1} << 63;

struct Name {
  std::string_view name;
  unsigned value;
};
constexpr Name kMonthNames[] = {{"jan", 1}, {"feb", 2}, {"mar", 3}, {"apr", 4},  {"may", 5},  {"jun", 6},
                                {"jul", 7}, {"aug", 8}, {"sep", 9}, {"oct", 10}, {"nov", 11}, {"dec", 12}};
constexpr Name kDowNames[] = {{"sun", 0}, {"mon", 1}, {"tue", 2}, {"wed", 3}, {"thu", 4}, {"fri", 5}, {"sat", 6}};

struct Bounds {
  u64 min, max;
  const Name* names = nullptr;
  std::size_t name_count = 0;
};
constexpr Bounds kMinutes{0, 59};
constexpr Bounds kHours{0, 23};
constexpr Bounds kDom{1, 31};
constexpr Bounds kMonths{1, 12, kMonthNames, std::size(kMonthNames)};
constexpr Bounds kDow{0, 6, kDowNames, std::size(kDowNames)};

// strings.ToLower as far as it can matter for the names: ASCII, and the two non-ASCII letters whose
// lower case is ASCII (U+0130 'İ' -> 'i', U+212A KELVIN SIGN -> 'k'). Other bytes are kept, and
// cannot make a name match.
std::string lower_for_names(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s.compare(i, 2, "\xc4\xb0") == 0) {
      out += 'i';
      i += 2;
    } else if (s.compare(i, 3, "\xe2\x84\xaa") == 0) {
      out += 'k';
      i += 3;
    } else {
      const char c = s[i++];
      out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
  }
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {  // strings.Split
  std::vector<std::string_view> out;
  for (;;) {
    const std::size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// mustParseInt; throws the rule text.
u64 must_parse_int(std::string_view expr) {
  i64 num = 0;
  const std::string err = go_atoi(expr, num);
  if (!err.empty()) throw RuleError{"failed to parse int from " + std::string(expr) + ": " + err};
  if (num < 0) throw RuleError{"negative number (" + std::to_string(num) + ") not allowed: " + std::string(expr)};
  return static_cast<u64>(num);
}

u64 parse_int_or_name(std::string_view expr, const Bounds& r) {
  if (r.names != nullptr) {
    const std::string lower = lower_for_names(expr);
    for (std::size_t i = 0; i < r.name_count; ++i) {
      if (r.names[i].name == lower) return r.names[i].value;
    }
  }
  return must_parse_int(expr);
}

u64 get_bits(u64 min, u64 max, u64 step) {
  u64 bits = 0;
  for (u64 i = min; i <= max; i += step) bits |= u64{1} << i;
  return bits;
}

u64 all_bits(const Bounds& r) { return get_bits(r.min, r.max, 1) | kStarBit; }

// getRange: number | number "-" number [ "/" number ], or "*" / "?" [ "/" number ].
u64 get_range(std::string_view expr, const Bounds& r) {
  const std::vector<std::string_view> range_and_step = split(expr, '/');
  const std::vector<std::string_view> low_and_high = split(range_and_step[0], '-');
  const bool single = low_and_high.size() == 1;
  u64 start = 0, end = 0, step = 1, extra = 0;
  if (low_and_high[0] == "*" || low_and_high[0] == "?") {  // (robfig ignores what follows a '-' here)
    start = r.min;
    end = r.max;
    extra = kStarBit;
  } else {
    start = parse_int_or_name(low_and_high[0], r);
    switch (low_and_high.size()) {
      case 1:
        end = start;
        break;
      case 2:
        end = parse_int_or_name(low_and_high[1], r);
        break;
      default:
        throw RuleError{"too many hyphens: " + std::string(expr)};
    }
  }
  switch (range_and_step.size()) {
    case 1:
      step = 1;
      break;
    case 2:
      step = must_parse_int(range_and_step[1]);
      if (single) end = r.max;  // "N/step" is "N-max/step"
      if (step > 1) extra = 0;
      break;
    default:
      throw RuleError{"too many slashes: " + std::string(expr)};
  }
  const std::string e(expr);
  if (start < r.min) {
    throw RuleError{"beginning of range (" + std::to_string(start) + ") below minimum (" + std::to_string(r.min) +
                    "): " + e};
  }
  if (end > r.max) {
    throw RuleError{"end of range (" + std::to_string(end) + ") above maximum (" + std::to_string(r.max) + "): " + e};
  }
  if (start > end) {
    throw RuleError{"beginning of range (" + std::to_string(start) + ") beyond end of range (" + std::to_string(end) +
                    "): " + e};
  }
  if (step == 0) throw RuleError{"step of range should be a positive number: " + e};
  return get_bits(start, end, step) | extra;
}

// getField: a comma-separated list of ranges (empty items skipped, as strings.FieldsFunc does; a
// field of commas only matches nothing).
u64 get_field(std::string_view field, const Bounds& r) {
  u64 bits = 0;
  for (const std::string_view expr : split(field, ',')) {
    if (!expr.empty()) bits |= get_range(expr, r);
  }
  return bits;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TimeZone

namespace {
std::shared_ptr<const TimeZone::Data> utc_named(std::string name) {
  auto data = std::make_shared<TimeZone::Data>();
  data->name = std::move(name);
  return data;
}
}  // namespace

TimeZone TimeZone::utc() {
  static const auto data = utc_named("UTC");
  return TimeZone(data);
}

std::optional<TimeZone> TimeZone::builtin(std::string_view name) {
  // LoadLocation: "" and "UTC" are time.UTC, "Local" is time.Local; then errLocation for a name
  // with ".." in it or starting with a slash or backslash.
  if (name.empty() || name == "UTC") return utc();
  if (name == "Local") {
    static const auto data = utc_named("Local");
    return TimeZone(data);
  }
  if (name.find("..") != std::string_view::npos || name[0] == '/' || name[0] == '\\') {
    throw ValidationError("time zone", std::string(name), "time: invalid location name");
  }
  return std::nullopt;
}

TimeZone TimeZone::from_tzif(std::string name, std::string_view bytes) {
  const auto bad = [&] { return ValidationError("time zone", name, "malformed time zone information"); };
  // Go's dataIO: reads past the end set a sticky error and return nothing.
  struct Reader {
    std::string_view p;
    bool error = false;
    std::string_view read(u64 n) {
      if (p.size() < n) {
        p = {};
        error = true;
        return {};
      }
      const std::string_view r = p.substr(0, n);
      p.remove_prefix(n);
      return r;
    }
    bool big4(std::uint32_t& v) {
      const std::string_view b = read(4);
      if (b.size() < 4) return error = true, false;
      v = 0;
      for (const char c : b) v = (v << 8) | static_cast<unsigned char>(c);
      return true;
    }
    bool big8(u64& v) {
      const std::string_view b = read(8);
      if (b.size() < 8) return error = true, false;
      v = 0;
      for (const char c : b) v = (v << 8) | static_cast<unsigned char>(c);
      return true;
    }
  };
  Reader d{bytes};
  if (d.read(4) != "TZif") throw bad();
  const std::string_view header = d.read(16);
  if (header.size() != 16) throw bad();
  int version = 0;
  switch (header[0]) {
    case 0:
      version = 1;
      break;
    case '2':
      version = 2;
      break;
    case '3':
      version = 3;
      break;
    default:
      throw bad();
  }
  enum { kUtcLocal, kStdWall, kLeap, kTime, kZone, kChar };
  u64 n[6];
  const auto read_counts = [&] {
    for (u64& c : n) {
      std::uint32_t v = 0;
      if (!d.big4(v)) throw bad();
      c = v;
    }
  };
  read_counts();
  bool is64 = false;
  if (version > 1) {
    // Skip the 32-bit data and the second header (magic and version); read the 64-bit counts.
    d.read(n[kTime] * 4 + n[kTime] + n[kZone] * 6 + n[kChar] + n[kLeap] * 8 + n[kStdWall] + n[kUtcLocal] + 4 + 16);
    is64 = true;
    read_counts();
  }
  const u64 size = is64 ? 8 : 4;
  Reader txtimes{d.read(n[kTime] * size)};
  const std::string_view txzones = d.read(n[kTime]);
  Reader zonedata{d.read(n[kZone] * 6)};
  const std::string_view abbrev = d.read(n[kChar]);
  d.read(n[kLeap] * (size + 4));  // leap seconds: ignored, as by Go
  d.read(n[kStdWall]);            // standard/wall and UT/local indicators: not needed by lookup
  d.read(n[kUtcLocal]);
  if (d.error) throw bad();
  auto data = std::make_shared<Data>();
  const std::string_view rest = d.p;
  if (rest.size() > 2 && rest.front() == '\n' && rest.back() == '\n') {
    data->extend = parse_extend(rest.substr(1, rest.size() - 2));
  }
  if (n[kZone] == 0) throw bad();  // no zone types: Go refuses the file (golang.org/issue/29437)
  for (u64 i = 0; i < n[kZone]; ++i) {
    std::uint32_t off = 0;
    if (!zonedata.big4(off)) throw bad();
    const std::string_view flags = zonedata.read(2);
    if (flags.size() < 2) throw bad();
    const auto name_index = static_cast<unsigned char>(flags[1]);
    if (name_index >= abbrev.size()) throw bad();
    const std::string_view label = abbrev.substr(name_index);
    data->zones.push_back(Zone{.name = std::string(label.substr(0, label.find('\0'))),
                               .offset = static_cast<int>(static_cast<std::int32_t>(off)),
                               .dst = flags[0] != 0});
  }
  for (u64 i = 0; i < n[kTime]; ++i) {
    i64 when = 0;
    if (is64) {
      u64 v = 0;
      if (!txtimes.big8(v)) throw bad();
      when = static_cast<i64>(v);
    } else {
      std::uint32_t v = 0;
      if (!txtimes.big4(v)) throw bad();
      when = static_cast<std::int32_t>(v);
    }
    const auto index = static_cast<unsigned char>(txzones[i]);
    if (index >= data->zones.size()) throw bad();
    data->tx.push_back(Transition{.when = when, .index = index});
  }
  // No transitions (a fixed zone such as Etc/UTC): one fake transition covering all time.
  if (data->tx.empty()) data->tx.push_back(Transition{.when = kAlpha, .index = 0});
  // lookupFirstZone: the zone before the first transition. The first zone if no transition uses it;
  // else, if the first transition is to daylight time, the closest standard-time zone before that
  // one; else the first standard-time zone; else the first zone.
  const auto& zones = data->zones;
  bool first_used = false;
  for (const Transition& t : data->tx) first_used = first_used || t.index == 0;
  data->first_zone = 0;
  if (first_used) {
    bool found = false;
    if (zones[data->tx[0].index].dst) {
      for (int zi = static_cast<int>(data->tx[0].index) - 1; zi >= 0 && !found; --zi) {
        if (!zones[static_cast<std::size_t>(zi)].dst) {
          data->first_zone = static_cast<std::size_t>(zi);
          found = true;
        }
      }
    }
    for (std::size_t zi = 0; zi < zones.size() && !found; ++zi) {
      if (!zones[zi].dst) {
        data->first_zone = zi;
        found = true;
      }
    }
  }
  data->name = std::move(name);
  return TimeZone(std::move(data));
}

const std::string& TimeZone::name() const { return data_->name; }

TimeZone::Local TimeZone::to_local(std::chrono::sys_seconds t) const {
  const i64 sec = t.time_since_epoch().count();
  const Lookup l = lookup(*data_, sec);
  const Fields f = civil(sec + l.offset);
  return Local{.year = f.year,
               .month = f.month,
               .day = f.day,
               .hour = f.hour,
               .minute = f.minute,
               .second = f.second,
               .weekday = f.weekday,
               .yearday = f.yearday,
               .offset = std::chrono::seconds(l.offset),
               .abbreviation = *l.name,
               .dst = l.dst};
}

std::chrono::sys_seconds TimeZone::from_local(std::int64_t year, int month, int day, int hour, int minute,
                                              int second) const {
  return std::chrono::sys_seconds(std::chrono::seconds(go_date(*data_, year, month, day, hour, minute, second)));
}

// ---------------------------------------------------------------------------------------------
// CronSchedule

CronSchedule CronSchedule::parse(std::string_view spec_text,
                                 const std::function<TimeZone(std::string_view)>& load_zone) {
  const auto fail = [&](std::string rule) {
    return ValidationError("schedule", std::string(spec_text), std::move(rule));
  };
  if (spec_text.empty()) throw fail("empty spec string");
  std::string_view spec = spec_text;
  CronSchedule s;
  if (spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=")) {
    const std::size_t space = spec.find(' ');
    const std::size_t eq = spec.find('=');
    // robfig slices spec[eq+1:i] with i = -1 when there is no space: a Go panic.
    if (space == std::string_view::npos) throw fail("runtime error: slice bounds out of range [:-1]");
    const std::string_view name = spec.substr(eq + 1, space - eq - 1);
    try {
      if (name != "Local") {  // time.Local: the schedule keeps no zone of its own
        if (auto zone = TimeZone::builtin(name)) {
          s.location_ = std::move(zone);
        } else if (load_zone) {
          s.location_ = load_zone(name);
        } else {
          throw ValidationError("time zone", std::string(name), "unknown time zone " + std::string(name));
        }
      }
    } catch (const ValidationError& e) {
      throw fail("provided bad location " + std::string(name) + ": " + e.rule());
    }
    spec = go_trim_space(spec.substr(space));
  }

  try {
    if (spec.starts_with("@")) {
      const auto set = [&](u64 minute, u64 hour, u64 dom, u64 month, u64 dow) {
        s.minute_ = minute;
        s.hour_ = hour;
        s.dom_ = dom;
        s.month_ = month;
        s.dow_ = dow;
      };
      constexpr u64 first_minute = u64{1} << 0, first_hour = u64{1} << 0, first_dom = u64{1} << 1;
      constexpr u64 first_month = u64{1} << 1, first_dow = u64{1} << 0;
      if (spec == "@yearly" || spec == "@annually") {
        set(first_minute, first_hour, first_dom, first_month, all_bits(kDow));
      } else if (spec == "@monthly") {
        set(first_minute, first_hour, first_dom, all_bits(kMonths), all_bits(kDow));
      } else if (spec == "@weekly") {
        set(first_minute, first_hour, all_bits(kDom), all_bits(kMonths), first_dow);
      } else if (spec == "@daily" || spec == "@midnight") {
        set(first_minute, first_hour, all_bits(kDom), all_bits(kMonths), all_bits(kDow));
      } else if (spec == "@hourly") {
        set(first_minute, all_bits(kHours), all_bits(kDom), all_bits(kMonths), all_bits(kDow));
      } else if (spec.starts_with("@every ")) {
        std::string err;
        const std::optional<i64> parsed = gotext::parse_duration(spec.substr(7), &err);
        if (!parsed) throw RuleError{"failed to parse duration " + std::string(spec) + ": " + err};
        i64 nanos = *parsed;
        // Every: at least a second, and whole seconds (the TZ= zone plays no part).
        constexpr i64 kSecond = 1000000000;
        if (nanos < kSecond) nanos = kSecond;
        s.every_ = std::chrono::seconds(nanos / kSecond);
        s.location_.reset();
      } else {
        throw RuleError{"unrecognized descriptor: " + std::string(spec)};
      }
      return s;
    }

    const std::vector<std::string_view> fields = go_fields(spec);
    if (fields.size() != 5) {
      std::string list;
      for (const std::string_view f : fields) list += (list.empty() ? "" : " ") + std::string(f);
      throw RuleError{"expected exactly 5 fields, found " + std::to_string(fields.size()) + ": [" + list + "]"};
    }
    s.minute_ = get_field(fields[0], kMinutes);
    s.hour_ = get_field(fields[1], kHours);
    s.dom_ = get_field(fields[2], kDom);
    s.month_ = get_field(fields[3], kMonths);
    s.dow_ = get_field(fields[4], kDow);
  } catch (RuleError& e) {
    throw fail(std::move(e.rule));
  }
  return s;
}

std::optional<std::chrono::sys_seconds> CronSchedule::next(std::chrono::sys_seconds t, const TimeZone& zone) const {
  // ConstantDelaySchedule.Next: t + Delay - t's nanoseconds (none here).
  if (every_) return t + *every_;

  // SpecSchedule.Next, on the wall clock of the schedule's own zone, or else of the zone of the
  // time given. `u` is the instant (Go's t); the fields are read in `loc` each time, as Go's
  // t.Month(), t.Day()... do.
  const TimeZone::Data& loc = location_ ? *location_->data_ : *zone.data_;
  const auto has = [](u64 bits, int value) { return (bits >> value & 1) != 0; };
  i64 u = t.time_since_epoch().count() + 1;  // the upcoming second
  Fields f = wall_fields(loc, u);
  bool added = false;  // whether a field has been moved (the smaller ones then restart at zero)
  const i64 year_limit = f.year + 5;
  u64 steps = 0;
  const auto moved = [&](i64 to) {
    u = to;
    f = wall_fields(loc, u);
    if (++steps > kMaxNextSteps) throw StepLimit{};
  };

  try {
    for (;;) {                                       // robfig's WRAP label; each `continue` below is its `goto WRAP`
      if (f.year > year_limit) return std::nullopt;  // Go's zero time

      bool wrapped = false;
      while (!wrapped && !has(month_, f.month)) {
        if (!added) {
          added = true;
          moved(go_date(loc, f.year, f.month, 1, 0, 0, 0));
        }
        moved(go_date(loc, f.year, f.month + 1, f.day, f.hour, f.minute, f.second));  // AddDate(0, 1, 0)
        wrapped = f.month == 1;
      }
      if (wrapped) continue;

      // dayMatches: with "*" or "?" in day-of-month or day-of-week (starBit) both must match,
      // otherwise either.
      const auto day_matches = [&] {
        const bool dom_match = has(dom_, f.day), dow_match = has(dow_, f.weekday);
        if ((dom_ & kStarBit) != 0 || (dow_ & kStarBit) != 0) return dom_match && dow_match;
        return dom_match || dow_match;
      };
      while (!wrapped && !day_matches()) {
        if (!added) {
          added = true;
          moved(go_date(loc, f.year, f.month, f.day, 0, 0, 0));
        }
        moved(go_date(loc, f.year, f.month, f.day + 1, f.hour, f.minute, f.second));  // AddDate(0, 0, 1)
        // A midnight that daylight saving time skips: back to hour 0 if the clock reads 1..12,
        // on to the next day's hour 0 if it reads 13..23.
        if (f.hour != 0) moved(u + (f.hour > 12 ? 24 - f.hour : -f.hour) * kSecondsPerHour);
        wrapped = f.day == 1;
      }
      if (wrapped) continue;

      while (!wrapped && !has(hour_, f.hour)) {
        if (!added) {
          added = true;
          moved(go_date(loc, f.year, f.month, f.day, f.hour, 0, 0));
        }
        moved(u + kSecondsPerHour);
        wrapped = f.hour == 0;
      }
      if (wrapped) continue;

      while (!wrapped && !has(minute_, f.minute)) {
        if (!added) {
          added = true;
          moved(floor_div(u, 60) * 60);  // Truncate(time.Minute): on the instant, not the wall clock
        }
        moved(u + 60);
        wrapped = f.minute == 0;
      }
      if (wrapped) continue;

      // The standard parser's seconds field is always "0". (Truncate(time.Second) is a no-op on whole
      // seconds.)
      while (!wrapped && f.second != 0) {
        if (!added) added = true;
        moved(u + 1);
        wrapped = f.second == 0;
      }
      if (wrapped) continue;

      return std::chrono::sys_seconds(std::chrono::seconds(u));
    }
  } catch (const StepLimit&) {
    return std::nullopt;
  }
}

}  // namespace gpupool
