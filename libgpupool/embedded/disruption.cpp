#include "embedded/disruption.hpp"

#include <map>
#include <set>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"
#include "gpupool/rollout.hpp"

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

}  // namespace

DisruptionController::DisruptionController(Store& store, const Clock& clock) : store_(store), clock_(clock) {
  subscription_ = store_.subscribe([this](const WatchEvent& e) {
    WritingAs as("kube-controller-manager");
    on_event(e);
  });
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
    desired = std::max<std::int64_t>(0, expected - scaled_int_or_percent(max_unavailable, "", expected, true));
  } else if (min_available && min_available->is_int64()) {
    desired = min_available->as_int64();
    expected = static_cast<std::int64_t>(pods.size());
  } else if (min_available && min_available->is_string()) {
    expected = expected_scale();
    desired = scaled_int_or_percent(min_available, "", expected, true);
  }
  // buildDisruptedPodMap: the pods an eviction took a disruption for stay counted as disrupted
  // (not healthy) until they are being deleted, for at most DeletionTimeout (2 minutes).
  json::object disrupted;
  const json::object* was = object_at(*pdb, {"status", "disruptedPods"});
  for (const auto& p : pods) {
    const json::object* md = object_at(*p, {"metadata"});
    const std::string pod = string_of(md, "name");
    if ((md && md->contains("deletionTimestamp")) || !was || !was->contains(pod)) continue;
    Clock::time_point at{};
    if (parse_rfc3339(string_of(was, pod), at) && at + std::chrono::minutes(2) > now) disrupted[pod] = was->at(pod);
  }
  std::int64_t current = 0;
  for (const auto& p : pods) current += healthy(*p) && !disrupted.contains(util::name_of(*p)) ? 1 : 0;
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
          if (disrupted.empty())
            st.erase("disruptedPods");
          else
            st["disruptedPods"] = disrupted;
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

namespace {

json::object success_status() {
  return json::object{
      {"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object{}}, {"status", "Success"}, {"code", 201}};
}

StatusError too_many_requests(const std::string& cause, int retry_after) {
  // errors.NewTooManyRequests with a DisruptionBudget cause (details without a name or kind).
  return StatusError(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.", {},
                     {}, {}, {StatusCause{"DisruptionBudget", cause, ""}},
                     retry_after > 0 ? std::optional<int>(retry_after) : std::nullopt);
}

/// addConditionAndDeletePod: (not in a dry run) the options' preconditions checked against the
/// pod, the DisruptionTarget condition written, then the pod deleted with the options.
void add_condition_and_delete(Store& store, Clock::time_point now, const std::string& ns, const std::string& name,
                              DeleteOptions o, bool dry_run) {
  const ResourceType& pods = store.type("", "pods");
  if (!dry_run) {
    json::object pod = store.get(pods, ns, name);
    const json::object* md = object_at(pod, {"metadata"});
    auto conflict = [&](const std::string& why) {
      return StatusError(409, "Conflict", fmt::format("Operation cannot be fulfilled on Pod \"{}\": {}", name, why),
                         name, "", "Pod");
    };
    if (o.precondition_uid && !o.precondition_uid->empty() && *o.precondition_uid != string_of(md, "uid"))
      throw conflict(fmt::format(
          "the UID in the precondition ({}) does not match the UID in record ({}). The object might have been "
          "deleted and then recreated",
          *o.precondition_uid, string_of(md, "uid")));
    if (o.precondition_resource_version && !o.precondition_resource_version->empty() &&
        *o.precondition_resource_version != string_of(md, "resourceVersion"))
      throw conflict(fmt::format(
          "the ResourceVersion in the precondition ({}) does not match the ResourceVersion in record ({}). The "
          "object might have been modified",
          *o.precondition_resource_version, string_of(md, "resourceVersion")));
    json::value& conds = util::ensure_object(pod, "status")["conditions"];
    if (!conds.is_array()) conds = json::array{};
    util::set_condition(conds.as_array(), json::object{{"type", "DisruptionTarget"},
                                                       {"status", "True"},
                                                       {"lastProbeTime", nullptr},
                                                       {"lastTransitionTime", to_rfc3339(now)},
                                                       {"reason", "EvictionByEvictionAPI"},
                                                       {"message", "Eviction API: evicting"}});
    const json::object updated = store.update(pods, ns, std::move(pod), {}, "status");
    // A resourceVersion precondition follows the pod to the version this write made.
    if (o.precondition_resource_version)
      o.precondition_resource_version = util::string_of(object_at(updated, {"metadata"}), "resourceVersion");
  }
  o.dry_run = dry_run;
  store.remove(pods, ns, name, o);
}

}  // namespace

json::object evict_pod(Store& store, Clock::time_point now, const std::string& ns, const std::string& name,
                       const json::object& eviction, bool dry_run) {
  if (string_of(object_at(eviction, {"metadata"}), "name") != name)
    throw StatusError::bad_request("name in URL does not match name in Eviction object");
  const json::object* opts = object_at(eviction, {"deleteOptions"});
  if (const json::value* v = opts ? opts->if_contains("ignoreStoreReadErrorWithClusterBreakingPotential") : nullptr;
      v && v->is_bool() && v->as_bool())
    throw StatusError(
        422, "Invalid",
        fmt::format("Eviction.policy \"{}\" is invalid: deleteOptions."
                    "ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: can not be "
                    "set for pod eviction, try after removing the option",
                    name),
        name, "policy", "Eviction",
        {StatusCause{"FieldValueInvalid",
                     "Invalid value: true: can not be set for pod eviction, try after removing the option",
                     "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential"}});
  // propagateDryRun: the request's dryRun, unless the options name one; both named must agree.
  bool body_dry_run = false, body_names_dry_run = false;
  if (const json::value* d = opts ? opts->if_contains("dryRun") : nullptr;
      d && d->is_array() && !d->as_array().empty()) {
    body_names_dry_run = true;
    for (const auto& e : d->as_array()) body_dry_run = body_dry_run || (e.is_string() && e.as_string() == "All");
  }
  if (body_names_dry_run && dry_run && !body_dry_run)
    throw StatusError(
        500, "InternalError",
        fmt::format("Internal error occurred: Non-matching dry-run options in request and content: {} and {}", "[All]",
                    json::serialize(opts->at("dryRun"))));
  dry_run = dry_run || body_dry_run;
  DeleteOptions o;
  if (opts) {
    if (const json::value* g = opts->if_contains("gracePeriodSeconds"); g && g->is_int64())
      o.grace_period = g->as_int64();
    if (const json::object* pre = object_at(*opts, {"preconditions"})) {
      if (const json::value* u = pre->if_contains("uid"); u && u->is_string())
        o.precondition_uid = std::string(u->as_string());
      if (const json::value* rv = pre->if_contains("resourceVersion"); rv && rv->is_string())
        o.precondition_resource_version = std::string(rv->as_string());
    }
    if (const json::value* p = opts->if_contains("propagationPolicy"); p && p->is_string())
      o.propagation = parse_propagation(p->as_string());
  }
  const bool rv_unset = !o.precondition_resource_version;

  const ResourceType& pods = store.type("", "pods");
  const json::object pod = store.get(pods, ns, name);
  const std::string phase = string_of(object_at(pod, {"status"}), "phase");
  const bool deleting = object_at(pod, {"metadata"}) && object_at(pod, {"metadata"})->contains("deletionTimestamp");
  const std::string rv = string_of(object_at(pod, {"metadata"}), "resourceVersion");
  // canIgnorePDB: a pod that is not running (or already going) is deleted without a budget.
  if (phase == "Succeeded" || phase == "Failed" || phase == "Pending" || deleting) {
    DeleteOptions d = o;
    if (phase != "Succeeded" && phase != "Failed" && !deleting && rv_unset) d.precondition_resource_version = rv;
    add_condition_and_delete(store, now, ns, name, d, dry_run);
    return success_status();
  }
  std::vector<json::object> budgets;
  const ResourceType& pdbs = store.type("policy", "poddisruptionbudgets");
  for (const auto& b : store.list(pdbs, ns).items)
    if (const json::object* sel = object_at(*b, {"spec", "selector"});
        sel && util::selector_matches(*sel, object_at(pod, {"metadata", "labels"})))
      budgets.push_back(*b);
  if (budgets.size() > 1)
    return json::object{{"kind", "Status"},
                        {"apiVersion", "v1"},
                        {"metadata", json::object{}},
                        {"status", "Failure"},
                        {"message",
                         "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                         "does not support."},
                        {"code", 500}};
  bool precondition_rv = false;
  if (budgets.size() == 1) {
    const std::string budget = util::name_of(budgets[0]);
    const json::object* st = object_at(budgets[0], {"status"});
    const std::int64_t current = util::int_of(st, "currentHealthy", 0), desired = util::int_of(st, "desiredHealthy", 0);
    const json::value* policy = object_at(budgets[0], {"spec"})->if_contains("unhealthyPodEvictionPolicy");
    if (!ctrl::pod_ready(pod) && ((policy && policy->is_string() && policy->as_string() == "AlwaysAllow") ||
                                  (current >= desired && desired > 0))) {
      precondition_rv = true;
    } else {
      // checkAndDecrement, retried on conflicts with the budget read again.
      for (int attempt = 0;; ++attempt) {
        json::object b = attempt == 0 ? budgets[0] : store.get(pdbs, ns, budget);
        json::object& status = util::ensure_object(b, "status");
        const std::int64_t generation = util::int_of(object_at(b, {"metadata"}), "generation", 0);
        if (util::int_of(&status, "observedGeneration", 0) < generation)
          throw too_many_requests(
              fmt::format("The disruption budget {} is still being processed by the server.", budget), 10);
        const std::int64_t allowed = util::int_of(&status, "disruptionsAllowed", 0);
        if (allowed < 0)
          throw StatusError(403, "Forbidden",
                            fmt::format("poddisruptionbudgets.policy \"{}\" is forbidden: pdb disruptions allowed is "
                                        "negative",
                                        budget),
                            budget, "policy", "poddisruptionbudget");
        const json::value* dp = status.if_contains("disruptedPods");
        if (dp && dp->is_object() && dp->as_object().size() > 2000)
          throw StatusError(403, "Forbidden",
                            fmt::format("poddisruptionbudgets.policy \"{}\" is forbidden: DisruptedPods map too big - "
                                        "too many evictions not confirmed by PDB controller",
                                        budget),
                            budget, "policy", "poddisruptionbudget");
        if (allowed == 0)
          throw too_many_requests(
              fmt::format("The disruption budget {} needs {} healthy pods and has {} currently", budget,
                          util::int_of(&status, "desiredHealthy", 0), util::int_of(&status, "currentHealthy", 0)),
              0);
        status["disruptionsAllowed"] = allowed - 1;
        if (allowed - 1 == 0) {
          // UpdateDisruptionAllowedCondition
          json::value& conds = status["conditions"];
          if (!conds.is_array()) conds = json::array{};
          util::set_condition(conds.as_array(),
                              json::object{{"type", "DisruptionAllowed"},
                                           {"status", "False"},
                                           {"reason", "InsufficientPods"},
                                           {"message", ""},
                                           {"observedGeneration", util::int_of(&status, "observedGeneration", 0)},
                                           {"lastTransitionTime", to_rfc3339(now)}});
        }
        if (dry_run) break;
        json::value& map = status["disruptedPods"];
        if (!map.is_object()) map = json::object{};
        map.as_object()[name] = to_rfc3339(now);
        try {
          store.update(pdbs, ns, std::move(b), {}, "status");
          break;
        } catch (const StatusError& e) {
          if (e.code() != 409 || attempt >= 19) throw;
        }
      }
    }
  }
  DeleteOptions d = o;
  if (precondition_rv) d.precondition_resource_version = rv;
  try {
    add_condition_and_delete(store, now, ns, name, d, dry_run);
  } catch (const StatusError& e) {
    if (e.code() == 409 && precondition_rv && rv_unset)
      throw too_many_requests(
          fmt::format("The disruption budget {} is still being processed by the server.", util::name_of(budgets[0])),
          10);
    throw;
  }
  return success_status();
}

}  // namespace gpupool::embedded
