// gpupool/workload.hpp — one portable spec for a training workload, and the kinds it renders to.
//
// A Workload says what to run (image, command, resources, replicas, storage, placement); a site
// Profile (profile.hpp) supplies the cluster's conventions when it is rendered (render.hpp). Kinds:
//   Pod, Deployment (the guide's way), batch/v1 Job,
//   MPIJob  kubeflow.org/v1 (training-operator) or kubeflow.org/v2beta1 (mpi-operator): Launcher + Worker,
//   TFJob   kubeflow.org/v1: PS / Worker / Chief, container "tensorflow",
//   PyTorchJob kubeflow.org/v1: Master + Worker, container "pytorch",
//   TrainJob trainer.kubeflow.org/v1alpha1 (Kubeflow Trainer v2): a runtime (default the
//     ClusterTrainingRuntime torch-distributed) run on `workers` nodes, container "node",
//   JobSet  jobset.x-k8s.io/v1alpha2: one replicatedJob "node" of `workers` Indexed pods.
#pragma once

#include "gpupool/quantity.hpp"
#include "gpupool/resources.hpp"
#include "gpupool/scheduling.hpp"
#include "gpupool/staging.hpp"
#include "gpupool/storage.hpp"
#include "gpupool/taint.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

enum class WorkloadKind { Pod, Deployment, Job, MPIJob, TFJob, PyTorchJob, TrainJob, JobSet };
/// The Kubernetes kind ("MPIJob"); parse_workload_kind also takes "mpi", "tf", "pytorch", "job"...
/// in any case.
std::string_view to_string(WorkloadKind kind) noexcept;
WorkloadKind parse_workload_kind(std::string_view text, std::string_view field = "kind");

/// Which MPIJob API to render.
enum class MpiJobApi {
  /// What the cluster serves (Cluster::render/submit ask discovery); rendered without a cluster, V1.
  Auto,
  V1,       ///< kubeflow.org/v1, training-operator: workers are kept alive by the operator
  V2Beta1,  ///< kubeflow.org/v2beta1, mpi-operator v2: workers run sshd, launcher connects over SSH
};

/// ReplicaSpec.restartPolicy of the Kubeflow kinds (ExitCode only there); a pod's restartPolicy.
enum class RestartPolicy { Always, OnFailure, Never, ExitCode };
std::string_view to_string(RestartPolicy policy) noexcept;
RestartPolicy parse_restart_policy(std::string_view text, std::string_view field = "restartPolicy");

/// runPolicy.cleanPodPolicy of the Kubeflow kinds.
enum class CleanPodPolicy { None, Running, All };
std::string_view to_string(CleanPodPolicy policy) noexcept;
CleanPodPolicy parse_clean_pod_policy(std::string_view text, std::string_view field = "cleanPodPolicy");

/// An environment variable: a literal value, or (field_path set) valueFrom.fieldRef.
struct EnvVar {
  std::string name;
  std::string value;
  std::string field_path;  ///< e.g. "metadata.uid"; when set, `value` is ignored
  bool operator==(const EnvVar&) const = default;
};

/// Replica counts; each kind reads the ones it has (see Workload::kind).
struct Replicas {
  std::int32_t workers = 1;    ///< Deployment replicas, Job parallelism, MPI/TF/PyTorch Worker, TrainJob/JobSet nodes
  std::int32_t ps = 0;         ///< TFJob PS
  std::int32_t chief = 0;      ///< TFJob Chief (0 or 1)
  std::int32_t master = 1;     ///< PyTorchJob Master (exactly 1)
  std::int32_t evaluator = 0;  ///< TFJob Evaluator (0 or 1)
  bool operator==(const Replicas&) const = default;
};

/// A TensorBoard Deployment + NodePort Service reading the job's log directory.
struct TensorBoard {
  bool enabled = false;
  std::string log_dir = "/training_logs";  ///< absolute path in the training containers
  std::string image;                       ///< empty: the profile's TensorBoard image
  bool operator==(const TensorBoard&) const = default;
};

/// Code fetched into the pods before the command starts, as Arena's --sync-mode renders it: an
/// init container "init-code" fills an emptyDir "code-sync" at /code, which the main container
/// sees at <working_dir>/code (or /code without a working directory).
struct CodeSync {
  std::string mode;    ///< "git" (git-sync, one time) or "rsync"
  std::string source;  ///< git: the repository URL; rsync: SOURCE as rsync takes it (host::module/path)
  std::string image;   ///< empty: Arena's default image for the mode (render.hpp)
  bool operator==(const CodeSync&) const = default;
};

/// A file put into the containers from a ConfigMap (Arena's --config-file).
struct ConfigFile {
  std::string path;     ///< absolute path in the container
  std::string content;  ///< the file's bytes (UTF-8 text: ConfigMap data)
  bool operator==(const ConfigFile&) const = default;
};

/// What one TFJob replica type gets instead of the workload's resources and nodeSelector (Arena's
/// per-role flags --worker-cpu, --ps-memory, --ps-gpus, --chief-port, --evaluator-selector ...;
/// submit_options.hpp cites them).
struct RoleSettings {
  std::optional<Quantity> cpu_request, cpu_limit, memory_request, memory_limit;  ///< unset: the workload's
  std::optional<std::int64_t> gpus;                  ///< unset: the workload's (none for PS)
  std::map<std::string, std::string> node_selector;  ///< non-empty: replaces the workload's
  std::int32_t port = 0;                             ///< containerPort named tfjob-port; 0: none
  /// Arena's --worker-affinity-policy / --ps-affinity-policy: "spread" (podAntiAffinity to the
  /// job's pods of this type, one per node) or "binpack" (podAffinity: near the job's pods, then
  /// any PS and workers); empty: none. `affinity_required`: Arena's --*-affinity-constraint
  /// required (requiredDuringScheduling) instead of preferred.
  std::string affinity_policy;
  bool affinity_required = false;
  bool operator==(const RoleSettings&) const = default;
};

struct Workload {
  std::string name;
  std::string namespace_;  ///< empty: the profile's default namespace
  WorkloadKind kind = WorkloadKind::Job;
  MpiJobApi mpi_api = MpiJobApi::Auto;  ///< V1 or V2Beta1 are used as given, even against a cluster
  /// TrainJob spec.runtimeRef.name: a ClusterTrainingRuntime; empty: "torch-distributed".
  std::string runtime;

  std::string image;  ///< a full reference or a shorthand of the profile's catalog
  /// What to run: `command` as argv, or `shell` run as ["sh", "-c", shell] (the string is one argv
  /// element, never re-split). At most one of the two; both empty: the image's entrypoint.
  std::vector<std::string> command;
  std::string shell;
  std::vector<EnvVar> env;
  std::string working_dir;
  std::string shell_program = "sh";  ///< runs `shell` as [shell_program, "-c", shell] (Arena's --shell)
  std::string image_pull_policy;     ///< Always | IfNotPresent | Never; empty: the profile's
  /// TFJob images per replica type (Arena's --ps-image / --worker-image); empty: `image`. The
  /// worker image also runs the Chief and the Evaluator, as Arena's tfjob chart does.
  std::string ps_image;
  std::string worker_image;
  std::optional<CodeSync> code_sync;
  std::vector<ConfigFile> config_files;  ///< in one ConfigMap "<name>-config", mounted file by file

  Resources resources;  ///< per replica (GPUs go to the replicas that compute, see render.hpp)
  Replicas replicas;
  /// TFJob only: per replica type, keyed "PS", "Worker", "Chief" or "Evaluator" (tfReplicaSpecs' keys).
  std::map<std::string, RoleSettings> role_settings;
  std::int32_t slots_per_worker = 0;  ///< MPIJob slotsPerWorker; 0: GPUs per worker (at least 1)

  std::vector<Toleration> tolerations;
  std::map<std::string, std::string> node_selector;
  std::vector<NodeSelectorRequirement> required_node_affinity;  ///< ANDed, in one term

  std::vector<PvcRequest> pvcs;  ///< claims created with the submission
  /// ConfigMaps created with the submission, before the workload; delete_job() removes them with it.
  std::vector<ConfigMapRequest> config_maps;
  std::vector<Volume> volumes;
  std::vector<VolumeMount> mounts;   ///< mounts of the main container
  bool ssd = false;                  ///< mount the profile's local SSDs
  bool nfs = false;                  ///< mount the profile's NFS share (datasets ro, own dir rw)
  std::optional<Quantity> shm_size;  ///< memory-backed emptyDir at /dev/shm with this sizeLimit
  std::optional<SsdStaging> staging;

  std::string scheduler_name;        ///< empty: the profile's (GPU workloads) or the default
  std::optional<bool> host_network;  ///< nullopt: the profile's default
  std::optional<bool> host_ipc;      ///< nullopt: the profile's default
  std::string priority_class_name;
  /// The pods' RuntimeClass (spec.runtimeClassName), e.g. `nvidia` where the NVIDIA GPU operator
  /// installs its container runtime as a handler of that name. Empty: the profile's
  /// gpu.runtime_class for a workload with GPUs, or none (the node's default runtime).
  std::string runtime_class_name;
  /// Kueue LocalQueue (label kueue.x-k8s.io/queue-name; the job is created suspended where Kueue's
  /// integration expects it, see render.cpp queue_for_kueue). Empty: the profile's default_queue,
  /// or none.
  std::string queue;
  /// Arena's --gang: all of the job's pods start together or none does. Done by Kueue's
  /// all-or-nothing admission, so it requires a queue (`queue` or the profile's default); a
  /// cluster without Kueue refuses it (Cluster::render / submit).
  bool gang = false;
  std::vector<std::string> image_pull_secrets;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;

  std::optional<RestartPolicy> restart_policy;  ///< nullopt: the kind's default
  std::optional<std::int32_t> backoff_limit;
  std::optional<CleanPodPolicy> clean_pod_policy;
  /// TFJob spec.successPolicy: "" (training-operator's default, Arena's ChiefWorker: the job
  /// succeeds when the chief, or worker 0, does) or "AllWorkers".
  std::string success_policy;
  std::optional<std::int32_t> ttl_seconds_after_finished;
  /// Pod / Job spec.activeDeadlineSeconds, the Kubeflow kinds' runPolicy.activeDeadlineSeconds.
  std::optional<std::int64_t> active_deadline_seconds;
  /// Job only: completionMode Indexed, so that each pod gets JOB_COMPLETION_INDEX (0..workers-1).
  bool indexed = false;

  TensorBoard tensorboard;
};

/// Checks the spec as the API server and the operators would (names per kind, replica counts,
/// resources, env, labels, tolerations, volumes and mounts, restart policy and fields per kind).
/// Throws ValidationError naming the field and the rule. These are the rules that need no site
/// profile; validate(workload, profile) in render.hpp adds the profile's (and accepts exactly what
/// render() accepts).
void validate(const Workload& workload);

/// The resources of one replica type ("PS", "Worker", ...): the workload's, with what
/// role_settings gives that type over them. GPUs: the workload's for the types that compute, none
/// for an MPIJob Launcher or a TFJob PS unless role_settings gives them (Arena's --ps-gpus).
Resources resources_of(const Workload& workload, std::string_view replica_type);

/// Names of the pods/services the kind derives from the job name, e.g. {"mpi-dist-launcher",
/// "mpi-dist-worker-0"}; the Kubeflow operators create a Service of each name, so each must be a
/// DNS-1035 label.
std::vector<std::string> derived_replica_names(const Workload& workload);

}  // namespace gpupool
