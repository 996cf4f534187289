#include "embedded/disruption.hpp"

#include <cmath>
#include <map>
#include <set>

#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"

namespace gpupool::embedded {

namespace json = boost::json;
using util::object_at;
using util::string_of;

namespace {

// The budget's spec.selector (a LabelSelector; a budget without one selects nothing).
bool selects(const json::object& pdb, const json::object& pod) {
  const json::object* sel = object_at(pdb, {"spec", "selector"});
  if (!sel) return false;
  return util::selector_matches(*sel, object_at(pod, {"metadata", "labels"}));
}

bool healthy(const json::object& pod) {
  // countHealthyPods: Ready and not being deleted.
  if (object_at(pod, {"metadata"}) && object_at(pod, {"metadata"})->contains("deletionTimestamp")) return false;
  const json::value* conds =
      object_at(pod, {"status"}) ? object_at(pod, {"status"})->if_contains("conditions") : nullptr;
  return string_of(util::find_condition(conds && conds->is_array() ? &conds->as_array() : nullptr, "Ready"),
                   "status") == "True";
}

// intstr.GetScaledValueFromIntOrPercent(v, total, roundUp=true).
std::int64_t scaled(const json::value& v, std::int64_t total) {
  if (v.is_int64()) return v.as_int64();
  if (!v.is_string()) return 0;
  std::string s(v.as_string());
  if (s.empty() || s.back() != '%') return 0;
  s.pop_back();
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(std::stoll(s)) * static_cast<double>(total) / 100.0));
}

}  // namespace

DisruptionController::DisruptionController(Store& store, const Clock& clock) : store_(store), clock_(clock) {
  subscription_ = store_.subscribe([this](const WatchEvent& e) { on_event(e); });
}

DisruptionController::~DisruptionController() { store_.unsubscribe(subscription_); }

void DisruptionController::on_event(const WatchEvent& e) {
  if (!e.type_info || !e.object) return;
  const ResourceType& t = *e.type_info;
  const std::string ns = util::namespace_of(*e.object);
  if (t.group == "policy" && t.resource == "poddisruptionbudgets") {
    if (e.type != EventType::Deleted) sync(ns, util::name_of(*e.object));
  } else if (t.group.empty() && t.resource == "pods") {
    const auto& pdbs = store_.type("policy", "poddisruptionbudgets");
    for (const auto& pdb : store_.list(pdbs, ns).items)
      if (selects(*pdb, *e.object) || (e.old_object && selects(*pdb, *e.old_object))) sync(ns, util::name_of(*pdb));
  }
}

void DisruptionController::sync(const std::string& ns, const std::string& name) {
  const auto& pdbs = store_.type("policy", "poddisruptionbudgets");
  const auto pdb = store_.find(pdbs, ns, name);
  if (!pdb) return;
  std::vector<std::shared_ptr<const json::object>> pods;
  for (const auto& p : store_.list(store_.type("", "pods"), ns).items)
    if (selects(*pdb, *p)) pods.push_back(p);
  const auto now = clock_.now();
  if (pods.empty())
    util::record_event(store_, std::chrono::time_point_cast<std::chrono::system_clock::duration>(now), *pdb, "Normal",
                       "NoPods", "No matching pods found", "controllermanager");
  // getExpectedScale: the replicas of each pod's controller (a ReplicaSet of a Deployment counts
  // as the Deployment), each controller once; a pod without one counts as itself.
  auto expected_scale = [&] {
    std::int64_t count = 0;
    std::set<std::string> seen;
    for (const auto& p : pods) {
      const std::string owner_uid = util::controller_uid(*p);
      if (owner_uid.empty()) {
        ++count;
        continue;
      }
      if (!seen.insert(owner_uid).second) continue;
      std::int64_t replicas = 1;
      for (const auto& rs : store_.list(store_.type("apps", "replicasets"), ns).items) {
        if (util::uid_of(*rs) != owner_uid) continue;
        replicas = util::int_of(object_at(*rs, {"spec"}), "replicas", 1);
        const std::string dep_uid = util::controller_uid(*rs);
        if (!dep_uid.empty())
          for (const auto& d : store_.list(store_.type("apps", "deployments"), ns).items)
            if (util::uid_of(*d) == dep_uid && seen.insert(dep_uid).second)
              replicas = util::int_of(object_at(*d, {"spec"}), "replicas", 1);
      }
      count += replicas;
    }
    return count;
  };
  const json::object* spec = object_at(*pdb, {"spec"});
  const json::value* max_unavailable = spec ? spec->if_contains("maxUnavailable") : nullptr;
  const json::value* min_available = spec ? spec->if_contains("minAvailable") : nullptr;
  std::int64_t expected = 0, desired = 0;
  if (max_unavailable && !max_unavailable->is_null()) {
    expected = expected_scale();
    desired = std::max<std::int64_t>(0, expected - scaled(*max_unavailable, expected));
  } else if (min_available && min_available->is_int64()) {
    desired = min_available->as_int64();
    expected = static_cast<std::int64_t>(pods.size());
  } else if (min_available && min_available->is_string()) {
    expected = expected_scale();
    desired = scaled(*min_available, expected);
  }
  std::int64_t current = 0;
  for (const auto& p : pods) current += healthy(*p) ? 1 : 0;
  std::int64_t allowed = current - desired;
  if (expected <= 0 || allowed <= 0) allowed = 0;
  const std::int64_t generation = util::int_of(object_at(*pdb, {"metadata"}), "generation", 1);
  try {
    store_.mutate(
        pdbs, ns, name,
        [&](json::object& o) {
          auto& st = util::ensure_object(o, "status");
          st["currentHealthy"] = current;
          st["desiredHealthy"] = desired;
          st["expectedPods"] = expected;
          st["disruptionsAllowed"] = allowed;
          st["observedGeneration"] = generation;
          // UpdateDisruptionAllowedCondition (apimeta.SetStatusCondition: the time moves on a change).
          auto& conds = st["conditions"];
          if (!conds.is_array()) conds = json::array{};
          json::object cond{{"type", "DisruptionAllowed"},
                            {"status", allowed > 0 ? "True" : "False"},
                            {"reason", allowed > 0 ? "SufficientPods" : "InsufficientPods"},
                            {"message", ""},
                            {"observedGeneration", generation},
                            {"lastTransitionTime", to_rfc3339(now)}};
          util::set_condition(conds.as_array(), cond);
        },
        {}, "status");
  } catch (const StatusError&) {
    // deleted meanwhile
  }
}

}  // namespace gpupool::embedded
