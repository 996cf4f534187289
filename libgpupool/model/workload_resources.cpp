// Resources validation (pkg/apis/core/validation ValidateResourceRequirements / validateResourceName).
#include "gpupool/error.hpp"
#include "gpupool/names.hpp"
#include "gpupool/resources.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gpupool {

namespace {

void non_negative(const std::optional<Quantity>& q, const std::string& field) {
  if (q && q->is_negative()) throw ValidationError(field, q->to_string(), "must be greater than or equal to 0");
}

void request_within_limit(const std::optional<Quantity>& request, const std::optional<Quantity>& limit,
                          std::string_view field, std::string_view name) {
  // "must be less than or equal to <name> limit of <limit>" (the API server's wording).
  if (request && limit && *request > *limit)
    throw ValidationError(fmt::format("{}.requests[{}]", field, name), request->to_string(),
                          fmt::format("must be less than or equal to {} limit of {}", name, limit->to_string()));
}

}  // namespace

bool is_native_resource(std::string_view n) noexcept {
  return n.find('/') == std::string_view::npos || n.find("kubernetes.io/") != std::string_view::npos;
}

bool is_extended_resource_name(std::string_view n) {
  if (is_native_resource(n) || n.starts_with("requests.")) return false;
  return is_qualified_name("requests." + std::string(n));
}

bool is_hugepages_resource_name(std::string_view n) noexcept { return n.starts_with("hugepages-"); }

bool is_overcommit_allowed(std::string_view n) noexcept {
  return is_native_resource(n) && !is_hugepages_resource_name(n);
}

bool is_integer_resource_name(std::string_view n) {
  static constexpr std::string_view kCounts[] = {
      "pods",       "resourcequotas",         "services",           "replicationcontrollers", "secrets",
      "configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"};
  return std::find(std::begin(kCounts), std::end(kCounts), n) != std::end(kCounts) || is_extended_resource_name(n);
}

namespace {
// helper.IsQuotaHugePageResourceName
bool is_quota_hugepages_name(std::string_view n) {
  return n.starts_with("hugepages-") || n.starts_with("requests.hugepages-");
}
template <std::size_t N>
bool one_of(const std::string_view (&set)[N], std::string_view n) {
  return std::find(std::begin(set), std::end(set), n) != std::end(set);
}
// validateResourceName: a qualified name (and then nothing more), else unprefixed a standard one.
std::vector<std::string> resource_name_errors(std::string_view n) {
  std::vector<std::string> errs = qualified_name_errors(n);
  if (errs.empty() && n.find('/') == std::string_view::npos && !is_standard_resource_name(n))
    errs.push_back("must be a standard resource type or fully qualified");
  return errs;
}
}  // namespace

bool is_standard_resource_name(std::string_view n) {
  static constexpr std::string_view kStandard[] = {"cpu",
                                                   "memory",
                                                   "ephemeral-storage",
                                                   "requests.cpu",
                                                   "requests.memory",
                                                   "requests.ephemeral-storage",
                                                   "limits.cpu",
                                                   "limits.memory",
                                                   "limits.ephemeral-storage",
                                                   "pods",
                                                   "resourcequotas",
                                                   "services",
                                                   "replicationcontrollers",
                                                   "secrets",
                                                   "configmaps",
                                                   "persistentvolumeclaims",
                                                   "storage",
                                                   "requests.storage",
                                                   "services.nodeports",
                                                   "services.loadbalancers"};
  return one_of(kStandard, n) || is_quota_hugepages_name(n);
}

// standardQuotaResources is standardResources without "storage" (a quota counts requests.storage).
bool is_standard_quota_resource_name(std::string_view n) { return n != "storage" && is_standard_resource_name(n); }

std::vector<std::string> quota_resource_name_errors(std::string_view n) {
  std::vector<std::string> errs = resource_name_errors(n);
  if (n.find('/') == std::string_view::npos && !is_standard_quota_resource_name(n))
    errs.push_back("must be a standard resource for quota");
  return errs;
}

bool is_quota_scope_valid_for_resource(std::string_view scope, std::string_view resource) {
  static constexpr std::string_view kPodCompute[] = {"cpu",           "memory",       "limits.cpu",
                                                     "limits.memory", "requests.cpu", "requests.memory"};
  if (scope == "Terminating" || scope == "NotTerminating" || scope == "NotBestEffort" || scope == "PriorityClass" ||
      scope == "CrossNamespacePodAffinity")
    return resource == "pods" || one_of(kPodCompute, resource);
  if (scope == "BestEffort") return resource == "pods";
  return true;
}

// validateResourceName stops at a malformed name; validateContainerResourceName goes on.
std::vector<std::string> container_resource_name_errors(std::string_view n) {
  const bool unprefixed = n.find('/') == std::string_view::npos;
  std::vector<std::string> errs = resource_name_errors(n);
  if (unprefixed) {
    if (n != "cpu" && n != "memory" && n != "ephemeral-storage" && !is_hugepages_resource_name(n))
      errs.push_back("must be a standard resource for containers");
  } else if (!is_native_resource(n) && !is_extended_resource_name(n)) {
    errs.push_back("doesn't follow extended resource name standard");
  }
  return errs;
}

void validate(const Resources& r, std::string_view field) {
  non_negative(r.cpu_request, fmt::format("{}.requests[cpu]", field));
  non_negative(r.cpu_limit, fmt::format("{}.limits[cpu]", field));
  non_negative(r.memory_request, fmt::format("{}.requests[memory]", field));
  non_negative(r.memory_limit, fmt::format("{}.limits[memory]", field));
  request_within_limit(r.cpu_request, r.cpu_limit, field, "cpu");
  request_within_limit(r.memory_request, r.memory_limit, field, "memory");
  if (r.gpus < 0)
    throw ValidationError(fmt::format("{}.gpus", field), std::to_string(r.gpus), "must be greater than or equal to 0");
  for (const auto& [name, q] : r.extra) {
    std::string at = fmt::format("{}.extra[{}]", field, name);
    if (name == "cpu" || name == "memory")
      throw ValidationError(at, name, "set cpu and memory through their own fields (requests and limits differ)");
    if (const auto errs = container_resource_name_errors(name); !errs.empty())
      throw ValidationError(at, name, errs.front());
    if (q.is_negative()) throw ValidationError(at, q.to_string(), "must be greater than or equal to 0");
    // ValidateResourceQuantityValue: extended resources are whole numbers.
    if (is_integer_resource_name(name) && q.milli_value() % 1000 != 0)
      throw ValidationError(at, q.to_string(), "must be an integer (extended resources are counted in whole units)");
  }
}

}  // namespace gpupool
