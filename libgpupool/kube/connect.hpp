// kube/connect.hpp — the one way the kube layer reaches an API server (private): TCP bounded by
// connect_timeout, the kubeconfig's proxy-url (an HTTP CONNECT tunnel for https servers), and TLS
// as the kubeconfig says (CA from memory, client certificate and key from memory, tls-server-name
// for SNI and verification, an IP address verified as an IP, insecure-skip-tls-verify).
// The REST transport (http_transport.cpp) and exec/port-forward (streams.cpp) both connect here.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "gpupool/transport.hpp"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_session_st SSL_SESSION;
typedef struct x509_st X509;
typedef struct x509_store_ctx_st X509_STORE_CTX;
typedef struct evp_pkey_st EVP_PKEY;

namespace gpupool::kube {

/// When an I/O wait gives up: a point in time (max: never) and a token polled while waiting.
struct Deadline {
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::time_point::max();
  const CancelToken* cancel = nullptr;
  static Deadline after(std::chrono::milliseconds d, const CancelToken* cancel = nullptr) {
    return {std::chrono::steady_clock::now() + d, cancel};
  }
};

/// Why an I/O call on a Connection failed (the caller words the message; no secrets in `what`).
struct IoError : std::runtime_error {
  enum Kind { timeout, cancelled, failed };
  Kind kind;
  IoError(Kind k, const std::string& what) : std::runtime_error(what), kind(k) {}
};

/// A TLS session store for one server and identity: the newest session of this process, and,
/// with a directory, a file that the next process resumes from (TransportOptions::tls_session_dir).
class SessionStore;

/// One SSL_CTX for a cluster and one client identity, built once (CA and key parsed once) and
/// shared by every connection made with it. Thread-safe.
class TlsContext {
 public:
  /// `session_dir`: where sessions are kept between processes (empty: within this process only).
  TlsContext(const KubeCluster& cluster, const RequestCredentials& credentials, const std::string& session_dir = "");
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  SSL_CTX* get() const { return ctx_; }
  /// Whether connections made with this context serve `credentials` (the same certificate and key).
  bool serves(const RequestCredentials& credentials) const {
    return credentials.client_certificate_pem == cert_ && credentials.client_key_pem == key_;
  }
  /// Whether sessions are kept in a file (only then does the debug line say "resumed").
  bool sessions_on_disk() const;
  /// A session to offer on a new connection (a new reference), or null.
  SSL_SESSION* session_to_offer() const;
  /// Drops the kept sessions (a handshake with one failed: the next starts afresh).
  void forget_sessions() const;
  /// Whether the client certificate or key, read for a full handshake after a session was kept,
  /// turned out unusable (the handshake then fails with ConfigError, as building the context does).
  bool identity_failed() const { return identity_failed_; }

 private:
  static int provide_identity(SSL* ssl, void* self);
  static int verify_with_ca(X509_STORE_CTX* store_ctx, void* self);
  SSL_CTX* ctx_ = nullptr;
  std::string cert_, key_, ca_;
  std::unique_ptr<SessionStore> sessions_;
  /// With a session to resume, the CA and the client certificate are read from PEM only when a
  /// handshake needs them (a full one: the server's certificate to verify, a CertificateRequest).
  std::once_flag ca_once_, identity_once_;
  std::vector<X509*> identity_certs_;  ///< the client certificate, then its chain
  EVP_PKEY* identity_key_ = nullptr;
  std::atomic<bool> identity_failed_{false};
};

/// The time a new connection took (for the transport's debug line).
struct ConnectTimes {
  double tcp_ms = 0, tls_ms = 0;
  double context_ms = 0;  ///< building the TLS context, while TCP connected (not in tcp_ms)
  bool tls = false, resumed = false;
};

/// A connection to the API server (plain or TLS), non-blocking underneath; every wait is bounded by
/// a Deadline. Not thread-safe: one user at a time.
class Connection {
 public:
  Connection() = default;
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  int fd() const { return fd_; }
  SSL* ssl() const { return ssl_; }  ///< null for http://
  /// Writes all of `data` (throws IoError).
  void write_all(std::string_view data, const Deadline& deadline);
  /// Reads what is there (waiting for something); 0 when the peer closed. Throws IoError.
  std::size_t read_some(char* buf, std::size_t size, const Deadline& deadline);
  /// Waits for the answer to a request just written (saves the read that would only say EAGAIN).
  void wait_for_answer(const Deadline& deadline);
  ConnectTimes times;

 private:
  friend std::unique_ptr<Connection> connect_to_server(const KubeCluster&, const std::function<const TlsContext*()>&,
                                                       std::chrono::milliseconds, const CancelToken*);
  /// Waits until the socket is readable (or writable); throws IoError on timeout / cancel.
  void wait(bool for_write, const Deadline& deadline);
  int fd_ = -1;
  SSL* ssl_ = nullptr;
};

/// The TLS context of a connection, asked for once (for https://) while the TCP connection is
/// being made; what it throws is thrown by connect_to_server.
using TlsSource = std::function<const TlsContext*()>;

/// Connects to `cluster.server` (through `cluster.proxy_url` when set) and, for https://, makes
/// the TLS handshake with the context `tls` gives, built while TCP connects (its time:
/// Connection::times.context_ms). The TCP connect, the proxy's answer and the handshake are bounded
/// by `connect_timeout`. Throws UnreachableError (no TCP connection: refused, no such host, timed
/// out) or TransportError (proxy refused, TLS failed; the certificate problem named).
std::unique_ptr<Connection> connect_to_server(const KubeCluster& cluster, const TlsSource& tls,
                                              std::chrono::milliseconds connect_timeout,
                                              const CancelToken* cancel = nullptr);

/// The warning for insecure-skip-tls-verify, said once per transport through `logger`.
void warn_if_insecure(const KubeCluster& cluster, const Logger& logger);

/// The first header named `name` (case-insensitive), or nullptr (HttpResponse::header too).
const std::string* find_header(const HttpHeaders& headers, std::string_view name);

/// An HTTP/1.1 response head: status and headers (names as sent).
struct ResponseHead {
  int status = 0;
  HttpHeaders headers;
  const std::string* header(std::string_view name) const { return find_header(headers, name); }
};
/// Parses `head` (the status line and header lines, without the blank line). Returns false when it
/// is not an HTTP/1.x response.
bool parse_response_head(std::string_view head, ResponseHead& out);

/// Reads a response from `c`: `buffered` holds bytes already read; the head (reading more as needed)
/// then the body by its framing (none for HEAD/1xx/204/304, chunked, Content-Length, or up to the
/// close), each piece of it (as framed, not decoded) handed to `on_body` (return false: stop).
/// `got_bytes` turns true at the first byte of the response. Returns whether the connection can
/// carry another request (the body ended by its framing and the server did not ask to close).
class ResponseReader {
 public:
  ResponseReader(Connection& c, Deadline deadline) : c_(c), deadline_(deadline) {}
  /// Reads up to the end of the head; 1xx heads are skipped. Throws IoError, or TransportError for
  /// a malformed or oversized head; IoError(failed, "closed") when the peer closed before any byte.
  ResponseHead read_head(bool head_request);
  /// Reads the body (after read_head). Returns false when `on_body` stopped it.
  template <class F>
  bool read_body(F&& on_body);
  /// After read_body returned true: whether the connection can carry another request.
  bool reusable() const { return reusable_; }
  /// After read_body returned true: whether the server keeps the connection open (no
  /// Connection: close), bytes of a next answer already read or not — a pipelined request's
  /// answer may follow in the buffer.
  bool kept_open() const { return kept_open_; }
  bool got_bytes() const { return got_bytes_; }
  /// Bytes read past the head (an upgraded connection's first bytes), taken once.
  std::string take_buffered() { return std::exchange(buf_, {}); }
  void set_deadline(const Deadline& d) { deadline_ = d; }

 private:
  bool fill();  ///< reads more into buf_; false at EOF
  Connection& c_;
  Deadline deadline_;
  std::string buf_;
  bool got_bytes_ = false, reusable_ = false, kept_open_ = false, no_body_ = false, chunked_ = false,
       until_close_ = false;
  bool close_after_ = false;  ///< the server said Connection: close
  std::size_t length_ = 0;
};

template <class F>
bool ResponseReader::read_body(F&& on_body) {
  reusable_ = kept_open_ = false;
  if (no_body_) {
    kept_open_ = !close_after_;
    reusable_ = buf_.empty() && kept_open_;
    return true;
  }
  if (until_close_) {
    while (true) {
      if (!buf_.empty() && !on_body(std::string_view(buf_))) return false;
      buf_.clear();
      if (!fill()) return true;
    }
  }
  // `left` bytes of body (a Content-Length body or one chunk) to on_body; false: it stopped.
  auto pass = [&](std::size_t left) {
    while (left > 0) {
      if (buf_.empty() && !fill())
        throw IoError(IoError::failed, "the server closed the connection in the middle of the body");
      const std::size_t n = std::min(left, buf_.size());
      if (!on_body(std::string_view(buf_.data(), n))) return false;
      buf_.erase(0, n);
      left -= n;
    }
    return true;
  };
  if (!chunked_) {
    if (!pass(length_)) return false;
    kept_open_ = !close_after_;
    reusable_ = buf_.empty() && kept_open_;
    return true;
  }
  // chunked: size line [; extensions] CRLF, data CRLF ... 0 CRLF [trailers] CRLF
  auto line = [&]() -> std::string {
    std::size_t e;
    while ((e = buf_.find("\r\n")) == std::string::npos) {
      if (buf_.size() > 8192) throw TransportError("the server's chunked body has a malformed chunk header");
      if (!fill()) throw IoError(IoError::failed, "the server closed the connection in the middle of the body");
    }
    std::string l = buf_.substr(0, e);
    buf_.erase(0, e + 2);
    return l;
  };
  while (true) {
    const std::string size_line = line();
    char* end = nullptr;
    const unsigned long long size = std::strtoull(size_line.c_str(), &end, 16);
    if (end == size_line.c_str()) throw TransportError("the server's chunked body has a malformed chunk size");
    if (size == 0) {
      while (!line().empty()) {}  // trailers up to the blank line
      kept_open_ = !close_after_;
      reusable_ = buf_.empty() && kept_open_;
      return true;
    }
    if (!pass(static_cast<std::size_t>(size))) return false;
    if (!line().empty()) throw TransportError("the server's chunked body has a malformed chunk end");
  }
}

}  // namespace gpupool::kube
