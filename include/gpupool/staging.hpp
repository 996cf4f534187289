// gpupool/staging.hpp — the guide's SSD routine: stage data into the local SSD cache, run, copy
// results back to persistent storage, keep the main command's exit code.
//
// Rendering uses the pieces here: an init container (same image and mounts) runs
// stage_in_script() in every pod that computes; when results are to be copied back, the main
// container runs ["sh", "-c", run_script(), "gpupool-staging", <main argv...>], so the main command
// reaches the script only as positional parameters ("$@") and is never interpolated into shell
// text. (An MPIJob's command runs in the launcher, so there only stage-in is supported.)
// Every path is quoted with shell_quote(). rsync is used when the image has it, `cp -a` otherwise.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

struct SsdStaging {
  std::string source;          ///< absolute path (on a PVC or NFS mount) to copy from, e.g. "/pvc/data"
  std::string cache;           ///< absolute path on the SSD to copy into, e.g. "/mnt/data1/job"
  std::string results;         ///< absolute path (on the SSD) the job writes results to; empty: none
  std::string results_target;  ///< absolute path (on a PVC) to copy results back to
  bool operator==(const SsdStaging&) const = default;
};

/// Throws ValidationError unless the paths are absolute, and results / results_target are either
/// both set or both empty.
void validate(const SsdStaging& staging, std::string_view field = "staging");

/// POSIX single-quoting: the result is one shell word whose value is exactly `text`.
std::string shell_quote(std::string_view text);

/// Shell text copying the contents of `from` into `to` (creating `to`): `rsync -a from/ to/` when
/// rsync is on PATH, else `cp -a from/. to/`.
std::string copy_tree_command(std::string_view from, std::string_view to);

/// Script of the init container: copy source into cache.
std::string stage_in_script(const SsdStaging& staging);

/// Script for `sh -c <script> gpupool-staging <argv...>`: runs "$@", then copies results back
/// (when set), and exits with the main command's status (a failed copy-back turns a success into
/// failure, never hides a failure).
std::string run_script(const SsdStaging& staging);

/// The main container's command: {"sh", "-c", run_script(staging), "gpupool-staging", argv...}.
std::vector<std::string> staged_command(const SsdStaging& staging, const std::vector<std::string>& argv);

}  // namespace gpupool
