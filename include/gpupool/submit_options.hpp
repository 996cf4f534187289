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
  std::string runtime_class;      ///< --runtime-class: the pods' RuntimeClass (Workload::runtime_class_name)
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

  // ---- TFJob's per-role flags (Arena: pkg/argsbuilder/submit_tfjob.go, AddCommandFlags; rendered
  // by charts/tfjob/templates/tfjob.yaml into the role's ReplicaSpec). Each needs its role: --ps N
  // for --ps-*, --chief for --chief-*, --evaluator for --evaluator-*, a Worker for --worker-*.
  /// --worker-cpu / --ps-cpu / --chief-cpu / --evaluator-cpu: that role's CPU request, and its
  /// limit unless the *-cpu-limit flag gives one (the chart writes `limits.cpu: workerCPULimit`,
  /// else `workerCPU`). Over --cpu / --cpu-limit for that role.
  std::string worker_cpu, ps_cpu, chief_cpu, evaluator_cpu;
  std::string worker_cpu_limit, ps_cpu_limit, chief_cpu_limit, evaluator_cpu_limit;
  /// --worker-memory ... --evaluator-memory(-limit): as the CPU flags, for memory.
  std::string worker_memory, ps_memory, chief_memory, evaluator_memory;
  std::string worker_memory_limit, ps_memory_limit, chief_memory_limit, evaluator_memory_limit;
  /// --ps-gpus N: GPUs per parameter server (the chart's psGPU; PS get none otherwise); -1: not given.
  std::int64_t ps_gpus = -1;
  /// --worker-port / --ps-port / --chief-port: the role's containerPort named tfjob-port, which
  /// training-operator uses for the role's Service and TF_CONFIG (default 2222); 0: not given.
  std::int32_t worker_port = 0, ps_port = 0, chief_port = 0;
  /// --worker-selector / --ps-selector / --chief-selector / --evaluator-selector K=V: the role's
  /// nodeSelector, replacing --selector for that role (submit_tfjob.go, transformSelectorArrayToMap:
  /// "this option would cover --selector").
  std::vector<std::string> worker_selectors, ps_selectors, chief_selectors, evaluator_selectors;
  /// --worker-affinity-policy / --ps-affinity-policy none|spread|binpack and
  /// --worker-affinity-constraint / --ps-affinity-constraint preferred|required (submit_tfjob.go
  /// AddCommandFlags; charts/tfjob/templates/_helpers.tpl setWorkerAffinityFunction /
  /// setPSAffinityFunction): spread is a podAntiAffinity, binpack a podAffinity, on
  /// kubernetes.io/hostname. Empty: none (Arena's "none") and preferred.
  std::string worker_affinity_policy, worker_affinity_constraint, ps_affinity_policy, ps_affinity_constraint;

  // ---- More of Arena's training flags (tf / pytorch / mpi submit) ----
  /// --share-memory SIZE (tf, pytorch): Arena's name for --shm, a memory-backed /dev/shm of this
  /// size (submit_tfjob.go / submit_pytorchjob.go AddCommandFlags; charts/tfjob and
  /// charts/pytorchjob render an emptyDir "dshm", medium Memory, sizeLimit SIZE, at /dev/shm).
  /// Arena's default 2Gi is not applied: without the flag there is no /dev/shm volume, as before.
  std::string share_memory;
  /// --nproc-per-node auto|cpu|gpu|N (pytorch): processes per node, as env PET_NPROC_PER_NODE in
  /// every replica (submit_pytorchjob.go check() and setEnvs: `Envs["PET_NPROC_PER_NODE"]`).
  std::string nproc_per_node;
  /// --mounts-on-launcher (mpi): "launcher also mounts pvc" (submit_mpijob.go AddCommandFlags;
  /// charts/mpijob `mountsOnLauncher`, default false). gpupool's launcher always gets the data
  /// mounts (it runs the command), so the flag asks for what is rendered anyway.
  bool mounts_on_launcher = false;
  /// --success-policy ChiefWorker|AllWorkers (tf): TFJob spec.successPolicy (submit_tfjob.go
  /// check() / transform(): ChiefWorker is training-operator's "" and is not written).
  std::string success_policy;
  /// Arena flags gpupool refuses for every kind (the table in submit_options.cpp says what is
  /// missing): --role-sequence (submit_tfjob.go checkRoleSequence: annotation job-role-sequence,
  /// read by ACK's operator only), --starting-timeout (submit_tfjob.go setRunPolicy:
  /// runPolicy.startingDeadlineSeconds, which training-operator v1.9.0's RunPolicy lacks),
  /// --gputopology (submit_mpijob.go: ACK's aliyun.com/gpu topology scheduler), --rdma (submit.go:
  /// rdma/hca devices of ACK's RDMA plugin), --model-name / --model-source (submit.go
  /// setModelName: Arena's model registry).
  std::string role_sequence, starting_timeout, model_name, model_source;
  bool gputopology = false, rdma = false;
};

/// How an error names an option: as the command's flag ("--ps-cpu") or as Python's keyword
/// argument ("ps_cpu"; a repeatable flag's keyword is plural: "--worker-selector" -> "worker_selectors").
enum class OptionNames { Flag, Keyword };

/// The keyword argument of a flag: "--data-dir" -> "data_dirs", "--ps-cpu" -> "ps_cpu".
std::string option_keyword(std::string_view flag);

/// Why an option (its flag name, e.g. "--ps") cannot apply to a kind, as one line naming the
/// option (as `names` says) and the fix; empty when it applies. One table in submit_options.cpp
/// says which kinds each option applies to: to_workload() refuses an option given for another
/// kind with this reason, and the command leaves it out of that kind's --help.
std::string option_refusal(WorkloadKind kind, std::string_view flag, OptionNames names = OptionNames::Flag);

/// Builds and validates the Workload these options describe. Throws ValidationError naming the
/// option (e.g. field "--data[1]") and the syntax it expects. Where a flag is absent, Arena's
/// default applies where gpupool claims Arena's meaning: runPolicy.cleanPodPolicy Running for a
/// TFJob (submit_tfjob.go, --clean-task-policy; submit_options.cpp says why not for the others).
/// `names`: how refusals by kind name the option (Python passes Keyword).
Workload to_workload(const SubmitOptions& options, OptionNames names = OptionNames::Flag);

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
