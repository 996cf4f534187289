#include "embedded/controllers_util.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <set>

#include <atomic>

#include <unistd.h>

#include <fmt/format.h>

#include "embedded/apply.hpp"
#include "embedded/clock.hpp"
#include "embedded/events.hpp"
#include "embedded/store.hpp"

namespace gpupool::embedded::util {

bool json_equal(const json::object& a, const json::object& b) noexcept {
  if (a.size() != b.size()) return false;
  for (const auto& kv : a) {  // keys are unique in a boost::json::object
    const json::value* v = b.if_contains(kv.key());
    if (!v || !json_equal(kv.value(), *v)) return false;
  }
  return true;
}

bool json_equal(const json::array& a, const json::array& b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!json_equal(a[i], b[i])) return false;
  return true;
}

bool json_equal(const json::value& a, const json::value& b) noexcept {
  if (a.is_object()) return b.is_object() && json_equal(a.get_object(), b.get_object());
  if (a.is_array()) return b.is_array() && json_equal(a.get_array(), b.get_array());
  return a == b;  // scalars and strings: boost compares them without copying
}

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
          (!old.contains(k) || !json_equal(old.at(k), v)))
        same = false;
    if (same) return false;
    old = std::move(next);
    return true;
  }
  conditions.push_back(condition);
  return true;
}

namespace {
// An ObjectReference to `involved` (kind, name, namespace, uid, apiVersion, resourceVersion).
json::object object_reference(const json::object& involved) {
  const json::object* md = object_at(involved, {"metadata"});
  // Read in place (string_of would copy each into a std::string first).
  const auto text = [md](std::string_view key) -> std::string_view {
    const json::value* v = md ? md->if_contains(key) : nullptr;
    return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
  };
  const std::string_view ns = text("namespace");
  json::object ref{{"kind", involved.at("kind")},
                   {"name", text("name")},
                   {"uid", text("uid")},
                   {"apiVersion", involved.at("apiVersion")},
                   {"resourceVersion", text("resourceVersion")}};
  if (!ns.empty()) ref["namespace"] = ns;
  return ref;
}

// Both recorders: an Event named "<object>.<hex time>" in the object's namespace ("default" for a
// cluster-scoped one), about `involved`; `fields` are the rest of it. Returns its name.
std::string store_event(Store& store, std::chrono::system_clock::time_point now, const json::object& involved,
                        json::object fields, const WriteOptions& o = {}) {
  static std::atomic<std::uint64_t> counter{0};
  const json::object* md = object_at(involved, {"metadata"});
  const std::string ns = string_of(md, "namespace").empty() ? "default" : string_of(md, "namespace");
  const auto t = std::chrono::time_point_cast<Clock::duration>(now);
  const std::string name = fmt::format("{}.{:x}", string_of(md, "name"),
                                       static_cast<std::uint64_t>(t.time_since_epoch().count()) + counter++);
  fields["apiVersion"] = "v1";
  fields["kind"] = "Event";
  fields["metadata"] = json::object{{"name", name}, {"namespace", ns}};
  fields["involvedObject"] = object_reference(involved);
  store.create_shared(store.type("", "events"), ns, std::move(fields), o);  // (no copy of it back)
  return name;
}
}  // namespace

std::string record_event(Store& store, std::chrono::system_clock::time_point now, const json::object& involved,
                         std::string_view type, std::string_view reason, const std::string& message,
                         const std::string& component, std::string_view action,
                         std::optional<std::string_view> reporting_instance) {
  const std::string t = to_rfc3339(std::chrono::time_point_cast<Clock::duration>(now));
  json::object ev{{"reason", reason},
                  {"message", message},
                  {"source", json::object{{"component", component}}},
                  {"firstTimestamp", t},
                  {"lastTimestamp", t},
                  {"count", 1},
                  {"type", type},
                  {"eventTime", nullptr},
                  {"reportingComponent", component},
                  {"reportingInstance", reporting_instance ? std::string(*reporting_instance) : std::string()}};
  if (!action.empty()) ev["action"] = action;
  // client-go's EventCorrelator (eventObserve): an event like one recorded before (same source,
  // involved object, type, reason and message) is the old one with count + 1 and a new
  // lastTimestamp. Like the recorder's LRU cache (4096 keys), the names of recent events are kept.
  const json::object* md = object_at(involved, {"metadata"});
  const std::string ns = string_of(md, "namespace").empty() ? "default" : string_of(md, "namespace");
  const std::string key =
      fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", static_cast<const void*>(&store), ns, component,
                  string_of(md, "uid"), string_of(md, "name"), type, reason, message);
  static std::mutex mu;
  static std::map<std::string, std::string> recent;  // key -> event name
  static std::deque<std::string> order;
  std::string existing;
  {
    std::lock_guard lk(mu);
    if (auto it = recent.find(key); it != recent.end()) existing = it->second;
  }
  if (!existing.empty()) {
    try {
      store.mutate(store.type("", "events"), ns, existing, [&](json::object& o) {
        o["count"] = int_of(&o, "count", 1) + 1;
        o["lastTimestamp"] = t;
      });
      return existing;
    } catch (const StatusError&) {
      // deleted since: record a new one
    }
  }
  const std::string name = store_event(store, now, involved, std::move(ev));
  std::lock_guard lk(mu);
  if (recent.emplace(key, name).second)
    order.push_back(key);
  else
    recent[key] = name;
  while (order.size() > 4096) {
    recent.erase(order.front());
    order.pop_front();
  }
  return name;
}

const std::string& host_name() {
  static const std::string name = [] {
    char buf[256] = {};
    return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("localhost");
  }();
  return name;
}

std::string record_series_event(Store& store, std::chrono::system_clock::time_point now, const json::object& involved,
                                std::string_view type, std::string_view reason, std::string_view action,
                                const std::string& message, const std::string& controller) {
  // tools/events recorder.go generateEvent: name "<regarding>.<UnixNano hex>", EventTime now,
  // ReportingInstance reportingController + "-" + hostname; the core/v1 view of an events.k8s.io
  // Event leaves first/lastTimestamp zero (null), source empty and count out (0, omitempty).
  return store_event(store, now, involved,
                     json::object{{"reason", reason},
                                  {"message", message},
                                  {"source", json::object{}},
                                  {"firstTimestamp", nullptr},
                                  {"lastTimestamp", nullptr},
                                  {"type", type},
                                  {"eventTime", to_rfc3339_micro(std::chrono::time_point_cast<Clock::duration>(now))},
                                  {"action", action},
                                  {"reportingComponent", controller},
                                  {"reportingInstance", controller + "-" + host_name()}},
                     events_api_writes(store, now));
}

WriteOptions events_api_writes(Store& store, std::chrono::system_clock::time_point now) {
  WriteOptions o;
  const char* manager = WritingAs::current();
  if (!manager) return o;
  o.track_fields = [&t = store.type("events.k8s.io", "events"), manager = std::string(manager),
                    time = to_rfc3339(std::chrono::time_point_cast<Clock::duration>(now))](const json::object* old,
                                                                                           json::object& next) {
    json::object v1 = core_event_to_v1(next);
    const std::optional<json::object> old_v1 = old ? std::optional(core_event_to_v1(*old)) : std::nullopt;
    track_update(old_v1 ? &*old_v1 : nullptr, v1, t, manager, time);
    json::object& md = util::ensure_object(next, "metadata");
    if (const json::value* mf = util::object_at(v1, {"metadata"})->if_contains("managedFields"))
      md["managedFields"] = *mf;
    else
      md.erase("managedFields");
  };
  return o;
}

// metav1.LabelSelectorAsSelector(...).Matches(labels): matchLabels and matchExpressions
// (In, NotIn, Exists, DoesNotExist). An unparsable selector matches (the caller skips it, as
// the real code does on error).
bool selector_matches(const json::object& sel, const json::object* labels) {
  auto label = [&](std::string_view k) -> const json::value* { return labels ? labels->if_contains(k) : nullptr; };
  if (const json::object* ml = object_at(sel, {"matchLabels"}))
    for (const auto& [k, v] : *ml) {
      const json::value* have = label(k);
      if (!have || !util::json_equal(*have, v)) return false;
    }
  if (const json::array* me = util::array_at(sel, {}, "matchExpressions"))
    for (const auto& e : *me) {
      if (!e.is_object()) continue;
      const std::string key = string_of(&e.as_object(), "key"), op = string_of(&e.as_object(), "operator");
      const json::value* have = label(key);
      bool in = false;
      if (const json::array* vs = util::array_at(e.as_object(), {}, "values"))
        for (const auto& v : *vs)
          if (have && util::json_equal(*have, v)) in = true;
      if ((op == "In" && !in) || (op == "NotIn" && in) || (op == "Exists" && !have) || (op == "DoesNotExist" && have))
        return false;
    }
  return true;
}

}  // namespace gpupool::embedded::util

namespace gpupool::embedded::ctrl {

json::object condition(std::string_view type, bool status, std::string_view reason, std::string_view message,
                       Clock::time_point now, bool with_update_time) {
  json::object c{{"type", type},
                 {"status", status ? "True" : "False"},
                 {"reason", reason},
                 {"message", message},
                 {"lastTransitionTime", to_rfc3339(now)}};
  if (with_update_time) c["lastUpdateTime"] = to_rfc3339(now);
  return c;
}

json::object pod_from_template(const json::object& tmpl, const json::object& owner, const std::string& name,
                               const std::string& generate_name,
                               const std::map<std::string, std::string>& extra_labels) {
  using util::object_at;
  json::object md;
  if (const json::object* tmd = object_at(tmpl, {"metadata"})) {
    // GetPodFromTemplate: the template's labels, annotations and finalizers.
    for (const char* k : {"labels", "annotations", "finalizers"})
      if (const json::value* v = tmd->if_contains(k)) md[k] = *v;
  }
  auto& labels = util::ensure_object(md, "labels");
  for (const auto& [k, v] : extra_labels) labels[k] = v;
  if (!name.empty())
    md["name"] = name;
  else
    md["generateName"] = generate_name;
  md["namespace"] = util::namespace_of(owner);
  md["ownerReferences"] = json::array{util::controller_reference(owner)};
  json::object pod{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", std::move(md)}};
  if (const json::object* spec = object_at(tmpl, {"spec"}))
    pod["spec"] = *spec;
  else
    pod["spec"] = json::object{};
  return pod;
}

json::object template_revision_data(const json::object& pod_template) {
  json::object tmpl = pod_template;
  tmpl["$patch"] = "replace";
  return json::object{{"spec", json::object{{"template", std::move(tmpl)}}}};
}

json::object controller_revision(const json::object& owner, const std::string& name, json::object labels,
                                 json::object data, std::int64_t revision) {
  json::object md{{"name", name}, {"namespace", util::namespace_of(owner)}};
  if (!labels.empty()) md["labels"] = std::move(labels);
  if (const json::object* a = util::object_at(owner, {"metadata", "annotations"})) md["annotations"] = *a;
  md["ownerReferences"] = json::array{util::controller_reference(owner)};
  return json::object{{"apiVersion", "apps/v1"},
                      {"kind", "ControllerRevision"},
                      {"metadata", std::move(md)},
                      {"data", std::move(data)},
                      {"revision", revision}};
}

}  // namespace gpupool::embedded::ctrl

namespace gpupool::embedded::ctrl {

bool owner_selects(const json::object& owner, const json::object& o) {
  const json::object* sel = util::object_at(owner, {"spec", "selector"});
  return sel && util::selector_matches(*sel, util::object_at(o, {"metadata", "labels"}));
}

namespace {
// afterOrZero: a zero (unknown) time is the smaller; else the later.
bool after_or_zero(const std::optional<Clock::time_point>& a, const std::optional<Clock::time_point>& b) {
  if (!a || !b) return !a;
  return *a > *b;
}
std::optional<Clock::time_point> time_at(const json::object* o, std::string_view key) {
  return time_from_rfc3339(util::string_of(o, key));
}
// maxContainerRestarts: the regular containers' highest restartCount, then the sidecars' (init
// containers with restartPolicy Always).
std::pair<std::int64_t, std::int64_t> max_restarts(const json::object& pod) {
  std::int64_t regular = 0, sidecar = 0;
  if (const json::array* cs = util::array_at(pod, {"status"}, "containerStatuses"))
    for (const auto& c : *cs) regular = std::max(regular, util::int_of(c.if_object(), "restartCount", 0));
  std::set<std::string> sidecars;
  if (const json::array* ics = util::array_at(pod, {"spec"}, "initContainers"))
    for (const auto& c : *ics)
      if (util::string_of(c.if_object(), "restartPolicy") == "Always")
        sidecars.insert(util::string_of(c.if_object(), "name"));
  if (const json::array* cs = util::array_at(pod, {"status"}, "initContainerStatuses"))
    for (const auto& c : *cs)
      if (sidecars.count(util::string_of(c.if_object(), "name")))
        sidecar = std::max(sidecar, util::int_of(c.if_object(), "restartCount", 0));
  return {regular, sidecar};
}
}  // namespace

bool active_pods_less(const json::object& a, const json::object& b) {
  const std::string na = util::string_of(util::object_at(a, {"spec"}), "nodeName");
  const std::string nb = util::string_of(util::object_at(b, {"spec"}), "nodeName");
  if (na != nb && (na.empty() || nb.empty())) return na.empty();
  // podPhaseToOrdinal (a phase it does not list is 0, as Pending).
  const auto ordinal = [](const json::object& p) {
    const std::string ph = phase_of(p);
    return ph == "Running" ? 2 : ph == "Unknown" ? 1 : 0;
  };
  if (ordinal(a) != ordinal(b)) return ordinal(a) < ordinal(b);
  const bool ra = pod_ready(a), rb = pod_ready(b);
  if (ra != rb) return !ra;
  if (ra && rb) {
    const auto ready_since = [](const json::object& p) {
      return time_at(util::find_condition(util::array_at(p, {"status"}, "conditions"), "Ready"), "lastTransitionTime");
    };
    const auto ta = ready_since(a), tb = ready_since(b);
    if (ta != tb) return after_or_zero(ta, tb);
  }
  const auto xa = max_restarts(a), xb = max_restarts(b);
  if (xa.first != xb.first) return xa.first > xb.first;
  if (xa.second != xb.second) return xa.second > xb.second;
  const auto ca = time_at(util::object_at(a, {"metadata"}), "creationTimestamp");
  const auto cb = time_at(util::object_at(b, {"metadata"}), "creationTimestamp");
  if (ca != cb) return after_or_zero(ca, cb);
  return false;
}

bool holds_finalizer(const json::object& o, std::string_view finalizer) {
  const json::object* md = util::object_at(o, {"metadata"});
  return md && embedded::has_finalizer(*md, finalizer);
}

std::vector<std::shared_ptr<const json::object>> claim(Store& store, const ResourceType& t, const json::object& owner,
                                                       const ClaimRules& rules) {
  const std::string ns = util::namespace_of(owner), uid = util::uid_of(owner);
  const bool owner_deleting = deleting(owner);
  // The candidates: what the owner controls (the owner-uid index, filtered by controllerRef) and
  // the namespace's orphans (a non-controller reference to the owner leaves an object an orphan).
  std::map<std::string, std::shared_ptr<const json::object>> candidates;
  for (auto& o : store.dependents(t, ns, uid))
    if (util::controller_uid(*o) == uid) candidates.emplace(util::name_of(*o), std::move(o));
  for (auto& o : store.orphans(t, ns)) candidates.emplace(util::name_of(*o), std::move(o));
  std::vector<std::shared_ptr<const json::object>> out;
  for (auto& candidate : candidates) {
    const std::string& name = candidate.first;  // (a lambda below uses it: no structured binding)
    std::shared_ptr<const json::object>& o = candidate.second;
    if (rules.active_only && (terminal(*o) || deleting(*o))) continue;
    const std::string o_uid = util::uid_of(*o);
    const bool matches = rules.match(*o);
    // The write: a patch of metadata.ownerReferences naming the object's uid (ownerRefControllerPatch,
    // GenerateDeleteOwnerRefStrategicMergeBytes): one gone or replaced meanwhile is a 404.
    // The finalizer goes with the reference: added on adoption, removed on release (the patch's
    // finalizers, or $deleteFromPrimitiveList/finalizers).
    auto patch = [&](const std::function<void(json::array&)>& edit, bool adopt) {
      store.mutate(t, ns, name, [&](json::object& cur) {
        if (util::uid_of(cur) != o_uid) throw StatusError::not_found(t, name);
        json::object& md = util::ensure_object(cur, "metadata");
        json::value& refs = md["ownerReferences"];
        if (!refs.is_array()) refs = json::array{};
        edit(refs.as_array());
        if (refs.as_array().empty()) md.erase("ownerReferences");
        if (!rules.finalizer.empty()) set_finalizer(md, rules.finalizer, adopt);
      });
      return store.find(t, ns, name);
    };
    try {
      if (util::controller_ref(*o)) {  // the owner's (the candidates hold no other controller's)
        if (matches) {
          out.push_back(std::move(o));
        } else if (rules.release && !owner_deleting) {
          // ReleasePod / ReleaseReplicaSet / ReleaseControllerRevision: every reference to the
          // owner deleted (a strategic merge "$patch": "delete" by uid).
          patch(
              [&](json::array& refs) {
                json::array kept;
                for (auto& r : refs)
                  if (util::string_of(r.if_object(), "uid") != uid) kept.push_back(std::move(r));
                refs = std::move(kept);
              },
              false);
        }
        continue;
      }
      if (owner_deleting || !matches || (deleting(*o) && !rules.adopt_deleting)) continue;
      // AdoptPod / AdoptReplicaSet / AdoptControllerRevision: the controller reference merged in by
      // uid (strategic merge of ownerReferences, whose patch key is uid).
      const json::object ref = util::controller_reference(owner);
      if (auto adopted = patch(
              [&](json::array& refs) {
                for (auto& r : refs)
                  if (r.is_object() && util::string_of(&r.as_object(), "uid") == uid) {
                    for (const auto& [k, v] : ref) r.as_object()[k] = v;
                    return;
                  }
                refs.push_back(ref);
              },
              true))
        out.push_back(std::move(adopted));
    } catch (const StatusError& e) {
      if (e.code() != 404 && e.code() != 422) throw;
    }
  }
  return out;
}

}  // namespace gpupool::embedded::ctrl
