#include "kube/proxy.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/ascii.hpp"
#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "kube/util.hpp"

namespace gpupool::kube {

namespace {

using ascii::lower;

std::string env_any(const char* upper, const char* lower) {
  for (const char* name : {upper, lower})
    if (const char* v = std::getenv(name); v && *v) return v;
  return {};
}

/// An IP address as 16 bytes (IPv4 mapped into IPv6, as Go's net.IP holds it).
std::optional<std::array<unsigned char, 16>> parse_ip(const std::string& text) {
  std::array<unsigned char, 16> ip{};
  in_addr v4{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    ip[10] = ip[11] = 0xff;
    std::memcpy(ip.data() + 12, &v4, 4);
    return ip;
  }
  if (text.find(':') != std::string::npos && ::inet_pton(AF_INET6, text.c_str(), ip.data()) == 1) return ip;
  return std::nullopt;
}

bool is_v4(const std::array<unsigned char, 16>& ip) {
  static constexpr std::array<unsigned char, 12> prefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::equal(prefix.begin(), prefix.end(), ip.begin());
}

bool is_loopback(const std::array<unsigned char, 16>& ip) {
  if (is_v4(ip)) return ip[12] == 127;
  static constexpr std::array<unsigned char, 16> one{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return ip == one;
}

/// "10.0.0.0/8", "fd00::/8": whether `ip` is inside (Go's net.ParseCIDR and IPNet.Contains).
std::optional<bool> cidr_contains(const std::string& cidr, const std::array<unsigned char, 16>& ip) {
  const auto slash = cidr.find('/');
  if (slash == std::string::npos) return std::nullopt;
  const auto net = parse_ip(cidr.substr(0, slash));
  const std::string bits_text = cidr.substr(slash + 1);
  if (!net || bits_text.empty() || bits_text.size() > 3 ||
      !std::all_of(bits_text.begin(), bits_text.end(), ascii::digit))
    return std::nullopt;
  const bool v4 = cidr.find(':') == std::string::npos;
  const int bits = std::stoi(bits_text);
  if (bits > (v4 ? 32 : 128)) return std::nullopt;
  if (v4 != is_v4(ip)) return false;  // an IPv4 block holds no IPv6 address and the other way round
  const int total = (v4 ? 96 : 0) + bits;
  for (int i = 0; i < total; ++i) {
    const int byte = i / 8, mask = 0x80 >> (i % 8);
    if (((*net)[byte] & mask) != (ip[byte] & mask)) return false;
  }
  return true;
}

/// Go's net.SplitHostPort for a NO_PROXY entry: host and port, or nullopt when it has no port.
std::optional<std::pair<std::string, std::string>> split_host_port(const std::string& entry) {
  if (!entry.empty() && entry.front() == '[') {
    const auto close = entry.find(']');
    if (close == std::string::npos || close + 1 >= entry.size() || entry[close + 1] != ':') return std::nullopt;
    return std::pair{entry.substr(1, close - 1), entry.substr(close + 2)};
  }
  const auto colon = entry.find(':');
  if (colon == std::string::npos || entry.find(':', colon + 1) != std::string::npos) return std::nullopt;
  return std::pair{entry.substr(0, colon), entry.substr(colon + 1)};
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && ascii::hex_digit(s[i + 1]) && ascii::hex_digit(s[i + 2])) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

Proxy parse_proxy_url(const std::string& text, const std::string& origin, const std::string& file) {
  std::string url = text;
  // Go's httpproxy.parseProxy: a value without a scheme ("proxy:3128") is taken as http://.
  if (url.find("://") == std::string::npos) url = "http://" + url;
  const auto sep = url.find("://");
  Proxy p;
  p.scheme = lower(url.substr(0, sep));
  p.origin = origin;
  if (p.scheme == "socks5h") p.scheme = "socks5";
  if (p.scheme != "http" && p.scheme != "socks5")
    throw ConfigError(file, origin,
                      fmt::format("only http:// and socks5:// proxies are supported (got \"{}://...\"); use an HTTP "
                                  "proxy that tunnels with CONNECT, or a SOCKS5 proxy such as `ssh -D`",
                                  p.scheme));
  std::string rest = url.substr(sep + 3);
  rest = rest.substr(0, rest.find('/'));
  if (const auto at = rest.rfind('@'); at != std::string::npos) {
    const std::string userinfo = rest.substr(0, at);
    const auto colon = userinfo.find(':');
    p.user = percent_decode(userinfo.substr(0, colon));
    if (colon != std::string::npos) p.password = percent_decode(userinfo.substr(colon + 1));
    rest = rest.substr(at + 1);
  }
  const ServerUrl u = parse_server_url("http://" + rest);
  if (u.host.empty()) throw ConfigError(file, origin, "the proxy URL names no host; write SCHEME://HOST:PORT");
  p.host = u.host;
  // Without a port: 80 for http://, 1080 for socks5:// (Go's net/http proxy defaults).
  const auto bracket = rest.find(']');
  const bool has_port = rest.find(':', bracket == std::string::npos ? 0 : bracket) != std::string::npos;
  p.port = has_port || p.scheme == "http" ? u.port : "1080";
  return p;
}

}  // namespace

ProxyEnvironment ProxyEnvironment::of_process() {
  return {env_any("HTTP_PROXY", "http_proxy"), env_any("HTTPS_PROXY", "https_proxy"), env_any("NO_PROXY", "no_proxy")};
}

bool use_proxy(const std::string& no_proxy, const std::string& host_in, const std::string& port) {
  if (host_in == "localhost") return false;  // before lowering, as Go does: "LocalHost" is proxied
  const std::string host = lower(host_in);
  const auto ip = parse_ip(host);
  if (ip && is_loopback(*ip)) return false;
  std::size_t start = 0;
  while (start <= no_proxy.size()) {
    const auto comma = std::min(no_proxy.find(',', start), no_proxy.size());
    const std::string entry = lower(trim(std::string_view(no_proxy).substr(start, comma - start)));
    start = comma + 1;
    if (entry.empty()) continue;
    if (entry == "*") return false;
    if (auto inside = cidr_contains(entry, ip.value_or(std::array<unsigned char, 16>{})); inside) {
      if (ip && *inside) return false;
      continue;
    }
    std::string entry_host = entry, entry_port;
    if (auto hp = split_host_port(entry)) {
      if (hp->first.empty()) continue;  // ":80": no host, ignored
      entry_host = hp->first;
      entry_port = hp->second;
    }
    if (const auto entry_ip = parse_ip(entry_host)) {
      if (ip && *entry_ip == *ip && (entry_port.empty() || entry_port == port)) return false;
      continue;
    }
    if (ip) continue;  // a name never matches an address
    if (entry_host.rfind("*.", 0) == 0) entry_host = entry_host.substr(1);
    const bool match_host = entry_host.front() != '.';
    if (match_host) entry_host = "." + entry_host;
    const bool matches = (host.size() >= entry_host.size() &&
                          host.compare(host.size() - entry_host.size(), entry_host.size(), entry_host) == 0) ||
                         (match_host && host == entry_host.substr(1));
    if (matches && (entry_port.empty() || entry_port == port)) return false;
  }
  return true;
}

Proxy proxy_for(const KubeCluster& cluster, const ProxyEnvironment& env) {
  if (!cluster.proxy_url.empty()) return parse_proxy_url(cluster.proxy_url, "cluster.proxy-url", "kubeconfig");
  const ServerUrl u = parse_server_url(cluster.server);
  const bool https = u.scheme == "https";
  const std::string& value = https ? env.https_proxy : env.http_proxy;
  if (value.empty() || !use_proxy(env.no_proxy, u.host, u.port)) return {};
  return parse_proxy_url(value, https ? "HTTPS_PROXY" : "HTTP_PROXY", "environment");
}

}  // namespace gpupool::kube
