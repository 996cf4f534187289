// The scheduler profile: the built-in plugins in the order of kube-scheduler v1.32's default
// profile (pkg/scheduler/apis/config/v1/default_plugins.go: NodeUnschedulable, NodeName,
// TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, VolumeRestrictions, NodeVolumeLimits,
// VolumeBinding, VolumeZone, PodTopologySpread, InterPodAffinity, NodeResourcesBalancedAllocation,
// ImageLocality), as pkg/scheduler/framework/plugins/registry.go lists the in-tree ones. Those
// gpupool does not model are absent (see scheduling.hpp). Plugins registered at run time follow.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>

#include "model/plugins/plugin.hpp"

namespace gpupool::plugins {

// The one list of built-in plugins, in the default profile's order. Each entry names the factory
// function its own file of this folder defines (`const Plugin& name()`, via instance<>()).
#define GPUPOOL_BUILTIN_PLUGINS(X) \
  X(node_unschedulable)            \
  X(node_name)                     \
  X(taint_toleration)              \
  X(node_affinity)                 \
  X(node_resources_fit)            \
  X(volume_binding)                \
  X(pod_topology_spread)           \
  X(balanced_allocation)

#define GPUPOOL_DECLARE_PLUGIN(name) const Plugin& name();
GPUPOOL_BUILTIN_PLUGINS(GPUPOOL_DECLARE_PLUGIN)
#undef GPUPOOL_DECLARE_PLUGIN

namespace {

std::vector<const Plugin*> builtin_plugins() {
#define GPUPOOL_PLUGIN_ENTRY(name) &name(),
  return {GPUPOOL_BUILTIN_PLUGINS(GPUPOOL_PLUGIN_ENTRY)};
#undef GPUPOOL_PLUGIN_ENTRY
}

// Derives what the runtime needs from the plugins' declarations.
std::shared_ptr<const SchedulerProfile> build(std::vector<std::shared_ptr<const Plugin>> registered,
                                              std::uint64_t generation) {
  auto p = std::make_shared<SchedulerProfile>();
  p->plugins = builtin_plugins();
  for (const auto& r : registered) p->plugins.push_back(r.get());
  p->registered = std::move(registered);
  p->generation = generation;
  bool indexed = true;
  for (std::size_t i = 0; i < p->plugins.size(); ++i) {
    const Plugin& pl = *p->plugins[i];
    const auto idx = static_cast<std::uint8_t>(i);
    const Reads f = pl.filter_reads(), s = pl.weight() > 0 ? pl.score_reads() : Reads::Nothing;
    if (f == Reads::NodeSpec) p->static_filters.push_back(idx);
    if (f == Reads::BoundPods) {
      p->dynamic_filters.push_back(idx);
      if (pl.filter_kernel() == Kernel::FitsRequest && !p->fits_request)
        p->fits_request = true;
      else
        indexed = false;
    }
    if (f == Reads::NodeSpec || s == Reads::NodeSpec) p->keyed.push_back(idx);
    if (s == Reads::Nothing) continue;
    const int pos = static_cast<int>(p->scorers.size());
    p->scorers.push_back(idx);
    if (s == Reads::NodeSpec && p->cached_score < 0) {
      p->cached_score = pos;
      continue;
    }
    int* slot = nullptr;
    switch (s == Reads::BoundPods ? pl.score_kernel() : Kernel::None) {
      case Kernel::LeastAllocated:
        slot = &p->least_allocated;
        break;
      case Kernel::BalancedAllocation:
        slot = &p->balanced_allocation;
        break;
      case Kernel::SpreadCount:
        slot = &p->spread_count;
        break;
      default:
        break;
    }
    if (slot && *slot < 0)
      *slot = pos;
    else
      indexed = false;
  }
  if (p->plugins.size() >= SchedulerProfile::kNone) throw std::length_error("too many scheduler plugins");
  p->indexed = indexed;
  return p;
}

struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<const Plugin>> registered;
  std::shared_ptr<const SchedulerProfile> profile = build({}, 1);
  std::atomic<std::uint64_t> generation{1};

  void rebuild() {
    const std::uint64_t g = generation.load() + 1;
    profile = build(registered, g);
    generation.store(g, std::memory_order_release);
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const Plugin* SchedulerProfile::find(std::string_view name) const {
  for (const Plugin* p : plugins)
    if (p->name() == name) return p;
  return nullptr;
}

std::shared_ptr<const SchedulerProfile> current_profile() {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  return r.profile;
}

std::uint64_t profile_generation() noexcept { return registry().generation.load(std::memory_order_acquire); }

ScopedRegistration::ScopedRegistration(std::unique_ptr<Plugin> plugin) : plugin_(std::move(plugin)) {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  r.registered.push_back(plugin_);
  r.rebuild();
}

ScopedRegistration::~ScopedRegistration() {
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  r.registered.erase(std::find(r.registered.begin(), r.registered.end(), plugin_));
  r.rebuild();
}

}  // namespace gpupool::plugins
