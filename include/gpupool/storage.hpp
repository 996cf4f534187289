// gpupool/storage.hpp — persistent volume claims, volume sources and mounts.
//
// Rules follow the API server's validation (pkg/apis/core/validation/validation.go):
//  - ValidateVolumes: volume names are DNS-1123 labels and unique; NFS needs a server and an
//    absolute path; hostPath needs a path without ".." elements; emptyDir.sizeLimit is not negative;
//    a PVC volume names its claim.
//  - ValidateVolumeMounts: a mount names an existing volume, mountPath is set and unique within the
//    container (as written), subPath is a relative path without "..".
// The embedded API server applies the same path rules (path_backstep_errors,
// local_descending_path_errors) to every pod it is sent.
//  - ValidatePersistentVolumeClaimSpec: at least one access mode, a storage request above zero,
//    ReadWriteOncePod not combined with another mode.
#pragma once

#include "gpupool/quantity.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace gpupool {

enum class AccessMode { ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod };
/// "ReadWriteOnce" etc.; parse_access_mode also takes kubectl's short forms RWO, ROX, RWX, RWOP.
std::string_view to_string(AccessMode mode) noexcept;
AccessMode parse_access_mode(std::string_view text, std::string_view field = "accessModes");
/// The ACCESS MODES column of kubectl get pvc/pv (pkg/apis/core/helper GetAccessModesAsString):
/// the short forms in the fixed order RWO, ROX, RWX, RWOP, each once, unknown modes left out.
std::string access_modes_column(const std::vector<std::string>& api_names);
/// The STATUS column of kubectl get pvc/pv (printers.go printPersistentVolumeClaim /
/// printPersistentVolume): "Terminating" once the object is being deleted (a protection
/// finalizer keeps a claim a scheduled pod uses, a Bound volume), else its phase.
std::string volume_status_column(std::string_view phase, bool being_deleted);

/// A PersistentVolumeClaim to create with a submission.
struct PvcRequest {
  std::string name;
  std::string storage_class;  ///< a StorageClass name, or a profile alias ("nfs", "cephfs"); empty: cluster default
  Quantity size = Quantity::parse("1Gi");
  std::vector<AccessMode> access_modes{AccessMode::ReadWriteMany};
  bool operator==(const PvcRequest&) const = default;
};
/// Throws ValidationError naming `field`.<member>.
void validate(const PvcRequest& pvc, std::string_view field = "pvc");

/// A ConfigMap to create with a submission (before the workload, deleted with it).
struct ConfigMapRequest {
  std::string name;
  std::map<std::string, std::string> data;  ///< key (a file name in a configMap volume) -> text
  bool operator==(const ConfigMapRequest&) const = default;
};
/// The API server's limit on a ConfigMap's data (core.MaxSecretSize, 1 MiB; ValidateConfigMap).
inline constexpr std::size_t kMaxConfigMapBytes = 1024 * 1024;
/// ValidateConfigMap (pkg/apis/core/validation/validation.go): a DNS-1123 subdomain name, keys
/// valid as IsConfigMapKey, data at most kMaxConfigMapBytes. ValidationError naming `field`.<member>.
void validate(const ConfigMapRequest& config_map, std::string_view field = "configMap");

/// persistentVolumeClaim: an existing claim.
struct PvcSource {
  std::string claim_name;
  bool read_only = false;
  bool operator==(const PvcSource&) const = default;
};
/// nfs: a direct NFS export (no PVC).
struct NfsSource {
  std::string server;  ///< host name or IP
  std::string path;    ///< absolute export path
  bool read_only = false;
  bool operator==(const NfsSource&) const = default;
};
/// hostPath's `type` (empty string in the API = no check).
enum class HostPathType { Unset, DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice, BlockDevice };
std::string_view to_string(HostPathType type) noexcept;
HostPathType parse_host_path_type(std::string_view text, std::string_view field = "hostPath.type");
/// hostPath: a directory of the node, e.g. a local SSD.
struct HostPathSource {
  std::string path;
  HostPathType type = HostPathType::Unset;
  bool operator==(const HostPathSource&) const = default;
};
/// emptyDir; medium Memory gives a tmpfs (the usual /dev/shm for PyTorch data loaders).
struct EmptyDirSource {
  bool memory = false;  ///< medium: Memory
  std::optional<Quantity> size_limit;
  bool operator==(const EmptyDirSource&) const = default;
};

/// configMap: the keys of a ConfigMap as files (e.g. a function job's program, function_job.hpp).
struct ConfigMapSource {
  std::string name;  ///< the ConfigMap's name
  bool operator==(const ConfigMapSource&) const = default;
};

using VolumeSource = std::variant<PvcSource, NfsSource, HostPathSource, EmptyDirSource, ConfigMapSource>;

/// A pod volume: a name and where its data comes from.
struct Volume {
  std::string name;
  VolumeSource source;
  bool operator==(const Volume&) const = default;
};

/// A container's view of a volume.
struct VolumeMount {
  std::string volume;      ///< name of a Volume
  std::string mount_path;  ///< absolute path in the container
  std::string sub_path;    ///< relative path inside the volume; empty: the whole volume
  bool read_only = false;
  bool operator==(const VolumeMount&) const = default;
};

/// validatePathNoBacksteps: {"must not contain '..'"} when an element of `path` is "..", else {}.
std::vector<std::string> path_backstep_errors(std::string_view path);
/// validateLocalDescendingPath: "must be a relative path" when `path` starts with '/', then the
/// backstep error (subPath, subPathExpr, key paths, seccomp localhost profiles).
std::vector<std::string> local_descending_path_errors(std::string_view path);

/// Checks volumes and the mounts of one container together (field: "volumes" / "volumeMounts"
/// prefixed with `field_prefix`, e.g. "spec."). Throws ValidationError on the first problem.
void validate_volumes(const std::vector<Volume>& volumes, const std::vector<VolumeMount>& mounts,
                      std::string_view field_prefix = "");

}  // namespace gpupool
