// gpupool/embedded.hpp — a Kubernetes API server in your process, for notebooks, CI and tests.
//
//   gpupool::EmbeddedServer server({.users = {"alice", "bob"}, .topology = "seed"});
//   // kubectl --kubeconfig $(server.kubeconfig("alice")) get pods
//   server.advance(std::chrono::seconds(30));    // a manual clock: nothing waits for real time
//
// The server listens on 127.0.0.1 only, over HTTPS with a CA generated at start; it writes one
// kubeconfig for the admin (client certificate, group system:masters) and, per user, one with a
// bearer token and one with a client certificate; each user gets a namespace of its own name and
// may act only there. The real kubectl and the official Python client work against it unchanged.
// Faults (429/500/503/connection resets/latency) can be injected per verb, deterministically.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gpupool {

/// How often one verb fails. Rates are probabilities in [0, 1], tried in this order.
struct FaultRule {
  double too_many_requests = 0;          ///< 429 TooManyRequests with Retry-After
  double internal_error = 0;             ///< 500 InternalError
  double unavailable = 0;                ///< 503 ServiceUnavailable
  double connection_reset = 0;           ///< the connection is reset before any response
  std::chrono::milliseconds latency{0};  ///< added before every answer to this verb
  int retry_after_seconds = 1;
  /// The request is carried out, then the connection is reset before the answer is sent: the
  /// client cannot tell whether its write happened (the case idempotent retries must survive).
  double lost_response = 0;
};

/// Fault injection: off unless a rule is set. Keys are verbs: "get", "list", "watch", "create",
/// "update", "patch", "delete", "deletecollection", or "*" for every verb without its own rule.
struct FaultConfig {
  std::map<std::string, FaultRule> rules;
  std::uint64_t seed = 1;  ///< the same seed and request sequence give the same faults
};

struct FaultCounters {
  std::uint64_t requests = 0;  ///< requests seen (faulted or not)
  std::uint64_t too_many_requests = 0, internal_error = 0, unavailable = 0, connection_reset = 0, delayed = 0;
  std::uint64_t lost_response = 0;
  std::uint64_t total() const noexcept {
    return too_many_requests + internal_error + unavailable + connection_reset + lost_response;
  }
};

/// The pod a stream request is for (pods/exec, pods/attach, pods/portforward).
struct PodTarget {
  std::string namespace_name, name, uid, node_name;
};

/// One `exec` into a container. The descriptors belong to the server: the handler uses them
/// (typically dup2()s them into a child process) and must not close them; it keeps no copy
/// past its return.
struct ExecRequest {
  PodTarget pod;
  std::string container;             ///< already checked to be one of the pod's containers
  std::vector<std::string> command;  ///< argv, as the client sent it (may be empty)
  bool tty = false;
  int stdin_fd = -1;   ///< read end of the client's stdin; -1 when the client sends none; EOF when it closes
  int stdout_fd = -1;  ///< write end; -1 when the client did not ask for stdout
  int stderr_fd = -1;  ///< write end; -1 when the client did not ask for stderr (or with tty)
  /// Becomes readable (EOF) when the client has gone before the command ended (or the server
  /// stops): poll it alongside the command and stop the command then, so exec() returns.
  int hangup_fd = -1;
};

/// What the kubelet's container runtime does for the streaming subresources. Without one (the
/// default: the embedded kubelet only simulates containers) the server answers exec, attach and
/// port-forward as an API server whose kubelets cannot be reached does. A "run locally" mode
/// installs one that runs the command or reaches the port on this machine. Implementations are
/// called from the server's connection threads, several at once.
class StreamHandler {
 public:
  virtual ~StreamHandler() = default;
  /// Runs `request.command` in the container and returns its exit code (0..255) once it ended.
  /// Throws gpupool::Error when it cannot run it: the message goes back on the error channel.
  virtual int exec(const ExecRequest& request) = 0;
  /// A connected stream socket to `port` of the pod; the caller owns (and closes) it. Throws
  /// gpupool::Error when it cannot connect: the message goes back on the port's error stream.
  virtual int port_forward(const PodTarget& pod, int port) = 0;
};

/// How the embedded kubelet runs containers.
///  - Simulate (the default): nothing runs; pods move Pending -> Running -> Succeeded/Failed on
///    the cluster's clock, as the gpupool.io/simulate-* annotations say, with synthetic logs.
///  - Local: each container's command + args runs for real as a child process of this process
///    (never the image: nothing is pulled), with its env, a per-pod working directory, its output
///    as the pod's log and its exit code as the container state. Runs only what was submitted.
///  - Container: as Local, but each container runs its image with podman (or docker) from $PATH
///    (`podman run --network host` with the env and volumes); the server refuses to start when
///    neither is installed.
enum class RunMode { Simulate, Local, Container };
/// "simulate", "local" or "container"; anything else throws ValidationError naming `field`.
RunMode parse_run_mode(const std::string& text, const std::string& field = "run");
const char* to_string(RunMode mode) noexcept;

/// The reusable part of a StreamHandler that runs exec'd commands on this machine: runs
/// `request.command` as a child process in its own process group (killed if this process dies),
/// wired to the request's descriptors (stderr to stdout with a tty; /dev/null where absent), in `dir`
/// with `env` ("NAME=value"; empty: this process's environment). Kills the group when
/// request.hangup_fd becomes readable (then `*hung_up` is set). Returns the exit code, 128 + signal
/// when killed. Throws gpupool::Error naming the command when it cannot start (empty, not found).
int run_exec_locally(const ExecRequest& request, const std::string& dir, const std::vector<std::string>& env,
                     bool* hung_up = nullptr);

struct EmbeddedOptions {
  int port = 0;                      ///< 0: an ephemeral port
  std::vector<std::string> users{};  ///< each gets a namespace, a token and a client certificate
  std::string kubeconfig_dir{};      ///< where kubeconfigs go; empty: a fresh directory under /tmp
  std::string topology{};  ///< nodes to create: a built-in name ("seed", "iiis"), a file, or "none" / empty: no nodes
  std::string mpijob_version = "v1";  ///< kubeflow.org MPIJob served: "v1" or "v2beta1"
  bool manual_clock = true;           ///< true: time moves only by advance(); false: wall-clock time
  std::string server_version = "v1.32.0";
  /// A state file written by save_state(): when it exists, the cluster comes back from it (objects,
  /// taints, jobs) instead of from the topology, with the journal `<state_file>.log` of the writes
  /// committed after it. Every write is journaled durably before it is acknowledged. The caller
  /// keeps other processes out (EmbeddedSession does, with a lock file).
  std::string state_file{};
  /// Journal size (bytes) past which it is folded into the snapshot.
  std::uint64_t journal_limit = 64ull << 20;
  /// Scheduler names served besides "default-scheduler" and those of the built-in profiles.
  std::vector<std::string> scheduler_names{};
  /// Whether the Kubeflow operators run. false: MPIJob, TFJob and PyTorchJob are served and stored
  /// but nothing acts on them, as on a cluster with the CRDs installed and no operator.
  bool kubeflow_operators = true;
  /// kube-controller-manager's --terminated-pod-gc-threshold: past this many terminated pods
  /// (Succeeded or Failed) the pod garbage collector deletes the oldest; 0: never.
  std::int64_t terminated_pod_gc_threshold = 12500;
  /// Runs exec and port-forward for pods (see StreamHandler); null: none, as without kubelets.
  std::shared_ptr<StreamHandler> stream_handler{};
  /// false: exec and port-forward refuse WebSocket upgrades, as an API server before v1.30 (or with
  /// its TranslateStreamCloseWebsocketRequests / PortForwardWebsockets features off) does, so
  /// clients fall back to SPDY/3.1 (how tests exercise that fallback).
  bool websockets = true;
  /// Simulate (default) or Local (see RunMode). Local: pod directories and logs go under
  /// `<state_file's directory>/local`, or a temporary directory removed at stop without a state
  /// file; exec runs the command in the pod's directory and env unless stream_handler is set.
  RunMode run = RunMode::Simulate;
  /// Injected faults. (The last member: g++ 12 misreads the unwinding of its map past a later
  /// member's throwing initializer as a use before initialization.)
  FaultConfig faults{};
};

class EmbeddedServer {
 public:
  /// Starts serving before returning. Throws gpupool::Error when it cannot (port taken, ...).
  explicit EmbeddedServer(const EmbeddedOptions& options = {});
  ~EmbeddedServer();  ///< stop()
  EmbeddedServer(const EmbeddedServer&) = delete;
  EmbeddedServer& operator=(const EmbeddedServer&) = delete;

  /// Closes the listener and every connection (watches end); idempotent.
  void stop();

  std::string url() const;  ///< "https://127.0.0.1:<port>"
  int port() const;
  const std::string& ca_pem() const;  ///< the CA that signed the server certificate
  const std::string& kubeconfig_dir() const;
  std::string admin_kubeconfig() const;                        ///< path; client certificate in group system:masters
  std::string kubeconfig(const std::string& user) const;       ///< path; bearer token, namespace = user
  std::string cert_kubeconfig(const std::string& user) const;  ///< path; client certificate CN = user

  /// The cluster clock (creationTimestamp, ages, the simulated kubelet).
  std::chrono::system_clock::time_point now() const;
  /// Moves the clock (manual or not) forward and lets everything driven by it catch up.
  void advance(std::chrono::nanoseconds d);

  /// Cuts every streaming response in progress (watches, followed logs) mid-stream, as a dropped
  /// connection would; returns how many were cut.
  int disconnect_streams();
  /// Stops serving (every connection dropped, the port closed) and serves again on the same port
  /// with the same CA, credentials and objects, as an API server restarted over the same etcd.
  void restart();

  void set_faults(const FaultConfig& faults);
  FaultCounters fault_counters() const;

  /// Writes every object to `path` durably (a temporary file, fsync, rename); for the state_file
  /// itself, folds the journal into it.
  void save_state(const std::string& path) const;

 private:
  friend struct EmbeddedServerAccess;  // the library's in-process callers (libgpupool/embedded/server_store.hpp)
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpupool
