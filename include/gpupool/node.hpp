// gpupool/node.hpp — a cluster node as gpupool sees it, built from a core/v1 Node object.
//
// Holds what `kubectl get nodes -o wide` and the scheduler need: name, labels, taints,
// unschedulable, addresses, the Ready condition, kubelet version, creationTimestamp, capacity and
// allocatable (every resource, e.g. cpu, memory, pods, nvidia.com/gpu, virtaitech.com/gpu).
// The column helpers follow kubectl's printNode (pkg/printers/internalversion/printers.go).
//
// from_json/to_json use Boost.JSON; include <boost/json/object.hpp> or <boost/json/value.hpp>
// where you call them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "gpupool/quantity.hpp"
#include "gpupool/taint.hpp"
#include "gpupool/time.hpp"

namespace gpupool {

/// One entry of status.addresses.
struct NodeAddress {
  std::string type;  ///< "InternalIP", "ExternalIP", "Hostname", ...
  std::string address;
  bool operator==(const NodeAddress&) const = default;
};

struct Node {
  using time_point = std::chrono::sys_seconds;

  std::string name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<Taint> taints;           ///< spec.taints, in order
  bool unschedulable = false;          ///< spec.unschedulable (cordoned)
  std::vector<NodeAddress> addresses;  ///< status.addresses
  /// status of the Ready condition: "True", "False", "Unknown"; empty when the node has none.
  std::string ready_status;
  std::string kubelet_version;                  ///< status.nodeInfo.kubeletVersion
  std::string os_image;                         ///< status.nodeInfo.osImage
  std::string kernel_version;                   ///< status.nodeInfo.kernelVersion
  std::string container_runtime_version;        ///< status.nodeInfo.containerRuntimeVersion
  std::optional<time_point> created;            ///< metadata.creationTimestamp
  std::map<std::string, Quantity> capacity;     ///< status.capacity
  std::map<std::string, Quantity> allocatable;  ///< status.allocatable

  /// Reads a core/v1 Node object. Throws ValidationError naming the field path (e.g.
  /// "status.capacity[cpu]", "spec.taints[1].effect", "metadata.name") for a missing name, a wrong
  /// JSON type, a bad quantity, taint or timestamp. Unknown fields are ignored.
  static Node from_json(const boost::json::value& node);
  /// from_json of a Node object already at hand (no copy of it into a json::value).
  static Node from_json(const boost::json::object& node);
  /// Reads the items of a NodeList's JSON text, decoding each node as soon as it is parsed (the whole
  /// document is never held as a tree: peak memory is the nodes plus one item). Errors as from_json,
  /// with the field prefixed by "items[<index>]."; malformed JSON is a ValidationError on "items".
  static std::vector<Node> list_from_json(std::string_view node_list_json);
  /// The same decoder, handing each node to `fn` as soon as it is decoded instead of keeping it: a
  /// caller that keeps only part of each node (NodeSummary, the scheduler's NodeInfo) holds one
  /// whole Node at a time. Errors as list_from_json; nodes before the bad one were handed over.
  static void for_each_in_list(std::string_view node_list_json, const std::function<void(Node&&)>& fn);
  /// A core/v1 Node object (apiVersion, kind, metadata, spec, status) holding every field above;
  /// from_json(to_json()) gives back an equal Node.
  boost::json::object to_json() const;

  /// The first InternalIP address; "" when there is none (kubectl prints "<none>").
  std::string internal_ip() const;
  /// The first ExternalIP address; "" when there is none.
  std::string external_ip() const;
  /// kubectl's findNodeRoles: `node-role.kubernetes.io/<role>` label keys and the value of a non-empty
  /// legacy `kubernetes.io/role` label, sorted and unique (node_roles of the labels).
  std::vector<std::string> roles() const;
  /// ROLES column: roles joined by ",", or "<none>".
  std::string roles_column() const;
  /// STATUS column: "Ready", "NotReady" (False or Unknown) or "Unknown" (no condition), then
  /// ",SchedulingDisabled" when unschedulable.
  std::string status_column() const;
  /// AGE column: human_duration(now - created), "<unknown>" without a creationTimestamp.
  std::string age(std::chrono::system_clock::time_point now) const;

  bool operator==(const Node&) const = default;
};

/// What the whole-cluster views (`gpupool nodes`, `nodes -o wide`, `top node`; Python
/// Cluster.nodes()) keep of a node: kubectl's columns as they print and the allocatable figures as
/// numbers — a few hundred bytes where a decoded Node with its labels, annotations and quantity maps
/// is several KB (bench_views kept: 425 against 4,563 bytes a node, so 2 MB for 5,000 nodes).
struct NodeSummary {
  using time_point = Node::time_point;

  std::string name;
  std::string status;                 ///< STATUS column (Node::status_column)
  std::string roles;                  ///< ROLES column (Node::roles_column)
  std::string kubelet_version;        ///< VERSION column; "" when unknown
  std::string internal_ip;            ///< the first InternalIP (Node::internal_ip); "" when none
  std::optional<time_point> created;  ///< metadata.creationTimestamp
  std::vector<Taint> taints;          ///< spec.taints, in order
  bool unschedulable = false;         ///< spec.unschedulable (cordoned)
  std::int64_t milli_cpu = 0;         ///< allocatable cpu in millicores (0 when not reported)
  std::int64_t memory = 0;            ///< allocatable memory in bytes (0 when not reported)
  std::int64_t gpus = 0;              ///< allocatable of the GPU resource named to of() (0 when none)

  /// The summary of `node`, with `gpu_resource` (e.g. "nvidia.com/gpu") counted as its GPUs.
  static NodeSummary of(const Node& node, std::string_view gpu_resource);
  /// AGE column, as Node::age.
  std::string age(std::chrono::system_clock::time_point now) const;
  /// TAINTS column of `nodes -o wide`: the taints as key=value:Effect joined by ",", or "<none>".
  std::string taints_column() const;

  bool operator==(const NodeSummary&) const = default;
};

/// kubectl's findNodeRoles over a node's labels (the one home of the ROLES rule, used by Node and
/// by the embedded server's table).
std::vector<std::string> node_roles(const std::map<std::string, std::string>& labels);
/// The ROLES column of those roles: joined by ",", or "<none>".
std::string node_roles_column(const std::vector<std::string>& roles);

}  // namespace gpupool
