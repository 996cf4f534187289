// VolumeBinding (pkg/scheduler/framework/plugins/volumebinding/volume_binding.go), PreFilter only:
// podHasPVCs / GetPodVolumeClaims. A claim that does not exist or is being deleted rejects the pod
// at once (the first such claim, in volume order); unbound claims of a class that binds
// Immediately reject it with ErrReasonBindConflict's PreFilter message; claims waiting for their
// first consumer pass. Claims whose status is Unknown (not looked up by the caller) are skipped.
// The Filter (a bound volume's node affinity, provisioning checks) is not modelled: gpupool's
// volumes carry no node affinity.
#include <fmt/format.h>

#include "model/plugins/plugin.hpp"

namespace gpupool::plugins {
namespace {

class VolumeBinding final : public Plugin {
 public:
  std::string_view name() const override { return "VolumeBinding"; }
  PreFilterResult pre_filter(const PodRequirements& pod) const override {
    bool unbound_immediate = false;
    for (const PodClaim& c : pod.claims) {
      switch (c.status) {
        case ClaimStatus::Missing:
          return {std::nullopt, fmt::format("persistentvolumeclaim \"{}\" not found", c.name)};
        case ClaimStatus::Deleting:
          return {std::nullopt, fmt::format("persistentvolumeclaim \"{}\" is being deleted", c.name)};
        case ClaimStatus::UnboundImmediate:
          unbound_immediate = true;
          break;
        case ClaimStatus::Unknown:
        case ClaimStatus::Bound:
        case ClaimStatus::UnboundWaitForFirstConsumer:
          break;
      }
    }
    if (unbound_immediate) return {std::nullopt, "pod has unbound immediate PersistentVolumeClaims"};
    return {};
  }
  // No NodeSpec filter or score: nothing of the pod enters the verdict cache's key.
  bool shape_key(const PodRequirements&, std::string&) const override { return true; }
};

}  // namespace

const Plugin& volume_binding() { return instance<VolumeBinding>(); }

}  // namespace gpupool::plugins
