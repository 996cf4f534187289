// embedded/local_mounts.hpp — RunMode::Local's volumes: each volume of a pod is a directory on this
// machine, and the container's command sees it at its mountPath.
//
// Where a volume lives (under the local runtime's root, `<state dir>/local` for a saved cluster):
//   hostPath (the nodes' SSDs)   <root>/nodes/<node>/<path>         per node, shared by its pods
//   persistentVolumeClaim        <root>/volumes/<namespace>/<claim> shared by every pod mounting it
//   nfs                          <root>/nfs/<server>/<path>          one per server:path
//   emptyDir (and other kinds)   <pod dir>/volumes/<volume>          per pod, gone with the pod's dir
//   configMap / secret           <pod dir>/volumes/<volume>          one file per key, from the store
//
// How the command sees them at their mountPath (MountMethod):
//   Namespace  the command runs in a mount namespace of its own (unshare(CLONE_NEWNS), inside a new
//              user namespace when this process lacks CAP_SYS_ADMIN): a tmpfs root mirrors this
//              machine's / through bind mounts, and each volume's directory is bind-mounted at its
//              mountPath (readOnly: a read-only bind). Nothing is created outside the state dir.
//   Paths      where mount namespaces are not allowed: every occurrence of a mountPath in the
//              command, args, env values and workingDir is rewritten to the volume's directory.
// MountMethod::Auto probes once which one this machine allows; $GPUPOOL_LOCAL_MOUNTS forces one:
// "namespace", "paths", or "userns" (UserNamespace: Namespace, always inside a new user namespace,
// as it runs without CAP_SYS_ADMIN; how a machine running as root tests that path).
#pragma once

#include <sys/types.h>
#include <boost/json.hpp>

#include <string>
#include <vector>

namespace gpupool::embedded {

namespace json = boost::json;

/// One volumeMount of a container, resolved: the local directory `source` appears at `target`.
struct LocalMount {
  std::string source, target;
  bool read_only = false;
};

enum class MountMethod { Auto, Namespace, Paths, UserNamespace };
/// Auto resolved: $GPUPOOL_LOCAL_MOUNTS when set ("namespace", "paths", "userns"), else Namespace when a
/// probe child could create a mount namespace and mount a tmpfs in it (probed once), else Paths.
MountMethod resolve_mount_method(MountMethod wanted = MountMethod::Auto);
const char* to_string(MountMethod m) noexcept;

/// The local directory of each volume of `pod` (name -> directory); see the table above. `files`:
/// for configMap and secret volumes, the keys' contents (filled by the caller from the store;
/// volume name -> files). Creates the directories and writes those files with their modes.
struct LocalFile {
  std::string path, bytes;
  unsigned mode = 0644;  ///< the item's mode, else the volume's defaultMode, else 0644 (as the kubelet)
};
struct VolumeSources {
  std::string root;     ///< the local runtime's root
  std::string pod_dir;  ///< the pod's directory
  std::vector<std::pair<std::string, std::vector<LocalFile>>> files;
};
std::vector<std::pair<std::string, std::string>> local_volume_dirs(const json::object& pod, const VolumeSources& in);

/// The container's volumeMounts as LocalMounts (subPath joined and created; subPathExpr expanded
/// with `env`), ordered by target so that a mount inside another comes after it.
std::vector<LocalMount> local_mounts(const json::object& container,
                                     const std::vector<std::pair<std::string, std::string>>& volume_dirs,
                                     const std::vector<std::string>& env);

/// MountMethod::Paths: `text` with every mountPath (as a whole path or a path's leading part:
/// "/data", "/data/x", "--in=/data/x") replaced by its directory; the longest mountPath wins.
std::string rewrite_mount_paths(const std::string& text, const std::vector<LocalMount>& mounts);

/// MountMethod::Namespace: what the child does between fork and exec, prepared beforehand (the child
/// only makes system calls). `root` is an empty directory that becomes the command's /.
struct MountPlan {
  struct Op {
    enum Kind { Dir, File, Symlink, Bind, RBind } kind;
    std::string source, target;  // target inside the new root
    unsigned long flags = 0;     // Bind: the read-only remount's flags (0: writable)
  };
  std::string root;
  std::vector<Op> ops;
  std::string uid_map, gid_map;  // "U U 1": this process's ids, when a user namespace is needed
  bool user_namespace = false;   // a user namespace even when a mount namespace alone is allowed
};
MountPlan plan_mounts(const std::vector<LocalMount>& mounts, const std::string& root, bool user_namespace = false);

/// In the child (after fork, before exec): enters a new mount namespace and carries out the plan,
/// then chroot()s into it. Returns 0, or errno with `*failed_op` set to the op's index (-1: setup).
int enter_mount_plan(const MountPlan& plan, int* failed_op) noexcept;

}  // namespace gpupool::embedded
