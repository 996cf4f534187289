// gpupool/submit_options.hpp — Arena-style submission options, as users type them.
//
// `gpupool submit mpi --gpus 1 --toleration ssd_node --data pvc:/data ...` and Python's
// `cluster.submit("mpi", gpus=1, tolerations=["ssd_node"], data=["pvc:/data"])` both fill a
// SubmitOptions and call to_workload(): the mini-syntaxes of the flags are parsed here, once.
#pragma once

#include "gpupool/error.hpp"
#include "gpupool/workload.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

struct SubmitOptions {
  std::string kind = "job";  ///< mpi | tf | pytorch | job | deployment | pod (any case, or the Kind)
  std::string name;
  std::string namespace_;  ///< empty: the connection's namespace
  std::string image;       ///< full reference or catalog shorthand
  std::int64_t gpus = 0;   ///< per worker
  std::int32_t workers = 1;
  std::int32_t ps = 0;       ///< TFJob parameter servers
  bool chief = false;        ///< TFJob chief
  std::string cpu;           ///< request per replica, e.g. "4" or "500m"; empty: none
  std::string memory;        ///< request per replica, e.g. "16Gi"; empty: none
  std::string cpu_limit;     ///< limit per replica; empty: none (or the request, with a profile's limits_from_requests)
  std::string memory_limit;  ///< limit per replica; empty: as cpu_limit
  /// GPUs per replica as a limit. Kubernetes requires an extended resource's request to equal its
  /// limit, so this is --gpus by another name: both given must agree.
  std::int64_t gpu_limit = -1;           ///< -1: not given
  std::string shm;                       ///< size of a memory-backed /dev/shm, e.g. "8Gi"; empty: none
  std::vector<std::string> tolerations;  ///< "ssd_node", "all", "key=value:Effect", "key:Effect", "k=v:effect,op"
  std::vector<std::string> selectors;    ///< "key=value" node labels
  std::vector<std::string> data;         ///< "pvc-name:/mount/path[:ro]"
  std::vector<std::string> data_dirs;    ///< "/host/path:/mount/path[:ro]"
  std::vector<std::string> pvc_create;   ///< "name:storage-class:size[:/mount/path]"
  std::vector<std::string> env;          ///< "KEY=VALUE"
  bool ssd = false;                      ///< mount the profile's local SSDs
  bool nfs = false;                      ///< mount the profile's NFS share
  /// "SOURCE:CACHE" each: copy SOURCE (PVC/NFS path) into CACHE (SSD) before the run, in order.
  std::vector<std::string> stage_in;
  /// "RESULTS:TARGET": copy RESULTS (SSD) back to TARGET (a writable PVC/NFS path) after the run,
  /// also when the pod is terminated (with or without stage_in).
  std::string stage_out;
  /// Seconds the pod gets after SIGTERM to stop the command and copy results back (its
  /// terminationGracePeriodSeconds); -1: kDefaultStageOutGraceSeconds. Only with stage_out.
  std::int64_t stage_out_grace = -1;
  std::string working_dir;
  bool tensorboard = false;
  std::string logdir;   ///< TensorBoard log dir; empty: /training_logs
  std::string mpi_api;  ///< "v1" | "v2beta1" | "" (the caller decides, e.g. from discovery)
  std::string runtime;  ///< TrainJob runtimeRef: a ClusterTrainingRuntime; empty: torch-distributed
  std::string scheduler_name;
  std::string priority_class;
  std::string command;            ///< a shell string, run as sh -c
  std::vector<std::string> argv;  ///< or an argv (at most one of command/argv)
};

/// Builds and validates the Workload these options describe. Throws ValidationError naming the
/// option (e.g. field "--data[1]") and the syntax it expects.
Workload to_workload(const SubmitOptions& options);

/// An error about a Workload field that an option set, renamed to that option: render() and
/// Cluster::submit() check a job against the profile's mounts, after to_workload(), and name the
/// Workload's fields ("staging.results_target"); for a job built from options the error should
/// name the flag ("--stage-out"). Errors about other fields are returned unchanged.
ValidationError with_option_names(const ValidationError& error);

/// "key=value" -> {key, value}; throws ValidationError(field, text, ...) when there is no '=' or
/// the key is empty.
std::pair<std::string, std::string> parse_key_value(std::string_view text, std::string_view field);
/// A whole non-negative count as typed on a command line ("3"); throws ValidationError otherwise.
std::int64_t parse_count(std::string_view text, std::string_view field);

}  // namespace gpupool
