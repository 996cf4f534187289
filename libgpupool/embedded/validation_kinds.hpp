// embedded/validation_kinds.hpp — the value rules of the kinds besides pods and workload templates
// (pkg/apis/core/validation ValidateConfigMap, ValidateSecret, ValidateResourceQuotaSpec,
// ValidatePersistentVolume; rbac/validation; storage/validation ValidateStorageClass;
// apps/batch/policy/scheduling validation), worded as kube-apiserver v1.32 words them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "embedded/store.hpp"
#include "gpupool/error.hpp"
#include "gpupool/quantity.hpp"

namespace gpupool::embedded {

/// validateCSIDriverSpec on a CSIDriver's (defaulted) spec.
void csi_driver_spec_causes(const boost::json::object& spec, std::vector<StatusCause>& causes);

/// A Job's successPolicy as %#v prints a batch.SuccessPolicy (its rules' pointers as addresses).
std::string go_success_policy(const boost::json::object& policy);
/// A Job's podFailurePolicy as %#v prints a batch.PodFailurePolicy.
std::string go_pod_failure_policy(const boost::json::object& policy);

/// validation.IsDomainPrefixedPath on `value` at `f` ("acme.io/foo": a DNS subdomain, '/', an HTTP
/// path): a Job's managedBy, an IngressClass's controller.
void domain_prefixed_path(const std::string& f, const std::string& value, std::vector<StatusCause>& causes);

/// An intstr.IntOrString as decoded from JSON: a string is Type 1 (String), a number Type 0 (Int).
struct GoIntOrString {
  bool is_string = false;
  std::int64_t int_val = 0;
  std::string str_val;
  explicit GoIntOrString(const boost::json::value& v);
  std::string go() const;                       ///< %#v: intstr.IntOrString{Type:1, IntVal:0, StrVal:"5%"}
  bool valid_percent() const;                   ///< validation.IsValidPercent: `^[0-9]+%$`
  std::optional<std::int64_t> percent() const;  ///< getPercentValue (strconv.Atoi saturates)
  std::int64_t value() const;                   ///< getIntOrPercentValue: a percent's number, else IntValue()
};

/// validateJobSpec's rules before the pod template (batch/validation, v1.32): the non-negative
/// counts, backoffLimitPerIndex and maxFailedIndexes, the completion mode and what Indexed allows,
/// podFailurePolicy, successPolicy and podReplacementPolicy, in Kubernetes' order. `spec` is the
/// Job's spec (fields named "spec.<field>").
void job_spec_causes(const boost::json::object& spec, std::vector<StatusCause>& causes);

/// A metav1.Time as field errors print it (time.Time's String, the server in UTC):
/// "2030-01-01 00:00:00 +0000 UTC"; nullopt when `rfc3339` is empty or no time.
std::optional<std::string> go_time_text(const std::string& rfc3339);

/// ValidateJobStatusUpdate (batch/validation, v1.32) with the options jobStatusStrategy gives with
/// JobManagedBy on: the counts, uncountedTerminatedPods, the conditions' and times' transitions,
/// completedIndexes and failedIndexes, of `job` replacing `old` through the status subresource.
void job_status_update_causes(const boost::json::object& job, const boost::json::object& old,
                              std::vector<StatusCause>& causes);

/// ValidateNonnegativeOrPercent (policy) / ValidatePositiveIntOrPercent (apps) on the optional
/// IntOrString `key` of `o`: a valid percent string, or a non-negative number.
void non_negative_or_percent(const boost::json::object* o, std::string_view key, std::string field,
                             std::vector<StatusCause>& causes);
/// IsNotMoreThan100Percent on the optional IntOrString `key` of `o`.
void not_more_than_100_percent(const boost::json::object* o, std::string_view key, std::string field,
                               std::vector<StatusCause>& causes);

/// Go's resource.Quantity as ParseQuantity leaves it, and as the methods validation calls change
/// it: Cmp turns its receiver into an inf.Dec when either side is one (AsDec), and String caches
/// the canonical text in s. Printed with %#v, its inf.Dec pointer shows an address (0xc000000000
/// here; the fidelity suite normalizes addresses).
struct GoQuantity {
  Quantity value;
  std::string text;  ///< as written
  bool dec = false;  ///< held as an inf.Dec (else as an int64Amount{i_value, i_scale})
  std::int64_t i_value = 0;
  int i_scale = 0;
  std::string s;  ///< the cached string
  const char* format = "DecimalSI";

  int cmp(const GoQuantity& y);      ///< Cmp
  const std::string& str();          ///< String
  std::int64_t milli_value() const;  ///< MilliValue, with int64Amount's overflow as Go has it (1E: 0)
  std::string go() const;            ///< %#v
};

/// resource.ParseQuantity's result for a valid `text` (nullopt beyond gpupool's range): its fast
/// path keeps an int64Amount (and the text itself when it is canonical), the rest an inf.Dec.
std::optional<GoQuantity> go_parse_quantity(const std::string& text);

/// ValidateNonnegativeField on the optional integer `key` of `o` (null: nothing to check).
void non_negative(const boost::json::object* o, std::string_view key, std::string field,
                  std::vector<StatusCause>& causes);

/// Defaults those rules rely on (SetDefaults_RoleBinding / _Subject: the RBAC API group).
void default_kind(const ResourceType& t, boost::json::object& obj);

/// rbac/validation ValidateRole (`namespaced`) / ValidateClusterRole past the metadata: the rules,
/// a ClusterRole's aggregationRule.
void rbac_role_causes(const boost::json::object& role, bool namespaced, std::vector<StatusCause>& causes);
/// rbac/validation ValidateRoleBinding (`namespaced`) / ValidateClusterRoleBinding past the
/// metadata: the roleRef, then the subjects.
void rbac_binding_causes(const boost::json::object& binding, bool namespaced, std::vector<StatusCause>& causes);

/// storage/validation ValidateStorageClass past the metadata: the provisioner, parameters, reclaim
/// policy, binding mode and allowed topologies.
void storage_class_causes(const boost::json::object& sc, std::vector<StatusCause>& causes);

/// Appends the causes of `obj` (a write of kind `t`) in the order Kubernetes lists them.
void validate_kind(const ResourceType& t, const boost::json::object& obj, std::vector<StatusCause>& causes);

/// The rules of an update of kind `t` from `old` to `obj` that Validate leaves to ValidateUpdate
/// (ValidateNodeUpdate: podCIDRs and providerID only set once, externalID never changed;
/// ValidatePriorityClassUpdate: value and preemptionPolicy immutable).
void validate_kind_update(const ResourceType& t, const boost::json::object& obj, const boost::json::object& old,
                          std::vector<StatusCause>& causes);

/// ValidateNodeResources: the quantities of a Node's status.capacity and status.allocatable.
void node_resources(const boost::json::object& node, std::vector<StatusCause>& causes);

/// ValidateNodeUpdate's status.addresses rule: no address twice.
void node_addresses(const boost::json::object& node, std::vector<StatusCause>& causes);

/// A Node's spec as decoding and the strategy's PrepareForCreate / PrepareForUpdate leave it
/// (podCIDR and podCIDRs made one, configSource dropped unless the old node has one); `old` is
/// the stored node of an update (null on create).
void default_node_spec(boost::json::object& node, const boost::json::object* old);

/// nodeStrategy's warnings (deprecated configSource and externalID).
std::vector<std::string> node_warnings(const boost::json::object& node);

}  // namespace gpupool::embedded
