#include "embedded/admission.hpp"

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"

namespace gpupool::embedded {

std::string admission_name(const AdmissionRequest& r, bool mutating) {
  // admission/errors.go extractResourceName: the request's name, else the object's name, else its
  // generateName — mutating plugins run before the registry generates the name (rest.BeforeCreate).
  const json::object* md = r.object       ? util::object_at(*r.object, {"metadata"})
                           : r.old_object ? util::object_at(*r.old_object, {"metadata"})
                                          : nullptr;
  const std::string name = util::string_of(md, "name");
  const std::string generate = util::string_of(md, "generateName");
  if (mutating && r.operation == AdmissionRequest::Operation::Create && !generate.empty() &&
      name.starts_with(generate) && name.size() == generate.size() + 5)
    return generate;
  if (!name.empty()) return name;
  return generate.empty() ? "Unknown" : generate;
}

StatusError admission_forbidden(const AdmissionRequest& r, std::string_view why, bool mutating) {
  // apimachinery/pkg/api/errors NewForbidden: `%s %q is forbidden: %v` with the group resource.
  const std::string name = admission_name(r, mutating);
  return StatusError(403, "Forbidden", fmt::format("{} \"{}\" is forbidden: {}", r.type->group_resource(), name, why),
                     name, r.type->group, r.type->resource);
}

namespace {

// TaintNodesByCondition (plugin/pkg/admission/nodetaint/admission.go, v1.32): a Node created
// through the API (not a subresource) gets node.kubernetes.io/not-ready:NoSchedule appended unless
// a taint with that key and effect is already there (Taint.MatchTaint compares key and effect).
// Nothing here removes it later: the embedded cluster, like a control plane without kubelets and
// node lifecycle controller, leaves that to `kubectl taint node N node.kubernetes.io/not-ready-`.
void node_taint(AdmissionRequest& r) {
  if (r.operation != AdmissionRequest::Operation::Create || !r.object || !r.subresource.empty() ||
      !r.type->group.empty() || r.type->resource != "nodes" || (r.options && r.options->seeded_node))
    return;
  json::object& spec = util::ensure_object(*r.object, "spec");
  json::value& taints = spec["taints"];
  if (!taints.is_array()) taints = json::array{};
  for (const auto& t : taints.as_array())
    if (t.is_object() && util::string_of(&t.as_object(), "key") == "node.kubernetes.io/not-ready" &&
        util::string_of(&t.as_object(), "effect") == "NoSchedule")
      return;
  taints.as_array().push_back(json::object{{"key", "node.kubernetes.io/not-ready"}, {"effect", "NoSchedule"}});
}

// RuntimeClass (plugin/pkg/admission/runtimeclass, v1.32), on pod creation. The embedded cluster
// serves no RuntimeClass objects, so every class a pod names is one that is not found (Admit), and
// a pod may not bring an overhead of its own (Validate: no class defines one).
void runtime_class(AdmissionRequest& r, bool mutate) {
  if (r.operation != AdmissionRequest::Operation::Create || !r.object || !r.subresource.empty() ||
      !r.type->group.empty() || r.type->resource != "pods")
    return;
  const json::object* spec = util::object_at(*r.object, {"spec"});
  const json::value* cls = spec ? spec->if_contains("runtimeClassName") : nullptr;
  if (cls && cls->is_string() && !cls->as_string().empty())
    throw admission_forbidden(
        r, fmt::format("pod rejected: RuntimeClass \"{}\" not found", std::string_view(cls->as_string())), mutate);
  const json::value* overhead = spec ? spec->if_contains("overhead") : nullptr;
  if (!mutate && overhead && !overhead->is_null())
    throw admission_forbidden(r, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
                              false);
}

}  // namespace

void install_admission_plugins(Store& store) {
  // kube-apiserver runs every mutating plugin, then validation, then every validating plugin
  // (LimitRanger, Priority, ..., ResourceQuota last). The immutable fields of updates are checked by
  // validation itself (builtin_validation: immutable_causes). Priority's refusals are its Admit's.
  store.add_admission([&store](AdmissionRequest& r) { limit_ranger(store, r, true); }, AdmissionStage::Mutating);
  store.add_admission([&store](AdmissionRequest& r) { service_account_admission(store, r, true); },
                      AdmissionStage::Mutating);
  store.add_admission([](AdmissionRequest& r) { node_taint(r); }, AdmissionStage::Mutating);
  store.add_admission([&store](AdmissionRequest& r) { priority_admission(store, r); }, AdmissionStage::Mutating);
  store.add_admission([](AdmissionRequest& r) { runtime_class(r, true); }, AdmissionStage::Mutating);
  store.add_admission([&store](AdmissionRequest& r) { limit_ranger(store, r, false); });
  store.add_admission([&store](AdmissionRequest& r) { service_account_admission(store, r, false); });
  store.add_admission([](AdmissionRequest& r) { runtime_class(r, false); });
}

}  // namespace gpupool::embedded
