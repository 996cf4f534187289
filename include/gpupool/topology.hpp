// gpupool/topology.hpp — the nodes of an embedded cluster, described in YAML.
//
// A topology is what `kubectl get nodes` would show on a real cluster: names, roles, labels,
// taints, capacities, InternalIPs, kubelet versions and ages. The embedded cluster creates one Node
// object per entry. Built-in topologies ship inside the library ("seed": the six nodes of Arena's
// toleration walkthrough; "iiis": a university GPU cluster with virtual GPUs and two SSDs per node);
// any other can be loaded from a file. The format (every key but `nodes`, `name` and `internalIP`
// is optional; `defaults` applies to every node that does not set the key itself, labels merge):
//
//   name: seed
//   description: ...
//   profile: iiis                      # the site profile clients of this cluster use (default: generic)
//   defaults:
//     kubeletVersion: v1.12.6-aliyun.1
//     age: 2d22h                       # creationTimestamp = now - age
//     capacity: {cpu: "32", memory: 256Gi, pods: "110"}
//   nodes:
//     - name: cn-beijing.192.168.3.225
//       internalIP: 192.168.3.225
//       roles: [master]                # label node-role.kubernetes.io/master=""
//       taints: ["node-role.kubernetes.io/master:NoSchedule"]   # or {key, value, effect}
//       labels: {disktype: ssd}
//       allocatable: {cpu: 31800m}     # defaults to capacity, key by key
//       unschedulable: false
//   runtimeClasses:                    # node.k8s.io/v1 RuntimeClasses the cluster starts with
//     - name: nvidia                   # as the NVIDIA GPU operator installs it
//       handler: nvidia                # default: the name
//       overhead: {cpu: 100m}          # overhead.podFixed
//       nodeSelector: {nvidia.com/gpu.present: "true"}   # scheduling.nodeSelector
//       tolerations: ["nvidia.com/gpu:NoSchedule"]       # --toleration's forms
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "gpupool/quantity.hpp"
#include "gpupool/taint.hpp"

namespace gpupool {

/// One node of a topology.
struct TopologyNode {
  std::string name;
  std::string internal_ip;
  std::vector<std::string> roles;             ///< "master", "worker", ... (labels are derived)
  std::map<std::string, std::string> labels;  ///< as written, without the derived ones
  std::vector<Taint> taints;
  std::map<std::string, Quantity> capacity;     ///< "cpu", "memory", "pods", "nvidia.com/gpu", ...
  std::map<std::string, Quantity> allocatable;  ///< complete (capacity filled in where unset)
  std::string kubelet_version = "v1.32.0";
  std::chrono::seconds age{0};  ///< how long ago the node joined
  bool unschedulable = false;
  std::string os_image = "Ubuntu 22.04.4 LTS";
  std::string kernel_version = "5.15.0-105-generic";
  std::string container_runtime_version = "containerd://1.7.13";

  /// Every label the kubelet would set: the written ones plus kubernetes.io/hostname, kubernetes.io/os,
  /// kubernetes.io/arch (and their beta.kubernetes.io forms) and node-role.kubernetes.io/<role>="".
  std::map<std::string, std::string> effective_labels() const;

  /// The core/v1 Node object as the kubelet registers it (metadata, spec.taints/unschedulable,
  /// status.capacity/allocatable/addresses/conditions Ready=True/nodeInfo), its creationTimestamp
  /// `now - age` in RFC 3339.
  boost::json::object to_node_object(std::chrono::system_clock::time_point now) const;
};

/// A RuntimeClass of a topology: the embedded cluster creates it at start, so pods naming it are
/// admitted with its overhead, node selector and tolerations (as on a cluster whose GPU operator
/// installed it).
struct TopologyRuntimeClass {
  std::string name;
  std::string handler;                               ///< the runtime handler (a DNS label)
  std::map<std::string, Quantity> overhead;          ///< overhead.podFixed; empty: none
  std::map<std::string, std::string> node_selector;  ///< scheduling.nodeSelector
  std::vector<Toleration> tolerations;               ///< scheduling.tolerations

  /// The node.k8s.io/v1 RuntimeClass object.
  boost::json::object to_object() const;
};

/// A named set of nodes.
struct Topology {
  std::string name;
  std::string description;
  /// The site profile (profile.hpp) a client of a cluster with these nodes uses: the one whose GPU
  /// resource, scheduler and storage the nodes offer. Empty: "generic".
  std::string profile;
  std::vector<TopologyNode> nodes;
  std::vector<TopologyRuntimeClass> runtime_classes;

  /// Parses YAML text; `file` names the source in errors. Throws ConfigError(file, key, message,
  /// line) naming the offending key (e.g. "nodes[2].capacity.cpu") and its 1-based line.
  static Topology parse(std::string_view yaml, std::string_view file = "<topology>");
  /// Reads and parses a file (ConfigError when it cannot be read).
  static Topology load(const std::filesystem::path& path);
  /// A topology shipped with the library ("seed", "iiis"); ConfigError listing the available names
  /// when there is none by that name.
  static Topology builtin(std::string_view name);
  /// Names of the built-in topologies, sorted.
  static std::vector<std::string> builtin_names();
  /// `spec` is a built-in name, or a path to a YAML file (anything containing '/' or ending ".yaml").
  static Topology resolve(std::string_view spec);
};

}  // namespace gpupool
