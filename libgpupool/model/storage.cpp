#include "gpupool/storage.hpp"

#include "gpupool/error.hpp"
#include "gpupool/names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace gpupool {

namespace {

[[noreturn]] void fail(std::string field, std::string value, std::string rule) {
  throw ValidationError(std::move(field), std::move(value), std::move(rule));
}

// An enum value with its API name and an optional alias users may type (kubectl's RWO, ...).
template <class E>
struct Named {
  E value;
  std::string_view name, alias;
};

constexpr Named<AccessMode> kModes[] = {{AccessMode::ReadWriteOnce, "ReadWriteOnce", "RWO"},
                                        {AccessMode::ReadOnlyMany, "ReadOnlyMany", "ROX"},
                                        {AccessMode::ReadWriteMany, "ReadWriteMany", "RWX"},
                                        {AccessMode::ReadWriteOncePod, "ReadWriteOncePod", "RWOP"}};

}  // namespace

// validatePathNoBacksteps: one error, however many ".." elements.
std::vector<std::string> path_backstep_errors(std::string_view path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") return {"must not contain '..'"};
    start = end + 1;
  }
  return {};
}

// validateLocalDescendingPath: relative (path.IsAbs is a leading '/'), then no "..".
std::vector<std::string> local_descending_path_errors(std::string_view path) {
  std::vector<std::string> errs;
  if (path.starts_with('/')) errs.push_back("must be a relative path");
  for (auto& e : path_backstep_errors(path)) errs.push_back(std::move(e));
  return errs;
}

std::string access_modes_column(const std::vector<std::string>& api_names) {
  std::string out;
  for (const auto& m : kModes)
    if (std::find(api_names.begin(), api_names.end(), m.name) != api_names.end())
      out += (out.empty() ? "" : ",") + std::string(m.alias);
  return out;
}

std::string volume_status_column(std::string_view phase, bool being_deleted) {
  return being_deleted ? "Terminating" : std::string(phase);
}

namespace {

constexpr Named<HostPathType> kHostPathTypes[] = {{HostPathType::Unset, "", ""},
                                                  {HostPathType::DirectoryOrCreate, "DirectoryOrCreate", ""},
                                                  {HostPathType::Directory, "Directory", ""},
                                                  {HostPathType::FileOrCreate, "FileOrCreate", ""},
                                                  {HostPathType::File, "File", ""},
                                                  {HostPathType::Socket, "Socket", ""},
                                                  {HostPathType::CharDevice, "CharDevice", ""},
                                                  {HostPathType::BlockDevice, "BlockDevice", ""}};

template <class E, std::size_t N>
std::string_view name_in(const Named<E> (&table)[N], E value) {
  for (const auto& t : table)
    if (t.value == value) return t.name;
  return "";
}

// Throws "supported values: ..." listing every name (and alias) of the table.
template <class E, std::size_t N>
E parse_in(const Named<E> (&table)[N], std::string_view text, std::string_view field) {
  std::string supported;
  for (const auto& t : table) {
    if (text == t.name || (!t.alias.empty() && text == t.alias)) return t.value;
    supported += fmt::format("{}\"{}\"{}", supported.empty() ? "" : ", ", t.name,
                             t.alias.empty() ? "" : fmt::format(" ({})", t.alias));
  }
  fail(std::string(field), std::string(text), "supported values: " + supported);
}

}  // namespace

std::string_view to_string(AccessMode mode) noexcept { return name_in(kModes, mode); }
AccessMode parse_access_mode(std::string_view text, std::string_view field) { return parse_in(kModes, text, field); }
std::string_view to_string(HostPathType type) noexcept { return name_in(kHostPathTypes, type); }
HostPathType parse_host_path_type(std::string_view text, std::string_view field) {
  return parse_in(kHostPathTypes, text, field);
}

void validate(const PvcRequest& pvc, std::string_view field) {
  validate_dns1123_subdomain(pvc.name, fmt::format("{}.metadata.name", field));
  // ValidatePersistentVolumeClaimSpec: a class name is a DNS-1123 subdomain (ValidateClassName);
  // an alias of the site profile is one too.
  if (!pvc.storage_class.empty())
    validate_dns1123_subdomain(pvc.storage_class, fmt::format("{}.spec.storageClassName", field));
  if (pvc.access_modes.empty())
    fail(fmt::format("{}.spec.accessModes", field), "", "at least 1 access mode is required");
  std::set<AccessMode> seen(pvc.access_modes.begin(), pvc.access_modes.end());
  if (seen.count(AccessMode::ReadWriteOncePod) && seen.size() > 1)
    fail(fmt::format("{}.spec.accessModes", field), "ReadWriteOncePod",
         "may not use ReadWriteOncePod with other access modes");
  if (pvc.size.is_negative() || pvc.size.is_zero())
    fail(fmt::format("{}.spec.resources.requests[storage]", field), pvc.size.to_string(), "must be greater than zero");
}

void validate(const ConfigMapRequest& config_map, std::string_view field) {
  validate_dns1123_subdomain(config_map.name, fmt::format("{}.metadata.name", field));
  std::size_t total = 0;
  for (const auto& [key, value] : config_map.data) {
    for (const auto& e : config_map_key_errors(key)) fail(fmt::format("{}.data[{}]", field, key), key, e);
    total += value.size();
  }
  // ValidateConfigMap: "must have at most 1048576 bytes" over data and binaryData together.
  if (total > kMaxConfigMapBytes)
    fail(fmt::format("{}.data", field), "",
         fmt::format("Too long: must have at most {} bytes (it has {}); keep large files in a PVC or the image",
                     kMaxConfigMapBytes, total));
}

void validate_volumes(const std::vector<Volume>& volumes, const std::vector<VolumeMount>& mounts,
                      std::string_view prefix) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < volumes.size(); ++i) {
    const Volume& v = volumes[i];
    std::string at = fmt::format("{}volumes[{}]", prefix, i);
    validate_dns1123_label(v.name, at + ".name");
    if (!names.insert(v.name).second)
      fail(at + ".name", v.name, "Duplicate value: two volumes share this name; give each volume its own name");
    if (const auto* nfs = std::get_if<NfsSource>(&v.source)) {
      if (nfs->server.empty()) fail(at + ".nfs.server", "", "Required value: the NFS server's host name or IP");
      if (nfs->path.empty() || nfs->path.front() != '/') fail(at + ".nfs.path", nfs->path, "must be an absolute path");
    } else if (const auto* host = std::get_if<HostPathSource>(&v.source)) {
      if (host->path.empty()) fail(at + ".hostPath.path", "", "Required value: the node's directory");
      for (const auto& e : path_backstep_errors(host->path)) fail(at + ".hostPath.path", host->path, e);
    } else if (const auto* pvc = std::get_if<PvcSource>(&v.source)) {
      // validatePersistentClaimVolumeSource: the claim's name is only required here.
      if (pvc->claim_name.empty()) fail(at + ".persistentVolumeClaim.claimName", "", "Required value");
    } else if (const auto* empty = std::get_if<EmptyDirSource>(&v.source)) {
      if (empty->size_limit && empty->size_limit->is_negative())
        fail(at + ".emptyDir.sizeLimit", empty->size_limit->to_string(),
             "Forbidden: SizeLimit field must be a valid resource quantity");
    } else if (const auto* cm = std::get_if<ConfigMapSource>(&v.source)) {
      // validateConfigMapVolumeSource: the name is required and a DNS-1123 subdomain.
      if (cm->name.empty()) fail(at + ".configMap.name", "", "Required value");
      validate_dns1123_subdomain(cm->name, at + ".configMap.name");
    }
  }
  // ValidateVolumeMounts: mount paths are compared as written.
  std::map<std::string, std::size_t> paths;
  for (std::size_t i = 0; i < mounts.size(); ++i) {
    const VolumeMount& m = mounts[i];
    std::string at = fmt::format("{}volumeMounts[{}]", prefix, i);
    if (!names.count(m.volume))
      fail(at + ".name", m.volume, "Not found: no volume has this name; add the volume or fix the mount's name");
    if (m.mount_path.empty()) fail(at + ".mountPath", "", "Required value");
    auto [it, fresh] = paths.emplace(m.mount_path, i);
    if (!fresh)
      fail(at + ".mountPath", m.mount_path,
           fmt::format("must be unique: volumeMounts[{}] (volume \"{}\") is already mounted there", it->second,
                       mounts[it->second].volume));
    for (const auto& e : local_descending_path_errors(m.sub_path)) fail(at + ".subPath", m.sub_path, e);
  }
}

}  // namespace gpupool
