// embedded/controller_statefulset.cpp — the apps/v1 StatefulSet controller (kube-controller-manager
// v1.32, pkg/controller/statefulset: stateful_set_control.go UpdateStatefulSet, performUpdate,
// getStatefulSetRevisions, updateStatefulSet, processReplica, processCondemned, truncateHistory,
// updateStatefulSetStatus; stateful_set_utils.go newVersionedStatefulSetPod, identity, storage;
// stateful_pod_control.go CreateStatefulPod): plan_statefulset.
//
// Not modelled: MaxUnavailableStatefulSet (alpha, off in v1.32), updating the identity or storage
// of an existing pod whose labels or volumes were changed by hand.
#include "embedded/controllers.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

namespace {

constexpr const char* kRevisionLabel = "controller-revision-hash";  // StatefulSetRevisionLabel
constexpr const char* kPodNameLabel = "statefulset.kubernetes.io/pod-name";
constexpr const char* kPodIndexLabel = "apps.kubernetes.io/pod-index";  // PodIndexLabel (beta, on)

// getParentNameAndOrdinal: "<parent>-<ordinal>"; -1 when the name has no numeric suffix.
std::int64_t ordinal_of(const json::object& pod, const std::string& set) {
  const std::string name = name_of(pod);
  if (name.size() <= set.size() + 1 || name.compare(0, set.size(), set) != 0 || name[set.size()] != '-') return -1;
  const std::string digits = name.substr(set.size() + 1);
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

// ownerReferences a claim should have under persistentVolumeClaimRetentionPolicy
// (stateful_set_utils.go updateClaimOwnerRefForSetAndPod, StatefulSetAutoDeletePVC on in v1.32):
// its references to the set and the pod scrubbed, then the set as controller when WhenDeleted is
// Delete and the pod is in range, the pod when WhenScaled is Delete and it was scaled down; only
// scrubbed when another controller (or an older set or pod of the same name) owns it.
json::array claim_owner_refs(const json::object& claim, const json::object& set, const json::object* pod,
                             bool scaled_down) {
  const json::object* policy = object_at(set, {"spec", "persistentVolumeClaimRetentionPolicy"});
  const bool delete_when_deleted = string_of(policy, "whenDeleted") == "Delete";
  const bool delete_when_scaled = string_of(policy, "whenScaled") == "Delete";
  json::array refs;
  if (const json::array* r = util::array_at(claim, {"metadata"}, "ownerReferences")) refs = *r;
  const bool retain = !delete_when_deleted && !delete_when_scaled;  // hasUnexpectedController: none
  auto matches = [&](const json::object& ref, const char* api, const char* kind, const json::object& o) {
    return string_of(&ref, "apiVersion") == api && string_of(&ref, "kind") == kind &&
           string_of(&ref, "name") == name_of(o);
  };
  bool unexpected = false;
  json::array kept;
  for (const auto& r : refs) {
    if (!r.is_object()) continue;
    const json::object& ref = r.as_object();
    if (matches(ref, "apps/v1", "StatefulSet", set)) {
      unexpected = unexpected || (!retain && string_of(&ref, "uid") != uid_of(set));
      continue;
    }
    if (pod && matches(ref, "v1", "Pod", *pod)) {
      unexpected = unexpected || (!retain && string_of(&ref, "uid") != uid_of(*pod));
      continue;
    }
    if (const json::value* c = ref.if_contains("controller"); !retain && c && c->is_bool() && c->as_bool())
      unexpected = true;
    kept.push_back(r);
  }
  if (unexpected) return kept;
  if (delete_when_scaled && scaled_down && pod) kept.push_back(util::controller_reference(*pod));
  if (delete_when_deleted && !scaled_down) kept.push_back(util::controller_reference(set));
  return kept;
}

bool running_and_ready(const json::object& p) { return phase_of(p) == "Running" && pod_ready(p); }
bool healthy(const json::object& p) { return running_and_ready(p) && !deleting(p); }  // isHealthy

}  // namespace

bool statefulset_member(std::string_view pod_name, std::string_view set) {
  // statefulPodRegex "(.*)-([0-9]+)$": the parent is what precedes the last "-<digits>".
  const std::size_t digits = pod_name.find_last_not_of("0123456789");
  return digits != std::string_view::npos && digits + 1 < pod_name.size() && pod_name[digits] == '-' &&
         pod_name.substr(0, digits) == set;
}

Plan plan_statefulset(const json::object& set, const Children& children, const Claims& claims, Clock::time_point now) {
  Plan plan;
  static const json::object kNone;
  const json::object* spec = object_at(set, {"spec"});
  const json::object& tmpl = spec && object_at(*spec, {"template"}) ? *object_at(*spec, {"template"}) : kNone;
  const std::string name = name_of(set), ns = namespace_of(set);
  const json::object* status_in = object_at(set, {"status"});

  // getStatefulSetRevisions: the revision of this template (the newest equal one, revived with the
  // next number when older than the newest), the current one from status.currentRevision.
  std::vector<const json::object*> pods, revisions;
  for (const auto& c : children) (c->contains("revision") ? revisions : pods).push_back(c.get());
  std::sort(revisions.begin(), revisions.end(), [](const json::object* a, const json::object* b) {
    const auto ra = int_of(a, "revision", 0), rb = int_of(b, "revision", 0);
    return ra != rb ? ra < rb : name_of(*a) < name_of(*b);
  });
  const json::object data = template_revision_data(tmpl);
  const std::int64_t next_revision = revisions.empty() ? 1 : int_of(revisions.back(), "revision", 0) + 1;
  const json::object* equal = nullptr;
  for (const auto* r : revisions)
    if (const json::value* d = r->if_contains("data"); d && d->is_object() && util::json_equal(d->as_object(), data))
      equal = r;
  std::string update_revision;
  json::object update_template = tmpl;
  if (equal) {
    update_revision = name_of(*equal);
    if (equal != revisions.back()) {  // a rollback: the old revision comes back as the newest
      json::object bumped = *equal;
      bumped["revision"] = next_revision;
      plan.update.push_back({"apps", "controllerrevisions", std::move(bumped)});
    }
  } else {
    update_revision = name + "-" + pod_template_hash(data);
    // history.NewControllerRevision: the template's labels and ControllerRevisionHashLabel.
    const json::object* tl = object_at(tmpl, {"metadata", "labels"});
    json::object labels = tl ? *tl : json::object{};
    labels["controller.kubernetes.io/hash"] = update_revision.substr(name.size() + 1);
    plan.create.push_back({"apps", "controllerrevisions",
                           controller_revision(set, update_revision, std::move(labels), data, next_revision)});
  }
  std::string current_revision = string_of(status_in, "currentRevision");
  json::object current_template = tmpl;
  const json::object* current_rev = nullptr;
  for (const auto* r : revisions)
    if (name_of(*r) == current_revision) current_rev = r;
  if (!current_rev) {
    current_revision = update_revision;
  } else if (const json::object* t = object_at(*current_rev, {"data", "spec", "template"})) {
    current_template = *t;  // ApplyRevision
    current_template.erase("$patch");
  }

  const std::int64_t replicas = std::max<std::int64_t>(0, int_of(spec, "replicas", 1));
  const std::int64_t start = std::max<std::int64_t>(0, int_of(object_at(set, {"spec", "ordinals"}), "start", 0));
  const std::int64_t min_ready = int_of(spec, "minReadySeconds", 0);
  const bool monotonic = string_of(spec, "podManagementPolicy") != "Parallel";
  const json::object* strategy = spec ? object_at(*spec, {"updateStrategy"}) : nullptr;
  const std::string strategy_type = string_of(strategy, "type");
  const json::object* rolling = strategy ? object_at(*strategy, {"rollingUpdate"}) : nullptr;
  const std::int64_t partition = rolling ? count_of(rolling, "partition", 0) : 0;
  const std::int64_t status_current = int_of(status_in, "currentReplicas", 0);

  // The pods by ordinal; the ones outside [start, start + replicas) are condemned, highest first.
  // (By ordinal, not a slot per replica: spec.replicas may be up to 2^31 - 1.)
  std::map<std::int64_t, const json::object*> replica;
  std::vector<const json::object*> condemned;
  for (const auto* p : pods) {
    const std::int64_t ord = ordinal_of(*p, name);
    if (ord >= start && ord < start + replicas)
      replica[ord] = p;
    else if (ord >= 0)
      condemned.push_back(p);
  }
  auto replica_at = [&](std::int64_t ord) -> const json::object* {
    const auto it = replica.find(ord);
    return it == replica.end() ? nullptr : it->second;
  };
  std::sort(condemned.begin(), condemned.end(),
            [&](const json::object* a, const json::object* b) { return ordinal_of(*a, name) > ordinal_of(*b, name); });

  // newVersionedStatefulSetPod: below the partition (or, without a rollingUpdate, below the current
  // replicas) the current revision's template, else the update revision's; identity (name,
  // hostname, subdomain, labels) and storage (a volume per claim template).
  auto new_pod = [&](std::int64_t ord) {
    const bool current = (strategy_type == "RollingUpdate" && !rolling && ord < start + status_current) ||
                         (rolling && ord < start + partition);
    const json::object& t = current ? current_template : update_template;
    const std::string pod_name = fmt::format("{}-{}", name, ord);
    json::object pod = pod_from_template(t, set, pod_name, "",
                                         {{kPodNameLabel, pod_name},
                                          {kPodIndexLabel, std::to_string(ord)},
                                          {kRevisionLabel, current ? current_revision : update_revision}});
    pod["metadata"].as_object()["generateName"] = name + "-";  // GetPodFromTemplate's prefix, kept
    json::object& ps = pod["spec"].as_object();
    ps["hostname"] = pod_name;
    if (const std::string svc = string_of(spec, "serviceName"); !svc.empty()) ps["subdomain"] = svc;
    json::array volumes;
    std::set<std::string> templated;
    std::vector<json::object> claim_objects;
    if (const json::array* vct = util::array_at(set, {"spec"}, "volumeClaimTemplates"))
      for (const auto& c : *vct) {
        if (!c.is_object()) continue;
        const std::string cname = name_of(c.as_object());
        templated.insert(cname);
        const std::string claim_name = fmt::format("{}-{}-{}", cname, name, ord);
        volumes.push_back(
            json::object{{"name", cname}, {"persistentVolumeClaim", json::object{{"claimName", claim_name}}}});
        if (claims.count(claim_name)) continue;  // (its owners are looked after below)
        // getPersistentVolumeClaims: the template named for the pod, the selector's matchLabels added.
        json::object claim = c.as_object();
        claim.erase("status");
        json::object& md = util::ensure_object(claim, "metadata");
        md.erase("creationTimestamp");
        md["name"] = claim_name;
        md["namespace"] = ns;
        json::object& labels = util::ensure_object(md, "labels");
        if (const json::object* ml = object_at(set, {"spec", "selector", "matchLabels"}))
          for (const auto& [k, v] : *ml) labels[k] = v;
        claim["apiVersion"] = "v1";
        claim["kind"] = "PersistentVolumeClaim";
        // UpdatePodClaimForRetentionPolicy right after the pod is made: the set's reference, for
        // WhenDeleted Delete (the pod is in range).
        if (json::array refs = claim_owner_refs(claim, set, nullptr, false); !refs.empty())
          md["ownerReferences"] = std::move(refs);
        claim_objects.push_back(std::move(claim));
      }
    if (const json::array* vs = util::array_at(ps, {}, "volumes"))
      for (const auto& v : *vs)
        if (v.is_object() && !templated.count(string_of(&v.as_object(), "name"))) volumes.push_back(v);
    if (!volumes.empty()) ps["volumes"] = std::move(volumes);
    return std::make_pair(std::move(pod), std::move(claim_objects));
  };

  // updateStatus: the counts over pods (a created pod; ready; available; of each revision).
  json::object status{{"observedGeneration", int_of(object_at(set, {"metadata"}), "generation", 1)}};
  auto count = [&](const std::vector<const json::object*>& lists) {
    std::int64_t n = 0, ready = 0, available = 0, cur = 0, upd = 0;
    for (const auto* p : lists) {
      if (!p) continue;  // not created
      ++n;
      if (running_and_ready(*p)) {
        ++ready;
        if (pod_available(*p, min_ready, now)) ++available;
      }
      if (!deleting(*p)) {
        const std::string rev = labels_key(*p, kRevisionLabel);
        cur += rev == current_revision ? 1 : 0;
        upd += rev == update_revision ? 1 : 0;
      }
    }
    status["replicas"] = n;
    status["readyReplicas"] = ready;
    status["currentReplicas"] = cur;
    status["updatedReplicas"] = upd;
    status["availableReplicas"] = available;
  };
  std::vector<const json::object*> all;  // replicas (created) and condemned
  for (const auto& [ord, p] : replica) all.push_back(p);
  for (const auto* p : condemned) all.push_back(p);

  // firstUnhealthyPod: a replica not made yet counts (as Go's placeholder pod), before condemned ones.
  const json::object* first_unhealthy = nullptr;
  bool placeholder_first = false;
  for (std::int64_t ord = start; ord < start + replicas && !first_unhealthy && !placeholder_first; ++ord) {
    const json::object* p = replica_at(ord);
    if (!p)
      placeholder_first = true;
    else if (!healthy(*p))
      first_unhealthy = p;
  }
  if (!placeholder_first)
    for (auto it = condemned.rbegin(); it != condemned.rend() && !first_unhealthy; ++it)
      if (!healthy(**it)) first_unhealthy = *it;

  auto remove_pod = [&](const json::object& p) {
    plan.remove.push_back({"", "pods", name_of(p)});
    plan.events.push_back(
        {"Normal", "SuccessfulDelete", fmt::format("delete Pod {} in StatefulSet {} successful", name_of(p), name)});
  };
  bool exit = deleting(set);
  // processReplica, in ordinal order; OrderedReady stops at the first pod it made or waits for;
  // Parallel makes at most kBurst per sync (the rest at the syncs its pods' events bring).
  constexpr std::int64_t kBurst = 500;
  std::int64_t made = 0;
  for (std::int64_t ord = start; ord < start + replicas && !exit; ++ord) {
    const json::object* p = replica_at(ord);
    if (p && (phase_of(*p) == "Failed" || phase_of(*p) == "Succeeded")) {
      if (!deleting(*p)) remove_pod(*p);
      exit = monotonic;
      if (!monotonic) continue;
      break;
    }
    if (!p) {
      auto [pod, new_claims] = new_pod(ord);
      for (auto& c : new_claims) {
        plan.events.push_back(
            {"Normal", "SuccessfulCreate",
             fmt::format("create Claim {} Pod {} in StatefulSet {} success", name_of(c), name_of(pod), name)});
        plan.create.push_back({"", "persistentvolumeclaims", std::move(c)});
      }
      plan.events.push_back({"Normal", "SuccessfulCreate",
                             fmt::format("create Pod {} in StatefulSet {} successful", name_of(pod), name)});
      plan.create.push_back({"", "pods", std::move(pod)});
      if (monotonic || ++made >= kBurst) exit = true;
      continue;
    }
    if (monotonic && (deleting(*p) || !running_and_ready(*p) || !pod_available(*p, min_ready, now))) exit = true;
  }
  // ClaimsMatchRetentionPolicy / UpdatePodClaimForRetentionPolicy: the claims of every existing
  // pod (processReplica for those in range, fixPodClaim for the condemned) get the owners the
  // policy asks for.
  if (!exit || !monotonic) {
    auto fix_claims = [&](const json::object& pod, bool scaled_down) {
      const std::int64_t ord = ordinal_of(pod, name);
      if (const json::array* vct = util::array_at(set, {"spec"}, "volumeClaimTemplates"))
        for (const auto& c : *vct) {
          if (!c.is_object()) continue;
          const auto it = claims.find(fmt::format("{}-{}-{}", name_of(c.as_object()), name, ord));
          if (it == claims.end()) continue;
          const json::array want = claim_owner_refs(*it->second, set, &pod, scaled_down);
          const json::array* have = util::array_at(*it->second, {"metadata"}, "ownerReferences");
          if (have ? util::json_equal(*have, want) : want.empty()) continue;
          json::object next = *it->second;
          json::object& md = util::ensure_object(next, "metadata");
          if (want.empty())
            md.erase("ownerReferences");
          else
            md["ownerReferences"] = want;
          plan.update.push_back({"", "persistentvolumeclaims", std::move(next)});
        }
    };
    for (const auto& [ord, p] : replica) fix_claims(*p, false);
    for (const auto* p : condemned) fix_claims(*p, true);
  }
  // processCondemned, highest ordinal first: OrderedReady deletes one at a time, and only once the
  // pods before it are healthy (or it is the first unhealthy one).
  for (const auto* p : condemned) {
    if (exit) break;
    if (deleting(*p)) {
      if (monotonic) exit = true;
      continue;
    }
    if (monotonic && p != first_unhealthy && (!running_and_ready(*p) || !pod_available(*p, min_ready, now))) {
      exit = true;
      break;
    }
    remove_pod(*p);
    if (monotonic) exit = true;
  }
  count(all);
  // The rolling update: from the highest ordinal down to the partition, one pod of another revision
  // deleted per sync, and only while every pod above it is healthy.
  if (!exit && strategy_type != "OnDelete") {
    for (std::int64_t target = replicas - 1; target >= partition; --target) {
      const json::object* p = replica_at(start + target);
      if (!p) break;
      if (labels_key(*p, kRevisionLabel) != update_revision && !deleting(*p)) {
        remove_pod(*p);
        status["currentReplicas"] = status.at("currentReplicas").as_int64() - 1;
        break;
      }
      if (!healthy(*p)) break;
    }
  }
  status["currentRevision"] = current_revision;
  status["updateRevision"] = update_revision;
  status["collisionCount"] = int_of(status_in, "collisionCount", 0);
  // completeRollingUpdate: every replica updated and ready: the update revision becomes current.
  if (strategy_type == "RollingUpdate" && status.at("updatedReplicas").as_int64() == status.at("replicas").as_int64() &&
      status.at("readyReplicas").as_int64() == status.at("replicas").as_int64()) {
    status["currentReplicas"] = status.at("updatedReplicas");
    status["currentRevision"] = update_revision;
  }
  if (const json::value* c = status_in ? status_in->if_contains("conditions") : nullptr) status["conditions"] = *c;
  for (const char* k : {"readyReplicas", "currentReplicas", "updatedReplicas"})
    if (status.at(k).as_int64() == 0) status.erase(k);  // omitempty
  const json::object status_seen = status;
  if (!status_in || !util::json_equal(*status_in, status)) plan.status = std::move(status);

  // truncateHistory: the revisions no pod runs, beyond revisionHistoryLimit, oldest first.
  std::set<std::string> live{current_revision, update_revision};
  for (const auto* p : pods) live.insert(labels_key(*p, kRevisionLabel));
  std::vector<const json::object*> history;
  for (const auto* r : revisions)
    if (!live.count(name_of(*r))) history.push_back(r);
  const std::int64_t limit = int_of(spec, "revisionHistoryLimit", 10);
  if (limit >= 0 && static_cast<std::int64_t>(history.size()) > limit)
    for (std::size_t i = 0; i < history.size() - static_cast<std::size_t>(limit); ++i)
      plan.remove.push_back({"apps", "controllerrevisions", name_of(*history[i])});
  // A ready pod not yet available is looked at again once minReadySeconds have passed.
  if (min_ready > 0 && int_of(&status_seen, "readyReplicas", 0) != int_of(&status_seen, "availableReplicas", 0))
    plan.requeue_after = std::chrono::seconds(min_ready);
  return plan;
}

}  // namespace gpupool::embedded
