// The libcurl Transport: one pool of easy handles per cluster (each keeps its connections alive,
// so a handle taken from the pool reuses a warm TLS connection), all options set per request
// after curl_easy_reset, keys and CAs passed as in-memory blobs (never written to disk).
#include <curl/curl.h>
#include <cerrno>

#include <fmt/format.h>
#include <strings.h>
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
    release(h);
    log_exchange(request, ex.response.status, start, new_connections > 0);
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
    log_exchange(request, ex.response.status, start, true);
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

  void log_exchange(const HttpRequest& req, int status, std::chrono::steady_clock::time_point start,
                    bool new_connection) const {
    if (!options_.logger) return;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    options_.logger(LogLevel::debug, fmt::format("{} {} -> {} ({} ms{})", req.method, req.target, status, ms,
                                                 new_connection ? ", new connection" : ""));
  }

  KubeCluster cluster_;
  TransportOptions options_;
  std::string base_url_, host_header_;
  curl_slist* connect_to_ = nullptr;
  std::mutex mutex_;
  std::vector<CURL*> idle_;
};

}  // namespace

std::shared_ptr<Transport> make_curl_transport(const KubeCluster& cluster, TransportOptions options) {
  return std::make_shared<CurlTransport>(cluster, std::move(options));
}

}  // namespace gpupool
