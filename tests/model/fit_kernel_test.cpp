// The indexed walk's score kernel (model/plugins/noderesources.hpp): the SIMD version where the
// target has one and the portable scalar fallback both give LeastAllocated's and
// BalancedAllocation's own results, on random and edge inputs.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>

#include "model/plugins/noderesources.hpp"

using namespace gpupool::plugins;

namespace {

FitScores reference(std::int64_t nz_cpu, std::int64_t nz_mem, std::int64_t req_cpu, std::int64_t req_mem,
                    std::int64_t alloc_cpu, std::int64_t alloc_mem) {
  return {least_allocated(nz_cpu, alloc_cpu, nz_mem, alloc_mem),
          balanced_allocation(req_cpu, alloc_cpu, req_mem, alloc_mem)};
}

}  // namespace

TEST_CASE("fit score kernel: scalar fallback and SIMD agree with the scorers") {
  std::mt19937_64 rng(7);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  int simd_checked = 0;
  for (int i = 0; i < 200000; ++i) {
    // Capacities from tiny to beyond 2^53 / 100 (the integer path), requests below and above them.
    const int scale = static_cast<int>(pick(0, 3));
    const std::int64_t hi = scale == 0   ? 1000
                            : scale == 1 ? std::int64_t{1} << 40
                            : scale == 2 ? kExactCapacity
                                         : std::int64_t{1} << 56;
    const std::int64_t alloc_cpu = pick(0, hi), alloc_mem = pick(0, hi);
    const std::int64_t nz_cpu = pick(0, alloc_cpu + alloc_cpu / 4 + 1), nz_mem = pick(0, alloc_mem + alloc_mem / 4 + 1);
    const std::int64_t req_cpu = pick(0, nz_cpu), req_mem = pick(0, nz_mem);
    const FitScores want = reference(nz_cpu, nz_mem, req_cpu, req_mem, alloc_cpu, alloc_mem);
    CAPTURE(alloc_cpu);
    CAPTURE(alloc_mem);
    CAPTURE(nz_cpu);
    CAPTURE(nz_mem);
    REQUIRE(fit_scores_with<fit_quotients_scalar>(nz_cpu, nz_mem, req_cpu, req_mem, alloc_cpu, alloc_mem) == want);
#if defined(GPUPOOL_SIMD_SSE2)
    REQUIRE(fit_scores_with<fit_quotients_sse2>(nz_cpu, nz_mem, req_cpu, req_mem, alloc_cpu, alloc_mem) == want);
    ++simd_checked;
#endif
    REQUIRE(fit_scores(nz_cpu, nz_mem, req_cpu, req_mem, alloc_cpu, alloc_mem) == want);
  }
#if defined(__SSE2__) && !defined(GPUPOOL_NO_SIMD)
  CHECK(simd_checked == 200000);  // the SIMD kernel is the one in use on this target
#else
  CHECK(simd_checked == 0);
#endif
}

TEST_CASE("fit score kernel: edge values") {
  struct Row {
    std::int64_t nz_cpu, nz_mem, req_cpu, req_mem, alloc_cpu, alloc_mem;
  };
  const Row rows[] = {
      {100, 209715200, 0, 0, 4000, 8LL << 30},              // the non-zero defaults on an empty node
      {4000, 8LL << 30, 4000, 8LL << 30, 4000, 8LL << 30},  // full
      {5000, 1, 5000, 1, 4000, 8LL << 30},                  // cpu over capacity: scores 0, fraction capped at 1
      {1, 1, 1, 1, 3, 7},                                   // quotients that round
      {0, 0, 0, 0, kExactCapacity, kExactCapacity},         // the largest exact capacity
      {0, 0, 0, 0, kExactCapacity + 1, 1},                  // beyond: the integer path
      {10, 10, 10, 10, 0, 100},                             // no cpu capacity: cpu left out
  };
  for (const auto& r : rows) {
    const FitScores want = reference(r.nz_cpu, r.nz_mem, r.req_cpu, r.req_mem, r.alloc_cpu, r.alloc_mem);
    CHECK(fit_scores_with<fit_quotients_scalar>(r.nz_cpu, r.nz_mem, r.req_cpu, r.req_mem, r.alloc_cpu, r.alloc_mem) ==
          want);
    CHECK(fit_scores(r.nz_cpu, r.nz_mem, r.req_cpu, r.req_mem, r.alloc_cpu, r.alloc_mem) == want);
  }
}
