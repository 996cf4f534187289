#include "embedded/events.hpp"

#include <array>
#include <string_view>
#include <utility>

#include "embedded/store.hpp"

namespace gpupool::embedded {

namespace {

// (core/v1 name, events.k8s.io/v1 name) of the fields that differ.
constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kRenamed{{
    {"involvedObject", "regarding"},
    {"message", "note"},
    {"source", "deprecatedSource"},
    {"firstTimestamp", "deprecatedFirstTimestamp"},
    {"lastTimestamp", "deprecatedLastTimestamp"},
    {"count", "deprecatedCount"},
    {"reportingComponent", "reportingController"},
}};

json::object convert(const json::object& in, bool to_v1) {
  json::object out;
  for (const auto& [k, v] : in) {
    std::string_view key = k;
    for (const auto& [core, v1] : kRenamed)
      if (key == (to_v1 ? core : v1)) key = to_v1 ? v1 : core;
    out[key] = v;
  }
  out["apiVersion"] = to_v1 ? "events.k8s.io/v1" : "v1";
  out["kind"] = "Event";
  return out;
}

bool set(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && !v->is_null() && !(v->is_string() && v->as_string().empty()) && !(v->is_int64() && v->as_int64() == 0);
}

}  // namespace

json::object core_event_to_v1(const json::object& core) {
  json::object out = convert(core, true);
  if (!out.contains("eventTime")) out["eventTime"] = nullptr;  // a required field, null when unset
  return out;
}

json::object v1_event_to_core(const json::object& v1) { return convert(v1, false); }

void validate_v1_event_create(const ResourceType& t, const json::object& v1) {
  // pkg/apis/core/validation/events.go ValidateEventCreate (strict for events.k8s.io/v1).
  std::vector<StatusCause> causes;
  if (!set(v1, "eventTime")) causes.push_back({"FieldValueRequired", "Required value", "eventTime"});
  const auto* type = v1.if_contains("type");
  if (!type || !type->is_string() || (type->as_string() != "Normal" && type->as_string() != "Warning")) {
    std::string value = type && type->is_string() ? std::string(type->as_string()) : std::string();
    causes.push_back({"FieldValueInvalid", "Invalid value: \"\": has invalid value: " + value, "type"});
  }
  for (const char* deprecated : {"deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount", "deprecatedSource"})
    if (set(v1, deprecated) && !(v1.at(deprecated).is_object() && v1.at(deprecated).as_object().empty()))
      causes.push_back({"FieldValueInvalid", "Invalid value: \"\": needs to be unset", deprecated});
  for (const char* required : {"reportingController", "reportingInstance", "action", "reason"})
    if (!set(v1, required)) causes.push_back({"FieldValueRequired", "Required value", required});
  if (!causes.empty()) {
    std::string name;
    if (const auto* md = v1.if_contains("metadata"); md && md->is_object())
      if (const auto* n = md->as_object().if_contains("name"); n && n->is_string()) name = n->as_string();
    throw StatusError::invalid(t, name, std::move(causes));
  }
}

}  // namespace gpupool::embedded
