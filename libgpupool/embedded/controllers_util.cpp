#include "embedded/controllers_util.hpp"

#include <atomic>

#include <unistd.h>

#include <fmt/format.h>

#include "embedded/clock.hpp"
#include "embedded/store.hpp"

namespace gpupool::embedded::util {

bool json_equal(const json::object& a, const json::object& b) noexcept {
  if (a.size() != b.size()) return false;
  for (const auto& kv : a) {  // keys are unique in a boost::json::object
    const json::value* v = b.if_contains(kv.key());
    if (!v || !json_equal(kv.value(), *v)) return false;
  }
  return true;
}

bool json_equal(const json::array& a, const json::array& b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!json_equal(a[i], b[i])) return false;
  return true;
}

bool json_equal(const json::value& a, const json::value& b) noexcept {
  if (a.is_object()) return b.is_object() && json_equal(a.get_object(), b.get_object());
  if (a.is_array()) return b.is_array() && json_equal(a.get_array(), b.get_array());
  return a == b;  // scalars and strings: boost compares them without copying
}

const json::object* find_condition(const json::array* conditions, std::string_view type) {
  if (!conditions) return nullptr;
  for (const auto& c : *conditions)
    if (c.is_object() && string_of(&c.as_object(), "type") == type) return &c.as_object();
  return nullptr;
}

bool set_condition(json::array& conditions, const json::object& condition) {
  const std::string type = string_of(&condition, "type");
  for (auto& c : conditions) {
    if (!c.is_object() || string_of(&c.as_object(), "type") != type) continue;
    json::object& old = c.as_object();
    json::object next = condition;
    if (string_of(&old, "status") == string_of(&condition, "status") && old.contains("lastTransitionTime"))
      next["lastTransitionTime"] = old["lastTransitionTime"];
    // lastUpdateTime/lastProbeTime/lastHeartbeatTime move with every write that changes something.
    bool same = true;
    for (const auto& [k, v] : next)
      if (k != "lastUpdateTime" && k != "lastProbeTime" && k != "lastHeartbeatTime" &&
          (!old.contains(k) || !json_equal(old.at(k), v)))
        same = false;
    if (same) return false;
    old = std::move(next);
    return true;
  }
  conditions.push_back(condition);
  return true;
}

namespace {
// An ObjectReference to `involved` (kind, name, namespace, uid, apiVersion, resourceVersion).
json::object object_reference(const json::object& involved) {
  const json::object* md = object_at(involved, {"metadata"});
  const std::string ns = string_of(md, "namespace");
  json::object ref{{"kind", involved.at("kind")}, {"name", string_of(md, "name")}, {"uid", string_of(md, "uid")},
                   {"apiVersion", involved.at("apiVersion")}, {"resourceVersion", string_of(md, "resourceVersion")}};
  if (!ns.empty()) ref["namespace"] = ns;
  return ref;
}
}  // namespace

std::string record_event(Store& store, std::chrono::system_clock::time_point now, const json::object& involved,
                         std::string_view type, std::string_view reason, const std::string& message,
                         const std::string& component, std::string_view action,
                         std::optional<std::string_view> reporting_instance) {
  static std::atomic<std::uint64_t> counter{0};
  const json::object* md = object_at(involved, {"metadata"});
  const std::string ns = string_of(md, "namespace"), name = string_of(md, "name");
  const auto t = std::chrono::time_point_cast<Clock::duration>(now);
  const std::string ev_name =
      fmt::format("{}.{:x}", name, static_cast<std::uint64_t>(t.time_since_epoch().count()) + counter++);
  json::object ref = object_reference(involved);
  json::object ev{{"apiVersion", "v1"},
                  {"kind", "Event"},
                  {"metadata", json::object{{"name", ev_name}, {"namespace", ns.empty() ? "default" : ns}}},
                  {"involvedObject", std::move(ref)},
                  {"reason", reason},
                  {"message", message},
                  {"source", json::object{{"component", component}}},
                  {"firstTimestamp", to_rfc3339(t)},
                  {"lastTimestamp", to_rfc3339(t)},
                  {"count", 1},
                  {"type", type},
                  {"eventTime", nullptr},
                  {"reportingComponent", component},
                  {"reportingInstance", reporting_instance ? std::string(*reporting_instance) : std::string()}};
  if (!action.empty()) ev["action"] = action;
  store.create(store.type("", "events"), ns.empty() ? "default" : ns, std::move(ev));
  return ev_name;
}

const std::string& host_name() {
  static const std::string name = [] {
    char buf[256] = {};
    return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("localhost");
  }();
  return name;
}

std::string record_series_event(Store& store, std::chrono::system_clock::time_point now, const json::object& involved,
                                std::string_view type, std::string_view reason, std::string_view action,
                                const std::string& message, const std::string& controller) {
  // tools/events recorder.go generateEvent: name "<regarding>.<UnixNano hex>", EventTime now,
  // ReportingInstance reportingController + "-" + hostname; the core/v1 view of an events.k8s.io
  // Event leaves first/lastTimestamp zero (null), source empty and count out (0, omitempty).
  static std::atomic<std::uint64_t> counter{0};
  const json::object* md = object_at(involved, {"metadata"});
  const std::string ns = string_of(md, "namespace"), name = string_of(md, "name");
  const auto t = std::chrono::time_point_cast<Clock::duration>(now);
  const std::string ev_name =
      fmt::format("{}.{:x}", name, static_cast<std::uint64_t>(t.time_since_epoch().count()) + counter++);
  json::object ev{{"apiVersion", "v1"},
                  {"kind", "Event"},
                  {"metadata", json::object{{"name", ev_name}, {"namespace", ns.empty() ? "default" : ns}}},
                  {"involvedObject", object_reference(involved)},
                  {"reason", reason},
                  {"message", message},
                  {"source", json::object{}},
                  {"firstTimestamp", nullptr},
                  {"lastTimestamp", nullptr},
                  {"type", type},
                  {"eventTime", to_rfc3339_micro(t)},
                  {"action", action},
                  {"reportingComponent", controller},
                  {"reportingInstance", controller + "-" + host_name()}};
  store.create(store.type("", "events"), ns.empty() ? "default" : ns, std::move(ev));
  return ev_name;
}

}  // namespace gpupool::embedded::util
