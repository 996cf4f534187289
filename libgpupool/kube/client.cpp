// The REST client. URL layout, verbs and content types follow the Kubernetes API conventions
// (https://kubernetes.io/docs/reference/using-api/api-concepts/): list pagination with
// limit/continue, watch with resourceVersion + allowWatchBookmarks and 410 Gone meaning "re-list",
// the four patch content types, dryRun=All, DeleteOptions.propagationPolicy.
#include "gpupool/client.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <boost/json.hpp>
#include <future>
#include <map>
#include <random>

#include "gpupool/error.hpp"
#include "kube/client_core.hpp"
#include "kube/reflector.hpp"
#include "kube/status.hpp"
#include "kube/streams.hpp"
#include "kube/util.hpp"

namespace gpupool {

namespace json = boost::json;
using kube::url_encode;

namespace kube {

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
    throw TransportError(
        fmt::format("{}: the server answered {} with {} bytes that are not a JSON object; is the server a "
                    "Kubernetes API server?",
                    what, r.status, r.body.size()));
  return std::move(v.as_object());
}

}  // namespace kube

using kube::LineSplitter;
using kube::meta_string;
using kube::metadata_of;
using kube::parse_object;
using kube::Query;
using kube::with_query;

namespace {

std::string new_submission_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}{:016x}", rng(), rng());
}

thread_local const CancelScope* innermost_scope = nullptr;

}  // namespace

CancelScope::CancelScope(const CancelToken& token) : token_(token), previous_(innermost_scope) {
  innermost_scope = this;
}
CancelScope::CancelScope() : previous_(innermost_scope) { innermost_scope = this; }
CancelScope::~CancelScope() { innermost_scope = previous_; }
const CancelToken* CancelScope::current() noexcept {
  return innermost_scope && innermost_scope->token_ ? &*innermost_scope->token_ : nullptr;
}

struct Client::Impl : kube::ClientCore {
  using ClientCore::ClientCore;
};

Client::Client(KubeConfig config, ClientOptions options)
    : impl_(std::make_shared<Impl>(std::move(config), std::move(options))) {}
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
  auto s = [&](const char* k) {
    return v.contains(k) && v.at(k).is_string() ? std::string(v.at(k).as_string()) : std::string();
  };
  return {s("major"), s("minor"), s("gitVersion"), s("platform")};
}

std::vector<std::string> Client::served_versions(const std::string& group) const {
  std::vector<std::string> out;
  if (group.empty()) {
    json::object api = impl_->discovery_get("/api", "api.json", "versions");
    if (auto* vs = api.if_contains("versions"); vs && vs->is_array())
      for (const auto& v : vs->as_array())
        if (v.is_string()) out.emplace_back(v.as_string());
    return out;
  }
  json::object apis = impl_->discovery_get("/apis", "servergroups.json", "groups");
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
  std::string target =
      group.empty() ? "/api/" + url_encode(version) : "/apis/" + url_encode(group) + "/" + url_encode(version);
  json::object list;
  {
    // A group/version the (remembered) group list does not name is not asked for: kubectl asks only
    // for those, and a 404 here would make the caches forget everything on every call.
    const auto versions = served_versions(group);
    if (std::find(versions.begin(), versions.end(), version) == versions.end()) return {};
  }
  try {
    list = impl_->discovery_get(target, (group.empty() ? version : group + "/" + version) + "/serverresources.json",
                                "resources");
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
    auto s = [&](const char* k) {
      return o.contains(k) && o.at(k).is_string() ? std::string(o.at(k).as_string()) : std::string();
    };
    ApiResourceInfo info{s("name"),
                         s("kind"),
                         o.contains("namespaced") && o.at("namespaced").is_bool() && o.at("namespaced").as_bool(),
                         {},
                         {}};
    if (info.name.empty() || info.name.find('/') != std::string::npos) continue;  // subresource
    for (const char* key : {"verbs", "shortNames"})
      if (const auto* arr = o.if_contains(key); arr && arr->is_array())
        for (const auto& v : arr->as_array())
          if (v.is_string())
            (std::string_view(key) == "verbs" ? info.verbs : info.short_names).emplace_back(v.as_string());
    out.push_back(std::move(info));
  }
  return out;
}

std::optional<ResourceRef> Client::find_resource(const std::string& group, const std::string& kind) const {
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (const auto& version : served_versions(group))
      for (const auto& r : resources(group, version))
        if (r.kind == kind) return ResourceRef{group, version, r.name, r.kind, r.namespaced};
    if (!refresh_discovery()) break;  // a miss on cached documents: look once more, live
  }
  return std::nullopt;
}

bool Client::refresh_discovery() const { return impl_->refresh_discovery(); }

// ---- objects -----------------------------------------------------------------------------------

boost::json::object Client::create(const ResourceRef& ref, const std::string& ns, const boost::json::object& object,
                                   const WriteOptions& options) const {
  // A dry run stores nothing, so sending it twice is harmless: it is retried like a GET.
  return impl_->call_object(
      impl_->create_call(ref, ns, object, options.dry_run, options.field_manager, options.report_warnings));
}

boost::json::object Client::create_idempotent(const ResourceRef& ref, const std::string& ns,
                                              const boost::json::object& object, const WriteOptions& options) const {
  const std::string& key = impl_->options.submission_id_annotation;
  const std::string name = meta_string(object, "name");
  if (name.empty())
    throw ValidationError("metadata.name", "",
                          "create_idempotent needs a fixed name (generateName cannot be recognised on retry)");
  json::object obj = object;
  json::value& meta = obj["metadata"];
  if (!meta.is_object()) meta = json::object();
  json::value& ann = meta.as_object()["annotations"];
  if (!ann.is_object()) ann = json::object();
  std::string id;
  if (auto* existing = ann.as_object().if_contains(key);
      existing && existing->is_string() && !existing->as_string().empty()) {
    id = std::string(existing->as_string());
  } else {
    id = new_submission_id();
    ann.as_object()[key] = id;
  }
  Query q;
  Impl::add_write(q, options.dry_run, options.field_manager);
  const std::string n = ref.namespaced ? impl_->ns_or_default(ns) : "";
  try {
    return impl_->call_object(
        {"POST", with_query(impl_->path(ref, ns), q), json::serialize(obj), "application/json", true, n});
  } catch (const ApiError& e) {
    if (e.code() != 409 || e.reason() != "AlreadyExists") throw;
    json::object stored = get(ref, ns, name);
    const auto& sm = metadata_of(stored);
    const json::value* stored_id = nullptr;
    if (const auto* a = sm.if_contains("annotations"); a && a->is_object()) stored_id = a->as_object().if_contains(key);
    if (stored_id && stored_id->is_string() && stored_id->as_string() == id) {
      impl_->log(LogLevel::debug,
                 fmt::format("{} \"{}\" was created by an earlier attempt of this submission", ref.kind, name));
      return stored;
    }
    throw ApiError(
        409, "AlreadyExists",
        fmt::format("{} \"{}\" already exists{} and was not created by this submission: the name is already taken; "
                    "choose another name or delete the existing {}",
                    ref.kind.empty() ? ref.resource : ref.kind, name, n.empty() ? "" : " in namespace \"" + n + "\"",
                    ref.kind.empty() ? "object" : ref.kind),
        e.causes());
  }
}

boost::json::object Client::get(const ResourceRef& ref, const std::string& ns, const std::string& name) const {
  if (name.empty()) throw ValidationError("name", "", "a name is required to get an object");
  return impl_->call_object(impl_->get_call(ref, ns, name));
}

std::vector<std::optional<json::object>> Client::get_each(const std::vector<ResourceRef>& refs, const std::string& ns,
                                                          const std::string& name, bool stop_at_found) const {
  if (name.empty()) throw ValidationError("name", "", "a name is required to get an object");
  std::vector<Read> reads;
  reads.reserve(refs.size());
  for (const auto& ref : refs) reads.push_back({ref, ns, name});
  std::vector<std::optional<json::object>> out;
  out.reserve(refs.size());
  for (auto& r : read_each(reads, stop_at_found)) out.push_back(std::move(r.object));
  return out;
}

std::vector<Client::ReadResult> Client::read_each(const std::vector<Read>& reads, bool stop_at_found) const {
  std::vector<kube::ClientCore::Call> calls;
  calls.reserve(reads.size());
  for (const auto& r : reads)
    calls.push_back(r.dry_run_create ? impl_->create_call(r.ref, r.ns, *r.dry_run_create, true, r.field_manager, false)
                    : r.name.empty() ? impl_->list_call(r.ref, r.ns, r.list)
                                     : impl_->get_call(r.ref, r.ns, r.name));
  std::vector<HttpResponse> answers = impl_->send_each(calls);
  std::vector<ReadResult> out(reads.size());
  bool found = false;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const Read& read = reads[i];
    // An answer other than 2xx (and 404 for an object) is handled as get()'s or list()'s first
    // attempt's would be (retried after its back-off or Retry-After, credentials refreshed, or
    // thrown); a request the transport brought no answer to is sent alone.
    HttpResponse* answered = i < answers.size() ? &answers[i] : nullptr;
    auto is_ok = [&] { return answered && answered->status >= 200 && answered->status < 300; };
    bool ok = is_ok();
    const std::string what = calls[i].method + " " + calls[i].target.substr(0, calls[i].target.find('?'));
    if (read.speculative && !ok) {
      // A refusal is not thrown: the caller asks again when it needs the answer (and words it).
      // An answer that asks the client to come back (429, 5xx) is honoured here, Retry-After
      // waited and the read retried as its caller's own would be, so that the caller's asking
      // again does not ignore it; what still fails is left to the caller as well.
      if (!answered || (answered->status != 429 && answered->status < 500)) continue;
      try {
        *answered = impl_->execute(calls[i], nullptr, answered);
      } catch (const CancelledError&) {
        throw;
      } catch (const Error&) {
        continue;
      }
      ok = is_ok();
    }
    if (read.dry_run_create) {
      out[i].object = parse_object(ok ? *answered : impl_->execute(calls[i], nullptr, answered), what);
      out[i].ok = true;
      continue;
    }
    if (read.name.empty()) {
      ListPage page = impl_->list_page(parse_object(ok ? *answered : impl_->execute(calls[i], nullptr, answered), what),
                                       read.ref, read.ns, read.list);
      out[i].items = std::move(page.items);
      if (!page.continue_token.empty()) {  // the rest of a paged list, page by page
        ListOptions rest = read.list;
        rest.continue_token = page.continue_token;
        for (auto& item : list_all(read.ref, read.ns, rest)) out[i].items.push_back(std::move(item));
      }
      out[i].ok = true;
      continue;
    }
    if (found) continue;
    if (answered && answered->status == 404) {
      (void)impl_->api_error(*answered, calls[i].ns);  // not thrown (a miss is the common answer here); a
      out[i].ok = true;                                // type no longer served still clears discovery
      continue;
    }
    try {
      out[i].object = parse_object(ok ? *answered : impl_->execute(calls[i], nullptr, answered), what);
      found = stop_at_found;
    } catch (const ApiError& e) {
      if (e.code() != 404) throw;
    }
    out[i].ok = true;
  }
  return out;
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

void Client::for_each_page(const ResourceRef& ref, const std::string& ns, ListOptions options,
                           const std::function<void(const RawListPage&)>& fn) const {
  if (options.limit <= 0) options.limit = 500;  // kubectl's --chunk-size default
  // The caller's cancellation reaches the prefetching thread too.
  const CancelToken* cancel = CancelScope::current();
  auto fetch = [this, &ref, &ns, cancel](ListOptions o) {
    std::optional<CancelScope> scope;
    if (cancel) scope.emplace(*cancel);
    return impl_->list_raw(ref, ns, o);
  };
  RawListPage page = impl_->list_raw(ref, ns, options);
  for (;;) {
    std::future<RawListPage> next;
    if (!page.continue_token.empty()) {
      options.continue_token = page.continue_token;
      next = std::async(std::launch::async, fetch, options);
    }
    fn(page);  // a throw here waits for the prefetch (the future's destructor) and passes on
    if (!next.valid()) return;
    page = next.get();
  }
}

void Client::list_stream(const ResourceRef& ref, const std::string& ns, const ListOptions& options,
                         const ChunkSink& sink) const {
  if (options.limit > 0 || !options.continue_token.empty())
    throw ValidationError(options.limit > 0 ? "limit" : "continue",
                          options.limit > 0 ? std::to_string(options.limit) : options.continue_token,
                          "a streamed list is one page: use for_each_page to list in pages");
  Impl::Call call = impl_->list_call(ref, ns, options);
  if (options.protobuf) call.accept = "application/vnd.kubernetes.protobuf,application/json";
  bool started = false;
  std::exception_ptr failure;  // what `sink` threw: kept out of the transport, thrown here
  const ChunkSink guarded = [&](std::string_view piece) {
    started = true;
    try {
      return sink(piece);
    } catch (...) {
      failure = std::current_exception();
      return false;
    }
  };
  call.sink = &guarded;
  call.sink_started = &started;
  impl_->execute(call);
  if (failure) std::rethrow_exception(failure);
  if (const CancelToken* cancel = CancelScope::current(); cancel && cancel->cancelled())
    throw CancelledError(fmt::format("GET {}: cancelled", call.target.substr(0, call.target.find('?'))));
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
  return impl_->call_object({"PUT", with_query(impl_->path(ref, ns, name), q), json::serialize(object),
                             "application/json", replay_safe, n, options.report_warnings});
}

boost::json::object Client::patch(const ResourceRef& ref, const std::string& ns, const std::string& name,
                                  PatchType type, const boost::json::value& patch, const PatchOptions& options) const {
  if (name.empty()) throw ValidationError("name", "", "a name is required to patch an object");
  const char* content_type = "application/merge-patch+json";
  switch (type) {
    case PatchType::merge:
      break;
    case PatchType::strategic:
      content_type = "application/strategic-merge-patch+json";
      break;
    case PatchType::json:
      content_type = "application/json-patch+json";
      if (!patch.is_array())
        throw ValidationError("patch", json::serialize(patch).substr(0, 80), "a JSON patch is an array of operations");
      break;
    case PatchType::apply:
      content_type = "application/apply-patch+yaml";  // JSON is YAML
      if (options.field_manager.empty())
        throw ValidationError("fieldManager", "", "server-side apply needs a field manager (e.g. \"gpupool\")");
      break;
  }
  if (type != PatchType::json && !patch.is_object())
    throw ValidationError("patch", json::serialize(patch).substr(0, 80), "this patch type takes a JSON object");
  if (options.force && type != PatchType::apply)
    throw ValidationError("force", "true", "force applies to server-side apply only");
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
    case PropagationPolicy::server_default:
      break;
    case PropagationPolicy::background:
      body["propagationPolicy"] = "Background";
      break;
    case PropagationPolicy::foreground:
      body["propagationPolicy"] = "Foreground";
      break;
    case PropagationPolicy::orphan:
      body["propagationPolicy"] = "Orphan";
      break;
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
  Impl::Call call{"DELETE", with_query(impl_->path(ref, ns, name), q), json::serialize(body), "application/json", true,
                  n};
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

std::string Client::watch(const ResourceRef& ref, const std::string& ns, const WatchOptions& o,
                          const WatchHandler& handler, const CancelToken& cancel) const {
  return kube::Reflector(*impl_, ref, ns, o, handler, cancel).list_and_watch();
}

int Client::exec(const std::string& ns, const std::string& pod, const ExecOptions& options, const ExecIO& io,
                 const CancelToken& cancel) const {
  if (pod.empty()) throw ValidationError("pod", "", "a pod name is required for exec");
  const Impl& im = *impl_;
  const kube::StreamContext ctx{im.config, im.credentials, im.options.transport.user_agent,
                                im.options.transport.connect_timeout};
  return kube::exec_in_pod(ctx, im.path(ResourceRef{"", "v1", "pods", "Pod", true}, ns, pod), options, io, cancel);
}

std::unique_ptr<PortForward> Client::port_forward(const std::string& ns, const std::string& pod,
                                                  std::vector<PortForward::Port> ports,
                                                  PortForwardErrorHandler on_error) const {
  if (pod.empty()) throw ValidationError("pod", "", "a pod name is required for port-forward");
  const Impl& im = *impl_;
  const kube::StreamContext ctx{im.config, im.credentials, im.options.transport.user_agent,
                                im.options.transport.connect_timeout};
  return kube::forward_ports(ctx, im.path(ResourceRef{"", "v1", "pods", "Pod", true}, ns, pod), std::move(ports),
                             std::move(on_error));
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
  LineSplitter lines(
      [&](std::string_view line) {
        if (!handler(line)) stopped = true;
        return !stopped;
      },
      im.options.transport.max_response_bytes);
  bool received = false, refreshed = false;
  for (int retries = 0;; ++retries) {
    RequestCredentials creds = im.credentials.current();
    HttpResponse resp;
    try {
      resp = im.transport->stream(
          req, creds,
          [&](std::string_view chunk) {
            received = true;
            return lines.feed(chunk);
          },
          cancel);
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
    auto d =
        decide_retry(im.options.retry, retries, true, {resp.status, kube::retry_after_seconds(resp)}, im.random01());
    if (!d.retry) throw im.api_error(resp, im.ns_or_default(ns));
    im.pause(d.delay, &cancel);
  }
  if (!stopped) lines.finish();
}

}  // namespace gpupool
