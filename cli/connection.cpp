#include "connection.hpp"

#include "gpupool/embedded.hpp"
#include "gpupool/error.hpp"
#include "gpupool/logger.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace gpupool::cli {

namespace fs = std::filesystem;

struct Connection::Embedded {
  std::unique_ptr<EmbeddedServer> server;
  std::string state_file;
};

namespace {

/// Where --embedded keeps a topology's state: $GPUPOOL_STATE_DIR, else $XDG_STATE_HOME/gpupool,
/// else ~/.local/state/gpupool; one file per topology.
std::string state_file_for(const std::string& topology) {
  fs::path dir;
  if (const char* d = std::getenv("GPUPOOL_STATE_DIR"); d && *d)
    dir = d;
  else if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x)
    dir = fs::path(x) / "gpupool";
  else if (const char* h = std::getenv("HOME"); h && *h)
    dir = fs::path(h) / ".local/state/gpupool";
  else
    dir = fs::temp_directory_path() / "gpupool-state";
  std::string name = topology;
  for (char& c : name)
    if (c == '/' || c == '.') c = '_';
  fs::create_directories(dir);
  return (dir / ("embedded-" + name + ".json")).string();
}

}  // namespace

Connection::~Connection() = default;
Connection::Connection(Connection&&) noexcept = default;

Connection Connection::open(const ParsedArgs& args) {
  Connection c;
  std::string topology = args.get("embedded");
  if (topology.empty() && !args.has("kubeconfig") && !args.has("context"))
    if (const char* e = std::getenv("GPUPOOL_EMBEDDED"); e && *e) topology = e;
  ConnectOptions co;
  // The library never prints: its notes (insecure TLS, a kubeconfig readable by others, retries)
  // go to stderr here, warnings always, info/debug with --loglevel.
  const std::string level = args.get("loglevel", "warning");
  const LogLevel threshold = level == "debug" ? LogLevel::debug : level == "info" ? LogLevel::info
                             : level == "error" ? LogLevel::error : LogLevel::warning;
  if (level != "debug" && level != "info" && level != "warning" && level != "error")
    throw ValidationError("--loglevel", level, "expected debug, info, warning or error");
  co.logger = [threshold](LogLevel l, const std::string& message) {
    if (l >= threshold) std::cerr << to_string(l) << ": " << message << "\n";
  };
  co.namespace_ = args.get("namespace");
  co.profile = args.get("profile");
  if (!topology.empty()) {
    c.embedded_ = std::make_unique<Embedded>();
    c.embedded_->state_file = state_file_for(topology);
    EmbeddedOptions eo;
    eo.topology = topology;
    eo.manual_clock = false;
    eo.state_file = c.embedded_->state_file;
    if (co.profile.empty() && topology == "iiis") co.profile = "iiis";
    c.embedded_->server = std::make_unique<EmbeddedServer>(eo);
    co.kubeconfig = c.embedded_->server->admin_kubeconfig();
  } else {
    co.kubeconfig = args.get("kubeconfig");
    co.context = args.get("context");
  }
  c.cluster_ = std::make_unique<Cluster>(Cluster::connect(co));
  return c;
}

void Connection::close() {
  if (embedded_) embedded_->server->save_state(embedded_->state_file);
}

}  // namespace gpupool::cli
