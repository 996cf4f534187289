#include "embedded/local_runtime.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"
#include "gpupool/error.hpp"
#include "gpupool/time.hpp"

extern char** environ;

namespace gpupool::embedded {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using util::object_at;
using util::string_of;

struct LocalRuntime::Container {
  std::string name;
  bool init = false;
  pid_t pid = -1;
  int attempt = -1;  // restartCount of the current attempt; -1: never started
  bool running = false, finished = false;
  int exit_code = 0;
  std::string reason, message;
  Clock::time_point started{}, finished_at{};
  std::optional<json::object> last;  // lastState.terminated
  std::optional<Clock::time_point> restart_at;
  std::vector<std::string> env;  // what the current attempt runs with
  std::string dir;
};

struct LocalRuntime::Pod {
  std::string key, uid, dir;
  std::vector<Container> inits, mains;
  bool lost = false;       // ran under a gpupool process that has gone: its processes are gone too
  bool announced = false;  // the LocalProcess event was recorded
  NodeAddress where;
};

namespace {

std::string var_name(const std::string& kv) { return kv.substr(0, kv.find('=')); }

std::vector<std::string> string_list(const json::object& c, std::string_view key) {
  std::vector<std::string> out;
  if (const json::value* v = c.if_contains(key); v && v->is_array())
    for (const auto& s : v->as_array())
      if (s.is_string()) out.emplace_back(s.as_string());
  return out;
}

std::string terminated_reason(int exit_code) { return exit_code == 0 ? "Completed" : "Error"; }

// The kubelet's crash-loop backoff (pkg/kubelet/kuberuntime: 10s initial, doubling, 5m cap).
Clock::duration backoff(int restarts) {
  Clock::duration d = 10s;
  for (int i = 0; i < restarts && d < 300s; ++i) d *= 2;
  return std::min<Clock::duration>(d, 300s);
}

std::string log_path(const std::string& dir, const std::string& container, int attempt) {
  return fmt::format("{}/logs/{}.{}.log", dir, container, attempt);
}

// Forks argv with stdout/stderr to `out_fd` (or the given descriptors); the exec error, if any,
// comes back through a close-on-exec pipe. Everything the child touches is prepared before fork.
}  // namespace

pid_t spawn(const std::vector<std::string>& argv, const std::string& dir, const std::vector<std::string>& env,
            int in_fd, int out_fd, int err_fd, std::string& error) {
  if (argv.empty()) {
    error = "no command";
    return -1;
  }
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    error = std::strerror(errno);
    return -1;
  }
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(137);  // the parent died before the line above
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(in_fd >= 0 ? in_fd : devnull, 0);
    ::dup2(out_fd >= 0 ? out_fd : devnull, 1);
    ::dup2(err_fd >= 0 ? err_fd : devnull, 2);
    int e = 0;
    if (::chdir(dir.c_str()) != 0)
      e = errno;
    else {
      ::execvpe(args[0], args.data(), envp.data());
      e = errno;
    }
    (void)!::write(report[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(report[1]);
  if (devnull >= 0) ::close(devnull);
  if (pid < 0) {
    error = std::strerror(errno);
    ::close(report[0]);
    return -1;
  }
  ::setpgid(pid, pid);  // also from here, so kill(-pid) works at once
  int e = 0;
  ssize_t n;
  while ((n = ::read(report[0], &e, sizeof e)) < 0 && errno == EINTR) {}
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    // The runtime's wording for a missing executable (runc: exec: "x": executable file not found in $PATH).
    error = e == ENOENT ? fmt::format("exec: \"{}\": executable file not found in $PATH", argv[0])
                        : fmt::format("exec: \"{}\": {}", argv[0], std::strerror(e));
    return -1;
  }
  return pid;
}

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

std::optional<std::string> downward_field(const json::object& pod, const NodeAddress& where, const std::string& path) {
  const json::object* md = object_at(pod, {"metadata"});
  const json::object* spec = object_at(pod, {"spec"});
  if (path == "metadata.name") return string_of(md, "name");
  if (path == "metadata.namespace") return string_of(md, "namespace");
  if (path == "metadata.uid") return string_of(md, "uid");
  if (path == "spec.nodeName") return string_of(spec, "nodeName");
  if (path == "spec.serviceAccountName") return string_of(spec, "serviceAccountName");
  if (path == "status.podIP") return where.pod_ip;
  if (path == "status.hostIP") return where.host_ip;
  for (const char* map : {"labels", "annotations"}) {
    const std::string prefix = fmt::format("metadata.{}['", map);
    if (path.rfind(prefix, 0) == 0 && path.size() > prefix.size() + 2 && path.substr(path.size() - 2) == "']")
      return string_of(object_at(pod, {"metadata", map}), path.substr(prefix.size(), path.size() - prefix.size() - 2));
  }
  return std::nullopt;
}

// third_party/forked/golang/expansion/expand.go: $(NAME) -> the value when NAME is defined, $$ -> $.
std::string expand_env_refs(const std::string& in, const std::vector<std::string>& env) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '$' || i + 1 >= in.size()) {
      out += in[i];
      continue;
    }
    if (in[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    const std::size_t close = in[i + 1] == '(' ? in.find(')', i + 2) : std::string::npos;
    if (close == std::string::npos) {
      out += in[i];
      continue;
    }
    const std::string name = in.substr(i + 2, close - i - 2);
    std::optional<std::string> value;
    for (const auto& kv : env)
      if (var_name(kv) == name) value = kv.substr(name.size() + 1);  // the last definition wins
    out += value ? *value : in.substr(i, close - i + 1);
    i = close;
  }
  return out;
}

LocalRuntime::LocalRuntime(Store& store, const Clock& clock, std::string root, bool own_root,
                           std::function<void(const std::string&)> on_exit)
    : store_(store), clock_(clock), root_(std::move(root)), own_root_(own_root), on_exit_(std::move(on_exit)) {
  fs::create_directories(root_);
  spawner_ = std::thread([this] {
    std::unique_lock lk(spawn_mu_);
    for (;;) {
      spawn_cv_.wait(lk, [&] { return spawn_stop_ || !spawn_queue_.empty(); });
      if (spawn_queue_.empty()) return;
      auto jobs = std::move(spawn_queue_);
      spawn_queue_.clear();
      lk.unlock();
      for (auto& j : jobs) j();
      lk.lock();
    }
  });
}

pid_t LocalRuntime::spawn_on_spawner(const std::vector<std::string>& argv, const std::string& dir,
                                     const std::vector<std::string>& env, int out_fd, std::string& error) {
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  pid_t pid = -1;
  {
    std::lock_guard lk(spawn_mu_);
    if (spawn_stop_) {
      error = "the cluster is stopping";
      return -1;
    }
    spawn_queue_.push_back([&] {
      pid = spawn(argv, dir, env, -1, out_fd, out_fd, error);
      std::lock_guard l(done_mu);
      done = true;
      done_cv.notify_all();
    });
    spawn_cv_.notify_all();
  }
  std::unique_lock l(done_mu);
  done_cv.wait(l, [&] { return done; });
  return pid;
}

LocalRuntime::~LocalRuntime() { shutdown(); }

void LocalRuntime::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lk(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    for (auto& [key, p] : pods_)
      for (auto* list : {&p->inits, &p->mains})
        for (auto& c : *list)
          if (c.running && c.pid > 0) ::kill(-c.pid, SIGKILL);
    stop_cv_.notify_all();
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  {
    std::lock_guard lk(spawn_mu_);
    spawn_stop_ = true;
    spawn_cv_.notify_all();
  }
  if (spawner_.joinable()) spawner_.join();
  if (own_root_) {
    std::error_code ec;
    fs::remove_all(root_, ec);
    own_root_ = false;
  }
}

void LocalRuntime::reap(std::string key, pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  {
    std::lock_guard lk(mu_);
    auto it = pods_.find(key);
    if (it != pods_.end())
      for (auto* list : {&it->second->inits, &it->second->mains})
        for (auto& c : *list)
          if (c.pid == pid && c.running) {
            c.running = false;
            c.finished = true;
            c.exit_code = exit_code_of(status);
            c.reason = terminated_reason(c.exit_code);
            c.finished_at = clock_.now();
          }
    if (stopping_) return;
  }
  if (on_exit_) on_exit_(key);
}

void LocalRuntime::start(Pod& pod, Container& c, const json::object& podobj, const json::object& spec,
                         Clock::time_point now) {
  // Env: a minimal base (PATH and HOME of this process, HOSTNAME the pod's name, as a container
  // gets), then the container's env in order; fieldRefs resolved through the downward API.
  std::vector<std::string> env;
  if (const char* path = std::getenv("PATH")) env.push_back(std::string("PATH=") + path);
  if (const char* home = std::getenv("HOME")) env.push_back(std::string("HOME=") + home);
  env.push_back("HOSTNAME=" + util::name_of(podobj));
  if (const json::value* ev = spec.if_contains("env"); ev && ev->is_array())
    for (const auto& e : ev->as_array()) {
      if (!e.is_object()) continue;
      const std::string name = string_of(&e.as_object(), "name");
      std::optional<std::string> value;
      if (const json::value* v = e.as_object().if_contains("value"); v && v->is_string())
        value = expand_env_refs(std::string(v->as_string()), env);
      else if (const json::object* ref = object_at(e.as_object(), {"valueFrom", "fieldRef"}))
        value = downward_field(podobj, pod.where, string_of(ref, "fieldPath"));
      else if (!e.as_object().contains("valueFrom"))
        value = "";
      // secretKeyRef, configMapKeyRef, resourceFieldRef: not resolved in Local mode (left unset).
      if (value) env.push_back(name + "=" + *value);
    }
  std::vector<std::string> argv;
  for (const char* key : {"command", "args"})
    for (const auto& a : string_list(spec, key)) argv.push_back(expand_env_refs(a, env));
  std::string dir = pod.dir;
  if (const std::string wd = string_of(&spec, "workingDir"); !wd.empty() && fs::is_directory(wd)) dir = wd;
  c.env = env;
  c.dir = dir;
  ++c.attempt;
  fs::create_directories(pod.dir + "/logs");
  const std::string log = log_path(pod.dir, c.name, c.attempt);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  std::string error;
  const pid_t pid = argv.empty() ? -1 : spawn_on_spawner(argv, dir, env, fd, error);
  if (fd >= 0) ::close(fd);
  c.started = now;
  c.restart_at.reset();
  if (pid < 0) {
    // The runtime could not start it: as containerd reports it, StartError with exit code 128.
    c.running = false;
    c.finished = true;
    c.exit_code = 128;
    c.reason = "StartError";
    c.message = argv.empty() ? fmt::format(
                                   "gpupool local run: container {} has no command: the image's entrypoint "
                                   "is not known without running the image; set command",
                                   c.name)
                             : error;
    c.finished_at = now;
    return;
  }
  c.pid = pid;
  c.running = true;
  c.finished = false;
  c.message.clear();
  threads_.emplace_back([this, key = pod.key, pid] { reap(key, pid); });
}

std::optional<json::object> LocalRuntime::status(const json::object& pod, const NodeAddress& where,
                                                 Clock::time_point now, std::optional<Clock::time_point>& next_due) {
  const json::object* old_status = object_at(pod, {"status"});
  const std::string old_phase = string_of(old_status, "phase");
  if (old_phase == "Succeeded" || old_phase == "Failed") return std::nullopt;
  const std::string key = util::namespace_of(pod) + "/" + util::name_of(pod);
  const std::string uid = util::uid_of(pod);
  const std::string policy = restart_policy(pod);
  std::unique_lock lk(mu_);
  if (stopping_) return std::nullopt;
  auto& slot = pods_[key];
  bool first = false;
  if (!slot || slot->uid != uid) {
    first = true;
    slot = std::make_shared<Pod>();
    slot->key = key;
    slot->uid = uid;
    slot->dir = fmt::format("{}/{}/{}.{}", root_, util::namespace_of(pod), util::name_of(pod), uid);
    // Started under another gpupool process (a saved state): its processes died with it.
    slot->lost = time_at(old_status, "startTime").has_value() && old_phase == "Running";
    for (const json::object* c : containers_of(pod, "initContainers")) {
      slot->inits.emplace_back();
      slot->inits.back().name = string_of(c, "name");
      slot->inits.back().init = true;
    }
    for (const json::object* c : containers_of(pod)) {
      slot->mains.emplace_back();
      slot->mains.back().name = string_of(c, "name");
    }
    fs::create_directories(slot->dir);
  }
  Pod& p = *slot;
  p.where = where;
  auto spec_of = [&](const Container& c) -> json::object {
    for (const json::object* s : containers_of(pod, c.init ? "initContainers" : "containers"))
      if (string_of(s, "name") == c.name) return *s;
    return json::object{};
  };
  auto restart = [&](Container& c) {
    json::object last{{"exitCode", c.exit_code},
                      {"reason", c.reason},
                      {"startedAt", to_rfc3339(c.started)},
                      {"finishedAt", to_rfc3339(c.finished_at)},
                      {"containerID", container_id(pod, c.name, c.attempt)}};
    if (!c.message.empty()) last["message"] = c.message;
    if (!c.restart_at) c.restart_at = c.finished_at + backoff(c.attempt);
    if (now < *c.restart_at) {
      next_due = next_due ? std::min(*next_due, *c.restart_at) : *c.restart_at;
      return;
    }
    c.last = std::move(last);
    start(p, c, pod, spec_of(c), now);
  };
  std::vector<std::string> started_commands;
  auto start_new = [&](Container& c) {
    const json::object s = spec_of(c);
    started_commands.push_back(shell_join(s));
    start(p, c, pod, s, now);
  };
  // Init containers, one at a time (a failed one is retried unless restartPolicy is Never).
  bool inits_done = !p.lost, init_failed = false;
  if (!p.lost)
    for (auto& c : p.inits) {
      if (!c.running && !c.finished)
        start_new(c);
      else if (c.finished && c.exit_code != 0 && policy != "Never")
        restart(c);
      if (c.finished && c.exit_code == 0) continue;
      inits_done = false;
      if (c.finished && c.exit_code != 0 && policy == "Never") init_failed = true;
      break;
    }
  if (inits_done && !init_failed && !p.lost)
    for (auto& c : p.mains) {
      if (!c.running && !c.finished)
        start_new(c);
      else if (c.finished && restarts_after(policy, c.exit_code))
        restart(c);
    }

  // The status, as the kubelet reports it (pkg/kubelet/status/generate.go for the conditions).
  json::object status = old_status ? *old_status : json::object{};
  const Clock::time_point bound = time_at(old_status, "startTime").value_or(now);
  status["hostIP"] = where.host_ip;
  status["hostIPs"] = json::array{json::object{{"ip", where.host_ip}}};
  status["podIP"] = where.pod_ip;
  status["podIPs"] = json::array{json::object{{"ip", where.pod_ip}}};
  status["startTime"] = to_rfc3339(bound);
  status["qosClass"] = qos_class(pod);
  auto state_of = [&](const Container& c, const std::string& waiting_reason) {
    json::object cs{{"name", c.name},
                    {"image",
                     [&] {
                       const json::object s = spec_of(c);
                       return string_of(&s, "image");
                     }()},
                    {"imageID", ""},
                    {"restartCount", std::max(c.attempt, 0)},
                    {"lastState", c.last ? json::object{{"terminated", *c.last}} : json::object{}}};
    const bool waiting_restart = c.finished && c.restart_at && now < *c.restart_at;
    if (p.lost && c.attempt < 0 && !c.finished) {
      cs["state"] = json::object{{"terminated", json::object{{"exitCode", 137},
                                                             {"reason", "Error"},
                                                             {"message",
                                                              "gpupool local run: the gpupool process that "
                                                              "ran this container has exited"},
                                                             {"startedAt", to_rfc3339(bound)},
                                                             {"finishedAt", to_rfc3339(now)}}}};
      cs["ready"] = false;
      cs["started"] = false;
    } else if (c.running) {
      cs["state"] = json::object{{"running", json::object{{"startedAt", to_rfc3339(c.started)}}}};
      cs["ready"] = !c.init;
      cs["started"] = true;
      cs["containerID"] = container_id(pod, c.name, c.attempt);
    } else if (waiting_restart) {
      cs["state"] = json::object{
          {"waiting",
           json::object{
               {"reason", "CrashLoopBackOff"},
               {"message", fmt::format("back-off {}s restarting failed container={} pod={}_{}({})",
                                       std::chrono::duration_cast<std::chrono::seconds>(backoff(c.attempt)).count(),
                                       c.name, util::name_of(pod), util::namespace_of(pod), uid)}}}};
      cs["lastState"] =
          json::object{{"terminated", json::object{{"exitCode", c.exit_code},
                                                   {"reason", c.reason},
                                                   {"startedAt", to_rfc3339(c.started)},
                                                   {"finishedAt", to_rfc3339(c.finished_at)},
                                                   {"containerID", container_id(pod, c.name, c.attempt)}}}};
      cs["ready"] = false;
      cs["started"] = false;
    } else if (c.finished) {
      json::object t{{"exitCode", c.exit_code},
                     {"reason", c.reason},
                     {"startedAt", to_rfc3339(c.started)},
                     {"finishedAt", to_rfc3339(c.finished_at)},
                     {"containerID", container_id(pod, c.name, c.attempt)}};
      if (!c.message.empty()) t["message"] = c.message;
      cs["state"] = json::object{{"terminated", std::move(t)}};
      cs["ready"] = c.init && c.exit_code == 0;
      cs["started"] = false;
      cs["containerID"] = container_id(pod, c.name, c.attempt);
    } else {
      cs["state"] = json::object{{"waiting", json::object{{"reason", waiting_reason}}}};
      cs["ready"] = false;
      cs["started"] = false;
    }
    return cs;
  };
  json::array mains;
  bool all_running = !p.lost, all_done = true, any_failed = false;
  std::vector<std::string> names, unready;
  for (auto& c : p.mains) {
    names.push_back(c.name);
    mains.push_back(state_of(c, p.inits.empty() || inits_done ? "ContainerCreating" : "PodInitializing"));
    if (!c.running) {
      all_running = false;
      unready.push_back(c.name);
    }
    const bool will_restart = c.finished && restarts_after(policy, c.exit_code);
    if (p.lost)
      any_failed = true;
    else if (!c.finished || will_restart)
      all_done = false;
    else if (c.exit_code != 0)
      any_failed = true;
  }
  status["containerStatuses"] = std::move(mains);
  std::vector<std::string> incomplete;
  if (!p.inits.empty()) {
    json::array inits;
    for (auto& c : p.inits) {
      inits.push_back(state_of(c, "PodInitializing"));
      if (!(c.finished && c.exit_code == 0)) incomplete.push_back(c.name);
    }
    status["initContainerStatuses"] = std::move(inits);
  }
  std::string phase = "Pending";
  if (p.lost || init_failed)
    phase = "Failed";
  else if (inits_done && all_done)
    phase = any_failed ? "Failed" : "Succeeded";
  else if (inits_done)
    phase = "Running";
  status["phase"] = phase;
  const bool finished = phase == "Succeeded" || phase == "Failed";
  auto cond = [&](const char* type, bool ok, std::string reason = {}, std::string message = {}) {
    return pod_condition(type, ok, reason, message, now);
  };
  json::array conditions;
  if (const json::value* v = old_status ? old_status->if_contains("conditions") : nullptr; v && v->is_array())
    conditions = v->as_array();
  // set_condition keeps lastTransitionTime when the status does not change.
  auto set = [&](json::object c) {
    if (const json::object* old = util::find_condition(&conditions, string_of(&c, "type")))
      if (string_of(old, "status") == string_of(&c, "status")) c["lastTransitionTime"] = old->at("lastTransitionTime");
    util::set_condition(conditions, std::move(c));
  };
  set(cond("PodReadyToStartContainers", !finished));
  set(incomplete.empty() ? cond("Initialized", true)
                         : cond("Initialized", false, "ContainersNotInitialized",
                                fmt::format("containers with incomplete status: {}", go_slice(incomplete))));
  const bool ready = all_running && !finished;
  const std::string why = finished ? "PodCompleted" : "ContainersNotReady";
  const std::string msg = finished ? "" : fmt::format("containers with unready status: {}", go_slice(unready));
  set(cond("Ready", ready, ready ? "" : why, ready ? "" : msg));
  set(cond("ContainersReady", ready, ready ? "" : why, ready ? "" : msg));
  order_pod_conditions(conditions);
  status["conditions"] = std::move(conditions);
  const bool announce = !p.announced && !started_commands.empty();
  if (announce) p.announced = true;
  lk.unlock();
  if (announce)
    for (const auto& command : started_commands)
      util::record_event(
          store_, now, pod, "Normal", "LocalProcess",
          fmt::format("Run mode local: image not pulled or run; started `{}` as a local process in {}", command, p.dir),
          "kubelet", {}, std::nullopt);
  (void)first;
  if (old_status && util::json_equal(*old_status, status)) return std::nullopt;
  return status;
}

void LocalRuntime::forget(const std::string& key, std::chrono::seconds grace) {
  std::lock_guard lk(mu_);
  auto it = pods_.find(key);
  if (it == pods_.end()) return;
  std::vector<pid_t> groups;
  for (auto* list : {&it->second->inits, &it->second->mains})
    for (auto& c : *list)
      if (c.running && c.pid > 0) groups.push_back(c.pid);
  pods_.erase(it);
  for (pid_t g : groups) {
    ::kill(-g, SIGTERM);
    // SIGKILL after the grace period unless the group leader has gone (pidfd readable) first.
    threads_.emplace_back([this, g, grace] {
      const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, g, 0));
      if (pidfd >= 0) {
        ::pollfd f{pidfd, POLLIN, 0};
        const auto deadline = std::chrono::steady_clock::now() + grace;
        for (;;) {
          const auto left =
              std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
          if (left.count() <= 0) break;
          const int r = ::poll(&f, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 200)));
          if (r > 0) break;
          std::lock_guard l(mu_);
          if (stopping_) break;
        }
        ::close(pidfd);
      }
      ::kill(-g, SIGKILL);  // the rest of the group (and the leader, if it ignored SIGTERM)
    });
  }
  // The reaper of each process still waits for it; it finds no pod and stops there.
}

std::optional<std::vector<std::string>> LocalRuntime::log_lines(const json::object& pod, const std::string& container,
                                                                bool previous) const {
  const std::string dir =
      fmt::format("{}/{}/{}.{}", root_, util::namespace_of(pod), util::name_of(pod), util::uid_of(pod));
  if (!fs::is_directory(dir + "/logs")) return std::nullopt;
  int attempt = -1;
  for (const auto& e : fs::directory_iterator(dir + "/logs")) {
    const std::string f = e.path().filename().string();
    const std::string prefix = container + ".";
    if (f.rfind(prefix, 0) != 0 || f.size() < prefix.size() + 5 || f.substr(f.size() - 4) != ".log") continue;
    try {
      attempt = std::max(attempt, std::stoi(f.substr(prefix.size(), f.size() - prefix.size() - 4)));
    } catch (...) {}
  }
  if (previous) --attempt;
  if (attempt < 0) return std::vector<std::string>{};
  std::ifstream in(log_path(dir, container, attempt));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::optional<LocalRuntime::ExecContext> LocalRuntime::exec_context(const std::string& key,
                                                                    const std::string& container) const {
  std::lock_guard lk(mu_);
  auto it = pods_.find(key);
  if (it == pods_.end()) return std::nullopt;
  for (const auto* list : {&it->second->mains, &it->second->inits})
    for (const auto& c : *list)
      if (c.name == container && c.attempt >= 0) return ExecContext{c.dir, c.env};
  return std::nullopt;
}

}  // namespace gpupool::embedded

namespace gpupool {

int run_exec_locally(const ExecRequest& r, const std::string& dir, const std::vector<std::string>& env, bool* hung_up) {
  if (r.command.empty()) throw Error("no command given");
  std::vector<std::string> environment = env;
  if (environment.empty())
    for (char** e = environ; e && *e; ++e) environment.emplace_back(*e);
  std::string error;
  const int err = r.stderr_fd >= 0 ? r.stderr_fd : (r.tty ? r.stdout_fd : -1);
  const pid_t pid = embedded::spawn(r.command, dir, environment, r.stdin_fd, r.stdout_fd, err, error);
  if (pid < 0) throw Error(error);
  // Wait for the child or for the client to go (then the group is killed): a pidfd and the
  // hangup descriptor, polled together.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  for (bool killed = false; pidfd >= 0;) {
    ::pollfd fds[2] = {{pidfd, POLLIN, 0}, {killed ? -1 : r.hangup_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno == EINTR) continue;
    if (fds[0].revents) break;
    if (fds[1].revents) {
      ::kill(-pid, SIGKILL);
      killed = true;
      if (hung_up) *hung_up = true;
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return embedded::exit_code_of(status);
}

}  // namespace gpupool

namespace gpupool::embedded {

namespace {

class LocalStreams : public StreamHandler {
 public:
  explicit LocalStreams(const LocalRuntime& runtime) : runtime_(runtime) {}
  int exec(const ExecRequest& r) override {
    auto ctx = runtime_.exec_context(r.pod.namespace_name + "/" + r.pod.name, r.container);
    if (!ctx) throw Error(fmt::format("container {} of pod {} is not running locally", r.container, r.pod.name));
    return run_exec_locally(r, ctx->dir, ctx->env);
  }
  int port_forward(const PodTarget&, int port) override {
    throw Error(fmt::format("port-forward to port {} is not supported in run mode local yet", port));
  }

 private:
  const LocalRuntime& runtime_;
};

}  // namespace

std::shared_ptr<StreamHandler> local_stream_handler(const LocalRuntime& runtime) {
  return std::make_shared<LocalStreams>(runtime);
}

}  // namespace gpupool::embedded
