// The API server's warnings on pods and pod templates (pkg/api/pod/warnings.go
// warningsForPodSpecAndMeta, v1.32.13 as the oracle runs it), in its order: they reach the client as Warning headers
// and kubectl prints each as "Warning: ...". Not modelled: node affinity terms, pod (anti-)affinity null selectors,
// overlapping projected paths, seccomp/AppArmor annotations, IP formats.
#include "embedded/warnings.hpp"
#include "embedded/validation_kinds.hpp"

#include "gpupool/error.hpp"
#include "gpupool/quantity.hpp"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string_view>

namespace gpupool::embedded {

namespace json = boost::json;

namespace {

// pkg/api/node/util.go deprecatedNodeLabels.
const std::map<std::string_view, std::string_view> kDeprecatedNodeLabels = {
    {"beta.kubernetes.io/arch", "deprecated since v1.14; use \"kubernetes.io/arch\" instead"},
    {"beta.kubernetes.io/os", "deprecated since v1.14; use \"kubernetes.io/os\" instead"},
    {"failure-domain.beta.kubernetes.io/region",
     "deprecated since v1.17; use \"topology.kubernetes.io/region\" instead"},
    {"failure-domain.beta.kubernetes.io/zone", "deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead"},
    {"beta.kubernetes.io/instance-type", "deprecated since v1.17; use \"node.kubernetes.io/instance-type\" instead"},
    {"app.kubernetes.io/created-by", "deprecated since v1.9"},
    {"scheduler.alpha.kubernetes.io/preferAvoidPods", "deprecated since v1.22; use Taints and Tolerations instead"},
    {"node-role.kubernetes.io/master", "use \"node-role.kubernetes.io/control-plane\" instead"},
};

// warnings.go deprecatedAnnotations.
constexpr std::pair<std::string_view, std::string_view> kDeprecatedAnnotations[] = {
    {"scheduler.alpha.kubernetes.io/critical-pod",
     "non-functional in v1.16+; use the \"priorityClassName\" field instead"},
    {"security.alpha.kubernetes.io/sysctls", "non-functional in v1.11+; use the \"sysctls\" field instead"},
    {"security.alpha.kubernetes.io/unsafe-sysctls", "non-functional in v1.11+; use the \"sysctls\" field instead"},
};

// Removed or deprecated volume plugins, in the order warnings.go checks them: the JSON field, the
// name the warning gives it (the Go field's), the message.
struct DeprecatedVolume {
  std::string_view json, shown, message;
};
constexpr DeprecatedVolume kDeprecatedVolumes[] = {
    {"photonPersistentDisk", "photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"},
    {"gitRepo", "gitRepo", "deprecated in v1.11"},
    {"scaleIO", "scaleIO", "deprecated in v1.16, non-functional in v1.22+"},
    {"flocker", "flocker", "deprecated in v1.22, non-functional in v1.25+"},
    {"storageos", "storageOS", "deprecated in v1.22, non-functional in v1.25+"},
    {"quobyte", "quobyte", "deprecated in v1.22, non-functional in v1.25+"},
    {"glusterfs", "glusterfs", "deprecated in v1.25, non-functional in v1.26+"},
    {"cephfs", "cephfs", "deprecated in v1.28, non-functional in v1.31+"},
    {"rbd", "rbd", "deprecated in v1.28, non-functional in v1.31+"},
};

std::string str_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::int64_t int_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_int64() ? v->as_int64() : 0;
}

const json::object* object_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_object() ? &v->as_object() : nullptr;
}

const json::array* array_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_array() ? &v->as_array() : nullptr;
}

/// A memory or ephemeral-storage quantity with a fraction of a byte, in Go's canonical form.
std::optional<std::string> fractional_bytes(const json::value* v) {
  if (!v || !v->is_string()) return std::nullopt;
  // MilliValue()%1000 as Go computes it (with its overflow: "9223372036854775807" is whole).
  if (auto g = go_parse_quantity(std::string(v->as_string())); g && g->milli_value() % 1000 != 0)
    return g->value.to_string();
  return std::nullopt;
}

/// Go's %q of an ASCII string: quotes, with " and \ escaped.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

namespace {

// warningsForOverlappingVirtualPaths (pkg/api/pod/warnings.go): the files a configMap, secret,
// downward API or projected volume maps must not land on one another ("a" and "a/b" overlap).
struct PathAndSource {
  std::string path, source;
  bool operator==(const PathAndSource&) const = default;
  std::string shown() const { return source.empty() ? quoted(path) : fmt::format("{} ({})", quoted(path), source); }
};
std::vector<PathAndSource> paths_of(const json::array* items, const std::string& source) {
  std::vector<PathAndSource> out;
  if (items)
    for (const auto& it : *items) out.push_back({it.is_object() ? str_of(it.as_object(), "path") : "", source});
  return out;
}
// checkForOverlap: an equal entry, or one path a directory of the other.
std::vector<PathAndSource> overlaps(const std::vector<PathAndSource>& haystack, const PathAndSource& needle) {
  std::vector<PathAndSource> out;
  if (needle.path.empty()) return out;
  for (const auto& item : haystack) {
    if (item.path.empty()) continue;
    if (item == needle || (item.path + "/").starts_with(needle.path + "/") ||
        (needle.path + "/").starts_with(item.path + "/"))
      out.push_back(item);
  }
  return out;
}
std::string trim_slashes(std::string p) {
  while (!p.empty() && p.back() == '/') p.pop_back();
  return p;
}
std::vector<std::string> overlapping_virtual_paths(const json::object& spec) {
  std::vector<std::string> out;
  const auto* vols = array_of(spec, "volumes");
  if (!vols) return out;
  for (const auto& vv : *vols) {
    if (!vv.is_object()) continue;
    const auto& v = vv.as_object();
    const std::string name = str_of(v, "name");
    auto warn = [&](const std::string& desc, const std::string& body) {
      out.push_back(fmt::format("volume {} ({}): overlapping paths: {}", quoted(name), desc, body));
    };
    // checkVolumeMappingForOverlap for one source's items.
    auto mapping = [&](const json::object* src, const std::string& desc) {
      const json::array* items = src ? array_of(*src, "items") : nullptr;
      if (!items) return;
      std::vector<PathAndSource> all;
      for (auto ps : paths_of(items, "")) {
        ps.path = trim_slashes(ps.path);
        for (const auto& c : overlaps(all, ps)) warn(desc, fmt::format("{} with {}", ps.shown(), c.shown()));
        all.push_back(ps);
      }
    };
    if (const auto* cm = object_of(v, "configMap"))
      mapping(cm, fmt::format("ConfigMap {}", quoted(str_of(*cm, "name"))));
    if (const auto* sec = object_of(v, "secret"))
      mapping(sec, fmt::format("Secret {}", quoted(str_of(*sec, "secretName"))));
    if (const auto* dapi = object_of(v, "downwardAPI")) mapping(dapi, "DownwardAPI");
    const auto* pj = object_of(v, "projected");
    const auto* sources = pj ? array_of(*pj, "sources") : nullptr;
    if (!sources) continue;
    // (sourcePaths outlives each source: one matching no case maps its predecessor's paths again, sic.)
    std::vector<PathAndSource> source_paths, all;
    for (const auto& sv : *sources) {
      if (!sv.is_object() || sv.as_object().empty()) {
        out.push_back(fmt::format("volume {} (Projected) has no sources provided", quoted(name)));
        continue;
      }
      const auto& src = sv.as_object();
      const json::object* cm = object_of(src, "configMap");
      const json::object* sec = object_of(src, "secret");
      const json::object* dapi = object_of(src, "downwardAPI");
      const json::object* sat = object_of(src, "serviceAccountToken");
      if (cm && array_of(*cm, "items"))
        source_paths = paths_of(array_of(*cm, "items"), fmt::format("ConfigMap {}", quoted(str_of(*cm, "name"))));
      else if (sec && array_of(*sec, "items"))
        source_paths = paths_of(array_of(*sec, "items"), fmt::format("Secret {}", quoted(str_of(*sec, "name"))));
      else if (dapi && array_of(*dapi, "items"))
        source_paths = paths_of(array_of(*dapi, "items"), "DownwardAPI");
      else if (sat)
        source_paths = {{str_of(*sat, "path"), "ServiceAccountToken"}};
      for (auto ps : source_paths) {
        ps.path = trim_slashes(ps.path);
        for (const auto& c : overlaps(all, ps)) warn("Projected", fmt::format("{} with {}", ps.shown(), c.shown()));
        all.push_back(ps);
      }
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> claim_warnings(const json::object& claim) {
  std::vector<std::string> out;
  const json::object* meta = object_of(claim, "metadata");
  if (const json::object* a = meta ? object_of(*meta, "annotations") : nullptr;
      a && a->contains("volume.beta.kubernetes.io/storage-class"))
    out.emplace_back(
        "metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; use "
        "\"storageClassName\" attribute instead");
  if (const json::object* spec = object_of(claim, "spec"))
    for (auto& w : claim_spec_warnings(*spec, "spec.")) out.push_back(std::move(w));
  return out;
}

std::vector<std::string> claim_spec_warnings(const json::object& spec, std::string_view at) {
  std::vector<std::string> out;
  const json::object* res = object_of(spec, "resources");
  for (const char* kind : {"requests", "limits"})
    if (const json::object* list = res ? object_of(*res, kind) : nullptr)
      if (auto q = fractional_bytes(list->if_contains("storage")))
        out.push_back(fmt::format("{}resources.{}[storage]: fractional byte value {} is invalid, must be an integer",
                                  at, kind, quoted(*q)));
  return out;
}

std::vector<std::string> pod_warnings(const json::object& meta, const json::object& spec, std::string_view at) {
  std::vector<std::string> out;
  const std::string p(at);  // "" for a Pod, "spec.template." for a template
  // A term or constraint without labelSelector matches no pod.
  const auto null_selector = [&](const std::string& path) {
    out.push_back(path + ".labelSelector: a null labelSelector results in matching no pod");
  };
  if (const auto* sel = object_of(spec, "nodeSelector"))
    for (const auto& [k, v] : *sel)
      if (auto it = kDeprecatedNodeLabels.find(std::string_view(k)); it != kDeprecatedNodeLabels.end())
        out.push_back(fmt::format("{}spec.nodeSelector[{}]: {}", p, std::string_view(k), it->second));
  if (const auto* tsc = array_of(spec, "topologySpreadConstraints"))
    for (std::size_t i = 0; i < tsc->size(); ++i) {
      if (!(*tsc)[i].is_object()) continue;
      const auto& c = (*tsc)[i].as_object();
      const std::string key = str_of(c, "topologyKey");
      if (auto it = kDeprecatedNodeLabels.find(key); it != kDeprecatedNodeLabels.end())
        out.push_back(fmt::format("{}spec.topologySpreadConstraints[{}].topologyKey: {} is {}", p, i, key, it->second));
      if (!object_of(c, "labelSelector")) null_selector(fmt::format("{}spec.topologySpreadConstraints[{}]", p, i));
    }
  if (const auto* ann = object_of(meta, "annotations"))
    for (const auto& [key, message] : kDeprecatedAnnotations)
      if (ann->contains(key)) out.push_back(fmt::format("{}metadata.annotations[{}]: {}", p, key, message));
  if (const auto* vols = array_of(spec, "volumes"))
    for (std::size_t i = 0; i < vols->size(); ++i) {
      if (!(*vols)[i].is_object()) continue;
      for (const auto& v : kDeprecatedVolumes)
        if ((*vols)[i].as_object().contains(v.json))
          out.push_back(fmt::format("{}spec.volumes[{}].{}: {}", p, i, v.shown, v.message));
    }
  for (auto& w : overlapping_virtual_paths(spec)) out.push_back(std::move(w));
  if (const auto* secrets = array_of(spec, "imagePullSecrets")) {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < secrets->size() && secrets->size() > 1; ++i) {
      const std::string name = (*secrets)[i].is_object() ? str_of((*secrets)[i].as_object(), "name") : "";
      if (!seen.insert(name).second)
        out.push_back(fmt::format("{}spec.imagePullSecrets[{}].name: duplicate name {}", p, i, quoted(name)));
    }
    for (std::size_t i = 0; i < secrets->size(); ++i)
      if (!(*secrets)[i].is_object() || str_of((*secrets)[i].as_object(), "name").empty())
        out.push_back(fmt::format("{}spec.imagePullSecrets[{}].name: invalid empty name \"\"", p, i));
  }
  if (const auto* overhead = object_of(spec, "overhead"))
    for (const char* r : {"memory", "ephemeral-storage"})
      if (auto q = fractional_bytes(overhead->if_contains(r)))
        out.push_back(fmt::format("{}spec.overhead[{}]: fractional byte value {} is invalid, must be an integer", p, r,
                                  quoted(*q)));
  // The seccomp annotations without their fields; a template's AppArmor annotations without a
  // field (a pod's warn as they are copied into the fields: apparmor_version_skew).
  const auto* annotations = object_of(meta, "annotations");
  auto annotated = [&](const std::string& key) { return annotations && annotations->contains(key); };
  const auto* psc = object_of(spec, "securityContext");
  if ((!psc || !object_of(*psc, "seccompProfile")) && annotated("seccomp.security.alpha.kubernetes.io/pod"))
    out.push_back(fmt::format(
        "{}metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the "
        "\"seccompProfile\" field instead",
        p));
  const bool pod_apparmor = psc && object_of(*psc, "appArmorProfile");

  // Every container, as pods.VisitContainersWithPath walks them.
  struct Port {
    std::string field;
    std::string host_ip;
    std::int64_t host_port;
  };
  std::vector<std::pair<std::string, const json::object*>> containers;
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"})
    if (const auto* cs = array_of(spec, list))
      for (std::size_t i = 0; i < cs->size(); ++i)
        if ((*cs)[i].is_object())
          containers.emplace_back(fmt::format("{}spec.{}[{}]", p, list, i), &(*cs)[i].as_object());
  for (const auto& [f, c] : containers) {
    const auto* sc = object_of(*c, "securityContext");
    const std::string name = str_of(*c, "name");
    if ((!sc || !object_of(*sc, "seccompProfile")) &&
        annotated("container.seccomp.security.alpha.kubernetes.io/" + name))
      out.push_back(
          fmt::format("{}metadata.annotations[container.seccomp.security.alpha.kubernetes.io/{}]: non-functional in "
                      "v1.27+; use the \"seccompProfile\" field instead",
                      p, name));
    if (!p.empty() && !pod_apparmor && !(sc && object_of(*sc, "appArmorProfile")) &&
        annotated("container.apparmor.security.beta.kubernetes.io/" + name))
      out.push_back(
          fmt::format("{}metadata.annotations[container.apparmor.security.beta.kubernetes.io/{}]: deprecated since "
                      "v1.30; use the \"appArmorProfile\" field instead",
                      p, name));
    // fractional memory / ephemeral-storage (limits, then requests, per resource)
    if (const auto* res = object_of(*c, "resources"))
      for (const char* r : {"memory", "ephemeral-storage"})
        for (const char* kind : {"limits", "requests"})
          if (const auto* list = object_of(*res, kind))
            if (auto q = fractional_bytes(list->if_contains(r)))
              out.push_back(fmt::format("{}.resources.{}[{}]: fractional byte value {} is invalid, must be an integer",
                                        f, kind, r, quoted(*q)));
    // a duplicate env name, unless the redefinition refers to the previous value ("$(X)..."),
    // which then is not lost by apply
    const auto* env = array_of(*c, "env");
    if (!env || env->size() < 2) continue;
    std::set<std::string> names;
    for (std::size_t i = 0; i < env->size(); ++i) {
      if (!(*env)[i].is_object()) continue;
      const auto& item = (*env)[i].as_object();
      const std::string name = str_of(item, "name");
      if (names.insert(name).second) continue;
      const std::string ref = "$(" + name + ")";
      const std::string value = str_of(item, "value");
      if (item.contains("valueFrom") || value == ref || value.find(ref) == std::string::npos)
        out.push_back(fmt::format("{}.env[{}]: hides previous definition of {}, which may be dropped when using apply",
                                  f, i, quoted(name)));
    }
  }
  // Ports across all containers: the same containerPort/protocol twice.
  std::map<std::string, std::vector<Port>> ports;
  for (const auto& [f, c] : containers) {
    const auto* list = array_of(*c, "ports");
    if (!list) continue;
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (!(*list)[i].is_object()) continue;
      const auto& port = (*list)[i].as_object();
      Port mine{fmt::format("{}.ports[{}]", f, i), str_of(port, "hostIP"), int_of(port, "hostPort")};
      std::string protocol = str_of(port, "protocol");
      if (protocol.empty()) protocol = "TCP";
      if (!mine.host_ip.empty() && mine.host_port == 0)  // the port printed with %+v
        out.push_back(
            fmt::format("{}: hostIP set without hostPort: {{Name:{} HostPort:0 ContainerPort:{} "
                        "Protocol:{} HostIP:{}}}",
                        mine.field, str_of(port, "name"), int_of(port, "containerPort"), protocol, mine.host_ip));
      auto& others = ports[fmt::format("{}/{}", int_of(port, "containerPort"), protocol)];
      for (const auto& other : others) {
        if (mine.host_ip == other.host_ip && mine.host_port == other.host_port)
          out.push_back(fmt::format("{}: duplicate port definition with {}", mine.field, other.field));
        else if (mine.host_port == 0 || other.host_port == 0)
          out.push_back(fmt::format("{}: overlapping port definition with {}", mine.field, other.field));
        else if (mine.host_port == other.host_port && (mine.host_ip.empty() != other.host_ip.empty()))
          out.push_back(fmt::format("{}: dangerously ambiguous port definition with {}", mine.field, other.field));
      }
      others.push_back(std::move(mine));
    }
  }
  if (const auto* g = spec.if_contains("terminationGracePeriodSeconds"); g && g->is_int64() && g->as_int64() < 0)
    out.push_back(
        fmt::format("{}spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be "
                    "treated as 1",
                    p));
  // warningsForPodAffinityTerms / warningsForWeightedPodAffinityTerms: a term without labelSelector
  // matches no pod (podAffinity's, then podAntiAffinity's; required terms, then preferred).
  if (const json::object* affinity = object_of(spec, "affinity"))
    for (const char* kind : {"podAffinity", "podAntiAffinity"})
      if (const json::object* a = object_of(*affinity, kind)) {
        const std::string base = fmt::format("{}spec.affinity.{}.", p, kind);
        if (const auto* terms = array_of(*a, "requiredDuringSchedulingIgnoredDuringExecution"))
          for (std::size_t i = 0; i < terms->size(); ++i)
            if ((*terms)[i].is_object() && !object_of((*terms)[i].as_object(), "labelSelector"))
              null_selector(fmt::format("{}requiredDuringSchedulingIgnoredDuringExecution[{}]", base, i));
        if (const auto* terms = array_of(*a, "preferredDuringSchedulingIgnoredDuringExecution"))
          for (std::size_t i = 0; i < terms->size(); ++i) {
            const json::object* term =
                (*terms)[i].is_object() ? object_of((*terms)[i].as_object(), "podAffinityTerm") : nullptr;
            if (!term || !object_of(*term, "labelSelector"))
              null_selector(
                  fmt::format("{}preferredDuringSchedulingIgnoredDuringExecution[{}].podAffinityTerm", base, i));
          }
      }
  return out;
}

std::vector<std::string> runtime_class_warnings(const json::object& runtime_class) {
  std::vector<std::string> out;
  const json::value* scheduling = runtime_class.if_contains("scheduling");
  const json::value* selector =
      scheduling && scheduling->is_object() ? scheduling->as_object().if_contains("nodeSelector") : nullptr;
  if (selector && selector->is_object())
    for (const auto& [key, value] : selector->as_object())
      if (const auto it = kDeprecatedNodeLabels.find(key); it != kDeprecatedNodeLabels.end())
        out.push_back(fmt::format("scheduling.nodeSelector: {}", it->second));
  return out;
}

std::vector<std::string> pv_warnings(const json::object& pv) {
  // pkg/api/persistentvolume/util.go warningsForPersistentVolumeSpecAndMeta.
  std::vector<std::string> out;
  const json::object* meta = object_of(pv, "metadata");
  const json::object* ann = meta ? object_of(*meta, "annotations") : nullptr;
  for (const auto& [key, message] : {std::pair{"volume.beta.kubernetes.io/storage-class",
                                               "deprecated since v1.8; use \"storageClassName\" attribute instead"},
                                     std::pair{"volume.beta.kubernetes.io/mount-options",
                                               "deprecated since v1.31; use \"mountOptions\" attribute instead"}})
    if (ann && ann->contains(key)) out.push_back(fmt::format("metadata.annotations[{}]: {}", key, message));
  static const json::object kNone;
  const json::object& spec = object_of(pv, "spec") ? *object_of(pv, "spec") : kNone;
  if (str_of(spec, "persistentVolumeReclaimPolicy") == "Recycle")
    out.emplace_back(
        "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended "
        "approach is to use dynamic provisioning.");
  const json::object* affinity = object_of(spec, "nodeAffinity");
  if (const json::object* required = affinity ? object_of(*affinity, "required") : nullptr)
    if (const json::array* terms = array_of(*required, "nodeSelectorTerms"))
      for (std::size_t i = 0; i < terms->size(); ++i)  // GetWarningsForNodeSelectorTerm
        if (const json::array* exprs =
                (*terms)[i].is_object() ? array_of((*terms)[i].as_object(), "matchExpressions") : nullptr)
          for (std::size_t j = 0; j < exprs->size(); ++j) {
            const std::string key = (*exprs)[j].is_object() ? str_of((*exprs)[j].as_object(), "key") : "";
            if (const auto it = kDeprecatedNodeLabels.find(key); it != kDeprecatedNodeLabels.end())
              out.push_back(
                  fmt::format("spec.nodeAffinity.required.nodeSelectorTerms[{}].matchExpressions[{}].key: {} is {}", i,
                              j, key, it->second));
          }
  // The deprecated volume plugins a PersistentVolume can have, in this function's own order.
  for (std::string_view key : {"cephfs", "photonPersistentDisk", "scaleIO", "storageos", "glusterfs", "rbd"})
    if (const json::value* v = spec.if_contains(key); v && !v->is_null())
      for (const auto& d : kDeprecatedVolumes)
        if (d.json == key) out.push_back(fmt::format("spec.{}: {}", d.shown, d.message));
  return out;
}

}  // namespace gpupool::embedded
