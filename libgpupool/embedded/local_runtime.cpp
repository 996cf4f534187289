#include "embedded/local_runtime.hpp"
#include "common/ascii.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "embedded/base64.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/local_mounts.hpp"
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
  std::optional<MountPlan> plan;  // MountMethod::Namespace with volumes: the mounts it sees
  std::string config_error;       // CreateContainerConfigError: not started, retried
  bool stand_in = false;          // mpi-operator's worker sshd, replaced by a process that waits
};

struct LocalRuntime::Pod {
  std::string key, uid, dir;
  std::vector<Container> inits, mains;
  bool lost = false;       // ran under a gpupool process that has gone: its processes are gone too
  bool announced = false;  // the LocalProcess event was recorded
  NodeAddress where;
  std::optional<std::vector<std::pair<std::string, std::string>>> volumes;  // name -> local directory
  std::map<int, int> ports;                                                 // containerPort -> local port
  std::vector<std::string> hosts;  // its entries in <root>/hosts (pod_dns_names), for gpupool-rsh
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

// The kubelet's crash-loop backoff (pkg/kubelet/kuberuntime: 10s initial, doubling, 5m cap).
Clock::duration backoff(int restarts) {
  Clock::duration d = 10s;
  for (int i = 0; i < restarts && d < 300s; ++i) d *= 2;
  return std::min<Clock::duration>(d, 300s);
}

std::string log_path(const std::string& dir, const std::string& container, int attempt) {
  return fmt::format("{}/logs/{}.{}.log", dir, container, attempt);
}

bool host_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-'; }

// A port on 127.0.0.1 nothing listens on now: `wanted` when it is free, else one the kernel picks.
int free_local_port(int wanted) {
  for (const int port : {wanted, 0}) {
    if (port < 0) continue;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    socklen_t len = sizeof a;
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    ::close(fd);
    if (ok) return ntohs(a.sin_port);
  }
  return -1;
}

// A shell word: 'text' with each ' as '\''.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// mpirun's remote shell in RunMode::Local (local_runtime.hpp, mpi_rsh_agent_script).
constexpr const char* kRshAgent = R"sh(
while [ $# -gt 0 ]; do
  case "$1" in
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;  # ssh options with a value (-o ConnectionAttempts=10)
    -*) shift ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ]; then echo "usage: gpupool-rsh [ssh options] HOST COMMAND..." >&2; exit 255; fi
host=$1
shift
tries=0
while :; do
  pid= dir=
  if [ -f "$hosts/$host" ]; then read -r pid dir < "$hosts/$host"; fi
  if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then break; fi
  tries=$((tries + 1))
  if [ "$tries" -ge 10 ]; then  # as ssh -o ConnectionAttempts=10: one attempt a second
    echo "gpupool-rsh: $host: no running pod of this cluster has this name" >&2
    exit 255
  fi
  sleep 1
done
# As sshd: the command line through a shell, with the container's environment (not this one's):
# its /proc environ, or (a process in another user namespace may not read that) the copy the
# runtime keeps in the pod's directory for that case. TMPDIR is a fresh directory (the env's own
# TMPDIR wins), as each container has a /tmp of its own: two Open MPI daemons of one job on this
# machine would otherwise share their session directory. xargs reads the env, NUL-separated.
run='c=$1; shift; exec env -i "$@" /bin/sh -c "$c"'
envfile=/proc/$pid/environ
if ! (: < "$envfile") 2>/dev/null; then envfile=$dir/.gpupool-rsh.env; fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpupool-rsh.XXXXXX") || exit 255
remote() {
  xargs -0 -x -a "$envfile" "$@" /bin/sh -c "$run" gpupool-rsh "$command" "TMPDIR=$tmp"
  rc=$?
  rm -rf "$tmp"
  exit $rc
}
command=$*
if [ "$(readlink "/proc/$pid/ns/mnt")" = "$(readlink /proc/self/ns/mnt)" ]; then
  cd "$(readlink "/proc/$pid/cwd")" || exit 255
  remote
fi
# Its mount namespace (its volumes at their mountPaths), root and working directory.
enter="nsenter --target $pid --mount --root --wd"
if [ "$(readlink "/proc/$pid/ns/user")" != "$(readlink /proc/self/ns/user)" ]; then
  enter="$enter --user --preserve-credentials"
fi
# shellcheck disable=SC2086
if $enter true 2>/dev/null; then remote $enter; fi
# A namespace this process may not enter (both in user namespaces): its env and directory only.
cd "$dir" || exit 255
remote
)sh";

bool env_is(const std::vector<std::string>& env, const std::string& name, const std::string& value) {
  for (const auto& e : env)
    if (e == name + "=" + value) return true;
  return false;
}

// Forks argv with stdout/stderr to `out_fd` (or the given descriptors); the exec error, if any,
// comes back through a close-on-exec pipe. Everything the child touches is prepared before fork.
}  // namespace

pid_t spawn(const std::vector<std::string>& argv, const std::string& dir, const std::vector<std::string>& env,
            int in_fd, int out_fd, int err_fd, std::string& error, const MountPlan* plan) {
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
    int e[2] = {0, -2};  // errno, and the mount plan's failed op (-1: its setup; -2: none)
    if (plan && (e[0] = enter_mount_plan(*plan, &e[1])) != 0) {
    } else if (e[1] = -2; ::chdir(dir.c_str()) != 0) {
      e[0] = errno;
    } else {
      ::execvpe(args[0], args.data(), envp.data());
      e[0] = errno;
    }
    (void)!::write(report[1], e, sizeof e);
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
  int e[2] = {0, -2};
  ssize_t n;
  while ((n = ::read(report[0], e, sizeof e)) < 0 && errno == EINTR) {}
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (e[1] >= 0 && plan && static_cast<std::size_t>(e[1]) < plan->ops.size())
      error = fmt::format("mounting {} at {}: {}", plan->ops[e[1]].source,
                          plan->ops[e[1]].target.substr(plan->root.size()), std::strerror(e[0]));
    else if (e[1] == -1)
      error = fmt::format("creating the mount namespace: {} (set GPUPOOL_LOCAL_MOUNTS=paths to rewrite paths instead)",
                          std::strerror(e[0]));
    // The runtime's wording for a missing executable (runc: exec: "x": executable file not found in $PATH).
    else if (e[0] == ENOENT)
      error = fmt::format("exec: \"{}\": executable file not found in $PATH", argv[0]);
    else
      error = fmt::format("exec: \"{}\": {}", argv[0], std::strerror(e[0]));
    return -1;
  }
  return pid;
}

std::vector<std::string> pod_dns_names(const json::object& pod) {
  const json::object* spec = object_at(pod, {"spec"});
  const std::string host = string_of(spec, "hostname"), sub = string_of(spec, "subdomain");
  if (host.empty() || sub.empty()) return {};
  const std::string base = host + "." + sub, ns = util::namespace_of(pod);
  return {base, base + "." + ns, base + "." + ns + ".svc", base + "." + ns + ".svc.cluster.local"};
}

std::string mpi_rsh_agent_script(const std::string& hosts_dir) {
  return "#!/bin/sh\n"
         "# gpupool run mode local: mpirun's remote shell (OMPI_MCA_plm_rsh_agent, I_MPI_HYDRA_BOOTSTRAP_EXEC,\n"
         "# HYDRA_LAUNCHER_EXEC). As ssh: gpupool-rsh [ssh options] HOST COMMAND... runs COMMAND in the local\n"
         "# pod whose DNS name is HOST, with its container's env, working directory and mount namespace.\n"
         "hosts=" +
         sh_quote(hosts_dir) + kRshAgent;
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

std::string rewrite_peer_addresses(const std::string& text, const std::vector<LocalPeer>& peers) {
  std::vector<std::pair<const std::string*, const LocalPeer*>> names;
  for (const auto& p : peers)
    for (const auto& n : p.names) names.emplace_back(&n, &p);
  std::stable_sort(names.begin(), names.end(),
                   [](const auto& a, const auto& b) { return a.first->size() > b.first->size(); });
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    bool replaced = false;
    if (i == 0 || !host_char(text[i - 1]))
      for (const auto& [name, peer] : names) {
        const std::size_t end = i + name->size();
        if (text.compare(i, name->size(), *name) != 0 || (end < text.size() && host_char(text[end]))) continue;
        out += "127.0.0.1";
        i = end;
        // ":<port>" after the name: the local port that Service port reaches.
        std::size_t j = i + 1;
        while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
        if (i < text.size() && text[i] == ':' && j > i + 1 && (j == text.size() || !host_char(text[j]))) {
          if (auto it = peer->ports.find(std::stoi(text.substr(i + 1, j - i - 1))); it != peer->ports.end()) {
            out += ":" + std::to_string(it->second);
            i = j;
          }
        }
        replaced = true;
        break;
      }
    if (!replaced) out += text[i++];
  }
  return out;
}

std::string rewrite_own_ports(const std::string& text, const std::map<int, int>& ports) {
  // A whole token, or what follows '=' or ':' at its end: "6006", "--port=6006", "0.0.0.0:6006".
  std::size_t start = text.size();
  while (start > 0 && std::isdigit(static_cast<unsigned char>(text[start - 1]))) --start;
  if (start == text.size() || (start > 0 && text[start - 1] != '=' && text[start - 1] != ':')) return text;
  if (text.size() - start > 5) return text;
  auto it = ports.find(std::stoi(text.substr(start)));
  if (it == ports.end() || it->first == it->second) return text;
  return text.substr(0, start) + std::to_string(it->second);
}

std::string find_container_runtime() {
  const char* path = std::getenv("PATH");
  for (const char* name : {"podman", "docker"}) {
    std::string dirs = path ? path : "";
    for (std::size_t i = 0; i <= dirs.size();) {
      const std::size_t j = std::min(dirs.find(':', i), dirs.size());
      const std::string candidate = (j == i ? std::string(".") : dirs.substr(i, j - i)) + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return candidate;
      i = j + 1;
    }
  }
  return "";
}

std::vector<std::string> container_run_argv(const std::string& runtime, const std::string& name,
                                            const json::object& container, const std::vector<std::string>& env,
                                            const std::vector<LocalMount>& mounts) {
  std::vector<std::string> argv{runtime, "run", "--rm", "--network", "host", "--name", name};
  for (const auto& e : env) {
    const std::string n = var_name(e);
    if (n == "PATH" || n == "HOME") continue;  // the image's own
    argv.insert(argv.end(), {"-e", e});
  }
  for (const auto& m : mounts) argv.insert(argv.end(), {"-v", m.source + ":" + m.target + (m.read_only ? ":ro" : "")});
  if (const std::string wd = string_of(&container, "workingDir"); !wd.empty()) argv.insert(argv.end(), {"-w", wd});
  const auto command = string_list(container, "command");
  if (!command.empty()) {
    json::array entry;
    for (const auto& c : command) entry.emplace_back(c);
    argv.insert(argv.end(), {"--entrypoint", json::serialize(entry)});
  }
  argv.push_back(string_of(&container, "image"));
  for (const auto& a : string_list(container, "args")) argv.push_back(a);
  return argv;
}

LocalRuntime::LocalRuntime(Store& store, const Clock& clock, std::string root, bool own_root,
                           std::function<void(const std::string&)> on_exit, std::string container_runtime)
    : store_(store),
      clock_(clock),
      root_(std::move(root)),
      own_root_(own_root),
      on_exit_(std::move(on_exit)),
      container_runtime_(std::move(container_runtime)) {
  {
    // Entries of an earlier process name pids that may belong to anything by now.
    std::error_code ec;
    fs::remove_all(root_ + "/hosts", ec);
  }
  fs::create_directories(root_ + "/hosts");
  fs::create_directories(root_ + "/bin");
  {
    const std::string agent = rsh_agent();
    std::ofstream(agent, std::ios::trunc) << mpi_rsh_agent_script(root_ + "/hosts");
    ::chmod(agent.c_str(), 0755);
  }
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
                                     const std::vector<std::string>& env, int out_fd, std::string& error,
                                     const MountPlan* plan) {
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
      pid = spawn(argv, dir, env, -1, out_fd, out_fd, error, plan);
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

void LocalRuntime::reap(const std::string& key, pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  {
    std::lock_guard lk(mu_);
    // The pod's, or (forget() is stopping it) the forgotten pod's, whose stopped() reports it.
    std::shared_ptr<Pod> pod;
    if (auto it = pods_.find(key); it != pods_.end()) pod = it->second;
    if (auto it = forgotten_.find(pid); it != forgotten_.end()) {
      pod = it->second;
      forgotten_.erase(it);
      stop_cv_.notify_all();
    }
    if (pod)
      for (auto* list : {&pod->inits, &pod->mains})
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

std::string LocalRuntime::pod_dir(const json::object& pod) const {
  return fmt::format("{}/pods/{}/{}.{}", root_, util::namespace_of(pod), util::name_of(pod), util::uid_of(pod));
}

std::optional<std::string> LocalRuntime::key_of(const json::object& pod, const json::object& ref, bool secret,
                                                std::string& error) const {
  const std::string name = string_of(&ref, "name"), key = string_of(&ref, "key");
  const json::value* opt = ref.if_contains("optional");
  const bool optional = opt && opt->is_bool() && opt->as_bool();
  const char* kind = secret ? "secret" : "configmap";
  auto obj = store_.find(store_.type("", secret ? "secrets" : "configmaps"), util::namespace_of(pod), name);
  if (!obj) {
    if (!optional) error = fmt::format("{} \"{}\" not found", kind, name);
    return std::nullopt;
  }
  if (const json::object* data = object_at(*obj, {"data"}); data && data->contains(key)) {
    const std::string v = string_of(data, key);
    if (!secret) return v;
    if (auto decoded = base64_decode(v)) return std::string(decoded->begin(), decoded->end());
  }
  if (!secret)
    if (const json::object* bin = object_at(*obj, {"binaryData"}); bin && bin->contains(key))
      if (auto decoded = base64_decode(string_of(bin, key))) return std::string(decoded->begin(), decoded->end());
  // pkg/kubelet/kubelet_pods.go makeEnvironmentVariables: "couldn't find key %v in Secret/ConfigMap %v/%v".
  if (!optional)
    error = fmt::format("couldn't find key {} in {} {}/{}", key, secret ? "Secret" : "ConfigMap",
                        util::namespace_of(pod), name);
  return std::nullopt;
}

int LocalRuntime::local_port_locked(const std::string& pod_key, int port) {
  const std::string key = fmt::format("{}/{}", pod_key, port);
  if (auto it = ports_.find(key); it != ports_.end()) return it->second;
  // The containerPort itself when it is free here and no other local pod has it, else a free one.
  bool taken = false;
  for (const auto& [k, v] : ports_) taken = taken || v == port;
  int local = free_local_port(taken ? 0 : port);
  if (local < 0) local = port;
  ports_[key] = local;
  return local;
}

std::vector<LocalPeer> LocalRuntime::peers_of(const json::object& pod) {
  std::vector<LocalPeer> peers;
  const std::string ns = util::namespace_of(pod);
  const auto services = store_.list(store_.type("", "services"), ns).items;
  if (services.empty()) return peers;
  const auto pods = store_.list(store_.type("", "pods"), ns).items;
  for (const auto& svc : services) {
    const json::object* sel = object_at(*svc, {"spec", "selector"});
    if (!sel || sel->empty()) continue;
    const std::string name = util::name_of(*svc);
    const json::object* target = nullptr;
    for (const auto& p : pods)
      if (util::selector_matches(json::object{{"matchLabels", *sel}}, object_at(*p, {"metadata", "labels"})))
        if (!target || util::name_of(*p) == name) target = p.get();
    if (!target) continue;
    LocalPeer peer;
    peer.names = {name, name + "." + ns, name + "." + ns + ".svc", name + "." + ns + ".svc.cluster.local"};
    const std::string target_key = ns + "/" + util::name_of(*target);
    if (const json::array* ports = util::array_at(*svc, {"spec"}, "ports"))
      for (const auto& sp : *ports) {
        if (!sp.is_object()) continue;
        const auto port = util::int_of(&sp.as_object(), "port", 0);
        std::int64_t to = port;
        if (const json::value* tp = sp.as_object().if_contains("targetPort")) {
          if (tp->is_int64()) to = tp->as_int64();
          if (tp->is_string())  // a named port of the selected pod's containers
            for (const json::object* ct : containers_of(*target))
              if (const json::value* cps = ct->if_contains("ports"); cps && cps->is_array())
                for (const auto& cp : cps->as_array())
                  if (cp.is_object() && string_of(&cp.as_object(), "name") == tp->as_string())
                    to = util::int_of(&cp.as_object(), "containerPort", port);
        }
        if (port > 0 && to > 0 && to < 65536)
          peer.ports[static_cast<int>(port)] = local_port_locked(target_key, static_cast<int>(to));
      }
    peers.push_back(std::move(peer));
  }
  // Pods whose subdomain names a Service here have DNS names of their own (pod_dns_names): they
  // reach that pod, its containerPorts its local ports.
  std::set<std::string> service_names;
  for (const auto& svc : services) service_names.insert(util::name_of(*svc));
  for (const auto& p : pods) {
    if (!service_names.count(string_of(object_at(*p, {"spec"}), "subdomain"))) continue;
    LocalPeer peer;
    peer.names = pod_dns_names(*p);
    if (peer.names.empty()) continue;
    const std::string key = ns + "/" + util::name_of(*p);
    for (const json::object* ct : containers_of(*p))
      if (const json::value* cps = ct->if_contains("ports"); cps && cps->is_array())
        for (const auto& cp : cps->as_array()) {
          const auto n = util::int_of(cp.is_object() ? &cp.as_object() : nullptr, "containerPort", 0);
          if (n > 0 && n < 65536) peer.ports[static_cast<int>(n)] = local_port_locked(key, static_cast<int>(n));
        }
    peers.push_back(std::move(peer));
  }
  return peers;
}

std::optional<int> LocalRuntime::local_port(const std::string& key, int port) const {
  std::lock_guard lk(mu_);
  if (!pods_.count(key)) return std::nullopt;
  if (auto it = ports_.find(fmt::format("{}/{}", key, port)); it != ports_.end()) return it->second;
  return port;  // a port the pod does not declare: its processes share this machine's network
}

std::string LocalRuntime::ports_annotation(const std::string& key) const {
  std::lock_guard lk(mu_);
  if (!pods_.count(key)) return "";
  // Its containerPorts and the ports its Services reach (ports_ holds both).
  std::map<int, int> mine;
  const std::string prefix = key + "/";
  for (auto it = ports_.lower_bound(prefix); it != ports_.end() && it->first.rfind(prefix, 0) == 0; ++it)
    if (it->first.find('/', prefix.size()) == std::string::npos)
      mine[std::stoi(it->first.substr(prefix.size()))] = it->second;
  if (mine.empty()) return "";
  json::object o;
  for (const auto& [from, to] : mine) o[std::to_string(from)] = to;
  return json::serialize(o);
}

// The kubelet's service environment (pkg/kubelet/kubelet_pods.go getServiceEnvVarMap,
// pkg/kubelet/envvars FromServices, v1.32): for each Service with a cluster IP in the pod's
// namespace (unless spec.enableServiceLinks is false) and the `kubernetes` Service of `default`
// (always; one of the pod's namespace of that name wins): NAME_SERVICE_HOST, NAME_SERVICE_PORT
// (the first port), NAME_SERVICE_PORT_<PORTNAME> for named ports, and the Docker link variables
// NAME_PORT, NAME_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}. The names are the Service's (its
// ports' numbers in them); the values are what reaches it from a local process: 127.0.0.1, the
// local port of the pod a Service port leads to (peers_of), and for `kubernetes` the server's own
// port (its targetPort), so that a client's in-cluster configuration (KUBERNETES_SERVICE_HOST and
// _PORT, with the service account's token and ca.crt) reaches the embedded API server.
std::vector<std::string> LocalRuntime::service_env_of(const json::object& pod, const std::vector<LocalPeer>& peers) {
  const std::string ns = util::namespace_of(pod);
  const json::object* pod_spec = util::object_at(pod, {"spec"});
  const json::value* links = pod_spec ? pod_spec->if_contains("enableServiceLinks") : nullptr;
  const bool service_links = !(links && links->is_bool() && !links->as_bool());
  const auto& services = store_.type("", "services");
  std::map<std::string, std::shared_ptr<const json::object>> chosen;  // by name
  if (auto master = store_.find(services, "default", "kubernetes")) chosen["kubernetes"] = master;
  if (service_links)
    for (const auto& svc : store_.list(services, ns).items) chosen[util::name_of(*svc)] = svc;
  const auto env_name = [](std::string s) {  // makeEnvVariableName
    for (char& ch : s) ch = ch == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
  };
  std::vector<std::string> out;
  for (const auto& [name, svc] : chosen) {
    const std::string ip = string_of(object_at(*svc, {"spec"}), "clusterIP");
    const json::array* ports = util::array_at(*svc, {"spec"}, "ports");
    if (ip.empty() || ip == "None" || !ports || ports->empty()) continue;  // IsServiceIPSet (a port: validation)
    const bool master = name == "kubernetes" && util::namespace_of(*svc) == "default";
    const LocalPeer* peer = nullptr;
    for (const auto& p : peers)
      if (!p.names.empty() && p.names.front() == name) peer = &p;
    const std::string prefix = env_name(name);
    // What a process here dials for this Service port.
    const auto local_port = [&](const json::object& sp) -> std::int64_t {
      const std::int64_t port = util::int_of(&sp, "port", 0);
      if (master)
        if (const json::value* tp = sp.if_contains("targetPort"); tp && tp->is_int64()) return tp->as_int64();
      if (peer)
        if (auto it = peer->ports.find(static_cast<int>(port)); it != peer->ports.end()) return it->second;
      return port;
    };
    out.push_back(prefix + "_SERVICE_HOST=127.0.0.1");
    static const json::object kNoPort;
    out.push_back(fmt::format("{}_SERVICE_PORT={}", prefix,
                              local_port((*ports)[0].is_object() ? (*ports)[0].as_object() : kNoPort)));
    for (const auto& spv : *ports)
      if (spv.is_object() && !string_of(&spv.as_object(), "name").empty())
        out.push_back(fmt::format("{}_SERVICE_PORT_{}={}", prefix, env_name(string_of(&spv.as_object(), "name")),
                                  local_port(spv.as_object())));
    for (std::size_t i = 0; i < ports->size(); ++i) {  // makeLinkVariables
      if (!(*ports)[i].is_object()) continue;
      const json::object& sp = (*ports)[i].as_object();
      std::string proto = string_of(&sp, "protocol");
      if (proto.empty()) proto = "TCP";
      const std::string lower = ascii::lower(proto);
      const std::string address = fmt::format("{}://127.0.0.1:{}", lower, local_port(sp));
      if (i == 0) out.push_back(prefix + "_PORT=" + address);
      const std::string port_prefix = fmt::format("{}_PORT_{}_{}", prefix, util::int_of(&sp, "port", 0), proto);
      out.push_back(port_prefix + "=" + address);
      out.push_back(port_prefix + "_PROTO=" + lower);
      out.push_back(fmt::format("{}_PORT={}", port_prefix, local_port(sp)));
      out.push_back(port_prefix + "_ADDR=127.0.0.1");
    }
  }
  return out;
}

void LocalRuntime::start(Pod& pod, Container& c, const json::object& podobj, const json::object& spec,
                         Clock::time_point now) {
  // Env: a minimal base (PATH and HOME of this process, HOSTNAME the pod's name, as a container
  // gets), then envFrom, then the container's env in order; fieldRefs resolved through the
  // downward API, secretKeyRef / configMapKeyRef from the store (a missing one, unless optional,
  // keeps the container from starting: CreateContainerConfigError, as the kubelet reports it).
  std::vector<std::string> env;
  std::string config_error;
  if (const char* path = std::getenv("PATH")) env.push_back(std::string("PATH=") + path);
  if (const char* home = std::getenv("HOME")) env.push_back(std::string("HOME=") + home);
  // The container's hostname: spec.hostname when set, else the pod's name (kubelet GeneratePodHostNameAndDomain).
  const std::string hostname = string_of(object_at(podobj, {"spec"}), "hostname");
  env.push_back("HOSTNAME=" + (hostname.empty() ? util::name_of(podobj) : hostname));
  const std::size_t base = env.size();
  const std::vector<LocalPeer> peers = peers_of(podobj);
  const std::vector<std::string> service_env = service_env_of(podobj, peers);
  if (const json::value* ef = spec.if_contains("envFrom"); ef && ef->is_array())
    for (const auto& e : ef->as_array()) {
      if (!e.is_object()) continue;
      const std::string prefix = string_of(&e.as_object(), "prefix");
      for (const bool secret : {false, true}) {
        const json::object* ref = object_at(e.as_object(), {secret ? "secretRef" : "configMapRef"});
        if (!ref) continue;
        const json::value* opt = ref->if_contains("optional");
        auto obj = store_.find(store_.type("", secret ? "secrets" : "configmaps"), util::namespace_of(podobj),
                               string_of(ref, "name"));
        if (!obj) {
          if (!(opt && opt->is_bool() && opt->as_bool()))
            config_error = fmt::format("{} \"{}\" not found", secret ? "secret" : "configmap", string_of(ref, "name"));
          continue;
        }
        if (const json::object* data = object_at(*obj, {"data"}))
          for (const auto& [k, v] : *data) {
            std::string value = v.is_string() ? std::string(v.as_string()) : "";
            if (secret)
              if (auto d = base64_decode(value)) value.assign(d->begin(), d->end());
            env.push_back(prefix + std::string(k) + "=" + value);
          }
      }
    }
  if (const json::value* ev = spec.if_contains("env"); ev && ev->is_array())
    for (const auto& e : ev->as_array()) {
      if (!e.is_object()) continue;
      const std::string name = string_of(&e.as_object(), "name");
      std::optional<std::string> value;
      if (const json::value* v = e.as_object().if_contains("value"); v && v->is_string()) {
        // $(VAR) sees the service variables too, the container's own definitions first
        // (expansion.MappingFuncFor(tmpEnv, serviceEnv)).
        std::vector<std::string> visible = service_env;
        visible.insert(visible.end(), env.begin(), env.end());
        value = expand_env_refs(std::string(v->as_string()), visible);
      } else if (const json::object* ref = object_at(e.as_object(), {"valueFrom", "fieldRef"}))
        value = downward_field(podobj, pod.where, string_of(ref, "fieldPath"));
      else if (const json::object* sref = object_at(e.as_object(), {"valueFrom", "secretKeyRef"}))
        value = key_of(podobj, *sref, true, config_error);
      else if (const json::object* cref = object_at(e.as_object(), {"valueFrom", "configMapKeyRef"}))
        value = key_of(podobj, *cref, false, config_error);
      else if (!e.as_object().contains("valueFrom"))
        value = "";
      // resourceFieldRef: not resolved in Local mode (left unset).
      if (value) env.push_back(name + "=" + *value);
    }
  // Volumes: local directories (local_mounts.hpp), made once per pod. What the kubelet writes
  // into them: the keys of a configMap or secret volume, and of a projected volume's configMap,
  // secret and downwardAPI sources, and its serviceAccountToken source's token (the ServiceAccount
  // plugin's kube-api-access-* volume: token, ca.crt and namespace).
  if (!pod.volumes) {
    VolumeSources vs{root_, pod.dir, {}};
    auto object_files = [&](const json::object& src, bool secret, std::int64_t default_mode,
                            std::vector<LocalFile>& files) {
      // A secret volume names it secretName; a projected secret source, like a configMap, name.
      std::string name = secret ? string_of(&src, "secretName") : "";
      if (name.empty()) name = string_of(&src, "name");
      auto obj = store_.find(store_.type("", secret ? "secrets" : "configmaps"), util::namespace_of(podobj), name);
      if (!obj) return;
      for (const char* field : {"data", "binaryData"})
        if (const json::object* data = object_at(*obj, {field}))
          for (const auto& [k, val] : *data) {
            std::string bytes = val.is_string() ? std::string(val.as_string()) : "";
            if (secret || std::string_view(field) == "binaryData")
              if (auto d = base64_decode(bytes)) bytes.assign(d->begin(), d->end());
            if (const json::value* items = src.if_contains("items"); items && items->is_array()) {
              // Each item is a file (one key may become several: mpi-operator's ssh-publickey).
              for (const auto& it : items->as_array())
                if (it.is_object() && string_of(&it.as_object(), "key") == k)
                  files.push_back({string_of(&it.as_object(), "path"), bytes,
                                   static_cast<unsigned>(util::int_of(&it.as_object(), "mode", default_mode))});
              continue;
            }
            files.push_back({std::string(k), std::move(bytes), static_cast<unsigned>(default_mode)});
          }
    };
    auto downward_files = [&](const json::object& src, std::int64_t default_mode, std::vector<LocalFile>& files) {
      if (const json::array* items = util::array_at(src, {}, "items"))
        for (const auto& it : *items)
          if (const json::object* ref = it.is_object() ? object_at(it.as_object(), {"fieldRef"}) : nullptr)
            if (auto value = downward_field(podobj, pod.where, string_of(ref, "fieldPath")))
              files.push_back({string_of(&it.as_object(), "path"), *value,
                               static_cast<unsigned>(util::int_of(&it.as_object(), "mode", default_mode))});
    };
    if (const json::array* vols = util::array_at(podobj, {"spec"}, "volumes"))
      for (const auto& v : *vols) {
        if (!v.is_object()) continue;
        std::vector<LocalFile> files;
        bool any = false;
        for (const bool secret : {false, true})
          if (const json::object* src = object_at(v.as_object(), {secret ? "secret" : "configMap"})) {
            any = true;
            object_files(*src, secret, util::int_of(src, "defaultMode", 0644), files);
          }
        if (const json::object* projected = object_at(v.as_object(), {"projected"})) {
          any = true;
          const std::int64_t mode = util::int_of(projected, "defaultMode", 0644);
          if (const json::array* sources = util::array_at(*projected, {}, "sources"))
            for (const auto& src : *sources) {
              if (!src.is_object()) continue;
              for (const bool secret : {false, true})
                if (const json::object* o = object_at(src.as_object(), {secret ? "secret" : "configMap"}))
                  object_files(*o, secret, mode, files);
              if (const json::object* d = object_at(src.as_object(), {"downwardAPI"})) downward_files(*d, mode, files);
              // The kubelet's token manager: a token of the pod's account, bound to the pod.
              if (const json::object* t = object_at(src.as_object(), {"serviceAccountToken"}); t && token_requester_)
                if (auto token = token_requester_(podobj, *t))
                  files.push_back({string_of(t, "path"), std::move(*token), static_cast<unsigned>(mode)});
            }
        }
        if (any) vs.files.emplace_back(string_of(&v.as_object(), "name"), std::move(files));
      }
    pod.volumes = local_volume_dirs(podobj, vs);
  }
  const std::vector<LocalMount> mounts = local_mounts(spec, *pod.volumes, env);
  const MountMethod method = mounts.empty() || !container_runtime_.empty() ? MountMethod::Paths : mount_method_;
  c.config_error = config_error;
  if (!config_error.empty()) return;
  // Networking: the pod's containerPorts get local ports; the names of the namespace's Services
  // become 127.0.0.1 and their ports the local ports of the pods they select (LocalPeer).
  if (pod.ports.empty())
    for (const char* list : {"initContainers", "containers"})
      for (const json::object* ct : containers_of(podobj, list))
        if (const json::value* ps = ct->if_contains("ports"); ps && ps->is_array())
          for (const auto& port : ps->as_array()) {
            const auto n = util::int_of(port.is_object() ? &port.as_object() : nullptr, "containerPort", 0);
            if (n > 0 && n < 65536) pod.ports[static_cast<int>(n)] = local_port_locked(pod.key, static_cast<int>(n));
          }
  {
    std::map<std::string, std::string> original;
    for (std::size_t i = base; i < env.size(); ++i) original[var_name(env[i])] = env[i].substr(env[i].find('=') + 1);
    for (std::size_t i = base; i < env.size(); ++i) {
      const std::string name = var_name(env[i]);
      std::string value = rewrite_peer_addresses(env[i].substr(name.size() + 1), peers);
      if (name.size() > 5 && name.compare(name.size() - 5, 5, "_PORT") == 0) {
        // X_PORT beside an X_ADDR naming a peer (MASTER_ADDR / MASTER_PORT): that peer's local port
        // (not this pod's own, though it may declare the same containerPort); else this pod's own.
        bool peer_port = false;
        if (auto addr = original.find(name.substr(0, name.size() - 5) + "_ADDR"); addr != original.end())
          for (const auto& peer : peers)
            if (std::find(peer.names.begin(), peer.names.end(), addr->second) != peer.names.end())
              if (std::all_of(value.begin(), value.end(), [](char ch) { return std::isdigit(ch); }) && !value.empty() &&
                  value.size() < 6)
                if (auto it = peer.ports.find(std::stoi(value)); it != peer.ports.end()) {
                  value = std::to_string(it->second);
                  peer_port = true;
                }
        if (!peer_port) value = rewrite_own_ports(value, pod.ports);
      }
      env[i] = name + "=" + value;
    }
  }  // waits, as the kubelet's container does, and is tried again
  // mpi-operator's launcher (K_MPI_JOB_ROLE=launcher): mpirun's remote shell is gpupool-rsh, which
  // runs the command in the worker pod the hostfile names (its env, directory, mount namespace)
  // instead of ssh to it; orted stays attached to it (no daemon outlives the launcher) and the
  // launcher starts every orted itself (no tree spawn). Set only where the template has not.
  const bool mpi_launcher = container_runtime_.empty() && env_is(env, "K_MPI_JOB_ROLE", "launcher");
  const auto set_unless_set = [&env](const std::string& k, const std::string& v) {
    if (std::none_of(env.begin(), env.end(), [&k](const std::string& e) { return var_name(e) == k; }))
      env.push_back(k + "=" + v);
  };
  // The service variables, where the container does not define the name itself (local already:
  // not rewritten again).
  for (const auto& kv : service_env) set_unless_set(var_name(kv), kv.substr(var_name(kv).size() + 1));
  if (mpi_launcher)
    for (const auto& [k, v] :
         std::vector<std::pair<std::string, std::string>>{{"OMPI_MCA_plm_rsh_agent", rsh_agent()},
                                                          {"OMPI_MCA_orte_leave_session_attached", "1"},
                                                          {"OMPI_MCA_plm_rsh_no_tree_spawn", "1"},
                                                          {"I_MPI_HYDRA_BOOTSTRAP_EXEC", rsh_agent()},
                                                          {"HYDRA_LAUNCHER_EXEC", rsh_agent()}})
      set_unless_set(k, v);
  // On this machine, mpirun and orted (which gpupool-rsh runs with the worker's env) probe the X
  // displays :0 to :9 for GPUs through hwloc's gl component, over TCP to 127.0.0.1:6000-6009; a
  // local process listening on one of those ports (TensorBoard's 6006 is display :6) never answers
  // the X handshake and the job hangs. In a container there is no such neighbour; here the
  // component is left out (hwloc's HWLOC_COMPONENTS, "-name" excludes one).
  if (container_runtime_.empty() && (mpi_launcher || env_is(env, "K_MPI_JOB_ROLE", "worker")))
    set_unless_set("HWLOC_COMPONENTS", "-gl");
  std::vector<std::string> argv;
  for (const char* key : {"command", "args"})
    for (const auto& a : string_list(spec, key))
      argv.push_back(rewrite_own_ports(rewrite_peer_addresses(expand_env_refs(a, env), peers), pod.ports));
  // mpi-operator's worker runs `/usr/sbin/sshd -De` for the launcher to reach it: here a process
  // that waits until the pod goes stands in for it (gpupool-rsh reaches the pod instead of ssh).
  c.stand_in = container_runtime_.empty() && env_is(env, "K_MPI_JOB_ROLE", "worker") &&
               argv == std::vector<std::string>{"/usr/sbin/sshd", "-De"};
  if (c.stand_in) argv = {"sleep", "infinity"};
  std::string dir = pod.dir;
  const std::string wd = string_of(&spec, "workingDir");
  c.plan.reset();
  if (!container_runtime_.empty()) {
    // RunMode::Container: the image runs, with the env (peer addresses rewritten) and the volumes.
    const std::size_t ncmd = string_list(spec, "command").size();
    json::object rewritten = spec;
    json::array cmd, args;
    for (std::size_t i = 0; i < argv.size(); ++i) (i < ncmd ? cmd : args).emplace_back(argv[i]);
    rewritten["command"] = std::move(cmd);
    rewritten["args"] = std::move(args);
    argv = container_run_argv(
        container_runtime_, fmt::format("gpupool-{}-{}-{}", util::namespace_of(podobj), util::name_of(podobj), c.name),
        rewritten, env, mounts);
  } else if (method == MountMethod::Namespace || method == MountMethod::UserNamespace) {
    const std::string new_root = pod.dir + "/.root-" + c.name;
    fs::create_directories(new_root);
    c.plan = plan_mounts(mounts, new_root, method == MountMethod::UserNamespace);
    // The workingDir, when it lies on a volume or exists on this machine (else the pod's directory).
    bool on_volume = false;
    for (const auto& m : mounts) on_volume = on_volume || wd == m.target || wd.rfind(m.target + "/", 0) == 0;
    if (!wd.empty() && (on_volume || fs::is_directory(wd))) dir = wd;
  } else {
    for (auto& a : argv) a = rewrite_mount_paths(a, mounts);
    for (std::size_t i = base; i < env.size(); ++i) env[i] = rewrite_mount_paths(env[i], mounts);
    if (const std::string local = rewrite_mount_paths(wd, mounts); !wd.empty() && fs::is_directory(local)) dir = local;
  }
  c.env = env;
  c.dir = dir;
  ++c.attempt;
  fs::create_directories(pod.dir + "/logs");
  const std::string log = log_path(pod.dir, c.name, c.attempt);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  std::string error;
  const pid_t pid = argv.empty() ? -1 : spawn_on_spawner(argv, dir, env, fd, error, c.plan ? &*c.plan : nullptr);
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
  // The pod's DNS names lead gpupool-rsh to its first container (mpi-operator's Containers[0]).
  if (const auto first = containers_of(podobj); !c.init && !first.empty() && string_of(first[0], "name") == c.name) {
    const auto names = pod_dns_names(podobj);
    if (!names.empty() && c.plan && c.plan->user_namespace) {
      // A process in another user namespace may not read /proc/PID/environ: gpupool-rsh reads this
      // copy (owner-only, beside the pod's secret volumes) instead.
      const std::string path = pod.dir + "/.gpupool-rsh.env";
      const int efd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (efd >= 0) {
        for (const auto& kv : env) (void)!::write(efd, kv.c_str(), kv.size() + 1);  // NUL-separated
        ::close(efd);
      }
    }
    for (const auto& name : names) {
      const std::string path = root_ + "/hosts/" + name, tmp = path + ".tmp";
      std::ofstream(tmp, std::ios::trunc) << pid << ' ' << pod.dir << '\n';
      std::error_code ec;
      fs::rename(tmp, path, ec);
      if (std::find(pod.hosts.begin(), pod.hosts.end(), name) == pod.hosts.end()) pod.hosts.push_back(name);
    }
  }
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
    slot->dir = pod_dir(pod);
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
    start(p, c, pod, s, now);
    if (!c.config_error.empty()) {  // the kubelet's next sync tries again
      next_due = next_due ? std::min(*next_due, now + 10s) : now + 10s;
      return;
    }
    started_commands.push_back(c.stand_in ? "sleep infinity` in place of `" + shell_join(s) +
                                                "` (mpi-operator's worker sshd; mpirun reaches this pod through "
                                                "gpupool-rsh),"
                                          : shell_join(s) + "`");
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
  write_addresses(status, where, true);
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
    } else if (!c.config_error.empty()) {
      cs["state"] = json::object{
          {"waiting", json::object{{"reason", "CreateContainerConfigError"}, {"message", c.config_error}}}};
      cs["ready"] = false;
      cs["started"] = false;
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
  auto cond = [&](const char* type, bool ok, const std::string& reason = {}, const std::string& message = {}) {
    return pod_condition(type, ok, reason, message, now);
  };
  json::array conditions;
  if (const json::value* v = old_status ? old_status->if_contains("conditions") : nullptr; v && v->is_array())
    conditions = v->as_array();
  // set_condition keeps lastTransitionTime when the status does not change.
  auto set = [&](json::object c) {
    if (const json::object* old = util::find_condition(&conditions, string_of(&c, "type")))
      if (string_of(old, "status") == string_of(&c, "status")) c["lastTransitionTime"] = old->at("lastTransitionTime");
    util::set_condition(conditions, c);
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
          container_runtime_.empty()
              ? fmt::format("Run mode local: image not pulled or run; started `{} as a local process in {}", command,
                            p.dir)
              : fmt::format("Run mode container: started `{} in the image with {}", command, container_runtime_),
          "kubelet", {}, std::nullopt);
  (void)first;
  if (old_status && util::json_equal(*old_status, status)) return std::nullopt;
  return status;
}

void LocalRuntime::forget(const std::string& key, std::chrono::seconds grace,
                          std::function<void(const ExitCodes&)> stopped) {
  std::unique_lock lk(mu_);
  auto it = pods_.find(key);
  if (it == pods_.end()) {
    lk.unlock();
    if (stopped) stopped({});
    return;
  }
  const std::shared_ptr<Pod> pod = it->second;
  // What each container that has run ended with (mu_ held): the exits the kubelet reports in the
  // pod's terminal status (convertToAPIContainerStatuses reads them from the runtime).
  auto exit_codes = [pod] {
    ExitCodes codes;
    for (const auto* list : {&pod->inits, &pod->mains})
      for (const auto& c : *list)
        if (c.finished && !c.running && c.attempt >= 0) codes[c.name] = c.exit_code;
    return codes;
  };
  std::vector<pid_t> groups;
  for (auto* list : {&pod->inits, &pod->mains})
    for (auto& c : *list)
      if (c.running && c.pid > 0) groups.push_back(c.pid);
  for (const auto& h : pod->hosts) {
    std::error_code ec;
    fs::remove(root_ + "/hosts/" + h, ec);
  }
  pods_.erase(it);
  if (groups.empty()) {
    const ExitCodes codes = exit_codes();
    lk.unlock();
    if (stopped) stopped(codes);
    return;
  }
  // Each group's reaper records its leader's exit in the pod, found here by pid.
  for (pid_t g : groups) forgotten_[g] = pod;
  // The last group's thread to finish reports the pod stopped.
  auto left = std::make_shared<std::atomic<std::size_t>>(groups.size());
  for (pid_t g : groups) {
    ::kill(-g, SIGTERM);
    // SIGKILL after the grace period unless the group leader has gone (pidfd readable) first.
    threads_.emplace_back([this, g, grace, left, stopped, exit_codes] {
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
      // The leader's exit status, once its reaper has it (it ends at once now, if not before).
      ExitCodes codes;
      {
        std::unique_lock l(mu_);
        stop_cv_.wait(l, [&] { return stopping_ || !forgotten_.contains(g); });
        if (stopping_) return;
        if (left->fetch_sub(1) != 1 || !stopped) return;
        codes = exit_codes();
      }
      stopped(codes);
    });
  }
}

std::optional<std::vector<std::string>> LocalRuntime::log_lines(const json::object& pod, const std::string& container,
                                                                bool previous) const {
  const std::string dir = pod_dir(pod);
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
      if (c.name == container && c.attempt >= 0) return ExecContext{c.dir, c.env, c.plan};
  return std::nullopt;
}

}  // namespace gpupool::embedded

namespace gpupool {

int run_exec_locally(const ExecRequest& r, const std::string& dir, const std::vector<std::string>& env, bool* hung_up) {
  return embedded::run_exec_in(r, dir, env, nullptr, hung_up);
}

}  // namespace gpupool

namespace gpupool::embedded {

int run_exec_in(const ExecRequest& r, const std::string& dir, const std::vector<std::string>& env,
                const MountPlan* plan, bool* hung_up) {
  if (r.command.empty()) throw Error("no command given");
  std::vector<std::string> environment = env;
  if (environment.empty())
    for (char** e = environ; e && *e; ++e) environment.emplace_back(*e);
  std::string error;
  const int err = r.stderr_fd >= 0 ? r.stderr_fd : (r.tty ? r.stdout_fd : -1);
  const pid_t pid = spawn(r.command, dir, environment, r.stdin_fd, r.stdout_fd, err, error, plan);
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
  return exit_code_of(status);
}

}  // namespace gpupool::embedded

namespace gpupool::embedded {

namespace {

class LocalStreams : public StreamHandler {
 public:
  explicit LocalStreams(const LocalRuntime& runtime) : runtime_(runtime) {}
  int exec(const ExecRequest& r) override {
    auto ctx = runtime_.exec_context(r.pod.namespace_name + "/" + r.pod.name, r.container);
    if (!ctx) throw Error(fmt::format("container {} of pod {} is not running locally", r.container, r.pod.name));
    return run_exec_in(r, ctx->dir, ctx->env, ctx->plan ? &*ctx->plan : nullptr);
  }
  int port_forward(const PodTarget& pod, int port) override {
    const auto local = runtime_.local_port(pod.namespace_name + "/" + pod.name, port);
    if (!local) throw Error(fmt::format("pod {} is not running locally", pod.name));
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(*local));
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      const int e = errno;
      if (fd >= 0) ::close(fd);
      // The kubelet's wording (portforward: dial tcp4 127.0.0.1:PORT: connect: connection refused).
      throw Error(fmt::format("dial tcp4 127.0.0.1:{}: connect: {}", port, std::strerror(e)));
    }
    return fd;
  }

 private:
  const LocalRuntime& runtime_;
};

}  // namespace

std::shared_ptr<StreamHandler> local_stream_handler(const LocalRuntime& runtime) {
  return std::make_shared<LocalStreams>(runtime);
}

}  // namespace gpupool::embedded
