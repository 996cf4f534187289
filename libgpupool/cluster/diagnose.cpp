// Dead ends a job can sit in for ever while the API shows nothing wrong (issue #20 item 4): a
// scheduler the profile names that does not run, a Kubeflow kind no operator acts on, pods the API
// refused (FailedCreate on the controller), a TensorBoard that is not running. `get` and `explain`
// both call stuck_notes(); each note is one line saying what is wrong and what to do.
#include "cluster/diagnose.hpp"

#include "gpupool/error.hpp"
#include "gpupool/job_backoff.hpp"
#include "gpupool/render.hpp"
#include "gpupool/rollout.hpp"
#include "gpupool/time.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gpupool::detail {

namespace json = boost::json;

namespace {

/// Whether any scheduler has looked at the pod: kube-scheduler (and any scheduler built on its
/// framework) sets the PodScheduled condition when it binds the pod or finds it unschedulable
/// (pkg/scheduler/schedule_one.go handleSchedulingFailure / bind).
bool seen_by_a_scheduler(const json::object& pod) {
  if (!str_at(pod, {"spec", "nodeName"}).empty()) return true;
  if (const auto* conds = arr_at(pod, {"status", "conditions"}))
    for (const auto& c : *conds)
      if (c.is_object() && str_at(c.as_object(), {"type"}) == "PodScheduled") return true;
  return false;
}

/// Whether some pod with this schedulerName is on a node: the scheduler ran at least once. Reads
/// every namespace when allowed, else the user's own.
bool scheduler_ever_bound(const detail::ClusterImpl& impl, const std::string& scheduler) {
  ListOptions lo;
  lo.field_selector = fmt::format("spec.schedulerName={},spec.nodeName!=", scheduler);
  lo.limit = 1;
  try {
    lo.all_namespaces = true;
    return !impl.client->list(kPods, "", lo).items.empty();
  } catch (const ApiError& e) {
    if (e.code() != 403) throw;
  }
  lo.all_namespaces = false;
  return !impl.client->list(kPods, impl.ns, lo).items.empty();
}

std::string operator_for(WorkloadKind kind) {
  return kind == WorkloadKind::MPIJob     ? "the MPI Operator (kubeflow/mpi-operator)"
         : kind == WorkloadKind::TrainJob ? "Kubeflow Trainer (kubeflow/trainer) and JobSet (kubernetes-sigs/jobset)"
         : kind == WorkloadKind::JobSet   ? "the JobSet controller (kubernetes-sigs/jobset)"
                                          : "the Kubeflow Training Operator (kubeflow/training-operator)";
}

bool has_conditions(const json::object& job) {
  const auto* conds = arr_at(job, {"status", "conditions"});
  return conds && !conds->empty();
}

// The PodScheduled=False message of a pod the scheduler could not place ("" when none).
std::string unschedulable_message(const json::object& pod) {
  const json::object* c = status_condition(pod, "PodScheduled");
  return c && str_at(*c, {"status"}) == "False" && str_at(*c, {"reason"}) == "Unschedulable" ? str_at(*c, {"message"})
                                                                                             : std::string();
}

// A Deployment's rollout that cannot go on (pkg/controller/deployment): past its progress deadline
// (the Progressing condition kubectl rollout status reads), or, with a RollingUpdate that lets no
// old pod go before a new one is available (maxUnavailable 0), a new pod that no node takes or the
// API refuses (a quota): the old pods hold the GPUs or the quota it needs, and wait for it.
void rollout_notes(const StuckInput& in, std::vector<std::string>& notes) {
  const std::string name = str_at(in.job, {"metadata", "name"});
  if (const json::object* c = status_condition(in.job, "Progressing");
      c && str_at(*c, {"reason"}) == "ProgressDeadlineExceeded")
    notes.push_back(fmt::format("the rollout of deployment {} exceeded its progress deadline ({}s): {}", name,
                                int_at(in.job, {"spec", "progressDeadlineSeconds"}).value_or(600),
                                str_at(*c, {"message"})));
  const auto replicas = int_at(in.job, {"spec", "replicas"}).value_or(1);
  const auto updated = int_at(in.job, {"status", "updatedReplicas"}).value_or(0);
  const auto current = int_at(in.job, {"status", "replicas"}).value_or(0);
  const RolloutBounds bounds = rollout_bounds(in.job);
  if (!rolling_update(in.job) || bounds.max_unavailable > 0 || current <= updated || updated >= replicas) return;
  std::string waiting, why;
  for (const auto& v : in.pods) {
    why = unschedulable_message(v.as_object());
    while (!why.empty() && (why.back() == '.' || why.back() == ' ')) why.pop_back();
    if (!why.empty()) {
      waiting = fmt::format("its new pod {} cannot be placed: {}", str_at(v.as_object(), {"metadata", "name"}), why);
      break;
    }
  }
  if (waiting.empty() && in.events)
    for (const auto& e : *in.events) {
      const auto& o = e.as_object();
      if (str_at(o, {"reason"}) == "FailedCreate" && str_at(o, {"involvedObject", "kind"}) == "ReplicaSet" &&
          str_at(o, {"involvedObject", "name"}).rfind(name + "-", 0) == 0) {
        waiting = "its new pods cannot be created (the refusal is below)";
        break;
      }
    }
  if (waiting.empty()) return;
  notes.push_back(fmt::format(
      "deployment {} is rolling out ({} of {} pods updated) and {}. Its RollingUpdate (maxSurge {}, maxUnavailable 0) "
      "stops no old pod before a new one is available, and the old pods hold what the new one needs: let one old "
      "pod go first with kubectl patch deployment {} --type=merge -p "
      "'{{\"spec\":{{\"strategy\":{{\"rollingUpdate\":{{\"maxSurge\":0,\"maxUnavailable\":1}}}}}}}}', or use "
      "strategy Recreate",
      name, updated, replicas, waiting, bounds.max_surge, name));
}

// A batch/v1 Job between a failed pod and its replacement (pkg/controller/job's pod failure
// back-off, gpupool/job_backoff.hpp): nothing runs, and the reason is only a wait.
void retry_note(const StuckInput& in, std::vector<std::string>& notes) {
  for (const char* done : {"Complete", "Failed", "Suspended"})
    if (condition_true(in.job, done)) return;
  if (int_at(in.job, {"status", "active"}).value_or(0) > 0) return;
  std::vector<const json::object*> pods;
  for (const auto& p : in.pods)
    if (p.is_object()) pods.push_back(&p.as_object());
  const JobBackoff b = job_failure_backoff(pods, in.now);
  if (b.failures == 0 || b.remaining <= std::chrono::nanoseconds(0)) return;
  const auto failed = int_at(in.job, {"status", "failed"}).value_or(b.failures);
  notes.push_back(fmt::format(
      "job {} is waiting to retry: {} of its pods failed (backoffLimit {}); the Job controller makes the next one in "
      "{} (a back-off of {} after a failure, doubled for each further one, up to {})",
      str_at(in.job, {"metadata", "name"}), failed, int_at(in.job, {"spec", "backoffLimit"}).value_or(6),
      human_duration(std::chrono::duration_cast<std::chrono::seconds>(b.remaining) + std::chrono::seconds(1)),
      human_duration(kJobPodFailureBackOff), human_duration(kMaxJobPodFailureBackOff)));
}

}  // namespace

std::vector<std::string> stuck_notes(const detail::ClusterImpl& impl, const StuckInput& in) {
  std::vector<std::string> notes;
  const std::string name = str_at(in.job, {"metadata", "name"});
  auto age_of = [&](const json::object& o) -> std::chrono::seconds {
    auto created = time_at(o, {"metadata", "creationTimestamp"});
    if (!created || in.now < *created) return std::chrono::seconds(0);
    return std::chrono::duration_cast<std::chrono::seconds>(in.now - *created);
  };

  // A Kubeflow kind the API serves but no operator runs: the object never gets a status and no
  // pod appears. Operators set a Created condition within a second of the create.
  if ((in.kind == WorkloadKind::MPIJob || in.kind == WorkloadKind::TFJob || in.kind == WorkloadKind::PyTorchJob ||
       in.kind == WorkloadKind::TrainJob || in.kind == WorkloadKind::JobSet) &&
      in.pods.empty() && !has_conditions(in.job) && age_of(in.job) >= kOperatorGrace)
    notes.push_back(fmt::format(
        "no operator has acted on {} in {} (no status, no pods): the cluster serves the {} API but nothing runs "
        "it; install {} or ask the cluster's admin",
        kubectl_name(std::string(to_string(in.kind)), in.group, name), human_duration(age_of(in.job)),
        to_string(in.kind), operator_for(in.kind)));

  // A scheduler that does not run: the pod waits unbound, no scheduler has looked at it, and no
  // pod with that schedulerName is on any node the user can see.
  std::vector<std::string> checked;
  for (const auto& v : in.pods) {
    const auto& pod = v.as_object();
    if (seen_by_a_scheduler(pod) || age_of(pod) < kSchedulerGrace) continue;
    std::string scheduler = str_at(pod, {"spec", "schedulerName"});
    if (scheduler.empty()) scheduler = "default-scheduler";
    if (std::find(checked.begin(), checked.end(), scheduler) != checked.end()) continue;
    checked.push_back(scheduler);
    if (scheduler_ever_bound(impl, scheduler)) continue;
    const bool from_profile = scheduler == impl.profile.gpu.scheduler_name;
    notes.push_back(fmt::format(
        "no scheduler named \"{}\" seems to run in this cluster: pod {} has waited {} without any scheduler looking at "
        "it, and no pod with schedulerName \"{}\" is on a node{}",
        scheduler, str_at(pod, {"metadata", "name"}), human_duration(age_of(pod)), scheduler,
        from_profile ? fmt::format("; the profile \"{}\" asks for it: submit with --profile default, or ask the "
                                   "cluster's admin to run it",
                                   impl.profile.name)
                     : "; ask the cluster's admin to run it, or set another schedulerName"));
  }

  if (in.kind == WorkloadKind::Deployment) rollout_notes(in, notes);
  if (in.kind == WorkloadKind::Job) retry_note(in, notes);

  // Pods the API refused: the controller records FailedCreate with the admission plugin's words
  // (quota, LimitRange, PriorityClass, PodSecurity, a webhook, ...), each shown once.
  if (in.events) {
    std::vector<std::string> seen;
    for (const auto& e : *in.events) {
      const auto& o = e.as_object();
      if (str_at(o, {"reason"}) != "FailedCreate") continue;
      const std::string object = str_at(o, {"involvedObject", "name"});
      if (object.rfind(name, 0) != 0) continue;
      std::string msg = str_at(o, {"message"});
      if (std::find(seen.begin(), seen.end(), msg) != seen.end()) continue;
      seen.push_back(msg);
      notes.push_back(
          fmt::format("{} {} could not create pods: {}", lower(str_at(o, {"involvedObject", "kind"})), object, msg));
    }
  }
  return notes;
}

bool rollout_unfinished(const json::object& d) {
  if (const json::object* c = status_condition(d, "Progressing");
      c && str_at(*c, {"reason"}) == "ProgressDeadlineExceeded")
    return true;
  return int_at(d, {"status", "replicas"}).value_or(0) > int_at(d, {"status", "updatedReplicas"}).value_or(0);
}

std::string tensorboard_note(const json::object& pod) {
  const std::string pod_name = str_at(pod, {"metadata", "name"});
  std::string phase = str_at(pod, {"status", "phase"});
  if (phase.empty()) phase = "Pending";
  std::string why;
  if (const auto* conds = arr_at(pod, {"status", "conditions"}))
    for (const auto& c : *conds)
      if (c.is_object() && str_at(c.as_object(), {"type"}) == "PodScheduled" &&
          str_at(c.as_object(), {"status"}) == "False")
        why = str_at(c.as_object(), {"message"});
  if (why.empty() && str_at(pod, {"spec", "nodeName"}).empty()) why = "not scheduled yet";
  return fmt::format("TensorBoard is not running yet: pod {} is {}{}", pod_name, phase, why.empty() ? "" : ": " + why);
}

}  // namespace gpupool::detail
