// Which proxy a connection goes through (kube/proxy.hpp): the environment's HTTPS_PROXY /
// HTTP_PROXY / NO_PROXY as Go's http.ProxyFromEnvironment reads them (kubectl), and the
// kubeconfig's proxy-url.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "kube/proxy.hpp"

using gpupool::kube::Proxy;
using gpupool::kube::proxy_for;
using gpupool::kube::ProxyEnvironment;
using gpupool::kube::use_proxy;

namespace {

gpupool::KubeCluster cluster(const std::string& server, const std::string& proxy_url = {}) {
  gpupool::KubeCluster c;
  c.server = server;
  c.proxy_url = proxy_url;
  return c;
}

}  // namespace

TEST_CASE("NO_PROXY and loopback, as Go 1.23's http.ProxyFromEnvironment decides") {
  // Recorded from Go 1.23 itself (a program calling http.ProxyFromEnvironment with this NO_PROXY,
  // HTTP_PROXY and HTTPS_PROXY set), on the cases of golang.org/x/net/http/httpproxy's own tests
  // and a few more: true = through the proxy, false = direct.
  const std::string no_proxy =
      "foobar.com, .barbaz.net, *.wildcard.io, 192.168.1.1, 192.168.1.2:81, 192.168.1.3:80, 10.0.0.0/30, "
      "2001:db8::52:0:1, [2001:db8::52:0:2]:443, [2001:db8::52:0:3]:80, 2002:db8:a::45/64, :99, Example.ORG:8443";
  struct Case {
    const char* host;
    const char* port;
    bool proxied;
  };
  const std::vector<Case> cases = {
      {"localhost", "80", false},
      {"127.0.0.1", "80", false},
      {"127.0.0.2", "80", false},
      {"::1", "80", false},
      {"::2", "80", true},
      {"192.168.1.1", "80", false},
      {"192.168.1.2", "80", true},
      {"192.168.1.2", "81", false},
      {"192.168.1.3", "80", false},
      {"192.168.1.3", "8080", true},
      {"192.168.1.4", "80", true},
      {"10.0.0.2", "80", false},
      {"10.0.0.4", "80", true},
      {"2001:db8::52:0:1", "80", false},
      {"2001:db8::52:0:2", "80", true},
      {"2001:db8::52:0:2", "443", false},
      {"2001:db8::52:0:3", "80", false},
      {"2002:db8:a::123", "80", false},
      {"fe80::424b:c8be:1643:a1b6", "80", true},
      {"barbaz.net", "80", true},
      {"www.barbaz.net", "80", false},
      {"foobar.com", "80", false},
      {"www.foobar.com", "80", false},
      {"foofoobar.com", "80", true},
      {"baz.com", "80", true},
      {"localhost.net", "80", true},
      {"local.localhost", "80", true},
      {"barbarbaz.net", "80", true},
      {"wildcard.io", "80", true},
      {"nested.wildcard.io", "80", false},
      {"awildcard.io", "80", true},
      {"api.example.org", "8443", false},
      {"api.example.org", "6443", true},
      {"EXAMPLE.org", "8443", false},
      {"LocalHost", "6443", true},  // Go looks for "localhost" before it lowers the host
      {"cluster.internal", "6443", true},
  };
  for (const auto& c : cases) {
    INFO(c.host << ":" << c.port);
    CHECK(use_proxy(no_proxy, c.host, c.port) == c.proxied);
  }
  CHECK_FALSE(use_proxy("*", "api.example.org", "443"));
  CHECK_FALSE(use_proxy(" , example.org ,", "api.example.org", "443"));
  CHECK(use_proxy("", "api.example.org", "443"));
  CHECK_FALSE(use_proxy("", "127.0.0.1", "6443"));  // loopback is never proxied, NO_PROXY or not
}

TEST_CASE("proxy_for: proxy-url first, then HTTPS_PROXY or HTTP_PROXY by the server's scheme") {
  const ProxyEnvironment env{"socks5://s:1080", "proxy.corp:3128", "internal"};
  Proxy p = proxy_for(cluster("https://api.example.org:6443"), env);
  CHECK(p.scheme == "http");  // no scheme: http://, as Go's parseProxy reads it
  CHECK(p.host == "proxy.corp");
  CHECK(p.port == "3128");
  CHECK(p.origin == "HTTPS_PROXY");
  p = proxy_for(cluster("http://api.example.org:8080"), env);
  CHECK(p.scheme == "socks5");
  CHECK(p.host == "s");
  CHECK(p.port == "1080");
  CHECK(p.origin == "HTTP_PROXY");
  CHECK_FALSE(proxy_for(cluster("https://api.internal:6443"), env));  // NO_PROXY
  CHECK_FALSE(proxy_for(cluster("https://127.0.0.1:6443"), env));     // loopback
  CHECK_FALSE(proxy_for(cluster("https://api.example.org"), ProxyEnvironment{}));
  // The kubeconfig's proxy-url wins over the environment, NO_PROXY and loopback included.
  p = proxy_for(cluster("https://127.0.0.1:6443", "socks5h://alice:p%40ss@[::1]"), env);
  CHECK(p.scheme == "socks5");
  CHECK(p.host == "::1");
  CHECK(p.port == "1080");  // a SOCKS proxy's default port
  CHECK(p.user == "alice");
  CHECK(p.password == "p@ss");  // percent-decoded, as Go's url.UserPassword
  CHECK(p.origin == "cluster.proxy-url");
  CHECK(proxy_for(cluster("https://x", "http://proxy"), env).port == "80");
  // Schemes the transport cannot speak are named with where they were set.
  CHECK_THROWS_WITH_AS(proxy_for(cluster("https://x", "https://proxy:443"), env),
                       doctest::Contains("only http:// and socks5:// proxies are supported (got \"https://...\")"),
                       gpupool::ConfigError);
  try {
    proxy_for(cluster("https://api.example.org"), ProxyEnvironment{"", "ftp://p:21", ""});
    FAIL("no error");
  } catch (const gpupool::ConfigError& e) {
    CHECK(e.key() == "HTTPS_PROXY");
    CHECK(e.file() == "environment");
  }
}
