// embedded/validation_service.cpp — a Service as kube-apiserver v1.32 decodes, allocates and
// validates it:
//   - pkg/apis/core/v1/defaults.go SetObjectDefaults_Service (as a body is decoded);
//   - pkg/registry/core/service/storage: beginCreate's normalizeClusterIPs and
//     Allocators.allocateCreate (initIPFamilyFields, allocClusterIPs, initNodePorts,
//     allocHealthCheckNodePort), which run before the strategy's Validate and whose errors come alone;
//     on update beginUpdate (patchAllocatedValues, normalizeClusterIPs, allocateUpdate) and the
//     strategy's PrepareForUpdate (dropTypeDependentFields);
//   - pkg/apis/core/validation/validation.go ValidateServiceUpdate's own rules and ValidateService
//     with the functions it calls, in the order they append to the field.ErrorList;
//   - pkg/api/service/warnings.go GetWarningsForService (the warnings that need no IP parsing).
// Each cause is worded as field.Error words it: strings %q-quoted, integers bare, pointers
// dereferenced, structs and slices as %#v prints them.
#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "embedded/ip_parse.hpp"
#include "embedded/typecheck.hpp"
#include "embedded/validation.hpp"
#include "embedded/validation_fields.hpp"
#include "embedded/validation_kinds.hpp"
#include "gpupool/names.hpp"

namespace gpupool::embedded {
namespace {

using namespace fields;

// A Go int field (not a pointer): absent is 0.
std::int64_t int_or_zero(const json::object& o, std::string_view key) { return int_at(o, key).value_or(0); }
json::object& obj_at(json::object& o, std::string_view key) {
  auto& v = o[key];
  if (!v.is_object()) v = json::object{};
  return v.as_object();
}

constexpr const char* kOnlyLoadBalancer = "may only be used when `type` is 'LoadBalancer'";
constexpr std::int64_t kNodePortBase = 30000, kNodePortSize = 2768;  // --service-node-port-range 30000-32767

// ---- IP addresses (embedded/ip_parse.hpp: ParseIPSloppy, ParseCIDRSloppy; net.IP's predicates) ----

using ip::Ip;
using ip::is_ipv6_string;
using ip::is_v4;
using ip::parse_ip;

bool valid_cidr(const std::string& s) { return ip::parse_cidr(s).has_value(); }

// validation.IsValidIP's message.
constexpr const char* kNotAnIp = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

// ValidateNonSpecialIP on an address IsValidIP accepted.
void non_special_ip(Errors& e, const std::string& f, const std::string& s) {
  const auto ip = parse_ip(s);
  if (!ip) return e.invalid(f, q(s), "must be a valid IP address");
  const bool v4 = is_v4(*ip);
  const std::uint8_t* b = ip->data() + (v4 ? 12 : 0);
  const bool unspecified = v4 ? (b[0] | b[1] | b[2] | b[3]) == 0 : *ip == Ip{};
  Ip loopback6{};
  loopback6[15] = 1;
  const bool loopback = v4 ? b[0] == 127 : *ip == loopback6;
  const bool link_local = v4 ? b[0] == 169 && b[1] == 254 : b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
  const bool link_local_multicast = v4 ? b[0] == 224 && b[1] == 0 && b[2] == 0 : b[0] == 0xff && (b[1] & 0x0f) == 0x02;
  if (unspecified) e.invalid(f, q(s), fmt::format("may not be unspecified ({})", s));
  if (loopback) e.invalid(f, q(s), "may not be in the loopback range (127.0.0.0/8, ::1/128)");
  if (link_local) e.invalid(f, q(s), "may not be in the link-local range (169.254.0.0/16, fe80::/10)");
  if (link_local_multicast)
    e.invalid(f, q(s), "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)");
}

// ---- the spec's predicates ------------------------------------------------------------------------

// isHeadlessService: clusterIPs is exactly ["None"].
bool headless(const json::object& spec) {
  const auto ips = strings_at(spec, "clusterIPs");
  return ips.size() == 1 && ips[0] == "None";
}

// apiservice.ExternallyAccessible.
bool externally_accessible(const json::object& spec) {
  const std::string type = string_at(spec, "type");
  const json::array* external = array_at(spec, "externalIPs");
  return type == "LoadBalancer" || type == "NodePort" || (type == "ClusterIP" && external && !external->empty());
}

// apiservice.NeedsHealthCheck: a LoadBalancer whose externalTrafficPolicy is Local.
bool needs_health_check(const json::object& spec) {
  return string_at(spec, "type") == "LoadBalancer" && string_at(spec, "externalTrafficPolicy") == "Local";
}

// ValidateServiceClusterIPsRelatedFields (an ExternalName service's fields are checked elsewhere).
void cluster_ips_related_fields(Errors& e, const json::object& spec) {
  if (string_at(spec, "type") == "ExternalName") return;
  const std::string cluster_ip = string_at(spec, "clusterIP");
  const auto ips = strings_at(spec, "clusterIPs");
  const auto families = strings_at(spec, "ipFamilies");
  const std::string shown = go_strings(ips);
  // ClusterIP and ClusterIPs in sync.
  if (!cluster_ip.empty()) {
    if (ips.empty())
      e.required("spec.clusterIPs");
    else if (ips[0] != cluster_ip)
      e.invalid("spec.clusterIPs", shown, "first value must match `clusterIP`");
  } else if (!ips.empty()) {
    e.invalid("spec.clusterIPs", shown, "must be empty when `clusterIP` is not specified");
  }
  // ipFamilies: each IPv4 or IPv6, none twice.
  std::set<std::string> seen;
  for (std::size_t i = 0; i < families.size(); ++i) {
    const std::string f = fmt::format("spec.ipFamilies[{}]", i);
    if (families[i] != "IPv4" && families[i] != "IPv6") e.not_supported(f, families[i], {"IPv4", "IPv6"});
    if (!seen.insert(families[i]).second) e.duplicate(f, q(families[i]));
  }
  // ipFamilyPolicy (nil is defaulted by the allocator).
  if (present(spec, "ipFamilyPolicy")) {
    const std::string policy = string_at(spec, "ipFamilyPolicy");
    if (policy != "SingleStack" && policy != "PreferDualStack" && policy != "RequireDualStack")
      e.not_supported("spec.ipFamilyPolicy", policy, {"PreferDualStack", "RequireDualStack", "SingleStack"});
  }
  // clusterIPs: "None" only first and alone, else valid addresses.
  bool invalid_ips = false;
  for (std::size_t i = 0; i < ips.size(); ++i) {
    if (i == 0 && ips[i] == "None") {
      if (ips.size() > 1) {
        invalid_ips = true;
        e.invalid("spec.clusterIPs", shown, "'None' must be the first and only value");
      }
      continue;
    }
    if (!parse_ip(ips[i])) {
      invalid_ips = true;
      e.invalid(fmt::format("spec.clusterIPs[{}]", i), q(ips[i]), kNotAnIp);
    }
  }
  if (ips.size() > 2) e.invalid("spec.clusterIPs", shown, "may only hold up to 2 values");
  if (invalid_ips) return;
  // More than one IP: one of each family (netutils.IsDualStackIPStrings).
  if (ips.size() > 1) {
    bool v4 = false, v6 = false;
    for (const auto& ip : ips) (is_ipv6_string(ip) ? v6 : v4) = true;
    if (!(v4 && v6)) e.invalid("spec.clusterIPs", shown, "may specify no more than one IP for each IP family");
  }
  // Each IP of the family its ipFamilies entry names.
  if (!headless(spec) && !ips.empty() && !families.empty())
    for (std::size_t i = 0; i < ips.size() && i < families.size(); ++i) {
      const std::string f = fmt::format("spec.clusterIPs[{}]", i);
      if (families[i] == "IPv4" && is_ipv6_string(ips[i]))
        e.invalid(f, q(ips[i]), fmt::format("expected an IPv4 value as indicated by `ipFamilies[{}]`", i));
      if (families[i] == "IPv6" && !is_ipv6_string(ips[i]))
        e.invalid(f, q(ips[i]), fmt::format("expected an IPv6 value as indicated by `ipFamilies[{}]`", i));
    }
}

// validateServicePort: the name (required when there are several ports; a DNS-1123 label; not
// twice), the port, the protocol, the targetPort (ValidatePortNumOrName) and the appProtocol.
// A Service's or an Endpoints subset's port: its name (required when there are several; unique
// among a Service's `names`), number and protocol.
void port_name_number_protocol(Errors& e, const json::object& p, bool require_name, std::set<std::string>* names,
                               const std::string& at) {
  const std::string name = string_at(p, "name");
  if (require_name && name.empty()) {
    e.required(at + ".name");
  } else if (!name.empty()) {
    e.invalid(at + ".name", name, dns1123_label_errors(name));  // ValidateDNS1123Label
    if (names && !names->insert(name).second) e.duplicate(at + ".name", q(name));
  }
  if (const std::int64_t port = int_or_zero(p, "port"); port < 1 || port > 65535)
    e.invalid(at + ".port", std::to_string(port), kPortRange);
  const std::string protocol = string_at(p, "protocol");
  if (protocol.empty())
    e.required(at + ".protocol");
  else if (protocol != "TCP" && protocol != "UDP" && protocol != "SCTP")
    e.not_supported(at + ".protocol", protocol, {"SCTP", "TCP", "UDP"});
}

void app_protocol(Errors& e, const json::object& p, const std::string& at) {
  if (present(p, "appProtocol")) {  // ValidateQualifiedName
    const std::string app = string_at(p, "appProtocol");
    e.invalid(at + ".appProtocol", app, qualified_name_errors(app));
  }
}

void service_port(Errors& e, const json::object& p, bool require_name, std::set<std::string>& names,
                  const std::string& at) {
  port_name_number_protocol(e, p, require_name, &names, at);
  // ValidatePortNumOrName: a number in 1..65535 (IntValue), or an IANA service name.
  const json::value* tp = p.if_contains("targetPort");
  const GoIntOrString target(tp ? *tp : json::value());
  if (!target.is_string) {
    if (target.int_val < 1 || target.int_val > 65535)
      e.invalid(at + ".targetPort", std::to_string(target.int_val), kPortRange);
  } else {
    e.invalid(at + ".targetPort", target.str_val, port_name_errors(target.str_val));  // IsValidPortName
  }
  app_protocol(e, p, at);
}

// validateClientIPAffinityConfig on sessionAffinityConfig (ClientIP affinity).
void client_ip_affinity_config(Errors& e, const json::object& spec) {
  constexpr const char* kWhen = "when session affinity type is ClientIP";
  const json::object* config = object_at(spec, "sessionAffinityConfig");
  if (!config) return e.required("spec.sessionAffinityConfig", kWhen);
  const json::object* client = object_at(*config, "clientIP");
  if (!client) return e.required("spec.sessionAffinityConfig.clientIP", kWhen);
  if (!present(*client, "timeoutSeconds"))
    return e.required("spec.sessionAffinityConfig.clientIP.timeoutSeconds", kWhen);
  // validateAffinityTimeout (core.MaxClientIPServiceAffinitySeconds: a day).
  if (const std::int64_t t = int_or_zero(*client, "timeoutSeconds"); t <= 0 || t > 86400)
    e.invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", std::to_string(t),
              "must be greater than 0 and less than 86400");
}

// strings.TrimSpace on ASCII white space (the other Unicode spaces it trims are left).
std::string trim_space(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\v\f\r";
  const auto b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(kSpace) - b + 1));
}

// The allocator's refusals (errors.NewInvalid of its field.ErrorList), which come before validation.
[[noreturn]] void refuse(const ResourceType& t, const json::object& svc, Causes causes) {
  const json::object* md = object_at(svc, "metadata");
  throw StatusError::invalid(t, md ? string_at(*md, "name") : "", std::move(causes));
}

}  // namespace

void endpoint_subsets_causes(const json::object& endpoints, Causes& causes) {
  // validateEndpointSubsets: each subset has addresses, each address (validateEndpointAddress:
  // IsValidIP, the hostname a DNS label, the node name a subdomain, ValidateNonSpecialIP), each
  // port (validateEndpointPort: a name when there are several).
  Errors e{causes};
  const auto subsets = items(endpoints, "subsets");
  for (std::size_t i = 0; i < subsets.size(); ++i) {
    const json::object& ss = *subsets[i];
    const std::string at = fmt::format("subsets[{}]", i);
    if (items(ss, "addresses").empty() && items(ss, "notReadyAddresses").empty())
      e.required(at, "must specify `addresses` or `notReadyAddresses`");
    for (const char* list : {"addresses", "notReadyAddresses"}) {
      const auto addresses = items(ss, list);
      for (std::size_t j = 0; j < addresses.size(); ++j) {
        const json::object& a = *addresses[j];
        const std::string af = fmt::format("{}.{}[{}]", at, list, j);
        const std::string address = string_at(a, "ip");
        if (!parse_ip(address)) e.invalid(af + ".ip", q(address), kNotAnIp);
        if (const std::string host = string_at(a, "hostname"); !host.empty())
          e.invalid(af + ".hostname", host, dns1123_label_errors(host));
        if (const json::value* node = a.if_contains("nodeName"); node && node->is_string())  // ValidateNodeName
          e.invalid(af + ".nodeName", std::string(node->as_string()), dns1123_subdomain_errors(node->as_string()));
        non_special_ip(e, af + ".ip", address);
      }
    }
    const auto ports = items(ss, "ports");
    for (std::size_t j = 0; j < ports.size(); ++j) {
      const std::string pf = fmt::format("{}.ports[{}]", at, j);
      port_name_number_protocol(e, *ports[j], ports.size() > 1, nullptr, pf);
      app_protocol(e, *ports[j], pf);
    }
  }
}

void endpoint_slice_causes(const json::object& slice, Causes& causes) {
  // discovery/validation ValidateEndpointSlice past the metadata: the address type, each
  // endpoint's addresses (by the type; an unknown one's not checked), node name, hostname and
  // hints, then the ports (names unique, a protocol).
  Errors e{causes};
  const std::string type = string_at(slice, "addressType");
  if (type.empty())
    e.required("addressType");
  else if (type != "IPv4" && type != "IPv6" && type != "FQDN")
    e.not_supported("addressType", type, {"FQDN", "IPv4", "IPv6"});
  const auto endpoints = items(slice, "endpoints");
  if (endpoints.size() > 1000)
    return e.out.push_back({"FieldValueTooMany",
                            fmt::format("Too many: {}: must have at most 1000 items", endpoints.size()), "endpoints"});
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    const json::object& ep = *endpoints[i];
    const std::string at = fmt::format("endpoints[{}]", i);
    const auto addresses = strings_at(ep, "addresses");
    if (addresses.empty())
      e.required(at + ".addresses", "must contain at least 1 address");
    else if (addresses.size() > 100)
      e.out.push_back({"FieldValueTooMany", fmt::format("Too many: {}: must have at most 100 items", addresses.size()),
                       at + ".addresses"});
    for (std::size_t j = 0; j < addresses.size(); ++j) {
      const std::string& a = addresses[j];
      const std::string af = fmt::format("{}.addresses[{}]", at, j);
      if (type == "IPv4" || type == "IPv6") {  // IsValidIPv4Address / IsValidIPv6Address, ValidateNonSpecialIP
        const auto ip = parse_ip(a);
        if (!ip || is_v4(*ip) != (type == "IPv4"))
          e.invalid(af, q(a), type == "IPv4" ? "must be a valid IPv4 address" : "must be a valid IPv6 address");
        non_special_ip(e, af, a);
      } else if (type == "FQDN") {  // IsFullyQualifiedDomainName: the first error only
        const std::string name = a.ends_with('.') ? a.substr(0, a.size() - 1) : a;
        if (a.empty()) {
          e.required(af);
        } else if (const auto errs = dns1123_subdomain_errors(name); !errs.empty()) {
          std::string joined;
          for (const auto& m : errs) joined += (joined.empty() ? "" : ",") + m;
          e.invalid(af, q(name), joined);
        } else if (name.find('.') == std::string::npos) {
          e.invalid(af, q(name), "should be a domain with at least two segments separated by dots");
        }
      }
    }
    if (const json::value* node = ep.if_contains("nodeName"); node && node->is_string())  // ValidateNodeName
      e.invalid(at + ".nodeName", std::string(node->as_string()), dns1123_subdomain_errors(node->as_string()));
    // (deprecatedTopology: dropped from a v1 request before validation, dropTopologyOnV1)
    if (const json::value* host = ep.if_contains("hostname"); host && host->is_string())
      e.invalid(at + ".hostname", std::string(host->as_string()), dns1123_label_errors(host->as_string()));
    if (const json::object* hints = object_at(ep, "hints")) {  // validateHints
      const auto zones = items(*hints, "forZones");
      if (zones.size() > 8) {
        e.out.push_back({"FieldValueTooMany", fmt::format("Too many: {}: must have at most 8 items", zones.size()),
                         at + ".hints.forZones"});
      } else {
        std::set<std::string> names;
        for (std::size_t j = 0; j < zones.size(); ++j) {
          const std::string name = string_at(*zones[j], "name");
          const std::string zf = fmt::format("{}.hints.forZones[{}].name", at, j);
          if (!names.insert(name).second) e.duplicate(zf, q(name));
          e.invalid(zf, name, label_value_errors(name));
        }
      }
    }
  }
  const auto ports = items(slice, "ports");
  if (ports.size() > 20000)
    return e.out.push_back(
        {"FieldValueTooMany", fmt::format("Too many: {}: must have at most 20000 items", ports.size()), "ports"});
  std::set<std::string> names;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const json::object& p = *ports[i];
    const std::string at = fmt::format("ports[{}]", i);
    const std::string name = string_at(p, "name");  // (defaulted to "")
    if (!name.empty()) e.invalid(at + ".name", name, dns1123_label_errors(name));
    if (!names.insert(name).second) e.duplicate(at + ".name", q(name));  // (a *string: Go prints its value)
    if (!present(p, "protocol")) {
      e.required(at + ".protocol");
    } else if (const std::string protocol = string_at(p, "protocol");
               protocol != "TCP" && protocol != "UDP" && protocol != "SCTP") {
      e.not_supported(at + ".protocol", protocol, {"SCTP", "TCP", "UDP"});
    }
    app_protocol(e, p, at);
  }
}

void default_service(json::object& svc) {
  // SetObjectDefaults_Service (SetDefaults_Service, then each port's protocol).
  json::object& spec = obj_at(svc, "spec");
  if (string_at(spec, "sessionAffinity").empty()) spec["sessionAffinity"] = "None";
  if (string_at(spec, "sessionAffinity") == "None") spec.erase("sessionAffinityConfig");
  if (string_at(spec, "sessionAffinity") == "ClientIP") {
    const json::object* config = object_at(spec, "sessionAffinityConfig");
    const json::object* client = config ? object_at(*config, "clientIP") : nullptr;
    if (!client || !present(*client, "timeoutSeconds"))
      spec["sessionAffinityConfig"] = json::object{{"clientIP", json::object{{"timeoutSeconds", 10800}}}};
  }
  if (string_at(spec, "type").empty()) spec["type"] = "ClusterIP";
  if (json::value* ports = spec.if_contains("ports"); ports && ports->is_array())
    for (auto& p : ports->as_array()) {
      if (p.is_null()) p = json::object{};  // a null item decodes as a zero ServicePort
      if (!p.is_object()) continue;
      auto& po = p.as_object();
      if (string_at(po, "protocol").empty()) po["protocol"] = "TCP";
      // A zero targetPort (absent, 0 or "") is the port.
      const json::value* tp = po.if_contains("targetPort");
      if (!tp || tp->is_null() || (tp->is_int64() && tp->as_int64() == 0) ||
          (tp->is_string() && tp->as_string().empty()))
        po["targetPort"] = int_or_zero(po, "port");
    }
  if (externally_accessible(spec) && string_at(spec, "externalTrafficPolicy").empty())
    spec["externalTrafficPolicy"] = "Cluster";
  const std::string type = string_at(spec, "type");
  if (!present(spec, "internalTrafficPolicy") && (type == "NodePort" || type == "LoadBalancer" || type == "ClusterIP"))
    spec["internalTrafficPolicy"] = "Cluster";
  if (type == "LoadBalancer" && !present(spec, "allocateLoadBalancerNodePorts"))
    spec["allocateLoadBalancerNodePorts"] = true;
  // A load balancer's addresses given without ipMode are VIPs (the LoadBalancerIPMode gate is on).
  if (type == "LoadBalancer")
    if (json::value* status = svc.if_contains("status"); status && status->is_object())
      if (json::value* lb = status->as_object().if_contains("loadBalancer"); lb && lb->is_object())
        if (json::value* ingress = lb->as_object().if_contains("ingress"); ingress && ingress->is_array())
          for (json::value& entry : ingress->as_array())
            if (entry.is_object() && !string_at(entry.as_object(), "ip").empty() &&
                !present(entry.as_object(), "ipMode"))
              entry.as_object()["ipMode"] = "VIP";
}

void load_balancer_ingress_causes(const json::object& obj, bool ip_mode, Causes& causes) {
  Errors e{causes};
  const json::object* status = object_at(obj, "status");
  const json::object* lb = status ? object_at(*status, "loadBalancer") : nullptr;
  const auto entries = lb ? items(*lb, "ingress") : std::vector<const json::object*>{};
  const std::string f = "status.loadBalancer.ingress";
  if (ip_mode) {  // a Service's (the AllowServiceLBStatusOnNonLB gate is off)
    const json::object* spec = object_at(obj, "spec");
    if (!entries.empty() && (spec ? string_at(*spec, "type") : "") != "LoadBalancer")
      return e.forbidden(f, "may only be used when `spec.type` is 'LoadBalancer'");
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const json::object& entry = *entries[i];
    const std::string at = fmt::format("{}[{}]", f, i);
    const std::string address = string_at(entry, "ip");
    if (!address.empty() && !ip::parse_ip(address)) e.invalid(at + ".ip", q(address), kNotAnIp);  // IsValidIP
    if (ip_mode) {
      if (!present(entry, "ipMode")) {
        if (!address.empty()) e.required(at + ".ipMode", "must be specified when `ip` is set");
      } else if (address.empty()) {
        e.forbidden(at + ".ipMode", "may not be specified when `ip` is not set");
      } else if (const std::string mode = string_at(entry, "ipMode"); mode != "VIP" && mode != "Proxy") {
        e.not_supported(at + ".ipMode", mode, {"Proxy", "VIP"});
      }
    }
    if (const std::string host = string_at(entry, "hostname"); !host.empty()) {
      e.invalid(at + ".hostname", host, dns1123_subdomain_errors(host));
      if (ip::parse_ip(host)) e.invalid(at + ".hostname", q(host), "must be a DNS name, not an IP address");
    }
  }
}

namespace {

// The embedded cluster's ranges: a stable address per namespace/name in 10.96.0.0/16 and node
// ports in 30000-32767, from this hash.
std::uint32_t service_hash(const json::object& svc) {
  const json::object* md = object_at(svc, "metadata");
  std::uint32_t h = 2166136261u;
  for (char ch : (md ? string_at(*md, "namespace") : "") + "/" + (md ? string_at(*md, "name") : ""))
    h = (h ^ static_cast<unsigned char>(ch)) * 16777619u;
  return h;
}

// The policy Go's getIPFamilyPolicy reads ("" for nil).
std::string policy_of(const json::object& spec) { return string_at(spec, "ipFamilyPolicy"); }

// isMatchingPreferDualStackClusterIPFields: an update that keeps a PreferDualStack service's type,
// cluster IPs and families is left as it is.
bool matching_prefer_dual_stack(const json::object& spec, const json::object* old) {
  if (!old || !present(spec, "ipFamilyPolicy")) return false;
  const std::string type = string_at(spec, "type");
  if (string_at(*old, "type") != type) return false;
  if (type != "ClusterIP" && type != "NodePort" && type != "LoadBalancer") return false;
  if (policy_of(spec) != "PreferDualStack") return false;
  if (present(*old, "ipFamilyPolicy") && policy_of(*old) != "PreferDualStack") return false;
  return strings_at(spec, "clusterIPs") == strings_at(*old, "clusterIPs") &&
         strings_at(spec, "ipFamilies") == strings_at(*old, "ipFamilies");
}

// Allocators.initIPFamilyFields on a single-stack IPv4 cluster (`old`: the stored spec of an update).
void init_ip_family_fields(const ResourceType& t, const json::object& svc, json::object& spec,
                           const json::object* old) {
  if (string_at(spec, "type") == "ExternalName" || matching_prefer_dual_stack(spec, old)) return;
  if (!present(spec, "ipFamilyPolicy")) {
    const json::object* selector = object_at(spec, "selector");
    if (old && present(*old, "ipFamilyPolicy"))
      spec["ipFamilyPolicy"] = old->at("ipFamilyPolicy");
    else  // headless and selectorless: dual-stack if it can
      spec["ipFamilyPolicy"] = string_at(spec, "clusterIP") == "None" && (!selector || selector->empty())
                                   ? "RequireDualStack"
                                   : "SingleStack";
  }
  Causes el;
  Errors e{el};
  cluster_ips_related_fields(e, spec);
  if (!el.empty()) refuse(t, svc, std::move(el));
  const std::string policy = policy_of(spec);
  auto ips = strings_at(spec, "clusterIPs");
  auto families = strings_at(spec, "ipFamilies");
  if (old) {  // an update
    const auto old_ips = strings_at(*old, "clusterIPs"), old_families = strings_at(*old, "ipFamilies");
    if (policy == "SingleStack") {
      // Single-stack is clear intent: the secondary IP and family go (if left as they were).
      if (ips == old_ips && ips.size() > 1) ips.resize(1), spec["clusterIPs"] = json::array{json::value(ips[0])};
      if (families == old_families && families.size() > 1)
        families.resize(1), spec["ipFamilies"] = json::array{json::value(families[0])};
    } else {
      if (!ips.empty() && ips.size() < old_ips.size())  // reducedClusterIPs
        e.invalid("spec.ipFamilyPolicy", q(policy), "must be 'SingleStack' to release the secondary cluster IP");
      if (!families.empty() && families.size() < old_families.size())  // reducedIPFamilies
        e.invalid("spec.ipFamilyPolicy", q(policy), "must be 'SingleStack' to release the secondary IP family");
    }
  }
  if (policy == "SingleStack") {
    if (ips.size() == 2)
      e.invalid("spec.ipFamilyPolicy", q(policy),
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified");
    if (families.size() == 2)
      e.invalid("spec.ipFamilyPolicy", q(policy),
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified");
  }
  // The families of the given IPs, where ipFamilies names none.
  for (std::size_t i = 0; i < ips.size() && ips[i] != "None"; ++i) {
    if (i < families.size()) continue;
    if (is_ipv6_string(ips[i]))
      e.invalid(fmt::format("spec.clusterIPs[{}]", i), go_strings(ips), "IPv6 is not configured on this cluster");
    else
      families.push_back("IPv4");
  }
  if (!el.empty()) refuse(t, svc, std::move(el));
  const json::object* selector = object_at(spec, "selector");
  if (string_at(spec, "clusterIP") == "None" && (!selector || selector->empty())) {
    // Headless and selectorless: any families, the other one added unless single-stack.
    if (families.empty()) families.push_back("IPv4");
    if (families.size() < 2 && policy != "SingleStack") families.push_back(families[0] == "IPv4" ? "IPv6" : "IPv4");
  } else {
    if (policy == "RequireDualStack")
      e.invalid("spec.ipFamilyPolicy", q(policy), "this cluster is not configured for dual-stack services");
    for (std::size_t i = 0; i < families.size(); ++i)
      if (families[i] != "IPv4")
        e.invalid(fmt::format("spec.ipFamilies[{}]", i), q(families[i]), "not configured on this cluster");
    if (!el.empty()) refuse(t, svc, std::move(el));
    if (families.empty()) families.push_back("IPv4");
  }
  json::array fam;
  for (const auto& f : families) fam.emplace_back(f);
  spec["ipFamilies"] = std::move(fam);
}

// allocClusterIPs: none for ExternalName or a headless service; else one per family (IPv4 only
// here), the first also the clusterIP.
void alloc_cluster_ips(json::object& spec, std::uint32_t h) {
  if (string_at(spec, "type") == "ExternalName") return;
  const auto ips = strings_at(spec, "clusterIPs");
  if (!ips.empty() && ips[0] == "None") return;
  const auto families = strings_at(spec, "ipFamilies");
  json::array out;
  for (std::size_t i = 0; i < std::max(families.size(), ips.size()); ++i) {
    std::string ip = i < ips.size() ? ips[i] : std::string();
    if (ip.empty() && i < families.size()) {
      ip = fmt::format("10.96.{}.{}", (h >> 8) % 256, h % 254 + 1);
      if (i == 0) spec["clusterIP"] = ip;
    }
    out.emplace_back(ip);
  }
  spec["clusterIPs"] = std::move(out);
}

// A portallocator.PortAllocationOperation: a dry run's checks no range, refuses only a port it holds
// already and picks the next after the highest it holds (32769 at first).
struct NodePortOperation {
  bool dry_run;
  std::uint32_t h;
  std::vector<std::int64_t> held;
  std::uint32_t k = 0;
  std::optional<std::string> allocate(std::int64_t port) {
    if (!dry_run && (port < kNodePortBase || port >= kNodePortBase + kNodePortSize))
      return fmt::format("provided port is not in the valid range. The range of valid ports is {}-{}", kNodePortBase,
                         kNodePortBase + kNodePortSize - 1);
    if (std::find(held.begin(), held.end(), port) != held.end()) return "provided port is already allocated";
    held.push_back(port);
    return std::nullopt;
  }
  std::int64_t allocate_next() {
    std::int64_t port;
    if (dry_run) {
      port = held.empty() ? 32769 : *std::max_element(held.begin(), held.end()) + 1;
    } else {
      do port = kNodePortBase + (h + k++) % kNodePortSize;
      while (std::find(held.begin(), held.end(), port) != held.end() && k < 2 * kNodePortSize);
    }
    held.push_back(port);
    return port;
  }
};

// shouldAllocateNodePorts: always for NodePort, per allocateLoadBalancerNodePorts for a LoadBalancer.
bool should_allocate_node_ports(const json::object& spec) {
  const std::string type = string_at(spec, "type");
  if (type == "NodePort") return true;
  if (type != "LoadBalancer") return false;
  const json::value* alb = spec.if_contains("allocateLoadBalancerNodePorts");
  return !alb || !alb->is_bool() || alb->as_bool();
}

// allocHealthCheckNodePort (a requested one the allocator refuses is an internal error there; not
// reproduced).
void alloc_health_check_node_port(json::object& spec, NodePortOperation& op) {
  if (const std::int64_t hc = int_or_zero(spec, "healthCheckNodePort"); hc != 0)
    (void)op.allocate(hc);
  else
    spec["healthCheckNodePort"] = op.allocate_next();
}

[[noreturn]] void refuse_node_port(const ResourceType& t, const json::object& svc, std::size_t i, std::int64_t port,
                                   const std::string& why) {
  refuse(t, svc,
         {{"FieldValueInvalid", fmt::format("Invalid value: {}: {}", port, why),
           fmt::format("spec.ports[{}].nodePort", i)}});
}

// A Go *T field compared as the strategy's same* helpers do (both nil, or equal values).
bool same_value(const json::object& a, const json::object& b, std::string_view key) {
  const bool pa = present(a, key), pb = present(b, key);
  if (!pa || !pb) return pa == pb;
  return a.at(key) == b.at(key);
}

// validateLoadBalancerClassField's checks of the class itself: a qualified name on a LoadBalancer,
// forbidden on any other type.
void load_balancer_class(const json::object& spec, const std::string& type, Errors& e) {
  if (!present(spec, "loadBalancerClass")) return;
  const std::string cls = string_at(spec, "loadBalancerClass");
  if (type == "LoadBalancer")
    e.invalid("spec.loadBalancerClass", cls, qualified_name_errors(cls));  // ValidateQualifiedName
  else
    e.forbidden("spec.loadBalancerClass", kOnlyLoadBalancer);
}

std::set<std::int64_t> node_ports_of(const json::object& spec) {
  std::set<std::int64_t> out;
  for (const json::object* p : items(spec, "ports"))
    if (const std::int64_t np = int_or_zero(*p, "nodePort"); np != 0) out.insert(np);
  return out;
}

}  // namespace

void allocate_service(const ResourceType& t, json::object& svc, bool dry_run) {
  json::object& spec = obj_at(svc, "spec");
  const std::uint32_t h = service_hash(svc);
  // normalizeClusterIPs (a create): a clusterIP alone gives clusterIPs.
  if (!string_at(spec, "clusterIP").empty() && strings_at(spec, "clusterIPs").empty())
    spec["clusterIPs"] = json::array{spec.at("clusterIP")};
  init_ip_family_fields(t, svc, spec, nullptr);
  alloc_cluster_ips(spec, h);
  // txnAllocNodePorts: initNodePorts for NodePort and LoadBalancer services, then the health check port.
  NodePortOperation op{dry_run, h, {}};
  const std::string type = string_at(spec, "type");
  if (type == "NodePort" || type == "LoadBalancer") {
    const bool allocate_all = should_allocate_node_ports(spec);
    std::map<std::int64_t, std::int64_t> by_port;  // port -> its node port
    if (json::value* pv = spec.if_contains("ports"); pv && pv->is_array()) {
      auto& ports = pv->as_array();
      for (std::size_t i = 0; i < ports.size(); ++i) {
        if (!ports[i].is_object()) continue;
        auto& p = ports[i].as_object();
        const std::int64_t port = int_or_zero(p, "port"), node_port = int_or_zero(p, "nodePort");
        if (node_port == 0 && !allocate_all) continue;
        if (const auto it = by_port.find(port); it == by_port.end() || it->second == 0) {
          // findRequestedNodePort: the first node port asked for this port.
          std::int64_t asked = 0;
          for (const auto& other : ports)
            if (other.is_object() && int_or_zero(other.as_object(), "port") == port &&
                int_or_zero(other.as_object(), "nodePort") != 0) {
              asked = int_or_zero(other.as_object(), "nodePort");
              break;
            }
          if (asked != 0) {
            if (auto err = op.allocate(asked)) refuse_node_port(t, svc, i, asked, *err);
          } else {
            asked = op.allocate_next();
          }
          p["nodePort"] = asked;
          by_port[port] = asked;
        } else if (node_port != it->second) {
          if (node_port == 0)
            p["nodePort"] = it->second;
          else if (auto err = op.allocate(node_port))
            refuse_node_port(t, svc, i, node_port, *err);
        }
      }
    }
  }
  if (needs_health_check(spec)) alloc_health_check_node_port(spec, op);
}

void update_service(const ResourceType& t, json::object& svc, const json::object& old_svc, bool dry_run) {
  json::object& spec = obj_at(svc, "spec");
  const json::object* old_p = object_at(old_svc, "spec");
  const json::object& old = old_p ? *old_p : kNone;
  const std::string type = string_at(spec, "type"), old_type = string_at(old, "type");
  auto node_port_type = [](const std::string& ty, const json::object& s) {  // the storage's needsNodePort
    return ty == "NodePort" || (ty == "LoadBalancer" && should_allocate_node_ports(s));
  };

  // patchAllocatedValues: what the server allocated and the write leaves out is kept.
  if (old_type != "ExternalName" && type != "ExternalName") {
    if (string_at(spec, "clusterIP").empty() && !string_at(old, "clusterIP").empty())
      spec["clusterIP"] = old.at("clusterIP");
    if (strings_at(spec, "clusterIPs").empty() && !strings_at(old, "clusterIPs").empty())
      spec["clusterIPs"] = old.at("clusterIPs");
  }
  if (node_port_type(old_type, old) && node_port_type(type, spec)) {
    std::set<std::int64_t> used;  // node ports both hold: not to be patched in
    const auto before = node_ports_of(old), after = node_ports_of(spec);
    std::set_intersection(before.begin(), before.end(), after.begin(), after.end(), std::inserter(used, used.end()));
    std::map<std::string, std::int64_t> by_name;
    for (const json::object* p : items(old, "ports")) by_name[string_at(*p, "name")] = int_or_zero(*p, "nodePort");
    if (json::value* pv = spec.if_contains("ports"); pv && pv->is_array())
      for (auto& p : pv->as_array()) {
        if (!p.is_object() || int_or_zero(p.as_object(), "nodePort") != 0) continue;
        const auto it = by_name.find(string_at(p.as_object(), "name"));
        if (it != by_name.end() && it->second != 0 && !used.count(it->second)) p.as_object()["nodePort"] = it->second;
      }
  }
  if (needs_health_check(old) && needs_health_check(spec) && int_or_zero(spec, "healthCheckNodePort") == 0 &&
      int_or_zero(old, "healthCheckNodePort") != 0)
    spec["healthCheckNodePort"] = old.at("healthCheckNodePort");

  // normalizeClusterIPs (an update).
  const auto old_ips = strings_at(old, "clusterIPs");
  const std::string old_ip = string_at(old, "clusterIP"), new_ip = string_at(spec, "clusterIP");
  if (!old_ips.empty() && strings_at(spec, "clusterIPs").empty() && old_ip == new_ip)
    spec["clusterIPs"] = old.at("clusterIPs");
  if (old_ip != new_ip && strings_at(spec, "clusterIPs") == old_ips) {
    if (!old_ip.empty() && new_ip.empty())
      spec.erase("clusterIPs");  // a client clearing it
    else
      spec["clusterIPs"] = json::array{json::value(new_ip)};
  }

  // allocateUpdate: the IP family fields, cluster IPs for a service that was ExternalName (a
  // single-stack cluster upgrades none), then the node ports.
  init_ip_family_fields(t, svc, spec, &old);
  if (old_type == "ExternalName" && type != "ExternalName" && !matching_prefer_dual_stack(spec, &old))
    alloc_cluster_ips(spec, service_hash(svc));
  NodePortOperation op{dry_run, service_hash(svc), {}};
  if (type == "NodePort" || type == "LoadBalancer") {
    // updateNodePorts: a node port the old service had is kept; another asked for is allocated.
    const auto before = node_ports_of(old);
    const bool allocate_all = should_allocate_node_ports(spec);
    std::set<std::int64_t> taken;
    if (json::value* pv = spec.if_contains("ports"); pv && pv->is_array())
      for (std::size_t i = 0; i < pv->as_array().size(); ++i) {
        auto& pval = pv->as_array()[i];
        if (!pval.is_object()) continue;
        auto& p = pval.as_object();
        const std::int64_t np = int_or_zero(p, "nodePort");
        if (np == 0 && !allocate_all) continue;
        if (np != 0) {
          if (!before.count(np) && !taken.count(np)) {
            if (auto err = op.allocate(np)) refuse_node_port(t, svc, i, np, *err);
            taken.insert(np);
          }
        } else {
          p["nodePort"] = op.allocate_next();
        }
      }
  }
  if (!needs_health_check(old) && needs_health_check(spec)) alloc_health_check_node_port(spec, op);

  // The strategy's PrepareForUpdate: dropTypeDependentFields wipes what the new type does not use
  // and the write left as it was.
  if (old_type != "ExternalName" && type == "ExternalName") {
    if (string_at(old, "clusterIP") == string_at(spec, "clusterIP") &&
        strings_at(old, "clusterIPs") == strings_at(spec, "clusterIPs"))
      spec.erase("clusterIP"), spec.erase("clusterIPs");
    if (strings_at(old, "ipFamilies") == strings_at(spec, "ipFamilies") &&
        present(old, "ipFamilies") == present(spec, "ipFamilies"))  // (reflect.DeepEqual: nil is no [])
      spec.erase("ipFamilies");
    if (policy_of(old) == policy_of(spec)) spec.erase("ipFamilyPolicy");
  }
  const bool old_np = old_type == "NodePort" || old_type == "LoadBalancer";
  const bool new_np = type == "NodePort" || type == "LoadBalancer";
  if (old_np && !new_np) {
    const auto before = node_ports_of(old), after = node_ports_of(spec);
    if (std::includes(before.begin(), before.end(), after.begin(), after.end()))
      if (json::value* pv = spec.if_contains("ports"); pv && pv->is_array())
        for (auto& p : pv->as_array())
          if (p.is_object()) p.as_object().erase("nodePort");
  }
  if (needs_health_check(old) && !needs_health_check(spec) &&
      int_or_zero(old, "healthCheckNodePort") == int_or_zero(spec, "healthCheckNodePort"))
    spec.erase("healthCheckNodePort");
  if (old_type == "LoadBalancer" && type != "LoadBalancer" && present(old, "allocateLoadBalancerNodePorts") &&
      present(spec, "allocateLoadBalancerNodePorts") &&
      old.at("allocateLoadBalancerNodePorts") == spec.at("allocateLoadBalancerNodePorts"))
    spec.erase("allocateLoadBalancerNodePorts");
  if (old_type == "LoadBalancer" && type != "LoadBalancer" && same_value(old, spec, "loadBalancerClass"))
    spec.erase("loadBalancerClass");
  if (externally_accessible(old) && !externally_accessible(spec) &&
      string_at(old, "externalTrafficPolicy") == string_at(spec, "externalTrafficPolicy"))
    spec.erase("externalTrafficPolicy");
  // defaultOnReadInternalTrafficPolicy: an ExternalName service is read without one.
  if (type == "ExternalName") spec.erase("internalTrafficPolicy");
}

void validate_service_update(const json::object& svc, const json::object& old_svc, Causes& causes) {
  Errors e{causes};
  const json::object* spec_p = object_at(svc, "spec");
  const json::object* old_p = object_at(old_svc, "spec");
  const json::object& spec = spec_p ? *spec_p : kNone;
  const json::object& old = old_p ? *old_p : kNone;
  const std::string type = string_at(spec, "type"), old_type = string_at(old, "type");
  const auto ips = strings_at(spec, "clusterIPs"), old_ips = strings_at(old, "clusterIPs");
  const auto families = strings_at(spec, "ipFamilies"), old_families = strings_at(old, "ipFamilies");
  const std::string policy = present(spec, "ipFamilyPolicy") ? q(policy_of(spec)) : "null";
  // validateUpgradeDowngradeClusterIPs.
  if (type != "ExternalName" && old_type != "ExternalName" && !(headless(old) && headless(spec))) {
    const std::string shown = go_strings(ips);
    if (old_ips.size() == ips.size()) {
      for (std::size_t i = 0; i < old_ips.size(); ++i)
        if (old_ips[i] != ips[i]) e.invalid(fmt::format("spec.clusterIPs[{}]", i), shown, "may not change once set");
    } else if (old_ips.size() > ips.size()) {
      if (ips.empty())
        e.invalid("spec.clusterIPs[0]", present(spec, "clusterIPs") ? shown : "[]string(nil)",
                  "primary clusterIP can not be unset");
      if (!old_ips.empty() && !ips.empty() && ips[0] != old_ips[0])
        e.invalid("spec.clusterIPs[0]", shown, "may not change once set");
      if (ips.size() == 1 && policy_of(spec) != "SingleStack")
        e.invalid("spec.ipFamilyPolicy", policy, "must be set to 'SingleStack' when releasing the secondary clusterIP");
    } else if (!old_ips.empty() && ips[0] != old_ips[0]) {
      e.invalid("spec.clusterIPs[0]", shown, "may not change once set");
    }
  }
  // validateUpgradeDowngradeIPFamilies.
  if (type != "ExternalName" && old_type != "ExternalName" && headless(spec) == headless(old) && !headless(spec)) {
    auto go_families = [](const std::vector<std::string>& v, bool set) {
      if (!set) return std::string("[]core.IPFamily(nil)");
      std::string out = "[]core.IPFamily{";
      for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + q(v[i]);
      return out + "}";
    };
    const std::string shown = go_families(families, present(spec, "ipFamilies"));
    const std::string shown_ips = present(spec, "clusterIPs") ? go_strings(ips) : "[]string(nil)";
    if (old_families.size() == families.size()) {
      for (std::size_t i = 0; i < old_families.size(); ++i)
        if (old_families[i] != families[i]) e.invalid("spec.ipFamilies[0]", shown, "may not change once set");
    } else if (old_families.size() > families.size()) {
      if (ips.empty()) e.invalid("spec.ipFamilies[0]", shown, "primary ipFamily can not be unset");
      if (!families.empty() && families[0] != old_families[0])
        e.invalid("spec.ipFamilies[0]", shown_ips, "may not change once set");
      if (families.size() == 1 && policy_of(spec) != "SingleStack")
        e.invalid("spec.ipFamilyPolicy", policy, "must be set to 'SingleStack' when releasing the secondary ipFamily");
    } else if (!old_families.empty() && !families.empty() && families[0] != old_families[0]) {
      e.invalid("spec.ipFamilies[0]", shown_ips, "may not change once set");
    }
  }
  // validateLoadBalancerClassField (an update): a LoadBalancer keeps its class; then the class's own
  // rules, which ValidateService (run after) reports a second time.
  if (old_type == "LoadBalancer" && type == "LoadBalancer" && !same_value(old, spec, "loadBalancerClass"))
    e.invalid("spec.loadBalancerClass",
              present(spec, "loadBalancerClass") ? q(string_at(spec, "loadBalancerClass")) : "null",
              "may not change once set");
  load_balancer_class(spec, type, e);
  // validateServiceExternalTrafficFieldsUpdate.
  if (needs_health_check(old) && needs_health_check(spec) &&
      int_or_zero(spec, "healthCheckNodePort") != int_or_zero(old, "healthCheckNodePort"))
    e.forbidden("spec.healthCheckNodePort", "field is immutable");
}

void validate_service(const json::object& svc, Causes& causes) {
  Errors e{causes};
  const json::object* md = object_at(svc, "metadata");
  const json::object* spec_p = object_at(svc, "spec");
  const json::object& spec = spec_p ? *spec_p : kNone;
  const std::string type = string_at(spec, "type");
  const bool is_headless = headless(spec);
  const auto ports = items(spec, "ports");

  // ValidateService (after ValidateObjectMeta): the topology annotations agree.
  const json::object* ann = md ? object_at(*md, "annotations") : nullptr;
  if (ann && ann->contains("service.kubernetes.io/topology-mode") &&
      ann->contains("service.kubernetes.io/topology-aware-hints")) {
    const std::string mode = string_at(*ann, "service.kubernetes.io/topology-mode");
    if (mode != string_at(*ann, "service.kubernetes.io/topology-aware-hints"))
      e.invalid("metadata.annotations[service.kubernetes.io/topology-mode]", q(mode),
                "must match annotations[service.kubernetes.io/topology-aware-hints] when both are specified");
  }

  if (ports.empty() && !is_headless && type != "ExternalName") e.required("spec.ports");
  if (type == "LoadBalancer") {
    for (std::size_t i = 0; i < ports.size(); ++i)
      if (int_or_zero(*ports[i], "port") == 10250)  // ports.KubeletPort
        e.invalid(fmt::format("spec.ports[{}]", i), "10250",
                  "may not expose port 10250 externally since it is used by kubelet");
    if (is_headless) e.invalid("spec.clusterIPs[0]", q("None"), "may not be set to 'None' for LoadBalancer services");
  } else if (type == "NodePort") {
    if (is_headless) e.invalid("spec.clusterIPs[0]", q("None"), "may not be set to 'None' for NodePort services");
  } else if (type == "ExternalName") {
    if (!strings_at(spec, "clusterIPs").empty())
      e.forbidden("spec.clusterIPs", "may not be set for ExternalName services");
    if (!strings_at(spec, "ipFamilies").empty())
      e.forbidden("spec.ipFamilies", "may not be set for ExternalName services");
    if (present(spec, "ipFamilyPolicy")) e.forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services");
    // The name (a CNAME) may end with a dot.
    std::string cname = string_at(spec, "externalName");
    if (cname.ends_with('.')) cname.pop_back();
    if (!cname.empty())
      e.invalid("spec.externalName", cname, dns1123_subdomain_errors(cname));  // ValidateDNS1123Subdomain
    else
      e.required("spec.externalName");
  }

  std::set<std::string> names;
  for (std::size_t i = 0; i < ports.size(); ++i)
    service_port(e, *ports[i], ports.size() > 1, names, fmt::format("spec.ports[{}]", i));

  // unversionedvalidation.ValidateLabels on the selector (Go walks the map in random order).
  if (const json::object* selector = object_at(spec, "selector"))
    for (const auto& [k, v] : *selector) {
      e.invalid("spec.selector", std::string(k), qualified_name_errors(k));  // ValidateLabelName
      const std::string value = v.is_string() ? std::string(v.as_string()) : std::string();
      e.invalid("spec.selector", value, label_value_errors(value));
    }

  const std::string affinity = string_at(spec, "sessionAffinity");
  if (affinity.empty())
    e.required("spec.sessionAffinity");
  else if (affinity != "ClientIP" && affinity != "None")
    e.not_supported("spec.sessionAffinity", affinity, {"ClientIP", "None"});
  if (affinity == "ClientIP")
    client_ip_affinity_config(e, spec);
  else if (affinity == "None" && present(spec, "sessionAffinityConfig"))
    e.forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None");

  // dualstack <-> ClusterIPs <-> ipfamilies
  cluster_ips_related_fields(e, spec);

  const auto external_ips = strings_at(spec, "externalIPs");
  for (std::size_t i = 0; i < external_ips.size(); ++i) {
    const std::string f = fmt::format("spec.externalIPs[{}]", i);
    if (!parse_ip(external_ips[i]))
      e.invalid(f, q(external_ips[i]), kNotAnIp);  // validation.IsValidIP
    else
      non_special_ip(e, f, external_ips[i]);
  }

  if (type.empty())
    e.required("spec.type");
  else if (type != "ClusterIP" && type != "ExternalName" && type != "LoadBalancer" && type != "NodePort")
    e.not_supported("spec.type", type, {"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"});

  if (type == "ClusterIP")
    for (std::size_t i = 0; i < ports.size(); ++i)
      if (int_or_zero(*ports[i], "nodePort") != 0)
        e.forbidden(fmt::format("spec.ports[{}].nodePort", i), "may not be used when `type` is 'ClusterIP'");

  // No node port twice for a protocol.
  std::set<std::pair<std::string, std::int64_t>> node_ports;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const std::int64_t np = int_or_zero(*ports[i], "nodePort");
    if (np == 0) continue;
    if (!node_ports.insert({string_at(*ports[i], "protocol"), np}).second)
      e.duplicate(fmt::format("spec.ports[{}].nodePort", i), std::to_string(np));
  }
  // No port twice for a protocol (the key shown as the core.ServicePort it is).
  std::set<std::pair<std::string, std::int64_t>> seen_ports;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const std::string protocol = string_at(*ports[i], "protocol");
    const std::int64_t port = int_or_zero(*ports[i], "port");
    if (!seen_ports.insert({protocol, port}).second)
      e.duplicate(fmt::format("spec.ports[{}]", i),
                  fmt::format("core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{}, "
                              "TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                              q(protocol), port));
  }

  // The load balancer's source ranges: the field (sic, its Go name in the path), else the annotation.
  if (const auto ranges = strings_at(spec, "loadBalancerSourceRanges"); !ranges.empty()) {
    if (type != "LoadBalancer") e.forbidden("spec.LoadBalancerSourceRanges", kOnlyLoadBalancer);
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      // (Space-padded values are allowed: the annotation's legacy.)
      const std::string value = trim_space(ranges[i]);
      if (!valid_cidr(value))  // validation.IsValidCIDR
        e.invalid(fmt::format("spec.LoadBalancerSourceRanges[{}]", i), q(value),
                  "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)");
    }
  } else if (ann && ann->contains("service.beta.kubernetes.io/load-balancer-source-ranges")) {
    const std::string f = "metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]";
    if (type != "LoadBalancer") e.forbidden(f, kOnlyLoadBalancer);
    const std::string val = trim_space(string_at(*ann, "service.beta.kubernetes.io/load-balancer-source-ranges"));
    if (!val.empty())
      for (std::size_t b = 0;;) {
        const std::size_t comma = val.find(',', b);
        const std::string value =
            trim_space(std::string_view(val).substr(b, comma == std::string::npos ? std::string::npos : comma - b));
        if (!valid_cidr(value))
          e.invalid(f, q(value), "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)");
        if (comma == std::string::npos) break;
        b = comma + 1;
      }
  }

  if (present(spec, "allocateLoadBalancerNodePorts") && type != "LoadBalancer")
    e.forbidden("spec.allocateLoadBalancerNodePorts", kOnlyLoadBalancer);
  if (type == "LoadBalancer" && !present(spec, "allocateLoadBalancerNodePorts"))
    e.required("allocateLoadBalancerNodePorts");  // (sic: no "spec.")

  // validateLoadBalancerClassField (a create: nothing to compare with).
  load_balancer_class(spec, type, e);

  // validateServiceExternalTrafficPolicy.
  const std::string etp = string_at(spec, "externalTrafficPolicy");
  if (!externally_accessible(spec)) {
    if (!etp.empty())
      e.invalid("spec.externalTrafficPolicy", q(etp), "may only be set for externally-accessible services");
  } else if (etp.empty()) {
    e.required("spec.externalTrafficPolicy");
  } else if (etp != "Cluster" && etp != "Local") {
    e.not_supported("spec.externalTrafficPolicy", etp, {"Cluster", "Local"});
  }
  const std::int64_t hc = int_or_zero(spec, "healthCheckNodePort");
  if (!needs_health_check(spec)) {
    if (hc != 0)
      e.invalid("spec.healthCheckNodePort", std::to_string(hc),
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'");
  } else if (hc == 0) {
    e.required("spec.healthCheckNodePort");
  } else if (hc < 1 || hc > 65535) {
    e.invalid("spec.healthCheckNodePort", std::to_string(hc), kPortRange);
  }

  // validateServiceInternalTrafficFieldsValue.
  if (!present(spec, "internalTrafficPolicy")) {
    if (type == "NodePort" || type == "LoadBalancer" || type == "ClusterIP") e.required("spec.internalTrafficPolicy");
  } else if (const std::string itp = string_at(spec, "internalTrafficPolicy"); itp != "Cluster" && itp != "Local") {
    e.not_supported("spec.internalTrafficPolicy", itp, {"Cluster", "Local"});
  }

  // validateServiceTrafficDistribution.
  if (present(spec, "trafficDistribution"))
    if (const std::string td = string_at(spec, "trafficDistribution"); td != "PreferClose")
      e.not_supported("spec.trafficDistribution", td, {"PreferClose"});
}

std::vector<std::string> service_warnings(const json::object& svc) {
  // GetWarningsForService.
  std::vector<std::string> out;
  const json::object* md = object_at(svc, "metadata");
  const json::object* ann = md ? object_at(*md, "annotations") : nullptr;
  if (ann && ann->contains("service.kubernetes.io/topology-aware-hints"))
    out.push_back(
        "annotation service.kubernetes.io/topology-aware-hints is deprecated, please use "
        "service.kubernetes.io/topology-mode instead");
  const json::object* spec_p = object_at(svc, "spec");
  const json::object& spec = spec_p ? *spec_p : kNone;
  // getWarningsForIP / getWarningsForCIDR: what net/netip refuses or would write otherwise.
  auto ip_warning = [&](const std::string& f, const std::string& s) {
    std::string err;
    const auto a = ip::netip_parse_addr(s, err);
    if (!a)
      out.push_back(f + ": IP address was accepted, but will be invalid in a future Kubernetes release: " + err);
    else if (!a->is4 && ip::netip_string(*a) != s)
      out.push_back(
          fmt::format("{}: IPv6 address {} is not in RFC 5952 canonical format ({}), which may cause "
                      "controller apply-loops",
                      f, go_quote(s), go_quote(ip::netip_string(*a))));
  };
  if (const std::string cip = string_at(spec, "clusterIP"); !cip.empty() && cip != "None") {  // IsServiceIPSet
    const auto ips = strings_at(spec, "clusterIPs");
    for (std::size_t i = 0; i < ips.size(); ++i) ip_warning(fmt::format("spec.clusterIPs[{}]", i), ips[i]);
  }
  const auto external = strings_at(spec, "externalIPs");
  for (std::size_t i = 0; i < external.size(); ++i) ip_warning(fmt::format("spec.externalIPs[{}]", i), external[i]);
  if (const std::string lb = string_at(spec, "loadBalancerIP"); !lb.empty()) ip_warning("spec.loadBalancerIP", lb);
  const auto ranges = strings_at(spec, "loadBalancerSourceRanges");
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const std::string f = fmt::format("spec.loadBalancerSourceRanges[{}]", i);
    std::string err;
    const auto p = ip::netip_parse_prefix(ranges[i], err);
    if (!p) {
      out.push_back(f + ": IP prefix was accepted, but will be invalid in a future Kubernetes release: " + err);
    } else if (!p->addr.is4) {
      const std::string canonical = ip::netip_string(p->addr) + "/" + std::to_string(p->bits);
      if (canonical != ranges[i])
        out.push_back(
            fmt::format("{}: IPv6 prefix {} is not in RFC 5952 canonical format ({}), which may cause "
                        "controller apply-loops",
                        f, go_quote(ranges[i]), go_quote(canonical)));
    }
  }
  const std::string type = string_at(spec, "type");
  if (type == "ExternalName" && !strings_at(spec, "externalIPs").empty())
    out.push_back("spec.externalIPs is ignored when spec.type is \"ExternalName\"");
  if (type != "ExternalName" && !string_at(spec, "externalName").empty())
    out.push_back("spec.externalName is ignored when spec.type is not \"ExternalName\"");
  return out;
}

}  // namespace gpupool::embedded
