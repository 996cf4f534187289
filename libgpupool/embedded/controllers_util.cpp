#include "embedded/controllers_util.hpp"

namespace gpupool::embedded::util {

const json::object* find_condition(const json::array* conditions, std::string_view type) {
  if (!conditions) return nullptr;
  for (const auto& c : *conditions)
    if (c.is_object() && string_of(&c.as_object(), "type") == type) return &c.as_object();
  return nullptr;
}

bool set_condition(json::array& conditions, const json::object& condition) {
  const std::string type = string_of(&condition, "type");
  for (auto& c : conditions) {
    if (!c.is_object() || string_of(&c.as_object(), "type") != type) continue;
    json::object& old = c.as_object();
    json::object next = condition;
    if (string_of(&old, "status") == string_of(&condition, "status") && old.contains("lastTransitionTime"))
      next["lastTransitionTime"] = old["lastTransitionTime"];
    // lastUpdateTime/lastProbeTime/lastHeartbeatTime move with every write that changes something.
    bool same = true;
    for (const auto& [k, v] : next)
      if (k != "lastUpdateTime" && k != "lastProbeTime" && k != "lastHeartbeatTime" &&
          (!old.contains(k) || old.at(k) != v))
        same = false;
    if (same) return false;
    old = std::move(next);
    return true;
  }
  conditions.push_back(condition);
  return true;
}

}  // namespace gpupool::embedded::util
