// The client side of the streaming subresources, as client-go 1.32 speaks them:
// tools/remotecommand/websocket.go (exec over WebSocket, v5.channel.k8s.io with v4 offered too),
// tools/portforward (SPDY/3.1 streams per connection: an error stream and a data stream sharing
// a requestID), tools/portforward/tunneling_connection.go (SPDY tunnelled in WebSocket binary
// messages, subprotocol SPDY/3.1+portforward.k8s.io) and the fallback to a plain SPDY/3.1 upgrade
// (fallback_dialer.go) when the server refuses the WebSocket upgrade.
#include "kube/streams.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "common/base64.hpp"
#include "common/spdy.hpp"
#include "common/tls_pump.hpp"
#include "common/websocket.hpp"
#include "gpupool/error.hpp"
#include "kube/connect.hpp"
#include "kube/status.hpp"
#include "kube/util.hpp"

namespace gpupool::kube {

namespace {

/// An upgraded (or refused) HTTPS exchange on a connection of its own.
struct Upgraded {
  std::shared_ptr<TlsContext> tls;  ///< outlives the SSL made with it
  std::unique_ptr<kube::Connection> io;
  SSL* ssl = nullptr;
  int fd = -1;
  int status = 0;
  ResponseHead head;
  std::string body;      // of a refusal
  std::string leftover;  // bytes read past a 101's headers
  const std::string* header(std::string_view name) const { return head.header(name); }
};

/// Connects (kube/connect.hpp: proxy, TLS as the REST transport), sends `method target` with
/// `headers` and reads the response head (and, unless it is 101, the body).
std::unique_ptr<Upgraded> open_upgrade(const StreamContext& ctx, const RequestCredentials& cred,
                                       const std::string& method, const std::string& target,
                                       const std::vector<std::pair<std::string, std::string>>& headers) {
  const KubeCluster& cluster = ctx.config.cluster;
  const ServerUrl u = parse_server_url(cluster.server);
  const std::string source = ctx.config.source.empty() ? "kubeconfig" : ctx.config.source;
  if (u.scheme != "https") throw ConfigError(source, "cluster.server", "exec and port-forward need an https:// server");
  auto c = std::make_unique<Upgraded>();
  c->io = connect_to_server(cluster, TlsSource([&] {
                              c->tls = std::make_shared<TlsContext>(cluster, cred);
                              return c->tls.get();
                            }),
                            ctx.connect_timeout);
  c->ssl = c->io->ssl();
  c->fd = c->io->fd();
  // The request.
  std::string req =
      fmt::format("{} {}{} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: {}\r\n", method, u.path, target,
                  u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host, u.port, ctx.user_agent);
  if (!cred.bearer_token.empty())
    req += "Authorization: Bearer " + cred.bearer_token + "\r\n";
  else if (!cred.username.empty())
    req += "Authorization: Basic " + base64_encode(cred.username + ":" + cred.password) + "\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  if (method == "POST") req += "Content-Length: 0\r\n";
  req += "\r\n";
  auto fail = [&](const std::string& what) {
    return TransportError(
        fmt::format("{} {}: {}", method, cluster.server + u.path + target.substr(0, target.find('?')), what));
  };
  // The upgrade's answer comes within the connect timeout; the upgraded stream has none.
  ResponseReader reader(*c->io, Deadline::after(ctx.connect_timeout));
  try {
    c->io->write_all(req, Deadline::after(ctx.connect_timeout));
    std::fill(req.begin(), req.end(), '\0');
    c->head = reader.read_head(false);
    c->status = c->head.status;
    if (c->status == 101) {
      c->leftover = reader.take_buffered();
      return c;
    }
    // A refusal: its body (a Status, at most 4 MiB kept).
    reader.read_body([&](std::string_view piece) {
      if (c->body.size() + piece.size() > (4u << 20)) return false;
      c->body.append(piece);
      return true;
    });
  } catch (const IoError& e) {
    std::fill(req.begin(), req.end(), '\0');
    throw fail(e.what());
  } catch (const TransportError& e) {
    throw fail(e.what());
  }
  return c;
}

/// open_upgrade with the credentials of now, once more with fresh ones after a 401.
std::unique_ptr<Upgraded> upgrade(const StreamContext& ctx, const std::string& method, const std::string& target,
                                  const std::vector<std::pair<std::string, std::string>>& headers) {
  RequestCredentials cred = ctx.credentials.current();
  auto c = open_upgrade(ctx, cred, method, target, headers);
  if (c->status == 401 && ctx.credentials.refresh_after_unauthorized(cred))
    c = open_upgrade(ctx, ctx.credentials.current(), method, target, headers);
  return c;
}

std::vector<std::pair<std::string, std::string>> websocket_headers(const std::string& key,
                                                                   const std::string& protocols) {
  return {{"Connection", "Upgrade"},
          {"Upgrade", "websocket"},
          {"Sec-WebSocket-Version", "13"},
          {"Sec-WebSocket-Key", key},
          {"Sec-WebSocket-Protocol", protocols}};
}

void check_websocket_accept(const Upgraded& c, const std::string& key) {
  const std::string* accept = c.header("sec-websocket-accept");
  if (!accept || *accept != ws::accept_key(key))
    throw TransportError("the server's WebSocket handshake is invalid (Sec-WebSocket-Accept does not match)");
}

/// Wakes a thread blocked in poll() from another thread.
struct Wakeup {
  int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ~Wakeup() { ::close(fd); }
  void wake() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
  }
};

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

// ---- exec ------------------------------------------------------------------------------------------

namespace {

/// remotecommand's errorDecoderV4: Success is 0, NonZeroExitCode gives the code of its ExitCode
/// cause; any other Status is an ApiError.
int exit_code_from_status(const std::string& status) {
  boost::json::error_code ec;
  const auto v = boost::json::parse(status, ec);
  if (ec || !v.is_object())
    throw TransportError(fmt::format("error stream protocol error: {} in \"{}\"", ec.message(), status));
  const auto& o = v.as_object();
  auto text = [&](const boost::json::object& obj, const char* key) {
    const auto* x = obj.if_contains(key);
    return x && x->is_string() ? std::string(x->as_string()) : std::string();
  };
  if (text(o, "status") == "Success") return 0;
  if (text(o, "reason") == "NonZeroExitCode") {
    if (const auto* details = o.if_contains("details"); details && details->is_object())
      if (const auto* causes = details->as_object().if_contains("causes"); causes && causes->is_array())
        for (const auto& cause : causes->as_array()) {
          if (!cause.is_object() || text(cause.as_object(), "reason") != "ExitCode") continue;
          const std::string code = text(cause.as_object(), "message");
          if (code.empty() || code.size() > 3 || code.find_first_not_of("0123456789") != std::string::npos ||
              std::stoi(code) > 255)
            throw TransportError(fmt::format("error stream protocol error: invalid exit code value \"{}\"", code));
          return std::stoi(code);
        }
    throw TransportError("error stream protocol error: no ExitCode cause given");
  }
  // Any other failure: the Status as an ApiError (the channel's Status carries no kind/apiVersion).
  const auto* code = o.if_contains("code");
  const std::string message = text(o, "message");
  throw ApiError(code && code->is_int64() ? static_cast<int>(code->as_int64()) : 500, text(o, "reason"),
                 message.empty() ? status : message);
}

/// How one exec's channels travel: WebSocket messages or SPDY streams.
struct ExecWire {
  std::function<void(std::string_view)> send_stdin;
  std::function<void()> close_stdin;
  std::function<void(std::string_view)> send_resize;
  std::function<void(std::string_view)> on_bytes;
};

}  // namespace

int exec_in_pod(const StreamContext& ctx, const std::string& path, const ExecOptions& options, const ExecIO& io,
                const CancelToken& cancel) {
  if (options.command.empty()) throw ValidationError("command", "", "exec needs a command to run: give it after --");
  // remotecommand's query (PodExecOptions): the command's words repeat the command parameter.
  std::string target = path + "/exec?";
  for (const auto& word : options.command) target += "command=" + url_encode(word) + "&";
  if (!options.container.empty()) target += "container=" + url_encode(options.container) + "&";
  if (options.with_stdin) target += "stdin=true&";
  if (options.with_stdout) target += "stdout=true&";
  if (options.with_stderr && !options.tty) target += "stderr=true&";
  if (options.tty) target += "tty=true&";
  target.pop_back();
  // WebSocket first (GET); when the server refuses the upgrade, SPDY/3.1 (POST) as kubectl's
  // fallback executor does (remotecommand/fallback.go).
  const std::string key = ws::new_key();
  auto c = upgrade(ctx, "GET", target, websocket_headers(key, "v5.channel.k8s.io, v4.channel.k8s.io"));
  const bool spdy_mode = c->status != 101;
  bool v5 = false;
  if (spdy_mode) {
    c = upgrade(
        ctx, "POST", target,
        {{"Connection", "Upgrade"}, {"Upgrade", "SPDY/3.1"}, {"X-Stream-Protocol-Version", "v4.channel.k8s.io"}});
    if (c->status != 101) throw decode_error(c->status, c->body);
    const std::string* chosen = c->header("x-stream-protocol-version");
    if (!chosen || *chosen != "v4.channel.k8s.io")
      throw TransportError(
          "the server chose no remotecommand protocol this client speaks over SPDY (v4.channel.k8s.io)");
  } else {
    check_websocket_accept(*c, key);
    const std::string* chosen = c->header("sec-websocket-protocol");
    v5 = chosen && *chosen == "v5.channel.k8s.io";
    if (!chosen || (!v5 && *chosen != "v4.channel.k8s.io"))
      throw TransportError(
          "the server chose no remotecommand subprotocol this client speaks (v5.channel.k8s.io, v4.channel.k8s.io)");
  }

  TlsPump pump(c->ssl, c->fd);
  std::string status;
  bool have_status = false, protocol_error = false;
  auto deliver = [&](int channel, std::string_view data) {
    if (channel == 1 && io.on_stdout)
      io.on_stdout(data);
    else if (channel == 2 && io.on_stderr)
      io.on_stderr(data);
    else if (channel == 3) {
      status += data;
      have_status = true;
    }
  };
  ExecWire wire;
  ws::Decoder decoder;
  spdy::Codec codec_out, codec_in;
  std::mutex spdy_mu;
  std::map<std::uint32_t, int> channel_of;  // SPDY stream id -> remotecommand channel
  std::uint32_t stdin_id = 0, resize_id = 0;
  int open_outputs = 0;  // SPDY: error/stdout/stderr streams the server has not finished
  if (!spdy_mode) {
    auto send_channel = [&pump](char channel, std::string_view data) {
      std::string m(1, channel);
      m += data;
      pump.send(ws::frame(ws::kBinary, m, true));
    };
    wire.send_stdin = [=](std::string_view d) { send_channel(0, d); };
    // v5: {255, 0} closes stdin, so the command sees EOF (remotecommand StreamClose).
    wire.close_stdin = [=] {
      if (v5) send_channel(static_cast<char>(255), std::string(1, '\0'));
    };
    wire.send_resize = [=](std::string_view d) { send_channel(4, d); };
    wire.on_bytes = [&](std::string_view bytes) {
      decoder.feed(bytes);
      while (auto m = decoder.next()) {
        if (m->opcode == ws::kPing) {
          pump.send(ws::frame(ws::kPong, m->payload, true));
        } else if (m->opcode == ws::kClose) {
          pump.send(ws::frame(ws::kClose, std::string("\x03\xe8", 2), true));
          pump.finish();
        } else if ((m->opcode == ws::kBinary || m->opcode == ws::kText) && !m->payload.empty()) {
          deliver(static_cast<unsigned char>(m->payload[0]), std::string_view(m->payload).substr(1));
        }
      }
    };
  } else {
    // remotecommand v2-v4 createStreams: error, then stdin, stdout, stderr (not with a tty), resize.
    std::uint32_t next_id = 1;
    auto open = [&](const char* type, int channel) {
      const std::uint32_t id = next_id;
      next_id += 2;
      pump.send(codec_out.syn_stream(id, {{"streamtype", type}}));
      channel_of[id] = channel;
      if (channel >= 1 && channel <= 3) ++open_outputs;
      return id;
    };
    open("error", 3);
    if (options.with_stdin) stdin_id = open("stdin", 0);
    if (options.with_stdout) open("stdout", 1);
    if (options.with_stderr && !options.tty) open("stderr", 2);
    if (options.tty) resize_id = open("resize", 4);
    wire.send_stdin = [&](std::string_view d) { pump.send(spdy::Codec::data(stdin_id, d, false)); };
    wire.close_stdin = [&] { pump.send(spdy::Codec::data(stdin_id, {}, true)); };
    wire.send_resize = [&](std::string_view d) {
      if (resize_id) pump.send(spdy::Codec::data(resize_id, d, false));
    };
    wire.on_bytes = [&](std::string_view bytes) {
      codec_in.feed(bytes);
      while (auto f = codec_in.next()) {
        if (f->type == spdy::kPing) {
          pump.send(spdy::Codec::ping(f->value));
        } else if (f->type == spdy::kGoAway) {
          pump.finish();
        } else if (f->type == spdy::kData || f->type == spdy::kRstStream) {
          std::lock_guard lk(spdy_mu);
          const auto it = channel_of.find(f->stream_id);
          if (it == channel_of.end()) continue;
          const int channel = it->second;
          if (!f->data.empty()) deliver(channel, f->data);
          if ((f->fin() || f->type == spdy::kRstStream) && channel >= 1 && channel <= 3) {
            channel_of.erase(it);
            if (--open_outputs == 0) pump.finish();  // the command ended and its output is all here
          }
        }
      }
    };
  }

  std::atomic<bool> done{false};
  Wakeup wakeup;
  // The input side: stdin, terminal sizes, cancellation.
  std::thread input([&] {
    std::optional<std::pair<int, int>> last_size;
    auto send_size = [&] {
      if (!options.tty || !io.terminal_size) return;
      const auto size = io.terminal_size();
      if (!size || size == last_size) return;
      last_size = size;
      wire.send_resize(fmt::format(R"({{"Width":{},"Height":{}}})", size->first, size->second));
    };
    send_size();
    bool reading = options.with_stdin && io.stdin_fd >= 0;
    char buf[16384];
    while (!done) {
      if (cancel.cancelled()) {
        pump.abort();
        return;
      }
      ::pollfd fds[2] = {{wakeup.fd, POLLIN, 0}, {reading ? io.stdin_fd : -1, POLLIN, 0}};
      ::poll(fds, 2, 250);
      if (done) break;
      send_size();
      if (reading && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
        const ssize_t n = ::read(io.stdin_fd, buf, sizeof buf);
        if (n > 0) {
          wire.send_stdin(std::string_view(buf, static_cast<std::size_t>(n)));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          reading = false;
          wire.close_stdin();
        }
      }
    }
  });
  auto on_bytes = [&](std::string_view bytes) {
    try {
      wire.on_bytes(bytes);
    } catch (const std::exception&) {
      protocol_error = true;
      pump.abort();
    }
  };
  if (!c->leftover.empty()) on_bytes(c->leftover);
  pump.run(on_bytes);
  done = true;
  wakeup.wake();
  input.join();
  if (cancel.cancelled()) throw TransportError("exec cancelled");
  if (protocol_error) throw TransportError("the server's exec stream is malformed");
  if (!have_status) throw TransportError("the connection to the server ended before the command's exit status arrived");
  return exit_code_from_status(status);
}

// ---- port-forward ----------------------------------------------------------------------------------

namespace {

class SpdyPortForward final : public PortForward {
 public:
  SpdyPortForward(std::unique_ptr<Upgraded> conn, bool websocket, std::vector<Port> ports,
                  PortForwardErrorHandler on_error)
      : conn_(std::move(conn)),
        websocket_(websocket),
        ports_(std::move(ports)),
        on_error_(std::move(on_error)),
        pump_(conn_->ssl, conn_->fd) {
    for (auto& p : ports_) listen(p);
    pump_thread_ = std::thread([this] {
      if (!conn_->leftover.empty()) on_bytes(conn_->leftover);
      pump_.run([this](std::string_view b) { on_bytes(b); });
      {
        std::lock_guard lk(mu_);
        ended_ = true;
      }
      ended_cv_.notify_all();
      stop_listeners();
      // Wake every connection still waiting for the server.
      std::lock_guard lk(mu_);
      for (auto& [id, s] : streams_) {
        if (s.local_fd >= 0) ::shutdown(s.local_fd, SHUT_RDWR);
        s.remote_done = true;
      }
      streams_cv_.notify_all();
    });
    for (std::size_t i = 0; i < listeners_.size(); ++i)
      accept_threads_.emplace_back([this, i] { accept_loop(listeners_[i], ports_[i]); });
  }

  ~SpdyPortForward() override {
    stop();
    if (pump_thread_.joinable()) pump_thread_.join();
    for (auto& t : accept_threads_) t.join();
    std::list<std::thread> conns;
    {
      std::lock_guard lk(mu_);
      conns.swap(conn_threads_);
    }
    for (auto& t : conns) t.join();
  }

  const std::vector<Port>& ports() const override { return ports_; }

  void stop() override {
    {
      std::lock_guard lk(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    stop_listeners();
    {
      std::lock_guard lk(mu_);
      for (auto& [id, s] : streams_)
        if (s.local_fd >= 0) ::shutdown(s.local_fd, SHUT_RDWR);
      for (auto& [id, s] : streams_) s.remote_done = true;
    }
    streams_cv_.notify_all();
    pump_.abort();
    ended_cv_.notify_all();
  }

  void wait() override {
    std::unique_lock lk(mu_);
    ended_cv_.wait(lk, [&] { return ended_ || stopped_; });
    if (ended_ && !stopped_) throw TransportError("the port-forward connection to the server ended");
  }

 private:
  struct StreamState {
    int local_fd = -1;  // data streams: the local connection
    bool is_error = false;
    std::string error_text;
    bool remote_done = false;
    int local = 0, remote = 0;
  };

  void listen(Port& p) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(p.local));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
      const int err = errno;
      ::close(fd);
      for (int l : listeners_) ::close(l);  // no accept thread runs yet
      listeners_.clear();
      throw TransportError(
          fmt::format("unable to listen on 127.0.0.1:{}: {}; choose another local port (0 picks a free one)", p.local,
                      std::strerror(err)));
    }
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    p.local = ntohs(a.sin_port);
    listeners_.push_back(fd);
  }

  void stop_listeners() {
    std::lock_guard lk(listen_mu_);
    for (int fd : listeners_)
      if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  }

  void accept_loop(int listener, Port port) {
    for (;;) {
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        break;
      }
      std::lock_guard lk(mu_);
      if (stopped_ || ended_) {
        ::close(fd);
        break;
      }
      conn_threads_.emplace_back([this, fd, port] { handle(fd, port); });
    }
    ::close(listener);
  }

  void send_raw(const std::string& spdy_bytes) {
    pump_.send(websocket_ ? ws::frame(ws::kBinary, spdy_bytes, true) : spdy_bytes);
  }

  /// One local connection: an error stream and a data stream (portforward.go handleConnection).
  void handle(int fd, Port port) {
    std::uint32_t error_id, data_id;
    {
      std::lock_guard lk(mu_);
      if (stopped_ || ended_) {
        ::close(fd);
        return;
      }
      const int request_id = next_request_id_++;
      error_id = next_stream_id_;
      data_id = next_stream_id_ + 2;
      next_stream_id_ += 4;
      streams_[error_id] = StreamState{-1, true, {}, false, port.local, port.remote};
      streams_[data_id] = StreamState{fd, false, {}, false, port.local, port.remote};
      spdy::Headers h = {
          {"streamtype", "error"}, {"port", std::to_string(port.remote)}, {"requestid", std::to_string(request_id)}};
      // Compressed header blocks must leave in the order they were compressed: under mu_.
      send_raw(codec_.syn_stream(error_id, h));
      send_raw(spdy::Codec::data(error_id, {}, true));  // the client writes nothing on the error stream
      h[0].second = "data";
      send_raw(codec_.syn_stream(data_id, h));
    }
    spdy::pump_fd_to_stream(fd, data_id, [this](const std::string& frame) { send_raw(frame); });
    send_raw(spdy::Codec::data(data_id, {}, true));
    // As portforward.go's handleConnection: the remote side done, then the error stream read to
    // its end, reported, and only then the local connection closed.
    std::unique_lock lk(mu_);
    streams_cv_.wait(
        lk, [&] { return (streams_[data_id].remote_done && streams_[error_id].remote_done) || stopped_ || ended_; });
    const std::string error_text = streams_[error_id].error_text;
    streams_.erase(data_id);
    streams_.erase(error_id);
    lk.unlock();
    if (!error_text.empty() && on_error_)
      on_error_(fmt::format("an error occurred forwarding {} -> {}: {}", port.local, port.remote, error_text));
    ::close(fd);
  }

  void on_bytes(std::string_view bytes) {
    try {
      if (websocket_) {
        ws_.feed(bytes);
        while (auto m = ws_.next()) {
          if (m->opcode == ws::kPing)
            pump_.send(ws::frame(ws::kPong, m->payload, true));
          else if (m->opcode == ws::kClose)
            pump_.finish();
          else
            codec_in_.feed(m->payload);
        }
      } else {
        codec_in_.feed(bytes);
      }
      while (auto f = codec_in_.next()) on_frame(*f);
    } catch (const std::exception&) {
      pump_.abort();
    }
  }

  void on_frame(const spdy::Frame& f) {
    if (f.type == spdy::kPing) {
      send_raw(spdy::Codec::ping(f.value));
      return;
    }
    if (f.type == spdy::kGoAway) {
      pump_.finish();
      return;
    }
    if (f.type != spdy::kData && f.type != spdy::kRstStream) return;  // SYN_REPLY, SETTINGS, ...
    std::lock_guard lk(mu_);
    auto it = streams_.find(f.stream_id);
    if (it == streams_.end()) return;
    StreamState& s = it->second;
    const bool end = f.type == spdy::kRstStream || f.fin();
    if (s.is_error) {
      s.error_text += f.data;
    } else {
      if (!f.data.empty() && s.local_fd >= 0 && !write_all(s.local_fd, f.data)) ::shutdown(s.local_fd, SHUT_RDWR);
      // A reset stops reading the local side (the connection closes once the error is reported);
      // a FIN passes the half-close on.
      if (f.type == spdy::kRstStream && s.local_fd >= 0)
        ::shutdown(s.local_fd, SHUT_RD);
      else if (f.fin() && s.local_fd >= 0)
        ::shutdown(s.local_fd, SHUT_WR);
    }
    if (end) {
      s.remote_done = true;
      streams_cv_.notify_all();
    }
  }

  std::unique_ptr<Upgraded> conn_;
  bool websocket_;
  std::vector<Port> ports_;
  PortForwardErrorHandler on_error_;
  TlsPump pump_;
  ws::Decoder ws_;
  spdy::Codec codec_;     // frames we send (its compression context)
  spdy::Codec codec_in_;  // frames we receive (the server's)
  std::mutex mu_, listen_mu_;
  std::condition_variable streams_cv_, ended_cv_;
  std::map<std::uint32_t, StreamState> streams_;
  std::uint32_t next_stream_id_ = 1;  // a client's streams are odd
  int next_request_id_ = 0;
  bool stopped_ = false, ended_ = false;
  std::vector<int> listeners_;
  std::thread pump_thread_;
  std::vector<std::thread> accept_threads_;
  std::list<std::thread> conn_threads_;
};

}  // namespace

std::unique_ptr<PortForward> forward_ports(const StreamContext& ctx, const std::string& path,
                                           std::vector<PortForward::Port> ports, PortForwardErrorHandler on_error) {
  if (ports.empty()) throw ValidationError("ports", "", "port-forward needs at least one port: [LOCAL:]REMOTE");
  for (const auto& p : ports) {
    if (p.remote < 1 || p.remote > 65535)
      throw ValidationError("ports", std::to_string(p.remote), "a remote port must be between 1 and 65535");
    if (p.local < 0 || p.local > 65535)
      throw ValidationError("ports", std::to_string(p.local),
                            "a local port must be between 0 (any free port) and 65535");
  }
  std::string target = path + "/portforward";
  // kubectl 1.32: SPDY tunnelled in a WebSocket first (PortForwardWebsockets), then plain SPDY.
  const std::string key = ws::new_key();
  auto c = upgrade(ctx, "GET", target, websocket_headers(key, "SPDY/3.1+portforward.k8s.io"));
  bool websocket = c->status == 101;
  if (websocket) {
    check_websocket_accept(*c, key);
  } else {
    c = upgrade(
        ctx, "POST", target,
        {{"Connection", "Upgrade"}, {"Upgrade", "SPDY/3.1"}, {"X-Stream-Protocol-Version", "portforward.k8s.io"}});
    if (c->status != 101) throw decode_error(c->status, c->body);
  }
  return std::make_unique<SpdyPortForward>(std::move(c), websocket, std::move(ports), std::move(on_error));
}

}  // namespace gpupool::kube
