// embedded/controller_deployment.cpp — the Deployment controller (pkg/controller/deployment,
// kube-controller-manager v1.32): plan_deployment, and the pod-template-hash that names its
// ReplicaSets.
//
// A port of syncDeployment (deployment_controller.go) and what it calls: sync.go (getNewReplicaSet,
// the proportional scale of a scaling event, cleanupDeployment, calculateStatus), rolling.go (the
// RollingUpdate strategy paced by maxSurge and maxUnavailable), recreate.go (old pods gone before
// the new ReplicaSet scales up), progress.go (the Progressing condition and progressDeadlineSeconds)
// and deployment/util. Where the real controller's writes within one sync conflict with each
// other (it updates the Deployment's status from an object whose resourceVersion an earlier write
// of the same sync made stale), the plan keeps the first write and asks to be synced again, as the
// real controller's error return does.
#include "embedded/controllers.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/join.hpp"
#include "embedded/controllers_util.hpp"
#include "gpupool/rollout.hpp"

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

constexpr std::int64_t kMaxInt32 = std::numeric_limits<std::int32_t>::max();

// strconv.ParseInt(s, 10, 64): the whole text, an optional sign, decimal digits.
std::optional<std::int64_t> parse_int(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  return v;
}

constexpr std::string_view kRevision = "deployment.kubernetes.io/revision";
constexpr std::string_view kRevisionHistory = "deployment.kubernetes.io/revision-history";
constexpr std::string_view kDesired = "deployment.kubernetes.io/desired-replicas";
constexpr std::string_view kMaxReplicas = "deployment.kubernetes.io/max-replicas";
// sync.go maxRevHistoryLengthInChars.
constexpr std::size_t kMaxRevisionHistoryChars = 2000;

// deployment/util annotationsToSkip: not copied from the Deployment to its ReplicaSets.
bool skip_copy_annotation(std::string_view k) {
  return k == "kubectl.kubernetes.io/last-applied-configuration" || k == kRevision || k == kRevisionHistory ||
         k == kDesired || k == kMaxReplicas || k == "deprecated.deployment.rollback.to";
}

// One ReplicaSet as the controller holds it: `obj` is its latest known version (a write of this
// sync replaces it).
struct Rs {
  json::object obj;
  std::string name, created;
  std::int64_t listed = 0;  // spec.replicas as listed, before this sync scaled it (or as created)
  bool written = false;     // updated or created by this sync

  std::int64_t replicas() const { return replicas_of(obj); }
  const json::object* status() const { return object_at(obj, {"status"}); }
  std::int64_t status_replicas() const { return int_of(status(), "replicas", 0); }
  std::int64_t available() const { return int_of(status(), "availableReplicas", 0); }
  std::int64_t ready() const { return int_of(status(), "readyReplicas", 0); }
  std::optional<std::int64_t> revision() const { return parse_int(util::annotation(obj, kRevision).value_or("")); }
  bool deleting() const { return ctrl::deleting(obj); }
};

using RsList = std::vector<Rs*>;

// controller.ReplicaSetsByCreationTimestamp.
bool older(const Rs* a, const Rs* b) { return a->created != b->created ? a->created < b->created : a->name < b->name; }

std::int64_t spec_sum(const RsList& l) {
  std::int64_t n = 0;
  for (const Rs* r : l) n += r ? r->replicas() : 0;
  return n;
}
RsList active_of(const RsList& l) {  // controller.FilterActiveReplicaSets
  RsList out;
  for (Rs* r : l)
    if (r && r->replicas() > 0) out.push_back(r);
  return out;
}

// A Deployment condition in the API's member order (DeploymentCondition).
json::object deployment_condition(std::string_view type, std::string_view status, std::string_view reason,
                                  std::string_view message, const std::string& now) {
  return json::object{{"type", type},     {"status", status},  {"lastUpdateTime", now}, {"lastTransitionTime", now},
                      {"reason", reason}, {"message", message}};
}
void remove_condition(json::array& conditions, std::string_view type) {
  conditions.erase(
      std::remove_if(conditions.begin(), conditions.end(),
                     [&](const json::value& c) { return c.is_object() && string_of(&c.as_object(), "type") == type; }),
      conditions.end());
}
// deployment/util SetDeploymentCondition: nothing when status and reason are the same; the
// transition time kept when only the reason changes; the condition moved to the end.
void set_condition(json::array& conditions, json::object condition) {
  const std::string type = string_of(&condition, "type");
  if (const json::object* cur = util::find_condition(&conditions, type)) {
    if (string_of(cur, "status") == string_of(&condition, "status")) {
      if (string_of(cur, "reason") == string_of(&condition, "reason")) return;
      if (const json::value* t = cur->if_contains("lastTransitionTime")) condition["lastTransitionTime"] = *t;
    }
  }
  remove_condition(conditions, type);
  conditions.push_back(std::move(condition));
}

// The status fields of a DeploymentStatus the controller reads.
struct Counts {
  std::int64_t observed = 0, replicas = 0, updated = 0, ready = 0, available = 0, unavailable = 0;
};
Counts counts_of(const json::object* st) {
  return {int_of(st, "observedGeneration", 0), int_of(st, "replicas", 0),
          int_of(st, "updatedReplicas", 0),    int_of(st, "readyReplicas", 0),
          int_of(st, "availableReplicas", 0),  int_of(st, "unavailableReplicas", 0)};
}

class DeploymentSync {
 public:
  DeploymentSync(const json::object& d, const Children& replicasets, const PodsOf& pods_of, Clock::time_point now)
      : d_(d), pods_of_(pods_of), now_(now), stamp_(to_rfc3339(now)) {
    const json::object* spec = object_at(d, {"spec"});
    replicas_ = replicas_of(d);
    generation_ = int_of(object_at(d, {"metadata"}), "generation", 1);
    if (const json::object* st = object_at(d, {"status"})) status_ = *st;
    if (const json::value* c = status_.if_contains("conditions"); c && c->is_array()) conditions_ = c->as_array();
    paused_ = spec && spec->if_contains("paused") && spec->at("paused").is_bool() && spec->at("paused").as_bool();
    const auto pds = int_of(spec, "progressDeadlineSeconds", kMaxInt32);
    if (spec && spec->contains("progressDeadlineSeconds") && pds != kMaxInt32) progress_deadline_ = pds;
    const auto rhl = int_of(spec, "revisionHistoryLimit", kMaxInt32);
    if (spec && spec->contains("revisionHistoryLimit") && rhl != kMaxInt32) history_limit_ = rhl;
    min_ready_ = int_of(spec, "minReadySeconds", 0);
    const RolloutBounds bounds = rollout_bounds(d);
    max_surge_ = bounds.max_surge;
    max_unavailable_ = bounds.max_unavailable;
    revision_annotation_ = util::annotation(d, kRevision).value_or("");
    rss_.reserve(replicasets.size());
    for (const auto& r : replicasets) {
      Rs rs;
      rs.obj = *r;
      rs.name = name_of(*r);
      rs.listed = rs.replicas();
      rs.created = string_of(object_at(*r, {"metadata"}), "creationTimestamp");
      rss_.push_back(std::move(rs));
    }
  }

  Plan run() {
    if (deleting(d_)) {
      // syncStatusOnly
      auto [nrs, olds] = all_replicasets(false);
      sync_deployment_status(with(olds, nrs), nrs);
      return finish();
    }
    check_paused_conditions();
    if (paused_) {
      sync();
      return finish();
    }
    // isScalingEvent (its getAllReplicaSetsAndSyncRevision writes what the strategy's call then
    // finds written).
    bool scaling = false;
    {
      auto [nrs, olds] = all_replicasets(false);
      for (const Rs* rs : active_of(with(olds, nrs))) {
        const auto desired = parse_int(util::annotation(rs->obj, kDesired).value_or(""));
        if (desired && *desired != replicas_) scaling = true;
      }
    }
    if (scaling)
      sync();
    else if (rolling_update(d_))
      rollout_rolling();
    else
      rollout_recreate();
    return finish();
  }

 private:
  static RsList with(RsList olds, Rs* nrs) {
    olds.push_back(nrs);
    return olds;
  }

  // ---- writes -----------------------------------------------------------------------------------
  // A status write: the first of the sync is made; a later one would carry the resourceVersion the
  // first made stale (a 409 for the real controller, which then syncs again).
  void write_status(json::object status) {
    if (status_written_) {
      requeue_ = true;
      return;
    }
    status_written_ = true;
    plan_.status = std::move(status);
    plan_.owner_annotations = annotations_;  // the Deployment as changed in memory so far
  }
  json::object current_status() const {
    json::object st = status_;
    if (!conditions_.empty())
      st["conditions"] = conditions_;
    else
      st.erase("conditions");
    return st;
  }
  void update_rs(Rs& rs) {
    if (!rs.written) plan_order_.push_back(&rs);
    rs.written = true;
  }

  // ---- getNewReplicaSet ------------------------------------------------------------------------
  // deployment/util FindNewReplicaSet: the oldest ReplicaSet whose template is the Deployment's,
  // the pod-template-hash label aside (EqualIgnoreHash).
  static json::object without_hash(const json::object& t) {
    json::object copy = t;
    if (json::value* md = copy.if_contains("metadata"); md && md->is_object())
      if (json::value* labels = md->as_object().if_contains("labels"); labels && labels->is_object()) {
        labels->as_object().erase("pod-template-hash");
        if (labels->as_object().empty()) md->as_object().erase("labels");
      }
    return copy;
  }
  Rs* find_new() {
    const json::object empty;
    const json::object* tmpl = object_at(d_, {"spec", "template"});
    const json::object want = without_hash(tmpl ? *tmpl : empty);
    Rs* found = nullptr;
    for (Rs& rs : rss_) {
      const json::object* t = object_at(rs.obj, {"spec", "template"});
      if (t && util::json_equal(without_hash(*t), want) && (!found || older(&rs, found))) found = &rs;
    }
    return found;
  }

  // SetNewReplicaSetAnnotations; true when an annotation changed.
  bool set_new_rs_annotations(json::object& rs, const std::string& new_revision, bool exists) {
    bool changed = false;
    auto& ann = ensure_object(ensure_object(rs, "metadata"), "annotations");
    if (const json::object* da = object_at(d_, {"metadata", "annotations"}))
      for (const auto& [k, v] : *da) {
        if (skip_copy_annotation(k)) continue;
        if (const json::value* have = ann.if_contains(k); have && util::json_equal(*have, v)) continue;
        ann[k] = v;
        changed = true;
      }
    const json::value* old_v = ann.if_contains(kRevision);
    const bool had = old_v != nullptr;
    const std::string old_revision = old_v && old_v->is_string() ? std::string(old_v->as_string()) : std::string();
    std::int64_t old_int = 0;
    if (auto p = parse_int(old_revision))
      old_int = *p;
    else if (!old_revision.empty())
      return false;
    const std::int64_t new_int = parse_int(new_revision).value_or(0);
    if (old_int < new_int) {
      ann[kRevision] = new_revision;
      changed = true;
      if (had) {
        const std::string history = string_of(&ann, kRevisionHistory);
        if (history.empty()) {
          ann[kRevisionHistory] = old_revision;
        } else {
          std::vector<std::string> olds;
          for (const auto piece : text::split(history, ',')) olds.emplace_back(piece);
          std::size_t total = history.size() + old_revision.size() + 1, first = 0;
          while (total > kMaxRevisionHistoryChars && first < olds.size()) total -= olds[first++].size() + 1;
          if (total <= kMaxRevisionHistoryChars) {
            std::string joined;
            for (std::size_t i = first; i < olds.size(); ++i) joined += olds[i] + ",";
            ann[kRevisionHistory] = joined + old_revision;
          }
        }
      }
    }
    if (!exists && set_replicas_annotations(rs)) changed = true;
    return changed;
  }
  // SetReplicasAnnotations: desired-replicas and max-replicas (replicas + maxSurge).
  bool set_replicas_annotations(json::object& rs) const {
    auto& ann = ensure_object(ensure_object(rs, "metadata"), "annotations");
    bool changed = false;
    for (const auto& [k, v] : {std::pair{kDesired, std::to_string(replicas_)},
                               std::pair{kMaxReplicas, std::to_string(replicas_ + max_surge_)}})
      if (string_of(&ann, k) != v || !ann.contains(k)) {
        ann[k] = v;
        changed = true;
      }
    return changed;
  }

  // getAllReplicaSetsAndSyncRevision: the new ReplicaSet (made when `create` and there is none)
  // and every other one.
  std::pair<Rs*, RsList> all_replicasets(bool create) {
    Rs* nrs = find_new();
    RsList olds;
    for (Rs& rs : rss_)
      if (&rs != nrs) olds.push_back(&rs);
    std::int64_t max_old = 0;
    for (const Rs* rs : olds)
      if (auto r = rs->revision()) max_old = std::max(max_old, *r);
    const std::string new_revision = std::to_string(max_old + 1);
    if (nrs) {
      json::object copy = nrs->obj;
      const bool annotations = set_new_rs_annotations(copy, new_revision, true);
      json::object& spec = ensure_object(copy, "spec");
      const bool min_ready = int_of(&spec, "minReadySeconds", 0) != min_ready_;
      // (isScalingEvent's call makes this update; the real controller's second call, from its
      // informer's copy that the update made stale, then conflicts and the sync ends, to run
      // again. Here the second call finds the update made and the sync goes on: the same
      // writes, one sync sooner.)
      if (annotations || min_ready) {
        if (min_ready_)
          spec["minReadySeconds"] = min_ready_;
        else
          spec.erase("minReadySeconds");
        nrs->obj = std::move(copy);
        update_rs(*nrs);
        return {nrs, olds};
      }
      bool needs = set_revision(util::annotation(nrs->obj, kRevision).value_or(""));
      if (progress_deadline_ && !util::find_condition(&conditions_, "Progressing")) {
        set_condition(conditions_,
                      deployment_condition("Progressing", "True", "FoundNewReplicaSet",
                                           fmt::format("Found new replica set \"{}\"", nrs->name), stamp_));
        needs = true;
      }
      if (needs) write_status(current_status());
      return {nrs, olds};
    }
    if (!create) return {nullptr, olds};
    // A new ReplicaSet: the template with the pod-template-hash label, the selector with it too.
    const json::object empty;
    const json::object* tmpl_p = object_at(d_, {"spec", "template"});
    json::object tmpl = tmpl_p ? *tmpl_p : empty;
    const std::string hash = pod_template_hash(tmpl);
    ensure_object(ensure_object(tmpl, "metadata"), "labels")["pod-template-hash"] = hash;
    const json::object* sel_p = object_at(d_, {"spec", "selector"});
    json::object selector = sel_p ? *sel_p : json::object{};
    ensure_object(selector, "matchLabels")["pod-template-hash"] = hash;
    json::object labels = tmpl.at("metadata").at("labels").as_object();
    json::object rs_spec{{"replicas", 0}};
    if (min_ready_) rs_spec["minReadySeconds"] = min_ready_;
    rs_spec["selector"] = std::move(selector);
    rs_spec["template"] = std::move(tmpl);
    const std::string rs_name = name_of(d_) + "-" + hash;
    json::object obj{{"apiVersion", "apps/v1"},
                     {"kind", "ReplicaSet"},
                     {"metadata", json::object{{"name", rs_name},
                                               {"namespace", namespace_of(d_)},
                                               {"labels", std::move(labels)},
                                               {"ownerReferences", json::array{util::controller_reference(d_)}}}},
                     {"spec", std::move(rs_spec)}};
    created_ = std::make_unique<Rs>();
    created_->name = rs_name;
    created_->created.assign(1, '~');  // sorts after any listed one's creationTimestamp
    created_->obj = std::move(obj);
    Rs* made = created_.get();
    const std::int64_t n = new_rs_replicas(with(olds, made), *made);
    made->obj["spec"].as_object()["replicas"] = n;
    made->listed = n;
    set_new_rs_annotations(made->obj, new_revision, false);
    made->written = true;
    set_revision(new_revision);
    if (progress_deadline_)
      set_condition(conditions_,
                    deployment_condition("Progressing", "True", "NewReplicaSetCreated",
                                         fmt::format("Created new replica set \"{}\"", made->name), stamp_));
    write_status(current_status());
    return {made, olds};
  }
  // SetDeploymentRevision (written with the status: the status strategy keeps annotations).
  bool set_revision(const std::string& revision) {
    if (revision_annotation_ == revision) return false;
    revision_annotation_ = revision;
    annotations_[kRevision] = revision;
    return true;
  }

  // deployment/util NewRSNewReplicas.
  std::int64_t new_rs_replicas(const RsList& all, const Rs& nrs) const {
    if (!rolling_update(d_)) return replicas_;
    const std::int64_t max_total = replicas_ + max_surge_;
    const std::int64_t current = spec_sum(all);
    if (current >= max_total) return nrs.replicas();
    return nrs.replicas() + std::min(max_total - current, replicas_ - nrs.replicas());
  }

  // ---- scaling ---------------------------------------------------------------------------------
  // scaleReplicaSet: the size and the replicas annotations in one update; true when the size
  // changed (the ScalingReplicaSet event is recorded as the update is made).
  bool scale(Rs& rs, std::int64_t to) {
    const bool size = rs.replicas() != to;
    json::object copy = rs.obj;
    ensure_object(copy, "spec")["replicas"] = to;
    const bool annotations = set_replicas_annotations(copy);
    if (!size && !annotations) return false;
    rs.obj = std::move(copy);
    update_rs(rs);
    return size;
  }
  bool scale_if_needed(Rs& rs, std::int64_t to) { return rs.replicas() != to && scale(rs, to); }

  // sync: scale (a scaling event, or a paused Deployment), cleanup when paused, status.
  void sync() {
    auto [nrs, olds] = all_replicasets(false);
    scale_all(nrs, olds);
    if (paused_) cleanup(olds);
    sync_deployment_status(with(olds, nrs), nrs);
  }

  // sync.go scale: the one active (or latest) ReplicaSet takes the new size; else a saturated new
  // one retires the old; else (RollingUpdate) the difference is shared in proportion to sizes.
  void scale_all(Rs* nrs, RsList olds) {
    if (Rs* only = active_or_latest(nrs, olds)) {
      if (only->replicas() != replicas_) scale(*only, replicas_);
      return;
    }
    if (saturated(nrs)) {
      for (Rs* old : active_of(olds)) scale_if_needed(*old, 0);
      return;
    }
    if (!rolling_update(d_)) return;
    RsList all = active_of(with(olds, nrs));
    const std::int64_t all_replicas = spec_sum(all);
    const std::int64_t allowed = replicas_ > 0 ? replicas_ + max_surge_ : 0;
    const std::int64_t to_add = allowed - all_replicas;
    if (to_add > 0)  // ReplicaSetsBySizeNewer
      std::sort(all.begin(), all.end(), [](const Rs* a, const Rs* b) {
        return a->replicas() != b->replicas() ? a->replicas() > b->replicas() : older(b, a);
      });
    else if (to_add < 0)  // ReplicaSetsBySizeOlder
      std::sort(all.begin(), all.end(), [](const Rs* a, const Rs* b) {
        return a->replicas() != b->replicas() ? a->replicas() > b->replicas() : older(a, b);
      });
    std::int64_t added = 0;
    std::vector<std::int64_t> sizes;
    for (Rs* rs : all) {
      if (to_add != 0) {
        const std::int64_t p = proportion(*rs, to_add, added);
        sizes.push_back(rs->replicas() + p);
        added += p;
      } else {
        sizes.push_back(rs->replicas());
      }
    }
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i == 0 && to_add != 0) sizes[0] = std::max<std::int64_t>(0, sizes[0] + to_add - added);
      scale(*all[i], sizes[i]);
    }
  }
  // deployment/util FindActiveOrLatest.
  static Rs* active_or_latest(Rs* nrs, RsList olds) {
    if (!nrs && olds.empty()) return nullptr;
    std::sort(olds.begin(), olds.end(), [](const Rs* a, const Rs* b) { return older(b, a); });
    const RsList active = active_of(with(olds, nrs));
    if (active.size() == 1) return active[0];
    if (active.empty()) return nrs ? nrs : olds[0];
    return nullptr;
  }
  // deployment/util IsSaturated.
  bool saturated(const Rs* nrs) const {
    if (!nrs) return false;
    const auto desired = parse_int(util::annotation(nrs->obj, kDesired).value_or(""));
    return desired && nrs->replicas() == replicas_ && *desired == replicas_ && nrs->available() == replicas_;
  }
  // deployment/util GetReplicaSetProportion and getReplicaSetFraction.
  std::int64_t proportion(const Rs& rs, std::int64_t to_add, std::int64_t added) const {
    if (rs.replicas() == 0 || to_add == 0 || to_add == added) return 0;
    std::int64_t fraction = 0;
    if (replicas_ == 0) {
      fraction = -rs.replicas();
    } else {
      const std::int64_t max_now = replicas_ + max_surge_;
      std::int64_t before = parse_int(util::annotation(rs.obj, kMaxReplicas).value_or("")).value_or(0);
      if (before == 0) before = int_of(&status_, "replicas", 0);
      if (before != 0) {
        const double size = static_cast<double>(rs.replicas() * max_now) / static_cast<double>(before);
        fraction = static_cast<std::int64_t>(std::llround(size)) - rs.replicas();  // integer.RoundToInt32
      }
    }
    const std::int64_t allowed = to_add - added;
    return to_add > 0 ? std::min(fraction, allowed) : std::max(fraction, allowed);
  }

  // ---- RollingUpdate (rolling.go) --------------------------------------------------------------
  void rollout_rolling() {
    auto [nrs, olds] = all_replicasets(true);
    const RsList all = with(olds, nrs);
    if (reconcile_new(all, *nrs)) return sync_rollout_status(all, nrs);
    if (reconcile_old(all, active_of(olds), *nrs)) return sync_rollout_status(all, nrs);
    if (complete(counts_of(&status_))) cleanup(olds);
    sync_rollout_status(all, nrs);
  }
  bool reconcile_new(const RsList& all, Rs& nrs) {
    if (nrs.replicas() == replicas_) return false;
    if (nrs.replicas() > replicas_) return scale_if_needed(nrs, replicas_);
    return scale_if_needed(nrs, new_rs_replicas(all, nrs));
  }
  // The status the rest of the sync reads is the one listed, before this sync's scaling (the real
  // controller passes its informer's objects on), except where it reads an updated copy.
  bool reconcile_old(const RsList& all, RsList olds, Rs& nrs) {
    if (spec_sum(olds) == 0) return false;
    const std::int64_t min_available = replicas_ - max_unavailable_;
    const std::int64_t new_unavailable = nrs.listed - nrs.available();
    const std::int64_t max_scaled_down = listed_sum(all) - min_available - new_unavailable;
    if (max_scaled_down <= 0) return false;
    // cleanupUnhealthyReplicas: old ReplicaSets' unavailable replicas go first.
    std::sort(olds.begin(), olds.end(), older);
    std::int64_t cleaned = 0;
    for (Rs* rs : olds) {
      if (cleaned >= max_scaled_down) break;
      if (rs->replicas() == 0 || rs->replicas() == rs->available()) continue;
      const std::int64_t n = std::min(max_scaled_down - cleaned, rs->replicas() - rs->available());
      scale_if_needed(*rs, rs->replicas() - n);
      cleaned += n;
    }
    // scaleDownOldReplicaSetsForRollingUpdate
    std::int64_t scaled = 0;
    std::int64_t available = nrs.available();
    for (const Rs* rs : olds) available += rs->available();
    if (available > min_available) {
      const std::int64_t total = available - min_available;
      for (Rs* rs : olds) {
        if (scaled >= total) break;
        if (rs->replicas() == 0) continue;
        const std::int64_t n = std::min(rs->replicas(), total - scaled);
        scale_if_needed(*rs, rs->replicas() - n);
        scaled += n;
      }
    }
    return cleaned + scaled > 0;
  }
  static std::int64_t listed_sum(const RsList& l) {
    std::int64_t n = 0;
    for (const Rs* r : l) n += r ? r->listed : 0;
    return n;
  }

  // ---- Recreate (recreate.go) ------------------------------------------------------------------
  void rollout_recreate() {
    auto [nrs, olds] = all_replicasets(false);
    RsList all = with(olds, nrs);
    bool scaled_down = false;
    for (Rs* rs : active_of(olds))
      if (scale_if_needed(*rs, 0)) scaled_down = true;
    if (scaled_down) return sync_rollout_status(all, nrs);
    if (old_pods_running(olds)) return sync_rollout_status(all, nrs);
    if (!nrs) {
      std::tie(nrs, olds) = all_replicasets(true);
      all = with(olds, nrs);
    }
    scale_if_needed(*nrs, replicas_);
    if (complete(counts_of(&status_))) cleanup(olds);
    sync_rollout_status(all, nrs);
  }
  bool old_pods_running(const RsList& olds) const {
    std::int64_t actual = 0;
    for (const Rs* rs : olds) actual += rs->status_replicas();
    if (actual > 0) return true;
    if (!pods_of_) return false;
    for (const Rs* rs : olds)
      for (const auto& pod : pods_of_(rs->obj))
        if (!terminal(*pod)) return true;
    return false;
  }

  // ---- cleanupDeployment: old ReplicaSets beyond revisionHistoryLimit --------------------------
  void cleanup(const RsList& olds) {
    if (!history_limit_) return;
    RsList cleanable;
    for (Rs* rs : olds)
      if (!rs->deleting()) cleanable.push_back(rs);
    const std::int64_t diff = static_cast<std::int64_t>(cleanable.size()) - *history_limit_;
    if (diff <= 0) return;
    std::sort(cleanable.begin(), cleanable.end(), [](const Rs* a, const Rs* b) {  // ReplicaSetsByRevision
      const auto ra = a->revision(), rb = b->revision();
      if (!ra || !rb || *ra == *rb) return older(a, b);
      return *ra < *rb;
    });
    for (std::int64_t i = 0; i < diff; ++i) {
      const Rs* rs = cleanable[static_cast<std::size_t>(i)];
      const std::int64_t generation = int_of(object_at(rs->obj, {"metadata"}), "generation", 0);
      if (rs->status_replicas() != 0 || rs->replicas() != 0 ||
          generation > int_of(rs->status(), "observedGeneration", 0))
        continue;
      plan_.remove.push_back({"apps", "replicasets", rs->name});
    }
  }

  // ---- status ----------------------------------------------------------------------------------
  // calculateStatus (from the ReplicaSets as listed).
  json::object calculate_status(const RsList& all, const Rs* nrs, Counts* out) const {
    Counts c;
    c.observed = generation_;
    std::int64_t total = 0;
    for (const Rs* rs : all) {
      if (!rs) continue;
      c.available += rs->available();
      total += rs->listed;
      c.replicas += rs->status_replicas();
      c.ready += rs->ready();
    }
    if (nrs) c.updated = nrs->status_replicas();
    c.unavailable = std::max<std::int64_t>(0, total - c.available);
    json::array conditions = conditions_;
    if (c.available >= replicas_ - max_unavailable_)
      set_condition(conditions, deployment_condition("Available", "True", "MinimumReplicasAvailable",
                                                     "Deployment has minimum availability.", stamp_));
    else
      set_condition(conditions, deployment_condition("Available", "False", "MinimumReplicasUnavailable",
                                                     "Deployment does not have minimum availability.", stamp_));
    *out = c;
    return status_object(c, std::move(conditions));
  }
  // A DeploymentStatus in the API's member order, zero counts left out (omitempty).
  json::object status_object(const Counts& c, json::array conditions) const {
    json::object st;
    const auto put = [&](const char* k, std::int64_t v) {
      if (v) st[k] = v;
    };
    put("observedGeneration", c.observed);
    put("replicas", c.replicas);
    put("updatedReplicas", c.updated);
    put("readyReplicas", c.ready);
    put("availableReplicas", c.available);
    put("unavailableReplicas", c.unavailable);
    if (!conditions.empty()) st["conditions"] = std::move(conditions);
    if (const json::value* cc = status_.if_contains("collisionCount")) st["collisionCount"] = *cc;
    return st;
  }
  // DeploymentComplete.
  bool complete(const Counts& c) const {
    return c.updated == replicas_ && c.replicas == replicas_ && c.available == replicas_ && c.observed >= generation_;
  }

  void sync_deployment_status(const RsList& all, const Rs* nrs) {
    Counts c;
    json::object st = calculate_status(all, nrs, &c);
    if (!util::json_equal(st, current_status())) write_status(std::move(st));
  }

  // progress.go syncRolloutStatus.
  void sync_rollout_status(const RsList& all, const Rs* nrs) {
    Counts c;
    json::object st = calculate_status(all, nrs, &c);
    json::array conditions = st.contains("conditions") ? st["conditions"].as_array() : json::array{};
    if (!progress_deadline_) remove_condition(conditions, "Progressing");
    const json::object* current = util::find_condition(&conditions_, "Progressing");
    const bool is_complete =
        c.replicas == c.updated && current && string_of(current, "reason") == "NewReplicaSetAvailable";
    if (progress_deadline_ && !is_complete) {
      const Counts old = counts_of(&status_);
      if (complete(c)) {
        set_condition(conditions, deployment_condition(
                                      "Progressing", "True", "NewReplicaSetAvailable",
                                      nrs ? fmt::format("ReplicaSet \"{}\" has successfully progressed.", nrs->name)
                                          : fmt::format("Deployment \"{}\" has successfully progressed.", name_of(d_)),
                                      stamp_));
      } else if (c.updated > old.updated || (c.replicas - c.updated) < (old.replicas - old.updated) ||
                 c.ready > old.ready || c.available > old.available) {  // DeploymentProgressing
        json::object cond = deployment_condition("Progressing", "True", "ReplicaSetUpdated",
                                                 nrs ? fmt::format("ReplicaSet \"{}\" is progressing.", nrs->name)
                                                     : fmt::format("Deployment \"{}\" is progressing.", name_of(d_)),
                                                 stamp_);
        if (current) {
          if (string_of(current, "status") == "True")
            if (const json::value* t = current->if_contains("lastTransitionTime")) cond["lastTransitionTime"] = *t;
          remove_condition(conditions, "Progressing");
        }
        set_condition(conditions, std::move(cond));
      } else if (timed_out(conditions)) {
        set_condition(conditions, deployment_condition(
                                      "Progressing", "False", "ProgressDeadlineExceeded",
                                      nrs ? fmt::format("ReplicaSet \"{}\" has timed out progressing.", nrs->name)
                                          : fmt::format("Deployment \"{}\" has timed out progressing.", name_of(d_)),
                                      stamp_));
      }
    }
    // getReplicaFailures: the new ReplicaSet's ReplicaFailure condition, else an old one's.
    const json::object* failure =
        nrs ? util::find_condition(util::array_at(nrs->obj, {"status"}, "conditions"), "ReplicaFailure") : nullptr;
    for (const Rs* rs : all)
      if (!failure && rs)
        failure = util::find_condition(util::array_at(rs->obj, {"status"}, "conditions"), "ReplicaFailure");
    if (failure) {
      const std::string t = string_of(failure, "lastTransitionTime");
      set_condition(conditions, json::object{{"type", "ReplicaFailure"},
                                             {"status", string_of(failure, "status")},
                                             {"lastUpdateTime", t},
                                             {"lastTransitionTime", t},
                                             {"reason", string_of(failure, "reason")},
                                             {"message", string_of(failure, "message")}});
    } else {
      remove_condition(conditions, "ReplicaFailure");
    }
    if (conditions.empty())
      st.erase("conditions");
    else
      st["conditions"] = std::move(conditions);
    if (util::json_equal(st, current_status())) {
      requeue_stuck(c);
      return;
    }
    write_status(std::move(st));
  }
  // DeploymentTimedOut, on the conditions of the status being made.
  bool timed_out(const json::array& conditions) const {
    const json::object* cond = util::find_condition(&conditions, "Progressing");
    if (!cond || string_of(cond, "reason") == "NewReplicaSetAvailable") return false;
    if (string_of(cond, "reason") == "ProgressDeadlineExceeded") return true;
    const auto from = time_from_rfc3339(string_of(cond, "lastUpdateTime"));
    return from && *from + std::chrono::seconds(*progress_deadline_) < now_;
  }
  // requeueStuckDeployment: a Deployment still progressing is looked at again when its deadline
  // passes (a second after it), or at once when less than a second is left.
  void requeue_stuck(const Counts& c) {
    const json::object* cur = util::find_condition(&conditions_, "Progressing");
    if (!progress_deadline_ || !cur) return;
    if (complete(c) || string_of(cur, "reason") == "ProgressDeadlineExceeded") return;
    const auto from = time_from_rfc3339(string_of(cur, "lastUpdateTime"));
    if (!from) return;
    const auto after = *from + std::chrono::seconds(*progress_deadline_) - now_;
    if (after < std::chrono::seconds(1))
      plan_.requeue_after = std::chrono::seconds(0);
    else
      plan_.requeue_after = std::chrono::duration_cast<Clock::duration>(after + std::chrono::seconds(1));
  }

  // checkPausedConditions: Progressing Unknown DeploymentPaused / DeploymentResumed.
  void check_paused_conditions() {
    if (!progress_deadline_) return;
    const json::object* cond = util::find_condition(&conditions_, "Progressing");
    if (cond && string_of(cond, "reason") == "ProgressDeadlineExceeded") return;
    const bool paused_cond = cond && string_of(cond, "reason") == "DeploymentPaused";
    if (paused_ && !paused_cond)
      set_condition(conditions_,
                    deployment_condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", stamp_));
    else if (!paused_ && paused_cond)
      set_condition(conditions_, deployment_condition("Progressing", "Unknown", "DeploymentResumed",
                                                      "Deployment is resumed", stamp_));
    else
      return;
    write_status(current_status());
  }

  Plan finish() {
    for (Rs* rs : plan_order_) plan_.update.push_back({"apps", "replicasets", std::move(rs->obj)});
    if (created_) plan_.create.insert(plan_.create.begin(), {"apps", "replicasets", std::move(created_->obj)});
    if (requeue_ && !plan_.requeue_after) plan_.requeue_after = std::chrono::seconds(0);
    return std::move(plan_);
  }

  const json::object& d_;
  const PodsOf& pods_of_;
  Clock::time_point now_;
  std::string stamp_;
  std::int64_t replicas_ = 1, generation_ = 1, max_surge_ = 0, max_unavailable_ = 0, min_ready_ = 0;
  std::optional<std::int64_t> progress_deadline_, history_limit_;
  bool paused_ = false;
  json::object status_;
  json::array conditions_;  // the Deployment's conditions as this sync changed them in memory
  std::string revision_annotation_;
  json::object annotations_;  // annotations this sync set on the Deployment in memory
  std::vector<Rs> rss_;
  std::unique_ptr<Rs> created_;
  std::vector<Rs*> plan_order_;
  Plan plan_;
  bool status_written_ = false, requeue_ = false;
};

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

Plan plan_deployment(const json::object& d, const Children& replicasets, const PodsOf& pods_of, Clock::time_point now) {
  DeploymentSync sync(d, replicasets, pods_of, now);
  return sync.run();
}

}  // namespace gpupool::embedded
