// embedded/clock.hpp — the time source of the embedded cluster.
//
// Everything in the embedded cluster that reads time (creationTimestamp, event times, the simulated
// kubelet's progress) reads it from one Clock. A manual clock moves only when told to (tests and
// "what if" runs drive it); a real clock follows the system clock. Thread-safe: now() and advance()
// may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpupool::embedded {

class Clock {
 public:
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<std::chrono::system_clock, duration>;

  /// A clock that stands still at `start` until advance() moves it.
  static Clock manual(time_point start = default_start()) { return Clock(true, start); }
  /// A clock that follows std::chrono::system_clock; advance() adds a fixed offset to it.
  static Clock real() { return Clock(false, time_point{}); }

  Clock(const Clock& other) : manual_(other.manual_), nanos_(other.nanos_.load()) {}
  Clock& operator=(const Clock& other) {
    manual_ = other.manual_;
    nanos_.store(other.nanos_.load());
    return *this;
  }

  bool is_manual() const noexcept { return manual_; }

  time_point now() const noexcept {
    const auto n = duration(nanos_.load(std::memory_order_acquire));
    if (manual_) return time_point(n);
    return std::chrono::time_point_cast<duration>(std::chrono::system_clock::now()) + n;
  }

  /// Moves the clock forward (a negative duration is ignored: time never goes back).
  void advance(duration d) noexcept {
    if (d.count() > 0) nanos_.fetch_add(d.count(), std::memory_order_acq_rel);
  }

  /// 2024-01-01T00:00:00Z: a fixed, reproducible start for manual clocks.
  static constexpr time_point default_start() noexcept { return time_point(std::chrono::seconds(1704067200)); }

 private:
  Clock(bool manual, time_point start) : manual_(manual), nanos_(start.time_since_epoch().count()) {}
  bool manual_;
  std::atomic<std::int64_t> nanos_;  // manual: the time itself; real: the offset added to system time
};

/// RFC 3339 in UTC with whole seconds, as metav1.Time serialises ("2024-01-01T00:00:00Z").
std::string to_rfc3339(Clock::time_point t);
/// RFC 3339 with microseconds, as metav1.MicroTime serialises ("2024-01-01T00:00:00.000000Z";
/// events.k8s.io eventTime, Lease renewTime).
std::string to_rfc3339_micro(Clock::time_point t);
/// Parses "YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)" into `out`; returns false (and leaves `out`
/// alone) when the text is not of that form.
bool parse_rfc3339(const std::string& text, Clock::time_point& out);
/// The same, nullopt when the text is not of that form (or empty).
std::optional<Clock::time_point> time_from_rfc3339(const std::string& text);

}  // namespace gpupool::embedded
