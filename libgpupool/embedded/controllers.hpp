// embedded/controllers.hpp — the controllers of the embedded cluster: Deployment -> ReplicaSet ->
// Pods, batch/v1 Job -> Pods, and the Kubeflow operators (MPIJob, TFJob, PyTorchJob) -> Pods and
// Services.
//
// Each controller is split in two: a pure "plan" function of the owner object and the objects it
// owns (what to create, what to delete, the owner's new status), testable without a store, in a
// file of its own (controller_deployment.cpp, controller_replicaset.cpp, controller_job.cpp,
// controller_kubeflow.cpp; their shared helpers in controllers_util.hpp, namespace ctrl), and
// the Controllers class (controllers.cpp) that feeds the plans from the store's events and applies
// them through the same Store calls the HTTP layer uses.
//
// Names and labels follow the real controllers:
//  - ReplicaSet `<deployment>-<pod-template-hash>`, its pods `<replicaset>-<5 random chars>`;
//    pod-template-hash is FNV-32a of the template, encoded like rand.SafeEncodeString (the input
//    differs from Kubernetes' Go-struct hash, so values differ; the form is the same).
//  - Job pods `<job>-<5 random chars>` labelled batch.kubernetes.io/job-name, controller-uid.
//  - training-operator v1 (kubeflow.org/v1 TFJob, PyTorchJob, MPIJob): pods and headless Services
//    `<job>-<replica type, lower case>-<index>` (TFJob ps/worker/chief/master/evaluator, PyTorchJob
//    master/worker); MPIJob v1 launcher is a pod named `<job>-launcher`, workers `<job>-worker-<i>`
//    (no Services). Labels training.kubeflow.org/{job-name, operator-name, replica-type,
//    replica-index, job-role}.
//  - mpi-operator v2beta1 (kubeflow.org/v2beta1 MPIJob): the launcher is a batch/v1 Job
//    `<job>-launcher` whose pod gets a generated suffix (`mpi-dist-launcher-jgms7` in Arena's
//    walkthrough, which ran the older mpi-operator with the same launcher-as-Job design), workers
//    are pods `<job>-worker-<i>` behind one headless Service `<job>`.
// Status conditions Created -> Running -> Succeeded | Failed with the operators' reasons
// (TFJobCreated, MPIJobRunning, PyTorchJobSucceeded, ...) and messages, replicaStatuses
// {active, succeeded, failed}, startTime, completionTime; cleanPodPolicy (None, Running, All) on
// completion. Every child carries an ownerReference with controller: true, so deleting the owner
// deletes them (the store's garbage collection).
// A Deployment rolls out as kube-controller-manager's does (RollingUpdate paced by maxSurge and
// maxUnavailable, Recreate, proportional scaling, pause, revisionHistoryLimit, progressDeadlineSeconds).
// A Job is tracked as job_controller.go tracks it (controller_job.cpp: the tracking finalizer,
// counts kept in its status, podFailurePolicy, successPolicy, backoffLimitPerIndex).
// Simplifications (documented, deliberate): the restartPolicy ExitCode of Kubeflow replicas
// treats every failure as permanent.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "embedded/clock.hpp"
#include "gpupool/job_backoff.hpp"

namespace gpupool::embedded {

class Store;
struct WatchEvent;
class KueueController;
namespace json = boost::json;

/// What a reconcile decided: objects to create, pods/objects to delete, and the owner's status.
struct Plan {
  struct Create {
    std::string group, resource;  ///< "" / "pods", "apps" / "replicasets", "batch" / "jobs", "" / "services"
    json::object object;
  };
  struct Remove {
    std::string group, resource, name;
    /// A finalizer taken off first (the Job controller's deleteJobPods: the tracking finalizer).
    std::string finalizer_first = {};
  };
  struct Unfinalize {
    std::string group, resource, name, finalizer;
  };
  std::vector<Create> create;
  std::vector<Remove> remove;
  std::vector<Create> update;  ///< whole-object updates of children (e.g. scaling a ReplicaSet)
  /// The owner's status written before `unfinalize` is carried out (the Job controller's first
  /// flush: the uncounted pods recorded before their finalizers go).
  std::optional<json::object> status_first;
  /// Finalizers to take off children (a child gone meanwhile counts as done), before `status`.
  std::vector<Unfinalize> unfinalize;
  std::optional<json::object> status;  ///< the owner's new status (nullopt: unchanged)
  json::object owner_annotations;      ///< annotations to set on the owner (after its status)
  struct Event {
    std::string type, reason, message;
  };
  std::vector<Event> events;  ///< to record on the owner once the plan is carried out
  /// Sync the owner again after this long on the cluster's clock (0: at once), as a controller's
  /// AddAfter or error requeue does: a deadline to check, a pod to become available.
  std::optional<Clock::duration> requeue_after;
};

/// The objects an owner controls, as the store holds them (shared, immutable: no copies).
using Children = std::vector<std::shared_ptr<const json::object>>;

/// pod-template-hash of a pod template (see above).
std::string pod_template_hash(const json::object& pod_template);
/// rand.SafeEncodeString's alphabet mapping (k8s.io/apimachinery/pkg/util/rand).
std::string safe_encode_string(std::string_view s);

/// The pods a ReplicaSet controls (what the Recreate strategy waits on).
using PodsOf = std::function<Children(const json::object& replicaset)>;
/// Deployment: the ReplicaSets to create, scale and delete, and the Deployment's status.
Plan plan_deployment(const json::object& deployment, const Children& replicasets, const PodsOf& pods_of,
                     Clock::time_point now);
/// ReplicaSet: pods to create/delete and the ReplicaSet's status.
Plan plan_replicaset(const json::object& replicaset, const Children& pods, Clock::time_point now);
/// batch/v1 Job (controller_job.cpp): pods to create and delete, the tracking finalizers to take
/// off, the Job's status. `backoff`: the controller's memory of the Job's failures, updated.
Plan plan_job(const json::object& job, const Children& pods, Clock::time_point now, JobBackoffRecord& backoff);
/// The Job controller's tracking finalizer (batch.JobTrackingFinalizer).
inline constexpr std::string_view kJobTrackingFinalizer = "batch.kubernetes.io/job-tracking";
/// TFJob, PyTorchJob, MPIJob (v1 or v2beta1, from apiVersion): pods, services, the v2beta1
/// launcher Job, and the job's status. `children` holds every pod, service and Job it owns.
Plan plan_kubeflow_job(const json::object& job, const Children& children, Clock::time_point now);

/// batch/v1 CronJob (controller_cronjob.cpp): the Job its schedule has come to (its reference in
/// status.active without uid and resourceVersion: cronjob_job_reference fills them once the Job
/// is made), the finished Jobs past the history limits, the status and when to sync again. `jobs`:
/// the Jobs it controls.
Plan plan_cronjob(const json::object& cronjob, const Children& jobs, Clock::time_point now);
/// The ObjectReference to a Job a CronJob keeps in status.active (ref.GetReference).
json::object cronjob_job_reference(const json::object& job);

/// apps/v1 DaemonSet (controller_daemonset.cpp): its ControllerRevision, a pod for each node it
/// should run on (`nodes`: every Node) pinned there by node affinity, the rolling update, the
/// history past revisionHistoryLimit, and its status. `children`: the pods and ControllerRevisions
/// it controls.
Plan plan_daemonset(const json::object& daemonset, const Children& children,
                    const std::vector<const json::object*>& nodes, Clock::time_point now);

/// apps/v1 StatefulSet (controller_statefulset.cpp): its ControllerRevision, the pods <set>-<ordinal>
/// (OrderedReady one at a time, or Parallel) and their claims from volumeClaimTemplates (those
/// in `claims` exist already; their owners follow persistentVolumeClaimRetentionPolicy), scale-down from the highest
/// ordinal, the rolling update down to the partition, the history, and its status. `children`: the pods and
/// ControllerRevisions it controls. The namespace's PersistentVolumeClaims by name.
using Claims = std::map<std::string, std::shared_ptr<const json::object>>;
/// stateful_set_utils.go isMemberOf: the pod's name is "<set>-<digits>" (getParentName).
bool statefulset_member(std::string_view pod_name, std::string_view set);
Plan plan_statefulset(const json::object& statefulset, const Children& children, const Claims& claims,
                      Clock::time_point now);

/// JobSet (jobset.x-k8s.io/v1alpha2, controller_jobset.cpp): its Jobs and headless Service
/// (`children`: every Job and Service it owns) and its status.
Plan plan_jobset(const json::object& jobset, const Children& children, Clock::time_point now);
/// TrainJob (trainer.kubeflow.org/v1alpha1, controller_trainjob.cpp): the JobSet built from
/// `runtime` (the (Cluster)TrainingRuntime it names; nullptr when there is none) and its status.
/// `jobsets`: the JobSet it owns (at most one).
Plan plan_trainjob(const json::object& trainjob, const json::object* runtime, const Children& jobsets,
                   Clock::time_point now);
/// The runtime a TrainJob's runtimeRef names: a ClusterTrainingRuntime, or a TrainingRuntime of its
/// namespace (trainjob.RuntimeRefIsClusterTrainingRuntime); null when there is none.
std::shared_ptr<const json::object> trainjob_runtime(const Store& store, const json::object& trainjob);

/// Whether the Job controller would take the tracking finalizer off `pod` as an orphan's
/// (job_controller.go addPod / updatePod / deletePod enqueueOrphanPod): it has the finalizer and no
/// controller, or — once it is being deleted — a controller Job that is gone or finished.
bool job_orphan_candidate(const Store& store, const json::object& pod);
/// handleSingleOrphanPod: the finalizer taken off the pod unless a batch/v1 Job still controls it
/// (one not finished, or one another controller manages), or another kind of owner does.
void release_job_orphan(Store& store, const std::string& ns, const std::string& name);

/// The pod garbage collector (controller_podgc.cpp, gc_controller.go): the pods bound to `node`, when
/// it does not exist, marked Failed with the DisruptionTarget condition (DeletionByPodGC) and deleted
/// at once (gcOrphaned, once the node has been missing 40 s: the caller's timing).
void podgc_orphaned(Store& store, const std::string& node, Clock::time_point now);
/// gcUnscheduledTerminating: the pod, when it is being deleted and not bound to a node, marked
/// Failed and deleted at once.
void podgc_unscheduled_terminating(Store& store, const std::string& ns, const std::string& name, Clock::time_point now);
/// gcTerminated: past `threshold` terminated pods (phase neither Pending, Running nor Unknown), the
/// ones over it are deleted at once, evicted ones first, then the oldest (creationTimestamp, name).
void podgc_terminated(Store& store, std::int64_t threshold, Clock::time_point now);

/// The TTL-after-finished controller (controller_ttlafterfinished.cpp, ttlafterfinished_controller.go):
/// whether a Job is one it looks at (not being deleted, spec.ttlSecondsAfterFinished set, a
/// Complete or Failed condition True: addJob / updateJob, needsCleanup).
bool ttl_job_needs_cleanup(const json::object& job);
/// processJob: the Job deleted (Foreground, its uid as precondition) once its TTL has passed since
/// the finishing condition's lastTransitionTime; else the time left (nullopt: nothing to do).
std::optional<Clock::duration> ttl_after_finished(Store& store, const std::string& ns, const std::string& name,
                                                  Clock::time_point now);

/// Runs the plans against a store, reacting to its events (synchronously, inside the store's
/// subscriber callbacks, so a write returns with the controllers' reactions already applied).
class Controllers {
 public:
  /// `kubeflow`: whether the Kubeflow operators (MPIJob, TFJob, PyTorchJob) act; off, their jobs
  /// are stored and nothing happens, as on a cluster with the CRDs but no operator.
  /// `terminated_pod_gc_threshold`: kube-controller-manager's --terminated-pod-gc-threshold (the
  /// pod GC deletes the oldest terminated pods past that many; 0: never).
  Controllers(Store& store, const Clock& clock, bool kubeflow = true,
              std::int64_t terminated_pod_gc_threshold = kTerminatedPodGcThreshold);
  static constexpr std::int64_t kTerminatedPodGcThreshold = 12500;  ///< the flag's default
  ~Controllers();
  Controllers(const Controllers&) = delete;
  Controllers& operator=(const Controllers&) = delete;

  /// Reconciles every owner (use after a restart, or to re-check everything).
  void resync();
  /// Runs the syncs deferred by the per-second limit once the clock is in a later second (the
  /// server calls it as time passes).
  void sync();

 private:
  struct Key {
    std::string group, resource, ns, name;
    auto operator<=>(const Key&) const = default;
  };
  void on_event(const WatchEvent& e);
  /// Pod GC (podgc_*): a node missing or an unscheduled pod being deleted is looked at by the pod
  /// garbage collector's loop, which runs every 20 s of the cluster's clock (gcCheckPeriod); a
  /// missing node's pods go at the run 40 s (quarantineTime) after the first run that saw them;
  /// more terminated pods than the threshold are deleted at the next run.
  void gc_pods_later(const WatchEvent& e);
  void gc_pod_later(const json::object& pod, bool node_missing);
  void gc_terminated_later();
  void drain();
  void reconcile(const Key& key);
  Children owned(const std::string& ns, const std::string& uid,
                 const std::vector<std::pair<std::string, std::string>>& types) const;

  Store& store_;
  const Clock& clock_;
  const bool kubeflow_;
  const std::int64_t terminated_threshold_;
  std::int64_t terminated_ = 0;  // terminated pods in the store (under mu_): gcTerminated runs past the threshold
  std::uint64_t subscription_ = 0;
  std::mutex mu_;
  std::deque<Key> queue_;
  std::set<Key> queued_;
  bool draining_ = false;
  std::int64_t sync_second_ = 0;  // the clock's second syncs_ counts in
  struct SyncCount {
    int all = 0, bursts = 0;  // syncs, and those that created or deleted kBurstReplicas objects
  };
  std::map<Key, SyncCount> syncs_;           // syncs per owner in that second
  std::size_t last_writes_ = 0;              // creates and deletes of the sync running (the drainer's)
  std::set<Key> deferred_;                   // owners over the limit in that second, synced in the next
  std::map<Key, Clock::time_point> timers_;  // owners to sync again at a time (Plan::requeue_after)
  // The statuses reconciles wrote whose MODIFIED events are not delivered yet: such an event does
  // not queue the owner again (a reconcile of an owner whose only change is the status it was just
  // given plans nothing; a change to its children or spec comes with its own event). Not for
  // Deployments: their controller reads the status it wrote (controllers.cpp on_event).
  std::map<Key, std::vector<std::shared_ptr<const json::object>>> own_status_;
  // Owners whose last pod create admission refused, by namespace: retried when what admission
  // decides on may have changed (a quota's limits raised or usage released, a LimitRange or a
  // PriorityClass written) — the real controllers retry with backoff until the create succeeds.
  std::map<std::string, std::set<Key>> refused_;
  std::unique_ptr<KueueController> kueue_;  // the embedded Kueue (controller_kueue.hpp)
  // The Job controller's backoff records (backoff_utils.go backoffStore), by Job and its uid.
  std::map<Key, std::pair<std::string, JobBackoffRecord>> job_backoff_;
};

}  // namespace gpupool::embedded
