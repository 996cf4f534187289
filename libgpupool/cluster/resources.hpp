// The resource types the facade works with, and the mapping from an object's apiVersion/kind.
#pragma once

#include "gpupool/client.hpp"
#include "gpupool/node.hpp"
#include "gpupool/scheduling.hpp"
#include "gpupool/workload.hpp"

#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpupool::detail {

extern const ResourceRef kPods, kNodes, kPvcs, kServices, kQuotas, kEvents, kDeployments, kReplicaSets, kJobs, kTfJobs,
    kPyTorchJobs, kMpiJobsV1, kMpiJobsV2, kTrainJobs, kJobSets;

/// The resource of a built-in or Kubeflow apiVersion/kind; nullopt for anything else.
std::optional<ResourceRef> known_resource(std::string_view api_version, std::string_view kind);
/// The resource an object of the submission goes to (known kinds, else discovery).
ResourceRef resource_of(const Client& client, const boost::json::object& object);
/// The workload kind's resource (MPIJob at the given API).
ResourceRef workload_resource(WorkloadKind kind, MpiJobApi mpi);

/// A pod template inside a workload object.
struct PodTemplateAt {
  const boost::json::object* tmpl;  ///< {metadata, spec}; for a Pod, the Pod itself
  std::string spec_path;            ///< where its pod spec is: "spec.template.spec", "spec" for a Pod
  std::int64_t pods;                ///< how many pods it makes: replicas / parallelism, else 1
  std::string replica;              ///< the replica type of a Kubeflow replica spec ("Worker"), else ""
};
/// Every pod template of `object`: a Pod's own, spec.template of Deployments and Jobs, the replica
/// specs of the Kubeflow kinds (each "template" under spec whose spec has containers).
std::vector<PodTemplateAt> pod_templates(const boost::json::object& object);

/// The field selector of the pods that count against a node: bound and not finished.
inline constexpr std::string_view kActivePodsSelector = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed";

/// Hands `fn` every node, one at a time as the list arrives (Client::list_stream: each node is
/// decoded once its bytes are in, the body is never held), so a view keeps only what it takes of
/// each. resourceVersion=0: a view may be as stale as the API server's watch cache, which then
/// answers from memory, in one page (computeListLimit ignores a limit at resourceVersion 0).
void for_each_node(const Client& client, const std::function<void(Node&&)>& fn);
/// Hands `fn` the requirements of every pod that counts against a node — bound (spec.nodeName
/// set) and not finished — across the namespaces, or, when the user may not list pods cluster-wide
/// (403), in `own_ns` only; returns false in that case. The server filters with the field selector
/// `spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed`, so pods that cannot matter are
/// never sent. resourceVersion=0, as for the nodes: kube-apiserver serves a paged list (continue)
/// or a consistent one from etcd (storage/cacher/cacher.go shouldDelegateList; consistent reads
/// from the cache need etcd's RequestWatchProgress), at 3× the CPU of one page from its watch
/// cache; the pods are decoded one at a time as the one page arrives, so the client holds one pod
/// and a piece of the body, not the list (bench/README.md, "Session 15, streamed lists").
bool for_each_active_pod(const Client& client, const std::string& own_ns,
                         const std::function<void(PodRequirements&&)>& fn);

/// Small accessors on JSON objects that tolerate missing fields.
std::string str_at(const boost::json::object& o, std::initializer_list<std::string_view> path);
const boost::json::object* obj_at(const boost::json::object& o, std::initializer_list<std::string_view> path);
const boost::json::array* arr_at(const boost::json::object& o, std::initializer_list<std::string_view> path);
/// The status.conditions entry of `type`, or nullptr; whether it is there with status "True".
const boost::json::object* status_condition(const boost::json::object& o, std::string_view type);
bool condition_true(const boost::json::object& o, std::string_view type);
/// An integer field; nullopt when absent or not an integer.
std::optional<std::int64_t> int_at(const boost::json::object& o, std::initializer_list<std::string_view> path);
/// An RFC 3339 timestamp field (metadata.creationTimestamp, ...); nullopt when absent.
std::optional<std::chrono::system_clock::time_point> time_at(const boost::json::object& o,
                                                             std::initializer_list<std::string_view> path);

}  // namespace gpupool::detail
