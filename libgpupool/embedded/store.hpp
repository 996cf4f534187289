// embedded/store.hpp — the embedded API server's object store (what etcd + the registry are in
// Kubernetes): typed, thread-safe, in memory, with one global resourceVersion counter and a watch
// history.
//
// How a controller uses it
// ------------------------
//   Store& s = ...;                                  // owned by the server (EmbeddedServer)
//   const ResourceType& pods = s.type("", "pods");   // or s.type("apps", "deployments")
//   auto sub = s.subscribe([&](const WatchEvent& e) {  // every committed change, all types,
//     if (e.type->resource == "replicasets") ...;    // in resourceVersion order
//   });
//   s.create(pods, "ns", pod_json);                  // same calls (and same admission/validation)
//   s.update(pods, "ns", changed_pod);               // as the HTTP layer; 409 -> re-get and retry
//   s.mutate(pods, "ns", "name", [](json::object& o) { ...; });  // read-modify-write, retried
//   s.unsubscribe(sub);
// Subscriber callbacks run synchronously on the thread that committed the change, after the store
// lock is released, one event at a time and in order. A callback may itself write to the store:
// its events are queued and delivered after the current callback returns (no recursion), so when
// the outermost write returns in a single-threaded test, every controller has already reacted.
// Errors are thrown as StatusError (an ApiError with the Status details), e.g. 404 NotFound,
// 409 AlreadyExists/Conflict, 422 Invalid, 410 Expired.
//
// Watches for HTTP clients use open_watch(): a queue the HTTP layer drains (events after a given
// resourceVersion, replayed from the bounded history; 410 Expired when older than the history).
#pragma once

#include <boost/json.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "embedded/clock.hpp"
#include "embedded/selector.hpp"
#include "gpupool/error.hpp"

namespace gpupool::embedded {

namespace json = boost::json;

/// One served resource (a row of discovery). Built-in types are registered by the Store's
/// constructor; CRDs add more at run time.
namespace crd {
struct Schema;
}

struct ResourceType {
  std::string group;     ///< "" for core
  std::string version;   ///< "v1", "v2beta1"
  std::string resource;  ///< plural, e.g. "pods"
  std::string kind;      ///< "Pod"
  std::string singular;  ///< "pod"
  bool namespaced = true;
  bool has_status = false;  ///< a status subresource: the main endpoint ignores status changes
  bool has_scale = false;
  bool orphan_by_default = false;  ///< default propagationPolicy Orphan (batch/v1 Job, core RC)
  std::vector<std::string> short_names;
  std::vector<std::string> categories;  ///< "all"
  /// A custom resource's structural schema (its CRD's served version); null for built-in kinds.
  std::shared_ptr<const crd::Schema> schema;
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  std::string group_resource() const { return group.empty() ? resource : resource + "." + group; }
  /// The qualified kind of messages: "Pod", "Deployment.apps" (schema.GroupKind's String).
  std::string group_kind() const { return group.empty() ? kind : kind + "." + group; }
};

/// Whether an API group is Kubernetes' own (built-in kinds) rather than a custom resource's.
bool is_builtin_group(std::string_view group);

/// An ApiError carrying the Status details (name, group, kind) the HTTP layer serialises.
class StatusError : public ApiError {
 public:
  StatusError(int code, std::string reason, std::string message, std::string name = {}, std::string group = {},
              std::string kind = {}, std::vector<StatusCause> causes = {}, std::optional<int> retry_after = {});
  const std::string& name() const noexcept { return name_; }
  const std::string& group() const noexcept { return group_; }
  const std::string& kind() const noexcept { return kind_; }
  /// The metav1.Status object (kind Status, apiVersion v1, status Failure, ...).
  json::object to_status() const;

  // Builders worded as the API server words them (staging/src/k8s.io/apimachinery/pkg/api/errors).
  static StatusError not_found(const ResourceType& t, std::string_view name);
  static StatusError already_exists(const ResourceType& t, std::string_view name);
  static StatusError conflict(
      const ResourceType& t, std::string_view name,
      std::string_view why =
          "the object has been modified; please apply your changes to the latest version and try again");
  static StatusError invalid(const ResourceType& t, std::string_view name, std::vector<StatusCause> causes);
  /// A request's options refused (`ListOptions.meta.k8s.io "" is invalid: ...`).
  static StatusError invalid_options(std::string_view kind, std::vector<StatusCause> causes);
  static StatusError bad_request(std::string message);
  static StatusError gone(std::string message);
  static StatusError forbidden(std::string_view user, std::string_view verb, const ResourceType& t, std::string_view ns,
                               std::string_view name = {}, std::string_view sub = {});

 private:
  std::string name_, group_, kind_;
};

enum class EventType { Added, Modified, Deleted };
std::string_view to_string(EventType t) noexcept;  ///< "ADDED" | "MODIFIED" | "DELETED"

struct WatchEvent {
  EventType type;
  const ResourceType* type_info = nullptr;         ///< stable for the store's life
  std::shared_ptr<const json::object> object;      ///< after the change (the last state for DELETED)
  std::shared_ptr<const json::object> old_object;  ///< before the change (null for ADDED)
  std::uint64_t resource_version = 0;
};

struct ListOptions {
  LabelSelector labels;
  FieldSelector fields;
  std::int64_t limit = 0;  ///< 0: no limit
  std::string continue_token;
};

struct ListResult {
  std::vector<std::shared_ptr<const json::object>> items;
  std::uint64_t resource_version = 0;     ///< the store's revision at list time
  std::string continue_token;             ///< empty when complete
  std::optional<std::int64_t> remaining;  ///< remainingItemCount: set for paged lists without selectors
};

enum class Propagation { Default, Orphan, Background, Foreground };
/// "Orphan" | "Background" | "Foreground"; throws StatusError(400) otherwise.
Propagation parse_propagation(std::string_view text);

struct WriteOptions {
  bool dry_run = false;
  std::string field_manager;
  std::string user;                      ///< for admission plugins that care
  bool keep_creation_timestamp = false;  ///< in-process seeding (topology nodes): keep a given one
  /// In-process seeding of a topology's nodes: they join Ready, as if the node lifecycle controller
  /// had already removed the not-ready taint TaintNodesByCondition gives every new node.
  bool seeded_node = false;
  /// A client's POST: the body's metadata.resourceVersion is the client's. A dry run answers it as
  /// given (the dry-run storage copies the object back); a real create refuses one that reads as a
  /// number other than 0 (etcd3 store Create, after admission: a 500) and replaces any other.
  /// Writes from inside the server leave this unset: theirs is dropped.
  bool client_create = false;
  /// An update's body uid is a precondition (a PUT: the etcd3 store's, checked first). A patched
  /// object's is not (patch.go's DefaultUpdatedObjectInfo has none): a changed one is refused by
  /// validation (metadata.uid is immutable).
  bool uid_precondition = true;
  /// Where the API's warnings for this request go (the response's Warning headers); null: dropped.
  std::vector<std::string>* warnings = nullptr;
  /// A write through the scale subresource, stored (and validated) as the whole object's update;
  /// admission plugins that leave subresources alone (PodSecurity) look at this.
  bool scale = false;
  /// Records the writer's managedFields: called by admission once the scheme defaults are in and
  /// before strategies and plugins change the object (old: null on create). Unset: not tracked.
  std::function<void(const json::object* old, json::object& next)> track_fields;
  /// An update's causes that the API layer found by the kind's own rules (an Event's legacy ones):
  /// the strategy's, so after rest.BeforeUpdate's validateCommonFields.
  std::vector<StatusCause> strategy_causes;
};

/// The in-process component whose code writes on this thread while one lives (its managedFields
/// manager: "kube-controller-manager", "kube-scheduler", "kubelet"): the store records each of its
/// creates and updates, and a status write as subresource "status", as kube-apiserver's
/// fieldmanager records that component's requests (a write whose WriteOptions::track_fields is
/// set is recorded by that instead). Nests; the store runs every subscriber callback with none, so
/// a component names itself where its own code starts (its callback, its sync()).
class WritingAs {
 public:
  explicit WritingAs(const char* manager) noexcept;
  ~WritingAs();
  WritingAs(const WritingAs&) = delete;
  WritingAs& operator=(const WritingAs&) = delete;
  /// The manager named on this thread now (null: none).
  static const char* current() noexcept;

 private:
  const char* previous_;
};

struct DeleteOptions {
  Propagation propagation = Propagation::Default;
  bool dry_run = false;
  std::optional<std::int64_t> grace_period;  ///< gracePeriodSeconds (a pod on a node waits that long)
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
};

/// What admission plugins see. They may change `object` (mutating) or throw StatusError.
struct AdmissionRequest {
  enum class Operation { Create, Update, Delete } operation;
  const ResourceType* type = nullptr;
  std::string subresource;  ///< "", "status", "binding", "scale"
  std::string ns;
  json::object* object = nullptr;            ///< the new object (null for Delete)
  const json::object* old_object = nullptr;  ///< null for Create
  const WriteOptions* options = nullptr;
  /// Set by validation when the kind's PrepareForUpdate sees a spec change its stored form hides
  /// (a NetworkPolicy's reflect.DeepEqual tells an empty list from none): the update bumps
  /// metadata.generation whatever the stored specs say.
  bool spec_changed = false;
  /// The store's clock: the strategies' NowFunc (a PersistentVolume's lastPhaseTransitionTime).
  const Clock* clock = nullptr;
};

/// Where committed changes go to become durable (the embedded server's state journal). record() is
/// called under the store's lock, in commit order; sync() after the lock is let go and before the
/// write returns to its caller, so before any client is told it succeeded.
class Journal {
 public:
  virtual ~Journal() = default;
  virtual void record(const WatchEvent& e) = 0;
  virtual void sync() = 0;
};

/// A queue of events for one HTTP watch. Filled by the store, drained by the server.
class WatchQueue {
 public:
  /// Waits up to `timeout` for events; returns those available (empty on timeout or when closed).
  std::vector<WatchEvent> next(std::chrono::milliseconds timeout);
  bool closed() const;
  void close();
  /// How many times a reader was woken for new events (each is a futex wake of a blocked next()).
  std::uint64_t wakes() const;

 private:
  friend class Store;
  /// Queues `e` if this watch wants it; true when the reader must be woken (the queue was empty).
  bool push(const WatchEvent& e);
  void wake();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WatchEvent> events_;
  bool closed_ = false;
  std::size_t max_pending_ = 100000;
  std::uint64_t wakes_ = 0;
  // filter
  const ResourceType* type_ = nullptr;
  std::string ns_;
  LabelSelector labels_;
  FieldSelector fields_;
};

/// When an admission plugin runs: before the built-in validation (it may change the object, as
/// LimitRanger's defaults and Priority do) or after it (it only judges).
enum class AdmissionStage { Mutating, Validating };

class Store {
 public:
  struct Options {
    std::size_t history = 10000;        ///< events kept for resuming watches; older -> 410 Gone
    std::string mpijob_version = "v1";  ///< kubeflow.org MPIJob served: "v1" or "v2beta1"
  };
  /// `clock` must outlive the store.
  explicit Store(const Clock& clock) : Store(clock, Options{}) {}
  Store(const Clock& clock, Options options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // ---- types ----------------------------------------------------------------------------------
  /// Registers (or replaces the version of) a resource; returns the stored, address-stable entry.
  const ResourceType& register_type(ResourceType t);
  void unregister_type(std::string_view group, std::string_view resource);
  /// The type serving group/resource (any version); throws StatusError 404 when none.
  const ResourceType& type(std::string_view group, std::string_view resource) const;
  const ResourceType* find_type(std::string_view group, std::string_view version, std::string_view resource) const;
  const ResourceType* find_kind(std::string_view api_version, std::string_view kind) const;
  std::vector<const ResourceType*> types() const;

  // ---- objects --------------------------------------------------------------------------------
  /// Sets uid, resourceVersion, creationTimestamp, generation 1, name from generateName, namespace,
  /// apiVersion/kind; runs admission; fails with 409 AlreadyExists, 404 (namespace missing), 422.
  json::object create(const ResourceType& t, std::string_view ns, json::object obj, const WriteOptions& o = {});
  /// create() answering the stored object itself (shared, immutable) instead of a copy of it: for
  /// in-process writers (controllers) that need no copy, or the HTTP layer that only serializes it.
  std::shared_ptr<const json::object> create_shared(const ResourceType& t, std::string_view ns, json::object obj,
                                                    const WriteOptions& o = {});
  json::object get(const ResourceType& t, std::string_view ns, std::string_view name) const;
  std::shared_ptr<const json::object> find(const ResourceType& t, std::string_view ns, std::string_view name) const;
  /// ns empty: all namespaces. Items in key order (namespace, name), as etcd lists them.
  ListResult list(const ResourceType& t, std::string_view ns, const ListOptions& o = {}) const;
  /// Replaces an object. A non-empty metadata.resourceVersion must equal the stored one (else 409
  /// Conflict). subresource "" keeps the old status (types with a status subresource); "status"
  /// keeps everything but status; "binding" (pods/binding) keeps the body's spec and status together.
  /// generation is bumped when anything outside metadata/status changes.
  json::object update(const ResourceType& t, std::string_view ns, json::object obj, const WriteOptions& o = {},
                      std::string_view subresource = {});
  /// update() answering the stored object (or, for a no-op or dry run, the would-be object) shared.
  std::shared_ptr<const json::object> update_shared(const ResourceType& t, std::string_view ns, json::object obj,
                                                    const WriteOptions& o = {}, std::string_view subresource = {});
  /// Read-modify-write: calls `fn` on the current object and updates, retrying on conflicts.
  json::object mutate(const ResourceType& t, std::string_view ns, std::string_view name,
                      const std::function<void(json::object&)>& fn, const WriteOptions& o = {},
                      std::string_view subresource = {});
  /// Deletes an object and, per propagation, its dependents (ownerReferences), with the garbage
  /// collector's semantics run synchronously: Background deletes the object, then its dependents;
  /// Foreground sets metadata.deletionTimestamp and the foregroundDeletion finalizer, deletes the
  /// dependents, and removes the object once no dependent with blockOwnerDeletion is left; Orphan
  /// removes the object's ownerReference from its dependents. An object with finalizers only gets a
  /// deletionTimestamp; an update that empties its finalizers removes it. Returns the deleted
  /// object, or — when it is still there (`*deleted` false) — its current state.
  json::object remove(const ResourceType& t, std::string_view ns, std::string_view name, const DeleteOptions& o = {},
                      bool* deleted = nullptr);
  std::uint64_t revision() const;
  /// How many subscriber callbacks threw (each loses that event alone; see subscribe()).
  std::uint64_t subscriber_failures() const;
  /// `base` and 5 random characters of "bcdfghjklmnpqrstvwxz2456789": the API server's
  /// names.SimpleNameGenerator (generateName, the ServiceAccount plugin's kube-api-access-*).
  std::string generate_name(std::string_view base);
  /// A new random (version 4) UUID, as the store gives metadata.uid (a token's jti too).
  std::string new_uid();
  /// The JSON of each of `items` (objects of `t` from list()) as a list serves it: a built-in
  /// kind's items without kind and apiVersion, members in stored order. Each object's encoding is
  /// cached with it (what the apiserver's watch cache does with cachingObject,
  /// staging/src/k8s.io/apiserver/pkg/storage/cacher/caching_object.go): stored objects are
  /// immutable, a write stores a new one, so a list after a write encodes the new version and
  /// the next list of an unchanged object only copies its bytes.
  std::vector<std::shared_ptr<const std::string>> list_encodings(
      const ResourceType& t, const std::vector<std::shared_ptr<const json::object>>& items) const;
  struct EncodingStats {
    std::size_t live = 0;     ///< cached encodings of objects still alive
    std::size_t entries = 0;  ///< cached encodings, including those of replaced objects not yet swept
    std::uint64_t hits = 0, misses = 0;
  };
  EncodingStats encoding_stats() const;
  /// The objects of type `t` in `ns` whose ownerReferences name `owner_uid`, in key order — read
  /// from the owner-uid index the store keeps on every write (the garbage collector's dependents
  /// graph, pkg/controller/garbagecollector/graph.go; what an informer's indexer gives controllers),
  /// not by scanning the type.
  std::vector<std::shared_ptr<const json::object>> dependents(const ResourceType& t, std::string_view ns,
                                                              std::string_view owner_uid) const;
  /// The objects of namespaced type `t` in `ns` with no controller ownerReference (orphans, as
  /// pkg/controller/controller_ref_manager.go calls them: what a controller may adopt), in key
  /// order, from the same index.
  std::vector<std::shared_ptr<const json::object>> orphans(const ResourceType& t, std::string_view ns) const;

  // ---- persistence ----------------------------------------------------------------------------
  /// Every stored object with its resource, and the revision counter: what `restore` needs to bring
  /// the cluster back (the embedded CLI keeps its state between commands this way).
  json::object snapshot() const;
  /// Loads a snapshot into this store as it was: objects keep uid, resourceVersion and timestamps,
  /// no admission runs. Subscribers then see each object ADDED (CustomResourceDefinitions first, so
  /// their types are served before their objects come back); controllers find their children
  /// already there. Throws StatusError 400 for a malformed snapshot, 409 when an object exists.
  void restore(const json::object& snapshot);

  // ---- watch ----------------------------------------------------------------------------------
  using SubscriptionId = std::uint64_t;
  /// `callback` runs for every event after its write (see dispatch order above); one that throws
  /// loses that event alone (counted in subscriber_failures()), the others and later events go on.
  SubscriptionId subscribe(std::function<void(const WatchEvent&)> callback);
  void unsubscribe(SubscriptionId id);
  /// Events of `t` in `ns` (empty: all) after `resource_version` (0: the current state as synthetic
  /// ADDED events first). Throws StatusError 410 Expired when the version is older than the history.
  std::shared_ptr<WatchQueue> open_watch(const ResourceType& t, std::string_view ns, std::uint64_t resource_version,
                                         LabelSelector labels = {}, FieldSelector fields = {});
  void close_watch(const std::shared_ptr<WatchQueue>& q);

  // ---- admission ------------------------------------------------------------------------------
  /// Plugins run in order under the store's (recursive) lock: they may read the store (get/list)
  /// but must not write to it. Throw StatusError to reject. As in kube-apiserver's create and
  /// update handlers, a write is defaulted (builtin_defaults), then the Mutating plugins run, then
  /// the built-in validation (builtin_validation), then the Validating plugins.
  void add_admission(std::function<void(AdmissionRequest&)> plugin, AdmissionStage stage = AdmissionStage::Validating);

  /// As kube-apiserver's watch cache starts with a LIST at the current revision
  /// (cacher/watch_cache.go listResourceVersion): from now on a watch from an older version is
  /// 410 Expired, `too old resource version: RV (now)`. The embedded server calls it once seeded.
  void start_watch_cache();

  /// While a WakeBatch lives, the writes of the thread that made it wake HTTP watch queues only
  /// when it ends: the queues still receive every event at commit (in order, each write durable
  /// and visible to get/list as before), but a reader blocked in next() is woken once for the
  /// batch instead of once per event. The scheduler holds one across a run of bindings (the
  /// watch cache's dispatch of a burst of events to a watcher's channel, without a futex wake
  /// per event). Nests; other threads' writes are not deferred.
  class WakeBatch {
   public:
    explicit WakeBatch(Store& s);
    ~WakeBatch();
    WakeBatch(const WakeBatch&) = delete;
    WakeBatch& operator=(const WakeBatch&) = delete;

   private:
    Store& store_;
  };

  /// While one lives, the writes of the thread that made it leave their events queued for the
  /// subscribers (the controllers, the scheduler, the kubelet) instead of running them before
  /// they return: the HTTP server answers a write first and lets its controllers react after, as
  /// kube-apiserver answers before its controllers (watchers) do. Each write is still committed,
  /// journaled and seen by get, list and watches before it returns. answered() says the answer
  /// is about to leave: from then until finish() (at the latest, the destructor) has delivered
  /// the events, settle() holds other requests back, so a client that has the answer sees every
  /// controller's reaction to it, as when they ran before the answer. finish() and the
  /// destructor run on the thread that made it. Other threads' writes are not deferred.
  class DeferDispatch {
   public:
    explicit DeferDispatch(Store& s);
    ~DeferDispatch();
    DeferDispatch(const DeferDispatch&) = delete;
    DeferDispatch& operator=(const DeferDispatch&) = delete;
    void answered();
    void finish();

   private:
    Store& store_;
    bool active_ = false;  // this one defers (not nested in another store's)
    bool answered_ = false;
    bool finished_ = false;
  };
  /// Waits while an answered DeferDispatch has not delivered its events yet (see above);
  /// returns at once otherwise. Call with no store lock held.
  void settle() const;

  /// Every change committed from now on is recorded in `j` (null: none). Set after restore().
  void set_journal(std::shared_ptr<Journal> j);

  const Clock& clock() const noexcept { return clock_; }

 private:
  struct Impl;
  void admit(AdmissionRequest& r);
  void commit_event(EventType type, const ResourceType& t, std::shared_ptr<const json::object> obj,
                    std::shared_ptr<const json::object> old);
  void dispatch();
  void sync_journal();
  /// true when the object is gone (removed now or absent), false while finalizers hold it.
  /// `grace`: a pod's requested grace period (DeleteOptions.gracePeriodSeconds; none: its own).
  bool delete_locked_recursive(const ResourceType& t, const std::string& ns, const std::string& name, Propagation p,
                               std::optional<std::int64_t> grace = std::nullopt);
  void gc_foreground_locked(const std::string& owner_uid);
  /// The garbage collector's attemptToDeleteItem for an object whose ownerReferences were just
  /// written: when no owner it names exists, deleted; when some do, the references to absent ones removed.
  void gc_dangling_locked(const ResourceType& t, const std::string& ns, const std::string& name);
  /// Removes an object (a DELETED event carrying `last`), then runs the GC for its dependents and owners.
  void erase_locked(const ResourceType& t, const std::string& ns, const std::string& name,
                    const std::shared_ptr<const json::object>& last);
  const Clock& clock_;
  std::unique_ptr<Impl> impl_;
};

/// The value at a dotted path ("metadata.name", "spec.nodeName") as a string ("" when absent).
std::string field_value(const json::object& obj, std::string_view path);
/// Whether `metadata`'s finalizers hold `finalizer`.
bool has_finalizer(const json::object& metadata, std::string_view finalizer);
/// Adds (`on`) or removes `finalizer` in `metadata`'s finalizers (none left: the list goes);
/// whether it changed.
bool set_finalizer(json::object& metadata, std::string_view finalizer, bool on);
/// metadata.labels as a map.
std::map<std::string, std::string> labels_of(const json::object& obj);

}  // namespace gpupool::embedded
