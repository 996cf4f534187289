#include "embedded/clock.hpp"

#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "gpupool/error.hpp"
#include "gpupool/time.hpp"

namespace gpupool::embedded {
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
  // The second as to_rfc3339 writes it (kept per thread: every event of a burst shares it), then
  // the microseconds: "2024-01-01T00:00:00.000000Z".
  std::string text = to_rfc3339(t);
  const auto since = t - std::chrono::floor<std::chrono::seconds>(t);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since).count();
  text.pop_back();  // the 'Z'
  char frac[32];
  std::snprintf(frac, sizeof frac, ".%06lldZ", static_cast<long long>(micros));
  return text += frac;
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

std::optional<Clock::time_point> time_from_rfc3339(const std::string& text) {
  Clock::time_point t;
  if (text.empty() || !parse_rfc3339(text, t)) return std::nullopt;
  return t;
}

}  // namespace gpupool::embedded
