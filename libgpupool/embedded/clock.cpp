#include "embedded/clock.hpp"

#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "gpupool/error.hpp"
#include "gpupool/time.hpp"

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
  // One RFC 3339 rule for the library: the model's metav1.Time formatting (gpupool/time.hpp).
  // A write stamps the same second many times (conditions, managedFields, events): the last
  // second formatted on this thread is kept.
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  thread_local std::chrono::sys_seconds last_secs{std::chrono::seconds::min()};
  thread_local std::string last_text;
  if (secs != last_secs) {
    last_text = format_rfc3339(secs);
    last_secs = secs;
  }
  return last_text;
}

std::string to_rfc3339_micro(Clock::time_point t) {
  const std::tm tm = utc(t);
  const auto since = t - std::chrono::floor<std::chrono::seconds>(t);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since).count();
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
}

bool parse_rfc3339(const std::string& text, Clock::time_point& out) {
  // The model's parser (gpupool/time.hpp) keeps whole seconds, as metav1.Time does.
  try {
    out = std::chrono::time_point_cast<Clock::duration>(gpupool::parse_rfc3339(text));
    return true;
  } catch (const ValidationError&) {
    return false;
  }
}

}  // namespace gpupool::embedded
