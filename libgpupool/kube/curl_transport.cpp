// The libcurl Transport: one pool of easy handles per cluster (each keeps its connections alive,
// so a handle taken from the pool reuses a warm TLS connection), all options set per request
// after curl_easy_reset, keys and CAs passed as in-memory blobs (never written to disk).
#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <filesystem>

#include <fmt/format.h>
#include <strings.h>
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "gpupool/error.hpp"
#include "gpupool/transport.hpp"
#include "kube/util.hpp"

namespace gpupool {

const std::string* HttpResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && ::strncasecmp(k.data(), name.data(), k.size()) == 0) return &v;
  return nullptr;
}

namespace {

void global_init_once() {
  // A function-local static is initialised exactly once even with concurrent first callers.
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) throw TransportError(std::string("libcurl could not be initialised: ") + curl_easy_strerror(rc));
}

std::string bracket(const std::string& host) { return host.find(':') != std::string::npos ? "[" + host + "]" : host; }

struct Exchange {
  HttpResponse response;
  const ChunkSink* sink = nullptr;
  CURL* handle = nullptr;
  bool stopped_by_sink = false;
  std::size_t max_error_body = 4 << 20;
  std::size_t max_body = std::size_t{1} << 30;  ///< TransportOptions::max_response_bytes
  bool too_large = false;
  const CancelToken* cancel = nullptr;  ///< HttpRequest::cancel (send only; stream() polls its own)
};

// libcurl calls this about once a second while it waits and more often while data flows; a
// non-zero return aborts the transfer with CURLE_ABORTED_BY_CALLBACK (CURLOPT_XFERINFOFUNCTION).
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* ex = static_cast<const Exchange*>(user);
  return ex->cancel && ex->cancel->cancelled() ? 1 : 0;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    ex->response.headers.clear();  // a new response (after 100 Continue or a proxy CONNECT)
  } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    ex->response.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  std::string_view chunk(data, size * n);
  if (ex->sink) {
    long code = 0;
    curl_easy_getinfo(ex->handle, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && code < 300) {
      if (!(*ex->sink)(chunk)) {
        ex->stopped_by_sink = true;
        return 0;  // makes curl stop with CURLE_WRITE_ERROR, which we treat as a normal end
      }
      return chunk.size();
    }
  }
  if (ex->response.body.size() + chunk.size() > ex->max_error_body && ex->sink) return chunk.size();
  if (ex->response.body.size() + chunk.size() > ex->max_body) {
    ex->too_large = true;
    return 0;  // curl stops with CURLE_WRITE_ERROR; send() reports ResponseTooLargeError
  }
  ex->response.body.append(chunk);
  return chunk.size();
}

// ---- TLS sessions kept between processes --------------------------------------------------------
// libcurl 7.88 keeps sessions per process only. Through CURLOPT_SSL_CTX_FUNCTION (OpenSSL backend)
// each new connection's SSL_CTX gets (1) a new-session callback that also writes the session to
// the file, chained to libcurl's own, and (2) an info callback that, when the first handshake
// starts and libcurl had no session of its own, sets the one from the file (SSL_set_session):
// the server then resumes it (TLS 1.3 PSK from the ticket, or a TLS 1.2 session/ticket) and sends
// no certificate to verify; the client checks nothing less, since the session records the
// verification of the certificate it was made with (and only this file's key — server, CA, client
// certificate — can reach it). A session the server refuses only costs the full handshake.

class SessionFile {
 public:
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
  /// Whether the latest handshake made with this file resumed a session (for the debug line).
  mutable std::atomic<bool> last_resumed{false};
  /// Drops the stored session (a connection that used it failed: the next one starts afresh).
  void forget() const {
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  /// The stored session (a new reference) or null.
  SSL_SESSION* load() const {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    unsigned char buf[16384];
    ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (n <= 0) return nullptr;
    const unsigned char* p = buf;
    SSL_SESSION* s = d2i_SSL_SESSION(nullptr, &p, static_cast<long>(n));
    if (s && !SSL_SESSION_is_resumable(s)) {
      SSL_SESSION_free(s);
      return nullptr;
    }
    return s;
  }

  void store(SSL_SESSION* s) const {
    if (!SSL_SESSION_is_resumable(s)) return;
    const int len = i2d_SSL_SESSION(s, nullptr);
    if (len <= 0 || len > 16384) return;
    std::string der(static_cast<std::size_t>(len), '\0');
    auto* p = reinterpret_cast<unsigned char*>(der.data());
    if (i2d_SSL_SESSION(s, &p) != len) return;
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) return;
    ::chmod(dir_.c_str(), 0700);
    // Owner-only, written whole then renamed: it holds the resumption secret.
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

/// libcurl's own new-session callback (the same function for every context), chained to.
std::atomic<int (*)(SSL*, SSL_SESSION*)> curl_new_session_cb{nullptr};

int on_new_session(SSL* ssl, SSL_SESSION* session) {
  if (const auto* file = static_cast<const SessionFile*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), session_ex_index())))
    file->store(session);
  auto* chained = curl_new_session_cb.load();
  return chained ? chained(ssl, session) : 0;  // 0: we kept no reference
}

void on_tls_info(const SSL* ssl, int where, int) {
  if (where & SSL_CB_HANDSHAKE_DONE) {
    if (const auto* file =
            static_cast<const SessionFile*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), session_ex_index())))
      file->last_resumed = SSL_session_reused(ssl) != 0;
    return;
  }
  if (!(where & SSL_CB_HANDSHAKE_START) || !SSL_in_before(ssl) || SSL_get_session(ssl) != nullptr) return;
  const auto* file = static_cast<const SessionFile*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), session_ex_index()));
  if (!file) return;
  if (SSL_SESSION* s = file->load()) {
    SSL_set_session(const_cast<SSL*>(ssl), s);
    SSL_SESSION_free(s);
  }
}

CURLcode on_ssl_ctx(CURL*, void* ssl_ctx, void* user) {
  auto* ctx = static_cast<SSL_CTX*>(ssl_ctx);
  if (auto* cb = SSL_CTX_sess_get_new_cb(ctx); cb && cb != on_new_session) curl_new_session_cb.store(cb);
  SSL_CTX_set_ex_data(ctx, session_ex_index(), user);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
  SSL_CTX_sess_set_new_cb(ctx, on_new_session);
  SSL_CTX_set_info_callback(ctx, on_tls_info);
  return CURLE_OK;
}

class CurlTransport final : public Transport {
 public:
  CurlTransport(const KubeCluster& cluster, TransportOptions options)
      : cluster_(cluster), options_(std::move(options)) {
    global_init_once();
    const kube::ServerUrl u = kube::parse_server_url(cluster.server);
    const std::string authority = bracket(u.host) + ":" + u.port;
    if (!cluster.tls_server_name.empty() && u.scheme == "https") {
      // Verify (and send SNI for) tls-server-name while connecting to the server's address:
      // name the URL after tls-server-name and map it to the real host with CONNECT_TO.
      base_url_ = fmt::format("https://{}:{}{}", bracket(cluster.tls_server_name), u.port, u.path);
      connect_to_ = curl_slist_append(
          nullptr, fmt::format("{}:{}:{}:{}", cluster.tls_server_name, u.port, bracket(u.host), u.port).c_str());
      host_header_ = "Host: " + authority;
    } else {
      base_url_ = fmt::format("{}://{}{}", u.scheme, authority, u.path);
    }
    if (cluster.insecure_skip_tls_verify && options_.logger)
      options_.logger(
          LogLevel::warning,
          fmt::format("TLS verification is off for cluster \"{}\" ({}): insecure-skip-tls-verify is set in the "
                      "kubeconfig, so the server's identity is not checked",
                      cluster.name, cluster.server));
  }

  ~CurlTransport() override {
    for (CURL* h : idle_) curl_easy_cleanup(h);
    if (connect_to_) curl_slist_free_all(connect_to_);
  }

  HttpResponse send(const HttpRequest& request, const RequestCredentials& credentials) override {
    CURL* h = acquire();
    Exchange ex;
    ex.handle = h;
    ex.max_body = options_.max_response_bytes;
    ex.cancel = request.cancel;
    curl_slist* headers = configure(h, request, credentials, ex, false);
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    auto start = std::chrono::steady_clock::now();
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK) {
      long os_errno = 0;
      curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
      curl_easy_cleanup(h);  // the connection state is unknown; do not pool it
      forget_session();
      if (ex.too_large) throw ResponseTooLargeError(too_large_message(request));
      if (rc == CURLE_ABORTED_BY_CALLBACK)
        throw TransportError(fmt::format("{} {}{}: cancelled", request.method, base_url_, path_only(request.target)));
      if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
        throw UnreachableError(unreachable(rc, errbuf, os_errno));
      throw TransportError(describe(rc, errbuf, request));
    }
    long code = 0, new_connections = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &new_connections);
    ex.response.status = static_cast<int>(code);
    std::string connection;
    if (new_connections > 0 && options_.logger) connection = describe_connection(h);
    release(h);
    log_exchange(request, ex.response.status, start, connection);
    return std::move(ex.response);
  }

  HttpResponse stream(const HttpRequest& request, const RequestCredentials& credentials, const ChunkSink& sink,
                      const CancelToken& cancel) override {
    CURL* h = acquire();
    Exchange ex;
    ex.handle = h;
    ex.max_body = options_.max_response_bytes;
    ex.sink = &sink;
    curl_slist* headers = configure(h, request, credentials, ex, true);
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    CURLM* multi = curl_multi_init();
    curl_multi_add_handle(multi, h);
    CURLcode result = CURLE_OK;
    bool done = false, cancelled = false;
    auto start = std::chrono::steady_clock::now();
    while (!done) {
      if (cancel.cancelled()) {
        cancelled = true;
        break;
      }
      int running = 0;
      CURLMcode mc = curl_multi_perform(multi, &running);
      if (mc != CURLM_OK) {
        result = CURLE_RECV_ERROR;
        break;
      }
      int queued = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi, &queued))
        if (msg->msg == CURLMSG_DONE) {
          result = msg->data.result;
          done = true;
        }
      if (done || running == 0) break;
      // Wake at least every 50 ms to notice cancellation of an idle watch.
      curl_multi_poll(multi, nullptr, 0, 50, nullptr);
    }
    long code = 0, os_errno = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
    curl_multi_remove_handle(multi, h);
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);  // a stream's connection was cut or drained; do not reuse it
    if (ex.too_large) throw ResponseTooLargeError(too_large_message(request));
    if (!cancelled && !ex.stopped_by_sink && (result == CURLE_COULDNT_CONNECT || result == CURLE_COULDNT_RESOLVE_HOST))
      throw UnreachableError(unreachable(result, errbuf, os_errno));
    if (!cancelled && !ex.stopped_by_sink && result != CURLE_OK)
      throw TransportError(describe(result, errbuf, request));
    ex.response.status = static_cast<int>(code);
    log_exchange(request, ex.response.status, start, "new connection");
    return std::move(ex.response);
  }

 private:
  CURL* acquire() {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        CURL* h = idle_.back();
        idle_.pop_back();
        curl_easy_reset(h);  // options go; the connection cache stays
        return h;
      }
    }
    CURL* h = curl_easy_init();
    if (!h) throw TransportError("libcurl could not create a handle (out of memory?)");
    return h;
  }

  void forget_session() {
    std::lock_guard lock(mutex_);
    if (session_file_) session_file_->forget();
  }

  void release(CURL* h) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < options_.max_idle_connections) {
      idle_.push_back(h);
      return;
    }
    curl_easy_cleanup(h);
  }

  curl_slist* configure(CURL* h, const HttpRequest& req, const RequestCredentials& cred, Exchange& ex, bool streaming) {
    const std::string url = base_url_ + req.target;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_USERAGENT, options_.user_agent.c_str());
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
    if (!streaming) {
      auto t = req.timeout.count() > 0 ? req.timeout : options_.request_timeout;
      curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(t.count()));
    }
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    if (!cluster_.disable_compression) curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    if (connect_to_) curl_easy_setopt(h, CURLOPT_CONNECT_TO, connect_to_);
    if (!cluster_.proxy_url.empty()) curl_easy_setopt(h, CURLOPT_PROXY, cluster_.proxy_url.c_str());
    // TLS: verification on unless the kubeconfig says insecure-skip-tls-verify.
    const long verify = cluster_.insecure_skip_tls_verify ? 0L : 1L;
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, verify);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, verify ? 2L : 0L);
    if (!cluster_.certificate_authority_pem.empty()) {
      curl_blob ca{const_cast<char*>(cluster_.certificate_authority_pem.data()),
                   cluster_.certificate_authority_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
    }
    if (!options_.tls_session_dir.empty() && base_url_.rfind("https://", 0) == 0) {
      std::lock_guard lock(mutex_);
      if (!session_file_ || session_cert_ != cred.client_certificate_pem) {
        // The file objects live as long as the transport, which outlives every connection made
        // with them (a rotated client certificate's stays in retired_).
        if (session_file_) retired_.push_back(std::move(session_file_));
        session_file_ = std::make_shared<SessionFile>(options_.tls_session_dir, cluster_, cred.client_certificate_pem);
        session_cert_ = cred.client_certificate_pem;
      }
      if (session_file_->enabled()) {
        curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
        curl_easy_setopt(h, CURLOPT_SSL_CTX_DATA, session_file_.get());
      }
    }
    if (!cred.client_certificate_pem.empty()) {
      curl_blob cert{const_cast<char*>(cred.client_certificate_pem.data()), cred.client_certificate_pem.size(),
                     CURL_BLOB_COPY};
      curl_blob key{const_cast<char*>(cred.client_key_pem.data()), cred.client_key_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
      curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
    }
    curl_slist* headers = nullptr;
    bool has_accept = false;
    for (const auto& [k, v] : req.headers) {
      headers = curl_slist_append(headers, (k + ": " + v).c_str());
      if (::strcasecmp(k.c_str(), "Accept") == 0) has_accept = true;
    }
    if (!has_accept) headers = curl_slist_append(headers, "Accept: application/json");
    headers = curl_slist_append(headers, "Expect:");
    if (!host_header_.empty()) headers = curl_slist_append(headers, host_header_.c_str());
    if (!cred.bearer_token.empty()) {
      std::string auth = "Authorization: Bearer " + cred.bearer_token;
      headers = curl_slist_append(headers, auth.c_str());
      std::fill(auth.begin(), auth.end(), '\0');
    } else if (!cred.username.empty()) {
      curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
      curl_easy_setopt(h, CURLOPT_USERNAME, cred.username.c_str());
      curl_easy_setopt(h, CURLOPT_PASSWORD, cred.password.c_str());
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    if (req.method == "GET") {
      curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else if (req.method == "HEAD") {
      curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
      if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.data());
      }
    }
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &ex);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &ex);
    if (ex.cancel) {
      curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
      curl_easy_setopt(h, CURLOPT_XFERINFODATA, &ex);
    }
    return headers;
  }

  std::string describe(CURLcode rc, const char* errbuf, const HttpRequest& req) const {
    std::string detail = errbuf && *errbuf ? errbuf : curl_easy_strerror(rc);
    std::string msg = fmt::format("{} {}{}: cannot complete the request to {}: {}", req.method, base_url_,
                                  path_only(req.target), cluster_.server, detail);
    switch (rc) {
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CACERT_BADFILE:
        msg +=
            "; the server's certificate is not trusted: check certificate-authority(-data) and tls-server-name in your "
            "kubeconfig";
        break;
      case CURLE_COULDNT_CONNECT:
      case CURLE_COULDNT_RESOLVE_HOST:
        msg += "; is the cluster's server address right and reachable?";
        break;
      case CURLE_OPERATION_TIMEDOUT:
        msg += "; the server did not answer in time";
        break;
      default:
        break;
    }
    return msg;
  }

  /// `cannot reach https://host:port: connection refused (is the cluster up? check --context)`.
  std::string unreachable(CURLcode rc, const char* errbuf, long os_errno) const {
    std::string why;
    if (rc == CURLE_COULDNT_RESOLVE_HOST)
      why = "host name not found";
    else if (os_errno == ECONNREFUSED)
      why = "connection refused";
    else if (os_errno == ETIMEDOUT)
      why = "connection timed out";
    else if (os_errno == EHOSTUNREACH)
      why = "no route to host";
    else if (os_errno == ENETUNREACH)
      why = "network unreachable";
    else
      why = errbuf && *errbuf ? errbuf : curl_easy_strerror(rc);
    return fmt::format("cannot reach {}: {} (is the cluster up? check --context)", cluster_.server, why);
  }

  std::string too_large_message(const HttpRequest& req) const {
    return fmt::format(
        "{} {}{}: the response from {} is larger than {} bytes (TransportOptions.max_response_bytes); "
        "list in pages (limit/continue) or raise the limit",
        req.method, base_url_, path_only(req.target), cluster_.server, options_.max_response_bytes);
  }

  static std::string path_only(const std::string& target) { return target.substr(0, target.find('?')); }

  /// "new connection: TCP 0.2 ms, TLS 1.9 ms (resumed)" — where a new connection's time went.
  std::string describe_connection(CURL* h) {
    curl_off_t connect_us = 0, tls_us = 0;
    curl_easy_getinfo(h, CURLINFO_CONNECT_TIME_T, &connect_us);
    curl_easy_getinfo(h, CURLINFO_APPCONNECT_TIME_T, &tls_us);
    std::string out = fmt::format("new connection: TCP {:.2f} ms", static_cast<double>(connect_us) / 1e3);
    if (tls_us > 0) {
      out += fmt::format(", TLS {:.2f} ms", static_cast<double>(tls_us - connect_us) / 1e3);
      std::lock_guard lock(mutex_);
      if (session_file_ && session_file_->enabled())
        out += session_file_->last_resumed ? " (resumed)" : " (full handshake)";
    }
    return out;
  }

  void log_exchange(const HttpRequest& req, int status, std::chrono::steady_clock::time_point start,
                    const std::string& connection) const {
    if (!options_.logger) return;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    options_.logger(LogLevel::debug, fmt::format("{} {} -> {} ({:.2f} ms{}{})", req.method, req.target, status, ms,
                                                 connection.empty() ? "" : ", ", connection));
  }

  KubeCluster cluster_;
  TransportOptions options_;
  std::string base_url_, host_header_;
  curl_slist* connect_to_ = nullptr;
  std::mutex mutex_;
  std::vector<CURL*> idle_;
  std::shared_ptr<SessionFile> session_file_;  ///< for the current client certificate
  std::string session_cert_;
  std::vector<std::shared_ptr<SessionFile>> retired_;
};

}  // namespace

std::shared_ptr<Transport> make_curl_transport(const KubeCluster& cluster, TransportOptions options) {
  return std::make_shared<CurlTransport>(cluster, std::move(options));
}

}  // namespace gpupool
