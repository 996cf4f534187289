// gpupool::CronSchedule and gpupool::TimeZone: robfig/cron v3's ParseStandard and Next and Go's
// time zones, as Kubernetes v1.32 runs CronJobs. The expected values are derived by hand from the
// Go code (robfig/cron v3 spec.go / parser.go, Go's time package), as the comments at each table
// explain; zone files come from /usr/share/zoneinfo, as kube-apiserver on Linux reads them.
#include <doctest/doctest.h>

#include "common/time_zone_file.hpp"
#include "gpupool/cron.hpp"
#include "gpupool/error.hpp"
#include "gpupool/time.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

using namespace gpupool;

namespace {

std::chrono::sys_seconds at(const char* rfc3339) { return parse_rfc3339(rfc3339); }

std::string show(std::optional<std::chrono::sys_seconds> t) { return t ? format_rfc3339(*t) : "zero time"; }

TimeZone zone(std::string_view name) { return load_time_zone(name); }

CronSchedule parse(std::string_view spec) {
  return CronSchedule::parse(spec, [](std::string_view name) { return load_time_zone(name); });
}

// The successive activations after `from`, as the controller gets them (Next of the previous one).
std::vector<std::string> activations(const CronSchedule& s, const TimeZone& z, std::chrono::sys_seconds from,
                                     std::size_t count) {
  std::vector<std::string> out;
  std::optional<std::chrono::sys_seconds> t = from;
  while (out.size() < count) {
    t = s.next(*t, z);
    out.push_back(show(t));
    if (!t) break;
  }
  return out;
}

// A TZif file (RFC 8536) built field by field.
struct Type {
  std::int32_t offset;
  bool dst;
  std::uint8_t abbreviation_index;
};
struct Tzif {
  char version = '2';  // 0 for version 1
  std::vector<std::int64_t> times = {};
  std::vector<std::uint8_t> indexes = {};
  std::vector<Type> types = {};
  std::string chars = {};
  std::string footer = {};         // without its newlines; only for versions 2 and 3
  std::vector<Type> types32 = {};  // the 32-bit section's types when they differ (to see which is read)
};

void put(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

std::string build(const Tzif& z) {
  std::string out;
  const auto section = [&](int size, const std::vector<Type>& types) {
    out += "TZif";
    out += z.version;
    out += std::string(15, '\0');
    for (const std::size_t count :
         {std::size_t{0}, std::size_t{0}, std::size_t{0}, z.times.size(), types.size(), z.chars.size()}) {
      put(out, count, 4);
    }
    for (const std::int64_t t : z.times) put(out, static_cast<std::uint64_t>(t), size);
    for (const std::uint8_t i : z.indexes) out += static_cast<char>(i);
    for (const Type& t : types) {
      put(out, static_cast<std::uint32_t>(t.offset), 4);
      out += static_cast<char>(t.dst ? 1 : 0);
      out += static_cast<char>(t.abbreviation_index);
    }
    out += z.chars;
  };
  section(4, z.types32.empty() ? z.types : z.types32);
  if (z.version != 0) {
    section(8, z.types);
    out += "\n" + z.footer + "\n";
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("cron: fields, lists, ranges, steps, names and descriptors (UTC)") {
  // From Wednesday 2024-05-15 10:20:30 UTC. SpecSchedule.Next starts at the next whole second and
  // moves the first field that does not match, resetting the smaller ones.
  struct Row {
    const char* spec;
    const char* next;
  };
  const Row rows[] = {
      {"@yearly", "2025-01-01T00:00:00Z"},
      {"@annually", "2025-01-01T00:00:00Z"},
      {"@monthly", "2024-06-01T00:00:00Z"},
      {"@weekly", "2024-05-19T00:00:00Z"},  // Sunday
      {"@daily", "2024-05-16T00:00:00Z"},
      {"@midnight", "2024-05-16T00:00:00Z"},
      {"@hourly", "2024-05-15T11:00:00Z"},
      {"* * * * *", "2024-05-15T10:21:00Z"},
      {"* * * * ?", "2024-05-15T10:21:00Z"},
      {"*/15 * * * *", "2024-05-15T10:30:00Z"},
      {"5/20 * * * *", "2024-05-15T10:25:00Z"},     // "N/step" is N-59/step: 5, 25, 45
      {"1-30/10 * * * *", "2024-05-15T10:21:00Z"},  // 1, 11, 21
      {"0 9-17/4 * * *", "2024-05-15T13:00:00Z"},   // 9, 13, 17
      {"15 10 * * *", "2024-05-16T10:15:00Z"},
      {"30 1 1 1 *", "2025-01-01T01:30:00Z"},
      {"0 0 * JAN-MAR,jun SUN", "2024-06-02T00:00:00Z"},  // names in any case
      {"0 0 * * sat,Sun", "2024-05-18T00:00:00Z"},
      {"0 12 * * mon-FRI", "2024-05-15T12:00:00Z"},
      {"0 0 1,,15 * *", "2024-06-01T00:00:00Z"},  // empty list items are skipped
      {"*-5 * * * *", "2024-05-15T10:21:00Z"},    // robfig ignores what follows "*-"
      {"0 0 31 * *", "2024-05-31T00:00:00Z"},
      {" 0\t12  * *\u00a0* ", "2024-05-15T12:00:00Z"},  // strings.Fields: any Unicode space
      {"0\u20030 * * *", "2024-05-16T00:00:00Z"},       // EM SPACE separates too
      {"0 0 +1 * *", "2024-06-01T00:00:00Z"},           // strconv.Atoi takes a sign
      // dayMatches: "*" or "?" in day-of-month or day-of-week: both must match; otherwise either.
      {"0 0 ? * 5", "2024-05-17T00:00:00Z"},     // Fridays
      {"0 0 1 * MON", "2024-05-20T00:00:00Z"},   // the 1st or a Monday
      {"0 0 1 * */1", "2024-06-01T00:00:00Z"},   // "*/1" keeps the star: the 1st (any weekday)
      {"0 0 1 * */2", "2024-05-16T00:00:00Z"},   // a step > 1 drops it: the 1st or Sun/Tue/Thu/Sat
      {"0 0 1-31 * 1", "2024-05-16T00:00:00Z"},  // no star: any day of the month, or Monday
      {"0 0 13 * 5", "2024-05-17T00:00:00Z"},    // the 13th or a Friday, not Friday the 13th
      // @every d: t + d, d in whole seconds and at least 1 s.
      {"@every 1h30m", "2024-05-15T11:50:30Z"},
      {"@every 1h30m59.999s", "2024-05-15T11:51:29Z"},
      {"@every 1.5s", "2024-05-15T10:20:31Z"},
      {"@every 500ms", "2024-05-15T10:20:31Z"},
      {"@every -5s", "2024-05-15T10:20:31Z"},
      {"@every 0", "2024-05-15T10:20:31Z"},
      {"@every 36h", "2024-05-16T22:20:30Z"},
  };
  const TimeZone utc = TimeZone::utc();
  for (const Row& r : rows) {
    CAPTURE(r.spec);
    CHECK(show(parse(r.spec).next(at("2024-05-15T10:20:30Z"), utc)) == r.next);
  }
}

TEST_CASE("cron: successive activations and the five-year horizon") {
  struct Row {
    const char* spec;
    const char* from;
    std::vector<std::string> next;
  };
  const Row rows[] = {
      // 2024-01-01 is a Monday: the Mondays, then Thursday 1 February.
      {"0 0 1 * MON",
       "2024-01-01T00:00:00Z",
       {"2024-01-08T00:00:00Z", "2024-01-15T00:00:00Z", "2024-01-22T00:00:00Z", "2024-01-29T00:00:00Z",
        "2024-02-01T00:00:00Z"}},
      {"0 0 29 2 *", "2020-03-01T00:00:00Z", {"2024-02-29T00:00:00Z", "2028-02-29T00:00:00Z"}},
      // After 2096 the next 29 February is in 2104 (2100 is no leap year): beyond 2096+5, so Go's
      // zero time.
      {"0 0 29 2 *", "2096-03-01T00:00:00Z", {"zero time"}},
      {"0 0 29 2 *", "2099-06-01T00:00:00Z", {"2104-02-29T00:00:00Z"}},
      {"0 0 30 2 *", "2024-01-01T00:00:00Z", {"zero time"}},
      {"59 23 31 2 *", "2024-01-01T00:00:00Z", {"zero time"}},  // pkg/controller/cronjob's own example
      {"0 0 , * *", "2024-01-01T00:00:00Z", {"zero time"}},     // a list of nothing matches nothing
      {"*/20 * * * *",
       "2024-12-31T23:30:00Z",
       {"2024-12-31T23:40:00Z", "2025-01-01T00:00:00Z", "2025-01-01T00:20:00Z"}},
      {"@every 90s", "2024-01-01T00:00:00Z", {"2024-01-01T00:01:30Z", "2024-01-01T00:03:00Z"}},
  };
  const TimeZone utc = TimeZone::utc();
  for (const Row& r : rows) {
    CAPTURE(r.spec);
    CAPTURE(r.from);
    CHECK(activations(parse(r.spec), utc, at(r.from), r.next.size()) == r.next);
  }
}

TEST_CASE("cron: daylight saving time in America/New_York, Europe/Berlin and America/Sao_Paulo") {
  // Derived from SpecSchedule.Next: the hour loop adds real hours (t.Add(time.Hour)), so an hour a
  // spring-forward skips never matches that day; an hour a fall-back repeats matches twice. The
  // day loop uses AddDate and then moves a clock that does not read 00 back or on to midnight.
  struct Row {
    const char* zone;
    const char* spec;
    const char* from;
    std::vector<std::string> next;
  };
  const Row rows[] = {
      // 2024-03-10 00:00 EST: 02:30 does not exist that day (02:00 EST -> 03:00 EDT at 07:00Z), so
      // the next 02:30 is on 11 March, EDT.
      {"America/New_York", "30 2 * * *", "2024-03-10T05:00:00Z", {"2024-03-11T06:30:00Z"}},
      {"America/New_York", "0 * * * *", "2024-03-10T05:30:00Z", {"2024-03-10T06:00:00Z", "2024-03-10T07:00:00Z"}},
      // 2024-11-03 00:00 EDT: 01:30 happens twice (EDT at 05:30Z, EST at 06:30Z) and runs twice.
      {"America/New_York",
       "30 1 * * *",
       "2024-11-03T04:00:00Z",
       {"2024-11-03T05:30:00Z", "2024-11-03T06:30:00Z", "2024-11-04T06:30:00Z"}},
      // Berlin: 2024-03-31 02:00 CET -> 03:00 CEST at 01:00Z; 2024-10-27 03:00 CEST -> 02:00 CET at
      // 01:00Z.
      {"Europe/Berlin", "30 2 * * *", "2024-03-30T23:00:00Z", {"2024-04-01T00:30:00Z"}},
      {"Europe/Berlin",
       "30 2 * * *",
       "2024-10-26T22:00:00Z",
       {"2024-10-27T00:30:00Z", "2024-10-27T01:30:00Z", "2024-10-28T01:30:00Z"}},
      {"Europe/Berlin", "@daily", "2024-03-30T12:00:00Z", {"2024-03-30T23:00:00Z", "2024-03-31T22:00:00Z"}},
      // Sao Paulo 2018-11-04: midnight -03 became 01:00 -02 (03:00Z). The hour loop never sees
      // hour 0 on the 4th: @daily skips it.
      {"America/Sao_Paulo", "0 0 * * *", "2018-11-03T15:00:00Z", {"2018-11-05T02:00:00Z", "2018-11-06T02:00:00Z"}},
      // The day loop reaches the 4th by AddDate: time.Date(2018, 11, 4, 0, 0, 0) is 23:00 -03 on the
      // 3rd (Go's Date in a gap), the hour 23 fix-up adds an hour to 01:00 -02 on the 4th, then the
      // hour loop finds no hour 0 and wraps: the next 4 November midnight is in 2019 (no DST then).
      {"America/Sao_Paulo", "0 0 4 11 *", "2018-11-01T00:00:00Z", {"2019-11-04T03:00:00Z"}},
      // The same fix-up makes 12:00 on the 4th reachable (01:00 -02, then the hour loop).
      {"America/Sao_Paulo", "0 12 4 11 *", "2018-11-01T00:00:00Z", {"2018-11-04T14:00:00Z"}},
      // Beirut (east of UTC) 2024-03-31: midnight EET became 01:00 EEST (22:00Z on the 30th).
      // time.Date(2024, 3, 31, 0, 0, 0) is 01:00 EEST; the fix-up for a clock reading 1..12 goes
      // back an hour, to 23:00 EET on the 30th; AddDate then gives 23:00 EEST on the 31st, whose
      // fix-up goes on to 1 April: 31 March 2024 is skipped. 2025's DST starts on the 30th, and
      // the same dance ends at 00:00 on the 31st.
      {"Asia/Beirut", "0 12 31 3 *", "2024-03-01T00:00:00Z", {"2025-03-31T09:00:00Z"}},
      // After the last transition of the file (2037): the footer rule EST5EDT,M3.2.0,M11.1.0. In
      // 2100 the second Sunday of March is the 14th, so 02:30 is skipped; in 2101 DST starts on the
      // 13th and the 14th's 02:30 is EDT.
      {"America/New_York", "30 2 14 3 *", "2100-03-01T00:00:00Z", {"2101-03-14T06:30:00Z"}},
      {"America/New_York", "0 12 4 7 *", "2100-01-01T00:00:00Z", {"2100-07-04T16:00:00Z"}},
  };
  for (const Row& r : rows) {
    CAPTURE(r.zone);
    CAPTURE(r.spec);
    CAPTURE(r.from);
    CHECK(activations(parse(r.spec), zone(r.zone), at(r.from), r.next.size()) == r.next);
  }
}

TEST_CASE("cron: a TZ= or CRON_TZ= prefix sets the schedule's own zone") {
  // Next is evaluated in the prefix's zone whatever zone is given (here New York); "TZ=Local"
  // is time.Local in Go: no zone of its own. "" and "UTC" are time.UTC.
  struct Row {
    const char* spec;
    const char* from;
    const char* next;
    std::optional<std::string> location;
  };
  const Row rows[] = {
      {"TZ=Asia/Kolkata 30 9 * * *", "2024-01-01T00:00:00Z", "2024-01-01T04:00:00Z", "Asia/Kolkata"},
      {"CRON_TZ=Europe/Berlin 0 12 * * *", "2024-07-01T00:00:00Z", "2024-07-01T10:00:00Z", "Europe/Berlin"},
      {"TZ=UTC 0 12 * * *", "2024-07-01T00:00:00Z", "2024-07-01T12:00:00Z", "UTC"},
      {"TZ= 0 12 * * *", "2024-07-01T00:00:00Z", "2024-07-01T12:00:00Z", "UTC"},
      {"TZ=Europe/Berlin   @daily  ", "2024-07-01T00:00:00Z", "2024-07-01T22:00:00Z", "Europe/Berlin"},
      {"TZ=Local 0 12 * * *", "2024-07-01T00:00:00Z", "2024-07-01T16:00:00Z", std::nullopt},
      {"0 12 * * *", "2024-07-01T00:00:00Z", "2024-07-01T16:00:00Z", std::nullopt},
      {"TZ=Europe/Berlin @every 1h", "2024-07-01T00:00:00Z", "2024-07-01T01:00:00Z", std::nullopt},
  };
  const TimeZone new_york = zone("America/New_York");
  for (const Row& r : rows) {
    CAPTURE(r.spec);
    const CronSchedule s = parse(r.spec);
    CHECK(show(s.next(at(r.from), new_york)) == r.next);
    CHECK((s.location() ? std::optional<std::string>(s.location()->name()) : std::nullopt) == r.location);
  }
  CHECK(parse("@every 1h30m59.9s").every() == std::chrono::seconds(5459));
  CHECK(parse("@every 10ms").every() == std::chrono::seconds(1));
  CHECK_FALSE(parse("@hourly").every().has_value());

  // parse resolves the zone with the loader it is given, after Go's own names.
  std::vector<std::string> asked;
  const auto loader = [&](std::string_view name) {
    asked.emplace_back(name);
    return TimeZone::from_tzif(std::string(name), read_file("/usr/share/zoneinfo/Asia/Kolkata"));
  };
  CHECK(CronSchedule::parse("TZ=Some/Where 0 0 * * *", loader).location()->name() == "Some/Where");
  CHECK(CronSchedule::parse("TZ=UTC 0 0 * * *", loader).location()->name() == "UTC");
  CHECK(asked == std::vector<std::string>{"Some/Where"});
}

TEST_CASE("cron: robfig's error messages, verbatim") {
  struct Row {
    const char* spec;
    const char* rule;
  };
  const Row rows[] = {
      {"", "empty spec string"},
      {"foo", "expected exactly 5 fields, found 1: [foo]"},
      {"* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"},
      {"TZ=UTC  ", "expected exactly 5 fields, found 0: []"},
      {"@foo", "unrecognized descriptor: @foo"},
      {"@every", "unrecognized descriptor: @every"},
      {"@daily ", "unrecognized descriptor: @daily "},
      {"@every 1x", "failed to parse duration @every 1x: time: unknown unit \"x\" in duration \"1x\""},
      {"@every 1", "failed to parse duration @every 1: time: missing unit in duration \"1\""},
      {"@every ", "failed to parse duration @every : time: invalid duration \"\""},
      {"@every .s", "failed to parse duration @every .s: time: invalid duration \".s\""},
      {"@every 9999999999h", "failed to parse duration @every 9999999999h: time: invalid duration \"9999999999h\""},
      {"@every 1\u00e9",
       "failed to parse duration @every 1\u00e9: time: unknown unit \"\\xc3\\xa9\" in duration "
       "\"1\\xc3\\xa9\""},
      {"x * * * *", "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"},
      {"* * * FOO *", "failed to parse int from FOO: strconv.Atoi: parsing \"FOO\": invalid syntax"},
      {"-5 * * * *", "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax"},
      {"+ * * * *", "failed to parse int from +: strconv.Atoi: parsing \"+\": invalid syntax"},
      {"\u00e9 * * * *", "failed to parse int from \u00e9: strconv.Atoi: parsing \"\u00e9\": invalid syntax"},
      {"\x01 * * * *", "failed to parse int from \x01: strconv.Atoi: parsing \"\\x01\": invalid syntax"},
      {"\u200b * * * *", "failed to parse int from \u200b: strconv.Atoi: parsing \"\\u200b\": invalid syntax"},
      {"99999999999999999999 * * * *",
       "failed to parse int from 99999999999999999999: strconv.Atoi: parsing \"99999999999999999999\": value out "
       "of range"},
      {"0-70 * * * *", "end of range (70) above maximum (59): 0-70"},
      {"* 24 * * *", "end of range (24) above maximum (23): 24"},
      {"* * * * 7", "end of range (7) above maximum (6): 7"},  // day-of-week is 0-6
      {"* * * 13 *", "end of range (13) above maximum (12): 13"},
      {"* * 0 * *", "beginning of range (0) below minimum (1): 0"},
      {"5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"},
      {"* * * * FRI-MON", "beginning of range (5) beyond end of range (1): FRI-MON"},
      {"*/0 * * * *", "step of range should be a positive number: */0"},
      {"*/-1 * * * *", "negative number (-1) not allowed: -1"},
      {"1-2-3 * * * *", "too many hyphens: 1-2-3"},
      {"1/2/3 * * * *", "too many slashes: 1/2/3"},
      {"TZ=Nope/Zone * * * * *", "provided bad location Nope/Zone: unknown time zone Nope/Zone"},
      {"TZ=../x * * * * *", "provided bad location ../x: time: invalid location name"},
      {"CRON_TZ=/etc/localtime @daily", "provided bad location /etc/localtime: time: invalid location name"},
      {"TZ=America 0 * * * *", "provided bad location America: is a directory"},
      {"TZ=UTC", "runtime error: slice bounds out of range [:-1]"},  // Go panics
  };
  for (const Row& r : rows) {
    CAPTURE(r.spec);
    try {
      parse(r.spec);
      FAIL("parsed");
    } catch (const ValidationError& e) {
      CHECK(e.field() == "schedule");
      CHECK(e.value() == r.spec);
      CHECK(e.rule() == r.rule);
    }
  }
  // what() as gpupool words every ValidationError; rule() is the bare Go text.
  CHECK_THROWS_WITH_AS(parse("foo"), "schedule: invalid value \"foo\": expected exactly 5 fields, found 1: [foo]",
                       ValidationError);
  // Without a loader, a zone that needs the tz database is unknown.
  CHECK_THROWS_WITH_AS(CronSchedule::parse("TZ=Asia/Kolkata * * * * *"),
                       "schedule: invalid value \"TZ=Asia/Kolkata * * * * *\": provided bad location Asia/Kolkata: "
                       "unknown time zone Asia/Kolkata",
                       ValidationError);
}

TEST_CASE("time zone: to_local from the tz database and its footer rule") {
  struct Row {
    const char* zone;
    const char* instant;
    const char* wall;  // local YYYY-MM-DD hh:mm:ss
    int offset;
    const char* abbreviation;
    bool dst;
    int weekday, yearday;
  };
  const Row rows[] = {
      {"America/New_York", "2024-03-10T06:59:59Z", "2024-03-10 01:59:59", -18000, "EST", false, 0, 70},
      {"America/New_York", "2024-03-10T07:00:00Z", "2024-03-10 03:00:00", -14400, "EDT", true, 0, 70},
      {"America/New_York", "2024-11-03T05:59:59Z", "2024-11-03 01:59:59", -14400, "EDT", true, 0, 308},
      {"America/New_York", "2024-11-03T06:00:00Z", "2024-11-03 01:00:00", -18000, "EST", false, 0, 308},
      {"Europe/Berlin", "2024-03-31T00:59:59Z", "2024-03-31 01:59:59", 3600, "CET", false, 0, 91},
      {"Europe/Berlin", "2024-03-31T01:00:00Z", "2024-03-31 03:00:00", 7200, "CEST", true, 0, 91},
      {"Europe/Berlin", "2024-10-27T00:59:59Z", "2024-10-27 02:59:59", 7200, "CEST", true, 0, 301},
      {"Europe/Berlin", "2024-10-27T01:00:00Z", "2024-10-27 02:00:00", 3600, "CET", false, 0, 301},
      {"Asia/Kolkata", "2024-01-01T00:00:00Z", "2024-01-01 05:30:00", 19800, "IST", false, 1, 1},
      {"Etc/UTC", "2024-12-31T23:59:59Z", "2024-12-31 23:59:59", 0, "UTC", false, 2, 366},
      // Past the files' last transition (2037): the footer's rule. 2100-03-01 is a Monday, so DST
      // starts on Sunday 14 March and ends on Sunday 7 November.
      {"America/New_York", "2100-03-14T06:59:59Z", "2100-03-14 01:59:59", -18000, "EST", false, 0, 73},
      {"America/New_York", "2100-03-14T07:00:00Z", "2100-03-14 03:00:00", -14400, "EDT", true, 0, 73},
      {"America/New_York", "2100-11-07T05:59:59Z", "2100-11-07 01:59:59", -14400, "EDT", true, 0, 311},
      {"America/New_York", "2100-11-07T06:00:00Z", "2100-11-07 01:00:00", -18000, "EST", false, 0, 311},
      {"Europe/Berlin", "2200-07-01T00:00:00Z", "2200-07-01 02:00:00", 7200, "CEST", true, 2, 182},
      // Southern hemisphere: the rule's end comes before its start in the year.
      {"Australia/Sydney", "2200-01-01T00:00:00Z", "2200-01-01 11:00:00", 39600, "AEDT", true, 3, 1},
      {"Australia/Sydney", "2200-07-01T00:00:00Z", "2200-07-01 10:00:00", 36000, "AEST", false, 2, 182},
  };
  for (const Row& r : rows) {
    CAPTURE(r.zone);
    CAPTURE(r.instant);
    const TimeZone::Local l = zone(r.zone).to_local(at(r.instant));
    char wall[64];
    std::snprintf(wall, sizeof wall, "%04lld-%02d-%02d %02d:%02d:%02d", static_cast<long long>(l.year), l.month, l.day,
                  l.hour, l.minute, l.second);
    CHECK(std::string(wall) == r.wall);
    CHECK(l.offset.count() == r.offset);
    CHECK(l.abbreviation == r.abbreviation);
    CHECK(l.dst == r.dst);
    CHECK(l.weekday == r.weekday);
    CHECK(l.yearday == r.yearday);
  }
}

TEST_CASE("time zone: from_local as Go's time.Date, gaps, overlaps and normalisation") {
  // time.Date looks up the offset at the wall-clock reading taken as UTC; if the instant that
  // gives lies outside that offset's span, it takes the offset in effect at that instant instead.
  struct Row {
    const char* zone;
    int year, month, day, hour, minute, second;
    const char* instant;
  };
  const Row rows[] = {
      // New York's gap: 02:30Z is EST (until 07:00Z); 02:30 EST = 07:30Z is past it, EDT there,
      // so 02:30 - (-4h) = 06:30Z, which reads 01:30 EST.
      {"America/New_York", 2024, 3, 10, 2, 30, 0, "2024-03-10T06:30:00Z"},
      // New York's overlap: 01:30Z is EDT, 01:30 EDT = 05:30Z is still EDT: the first 01:30.
      {"America/New_York", 2024, 11, 3, 1, 30, 0, "2024-11-03T05:30:00Z"},
      // Berlin's gap: 02:30Z is CEST (from 01:00Z); 02:30 CEST = 00:30Z is before it, CET there,
      // so 02:30 - 1h = 01:30Z, which reads 03:30 CEST.
      {"Europe/Berlin", 2024, 3, 31, 2, 30, 0, "2024-03-31T01:30:00Z"},
      // Berlin's overlap: 02:30Z is CET (from 01:00Z), 02:30 CET = 01:30Z is CET: the second 02:30.
      {"Europe/Berlin", 2024, 10, 27, 2, 30, 0, "2024-10-27T01:30:00Z"},
      {"America/New_York", 2100, 7, 4, 12, 0, 0, "2100-07-04T16:00:00Z"},
      {"Asia/Kolkata", 2024, 1, 1, 5, 30, 0, "2024-01-01T00:00:00Z"},
      // Normalisation (Go's norm): overflowing fields carry into the next larger one.
      {"UTC", 2024, 13, 1, 0, 0, 0, "2025-01-01T00:00:00Z"},
      {"UTC", 2024, 0, 1, 0, 0, 0, "2023-12-01T00:00:00Z"},
      {"UTC", 2024, 3, 0, 0, 0, 0, "2024-02-29T00:00:00Z"},
      {"UTC", 2023, 2, 29, 0, 0, 0, "2023-03-01T00:00:00Z"},
      {"UTC", 2024, 1, 1, 24, 0, 0, "2024-01-02T00:00:00Z"},
      {"UTC", 2024, 1, 1, 0, 0, -1, "2023-12-31T23:59:59Z"},
      {"UTC", 2024, 1, 1, 0, 90, 60, "2024-01-01T01:31:00Z"},
      {"UTC", 2024, -11, 1, 0, 0, 0, "2023-01-01T00:00:00Z"},
  };
  for (const Row& r : rows) {
    CAPTURE(r.zone);
    CAPTURE(r.instant);
    CHECK(format_rfc3339(zone(r.zone).from_local(r.year, r.month, r.day, r.hour, r.minute, r.second)) == r.instant);
  }
}

TEST_CASE("time zone: from_tzif reads versions 1-3, the 64-bit section and the footer") {
  // A version 2 file without transitions: all of time follows the footer.
  const std::string footer_only = build({.times = {},
                                         .indexes = {},
                                         .types = {{-18000, false, 0}},
                                         .chars = std::string("EST\0", 4),
                                         .footer = "EST5EDT,M3.2.0,M11.1.0"});
  const TimeZone eastern = TimeZone::from_tzif("Test/Eastern", footer_only);
  CHECK(eastern.name() == "Test/Eastern");
  CHECK(eastern.to_local(at("2024-07-01T12:00:00Z")).abbreviation == "EDT");
  CHECK(eastern.to_local(at("2024-07-01T12:00:00Z")).hour == 8);
  CHECK(eastern.to_local(at("2024-01-01T12:00:00Z")).abbreviation == "EST");
  // A footer Go's tzset refuses ("EST" has no offset): the last zone type stays in force.
  const TimeZone no_rule = TimeZone::from_tzif(
      "Test/NoRule", build({.types = {{-18000, false, 0}}, .chars = std::string("EST\0", 4), .footer = "EST"}));
  CHECK(no_rule.to_local(at("2024-07-01T12:00:00Z")).offset.count() == -18000);
  // The 64-bit section is read, not the 32-bit one.
  const TimeZone wide = TimeZone::from_tzif("Test/Wide", build({.types = {{3600, false, 4}},
                                                                .chars = std::string("XXX\0YYY\0", 8),
                                                                .footer = "",
                                                                .types32 = {{0, false, 0}}}));
  CHECK(wide.to_local(at("2024-01-01T00:00:00Z")).abbreviation == "YYY");
  CHECK(wide.to_local(at("2024-01-01T00:00:00Z")).offset.count() == 3600);

  // Version 1, 32-bit transitions. Before the first transition: lookupFirstZone. Type 0 is used by
  // a transition and the first transition is to a DST type (2), so the closest standard type
  // before that one: type 1 ("BBB"), not the first standard type ("AAA").
  const TimeZone v1 = TimeZone::from_tzif("Test/V1", build({.version = 0,
                                                            .times = {1000000000, 1100000000},
                                                            .indexes = {2, 0},
                                                            .types = {{0, false, 0}, {3600, false, 4}, {7200, true, 8}},
                                                            .chars = std::string("AAA\0BBB\0CCC\0", 12)}));
  CHECK(v1.to_local(std::chrono::sys_seconds(std::chrono::seconds(999999999))).abbreviation == "BBB");
  CHECK(v1.to_local(std::chrono::sys_seconds(std::chrono::seconds(1000000000))).abbreviation == "CCC");
  CHECK(v1.to_local(std::chrono::sys_seconds(std::chrono::seconds(1100000000))).abbreviation == "AAA");
  // No footer in version 1: the last transition's type stays.
  CHECK(v1.to_local(at("2200-01-01T00:00:00Z")).abbreviation == "AAA");
  // A first type that no transition uses is the zone before the first transition (like LMT),
  // even a DST one.
  const TimeZone unused = TimeZone::from_tzif("Test/Unused", build({.times = {1000000000},
                                                                    .indexes = {1},
                                                                    .types = {{7200, true, 0}, {3600, false, 4}},
                                                                    .chars = std::string("DDD\0SSS\0", 8),
                                                                    .footer = "SSS-1"}));
  CHECK(unused.to_local(std::chrono::sys_seconds(std::chrono::seconds(0))).abbreviation == "DDD");
  CHECK(unused.to_local(std::chrono::sys_seconds(std::chrono::seconds(1000000000))).abbreviation == "SSS");
  // Only DST types before the first one: the first standard type ("SSS", type 1).
  const TimeZone first = TimeZone::from_tzif("Test/First", build({.version = '3',
                                                                  .times = {1000000000, 1100000000},
                                                                  .indexes = {0, 1},
                                                                  .types = {{7200, true, 0}, {3600, false, 4}},
                                                                  .chars = std::string("DDD\0SSS\0", 8),
                                                                  .footer = "SSS-1"}));
  CHECK(first.to_local(std::chrono::sys_seconds(std::chrono::seconds(0))).abbreviation == "SSS");
  CHECK(first.to_local(std::chrono::sys_seconds(std::chrono::seconds(1050000000))).abbreviation == "DDD");

  // Without its footer, New York's file stops at its last transition (EST, November 2037).
  const std::string new_york = read_file("/usr/share/zoneinfo/America/New_York");
  REQUIRE(new_york.size() > 100);
  const std::size_t footer = new_york.rfind('\n', new_york.size() - 2);
  const TimeZone cut = TimeZone::from_tzif("America/New_York", new_york.substr(0, footer));
  CHECK(cut.to_local(at("2100-07-04T12:00:00Z")).abbreviation == "EST");
  CHECK(TimeZone::from_tzif("America/New_York", new_york).to_local(at("2100-07-04T12:00:00Z")).abbreviation == "EDT");
}

TEST_CASE("time zone: from_tzif refuses truncated and malformed data as Go does") {
  const std::string good = build({.times = {1000000000},
                                  .indexes = {0},
                                  .types = {{3600, false, 0}},
                                  .chars = std::string("AAA\0", 4),
                                  .footer = "AAA-1"});
  std::string bad_version = good;
  bad_version[4] = '4';
  const std::string bad_inputs[] = {
      "",
      "TZif",
      "garbage that is not a zone file at all",
      "TZjf" + good.substr(4),
      bad_version,
      build({.types = {}, .chars = "", .footer = "UTC0"}),                                    // no zone types
      build({.types = {{0, false, 9}}, .chars = std::string("UTC\0", 4), .footer = "UTC0"}),  // name index
      build({.times = {0},
             .indexes = {1},
             .types = {{0, false, 0}},
             .chars = std::string("UTC\0", 4),
             .footer = "UTC0"}),  // transition to a type that does not exist
  };
  for (const std::string& bytes : bad_inputs) {
    CAPTURE(bytes.size());
    CHECK_THROWS_WITH_AS(TimeZone::from_tzif("Test/Bad", bytes),
                         "time zone: invalid value \"Test/Bad\": malformed time zone information", ValidationError);
  }
  // Every truncation before the end of the data is refused; the data without its footer is not.
  const std::size_t data_end = good.rfind('\n', good.size() - 2);
  for (std::size_t n = 0; n < data_end; ++n) {
    CAPTURE(n);
    CHECK_THROWS_AS(TimeZone::from_tzif("Test/Cut", good.substr(0, n)), ValidationError);
  }
  CHECK_NOTHROW(TimeZone::from_tzif("Test/Cut", good.substr(0, data_end)));
  const std::string new_york = read_file("/usr/share/zoneinfo/America/New_York");
  for (std::size_t n = 0; n < new_york.rfind('\n', new_york.size() - 2); n += 97) {
    CAPTURE(n);
    CHECK_THROWS_AS(TimeZone::from_tzif("America/New_York", new_york.substr(0, n)), ValidationError);
  }
}

TEST_CASE("time zone: load_time_zone is Go's time.LoadLocation on Linux") {
  CHECK(load_time_zone("Etc/UTC").name() == "Etc/UTC");
  CHECK(load_time_zone("Etc/UTC").to_local(at("2024-01-01T00:00:00Z")).abbreviation == "UTC");
  CHECK(load_time_zone("Asia/Kolkata").to_local(at("2024-01-01T00:00:00Z")).offset.count() == 19800);
  CHECK(load_time_zone("").name() == "UTC");
  CHECK(load_time_zone("UTC").name() == "UTC");
  CHECK(load_time_zone("Local").name() == "Local");
  CHECK(load_time_zone("Local").to_local(at("2024-07-01T00:00:00Z")).offset.count() == 0);

  struct Row {
    const char* name;
    const char* rule;
  };
  const Row rows[] = {
      {"Nope/Zone", "unknown time zone Nope/Zone"},
      {"utc", "unknown time zone utc"},  // names are case-sensitive files
      {"../etc/passwd", "time: invalid location name"},
      {"Europe/../Europe/Berlin", "time: invalid location name"},
      {"/etc/localtime", "time: invalid location name"},
      {"\\x", "time: invalid location name"},
      {"America", "is a directory"},
      {"Etc/UTC/x", "not a directory"},
  };
  for (const Row& r : rows) {
    CAPTURE(r.name);
    try {
      load_time_zone(r.name);
      FAIL("loaded");
    } catch (const ValidationError& e) {
      CHECK(e.field() == "time zone");
      CHECK(e.value() == r.name);
      CHECK(e.rule() == r.rule);
    }
  }
  try {  // a NUL in the name: syscall.Open's EINVAL
    load_time_zone(std::string_view("Etc/UTC\0x", 9));
    FAIL("loaded");
  } catch (const ValidationError& e) {
    CHECK(e.rule() == "invalid argument");
  }

  // Another zoneinfo directory (Go's sources are fixed; the parameter is for tests).
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpupool_cron_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "Test");
  std::ofstream(dir / "Test" / "Garbage") << "not a zone";
  std::ofstream(dir / "Test" / "Eastern", std::ios::binary)
      << build({.types = {{-18000, false, 0}}, .chars = std::string("EST\0", 4), .footer = "EST5EDT,M3.2.0,M11.1.0"});
  CHECK(load_time_zone("Test/Eastern", dir.string()).to_local(at("2024-07-01T12:00:00Z")).abbreviation == "EDT");
  CHECK_THROWS_WITH_AS(load_time_zone("Test/Garbage", dir.string()),
                       "time zone: invalid value \"Test/Garbage\": malformed time zone information", ValidationError);
  CHECK_THROWS_WITH_AS(load_time_zone("Asia/Kolkata", dir.string()),
                       "time zone: invalid value \"Asia/Kolkata\": unknown time zone Asia/Kolkata", ValidationError);
  std::filesystem::remove_all(dir);
}
