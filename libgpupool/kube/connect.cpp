// Connecting to an API server: TCP, proxy-url, TLS (kube/connect.hpp).
#include "kube/connect.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "common/base64.hpp"
#include "common/openssl_errors.hpp"
#include "gpupool/error.hpp"
#include "kube/proxy.hpp"
#include "kube/util.hpp"

namespace gpupool::kube {

namespace {

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (!e) return "TLS error";
  return openssl_error_text(e);
}

std::string bracket(const std::string& host) { return host.find(':') != std::string::npos ? "[" + host + "]" : host; }

bool is_ip(const std::string& name) {
  in6_addr probe{};
  return ::inet_pton(AF_INET, name.c_str(), &probe) == 1 || ::inet_pton(AF_INET6, name.c_str(), &probe) == 1;
}

// ---- a socket BIO that never raises SIGPIPE ---------------------------------------------------
// OpenSSL's socket BIO writes with write(2): a peer that has gone would kill the process with
// SIGPIPE. This one is the socket BIO with send(MSG_NOSIGNAL) for writes (no per-call signal mask).
int nosignal_write(BIO* b, const char* data, int len) {
  BIO_clear_retry_flags(b);
  const ssize_t n = ::send(static_cast<int>(BIO_get_fd(b, nullptr)), data, static_cast<std::size_t>(len), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
  return static_cast<int>(n);
}

const BIO_METHOD* nosignal_socket_method() {
  static const BIO_METHOD* method = [] {
    const BIO_METHOD* sock = BIO_s_socket();
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "gpupool socket");
    BIO_meth_set_write(m, nosignal_write);
    BIO_meth_set_read(m, BIO_meth_get_read(sock));
    BIO_meth_set_puts(m, BIO_meth_get_puts(sock));
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(sock));
    BIO_meth_set_create(m, BIO_meth_get_create(sock));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(sock));
    return m;
  }();
  return method;
}

/// The first bytes the server sent during the handshake: a plain HTTP server answers a ClientHello
/// with "HTTP/1.x 400 ...", which OpenSSL reports only as a wrong record version.
struct FirstBytes {
  char bytes[5];
  std::size_t n = 0;
  bool plain_http() const { return n == sizeof bytes && std::string_view(bytes, n) == "HTTP/"; }
};

long keep_first_bytes(BIO* b, int oper, const char* argp, std::size_t, int, long, int ret, std::size_t* processed) {
  if (oper == (BIO_CB_READ | BIO_CB_RETURN) && ret > 0 && processed) {
    auto* first = reinterpret_cast<FirstBytes*>(BIO_get_callback_arg(b));
    const std::size_t take = std::min(*processed, sizeof first->bytes - first->n);
    std::memcpy(first->bytes + first->n, argp, take);
    first->n += take;
  }
  return ret;
}

/// Whether a handshake that failed with SSL_ERROR_SSL would fail again: a protocol error or the
/// server's alert, not a connection that ended half-way (a server restarting).
bool lasting_tls_failure() {
  const unsigned long e = ERR_peek_error();
  return e != 0 && ERR_GET_REASON(e) != SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

/// What to do about the server's alert, when it is about the client's certificate or the protocol
/// version ("" otherwise). Peeks at the error queue (the reason of a received alert is
/// SSL_AD_REASON_OFFSET + its description).
std::string alert_hint() {
  switch (ERR_GET_REASON(ERR_peek_error())) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return "; the server asks for a client certificate: set client-certificate(-data) and client-key(-data) "
             "for the kubeconfig's user";
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
      return "; the server refused the kubeconfig's client certificate: renew it, or check that the cluster's CA "
             "signed it";
    case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
    case SSL_R_UNSUPPORTED_PROTOCOL:
      return "; the server and gpupool share no TLS version (gpupool speaks TLS 1.2 and 1.3)";
    default:
      return "";
  }
}

// ---- TLS sessions kept between processes ------------------------------------------------------
// The newest session of this process is offered to each new connection; with a directory, it is
// also written to a file (owner-only, whole then renamed) that the next process offers: the server
// then resumes it (TLS 1.3 PSK from the ticket, or a TLS 1.2 session) and sends no certificate to
// verify; the client checks nothing less, since the session records the verification of the
// certificate it was made with, and only this file's key — server, CA, client certificate — can
// reach it. A session the server refuses only costs the full handshake.
class SessionFile {
 public:
  /// Drops the server's certificate from a session's DER (SSL_SESSION_ASN1's `peer`, explicitly
  /// tagged [3], ssl/ssl_asn1.c). Resuming needs none of it: the client verified the certificate
  /// when the session was made and a resumed handshake verifies nothing, yet decoding it (an X509
  /// and its public key, through OpenSSL 3's decoders) was ~8% of a warm `gpupool get`. The
  /// elements are read with OpenSSL's own ASN1_get_object; anything but a SEQUENCE of elements of
  /// definite length is left whole.
  static void without_peer_certificate(std::string& der) {
    // One element's header at `p` (advanced past it), within `avail` bytes; false if malformed or
    // of indefinite length (0x21: constructed, indefinite), which DER never has.
    auto header = [](const unsigned char*& p, long avail, long& len, int& tag, int& cls) {
      const int r = ASN1_get_object(&p, &len, &tag, &cls, avail);
      if (r & 0x80) ERR_clear_error();  // what it queued would surface in a later, unrelated error
      return !(r & 0x80) && r != 0x21;
    };
    const auto* begin = reinterpret_cast<const unsigned char*>(der.data());
    const unsigned char* const end = begin + der.size();
    const unsigned char* p = begin;
    long len = 0;
    int tag = 0, cls = 0;
    if (!header(p, end - p, len, tag, cls) || tag != V_ASN1_SEQUENCE || cls != V_ASN1_UNIVERSAL || p + len != end)
      return;
    std::string body;
    bool dropped = false;
    while (p < end) {
      const unsigned char* const at = p;
      if (!header(p, end - p, len, tag, cls)) return;
      p += len;
      if (cls == V_ASN1_CONTEXT_SPECIFIC && tag == 3)
        dropped = true;  // [3] EXPLICIT X509: the peer's certificate
      else
        body.append(reinterpret_cast<const char*>(at), static_cast<std::size_t>(p - at));
    }
    if (!dropped) return;
    const int body_len = static_cast<int>(body.size());
    std::string out(static_cast<std::size_t>(ASN1_object_size(1, body_len, V_ASN1_SEQUENCE)), '\0');
    auto* q = reinterpret_cast<unsigned char*>(out.data());
    ASN1_put_object(&q, 1, body_len, V_ASN1_SEQUENCE, V_ASN1_UNIVERSAL);
    std::memcpy(q, body.data(), body.size());
    OPENSSL_cleanse(der.data(), der.size());
    OPENSSL_cleanse(body.data(), body.size());
    der = std::move(out);
  }

  SessionFile(const std::string& dir, const KubeCluster& cluster, const std::string& client_cert_pem) {
    if (dir.empty()) return;
    // One file per server, trust and identity: SHA-256 of what decides them (never the key itself).
    EVP_MD_CTX* md = EVP_MD_CTX_new();
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    const std::string parts[] = {cluster.server, cluster.tls_server_name, cluster.certificate_authority_pem,
                                 cluster.insecure_skip_tls_verify ? "insecure" : "verify", client_cert_pem};
    bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), nullptr) == 1;
    for (const auto& p : parts) {
      const std::uint64_t n = p.size();  // length-prefixed: no two tuples hash the same bytes
      ok = ok && EVP_DigestUpdate(md, &n, sizeof n) == 1 && EVP_DigestUpdate(md, p.data(), p.size()) == 1;
    }
    ok = ok && EVP_DigestFinal_ex(md, digest, &len) == 1;
    EVP_MD_CTX_free(md);
    if (!ok) return;
    std::string name;
    for (unsigned i = 0; i < 16 && i < len; ++i) name += fmt::format("{:02x}", digest[i]);
    dir_ = dir;
    path_ = dir + "/" + name + ".session";
  }
  bool enabled() const { return !path_.empty(); }
  void forget() const {
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  /// The stored session (a new reference) or null.
  SSL_SESSION* load() const {
    if (path_.empty()) return nullptr;
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    unsigned char buf[16384];
    ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (n <= 0) return nullptr;
    const unsigned char* p = buf;
    SSL_SESSION* s = d2i_SSL_SESSION(nullptr, &p, static_cast<long>(n));
    OPENSSL_cleanse(buf, sizeof buf);
    if (s && !SSL_SESSION_is_resumable(s)) {
      SSL_SESSION_free(s);
      return nullptr;
    }
    return s;
  }

  void store(SSL_SESSION* s) const {
    if (path_.empty()) return;
    const int len = i2d_SSL_SESSION(s, nullptr);
    if (len <= 0 || len > 16384) return;
    std::string der(static_cast<std::size_t>(len), '\0');
    auto* p = reinterpret_cast<unsigned char*>(der.data());
    if (i2d_SSL_SESSION(s, &p) != len) return;
    without_peer_certificate(der);
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) return;
    ::chmod(dir_.c_str(), 0700);
    const std::string tmp = fmt::format("{}.{}", path_, ::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    const bool ok = ::write(fd, der.data(), der.size()) == static_cast<ssize_t>(der.size());
    OPENSSL_cleanse(der.data(), der.size());
    if (::close(fd) != 0 || !ok || std::rename(tmp.c_str(), path_.c_str()) != 0) ::unlink(tmp.c_str());
  }

 private:
  std::string dir_, path_;
};

int session_ex_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

class SessionStore {
 public:
  SessionStore(const std::string& dir, const KubeCluster& cluster, const std::string& cert)
      : file_(dir, cluster, cert) {}
  ~SessionStore() {
    if (latest_) SSL_SESSION_free(latest_);
  }
  bool on_disk() const { return file_.enabled(); }
  /// `resumed`: the session comes from a handshake that resumed the one offered. While the
  /// offered one is in the first half of its lifetime, the file is left as it is: it resumed, so
  /// the next process can resume it too (TLS 1.3 tickets are not single-use for kube-apiserver —
  /// Go's crypto/tls — nor for OpenSSL's stateless tickets), and rewriting the file on every
  /// command was ~0.3 ms of a `gpupool get` (write, rename, the old inode's eviction). A server
  /// that refuses it costs one full handshake, whose session is written.
  void keep(SSL_SESSION* s, bool resumed) {
    if (!SSL_SESSION_is_resumable(s)) return;
    bool fresh_on_disk = false;
    {
      std::lock_guard lock(mu_);
      if (resumed && latest_) {
        const std::time_t age = std::time(nullptr) - static_cast<std::time_t>(SSL_SESSION_get_time(latest_));
        fresh_on_disk = age >= 0 && age < static_cast<std::time_t>(SSL_SESSION_get_timeout(latest_)) / 2;
      }
      SSL_SESSION_up_ref(s);
      if (latest_) SSL_SESSION_free(latest_);
      latest_ = s;
      loaded_ = true;
    }
    if (!fresh_on_disk) file_.store(s);
  }
  /// Whether offer() has a session (the file's, for the first connection of this process).
  bool has_session() {
    SSL_SESSION* s = offer();
    if (s) SSL_SESSION_free(s);
    return s != nullptr;
  }
  SSL_SESSION* offer() {
    std::lock_guard lock(mu_);
    if (!loaded_) {  // the first connection of this process: the file's session, if any
      loaded_ = true;
      latest_ = file_.load();
    }
    if (latest_ && SSL_SESSION_is_resumable(latest_)) {
      SSL_SESSION_up_ref(latest_);
      return latest_;
    }
    return nullptr;
  }
  void forget() {
    std::lock_guard lock(mu_);
    if (latest_) SSL_SESSION_free(latest_);
    latest_ = nullptr;
    file_.forget();
  }

 private:
  SessionFile file_;
  std::mutex mu_;
  SSL_SESSION* latest_ = nullptr;
  bool loaded_ = false;
};

namespace {

int on_new_session(SSL* ssl, SSL_SESSION* session) {
  if (auto* store = static_cast<SessionStore*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), session_ex_index())))
    store->keep(session, SSL_session_reused(ssl) != 0);
  return 0;  // we took our own reference
}

/// The certificates of a PEM text, in order (new references).
std::vector<X509*> read_pem_certificates(const std::string& pem) {
  std::vector<X509*> out;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) out.push_back(cert);
  ERR_clear_error();
  BIO_free(bio);
  return out;
}

EVP_PKEY* read_pem_key(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ERR_clear_error();
  return key;
}

void add_pem_certificates(X509_STORE* store, const std::string& pem) {
  for (X509* cert : read_pem_certificates(pem)) {
    X509_STORE_add_cert(store, cert);
    X509_free(cert);
  }
}

/// The client certificate or key cannot be used: the user's configuration, which no retry mends
/// (kubectl: "tls: failed to find any PEM data in key input", at once).
ConfigError unusable_identity() {
  return ConfigError("kubeconfig", "user",
                     "the client certificate or key cannot be loaded (PEM expected, and the key must match the "
                     "certificate): check client-certificate(-data) and client-key(-data), or the exec plugin's "
                     "clientCertificateData and clientKeyData");
}

void use_client_certificate(SSL_CTX* ctx, const RequestCredentials& cred) {
  std::vector<X509*> certs = read_pem_certificates(cred.client_certificate_pem);
  bool ok = !certs.empty() && SSL_CTX_use_certificate(ctx, certs[0]) == 1;
  for (std::size_t i = 0; i < certs.size(); ++i)
    if (i == 0 || SSL_CTX_add_extra_chain_cert(ctx, certs[i]) != 1) X509_free(certs[i]);  // an added one is the chain's
  EVP_PKEY* key = read_pem_key(cred.client_key_pem);
  ok = ok && key && SSL_CTX_use_PrivateKey(ctx, key) == 1 && SSL_CTX_check_private_key(ctx) == 1;
  if (key) EVP_PKEY_free(key);
  ERR_clear_error();
  if (!ok) throw unusable_identity();
}

}  // namespace

int TlsContext::verify_with_ca(X509_STORE_CTX* store_ctx, void* arg) {
  auto* self = static_cast<TlsContext*>(arg);
  std::call_once(self->ca_once_, [self] { add_pem_certificates(SSL_CTX_get_cert_store(self->ctx_), self->ca_); });
  return X509_verify_cert(store_ctx);
}

int TlsContext::provide_identity(SSL* ssl, void* arg) {
  auto* self = static_cast<TlsContext*>(arg);
  std::call_once(self->identity_once_, [self] {
    self->identity_certs_ = read_pem_certificates(self->cert_);
    self->identity_key_ = read_pem_key(self->key_);
  });
  const auto& certs = self->identity_certs_;
  bool ok = !certs.empty() && self->identity_key_ && SSL_use_certificate(ssl, certs[0]) == 1;
  for (std::size_t i = 1; ok && i < certs.size(); ++i) ok = SSL_add1_chain_cert(ssl, certs[i]) == 1;
  ok = ok && SSL_use_PrivateKey(ssl, self->identity_key_) == 1 && SSL_check_private_key(ssl) == 1;
  if (!ok) self->identity_failed_ = true;
  return ok ? 1 : 0;  // 0 ends the handshake; the failed connection forgets the session
}

TlsContext::TlsContext(const KubeCluster& cluster, const RequestCredentials& cred, const std::string& session_dir)
    : cert_(cred.client_certificate_pem), key_(cred.client_key_pem) {
  await_openssl_start();  // the command's OpenSSL start, if one is under way, then builds on it
  sessions_ = std::make_unique<SessionStore>(session_dir, cluster, cred.client_certificate_pem);
  // A session to resume: a resumed handshake neither verifies the server's certificate nor sends
  // ours (the session carries both), so the CA and the client certificate and key are read from
  // PEM only if the handshake turns out to be a full one (OpenSSL's decoders were ~6% of a warm
  // `gpupool get`). Without one they are read now, a bad key reported here as before.
  const bool deferred = sessions_->has_session();
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (!ctx_) throw TransportError("TLS could not be set up: " + openssl_error());
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  // A server closing without close_notify ends a body read up to the close like a plain close;
  // bodies framed by length or chunks are still checked whole.
  SSL_CTX_set_options(ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx_, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
  static const unsigned char alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx_, alpn, sizeof alpn);
  if (!cluster.insecure_skip_tls_verify) {
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (cluster.certificate_authority_pem.empty()) {
      SSL_CTX_set_default_verify_paths(ctx_);
    } else if (deferred) {
      ca_ = cluster.certificate_authority_pem;
      SSL_CTX_set_cert_verify_callback(ctx_, verify_with_ca, this);
    } else {
      add_pem_certificates(SSL_CTX_get_cert_store(ctx_), cluster.certificate_authority_pem);
    }
  }
  try {
    if (!cred.client_certificate_pem.empty()) {
      if (deferred)
        SSL_CTX_set_cert_cb(ctx_, provide_identity, this);
      else
        use_client_certificate(ctx_, cred);
    }
  } catch (...) {
    SSL_CTX_free(ctx_);
    throw;
  }
  SSL_CTX_set_ex_data(ctx_, session_ex_index(), sessions_.get());
  SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx_, on_new_session);
}

TlsContext::~TlsContext() {
  if (ctx_) SSL_CTX_free(ctx_);
  for (X509* c : identity_certs_) X509_free(c);
  if (identity_key_) EVP_PKEY_free(identity_key_);
  OPENSSL_cleanse(key_.data(), key_.size());
}

bool TlsContext::sessions_on_disk() const { return sessions_->on_disk(); }
SSL_SESSION* TlsContext::session_to_offer() const { return sessions_->offer(); }
void TlsContext::forget_sessions() const { sessions_->forget(); }

void warn_if_insecure(const KubeCluster& cluster, const Logger& logger) {
  if (cluster.insecure_skip_tls_verify && logger)
    logger(LogLevel::warning,
           fmt::format("TLS verification is off for cluster \"{}\" ({}): insecure-skip-tls-verify is set in the "
                       "kubeconfig, so the server's identity is not checked",
                       cluster.name, cluster.server));
}

// ---- Connection -----------------------------------------------------------------------------------

Connection::~Connection() {
  if (ssl_) SSL_free(ssl_);
  if (fd_ >= 0) ::close(fd_);
}

void Connection::wait(bool for_write, const Deadline& d) {
  while (true) {
    if (d.cancel && d.cancel->cancelled()) throw IoError(IoError::cancelled, "cancelled");
    int ms = -1;
    if (d.at != std::chrono::steady_clock::time_point::max()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(d.at - std::chrono::steady_clock::now()).count();
      if (left <= 0) throw IoError(IoError::timeout, "timed out");
      ms = static_cast<int>(std::min<long long>(left + 1, 1 << 30));
    }
    // A cancellable wait wakes every 50 ms to look at the token.
    if (d.cancel && (ms < 0 || ms > 50)) ms = 50;
    ::pollfd p{fd_, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
    const int rc = ::poll(&p, 1, ms);
    if (rc > 0) return;
    if (rc < 0 && errno != EINTR) throw IoError(IoError::failed, std::strerror(errno));
  }
}

void Connection::write_all(std::string_view data, const Deadline& d) {
  while (!data.empty()) {
    if (ssl_) {
      ERR_clear_error();
      const int n = SSL_write(ssl_, data.data(), static_cast<int>(std::min<std::size_t>(data.size(), 1 << 30)));
      if (n > 0) {
        data.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      const int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
        wait(err == SSL_ERROR_WANT_WRITE, d);
        continue;
      }
      throw IoError(IoError::failed, err == SSL_ERROR_SYSCALL && errno ? std::strerror(errno) : openssl_error());
    }
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait(true, d);
    } else if (n < 0 && errno != EINTR) {
      throw IoError(IoError::failed, std::strerror(errno));
    }
  }
}

void Connection::wait_for_answer(const Deadline& d) {
  if (!ssl_ || !SSL_has_pending(ssl_)) wait(false, d);
}

std::size_t Connection::read_some(char* buf, std::size_t size, const Deadline& d) {
  while (true) {
    if (ssl_) {
      ERR_clear_error();
      const int n = SSL_read(ssl_, buf, static_cast<int>(std::min<std::size_t>(size, 1 << 30)));
      if (n > 0) return static_cast<std::size_t>(n);
      const int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_ZERO_RETURN) return 0;
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        wait(err == SSL_ERROR_WANT_WRITE, d);
        continue;
      }
      if (err == SSL_ERROR_SYSCALL && errno == 0) return 0;
      throw IoError(IoError::failed, err == SSL_ERROR_SYSCALL ? std::strerror(errno) : openssl_error());
    }
    const ssize_t n = ::recv(fd_, buf, size, 0);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      wait(false, d);
    else if (errno != EINTR)
      throw IoError(IoError::failed, std::strerror(errno));
  }
}

// ---- response heads ----------------------------------------------------------------------------------

const std::string* find_header(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && ::strncasecmp(k.data(), name.data(), k.size()) == 0) return &v;
  return nullptr;
}

bool parse_response_head(std::string_view head, ResponseHead& out) {
  const auto line_end = head.find("\r\n");
  const std::string_view status_line = head.substr(0, line_end);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 || status_line[8] != ' ') return false;
  int status = 0;
  for (std::size_t i = 9; i < 12; ++i) {
    if (status_line[i] < '0' || status_line[i] > '9') return false;
    status = status * 10 + (status_line[i] - '0');
  }
  out.status = status;
  out.headers.clear();
  std::size_t at = line_end == std::string_view::npos ? head.size() : line_end + 2;
  while (at < head.size()) {
    auto e = head.find("\r\n", at);
    if (e == std::string_view::npos) e = head.size();
    const std::string_view l = head.substr(at, e - at);
    if (const auto colon = l.find(':'); colon != std::string_view::npos)
      out.headers.emplace_back(std::string(l.substr(0, colon)), trim(l.substr(colon + 1)));
    at = e + 2;
  }
  return true;
}

bool ResponseReader::fill() {
  char tmp[16384];
  const std::size_t n = c_.read_some(tmp, sizeof tmp, deadline_);
  if (n == 0) return false;
  got_bytes_ = true;
  buf_.append(tmp, n);
  return true;
}

ResponseHead ResponseReader::read_head(bool head_request) {
  while (true) {
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (buf_.size() > (1u << 20)) throw TransportError("the server's response head is larger than 1 MiB");
      if (!fill())
        throw IoError(IoError::failed, got_bytes_ ? "the server closed the connection in the middle of the answer"
                                                  : "the server closed the connection without an answer");
    }
    ResponseHead head;
    if (!parse_response_head(std::string_view(buf_.data(), end), head))
      throw TransportError("the server's answer is not an HTTP/1.1 response");
    buf_.erase(0, end + 4);
    if (head.status >= 100 && head.status < 200 && head.status != 101) continue;  // 100 Continue and the like
    // RFC 9112 section 6: the framing of the body.
    const std::string* te = head.header("Transfer-Encoding");
    const std::string* cl = head.header("Content-Length");
    const std::string* connection = head.header("Connection");
    no_body_ = head_request || head.status == 101 || head.status == 204 || head.status == 304;
    chunked_ = te && ::strcasestr(te->c_str(), "chunked") != nullptr;
    until_close_ = false;
    length_ = 0;
    if (!no_body_ && !chunked_) {
      if (cl) {
        char* e = nullptr;
        length_ = static_cast<std::size_t>(std::strtoull(cl->c_str(), &e, 10));
        if (e == cl->c_str()) throw TransportError("the server's Content-Length is not a number");
      } else {
        until_close_ = true;
      }
    }
    close_after_ = connection && ::strcasestr(connection->c_str(), "close") != nullptr;
    return head;
  }
}

// ---- connecting -------------------------------------------------------------------------------------

namespace {

/// A TCP connection to host:port (non-blocking), or UnreachableError naming `server`.
/// `meanwhile` (if set) runs once, while the first address's connect is under way (a round trip
/// to a remote server), or before an error is thrown; what it throws is thrown, the socket closed.
int tcp_connect(const std::string& host, const std::string& port, const std::string& server, const Deadline& d,
                const std::function<void()>& meanwhile = {}) {
  bool ran = !meanwhile;
  auto run_meanwhile = [&] {
    if (!ran) {
      ran = true;
      meanwhile();
    }
  };
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) {
    run_meanwhile();
    throw UnreachableError(
        fmt::format("cannot reach {}: host name not found (is the cluster up? check --context)", server));
  }
  int last_errno = ECONNREFUSED, fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    const int connect_errno = errno;
    try {
      run_meanwhile();
    } catch (...) {
      ::close(fd);
      ::freeaddrinfo(res);
      throw;
    }
    errno = connect_errno;
    if (rc != 0 && errno == EINPROGRESS) {
      while (true) {
        if (d.cancel && d.cancel->cancelled()) {
          ::close(fd);
          ::freeaddrinfo(res);
          throw TransportError(fmt::format("connecting to {}: cancelled", server));
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(d.at - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
          errno = ETIMEDOUT;
          break;
        }
        ::pollfd p{fd, POLLOUT, 0};
        const int pr = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, d.cancel ? 50 : 1 << 30)));
        if (pr < 0 && errno != EINTR) break;
        if (pr <= 0) continue;
        int so_error = 0;
        socklen_t len = sizeof so_error;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
        if (so_error == 0) rc = 0;
        errno = so_error;
        break;
      }
    }
    if (rc != 0) {
      last_errno = errno;
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) {
    run_meanwhile();
    std::string why;
    switch (last_errno) {
      case ECONNREFUSED:
        why = "connection refused";
        break;
      case ETIMEDOUT:
        why = "connection timed out";
        break;
      case EHOSTUNREACH:
        why = "no route to host";
        break;
      case ENETUNREACH:
        why = "network unreachable";
        break;
      default:
        why = std::strerror(last_errno);
    }
    throw UnreachableError(fmt::format("cannot reach {}: {} (is the cluster up? check --context)", server, why));
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  return fd;
}

/// RFC 1928's CONNECT through a SOCKS5 proxy (no authentication, or RFC 1929's user and
/// password): the host name is sent for the proxy to resolve (as Go's SOCKS5 dialer does).
void socks5_connect(Connection& c, const Proxy& p, const ServerUrl& target, const std::string& server,
                    const Deadline& d) {
  const std::string where = fmt::format("the SOCKS5 proxy {}:{} ({})", bracket(p.host), p.port, p.origin);
  const auto read_exactly = [&](std::size_t n) {
    std::string got;
    while (got.size() < n) {
      char buf[300];
      const std::size_t k = c.read_some(buf, std::min(sizeof buf, n - got.size()), d);
      if (k == 0) throw TransportError(where + " closed the connection during its handshake");
      got.append(buf, k);
    }
    return got;
  };
  const bool auth = !p.user.empty() || !p.password.empty();
  c.write_all(auth ? std::string("\x05\x02\x00\x02", 4) : std::string("\x05\x01\x00", 3), d);
  const std::string method = read_exactly(2);
  if (method[0] != 5) throw TransportError(where + " does not speak SOCKS5");
  if (method[1] == 2 && auth) {
    if (p.user.size() > 255 || p.password.size() > 255)
      throw TransportError(where + ": the user name and password must be at most 255 bytes each");
    std::string req = "\x01";
    req += static_cast<char>(p.user.size());
    req += p.user;
    req += static_cast<char>(p.password.size());
    req += p.password;
    c.write_all(req, d);
    OPENSSL_cleanse(req.data(), req.size());
    if (read_exactly(2)[1] != 0) throw TransportError(where + " refused the user name and password of the proxy URL");
  } else if (method[1] != 0) {
    throw TransportError(where + (auth ? " accepts none of the offered authentications"
                                       : " requires a user name and password: put them in the proxy URL"));
  }
  std::string req("\x05\x01\x00", 3);
  in_addr v4{};
  in6_addr v6{};
  if (::inet_pton(AF_INET, target.host.c_str(), &v4) == 1) {
    req += '\x01';
    req.append(reinterpret_cast<const char*>(&v4), 4);
  } else if (::inet_pton(AF_INET6, target.host.c_str(), &v6) == 1) {
    req += '\x04';
    req.append(reinterpret_cast<const char*>(&v6), 16);
  } else {
    if (target.host.size() > 255) throw TransportError(where + ": the server's host name is longer than 255 bytes");
    req += '\x03';
    req += static_cast<char>(target.host.size());
    req += target.host;
  }
  const int port = std::atoi(target.port.c_str());
  req += static_cast<char>((port >> 8) & 0xff);
  req += static_cast<char>(port & 0xff);
  c.write_all(req, d);
  const std::string head = read_exactly(4);
  if (head[1] != 0) {
    static const char* const kReplies[] = {"succeeded",
                                           "general SOCKS server failure",
                                           "connection not allowed by ruleset",
                                           "network unreachable",
                                           "host unreachable",
                                           "connection refused",
                                           "TTL expired",
                                           "command not supported",
                                           "address type not supported"};
    const auto code = static_cast<unsigned char>(head[1]);
    throw UnreachableError(
        fmt::format("cannot reach {} through {}: {}", server, where,
                    code < std::size(kReplies) ? kReplies[code] : "unknown reply " + std::to_string(code)));
  }
  // The bound address: IPv4, a name (its length first) or IPv6, then the port.
  const auto type = static_cast<unsigned char>(head[3]);
  const std::size_t rest = type == 1 ? 4 + 2 : type == 4 ? 16 + 2 : static_cast<unsigned char>(read_exactly(1)[0]) + 2;
  read_exactly(rest);
}

}  // namespace

std::unique_ptr<Connection> connect_to_server(const KubeCluster& cluster, const TlsSource& tls_source,
                                              std::chrono::milliseconds connect_timeout, const CancelToken* cancel) {
  const ServerUrl u = parse_server_url(cluster.server);
  const bool https = u.scheme == "https";
  const Deadline d = Deadline::after(connect_timeout, cancel);
  auto c = std::make_unique<Connection>();
  const auto start = std::chrono::steady_clock::now();
  // The TLS context is asked for while the TCP connection is made: building one (OpenSSL's first
  // use, ~1 ms) then costs no time of its own when the server is a round trip away.
  const TlsContext* tls = nullptr;
  auto get_tls = [&] {
    if (!https) return;
    const auto t0 = std::chrono::steady_clock::now();
    tls = tls_source();
    c->times.context_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  const Proxy p = proxy_for(cluster);
  if (!p) {
    c->fd_ = tcp_connect(u.host, u.port, cluster.server, d, get_tls);
  } else {
    try {
      // Through a proxy the context is built while connecting to the proxy (its failure still
      // reported first); the tunnel follows.
      c->fd_ = tcp_connect(p.host, p.port, cluster.server, d, get_tls);
    } catch (const UnreachableError& e) {
      throw UnreachableError(std::string(e.what()) + " through the proxy " + bracket(p.host) + ":" + p.port + " (" +
                             p.origin + ")");
    }
    try {
      if (p.scheme == "socks5") {
        socks5_connect(*c, p, u, cluster.server, d);
      } else if (https) {  // a tunnel through the HTTP proxy: CONNECT host:port (RFC 9110 section 9.3.6)
        const std::string authority = bracket(u.host) + ":" + u.port;
        std::string req = fmt::format("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n", authority);
        if (!p.user.empty() || !p.password.empty())
          req += "Proxy-Authorization: Basic " + base64_encode(p.user + ":" + p.password) + "\r\n";
        req += "\r\n";
        c->write_all(req, d);
        OPENSSL_cleanse(req.data(), req.size());
        ResponseReader r(*c, d);
        const ResponseHead head = r.read_head(true);
        if (head.status < 200 || head.status >= 300)
          throw TransportError(fmt::format("the proxy {}:{} ({}) refused to tunnel to {}: HTTP {}", bracket(p.host),
                                           p.port, p.origin, authority, head.status));
      }
    } catch (const IoError& e) {
      throw TransportError(fmt::format("the proxy {}:{} ({}) did not open a tunnel to {}: {}", bracket(p.host), p.port,
                                       p.origin, bracket(u.host) + ":" + u.port, e.what()));
    }
  }
  c->times.tcp_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() - c->times.context_ms;
  if (!https) return c;
  // TLS: SNI and the name verified are tls-server-name when set, else the server's host; an IP
  // address is verified as an IP (and sent no SNI, RFC 6066 section 3).
  c->ssl_ = SSL_new(tls->get());
  if (!c->ssl_) throw TransportError("TLS could not be set up: " + openssl_error());
  BIO* bio = BIO_new(nosignal_socket_method());
  BIO_set_fd(bio, c->fd_, BIO_NOCLOSE);
  SSL_set_bio(c->ssl_, bio, bio);
  const std::string& name = cluster.tls_server_name.empty() ? u.host : cluster.tls_server_name;
  const bool ip = is_ip(name);
  if (!ip) SSL_set_tlsext_host_name(c->ssl_, name.c_str());
  if (!cluster.insecure_skip_tls_verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(c->ssl_);
    if (ip)
      X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
    else
      X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
  }
  if (SSL_SESSION* s = tls->session_to_offer()) {
    SSL_set_session(c->ssl_, s);
    SSL_SESSION_free(s);
  }
  FirstBytes first;
  BIO_set_callback_arg(bio, reinterpret_cast<char*>(&first));
  BIO_set_callback_ex(bio, keep_first_bytes);
  struct Unhook {  // the BIO outlives `first` when the handshake throws
    BIO* bio;
    ~Unhook() { BIO_set_callback_ex(bio, nullptr); }
  } unhook{bio};
  const auto tls_start = std::chrono::steady_clock::now();
  while (true) {
    ERR_clear_error();
    const int rc = SSL_connect(c->ssl_);
    if (rc == 1) break;
    const int err = SSL_get_error(c->ssl_, rc);
    try {
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        c->wait(err == SSL_ERROR_WANT_WRITE, d);
        continue;
      }
    } catch (const IoError& e) {
      throw TransportError(fmt::format("cannot complete the TLS handshake with {}: {}", cluster.server,
                                       e.kind == IoError::timeout ? "the server did not answer in time" : e.what()));
    }
    tls->forget_sessions();
    if (tls->identity_failed()) throw unusable_identity();  // read for a full handshake, and unusable
    // A server that answered but refused the handshake (not TLS, its alert, a certificate not
    // trusted) would refuse it again: UnreachableError, which a client that never reached the
    // server reports at once, as kubectl does ("http: server gave HTTP response to HTTPS client",
    // "x509: certificate signed by unknown authority"). A connection that broke off is retried.
    const long verify = SSL_get_verify_result(c->ssl_);
    if (verify != X509_V_OK)
      throw UnreachableError(
          fmt::format("cannot complete the TLS handshake with {}: {}; the server's certificate is not trusted: check "
                      "certificate-authority(-data) and tls-server-name in your kubeconfig",
                      cluster.server, X509_verify_cert_error_string(verify)));
    if (first.plain_http())
      throw UnreachableError(fmt::format(
          "cannot complete the TLS handshake with {}: the server answered in plain HTTP; if it serves no TLS, set the "
          "kubeconfig's cluster.server to {}, else check the port",
          cluster.server, "http://" + cluster.server.substr(std::string_view("https://").size())));
    if (err == SSL_ERROR_SSL && lasting_tls_failure()) {
      const std::string hint = alert_hint();
      throw UnreachableError(
          fmt::format("cannot complete the TLS handshake with {}: {}{}", cluster.server, openssl_error(), hint));
    }
    const std::string why = err == SSL_ERROR_SYSCALL
                                ? (errno ? std::strerror(errno) : "the server closed the connection")
                                : openssl_error();
    throw TransportError(fmt::format("cannot complete the TLS handshake with {}: {}", cluster.server, why));
  }
  c->times.tls = true;
  c->times.resumed = SSL_session_reused(c->ssl_) != 0;
  c->times.tls_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tls_start).count();
  return c;
}

}  // namespace gpupool::kube
