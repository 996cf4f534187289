// gpupool/cron.hpp — cron schedules and the IANA time zones they run in, as batch/v1 CronJob uses
// them in Kubernetes v1.32 (model layer, no I/O): kube-apiserver's validation
// (pkg/apis/batch/validation validateScheduleFormat / validateTimeZone) and kube-controller-manager's
// CronJob controller (pkg/controller/cronjob), which parse with robfig/cron v3's cron.ParseStandard,
// compute activations with its Schedule.Next, and resolve zones with Go's time.LoadLocation.
//
// Errors are gpupool::ValidationError whose rule() is the Go error text, verbatim, so that a caller
// can quote it as Kubernetes does (`spec.schedule: Invalid value: "...": <rule>`).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gpupool {

/// A time zone as Go's *time.Location holds it: UTC, or the zones and transitions of a TZif file
/// (RFC 8536) plus its footer's POSIX TZ rule for instants after the last transition. Cheap to copy
/// (the data is shared and immutable).
class TimeZone {
 public:
  /// Go's time.UTC (name "UTC").
  static TimeZone utc();

  /// The part of Go's time.LoadLocation that needs no tz database: "" and "UTC" give UTC; "Local"
  /// gives the local zone of kube-controller-manager, which for gpupool is UTC (a UTC zone named
  /// "Local"; kube-apiserver's validateTimeZone refuses "Local" by its own rule before loading); a
  /// name containing ".." or starting with '/' or '\' throws ValidationError("time zone", name,
  /// "time: invalid location name") (Go's errLocation). Any other name gives nullopt: read it from
  /// the tz database (load_time_zone in libgpupool/common/time_zone_file.hpp) and call from_tzif.
  static std::optional<TimeZone> builtin(std::string_view name);

  /// Go's time.LoadLocationFromTZData: the zone `name` from the bytes of a TZif file, version 1, 2
  /// or 3 (the 64-bit section when there is one; the footer's TZ rule after the last transition).
  /// Throws ValidationError("time zone", name, "malformed time zone information") (Go's errBadData)
  /// on data Go refuses: bad magic or version, truncated sections, no zone types, an index out of range.
  static TimeZone from_tzif(std::string name, std::string_view bytes);

  /// The name it was loaded by (Go's Location.String()), e.g. "Europe/Berlin", "UTC".
  const std::string& name() const;

  /// Wall-clock fields of an instant in this zone (Go's t.In(loc) then Date(), Clock(), Weekday(),
  /// YearDay(), Zone(), IsDST()).
  struct Local {
    std::int64_t year = 0;
    int month = 0;                   ///< 1..12
    int day = 0;                     ///< 1..31
    int hour = 0;                    ///< 0..23
    int minute = 0;                  ///< 0..59
    int second = 0;                  ///< 0..59
    int weekday = 0;                 ///< 0 = Sunday .. 6 = Saturday
    int yearday = 0;                 ///< 1..366
    std::chrono::seconds offset{0};  ///< local time minus UTC
    std::string abbreviation;        ///< e.g. "CEST", "EST", "+0530"; "UTC" for UTC
    bool dst = false;
  };
  Local to_local(std::chrono::sys_seconds t) const;

  /// Go's time.Date(year, month, day, hour, minute, second, 0, loc): out-of-range fields normalise
  /// (month 13 is January of the next year, day 0 the last day of the month before, second 60 the
  /// next minute...). A wall-clock time that a transition skips or repeats gets Go's answer: the
  /// offset in effect at the wall-clock reading taken as a UTC instant, replaced (once) by the
  /// offset in effect at the instant that gives if that falls outside the first offset's span. So
  /// west of UTC a skipped time moves back (New York's 2024-03-10 02:30 is 01:30 EST) and a repeated
  /// one is the first (01:30 EDT on 2024-11-03); east of UTC a skipped time moves on (Berlin's
  /// 2024-03-31 02:30 is 03:30 CEST) and a repeated one is the second (02:30 CET on 2024-10-27).
  std::chrono::sys_seconds from_local(std::int64_t year, int month, int day, int hour, int minute, int second) const;

  struct Data;  ///< the zones and transitions (opaque)

 private:
  friend class CronSchedule;
  explicit TimeZone(std::shared_ptr<const Data> data) : data_(std::move(data)) {}
  std::shared_ptr<const Data> data_;
};

/// A parsed cron schedule: robfig/cron v3's SpecSchedule (5 fields or a descriptor) or
/// ConstantDelaySchedule (@every).
class CronSchedule {
 public:
  /// robfig/cron v3's cron.ParseStandard: "minute hour day-of-month month day-of-week" (ranges
  /// "1-5", steps "*/15" "3/10" "1-30/2", lists "1,15", "*" or "?", names JAN-DEC and SUN-SAT in any
  /// case; day-of-week is 0-6, 7 is out of range), or a descriptor (@yearly @annually @monthly
  /// @weekly @daily @midnight @hourly, "@every <Go duration>"), optionally preceded by "TZ=<zone> "
  /// or "CRON_TZ=<zone> ". The zone of such a prefix is resolved as Go's time.LoadLocation does:
  /// TimeZone::builtin, then `load_zone` (pass load_time_zone; it throws ValidationError whose
  /// rule() is Go's error text) — without `load_zone` any other name is "unknown time zone <name>".
  /// "TZ=Local " means no zone of its own, as in Go (time.Local).
  ///
  /// Throws ValidationError("schedule", spec, <robfig's message>), e.g. "empty spec string",
  /// "expected exactly 5 fields, found 1: [foo]", "unrecognized descriptor: @foo",
  /// "end of range (70) above maximum (59): 0-70", `failed to parse int from x: strconv.Atoi:
  /// parsing "x": invalid syntax`, "provided bad location Nope/Zone: unknown time zone Nope/Zone".
  /// A prefix with no space after it ("TZ=UTC") makes Go panic (robfig slices spec[3:-1]); here the
  /// rule is Go's panic text, "runtime error: slice bounds out of range [:-1]".
  static CronSchedule parse(std::string_view spec, const std::function<TimeZone(std::string_view)>& load_zone = {});

  /// Schedule.Next: the first activation strictly after `t`. For a field schedule, robfig's
  /// SpecSchedule.Next evaluated on wall-clock time in the schedule's own zone (a TZ= prefix) or
  /// else in `zone` (the controller passes times in its local zone), with its DST behaviour: a time
  /// a spring-forward skips does not run that day, one a fall-back repeats runs twice, and on a day
  /// whose midnight is skipped robfig's fix-up of the clock can skip the whole day (Sao Paulo
  /// 2018-11-04 for @daily). nullopt where Go returns the zero time: no activation within five
  /// years (e.g. "0 0 30 2 *", or Feb 29 past a non-leap 2100); also, unlike Go, after 50 million
  /// steps of its search, which only a pathological zone file could need. For @every d:
  /// t + d, d rounded down to whole seconds and at least 1 s. Go drops the sub-second part of t,
  /// so passing t rounded down to the second gives Go's answer exactly.
  std::optional<std::chrono::sys_seconds> next(std::chrono::sys_seconds t, const TimeZone& zone) const;

  /// The zone of a TZ=/CRON_TZ= prefix (nullopt: none, or "Local").
  const std::optional<TimeZone>& location() const { return location_; }

  /// For @every: the delay (whole seconds, at least 1 s); nullopt for a field schedule.
  std::optional<std::chrono::seconds> every() const { return every_; }

 private:
  CronSchedule() = default;
  // Bit i set: value i matches; bit 63: the field was "*" or "?" (robfig's starBit).
  std::uint64_t minute_ = 0, hour_ = 0, dom_ = 0, month_ = 0, dow_ = 0;
  std::optional<std::chrono::seconds> every_;
  std::optional<TimeZone> location_;
};

}  // namespace gpupool
