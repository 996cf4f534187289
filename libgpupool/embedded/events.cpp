#include "embedded/events.hpp"

#include <array>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "embedded/store.hpp"
#include "embedded/typecheck.hpp"
#include "embedded/validation.hpp"
#include "gpupool/names.hpp"

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
    // events/v1's omitempty strings and count (staging/src/k8s.io/api/events/v1/types.go), which
    // core/v1 writes out empty (its reportingComponent and reportingInstance have no omitempty).
    if (to_v1 && ((v.is_string() && v.get_string().empty() &&
                   (key == "reportingController" || key == "reportingInstance" || key == "action" || key == "reason" ||
                    key == "note" || key == "type")) ||
                  (key == "deprecatedCount" && v.is_int64() && v.get_int64() == 0)))
      continue;
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

// pkg/apis/core/validation/events.go legacyValidateEvent, which creates and updates of both
// versions pass: with an eventTime, the regarding object's namespace, the reporting fields and
// their lengths; without, the namespaces must agree. The reporting field is named as the request's
// version names it (`strict`: events.k8s.io/v1).
void legacy_event_causes(const json::object& v1, std::string_view ns, bool strict, std::vector<StatusCause>& causes) {
  auto text = [&](std::string_view key) {
    const auto* v = v1.if_contains(key);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
  };
  std::string regarding_ns;
  if (const auto* r = v1.if_contains("regarding"); r && r->is_object())
    if (const auto* n = r->as_object().if_contains("namespace"); n && n->is_string()) regarding_ns = n->as_string();
  auto mismatch = [&] {
    causes.push_back({"FieldValueInvalid",
                      "Invalid value: " + go_quote(regarding_ns) + ": does not match event.namespace",
                      "involvedObject.namespace"});
  };
  auto at_most = [&](std::string_view key, std::string_view field, std::size_t limit) {
    if (text(key).size() > limit)
      causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: \"\": can have at most {} characters", limit),
                        std::string(field)});
  };
  if (!set(v1, "eventTime")) {
    if (regarding_ns.empty() ? (!ns.empty() && ns != "default") : regarding_ns != ns) mismatch();
  } else {
    if (regarding_ns.empty() && ns != "default" && ns != "kube-system") mismatch();
    // The field is named as the request's version names it (core/v1: reportingComponent).
    const std::string controller = text("reportingController");
    const std::string controller_field = strict ? "reportingController" : "reportingComponent";
    if (controller.empty()) causes.push_back({"FieldValueRequired", "Required value", controller_field});
    for (const auto& e : qualified_name_errors(controller))
      causes.push_back(
          {"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(controller), e), controller_field});
    if (text("reportingInstance").empty())
      causes.push_back({"FieldValueRequired", "Required value", "reportingInstance"});
    at_most("reportingInstance", "reportingInstance", 128);  // ReportingInstanceLengthLimit
    if (text("action").empty()) causes.push_back({"FieldValueRequired", "Required value", "action"});
    at_most("action", "action", 128);  // ActionLengthLimit
    if (text("reason").empty()) causes.push_back({"FieldValueRequired", "Required value", "reason"});
    at_most("reason", "reason", 128);  // ReasonLengthLimit
    at_most("note", "message", 1024);  // NoteLengthLimit
  }
}

void refuse_if_any(const ResourceType& t, const json::object& v1, std::vector<StatusCause> causes) {
  if (causes.empty()) return;
  std::string name;
  if (const auto* md = v1.if_contains("metadata"); md && md->is_object())
    if (const auto* n = md->as_object().if_contains("name"); n && n->is_string()) name = n->as_string();
  throw StatusError::invalid(t, name, std::move(causes));
}

}  // namespace

json::object core_event_to_v1(const json::object& core) {
  json::object out = convert(core, true);
  if (!out.contains("eventTime")) out["eventTime"] = nullptr;  // a required field, null when unset
  return out;
}

json::object v1_event_to_core(const json::object& v1) { return convert(v1, false); }

void validate_event_create(const ResourceType& t, const json::object& v1, std::string_view ns, bool strict) {
  // ValidateEventCreate: the legacy rules, then for events.k8s.io/v1 the strict ones.
  std::vector<StatusCause> causes;
  legacy_event_causes(v1, ns, strict, causes);
  auto text = [&](std::string_view key) {
    const auto* v = v1.if_contains(key);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
  };
  // The strict rules of events.k8s.io/v1 (a core/v1 create has the legacy ones alone):
  // ValidateObjectMeta (subdomain names), then the series and the fields.
  if (strict) {
    static const json::object kNone;
    const json::value* md = v1.if_contains("metadata");
    event_v1_meta_causes(md && md->is_object() ? md->as_object() : kNone, causes);
    if (const auto* series = v1.if_contains("series"); series && series->is_object()) {
      const auto& so = series->as_object();
      const auto* count = so.if_contains("count");
      if (!count || !count->is_int64() || count->as_int64() < 2)
        causes.push_back({"FieldValueInvalid", "Invalid value: \"\": should be at least 2", "series.count"});
      if (!set(so, "lastObservedTime"))
        causes.push_back({"FieldValueRequired", "Required value", "series.lastObservedTime"});
    }
    if (!set(v1, "eventTime")) causes.push_back({"FieldValueRequired", "Required value", "eventTime"});
    if (const std::string type = text("type"); type != "Normal" && type != "Warning")
      causes.push_back({"FieldValueInvalid", "Invalid value: \"\": has invalid value: " + type, "type"});
    // firstTimestamp, lastTimestamp, count, source: named as the core fields they are stored in.
    for (auto [deprecated, field] : {std::pair{"deprecatedFirstTimestamp", "firstTimestamp"},
                                     std::pair{"deprecatedLastTimestamp", "lastTimestamp"},
                                     std::pair{"deprecatedCount", "count"}, std::pair{"deprecatedSource", "source"}})
      if (set(v1, deprecated) && !(v1.at(deprecated).is_object() && v1.at(deprecated).as_object().empty()))
        causes.push_back({"FieldValueInvalid", "Invalid value: \"\": needs to be unset", field});
  }
  refuse_if_any(t, v1, std::move(causes));
}

std::vector<StatusCause> event_update_causes(const json::object& v1, std::string_view ns, bool strict) {
  // ValidateEventUpdate's legacy part (the strict one of events.k8s.io/v1, its immutable fields, is
  // not reproduced: FIDELITY.md difference 36).
  std::vector<StatusCause> causes;
  legacy_event_causes(v1, ns, strict, causes);
  return causes;
}

}  // namespace gpupool::embedded
