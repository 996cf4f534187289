// The one piece of I/O behind gpupool/cron.hpp's time zones: reading a zone file of the tz
// database the way Go's time.LoadLocation does on Linux (src/time/zoneinfo.go LoadLocation,
// zoneinfo_read.go loadLocation / loadTzinfoFromDirOrZip / readFile), for kube-apiserver's
// validateTimeZone and the CronJob controller's time.LoadLocation(spec.timeZone).
#pragma once

#include "gpupool/cron.hpp"

#include <string>
#include <string_view>

namespace gpupool {

/// Go's platformZoneSources[0] on Linux.
inline constexpr const char* kZoneinfoDir = "/usr/share/zoneinfo";

/// The bytes of <zoneinfo_dir>/<name> as Go's readFile reads them. Throws
/// ValidationError("time zone", name, <Go's error text>): "unknown time zone <name>" when the file
/// does not exist (ENOENT); otherwise Go's syscall.Errno text, e.g. "is a directory" (a name such
/// as "America"), "not a directory", "permission denied", "invalid argument" (a NUL in the name);
/// "time: file <path> is too large" beyond Go's 10 MB limit. No check of the name itself (see
/// TimeZone::builtin, which load_time_zone applies first).
std::string read_time_zone_file(std::string_view name, const std::string& zoneinfo_dir = kZoneinfoDir);

/// Go's time.LoadLocation on Linux with one zone source, `zoneinfo_dir`: TimeZone::builtin for
/// "", "UTC", "Local" and the names Go refuses ("time: invalid location name"), else the TZif file
/// read by read_time_zone_file and parsed by TimeZone::from_tzif ("malformed time zone
/// information"). Throws ValidationError("time zone", name, <Go's error text>). Not reproduced:
/// the $ZONEINFO variable, Go's further sources and the copy of the tz database embedded in
/// kube-apiserver and kube-controller-manager (time/tzdata), which Go falls back to when the file is
/// missing or malformed. Inline so that this layer's object code never calls the model layer.
inline TimeZone load_time_zone(std::string_view name, const std::string& zoneinfo_dir = kZoneinfoDir) {
  if (auto zone = TimeZone::builtin(name)) return *zone;
  return TimeZone::from_tzif(std::string(name), read_time_zone_file(name, zoneinfo_dir));
}

}  // namespace gpupool
