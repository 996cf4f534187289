// embedded/local_runtime.hpp — the container runtime of RunMode::Local: each container's
// command + args runs as a child process of this process, for real.
//
// Per pod: a working directory `<root>/pods/<namespace>/<name>.<uid>` (the container's workingDir
// when that exists on this machine or on a volume), the container's env (literal values, envFrom,
// the downward-API fieldRefs, secretKeyRef / configMapKeyRef from the store), its volumes as local
// directories seen at their mountPath (local_mounts.hpp), stdout + stderr appended to `<pod
// dir>/logs/<container>.<attempt>.log`, which pods/log serves. Init containers run one after the other before the main
// containers; the exit code becomes the container's terminated state and restartPolicy Never / OnFailure / Always is
// honoured with the kubelet's crash-loop backoff (10s doubling to 5m) on the cluster's clock.
// Each process leads its own process group and gets SIGKILL when this process dies
// (PR_SET_PDEATHSIG); forget() (the pod was deleted) sends SIGTERM to the group, then SIGKILL after
// the pod's grace period, and hands back what each process exited with (the kubelet's terminal
// status reports it). The image is never pulled or run: an event LocalProcess on the pod says so.
#pragma once

#include <sys/types.h>
#include <boost/json.hpp>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "embedded/clock.hpp"
#include "embedded/kubelet.hpp"
#include "embedded/local_mounts.hpp"
#include "gpupool/embedded.hpp"

namespace gpupool::embedded {

class Store;
namespace json = boost::json;

/// A Service of the pod's namespace as local peers reach it: its names ("svc", "svc.ns",
/// "svc.ns.svc", "svc.ns.svc.cluster.local") and its ports mapped to the local ports of the pod it
/// selects.
struct LocalPeer {
  std::vector<std::string> names;
  std::map<int, int> ports;  ///< Service port -> local port
};

class LocalRuntime {
 public:
  /// `root`: where pod directories go (created); `own_root`: removed when the runtime goes.
  /// `on_exit(key)` is called (from a reaper thread) when a process of pod "ns/name" has ended.
  /// `container_runtime`: RunMode::Container's podman or docker ("": RunMode::Local).
  LocalRuntime(Store& store, const Clock& clock, std::string root, bool own_root,
               std::function<void(const std::string&)> on_exit, std::string container_runtime = "");
  ~LocalRuntime();  ///< shutdown()
  /// Every process group gets SIGKILL and is reaped; nothing starts afterwards. Idempotent.
  void shutdown();
  LocalRuntime(const LocalRuntime&) = delete;
  LocalRuntime& operator=(const LocalRuntime&) = delete;

  /// Drives the pod's processes (starts, restarts) and returns its status at `now` (nullopt: the
  /// status it has is right). `next_due` is set to the next restart time, if any.
  std::optional<json::object> status(const json::object& pod, const NodeAddress& where, Clock::time_point now,
                                     std::optional<Clock::time_point>& next_due);
  /// Container name -> the exit code its last process ended with (exit_code_of: the code, or 128 +
  /// the signal that killed it).
  using ExitCodes = std::map<std::string, int>;
  /// The pod is gone or being deleted: SIGTERM to its process groups, SIGKILL after `grace`.
  /// `stopped` (if set) is called once every group has ended or been killed and its leader reaped:
  /// at once when none runs, else from the thread that waited (never after shutdown() began). It
  /// gets the exit code of each of the pod's containers that has run and ended (those it stopped
  /// included: 143 for one SIGTERM killed, 137 for one SIGKILL killed, or what it exited with).
  void forget(const std::string& key, std::chrono::seconds grace, std::function<void(const ExitCodes&)> stopped = {});

  /// The lines a container attempt printed (the pod's log file), or nullopt when this pod never ran
  /// here. `previous`: the attempt before the current one.
  std::optional<std::vector<std::string>> log_lines(const json::object& pod, const std::string& container,
                                                    bool previous) const;

  /// The directory and environment a container of the pod runs with (for exec); nullopt when the
  /// pod is not running here.
  struct ExecContext {
    std::string dir;
    std::vector<std::string> env;   ///< "NAME=value"
    std::optional<MountPlan> plan;  ///< the container's mount namespace, re-created for the command
  };
  std::optional<ExecContext> exec_context(const std::string& key, const std::string& container) const;

  /// The local port the pod's `port` is reached on (its containerPort's mapping, or `port` itself),
  /// or nullopt when the pod does not run here. For port-forward.
  std::optional<int> local_port(const std::string& key, int port) const;
  /// The pod's containerPort -> local port map as JSON ({"23456":40211}), "" with no ports; the
  /// kubelet records it in the annotation gpupool.io/local-ports.
  std::string ports_annotation(const std::string& key) const;

  /// What the kubelet asks the API server for (TokenRequest) to fill a projected volume's
  /// serviceAccountToken source: the pod and the source ({audience, expirationSeconds, path});
  /// answers the token, or nullopt (the file is then left out). Set before pods start.
  using TokenRequester =
      std::function<std::optional<std::string>(const json::object& pod, const json::object& projection)>;
  void set_token_requester(TokenRequester r) { token_requester_ = std::move(r); }

  const std::string& root() const noexcept { return root_; }
  /// `<root>/bin/gpupool-rsh`: mpirun's remote shell for the MPIJob launchers (mpi_rsh_agent_script).
  std::string rsh_agent() const { return root_ + "/bin/gpupool-rsh"; }
  /// `<root>/pods/<namespace>/<name>.<uid>`: the pod's working directory, logs and emptyDirs.
  std::string pod_dir(const json::object& pod) const;
  /// How volumes appear at their mountPath (local_mounts.hpp); resolved at construction.
  MountMethod mount_method() const noexcept { return mount_method_; }

 private:
  struct Container;
  struct Pod;
  TokenRequester token_requester_;
  void start(Pod& pod, Container& c, const json::object& podobj, const json::object& spec, Clock::time_point now);
  void reap(const std::string& key, pid_t pid);
  int local_port_locked(const std::string& pod_key, int port);  // mu_ held
  std::vector<LocalPeer> peers_of(const json::object& pod);     // mu_ held
  // The service links of the pod's containers, as local addresses (mu_ held; service_env).
  std::vector<std::string> service_env_of(const json::object& pod, const std::vector<LocalPeer>& peers);
  /// A secretKeyRef / configMapKeyRef's value; nullopt with `error` set (unless optional) when missing.
  std::optional<std::string> key_of(const json::object& pod, const json::object& ref, bool secret,
                                    std::string& error) const;
  /// spawn() on the spawner thread: PR_SET_PDEATHSIG fires when the *thread* that forked a child
  /// ends, so every container is forked by one thread that lives as long as the runtime.
  pid_t spawn_on_spawner(const std::vector<std::string>& argv, const std::string& dir,
                         const std::vector<std::string>& env, int out_fd, std::string& error, const MountPlan* plan);

  Store& store_;
  const Clock& clock_;
  std::string root_;
  bool own_root_;
  std::function<void(const std::string&)> on_exit_;
  std::string container_runtime_;
  MountMethod mount_method_ = resolve_mount_method();
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Pod>> pods_;  // "ns/name"
  std::map<std::string, int> ports_;                  // "ns/pod/containerPort" -> local port
  std::vector<std::thread> threads_;                  // reapers and killers
  // Forgotten pods whose processes forget() stopped, by group leader, until their reaper has
  // recorded the exit.
  std::map<pid_t, std::shared_ptr<Pod>> forgotten_;
  bool stopping_ = false;
  std::condition_variable stop_cv_;  // shutdown() began, or a process of forgotten_ was reaped
  std::mutex spawn_mu_;
  std::condition_variable spawn_cv_;
  std::vector<std::function<void()>> spawn_queue_;
  bool spawn_stop_ = false;
  std::thread spawner_;
};

/// The downward-API value of `path` (metadata.name, metadata.namespace, metadata.uid,
/// metadata.labels['k'], metadata.annotations['k'], spec.nodeName, spec.serviceAccountName,
/// status.podIP, status.hostIP) for `pod` running at `where`; nullopt for other paths.
std::optional<std::string> downward_field(const json::object& pod, const NodeAddress& where, const std::string& path);

/// Expands $(VAR) references in a command or argument as the kubelet does (expansion.go):
/// defined names are replaced, $$ is a literal $, anything else stays as written.
std::string expand_env_refs(const std::string& in, const std::vector<std::string>& env);

/// The DNS names a pod gets from a headless Service named as its spec.subdomain (Kubernetes' pod
/// DNS: "<hostname>.<subdomain>", then ".<namespace>", ".svc", ".cluster.local"), most specific
/// last; none without both spec.hostname and spec.subdomain. RunMode::Local maps them to the pod:
/// 127.0.0.1 in env and args (peers_of) and the pod's process for gpupool-rsh.
std::vector<std::string> pod_dns_names(const json::object& pod);

/// RunMode::Local, MPIJob: the shell script mpirun uses as its remote shell (ssh's usage: options,
/// HOST, COMMAND...). HOST is looked up in `hosts_dir` (a file per DNS name holding "PID DIR" of the
/// pod's first container, written when it starts; retried once a second, 10 times, as
/// ConnectionAttempts=10); COMMAND runs through /bin/sh with that process's environment
/// (/proc/PID/environ), in its mount namespace, root and working directory (nsenter) — what sshd in
/// the worker container would give it. Where that namespace cannot be entered (both in user
/// namespaces), in the pod's directory DIR with its env; a process in another user namespace may not
/// read /proc/PID/environ, so with MountMethod::UserNamespace the runtime keeps that env in
/// DIR/.gpupool-rsh.env (mode 0600) for pods with DNS names.
std::string mpi_rsh_agent_script(const std::string& hosts_dir);

/// RunMode::Local: `text` with each peer name (a whole host name) replaced by 127.0.0.1, and
/// "name:port" by 127.0.0.1:<local port>, the longest name first.
std::string rewrite_peer_addresses(const std::string& text, const std::vector<LocalPeer>& peers);
/// RunMode::Local: a trailing port number of `text` ("6006", "--port=6006", "host:6006") that is one
/// of the pod's own containerPorts, replaced by its local port (containerPort -> local port).
std::string rewrite_own_ports(const std::string& text, const std::map<int, int>& ports);

/// RunMode::Container: the executable of podman (preferred) or docker found on $PATH, or "".
std::string find_container_runtime();
/// RunMode::Container: the argv that runs `container` of the pod with `runtime` (podman or docker):
/// `run --rm --network host --name NAME -e K=V... -v SRC:TARGET[:ro]... [-w DIR] [--entrypoint
/// JSON] IMAGE ARGS...`, with the container's command and args as given (already expanded). Kubernetes' command
/// replaces the image's ENTRYPOINT and args its CMD; the host network keeps the local peer addresses (127.0.0.1 and
/// local ports) valid.
std::vector<std::string> container_run_argv(const std::string& runtime, const std::string& name,
                                            const json::object& container, const std::vector<std::string>& env,
                                            const std::vector<LocalMount>& mounts);

/// Forks `argv` in its own process group (SIGKILL when this process dies), with the descriptors
/// (-1: /dev/null) as stdin/stdout/stderr, in `dir` with `env`. Returns the pid, or -1 with `error`
/// set as the container runtime words it (exec: "x": executable file not found in $PATH).
/// With `plan`, the child enters its mount namespace first (local_mounts.hpp) and `dir` is a path
/// inside it.
pid_t spawn(const std::vector<std::string>& argv, const std::string& dir, const std::vector<std::string>& env,
            int in_fd, int out_fd, int err_fd, std::string& error, const MountPlan* plan = nullptr);
/// run_exec_locally (embedded.hpp), in the mount namespace `plan` describes when given.
int run_exec_in(const ExecRequest& request, const std::string& dir, const std::vector<std::string>& env,
                const MountPlan* plan, bool* hung_up = nullptr);
/// A waitpid status as an exit code: the code, or 128 + the signal.
int exit_code_of(int status);

/// The StreamHandler of RunMode::Local: exec runs the argv in the pod's directory and env.
/// port-forward connects to the port on 127.0.0.1 (the pod's processes share this host's network).
std::shared_ptr<StreamHandler> local_stream_handler(const LocalRuntime& runtime);

}  // namespace gpupool::embedded
