// The HTTP/1.1 transport over TLS against the embedded server: through an HTTP CONNECT proxy,
// one TLS set-up reused by the pooled connections, a restarted server's dead connections
// replaced, a rotated client identity, and exec through the same proxy (kube/connect.hpp is shared).
#include <doctest/doctest.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gpupool/client.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "gpupool/submit_options.hpp"
#include "kube/http_test_server.hpp"
#include "kube/socks5_test_server.hpp"
#include "local_stream_handler.hpp"
#include "streams_job.hpp"

using namespace std::chrono_literals;
using gpupool::Client;
using gpupool::EmbeddedServer;
using gpupool::test::HttpTestServer;
using gpupool::test::Reply;
using gpupool::test::ServedRequest;

namespace {

const gpupool::ResourceRef kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};

struct Logs {
  std::mutex mu;
  std::vector<std::string> lines;
  int count(const std::string& what) {
    std::lock_guard lock(mu);
    int n = 0;
    for (const auto& l : lines) n += l.find(what) != std::string::npos;
    return n;
  }
};

gpupool::ClientOptions logged(Logs& logs) {
  gpupool::ClientOptions o;
  o.retry.sleep = [](std::chrono::milliseconds) {};
  o.retry.max_retries = 0;  // a failure here is the transport's, not something to retry over
  o.logger = [&logs](gpupool::LogLevel, const std::string& m) {
    std::lock_guard lock(logs.mu);
    logs.lines.push_back(m);
  };
  return o;
}

gpupool::KubeConfig config_for(const std::string& path) {
  gpupool::KubeConfigOptions o;
  o.path = path;
  return gpupool::load_kubeconfig(o);
}

gpupool::EmbeddedOptions alice() {
  gpupool::EmbeddedOptions o;
  o.users = {"alice"};
  return o;
}

/// An HTTP proxy on 127.0.0.1 that answers every CONNECT with a tunnel to 127.0.0.1:`port`,
/// recording the request lines.
struct TunnelProxy {
  std::mutex mu;
  std::vector<std::string> lines;
  HttpTestServer server;
  explicit TunnelProxy(int port)
      : server([this, port](const ServedRequest& r) {
          std::lock_guard lock(mu);
          lines.push_back(r.line());
          Reply reply{"HTTP/1.1 200 Connection established\r\n\r\n"};
          reply.tunnel_to = true;
          reply.tunnel_port = port;
          return reply;
        }) {}
  std::vector<std::string> seen() {
    std::lock_guard lock(mu);
    return lines;
  }
};

}  // namespace

TEST_CASE("https through an HTTP CONNECT proxy: the tunnel carries TLS to the server, kept alive") {
  EmbeddedServer server(alice());
  TunnelProxy proxy(server.port());
  auto cfg = config_for(server.kubeconfig("alice"));
  cfg.cluster.proxy_url = proxy.server.url();
  Logs logs;
  Client c(cfg, logged(logs));
  for (int i = 0; i < 5; ++i) c.list(kConfigMaps, "");
  CHECK(proxy.server.connections() == 1);  // one tunnel, kept alive across the five requests
  CHECK(logs.count("new connection") == 1);
  CHECK(proxy.seen() == std::vector<std::string>{"CONNECT 127.0.0.1:" + std::to_string(server.port()) + " HTTP/1.1"});
}

namespace {

/// Sets (or, for nullopt, unsets) environment variables for a scope, then puts them back.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, std::optional<std::string>>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value)
        ::setenv(name, value->c_str(), 1);
      else
        ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// The embedded server's kubeconfig with its address replaced by a name only a proxy can reach
/// (the certificate is still verified, as `localhost`).
gpupool::KubeConfig behind_proxy(const EmbeddedServer& server) {
  auto cfg = config_for(server.kubeconfig("alice"));
  cfg.cluster.server = "https://api.cluster.example:6443";
  cfg.cluster.tls_server_name = "localhost";
  return cfg;
}

}  // namespace

TEST_CASE("HTTPS_PROXY from the environment, as kubectl: a remote server through it, loopback never") {
  EmbeddedServer server(alice());
  TunnelProxy proxy(server.port());
  ScopedEnv env{{"HTTPS_PROXY", proxy.server.url()},
                {"https_proxy", std::nullopt},
                {"NO_PROXY", std::nullopt},
                {"no_proxy", std::nullopt}};
  Logs logs;
  Client c(behind_proxy(server), logged(logs));
  for (int i = 0; i < 3; ++i) c.list(kConfigMaps, "");
  CHECK(proxy.seen() == std::vector<std::string>{"CONNECT api.cluster.example:6443 HTTP/1.1"});
  CHECK(proxy.server.connections() == 1);
  // The server's own address (127.0.0.1) is loopback: straight to it, the proxy not asked.
  Client direct(config_for(server.kubeconfig("alice")), logged(logs));
  direct.list(kConfigMaps, "");
  CHECK(proxy.server.connections() == 1);
  // A proxy URL of a scheme the transport cannot speak: named with the variable that set it.
  ScopedEnv ftp{{"HTTPS_PROXY", "ftp://127.0.0.1:21"}};
  CHECK_THROWS_WITH_AS(Client(behind_proxy(server), logged(logs)).list(kConfigMaps, ""),
                       doctest::Contains("HTTPS_PROXY"), gpupool::ConfigError);
}

TEST_CASE("SOCKS5 proxies (ssh -D): proxy-url or HTTPS_PROXY, the name resolved by the proxy, user and password") {
  EmbeddedServer server(alice());
  SUBCASE("proxy-url socks5://, no authentication: one tunnel kept alive") {
    gpupool::test::Socks5TestServer socks(server.port());
    auto cfg = behind_proxy(server);
    cfg.cluster.proxy_url = socks.url();
    Logs logs;
    Client c(cfg, logged(logs));
    for (int i = 0; i < 3; ++i) c.list(kConfigMaps, "");
    CHECK(socks.targets() == std::vector<std::string>{"api.cluster.example:6443"});
  }
  SUBCASE("HTTPS_PROXY=socks5h://user:password@..., the password refused when wrong") {
    gpupool::test::Socks5TestServer socks(server.port(), "alice", "s3cr@t");
    ScopedEnv env{{"HTTPS_PROXY", "socks5h://alice:s3cr%40t@127.0.0.1:" + std::to_string(socks.port())},
                  {"NO_PROXY", std::nullopt},
                  {"no_proxy", std::nullopt}};
    Logs logs;
    Client(behind_proxy(server), logged(logs)).list(kConfigMaps, "");
    CHECK(socks.targets() == std::vector<std::string>{"api.cluster.example:6443 as alice"});
    ScopedEnv wrong{{"HTTPS_PROXY", "socks5://alice:guess@127.0.0.1:" + std::to_string(socks.port())}};
    try {
      Client(behind_proxy(server), logged(logs)).list(kConfigMaps, "");
      FAIL("no error");
    } catch (const gpupool::TransportError& e) {
      const std::string what = e.what();
      CHECK(what.find("refused the user name and password of the proxy URL") != std::string::npos);
      CHECK(what.find("guess") == std::string::npos);  // a secret is never printed
    }
    ScopedEnv none{{"HTTPS_PROXY", "socks5://127.0.0.1:" + std::to_string(socks.port())}};
    CHECK_THROWS_WITH_AS(Client(behind_proxy(server), logged(logs)).list(kConfigMaps, ""),
                         doctest::Contains("requires a user name and password: put them in the proxy URL"),
                         gpupool::TransportError);
  }
}

TEST_CASE("a restarted server: the pooled connections it dropped are replaced without an error") {
  EmbeddedServer server(alice());
  Logs logs;
  Client c(config_for(server.kubeconfig("alice")), logged(logs));
  c.list(kConfigMaps, "");
  c.list(kConfigMaps, "");
  CHECK(logs.count("new connection") == 1);
  server.restart();                        // every connection dropped, the same port served again
  CHECK_NOTHROW(c.list(kConfigMaps, ""));  // max_retries = 0: the transport itself re-sent it
  CHECK(logs.count("new connection") == 2);
  CHECK(logs.count("GET /api/v1/namespaces/alice/configmaps -> 200") == 3);
}

TEST_CASE("client certificates: one TLS set-up per identity; a wrong key is named, not sent") {
  EmbeddedServer server(alice());
  Logs logs;
  auto cfg = config_for(server.cert_kubeconfig("alice"));
  Client c(cfg, logged(logs));
  for (int i = 0; i < 3; ++i) c.list(kConfigMaps, "");
  CHECK(logs.count("new connection") == 1);
  // A key that is not the certificate's: refused before any connection.
  auto wrong = cfg;
  REQUIRE(!wrong.user.client_key_pem.empty());
  wrong.user.client_key_pem = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
  // It is the user's configuration, which no retry mends: ConfigError at once, with retries allowed.
  Logs none;
  gpupool::ClientOptions o = logged(none);
  int pauses = 0;
  o.retry.max_retries = 10;
  o.retry.sleep = [&pauses](std::chrono::milliseconds) { ++pauses; };
  CHECK_THROWS_WITH_AS(Client(wrong, o).list(kConfigMaps, ""),
                       doctest::Contains("client certificate or key cannot be loaded"), gpupool::ConfigError);
  CHECK(none.count("new connection") == 0);
  CHECK(pauses == 0);
}

TEST_CASE("exec goes through the same CONNECT proxy (streams connect where the transport does)") {
  gpupool::testing::EchoServer echo;
  auto handler = std::make_shared<gpupool::testing::LocalStreamHandler>(echo.port());
  gpupool::EmbeddedCluster admin(
      gpupool::EmbeddedClusterOptions{.topology = "seed", .server = {.users = {"alice"}, .stream_handler = handler}});
  admin.submit(gpupool::to_workload(gpupool::testing::streams_job()));
  admin.server().advance(30s);
  TunnelProxy proxy(admin.server().port());
  auto cfg = config_for(admin.admin_kubeconfig());
  cfg.cluster.proxy_url = proxy.server.url();
  Logs logs;
  Client c(cfg, logged(logs));
  gpupool::ExecOptions o;
  o.command = {"sh", "-c", "echo through-the-proxy"};
  std::string out;
  gpupool::ExecIO io;
  io.on_stdout = [&](std::string_view s) { out.append(s); };
  CHECK(c.exec(cfg.namespace_name, "train-worker-0", o, io) == 0);
  CHECK(out == "through-the-proxy\n");
  const auto lines = proxy.seen();
  REQUIRE(!lines.empty());
  CHECK(lines[0] == "CONNECT 127.0.0.1:" + std::to_string(admin.server().port()) + " HTTP/1.1");
}
