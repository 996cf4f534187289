// gpupool/client.hpp — a REST client for any Kubernetes resource, the way client-go's dynamic
// client works: objects are boost::json values, resources are named by group/version/resource.
//
//   gpupool::Client k8s(gpupool::load_kubeconfig());
//   gpupool::ResourceRef pods{"", "v1", "pods", "Pod"};
//   for (auto& pod : k8s.list_all(pods, "", {.label_selector = "app=train"})) ...
//
// Every call is thread-safe. An empty namespace means the kubeconfig context's namespace.
// Non-2xx answers throw ApiError (from the Status body); unreachable servers throw TransportError;
// both are retried as gpupool/retry.hpp describes.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpupool/kubeconfig.hpp"
#include "gpupool/logger.hpp"
#include "gpupool/retry.hpp"
#include "gpupool/transport.hpp"

namespace gpupool {

/// Names a resource type: /api/v1/pods (group "") or /apis/kubeflow.org/v2beta1/mpijobs.
struct ResourceRef {
  std::string group;     ///< "" for the core group
  std::string version;   ///< e.g. "v1"
  std::string resource;  ///< plural, lower case: "pods", "mpijobs"
  std::string kind;      ///< "Pod", "MPIJob"
  bool namespaced = true;
  /// "v1" or "group/version", as an object's apiVersion.
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  bool operator==(const ResourceRef&) const = default;
};

struct ListOptions {
  std::string label_selector{};  ///< e.g. "app=train,tier!=web"
  std::string field_selector{};  ///< e.g. "spec.nodeName=node-1"
  std::int64_t limit = 0;        ///< page size (0: the server's choice, everything at once)
  std::string continue_token{};  ///< from a previous page
  std::string resource_version{};
  bool all_namespaces = false;  ///< list across namespaces (namespaced resources only)
  /// for_each_page and list_stream only: ask for Kubernetes' protobuf encoding first (Accept
  /// application/vnd.kubernetes.protobuf, then application/json, as client-go's typed clients).
  /// kube-apiserver encodes a list of pods or nodes several times faster that way; a server or
  /// kind without it answers JSON. See RawListPage::protobuf.
  bool protobuf = false;
};

/// One page of a list.
struct ListPage {
  boost::json::array items{};
  std::string resource_version{};  ///< the list's metadata.resourceVersion
  std::string continue_token{};    ///< empty on the last page
};

/// One page of a list as the server sent it (JSON text, items not parsed): for the streaming
/// decoders (Node::list_from_json, PodRequirements::list_from_json), which never build the tree.
struct RawListPage {
  std::string text{};              ///< the List document (JSON, or protobuf when `protobuf`)
  std::string resource_version{};  ///< its metadata.resourceVersion
  std::string continue_token{};    ///< empty on the last page
  /// `text` is Kubernetes' protobuf encoding (asked with ListOptions::protobuf): a v1 PodList or
  /// NodeList (model/kube_protobuf.hpp reads its items).
  bool protobuf = false;
};

struct WriteOptions {
  bool dry_run = false;         ///< dryRun=All: validated and admitted, not stored
  std::string field_manager{};  ///< fieldManager; required for PatchType::apply
  /// Log the server's warnings (Warning headers) at warning level. Off for a probe whose warnings
  /// the real write repeats (the quota pre-flight's dry-run pods).
  bool report_warnings = true;
};

enum class PatchType {
  merge,      ///< application/merge-patch+json (RFC 7386)
  strategic,  ///< application/strategic-merge-patch+json (built-in kinds only)
  json,       ///< application/json-patch+json (RFC 6902), the patch is an array of operations
  apply,      ///< server-side apply (application/apply-patch+yaml); needs field_manager
};

struct PatchOptions {
  bool dry_run = false;
  std::string field_manager{};
  bool force = false;           ///< apply only: take ownership of conflicting fields
  bool report_warnings = true;  ///< as WriteOptions::report_warnings
};

enum class PropagationPolicy { server_default, background, foreground, orphan };

struct DeleteOptions {
  PropagationPolicy propagation = PropagationPolicy::server_default;
  bool dry_run = false;
  std::optional<std::int64_t> grace_period_seconds{};
  std::string precondition_uid{};               ///< delete only this incarnation
  std::string precondition_resource_version{};  ///< delete only if unchanged
};

/// One watch event. type is ADDED, MODIFIED, DELETED or BOOKMARK.
struct WatchEvent {
  std::string type{};
  boost::json::object object{};
};

struct WatchOptions {
  std::string label_selector{}, field_selector{};
  /// Start after this version. Empty: list first and deliver every existing object as ADDED.
  std::string resource_version{};
  bool all_namespaces = false;
  bool deliver_bookmarks = false;  ///< bookmarks are always requested; hand them to the handler too?
  int timeout_seconds = 0;         ///< server-side limit per watch connection (0: server default)
};

/// Return false to stop watching.
using WatchHandler = std::function<bool(const WatchEvent&)>;

struct LogOptions {
  std::string container{};  ///< required when the pod has several containers
  bool follow = false;
  bool previous = false;  ///< the previous (crashed) instance of the container
  bool timestamps = false;
  std::optional<std::int64_t> tail_lines{}, since_seconds{}, limit_bytes{};
};

/// One log line without its newline. Return false to stop.
using LineHandler = std::function<bool(std::string_view line)>;

struct ServerVersion {
  std::string major, minor, git_version, platform;
};

/// One entry of a discovery APIResourceList.
struct ApiResourceInfo {
  std::string name, kind;
  bool namespaced = true;
  std::vector<std::string> verbs, short_names;
};

/// While alive, every request this thread sends through any Client observes `token`: once it
/// fires, a request in flight is abandoned within about 50 ms (the transport's waits poll the
/// token) and so does a retry's back-off, and the call throws CancelledError. Long
/// facade calls (Cluster::wait, Cluster::logs) open one for their CancelToken, so cancelling them
/// also ends a get() that is waiting on a slow or failing server. Scopes nest; the innermost wins.
/// A scope without a token makes the thread's requests uncancellable again (used by rollbacks,
/// which must finish).
class CancelScope {
 public:
  explicit CancelScope(const CancelToken& token);
  CancelScope();
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;
  /// The innermost scope's token on this thread, or nullptr.
  static const CancelToken* current() noexcept;

 private:
  std::optional<CancelToken> token_;
  const CancelScope* previous_;
};

struct ClientOptions {
  RetryPolicy retry;
  TransportOptions transport;
  /// Use this transport instead of make_http_transport's (tests, fault injection).
  std::shared_ptr<Transport> transport_override;
  Logger logger;  ///< warnings and debug notes; also used by the transport when it has none
  /// The annotation create_idempotent stamps on objects.
  std::string submission_id_annotation = "gpupool.io/submission-id";
  /// Wall clock for exec-credential expiry; empty: system_clock.
  std::function<std::chrono::system_clock::time_point()> now;
  /// A directory for what is kept between processes (the command uses ~/.cache/gpupool; empty:
  /// nothing is kept): discovery documents under discovery/<server> (used for 6 hours and
  /// invalidated on a miss, as kubectl's ~/.kube/cache/discovery) and, unless
  /// transport.tls_session_dir is set, TLS sessions under tls/.
  std::string cache_dir;
};

/// What to run for Client::exec (PodExecOptions).
struct ExecOptions {
  std::vector<std::string> command;  ///< argv; required
  std::string container;             ///< empty: the pod's only container
  bool with_stdin = false;           ///< send ExecIO::stdin_fd's bytes
  bool with_stdout = true, with_stderr = true;
  bool tty = false;  ///< a terminal: stderr is merged into stdout
};

/// Where an exec's streams go. Callbacks run on the call's own I/O thread.
struct ExecIO {
  int stdin_fd = -1;  ///< read (poll()ed) until EOF when ExecOptions::with_stdin; not closed
  std::function<void(std::string_view)> on_stdout, on_stderr;
  /// With tty: the terminal's size (columns, rows), asked at start and then every 250 ms;
  /// a change is sent to the container (remotecommand's resize channel).
  std::function<std::optional<std::pair<int, int>>()> terminal_size;
};

/// A running port-forward (Client::port_forward): listeners on 127.0.0.1, one tunnel to the
/// API server. Destroying it stops it.
class PortForward {
 public:
  struct Port {
    int local = 0;  ///< 0 asks for a free port; ports() reports the one chosen
    int remote = 0;
  };
  virtual ~PortForward() = default;
  virtual const std::vector<Port>& ports() const = 0;
  /// Closes the listeners and the tunnel; idempotent; thread-safe.
  virtual void stop() = 0;
  /// Blocks until stop() or until the tunnel to the server ends (then throws TransportError).
  virtual void wait() = 0;
};

/// Reports per-connection errors of a port-forward (`an error occurred forwarding 8080 -> 80: ...`).
using PortForwardErrorHandler = std::function<void(const std::string& message)>;

class Client {
 public:
  explicit Client(KubeConfig config, ClientOptions options = {});
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  const KubeConfig& config() const;
  /// The options the client was made with (its submission-id annotation key, retries, ...).
  const ClientOptions& options() const;
  /// The kubeconfig context's namespace ("default" when it sets none).
  const std::string& default_namespace() const;
  /// The server's current time as its latest Date header tells (our clock until a response came);
  /// ages and durations are computed against it, as an embedded cluster's clock may differ.
  std::chrono::system_clock::time_point server_now() const;

  // ---- discovery ----
  ServerVersion server_version() const;
  /// Versions of `group` the server serves, preferred first ("" = core: {"v1"}). Empty if none.
  std::vector<std::string> served_versions(const std::string& group) const;
  /// Resources of one group/version (subresources such as pods/log left out).
  std::vector<ApiResourceInfo> resources(const std::string& group, const std::string& version) const;
  /// The served resource of `kind` in `group`, at the preferred version that has it; e.g.
  /// find_resource("kubeflow.org", "MPIJob") tells whether the cluster serves v1 or v2beta1.
  std::optional<ResourceRef> find_resource(const std::string& group, const std::string& kind) const;
  /// After a lookup in discovery missed: when some of its answers came from the disk cache
  /// (ClientOptions::cache_dir) written by another process, forgets them and returns true, so the
  /// lookup is worth one more try (kubectl's DeferredDiscoveryRESTMapper resets its cache the
  /// same way); false when everything was fetched by this process.
  bool refresh_discovery() const;

  // ---- objects ----
  boost::json::object create(const ResourceRef& ref, const std::string& ns, const boost::json::object& object,
                             const WriteOptions& options = {}) const;
  /// A create that is safe to retry: stamps the submission-id annotation (a fresh id unless the
  /// object already carries one) so that if a retried POST meets AlreadyExists, the stored object
  /// is ours (returned as success) or someone else's (ApiError 409 "name already taken").
  boost::json::object create_idempotent(const ResourceRef& ref, const std::string& ns,
                                        const boost::json::object& object, const WriteOptions& options = {}) const;
  boost::json::object get(const ResourceRef& ref, const std::string& ns, const std::string& name) const;
  /// The object named `name` in `ns` of each type of `refs`, asked together (pipelined on one
  /// connection by the HTTP transport: one round trip, not one per type), in the order of `refs`:
  /// nullopt where the server answered 404. Another failure is handled as get() handles it
  /// (retries, a credential refresh after 401) and thrown as get() throws it, the first in order.
  /// With `stop_at_found`, what follows the first object found is nullopt, its failures ignored:
  /// the answer of asking each type in turn until one has it.
  std::vector<std::optional<boost::json::object>> get_each(const std::vector<ResourceRef>& refs, const std::string& ns,
                                                           const std::string& name, bool stop_at_found = false) const;
  /// One read of read_each: the object `name` of `ref` in `ns`, or, with `name` empty, the list of
  /// `ref` in `ns` with `list`'s options, every page of it (as list_all reads it).
  struct Read {
    ResourceRef ref;
    std::string ns;
    std::string name;
    ListOptions list{};
    /// A read asked ahead of need: its failure is not thrown (ReadResult::ok stays false), and
    /// the caller reads it again when it needs it.
    bool speculative = false;
    /// Set (with `name` empty): no read but a server dry run of creating this object (POST with
    /// dryRun=All and `field_manager`; its warnings not reported). It stores nothing, so it goes
    /// with the reads; ReadResult::object is the object as defaulting and admission made it, a
    /// refusal is thrown as create() throws it. Not owned.
    const boost::json::object* dry_run_create = nullptr;
    std::string field_manager{};
  };
  /// What read_each read for one Read: the object (nullopt where the server answered 404, or
  /// when stop_at_found skipped it), or the list's items.
  struct ReadResult {
    std::optional<boost::json::object> object;
    boost::json::array items;
    bool ok = false;  ///< answered (404 included for an object); false: failed, or skipped
  };
  /// Objects and lists asked together: one round trip on the HTTP transport, which pipelines the
  /// GETs on one connection, instead of one per read. The answers are taken in order, each as
  /// get() or list_all() takes its first attempt's (retries, a credential refresh after 401) and
  /// thrown as they throw. With `stop_at_found`, the objects after the first one found are
  /// nullopt and their failures ignored (get_each's rule); the lists are read in any case.
  std::vector<ReadResult> read_each(const std::vector<Read>& reads, bool stop_at_found = false) const;
  ListPage list(const ResourceRef& ref, const std::string& ns, const ListOptions& options = {}) const;
  /// Every item, following continue tokens page by page.
  boost::json::array list_all(const ResourceRef& ref, const std::string& ns, ListOptions options = {}) const;
  /// Every page of a list in order (pages of options.limit items; 500, kubectl's chunk size, when
  /// 0), each handed to `fn` as text while the next page downloads on another thread, so decoding
  /// overlaps the transfer and at most two pages are held. Errors of either thread are thrown here.
  void for_each_page(const ResourceRef& ref, const std::string& ns, ListOptions options,
                     const std::function<void(const RawListPage&)>& fn) const;
  /// The list in one request (one page: options.limit and continue_token unset), its body handed
  /// to `sink` piece by piece as it arrives (gunzipped), never held whole: for readers that decode
  /// items as they come (model/kube_protobuf.hpp's ItemReader, the JSON list reader). With
  /// options.protobuf the body may be Kubernetes' protobuf (it starts with "k8s\0"), else JSON.
  /// At resourceVersion "0" kube-apiserver serves the list from its watch cache. A non-2xx answer
  /// is the same ApiError as list()'s; the request is retried as list()'s, but only until the
  /// first piece reached `sink`. An exception `sink` throws ends the request and is thrown here.
  /// A body cut short by the connection is not an error here: the reader's end must tell.
  void list_stream(const ResourceRef& ref, const std::string& ns, const ListOptions& options,
                   const ChunkSink& sink) const;
  /// PUT; the object's metadata.resourceVersion makes it a compare-and-swap (and replay-safe: if
  /// a first attempt's answer was lost, the retry reports Conflict even though the write landed).
  boost::json::object update(const ResourceRef& ref, const std::string& ns, const boost::json::object& object,
                             const WriteOptions& options = {}) const;
  boost::json::object patch(const ResourceRef& ref, const std::string& ns, const std::string& name, PatchType type,
                            const boost::json::value& patch, const PatchOptions& options = {}) const;
  /// DELETE; returns what the server returned (the object, or a Status).
  boost::json::object remove(const ResourceRef& ref, const std::string& ns, const std::string& name,
                             const DeleteOptions& options = {}) const;

  // ---- streams ----
  /// Watches until `handler` returns false or `cancel` fires; survives disconnects by resuming
  /// from the last resourceVersion seen (bookmarks included) and, when that version is too old
  /// (410 Gone), re-lists and delivers the difference as ADDED/MODIFIED/DELETED events.
  /// Returns the last resourceVersion seen.
  std::string watch(const ResourceRef& ref, const std::string& ns, const WatchOptions& options,
                    const WatchHandler& handler, const CancelToken& cancel = {}) const;
  /// A pod's log, line by line, until the end (or, with follow, until cancelled / handler false).
  void logs(const std::string& ns, const std::string& pod, const LogOptions& options, const LineHandler& handler,
            const CancelToken& cancel = {}) const;
  /// Runs a command in a pod's container (pods/exec over WebSocket, v5.channel.k8s.io or
  /// v4.channel.k8s.io, as kubectl 1.32) and returns its exit code, taken from the error channel.
  /// A refusal before the upgrade is an ApiError (the server's Status); a failure reported on the
  /// error channel other than a non-zero exit code is an ApiError too. `cancel` ends the call.
  int exec(const std::string& ns, const std::string& pod, const ExecOptions& options, const ExecIO& io,
           const CancelToken& cancel = {}) const;
  /// Forwards local ports to a pod's ports (pods/portforward: SPDY/3.1 tunnelled in a WebSocket,
  /// SPDY/3.1+portforward.k8s.io, or a plain SPDY/3.1 upgrade when the server refuses the
  /// WebSocket one, as kubectl 1.32). Listens before returning.
  std::unique_ptr<PortForward> port_forward(const std::string& ns, const std::string& pod,
                                            std::vector<PortForward::Port> ports,
                                            PortForwardErrorHandler on_error = {}) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace gpupool
