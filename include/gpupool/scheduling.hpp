// gpupool/scheduling.hpp — kube-scheduler's filter and score rules, as pure functions.
//
// One implementation serves both the embedded cluster's scheduler and the client's explain():
//
//   PlacementState state;                          // interned resource names, rotating start index
//   std::vector<NodeInfo> nodes;                   // precomputed once per node
//   for (auto& n : cluster_nodes) nodes.push_back(state.make_node_info(n));
//   PlacementResult r = place(pod, nodes, state);  // pod: PodRequirements::from_pod_json(podJson)
//   if (r.chosen) state.add_pod(nodes[*r.chosen], pod);   // account the binding
//   else event(r.failed_scheduling_message());            // "0/6 nodes are available: ..."
//
// The rules are kube-scheduler's plugins, one source file each (libgpupool/model/plugins/, listed in
// its registry.cpp). Filters (kube-scheduler v1.32 default profile, in its order; a node's verdict
// comes from the first plugin that rejects it): NodeUnschedulable, NodeName, TaintToleration, NodeAffinity
// (nodeSelector + required node affinity, with its PreFilter narrowing to the nodes named by matchFields
// metadata.name), NodeResourcesFit (pods count, cpu, memory, ephemeral-storage and every extended
// resource; zero requests skip). PreFilter only: VolumeBinding (missing, deleting or unbound
// Immediate claims, from PodRequirements::claims). Reasons are worded as the plugins word them.
//
// Scores (the default weights): TaintToleration ×3 (PreferNoSchedule taints not tolerated, normalized
// in reverse), NodeResourcesFit LeastAllocated ×1 (cpu and memory, with the 100m/200Mi non-zero
// defaults), NodeResourcesBalancedAllocation ×1, and PodTopologySpread ×2, a simple spread standing
// in for its system defaults: fewer pods with the same spread_key score higher
// (100 × (max − count) / max). Not modelled: NodePorts, volume filters (node affinity of bound volumes, limits, zones),
// inter-pod affinity, preferred node affinity, image locality, and preemption (no victims are ever found; see
// PlacementResult::failed_scheduling_message).
//
// Tie-breaking is deterministic: among nodes with the highest total score the first one in
// evaluation order wins. Evaluation starts at PlacementState::next_start_index and wraps around, and
// the index advances by the number of nodes processed, as the real scheduler does; so equal nodes
// still take turns. Like the real scheduler, place() stops filtering once numFeasibleNodesToFind
// nodes pass (adaptive percentageOfNodesToScore: max(5, 50 − n/125)% of n, at least 100 nodes).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/json/fwd.hpp>

#include "gpupool/detail/scheduling_internals.hpp"  // NodeInfo
#include "gpupool/error.hpp"                        // ValidationError
#include "gpupool/node.hpp"
#include "gpupool/quantity.hpp"
#include "gpupool/taint.hpp"

namespace gpupool {
namespace detail {
struct PlacementStateAccess;
}

enum class NodeSelectorOperator { In, NotIn, Exists, DoesNotExist, Gt, Lt };
/// "In", "NotIn", ... as core/v1 spells them; parse_node_selector_operator is its inverse (nullopt
/// for any other text, which the API server refuses).
std::string_view to_string(NodeSelectorOperator op) noexcept;
std::optional<NodeSelectorOperator> parse_node_selector_operator(std::string_view text) noexcept;

/// One requirement of a node selector term (core/v1 NodeSelectorRequirement).
struct NodeSelectorRequirement {
  std::string key;
  NodeSelectorOperator op = NodeSelectorOperator::In;
  std::vector<std::string> values;
  bool operator==(const NodeSelectorRequirement&) const = default;
};

/// A term: every match expression (on labels) and every match field (only "metadata.name") must hold.
/// A term with neither matches no node (nodeaffinity.NewNodeSelector drops empty terms).
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;
  bool operator==(const NodeSelectorTerm&) const = default;
};

/// Validates a requirement as the API server does (ValidateNodeSelectorRequirement /
/// ValidateNodeFieldSelectorRequirement): In/NotIn need values, Exists/DoesNotExist none, Gt/Lt
/// exactly one; label keys are qualified names; fields allow only metadata.name with In/NotIn.
/// Throws the first of requirement_errors().
void validate(const NodeSelectorRequirement& r, bool is_field, std::string_view field);
/// Every error of a label requirement, in the API server's order: the operator's rule on values,
/// then each of the key's (a rule starting "Required value" or "Forbidden" is that kind of error;
/// any other is an invalid value). Match fields: validate()'s one error.
std::vector<ValidationError> requirement_errors(const NodeSelectorRequirement& r, std::string_view field);

/// True when the node's labels (and name, for match fields) satisfy the requirement.
bool matches(const NodeSelectorRequirement& r, const Node& node, bool is_field);
bool matches(const NodeSelectorRequirement& r, const PlacementNode& node, bool is_field);
/// True when every requirement of the term holds (false for an empty term).
bool matches(const NodeSelectorTerm& term, const Node& node);
bool matches(const NodeSelectorTerm& term, const PlacementNode& node);

/// Requests and limits of one container.
struct ContainerResources {
  std::map<std::string, Quantity> requests;
  std::map<std::string, Quantity> limits;
  bool restartable = false;  ///< an init container with restartPolicy Always (a sidecar)
};

/// The pod's effective requests as the scheduler computes them (resourcehelper.PodRequests): a limit
/// without a request counts as the request (API defaulting); containers are summed; each init
/// container is max'ed in (sidecars add up and stay running); the overhead is added.
/// With `non_missing_defaults`, a container missing a cpu or memory request counts 100m / 200Mi
/// (the scheduler's non-zero requests used for scoring).
std::map<std::string, Quantity> effective_pod_requests(const std::vector<ContainerResources>& containers,
                                                       const std::vector<ContainerResources>& init_containers = {},
                                                       const std::map<std::string, Quantity>& overhead = {},
                                                       bool non_missing_defaults = false);

/// What the scheduler knows of a PersistentVolumeClaim a pod's volume names (the VolumeBinding
/// plugin's PreFilter reads it). Unknown: not looked up (the claim is not checked).
enum class ClaimStatus { Unknown, Missing, Deleting, Bound, UnboundImmediate, UnboundWaitForFirstConsumer };

struct PodClaim {
  std::string name;  ///< spec.volumes[].persistentVolumeClaim.claimName
  ClaimStatus status = ClaimStatus::Unknown;
  bool operator==(const PodClaim&) const = default;
};

/// What the scheduler needs to know about a pod.
struct PodRequirements {
  std::string name;                          ///< "namespace/name", for messages only
  std::map<std::string, Quantity> requests;  ///< effective requests (see effective_pod_requests)
  /// Non-zero requests used for scoring; when unset, derived from `requests` (cpu or 100m,
  /// memory or 200Mi).
  std::optional<std::int64_t> nonzero_milli_cpu, nonzero_memory;
  std::map<std::string, std::string> node_selector;
  std::vector<NodeSelectorTerm> required_node_affinity;  ///< terms ORed; empty: no requirement
  std::vector<Toleration> tolerations;
  std::string node_name;   ///< spec.nodeName
  std::string spread_key;  ///< pods sharing it are spread (e.g. the owner)
  /// The claims of the pod's volumes, in order. from_pod_json fills the names (status Unknown); a
  /// caller that can read the claims and their StorageClasses sets each status.
  std::vector<PodClaim> claims;

  /// Reads a core/v1 Pod object: containers' and init containers' resources, overhead,
  /// nodeSelector, required node affinity, tolerations, nodeName, the volumes' claims; spread_key is
  /// "<namespace>/<controller kind>/<controller name>" of the controlling ownerReference, or empty.
  /// Throws ValidationError naming the field path for malformed input.
  static PodRequirements from_pod_json(const boost::json::value& pod);
  /// The same, from the Pod object itself (no copy into a json::value).
  static PodRequirements from_pod_json(const boost::json::object& pod);
  /// Reads the items of a PodList's JSON text, one pod at a time as it is parsed (the document is
  /// never held as a tree). Errors as from_pod_json, the field prefixed by "items[<index>].".
  static std::vector<PodRequirements> list_from_json(std::string_view pod_list_json);
  /// The same decoder, handing each pod to `fn` as soon as it is decoded instead of keeping it
  /// (the whole-cluster views keep per-node tallies only). Pods before a bad item were handed over.
  static void for_each_in_list(std::string_view pod_list_json, const std::function<void(PodRequirements&&)>& fn);

  /// The NodeAffinity filter: nodeSelector and required node affinity both hold.
  bool matches_node_affinity(const Node& node) const;
  bool matches_node_affinity(const PlacementNode& node) const;
};

/// PodRequirements::from_pod_json for many pods, most of which share a spec (the replicas of one
/// owner): what it decodes from a pod's spec is remembered, keyed on exactly the members it reads
/// (each container's and init container's resources and restartPolicy, overhead, nodeName,
/// nodeSelector, affinity, tolerations, the volumes' persistentVolumeClaim), and a pod whose
/// members are equal to a remembered pod's (compared in full, not only by hash) gets a copy of its
/// requirements with its own name and spread_key. Same results and errors as from_pod_json. Holds
/// at most `capacity` specs (it forgets them all when full). Not thread-safe.
class PodRequirementsCache {
 public:
  explicit PodRequirementsCache(std::size_t capacity = 4096);
  ~PodRequirementsCache();
  PodRequirementsCache(PodRequirementsCache&&) noexcept;
  PodRequirementsCache& operator=(PodRequirementsCache&&) noexcept;
  PodRequirements read(const boost::json::object& pod);
  std::uint64_t hits() const { return hits_; }
  std::uint64_t misses() const { return misses_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint64_t hits_ = 0, misses_ = 0;
};

// NodeInfo: a node with what the scheduler precomputes about it (gpupool/detail/
// scheduling_internals.hpp holds its layout, tuned for the filter loop). Build one with
// PlacementState::make_node_info, account bound pods with PlacementState::add_pod/remove_pod, and
// read only its `node`.

/// The scheduler's verdict on one node: why it was rejected, or that the pod fits. place() and
/// explain() give one per node (PlacementResult::verdicts), and Cluster::explain() one per node
/// for each pod (PodExplanation::nodes).
struct NodeVerdict {
  std::string node;
  bool fits = false;                  ///< the node passed every filter (a feasible node)
  std::string plugin;                 ///< the rejecting plugin, e.g. "TaintToleration"
  std::vector<std::string> reasons;   ///< worded as the plugin words them
  std::optional<std::int64_t> score;  ///< total weighted score, when feasible nodes were scored
};

/// The outcome of one scheduling attempt.
struct PlacementResult {
  std::optional<std::size_t> chosen;  ///< index into the nodes given to place()
  std::string chosen_node;            ///< its name
  std::size_t num_all_nodes = 0;
  /// Every processed node (all of them when no node fits, or from explain()); only filled by
  /// place() when PlacementState::record_verdicts is set or when no node fits.
  std::vector<NodeVerdict> verdicts;
  /// "<count> <reason>" strings as FitError.Error() sorts them (filled when no node fits).
  std::vector<std::string> filter_reasons;
  std::string prefilter_message;  ///< a PreFilter rejection, e.g. "pod affinity terms conflict"
  /// The FailedScheduling event message as kube-scheduler v1.32 assembles it, e.g.
  /// "0/6 nodes are available: 3 node(s) had untolerated taint {gpu_node: invalid}, ... .
  ///  preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.."
  /// (FitError.Error() wraps the PostFilter message, itself a FitError message ending in ".", in
  /// " %v.", hence the real scheduler's double period.) Preemption is not simulated: nodes
  /// rejected only for resources count as "No preemption victims found for incoming pod".
  /// Empty when a node was chosen; "no nodes available to schedule pods" for an empty cluster.
  std::string failed_scheduling_message() const;
};

/// Scheduler state kept between attempts: interned resource names, the rotating start index and
/// caches (of the filters that do not depend on bound pods, per set of a pod's constraints), so the
/// replicas of a workload cost little more than one pod. Give place() the same span of NodeInfos
/// made by make_node_info, and change bound pods only with add_pod/remove_pod; what invalidates
/// the caches is told in gpupool/detail/scheduling_internals.hpp.
class PlacementState {
 public:
  PlacementState();
  ~PlacementState();
  PlacementState(PlacementState&&) noexcept;
  PlacementState& operator=(PlacementState&&) noexcept;
  /// 0 (default): adaptive, like the scheduler's default; 1..100 a fixed percentage.
  int percentage_of_nodes_to_score = 0;
  /// Fill PlacementResult::verdicts even when a node is chosen (costs allocations).
  bool record_verdicts = false;
  /// Where the next attempt starts evaluating nodes.
  std::size_t next_start_index = 0;

  /// Interns a resource name ("cpu" is 0, "memory" 1, "ephemeral-storage" 2, "pods" 3).
  int resource_id(std::string_view name);
  const std::string& resource_name(int id) const { return names_[static_cast<std::size_t>(id)]; }
  std::size_t resource_count() const noexcept { return names_.size(); }

  /// Interns a spread key (PodRequirements::spread_key); -1 for the empty key.
  int spread_id(std::string_view key);

  NodeInfo make_node_info(Node node);
  /// Adds a bound pod's requests, non-zero requests, count and spread key to the node.
  void add_pod(NodeInfo& node, const PodRequirements& pod);
  void remove_pod(NodeInfo& node, const PodRequirements& pod);

 private:
  friend struct detail::PlacementStateAccess;
  struct Scratch;  // place()'s reusable buffers and caches (model/scheduling.cpp)
  std::vector<std::string> names_;
  std::unordered_map<std::string, int> ids_;
  std::unordered_map<std::string, int> spread_ids_;
  std::unique_ptr<Scratch> scratch_;
};

/// kube-scheduler's numFeasibleNodesToFind: every node below 100; otherwise `percentage`% (0:
/// adaptive max(5, 50 − n/125)) of n, at least 100.
std::size_t num_feasible_nodes_to_find(std::size_t num_all_nodes, int percentage = 0);

/// One scheduling attempt: filter (from state.next_start_index, stopping at
/// numFeasibleNodesToFind), score, choose. Advances state.next_start_index. Does not account the
/// pod on the chosen node: call state.add_pod when it is bound.
PlacementResult place(const PodRequirements& pod, std::span<const NodeInfo> nodes, PlacementState& state);

/// Every node's verdict (all nodes filtered and the feasible ones scored), for "why is my pod
/// pending / where would it land". The first overload takes nodes with their bound pods
/// accounted; the second treats the nodes as empty.
PlacementResult explain(const PodRequirements& pod, std::span<const NodeInfo> nodes, PlacementState& state);
PlacementResult explain(const PodRequirements& pod, std::span<const Node> nodes);

}  // namespace gpupool
