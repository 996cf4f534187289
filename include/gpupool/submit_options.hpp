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
  std::string queue;              ///< Kueue LocalQueue (--queue); empty: the profile's default_queue, or none
  bool gang = false;              ///< --gang: all pods or none, through Kueue (see Workload::gang)
  std::string command;            ///< a shell string, run as sh -c
  std::vector<std::string> argv;  ///< or an argv (at most one of command/argv)

  // ---- Arena's submit flags (kubeflow/arena; each cites where Arena defines it) ----
  /// --annotation K=V, on the workload and its pods. Arena: pkg/argsbuilder/submit.go,
  /// SubmitArgsBuilder.AddCommandFlags / setAnnotations.
  std::vector<std::string> annotations;
  /// --label K=V, on the workload and its pods (submit.go, setLabels).
  std::vector<std::string> labels;
  /// --image-pull-secret NAME: the pods' imagePullSecrets (submit.go, setImagePullSecrets).
  std::vector<std::string> image_pull_secrets;
  /// --image-pull-policy Always|IfNotPresent|Never; empty: the profile's (Arena's default is Always;
  /// submit.go AddCommandFlags).
  std::string image_pull_policy;
  /// --tensorboard-image: TensorBoard's image, with --tensorboard (submit_tensorboard.go,
  /// SubmitTensorboardArgsBuilder.AddCommandFlags).
  std::string tensorboard_image;
  /// --retry N: backoffLimit of a Job, runPolicy.backoffLimit of the Kubeflow kinds (submit.go
  /// "retry times"; charts/*/templates `backoffLimit: {{ .Values.retry }}`); -1: not given.
  std::int32_t retry = -1;
  /// --shell: the shell that runs `command` as SHELL -c COMMAND (submit.go, default sh); empty: sh.
  std::string shell;
  /// --running-timeout DURATION ("5s", "1m", "2h22m"): activeDeadlineSeconds of a Pod or Job,
  /// runPolicy.activeDeadlineSeconds of the Kubeflow kinds (submit_tfjob.go / submit_pytorchjob.go,
  /// setRunPolicy).
  std::string running_timeout;
  /// --ttl-after-finished DURATION: ttlSecondsAfterFinished (submit_pytorchjob.go, setRunPolicy).
  std::string ttl_after_finished;
  /// --clean-task-policy None|Running|All: runPolicy.cleanPodPolicy (submit_tfjob.go check()).
  std::string clean_task_policy;
  /// --config-file HOST_FILE[:CONTAINER_FILE]: the host file's content at CONTAINER_FILE (default:
  /// the host file's absolute path), from a ConfigMap (submit.go, setConfigFiles). Read here.
  std::vector<std::string> config_files;
  /// --sync-mode git|rsync, --sync-source, --sync-image: fetch code into <working-dir>/code before
  /// the command (submit_sync_code.go, SubmitSyncCodeArgsBuilder.handleSyncCode).
  std::string sync_mode;
  std::string sync_source;
  std::string sync_image;
  /// TFJob: --ps-image, --worker-image (also the Chief's and Evaluator's), --evaluator
  /// (submit_tfjob.go, SubmitTFJobArgsBuilder.AddCommandFlags).
  std::string ps_image;
  std::string worker_image;
  bool evaluator = false;
  /// --device RESOURCE=COUNT: an extra resource per replica, e.g. amd.com/gpu=1 (submit.go, setDevices).
  std::vector<std::string> devices;
};

/// Why an option (its flag name, e.g. "--ps") cannot apply to a kind, as one sentence naming the
/// flag; empty when it applies. to_workload() refuses such options with this reason, and the
/// command leaves them out of a kind's --help.
std::string option_refusal(WorkloadKind kind, std::string_view flag);

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
