#include "embedded/http_server.hpp"
#include "common/ascii.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <ctime>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "common/openssl_errors.hpp"
#include "embedded/tls.hpp"

namespace gpupool::embedded {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

// The token of an Authorization header as bearertoken.Authenticator reads it
// (staging/src/k8s.io/apiserver/pkg/authentication/request/bearertoken): the header trimmed, split
// on spaces into at most three parts, the scheme "bearer" in any case (the Python client sends
// "bearer"), the token the second part; none when the scheme differs or the token is empty.
std::optional<std::string_view> bearer_token(std::string_view auth) {
  const auto space = [](char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
  };
  while (!auth.empty() && space(auth.front())) auth.remove_prefix(1);
  while (!auth.empty() && space(auth.back())) auth.remove_suffix(1);
  const auto first = auth.find(' ');
  if (first == std::string_view::npos || ascii::lower(auth.substr(0, first)) != "bearer") return std::nullopt;
  std::string_view token = auth.substr(first + 1);
  token = token.substr(0, token.find(' '));
  if (token.empty()) return std::nullopt;
  return token;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

void parse_target(std::string_view target, Request& r) {
  const auto qm = target.find('?');
  r.path = percent_decode(target.substr(0, qm), false);
  if (qm == std::string_view::npos) return;
  std::string_view qs = target.substr(qm + 1);
  while (!qs.empty()) {
    const auto amp = qs.find('&');
    const auto part = qs.substr(0, amp);
    const auto eq = part.find('=');
    if (!part.empty())
      r.query.emplace(percent_decode(part.substr(0, eq), true),
                      eq == std::string_view::npos ? std::string() : percent_decode(part.substr(eq + 1), true));
    if (amp == std::string_view::npos) break;
    qs.remove_prefix(amp + 1);
  }
}

// The Impersonate-* headers as buildImpersonationRequests reads them
// (staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go): the first User and Uid,
// every Group, and each Impersonate-Extra-KEY's values under KEY lower-cased and then
// percent-decoded (unescapeExtraKey: kept as it is when that fails).
void read_impersonation(const http::request<http::string_body>& req, Request& r) {
  constexpr std::string_view kExtra = "impersonate-extra-";
  for (const auto& f : req) {
    const std::string name = ascii::lower(f.name_string());
    const std::string value(f.value());
    if (name == "impersonate-user") {
      if (r.impersonate_user.empty()) r.impersonate_user = value;
    } else if (name == "impersonate-group") {
      r.impersonate_groups.push_back(value);
    } else if (name == "impersonate-uid") {
      if (r.impersonate_uid.empty()) r.impersonate_uid = value;
    } else if (name.size() > kExtra.size() && name.starts_with(kExtra)) {
      const std::string_view key = std::string_view(name).substr(kExtra.size());
      // url.PathUnescape: a '%' not followed by two hex digits fails it.
      bool ok = true;
      for (std::size_t i = 0; i < key.size(); ++i)
        if (key[i] == '%' && !(i + 2 < key.size() && hex_value(key[i + 1]) >= 0 && hex_value(key[i + 2]) >= 0))
          ok = false;
      r.impersonate_extra[ok ? percent_decode(key, false) : std::string(key)].push_back(value);
    }
  }
}

std::string reason_text(int status) { return std::string(http::obsolete_reason(static_cast<http::status>(status))); }

}  // namespace

std::string verb_of(const Request& r) {
  const auto w = r.query.find("watch");
  const bool watch = w != r.query.end() && (w->second == "1" || w->second == "t" || w->second == "T" ||
                                            w->second == "true" || w->second == "TRUE" || w->second == "True");
  std::vector<std::string_view> segs;
  std::string_view p = r.path;
  while (!p.empty()) {
    while (!p.empty() && p.front() == '/') p.remove_prefix(1);
    const auto j = p.find('/');
    if (!p.empty()) segs.push_back(p.substr(0, j));
    if (j == std::string_view::npos) break;
    p.remove_prefix(j);
  }
  std::size_t i = !segs.empty() && segs[0] == "api" ? 2 : 3;
  bool named = false;
  if (segs.size() > i) {
    if (segs[i] == "watch") return "watch";
    const bool in_ns = segs[i] == "namespaces" && segs.size() >= i + 3;
    named = segs.size() > i + (in_ns ? 3 : 1);
  }
  if (r.method == "GET") return watch ? "watch" : named ? "get" : "list";
  if (r.method == "POST") return "create";
  if (r.method == "PUT") return "update";
  if (r.method == "PATCH") return "patch";
  if (r.method == "DELETE") return named ? "delete" : "deletecollection";
  return "unknown";
}

namespace {

// The server's TLS sessions, in memory, found by the id a ticket carries (stateful tickets:
// SSL_OP_NO_TICKET, SSL_CTX_sess_set_get_cb(3)). With stateless tickets every resumption
// decrypted the ticket and decoded the session in it — the client's certificate included,
// through OpenSSL 3's key decoders — and every new ticket encoded it again: together ~35% of the
// server's CPU for a command's connection. Here a resumption copies a kept session. A ticket
// stays valid for its lifetime however often it is offered (the command offers the ticket of its
// session file until it is half way through it; kube-apiserver's — Go's — tickets are not
// single-use either, and no early data is accepted, so a replay gains nothing), and a fresh one
// is not replaced on resumption (SSL_set_num_tickets(ssl, 0)); past half its lifetime it is.
// Like the ticket keys before, the sessions do not outlive the server.
class SessionCache {
 public:
  static constexpr std::size_t kMaxSessions = 4096;

  void install(SSL_CTX* ctx, std::function<std::int64_t()> clock) {
    now_ = clock ? std::move(clock) : [] { return static_cast<std::int64_t>(std::time(nullptr)); };
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER | SSL_SESS_CACHE_NO_INTERNAL);
    SSL_CTX_set_ex_data(ctx, index(), this);
    SSL_CTX_sess_set_new_cb(ctx, on_new);
    SSL_CTX_sess_set_get_cb(ctx, on_get);
  }
  SessionCache() = default;
  SessionCache(const SessionCache&) = delete;
  SessionCache& operator=(const SessionCache&) = delete;
  ~SessionCache() {
    for (auto& [id, kept] : sessions_) SSL_SESSION_free(kept.session);
  }

 private:
  static int index() {
    static const int i = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return i;
  }
  static SessionCache* of(SSL* ssl) {
    return static_cast<SessionCache*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), index()));
  }
  static int on_new(SSL* ssl, SSL_SESSION* given) {
    // A copy of our own: the connection's session object is marked not resumable by OpenSSL when
    // the connection ends without a TLS shutdown (ssl_clear_bad_session), as HTTP/1.1 ones may.
    SSL_SESSION* session = SSL_SESSION_dup(given);
    if (!session) return 0;
    unsigned int len = 0;
    const unsigned char* id = SSL_SESSION_get_id(session, &len);
    SessionCache& self = *of(ssl);
    std::lock_guard lock(self.mu_);
    const Kept kept{session, self.now_()};
    auto [it, added] = self.sessions_.try_emplace(std::string(reinterpret_cast<const char*>(id), len), kept);
    if (!added) {
      SSL_SESSION_free(it->second.session);
      it->second = kept;
    } else {
      self.order_.push_back(it->first);
    }
    while (self.sessions_.size() > kMaxSessions) {  // the oldest leave first (order_ names each kept one)
      auto old = self.sessions_.find(self.order_.front());
      SSL_SESSION_free(old->second.session);
      self.sessions_.erase(old);
      self.order_.pop_front();
    }
    return 0;  // OpenSSL keeps its reference to `given`
  }
  static SSL_SESSION* on_get(SSL* ssl, const unsigned char* id, int len, int* copy) {
    *copy = 0;  // the caller owns the copy returned
    SessionCache& self = *of(ssl);
    std::lock_guard lock(self.mu_);
    auto it = self.sessions_.find(std::string(reinterpret_cast<const char*>(id), static_cast<std::size_t>(len)));
    if (it == self.sessions_.end()) return nullptr;
    const std::int64_t age = self.now_() - it->second.created, lifetime = SSL_SESSION_get_timeout(it->second.session);
    // Expired: a full handshake (the session leaves in its turn). kube-apiserver's (Go's) server
    // likewise refuses a ticket older than its lifetime; OpenSSL checks no TLS 1.3 ticket's age
    // but for early data, so this is the check.
    if (age < 0 || age >= lifetime) return nullptr;
    // (Should OpenSSL still refuse the session after this — a cipher suite of another hash — the
    // full handshake sends no ticket either; the client offers its old one again, which is
    // replaced once past half its lifetime: a cost in time only, and only for such a client.)
    if (age < lifetime / 2) SSL_set_num_tickets(ssl, 0);
    // A copy, for the same reason: the kept one must stay resumable.
    return SSL_SESSION_dup(it->second.session);
  }

  struct Kept {
    SSL_SESSION* session;
    std::int64_t created;  // by now_
  };
  std::function<std::int64_t()> now_;
  std::mutex mu_;
  std::map<std::string, Kept> sessions_;
  std::deque<std::string> order_;
};

}  // namespace

struct HttpServer::Impl {
  Options opt;
  Handler handler;
  FaultInjector& faults;
  SessionCache sessions;  // before ctx, which points to it: destroyed after it
  ssl::context ctx{ssl::context::tls_server};
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::thread accept_thread;
  std::atomic<bool> stopping{false};
  int port = 0;

  struct Conn {
    std::thread thread;
    int fd = -1;
    std::atomic<bool> done{false};
    std::atomic<bool> streaming{false};  // a streamed response (watch, followed log) is being written
  };
  std::mutex mu;
  std::list<std::unique_ptr<Conn>> conns;

  Impl(Options o, Handler h, FaultInjector& f) : opt(std::move(o)), handler(std::move(h)), faults(f) {}

  /// SO_LINGER 0 then close: the peer sees a TCP RST, not an orderly close.
  static void reset(tcp::socket& sock) {
    ::linger lg{1, 0};
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    boost::system::error_code ec;
    sock.close(ec);
  }

  void listen() {
    try {
      const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port ? port : opt.port));
      acceptor.open(ep.protocol());
      acceptor.set_option(tcp::acceptor::reuse_address(true));
      acceptor.bind(ep);
      acceptor.listen();
      port = acceptor.local_endpoint().port();
    } catch (const boost::system::system_error& e) {
      boost::system::error_code ec;
      acceptor.close(ec);
      throw Error(fmt::format("embedded server cannot listen on 127.0.0.1:{}: {} (choose another port, or 0 for any)",
                              port ? port : opt.port, e.code().message()));
    }
    stopping = false;
    accept_thread = std::thread([this] { accept_loop(); });
  }

  void accept_loop() {
    while (!stopping) {
      boost::system::error_code ec;
      tcp::socket sock(ioc);
      acceptor.accept(sock, ec);
      if (ec) {
        if (stopping) break;
        continue;
      }
      // Go's net package sets TCP_NODELAY on every TCP connection (net/tcpsock.go: "the default is
      // true (no delay)"), so the API server never holds back a response's last segment. Without it
      // a response written as several TLS records waits for the client's delayed ACK (~40 ms on
      // Linux) before its last record leaves: `gpupool get` took 50-60 ms instead of ~10.
      sock.set_option(tcp::no_delay(true), ec);
      std::lock_guard lk(mu);
      // Reap finished connections.
      for (auto it = conns.begin(); it != conns.end();) {
        if ((*it)->done) {
          (*it)->thread.join();
          it = conns.erase(it);
        } else {
          ++it;
        }
      }
      auto c = std::make_unique<Conn>();
      c->fd = sock.native_handle();
      Conn* raw = c.get();
      c->thread = std::thread([this, raw, s = std::move(sock)]() mutable {
        serve(std::move(s), *raw);
        raw->done = true;
      });
      conns.push_back(std::move(c));
    }
  }

  /// The user of the connection's client certificate; `refused`: one was sent and did not verify.
  struct CertificateIdentity {
    Identity id;
    bool refused = false;
  };

  CertificateIdentity identity_from_certificate(SSL* ssl_handle) {
    CertificateIdentity out;
    Identity& id = out.id;
    X509* cert = SSL_get1_peer_certificate(ssl_handle);
    if (!cert) return out;
    out.refused = SSL_get_verify_result(ssl_handle) != X509_V_OK;
    if (!out.refused) {
      // Read from the verified certificate itself (a PEM round trip was ~10% of the server's CPU
      // for a command's connection).
      auto subject = certificate_subject(cert);
      if (!subject.empty() && !subject[0].empty()) {
        id.user = subject[0];
        id.groups.assign(subject.begin() + 1, subject.end());
        id.groups.push_back("system:authenticated");
        // x509.CommonNameUserConversion: the credential id is the SHA-256 of the certificate's DER.
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        if (X509_digest(cert, EVP_sha256(), md, &len) == 1) {
          id.credential_id = "X509SHA256=";
          for (unsigned int i = 0; i < len; ++i) id.credential_id += fmt::format("{:02x}", md[i]);
        }
      }
    }
    X509_free(cert);
    return out;
  }

  void serve(tcp::socket sock, Conn& conn) {
    ssl::stream<tcp::socket> stream(std::move(sock), ctx);
    boost::system::error_code ec;
    stream.handshake(ssl::stream_base::server, ec);
    if (ec) {
      stream.next_layer().close(ec);
      return;
    }
    const CertificateIdentity cert = identity_from_certificate(stream.native_handle());
    boost::beast::flat_buffer buf;
    buf.reserve(16 * 1024);  // a TLS record's worth per read (beast reads 512 bytes into an empty buffer)
    // Answers to pipelined requests leave together: while the next request's head is already
    // read, a plain answer waits in `pending` and goes out with the next ones in one TLS write
    // (a record and a send each cost more than the answer: ten 404s of `gpupool get` were ten
    // sends). Anything that is not a plain answer, or a wait for more input, sends them first.
    std::string pending;
    boost::system::error_code wec;  // the last flush's
    auto flush = [&] {
      if (pending.empty()) return !wec;
      net::write(stream, net::buffer(pending), wec);
      pending.clear();
      return !wec;
    };
    auto next_head_read = [&] {
      const auto b = buf.data();
      return std::string_view(static_cast<const char*>(b.data()), b.size()).find("\r\n\r\n") != std::string_view::npos;
    };
    while (!stopping) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(64 * 1024 * 1024);
      http::read(stream, buf, parser, ec);
      if (ec) break;
      const auto& req = parser.get();
      Request r;
      r.method = std::string(req.method_string());
      parse_target(req.target(), r);
      r.content_type = std::string(req[http::field::content_type]);
      r.accept = std::string(req[http::field::accept]);
      r.user_agent = std::string(req[http::field::user_agent]);
      r.body = req.body();
      r.target = std::string(req.target());
      read_impersonation(req, r);
      if (boost::beast::http::token_list(req[http::field::connection]).exists("upgrade"))
        for (const auto& f : req) {
          std::string name(f.name_string());
          for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          if (name == "upgrade" || name.rfind("sec-websocket-", 0) == 0 || name == "x-stream-protocol-version")
            r.upgrade_headers.emplace_back(std::move(name), std::string(f.value()));
        }
      // kube-apiserver's authenticators in their order (pkg/kubeapiserver/authenticator/config.go:
      // the x509 client certificate before bearer tokens; union.New: the first that succeeds
      // wins, and a failure counts only when none does): a verified certificate's user (a token
      // sent with it is not looked at), else a known token's, else 401 for a token not known or a
      // certificate that did not verify. Checked on kube-apiserver v1.32.13.
      bool unauthorized = false;
      const std::string auth(req[http::field::authorization]);
      if (!cert.id.user.empty()) {
        r.user = cert.id.user;
        r.groups = cert.id.groups;
        r.credential_id = cert.id.credential_id;
      } else if (const auto token = bearer_token(auth)) {
        auto it = opt.tokens.find(std::string(*token));
        std::optional<Identity> jwt;
        if (it == opt.tokens.end() && opt.authenticate_token) jwt = opt.authenticate_token(*token);
        if (it != opt.tokens.end() || jwt) {
          const Identity& id = it != opt.tokens.end() ? it->second : *jwt;
          r.user = id.user;
          r.groups = id.groups;
          r.credential_id = id.credential_id;
          r.uid = id.uid;
          r.extra = id.extra;
        } else {
          unauthorized = true;
        }
      } else if (cert.refused) {
        unauthorized = true;
      }
      const bool keep_alive = req.keep_alive();
      const auto decision = faults.decide(verb_of(r));
      if ((decision.action != FaultInjector::Action::None || decision.latency.count() > 0) && !flush()) break;
      // An injected delay, in slices so that stop() need not wait it out.
      for (const auto until = std::chrono::steady_clock::now() + decision.latency;
           !stopping && std::chrono::steady_clock::now() < until;)
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            until - std::chrono::steady_clock::now(), std::chrono::milliseconds(20)));
      if (decision.action == FaultInjector::Action::Reset) {
        reset(stream.next_layer());
        return;
      }
      Response resp;
      switch (decision.action) {
        case FaultInjector::Action::TooManyRequests:
          // apiserver's max-in-flight filter: 429 with Retry-After.
          resp = status_response(StatusError(429, "TooManyRequests", "Too many requests, please try again later.", {},
                                             {}, {}, {}, decision.retry_after_seconds));
          break;
        case FaultInjector::Action::InternalError:
          resp = status_response(
              StatusError(500, "InternalError", "Internal error occurred: injected fault (gpupool embedded server)"));
          break;
        case FaultInjector::Action::Unavailable:
          resp = status_response(
              StatusError(503, "ServiceUnavailable", "the server is currently unable to handle the request"));
          break;
        default:
          if (unauthorized) {
            resp = status_response(StatusError(401, "Unauthorized", "Unauthorized"));
            break;
          }
          resp = handler(r);
      }
      if (decision.action == FaultInjector::Action::LostResponse) {  // done, but the answer never leaves
        if (resp.stream) resp.stream([](std::string_view) { return false; }, stopping);  // lets it clean up
        reset(stream.next_layer());
        return;
      }
      // What the answer leaves to do after it (a write's controllers): at the latest before the
      // connection's next request; at once when the response is a stream or a takeover.
      auto run_after = [&resp] {
        if (auto after = std::move(resp.after)) after();
      };
      if (resp.takeover || resp.stream) {
        if (!flush()) break;
        run_after();
      }
      if (resp.takeover) {
        // The connection is the handler's from here on: it speaks to the socket through OpenSSL
        // directly (Asio's engine keeps ciphertext in a memory BIO pair; the client sent nothing
        // past the request, so nothing is stranded there) and the connection closes after.
        SSL* ssl = stream.native_handle();
        BIO* bio = BIO_new_socket(stream.next_layer().native_handle(), BIO_NOCLOSE);
        SSL_set_bio(ssl, bio, bio);
        const auto leftover = buf.data();
        std::string rest(static_cast<const char*>(leftover.data()), leftover.size());
        conn.streaming = true;
        resp.takeover(ssl, stream.next_layer().native_handle(), std::move(rest), stopping);
        conn.streaming = false;
        break;
      }
      if (!resp.stream) {
        http::response<http::string_body> res{static_cast<http::status>(resp.status), req.version()};
        res.set(http::field::content_type, resp.content_type);
        res.set(http::field::cache_control, "no-cache, private");
        for (const auto& [k, v] : resp.headers) res.insert(k, v);
        res.body() = std::move(resp.body);
        res.keep_alive(keep_alive);
        res.prepare_payload();
        http::serializer<false, http::string_body> sr{res};
        while (!ec && !sr.is_done())
          sr.next(ec, [&](boost::system::error_code&, const auto& buffers) {
            for (const auto b : boost::beast::buffers_range_ref(buffers))
              pending.append(static_cast<const char*>(b.data()), b.size());
            sr.consume(boost::beast::buffer_bytes(buffers));
          });
        if (ec) break;
        // A write's answer leaves at once: its controllers run after it (resp.after).
        const bool sent =
            !keep_alive || resp.after || pending.size() >= 256 * 1024 || !next_head_read() ? flush() : true;
        run_after();
        if (!sent || !keep_alive) break;
        continue;
      }
      std::string head = fmt::format(
          "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nCache-Control: no-cache, private\r\n"
          "Transfer-Encoding: chunked\r\n",
          resp.status, reason_text(resp.status), resp.content_type);
      for (const auto& [k, v] : resp.headers) head += k + ": " + v + "\r\n";
      head += keep_alive ? "\r\n" : "Connection: close\r\n\r\n";
      net::write(stream, net::buffer(head), ec);
      if (ec) break;
      bool alive = true;
      conn.streaming = true;
      resp.stream(
          [&](std::string_view chunk) {
            if (chunk.empty()) {
              // A liveness probe: has the client hung up while the stream was idle?
              ::pollfd pfd{stream.next_layer().native_handle(), POLLRDHUP, 0};
              if (alive && ::poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) alive = false;
              return alive;
            }
            const std::string framed = fmt::format("{:x}\r\n{}\r\n", chunk.size(), chunk);
            net::write(stream, net::buffer(framed), ec);
            if (ec) alive = false;
            return alive;
          },
          stopping);
      conn.streaming = false;
      if (!alive) break;
      net::write(stream, net::buffer(std::string_view("0\r\n\r\n")), ec);
      if (ec || !keep_alive) break;
    }
    flush();  // a pipelined request that could not be read still has its elders answered
    stream.next_layer().close(ec);
  }
};

HttpServer::HttpServer(Options options, Handler handler, FaultInjector& faults)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), faults)) {
  auto& im = *impl_;
  try {
    im.ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    // The cipher suite kube-apiserver's (Go 1.23's crypto/tls) server picks: its own order, AES-GCM
    // first, 128 before 256 (cipher_suites.go defaultCipherSuitesTLS13 and the TLS 1.2 ECDHE
    // suites of defaultCipherSuites), unless the client puts ChaCha20-Poly1305 first
    // (handshake_server_tls13.go: aesgcmPreferred; OpenSSL's PRIORITIZE_CHACHA does the same).
    // OpenSSL's own server takes the client's order: an OpenSSL client got TLS_AES_256_GCM_SHA384
    // here and TLS_AES_128_GCM_SHA256 from kube-apiserver.
    SSL_CTX* native = im.ctx.native_handle();
    SSL_CTX_set_ciphersuites(native, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256");
    SSL_CTX_set_cipher_list(native,
                            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
                            "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
                            "ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:ECDHE-RSA-AES256-SHA");
    SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_PRIORITIZE_CHACHA);
    im.ctx.use_certificate_chain(net::buffer(im.opt.cert_pem));
    im.ctx.use_private_key(net::buffer(im.opt.key_pem), ssl::context::pem);
    if (!im.opt.client_ca_pem.empty()) {
      im.ctx.add_certificate_authority(net::buffer(im.opt.client_ca_pem));
      // A certificate is optional, and one that does not verify is not refused by the handshake
      // but by the authenticator (a 401), as kube-apiserver asks for one (Go's
      // tls.RequestClientCert) and verifies it in its x509 authenticator.
      SSL_CTX_set_verify(native, SSL_VERIFY_PEER, [](int, X509_STORE_CTX*) { return 1; });
    }
    // Session resumption (the command keeps its TLS session between runs, as Go's servers allow):
    // OpenSSL refuses to resume a session of a server that verifies peers unless a session id
    // context is set (SSL_CTX_set_session_id_context(3)), answering with an internal_error alert.
    static constexpr unsigned char kSessionContext[] = "gpupool-embedded";
    SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
    im.sessions.install(native, im.opt.tls_session_clock);
  } catch (const boost::system::system_error& e) {
    load_openssl_error_strings();  // Asio words an SSL error with OpenSSL's text
    throw Error(fmt::format("embedded server: bad TLS material: {}", e.code().message()));
  }
  im.listen();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const { return impl_->port; }

void HttpServer::stop() {
  auto& im = *impl_;
  if (im.stopping.exchange(true)) return;
  // shutdown() wakes a thread blocked in accept()/read() on Linux.
  ::shutdown(im.acceptor.native_handle(), SHUT_RDWR);
  if (im.accept_thread.joinable()) im.accept_thread.join();
  boost::system::error_code ec;
  im.acceptor.close(ec);
  std::list<std::unique_ptr<Impl::Conn>> conns;
  {
    std::lock_guard lk(im.mu);
    for (auto& c : im.conns)
      if (!c->done) ::shutdown(c->fd, SHUT_RDWR);
    conns.swap(im.conns);
  }
  for (auto& c : conns) c->thread.join();
}

void HttpServer::restart() {
  stop();
  impl_->listen();  // the same port: impl_->port is kept
}

int HttpServer::disconnect_streams() {
  auto& im = *impl_;
  std::lock_guard lk(im.mu);
  int cut = 0;
  for (auto& c : im.conns)
    if (!c->done && c->streaming) {
      ::linger lg{1, 0};
      ::setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
      ::shutdown(c->fd, SHUT_RDWR);
      ++cut;
    }
  return cut;
}

}  // namespace gpupool::embedded
