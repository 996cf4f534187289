#include "embedded/streams.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/spdy.hpp"
#include "common/tls_pump.hpp"
#include "common/websocket.hpp"
#include "gpupool/error.hpp"

namespace gpupool::embedded {

namespace {

// remotecommand channel numbers (k8s.io/apimachinery/pkg/util/remotecommand/constants.go and
// wsstream): one byte before each message's data.
constexpr char kStdin = 0, kStdout = 1, kStderr = 2, kError = 3, kResize = 4;
constexpr unsigned char kCloseChannel = 255;  // v5: {255, channel} half-closes a channel

bool query_true(const Request& r, const char* key) {
  const auto it = r.query.find(key);
  if (it == r.query.end()) return false;
  const auto& v = it->second;  // strconv.ParseBool
  return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
}

std::string query(const Request& r, const char* key) {
  const auto it = r.query.find(key);
  return it == r.query.end() ? std::string() : it->second;
}

const std::string* header(const Request& r, std::string_view name) {
  for (const auto& [k, v] : r.upgrade_headers)
    if (k == name) return &v;
  return nullptr;
}

/// The tokens of a comma-separated header over all its occurrences.
std::vector<std::string> header_tokens(const Request& r, std::string_view name) {
  std::vector<std::string> out;
  for (const auto& [k, v] : r.upgrade_headers) {
    if (k != name) continue;
    std::string_view s = v;
    while (!s.empty()) {
      auto comma = s.find(',');
      std::string_view t = s.substr(0, comma);
      while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
      while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
      if (!t.empty()) out.emplace_back(t);
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

/// PodPortForwardOptions.ports as the query decoder converts it (runtime.Convert_Slice_string_To_Slice_int32:
/// comma-separated values, each strconv.ParseUint(s, 10, 16)).
std::vector<int> parse_ports(const Request& r) {
  std::vector<int> ports;
  for (auto [it, end] = r.query.equal_range("ports"); it != end; ++it) {
    std::string_view s = it->second;
    while (true) {
      const auto comma = s.find(',');
      const std::string part(s.substr(0, comma));
      const bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
      if (!digits)
        throw StatusError::bad_request(
            fmt::format("cannot convert to []int32: strconv.ParseUint: parsing \"{}\": invalid syntax", part));
      if (part.size() > 5 || std::stoi(part) > 65535)
        throw StatusError::bad_request(
            fmt::format("cannot convert to []int32: strconv.ParseUint: parsing \"{}\": value out of range", part));
      ports.push_back(std::stoi(part));
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
  }
  return ports;
}

std::string str(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

const json::object* obj(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_object() ? &v->as_object() : nullptr;
}

const json::array* arr(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_array() ? &v->as_array() : nullptr;
}

/// validateContainer (registry/core/pod/strategy.go): the named container must exist (any kind:
/// init, regular, ephemeral); unnamed is fine when the pod has exactly one container.
std::string validate_container(const std::string& container, const json::object& pod, const std::string& name) {
  const json::object* spec = obj(pod, "spec");
  std::vector<std::string> names;  // podutil.VisitContainers order: init, containers, ephemeral
  for (const char* key : {"initContainers", "containers", "ephemeralContainers"})
    if (const json::array* cs = spec ? arr(*spec, key) : nullptr)
      for (const auto& c : *cs)
        if (c.is_object()) names.push_back(str(c.as_object(), "name"));
  const json::array* regular = spec ? arr(*spec, "containers") : nullptr;
  if (container.empty()) {
    const std::size_t n = regular ? regular->size() : 0;
    if (n == 1) return str(regular->at(0).as_object(), "name");
    if (n == 0) throw StatusError::bad_request(fmt::format("a container name must be specified for pod {}", name));
    throw StatusError::bad_request(
        fmt::format("a container name must be specified for pod {}, choose one of: [{}]", name, fmt::join(names, " ")));
  }
  for (const auto& n : names)
    if (n == container) return container;
  throw StatusError::bad_request(fmt::format("container {} is not valid for pod {}", container, name));
}

struct Location {
  PodTarget pod;
  std::string container;
  std::string address;  ///< the kubelet's host
  int port = 10250;
};

/// Where the API server would connect (streamLocation / PortForwardLocation and the node's
/// connection info: the first address of the preferred types, kube-apiserver's default
/// --kubelet-preferred-address-types, and status.daemonEndpoints.kubeletEndpoint.Port).
Location locate(Store& store, const std::string& ns, const std::string& name, const std::string& sub,
                const std::string& container) {
  const json::object pod = store.get(store.type("", "pods"), ns, name);  // 404 pods "x" not found
  Location loc;
  loc.pod.namespace_name = ns;
  loc.pod.name = name;
  if (const json::object* md = obj(pod, "metadata")) loc.pod.uid = str(*md, "uid");
  if (sub != "portforward") loc.container = validate_container(container, pod, name);
  const json::object* spec = obj(pod, "spec");
  loc.pod.node_name = spec ? str(*spec, "nodeName") : std::string();
  if (loc.pod.node_name.empty())
    throw StatusError::bad_request(fmt::format("pod {} does not have a host assigned", name));
  // The node getter behind GetConnectionInfo reports a missing node with the pods resource's
  // wording (`pods "node-x" not found`), as the real server does.
  const auto node = store.find(store.type("", "nodes"), "", loc.pod.node_name);
  if (!node)
    throw StatusError(404, "NotFound", fmt::format("pods \"{}\" not found", loc.pod.node_name), loc.pod.node_name, "",
                      "pods");
  const json::object* status = obj(*node, "status");
  const json::array* addresses = status ? arr(*status, "addresses") : nullptr;
  for (const char* type : {"Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"}) {
    if (!addresses || !loc.address.empty()) break;
    for (const auto& a : *addresses)
      if (a.is_object() && str(a.as_object(), "type") == type) {
        loc.address = str(a.as_object(), "address");
        break;
      }
  }
  if (loc.address.empty()) {  // pkg/util/node NoMatchError, a plain error: 500 without a reason
    std::vector<std::string> known;
    if (addresses)
      for (const auto& a : *addresses)
        if (a.is_object())
          known.push_back(fmt::format("{{{} {}}}", str(a.as_object(), "type"), str(a.as_object(), "address")));
    throw StatusError(500, "",
                      fmt::format("no preferred addresses found; known addresses: [{}]", fmt::join(known, " ")));
  }
  if (const json::object* de = status ? obj(*status, "daemonEndpoints") : nullptr)
    if (const json::object* ke = obj(*de, "kubeletEndpoint"))
      if (const auto* p = ke->if_contains("Port"); p && p->is_int64() && p->as_int64() > 0)
        loc.port = static_cast<int>(p->as_int64());
  return loc;
}

std::string host_port(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

/// url.Values.Encode of the kubelet request's parameters (streamParams): keys sorted.
std::string kubelet_query(const Request& r, bool exec) {
  std::vector<std::string> parts;
  auto esc = [](const std::string& s) {
    std::string o;
    for (unsigned char c : s) {
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
        o += static_cast<char>(c);
      else if (c == ' ')
        o += '+';
      else
        o += fmt::format("%{:02X}", c);
    }
    return o;
  };
  if (exec)
    for (auto [it, end] = r.query.equal_range("command"); it != end; ++it)
      parts.push_back("command=" + esc(it->second));
  if (query_true(r, "stderr")) parts.push_back("error=1");
  if (query_true(r, "stdin")) parts.push_back("input=1");
  if (query_true(r, "stdout")) parts.push_back("output=1");
  if (query_true(r, "tty")) parts.push_back("tty=1");
  return fmt::format("{}", fmt::join(parts, "&"));
}

std::string websocket_101(const Request& r, const std::string& protocol) {
  const std::string* key = header(r, "sec-websocket-key");
  return fmt::format(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: {}\r\nSec-WebSocket-Protocol: {}\r\n\r\n",
      ws::accept_key(key ? *key : std::string()), protocol);
}

/// A metav1.Status as the error channel carries it (no kind/apiVersion, as wsstream writes it).
std::string channel_status(const std::string& status, const std::string& message, const std::string& reason,
                           const json::array& causes, int code) {
  json::object s{{"metadata", json::object{}}, {"status", status}};
  if (status != "Success") {
    s["message"] = message;
    s["reason"] = reason;
    s["details"] = json::object{{"causes", causes}};
    if (code) s["code"] = code;
  }
  return json::serialize(s);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// ---- exec ------------------------------------------------------------------------------------------

/// One exec over an upgraded connection: WebSocket (channels as the first byte of each binary
/// message; `protocol` v5 or v4.channel.k8s.io) or SPDY/3.1 (v4.channel.k8s.io: one stream per
/// channel, named by its streamtype header; the kubelet's remotecommand server).
void serve_exec(SSL* ssl, int fd, const std::string& leftover, const Request& r, const std::string& protocol,
                bool spdy_mode, const Location& loc, StreamHandler* handler, const std::string& refusal) {
  TlsPump pump(ssl, fd);
  pump.send(spdy_mode ? "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                        "X-Stream-Protocol-Version: " +
                            protocol + "\r\n\r\n"
                      : websocket_101(r, protocol));
  ws::Decoder decoder;
  spdy::Codec codec;
  std::mutex mu;  // the SPDY streams and the order of compressed header blocks
  std::condition_variable streams_cv;
  std::map<std::string, std::uint32_t> stream_of;  // SPDY: streamtype -> stream id
  bool gone = false;
  auto send_channel = [&](char channel, std::string_view data) {
    if (!spdy_mode) {
      std::string m(1, channel);
      m += data;
      pump.send(ws::frame(ws::kBinary, m, false));
      return;
    }
    static const char* names[] = {"stdin", "stdout", "stderr", "error", "resize"};
    std::lock_guard lk(mu);
    if (auto it = stream_of.find(names[static_cast<unsigned char>(channel)]); it != stream_of.end())
      pump.send(spdy::Codec::data(it->second, data, false));
  };
  std::atomic<bool> closing{false};
  auto send_close = [&] {
    if (closing.exchange(true)) return;
    if (!spdy_mode) {
      pump.send(ws::frame(ws::kClose, std::string("\x03\xe8", 2), false));
      return;
    }
    std::lock_guard lk(mu);
    for (const auto& [type, id] : stream_of) pump.send(spdy::Codec::data(id, {}, true));
  };
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  std::mutex stdin_mu;
  auto close_stdin = [&] {
    std::lock_guard lk(stdin_mu);
    close_fd(in[1]);
  };
  auto write_stdin = [&](std::string_view data) {
    std::lock_guard lk(stdin_mu);
    if (in[1] >= 0 && !write_all(in[1], data)) close_fd(in[1]);
  };
  auto on_bytes = [&](std::string_view bytes) {
    try {
      if (spdy_mode) {
        codec.feed(bytes);
        while (auto f = codec.next()) {
          if (f->type == spdy::kSynStream) {
            const std::string* type = spdy::find_header(f->headers, "streamtype");
            std::lock_guard lk(mu);
            pump.send(codec.syn_reply(f->stream_id, {}));
            if (type) stream_of[*type] = f->stream_id;
            streams_cv.notify_all();
          } else if (f->type == spdy::kData || f->type == spdy::kRstStream) {
            std::uint32_t stdin_id = 0;
            {
              std::lock_guard lk(mu);
              if (auto it = stream_of.find("stdin"); it != stream_of.end()) stdin_id = it->second;
            }
            if (f->stream_id != stdin_id) continue;  // resize and error: nothing to do here
            if (!f->data.empty()) write_stdin(f->data);
            if (f->fin() || f->type == spdy::kRstStream) close_stdin();
          } else if (f->type == spdy::kPing) {
            pump.send(spdy::Codec::ping(f->value));
          } else if (f->type == spdy::kGoAway) {
            pump.finish();
          }
        }
        return;
      }
      decoder.feed(bytes);
      while (auto m = decoder.next()) {
        if (m->opcode == ws::kPing) {
          pump.send(ws::frame(ws::kPong, m->payload, false));
        } else if (m->opcode == ws::kClose) {
          send_close();
          pump.finish();
        } else if ((m->opcode == ws::kBinary || m->opcode == ws::kText) && !m->payload.empty()) {
          const auto channel = static_cast<unsigned char>(m->payload[0]);
          const std::string_view data = std::string_view(m->payload).substr(1);
          if (channel == static_cast<unsigned char>(kStdin))
            write_stdin(data);
          else if (channel == kCloseChannel && protocol == "v5.channel.k8s.io" && !data.empty() && data[0] == kStdin)
            close_stdin();
          else if (channel == static_cast<unsigned char>(kResize)) {
            // Terminal size changes: nothing to resize for a handler's process (no pty).
          }
        }
      }
    } catch (const std::exception&) {
      pump.abort();
    }
  };
  /// SPDY: the client opens its streams first (error, then stdin/stdout/stderr/resize as asked).
  auto wait_for_streams = [&] {
    if (!spdy_mode) return true;
    std::size_t expected = 1 + (query_true(r, "stdin") ? 1 : 0) + (query_true(r, "stdout") ? 1 : 0) +
                           (query_true(r, "stderr") && !query_true(r, "tty") ? 1 : 0) + (query_true(r, "tty") ? 1 : 0);
    std::unique_lock lk(mu);
    streams_cv.wait(lk, [&] { return gone || stream_of.size() >= expected; });
    return !gone;
  };
  // Serves the connection until it ends; then whoever waits for streams gives up.
  auto serve = [&] {
    if (!leftover.empty()) on_bytes(leftover);
    pump.run(on_bytes);
    {
      std::lock_guard lk(mu);
      gone = true;
    }
    streams_cv.notify_all();
  };
  if (!handler) {
    // What the API server's WebSocket translator says when it cannot reach the kubelet.
    std::thread answer([&] {
      if (!wait_for_streams()) return;
      send_channel(kError, channel_status("Failure", "Internal error occurred: " + refusal, "InternalError",
                                          json::array{json::object{{"message", refusal}}}, 500));
      send_close();
      pump.finish();
    });
    serve();
    answer.join();
    return;
  }
  ExecRequest req;
  req.pod = loc.pod;
  req.container = loc.container;
  for (auto [it, end] = r.query.equal_range("command"); it != end; ++it) req.command.push_back(it->second);
  req.tty = query_true(r, "tty");
  if (query_true(r, "stdin") && ::pipe2(in, O_CLOEXEC) == 0) req.stdin_fd = in[0];
  if (query_true(r, "stdout") && ::pipe2(out, O_CLOEXEC) == 0) req.stdout_fd = out[1];
  if (query_true(r, "stderr") && !req.tty && ::pipe2(err, O_CLOEXEC) == 0) req.stderr_fd = err[1];
  int hangup[2] = {-1, -1};
  if (::pipe2(hangup, O_CLOEXEC) == 0) req.hangup_fd = hangup[0];
  auto reader = [&](int rfd, char channel) {
    return std::thread([&, rfd, channel] {
      char buf[16384];
      for (;;) {
        const ssize_t n = ::read(rfd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        send_channel(channel, std::string_view(buf, static_cast<std::size_t>(n)));
      }
    });
  };
  std::thread runner([&] {
    std::thread out_reader, err_reader;
    const bool ready = wait_for_streams();
    if (out[0] >= 0) out_reader = reader(out[0], kStdout);
    if (err[0] >= 0) err_reader = reader(err[0], kStderr);
    std::string status;
    try {
      if (!ready) throw Error("the client left before opening its streams");
      const int code = handler->exec(req);
      if (code == 0) {
        status = channel_status("Success", "", "", {}, 0);
      } else {  // the kubelet's NonZeroExitCode Status (kubelet/cri/streaming/remotecommand)
        std::string argv = fmt::format("{}", fmt::join(req.command, " "));
        status = channel_status(
            "Failure",
            fmt::format("command terminated with non-zero exit code: error executing command [{}], exit code {}", argv,
                        code),
            "NonZeroExitCode", json::array{json::object{{"reason", "ExitCode"}, {"message", std::to_string(code)}}}, 0);
      }
    } catch (const std::exception& e) {
      status =
          channel_status("Failure", e.what(), "InternalError", json::array{json::object{{"message", e.what()}}}, 500);
    }
    // The command ended: its output ends when the write ends close.
    close_fd(out[1]);
    close_fd(err[1]);
    if (out_reader.joinable()) out_reader.join();
    if (err_reader.joinable()) err_reader.join();
    send_channel(kError, status);
    send_close();
    pump.finish();
  });
  serve();
  close_stdin();        // the client is gone or done: the command sees EOF
  close_fd(hangup[1]);  // and the handler learns it should stop the command
  runner.join();
  close_fd(hangup[0]);
  close_fd(in[0]);
  close_fd(out[0]);
  close_fd(err[0]);
}

// ---- port-forward over SPDY/3.1 ------------------------------------------------------------------

/// The kubelet's port-forward stream handling (kubelet/pkg/cri/streaming/portforward/httpstream.go)
/// over one SPDY connection: each request is an error stream and a data stream sharing a
/// requestID; once both arrived, the handler connects to the port and bytes flow.
class PortForwardSession {
 public:
  PortForwardSession(TlsPump& pump, bool websocket, const PodTarget& pod, StreamHandler* handler)
      : pump_(pump), websocket_(websocket), pod_(pod), handler_(handler) {}

  ~PortForwardSession() {
    std::vector<std::thread> threads;
    {
      std::lock_guard lk(mu_);
      for (auto& [id, p] : pairs_)
        if (p.fd >= 0) ::shutdown(p.fd, SHUT_RDWR);
      for (auto& [id, p] : pairs_)
        if (p.reader.joinable()) threads.push_back(std::move(p.reader));
    }
    for (auto& t : threads) t.join();
    for (auto& [id, p] : pairs_) close_fd(p.fd);
  }

  void on_bytes(std::string_view bytes) {
    try {
      if (websocket_) {
        ws_.feed(bytes);
        while (auto m = ws_.next()) {
          if (m->opcode == ws::kPing)
            pump_.send(ws::frame(ws::kPong, m->payload, false));
          else if (m->opcode == ws::kClose) {
            pump_.send(ws::frame(ws::kClose, std::string("\x03\xe8", 2), false));
            pump_.finish();
          } else {
            codec_.feed(m->payload);
          }
        }
      } else {
        codec_.feed(bytes);
      }
      while (auto f = codec_.next()) on_frame(*f);
    } catch (const std::exception&) {
      pump_.abort();
    }
  }

 private:
  struct Pair {
    std::uint32_t error_id = 0, data_id = 0;
    int port = 0;
    int fd = -1;
    bool started = false;
    std::thread reader;
  };

  void send(const std::string& spdy_bytes) {
    pump_.send(websocket_ ? ws::frame(ws::kBinary, spdy_bytes, false) : spdy_bytes);
  }

  void on_frame(spdy::Frame& f) {
    switch (f.type) {
      case spdy::kSynStream:
        on_syn_stream(f);
        break;
      case spdy::kData:
        on_data(f);
        break;
      case spdy::kRstStream: {
        std::lock_guard lk(mu_);
        if (auto it = stream_to_request_.find(f.stream_id); it != stream_to_request_.end()) {
          Pair& p = pairs_[it->second];
          if (p.fd >= 0 && f.stream_id == p.data_id) ::shutdown(p.fd, SHUT_RDWR);
        }
        break;
      }
      case spdy::kPing:
        send(spdy::Codec::ping(f.value));
        break;
      case spdy::kGoAway:
        pump_.finish();
        break;
      default:
        break;  // SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do (spdystream keeps no windows)
    }
  }

  void on_syn_stream(const spdy::Frame& f) {
    const std::string* type = spdy::find_header(f.headers, "streamtype");
    const std::string* port = spdy::find_header(f.headers, "port");
    const std::string* request_id = spdy::find_header(f.headers, "requestid");
    // httpStreamHandler.requestID: without a requestID header (old clients) streams pair in order.
    std::string rid = request_id ? *request_id : std::to_string(f.stream_id % 2 ? (f.stream_id - 1) / 2 : f.stream_id);
    int port_number = 0;
    const bool port_ok = port && !port->empty() && port->size() <= 5 &&
                         port->find_first_not_of("0123456789") == std::string::npos &&
                         (port_number = std::stoi(*port)) > 0 && port_number <= 65535;
    if (!type || !port_ok || (*type != "error" && *type != "data")) {
      send(spdy::Codec::rst_stream(f.stream_id, spdy::kRefusedStream));
      return;
    }
    send(codec_.syn_reply(f.stream_id, {}));
    std::unique_lock lk(mu_);
    stream_to_request_[f.stream_id] = rid;
    Pair& p = pairs_[rid];
    (*type == "error" ? p.error_id : p.data_id) = f.stream_id;
    p.port = port_number;
    if (!p.error_id || !p.data_id || p.started) return;
    p.started = true;
    lk.unlock();
    start(rid);
  }

  void start(const std::string& rid) {
    Pair* p = nullptr;
    {
      std::lock_guard lk(mu_);
      p = &pairs_[rid];
    }
    int fd = -1;
    try {
      fd = handler_->port_forward(pod_, p->port);
    } catch (const std::exception& e) {
      const std::string msg = fmt::format("error forwarding port {} to pod {}, uid {}: {}", p->port,
                                          pod_.namespace_name + "/" + pod_.name, pod_.uid, e.what());
      send(spdy::Codec::data(p->error_id, msg, false));
      send(spdy::Codec::rst_stream(p->data_id, spdy::kCancel));
      send(spdy::Codec::rst_stream(p->error_id, spdy::kCancel));
      return;
    }
    std::lock_guard lk(mu_);
    p->fd = fd;
    const std::uint32_t data_id = p->data_id, error_id = p->error_id;
    p->reader = std::thread([this, fd, data_id, error_id] {
      spdy::pump_fd_to_stream(fd, data_id, [this](const std::string& frame) { send(frame); });
      // The port closed its side: close both streams (portForward's deferred Close calls).
      send(spdy::Codec::data(data_id, {}, true));
      send(spdy::Codec::data(error_id, {}, true));
    });
  }

  void on_data(const spdy::Frame& f) {
    int fd = -1;
    {
      std::lock_guard lk(mu_);
      auto it = stream_to_request_.find(f.stream_id);
      if (it == stream_to_request_.end()) return;
      Pair& p = pairs_[it->second];
      if (f.stream_id != p.data_id) return;  // the client only closes its error stream
      fd = p.fd;
    }
    if (fd < 0) return;
    if (!f.data.empty() && !write_all(fd, f.data)) ::shutdown(fd, SHUT_RDWR);
    if (f.fin()) ::shutdown(fd, SHUT_WR);
  }

  TlsPump& pump_;
  bool websocket_;
  PodTarget pod_;
  StreamHandler* handler_;
  ws::Decoder ws_;
  spdy::Codec codec_;
  std::mutex mu_;
  std::map<std::string, Pair> pairs_;
  std::map<std::uint32_t, std::string> stream_to_request_;
};

}  // namespace

Response Streams::connect(const Request& r, const std::string& ns, const std::string& name,
                          const std::string& sub) const {
  const bool portforward = sub == "portforward";
  if (portforward) parse_ports(r);  // the options decode before the location is looked up
  const Location loc = locate(store_, ns, name, sub, query(r, "container"));
  const std::string* upgrade = header(r, "upgrade");
  const bool websocket = upgrade && iequals(*upgrade, "websocket");
  const bool spdy = upgrade && iequals(*upgrade, "SPDY/3.1");
  if (!websocket && !spdy) throw StatusError::bad_request("Upgrade request required");
  const std::string kubelet = host_port(loc.address, loc.port);
  // What Go's dialer says when nothing listens there (an IP) or the name does not resolve.
  in6_addr probe{};
  const bool ip =
      ::inet_pton(AF_INET, loc.address.c_str(), &probe) == 1 || ::inet_pton(AF_INET6, loc.address.c_str(), &probe) == 1;
  const std::string dial_refused = ip ? fmt::format("dial tcp {}: connect: connection refused", kubelet)
                                      : fmt::format("dial tcp: lookup {}: no such host", loc.address);
  StreamHandler* handler = sub == "attach" ? nullptr : handler_.get();  // nothing to attach to
  Response resp;
  // An API server older than v1.30 (or with the WebSocket feature gates off) refuses the WebSocket
  // upgrade; clients then fall back to SPDY/3.1.
  if (websocket && !websockets_) throw StatusError::bad_request("Upgrade request required");
  if (!portforward && websocket) {
    std::string protocol;
    const auto offered = header_tokens(r, "sec-websocket-protocol");
    for (const char* p : {"v5.channel.k8s.io", "v4.channel.k8s.io"})
      if (protocol.empty() && std::find(offered.begin(), offered.end(), p) != offered.end()) protocol = p;
    if (protocol.empty())
      throw StatusError::bad_request(
          "unable to upgrade: none of the offered WebSocket subprotocols is served; offer "
          "v5.channel.k8s.io or v4.channel.k8s.io");
    const std::string refusal =
        fmt::format("error sending request: Post \"https://{}/{}/{}/{}/{}?{}\": {}", kubelet, sub, ns, name,
                    loc.container, kubelet_query(r, sub == "exec"), dial_refused);
    resp.takeover = [r, protocol, loc, handler, refusal, keep = handler_](SSL* ssl, int fd, const std::string& leftover,
                                                                          const std::atomic<bool>&) {
      serve_exec(ssl, fd, leftover, r, protocol, false, loc, handler, refusal);
    };
    return resp;
  }
  // SPDY/3.1 is proxied to the kubelet as it is: without one, dialing it fails first.
  if (!handler) throw StatusError(500, "", fmt::format("error dialing backend: {}", dial_refused));
  if (!portforward) {
    const auto versions = header_tokens(r, "x-stream-protocol-version");
    if (std::find(versions.begin(), versions.end(), "v4.channel.k8s.io") == versions.end())
      throw StatusError::bad_request("unable to upgrade: X-Stream-Protocol-Version v4.channel.k8s.io was not offered");
    resp.takeover = [r, loc, handler, keep = handler_](SSL* ssl, int fd, const std::string& leftover,
                                                       const std::atomic<bool>&) {
      serve_exec(ssl, fd, leftover, r, "v4.channel.k8s.io", true, loc, handler, "");
    };
    return resp;
  }
  if (websocket) {
    const auto offered = header_tokens(r, "sec-websocket-protocol");
    if (std::find(offered.begin(), offered.end(), "SPDY/3.1+portforward.k8s.io") == offered.end())
      throw StatusError::bad_request(
          "unable to upgrade: the WebSocket subprotocol SPDY/3.1+portforward.k8s.io was not offered");
  } else {
    const auto versions = header_tokens(r, "x-stream-protocol-version");
    if (std::find(versions.begin(), versions.end(), "portforward.k8s.io") == versions.end())
      throw StatusError::bad_request("unable to upgrade: X-Stream-Protocol-Version portforward.k8s.io was not offered");
  }
  resp.takeover = [r, websocket, loc, handler, keep = handler_](SSL* ssl, int fd, const std::string& leftover,
                                                                const std::atomic<bool>&) {
    TlsPump pump(ssl, fd);
    pump.send(websocket ? websocket_101(r, "SPDY/3.1+portforward.k8s.io")
                        : std::string("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                                      "X-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n"));
    PortForwardSession session(pump, websocket, loc.pod, handler);
    if (!leftover.empty()) session.on_bytes(leftover);
    pump.run([&](std::string_view b) { session.on_bytes(b); });
  };
  return resp;
}

}  // namespace gpupool::embedded
