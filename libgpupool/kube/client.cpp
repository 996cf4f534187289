// The REST client. URL layout, verbs and content types follow the Kubernetes API conventions
// (https://kubernetes.io/docs/reference/using-api/api-concepts/): list pagination with
// limit/continue, watch with resourceVersion + allowWatchBookmarks and 410 Gone meaning "re-list",
// the four patch content types, dryRun=All, DeleteOptions.propagationPolicy.
#include "common/http_date.hpp"
#include "common/json_depth.hpp"
#include <atomic>
#include "gpupool/client.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>
#include <map>
#include <random>
#include <strings.h>
#include <thread>

#include "gpupool/error.hpp"
#include "kube/credentials.hpp"
#include "kube/status.hpp"
#include "kube/streams.hpp"
#include "kube/util.hpp"

namespace gpupool {

namespace json = boost::json;
using kube::url_encode;

namespace {

using Query = std::vector<std::pair<std::string, std::string>>;

std::string with_query(std::string path, const Query& q) {
  char sep = '?';
  for (const auto& [k, v] : q) {
    path += sep + url_encode(k) + "=" + url_encode(v);
    sep = '&';
  }
  return path;
}

double thread_random() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

std::string new_submission_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}{:016x}", rng(), rng());
}

const json::object& metadata_of(const json::object& o) {
  static const json::object empty;
  const auto* m = o.if_contains("metadata");
  return m && m->is_object() ? m->as_object() : empty;
}

std::string meta_string(const json::object& o, const char* key) {
  const auto& m = metadata_of(o);
  const auto* v = m.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

json::object parse_object(const HttpResponse& r, const std::string& what) {
  json::error_code ec;
  json::value v = json::parse(r.body, ec, {}, deep_json());
  if (ec || !v.is_object())
    throw TransportError(fmt::format("{}: the server answered {} with {} bytes that are not a JSON object; is the server a "
                                     "Kubernetes API server?",
                                     what, r.status, r.body.size()));
  return std::move(v.as_object());
}

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
      throw ResponseTooLargeError(fmt::format("the server sent a line longer than {} bytes "
                                              "(TransportOptions.max_response_bytes); the stream was stopped",
                                              max_line_));
  }

 private:
  std::function<bool(std::string_view)> on_line_;
  std::size_t max_line_;
  bool too_long_ = false;
  std::string buffer_;
};

thread_local const CancelScope* innermost_scope = nullptr;

}  // namespace

CancelScope::CancelScope(const CancelToken& token) : token_(token), previous_(innermost_scope) { innermost_scope = this; }
CancelScope::CancelScope() : previous_(innermost_scope) { innermost_scope = this; }
CancelScope::~CancelScope() { innermost_scope = previous_; }
const CancelToken* CancelScope::current() noexcept {
  return innermost_scope && innermost_scope->token_ ? &*innermost_scope->token_ : nullptr;
}

struct Client::Impl {
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

  Impl(KubeConfig cfg, ClientOptions opts)
      : config(std::move(cfg)), options(std::move(opts)), credentials(config, options.logger, options.now) {
    if (config.cluster.server.rfind("https://", 0) != 0 && config.cluster.server.rfind("http://", 0) != 0)
      throw ConfigError(config.source.empty() ? "kubeconfig" : config.source, "cluster.server",
                        fmt::format("\"{}\" is not an http(s) URL; set the cluster's server to https://HOST:PORT", config.cluster.server));
    if (options.transport_override) {
      transport = options.transport_override;
    } else {
      TransportOptions t = options.transport;
      if (!t.logger) t.logger = options.logger;
      transport = make_curl_transport(config.cluster, std::move(t));
    }
  }

  void log(LogLevel level, const std::string& msg) const {
    if (options.logger) options.logger(level, msg);
  }

  std::string ns_or_default(const std::string& ns) const { return ns.empty() ? config.namespace_name : ns; }

  std::string path(const ResourceRef& r, const std::string& ns, const std::string& name = {}, bool all_namespaces = false,
                   const std::string& sub = {}) const {
    if (r.version.empty() || r.resource.empty())
      throw ValidationError("resource", r.api_version() + "/" + r.resource, "a ResourceRef needs a version and a resource");
    std::string p = r.group.empty() ? "/api/" + url_encode(r.version) : "/apis/" + url_encode(r.group) + "/" + url_encode(r.version);
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
    ApiError e = kube::decode_error(r.status, r.body, kube::retry_after_seconds(r));
    if (r.status == 403 && !ns.empty() && ns != config.namespace_name &&
        e.status_message().find(" cannot ") != std::string::npos) {
      return ApiError(e.code(), e.reason(),
                      fmt::format("{}; the request was for namespace \"{}\"; your kubeconfig's namespace is \"{}\": pass -n {} "
                                  "or omit --namespace",
                                  e.status_message(), ns, config.namespace_name, config.namespace_name),
                      e.causes(), e.retry_after_seconds());
    }
    return e;
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
      std::this_thread::sleep_for(cancel ? std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(50))
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
  };

  /// One request with retries and one credential refresh after 401. Returns a 2xx response;
  /// throws ApiError / TransportError otherwise. `attempts` receives how many were sent.
  HttpResponse execute(const Call& call, int* attempts = nullptr) const {
    HttpRequest req;
    req.method = call.method;
    req.target = call.target;
    req.body = call.body;
    if (!call.content_type.empty()) req.headers.emplace_back("Content-Type", call.content_type);
    // The caller's cancellation (CancelScope) reaches the transport and every back-off below.
    const CancelToken* cancel = CancelScope::current();
    req.cancel = cancel;
    auto check_cancelled = [&] {
      if (cancel && cancel->cancelled())
        throw CancelledError(fmt::format("{} {}: cancelled", call.method, call.target.substr(0, call.target.find('?'))));
    };
    int retries = 0;
    bool refreshed = false;
    for (;;) {
      check_cancelled();
      if (attempts) *attempts = retries + 1;
      RequestCredentials creds = credentials.current();
      HttpResponse resp;
      try {
        resp = transport->send(req, creds);
        reached = true;
      } catch (const ResponseTooLargeError&) {
        throw;  // the same request would get the same answer
      } catch (const TransportError& e) {
        check_cancelled();  // the transport gave up because the token fired
        if (give_up_at_once(e)) throw;
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

  json::object call_object(const Call& call) const {
    HttpResponse r = execute(call);
    return parse_object(r, call.method + " " + call.target.substr(0, call.target.find('?')));
  }

  json::object get_path(const std::string& target) const {
    return call_object({"GET", target, "", "", true, ""});
  }

  static void add_write(Query& q, bool dry_run, const std::string& field_manager) {
    if (dry_run) q.emplace_back("dryRun", "All");
    if (!field_manager.empty()) q.emplace_back("fieldManager", field_manager);
  }

  ListPage list(const ResourceRef& ref, const std::string& ns, const ListOptions& o) const {
    Query q;
    if (!o.label_selector.empty()) q.emplace_back("labelSelector", o.label_selector);
    if (!o.field_selector.empty()) q.emplace_back("fieldSelector", o.field_selector);
    if (o.limit > 0) q.emplace_back("limit", std::to_string(o.limit));
    if (!o.continue_token.empty()) q.emplace_back("continue", o.continue_token);
    if (!o.resource_version.empty()) q.emplace_back("resourceVersion", o.resource_version);
    const std::string effective_ns = ref.namespaced && !o.all_namespaces ? ns_or_default(ns) : "";
    json::object body = call_object({"GET", with_query(path(ref, ns, {}, o.all_namespaces), q), "", "", true, effective_ns});
    ListPage page;
    if (auto* items = body.if_contains("items"); items && items->is_array()) {
      page.items = std::move(items->as_array());
    } else if (items && !items->is_null()) {
      throw TransportError(fmt::format("GET {}: the server's list has \"items\" that is not an array; is it a Kubernetes API server?",
                                       path(ref, ns, {}, o.all_namespaces)));
    }
    page.resource_version = meta_string(body, "resourceVersion");
    page.continue_token = meta_string(body, "continue");
    return page;
  }
};

Client::Client(KubeConfig config, ClientOptions options) : impl_(std::make_shared<Impl>(std::move(config), std::move(options))) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

const KubeConfig& Client::config() const { return impl_->config; }
const std::string& Client::default_namespace() const { return impl_->config.namespace_name; }

const ClientOptions& Client::options() const { return impl_->options; }

std::chrono::system_clock::time_point Client::server_now() const {
  return std::chrono::system_clock::now() + std::chrono::milliseconds(impl_->server_skew_ms.load());
}

// ---- discovery ---------------------------------------------------------------------------------

ServerVersion Client::server_version() const {
  json::object v = impl_->get_path("/version");
  auto s = [&](const char* k) { return v.contains(k) && v.at(k).is_string() ? std::string(v.at(k).as_string()) : std::string(); };
  return {s("major"), s("minor"), s("gitVersion"), s("platform")};
}

std::vector<std::string> Client::served_versions(const std::string& group) const {
  std::vector<std::string> out;
  if (group.empty()) {
    json::object api = impl_->get_path("/api");
    if (auto* vs = api.if_contains("versions"); vs && vs->is_array())
      for (const auto& v : vs->as_array())
        if (v.is_string()) out.emplace_back(v.as_string());
    return out;
  }
  json::object apis = impl_->get_path("/apis");
  const auto* groups = apis.if_contains("groups");
  if (!groups || !groups->is_array()) return out;
  for (const auto& g : groups->as_array()) {
    if (!g.is_object() || !g.as_object().contains("name") || g.at("name") != json::value(group)) continue;
    auto version_of = [](const json::value* v) -> std::string {
      if (!v || !v->is_object()) return {};
      const auto* ver = v->as_object().if_contains("version");
      return ver && ver->is_string() ? std::string(ver->as_string()) : std::string();
    };
    const std::string preferred = version_of(g.as_object().if_contains("preferredVersion"));
    if (!preferred.empty()) out.push_back(preferred);
    if (const auto* vs = g.as_object().if_contains("versions"); vs && vs->is_array())
      for (const auto& v : vs->as_array())
        if (auto ver = version_of(&v); !ver.empty() && ver != preferred) out.push_back(ver);
  }
  return out;
}

std::vector<ApiResourceInfo> Client::resources(const std::string& group, const std::string& version) const {
  std::string target = group.empty() ? "/api/" + url_encode(version) : "/apis/" + url_encode(group) + "/" + url_encode(version);
  json::object list;
  try {
    list = impl_->get_path(target);
  } catch (const ApiError& e) {
    if (e.code() == 404) return {};  // group/version not served
    throw;
  }
  std::vector<ApiResourceInfo> out;
  const auto* rs = list.if_contains("resources");
  if (!rs || !rs->is_array()) return out;
  for (const auto& r : rs->as_array()) {
    if (!r.is_object()) continue;
    const auto& o = r.as_object();
    auto s = [&](const char* k) { return o.contains(k) && o.at(k).is_string() ? std::string(o.at(k).as_string()) : std::string(); };
    ApiResourceInfo info{s("name"), s("kind"), o.contains("namespaced") && o.at("namespaced").is_bool() && o.at("namespaced").as_bool(), {}, {}};
    if (info.name.empty() || info.name.find('/') != std::string::npos) continue;  // subresource
    for (const char* key : {"verbs", "shortNames"})
      if (const auto* arr = o.if_contains(key); arr && arr->is_array())
        for (const auto& v : arr->as_array())
          if (v.is_string()) (std::string_view(key) == "verbs" ? info.verbs : info.short_names).emplace_back(v.as_string());
    out.push_back(std::move(info));
  }
  return out;
}

std::optional<ResourceRef> Client::find_resource(const std::string& group, const std::string& kind) const {
  for (const auto& version : served_versions(group))
    for (const auto& r : resources(group, version))
      if (r.kind == kind) return ResourceRef{group, version, r.name, r.kind, r.namespaced};
  return std::nullopt;
}

// ---- objects -----------------------------------------------------------------------------------

boost::json::object Client::create(const ResourceRef& ref, const std::string& ns, const boost::json::object& object,
                                   const WriteOptions& options) const {
  Query q;
  Impl::add_write(q, options.dry_run, options.field_manager);
  const std::string n = ref.namespaced ? impl_->ns_or_default(ns) : "";
  // A dry run stores nothing, so sending it twice is harmless: it is retried like a GET.
  return impl_->call_object(
      {"POST", with_query(impl_->path(ref, ns), q), json::serialize(object), "application/json", options.dry_run, n,
       options.report_warnings});
}

boost::json::object Client::create_idempotent(const ResourceRef& ref, const std::string& ns, const boost::json::object& object,
                                              const WriteOptions& options) const {
  const std::string& key = impl_->options.submission_id_annotation;
  const std::string name = meta_string(object, "name");
  if (name.empty())
    throw ValidationError("metadata.name", "", "create_idempotent needs a fixed name (generateName cannot be recognised on retry)");
  json::object obj = object;
  json::value& meta = obj["metadata"];
  if (!meta.is_object()) meta = json::object();
  json::value& ann = meta.as_object()["annotations"];
  if (!ann.is_object()) ann = json::object();
  std::string id;
  if (auto* existing = ann.as_object().if_contains(key); existing && existing->is_string() && !existing->as_string().empty()) {
    id = std::string(existing->as_string());
  } else {
    id = new_submission_id();
    ann.as_object()[key] = id;
  }
  Query q;
  Impl::add_write(q, options.dry_run, options.field_manager);
  const std::string n = ref.namespaced ? impl_->ns_or_default(ns) : "";
  try {
    return impl_->call_object({"POST", with_query(impl_->path(ref, ns), q), json::serialize(obj), "application/json", true, n});
  } catch (const ApiError& e) {
    if (e.code() != 409 || e.reason() != "AlreadyExists") throw;
    json::object stored = get(ref, ns, name);
    const auto& sm = metadata_of(stored);
    const json::value* stored_id = nullptr;
    if (const auto* a = sm.if_contains("annotations"); a && a->is_object()) stored_id = a->as_object().if_contains(key);
    if (stored_id && stored_id->is_string() && stored_id->as_string() == id) {
      impl_->log(LogLevel::debug, fmt::format("{} \"{}\" was created by an earlier attempt of this submission", ref.kind, name));
      return stored;
    }
    throw ApiError(409, "AlreadyExists",
                   fmt::format("{} \"{}\" already exists{} and was not created by this submission: the name is already taken; "
                               "choose another name or delete the existing {}",
                               ref.kind.empty() ? ref.resource : ref.kind, name, n.empty() ? "" : " in namespace \"" + n + "\"",
                               ref.kind.empty() ? "object" : ref.kind),
                   e.causes());
  }
}

boost::json::object Client::get(const ResourceRef& ref, const std::string& ns, const std::string& name) const {
  if (name.empty()) throw ValidationError("name", "", "a name is required to get an object");
  const std::string n = ref.namespaced ? impl_->ns_or_default(ns) : "";
  return impl_->call_object({"GET", impl_->path(ref, ns, name), "", "", true, n});
}

ListPage Client::list(const ResourceRef& ref, const std::string& ns, const ListOptions& options) const {
  return impl_->list(ref, ns, options);
}

boost::json::array Client::list_all(const ResourceRef& ref, const std::string& ns, ListOptions options) const {
  json::array all;
  for (;;) {
    ListPage page = impl_->list(ref, ns, options);
    for (auto& item : page.items) all.push_back(std::move(item));
    if (page.continue_token.empty()) return all;
    options.continue_token = page.continue_token;
  }
}

boost::json::object Client::update(const ResourceRef& ref, const std::string& ns, const boost::json::object& object,
                                   const WriteOptions& options) const {
  const std::string name = meta_string(object, "name");
  if (name.empty()) throw ValidationError("metadata.name", "", "update needs the object's name");
  Query q;
  Impl::add_write(q, options.dry_run, options.field_manager);
  const std::string n = ref.namespaced ? impl_->ns_or_default(ns) : "";
  // A PUT with resourceVersion is a compare-and-swap, so replaying it cannot overwrite a newer write.
  const bool replay_safe = !meta_string(object, "resourceVersion").empty();
  return impl_->call_object({"PUT", with_query(impl_->path(ref, ns, name), q), json::serialize(object), "application/json",
                             replay_safe, n, options.report_warnings});
}

boost::json::object Client::patch(const ResourceRef& ref, const std::string& ns, const std::string& name, PatchType type,
                                  const boost::json::value& patch, const PatchOptions& options) const {
  if (name.empty()) throw ValidationError("name", "", "a name is required to patch an object");
  const char* content_type = "application/merge-patch+json";
  switch (type) {
    case PatchType::merge: break;
    case PatchType::strategic: content_type = "application/strategic-merge-patch+json"; break;
    case PatchType::json:
      content_type = "application/json-patch+json";
      if (!patch.is_array()) throw ValidationError("patch", json::serialize(patch).substr(0, 80), "a JSON patch is an array of operations");
      break;
    case PatchType::apply:
      content_type = "application/apply-patch+yaml";  // JSON is YAML
      if (options.field_manager.empty())
        throw ValidationError("fieldManager", "", "server-side apply needs a field manager (e.g. \"gpupool\")");
      break;
  }
  if (type != PatchType::json && !patch.is_object())
    throw ValidationError("patch", json::serialize(patch).substr(0, 80), "this patch type takes a JSON object");
  if (options.force && type != PatchType::apply) throw ValidationError("force", "true", "force applies to server-side apply only");
  Query q;
  Impl::add_write(q, options.dry_run, options.field_manager);
  if (options.force) q.emplace_back("force", "true");
  const std::string n = ref.namespaced ? impl_->ns_or_default(ns) : "";
  // Apply is declarative (same result when replayed); other patches may not be.
  return impl_->call_object({"PATCH", with_query(impl_->path(ref, ns, name), q), json::serialize(patch), content_type,
                             type == PatchType::apply, n, options.report_warnings});
}

boost::json::object Client::remove(const ResourceRef& ref, const std::string& ns, const std::string& name,
                                   const DeleteOptions& options) const {
  if (name.empty()) throw ValidationError("name", "", "a name is required to delete an object");
  json::object body{{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  switch (options.propagation) {
    case PropagationPolicy::server_default: break;
    case PropagationPolicy::background: body["propagationPolicy"] = "Background"; break;
    case PropagationPolicy::foreground: body["propagationPolicy"] = "Foreground"; break;
    case PropagationPolicy::orphan: body["propagationPolicy"] = "Orphan"; break;
  }
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (!options.precondition_uid.empty() || !options.precondition_resource_version.empty()) {
    json::object pre;
    if (!options.precondition_uid.empty()) pre["uid"] = options.precondition_uid;
    if (!options.precondition_resource_version.empty()) pre["resourceVersion"] = options.precondition_resource_version;
    body["preconditions"] = std::move(pre);
  }
  if (options.dry_run) body["dryRun"] = json::array{"All"};
  Query q;
  Impl::add_write(q, options.dry_run, "");
  const std::string n = ref.namespaced ? impl_->ns_or_default(ns) : "";
  Impl::Call call{"DELETE", with_query(impl_->path(ref, ns, name), q), json::serialize(body), "application/json", true, n};
  int attempts = 0;
  try {
    return parse_object(impl_->execute(call, &attempts), "DELETE " + impl_->path(ref, ns, name));
  } catch (const ApiError& e) {
    // A retried DELETE whose first attempt went through finds nothing: that is the wanted outcome.
    if (e.code() == 404 && attempts > 1)
      return json::object{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}, {"code", 200}};
    throw;
  }
}

// ---- streams -----------------------------------------------------------------------------------

std::string Client::watch(const ResourceRef& ref, const std::string& ns, const WatchOptions& o, const WatchHandler& handler,
                          const CancelToken& cancel) const {
  const Impl& im = *impl_;
  std::string rv = o.resource_version;
  std::map<std::string, json::object> known;  // namespace/name -> last object delivered
  auto key_of = [](const json::object& obj) { return meta_string(obj, "namespace") + "/" + meta_string(obj, "name"); };
  bool stop = false;
  auto deliver = [&](WatchEvent ev) {
    if (ev.type == "DELETED") {
      known.erase(key_of(ev.object));
    } else {
      known[key_of(ev.object)] = ev.object;
    }
    if (!handler(ev)) stop = true;
    return !stop;
  };
  // (Re-)list: deliver what changed since the objects we know of, then watch from the list's version.
  auto relist = [&]() {
    ListOptions lo;
    lo.label_selector = o.label_selector;
    lo.field_selector = o.field_selector;
    lo.all_namespaces = o.all_namespaces;
    lo.limit = 500;
    std::map<std::string, json::object> seen;
    std::string list_rv;
    for (;;) {
      ListPage page = im.list(ref, ns, lo);
      list_rv = page.resource_version;
      for (auto& item : page.items)
        if (item.is_object()) seen[key_of(item.as_object())] = std::move(item.as_object());
      if (page.continue_token.empty()) break;
      lo.continue_token = page.continue_token;
    }
    std::vector<WatchEvent> events;
    for (const auto& [k, obj] : known)
      if (!seen.count(k)) events.push_back({"DELETED", obj});
    for (auto& [k, obj] : seen) {
      auto it = known.find(k);
      if (it == known.end()) {
        events.push_back({"ADDED", obj});
      } else if (meta_string(it->second, "resourceVersion") != meta_string(obj, "resourceVersion")) {
        events.push_back({"MODIFIED", obj});
      }
    }
    for (auto& ev : events)
      if (!deliver(std::move(ev))) break;
    rv = list_rv;
  };

  int failures = 0, empty_closes = 0;
  bool refreshed = false;
  // A re-list is an ordinary request: let `cancel` end it (and its back-off) too.
  CancelScope scope(cancel);
  auto relist_unless_cancelled = [&] {
    try {
      relist();
      return true;
    } catch (const CancelledError&) {
      if (!cancel.cancelled()) throw;
      return false;
    }
  };
  if (rv.empty() && !relist_unless_cancelled()) return rv;
  while (!stop && !cancel.cancelled()) {
    Query q{{"watch", "1"}, {"allowWatchBookmarks", "true"}};
    if (!rv.empty()) q.emplace_back("resourceVersion", rv);
    if (!o.label_selector.empty()) q.emplace_back("labelSelector", o.label_selector);
    if (!o.field_selector.empty()) q.emplace_back("fieldSelector", o.field_selector);
    if (o.timeout_seconds > 0) q.emplace_back("timeoutSeconds", std::to_string(o.timeout_seconds));
    HttpRequest req;
    req.target = with_query(im.path(ref, ns, {}, o.all_namespaces), q);
    bool gone = false;
    std::optional<ApiError> stream_error;
    LineSplitter lines([&](std::string_view line) {
      if (line.empty()) return true;
      json::error_code ec;
      json::value v = json::parse(line, ec, {}, deep_json());
      if (ec || !v.is_object()) {
        stream_error = ApiError(500, "InternalError", fmt::format("the watch stream sent a line that is not a JSON event ({} bytes)", line.size()));
        return false;
      }
      auto& ev = v.as_object();
      std::string type = ev.contains("type") && ev.at("type").is_string() ? std::string(ev.at("type").as_string()) : "";
      json::object obj = ev.contains("object") && ev.at("object").is_object() ? std::move(ev.at("object").as_object()) : json::object();
      if (type == "ERROR") {
        ApiError e = kube::decode_error(obj.contains("code") && obj.at("code").is_int64() ? static_cast<int>(obj.at("code").as_int64()) : 500,
                                        json::serialize(obj));
        if (e.code() == 410) {
          gone = true;
        } else {
          stream_error = e;
        }
        return false;
      }
      failures = 0;
      empty_closes = -1;  // this connection delivered something
      refreshed = false;
      if (std::string v_rv = meta_string(obj, "resourceVersion"); !v_rv.empty()) rv = v_rv;
      if (type == "BOOKMARK") return o.deliver_bookmarks ? (handler(WatchEvent{type, std::move(obj)}) || (stop = true, false)) : true;
      return deliver(WatchEvent{type, std::move(obj)});
    }, im.options.transport.max_response_bytes);
    HttpResponse resp;
    if (empty_closes < 0) empty_closes = 0;
    const int empty_before = empty_closes;
    try {
      RequestCredentials creds = im.credentials.current();
      resp = im.transport->stream(req, creds, [&](std::string_view chunk) { return lines.feed(chunk) && !stop; }, cancel);
      im.reached = true;
      lines.check_length();
      if (resp.status == 401 && !refreshed && im.credentials.refresh_after_unauthorized(creds)) {
        refreshed = true;  // once; a second 401 is reported
        continue;
      }
    } catch (const ResponseTooLargeError&) {
      throw;  // resuming would meet the same line again
    } catch (const TransportError& e) {
      if (cancel.cancelled()) break;
      if (im.give_up_at_once(e)) throw;
      auto d = decide_retry(im.options.retry, failures, true, {}, im.random01());
      if (!d.retry) throw;
      im.log(LogLevel::debug, fmt::format("watch {}: {}; resuming from {} in {} ms", ref.resource, e.what(), rv, d.delay.count()));
      im.pause(d.delay, &cancel);
      ++failures;
      continue;
    }
    if (stop || cancel.cancelled()) break;
    if (resp.status == 410) gone = true;
    if (gone) {  // the version we hold is too old: re-list (client-go Reflector does the same)
      im.log(LogLevel::debug, fmt::format("watch {}: resourceVersion {} is gone; re-listing", ref.resource, rv));
      if (!relist_unless_cancelled()) break;
      continue;
    }
    if (resp.status < 200 || resp.status >= 300) {
      ApiError e = im.api_error(resp, ref.namespaced && !o.all_namespaces ? im.ns_or_default(ns) : "");
      auto d = decide_retry(im.options.retry, failures, true, {resp.status, kube::retry_after_seconds(resp)}, im.random01());
      if (!d.retry) throw e;
      im.pause(d.delay, &cancel);
      ++failures;
      continue;
    }
    if (stream_error) {
      auto d = decide_retry(im.options.retry, failures, true, {stream_error->code(), stream_error->retry_after_seconds()}, im.random01());
      if (!d.retry) throw *stream_error;
      im.pause(d.delay, &cancel);
      ++failures;
    }
    // The server closed the watch (timeoutSeconds or a restart): resume from rv at once, but back
    // off when connections keep closing without delivering anything (no busy loop).
    if (empty_closes == empty_before && !stream_error) {
      ++empty_closes;
      if (empty_closes > 1) im.pause(im.options.retry.backoff(std::min(empty_closes - 1, 8), im.random01()), &cancel);
    }
  }
  return rv;
}

int Client::exec(const std::string& ns, const std::string& pod, const ExecOptions& options, const ExecIO& io,
                 const CancelToken& cancel) const {
  if (pod.empty()) throw ValidationError("pod", "", "a pod name is required for exec");
  const Impl& im = *impl_;
  const kube::StreamContext ctx{im.config, im.credentials, im.options.transport.user_agent, im.options.transport.connect_timeout};
  return kube::exec_in_pod(ctx, im.path(ResourceRef{"", "v1", "pods", "Pod", true}, ns, pod), options, io, cancel);
}

std::unique_ptr<PortForward> Client::port_forward(const std::string& ns, const std::string& pod, std::vector<PortForward::Port> ports,
                                                  PortForwardErrorHandler on_error) const {
  if (pod.empty()) throw ValidationError("pod", "", "a pod name is required for port-forward");
  const Impl& im = *impl_;
  const kube::StreamContext ctx{im.config, im.credentials, im.options.transport.user_agent, im.options.transport.connect_timeout};
  return kube::forward_ports(ctx, im.path(ResourceRef{"", "v1", "pods", "Pod", true}, ns, pod), std::move(ports), std::move(on_error));
}

void Client::logs(const std::string& ns, const std::string& pod, const LogOptions& o, const LineHandler& handler,
                  const CancelToken& cancel) const {
  if (pod.empty()) throw ValidationError("pod", "", "a pod name is required for logs");
  const Impl& im = *impl_;
  Query q;
  if (!o.container.empty()) q.emplace_back("container", o.container);
  if (o.follow) q.emplace_back("follow", "true");
  if (o.previous) q.emplace_back("previous", "true");
  if (o.timestamps) q.emplace_back("timestamps", "true");
  if (o.tail_lines) q.emplace_back("tailLines", std::to_string(*o.tail_lines));
  if (o.since_seconds) q.emplace_back("sinceSeconds", std::to_string(*o.since_seconds));
  if (o.limit_bytes) q.emplace_back("limitBytes", std::to_string(*o.limit_bytes));
  static const ResourceRef pods{"", "v1", "pods", "Pod", true};
  HttpRequest req;
  req.target = with_query(im.path(pods, ns, pod, false, "log"), q);
  req.headers.emplace_back("Accept", "*/*");
  bool stopped = false;
  LineSplitter lines([&](std::string_view line) {
    if (!handler(line)) stopped = true;
    return !stopped;
  }, im.options.transport.max_response_bytes);
  bool received = false, refreshed = false;
  for (int retries = 0;; ++retries) {
    RequestCredentials creds = im.credentials.current();
    HttpResponse resp;
    try {
      resp = im.transport->stream(req, creds, [&](std::string_view chunk) {
        received = true;
        return lines.feed(chunk);
      }, cancel);
      im.reached = true;
      lines.check_length();
    } catch (const ResponseTooLargeError&) {
      throw;
    } catch (const TransportError& e) {
      if (cancel.cancelled()) return;
      if (im.give_up_at_once(e)) throw;
      // Before any line arrived the GET can be repeated; after, lines would be delivered twice.
      auto d = decide_retry(im.options.retry, retries, !received, {}, im.random01());
      if (!d.retry) throw;
      im.pause(d.delay, &cancel);
      continue;
    }
    if (cancel.cancelled()) return;  // what arrived was delivered; the caller asked to stop
    if (resp.status >= 200 && resp.status < 300) break;
    if (resp.status == 401 && !refreshed && im.credentials.refresh_after_unauthorized(creds)) {
      refreshed = true;
      continue;
    }
    auto d = decide_retry(im.options.retry, retries, true, {resp.status, kube::retry_after_seconds(resp)}, im.random01());
    if (!d.retry) throw im.api_error(resp, im.ns_or_default(ns));
    im.pause(d.delay, &cancel);
  }
  if (!stopped) lines.finish();
}

}  // namespace gpupool
