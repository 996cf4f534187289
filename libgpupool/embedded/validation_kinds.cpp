#include "embedded/validation_kinds.hpp"

#include <algorithm>
#include <regex>
#include <set>
#include <string>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"
#include "embedded/typecheck.hpp"
#include "gpupool/names.hpp"
#include "gpupool/quantity.hpp"

namespace gpupool::embedded {

namespace json = boost::json;
using util::object_at;
using util::string_of;

namespace {

std::vector<std::string> sorted_keys(const json::object* o) {
  std::vector<std::string> out;
  if (o)
    for (const auto& [k, v] : *o) out.emplace_back(k);
  std::sort(out.begin(), out.end());
  return out;
}

// validation.IsConfigMapKey.
std::vector<std::string> config_map_key_errors(const std::string& key) {
  std::vector<std::string> out;
  if (key.size() > 253) out.push_back("must be no more than 253 characters");
  static const std::regex re("^[-._a-zA-Z0-9]+$");
  if (!std::regex_match(key, re))
    out.push_back("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
                  "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')");
  if (key == ".") out.push_back("must not be '.'");
  else if (key == "..") out.push_back("must not be '..'");
  else if (key.rfind("..", 0) == 0) out.push_back("must not start with '..'");
  return out;
}

void keys(const json::object* data, const char* field, std::vector<StatusCause>& causes) {
  for (const auto& k : sorted_keys(data))
    for (const auto& msg : config_map_key_errors(k))
      causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(k), msg), fmt::format("{}[{}]", field, k)});
}

void not_supported(const json::object& o, std::string_view key, std::string_view field,
                   std::initializer_list<std::string_view> allowed, std::vector<StatusCause>& causes) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_string()) return;
  const std::string_view s = v->as_string();
  if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return;
  std::string list;
  for (auto a : allowed) list += (list.empty() ? "" : ", ") + go_quote(a);
  causes.push_back({"FieldValueNotSupported", fmt::format("Unsupported value: {}: supported values: {}", go_quote(s), list),
                    std::string(field)});
}

// ValidateNonnegativeOrPercent for an IntOrString.
void non_negative_or_percent(const json::object* o, std::string_view key, std::string field, std::vector<StatusCause>& causes) {
  const json::value* v = o ? o->if_contains(key) : nullptr;
  if (!v) return;
  if (v->is_int64()) return non_negative(o, key, std::move(field), causes);
  if (!v->is_string()) return;
  static const std::regex percent("^[0-9]+%$");
  const std::string s(v->as_string());
  if (!std::regex_match(s, percent))
    causes.push_back({"FieldValueInvalid",
                      // the value is the IntOrString itself, printed with %#v
                      fmt::format("Invalid value: intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}: a valid percent string "
                                  "must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for "
                                  "validation is '[0-9]+%')",
                                  go_quote(s)),
                      std::move(field)});
}

}  // namespace

void non_negative(const json::object* o, std::string_view key, std::string field, std::vector<StatusCause>& causes) {
  const json::value* v = o ? o->if_contains(key) : nullptr;
  if (v && v->is_int64() && v->as_int64() < 0)
    causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: must be greater than or equal to 0", v->as_int64()),
                      std::move(field)});
}

void default_kind(const ResourceType& t, json::object& obj) {
  if (t.group != "rbac.authorization.k8s.io" || (t.resource != "rolebindings" && t.resource != "clusterrolebindings")) return;
  // SetDefaults_RoleBinding / _ClusterRoleBinding and SetDefaults_Subject.
  if (auto* ref = obj.if_contains("roleRef"); ref && ref->is_object() && string_of(&ref->as_object(), "apiGroup").empty())
    ref->as_object()["apiGroup"] = "rbac.authorization.k8s.io";
  if (auto* subs = obj.if_contains("subjects"); subs && subs->is_array())
    for (auto& s : subs->as_array()) {
      if (!s.is_object()) continue;
      auto& so = s.as_object();
      const std::string kind = string_of(&so, "kind");
      if (string_of(&so, "apiGroup").empty() && (kind == "User" || kind == "Group")) so["apiGroup"] = "rbac.authorization.k8s.io";
    }
}

void validate_kind(const ResourceType& t, const json::object& obj, std::vector<StatusCause>& causes) {
  const bool core = t.group.empty();
  const json::object* spec = object_at(obj, {"spec"});
  if (core && t.resource == "configmaps") {
    // ValidateConfigMap: data keys (and a key also in binaryData), then binaryData keys.
    const json::object* data = object_at(obj, {"data"});
    const json::object* binary = object_at(obj, {"binaryData"});
    for (const auto& k : sorted_keys(data)) {
      for (const auto& msg : config_map_key_errors(k))
        causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(k), msg), fmt::format("data[{}]", k)});
      if (binary && binary->contains(k))
        causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: duplicate of key present in binaryData", go_quote(k)),
                          fmt::format("data[{}]", k)});
    }
    keys(binary, "binaryData", causes);
  } else if (core && t.resource == "secrets") {
    // ValidateSecret: data keys, then what the type requires.
    const json::object* data = object_at(obj, {"data"});
    keys(data, "data", causes);
    const std::string type = string_of(&obj, "type");
    auto has = [&](const char* k) { return data && data->contains(k); };
    auto required = [&](std::string field) { causes.push_back({"FieldValueRequired", "Required value", std::move(field)}); };
    if (type == "kubernetes.io/service-account-token") {
      if (string_of(object_at(obj, {"metadata", "annotations"}), "kubernetes.io/service-account.name").empty())
        required("metadata.annotations[kubernetes.io/service-account.name]");
    } else if (type == "kubernetes.io/dockercfg" && !has(".dockercfg")) {
      required("data[.dockercfg]");
    } else if (type == "kubernetes.io/dockerconfigjson" && !has(".dockerconfigjson")) {
      required("data[.dockerconfigjson]");
    } else if (type == "kubernetes.io/basic-auth" && !has("username") && !has("password")) {
      required("data[username]");
      required("data[password]");
    } else if (type == "kubernetes.io/ssh-auth" && string_of(data, "ssh-privatekey").empty()) {
      required("data[ssh-privatekey]");
    } else if (type == "kubernetes.io/tls") {
      if (!has("tls.crt")) required("data[tls.crt]");
      if (!has("tls.key")) required("data[tls.key]");
    }
  } else if (core && t.resource == "resourcequotas") {
    // ValidateResourceQuotaSpec: each hard entry's name (ValidateResourceQuotaResourceName), then
    // its value (ValidateNonnegativeQuantity). (The names print unquoted: a ResourceName.)
    static const std::set<std::string, std::less<>> kStandard = {
        "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
        "persistentvolumeclaims", "services.nodeports", "services.loadbalancers", "requests.cpu", "requests.memory",
        "requests.storage", "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "cpu",
        "memory", "ephemeral-storage", "storage"};
    for (const auto& k : sorted_keys(spec ? object_at(*spec, {"hard"}) : nullptr)) {
      const std::string field = fmt::format("spec.hard[{}]", k);
      const auto errs = qualified_name_errors(k);
      for (const auto& e : errs) causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", k, e), field});
      const bool hugepages = k.rfind("hugepages-", 0) == 0 || k.rfind("requests.hugepages-", 0) == 0;
      if (errs.empty() && k.find('/') == std::string::npos && !kStandard.count(k) && !hugepages) {
        // validateResourceName's IsStandardResourceName, then the quota's own list (the same names).
        causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: must be a standard resource type or fully qualified", k), field});
        causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: must be a standard resource for quota", k), field});
      }
      const json::value& v = spec->at("hard").at(k);
      if (!v.is_string()) continue;
      try {
        if (Quantity::parse(std::string(v.as_string())).is_negative())
          causes.push_back({"FieldValueInvalid",
                            fmt::format("Invalid value: {}: must be greater than or equal to 0", go_quote(v.as_string())),
                            fmt::format("spec.hard[{}]", k)});
      } catch (const ValidationError&) {
        // decoding refused it
      }
    }
  } else if (core && t.resource == "limitranges") {
    // validateLimitRangeTypeName: a standard type, or a qualified name with a prefix.
    if (const json::array* limits = spec ? util::array_at(*spec, {}, "limits") : nullptr)
      for (std::size_t i = 0; i < limits->size(); ++i) {
        const std::string type = (*limits)[i].is_object() ? string_of(&(*limits)[i].as_object(), "type") : "";
        const std::string field = fmt::format("spec.limits[{}].type", i);
        const auto errs = qualified_name_errors(type);
        for (const auto& e : errs) causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(type), e), field});
        if (errs.empty() && type.find('/') == std::string::npos && type != "Pod" && type != "Container" &&
            type != "PersistentVolumeClaim")
          causes.push_back({"FieldValueInvalid",
                            fmt::format("Invalid value: {}: must be a standard limit type or fully qualified", go_quote(type)), field});
      }
  } else if (core && t.resource == "persistentvolumes" && spec) {
    not_supported(*spec, "persistentVolumeReclaimPolicy", "spec.persistentVolumeReclaimPolicy", {"Delete", "Recycle", "Retain"},
                  causes);
  } else if (t.group == "storage.k8s.io" && t.resource == "storageclasses") {
    not_supported(obj, "reclaimPolicy", "reclaimPolicy", {"Delete", "Retain"}, causes);
    not_supported(obj, "volumeBindingMode", "volumeBindingMode", {"Immediate", "WaitForFirstConsumer"}, causes);
  } else if (t.group == "rbac.authorization.k8s.io" && (t.resource == "roles" || t.resource == "clusterroles")) {
    // ValidatePolicyRule for each rule.
    if (const json::array* rules = util::array_at(obj, {}, "rules"))
      for (std::size_t i = 0; i < rules->size(); ++i) {
        if (!(*rules)[i].is_object()) continue;
        const auto& r = (*rules)[i].as_object();
        auto count = [&](const char* k) { const json::array* a = util::array_at(r, {}, k); return a ? a->size() : 0; };
        const std::string path = fmt::format("rules[{}]", i);
        if (count("verbs") == 0)
          causes.push_back({"FieldValueRequired", "Required value: verbs must contain at least one value", path + ".verbs"});
        if (count("nonResourceURLs") > 0) continue;  // (their own rules are not reproduced)
        if (count("apiGroups") == 0)
          causes.push_back({"FieldValueRequired", "Required value: resource rules must supply at least one api group",
                            path + ".apiGroups"});
        if (count("resources") == 0)
          causes.push_back({"FieldValueRequired", "Required value: resource rules must supply at least one resource",
                            path + ".resources"});
      }
  } else if (t.group == "rbac.authorization.k8s.io" && (t.resource == "rolebindings" || t.resource == "clusterrolebindings")) {
    const json::object* ref = object_at(obj, {"roleRef"});
    const std::string kind = string_of(ref, "kind");
    if (kind != "Role" && kind != "ClusterRole")
      causes.push_back({"FieldValueNotSupported",
                        fmt::format("Unsupported value: {}: supported values: \"Role\", \"ClusterRole\"", go_quote(kind)), "roleRef.kind"});
    if (string_of(ref, "name").empty()) causes.push_back({"FieldValueRequired", "Required value", "roleRef.name"});
    if (const json::array* subs = util::array_at(obj, {}, "subjects"))
      for (std::size_t i = 0; i < subs->size(); ++i) {
        const json::object* s = (*subs)[i].is_object() ? &(*subs)[i].as_object() : nullptr;
        if (string_of(s, "name").empty()) causes.push_back({"FieldValueRequired", "Required value", fmt::format("subjects[{}].name", i)});
        const std::string sk = string_of(s, "kind");
        if (sk != "ServiceAccount" && sk != "User" && sk != "Group")
          causes.push_back({"FieldValueNotSupported",
                            fmt::format("Unsupported value: {}: supported values: \"ServiceAccount\", \"User\", \"Group\"", go_quote(sk)),
                            fmt::format("subjects[{}].kind", i)});
      }
  } else if (t.group == "scheduling.k8s.io" && t.resource == "priorityclasses") {
    // ValidatePriorityClass: user classes at most HighestUserDefinablePriority (system- names aside).
    const json::value* v = obj.if_contains("value");
    if (v && v->is_int64() && v->as_int64() > 1000000000 && string_of(object_at(obj, {"metadata"}), "name").rfind("system-", 0) != 0)
      causes.push_back({"FieldValueForbidden", "Forbidden: maximum allowed value of a user defined priority is 1000000000", "value"});
  } else if (t.group == "policy" && t.resource == "poddisruptionbudgets") {
    non_negative_or_percent(spec, "minAvailable", "spec.minAvailable", causes);
    non_negative_or_percent(spec, "maxUnavailable", "spec.maxUnavailable", causes);
  } else if (t.group == "batch" && t.resource == "jobs") {
    non_negative(spec, "ttlSecondsAfterFinished", "spec.ttlSecondsAfterFinished", causes);
  } else if (t.group == "apps" && t.resource == "deployments") {
    non_negative(spec, "minReadySeconds", "spec.minReadySeconds", causes);
    non_negative(spec, "revisionHistoryLimit", "spec.revisionHistoryLimit", causes);
  }
}

}  // namespace gpupool::embedded
