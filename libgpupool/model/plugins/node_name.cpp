// NodeName (pkg/scheduler/framework/plugins/nodename/node_name.go): a pod with spec.nodeName fits
// only that node. Reason ErrReason.
#include "model/plugins/plugin.hpp"

namespace gpupool::plugins {
namespace {

class NodeName final : public Plugin {
 public:
  std::string_view name() const override { return "NodeName"; }
  Reads filter_reads() const override { return Reads::NodeSpec; }
  bool filter(const Cycle& c, const NodeInfo& n) const override {
    return c.pod.node_name.empty() || c.pod.node_name == n.node.name;
  }
  std::vector<std::string> reasons(const Cycle&, const NodeInfo&) const override {
    return {"node(s) didn't match the requested node name"};
  }
  // A pod naming its node is not cached: each name would make a constraint set of its own.
  bool shape_key(const PodRequirements& pod, std::string&) const override { return pod.node_name.empty(); }
};

}  // namespace

const Plugin& node_name() { return instance<NodeName>(); }

}  // namespace gpupool::plugins
