#include "embedded/faults.hpp"

namespace gpupool::embedded {

void FaultInjector::configure(FaultConfig config) {
  std::lock_guard lk(mu_);
  config_ = std::move(config);
  rng_.seed(config_.seed);
}

FaultInjector::Decision FaultInjector::decide(std::string_view verb) {
  std::lock_guard lk(mu_);
  ++counters_.requests;
  Decision d;
  auto it = config_.rules.find(std::string(verb));
  if (it == config_.rules.end()) it = config_.rules.find("*");
  if (it == config_.rules.end()) return d;
  const FaultRule& r = it->second;
  d.latency = r.latency;
  d.retry_after_seconds = r.retry_after_seconds;
  if (r.latency.count() > 0) ++counters_.delayed;
  // One uniform draw per request, compared against the cumulative rates.
  const double x = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  double edge = r.too_many_requests;
  if (x < edge) {
    d.action = Action::TooManyRequests;
    ++counters_.too_many_requests;
  } else if (x < (edge += r.internal_error)) {
    d.action = Action::InternalError;
    ++counters_.internal_error;
  } else if (x < (edge += r.unavailable)) {
    d.action = Action::Unavailable;
    ++counters_.unavailable;
  } else if (x < (edge += r.connection_reset)) {
    d.action = Action::Reset;
    ++counters_.connection_reset;
  } else if (x < (edge += r.lost_response)) {
    d.action = Action::LostResponse;
    ++counters_.lost_response;
  }
  return d;
}

FaultCounters FaultInjector::counters() const {
  std::lock_guard lk(mu_);
  return counters_;
}

}  // namespace gpupool::embedded
