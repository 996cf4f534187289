// embedded/api.hpp — the REST semantics of the Kubernetes API server over the Store, free of any
// HTTP library: the server turns a parsed request into a Request and writes the Response back.
// Covers discovery (/version, /api, /apis, group versions), get/list/watch/create/update/patch/
// delete/deletecollection on every registered type and the subresources status, scale, binding
// and log, Table output, dryRun, selectors, pagination, and authorization (each user only in its
// namespace; nodes read-only for users; admins — group system:masters — anything).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "embedded/rbac.hpp"
#include "embedded/store.hpp"

typedef struct ssl_st SSL;

namespace gpupool::embedded {

class ServiceAccountTokens;

struct Request {
  std::string method;                             ///< "GET", "POST", ...
  std::string path;                               ///< percent-decoded, without the query
  std::string target;                             ///< the request target as sent (Go's RequestURI)
  std::multimap<std::string, std::string> query;  ///< percent-decoded
  std::string content_type;
  std::string accept;
  std::string user_agent;  ///< names the field manager of writes without fieldManager
  std::string body;
  // Who is asking (set by authentication; empty user = anonymous).
  std::string user;
  std::vector<std::string> groups;
  std::string credential_id;  ///< user.Info extra authentication.kubernetes.io/credential-id (Identity's)
  std::string uid;            ///< user.Info UID (Identity's)
  std::map<std::string, std::vector<std::string>> extra;  ///< user.Info's other extra values (Identity's)
  // Impersonate-User / Impersonate-Group / Impersonate-Uid headers (kubectl --as / --as-group /
  // --as-uid) and the Impersonate-Extra-KEY headers (KEY lower-cased and percent-decoded).
  std::string impersonate_user;
  std::vector<std::string> impersonate_groups;
  std::string impersonate_uid;
  std::map<std::string, std::vector<std::string>> impersonate_extra;
  /// For upgrade requests (a Connection: Upgrade header): Upgrade, Sec-WebSocket-*,
  /// X-Stream-Protocol-Version, names lower-cased (embedded/streams.cpp negotiates with them).
  std::vector<std::pair<std::string, std::string>> upgrade_headers;
  /// The warnings this request earned (admission, strategies), sent as Warning headers.
  mutable std::vector<std::string> warnings;
};

/// Writes a chunk of a streamed body; false once the client has gone. An empty chunk writes
/// nothing and only checks that the client is still there (streams call it while idle).
using ChunkWriter = std::function<bool(std::string_view)>;

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  /// Streamed bodies (watch, log follow): called after the headers went out; returns when the
  /// stream ends, the client left (write returned false) or `stopping` became true.
  std::function<void(const ChunkWriter& write, const std::atomic<bool>& stopping)> stream;
  /// Upgraded connections (exec, attach, port-forward): the server hands over the TLS connection
  /// (`ssl` reading and writing socket `fd`, both freed by the server afterwards) and the bytes
  /// already read past the request; the function writes the 101 and speaks the protocol until
  /// the exchange ends. status/body/stream are then unused.
  std::function<void(SSL* ssl, int fd, std::string leftover, const std::atomic<bool>& stopping)> takeover;
  /// Run by the HTTP server once the response is written (or failed to be), before the
  /// connection's next request is read; for a stream or a takeover, before it starts. A write's
  /// controllers run here (Store::DeferDispatch).
  std::function<void()> after;
};

/// Serves logs for pods/log (the simulated kubelet provides them). `follow` streams until the
/// container ends. Returns nullopt when the pod has no logs.
struct LogRequest {
  std::string ns, pod, container;
  bool follow = false;
  std::optional<std::int64_t> tail_lines;
  bool previous = false;
  bool timestamps = false;
};
using LogProvider = std::function<Response(const LogRequest&)>;

namespace api {
struct Call;
}

class Api {
 public:
  struct Options {
    std::string server_version = "v1.32.0";  ///< gitVersion of /version
  };
  /// Registers CustomResourceDefinitions as they are created (and marks them Established).
  Api(Store& store, Options options);
  ~Api();
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;
  /// Never throws: errors come back as Status responses.
  Response handle(const Request& r) const;
  void set_log_provider(LogProvider p) { logs_ = std::move(p); }
  /// pods/exec, pods/attach, pods/portforward (embedded/streams.hpp); unset: 404 for them.
  void set_connect_handler(std::function<Response(const Request&, const std::string& ns, const std::string& name,
                                                  const std::string& subresource)>
                               h) {
    connect_ = std::move(h);
  }
  /// serviceaccounts/token (TokenRequest); unset: 404 for it.
  void set_token_issuer(const ServiceAccountTokens* tokens) { tokens_ = tokens; }
  const ServiceAccountTokens* token_issuer() const noexcept { return tokens_; }
  Store& store() const noexcept { return store_; }

  /// Whether a request may go on: admins (group system:masters) may do anything; by the guide's
  /// rule, authenticated users may read nodes and their namespace's entry and do anything inside
  /// the namespace named after them; beyond that, what RBAC objects grant (embedded/rbac.hpp).
  AccessDecision decide(const AccessAttributes& a) const;
  /// decide() for a request; throws StatusError 403 (worded as the RBAC authorizer's) when denied.
  void authorize(const Request& r, std::string_view verb, const ResourceType& t, std::string_view ns,
                 std::string_view name, std::string_view subresource) const;

 private:
  Response handle_unstamped(const Request& r) const;
  Response dispatch(const Request& r) const;
  std::optional<Request> impersonated(const Request& r) const;
  Response access_review(const Request& r, const ResourceType& t) const;
  Response rules_review(const Request& r, const ResourceType& t) const;
  /// core/v1 ComponentStatus (`kubectl get componentstatuses`): computed on each get and list.
  Response component_statuses(const Request& r, const ResourceType& t, const std::string& name) const;
  Response self_subject_review(const Request& r, const ResourceType& t) const;
  // One handler per verb (api_read.cpp, api_watch.cpp, api_create.cpp, api_patch.cpp,
  // api_delete.cpp), given the request dispatch() resolved and authorized.
  Response serve_get(const api::Call& c) const;
  Response serve_list(const api::Call& c) const;
  Response serve_watch(const api::Call& c) const;
  Response serve_create(const api::Call& c) const;
  Response serve_update(const api::Call& c) const;
  Response serve_patch(const api::Call& c) const;
  Response serve_delete(const api::Call& c) const;
  Store& store_;
  Options options_;
  LogProvider logs_;
  std::function<Response(const Request&, const std::string&, const std::string&, const std::string&)> connect_;
  const ServiceAccountTokens* tokens_ = nullptr;
  Store::SubscriptionId crd_subscription_ = 0;
};

/// The JSON text of a Status error (what every error response carries).
Response status_response(const StatusError& e);

}  // namespace gpupool::embedded
