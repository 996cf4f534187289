// embedded/controller_daemonset.cpp — the apps/v1 DaemonSet controller (kube-controller-manager
// v1.32, pkg/controller/daemon: daemon_controller.go syncDaemonSet, manage, podsShouldBeOnNode,
// NodeShouldRunDaemonPod, updateDaemonSetStatus; update.go constructHistory, rollingUpdate,
// cleanupHistory; util/daemonset_util.go): plan_daemonset. Which nodes run a daemon pod is
// decided by the model's scheduling rules (gpupool/scheduling.hpp, gpupool/taint.hpp), the same
// code the embedded scheduler and `gpupool explain` use.
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
#include "embedded/typecheck.hpp"
#include "gpupool/error.hpp"
#include "gpupool/node.hpp"
#include "gpupool/rollout.hpp"
#include "gpupool/scheduling.hpp"
#include "gpupool/taint.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

namespace {

constexpr const char* kHashLabel = "controller-revision-hash";       // DefaultDaemonSetUniqueLabelKey
constexpr const char* kGenerationLabel = "pod-template-generation";  // DaemonSetTemplateGenerationKey
constexpr const char* kTemplateGeneration = "deprecated.daemonset.template.generation";

// util.AddOrUpdateDaemonPodTolerations: daemon pods tolerate the node lifecycle's and
// TaintNodesByCondition's taints (network-unavailable only with hostNetwork). A toleration that
// matches one of them (key, operator, value, effect) is replaced by it (AddOrUpdateTolerationInPodSpec).
void add_daemon_tolerations(json::object& spec) {
  json::array tolerations;
  if (const json::value* t = spec.if_contains("tolerations"); t && t->is_array()) tolerations = t->as_array();
  auto add = [&](const char* key, const char* effect) {
    const json::object want{{"key", key}, {"operator", "Exists"}, {"effect", effect}};
    for (auto& t : tolerations) {
      if (!t.is_object()) continue;
      const json::object& have = t.as_object();
      if (string_of(&have, "key") == key && string_of(&have, "operator") == "Exists" &&
          string_of(&have, "value").empty() && string_of(&have, "effect") == effect) {
        t = want;
        return;
      }
    }
    tolerations.push_back(want);
  };
  add("node.kubernetes.io/not-ready", "NoExecute");
  add("node.kubernetes.io/unreachable", "NoExecute");
  add("node.kubernetes.io/disk-pressure", "NoSchedule");
  add("node.kubernetes.io/memory-pressure", "NoSchedule");
  add("node.kubernetes.io/pid-pressure", "NoSchedule");
  add("node.kubernetes.io/unschedulable", "NoSchedule");
  if (const json::value* h = spec.if_contains("hostNetwork"); h && h->is_bool() && h->as_bool())
    add("node.kubernetes.io/network-unavailable", "NoSchedule");
  spec["tolerations"] = std::move(tolerations);
}

// The node a daemon pod is for (util.GetTargetNodeName): spec.nodeName, else the single value of
// the metadata.name In requirement its node affinity was given; "" when neither.
std::string target_node(const json::object& pod) {
  if (std::string n = string_of(object_at(pod, {"spec"}), "nodeName"); !n.empty()) return n;
  const json::array* terms = util::array_at(
      pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"}, "nodeSelectorTerms");
  if (!terms) return {};
  for (const auto& term : *terms) {
    const json::array* fields = term.is_object() ? util::array_at(term.as_object(), {}, "matchFields") : nullptr;
    for (const auto& r : fields ? *fields : json::array{}) {
      if (!r.is_object() || string_of(&r.as_object(), "key") != "metadata.name" ||
          string_of(&r.as_object(), "operator") != "In")
        continue;
      const json::array* values = util::array_at(r.as_object(), {}, "values");
      if (!values || values->size() != 1 || !(*values)[0].is_string()) return {};
      return std::string((*values)[0].as_string());
    }
  }
  return {};
}

// util.ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity becomes the one term
// metadata.name In [node] (its other parts, and preferred terms, are kept).
void pin_to_node(json::object& spec, const std::string& node) {
  json::object term{{"matchFields", json::array{json::object{
                                        {"key", "metadata.name"}, {"operator", "In"}, {"values", json::array{node}}}}}};
  json::object& affinity = util::ensure_object(spec, "affinity");
  json::object& node_affinity = util::ensure_object(affinity, "nodeAffinity");
  json::object& required = util::ensure_object(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution");
  required["nodeSelectorTerms"] = json::array{std::move(term)};
}

struct ShouldRun {
  bool run = false, keep = false;  // shouldRun, shouldContinueRunning
};

// NodeShouldRunDaemonPod: the daemon pod (the template, the daemon tolerations, nodeName the node)
// fits the node's name and required node affinity (nodeSelector and affinity), and tolerates its
// NoSchedule and NoExecute taints; one that tolerates only the NoExecute ones may keep running.
ShouldRun should_run(const PodRequirements& daemon, const std::string& template_node, const Node& node) {
  if (!template_node.empty() && template_node != node.name) return {};
  if (!daemon.matches_node_affinity(node)) return {};
  if (!first_untolerated_filtering_taint(node.taints, daemon.tolerations)) return {true, true};
  const bool no_execute_untolerated = std::any_of(node.taints.begin(), node.taints.end(), [&](const Taint& t) {
    return t.effect == TaintEffect::NoExecute && !tolerated(t, daemon.tolerations);
  });
  return {false, !no_execute_untolerated};
}

Clock::time_point created_at(const json::object& o) {
  return time_from_rfc3339(string_of(object_at(o, {"metadata"}), "creationTimestamp")).value_or(Clock::time_point{});
}

// podByCreationTimestampAndPhase: scheduled (spec.nodeName set) before unscheduled, then oldest
// first, then name.
void sort_by_age(std::vector<const json::object*>& pods) {
  std::sort(pods.begin(), pods.end(), [](const json::object* a, const json::object* b) {
    const bool ua = string_of(object_at(*a, {"spec"}), "nodeName").empty();
    const bool ub = string_of(object_at(*b, {"spec"}), "nodeName").empty();
    if (ua != ub) return !ua;
    if (created_at(*a) != created_at(*b)) return created_at(*a) < created_at(*b);
    return name_of(*a) < name_of(*b);
  });
}

}  // namespace

Plan plan_daemonset(const json::object& ds, const Children& children, const std::vector<const json::object*>& nodes,
                    Clock::time_point now) {
  Plan plan;
  const json::object* spec = object_at(ds, {"spec"});
  // An empty selector selects every pod (syncDaemonSet: SelectingAll, nothing else done).
  if (const json::object* sel = object_at(ds, {"spec", "selector"}); sel && sel->empty()) {
    plan.events.push_back(
        {"Warning", "SelectingAll", "This daemon set is selecting all pods. A non-empty selector is required."});
    return plan;
  }
  if (deleting(ds)) return plan;  // its history may be gone: no status either
  static const json::object kNone;
  const json::object& tmpl = spec ? (object_at(*spec, {"template"}) ? *object_at(*spec, {"template"}) : kNone) : kNone;

  // constructHistory: the ControllerRevision whose data is this template (getPatch), else a new
  // one named <ds>-<hash> with the next revision number.
  const json::object data = template_revision_data(tmpl);
  std::vector<const json::object*> pods, current, old;
  for (const auto& c : children) {
    if (string_of(&*c, "kind") == "ControllerRevision" || c->contains("revision")) {
      const json::value* d = c->if_contains("data");
      (d && d->is_object() && util::json_equal(d->as_object(), data) ? current : old).push_back(c.get());
    } else {
      pods.push_back(c.get());
    }
  }
  std::int64_t next_revision = 1;
  for (const auto* h : old) next_revision = std::max(next_revision, int_of(h, "revision", 0) + 1);
  std::string hash;
  if (current.empty()) {
    hash = pod_template_hash(tmpl);
    json::object labels;
    if (const json::object* l = object_at(tmpl, {"metadata", "labels"})) labels = *l;
    labels[kHashLabel] = hash;
    plan.create.push_back({"apps", "controllerrevisions",
                           controller_revision(ds, name_of(ds) + "-" + hash, std::move(labels), data, next_revision)});
  } else {
    // dedupCurHistories: the one of the highest revision is kept; its revision is raised to the
    // newest when older ones came after it.
    const json::object* keep = current.front();
    for (const auto* h : current)
      if (int_of(h, "revision", 0) >= int_of(keep, "revision", 0)) keep = h;
    for (const auto* h : current)
      if (h != keep) plan.remove.push_back({"apps", "controllerrevisions", name_of(*h)});
    hash = labels_key(*keep, kHashLabel);
    if (hash.empty()) hash = name_of(*keep);
    if (int_of(keep, "revision", 0) < next_revision) {
      json::object bumped = *keep;
      bumped["revision"] = next_revision;
      plan.update.push_back({"apps", "controllerrevisions", std::move(bumped)});
    }
  }

  // The daemon pod as NodeShouldRunDaemonPod sees it (NewPod): the template and the daemon
  // tolerations.
  json::object daemon_pod{{"metadata", object_at(tmpl, {"metadata"}) ? *object_at(tmpl, {"metadata"}) : kNone},
                          {"spec", object_at(tmpl, {"spec"}) ? *object_at(tmpl, {"spec"}) : kNone}};
  add_daemon_tolerations(daemon_pod["spec"].as_object());
  const std::string template_node = string_of(object_at(tmpl, {"spec"}), "nodeName");
  PodRequirements daemon;
  try {
    json::object probe = daemon_pod;
    probe["spec"].as_object().erase("nodeName");
    daemon = PodRequirements::from_pod_json(probe);
  } catch (const ValidationError&) {
    return plan;  // a template the scheduler cannot read runs nowhere
  }
  std::map<std::string, Node> node_by_name;
  for (const auto* n : nodes) {
    try {
      Node node = Node::from_json(*n);
      node_by_name.emplace(node.name, std::move(node));
    } catch (const ValidationError&) {}
  }
  std::map<std::string, ShouldRun> verdict;
  for (const auto& [name, node] : node_by_name) verdict[name] = should_run(daemon, template_node, node);

  // getNodesToDaemonPods: the pods by the node they are for (a finished one being deleted is left
  // to the kubelet and the pod GC).
  std::map<std::string, std::vector<const json::object*>> on_node;
  for (const auto* p : pods) {
    if (terminal(*p) && deleting(*p)) continue;
    if (const std::string n = target_node(*p); !n.empty()) on_node[n].push_back(p);
  }
  const std::optional<std::int64_t> generation = [&]() -> std::optional<std::int64_t> {
    if (const auto g = util::annotation(ds, kTemplateGeneration)) return go_parse_int(*g);  // strconv.ParseInt
    return std::nullopt;
  }();
  auto updated = [&](const json::object& pod) {  // util.IsPodUpdated
    return (!hash.empty() && labels_key(pod, kHashLabel) == hash) ||
           (generation && labels_key(pod, kGenerationLabel) == std::to_string(*generation));
  };
  const std::int64_t min_ready = int_of(spec, "minReadySeconds", 0);
  const json::object* ru = spec ? object_at(*spec, {"updateStrategy", "rollingUpdate"}) : nullptr;
  const bool rolling = string_of(object_at(ds, {"spec", "updateStrategy"}), "type") == "RollingUpdate";
  std::int64_t desired = 0;
  for (const auto& [name, v] : verdict) desired += v.run ? 1 : 0;
  // util.SurgeCount / UnavailableCount: intstr scaled to the desired number, rounding up.
  auto scaled = [&](std::string_view key) -> std::int64_t {
    if (!rolling || !ru) return 0;
    return scaled_int_or_percent(ru->if_contains(key), "0", desired, true);
  };
  const std::int64_t max_surge = scaled("maxSurge");

  // manage -> podsShouldBeOnNode for every node.
  std::vector<std::string> create_on, remove;
  for (const auto& [name, v] : verdict) {
    auto it = on_node.find(name);
    const bool exists = it != on_node.end();
    if (v.run && !exists) {
      create_on.push_back(name);
    } else if (v.keep && exists) {
      std::vector<const json::object*> running;
      for (const auto* p : it->second) {
        if (deleting(*p)) continue;
        const std::string phase = phase_of(*p);
        if (phase == "Failed") {
          plan.events.push_back({"Warning", "FailedDaemonPod",
                                 fmt::format("Found failed daemon pod {}/{} on node {}, will try to kill it",
                                             namespace_of(*p), name_of(*p), name)});
          remove.push_back(name_of(*p));
        } else if (phase == "Succeeded") {
          plan.events.push_back({"Normal", "SucceededDaemonPod",
                                 fmt::format("Found succeeded daemon pod {}/{} on node {}, will try to delete it",
                                             namespace_of(*p), name_of(*p), name)});
          remove.push_back(name_of(*p));
        } else {
          running.push_back(p);
        }
      }
      sort_by_age(running);
      if (max_surge == 0) {  // without surge, only the oldest running pod stays
        for (std::size_t i = 1; i < running.size(); ++i) remove.push_back(name_of(*running[i]));
        continue;
      }
      if (running.size() <= 1) {
        if (running.empty() && v.run) create_on.push_back(name);
        continue;
      }
      // Surge: the oldest pod of the current hash and the oldest of another may both stay while the
      // old one is ready and the new one not yet available.
      const json::object *oldest_new = nullptr, *oldest_old = nullptr;
      for (const auto* p : running) {
        const json::object*& slot = updated(*p) ? oldest_new : oldest_old;
        if (!slot)
          slot = p;
        else
          remove.push_back(name_of(*p));
      }
      if (oldest_new && oldest_old && (!pod_ready(*oldest_old) || pod_available(*oldest_new, min_ready, now)))
        remove.push_back(name_of(*oldest_old));
    } else if (!v.keep && exists) {
      for (const auto* p : it->second)
        if (!deleting(*p)) remove.push_back(name_of(*p));
    }
  }
  // getUnscheduledPodsWithoutNode: an unscheduled pod for a node that is gone.
  for (const auto& [name, ps] : on_node)
    if (!verdict.count(name))
      for (const auto* p : ps)
        if (string_of(object_at(*p, {"spec"}), "nodeName").empty()) remove.push_back(name_of(*p));

  // rollingUpdate runs once the creations and deletions asked for are seen (the expectations):
  // here, in a sync that asks for none.
  if (create_on.empty() && remove.empty() && rolling) {
    std::int64_t max_unavailable = scaled("maxUnavailable");
    if (desired > 0 && max_unavailable == 0 && max_surge == 0) max_unavailable = 1;  // updatedDesiredNodeCounts
    for (const auto& [name, v] : verdict)
      if (v.run) on_node.try_emplace(name);
    auto find_updated = [&](const std::vector<const json::object*>& ps, const json::object*& np,
                            const json::object*& op) {  // findUpdatedPodsOnNode
      np = op = nullptr;
      for (const auto* p : ps) {
        if (deleting(*p)) continue;
        const json::object*& slot = updated(*p) ? np : op;
        if (slot) return false;
        slot = p;
      }
      return true;
    };
    if (max_surge == 0) {
      std::int64_t unavailable = 0;
      std::vector<std::string> allowed, candidates;
      for (const auto& [name, ps] : on_node) {
        const json::object *np = nullptr, *op = nullptr;
        if (!find_updated(ps, np, op)) {
          ++unavailable;
          continue;
        }
        if ((!op && !np) || (op && np)) {
          ++unavailable;
        } else if (np) {
          if (!pod_available(*np, min_ready, now)) ++unavailable;
        } else if (!pod_available(*op, min_ready, now)) {
          allowed.push_back(name_of(*op));
          ++unavailable;
        } else if (unavailable < max_unavailable) {
          candidates.push_back(name_of(*op));
        }
      }
      const auto room =
          std::clamp<std::int64_t>(max_unavailable - unavailable, 0, static_cast<std::int64_t>(candidates.size()));
      remove = allowed;
      remove.insert(remove.end(), candidates.begin(), candidates.begin() + room);
    } else {
      std::int64_t surge = 0, available = 0;
      std::vector<std::string> allowed_nodes, candidate_nodes, should_not_run;
      for (const auto& [name, ps] : on_node) {
        const json::object *np = nullptr, *op = nullptr;
        if (!find_updated(ps, np, op)) {
          ++surge;
          continue;
        }
        if (op ? pod_available(*op, min_ready, now) : np && pod_available(*np, min_ready, now)) ++available;
        const auto v = verdict.find(name);
        const bool run_here = v != verdict.end() && v->second.run;
        if (!op) continue;
        if (!np) {
          if (!pod_available(*op, min_ready, now)) {
            if (!run_here)
              remove.push_back(name_of(*op));
            else
              allowed_nodes.push_back(name);
          } else if (!run_here) {
            should_not_run.push_back(name_of(*op));
          } else if (surge < max_surge) {
            candidate_nodes.push_back(name);
          }
        } else if (!pod_available(*np, min_ready, now)) {
          ++surge;
        } else {
          remove.push_back(name_of(*op));
        }
      }
      if (const std::int64_t deletable =
              std::min<std::int64_t>(available - desired, static_cast<std::int64_t>(should_not_run.size()));
          deletable > 0)
        remove.insert(remove.end(), should_not_run.begin(), should_not_run.begin() + deletable);
      const auto room =
          std::clamp<std::int64_t>(max_surge - surge, 0, static_cast<std::int64_t>(candidate_nodes.size()));
      create_on = allowed_nodes;
      create_on.insert(create_on.end(), candidate_nodes.begin(), candidate_nodes.begin() + room);
    }
  }

  // syncNodes: new pods from the template (CreatePodTemplate: the daemon tolerations, the
  // revision hash and template generation labels), pinned to their node by node affinity.
  for (const auto& node : create_on) {
    std::map<std::string, std::string> labels{{kHashLabel, hash}};
    if (generation) labels[kGenerationLabel] = std::to_string(*generation);
    json::object pod = pod_from_template(tmpl, ds, "", name_of(ds) + "-", labels);
    json::object& ps = pod["spec"].as_object();
    add_daemon_tolerations(ps);
    pin_to_node(ps, node);
    plan.create.push_back({"", "pods", std::move(pod)});
  }
  std::set<std::string> removed;
  for (const auto& r : remove)
    if (removed.insert(r).second) plan.remove.push_back({"", "pods", r});

  // cleanupHistory: the oldest revisions past revisionHistoryLimit that no pod still runs.
  const std::int64_t keep = int_of(spec, "revisionHistoryLimit", 10);
  if (std::int64_t kill = static_cast<std::int64_t>(old.size()) - keep; kill > 0) {
    std::set<std::string> live;
    for (const auto* p : pods)
      if (const std::string h = labels_key(*p, kHashLabel); !h.empty()) live.insert(h);
    std::sort(old.begin(), old.end(), [](const json::object* a, const json::object* b) {
      return int_of(a, "revision", 0) < int_of(b, "revision", 0);
    });
    for (const auto* h : old) {
      if (kill <= 0) break;
      if (live.count(labels_key(*h, kHashLabel))) continue;
      plan.remove.push_back({"apps", "controllerrevisions", name_of(*h)});
      --kill;
    }
  }

  // updateDaemonSetStatus, from the pods as they were when the sync began (as from the lister).
  std::int64_t current_n = 0, misscheduled = 0, ready = 0, updated_n = 0, available_n = 0;
  for (const auto& [name, v] : verdict) {
    auto it = on_node.find(name);
    const bool scheduled = it != on_node.end() && !it->second.empty();
    if (!v.run) {
      misscheduled += scheduled ? 1 : 0;
      continue;
    }
    if (!scheduled) continue;
    ++current_n;
    std::vector<const json::object*> ps = it->second;
    sort_by_age(ps);
    const json::object& pod = *ps.front();
    if (pod_ready(pod)) {
      ++ready;
      if (pod_available(pod, min_ready, now)) ++available_n;
    }
    if (updated(pod)) ++updated_n;
  }
  json::object status = object_at(ds, {"status"}) ? *object_at(ds, {"status"}) : json::object{};
  const json::object before = status;
  status["currentNumberScheduled"] = current_n;
  status["numberMisscheduled"] = misscheduled;
  status["desiredNumberScheduled"] = desired;
  status["numberReady"] = ready;
  status["observedGeneration"] = int_of(object_at(ds, {"metadata"}), "generation", 1);
  status["updatedNumberScheduled"] = updated_n;
  status["numberAvailable"] = available_n;
  status["numberUnavailable"] = desired - available_n;
  for (const char* k : {"observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable"})
    if (status.at(k).as_int64() == 0) status.erase(k);  // omitempty
  if (!util::json_equal(before, status)) plan.status = std::move(status);
  if (min_ready > 0 && ready != available_n) plan.requeue_after = std::chrono::seconds(min_ready);
  return plan;
}

}  // namespace gpupool::embedded
