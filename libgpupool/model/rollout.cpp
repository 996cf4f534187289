#include "gpupool/rollout.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace gpupool {

namespace json = boost::json;

std::int64_t scaled_int_or_percent(const json::value* v, std::string_view fallback, std::int64_t total, bool round_up) {
  constexpr double kMax = std::numeric_limits<std::int32_t>::max();
  // Kept within int32, the type of the replica counts it is added to: a huge percentage must not
  // overflow (fuzz_api finding).
  const auto clamp = [&](double x) -> std::int64_t {
    if (!(x > 0)) return 0;  // also NaN
    return x > kMax ? static_cast<std::int64_t>(kMax) : static_cast<std::int64_t>(x);
  };
  if (v && v->is_int64()) return clamp(static_cast<double>(v->as_int64()));
  const std::string text = v && v->is_string() ? std::string(v->as_string()) : std::string(fallback);
  const double n = std::strtod(text.c_str(), nullptr);
  if (!text.empty() && text.back() == '%') {
    const double x = n * static_cast<double>(total) / 100.0;
    return clamp(round_up ? std::ceil(x) : std::floor(x));
  }
  return clamp(n);
}

namespace {
const json::object* object_member(const json::object* o, std::string_view key) {
  if (!o) return nullptr;
  const json::value* v = o->if_contains(key);
  return v && v->is_object() ? &v->as_object() : nullptr;
}
}  // namespace

bool rolling_update(const json::object& deployment) {
  const json::object* strategy = object_member(object_member(&deployment, "spec"), "strategy");
  const json::value* type = strategy ? strategy->if_contains("type") : nullptr;
  return !(type && type->is_string() && type->as_string() == "Recreate");
}

RolloutBounds rollout_bounds(const json::object& deployment) {
  const json::object* spec = object_member(&deployment, "spec");
  std::int64_t replicas = 1;  // the apps/v1 default
  if (const json::value* r = spec ? spec->if_contains("replicas") : nullptr; r && r->is_int64())
    replicas = std::max<std::int64_t>(0, r->as_int64());
  RolloutBounds b;
  if (!rolling_update(deployment)) return b;
  // ResolveFenceposts: surge rounded up, unavailable down; both 0 would never progress.
  const json::object* ru = object_member(object_member(spec, "strategy"), "rollingUpdate");
  b.max_surge = scaled_int_or_percent(ru ? ru->if_contains("maxSurge") : nullptr, "25%", replicas, true);
  b.max_unavailable = scaled_int_or_percent(ru ? ru->if_contains("maxUnavailable") : nullptr, "25%", replicas, false);
  if (b.max_surge == 0 && b.max_unavailable == 0) b.max_unavailable = 1;
  // MaxUnavailable: none for 0 replicas, at most the replicas.
  b.max_unavailable = replicas == 0 ? 0 : std::min(b.max_unavailable, replicas);
  return b;
}

}  // namespace gpupool
