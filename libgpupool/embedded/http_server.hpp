// embedded/http_server.hpp — the HTTPS front of the embedded API server (Boost.Beast/Asio live
// only in http_server.cpp). One thread accepts; each connection is served by its own thread with
// keep-alive; streamed responses use chunked transfer encoding. Authentication happens here:
// a bearer token from the token table, or a client certificate signed by the cluster CA
// (CN = user, O = groups).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "embedded/api.hpp"
#include "embedded/faults.hpp"

namespace gpupool::embedded {

struct Identity {
  std::string user;
  std::vector<std::string> groups;
  /// user.Info's extra authentication.kubernetes.io/credential-id: "X509SHA256=<hex>" for a client
  /// certificate (the x509 authenticator's), empty for a token of the server's list.
  std::string credential_id;
  std::string uid;  ///< user.Info's UID (a service account's uid; empty for the others here)
  /// user.Info's other extra values (a pod-bound token's pod-name, pod-uid, node-name, node-uid).
  std::map<std::string, std::vector<std::string>> extra;
};

class HttpServer {
 public:
  struct Options {
    int port = 0;
    std::string cert_pem, key_pem;  ///< serving certificate
    std::string client_ca_pem;      ///< client certificates must chain to it
    std::map<std::string, Identity> tokens;
    /// Bearer tokens not in `tokens` (service account JWTs): their identity, or nullopt (401).
    std::function<std::optional<Identity>(std::string_view token)> authenticate_token;
    /// Seconds since the epoch by which TLS sessions age (their lifetime, their renewal); empty:
    /// the real time. Tests move it.
    std::function<std::int64_t()> tls_session_clock;
  };
  using Handler = std::function<Response(const Request&)>;
  /// Binds 127.0.0.1:<port> and starts serving; throws gpupool::Error when it cannot.
  HttpServer(Options options, Handler handler, FaultInjector& faults);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  int port() const;
  void stop();
  /// stop(), then listen again on the same port.
  void restart();
  /// Cuts the connections of streaming responses in progress; returns how many.
  int disconnect_streams();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The verb a request is authorized as ("get", "list", "watch", "create", ...) for fault rules.
std::string verb_of(const Request& r);

}  // namespace gpupool::embedded
