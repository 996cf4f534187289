// embedded/controller_kueue.cpp — the embedded Kueue (see controller_kueue.hpp). Sources are
// kubernetes-sigs/kueue v0.14.8; file and function named where each rule is implemented.
#include "embedded/controller_kueue.hpp"

#include <openssl/sha.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "embedded/controllers.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"
#include "gpupool/quantity.hpp"
#include "gpupool/queues.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // NOLINT (the controllers' helpers, controllers_util.hpp)

namespace {

constexpr std::string_view kGroup = "kueue.x-k8s.io";
constexpr std::string_view kJobUidLabel = "kueue.x-k8s.io/job-uid";   // constants.JobUIDLabel
constexpr std::string_view kPodSetLabel = "kueue.x-k8s.io/podset";    // constants.PodSetLabel
constexpr std::string_view kKueueManager = "kueue.x-k8s.io/manager";  // trainjob runtimePatchManagerName

using Ptr = std::shared_ptr<const json::object>;

// The job kinds Kueue's default configuration integrates (config/components/manager
// controller_manager_config.yaml integrations.frameworks) that the embedded cluster runs: where
// each is suspended, how it splits into podSets and which conditions finish it.
//  - batch/job (jobs/job/job_controller.go PodSets): one podSet "main" of min(parallelism,
//    completions) pods, spec.suspend;
//  - kubeflow.org/mpijob, mpi-operator's v2beta1 only (jobs/mpijob: Launcher, Worker), and the
//    training-operator kinds (jobs/kubeflow/kubeflowjob PodSets, OrderedReplicaTypes): one podSet per
//    replica type present, named in lower case, of `replicas` pods (default 1), runPolicy.suspend;
//  - jobset.x-k8s.io/jobset (jobs/jobset/jobset_controller.go PodSets, podsCount): one podSet per
//    replicatedJob, in order, named as it, of replicas * min(parallelism, completions) pods, the
//    Job template's pod template; spec.suspend; Finished on Completed or Failed;
//  - trainer.kubeflow.org/trainjob (jobs/trainjob/trainjob_controller.go PodSets): the podSets of
//    the JobSet the TrainJob's runtime builds (getChildJobSet, here plan_trainjob, the embedded
//    Trainer's own builder); spec.suspend; Finished on Complete or Failed.
// (pod and deployment are opt-in frameworks, off by default: their objects run unqueued here too.)
enum class Shape { Job, Kubeflow, JobSet, TrainJob };
struct Integration {
  std::string_view group, version, resource, kind;
  Shape shape;
  std::vector<std::string_view> suspend;
  std::string_view specs_key;           // Kubeflow: the replica specs' member
  std::vector<std::string_view> order;  // Kubeflow: replica types, in Kueue's podSet order
  std::vector<std::string_view> done;   // conditions that finish the job, success first
};
const std::vector<Integration>& integrations() {
  static const std::vector<Integration> all = {
      {"batch", "v1", "jobs", "Job", Shape::Job, {"spec", "suspend"}, "", {}, {"Complete", "Failed"}},
      {"kubeflow.org",
       "v2beta1",
       "mpijobs",
       "MPIJob",
       Shape::Kubeflow,
       {"spec", "runPolicy", "suspend"},
       "mpiReplicaSpecs",
       {"Launcher", "Worker"},
       {"Succeeded", "Failed"}},
      {"kubeflow.org",
       "v1",
       "pytorchjobs",
       "PyTorchJob",
       Shape::Kubeflow,
       {"spec", "runPolicy", "suspend"},
       "pytorchReplicaSpecs",
       {"Master", "Worker"},
       {"Succeeded", "Failed"}},
      {"kubeflow.org",
       "v1",
       "tfjobs",
       "TFJob",
       Shape::Kubeflow,
       {"spec", "runPolicy", "suspend"},
       "tfReplicaSpecs",
       {"Chief", "Master", "PS", "Worker", "Evaluator"},
       {"Succeeded", "Failed"}},
      {"jobset.x-k8s.io",
       "v1alpha2",
       "jobsets",
       "JobSet",
       Shape::JobSet,
       {"spec", "suspend"},
       "",
       {},
       {"Completed", "Failed"}},
      {"trainer.kubeflow.org",
       "v1alpha1",
       "trainjobs",
       "TrainJob",
       Shape::TrainJob,
       {"spec", "suspend"},
       "",
       {},
       {"Complete", "Failed"}},
  };
  return all;
}

bool suspended_at(const json::object& o, const std::vector<std::string_view>& path) {
  const json::object* cur = &o;
  const json::value* v = nullptr;
  for (auto it = path.begin(); it != path.end(); ++it) {
    v = cur ? cur->if_contains(*it) : nullptr;
    if (!v) return false;
    cur = v->is_object() ? &v->as_object() : nullptr;
  }
  return v && v->is_bool() && v->as_bool();
}

void set_suspended(json::object& o, const std::vector<std::string_view>& path, bool value) {
  json::object* cur = &o;
  for (auto it = path.begin(); it + 1 != path.end(); ++it) cur = &ensure_object(*cur, *it);
  (*cur)[*(path.end() - 1)] = value;
}

// A job's podSet, in Kueue's order: its name, its pods, its pod template, and where that template is
// in the job (object members, or array indices in digits: a JobSet's replicatedJobs is a list);
// `path` is empty when the template is not in the job (a TrainJob's come from its runtime).
struct JobPodSet {
  std::string name;
  std::int64_t count;
  json::object tmpl;
  std::vector<std::string> path;
};

// The pod template at `path` in `job` (created where missing), null when an index is out of range.
json::object* template_at(json::object& job, const std::vector<std::string>& path) {
  json::value* cur = nullptr;
  json::object* obj = &job;
  for (const auto& seg : path) {
    if (cur && cur->is_array()) {
      const std::size_t i = std::stoul(seg);
      if (i >= cur->as_array().size() || !cur->as_array()[i].is_object()) return nullptr;
      cur = &cur->as_array()[i];
      obj = &cur->as_object();
      continue;
    }
    if (!obj) return nullptr;
    json::value& next = (*obj)[seg];
    if (next.is_null()) next = json::object{};
    cur = &next;
    obj = next.is_object() ? &next.as_object() : nullptr;
  }
  return obj;
}

// The pod template the Workload recorded for podSet `name` at creation (spec.podSets[].template).
json::object original_template(const json::object& wl, std::string_view name) {
  if (const json::array* ps = util::array_at(wl, {"spec"}, "podSets"))
    for (const auto& p : *ps)
      if (p.is_object() && string_of(&p.as_object(), "name") == name)
        if (const json::object* t = object_at(p.as_object(), {"template"})) return *t;
  return {};
}

// pkg/podset/podset.go RestorePodSpec: labels, annotations, nodeSelector, tolerations and
// schedulingGates become the original's again (absent where the original has none).
void restore_pod_template(json::object& tmpl, const json::object& original) {
  auto restore = [](json::object& to, const json::object* from, std::string_view key) {
    const json::value* v = from ? from->if_contains(key) : nullptr;
    if (v && !v->is_null())
      to[key] = *v;
    else
      to.erase(key);
  };
  const json::object* meta = object_at(original, {"metadata"});
  const json::object* spec = object_at(original, {"spec"});
  if (meta || tmpl.contains("metadata"))
    for (const char* k : {"labels", "annotations"}) restore(ensure_object(tmpl, "metadata"), meta, k);
  if (spec || tmpl.contains("spec"))
    for (const char* k : {"nodeSelector", "tolerations", "schedulingGates"})
      restore(ensure_object(tmpl, "spec"), spec, k);
}

// jobs/jobset PodSets: a JobSet spec's replicatedJobs, `prefix` leading to that spec in the job.
void jobset_podsets(const json::object* spec, std::vector<std::string> prefix, std::vector<JobPodSet>& out) {
  const json::value* rjobs = spec ? spec->if_contains("replicatedJobs") : nullptr;
  if (!rjobs || !rjobs->is_array()) return;
  for (std::size_t i = 0; i < rjobs->as_array().size(); ++i) {
    const json::value& r = rjobs->as_array()[i];
    if (!r.is_object()) continue;
    // PodsCountPerReplica: parallelism (default 1), at most completions (default parallelism).
    const json::object* jspec = object_at(r.as_object(), {"template", "spec"});
    const std::int64_t parallelism = count_of(jspec, "parallelism", 1);
    const std::int64_t per_replica = std::min(parallelism, count_of(jspec, "completions", parallelism));
    const json::object* t = jspec ? object_at(*jspec, {"template"}) : nullptr;
    std::vector<std::string> path = prefix;
    for (const char* seg : {"replicatedJobs", "", "template", "spec", "template"}) path.emplace_back(seg);
    path[prefix.size() + 1] = std::to_string(i);
    out.push_back({string_of(&r.as_object(), "name"), count_of(&r.as_object(), "replicas", 1) * per_replica,
                   t ? *t : json::object{}, std::move(path)});
  }
}

// Every kind's podSets, from one place. `store` gives a TrainJob's runtime.
std::vector<JobPodSet> job_podsets(const Integration& in, const json::object& job, const Store& store,
                                   Clock::time_point now) {
  std::vector<JobPodSet> out;
  const json::object* spec = object_at(job, {"spec"});
  // (Job's and the Kubeflow kinds' paths: object members only.)
  auto tmpl_at = [&](const std::vector<std::string>& path) {
    const json::object* t = &job;
    for (const auto& seg : path) t = t ? object_at(*t, {seg}) : nullptr;
    return t ? *t : json::object{};
  };
  switch (in.shape) {
    case Shape::Job: {
      const std::int64_t parallelism = count_of(spec, "parallelism", 1);
      std::vector<std::string> path{"spec", "template"};
      out.push_back({"main", std::min(parallelism, count_of(spec, "completions", parallelism)), tmpl_at(path), path});
      break;
    }
    case Shape::Kubeflow: {
      const json::object* specs = object_at(job, {"spec", in.specs_key});
      for (auto rt : in.order)
        if (const json::object* r = specs ? object_at(*specs, {rt}) : nullptr) {
          std::string name(rt);
          for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          std::vector<std::string> path{"spec", std::string(in.specs_key), std::string(rt), "template"};
          out.push_back({name, count_of(r, "replicas", 1), tmpl_at(path), path});
        }
      break;
    }
    case Shape::JobSet:
      jobset_podsets(spec, {"spec"}, out);
      break;
    case Shape::TrainJob: {
      // getChildJobSet: the JobSet as the Trainer builds it; none (no podSets, no Workload yet)
      // while the runtime is missing.
      const auto runtime = trainjob_runtime(store, job);
      if (!runtime) break;
      Plan built = plan_trainjob(job, runtime.get(), {}, now);
      for (const auto& c : built.create)
        if (c.resource == "jobsets") jobset_podsets(object_at(c.object, {"spec"}), {}, out);
      for (auto& ps : out) ps.path.clear();
      break;
    }
  }
  return out;
}

// The TrainJob's runtime patch of manager kueue.x-k8s.io/manager, added when missing as Kueue's
// TrainJob webhook adds it (trainjob_webhook.go Default, v0.17.0; runtimePatchManagerName).
json::object& kueue_runtime_patch(json::object& trainjob) {
  json::value& patches = ensure_object(trainjob, "spec")["runtimePatches"];
  if (!patches.is_array()) patches = json::array{};
  for (auto& p : patches.as_array())
    if (p.is_object() && string_of(&p.as_object(), "manager") == kKueueManager) return p.as_object();
  patches.as_array().push_back(json::object{{"manager", kKueueManager}});
  return patches.as_array().back().as_object();
}

bool condition_true(const json::object& o, std::string_view type) {
  const json::object* c = util::find_condition(util::array_at(o, {"status"}, "conditions"), type);
  return c && string_of(c, "status") == "True";
}

}  // namespace

// jobframework/workload_names.go generateWorkloadName: "<kind>-<owner>" (cut to 247) + "-" + the
// first 5 hex digits of sha1(kind \n group \n name \n uid).
std::string kueue_workload_name(std::string_view kind, std::string_view group, const std::string& name,
                                const std::string& uid) {
  std::string prefix = fmt::format("{}-{}", kind, name);
  for (auto& c : prefix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (prefix.size() > 247) prefix.resize(247);
  const std::string in = fmt::format("{}\n{}\n{}\n{}", kind, group, name, uid);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(in.data()), in.size(), digest);
  return fmt::format("{}-{:02x}{:02x}{:x}", prefix, digest[0], digest[1], digest[2] >> 4);
}

namespace {

// The resources one pod of a template asks for (pkg/resources / limitrange.TotalRequests: the sum
// of the containers' requests, a limit standing in for a missing request, at least the largest
// init container's), in Kueue's integer units: cpu in millicores, everything else in units.
std::map<std::string, std::int64_t> pod_requests(const json::object& tmpl) {
  std::map<std::string, std::int64_t> total;
  auto container_requests = [](const json::object& c) {
    std::map<std::string, std::int64_t> r;
    const json::object* res = object_at(c, {"resources"});
    if (!res) return r;
    for (const char* part : {"limits", "requests"})  // requests override limits
      if (const json::object* m = object_at(*res, {part}))
        for (const auto& [k, v] : *m)
          if (v.is_string()) try {
              const Quantity q = Quantity::parse(v.as_string());
              r[std::string(k)] = k == "cpu" ? q.milli_value() : q.value();
            } catch (const ValidationError&) {}
    return r;
  };
  const json::object* spec = object_at(tmpl, {"spec"});
  if (const json::value* cs = spec ? spec->if_contains("containers") : nullptr; cs && cs->is_array())
    for (const auto& c : cs->as_array())
      if (c.is_object())
        for (const auto& [k, v] : container_requests(c.as_object())) total[k] += v;
  if (const json::value* cs = spec ? spec->if_contains("initContainers") : nullptr; cs && cs->is_array())
    for (const auto& c : cs->as_array())
      if (c.is_object())
        for (const auto& [k, v] : container_requests(c.as_object())) total[k] = std::max(total[k], v);
  return total;
}

// resources.ResourceQuantityString: cpu as a milli quantity, others as plain numbers.
std::string quantity_string(const std::string& resource, std::int64_t v) {
  return resource == "cpu" ? Quantity::from_milli(v).to_string()
         : (resource == "memory" || resource == "ephemeral-storage")
             ? Quantity::from_int(v, Quantity::Format::BinarySI).to_string()
             : Quantity::from_int(v).to_string();
}

std::int64_t quota_value(const std::string& resource, const json::value* v) {
  if (!v) return 0;
  try {
    const Quantity q = v->is_string()  ? Quantity::parse(v->as_string())
                       : v->is_int64() ? Quantity::from_int(v->as_int64())
                                       : Quantity();
    return resource == "cpu" ? q.milli_value() : q.value();
  } catch (const ValidationError&) {
    return 0;
  }
}

using Usage = std::map<std::string, std::map<std::string, std::int64_t>>;  // flavor -> resource -> use

// Adds (sign 1) or takes away (-1) what an admitted workload's status.admission reserves.
void add_usage(Usage& used, const json::object& wl, int sign) {
  if (const json::array* psa = util::array_at(wl, {"status", "admission"}, "podSetAssignments"))
    for (const auto& pa : *psa) {
      const json::object* flv = pa.is_object() ? object_at(pa.as_object(), {"flavors"}) : nullptr;
      const json::object* use = pa.is_object() ? object_at(pa.as_object(), {"resourceUsage"}) : nullptr;
      if (flv && use)
        for (const auto& [r, f] : *flv)
          if (f.is_string())
            used[std::string(f.as_string())][std::string(r)] += sign * quota_value(std::string(r), use->if_contains(r));
    }
}

struct PodSet {
  std::string name;
  std::int64_t count = 0;
  std::map<std::string, std::int64_t> per_pod;
  const json::object* node_selector = nullptr;
};

struct Flavor {  // one flavor of one resource group of a ClusterQueue
  std::string name;
  std::vector<std::pair<std::string, std::int64_t>> nominal;  // resource -> nominalQuota
};
struct Group {
  std::vector<std::string> covered;
  std::vector<Flavor> flavors;
};

struct CQ {
  Ptr obj;
  std::string name, strategy;
  bool lower_priority_preemption = false;
  std::vector<Group> groups;
  std::map<std::string, std::map<std::string, std::int64_t>> used;  // flavor -> resource -> used
};

struct WL {
  Ptr obj;
  std::string ns, name, cq, lq;
  std::int64_t priority = 0;
  std::string created;
  std::vector<PodSet> podsets;
  bool admitted = false, finished = false;
};

std::vector<PodSet> podsets_of(const json::object& wl) {
  std::vector<PodSet> out;
  if (const json::array* ps = util::array_at(wl, {"spec"}, "podSets"))
    for (const auto& v : *ps) {
      if (!v.is_object()) continue;
      const json::object& p = v.as_object();
      PodSet s;
      s.name = string_of(&p, "name");
      s.count = int_of(&p, "count", 1);
      if (const json::object* t = object_at(p, {"template"})) {
        s.per_pod = pod_requests(*t);
        s.node_selector = object_at(*t, {"spec", "nodeSelector"});
      }
      out.push_back(std::move(s));
    }
  return out;
}

// A flavor assignment: per podSet, the flavor of each resource, and the usage it adds.
struct Assignment {
  std::vector<std::map<std::string, std::string>> flavors;  // podSet -> resource -> flavor
  std::map<std::string, std::map<std::string, std::int64_t>> usage;
  std::string message;  // Assignment.Message() when it does not fit
};

// flavorassigner.go assignFlavors: every podSet's resources, resource group by resource group, in
// the first flavor (in the group's order) that matches the pods' nodeSelector and whose nominal
// quota left holds the request. Messages as findFlavorForPodSetResource and fitsResourceQuota word
// them, the reasons of a podSet sorted and joined with ", ".
Assignment assign(const WL& w, const CQ& cq, const std::map<std::string, Ptr>& flavors_by_name,
                  const std::map<std::string, std::map<std::string, std::int64_t>>& used) {
  Assignment a;
  std::vector<std::string> messages;
  for (const PodSet& ps : w.podsets) {
    std::map<std::string, std::string> chosen;
    std::vector<std::string> reasons;
    bool ok = true;
    for (const auto& [res, q] : ps.per_pod) {
      if (q == 0 || chosen.count(res)) continue;
      const Group* g = nullptr;
      for (const auto& grp : cq.groups)
        if (std::find(grp.covered.begin(), grp.covered.end(), res) != grp.covered.end()) g = &grp;
      if (!g) {
        reasons = {fmt::format("resource {} unavailable in ClusterQueue", res)};
        ok = false;
        break;
      }
      bool found = false;
      for (const Flavor& f : g->flavors) {
        auto rf = flavors_by_name.find(f.name);
        if (rf == flavors_by_name.end()) {
          reasons.push_back(fmt::format("flavor {} not found", f.name));
          continue;
        }
        // The pods' nodeSelector against the flavor's nodeLabels (flavorassigner.go
        // checkFlavorForPodSets: "flavor %s doesn't match node affinity").
        bool matches = true;
        if (const json::object* labels = object_at(*rf->second, {"spec", "nodeLabels"}); labels && ps.node_selector)
          for (const auto& [k, v] : *labels)
            if (const json::value* want = ps.node_selector->if_contains(k); want && !util::json_equal(*want, v))
              matches = false;
        if (!matches) {
          reasons.push_back(fmt::format("flavor {} doesn't match node affinity", f.name));
          continue;
        }
        // All the group's resources the podSet asks for, in this flavor.
        bool fits = true;
        std::vector<std::string> why;
        for (const auto& [r, nominal] : f.nominal) {
          auto pq = ps.per_pod.find(r);
          if (pq == ps.per_pod.end() || pq->second == 0) continue;
          const std::int64_t request = pq->second * ps.count;
          std::int64_t assumed = 0;  // earlier podSets of this workload, in this flavor
          if (auto u = a.usage.find(f.name); u != a.usage.end())
            if (auto x = u->second.find(r); x != u->second.end()) assumed = x->second;
          std::int64_t in_use = 0;
          if (auto u = used.find(f.name); u != used.end())
            if (auto x = u->second.find(r); x != u->second.end()) in_use = x->second;
          const std::int64_t val = assumed + request;
          if (val > nominal) {
            why.push_back(fmt::format(
                "insufficient quota for {} in flavor {}, previously considered podsets requests ({}) + current "
                "podset request ({}) > maximum capacity ({})",
                r, f.name, quantity_string(r, assumed), quantity_string(r, request), quantity_string(r, nominal)));
            fits = false;
          } else if (val > nominal - in_use) {
            why.push_back(fmt::format("insufficient unused quota for {} in flavor {}, {} more needed", r, f.name,
                                      quantity_string(r, val - (nominal - in_use))));
            fits = false;
          }
        }
        if (!fits) {
          reasons.insert(reasons.end(), why.begin(), why.end());
          continue;
        }
        for (const auto& [r, nominal] : f.nominal) {
          auto pq = ps.per_pod.find(r);
          if (pq == ps.per_pod.end() || pq->second == 0) continue;
          chosen[r] = f.name;
          a.usage[f.name][r] += pq->second * ps.count;
        }
        found = true;
        break;
      }
      if (!found) {
        ok = false;
        break;
      }
    }
    if (!ok) {
      std::sort(reasons.begin(), reasons.end());
      std::string joined;
      for (const auto& r : reasons) joined += (joined.empty() ? "" : ", ") + r;
      messages.push_back(fmt::format("couldn't assign flavors to pod set {}: {}", ps.name, joined));
    }
    a.flavors.push_back(std::move(chosen));
  }
  for (const auto& m : messages) a.message += (a.message.empty() ? "" : "; ") + m;
  return a;
}

// metav1.Condition (Workload, ClusterQueue, LocalQueue conditions): no lastProbeTime, and
// observedGeneration.
json::object kueue_condition(const json::object& o, std::string_view type, bool status, std::string_view reason,
                             std::string_view message, Clock::time_point now) {
  json::object c = condition(type, status, reason, message, now);
  c["observedGeneration"] = int_of(object_at(o, {"metadata"}), "generation", 1);
  return c;
}

}  // namespace

KueueController::KueueController(Store& store, const Clock& clock) : store_(store), clock_(clock) {
  subscription_ = store_.subscribe([this](const WatchEvent& e) { on_event(e); });
}

KueueController::~KueueController() { store_.unsubscribe(subscription_); }

void KueueController::on_event(const WatchEvent& e) {
  if (!e.type_info || !e.object) return;
  const ResourceType& t = *e.type_info;
  bool relevant = t.group == kGroup;
  if (!relevant && (t.group == "batch" || t.group == "kubeflow.org" || t.group == "jobset.x-k8s.io" ||
                    t.group == "trainer.kubeflow.org"))
    relevant = !labels_key(*e.object, kQueueNameLabel).empty() ||
               (e.old_object && !labels_key(*e.old_object, kQueueNameLabel).empty());
  if (!relevant && t.group == "scheduling.k8s.io") relevant = true;
  // (A TrainJob's podSets come from its runtime.)
  if (!relevant && t.group == "trainer.kubeflow.org" && t.resource != "trainjobs") relevant = true;
  if (relevant) sync();
}

void KueueController::sync() {
  {
    std::lock_guard lk(mu_);
    dirty_ = true;
    if (running_) return;
    running_ = true;
  }
  for (int i = 0; i < 64; ++i) {
    {
      std::lock_guard lk(mu_);
      if (!dirty_) break;
      dirty_ = false;
    }
    try {
      sync_once();
    } catch (const StatusError&) {
      // A conflict or a race with a deletion: the next event runs the queues again.
    }
  }
  std::lock_guard lk(mu_);
  running_ = false;
}

void KueueController::sync_once() {
  const ResourceType* wl_t = store_.find_type(kGroup, "v1beta1", "workloads");
  const ResourceType* cq_t = store_.find_type(kGroup, "v1beta1", "clusterqueues");
  const ResourceType* lq_t = store_.find_type(kGroup, "v1beta1", "localqueues");
  const ResourceType* rf_t = store_.find_type(kGroup, "v1beta1", "resourceflavors");
  if (!wl_t || !cq_t || !lq_t || !rf_t) return;
  const auto now = clock_.now();

  // ---- 1. A Workload for every queued job (jobframework/reconciler.go ensureOneWorkload).
  struct Owned {
    Ptr job;
    const Integration* in;
    const ResourceType* type;
  };
  std::map<std::string, Owned> job_by_uid;
  // jobframework FindAncestorJobManagedByKueue: a JobSet whose controller is a queued TrainJob.
  const ResourceType* trainjobs_t = store_.find_type("trainer.kubeflow.org", "v1alpha1", "trainjobs");
  auto managed_parent = [&](const json::object& o) {
    if (const json::array* refs = util::array_at(o, {"metadata"}, "ownerReferences"))
      for (const auto& r : *refs) {
        const json::object* ref = r.is_object() ? &r.as_object() : nullptr;
        const json::value* ctl = ref ? ref->if_contains("controller") : nullptr;
        if (!trainjobs_t || !ctl || !ctl->is_bool() || !ctl->as_bool() || string_of(ref, "kind") != "TrainJob")
          continue;
        const auto parent = store_.find(*trainjobs_t, namespace_of(o), string_of(ref, "name"));
        return parent && !labels_key(*parent, kQueueNameLabel).empty();
      }
    return false;
  };
  std::set<std::string> owners;  // job uids that have a workload
  std::vector<Ptr> workloads = store_.list(*wl_t, "").items;
  for (const auto& w : workloads) owners.insert(util::controller_uid(*w));
  for (const Integration& in : integrations()) {
    const ResourceType* t = store_.find_type(in.group, in.version, in.resource);
    if (!t || t->version != in.version) continue;  // (MPIJob: Kueue manages v2beta1 only)
    for (const auto& job : store_.list(*t, "").items) {
      const std::string queue = labels_key(*job, kQueueNameLabel);
      if (queue.empty()) continue;
      // A JobSet of a queued TrainJob is part of it, not a job of its own
      // (jobframework/reconciler.go FindAncestorJobManagedByKueue: no top-level job, no Workload).
      if (in.shape == Shape::JobSet && managed_parent(*job)) continue;
      job_by_uid[uid_of(*job)] = {job, &in, t};
      if (owners.count(uid_of(*job))) continue;
      bool done = false;
      for (auto d : in.done) done = done || condition_true(*job, d);
      if (done) continue;
      if (!suspended_at(*job, in.suspend)) {
        // Kueue's job webhooks suspend a queued job at creation (jobframework ApplyDefaultForSuspend);
        // one created running (e.g. before its queue label was added) is stopped until admitted.
        store_.mutate(*t, namespace_of(*job), name_of(*job),
                      [&](json::object& o) { set_suspended(o, in.suspend, true); });
      }
      json::array podsets;
      std::string pc;
      for (auto& ps : job_podsets(in, *job, store_, now)) {
        if (pc.empty()) pc = string_of(object_at(ps.tmpl, {"spec"}), "priorityClassName");
        podsets.push_back(json::object{{"name", ps.name}, {"count", ps.count}, {"template", std::move(ps.tmpl)}});
      }
      if (podsets.empty()) continue;  // (a TrainJob whose runtime is missing: PodSets fails, retried)
      // (The CRD's defaults written out: active, priorityClassSource "".)
      json::object wspec{
          {"active", true}, {"queueName", queue}, {"podSets", std::move(podsets)}, {"priorityClassSource", ""}};
      // Priority from the pods' PriorityClass (pkg/util/priority GetPriorityFromPriorityClass).
      std::int64_t priority = 0;
      if (!pc.empty()) {
        if (const ResourceType* pc_t = store_.find_type("scheduling.k8s.io", "v1", "priorityclasses"))
          if (auto cls = store_.find(*pc_t, "", pc)) priority = int_of(&*cls, "value", 0);
        wspec["priorityClassName"] = pc;
        wspec["priorityClassSource"] = "scheduling.k8s.io/priorityclass";
      }
      wspec["priority"] = priority;
      json::object md{{"name", kueue_workload_name(in.kind, in.group, name_of(*job), uid_of(*job))},
                      {"namespace", namespace_of(*job)},
                      {"labels", json::object{{kJobUidLabel, uid_of(*job)}}},
                      {"ownerReferences", json::array{json::object{{"apiVersion", t->group + "/" + t->version},
                                                                   {"kind", in.kind},
                                                                   {"name", name_of(*job)},
                                                                   {"uid", uid_of(*job)},
                                                                   {"controller", true},
                                                                   {"blockOwnerDeletion", true}}}}};
      try {
        workloads.push_back(store_.create_shared(
            *wl_t, namespace_of(*job), json::object{{"metadata", std::move(md)}, {"spec", std::move(wspec)}}));
        util::record_event(store_, now, *job, "Normal", "CreatedWorkload",
                           fmt::format("Created Workload: {}/{}", namespace_of(*job), name_of(*workloads.back())),
                           "kueue-job-controller");
      } catch (const StatusError& e) {
        if (e.code() != 409) throw;
      }
    }
  }

  // ---- 2. Queues, flavors, usage.
  std::map<std::string, Ptr> flavors;
  for (const auto& f : store_.list(*rf_t, "").items) flavors[name_of(*f)] = f;
  std::map<std::string, CQ> cqs;
  for (const auto& o : store_.list(*cq_t, "").items) {
    CQ cq;
    cq.obj = o;
    cq.name = name_of(*o);
    const json::object* spec = object_at(*o, {"spec"});
    cq.strategy = string_of(spec, "queueingStrategy");
    if (cq.strategy.empty()) cq.strategy = "BestEffortFIFO";
    cq.lower_priority_preemption =
        string_of(object_at(*o, {"spec", "preemption"}), "withinClusterQueue") == "LowerPriority";
    if (const json::array* groups = util::array_at(*o, {"spec"}, "resourceGroups"))
      for (const auto& gv : *groups) {
        if (!gv.is_object()) continue;
        Group g;
        if (const json::value* c = gv.as_object().if_contains("coveredResources"); c && c->is_array())
          for (const auto& r : c->as_array())
            if (r.is_string()) g.covered.emplace_back(r.as_string());
        if (const json::value* fs = gv.as_object().if_contains("flavors"); fs && fs->is_array())
          for (const auto& fv : fs->as_array()) {
            if (!fv.is_object()) continue;
            Flavor f;
            f.name = string_of(&fv.as_object(), "name");
            if (const json::value* rs = fv.as_object().if_contains("resources"); rs && rs->is_array())
              for (const auto& rv : rs->as_array())
                if (rv.is_object()) {
                  const std::string r = string_of(&rv.as_object(), "name");
                  f.nominal.emplace_back(r, quota_value(r, rv.as_object().if_contains("nominalQuota")));
                }
            g.flavors.push_back(std::move(f));
          }
        cq.groups.push_back(std::move(g));
      }
    cqs[cq.name] = std::move(cq);
  }
  std::map<std::string, Ptr> lqs;  // "ns/name"
  for (const auto& o : store_.list(*lq_t, "").items) lqs[namespace_of(*o) + "/" + name_of(*o)] = o;

  std::vector<WL> wls;
  for (const auto& o : workloads) {
    WL w;
    w.obj = o;
    w.ns = namespace_of(*o);
    w.name = name_of(*o);
    w.lq = string_of(object_at(*o, {"spec"}), "queueName");
    if (auto l = lqs.find(w.ns + "/" + w.lq); l != lqs.end())
      w.cq = string_of(object_at(*l->second, {"spec"}), "clusterQueue");
    w.priority = int_of(object_at(*o, {"spec"}), "priority", 0);
    w.created = string_of(object_at(*o, {"metadata"}), "creationTimestamp");
    w.podsets = podsets_of(*o);
    w.admitted = condition_true(*o, "QuotaReserved");
    w.finished = condition_true(*o, "Finished");
    wls.push_back(std::move(w));
  }

  // Writes the workload's new status when it changed.
  auto write_status = [&](WL& w, json::object status) {
    const json::object* old = object_at(*w.obj, {"status"});
    if (old && util::json_equal(*old, status)) return;
    if (!old && status.empty()) return;
    json::object next = *w.obj;
    next["status"] = std::move(status);
    w.obj = store_.update_shared(*wl_t, w.ns, std::move(next), {}, "status");
  };
  auto status_of = [](const WL& w) {
    const json::object* s = object_at(*w.obj, {"status"});
    return s ? *s : json::object{};
  };
  auto conditions_of = [](json::object& status) -> json::array& {
    json::value& c = status["conditions"];
    if (!c.is_array()) c = json::array{};
    return c.as_array();
  };
  auto owner_of = [&](const WL& w) -> const Owned* {
    auto it = job_by_uid.find(util::controller_uid(*w.obj));
    return it == job_by_uid.end() ? nullptr : &it->second;
  };
  auto owner_job = [&](const WL& w) -> Ptr {
    const Owned* o = owner_of(w);
    return o ? o->job : nullptr;
  };

  // ---- 3. Finished jobs finish their workloads (jobframework/reconciler.go: Finished, reason
  // Succeeded or Failed, the Job's condition message); the quota is released.
  for (auto& w : wls) {
    if (w.finished) continue;
    const Owned* owned = owner_of(w);
    if (!owned) continue;
    const Ptr& job = owned->job;
    const bool failed = condition_true(*job, "Failed");
    const std::string_view success = *owned->in->done.begin();  // Complete / Succeeded
    if (!failed && !condition_true(*job, success)) continue;
    // (jobs/job Finished and kubeflowjob Finished: the condition's message.)
    const json::object* c =
        util::find_condition(util::array_at(*job, {"status"}, "conditions"), failed ? "Failed" : success);
    json::object st = status_of(w);
    util::set_condition(conditions_of(st), kueue_condition(*w.obj, "Finished", true, failed ? "Failed" : "Succeeded",
                                                           string_of(c, "message"), now));
    write_status(w, std::move(st));
    w.finished = true;
    util::record_event(store_, now, *job, "Normal", "FinishedWorkload",
                       fmt::format("Workload '{}/{}' is declared finished", w.ns, w.name), "kueue-job-controller");
  }
  for (auto& w : wls) {
    if (!w.admitted || w.finished) continue;
    if (cqs.count(w.cq)) add_usage(cqs[w.cq].used, *w.obj, 1);
  }

  // ---- 4. Admission, ClusterQueue by ClusterQueue (scheduler.go schedule; queue ordering by
  // priority, then creation: pkg/cache/queue/cluster_queue.go queueOrderingFunc).
  auto order = [](const WL* a, const WL* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->created != b->created) return a->created < b->created;
    return a->name < b->name;
  };
  for (auto& w : wls) {
    if (w.admitted || w.finished) continue;
    std::string why;
    if (!lqs.count(w.ns + "/" + w.lq))
      why = fmt::format("LocalQueue {} doesn't exist", w.lq);  // workload_controller.go
    else if (!cqs.count(w.cq))
      why = fmt::format("ClusterQueue {} doesn't exist", w.cq);
    if (why.empty()) continue;
    json::object st = status_of(w);
    util::set_condition(conditions_of(st), kueue_condition(*w.obj, "QuotaReserved", false, "Inadmissible", why, now));
    write_status(w, std::move(st));
  }
  for (auto& [cq_name, cq] : cqs) {
    std::vector<WL*> pending, admitted;
    for (auto& w : wls) {
      // spec.active false: deactivated, never admitted (workload_controller.go).
      const json::value* active =
          object_at(*w.obj, {"spec"}) ? object_at(*w.obj, {"spec"})->if_contains("active") : nullptr;
      if (w.cq == cq_name && !w.finished && (w.admitted || !active || !active->is_bool() || active->as_bool()))
        (w.admitted ? admitted : pending).push_back(&w);
    }
    std::sort(pending.begin(), pending.end(), order);
    for (WL* w : pending) {
      Assignment a = assign(*w, cq, flavors, cq.used);
      std::vector<WL*> victims;
      if (!a.message.empty() && cq.lower_priority_preemption) {
        // preemption.go (withinClusterQueue LowerPriority): candidates of lower priority, the lowest
        // and most recently admitted first, taken until the workload fits.
        std::vector<WL*> candidates;
        for (WL* v : admitted)
          if (v->priority < w->priority) candidates.push_back(v);
        std::sort(candidates.begin(), candidates.end(), [](const WL* x, const WL* y) {
          if (x->priority != y->priority) return x->priority < y->priority;
          return x->created > y->created;
        });
        auto used = cq.used;
        for (WL* v : candidates) {
          victims.push_back(v);
          add_usage(used, *v->obj, -1);
          if (assign(*w, cq, flavors, used).message.empty()) break;
        }
        if (!assign(*w, cq, flavors, used).message.empty()) victims.clear();
        if (!victims.empty()) {
          Ptr preemptor_job = owner_job(*w);
          const std::string msg = fmt::format(
              "Preempted to accommodate a workload (UID: {}, JobUID: {}) due to prioritization in the ClusterQueue",
              uid_of(*w->obj), labels_key(*w->obj, kJobUidLabel));
          for (WL* v : victims) {
            // workload.Evict + SetPreemptedCondition; the job reconciler then stops the job and
            // unsets the quota reservation (QuotaReserved False "Pending", Admitted False).
            json::object st = status_of(*v);
            auto& conds = conditions_of(st);
            util::set_condition(conds, kueue_condition(*v->obj, "Evicted", true, "Preempted", msg, now));
            util::set_condition(conds, kueue_condition(*v->obj, "Preempted", true, "InClusterQueue", msg, now));
            util::set_condition(conds, kueue_condition(*v->obj, "QuotaReserved", false, "Pending", msg, now));
            util::set_condition(conds, kueue_condition(*v->obj, "Admitted", false, "NoReservation",
                                                       "The workload has no reservation", now));
            util::set_condition(conds, kueue_condition(*v->obj, "Requeued", true, "Preempted", msg, now));
            st.erase("admission");
            write_status(*v, std::move(st));
            v->admitted = false;
            util::record_event(store_, now, *v->obj, "Normal", "Preempted", msg, "kueue-admission");
            if (const Owned* o = owner_of(*v)) {
              // jobframework/reconciler.go stopJob -> each kind's RestorePodSetsInfo
              // (pkg/podset/podset.go RestorePodSpec): the pod templates get back the labels,
              // annotations, nodeSelector, tolerations and schedulingGates the Workload recorded
              // at creation, so the next admission's flavor does not add to this one's.
              const auto podsets = o->in->shape == Shape::TrainJob ? std::vector<JobPodSet>{}
                                                                   : job_podsets(*o->in, *o->job, store_, now);
              store_.mutate(*o->type, v->ns, name_of(*o->job),
                            [&](json::object& x) { set_suspended(x, o->in->suspend, true); });
              // jobs/job/job_controller.go Stop: a stopped Job's startTime is cleared, so that its
              // template may take the next admission's nodeSelector (a Job never started).
              if (o->in->shape == Shape::TrainJob)
                // trainjob_controller.go Stop / RestorePodSetsInfo: Kueue's patch is emptied.
                store_.mutate(*o->type, v->ns, name_of(*o->job), [](json::object& x) {
                  ensure_object(ensure_object(ensure_object(kueue_runtime_patch(x), "trainingRuntimeSpec"), "template"),
                                "spec")
                      .erase("replicatedJobs");
                });
              if (o->in->shape == Shape::Job)
                store_.mutate(
                    *o->type, v->ns, name_of(*o->job),
                    [](json::object& x) {
                      if (json::value* st = x.if_contains("status"); st && st->is_object())
                        st->as_object().erase("startTime");
                    },
                    {}, "status");
              // (After the stop: a Job's template may change only once it is suspended and its
              // startTime cleared, apis/batch/validation ValidateJobSpecUpdate.)
              if (!podsets.empty())
                store_.mutate(*o->type, v->ns, name_of(*o->job), [&](json::object& x) {
                  for (const auto& ps : podsets)
                    if (json::object* tmpl = template_at(x, ps.path))
                      restore_pod_template(*tmpl, original_template(*v->obj, ps.name));
                });
            }
            admitted.erase(std::find(admitted.begin(), admitted.end(), v));
          }
          cq.used.clear();
          for (WL* x : admitted) add_usage(cq.used, *x->obj, 1);
          a = assign(*w, cq, flavors, cq.used);
        }
      }
      json::object st = status_of(*w);
      auto& conds = conditions_of(st);
      if (!a.message.empty()) {
        // scheduler.go requeueAndUpdate: QuotaReserved False, reason Pending, the assignment's message.
        util::set_condition(conds, kueue_condition(*w->obj, "QuotaReserved", false, "Pending", a.message, now));
        write_status(*w, std::move(st));
        if (cq.strategy == "StrictFIFO") break;  // the head blocks the queue
        continue;
      }
      // scheduler.go admit: status.admission, QuotaReserved ("Quota reserved in ClusterQueue %s")
      // and, with no admission checks, Admitted ("The workload is admitted").
      json::array assignments;
      for (std::size_t i = 0; i < w->podsets.size(); ++i) {
        json::object flv, usage;
        for (const auto& [r, f] : a.flavors[i]) {
          flv[r] = f;
          usage[r] = quantity_string(r, w->podsets[i].per_pod.at(r) * w->podsets[i].count);
        }
        assignments.push_back(json::object{{"name", w->podsets[i].name},
                                           {"flavors", std::move(flv)},
                                           {"resourceUsage", std::move(usage)},
                                           {"count", w->podsets[i].count}});
      }
      util::set_condition(conds, kueue_condition(*w->obj, "QuotaReserved", true, "QuotaReserved",
                                                 fmt::format("Quota reserved in ClusterQueue {}", cq_name), now));
      util::set_condition(conds,
                          kueue_condition(*w->obj, "Admitted", true, "Admitted", "The workload is admitted", now));
      for (const char* gone : {"Evicted", "Preempted"})
        if (const json::object* c = util::find_condition(&conds, gone); c && string_of(c, "status") == "True")
          util::set_condition(conds, kueue_condition(*w->obj, gone, false, "QuotaReserved",
                                                     "Previously: " + string_of(c, "message"), now));
      // (After the conditions: a new member may move the object's others, `conds` among them.)
      st["admission"] = json::object{{"clusterQueue", cq_name}, {"podSetAssignments", std::move(assignments)}};
      write_status(*w, std::move(st));
      w->admitted = true;
      admitted.push_back(w);
      for (const auto& [f, rs] : a.usage)
        for (const auto& [r, v] : rs) cq.used[f][r] += v;
      util::record_event(store_, now, *w->obj, "Normal", "QuotaReserved",
                         fmt::format("Quota reserved in ClusterQueue {}, wait time since queued was 0s", cq_name),
                         "kueue-admission");
      util::record_event(store_, now, *w->obj, "Normal", "Admitted",
                         fmt::format("Admitted by ClusterQueue {}, wait time since reservation was 0s", cq_name),
                         "kueue-admission");
    }
  }

  // ---- 5. Admitted workloads start their jobs (jobframework/reconciler.go startJob with
  // podset.FromAssignment: per podSet, the flavors' nodeLabels and tolerations and the podSet label;
  // each kind's RunWithPodSetsInfo puts them on its pod templates, podset.Merge: labels and
  // nodeSelector merged, tolerations appended unless present), then the job is unsuspended.
  for (auto& w : wls) {
    if (!w.admitted || w.finished) continue;
    const Owned* owned = owner_of(w);
    if (!owned || !suspended_at(*owned->job, owned->in->suspend)) continue;
    struct Info {
      json::object labels, node_selector;
      json::array tolerations;
    };
    std::map<std::string, Info> infos;  // podSet -> what it gets
    if (const json::array* psa = util::array_at(*w.obj, {"status", "admission"}, "podSetAssignments"))
      for (const auto& pa : *psa) {
        if (!pa.is_object()) continue;
        const std::string ps_name = string_of(&pa.as_object(), "name");
        Info& info = infos[ps_name];
        info.labels[kPodSetLabel] = ps_name;
        std::set<std::string> seen;
        if (const json::object* flv = object_at(pa.as_object(), {"flavors"}))
          for (const auto& [r, f] : *flv) {
            if (!f.is_string() || !seen.insert(std::string(f.as_string())).second) continue;
            auto rf = flavors.find(std::string(f.as_string()));
            if (rf == flavors.end()) continue;
            if (const json::object* labels = object_at(*rf->second, {"spec", "nodeLabels"}))
              for (const auto& [k, v] : *labels) info.node_selector[k] = v;
            if (const json::array* tols = util::array_at(*rf->second, {"spec"}, "tolerations"))
              for (const auto& t : *tols) info.tolerations.push_back(t);
          }
      }
    const auto podsets = job_podsets(*owned->in, *owned->job, store_, now);
    store_.mutate(*owned->type, w.ns, name_of(*owned->job), [&](json::object& o) {
      if (owned->in->shape == Shape::TrainJob) {
        // trainjob_controller.go RunWithPodSetsInfo (Kueue v0.17.0, the first to speak the
        // runtimePatches of the Trainer API served here; v0.14.8 wrote podTemplateOverrides, which
        // Trainer v2.3.0 no longer has): the patch of manager kueue.x-k8s.io/manager (the Kueue
        // webhook adds it) gets one replicatedJob patch per podSet: pod template labels,
        // annotations, nodeSelector, tolerations. The Trainer merges it into the JobSet it builds.
        json::array rjobs;
        for (const auto& ps : podsets) {
          const Info& info = infos[ps.name];
          json::object pspec;
          if (!info.node_selector.empty()) pspec["nodeSelector"] = info.node_selector;
          if (!info.tolerations.empty()) pspec["tolerations"] = info.tolerations;
          json::object ptmpl{{"metadata", json::object{{"labels", info.labels}}}, {"spec", std::move(pspec)}};
          rjobs.push_back(json::object{
              {"name", ps.name}, {"template", json::object{{"spec", json::object{{"template", std::move(ptmpl)}}}}}});
        }
        json::object& patch = kueue_runtime_patch(o);
        ensure_object(ensure_object(ensure_object(patch, "trainingRuntimeSpec"), "template"),
                      "spec")["replicatedJobs"] = std::move(rjobs);
      } else {
        for (const auto& ps : podsets) {
          json::object* tmpl = template_at(o, ps.path);
          if (!tmpl) continue;
          const Info& info = infos[ps.name];
          json::object& labels = ensure_object(ensure_object(*tmpl, "metadata"), "labels");
          for (const auto& [k, v] : info.labels) labels[k] = v;
          if (!info.node_selector.empty()) {
            json::object& ns = ensure_object(ensure_object(*tmpl, "spec"), "nodeSelector");
            for (const auto& [k, v] : info.node_selector) ns[k] = v;
          }
          if (!info.tolerations.empty()) {
            json::value& tols = ensure_object(*tmpl, "spec")["tolerations"];
            if (!tols.is_array()) tols = json::array{};
            for (const auto& t : info.tolerations)
              if (std::none_of(tols.as_array().begin(), tols.as_array().end(),
                               [&](const json::value& x) { return util::json_equal(x, t); }))
                tols.as_array().push_back(t);
          }
        }
      }
      set_suspended(o, owned->in->suspend, false);
    });
    util::record_event(store_, now, *owned->job, "Normal", "Started", fmt::format("Admitted by clusterQueue {}", w.cq),
                       "kueue-job-controller");
  }

  // ---- 6. ClusterQueue and LocalQueue status (clusterqueue_controller.go, localqueue_controller.go):
  // counts, flavorsReservation and flavorsUsage (the same here: no admission checks), Active.
  auto usage_list = [](const std::vector<Group>& groups,
                       const std::map<std::string, std::map<std::string, std::int64_t>>& used, bool borrowed) {
    json::array out;
    for (const auto& g : groups)
      for (const auto& f : g.flavors) {
        json::array rs;
        for (const auto& [r, nominal] : f.nominal) {
          std::int64_t u = 0;
          if (auto x = used.find(f.name); x != used.end())
            if (auto y = x->second.find(r); y != x->second.end()) u = y->second;
          json::object e{{"name", r}, {"total", quantity_string(r, u)}};
          if (borrowed) e["borrowed"] = "0";
          rs.push_back(std::move(e));
        }
        out.push_back(json::object{{"name", f.name}, {"resources", std::move(rs)}});
      }
    return out;
  };
  for (auto& [cq_name, cq] : cqs) {
    std::int64_t pending = 0, reserving = 0;
    for (const auto& w : wls)
      if (w.cq == cq_name && !w.finished) ++(w.admitted ? reserving : pending);
    json::object st = object_at(*cq.obj, {"status"}) ? *object_at(*cq.obj, {"status"}) : json::object{};
    st["pendingWorkloads"] = pending;
    st["reservingWorkloads"] = reserving;
    st["admittedWorkloads"] = reserving;
    st["flavorsReservation"] = usage_list(cq.groups, cq.used, true);
    st["flavorsUsage"] = usage_list(cq.groups, cq.used, true);
    std::string missing;
    for (const auto& g : cq.groups)
      for (const auto& f : g.flavors)
        if (!flavors.count(f.name) && missing.empty()) missing = f.name;
    json::array conds;
    if (const json::value* c = st.if_contains("conditions"); c && c->is_array()) conds = c->as_array();
    // cache/scheduler/clusterqueue.go inactiveReason: FlavorNotFound when a flavor is missing.
    util::set_condition(conds, missing.empty()
                                   ? kueue_condition(*cq.obj, "Active", true, "Ready", "Can admit new workloads", now)
                                   : kueue_condition(*cq.obj, "Active", false, "FlavorNotFound",
                                                     fmt::format("Can't admit new workloads: references "
                                                                 "missing ResourceFlavor(s): {}.",
                                                                 missing),
                                                     now));
    st["conditions"] = std::move(conds);
    const json::object* old = object_at(*cq.obj, {"status"});
    if (!old || !util::json_equal(*old, st)) {
      json::object next = *cq.obj;
      next["status"] = std::move(st);
      store_.update_shared(*cq_t, "", std::move(next), {}, "status");
    }
  }
  for (const auto& [key, lq] : lqs) {
    const std::string ns = namespace_of(*lq), name = name_of(*lq);
    const std::string cq_name = string_of(object_at(*lq, {"spec"}), "clusterQueue");
    std::int64_t pending = 0, reserving = 0;
    Usage used;
    for (const auto& w : wls) {
      if (w.ns != ns || w.lq != name || w.finished) continue;
      ++(w.admitted ? reserving : pending);
      if (!w.admitted) continue;
      add_usage(used, *w.obj, 1);
    }
    json::object st = object_at(*lq, {"status"}) ? *object_at(*lq, {"status"}) : json::object{};
    st["pendingWorkloads"] = pending;
    st["reservingWorkloads"] = reserving;
    st["admittedWorkloads"] = reserving;
    auto cq = cqs.find(cq_name);
    const std::vector<Group> none;
    st["flavorsReservation"] = usage_list(cq == cqs.end() ? none : cq->second.groups, used, false);
    // (v1beta1 LocalQueueStatus spells it flavorUsage, the ClusterQueue's flavorsUsage.)
    st["flavorUsage"] = usage_list(cq == cqs.end() ? none : cq->second.groups, used, false);
    json::array conds;
    if (const json::value* c = st.if_contains("conditions"); c && c->is_array()) conds = c->as_array();
    util::set_condition(conds, cq != cqs.end() ? kueue_condition(*lq, "Active", true, "Ready",
                                                                 "Can submit new workloads to localQueue", now)
                                               : kueue_condition(*lq, "Active", false, "ClusterQueueDoesNotExist",
                                                                 "Can't submit new workloads to clusterQueue", now));
    st["conditions"] = std::move(conds);
    const json::object* old = object_at(*lq, {"status"});
    if (!old || !util::json_equal(*old, st)) {
      json::object next = *lq;
      next["status"] = std::move(st);
      store_.update_shared(*lq_t, ns, std::move(next), {}, "status");
    }
  }
}

}  // namespace gpupool::embedded
