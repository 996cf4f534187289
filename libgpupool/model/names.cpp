// Name rules and their messages follow k8s.io/apimachinery/pkg/util/validation/validation.go
// (IsDNS1123Label, IsDNS1123Subdomain, IsDNS1035Label, IsQualifiedName, IsValidLabelValue,
// MaxLenError, RegexError, EmptyError). The patterns are matched by hand: they are simple, and
// std::regex would dominate the cost of validating every object.
#include "gpupool/names.hpp"

#include "common/ascii.hpp"
#include "common/join.hpp"
#include "gpupool/error.hpp"

namespace gpupool {
namespace {

constexpr std::size_t kLabelMax = 63;       // DNS1123LabelMaxLength, DNS1035LabelMaxLength
constexpr std::size_t kSubdomainMax = 253;  // DNS1123SubdomainMaxLength
constexpr std::size_t kQualifiedNameMax = 63;
constexpr std::size_t kLabelValueMax = 63;

constexpr std::string_view kDns1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDns1123SubdomainFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDns1035LabelFmt = "[a-z]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kQualifiedNameFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

using ascii::alnum;
using ascii::lower_alnum;

// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (first_letter: `[a-z]` first, DNS-1035).
bool matches_label(std::string_view s, bool first_letter) noexcept {
  if (s.empty()) return false;
  if (first_letter ? !(s.front() >= 'a' && s.front() <= 'z') : !lower_alnum(s.front())) return false;
  if (!lower_alnum(s.back())) return false;
  for (char c : s)
    if (!lower_alnum(c) && c != '-') return false;
  return true;
}

bool matches_subdomain(std::string_view s) noexcept {
  if (s.empty()) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = s.find('.', start);
    if (!matches_label(s.substr(start, dot == std::string_view::npos ? dot : dot - start), false)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
bool matches_qualified(std::string_view s) noexcept {
  if (s.empty() || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

std::string max_len_error(std::size_t n) { return "must be no more than " + std::to_string(n) + " characters"; }

// RegexError(msg, fmt, examples...): "msg (e.g. 'a' or 'b', regex used for validation is 'fmt')".
std::string regex_error(std::string_view msg, std::string_view fmt, std::initializer_list<std::string_view> examples) {
  std::string out(msg);
  out += " (e.g. ";
  bool first = true;
  for (auto e : examples) {
    if (!first) out += " or ";
    first = false;
    out += '\'';
    out += e;
    out += "', ";
  }
  out += "regex used for validation is '";
  out += fmt;
  out += "')";
  return out;
}

void throw_if(const std::vector<std::string>& msgs, std::string_view value, std::string_view field) {
  if (!msgs.empty()) throw ValidationError(std::string(field), std::string(value), text::join(msgs, "; "));
}

}  // namespace

std::vector<std::string> dns1123_label_errors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelMax) errs.push_back(max_len_error(kLabelMax));
  if (!matches_label(value, false)) {
    // IsDNS1123Label: a valid subdomain that is not a label can only differ by its dots.
    if (matches_subdomain(value))
      errs.emplace_back("must not contain dots");
    else
      errs.push_back(
          regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                      "'-', and must start and end with an alphanumeric character",
                      kDns1123LabelFmt, {"my-name", "123-abc"}));
  }
  return errs;
}
bool is_dns1123_label(std::string_view value) noexcept {
  return value.size() <= kLabelMax && matches_label(value, false);
}
void validate_dns1123_label(std::string_view value, std::string_view field) {
  if (!is_dns1123_label(value)) throw_if(dns1123_label_errors(value), value, field);
}

std::vector<std::string> dns1123_subdomain_errors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kSubdomainMax) errs.push_back(max_len_error(kSubdomainMax));
  if (!matches_subdomain(value))
    errs.push_back(
        regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                    "'-' or '.', and must start and end with an alphanumeric character",
                    kDns1123SubdomainFmt, {"example.com"}));
  return errs;
}
bool is_dns1123_subdomain(std::string_view value) noexcept {
  return value.size() <= kSubdomainMax && matches_subdomain(value);
}
void validate_dns1123_subdomain(std::string_view value, std::string_view field) {
  if (!is_dns1123_subdomain(value)) throw_if(dns1123_subdomain_errors(value), value, field);
}

std::vector<std::string> wildcard_dns1123_subdomain_errors(std::string_view value) {
  // IsWildcardDNS1123Subdomain: the length, then wildcardDNS1123SubdomainFmt.
  std::vector<std::string> errs;
  if (value.size() > kSubdomainMax) errs.push_back(max_len_error(kSubdomainMax));
  if (value.substr(0, 2) != "*." || !matches_subdomain(value.substr(2)))
    errs.push_back(regex_error(
        "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist "
        "of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
        std::string("\\*\\.") + std::string(kDns1123SubdomainFmt), {"*.example.com"}));
  return errs;
}

std::vector<std::string> dns1035_label_errors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelMax) errs.push_back(max_len_error(kLabelMax));
  if (!matches_label(value, true))
    errs.push_back(
        regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                    "with an alphabetic character, and end with an alphanumeric character",
                    kDns1035LabelFmt, {"my-name", "abc-123"}));
  return errs;
}
bool is_dns1035_label(std::string_view value) noexcept {
  return value.size() <= kLabelMax && matches_label(value, true);
}
void validate_dns1035_label(std::string_view value, std::string_view field) {
  if (!is_dns1035_label(value)) throw_if(dns1035_label_errors(value), value, field);
}

namespace {
constexpr std::string_view kQualifiedNameErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character";
}

std::vector<std::string> qualified_name_errors(std::string_view value) {
  std::vector<std::string> errs;
  std::string_view name = value;
  std::size_t slash = value.find('/');
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) {
      errs.push_back("a qualified name " +
                     regex_error(kQualifiedNameErrMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}) +
                     " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return errs;
    }
    std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.emplace_back("prefix part must be non-empty");
    } else {
      for (auto& m : dns1123_subdomain_errors(prefix)) errs.push_back("prefix part " + m);
    }
  }
  if (name.empty())
    errs.emplace_back("name part must be non-empty");
  else if (name.size() > kQualifiedNameMax)
    errs.push_back("name part " + max_len_error(kQualifiedNameMax));
  if (!matches_qualified(name))
    errs.push_back("name part " +
                   regex_error(kQualifiedNameErrMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}));
  return errs;
}
bool is_qualified_name(std::string_view value) noexcept {
  std::string_view name = value;
  std::size_t slash = value.find('/');
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) return false;
    if (!is_dns1123_subdomain(value.substr(0, slash))) return false;
    name = value.substr(slash + 1);
  }
  return name.size() <= kQualifiedNameMax && matches_qualified(name);
}
void validate_qualified_name(std::string_view value, std::string_view field) {
  if (!is_qualified_name(value)) throw_if(qualified_name_errors(value), value, field);
}

std::vector<std::string> label_value_errors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMax) errs.push_back(max_len_error(kLabelValueMax));
  if (!value.empty() && !matches_qualified(value))
    errs.push_back(
        regex_error("a valid label must be an empty string or consist of alphanumeric characters, '-', "
                    "'_' or '.', and must start and end with an alphanumeric character",
                    kLabelValueFmt, {"MyValue", "my_value", "12345"}));
  return errs;
}
bool is_label_value(std::string_view value) noexcept {
  return value.size() <= kLabelValueMax && (value.empty() || matches_qualified(value));
}
void validate_label_value(std::string_view value, std::string_view field) {
  if (!is_label_value(value)) throw_if(label_value_errors(value), value, field);
}

// staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go: IsRelaxedEnvVarName
// (pkg/apis/core/validation ValidateEnv uses it when AllowRelaxedEnvironmentVariableValidation).
bool is_env_var_name(std::string_view value) noexcept {
  if (value.empty()) return false;
  for (unsigned char c : value)
    if (c < 0x20 || c > 0x7e || c == '=') return false;  // Go ranges over runes: any byte >= 0x80 is non-ASCII
  return true;
}

std::vector<std::string> env_var_name_errors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.empty())
    errs.push_back("environment variable name must be non-empty");
  else if (!is_env_var_name(value))
    errs.push_back("a valid environment variable name must consist only of printable ASCII characters other than '='");
  return errs;
}

void validate_env_var_name(std::string_view value, std::string_view field) {
  if (!is_env_var_name(value)) throw_if(env_var_name_errors(value), value, field);
}

// IsValidPortName: each failed condition adds its message, in this order.
std::vector<std::string> port_name_errors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > 15) errs.push_back(max_len_error(15));
  bool charset = !value.empty(), letter = false;
  for (char c : value) {
    charset = charset && (lower_alnum(c) || c == '-');
    letter = letter || (c >= 'a' && c <= 'z');
  }
  if (!charset) errs.push_back("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
  if (!letter) errs.push_back("must contain at least one letter (a-z)");
  if (value.find("--") != std::string_view::npos) errs.push_back("must not contain consecutive hyphens");
  if (!value.empty() && (value.front() == '-' || value.back() == '-'))
    errs.push_back("must not begin or end with a hyphen");
  return errs;
}
bool is_port_name(std::string_view value) noexcept { return port_name_errors(value).empty(); }

// IsConfigMapKey: MaxLenError(253), the regex, then hasChDirPrefix.
std::vector<std::string> config_map_key_errors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kSubdomainMax) errs.push_back(max_len_error(kSubdomainMax));
  bool charset = !value.empty();
  for (char c : value) charset = charset && (alnum(c) || c == '-' || c == '.' || c == '_');
  if (!charset)
    errs.push_back(regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                               "[-._a-zA-Z0-9]+", {"key.name", "KEY_NAME", "key-name"}));
  if (value == ".")
    errs.push_back("must not be '.'");
  else if (value == "..")
    errs.push_back("must not be '..'");
  else if (value.starts_with(".."))
    errs.push_back("must not start with '..'");
  return errs;
}
bool is_config_map_key(std::string_view value) noexcept { return config_map_key_errors(value).empty(); }

// ValidateAnnotations: "the rule is QualifiedName except that case doesn't matter".
std::vector<std::string> annotation_key_errors(std::string_view key) {
  std::string lower(key);
  for (auto& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return qualified_name_errors(lower);
}

// IsHTTPHeaderName.
std::vector<std::string> http_header_name_errors(std::string_view value) {
  bool ok = !value.empty();
  for (char c : value) ok = ok && (alnum(c) || c == '-');
  if (ok) return {};
  return {regex_error("a valid HTTP header must consist of alphanumeric characters or '-'", "[-A-Za-z0-9]+",
                      {"X-Header-Name"})};
}
bool is_http_header_name(std::string_view value) noexcept { return http_header_name_errors(value).empty(); }

// IsValidPathSegmentName / IsValidPathSegmentPrefix (apimachinery/pkg/api/validation/path/name.go).
std::vector<std::string> path_segment_errors(std::string_view value, bool prefix) {
  if (!prefix && (value == "." || value == "..")) return {"may not be '" + std::string(value) + "'"};
  std::vector<std::string> errs;
  for (const char* bad : {"/", "%"})
    if (value.find(bad) != std::string_view::npos) errs.push_back(std::string("may not contain '") + bad + "'");
  return errs;
}

}  // namespace gpupool
