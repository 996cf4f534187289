#include "embedded/ip_parse.hpp"

namespace gpupool::embedded::ip {

namespace {

// The fork's `big`: dtoi and xtoi give up at 0xFFFFFF.
constexpr int kBig = 0xFFFFFF;

struct Num {
  int n = 0;
  std::size_t used = 0;
  bool ok = false;
};

Num dtoi(std::string_view s) {  // forked/golang/net/parse.go dtoi
  Num r;
  for (; r.used < s.size() && s[r.used] >= '0' && s[r.used] <= '9'; ++r.used)
    if ((r.n = r.n * 10 + (s[r.used] - '0')) >= kBig) return {kBig, r.used, false};
  r.ok = r.used > 0;
  return r;
}

Num xtoi(std::string_view s) {  // forked/golang/net/parse.go xtoi
  Num r;
  for (; r.used < s.size(); ++r.used) {
    const char c = s[r.used];
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      break;
    if ((r.n = r.n * 16 + d) >= kBig) return {0, r.used, false};
  }
  r.ok = r.used > 0;
  return r;
}

}  // namespace

std::optional<Ip> parse_ipv4(std::string_view s) {
  Ip ip{};
  ip[10] = ip[11] = 0xff;
  for (int i = 0; i < 4; ++i) {
    if (s.empty()) return std::nullopt;  // missing octets
    if (i > 0) {
      if (s.front() != '.') return std::nullopt;
      s.remove_prefix(1);
    }
    const Num d = dtoi(s);
    if (!d.ok || d.n > 0xff) return std::nullopt;
    ip[12 + i] = static_cast<std::uint8_t>(d.n);
    s.remove_prefix(d.used);
  }
  if (!s.empty()) return std::nullopt;
  return ip;
}

std::optional<Ip> parse_ipv6(std::string_view s) {
  Ip ip{};
  int ellipsis = -1;  // position of "::" in ip
  if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
    ellipsis = 0;
    s.remove_prefix(2);
    if (s.empty()) return ip;
  }
  int i = 0;
  while (i < 16) {
    const Num x = xtoi(s);
    if (!x.ok || x.n > 0xffff) return std::nullopt;
    if (x.used < s.size() && s[x.used] == '.') {  // a trailing IPv4 address
      if ((ellipsis < 0 && i != 12) || i + 4 > 16) return std::nullopt;
      const auto v4 = parse_ipv4(s);
      if (!v4) return std::nullopt;
      for (int k = 0; k < 4; ++k) ip[static_cast<std::size_t>(i + k)] = (*v4)[static_cast<std::size_t>(12 + k)];
      s = {};
      i += 4;
      break;
    }
    ip[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(x.n >> 8);
    ip[static_cast<std::size_t>(i + 1)] = static_cast<std::uint8_t>(x.n);
    i += 2;
    s.remove_prefix(x.used);
    if (s.empty()) break;
    if (s.front() != ':' || s.size() == 1) return std::nullopt;
    s.remove_prefix(1);
    if (s.front() == ':') {
      if (ellipsis >= 0) return std::nullopt;  // a second "::"
      ellipsis = i;
      s.remove_prefix(1);
      if (s.empty()) break;
    }
  }
  if (!s.empty()) return std::nullopt;
  if (i < 16) {
    if (ellipsis < 0) return std::nullopt;
    const int n = 16 - i;
    for (int j = i - 1; j >= ellipsis; --j) ip[static_cast<std::size_t>(j + n)] = ip[static_cast<std::size_t>(j)];
    for (int j = ellipsis + n - 1; j >= ellipsis; --j) ip[static_cast<std::size_t>(j)] = 0;
  } else if (ellipsis >= 0) {
    return std::nullopt;  // "::" must stand for at least one group
  }
  return ip;
}

std::optional<Ip> parse_ip(std::string_view s) {
  for (const char c : s) {
    if (c == '.') return parse_ipv4(s);
    if (c == ':') return parse_ipv6(s);
  }
  return std::nullopt;
}

bool is_v4(const Ip& ip) {
  for (int i = 0; i < 10; ++i)
    if (ip[static_cast<std::size_t>(i)]) return false;
  return ip[10] == 0xff && ip[11] == 0xff;
}

bool is_ipv6_string(std::string_view s) {
  const auto ip = parse_ip(s);
  return ip && !is_v4(*ip);
}

std::optional<Cidr> parse_cidr(std::string_view s) {
  const auto slash = s.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view addr = s.substr(0, slash), mask = s.substr(slash + 1);
  Cidr c;
  c.v4_syntax = true;
  auto ip = parse_ipv4(addr);
  if (!ip) {
    c.v4_syntax = false;
    ip = parse_ipv6(addr);
  }
  const Num d = dtoi(mask);
  if (!ip || !d.ok || d.used != mask.size() || d.n > (c.v4_syntax ? 32 : 128)) return std::nullopt;
  c.ip = *ip;
  c.bits = d.n;
  return c;
}

}  // namespace gpupool::embedded::ip
