// The fixture of the RunMode::Local tests: a store, a kubelet running pods as local processes, the
// seed's nodes, and waits bounded by store changes (never by wall-clock sleeps).
#pragma once

#include <doctest/doctest.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

#include "embedded/kubelet.hpp"
#include "embedded/local_runtime.hpp"
#include "embedded/store.hpp"
#include "gpupool/topology.hpp"

namespace local_test {

using namespace gpupool::embedded;
using namespace std::chrono_literals;
namespace json = boost::json;

inline json::object parse_obj(std::string_view text) { return json::parse(text).as_object(); }

struct LocalCluster {
  std::string root;
  Clock clock = Clock::manual();
  Store store;
  const ResourceType& pods = store.type("", "pods");
  Kubelet kubelet{store, clock, KubeletOptions{}};
  // Every committed change bumps `changes`: waits are on it, bounded, never on wall-clock sleeps.
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t changes = 0;
  std::uint64_t subscription = 0;

  explicit LocalCluster(Store::Options options = {}) : store(clock, std::move(options)) {
    char tmpl[] = "/tmp/gpupool-local-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    root = tmpl;
    kubelet.run_locally(root, true);
    subscription = store.subscribe([this](const WatchEvent&) {
      std::lock_guard lk(mu);
      ++changes;
      cv.notify_all();
    });
    store.create(store.type("", "namespaces"), "", parse_obj(R"({"metadata":{"name":"default"}})"));
    for (const auto& n : gpupool::Topology::builtin("seed").nodes)
      store.create(store.type("", "nodes"), "", n.to_node_object(clock.now()));
  }
  ~LocalCluster() {
    store.unsubscribe(subscription);
    kubelet.stop_local();
  }

  json::object pod(std::string_view name) const { return store.get(pods, "default", name); }
  std::string phase(std::string_view name) const { return field_value(pod(name), "status.phase"); }

  /// Creates a pod bound to the seed's .230 node: `spec` is the rest of the spec's JSON.
  void run(std::string_view name, const std::string& spec, const std::string& restart = "Never") {
    store.create(
        pods, "default",
        parse_obj(R"({"metadata":{"name":")" + std::string(name) +
                  R"(","labels":{"app":"demo"}},"spec":{"nodeName":"cn-beijing.192.168.3.230","restartPolicy":")" +
                  restart + R"(",)" + spec + "}}"));
  }

  /// Waits (at most 30 s) until `pred` holds, re-checking after every change in the store, and
  /// every 20 ms for what no store event announces (a process's log lines, files it writes).
  template <class Pred>
  bool wait(Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
      std::uint64_t seen;
      {
        std::lock_guard lk(mu);
        seen = changes;
      }
      if (pred()) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::unique_lock lk(mu);
      cv.wait_until(lk, std::min(deadline, std::chrono::steady_clock::now() + 20ms), [&] { return changes != seen; });
    }
  }
  bool wait_phase(std::string_view name, std::string_view phase_wanted) {
    return wait([&] { return phase(name) == phase_wanted; });
  }
  std::string log(std::string_view name, LogOptions o = {}) { return kubelet.logs("default", std::string(name), o); }
};

inline std::string container_spec(const std::string& command_json) {
  return R"("containers":[{"name":"main","image":"python:3.11",)" + command_json + "}]";
}

/// Whether `name` is an executable on $PATH.
inline bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (std::size_t i = 0; i <= dirs.size();) {
    const std::size_t j = std::min(dirs.find(':', i), dirs.size());
    if (j > i && ::access((dirs.substr(i, j - i) + "/" + name).c_str(), X_OK) == 0) return true;
    i = j + 1;
  }
  return false;
}

// Whether this machine lets a process make a user namespace (unprivileged ones may be turned off).
inline bool userns_allowed() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(::unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 ? 0 : 1);
  int status = 1;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// Sets $GPUPOOL_LOCAL_MOUNTS for one LocalCluster's life (the runtime reads it when it starts).
struct MountsEnv {
  std::optional<std::string> old;
  explicit MountsEnv(const char* method) {
    if (const char* e = std::getenv("GPUPOOL_LOCAL_MOUNTS")) old = e;
    ::setenv("GPUPOOL_LOCAL_MOUNTS", method, 1);
  }
  ~MountsEnv() {
    if (old)
      ::setenv("GPUPOOL_LOCAL_MOUNTS", old->c_str(), 1);
    else
      ::unsetenv("GPUPOOL_LOCAL_MOUNTS");
  }
  MountsEnv(const MountsEnv&) = delete;
  MountsEnv& operator=(const MountsEnv&) = delete;
};

inline bool has_event(Store& store, std::string_view reason, std::string_view message_part) {
  for (const auto& e : store.list(store.type("", "events"), "default").items)
    if (field_value(*e, "reason") == reason && field_value(*e, "message").find(message_part) != std::string::npos)
      return true;
  return false;
}

}  // namespace local_test
