// PodTopologySpread's system default constraints, simplified (pkg/scheduler/framework/plugins/
// podtopologyspread/scoring.go), weight 2: pods sharing a spread key (their controller) are spread
// over nodes. The raw score is the count of such pods bound to the node; NormalizeScore gives
// `MaxNodeScore * (max - count) / max` (every node MaxNodeScore when max is 0). No hard
// constraints (whenUnsatisfiable DoNotSchedule), so no Filter.
#include "model/plugins/plugin.hpp"

namespace gpupool::plugins {
namespace {

class PodTopologySpread final : public Plugin {
 public:
  std::string_view name() const override { return "PodTopologySpread"; }
  int weight() const override { return 2; }
  Reads score_reads() const override { return Reads::BoundPods; }
  Kernel score_kernel() const override { return Kernel::SpreadCount; }
  std::int64_t score(const Cycle& c, const NodeInfo& n) const override { return n.spread_count(c.spread); }
  bool normalizes() const override { return true; }
  std::int64_t normalize(std::int64_t raw, std::int64_t max_raw) const override {
    return max_raw == 0 ? kMaxNodeScore : kMaxNodeScore * (max_raw - raw) / max_raw;
  }
  bool shape_key(const PodRequirements&, std::string&) const override { return true; }  // nothing cached
};

}  // namespace

const Plugin& pod_topology_spread() { return instance<PodTopologySpread>(); }

}  // namespace gpupool::plugins
