// One embedded cluster per topology, shared by every process on the machine (issue #16):
// `gpupool --embedded T` commands, `gpupool cluster serve`, kubectl and Python see the same objects.
//
// A topology's state lives in a private directory (0700; files 0600):
//   embedded-T.json        the snapshot          embedded-T.json.log   the journal of later writes
//   embedded-T.lock        held (flock) by the one process that owns the state now
//   embedded-T.endpoint    written by an owner that serves others: its pid, URL and kubeconfig
//   embedded-T/            that owner's kubeconfigs
//   embedded-T.run         the run mode last asked for (--run)   embedded-T.local/  RunMode::Local's files
// The owner either serves (cluster serve, Python's EmbeddedCluster(state=True)): others join it over
// HTTPS; or it runs one command in-process and lets go: others wait for the lock.
//
//   gpupool::EmbeddedSession s({.topology = "seed"});
//   auto cluster = gpupool::Cluster::connect({.kubeconfig = s.admin_kubeconfig()});
//   ...
//   s.close();  // an owner folds the journal into the snapshot and lets go of the lock
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "gpupool/embedded.hpp"

namespace gpupool {

/// The files of one topology's shared state.
struct EmbeddedStatePaths {
  /// $GPUPOOL_STATE_DIR, else $XDG_STATE_HOME/gpupool, else ~/.local/state/gpupool.
  static std::string default_dir();
  /// Paths for `topology` under `dir` (default_dir() when empty); creates the directory, 0700.
  static EmbeddedStatePaths of(const std::string& topology, const std::string& dir = "");

  std::string topology, dir, snapshot, lock, endpoint, kubeconfig_dir;
  /// RunMode::Local's pod directories, logs and volumes (embedded-T.local/), and the run mode the
  /// state was last started with (embedded-T.run).
  std::string local_dir, run_mode;
};

/// The run mode `gpupool --embedded T --run MODE` last asked for (so later commands without --run
/// keep it); Simulate when never asked.
RunMode remembered_run_mode(const EmbeddedStatePaths& paths);
void remember_run_mode(const EmbeddedStatePaths& paths, RunMode mode);

/// A process that serves a topology's state to others.
struct EmbeddedEndpoint {
  long pid = 0;
  std::string url;
  std::string admin_kubeconfig;
  std::string kubeconfig_dir;
};

/// The process serving `topology`'s state, if one is alive.
std::optional<EmbeddedEndpoint> running_embedded(const EmbeddedStatePaths& paths);

struct EmbeddedSessionOptions {
  std::string topology = "seed";  ///< a built-in name or a topology file
  std::string state_dir{};        ///< default: EmbeddedStatePaths::default_dir()
  /// true: own the state and serve it to other processes until close() (cluster serve). false: own
  /// it for this session's life without serving others. Either way, when another process serves
  /// it already, the session joins that one (or, without may_join, throws saying who serves it).
  bool serve = false;
  bool may_join = true;
  /// The in-process server's options when this session owns the state (topology, state_file and
  /// kubeconfig_dir are set by the session; with serve, kubeconfig_dir defaults to the state's).
  EmbeddedOptions server{};
  /// Told once, after wait_notice_after, while another process holds the state's lock
  /// ("waiting for the embedded cluster's lock held by pid N").
  std::function<void(const std::string&)> on_wait{};
  std::chrono::milliseconds wait_notice_after{1000};
};

class EmbeddedSession {
 public:
  /// Joins or takes the topology's state (waiting for the lock while another command holds it).
  /// Throws ConfigError for a corrupt state file (naming it and `gpupool cluster reset`).
  explicit EmbeddedSession(EmbeddedSessionOptions options);
  ~EmbeddedSession();  ///< close()
  EmbeddedSession(const EmbeddedSession&) = delete;
  EmbeddedSession& operator=(const EmbeddedSession&) = delete;

  bool joined() const;                   ///< true: another process serves the state
  EmbeddedServer* server();              ///< the in-process server (null when joined)
  std::string admin_kubeconfig() const;  ///< path of the serving process's admin kubeconfig
  std::string url() const;
  const EmbeddedStatePaths& paths() const;

  /// Owner: stops serving, folds the journal into the snapshot and releases the lock. Idempotent.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Stops the process serving `topology` (SIGTERM, then waits for it to let go of the lock, up to
/// `timeout_seconds`). Returns false when none was running.
bool stop_embedded(const EmbeddedStatePaths& paths, double timeout_seconds = 30);

/// Deletes the topology's state (the next session starts from the topology again). Throws Error
/// while a process serves it or holds its lock.
void reset_embedded(const EmbeddedStatePaths& paths);

}  // namespace gpupool
