#include "embedded/ip_parse.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "embedded/typecheck.hpp"  // go_quote

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

// Both IPv6 parsers (the fork's and netip's) start alike: a leading "::" sets the ellipsis at 0.
// True when that is all there is.
bool leading_ellipsis(std::string_view& s, int& ellipsis) {
  if (s.size() < 2 || s[0] != ':' || s[1] != ':') return false;
  ellipsis = 0;
  s.remove_prefix(2);
  return s.empty();
}

// ... and end alike: the groups parsed (i bytes) move to the end, the ellipsis filled with zeros.
void expand_ellipsis(std::uint8_t* ip, int i, int ellipsis) {
  const int n = 16 - i;
  for (int j = i - 1; j >= ellipsis; --j) ip[j + n] = ip[j];
  for (int j = ellipsis; j < ellipsis + n; ++j) ip[j] = 0;
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
  if (leading_ellipsis(s, ellipsis)) return ip;
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
    expand_ellipsis(ip.data(), i, ellipsis);
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

// ---- net/netip (go/src/net/netip/netip.go, Go 1.23) ------------------------------------------

namespace {

std::string addr_error(std::string_view in, std::string_view msg, std::string_view at = {}) {
  std::string e = fmt::format("ParseAddr({}): {}", go_quote(in), msg);
  if (!at.empty()) e += fmt::format(" (at {})", go_quote(at));
  return e;
}

// parseIPv4Fields: the octets of in[off:end] into out[0..3], or an error text.
std::string netip_v4_fields(std::string_view in, std::size_t off, std::size_t end, std::uint8_t* out) {
  const std::string_view s = in.substr(off, end - off);
  int val = 0, pos = 0, dig_len = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      if (dig_len == 1 && val == 0) return addr_error(in, "IPv4 field has octet with leading zero");
      val = val * 10 + (c - '0');
      ++dig_len;
      if (val > 255) return addr_error(in, "IPv4 field has value >255");
    } else if (c == '.') {
      if (i == 0 || i == s.size() - 1 || s[i - 1] == '.')
        return addr_error(in, "IPv4 field must have at least one digit", s.substr(i));
      if (pos == 3) return addr_error(in, "IPv4 address too long");
      out[pos++] = static_cast<std::uint8_t>(val);
      val = 0;
      dig_len = 0;
    } else {
      return addr_error(in, "unexpected character", s.substr(i));
    }
  }
  if (pos < 3) return addr_error(in, "IPv4 address too short");
  out[3] = static_cast<std::uint8_t>(val);
  return {};
}

std::optional<NetipAddr> netip_v6(std::string_view in, std::string& err) {
  std::string_view s = in;
  NetipAddr a;
  if (const auto pct = s.find('%'); pct != std::string_view::npos) {
    a.zone = std::string(s.substr(pct + 1));
    s = s.substr(0, pct);
    if (a.zone.empty()) {
      err = addr_error(in, "zone must be a non-empty string");
      return std::nullopt;
    }
  }
  auto fail = [&](std::string e) {
    err = std::move(e);
    return std::nullopt;
  };
  int ellipsis = -1;
  if (leading_ellipsis(s, ellipsis)) return a;
  int i = 0;
  while (i < 16) {
    std::size_t off = 0;
    std::uint32_t acc = 0;
    for (; off < s.size(); ++off) {
      const char c = s[off];
      if (c >= '0' && c <= '9')
        acc = (acc << 4) + static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        acc = (acc << 4) + static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        acc = (acc << 4) + static_cast<std::uint32_t>(c - 'A' + 10);
      else
        break;
      if (off > 3) return fail(addr_error(in, "each group must have 4 or less digits", s));
      if (acc > 0xffff) return fail(addr_error(in, "IPv6 field has value >=2^16", s));
    }
    if (off == 0) return fail(addr_error(in, "each colon-separated field must have at least one digit", s));
    if (off < s.size() && s[off] == '.') {
      if (ellipsis < 0 && i != 12)
        return fail(addr_error(in, "embedded IPv4 address must replace the final 2 fields of the address", s));
      if (i + 4 > 16)
        return fail(addr_error(in, "too many hex fields to fit an embedded IPv4 at the end of the address", s));
      std::size_t end = in.size();
      if (!a.zone.empty()) end -= a.zone.size() + 1;
      if (std::string e = netip_v4_fields(in, end - s.size(), end, a.ip.data() + i); !e.empty()) return fail(e);
      s = {};
      i += 4;
      break;
    }
    a.ip[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(acc >> 8);
    a.ip[static_cast<std::size_t>(i + 1)] = static_cast<std::uint8_t>(acc);
    i += 2;
    s.remove_prefix(off);
    if (s.empty()) break;
    if (s[0] != ':') return fail(addr_error(in, "unexpected character, want colon", s));
    if (s.size() == 1) return fail(addr_error(in, "colon must be followed by more characters", s));
    s.remove_prefix(1);
    if (s[0] == ':') {
      if (ellipsis >= 0) return fail(addr_error(in, "multiple :: in address", s));
      ellipsis = i;
      s.remove_prefix(1);
      if (s.empty()) break;
    }
  }
  if (!s.empty()) return fail(addr_error(in, "trailing garbage after address", s));
  if (i < 16) {
    if (ellipsis < 0) return fail(addr_error(in, "address string too short"));
    expand_ellipsis(a.ip.data(), i, ellipsis);
  } else if (ellipsis >= 0) {
    return fail(addr_error(in, "the :: must expand to at least one field of zeros"));
  }
  return a;
}

}  // namespace

std::optional<NetipAddr> netip_parse_addr(std::string_view s, std::string& err) {
  for (const char c : s) {
    if (c == '.') {
      NetipAddr a;
      a.is4 = true;
      a.ip[10] = a.ip[11] = 0xff;
      if (std::string e = netip_v4_fields(s, 0, s.size(), a.ip.data() + 12); !e.empty()) {
        err = std::move(e);
        return std::nullopt;
      }
      return a;
    }
    if (c == ':') return netip_v6(s, err);
    if (c == '%') {
      err = addr_error(s, "missing IPv6 address");
      return std::nullopt;
    }
  }
  err = addr_error(s, "unable to parse IP");
  return std::nullopt;
}

std::string netip_string(const NetipAddr& a) {
  const auto* b = a.ip.data();
  auto v4 = [&] { return fmt::format("{}.{}.{}.{}", b[12], b[13], b[14], b[15]); };
  if (a.is4) return v4();
  std::string out;
  if (is_v4(a.ip)) {  // Is4In6: string4In6
    out = "::ffff:" + v4();
  } else {
    auto group = [&](int g) { return (b[2 * g] << 8) | b[2 * g + 1]; };
    int zero_start = 255, zero_end = 255;
    for (int i = 0; i < 8; ++i) {
      int j = i;
      while (j < 8 && group(j) == 0) ++j;
      if (const int l = j - i; l >= 2 && l > zero_end - zero_start) zero_start = i, zero_end = j;
    }
    for (int i = 0; i < 8; ++i) {
      if (i == zero_start) {
        out += "::";
        i = zero_end;
        if (i >= 8) break;
      } else if (i > 0) {
        out += ':';
      }
      out += fmt::format("{:x}", group(i));
    }
  }
  if (!a.zone.empty()) out += "%" + a.zone;
  return out;
}

std::optional<NetipPrefix> netip_parse_prefix(std::string_view s, std::string& err) {
  auto fail = [&](std::string_view msg) {
    err = fmt::format("netip.ParsePrefix({}): {}", go_quote(s), msg);
    return std::nullopt;
  };
  const auto slash = s.rfind('/');
  if (slash == std::string_view::npos) return fail("no '/'");
  std::string addr_err;
  const auto addr = netip_parse_addr(s.substr(0, slash), addr_err);
  if (!addr) return fail(addr_err);
  if (!addr->is4 && !addr->zone.empty()) return fail("IPv6 zones cannot be present in a prefix");
  const std::string_view bits = s.substr(slash + 1);
  const std::string bad = "bad bits after slash: " + go_quote(bits);
  // strconv.Atoi, without the sign and leading zeros it would take.
  if (bits.size() > 1 && (bits[0] < '1' || bits[0] > '9')) return fail(bad);
  if (bits.empty() || bits.size() > 19 || bits.find_first_not_of("0123456789") != std::string_view::npos)
    return fail(bad);
  const unsigned long long n = std::stoull(std::string(bits));
  if (n > 9223372036854775807ULL) return fail(bad);  // Atoi's range error
  if (n > (addr->is4 ? 32U : 128U)) return fail("prefix length out of range");
  return NetipPrefix{*addr, static_cast<int>(n)};
}

}  // namespace gpupool::embedded::ip
