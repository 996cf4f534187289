// kube/reflector.cpp — see reflector.hpp.
#include "kube/reflector.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "gpupool/error.hpp"
#include "kube/client_core.hpp"
#include "kube/status.hpp"

namespace gpupool::kube {

namespace {

std::string key_of(const json::object& obj) { return meta_string(obj, "namespace") + "/" + meta_string(obj, "name"); }

}  // namespace

Reflector::Reflector(const ClientCore& client, const ResourceRef& ref, const std::string& ns,
                     const WatchOptions& options, const WatchHandler& handler, const CancelToken& cancel)
    : client_(client),
      ref_(ref),
      ns_(ns),
      options_(options),
      handler_(handler),
      cancel_(cancel),
      rv_(options.resource_version) {}

bool Reflector::deliver(const WatchEvent& ev) {
  if (ev.type == "DELETED") {
    known_.erase(key_of(ev.object));
  } else {
    known_[key_of(ev.object)] = ev.object;
  }
  if (!handler_(ev)) stop_ = true;
  return !stop_;
}

void Reflector::relist() {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.all_namespaces = options_.all_namespaces;
  lo.limit = 500;
  std::map<std::string, json::object> seen;
  std::string list_rv;
  for (;;) {
    ListPage page = client_.list(ref_, ns_, lo);
    list_rv = page.resource_version;
    for (auto& item : page.items)
      if (item.is_object()) seen[key_of(item.as_object())] = std::move(item.as_object());
    if (page.continue_token.empty()) break;
    lo.continue_token = page.continue_token;
  }
  std::vector<WatchEvent> events;
  for (const auto& [k, obj] : known_)
    if (!seen.count(k)) events.push_back({"DELETED", obj});
  for (auto& [k, obj] : seen) {
    auto it = known_.find(k);
    if (it == known_.end()) {
      events.push_back({"ADDED", obj});
    } else if (meta_string(it->second, "resourceVersion") != meta_string(obj, "resourceVersion")) {
      events.push_back({"MODIFIED", obj});
    }
  }
  for (auto& ev : events)
    if (!deliver(std::move(ev))) break;
  rv_ = list_rv;
}

bool Reflector::relist_unless_cancelled() {
  try {
    relist();
    return true;
  } catch (const CancelledError&) {
    if (!cancel_.cancelled()) throw;
    return false;
  }
}

std::string Reflector::list_and_watch() {
  // The loop reads the watch's parameters and state under short names.
  const ClientCore& im = client_;
  const ResourceRef& ref = ref_;
  const std::string& ns = ns_;
  const WatchOptions& o = options_;
  const WatchHandler& handler = handler_;
  const CancelToken& cancel = cancel_;
  std::string& rv = rv_;
  bool& stop = stop_;
  int failures = 0, empty_closes = 0;
  bool refreshed = false;
  // A re-list is an ordinary request: let `cancel` end it (and its back-off) too.
  CancelScope scope(cancel);
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
    LineSplitter lines(
        [&](std::string_view line) {
          if (line.empty()) return true;
          json::error_code ec;
          json::value v = json::parse(line, ec, {}, deep_json());
          if (ec || !v.is_object()) {
            stream_error =
                ApiError(500, "InternalError",
                         fmt::format("the watch stream sent a line that is not a JSON event ({} bytes)", line.size()));
            return false;
          }
          auto& ev = v.as_object();
          std::string type =
              ev.contains("type") && ev.at("type").is_string() ? std::string(ev.at("type").as_string()) : "";
          json::object obj = ev.contains("object") && ev.at("object").is_object()
                                 ? std::move(ev.at("object").as_object())
                                 : json::object();
          if (type == "ERROR") {
            ApiError e = kube::decode_error(
                obj.contains("code") && obj.at("code").is_int64() ? static_cast<int>(obj.at("code").as_int64()) : 500,
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
          if (type == "BOOKMARK")
            return o.deliver_bookmarks ? (handler(WatchEvent{type, std::move(obj)}) || (stop = true, false)) : true;
          return deliver(WatchEvent{type, std::move(obj)});
        },
        im.options.transport.max_response_bytes);
    HttpResponse resp;
    if (empty_closes < 0) empty_closes = 0;
    const int empty_before = empty_closes;
    try {
      RequestCredentials creds = im.credentials.current();
      resp = im.transport->stream(
          req, creds, [&](std::string_view chunk) { return lines.feed(chunk) && !stop; }, cancel);
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
      im.log(LogLevel::debug,
             fmt::format("watch {}: {}; resuming from {} in {} ms", ref.resource, e.what(), rv, d.delay.count()));
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
      auto d =
          decide_retry(im.options.retry, failures, true, {resp.status, kube::retry_after_seconds(resp)}, im.random01());
      if (!d.retry) throw e;
      im.pause(d.delay, &cancel);
      ++failures;
      continue;
    }
    if (stream_error) {
      auto d = decide_retry(im.options.retry, failures, true,
                            {stream_error->code(), stream_error->retry_after_seconds()}, im.random01());
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
  return rv;
}

}  // namespace gpupool::kube
