// embedded/validation_pod.cpp — the value rules of a pod spec, as kube-apiserver v1.32 applies them
// (pkg/apis/core/validation/validation.go ValidatePodSpec and the functions it calls, in the order
// they append to the field.ErrorList: the order of the causes is part of the answer).
//
// Each cause is worded as apimachinery's field.Error words it: `Required value[: detail]`,
// `Invalid value: <value>: detail` (strings quoted as %q, integers bare, named types with a String
// method bare), `Unsupported value: <value>: supported values: "a", "b"`, `Forbidden: detail`,
// `Duplicate value: <value>`, `Not found: <value>`.
#include "embedded/schema.hpp"
#include "embedded/validation.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <span>

#include <fmt/format.h>

#include "common/ascii.hpp"
#include "embedded/ip_parse.hpp"
#include "embedded/typecheck.hpp"
#include "embedded/validation_fields.hpp"
#include "embedded/validation_kinds.hpp"
#include "gpupool/names.hpp"
#include "gpupool/quantity.hpp"
#include "gpupool/resources.hpp"
#include "gpupool/scheduling.hpp"
#include "gpupool/storage.hpp"
#include "gpupool/taint.hpp"

namespace gpupool::embedded {
namespace {

using namespace fields;

// The text of a quantity as JSON holds it (a string, or a bare number).
using schema::quantity_text;
std::optional<Quantity> quantity_of(const json::value& v) {
  try {
    return Quantity::parse(quantity_text(v));
  } catch (const std::exception&) {
    return std::nullopt;  // decoding refused it already
  }
}

constexpr std::int64_t kMaxInt32 = 2147483647;
const char* const kRangeError = "must be between 0 and 2147483647, inclusive";  // IsValidUserID / IsValidGroupID
const char* const kFileMode = "must be a number between 0 and 0777 (octal), both inclusive";

// A Go pointer field as %#v prints it: `(*T)(nil)`, or with an address (which differs on every
// request of the real server; FIDELITY.md, known difference 15).
std::string go_pointer(std::string_view type, bool set) {
  return fmt::format("(*{})({})", type, set ? "0xc000000000" : "nil");
}

// ---- volumes ---------------------------------------------------------------------------------

// validateLocalDescendingPath / validatePathNoBacksteps / ValidateLocalNonReservedPath, through
// the model's rules (storage.hpp), which gpupool's own checks use too.
void local_descending_path(Errors& e, const std::string& f, const std::string& path) {
  e.invalid(f, path, local_descending_path_errors(path));
}
void local_non_reserved_path(Errors& e, const std::string& f, const std::string& path) {
  local_descending_path(e, f, path);
  if (path.starts_with("..") && !path.starts_with("../")) e.invalid(f, q(path), "must not start with '..'");
}

// validateKeyToPath.
void key_to_path(Errors& e, const json::object& kp, const std::string& f) {
  if (string_at(kp, "key").empty()) e.required(f + ".key");
  const std::string path = string_at(kp, "path");
  if (path.empty()) e.required(f + ".path");
  local_non_reserved_path(e, f + ".path", path);
  if (auto m = int_at(kp, "mode"); m && (*m > 0777 || *m < 0)) e.invalid(f + ".mode", std::to_string(*m), kFileMode);
}

void file_mode(Errors& e, const json::object& src, const std::string& f) {
  if (auto m = int_at(src, "defaultMode"); m && (*m > 0777 || *m < 0))
    e.invalid(f + ".defaultMode", std::to_string(*m), kFileMode);
}

// fieldpath.SplitMaybeSubscriptedPath: `path['subscript']`.
bool split_subscript(const std::string& s, std::string& path, std::string& subscript) {
  if (!s.ends_with("']")) return false;
  const std::string body = s.substr(0, s.size() - 2);
  const auto at = body.find("['");
  if (at == std::string::npos || at == 0) return false;
  path = body.substr(0, at);
  subscript = body.substr(at + 2);
  return true;
}

// validateObjectFieldSelector with podshelper.ConvertDownwardAPIFieldLabel.
void object_field_selector(Errors& e, const json::object& fs, const std::set<std::string>& expressions,
                           const std::string& f) {
  const std::string version = string_at(fs, "apiVersion");
  const std::string label = string_at(fs, "fieldPath");
  if (version.empty()) return e.required(f + ".apiVersion");
  if (label.empty()) return e.required(f + ".fieldPath");
  static const std::set<std::string> kLabels = {
      "metadata.annotations", "metadata.labels", "metadata.name",      "metadata.namespace",
      "metadata.uid",         "spec.nodeName",   "spec.restartPolicy", "spec.serviceAccountName",
      "spec.schedulerName",   "status.phase",    "status.hostIP",      "status.hostIPs",
      "status.podIP",         "status.podIPs"};
  std::string path, subscript, converted = label;
  if (version != "v1") {
    return e.invalid(f + ".fieldPath", q(label),
                     fmt::format("error converting fieldPath: unsupported pod version: {}", version));
  } else if (split_subscript(label, path, subscript)) {
    if (path != "metadata.annotations" && path != "metadata.labels")
      return e.invalid(f + ".fieldPath", q(label),
                       fmt::format("error converting fieldPath: field label does not support subscript: {}", label));
  } else if (label == "spec.host") {
    converted = "spec.nodeName";
  } else if (!kLabels.count(label)) {
    return e.invalid(f + ".fieldPath", q(label),
                     fmt::format("error converting fieldPath: field label not supported: {}", label));
  }
  if (split_subscript(converted, path, subscript)) {
    if (path == "metadata.annotations") {
      std::string lower = subscript;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      e.invalid(f, lower, qualified_name_errors(lower));
    } else if (path == "metadata.labels") {
      e.invalid(f, subscript, qualified_name_errors(subscript));
    } else {
      e.invalid(f, q(path), "does not support subscript");
    }
  } else if (!expressions.count(converted)) {
    std::string list;
    for (const auto& s : expressions) list += (list.empty() ? "" : ", ") + q(s);
    e.out.push_back({"FieldValueNotSupported",
                     fmt::format("Unsupported value: {}: supported values: {}", q(converted), list), f + ".fieldPath"});
  }
}

const std::set<std::string> kContainerResourceFields = {
    "limits.cpu",   "limits.ephemeral-storage",   "limits.memory",
    "requests.cpu", "requests.ephemeral-storage", "requests.memory"};

// validateContainerResourceFieldSelector + validateContainerResourceDivisor.
void resource_field_selector(Errors& e, const json::object& fs, const std::string& f, bool volume) {
  const std::string res = string_at(fs, "resource");
  if (volume && string_at(fs, "containerName").empty()) {
    e.required(f + ".containerName");
  } else if (res.empty()) {
    e.required(f + ".resource");
  } else if (!kContainerResourceFields.count(res) && !res.starts_with("limits.hugepages-") &&
             !res.starts_with("requests.hugepages-")) {
    std::string list;
    for (const auto& s : kContainerResourceFields) list += (list.empty() ? "" : ", ") + q(s);
    e.out.push_back({"FieldValueNotSupported", fmt::format("Unsupported value: {}: supported values: {}", q(res), list),
                     f + ".resource"});
  }
  const json::value* d = fs.if_contains("divisor");
  if (!d || d->is_null()) return;
  const auto divisor = quantity_of(*d);
  if (!divisor || divisor->is_zero()) return;
  const std::string shown = divisor->to_string();
  static const std::set<std::string> kBytes = {"1",   "1k",  "1M",  "1G",  "1T",  "1P", "1E",
                                               "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"};
  const char* bytes_values = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei";
  if ((res == "limits.cpu" || res == "requests.cpu") && shown != "1m" && shown != "1")
    e.invalid(f + ".divisor", q(res), "only divisor's values 1m and 1 are supported with the cpu resource");
  if ((res == "limits.memory" || res == "requests.memory") && !kBytes.count(shown))
    e.invalid(f + ".divisor", q(res),
              fmt::format("only divisor's values {} are supported with the memory resource", bytes_values));
  if ((res == "limits.ephemeral-storage" || res == "requests.ephemeral-storage") && !kBytes.count(shown))
    e.invalid(
        f + ".divisor", q(res),
        fmt::format("only divisor's values {} are supported with the local ephemeral storage resource", bytes_values));
  if ((res.starts_with("requests.hugepages-") || res.starts_with("limits.hugepages-")) && !kBytes.count(shown))
    e.invalid(f + ".divisor", q(res),
              fmt::format("only divisor's values {} are supported with the hugepages resource", bytes_values));
}

// validateDownwardAPIVolumeFile (its paths are the source's own, not the item's: sic).
void downward_api_file(Errors& e, const json::object& file, const std::string& f) {
  static const std::set<std::string> kVolumeFields = {"metadata.annotations", "metadata.labels", "metadata.name",
                                                      "metadata.namespace", "metadata.uid"};
  const std::string path = string_at(file, "path");
  if (path.empty()) e.required(f + ".path");
  local_non_reserved_path(e, f + ".path", path);
  if (const auto* ref = object_at(file, "fieldRef")) {
    object_field_selector(e, *ref, kVolumeFields, f + ".fieldRef");
    if (present(file, "resourceFieldRef"))
      e.invalid(f, q("resource"), "fieldRef and resourceFieldRef can not be specified simultaneously");
  } else if (const auto* rref = object_at(file, "resourceFieldRef")) {
    resource_field_selector(e, *rref, f + ".resourceFieldRef", true);
  } else {
    e.required(f, "one of fieldRef and resourceFieldRef is required");
  }
  if (auto m = int_at(file, "mode"); m && (*m > 0777 || *m < 0)) e.invalid(f + ".mode", std::to_string(*m), kFileMode);
}

// validateProjectedVolumeSource with validateProjectionSources: each source's own rules, and no
// two files at one path ("conflicting duplicate paths" names the projection and shows the
// source's name for secrets and configMaps, the path otherwise: sic).
void projected(Errors& e, const json::object& pj, const std::string& f) {
  file_mode(e, pj, f);
  std::set<std::string> paths;
  auto claim = [&](const std::string& path, const std::string& shown) {
    if (path.empty()) return;
    if (!paths.insert(path).second) e.invalid(f, q(shown), "conflicting duplicate paths");
  };
  const auto sources = items(pj, "sources");
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const json::object& src = *sources[i];
    const std::string sp = fmt::format("{}.sources[{}]", f, i);
    int count = 0;
    for (const char* kind : {"secret", "configMap"})
      if (const auto* o = object_at(src, kind)) {
        ++count;
        const std::string kf = fmt::format("{}.{}", sp, kind);
        if (string_at(*o, "name").empty()) e.required(kf + ".name");
        const auto list = items(*o, "items");
        for (std::size_t j = 0; j < list.size(); ++j) {
          key_to_path(e, *list[j], fmt::format("{}.items[{}]", kf, j));
          claim(string_at(*list[j], "path"), string_at(*o, "name"));
        }
      }
    if (const auto* o = object_at(src, "downwardAPI")) {
      ++count;
      for (const auto* file : items(*o, "items")) {
        downward_api_file(e, *file, sp + ".downwardAPI");
        claim(string_at(*file, "path"), string_at(*file, "path"));
      }
    }
    if (const auto* o = object_at(src, "serviceAccountToken")) {
      ++count;
      const std::int64_t secs = int_at(*o, "expirationSeconds").value_or(0);
      if (secs < 600)
        e.invalid(sp + ".serviceAccountToken.expirationSeconds", std::to_string(secs),
                  "may not specify a duration less than 10 minutes");
      if (secs > (std::int64_t{1} << 32))
        e.invalid(sp + ".serviceAccountToken.expirationSeconds", std::to_string(secs),
                  "may not specify a duration larger than 2^32 seconds");
      const std::string path = string_at(*o, "path");
      if (path.empty())
        e.required(f + ".path");
      else
        local_non_reserved_path(e, f + ".path", path);
    }
    if (present(src, "clusterTrustBundle")) ++count;  // (its rules are not checked: FIDELITY.md)
    if (count > 1) e.forbidden(sp, "may not specify more than 1 volume type per source");
  }
}

// The rules of validateVolumeSource's other sources (pkg/apis/core/validation/validation.go
// validateGitRepoVolumeSource, validateGCEPersistentDiskVolumeSource (whose path is
// `persistentDisk`: sic), ..., validateEphemeralVolumeSource), for source `k` of volume `v` at `f`.
void other_volume_source(Errors& e, const std::string& k, const json::object& src, const json::object& v,
                         const std::string& sf, const std::string& f, const std::string& pod_name) {
  auto need = [&](const char* key) {
    if (string_at(src, key).empty()) e.required(fmt::format("{}.{}", sf, key));
  };
  auto need_list = [&](const char* key) {
    if (items(src, key).empty()) e.required(fmt::format("{}.{}", sf, key));
  };
  // A secretRef's name (cinder, storageos).
  auto secret_ref = [&] {
    if (const auto* ref = object_at(src, "secretRef"); ref && string_at(*ref, "name").empty())
      e.required(sf + ".secretRef.name");
  };
  // iscsiInitiatorIqnRegex / EuiRegex / NaaRegex.
  auto iscsi_name = [&](const std::string& name, const std::string& at, bool prefix_else) {
    static const std::regex iqn(R"(iqn\.\d{4}-\d{2}\.([[:alnum:].-]+)(:[^,;*&$|\s]+)$)");
    static const std::regex eui("^eui.[[:alnum:]]{16}$");
    static const std::regex naa("^naa.[[:alnum:]]{32}$");
    const bool is_iqn = name.starts_with("iqn"), is_eui = name.starts_with("eui"), is_naa = name.starts_with("naa");
    if (!is_iqn && !is_eui && !is_naa) {
      e.invalid(at, q(name), "must be valid format starting with iqn, eui, or naa");
      if (prefix_else) return;
    }
    if ((is_iqn && !std::regex_search(name, iqn)) || (is_eui && !std::regex_match(name, eui)) ||
        (is_naa && !std::regex_match(name, naa)))
      e.invalid(at, q(name), "must be valid format");
  };
  auto partition = [&] {
    if (auto p = int_at(src, "partition"); p && (*p < 0 || *p > 255))
      e.invalid(sf + ".partition", std::to_string(*p), "must be between 1 and 255, inclusive");
  };
  if (k == "gitRepo") {
    need("repository");
    local_descending_path(e, sf + ".directory", string_at(src, "directory"));
  } else if (k == "gcePersistentDisk") {
    if (string_at(src, "pdName").empty()) e.required(f + ".persistentDisk.pdName");
    if (auto p = int_at(src, "partition"); p && (*p < 0 || *p > 255))
      e.invalid(f + ".persistentDisk.partition", std::to_string(*p), "must be between 1 and 255, inclusive");
  } else if (k == "awsElasticBlockStore") {
    need("volumeID");
    partition();
  } else if (k == "iscsi") {
    need("targetPortal");
    const std::string iqn = string_at(src, "iqn");
    if (iqn.empty())
      e.required(sf + ".iqn");
    else
      iscsi_name(iqn, sf + ".iqn", true);
    if (auto lun = int_at(src, "lun"); lun && (*lun < 0 || *lun > 255))
      e.invalid(sf + ".lun", std::to_string(*lun), "must be between 0 and 255, inclusive");
    if ((true_at(src, "chapAuthDiscovery") || true_at(src, "chapAuthSession")) && !present(src, "secretRef"))
      e.required(sf + ".secretRef");
    if (const json::value* in = src.if_contains("initiatorName"); in && in->is_string())
      iscsi_name(std::string(in->as_string()), sf + ".initiatorname", false);
    if (present(src, "initiatorName") && string_at(v, "name").size() + 1 + string_at(src, "targetPortal").size() > 64)
      e.invalid(f + ".name", q(string_at(v, "name")),
                "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName "
                "is specified.");
  } else if (k == "glusterfs") {
    need("endpoints");
    need("path");
  } else if (k == "flocker") {
    const std::string name = string_at(src, "datasetName"), uuid = string_at(src, "datasetUUID");
    if (name.empty() && uuid.empty()) e.required(sf, "one of datasetName and datasetUUID is required");
    if (!name.empty() && !uuid.empty())
      e.invalid(sf, q("resource"), "datasetName and datasetUUID can not be specified simultaneously");
    if (name.find('/') != std::string::npos) e.invalid(sf + ".datasetName", q(name), "must not contain '/'");
  } else if (k == "rbd") {
    need_list("monitors");
    need("image");
  } else if (k == "cinder") {
    need("volumeID");
    secret_ref();
  } else if (k == "cephfs") {
    need_list("monitors");
  } else if (k == "quobyte") {
    const std::string registry = string_at(src, "registry");
    if (registry.empty()) {
      e.required(sf + ".registry", "must be a host:port pair or multiple pairs separated by commas");
    } else if (string_at(src, "tenant").size() >= 65) {
      e.required(sf + ".tenant", "must be a UUID and may not exceed a length of 64 characters");
    } else {
      // net.SplitHostPort of each pair: host:port, [host]:port; one colon outside brackets.
      std::size_t start = 0;
      while (true) {
        const std::size_t comma = registry.find(',', start);
        const std::string pair = registry.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        bool ok;
        if (pair.starts_with('[')) {
          const auto close = pair.find(']');
          ok = close != std::string::npos && close + 1 < pair.size() && pair[close + 1] == ':' &&
               pair.find_first_of("[]", close + 1) == std::string::npos && pair.find('[', 1) == std::string::npos;
        } else {
          const auto colon = pair.rfind(':');
          ok = colon != std::string::npos && pair.find(':') == colon && pair.find_first_of("[]") == std::string::npos;
        }
        if (!ok)
          e.invalid(sf + ".registry", q(registry), "must be a host:port pair or multiple pairs separated by commas");
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    need("volume");
  } else if (k == "fc") {
    const auto wwns = items(src, "targetWWNs");
    const std::size_t wwids = items(src, "wwids").size();
    if (wwns.empty() && wwids == 0)
      e.required(sf + ".targetWWNs", "must specify either targetWWNs or wwids, but not both");
    if (!wwns.empty() && wwids != 0) {
      std::string shown = "[]string{";
      if (const json::array* a = array_at(src, "targetWWNs"))
        for (std::size_t i = 0; i < a->size(); ++i)
          shown += (i ? ", " : "") + q((*a)[i].is_string() ? std::string((*a)[i].as_string()) : "");
      e.invalid(sf + ".targetWWNs", shown + "}", "targetWWNs and wwids can not be specified simultaneously");
    }
    if (!wwns.empty()) {
      if (auto lun = int_at(src, "lun"); !lun)
        e.required(sf + ".lun", "lun is required if targetWWNs is specified");
      else if (*lun < 0 || *lun > 255)
        e.invalid(sf + ".lun", std::to_string(*lun), "must be between 0 and 255, inclusive");
    }
  } else if (k == "flexVolume") {
    need("driver");
    // (Go walks the options map in random order; here in sorted order.)
    std::vector<std::string> keys;
    if (const json::object* opts = object_at(src, "options"))
      for (const auto& kv : *opts) keys.emplace_back(kv.key());
    std::sort(keys.begin(), keys.end());
    for (const auto& key : keys) {
      std::string ns = key.substr(0, key.find('/'));
      std::string normalized = "." + ns;
      for (auto& c : normalized) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io"))
        e.invalid(fmt::format("{}.options[{}]", sf, key), q(key), "kubernetes.io and k8s.io namespaces are reserved");
    }
  } else if (k == "azureFile") {
    need("secretName");
    need("shareName");
  } else if (k == "vsphereVolume") {
    need("volumePath");
  } else if (k == "photonPersistentDisk") {
    need("pdID");
  } else if (k == "portworxVolume") {
    need("volumeID");
  } else if (k == "azureDisk") {
    need("diskName");
    need("diskURI");
    const std::string uri = string_at(src, "diskURI");
    if (present(src, "cachingMode")) {
      const std::string mode = string_at(src, "cachingMode");
      if (mode != "None" && mode != "ReadOnly" && mode != "ReadWrite")
        e.not_supported(sf + ".cachingMode", mode, {"None", "ReadOnly", "ReadWrite"});
    }
    if (present(src, "kind")) {
      const std::string kind = string_at(src, "kind");
      if (kind != "Dedicated" && kind != "Managed" && kind != "Shared")
        e.not_supported(sf + ".kind", kind, {"Dedicated", "Managed", "Shared"});
      if (kind == "Managed" && !uri.starts_with("/subscriptions/"))
        e.not_supported(
            sf + ".diskURI", uri,
            {"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"});
      if (kind != "Managed" && !uri.starts_with("https://"))
        e.not_supported(sf + ".diskURI", uri,
                        {"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"});
    }
  } else if (k == "storageos") {
    const std::string name = string_at(src, "volumeName");
    if (name.empty())
      e.required(sf + ".volumeName");
    else
      e.invalid(sf + ".volumeName", name, dns1123_label_errors(name));
    if (const std::string ns = string_at(src, "volumeNamespace"); !ns.empty())
      e.invalid(sf + ".volumeNamespace", ns, dns1123_label_errors(ns));
    secret_ref();
  } else if (k == "scaleIO") {
    need("gateway");
    need("system");
    need("volumeName");
  } else if (k == "ephemeral") {
    // validateEphemeralVolumeSource: a claim template (ValidatePersistentVolumeClaimTemplate:
    // ValidateTemplateObjectMeta, then the spec; the claim's name, pod name + "-" + volume name,
    // is not checked here).
    const json::object* tpl = object_at(src, "volumeClaimTemplate");
    if (!tpl)
      e.required(sf + ".volumeClaimTemplate");
    else {
      static const json::object kEmpty;
      if (const json::object* md = object_at(*tpl, "metadata")) {
        const std::string mf = sf + ".volumeClaimTemplate.metadata.";
        // Annotations, then labels, then every other ObjectMeta field that is set (not Go's zero
        // value: a list counts even when empty), in the struct's order.
        for (const char* part : {"annotations", "labels"})
          if (const json::value* v = md->if_contains(part))
            validate_labels_and_annotations(json::object{{part, *v}}, mf, e.out);
        for (const char* k : {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
                              "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences",
                              "finalizers", "managedFields"}) {
          const json::value* v = md->if_contains(k);
          const bool set = v && !v->is_null() && !(v->is_string() && v->as_string().empty()) &&
                           !(v->is_int64() && v->as_int64() == 0) && !(v->is_uint64() && v->as_uint64() == 0);
          if (set) e.forbidden(mf + k, "cannot be set");
        }
      }
      const json::object* spec = object_at(*tpl, "spec");
      pvc_spec_causes(spec ? *spec : kEmpty, sf + ".volumeClaimTemplate.spec.", e.out);
    }
    // The claim it makes, <pod>-<volume>, must be a valid name (ValidatePersistentVolumeName).
    if (const std::string vol = string_at(v, "name"); !pod_name.empty() && !vol.empty()) {
      const std::string claim = pod_name + "-" + vol;
      for (const auto& msg : dns1123_subdomain_errors(claim))
        e.invalid(f + ".name", q(vol), fmt::format("PVC name {}: {}", q(claim), msg));
    }
  }
}

// validateHostPathVolumeSource + validateHostPathType.
void host_path_source(Errors& e, const json::object& src, const std::string& sf) {
  const std::string path = string_at(src, "path");
  if (path.empty()) return e.required(sf + ".path");
  e.invalid(sf + ".path", path, path_backstep_errors(path));
  static const std::set<std::string> kTypes = {"",     "BlockDevice",  "CharDevice", "Directory", "DirectoryOrCreate",
                                               "File", "FileOrCreate", "Socket"};
  if (present(src, "type") && !kTypes.count(string_at(src, "type")))
    e.not_supported(
        sf + ".type", string_at(src, "type"),
        {"", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"});
}

// validateNFSVolumeSource.
void nfs_source(Errors& e, const json::object& src, const std::string& sf) {
  if (string_at(src, "server").empty()) e.required(sf + ".server");
  const std::string path = string_at(src, "path");
  if (path.empty()) e.required(sf + ".path");
  if (!path.starts_with('/')) e.invalid(sf + ".path", q(path), "must be an absolute path");
}

// validateVolumeSource: exactly one source (the others Forbidden), each source's own rules for
// the sources gpupool and its users write; the rest are counted only (FIDELITY.md).
void volume_source(Errors& e, const json::object& v, const std::string& f, const std::string& pod_name) {
  // {JSON key, the path Kubernetes names when it is one source too many}, in validateVolumeSource's order.
  static const std::pair<const char*, const char*> kSources[] = {{"emptyDir", "emptyDir"},
                                                                 {"hostPath", "hostPath"},
                                                                 {"gitRepo", "gitRepo"},
                                                                 {"gcePersistentDisk", "gcePersistentDisk"},
                                                                 {"awsElasticBlockStore", "awsElasticBlockStore"},
                                                                 {"secret", "secret"},
                                                                 {"nfs", "nfs"},
                                                                 {"iscsi", "iscsi"},
                                                                 {"glusterfs", "glusterfs"},
                                                                 {"flocker", "flocker"},
                                                                 {"persistentVolumeClaim", "persistentVolumeClaim"},
                                                                 {"rbd", "rbd"},
                                                                 {"cinder", "cinder"},
                                                                 {"cephfs", "cephFS"},
                                                                 {"quobyte", "quobyte"},
                                                                 {"downwardAPI", "downwarAPI"},
                                                                 {"fc", "fc"},
                                                                 {"flexVolume", "flexVolume"},
                                                                 {"configMap", "configMap"},
                                                                 {"azureFile", "azureFile"},
                                                                 {"vsphereVolume", "vsphereVolume"},
                                                                 {"photonPersistentDisk", "photonPersistentDisk"},
                                                                 {"portworxVolume", "portworxVolume"},
                                                                 {"azureDisk", "azureDisk"},
                                                                 {"storageos", "storageos"},
                                                                 {"projected", "projected"},
                                                                 {"scaleIO", "scaleIO"},
                                                                 {"csi", "csi"},
                                                                 {"ephemeral", "ephemeral"},
                                                                 {"image", "image"}};
  int count = 0;
  for (const auto& [key, forbidden_as] : kSources) {
    const json::object* src = object_at(v, key);
    if (!src) continue;
    if (count++ > 0) {
      e.forbidden(fmt::format("{}.{}", f, forbidden_as), "may not specify more than 1 volume type");
      continue;
    }
    const std::string sf = fmt::format("{}.{}", f, key);
    const std::string k = key;
    if (k == "emptyDir") {
      if (const json::value* sl = src->if_contains("sizeLimit"); sl && !sl->is_null())
        if (auto lim = quantity_of(*sl); lim && lim->is_negative())
          e.forbidden(sf + ".sizeLimit", "SizeLimit field must be a valid resource quantity");
    } else if (k == "hostPath") {
      host_path_source(e, *src, sf);
    } else if (k == "secret" || k == "configMap") {
      // validateSecretVolumeSource / validateConfigMapVolumeSource.
      const char* name_key = k == "secret" ? "secretName" : "name";
      if (string_at(*src, name_key).empty()) e.required(fmt::format("{}.{}", sf, name_key));
      file_mode(e, *src, sf);
      if (const auto* items = array_at(*src, "items"))
        for (std::size_t i = 0; i < items->size(); ++i)
          if ((*items)[i].is_object()) key_to_path(e, (*items)[i].as_object(), fmt::format("{}.items[{}]", sf, i));
    } else if (k == "nfs") {
      nfs_source(e, *src, sf);
    } else if (k == "persistentVolumeClaim") {
      if (string_at(*src, "claimName").empty()) e.required(sf + ".claimName");
    } else if (k == "downwardAPI") {
      file_mode(e, *src, sf);
      if (const auto* items = array_at(*src, "items"))
        for (const auto& item : *items)
          if (item.is_object()) downward_api_file(e, item.as_object(), sf);
    } else if (k == "projected") {
      projected(e, *src, sf);
    } else if (k == "csi") {
      // validateCSIVolumeSource: ValidateCSIDriverName, then the secret reference (whose name's
      // errors name `csi.name`: sic).
      const std::string driver = string_at(*src, "driver");
      if (driver.empty()) e.required(sf + ".driver");
      if (driver.size() > 63)
        e.out.push_back({"FieldValueTooLong", "Too long: may not be more than 63 bytes", sf + ".driver"});
      std::string lower = driver;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      e.invalid(sf + ".driver", driver, dns1123_subdomain_errors(lower));
      if (const auto* ref = object_at(*src, "nodePublishSecretRef")) {
        const std::string name = string_at(*ref, "name");
        if (name.empty())
          e.required(sf + ".nodePublishSecretRef.name");
        else
          e.invalid(sf + ".name", name, dns1123_subdomain_errors(name));
      }
    } else {
      other_volume_source(e, k, *src, v, sf, f, pod_name);
    }
  }
  if (count == 0) e.required(f, "must specify a volume type");
}

// ValidateVolumes: the volumes without errors, by name (what mounts may refer to).
std::map<std::string, const json::object*> validate_volumes(Errors& e, const json::object& spec,
                                                            const std::string& prefix, const std::string& pod_name) {
  std::map<std::string, const json::object*> vols;
  const auto vs = items(spec, "volumes");
  std::set<std::string> names;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    const json::object& v = *vs[i];
    const std::string f = fmt::format("{}volumes[{}]", prefix, i);
    Causes el;
    Errors ve{el};
    volume_source(ve, v, f, pod_name);
    const std::string name = string_at(v, "name");
    if (name.empty())
      ve.required(f + ".name");
    else
      ve.invalid(f + ".name", name, dns1123_label_errors(name));
    if (names.count(name)) ve.duplicate(f + ".name", q(name));
    if (el.empty()) {
      names.insert(name);
      vols.emplace(name, &v);
    }
    for (auto& c : el) e.out.push_back(std::move(c));
  }
  return vols;
}

// ---- containers ------------------------------------------------------------------------------

// validateContainerPorts.
void container_ports(Errors& e, const json::object& c, const std::string& f) {
  const auto ports = items(c, "ports");
  std::set<std::string> names;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const json::object& p = *ports[i];
    const std::string pf = fmt::format("{}.ports[{}]", f, i);
    const std::string name = string_at(p, "name");
    if (!name.empty()) {
      if (auto errs = port_name_errors(name); !errs.empty())
        e.invalid(pf + ".name", name, errs);
      else if (!names.insert(name).second)
        e.duplicate(pf + ".name", q(name));
    }
    const std::int64_t cp = int_at(p, "containerPort").value_or(0);
    if (cp == 0)
      e.required(pf + ".containerPort");
    else if (cp < 1 || cp > 65535)
      e.invalid(pf + ".containerPort", std::to_string(cp), kPortRange);
    const std::int64_t hp = int_at(p, "hostPort").value_or(0);
    if (hp != 0 && (hp < 1 || hp > 65535)) e.invalid(pf + ".hostPort", std::to_string(hp), kPortRange);
    const std::string proto = string_at(p, "protocol");
    if (proto.empty())
      e.required(pf + ".protocol");
    else if (proto != "TCP" && proto != "UDP" && proto != "SCTP")
      e.not_supported(pf + ".protocol", proto, {"SCTP", "TCP", "UDP"});
  }
}

const std::set<std::string> kEnvFieldPaths = {
    "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
    "status.hostIP", "status.hostIPs",     "status.podIP", "status.podIPs"};

// validateConfigMapKeySelector / validateSecretKeySelector.
void key_selector(Errors& e, const json::object& s, const std::string& f) {
  const std::string name = string_at(s, "name");
  e.invalid(f + ".name", name, dns1123_subdomain_errors(name));
  const std::string key = string_at(s, "key");
  if (key.empty())
    e.required(f + ".key");
  else
    e.invalid(f + ".key", key, config_map_key_errors(key));
}

// ValidateEnv with validateEnvVarValueFrom (names by v1.32's relaxed rule).
void container_env(Errors& e, const json::object& c, const std::string& f) {
  const auto env = items(c, "env");
  for (std::size_t i = 0; i < env.size(); ++i) {
    const json::object& ev = *env[i];
    const std::string ef = fmt::format("{}.env[{}]", f, i);
    const std::string name = string_at(ev, "name");
    if (name.empty())
      e.required(ef + ".name");
    else
      e.invalid(ef + ".name", name, env_var_name_errors(name));
    const json::object* from = object_at(ev, "valueFrom");
    if (!from) continue;
    const std::string vf = ef + ".valueFrom";
    int sources = 0;
    if (const auto* r = object_at(*from, "fieldRef")) {
      ++sources;
      object_field_selector(e, *r, kEnvFieldPaths, vf + ".fieldRef");
    }
    if (const auto* r = object_at(*from, "resourceFieldRef")) {
      ++sources;
      resource_field_selector(e, *r, vf + ".resourceFieldRef", false);
    }
    if (const auto* r = object_at(*from, "configMapKeyRef")) {
      ++sources;
      key_selector(e, *r, vf + ".configMapKeyRef");
    }
    if (const auto* r = object_at(*from, "secretKeyRef")) {
      ++sources;
      key_selector(e, *r, vf + ".secretKeyRef");
    }
    if (sources == 0)
      e.invalid(vf, q(""), "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`");
    else if (!string_at(ev, "value").empty())
      e.invalid(vf, q(""), "may not be specified when `value` is not empty");
    else if (sources > 1)
      e.invalid(vf, q(""), "may not have more than one field specified at a time");
  }
}

// ConfigMap and Secret names taken as a prefix (ValidateConfigMapName(name, true)).
std::vector<std::string> subdomain_prefix_errors(std::string name) {
  if (name.size() > 1 && name.back() == '-') name.back() = 'a';  // maskTrailingDash
  return dns1123_subdomain_errors(name);
}

// ValidateEnvFrom (its "one source" errors name the list, not the item: sic).
void container_env_from(Errors& e, const json::object& c, const std::string& f) {
  const auto from = items(c, "envFrom");
  for (std::size_t i = 0; i < from.size(); ++i) {
    const json::object& ev = *from[i];
    const std::string ef = fmt::format("{}.envFrom[{}]", f, i);
    if (const std::string prefix = string_at(ev, "prefix"); !prefix.empty())
      e.invalid(ef + ".prefix", prefix, env_var_name_errors(prefix));
    int sources = 0;
    for (const char* key : {"configMapRef", "secretRef"})
      if (const auto* ref = object_at(ev, key)) {
        ++sources;
        const std::string name = string_at(*ref, "name");
        if (name.empty())
          e.required(fmt::format("{}.{}.name", ef, key));
        else
          e.invalid(fmt::format("{}.{}.name", ef, key), name, subdomain_prefix_errors(name));
      }
    if (sources == 0)
      e.invalid(f + ".envFrom", q(""), "must specify one of: `configMapRef` or `secretRef`");
    else if (sources > 1)
      e.invalid(f + ".envFrom", q(""), "may not have more than one field specified at a time");
  }
}

// GetVolumeMountMap / GetVolumeDeviceMap: name -> path (the last of a name wins).
std::map<std::string, std::string> path_map(const json::object& c, std::string_view list, std::string_view path_key) {
  std::map<std::string, std::string> out;
  for (const auto* m : items(c, list)) out[string_at(*m, "name")] = string_at(*m, path_key);
  return out;
}
std::map<std::string, std::string> device_map(const json::object& c) {
  return path_map(c, "volumeDevices", "devicePath");
}

// ValidateVolumeDevices: block devices come from claims (PVC or ephemeral volumes).
void volume_devices(Errors& e, const json::object& c, const std::map<std::string, const json::object*>& vols,
                    const std::string& f) {
  const auto mounts = path_map(c, "volumeMounts", "mountPath");
  const auto devs = items(c, "volumeDevices");
  std::set<std::string> paths, names;
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const json::object& d = *devs[i];
    const std::string df = fmt::format("{}.volumeDevices[{}]", f, i);
    const std::string name = string_at(d, "name"), path = string_at(d, "devicePath");
    const auto vol = vols.find(name);
    const bool matched = vol != vols.end();
    const bool claim =
        matched && (present(*vol->second, "persistentVolumeClaim") || present(*vol->second, "ephemeral"));
    if (name.empty()) e.required(df + ".name");
    if (names.count(name)) e.invalid(df + ".name", q(name), "must be unique");
    if (matched && !claim)
      e.invalid(df + ".name", q(name),
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode");
    if (!matched) e.not_found(df + ".name", q(name));
    if (path.empty()) e.required(df + ".devicePath");
    if (paths.count(path)) e.invalid(df + ".devicePath", q(path), "must be unique");
    if (!path.empty() && !path_backstep_errors(path).empty())
      e.invalid(df + ".devicePath", q(path), "can not contain backsteps ('..')");
    else
      paths.insert(path);
    if (mounts.count(name)) e.invalid(df + ".name", q(name), "must not already exist in volumeMounts");
    if (std::any_of(mounts.begin(), mounts.end(), [&](const auto& m) { return m.second == path; }))
      e.invalid(df + ".devicePath", q(path), "must not already exist as a path in volumeMounts");
    if (!name.empty()) names.insert(name);
  }
}

// ValidateVolumeMounts (subPath, subPathExpr and mountPropagation errors name the list: sic).
void volume_mounts(Errors& e, const json::object& c, const std::map<std::string, const json::object*>& vols,
                   const std::string& f) {
  const auto mounts = items(c, "volumeMounts");
  const std::string lf = f + ".volumeMounts";
  std::set<std::string> points;
  const auto devices = device_map(c);
  const json::object* sc = object_at(c, "securityContext");
  const bool privileged = sc && true_at(*sc, "privileged");
  for (std::size_t i = 0; i < mounts.size(); ++i) {
    const json::object& m = *mounts[i];
    const std::string mf = fmt::format("{}[{}]", lf, i);
    const std::string name = string_at(m, "name");
    if (name.empty()) e.required(mf + ".name");
    if (!vols.count(name)) e.not_found(mf + ".name", q(name));
    const std::string path = string_at(m, "mountPath");
    if (path.empty()) e.required(mf + ".mountPath");
    if (points.count(path)) e.invalid(mf + ".mountPath", q(path), "must be unique");
    points.insert(path);
    if (devices.count(name)) e.invalid(mf + ".name", q(name), "must not already exist in volumeDevices");
    if (std::any_of(devices.begin(), devices.end(), [&](const auto& d) { return d.second == path; }))
      e.invalid(mf + ".mountPath", q(path), "must not already exist as a path in volumeDevices");
    const std::string sub = string_at(m, "subPath");
    const std::string expr = string_at(m, "subPathExpr");
    if (!sub.empty()) local_descending_path(e, lf + ".subPath", sub);
    if (!expr.empty()) {
      if (!sub.empty()) e.invalid(mf + ".subPathExpr", q(expr), "subPathExpr and subPath are mutually exclusive");
      local_descending_path(e, lf + ".subPathExpr", expr);
    }
    if (present(m, "mountPropagation")) {
      // validateMountPropagation.
      const std::string mp = string_at(m, "mountPropagation");
      if (mp != "Bidirectional" && mp != "HostToContainer" && mp != "None")
        e.not_supported(lf + ".mountPropagation", mp, {"Bidirectional", "HostToContainer", "None"});
      if (mp == "Bidirectional" && !privileged)
        e.forbidden(lf + ".mountPropagation",
                    "Bidirectional mount propagation is available only to privileged containers");
    }
    // validateMountRecursiveReadOnly.
    if (present(m, "recursiveReadOnly")) {
      const std::string rro = string_at(m, "recursiveReadOnly");
      if (rro == "Enabled" || rro == "IfPossible") {
        if (!true_at(m, "readOnly"))
          e.forbidden(lf + ".recursiveReadOnly", "may only be specified when readOnly is true");
        if (present(m, "mountPropagation") && string_at(m, "mountPropagation") != "None")
          e.forbidden(lf + ".recursiveReadOnly",
                      "may only be specified when mountPropagation is None or not specified");
      } else if (rro != "Disabled") {
        e.not_supported(lf + ".recursiveReadOnly", rro, {"Disabled", "Enabled", "IfPossible"});
      }
    }
  }
}

// validateContainerResourceName, by the model's rule (resources.hpp, which gpupool's own checks
// use too); the value, a ResourceName, prints bare: it has a String method.
void container_resource_name(Errors& e, const std::string& n, const std::string& f) {
  for (const auto& m : container_resource_name_errors(n)) e.invalid(f, n, m);
}

// ValidateResourceQuantityValue; a fraction of an integer resource shows Go's %#v of the
// resource.Quantity as ParseQuantity left it (validation_kinds.hpp GoQuantity).
void resource_quantity(Errors& e, const std::string& n, const json::value& v, const std::string& f) {
  const auto qv = quantity_of(v);
  if (!qv) return;
  if (qv->is_negative()) e.invalid(f, q(qv->to_string()), "must be greater than or equal to 0");
  // IsIntegerResourceName: the object counts and every extended resource.
  if (!is_integer_resource_name(n)) return;
  const auto g = go_parse_quantity(quantity_text(v));
  if ((g ? g->milli_value() : qv->milli_value()) % 1000 != 0)
    e.invalid(f, g ? g->go() : q(qv->to_string()), "must be an integer");
}

// validateResourceQuantityHugePageValue: a whole number of pages (IsHugePageResourceValueDivisible).
void hugepage_value(Errors& e, const std::string& n, const json::value& v, const std::string& f) {
  if (!is_hugepages_resource_name(n)) return;
  const auto qv = quantity_of(v);
  if (!qv) return;
  std::optional<Quantity> page;
  try {
    page = Quantity::parse(n.substr(std::string_view("hugepages-").size()));
  } catch (const std::exception&) {}
  const bool divisible =
      page && page->milli_value() > 0 && page->milli_value() % 1000 == 0 && qv->value() % page->value() == 0;
  if (!divisible)
    e.invalid(f, q(qv->to_string()), fmt::format("{} is not positive integer multiple of {}", qv->to_string(), n));
}

// validateResourceRequirements with validateContainerResourceName. (Kubernetes walks the two Go
// maps in random order; the embedded server walks them in the object's order.)
void resource_requirements(Errors& e, const json::object* res, const std::string& rf) {
  if (!res) return;
  const json::object* limits = object_at(*res, "limits");
  const json::object* requests = object_at(*res, "requests");
  bool cpu_or_memory = false, huge = false;
  // Each list's names and quantities; for requests, then the limit they must respect.
  for (const json::object* list : {limits, requests}) {
    if (!list) continue;
    const char* kind = list == limits ? "limits" : "requests";
    for (const auto& [k, v] : *list) {
      const std::string n(k);
      const std::string kf = fmt::format("{}.{}[{}]", rf, kind, n);
      container_resource_name(e, n, kf);
      resource_quantity(e, n, v, kf);
      if (list == limits) hugepage_value(e, n, v, kf);
      huge = huge || is_hugepages_resource_name(n);
      cpu_or_memory = cpu_or_memory || n == "cpu" || n == "memory";
      if (list == limits) continue;
      const json::value* lim = limits ? limits->if_contains(k) : nullptr;
      const auto req = quantity_of(v);
      if (lim && req) {
        if (const auto l = quantity_of(*lim)) {
          if (*req != *l && !is_overcommit_allowed(n))
            e.invalid(rf + ".requests", q(req->to_string()),
                      fmt::format("must be equal to {} limit of {}", n, l->to_string()));
          else if (*req > *l)
            e.invalid(rf + ".requests", q(req->to_string()),
                      fmt::format("must be less than or equal to {} limit of {}", n, l->to_string()));
        }
      } else if (!lim && !is_overcommit_allowed(n)) {
        e.required(rf + ".limits", "Limit must be set for non overcommitable resources");
      }
      hugepage_value(e, n, v, kf);
    }
  }
  if (!cpu_or_memory && huge) e.forbidden(rf, "HugePages require cpu or memory");
}
void container_resources(Errors& e, const json::object& c, const std::string& f) {
  resource_requirements(e, object_at(c, "resources"), f + ".resources");
}

// validateSeccompProfileField.
void seccomp_profile(Errors& e, const json::object* sp, const std::string& f) {
  if (!sp) return;
  const std::string type = string_at(*sp, "type");
  // validateSeccompProfileType.
  if (type.empty())
    e.required(f + ".type", "type is required when seccompProfile is set");
  else if (type != "Localhost" && type != "RuntimeDefault" && type != "Unconfined")
    e.not_supported(f + ".type", type, {"Localhost", "RuntimeDefault", "Unconfined"});
  const bool has_profile = present(*sp, "localhostProfile");
  if (type == "Localhost") {
    if (!has_profile)
      e.required(f + ".localhostProfile", "must be set when seccomp type is Localhost");
    else
      local_descending_path(e, f + ".localhostProfile", string_at(*sp, "localhostProfile"));
  } else if (has_profile) {
    e.invalid(f + ".localhostProfile",
              fmt::format("core.SeccompProfile{{Type:{}, LocalhostProfile:{}}}", q(type), go_pointer("string", true)),
              "can only be set when seccomp type is Localhost");
  }
}

// ValidateAppArmorProfileField.
void apparmor_profile(Errors& e, const json::object* p, const std::string& f) {
  if (!p) return;
  const std::string type = string_at(*p, "type");
  const bool has_profile = present(*p, "localhostProfile");
  const std::string profile = string_at(*p, "localhostProfile");
  if (type == "Localhost") {
    if (!has_profile) {
      e.required(f + ".localhostProfile", "must be set when AppArmor type is Localhost");
    } else {
      const auto b = profile.find_first_not_of(" \t\n\v\f\r");
      const auto l = profile.find_last_not_of(" \t\n\v\f\r");
      if (b == std::string::npos ? !profile.empty() : (b != 0 || l != profile.size() - 1))
        e.invalid(f + ".localhostProfile", q(profile), "must not be padded with whitespace");
      else if (profile.empty())
        e.required(f + ".localhostProfile", "must be set when AppArmor type is Localhost");
      if (profile.size() > 4095)
        e.out.push_back({"FieldValueTooLong", "Too long: may not be more than 4095 bytes", f + ".localhostProfile"});
    }
  } else if (type == "RuntimeDefault" || type == "Unconfined") {
    if (has_profile) e.invalid(f + ".localhostProfile", q(profile), "can only be set when AppArmor type is Localhost");
  } else if (type.empty()) {
    e.required(f + ".type", "type is required when appArmorProfile is set");
  } else {
    e.not_supported(f + ".type", type, {"Localhost", "RuntimeDefault", "Unconfined"});
  }
}

// validateWindowsSecurityContextOptions: a gMSA credential spec's name (a DNS-1123 subdomain)
// and size, and runAsUserName's domain and user parts. (Go's regexes count runes, these bytes.)
void windows_options(Errors& e, const json::object* wo, const std::string& f) {
  if (!wo) return;
  if (const json::value* n = wo->if_contains("gmsaCredentialSpecName"); n && n->is_string())
    e.invalid(f + ".gmsaCredentialSpecName", std::string(n->as_string()), dns1123_subdomain_errors(n->as_string()));
  if (const json::value* c = wo->if_contains("gmsaCredentialSpec"); c && c->is_string()) {
    const std::string spec(c->as_string());
    if (spec.empty())
      e.invalid(f + ".gmsaCredentialSpec", q(spec), "gmsaCredentialSpec cannot be an empty string");
    else if (spec.size() > 64 * 1024)
      e.invalid(f + ".gmsaCredentialSpec", q(spec), "gmsaCredentialSpec size must be under 64 KiB");
  }
  const json::value* u = wo->if_contains("runAsUserName");
  if (!u || !u->is_string()) return;
  const std::string name(u->as_string());
  const std::string uf = f + ".runAsUserName";
  if (name.empty()) return e.invalid(uf, q(name), "runAsUserName cannot be an empty string");
  if (std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 32 || c == 127; }))
    return e.invalid(uf, q(name), "runAsUserName cannot contain control characters");
  const auto slash = name.find('\\');
  if (slash != std::string::npos && name.find('\\', slash + 1) != std::string::npos)
    return e.invalid(uf, q(name), "runAsUserName cannot contain more than one backslash");
  const bool has_domain = slash != std::string::npos;
  const std::string domain = has_domain ? name.substr(0, slash) : "";
  const std::string user = has_domain ? name.substr(slash + 1) : name;
  if (domain.size() >= 256) e.invalid(uf, q(name), "runAsUserName's Domain length must be under 256 characters");
  static const std::regex netbios(R"(^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$)");
  static const std::regex dns(
      R"(^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$)");
  if (has_domain && !std::regex_match(domain, netbios) && !std::regex_match(domain, dns))
    e.invalid(uf, q(name), "runAsUserName's Domain doesn't match the NetBios nor the DNS format");
  if (user.empty())
    e.invalid(uf, q(name), "runAsUserName's User cannot be empty");
  else if (user.size() > 104)
    e.invalid(uf, q(name), "runAsUserName's User length must not be longer than 104 characters");
  if (!user.empty() && user.find_first_not_of(". ") == std::string::npos)
    e.invalid(uf, q(name), "runAsUserName's User cannot contain only periods or spaces");
  if (user.find_first_of("\"/\\:;|=,+*?<>@[]") != std::string::npos)
    e.invalid(uf, q(name), R"(runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[])");
}

// validateWindowsHostProcessPod: a hostProcess container's pod runs only hostProcess containers
// (set or inherited) on the host network. (The cluster allows privileged containers.)
void windows_host_process(Errors& e, const json::object& spec, const std::string& prefix) {
  auto host_process = [](const json::object* sc) -> std::optional<bool> {
    const json::object* wo = sc ? object_at(*sc, "windowsOptions") : nullptr;
    const json::value* hp = wo ? wo->if_contains("hostProcess") : nullptr;
    if (hp && hp->is_bool()) return hp->as_bool();
    return std::nullopt;
  };
  const auto pod = host_process(object_at(spec, "securityContext"));
  std::size_t count = 0, host = 0;
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {  // VisitContainersWithPath's order
    const auto cs = items(spec, list);
    for (std::size_t i = 0; i < cs.size(); ++i) {
      ++count;
      const auto c = host_process(object_at(*cs[i], "securityContext"));
      if (pod && c && *pod != *c)
        e.invalid(fmt::format("{}{}[{}].securityContext.windowsOptions.hostProcess", prefix, list, i),
                  *c ? "true" : "false",
                  fmt::format("pod hostProcess value must be identical if both are specified, was {}",
                              *pod ? "true" : "false"));
      if (c.value_or(pod.value_or(false))) ++host;
    }
  }
  if (host == 0) return;
  if (host != count) {
    std::string at = prefix;
    if (at.ends_with('.')) at.pop_back();
    e.invalid(at, q(""),
              "If pod contains any hostProcess containers then all containers must be HostProcess containers");
  }
  if (!true_at(spec, "hostNetwork"))
    e.invalid(prefix + "hostNetwork", "false", "hostNetwork must be true if pod contains any hostProcess containers");
}

// %#v of a container's core.SecurityContext (field order of the Go struct).
std::string go_security_context(const json::object& sc) {
  static const std::pair<const char*, const char*> kFields[] = {
      {"capabilities", "Capabilities:(*core.Capabilities)"},
      {"privileged", "Privileged:(*bool)"},
      {"seLinuxOptions", "SELinuxOptions:(*core.SELinuxOptions)"},
      {"windowsOptions", "WindowsOptions:(*core.WindowsSecurityContextOptions)"},
      {"runAsUser", "RunAsUser:(*int64)"},
      {"runAsGroup", "RunAsGroup:(*int64)"},
      {"runAsNonRoot", "RunAsNonRoot:(*bool)"},
      {"readOnlyRootFilesystem", "ReadOnlyRootFilesystem:(*bool)"},
      {"allowPrivilegeEscalation", "AllowPrivilegeEscalation:(*bool)"},
      {"procMount", "ProcMount:(*core.ProcMountType)"},
      {"seccompProfile", "SeccompProfile:(*core.SeccompProfile)"},
      {"appArmorProfile", "AppArmorProfile:(*core.AppArmorProfile)"}};
  std::string out = "core.SecurityContext{";
  bool first = true;
  for (const auto& [key, shown] : kFields) {
    out += first ? "" : ", ";
    first = false;
    out += fmt::format("{}({})", shown, present(sc, key) ? "0xc000000000" : "nil");
  }
  return out + "}";
}

// IsValidUserID / IsValidGroupID on each of `keys` that is set.
void id_ranges(Errors& e, const json::object& sc, std::initializer_list<const char*> keys, const std::string& f) {
  for (const char* k : keys)
    if (auto id = int_at(sc, k); id && (*id < 0 || *id > kMaxInt32))
      e.invalid(fmt::format("{}.{}", f, k), std::to_string(*id), kRangeError);
}

// ValidateSecurityContext (the cluster allows privileged containers: --allow-privileged).
void security_context(Errors& e, const json::object& c, const std::string& f) {
  const json::object* sc = object_at(c, "securityContext");
  if (!sc) return;
  const std::string sf = f + ".securityContext";
  id_ranges(e, *sc, {"runAsUser", "runAsGroup"}, sf);
  // (procMount needs the ProcMountType gate, off in v1.32: the field is dropped, not validated.)
  seccomp_profile(e, object_at(*sc, "seccompProfile"), sf + ".seccompProfile");
  const json::value* ape = sc->if_contains("allowPrivilegeEscalation");
  if (ape && ape->is_bool() && !ape->as_bool()) {
    if (true_at(*sc, "privileged"))
      e.invalid(sf, go_security_context(*sc),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true");
    if (const auto* caps = object_at(*sc, "capabilities"))
      if (const auto* add = array_at(*caps, "add"))
        for (const auto& cap : *add)
          if (cap.is_string() && cap.as_string() == "CAP_SYS_ADMIN")
            e.invalid(sf, go_security_context(*sc),
                      "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN");
  }
  windows_options(e, object_at(*sc, "windowsOptions"), sf + ".windowsOptions");
  apparmor_profile(e, object_at(*sc, "appArmorProfile"), sf + ".appArmorProfile");
}

// validateContainerCommon.
void container_common(Errors& e, const json::object& c, const std::string& f,
                      const std::map<std::string, const json::object*>& vols) {
  const std::string name = string_at(c, "name");
  if (name.empty())
    e.required(f + ".name");
  else
    e.invalid(f + ".name", name, dns1123_label_errors(name));
  if (string_at(c, "image").empty()) e.required(f + ".image");
  const std::string tmp = string_at(c, "terminationMessagePolicy");
  if (tmp.empty())
    e.required(f + ".terminationMessagePolicy");
  else if (tmp != "File" && tmp != "FallbackToLogsOnError")
    e.not_supported(f + ".terminationMessagePolicy", tmp, {"File", "FallbackToLogsOnError"});
  container_ports(e, c, f);
  container_env(e, c, f);
  container_env_from(e, c, f);
  volume_mounts(e, c, vols, f);
  volume_devices(e, c, vols, f);
  const std::string pull = string_at(c, "imagePullPolicy");
  if (pull.empty())
    e.required(f + ".imagePullPolicy");
  else if (pull != "Always" && pull != "IfNotPresent" && pull != "Never")
    e.not_supported(f + ".imagePullPolicy", pull, {"Always", "IfNotPresent", "Never"});
  container_resources(e, c, f);
  security_context(e, c, f);
}

// ValidatePortNumOrName.
void port_num_or_name(Errors& e, const json::value* port, const std::string& f) {
  if (port && port->is_string()) {
    const std::string name(port->as_string());
    e.invalid(f, name, port_name_errors(name));
  } else {
    const std::int64_t n = port && port->is_int64() ? port->as_int64() : 0;
    if (n < 1 || n > 65535) e.invalid(f, std::to_string(n), kPortRange);
  }
}

// validateHandler: exactly one of the handler types (probes: exec, httpGet, tcpSocket, grpc;
// lifecycle: exec, httpGet, tcpSocket, sleep).
void handler(Errors& e, const json::object& h, bool lifecycle, std::optional<std::int64_t> grace,
             const std::string& f) {
  int count = 0;
  for (const char* type : {"exec", "httpGet", "tcpSocket", "grpc", "sleep"}) {
    const std::string t = type;
    if ((t == "grpc" && lifecycle) || (t == "sleep" && !lifecycle)) continue;
    const json::object* a = object_at(h, type);
    if (!a) continue;
    const std::string af = f + "." + t;
    if (count++ > 0) {
      e.forbidden(af, "may not specify more than 1 handler type");
      continue;
    }
    if (t == "exec") {
      const json::array* cmd = array_at(*a, "command");
      if (!cmd || cmd->empty()) e.required(af + ".command");
    } else if (t == "httpGet") {
      if (string_at(*a, "path").empty()) e.required(af + ".path");
      port_num_or_name(e, a->if_contains("port"), af + ".port");
      const std::string scheme = string_at(*a, "scheme");
      if (scheme != "HTTP" && scheme != "HTTPS") e.not_supported(af + ".scheme", scheme, {"HTTP", "HTTPS"});
      if (const auto* headers = array_at(*a, "httpHeaders"))
        for (const auto& hv : *headers)
          if (hv.is_object()) {
            const std::string hn = string_at(hv.as_object(), "name");
            e.invalid(af + ".httpHeaders", hn, http_header_name_errors(hn));
          }
    } else if (t == "tcpSocket") {
      port_num_or_name(e, a->if_contains("port"), af + ".port");
    } else if (t == "grpc") {
      const std::int64_t port = int_at(*a, "port").value_or(0);
      if (port < 1 || port > 65535) e.invalid(af + ".port", std::to_string(port), kPortRange);
    } else if (t == "sleep") {
      // validateSleepAction (PodLifecycleSleepActionAllowZero is off in v1.32).
      const std::int64_t s = int_at(*a, "seconds").value_or(0);
      if (grace && (s <= 0 || s > *grace))
        e.invalid(af, std::to_string(s),
                  fmt::format("must be greater than 0 and less than terminationGracePeriodSeconds ({}). Enable "
                              "AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep.",
                              *grace));
    }
  }
  if (count == 0) e.required(f, "must specify a handler type");
}

void lifecycle(Errors& e, const json::object& c, std::optional<std::int64_t> grace, const std::string& f) {
  const json::object* lc = object_at(c, "lifecycle");
  if (!lc) return;
  for (const char* hook : {"postStart", "preStop"})
    if (const auto* h = object_at(*lc, hook)) handler(e, *h, true, grace, fmt::format("{}.lifecycle.{}", f, hook));
}

// validateLivenessProbe / validateReadinessProbe / validateStartupProbe around validateProbe.
void probe(Errors& e, const json::object& c, const char* which, std::optional<std::int64_t> grace,
           const std::string& f) {
  const json::object* p = object_at(c, which);
  if (!p) return;
  const std::string pf = fmt::format("{}.{}", f, which);
  handler(e, *p, false, grace, pf);
  for (const char* k :
       {"initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"})
    if (auto v = int_at(*p, k); v && *v < 0)
      e.invalid(fmt::format("{}.{}", pf, k), std::to_string(*v), "must be greater than or equal to 0");
  const auto tgps = int_at(*p, "terminationGracePeriodSeconds");
  if (tgps && *tgps <= 0)
    e.invalid(pf + ".terminationGracePeriodSeconds", std::to_string(*tgps), "must be greater than 0");
  const std::string w = which;
  if (w == "readinessProbe") {
    if (tgps)
      e.invalid(pf + ".terminationGracePeriodSeconds", std::to_string(*tgps), "must not be set for readinessProbes");
  } else if (const std::int64_t st = int_at(*p, "successThreshold").value_or(0); st != 1) {
    e.invalid(pf + ".successThreshold", std::to_string(st), "must be 1");
  }
}

void probes_and_lifecycle(Errors& e, const json::object& c, std::optional<std::int64_t> grace, const std::string& f) {
  lifecycle(e, c, grace, f);
  for (const char* which : {"livenessProbe", "readinessProbe", "startupProbe"}) probe(e, c, which, grace, f);
}

// checkHostPortConflicts: `<protocol>/<hostIP>/<hostPort>` unique across `containers`.
void host_port_conflicts(Errors& e, const std::vector<std::pair<const json::object*, std::size_t>>& containers,
                         const std::string& list) {
  std::set<std::string> seen;
  for (const auto& [c, ci] : containers) {
    const json::array* ports = array_at(*c, "ports");
    if (!ports) continue;
    for (std::size_t pi = 0; pi < ports->size(); ++pi) {
      if (!(*ports)[pi].is_object()) continue;
      const json::object& p = (*ports)[pi].as_object();
      const std::int64_t hp = int_at(p, "hostPort").value_or(0);
      if (hp == 0) continue;
      const std::string key = fmt::format("{}/{}/{}", string_at(p, "protocol"), string_at(p, "hostIP"), hp);
      // AccumulateUniqueHostPorts indexes the container in the list it was given (sic for init
      // containers: always [0]).
      if (!seen.insert(key).second) e.duplicate(fmt::format("{}[{}].ports[{}].hostPort", list, ci, pi), q(key));
    }
  }
}

// ---- pod-level fields ------------------------------------------------------------------------

}  // namespace

namespace {

// IsValidSysctlName: at most 253 characters of SysctlContainSlashFmt,
// `([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?`.
bool is_sysctl_name(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = name.find_first_of("./", start);
    const std::string seg = name.substr(start, end == std::string::npos ? std::string::npos : end - start);
    auto edge = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (seg.empty() || !edge(seg.front()) || !edge(seg.back())) return false;
    for (char c : seg)
      if (!edge(c) && c != '-' && c != '_') return false;
    if (end == std::string::npos) return true;
    start = end + 1;
  }
}

// validatePodDNSConfig.
void dns_config(Errors& e, const json::object& spec, const std::string& prefix) {
  const std::string f = prefix + "dnsConfig";
  const json::object* dc = object_at(spec, "dnsConfig");
  const json::array* ns = dc ? array_at(*dc, "nameservers") : nullptr;
  if (string_at(spec, "dnsPolicy") == "None") {
    if (!dc) return e.required(f, "must provide `dnsConfig` when `dnsPolicy` is None");
    if (!ns || ns->empty())
      return e.required(f + ".nameservers", "must provide at least one DNS nameserver when `dnsPolicy` is None");
  }
  if (!dc) return;
  auto strings = [](const json::array* a) {
    std::vector<std::string> out;
    if (a)
      for (const auto& v : *a) out.push_back(v.is_string() ? std::string(v.as_string()) : "");
    return out;
  };
  // A []string prints as Go's %#v: []string{"a", "b"}.
  auto go_strings = [](const std::vector<std::string>& v) {
    std::string out = "[]string{";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + go_quote(v[i]);
    return out + "}";
  };
  const auto servers = strings(ns);
  if (servers.size() > 3) e.invalid(f + ".nameservers", go_strings(servers), "must not have more than 3 nameservers");
  for (std::size_t i = 0; i < servers.size(); ++i)
    if (!ip::parse_ip(servers[i]))  // IsValidIP: ParseIPSloppy
      e.invalid(fmt::format("{}.nameservers[{}]", f, i), q(servers[i]),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
  const auto searches = strings(array_at(*dc, "searches"));
  if (searches.size() > 32) e.invalid(f + ".searches", go_strings(searches), "must not have more than 32 search paths");
  std::size_t chars = searches.empty() ? 0 : searches.size() - 1;
  for (const auto& s : searches) chars += s.size();
  if (chars > 2048)
    e.invalid(f + ".searches", go_strings(searches),
              "must not have more than 2048 characters (including spaces) in the search list");
  for (std::size_t i = 0; i < searches.size(); ++i) {
    // (RelaxedDNSSearchValidation is off in v1.32.)
    std::string s = searches[i];
    if (s.ends_with('.')) s.pop_back();
    e.invalid(fmt::format("{}.searches[{}]", f, i), s, dns1123_subdomain_errors(s));
  }
  if (const json::array* opts = array_at(*dc, "options"))
    for (std::size_t i = 0; i < opts->size(); ++i)
      if ((*opts)[i].is_object() && string_at((*opts)[i].as_object(), "name").empty())
        e.required(fmt::format("{}.options[{}]", f, i), "must not be empty");
}

// ValidateLabelSelector (matchLabels, then each requirement).
// unversionedvalidation.ValidateLabelSelector; `allow_invalid_values`: its
// AllowInvalidLabelValueInSelector option (the expressions' values are not checked).
void label_selector(Errors& e, const json::object& sel, const std::string& f, bool allow_invalid_values = false) {
  if (const json::object* ml = object_at(sel, "matchLabels"))
    for (const auto& [k, v] : *ml) {
      e.invalid(f + ".matchLabels", std::string(k), qualified_name_errors(k));
      const std::string val = v.is_string() ? std::string(v.as_string()) : "";
      e.invalid(f + ".matchLabels", val, label_value_errors(val));
    }
  const auto exprs = items(sel, "matchExpressions");
  for (std::size_t i = 0; i < exprs.size(); ++i) {
    const json::object& r = *exprs[i];
    const std::string rf = fmt::format("{}.matchExpressions[{}]", f, i);
    const std::string op = string_at(r, "operator");
    const json::array* values = array_at(r, "values");
    const std::size_t n = values ? values->size() : 0;
    if (op == "In" || op == "NotIn") {
      if (n == 0) e.required(rf + ".values", "must be specified when `operator` is 'In' or 'NotIn'");
    } else if (op == "Exists" || op == "DoesNotExist") {
      if (n > 0) e.forbidden(rf + ".values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    } else {
      e.invalid(rf + ".operator", q(op), "not a valid selector operator");
    }
    const std::string key = string_at(r, "key");
    e.invalid(rf + ".key", key, qualified_name_errors(key));
    for (std::size_t j = 0; j < n && !allow_invalid_values; ++j) {
      const std::string val = (*values)[j].is_string() ? std::string((*values)[j].as_string()) : "";
      e.invalid(fmt::format("{}.values[{}]", rf, j), val, label_value_errors(val));
    }
  }
}

// validateTopologySpreadConstraints.
void topology_spread(Errors& e, const json::object& spec, const std::string& prefix) {
  const auto cs = items(spec, "topologySpreadConstraints");
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const json::object& c = *cs[i];
    const std::string f = fmt::format("{}topologySpreadConstraints[{}]", prefix, i);
    const std::int64_t skew = int_at(c, "maxSkew").value_or(0);
    if (skew <= 0) e.invalid(f + ".maxSkew", std::to_string(skew), "must be greater than zero");
    const std::string key = string_at(c, "topologyKey");
    if (key.empty()) e.required(f + ".topologyKey", "can not be empty");
    const std::string when = string_at(c, "whenUnsatisfiable");
    if (when != "DoNotSchedule" && when != "ScheduleAnyway")
      e.not_supported(f + ".whenUnsatisfiable", when, {"DoNotSchedule", "ScheduleAnyway"});
    for (std::size_t j = i + 1; j < cs.size(); ++j) {
      const json::object& o = *cs[j];
      if (string_at(o, "topologyKey") == key && string_at(o, "whenUnsatisfiable") == when) {
        e.duplicate(f + ".{topologyKey, whenUnsatisfiable}", q(fmt::format("{{{}, {}}}", key, when)));
        break;
      }
    }
    if (auto md = int_at(c, "minDomains")) {
      if (*md <= 0) e.invalid(f + ".minDomains", std::to_string(*md), "must be greater than zero");
      if (when != "DoNotSchedule")
        e.invalid(f + ".minDomains", std::to_string(*md),
                  fmt::format("can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {}", when));
    }
    for (const char* policy : {"nodeAffinityPolicy", "nodeTaintsPolicy"})
      if (present(c, policy)) {
        const std::string p = string_at(c, policy);
        if (p != "Honor" && p != "Ignore") e.not_supported(fmt::format("{}.{}", f, policy), p, {"Honor", "Ignore"});
      }
    const json::object* sel = object_at(c, "labelSelector");
    // validateMatchLabelKeysInTopologySpread.
    if (const json::array* keys = array_at(c, "matchLabelKeys"); keys && !keys->empty()) {
      std::set<std::string> selector_keys;
      if (sel) {
        if (const auto* ml = object_at(*sel, "matchLabels"))
          for (const auto& kv : *ml) selector_keys.insert(std::string(kv.key()));
        if (const auto* me = array_at(*sel, "matchExpressions"))
          for (const auto& r : *me)
            if (r.is_object()) selector_keys.insert(string_at(r.as_object(), "key"));
      } else {
        e.forbidden(f + ".matchLabelKeys", "must not be specified when labelSelector is not set");
      }
      for (std::size_t j = 0; j < keys->size(); ++j) {
        const std::string k = (*keys)[j].is_string() ? std::string((*keys)[j].as_string()) : "";
        const std::string kf = fmt::format("{}.matchLabelKeys[{}]", f, j);
        e.invalid(kf, k, qualified_name_errors(k));
        if (selector_keys.count(k)) e.invalid(kf, q(k), "exists in both matchLabelKeys and labelSelector");
      }
    }
    if (sel) label_selector(e, *sel, f + ".labelSelector");
  }
}

// unversionedvalidation.ValidateLabels on a node selector map at `field` (a pod's, a RuntimeClass's):
// each key a qualified name, each value a label value.
void node_selector_labels(Errors& e, const json::object* selector, const std::string& field) {
  if (!selector) return;
  for (const auto& [k, v] : *selector) {
    e.invalid(field, std::string(k), qualified_name_errors(k));
    const std::string val = v.is_string() ? std::string(v.as_string()) : "";
    e.invalid(field, val, label_value_errors(val));
  }
}

// ValidateTolerations, by the model's rule for one toleration (taint.hpp toleration_errors).
void tolerations(Errors& e, const json::object& spec, const std::string& prefix) {
  const auto ts = items(spec, "tolerations");
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const json::object& t = *ts[i];
    const auto errs =
        toleration_errors(string_at(t, "key"), string_at(t, "operator"), string_at(t, "value"), string_at(t, "effect"),
                          present(t, "tolerationSeconds"), fmt::format("{}tolerations[{}]", prefix, i));
    for (const auto& fe : errs) {
      if (fe.supported.empty())
        e.invalid(fe.field, q(fe.value), fe.detail);
      else {
        std::string list;
        for (const auto& s : fe.supported) list += (list.empty() ? "" : ", ") + q(s);
        e.out.push_back({"FieldValueNotSupported",
                         fmt::format("Unsupported value: {}: supported values: {}", q(fe.value), list), fe.field});
      }
    }
  }
}

// ValidateNodeFieldSelectorRequirement, with all its errors. (The model's validate(..., is_field)
// throws one error of its own wording; scheduling.hpp is to adopt this one.)
void node_field_requirement(Errors& e, const json::object& r, const std::string& f) {
  const std::string op = string_at(r, "operator");
  const json::array* values = array_at(r, "values");
  const std::size_t n = values ? values->size() : 0;
  if (op == "In" || op == "NotIn") {
    if (n != 1)
      e.required(f + ".values", "must be only one value when `operator` is 'In' or 'NotIn' for node field selector");
  } else {
    e.invalid(f + ".operator", q(op), "not a valid selector operator");
  }
  const std::string key = string_at(r, "key");
  if (key != "metadata.name") return e.invalid(f + ".key", q(key), "not a valid field selector key");
  for (std::size_t i = 0; i < n; ++i) {
    const std::string v = (*values)[i].is_string() ? std::string((*values)[i].as_string()) : "";
    e.invalid(fmt::format("{}.values[{}]", f, i), v, dns1123_subdomain_errors(v));  // ValidateNodeName
  }
}

// ValidateNodeSelectorTerm: each requirement by the model's rule (scheduling.hpp validate, one
// copy of ValidateNodeSelectorRequirement), worded as field.ErrorList words them.
void node_selector_term(Errors& e, const json::object& term, const std::string& tf) {
  for (const char* list : {"matchExpressions", "matchFields"}) {
    const auto rs = items(term, list);
    for (std::size_t j = 0; j < rs.size(); ++j) {
      const json::object& r = *rs[j];
      const std::string f = fmt::format("{}.{}[{}]", tf, list, j);
      if (std::string_view(list) == "matchFields") {
        node_field_requirement(e, r, f);
        continue;
      }
      NodeSelectorRequirement req;
      req.key = string_at(r, "key");
      const std::string op = string_at(r, "operator");
      const auto known = parse_node_selector_operator(op);
      if (!known) {  // ValidateNodeSelectorRequirement's default case, then the key's errors
        e.invalid(f + ".operator", q(op), "not a valid selector operator");
        for (const auto& m : qualified_name_errors(req.key)) e.invalid(f + ".key", q(req.key), m);
        continue;
      }
      req.op = *known;
      if (const auto* vs = array_at(r, "values"))
        for (const auto& v : *vs) req.values.push_back(v.is_string() ? std::string(v.as_string()) : "");
      for (const ValidationError& err : requirement_errors(req, f)) {
        const std::string& rule = err.rule();
        if (rule.starts_with("Required value"))
          e.out.push_back({"FieldValueRequired", rule, err.field()});
        else if (rule.starts_with("Forbidden"))
          e.out.push_back({"FieldValueForbidden", rule, err.field()});
        else
          e.invalid(err.field(), q(err.value()), rule);
      }
    }
  }
}

// A weight of a preferred term (ValidatePreferredSchedulingTerms, validateWeightedPodAffinityTerms).
void weight(Errors& e, const json::object& term, const std::string& f) {
  const std::int64_t w = int_at(term, "weight").value_or(0);
  if (w <= 0 || w > 100) e.invalid(f + ".weight", std::to_string(w), "must be in the range 1-100");
}

// validateMatchLabelKeysAndMismatchLabelKeys (after a new pod's keys were merged into the
// selector: a key both listed and in the selector is one the user gave twice). Its "exists in both
// matchLabelKeys and labelSelector" names the term indexed by the key's position (sic).
void match_label_keys(Errors& e, const json::object& term, const std::string& f) {
  const json::object* sel = object_at(term, "labelSelector");
  const auto match = strings_at(term, "matchLabelKeys"), mismatch = strings_at(term, "mismatchLabelKeys");
  for (const auto& [list, keys] : {std::pair{"matchLabelKeys", &match}, std::pair{"mismatchLabelKeys", &mismatch}}) {
    if (keys->empty()) continue;
    const std::string lf = fmt::format("{}.{}", f, list);
    if (!sel) {
      e.forbidden(lf, "must not be specified when labelSelector is not set");
      continue;
    }
    for (std::size_t i = 0; i < keys->size(); ++i)
      e.invalid(fmt::format("{}[{}]", lf, i), (*keys)[i], qualified_name_errors((*keys)[i]));
  }
  if (sel) {
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < match.size(); ++i) index[match[i]] = i;
    std::set<std::string> seen;
    if (const auto* ml = object_at(*sel, "matchLabels"))
      for (const auto& kv : *ml) seen.insert(std::string(kv.key()));
    for (const auto* r : items(*sel, "matchExpressions")) {
      const std::string key = string_at(*r, "key");
      if (auto it = index.find(key); it != index.end() && seen.count(key))
        e.invalid(fmt::format("{}[{}]", f, it->second), q(key), "exists in both matchLabelKeys and labelSelector");
      seen.insert(key);
    }
  }
  const std::set<std::string> mismatched(mismatch.begin(), mismatch.end());
  for (std::size_t i = 0; i < match.size(); ++i)
    if (mismatched.count(match[i]))
      e.invalid(fmt::format("{}.matchLabelKeys[{}]", f, i), q(match[i]),
                "exists in both matchLabelKeys and mismatchLabelKeys");
}

// validatePodAffinityTerm.
void pod_affinity_term(Errors& e, const json::object& term, const std::string& f) {
  if (const auto* sel = object_at(term, "labelSelector")) label_selector(e, *sel, f + ".labelSelector");
  if (const auto* sel = object_at(term, "namespaceSelector")) label_selector(e, *sel, f + ".namespaceSelector");
  if (const json::array* nss = array_at(term, "namespaces"))
    for (const auto& ns : *nss) {
      const std::string n = ns.is_string() ? std::string(ns.as_string()) : "";
      e.invalid(f + ".namespace", n, dns1123_label_errors(n));
    }
  match_label_keys(e, term, f);
  const std::string key = string_at(term, "topologyKey");
  if (key.empty()) e.required(f + ".topologyKey", "can not be empty");
  e.invalid(f + ".topologyKey", key, qualified_name_errors(key));
}

// validateAffinity: node affinity (ValidateNodeSelector, ValidatePreferredSchedulingTerms), then
// pod affinity and anti-affinity (required terms, then weighted ones).
void affinity(Errors& e, const json::object& spec, const std::string& prefix) {
  const json::object* a = object_at(spec, "affinity");
  if (!a) return;
  const std::string af = prefix + "affinity";
  if (const auto* na = object_at(*a, "nodeAffinity")) {
    const std::string nf = af + ".nodeAffinity";
    if (const auto* req = object_at(*na, "requiredDuringSchedulingIgnoredDuringExecution")) {
      const std::string tf = nf + ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
      const auto terms = items(*req, "nodeSelectorTerms");
      if (terms.empty()) e.required(tf, "must have at least one node selector term");
      for (std::size_t i = 0; i < terms.size(); ++i) node_selector_term(e, *terms[i], fmt::format("{}[{}]", tf, i));
    }
    const auto preferred = items(*na, "preferredDuringSchedulingIgnoredDuringExecution");
    for (std::size_t i = 0; i < preferred.size(); ++i) {
      const std::string pf = fmt::format("{}.preferredDuringSchedulingIgnoredDuringExecution[{}]", nf, i);
      weight(e, *preferred[i], pf);
      node_selector_term(e, object_at(*preferred[i], "preference") ? *object_at(*preferred[i], "preference") : kNone,
                         pf + ".preference");
    }
  }
  for (const char* kind : {"podAffinity", "podAntiAffinity"}) {
    const json::object* pa = object_at(*a, kind);
    if (!pa) continue;
    const std::string pf = fmt::format("{}.{}", af, kind);
    const auto required = items(*pa, "requiredDuringSchedulingIgnoredDuringExecution");
    for (std::size_t i = 0; i < required.size(); ++i)
      pod_affinity_term(e, *required[i], fmt::format("{}.requiredDuringSchedulingIgnoredDuringExecution[{}]", pf, i));
    const auto preferred = items(*pa, "preferredDuringSchedulingIgnoredDuringExecution");
    for (std::size_t i = 0; i < preferred.size(); ++i) {
      const std::string wf = fmt::format("{}.preferredDuringSchedulingIgnoredDuringExecution[{}]", pf, i);
      weight(e, *preferred[i], wf);
      const json::object* term = object_at(*preferred[i], "podAffinityTerm");
      pod_affinity_term(e, term ? *term : kNone, wf + ".podAffinityTerm");
    }
  }
}

// validatePodSpecSecurityContext (hostNetwork, hostPID and hostIPC live in it in the internal type).
void pod_security_context(Errors& e, const json::object& spec, const std::string& prefix) {
  const json::object* sc = object_at(spec, "securityContext");
  if (!sc) return;
  const std::string f = prefix + "securityContext";
  id_ranges(e, *sc, {"fsGroup", "runAsUser", "runAsGroup"}, f);
  if (const json::array* groups = array_at(*sc, "supplementalGroups"))
    for (std::size_t i = 0; i < groups->size(); ++i) {
      const json::value& g = (*groups)[i];
      const std::int64_t gid = g.is_int64()    ? g.as_int64()
                               : g.is_uint64() ? static_cast<std::int64_t>(g.as_uint64())
                                               : 0;
      if (gid < 0 || gid > kMaxInt32)
        e.invalid(fmt::format("{}.supplementalGroups[{}]", f, i), std::to_string(gid), kRangeError);
    }
  if (true_at(spec, "shareProcessNamespace") && true_at(spec, "hostPID"))
    e.invalid(f + ".shareProcessNamespace", "true", "ShareProcessNamespace and HostPID cannot both be enabled");
  if (const json::array* sysctls = array_at(*sc, "sysctls")) {
    // validateSysctls with ValidateHostSysctl.
    std::set<std::string> names;
    for (std::size_t i = 0; i < sysctls->size(); ++i) {
      const json::object& s = (*sysctls)[i].is_object() ? (*sysctls)[i].as_object() : kNone;
      const std::string nf = fmt::format("{}.sysctls[{}].name", f, i);
      const std::string name = string_at(s, "name");
      if (name.empty())
        e.required(nf);
      else if (!is_sysctl_name(name))
        e.invalid(nf, q(name),
                  "must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*"
                  "[a-z0-9]([-_a-z0-9]*[a-z0-9])?$");
      else if (names.count(name))
        e.duplicate(nf, q(name));
      // utilsysctl.GetNamespace: the name with '/' separators as '.', then its namespace.
      std::string n = name;
      if (const auto sep = n.find_first_of("./"); sep != std::string::npos && n[sep] == '/')
        for (auto& c : n) c = c == '/' ? '.' : c == '.' ? '/' : c;
      if (const auto star = n.find('*'); star != std::string::npos) n.resize(star);
      static const std::set<std::string> kIpc = {
          "kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
          "kernel.shm", "kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.msg"};
      const bool net = n.starts_with("net.");
      const bool ipc = kIpc.count(n) || n.starts_with("fs.mqueue.");
      if (true_at(spec, "hostNetwork") && net)
        e.invalid(nf, q(name), "may not be specified when 'hostNetwork' is true");
      else if (true_at(spec, "hostIPC") && ipc)
        e.invalid(nf, q(name), "may not be specified when 'hostIPC' is true");
      names.insert(name);
    }
  }
  if (present(*sc, "fsGroupChangePolicy")) {
    const std::string p = string_at(*sc, "fsGroupChangePolicy");
    if (p != "Always" && p != "OnRootMismatch")
      e.not_supported(f + ".fsGroupChangePolicy", p, {"Always", "OnRootMismatch"});
  }
  seccomp_profile(e, object_at(*sc, "seccompProfile"), f + ".seccompProfile");
  windows_options(e, object_at(*sc, "windowsOptions"), f + ".windowsOptions");
  apparmor_profile(e, object_at(*sc, "appArmorProfile"), f + ".appArmorProfile");
}

void name_rule(Errors& e, const json::object& spec, const char* key, const std::string& prefix,
               std::vector<std::string> (*rule)(std::string_view)) {
  const std::string v = string_at(spec, key);
  if (!v.empty()) e.invalid(prefix + key, v, rule(v));
}

// ValidateSeccompProfile: an annotation's seccomp profile.
void seccomp_annotation(Errors& e, const std::string& profile, const std::string& f) {
  if (profile == "runtime/default" || profile == "docker/default" || profile == "unconfined") return;
  if (profile.starts_with("localhost/")) return local_descending_path(e, f, profile.substr(10));
  e.invalid(f, q(profile), "must be a valid seccomp profile");
}

// ValidatePodSpecificAnnotations: a mirror pod names its node, a deletion cost is an int32, and the
// seccomp and AppArmor annotations (seccomp's paths name the key as a child, `.key`: sic), and the
// tolerations annotation (its path too).
void pod_annotations(Errors& e, const json::object& ann, const json::object& spec, const std::string& f) {
  auto value = [&](std::string_view key) { return string_at(ann, key); };
  if (ann.contains("kubernetes.io/config.mirror") && string_at(spec, "nodeName").empty())
    e.invalid(f + "[kubernetes.io/config.mirror]", q(value("kubernetes.io/config.mirror")),
              "must set spec.nodeName if mirror pod annotation is set");
  // ValidateTolerationsInPodAnnotations: the annotation's JSON decoded into []core.Toleration,
  // then ValidateTolerations under the key.
  if (const std::string tv = value("scheduler.alpha.kubernetes.io/tolerations"); !tv.empty()) {
    static const GoField kFields[] = {{"key", "Key", "string"},
                                      {"operator", "Operator", "core.TolerationOperator"},
                                      {"value", "Value", "string"},
                                      {"effect", "Effect", "core.TaintEffect"},
                                      {"tolerationSeconds", "TolerationSeconds", "int64"}};
    json::array list;
    if (const auto error = go_decode_list(tv, "Toleration", kFields, list)) {
      e.invalid(f, q("scheduler.alpha.kubernetes.io/tolerations"), *error);
    } else if (!list.empty()) {
      json::object as_spec;
      as_spec["tolerations"] = std::move(list);
      tolerations(e, as_spec, f + ".scheduler.alpha.kubernetes.io/");
    }
  }
  if (ann.contains("controller.kubernetes.io/pod-deletion-cost")) {
    // GetDeletionCostFromPodAnnotations: no '+', no leading zero, a 32-bit integer.
    const std::string v = value("controller.kubernetes.io/pod-deletion-cost");
    bool ok = !v.empty() && (v[0] == '-' || v == "0" || (v[0] >= '1' && v[0] <= '9'));
    if (ok) {
      const std::string digits = v[0] == '-' ? v.substr(1) : v;
      ok = !digits.empty() && digits.size() <= 10 && std::all_of(digits.begin(), digits.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      });
      if (ok) {
        const std::int64_t n = std::stoll(v);
        ok = n >= -2147483648LL && n <= kMaxInt32;
      }
    }
    if (!ok) e.invalid(f + "[controller.kubernetes.io/pod-deletion-cost]", q(v), "must be a 32bit integer");
  }
  if (ann.contains("seccomp.security.alpha.kubernetes.io/pod"))
    seccomp_annotation(e, value("seccomp.security.alpha.kubernetes.io/pod"),
                       f + ".seccomp.security.alpha.kubernetes.io/pod");
  for (const auto& [k, v] : ann)
    if (k.starts_with("container.seccomp.security.alpha.kubernetes.io/"))
      seccomp_annotation(e, v.is_string() ? std::string(v.as_string()) : "",
                         fmt::format("{}.{}", f, std::string_view(k)));
  static constexpr std::string_view kAppArmor = "container.apparmor.security.beta.kubernetes.io/";
  for (const auto& [k, v] : ann) {
    if (!k.starts_with(kAppArmor)) continue;
    const std::string container(k.substr(kAppArmor.size()));
    bool found = false;
    for (const char* list : {"containers", "initContainers", "ephemeralContainers"})
      for (const auto* c : items(spec, list)) found = found || string_at(*c, "name") == container;
    const std::string kf = fmt::format("{}[{}]", f, std::string_view(k));
    if (!found) e.invalid(kf, q(container), "container not found");
    const std::string profile = v.is_string() ? std::string(v.as_string()) : "";
    if (!profile.empty() && profile != "runtime/default" && profile != "unconfined" &&
        !profile.starts_with("localhost/"))
      e.invalid(kf, q(profile), fmt::format("invalid AppArmor profile name: {}", q(profile)));
  }
}

// ValidatePodCreate's validateSeccompAnnotationsAndFields and
// validateAppArmorAnnotationsAndFieldsMatchOnCreate: where an annotation and a field both give a
// profile (the pod's, then each container's in VisitContainersWithPath's order), they agree.
void annotations_match_fields(Errors& e, const json::object& ann, const json::object& spec, const std::string& prefix) {
  // validateSeccompAnnotationsAndFieldsMatch.
  auto seccomp = [&](const std::string& annotation, const json::object& field, const std::string& f) {
    const std::string type = string_at(field, "type");
    const char* kType = "seccomp type in annotation and field must match";
    if (type == "Unconfined" && annotation != "unconfined")
      e.forbidden(f + ".type", kType);
    else if (type == "RuntimeDefault" && annotation != "runtime/default" && annotation != "docker/default")
      e.forbidden(f + ".type", kType);
    else if (type == "Localhost") {
      if (!annotation.starts_with("localhost/"))
        e.forbidden(f + ".type", kType);
      else if (!present(field, "localhostProfile") || annotation.substr(10) != string_at(field, "localhostProfile"))
        e.forbidden(f + ".localhostProfile", "seccomp profile in annotation and field must match");
    }
  };
  const json::object* psc = object_at(spec, "securityContext");
  if (const json::object* sp = psc ? object_at(*psc, "seccompProfile") : nullptr)
    if (const json::value* a = ann.if_contains("seccomp.security.alpha.kubernetes.io/pod"); a && a->is_string())
      seccomp(std::string(a->as_string()), *sp, prefix + "securityContext.seccompProfile");
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    const auto cs = items(spec, list);
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const json::object* sc = object_at(*cs[i], "securityContext");
      const json::object* sp = sc ? object_at(*sc, "seccompProfile") : nullptr;
      const json::value* a =
          ann.if_contains("container.seccomp.security.alpha.kubernetes.io/" + string_at(*cs[i], "name"));
      if (sp && a && a->is_string())
        seccomp(std::string(a->as_string()), *sp,
                fmt::format("{}{}[{}].securityContext.seccompProfile", prefix, list, i));
    }
  }
  // AppArmor (not for Windows pods): the container's profile, else the pod's.
  if (const json::object* os = object_at(spec, "os"); os && string_at(*os, "name") == "windows") return;
  const json::object* pod_profile = psc ? object_at(*psc, "appArmorProfile") : nullptr;
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    const auto cs = items(spec, list);
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const json::object* sc = object_at(*cs[i], "securityContext");
      const json::object* profile =
          sc && object_at(*sc, "appArmorProfile") ? object_at(*sc, "appArmorProfile") : pod_profile;
      const json::value* a =
          ann.if_contains("container.apparmor.security.beta.kubernetes.io/" + string_at(*cs[i], "name"));
      if (!profile || !a || !a->is_string()) continue;
      const std::string annotation(a->as_string());
      const std::string f = fmt::format("{}{}[{}].securityContext.appArmorProfile", prefix, list, i);
      const std::string type = string_at(*profile, "type");
      const char* kType = "apparmor type in annotation and field must match";
      if (type == "Unconfined" && annotation != "unconfined")
        e.forbidden(f + ".type", kType);
      else if (type == "RuntimeDefault" && annotation != "runtime/default")
        e.forbidden(f + ".type", kType);
      else if (type == "Localhost") {
        if (!annotation.starts_with("localhost/"))
          e.forbidden(f + ".type", kType);
        else if (!present(*profile, "localhostProfile") ||
                 annotation.substr(10) != string_at(*profile, "localhostProfile"))
          e.forbidden(f + ".localhostProfile", "apparmor profile in annotation and field must match");
      }
    }
  }
}

// validateWindows: the Linux-only fields a Windows pod may not set, the pod's (in the internal
// PodSecurityContext's order, hostPID, hostIPC and shareProcessNamespace among them) and each
// container's, init containers first.
void windows_only(Errors& e, const json::object& spec, const std::string& prefix) {
  const char* const kForbidden = "cannot be set for a windows pod";
  const json::object& psc = object_at(spec, "securityContext") ? *object_at(spec, "securityContext") : kNone;
  // {JSON object (the spec or its securityContext), key, path under the prefix, set when true only}
  struct Field {
    bool in_spec;
    const char* key;
    const char* path;
  };
  static constexpr Field kPod[] = {{false, "appArmorProfile", "securityContext.appArmorProfile"},
                                   {false, "seLinuxOptions", "securityContext.seLinuxOptions"},
                                   {true, "hostPID", "hostPID"},
                                   {true, "hostIPC", "hostIPC"},
                                   {false, "seccompProfile", "securityContext.seccompProfile"},
                                   {false, "fsGroup", "securityContext.fsGroup"},
                                   {false, "fsGroupChangePolicy", "securityContext.fsGroupChangePolicy"},
                                   {false, "sysctls", "securityContext.sysctls"},
                                   {true, "shareProcessNamespace", "shareProcessNamespace"},
                                   {false, "runAsUser", "securityContext.runAsUser"},
                                   {false, "runAsGroup", "securityContext.runAsGroup"},
                                   {false, "supplementalGroups", "securityContext.supplementalGroups"}};
  for (const auto& fd : kPod) {
    const json::object& o = fd.in_spec ? spec : psc;
    const std::string k = fd.key;
    // hostPID and hostIPC are bools (set when true); sysctls counts when not empty.
    const bool set = (k == "hostPID" || k == "hostIPC") ? true_at(o, fd.key)
                     : k == "sysctls"                   ? !items(o, fd.key).empty()
                                                        : present(o, fd.key);
    if (set) e.forbidden(prefix + fd.path, kForbidden);
  }
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    const auto cs = items(spec, list);
    for (std::size_t i = 0; i < cs.size(); ++i)
      if (const json::object* sc = object_at(*cs[i], "securityContext"))
        for (const char* key :
             {"appArmorProfile", "seLinuxOptions", "seccompProfile", "capabilities", "readOnlyRootFilesystem",
              "privileged", "allowPrivilegeEscalation", "procMount", "runAsUser", "runAsGroup"})
          if (present(*sc, key))
            e.forbidden(fmt::format("{}{}[{}].securityContext.{}", prefix, list, i, key), kForbidden);
  }
}

// validateContainerOnlyForPod: an image without leading or trailing whitespace (strings.TrimSpace).
void image_whitespace(Errors& e, const json::object& c, const std::string& f) {
  const std::string image = string_at(c, "image");
  const auto b = image.find_first_not_of(" \t\n\v\f\r");
  const bool padded =
      b == std::string::npos ? !image.empty() : (b != 0 || image.find_last_not_of(" \t\n\v\f\r") != image.size() - 1);
  if (padded) e.invalid(f + ".image", q(image), "must not have leading or trailing whitespace");
}

// ---- PersistentVolumes: ValidatePersistentVolumeSpec (not inline) --------------------------------

// The source of a PersistentVolume (a PersistentVolumeSource, Go's order) at spec.<key>: where a
// rule is the pod volume's (other_volume_source), it is taken from there; the PV's own variants
// add their secret references' namespaces and the like.
void pv_source(Errors& e, const std::string& k, const json::object& src, const std::string& sf,
               const std::string& pv_name) {
  static const json::object kNoVolume;
  // A SecretReference's namespace, required besides the name the pod volume's rules require.
  auto secret_namespace = [&] {
    if (const json::object* ref = object_at(src, "secretRef"); ref && string_at(*ref, "namespace").empty())
      e.required(sf + ".secretRef.namespace");
  };
  if (k == "hostPath") {
    host_path_source(e, src, sf);
  } else if (k == "nfs") {
    nfs_source(e, src, sf);
  } else if (k == "glusterfs") {  // validateGlusterfsPersistentVolumeSource
    other_volume_source(e, k, src, kNoVolume, sf, "spec", "");
    if (const json::value* ns = src.if_contains("endpointsNamespace"); ns && ns->is_string()) {
      const std::string name(ns->as_string());
      if (name.empty())
        e.invalid(sf + ".endpointsNamespace", q(name),
                  "if the endpointnamespace is set, it must be a valid namespace name");
      else
        e.invalid(sf + ".endpointsNamespace", name, dns1123_label_errors(name));  // ValidateNamespaceName
    }
  } else if (k == "iscsi") {  // validateISCSIPersistentVolumeSource (not the pod's rules)
    const std::string portal = string_at(src, "targetPortal");
    if (portal.empty()) e.required(sf + ".targetPortal");
    if (present(src, "initiatorName") && pv_name.size() + 1 + portal.size() > 64)
      e.invalid(sf + ".targetportal", q(portal),
                "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if "
                "iscsi.initiatorName is specified.");
    static const std::regex iqn(R"(iqn\.\d{4}-\d{2}\.([[:alnum:].-]+)(:[^,;*&$|\s]+)$)");
    static const std::regex eui("^eui.[[:alnum:]]{16}$");
    static const std::regex naa("^naa.[[:alnum:]]{32}$");
    auto bad_format = [&](const std::string& name) {  // a known prefix whose regex does not match
      return (name.starts_with("iqn") && !std::regex_search(name, iqn)) ||
             (name.starts_with("eui") && !std::regex_match(name, eui)) ||
             (name.starts_with("naa") && !std::regex_match(name, naa));
    };
    auto known_prefix = [](const std::string& name) {
      return name.starts_with("iqn") || name.starts_with("eui") || name.starts_with("naa");
    };
    if (const std::string name = string_at(src, "iqn"); name.empty())
      e.required(sf + ".iqn");
    else if (!known_prefix(name) || bad_format(name))
      e.invalid(sf + ".iqn", q(name), "must be valid format");
    if (auto lun = int_at(src, "lun"); lun && (*lun < 0 || *lun > 255))
      e.invalid(sf + ".lun", std::to_string(*lun), "must be between 0 and 255, inclusive");
    if ((true_at(src, "chapAuthDiscovery") || true_at(src, "chapAuthSession")) && !present(src, "secretRef"))
      e.required(sf + ".secretRef");
    if (const json::object* ref = object_at(src, "secretRef"); ref && string_at(*ref, "name").empty())
      e.required(sf + ".secretRef.name");
    if (const json::value* in = src.if_contains("initiatorName"); in && in->is_string()) {
      const std::string name(in->as_string());
      if (!known_prefix(name)) e.invalid(sf + ".initiatorname", q(name), "must be valid format");
      if (bad_format(name)) e.invalid(sf + ".initiatorname", q(name), "must be valid format");
    }
  } else if (k == "cinder" || k == "storageos") {  // validate{Cinder,StorageOS}PersistentVolumeSource
    other_volume_source(e, k, src, kNoVolume, sf, "spec", "");
    secret_namespace();
  } else if (k == "azureFile") {  // validateAzureFilePV
    other_volume_source(e, k, src, kNoVolume, sf, "spec", "");
    if (const json::value* ns = src.if_contains("secretNamespace"); ns && ns->is_string() && ns->as_string().empty())
      e.required(sf + ".secretNamespace");
  } else if (k == "local") {  // validateLocalVolumeSource
    const std::string path = string_at(src, "path");
    if (path.empty()) return e.required(sf + ".path");
    e.invalid(sf + ".path", path, path_backstep_errors(path));
  } else if (k == "csi") {                                // validateCSIPersistentVolumeSource
    const std::string driver = string_at(src, "driver");  // ValidateCSIDriverName
    if (driver.empty()) e.required(sf + ".driver");
    if (driver.size() > 63)
      e.out.push_back({"FieldValueTooLong", "Too long: may not be more than 63 bytes", sf + ".driver"});
    e.invalid(sf + ".driver", driver, dns1123_subdomain_errors(ascii::lower(driver)));
    if (string_at(src, "volumeHandle").empty()) e.required(sf + ".volumeHandle");
    for (const char* key :
         {"controllerPublishSecretRef", "controllerExpandSecretRef", "nodePublishSecretRef", "nodeExpandSecretRef"})
      if (const json::object* ref = object_at(src, key)) {  // validatePVSecretReference
        const std::string at = fmt::format("{}.{}", sf, key);
        const std::string name = string_at(*ref, "name"), ns = string_at(*ref, "namespace");
        if (name.empty())
          e.required(at + ".name");
        else
          e.invalid(at + ".name", name, dns1123_subdomain_errors(name));
        if (ns.empty())
          e.required(at + ".namespace");
        else
          e.invalid(at + ".namespace", ns, dns1123_label_errors(ns));
      }
  } else {  // the pod volume's rules (gcePersistentDisk at "persistentDisk", sic)
    other_volume_source(e, k, src, kNoVolume, sf, "spec", "");
  }
}

// path.Clean(p) == "/": an absolute path whose elements all resolve away.
bool cleans_to_root(const std::string& p) {
  if (!p.starts_with('/')) return false;
  std::size_t depth = 0;
  for (std::size_t at = 0; at <= p.size();) {
    const std::size_t end = std::min(p.find('/', at), p.size());
    const std::string_view part = std::string_view(p).substr(at, end - at);
    if (part == "..")
      depth = depth ? depth - 1 : 0;
    else if (!part.empty() && part != ".")
      ++depth;
    at = end + 1;
  }
  return depth == 0;
}

// A ResourceList as %#v prints it: nil, or its keys sorted with each Quantity's struct.
std::string go_resource_list(const json::value* list) {
  if (!list || !list->is_object()) return "core.ResourceList(nil)";
  std::string out = "core.ResourceList{";
  std::vector<std::string> keys;
  for (const auto& kv : list->as_object()) keys.emplace_back(kv.key());
  std::sort(keys.begin(), keys.end());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const json::value& v = list->as_object().at(keys[i]);
    const auto parsed = v.is_null() ? std::nullopt : go_parse_quantity(quantity_text(v));
    out += fmt::format("{}{}:{}", i ? ", " : "", q(keys[i]),
                       parsed ? parsed->go()
                              : "resource.Quantity{i:resource.int64Amount{value:0, scale:0}, "
                                "d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"\"}");  // (null: zero)
  }
  return out + "}";
}

}  // namespace

void access_mode_causes(const json::array* modes, const std::string& field, Causes& causes) {
  Errors e{causes};
  bool once_pod = false, other = false;  // ReadWriteOncePod only alone
  if (modes)
    for (const auto& m : *modes) {
      if (!m.is_string()) continue;
      const bool supported =
          m == "ReadOnlyMany" || m == "ReadWriteMany" || m == "ReadWriteOnce" || m == "ReadWriteOncePod";
      if (!supported)
        e.not_supported(field, std::string(m.as_string()),
                        {"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"});
      if (m == "ReadWriteOncePod")
        once_pod = true;
      else if (supported)
        other = true;
    }
  if (once_pod && other) e.forbidden(field, "may not use ReadWriteOncePod with other access modes");
}

void validate_persistent_volume_spec(const json::object& spec, const std::string& pv_name, Causes& causes) {
  Errors e{causes};
  const json::array* modes = array_at(spec, "accessModes");
  if (!modes || modes->empty()) e.required("spec.accessModes");
  access_mode_causes(modes, "spec.accessModes", causes);
  const json::value* capacity = spec.if_contains("capacity");
  const json::object* cap = object_at(spec, "capacity");
  if (!cap || cap->empty()) e.required("spec.capacity");
  if (!cap || !cap->contains("storage") || cap->size() > 1)
    e.out.push_back({"FieldValueNotSupported",
                     fmt::format("Unsupported value: {}: supported values: \"storage\"",
                                 go_resource_list(capacity && capacity->is_object() ? capacity : nullptr)),
                     "spec.capacity"});
  // Each quantity: validateBasicResource (Value, rounded away from zero, not negative), then
  // ValidatePositiveQuantityValue. (Go walks the map in random order; here sorted.)
  if (cap)
    for (const auto& key : [&] {
           std::vector<std::string> keys;
           for (const auto& kv : *cap) keys.emplace_back(kv.key());
           std::sort(keys.begin(), keys.end());
           return keys;
         }()) {
      const auto qty = quantity_of(cap->at(key));
      if (!qty) continue;  // (decoding refused it)
      const std::string at = fmt::format("spec.capacity[{}]", key);
      if (qty->value() < 0) e.invalid(at, std::to_string(qty->value()), "must be a valid resource quantity");
      if (!(qty->nano_value() > 0)) e.invalid(at, q(qty->to_string()), "must be greater than zero");
    }
  if (const std::string policy = string_at(spec, "persistentVolumeReclaimPolicy");
      !policy.empty() && policy != "Delete" && policy != "Recycle" && policy != "Retain")
    e.not_supported("spec.persistentVolumeReclaimPolicy", policy, {"Delete", "Recycle", "Retain"});
  bool node_affinity = false;
  if (present(spec, "nodeAffinity")) {  // validateVolumeNodeAffinity
    node_affinity = true;
    const json::object& na = object_at(spec, "nodeAffinity") ? *object_at(spec, "nodeAffinity") : kNone;
    if (!present(na, "required")) {
      e.required("spec.nodeAffinity.required", "must specify required node constraints");
    } else {  // ValidateNodeSelector (label values not checked)
      const json::object& req = object_at(na, "required") ? *object_at(na, "required") : kNone;
      const auto terms = items(req, "nodeSelectorTerms");
      if (terms.empty())
        e.required("spec.nodeAffinity.required.nodeSelectorTerms", "must have at least one node selector term");
      for (std::size_t i = 0; i < terms.size(); ++i)
        node_selector_term(e, *terms[i], fmt::format("spec.nodeAffinity.required.nodeSelectorTerms[{}]", i));
    }
  }
  // {JSON key, the path Kubernetes names when it is one source too many}, in Go's order.
  static const std::pair<const char*, const char*> kSources[] = {{"hostPath", "hostPath"},
                                                                 {"gcePersistentDisk", "gcePersistentDisk"},
                                                                 {"awsElasticBlockStore", "awsElasticBlockStore"},
                                                                 {"glusterfs", "glusterfs"},
                                                                 {"flocker", "flocker"},
                                                                 {"nfs", "nfs"},
                                                                 {"rbd", "rbd"},
                                                                 {"quobyte", "quobyte"},
                                                                 {"cephfs", "cephFS"},
                                                                 {"iscsi", "iscsi"},
                                                                 {"cinder", "cinder"},
                                                                 {"fc", "fc"},
                                                                 {"flexVolume", ""},
                                                                 {"azureFile", "azureFile"},
                                                                 {"vsphereVolume", "vsphereVolume"},
                                                                 {"photonPersistentDisk", "photonPersistentDisk"},
                                                                 {"portworxVolume", "portworxVolume"},
                                                                 {"azureDisk", "azureDisk"},
                                                                 {"scaleIO", "scaleIO"},
                                                                 {"local", "local"},
                                                                 {"storageos", "storageos"},
                                                                 {"csi", "csi"}};
  int count = 0;
  for (const auto& [key, forbidden_as] : kSources) {
    const json::object* src = object_at(spec, key);
    if (!src && !present(spec, key)) continue;
    if (!src) src = &kNone;            // (a source that is no object: decoding refused it)
    if (count > 0 && *forbidden_as) {  // (a flexVolume is counted, never refused: sic)
      e.forbidden(fmt::format("spec.{}", forbidden_as), "may not specify more than 1 volume type");
      continue;
    }
    ++count;
    pv_source(e, key, *src, fmt::format("spec.{}", key), pv_name);
    if (std::string_view(key) == "local" && !node_affinity)
      e.required("spec.nodeAffinity", "Local volume requires node affinity");
  }
  if (count == 0) e.required("spec", "must specify a volume type");
  if (const json::object* hp = object_at(spec, "hostPath");
      hp && string_at(spec, "persistentVolumeReclaimPolicy") == "Recycle" && cleans_to_root(string_at(*hp, "path")))
    e.forbidden("spec.persistentVolumeReclaimPolicy", "may not be 'recycle' for a hostPath mount of '/'");
  if (const std::string cls = string_at(spec, "storageClassName"); !cls.empty())
    e.invalid("spec.storageClassName", cls, dns1123_subdomain_errors(cls));  // ValidateClassName
  if (const json::value* mode = spec.if_contains("volumeMode");
      mode && mode->is_string() && mode->as_string() != "Block" && mode->as_string() != "Filesystem")
    e.not_supported("spec.volumeMode", std::string(mode->as_string()), {"Block", "Filesystem"});
}

std::optional<std::string> go_decode_list(const std::string& text, std::string_view type,
                                          std::span<const GoField> fields, json::array& out) {
  boost::system::error_code ec;
  const json::value parsed = json::parse(text, ec);
  auto kind = [](const json::value& v) { return go_value_names(v).json; };
  if (ec) {
    // A syntax error: Go names the first character that cannot begin a value; deeper syntax
    // errors are worded by offset in Go and generically here.
    const auto at = text.find_first_not_of(" \t\r\n");
    const char c = at == std::string::npos ? '\0' : text[at];
    if (at == std::string::npos) return "unexpected end of JSON input";
    if (std::string_view("[{\"-0123456789tfn").find(c) == std::string_view::npos)
      return fmt::format("invalid character '{}' looking for beginning of value", c);
    return "invalid JSON: " + ec.message();
  }
  if (parsed.is_null()) return std::nullopt;
  if (!parsed.is_array())
    return fmt::format("json: cannot unmarshal {} into Go value of type []core.{}", kind(parsed), type);
  std::optional<std::string> error;  // the first; decoding goes on
  for (const auto& item : parsed.as_array()) {
    json::object canonical;
    if (!item.is_object() && !item.is_null() && !error)
      error = fmt::format("json: cannot unmarshal {} into Go value of type core.{}", kind(item), type);
    if (item.is_object())
      for (const auto& [k, v] : item.as_object())
        for (const auto& fd : fields) {
          if (k.size() != std::strlen(fd.json) || !std::equal(k.begin(), k.end(), fd.json, [](char x, char y) {
                return std::tolower(x) == std::tolower(y);
              }))
            continue;
          const bool integer = std::string_view(fd.go_type) == "int64";
          const bool fits = v.is_null() || (integer ? v.is_int64() : v.is_string());
          if (!fits && !error)
            error = fmt::format("json: cannot unmarshal {} into Go struct field {}.{} of type {}", kind(v), type, fd.go,
                                fd.go_type);
          if (fits && !v.is_null()) canonical[fd.json] = v;
        }
    out.push_back(std::move(canonical));
  }
  return error;
}

void validate_resource_quantity_value(const std::string& name, const json::value& value, const std::string& field,
                                      Causes& causes) {
  Errors e{causes};
  resource_quantity(e, name, value, field);
}

void validate_label_selector(const json::object& selector, const std::string& field, Causes& causes,
                             bool allow_invalid_values) {
  Errors e{causes};
  label_selector(e, selector, field, allow_invalid_values);
}

// The pod strategy's applyAppArmorVersionSkew (not for Windows pods): a container whose AppArmor
// annotation is missing gets one from its profile (or the pod's); one with an annotation but no
// profile gets the annotation's profile unless it is the pod's, with a deprecation warning (also
// when the annotation makes no valid profile).
void apparmor_version_skew(json::object& pod, std::vector<std::string>* warnings) {
  json::value& mdv = pod["metadata"];  // (first: inserting it would move the spec)
  if (!mdv.is_object()) mdv = json::object{};
  json::value* sv = pod.if_contains("spec");
  if (!sv || !sv->is_object()) return;
  json::object& spec = sv->as_object();
  if (const json::object* os = object_at(spec, "os"); os && string_at(*os, "name") == "windows") return;
  const json::object* psc = object_at(spec, "securityContext");
  const json::object* pod_profile = psc ? object_at(*psc, "appArmorProfile") : nullptr;
  auto annotation_for = [](const json::object& profile) -> std::string {
    const std::string type = string_at(profile, "type");
    if (type == "Unconfined") return "unconfined";
    if (type == "RuntimeDefault") return "runtime/default";
    if (type == "Localhost" && present(profile, "localhostProfile"))
      return "localhost/" + string_at(profile, "localhostProfile");
    return "";
  };
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    json::value* cs = spec.if_contains(list);
    if (!cs || !cs->is_array()) continue;
    for (auto& cv : cs->as_array()) {
      if (!cv.is_object()) continue;
      json::object& c = cv.as_object();
      const std::string key = "container.apparmor.security.beta.kubernetes.io/" + string_at(c, "name");
      json::object* ann = mdv.as_object().contains("annotations") && mdv.as_object()["annotations"].is_object()
                              ? &mdv.as_object()["annotations"].as_object()
                              : nullptr;
      const json::object* sc = object_at(c, "securityContext");
      const json::object* profile = sc ? object_at(*sc, "appArmorProfile") : nullptr;
      if (!ann || !ann->contains(key)) {
        const std::string value = profile ? annotation_for(*profile) : pod_profile ? annotation_for(*pod_profile) : "";
        if (value.empty()) continue;
        json::value& av = mdv.as_object()["annotations"];
        if (!av.is_object()) av = json::object{};
        av.as_object()[key] = value;
        continue;
      }
      if (profile) continue;
      const json::value& a = ann->at(key);
      const std::string annotation = a.is_string() ? std::string(a.as_string()) : "";
      std::optional<json::object> field;
      if (annotation == "unconfined")
        field = json::object{{"type", "Unconfined"}};
      else if (annotation == "runtime/default")
        field = json::object{{"type", "RuntimeDefault"}};
      else if (annotation.starts_with("localhost/") && annotation.size() > 10)
        field = json::object{{"type", "Localhost"}, {"localhostProfile", annotation.substr(10)}};
      if (field) {
        Causes errs;
        Errors check{errs};
        apparmor_profile(check, &*field, "");
        if (!errs.empty()) field.reset();  // an invalid profile is not copied
      }
      bool warn = !field;
      if (field && !(pod_profile && string_at(*pod_profile, "type") == string_at(*field, "type") &&
                     present(*pod_profile, "localhostProfile") == present(*field, "localhostProfile") &&
                     string_at(*pod_profile, "localhostProfile") == string_at(*field, "localhostProfile"))) {
        json::value& scv = c["securityContext"];
        if (!scv.is_object()) scv = json::object{};
        scv.as_object()["appArmorProfile"] = std::move(*field);
        warn = true;
      }
      if (warn && warnings)
        warnings->push_back(fmt::format(
            "metadata.annotations[{}]: deprecated since v1.30; use the \"appArmorProfile\" field instead", key));
    }
  }
}

namespace {

// A pod spec in its stored form (schema::to_stored_form of a Pod holding it), in which Go's
// apiequality.Semantic comparisons of two decoded specs are semantic_equal's.
json::object stored_spec(const json::object& spec) {
  json::object pod{{"spec", spec}};
  schema::to_stored_form("", "v1", "Pod", pod);
  json::value& out = pod["spec"];
  return out.is_object() ? std::move(out.as_object()) : json::object{};
}

// A toleration equal to another but for its tolerationSeconds.
bool same_toleration(const json::object& a, const json::object& b) {
  json::object x = a, y = b;
  x.erase("tolerationSeconds");
  y.erase("tolerationSeconds");
  return semantic_equal(x, y);
}

}  // namespace

namespace {

// Go's %#v of a []string field (nil when absent).
std::string go_string_slice(const json::object& o, std::string_view key) {
  return fields::go_string_slice("string", array_at(o, key));
}

// Go's %#v of a []core.NodeSelectorRequirement field.
std::string go_requirements(const json::object& term, std::string_view key) {
  const json::array* a = array_at(term, key);
  if (!a) return "[]core.NodeSelectorRequirement(nil)";
  std::string out = "[]core.NodeSelectorRequirement{";
  for (std::size_t i = 0; i < a->size(); ++i) {
    const json::object& r = (*a)[i].is_object() ? (*a)[i].as_object() : kNone;
    out += fmt::format("{}core.NodeSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}", i ? ", " : "",
                       q(string_at(r, "key")), q(string_at(r, "operator")), go_string_slice(r, "values"));
  }
  return out + "}";
}

std::string go_term(const json::object& t) {
  return fmt::format("core.NodeSelectorTerm{{MatchExpressions:{}, MatchFields:{}}}",
                     go_requirements(t, "matchExpressions"), go_requirements(t, "matchFields"));
}

// The required node selector terms of a spec's node affinity (nullopt: no required selector).
std::optional<std::vector<const json::object*>> required_terms(const json::object& spec) {
  const json::object* a = object_at(spec, "affinity");
  const json::object* na = a ? object_at(*a, "nodeAffinity") : nullptr;
  const json::object* req = na ? object_at(*na, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
  if (!req) return std::nullopt;
  return items(*req, "nodeSelectorTerms");
}

// ValidatePodUpdate's rules for a gated pod: validateNodeSelectorMutation (only additions to
// spec.nodeSelector) and validateNodeAffinityMutation (a non-empty list of required terms keeps
// its length, and each term only gains requirements).
void gated_pod_mutations(Errors& e, const json::object& now, const json::object& before) {
  const json::object* ns = object_at(now, "nodeSelector");
  const json::object* old_ns = object_at(before, "nodeSelector");
  if (old_ns)
    for (const auto& [k, v] : *old_ns) {
      const json::value* n = ns ? ns->if_contains(k) : nullptr;
      if (n && *n == v) continue;
      std::string shown = "map[string]string(nil)";
      if (ns) {
        std::vector<std::string> keys;
        for (const auto& kv : *ns) keys.emplace_back(kv.key());
        std::sort(keys.begin(), keys.end());
        shown = "map[string]string{";
        for (std::size_t i = 0; i < keys.size(); ++i)
          shown += fmt::format("{}{}:{}", i ? ", " : "", q(keys[i]), q(string_at(*ns, keys[i])));
        shown += "}";
      }
      e.invalid("spec.nodeSelector", shown,
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)");
      break;
    }
  const auto old_terms = required_terms(before);
  if (!old_terms) return;
  const auto new_terms = required_terms(now).value_or(std::vector<const json::object*>{});
  const std::string tf = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
  if (!old_terms->empty() && old_terms->size() != new_terms.size()) {
    // (nil unless the new spec holds a list, possibly empty)
    const json::object* a = object_at(now, "affinity");
    const json::object* na = a ? object_at(*a, "nodeAffinity") : nullptr;
    const json::object* req = na ? object_at(*na, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
    std::string shown = "[]core.NodeSelectorTerm(nil)";
    if (req && array_at(*req, "nodeSelectorTerms")) {
      shown = "[]core.NodeSelectorTerm{";
      for (std::size_t i = 0; i < new_terms.size(); ++i) shown += (i ? ", " : "") + go_term(*new_terms[i]);
      shown += "}";
    }
    return e.invalid(tf, shown, "no additions/deletions to non-empty NodeSelectorTerms list are allowed");
  }
  for (std::size_t i = 0; i < old_terms->size(); ++i) {
    const json::object& o = *(*old_terms)[i];
    const json::object& n = *new_terms[i];
    bool ok = true;
    const auto oe = items(o, "matchExpressions"), of = items(o, "matchFields");
    const auto ne = items(n, "matchExpressions"), nf = items(n, "matchFields");
    if (oe.empty() && of.empty() && (!ne.empty() || !nf.empty())) ok = false;
    for (const auto& [olds, news] : {std::pair{&oe, &ne}, std::pair{&of, &nf}}) {
      if (olds->empty()) continue;
      if (news->size() < olds->size())
        ok = false;
      else
        for (std::size_t j = 0; j < olds->size(); ++j) ok = ok && semantic_equal(*(*olds)[j], *(*news)[j]);
    }
    if (!ok)
      e.invalid(fmt::format("{}[{}]", tf, i), go_term(n), "only additions are allowed (no mutations or deletions)");
  }
}

}  // namespace

void validate_template_annotations(const json::object& ann, const json::object& spec, Causes& causes) {
  Errors e{causes};
  pod_annotations(e, ann, spec, "spec.template.annotations");
}

void validate_pod_annotation_updates(const json::object& meta, const json::object& old_meta, const json::object& spec,
                                     Causes& causes) {
  Errors e{causes};
  const json::object& now = object_at(meta, "annotations") ? *object_at(meta, "annotations") : kNone;
  const json::object& before = object_at(old_meta, "annotations") ? *object_at(old_meta, "annotations") : kNone;
  constexpr std::string_view kAppArmor = "container.apparmor.security.beta.kubernetes.io/";
  constexpr std::string_view kMirror = "kubernetes.io/config.mirror";
  // (Go walks both maps in random order; here in the objects' order.)
  for (const auto& [k, v] : before) {
    if (const json::value* n = now.if_contains(k); n && *n == v) continue;
    const std::string f = fmt::format("metadata.annotations[{}]", std::string_view(k));
    if (k.starts_with(kAppArmor)) e.forbidden(f, "may not remove or update AppArmor annotations");
    if (k == kMirror) e.forbidden(f, "may not remove or update mirror pod annotation");
  }
  for (const auto& [k, v] : now) {
    if (before.contains(k)) continue;
    const std::string f = fmt::format("metadata.annotations[{}]", std::string_view(k));
    if (k.starts_with(kAppArmor)) e.forbidden(f, "may not add AppArmor annotations");
    if (k == kMirror) e.forbidden(f, "may not add mirror pod annotation");
  }
  pod_annotations(e, now, spec, "metadata.annotations");
}

// ValidatePodUpdate after validatePodMetadataAndSpec: ValidateContainerUpdates (which stops at a
// changed count), activeDeadlineSeconds, validateOnlyAddedTolerations (then ValidateTolerations
// again: the causes repeat, the message says each once), validateOnlyDeletedSchedulingGates, and
// the munged spec. The Forbidden cause's go-cmp diff of the two specs is not reproduced
// (FIDELITY.md, known difference 1). A gated pod's node selector and required node affinity may
// only gain entries (gated_pod_mutations).
void validate_ephemeral_containers_update(const json::object& old_meta, const json::object& spec,
                                          const json::object& old_spec, Causes& causes) {
  // static pods don't support ephemeral containers #113935: that error alone.
  if (const json::object* ann = object_at(old_meta, "annotations");
      ann && ann->contains("kubernetes.io/config.mirror")) {
    causes.clear();
    // (field.NewPath("") prints as "[]": an element without a name is an index.)
    causes.push_back({"FieldValueForbidden", "Forbidden: static pods do not support ephemeral containers", "[]"});
    return;
  }
  // Existing ephemeral containers may be neither removed nor changed (matched by name: a patch
  // need not keep the order). (kube-apiserver appends cmp.Diff's rendering of the Go structs to
  // the "changed" message; that is not reproduced.)
  const auto now = items(spec, "ephemeralContainers");
  for (const auto* old : items(old_spec, "ephemeralContainers")) {
    const std::string name = string_at(*old, "name");
    const json::object* found = nullptr;
    for (const auto* c : now)
      if (string_at(*c, "name") == name) found = c;
    if (!found)
      causes.push_back({"FieldValueForbidden",
                        fmt::format("Forbidden: existing ephemeral containers \"{}\" may not be removed\n", name),
                        "spec.ephemeralContainers"});
    else if (const json::value a = *old, b = *found; !same_value(&a, &b))
      causes.push_back({"FieldValueForbidden",
                        fmt::format("Forbidden: existing ephemeral containers \"{}\" may not be changed\n", name),
                        "spec.ephemeralContainers"});
  }
}

void validate_pod_status_update(const json::object& pod, const json::object& old, Causes& causes) {
  Errors e{causes};
  const json::object& st = object_at(pod, "status") ? *object_at(pod, "status") : kNone;
  const json::object& old_st = object_at(old, "status") ? *object_at(old, "status") : kNone;
  const json::object& old_spec = object_at(old, "spec") ? *object_at(old, "spec") : kNone;
  // validatePodConditions, given the path "metadata" (sic: `metadata.conditions[0].Type`): a
  // condition that is not a system one (PodScheduled, Ready, Initialized) has a qualified name.
  if (const json::array* conds = array_at(st, "conditions"))
    for (std::size_t i = 0; i < conds->size(); ++i) {
      const json::object& c = (*conds)[i].is_object() ? (*conds)[i].as_object() : kNone;
      const std::string type = string_at(c, "type");
      if (type == "PodScheduled" || type == "Ready" || type == "Initialized") continue;
      e.invalid(fmt::format("metadata.conditions[{}].Type", i), type, qualified_name_errors(type));
    }
  // The nominated node, when it changes to one: a node name (a DNS subdomain).
  const std::string nominated = string_at(st, "nominatedNodeName");
  if (!nominated.empty() && nominated != string_at(old_st, "nominatedNodeName"))
    e.invalid("status.nominatedNodeName", nominated, dns1123_subdomain_errors(nominated));
  // The QoS class is immutable (ValidateImmutableField).
  if (const std::string qos = string_at(st, "qosClass"); qos != string_at(old_st, "qosClass"))
    e.invalid("status.qosClass", q(qos), "field is immutable");
  // ValidateContainerStateTransition / ValidateInitContainerStateTransition: unless the pod always
  // restarts, a container that terminated (successfully, under OnFailure) stays terminated; a
  // restartable init container (a sidecar) may restart; ephemeral containers never restart.
  const std::string policy = string_at(old_spec, "restartPolicy");
  auto terminated = [](const json::object& cs) {
    return object_at(cs, "state") && object_at(*object_at(cs, "state"), "terminated");
  };
  auto transitions = [&](const char* list, const std::string& restart, bool init) {
    if (restart == "Always") return;
    const json::array* olds = array_at(old_st, list);
    if (!olds) return;
    const auto news = items(st, list);
    for (std::size_t i = 0; i < olds->size(); ++i) {
      const json::object& o = (*olds)[i].is_object() ? (*olds)[i].as_object() : kNone;
      if (!terminated(o)) continue;
      const json::object& term = *object_at(*object_at(o, "state"), "terminated");
      if (int_at(term, "exitCode").value_or(0) != 0 && restart == "OnFailure") continue;
      const std::string name = string_at(o, "name");
      if (init) {
        bool sidecar = false;
        for (const json::object* c : items(old_spec, "initContainers"))
          if (string_at(*c, "name") == name) {
            sidecar = string_at(*c, "restartPolicy") == "Always";
            break;
          }
        if (sidecar) continue;
      }
      for (const json::object* n : news)
        if (string_at(*n, "name") == name && !terminated(*n))
          e.forbidden(fmt::format("status.{}[{}].state", list, i), "may not be transitioned to non-terminated state");
    }
  };
  transitions("containerStatuses", policy, false);
  transitions("initContainerStatuses", policy, true);
  transitions("ephemeralContainerStatuses", "Never", false);
  // validatePodIPs, validateHostIPs: valid addresses, at most one of each family, no duplicate;
  // hostIPs[0] the hostIP.
  auto ip_list = [&](const char* list, bool host) {
    const json::array* ips = array_at(st, list);
    if (!ips || ips->empty()) return;
    const std::string at = fmt::format("status.{}", list);
    auto ip_of = [&](std::size_t i) { return (*ips)[i].is_object() ? string_at((*ips)[i].as_object(), "ip") : ""; };
    auto shown = [&](std::size_t i) { return fmt::format("core.{}{{IP:{}}}", host ? "HostIP" : "PodIP", q(ip_of(i))); };
    if (host && string_at(st, "hostIP") != ip_of(0)) e.invalid(at + "[0].ip", q(ip_of(0)), "must be equal to `hostIP`");
    for (std::size_t i = 0; i < ips->size(); ++i)
      if (!ip::parse_ip(ip_of(i)))
        e.invalid(fmt::format("{}[{}]", at, i), q(ip_of(i)),
                  "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
    if (ips->size() < 2) return;
    std::set<std::string> seen;
    bool v4 = false, v6 = false, bad = false;
    std::string all;
    for (std::size_t i = 0; i < ips->size(); ++i) {
      const std::string a = ip_of(i);
      all += (i ? ", " : "") + shown(i);
      if (host && !seen.insert(a).second) e.duplicate(fmt::format("{}[{}]", at, i), shown(i));
    }
    // netutils.IsDualStackIPStrings: its error names the first address that does not parse.
    for (std::size_t i = 0; i < ips->size() && !bad; ++i) {
      if (const auto parsed = ip::parse_ip(ip_of(i))) {
        (ip::is_v4(*parsed) ? v4 : v6) = true;
      } else {
        bad = true;
        causes.push_back(
            {"InternalError",
             fmt::format("Internal error: failed to check for dual stack with error:invalid IP[{}]: {}", i, ip_of(i)),
             at});
      }
    }
    if (!(v4 && v6) || ips->size() > 2 || bad)
      e.invalid(at, fmt::format("[]core.{}{{{}}}", host ? "HostIP" : "PodIP", all),
                "may specify no more than one IP for each IP family");
    if (!host) {  // validatePodIPs reports the duplicates after the family rule
      seen.clear();
      for (std::size_t i = 0; i < ips->size(); ++i)
        if (!seen.insert(ip_of(i)).second) e.duplicate(fmt::format("{}[{}]", at, i), shown(i));
    }
  };
  ip_list("podIPs", false);
  ip_list("hostIPs", true);
}

void validate_pod_update(const json::object& spec, const json::object& old_spec, Causes& causes) {
  Errors e{causes};
  for (const char* list : {"containers", "initContainers"}) {
    const auto now = items(spec, list), before = items(old_spec, list);
    if (now.size() != before.size())
      return e.forbidden(fmt::format("spec.{}", list), "pod updates may not add or remove containers");
    for (std::size_t i = 0; i < now.size(); ++i) {
      const std::string f = fmt::format("spec.{}[{}]", list, i);
      if (string_at(*now[i], "image").empty()) e.required(f + ".image");
      image_whitespace(e, *now[i], f);
    }
  }
  const auto ads = int_at(spec, "activeDeadlineSeconds"), old_ads = int_at(old_spec, "activeDeadlineSeconds");
  if (ads) {
    if (*ads < 0 || *ads > kMaxInt32)
      return e.invalid("spec.activeDeadlineSeconds", std::to_string(*ads),
                       "must be between 0 and 2147483647, inclusive");
    if (old_ads && *old_ads < *ads)
      return e.invalid("spec.activeDeadlineSeconds", std::to_string(*ads),
                       "must be less than or equal to previous value");
  } else if (old_ads) {
    e.invalid("spec.activeDeadlineSeconds", q("null"),
              "must not update from a positive integer to nil value");  // (a nil pointer: "null", quoted)
  }
  {
    const auto now = items(spec, "tolerations");
    bool kept = true;
    for (const auto* old : items(old_spec, "tolerations"))
      kept =
          kept && std::any_of(now.begin(), now.end(), [&](const json::object* t) { return same_toleration(*old, *t); });
    if (!kept)
      e.forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds");
    else
      tolerations(e, spec, "spec.");
  }
  {
    std::set<std::string> old_gates;
    for (const auto* g : items(old_spec, "schedulingGates")) old_gates.insert(string_at(*g, "name"));
    const auto gates = items(spec, "schedulingGates");
    for (std::size_t i = 0; i < gates.size(); ++i)
      if (const std::string n = string_at(*gates[i], "name"); !old_gates.count(n))
        e.forbidden(fmt::format("spec.schedulingGates[{}].name", i),
                    fmt::format("only deletion is allowed, but found new scheduling gate '{}'", n));
  }
  json::object now = stored_spec(spec), before = stored_spec(old_spec);
  if (semantic_equal(now, before)) return;
  // The munged spec: what may change taken from the old one.
  for (const char* list : {"containers", "initContainers"})
    if (auto* cs = now.if_contains(list); cs && cs->is_array())
      for (std::size_t i = 0; i < cs->as_array().size(); ++i)
        if (auto& c = cs->as_array()[i]; c.is_object()) {
          const auto old = items(before, list);
          c.as_object()["image"] = json::string(string_at(*old[i], "image"));
        }
  for (const char* key : {"activeDeadlineSeconds", "schedulingGates", "tolerations"}) {
    now.erase(key);
    if (const json::value* v = before.if_contains(key)) now[key] = *v;
  }
  const auto old_grace = int_at(before, "terminationGracePeriodSeconds");
  if (old_grace && *old_grace < 0 && int_at(now, "terminationGracePeriodSeconds") == 1)
    now["terminationGracePeriodSeconds"] = *old_grace;
  if (!items(before, "schedulingGates").empty()) {
    gated_pod_mutations(e, spec, old_spec);  // (its messages print the spec as given)
    now.erase("nodeSelector");
    if (const json::value* v = before.if_contains("nodeSelector")) now["nodeSelector"] = *v;
    json::value old_na = nullptr;
    if (const json::object* a = object_at(before, "affinity"))
      if (const json::value* na = a->if_contains("nodeAffinity")) old_na = *na;
    json::value& aff = now["affinity"];
    if (!aff.is_object()) aff = json::object{};
    aff.as_object().erase("nodeAffinity");
    if (!old_na.is_null()) aff.as_object()["nodeAffinity"] = old_na;
  }
  if (!semantic_equal(now, before))
    e.forbidden(
        "spec",
        "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
        "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)");
}

// ValidatePodSpec, then for a pod validatePodMetadataAndSpec's and ValidatePodCreate's own checks,
// for a template ValidatePodTemplateSpec's.
void validate_pod_spec(const json::object& spec, const json::object* meta, const std::string& prefix, PodSpecOf of,
                       Causes& causes) {
  Errors e{causes};
  const bool pod = of != PodSpecOf::Template;
  if (const json::object* ann = meta ? object_at(*meta, "annotations") : nullptr)
    pod_annotations(e, *ann, spec, pod ? "metadata.annotations" : "spec.template.annotations");
  const std::optional<std::int64_t> grace = int_at(spec, "terminationGracePeriodSeconds");
  if (!present(spec, "terminationGracePeriodSeconds")) e.required(prefix + "terminationGracePeriodSeconds");
  // (spec.hostUsers needs the UserNamespacesSupport gate, off in v1.32: the field is dropped, and
  // validateHostUsers has nothing to check.)
  const auto vols = validate_volumes(e, spec, prefix, meta ? string_at(*meta, "name") : "");

  // validateContainers.
  const auto containers = items(spec, "containers");
  if (containers.empty()) {
    e.required(prefix + "containers");
  } else {
    std::set<std::string> names;
    std::vector<std::pair<const json::object*, std::size_t>> all;
    for (std::size_t i = 0; i < containers.size(); ++i) {
      const json::object& c = *containers[i];
      const std::string f = fmt::format("{}containers[{}]", prefix, i);
      container_common(e, c, f, vols);
      const std::string name = string_at(c, "name");
      if (!names.insert(name).second) e.duplicate(f + ".name", q(name));
      probes_and_lifecycle(e, c, grace, f);
      if (present(c, "restartPolicy")) e.forbidden(f + ".restartPolicy", "may not be set for non-init containers");
      all.emplace_back(&c, i);
    }
    host_port_conflicts(e, all, prefix + "containers");
  }
  // validateInitContainers.
  {
    std::set<std::string> names;
    for (const auto* c : containers) names.insert(string_at(*c, "name"));
    const auto inits = items(spec, "initContainers");
    for (std::size_t i = 0; i < inits.size(); ++i) {
      const json::object& c = *inits[i];
      const std::string f = fmt::format("{}initContainers[{}]", prefix, i);
      container_common(e, c, f, vols);
      bool always = false;
      if (present(c, "restartPolicy")) {
        const std::string rp = string_at(c, "restartPolicy");
        if (rp != "Always") e.not_supported(f + ".restartPolicy", rp, {"Always"});
        always = rp == "Always";
      }
      const std::string name = string_at(c, "name");
      if (names.count(name))
        e.duplicate(f + ".name", q(name));
      else if (!name.empty())
        names.insert(name);
      host_port_conflicts(e, {{&c, 0}}, prefix + "initContainers");
      if (always) {
        probes_and_lifecycle(e, c, grace, f);
      } else {
        for (const char* k : {"lifecycle", "livenessProbe", "readinessProbe", "startupProbe"})
          if (present(c, k))
            e.forbidden(fmt::format("{}.{}", f, k), "may not be set for init containers without restartPolicy=Always");
      }
    }
  }
  // validateEphemeralContainers (run for templates too; ValidatePodCreate and
  // ValidatePodTemplateSpec then refuse them anyway).
  if (const auto eph = items(spec, "ephemeralContainers"); !eph.empty()) {
    std::set<std::string> others, all;
    for (const char* list : {"containers", "initContainers"})
      for (const auto* c : items(spec, list)) {
        others.insert(string_at(*c, "name"));
        all.insert(string_at(*c, "name"));
      }
    // Container's fields in Go's order, and whether an ephemeral container may set them.
    static const std::pair<const char*, bool> kFields[] = {{"name", true},
                                                           {"image", true},
                                                           {"command", true},
                                                           {"args", true},
                                                           {"workingDir", true},
                                                           {"ports", false},
                                                           {"envFrom", true},
                                                           {"env", true},
                                                           {"resources", false},
                                                           {"resizePolicy", false},
                                                           {"restartPolicy", false},
                                                           {"volumeMounts", true},
                                                           {"volumeDevices", true},
                                                           {"livenessProbe", false},
                                                           {"readinessProbe", false},
                                                           {"startupProbe", false},
                                                           {"lifecycle", false},
                                                           {"terminationMessagePath", true},
                                                           {"terminationMessagePolicy", true},
                                                           {"imagePullPolicy", true},
                                                           {"securityContext", true},
                                                           {"stdin", true},
                                                           {"stdinOnce", true},
                                                           {"tty", true}};
    for (std::size_t i = 0; i < eph.size(); ++i) {
      const json::object& c = *eph[i];
      const std::string f = fmt::format("{}ephemeralContainers[{}]", prefix, i);
      container_common(e, c, f, vols);
      image_whitespace(e, c, f);
      const std::string name = string_at(c, "name");
      if (!all.insert(name).second) e.duplicate(f + ".name", q(name));
      const std::string target = string_at(c, "targetContainerName");
      if (!target.empty() && !others.count(target)) e.not_found(f + ".targetContainerName", q(target));
      for (const auto& [key, allowed] : kFields) {
        const json::value* v = c.if_contains(key);
        const bool zero = !v || v->is_null() || (v->is_object() && v->as_object().empty()) ||
                          (v->is_array() && v->as_array().empty()) || (v->is_bool() && !v->as_bool());
        if (!allowed && !zero) e.forbidden(fmt::format("{}.{}", f, key), "cannot be set for an Ephemeral Container");
      }
      const auto mounts = items(c, "volumeMounts");
      for (std::size_t j = 0; j < mounts.size(); ++j)
        for (const char* key : {"subPath", "subPathExpr"})
          if (!string_at(*mounts[j], key).empty())
            e.forbidden(fmt::format("{}.volumeMounts[{}].{}", f, j, key), "cannot be set for an Ephemeral Container");
    }
  }
  // validatePodHostNetworkDeps: with hostNetwork, a host port is its container port (a pod's are
  // defaulted so; a template may leave them 0).
  if (true_at(spec, "hostNetwork"))
    for (std::size_t i = 0; i < containers.size(); ++i)
      if (const json::array* ports = array_at(*containers[i], "ports"))
        for (std::size_t j = 0; j < ports->size(); ++j) {
          const json::object& p = (*ports)[j].is_object() ? (*ports)[j].as_object() : kNone;
          const std::int64_t hp = int_at(p, "hostPort").value_or(0), cp = int_at(p, "containerPort").value_or(0);
          if ((pod || hp != 0) && hp != cp)
            e.invalid(fmt::format("{}containers[{}].ports[{}].hostPort", prefix, i, j), std::to_string(hp),
                      "must match `containerPort` when `hostNetwork` is true");
        }
  // validateRestartPolicy, validateDNSPolicy.
  const std::string restart = string_at(spec, "restartPolicy");
  if (restart.empty())
    e.required(prefix + "restartPolicy");
  else if (restart != "Always" && restart != "OnFailure" && restart != "Never")
    e.not_supported(prefix + "restartPolicy", restart, {"Always", "OnFailure", "Never"});
  const std::string dns = string_at(spec, "dnsPolicy");
  if (dns.empty())
    e.required(prefix + "dnsPolicy");
  else if (dns != "ClusterFirstWithHostNet" && dns != "ClusterFirst" && dns != "Default" && dns != "None")
    e.not_supported(prefix + "dnsPolicy", dns, {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"});
  node_selector_labels(e, object_at(spec, "nodeSelector"), prefix + "nodeSelector");
  pod_security_context(e, spec, prefix);
  affinity(e, spec, prefix);
  dns_config(e, spec, prefix);
  // validateReadinessGates, validateSchedulingGates.
  if (const json::array* gates = array_at(spec, "readinessGates"))
    for (std::size_t i = 0; i < gates->size(); ++i) {
      const std::string t = (*gates)[i].is_object() ? string_at((*gates)[i].as_object(), "conditionType") : "";
      e.invalid(fmt::format("{}readinessGates[{}].conditionType", prefix, i), t, qualified_name_errors(t));
    }
  if (const json::array* gates = array_at(spec, "schedulingGates")) {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < gates->size(); ++i) {
      const std::string n = (*gates)[i].is_object() ? string_at((*gates)[i].as_object(), "name") : "";
      const std::string f = fmt::format("{}schedulingGates[{}]", prefix, i);
      e.invalid(f, n, qualified_name_errors(n));
      if (!seen.insert(n).second) e.duplicate(f, q(n));
    }
  }
  topology_spread(e, spec, prefix);
  windows_host_process(e, spec, prefix);
  name_rule(e, spec, "serviceAccountName", prefix, dns1123_subdomain_errors);
  name_rule(e, spec, "nodeName", prefix, dns1123_subdomain_errors);
  if (auto ads = int_at(spec, "activeDeadlineSeconds"); ads && (*ads < 1 || *ads > kMaxInt32))
    e.invalid(prefix + "activeDeadlineSeconds", std::to_string(*ads), "must be between 1 and 2147483647, inclusive");
  name_rule(e, spec, "hostname", prefix, dns1123_label_errors);
  name_rule(e, spec, "subdomain", prefix, dns1123_label_errors);
  tolerations(e, spec, prefix);
  // ValidateHostAliases.
  if (const json::array* aliases = array_at(spec, "hostAliases"))
    for (std::size_t i = 0; i < aliases->size(); ++i) {
      const json::object& a = (*aliases)[i].is_object() ? (*aliases)[i].as_object() : kNone;
      const std::string ip = string_at(a, "ip");
      if (!ip::parse_ip(ip))  // IsValidIP
        e.invalid(fmt::format("{}hostAliases[{}].ip", prefix, i), q(ip),
                  "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
      if (const json::array* hosts = array_at(a, "hostnames"))
        for (std::size_t j = 0; j < hosts->size(); ++j) {
          const std::string h = (*hosts)[j].is_string() ? std::string((*hosts)[j].as_string()) : "";
          e.invalid(fmt::format("{}hostAliases[{}].hostnames[{}]", prefix, i, j), h, dns1123_subdomain_errors(h));
        }
    }
  // A new pod's priority class, preemption policy and runtime class were resolved by admission,
  // which refuses unknown names and other policies before validation runs (Priority: `no
  // PriorityClass with name X was found`, `the string value of PreemptionPolicy (X) must not be
  // provided`), so these rules matter for templates and updated pods (Priority admits creates only).
  const bool admitted = of == PodSpecOf::NewPod;
  if (!admitted) name_rule(e, spec, "priorityClassName", prefix, dns1123_subdomain_errors);
  if (!admitted && present(spec, "runtimeClassName")) {
    const std::string rc = string_at(spec, "runtimeClassName");
    e.invalid(prefix + "runtimeClassName", rc, dns1123_subdomain_errors(rc));
  }
  if (!admitted && present(spec, "preemptionPolicy")) {  // (a new pod's: Priority admission, as above)
    const std::string pp = string_at(spec, "preemptionPolicy");
    if (pp.empty())
      e.required(prefix + "preemptionPolicy");
    else if (pp != "PreemptLowerPriority" && pp != "Never")
      e.not_supported(prefix + "preemptionPolicy", pp, {"PreemptLowerPriority", "Never"});
  }
  if (const json::object* overhead = object_at(spec, "overhead")) {
    // validateOverhead: the container rules, as limits (so `overhead.limits[cpu]`, sic).
    const json::object as_limits{{"limits", *overhead}};
    resource_requirements(e, &as_limits, prefix + "overhead");
  }
  if (const json::object* os = object_at(spec, "os")) {
    // validateOS, then validateLinux or validateWindows.
    const std::string name = string_at(*os, "name");
    if (name.empty())
      e.required(prefix + "os.name", "cannot be empty");
    else if (name != "linux" && name != "windows")
      e.not_supported(prefix + "os", name, {"linux", "windows"});
    else if (name == "windows")
      windows_only(e, spec, prefix);
    else if (name == "linux") {
      const json::object* psc = object_at(spec, "securityContext");
      if (psc && present(*psc, "windowsOptions"))
        e.forbidden(prefix + "securityContext.windowsOptions", "windows options cannot be set for a linux pod");
      for (const char* list :
           {"initContainers", "containers", "ephemeralContainers"}) {  // VisitContainersWithPath's order
        const auto cs = items(spec, list);
        for (std::size_t i = 0; i < cs.size(); ++i)
          if (const json::object* sc = object_at(*cs[i], "securityContext"); sc && present(*sc, "windowsOptions"))
            e.forbidden(fmt::format("{}{}[{}].securityContext.windowsOptions", prefix, list, i),
                        "windows options cannot be set for a linux pod");
      }
    }
  }
  if (pod) {
    // validatePodMetadataAndSpec: a token projection needs a service account.
    if (string_at(spec, "serviceAccountName").empty()) {
      const auto vs = items(spec, "volumes");
      for (std::size_t i = 0; i < vs.size(); ++i)
        if (const json::object* pj = object_at(*vs[i], "projected")) {
          const auto srcs = items(*pj, "sources");
          for (std::size_t j = 0; j < srcs.size(); ++j)
            if (present(*srcs[j], "serviceAccountToken"))
              e.forbidden(fmt::format("{}volumes[{}].projected.sources[{}].serviceAccountToken", prefix, i, j),
                          "must not be specified when serviceAccountName is not set");
        }
    }
    // validateContainersOnlyForPod.
    for (const char* list : {"containers", "initContainers"}) {
      const auto cs = items(spec, list);
      for (std::size_t i = 0; i < cs.size(); ++i) image_whitespace(e, *cs[i], fmt::format("{}{}[{}]", prefix, list, i));
    }
  }
  if (of == PodSpecOf::NewPod) {
    // ValidatePodCreate.
    const json::array* eph = array_at(spec, "ephemeralContainers");
    if (eph && !eph->empty()) e.forbidden(prefix + "ephemeralContainers", "cannot be set on create");
    const json::array* gates = array_at(spec, "schedulingGates");
    if (!string_at(spec, "nodeName").empty() && gates && !gates->empty())
      e.forbidden(prefix + "nodeName", "cannot be set until all schedulingGates have been cleared");
    if (meta)
      annotations_match_fields(e, object_at(*meta, "annotations") ? *object_at(*meta, "annotations") : kNone, spec,
                               prefix);
  } else if (of == PodSpecOf::Template) {
    const json::array* eph = array_at(spec, "ephemeralContainers");
    if (eph && !eph->empty())
      e.forbidden(prefix + "ephemeralContainers", "ephemeral containers not allowed in pod template");
  }
}

// pkg/apis/node/validation ValidateRuntimeClass's rules after ValidateObjectMeta (v1.32).
void validate_runtime_class(const json::object& rc, std::vector<StatusCause>& causes) {
  Errors e{causes};
  // NameIsDNSLabel(rc.Handler).
  const std::string handler = string_at(rc, "handler");
  e.invalid("handler", handler, dns1123_label_errors(handler));
  // validateOverhead: ValidateContainerResourceRequirements on {Limits: podFixed} at "overhead".
  if (const json::object* overhead = object_at(rc, "overhead")) {
    const json::object* fixed = object_at(*overhead, "podFixed");
    const json::object as_limits{{"limits", fixed ? *fixed : kNone}};
    resource_requirements(e, &as_limits, "overhead");
  }
  const json::object* scheduling = object_at(rc, "scheduling");
  if (!scheduling) return;
  // validateScheduling: ValidateLabels(nodeSelector), then validateTolerations, which hands
  // ValidateTolerations the path "scheduling.tolerations" with a second "tolerations" appended
  // (sic), and refuses a toleration whose key, operator, value and effect repeat an earlier one's.
  node_selector_labels(e, object_at(*scheduling, "nodeSelector"), "scheduling.nodeSelector");
  tolerations(e, *scheduling, "scheduling.tolerations.");
  const auto ts = items(*scheduling, "tolerations");
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const json::object& t = *ts[i];
    auto same_key = [&](const json::object* other) {
      for (const char* k : {"key", "operator", "value", "effect"})
        if (string_at(t, k) != string_at(*other, k)) return false;
      return true;
    };
    if (std::any_of(ts.begin(), ts.begin() + static_cast<std::ptrdiff_t>(i), same_key))
      // field.Duplicate's %#v of the core.Toleration (a pointer shown as FIDELITY.md says).
      e.duplicate(
          fmt::format("scheduling.tolerations[{}]", i),
          fmt::format("core.Toleration{{Key:{}, Operator:{}, Value:{}, Effect:{}, TolerationSeconds:(*int64)({})}}",
                      q(string_at(t, "key")), q(string_at(t, "operator")), q(string_at(t, "value")),
                      q(string_at(t, "effect")), present(t, "tolerationSeconds") ? "0xc000000000" : "nil"));
  }
}

}  // namespace gpupool::embedded
