// Cluster::exec, Cluster::port_forward and Cluster::tensorboard: which pod of a job, then
// Client::exec / Client::port_forward (kube/streams.cpp) on it.
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <thread>

#include "cluster/diagnose.hpp"
#include "cluster/impl.hpp"
#include "cluster/resources.hpp"
#include "common/sigpipe.hpp"
#include "gpupool/error.hpp"
#include "gpupool/render.hpp"

namespace gpupool {

namespace json = boost::json;
using detail::arr_at;
using detail::str_at;

namespace {

/// The pod to use: -i INSTANCE (checked to be the job's), else the first running instance.
const Instance& pick_instance(const JobInfo& info, const std::string& instance) {
  if (!instance.empty()) {
    detail::check_instance_of(info, instance);
    for (const auto& i : info.instances)
      if (i.name == instance) return i;
  }
  for (const auto& i : info.instances)
    if (i.phase == "Running") return i;
  if (info.instances.empty())
    throw Error(fmt::format("job \"{}\" has no pods yet; try again when `gpupool get {}` lists instances", info.name,
                            info.name));
  std::string states;
  for (const auto& i : info.instances) states += fmt::format("{}{} is {}", states.empty() ? "" : ", ", i.name, i.phase);
  throw Error(
      fmt::format("job \"{}\" has no running instance ({}); see `gpupool get {}`", info.name, states, info.name));
}

/// Closes a pipe end once (the writer thread and the caller may both try).
struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw Error("cannot create a pipe for exec's input");
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
};

}  // namespace

std::vector<PortForward::Port> parse_port_specs(const std::vector<std::string>& specs) {
  if (specs.empty()) throw ValidationError("ports", "", "give at least one port: [LOCAL:]REMOTE, e.g. 8080:80");
  std::vector<PortForward::Port> ports;
  auto number = [](std::string_view s, int& out) {
    if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string_view::npos) return false;
    out = std::stoi(std::string(s));
    return out <= 65535;
  };
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::string& spec = specs[i];
    const std::string field = fmt::format("ports[{}]", i);
    PortForward::Port p;
    const auto colon = spec.find(':');
    const std::string_view local =
        colon == std::string::npos ? std::string_view(spec) : std::string_view(spec).substr(0, colon);
    const std::string_view remote =
        colon == std::string::npos ? std::string_view(spec) : std::string_view(spec).substr(colon + 1);
    if (!number(remote, p.remote) || p.remote == 0)
      throw ValidationError(field, spec,
                            "the remote port must be a number from 1 to 65535; write [LOCAL:]REMOTE, e.g. 8080:80");
    if (colon != std::string::npos && local.empty())
      p.local = 0;
    else if (!number(local, p.local))
      throw ValidationError(field, spec, "the local port must be a number from 0 to 65535 (0 or empty: a free port)");
    ports.push_back(p);
  }
  return ports;
}

ExecResult Cluster::exec(const std::string& name, const std::vector<std::string>& command,
                         const JobExecOptions& options, const CancelToken& cancel) const {
  if (command.empty())
    throw ValidationError("command", "", "give the command to run after --, e.g. gpupool exec NAME -- nvidia-smi");
  const JobInfo info = get(name);
  const Instance& pod = pick_instance(info, options.instance);
  // kubectl exec: "cannot exec into a container in a completed pod; current phase is %s".
  if (pod.phase == "Succeeded" || pod.phase == "Failed")
    throw Error(fmt::format("cannot exec into a container in a completed pod; current phase is {}", pod.phase));
  ExecOptions eo;
  eo.command = command;
  eo.container = options.container;
  eo.tty = options.tty;
  ExecIO io;
  ExecResult result;
  io.on_stdout = options.on_stdout ? options.on_stdout : [&](std::string_view s) { result.stdout_text.append(s); };
  io.on_stderr = options.on_stderr ? options.on_stderr : [&](std::string_view s) { result.stderr_text.append(s); };
  io.terminal_size = options.terminal_size;
  std::optional<Pipe> input;
  std::thread feeder;
  if (options.input) {
    input.emplace();
    eo.with_stdin = true;
    io.stdin_fd = input->read;
    // A writer of its own: a large input must not wait for the command to read it first.
    feeder = std::thread([&] {
      SigpipeBlock no_sigpipe;  // the read end closes early when the call fails
      std::string_view rest = *options.input;
      while (!rest.empty()) {
        const ssize_t n = ::write(input->write, rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        rest.remove_prefix(static_cast<std::size_t>(n));
      }
      ::close(input->write);
      input->write = -1;
    });
  } else if (options.stdin_fd >= 0) {
    eo.with_stdin = true;
    io.stdin_fd = options.stdin_fd;
  }
  try {
    result.exit_code = impl_->client->exec(impl_->ns, pod.name, eo, io, cancel);
  } catch (...) {
    if (feeder.joinable()) {
      ::close(input->read);  // the writer gets EPIPE and ends
      input->read = -1;
      feeder.join();
    }
    throw;
  }
  if (feeder.joinable()) {
    ::close(input->read);
    input->read = -1;
    feeder.join();
  }
  return result;
}

std::unique_ptr<PortForward> Cluster::port_forward(const std::string& name, const std::vector<PortForward::Port>& ports,
                                                   const std::string& instance,
                                                   PortForwardErrorHandler on_error) const {
  const JobInfo info = get(name);
  const Instance& pod = pick_instance(info, instance);
  // kubectl port-forward's own check (cmd/portforward: the pod must be Running).
  if (pod.phase != "Running")
    throw Error(fmt::format("unable to forward port because pod is not running. Current status={}", pod.phase));
  return impl_->client->port_forward(impl_->ns, pod.name, ports, std::move(on_error));
}

std::unique_ptr<PortForward> Cluster::tensorboard(const std::string& name, int local_port,
                                                  PortForwardErrorHandler on_error) const {
  const JobInfo info = get(name);  // a missing job: its 404
  ListOptions so;
  so.label_selector = fmt::format("{}={},{}=tensorboard", kJobNameLabel, name, kComponentLabel);
  const json::array pods = impl_->client->list_all(detail::kPods, impl_->ns, so);
  const json::object* running = nullptr;
  const json::object* waiting = nullptr;
  for (const auto& p : pods) {
    if (str_at(p.as_object(), {"status", "phase"}) == "Running" && !running)
      running = &p.as_object();
    else if (!waiting)
      waiting = &p.as_object();
  }
  if (!running) {
    if (waiting) throw Error(detail::tensorboard_note(*waiting));
    // Is there a TensorBoard at all (its Deployment without pods yet), or was none asked for?
    const json::array services = impl_->client->list_all(detail::kServices, impl_->ns, so);
    if (services.empty())
      throw Error(fmt::format("job \"{}\" has no TensorBoard; submit it with --tensorboard to get one", name));
    throw Error("TensorBoard is not running: its Deployment has no pod yet");
  }
  // The port TensorBoard listens on, as rendered (its container's first port).
  int remote = 0;
  if (const auto* cs = arr_at(*running, {"spec", "containers"}); cs && !cs->empty() && cs->front().is_object())
    if (const auto* ps = arr_at(cs->front().as_object(), {"ports"}); ps && !ps->empty() && ps->front().is_object())
      if (const auto* cp = ps->front().as_object().if_contains("containerPort"); cp && cp->is_int64())
        remote = static_cast<int>(cp->as_int64());
  if (remote <= 0) throw Error(fmt::format("the TensorBoard pod of job \"{}\" declares no container port", name));
  return impl_->client->port_forward(impl_->ns, str_at(*running, {"metadata", "name"}), {{local_port, remote}},
                                     std::move(on_error));
}

}  // namespace gpupool
