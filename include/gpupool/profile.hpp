// gpupool/profile.hpp — a site profile: one cluster's conventions, so workloads stay portable.
//
// Users write `image=ubuntu-pytorch:1.5.0`, `ssd=true`, `nfs=true`, `gpus=1`; rendering
// (render.hpp) asks the profile for the registry and catalog, the local SSD paths, the NFS share,
// the GPU resource name with the env and scheduler it needs, and the pod defaults.
//
// File format (YAML; every key optional unless noted, unknown keys are errors):
//   name: iiis                        # required
//   description: ...
//   namespace: default                # default namespace
//   registry: harbor.iiis.co/library  # catalog prefix
//   images: [{name, tags: [..], gpu, cuda, framework, notes}]
//   storage_classes: {nfs: managed-nfs-storage, cephfs: cephfs}
//   nfs: {server, path, datasets: {sub_path, mount_path}, home: {sub_path, mount_path}}
//        ("{namespace}" in sub_path / mount_path becomes the workload's namespace)
//   local_ssds: [{host_path: /data, mount_path: /mnt/data1}, ...]
//   gpu: {resource: nvidia.com/gpu, scheduler_name, runtime_class, env: [{name, value | field_path}]}
//        ("{gpus}" in an env value becomes the GPUs per replica)
//   pod: {host_network: false, host_ipc: false, image_pull_policy: IfNotPresent}
//   tensorboard: {image}
#pragma once

#include "gpupool/image.hpp"
#include "gpupool/workload.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

/// A directory of the NFS export mounted into pods.
struct NfsMount {
  std::string sub_path;    ///< relative to the export; may contain "{namespace}"
  std::string mount_path;  ///< absolute; may contain "{namespace}"
  bool operator==(const NfsMount&) const = default;
};

/// The site's shared NFS export: datasets read-only for everyone, each user's own directory
/// read-write (the guide forbids touching others' directories, so only one's own is mounted).
struct NfsShare {
  std::string server;
  std::string path;  ///< absolute export path
  NfsMount datasets;
  NfsMount home;
  bool operator==(const NfsShare&) const = default;
};

/// A node-local SSD: the node's directory and where pods see it.
struct LocalSsd {
  std::string host_path;
  std::string mount_path;
  bool operator==(const LocalSsd&) const = default;
};

/// How GPUs are requested on this site.
struct GpuConvention {
  std::string resource = "nvidia.com/gpu";
  std::string scheduler_name;  ///< empty: the default scheduler
  /// The RuntimeClass of pods that get GPUs (e.g. `nvidia` with the NVIDIA GPU operator); empty:
  /// the node's default runtime.
  std::string runtime_class;
  std::vector<EnvVar> env;  ///< added to containers that get GPUs
  bool operator==(const GpuConvention&) const = default;
};

struct Profile {
  std::string name;
  std::string description;
  std::string default_namespace = "default";
  ImageCatalog catalog;
  std::map<std::string, std::string> storage_classes;  ///< alias -> StorageClass name
  std::optional<NfsShare> nfs;
  std::vector<LocalSsd> local_ssds;
  GpuConvention gpu;
  bool host_network = false;
  bool host_ipc = false;
  std::string image_pull_policy;  ///< empty: the API server's default
  /// A cpu/memory request without a limit gets the request as its limit (Guaranteed pods), as a
  /// site whose quotas set limits.cpu / limits.memory needs (the guide's quota.yaml).
  bool limits_from_requests = false;
  std::string tensorboard_image = "tensorflow/tensorflow:2.3.0";
  /// The Kueue LocalQueue a job goes to when it names none (`queue: NAME`); empty: none.
  std::string default_queue;

  /// A profile compiled into the library ("iiis", "generic"); ConfigError listing the known ones
  /// otherwise.
  static Profile builtin(std::string_view name);
  /// Names of the built-in profiles, sorted.
  static std::vector<std::string> builtin_names();
  /// Reads a profile file; ConfigError when unreadable or invalid.
  static Profile load(const std::string& path);
  /// What `--profile` / ConnectOptions::profile name: empty -> "generic"; a path (contains '/' or
  /// ends in .yaml / .yml) -> load(); otherwise builtin().
  static Profile resolve(const std::string& name_or_path);
  /// Parses profile text; errors name `filename`, the line and the key (e.g. "gpu.env[2].name").
  static Profile parse(std::string_view text, std::string_view filename = "<profile>");

  /// The StorageClass for an alias ("nfs" -> "managed-nfs-storage"); other names pass through.
  std::string storage_class(std::string_view alias_or_name) const;

  bool operator==(const Profile&) const = default;
};

}  // namespace gpupool
