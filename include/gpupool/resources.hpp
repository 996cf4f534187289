// gpupool/resources.hpp — per-replica compute resources (cpu, memory, GPUs, extended resources).
//
// Rules (pkg/apis/core/validation ValidateResourceRequirements): quantities are not negative; a
// request is at most its limit; extended resources (names with a domain, e.g. "rdma/hca") are
// whole numbers with request equal to limit, so gpupool keeps one value for both. The GPU resource
// name ("nvidia.com/gpu", "virtaitech.com/gpu") comes from the site profile when rendering.
#pragma once

#include "gpupool/quantity.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

struct Resources {
  std::optional<Quantity> cpu_request, cpu_limit;        ///< nullopt: not set
  std::optional<Quantity> memory_request, memory_limit;  ///< nullopt: not set
  std::int64_t gpus = 0;                                 ///< GPUs per replica (request = limit)
  std::map<std::string, Quantity> extra;                 ///< other resources, request = limit
  bool operator==(const Resources&) const = default;
};

/// Throws ValidationError naming `field`.<resource> and the broken rule.
void validate(const Resources& resources, std::string_view field = "resources");

/// validateContainerResourceName: every message for the name of a container's resource, in the
/// API server's order (a qualified name; unprefixed, a standard resource and one for containers;
/// prefixed outside kubernetes.io, an extended resource name). The embedded API server uses it too.
std::vector<std::string> container_resource_name_errors(std::string_view name);
/// helper.IsStandardResourceName: a resource name the API knows (cpu, pods, requests.storage, ...).
bool is_standard_resource_name(std::string_view name);
/// helper.IsStandardQuotaResourceName: a resource a ResourceQuota's hard may name unprefixed.
bool is_standard_quota_resource_name(std::string_view name);
/// ValidateResourceQuotaResourceName: every message for a ResourceQuota's hard key, in the API
/// server's order (validateResourceName's, then "must be a standard resource for quota").
std::vector<std::string> quota_resource_name_errors(std::string_view name);
/// helper.IsResourceQuotaScopeValidForResource: the pod scopes (Terminating, NotTerminating,
/// NotBestEffort, PriorityClass, CrossNamespacePodAffinity) limit pods and their cpu and memory;
/// BestEffort pods only; any other scope anything.
bool is_quota_scope_valid_for_resource(std::string_view scope, std::string_view resource);
/// helper.IsNativeResource: no domain, or one in kubernetes.io ("cpu", "kubernetes.io/x").
bool is_native_resource(std::string_view name) noexcept;
/// helper.IsExtendedResourceName: outside kubernetes.io, not "requests.", and a qualified name as
/// the quota's "requests.<name>" ("nvidia.com/gpu").
bool is_extended_resource_name(std::string_view name);
/// helper.IsHugePageResourceName: "hugepages-<size>".
bool is_hugepages_resource_name(std::string_view name) noexcept;
/// helper.IsIntegerResourceName: object counts and extended resources are whole numbers.
bool is_integer_resource_name(std::string_view name);
/// helper.IsOvercommitAllowed: a request may differ from its limit (native resources, not hugepages).
bool is_overcommit_allowed(std::string_view name) noexcept;

}  // namespace gpupool
