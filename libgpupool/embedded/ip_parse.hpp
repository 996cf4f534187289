// embedded/ip_parse.hpp — IP addresses and CIDRs as Kubernetes reads them. Validation:
// k8s.io/utils/net ParseIPSloppy and ParseCIDRSloppy, the fork of Go 1.16's net.ParseIP and
// net.ParseCIDR that still accepts leading zeros in IPv4 fields (issue.k8s.io/100895), for every
// rule that checks an address (Pod, Node, Service). Warnings (the Service strategy's
// getWarningsForIP / getWarningsForCIDR): Go's strict net/netip, with its error texts.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpupool::embedded::ip {

/// 16 bytes; an IPv4 address is held IPv4-mapped (::ffff:a.b.c.d), as Go's net.IP is.
using Ip = std::array<std::uint8_t, 16>;

/// The fork's parseIPv4: four decimal fields of any length (leading zeros allowed), each <= 255.
std::optional<Ip> parse_ipv4(std::string_view s);
/// The fork's parseIPv6 (an embedded IPv4 tail parsed as above; hex groups of any length <= 0xffff).
std::optional<Ip> parse_ipv6(std::string_view s);
/// netutils.ParseIPSloppy: IPv4 or IPv6, by whichever of '.' and ':' comes first.
std::optional<Ip> parse_ip(std::string_view s);
/// net.IP.To4() != nil: IPv4, or IPv4-mapped IPv6.
bool is_v4(const Ip& ip);
/// netutils.IsIPv6String: a valid address that is no IPv4 one.
bool is_ipv6_string(std::string_view s);

struct Cidr {
  Ip ip;
  int bits = 0;
  bool v4_syntax = false;  ///< written as IPv4 (32 bits at most), not as IPv6
};
/// netutils.ParseCIDRSloppy: an address (IPv4, else IPv6), '/', a decimal prefix length (any
/// number of leading zeros) within the address's bits.
std::optional<Cidr> parse_cidr(std::string_view s);

/// A net/netip Addr: `is4` for an IPv4 address (z4; an IPv4-mapped IPv6 one is not), `zone` of IPv6.
struct NetipAddr {
  Ip ip{};
  bool is4 = false;
  std::string zone;
};
/// netip.ParseAddr (Go 1.23): the address, or nullopt with Go's error text in `err`
/// (`ParseAddr("x"): unable to parse IP`, `... (at "rest")`).
std::optional<NetipAddr> netip_parse_addr(std::string_view s, std::string& err);
/// netip.Addr.String: dotted IPv4, RFC 5952 IPv6 (longest zero run of two or more groups as
/// "::", lower-case hex), "::ffff:a.b.c.d" for IPv4-mapped, then "%zone".
std::string netip_string(const NetipAddr& a);
struct NetipPrefix {
  NetipAddr addr;
  int bits = 0;
};
/// netip.ParsePrefix: the prefix, or nullopt with Go's error text (`netip.ParsePrefix("x"): ...`).
std::optional<NetipPrefix> netip_parse_prefix(std::string_view s, std::string& err);

}  // namespace gpupool::embedded::ip
