// gpupool/names.hpp — Kubernetes name rules (k8s.io/apimachinery/pkg/util/validation).
//
// Each rule comes in three forms:
//   - `<rule>_errors(value)`: every message the API server would give, worded as it words them
//     (empty when the value is valid);
//   - `is_<rule>(value)`: true when valid (no allocation);
//   - `validate_<rule>(value, field)`: throws ValidationError(field, value, messages joined by "; ").
//
// Which kinds use which rule (apis/core/validation): most object names (Pod, Deployment, Job, PVC,
// MPIJob...) are DNS-1123 subdomains; Namespaces and container names are DNS-1123 labels; Services
// are DNS-1035 labels; label keys, annotation keys and taint/toleration keys are qualified names.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

/// DNS-1123 label: at most 63 characters of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
std::vector<std::string> dns1123_label_errors(std::string_view value);
bool is_dns1123_label(std::string_view value) noexcept;
void validate_dns1123_label(std::string_view value, std::string_view field);

/// DNS-1123 subdomain: at most 253 characters, dot-separated DNS-1123 labels.
std::vector<std::string> dns1123_subdomain_errors(std::string_view value);
bool is_dns1123_subdomain(std::string_view value) noexcept;
void validate_dns1123_subdomain(std::string_view value, std::string_view field);

/// Wildcard DNS-1123 subdomain ("*.example.com": "*." then a DNS-1123 subdomain, at most 253
/// characters in all): an Ingress rule's or TLS entry's wildcard host.
std::vector<std::string> wildcard_dns1123_subdomain_errors(std::string_view value);

/// DNS-1035 label: like a DNS-1123 label but must start with a letter (Service names).
std::vector<std::string> dns1035_label_errors(std::string_view value);
bool is_dns1035_label(std::string_view value) noexcept;
void validate_dns1035_label(std::string_view value, std::string_view field);

/// Qualified name (label, annotation and taint keys): an optional DNS-1123 subdomain prefix and
/// "/", then a name of at most 63 characters of `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
std::vector<std::string> qualified_name_errors(std::string_view value);
bool is_qualified_name(std::string_view value) noexcept;
void validate_qualified_name(std::string_view value, std::string_view field);

/// Label value (also taint and toleration values): empty, or at most 63 characters of
/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
std::vector<std::string> label_value_errors(std::string_view value);
bool is_label_value(std::string_view value) noexcept;
void validate_label_value(std::string_view value, std::string_view field);

/// Environment variable name (container env[].name), as v1.32 checks it with the
/// RelaxedEnvironmentVariableValidation gate on (the default since v1.32): non-empty and only
/// printable ASCII other than '=' — `1X` and `A B` are valid, `é` and `A=B` are not.
std::vector<std::string> env_var_name_errors(std::string_view value);
bool is_env_var_name(std::string_view value) noexcept;
void validate_env_var_name(std::string_view value, std::string_view field);

/// Port name (IANA_SVC_NAME, IsValidPortName): container and service port names, and a probe's
/// named port — at most 15 of `[-a-z0-9]`, a letter, no `--`, no leading or trailing '-'.
std::vector<std::string> port_name_errors(std::string_view value);
bool is_port_name(std::string_view value) noexcept;

/// ConfigMap / Secret key (IsConfigMapKey): at most 253 of `[-._a-zA-Z0-9]`, not `.`/`..`/`..*`.
std::vector<std::string> config_map_key_errors(std::string_view value);
bool is_config_map_key(std::string_view value) noexcept;

/// Annotation key (ValidateAnnotations): a qualified name once lower-cased, so `Example.com/key`
/// is valid; all keys and values of an object's annotations together hold at most
/// kMaxAnnotationsBytes bytes.
std::vector<std::string> annotation_key_errors(std::string_view key);
inline constexpr std::size_t kMaxAnnotationsBytes = 256 * 1024;

/// HTTP header name (IsHTTPHeaderName): `[-A-Za-z0-9]+`.
std::vector<std::string> http_header_name_errors(std::string_view value);
bool is_http_header_name(std::string_view value) noexcept;

/// Path segment name (apimachinery path.ValidatePathSegmentName): not `.` or `..`, no `/` or `%`;
/// with `prefix` (a generateName: IsValidPathSegmentPrefix) only the characters. Object names of
/// RBAC's kinds, and of a PodDisruptionBudget (rest.BeforeCreate's only name rule for it).
std::vector<std::string> path_segment_errors(std::string_view value, bool prefix = false);
}  // namespace gpupool
