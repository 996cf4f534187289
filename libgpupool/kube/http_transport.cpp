// The HTTP/1.1 Transport (make_http_transport): gpupool's own keep-alive client on OpenSSL.
//
// One pool of idle connections per transport (one cluster), at most max_idle_connections; one
// SSL_CTX per transport and client identity, built once (the CA and the key are parsed once, not
// per connection); TLS sessions resumed within the process and, with tls_session_dir, across
// processes (kube/connect.cpp). A request is written in one piece (head and body), its answer read
// by its framing (Content-Length or chunked; gzip decoded as it arrives); a connection goes back to
// the pool when its answer ended by its framing and the server did not say Connection: close.
//
// A reused connection the server had closed (an idle timeout, a restart) fails at the first read
// with nothing of the answer arrived: the request is then sent once more on a new connection, as
// libcurl did. The request may have reached the server before the connection died (it could not
// have answered yet), so a create may arrive twice: gpupool's creates carry a submission id, and
// the second one's 409 AlreadyExists is recognised by it (cluster/, rollback_test.cpp).
#include <strings.h>
#include <zlib.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include <fmt/format.h>
#include <openssl/crypto.h>

#include "common/base64.hpp"
#include "gpupool/error.hpp"
#include "gpupool/transport.hpp"
#include "kube/connect.hpp"
#include "kube/proxy.hpp"
#include "kube/util.hpp"

namespace gpupool {

const std::string* HttpResponse::header(std::string_view name) const { return kube::find_header(headers, name); }

std::vector<HttpResponse> Transport::send_each(const std::vector<HttpRequest>& requests,
                                               const RequestCredentials& credentials) {
  std::vector<HttpResponse> answers;
  answers.reserve(requests.size());
  for (const auto& r : requests) answers.push_back(send(r, credentials));
  return answers;
}

namespace {

using kube::Connection;
using kube::Deadline;
using kube::IoError;
using kube::TlsContext;

/// The largest non-2xx body kept from a stream (its Status); more is dropped, as before.
constexpr std::size_t kMaxStreamErrorBody = 4 << 20;

/// Decodes a gzip body piece by piece (RFC 1952 through zlib).
class Gunzip {
 public:
  Gunzip() {
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw TransportError("zlib could not be initialised");
  }
  ~Gunzip() { inflateEnd(&z_); }
  Gunzip(const Gunzip&) = delete;
  Gunzip& operator=(const Gunzip&) = delete;
  template <class F>
  bool feed(std::string_view in, F&& out) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    char buf[65536];
    while (z_.avail_in > 0 && !ended_) {
      z_.next_out = reinterpret_cast<Bytef*>(buf);
      z_.avail_out = sizeof buf;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        throw TransportError("the server's gzip-encoded answer cannot be decoded (corrupt data)");
      const std::size_t n = sizeof buf - z_.avail_out;
      if (n > 0 && !out(std::string_view(buf, n))) return false;
      if (rc == Z_STREAM_END) ended_ = true;
      if (rc == Z_BUF_ERROR && n == 0) break;
    }
    return true;
  }

 private:
  z_stream z_{};
  bool ended_ = false;
};

/// Zeroes a string holding a secret (an Authorization header) when it goes.
struct Cleansed {
  std::string text;
  ~Cleansed() { OPENSSL_cleanse(text.data(), text.size()); }
};

class HttpTransport final : public Transport {
 public:
  HttpTransport(const KubeCluster& cluster, TransportOptions options)
      : cluster_(cluster), options_(std::move(options)), url_(kube::parse_server_url(cluster.server)) {
    https_ = url_.scheme == "https";
    authority_ = (url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host) + ":" + url_.port;
    base_url_ = url_.scheme + "://" + authority_ + url_.path;
    // A plain-http server through an HTTP proxy: the request names the whole URL (absolute form).
    target_prefix_ = !https_ && kube::proxy_for(cluster).scheme == "http" ? base_url_ : url_.path;
    kube::warn_if_insecure(cluster_, options_.logger);
  }

  HttpResponse send(const HttpRequest& request, const RequestCredentials& credentials) override {
    return exchange(request, credentials, nullptr, request.cancel);
  }

  HttpResponse stream(const HttpRequest& request, const RequestCredentials& credentials, const ChunkSink& sink,
                      const CancelToken& cancel) override {
    return exchange(request, credentials, &sink, &cancel);
  }

  std::vector<HttpResponse> send_each(const std::vector<HttpRequest>& requests,
                                      const RequestCredentials& credentials) override {
    std::size_t bytes = 0;
    bool safe = requests.size() > 1;
    for (const auto& r : requests) {
      safe = safe && (((r.method == "GET" || r.method == "HEAD") && r.body.empty()) || r.no_side_effects) &&
             r.cancel == requests.front().cancel;
      bytes += r.target.size() + r.body.size() + 512;
    }
    if (!safe || bytes > kMaxPipelinedBytes) return Transport::send_each(requests, credentials);
    return pipeline(requests, credentials);
  }

 private:
  struct Idle {
    std::unique_ptr<Connection> conn;
    std::shared_ptr<TlsContext> tls;
  };

  /// The SSL_CTX for these credentials: built once, again only when the client certificate changes
  /// (an exec plugin's rotated one); the idle connections of the old identity are then dropped.
  std::shared_ptr<TlsContext> tls_for(const RequestCredentials& cred) {
    std::lock_guard lock(mutex_);
    if (!tls_ || !tls_->serves(cred)) {
      tls_ = std::make_shared<TlsContext>(cluster_, cred, options_.tls_session_dir);
      idle_.clear();
    }
    return tls_;
  }

  /// The SSL_CTX for these credentials if it is built (null otherwise: connect() builds it).
  std::shared_ptr<TlsContext> built_tls(const RequestCredentials& cred) {
    std::lock_guard lock(mutex_);
    return tls_ && tls_->serves(cred) ? tls_ : nullptr;
  }

  /// A new connection to the server; for https://, `tls` is the context it was made with, built
  /// while TCP connected if it was null. Throws what connect_to_server throws, with
  /// `tls_failed` set when building the context failed.
  std::unique_ptr<Connection> connect(std::shared_ptr<TlsContext>& tls, const RequestCredentials& cred,
                                      std::chrono::milliseconds limit, const CancelToken* cancel, bool& tls_failed) {
    return kube::connect_to_server(
        cluster_,
        [&]() -> const TlsContext* {
          if (!tls) {
            try {
              tls = tls_for(cred);
            } catch (...) {
              tls_failed = true;
              throw;
            }
          }
          return tls.get();
        },
        limit, cancel);
  }

  std::unique_ptr<Connection> take_idle(const std::shared_ptr<TlsContext>& tls) {
    std::lock_guard lock(mutex_);
    while (!idle_.empty()) {
      Idle i = std::move(idle_.back());
      idle_.pop_back();
      if (i.tls == tls) return std::move(i.conn);
    }
    return nullptr;
  }

  void release(std::unique_ptr<Connection> conn, std::shared_ptr<TlsContext> tls) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < options_.max_idle_connections && tls == tls_) idle_.push_back({std::move(conn), std::move(tls)});
  }

  std::string request_head(const HttpRequest& req, const RequestCredentials& cred) const {
    std::string h;
    h.reserve(512 + req.target.size() + cred.bearer_token.size());
    h.append(req.method).append(" ").append(target_prefix_).append(req.target).append(" HTTP/1.1\r\nHost: ");
    h.append(authority_).append("\r\nUser-Agent: ").append(options_.user_agent).append("\r\n");
    if (!cluster_.disable_compression) h.append("Accept-Encoding: gzip\r\n");
    bool has_accept = false;
    for (const auto& [k, v] : req.headers) {
      if (::strcasecmp(k.c_str(), "Content-Length") == 0 || ::strcasecmp(k.c_str(), "Host") == 0) continue;
      if (::strcasecmp(k.c_str(), "Accept") == 0) has_accept = true;
      h.append(k).append(": ").append(v).append("\r\n");
    }
    if (!has_accept) h.append("Accept: application/json\r\n");
    if (!cred.bearer_token.empty()) {
      h.append("Authorization: Bearer ").append(cred.bearer_token).append("\r\n");
    } else if (!cred.username.empty()) {
      Cleansed userpass{cred.username + ":" + cred.password};
      Cleansed encoded{base64_encode(userpass.text)};
      h.append("Authorization: Basic ").append(encoded.text).append("\r\n");
    }
    if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH")
      h.append("Content-Length: ").append(std::to_string(req.body.size())).append("\r\n");
    h.append("\r\n");
    return h;
  }

  struct Received {
    bool too_large = false;  ///< the body passed max_response_bytes (reading stopped there)
    bool stopped = false;    ///< the sink stopped the stream
    bool ended = false;      ///< the body ended by its framing
  };

  /// Reads one answer off `reader` into `response`: a streamed 2xx body to `sink`, else the body.
  Received receive(kube::ResponseReader& reader, const HttpRequest& req, const ChunkSink* sink,
                   HttpResponse& response) const {
    const bool streaming = sink != nullptr;
    Received got;
    kube::ResponseHead head = reader.read_head(req.method == "HEAD");
    response.status = head.status;
    response.headers = std::move(head.headers);
    const bool to_sink = streaming && response.status >= 200 && response.status < 300;
    auto deliver = [&](std::string_view piece) {
      if (to_sink) {
        if ((*sink)(piece)) return true;
        got.stopped = true;
        return false;
      }
      if (streaming && response.body.size() + piece.size() > kMaxStreamErrorBody) return true;
      if (response.body.size() + piece.size() > options_.max_response_bytes) {
        got.too_large = true;
        return false;
      }
      response.body.append(piece);
      return true;
    };
    const std::string* encoding = response.header("Content-Encoding");
    const bool gzipped = encoding && ::strcasecmp(encoding->c_str(), "gzip") == 0;
    // A body of known length is received into one allocation of that size, not a buffer
    // doubled as it grows (a 14 MB node list would otherwise peak at twice that).
    if (const std::string* cl = response.header("Content-Length"); cl && !gzipped && !to_sink) {
      const unsigned long long n = std::strtoull(cl->c_str(), nullptr, 10);
      if (n > 0 && n <= options_.max_response_bytes) response.body.reserve(static_cast<std::size_t>(n));
    }
    if (gzipped) {
      Gunzip gunzip;
      got.ended = reader.read_body([&](std::string_view raw) { return gunzip.feed(raw, deliver); });
    } else {
      got.ended = reader.read_body(deliver);
    }
    return got;
  }

  /// The largest batch of requests written before their answers are read: the server answers
  /// while we write, so a batch larger than the sockets' buffers could stall both sides.
  static constexpr std::size_t kMaxPipelinedBytes = 32 * 1024;

  /// send_each: GETs (and HEADs) written together on one connection, their answers read in order
  /// (HTTP/1.1 pipelining, RFC 9112 section 9.3: a server answers pipelined requests in the order
  /// received; Go's net/http server, kube-apiserver's, reads the next request of a connection
  /// after answering the one before, and so does the embedded server). One round trip instead of
  /// one per request. Only requests that may be sent again are pipelined: when the connection
  /// ends before every answer came (an idle connection the server had closed, a Connection:
  /// close answer), the requests not answered are sent again, one by one, by send().
  std::vector<HttpResponse> pipeline(const std::vector<HttpRequest>& reqs, const RequestCredentials& cred) {
    const auto start = std::chrono::steady_clock::now();
    std::chrono::milliseconds limit{0};
    for (const auto& r : reqs) limit = std::max(limit, r.timeout.count() > 0 ? r.timeout : options_.request_timeout);
    const CancelToken* cancel = reqs.front().cancel;
    Deadline deadline{start + limit, cancel};
    Cleansed out;
    for (const auto& r : reqs) out.text.append(request_head(r, cred)).append(r.body);
    std::shared_ptr<TlsContext> tls = https_ ? built_tls(cred) : nullptr;
    std::unique_ptr<Connection> conn = take_idle(tls);
    std::string note;
    if (!conn) {
      bool tls_failed = false;
      try {
        conn = connect(tls, cred,
                       std::min(options_.connect_timeout, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                              deadline.at - std::chrono::steady_clock::now())),
                       cancel, tls_failed);
      } catch (const TransportError&) {
        if (tls_failed) throw;                 // the kubeconfig's certificate or key, as before any request
        return one_by_one(reqs, 0, cred, {});  // send() reports it (and retries nothing more)
      }
      if (options_.logger) note = describe_connection(*conn, tls.get());
    }
    std::vector<HttpResponse> answers;
    answers.reserve(reqs.size());
    kube::ResponseReader reader(*conn, deadline);
    bool open = true;
    try {
      conn->write_all(out.text, deadline);
      conn->wait_for_answer(deadline);
      for (std::size_t i = 0; i < reqs.size() && open; ++i) {
        HttpResponse response;
        const Received got = receive(reader, reqs[i], nullptr, response);
        if (got.too_large) throw ResponseTooLargeError(too_large_message(reqs[i]));
        open = got.ended && reader.kept_open();
        log_exchange(reqs[i], response.status, start,
                     fmt::format("pipelined {}/{}{}{}", i + 1, reqs.size(), note.empty() ? "" : ", ", note));
        note.clear();
        answers.push_back(std::move(response));
      }
    } catch (const IoError& e) {
      if (e.kind != IoError::failed) {
        const HttpRequest& r = reqs[answers.size()];
        if (e.kind == IoError::cancelled) throw TransportError(failed(r, "cancelled"));
        throw TransportError(failed(r, cannot_complete(no_answer_within(limit))));
      }
      open = false;  // the rest one by one, below
    } catch (const TransportError& e) {
      throw TransportError(failed(reqs[answers.size()], e.what()));
    }
    if (answers.size() == reqs.size() && open && reader.reusable()) release(std::move(conn), std::move(tls));
    const std::size_t answered = answers.size();
    if (answered < reqs.size()) return one_by_one(reqs, answered, cred, std::move(answers));
    return answers;
  }

  std::vector<HttpResponse> one_by_one(const std::vector<HttpRequest>& reqs, std::size_t from,
                                       const RequestCredentials& cred, std::vector<HttpResponse> answers) {
    for (std::size_t i = from; i < reqs.size(); ++i) answers.push_back(send(reqs[i], cred));
    return answers;
  }

  HttpResponse exchange(const HttpRequest& req, const RequestCredentials& cred, const ChunkSink* sink,
                        const CancelToken* cancel) {
    const auto start = std::chrono::steady_clock::now();
    const bool streaming = sink != nullptr;
    Deadline deadline{std::chrono::steady_clock::time_point::max(), cancel};
    // A stream (watch, logs) has no limit unless its request sets one (a streamed list does).
    if (!streaming || req.timeout.count() > 0)
      deadline.at = start + (req.timeout.count() > 0 ? req.timeout : options_.request_timeout);
    Cleansed out{request_head(req, cred)};
    out.text.append(req.body);
    for (int attempt = 0;; ++attempt) {
      std::shared_ptr<TlsContext> tls = https_ ? built_tls(cred) : nullptr;
      std::unique_ptr<Connection> conn = attempt == 0 ? take_idle(tls) : nullptr;
      const bool reused = conn != nullptr;
      std::string note;
      if (!conn) {
        bool tls_failed = false;
        try {
          auto connect_limit = options_.connect_timeout;
          if (!streaming)
            connect_limit = std::min(connect_limit, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                        deadline.at - std::chrono::steady_clock::now()));
          conn = connect(tls, cred, connect_limit, cancel, tls_failed);
        } catch (const UnreachableError&) {
          throw;
        } catch (const TransportError& e) {
          if (tls_failed) throw;
          if (cancel && cancel->cancelled()) {
            if (streaming) return {};
            throw TransportError(failed(req, "cancelled"));
          }
          throw TransportError(failed(req, e.what()));
        }
        if (options_.logger) note = describe_connection(*conn, tls.get());
      }
      kube::ResponseReader reader(*conn, deadline);
      HttpResponse response;
      bool too_large = false, stopped = false, ended = false;
      try {
        conn->write_all(out.text, deadline);
        conn->wait_for_answer(deadline);
        const Received got = receive(reader, req, sink, response);
        too_large = got.too_large;
        stopped = got.stopped;
        ended = got.ended;
      } catch (const IoError& e) {
        if (e.kind == IoError::cancelled) {
          if (streaming) {
            log_exchange(req, response.status, start, note);
            return response;  // a cancelled stream ends normally
          }
          throw TransportError(failed(req, "cancelled"));
        }
        if (e.kind == IoError::failed && reused && !reader.got_bytes()) continue;  // see the top of the file
        if (e.kind == IoError::failed && https_ && !reused && !reader.got_bytes()) tls->forget_sessions();
        throw TransportError(failed(
            req, cannot_complete(
                     e.kind == IoError::timeout
                         ? no_answer_within(std::chrono::duration_cast<std::chrono::milliseconds>(deadline.at - start))
                         : std::string(e.what()))));
      } catch (const TransportError& e) {
        throw TransportError(failed(req, e.what()));
      }
      if (too_large) throw ResponseTooLargeError(too_large_message(req));
      if (ended && !stopped && reader.reusable()) release(std::move(conn), std::move(tls));
      log_exchange(req, response.status, start, note);
      return response;
    }
  }

  std::string too_large_message(const HttpRequest& req) const {
    return failed(req,
                  fmt::format("the response from {} is larger than {} bytes (TransportOptions.max_response_bytes); "
                              "list in pages (limit/continue) or raise the limit",
                              cluster_.server, options_.max_response_bytes));
  }

  /// "GET https://server/path: <what>" — every failure of an exchange names its request so.
  std::string failed(const HttpRequest& req, std::string_view what) const {
    return fmt::format("{} {}{}: {}", req.method, base_url_, path_only(req.target), what);
  }
  std::string cannot_complete(std::string_view why) const {
    return fmt::format("cannot complete the request to {}: {}", cluster_.server, why);
  }
  static std::string no_answer_within(std::chrono::milliseconds limit) {
    return fmt::format("no complete answer within {} ms; the server did not answer in time", limit.count());
  }

  static std::string path_only(const std::string& target) { return target.substr(0, target.find('?')); }

  /// "new connection: TCP 0.2 ms, TLS 1.9 ms (resumed)" — where a new connection's time went.
  static std::string describe_connection(const Connection& c, const TlsContext* tls) {
    std::string s = fmt::format("new connection: TCP {:.2f} ms", c.times.tcp_ms);
    if (c.times.tls) {
      s += fmt::format(", TLS {:.2f} ms", c.times.tls_ms);
      if (tls && tls->sessions_on_disk()) s += c.times.resumed ? " (resumed)" : " (full handshake)";
      if (c.times.context_ms > 0)
        s += fmt::format(", TLS context built while connecting {:.2f} ms", c.times.context_ms);
    }
    return s;
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
  kube::ServerUrl url_;
  bool https_ = false;
  std::string authority_, base_url_, target_prefix_;
  std::mutex mutex_;
  std::vector<Idle> idle_;
  std::shared_ptr<TlsContext> tls_;
};

}  // namespace

std::shared_ptr<Transport> make_http_transport(const KubeCluster& cluster, TransportOptions options) {
  return std::make_shared<HttpTransport>(cluster, std::move(options));
}

}  // namespace gpupool
