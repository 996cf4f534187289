// gpupool/staging.hpp — the guide's SSD routine: stage data into the local SSD cache, run, copy
// results back to persistent storage, keep the main command's exit code.
//
// Rendering uses the pieces here: when there is data to stage in, an init container (same image
// and mounts) runs stage_in_script() in every pod that computes, copying each input in turn; when
// results are to be copied back, the main container runs
// ["sh", "-c", run_script(), "gpupool-staging", <main argv...>], so the main command reaches the
// script only as positional parameters ("$@") and is never interpolated into shell text. Either
// half may be used without the other. (An MPIJob's command runs in the launcher, so there only
// stage-in is supported.) Every path is quoted with shell_quote(). rsync is used when the image has
// it, `cp -a` otherwise.
//
// Termination: the kubelet sends SIGTERM to the container's PID 1 (the script) and SIGKILL
// terminationGracePeriodSeconds later. The script traps SIGTERM, forwards it to the main command,
// gives the command half of the grace period to stop (SIGKILL after that), then copies the results
// back in the other half, saying in the pod's log what it copies. The rendered pods that copy
// results back carry terminationGracePeriodSeconds = grace_period_seconds (Kubernetes' default of
// 30 s is too short to copy a checkpoint from an SSD to network storage).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

/// The default terminationGracePeriodSeconds of pods that copy results back: 5 minutes, half to
/// let the command stop (e.g. write a checkpoint), half to copy (about 15 GB at 100 MB/s to NFS).
inline constexpr std::int64_t kDefaultStageOutGraceSeconds = 300;
/// The least grace period that leaves the command and the copy a second each.
inline constexpr std::int64_t kMinStageOutGraceSeconds = 2;

/// One directory to copy into the SSD cache before the run.
struct StageIn {
  std::string source;  ///< absolute path (on a PVC or NFS mount) to copy from, e.g. "/pvc/data"
  std::string cache;   ///< absolute path on the SSD to copy into, e.g. "/mnt/data1/job"
  bool operator==(const StageIn&) const = default;
};

struct SsdStaging {
  std::vector<StageIn> inputs;  ///< copied in this order by the init container; may be empty
  std::string results;          ///< absolute path (on the SSD) the job writes results to; empty: none
  std::string results_target;   ///< absolute path (on a writable PVC/NFS mount) to copy results back to
  /// terminationGracePeriodSeconds of the pods that copy results back (see above).
  std::int64_t grace_period_seconds = kDefaultStageOutGraceSeconds;
  bool operator==(const SsdStaging&) const = default;
};

/// Throws ValidationError (fields "staging.inputs[i].source", "staging.results_target", ...)
/// unless the paths are absolute, results / results_target are either both set or both empty,
/// there is something to stage, and the grace period is at least kMinStageOutGraceSeconds.
void validate(const SsdStaging& staging, std::string_view field = "staging");

/// POSIX single-quoting: the result is one shell word whose value is exactly `text`.
std::string shell_quote(std::string_view text);

/// Shell text copying the contents of `from` into `to` (creating `to`): `rsync -a from/ to/` when
/// rsync is on PATH, else `cp -a from/. to/`.
std::string copy_tree_command(std::string_view from, std::string_view to);

/// Script of the init container: copy each input's source into its cache, in order, saying so;
/// stops at the first failure (the pod does not start).
std::string stage_in_script(const SsdStaging& staging);

/// Script for `sh -c <script> gpupool-staging <argv...>`: runs "$@" (SIGTERM forwarded to it, see
/// above), then copies results back (when set), and exits with the main command's status (a failed
/// copy-back turns a success into failure, never hides a failure).
std::string run_script(const SsdStaging& staging);

/// The main container's command: {"sh", "-c", run_script(staging), "gpupool-staging", argv...}.
std::vector<std::string> staged_command(const SsdStaging& staging, const std::vector<std::string>& argv);

}  // namespace gpupool
