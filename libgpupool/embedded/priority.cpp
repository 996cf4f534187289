// PriorityClass (scheduling.k8s.io/v1): defaulting and validation of the objects
// (pkg/apis/scheduling/v1/defaults.go, pkg/apis/scheduling/validation/validation.go), the
// built-in system classes (pkg/apis/scheduling/v1/helpers.go SystemPriorityClasses), and the
// Priority admission plugin (plugin/pkg/admission/priority/admission.go).
#include <fmt/format.h>

#include "embedded/admission.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/typecheck.hpp"
#include "embedded/validation.hpp"

namespace gpupool::embedded {
namespace {

using util::object_at;
using util::string_of;

constexpr std::int64_t kHighestUserDefinablePriority = 1000000000;

struct SystemClass {
  const char* name;
  std::int64_t value;
  const char* description;
};
// pkg/apis/scheduling/types.go SystemClusterCritical / SystemNodeCritical.
constexpr SystemClass kSystemClasses[] = {
    {"system-node-critical", 2000001000,
     "Used for system critical pods that must not be moved from their current node."},
    {"system-cluster-critical", 2000000000,
     "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
};

bool is_priority_class(const ResourceType& t) {
  return t.group == "scheduling.k8s.io" && t.resource == "priorityclasses";
}

std::int64_t value_of(const json::object& pc) { return util::int_of(&pc, "value", 0); }
bool global_default(const json::object& pc) {
  const json::value* g = pc.if_contains("globalDefault");
  return g && g->is_bool() && g->as_bool();
}

// getDefaultPriorityClass: the globalDefault class with the lowest value.
std::shared_ptr<const json::object> default_class(Store& store) {
  std::shared_ptr<const json::object> out;
  for (const auto& pc : store.list(store.type("scheduling.k8s.io", "priorityclasses"), "").items)
    if (global_default(*pc) && (!out || value_of(*out) > value_of(*pc))) out = pc;
  return out;
}

// The plugin's Validate (validatePriorityClass), after the strategy's validation: one default only.
void validate_priority_class(Store& store, AdmissionRequest& r) {
  const json::object& pc = *r.object;
  const std::string name = util::name_of(pc);
  if (global_default(pc))
    if (auto d = default_class(store))
      if (r.operation == AdmissionRequest::Operation::Create || util::name_of(*d) != name)
        throw admission_forbidden(
            r, fmt::format("PriorityClass {} is already marked as default. Only one default can exist",
                           util::name_of(*d)));
}

void admit_pod(Store& store, AdmissionRequest& r) {
  json::object& spec = util::ensure_object(*r.object, "spec");
  if (r.operation == AdmissionRequest::Operation::Update) {
    // An update keeps what admission set at creation.
    if (const json::object* old = r.old_object ? object_at(*r.old_object, {"spec"}) : nullptr)
      for (const char* k : {"priority", "preemptionPolicy"})
        if ((!spec.contains(k) || spec.at(k).is_null()) && old->contains(k)) spec[k] = old->at(k);
    return;
  }
  std::int64_t priority = 0;
  std::string policy = "PreemptLowerPriority";
  const std::string cls = string_of(&spec, "priorityClassName");
  if (cls.empty()) {
    if (auto d = default_class(store)) {
      spec["priorityClassName"] = util::name_of(*d);
      priority = value_of(*d);
      policy = string_of(d.get(), "preemptionPolicy");
    }
  } else {
    auto pc = store.find(store.type("scheduling.k8s.io", "priorityclasses"), "", cls);
    if (!pc) throw admission_forbidden(r, fmt::format("no PriorityClass with name {} was found", cls), true);
    priority = value_of(*pc);
    policy = string_of(pc.get(), "preemptionPolicy");
  }
  if (const json::value* p = spec.if_contains("priority");
      p && !p->is_null() && (!p->is_int64() || p->as_int64() != priority))
    throw admission_forbidden(
        r,
        fmt::format("the integer value of priority ({}) must not be provided in pod spec; priority "
                    "admission controller computed {} from the given PriorityClass name",
                    json::serialize(*p), priority),
        true);
  spec["priority"] = priority;
  if (!policy.empty()) {
    if (const std::string given = string_of(&spec, "preemptionPolicy"); !given.empty() && given != policy)
      throw admission_forbidden(
          r,
          fmt::format("the string value of PreemptionPolicy ({}) must not be provided in pod spec; "
                      "priority admission controller computed {} from the given PriorityClass name",
                      given, policy),
          true);
    spec["preemptionPolicy"] = policy;
  }
}

}  // namespace

void priority_admission(Store& store, AdmissionRequest& r) {
  if (!r.type || !r.object || !r.subresource.empty() || r.operation == AdmissionRequest::Operation::Delete) return;
  if (r.type->group.empty() && r.type->resource == "pods") admit_pod(store, r);
}

void priority_validation(Store& store, AdmissionRequest& r) {
  if (!r.type || !r.object || !r.subresource.empty() || r.operation == AdmissionRequest::Operation::Delete) return;
  if (is_priority_class(*r.type)) validate_priority_class(store, r);
}

void priority_class_causes(const json::object& pc, std::vector<StatusCause>& causes) {
  // ValidatePriorityClass after the metadata: a system- name must be a known system class, a user
  // class's value at most HighestUserDefinablePriority, the preemption policy a known one.
  const std::string name = util::name_of(pc);
  if (name.starts_with("system-")) {
    // IsKnownSystemPriorityClass.
    std::string err = fmt::format("{} is not a known system priority class", name);
    for (const auto& s : kSystemClasses)
      if (name == s.name) {
        if (value_of(pc) != s.value)
          err = fmt::format("value of {} PriorityClass must be {}", s.name, s.value);
        else if (global_default(pc))
          err = fmt::format("globalDefault of {} PriorityClass must be false", s.name);
        else
          err.clear();
      }
    if (!err.empty())
      causes.push_back(
          {"FieldValueForbidden",
           "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: " + err,
           "metadata.name"});
  } else if (value_of(pc) > kHighestUserDefinablePriority) {
    causes.push_back({"FieldValueForbidden",
                      fmt::format("Forbidden: maximum allowed value of a user defined priority is {}",
                                  kHighestUserDefinablePriority),
                      "value"});
  }
  // ValidatePreemptionPolicy (the pointer set: defaulted when absent).
  const std::string policy = string_of(&pc, "preemptionPolicy");
  if (policy.empty())
    causes.push_back({"FieldValueRequired", "Required value", "preemptionPolicy"});
  else if (policy != "PreemptLowerPriority" && policy != "Never")
    causes.push_back(
        {"FieldValueNotSupported",
         fmt::format("Unsupported value: {}: supported values: \"PreemptLowerPriority\", \"Never\"", go_quote(policy)),
         "preemptionPolicy"});
}

void priority_class_update_causes(const json::object& pc, const json::object& old, std::vector<StatusCause>& causes) {
  // ValidatePriorityClassUpdate after ValidateObjectMetaUpdate: value and preemptionPolicy immutable.
  if (value_of(pc) != value_of(old))
    causes.push_back({"FieldValueForbidden", "Forbidden: may not be changed in an update.", "value"});
  if (!same_value(pc.if_contains("preemptionPolicy"), old.if_contains("preemptionPolicy")))
    causes.push_back(
        {"FieldValueInvalid",
         fmt::format("Invalid value: {}: field is immutable", go_pointer_value(pc.if_contains("preemptionPolicy"))),
         "preemptionPolicy"});
}

void create_system_priority_classes(Store& store) {
  // The API server's bootstrap hook (pkg/registry/scheduling/rest: AddSystemPriorityClasses).
  const auto& t = store.type("scheduling.k8s.io", "priorityclasses");
  for (const auto& s : kSystemClasses) {
    if (store.find(t, "", s.name)) continue;
    store.create(t, "",
                 json::object{{"metadata", json::object{{"name", s.name}}},
                              {"value", s.value},
                              {"description", s.description},
                              {"preemptionPolicy", "PreemptLowerPriority"}});
  }
}

}  // namespace gpupool::embedded
