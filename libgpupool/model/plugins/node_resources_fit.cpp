// NodeResourcesFit (pkg/scheduler/framework/plugins/noderesources/fit.go, least_allocated.go).
// Filter (fitsRequest): room for one more pod ("Too many pods") and for each non-zero request of
// cpu, memory, ephemeral-storage and every scalar resource ("Insufficient <name>"); its status is
// Unschedulable, the only one preemption may resolve. Score (weight 1, the default
// LeastAllocated strategy): cpu and memory, with the non-zero request defaults.
#include "model/plugins/noderesources.hpp"

namespace gpupool::plugins {
namespace {

class NodeResourcesFit final : public Plugin {
 public:
  std::string_view name() const override { return "NodeResourcesFit"; }

  Reads filter_reads() const override { return Reads::BoundPods; }
  Kernel filter_kernel() const override { return Kernel::FitsRequest; }
  bool filter(const Cycle& c, const NodeInfo& n) const override {
    return check(c, n, [](int) { return false; });
  }
  std::vector<std::string> reasons(const Cycle& c, const NodeInfo& n) const override {
    std::vector<std::string> out;
    check(c, n, [&](int id) {
      out.push_back(id == kPods ? std::string("Too many pods") : "Insufficient " + c.state.resource_name(id));
      return true;
    });
    return out;
  }
  Code code() const override { return Code::Unschedulable; }

  int weight() const override { return 1; }
  Reads score_reads() const override { return Reads::BoundPods; }
  Kernel score_kernel() const override { return Kernel::LeastAllocated; }
  std::int64_t score(const Cycle& c, const NodeInfo& n) const override {
    return least_allocated(n.nonzero_milli_cpu + c.nonzero_cpu, n.allocatable.get(kCpu),
                           n.nonzero_memory + c.nonzero_memory, n.allocatable.get(kMemory));
  }

  bool shape_key(const PodRequirements&, std::string&) const override { return true; }  // nothing cached

 private:
  template <class Insufficient>
  static bool check(const Cycle& c, const NodeInfo& n, Insufficient&& insufficient) {
    auto free = [&](int id) { return n.allocatable.get(id) - n.requested.get(id); };
    return fits_request(c.fit, free_pods(n.allocatable.get(kPods), n.pod_count), free(kCpu), free(kMemory), free,
                        insufficient);
  }
};

}  // namespace

const Plugin& node_resources_fit() { return instance<NodeResourcesFit>(); }

}  // namespace gpupool::plugins
