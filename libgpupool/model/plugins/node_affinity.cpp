// NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go) and the matching
// rules it uses (component-helpers/scheduling/corev1/nodeaffinity).
// PreFilter: when every required term names nodes with matchFields metadata.name In, only those
// nodes are filtered (others get the framework's "node(s) didn't satisfy plugin(s) [NodeAffinity]");
// terms naming no common node reject the pod with errReasonConflict. Filter: nodeSelector and the
// required node affinity both hold; reason ErrReasonPod. Its Score (preferred terms, weight 2) is
// not modelled: without preferred terms it scores every node alike.
#include <algorithm>
#include <iterator>

#include "model/plugins/plugin.hpp"

namespace gpupool {

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
// need the label to exist and parse as an integer. One rule for a Node and a PlacementNode (their
// labels are a std::map and a FlatMap: the same find()).
namespace {
template <class N>
bool matches_requirement(const NodeSelectorRequirement& r, const N& node, bool is_field) {
  using O = NodeSelectorOperator;
  const std::string* value = nullptr;
  if (is_field) {
    if (r.key == "metadata.name") value = &node.name;
  } else if (auto it = node.labels.find(r.key); it != node.labels.end()) {
    value = &it->second;
  }
  auto in_values = [&] { return value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end(); };
  switch (r.op) {
    case O::In:
      return in_values();
    case O::NotIn:
      return !in_values();
    case O::Exists:
      return value != nullptr;
    case O::DoesNotExist:
      return value == nullptr;
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

template <class N>
bool matches_term(const NodeSelectorTerm& term, const N& node) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  for (const auto& r : term.match_expressions)
    if (!matches_requirement(r, node, false)) return false;
  for (const auto& r : term.match_fields)
    if (!matches_requirement(r, node, true)) return false;
  return true;
}

template <class N>
bool matches_affinity(const PodRequirements& pod, const N& node) {
  for (const auto& [k, v] : pod.node_selector) {
    auto it = node.labels.find(k);
    if (it == node.labels.end() || it->second != v) return false;
  }
  if (pod.required_node_affinity.empty()) return true;
  return std::any_of(pod.required_node_affinity.begin(), pod.required_node_affinity.end(),
                     [&](const NodeSelectorTerm& t) { return matches_term(t, node); });
}
}  // namespace

bool matches(const NodeSelectorRequirement& r, const Node& node, bool is_field) {
  return matches_requirement(r, node, is_field);
}
bool matches(const NodeSelectorRequirement& r, const PlacementNode& node, bool is_field) {
  return matches_requirement(r, node, is_field);
}
bool matches(const NodeSelectorTerm& term, const Node& node) { return matches_term(term, node); }
bool matches(const NodeSelectorTerm& term, const PlacementNode& node) { return matches_term(term, node); }
bool PodRequirements::matches_node_affinity(const Node& node) const { return matches_affinity(*this, node); }
bool PodRequirements::matches_node_affinity(const PlacementNode& node) const { return matches_affinity(*this, node); }

namespace plugins {
namespace {

void put_requirements(std::string& out, const std::vector<NodeSelectorRequirement>& rs) {
  put_key(out, std::to_string(rs.size()));
  for (const auto& r : rs) {
    put_key(out, r.key);
    out.push_back(static_cast<char>(r.op));
    put_key(out, std::to_string(r.values.size()));
    for (const auto& v : r.values) put_key(out, v);
  }
}

class NodeAffinity final : public Plugin {
 public:
  std::string_view name() const override { return "NodeAffinity"; }

  PreFilterResult pre_filter(const PodRequirements& pod) const override {
    PreFilterResult out;
    std::optional<std::set<std::string>> named;
    for (const auto& term : pod.required_node_affinity) {
      std::optional<std::set<std::string>> term_names;
      for (const auto& r : term.match_fields) {
        if (r.key != "metadata.name" || r.op != NodeSelectorOperator::In) continue;
        std::set<std::string> vs(r.values.begin(), r.values.end());
        if (!term_names) {
          term_names = std::move(vs);
        } else {  // the requirements are ANDed: the intersection
          std::set<std::string> both;
          std::set_intersection(term_names->begin(), term_names->end(), vs.begin(), vs.end(),
                                std::inserter(both, both.begin()));
          term_names = std::move(both);
        }
      }
      if (!term_names) return out;  // a term naming no node: every node is eligible (terms are ORed)
      if (!named) named.emplace();
      named->insert(term_names->begin(), term_names->end());
    }
    if (named && named->empty())
      out.rejection = "pod affinity terms conflict";  // errReasonConflict
    else
      out.node_names = std::move(named);
    return out;
  }

  Reads filter_reads() const override { return Reads::NodeSpec; }
  bool filter(const Cycle& c, const NodeInfo& n) const override {
    return (c.pod.node_selector.empty() && c.pod.required_node_affinity.empty()) || c.pod.matches_node_affinity(n.node);
  }
  std::vector<std::string> reasons(const Cycle&, const NodeInfo&) const override {
    return {"node(s) didn't match Pod's node affinity/selector"};
  }

  // What the filter reads of the pod: nodeSelector and the required terms.
  bool shape_key(const PodRequirements& pod, std::string& out) const override {
    put_key(out, std::to_string(pod.node_selector.size()));
    for (const auto& [k, v] : pod.node_selector) put_key(out, k), put_key(out, v);
    put_key(out, std::to_string(pod.required_node_affinity.size()));
    for (const auto& t : pod.required_node_affinity)
      put_requirements(out, t.match_expressions), put_requirements(out, t.match_fields);
    return true;
  }
};

}  // namespace

const Plugin& node_affinity() { return instance<NodeAffinity>(); }

}  // namespace plugins
}  // namespace gpupool
