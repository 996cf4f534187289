// Api::serve_watch: GET ?watch (apiserver endpoints/handlers/watch.go, the cacher's initial
// events and bookmarks).
#include <fmt/format.h>

#include "embedded/api_handlers.hpp"

namespace gpupool::embedded {

using namespace api;

Response Api::serve_watch(const Call& c) const {
  const auto& [r, tg, served, t, event_view, now, verb, wo] = c;
  std::uint64_t rv = 0;
  if (const auto v = q(r, "resourceVersion"); !v.empty()) {
    try {
      rv = std::stoull(v);
    } catch (...) {
      throw StatusError::bad_request(fmt::format("invalid resource version: {}", v));
    }
  }
  auto labels = LabelSelector::parse(q(r, "labelSelector"));
  auto fields = field_selector(served, q(r, "fieldSelector"));
  if (!tg.name.empty()) {
    // GET .../pods/x?watch=1 (legacy single-object watch) = fieldSelector metadata.name=x.
    fields = FieldSelector::parse("metadata.name=" + tg.name);
  }
  std::int64_t timeout_s = 1800;
  if (const auto ts = q_int64(r, "timeoutSeconds")) timeout_s = *ts;
  const bool bookmarks = q_true(r, "allowWatchBookmarks");
  // Watch lists (WatchList, beta and on in v1.32): validateWatchOptions
  // (apimachinery/pkg/apis/meta/internalversion/validation), then sendInitialEvents=true sends
  // the current objects as ADDED events and a BOOKMARK annotated k8s.io/initial-events-end.
  const std::string send_initial = q(r, "sendInitialEvents");
  validate_list_options(r, true);
  const bool initial_events = send_initial == "true";
  // sendInitialEvents=false without a version: from now on, no synthetic ADDED events.
  if (send_initial == "false" && rv == 0) rv = store_.revision();
  const bool table = wants_table(r);
  const IncludeObject inc = include_object(r);
  Store* store = &store_;
  const ResourceType* tp = &served;
  std::shared_ptr<WatchQueue> queue;
  std::optional<StatusError> gone;
  std::uint64_t initial_rv = 0;  // the version the initial events show (sendInitialEvents)
  try {
    queue = store_.open_watch(t, tg.ns, initial_events ? 0 : rv, labels, fields);
    if (initial_events) initial_rv = store_.revision();
  } catch (const StatusError& e) {
    if (e.code() != 410) throw;
    gone = e;
  }
  Response resp;
  resp.content_type = table ? "application/json;as=Table;v=v1;g=meta.k8s.io" : "application/json";
  resp.stream = [store, tp, queue, gone, timeout_s, bookmarks, table, inc, event_view = c.event_view, initial_events,
                 initial_rv](const ChunkWriter& write, const std::atomic<bool>& stopping) {
    if (gone) {
      // The watch starts, then reports the expired version as an ERROR event (what client-go's
      // reflector expects in order to re-list).
      write(json::serialize(json::object{{"type", "ERROR"}, {"object", gone->to_status()}}) + "\n");
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    // Bookmarks follow the cluster's clock (a manual clock in tests): the watch cache sends one
    // about every minute to watchers that allow them (apiserver/pkg/storage/cacher:
    // bookmarkFrequency = time.Minute), carrying only kind, apiVersion and resourceVersion.
    constexpr auto kBookmarkEvery = std::chrono::minutes(1);
    auto last_bookmark = store->clock().now();
    std::uint64_t last_rv = 0;
    auto send = [&](const std::vector<WatchEvent>& events) {
      for (const auto& ev : events) {
        last_rv = std::max(last_rv, ev.resource_version);
        if (!table && !event_view) {
          // The stored object serialized in place (no copy of it), in the event's envelope:
          // {"type":...,"object":...}, the bytes serializing the pair as an object gives.
          std::string line = R"({"type":")";
          line += to_string(ev.type);
          line += R"(","object":)";
          line += json::serialize(*ev.object);
          line += "}\n";
          if (!write(line)) return false;
          continue;
        }
        json::value obj;
        if (table)
          obj = to_table(*ev.type_info, {ev.object}, store->clock().now(), inc);
        else
          obj = core_event_to_v1(*ev.object);
        if (!write(json::serialize(json::object{{"type", to_string(ev.type)}, {"object", std::move(obj)}}) + "\n"))
          return false;
      }
      return true;
    };
    // A bookmark carries the type, the version and nothing else of an empty object (its zero
    // creationTimestamp is encoded as null, as metav1.Time does).
    auto bookmark = [&](std::uint64_t version, bool initial_end) {
      json::object md{{"resourceVersion", std::to_string(version)}, {"creationTimestamp", nullptr}};
      if (initial_end) md["annotations"] = json::object{{"k8s.io/initial-events-end", "true"}};
      json::object bm{{"kind", tp->kind}, {"apiVersion", tp->api_version()}, {"metadata", std::move(md)}};
      return write(json::serialize(json::object{{"type", "BOOKMARK"}, {"object", std::move(bm)}}) + "\n");
    };
    if (initial_events) {
      // open_watch queued the current objects (and any change committed since) before it
      // returned: all of it goes out before the bookmark that ends the initial events.
      // The bookmark that ends them goes only to watchers that allow bookmarks (cacher.go
      // setInitialEventsEndBookmarkIfRequested); the others get the events alone.
      if (!send(queue->next(std::chrono::milliseconds(0))) ||
          (bookmarks && !bookmark(std::max(last_rv, initial_rv), true))) {
        store->close_watch(queue);
        return;
      }
    }
    while (!stopping && std::chrono::steady_clock::now() < deadline) {
      auto events = queue->next(std::chrono::milliseconds(200));
      if (!send(events)) break;
      if (queue->closed()) break;
      if (events.empty() && !write("")) break;  // the client hung up
      if (bookmarks && !stopping && store->clock().now() - last_bookmark >= kBookmarkEvery) {
        last_bookmark = store->clock().now();
        // Every event up to the store's revision is already queued for this watcher (events are
        // queued under the store's lock as they commit): send those first, so that the
        // bookmark never claims a version whose events the client has not seen.
        const auto rv_now = store->revision();
        if (!send(queue->next(std::chrono::milliseconds(0)))) break;
        if (!bookmark(std::max(last_rv, rv_now), false)) break;
      }
    }
    store->close_watch(queue);
  };
  if (gone)
    resp.stream = [gone](const ChunkWriter& write, const std::atomic<bool>&) {
      write(json::serialize(json::object{{"type", "ERROR"}, {"object", gone->to_status()}}) + "\n");
    };
  return resp;
}

}  // namespace gpupool::embedded
