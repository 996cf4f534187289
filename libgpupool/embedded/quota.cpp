#include "embedded/quota.hpp"

#include <algorithm>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "common/join.hpp"
#include "embedded/admission.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"
#include "gpupool/names.hpp"
#include "gpupool/resources.hpp"
#include "gpupool/scheduling.hpp"

namespace gpupool::embedded {
namespace {

using util::name_of;
using util::namespace_of;
using util::object_at;
using util::string_of;

// ---- resource lists (staging/src/k8s.io/apiserver/pkg/quota/v1/resources.go) ----------------------

std::optional<Quantity> quantity_of(const json::value& v) {
  try {
    if (v.is_string()) return Quantity::parse(v.as_string(), "quantity");
    if (v.is_int64()) return Quantity::from_int(v.as_int64());
    if (v.is_uint64() || v.is_double()) return Quantity::parse(json::serialize(v), "quantity");
  } catch (const ValidationError&) {}
  return std::nullopt;
}

ResourceList list_of_impl(const json::object* o) {
  ResourceList out;
  if (!o) return out;
  for (const auto& [k, v] : *o)
    if (auto q = quantity_of(v)) out[std::string(k)] = *q;
  return out;
}

json::object to_json_impl(const ResourceList& l) {
  json::object out;
  for (const auto& [k, v] : l) out[k] = v.to_string();
  return out;
}

// quota.Add: every key of both, the first operand's value (and format, unless zero) plus the second.
ResourceList add(const ResourceList& a, const ResourceList& b) {
  ResourceList out = a;
  for (const auto& [k, v] : b) {
    auto [it, inserted] = out.emplace(k, v);
    if (!inserted) it->second += v;
  }
  return out;
}

// quota.Mask: the entries of `l` whose names are in `names`.
template <typename Names>
ResourceList mask(const ResourceList& l, const Names& names) {
  ResourceList out;
  for (const auto& n : names)
    if (auto it = l.find(n); it != l.end()) out.emplace(it->first, it->second);
  return out;
}

std::vector<std::string> names_of(const ResourceList& l) {
  std::vector<std::string> out;
  for (const auto& [k, v] : l) out.push_back(k);
  return out;
}

// ---- the evaluators (pkg/quota/v1/evaluator/core, apiserver/pkg/quota/v1/generic) ----------------

enum class Evaluator { None, Pods, Services, Claims, Count };

Evaluator evaluator_of(const ResourceType& t) {
  if (!t.namespaced) return Evaluator::None;
  if (t.resource == "events" && (t.group.empty() || t.group == "events.k8s.io")) return Evaluator::None;  // ignored
  if (t.group.empty() && t.resource == "pods") return Evaluator::Pods;
  if (t.group.empty() && t.resource == "services") return Evaluator::Services;
  if (t.group.empty() && t.resource == "persistentvolumeclaims") return Evaluator::Claims;
  return Evaluator::Count;
}

// generic.ObjectCountQuotaResourceNameFor.
std::string count_name(const ResourceType& t) {
  return t.group.empty() ? "count/" + t.resource : "count/" + t.resource + "." + t.group;
}

// pkg/quota/v1/evaluator/core/registry.go legacyObjectCountAliases.
std::string legacy_alias(const ResourceType& t) {
  if (!t.group.empty()) return {};
  for (const char* r : {"configmaps", "resourcequotas", "replicationcontrollers", "secrets"})
    if (t.resource == r) return r;
  return {};
}

constexpr std::string_view kStorageClassSuffix = ".storageclass.storage.k8s.io/";

// The evaluator's MatchingResources, for one resource name.
bool matches_resource(Evaluator e, const ResourceType& t, std::string_view name) {
  switch (e) {
    case Evaluator::Pods: {
      static const std::set<std::string_view> pod_resources{"count/pods",
                                                            "cpu",
                                                            "memory",
                                                            "ephemeral-storage",
                                                            "requests.cpu",
                                                            "requests.memory",
                                                            "requests.ephemeral-storage",
                                                            "limits.cpu",
                                                            "limits.memory",
                                                            "limits.ephemeral-storage",
                                                            "pods"};
      if (pod_resources.count(name)) return true;
      if (name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")) return true;
      return !is_native_resource(name) && name.starts_with("requests.");  // isExtendedResourceNameForQuota
    }
    case Evaluator::Services:
      return name == "count/services" || name == "services" || name == "services.nodeports" ||
             name == "services.loadbalancers";
    case Evaluator::Claims: {
      if (name == "count/persistentvolumeclaims" || name == "persistentvolumeclaims" || name == "requests.storage")
        return true;
      const std::string s(name);
      for (const char* r : {"persistentvolumeclaims", "requests.storage"})
        if (s.ends_with(std::string(kStorageClassSuffix) + r)) return true;
      return false;
    }
    case Evaluator::Count:
      return name == count_name(t) || (!legacy_alias(t).empty() && name == legacy_alias(t));
    case Evaluator::None:
      return false;
  }
  return false;
}

// Handles: which operations can change usage.
bool handles(Evaluator e, AdmissionRequest::Operation op, std::string_view subresource) {
  using Op = AdmissionRequest::Operation;
  if (!subresource.empty()) return false;  // pods/resize is not served
  switch (e) {
    case Evaluator::Pods:
    case Evaluator::Count:
      return op == Op::Create;
    case Evaluator::Services:
    case Evaluator::Claims:
      return op == Op::Create || op == Op::Update;
    case Evaluator::None:
      return false;
  }
  return false;
}

bool pod_finished(const json::object& pod) {
  const std::string p = string_of(object_at(pod, {"status"}), "phase");
  return p == "Succeeded" || p == "Failed";
}

struct ContainerLists {
  std::string name;
  ResourceList requests, limits;  // requests after API defaulting (a limit fills a missing request)
  bool restartable = false;
};

std::vector<ContainerLists> containers_of(const json::object& pod, std::string_view key) {
  std::vector<ContainerLists> out;
  if (const json::array* cs = util::array_at(pod, {"spec"}, key))
    for (const auto& c : *cs) {
      if (!c.is_object()) continue;
      ContainerLists cl;
      cl.name = string_of(&c.as_object(), "name");
      cl.requests = list_of_impl(object_at(c.as_object(), {"resources", "requests"}));
      cl.limits = list_of_impl(object_at(c.as_object(), {"resources", "limits"}));
      for (const auto& [k, v] : cl.limits) cl.requests.emplace(k, v);  // SetDefaults_Pod
      cl.restartable = string_of(&c.as_object(), "restartPolicy") == "Always";
      out.push_back(std::move(cl));
    }
  return out;
}

// component-helpers/resource PodLimits: the model's aggregation of containers, sidecars and init
// containers (effective_pod_requests) applied to the limits; the overhead adds to limits already set.
ResourceList pod_limits_impl(const json::object& pod, bool overhead) {
  auto as_resources = [](const std::vector<ContainerLists>& cs) {
    std::vector<ContainerResources> out;
    for (const auto& c : cs) out.push_back(ContainerResources{c.limits, {}, c.restartable});
    return out;
  };
  ResourceList limits = effective_pod_requests(as_resources(containers_of(pod, "containers")),
                                               as_resources(containers_of(pod, "initContainers")), {});
  if (overhead)
    for (const auto& [k, v] : list_of_impl(object_at(pod, {"spec", "overhead"})))
      if (auto it = limits.find(k); it != limits.end()) it->second += v;
  return limits;
}

// pods.go podComputeUsageHelper.
ResourceList compute_usage(const ResourceList& requests, const ResourceList& limits) {
  ResourceList r;
  r["pods"] = Quantity::from_int(1);
  for (const char* name : {"cpu", "memory", "ephemeral-storage"}) {
    if (auto it = requests.find(name); it != requests.end()) {
      r[name] = it->second;
      r[std::string("requests.") + name] = it->second;
    }
    if (auto it = limits.find(name); it != limits.end()) r[std::string("limits.") + name] = it->second;
  }
  for (const auto& [k, v] : requests) {
    if (k.starts_with("hugepages-")) {
      r[k] = v;
      r["requests." + k] = v;
    }
    if (is_extended_resource_name(k)) r["requests." + k] = v;
  }
  return r;
}

ResourceList pod_usage(const json::object& pod) {
  ResourceList out{{"count/pods", Quantity::from_int(1)}};
  if (pod_finished(pod)) return out;  // QuotaV1Pod
  return add(out, compute_usage(pod_requests(pod), pod_limits(pod)));
}

ResourceList service_usage(const json::object& svc) {
  // services.go Usage.
  const json::object* spec = object_at(svc, {"spec"});
  const json::array* ports = util::array_at(svc, {"spec"}, "ports");
  const std::int64_t n = ports ? static_cast<std::int64_t>(ports->size()) : 0;
  ResourceList r{{"count/services", Quantity::from_int(1)},
                 {"services", Quantity::from_int(1)},
                 {"services.loadbalancers", Quantity{}},
                 {"services.nodeports", Quantity{}}};
  const std::string type = string_of(spec, "type");
  if (type == "NodePort") r["services.nodeports"] = Quantity::from_int(n);
  if (type == "LoadBalancer") {
    const json::value* alloc = spec ? spec->if_contains("allocateLoadBalancerNodePorts") : nullptr;
    if (alloc && alloc->is_bool() && !alloc->as_bool()) {
      std::int64_t with = 0;
      for (const auto& p : *ports)
        if (p.is_object() && util::int_of(&p.as_object(), "nodePort", 0) != 0) ++with;
      r["services.nodeports"] = Quantity::from_int(with);
    } else {
      r["services.nodeports"] = Quantity::from_int(n);
    }
    r["services.loadbalancers"] = Quantity::from_int(1);
  }
  return r;
}

ResourceList claim_usage(const json::object& pvc) {
  // persistent_volume_claims.go Usage; the class as storagehelpers.GetPersistentVolumeClaimClass
  // reads it (the beta annotation first, then spec.storageClassName).
  ResourceList r{{"persistentvolumeclaims", Quantity::from_int(1)},
                 {"count/persistentvolumeclaims", Quantity::from_int(1)}};
  std::string cls = util::annotation(pvc, "volume.beta.kubernetes.io/storage-class").value_or("");
  if (cls.empty()) cls = string_of(object_at(pvc, {"spec"}), "storageClassName");
  const std::string prefix = cls + std::string(kStorageClassSuffix);
  if (!cls.empty()) r[prefix + "persistentvolumeclaims"] = Quantity::from_int(1);
  const ResourceList req = list_of_impl(object_at(pvc, {"spec", "resources", "requests"}));
  if (auto it = req.find("storage"); it != req.end()) {
    // RoundUp(0): a fractional request counts as the next whole byte.
    Quantity q = it->second;
    const __int128 nanos = q.nano_value(), unit = 1000000000;
    if (nanos % unit != 0) q = Quantity::from_nanos((nanos / unit + (nanos > 0 ? 1 : 0)) * unit, q.format());
    r["requests.storage"] = q;
    if (!cls.empty()) r[prefix + "requests.storage"] = q;
  }
  return r;
}

ResourceList usage_of(Evaluator e, const ResourceType& t, const json::object& obj) {
  switch (e) {
    case Evaluator::Pods:
      return pod_usage(obj);
    case Evaluator::Services:
      return service_usage(obj);
    case Evaluator::Claims:
      return claim_usage(obj);
    case Evaluator::Count: {
      ResourceList r{{count_name(t), Quantity::from_int(1)}};
      if (const auto alias = legacy_alias(t); !alias.empty()) r[alias] = Quantity::from_int(1);
      return r;
    }
    case Evaluator::None:
      return {};
  }
  return {};
}

// ---- scopes -------------------------------------------------------------------------------------

struct ScopeSelector {
  std::string scope, op;
  std::vector<std::string> values;
};

// resourcequota/controller.go getScopeSelectorsFromQuota: spec.scopes (as Exists) and
// spec.scopeSelector.matchExpressions.
std::vector<ScopeSelector> scopes_of(const json::object& quota) {
  std::vector<ScopeSelector> out;
  if (const json::array* s = util::array_at(quota, {"spec"}, "scopes"))
    for (const auto& v : *s)
      if (v.is_string()) out.push_back({std::string(v.as_string()), "Exists", {}});
  if (const json::array* m = util::array_at(quota, {"spec", "scopeSelector"}, "matchExpressions"))
    for (const auto& e : *m) {
      if (!e.is_object()) continue;
      ScopeSelector sel{string_of(&e.as_object(), "scopeName"), string_of(&e.as_object(), "operator"), {}};
      if (const json::array* vs = util::array_at(e.as_object(), {}, "values"))
        for (const auto& v : *vs)
          if (v.is_string()) sel.values.emplace_back(v.as_string());
      out.push_back(std::move(sel));
    }
  return out;
}

bool best_effort(const json::object& pod) {
  // pkg/apis/core/v1/helper/qos GetPodQOS: BestEffort when no container (init containers
  // included) requests or limits a positive cpu or memory.
  for (const char* key : {"containers", "initContainers"})
    for (const auto& c : containers_of(pod, key))
      for (const ResourceList* l : {&c.requests, &c.limits})
        for (const char* r : {"cpu", "memory"})
          if (auto it = l->find(r); it != l->end() && it->second > Quantity{}) return false;
  return true;
}

bool cross_namespace_affinity(const json::object& pod) {
  // pods.go usesCrossNamespacePodAffinity: a (anti-)affinity term with namespaces or a namespaceSelector.
  auto cross = [](const json::object* term) {
    if (!term) return false;
    const json::value* ns = term->if_contains("namespaces");
    return (ns && ns->is_array() && !ns->as_array().empty()) ||
           (term->if_contains("namespaceSelector") && !term->at("namespaceSelector").is_null());
  };
  for (const char* kind : {"podAffinity", "podAntiAffinity"}) {
    const json::object* a = object_at(pod, {"spec", "affinity", kind});
    if (!a) continue;
    if (const json::value* req = a->if_contains("requiredDuringSchedulingIgnoredDuringExecution");
        req && req->is_array())
      for (const auto& t : req->as_array())
        if (t.is_object() && cross(&t.as_object())) return true;
    if (const json::value* pref = a->if_contains("preferredDuringSchedulingIgnoredDuringExecution");
        pref && pref->is_array())
      for (const auto& t : pref->as_array())
        if (t.is_object() && cross(object_at(t.as_object(), {"podAffinityTerm"}))) return true;
  }
  return false;
}

// pods.go podMatchesScopeFunc; every other evaluator matches no scope (generic.MatchesNoScopeFunc).
bool matches_scope(Evaluator e, const ScopeSelector& s, const json::object& obj) {
  if (e != Evaluator::Pods) return false;
  const json::object* spec = object_at(obj, {"spec"});
  if (s.scope == "Terminating" || s.scope == "NotTerminating") {
    const json::value* ads = spec ? spec->if_contains("activeDeadlineSeconds") : nullptr;
    const bool terminating = ads && ads->is_int64() && ads->as_int64() >= 0;
    return s.scope == "Terminating" ? terminating : !terminating;
  }
  if (s.scope == "BestEffort") return best_effort(obj);
  if (s.scope == "NotBestEffort") return !best_effort(obj);
  if (s.scope == "CrossNamespacePodAffinity") return cross_namespace_affinity(obj);
  if (s.scope == "PriorityClass") {
    const std::string cls = string_of(spec, "priorityClassName");
    // The label selector {PriorityClass: <class>} of ScopedResourceSelectorRequirementsAsSelector.
    const bool in = std::find(s.values.begin(), s.values.end(), cls) != s.values.end();
    if (s.op == "Exists") return !cls.empty();
    if (s.op == "DoesNotExist") return cls.empty();
    if (s.op == "In") return !cls.empty() && in;
    if (s.op == "NotIn") return cls.empty() || !in;
  }
  return false;
}

bool matches_scopes(Evaluator e, const json::object& quota, const json::object& obj) {
  for (const auto& s : scopes_of(quota))
    if (!matches_scope(e, s, obj)) return false;
  return true;
}

// pods.go Constraints: with a quota on cpu/memory requests or limits, every container must set them.
std::string pod_constraints(const std::vector<std::string>& restricted, const json::object& pod) {
  static const std::set<std::string> validation{"cpu",        "memory",       "requests.cpu", "requests.memory",
                                                "limits.cpu", "limits.memory"};
  std::set<std::string> required;
  for (const auto& r : restricted)
    if (validation.count(r)) required.insert(r);
  std::map<std::string, std::set<std::string>> missing;
  for (const char* key : {"containers", "initContainers"})
    for (const auto& c : containers_of(pod, key)) {
      const ResourceList usage = compute_usage(c.requests, c.limits);
      for (const auto& r : required)
        if (!usage.count(r)) missing[r].insert(c.name);
    }
  if (missing.empty()) return {};
  std::vector<std::string> parts;
  for (const auto& [r, names] : missing) parts.push_back(r + " for: " + text::join(names, ","));
  return "must specify " + text::join(parts, "; ");
}

ResourceList hard_of(const json::object& quota, std::string_view where) {
  return list_of_impl(object_at(quota, {where == "status" ? "status" : "spec", "hard"}));
}

std::string key_of(const ResourceType& t, std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}/{}", t.group_resource(), ns, name);
}

}  // namespace

ResourceList resource_list(const json::object* o) { return list_of_impl(o); }
json::object resource_list_json(const ResourceList& l) { return to_json_impl(l); }

ResourceList pod_requests(const json::object& pod, bool overhead) {
  auto as_resources = [](const std::vector<ContainerLists>& cs) {
    std::vector<ContainerResources> out;
    for (const auto& c : cs) out.push_back(ContainerResources{c.requests, {}, c.restartable});
    return out;
  };
  return effective_pod_requests(as_resources(containers_of(pod, "containers")),
                                as_resources(containers_of(pod, "initContainers")),
                                overhead ? list_of_impl(object_at(pod, {"spec", "overhead"})) : ResourceList{});
}
ResourceList pod_limits(const json::object& pod, bool overhead) { return pod_limits_impl(pod, overhead); }

ResourceList quota_usage(const ResourceType& t, const json::object& obj) { return usage_of(evaluator_of(t), t, obj); }

ResourceList pod_quota_usage(const json::object& pod) { return pod_usage(pod); }

// ---- QuotaController -------------------------------------------------------------------------------

QuotaController::QuotaController(Store& store) : store_(store) {
  store_.add_admission([this](AdmissionRequest& r) { admit(r); });
  subscription_ = store_.subscribe([this](const WatchEvent& e) {
    WritingAs as("kube-controller-manager");  // the resourcequota controller
    on_event(e);
  });
}

QuotaController::~QuotaController() { store_.unsubscribe(subscription_); }

void QuotaController::admit(AdmissionRequest& r) {
  // resourcequota/controller.go CheckRequest, quota by quota as the lister gives them.
  if (!r.type || !r.object || r.ns.empty()) return;
  const Evaluator e = evaluator_of(*r.type);
  if (!handles(e, r.operation, r.subresource)) return;
  const auto quotas = store_.list(store_.type("", "resourcequotas"), r.ns).items;
  if (quotas.empty()) return;
  const json::object& obj = *r.object;
  std::vector<std::shared_ptr<const json::object>> interesting;
  for (const auto& q : quotas) {
    const ResourceList hard = hard_of(*q, "status");
    std::vector<std::string> restricted;
    for (const auto& [name, v] : hard)
      if (matches_resource(e, *r.type, name)) restricted.push_back(name);
    if (restricted.empty() || !matches_scopes(e, *q, obj)) continue;
    if (e == Evaluator::Pods)
      if (const auto why = pod_constraints(restricted, obj); !why.empty())
        throw admission_forbidden(r, fmt::format("failed quota: {}: {}", name_of(*q), why));
    const ResourceList used = list_of_impl(object_at(*q, {"status", "used"}));
    for (const auto& name : restricted)
      if (!used.count(name))
        throw admission_forbidden(
            r, fmt::format("status unknown for quota: {}, resources: {}", name_of(*q), text::join(restricted, ",")));
    interesting.push_back(q);
  }
  ResourceList delta = usage_of(e, *r.type, obj);
  std::vector<std::string> negative;
  for (const auto& [k, v] : delta)
    if (v.is_negative()) negative.push_back(k);
  if (!negative.empty())
    throw admission_forbidden(r, fmt::format("quota usage is negative for resource(s): {}", text::join(negative, ",")));
  if (r.operation == AdmissionRequest::Operation::Update && r.old_object) {
    // SubtractWithNonNegativeResult: an update is charged only what it adds.
    const ResourceList prev = usage_of(e, *r.type, *r.old_object);
    for (auto& [k, v] : delta) {
      if (auto it = prev.find(k); it != prev.end()) v -= it->second;
      if (v.is_negative()) v = Quantity{};
    }
  }
  std::erase_if(delta, [](const auto& kv) { return kv.second.is_zero(); });
  if (delta.empty() || interesting.empty()) return;
  const std::string key = key_of(*r.type, r.ns, admission_name(r, false));
  std::lock_guard lk(mu_);
  std::vector<Pending> charges;
  for (const auto& q : interesting) {
    const ResourceList hard = hard_of(*q, "status");
    // What admission sees as used: the quota's status plus what admitted writes not yet stored
    // (or not yet charged to status) add — the real plugin writes status.used before the object.
    ResourceList used = list_of_impl(object_at(*q, {"status", "used"}));
    for (const auto& [k, list] : pending_)
      if (k != key)
        for (const auto& p : list)
          if (p.quota == name_of(*q) && namespace_of(*q) == r.ns) used = add(used, p.delta);
    const ResourceList requested = mask(delta, names_of(hard));
    const ResourceList new_usage = add(used, requested);
    std::vector<std::string> exceeded;
    for (const auto& [k, v] : mask(new_usage, names_of(requested)))
      if (auto h = hard.find(k); h != hard.end() && v > h->second) exceeded.push_back(k);
    if (!exceeded.empty())
      throw admission_forbidden(r, fmt::format("exceeded quota: {}, requested: {}, used: {}, limited: {}", name_of(*q),
                                               pretty(mask(requested, exceeded)), pretty(mask(used, exceeded)),
                                               pretty(mask(hard, exceeded))));
    if (!requested.empty()) charges.push_back({name_of(*q), requested});
  }
  // A dry run charges nothing (controller.go: dry-run requests do not update the quota).
  if (r.options && r.options->dry_run) return;
  if (charges.empty())
    pending_.erase(key);
  else
    pending_[key] = std::move(charges);
}

void QuotaController::on_event(const WatchEvent& e) {
  if (!e.type_info || !e.object) return;
  const ResourceType& t = *e.type_info;
  const std::string ns = namespace_of(*e.object);
  const auto& quota_type = store_.type("", "resourcequotas");
  if (&t == &quota_type) {
    // The controller syncs a quota whose spec.hard is not yet its status.hard (created or changed).
    if (e.type == EventType::Deleted) return;
    const ResourceList spec_hard = hard_of(*e.object, "spec"), status_hard = hard_of(*e.object, "status");
    bool same = spec_hard.size() == status_hard.size();
    for (auto a = spec_hard.begin(), b = status_hard.begin(); same && a != spec_hard.end(); ++a, ++b)
      same = a->first == b->first && a->second == b->second && a->second.to_string() == b->second.to_string();
    if (!same || !object_at(*e.object, {"status", "used"})) recalculate(*e.object);
    if (e.type == EventType::Added) {
      // The admission plugin counted what was there already; the quota's own creation is
      // charged to the namespace's other quotas below.
    } else {
      return;
    }
  }
  const Evaluator ev = evaluator_of(t);
  if (ev == Evaluator::None || ns.empty()) return;
  const std::string key = key_of(t, ns, name_of(*e.object));
  std::vector<Pending> charged;
  {
    std::lock_guard lk(mu_);
    if (auto it = pending_.find(key); it != pending_.end()) {
      charged = std::move(it->second);
      pending_.erase(it);
    }
  }
  // What the admission plugin charged lands in status.used once the object is stored.
  for (const auto& p : charged) {
    WritingAs apiserver("kube-apiserver");  // the admission plugin's own write (its quota accessor)
    try {
      store_.mutate(
          quota_type, ns, p.quota,
          [&](json::object& q) {
            json::object& st = util::ensure_object(q, "status");
            st["used"] = to_json_impl(add(list_of_impl(object_at(q, {"status", "used"})), p.delta));
          },
          {}, "status");
    } catch (const StatusError&) {
      // The quota is gone.
    }
  }
  // Replenishment (pkg/controller/resourcequota/resource_quota_monitor.go): usage released by a
  // deletion, a pod finishing or a service losing its node ports / load balancer resyncs the quotas.
  bool replenish = e.type == EventType::Deleted;
  if (e.type == EventType::Modified && e.old_object) {
    if (ev == Evaluator::Pods) replenish = !pod_finished(*e.old_object) && pod_finished(*e.object);
    if (ev == Evaluator::Services) {
      // install/update_filter.go: GetQuotaServiceType changed (NodePort, LoadBalancer, or neither).
      auto service_quota_type = [](const json::object& s) {
        const std::string type = string_of(object_at(s, {"spec"}), "type");
        return type == "NodePort" || type == "LoadBalancer" ? type : std::string();
      };
      replenish = service_quota_type(*e.old_object) != service_quota_type(*e.object);
    }
  }
  if (!replenish) return;
  for (const auto& q : store_.list(quota_type, ns).items) {
    bool affected = false;
    for (const auto& [name, v] : hard_of(*q, "spec")) affected = affected || matches_resource(ev, t, name);
    if (affected) recalculate(*q);
  }
}

void QuotaController::recalculate(const json::object& quota) {
  // pkg/quota/v1 CalculateUsage: for every evaluator matching a hard resource, the usage of the
  // namespace's objects that match the quota's scopes, masked to those resources; resources no
  // evaluator tracks keep what they had.
  const std::string ns = namespace_of(quota), name = name_of(quota);
  const ResourceList hard = hard_of(quota, "spec");
  ResourceList used = mask(list_of_impl(object_at(quota, {"status", "used"})), names_of(hard));
  for (const auto* t : store_.types()) {
    const Evaluator ev = evaluator_of(*t);
    if (ev == Evaluator::None) continue;
    std::vector<std::string> matched;
    for (const auto& [r, v] : hard)
      if (matches_resource(ev, *t, r)) matched.push_back(r);
    if (matched.empty()) continue;
    ResourceList sum;
    for (const auto& r : matched) sum[r] = Quantity{};
    for (const auto& o : store_.list(*t, ns).items)
      if (matches_scopes(ev, quota, *o)) sum = add(sum, mask(usage_of(ev, *t, *o), matched));
    for (auto& [r, v] : sum) used[r] = v;
  }
  {
    // What admitted writes charged is now counted from the objects themselves.
    std::lock_guard lk(mu_);
    for (auto& kv : pending_) {
      const bool in_ns = kv.first.find("/" + ns + "/") != std::string::npos;
      std::erase_if(kv.second, [&](const Pending& p) { return in_ns && p.quota == name; });
    }
    std::erase_if(pending_, [](const auto& kv) { return kv.second.empty(); });
  }
  try {
    store_.mutate(
        store_.type("", "resourcequotas"), ns, name,
        [&](json::object& q) {
          json::object status{{"hard", to_json_impl(hard_of(q, "spec"))}, {"used", to_json_impl(used)}};
          q["status"] = std::move(status);
        },
        {}, "status");
  } catch (const StatusError&) {
    // Deleted meanwhile.
  }
}

// resourcequota/controller.go prettyPrint: sorted "name=value" joined by ",".
std::string pretty(const ResourceList& m) {
  std::string out;
  for (const auto& [k, v] : m) out += (out.empty() ? "" : ",") + k + "=" + v.to_string();
  return out;
}

}  // namespace gpupool::embedded
