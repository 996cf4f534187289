// kube-scheduler v1.32 rules used by the embedded scheduler and explain(). Sources (read, not copied):
//  pkg/scheduler/framework/plugins/{nodeunschedulable,nodename,tainttoleration,nodeaffinity,
//  noderesources (fit.go, least_allocated.go, balanced_allocation.go)}, pkg/scheduler/schedule_one.go
//  (numFeasibleNodesToFind, findNodesThatPassFilters, selectHost), framework/types.go
//  (FitError.Error), plugins/defaultpreemption + preemption.go (nodesWherePreemptionMightHelp,
//  SelectVictimsOnNode), component-helpers/scheduling/corev1/nodeaffinity, and
//  component-helpers/resource (PodRequests).
#include "gpupool/scheduling.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <set>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <boost/json.hpp>

#include "gpupool/error.hpp"
#include "gpupool/names.hpp"
#include "model/json_fields.hpp"

namespace gpupool {
namespace json = boost::json;

namespace {

constexpr int kCpu = 0, kMemory = 1, kPods = 3;  // ephemeral-storage is 2
constexpr std::int64_t kMaxNodeScore = 100;
constexpr std::int64_t kDefaultMilliCpuRequest = 100;               // schedutil.DefaultMilliCPURequest
constexpr std::int64_t kDefaultMemoryRequest = 200LL * 1024 * 1024;  // schedutil.DefaultMemoryRequest

// Plugin reasons, worded as the plugins word them.
constexpr std::string_view kReasonUnschedulable = "node(s) were unschedulable";
constexpr std::string_view kReasonNodeName = "node(s) didn't match the requested node name";
constexpr std::string_view kReasonAffinity = "node(s) didn't match Pod's node affinity/selector";
constexpr std::string_view kReasonAffinityPrefilter = "node(s) didn't satisfy plugin(s) [NodeAffinity]";
constexpr std::string_view kReasonAffinityConflict = "pod affinity terms conflict";
constexpr std::string_view kPreemptionNotHelpful = "Preemption is not helpful for scheduling";
constexpr std::string_view kPreemptionNoVictims = "No preemption victims found for incoming pod";

// schedutil.IsScalarResourceName: extended resources, prefixed native resources, hugepages,
// attachable volumes. Other unprefixed names are not scheduled on.
bool is_scalar_resource(std::string_view name) {
  if (name.starts_with("hugepages-") || name.starts_with("attachable-volumes-")) return true;
  return name.find('/') != std::string_view::npos && !name.starts_with("requests.");
}

std::int64_t amount(std::string_view name, const Quantity& q) { return name == "cpu" ? q.milli_value() : q.value(); }

enum class Kind : std::uint8_t { Pass, Unschedulable, NodeName, Taint, Affinity, Resources };

const char* plugin_of(Kind k) {
  switch (k) {
    case Kind::Unschedulable: return "NodeUnschedulable";
    case Kind::NodeName: return "NodeName";
    case Kind::Taint: return "TaintToleration";
    case Kind::Affinity: return "NodeAffinity";
    case Kind::Resources: return "NodeResourcesFit";
    case Kind::Pass: break;
  }
  return "";
}

std::int64_t at(const ResourceAmounts& v, int id) { return v.get(id); }
void add_at(ResourceAmounts& v, int id, std::int64_t d) { v.add(id, d); }

}  // namespace

// ---- node selector -------------------------------------------------------------------------------

void validate(const NodeSelectorRequirement& r, bool is_field, std::string_view field) {
  const std::string f(field);
  using O = NodeSelectorOperator;
  if (is_field) {
    // ValidateNodeFieldSelectorRequirement
    if (r.key != "metadata.name") throw ValidationError(f + ".key", r.key, "not a valid field selector key; supported: \"metadata.name\"");
    if (r.op != O::In && r.op != O::NotIn)
      throw ValidationError(f + ".operator", "", "not a valid selector operator for a field; supported: \"In\", \"NotIn\"");
    if (r.values.size() != 1)
      throw ValidationError(f + ".values", "", "must have one element");
    return;
  }
  if (auto errs = qualified_name_errors(r.key); !errs.empty()) throw ValidationError(f + ".key", r.key, errs.front());
  switch (r.op) {
    case O::In:
    case O::NotIn:
      if (r.values.empty())
        throw ValidationError(f + ".values", "", "Required value: must be specified when `operator` is 'In' or 'NotIn'");
      break;
    case O::Exists:
    case O::DoesNotExist:
      if (!r.values.empty())
        throw ValidationError(f + ".values", r.values.front(),
                              "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
      break;
    case O::Gt:
    case O::Lt:
      // One value; v1.32 does not check that it is an integer (kube-apiserver accepts "abc" and
      // "1-2"): a value that does not parse just never matches (matches() below).
      if (r.values.size() != 1)
        throw ValidationError(f + ".values", "", "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'");
      break;
  }
}

namespace {
bool parse_int64(std::string_view s, std::int64_t& out) {
  if (s.empty()) return false;
  bool neg = false;
  std::size_t i = 0;
  if (s[0] == '-' || s[0] == '+') {
    neg = s[0] == '-';
    i = 1;
  }
  if (i == s.size()) return false;
  std::int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[i] - '0', &v)) return false;
  }
  out = neg ? -v : v;
  return true;
}
}  // namespace

// labels.Requirement.Matches as built by nodeaffinity: In/NotIn/Exists/DoesNotExist/Gt/Lt; Gt and Lt
// need the label to exist and parse as an integer.
bool matches(const NodeSelectorRequirement& r, const Node& node, bool is_field) {
  using O = NodeSelectorOperator;
  const std::string* value = nullptr;
  if (is_field) {
    if (r.key == "metadata.name") value = &node.name;
  } else if (auto it = node.labels.find(r.key); it != node.labels.end()) {
    value = &it->second;
  }
  auto in_values = [&] { return value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end(); };
  switch (r.op) {
    case O::In: return in_values();
    case O::NotIn: return !in_values();
    case O::Exists: return value != nullptr;
    case O::DoesNotExist: return value == nullptr;
    case O::Gt:
    case O::Lt: {
      std::int64_t have = 0, want = 0;
      if (!value || r.values.size() != 1 || !parse_int64(*value, have) || !parse_int64(r.values.front(), want))
        return false;
      return r.op == O::Gt ? have > want : have < want;
    }
  }
  return false;
}

bool matches(const NodeSelectorTerm& term, const Node& node) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  for (const auto& r : term.match_expressions)
    if (!matches(r, node, false)) return false;
  for (const auto& r : term.match_fields)
    if (!matches(r, node, true)) return false;
  return true;
}

bool PodRequirements::matches_node_affinity(const Node& node) const {
  for (const auto& [k, v] : node_selector) {
    auto it = node.labels.find(k);
    if (it == node.labels.end() || it->second != v) return false;
  }
  if (required_node_affinity.empty()) return true;
  return std::any_of(required_node_affinity.begin(), required_node_affinity.end(),
                     [&](const NodeSelectorTerm& t) { return matches(t, node); });
}

// ---- requests ------------------------------------------------------------------------------------

namespace {
using ResourceMap = std::map<std::string, Quantity>;

void add_into(ResourceMap& into, const ResourceMap& from) {
  for (const auto& [k, v] : from) {
    auto [it, inserted] = into.emplace(k, v);
    if (!inserted) it->second += v;
  }
}
void max_into(ResourceMap& into, const ResourceMap& from) {
  for (const auto& [k, v] : from) {
    auto [it, inserted] = into.emplace(k, v);
    if (!inserted && v > it->second) it->second = v;
  }
}
// A container's requests after API defaulting (limits fill missing requests) and, for scoring, the
// scheduler's NonMissingContainerRequests (100m cpu, 200Mi memory).
ResourceMap container_requests(const ContainerResources& c, bool non_missing_defaults) {
  ResourceMap r = c.requests;
  for (const auto& [k, v] : c.limits) r.emplace(k, v);
  if (non_missing_defaults) {
    r.emplace("cpu", Quantity::from_milli(kDefaultMilliCpuRequest));
    r.emplace("memory", Quantity::from_int(kDefaultMemoryRequest, Quantity::Format::BinarySI));
  }
  return r;
}
}  // namespace

std::map<std::string, Quantity> effective_pod_requests(const std::vector<ContainerResources>& containers,
                                                       const std::vector<ContainerResources>& init_containers,
                                                       const std::map<std::string, Quantity>& overhead,
                                                       bool non_missing_defaults) {
  ResourceMap reqs;
  for (const auto& c : containers) add_into(reqs, container_requests(c, non_missing_defaults));
  // Init containers run one at a time, after the restartable (sidecar) ones started before them.
  ResourceMap restartable, init_max;
  for (const auto& c : init_containers) {
    ResourceMap cr = container_requests(c, non_missing_defaults);
    if (c.restartable) {
      add_into(reqs, cr);
      add_into(restartable, cr);
      max_into(init_max, restartable);
    } else {
      ResourceMap tmp = cr;
      add_into(tmp, restartable);
      max_into(init_max, tmp);
    }
  }
  max_into(reqs, init_max);
  add_into(reqs, overhead);
  return reqs;
}

// ---- PodRequirements::from_pod_json ----------------------------------------------------------------

namespace {

using namespace json_fields;

std::vector<ContainerResources> containers_of(const json::object& spec, std::string_view key) {
  std::vector<ContainerResources> out;
  const std::string base = "spec." + std::string(key);
  const json::array* cs = array_at(spec, key, base);
  if (!cs) return out;
  for (std::size_t i = 0; i < cs->size(); ++i) {
    const std::string f = base + "[" + std::to_string(i) + "]";
    const json::object& c = as_object((*cs)[i], f);
    ContainerResources cr;
    if (const json::object* res = object_at(c, "resources", f + ".resources")) {
      cr.requests = quantity_map(object_at(*res, "requests", f + ".resources.requests"), f + ".resources.requests");
      cr.limits = quantity_map(object_at(*res, "limits", f + ".resources.limits"), f + ".resources.limits");
    }
    cr.restartable = string_at(c, "restartPolicy", f + ".restartPolicy") == "Always";
    out.push_back(std::move(cr));
  }
  return out;
}
NodeSelectorOperator selector_op(const std::string& s, const std::string& field) {
  using O = NodeSelectorOperator;
  static const std::pair<std::string_view, O> kOps[] = {{"In", O::In},       {"NotIn", O::NotIn},
                                                        {"Exists", O::Exists}, {"DoesNotExist", O::DoesNotExist},
                                                        {"Gt", O::Gt},       {"Lt", O::Lt}};
  for (const auto& [name, op] : kOps)
    if (s == name) return op;
  throw ValidationError(field, s,
                        "Unsupported value: supported values: \"DoesNotExist\", \"Exists\", \"Gt\", \"In\", \"Lt\", \"NotIn\"");
}
std::vector<NodeSelectorRequirement> requirements(const json::object& term, std::string_view key,
                                                  const std::string& base, bool is_field) {
  std::vector<NodeSelectorRequirement> out;
  const json::array* rs = array_at(term, key, base);
  if (!rs) return out;
  for (std::size_t i = 0; i < rs->size(); ++i) {
    const std::string f = base + "[" + std::to_string(i) + "]";
    const json::object& r = as_object((*rs)[i], f);
    NodeSelectorRequirement req;
    req.key = string_at(r, "key", f + ".key");
    req.op = selector_op(string_at(r, "operator", f + ".operator"), f + ".operator");
    if (const json::array* vs = array_at(r, "values", f + ".values")) {
      for (std::size_t j = 0; j < vs->size(); ++j) {
        if (!(*vs)[j].is_string()) wrong_type(f + ".values[" + std::to_string(j) + "]", (*vs)[j], "a string");
        req.values.emplace_back((*vs)[j].get_string());
      }
    }
    validate(req, is_field, f);
    out.push_back(std::move(req));
  }
  return out;
}

}  // namespace

PodRequirements PodRequirements::from_pod_json(const json::value& pod) { return from_pod_json(as_object(pod, "pod")); }

PodRequirements PodRequirements::from_pod_json(const json::object& root) {
  PodRequirements p;
  std::string ns;
  if (const json::object* meta = object_at(root, "metadata", "metadata")) {
    ns = string_at(*meta, "namespace", "metadata.namespace");
    p.name = (ns.empty() ? std::string() : ns + "/") + string_at(*meta, "name", "metadata.name");
    if (const json::array* owners = array_at(*meta, "ownerReferences", "metadata.ownerReferences")) {
      for (std::size_t i = 0; i < owners->size(); ++i) {
        const std::string f = "metadata.ownerReferences[" + std::to_string(i) + "]";
        const json::object& o = as_object((*owners)[i], f);
        const json::value* controller = o.if_contains("controller");
        if (controller && controller->is_bool() && controller->get_bool())
          p.spread_key = ns + "/" + string_at(o, "kind", f + ".kind") + "/" + string_at(o, "name", f + ".name");
      }
    }
  }
  const json::object* spec = object_at(root, "spec", "spec");
  if (!spec) return p;
  auto containers = containers_of(*spec, "containers");
  auto inits = containers_of(*spec, "initContainers");
  ResourceMap overhead = quantity_map(object_at(*spec, "overhead", "spec.overhead"), "spec.overhead");
  p.requests = effective_pod_requests(containers, inits, overhead);
  ResourceMap nonzero = effective_pod_requests(containers, inits, overhead, true);
  auto cpu = nonzero.find("cpu"), mem = nonzero.find("memory");  // absent only without containers
  p.nonzero_milli_cpu = cpu == nonzero.end() ? 0 : cpu->second.milli_value();
  p.nonzero_memory = mem == nonzero.end() ? 0 : mem->second.value();
  p.node_name = string_at(*spec, "nodeName", "spec.nodeName");
  p.node_selector = string_map(object_at(*spec, "nodeSelector", "spec.nodeSelector"), "spec.nodeSelector");
  if (const json::object* aff = object_at(*spec, "affinity", "spec.affinity")) {
    if (const json::object* na = object_at(*aff, "nodeAffinity", "spec.affinity.nodeAffinity")) {
      const std::string rf = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
      if (const json::object* req = object_at(*na, "requiredDuringSchedulingIgnoredDuringExecution", rf)) {
        if (const json::array* terms = array_at(*req, "nodeSelectorTerms", rf + ".nodeSelectorTerms")) {
          for (std::size_t i = 0; i < terms->size(); ++i) {
            const std::string f = rf + ".nodeSelectorTerms[" + std::to_string(i) + "]";
            const json::object& t = as_object((*terms)[i], f);
            NodeSelectorTerm term;
            term.match_expressions = requirements(t, "matchExpressions", f + ".matchExpressions", false);
            term.match_fields = requirements(t, "matchFields", f + ".matchFields", true);
            p.required_node_affinity.push_back(std::move(term));
          }
        }
      }
    }
  }
  if (const json::array* tols = array_at(*spec, "tolerations", "spec.tolerations")) {
    for (std::size_t i = 0; i < tols->size(); ++i) {
      const std::string f = "spec.tolerations[" + std::to_string(i) + "]";
      const json::object& t = as_object((*tols)[i], f);
      Toleration tol;
      tol.key = string_at(t, "key", f + ".key");
      std::string op = string_at(t, "operator", f + ".operator");
      if (op.empty() || op == "Equal")
        tol.op = TolerationOperator::Equal;
      else if (op == "Exists")
        tol.op = TolerationOperator::Exists;
      else
        throw ValidationError(f + ".operator", op, "Unsupported value: supported values: \"Equal\", \"Exists\"");
      tol.value = string_at(t, "value", f + ".value");
      if (std::string e = string_at(t, "effect", f + ".effect"); !e.empty()) tol.effect = parse_taint_effect(e, f + ".effect");
      if (const json::value* s = t.if_contains("tolerationSeconds"); s && !s->is_null()) {
        if (!s->is_int64() && !s->is_uint64()) wrong_type(f + ".tolerationSeconds", *s, "an integer");
        tol.toleration_seconds = s->to_number<std::int64_t>();
      }
      validate(tol, f);
      p.tolerations.push_back(std::move(tol));
    }
  }
  return p;
}

std::vector<PodRequirements> PodRequirements::list_from_json(std::string_view pod_list_json) {
  std::vector<PodRequirements> out;
  json_fields::for_each_list_item(pod_list_json,
                                  [&](const json::value& item, std::size_t) { out.push_back(from_pod_json(item)); });
  return out;
}

// ---- PlacementState ------------------------------------------------------------------------------

namespace {
// The pod-independent part of a node's verdict for one constraint set: the first rejecting filter
// among NodeUnschedulable, NodeName, TaintToleration and NodeAffinity (Pass when none rejects) and,
// for a node they pass, its count of PreferNoSchedule taints not tolerated (TaintToleration Score).
struct StaticVerdict {
  std::uint64_t serial = 0;  // the NodeInfo::serial this entry was computed for; 0: none yet
  std::int32_t prefer = 0;
  Kind kind = Kind::Pass;
};
// A node that passes a constraint set's static filters: its position in the span and its
// PreferNoSchedule count (the TaintToleration score's input).
struct Passing {
  std::uint32_t pos;
  std::int32_t prefer;
};
struct ShapeVerdicts {
  std::vector<StaticVerdict> by_node;  // by node index in the span given to place()/explain()
  std::uint64_t last_used = 0;
  // The positions (ascending) of the nodes passing the static filters, so that place() walks only
  // those. Valid for the span at `index_data`/`index_size` while no NodeInfo has been built since
  // `index_generation` (next_serial's value when it was built).
  std::vector<Passing> passing;
  bool index_valid = false;
  const void* index_data = nullptr;
  std::size_t index_size = 0;
  std::uint64_t index_generation = 0;
};
// Serials are unique across states and threads, so a cached verdict never outlives its node; the
// counter's value also tells place() whether any NodeInfo was built since an index was.
std::atomic<std::uint64_t> next_serial{1};
constexpr std::size_t kMaxShapes = 64;
// Bumped by every add_pod/remove_pod (any state, any NodeInfo): a HotTable is current only while
// the changes since it was synced are the ones it applied itself.
std::atomic<std::uint64_t> bound_changes{0};

// What the indexed walk reads of a node, one cache line per node: NodeResourcesFit's pods, cpu and
// memory and the inputs of LeastAllocated and BalancedAllocation. NodeInfo is several lines long and
// its hot fields span four of them; 5,000 rows are 320 KB, which stay in the L2 cache between pods.
struct alignas(64) HotRow {
  std::int64_t alloc_cpu, alloc_mem;  // allocatable (millicores, bytes)
  std::int64_t req_cpu, req_mem;      // bound pods' requests
  std::int64_t nz_cpu, nz_mem;        // bound pods' non-zero requests (scoring)
  std::int64_t free_pods;             // allocatable pods - pod count
  std::int64_t unused = 0;
};
static_assert(sizeof(HotRow) == 64);
constexpr int kHotInline = 8;  // resource ids whose free amount the table keeps (ResourceAmounts' inline ones)

// A node holding pods of one spread key: its position and how many.
struct SpreadEntry {
  std::uint32_t pos;
  std::int32_t count;
};

// The hot rows of every node of one span, by position, kept current by add_pod/remove_pod on that
// span's nodes. Valid for the span at `data`/`size` while no NodeInfo was built since `generation`
// and no bound pod changed since `synced` other than through the table's own state.
struct HotTable {
  std::vector<HotRow> rows;
  std::vector<std::array<std::int64_t, kHotInline>> free;  // allocatable - requested per inline id
  // By spread id, the nodes holding its pods, ascending by position: the walk, which visits
  // positions in ascending order (wrapping once), reads a pod's counts by merging, without looking
  // at the nodes' own spread_counts.
  std::vector<std::vector<SpreadEntry>> by_spread;
  const NodeInfo* data = nullptr;
  std::size_t size = 0;
  std::uint64_t generation = 0, synced = 0;
  bool valid = false;

  void fill(std::size_t i, const NodeInfo& n) {
    HotRow& r = rows[i];
    r.alloc_cpu = n.allocatable.get(kCpu);
    r.alloc_mem = n.allocatable.get(kMemory);
    r.req_cpu = n.requested.get(kCpu);
    r.req_mem = n.requested.get(kMemory);
    r.nz_cpu = n.nonzero_milli_cpu;
    r.nz_mem = n.nonzero_memory;
    // fitsRequest: `len(nodeInfo.Pods)+1 > allowedPodNumber` fails, i.e. free_pods < 1.
    if (__builtin_sub_overflow(n.allocatable.get(kPods), n.pod_count, &r.free_pods))
      r.free_pods = std::numeric_limits<std::int64_t>::min();
    for (int id = 0; id < kHotInline; ++id)
      free[i][static_cast<std::size_t>(id)] = n.allocatable.get(id) - n.requested.get(id);
  }
  // Index of `n` in the span, or -1.
  std::ptrdiff_t position(const NodeInfo& n) const {
    const auto p = reinterpret_cast<std::uintptr_t>(&n), b = reinterpret_cast<std::uintptr_t>(data);
    if (!valid || p < b || p >= b + size * sizeof(NodeInfo)) return -1;
    return static_cast<std::ptrdiff_t>((p - b) / sizeof(NodeInfo));
  }
  // Sets node `pos`'s count of spread id `id` (0 removes it).
  void set_spread(int id, std::uint32_t pos, std::int32_t count) {
    if (id < 0) return;
    if (by_spread.size() <= static_cast<std::size_t>(id)) by_spread.resize(static_cast<std::size_t>(id) + 1);
    auto& list = by_spread[static_cast<std::size_t>(id)];
    auto it = std::lower_bound(list.begin(), list.end(), pos, [](const SpreadEntry& e, std::uint32_t p) { return e.pos < p; });
    if (it != list.end() && it->pos == pos) {
      if (count > 0) it->count = count;
      else list.erase(it);
    } else if (count > 0) {
      list.insert(it, SpreadEntry{pos, count});
    }
  }
  // Called after add_pod/remove_pod changed `n` (and its count of spread id `spread`).
  void changed(const NodeInfo& n, int spread) {
    const std::uint64_t before = bound_changes.fetch_add(1, std::memory_order_acq_rel);
    const std::ptrdiff_t i = position(n);
    if (i < 0 || synced != before) return;  // not ours, or already stale: the next place() re-reads
    fill(static_cast<std::size_t>(i), n);
    set_spread(spread, static_cast<std::uint32_t>(i), n.spread_count(spread));
    synced = before + 1;
  }
  bool ensure(std::span<const NodeInfo> nodes) {
    const std::uint64_t generation_now = next_serial.load(std::memory_order_acquire);
    const std::uint64_t changes_now = bound_changes.load(std::memory_order_acquire);
    if (valid && data == nodes.data() && size == nodes.size() && generation == generation_now && synced == changes_now)
      return true;
    if (nodes.size() > std::numeric_limits<std::uint32_t>::max()) return false;
    rows.resize(nodes.size());
    free.resize(nodes.size());
    for (auto& list : by_spread) list.clear();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      fill(i, nodes[i]);
      for (const auto& [id, count] : nodes[i].spread_counts)  // ascending positions: appending keeps the order
        if (id >= 0 && count > 0) {
          if (by_spread.size() <= static_cast<std::size_t>(id)) by_spread.resize(static_cast<std::size_t>(id) + 1);
          by_spread[static_cast<std::size_t>(id)].push_back({static_cast<std::uint32_t>(i), count});
        }
    }
    data = nodes.data();
    size = nodes.size();
    generation = generation_now;
    synced = changes_now;
    valid = true;
    return true;
  }
};

// One feasible node of the indexed walk: its position, PreferNoSchedule count, bound pods with the
// pod's spread key, and LeastAllocated + BalancedAllocation.
struct Candidate {
  std::uint32_t pos;
  std::int32_t prefer;
  std::int32_t same;
  std::int32_t fit_score;
};

// Appends a length-prefixed string, so that distinct constraint sets never encode alike.
void put(std::string& out, std::string_view s) {
  const auto n = static_cast<std::uint32_t>(s.size());
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(s);
}
void put_requirements(std::string& out, const std::vector<NodeSelectorRequirement>& rs) {
  put(out, std::to_string(rs.size()));
  for (const auto& r : rs) {
    put(out, r.key);
    out.push_back(static_cast<char>(r.op));
    put(out, std::to_string(r.values.size()));
    for (const auto& v : r.values) put(out, v);
  }
}
// Everything the cached filters and the PreferNoSchedule count read from the pod (its nodeName is
// not included: pods naming a node are never cached).
void shape_key(const PodRequirements& pod, std::string& out) {
  out.clear();
  put(out, std::to_string(pod.node_selector.size()));
  for (const auto& [k, v] : pod.node_selector) put(out, k), put(out, v);
  put(out, std::to_string(pod.required_node_affinity.size()));
  for (const auto& t : pod.required_node_affinity) put_requirements(out, t.match_expressions), put_requirements(out, t.match_fields);
  put(out, std::to_string(pod.tolerations.size()));
  for (const auto& t : pod.tolerations) {
    put(out, t.key);
    out.push_back(static_cast<char>(t.op));
    put(out, t.value);
    out.push_back(t.effect ? static_cast<char>(1 + static_cast<int>(*t.effect)) : '\0');
  }
}
}  // namespace

struct PlacementState::Scratch {
  std::vector<std::pair<int, std::int64_t>> requests;  // the pod's requests by resource id
  std::vector<std::pair<std::size_t, Kind>> failures;   // processed nodes that failed
  std::vector<std::size_t> feasible;
  std::vector<std::size_t> candidates;  // after the NodeAffinity PreFilter
  std::vector<std::int64_t> taint_counts, spread_counts, totals;
  // Static verdicts per constraint set (see PlacementState).
  std::unordered_map<std::string, ShapeVerdicts> shapes;
  std::string key;
  std::uint64_t tick = 0;
  HotTable hot;                               // the indexed walk's node data (see HotTable)
  std::vector<Candidate> candidates_fast;     // the indexed walk's feasible nodes
  std::vector<std::pair<int, std::int64_t>> extra_requests;  // requests other than cpu and memory
  std::vector<std::int64_t> taint_scores, spread_scores;     // normalized scores by raw count
  std::string name;                           // lookup buffer for resource_id/spread_id

  ShapeVerdicts& shape(const PodRequirements& pod, std::size_t num_nodes) {
    shape_key(pod, key);
    auto it = shapes.find(key);
    if (it == shapes.end()) {
      if (shapes.size() >= kMaxShapes) {
        auto oldest = std::min_element(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
          return a.second.last_used < b.second.last_used;
        });
        shapes.erase(oldest);
      }
      it = shapes.emplace(key, ShapeVerdicts{}).first;
    }
    ShapeVerdicts& v = it->second;
    v.last_used = ++tick;
    if (v.by_node.size() != num_nodes) v.by_node.resize(num_nodes);
    return v;
  }
};

PlacementState::PlacementState() : scratch_(std::make_unique<Scratch>()) {
  for (const char* n : {"cpu", "memory", "ephemeral-storage", "pods"}) resource_id(n);
}
PlacementState::~PlacementState() = default;
PlacementState::PlacementState(PlacementState&&) noexcept = default;
PlacementState& PlacementState::operator=(PlacementState&&) noexcept = default;

int PlacementState::resource_id(std::string_view name) {
  if (!scratch_) scratch_ = std::make_unique<Scratch>();  // a moved-from state
  std::string& buf = scratch_->name;  // reused: no allocation per lookup
  buf.assign(name);
  if (auto it = ids_.find(buf); it != ids_.end()) return it->second;
  int id = static_cast<int>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

void ResourceAmounts::add(int id, std::int64_t delta) {
  if (id < kInline) {
    core_[static_cast<std::size_t>(id)] += delta;
    return;
  }
  const auto i = static_cast<std::size_t>(id - kInline);
  if (i >= extra_.size()) extra_.resize(i + 1, 0);
  extra_[i] += delta;
}

int PlacementState::spread_id(std::string_view key) {
  if (key.empty()) return -1;
  if (!scratch_) scratch_ = std::make_unique<Scratch>();  // a moved-from state
  std::string& buf = scratch_->name;  // reused: no allocation per lookup of a known key
  buf.assign(key);
  if (auto it = spread_ids_.find(buf); it != spread_ids_.end()) return it->second;
  return spread_ids_.emplace(buf, static_cast<int>(spread_ids_.size())).first->second;
}

NodeInfo PlacementState::make_node_info(Node node) {
  NodeInfo info;
  info.serial = next_serial.fetch_add(1, std::memory_order_relaxed);
  info.unschedulable = node.unschedulable;
  for (const auto& t : node.taints) {
    if (t.effect == TaintEffect::PreferNoSchedule)
      info.has_prefer_taints = true;
    else
      info.has_filtering_taints = true;
  }
  for (const auto& [name, q] : node.allocatable) {
    if (name != "cpu" && name != "memory" && name != "ephemeral-storage" && name != "pods" && !is_scalar_resource(name))
      continue;
    add_at(info.allocatable, resource_id(name), amount(name, q));
  }
  info.node = std::move(node);
  return info;
}

namespace {
std::int64_t nonzero_cpu(const PodRequirements& p) {
  if (p.nonzero_milli_cpu) return *p.nonzero_milli_cpu;
  auto it = p.requests.find("cpu");
  return it == p.requests.end() ? kDefaultMilliCpuRequest : it->second.milli_value();
}
std::int64_t nonzero_memory(const PodRequirements& p) {
  if (p.nonzero_memory) return *p.nonzero_memory;
  auto it = p.requests.find("memory");
  return it == p.requests.end() ? kDefaultMemoryRequest : it->second.value();
}
}  // namespace

void PlacementState::add_pod(NodeInfo& node, const PodRequirements& pod) {
  for (const auto& [name, q] : pod.requests)
    if (name == "cpu" || name == "memory" || name == "ephemeral-storage" || is_scalar_resource(name))
      add_at(node.requested, resource_id(name), amount(name, q));
  node.nonzero_milli_cpu += nonzero_cpu(pod);
  node.nonzero_memory += nonzero_memory(pod);
  node.pod_count += 1;
  const int id = spread_id(pod.spread_key);
  if (id >= 0) {
    auto it = std::find_if(node.spread_counts.begin(), node.spread_counts.end(), [&](const auto& e) { return e.first == id; });
    if (it == node.spread_counts.end())
      node.spread_counts.emplace_back(id, 1);
    else
      it->second += 1;
    const auto bits = NodeInfo::spread_bits(id);
    for (std::size_t w = 0; w < 4; ++w) node.spread_mask[w] |= bits[w];
  }
  if (!scratch_) scratch_ = std::make_unique<Scratch>();  // a moved-from state
  scratch_->hot.changed(node, id);
}

void PlacementState::remove_pod(NodeInfo& node, const PodRequirements& pod) {
  for (const auto& [name, q] : pod.requests)
    if (name == "cpu" || name == "memory" || name == "ephemeral-storage" || is_scalar_resource(name))
      add_at(node.requested, resource_id(name), -amount(name, q));
  node.nonzero_milli_cpu -= nonzero_cpu(pod);
  node.nonzero_memory -= nonzero_memory(pod);
  node.pod_count -= 1;
  const int id = spread_id(pod.spread_key);
  if (id >= 0) {
    auto it = std::find_if(node.spread_counts.begin(), node.spread_counts.end(), [&](const auto& e) { return e.first == id; });
    if (it != node.spread_counts.end() && --it->second <= 0) {
      node.spread_counts.erase(it);
      node.spread_mask = {};
      for (const auto& e : node.spread_counts) {
        const auto bits = NodeInfo::spread_bits(e.first);
        for (std::size_t w = 0; w < 4; ++w) node.spread_mask[w] |= bits[w];
      }
    }
  }
  if (!scratch_) scratch_ = std::make_unique<Scratch>();  // a moved-from state
  scratch_->hot.changed(node, id);
}

// numFeasibleNodesToFind (schedule_one.go): minFeasibleNodesToFind = 100,
// minFeasibleNodesPercentageToFind = 5, adaptive percentage 50 - n/125.
std::size_t num_feasible_nodes_to_find(std::size_t num_all_nodes, int percentage) {
  const long long n = static_cast<long long>(num_all_nodes);
  if (n < 100) return num_all_nodes;
  long long pct = percentage;
  if (pct <= 0) pct = std::max<long long>(50 - n / 125, 5);
  if (pct >= 100) return num_all_nodes;
  const long long found = n * pct / 100;
  return static_cast<std::size_t>(std::max<long long>(found, 100));
}

// ---- filters -------------------------------------------------------------------------------------

namespace {

// The filters that read only the pod's constraints and the node's labels, taints, unschedulable flag
// and name, in the profile's order (NodeResourcesFit, which reads bound pods, comes after them).
Kind static_filters(const PodRequirements& pod, bool tolerates_unschedulable, const NodeInfo& n) {
  const Node& node = n.node;
  // NodeUnschedulable: "If pod tolerate unschedulable taint, it's also tolerate node.Spec.Unschedulable".
  if (n.unschedulable && !tolerates_unschedulable) return Kind::Unschedulable;
  // NodeName
  if (!pod.node_name.empty() && pod.node_name != node.name) return Kind::NodeName;
  // TaintToleration: NoSchedule and NoExecute taints must be tolerated.
  if (n.has_filtering_taints) {
    for (const auto& taint : node.taints) {
      if (taint.effect == TaintEffect::PreferNoSchedule) continue;
      if (!tolerated(taint, pod.tolerations)) return Kind::Taint;
    }
  }
  // NodeAffinity
  if ((!pod.node_selector.empty() || !pod.required_node_affinity.empty()) && !pod.matches_node_affinity(node))
    return Kind::Affinity;
  return Kind::Pass;
}

// NodeResourcesFit (fitsRequest).
Kind resources_fit(const std::vector<std::pair<int, std::int64_t>>& requests, bool requests_all_zero,
                   const NodeInfo& n) {
  if (n.pod_count + 1 > at(n.allocatable, kPods)) return Kind::Resources;
  if (!requests_all_zero) {
    for (const auto& [id, want] : requests) {
      if (want <= 0) continue;  // "Skip in case request quantity is zero"
      if (want > at(n.allocatable, id) - at(n.requested, id)) return Kind::Resources;
    }
  }
  return Kind::Pass;
}

// Brings a node's cached static verdict (and PreferNoSchedule count) up to date with its serial.
void refresh(StaticVerdict& v, const PodRequirements& pod, bool tolerates_unschedulable, const NodeInfo& n) {
  if (v.serial == n.serial) return;
  v.kind = static_filters(pod, tolerates_unschedulable, n);
  v.prefer = v.kind == Kind::Pass && n.has_prefer_taints ? count_intolerable_prefer_no_schedule(n.node.taints, pod.tolerations)
                                                          : 0;
  v.serial = n.serial;
}

// Makes the constraint set's index of statically passing nodes current for `nodes`. It is rebuilt
// when the span's address or size differ or any NodeInfo was built since (the span may only change
// through make_node_info, see PlacementState); a rebuild recomputes only the verdicts whose serial
// changed. False when the index cannot serve: a hand-built node (serial 0) or over 2^32 nodes.
bool ensure_index(ShapeVerdicts& c, const PodRequirements& pod, bool tolerates_unschedulable,
                  std::span<const NodeInfo> nodes) {
  const std::uint64_t generation = next_serial.load(std::memory_order_acquire);
  if (c.index_valid && c.index_data == nodes.data() && c.index_size == nodes.size() && c.index_generation == generation)
    return true;
  c.index_valid = false;
  c.passing.clear();
  if (nodes.size() > std::numeric_limits<std::uint32_t>::max()) return false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeInfo& n = nodes[i];
    if (n.serial == 0) return false;
    StaticVerdict& v = c.by_node[i];
    refresh(v, pod, tolerates_unschedulable, n);
    if (v.kind == Kind::Pass) c.passing.push_back({static_cast<std::uint32_t>(i), v.prefer});
  }
  c.index_valid = true;
  c.index_data = nodes.data();
  c.index_size = nodes.size();
  c.index_generation = generation;
  return true;
}

// The reasons a rejecting plugin gives for one node (strings are built only here, off the hot path).
std::vector<std::string> reasons_for(Kind kind, const PodRequirements& pod,
                                     const std::vector<std::pair<int, std::int64_t>>& requests, const NodeInfo& n,
                                     const PlacementState& state) {
  switch (kind) {
    case Kind::Pass: return {};
    case Kind::Unschedulable: return {std::string(kReasonUnschedulable)};
    case Kind::NodeName: return {std::string(kReasonNodeName)};
    case Kind::Affinity: return {std::string(kReasonAffinity)};
    case Kind::Taint: {
      auto t = first_untolerated_filtering_taint(n.node.taints, pod.tolerations);
      return {"node(s) had untolerated taint {" + (t ? t->key + ": " + t->value : std::string(": ")) + "}"};
    }
    case Kind::Resources: {
      std::vector<std::string> out;
      if (n.pod_count + 1 > at(n.allocatable, kPods)) out.emplace_back("Too many pods");
      for (const auto& [id, want] : requests) {
        if (want <= 0) continue;
        if (want > at(n.allocatable, id) - at(n.requested, id)) out.push_back("Insufficient " + state.resource_name(id));
      }
      return out;
    }
  }
  return {};
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::vector<std::string> histogram(const std::map<std::string, int>& counts) {
  std::vector<std::string> out;
  for (const auto& [reason, n] : counts) out.push_back(std::to_string(n) + " " + reason);
  std::sort(out.begin(), out.end());  // sort.Strings: lexicographic, counts included
  return out;
}

// LeastAllocated (least_allocated.go) over cpu and memory, weight 1 each.
std::int64_t least_allocated(std::int64_t req_cpu, std::int64_t alloc_cpu, std::int64_t req_mem, std::int64_t alloc_mem) {
  std::int64_t score = 0, weights = 0;
  auto one = [&](std::int64_t requested, std::int64_t capacity) {
    if (capacity == 0) return;
    score += requested > capacity ? 0 : (capacity - requested) * kMaxNodeScore / capacity;
    weights += 1;
  };
  one(req_cpu, alloc_cpu);
  one(req_mem, alloc_mem);
  // weights is 2 whenever both capacities are set: divide by the constant (same integer result).
  return weights == 2 ? score / 2 : weights == 0 ? 0 : score / weights;
}

// BalancedAllocation (balanced_allocation.go): 1 - std of the requested fractions, ×100.
std::int64_t balanced_allocation(std::int64_t req_cpu, std::int64_t alloc_cpu, std::int64_t req_mem, std::int64_t alloc_mem) {
  double fractions[2];
  int n = 0;
  auto one = [&](std::int64_t requested, std::int64_t capacity) {
    if (capacity == 0) return;
    double f = static_cast<double>(requested) / static_cast<double>(capacity);
    fractions[n++] = f > 1 ? 1 : f;
  };
  one(req_cpu, alloc_cpu);
  one(req_mem, alloc_mem);
  double std_dev = n == 2 ? std::abs((fractions[0] - fractions[1]) / 2) : 0.0;
  return static_cast<std::int64_t>((1 - std_dev) * static_cast<double>(kMaxNodeScore));
}

// The largest capacity for which (capacity - requested) * 100 is exact as a double (below 2^53).
constexpr std::int64_t kExactCapacity = (std::int64_t{1} << 53) / kMaxNodeScore;

// least_allocated and balanced_allocation with the same results, computed with one two-lane
// division each (cpu and memory at once). Both capacities must be set (non-zero).
// LeastAllocated: leastRequestedScore's integer `(capacity - requested) * MaxNodeScore / capacity`
// is the truncated double quotient, corrected down by one where the double rounded up to the next
// integer (exact for numerators below 2^53; larger capacities take the integer division).
// BalancedAllocation: the same IEEE divisions as `float64(requested) / float64(allocable)`, so the
// fractions, std and truncation are bit for bit balancedResourceScorer's.
inline std::int64_t fit_scores(std::int64_t nz_cpu, std::int64_t nz_mem, std::int64_t req_cpu, std::int64_t req_mem,
                               std::int64_t alloc_cpu, std::int64_t alloc_mem) {
  if (alloc_cpu <= 0 || alloc_mem <= 0 || alloc_cpu > kExactCapacity || alloc_mem > kExactCapacity || nz_cpu < 0 ||
      nz_mem < 0)
    return least_allocated(nz_cpu, alloc_cpu, nz_mem, alloc_mem) + balanced_allocation(req_cpu, alloc_cpu, req_mem, alloc_mem);
  // requested > capacity scores 0: a zero numerator.
  const std::int64_t num_cpu = std::max<std::int64_t>(alloc_cpu - nz_cpu, 0) * kMaxNodeScore;
  const std::int64_t num_mem = std::max<std::int64_t>(alloc_mem - nz_mem, 0) * kMaxNodeScore;
#if defined(__SSE2__)
  const __m128d cap = _mm_set_pd(static_cast<double>(alloc_mem), static_cast<double>(alloc_cpu));
  const __m128d q = _mm_div_pd(_mm_set_pd(static_cast<double>(num_mem), static_cast<double>(num_cpu)), cap);
  std::int64_t q_cpu = _mm_cvttsd_si64(q), q_mem = _mm_cvttsd_si64(_mm_unpackhi_pd(q, q));
  __m128d f = _mm_div_pd(_mm_set_pd(static_cast<double>(req_mem), static_cast<double>(req_cpu)), cap);
  f = _mm_min_pd(f, _mm_set1_pd(1.0));  // `if fraction > 1 { fraction = 1 }` (never NaN: capacity != 0)
  const double f_cpu = _mm_cvtsd_f64(f), f_mem = _mm_cvtsd_f64(_mm_unpackhi_pd(f, f));
#else
  std::int64_t q_cpu = static_cast<std::int64_t>(static_cast<double>(num_cpu) / static_cast<double>(alloc_cpu));
  std::int64_t q_mem = static_cast<std::int64_t>(static_cast<double>(num_mem) / static_cast<double>(alloc_mem));
  double f_cpu = static_cast<double>(req_cpu) / static_cast<double>(alloc_cpu);
  double f_mem = static_cast<double>(req_mem) / static_cast<double>(alloc_mem);
  f_cpu = f_cpu > 1 ? 1 : f_cpu;
  f_mem = f_mem > 1 ? 1 : f_mem;
#endif
  q_cpu -= q_cpu * alloc_cpu > num_cpu;
  q_mem -= q_mem * alloc_mem > num_mem;
  const double std_dev = std::abs((f_cpu - f_mem) / 2);
  return (q_cpu + q_mem) / 2 + static_cast<std::int64_t>((1 - std_dev) * static_cast<double>(kMaxNodeScore));
}

// The normalized scores of run()'s final pass for every raw count up to `max`, so that the indexed
// walk's final pass divides nothing: TaintToleration's DefaultNormalizeScore in reverse,
// `maxPriority - maxPriority * count / maxCount`, and the spread's `100 * (max - count) / max`;
// both 100 when max is 0. Empty (the caller divides) above kMaxTable.
constexpr std::int64_t kMaxTable = 4096;
void normalized_table(std::vector<std::int64_t>& out, std::int64_t max, bool reverse) {
  out.clear();
  if (max > kMaxTable) return;
  for (std::int64_t c = 0; c <= max; ++c) {
    if (max == 0) out.push_back(kMaxNodeScore);
    else out.push_back(reverse ? kMaxNodeScore - kMaxNodeScore * c / max : kMaxNodeScore * (max - c) / max);
  }
}

// The pod as the indexed walk reads it. Requests at or below zero are skipped (want = INT64_MIN).
struct IndexedPod {
  std::int64_t want_cpu, want_mem;        // NodeResourcesFit
  std::int64_t nz_cpu, nz_mem;            // LeastAllocated
  std::int64_t req_cpu, req_mem;          // BalancedAllocation
  int spread;                             // spread id, -1 for none
};

// Filters and scores the nodes passing the constraint set's static filters, from `start`, until
// `to_find` fit, reading the hot rows; returns the chosen position (none when no node fits) and
// sets `processed` as the node-by-node walk would. Same choice as that walk: same nodes in the
// same order, same scores, the first of the highest total wins.
std::optional<std::size_t> indexed_walk(const ShapeVerdicts& c, PlacementState::Scratch& s, std::span<const NodeInfo> nodes,
                                        const IndexedPod& p, std::size_t start, std::size_t to_find, std::size_t& processed) {
  const std::vector<Passing>& passing = c.passing;
  const std::size_t m = passing.size();
  if (m == 0) return std::nullopt;
  const HotRow* rows = s.hot.rows.data();
  const auto& free = s.hot.free;
  const auto& extra = s.extra_requests;
  std::vector<Candidate>& out = s.candidates_fast;
  if (out.size() < std::min(to_find, m)) out.resize(std::min(to_find, m));
  std::size_t found = 0;
  std::int64_t max_taint = 0, max_spread = 0;
  const auto first = std::lower_bound(passing.begin(), passing.end(), start,
                                      [](const Passing& e, std::size_t v) { return e.pos < v; });
  std::size_t j = static_cast<std::size_t>(first - passing.begin());
  if (j == m) j = 0;
  // The nodes holding the pod's spread key, merged with the walk by position.
  static const std::vector<SpreadEntry> kNone;
  const std::vector<SpreadEntry>& holders =
      p.spread >= 0 && static_cast<std::size_t>(p.spread) < s.hot.by_spread.size() ? s.hot.by_spread[static_cast<std::size_t>(p.spread)] : kNone;
  std::size_t h = static_cast<std::size_t>(
      std::lower_bound(holders.begin(), holders.end(), passing[j].pos, [](const SpreadEntry& e, std::size_t v) { return e.pos < v; }) -
      holders.begin());
  processed = nodes.size();  // no stop: every node was processed
  for (std::size_t t = 0; t < m; ++t, j = j + 1 == m ? 0 : j + 1) {
    if (j == 0) h = 0;  // wrapped around to the first position
    std::size_t ahead = j + 8;
    if (ahead >= m) ahead = ahead - m < m ? ahead - m : ahead % m;
    __builtin_prefetch(&rows[passing[ahead].pos]);
    const std::size_t pos = passing[j].pos;
    const HotRow& r = rows[pos];
    // NodeResourcesFit (fitsRequest): pods, then each requested resource.
    if (r.free_pods < 1 || p.want_cpu > r.alloc_cpu - r.req_cpu || p.want_mem > r.alloc_mem - r.req_mem) continue;
    bool fits = true;
    for (const auto& [id, want] : extra) {
      const std::int64_t left = id < kHotInline ? free[pos][static_cast<std::size_t>(id)]
                                                : nodes[pos].allocatable.get(id) - nodes[pos].requested.get(id);
      if (want > left) {
        fits = false;
        break;
      }
    }
    if (!fits) continue;
    // A feasible node: its raw scores.
    while (h < holders.size() && holders[h].pos < pos) ++h;
    const std::int64_t same = h < holders.size() && holders[h].pos == pos ? holders[h].count : 0;
    Candidate& e = out[found++];
    e.pos = static_cast<std::uint32_t>(pos);
    e.prefer = passing[j].prefer;
    e.same = static_cast<std::int32_t>(same);
    e.fit_score = static_cast<std::int32_t>(
        fit_scores(r.nz_cpu + p.nz_cpu, r.nz_mem + p.nz_mem, r.req_cpu + p.req_cpu, r.req_mem + p.req_mem, r.alloc_cpu, r.alloc_mem));
    max_taint = std::max<std::int64_t>(max_taint, e.prefer);
    max_spread = std::max(max_spread, same);
    if (found == to_find) {
      // The full walk would stop right after this node: it processed start..pos, wrapping.
      processed = (pos + nodes.size() - start) % nodes.size() + 1;
      break;
    }
  }
  if (found == 0) return std::nullopt;
  // Scoring (a single feasible node is chosen unscored, as schedulePod does; the result is the same).
  // TaintToleration (weight 3, normalized in reverse) and the spread (weight 2), by table.
  normalized_table(s.taint_scores, max_taint, true);
  normalized_table(s.spread_scores, max_spread, false);
  const bool tables = !s.taint_scores.empty() && !s.spread_scores.empty();
  std::size_t best = out[0].pos;
  std::int64_t best_total = std::numeric_limits<std::int64_t>::min();
  for (std::size_t k = 0; k < found; ++k) {
    const Candidate& e = out[k];
    std::int64_t taint, spreading;
    if (tables) {
      taint = s.taint_scores[static_cast<std::size_t>(e.prefer)];
      spreading = s.spread_scores[static_cast<std::size_t>(e.same)];
    } else {
      taint = max_taint == 0 ? kMaxNodeScore : kMaxNodeScore - kMaxNodeScore * e.prefer / max_taint;
      spreading = max_spread == 0 ? kMaxNodeScore : kMaxNodeScore * (max_spread - e.same) / max_spread;
    }
    const std::int64_t total = e.fit_score + 3 * taint + 2 * spreading;
    if (total > best_total) {  // strictly greater: the first in evaluation order wins ties
      best_total = total;
      best = e.pos;
    }
  }
  return best;
}

PlacementResult run(const PodRequirements& pod, std::span<const NodeInfo> nodes, PlacementState& state,
                    bool explain_all) {
  PlacementResult result;
  result.num_all_nodes = nodes.size();
  if (nodes.empty()) return result;
  auto& s = state.scratch();

  // The pod's requests by interned resource id (computeNodeResourcesFitPreFilterState).
  s.requests.clear();
  bool all_zero = true;
  for (const auto& [name, q] : pod.requests) {
    if (name == "pods") continue;
    if (name != "cpu" && name != "memory" && name != "ephemeral-storage" && !is_scalar_resource(name)) continue;
    std::int64_t a = amount(name, q);
    s.requests.emplace_back(state.resource_id(name), a);
    if (a != 0) all_zero = false;
  }
  // fitsRequest checks cpu, memory, ephemeral-storage, then the scalar resources.
  std::sort(s.requests.begin(), s.requests.end());

  // NodeAffinity PreFilter: when every term names nodes with matchFields metadata.name In, only
  // those nodes are candidates; others are "node(s) didn't satisfy plugin(s) [NodeAffinity]".
  std::optional<std::set<std::string>> named;
  for (const auto& term : pod.required_node_affinity) {
    std::optional<std::set<std::string>> term_names;
    for (const auto& r : term.match_fields) {
      if (r.key != "metadata.name" || r.op != NodeSelectorOperator::In) continue;
      std::set<std::string> vs(r.values.begin(), r.values.end());
      if (!term_names) {
        term_names = std::move(vs);
      } else {
        std::set<std::string> both;
        std::set_intersection(term_names->begin(), term_names->end(), vs.begin(), vs.end(),
                              std::inserter(both, both.begin()));
        term_names = std::move(both);
      }
    }
    if (!term_names) {
      named.reset();
      break;
    }
    if (!named) named.emplace();
    named->insert(term_names->begin(), term_names->end());
  }
  if (named && named->empty()) {
    result.prefilter_message = std::string(kReasonAffinityConflict);
    return result;
  }
  s.candidates.clear();
  if (named) {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (named->count(nodes[i].node.name)) s.candidates.push_back(i);
  }
  const bool narrowed = named.has_value();
  const std::size_t num_candidates = narrowed ? s.candidates.size() : nodes.size();
  const std::size_t absent = nodes.size() - num_candidates;

  // findNodesThatPassFilters: start at next_start_index, stop after numNodesToFind feasible nodes.
  const std::size_t to_find =
      explain_all ? num_candidates : num_feasible_nodes_to_find(num_candidates, state.percentage_of_nodes_to_score);
  s.feasible.clear();
  s.failures.clear();
  s.taint_counts.clear();
  s.spread_counts.clear();
  s.totals.clear();
  // Raw scores are computed as soon as a node passes, while its data is in cache.
  const std::int64_t pod_cpu = nonzero_cpu(pod), pod_mem = nonzero_memory(pod);
  const int spread = state.spread_id(pod.spread_key);
  std::int64_t pod_req_cpu = 0, pod_req_mem = 0;
  if (auto it = pod.requests.find("cpu"); it != pod.requests.end()) pod_req_cpu = it->second.milli_value();
  if (auto it = pod.requests.find("memory"); it != pod.requests.end()) pod_req_mem = it->second.value();
  std::int64_t max_taint = 0, max_spread = 0;
  std::size_t processed = 0;
  static const Taint kUnschedulable{"node.kubernetes.io/unschedulable", "", TaintEffect::NoSchedule};
  const bool tolerates_unschedulable = tolerated(kUnschedulable, pod.tolerations);
  // Pods naming a node (spec.nodeName, or matchFields narrowing) would each make their own constraint
  // set; they are filtered directly.
  ShapeVerdicts* cache = pod.node_name.empty() && !narrowed ? &s.shape(pod, nodes.size()) : nullptr;
  const std::size_t start = num_candidates ? state.next_start_index % num_candidates : 0;
  // The fields before `node` are what filtering and scoring read.
  const std::ptrdiff_t hot_bytes =
      reinterpret_cast<const char*>(&nodes[0].node) - reinterpret_cast<const char*>(&nodes[0]);
  // (start + k) % num_candidates without a division per node: k is below 2 * num_candidates except
  // for tiny clusters.
  auto wrap = [num_candidates](std::size_t p) {
    return p < num_candidates ? p : p - num_candidates < num_candidates ? p - num_candidates : p % num_candidates;
  };
  // The Bloom bits of the pod's spread key, once (NodeInfo::spread_count would hash it per node).
  const std::array<std::uint64_t, 4> spread_bits = NodeInfo::spread_bits(std::max(spread, 0));
  // A feasible node: its raw scores, computed while its data is in cache.
  auto accept = [&](std::size_t idx, const NodeInfo& n, std::int64_t taint) {
    s.feasible.push_back(idx);
    bool maybe_same = spread >= 0;
    for (std::size_t w = 0; w < 4; ++w) maybe_same = maybe_same && (n.spread_mask[w] & spread_bits[w]) == spread_bits[w];
    const std::int64_t same = maybe_same ? n.spread_count(spread) : 0;
    max_taint = std::max(max_taint, taint);
    max_spread = std::max(max_spread, same);
    s.taint_counts.push_back(taint);
    s.spread_counts.push_back(same);
    const std::int64_t alloc_cpu = at(n.allocatable, kCpu), alloc_mem = at(n.allocatable, kMemory);
    s.totals.push_back(
        least_allocated(n.nonzero_milli_cpu + pod_cpu, alloc_cpu, n.nonzero_memory + pod_mem, alloc_mem) +
        balanced_allocation(at(n.requested, kCpu) + pod_req_cpu, alloc_cpu, at(n.requested, kMemory) + pod_req_mem,
                            alloc_mem));
  };
  // The indexed walk: only the nodes passing the static filters are visited, in the order the full
  // walk below would reach them, and `processed` counts every node the full walk would have
  // processed (the statically rejected ones in between included), because findNodesThatPassFilters
  // advances by all of them: `sched.nextStartNodeIndex = (sched.nextStartNodeIndex + processedNodes)
  // % len(allNodes)` (pkg/scheduler/schedule_one.go), processedNodes = feasible + failed. It serves
  // place() when no per-node verdict is to be reported; when no node passes, the full walk runs
  // instead, for the reasons of every node. It reads the nodes' hot rows (HotTable), not the
  // NodeInfos, and computes the same scores with fewer divisions (see indexed_walk).
  if (cache && !explain_all && !state.record_verdicts && ensure_index(*cache, pod, tolerates_unschedulable, nodes) &&
      s.hot.ensure(nodes)) {
    IndexedPod p;
    p.want_cpu = p.want_mem = std::numeric_limits<std::int64_t>::min();
    s.extra_requests.clear();
    for (const auto& [id, want] : s.requests) {
      if (want <= 0) continue;  // "Skip in case request quantity is zero"
      if (id == kCpu) p.want_cpu = want;
      else if (id == kMemory) p.want_mem = want;
      else s.extra_requests.emplace_back(id, want);
    }
    p.nz_cpu = pod_cpu;
    p.nz_mem = pod_mem;
    p.req_cpu = pod_req_cpu;
    p.req_mem = pod_req_mem;
    p.spread = spread;
    if (const auto chosen = indexed_walk(*cache, s, nodes, p, start, to_find, processed)) {
      state.next_start_index = (state.next_start_index + processed) % nodes.size();
      result.chosen = *chosen;
      result.chosen_node = nodes[*chosen].node.name;
      return result;
    }
    processed = 0;
  }
  const bool walked = false;
  std::size_t pos = start;
  for (std::size_t i = 0; !walked && i < num_candidates && s.feasible.size() < to_find; ++i, pos = wrap(pos + 1)) {
    std::size_t idx = narrowed ? s.candidates[pos] : pos;
    if (!narrowed) {
      // The nodes are visited in order: fetch a node's cached verdict 16 steps ahead and, 8 steps
      // ahead, its first line, or all its hot lines when the verdict says the filters will read them.
      const std::size_t ahead8 = wrap(pos + 8);
      const char* ahead = reinterpret_cast<const char*>(&nodes[ahead8]);
      if (cache) {
        __builtin_prefetch(&cache->by_node[wrap(pos + 16)]);
        __builtin_prefetch(ahead);
        if (cache->by_node[ahead8].kind == Kind::Pass)
          for (std::ptrdiff_t line = 64; line < hot_bytes; line += 64) __builtin_prefetch(ahead + line);
      } else {
        for (std::ptrdiff_t line = 0; line < hot_bytes; line += 64) __builtin_prefetch(ahead + line);
      }
    }
    const NodeInfo& n = nodes[idx];
    ++processed;
    Kind k;
    std::int64_t taint = 0;
    if (cache && n.serial != 0) {
      StaticVerdict& v = cache->by_node[idx];
      refresh(v, pod, tolerates_unschedulable, n);
      k = v.kind;
      taint = v.prefer;
    } else {
      k = static_filters(pod, tolerates_unschedulable, n);
      if (k == Kind::Pass && n.has_prefer_taints) taint = count_intolerable_prefer_no_schedule(n.node.taints, pod.tolerations);
    }
    if (k == Kind::Pass) k = resources_fit(s.requests, all_zero, n);
    if (k != Kind::Pass) {
      s.failures.emplace_back(idx, k);
      continue;
    }
    accept(idx, n, taint);
  }
  state.next_start_index = nodes.empty() ? 0 : (state.next_start_index + processed) % nodes.size();

  const bool record = explain_all || state.record_verdicts || s.feasible.empty();
  if (record) {
    for (const auto& [idx, kind] : s.failures) {
      NodeVerdict v;
      v.node = nodes[idx].node.name;
      v.plugin = plugin_of(kind);
      v.reasons = reasons_for(kind, pod, s.requests, nodes[idx], state);
      result.verdicts.push_back(std::move(v));
    }
    if (explain_all && narrowed) {
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (named->count(nodes[i].node.name)) continue;
        result.verdicts.push_back({nodes[i].node.name, false, "NodeAffinity", {std::string(kReasonAffinityPrefilter)}, {}});
      }
    }
  }

  if (s.feasible.empty()) {
    std::map<std::string, int> counts;
    for (const auto& v : result.verdicts)
      for (const auto& r : v.reasons) counts[r] += 1;
    // Nodes the PreFilter left out carry its absent-nodes status (explain() already listed them).
    if (absent && !explain_all) counts[std::string(kReasonAffinityPrefilter)] += static_cast<int>(absent);
    result.filter_reasons = histogram(counts);
    return result;
  }

  // Scoring (skipped with a single feasible node, as schedulePod does).
  std::size_t best = s.feasible.front();
  if (s.feasible.size() > 1 || explain_all) {
    const std::size_t m = s.feasible.size();
    std::int64_t best_total = std::numeric_limits<std::int64_t>::min();
    for (std::size_t j = 0; j < m; ++j) {
      // DefaultNormalizeScore(MaxNodeScore, reverse=true) for TaintToleration, weight 3.
      std::int64_t taint = max_taint == 0 ? kMaxNodeScore : kMaxNodeScore - kMaxNodeScore * s.taint_counts[j] / max_taint;
      std::int64_t spreading = max_spread == 0 ? kMaxNodeScore : kMaxNodeScore * (max_spread - s.spread_counts[j]) / max_spread;
      s.totals[j] += 3 * taint + 2 * spreading;
      if (s.totals[j] > best_total) {  // strictly greater: the first in evaluation order wins ties
        best_total = s.totals[j];
        best = s.feasible[j];
      }
    }
    if (record) {
      for (std::size_t j = 0; j < m; ++j)
        result.verdicts.push_back({nodes[s.feasible[j]].node.name, true, "", {}, s.totals[j]});
    }
  } else if (record) {
    result.verdicts.push_back({nodes[best].node.name, true, "", {}, std::nullopt});
  }
  result.chosen = best;
  result.chosen_node = nodes[best].node.name;
  return result;
}

}  // namespace

std::string PlacementResult::failed_scheduling_message() const {
  if (chosen) return {};
  if (num_all_nodes == 0) return "no nodes available to schedule pods";  // ErrNoNodesAvailable
  const std::string head = "0/" + std::to_string(num_all_nodes) + " nodes are available:";
  std::string msg = head;
  std::map<std::string, int> preemption;
  if (!prefilter_message.empty()) {
    msg += " " + prefilter_message + ".";
    preemption[std::string(kPreemptionNotHelpful)] = static_cast<int>(num_all_nodes);
  } else {
    if (!filter_reasons.empty()) msg += " " + join(filter_reasons, ", ") + ".";
    // nodesWherePreemptionMightHelp: only NodeResourcesFit answers Unschedulable (the other filters
    // answer UnschedulableAndUnresolvable), so only nodes it rejected are tried,
    // and without lower-priority pods there are no victims on them.
    int resolvable_nodes = 0;
    for (const auto& v : verdicts)
      if (!v.feasible && v.plugin == "NodeResourcesFit") ++resolvable_nodes;
    if (resolvable_nodes) preemption[std::string(kPreemptionNoVictims)] = resolvable_nodes;
    if (num_all_nodes > static_cast<std::size_t>(resolvable_nodes))
      preemption[std::string(kPreemptionNotHelpful)] = static_cast<int>(num_all_nodes) - resolvable_nodes;
  }
  // FitError.Error (framework/types.go, v1.32) appends the PostFilter message with " %v": the
  // preemption message's own period ends it (older releases added another, "scheduling..").
  msg += " preemption: " + head + " " + join(histogram(preemption), ", ") + ".";
  return msg;
}

PlacementResult place(const PodRequirements& pod, std::span<const NodeInfo> nodes, PlacementState& state) {
  return run(pod, nodes, state, false);
}

PlacementResult explain(const PodRequirements& pod, std::span<const NodeInfo> nodes, PlacementState& state) {
  std::size_t saved = state.next_start_index;
  state.next_start_index = 0;
  PlacementResult r = run(pod, nodes, state, true);
  state.next_start_index = saved;
  return r;
}

PlacementResult explain(const PodRequirements& pod, std::span<const Node> nodes) {
  PlacementState state;
  std::vector<NodeInfo> infos;
  infos.reserve(nodes.size());
  for (const auto& n : nodes) infos.push_back(state.make_node_info(n));
  return explain(pod, infos, state);
}

}  // namespace gpupool
