// gpupool/rollout.hpp — how a Deployment's RollingUpdate is bounded (model layer, no I/O).
//
// Kubernetes' own arithmetic, in one place for the embedded deployment controller, the
// disruption controller and the client's diagnosis of a stuck rollout:
//   intstr.GetScaledValueFromIntOrPercent (k8s.io/apimachinery/pkg/util/intstr) and
//   deployment/util ResolveFenceposts, MaxSurge and MaxUnavailable (pkg/controller/deployment).
#pragma once

#include <boost/json/fwd.hpp>

#include <cstdint>
#include <string_view>

namespace gpupool {

/// An IntOrString scaled against `total`: an integer as it is; "N%" as N% of `total`, rounded up
/// or down (computed in float64 as Go does); anything else, or `v` null, reads `fallback` the same
/// way. The result is kept within [0, 2^31-1], the replica counts' int32.
std::int64_t scaled_int_or_percent(const boost::json::value* v, std::string_view fallback, std::int64_t total,
                                   bool round_up);

/// How far a RollingUpdate may go past and below a Deployment's replicas.
struct RolloutBounds {
  std::int64_t max_surge = 0;        ///< pods above spec.replicas (rounded up)
  std::int64_t max_unavailable = 0;  ///< pods below spec.replicas that may be unavailable (rounded down)
};

/// A Deployment's (apps/v1 JSON) bounds: maxSurge and maxUnavailable of
/// spec.strategy.rollingUpdate (25% each when unset), 1 unavailable when both come to 0, at most
/// spec.replicas unavailable, none when spec.replicas is 0; both 0 for the Recreate strategy.
RolloutBounds rollout_bounds(const boost::json::object& deployment);

/// Whether a Deployment's strategy is RollingUpdate (the default) rather than Recreate.
bool rolling_update(const boost::json::object& deployment);

}  // namespace gpupool
