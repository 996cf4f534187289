// The scheduler's runtime and the pod's scheduling view, used by the embedded scheduler and
// explain(). The rules themselves are plugins, one file each in model/plugins/ (listed in
// registry.cpp); this file runs them as kube-scheduler v1.32's framework does. Sources (read, not
// copied): pkg/scheduler/schedule_one.go (numFeasibleNodesToFind, findNodesThatPassFilters,
// prioritizeNodes, selectHost), framework/runtime/framework.go (RunPreFilterPlugins,
// RunFilterPlugins, RunScorePlugins), framework/types.go (FitError.Error),
// plugins/defaultpreemption + preemption.go (nodesWherePreemptionMightHelp, SelectVictimsOnNode),
// and component-helpers/resource (PodRequests).
#include "gpupool/scheduling.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <iterator>
#include <limits>
#include <set>

#include <boost/json.hpp>

#include "common/join.hpp"
#include "gpupool/error.hpp"
#include "gpupool/names.hpp"
#include "model/json_fields.hpp"
#include "model/plugins/noderesources.hpp"
#include "model/plugins/plugin.hpp"

namespace gpupool {
namespace json = boost::json;

namespace {

using plugins::kCpu;
using plugins::kMaxNodeScore;
using plugins::kMemory;
using plugins::kPods;
constexpr std::int64_t kDefaultMilliCpuRequest = 100;                // schedutil.DefaultMilliCPURequest
constexpr std::int64_t kDefaultMemoryRequest = 200LL * 1024 * 1024;  // schedutil.DefaultMemoryRequest

constexpr std::string_view kPreemptionNotHelpful = "Preemption is not helpful for scheduling";
constexpr std::string_view kPreemptionNoVictims = "No preemption victims found for incoming pod";

// schedutil.IsScalarResourceName: extended resources, prefixed native resources, hugepages,
// attachable volumes. Other unprefixed names are not scheduled on.
bool is_scalar_resource(std::string_view name) {
  if (name.starts_with("hugepages-") || name.starts_with("attachable-volumes-")) return true;
  return name.find('/') != std::string_view::npos && !name.starts_with("requests.");
}

std::int64_t amount(std::string_view name, const Quantity& q) { return name == "cpu" ? q.milli_value() : q.value(); }

void add_at(ResourceAmounts& v, int id, std::int64_t d) { v.add(id, d); }

}  // namespace

// ---- node selector -------------------------------------------------------------------------------

namespace {
constexpr std::pair<NodeSelectorOperator, std::string_view> kNodeOps[] = {
    {NodeSelectorOperator::In, "In"},         {NodeSelectorOperator::NotIn, "NotIn"},
    {NodeSelectorOperator::Exists, "Exists"}, {NodeSelectorOperator::DoesNotExist, "DoesNotExist"},
    {NodeSelectorOperator::Gt, "Gt"},         {NodeSelectorOperator::Lt, "Lt"}};
}  // namespace

std::string_view to_string(NodeSelectorOperator op) noexcept {
  for (const auto& [o, name] : kNodeOps)
    if (o == op) return name;
  return "";
}
std::optional<NodeSelectorOperator> parse_node_selector_operator(std::string_view text) noexcept {
  for (const auto& [o, name] : kNodeOps)
    if (name == text) return o;
  return std::nullopt;
}

void validate(const NodeSelectorRequirement& r, bool is_field, std::string_view field) {
  const std::string f(field);
  using O = NodeSelectorOperator;
  if (is_field) {
    // ValidateNodeFieldSelectorRequirement
    if (r.key != "metadata.name")
      throw ValidationError(f + ".key", r.key, "not a valid field selector key; supported: \"metadata.name\"");
    if (r.op != O::In && r.op != O::NotIn)
      throw ValidationError(f + ".operator", "",
                            "not a valid selector operator for a field; supported: \"In\", \"NotIn\"");
    if (r.values.size() != 1) throw ValidationError(f + ".values", "", "must have one element");
    return;
  }
  if (auto errs = requirement_errors(r, field); !errs.empty()) throw errs.front();
}

std::vector<ValidationError> requirement_errors(const NodeSelectorRequirement& r, std::string_view field) {
  const std::string f(field);
  using O = NodeSelectorOperator;
  std::vector<ValidationError> out;
  switch (r.op) {
    case O::In:
    case O::NotIn:
      if (r.values.empty())
        out.emplace_back(f + ".values", "", "Required value: must be specified when `operator` is 'In' or 'NotIn'");
      break;
    case O::Exists:
    case O::DoesNotExist:
      if (!r.values.empty())
        out.emplace_back(f + ".values", r.values.front(),
                         "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
      break;
    case O::Gt:
    case O::Lt:
      // One value; v1.32 does not check that it is an integer (kube-apiserver accepts "abc" and
      // "1-2"): a value that does not parse just never matches (matches() below).
      if (r.values.size() != 1)
        out.emplace_back(f + ".values", "",
                         "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'");
      break;
  }
  // ValidateLabelName: every error of the key. (The values are not checked on create: v1.32
  // accepts "-1" and "a b" in a required node affinity.)
  for (auto& e : qualified_name_errors(r.key)) out.emplace_back(f + ".key", r.key, std::move(e));
  return out;
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
  if (const auto op = parse_node_selector_operator(s)) return *op;
  throw ValidationError(
      field, s, "Unsupported value: supported values: \"DoesNotExist\", \"Exists\", \"Gt\", \"In\", \"Lt\", \"NotIn\"");
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

namespace {

// from_pod_json's reading of metadata: name and spread_key.
void read_pod_metadata(const json::object& root, PodRequirements& p) {
  std::string ns;
  if (const json::object* meta = object_at(root, "metadata", "metadata")) {
    ns = string_at(*meta, "namespace", "metadata.namespace");
    p.name = (ns.empty() ? std::string() : ns + "/") + string_at(*meta, "name", "metadata.name");
    if (const json::array* owners = array_at(*meta, "ownerReferences", "metadata.ownerReferences")) {
      for (std::size_t i = 0; i < owners->size(); ++i) {
        // The field path is spelled only for an error (this runs for every pod the scheduler reads).
        const auto f = [i] { return "metadata.ownerReferences[" + std::to_string(i) + "]"; };
        const json::object& o = (*owners)[i].is_object() ? (*owners)[i].get_object() : as_object((*owners)[i], f());
        const json::value* controller = o.if_contains("controller");
        if (controller && controller->is_bool() && controller->get_bool()) {
          const auto text = [&](std::string_view key) -> std::string {
            const json::value* v = o.if_contains(key);
            if (v && v->is_string()) return std::string(v->get_string());
            return string_at(o, key, f() + "." + std::string(key));  // "" when absent, else the error
          };
          p.spread_key = ns + "/" + text("kind") + "/" + text("name");
        }
      }
    }
  }
}

// from_pod_json's reading of spec: everything else. PodRequirementsCache keys on exactly what this
// reads (spec_projection below): keep the two in step.
void read_pod_spec(const json::object& spec_obj, PodRequirements& p) {
  const json::object* spec = &spec_obj;
  auto containers = containers_of(*spec, "containers");
  auto inits = containers_of(*spec, "initContainers");
  ResourceMap overhead = quantity_map(object_at(*spec, "overhead", "spec.overhead"), "spec.overhead");
  p.requests = effective_pod_requests(containers, inits, overhead);
  ResourceMap nonzero = effective_pod_requests(containers, inits, overhead, true);
  auto cpu = nonzero.find("cpu"), mem = nonzero.find("memory");  // absent only without containers
  p.nonzero_milli_cpu = cpu == nonzero.end() ? 0 : cpu->second.milli_value();
  p.nonzero_memory = mem == nonzero.end() ? 0 : mem->second.value();
  p.node_name = string_at(*spec, "nodeName", "spec.nodeName");
  if (const json::array* volumes = array_at(*spec, "volumes", "spec.volumes")) {
    for (std::size_t i = 0; i < volumes->size(); ++i) {
      const std::string f = "spec.volumes[" + std::to_string(i) + "]";
      const json::object& v = as_object((*volumes)[i], f);
      if (const json::object* c = object_at(v, "persistentVolumeClaim", f + ".persistentVolumeClaim"))
        p.claims.push_back({string_at(*c, "claimName", f + ".persistentVolumeClaim.claimName"), ClaimStatus::Unknown});
    }
  }
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
      if (std::string e = string_at(t, "effect", f + ".effect"); !e.empty())
        tol.effect = parse_taint_effect(e, f + ".effect");
      if (const json::value* s = t.if_contains("tolerationSeconds"); s && !s->is_null()) {
        if (!s->is_int64() && !s->is_uint64()) wrong_type(f + ".tolerationSeconds", *s, "an integer");
        tol.toleration_seconds = s->to_number<std::int64_t>();
      }
      validate(tol, f);
      p.tolerations.push_back(std::move(tol));
    }
  }
}

}  // namespace

PodRequirements PodRequirements::from_pod_json(const json::object& root) {
  PodRequirements p;
  read_pod_metadata(root, p);
  if (const json::object* spec = object_at(root, "spec", "spec")) read_pod_spec(*spec, p);
  return p;
}

// ---- PodRequirementsCache -------------------------------------------------------------------------

namespace {

// The members of a pod's spec that read_pod_spec reads, in a fixed order (absent ones as nullptr),
// and the lengths of the lists they come from. False for a shape read_pod_spec would reject
// (containers not an array of objects, ...): such a pod is decoded in full, errors and all.
struct SpecProjection {
  std::vector<const json::value*> values;
  std::vector<std::uint32_t> shape;
};

bool project_spec(const json::object& spec, SpecProjection& out) {
  out.values.clear();
  out.shape.clear();
  const auto list = [&](std::string_view key, std::initializer_list<std::string_view> members) {
    const json::value* v = spec.if_contains(key);
    if (!v || v->is_null()) {  // array_at: absent or null is no list
      out.shape.push_back(0);
      return true;
    }
    if (!v->is_array()) return false;
    out.shape.push_back(static_cast<std::uint32_t>(v->get_array().size()) + 1);
    for (const json::value& item : v->get_array()) {
      if (!item.is_object()) return false;
      for (std::string_view m : members) out.values.push_back(item.get_object().if_contains(m));
    }
    return true;
  };
  if (!list("containers", {"resources", "restartPolicy"}) || !list("initContainers", {"resources", "restartPolicy"}) ||
      !list("volumes", {"persistentVolumeClaim"}))
    return false;
  for (std::string_view key : {"overhead", "nodeName", "nodeSelector", "affinity", "tolerations"})
    out.values.push_back(spec.if_contains(key));
  return true;
}

std::uint64_t mix(std::uint64_t h, std::uint64_t v) { return (h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2))); }

// Hashes a value the way operator== compares it, except that objects hash in member order (equal
// objects in another order only miss the cache).
std::uint64_t hash_json(const json::value& v, std::uint64_t h) {
  switch (v.kind()) {
    case json::kind::null:
      return mix(h, 1);
    case json::kind::bool_:
      return mix(h, v.get_bool() ? 3 : 2);
    case json::kind::int64:
      return mix(mix(h, 4), static_cast<std::uint64_t>(v.get_int64()));
    case json::kind::uint64:
      return mix(mix(h, 5), v.get_uint64());
    case json::kind::double_:
      return mix(mix(h, 6), std::hash<double>{}(v.get_double()));
    case json::kind::string:
      return mix(mix(h, 7), std::hash<std::string_view>{}(v.get_string()));
    case json::kind::array:
      h = mix(h, 8 + (v.get_array().size() << 8));
      for (const json::value& e : v.get_array()) h = hash_json(e, h);
      return h;
    case json::kind::object:
      h = mix(h, 9 + (v.get_object().size() << 8));
      for (const auto& kv : v.get_object()) h = hash_json(kv.value(), mix(h, std::hash<std::string_view>{}(kv.key())));
      return h;
  }
  return h;
}

// Equal, objects compared member by member in order: matches() needs no more (the same members in
// another order only miss the cache), and it walks both once where operator== looks every key of
// one object up in the other.
bool same_json(const json::value& a, const json::value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case json::kind::null:
      return true;
    case json::kind::bool_:
      return a.get_bool() == b.get_bool();
    case json::kind::int64:
      return a.get_int64() == b.get_int64();
    case json::kind::uint64:
      return a.get_uint64() == b.get_uint64();
    case json::kind::double_:
      return a.get_double() == b.get_double();
    case json::kind::string:
      return a.get_string() == b.get_string();
    case json::kind::array: {
      const json::array &x = a.get_array(), &y = b.get_array();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!same_json(x[i], y[i])) return false;
      return true;
    }
    case json::kind::object: {
      const json::object &x = a.get_object(), &y = b.get_object();
      if (x.size() != y.size()) return false;
      for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j)
        if (i->key() != j->key() || !same_json(i->value(), j->value())) return false;
      return true;
    }
  }
  return false;
}

}  // namespace

struct PodRequirementsCache::Impl {
  struct Entry {
    std::vector<std::uint32_t> shape;
    std::vector<json::value> values;  // copies of the projected members (null where absent)
    std::vector<bool> present;
    PodRequirements spec_part;  // read_pod_spec's result alone (no name, no spread_key)
    bool matches(const SpecProjection& p) const {
      if (shape != p.shape || values.size() != p.values.size()) return false;
      for (std::size_t i = 0; i < values.size(); ++i)
        if (present[i] != (p.values[i] != nullptr) || (p.values[i] && !same_json(*p.values[i], values[i])))
          return false;
      return true;
    }
  };
  std::size_t capacity;
  std::unordered_multimap<std::uint64_t, Entry> entries;
  SpecProjection scratch;
};

PodRequirementsCache::PodRequirementsCache(std::size_t capacity) : impl_(std::make_unique<Impl>()) {
  impl_->capacity = std::max<std::size_t>(capacity, 1);
}
PodRequirementsCache::~PodRequirementsCache() = default;
PodRequirementsCache::PodRequirementsCache(PodRequirementsCache&&) noexcept = default;
PodRequirementsCache& PodRequirementsCache::operator=(PodRequirementsCache&&) noexcept = default;

PodRequirements PodRequirementsCache::read(const json::object& pod) {
  const json::value* spec = pod.if_contains("spec");
  SpecProjection& proj = impl_->scratch;
  if (!spec || !spec->is_object() || !project_spec(spec->get_object(), proj)) {
    ++misses_;
    return PodRequirements::from_pod_json(pod);
  }
  std::uint64_t h = 0;
  for (std::uint32_t n : proj.shape) h = mix(h, n);
  for (const json::value* v : proj.values) h = v ? hash_json(*v, h) : mix(h, 0);
  auto [it, end] = impl_->entries.equal_range(h);
  for (; it != end; ++it) {
    if (!it->second.matches(proj)) continue;
    ++hits_;
    PodRequirements p;
    read_pod_metadata(pod, p);  // its errors first, as from_pod_json reads metadata first
    const PodRequirements& c = it->second.spec_part;
    p.requests = c.requests;
    p.nonzero_milli_cpu = c.nonzero_milli_cpu;
    p.nonzero_memory = c.nonzero_memory;
    p.node_selector = c.node_selector;
    p.required_node_affinity = c.required_node_affinity;
    p.tolerations = c.tolerations;
    p.node_name = c.node_name;
    p.claims = c.claims;
    return p;
  }
  ++misses_;
  PodRequirements p = PodRequirements::from_pod_json(pod);  // throws as it does: nothing is remembered
  if (impl_->entries.size() >= impl_->capacity) impl_->entries.clear();
  Impl::Entry e;
  e.shape = proj.shape;
  e.values.reserve(proj.values.size());
  for (const json::value* v : proj.values) {
    e.values.push_back(v ? *v : json::value());
    e.present.push_back(v != nullptr);
  }
  e.spec_part = p;
  e.spec_part.name.clear();
  e.spec_part.spread_key.clear();
  impl_->entries.emplace(h, std::move(e));
  return p;
}

std::vector<PodRequirements> PodRequirements::list_from_json(std::string_view pod_list_json) {
  std::vector<PodRequirements> out;
  for_each_in_list(pod_list_json, [&](PodRequirements&& p) { out.push_back(std::move(p)); });
  return out;
}

void PodRequirements::for_each_in_list(std::string_view pod_list_json,
                                       const std::function<void(PodRequirements&&)>& fn) {
  json_fields::for_each_list_item(pod_list_json,
                                  [&](const json::value& item, std::size_t) { fn(from_pod_json(item)); });
}

// ---- PlacementState ------------------------------------------------------------------------------

namespace {
using plugins::SchedulerProfile;
// The pod-independent part of a node's verdict for one constraint set: the first plugin whose
// NodeSpec filter rejects the node (SchedulerProfile::kNone when none does) and, for a node they pass, the
// raw score of the profile's cached NodeSpec scorer (TaintToleration's PreferNoSchedule count).
struct StaticVerdict {
  std::uint64_t serial = 0;  // the NodeInfo::serial this entry was computed for; 0: none yet
  std::int32_t raw = 0;
  std::uint8_t reject = SchedulerProfile::kNone;
};
// A node that passes a constraint set's static filters: its position in the span and the cached
// raw score.
struct Passing {
  std::uint32_t pos;
  std::int32_t raw;
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
    r.free_pods = plugins::free_pods(n.allocatable.get(kPods), n.pod_count);
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
    auto it = std::lower_bound(list.begin(), list.end(), pos,
                               [](const SpreadEntry& e, std::uint32_t p) { return e.pos < p; });
    if (it != list.end() && it->pos == pos) {
      if (count > 0)
        it->count = count;
      else
        list.erase(it);
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

// The cache key of a pod: every keyed plugin's shape_key(), each followed by its length (so that
// parts never run into each other). False when a plugin refuses caching for this pod.
bool shape_key(const SchedulerProfile& profile, const PodRequirements& pod, std::string& out) {
  out.clear();
  for (const std::uint8_t i : profile.keyed) {
    const std::size_t before = out.size();
    if (!profile.plugins[i]->shape_key(pod, out)) return false;
    const auto n = static_cast<std::uint32_t>(out.size() - before);
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
  }
  return true;
}
}  // namespace

struct PlacementState::Scratch {
  std::vector<std::pair<int, std::int64_t>> requests;          // the pod's requests by resource id
  std::vector<std::pair<std::size_t, std::uint8_t>> failures;  // processed nodes that failed, and the plugin
  std::vector<std::size_t> feasible;
  std::vector<std::size_t> candidates;  // after the PreFilter narrowing
  // Raw scores of the feasible nodes, one column per scorer of the profile (SchedulerProfile::scorers).
  std::vector<std::vector<std::int64_t>> columns;
  std::vector<std::int64_t> column_hi;  // per column: its highest raw score (from 0)
  std::vector<std::int64_t> totals, zeros;
  std::vector<std::vector<std::int64_t>> tables;  // per column: weighted normalized score by raw score
  // The plugins (registry snapshot) and the generation it was taken at.
  std::shared_ptr<const SchedulerProfile> profile;
  // Static verdicts per constraint set (see PlacementState), for `profile`.
  std::unordered_map<std::string, ShapeVerdicts> shapes;
  std::string key;
  std::uint64_t tick = 0;
  HotTable hot;                                              // the indexed walk's node data (see HotTable)
  std::vector<std::uint32_t> found_pos;                      // the indexed walk's feasible nodes
  std::vector<std::pair<int, std::int64_t>> extra_requests;  // requests other than cpu and memory
  std::string name;                                          // lookup buffer for resource_id/spread_id

  // The current profile; the cached verdicts go when it changed.
  const SchedulerProfile& current_profile() {
    if (!profile || profile->generation != plugins::profile_generation()) {
      profile = plugins::current_profile();
      shapes.clear();
    }
    return *profile;
  }

  // The cached verdicts of the pod's constraint set; null when the pod is not to be cached.
  ShapeVerdicts* shape(const PodRequirements& pod, std::size_t num_nodes) {
    if (!shape_key(*profile, pod, key)) return nullptr;
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
    return &v;
  }
};

// The free functions below (place, explain and their helpers) reach the state's scratch through this
// friend; the public header does not show it.
struct detail::PlacementStateAccess {
  using Scratch = PlacementState::Scratch;
  static Scratch& scratch(PlacementState& state) { return *state.scratch_; }
};
using Scratch = detail::PlacementStateAccess::Scratch;

PlacementState::PlacementState() : scratch_(std::make_unique<Scratch>()) {
  for (const char* n : {"cpu", "memory", "ephemeral-storage", "pods"}) resource_id(n);
}
PlacementState::~PlacementState() = default;
PlacementState::PlacementState(PlacementState&&) noexcept = default;
PlacementState& PlacementState::operator=(PlacementState&&) noexcept = default;

int PlacementState::resource_id(std::string_view name) {
  if (!scratch_) scratch_ = std::make_unique<Scratch>();  // a moved-from state
  std::string& buf = scratch_->name;                      // reused: no allocation per lookup
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
  std::string& buf = scratch_->name;                      // reused: no allocation per lookup of a known key
  buf.assign(key);
  if (auto it = spread_ids_.find(buf); it != spread_ids_.end()) return it->second;
  return spread_ids_.emplace(buf, static_cast<int>(spread_ids_.size())).first->second;
}

PlacementAmounts::PlacementAmounts(const std::map<std::string, Quantity>& allocatable) {
  std::vector<FlatMap<std::int64_t>::value_type> amounts;
  amounts.reserve(allocatable.size());
  for (const auto& [name, q] : allocatable) amounts.emplace_back(name, amount(name, q));
  entries_ = FlatMap<std::int64_t>::from_sorted(std::move(amounts));  // a map's order
}

std::optional<std::int64_t> PlacementAmounts::find(std::string_view name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

bool operator==(const PlacementAmounts& a, const std::map<std::string, Quantity>& b) {
  return a.entries_.size() == b.size() &&
         std::equal(a.entries_.begin(), a.entries_.end(), b.begin(), [](const auto& x, const auto& y) {
           return x.first == y.first && x.second == amount(y.first, y.second);
         });
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
  // What the filters and the caller's change checks read (PlacementNode drops the rest).
  info.node = PlacementNode(std::move(node));
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
    auto it = std::find_if(node.spread_counts.begin(), node.spread_counts.end(),
                           [&](const auto& e) { return e.first == id; });
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
    auto it = std::find_if(node.spread_counts.begin(), node.spread_counts.end(),
                           [&](const auto& e) { return e.first == id; });
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

// ---- the runtime ---------------------------------------------------------------------------------

namespace {

using plugins::Cycle;
using plugins::Plugin;

// A plugin's raw score of a node. Raw scores are never negative (Plugin::score); one that is
// counts as 0, so that no score table is indexed below its start.
std::int64_t raw_score(const Plugin& plugin, const Cycle& cycle, const NodeInfo& n) {
  return std::max<std::int64_t>(plugin.score(cycle, n), 0);
}

// The NodeSpec filters in order (RunFilterPlugins stops at the first rejection) and, for a node
// they pass, the cached scorer's raw score.
StaticVerdict evaluate_static(const SchedulerProfile& profile, const Cycle& cycle, const NodeInfo& n) {
  StaticVerdict v;
  v.serial = n.serial;
  for (const std::uint8_t i : profile.static_filters) {
    if (!profile.plugins[i]->filter(cycle, n)) {
      v.reject = i;
      return v;
    }
  }
  if (profile.cached_score >= 0) {
    const Plugin& scorer = *profile.plugins[profile.scorers[static_cast<std::size_t>(profile.cached_score)]];
    v.raw = static_cast<std::int32_t>(
        std::min<std::int64_t>(raw_score(scorer, cycle, n), std::numeric_limits<std::int32_t>::max()));
  }
  return v;
}

// Brings a node's cached static verdict up to date with its serial.
void refresh(StaticVerdict& v, const SchedulerProfile& profile, const Cycle& cycle, const NodeInfo& n) {
  if (v.serial != n.serial) v = evaluate_static(profile, cycle, n);
}

// Makes the constraint set's index of statically passing nodes current for `nodes`. It is rebuilt
// when the span's address or size differ or any NodeInfo was built since (the span may only change
// through make_node_info, see PlacementState); a rebuild recomputes only the verdicts whose serial
// changed. False when the index cannot serve: a hand-built node (serial 0) or over 2^32 nodes.
bool ensure_index(ShapeVerdicts& c, const SchedulerProfile& profile, const Cycle& cycle,
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
    refresh(v, profile, cycle, n);
    if (v.reject == SchedulerProfile::kNone) c.passing.push_back({static_cast<std::uint32_t>(i), v.raw});
  }
  c.index_valid = true;
  c.index_data = nodes.data();
  c.index_size = nodes.size();
  c.index_generation = generation;
  return true;
}

std::vector<std::string> histogram(const std::map<std::string, int>& counts) {
  std::vector<std::string> out;
  for (const auto& [reason, n] : counts) out.push_back(std::to_string(n) + " " + reason);
  std::sort(out.begin(), out.end());  // sort.Strings: lexicographic, counts included
  return out;
}

// Weighted normalized scores are looked up in a table built per attempt when a column's raw scores
// lie in 0..this.
constexpr std::int64_t kMaxTable = 4096;

// prioritizeNodes and selectHost (schedule_one.go), the one place scores are totalled: each
// scorer's raw scores of the m feasible nodes (s.columns, one per SchedulerProfile::scorers entry,
// with their highest in s.column_hi, kept by the walks; never negative) go through its
// NormalizeScore, are multiplied by its weight and summed per node (into s.totals when
// `keep_totals`, for the verdicts). Returns the index of the first node with the highest total:
// ties go to the first in evaluation order.
std::size_t select_host(const SchedulerProfile& profile, Scratch& s, std::size_t m, bool keep_totals) {
  // Up to two normalized columns are summed in the final pass through tables of their weighted
  // normalized scores, up to two others by multiplying; any further column gets a pass of its own.
  constexpr std::size_t kTabled = 2, kLinear = 2;
  static const std::int64_t kZero[1] = {0};
  if (s.zeros.size() < m) s.zeros.resize(m);  // never written: stays zero
  const std::int64_t* tabled[kTabled] = {s.zeros.data(), s.zeros.data()};
  const std::int64_t* table[kTabled] = {kZero, kZero};
  const std::int64_t* linear[kLinear] = {s.zeros.data(), s.zeros.data()};
  std::int64_t weight_of[kLinear] = {0, 0};
  std::size_t num_tabled = 0, num_linear = 0;
  bool passes = false;  // a column summed on its own into s.totals
  if (s.tables.size() < profile.scorers.size()) s.tables.resize(profile.scorers.size());
  for (std::size_t k = 0; k < profile.scorers.size(); ++k) {
    const Plugin& pl = *profile.plugins[profile.scorers[k]];
    const std::int64_t weight = pl.weight(), hi = s.column_hi[k];
    const bool normalizes = pl.normalizes();
    const std::int64_t* column = s.columns[k].data();
    if (!normalizes && num_linear < kLinear) {
      linear[num_linear] = column;
      weight_of[num_linear++] = weight;
      continue;
    }
    if (normalizes && num_tabled < kTabled && hi <= kMaxTable) {
      std::vector<std::int64_t>& t = s.tables[k];
      t.resize(static_cast<std::size_t>(hi) + 1);
      std::int64_t* out = t.data();
      for (std::int64_t c = 0; c <= hi; ++c) out[c] = weight * pl.normalize(c, hi);
      tabled[num_tabled] = column;
      table[num_tabled++] = out;
      continue;
    }
    if (!passes) s.totals.assign(m, 0);
    passes = true;
    std::int64_t* total = s.totals.data();
    for (std::size_t j = 0; j < m; ++j) total[j] += weight * (normalizes ? pl.normalize(column[j], hi) : column[j]);
  }
  auto sum = [&](std::size_t j) {
    return table[0][tabled[0][j]] + table[1][tabled[1][j]] + weight_of[0] * linear[0][j] + weight_of[1] * linear[1][j];
  };
  std::size_t best = 0;
  std::int64_t best_total = std::numeric_limits<std::int64_t>::min();
  auto consider = [&](std::size_t j, std::int64_t t) {
    if (t > best_total) {  // strictly greater: the first in evaluation order wins ties
      best_total = t;
      best = j;
    }
  };
  if (!passes && !keep_totals) {
    for (std::size_t j = 0; j < m; ++j) consider(j, sum(j));
    return best;
  }
  if (!passes) s.totals.assign(m, 0);
  std::int64_t* total = s.totals.data();
  for (std::size_t j = 0; j < m; ++j) consider(j, total[j] += sum(j));
  return best;
}

// Filters and scores the nodes passing the constraint set's static filters, from `start`, until
// `to_find` fit, reading the hot rows; returns the chosen position (none when no node fits) and
// sets `processed` as the node-by-node walk would. Same choice as that walk: same nodes in the
// same order, same raw scores (the profile's kernels: NodeResourcesFit's fitsRequest, LeastAllocated
// and BalancedAllocation in one two-lane kernel, the spread count by merging), totalled by select_host.
std::optional<std::size_t> indexed_walk(const ShapeVerdicts& c, const SchedulerProfile& profile, const Cycle& cycle,
                                        Scratch& s, std::span<const NodeInfo> nodes, std::size_t start,
                                        std::size_t to_find, std::size_t& processed) {
  const std::vector<Passing>& passing = c.passing;
  const std::size_t m = passing.size();
  if (m == 0) return std::nullopt;
  const HotRow* rows = s.hot.rows.data();
  const auto& free = s.hot.free;
  const std::size_t cap = std::min(to_find, m);
  if (s.found_pos.size() < cap) s.found_pos.resize(cap);
  for (auto& col : s.columns)
    if (col.size() < cap) col.resize(cap);
  auto column = [&](int k) { return k < 0 ? nullptr : s.columns[static_cast<std::size_t>(k)].data(); };
  std::int64_t* const cached_col = column(profile.cached_score);
  std::int64_t* const least_col = column(profile.least_allocated);
  std::int64_t* const balanced_col = column(profile.balanced_allocation);
  std::int64_t* const spread_col = column(profile.spread_count);
  const bool fit_scores = least_col || balanced_col, fits_request = profile.fits_request;
  // Locals, so that the loop's stores cannot make the compiler reload them.
  const plugins::FitRequest want = cycle.fit;
  const std::int64_t nz_cpu = cycle.nonzero_cpu, nz_mem = cycle.nonzero_memory;
  const std::int64_t req_cpu = cycle.request_cpu, req_mem = cycle.request_memory;
  std::size_t found = 0;
  std::int64_t cached_hi = 0, spread_hi = 0;
  const auto first = std::lower_bound(passing.begin(), passing.end(), start,
                                      [](const Passing& e, std::size_t v) { return e.pos < v; });
  std::size_t j = static_cast<std::size_t>(first - passing.begin());
  if (j == m) j = 0;
  // The nodes holding the pod's spread key, merged with the walk by position.
  static const std::vector<SpreadEntry> kNone;
  const std::vector<SpreadEntry>& holders =
      spread_col && cycle.spread >= 0 && static_cast<std::size_t>(cycle.spread) < s.hot.by_spread.size()
          ? s.hot.by_spread[static_cast<std::size_t>(cycle.spread)]
          : kNone;
  std::size_t h =
      static_cast<std::size_t>(std::lower_bound(holders.begin(), holders.end(), passing[j].pos,
                                                [](const SpreadEntry& e, std::size_t v) { return e.pos < v; }) -
                               holders.begin());
  processed = nodes.size();  // no stop: every node was processed
  for (std::size_t t = 0; t < m; ++t, j = j + 1 == m ? 0 : j + 1) {
    if (j == 0) h = 0;  // wrapped around to the first position
    std::size_t ahead = j + 8;
    if (ahead >= m) ahead = ahead - m < m ? ahead - m : ahead % m;
    __builtin_prefetch(&rows[passing[ahead].pos]);
    const std::size_t pos = passing[j].pos;
    const HotRow& r = rows[pos];
    if (fits_request) {
      const auto left = [&](int id) -> std::int64_t {
        return id < kHotInline ? free[pos][static_cast<std::size_t>(id)]
                               : nodes[pos].allocatable.get(id) - nodes[pos].requested.get(id);
      };
      if (!plugins::fits_request(want, r.free_pods, r.alloc_cpu - r.req_cpu, r.alloc_mem - r.req_mem, left,
                                 [](int) { return false; }))
        continue;
    }
    // A feasible node: its raw scores.
    const std::size_t k = found++;
    s.found_pos[k] = static_cast<std::uint32_t>(pos);
    if (cached_col) {
      const std::int64_t v = passing[j].raw;
      cached_col[k] = v;
      cached_hi = v > cached_hi ? v : cached_hi;
    }
    if (spread_col) {
      while (h < holders.size() && holders[h].pos < pos) ++h;
      const std::int64_t v = h < holders.size() && holders[h].pos == pos ? holders[h].count : 0;
      spread_col[k] = v;
      spread_hi = v > spread_hi ? v : spread_hi;  // counts: never below 0
    }
    if (fit_scores) {
      const plugins::FitScores f = plugins::fit_scores(r.nz_cpu + nz_cpu, r.nz_mem + nz_mem, r.req_cpu + req_cpu,
                                                       r.req_mem + req_mem, r.alloc_cpu, r.alloc_mem);
      if (least_col) least_col[k] = f.least_allocated;
      if (balanced_col) balanced_col[k] = f.balanced_allocation;
    }
    if (found == to_find) {
      // The full walk would stop right after this node: it processed start..pos, wrapping.
      processed = (pos + nodes.size() - start) % nodes.size() + 1;
      break;
    }
  }
  if (found == 0) return std::nullopt;
  // The highest raw scores (LeastAllocated and BalancedAllocation lie in 0..MaxNodeScore).
  auto highest = [&](int col, std::int64_t hi) {
    if (col >= 0) s.column_hi[static_cast<std::size_t>(col)] = hi;
  };
  highest(profile.cached_score, cached_hi);
  highest(profile.spread_count, spread_hi);
  highest(profile.least_allocated, kMaxNodeScore);
  highest(profile.balanced_allocation, kMaxNodeScore);
  return s.found_pos[select_host(profile, s, found, false)];
}

PlacementResult run(const PodRequirements& pod, std::span<const NodeInfo> nodes, PlacementState& state,
                    bool explain_all) {
  PlacementResult result;
  result.num_all_nodes = nodes.size();
  if (nodes.empty()) return result;
  auto& s = detail::PlacementStateAccess::scratch(state);
  const SchedulerProfile& profile = s.current_profile();

  // The pod's requests by interned resource id (computeNodeResourcesFitPreFilterState).
  s.requests.clear();
  for (const auto& [name, q] : pod.requests) {
    if (name == "pods") continue;
    if (name != "cpu" && name != "memory" && name != "ephemeral-storage" && !is_scalar_resource(name)) continue;
    s.requests.emplace_back(state.resource_id(name), amount(name, q));
  }
  // fitsRequest checks cpu, memory, ephemeral-storage, then the scalar resources.
  std::sort(s.requests.begin(), s.requests.end());
  plugins::FitRequest fit;
  s.extra_requests.clear();
  for (const auto& [id, want] : s.requests) {
    if (want <= 0) continue;  // "Skip in case request quantity is zero"
    if (id == kCpu)
      fit.cpu = want;
    else if (id == kMemory)
      fit.memory = want;
    else
      s.extra_requests.emplace_back(id, want);
  }
  fit.others = s.extra_requests;
  std::int64_t pod_req_cpu = 0, pod_req_mem = 0;
  if (auto it = pod.requests.find("cpu"); it != pod.requests.end()) pod_req_cpu = it->second.milli_value();
  if (auto it = pod.requests.find("memory"); it != pod.requests.end()) pod_req_mem = it->second.value();
  const Cycle cycle{pod,
                    state,
                    fit,
                    nonzero_cpu(pod),
                    nonzero_memory(pod),
                    pod_req_cpu,
                    pod_req_mem,
                    state.spread_id(pod.spread_key)};

  // RunPreFilterPlugins: a rejection ends the attempt; node names narrow the nodes to filter (the
  // intersection over the plugins), the others get the absent-nodes status.
  std::optional<std::set<std::string>> named;
  std::vector<std::string> narrowing;  // sets.List: sorted
  for (const Plugin* pl : profile.plugins) {
    plugins::PreFilterResult r = pl->pre_filter(pod);
    if (!r.rejection.empty()) {
      result.prefilter_message = std::move(r.rejection);
      return result;
    }
    if (!r.node_names) continue;
    narrowing.insert(std::upper_bound(narrowing.begin(), narrowing.end(), pl->name()), std::string(pl->name()));
    if (!named) {
      named = std::move(r.node_names);
    } else {
      std::set<std::string> both;
      std::set_intersection(named->begin(), named->end(), r.node_names->begin(), r.node_names->end(),
                            std::inserter(both, both.begin()));
      named = std::move(both);
    }
    if (named->empty()) {
      result.prefilter_message = narrowing.size() == 1 ? "node(s) didn't satisfy plugin " + narrowing.front()
                                                       : "node(s) didn't satisfy plugin(s) [" +
                                                             text::join(narrowing, " ") + "] simultaneously";
      return result;
    }
  }
  s.candidates.clear();
  if (named) {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (named->count(nodes[i].node.name)) s.candidates.push_back(i);
  }
  const bool narrowed = named.has_value();
  const std::size_t num_candidates = narrowed ? s.candidates.size() : nodes.size();
  const std::size_t absent = nodes.size() - num_candidates;
  const std::string absent_reason =
      narrowed ? "node(s) didn't satisfy plugin(s) [" + text::join(narrowing, " ") + "]" : "";

  // findNodesThatPassFilters: start at next_start_index, stop after numNodesToFind feasible nodes.
  const std::size_t to_find =
      explain_all ? num_candidates : num_feasible_nodes_to_find(num_candidates, state.percentage_of_nodes_to_score);
  s.feasible.clear();
  s.failures.clear();
  s.columns.resize(profile.scorers.size());
  s.column_hi.assign(profile.scorers.size(), 0);
  std::size_t processed = 0;
  // Narrowed pods (node names) would each make their own constraint set; they are filtered directly.
  ShapeVerdicts* cache = narrowed ? nullptr : s.shape(pod, nodes.size());
  const std::size_t start = num_candidates ? state.next_start_index % num_candidates : 0;
  // The fields before `node` are what filtering and scoring read.
  const std::ptrdiff_t hot_bytes =
      reinterpret_cast<const char*>(&nodes[0].node) - reinterpret_cast<const char*>(&nodes[0]);
  // (start + k) % num_candidates without a division per node: k is below 2 * num_candidates except
  // for tiny clusters.
  auto wrap = [num_candidates](std::size_t p) {
    return p < num_candidates ? p : p - num_candidates < num_candidates ? p - num_candidates : p % num_candidates;
  };
  // The indexed walk: only the nodes passing the static filters are visited, in the order the full
  // walk below would reach them, and `processed` counts every node the full walk would have
  // processed (the statically rejected ones in between included), because findNodesThatPassFilters
  // advances by all of them: `sched.nextStartNodeIndex = (sched.nextStartNodeIndex + processedNodes)
  // % len(allNodes)` (pkg/scheduler/schedule_one.go), processedNodes = feasible + failed. It serves
  // place() when no per-node verdict is to be reported and the profile's plugins all have kernels;
  // when no node passes, the full walk runs instead, for the reasons of every node.
  if (profile.indexed && cache && !explain_all && !state.record_verdicts &&
      ensure_index(*cache, profile, cycle, nodes) && s.hot.ensure(nodes)) {
    if (const auto chosen = indexed_walk(*cache, profile, cycle, s, nodes, start, to_find, processed)) {
      state.next_start_index = (state.next_start_index + processed) % nodes.size();
      result.chosen = *chosen;
      result.chosen_node = nodes[*chosen].node.name;
      return result;
    }
    processed = 0;
  }
  for (auto& col : s.columns) col.clear();
  std::size_t pos = start;
  for (std::size_t i = 0; i < num_candidates && s.feasible.size() < to_find; ++i, pos = wrap(pos + 1)) {
    std::size_t idx = narrowed ? s.candidates[pos] : pos;
    if (!narrowed) {
      // The nodes are visited in order: fetch a node's cached verdict 16 steps ahead and, 8 steps
      // ahead, its first line, or all its hot lines when the verdict says the filters will read them.
      const std::size_t ahead8 = wrap(pos + 8);
      const char* ahead = reinterpret_cast<const char*>(&nodes[ahead8]);
      if (cache) {
        __builtin_prefetch(&cache->by_node[wrap(pos + 16)]);
        __builtin_prefetch(ahead);
        if (cache->by_node[ahead8].reject == SchedulerProfile::kNone)
          for (std::ptrdiff_t line = 64; line < hot_bytes; line += 64) __builtin_prefetch(ahead + line);
      } else {
        for (std::ptrdiff_t line = 0; line < hot_bytes; line += 64) __builtin_prefetch(ahead + line);
      }
    }
    const NodeInfo& n = nodes[idx];
    ++processed;
    StaticVerdict fresh;
    const StaticVerdict* v = &fresh;
    if (cache && n.serial != 0) {
      refresh(cache->by_node[idx], profile, cycle, n);
      v = &cache->by_node[idx];
    } else {
      fresh = evaluate_static(profile, cycle, n);
    }
    // The BoundPods filters, in the profile's order: those before the rejecting NodeSpec one.
    std::uint8_t reject = v->reject;
    for (const std::uint8_t f : profile.dynamic_filters) {
      if (f > reject) break;
      if (!profile.plugins[f]->filter(cycle, n)) {
        reject = f;
        break;
      }
    }
    if (reject != SchedulerProfile::kNone) {
      s.failures.emplace_back(idx, reject);
      continue;
    }
    // A feasible node: its raw scores, computed while its data is in cache.
    s.feasible.push_back(idx);
    for (std::size_t k = 0; k < profile.scorers.size(); ++k) {
      const std::int64_t raw = static_cast<int>(k) == profile.cached_score
                                   ? v->raw
                                   : raw_score(*profile.plugins[profile.scorers[k]], cycle, n);
      s.columns[k].push_back(raw);
      s.column_hi[k] = std::max(s.column_hi[k], raw);
    }
  }
  state.next_start_index = (state.next_start_index + processed) % nodes.size();

  const bool record = explain_all || state.record_verdicts || s.feasible.empty();
  if (record) {
    for (const auto& [idx, plugin] : s.failures) {
      const Plugin& pl = *profile.plugins[plugin];
      NodeVerdict v;
      v.node = nodes[idx].node.name;
      v.plugin = pl.name();
      v.reasons = pl.reasons(cycle, nodes[idx]);  // strings are built only here, off the hot path
      result.verdicts.push_back(std::move(v));
    }
    if (explain_all && narrowed) {
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (named->count(nodes[i].node.name)) continue;
        result.verdicts.push_back({nodes[i].node.name, false, text::join(narrowing, " "), {absent_reason}, {}});
      }
    }
  }

  if (s.feasible.empty()) {
    std::map<std::string, int> counts;
    for (const auto& v : result.verdicts)
      for (const auto& r : v.reasons) counts[r] += 1;
    // Nodes the PreFilter left out carry its absent-nodes status (explain() already listed them).
    if (absent && !explain_all) counts[absent_reason] += static_cast<int>(absent);
    result.filter_reasons = histogram(counts);
    return result;
  }

  // Scoring (skipped with a single feasible node, as schedulePod does).
  std::size_t best = s.feasible.front();
  if (s.feasible.size() > 1 || explain_all) {
    best = s.feasible[select_host(profile, s, s.feasible.size(), record)];
    if (record) {
      for (std::size_t j = 0; j < s.feasible.size(); ++j)
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
    if (!filter_reasons.empty()) msg += " " + text::join(filter_reasons, ", ") + ".";
    // nodesWherePreemptionMightHelp: only nodes rejected with Unschedulable (of the plugins here,
    // NodeResourcesFit; the others answer UnschedulableAndUnresolvable) are tried, and without
    // lower-priority pods there are no victims on them.
    int resolvable_nodes = 0;
    const auto profile = plugins::current_profile();
    for (const auto& v : verdicts) {
      const plugins::Plugin* p = v.fits ? nullptr : profile->find(v.plugin);
      if (p && p->code() == plugins::Code::Unschedulable) ++resolvable_nodes;
    }
    if (resolvable_nodes) preemption[std::string(kPreemptionNoVictims)] = resolvable_nodes;
    if (num_all_nodes > static_cast<std::size_t>(resolvable_nodes))
      preemption[std::string(kPreemptionNotHelpful)] = static_cast<int>(num_all_nodes) - resolvable_nodes;
  }
  // FitError.Error (framework/types.go, v1.32) appends the PostFilter message with " %v": the
  // preemption message's own period ends it (older releases added another, "scheduling..").
  msg += " preemption: " + head + " " + text::join(histogram(preemption), ", ") + ".";
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