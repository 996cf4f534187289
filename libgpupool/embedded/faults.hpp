// embedded/faults.hpp — deterministic fault injection for the embedded server (FaultConfig of
// gpupool/embedded.hpp): one seeded generator, one draw per request, counters of what was injected.
#pragma once

#include <mutex>
#include <random>
#include <string_view>

#include "gpupool/embedded.hpp"

namespace gpupool::embedded {

class FaultInjector {
 public:
  enum class Action { None, TooManyRequests, InternalError, Unavailable, Reset, LostResponse };
  struct Decision {
    Action action = Action::None;
    std::chrono::milliseconds latency{0};
    int retry_after_seconds = 1;
  };
  explicit FaultInjector(FaultConfig config = {}) { configure(std::move(config)); }
  void configure(FaultConfig config);
  /// Decides the fate of one request of `verb` and counts it.
  Decision decide(std::string_view verb);
  FaultCounters counters() const;

 private:
  mutable std::mutex mu_;
  FaultConfig config_;
  std::mt19937_64 rng_;
  FaultCounters counters_;
};

}  // namespace gpupool::embedded
