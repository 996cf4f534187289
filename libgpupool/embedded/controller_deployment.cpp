// embedded/controller_deployment.cpp — the Deployment controller (pkg/controller/deployment):
// plan_deployment, and the pod-template-hash that names its ReplicaSets.
#include "embedded/controllers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

namespace {

std::uint32_t fnv32a(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

}  // namespace

std::string safe_encode_string(std::string_view s) {
  // k8s.io/apimachinery/pkg/util/rand: alphanums without vowels and confusable characters.
  static constexpr std::string_view alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string out(s);
  for (auto& c : out) c = alphabet[static_cast<unsigned char>(c) % alphabet.size()];
  return out;
}

std::string pod_template_hash(const json::object& pod_template) {
  return safe_encode_string(std::to_string(fnv32a(json::serialize(pod_template))));
}

// maxSurge of the RollingUpdate strategy resolved against the replicas, rounded up
// (deployment/util MaxSurge, intstr.GetScaledValueFromIntOrPercent); default 25%; Recreate: 0.
std::int64_t max_surge(const json::object& d, std::int64_t replicas) {
  if (string_of(object_at(d, {"spec", "strategy"}), "type") == "Recreate") return 0;
  const json::object* ru = object_at(d, {"spec", "strategy", "rollingUpdate"});
  const json::value* v = ru ? ru->if_contains("maxSurge") : nullptr;
  // Computed as Go does (float64, then math.Ceil) and kept within int32, the type of the
  // replica counts it is added to: a huge percentage must not overflow (fuzz_api finding).
  auto clamp = [](double x) -> std::int64_t {
    constexpr double kMax = std::numeric_limits<std::int32_t>::max();
    if (!(x > 0)) return 0;  // also NaN
    return x > kMax ? static_cast<std::int64_t>(kMax) : static_cast<std::int64_t>(x);
  };
  if (v && v->is_int64()) return clamp(static_cast<double>(v->as_int64()));
  const std::string text = v && v->is_string() ? std::string(v->as_string()) : std::string("25%");
  const double n = std::strtod(text.c_str(), nullptr);
  if (!text.empty() && text.back() == '%') return clamp(std::ceil(n * static_cast<double>(replicas) / 100.0));
  return clamp(n);
}

Plan plan_deployment(const json::object& d, const Children& replicasets, Clock::time_point now) {
  Plan plan;
  const json::object* spec = object_at(d, {"spec"});
  const json::object empty;
  const json::object& tmpl = spec && object_at(*spec, {"template"}) ? *object_at(*spec, {"template"}) : empty;
  const std::string hash = pod_template_hash(tmpl);
  const std::string rs_name = name_of(d) + "-" + hash;
  const std::int64_t want = replicas_of(d);
  const std::string max_replicas = std::to_string(want + max_surge(d, want));
  // deployment_util FindNewReplicaSet: the oldest ReplicaSet (creation time, then name) whose
  // template is the Deployment's, the pod-template-hash label aside (EqualIgnoreHash): a rollback
  // to an earlier template takes its ReplicaSet back rather than making another.
  const auto without_hash = [](const json::object& t) {
    json::object copy = t;
    if (json::value* md = copy.if_contains("metadata"); md && md->is_object())
      if (json::value* labels = md->as_object().if_contains("labels"); labels && labels->is_object())
        labels->as_object().erase("pod-template-hash");
    return copy;
  };
  const json::object want_template = without_hash(tmpl);
  std::vector<const json::object*> by_age;
  for (const auto& rs_ptr : replicasets) by_age.push_back(rs_ptr.get());
  std::stable_sort(by_age.begin(), by_age.end(), [](const json::object* a, const json::object* b) {
    const std::string ta = string_of(object_at(*a, {"metadata"}), "creationTimestamp"),
                      tb = string_of(object_at(*b, {"metadata"}), "creationTimestamp");
    return ta != tb ? ta < tb : name_of(*a) < name_of(*b);
  });
  const json::object* current = nullptr;
  for (const json::object* rs : by_age) {
    const json::object* t = object_at(*rs, {"spec", "template"});
    if (t && util::json_equal(without_hash(*t), want_template)) {
      current = rs;
      break;
    }
  }
  // sync.go getNewReplicaSet: the new revision is one more than the old ReplicaSets' highest.
  std::int64_t revision = 0;
  for (const auto& rs_ptr : replicasets)
    if (rs_ptr.get() != current)
      if (const auto r = util::annotation(*rs_ptr, "deployment.kubernetes.io/revision"))
        revision = std::max<std::int64_t>(revision, std::atoll(r->c_str()));
  const std::string new_revision = std::to_string(revision + 1);
  // SetNewReplicaSetAnnotations: the Deployment's annotations copied to its new ReplicaSet (but
  // kubectl's last-applied configuration and the controller's own), then its revision raised to
  // the new one; one that had a revision (a rollback) keeps it in revision-history.
  const auto sync_annotations = [&](json::object& rs) {
    auto& ann = ensure_object(ensure_object(rs, "metadata"), "annotations");
    if (const json::object* da = object_at(d, {"metadata", "annotations"}))
      for (const auto& [k, v] : *da) {
        if (k == "kubectl.kubernetes.io/last-applied-configuration" || k == "deployment.kubernetes.io/revision" ||
            k == "deployment.kubernetes.io/revision-history" || k == "deployment.kubernetes.io/desired-replicas" ||
            k == "deployment.kubernetes.io/max-replicas" || k == "deprecated.deployment.rollback.to")
          continue;
        ann[k] = v;
      }
    const std::string old = string_of(&ann, "deployment.kubernetes.io/revision");
    if (old.empty() || std::atoll(old.c_str()) < revision + 1) {
      if (!old.empty()) {
        // (the 2000-character limit of the history is not reached by a history of numbers here)
        const std::string history = string_of(&ann, "deployment.kubernetes.io/revision-history");
        ann["deployment.kubernetes.io/revision-history"] = history.empty() ? old : history + "," + old;
      }
      ann["deployment.kubernetes.io/revision"] = new_revision;
    }
  };
  // The ReplicaSets this plan writes, by the one they replace (annotations, then replicas).
  std::map<const json::object*, json::object> changed;
  if (current) {
    json::object synced = *current;
    sync_annotations(synced);
    if (!util::json_equal(synced, *current)) changed.emplace(current, std::move(synced));
  }
  json::array conditions;
  if (const json::array* old = util::array_at(d, {"status"}, "conditions")) conditions = *old;
  if (!current) {
    json::object rs_tmpl = tmpl;
    ensure_object(ensure_object(rs_tmpl, "metadata"), "labels")["pod-template-hash"] = hash;
    json::object selector = spec && object_at(*spec, {"selector"}) ? *object_at(*spec, {"selector"}) : json::object{};
    ensure_object(selector, "matchLabels")["pod-template-hash"] = hash;
    json::object labels =
        object_at(tmpl, {"metadata", "labels"}) ? *object_at(tmpl, {"metadata", "labels"}) : json::object{};
    labels["pod-template-hash"] = hash;
    json::object rs{
        {"apiVersion", "apps/v1"},
        {"kind", "ReplicaSet"},
        {"metadata",
         json::object{{"name", rs_name},
                      {"namespace", namespace_of(d)},
                      {"labels", std::move(labels)},
                      {"annotations", json::object{{"deployment.kubernetes.io/desired-replicas", std::to_string(want)},
                                                   {"deployment.kubernetes.io/max-replicas", max_replicas}}},
                      {"ownerReferences", json::array{util::controller_reference(d)}}}},
        {"spec",
         json::object{{"replicas", want}, {"selector", std::move(selector)}, {"template", std::move(rs_tmpl)}}}};
    sync_annotations(rs);
    plan.create.push_back({"apps", "replicasets", std::move(rs)});
    // pkg/controller/deployment/sync.go: reason NewReplicaSetCreated.
    util::set_condition(conditions, condition("Progressing", true, "NewReplicaSetCreated",
                                              fmt::format("Created new replica set \"{}\"", rs_name), now, true));
  }
  // sync.go getNewReplicaSet / SetDeploymentRevision: the Deployment carries its newest
  // ReplicaSet's revision in the annotation deployment.kubernetes.io/revision.
  {
    const json::object* newest = current ? (changed.count(current) ? &changed.at(current) : current) : nullptr;
    const auto cur_rev = newest ? util::annotation(*newest, "deployment.kubernetes.io/revision") : std::nullopt;
    const std::string rev = cur_rev ? *cur_rev : new_revision;
    if (util::annotation(d, "deployment.kubernetes.io/revision") != rev)
      plan.owner_annotations["deployment.kubernetes.io/revision"] = rev;
  }
  // Scale: the current ReplicaSet to spec.replicas, every older one to 0.
  for (const auto& rs_ptr : replicasets) {
    const json::object& rs = *rs_ptr;
    const std::int64_t target = &rs == current ? want : 0;
    if (replicas_of(rs, 0) != target) {
      auto it = changed.try_emplace(&rs, rs).first;
      json::object& scaled = it->second;
      ensure_object(scaled, "spec")["replicas"] = target;
      auto& ann = ensure_object(ensure_object(scaled, "metadata"), "annotations");
      ann["deployment.kubernetes.io/desired-replicas"] = std::to_string(want);
      ann["deployment.kubernetes.io/max-replicas"] = max_replicas;
    }
  }
  for (const auto& rs_ptr : replicasets)  // in the children's order, as before
    if (auto it = changed.find(rs_ptr.get()); it != changed.end())
      plan.update.push_back({"apps", "replicasets", std::move(it->second)});
  std::int64_t replicas = 0, ready = 0, available = 0, updated = 0;
  for (const auto& rs_ptr : replicasets) {
    const json::object& rs = *rs_ptr;
    const json::object* st = object_at(rs, {"status"});
    replicas += int_of(st, "replicas", 0);
    ready += int_of(st, "readyReplicas", 0);
    available += int_of(st, "availableReplicas", 0);
    if (&rs == current) updated = int_of(st, "replicas", 0);
  }
  json::object status = object_at(d, {"status"}) ? *object_at(d, {"status"}) : json::object{};
  status["observedGeneration"] = int_of(object_at(d, {"metadata"}), "generation", 1);
  status["replicas"] = replicas;
  status["updatedReplicas"] = updated;
  status["readyReplicas"] = ready;
  status["availableReplicas"] = available;
  if (replicas - available > 0)
    status["unavailableReplicas"] = replicas - available;
  else
    status.erase("unavailableReplicas");
  for (const char* k : {"readyReplicas", "availableReplicas", "updatedReplicas", "replicas"})
    if (status[k].as_int64() == 0) status.erase(k);  // omitempty, as the API serialises them
  // Available: maxUnavailable of the default RollingUpdate strategy is 25% (rounded down).
  const std::int64_t min_available = want - want / 4;
  util::set_condition(conditions, available >= min_available
                                      ? condition("Available", true, "MinimumReplicasAvailable",
                                                  "Deployment has minimum availability.", now, true)
                                      : condition("Available", false, "MinimumReplicasUnavailable",
                                                  "Deployment does not have minimum availability.", now, true));
  if (current) {
    // (named as it is: a ReplicaSet taken back by a rollback is not named by this template's hash)
    const std::string current_name = name_of(*current);
    const bool complete = updated == want && available >= want && replicas == want;
    util::set_condition(
        conditions,
        complete ? condition("Progressing", true, "NewReplicaSetAvailable",
                             fmt::format("ReplicaSet \"{}\" has successfully progressed.", current_name), now, true)
                 : condition("Progressing", true, "ReplicaSetUpdated",
                             fmt::format("ReplicaSet \"{}\" is progressing.", current_name), now, true));
  }
  // The Deployment controller lists Available before Progressing.
  std::stable_sort(conditions.begin(), conditions.end(), [](const json::value& a, const json::value& b) {
    return string_of(&a.as_object(), "type") == "Available" && string_of(&b.as_object(), "type") != "Available";
  });
  // progress.go syncRolloutStatus / getReplicaFailures: the new ReplicaSet's ReplicaFailure
  // condition (else an old one's) becomes the Deployment's (ReplicaSetToDeploymentCondition:
  // lastUpdateTime = lastTransitionTime); none left removes it.
  const json::object* failure =
      current ? util::find_condition(util::array_at(*current, {"status"}, "conditions"), "ReplicaFailure") : nullptr;
  for (const auto& rs_ptr : replicasets)
    if (!failure) failure = util::find_condition(util::array_at(*rs_ptr, {"status"}, "conditions"), "ReplicaFailure");
  conditions.erase(
      std::remove_if(conditions.begin(), conditions.end(),
                     [](const json::value& c) { return string_of(&c.as_object(), "type") == "ReplicaFailure"; }),
      conditions.end());
  if (failure)
    conditions.push_back(json::object{{"type", "ReplicaFailure"},
                                      {"status", string_of(failure, "status")},
                                      {"lastUpdateTime", string_of(failure, "lastTransitionTime")},
                                      {"lastTransitionTime", string_of(failure, "lastTransitionTime")},
                                      {"reason", string_of(failure, "reason")},
                                      {"message", string_of(failure, "message")}});
  status["conditions"] = std::move(conditions);
  const json::object* old = object_at(d, {"status"});
  if (!old || !util::json_equal(*old, status)) plan.status = std::move(status);
  return plan;
}

}  // namespace gpupool::embedded
