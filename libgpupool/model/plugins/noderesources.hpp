// model/plugins/noderesources.hpp — what NodeResourcesFit and NodeResourcesBalancedAllocation share,
// as their Go package does (pkg/scheduler/framework/plugins/noderesources): the fit check
// (fit.go fitsRequest), the two scorers (least_allocated.go, balanced_allocation.go) and the
// indexed walk's two-lane kernel computing both scores at once. Internal to libgpupool.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>

#if defined(__SSE2__) && !defined(GPUPOOL_NO_SIMD)
#define GPUPOOL_SIMD_SSE2 1
#include <emmintrin.h>
#endif

#include "model/plugins/plugin.hpp"

namespace gpupool::plugins {

/// allocatable pods − bound pods, saturating (fitsRequest's `len(nodeInfo.Pods)+1 > allowedPodNumber`
/// fails exactly when this is below 1).
inline std::int64_t free_pods(std::int64_t allocatable, std::int64_t bound) {
  std::int64_t free;
  if (__builtin_sub_overflow(allocatable, bound, &free)) free = std::numeric_limits<std::int64_t>::min();
  return free;
}

/// NodeResourcesFit's check, the one copy used by its Filter, its reasons and the indexed walk
/// (fit.go fitsRequest): room for one more pod first, then each request in resource id order —
/// cpu, memory, then `want.others` (ephemeral-storage and scalar resources) — failing where it
/// exceeds the node's allocatable − requested (`free_cpu`, `free_memory`, `free(id)`).
/// `insufficient(id)` (kPods for the pod count) is called for each failure and returns whether to
/// go on (to list every reason) or to stop (to filter).
template <class Free, class Insufficient>
inline bool fits_request(const FitRequest& want, std::int64_t free_pod_slots, std::int64_t free_cpu,
                         std::int64_t free_memory, Free&& free, Insufficient&& insufficient) {
  bool fits = true;
  auto fail = [&](int id) {
    fits = false;
    return insufficient(id);
  };
  if (free_pod_slots < 1 && !fail(kPods)) return false;
  if (want.cpu > free_cpu && !fail(kCpu)) return false;
  if (want.memory > free_memory && !fail(kMemory)) return false;
  for (const auto& [id, amount] : want.others)
    if (amount > free(id) && !fail(id)) return false;
  return fits;
}

/// LeastAllocated (least_allocated.go leastResourceScorer) over cpu and memory, weight 1 each:
/// `(capacity - requested) * MaxNodeScore / capacity`, 0 when requested exceeds capacity; a resource
/// without capacity is left out.
inline std::int64_t least_allocated(std::int64_t req_cpu, std::int64_t alloc_cpu, std::int64_t req_mem,
                                    std::int64_t alloc_mem) {
  std::int64_t score = 0, weights = 0;
  auto one = [&](std::int64_t requested, std::int64_t capacity) {
    if (capacity == 0) return;
    score += requested > capacity ? 0 : (capacity - requested) * kMaxNodeScore / capacity;
    weights += 1;
  };
  one(req_cpu, alloc_cpu);
  one(req_mem, alloc_mem);
  // weights is 2 whenever both capacities are set: divide by the constant (same integer result).
  return weights == 2 ? score / 2 : weights == 0 ? 0 : score / weights;
}

/// BalancedAllocation (balanced_allocation.go balancedResourceScorer): (1 − std of the requested
/// fractions, each capped at 1) × MaxNodeScore; with two resources the std is |f1 − f2| / 2.
inline std::int64_t balanced_allocation(std::int64_t req_cpu, std::int64_t alloc_cpu, std::int64_t req_mem,
                                        std::int64_t alloc_mem) {
  double fractions[2];
  int n = 0;
  auto one = [&](std::int64_t requested, std::int64_t capacity) {
    if (capacity == 0) return;
    double f = static_cast<double>(requested) / static_cast<double>(capacity);
    fractions[n++] = f > 1 ? 1 : f;
  };
  one(req_cpu, alloc_cpu);
  one(req_mem, alloc_mem);
  double std_dev = n == 2 ? std::abs((fractions[0] - fractions[1]) / 2) : 0.0;
  return static_cast<std::int64_t>((1 - std_dev) * static_cast<double>(kMaxNodeScore));
}

/// LeastAllocated and BalancedAllocation of one node.
struct FitScores {
  std::int64_t least_allocated = 0, balanced_allocation = 0;
  bool operator==(const FitScores&) const = default;
};

/// The largest capacity for which (capacity − requested) × 100 is exact as a double (below 2^53).
inline constexpr std::int64_t kExactCapacity = (std::int64_t{1} << 53) / kMaxNodeScore;

/// The two divisions of each score, cpu and memory, as the kernel needs them.
struct Quotients {
  std::int64_t q_cpu, q_mem;  // truncated (capacity − requested) × 100 / capacity, maybe one too high
  double f_cpu, f_mem;        // requested / capacity, capped at 1
};

/// The quotients with scalar arithmetic (the portable fallback; also what the tests compare).
inline Quotients fit_quotients_scalar(std::int64_t num_cpu, std::int64_t num_mem, std::int64_t req_cpu,
                                      std::int64_t req_mem, std::int64_t alloc_cpu, std::int64_t alloc_mem) {
  Quotients q;
  q.q_cpu = static_cast<std::int64_t>(static_cast<double>(num_cpu) / static_cast<double>(alloc_cpu));
  q.q_mem = static_cast<std::int64_t>(static_cast<double>(num_mem) / static_cast<double>(alloc_mem));
  q.f_cpu = static_cast<double>(req_cpu) / static_cast<double>(alloc_cpu);
  q.f_mem = static_cast<double>(req_mem) / static_cast<double>(alloc_mem);
  q.f_cpu = q.f_cpu > 1 ? 1 : q.f_cpu;
  q.f_mem = q.f_mem > 1 ? 1 : q.f_mem;
  return q;
}

#if defined(GPUPOOL_SIMD_SSE2)
/// The same quotients with one two-lane division each (SSE2): the same IEEE operations per lane.
inline Quotients fit_quotients_sse2(std::int64_t num_cpu, std::int64_t num_mem, std::int64_t req_cpu,
                                    std::int64_t req_mem, std::int64_t alloc_cpu, std::int64_t alloc_mem) {
  Quotients q;
  const __m128d cap = _mm_set_pd(static_cast<double>(alloc_mem), static_cast<double>(alloc_cpu));
  const __m128d d = _mm_div_pd(_mm_set_pd(static_cast<double>(num_mem), static_cast<double>(num_cpu)), cap);
  q.q_cpu = _mm_cvttsd_si64(d);
  q.q_mem = _mm_cvttsd_si64(_mm_unpackhi_pd(d, d));
  __m128d f = _mm_div_pd(_mm_set_pd(static_cast<double>(req_mem), static_cast<double>(req_cpu)), cap);
  f = _mm_min_pd(f, _mm_set1_pd(1.0));  // `if fraction > 1 { fraction = 1 }` (never NaN: capacity != 0)
  q.f_cpu = _mm_cvtsd_f64(f);
  q.f_mem = _mm_cvtsd_f64(_mm_unpackhi_pd(f, f));
  return q;
}
#endif

/// least_allocated and balanced_allocation with the same results and fewer divisions.
/// LeastAllocated: the integer `(capacity - requested) * MaxNodeScore / capacity` is the truncated
/// double quotient, corrected down by one where the double rounded up to the next integer (exact
/// for numerators below 2^53; larger capacities take the integer division). BalancedAllocation:
/// the same IEEE divisions as `float64(requested) / float64(allocable)`, so the fractions, std and
/// truncation are bit for bit balancedResourceScorer's. `Quotients` picks the arithmetic (the SSE2
/// kernel or the scalar fallback).
template <Quotients (*Divide)(std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t)>
[[gnu::always_inline]] inline FitScores fit_scores_with(std::int64_t nz_cpu, std::int64_t nz_mem, std::int64_t req_cpu,
                                                        std::int64_t req_mem, std::int64_t alloc_cpu,
                                                        std::int64_t alloc_mem) {
  if (alloc_cpu <= 0 || alloc_mem <= 0 || alloc_cpu > kExactCapacity || alloc_mem > kExactCapacity || nz_cpu < 0 ||
      nz_mem < 0)
    return {least_allocated(nz_cpu, alloc_cpu, nz_mem, alloc_mem),
            balanced_allocation(req_cpu, alloc_cpu, req_mem, alloc_mem)};
  // requested > capacity scores 0: a zero numerator.
  const std::int64_t num_cpu = std::max<std::int64_t>(alloc_cpu - nz_cpu, 0) * kMaxNodeScore;
  const std::int64_t num_mem = std::max<std::int64_t>(alloc_mem - nz_mem, 0) * kMaxNodeScore;
  Quotients q = Divide(num_cpu, num_mem, req_cpu, req_mem, alloc_cpu, alloc_mem);
  q.q_cpu -= q.q_cpu * alloc_cpu > num_cpu;
  q.q_mem -= q.q_mem * alloc_mem > num_mem;
  const double std_dev = std::abs((q.f_cpu - q.f_mem) / 2);
  // The mean of the two quotients (both at least 0), halved by a shift: written as `/ 2`, the
  // compiler may merge it with least_allocated's `score / weights` above into one slow division.
  const auto mean = static_cast<std::int64_t>(static_cast<std::uint64_t>(q.q_cpu + q.q_mem) >> 1);
  return {mean, static_cast<std::int64_t>((1 - std_dev) * static_cast<double>(kMaxNodeScore))};
}

/// The kernel the indexed walk uses: SSE2 where the target has it (and GPUPOOL_NO_SIMD is not
/// defined), the scalar fallback elsewhere.
[[gnu::always_inline]] inline FitScores fit_scores(std::int64_t nz_cpu, std::int64_t nz_mem, std::int64_t req_cpu,
                                                   std::int64_t req_mem, std::int64_t alloc_cpu,
                                                   std::int64_t alloc_mem) {
#if defined(GPUPOOL_SIMD_SSE2)
  return fit_scores_with<fit_quotients_sse2>(nz_cpu, nz_mem, req_cpu, req_mem, alloc_cpu, alloc_mem);
#else
  return fit_scores_with<fit_quotients_scalar>(nz_cpu, nz_mem, req_cpu, req_mem, alloc_cpu, alloc_mem);
#endif
}

}  // namespace gpupool::plugins
