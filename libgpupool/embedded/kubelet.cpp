#include "embedded/kubelet.hpp"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"
#include "embedded/local_runtime.hpp"
#include "embedded/store.hpp"
#include "embedded/validation.hpp"
#include "gpupool/time.hpp"

namespace gpupool::embedded {
namespace {

using namespace std::chrono_literals;
using util::object_at;
using util::string_of;

constexpr std::string_view kStartupAnnotation = "gpupool.io/simulate-startup";
constexpr std::string_view kDurationAnnotation = "gpupool.io/simulate-duration";
constexpr std::string_view kExitCodeAnnotation = "gpupool.io/simulate-exit-code";
// RunMode::Local: {"containerPort": local port, ...} of the pod's processes.
constexpr std::string_view kLocalPortsAnnotation = "gpupool.io/local-ports";

StatusError invalid_annotation(const json::object& pod, std::string_view key, const std::string& value,
                               std::string_view rule) {
  ResourceType pods;
  pods.version = "v1";
  pods.resource = "pods";
  pods.kind = "Pod";
  return StatusError::invalid(pods, util::name_of(pod),
                              {{"FieldValueInvalid", fmt::format("Invalid value: \"{}\": {}", value, rule),
                                fmt::format("metadata.annotations[{}]", key)}});
}

std::string time_text(Clock::time_point t) { return to_rfc3339(t); }

}  // namespace

std::optional<Clock::time_point> time_at(const json::object* o, std::string_view key) {
  const std::string s = string_of(o, key);
  Clock::time_point t;
  if (s.empty() || !parse_rfc3339(s, t)) return std::nullopt;
  return t;
}

std::string restart_policy(const json::object& pod) {
  std::string p = string_of(object_at(pod, {"spec"}), "restartPolicy");
  return p.empty() ? "Always" : p;
}

bool restarts_after(const std::string& policy, int exit_code) {
  return policy == "Always" || (policy == "OnFailure" && exit_code != 0);
}

std::string terminated_reason(int exit_code) { return exit_code == 0 ? "Completed" : "Error"; }

std::vector<const json::object*> containers_of(const json::object& pod, std::string_view key) {
  std::vector<const json::object*> out;
  if (const json::array* cs = util::array_at(pod, {"spec"}, key))
    for (const auto& c : *cs)
      if (c.is_object()) out.push_back(&c.as_object());
  return out;
}

std::string container_id(const json::object& pod, const std::string& container, std::int64_t attempt) {
  const std::size_t h1 = std::hash<std::string>{}(util::uid_of(pod) + "/" + container);
  const std::size_t h2 = std::hash<std::string>{}(fmt::format("{}#{}", h1, attempt));
  return fmt::format("containerd://{:016x}{:016x}{:016x}{:016x}", h1, h2, h1 ^ 0x9e3779b97f4a7c15ULL, h2 * 31);
}

// QoS class: the API's own rule (validation.cpp pod_qos_class, pkg/apis/core/helper/qos
// GetPodQOS), so the status the kubelet writes keeps the class the pod was created with (the
// status strategy refuses another: status.qosClass is immutable).
std::string qos_class(const json::object& pod) {
  static const json::object kNoSpec;
  const json::object* spec = object_at(pod, {"spec"});
  return pod_qos_class(spec ? *spec : kNoSpec);
}

void write_addresses(json::object& status, const NodeAddress& where, bool pod_ip) {
  if (!where.host_ip.empty()) {
    status["hostIP"] = where.host_ip;
    status["hostIPs"] = json::array{json::object{{"ip", where.host_ip}}};
  }
  if (pod_ip && !where.pod_ip.empty()) {
    status["podIP"] = where.pod_ip;
    status["podIPs"] = json::array{json::object{{"ip", where.pod_ip}}};
  }
}

namespace {

// Where a pod's containers are at `now`.
struct Attempt {
  enum class State { Waiting, Running, Terminated } state = State::Waiting;
  Clock::time_point started{}, finished{};
  std::int64_t restart_count = 0;
  int exit_code = 0;
  std::optional<std::pair<Clock::time_point, Clock::time_point>> last;  // previous attempt's run
};

Attempt attempt_at(const json::object& pod, Clock::time_point start, Clock::time_point now, const PodSimulation& sim) {
  Attempt a;
  if (now < start) return a;
  if (!sim.run_time) {
    a.state = Attempt::State::Running;
    a.started = start;
    return a;
  }
  const std::string policy = restart_policy(pod);
  const Clock::duration run = *sim.run_time;
  if (!restarts_after(policy, sim.exit_code)) {
    a.started = start;
    if (now >= start + run) {
      a.state = Attempt::State::Terminated;
      a.finished = start + run;
      a.exit_code = sim.exit_code;
    } else {
      a.state = Attempt::State::Running;
    }
    return a;
  }
  // Restarts without CrashLoopBackOff delays: attempt k runs [start + k*run, start + (k+1)*run).
  const Clock::duration step = std::max(run, Clock::duration(1s));
  const std::int64_t k = (now - start) / step;
  a.state = Attempt::State::Running;
  a.restart_count = k;
  a.started = start + k * step;
  a.exit_code = sim.exit_code;
  if (k > 0) a.last = std::make_pair(a.started - step, a.started - step + run);
  return a;
}

}  // namespace

std::string shell_join(const json::object& c) {
  std::string out;
  for (const char* key : {"command", "args"}) {
    const json::value* v = c.if_contains(key);
    if (!v || !v->is_array()) continue;
    for (const auto& part : v->as_array()) {
      if (!part.is_string()) continue;
      std::string s(part.as_string());
      if (!out.empty()) out += ' ';
      const bool plain = !s.empty() && s.find_first_of(" \t\n'\"$;&|<>*?()") == std::string::npos;
      out += plain ? s : "'" + s + "'";
    }
  }
  if (out.empty()) out = fmt::format("(entrypoint of {})", string_of(&c, "image"));
  return out;
}

namespace {

std::string human(Clock::duration d) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return s % 60 ? fmt::format("{}m{}s", s / 60, s % 60) : fmt::format("{}m", s / 60);
  return fmt::format("{}h{}m", s / 3600, (s % 3600) / 60);
}

}  // namespace

std::string go_slice(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? " " : "") + names[i];
  return out + "]";
}

void validate_simulation_annotations(const json::object& pod) {
  if (auto v = util::annotation(pod, kStartupAnnotation); v && !parse_duration(*v))
    throw invalid_annotation(pod, kStartupAnnotation, *v, "must be a duration such as 2s or 1m30s");
  if (auto v = util::annotation(pod, kDurationAnnotation); v && *v != "forever" && !parse_duration(*v))
    throw invalid_annotation(pod, kDurationAnnotation, *v, "must be a duration such as 30s or 2h, or \"forever\"");
  if (auto v = util::annotation(pod, kExitCodeAnnotation)) {
    int code = -1;
    const auto r = std::sscanf(v->c_str(), "%d", &code);
    if (r != 1 || code < 0 || code > 255 || std::to_string(code) != *v)
      throw invalid_annotation(pod, kExitCodeAnnotation, *v, "must be an integer from 0 to 255");
  }
}

PodSimulation simulation_of(const json::object& pod, const KubeletOptions& options) {
  validate_simulation_annotations(pod);
  PodSimulation sim;
  sim.startup = options.startup;
  if (auto v = util::annotation(pod, kStartupAnnotation)) sim.startup = *parse_duration(*v);
  if (auto v = util::annotation(pod, kDurationAnnotation)) {
    if (*v != "forever") sim.run_time = *parse_duration(*v);
  } else if (restart_policy(pod) != "Always") {
    sim.run_time = options.batch_run_time;
  }
  if (auto v = util::annotation(pod, kExitCodeAnnotation)) sim.exit_code = std::stoi(*v);
  return sim;
}

json::object pod_condition(const char* type, bool ok, const std::string& reason, const std::string& message,
                           Clock::time_point at) {
  json::object c{{"type", type},
                 {"status", ok ? "True" : "False"},
                 {"lastProbeTime", nullptr},
                 {"lastTransitionTime", time_text(at)}};
  if (!reason.empty()) c["reason"] = reason;
  if (!message.empty()) c["message"] = message;
  return c;
}

void order_pod_conditions(json::array& conditions) {
  // Conditions the kubelet does not own (PodScheduled) stay; order them as the kubelet lists them.
  static const std::vector<std::string> order{"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                              "PodScheduled"};
  std::stable_sort(conditions.begin(), conditions.end(), [](const json::value& x, const json::value& y) {
    auto rank = [](const json::value& v) {
      const std::string t = v.is_object() ? string_of(&v.as_object(), "type") : "";
      return std::find(order.begin(), order.end(), t) - order.begin();
    };
    return rank(x) < rank(y);
  });
}

std::optional<json::object> kubelet_status(const json::object& pod, const NodeAddress& where, Clock::time_point now,
                                           const KubeletOptions& options) {
  const json::object* old_status = object_at(pod, {"status"});
  const std::string old_phase = string_of(old_status, "phase");
  if (old_phase == "Succeeded" || old_phase == "Failed") return std::nullopt;
  const PodSimulation sim = simulation_of(pod, options);
  const Clock::time_point bound = time_at(old_status, "startTime").value_or(now);
  const Clock::time_point start = bound + sim.startup;
  const Attempt a = attempt_at(pod, start, now, sim);

  json::object status = old_status ? *old_status : json::object{};
  write_addresses(status, where, a.state != Attempt::State::Waiting);
  status["startTime"] = time_text(bound);
  status["qosClass"] = qos_class(pod);
  std::vector<std::string> names;
  json::array statuses;
  for (const json::object* c : containers_of(pod)) {
    const std::string name = string_of(c, "name");
    names.push_back(name);
    json::object cs{{"name", name},
                    {"image", string_of(c, "image")},
                    {"imageID", ""},
                    {"restartCount", a.restart_count},
                    {"lastState", json::object{}}};
    switch (a.state) {
      case Attempt::State::Waiting:
        cs["state"] = json::object{{"waiting", json::object{{"reason", "ContainerCreating"}}}};
        cs["ready"] = false;
        cs["started"] = false;
        break;
      case Attempt::State::Running:
        cs["state"] = json::object{{"running", json::object{{"startedAt", time_text(a.started)}}}};
        cs["ready"] = true;
        cs["started"] = true;
        cs["containerID"] = container_id(pod, name, a.restart_count);
        break;
      case Attempt::State::Terminated:
        cs["state"] =
            json::object{{"terminated", json::object{{"exitCode", a.exit_code},
                                                     {"reason", terminated_reason(a.exit_code)},
                                                     {"startedAt", time_text(a.started)},
                                                     {"finishedAt", time_text(a.finished)},
                                                     {"containerID", container_id(pod, name, a.restart_count)}}}};
        cs["ready"] = false;
        cs["started"] = false;
        cs["containerID"] = container_id(pod, name, a.restart_count);
        break;
    }
    if (a.last)
      cs["lastState"] =
          json::object{{"terminated", json::object{{"exitCode", a.exit_code},
                                                   {"reason", terminated_reason(a.exit_code)},
                                                   {"startedAt", time_text(a.last->first)},
                                                   {"finishedAt", time_text(a.last->second)},
                                                   {"containerID", container_id(pod, name, a.restart_count - 1)}}}};
    statuses.push_back(std::move(cs));
  }
  status["containerStatuses"] = std::move(statuses);
  // Ephemeral containers (kubectl debug): started once the pod runs, never ready, never restarted;
  // a simulated one runs until its pod stops.
  if (!containers_of(pod, "ephemeralContainers").empty()) {
    json::array eph;
    for (const json::object* c : containers_of(pod, "ephemeralContainers")) {
      const std::string name = string_of(c, "name");
      std::optional<Clock::time_point> since;  // when it was first reported running
      if (const json::array* old = util::array_at(pod, {"status"}, "ephemeralContainerStatuses"))
        for (const auto& o : *old)
          if (o.is_object() && string_of(&o.as_object(), "name") == name)
            since = time_at(object_at(o.as_object(), {"state", "running"}), "startedAt");
      json::object cs{{"name", name},      {"image", string_of(c, "image")}, {"imageID", ""},
                      {"restartCount", 0}, {"lastState", json::object{}},    {"ready", false}};
      if (a.state == Attempt::State::Running) {
        cs["state"] = json::object{{"running", json::object{{"startedAt", time_text(since.value_or(now))}}}};
        cs["started"] = true;
        cs["containerID"] = container_id(pod, name, 0);
      } else {
        cs["state"] = json::object{{"waiting", json::object{{"reason", "PodInitializing"}}}};
        cs["started"] = false;
      }
      eph.push_back(std::move(cs));
    }
    status["ephemeralContainerStatuses"] = std::move(eph);
  }
  if (!containers_of(pod, "initContainers").empty()) {
    json::array init;
    for (const json::object* c : containers_of(pod, "initContainers"))
      init.push_back(
          json::object{{"name", string_of(c, "name")},
                       {"image", string_of(c, "image")},
                       {"imageID", ""},
                       {"restartCount", 0},
                       {"ready", true},
                       {"lastState", json::object{}},
                       {"state", json::object{{"terminated", json::object{{"exitCode", 0},
                                                                          {"reason", "Completed"},
                                                                          {"startedAt", time_text(bound)},
                                                                          {"finishedAt", time_text(start)}}}}}});
    status["initContainerStatuses"] = std::move(init);
  }

  // Phase and conditions (pkg/kubelet/status/generate.go): Ready/ContainersReady False with reason
  // ContainersNotReady while a container is not ready, PodCompleted once the pod has finished.
  std::string phase = "Pending";
  if (a.state == Attempt::State::Running) phase = "Running";
  if (a.state == Attempt::State::Terminated) phase = a.exit_code == 0 ? "Succeeded" : "Failed";
  status["phase"] = phase;
  const Clock::time_point changed = a.state == Attempt::State::Waiting   ? bound
                                    : a.state == Attempt::State::Running ? a.started
                                                                         : a.finished;
  auto cond = [&](const char* type, bool ok, const std::string& reason = {}, const std::string& message = {},
                  Clock::time_point at = {}) {
    return pod_condition(type, ok, reason, message, at == Clock::time_point{} ? changed : at);
  };
  json::array conditions;
  if (const json::value* v = old_status ? old_status->if_contains("conditions") : nullptr; v && v->is_array())
    conditions = v->as_array();
  const bool ready = a.state == Attempt::State::Running;
  std::string not_ready_reason, not_ready_message;
  if (!ready) {
    not_ready_reason = a.state == Attempt::State::Terminated ? "PodCompleted" : "ContainersNotReady";
    if (a.state == Attempt::State::Waiting)
      not_ready_message = fmt::format("containers with unready status: {}", go_slice(names));
  }
  util::set_condition(conditions, cond("PodReadyToStartContainers", a.state != Attempt::State::Waiting, {}, {},
                                       a.state == Attempt::State::Waiting ? bound : start));
  util::set_condition(conditions, cond("Initialized", true, {}, {}, bound));
  util::set_condition(conditions, cond("Ready", ready, not_ready_reason, not_ready_message));
  util::set_condition(conditions, cond("ContainersReady", ready, not_ready_reason, not_ready_message));
  order_pod_conditions(conditions);
  status["conditions"] = std::move(conditions);
  if (old_status && util::json_equal(*old_status, status)) return std::nullopt;
  return status;
}

// The status a pod stopped for its deletion ends with (kubelet_pods.go getPhase with podIsTerminal,
// convertToAPIContainerStatuses): a running container terminated with the exit code the runtime
// reports for it — `exits` (a local run's processes: what each really exited with), else 143, a
// simulated container killed by its SIGTERM — and the reason terminated_reason gives; one never
// started ContainerStatusUnknown (137); the phase Succeeded only if every container exited 0, else
// Failed; not ready (PodCompleted). A pod already finished is left alone. A running init container
// (a local run's) is reported terminated with its exit too.
bool terminated_status(json::object& pod, Clock::time_point now, const LocalRuntime::ExitCodes& exits) {
  json::object& status = util::ensure_object(pod, "status");
  const std::string phase = string_of(&status, "phase");
  if (phase == "Succeeded" || phase == "Failed") return false;
  // A container the last status showed running, stopped: terminated with the runtime's exit code.
  auto stopped = [&](json::object& co, const json::object& running) {
    const auto e = exits.find(string_of(&co, "name"));
    const int code = e == exits.end() ? 143 : e->second;
    json::object terminated{{"exitCode", code},
                            {"reason", terminated_reason(code)},
                            {"startedAt", string_of(&running, "startedAt")},
                            {"finishedAt", time_text(now)}};
    if (co.contains("containerID")) terminated["containerID"] = co.at("containerID");
    return terminated;
  };
  if (json::value* cs = status.if_contains("initContainerStatuses"); cs && cs->is_array())
    for (auto& c : cs->as_array())
      if (c.is_object())
        if (const json::object* r = object_at(c.as_object(), {"state", "running"})) {
          json::object& co = c.as_object();
          co["state"] = json::object{{"terminated", stopped(co, *r)}};
          co["ready"] = false;
          co["started"] = false;
        }
  bool all_zero = true;
  if (json::value* cs = status.if_contains("containerStatuses"); cs && cs->is_array())
    for (auto& c : cs->as_array()) {
      if (!c.is_object()) continue;
      json::object& co = c.as_object();
      const json::object* state = object_at(co, {"state"});
      json::object terminated;
      if (const json::object* t = state ? object_at(*state, {"terminated"}) : nullptr) {
        terminated = *t;
      } else if (const json::object* r = state ? object_at(*state, {"running"}) : nullptr) {
        terminated = stopped(co, *r);
      } else {
        terminated = json::object{{"exitCode", 137},
                                  {"reason", "ContainerStatusUnknown"},
                                  {"message", "The container could not be located when the pod was terminated"},
                                  {"startedAt", nullptr},
                                  {"finishedAt", nullptr}};
      }
      all_zero = all_zero && util::int_of(&terminated, "exitCode", 1) == 0;
      co["state"] = json::object{{"terminated", std::move(terminated)}};
      co["ready"] = false;
      co["started"] = false;
    }
  status["phase"] = all_zero && status.contains("containerStatuses") ? "Succeeded" : "Failed";
  json::array conditions;
  if (const json::value* v = status.if_contains("conditions"); v && v->is_array()) conditions = v->as_array();
  for (const char* type : {"Ready", "ContainersReady"})
    util::set_condition(conditions, pod_condition(type, false, "PodCompleted", "", now));
  order_pod_conditions(conditions);
  status["conditions"] = std::move(conditions);
  return true;
}

std::optional<Clock::time_point> next_transition(const json::object& pod, const KubeletOptions& options) {
  const json::object* status = object_at(pod, {"status"});
  const std::string phase = string_of(status, "phase");
  if (phase == "Succeeded" || phase == "Failed") return std::nullopt;
  const auto bound = time_at(status, "startTime");
  if (!bound) return Clock::time_point{};  // never seen by the kubelet: due at once
  PodSimulation sim;
  try {
    sim = simulation_of(pod, options);
  } catch (const StatusError&) {
    return std::nullopt;
  }
  const Clock::time_point start = *bound + sim.startup;
  if (phase != "Running") return start;
  if (!sim.run_time) return std::nullopt;
  const json::array* cs = util::array_at(pod, {"status"}, "containerStatuses");
  if (!cs || cs->empty() || !(*cs)[0].is_object()) return start;
  const auto started = time_at(object_at((*cs)[0].as_object(), {"state", "running"}), "startedAt");
  if (!started) return start;
  const bool restarting = restarts_after(restart_policy(pod), sim.exit_code);
  return *started + (restarting ? std::max(*sim.run_time, Clock::duration(1s)) : *sim.run_time);
}

std::string format_log_line(const LogLine& line, bool timestamps) {
  if (!timestamps) return line.text + "\n";
  // RFC 3339 with nanoseconds, as the kubelet's --timestamps output.
  const auto secs = std::chrono::floor<std::chrono::seconds>(line.time);
  const auto nanos = (line.time - secs).count();
  std::string t = to_rfc3339(line.time);
  t.insert(t.size() - 1, fmt::format(".{:09}", nanos));
  return t + " " + line.text + "\n";
}

std::vector<LogLine> container_log_lines(const json::object& pod, const LogOptions& options, Clock::time_point now,
                                         const KubeletOptions& kubelet_options) {
  const std::string pod_name = util::name_of(pod);
  std::vector<std::string> names;
  for (const json::object* c : containers_of(pod)) names.push_back(string_of(c, "name"));
  std::vector<std::string> init_names;
  for (const json::object* c : containers_of(pod, "initContainers")) init_names.push_back(string_of(c, "name"));
  std::string container = options.container;
  // pkg/registry/core/pod/strategy.go LogLocation.
  if (container.empty()) {
    if (names.size() == 1) {
      container = names[0];
    } else {
      std::string msg =
          fmt::format("a container name must be specified for pod {}, choose one of: {}", pod_name, go_slice(names));
      if (!init_names.empty()) msg += " or one of the init containers: " + go_slice(init_names);
      throw StatusError::bad_request(msg);
    }
  }
  const json::object* spec_container = nullptr;
  for (const json::object* c : containers_of(pod))
    if (string_of(c, "name") == container) spec_container = c;
  if (!spec_container) {
    // (podHasContainerWithName: init and ephemeral containers are the pod's too; a simulated one
    // prints nothing.)
    if (std::find(init_names.begin(), init_names.end(), container) != init_names.end()) return {};
    for (const json::object* c : containers_of(pod, "ephemeralContainers"))
      if (string_of(c, "name") == container) return {};
    throw StatusError::bad_request(fmt::format("container {} is not valid for pod {}", container, pod_name));
  }
  if (string_of(object_at(pod, {"spec"}), "nodeName").empty()) return {};  // not scheduled: no logs yet

  const json::object* cs = nullptr;
  if (const json::array* all = util::array_at(pod, {"status"}, "containerStatuses"))
    for (const auto& s : *all)
      if (s.is_object() && string_of(&s.as_object(), "name") == container) cs = &s.as_object();
  // pkg/kubelet/kubelet_pods.go validateContainerLogStatus.
  const json::object* window = nullptr;
  bool terminated = false;
  if (options.previous) {
    window = cs ? object_at(*cs, {"lastState", "terminated"}) : nullptr;
    if (!window)
      throw StatusError::bad_request(
          fmt::format("previous terminated container \"{}\" in pod \"{}\" not found", container, pod_name));
    terminated = true;
  } else {
    if (cs) {
      if ((window = object_at(*cs, {"state", "running"})))
        terminated = false;
      else if ((window = object_at(*cs, {"state", "terminated"})))
        terminated = true;
    }
    if (!window) {
      std::string reason = cs ? string_of(object_at(*cs, {"state", "waiting"}), "reason") : "";
      if (reason.empty()) reason = "ContainerCreating";
      throw StatusError::bad_request(
          fmt::format("container \"{}\" in pod \"{}\" is waiting to start: {}", container, pod_name, reason));
    }
  }
  const auto started = time_at(window, "startedAt");
  if (!started) return {};
  const Clock::time_point end = terminated ? time_at(window, "finishedAt").value_or(now) : now;
  const PodSimulation sim = simulation_of(pod, kubelet_options);
  std::vector<LogLine> lines;
  lines.push_back({*started, "+ " + shell_join(*spec_container)});
  lines.push_back({*started, fmt::format("gpupool-sim: container {} of pod {} started on node {}", container, pod_name,
                                         string_of(object_at(pod, {"spec"}), "nodeName"))});
  const Clock::duration step = std::max(kubelet_options.log_interval, Clock::duration(1ms));
  for (Clock::time_point t = *started + step; t < end || (!terminated && t == end); t += step) {
    const auto elapsed = t - *started;
    lines.push_back({t, sim.run_time
                            ? fmt::format("gpupool-sim: step {}: {} elapsed of {}", (elapsed / step), human(elapsed),
                                          human(*sim.run_time))
                            : fmt::format("gpupool-sim: step {}: {} elapsed", (elapsed / step), human(elapsed))});
  }
  if (terminated) {
    const auto code = util::int_of(window, "exitCode", 0);
    lines.push_back({end, fmt::format("gpupool-sim: exiting with code {}", code)});
  }
  if (options.since_seconds) {
    const Clock::time_point since = now - std::chrono::seconds(*options.since_seconds);
    lines.erase(lines.begin(),
                std::find_if(lines.begin(), lines.end(), [&](const LogLine& l) { return l.time >= since; }));
  }
  if (options.tail_lines && *options.tail_lines >= 0 && static_cast<std::size_t>(*options.tail_lines) < lines.size())
    lines.erase(lines.begin(), lines.end() - *options.tail_lines);
  return lines;
}

std::string pod_log(const json::object& pod, const LogOptions& options, Clock::time_point now,
                    const KubeletOptions& kubelet_options) {
  std::string out;
  for (const auto& l : container_log_lines(pod, options, now, kubelet_options))
    out += format_log_line(l, options.timestamps);
  if (options.limit_bytes && *options.limit_bytes >= 0 && out.size() > static_cast<std::size_t>(*options.limit_bytes))
    out.resize(static_cast<std::size_t>(*options.limit_bytes));
  return out;
}

// ---- Kubelet ---------------------------------------------------------------------------------

struct Kubelet::Follower {
  std::string ns, pod;
  LogOptions options;
  std::function<void(const std::string&)> on_line;
  std::function<void()> on_end;
  std::size_t emitted = 0;  // lines of the followed attempt already sent
  std::string attempt;      // startedAt of the followed attempt
};

Kubelet::Kubelet(Store& store, const Clock& clock, KubeletOptions options)
    : store_(store), clock_(clock), options_(options) {
  subscription_ = store_.subscribe([this](const WatchEvent& e) {
    WritingAs as("kubelet");
    on_event(e);
  });
  const auto& pods = store_.type("", "pods");
  for (const auto& p : store_.list(pods, "").items) schedule(*p);
}

Kubelet::~Kubelet() {
  store_.unsubscribe(subscription_);
  stop_local();
}

void Kubelet::stop_local() {
  if (local_) local_->shutdown();  // kills and reaps every local process while the kubelet is whole
}

void Kubelet::run_locally(const std::string& root, bool own_root, const std::string& container_runtime) {
  local_ = std::make_unique<LocalRuntime>(
      store_, clock_, root, own_root,
      [this](const std::string& key) {
        {
          std::lock_guard lk(mu_);
          local_due_[key] = Clock::time_point{};  // a process ended: the pod's status is due at once
          if (auto it = due_of_.find(key); it != due_of_.end()) due_.erase({it->second, key});
          due_of_[key] = Clock::time_point{};
          due_.insert({Clock::time_point{}, key});
        }
        sync();
      },
      container_runtime);
}

namespace {
// A node marked gpupool.io/simulate-kubelet: "stopped": registered, but its kubelet is down (its
// pods are neither run nor finished, as on a cluster node without a kubelet process).
bool kubelet_stopped(const json::object* node) {
  return node && util::annotation(*node, "gpupool.io/simulate-kubelet").value_or("") == "stopped";
}
// Whether the node a pod is bound to has a kubelet here: it exists and is not stopped.
bool kubelet_runs(const Store& store, const std::string& node) {
  if (node.empty()) return false;
  const auto n = store.find(store.type("", "nodes"), "", node);
  return n && !kubelet_stopped(n.get());
}
}  // namespace

void Kubelet::schedule(const json::object& pod) {
  const std::string key = util::namespace_of(pod) + "/" + util::name_of(pod);
  std::optional<Clock::time_point> when;
  // A node's kubelet runs the pods bound to it: none runs a pod bound to a node that is not there
  // (it stays Pending, as on a cluster, until the node registers: on_event).
  const std::string node = string_of(object_at(pod, {"spec"}), "nodeName");
  const bool node_exists = kubelet_runs(store_, node);
  std::lock_guard lk(mu_);
  if (!node_exists) {
  } else if (!local_) {
    when = next_transition(pod, options_);
    // An ephemeral container added (kubectl debug) is reported at the next sync.
    const auto eph = containers_of(pod, "ephemeralContainers");
    const json::array* reported = util::array_at(pod, {"status"}, "ephemeralContainerStatuses");
    if (!eph.empty() && (!reported || reported->size() != eph.size())) when = Clock::time_point{};
  } else if (const std::string phase = string_of(object_at(pod, {"status"}), "phase");
             phase != "Succeeded" && phase != "Failed") {
    auto it = local_due_.find(key);
    when = it == local_due_.end() ? Clock::time_point{} : it->second;  // never seen: due at once
  }
  if (auto it = due_of_.find(key); it != due_of_.end()) {
    due_.erase({it->second, key});
    due_of_.erase(it);
  }
  if (when) {
    due_.insert({*when, key});
    due_of_[key] = *when;
  }
}

// A pod marked for graceful deletion (deletionTimestamp, deletionGracePeriodSeconds): the kubelet
// stops its containers — a local run's processes get SIGTERM, then SIGKILL once the grace period
// is over — and then deletes it with a grace of 0 (pkg/kubelet/status/status_manager.go
// syncPod: canBeDeleted, then Delete with GracePeriodSeconds 0 and the pod's uid as precondition).
// Simulated containers stop at once.
void Kubelet::terminate(const json::object& pod) {
  const std::string ns = util::namespace_of(pod), name = util::name_of(pod), uid = util::uid_of(pod);
  const std::string key = ns + "/" + name;
  // Only a node's own kubelet finishes the deletion: a pod bound to a node that is not there stays
  // Terminating (kube-controller-manager's pod GC force-deletes such orphans after 40 s; not here).
  if (!kubelet_runs(store_, string_of(object_at(pod, {"spec"}), "nodeName"))) return;
  {
    std::lock_guard lk(mu_);
    if (!terminating_.insert(key).second) return;  // already stopping
    if (auto it = due_of_.find(key); it != due_of_.end()) {
      due_.erase({it->second, key});
      due_of_.erase(it);
    }
    if (local_) local_due_.erase(key);
  }
  // `exits`: what a local run's stopped processes exited with (LocalRuntime::forget).
  auto remove = [this, ns, name, uid, key](const LocalRuntime::ExitCodes& exits) {
    {
      std::lock_guard lk(mu_);
      terminating_.erase(key);
    }
    // status_manager syncPod: the terminal status first (a Job's tracking finalizer may hold the
    // pod, and its controller counts it by its phase), then the delete.
    const ResourceType& pods = store_.type("", "pods");
    try {
      store_.mutate(
          pods, ns, name,
          [&](json::object& p) {
            if (util::uid_of(p) != uid) throw StatusError::not_found(pods, name);
            terminated_status(p, clock_.now(), exits);
          },
          {}, "status");
    } catch (const StatusError& e) {
      if (e.code() != 404 && e.code() != 409) throw;
    }
    DeleteOptions o;
    o.grace_period = 0;
    o.precondition_uid = uid;
    try {
      store_.remove(pods, ns, name, o);
    } catch (const StatusError& e) {
      if (e.code() != 404 && e.code() != 409) throw;  // gone already, or another pod of that name
    }
  };
  if (!local_) return remove({});
  const auto* g = util::object_at(pod, {"metadata"})->if_contains("deletionGracePeriodSeconds");
  const std::int64_t grace = g && g->is_int64() ? std::max<std::int64_t>(g->as_int64(), 0) : 30;
  local_->forget(key, std::chrono::seconds(grace), [remove](const LocalRuntime::ExitCodes& exits) {
    try {
      remove(exits);
    } catch (const std::exception&) {
      // The server is going away: nothing left to report to.
    }
  });
}

void Kubelet::on_event(const WatchEvent& e) {
  if (e.type_info && e.type_info->group.empty() && e.type_info->resource == "nodes" && e.object &&
      (e.type == EventType::Added || (e.type == EventType::Modified && kubelet_stopped(e.old_object.get()))) &&
      !kubelet_stopped(e.object.get())) {
    // A node registering (or its kubelet started again): it takes up the pods already bound to it.
    ListOptions o;
    o.fields = FieldSelector::parse("spec.nodeName=" + util::name_of(*e.object));
    for (const auto& p : store_.list(store_.type("", "pods"), "", o).items) {
      if (object_at(*p, {"metadata"})->contains("deletionTimestamp"))
        terminate(*p);
      else
        schedule(*p);
    }
    return;
  }
  if (!e.type_info || e.type_info->resource != "pods" || !e.type_info->group.empty() || !e.object) return;
  if (e.type == EventType::Deleted) {
    const std::string key = util::namespace_of(*e.object) + "/" + util::name_of(*e.object);
    std::lock_guard lk(mu_);
    if (auto it = due_of_.find(key); it != due_of_.end()) {
      due_.erase({it->second, key});
      due_of_.erase(it);
    }
    pod_ips_.erase(key);
    if (local_) {
      local_due_.erase(key);
      // Removed without a graceful deletion first (a grace of 0, a forced delete): its processes
      // get the pod's terminationGracePeriodSeconds (default 30) between SIGTERM and SIGKILL.
      const auto grace = util::int_of(object_at(*e.object, {"spec"}), "terminationGracePeriodSeconds", 30);
      local_->forget(key, std::chrono::seconds(std::max<std::int64_t>(grace, 0)));
    }
    return;
  }
  if (const json::object* md = object_at(*e.object, {"metadata"});
      md && md->contains("deletionTimestamp") && !string_of(object_at(*e.object, {"spec"}), "nodeName").empty()) {
    terminate(*e.object);
    return;
  }
  schedule(*e.object);
  // A freshly bound pod is reported at once (ContainerCreating), as a kubelet does on admission.
  std::optional<Clock::time_point> when;
  {
    std::lock_guard lk(mu_);
    const std::string key = util::namespace_of(*e.object) + "/" + util::name_of(*e.object);
    if (auto it = due_of_.find(key); it != due_of_.end()) when = it->second;
  }
  if (when && *when <= clock_.now()) sync();
}

std::string Kubelet::pod_ip_for(const std::string& node, const std::string& key) {
  std::lock_guard lk(mu_);
  if (auto it = pod_ips_.find(key); it != pod_ips_.end()) return it->second;
  auto [it, added] = node_index_.try_emplace(node, static_cast<std::uint32_t>(node_index_.size()));
  (void)added;
  const std::uint32_t index = it->second;  // node i owns 10.(244 + i/256).(i%256).0/24, as a podCIDR
  std::uint32_t& next = next_ip_[node];
  const std::uint32_t host = 2 + (next++ % 252);
  std::string ip = fmt::format("10.{}.{}.{}", 244 + index / 256 % 12, index % 256, host);
  pod_ips_[key] = ip;
  return ip;
}

std::size_t Kubelet::sync() {
  WritingAs as("kubelet");
  const auto& pods = store_.type("", "pods");
  const auto& nodes = store_.type("", "nodes");
  std::size_t writes = 0;
  for (int round = 0; round < 1000000; ++round) {
    std::string key;
    {
      std::lock_guard lk(mu_);
      if (due_.empty() || due_.begin()->first > clock_.now()) break;
      key = due_.begin()->second;
      due_of_.erase(key);
      due_.erase(due_.begin());
    }
    const auto slash = key.find('/');
    const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto current = store_.find(pods, ns, name);
      if (!current) break;
      const std::string node = string_of(object_at(*current, {"spec"}), "nodeName");
      if (node.empty()) break;
      if (object_at(*current, {"metadata"})->contains("deletionTimestamp")) break;  // being stopped: terminate()
      NodeAddress where{node, "", ""};
      if (auto n = store_.find(nodes, "", node))
        if (const json::array* addrs = util::array_at(*n, {"status"}, "addresses"))
          for (const auto& a : *addrs)
            if (a.is_object() && string_of(&a.as_object(), "type") == "InternalIP")
              where.host_ip = string_of(&a.as_object(), "address");
      const json::value* host_network = object_at(*current, {"spec"})->if_contains("hostNetwork");
      where.pod_ip =
          host_network && host_network->is_bool() && host_network->as_bool() ? where.host_ip : pod_ip_for(node, key);
      std::optional<json::object> status;
      if (local_) {
        std::optional<Clock::time_point> next;
        status = local_->status(*current, where, clock_.now(), next);
        {
          std::lock_guard lk(mu_);
          local_due_[key] = next;
        }
        // The local ports its containerPorts got, in an annotation (local_runtime.hpp), before the
        // status that reports the containers running.
        if (const std::string ports = local_->ports_annotation(key);
            !ports.empty() && util::annotation(*current, kLocalPortsAnnotation).value_or("") != ports) {
          json::object next_obj = *current;
          auto& md = next_obj["metadata"].as_object();
          if (!md["annotations"].is_object()) md["annotations"] = json::object{};
          md["annotations"].as_object()[kLocalPortsAnnotation] = ports;
          try {
            store_.update(pods, ns, std::move(next_obj));
          } catch (const StatusError& e) {
            if (e.code() == 404) break;
            if (e.code() != 409) throw;
          }
          continue;  // the status goes on top of the annotated pod
        }
      } else {
        try {
          status = kubelet_status(*current, where, clock_.now(), options_);
        } catch (const StatusError&) {
          break;  // malformed simulation annotations: the pod stays as it is
        }
      }
      if (!status) {
        schedule(*current);
        break;
      }
      json::object next = *current;
      next["status"] = std::move(*status);
      try {
        store_.update(pods, ns, std::move(next), {}, "status");
        ++writes;
        break;
      } catch (const StatusError& e) {
        if (e.code() == 404) break;
        if (e.code() != 409) throw;
      }
    }
  }
  feed_followers();
  return writes;
}

std::optional<Clock::time_point> Kubelet::next_due() const {
  std::lock_guard lk(mu_);
  if (due_.empty()) return std::nullopt;
  return due_.begin()->first;
}

std::string Kubelet::logs(const std::string& ns, const std::string& pod, const LogOptions& options) const {
  const auto& pods = store_.type("", "pods");
  auto current = store_.find(pods, ns, pod);
  if (!current) throw StatusError::not_found(pods, pod);
  if (!local_) return pod_log(*current, options, clock_.now(), options_);
  std::string out;
  for (const auto& l : lines_of(*current, options)) out += format_log_line(l, options.timestamps);
  if (options.limit_bytes && *options.limit_bytes >= 0 && out.size() > static_cast<std::size_t>(*options.limit_bytes))
    out.resize(static_cast<std::size_t>(*options.limit_bytes));
  return out;
}

std::vector<LogLine> Kubelet::lines_of(const json::object& pod, const LogOptions& options) const {
  if (!local_) return container_log_lines(pod, options, clock_.now(), options_);
  // The API server's and kubelet's errors (unknown container, waiting to start, no previous
  // attempt) as in Simulate mode; then the lines the process printed, stamped with its start.
  LogOptions all = options;
  all.tail_lines.reset();
  all.since_seconds.reset();
  const auto simulated = container_log_lines(pod, all, clock_.now(), options_);
  std::string container = options.container;
  if (container.empty() && containers_of(pod).size() == 1) container = string_of(containers_of(pod)[0], "name");
  auto printed = local_->log_lines(pod, container, options.previous);
  if (!printed) return simulated;
  const Clock::time_point at = simulated.empty() ? clock_.now() : simulated.front().time;
  std::vector<LogLine> lines;
  for (auto& text : *printed) lines.push_back({at, std::move(text)});
  if (options.tail_lines && *options.tail_lines >= 0 && static_cast<std::size_t>(*options.tail_lines) < lines.size())
    lines.erase(lines.begin(), lines.end() - *options.tail_lines);
  return lines;
}

Kubelet::FollowId Kubelet::follow(const std::string& ns, const std::string& pod, const LogOptions& options,
                                  std::function<void(const std::string&)> on_line, std::function<void()> on_end) {
  auto f = std::make_shared<Follower>();
  f->ns = ns;
  f->pod = pod;
  f->options = options;
  f->options.tail_lines.reset();
  f->options.since_seconds.reset();
  f->options.limit_bytes.reset();
  f->on_line = std::move(on_line);
  f->on_end = std::move(on_end);
  // Lines printed so far are the caller's (from logs()); follow from here.
  const auto& pods = store_.type("", "pods");
  if (auto current = store_.find(pods, ns, pod)) {
    try {
      f->emitted = lines_of(*current, f->options).size();
    } catch (const StatusError&) {
      f->emitted = 0;  // not started yet: every line is new
    }
  }
  std::lock_guard lk(mu_);
  const FollowId id = next_follow_++;
  followers_[id] = f;
  return id;
}

void Kubelet::unfollow(FollowId id) {
  std::lock_guard lk(mu_);
  followers_.erase(id);
}

void Kubelet::feed_followers() {
  std::vector<std::pair<FollowId, std::shared_ptr<Follower>>> all;
  {
    std::lock_guard lk(mu_);
    all.assign(followers_.begin(), followers_.end());
  }
  if (all.empty()) return;
  const auto& pods = store_.type("", "pods");
  std::vector<FollowId> finished;
  for (auto& [id, f] : all) {
    auto current = store_.find(pods, f->ns, f->pod);
    if (!current) {
      finished.push_back(id);
      continue;
    }
    std::vector<LogLine> lines;
    try {
      lines = lines_of(*current, f->options);
    } catch (const StatusError&) {
      continue;  // still waiting to start
    }
    const std::string attempt = lines.empty() ? "" : to_rfc3339(lines.front().time);
    if (attempt != f->attempt && !f->attempt.empty()) f->emitted = 0;  // a restart: a new log stream
    f->attempt = attempt;
    for (std::size_t i = f->emitted; i < lines.size(); ++i)
      f->on_line(format_log_line(lines[i], f->options.timestamps));
    f->emitted = std::max(f->emitted, lines.size());
    const std::string phase = string_of(object_at(*current, {"status"}), "phase");
    if (phase == "Succeeded" || phase == "Failed") finished.push_back(id);
  }
  for (FollowId id : finished) {
    std::shared_ptr<Follower> f;
    {
      std::lock_guard lk(mu_);
      auto it = followers_.find(id);
      if (it == followers_.end()) continue;
      f = it->second;
      followers_.erase(it);
    }
    if (f->on_end) f->on_end();
  }
}

}  // namespace gpupool::embedded
