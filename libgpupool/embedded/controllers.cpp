#include "embedded/controllers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cctype>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"
#include "gpupool/quantity.hpp"

namespace gpupool::embedded {
namespace {

using util::ensure_object;
using util::int_of;
using util::name_of;
using util::namespace_of;
using util::object_at;
using util::string_of;
using util::uid_of;

std::string phase_of(const json::object& pod) { return string_of(object_at(pod, {"status"}), "phase"); }
bool terminal(const json::object& pod) {
  const std::string p = phase_of(pod);
  return p == "Succeeded" || p == "Failed";
}
bool pod_ready(const json::object& pod) {
  const json::object* c = util::find_condition(util::array_at(pod, {"status"}, "conditions"), "Ready");
  return c && string_of(c, "status") == "True";
}
std::string labels_key(const json::object& o, std::string_view key) {
  return string_of(object_at(o, {"metadata", "labels"}), key);
}

json::object condition(std::string_view type, bool status, std::string_view reason, std::string_view message,
                       Clock::time_point now, bool with_update_time = false) {
  json::object c{{"type", type},
                 {"status", status ? "True" : "False"},
                 {"reason", reason},
                 {"message", message},
                 {"lastTransitionTime", to_rfc3339(now)}};
  if (with_update_time) c["lastUpdateTime"] = to_rfc3339(now);
  return c;
}

// A pod from a template: labels/annotations/spec of the template, ownerReference to `owner`.
json::object pod_from_template(const json::object& tmpl, const json::object& owner, const std::string& name,
                               const std::string& generate_name, const std::map<std::string, std::string>& extra_labels) {
  json::object md;
  if (const json::object* tmd = object_at(tmpl, {"metadata"})) {
    for (const char* k : {"labels", "annotations"})
      if (const json::value* v = tmd->if_contains(k)) md[k] = *v;
  }
  auto& labels = ensure_object(md, "labels");
  for (const auto& [k, v] : extra_labels) labels[k] = v;
  if (!name.empty()) md["name"] = name;
  else md["generateName"] = generate_name;
  md["namespace"] = namespace_of(owner);
  md["ownerReferences"] = json::array{util::controller_reference(owner)};
  json::object pod{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", std::move(md)}};
  if (const json::object* spec = object_at(tmpl, {"spec"})) pod["spec"] = *spec;
  else pod["spec"] = json::object{};
  return pod;
}

std::uint32_t fnv32a(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

// A count from an object's spec, never negative: validation refuses negative counts, but an
// object that slipped past it (an old snapshot, a CRD) must not make a controller index before
// the start of its pod list.
std::int64_t count_of(const json::object* spec, std::string_view key, std::int64_t fallback) {
  return std::max<std::int64_t>(0, int_of(spec, key, fallback));
}

std::int64_t replicas_of(const json::object& o, std::int64_t fallback = 1) {
  return count_of(object_at(o, {"spec"}), "replicas", fallback);
}

// pkg/controller/replicaset: burstReplicas (500), and pkg/controller/job MaxPodCreateDeletePerSync
// (500): at most that many pods are created or deleted per sync; a huge count converges over
// several syncs instead of allocating millions of pods at once.
constexpr std::int64_t kBurstReplicas = 500;

}  // namespace

std::string safe_encode_string(std::string_view s) {
  // k8s.io/apimachinery/pkg/util/rand: alphanums without vowels and confusable characters.
  static constexpr std::string_view alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string out(s);
  for (auto& c : out) c = alphabet[static_cast<unsigned char>(c) % alphabet.size()];
  return out;
}

std::string pod_template_hash(const json::object& pod_template) {
  return safe_encode_string(std::to_string(fnv32a(json::serialize(pod_template))));
}

// ---- Deployment ------------------------------------------------------------------------------

// maxSurge of the RollingUpdate strategy resolved against the replicas, rounded up
// (deployment/util MaxSurge, intstr.GetScaledValueFromIntOrPercent); default 25%; Recreate: 0.
std::int64_t max_surge(const json::object& d, std::int64_t replicas) {
  if (string_of(object_at(d, {"spec", "strategy"}), "type") == "Recreate") return 0;
  const json::object* ru = object_at(d, {"spec", "strategy", "rollingUpdate"});
  const json::value* v = ru ? ru->if_contains("maxSurge") : nullptr;
  // Computed as Go does (float64, then math.Ceil) and kept within int32, the type of the
  // replica counts it is added to: a huge percentage must not overflow (fuzz_api finding).
  auto clamp = [](double x) -> std::int64_t {
    constexpr double kMax = std::numeric_limits<std::int32_t>::max();
    if (!(x > 0)) return 0;  // also NaN
    return x > kMax ? static_cast<std::int64_t>(kMax) : static_cast<std::int64_t>(x);
  };
  if (v && v->is_int64()) return clamp(static_cast<double>(v->as_int64()));
  const std::string text = v && v->is_string() ? std::string(v->as_string()) : std::string("25%");
  const double n = std::strtod(text.c_str(), nullptr);
  if (!text.empty() && text.back() == '%') return clamp(std::ceil(n * static_cast<double>(replicas) / 100.0));
  return clamp(n);
}

/// The controller that records events about a `resource` it owns (kube-controller-manager's names).
const char* controller_name(std::string_view resource) {
  return resource == "jobs" ? "job-controller" : resource == "deployments" ? "deployment-controller" : "replicaset-controller";
}

Plan plan_deployment(const json::object& d, const Children& replicasets, Clock::time_point now) {
  Plan plan;
  const json::object* spec = object_at(d, {"spec"});
  const json::object empty;
  const json::object& tmpl = spec && object_at(*spec, {"template"}) ? *object_at(*spec, {"template"}) : empty;
  const std::string hash = pod_template_hash(tmpl);
  const std::string rs_name = name_of(d) + "-" + hash;
  const std::int64_t want = replicas_of(d);
  const std::string max_replicas = std::to_string(want + max_surge(d, want));
  const json::object* current = nullptr;
  std::int64_t revision = 0;
  for (const auto& rs_ptr : replicasets) {
    const json::object& rs = *rs_ptr;
    const auto r = util::annotation(rs, "deployment.kubernetes.io/revision");
    if (r) revision = std::max<std::int64_t>(revision, std::atoll(r->c_str()));
    if (labels_key(rs, "pod-template-hash") == hash) current = &rs;
  }
  json::array conditions;
  if (const json::array* old = util::array_at(d, {"status"}, "conditions")) conditions = *old;
  if (!current) {
    json::object rs_tmpl = tmpl;
    ensure_object(ensure_object(rs_tmpl, "metadata"), "labels")["pod-template-hash"] = hash;
    json::object selector = spec && object_at(*spec, {"selector"}) ? *object_at(*spec, {"selector"}) : json::object{};
    ensure_object(selector, "matchLabels")["pod-template-hash"] = hash;
    json::object labels = object_at(tmpl, {"metadata", "labels"}) ? *object_at(tmpl, {"metadata", "labels"}) : json::object{};
    labels["pod-template-hash"] = hash;
    json::object rs{{"apiVersion", "apps/v1"},
                    {"kind", "ReplicaSet"},
                    {"metadata", json::object{{"name", rs_name},
                                              {"namespace", namespace_of(d)},
                                              {"labels", std::move(labels)},
                                              {"annotations", json::object{{"deployment.kubernetes.io/desired-replicas", std::to_string(want)},
                                                                           {"deployment.kubernetes.io/max-replicas", max_replicas},
                                                                           {"deployment.kubernetes.io/revision", std::to_string(revision + 1)}}},
                                              {"ownerReferences", json::array{util::controller_reference(d)}}}},
                    {"spec", json::object{{"replicas", want}, {"selector", std::move(selector)}, {"template", std::move(rs_tmpl)}}}};
    plan.create.push_back({"apps", "replicasets", std::move(rs)});
    // pkg/controller/deployment/sync.go: reason NewReplicaSetCreated.
    util::set_condition(conditions, condition("Progressing", true, "NewReplicaSetCreated",
                                              fmt::format("Created new replica set \"{}\"", rs_name), now, true));
  }
  // sync.go getNewReplicaSet / SetDeploymentRevision: the Deployment carries its newest
  // ReplicaSet's revision in the annotation deployment.kubernetes.io/revision.
  {
    const auto cur_rev = current ? util::annotation(*current, "deployment.kubernetes.io/revision") : std::nullopt;
    const std::string rev = cur_rev ? *cur_rev : std::to_string(revision + 1);
    if (util::annotation(d, "deployment.kubernetes.io/revision") != rev)
      plan.owner_annotations["deployment.kubernetes.io/revision"] = rev;
  }
  // Scale: the current ReplicaSet to spec.replicas, every older one to 0.
  for (const auto& rs_ptr : replicasets) {
    const json::object& rs = *rs_ptr;
    const std::int64_t target = &rs == current ? want : 0;
    if (replicas_of(rs, 0) != target) {
      json::object scaled = rs;
      ensure_object(scaled, "spec")["replicas"] = target;
      auto& ann = ensure_object(ensure_object(scaled, "metadata"), "annotations");
      ann["deployment.kubernetes.io/desired-replicas"] = std::to_string(want);
      ann["deployment.kubernetes.io/max-replicas"] = max_replicas;
      plan.update.push_back({"apps", "replicasets", std::move(scaled)});
    }
  }
  std::int64_t replicas = 0, ready = 0, available = 0, updated = 0;
  for (const auto& rs_ptr : replicasets) {
    const json::object& rs = *rs_ptr;
    const json::object* st = object_at(rs, {"status"});
    replicas += int_of(st, "replicas", 0);
    ready += int_of(st, "readyReplicas", 0);
    available += int_of(st, "availableReplicas", 0);
    if (&rs == current) updated = int_of(st, "replicas", 0);
  }
  json::object status = object_at(d, {"status"}) ? *object_at(d, {"status"}) : json::object{};
  status["observedGeneration"] = int_of(object_at(d, {"metadata"}), "generation", 1);
  status["replicas"] = replicas;
  status["updatedReplicas"] = updated;
  status["readyReplicas"] = ready;
  status["availableReplicas"] = available;
  if (replicas - available > 0) status["unavailableReplicas"] = replicas - available;
  else status.erase("unavailableReplicas");
  for (const char* k : {"readyReplicas", "availableReplicas", "updatedReplicas", "replicas"})
    if (status[k].as_int64() == 0) status.erase(k);  // omitempty, as the API serialises them
  // Available: maxUnavailable of the default RollingUpdate strategy is 25% (rounded down).
  const std::int64_t min_available = want - want / 4;
  util::set_condition(conditions,
                      available >= min_available
                          ? condition("Available", true, "MinimumReplicasAvailable", "Deployment has minimum availability.", now, true)
                          : condition("Available", false, "MinimumReplicasUnavailable",
                                      "Deployment does not have minimum availability.", now, true));
  if (current) {
    const bool complete = updated == want && available >= want && replicas == want;
    util::set_condition(conditions,
                        complete ? condition("Progressing", true, "NewReplicaSetAvailable",
                                             fmt::format("ReplicaSet \"{}\" has successfully progressed.", rs_name), now, true)
                                 : condition("Progressing", true, "ReplicaSetUpdated",
                                             fmt::format("ReplicaSet \"{}\" is progressing.", rs_name), now, true));
  }
  // The Deployment controller lists Available before Progressing.
  std::stable_sort(conditions.begin(), conditions.end(), [](const json::value& a, const json::value& b) {
    return string_of(&a.as_object(), "type") == "Available" && string_of(&b.as_object(), "type") != "Available";
  });
  // progress.go syncRolloutStatus / getReplicaFailures: the new ReplicaSet's ReplicaFailure
  // condition (else an old one's) becomes the Deployment's (ReplicaSetToDeploymentCondition:
  // lastUpdateTime = lastTransitionTime); none left removes it.
  const json::object* failure =
      current ? util::find_condition(util::array_at(*current, {"status"}, "conditions"), "ReplicaFailure") : nullptr;
  for (const auto& rs_ptr : replicasets)
    if (!failure) failure = util::find_condition(util::array_at(*rs_ptr, {"status"}, "conditions"), "ReplicaFailure");
  conditions.erase(std::remove_if(conditions.begin(), conditions.end(),
                                  [](const json::value& c) { return string_of(&c.as_object(), "type") == "ReplicaFailure"; }),
                   conditions.end());
  if (failure)
    conditions.push_back(json::object{{"type", "ReplicaFailure"},
                                      {"status", string_of(failure, "status")},
                                      {"lastUpdateTime", string_of(failure, "lastTransitionTime")},
                                      {"lastTransitionTime", string_of(failure, "lastTransitionTime")},
                                      {"reason", string_of(failure, "reason")},
                                      {"message", string_of(failure, "message")}});
  status["conditions"] = std::move(conditions);
  const json::object* old = object_at(d, {"status"});
  if (!old || !util::json_equal(*old, status)) plan.status = std::move(status);
  return plan;
}

// ---- ReplicaSet ------------------------------------------------------------------------------

Plan plan_replicaset(const json::object& rs, const Children& pods, Clock::time_point) {
  Plan plan;
  const std::int64_t want = replicas_of(rs);
  std::vector<const json::object*> active;
  for (const auto& p : pods)
    if (!terminal(*p)) active.push_back(p.get());
  const std::int64_t have = static_cast<std::int64_t>(active.size());
  const json::object empty;
  const json::object* tmpl = object_at(rs, {"spec", "template"});
  for (std::int64_t i = have; i < want && i - have < kBurstReplicas; ++i)
    plan.create.push_back({"", "pods", pod_from_template(tmpl ? *tmpl : empty, rs, "", name_of(rs) + "-", {})});
  if (have > want) {
    // pkg/controller/replicaset getPodsToDelete: unscheduled before scheduled, pending before
    // running, not ready before ready, then the newest first.
    std::stable_sort(active.begin(), active.end(), [](const json::object* a, const json::object* b) {
      auto rank = [](const json::object* p) {
        const bool bound = !string_of(object_at(*p, {"spec"}), "nodeName").empty();
        return std::make_tuple(bound, phase_of(*p) == "Running", pod_ready(*p));
      };
      if (rank(a) != rank(b)) return rank(a) < rank(b);
      return string_of(object_at(*a, {"metadata"}), "creationTimestamp") >
             string_of(object_at(*b, {"metadata"}), "creationTimestamp");
    });
    for (std::int64_t i = 0; i < std::min(have - want, kBurstReplicas); ++i) plan.remove.push_back({"", "pods", name_of(*active[static_cast<std::size_t>(i)])});
  }
  std::int64_t ready = 0;
  for (const auto* p : active) ready += pod_ready(*p) ? 1 : 0;
  json::object status{{"replicas", have}, {"fullyLabeledReplicas", have},
                      {"observedGeneration", int_of(object_at(rs, {"metadata"}), "generation", 1)}};
  if (ready) {
    status["readyReplicas"] = ready;
    status["availableReplicas"] = ready;  // minReadySeconds 0: ready pods are available
  }
  const json::object* old = object_at(rs, {"status"});
  // Conditions (ReplicaFailure) are the reconcile's to set or clear, from how the creates went.
  if (const json::value* c = old ? old->if_contains("conditions") : nullptr) status["conditions"] = *c;
  if (!old || !util::json_equal(*old, status)) plan.status = std::move(status);
  return plan;
}

// ---- Job -------------------------------------------------------------------------------------

Plan plan_job(const json::object& job, const Children& pods, Clock::time_point now) {
  Plan plan;
  const json::object* spec = object_at(job, {"spec"});
  const std::int64_t parallelism = count_of(spec, "parallelism", 1);
  const std::int64_t completions = count_of(spec, "completions", 1);
  const std::int64_t backoff_limit = int_of(spec, "backoffLimit", 6);
  std::int64_t active = 0, succeeded = 0, failed = 0, ready = 0;
  for (const auto& p_ptr : pods) {
    const json::object& p = *p_ptr;
    const std::string ph = phase_of(p);
    if (ph == "Succeeded") ++succeeded;
    else if (ph == "Failed") ++failed;
    else {
      ++active;
      if (pod_ready(p)) ++ready;
    }
  }
  json::object status = object_at(job, {"status"}) ? *object_at(job, {"status"}) : json::object{};
  json::array conditions;
  if (const json::array* c = util::array_at(job, {"status"}, "conditions")) conditions = *c;
  const bool finished = util::find_condition(&conditions, "Complete") || util::find_condition(&conditions, "Failed");
  if (!status.contains("startTime")) status["startTime"] = to_rfc3339(now);
  auto stop_active = [&] {
    for (const auto& p : pods)
      if (!terminal(*p)) plan.remove.push_back({"", "pods", name_of(*p)});
  };
  if (!finished) {
    // pkg/controller/job/job_controller.go (v1.31+): FailureTarget/SuccessCriteriaMet first, then
    // the terminal Failed/Complete condition, with the same reason and message.
    // A Job's conditions carry lastProbeTime as well (job_controller.go newCondition).
    auto job_condition = [&](std::string_view type, std::string_view reason, std::string_view msg) {
      json::object c = condition(type, true, reason, msg, now);
      c["lastProbeTime"] = to_rfc3339(now);
      return c;
    };
    if (failed > backoff_limit) {
      const char* msg = "Job has reached the specified backoff limit";
      util::set_condition(conditions, job_condition("FailureTarget", "BackoffLimitExceeded", msg));
      util::set_condition(conditions, job_condition("Failed", "BackoffLimitExceeded", msg));
      // job_controller.go: the failure's reason and message as a Warning event.
      plan.events.push_back({"Warning", "BackoffLimitExceeded", msg});
      stop_active();
      active = 0;
      ready = 0;
    } else if (succeeded >= completions) {
      const char* msg = "Reached expected number of succeeded pods";
      util::set_condition(conditions, job_condition("SuccessCriteriaMet", "CompletionsReached", msg));
      util::set_condition(conditions, job_condition("Complete", "CompletionsReached", msg));
      plan.events.push_back({"Normal", "Completed", "Job completed"});
      status["completionTime"] = to_rfc3339(now);
      stop_active();
      active = 0;
      ready = 0;
    } else {
      const std::int64_t want_active = std::min(parallelism, completions - succeeded);
      const std::string uid = uid_of(job);
      const json::object empty;
      const json::object* tmpl = object_at(job, {"spec", "template"});
      for (std::int64_t i = active; i < want_active && i - active < kBurstReplicas; ++i) {
        json::object pod = pod_from_template(tmpl ? *tmpl : empty, job, "", name_of(job) + "-",
                                             {{"batch.kubernetes.io/controller-uid", uid},
                                              {"batch.kubernetes.io/job-name", name_of(job)},
                                              {"controller-uid", uid},
                                              {"job-name", name_of(job)}});
        plan.create.push_back({"", "pods", std::move(pod)});
      }
      active = std::max(active, std::min(want_active, active + kBurstReplicas));
    }
  }
  auto set_count = [&](const char* k, std::int64_t v) {
    if (v) status[k] = v;
    else status.erase(k);
  };
  set_count("active", active);
  set_count("succeeded", succeeded);
  set_count("failed", failed);
  status["ready"] = ready;
  status["terminating"] = 0;
  status["uncountedTerminatedPods"] = json::object{};
  if (!conditions.empty()) status["conditions"] = std::move(conditions);
  const json::object* old = object_at(job, {"status"});
  if (!old || !util::json_equal(*old, status)) plan.status = std::move(status);
  return plan;
}

// ---- Kubeflow operators ----------------------------------------------------------------------

namespace {

struct Flavor {
  std::string kind;            // "TFJob"
  std::string specs_key;       // "tfReplicaSpecs"
  std::string operator_name;   // "tfjob-controller"
  int port = 0;                // default port of the Service per replica (0: no Services)
  std::string port_name;
  bool mpi_v2 = false;
};

Flavor flavor_of(const json::object& job) {
  const std::string kind = string_of(&job, "kind");
  const std::string api = string_of(&job, "apiVersion");
  if (kind == "TFJob") return {kind, "tfReplicaSpecs", "tfjob-controller", 2222, "tfjob-port"};
  if (kind == "PyTorchJob") return {kind, "pytorchReplicaSpecs", "pytorchjob-controller", 23456, "pytorchjob-port"};
  if (api == "kubeflow.org/v2beta1") return {kind, "mpiReplicaSpecs", "mpi-operator", 0, "", true};
  return {kind, "mpiReplicaSpecs", "mpijob-controller", 0, ""};
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Replica types in the order the operators iterate them.
std::vector<std::string> replica_types(const Flavor& f, const json::object* specs) {
  static const std::map<std::string, std::vector<std::string>> order{
      {"TFJob", {"Chief", "Evaluator", "Master", "PS", "Worker"}},
      {"PyTorchJob", {"Master", "Worker"}},
      {"MPIJob", {"Launcher", "Worker"}}};
  std::vector<std::string> out;
  if (!specs) return out;
  for (const auto& t : order.at(f.kind))
    if (specs->contains(t)) out.push_back(t);
  return out;
}

bool is_master_role(const Flavor& f, const json::object* specs, const std::string& rtype, std::int64_t index) {
  if (f.kind == "MPIJob") return rtype == "Launcher";
  if (f.kind == "PyTorchJob") return rtype == "Master";
  if (specs && (specs->contains("Chief") || specs->contains("Master"))) return rtype == "Chief" || rtype == "Master";
  return rtype == "Worker" && index == 0;
}

std::string clean_pod_policy(const json::object& job) {
  std::string p = string_of(object_at(job, {"spec", "runPolicy"}), "cleanPodPolicy");
  if (p.empty()) p = string_of(object_at(job, {"spec"}), "cleanPodPolicy");
  return p.empty() ? "None" : p;
}

}  // namespace

Plan plan_kubeflow_job(const json::object& job, const Children& children, Clock::time_point now) {
  Plan plan;
  const Flavor f = flavor_of(job);
  const std::string name = name_of(job), ns = namespace_of(job);
  const json::object* specs = object_at(job, {"spec", f.specs_key});
  const auto types = replica_types(f, specs);

  std::map<std::string, const json::object*> pods_by_name, services_by_name, jobs_by_name;
  for (const auto& c : children) {
    const std::string kind = string_of(c.get(), "kind");
    (kind == "Pod" ? pods_by_name : kind == "Service" ? services_by_name : jobs_by_name)[name_of(*c)] = c.get();
  }
  json::object status = object_at(job, {"status"}) ? *object_at(job, {"status"}) : json::object{};
  json::array conditions;
  if (const json::array* c = util::array_at(job, {"status"}, "conditions")) conditions = *c;
  const bool finished = [&] {
    for (const char* t : {"Succeeded", "Failed"})
      if (const auto* c = util::find_condition(&conditions, t); c && string_of(c, "status") == "True") return true;
    return false;
  }();
  // Created: training-operator's onOwnerCreateFunc ("TFJob %s is created."); mpi-operator and the
  // training-operator MPIJob controller say "MPIJob %s/%s is created.".
  if (!util::find_condition(&conditions, "Created"))
    util::set_condition(conditions,
                        condition("Created", true, f.kind + "Created",
                                  f.kind == "MPIJob" ? fmt::format("MPIJob {}/{} is created.", ns, name)
                                                     : fmt::format("{} {} is created.", f.kind, name),
                                  now));
  if (!status.contains("startTime")) status["startTime"] = to_rfc3339(now);

  // World size for PyTorch's env (sum of replicas).
  std::int64_t world = 0;
  // A replica spec holds `replicas` itself (not under spec, as a Deployment does).
  for (const auto& t : types) world += count_of(object_at(*specs, {t}), "replicas", 1);

  json::object replica_statuses;
  std::map<std::string, std::int64_t> active, succeeded, failed;
  std::vector<std::string> members;  // pod names (for cleanPodPolicy)
  for (const auto& rtype : types) {
    const json::object& rspec = *object_at(*specs, {rtype});
    const std::int64_t n = count_of(&rspec, "replicas", 1);
    const std::string rt = lower(rtype);
    const json::object empty;
    const json::object* tmpl = object_at(rspec, {"template"});
    std::string restart = string_of(&rspec, "restartPolicy");
    if (restart.empty() || restart == "ExitCode") restart = "Never";
    for (std::int64_t i = 0; i < n; ++i) {
      // The v2beta1 launcher is a batch/v1 Job; its pod belongs to that Job.
      if (f.mpi_v2 && rtype == "Launcher") {
        const std::string jname = name + "-launcher";
        auto it = jobs_by_name.find(jname);
        if (it == jobs_by_name.end()) {
          if (finished) continue;
          json::object pod_tmpl = tmpl ? *tmpl : empty;
          auto& labels = ensure_object(ensure_object(pod_tmpl, "metadata"), "labels");
          labels["training.kubeflow.org/job-name"] = name;
          labels["training.kubeflow.org/job-role"] = "launcher";
          labels["training.kubeflow.org/operator-name"] = f.operator_name;
          ensure_object(pod_tmpl, "spec")["restartPolicy"] = restart == "Always" ? "OnFailure" : restart;
          json::object ljob{{"apiVersion", "batch/v1"},
                            {"kind", "Job"},
                            {"metadata", json::object{{"name", jname},
                                                      {"namespace", ns},
                                                      {"labels", json::object{{"training.kubeflow.org/job-name", name},
                                                                              {"training.kubeflow.org/job-role", "launcher"},
                                                                              {"training.kubeflow.org/operator-name", f.operator_name}}},
                                                      {"ownerReferences", json::array{util::controller_reference(job)}}}},
                            {"spec", json::object{{"backoffLimit", 6}, {"template", std::move(pod_tmpl)}}}};
          plan.create.push_back({"batch", "jobs", std::move(ljob)});
          continue;
        }
        const json::object* js = object_at(*it->second, {"status"});
        const json::array* jc = util::array_at(*it->second, {"status"}, "conditions");
        if (util::find_condition(jc, "Complete")) ++succeeded[rtype];
        else if (util::find_condition(jc, "Failed")) ++failed[rtype];
        else if (int_of(js, "active", 0) > 0) active[rtype] += int_of(js, "ready", 0) > 0 ? 1 : 0;
        continue;
      }
      // training-operator v1 (pkg/controller.v1/mpi, MPIJobReconciler.newLauncher) creates the
      // launcher as a Pod named mpiJob.Name + "-launcher" itself; the seed's
      // "mpi-dist-launcher-jgms7" is the pod of a launcher *Job*, which is what the standalone
      // mpi-operator (v1alpha1/v1alpha2, and v2beta1's newLauncherJob above) creates. So v1 keeps
      // the bare name and v2beta1 gives the seed's form.
      const std::string pod_name = f.kind == "MPIJob" && rtype == "Launcher" ? name + "-launcher"
                                                                               : fmt::format("{}-{}-{}", name, rt, i);
      members.push_back(pod_name);
      std::map<std::string, std::string> labels;
      if (f.mpi_v2) {
        labels = {{"training.kubeflow.org/job-name", name},
                  {"training.kubeflow.org/job-role", rt},
                  {"training.kubeflow.org/operator-name", f.operator_name},
                  {"training.kubeflow.org/replica-index", std::to_string(i)}};
      } else {
        labels = {{"training.kubeflow.org/job-name", name},
                  {"training.kubeflow.org/operator-name", f.operator_name},
                  {"training.kubeflow.org/replica-type", rt},
                  {"training.kubeflow.org/replica-index", std::to_string(i)}};
        if (is_master_role(f, specs, rtype, i)) labels["training.kubeflow.org/job-role"] = "master";
      }
      auto it = pods_by_name.find(pod_name);
      if (it == pods_by_name.end()) {
        if (finished) continue;
        json::object pod = pod_from_template(tmpl ? *tmpl : empty, job, pod_name, "", labels);
        auto& pspec = ensure_object(pod, "spec");
        pspec["restartPolicy"] = restart;
        if (!f.mpi_v2 && f.port) pspec["hostname"] = pod_name;
        // Rendezvous environment the operators inject into every container.
        json::array env_add;
        if (f.kind == "PyTorchJob") {
          const std::int64_t rank = rtype == "Master" ? 0 : i + (specs->contains("Master") ? 1 : 0);
          env_add = {json::object{{"name", "MASTER_PORT"}, {"value", std::to_string(f.port)}},
                     json::object{{"name", "MASTER_ADDR"}, {"value", name + "-master-0"}},
                     json::object{{"name", "WORLD_SIZE"}, {"value", std::to_string(world)}},
                     json::object{{"name", "RANK"}, {"value", std::to_string(rank)}},
                     json::object{{"name", "PYTHONUNBUFFERED"}, {"value", "1"}}};
        } else if (f.kind == "TFJob") {
          json::object cluster;
          for (const auto& t : types) {
            json::array hosts;
            for (std::int64_t k = 0; k < int_of(object_at(*specs, {t}), "replicas", 1); ++k)
              hosts.push_back(json::string(fmt::format("{}-{}-{}.{}.svc:{}", name, lower(t), k, ns, f.port)));
            cluster[lower(t)] = std::move(hosts);
          }
          json::object tf{{"cluster", std::move(cluster)},
                          {"task", json::object{{"type", rt}, {"index", i}}},
                          {"environment", "cloud"}};
          env_add = {json::object{{"name", "TF_CONFIG"}, {"value", json::serialize(tf)}}};
        }
        if (json::value* cs = pspec.if_contains("containers"); cs && cs->is_array() && !env_add.empty())
          for (auto& c : cs->as_array()) {
            if (!c.is_object()) continue;
            json::value& env = c.as_object()["env"];
            if (!env.is_array()) env = json::array{};
            for (const auto& e : env_add) env.as_array().push_back(e);
          }
        plan.create.push_back({"", "pods", std::move(pod)});
        if (f.port && !services_by_name.count(pod_name)) {
          json::object sel;
          for (const auto& [k, v] : labels)
            if (k != "training.kubeflow.org/job-role") sel[k] = v;
          json::object svc_labels;
          for (const auto& [k, v] : labels) svc_labels[k] = v;
          plan.create.push_back(
              {"", "services",
               json::object{{"apiVersion", "v1"},
                            {"kind", "Service"},
                            {"metadata", json::object{{"name", pod_name},
                                                      {"namespace", ns},
                                                      {"labels", std::move(svc_labels)},
                                                      {"ownerReferences", json::array{util::controller_reference(job)}}}},
                            {"spec", json::object{{"clusterIP", "None"},
                                                  {"selector", std::move(sel)},
                                                  {"ports", json::array{json::object{{"name", f.port_name},
                                                                                     {"port", f.port},
                                                                                     {"protocol", "TCP"},
                                                                                     {"targetPort", f.port}}}}}}}});
        }
        continue;
      }
      const std::string ph = phase_of(*it->second);
      if (ph == "Succeeded") ++succeeded[rtype];
      else if (ph == "Failed") ++failed[rtype];
      else if (ph == "Running") ++active[rtype];
    }
    replica_statuses[rtype] = json::object{{"active", active[rtype]}, {"succeeded", succeeded[rtype]}, {"failed", failed[rtype]}};
    if (f.mpi_v2) {
      auto& rs = replica_statuses[rtype].as_object();
      for (const char* k : {"active", "succeeded", "failed"})
        if (rs[k].as_int64() == 0) rs.erase(k);
    }
  }
  // mpi-operator v2beta1: one headless Service named after the job, selecting the workers.
  if (f.mpi_v2 && !services_by_name.count(name) && !finished)
    plan.create.push_back(
        {"", "services",
         json::object{{"apiVersion", "v1"},
                      {"kind", "Service"},
                      {"metadata", json::object{{"name", name},
                                                {"namespace", ns},
                                                {"labels", json::object{{"training.kubeflow.org/job-name", name},
                                                                        {"training.kubeflow.org/operator-name", f.operator_name}}},
                                                {"ownerReferences", json::array{util::controller_reference(job)}}}},
                      {"spec", json::object{{"clusterIP", "None"},
                                            {"publishNotReadyAddresses", true},
                                            {"selector", json::object{{"training.kubeflow.org/job-name", name},
                                                                      {"training.kubeflow.org/job-role", "worker"}}}}}}});
  status["replicaStatuses"] = std::move(replica_statuses);

  if (!finished) {
    auto total = [&](const std::string& t) {
      return specs && specs->contains(t) ? count_of(object_at(*specs, {t}), "replicas", 1) : 0;
    };
    // Who decides success: the launcher (MPI), the master (PyTorch), the chief/master or worker 0
    // (TF's default success policy) — and any permanently failed replica fails the job.
    bool success = false, running = false;
    std::string failed_type;
    if (f.kind == "MPIJob") {
      success = succeeded["Launcher"] > 0;
      running = active["Launcher"] > 0 && active["Worker"] == total("Worker");
    } else if (f.kind == "PyTorchJob") {
      success = specs && specs->contains("Master") ? succeeded["Master"] == total("Master")
                                                   : succeeded["Worker"] == total("Worker") && total("Worker") > 0;
      running = active["Master"] > 0 || active["Worker"] > 0;
    } else {
      if (specs && (specs->contains("Chief") || specs->contains("Master"))) {
        const std::string lead = specs->contains("Chief") ? "Chief" : "Master";
        success = succeeded[lead] == total(lead);
        running = active[lead] > 0;
      } else {
        success = pods_by_name.count(name + "-worker-0") && phase_of(*pods_by_name[name + "-worker-0"]) == "Succeeded";
        running = active["Worker"] > 0;
      }
    }
    for (const auto& t : types)
      if (failed[t] > 0 && failed_type.empty()) failed_type = t;
    const std::string who = fmt::format("{}/{}", ns, name);
    auto finish = [&] {
      status["completionTime"] = to_rfc3339(now);
      if (json::object* rc = const_cast<json::object*>(util::find_condition(&conditions, "Running"))) {
        json::object off = *rc;
        off["status"] = "False";
        off["lastTransitionTime"] = to_rfc3339(now);
        util::set_condition(conditions, off);
      }
      const std::string policy = clean_pod_policy(job);
      for (const auto& m : members) {
        auto it = pods_by_name.find(m);
        if (it == pods_by_name.end()) continue;
        if (policy == "All" || (policy == "Running" && !terminal(*it->second))) plan.remove.push_back({"", "pods", m});
      }
    };
    if (success) {
      util::set_condition(conditions, condition("Succeeded", true, f.kind + "Succeeded",
                                                fmt::format("{} {} successfully completed.", f.kind, who), now));
      finish();
    } else if (!failed_type.empty()) {
      const std::string msg = f.kind == "MPIJob"
                                  ? fmt::format("MPIJob {} has failed", who)
                                  : fmt::format("{} {} has failed because {} {} replica(s) failed.", f.kind, who,
                                                failed[failed_type], failed_type);
      util::set_condition(conditions, condition("Failed", true, f.kind + "Failed", msg, now));
      finish();
    } else if (running) {
      util::set_condition(conditions,
                          condition("Running", true, f.kind + "Running", fmt::format("{} {} is running.", f.kind, who), now));
    }
  }
  status["conditions"] = std::move(conditions);
  const json::object* old = object_at(job, {"status"});
  if (!old || !util::json_equal(*old, status)) plan.status = std::move(status);
  return plan;
}

// ---- Controllers -----------------------------------------------------------------------------

namespace {
bool is_owner_kind(const ResourceType& t) {
  return (t.group == "apps" && (t.resource == "deployments" || t.resource == "replicasets")) ||
         (t.group == "batch" && t.resource == "jobs") ||
         (t.group == "kubeflow.org" && (t.resource == "mpijobs" || t.resource == "tfjobs" || t.resource == "pytorchjobs"));
}
}  // namespace

Controllers::Controllers(Store& store, const Clock& clock, bool kubeflow) : store_(store), clock_(clock), kubeflow_(kubeflow) {
  subscription_ = store_.subscribe([this](const WatchEvent& e) { on_event(e); });
}

Controllers::~Controllers() { store_.unsubscribe(subscription_); }

void Controllers::resync() {
  {
    std::lock_guard lk(mu_);
    for (const auto* t : store_.types()) {
      if (!is_owner_kind(*t)) continue;
      for (const auto& o : store_.list(*t, "").items) {
        Key k{t->group, t->resource, namespace_of(*o), name_of(*o)};
        if (queued_.insert(k).second) queue_.push_back(k);
      }
    }
  }
  drain();
}

void Controllers::on_event(const WatchEvent& e) {
  if (!e.type_info || !e.object) return;
  const ResourceType& t = *e.type_info;
  std::vector<Key> keys;
  if (is_owner_kind(t)) {
    Key self{t.group, t.resource, namespace_of(*e.object), name_of(*e.object)};
    bool own_write = false;
    {
      std::lock_guard lk(mu_);
      if (auto it = own_status_.find(self); it != own_status_.end()) {
        auto& written = it->second;
        if (auto w = std::find(written.begin(), written.end(), e.object); w != written.end()) {
          own_write = e.type == EventType::Modified;
          written.erase(w);
        }
        if (written.empty() || e.type == EventType::Deleted) own_status_.erase(it);
      }
    }
    if (e.type != EventType::Deleted && !own_write) keys.push_back(std::move(self));
  }
  // A change to an owned object wakes its controller owner.
  if (const json::object* md = object_at(*e.object, {"metadata"}))
    if (const json::value* refs = md->if_contains("ownerReferences"); refs && refs->is_array())
      for (const auto& r : refs->as_array()) {
        if (!r.is_object()) continue;
        const json::object& ref = r.as_object();
        const json::value* c = ref.if_contains("controller");
        if (!c || !c->is_bool() || !c->as_bool()) continue;
        const ResourceType* owner = store_.find_kind(string_of(&ref, "apiVersion"), string_of(&ref, "kind"));
        if (owner && is_owner_kind(*owner))
          keys.push_back({owner->group, owner->resource, namespace_of(*e.object), string_of(&ref, "name")});
      }
  // What admission decided on changed: retry the owners whose pods it refused.
  if (const bool quota = t.group.empty() && t.resource == "resourcequotas";
      quota || (t.group.empty() && t.resource == "limitranges") ||
      (t.group == "scheduling.k8s.io" && t.resource == "priorityclasses")) {
    bool retry = !quota || e.type != EventType::Modified || !e.old_object;
    if (!retry) {
      // A quota's own status writes matter only when usage went down or the limits changed.
      const json::object* old_used = object_at(*e.old_object, {"status", "used"});
      const json::object* new_used = object_at(*e.object, {"status", "used"});
      const json::object* old_hard = object_at(*e.old_object, {"spec", "hard"});
      const json::object* new_hard = object_at(*e.object, {"spec", "hard"});
      retry = (old_hard && new_hard && !util::json_equal(*old_hard, *new_hard)) || !old_used || !new_used;
      if (!retry)
        for (const auto& [k, v] : *new_used)
          if (const json::value* o = old_used->if_contains(k); !o || !util::json_equal(*o, v)) {
            try {
              retry = retry || !o->is_string() || !v.is_string() ||
                      Quantity::parse(v.as_string()) < Quantity::parse(o->as_string());
            } catch (const ValidationError&) {
              retry = true;
            }
          }
    }
    if (retry) {
      std::lock_guard lk(mu_);
      const std::string ns = t.namespaced ? namespace_of(*e.object) : std::string();
      for (auto it = refused_.begin(); it != refused_.end(); ++it)
        if (ns.empty() || it->first == ns)
          for (const auto& k : it->second) keys.push_back(k);
    }
  }
  if (keys.empty()) return;
  {
    std::lock_guard lk(mu_);
    for (auto& k : keys)
      if (queued_.insert(k).second) queue_.push_back(std::move(k));
  }
  drain();
}

void Controllers::drain() {
  {
    std::lock_guard lk(mu_);
    if (draining_) return;
    draining_ = true;
  }
  // One owner syncs at most kMaxSyncsPerSecond times per second of the cluster's clock (at most
  // 500 pods each, see kBurstReplicas): a write asking for millions of pods returns once 10,000
  // exist, and the owner goes on at its first event in a later second, instead of the request
  // creating them all before it answers (the controllers run inside the write).
  constexpr int kMaxSyncsPerSecond = 20;
  for (int i = 0; i < 100000; ++i) {
    Key k;
    {
      std::lock_guard lk(mu_);
      if (queue_.empty()) break;
      k = queue_.front();
      queue_.pop_front();
      queued_.erase(k);
    }
    {
      const auto second = std::chrono::duration_cast<std::chrono::seconds>(clock_.now().time_since_epoch()).count();
      std::lock_guard lk(mu_);
      if (sync_second_ != second) {
        sync_second_ = second;
        syncs_.clear();
      }
      if (++syncs_[k] > kMaxSyncsPerSecond) continue;
    }
    try {
      reconcile(k);
    } catch (const StatusError&) {
      // Conflicts and races resolve on the next event for this owner.
    }
  }
  std::lock_guard lk(mu_);
  draining_ = false;
}

Children Controllers::owned(const std::string& ns, const std::string& uid,
                                             const std::vector<std::pair<std::string, std::string>>& types) const {
  Children out;
  // The owner-uid index (as controllers' informers index by owner and the GC's graph does), then
  // the controllerRef filter: only dependents whose controller: true reference is this owner.
  for (const auto& [group, resource] : types) {
    const ResourceType& t = store_.type(group, resource);
    for (const auto& o : store_.dependents(t, ns, uid))
      if (util::controller_uid(*o) == uid) out.push_back(o);
  }
  return out;
}

void Controllers::reconcile(const Key& key) {
  const ResourceType& t = store_.type(key.group, key.resource);
  auto owner = store_.find(t, key.ns, key.name);
  if (!owner) return;
  const std::string uid = uid_of(*owner);
  const auto now = clock_.now();
  const auto when = std::chrono::time_point_cast<std::chrono::system_clock::duration>(now);  // events' time
  Plan plan;
  if (key.resource == "deployments") plan = plan_deployment(*owner, owned(key.ns, uid, {{"apps", "replicasets"}}), now);
  else if (key.resource == "replicasets") plan = plan_replicaset(*owner, owned(key.ns, uid, {{"", "pods"}}), now);
  else if (key.resource == "jobs") plan = plan_job(*owner, owned(key.ns, uid, {{"", "pods"}}), now);
  else if (!kubeflow_) return;  // no operator runs
  else plan = plan_kubeflow_job(*owner, owned(key.ns, uid, {{"", "pods"}, {"", "services"}, {"batch", "jobs"}}), now);

  // The ReplicaSet and Job controllers create pods in slow-start batches and stop at the first
  // refusal (pkg/controller/replicaset/replica_set.go manageReplicas, job_controller.go
  // manageJob); the pod control records it on the owner (pkg/controller/controller_utils.go
  // createPods: FailedCreate, "Error creating: %v").
  const bool pod_owner = key.resource == "replicasets" || key.resource == "jobs";
  std::optional<StatusError> refused;
  std::int64_t not_created = 0;
  for (auto& c : plan.create) {
    const bool pod = pod_owner && c.group.empty() && c.resource == "pods";
    if (pod && refused) {
      ++not_created;
      continue;
    }
    try {
      auto made = store_.create_shared(store_.type(c.group, c.resource), key.ns, std::move(c.object));
      // The controllers' events (controller_utils.go createPods: SuccessfulCreate "Created pod: %v";
      // deployment sync.go getNewReplicaSet: ScalingReplicaSet "Scaled up replica set %s from 0 to %d").
      if (pod)
        util::record_event(store_, when, *owner, "Normal", "SuccessfulCreate", "Created pod: " + name_of(*made),
                           controller_name(key.resource), {}, "");
      else if (key.resource == "deployments" && c.resource == "replicasets" && replicas_of(*made, 0) > 0)
        util::record_event(store_, when, *owner, "Normal", "ScalingReplicaSet",
                           fmt::format("Scaled up replica set {} from 0 to {}", name_of(*made), replicas_of(*made, 0)),
                           controller_name(key.resource), {}, "");
    } catch (const StatusError& e) {
      if (e.code() == 409) continue;  // AlreadyExists: a previous round made it
      if (!pod) throw;
      refused = e;
      ++not_created;
      util::record_event(store_, when, *owner, "Warning",
                         "FailedCreate", "Error creating: " + e.status_message(),
                         controller_name(key.resource), {}, "");
    }
  }
  if (pod_owner) {
    std::lock_guard lk(mu_);
    if (refused) refused_[key.ns].insert(key);
    else if (auto it = refused_.find(key.ns); it != refused_.end() && it->second.erase(key) && it->second.empty())
      refused_.erase(it);
  }
  if (key.resource == "jobs" && not_created > 0 && plan.status) {
    // Pods never created are not active.
    json::object& st = *plan.status;
    const std::int64_t active = std::max<std::int64_t>(0, int_of(&st, "active", 0) - not_created);
    if (active) st["active"] = active;
    else st.erase("active");
    if (const json::object* old = object_at(*owner, {"status"}); old && util::json_equal(*old, st)) plan.status.reset();
  }
  if (key.resource == "replicasets") {
    // replica_set_utils.go calculateStatus: a refused create sets ReplicaFailure (reason
    // FailedCreate, the error as message) once; a sync without error removes it.
    json::object st = plan.status ? *plan.status : object_at(*owner, {"status"}) ? *object_at(*owner, {"status"}) : json::object{};
    json::array conds;
    if (const json::value* c = st.if_contains("conditions"); c && c->is_array()) conds = c->as_array();
    const bool has = util::find_condition(&conds, "ReplicaFailure") != nullptr;
    bool changed = false;
    if (refused && !has) {
      conds.push_back(json::object{{"type", "ReplicaFailure"}, {"status", "True"}, {"lastTransitionTime", to_rfc3339(now)},
                                   {"reason", "FailedCreate"}, {"message", refused->status_message()}});
      changed = true;
    } else if (!refused && has) {
      conds.erase(std::remove_if(conds.begin(), conds.end(),
                                 [](const json::value& c) {
                                   return c.is_object() && string_of(&c.as_object(), "type") == "ReplicaFailure";
                                 }),
                  conds.end());
      changed = true;
    }
    if (changed) {
      if (conds.empty()) st.erase("conditions");
      else st["conditions"] = std::move(conds);
      plan.status = std::move(st);
    }
  }
  for (auto& u : plan.update) {
    const ResourceType& ut = store_.type(u.group, u.resource);
    std::int64_t before = -1;
    if (key.resource == "deployments" && u.resource == "replicasets")
      if (auto old = store_.find(ut, key.ns, name_of(u.object))) before = replicas_of(*old, 0);
    auto written = store_.update_shared(ut, key.ns, std::move(u.object));
    // deployment sync.go scaleReplicaSet: "Scaled up|down replica set %s from %d to %d".
    if (before >= 0 && before != replicas_of(*written, 0))
      util::record_event(store_, when, *owner, "Normal", "ScalingReplicaSet",
                         fmt::format("Scaled {} replica set {} from {} to {}", replicas_of(*written, 0) > before ? "up" : "down",
                                     name_of(*written), before, replicas_of(*written, 0)),
                         controller_name(key.resource), {}, "");
  }
  for (const auto& r : plan.remove) {
    try {
      store_.remove(store_.type(r.group, r.resource), key.ns, r.name);
      // controller_utils.go DeletePod: SuccessfulDelete "Deleted pod: %v".
      if (pod_owner && r.group.empty() && r.resource == "pods")
        util::record_event(store_, when, *owner, "Normal", "SuccessfulDelete", "Deleted pod: " + r.name,
                           controller_name(key.resource), {}, "");
    } catch (const StatusError& e) {
      if (e.code() != 404) throw;
    }
  }
  // The revision annotation goes with the status, as the deployment controller writes it
  // (sync.go: SetDeploymentRevision, then UpdateStatus, whose strategy keeps the new annotations
  // and does not bump metadata.generation).
  if (plan.status || (!plan.owner_annotations.empty() && t.has_status)) {
    std::shared_ptr<const json::object> written;
    json::object next = *owner;
    if (plan.status) next["status"] = std::move(*plan.status);
    if (!plan.owner_annotations.empty()) {
      auto& ann = ensure_object(ensure_object(next, "metadata"), "annotations");
      for (const auto& kv : plan.owner_annotations) ann[kv.key()] = kv.value();
      plan.owner_annotations.clear();
    }
    // The status subresource: the owner as read, resourceVersion its precondition (a conflict
    // if it changed meanwhile).
    written = store_.update_shared(t, key.ns, std::move(next), {}, t.has_status ? "status" : "");
    if (written != owner) {
      std::lock_guard lk(mu_);
      own_status_[key].push_back(std::move(written));
    }
  }
  for (const auto& ev : plan.events)
    util::record_event(store_, when, *owner, ev.type, ev.reason, ev.message,
                       controller_name(key.resource),
                       {}, "");
  if (!plan.owner_annotations.empty()) {
    try {
      store_.mutate(t, key.ns, key.name, [&](json::object& o) {
        auto& ann = ensure_object(ensure_object(o, "metadata"), "annotations");
        for (const auto& kv : plan.owner_annotations) ann[kv.key()] = kv.value();
      });
    } catch (const StatusError& e) {
      if (e.code() != 404) throw;  // deleted meanwhile
    }
  }
}

}  // namespace gpupool::embedded
