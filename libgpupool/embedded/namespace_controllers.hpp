// embedded/namespace_controllers.hpp — what kube-controller-manager puts in every namespace:
//  - the serviceaccount controller (pkg/controller/serviceaccount/serviceaccounts_controller.go):
//    the ServiceAccount "default" in every Active namespace, created when the namespace is added
//    or changes and again when it is deleted;
//  - the root CA publisher (pkg/controller/certificates/rootcacertpublisher/publisher.go): the
//    ConfigMap "kube-root-ca.crt" holding the cluster's CA (data ca.crt) with the
//    kubernetes.io/description annotation, created with the namespace, created again when deleted,
//    and put back (data and that annotation; other annotations kept) when changed.
// Both write without managedFields entries of their own, as every embedded controller does
// (FIDELITY.md, known difference 14).
#pragma once

#include <cstdint>
#include <string>

namespace gpupool::embedded {

class Store;
struct WatchEvent;

class NamespaceControllers {
 public:
  /// `root_ca_pem`: the CA kube-root-ca.crt publishes (the one that signed the serving certificate).
  NamespaceControllers(Store& store, std::string root_ca_pem);
  ~NamespaceControllers();
  NamespaceControllers(const NamespaceControllers&) = delete;
  NamespaceControllers& operator=(const NamespaceControllers&) = delete;

 private:
  void on_event(const WatchEvent& e);
  void sync_service_accounts(const std::string& ns);
  void sync_root_ca(const std::string& ns);
  Store& store_;
  const std::string root_ca_pem_;
  std::uint64_t subscription_ = 0;
};

}  // namespace gpupool::embedded
