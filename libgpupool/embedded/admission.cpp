#include "embedded/admission.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "embedded/controllers_util.hpp"
#include "embedded/schema.hpp"
#include "embedded/validation.hpp"
#include "gpupool/error.hpp"
#include "gpupool/quantity.hpp"

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

// ---- RuntimeClass (plugin/pkg/admission/runtimeclass/admission.go, v1.32) ----------------------

// A quantity map as apiequality.Semantic compares two ResourceLists: the same names, each quantity
// equal by value (Quantity.Cmp), an empty map equal to none.
bool same_resource_list(const json::object* a, const json::object* b) {
  const std::size_t na = a ? a->size() : 0, nb = b ? b->size() : 0;
  if (na != nb) return false;
  if (na == 0) return true;
  for (const auto& [name, qa] : *a) {
    const json::value* qb = b->if_contains(name);
    if (!qb) return false;
    try {
      if (Quantity::parse(schema::quantity_text(qa)) != Quantity::parse(schema::quantity_text(*qb))) return false;
    } catch (const Error&) {
      if (!util::json_equal(qa, *qb)) return false;
    }
  }
  return true;
}

// Two tolerations as apiequality.Semantic compares core.Toleration: every field, tolerationSeconds
// by value (absent and null alike).
bool same_toleration(const json::object& a, const json::object& b) {
  for (const char* k : {"key", "operator", "value", "effect"})
    if (util::string_of(&a, k) != util::string_of(&b, k)) return false;
  return same_value(a.if_contains("tolerationSeconds"), b.if_contains("tolerationSeconds"));
}

// pkg/util/tolerations isSuperset: whether `ss` tolerates everything `t` tolerates.
bool tolerates_superset(const json::object& ss, const json::object& t) {
  if (same_toleration(ss, t)) return true;
  const std::string ss_key = util::string_of(&ss, "key"), ss_op = util::string_of(&ss, "operator");
  const std::string ss_effect = util::string_of(&ss, "effect");
  if (util::string_of(&t, "key") != ss_key && (!ss_key.empty() || ss_op != "Exists")) return false;  // "" Exists: all
  if (util::string_of(&t, "effect") != ss_effect && !ss_effect.empty()) return false;                // "": every effect
  if (ss_effect == "NoExecute") {
    const json::value* ss_s = ss.if_contains("tolerationSeconds");
    const json::value* t_s = t.if_contains("tolerationSeconds");
    if (ss_s && ss_s->is_int64()) {
      if (!t_s || !t_s->is_int64() || t_s->as_int64() > ss_s->as_int64()) return false;
    }
  }
  if (ss_op == "Equal" || ss_op.empty())  // an empty operator means Equal
    return util::string_of(&t, "operator") == "Equal" && util::string_of(&t, "value") == util::string_of(&ss, "value");
  return ss_op == "Exists";
}

// pkg/util/tolerations MergeTolerations: both lists in order, without a toleration another one
// (kept before it, or a different one after it) is a superset of; of equal ones the first stays.
json::array merge_tolerations(const json::array* first, const json::array* second) {
  std::vector<const json::object*> all;
  for (const json::array* list : {first, second})
    if (list)
      for (const auto& t : *list)
        if (t.is_object()) all.push_back(&t.as_object());
  std::vector<const json::object*> merged;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const json::object& t = *all[i];
    bool redundant =
        std::any_of(merged.begin(), merged.end(), [&](const json::object* m) { return tolerates_superset(*m, t); });
    for (std::size_t j = i + 1; !redundant && j < all.size(); ++j)
      redundant = !same_toleration(t, *all[j]) && tolerates_superset(*all[j], t);
    if (!redundant) merged.push_back(&t);
  }
  json::array out;
  for (const json::object* t : merged) out.push_back(*t);
  return out;
}

// RuntimeClass, on pod creation (admission.NewHandler(admission.Create)); subresources and other
// resources are ignored. prepareObjects: the class the pod names, or a refusal when it is not
// found. Admit (mutate) then runs setOverhead and setScheduling, Validate validateOverhead.
void runtime_class(Store& store, AdmissionRequest& r, bool mutate) {
  if (r.operation != AdmissionRequest::Operation::Create || !r.object || !r.subresource.empty() ||
      !r.type->group.empty() || r.type->resource != "pods")
    return;
  json::object& spec = util::ensure_object(*r.object, "spec");
  // prepareObjects looks up any set runtimeClassName, "" too: the lister misses it, and the API's
  // Get of an empty name fails (a 500, "resource name may not be empty", as the oracle answers).
  if (const json::value* v = spec.if_contains("runtimeClassName"); v && v->is_string() && v->as_string().empty())
    throw StatusError(500, "", "resource name may not be empty");
  const std::string name = util::string_of(&spec, "runtimeClassName");
  std::shared_ptr<const json::object> cls;
  if (!name.empty()) {
    cls = store.find(store.type("node.k8s.io", "runtimeclasses"), "", name);
    if (!cls) throw admission_forbidden(r, fmt::format("pod rejected: RuntimeClass \"{}\" not found", name), mutate);
  }
  const json::value* class_overhead = cls ? cls->if_contains("overhead") : nullptr;
  if (class_overhead && class_overhead->is_null()) class_overhead = nullptr;
  const json::object* pod_fixed = class_overhead && class_overhead->is_object()
                                      ? util::object_at(class_overhead->as_object(), {"podFixed"})
                                      : nullptr;
  const json::object* pod_overhead = util::object_at(spec, {"overhead"});
  static constexpr std::string_view kMismatch =
      "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";
  if (!mutate) {
    // validateOverhead.
    if (class_overhead) {
      if (!same_resource_list(pod_fixed, pod_overhead)) throw admission_forbidden(r, kMismatch, false);
    } else if (const json::value* o = spec.if_contains("overhead"); o && !o->is_null()) {
      throw admission_forbidden(r, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
                                false);
    }
    return;
  }
  if (class_overhead) {
    // setOverhead: an overhead of the pod's own must be the class's; the pod gets the class's.
    if (pod_overhead && !pod_overhead->empty() && !same_resource_list(pod_fixed, pod_overhead))
      throw admission_forbidden(r, kMismatch, true);
    if (pod_fixed && !pod_fixed->empty())
      spec["overhead"] = *pod_fixed;
    else
      spec.erase("overhead");
  }
  const json::value* scheduling = cls ? cls->if_contains("scheduling") : nullptr;
  if (!scheduling || !scheduling->is_object()) return;
  // setScheduling: the class's node selector merged into the pod's (a key the pod gives another
  // value is a conflict), then the tolerations merged.
  const json::object* class_selector = util::object_at(scheduling->as_object(), {"nodeSelector"});
  if (const json::object* pod_selector = util::object_at(spec, {"nodeSelector"})) {
    json::object merged = *pod_selector;
    if (class_selector)
      for (const auto& [key, value] : *class_selector) {
        const std::string class_value = value.is_string() ? std::string(value.as_string()) : "";
        if (const json::value* pv = merged.if_contains(key); pv && pv->is_string() && pv->as_string() != class_value)
          throw admission_forbidden(
              r,
              fmt::format("conflict: runtimeClass.scheduling.nodeSelector[{}] = {}; "
                          "pod.spec.nodeSelector[{}] = {}",
                          std::string_view(key), class_value, std::string_view(key), std::string_view(pv->as_string())),
              true);
        merged[key] = value;
      }
    spec["nodeSelector"] = std::move(merged);
  } else if (class_selector && !class_selector->empty()) {
    spec["nodeSelector"] = *class_selector;
  }
  const json::value* class_tolerations = scheduling->as_object().if_contains("tolerations");
  const json::value* pod_tolerations = spec.if_contains("tolerations");
  json::array merged =
      merge_tolerations(pod_tolerations && pod_tolerations->is_array() ? &pod_tolerations->as_array() : nullptr,
                        class_tolerations && class_tolerations->is_array() ? &class_tolerations->as_array() : nullptr);
  if (merged.empty())
    spec.erase("tolerations");
  else
    spec["tolerations"] = std::move(merged);
}

// DefaultIngressClass (plugin/pkg/admission/network/defaultingressclass/admission.go, Admit and
// getDefaultClass; creates only): a new Ingress with neither spec.ingressClassName nor the
// kubernetes.io/ingress.class annotation gets the default IngressClass, the one annotated
// ingressclass.kubernetes.io/is-default-class: "true" — the newest when there are several, the
// smaller name among those created in the same second.
void default_ingress_class(Store& store, AdmissionRequest& r) {
  if (r.operation != AdmissionRequest::Operation::Create || !r.object || !r.subresource.empty() ||
      r.type->group != "networking.k8s.io" || r.type->resource != "ingresses")
    return;
  const json::object* spec = util::object_at(*r.object, {"spec"});
  if (const json::value* v = spec ? spec->if_contains("ingressClassName") : nullptr; v && !v->is_null()) return;
  if (const json::object* ann = util::object_at(*r.object, {"metadata", "annotations"});
      ann && ann->contains("kubernetes.io/ingress.class"))
    return;
  std::shared_ptr<const json::object> best;
  std::string best_time;
  for (const auto& c : store.list(store.type("networking.k8s.io", "ingressclasses"), "").items) {
    const json::object* ann = util::object_at(*c, {"metadata", "annotations"});
    if (util::string_of(ann, "ingressclass.kubernetes.io/is-default-class") != "true") continue;
    const json::object* md = util::object_at(*c, {"metadata"});
    const std::string time = util::string_of(md, "creationTimestamp");  // RFC 3339, seconds: orders as text
    if (!best || time > best_time ||
        (time == best_time &&
         util::string_of(md, "name") < util::string_of(util::object_at(*best, {"metadata"}), "name"))) {
      best = c;
      best_time = time;
    }
  }
  if (best)
    util::ensure_object(*r.object, "spec")["ingressClassName"] =
        util::string_of(util::object_at(*best, {"metadata"}), "name");
}

}  // namespace

void install_admission_plugins(Store& store) {
  // kube-apiserver runs every mutating plugin, then validation, then every validating plugin
  // (LimitRanger, Priority, ..., ResourceQuota last). The immutable fields of updates are checked by
  // validation itself (builtin_validation: immutable_causes).
  store.add_admission([&store](AdmissionRequest& r) { limit_ranger(store, r, true); }, AdmissionStage::Mutating);
  store.add_admission([&store](AdmissionRequest& r) { service_account_admission(store, r, true); },
                      AdmissionStage::Mutating);
  store.add_admission([](AdmissionRequest& r) { node_taint(r); }, AdmissionStage::Mutating);
  store.add_admission([&store](AdmissionRequest& r) { priority_admission(store, r); }, AdmissionStage::Mutating);
  store.add_admission([&store](AdmissionRequest& r) { runtime_class(store, r, true); }, AdmissionStage::Mutating);
  store.add_admission([&store](AdmissionRequest& r) { default_ingress_class(store, r); }, AdmissionStage::Mutating);
  store.add_admission([&store](AdmissionRequest& r) { limit_ranger(store, r, false); });
  store.add_admission([&store](AdmissionRequest& r) { priority_validation(store, r); });
  store.add_admission([&store](AdmissionRequest& r) { service_account_admission(store, r, false); });
  store.add_admission([&store](AdmissionRequest& r) { pod_security_admission(store, r); });
  store.add_admission([&store](AdmissionRequest& r) { runtime_class(store, r, false); });
}

}  // namespace gpupool::embedded
