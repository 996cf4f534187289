// embedded/validation_networking.hpp — networking.k8s.io/v1 NetworkPolicy, Ingress and IngressClass
// as kube-apiserver v1.32 defaults and validates them (pkg/apis/networking/v1/defaults.go,
// pkg/apis/networking/validation/validation.go, pkg/registry/networking/*/strategy.go). No
// controller acts on them in the embedded cluster, as none does in kube-controller-manager: a
// cluster's network plugin and ingress controller do.
#pragma once

#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "embedded/store.hpp"
#include "gpupool/error.hpp"

namespace gpupool::embedded {

/// Whether `t` is one of the three kinds.
bool is_networking_kind(const ResourceType& t);

/// SetDefaults_NetworkPolicy (policyTypes: Ingress, plus Egress when egress rules are given),
/// SetDefaults_NetworkPolicyPort (protocol TCP), SetDefaults_IngressClass (parameters' scope Cluster).
void default_networking(const ResourceType& t, boost::json::object& obj);

/// The kind's rules after ValidateObjectMeta, in Go's order: ValidateNetworkPolicySpec,
/// ValidateIngressSpec (and, on create, the ingress.class annotation against ingressClassName),
/// validateIngressClassSpec. `old`: the stored object of an update (null on create), whose
/// contents relax some rules (ValidationOptionsForNetworking, allowInvalidSecretName,
/// allowInvalidWildcardHostRule).
void networking_causes(const ResourceType& t, const boost::json::object& obj, const boost::json::object* old,
                       std::vector<StatusCause>& causes);

/// ValidateIngressStatusUpdate's status rules (status.loadBalancer.ingress addresses).
void ingress_status_causes(const boost::json::object& ingress, std::vector<StatusCause>& causes);

/// ingressStrategy.WarningsOnCreate: the deprecated kubernetes.io/ingress.class annotation.
std::vector<std::string> ingress_warnings(const boost::json::object& ingress);

}  // namespace gpupool::embedded
