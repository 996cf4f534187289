// embedded/quota.hpp — ResourceQuota: the admission plugin and the quota controller, in one place.
//
// Admission (staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go,
// CheckRequest) runs for every create (and, for services and persistentvolumeclaims, update) in a
// namespace with quotas, with the evaluators of pkg/quota/v1/evaluator/core:
//  - pods: pods, count/pods, cpu|memory|ephemeral-storage and requests.*, limits.*, requests.<extended>
//    (requests.nvidia.com/gpu), hugepages-*; scopes Terminating, NotTerminating, BestEffort,
//    NotBestEffort, PriorityClass, CrossNamespacePodAffinity. A quota on limits.cpu/limits.memory/
//    requests.cpu/requests.memory (or cpu/memory) requires every container to set them:
//      pods "x" is forbidden: failed quota: q: must specify limits.cpu for: main; limits.memory for: main
//  - services: services, count/services, services.nodeports, services.loadbalancers;
//  - persistentvolumeclaims: persistentvolumeclaims, count/persistentvolumeclaims, requests.storage,
//    <class>.storageclass.storage.k8s.io/{persistentvolumeclaims,requests.storage};
//  - every other namespaced type: count/<resource>[.<group>] (and the legacy names configmaps,
//    secrets, resourcequotas, replicationcontrollers), on create.
// Over quota: 403 `pods "x" is forbidden: exceeded quota: q, requested: ..., used: ..., limited: ...`.
// "used" is the quota's status.used, which this controller keeps as kube-controller-manager's
// resourcequota controller and the admission plugin's own status writes do together: recomputed
// from the namespace's objects when the quota is created or its spec.hard changes and when usage
// is released (an object deleted, a pod finished: the controller's replenishment); incremented by
// the usage of each admitted object (what admission writes). Events are never counted
// (pkg/quota/v1/install: ignored resources).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "embedded/clock.hpp"
#include "gpupool/quantity.hpp"

namespace gpupool::embedded {

class Store;
struct ResourceType;
struct WatchEvent;
struct AdmissionRequest;
namespace json = boost::json;

using ResourceList = std::map<std::string, Quantity>;

/// The quota usage of one object of type `t` (the evaluator's Usage): for a pod
/// pkg/quota/v1/evaluator/core/pods.go PodUsageFunc — count/pods always, the rest only while the
/// pod is not finished (Succeeded/Failed).
ResourceList quota_usage(const ResourceType& t, const json::object& obj);

/// The quota usage of one pod (quota_usage of a pod).
ResourceList pod_quota_usage(const json::object& pod);

/// A ResourceList (requests, limits, hard, ...) from its JSON object; unparsable entries are left out.
ResourceList resource_list(const json::object* o);
/// "name=value,..." sorted by name, as the quota admission's messages print a ResourceList
/// (resourcequota/controller.go prettyPrint).
std::string pretty(const ResourceList& l);
/// A ResourceList as JSON, each quantity in its canonical text.
json::object resource_list_json(const ResourceList& l);
/// The pod's requests and limits as component-helpers/resource PodRequests/PodLimits aggregate them
/// (containers summed, init containers max'ed in, sidecars added; a limit fills a missing request as
/// API defaulting does). `overhead`: add spec.overhead (to requests, and to limits already set).
ResourceList pod_requests(const json::object& pod, bool overhead = true);
ResourceList pod_limits(const json::object& pod, bool overhead = true);

/// Adds the ResourceQuota admission plugin to the store and keeps quotas' status current.
class QuotaController {
 public:
  explicit QuotaController(Store& store);
  ~QuotaController();
  QuotaController(const QuotaController&) = delete;
  QuotaController& operator=(const QuotaController&) = delete;

 private:
  void admit(AdmissionRequest& r);
  void on_event(const WatchEvent& e);
  /// Recomputes status.hard and status.used of one quota from the namespace's objects.
  void recalculate(const json::object& quota);
  /// Adds `delta` (masked by each quota's hard resources and scopes) to the namespace's quotas.
  void charge(const ResourceType& t, const json::object& obj, const ResourceList& delta);
  Store& store_;
  std::uint64_t subscription_ = 0;
  /// What admission charged to which quota for an object not yet stored (or whose event has not
  /// been delivered yet), by "<group resource>/<namespace>/<name>": counted as used by the next
  /// admissions, moved into status.used by the object's event.
  struct Pending {
    std::string quota;
    ResourceList delta;
  };
  std::mutex mu_;
  std::map<std::string, std::vector<Pending>> pending_;
};

}  // namespace gpupool::embedded
