// gpupool/transport.hpp — the HTTP(S) exchange under gpupool::Client.
//
// Client speaks to a Transport; make_http_transport() gives the real one (gpupool's own HTTP/1.1
// client on OpenSSL: a pool of keep-alive connections per cluster, TLS verification on unless the
// kubeconfig turns it off).
// Tests and fault injectors can hand Client their own Transport.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpupool/kubeconfig.hpp"
#include "gpupool/logger.hpp"

namespace gpupool {

/// Cancels a long-running call (watch, follow logs) from another thread. Copies share the flag.
class CancelToken {
 public:
  CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void cancel() const noexcept { flag_->store(true); }
  bool cancelled() const noexcept { return flag_->load(); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "GET";
  std::string target;   ///< path and query, e.g. "/api/v1/namespaces/a/pods?limit=5"
  HttpHeaders headers;  ///< extra headers (Content-Type, Accept); auth is added by the transport
  std::string body;
  /// Whole-exchange limit; 0: the transport's default (send) or none (stream).
  std::chrono::milliseconds timeout{0};
  /// When set, send() abandons the exchange (TransportError) soon after the token fires. Not owned.
  const CancelToken* cancel = nullptr;
  /// The request changes nothing on the server whatever its method (a POST with dryRun=All): it
  /// may be pipelined with GETs, and sent again if the connection ends before its answer.
  bool no_side_effects = false;
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;  ///< names as the server sent them
  std::string body;
  /// The first header named `name` (case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
};

/// Who the request is from. Secret fields never reach logs or error text.
struct RequestCredentials {
  std::string bearer_token;        ///< secret
  std::string username, password;  ///< basic auth; password secret
  std::string client_certificate_pem;
  std::string client_key_pem;  ///< secret; handed to OpenSSL from memory, never written to disk
  bool operator==(const RequestCredentials&) const = default;
};

/// Receives a streamed body piece by piece; return false to stop the stream.
using ChunkSink = std::function<bool(std::string_view chunk)>;

/// One HTTP exchange at a time per call; implementations are safe to call from many threads.
/// Both calls throw TransportError when no HTTP response arrives (connect, TLS, reset, timeout).
class Transport {
 public:
  virtual ~Transport() = default;
  virtual HttpResponse send(const HttpRequest& request, const RequestCredentials& credentials) = 0;
  /// Streams a 2xx body to `sink` (the returned body is then empty); a non-2xx body is returned
  /// whole instead. Returns when the server ends the body, `sink` returns false or `cancel` fires.
  virtual HttpResponse stream(const HttpRequest& request, const RequestCredentials& credentials, const ChunkSink& sink,
                              const CancelToken& cancel) = 0;
  /// Several requests, their answers in the same order. Their order on the wire is theirs, but
  /// the server may see one before the answer to the one before has arrived, so they must not
  /// depend on each other: make_http_transport's pipelines GETs (and requests marked
  /// no_side_effects) on one connection (one round trip for all); this default sends them one by one.
  virtual std::vector<HttpResponse> send_each(const std::vector<HttpRequest>& requests,
                                              const RequestCredentials& credentials);
};

struct TransportOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds request_timeout{60'000};  ///< per exchange; streams have none
  std::size_t max_idle_connections = 16;              ///< idle keep-alive connections kept for reuse
  /// The largest response body (and the longest watch / log line) accepted; more is a
  /// ResponseTooLargeError. 1 GiB holds a list of 150,000 pods (~300 MB); page larger lists with
  /// ListOptions::limit.
  std::size_t max_response_bytes = std::size_t{1} << 30;
  std::string user_agent = "gpupool/0.1";
  Logger logger;  ///< warnings (TLS verification off) and one debug line per request
  /// Where TLS sessions are kept between processes (empty: only within this process): the next
  /// process resumes the session (TLS 1.3 ticket / 1.2 session) instead of a full handshake. One
  /// file per server, CA and client certificate (a hash of them names it), readable by the owner
  /// only; it holds the resumption secret, so it is never logged.
  std::string tls_session_dir;
};

/// The HTTP/1.1 transport for `cluster`: its CA (from memory), tls-server-name, proxy-url (an
/// http:// proxy; https servers are reached through a CONNECT tunnel), insecure-skip-tls-verify
/// (honoured with a warning through options.logger), gzip, keep-alive connections. A request that
/// went out on a reused connection the server had closed, with nothing of the answer arrived, is
/// sent once more on a new connection.
std::shared_ptr<Transport> make_http_transport(const KubeCluster& cluster, TransportOptions options = {});

/// The former name (the transport was libcurl's until 0.1): the same transport.
[[deprecated("use make_http_transport")]] inline std::shared_ptr<Transport> make_curl_transport(
    const KubeCluster& cluster, TransportOptions options = {}) {
  return make_http_transport(cluster, std::move(options));
}

}  // namespace gpupool
