// embedded/crd_schema.hpp — a custom resource's structural schema (its CRD's openAPIV3Schema) and
// what kube-apiserver's apiextensions-apiserver does with it on every write: pruning of unknown
// fields, removal of nulls, defaulting, and validation (kube-openapi's schema validator, list-type
// invariants, the scale subresource's replicas path).
//
// Sources (Kubernetes v1.32, staging/src/k8s.io/apiextensions-apiserver/pkg):
//   apiserver/customresource_handler.go   unstructuredSchemaCoercer.apply (decode-time coercion)
//   apiserver/schema/pruning/algorithm.go  PruneWithOptions
//   apiserver/schema/defaulting/           PruneNonNullableNullsWithoutDefaults, Default
//   apiserver/validation/validation.go     kubeOpenAPIResultToFieldErrors
//   registry/customresource/strategy.go    customResourceStrategy.Validate / ValidateUpdate
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "embedded/store.hpp"
#include "gpupool/error.hpp"

namespace gpupool::embedded::crd {

/// One served version of a CRD: its schema and what the API server derives from it.
struct Schema {
  /// spec.versions[].schema.openAPIV3Schema; it may point into the CRD object that holds it.
  std::shared_ptr<const boost::json::object> root;
  bool has_validation_rules = false;   ///< some x-kubernetes-validations (CEL) rule is declared
  std::string spec_replicas_path;      ///< subresources.scale.specReplicasPath (".spec.replicas"), or ""
  std::string status_replicas_path;    ///< subresources.scale.statusReplicasPath, or ""
  std::string label_selector_path;     ///< subresources.scale.labelSelectorPath, or ""
  boost::json::array printer_columns;  ///< additionalPrinterColumns (name, type, jsonPath, priority)
  /// selectableFields' field labels: each jsonPath without its leading dot
  /// (customresource/strategy.go prepareSelectableFields; validation keeps them plain dotted paths).
  std::vector<std::string> selectable_fields;
};

/// A subresources.scale path's keys (registry/customresource/etcd.go splitReplicasPath: the
/// leading dot dropped, split at dots); empty for "".
std::vector<std::string> split_path(const std::string& path);

/// The first version of `crd`'s spec.versions with storage true, as a one-name list (empty when
/// none): what the strategy's PrepareForCreate and SetDefaults_CustomResourceDefinition (an empty
/// status.storedVersions) record as stored.
boost::json::array storage_versions(const boost::json::object& crd);
/// The scheme defaults of a CustomResourceDefinition (apiextensions v1 defaults.go):
/// SetDefaults_CustomResourceDefinitionSpec — names.singular the kind in lower case,
/// names.listKind the kind and "List", conversion {strategy: None} — SetDefaults_ServiceReference
/// (a conversion webhook's service port 443), and an empty status.storedVersions the storage version.
void default_definition(boost::json::object& crd);

/// The schema node at `dotted` (field names and map keys, no list indexes:
/// "spec.pytorchReplicaSpecs.Master.template.spec.containers") of a custom resource's structural
/// schema: properties, then a list's items or a map's additionalProperties; null where none.
const boost::json::object* schema_at(const Schema& s, std::string_view dotted);
/// The keys of the list at `dotted` for server-side apply and managedFields, as
/// structured-merge-diff reads a structural schema: x-kubernetes-list-type "map" its
/// x-kubernetes-list-map-keys, "set" {"$primitive"}; atomic (the default for a CRD's lists): none.
std::vector<std::string> list_keys(const Schema& s, std::string_view dotted);
/// Whether the object or map at `dotted` is x-kubernetes-map-type "atomic".
bool atomic_map(const Schema& s, std::string_view dotted);

/// The values a printer column's JSONPath selects (k8s.io/client-go/util/jsonpath, the subset
/// CRDs use: `.a.b`, `[n]`, `[a:b]` with negative bounds, `[*]`, `['key']`), missing keys allowed.
std::vector<const boost::json::value*> json_path(const boost::json::value& root, std::string_view path);

/// The resource type a CRD defines: names, scope, the served (storage) version with its schema
/// and subresources; nullopt when the CRD lacks group, names or a served version.
/// With `owner` (the shared object `crd` is), the schema points into it instead of a copy.
std::optional<ResourceType> resource_type(const boost::json::object& crd,
                                          const std::shared_ptr<const boost::json::object>& owner = nullptr);

/// The CRDs the Kubeflow operators install, as released (data/crds/): training-operator v1.9.0's
/// TFJob, PyTorchJob and MPIJob v1, or with `mpijob_version` "v2beta1" mpi-operator v0.8.2's MPIJob;
/// Kubeflow Trainer v2.3.0's TrainJob, TrainingRuntime, ClusterTrainingRuntime and JobSet v0.12.0's
/// JobSet (the version trainer v2.3.0 requires).
/// They are parsed once and kept for the process (the pointers own nothing).
std::vector<std::shared_ptr<const boost::json::object>> kubeflow_crds(std::string_view mpijob_version);
/// Kueue v0.14.8's CRDs (kueue.x-k8s.io/v1beta1 ResourceFlavor, ClusterQueue, LocalQueue,
/// Workload), as released; kept like kubeflow_crds'.
std::vector<std::shared_ptr<const boost::json::object>> kueue_crds();

/// Kubeflow Trainer v2.3.0's default ClusterTrainingRuntimes (manifests/base/runtimes: torch-,
/// deepspeed-, mlx-, jax-, xgboost-distributed and the torchtune ones), as objects to create.
std::vector<boost::json::object> default_cluster_training_runtimes();

/// The state file's short form of a shipped CRD (kubeflow_crds) left as shipped: its key
/// ("training-operator_tfjobs") when `crd` has a shipped CRD's name and spec, else "". The state
/// then keeps the object without its spec (a quarter of a megabyte each), which
/// shipped_spec(key) gives back when the state is loaded.
std::string shipped_key(const boost::json::object& crd);
/// The spec of the shipped CRD `key`, or nullptr for an unknown key.
const boost::json::object* shipped_spec(std::string_view key);

/// The schema of one `spec.versions[]` entry of a CRD, or nullptr when it declares none.
/// With `owner` (the object `version` lives in), the schema points into it instead of a copy.
std::shared_ptr<const Schema> from_version(const boost::json::object& version,
                                           const std::shared_ptr<const boost::json::object>& owner = nullptr);

/// unstructuredSchemaCoercer.apply on a decoded body: unknown fields are pruned (except under
/// x-kubernetes-preserve-unknown-fields), nulls of non-nullable fields without a default are
/// removed. Returns the unknown fields' paths as the API server reports them (sorted).
/// `metadata` is the caller's: decode it as ObjectMeta.
std::vector<std::string> coerce(boost::json::object& obj, const Schema& s);

/// structuraldefaulting.Default: every missing (or null, non-nullable) property with a default
/// gets a copy of it, at every depth.
void apply_defaults(boost::json::object& obj, const Schema& s);

/// The schema part of customResourceStrategy.Validate (create, `old` null) and ValidateUpdate:
/// kube-openapi's validation of `obj` against the schema, the scale subresource's replicas path,
/// the x-kubernetes-list-type map/set invariants, and the x-kubernetes-validations (CEL) rules
/// (embedded/cel.hpp). On update, validation ratcheting (CRDValidationRatcheting, on in v1.32):
/// schema errors of values left unchanged are dropped, and failed rules that do not use oldSelf
/// on unchanged values become `warnings` ("<path>: Invalid value: ...") instead of errors.
/// `before`: the causes ValidateObjectMetaAccessor found first; a blocking one among them (a
/// missing name is Required) keeps the CEL rules from running too (strategy.go hasBlockingErr).
std::vector<StatusCause> validate(const boost::json::object& obj, const boost::json::object* old, const Schema& s,
                                  std::vector<std::string>* warnings = nullptr,
                                  const std::vector<StatusCause>& before = {});

/// statusStrategy.ValidateUpdate: a write to the status subresource validates `status` by its
/// own schema (errors at "status.x", worded "x in body ..."), the scale's status replicas path,
/// the list types (unless the old object already broke them) and the CEL rules, ratcheted as
/// validate() ratchets them.
std::vector<StatusCause> validate_status(const boost::json::object& obj, const boost::json::object& old,
                                         const Schema& s, std::vector<std::string>* warnings = nullptr);

/// The CRD's own validation of its rules (apiextensions/validation ValidateCustomResourceDefinition,
/// the x-kubernetes-validations part): each rule and messageExpression must compile, a rule to a
/// bool, a messageExpression to a string. Causes at spec.validation.openAPIV3Schema... (one
/// version) or spec.versions[i].schema.openAPIV3Schema....
std::vector<StatusCause> validate_definition(const boost::json::object& crd);

}  // namespace gpupool::embedded::crd
