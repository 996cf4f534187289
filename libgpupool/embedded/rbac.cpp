// The RBAC authorizer (see rbac.hpp).
#include "embedded/rbac.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/builtin_data.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/validation.hpp"

namespace gpupool::embedded {
namespace {

using util::object_at;
using util::string_of;

std::vector<std::string> strings(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const json::value* v = o.if_contains(key); v && v->is_array())
    for (const auto& s : v->as_array())
      if (s.is_string()) out.emplace_back(s.as_string());
  return out;
}
bool has(const std::vector<std::string>& list, std::string_view x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

// pkg/apis/rbac/v1/evaluation_helpers.go: VerbMatches, APIGroupMatches, ResourceMatches,
// ResourceNameMatches, NonResourceURLMatches.
bool rule_allows(const json::object& rule, const AccessAttributes& a) {
  const auto verbs = strings(rule, "verbs");
  if (!has(verbs, "*") && !has(verbs, a.verb)) return false;
  if (!a.resource_request) {
    for (const auto& u : strings(rule, "nonResourceURLs"))
      if (u == "*" || u == a.path || (u.ends_with("*") && a.path.starts_with(u.substr(0, u.size() - 1)))) return true;
    return false;
  }
  const auto groups = strings(rule, "apiGroups");
  if (!has(groups, "*") && !has(groups, a.group)) return false;
  const std::string combined = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
  bool resource_ok = false;
  for (const auto& r : strings(rule, "resources"))
    if (r == "*" || r == combined || (!a.subresource.empty() && r == "*/" + a.subresource)) resource_ok = true;
  if (!resource_ok) return false;
  const auto names = strings(rule, "resourceNames");
  return names.empty() || has(names, a.name);
}

// plugin/pkg/auth/authorizer/rbac/subject_locator.go appliesToUser; the reason's subject text is
// rbac.go describeSubject: `User "bob"`, `Group "g"`, `ServiceAccount "name/namespace"`.
std::string applies_to(const json::object& binding, const AccessAttributes& a, std::string_view binding_ns) {
  if (const json::value* subjects = binding.if_contains("subjects"); subjects && subjects->is_array())
    for (const auto& sv : subjects->as_array()) {
      if (!sv.is_object()) continue;
      const json::object& s = sv.as_object();
      const std::string kind = string_of(&s, "kind"), name = string_of(&s, "name");
      if (kind == "User" && name == a.user) return fmt::format("User \"{}\"", name);
      if (kind == "Group" && has(a.groups, name)) return fmt::format("Group \"{}\"", name);
      if (kind == "ServiceAccount") {
        std::string ns = string_of(&s, "namespace");
        if (ns.empty()) ns = binding_ns;
        if (a.user == fmt::format("system:serviceaccount:{}:{}", ns, name))
          return fmt::format("ServiceAccount \"{}/{}\"", name, ns);
      }
    }
  return {};
}

// The role a binding's roleRef names: a ClusterRole, or a Role of the binding's namespace (a
// ClusterRoleBinding's Role reference names none); null when it is not there.
std::shared_ptr<const json::object> bound_role(const Store& store, const json::object& binding,
                                               std::string_view binding_ns) {
  const json::object* ref = object_at(binding, {"roleRef"});
  const std::string kind = string_of(ref, "kind"), name = string_of(ref, "name");
  if (kind == "ClusterRole") return store.find(store.type("rbac.authorization.k8s.io", "clusterroles"), "", name);
  if (kind == "Role" && !binding_ns.empty())
    return store.find(store.type("rbac.authorization.k8s.io", "roles"), binding_ns, name);
  return nullptr;
}

}  // namespace

bool is_access_review(const ResourceType& t) {
  return t.group == "authorization.k8s.io" &&
         (t.resource == "selfsubjectaccessreviews" || t.resource == "subjectaccessreviews");
}

bool is_rules_review(const ResourceType& t) {
  return t.group == "authorization.k8s.io" && t.resource == "selfsubjectrulesreviews";
}

std::vector<json::object> rbac_rules_for(const Store& store, const AccessAttributes& who, std::string_view ns) {
  std::vector<json::object> out;
  const auto add = [&](const json::object& binding, std::string_view binding_ns) {
    if (applies_to(binding, who, binding_ns).empty()) return;
    const auto role = bound_role(store, binding, binding_ns);
    if (!role) return;
    if (const json::value* rules = role->if_contains("rules"); rules && rules->is_array())
      for (const auto& rule : rules->as_array())
        if (rule.is_object()) out.push_back(rule.as_object());
  };
  for (const auto& b : store.list(store.type("rbac.authorization.k8s.io", "clusterrolebindings"), "").items)
    add(*b, "");
  if (!ns.empty())
    for (const auto& b : store.list(store.type("rbac.authorization.k8s.io", "rolebindings"), ns).items) add(*b, ns);
  return out;
}

bool is_self_subject_review(const ResourceType& t) {
  return t.group == "authentication.k8s.io" && t.resource == "selfsubjectreviews";
}

AccessDecision rbac_authorize(const Store& store, const AccessAttributes& a) {
  // The rules a roleRef names (a missing role grants nothing).
  auto role_allows = [&](const json::object& binding, std::string_view ns) -> std::string {
    const auto role = bound_role(store, binding, ns);
    if (!role) return {};
    const json::object* ref = object_at(binding, {"roleRef"});
    const std::string kind = string_of(ref, "kind"), name = string_of(ref, "name");
    if (const json::value* rules = role->if_contains("rules"); rules && rules->is_array())
      for (const auto& rule : rules->as_array())
        if (rule.is_object() && rule_allows(rule.as_object(), a)) return fmt::format("{} \"{}\"", kind, name);
    return {};
  };
  for (const auto& b : store.list(store.type("rbac.authorization.k8s.io", "clusterrolebindings"), "").items) {
    const std::string who = applies_to(*b, a, "");
    if (who.empty()) continue;
    if (const std::string role = role_allows(*b, ""); !role.empty())
      return {true,
              fmt::format("RBAC: allowed by ClusterRoleBinding \"{}\" of {} to {}", util::name_of(*b), role, who)};
  }
  if (a.resource_request && !a.ns.empty())
    for (const auto& b : store.list(store.type("rbac.authorization.k8s.io", "rolebindings"), a.ns).items) {
      const std::string who = applies_to(*b, a, a.ns);
      if (who.empty()) continue;
      if (const std::string role = role_allows(*b, a.ns); !role.empty())
        return {true,
                fmt::format("RBAC: allowed by RoleBinding \"{}/{}\" of {} to {}", util::name_of(*b), a.ns, role, who)};
    }
  return {};
}

void create_bootstrap_rbac(Store& store) {
  static const json::array objects = [] {
    json::value v = json::parse(detail::builtin_data("rbac/bootstrap.json"));
    return v.is_array() ? std::move(v.as_array()) : json::array{};
  }();
  for (const auto& v : objects) {
    if (!v.is_object()) continue;
    json::object obj = v.as_object();
    const std::string kind = util::string_of(&obj, "kind");
    obj.erase("kind");
    const char* resource = kind == "ClusterRole"          ? "clusterroles"
                           : kind == "ClusterRoleBinding" ? "clusterrolebindings"
                           : kind == "Role"               ? "roles"
                                                          : "rolebindings";
    const ResourceType& t = store.type("rbac.authorization.k8s.io", resource);
    const std::string ns = util::namespace_of(obj), name = util::name_of(obj);
    if (!store.find(t, ns, name)) store.create(t, ns, std::move(obj));
  }
}

ClusterRoleAggregationController::ClusterRoleAggregationController(Store& store) : store_(store) {
  subscription_ = store_.subscribe([this](const WatchEvent& e) {
    // Any ClusterRole added, changed or deleted queues every aggregated one (enqueue()).
    if (e.type_info && e.type_info->group == "rbac.authorization.k8s.io" && e.type_info->resource == "clusterroles")
      sync_all();
  });
  sync_all();  // the informer's first list
}

ClusterRoleAggregationController::~ClusterRoleAggregationController() { store_.unsubscribe(subscription_); }

void ClusterRoleAggregationController::sync_all() {
  const ResourceType& cr = store_.type("rbac.authorization.k8s.io", "clusterroles");
  for (const auto& role : store_.list(cr, "").items)
    if (util::object_at(*role, {"aggregationRule"})) sync(util::name_of(*role));
}

void ClusterRoleAggregationController::sync(const std::string& name) {
  // syncClusterRole: the rules of the roles each selector matches, in name order (the store
  // lists them so), each rule once (ruleExists: semantic equality), the role itself skipped.
  const ResourceType& cr = store_.type("rbac.authorization.k8s.io", "clusterroles");
  const auto role = store_.find(cr, "", name);
  const json::array* selectors = role ? util::array_at(*role, {"aggregationRule"}, "clusterRoleSelectors") : nullptr;
  if (!role || !util::object_at(*role, {"aggregationRule"})) return;
  json::array rules;
  const auto all = store_.list(cr, "").items;
  if (selectors)
    for (const auto& sel : *selectors) {
      if (!sel.is_object()) continue;
      for (const auto& other : all) {
        if (util::name_of(*other) == name ||
            !util::selector_matches(sel.as_object(), util::object_at(*other, {"metadata", "labels"})))
          continue;
        if (const json::array* theirs = util::array_at(*other, {}, "rules"))
          for (const auto& rule : *theirs)
            if (std::none_of(rules.begin(), rules.end(), [&](const json::value& r) { return semantic_equal(r, rule); }))
              rules.push_back(rule);
      }
    }
  const json::value* have = role->if_contains("rules");
  if (semantic_equal(have ? *have : json::value(nullptr), rules)) return;
  try {
    store_.mutate(cr, "", name, [&](json::object& o) { o["rules"] = rules; });
  } catch (const StatusError&) {
    // Gone, or refused: the next change of any ClusterRole tries again.
  }
}

}  // namespace gpupool::embedded
