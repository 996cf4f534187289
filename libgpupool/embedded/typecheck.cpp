#include "embedded/typecheck.hpp"

#include <map>
#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace gpupool::embedded {

namespace json = boost::json;

namespace {

// One typed field: its path in the object ("[]" marks every element of an array, "{}" every value
// of a map), the Go struct that holds it and its Go type. The Go decoder's error names the struct
// and the path without the markers (k8s.io/api/{core,apps,batch,storage}/v1/types.go).
struct Field {
  std::string_view path, go_struct, go_type;
};

// PodSpec fields, relative to the pod spec (k8s.io/api/core/v1 PodSpec, Container, ...).
constexpr Field kPodSpec[] = {
    {"restartPolicy", "PodSpec", "string"},
    {"terminationGracePeriodSeconds", "PodSpec", "int64"},
    {"activeDeadlineSeconds", "PodSpec", "int64"},
    {"dnsPolicy", "PodSpec", "string"},
    {"nodeSelector{}", "PodSpec", "string"},
    {"serviceAccountName", "PodSpec", "string"},
    {"nodeName", "PodSpec", "string"},
    {"hostNetwork", "PodSpec", "bool"},
    {"hostIPC", "PodSpec", "bool"},
    {"hostPID", "PodSpec", "bool"},
    {"hostname", "PodSpec", "string"},
    {"subdomain", "PodSpec", "string"},
    {"schedulerName", "PodSpec", "string"},
    {"priorityClassName", "PodSpec", "string"},
    {"priority", "PodSpec", "int32"},
    {"volumes[].name", "Volume", "string"},
    {"tolerations[].key", "Toleration", "string"},
    {"tolerations[].operator", "Toleration", "string"},
    {"tolerations[].value", "Toleration", "string"},
    {"tolerations[].effect", "Toleration", "string"},
    {"tolerations[].tolerationSeconds", "Toleration", "int64"},
};
constexpr Field kContainer[] = {
    {"name", "Container", "string"},
    {"image", "Container", "string"},
    {"command[]", "Container", "string"},
    {"args[]", "Container", "string"},
    {"workingDir", "Container", "string"},
    {"imagePullPolicy", "Container", "string"},
    {"stdin", "Container", "bool"},
    {"tty", "Container", "bool"},
    {"ports[].name", "ContainerPort", "string"},
    {"ports[].hostPort", "ContainerPort", "int32"},
    {"ports[].containerPort", "ContainerPort", "int32"},
    {"ports[].protocol", "ContainerPort", "string"},
    {"ports[].hostIP", "ContainerPort", "string"},
    {"env[].name", "EnvVar", "string"},
    {"env[].value", "EnvVar", "string"},
    {"volumeMounts[].name", "VolumeMount", "string"},
    {"volumeMounts[].readOnly", "VolumeMount", "bool"},
    {"volumeMounts[].mountPath", "VolumeMount", "string"},
    {"volumeMounts[].subPath", "VolumeMount", "string"},
};
constexpr Field kMetadata[] = {
    {"metadata.name", "ObjectMeta", "string"},
    {"metadata.generateName", "ObjectMeta", "string"},
    {"metadata.namespace", "ObjectMeta", "string"},
    {"metadata.labels{}", "ObjectMeta", "string"},
    {"metadata.annotations{}", "ObjectMeta", "string"},
};

struct Table {
  std::map<std::string, std::pair<std::string_view, std::string_view>, std::less<>> fields;  // path -> struct, type
  std::set<std::string, std::less<>> prefixes;  // every proper prefix of a path (to prune the walk)
  void add(const std::string& path, std::string_view go_struct, std::string_view go_type) {
    fields[path] = {go_struct, go_type};
    prefixes.insert("");  // the object itself
    for (std::size_t i = 0; i < path.size(); ++i)
      if (path[i] == '.' || path[i] == '[' || path[i] == '{') prefixes.insert(path.substr(0, i));
  }
  void add_pod_spec(const std::string& prefix) {
    for (const auto& f : kPodSpec) add(prefix + std::string(f.path), f.go_struct, f.go_type);
    for (const char* list : {"containers[].", "initContainers[]."})
      for (const auto& f : kContainer) add(prefix + list + std::string(f.path), f.go_struct, f.go_type);
  }
};

Table make_table(std::string_view group, std::string_view resource) {
  Table t;
  for (const auto& f : kMetadata) t.add(std::string(f.path), f.go_struct, f.go_type);
  if (group.empty() && resource == "pods") {
    t.add_pod_spec("spec.");
  } else if (group == "apps" && resource == "deployments") {
    for (const char* k : {"replicas", "minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"})
      t.add(std::string("spec.") + k, "DeploymentSpec", "int32");
    t.add("spec.paused", "DeploymentSpec", "bool");
    t.add("spec.strategy.type", "DeploymentStrategy", "string");
    t.add_pod_spec("spec.template.spec.");
  } else if (group == "apps" && resource == "replicasets") {
    for (const char* k : {"replicas", "minReadySeconds"}) t.add(std::string("spec.") + k, "ReplicaSetSpec", "int32");
    t.add_pod_spec("spec.template.spec.");
  } else if (group == "batch" && resource == "jobs") {
    for (const char* k : {"parallelism", "completions", "backoffLimit", "backoffLimitPerIndex", "maxFailedIndexes",
                          "ttlSecondsAfterFinished"})
      t.add(std::string("spec.") + k, "JobSpec", "int32");
    t.add("spec.activeDeadlineSeconds", "JobSpec", "int64");
    t.add("spec.suspend", "JobSpec", "bool");
    t.add("spec.manualSelector", "JobSpec", "bool");
    t.add("spec.completionMode", "JobSpec", "string");
    t.add_pod_spec("spec.template.spec.");
  } else if (group.empty() && resource == "persistentvolumeclaims") {
    t.add("spec.accessModes[]", "PersistentVolumeClaimSpec", "string");
    t.add("spec.volumeName", "PersistentVolumeClaimSpec", "string");
    t.add("spec.storageClassName", "PersistentVolumeClaimSpec", "string");
    t.add("spec.volumeMode", "PersistentVolumeClaimSpec", "string");
  } else if (group.empty() && resource == "nodes") {
    t.add("spec.podCIDR", "NodeSpec", "string");
    t.add("spec.providerID", "NodeSpec", "string");
    t.add("spec.unschedulable", "NodeSpec", "bool");
    for (const char* k : {"key", "value", "effect"}) t.add(std::string("spec.taints[].") + k, "Taint", "string");
  } else if (group.empty() && resource == "services") {
    t.add("spec.type", "ServiceSpec", "string");
    t.add("spec.clusterIP", "ServiceSpec", "string");
    t.add("spec.selector{}", "ServiceSpec", "string");
    t.add("spec.ports[].name", "ServicePort", "string");
    t.add("spec.ports[].protocol", "ServicePort", "string");
    t.add("spec.ports[].port", "ServicePort", "int32");
    t.add("spec.ports[].nodePort", "ServicePort", "int32");
  } else if (group == "storage.k8s.io" && resource == "storageclasses") {
    t.add("provisioner", "StorageClass", "string");
    t.add("parameters{}", "StorageClass", "string");
    t.add("reclaimPolicy", "StorageClass", "string");
    t.add("allowVolumeExpansion", "StorageClass", "bool");
    t.add("volumeBindingMode", "StorageClass", "string");
  } else if (group.empty() && (resource == "configmaps" || resource == "secrets")) {
    t.add("data{}", resource == "secrets" ? "Secret" : "ConfigMap", resource == "secrets" ? "[]uint8" : "string");
  } else if (group.empty() && resource == "namespaces") {
    t.add("spec.finalizers[]", "NamespaceSpec", "FinalizerName");
  }
  return t;
}

const Table* table_for(const ResourceType& t) {
  static const std::map<std::pair<std::string, std::string>, Table> tables = [] {
    std::map<std::pair<std::string, std::string>, Table> m;
    for (auto [g, r] : std::initializer_list<std::pair<const char*, const char*>>{
             {"", "pods"}, {"apps", "deployments"}, {"apps", "replicasets"}, {"batch", "jobs"},
             {"", "persistentvolumeclaims"}, {"", "nodes"}, {"", "services"}, {"storage.k8s.io", "storageclasses"},
             {"", "configmaps"}, {"", "secrets"}, {"", "namespaces"}})
      m.emplace(std::make_pair(std::string(g), std::string(r)), make_table(g, r));
    return m;
  }();
  auto it = tables.find({t.group, t.resource});
  return it == tables.end() ? nullptr : &it->second;
}

// The JSON kind as encoding/json names it in UnmarshalTypeError.Value; for a number that does
// not fit an integer type, "number <literal>".
std::string json_kind(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string: return "string";
    case json::kind::bool_: return "bool";
    case json::kind::object: return "object";
    case json::kind::array: return "array";
    default: return "number";
  }
}

std::string number_text(const json::value& v) {
  if (v.is_int64()) return std::to_string(v.as_int64());
  if (v.is_uint64()) return std::to_string(v.as_uint64());
  return fmt::format("{}", v.as_double());
}

// Does `v` fit Go type `go_type`? nullopt when it does, else UnmarshalTypeError.Value.
std::optional<std::string> misfit(const json::value& v, std::string_view go_type) {
  if (v.is_null()) return std::nullopt;  // null leaves a Go field at its zero value
  if (go_type == "string" || go_type == "FinalizerName" || go_type == "[]uint8") {
    if (v.is_string()) return std::nullopt;
    return json_kind(v);
  }
  if (go_type == "bool") {
    if (v.is_bool()) return std::nullopt;
    return json_kind(v);
  }
  // int32 / int64
  if (!v.is_number()) return json_kind(v);
  const std::int64_t lo = go_type == "int32" ? INT32_MIN : INT64_MIN;
  const std::int64_t hi = go_type == "int32" ? INT32_MAX : INT64_MAX;
  if (v.is_int64() && v.as_int64() >= lo && v.as_int64() <= hi) return std::nullopt;
  if (v.is_uint64() && go_type == "int64" && v.as_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
  return "number " + number_text(v);
}

struct Misfit {
  std::string value, go_struct, path, go_type;
};

void walk(const Table& t, const json::value& v, std::string& path, std::string& go_path, std::optional<Misfit>& out) {
  if (out) return;
  if (auto f = t.fields.find(path); f != t.fields.end()) {
    if (auto m = misfit(v, f->second.second)) out = Misfit{*m, std::string(f->second.first), go_path, std::string(f->second.second)};
    return;
  }
  if (!t.prefixes.count(path)) return;
  const std::size_t plen = path.size(), glen = go_path.size();
  if (v.is_object()) {
    for (const auto& [k, child] : v.as_object()) {
      // A map's values ("{}") or a struct's named fields.
      path.resize(plen);
      go_path.resize(glen);
      if (t.prefixes.count(path + "{}") || t.fields.count(path + "{}")) {
        path += "{}";
      } else {
        if (!path.empty()) path += '.';
        path += std::string_view(k);
        if (!go_path.empty()) go_path += '.';
        go_path += std::string_view(k);
      }
      walk(t, child, path, go_path, out);
      if (out) break;
    }
  } else if (v.is_array()) {
    for (const auto& child : v.as_array()) {
      path.resize(plen);
      path += "[]";
      walk(t, child, path, go_path, out);
      if (out) break;
    }
  }
  path.resize(plen);
  go_path.resize(glen);
}

std::optional<Misfit> first_misfit(const ResourceType& t, const json::object& obj) {
  const Table* table = table_for(t);
  if (!table) return std::nullopt;
  std::optional<Misfit> out;
  std::string path, go_path;
  walk(*table, json::value(obj), path, go_path, out);
  return out;
}

}  // namespace

std::optional<std::string> type_error(const ResourceType& t, const json::object& obj) {
  auto m = first_misfit(t, obj);
  if (!m) return std::nullopt;
  return fmt::format("json: cannot unmarshal {} into Go struct field {}.{} of type {}", m->value, m->go_struct,
                     m->path, m->go_type);
}

std::optional<std::string> patch_type_error(const ResourceType& t, const json::object& patch) {
  auto m = first_misfit(t, patch);
  if (!m) return std::nullopt;
  return m->go_type;
}

void check_body_types(const ResourceType& t, const json::object& body) {
  // apimachinery runtime/serializer: NewBadRequest("<Kind> in version \"<v>\" cannot be handled as a <Kind>: <err>")
  if (auto e = type_error(t, body))
    throw StatusError::bad_request(
        fmt::format("{} in version \"{}\" cannot be handled as a {}: {}", t.kind, t.version, t.kind, *e));
}

void check_patched_types(const ResourceType& t, const json::object& patched, bool strategic) {
  // apiserver/pkg/endpoints/handlers/patch.go: errors.NewInvalid(schema.GroupKind{}, "",
  // field.ErrorList{field.Invalid(field.NewPath("patch"), <patch or patched object>, err)}).
  std::string value, err;
  if (strategic) {
    auto e = patch_type_error(t, patched);
    if (!e) return;
    value = go_print(json::value(patched));
    err = "unrecognized type: " + *e;
  } else {
    auto e = type_error(t, patched);
    if (!e) return;
    value = json::serialize(patched);
    err = *e;
  }
  const std::string cause = fmt::format("Invalid value: {}: {}", go_quote(value), err);
  throw StatusError(422, "Invalid", fmt::format(" \"\" is invalid: patch: {}", cause), "", "", "",
                    {{"FieldValueInvalid", cause, "patch"}});
}

std::string go_print(const json::value& v) {
  switch (v.kind()) {
    case json::kind::object: {
      // fmt prints a map with its keys sorted.
      std::vector<std::pair<std::string, const json::value*>> kv;
      for (const auto& [k, c] : v.as_object()) kv.emplace_back(std::string(k), &c);
      std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::string out = "map[";
      for (std::size_t i = 0; i < kv.size(); ++i) out += (i ? " " : "") + kv[i].first + ":" + go_print(*kv[i].second);
      return out + "]";
    }
    case json::kind::array: {
      std::string out = "[";
      bool first = true;
      for (const auto& c : v.as_array()) {
        if (!first) out += " ";
        first = false;
        out += go_print(c);
      }
      return out + "]";
    }
    case json::kind::string: return std::string(v.as_string());
    case json::kind::bool_: return v.as_bool() ? "true" : "false";
    case json::kind::null: return "<nil>";
    default: return number_text(v);
  }
}

std::string go_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace gpupool::embedded
