// gpupool/retry.hpp — when and how long gpupool::Client waits before trying a request again.
//
// The rules follow client-go (k8s.io/client-go/rest/request.go, with_retry.go):
//  * a 429 or any 5xx response carrying Retry-After is retried for every verb (checkWait), after
//    at least the seconds the server asked for;
//  * 429 without Retry-After is retried too (the API server's max-in-flight and priority-and-
//    fairness filters reject before doing anything, so a replay is harmless);
//  * 5xx without Retry-After, and failures with no response at all (connection refused/reset,
//    timeouts), are retried only for requests that are safe to replay: GET, DELETE, PUT carrying
//    metadata.resourceVersion, and creates made idempotent by Client::create_idempotent.
//    (client-go retries connection errors for GET only; the wider set is gpupool's, made safe by
//    optimistic concurrency and submission ids.) 501 Not Implemented is never retried;
//  * at most max_retries retries (client-go's default is 10); the wait grows exponentially with
//    jitter as wait.Backoff{Duration, Factor: 2, Jitter, Cap} does.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

namespace gpupool {

struct RetryPolicy {
  int max_retries = 10;
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{30'000};
  double jitter = 0.5;  ///< each wait is d + random*jitter*d (wait.Jitter)
  /// Sleeps between attempts; empty: std::this_thread::sleep_for. Tests inject a fake.
  std::function<void(std::chrono::milliseconds)> sleep;
  /// A number in [0, 1) for the jitter; empty: a per-thread PRNG.
  std::function<double()> random;

  /// The wait before retry number `retry` (1-based) without server advice: initial_backoff *
  /// 2^(retry-1), capped at max_backoff, plus jitter computed from `random01`.
  std::chrono::milliseconds backoff(int retry, double random01) const;
};

/// What a failed attempt looked like.
struct AttemptOutcome {
  std::optional<int> http_status;          ///< nullopt: no response (connection/TLS/timeout)
  std::optional<int> retry_after_seconds;  ///< the Retry-After header, if any
};

struct RetryDecision {
  bool retry = false;
  std::chrono::milliseconds delay{0};
};

/// Whether to try again after `retries_done` retries, and after how long. `replay_safe`: the
/// request may be sent twice without harm (see above).
RetryDecision decide_retry(const RetryPolicy& policy, int retries_done, bool replay_safe, const AttemptOutcome& outcome,
                           double random01);

}  // namespace gpupool
