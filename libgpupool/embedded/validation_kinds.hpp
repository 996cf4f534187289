// embedded/validation_kinds.hpp — the value rules of the kinds besides pods and workload templates
// (pkg/apis/core/validation ValidateConfigMap, ValidateSecret, ValidateResourceQuotaSpec,
// ValidatePersistentVolume; rbac/validation; storage/validation ValidateStorageClass;
// apps/batch/policy/scheduling validation), worded as kube-apiserver v1.32 words them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "embedded/store.hpp"
#include "gpupool/error.hpp"

namespace gpupool::embedded {

/// ValidateNonnegativeField on the optional integer `key` of `o` (null: nothing to check).
void non_negative(const boost::json::object* o, std::string_view key, std::string field,
                  std::vector<StatusCause>& causes);

/// Defaults those rules rely on (SetDefaults_RoleBinding / _Subject: the RBAC API group).
void default_kind(const ResourceType& t, boost::json::object& obj);

/// Appends the causes of `obj` (a write of kind `t`) in the order Kubernetes lists them.
void validate_kind(const ResourceType& t, const boost::json::object& obj, std::vector<StatusCause>& causes);

}  // namespace gpupool::embedded
