// kube/proxy.hpp — which proxy a connection to the API server goes through (private).
//
// As kubectl (client-go's rest.Config.Proxy, http.ProxyFromEnvironment): the kubeconfig's
// cluster.proxy-url when set, else the environment's HTTPS_PROXY (https:// servers) or HTTP_PROXY
// (http:// servers), upper case before lower case, except for hosts NO_PROXY names and for
// loopback addresses and "localhost", which are never proxied (golang.org/x/net/http/httpproxy,
// proxy.go: config.useProxy and config.init). Schemes: http:// (a CONNECT tunnel, or the absolute
// request form for an http:// server) and socks5:// / socks5h:// (RFC 1928, the host name resolved
// by the proxy).
#pragma once

#include <string>

#include "kube/util.hpp"

namespace gpupool {
struct KubeCluster;
}

namespace gpupool::kube {

struct ProxyEnvironment {
  std::string http_proxy, https_proxy, no_proxy;
  /// HTTP_PROXY/http_proxy, HTTPS_PROXY/https_proxy, NO_PROXY/no_proxy of this process.
  static ProxyEnvironment of_process();
};

/// Whether NO_PROXY (`no_proxy`, a comma-separated list: "*", IP addresses, CIDR blocks, host
/// names matching themselves and their subdomains, ".name" and "*.name" matching subdomains only,
/// each with an optional :port) and the loopback rule let a request to host:port go to a proxy.
bool use_proxy(const std::string& no_proxy, const std::string& host, const std::string& port);

struct Proxy {
  std::string scheme;          ///< "http" or "socks5" (socks5h too); empty: no proxy
  std::string host, port;      ///< the proxy's address
  std::string user, password;  ///< from user:password@ (secrets: never printed)
  std::string origin;          ///< where it was set, for messages: "cluster.proxy-url", "HTTPS_PROXY"
  explicit operator bool() const { return !scheme.empty(); }
};

/// The proxy a connection to `cluster.server` goes through (none: an empty Proxy). Throws
/// ConfigError naming `origin` for a proxy URL that is not http:// or socks5://.
Proxy proxy_for(const KubeCluster& cluster, const ProxyEnvironment& env = ProxyEnvironment::of_process());

}  // namespace gpupool::kube
