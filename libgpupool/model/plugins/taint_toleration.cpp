// TaintToleration (pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go).
// Filter: every NoSchedule and NoExecute taint must be tolerated
// (FindMatchingUntoleratedTaint with DoNotScheduleTaintsFilterFunc); the reason names the first one,
// "node(s) had untolerated taint {%s: %s}". Score (weight 3): the count of PreferNoSchedule taints
// not tolerated (countIntolerableTaintsPreferNoSchedule), normalized in reverse
// (helper.DefaultNormalizeScore(MaxNodeScore, true, ...)): fewer is better.
#include "model/plugins/plugin.hpp"

namespace gpupool::plugins {
namespace {

class TaintToleration final : public Plugin {
 public:
  std::string_view name() const override { return "TaintToleration"; }

  Reads filter_reads() const override { return Reads::NodeSpec; }
  bool filter(const Cycle& c, const NodeInfo& n) const override {
    if (!n.has_filtering_taints) return true;
    for (const auto& taint : n.node.taints) {
      if (taint.effect == TaintEffect::PreferNoSchedule) continue;
      if (!tolerated(taint, c.pod.tolerations)) return false;
    }
    return true;
  }
  std::vector<std::string> reasons(const Cycle& c, const NodeInfo& n) const override {
    auto t = first_untolerated_filtering_taint(n.node.taints, c.pod.tolerations);
    return {"node(s) had untolerated taint {" + (t ? t->key + ": " + t->value : std::string(": ")) + "}"};
  }

  int weight() const override { return 3; }
  Reads score_reads() const override { return Reads::NodeSpec; }
  std::int64_t score(const Cycle& c, const NodeInfo& n) const override {
    return n.has_prefer_taints ? count_intolerable_prefer_no_schedule(n.node.taints, c.pod.tolerations) : 0;
  }
  bool normalizes() const override { return true; }
  // DefaultNormalizeScore(MaxNodeScore, reverse=true): `maxPriority - maxPriority*score/maxCount`,
  // every node maxPriority when maxCount is 0.
  std::int64_t normalize(std::int64_t raw, std::int64_t max_raw) const override {
    return max_raw == 0 ? kMaxNodeScore : kMaxNodeScore - kMaxNodeScore * raw / max_raw;
  }

  // What filter and score read of the pod: its tolerations.
  bool shape_key(const PodRequirements& pod, std::string& out) const override {
    put_key(out, std::to_string(pod.tolerations.size()));
    for (const auto& t : pod.tolerations) {
      put_key(out, t.key);
      out.push_back(static_cast<char>(t.op));
      put_key(out, t.value);
      out.push_back(t.effect ? static_cast<char>(1 + static_cast<int>(*t.effect)) : '\0');
    }
    return true;
  }
};

}  // namespace

const Plugin& taint_toleration() { return instance<TaintToleration>(); }

}  // namespace gpupool::plugins
