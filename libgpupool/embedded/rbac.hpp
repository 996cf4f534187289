// embedded/rbac.hpp — the RBAC authorizer over Role, ClusterRole, RoleBinding and
// ClusterRoleBinding objects (plugin/pkg/auth/authorizer/rbac/rbac.go and
// pkg/apis/rbac/v1/evaluation_helpers.go), and the access reviews kubectl auth can-i asks
// (authorization.k8s.io/v1 SelfSubjectAccessReview, SubjectAccessReview).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "embedded/store.hpp"

namespace gpupool::embedded {

/// What a request asks, as authorizer.Attributes: a resource request (verb on group/resource
/// [/subresource] [name] in a namespace or at the cluster scope) or a non-resource one (verb on path).
struct AccessAttributes {
  std::string user;
  std::vector<std::string> groups;
  std::string verb;
  bool resource_request = true;
  std::string group, resource, subresource, ns, name;
  std::string path;  ///< non-resource requests
};

struct AccessDecision {
  bool allowed = false;
  /// RBAC's reason when allowed: `RBAC: allowed by RoleBinding "rb/ns" of Role "r" to User "bob"`.
  std::string reason;
};

/// The RBAC decision: allowed when a ClusterRoleBinding, or a RoleBinding in the request's
/// namespace, binds a subject matching the user (User name, one of its Groups, or the
/// ServiceAccount the name system:serviceaccount:NS:NAME stands for) to a role with a matching rule.
AccessDecision rbac_authorize(const Store& store, const AccessAttributes& a);

/// The access review kinds: create-only resources that are answered, never stored.
bool is_access_review(const ResourceType& t);
/// authorization.k8s.io SelfSubjectRulesReview (`kubectl auth can-i --list`): create-only too.
bool is_rules_review(const ResourceType& t);

/// RBAC's RulesFor (plugin/pkg/auth/authorizer/rbac VisitRulesFor): the rules of every role bound
/// to the subject (`who`'s user and groups) by a ClusterRoleBinding, then by a RoleBinding in `ns`,
/// each PolicyRule as stored. A binding to a role that is not there adds nothing.
std::vector<json::object> rbac_rules_for(const Store& store, const AccessAttributes& who, std::string_view ns);
/// authentication.k8s.io SelfSubjectReview (`kubectl auth whoami`): create-only too, never stored.
bool is_self_subject_review(const ResourceType& t);

/// Creates the RBAC objects kube-apiserver's RBAC post-start hook creates
/// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy; data/rbac/bootstrap.json, recorded from
/// v1.32.13 by tests/fidelity/record_rbac.py) that are absent: cluster-admin, the user-facing
/// admin, edit and view roles and their system:aggregate-to-* parts, the system:* roles of the
/// components and controllers, their bindings, and the kube-system / kube-public Roles.
void create_bootstrap_rbac(Store& store);

/// kube-controller-manager's ClusterRole aggregation controller
/// (pkg/controller/clusterroleaggregation, v1.32): a ClusterRole with an aggregationRule gets the
/// rules of every ClusterRole its clusterRoleSelectors match (by name, each rule once, itself
/// left out), whenever any ClusterRole changes. It writes without a managedFields entry of its
/// own, as every embedded controller (FIDELITY.md 14).
class ClusterRoleAggregationController {
 public:
  explicit ClusterRoleAggregationController(Store& store);
  ~ClusterRoleAggregationController();
  ClusterRoleAggregationController(const ClusterRoleAggregationController&) = delete;
  ClusterRoleAggregationController& operator=(const ClusterRoleAggregationController&) = delete;

 private:
  void sync_all();
  void sync(const std::string& name);
  Store& store_;
  std::uint64_t subscription_ = 0;
};

}  // namespace gpupool::embedded
