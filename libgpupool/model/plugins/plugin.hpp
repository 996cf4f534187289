// model/plugins/plugin.hpp — the scheduler's plugin interface (internal to libgpupool).
//
// As kube-scheduler's framework (pkg/scheduler/framework/interface.go: PreFilterPlugin,
// FilterPlugin, ScorePlugin with ScoreExtensions.NormalizeScore), each rule is one plugin in one
// file of this folder: its PreFilter, Filter, rejection reasons, Score and its part of the verdict
// cache's key. registry.cpp lists the built-in plugins once, in the order of kube-scheduler v1.32's
// default profile (pkg/scheduler/apis/config/v1/default_plugins.go); scheduling.cpp runs them
// (findNodesThatPassFilters, prioritizeNodes, selectHost).
//
// Adding a rule: one file here defining a Plugin, and one line in registry.cpp's list (or, from a
// test, a ScopedRegistration). What a plugin declares drives the runtime:
//  - filter_reads()/score_reads() == NodeSpec: the result depends only on the pod's constraints and
//    the node's name, labels, taints and unschedulable flag. place() caches it per node and per
//    constraint set, keyed by every such plugin's shape_key(); so shape_key() must append
//    everything the plugin reads of the pod (it is pure virtual: no plugin can leave it out).
//  - BoundPods: it also reads what is bound to the node; evaluated on every attempt.
//  - kernel(): the indexed walk (place()'s fast path) computes the BoundPods work of the built-in
//    kernels itself from a compact node table; a BoundPods plugin without a kernel makes place()
//    walk node by node instead (same answers, only slower). So no rule can be missed by the cache
//    or the fast path.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpupool/scheduling.hpp"

namespace gpupool::plugins {

inline constexpr std::int64_t kMaxNodeScore = 100;  // framework.MaxNodeScore
// The resource ids every PlacementState interns first (PlacementState::resource_id).
inline constexpr int kCpu = 0, kMemory = 1, kEphemeralStorage = 2, kPods = 3;

/// framework.Code of a Filter rejection. Preemption is tried only on nodes rejected with
/// Unschedulable (preemption.go nodesWherePreemptionMightHelp).
enum class Code : std::uint8_t { Unschedulable, UnschedulableAndUnresolvable };

/// NodeResourcesFit's PreFilter state (computeNodeResourcesFitPreFilterState): the pod's requests,
/// cpu and memory apart. "Skip in case request quantity is zero": such requests are left out of
/// `others` and are kSkip for cpu and memory (never above a node's free amount).
struct FitRequest {
  static constexpr std::int64_t kSkip = std::numeric_limits<std::int64_t>::min();
  std::int64_t cpu = kSkip, memory = kSkip;  // millicores, bytes
  std::span<const std::pair<int, std::int64_t>>
      others;  // ephemeral-storage, scalar resources: (id, amount), ascending id
};

/// What one scheduling attempt computed once about the pod (kube-scheduler's CycleState).
struct Cycle {
  const PodRequirements& pod;
  const PlacementState& state;  ///< resource names (PlacementState::resource_name)
  FitRequest fit;
  std::int64_t nonzero_cpu = 0, nonzero_memory = 0;  ///< non-zero requests (scoring: 100m / 200Mi defaults)
  std::int64_t request_cpu = 0, request_memory = 0;  ///< plain requests (BalancedAllocation)
  int spread = -1;                                   ///< PlacementState::spread_id(pod.spread_key)
};

/// A PreFilter's answer (framework.PreFilterResult and Status).
struct PreFilterResult {
  std::optional<std::set<std::string>> node_names;  ///< only these nodes are filtered; unset: all
  std::string rejection;                            ///< non-empty: the pod is unschedulable, this message
};

/// Which state of a node an extension point reads.
enum class Reads : std::uint8_t {
  Nothing,    ///< the plugin does not implement this extension point
  NodeSpec,   ///< the node's name, labels, taints, unschedulable flag: cached (see shape_key)
  BoundPods,  ///< also the pods bound to it: evaluated on every attempt
};

/// Work the indexed walk (scheduling.cpp) does itself for a BoundPods plugin, from its node table.
enum class Kernel : std::uint8_t { None, FitsRequest, LeastAllocated, BalancedAllocation, SpreadCount };

class Plugin {
 public:
  virtual ~Plugin() = default;
  /// The plugin's name as kube-scheduler names it (pkg/scheduler/framework/plugins/names).
  virtual std::string_view name() const = 0;

  /// PreFilter: may narrow the nodes or reject the pod before any node is filtered.
  virtual PreFilterResult pre_filter(const PodRequirements&) const { return {}; }

  /// Filter: Nothing when the plugin has none.
  virtual Reads filter_reads() const { return Reads::Nothing; }
  /// True when the node passes.
  virtual bool filter(const Cycle&, const NodeInfo&) const { return true; }
  /// Why filter() rejected the node, worded as the plugin words it (off the hot path).
  virtual std::vector<std::string> reasons(const Cycle&, const NodeInfo&) const { return {}; }
  /// The status code of a rejection.
  virtual Code code() const { return Code::UnschedulableAndUnresolvable; }

  /// Appends to `out` everything the NodeSpec filter and score read of the pod (length-prefixed,
  /// see put_key), so that pods with equal keys share cached verdicts. False: this pod's verdicts
  /// are not to be cached (e.g. a pod naming its node). Plugins reading nothing NodeSpec return true.
  virtual bool shape_key(const PodRequirements& pod, std::string& out) const = 0;

  /// Score: weight 0 when the plugin has none (the default profile's weights).
  virtual int weight() const { return 0; }
  virtual Reads score_reads() const { return Reads::Nothing; }
  /// The raw score of a feasible node: never negative (kube-scheduler's scores are 0..MaxNodeScore
  /// after NormalizeScore; a plugin without it returns scores in that range).
  virtual std::int64_t score(const Cycle&, const NodeInfo&) const { return 0; }
  /// NormalizeScore, given the highest raw score over the feasible nodes; the identity when
  /// normalizes() is false.
  virtual bool normalizes() const { return false; }
  virtual std::int64_t normalize(std::int64_t raw, std::int64_t max_raw) const {
    (void)max_raw;
    return raw;
  }

  /// The indexed walk's kernel for the BoundPods filter and score (None: walk node by node).
  virtual Kernel filter_kernel() const { return Kernel::None; }
  virtual Kernel score_kernel() const { return Kernel::None; }
};

/// Appends a length-prefixed string to a shape key, so that distinct constraints never encode alike.
inline void put_key(std::string& out, std::string_view s) {
  const auto n = static_cast<std::uint32_t>(s.size());
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(s);
}

/// The one instance of a built-in plugin (for its file's factory function, listed in registry.cpp).
template <class P>
const Plugin& instance() {
  static const P plugin;
  return plugin;
}

/// The plugins in order and what the runtime derives from their declarations.
struct SchedulerProfile {
  static constexpr std::uint8_t kNone = 0xFF;  ///< "no plugin" in a plugin index
  std::vector<const Plugin*> plugins;          ///< registry order
  std::vector<std::uint8_t> static_filters;    ///< indexes of the NodeSpec filters, in order
  std::vector<std::uint8_t> dynamic_filters;   ///< indexes of the BoundPods filters, in order
  std::vector<std::uint8_t> keyed;             ///< plugins whose shape_key() builds the cache key
  std::vector<std::uint8_t> scorers;           ///< plugins with a weight, in order
  /// The position in `scorers` of the first NodeSpec scorer, whose raw score is cached with the
  /// static verdict (others are computed per attempt); -1 for none.
  int cached_score = -1;
  /// Whether the indexed walk serves this profile: every BoundPods filter is FitsRequest and every
  /// scorer is the cached one or has a kernel (each at most once). Positions in `scorers`, -1 absent:
  bool indexed = false;
  bool fits_request = false;
  int least_allocated = -1, balanced_allocation = -1, spread_count = -1;
  std::uint64_t generation = 0;                           ///< changes with every registration
  std::vector<std::shared_ptr<const Plugin>> registered;  ///< keeps registered plugins alive

  const Plugin* find(std::string_view name) const;
};

/// The current profile: the built-in plugins (registry.cpp), then the registered ones.
std::shared_ptr<const SchedulerProfile> current_profile();
/// Changes whenever the profile does (a cheap check before current_profile()).
std::uint64_t profile_generation() noexcept;

/// Adds a plugin at the end of the profile for the registration's lifetime (e.g. a test's plugin).
class ScopedRegistration {
 public:
  explicit ScopedRegistration(std::unique_ptr<Plugin> plugin);
  ~ScopedRegistration();
  ScopedRegistration(const ScopedRegistration&) = delete;
  ScopedRegistration& operator=(const ScopedRegistration&) = delete;

 private:
  std::shared_ptr<const Plugin> plugin_;
};

}  // namespace gpupool::plugins
