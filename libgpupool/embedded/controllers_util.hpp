// embedded/controllers_util.hpp — small JSON helpers shared by the scheduler, the controllers and
// the simulated kubelet (private to the embedded layer).
#pragma once

#include <limits>

#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "common/json_path.hpp"

namespace gpupool::embedded {
class Store;
}

namespace gpupool::embedded::util {

namespace json = boost::json;

/// The object at a path of keys, or nullptr when a step is missing or not an object.
using jpath::object_at;

/// The array at a path, or nullptr.
inline const json::array* array_at(const json::object& o, std::initializer_list<std::string_view> path,
                                   std::string_view key) {
  const json::object* parent = object_at(o, path);
  if (!parent) return nullptr;
  const json::value* v = parent->if_contains(key);
  return v && v->is_array() ? &v->as_array() : nullptr;
}

/// A string member ("" when absent or not a string).
inline std::string string_of(const json::object* o, std::string_view key) {
  if (!o) return {};
  const json::value* v = o->if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

/// An integer member (accepts int64/uint64/double and integer strings), or `fallback`.
inline std::int64_t int_of(const json::object* o, std::string_view key, std::int64_t fallback) {
  if (!o) return fallback;
  const json::value* v = o->if_contains(key);
  if (!v) return fallback;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  if (v->is_double()) {
    // Out of range (or NaN) would be undefined behaviour to convert: saturate instead.
    const double d = v->as_double();
    if (!(d == d)) return fallback;
    if (d >= 9.2e18) return std::numeric_limits<std::int64_t>::max();
    if (d <= -9.2e18) return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(d);
  }
  return fallback;
}

/// The object member `key` of `o`, created (or replaced when not an object) as needed.
inline json::object& ensure_object(json::object& o, std::string_view key) {
  json::value& v = o[key];
  if (!v.is_object()) v = json::object{};
  return v.as_object();
}

inline std::string name_of(const json::object& o) { return string_of(object_at(o, {"metadata"}), "name"); }
inline std::string namespace_of(const json::object& o) { return string_of(object_at(o, {"metadata"}), "namespace"); }
inline std::string uid_of(const json::object& o) { return string_of(object_at(o, {"metadata"}), "uid"); }

/// metadata.ownerReferences entry of `owner` marking it the controller (ownerReference with
/// controller: true and blockOwnerDeletion: true, as every built-in controller and the Kubeflow
/// operators set it).
inline json::object controller_reference(const json::object& owner) {
  return json::object{{"apiVersion", owner.at("apiVersion")},
                      {"kind", owner.at("kind")},
                      {"name", name_of(owner)},
                      {"uid", uid_of(owner)},
                      {"controller", true},
                      {"blockOwnerDeletion", true}};
}

/// The uid of the controller ownerReference ("" when none).
inline std::string controller_uid(const json::object& o) {
  const json::object* md = object_at(o, {"metadata"});
  if (!md) return {};
  const json::value* refs = md->if_contains("ownerReferences");
  if (!refs || !refs->is_array()) return {};
  for (const auto& r : refs->as_array()) {
    if (!r.is_object()) continue;
    const json::value* c = r.as_object().if_contains("controller");
    if (c && c->is_bool() && c->as_bool()) return string_of(&r.as_object(), "uid");
  }
  return {};
}

/// The annotation `key` ("" when absent).
inline std::optional<std::string> annotation(const json::object& o, std::string_view key) {
  const json::object* a = object_at(o, {"metadata", "annotations"});
  if (!a) return std::nullopt;
  const json::value* v = a->if_contains(key);
  if (!v || !v->is_string()) return std::nullopt;
  return std::string(v->as_string());
}

/// Deep equality with boost::json's operator== semantics (object members in any order, int64 and
/// uint64 equal when the numbers are), without its cost: Boost 1.81's object::equal iterates with
/// `for (auto e : *this)` (boost/json/impl/object.ipp), deep-copying every member at every level,
/// which made comparing two Deployments cost more than copying them several times. Use this for
/// every object or array comparison on the server's write path.
bool json_equal(const json::value& a, const json::value& b) noexcept;
bool json_equal(const json::object& a, const json::object& b) noexcept;
bool json_equal(const json::array& a, const json::array& b) noexcept;

/// Sets (or replaces) the condition of `type` in `conditions`, keeping lastTransitionTime when the
/// status does not change (as every controller's SetCondition helper does). Returns true on change.
bool set_condition(json::array& conditions, const json::object& condition);

/// metav1.LabelSelectorAsSelector(sel).Matches(labels): matchLabels and matchExpressions (In,
/// NotIn, Exists, DoesNotExist); `labels` may be null (no labels).
bool selector_matches(const json::object& sel, const json::object* labels);

/// The condition of `type`, or nullptr.
const json::object* find_condition(const json::array* conditions, std::string_view type);

/// Records a core/v1 Event about `involved` (an object with apiVersion, kind and metadata) as
/// client-go's event recorder writes it: name "<object>.<hex time>", count 1, first/lastTimestamp
/// `now`, source.component and reportingComponent `component`, reportingInstance
/// `reporting_instance` ("" when not given, as kube-controller-manager's controllers leave it).
/// Returns the event's name.
std::string record_event(Store& store, std::chrono::system_clock::time_point now, const json::object& involved,
                         std::string_view type, std::string_view reason, const std::string& message,
                         const std::string& component, std::string_view action = {},
                         std::optional<std::string_view> reporting_instance = std::nullopt);

/// Records an Event as the events.k8s.io recorder (client-go tools/events, which kube-scheduler
/// uses) writes it, seen through core/v1: eventTime `now` in microseconds, first/lastTimestamp null,
/// no count, source {}, reportingComponent `controller`, reportingInstance "<controller>-<host
/// name>", and `action`. Returns the event's name.
std::string record_series_event(Store& store, std::chrono::system_clock::time_point now, const json::object& involved,
                                std::string_view type, std::string_view reason, std::string_view action,
                                const std::string& message, const std::string& controller);

/// This machine's host name (os.Hostname), as recorders put it in reportingInstance.
const std::string& host_name();

}  // namespace gpupool::embedded::util
