// embedded/typecheck.hpp — the JSON types of the fields of the built-in kinds, checked as the API
// server's Go decoder checks them (encoding/json UnmarshalTypeError): a string where an int32 is
// expected is refused, not stored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "common/go_text.hpp"
#include "embedded/store.hpp"

namespace gpupool::embedded {

/// The first field of `obj` (in document order) whose JSON type does not fit the Go type of that
/// field of `t`'s kind, as encoding/json words it: `json: cannot unmarshal string into Go struct
/// field DeploymentSpec.spec.replicas of type int32`. nullopt when every known field fits (or the
/// kind has no table: custom resources).
std::optional<std::string> type_error(const ResourceType& t, const boost::json::object& obj);

/// Throws the Status of a patch whose result does not decode (422, field "patch"): `patched` is
/// the object after the patch; `strategic_patch`, for a strategic merge patch, the patch (then the
/// error is the unstructured converter's and the value the patch as Go prints a map).
void check_patched_types(const ResourceType& t, boost::json::object& patched,
                         const boost::json::value* strategic_patch);

/// The fieldValidation directive of a write (metav1.FieldValidation*): what unknown fields do.
enum class FieldValidation { Ignore, Warn, Strict };
/// Parses the query parameter ("" is Warn, as handlers/rest.go fieldValidation defaults it).
/// Throws 422 `<options_kind>.meta.k8s.io "" is invalid: fieldValidation: Unsupported value ...`.
FieldValidation field_validation(std::string_view value, std::string_view options_kind);

/// Decodes a create or update body as the API server does: a field of the wrong type is 400
/// `<Kind> in version "<v>" cannot be handled as a <Kind>: json: cannot unmarshal ...`; unknown fields are 400 `strict
/// decoding error: unknown field "spec.x", ...` under Strict, a warning each under Warn; in every case they are dropped
/// from `body`.
void decode_body(const ResourceType& t, boost::json::object& body, FieldValidation fv,
                 std::vector<std::string>* warnings);

/// The same for the object a JSON or merge patch produced (handlers/patch.go): under Strict,
/// 422 `patch: Invalid value: "<patched object>": strict decoding error: ...`.
void decode_patched(const ResourceType& t, boost::json::object& patched, FieldValidation fv,
                    std::vector<std::string>* warnings);

/// The scale subresource's patched Scale: spec.replicas must decode as an int32 (422 as above).
void check_scale_patched(const boost::json::object& scale);

/// encoding/json's syntax error for `text` (its checkValid scan, which runs before any decoding):
/// `unexpected end of JSON input`, `invalid character 'x' looking for beginning of value`, `...
/// after top-level value`, `... after object key`, `... in string literal`, ...; nullopt when the
/// text is one valid JSON value.
std::optional<std::string> go_json_syntax_error(std::string_view text);

/// The names Go gives a decoded JSON value's type: encoding/json's (UnmarshalTypeError.Value:
/// "object", "array", "number"), its reflect kind in the unstructured converter ("map", "slice",
/// "int64", "float64") and its dynamic type ("map[string]interface {}", "<nil>").
struct GoValueNames {
  std::string_view json, kind, type;
};
GoValueNames go_value_names(const boost::json::value& v);

/// strconv.ParseInt / ParseUint (base 10, 64 bits): the number, or nullopt with Go's error in `err`
/// (`strconv.ParseInt: parsing "x": invalid syntax`, `...: value out of range`).
std::optional<std::int64_t> go_parse_int(std::string_view s, std::string* err = nullptr);
std::optional<std::uint64_t> go_parse_uint(std::string_view s, std::string* err = nullptr);

/// Go's json.Marshal of a decoded JSON value: map keys sorted, compact, HTML characters escaped
/// (what a ControllerRevision's data holds after a patch, a last-applied annotation's text).
std::string go_marshal(const boost::json::value& v);

/// Go's %v of a decoded JSON value (map[k:v ...], [a b], strings unquoted).
std::string go_print(const boost::json::value& v);
/// Go's strconv.Quote (field.Invalid prints string values with %q): common/go_text.hpp's.
inline std::string go_quote(std::string_view s) { return gotext::quote(s); }

}  // namespace gpupool::embedded
