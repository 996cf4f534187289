// kube/client_core.hpp — the REST client's core, private to the kube layer: configuration,
// transport, credentials, retries and the helpers of one request. Client (client.cpp) is the
// public face over it; Reflector (reflector.cpp) runs watches with it.
#pragma once

#include <strings.h>

#include <fmt/format.h>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/http_date.hpp"
#include "common/json_depth.hpp"
#include "gpupool/client.hpp"
#include "gpupool/error.hpp"
#include "kube/credentials.hpp"
#include "kube/discovery_cache.hpp"
#include "kube/status.hpp"
#include "kube/util.hpp"
#include "model/kube_protobuf.hpp"

namespace gpupool::kube {

namespace json = boost::json;

using Query = std::vector<std::pair<std::string, std::string>>;

/// `path` with the query `q` appended, each key and value percent-encoded.
std::string with_query(std::string path, const Query& q);
/// A uniform random number in [0, 1) from a per-thread generator.
double thread_random();
/// An object's metadata (an empty object when absent or not an object).
const json::object& metadata_of(const json::object& o);
/// metadata.`key` as a string ("" when absent or not a string).
std::string meta_string(const json::object& o, const char* key);
/// The response body as a JSON object; TransportError naming `what` when it is not one.
json::object parse_object(const HttpResponse& r, const std::string& what);

/// Splits a byte stream into lines (the last one delivered at finish()).
/// A line growing past `max_line` bytes stops the stream (feed returns false; it runs inside the
/// transport's C callback, so it must not throw) and check_length() then throws
/// ResponseTooLargeError instead of the buffer growing without bound.
class LineSplitter {
 public:
  LineSplitter(std::function<bool(std::string_view)> on_line, std::size_t max_line)
      : on_line_(std::move(on_line)), max_line_(max_line) {}
  bool feed(std::string_view chunk) {
    buffer_.append(chunk);
    std::size_t start = 0;
    for (std::size_t nl; (nl = buffer_.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string_view line(buffer_.data() + start, nl - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!on_line_(line)) {
        buffer_.erase(0, nl + 1);
        return false;
      }
    }
    buffer_.erase(0, start);
    if (buffer_.size() > max_line_) {  // an unfinished line already past the limit
      too_long_ = true;
      buffer_.clear();
      return false;
    }
    return true;
  }
  void finish() {
    if (!buffer_.empty()) on_line_(buffer_);
    buffer_.clear();
  }
  void check_length() const {
    if (too_long_)
      throw ResponseTooLargeError(
          fmt::format("the server sent a line longer than {} bytes "
                      "(TransportOptions.max_response_bytes); the stream was stopped",
                      max_line_));
  }

 private:
  std::function<bool(std::string_view)> on_line_;
  std::size_t max_line_;
  bool too_long_ = false;
  std::string buffer_;
};

struct ClientCore {
  KubeConfig config;
  ClientOptions options;
  std::shared_ptr<Transport> transport;
  mutable kube::CredentialSource credentials;
  /// Whether any request ever got an answer from the server. Until one does, an unreachable server
  /// (refused, no such host) is reported at once instead of retried for minutes.
  mutable std::atomic<bool> reached{false};
  bool give_up_at_once(const TransportError& e) const {
    return !reached.load() && dynamic_cast<const UnreachableError*>(&e) != nullptr;
  }

  ClientCore(KubeConfig cfg, ClientOptions opts)
      : config(std::move(cfg)), options(std::move(opts)), credentials(config, options.logger, options.now) {
    if (config.cluster.server.rfind("https://", 0) != 0 && config.cluster.server.rfind("http://", 0) != 0)
      throw ConfigError(config.source.empty() ? "kubeconfig" : config.source, "cluster.server",
                        fmt::format("\"{}\" is not an http(s) URL; set the cluster's server to https://HOST:PORT",
                                    config.cluster.server));
    if (!options.cache_dir.empty())
      discovery = std::make_unique<DiscoveryCache>(options.cache_dir, config.cluster.server);
    if (options.transport_override) {
      transport = options.transport_override;
    } else {
      TransportOptions t = options.transport;
      if (!t.logger) t.logger = options.logger;
      if (t.tls_session_dir.empty() && !options.cache_dir.empty()) t.tls_session_dir = options.cache_dir + "/tls";
      transport = make_http_transport(config.cluster, std::move(t));
    }
  }

  /// Discovery documents kept between processes (ClientOptions::cache_dir); null when not kept.
  std::unique_ptr<DiscoveryCache> discovery;

  /// Discovery documents already read by this client, by target (client-go's memory cache,
  /// discovery/cached/memory): a long-lived client (Python, a controller) asks once, not per call.
  /// A document fetched more than kFreshFor ago is not "fresh": a lookup that misses on it looks
  /// again, live (refresh_discovery), as on documents another process wrote to the disk cache, so a
  /// long-lived client sees a CRD installed after it started; within one call it is fresh.
  struct Memo {
    std::mutex mu;
    std::map<std::string, std::pair<json::object, std::chrono::steady_clock::time_point>> docs;
    bool used = false;  ///< a remembered document older than kFreshFor was used since the last refresh
  };
  static constexpr std::chrono::seconds kFreshFor{5};
  mutable Memo memo;

  /// A discovery document (`target` such as /apis or /apis/apps/v1): remembered, else from the disk
  /// cache's `file` when it holds a usable copy, else from the server (then stored, unless
  /// `list_key`'s array is empty: cached_discovery.go does not cache a document that lists nothing).
  json::object discovery_get(const std::string& target, const std::string& file, const char* list_key) const {
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard lock(memo.mu);
      if (auto it = memo.docs.find(target);
          it != memo.docs.end() && now - it->second.second < DiscoveryCache::kDefaultTtl) {
        if (now - it->second.second >= kFreshFor) memo.used = true;
        return it->second.first;
      }
    }
    auto remember = [&](const json::object& o) {
      std::lock_guard lock(memo.mu);
      memo.docs[target] = {o, now};
    };
    if (discovery)
      if (auto body = discovery->read(file)) {
        json::error_code ec;
        json::value v = json::parse(*body, ec, {}, deep_json());
        if (!ec && v.is_object()) {
          remember(v.as_object());
          return std::move(v.as_object());
        }
      }
    HttpResponse r = execute({"GET", target, "", "", true, ""});
    json::object o = parse_object(r, "GET " + target);
    const auto* list = o.if_contains(list_key);
    if (list && list->is_array() && !list->as_array().empty()) {
      if (discovery) discovery->write(file, r.body);
      remember(o);
    }
    return o;
  }

  /// Forgets remembered and disk-cached documents when some were used (true: worth a live look).
  bool refresh_discovery() const {
    bool stale = false;
    {
      std::lock_guard lock(memo.mu);
      stale = memo.used;
      memo.docs.clear();
      memo.used = false;
    }
    if (discovery && !discovery->fresh()) stale = true;
    if (stale && discovery) discovery->invalidate();
    return stale;
  }

  void log(LogLevel level, const std::string& msg) const {
    if (options.logger) options.logger(level, msg);
  }

  std::string ns_or_default(const std::string& ns) const { return ns.empty() ? config.namespace_name : ns; }

  std::string path(const ResourceRef& r, const std::string& ns, const std::string& name = {},
                   bool all_namespaces = false, const std::string& sub = {}) const {
    if (r.version.empty() || r.resource.empty())
      throw ValidationError("resource", r.api_version() + "/" + r.resource,
                            "a ResourceRef needs a version and a resource");
    std::string p = r.group.empty() ? "/api/" + url_encode(r.version)
                                    : "/apis/" + url_encode(r.group) + "/" + url_encode(r.version);
    if (r.namespaced && !all_namespaces) p += "/namespaces/" + url_encode(ns_or_default(ns));
    p += "/" + url_encode(r.resource);
    if (!name.empty()) p += "/" + url_encode(name);
    if (!sub.empty()) p += "/" + sub;
    return p;
  }

  /// The ApiError for a failed response; an authorization 403 (`User "x" cannot create resource
  /// ...`) in a namespace other than the kubeconfig's says so. Admission's 403s (quota, LimitRange)
  /// are about the object, not the namespace, and get no such hint.
  ApiError api_error(const HttpResponse& r, const std::string& ns) const {
    // An error to a request that accepted protobuf is a protobuf Status.
    std::string status_json;
    if (protobuf::is_kubernetes_protobuf(r.body)) {
      try {
        status_json = json::serialize(protobuf::decode_status(r.body));
      } catch (const protobuf::DecodeError&) {
        // left as it came: decode_error describes the body
      }
    }
    ApiError e = kube::decode_error(r.status, status_json.empty() ? std::string_view(r.body) : status_json,
                                    kube::retry_after_seconds(r));
    // A type the cached discovery said was served is not (a CRD removed, an aggregated API gone):
    // the apiserver's NotFound for an unknown path (apiserver/pkg/endpoints/handlers/responsewriters
    // via genericapifilters NotFound: "the server could not find the requested resource").
    if (r.status == 404 && e.status_message() == "the server could not find the requested resource") {
      {
        std::lock_guard lock(memo.mu);
        memo.docs.clear();
        memo.used = false;
      }
      if (discovery) discovery->invalidate();
    }
    // 401: the server knows none of the credentials sent (kubectl: "You must be logged in to the
    // server"). Say which of the kubeconfig's it was and what to renew; nothing secret is named.
    if (r.status == 401)
      return ApiError(e.code(), e.reason(), e.status_message() + unauthorized_hint(), e.causes(),
                      e.retry_after_seconds());
    if (r.status == 403 && !ns.empty() && ns != config.namespace_name &&
        e.status_message().find(" cannot ") != std::string::npos) {
      return ApiError(
          e.code(), e.reason(),
          fmt::format("{}; the request was for namespace \"{}\"; your kubeconfig's namespace is \"{}\": pass -n {} "
                      "or omit --namespace",
                      e.status_message(), ns, config.namespace_name, config.namespace_name),
          e.causes(), e.retry_after_seconds());
    }
    return e;
  }

  std::string unauthorized_hint() const {
    const KubeUser& u = config.user;
    const std::string who = u.name.empty() ? std::string("the kubeconfig's user") : "user \"" + u.name + "\"";
    std::string what;
    if (u.exec)
      what = "the token of its exec plugin (" + u.exec->command + ") was refused: log in again with the plugin";
    else if (!u.token.empty() || !u.token_file.empty())
      what = "its token was refused (wrong, expired or revoked): get a new one";
    else if (!u.username.empty() || !u.password.empty())
      what = "its user name and password were refused";
    else if (!u.client_certificate_pem.empty())
      what = "its client certificate was refused (expired, or not signed by the cluster's CA): get a new one";
    else
      return "; the kubeconfig's context sends no credentials: set a token, client certificate or exec plugin for "
             "its user";
    return fmt::format("; the server did not accept the credentials of {}: {}", who, what);
  }

  /// The API server's warnings (`Warning: 299 - "text"` headers: a duplicate env name, a
  /// deprecated field or annotation, ...), one log line each at warning level, as kubectl prints
  /// them. RFC 7234 warn-code warn-agent "warn-text"; k8s.io/apiserver/pkg/endpoints/handlers
  /// writes code 299 and agent "-".
  void report_warnings(const HttpResponse& resp) const {
    if (!options.logger) return;
    for (const auto& [name, value] : resp.headers) {
      if (name.size() != 7 || ::strncasecmp(name.c_str(), "Warning", 7) != 0) continue;
      for (const auto& text : kube::warning_texts(value)) log(LogLevel::warning, text);
    }
  }

  /// Waits before a retry; a cancellable call (watch, logs, or one under a CancelScope) passes
  /// its token so that a cancellation ends the wait within 50 ms.
  void pause(std::chrono::milliseconds d, const CancelToken* cancel = nullptr) const {
    if (options.retry.sleep) {
      options.retry.sleep(d);
      return;
    }
    const auto until = std::chrono::steady_clock::now() + d;
    for (;;) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= until || (cancel && cancel->cancelled())) return;
      std::this_thread::sleep_for(
          cancel ? std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(50))
                 : until - now);
    }
  }

  double random01() const { return options.retry.random ? options.retry.random() : thread_random(); }

  /// The server's clock minus ours, from the Date header of the latest response (0 until one came).
  mutable std::atomic<std::int64_t> server_skew_ms{0};

  void note_server_date(const HttpResponse& resp) const {
    const std::string* date = resp.header("Date");
    if (!date) return;
    auto server = detail::parse_http_date(*date);
    if (!server) return;
    auto skew = std::chrono::duration_cast<std::chrono::milliseconds>(*server - std::chrono::system_clock::now());
    // Date has whole seconds: ignore sub-second differences so a clock in step reads as in step.
    server_skew_ms.store(std::chrono::abs(skew) < std::chrono::seconds(2) ? 0 : skew.count());
  }

  struct Call {
    std::string method, target, body, content_type;
    bool replay_safe = false;
    std::string ns;  // for the 403 message ("" when cluster-scoped)
    bool report_warnings = true;
    std::string accept{};  // the Accept header; empty: the transport's (application/json)
    /// Set: a 2xx body goes to `sink` (Transport::stream) within the request timeout; no retry
    /// once `*sink_started`.
    const ChunkSink* sink = nullptr;
    const bool* sink_started = nullptr;
    bool no_side_effects = false;  ///< a dry run: pipelined with reads (HttpRequest::no_side_effects)
  };

  /// One request with retries and one credential refresh after 401. Returns a 2xx response;
  /// throws ApiError / TransportError otherwise. `attempts` receives how many were sent.
  /// `answered`: the answer the request already got (sent with others by send_each), taken as
  /// the first attempt's — a 429's Retry-After is waited for, a 403 thrown, without sending again.
  HttpResponse execute(const Call& call, int* attempts = nullptr, HttpResponse* answered = nullptr) const {
    HttpRequest req;
    req.method = call.method;
    req.target = call.target;
    req.body = call.body;
    if (!call.content_type.empty()) req.headers.emplace_back("Content-Type", call.content_type);
    if (!call.accept.empty()) req.headers.emplace_back("Accept", call.accept);
    // The caller's cancellation (CancelScope) reaches the transport and every back-off below.
    const CancelToken* cancel = CancelScope::current();
    req.cancel = cancel;
    if (call.sink) req.timeout = options.transport.request_timeout;
    auto check_cancelled = [&] {
      if (cancel && cancel->cancelled())
        throw CancelledError(
            fmt::format("{} {}: cancelled", call.method, call.target.substr(0, call.target.find('?'))));
    };
    int retries = 0;
    bool refreshed = false;
    for (;;) {
      check_cancelled();
      if (attempts) *attempts = retries + 1;
      RequestCredentials creds = credentials.current();
      HttpResponse resp;
      try {
        if (answered) {
          resp = std::move(*std::exchange(answered, nullptr));
        } else {
          static const CancelToken never;  // a stream's token when the caller has none
          resp = call.sink ? transport->stream(req, creds, *call.sink, cancel ? *cancel : never)
                           : transport->send(req, creds);
          reached = true;
        }
      } catch (const ResponseTooLargeError&) {
        throw;  // the same request would get the same answer
      } catch (const TransportError& e) {
        check_cancelled();  // the transport gave up because the token fired
        if (give_up_at_once(e)) throw;
        if (call.sink_started && *call.sink_started) throw;  // a second body would repeat the first's items
        auto d = decide_retry(options.retry, retries, call.replay_safe, {}, random01());
        if (!d.retry) throw;
        log(LogLevel::warning, fmt::format("retrying ({}/{}) in {} ms: {}", retries + 1, options.retry.max_retries,
                                           d.delay.count(), e.what()));
        pause(d.delay, cancel);
        ++retries;
        continue;
      }
      note_server_date(resp);
      if (call.report_warnings) report_warnings(resp);
      if (resp.status >= 200 && resp.status < 300) return resp;
      if (resp.status == 401 && !refreshed && credentials.refresh_after_unauthorized(creds)) {
        refreshed = true;  // exec plugin / token file: fetch once more, then give up
        continue;
      }
      auto retry_after = kube::retry_after_seconds(resp);
      auto d = decide_retry(options.retry, retries, call.replay_safe, {resp.status, retry_after}, random01());
      if (!d.retry) throw api_error(resp, call.ns);
      log(LogLevel::warning, fmt::format("retrying ({}/{}) in {} ms: {} {}: the server answered {}", retries + 1,
                                         options.retry.max_retries, d.delay.count(), call.method,
                                         call.target.substr(0, call.target.find('?')), resp.status));
      pause(d.delay, cancel);
      ++retries;
    }
  }

  /// Calls sent together (Transport::send_each: pipelined), each answer as it came: no retry, no
  /// error thrown for a status. Empty when the transport failed: the caller then sends them one
  /// by one with execute(), which retries and reports.
  std::vector<HttpResponse> send_each(const std::vector<Call>& calls) const {
    std::vector<HttpRequest> reqs(calls.size());
    const CancelToken* cancel = CancelScope::current();
    for (std::size_t i = 0; i < calls.size(); ++i) {
      reqs[i].method = calls[i].method;
      reqs[i].target = calls[i].target;
      reqs[i].body = calls[i].body;
      if (!calls[i].content_type.empty()) reqs[i].headers.emplace_back("Content-Type", calls[i].content_type);
      if (!calls[i].accept.empty()) reqs[i].headers.emplace_back("Accept", calls[i].accept);
      reqs[i].cancel = cancel;
      reqs[i].no_side_effects = calls[i].no_side_effects;
    }
    std::vector<HttpResponse> answers;
    try {
      answers = transport->send_each(reqs, credentials.current());
      reached = true;
    } catch (const ResponseTooLargeError&) {
      throw;
    } catch (const TransportError&) {
      return {};
    }
    for (std::size_t i = 0; i < answers.size(); ++i) {
      note_server_date(answers[i]);
      if (calls[i].report_warnings) report_warnings(answers[i]);
    }
    return answers;
  }

  json::object call_object(const Call& call) const {
    HttpResponse r = execute(call);
    return parse_object(r, call.method + " " + call.target.substr(0, call.target.find('?')));
  }

  json::object get_path(const std::string& target) const { return call_object({"GET", target, "", "", true, ""}); }

  static void add_write(Query& q, bool dry_run, const std::string& field_manager) {
    if (dry_run) q.emplace_back("dryRun", "All");
    if (!field_manager.empty()) q.emplace_back("fieldManager", field_manager);
  }

  /// The request creating `object` (POST); a dry run is sent again as a GET would be.
  Call create_call(const ResourceRef& ref, const std::string& ns, const json::object& object, bool dry_run,
                   const std::string& field_manager, bool report_warnings) const {
    Query q;
    add_write(q, dry_run, field_manager);
    Call c{"POST",
           with_query(path(ref, ns), q),
           json::serialize(object),
           "application/json",
           dry_run,
           ref.namespaced ? ns_or_default(ns) : "",
           report_warnings};
    c.no_side_effects = dry_run;
    return c;
  }

  /// The request of one object (GET ref/name).
  Call get_call(const ResourceRef& ref, const std::string& ns, const std::string& name) const {
    return {"GET", path(ref, ns, name), "", "", true, ref.namespaced ? ns_or_default(ns) : ""};
  }

  /// The request of one list page (GET with the options as query parameters).
  Call list_call(const ResourceRef& ref, const std::string& ns, const ListOptions& o) const {
    Query q;
    if (!o.label_selector.empty()) q.emplace_back("labelSelector", o.label_selector);
    if (!o.field_selector.empty()) q.emplace_back("fieldSelector", o.field_selector);
    if (o.limit > 0) q.emplace_back("limit", std::to_string(o.limit));
    if (!o.continue_token.empty()) q.emplace_back("continue", o.continue_token);
    if (!o.resource_version.empty()) q.emplace_back("resourceVersion", o.resource_version);
    const std::string effective_ns = ref.namespaced && !o.all_namespaces ? ns_or_default(ns) : "";
    return {"GET", with_query(path(ref, ns, {}, o.all_namespaces), q), "", "", true, effective_ns};
  }

  /// One list page as the server's JSON text, with its metadata read from the text before "items"
  /// (Go's encoder writes a List's TypeMeta and ListMeta before Items, and so does the embedded
  /// server): the items are never parsed here.
  RawListPage list_raw(const ResourceRef& ref, const std::string& ns, const ListOptions& o) const {
    Call call = list_call(ref, ns, o);
    // client-go's protobuf clients: "application/vnd.kubernetes.protobuf,application/json"
    // (rest.ClientContentConfig AcceptContentTypes); custom resources are answered in JSON.
    if (o.protobuf) call.accept = "application/vnd.kubernetes.protobuf,application/json";
    HttpResponse r = execute(call);
    RawListPage page;
    page.text = std::move(r.body);
    if (protobuf::is_kubernetes_protobuf(page.text)) {
      try {
        const protobuf::ListMeta meta = protobuf::list_meta(page.text);
        page.resource_version = meta.resource_version;
        page.continue_token = meta.continue_token;
      } catch (const protobuf::DecodeError& e) {
        throw TransportError(fmt::format("GET {}: the server's protobuf list could not be read: {}",
                                         call.target.substr(0, call.target.find('?')), e.what()));
      }
      page.protobuf = true;
      return page;
    }
    const std::string_view text = page.text;
    json::object head;
    boost::system::error_code ec;
    if (const auto at = text.find("\"items\":"); at != std::string_view::npos) {
      std::string prefix(text.substr(0, at));
      prefix += "\"items\":null}";
      json::value v = json::parse(prefix, ec);
      if (!ec && v.is_object()) head = std::move(v.as_object());
    }
    if (head.empty()) {  // metadata after the items, or no items: read the whole document
      json::value v = json::parse(text, ec);
      if (ec || !v.is_object())
        throw TransportError(
            fmt::format("GET {}: the server's list is not a JSON object; is it a Kubernetes API server?",
                        call.target.substr(0, call.target.find('?'))));
      head = std::move(v.as_object());
    }
    page.resource_version = meta_string(head, "resourceVersion");
    page.continue_token = meta_string(head, "continue");
    return page;
  }

  ListPage list(const ResourceRef& ref, const std::string& ns, const ListOptions& o) const {
    return list_page(call_object(list_call(ref, ns, o)), ref, ns, o);
  }

  /// A list's answer as a page (`ref`, `ns`, `o`: what was asked, for the error).
  ListPage list_page(json::object body, const ResourceRef& ref, const std::string& ns, const ListOptions& o) const {
    ListPage page;
    if (auto* items = body.if_contains("items"); items && items->is_array()) {
      page.items = std::move(items->as_array());
    } else if (items && !items->is_null()) {
      throw TransportError(
          fmt::format("GET {}: the server's list has \"items\" that is not an array; is it a Kubernetes API server?",
                      path(ref, ns, {}, o.all_namespaces)));
    }
    page.resource_version = meta_string(body, "resourceVersion");
    page.continue_token = meta_string(body, "continue");
    return page;
  }
};

}  // namespace gpupool::kube
