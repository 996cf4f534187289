// NodeUnschedulable (pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go):
// a node with spec.unschedulable rejects the pod unless it tolerates the
// node.kubernetes.io/unschedulable:NoSchedule taint — "If pod tolerate unschedulable taint, it's
// also tolerate `node.Spec.Unschedulable`". Reason ErrReasonUnschedulable.
#include "model/plugins/plugin.hpp"

namespace gpupool::plugins {
namespace {

bool tolerates_unschedulable(const PodRequirements& pod) {
  static const Taint kUnschedulable{"node.kubernetes.io/unschedulable", "", TaintEffect::NoSchedule};
  return tolerated(kUnschedulable, pod.tolerations);
}

class NodeUnschedulable final : public Plugin {
 public:
  std::string_view name() const override { return "NodeUnschedulable"; }
  Reads filter_reads() const override { return Reads::NodeSpec; }
  bool filter(const Cycle& c, const NodeInfo& n) const override {
    return !n.unschedulable || tolerates_unschedulable(c.pod);
  }
  std::vector<std::string> reasons(const Cycle&, const NodeInfo&) const override {
    return {"node(s) were unschedulable"};
  }
  // What the filter reads of the pod: whether it tolerates the unschedulable taint.
  bool shape_key(const PodRequirements& pod, std::string& out) const override {
    out.push_back(tolerates_unschedulable(pod) ? '1' : '0');
    return true;
  }
};

}  // namespace

const Plugin& node_unschedulable() { return instance<NodeUnschedulable>(); }

}  // namespace gpupool::plugins
