// gpupool/detail/scheduling_internals.hpp — the scheduler's internals that the public API of
// gpupool/scheduling.hpp needs complete but that a user does not read: NodeInfo's cache-line layout
// (with ResourceAmounts and the spread keys' Bloom filter), and the full contract of
// PlacementState's caches. Not a stable interface: use NodeInfo through PlacementState
// (make_node_info, add_pod, remove_pod) and read only its `node`. Included by gpupool/scheduling.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpupool/node.hpp"

namespace gpupool {

/// Amounts by interned resource id (see PlacementState::resource_id): cpu in millicores, the others
/// in units. The first eight resources interned (cpu, memory, ephemeral-storage, pods, then the
/// first four extended resources seen, e.g. nvidia.com/gpu) are held inline: no pointer to chase in
/// the filter loop. Others go to a side vector.
class ResourceAmounts {
 public:
  std::int64_t get(int id) const noexcept {
    if (id < kInline) return core_[static_cast<std::size_t>(id)];
    const auto i = static_cast<std::size_t>(id - kInline);
    return i < extra_.size() ? extra_[i] : 0;
  }
  void add(int id, std::int64_t delta);

 private:
  static constexpr int kInline = 8;
  std::array<std::int64_t, kInline> core_{};
  std::vector<std::int64_t> extra_;
};

/// A few string-keyed entries sorted by key in one vector, read with find(): what placement keeps of
/// a node's labels and allocatable. A std::map spends a tree node (and its allocation) per entry;
/// this holds the entries alone (bench_views kept: the node table of `explain` fell from 3.5 to
/// ~1.8 KB a node with PlacementNode).
template <class V>
class FlatMap {
 public:
  using value_type = std::pair<std::string, V>;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  FlatMap() = default;
  /// Takes the map's entries (already sorted by key).
  FlatMap(std::map<std::string, V>&& m) {  // NOLINT(google-explicit-constructor): a map's compact form
    entries_.reserve(m.size());
    for (auto& [k, v] : m) entries_.emplace_back(k, std::move(v));
  }
  /// Takes entries already sorted by key, each key once.
  static FlatMap from_sorted(std::vector<value_type> entries) {
    FlatMap out;
    out.entries_ = std::move(entries);
    return out;
  }
  const_iterator find(std::string_view key) const {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                               [](const value_type& e, std::string_view k) { return e.first < k; });
    return it != entries_.end() && it->first == key ? it : entries_.end();
  }
  bool contains(std::string_view key) const { return find(key) != end(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  bool operator==(const FlatMap&) const = default;
  /// The same entries as a map (what the embedded scheduler's change check compares).
  friend bool operator==(const FlatMap& a, const std::map<std::string, V>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const value_type& x, const auto& y) {
             return x.first == y.first && x.second == y.second;
           });
  }

 private:
  std::vector<value_type> entries_;
};

/// A node's allocatable as placement reads it: each resource's amount (cpu in millicores, the
/// others in units, rounded up as Quantity::value), sorted by name. Equal to a Node's allocatable
/// when the names and those amounts are (so "1" and "1000m" cpu are equal: placement sees no change).
class PlacementAmounts {
 public:
  PlacementAmounts() = default;
  explicit PlacementAmounts(const std::map<std::string, Quantity>& allocatable);
  /// The amount of `name`; nullopt when the node does not report it.
  std::optional<std::int64_t> find(std::string_view name) const;
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  bool operator==(const PlacementAmounts&) const = default;
  friend bool operator==(const PlacementAmounts& a, const std::map<std::string, Quantity>& b);

 private:
  FlatMap<std::int64_t> entries_;
};

/// What placement reads of a node: its name, labels, taints, unschedulable flag and allocatable
/// (NodeInfo::node). A Node converts to it, dropping the rest (annotations, addresses, conditions,
/// nodeInfo, capacity), so a table of thousands of nodes holds no more than placement needs
/// (explain's node table, the embedded scheduler's cache).
struct PlacementNode {
  std::string name;
  FlatMap<std::string> labels;
  std::vector<Taint> taints;  ///< spec.taints, in order
  bool unschedulable = false;
  PlacementAmounts allocatable;

  PlacementNode() = default;
  PlacementNode(Node node)  // NOLINT(google-explicit-constructor): what placement keeps of a Node
      : name(std::move(node.name)),
        labels(std::move(node.labels)),
        taints(std::move(node.taints)),
        unschedulable(node.unschedulable),
        allocatable(node.allocatable) {}
  bool operator==(const PlacementNode&) const = default;
};

/// A node with what the scheduler precomputes about it. Build with PlacementState::make_node_info
/// (do not modify `node` afterwards: build a new NodeInfo); account bound pods with
/// PlacementState::add_pod/remove_pod (never by writing the fields: place() keeps a copy of them,
/// see PlacementState). The hot fields come first so that filtering a node touches few cache lines.
struct alignas(64) NodeInfo {
  // Cache line 0 holds what every visit reads and what scoring reads; 1-3 the resources.
  /// Unique per make_node_info call (0 for a NodeInfo built by hand). place() caches the verdicts of
  /// the filters that depend only on the node's labels, taints and unschedulable flag under it, so a
  /// NodeInfo whose `node` changed must be rebuilt with make_node_info.
  std::uint64_t serial = 0;
  std::int64_t pod_count = 0;
  std::int64_t nonzero_milli_cpu = 0;  ///< bound pods' non-zero cpu requests (scoring)
  std::int64_t nonzero_memory = 0;     ///< bound pods' non-zero memory requests (scoring)
  /// A 256-bit Bloom filter of the ids in spread_counts (three bits per id, see spread_bits; kept
  /// by add_pod/remove_pod), so that scoring skips the list for the keys a node surely lacks.
  std::array<std::uint64_t, 4> spread_mask{};
  ResourceAmounts allocatable;        ///< status.allocatable
  ResourceAmounts requested;          ///< sum of bound pods' requests
  bool unschedulable = false;         ///< node.unschedulable
  bool has_filtering_taints = false;  ///< a NoSchedule or NoExecute taint
  bool has_prefer_taints = false;     ///< a PreferNoSchedule taint
  /// Bound pods per spread key, as (PlacementState::spread_id(key), count); a short flat list.
  std::vector<std::pair<int, int>> spread_counts;
  /// The node's name, labels, taints, unschedulable and allocatable: what placement reads.
  PlacementNode node;

  /// Bound pods with the spread key `id` (0 when none).
  int spread_count(int id) const noexcept {
    if (id < 0) return 0;
    const std::array<std::uint64_t, 4> bits = spread_bits(id);
    for (std::size_t w = 0; w < 4; ++w)
      if ((spread_mask[w] & bits[w]) != bits[w]) return 0;
    for (const auto& [k, n] : spread_counts)
      if (k == id) return n;
    return 0;
  }
  /// The three bits of spread_mask that stand for the id.
  static std::array<std::uint64_t, 4> spread_bits(int id) noexcept {
    std::uint64_t h = static_cast<std::uint64_t>(id) * 0x9E3779B97F4A7C15ULL;  // Fibonacci hashing
    std::array<std::uint64_t, 4> bits{};
    for (int i = 0; i < 3; ++i, h <<= 8) {              // NOLINT(bugprone-infinite-loop): i and h advance here
      const auto bit = static_cast<unsigned>(h >> 56);  // the top 8 bits: 0..255
      bits[bit / 64] |= std::uint64_t{1} << (bit % 64);
    }
    return bits;
  }
};

// PlacementState (gpupool/scheduling.hpp), its caches in full. It keeps interned resource names, the
// rotating start index and reusable scratch space (so place() allocates nothing per node). It also caches, per distinct
// set of a pod's constraints (tolerations, nodeSelector, required node affinity) and per node serial, the verdicts of
// the filters that do not depend on bound pods (NodeUnschedulable, TaintToleration, NodeAffinity) and the node's
// PreferNoSchedule count: the replicas of a workload share them, so only NodeResourcesFit and scoring run per pod. At
// most 64 constraint sets are kept (least recently used dropped). Per constraint set it also keeps the positions of the
// nodes passing those filters, so place() visits only them (advancing next_start_index exactly as a walk over every
// node would). That index is rebuilt when the span given to place() has another address or size, or when any NodeInfo
// was built (make_node_info, in any state) since; so a span may change only by assigning NodeInfos fresh from
// make_node_info, never by reordering or copying existing ones in place. Spans holding a hand-built NodeInfo (serial 0)
// are walked node by node. That walk reads a compact table of the nodes' resource fields (one cache line per node) and,
// per spread key, the nodes holding its pods, instead of the NodeInfos; add_pod/remove_pod on a node of the span last
// placed on update the table in place. Bound pods must change only through add_pod/remove_pod (of any state): a change
// on any other NodeInfo, or through another state, makes the next place() re-read the span (correct, but one pass over
// every node; so states used side by side, e.g. in two threads, cost each other that pass).

}  // namespace gpupool
