// embedded/controllers_util.hpp — small JSON helpers shared by the scheduler, the controllers and
// the simulated kubelet (private to the embedded layer).
#pragma once

#include <limits>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_path.hpp"
#include "embedded/clock.hpp"

namespace gpupool::embedded {
class Store;
struct WriteOptions;
struct ResourceType;
}  // namespace gpupool::embedded

namespace gpupool::embedded::util {

namespace json = boost::json;

/// The object at a path of keys, or nullptr when a step is missing or not an object.
using jpath::object_at;

/// The array at a path, or nullptr.
inline const json::array* array_at(const json::object& o, std::initializer_list<std::string_view> path,
                                   std::string_view key) {
  const json::object* parent = object_at(o, path);
  if (!parent) return nullptr;
  const json::value* v = parent->if_contains(key);
  return v && v->is_array() ? &v->as_array() : nullptr;
}

/// A string member ("" when absent or not a string).
inline std::string string_of(const json::object* o, std::string_view key) {
  if (!o) return {};
  const json::value* v = o->if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

/// An integer member (accepts int64/uint64/double and integer strings), or `fallback`.
inline std::int64_t int_of(const json::object* o, std::string_view key, std::int64_t fallback) {
  if (!o) return fallback;
  const json::value* v = o->if_contains(key);
  if (!v) return fallback;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  if (v->is_double()) {
    // Out of range (or NaN) would be undefined behaviour to convert: saturate instead.
    const double d = v->as_double();
    if (!(d == d)) return fallback;
    if (d >= 9.2e18) return std::numeric_limits<std::int64_t>::max();
    if (d <= -9.2e18) return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(d);
  }
  return fallback;
}

/// The object member `key` of `o`, created (or replaced when not an object) as needed.
inline json::object& ensure_object(json::object& o, std::string_view key) {
  json::value& v = o[key];
  if (!v.is_object()) v = json::object{};
  return v.as_object();
}

inline std::string name_of(const json::object& o) { return string_of(object_at(o, {"metadata"}), "name"); }
inline std::string namespace_of(const json::object& o) { return string_of(object_at(o, {"metadata"}), "namespace"); }
inline std::string uid_of(const json::object& o) { return string_of(object_at(o, {"metadata"}), "uid"); }

/// metadata.ownerReferences entry of `owner` marking it the controller (ownerReference with
/// controller: true and blockOwnerDeletion: true, as every built-in controller and the Kubeflow
/// operators set it).
inline json::object controller_reference(const json::object& owner) {
  return json::object{{"apiVersion", owner.at("apiVersion")},
                      {"kind", owner.at("kind")},
                      {"name", name_of(owner)},
                      {"uid", uid_of(owner)},
                      {"controller", true},
                      {"blockOwnerDeletion", true}};
}

/// The ownerReference with controller: true (validation allows at most one), or null.
inline const json::object* controller_ref(const json::object& o) {
  if (const json::object* md = object_at(o, {"metadata"}))
    if (const json::value* refs = md->if_contains("ownerReferences"); refs && refs->is_array())
      for (const auto& r : refs->as_array())
        if (r.is_object())
          if (const json::value* c = r.as_object().if_contains("controller"); c && c->is_bool() && c->as_bool())
            return &r.as_object();
  return nullptr;
}

/// The uid of the controller ownerReference ("" when none).
inline std::string controller_uid(const json::object& o) {
  const json::object* ref = controller_ref(o);
  return ref ? string_of(ref, "uid") : std::string();
}

/// The annotation `key` ("" when absent).
inline std::optional<std::string> annotation(const json::object& o, std::string_view key) {
  const json::object* a = object_at(o, {"metadata", "annotations"});
  if (!a) return std::nullopt;
  const json::value* v = a->if_contains(key);
  if (!v || !v->is_string()) return std::nullopt;
  return std::string(v->as_string());
}

/// Deep equality with boost::json's operator== semantics (object members in any order, int64 and
/// uint64 equal when the numbers are), without its cost: Boost 1.81's object::equal iterates with
/// `for (auto e : *this)` (boost/json/impl/object.ipp), deep-copying every member at every level,
/// which made comparing two Deployments cost more than copying them several times. Use this for
/// every object or array comparison on the server's write path.
bool json_equal(const json::value& a, const json::value& b) noexcept;
bool json_equal(const json::object& a, const json::object& b) noexcept;
bool json_equal(const json::array& a, const json::array& b) noexcept;

/// Sets (or replaces) the condition of `type` in `conditions`, keeping lastTransitionTime when the
/// status does not change (as every controller's SetCondition helper does). Returns true on change.
bool set_condition(json::array& conditions, const json::object& condition);

/// metav1.LabelSelectorAsSelector(sel).Matches(labels): matchLabels and matchExpressions (In,
/// NotIn, Exists, DoesNotExist); `labels` may be null (no labels).
bool selector_matches(const json::object& sel, const json::object* labels);

/// The condition of `type`, or nullptr.
const json::object* find_condition(const json::array* conditions, std::string_view type);

/// Records a core/v1 Event about `involved` (an object with apiVersion, kind and metadata) as
/// client-go's event recorder writes it: name "<object>.<hex time>", count 1, first/lastTimestamp
/// `now`, source.component and reportingComponent `component`, reportingInstance
/// `reporting_instance` ("" when not given, as kube-controller-manager's controllers leave it).
/// Returns the event's name.
std::string record_event(Store& store, std::chrono::system_clock::time_point now, const json::object& involved,
                         std::string_view type, std::string_view reason, const std::string& message,
                         const std::string& component, std::string_view action = {},
                         std::optional<std::string_view> reporting_instance = std::nullopt);

/// Records an Event as the events.k8s.io recorder (client-go tools/events, which kube-scheduler
/// uses) writes it, seen through core/v1: eventTime `now` in microseconds, first/lastTimestamp null,
/// no count, source {}, reportingComponent `controller`, reportingInstance "<controller>-<host
/// name>", and `action`. Returns the event's name.
std::string record_series_event(Store& store, std::chrono::system_clock::time_point now, const json::object& involved,
                                std::string_view type, std::string_view reason, std::string_view action,
                                const std::string& message, const std::string& controller);

/// The write options of an Event write through events.k8s.io/v1 (the tools/events recorder's
/// create and series update) by the component named on this thread (WritingAs): its
/// managedFields entry is that version's (regarding, note, reportingController, ...), at `now`.
WriteOptions events_api_writes(Store& store, std::chrono::system_clock::time_point now);

/// This machine's host name (os.Hostname), as recorders put it in reportingInstance.
const std::string& host_name();

}  // namespace gpupool::embedded::util

// Helpers shared by the workload controllers (controller_*.cpp and the Controllers registry in
// controllers.cpp), the scheduler and the volume controller; a namespace of their own, taken whole
// by the controller files (`using namespace ctrl`) and name by name by the others.
namespace gpupool::embedded::ctrl {

namespace json = boost::json;

// The util helpers every controller reads objects with, so that `using namespace ctrl` is all a
// controller file needs.
using util::ensure_object;
using util::int_of;
using util::name_of;
using util::namespace_of;
using util::object_at;
using util::string_of;
using util::uid_of;

/// An object's status.phase ("" when unset): a pod's, a claim's, a volume's.
inline std::string phase_of(const json::object& pod) {
  return util::string_of(util::object_at(pod, {"status"}), "phase");
}
/// Whether a pod has ended (phase Succeeded or Failed).
inline bool terminal(const json::object& pod) {
  const std::string p = phase_of(pod);
  return p == "Succeeded" || p == "Failed";
}
/// The pod GC's isPodTerminated (gc_controller.go): the phase is neither Pending, Running nor
/// Unknown (no phase counts as ended too).
inline bool pod_terminated(const json::object& pod) {
  const std::string p = phase_of(pod);
  return p != "Pending" && p != "Running" && p != "Unknown";
}
/// Whether an object is being deleted (metadata.deletionTimestamp set; podutil's isTerminating).
inline bool deleting(const json::object& o) {
  const json::object* md = util::object_at(o, {"metadata"});
  return md && md->contains("deletionTimestamp");
}
/// Whether an object's metadata.finalizers holds `finalizer` (set_finalizer: store.hpp).
bool holds_finalizer(const json::object& o, std::string_view finalizer);
/// controller.ActivePods' order, the pods to delete first: unassigned before assigned, Pending
/// before Unknown before Running, not ready before ready, ready the shorter time first, the higher
/// restart count (regular containers, then sidecars) first, the newer first.
bool active_pods_less(const json::object& a, const json::object& b);
/// Whether a pod's Ready condition is True.
inline bool pod_ready(const json::object& pod) {
  const json::object* c = util::find_condition(util::array_at(pod, {"status"}, "conditions"), "Ready");
  return c && util::string_of(c, "status") == "True";
}
/// podutil.IsPodAvailable: Ready, and for minReadySeconds > 0 Ready since (its condition's
/// lastTransitionTime) more than minReadySeconds before `now`.
inline bool pod_available(const json::object& pod, std::int64_t min_ready_seconds, Clock::time_point now) {
  const json::object* c = util::find_condition(util::array_at(pod, {"status"}, "conditions"), "Ready");
  if (!c || util::string_of(c, "status") != "True") return false;
  if (min_ready_seconds <= 0) return true;
  const auto since = time_from_rfc3339(util::string_of(c, "lastTransitionTime"));
  return since && *since + std::chrono::seconds(min_ready_seconds) < now;
}
/// The label `key` of an object ("" when absent).
inline std::string labels_key(const json::object& o, std::string_view key) {
  return util::string_of(util::object_at(o, {"metadata", "labels"}), key);
}

/// A status condition {type, status, reason, message, lastTransitionTime `now`}, with
/// lastUpdateTime `now` too when `with_update_time` (Deployment conditions carry both).
json::object condition(std::string_view type, bool status, std::string_view reason, std::string_view message,
                       Clock::time_point now, bool with_update_time = false);

/// A pod from a template: labels/annotations/spec of the template, ownerReference to `owner`;
/// named `name`, or generated from `generate_name` when `name` is empty; `extra_labels` added.
json::object pod_from_template(const json::object& tmpl, const json::object& owner, const std::string& name,
                               const std::string& generate_name,
                               const std::map<std::string, std::string>& extra_labels);

/// The data of a workload's ControllerRevision (the DaemonSet and StatefulSet controllers'
/// getPatch): {"spec": {"template": <template>, with "$patch": "replace"}}.
json::object template_revision_data(const json::object& pod_template);
/// history.NewControllerRevision: a ControllerRevision `name` of `owner` (its controller reference
/// and annotations), with `labels`, `data` and `revision`.
json::object controller_revision(const json::object& owner, const std::string& name, json::object labels,
                                 json::object data, std::int64_t revision);

/// What a controller claims of one kind of object (pkg/controller/controller_ref_manager.go).
struct ClaimRules {
  /// Whether an object belongs to the owner (its selector and the controller's filters, as
  /// ClaimPods' `filters`: a StatefulSet's isMemberOf).
  std::function<bool(const json::object&)> match;
  /// Owned objects that no longer match are released (ClaimObject); false: they are only left
  /// out (a StatefulSet's ListRevisions and AdoptOrphanRevisions, which never release).
  bool release = true;
  /// Only pods that have not ended and are not being deleted are candidates (the ReplicaSet
  /// controller claims controller.FilterActivePods of the namespace's pods).
  bool active_only = false;
  /// Orphans being deleted are adopted too (a StatefulSet's AdoptOrphanRevisions; ClaimObject
  /// skips them).
  bool adopt_deleting = false;
  /// A finalizer the owner puts on what it adopts and takes off what it releases
  /// (NewPodControllerRefManager's `finalizers`: the Job controller's batch.kubernetes.io/job-tracking).
  std::string finalizer = {};
};
/// The owner's selector matches the object's labels (metav1.LabelSelectorAsSelector: no
/// selector matches nothing).
bool owner_selects(const json::object& owner, const json::object& o);
/// ClaimPods / ClaimReplicaSets / ClaimControllerRevisions (controller_ref_manager.go
/// ClaimObject) over the objects of `t` in the owner's namespace that it controls or that have no
/// controller: an object another controller controls is ignored; one the owner controls is kept
/// when it matches, else released (its ownerReference to the owner removed) unless the owner is
/// being deleted; an orphan that matches and is not being deleted is adopted (the owner's
/// controller reference added) once the owner itself is not being deleted (CanAdopt's
/// RecheckDeletionTimestamp: the store's copy is current). Returns what the owner now controls,
/// in key order. An object gone meanwhile (404) or a release refused (422) is skipped.
std::vector<std::shared_ptr<const json::object>> claim(Store& store, const ResourceType& t, const json::object& owner,
                                                       const ClaimRules& rules);

/// A count from an object's spec, never negative: validation refuses negative counts, but an
/// object that slipped past it (an old snapshot, a CRD) must not make a controller index before
/// the start of its pod list.
inline std::int64_t count_of(const json::object* spec, std::string_view key, std::int64_t fallback) {
  return std::max<std::int64_t>(0, util::int_of(spec, key, fallback));
}

/// spec.replicas of an object (`fallback` when unset), never negative.
inline std::int64_t replicas_of(const json::object& o, std::int64_t fallback = 1) {
  return count_of(util::object_at(o, {"spec"}), "replicas", fallback);
}

/// pkg/controller/replicaset: burstReplicas (500), and pkg/controller/job MaxPodCreateDeletePerSync
/// (500): at most that many pods are created or deleted per sync; a huge count converges over
/// several syncs instead of allocating millions of pods at once.
inline constexpr std::int64_t kBurstReplicas = 500;

}  // namespace gpupool::embedded::ctrl
