// embedded/schema.hpp — the built-in kinds' schemas, as Kubernetes v1.32 publishes them at
// /openapi/v3 (recorded from the oracle by tests/fidelity/record_openapi.py into data/openapi/).
//
// One schema serves three things: decoding a request body as the API server's Go decoder does
// (a value of the wrong JSON type is refused; unknown fields are reported and dropped), the
// /openapi/v3 documents, and so `kubectl explain`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

namespace gpupool::embedded::schema {

/// What decoding `obj` as the kind found, in the order Go's decoder meets it (document order).
struct Decoded {
  /// encoding/json's UnmarshalTypeError of the first misfit: `json: cannot unmarshal string into
  /// Go struct field DeploymentSpec.spec.replicas of type int32`.
  std::optional<std::string> type_error;
  std::string misfit_go_type;  ///< that field's Go type ("int32"), for strategic merge patches
  /// An error of a type that decodes itself, which stops decoding and wins over type_error:
  /// resource.Quantity's `quantities must match the regular expression ...`.
  std::optional<std::string> decode_error;
  /// The unknown fields' paths as sigs.k8s.io/json words them: `spec.template.spec.containers[0].imagee`.
  std::vector<std::string> unknown_fields;
};

/// A list's element relationship for server-side apply and managedFields (structured-merge-diff,
/// as kube-openapi's schemaconv reads the OpenAPI extensions): atomic, a set of scalars, or a map
/// keyed by `keys`.
struct ListType {
  enum class Kind { Atomic, Set, Map } kind = Kind::Atomic;
  std::vector<std::string> keys;
};
/// The relationship of the list at `dotted` (field names without indexes:
/// "spec.template.spec.containers") in the built-in kind's schema; nullopt where there is none.
std::optional<ListType> list_type(std::string_view group, std::string_view version, std::string_view kind,
                                  std::string_view dotted);

/// Whether the struct or map at `dotted` of the built-in kind is atomic for server-side apply and
/// managedFields (x-kubernetes-map-type "atomic" on its field, else on its type: every
/// LabelSelector, OwnerReference, ObjectReference, a pod spec's nodeSelector, a Service's selector;
/// kube-openapi schemaconv); false where the schema says otherwise or has no such field.
bool atomic_map(std::string_view group, std::string_view version, std::string_view kind, std::string_view dotted);

/// How a strategic merge patch merges the list at `dotted` of the built-in kind `kind` (its
/// patchStrategy and patchMergeKey tags, as the OpenAPI extensions publish them): "" replaced
/// whole, "$primitive" merged as a set of scalars, else the merge key; nullopt where the schema
/// has no such list.
std::optional<std::string> patch_merge_key(std::string_view kind, std::string_view dotted);

/// Whether a strategic merge patch replaces the object at `dotted` of the built-in kind `kind`
/// whole (patchStrategy "replace" on a struct field: a PodDisruptionBudget's spec.selector).
bool patch_replaces(std::string_view kind, std::string_view dotted);

/// runtime.DefaultUnstructuredConverter's error converting `obj` to the built-in kind's Go type
/// (what a strategic merge patch's result meets): `unrecognized type: string`, `cannot restore
/// slice from map`, `cannot convert float64 to int32`, a Quantity's or Time's own parse error.
/// The numbers of `obj` become what the conversion makes of them (an int32 wrapped to its width).
std::optional<std::string> converter_error(std::string_view group, std::string_view version, std::string_view kind,
                                           boost::json::object& obj);

/// The error of converting a decoded `obj` to the internal version, where a kind's conversion can
/// fail (a DaemonSet's deprecated.daemonset.template.generation annotation must be an integer:
/// strconv.ParseInt's message); nullopt when it converts. decode() reports it as its decode_error.
std::optional<std::string> conversion_error(std::string_view group, std::string_view kind,
                                            const boost::json::object& obj);

/// Whether a recorded schema exists for this built-in kind (custom resources have none here).
bool known(std::string_view group, std::string_view version, std::string_view kind);

/// Decodes `obj` as kind (group, version, kind). With `prune`, unknown fields and fields set to
/// null are removed from `obj`, as decoding into a Go struct leaves them out. A kind without a schema decodes as is.
Decoded decode(std::string_view group, std::string_view version, std::string_view kind, boost::json::object& obj,
               bool prune);

/// Every quantity of `obj` (a built-in kind) replaced by its value's text (nano-units), so that
/// two objects compare as apiequality.Semantic compares Quantities (Cmp: "1." equals "1"); false
/// (nothing changed) when the kind holds no quantity.
bool quantities_by_value(std::string_view group, std::string_view version, std::string_view kind,
                         boost::json::object& obj);

/// Writes every resource.Quantity field of `obj` (a built-in kind) as Go encodes it again: its
/// canonical text, or the text ParseQuantity keeps ("+1", "1.5E40"). Done once the object is valid.
void canonical_quantities(std::string_view group, std::string_view version, std::string_view kind,
                          boost::json::object& obj);

/// Removes the empty lists and maps of `obj`'s omitempty fields (a built-in kind), as Go's encoder
/// leaves them out (`tolerations: []`, `nodeSelector: {}`). Done once the object is valid.
void omit_empty(std::string_view group, std::string_view version, std::string_view kind, boost::json::object& obj);

/// Writes null for the empty or absent lists and maps of `obj`'s fields that have no omitempty (a built-in
/// kind): kube-apiserver stores built-in kinds as protobuf, which has no empty repeated field or
/// map, so what it answers and serves from then on reads them back nil (`"rules": null`, a
/// StatefulSet template's `"containers": null`). Done when the object is stored, after omit_empty.
void nil_empty_collections(std::string_view group, std::string_view version, std::string_view kind,
                           boost::json::object& obj);

/// `obj` (a built-in kind) as kube-apiserver stores it: canonical_quantities, omit_empty, then
/// nil_empty_collections. What the store keeps, and the form in which a new object is compared with
/// the stored one where Go compares decoded objects with apiequality.Semantic (a Quantity by value,
/// "1024Mi" = "1Gi"; a nil map or slice equal to an empty one): immutable fields, a StatefulSet's
/// spec. Done once the object is valid.
void to_stored_form(std::string_view group, std::string_view version, std::string_view kind, boost::json::object& obj);

/// Decodes a custom resource's `metadata` as metav1.ObjectMeta (unknown fields reported as
/// "metadata.x", pruned with `prune`); a missing or non-object metadata decodes as nothing.
Decoded decode_object_meta(boost::json::object& obj, bool prune);

/// The kind's zero value as Go encodes it (what `r.New()` is as JSON): the fields that are
/// structs, not pointers (the schema gives them `default: {}`), as objects; the fields without
/// omitempty (the schema's `required`) as their zero (0, "", false; null for a pointer, slice or
/// map) and ObjectMeta's creationTimestamp as null. The field
/// manager compares a created object with this, so what it holds is no one's change. A kind
/// without a schema: an empty object.
boost::json::object zero_object(std::string_view group, std::string_view version, std::string_view kind);
/// zero_object with what Go's encoder also writes for a new struct (r.New() converted to
/// unstructured, the fieldmanager's base for a create): the top level's scalars without
/// omitempty ("", 0, false) and null for its non-pointer times and kept collections.
boost::json::object encoded_zero(std::string_view group, std::string_view version, std::string_view kind);

/// encoding/json's UnmarshalTypeError.Value for `v` decoded into an int32 ("string", "number
/// 3000000000"), or nullopt when it fits (null fits: it leaves the zero value).
std::optional<std::string> int32_misfit(const boost::json::value& v);
/// The text a resource.Quantity decodes from: a string as is, a bare number as clients write it
/// ("0.25", "1e30"; the decoded number's shortest form stands for the literal).
std::string quantity_text(const boost::json::value& v);
/// A JSON number as Go prints it in those errors and with %v.
std::string number_text(const boost::json::value& v);

/// The recorded OpenAPI v3 `components.schemas` of a group version, or nullptr.
const boost::json::object* components(std::string_view group, std::string_view version);

}  // namespace gpupool::embedded::schema
