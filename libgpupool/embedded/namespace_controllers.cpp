#include "embedded/namespace_controllers.hpp"

#include <boost/json.hpp>

#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"

namespace gpupool::embedded {

namespace json = boost::json;
using util::name_of;
using util::namespace_of;
using util::object_at;
using util::string_of;

namespace {

// DefaultServiceAccountsControllerOptions: the one ServiceAccount every namespace gets.
constexpr std::string_view kDefaultServiceAccount = "default";
// rootcacertpublisher: RootCACertConfigMapName, DescriptionAnnotation, Description.
constexpr std::string_view kRootCAConfigMap = "kube-root-ca.crt";
constexpr std::string_view kDescriptionAnnotation = "kubernetes.io/description";
constexpr std::string_view kDescription =
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
    "clusters.";

}  // namespace

NamespaceControllers::NamespaceControllers(Store& store, std::string root_ca_pem)
    : store_(store), root_ca_pem_(std::move(root_ca_pem)) {
  subscription_ = store_.subscribe([this](const WatchEvent& e) {
    WritingAs as("kube-controller-manager");
    on_event(e);
  });
  // The informers' first list: every namespace there already is.
  for (const auto& n : store_.list(store_.type("", "namespaces"), "").items) {
    sync_service_accounts(name_of(*n));
    sync_root_ca(name_of(*n));
  }
}

NamespaceControllers::~NamespaceControllers() { store_.unsubscribe(subscription_); }

void NamespaceControllers::on_event(const WatchEvent& e) {
  if (!e.type_info || !e.object || !e.type_info->group.empty()) return;
  const std::string& r = e.type_info->resource;
  if (r == "namespaces") {
    // Both controllers: namespace added or updated.
    if (e.type == EventType::Deleted) return;
    sync_service_accounts(name_of(*e.object));
    sync_root_ca(name_of(*e.object));
  } else if (r == "serviceaccounts") {
    // serviceAccountDeleted: a deleted ServiceAccount the controller ensures queues its namespace.
    if (e.type == EventType::Deleted && name_of(*e.object) == kDefaultServiceAccount)
      sync_service_accounts(namespace_of(*e.object));
  } else if (r == "configmaps") {
    // configMapDeleted and configMapUpdated of kube-root-ca.crt queue its namespace.
    if (e.type != EventType::Added && name_of(*e.object) == kRootCAConfigMap) sync_root_ca(namespace_of(*e.object));
  }
}

void NamespaceControllers::sync_service_accounts(const std::string& ns) {
  // syncNamespace: nothing for a namespace that is gone or not Active; a create that finds the
  // account there already is fine.
  const auto n = store_.find(store_.type("", "namespaces"), "", ns);
  if (!n || string_of(object_at(*n, {"status"}), "phase") != "Active") return;
  const ResourceType& sa = store_.type("", "serviceaccounts");
  if (store_.find(sa, ns, kDefaultServiceAccount)) return;
  try {
    store_.create_shared(sa, ns, json::object{{"metadata", json::object{{"name", kDefaultServiceAccount}}}});
  } catch (const StatusError&) {}
}

void NamespaceControllers::sync_root_ca(const std::string& ns) {
  if (!store_.find(store_.type("", "namespaces"), "", ns)) return;  // the create's NotFound, ignored there
  const ResourceType& cms = store_.type("", "configmaps");
  const json::object data{{"ca.crt", root_ca_pem_}};
  try {
    const auto cur = store_.find(cms, ns, kRootCAConfigMap);
    if (!cur) {
      store_.create_shared(
          cms, ns,
          json::object{
              {"metadata", json::object{{"name", kRootCAConfigMap},
                                        {"annotations", json::object{{kDescriptionAnnotation, kDescription}}}}},
              {"data", data}});
      return;
    }
    // Up to date: the data exactly, and the annotation set (to anything).
    const json::object* have = object_at(*cur, {"data"});
    if (have && *have == data &&
        !string_of(object_at(*cur, {"metadata", "annotations"}), kDescriptionAnnotation).empty())
      return;
    store_.mutate(cms, ns, std::string(kRootCAConfigMap), [&](json::object& cm) {
      cm["data"] = data;
      util::ensure_object(util::ensure_object(cm, "metadata"), "annotations")[kDescriptionAnnotation] = kDescription;
    });
  } catch (const StatusError&) {}
}

}  // namespace gpupool::embedded
