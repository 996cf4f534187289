#include "embedded/scheduler.hpp"

#include <algorithm>
#include <deque>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "common/json_path.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"
#include "embedded/volumes.hpp"
#include "gpupool/node.hpp"
#include "gpupool/scheduling.hpp"

namespace gpupool::embedded {
namespace {

using util::name_of;
using util::namespace_of;
using util::object_at;
using util::string_of;

using ctrl::terminal;
std::string key_of(const json::object& o) { return namespace_of(o) + "/" + name_of(o); }
std::string node_of(const json::object& pod) { return string_of(object_at(pod, {"spec"}), "nodeName"); }
std::string scheduler_of(const json::object& pod) {
  std::string s = string_of(object_at(pod, {"spec"}), "schedulerName");
  return s.empty() ? "default-scheduler" : s;
}

json::object pod_scheduled(bool ok, Clock::time_point now, const std::string& message = {}) {
  json::object c{{"type", "PodScheduled"},
                 {"status", ok ? "True" : "False"},
                 {"lastProbeTime", nullptr},
                 {"lastTransitionTime", to_rfc3339(now)}};
  if (!ok) {
    c["reason"] = "Unschedulable";
    c["message"] = message;
  }
  return c;
}

// Sets the condition in the pod's status (phase Pending when it has none); false when nothing changed.
bool apply_condition(json::object& pod, const json::object& cond) {
  json::object& status = util::ensure_object(pod, "status");
  if (!status.contains("phase")) status["phase"] = "Pending";
  json::value& conds = status["conditions"];
  if (!conds.is_array()) conds = json::array{};
  return util::set_condition(conds.as_array(), cond);
}

void set_pod_condition(Store& store, const std::string& ns, const std::string& name, const json::object& cond) {
  const auto& pods = store.type("", "pods");
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto cur = store.find(pods, ns, name);
    if (!cur) return;
    json::object next = *cur;
    if (!apply_condition(next, cond)) return;
    try {
      store.update_shared(pods, ns, std::move(next), {}, "status");
      return;
    } catch (const StatusError& e) {
      if (e.code() != 409) throw;
    }
  }
}

}  // namespace

namespace {

// bind_pod, starting from `cur` when the caller has just read the pod (the scheduler), else from
// the store.
void bind_pod_from(Store& store, const std::string& ns, const std::string& pod, const std::string& node,
                   std::shared_ptr<const json::object> cur) {
  const auto& pods = store.type("", "pods");
  // registry/core/pod/storage BindingREST.assignPod -> setPodHostAndAnnotations: one storage-level
  // update (GuaranteedUpdate) that sets spec.nodeName and, through podutil.UpdatePodCondition, the
  // PodScheduled=True condition; the pod update strategy's validation does not run (subresource
  // "binding", which the store writes with its status). A pod being deleted or already assigned is
  // refused; a concurrent write (resourceVersion changed) is retried on the new object, as
  // GuaranteedUpdate does.
  const json::object cond = pod_scheduled(true, store.clock().now());
  // assignPod's refusals: errors.NewConflict(api.Resource("pods/binding"), name, err).
  ResourceType binding = pods;
  binding.resource = "pods/binding";
  for (int attempt = 0;; ++attempt) {
    if (!cur || attempt > 0) cur = store.find(pods, ns, pod);
    if (!cur) throw StatusError::not_found(pods, pod);
    if (const json::object* md = object_at(*cur, {"metadata"}); md && md->contains("deletionTimestamp"))
      throw StatusError::conflict(binding, pod,
                                  fmt::format("pod {} is being deleted, cannot be assigned to a host", pod));
    if (const std::string assigned = node_of(*cur); !assigned.empty())
      throw StatusError::conflict(binding, pod,
                                  fmt::format("pod {} is already assigned to node \"{}\"", pod, assigned));
    if (const json::array* gates = util::array_at(*cur, {"spec"}, "schedulingGates"); gates && !gates->empty())
      throw StatusError::conflict(binding, pod, fmt::format("pod {} has non-empty .spec.schedulingGates", pod));
    // The copy carries the read resourceVersion: the store refuses it (409) if the pod changed since.
    json::object next = *cur;
    util::ensure_object(next, "spec")["nodeName"] = node;
    apply_condition(next, cond);
    try {
      store.update_shared(pods, ns, std::move(next), {}, "binding");
      return;
    } catch (const StatusError& e) {
      if (e.reason() != "Conflict" || attempt >= 16) throw;
    }
  }
}

}  // namespace

void bind_pod(Store& store, const std::string& ns, const std::string& pod, const std::string& node) {
  bind_pod_from(store, ns, pod, node, nullptr);
}

// ---- Scheduler -----------------------------------------------------------------------------------

// The scheduling queue (pkg/scheduler/internal/queue/scheduling_queue.go, kube-scheduler v1.32):
// `pending` is the activeQ; a pod that fails goes to `unschedulable` (unschedulablePods) with the
// time of that attempt and stays there until a cluster event that may make it schedulable moves
// it back (MoveAllToActiveOrBackoffQueue), or until flushUnschedulablePodsLeftover finds it older
// than podMaxInUnschedulablePodsDuration (DefaultPodMaxInUnschedulablePodsDuration = 5 min) on the
// cluster clock. A pod create or another pod failing moves nothing. (No backoffQ: a moved pod is
// retried at once, as this scheduler always did.)
constexpr std::chrono::minutes kPodMaxInUnschedulablePodsDuration{5};

struct Scheduler::Impl {
  SchedulerOptions options;
  std::mutex mu;
  PlacementState state;
  std::vector<NodeInfo> nodes;
  std::map<std::string, std::size_t> node_index;
  // pod key -> (node, requirements); hashed: looked up on every pod event, never walked in order.
  using Accounted = std::unordered_map<std::string, std::pair<std::string, PodRequirements>>;
  Accounted accounted;
  // node -> its pods' entries in `accounted` (summed into its NodeInfo: the order does not matter).
  // Pointers to the map's elements, which stay put until erased: adding one compares no key (a set
  // of ~30 key strings per node was scanned string by string on every binding).
  std::unordered_map<std::string, std::vector<Accounted::value_type*>> accounted_on;
  bool dirty = true;
  // Pods' requirements as from_pod_json reads them, decoded once per distinct spec (an owner's
  // replicas share one).
  PodRequirementsCache requirements;
  std::set<std::string> pending;
  std::map<std::string, Clock::time_point> unschedulable;  // pod key -> time of its last attempt
  // No entry of `unschedulable` is older than this (a lower bound: erasing or refreshing an entry
  // leaves it), so flush_leftover scans the map only when something may be due, not on every
  // sync (a scan per create made a long run of unschedulable pods quadratic).
  Clock::time_point unschedulable_since = Clock::time_point::max();
  // The recorder's cache of FailedScheduling events (tools/events eventCache): pod key -> the last
  // event, the pod's resourceVersion it names (part of the cache key) and whether its series was
  // written.
  struct RecordedEvent {
    std::string name, resource_version;
    bool series = false;
  };
  std::map<std::string, RecordedEvent> failure_event;
  bool busy = false;
  std::uint64_t attempts = 0;

  // A node added or changed, applied to the node cache alone (the scheduler's cache.UpdateNode):
  // its NodeInfo is rebuilt with the pods accounted on it, when what placement reads of it (name,
  // labels, taints, allocatable, spec.unschedulable) changed; an update of anything else (status
  // conditions, annotations, addresses) leaves the cache as it is. Rebuilding every node and
  // re-reading every bound pod, as `dirty` does, costs a pass over all pods per node update and
  // makes place() rebuild its per-constraint-set indexes and node table.
  void refresh_node(const json::object& obj) {
    std::optional<Node> n;
    try {
      n = Node::from_json(obj);
    } catch (const ValidationError&) {
      dirty = true;
      return;
    }
    auto it = node_index.find(n->name);
    if (it != node_index.end()) {
      const PlacementNode& cur = nodes[it->second].node;
      if (cur.labels == n->labels && cur.taints == n->taints && cur.allocatable == n->allocatable &&
          cur.unschedulable == n->unschedulable)
        return;
    } else {
      it = node_index.emplace(n->name, nodes.size()).first;
      nodes.emplace_back();
    }
    NodeInfo& info = nodes[it->second];
    info = state.make_node_info(std::move(*n));
    if (auto on = accounted_on.find(info.node.name); on != accounted_on.end())
      for (const Accounted::value_type* entry : on->second) state.add_pod(info, entry->second.second);
  }
  // `accounted` changes only through these, which keep `accounted_on` in step.
  void account(const std::string& key, const std::string& node, PodRequirements req) {
    if (auto [it, added] = accounted.emplace(key, std::make_pair(node, std::move(req))); added)
      accounted_on[node].push_back(&*it);
  }
  void unaccount(Accounted::iterator it) {
    if (auto on = accounted_on.find(it->second.first); on != accounted_on.end()) {
      auto& entries = on->second;
      if (auto e = std::find(entries.begin(), entries.end(), &*it); e != entries.end()) {
        *e = entries.back();
        entries.pop_back();
      }
      if (entries.empty()) accounted_on.erase(on);
    }
    accounted.erase(it);
  }

  bool serves(const json::object& pod) const { return serves_name(scheduler_of(pod)); }
  bool serves_name(std::string_view scheduler) const {
    return std::find(options.scheduler_names.begin(), options.scheduler_names.end(), scheduler) !=
           options.scheduler_names.end();
  }
  // MoveAllToActiveOrBackoffQueue: every unschedulable pod is tried again.
  void move_all_to_active() {
    for (const auto& [key, when] : unschedulable) pending.insert(key);
    unschedulable.clear();
  }
  // flushUnschedulablePodsLeftover: `currentTime.Sub(pInfo.Timestamp) > podMaxInUnschedulablePodsDuration`.
  void flush_leftover(Clock::time_point now) {
    if (unschedulable.empty() || now - unschedulable_since <= kPodMaxInUnschedulablePodsDuration) return;
    unschedulable_since = Clock::time_point::max();
    for (auto it = unschedulable.begin(); it != unschedulable.end();) {
      if (now - it->second > kPodMaxInUnschedulablePodsDuration) {
        pending.insert(it->first);
        it = unschedulable.erase(it);
      } else {
        unschedulable_since = std::min(unschedulable_since, it->second);
        ++it;
      }
    }
  }
  void add_unschedulable(const std::string& key, Clock::time_point now) {
    unschedulable[key] = now;  // AddUnschedulableIfNotPresent refreshes the timestamp
    unschedulable_since = std::min(unschedulable_since, now);
  }
};

namespace {

bool same_at(const json::object& a, const json::object& b, std::initializer_list<std::string_view> path) {
  const json::value* x = jpath::value_at(a, path);
  const json::value* y = jpath::value_at(b, path);
  if (!x || !y) return !x && !y;
  return util::json_equal(*x, *y);
}

// Node conditions without their heartbeat (nodeConditionsChanged strips LastHeartbeatTime).
json::array conditions_without_heartbeat(const json::object& node) {
  json::array out;
  if (const json::array* cs = util::array_at(node, {"status"}, "conditions"))
    for (const auto& c : *cs) {
      json::value v = c;
      if (v.is_object()) v.as_object().erase("lastHeartbeatTime");
      out.push_back(std::move(v));
    }
  return out;
}

// framework.NodeSchedulingPropertiesChange (pkg/scheduler/framework/events.go, v1.32): a node
// update matters to unschedulable pods when spec.unschedulable (UpdateNodeTaint), allocatable
// (UpdateNodeAllocatable), labels (UpdateNodeLabel), taints (UpdateNodeTaint), conditions other than
// their heartbeat (UpdateNodeCondition) or annotations (UpdateNodeAnnotation) changed.
bool node_scheduling_properties_changed(const json::object& old_node, const json::object& node) {
  return !same_at(old_node, node, {"spec", "unschedulable"}) || !same_at(old_node, node, {"status", "allocatable"}) ||
         !same_at(old_node, node, {"metadata", "labels"}) || !same_at(old_node, node, {"spec", "taints"}) ||
         !same_at(old_node, node, {"metadata", "annotations"}) ||
         !util::json_equal(conditions_without_heartbeat(old_node), conditions_without_heartbeat(node));
}

// isPodUpdated (scheduling_queue.go): an update to an unschedulable pod other than its status,
// resourceVersion, generation or managedFields moves it (the pod itself may now fit, e.g. a
// toleration added).
bool pod_updated(const json::object& old_pod, const json::object& pod) {
  // Compared in place (no stripped copies of both pods): every member but the skipped ones.
  const auto equal_without = [](const json::object& a, const json::object& b,
                                std::initializer_list<std::string_view> skip) {
    const auto skipped = [&](std::string_view k) { return std::find(skip.begin(), skip.end(), k) != skip.end(); };
    std::size_t na = 0, nb = 0;
    for (const auto& kv : b) nb += skipped(kv.key()) ? 0 : 1;
    for (const auto& kv : a) {
      if (skipped(kv.key())) continue;
      ++na;
      const json::value* v = b.if_contains(kv.key());
      if (!v || !util::json_equal(kv.value(), *v)) return false;
    }
    return na == nb;
  };
  if (!equal_without(old_pod, pod, {"status", "metadata"})) return true;
  const json::value *a = old_pod.if_contains("metadata"), *b = pod.if_contains("metadata");
  if (!a || !b) return !a != !b;
  if (a->is_object() && b->is_object())
    return !equal_without(a->as_object(), b->as_object(), {"resourceVersion", "generation", "managedFields"});
  return !util::json_equal(*a, *b);
}

}  // namespace

Scheduler::Scheduler(Store& store, const Clock& clock, SchedulerOptions options)
    : store_(store), clock_(clock), impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  subscription_ = store_.subscribe([this](const WatchEvent& e) {
    WritingAs as("kube-scheduler");
    on_event(e);
  });
  // The list comes in key order (namespace, name), which is nearly always the order of the
  // "namespace/name" strings too: each insert is hinted at the end (constant time when it is).
  for (const auto& p : store_.list(store_.type("", "pods"), "").items)
    if (node_of(*p).empty() && impl_->serves(*p) && !terminal(*p))
      impl_->pending.insert(impl_->pending.end(), key_of(*p));
}

Scheduler::~Scheduler() { store_.unsubscribe(subscription_); }

std::vector<std::string> Scheduler::unschedulable() const {
  std::lock_guard lk(impl_->mu);
  std::vector<std::string> out;
  for (const auto& [key, when] : impl_->unschedulable) out.push_back(key);
  return out;
}

std::uint64_t Scheduler::attempts() const {
  std::lock_guard lk(impl_->mu);
  return impl_->attempts;
}

void Scheduler::on_event(const WatchEvent& e) {
  if (!e.type_info || !e.object) return;
  const std::string& r = e.type_info->resource;
  const bool storage_class = e.type_info->group == "storage.k8s.io" && r == "storageclasses";
  if (!storage_class && (!e.type_info->group.empty() || (r != "pods" && r != "nodes" && r != "persistentvolumeclaims")))
    return;
  bool work = false;
  {
    std::lock_guard lk(impl_->mu);
    if (storage_class) {
      // VolumeBinding also registers StorageClass Add|Update: a class appearing decides whether an
      // unbound claim of it is immediate or WaitForFirstConsumer.
      if (e.type == EventType::Deleted) return;
      impl_->move_all_to_active();
    } else if (r == "persistentvolumeclaims") {
      // VolumeBinding's events (PersistentVolumeClaim Add|Update): a claim created or its phase
      // changed (bound) may let pods waiting for it pass the PreFilter.
      if (e.type == EventType::Deleted || (e.old_object && string_of(object_at(*e.old_object, {"status"}), "phase") ==
                                                               string_of(object_at(*e.object, {"status"}), "phase")))
        return;
      impl_->move_all_to_active();
    } else if (r == "nodes") {
      if (e.type == EventType::Deleted)
        impl_->dirty = true;  // rare: recount from the store
      else if (!impl_->dirty)
        impl_->refresh_node(*e.object);
      // NodeAdd moves every unschedulable pod; a NodeUpdate only when a scheduling property
      // changed. NodeDelete moves none: only PodTopologySpread's hard constraints and inter-pod
      // affinity (not modelled by place()) register it.
      if (e.type == EventType::Added ||
          (e.type == EventType::Modified &&
           (!e.old_object || node_scheduling_properties_changed(*e.old_object, *e.object))))
        impl_->move_all_to_active();
    } else {
      const std::string key = key_of(*e.object);
      const std::string node = node_of(*e.object);
      auto acc = impl_->accounted.find(key);
      const bool gone = e.type == EventType::Deleted || terminal(*e.object);
      if (gone) {
        impl_->pending.erase(key);
        impl_->unschedulable.erase(key);
        // EventAssignedPodDelete (NodeResourcesFit registers Pod Delete): an assigned pod deleted, or
        // finishing (it no longer counts against its node), frees resources. A pending pod going
        // away, or a finished one being deleted, frees nothing.
        const bool was_running =
            e.type == EventType::Deleted ? !terminal(*e.object) : e.old_object && !terminal(*e.old_object);
        const bool frees = acc != impl_->accounted.end() || (!node.empty() && was_running);
        if (acc != impl_->accounted.end()) {
          if (auto n = impl_->node_index.find(acc->second.first); n != impl_->node_index.end() && !impl_->dirty)
            impl_->state.remove_pod(impl_->nodes[n->second], acc->second.second);
          impl_->unaccount(acc);
        }
        if (frees) impl_->move_all_to_active();
        if (e.type == EventType::Deleted) impl_->failure_event.erase(key);
      } else if (!node.empty()) {
        impl_->pending.erase(key);
        impl_->unschedulable.erase(key);
        if (acc == impl_->accounted.end() && !impl_->dirty) {
          try {
            PodRequirements req = impl_->requirements.read(*e.object);
            if (auto n = impl_->node_index.find(node); n != impl_->node_index.end())
              impl_->state.add_pod(impl_->nodes[n->second], req);
            impl_->account(key, node, std::move(req));
          } catch (const ValidationError&) {}
        }
      } else if (impl_->serves(*e.object)) {
        if (auto u = impl_->unschedulable.find(key); u == impl_->unschedulable.end()) {
          impl_->pending.insert(key);
        } else if (e.old_object && pod_updated(*e.old_object, *e.object)) {
          impl_->unschedulable.erase(u);  // the pod itself changed: try it again
          impl_->pending.insert(key);
        }
      }
    }
    work = !impl_->pending.empty();
  }
  if (work) sync();
}

std::size_t Scheduler::sync() {
  WritingAs as("kube-scheduler");
  {
    std::lock_guard lk(impl_->mu);
    if (impl_->busy) return 0;
    impl_->busy = true;
    impl_->flush_leftover(clock_.now());
  }
  const auto& pods = store_.type("", "pods");
  const auto& events = store_.type("", "events");
  std::size_t bound = 0;
  // Batched fan-out: the bindings and events of up to kWakeBatch pods reach the HTTP watches'
  // queues as they commit but wake their readers once per batch (Store::WakeBatch).
  constexpr int kWakeBatch = 256;
  std::optional<Store::WakeBatch> batch(std::in_place, store_);
  int in_batch = 0;
  for (;;) {
    if (++in_batch > kWakeBatch) {
      batch.reset();
      batch.emplace(store_);
      in_batch = 1;
    }
    std::string key, ns, name, component;        // the pod's key, its namespace and name, its schedulerName
    std::shared_ptr<const json::object> stored;  // the pod as read (shared with the store, not copied)
    PodRequirements req;
    PlacementResult result;
    {
      std::lock_guard lk(impl_->mu);
      if (impl_->dirty) {
        // Rebuild the node cache: nodes, then every bound, unfinished pod.
        impl_->nodes.clear();
        impl_->node_index.clear();
        impl_->accounted.clear();
        impl_->accounted_on.clear();
        for (const auto& n : store_.list(store_.type("", "nodes"), "").items) {
          try {
            impl_->node_index[name_of(*n)] = impl_->nodes.size();
            impl_->nodes.push_back(impl_->state.make_node_info(Node::from_json(*n)));
          } catch (const ValidationError&) {
            impl_->node_index.erase(name_of(*n));
          }
        }
        const auto all_pods = store_.list(pods, "");
        impl_->accounted.reserve(all_pods.items.size());  // no rehash while a long run binds them
        for (const auto& p : all_pods.items) {
          const std::string node = node_of(*p);
          if (node.empty() || terminal(*p)) continue;
          try {
            PodRequirements r = impl_->requirements.read(*p);
            if (auto it = impl_->node_index.find(node); it != impl_->node_index.end())
              impl_->state.add_pod(impl_->nodes[it->second], r);
            impl_->account(key_of(*p), node, std::move(r));
          } catch (const ValidationError&) {}
        }
        impl_->dirty = false;
      }
      if (impl_->pending.empty()) {
        impl_->busy = false;
        break;
      }
      key = *impl_->pending.begin();
      impl_->pending.erase(impl_->pending.begin());
      const auto slash = key.find('/');  // key_of: "<namespace>/<name>"
      ns = key.substr(0, slash);
      name = key.substr(slash + 1);
      auto cur = store_.find(pods, ns, name);
      // skipPodSchedule: a pod being deleted is not scheduled.
      if (!cur || !node_of(*cur).empty() || terminal(*cur) ||
          object_at(*cur, {"metadata"})->contains("deletionTimestamp"))
        continue;
      component = scheduler_of(*cur);
      if (!impl_->serves_name(component)) continue;
      stored = std::move(cur);
      try {
        req = impl_->requirements.read(*stored);
      } catch (const ValidationError&) {
        continue;
      }
      // What VolumeBinding's PreFilter (a plugin of place()) reads of the pod's claims.
      resolve_claims(store_, ns, req.claims);
      result = place(req, impl_->nodes, impl_->state);
      ++impl_->attempts;
      if (result.chosen) {
        impl_->state.add_pod(impl_->nodes[*result.chosen], req);
        impl_->account(key, result.chosen_node, std::move(req));
      } else {
        impl_->add_unschedulable(key, clock_.now());
      }
    }
    const json::object& pod = *stored;
    const auto now = clock_.now();
    const auto wall = std::chrono::time_point_cast<std::chrono::system_clock::duration>(now);
    if (result.chosen) {
      try {
        bind_pod_from(store_, ns, name, result.chosen_node, stored);
        ++bound;
        // schedule_one.go handleSchedulingFailure / bind: Eventf(pod, nil, Normal, "Scheduled",
        // "Binding", "Successfully assigned %v/%v to %v"). One event per pod, as the real recorders
        // write: they aggregate only events about the same object (client-go tools/events
        // event_broadcaster.go getKey: type, action, reason, reporting controller and instance,
        // regarding, related; tools/record/events_cache.go EventAggregatorByReasonFunc and
        // getEventKey: source, involvedObject, type, reason [, message]), so the Scheduled events of
        // different pods never merge; a repeated FailedScheduling of one pod version does (below).
        util::record_series_event(store_, wall, pod, "Normal", "Scheduled", "Binding",
                                  fmt::format("Successfully assigned {}/{} to {}", ns, name, result.chosen_node),
                                  component);
      } catch (const StatusError&) {
        std::lock_guard lk(impl_->mu);
        impl_->dirty = true;  // lost a race: recount from the store
      }
    } else {
      // Every failed attempt records Warning FailedScheduling (action "Scheduling"). The recorder
      // keys its cache on type, action, reason, reporter and the pod reference with its
      // resourceVersion, not on the message: an attempt on the same pod version becomes a series
      // (the first repeat writes series {count: 2}; later ones stay in the recorder's cache), one on
      // a newer version (the PodScheduled condition written in between) is a new event.
      const std::string message = result.failed_scheduling_message();
      const std::string rv = string_of(object_at(pod, {"metadata"}), "resourceVersion");
      std::optional<Impl::RecordedEvent> last;
      {
        std::lock_guard lk(impl_->mu);
        if (auto it = impl_->failure_event.find(key); it != impl_->failure_event.end()) last = it->second;
      }
      Impl::RecordedEvent rec;
      if (last && last->resource_version == rv) {
        rec = *last;
        if (!rec.series) {
          rec.series = true;
          try {
            store_.mutate(
                events, ns, rec.name,
                [&](json::object& ev) {
                  ev["series"] = json::object{{"count", 2}, {"lastObservedTime", to_rfc3339_micro(now)}};
                },
                util::events_api_writes(store_, wall));
          } catch (const StatusError&) {}
        }
      } else {
        try {
          rec.name = util::record_series_event(store_, wall, pod, "Warning", "FailedScheduling", "Scheduling", message,
                                               component);
        } catch (const StatusError&) {
          continue;  // the pod's namespace went meanwhile
        }
        rec.resource_version = rv;
      }
      {
        std::lock_guard lk(impl_->mu);
        impl_->failure_event[key] = rec;
      }
      set_pod_condition(store_, ns, name, pod_scheduled(false, now, message));
    }
  }
  return bound;
}

}  // namespace gpupool::embedded
