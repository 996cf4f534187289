// gpupool/cluster.hpp — the facade people use: nodes, taints, PVCs, images, and the job lifecycle
// (submit, get, list, logs, wait, explain, delete) on one Kubernetes cluster.
//
// The command and the Python package are thin layers over this class; what they print comes from
// the to_text()/to_html() functions here, so the terminal, the notebook and C++ show the same.
//
//   auto cluster = gpupool::Cluster::connect({.kubeconfig = "~/.kube/config"});
//   auto opts = gpupool::SubmitOptions{.kind = "mpi", .name = "mpi-dist", .image = "...", .gpus = 1,
//                                      .tolerations = {"ssd_node"}};
//   cluster.submit(gpupool::to_workload(opts));
//   std::cout << cluster.wait("mpi-dist", gpupool::WaitFor::Running, std::chrono::minutes(5)).to_text();
#pragma once

#include "gpupool/client.hpp"
#include "gpupool/logger.hpp"
#include "gpupool/node.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/queues.hpp"
#include "gpupool/render.hpp"
#include "gpupool/storage.hpp"
#include "gpupool/taint.hpp"
#include "gpupool/workload.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpupool {

namespace detail {
struct ClusterImpl;  // the connection's state (libgpupool/cluster/impl.hpp)
}

/// How to reach a cluster. Empty fields take the kubeconfig's values (KUBECONFIG, then
/// ~/.kube/config; in a pod, the service account).
struct ConnectOptions {
  std::string kubeconfig{};  ///< path(s), ':'-separated like KUBECONFIG
  std::string context{};
  std::string namespace_{};  ///< empty: the context's namespace
  std::string profile{};     ///< a built-in profile name or a file path; empty: "generic"
  Logger logger{};           ///< warnings (e.g. insecure TLS, a kubeconfig readable by others); empty: dropped
  RetryPolicy retry{};       ///< how failed requests are retried (gpupool/retry.hpp); tests inject sleep
  std::string cache_dir{};   ///< discovery and TLS sessions kept between processes (ClientOptions::cache_dir)
};

/// A node as `gpupool nodes` / `gpupool top node` show it: its columns (NodeSummary, not the
/// whole Node: a view of thousands of nodes keeps only what it prints) and its GPUs.
struct NodeRow {
  NodeSummary node;
  std::int64_t gpus_total = 0;      ///< allocatable of the profile's GPU resource
  std::int64_t gpus_allocated = 0;  ///< requested by pods bound there and not finished
};

struct NodeList {
  std::vector<NodeRow> rows;
  std::string gpu_resource;  ///< e.g. "nvidia.com/gpu"
  /// GPUs allocated were counted from this namespace's pods only (the user may not list others).
  bool allocation_from_own_namespace_only = false;
  std::chrono::system_clock::time_point observed;  ///< when the list was read (for AGE)
  /// `kubectl get nodes` columns: NAME STATUS ROLES AGE VERSION (wide adds INTERNAL-IP, TAINTS, GPUS).
  std::string to_text(bool wide = false) const;
  /// `arena top node`: NAME IPADDRESS ROLE STATUS GPU(Total) GPU(Allocated), then the cluster summary.
  std::string to_top_text() const;
  std::string to_html() const;
};

/// The job's overall state as `arena get` prints it.
enum class JobStatus { Pending, Running, Succeeded, Failed, Unknown };
std::string_view to_string(JobStatus status) noexcept;  ///< "PENDING", "RUNNING", ...

/// One pod of a job.
struct Instance {
  std::string name;     ///< pod name, e.g. "mpi-dist-launcher-jgms7"
  std::string phase;    ///< pod phase: Pending, Running, Succeeded, Failed
  std::string node;     ///< node name; empty while unscheduled
  std::string node_ip;  ///< the node's InternalIP (what arena's NODE column shows)
  std::chrono::system_clock::time_point created;
};

/// What `arena get NAME` prints.
struct JobInfo {
  std::string name;
  std::string namespace_;
  WorkloadKind kind = WorkloadKind::Job;
  JobStatus status = JobStatus::Unknown;
  std::string priority = "N/A";
  std::chrono::system_clock::time_point created;
  std::optional<std::chrono::system_clock::time_point> started, finished;
  std::chrono::system_clock::time_point observed;  ///< server time the info was read at
  std::vector<Instance> instances;
  std::optional<std::string> tensorboard_url;  ///< http://<node ip>:<node port>, once its pod runs
  /// Why the job is stuck, when gpupool can tell, one line each: no operator acts on a Kubeflow
  /// kind, no scheduler of the pods' schedulerName runs, the API refused its pods (FailedCreate),
  /// the TensorBoard pod does not run.
  std::vector<std::string> notes;
  /// The profile's GPU resource: what the job's pod templates request in all (replicas x per pod),
  /// and what its pods bound to a node and not finished hold (`arena top job`'s GPU(Requested)
  /// and GPU(Allocated)).
  std::int64_t gpus_requested = 0;
  std::int64_t gpus_allocated = 0;
  /// Kueue: the job's LocalQueue and where it stands (a job labelled kueue.x-k8s.io/queue-name).
  std::optional<QueueStatus> queue;

  std::string trainer() const;                     ///< "MPIJOB", "TFJOB", "PYTORCHJOB", "JOB", "DEPLOYMENT", "POD"
  std::chrono::seconds training_duration() const;  ///< started (or created) to finished (or observed)
  /// The seed's layout: STATUS/NAMESPACE/PRIORITY/TRAINING DURATION, the instance table
  /// (NAME STATUS TRAINER AGE INSTANCE NODE), and the TensorBoard lines.
  std::string to_text() const;
  std::string to_html() const;
  /// One line for a display that follows wait(): "mpi-dist: RUNNING (1/2 instances running)".
  std::string progress_text() const;
  /// `gpupool get -o json`: name, namespace, status, trainer, priority, trainingDuration, instances
  /// (name, phase, node, nodeIP), and tensorboard and notes when there are any.
  boost::json::object to_json() const;
};
/// `arena list`: NAME STATUS TRAINER AGE NODE (with_namespace: NAMESPACE first, as kubectl -A).
std::string jobs_to_text(const std::vector<JobInfo>& jobs, bool with_namespace = false);
/// `arena top job` (kubeflow/arena pkg/training/top_job.go): NAME STATUS TRAINER AGE
/// GPU(Requested) GPU(Allocated) NODE, then "Total Allocated/Requested GPUs of Training Jobs: A/R"
/// summed over the RUNNING jobs, as Arena sums them.
std::string top_jobs_to_text(const std::vector<JobInfo>& jobs);

/// What `submit` did.
struct SubmitResult {
  std::string name;
  std::string namespace_;
  std::vector<std::string> created;  ///< "persistentvolumeclaim/data", "mpijob.kubeflow.org/mpi-dist", ...
  Submission submission;             ///< the objects as sent (after the profile was applied)
};

/// What apply() did, as `kubectl apply` reports it.
struct ApplyResult {
  /// "deployment.apps/x created", "... configured", "... unchanged"; with a server dry run the
  /// verb is followed by " (server dry run)".
  std::vector<std::string> lines;
  std::vector<boost::json::object> objects;  ///< as the server returned them
};

/// Why pods are (or would be) where they are.
struct PodExplanation {
  std::string pod;  ///< pod name, or the replica name for a workload not submitted
  std::string phase;
  std::string node;                 ///< where it runs, if bound
  std::vector<std::string> events;  ///< FailedScheduling (and other warning) messages, newest last
  /// A local fit check of every node (reasons in the scheduler's wording, e.g. "node(s) had
  /// untolerated taint {gpu_node: invalid}").
  std::vector<NodeVerdict> nodes;
  std::string quota;  ///< an exceeded-quota message, if any
};
struct Explanation {
  std::string name;
  std::vector<PodExplanation> pods;
  std::vector<std::string> notes;  ///< as JobInfo::notes: why the job is stuck, when gpupool can tell
  std::string to_text() const;
  std::string to_html() const;
};

/// What wait() waits for.
enum class WaitFor { Running, Succeeded, Finished };
WaitFor parse_wait_for(std::string_view text, std::string_view field = "for");

struct JobLogOptions {
  std::string instance;  ///< pod name; empty: the job's first pod (the launcher / master / worker 0)
  std::string container;
  bool follow = false;
  std::optional<std::int64_t> tail_lines;
};

/// How Cluster::exec runs a command in one of a job's pods.
struct JobExecOptions {
  std::string instance;              ///< pod name (one of the job's); empty: its first running pod
  std::string container;             ///< empty: the pod's only container
  std::optional<std::string> input;  ///< sent as the command's stdin, then EOF
  int stdin_fd = -1;                 ///< or: stdin read from this descriptor until EOF (the command line's)
  bool tty = false;                  ///< allocate a terminal (stderr is merged into stdout)
  /// Where output goes as it arrives; unset: captured into ExecResult.
  std::function<void(std::string_view)> on_stdout, on_stderr;
  std::function<std::optional<std::pair<int, int>>()> terminal_size;  ///< with tty: (columns, rows)
};

/// What a command run by Cluster::exec did.
struct ExecResult {
  int exit_code = 0;
  std::string stdout_text, stderr_text;  ///< captured output (empty when streamed to sinks)
};

/// Parses kubectl's port specs: "8080:80", "80" (the same port locally), ":80" (a free local port).
/// ValidationError naming "ports[i]" otherwise.
std::vector<PortForward::Port> parse_port_specs(const std::vector<std::string>& specs);

/// A quota of the namespace: name and, per resource, used / hard.
struct QuotaInfo {
  std::string name;
  std::vector<std::tuple<std::string, std::string, std::string>> resources;  ///< resource, used, hard
};

/// A PVC as `gpupool pvc list` shows it.
struct PvcInfo {
  std::string name, status, volume, capacity, access_modes, storage_class;
  std::chrono::system_clock::time_point created;
};
std::string pvcs_to_text(const std::vector<PvcInfo>& pvcs, std::chrono::system_clock::time_point now);

/// The guide's image table: IMAGE (full reference) TAGS GPU CUDA FRAMEWORK NOTES.
std::string catalog_to_text(const ImageCatalog& catalog);
std::string catalog_to_html(const ImageCatalog& catalog);

/// A connection to one cluster, in one namespace, with one site profile. Thread-safe; cheap to copy
/// (copies share the connection).
class Cluster {
 public:
  /// Reads the kubeconfig and the profile; does not contact the server yet.
  static Cluster connect(const ConnectOptions& options = {});

  const std::string& namespace_name() const;
  /// The REST client underneath, for anything the facade does not cover.
  const Client& client() const;
  const Profile& profile() const;
  /// The MPIJob version the server serves (discovery, cached): V1 or V2Beta1; ApiError if none.
  MpiJobApi mpi_job_api() const;

  NodeList nodes() const;
  /// As `kubectl taint nodes NODE CHANGES... [--overwrite]` (see taint_node in taint.hpp); returns
  /// what kubectl prints after node/NODE: "tainted", "untainted" or "modified".
  std::string taint(const std::string& node, const std::vector<TaintChange>& changes, bool overwrite = false);
  /// The same with kubectl's words ("gpu_node=invalid:NoSchedule", "gpu_node-"), parsed by
  /// parse_taint_changes (a ValidationError names "taint[i]").
  std::string taint(const std::string& node, const std::vector<std::string>& changes, bool overwrite = false);

  std::vector<PvcInfo> pvcs() const;
  void create_pvc(const PvcRequest& pvc);
  void delete_pvc(const std::string& name);
  std::vector<QuotaInfo> quotas() const;
  /// Kueue's LocalQueues of the namespace and the ClusterQueues with nominal and used quota per
  /// flavor (GPUs first). gpupool::Error when the cluster serves no Kueue.
  QueuesReport queues() const;

  /// The objects submit() would create: the workload rendered with the profile, in this
  /// namespace, with the server's MPIJob version when the workload is an MPIJob whose mpi_api is
  /// Auto and `use_server_mpi_api` is set (an explicit V1 / V2Beta1 is kept).
  Submission render(Workload workload, bool use_server_mpi_api = true) const;
  /// Creates every object of the submission; when one fails, deletes what it created and rethrows.
  /// dry_run: the server validates everything (dryRun=All) and nothing is stored.
  SubmitResult submit(const Workload& workload, bool dry_run = false);
  /// Checks existing manifests against the profile, without contacting the server: image
  /// shorthand resolved through the catalog (a warning for a name that looks like a mistyped
  /// catalog image), the GPU resource name (ValidationError naming the field and the profile's
  /// resource), an object's namespace against the connection's. Returns the objects to send.
  std::vector<boost::json::object> prepare_manifests(std::vector<boost::json::object> objects) const;
  /// `kubectl apply --server-side` of existing manifests (field manager "gpupool"), after
  /// prepare_manifests() and the quota pre-flight; each object is reported created, configured or
  /// unchanged. When one fails, the objects this call created are deleted again and the error
  /// rethrown. dry_run: the server validates everything and stores nothing.
  ApplyResult apply(std::vector<boost::json::object> objects, bool dry_run = false, bool force_conflicts = false);
  JobInfo get(const std::string& name) const;
  std::vector<JobInfo> list() const;
  /// The jobs of every namespace the user may read (`arena list --allNamespaces`): one
  /// cluster-wide list per kind when allowed; else, per namespace it may see (all namespaces when it
  /// may list them, else the connection's), a SelfSubjectRulesReview says which kinds it may list
  /// there, and those are listed. Sorted by namespace, then name.
  std::vector<JobInfo> list_all_namespaces() const;
  /// `arena top job`: the jobs of list(), each with the GPUs it requests and holds
  /// (JobInfo::gpus_requested / gpus_allocated); top_jobs_to_text() prints them.
  std::vector<JobInfo> top_jobs() const;
  /// Deletes the job and everything gpupool created with it (TensorBoard, ConfigMaps, not PVCs), cascading.
  /// Returns what was deleted as kubectl names it, e.g. "deployment.apps/loopd".
  std::string delete_job(const std::string& name);
  /// Streams the pod's log lines to on_line until the log ends (or, with follow, until on_line
  /// returns false, the pod finishes or `cancel` fires: then it returns within ~50 ms).
  void logs(const std::string& name, const JobLogOptions& options,
            const std::function<bool(const std::string& line)>& on_line, const CancelToken& cancel = {}) const;
  /// Watches the job until the condition holds (returns its info), it can no longer hold
  /// (Failed while waiting for Succeeded/Running: ApiError-free gpupool::Error saying so), the
  /// timeout passes (gpupool::Error "timed out"), or `cancel` fires (gpupool::Error "cancelled",
  /// within ~50 ms unless a request is in flight). on_change sees every new state. Watches that
  /// break (disconnects, a server restart) resume where they stopped.
  JobInfo wait(const std::string& name, WaitFor until, std::chrono::milliseconds timeout,
               const std::function<void(const JobInfo&)>& on_change = {}, const CancelToken& cancel = {}) const;
  /// Runs a command in one of the job's pods (pods/exec, as `kubectl exec`): waits for it and
  /// returns its exit code and output. -i INSTANCE must be one of the job's pods; a completed pod
  /// is refused as kubectl refuses it. `cancel` ends the call.
  ExecResult exec(const std::string& name, const std::vector<std::string>& command, const JobExecOptions& options = {},
                  const CancelToken& cancel = {}) const;
  /// Forwards local ports (on 127.0.0.1; local 0 picks a free port, reported by ports()) to one
  /// of the job's running pods (`instance`, or the first running one), as `kubectl port-forward`.
  std::unique_ptr<PortForward> port_forward(const std::string& name, const std::vector<PortForward::Port>& ports,
                                            const std::string& instance = {},
                                            PortForwardErrorHandler on_error = {}) const;
  /// Forwards a local port (0: a free one) to the job's TensorBoard pod (--tensorboard); the URL
  /// is http://127.0.0.1:<ports()[0].local>. gpupool::Error saying why when its pod does not run.
  std::unique_ptr<PortForward> tensorboard(const std::string& name, int local_port = 0,
                                           PortForwardErrorHandler on_error = {}) const;
  /// Why the job's pods are pending (events + a local fit check of every node + quota).
  Explanation explain(const std::string& name) const;
  /// Where a workload not yet submitted would fit.
  Explanation explain(const Workload& workload) const;

 private:
  using Impl = detail::ClusterImpl;
  explicit Cluster(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace gpupool
