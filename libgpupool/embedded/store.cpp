#include "embedded/store.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "embedded/base64.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/schema.hpp"
#include "embedded/typecheck.hpp"  // go_quote, go_parse_uint
#include "embedded/validation.hpp"

namespace gpupool::embedded {

// ---- StatusError -------------------------------------------------------------------------------

StatusError::StatusError(int code, std::string reason, std::string message, std::string name, std::string group,
                         std::string kind, std::vector<StatusCause> causes, std::optional<int> retry_after)
    : ApiError(code, std::move(reason), std::move(message), std::move(causes), retry_after),
      name_(std::move(name)),
      group_(std::move(group)),
      kind_(std::move(kind)) {}

json::object StatusError::to_status() const {
  json::object s;
  s["kind"] = "Status";
  s["apiVersion"] = "v1";
  s["metadata"] = json::object{};
  s["status"] = "Failure";
  s["message"] = status_message();
  if (!reason().empty()) s["reason"] = reason();  // etcd's errors passed on carry none
  json::object details;
  if (!name_.empty()) details["name"] = name_;
  if (!group_.empty()) details["group"] = group_;
  if (!kind_.empty()) details["kind"] = kind_;
  if (!causes().empty()) {
    json::array cs;
    for (const auto& c : causes()) {
      json::object o;
      o["reason"] = c.reason;
      o["message"] = c.message;
      o["field"] = c.field;
      cs.push_back(std::move(o));
    }
    details["causes"] = std::move(cs);
  }
  if (retry_after_seconds()) details["retryAfterSeconds"] = *retry_after_seconds();
  // NewGenericServerResponse for 422 (a JSON patch that does not apply) sends `"details": {}`.
  if (!details.empty() || code() == 422) s["details"] = std::move(details);
  s["code"] = code();
  return s;
}

// Wording: k8s.io/apimachinery/pkg/api/errors/errors.go (NewNotFound, NewAlreadyExists, NewConflict,
// NewInvalid, NewForbidden); details.kind is the resource (plural) for these, as the server sends.
StatusError StatusError::not_found(const ResourceType& t, std::string_view name) {
  return StatusError(404, "NotFound", fmt::format("{} \"{}\" not found", t.group_resource(), name), std::string(name),
                     t.group, t.resource);
}
StatusError StatusError::already_exists(const ResourceType& t, std::string_view name) {
  return StatusError(409, "AlreadyExists", fmt::format("{} \"{}\" already exists", t.group_resource(), name),
                     std::string(name), t.group, t.resource);
}
StatusError StatusError::conflict(const ResourceType& t, std::string_view name, std::string_view why) {
  return StatusError(409, "Conflict",
                     fmt::format("Operation cannot be fulfilled on {} \"{}\": {}", t.group_resource(), name, why),
                     std::string(name), t.group, t.resource);
}
StatusError StatusError::invalid(const ResourceType& t, std::string_view name, std::vector<StatusCause> causes) {
  // NewInvalid: `<Kind> "<name>" is invalid: <field>: <message>` (several joined as a list).
  // The qualified kind: `Deployment.apps`, `Pod` (core group).
  // The message is ErrorList.ToAggregate's: each distinct error once (the causes keep them all).
  std::string msg = fmt::format("{} \"{}\" is invalid: ", t.group_kind(), name);
  std::vector<std::string> distinct;
  for (const auto& c : causes)
    if (std::string m = c.field + ": " + c.message; std::find(distinct.begin(), distinct.end(), m) == distinct.end())
      distinct.push_back(std::move(m));
  if (distinct.size() == 1) {
    msg += distinct[0];
  } else {
    msg += "[";
    for (std::size_t i = 0; i < distinct.size(); ++i) msg += (i ? ", " : "") + distinct[i];
    msg += "]";
  }
  const std::string group = t.group;
  return StatusError(422, "Invalid", msg, std::string(name), group, t.kind, std::move(causes));
}
StatusError StatusError::invalid_options(std::string_view kind, std::vector<StatusCause> causes) {
  ResourceType t;
  t.group = "meta.k8s.io";
  t.kind = std::string(kind);
  return invalid(t, "", std::move(causes));
}
StatusError StatusError::bad_request(std::string message) { return StatusError(400, "BadRequest", std::move(message)); }
StatusError StatusError::gone(std::string message) { return StatusError(410, "Expired", std::move(message)); }
StatusError StatusError::forbidden(std::string_view user, std::string_view verb, const ResourceType& t,
                                   std::string_view ns, std::string_view name, std::string_view sub) {
  // NewForbidden + the RBAC authorizer's reason:
  //   `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "bob"`
  const std::string qualified = name.empty() ? t.group_resource() : fmt::format("{} \"{}\"", t.group_resource(), name);
  std::string resource = std::string(t.resource);
  if (!sub.empty()) resource += "/" + std::string(sub);
  std::string msg = fmt::format("{} is forbidden: User \"{}\" cannot {} resource \"{}\" in API group \"{}\"", qualified,
                                user, verb, resource, t.group);
  msg += ns.empty() ? std::string(" at the cluster scope") : fmt::format(" in the namespace \"{}\"", ns);
  return StatusError(403, "Forbidden", msg, std::string(name), t.group, t.resource);
}

std::string_view to_string(EventType t) noexcept {
  switch (t) {
    case EventType::Added:
      return "ADDED";
    case EventType::Modified:
      return "MODIFIED";
    case EventType::Deleted:
      return "DELETED";
  }
  return "ERROR";
}

Propagation parse_propagation(std::string_view text) {
  if (text == "Orphan") return Propagation::Orphan;
  if (text == "Background") return Propagation::Background;
  if (text == "Foreground") return Propagation::Foreground;
  if (text.empty()) return Propagation::Default;
  throw StatusError::bad_request(
      fmt::format("propagationPolicy: Unsupported value: \"{}\": supported values: "
                  "\"Foreground\", \"Background\", \"Orphan\"",
                  text));
}

// ---- helpers -----------------------------------------------------------------------------------

std::string field_value(const json::object& obj, std::string_view path) {
  const json::object* cur = &obj;
  while (true) {
    const auto dot = path.find('.');
    const auto head = path.substr(0, dot);
    const auto* v = cur->if_contains(head);
    if (!v) return {};
    if (dot == std::string_view::npos) {
      if (v->is_string()) return std::string(v->as_string());
      if (v->is_bool()) return v->as_bool() ? "true" : "false";
      if (v->is_int64()) return std::to_string(v->as_int64());
      return {};
    }
    if (!v->is_object()) return {};
    cur = &v->as_object();
    path.remove_prefix(dot + 1);
  }
}

bool has_finalizer(const json::object& metadata, std::string_view finalizer) {
  const json::value* fs = metadata.if_contains("finalizers");
  return fs && fs->is_array() && std::any_of(fs->as_array().begin(), fs->as_array().end(), [&](const json::value& f) {
           return f.is_string() && f.get_string() == finalizer;
         });
}

bool set_finalizer(json::object& metadata, std::string_view finalizer, bool on) {
  if (has_finalizer(metadata, finalizer) == on) return false;
  json::value& fs = metadata["finalizers"];
  if (!fs.is_array()) fs = json::array{};
  json::array& list = fs.as_array();
  if (on)
    list.emplace_back(finalizer);
  else
    list.erase(std::find_if(list.begin(), list.end(),
                            [&](const json::value& f) { return f.is_string() && f.get_string() == finalizer; }));
  if (list.empty()) metadata.erase("finalizers");
  return true;
}

std::map<std::string, std::string> labels_of(const json::object& obj) {
  std::map<std::string, std::string> out;
  if (const auto* md = obj.if_contains("metadata"); md && md->is_object())
    if (const auto* l = md->as_object().if_contains("labels"); l && l->is_object())
      for (const auto& [k, v] : l->as_object())
        if (v.is_string()) out.emplace(std::string(k), std::string(v.as_string()));
  return out;
}

namespace {

// The store whose writes this thread defers (Store::DeferDispatch; its Impl), and how deep.
thread_local const void* deferring_store = nullptr;
thread_local const char* writing_as = nullptr;  // WritingAs
thread_local int defer_depth = 0;

}  // namespace

bool is_builtin_group(std::string_view group) {
  static const std::set<std::string> builtin_groups = {"",
                                                       "apps",
                                                       "batch",
                                                       "policy",
                                                       "networking.k8s.io",
                                                       "rbac.authorization.k8s.io",
                                                       "scheduling.k8s.io",
                                                       "storage.k8s.io",
                                                       "coordination.k8s.io",
                                                       "events.k8s.io",
                                                       "authorization.k8s.io",
                                                       "authentication.k8s.io",
                                                       "autoscaling",
                                                       "certificates.k8s.io",
                                                       "discovery.k8s.io",
                                                       "node.k8s.io",
                                                       "flowcontrol.apiserver.k8s.io",
                                                       "apiregistration.k8s.io",
                                                       "resource.k8s.io",
                                                       "storagemigration.k8s.io",
                                                       "internal.apiserver.k8s.io",
                                                       "apiextensions.k8s.io",
                                                       "admissionregistration.k8s.io"};
  return builtin_groups.count(std::string(group)) > 0;
}

namespace {

// metadata.generation is kept only by the registries whose strategies set it: every
// pkg/registry/*/strategy.go with `Generation = 1` in PrepareForCreate (v1.32), the CRD registry, and
// custom resources (customresource/strategy.go). Pods, Services, ConfigMaps, PVCs, ServiceAccounts,
// RBAC objects, quotas... have none.
bool tracks_generation(const ResourceType& t) {
  static const std::set<std::string> with = {"daemonsets.apps",
                                             "deployments.apps",
                                             "replicasets.apps",
                                             "statefulsets.apps",
                                             "cronjobs.batch",
                                             "jobs.batch",
                                             "podtemplates",
                                             "replicationcontrollers",
                                             "endpointslices.discovery.k8s.io",
                                             "flowschemas.flowcontrol.apiserver.k8s.io",
                                             "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
                                             "ingresses.networking.k8s.io",
                                             "ingressclasses.networking.k8s.io",
                                             "networkpolicies.networking.k8s.io",
                                             "poddisruptionbudgets.policy",
                                             "deviceclasses.resource.k8s.io",
                                             "resourceslices.resource.k8s.io",
                                             "priorityclasses.scheduling.k8s.io",
                                             "customresourcedefinitions.apiextensions.k8s.io"};
  if (t.group == "admissionregistration.k8s.io") return true;
  if (with.count(t.group_resource())) return true;
  return !is_builtin_group(t.group);  // a custom resource
}

json::object& metadata_of(json::object& obj) {
  auto& md = obj["metadata"];
  if (!md.is_object()) md = json::object{};
  return md.as_object();
}
const json::object& metadata_of(const json::object& obj) {
  static const json::object empty;
  if (const auto* md = obj.if_contains("metadata"); md && md->is_object()) return md->as_object();
  return empty;
}
std::string str(const json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key); v && v->is_string()) return std::string(v->as_string());
  return {};
}
// str() read in place: valid until `o` changes.
std::string_view str_view(const json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key); v && v->is_string()) return v->as_string();
  return {};
}

// The garbage collector's finalizers (k8s.io/apimachinery/pkg/apis/meta/v1: FinalizerDeleteDependents,
// FinalizerOrphanDependents).
constexpr std::string_view kForegroundDeletion = "foregroundDeletion";
// The dependents index's key for objects without a controller reference: a string no uid is (an
// ownerReference's is never empty or NUL-led: validation refuses one, index_owners skips it; an
// object restored without a uid has "", which must not find the orphans as its dependents).
constexpr std::string_view kNoController{"\0orphans", 8};

// rest.BeforeDelete (updateForGracefulDeletionAndFinalizers): marking an object for deletion is a
// change of its generation, where it has one.
void bump_generation(json::object& md) {
  if (const auto* g = md.if_contains("generation"); g && g->is_int64() && g->as_int64() > 0)
    md["generation"] = g->as_int64() + 1;
}

bool is_pod(const ResourceType& t) { return t.group.empty() && t.resource == "pods"; }

// The grace period a pod's deletion gets (registry/core/pod/strategy.go CheckGracefulDelete): the
// request's, else spec.terminationGracePeriodSeconds (30 when unset, the default); 0 for a pod on
// no node or one that has finished.
std::int64_t pod_deletion_grace(const json::object& pod, std::optional<std::int64_t> requested) {
  static const json::object kNone;
  const json::object* spec = util::object_at(pod, {"spec"});
  if (!spec) spec = &kNone;
  std::int64_t grace = 30;
  if (requested)
    grace = *requested;
  else if (const auto* g = spec->if_contains("terminationGracePeriodSeconds"); g && g->is_int64())
    grace = g->as_int64();
  const std::string phase = util::string_of(util::object_at(pod, {"status"}), "phase");
  if (str(*spec, "nodeName").empty() || phase == "Succeeded" || phase == "Failed") grace = 0;
  return std::max<std::int64_t>(grace, 0);
}

// rest.BeforeDelete on a pod already marked with a grace period: only a shorter `grace` changes
// the mark (deletionTimestamp moved back by the difference); true when it did.
bool shorten_pod_deletion(json::object& md, std::optional<std::int64_t> grace) {
  const auto* cur = md.if_contains("deletionGracePeriodSeconds");
  const std::int64_t current = cur && cur->is_int64() ? cur->as_int64() : 0;
  if (current <= 0 || !grace || *grace >= current) return false;
  const std::int64_t g = std::max<std::int64_t>(*grace, 0);
  Clock::time_point at{};
  parse_rfc3339(str(md, "deletionTimestamp"), at);
  md["deletionTimestamp"] = to_rfc3339(at - std::chrono::seconds(current) + std::chrono::seconds(g));
  md["deletionGracePeriodSeconds"] = g;
  return true;
}

bool has_finalizers(const json::object& md) {
  const auto* fs = md.if_contains("finalizers");
  return fs && fs->is_array() && !fs->as_array().empty();
}

// Everything but metadata and status: a change there bumps metadata.generation.
bool spec_equal(const json::object& a, const json::object& b) {
  for (const auto& [k, v] : a) {
    if (k == "metadata" || k == "status") continue;
    const auto* o = b.if_contains(k);
    if (!o || !util::json_equal(*o, v)) return false;
  }
  for (const auto& [k, v] : b) {
    (void)v;
    if (k == "metadata" || k == "status") continue;
    if (!a.if_contains(k)) return false;
  }
  return true;
}

// The strategies' apiequality.Semantic weighs a Quantity by Cmp: specs that differ only in how a
// quantity is written ("1." and "1") are equal there, and the generation stays. (A custom
// resource's strategy compares its content as JSON.)
bool spec_equal_by_value(const ResourceType& t, const json::object& a, const json::object& b) {
  if (t.schema) return false;
  json::object x = a, y = b;
  if (!schema::quantities_by_value(t.group, t.version, t.kind, x)) return false;
  schema::quantities_by_value(t.group, t.version, t.kind, y);
  return spec_equal(x, y);
}

}  // namespace

// ---- Store -------------------------------------------------------------------------------------

using Key = std::pair<std::string, std::string>;  // (namespace, name)
using Objects = std::map<Key, std::shared_ptr<const json::object>>;
struct Ref {
  const ResourceType* type;
  std::string ns, name;
  bool operator<(const Ref& o) const { return std::tie(type, ns, name) < std::tie(o.type, o.ns, o.name); }
};

struct Store::Impl {
  Options options;
  mutable std::recursive_mutex mu;
  std::deque<ResourceType> types;  // address-stable
  std::unordered_map<const ResourceType*, Objects> data;
  std::unordered_map<std::string, std::set<Ref>> dependents;  // owner uid -> dependents
  // Owners in foreground deletion (deletionTimestamp + the foregroundDeletion finalizer), by uid:
  // the garbage collector's "waiting for dependents deletion" set.
  std::unordered_map<std::string, Ref> foreground;
  std::uint64_t rv = 1;
  std::uint64_t compacted = 0;  // the newest event dropped from history
  std::deque<WatchEvent> history;
  // The watch cache's window per resource type (apiserver/pkg/storage/cacher/watch_cache.go):
  // 100 events at least, doubled while its oldest event is fresher than 75 s, halved when a
  // quarter of it is older; a watch from before the window is 410 Expired.
  struct WatchWindow {
    std::size_t capacity = 100;                                      // defaultLowerBoundCapacity
    std::deque<std::pair<std::uint64_t, Clock::time_point>> events;  // resourceVersion, record time
    bool removed = false;                                            // removedEventSinceRelist
  };
  std::unordered_map<const ResourceType*, WatchWindow> windows;
  std::map<SubscriptionId, std::function<void(const WatchEvent&)>> subscribers;
  // `subscribers` as a list, shared by dispatch() until they change (null: to be rebuilt).
  std::shared_ptr<const std::vector<std::function<void(const WatchEvent&)>>> subscriber_snapshot;
  std::shared_ptr<const std::vector<std::function<void(const WatchEvent&)>>> subscriber_list() {
    if (!subscriber_snapshot) {
      auto v = std::make_shared<std::vector<std::function<void(const WatchEvent&)>>>();
      for (const auto& [id, cb] : subscribers) v->push_back(cb);
      subscriber_snapshot = std::move(v);
    }
    return subscriber_snapshot;
  }
  SubscriptionId next_sub = 1;
  std::vector<std::shared_ptr<WatchQueue>> queues;
  // A WakeBatch in progress: its thread, its depth, and the queues to wake when it ends.
  std::thread::id batch_thread;
  int batch_depth = 0;
  std::vector<std::shared_ptr<WatchQueue>> to_wake;
  std::deque<WatchEvent> pending;  // for subscribers
  // Events the history let go of, released by dispatch() after the lock is let go: dropping one
  // frees the object versions no one else holds (a walk of cold memory), which need not hold
  // every other reader and writer of the store back.
  std::vector<WatchEvent> dropped;
  bool dispatching = false;
  std::atomic<std::uint64_t> subscriber_failures{0};  // callbacks that threw (dispatch)
  // Answered DeferDispatch scopes (answered()) whose events finish() has not delivered yet;
  // settle() waits on `settled` while any is.
  std::atomic<int> delivering{0};
  std::mutex settle_mu;
  std::condition_variable settled;
  // Notified (under `mu`) when a dispatch() has delivered every pending event.
  std::condition_variable_any idle;
  std::vector<std::pair<AdmissionStage, std::function<void(AdmissionRequest&)>>> plugins;
  std::mt19937_64 rng{std::random_device{}()};
  std::shared_ptr<Journal> journal;
  // The list encoding of stored objects (list_encodings), by object identity: a stored object
  // is immutable (a write stores a new one), so an encoding is never stale. An entry holds its
  // object weakly: a hit needs the object alive at the same address (the weak pointer unexpired),
  // so an address reused after a free misses. Entries of replaced objects are swept when the map
  // doubles. Its own lock: a list encodes outside the store's lock, writers never take it.
  struct Encoded {
    std::weak_ptr<const json::object> object;
    std::shared_ptr<const std::string> bytes;
  };
  mutable std::mutex enc_mu;
  std::unordered_map<const json::object*, Encoded> encoded;
  std::size_t encoded_sweep_at = 1024;
  std::uint64_t encoded_hits = 0, encoded_misses = 0;

  Objects& objects(const ResourceType& t) { return data[&t]; }

  std::string new_uid() {
    const auto a = rng(), b = rng();
    return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                       0x8000 | ((b >> 48) & 0x3fff), b & 0xffffffffffffULL);
  }
  std::string random_suffix() {
    // k8s.io/apiserver/pkg/storage/names: 5 characters of "bcdfghjklmnpqrstvwxz2456789".
    static constexpr char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    std::string s;
    for (int i = 0; i < 5; ++i) s += alphabet[rng() % (sizeof(alphabet) - 1)];
    return s;
  }

  void index_owners(const ResourceType& t, const json::object& obj, bool add) {
    const auto& md = metadata_of(obj);
    const auto* refs = md.if_contains("ownerReferences");
    Ref me{&t, str(md, "namespace"), str(md, "name")};
    const auto index = [&](const std::string& uid) {
      if (add) {
        dependents[uid].insert(me);
      } else if (auto it = dependents.find(uid); it != dependents.end()) {
        it->second.erase(me);
        if (it->second.empty()) dependents.erase(it);
      }
    };
    // A namespaced object without a controller reference is indexed under kNoController too:
    // the orphans a controller may adopt (Store::orphans).
    if (t.namespaced && !util::controller_ref(obj)) index(std::string(kNoController));
    if (!refs || !refs->is_array()) return;
    for (const auto& r : refs->as_array()) {
      if (!r.is_object()) continue;
      const auto uid = str(r.as_object(), "uid");
      if (uid.empty()) continue;
      index(uid);
    }
  }

  void put(const ResourceType& t, const Key& k, std::shared_ptr<const json::object> obj) {
    auto& objs = objects(t);
    auto it = objs.find(k);
    // Most updates (a binding, a status write) keep the ownerReferences: the index stays as it is.
    const auto owners = [](const json::object& o) { return metadata_of(o).if_contains("ownerReferences"); };
    const json::value* before = it != objs.end() ? owners(*it->second) : nullptr;
    const json::value* after = owners(*obj);
    if (it == objs.end() || !before != !after || (before && !util::json_equal(*before, *after))) {
      if (it != objs.end()) index_owners(t, *it->second, false);
      index_owners(t, *obj, true);
    }
    const auto& md = metadata_of(*obj);
    if (md.contains("deletionTimestamp") && has_finalizer(md, kForegroundDeletion))
      foreground[str(md, "uid")] = Ref{&t, k.first, k.second};
    if (it != objs.end())
      it->second = std::move(obj);
    else
      objs.emplace(k, std::move(obj));
  }
  void erase(const ResourceType& t, const Key& k) {
    auto& objs = objects(t);
    if (auto it = objs.find(k); it != objs.end()) {
      index_owners(t, *it->second, false);
      foreground.erase(str(metadata_of(*it->second), "uid"));
      objs.erase(it);
    }
  }
};

Store::Store(const Clock& clock, Options options) : clock_(clock), impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  for (auto& t : builtin_types(impl_->options.mpijob_version)) register_type(std::move(t));
}

Store::~Store() {
  std::lock_guard lk(impl_->mu);
  for (auto& q : impl_->queues) q->close();
}

const ResourceType& Store::register_type(ResourceType t) {
  std::lock_guard lk(impl_->mu);
  for (auto& existing : impl_->types)
    if (existing.group == t.group && existing.resource == t.resource) {
      existing = std::move(t);
      return existing;
    }
  impl_->types.push_back(std::move(t));
  return impl_->types.back();
}

void Store::unregister_type(std::string_view group, std::string_view resource) {
  std::lock_guard lk(impl_->mu);
  for (auto& t : impl_->types)
    if (t.group == group && t.resource == resource) {
      impl_->data.erase(&t);
      t.resource = "";  // keep the address valid; an empty resource is never served
      t.kind = "";
    }
}

const ResourceType& Store::type(std::string_view group, std::string_view resource) const {
  std::lock_guard lk(impl_->mu);
  for (const auto& t : impl_->types)
    if (t.group == group && t.resource == resource && !resource.empty()) return t;
  throw StatusError(404, "NotFound",
                    fmt::format("the server could not find the requested resource ({}{}{})", resource,
                                group.empty() ? "" : ".", group));
}

const ResourceType* Store::find_type(std::string_view group, std::string_view version,
                                     std::string_view resource) const {
  std::lock_guard lk(impl_->mu);
  for (const auto& t : impl_->types)
    if (t.group == group && t.version == version && t.resource == resource && !resource.empty()) return &t;
  return nullptr;
}

const ResourceType* Store::find_kind(std::string_view api_version, std::string_view kind) const {
  std::lock_guard lk(impl_->mu);
  for (const auto& t : impl_->types)
    if (t.kind == kind && t.api_version() == api_version && !kind.empty()) return &t;
  return nullptr;
}

std::vector<const ResourceType*> Store::types() const {
  std::lock_guard lk(impl_->mu);
  std::vector<const ResourceType*> out;
  for (const auto& t : impl_->types)
    if (!t.resource.empty()) out.push_back(&t);
  return out;
}

namespace {
// One stored object as a list serves it: a built-in kind's item without kind and apiVersion
// (typed list items are serialized without TypeMeta), members otherwise in stored order.
std::string encode_list_item(const json::object& o, bool bare) {
  if (!bare) return json::serialize(o);
  std::string out;
  json::serializer sr;
  char buf[16384];
  out += '{';
  bool first = true;
  for (const auto& kv : o) {
    if (kv.key() == "kind" || kv.key() == "apiVersion") continue;
    if (!first) out += ',';
    first = false;
    sr.reset(kv.key());
    while (!sr.done()) out.append(sr.read(buf));
    out += ':';
    sr.reset(&kv.value());
    while (!sr.done()) out.append(sr.read(buf));
  }
  out += '}';
  return out;
}
}  // namespace

std::vector<std::shared_ptr<const std::string>> Store::list_encodings(
    const ResourceType& t, const std::vector<std::shared_ptr<const json::object>>& items) const {
  auto& im = *impl_;
  std::vector<std::shared_ptr<const std::string>> enc(items.size());
  std::size_t misses = 0;
  {
    std::lock_guard lk(im.enc_mu);
    for (std::size_t i = 0; i < items.size(); ++i) {
      const auto it = im.encoded.find(items[i].get());
      // Alive at the same address: the same immutable object (see Impl::Encoded).
      if (it != im.encoded.end() && it->second.object.lock() == items[i])
        enc[i] = it->second.bytes;
      else
        ++misses;
    }
    im.encoded_hits += items.size() - misses;
    im.encoded_misses += misses;
  }
  if (misses > 0) {
    const bool bare = is_builtin_group(t.group);
    for (std::size_t i = 0; i < items.size(); ++i)
      if (!enc[i]) enc[i] = std::make_shared<const std::string>(encode_list_item(*items[i], bare));
    std::lock_guard lk(im.enc_mu);
    for (std::size_t i = 0; i < items.size(); ++i) im.encoded[items[i].get()] = {items[i], enc[i]};
    if (im.encoded.size() >= im.encoded_sweep_at) {
      std::erase_if(im.encoded, [](const auto& kv) { return kv.second.object.expired(); });
      im.encoded_sweep_at = std::max<std::size_t>(1024, 2 * im.encoded.size());
    }
  }
  return enc;
}

Store::EncodingStats Store::encoding_stats() const {
  std::lock_guard lk(impl_->enc_mu);
  std::size_t live = 0;
  for (const auto& [p, e] : impl_->encoded) live += e.object.expired() ? 0 : 1;
  return {live, impl_->encoded.size(), impl_->encoded_hits, impl_->encoded_misses};
}

std::string Store::new_uid() {
  std::lock_guard lk(impl_->mu);
  return impl_->new_uid();
}

std::string Store::generate_name(std::string_view base) {
  std::lock_guard lk(impl_->mu);
  return std::string(base) + impl_->random_suffix();
}

std::uint64_t Store::subscriber_failures() const { return impl_->subscriber_failures.load(); }

std::uint64_t Store::revision() const {
  std::lock_guard lk(impl_->mu);
  return impl_->rv;
}

json::object Store::snapshot() const {
  std::lock_guard lk(impl_->mu);
  json::array objects;
  for (const auto& t : impl_->types) {
    auto it = impl_->data.find(&t);
    if (it == impl_->data.end()) continue;
    for (const auto& [key, obj] : it->second)
      objects.push_back(json::object{{"group", t.group}, {"resource", t.resource}, {"object", *obj}});
  }
  return json::object{{"revision", impl_->rv}, {"objects", std::move(objects)}};
}

void Store::restore(const json::object& snapshot) {
  const auto* objects = snapshot.if_contains("objects");
  const auto* revision = snapshot.if_contains("revision");
  if (!objects || !objects->is_array() || !revision || !revision->is_number())
    throw StatusError::bad_request("snapshot: expected {\"revision\": N, \"objects\": [...]}");
  // Two passes: CRDs first (their ADDED events register the types the rest may need).
  for (int pass = 0; pass < 2; ++pass) {
    {
      std::lock_guard lk(impl_->mu);
      impl_->rv = std::max<std::uint64_t>(impl_->rv, revision->to_number<std::uint64_t>());
      for (const auto& entry : objects->as_array()) {
        if (!entry.is_object()) throw StatusError::bad_request("snapshot: objects[] must hold objects");
        const auto& e = entry.as_object();
        const std::string group = str(e, "group"), resource = str(e, "resource");
        bool is_crd = group == "apiextensions.k8s.io" && resource == "customresourcedefinitions";
        if ((pass == 0) != is_crd) continue;
        const auto* obj = e.if_contains("object");
        if (!obj || !obj->is_object()) throw StatusError::bad_request("snapshot: an entry has no object");
        const ResourceType& t = type(group, resource);
        const auto& md = metadata_of(obj->as_object());
        Key key{str(md, "namespace"), str(md, "name")};
        auto& objs = impl_->objects(t);
        if (objs.count(key)) throw StatusError::already_exists(t, key.second);
        auto stored = std::make_shared<const json::object>(obj->as_object());
        objs.emplace(key, stored);
        impl_->index_owners(t, *stored, true);
        commit_event(EventType::Added, t, stored, nullptr);
      }
      // What happened before the snapshot's revision is unknown: watches from older versions
      // are 410 Expired (not a replay of the restored objects as ADDED events).
      impl_->compacted = std::max<std::uint64_t>(impl_->compacted, impl_->rv);
    }
    dispatch();
  }
}

void Store::add_admission(std::function<void(AdmissionRequest&)> plugin, AdmissionStage stage) {
  std::lock_guard lk(impl_->mu);
  impl_->plugins.emplace_back(stage, std::move(plugin));
}

void Store::admit(AdmissionRequest& r) {
  // handlers/create.go, update.go: decoding's defaults and the fieldmanager, mutating admission,
  // then the registry's BeforeCreate/BeforeUpdate (validation), then validating admission.
  builtin_defaults(r);
  for (const auto& [stage, p] : impl_->plugins)
    if (stage == AdmissionStage::Mutating) p(r);
  builtin_validation(r);
  for (const auto& [stage, p] : impl_->plugins)
    if (stage == AdmissionStage::Validating) p(r);
}

void Store::commit_event(EventType type, const ResourceType& t, std::shared_ptr<const json::object> obj,
                         std::shared_ptr<const json::object> old) {
  // Called with the lock held, after the data change: history, HTTP watch queues, subscribers.
  WatchEvent ev{type, &t, std::move(obj), std::move(old), impl_->rv};
  if (impl_->journal) impl_->journal->record(ev);
  impl_->history.push_back(ev);
  {
    constexpr std::size_t kLower = 100, kUpper = 100 * 1024;
    constexpr auto kFresh = std::chrono::seconds(75);  // eventFreshDuration
    auto& w = impl_->windows[&t];
    const auto now = clock_.now();
    auto shrink_to = [&](std::size_t cap) {
      while (w.events.size() > cap) {
        w.events.pop_front();
        w.removed = true;
      }
      w.capacity = cap;
    };
    // resizeCacheLocked
    if (w.events.size() >= w.capacity && now - w.events.front().second < kFresh) {
      w.capacity = std::min(w.capacity * 2, kUpper);
    } else if (w.events.size() >= w.capacity && w.capacity > kLower &&
               now - w.events[w.events.size() - w.capacity / 4].second > kFresh) {
      shrink_to(std::max(w.capacity / 2, kLower));
    }
    if (w.events.size() >= w.capacity) {  // full: the oldest event leaves
      w.events.pop_front();
      w.removed = true;
    }
    w.events.emplace_back(impl_->rv, now);
  }
  while (impl_->history.size() > impl_->options.history) {
    impl_->compacted = impl_->history.front().resource_version;
    impl_->dropped.push_back(std::move(impl_->history.front()));
    impl_->history.pop_front();
  }
  const bool batched = impl_->batch_depth > 0 && impl_->batch_thread == std::this_thread::get_id();
  for (const auto& q : impl_->queues)
    if (q->push(ev)) {
      if (!batched)
        q->wake();
      else if (std::find(impl_->to_wake.begin(), impl_->to_wake.end(), q) == impl_->to_wake.end())
        impl_->to_wake.push_back(q);
    }
  std::erase_if(impl_->queues, [](const auto& q) { return q->closed(); });
  if (!impl_->subscribers.empty()) impl_->pending.push_back(std::move(ev));
}

json::object Store::create(const ResourceType& t, std::string_view ns, json::object obj, const WriteOptions& o) {
  return *create_shared(t, ns, std::move(obj), o);
}

std::shared_ptr<const json::object> Store::create_shared(const ResourceType& t, std::string_view ns, json::object obj,
                                                         const WriteOptions& o) {
  std::shared_ptr<const json::object> stored;
  // Insert top-level keys first: a reference into `obj` dies when obj grows.
  obj["apiVersion"] = t.api_version();
  obj["kind"] = t.kind;
  auto& md = metadata_of(obj);
  if (!t.namespaced) ns = {};
  const std::string given_ns = str(md, "namespace");
  if (t.namespaced) {
    if (ns.empty()) ns = given_ns;
    if (!given_ns.empty() && given_ns != ns)
      throw StatusError::bad_request(
          "the namespace of the provided object does not match the namespace sent on the request");
    if (ns.empty()) throw StatusError::bad_request("an empty namespace may not be set during creation");
    md["namespace"] = std::string(ns);
  } else {
    md.erase("namespace");
  }
  // (rest.BeforeCreate also clears deletionGracePeriodSeconds.) metadata.generation is the
  // strategy's: 1 where PrepareForCreate sets it (before validation), else the client's own value,
  // which rest.BeforeCreate keeps and ValidateObjectMeta checks (non-negative).
  const std::string given_rv = o.client_create ? str(md, "resourceVersion") : std::string();
  for (const char* k : {"uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"})
    md.erase(k);
  if (tracks_generation(t)) md["generation"] = 1;
  if (!o.keep_creation_timestamp) md.erase("creationTimestamp");
  {
    std::lock_guard lk(impl_->mu);
    std::string name = str(md, "name");
    // Without a name or generateName, admission's validation reports it with the object's other
    // errors (ValidateObjectMeta); a kind it does not validate is refused after it.
    if (const std::string gen = str(md, "generateName"); name.empty() && !gen.empty()) {
      name = gen + impl_->random_suffix();
      md["name"] = name;
    } else if (name.empty() && t.group.empty() && t.resource == "limitranges") {
      // limitrange/strategy.go PrepareForCreate: a LimitRange without a name is named by a new UUID.
      name = impl_->new_uid();
      md["name"] = name;
    }
    if (t.namespaced) {
      const auto& ns_type = type("", "namespaces");
      if (!impl_->objects(ns_type).count({"", std::string(ns)})) throw StatusError::not_found(ns_type, ns);
    }
    // The create handler fills the system fields (uid) before admission (handlers/create.go
    // FillObjectMetaSystemFields): the Job strategy's generated selector names the uid.
    md["uid"] = impl_->new_uid();
    AdmissionRequest req{AdmissionRequest::Operation::Create, &t, "", std::string(ns), &obj, nullptr, &o};
    req.clock = &clock_;
    admit(req);
    if (name.empty())
      throw StatusError::invalid(
          t, "", {{"FieldValueRequired", "Required value: name or generateName is required", "metadata.name"}});
    const Key key{std::string(ns), name};
    if (impl_->objects(t).count(key)) throw StatusError::already_exists(t, name);
    auto& md2 = metadata_of(obj);
    if (!md2.contains("creationTimestamp")) md2["creationTimestamp"] = to_rfc3339(clock_.now());
    if (!o.dry_run) {
      // etcd3 store Create: versioner.ObjectResourceVersion (ParseUint) other than 0 is refused.
      if (const auto n = go_parse_uint(given_rv); n && *n != 0)
        throw StatusError(500, "", "resourceVersion should not be set on objects to be created");
      md2["resourceVersion"] = std::to_string(++impl_->rv);
    } else if (!given_rv.empty()) {
      md2["resourceVersion"] = given_rv;  // dry run: nothing stored; the client's own is copied back
    } else {
      md2.erase("resourceVersion");  // dry run: nothing stored, no version
    }
    if (tracks_generation(t)) md2["generation"] = 1;
    if (o.dry_run) return std::make_shared<const json::object>(std::move(obj));
    stored = std::make_shared<const json::object>(std::move(obj));
    impl_->put(t, key, stored);
    commit_event(EventType::Added, t, stored, nullptr);
    if (metadata_of(*stored).contains("ownerReferences")) gc_dangling_locked(t, key.first, key.second);
  }
  sync_journal();
  dispatch();
  return stored;
}

std::shared_ptr<const json::object> Store::find(const ResourceType& t, std::string_view ns,
                                                std::string_view name) const {
  std::lock_guard lk(impl_->mu);
  auto& objs = impl_->objects(t);
  auto it = objs.find({t.namespaced ? std::string(ns) : std::string(), std::string(name)});
  return it == objs.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const json::object>> Store::dependents(const ResourceType& t, std::string_view ns,
                                                                   std::string_view owner_uid) const {
  std::vector<std::shared_ptr<const json::object>> out;
  std::lock_guard lk(impl_->mu);
  auto d = impl_->dependents.find(std::string(owner_uid));
  if (d == impl_->dependents.end()) return out;
  auto& objs = impl_->objects(t);
  // Refs sort by (type, namespace, name): this type's dependents in `ns` are one run, in key order.
  for (auto it = d->second.lower_bound(Ref{&t, std::string(ns), std::string()});
       it != d->second.end() && it->type == &t && it->ns == ns; ++it)
    if (auto o = objs.find({it->ns, it->name}); o != objs.end()) out.push_back(o->second);
  return out;
}

std::vector<std::shared_ptr<const json::object>> Store::orphans(const ResourceType& t, std::string_view ns) const {
  return dependents(t, ns, kNoController);
}

json::object Store::get(const ResourceType& t, std::string_view ns, std::string_view name) const {
  auto p = find(t, ns, name);
  if (!p) throw StatusError::not_found(t, name);
  return *p;
}

namespace {
struct ContinueToken {
  std::uint64_t rv = 0;
  std::string ns, name;
};
std::string encode_continue(const ContinueToken& c) {
  json::object o{{"v", "meta.k8s.io/v1"}, {"rv", c.rv}, {"ns", c.ns}, {"start", c.name}};
  return base64_encode(json::serialize(o));
}
ContinueToken decode_continue(const std::string& token) {
  // apiserver/pkg/storage: "continue key is not valid: ..." as a 400 BadRequest.
  auto raw = base64_decode(token);
  boost::system::error_code ec;
  json::value v;
  if (raw) v = json::parse(*raw, ec);
  if (!raw || ec || !v.is_object() || !v.as_object().contains("rv"))
    throw StatusError::bad_request(
        "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
  const auto& o = v.as_object();
  ContinueToken c;
  c.rv = o.at("rv").is_uint64() ? o.at("rv").as_uint64()
                                : static_cast<std::uint64_t>(o.at("rv").to_number<std::int64_t>());
  c.ns = str(o, "ns");
  c.name = str(o, "start");
  return c;
}
bool object_matches(const json::object& obj, const LabelSelector& labels, const FieldSelector& fields) {
  if (!labels.empty() && !labels.matches_labels_of(obj)) return false;
  if (!fields.empty() && !fields.matches(obj)) return false;
  return true;
}
}  // namespace

ListResult Store::list(const ResourceType& t, std::string_view ns, const ListOptions& o) const {
  std::lock_guard lk(impl_->mu);
  ListResult out;
  out.resource_version = impl_->rv;
  const auto& objs = impl_->objects(t);
  Objects::const_iterator it, end = objs.end();
  const std::string nss = t.namespaced ? std::string(ns) : std::string();
  if (!o.continue_token.empty()) {
    const auto c = decode_continue(o.continue_token);
    it = objs.upper_bound({c.ns, c.name});
    out.resource_version = c.rv;
  } else {
    it = nss.empty() ? objs.begin() : objs.lower_bound({nss, ""});
  }
  std::int64_t count = 0;
  for (; it != end; ++it) {
    if (!nss.empty() && it->first.first != nss) break;
    if (!object_matches(*it->second, o.labels, o.fields)) continue;
    if (o.limit > 0 && count == o.limit) {
      // More remain: hand back a token that resumes after the last item returned.
      const auto& last = out.items.back();
      const auto& md = metadata_of(*last);
      out.continue_token = encode_continue({out.resource_version, str(md, "namespace"), str(md, "name")});
      // remainingItemCount only without selectors, as the API server does (counting matches
      // would mean evaluating every remaining object).
      if (o.labels.empty() && o.fields.empty()) {
        std::int64_t remaining = 0;
        for (; it != end && (nss.empty() || it->first.first == nss); ++it) ++remaining;
        out.remaining = remaining;
      }
      break;
    }
    out.items.push_back(it->second);
    ++count;
  }
  return out;
}

json::object Store::update(const ResourceType& t, std::string_view ns, json::object obj, const WriteOptions& o,
                           std::string_view subresource) {
  return *update_shared(t, ns, std::move(obj), o, subresource);
}

namespace {

// The object's etcd key as kube-apiserver names it in a StorageError (without /registry):
// /<prefix>[/<namespace>]/<name>, the prefix the resource's (a few compiled-in exceptions:
// pkg/kubeapiserver SpecialDefaultResourcePrefixes), a custom resource's /<group>/<plural>.
std::string storage_key(const ResourceType& t, std::string_view ns, std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> special = {{"replicationcontrollers", "controllers"},
                                                                          {"endpoints", "services/endpoints"},
                                                                          {"nodes", "minions"},
                                                                          {"services", "services/specs"},
                                                                          {"ingresses.networking.k8s.io", "ingress"}};
  std::string prefix = t.resource;
  if (!is_builtin_group(t.group))
    prefix = t.group + "/" + t.resource;
  else if (auto it = special.find(t.group_resource()); it != special.end())
    prefix = it->second;
  return ns.empty() ? fmt::format("/{}/{}", prefix, name) : fmt::format("/{}/{}/{}", prefix, ns, name);
}

// The strategies' AllowUnconditionalUpdate: an update without a resourceVersion (or with 0) takes
// the stored one, except for custom resources and their definitions
// (apiextensions-apiserver customResourceStrategy, customresourcedefinition strategy) and
// PodDisruptionBudgets (pkg/registry/policy/poddisruptionbudget), Leases (coordination/lease),
// RuntimeClasses (pkg/registry/node/runtimeclass) and CSIDrivers (pkg/registry/storage/csidriver).
bool allows_unconditional_update(const ResourceType& t) {
  return !t.schema && t.group != "apiextensions.k8s.io" && t.group != "coordination.k8s.io" &&
         t.group != "node.k8s.io" && !(t.group == "policy" && t.resource == "poddisruptionbudgets") &&
         !(t.group == "storage.k8s.io" && t.resource == "csidrivers");
}

}  // namespace

std::shared_ptr<const json::object> Store::update_shared(const ResourceType& t, std::string_view ns, json::object obj,
                                                         const WriteOptions& o, std::string_view subresource) {
  if (!t.namespaced) ns = {};
  std::shared_ptr<const json::object> result;
  {
    std::lock_guard lk(impl_->mu);
    auto& md = metadata_of(obj);
    const std::string name = str(md, "name");
    if (name.empty())
      throw StatusError::invalid(t, "", {{"FieldValueRequired", "Required value: name is required", "metadata.name"}});
    const std::string given_ns = str(md, "namespace");
    if (t.namespaced && !given_ns.empty() && given_ns != ns)
      throw StatusError::bad_request(
          "the namespace of the provided object does not match the namespace sent on the request");
    const Key key{std::string(ns), name};
    auto& objs = impl_->objects(t);
    auto it = objs.find(key);
    if (it == objs.end()) throw StatusError::not_found(t, name);
    const auto old = it->second;
    const auto& old_md = metadata_of(*old);
    // (Compared in place: neither object has changed yet.) The etcd3 store's GuaranteedUpdate: the
    // body's uid is a precondition, checked first (a StorageError naming the object's key); then
    // the versioner parses resourceVersion (ParseUint: anything else is a 500) and compares it.
    const std::string_view want_uid = str_view(md, "uid");
    if (o.uid_precondition && !want_uid.empty() && want_uid != str_view(old_md, "uid"))
      throw StatusError::conflict(
          t, name,
          fmt::format("StorageError: invalid object, Code: 4, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: "
                      "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                      storage_key(t, ns, name), want_uid, str(old_md, "uid")));
    std::uint64_t want_rv = 0;  // none given: 0, as the versioner reads it
    if (const std::string_view given = str_view(md, "resourceVersion"); !given.empty()) {
      std::string err;
      const auto n = go_parse_uint(given, &err);
      if (!n) throw StatusError(500, "", err);
      want_rv = *n;
    }
    if (want_rv == 0 && !allows_unconditional_update(t)) {
      // registry.Store.Update: version 0 is an unconditional update only where the strategy
      // allows one; else an Invalid error whose qualified kind is the resource (sic).
      ResourceType qualified;
      qualified.group = t.group;
      qualified.kind = t.resource;
      throw StatusError::invalid(
          qualified, name,
          {{"FieldValueInvalid", "Invalid value: 0x0: must be specified for an update", "metadata.resourceVersion"}});
    }
    if (want_rv != 0 && std::to_string(want_rv) != str_view(old_md, "resourceVersion"))
      throw StatusError::conflict(t, name);
    json::object next;
    if (subresource == "ephemeralcontainers") {
      // registry/core/pod/strategy.go dropNonEphemeralContainerUpdates: the stored pod, with the
      // body's name, namespace, resourceVersion, uid and spec.ephemeralContainers only.
      next = *old;
      auto& nmd = metadata_of(next);
      for (const char* k : {"name", "namespace", "resourceVersion", "uid"})
        if (const auto* v = md.if_contains(k))
          nmd[k] = *v;
        else
          nmd.erase(k);
      json::object& spec = util::ensure_object(next, "spec");
      const json::value* body_spec = obj.if_contains("spec");
      const json::value* eph =
          body_spec && body_spec->is_object() ? body_spec->as_object().if_contains("ephemeralContainers") : nullptr;
      if (eph && !eph->is_null())
        spec["ephemeralContainers"] = *eph;
      else
        spec.erase("ephemeralContainers");
    } else if (subresource == "status") {
      // The status endpoint changes status only (registry strategies' PrepareForUpdate).
      next = *old;
      if (const auto* st = obj.if_contains("status"))
        next["status"] = *st;
      else
        next.erase("status");
      // The built-in kinds' status strategies keep the old spec only (pkg/registry/*/strategy.go
      // PrepareForUpdate; none of the kinds served here calls metav1.ResetObjectMetaForStatus):
      // the body's labels, annotations, finalizers and ownerReferences are taken, except a
      // Deployment's labels and a pod's ownerReferences. A custom resource's status strategy
      // copies the old object whole and takes the status only (apiextensions statusStrategy).
      // Its managedFields are the fieldmanager's answer for the write (api.cpp Call::tracking,
      // server_side_apply): the body's, where it has them.
      if (const auto* mf = md.if_contains("managedFields")) metadata_of(next)["managedFields"] = *mf;
      if (!t.schema) {
        auto& nmd = metadata_of(next);
        for (const char* k : {"labels", "annotations", "finalizers", "ownerReferences"}) {
          if (std::string_view(k) == "labels" && t.resource == "deployments") continue;
          if (std::string_view(k) == "ownerReferences" && t.resource == "pods") continue;
          if (const auto* v = md.if_contains(k))
            nmd[k] = *v;
          else
            nmd.erase(k);
        }
      }
    } else {
      next = std::move(obj);
      // pods/binding (registry/core/pod/storage setPodHostAndAnnotations) writes spec.nodeName and
      // the PodScheduled condition in one update: its body's status is kept.
      if (t.has_status && subresource != "binding") {
        if (const auto* st = old->if_contains("status"))
          next["status"] = *st;
        else
          next.erase("status");
      }
      auto& nmd = metadata_of(next);
      // rest.BeforeUpdate: the generation is the server's; creationTimestamp and
      // deletionTimestamp are when the old object has them, the uid and
      // deletionGracePeriodSeconds when the body has none (a PUT's uid is a precondition, above).
      // What differs from the old object stays for validation to refuse
      // (ValidateObjectMetaAccessorUpdate: immutable). (Most bodies carry them as stored, a
      // binding always: equal values are not copied over again.)
      for (const char* k :
           {"uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"}) {
        const std::string_view key = k;
        const auto* have = nmd.if_contains(k);
        if (const auto* v = old_md.if_contains(k)) {
          const bool keep_body = (key == "deletionGracePeriodSeconds" && have && !have->is_null()) ||
                                 (key == "uid" && have && have->is_string() && !have->as_string().empty());
          if (!keep_body && (!have || !util::json_equal(*have, *v))) nmd[k] = *v;
        } else if (key == "generation" || (have && have->is_null())) {
          nmd.erase(k);
        }
      }
      if (t.namespaced) {
        if (const auto* have = nmd.if_contains("namespace"); !have || !have->is_string() || have->get_string() != ns)
          nmd["namespace"] = ns;
      } else {
        nmd.erase("namespace");
      }
    }
    next["apiVersion"] = t.api_version();
    next["kind"] = t.kind;
    AdmissionRequest req{
        AdmissionRequest::Operation::Update, &t, std::string(subresource), std::string(ns), &next, old.get(), &o};
    req.clock = &clock_;
    admit(req);
    auto& nmd = metadata_of(next);
    std::int64_t gen = 1;
    if (const auto* g = old_md.if_contains("generation"); g && g->is_int64()) gen = g->as_int64();
    // The status endpoint never bumps generation (the registries' status strategies keep the old
    // spec and metadata.generation); `next` is the old object with another status.
    const bool status_only = subresource == "status";
    // Kinds without a generation (pods) skip the spec comparison; priorityClassStrategy sets 1 on
    // create and never counts it up (its PrepareForUpdate does nothing).
    const bool generation =
        tracks_generation(t) && !(t.group == "scheduling.k8s.io" && t.resource == "priorityclasses");
    if (generation && !status_only &&
        (req.spec_changed || (!spec_equal(next, *old) && !spec_equal_by_value(t, next, *old))))
      ++gen;
    // pkg/registry/apps/deployment/strategy.go PrepareForUpdate: a Deployment's annotations count
    // too (they once carried rollback requests); an EndpointSlice's labels (its strategy's).
    else if (generation && !status_only &&
             ((t.group == "apps" && t.resource == "deployments") ||
              (t.group == "discovery.k8s.io" && t.resource == "endpointslices"))) {
      const char* key = t.group == "apps" ? "annotations" : "labels";
      const json::value* na = metadata_of(next).if_contains(key);
      const json::value* oa = old_md.if_contains(key);
      if (!na != !oa || (na && !util::json_equal(*na, *oa))) ++gen;
    }
    if (generation) nmd["generation"] = gen;  // (else the old object's, as copied above)
    // csiDriverStrategy sets no generation on create, and PrepareForUpdate counts it up from there
    // (0, left out) when the spec changes.
    if (t.group == "storage.k8s.io" && t.resource == "csidrivers" && !status_only && !spec_equal(next, *old) &&
        !spec_equal_by_value(t, next, *old)) {
      const auto* g = old_md.if_contains("generation");
      nmd["generation"] = (g && g->is_int64() ? g->as_int64() : 0) + 1;
    }
    nmd["resourceVersion"] = str(old_md, "resourceVersion");
    // A no-op update writes nothing and sends no event. A status write usually changes the status:
    // compare that first, the whole object only when it is the same.
    const auto status_of = [](const json::object& o) { return o.if_contains("status"); };
    const json::value *new_status = status_of(next), *old_status = status_of(*old);
    const bool status_differs =
        status_only && (!new_status != !old_status || (new_status && !util::json_equal(*new_status, *old_status)));
    // A binding sets spec.nodeName where the stored pod has none (bind_pod refuses an assigned
    // pod), so it is never a no-op: the whole-object comparison is skipped when the node moved.
    const auto node_name = [](const json::object& o) -> const json::value* {
      const json::value* spec = o.if_contains("spec");
      return spec && spec->is_object() ? spec->as_object().if_contains("nodeName") : nullptr;
    };
    const bool node_moved = subresource == "binding" && [&] {
      const json::value *a = node_name(next), *b = node_name(*old);
      return !a != !b || (a && !util::json_equal(*a, *b));
    }();
    if (!status_differs && !node_moved && util::json_equal(next, *old)) return old;
    if (o.dry_run) return std::make_shared<const json::object>(std::move(next));
    // registry store.go Update, ShouldDeleteDuringUpdate: an object being deleted whose last
    // finalizer went is deleted, unless a grace period still runs (a pod on a node: its kubelet
    // deletes it with a grace of 0 once its containers have stopped).
    const json::value* old_grace = old_md.if_contains("deletionGracePeriodSeconds");
    if (nmd.contains("deletionTimestamp") && !has_finalizers(nmd) &&
        (!old_grace || old_grace->is_null() || (old_grace->is_int64() && old_grace->as_int64() == 0))) {
      result = std::make_shared<const json::object>(std::move(next));
      erase_locked(t, key.first, key.second, result);
    } else {
      nmd["resourceVersion"] = std::to_string(++impl_->rv);
      result = std::make_shared<const json::object>(std::move(next));
      impl_->put(t, key, result);
      commit_event(EventType::Modified, t, result, old);
      const json::value* refs = metadata_of(*result).if_contains("ownerReferences");
      const json::value* old_refs = metadata_of(*old).if_contains("ownerReferences");
      if (refs && (!old_refs || !util::json_equal(*refs, *old_refs))) gc_dangling_locked(t, key.first, key.second);
    }
  }
  sync_journal();
  dispatch();
  return result;
}

json::object Store::mutate(const ResourceType& t, std::string_view ns, std::string_view name,
                           const std::function<void(json::object&)>& fn, const WriteOptions& o,
                           std::string_view subresource) {
  for (int attempt = 0;; ++attempt) {
    json::object cur = get(t, ns, name);
    fn(cur);
    try {
      return update(t, ns, std::move(cur), o, subresource);
    } catch (const StatusError& e) {
      if (e.reason() != "Conflict" || attempt >= 16) throw;
    }
  }
}

// Deletion as the registry and the garbage collector do it together
// (apiserver/pkg/registry/generic/registry/store.go Delete, pkg/controller/garbagecollector):
//  - an object with finalizers is not removed: it gets metadata.deletionTimestamp (and
//    deletionGracePeriodSeconds 0) and stays until an update empties its finalizers;
//  - Foreground adds the foregroundDeletion finalizer, then the GC deletes the dependents and
//    removes the finalizer once no dependent with ownerReference.blockOwnerDeletion=true is left;
//  - Orphan removes the owner's ownerReference from every dependent (the GC's orphan finalizer,
//    done at once here), then deletes the object;
//  - Background deletes the object; the GC then deletes the dependents of an owner that is gone.
// Here the GC runs synchronously under the store's lock, so what a test observes after delete
// returns is what a real cluster converges to.
bool Store::delete_locked_recursive(const ResourceType& t, const std::string& ns, const std::string& name,
                                    Propagation p, std::optional<std::int64_t> grace) {
  auto& objs = impl_->objects(t);
  auto it = objs.find({ns, name});
  if (it == objs.end()) return true;
  const auto old = it->second;
  const std::string uid = str(metadata_of(*old), "uid");
  if (p == Propagation::Default) p = t.orphan_by_default ? Propagation::Orphan : Propagation::Background;
  std::vector<Ref> deps;
  if (auto d = impl_->dependents.find(uid); d != impl_->dependents.end())
    deps.assign(d->second.begin(), d->second.end());
  if (p == Propagation::Orphan) {
    for (const auto& d : deps) {
      auto& dobjs = impl_->objects(*d.type);
      auto di = dobjs.find({d.ns, d.name});
      if (di == dobjs.end()) continue;
      json::object next = *di->second;
      auto& nmd = metadata_of(next);
      json::array kept;
      if (auto* refs = nmd.if_contains("ownerReferences"); refs && refs->is_array())
        for (auto& r : refs->as_array())
          if (!(r.is_object() && str(r.as_object(), "uid") == uid)) kept.push_back(r);
      if (kept.empty())
        nmd.erase("ownerReferences");
      else
        nmd["ownerReferences"] = std::move(kept);
      nmd["resourceVersion"] = std::to_string(++impl_->rv);
      auto prev = di->second;
      auto stored = std::make_shared<const json::object>(std::move(next));
      impl_->put(*d.type, {d.ns, d.name}, stored);
      commit_event(EventType::Modified, *d.type, stored, prev);
    }
  }
  json::object next = *old;
  auto& md = metadata_of(next);
  bool changed = false;
  if (p == Propagation::Foreground && set_finalizer(md, kForegroundDeletion, true)) changed = true;
  // A pod on a node is deleted gracefully (rest.BeforeDelete): marked with deletionTimestamp (now
  // plus its grace period) and deletionGracePeriodSeconds, and left for its kubelet, which stops
  // its containers and deletes it with a grace of 0. Once marked, only a shorter grace period
  // changes anything (a request without one leaves the deletion pending); 0 removes it.
  if (is_pod(t)) {
    const bool marked = md.contains("deletionTimestamp");
    const auto* cur = md.if_contains("deletionGracePeriodSeconds");
    if (marked && cur && cur->is_int64() && cur->as_int64() > 0) {
      if (!shorten_pod_deletion(md, grace)) return false;  // pending as it was
      changed = md.at("deletionGracePeriodSeconds").as_int64() > 0 || has_finalizers(md);
    } else if (!marked) {
      const std::int64_t g = pod_deletion_grace(*old, grace);
      if (g > 0) {
        md["deletionTimestamp"] = to_rfc3339(clock_.now() + std::chrono::seconds(g));
        md["deletionGracePeriodSeconds"] = g;
        bump_generation(md);
        changed = true;
      }
    }
    if (changed && !has_finalizers(md)) {
      md["resourceVersion"] = std::to_string(++impl_->rv);
      auto stored = std::make_shared<const json::object>(std::move(next));
      impl_->put(t, {ns, name}, stored);
      commit_event(EventType::Modified, t, stored, old);
      return false;
    }
  }
  if (!has_finalizers(md)) {
    erase_locked(t, ns, name, old);
    return true;
  }
  if (!md.contains("deletionTimestamp")) {
    md["deletionTimestamp"] = to_rfc3339(clock_.now());
    md["deletionGracePeriodSeconds"] = 0;
    bump_generation(md);
    changed = true;
  }
  if (changed) {
    md["resourceVersion"] = std::to_string(++impl_->rv);
    auto stored = std::make_shared<const json::object>(std::move(next));
    impl_->put(t, {ns, name}, stored);
    commit_event(EventType::Modified, t, stored, old);
  }
  if (p == Propagation::Foreground) {
    // attemptToDeleteItem: dependents of an owner waiting for them are deleted in the foreground
    // when they have dependents of their own, else in the background.
    for (const auto& d : deps) {
      const auto dep = impl_->objects(*d.type).find({d.ns, d.name});
      if (dep == impl_->objects(*d.type).end()) continue;
      const bool has_deps = impl_->dependents.count(str(metadata_of(*dep->second), "uid")) > 0;
      delete_locked_recursive(*d.type, d.ns, d.name, has_deps ? Propagation::Foreground : Propagation::Background);
    }
    gc_foreground_locked(uid);
  }
  return !objs.count({ns, name});
}

void Store::gc_foreground_locked(const std::string& uid) {
  // processDeletingDependentsItem: with no blocking dependent left, remove the finalizer.
  auto f = impl_->foreground.find(uid);
  if (f == impl_->foreground.end()) return;
  const Ref owner = f->second;
  auto& objs = impl_->objects(*owner.type);
  auto it = objs.find({owner.ns, owner.name});
  if (it == objs.end()) {
    impl_->foreground.erase(f);
    return;
  }
  if (auto d = impl_->dependents.find(uid); d != impl_->dependents.end()) {
    for (const auto& dep : d->second) {
      auto di = impl_->objects(*dep.type).find({dep.ns, dep.name});
      if (di == impl_->objects(*dep.type).end()) continue;
      if (const auto* refs = metadata_of(*di->second).if_contains("ownerReferences"); refs && refs->is_array())
        for (const auto& r : refs->as_array())
          if (r.is_object() && str(r.as_object(), "uid") == uid && r.as_object().if_contains("blockOwnerDeletion") &&
              r.as_object().at("blockOwnerDeletion") == true)
            return;  // still blocked
    }
  }
  const auto old = it->second;
  json::object next = *old;
  auto& md = metadata_of(next);
  set_finalizer(md, kForegroundDeletion, false);
  impl_->foreground.erase(uid);
  if (!has_finalizers(md)) {
    erase_locked(*owner.type, owner.ns, owner.name, std::make_shared<const json::object>(std::move(next)));
    return;
  }
  md["resourceVersion"] = std::to_string(++impl_->rv);
  auto stored = std::make_shared<const json::object>(std::move(next));
  impl_->put(*owner.type, {owner.ns, owner.name}, stored);
  commit_event(EventType::Modified, *owner.type, stored, old);
}

// garbagecollector.go attemptToDeleteItem / classifyReferences, run when an object's
// ownerReferences are written (the GC's graph gains a virtual node for an owner it has not seen,
// whose absence it then confirms): each reference is solid (the owner exists with that uid),
// dangling (no such object, or another uid) or waiting for its dependents (a foreground deletion).
// With a solid owner, the dangling and waiting references are removed; with none, the object is
// deleted (in the foreground when an owner waits and it has dependents, or when its finalizers say
// so; orphaning for the orphan finalizer; else in the background). A reference whose kind is not served leaves the
// object alone (the GC retries it). An object already being deleted is left to that.
void Store::gc_dangling_locked(const ResourceType& t, const std::string& ns, const std::string& name) {
  auto& objs = impl_->objects(t);
  auto it = objs.find({ns, name});
  if (it == objs.end()) return;
  const auto old = it->second;
  const auto& md = metadata_of(*old);
  if (md.contains("deletionTimestamp")) return;
  const auto* refs = md.if_contains("ownerReferences");
  if (!refs || !refs->is_array() || refs->as_array().empty()) return;
  std::set<std::string> absent;  // dangling and waiting owners' uids
  bool solid = false, waiting = false;
  for (const auto& r : refs->as_array()) {
    if (!r.is_object()) continue;
    const auto& ref = r.as_object();
    const ResourceType* ot = find_kind(str(ref, "apiVersion"), str(ref, "kind"));
    if (!ot) return;
    const auto& owners = impl_->objects(*ot);
    auto o = owners.find({ot->namespaced ? ns : std::string(), str(ref, "name")});
    const std::string uid = str(ref, "uid");
    if (o == owners.end() || str(metadata_of(*o->second), "uid") != uid) {
      absent.insert(uid);
    } else if (const auto& omd = metadata_of(*o->second);
               omd.contains("deletionTimestamp") && has_finalizer(omd, kForegroundDeletion)) {
      waiting = true;
      absent.insert(uid);
    } else {
      solid = true;
    }
  }
  if (solid) {
    if (absent.empty()) return;
    json::object next = *old;
    auto& nmd = metadata_of(next);
    json::array kept;
    for (const auto& r : nmd.at("ownerReferences").as_array())
      if (!(r.is_object() && absent.count(str(r.as_object(), "uid")))) kept.push_back(r);
    nmd["ownerReferences"] = std::move(kept);
    nmd["resourceVersion"] = std::to_string(++impl_->rv);
    auto stored = std::make_shared<const json::object>(std::move(next));
    impl_->put(t, {ns, name}, stored);
    commit_event(EventType::Modified, t, stored, old);
    return;
  }
  // Owners waiting for it and dependents of its own: deleted in the foreground; else as its
  // finalizers say.
  const bool has_dependents = impl_->dependents.count(str(md, "uid")) > 0;
  const Propagation p = waiting && has_dependents                ? Propagation::Foreground
                        : has_finalizer(md, "orphan")            ? Propagation::Orphan
                        : has_finalizer(md, kForegroundDeletion) ? Propagation::Foreground
                                                                 : Propagation::Background;
  delete_locked_recursive(t, ns, name, p);
}

void Store::erase_locked(const ResourceType& t, const std::string& ns, const std::string& name,
                         const std::shared_ptr<const json::object>& last) {
  auto& objs = impl_->objects(t);
  auto it = objs.find({ns, name});
  if (it == objs.end()) return;
  const auto old = it->second;
  const auto& old_md = metadata_of(*old);
  const std::string uid = str(old_md, "uid");
  std::vector<std::string> owners;
  if (const auto* refs = old_md.if_contains("ownerReferences"); refs && refs->is_array())
    for (const auto& r : refs->as_array())
      if (r.is_object()) owners.push_back(str(r.as_object(), "uid"));
  impl_->erase(t, {ns, name});
  json::object gone = *last;
  metadata_of(gone)["resourceVersion"] = std::to_string(++impl_->rv);
  commit_event(EventType::Deleted, t, std::make_shared<const json::object>(std::move(gone)), old);
  // The GC: dependents of an owner that no longer exists are deleted (in the background) ...
  std::vector<Ref> deps;
  if (auto d = impl_->dependents.find(uid); d != impl_->dependents.end())
    deps.assign(d->second.begin(), d->second.end());
  for (const auto& d : deps) delete_locked_recursive(*d.type, d.ns, d.name, Propagation::Background);
  // ... and an owner waiting for its dependents may now lose its foregroundDeletion finalizer.
  for (const auto& o : owners) gc_foreground_locked(o);
}

json::object Store::remove(const ResourceType& t, std::string_view ns, std::string_view name, const DeleteOptions& o,
                           bool* deleted) {
  if (!t.namespaced) ns = {};
  json::object result;
  if (deleted) *deleted = true;
  {
    std::lock_guard lk(impl_->mu);
    auto& objs = impl_->objects(t);
    const Key key{std::string(ns), std::string(name)};
    auto it = objs.find(key);
    if (it == objs.end()) throw StatusError::not_found(t, name);
    const auto& md = metadata_of(*it->second);
    // rest.BeforeDelete: the options' preconditions, a Conflict on the kind ("Service",
    // "Deployment.apps"), not on the resource.
    auto kind_conflict = [&](const std::string& why) {
      return StatusError(409, "Conflict",
                         fmt::format("Operation cannot be fulfilled on {} \"{}\": {}", t.group_kind(), name, why),
                         std::string(name), t.group, t.kind);
    };
    if (o.precondition_uid && *o.precondition_uid != str(md, "uid"))
      throw kind_conflict(
          fmt::format("the UID in the precondition ({}) does not match the UID in record ({}). The "
                      "object might have been deleted and then recreated",
                      *o.precondition_uid, str(md, "uid")));
    if (o.precondition_resource_version && *o.precondition_resource_version != str(md, "resourceVersion"))
      throw kind_conflict(
          fmt::format("the ResourceVersion in the precondition ({}) does not match the ResourceVersion "
                      "in record ({}). The object might have been modified",
                      *o.precondition_resource_version, str(md, "resourceVersion")));
    result = *it->second;
    AdmissionRequest req{
        AdmissionRequest::Operation::Delete, &t, "", std::string(ns), nullptr, it->second.get(), nullptr};
    for (const auto& [stage, p] : impl_->plugins) p(req);
    // What registry.Store.Delete answers right away (a dry run stores nothing else):
    // deletionFinalizersForGarbageCollection gives the object the orphan finalizer when it orphans
    // (the kind's default for a Job), foregroundDeletion in the foreground, neither in the
    // background; rest.BeforeDelete marks a pod for graceful deletion (a grace of 0 for one on no
    // node); an object left with finalizers or a grace period is not deleted yet and comes back
    // with its deletionTimestamp and deletionGracePeriodSeconds. (Here the orphaning and the
    // foreground wait of a real delete then happen at once, below.)
    const json::object view = [&] {
      json::object v = result;
      auto& vmd = metadata_of(v);
      if (vmd.contains("deletionTimestamp")) {
        if (is_pod(t)) shorten_pod_deletion(vmd, o.grace_period);  // (as delete_locked_recursive will)
        return v;
      }
      // (The event strategy's DefaultGarbageCollectionPolicy is Unsupported: an Event is never
      // orphaning nor waiting for dependents, whatever the options say.)
      const bool gc_unsupported = t.resource == "events" && (t.group.empty() || t.group == "events.k8s.io");
      const Propagation p = gc_unsupported                          ? Propagation::Background
                            : o.propagation != Propagation::Default ? o.propagation
                            : t.orphan_by_default                   ? Propagation::Orphan
                                                                    : Propagation::Background;
      set_finalizer(vmd, "orphan", p == Propagation::Orphan);
      set_finalizer(vmd, kForegroundDeletion, p == Propagation::Foreground);
      const bool pod = is_pod(t);
      const std::int64_t grace = pod ? pod_deletion_grace(v, o.grace_period) : 0;
      if (pod || has_finalizers(vmd)) {
        vmd["deletionTimestamp"] = to_rfc3339(clock_.now() + std::chrono::seconds(grace));
        vmd["deletionGracePeriodSeconds"] = grace;
        bump_generation(vmd);
      }
      return v;
    }();
    const json::value* view_grace = metadata_of(view).if_contains("deletionGracePeriodSeconds");
    const bool pending = metadata_of(view).contains("finalizers") ||
                         (view_grace && view_grace->is_int64() && view_grace->as_int64() > 0);
    if (o.dry_run) {
      if (deleted) *deleted = !pending;
      return view;
    }
    // Deleting a namespace deletes everything in it (the namespace controller's job).
    if (&t == &type("", "namespaces")) {
      for (auto& [tp, tobjs] : impl_->data) {
        if (!tp->namespaced) continue;
        std::vector<std::string> names;
        for (auto oi = tobjs.lower_bound({std::string(name), ""}); oi != tobjs.end() && oi->first.first == name; ++oi)
          names.push_back(oi->first.second);
        // (At once, pods too: the namespace itself goes at once here, difference 33. So do
        // objects with finalizers — a Job's pods, a claim in use: no controller gets to act on
        // them in a namespace that is gone.)
        for (const auto& n : names) {
          if (auto oi = tobjs.find({std::string(name), n});
              oi != tobjs.end() && has_finalizers(metadata_of(*oi->second))) {
            json::object bare = *oi->second;
            metadata_of(bare).erase("finalizers");
            impl_->put(*tp, {std::string(name), n}, std::make_shared<const json::object>(std::move(bare)));
          }
          delete_locked_recursive(*tp, std::string(name), n, Propagation::Background, std::int64_t{0});
        }
      }
    }
    const bool erased = delete_locked_recursive(t, std::string(ns), std::string(name), o.propagation, o.grace_period);
    if (!erased) {
      result = *impl_->objects(t).at(key);  // still there: what it looks like now (deletionTimestamp set)
      if (deleted) *deleted = false;
    } else if (pending || (t.group.empty() && t.resource == "pods")) {
      result = view;  // (the orphan finalizer's wait, already over here; a pod's marks)
      if (deleted) *deleted = !pending;
    }
  }
  sync_journal();
  dispatch();
  return result;
}

// ---- watch -------------------------------------------------------------------------------------

Store::SubscriptionId Store::subscribe(std::function<void(const WatchEvent&)> callback) {
  std::lock_guard lk(impl_->mu);
  const auto id = impl_->next_sub++;
  impl_->subscribers.emplace(id, std::move(callback));
  impl_->subscriber_snapshot.reset();
  return id;
}

void Store::unsubscribe(SubscriptionId id) {
  std::lock_guard lk(impl_->mu);
  impl_->subscribers.erase(id);
  impl_->subscriber_snapshot.reset();
}

void Store::start_watch_cache() {
  std::lock_guard lk(impl_->mu);
  impl_->compacted = std::max(impl_->compacted, impl_->rv);
}

Store::WakeBatch::WakeBatch(Store& s) : store_(s) {
  std::lock_guard lk(s.impl_->mu);
  auto& impl = *s.impl_;
  // One batch at a time: a second thread's batch waits for none, its writes wake as usual.
  if (impl.batch_depth == 0) impl.batch_thread = std::this_thread::get_id();
  if (impl.batch_thread == std::this_thread::get_id()) ++impl.batch_depth;
}

Store::WakeBatch::~WakeBatch() {
  std::vector<std::shared_ptr<WatchQueue>> wake;
  {
    std::lock_guard lk(store_.impl_->mu);
    auto& impl = *store_.impl_;
    if (impl.batch_thread != std::this_thread::get_id() || impl.batch_depth == 0) return;
    if (--impl.batch_depth > 0) return;
    impl.batch_thread = {};
    wake.swap(impl.to_wake);
  }
  for (const auto& q : wake) q->wake();
}

void Store::set_journal(std::shared_ptr<Journal> j) {
  std::lock_guard lk(impl_->mu);
  impl_->journal = std::move(j);
}

void Store::sync_journal() {
  std::shared_ptr<Journal> j;
  {
    std::lock_guard lk(impl_->mu);
    j = impl_->journal;
  }
  if (j) j->sync();
}

Store::DeferDispatch::DeferDispatch(Store& s) : store_(s) {
  if (deferring_store && deferring_store != s.impl_.get()) return;  // another store's: not nested
  deferring_store = s.impl_.get();
  ++defer_depth;
  active_ = true;
}

Store::DeferDispatch::~DeferDispatch() { finish(); }

void Store::DeferDispatch::answered() {
  if (!active_ || answered_) return;
  answered_ = true;
  store_.impl_->delivering.fetch_add(1, std::memory_order_acq_rel);
}

void Store::DeferDispatch::finish() {
  if (finished_) return;
  finished_ = true;
  if (!active_) return;
  auto& impl = *store_.impl_;
  answered();
  if (--defer_depth == 0) deferring_store = nullptr;
  store_.dispatch();
  {
    // Another thread may have been dispatching (dispatch() then returns at once): the events are
    // delivered when it has run out of them.
    std::unique_lock lk(impl.mu);
    impl.idle.wait(lk, [&] { return !impl.dispatching && impl.pending.empty(); });
  }
  if (impl.delivering.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    std::lock_guard lk(impl.settle_mu);
    impl.settled.notify_all();
  }
}

void Store::settle() const {
  auto& impl = *impl_;
  if (impl.delivering.load(std::memory_order_acquire) == 0) return;
  std::unique_lock lk(impl.settle_mu);
  impl.settled.wait(lk, [&] { return impl.delivering.load(std::memory_order_acquire) == 0; });
}

WritingAs::WritingAs(const char* manager) noexcept : previous_(writing_as) { writing_as = manager; }
WritingAs::~WritingAs() { writing_as = previous_; }
const char* WritingAs::current() noexcept { return writing_as; }

void Store::dispatch() {
  if (deferring_store == impl_.get()) return;  // this thread's DeferDispatch delivers them at finish()
  std::unique_lock lk(impl_->mu);
  if (!impl_->dropped.empty()) {
    std::vector<WatchEvent> dropped;
    dropped.swap(impl_->dropped);
    lk.unlock();
    dropped.clear();  // the versions only the history still held are freed here, unlocked
    lk.lock();
  }
  if (impl_->dispatching) return;
  impl_->dispatching = true;
  while (!impl_->pending.empty()) {
    WatchEvent ev = std::move(impl_->pending.front());
    impl_->pending.pop_front();
    // The subscribers as of this event (a snapshot rebuilt only when one subscribes or leaves).
    std::shared_ptr<const std::vector<std::function<void(const WatchEvent&)>>> subs = impl_->subscriber_list();
    // Release every level of the recursive lock held by this thread while callbacks run.
    lk.unlock();
    for (const auto& cb : *subs) {
      // A subscriber that throws (a controller's bug, a write refused inside it) loses this event
      // alone: the others still get it, and later events are still delivered (the write itself
      // is already stored and journaled; an exception here would stop dispatching for good, or
      // end the server from the request thread that delivers it).
      try {
        WritingAs nobody(nullptr);  // each component names itself (WritingAs)
        cb(ev);
      } catch (const std::exception&) {
        ++impl_->subscriber_failures;
      }
    }
    lk.lock();
  }
  impl_->dispatching = false;
  impl_->idle.notify_all();
}

std::shared_ptr<WatchQueue> Store::open_watch(const ResourceType& t, std::string_view ns,
                                              std::uint64_t resource_version, LabelSelector labels,
                                              FieldSelector fields) {
  auto q = std::make_shared<WatchQueue>();
  q->type_ = &t;
  q->ns_ = t.namespaced ? std::string(ns) : std::string();
  q->labels_ = std::move(labels);
  q->fields_ = std::move(fields);
  std::lock_guard lk(impl_->mu);
  if (resource_version == 0) {
    // "Get State and Start at Most Recent": synthetic ADDED events for what exists now.
    for (const auto& [k, obj] : impl_->objects(t)) {
      if (!q->ns_.empty() && k.first != q->ns_) continue;
      if (!object_matches(*obj, q->labels_, q->fields_)) continue;
      q->push(WatchEvent{EventType::Added, &t, obj, nullptr, std::stoull(str(metadata_of(*obj), "resourceVersion"))});
    }
  } else {
    // apiserver/pkg/storage/cacher: `too old resource version: %d (%d)` as 410 Expired.
    if (resource_version < impl_->compacted)
      throw StatusError::gone(fmt::format("too old resource version: {} ({})", resource_version, impl_->compacted));
    // getAllEventsSinceLocked: once the type's window dropped an event, the oldest version it
    // can deliver from is that of its first event.
    if (auto w = impl_->windows.find(&t); w != impl_->windows.end() && w->second.removed && !w->second.events.empty()) {
      const std::uint64_t oldest = w->second.events.front().first;
      if (resource_version < oldest - 1)
        throw StatusError::gone(fmt::format("too old resource version: {} ({})", resource_version, oldest - 1));
    }
    for (const auto& ev : impl_->history) {
      if (ev.resource_version <= resource_version || ev.type_info != &t) continue;
      q->push(ev);
    }
  }
  impl_->queues.push_back(q);
  return q;
}

void Store::close_watch(const std::shared_ptr<WatchQueue>& q) {
  std::lock_guard lk(impl_->mu);
  q->close();
  std::erase(impl_->queues, q);
}

bool WatchQueue::closed() const {
  std::lock_guard lk(mu_);
  return closed_;
}

void WatchQueue::close() {
  {
    std::lock_guard lk(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

std::vector<WatchEvent> WatchQueue::next(std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  cv_.wait_for(lk, timeout, [&] { return closed_ || !events_.empty(); });
  std::vector<WatchEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

void WatchQueue::wake() {
  {
    std::lock_guard lk(mu_);
    ++wakes_;
  }
  cv_.notify_all();
}

std::uint64_t WatchQueue::wakes() const {
  std::lock_guard lk(mu_);
  return wakes_;
}

bool WatchQueue::push(const WatchEvent& e) {
  // Translate to what this watcher sees: a change moving an object into or out of its selector
  // is an ADDED or DELETED for it (apiserver cacher semantics).
  if (e.type_info != type_) return false;
  const auto& md = metadata_of(*e.object);
  if (!ns_.empty() && str(md, "namespace") != ns_) return false;
  const bool now = object_matches(*e.object, labels_, fields_);
  const bool before = e.old_object && object_matches(*e.old_object, labels_, fields_);
  WatchEvent out = e;
  if (e.type == EventType::Modified) {
    if (now && !before)
      out.type = EventType::Added;
    else if (!now && before) {
      // cache_watcher.go convertToWatchEvent: a delete with the previous object's content (the last
      // state this watcher's selector matched) at the event's resourceVersion.
      out.type = EventType::Deleted;
      auto last = std::make_shared<json::object>(*e.old_object);
      metadata_of(*last)["resourceVersion"] = std::to_string(e.resource_version);
      out.object = std::move(last);
    } else if (!now)
      return false;
  } else if (e.type == EventType::Deleted) {
    if (!(before || now)) return false;
  } else if (!now) {
    return false;
  }
  bool wake = true;
  {
    std::lock_guard lk(mu_);
    if (closed_) return false;
    if (events_.size() >= max_pending_) {
      closed_ = true;  // a watcher too slow to keep up is closed; it re-watches from its last version
    } else {
      // Batched fan-out: next() only waits while the queue is empty and then takes everything, so
      // only the event that makes it non-empty needs to wake the reader; the rest join its batch.
      wake = events_.empty();
      events_.push_back(std::move(out));
    }
  }
  return wake;
}

}  // namespace gpupool::embedded
