#include "gpupool/retry.hpp"

#include <algorithm>
#include <cmath>

namespace gpupool {

std::chrono::milliseconds RetryPolicy::backoff(int retry, double random01) const {
  using ms = std::chrono::milliseconds;
  double base = static_cast<double>(initial_backoff.count()) * std::pow(2.0, std::max(0, retry - 1));
  base = std::min(base, static_cast<double>(max_backoff.count()));
  double r = std::clamp(random01, 0.0, 1.0);
  return ms(static_cast<ms::rep>(base + r * jitter * base));
}

RetryDecision decide_retry(const RetryPolicy& policy, int retries_done, bool replay_safe, const AttemptOutcome& outcome,
                           double random01) {
  RetryDecision d;
  if (retries_done >= policy.max_retries) return d;
  const int next = retries_done + 1;
  if (!outcome.http_status) {
    d.retry = replay_safe;
  } else {
    const int s = *outcome.http_status;
    if (s == 429) {
      d.retry = true;
    } else if (s >= 500 && s != 501) {
      d.retry = outcome.retry_after_seconds.has_value() || replay_safe;  // checkWait: 5xx + Retry-After
    }
  }
  if (!d.retry) return d;
  d.delay = policy.backoff(next, random01);
  if (outcome.retry_after_seconds)  // never sooner than the server asked
    d.delay =
        std::max(d.delay, std::chrono::milliseconds(std::chrono::seconds(std::max(0, *outcome.retry_after_seconds))));
  return d;
}

}  // namespace gpupool
