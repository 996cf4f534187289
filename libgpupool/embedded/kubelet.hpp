// embedded/kubelet.hpp — the simulated kubelet: runs bound pods on the embedded cluster's clock.
//
// Every pod bound to a node (spec.nodeName) goes Pending (ContainerCreating) -> Running ->
// Succeeded/Failed exactly as a kubelet reports it in status (phase, conditions Initialized /
// ContainersReady / Ready / PodReadyToStartContainers, hostIP = the node's InternalIP, podIP,
// startTime, containerStatuses with waiting/running/terminated states, restartCount, lastState).
// How long a container "runs" and how it exits are set per pod by annotations:
//   gpupool.io/simulate-startup:   "2s"   time spent in ContainerCreating (default Options::startup)
//   gpupool.io/simulate-duration:  "30s"  run time of each container start ("forever": never exits)
//   gpupool.io/simulate-exit-code: "1"    exit code when the run time is over (default 0)
// A node annotated gpupool.io/simulate-kubelet: "stopped" has no kubelet: its pods are neither run
// nor deleted once marked for deletion (they stay Pending, or Terminating).
// Without a duration, pods with restartPolicy Always (Deployments) run forever and the others
// (Jobs, Kubeflow replicas) run Options::batch_run_time. restartPolicy is honoured: Always restarts
// every exit, OnFailure restarts non-zero exits (restartCount, lastState.terminated), Never stops.
// Nothing here reads wall-clock time: transitions happen when sync() runs at or after their time.
//
// Logs are a pure function of the pod and the clock: the command line at start, a progress line
// every Options::log_interval, and an exit line; pods/log options (container, previous, tailLines,
// sinceSeconds, timestamps, limitBytes) and the API server's errors are applied by pod_log().
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "embedded/clock.hpp"

namespace gpupool::embedded {

class Store;
class LocalRuntime;
struct WatchEvent;
namespace json = boost::json;

struct KubeletOptions {
  Clock::duration startup = std::chrono::seconds(1);
  std::optional<Clock::duration> batch_run_time = std::chrono::minutes(10);  ///< nullopt: forever
  Clock::duration log_interval = std::chrono::seconds(10);
};

/// What a pod's annotations (and the options) say about its simulated run.
struct PodSimulation {
  Clock::duration startup{};
  std::optional<Clock::duration> run_time;  ///< nullopt: runs until deleted
  int exit_code = 0;
};
/// Reads the annotations; a malformed annotation throws StatusError 422 naming it (the kubelet
/// admission of the embedded cluster rejects such pods at create time).
PodSimulation simulation_of(const json::object& pod, const KubeletOptions& options);
/// Validates the gpupool.io/simulate-* annotations of a pod (for an admission plugin).
void validate_simulation_annotations(const json::object& pod);

/// Where the kubelet runs the pod.
struct NodeAddress {
  std::string node_name;
  std::string host_ip;  ///< the node's InternalIP
  std::string pod_ip;   ///< allocated by the caller (== host_ip for hostNetwork pods)
};

/// The status the kubelet reports for `pod` at `now` (pure). `pod` must be bound. nullopt when the
/// status it already has is what the kubelet would write.
std::optional<json::object> kubelet_status(const json::object& pod, const NodeAddress& where, Clock::time_point now,
                                           const KubeletOptions& options);
/// When kubelet_status() will next change something for this pod (nullopt: never, e.g. a finished
/// pod or one running forever).
std::optional<Clock::time_point> next_transition(const json::object& pod, const KubeletOptions& options);

/// One line a container printed.
struct LogLine {
  Clock::time_point time;
  std::string text;
};

/// pods/log query parameters.
struct LogOptions {
  std::string container;  ///< "" : the only container (an error when there are several)
  bool previous = false;
  std::optional<std::int64_t> tail_lines;
  std::optional<std::int64_t> since_seconds;
  std::optional<std::int64_t> limit_bytes;
  bool timestamps = false;
};

/// The lines of one container attempt up to `now` (pure). Throws StatusError 400 with the API
/// server's / kubelet's wording for an unknown container, a container that has not started, or
/// `previous` without a terminated previous attempt.
std::vector<LogLine> container_log_lines(const json::object& pod, const LogOptions& options, Clock::time_point now,
                                         const KubeletOptions& kubelet_options);
/// The body of GET pods/{name}/log: the lines after tailLines/sinceSeconds, each "\n"-terminated,
/// prefixed with an RFC 3339 nano timestamp when asked, cut at limitBytes.
std::string pod_log(const json::object& pod, const LogOptions& options, Clock::time_point now,
                    const KubeletOptions& kubelet_options);
/// One line as the log endpoint prints it.
std::string format_log_line(const LogLine& line, bool timestamps);

// Pieces of the kubelet's status shared by the simulated and the local runtime.
std::optional<Clock::time_point> time_at(const json::object* o, std::string_view key);
/// spec.restartPolicy, "Always" when unset.
std::string restart_policy(const json::object& pod);
/// Whether a container that exited with `exit_code` is restarted under `policy`.
bool restarts_after(const std::string& policy, int exit_code);
/// A terminated container's reason for its exit code: "Completed" for 0, else "Error".
std::string terminated_reason(int exit_code);
/// spec.containers (or spec.initContainers with key "initContainers").
std::vector<const json::object*> containers_of(const json::object& pod, std::string_view key = "containers");
/// A stable containerd-style ID of one attempt of a container.
std::string container_id(const json::object& pod, const std::string& container, std::int64_t attempt);
/// status.qosClass (pkg/apis/core/helper/qos GetPodQOS).
std::string qos_class(const json::object& pod);
/// The addresses the kubelet reports in `status`: hostIP and hostIPs from the node's InternalIP,
/// and with `pod_ip` podIP and podIPs; none when the node has no address (its kubelet lists no
/// host IP, and the status strategy refuses an empty one).
void write_addresses(json::object& status, const NodeAddress& where, bool pod_ip);
/// command + args as a shell would show them ("(entrypoint of IMAGE)" when both are empty).
std::string shell_join(const json::object& container);
/// A pod condition as the kubelet writes it (lastProbeTime null; reason/message when not empty).
json::object pod_condition(const char* type, bool ok, const std::string& reason, const std::string& message,
                           Clock::time_point at);
/// Orders the kubelet's conditions as it lists them; PodScheduled (not the kubelet's) last.
void order_pod_conditions(json::array& conditions);
/// Names as Go prints a []string: "[a b]".
std::string go_slice(const std::vector<std::string>& names);

/// The kubelets of every node, driven by the store's events and by sync().
class Kubelet {
 public:
  /// Subscribes to `store`. Bound pods found there already are picked up by the first sync().
  Kubelet(Store& store, const Clock& clock, KubeletOptions options = {});
  ~Kubelet();
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;

  /// Applies every transition due at clock.now() (call after advancing a manual clock; call
  /// periodically with a real one). Returns the number of pod status writes.
  std::size_t sync();
  /// The earliest pending transition, if any (lets a driver sleep until then).
  std::optional<Clock::time_point> next_due() const;

  /// GET pods/{name}/log.
  std::string logs(const std::string& ns, const std::string& pod, const LogOptions& options) const;

  /// Follow: `on_line` receives each new line (formatted, "\n"-terminated) as the clock makes the
  /// container print it (from sync()), `on_end` once the container has terminated or the pod is
  /// gone. Lines already printed are NOT replayed (call logs() first). Returns an id for unfollow().
  using FollowId = std::uint64_t;
  FollowId follow(const std::string& ns, const std::string& pod, const LogOptions& options,
                  std::function<void(const std::string&)> on_line, std::function<void()> on_end);
  void unfollow(FollowId id);

  const KubeletOptions& options() const noexcept { return options_; }

  /// RunMode::Local: from now on containers run as local processes (see local_runtime.hpp) under
  /// `root` (removed when the kubelet goes if `own_root`), instead of being simulated.
  void run_locally(const std::string& root, bool own_root, const std::string& container_runtime = "");
  /// Local mode: kills every process (the cluster stops); nothing starts afterwards.
  void stop_local();
  /// The local runtime, or null when containers are simulated.
  const LocalRuntime* local_runtime() const noexcept { return local_.get(); }
  LocalRuntime* local_runtime() noexcept { return local_.get(); }

 private:
  struct Follower;
  void on_event(const WatchEvent& e);
  void schedule(const json::object& pod);
  void terminate(const json::object& pod);
  std::string pod_ip_for(const std::string& node, const std::string& key);
  void feed_followers();
  std::vector<LogLine> lines_of(const json::object& pod, const LogOptions& options) const;

  Store& store_;
  const Clock& clock_;
  KubeletOptions options_;
  std::uint64_t subscription_ = 0;
  mutable std::mutex mu_;
  std::set<std::pair<Clock::time_point, std::string>> due_;  // (when, "ns/name")
  std::map<std::string, Clock::time_point> due_of_;          // "ns/name" -> when
  std::map<std::string, std::uint32_t> node_index_;
  std::map<std::string, std::uint32_t> next_ip_;
  std::map<std::string, std::string> pod_ips_;  // "ns/name" -> IP
  std::map<FollowId, std::shared_ptr<Follower>> followers_;
  FollowId next_follow_ = 1;
  // Local mode: the runtime and, per pod it has seen, its next restart time (nullopt: none; a
  // process exit makes the pod due at once).
  std::unique_ptr<LocalRuntime> local_;
  std::map<std::string, std::optional<Clock::time_point>> local_due_;
  std::set<std::string> terminating_;  // pods being stopped for a graceful deletion (terminate())
};

}  // namespace gpupool::embedded
