// NodeResourcesBalancedAllocation (pkg/scheduler/framework/plugins/noderesources/
// balanced_allocation.go), weight 1: nodes whose cpu and memory would be used in equal fractions
// score higher. It reads the pod's plain requests (not the non-zero defaults).
#include "model/plugins/noderesources.hpp"

namespace gpupool::plugins {
namespace {

class BalancedAllocation final : public Plugin {
 public:
  std::string_view name() const override { return "NodeResourcesBalancedAllocation"; }
  int weight() const override { return 1; }
  Reads score_reads() const override { return Reads::BoundPods; }
  Kernel score_kernel() const override { return Kernel::BalancedAllocation; }
  std::int64_t score(const Cycle& c, const NodeInfo& n) const override {
    return balanced_allocation(n.requested.get(kCpu) + c.request_cpu, n.allocatable.get(kCpu),
                               n.requested.get(kMemory) + c.request_memory, n.allocatable.get(kMemory));
  }
  bool shape_key(const PodRequirements&, std::string&) const override { return true; }  // nothing cached
};

}  // namespace

const Plugin& balanced_allocation() { return instance<BalancedAllocation>(); }

}  // namespace gpupool::plugins
