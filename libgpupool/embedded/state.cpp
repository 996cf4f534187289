// EmbeddedSession: who owns a topology's shared state, and how the others reach it (issue #16).
#include "common/json_depth.hpp"
#include "embedded/server_store.hpp"
#include "gpupool/embedded_state.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "embedded/journal.hpp"
#include "gpupool/error.hpp"

namespace gpupool {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

/// A private directory: created 0700, and tightened to 0700 when it is ours and looser.
void make_private_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError(dir.string(), "", "cannot create the embedded cluster's state directory: " + ec.message());
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && st.st_uid == ::getuid() && (st.st_mode & 077) != 0) ::chmod(dir.c_str(), 0700);
}

bool pid_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

/// An open lock file; flock() on it. Closing the descriptor releases the lock (also on kill -9).
class LockFile {
 public:
  explicit LockFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0)
      throw ConfigError(path, "", std::string("cannot open the embedded cluster's lock: ") + std::strerror(errno));
  }
  ~LockFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

  bool try_lock() {
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0)
      if (errno != EINTR) return false;
    // The holder's pid, for those who wait.
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) { /* informational only */
    }
    return true;
  }
  void unlock() { ::flock(fd_, LOCK_UN); }
  long holder() const {
    char buf[32] = {};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    return n > 0 ? std::strtol(buf, nullptr, 10) : 0;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

/// Whether some process holds the lock now (takes and drops it when free).
bool lock_held(const std::string& path) {
  if (!fs::exists(path)) return false;
  LockFile probe(path);
  if (!probe.try_lock()) return true;
  probe.unlock();
  return false;
}

std::optional<EmbeddedEndpoint> read_endpoint(const std::string& path) {
  if (!fs::exists(path)) return std::nullopt;
  boost::system::error_code ec;
  json::value v = json::parse(embedded::read_file(path), ec, {}, deep_json());
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.as_object();
  EmbeddedEndpoint e;
  auto s = [&](const char* k) {
    const auto* x = o.if_contains(k);
    return x && x->is_string() ? std::string(x->as_string()) : std::string();
  };
  if (const auto* p = o.if_contains("pid"); p && p->is_int64()) e.pid = static_cast<long>(p->as_int64());
  e.url = s("url");
  e.admin_kubeconfig = s("adminKubeconfig");
  e.kubeconfig_dir = s("kubeconfigDir");
  if (e.url.empty() || e.admin_kubeconfig.empty()) return std::nullopt;
  return e;
}

}  // namespace

std::string EmbeddedStatePaths::default_dir() {
  if (const char* d = std::getenv("GPUPOOL_STATE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return (fs::path(x) / "gpupool").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".local/state/gpupool").string();
  return (fs::temp_directory_path() / ("gpupool-state-" + std::to_string(::getuid()))).string();
}

EmbeddedStatePaths EmbeddedStatePaths::of(const std::string& topology, const std::string& dir) {
  EmbeddedStatePaths p;
  p.topology = topology.empty() ? "none" : topology;
  p.dir = dir.empty() ? default_dir() : dir;
  make_private_dir(p.dir);
  std::string name = p.topology;
  for (char& c : name)
    if (c == '/' || c == '.') c = '_';
  const fs::path base = fs::path(p.dir) / ("embedded-" + name);
  p.snapshot = base.string() + ".json";
  p.lock = base.string() + ".lock";
  p.endpoint = base.string() + ".endpoint";
  p.kubeconfig_dir = base.string();
  p.local_dir = base.string() + ".local";
  p.run_mode = base.string() + ".run";
  return p;
}

std::string embedded_ca_file(const std::string& state_file) {
  // embedded-T.json -> embedded-T/ca.pem: beside the kubeconfigs (EmbeddedStatePaths::of's
  // kubeconfig_dir), the state's one private directory that holds keys, removed by a reset.
  const fs::path dir = fs::path(state_file).replace_extension("");
  make_private_dir(dir);
  return (dir / "ca.pem").string();
}

RunMode remembered_run_mode(const EmbeddedStatePaths& paths) {
  std::ifstream in(paths.run_mode);
  std::string text;
  if (!(in >> text)) return RunMode::Simulate;
  try {
    return parse_run_mode(text, paths.run_mode);
  } catch (const ValidationError&) {
    return RunMode::Simulate;  // a mode this version does not know: the default
  }
}

void remember_run_mode(const EmbeddedStatePaths& paths, RunMode mode) {
  if (remembered_run_mode(paths) == mode && fs::exists(paths.run_mode)) return;
  embedded::write_file_durably(paths.run_mode, std::string(to_string(mode)) + "\n");
}

std::optional<EmbeddedEndpoint> running_embedded(const EmbeddedStatePaths& paths) {
  auto e = read_endpoint(paths.endpoint);
  // The endpoint file of a process killed with -9 stays behind: it counts only while its process
  // lives and the state's lock is held.
  if (!e || !pid_alive(e->pid) || !lock_held(paths.lock)) return std::nullopt;
  return e;
}

struct EmbeddedSession::Impl {
  EmbeddedSessionOptions options;
  EmbeddedStatePaths paths;
  std::unique_ptr<LockFile> lock;
  std::unique_ptr<EmbeddedServer> server;
  std::optional<EmbeddedEndpoint> joined;
};

EmbeddedSession::EmbeddedSession(EmbeddedSessionOptions options) : impl_(std::make_unique<Impl>()) {
  auto& im = *impl_;
  im.options = std::move(options);
  im.paths = EmbeddedStatePaths::of(im.options.topology, im.options.state_dir);
  im.lock = std::make_unique<LockFile>(im.paths.lock);
  const auto start = std::chrono::steady_clock::now();
  bool told = false;
  for (;;) {
    if (im.lock->try_lock()) break;
    if (auto e = running_embedded(im.paths)) {
      if (!im.options.may_join)
        throw Error(fmt::format("the embedded cluster \"{}\" is already served by pid {} on {} (admin kubeconfig: {})",
                                im.paths.topology, e->pid, e->url, e->admin_kubeconfig));
      im.joined = std::move(e);
      im.lock.reset();
      return;
    }
    if (!told && std::chrono::steady_clock::now() - start >= im.options.wait_notice_after) {
      told = true;
      if (im.options.on_wait)
        im.options.on_wait(fmt::format("waiting for the embedded cluster's lock held by pid {} ({})", im.lock->holder(),
                                       im.paths.lock));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Owner. An endpoint file left by a process killed with -9 is stale now.
  std::error_code ec;
  fs::remove(im.paths.endpoint, ec);
  EmbeddedOptions eo = im.options.server;
  eo.topology = im.options.topology;
  eo.state_file = im.paths.snapshot;
  if (im.options.serve && eo.kubeconfig_dir.empty()) {
    make_private_dir(im.paths.kubeconfig_dir);
    eo.kubeconfig_dir = im.paths.kubeconfig_dir;
  }
  try {
    im.server = std::make_unique<EmbeddedServer>(std::move(eo));
    if (im.options.serve) {
      json::object ep{{"pid", static_cast<std::int64_t>(::getpid())},
                      {"url", im.server->url()},
                      {"adminKubeconfig", im.server->admin_kubeconfig()},
                      {"kubeconfigDir", im.server->kubeconfig_dir()}};
      embedded::write_file_durably(im.paths.endpoint, json::serialize(ep) + "\n");
    }
  } catch (...) {
    im.server.reset();
    im.lock->unlock();
    throw;
  }
}

EmbeddedSession::~EmbeddedSession() {
  try {
    close();
  } catch (...) {  // a destructor does not throw; close() explicitly to see the error
  }
}

bool EmbeddedSession::joined() const { return impl_->joined.has_value(); }
EmbeddedServer* EmbeddedSession::server() { return impl_->server.get(); }
const EmbeddedStatePaths& EmbeddedSession::paths() const { return impl_->paths; }

std::string EmbeddedSession::admin_kubeconfig() const {
  return impl_->joined ? impl_->joined->admin_kubeconfig : impl_->server->admin_kubeconfig();
}

std::string EmbeddedSession::url() const { return impl_->joined ? impl_->joined->url : impl_->server->url(); }

void EmbeddedSession::close() {
  auto& im = *impl_;
  if (!im.server) return;  // joined, or closed already
  std::error_code ec;
  if (im.options.serve) fs::remove(im.paths.endpoint, ec);
  im.server->stop();
  // Every write is already in the journal; folding it into the snapshot only keeps loading quick.
  // Should that fail, the journal still holds everything.
  std::exception_ptr failed;
  try {
    im.server->save_state(im.paths.snapshot);
  } catch (...) {
    failed = std::current_exception();
  }
  im.server.reset();
  im.lock->unlock();
  if (failed) std::rethrow_exception(failed);
}

bool stop_embedded(const EmbeddedStatePaths& paths, double timeout_seconds) {
  auto e = running_embedded(paths);
  if (!e) return false;
  if (::kill(static_cast<pid_t>(e->pid), SIGTERM) != 0)
    throw Error(fmt::format("cannot stop pid {} serving the embedded cluster \"{}\": {}", e->pid, paths.topology,
                            std::strerror(errno)));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (lock_held(paths.lock)) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw Error(fmt::format("pid {} serving the embedded cluster \"{}\" did not stop within {} s", e->pid,
                              paths.topology, timeout_seconds));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void reset_embedded(const EmbeddedStatePaths& paths) {
  if (auto e = running_embedded(paths))
    throw Error(fmt::format("the embedded cluster \"{}\" is served by pid {}; stop it first: gpupool cluster stop {}",
                            paths.topology, e->pid, paths.topology));
  LockFile lock(paths.lock);
  if (!lock.try_lock())
    throw Error(fmt::format("the embedded cluster \"{}\" is in use by pid {}; try again when it is done",
                            paths.topology, lock.holder()));
  std::error_code ec;
  for (const std::string& f :
       {paths.snapshot, paths.snapshot + ".log", paths.snapshot + ".log.old", paths.endpoint, paths.run_mode})
    fs::remove(f, ec);
  fs::remove_all(paths.kubeconfig_dir, ec);
  fs::remove_all(paths.local_dir, ec);
  lock.unlock();
}

}  // namespace gpupool
