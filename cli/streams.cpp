#include "streams.hpp"

#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <fmt/format.h>

#include <mutex>
#include <ostream>

#include "connection.hpp"
#include "gpupool/cluster.hpp"
#include "gpupool/error.hpp"

namespace gpupool::cli {

namespace {

/// Raw mode on a terminal for the duration of an `exec -t` (restored however it ends).
class RawTerminal {
 public:
  explicit RawTerminal(int fd) : fd_(fd) {
    if (!::isatty(fd_) || ::tcgetattr(fd_, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(fd_, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(fd_, TCSANOW, &saved_);
  }

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

std::optional<std::pair<int, int>> terminal_size() {
  winsize ws{};
  for (int fd : {STDIN_FILENO, STDOUT_FILENO})
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return std::pair<int, int>(ws.ws_col, ws.ws_row);
  return std::nullopt;
}

}  // namespace

std::vector<std::string> expand_exec_shorthand(std::vector<std::string> args) {
  std::vector<std::string> out;
  bool after = false;
  for (auto& a : args) {
    if (a == "--") after = true;
    if (!after && (a == "-it" || a == "-ti")) {
      out.emplace_back("--stdin");
      out.emplace_back("--tty");
    } else {
      out.push_back(std::move(a));
    }
  }
  return out;
}

int run_exec(const ParsedArgs& a, Io& io) {
  const auto& pos = a.positionals();
  if (pos.size() < 2)
    throw UsageError("gpupool exec needs a command after the job name: gpupool exec NAME -- COMMAND [ARGS...]");
  const std::vector<std::string> command(pos.begin() + 1, pos.end());
  auto conn = Connection::open(a);
  JobExecOptions o;
  o.instance = a.get("instance");
  o.container = a.get("container");
  o.tty = a.has("tty");
  if (a.has("stdin")) o.stdin_fd = STDIN_FILENO;
  std::mutex mu;
  o.on_stdout = [&](std::string_view d) {
    std::lock_guard lk(mu);
    io.out.write(d.data(), static_cast<std::streamsize>(d.size()));
    io.out.flush();
  };
  o.on_stderr = [&](std::string_view d) {
    std::lock_guard lk(mu);
    io.err.write(d.data(), static_cast<std::streamsize>(d.size()));
    io.err.flush();
  };
  std::optional<RawTerminal> raw;
  if (o.tty) {
    o.terminal_size = terminal_size;
    // A terminal of our own only when we drive one: stdin a tty and sent (kubectl's rule).
    if (a.has("stdin") && ::isatty(STDIN_FILENO)) raw.emplace(STDIN_FILENO);
  }
  const ExecResult r = conn.cluster().exec(pos[0], command, o);
  raw.reset();
  conn.close();
  return r.exit_code;
}

int run_port_forward(const ParsedArgs& a, Io& io) {
  const auto& pos = a.positionals();
  const std::vector<std::string> specs(pos.begin() + 1, pos.end());
  const auto ports = parse_port_specs(specs);
  auto conn = Connection::open(a);
  std::mutex mu;
  auto pf = conn.cluster().port_forward(pos[0], ports, a.get("instance"), [&](const std::string& e) {
    std::lock_guard lk(mu);
    io.err << "error: " << e << "\n";
    io.err.flush();
  });
  {
    std::lock_guard lk(mu);
    for (const auto& p : pf->ports()) io.out << fmt::format("Forwarding from 127.0.0.1:{} -> {}\n", p.local, p.remote);
    io.out.flush();
  }
  pf->wait();  // until Ctrl-C (the default SIGINT action ends the process) or the tunnel ends
  return 0;
}

int run_tensorboard(const ParsedArgs& a, Io& io) {
  int local = 0;
  if (auto p = a.optional("port")) {
    const auto parsed = parse_port_specs({*p + ":1"});
    local = parsed[0].local;
  }
  auto conn = Connection::open(a);
  std::mutex mu;
  auto pf = conn.cluster().tensorboard(a.positionals()[0], local, [&](const std::string& e) {
    std::lock_guard lk(mu);
    io.err << "error: " << e << "\n";
    io.err.flush();
  });
  {
    std::lock_guard lk(mu);
    io.out << fmt::format("TensorBoard of job \"{}\": http://127.0.0.1:{}\n(forwarding to its pod; Ctrl-C to stop)\n",
                          a.positionals()[0], pf->ports()[0].local);
    io.out.flush();
  }
  pf->wait();
  return 0;
}

}  // namespace gpupool::cli
