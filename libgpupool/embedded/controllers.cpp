// embedded/controllers.cpp — the Controllers registry: feeds each owner kind's plan function
// (controller_deployment.cpp, controller_replicaset.cpp, controller_job.cpp,
// controller_kubeflow.cpp) from the store's events and carries the plans out.
#include "embedded/controllers.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "embedded/controller_kueue.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"
#include "gpupool/quantity.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

namespace {

/// The controller that records events about a `resource` it owns (kube-controller-manager's names).
const char* controller_name(std::string_view resource) {
  return resource == "jobs"           ? "job-controller"
         : resource == "cronjobs"     ? "cronjob-controller"
         : resource == "daemonsets"   ? "daemonset-controller"
         : resource == "statefulsets" ? "statefulset-controller"
         : resource == "deployments"  ? "deployment-controller"
         : resource == "trainjobs"    ? "trainjob-controller"
         : resource == "jobsets"      ? "jobset-controller"
                                      : "replicaset-controller";
}

// The active reference a CronJob's plan made for a Job it creates: its uid and resourceVersion
// once made; dropped when `job` is none of its (no uid).
void fill_job_reference(Plan& plan, const json::object& job) {
  if (!plan.status) return;
  json::value* active = plan.status->if_contains("active");
  if (!active || !active->is_array()) return;
  json::array& refs = active->as_array();
  const std::string name = name_of(job), job_uid = uid_of(job);
  const bool listed = !job_uid.empty() && std::any_of(refs.begin(), refs.end(), [&](const json::value& r) {
    return r.is_object() && string_of(&r.as_object(), "uid") == job_uid;
  });
  for (auto it = refs.begin(); it != refs.end(); ++it) {
    if (!it->is_object() || string_of(&it->as_object(), "name") != name || it->as_object().contains("uid")) continue;
    if (job_uid.empty() || listed)
      refs.erase(it);
    else
      *it = cronjob_job_reference(job);
    break;
  }
  if (refs.empty()) plan.status->erase("active");
}

// A node event that may change a DaemonSet's placements: an added or deleted node, or an update
// of its labels, spec (taints, unschedulable) or name.
bool daemonsets_may_change(const WatchEvent& e) {
  if (e.type != EventType::Modified || !e.old_object) return true;
  for (const auto& path : {std::initializer_list<std::string_view>{"metadata", "labels"},
                           std::initializer_list<std::string_view>{"spec"}}) {
    const json::object* a = object_at(*e.old_object, path);
    const json::object* b = object_at(*e.object, path);
    if (!a != !b || (a && !util::json_equal(*a, *b))) return true;
  }
  return false;
}

// The controllers that adopt orphans of `t` (ctrl::claim), or null.
const std::vector<std::pair<std::string, std::string>>* adopters_of(const ResourceType& t) {
  static const std::vector<std::pair<std::string, std::string>> pods{
      {"apps", "replicasets"}, {"apps", "daemonsets"}, {"apps", "statefulsets"}, {"batch", "jobs"}};
  static const std::vector<std::pair<std::string, std::string>> replicasets{{"apps", "deployments"}};
  static const std::vector<std::pair<std::string, std::string>> revisions{{"apps", "daemonsets"},
                                                                          {"apps", "statefulsets"}};
  if (t.group.empty() && t.resource == "pods") return &pods;
  if (t.group == "apps" && t.resource == "replicasets") return &replicasets;
  if (t.group == "apps" && t.resource == "controllerrevisions") return &revisions;
  return nullptr;
}

bool labels_changed(const json::object& a, const json::object& b) {
  const json::object* la = object_at(a, {"metadata", "labels"});
  const json::object* lb = object_at(b, {"metadata", "labels"});
  return !la != !lb || (la && !util::json_equal(*la, *lb));
}

bool is_owner_kind(const ResourceType& t) {
  return (t.group == "apps" && (t.resource == "deployments" || t.resource == "replicasets" ||
                                t.resource == "daemonsets" || t.resource == "statefulsets")) ||
         (t.group == "batch" && (t.resource == "jobs" || t.resource == "cronjobs")) ||
         (t.group == "kubeflow.org" &&
          (t.resource == "mpijobs" || t.resource == "tfjobs" || t.resource == "pytorchjobs")) ||
         (t.group == "trainer.kubeflow.org" && t.resource == "trainjobs") ||
         (t.group == "jobset.x-k8s.io" && t.resource == "jobsets");
}
}  // namespace

Controllers::Controllers(Store& store, const Clock& clock, bool kubeflow, std::int64_t terminated_pod_gc_threshold)
    : store_(store), clock_(clock), kubeflow_(kubeflow), terminated_threshold_(terminated_pod_gc_threshold) {
  subscription_ = store_.subscribe([this](const WatchEvent& e) {
    WritingAs as("kube-controller-manager");
    on_event(e);
  });
  kueue_ = std::make_unique<KueueController>(store_, clock_);
}

Controllers::~Controllers() { store_.unsubscribe(subscription_); }

void Controllers::sync() {
  WritingAs as("kube-controller-manager");
  drain();
}

void Controllers::resync() {
  WritingAs as("kube-controller-manager");
  {
    std::lock_guard lk(mu_);
    for (const auto* t : store_.types()) {
      if (!is_owner_kind(*t)) continue;
      for (const auto& o : store_.list(*t, "").items) {
        Key k{t->group, t->resource, namespace_of(*o), name_of(*o)};
        if (queued_.insert(k).second) queue_.push_back(k);
        if (t->group == "batch" && t->resource == "jobs" && ttl_job_needs_cleanup(*o))  // its TTL timer
          if (Key ttl{"batch", "ttl-jobs", k.ns, k.name}; queued_.insert(ttl).second) queue_.push_back(ttl);
      }
    }
  }
  // What the pod GC's next runs find (a restart forgets its timers).
  const ResourceType& nodes = store_.type("", "nodes");
  std::int64_t terminated = 0;
  for (const auto& p : store_.list(store_.type("", "pods"), "").items) {
    const std::string node = string_of(object_at(*p, {"spec"}), "nodeName");
    gc_pod_later(*p, !node.empty() && !store_.find(nodes, "", node));
    terminated += pod_terminated(*p) ? 1 : 0;
  }
  {
    std::lock_guard lk(mu_);
    terminated_ = terminated;
  }
  gc_terminated_later();
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
          // The deployment controller's own status writes queue it again, as its informer's
          // update event does: what it does next reads the status it wrote (a complete rollout
          // then cleans up old ReplicaSets, cleanupDeployment).
          own_write = e.type == EventType::Modified && t.resource != "deployments";
          written.erase(w);
        }
        if (written.empty() || e.type == EventType::Deleted) own_status_.erase(it);
      }
    }
    if (e.type == EventType::Deleted && t.group == "batch" && t.resource == "jobs") {
      std::lock_guard lk(mu_);
      job_backoff_.erase(self);  // deleteJob: removeBackoffRecord
    }
    if (e.type != EventType::Deleted && !own_write) keys.push_back(std::move(self));
  }
  // A change to an owned object wakes its controller owner.
  // (At most one reference is the controller: validation refuses a second.)
  if (const json::object* ref = util::controller_ref(*e.object)) {
    const ResourceType* owner = store_.find_kind(string_of(ref, "apiVersion"), string_of(ref, "kind"));
    if (owner && is_owner_kind(*owner))
      keys.push_back({owner->group, owner->resource, namespace_of(*e.object), string_of(ref, "name")});
  }
  // An orphan that came, or changed its labels, or lost its controller reference: the owners that
  // select it may adopt it (replica_set.go addPod / updatePod getPodReplicaSets, daemon_controller.go
  // getDaemonSetsForPod, stateful_set.go getStatefulSetsForPod, job_controller.go getPodJobs,
  // deployment_controller.go getDeploymentsForReplicaSet, daemon update.go getDaemonSetsForHistory).
  if (e.type != EventType::Deleted && t.namespaced && !util::controller_ref(*e.object) && !deleting(*e.object))
    if (const auto* adopters = adopters_of(t);
        adopters && (e.type == EventType::Added || !e.old_object || util::controller_ref(*e.old_object) ||
                     labels_changed(*e.old_object, *e.object)))
      for (const auto& [group, resource] : *adopters)
        for (const auto& o : store_.list(store_.type(group, resource), namespace_of(*e.object)).items)
          if (owner_selects(*o, *e.object)) keys.push_back({group, resource, namespace_of(*o), name_of(*o)});
  // daemon_controller.go addNode / updateNode / deleteNode: a node that comes, changes or goes may
  // change where every DaemonSet runs (status-only updates are not worth a look, as
  // shouldIgnoreNodeUpdate has it: labels, taints and spec decide).
  if (t.group.empty() && t.resource == "nodes" && daemonsets_may_change(e)) {
    if (const ResourceType* ds = store_.find_type("apps", "v1", "daemonsets"))
      for (const auto& d : store_.list(*ds, "").items)
        keys.push_back({"apps", "daemonsets", namespace_of(*d), name_of(*d)});
  }
  // deployment_controller.go deletePod: a pod of a Recreate Deployment's ReplicaSet deleted may
  // be the last old pod the rollout waits for.
  if (e.type == EventType::Deleted && t.group.empty() && t.resource == "pods")
    if (const json::object* rs_ref = util::controller_ref(*e.object);
        rs_ref && string_of(rs_ref, "kind") == "ReplicaSet")
      if (const auto rs =
              store_.find(store_.type("apps", "replicasets"), namespace_of(*e.object), string_of(rs_ref, "name")))
        if (const json::object* d_ref = util::controller_ref(*rs); d_ref && string_of(d_ref, "kind") == "Deployment")
          if (const auto d =
                  store_.find(store_.type("apps", "deployments"), namespace_of(*rs), string_of(d_ref, "name"));
              d && string_of(object_at(*d, {"spec", "strategy"}), "type") == "Recreate")
            keys.push_back({"apps", "deployments", namespace_of(*d), name_of(*d)});
  // What admission decided on changed: retry the owners whose pods it refused.
  if (const bool quota = t.group.empty() && t.resource == "resourcequotas";
      quota || (t.group.empty() && t.resource == "limitranges") ||
      (t.group == "scheduling.k8s.io" && t.resource == "priorityclasses") ||
      (t.group == "node.k8s.io" && t.resource == "runtimeclasses")) {
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
  // job_controller.go enqueueOrphanPod: a pod with the Job controller's tracking finalizer that no
  // Job will count loses it.
  if (t.group.empty() && t.resource == "pods" && e.type != EventType::Deleted &&
      job_orphan_candidate(store_, *e.object))
    keys.push_back({"batch", "orphan-pods", namespace_of(*e.object), name_of(*e.object)});
  // ttlafterfinished_controller.go addJob / updateJob: a finished Job with a TTL is queued.
  if (t.group == "batch" && t.resource == "jobs" && e.type != EventType::Deleted && ttl_job_needs_cleanup(*e.object))
    keys.push_back({"batch", "ttl-jobs", namespace_of(*e.object), name_of(*e.object)});
  if (t.group.empty() && (t.resource == "pods" || t.resource == "nodes")) gc_pods_later(e);
  if (keys.empty()) return;
  {
    std::lock_guard lk(mu_);
    for (auto& k : keys)
      if (queued_.insert(k).second) queue_.push_back(std::move(k));
  }
  drain();
}

namespace {
// gc_controller.go: the pod GC's loop runs every gcCheckPeriod; a missing node's pods are deleted
// quarantineTime after the run that saw them first (its nodeQueue.AddAfter).
constexpr std::chrono::seconds kGcCheckPeriod{20}, kQuarantineTime{40};
// The pod GC's first run at or after `t` (runs at whole multiples of the period on the clock).
Clock::time_point next_gc_run(Clock::time_point t) {
  const auto into = t.time_since_epoch() % Clock::duration(kGcCheckPeriod);
  return into == Clock::duration::zero() ? t : t + (Clock::duration(kGcCheckPeriod) - into);
}
}  // namespace

void Controllers::gc_terminated_later() {
  std::lock_guard lk(mu_);
  if (terminated_threshold_ <= 0 || terminated_ <= terminated_threshold_) return;
  const Key key{"", "pods", "", ""};  // (no pod has an empty name)
  const auto when = next_gc_run(clock_.now());
  auto [it, added] = timers_.emplace(key, when);
  if (!added) it->second = std::min(it->second, when);
}

void Controllers::gc_pods_later(const WatchEvent& e) {
  if (e.type_info->resource == "pods") {  // the terminated pods gcTerminated counts
    const json::object* before = e.type == EventType::Added     ? nullptr
                                 : e.type == EventType::Deleted ? e.object.get()
                                                                : e.old_object.get();
    const int delta = (e.type != EventType::Deleted && pod_terminated(*e.object) ? 1 : 0) -
                      (before && pod_terminated(*before) ? 1 : 0);
    if (delta != 0) {
      {
        std::lock_guard lk(mu_);
        terminated_ += delta;
      }
      if (delta > 0) gc_terminated_later();
    }
  }
  if (e.type_info->resource == "nodes") {
    if (e.type == EventType::Deleted) {
      // Its pods (if any) are orphans now.
      for (const auto& p : store_.list(store_.type("", "pods"), "").items)
        if (string_of(object_at(*p, {"spec"}), "nodeName") == name_of(*e.object)) {
          gc_pod_later(*p, true);
          break;
        }
    }
    return;
  }
  if (e.type == EventType::Deleted) return;
  const std::string node = string_of(object_at(*e.object, {"spec"}), "nodeName");
  gc_pod_later(*e.object, !node.empty() && !store_.find(store_.type("", "nodes"), "", node));
}

void Controllers::gc_pod_later(const json::object& pod, bool node_missing) {
  const std::string node = string_of(object_at(pod, {"spec"}), "nodeName");
  std::optional<std::pair<Key, Clock::time_point>> timer;
  if (node_missing)  // gcOrphaned
    timer = {Key{"", "nodes", "", node}, next_gc_run(clock_.now()) + kQuarantineTime};
  else if (node.empty() && deleting(pod))  // gcUnscheduledTerminating
    timer = {Key{"", "pods", namespace_of(pod), name_of(pod)}, next_gc_run(clock_.now())};
  if (!timer) return;
  std::lock_guard lk(mu_);
  auto [it, added] = timers_.emplace(timer->first, timer->second);
  if (!added) it->second = std::min(it->second, timer->second);
}

void Controllers::drain() {
  {
    std::lock_guard lk(mu_);
    if (draining_) return;
    draining_ = true;
  }
  // One owner makes at most kMaxBurstSyncsPerSecond syncs that create or delete a whole burst per
  // second of the cluster's clock (kBurstReplicas, 500 pods each): a write asking for millions of
  // pods returns once 10,000 exist, instead of the request creating them all before it answers
  // (the controllers run inside the write). Other syncs are not throttled, as a workqueue only
  // dedupes a key (a Deployment changed five times in a second rolls out each at once, as
  // kube-controller-manager's does); kMaxSyncsPerSecond only breaks a loop of controllers writing
  // against each other. A sync over a limit is deferred, not dropped (as a rate-limited workqueue
  // requeues a key): it runs in a later second, at the next event or the next sync().
  constexpr int kMaxBurstSyncsPerSecond = 20;
  constexpr int kMaxSyncsPerSecond = 1000;
  for (int i = 0; i < 100000; ++i) {
    Key k;
    {
      const auto second = std::chrono::duration_cast<std::chrono::seconds>(clock_.now().time_since_epoch()).count();
      std::lock_guard lk(mu_);
      if (!timers_.empty()) {  // owners whose requeue time has come (Plan::requeue_after)
        const auto now = clock_.now();
        for (auto it = timers_.begin(); it != timers_.end();) {
          if (it->second > now) {
            ++it;
            continue;
          }
          if (queued_.insert(it->first).second) queue_.push_back(it->first);
          it = timers_.erase(it);
        }
      }
      if (sync_second_ != second) {
        sync_second_ = second;
        syncs_.clear();
        for (const auto& d : deferred_)
          if (queued_.insert(d).second) queue_.push_back(d);
        deferred_.clear();
      }
      if (queue_.empty()) break;
      k = queue_.front();
      queue_.pop_front();
      queued_.erase(k);
      const SyncCount& done = syncs_[k];
      if (done.bursts >= kMaxBurstSyncsPerSecond || done.all >= kMaxSyncsPerSecond) {
        deferred_.insert(k);
        continue;
      }
    }
    last_writes_ = 0;
    struct Count {  // counted once the sync is done, whatever it threw
      Controllers& c;
      const Key& k;
      ~Count() {
        std::lock_guard lk(c.mu_);
        SyncCount& n = c.syncs_[k];
        ++n.all;
        if (c.last_writes_ >= static_cast<std::size_t>(kBurstReplicas)) ++n.bursts;
      }
    } count{*this, k};
    try {
      reconcile(k);
    } catch (const StatusError&) {
      // Conflicts and races resolve on the next event for this owner.
    } catch (const std::exception&) {
      // Anything else (an object no controller can read, memory): that owner's sync is lost,
      // the other controllers go on (draining_ must be reset below).
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
  // The pod GC's timers (gc_pod_later): a missing node, an unscheduled pod being deleted.
  if (key.group.empty() && key.resource == "nodes") return podgc_orphaned(store_, key.name, clock_.now());
  if (key.group.empty() && key.resource == "pods" && key.name.empty())
    return podgc_terminated(store_, terminated_threshold_, clock_.now());
  if (key.group.empty() && key.resource == "pods")
    return podgc_unscheduled_terminating(store_, key.ns, key.name, clock_.now());
  if (key.group == "batch" && key.resource == "orphan-pods") return release_job_orphan(store_, key.ns, key.name);
  if (key.group == "batch" && key.resource == "ttl-jobs") {
    // The TTL not expired yet: enqueueAfter(job, timeLeft), on the cluster's clock.
    if (const auto left = ttl_after_finished(store_, key.ns, key.name, clock_.now())) {
      std::lock_guard lk(mu_);
      const auto at = clock_.now() + *left;
      auto [it, added] = timers_.emplace(key, at);
      if (!added) it->second = std::min(it->second, at);
    }
    return;
  }
  const ResourceType& t = store_.type(key.group, key.resource);
  auto owner = store_.find(t, key.ns, key.name);
  if (!owner) return;
  const std::string uid = uid_of(*owner);
  const auto now = clock_.now();
  const auto when = std::chrono::time_point_cast<std::chrono::system_clock::duration>(now);  // events' time
  Plan plan;
  // The built-in controllers claim what they select (controller_ref_manager.go): adopt orphans,
  // release what no longer matches (ctrl::claim).
  const ClaimRules selected{[&](const json::object& o) { return owner_selects(*owner, o); }};
  const auto claimed = [&](const std::string& group, const std::string& resource, const ClaimRules& rules) {
    return claim(store_, store_.type(group, resource), *owner, rules);
  };
  if (key.resource == "deployments")
    // deployment_controller.go getReplicaSetsForDeployment: ClaimReplicaSets.
    plan = plan_deployment(
        *owner, claimed("apps", "replicasets", selected),
        [&](const json::object& rs) {
          return owned(key.ns, uid_of(rs), {{"", "pods"}});
        },
        now);
  else if (key.resource == "replicasets")
    // replica_set.go syncReplicaSet: claimPods over controller.FilterActivePods.
    plan = plan_replicaset(*owner, claimed("", "pods", {selected.match, true, true}), now);
  else if (key.resource == "jobs") {
    // job_controller.go getPodsForJob: ClaimPods, adding the tracking finalizer to what it adopts.
    ClaimRules rules = selected;
    rules.finalizer = kJobTrackingFinalizer;
    JobBackoffRecord backoff;
    {
      std::lock_guard lk(mu_);
      if (auto it = job_backoff_.find(key); it != job_backoff_.end() && it->second.first == uid)
        backoff = it->second.second;
    }
    plan = plan_job(*owner, claimed("", "pods", rules), now, backoff);
    std::lock_guard lk(mu_);
    if (backoff.failures == 0)
      job_backoff_.erase(key);
    else
      job_backoff_[key] = {uid, backoff};
  } else if (key.resource == "cronjobs")
    plan = plan_cronjob(*owner, owned(key.ns, uid, {{"batch", "jobs"}}), now);
  else if (key.resource == "statefulsets") {
    Claims claims;
    for (auto& c : store_.list(store_.type("", "persistentvolumeclaims"), key.ns).items)
      claims.emplace(name_of(*c), std::move(c));
    // stateful_set.go sync: adoptOrphanRevisions (adopts, never releases), then
    // getPodsForStatefulSet: ClaimPods with the isMemberOf filter.
    Children children = claimed("apps", "controllerrevisions", {selected.match, false, false, true});
    const std::string set = name_of(*owner);
    for (auto& p : claimed("", "pods", {[&](const json::object& pod) {
                             return selected.match(pod) && statefulset_member(name_of(pod), set);
                           }}))
      children.push_back(std::move(p));
    plan = plan_statefulset(*owner, children, claims, now);
  } else if (key.resource == "daemonsets") {
    const auto nodes = store_.list(store_.type("", "nodes"), "").items;
    std::vector<const json::object*> node_objects;
    node_objects.reserve(nodes.size());
    for (const auto& n : nodes) node_objects.push_back(n.get());
    // daemon_controller.go getDaemonPods (ClaimPods), update.go controlledHistories
    // (ClaimControllerRevisions).
    Children children = claimed("", "pods", selected);
    for (auto& r : claimed("apps", "controllerrevisions", selected)) children.push_back(std::move(r));
    plan = plan_daemonset(*owner, children, node_objects, now);
  } else if (!kubeflow_)
    return;  // no operator runs
  else if (key.resource == "jobsets")
    plan = plan_jobset(*owner, owned(key.ns, uid, {{"batch", "jobs"}, {"", "services"}}), now);
  else if (key.resource == "trainjobs") {
    const auto runtime = trainjob_runtime(store_, *owner);
    plan = plan_trainjob(*owner, runtime.get(), owned(key.ns, uid, {{"jobset.x-k8s.io", "jobsets"}}), now);
  } else
    plan = plan_kubeflow_job(
        *owner,
        owned(key.ns, uid, {{"", "pods"}, {"", "services"}, {"batch", "jobs"}, {"", "configmaps"}, {"", "secrets"}}),
        now);

  // The ReplicaSet and Job controllers create pods in slow-start batches and stop at the first
  // refusal (pkg/controller/replicaset/replica_set.go manageReplicas, job_controller.go
  // manageJob); the pod control records it on the owner (pkg/controller/controller_utils.go
  // createPods: FailedCreate, "Error creating: %v").
  const bool pod_owner = key.resource == "replicasets" || key.resource == "jobs" || key.resource == "daemonsets";
  std::optional<StatusError> refused;
  std::int64_t not_created = 0;
  last_writes_ = plan.create.size() + plan.remove.size();
  for (std::size_t ci = 0; ci < plan.create.size(); ++ci) {
    auto& c = plan.create[ci];
    const bool pod = pod_owner && c.group.empty() && c.resource == "pods";
    if (pod && refused) {
      ++not_created;
      continue;
    }
    const std::string made_name = name_of(c.object);
    try {
      auto made = store_.create_shared(store_.type(c.group, c.resource), key.ns, std::move(c.object));
      if (key.resource == "cronjobs") fill_job_reference(plan, *made);
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
      // syncCronJob when its Job is not made: not in the active list, its time not taken, no
      // SuccessfulCreate (the status computed before is still written).
      auto unschedule = [&](const std::string& job) {
        fill_job_reference(plan, json::object{{"metadata", json::object{{"name", job}}}});
        if (plan.status) {
          if (const json::value* last = object_at(*owner, {"status"})
                                            ? object_at(*owner, {"status"})->if_contains("lastScheduleTime")
                                            : nullptr)
            (*plan.status)["lastScheduleTime"] = *last;
          else
            plan.status->erase("lastScheduleTime");
        }
        std::erase_if(plan.events, [&](const Plan::Event& ev) { return ev.message == "Created job " + job; });
      };
      if (e.code() == 409 && key.resource == "cronjobs") {
        // syncCronJob: a Job of that name it controls (its status write was lost) is taken into
        // the active list; another's is left alone.
        auto existing = store_.find(store_.type(c.group, c.resource), key.ns, made_name);
        if (existing && util::controller_uid(*existing) == uid)
          fill_job_reference(plan, *existing);
        else
          unschedule(made_name);
        continue;
      }
      if (e.code() == 409) continue;  // AlreadyExists: a previous round made it
      if (key.resource == "cronjobs" || key.resource == "statefulsets") {
        // A refused create (quota, an admission plugin): recorded as the controllers word it
        // (cronjob_controllerv2.go "Error creating job: %v"; stateful_pod_control.go
        // recordPodEvent / recordClaimEvent), the rest of the round's creates dropped (the slow
        // start stops at an error), and tried again later, as the workqueue's rate-limited
        // requeue does; the status is written.
        const std::string set = name_of(*owner);
        std::string message;
        if (key.resource == "cronjobs") {
          unschedule(made_name);
          message = "Error creating job: " + e.status_message();
        } else {
          const std::string ord = made_name.substr(made_name.rfind('-') + 1);
          message =
              c.resource == "pods"
                  ? fmt::format("create Pod {} in StatefulSet {} failed error: {}", made_name, set, e.status_message())
                  : fmt::format("create Claim {} for Pod {}-{} in StatefulSet {} failed error: {}", made_name, set, ord,
                                set, e.status_message());
          // No SuccessfulCreate for it or for what was not tried after it.
          std::set<std::string> untried{made_name};
          for (std::size_t rest = ci + 1; rest < plan.create.size(); ++rest)
            untried.insert(name_of(plan.create[rest].object));
          std::erase_if(plan.events, [&](const Plan::Event& ev) {
            if (ev.reason != "SuccessfulCreate") return false;
            for (const auto& n : untried)
              if (ev.message.find(" " + n + " ") != std::string::npos) return true;
            return false;
          });
        }
        plan.events.push_back({"Warning", "FailedCreate", message});
        constexpr std::chrono::seconds kRetry{10};
        plan.requeue_after = plan.requeue_after ? std::min<Clock::duration>(*plan.requeue_after, kRetry) : kRetry;
        break;
      }
      if (!pod) throw;
      refused = e;
      ++not_created;
      util::record_event(store_, when, *owner, "Warning", "FailedCreate", "Error creating: " + e.status_message(),
                         controller_name(key.resource), {}, "");
    }
  }
  if (pod_owner) {
    std::lock_guard lk(mu_);
    if (refused)
      refused_[key.ns].insert(key);
    else if (auto it = refused_.find(key.ns); it != refused_.end() && it->second.erase(key) && it->second.empty())
      refused_.erase(it);
  }
  if (key.resource == "jobs" && not_created > 0 && plan.status) {
    // Pods never created are not active.
    json::object& st = *plan.status;
    const std::int64_t active = std::max<std::int64_t>(0, int_of(&st, "active", 0) - not_created);
    if (active)
      st["active"] = active;
    else
      st.erase("active");
    if (const json::object* old = object_at(*owner, {"status"}); old && util::json_equal(*old, st)) plan.status.reset();
  }
  if (key.resource == "replicasets") {
    // replica_set_utils.go calculateStatus: a refused create sets ReplicaFailure (reason
    // FailedCreate, the error as message) once; a sync without error removes it.
    json::object st = plan.status                     ? *plan.status
                      : object_at(*owner, {"status"}) ? *object_at(*owner, {"status"})
                                                      : json::object{};
    json::array conds;
    if (const json::value* c = st.if_contains("conditions"); c && c->is_array()) conds = c->as_array();
    const bool has = util::find_condition(&conds, "ReplicaFailure") != nullptr;
    bool changed = false;
    if (refused && !has) {
      conds.push_back(json::object{{"type", "ReplicaFailure"},
                                   {"status", "True"},
                                   {"lastTransitionTime", to_rfc3339(now)},
                                   {"reason", "FailedCreate"},
                                   {"message", refused->status_message()}});
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
      if (conds.empty())
        st.erase("conditions");
      else
        st["conditions"] = std::move(conds);
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
      util::record_event(
          store_, when, *owner, "Normal", "ScalingReplicaSet",
          fmt::format("Scaled {} replica set {} from {} to {}", replicas_of(*written, 0) > before ? "up" : "down",
                      name_of(*written), before, replicas_of(*written, 0)),
          controller_name(key.resource), {}, "");
  }
  // A finalizer taken off (a strategic merge patch's $deleteFromPrimitiveList/finalizers, by name):
  // whether the child is still there.
  const auto unfinalize = [&](const std::string& group, const std::string& resource, const std::string& name,
                              const std::string& finalizer) {
    try {
      store_.mutate(store_.type(group, resource), key.ns, name,
                    [&](json::object& o) { set_finalizer(ensure_object(o, "metadata"), finalizer, false); });
    } catch (const StatusError& e) {
      if (e.code() != 404) throw;
    }
  };
  for (const auto& r : plan.remove) {
    try {
      if (!r.finalizer_first.empty()) unfinalize(r.group, r.resource, r.name, r.finalizer_first);
      // The CronJob controller deletes its Jobs in the background (injection.go DeleteJob).
      DeleteOptions how;
      if (key.resource == "cronjobs") how.propagation = Propagation::Background;
      store_.remove(store_.type(r.group, r.resource), key.ns, r.name, how);
      // controller_utils.go DeletePod: SuccessfulDelete "Deleted pod: %v".
      if (pod_owner && r.group.empty() && r.resource == "pods")
        util::record_event(store_, when, *owner, "Normal", "SuccessfulDelete", "Deleted pod: " + r.name,
                           controller_name(key.resource), {}, "");
    } catch (const StatusError& e) {
      if (e.code() != 404) throw;
    }
  }
  // The status subresource: the owner as read, resourceVersion its precondition (a conflict if
  // it changed meanwhile).
  const auto write_status = [&](json::object next) {
    auto written = store_.update_shared(t, key.ns, std::move(next), {}, t.has_status ? "status" : "");
    if (written != owner) {
      std::lock_guard lk(mu_);
      own_status_[key].push_back(written);
    }
    owner = std::move(written);
  };
  if (plan.status_first) {
    json::object next = *owner;
    next["status"] = std::move(*plan.status_first);
    write_status(std::move(next));
  }
  for (const auto& u : plan.unfinalize) unfinalize(u.group, u.resource, u.name, u.finalizer);
  // The revision annotation goes with the status, as the deployment controller writes it
  // (sync.go: SetDeploymentRevision, then UpdateStatus, whose strategy keeps the new annotations
  // and does not bump metadata.generation).
  if (plan.status || (!plan.owner_annotations.empty() && t.has_status)) {
    json::object next = *owner;
    if (plan.status) next["status"] = std::move(*plan.status);
    if (!plan.owner_annotations.empty()) {
      auto& ann = ensure_object(ensure_object(next, "metadata"), "annotations");
      for (const auto& kv : plan.owner_annotations) ann[kv.key()] = kv.value();
      plan.owner_annotations.clear();
    }
    write_status(std::move(next));
  }
  for (const auto& ev : plan.events)
    util::record_event(store_, when, *owner, ev.type, ev.reason, ev.message, controller_name(key.resource), {}, "");
  if (plan.requeue_after) {
    std::lock_guard lk(mu_);
    if (plan.requeue_after->count() <= 0) {
      if (queued_.insert(key).second) queue_.push_back(key);
    } else {
      const auto at = now + *plan.requeue_after;
      auto [it, added] = timers_.emplace(key, at);
      if (!added) it->second = std::min(it->second, at);
    }
  }
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
