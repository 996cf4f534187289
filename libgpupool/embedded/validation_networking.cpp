// embedded/validation_networking.cpp — see validation_networking.hpp. Each rule cites the Go
// function of pkg/apis/networking/validation/validation.go (v1.32) it follows; the messages are
// field.ErrorList's (validation_fields.hpp).
#include "embedded/validation_networking.hpp"

#include <fmt/format.h>

#include <optional>
#include <string_view>

#include "embedded/ip_parse.hpp"
#include "embedded/validation.hpp"
#include "embedded/validation_fields.hpp"
#include "embedded/validation_kinds.hpp"
#include "gpupool/names.hpp"

namespace gpupool::embedded {

namespace {

using namespace fields;
namespace json = boost::json;

bool is(const ResourceType& t, std::string_view resource) {
  return t.group == "networking.k8s.io" && t.resource == resource;
}

json::object& object_in(json::object& o, std::string_view key) {
  auto& v = o[key];
  if (!v.is_object()) v = json::object{};
  return v.as_object();
}

// A string field that JSON set (a Go *string that is not nil).
std::optional<std::string> string_ptr(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  return v->is_string() ? std::string(v->as_string()) : std::string();
}

// ---- NetworkPolicy ----------------------------------------------------------------------------

// ValidateNetworkPolicyPort.
void network_policy_port(Errors& e, const json::object& port, const std::string& f) {
  if (const auto proto = string_ptr(port, "protocol"); proto && *proto != "TCP" && *proto != "UDP" && *proto != "SCTP")
    e.not_supported(f + ".protocol", *proto, {"TCP", "UDP", "SCTP"});
  const auto end = int_at(port, "endPort");
  if (const json::value* pv = port.if_contains("port"); pv && !pv->is_null()) {
    const GoIntOrString p(*pv);
    if (!p.is_string) {
      if (p.int_val < 1 || p.int_val > 65535) e.invalid(f + ".port", std::to_string(p.int_val), kPortRange);
      if (end) {
        if (*end < p.int_val)  // (sic: the message shows the port)
          e.invalid(f + ".endPort", std::to_string(p.int_val), "must be greater than or equal to `port`");
        if (*end < 1 || *end > 65535) e.invalid(f + ".endPort", std::to_string(*end), kPortRange);
      }
    } else {
      if (end) e.invalid(f + ".endPort", std::to_string(*end), "may not be specified when `port` is non-numeric");
      e.invalid(f + ".port", p.str_val, port_name_errors(p.str_val));
    }
  } else if (end) {
    e.invalid(f + ".endPort", std::to_string(*end), "may not be specified when `port` is not specified");
  }
}

// net.IPNet.Contains(ip) for ParseCIDRSloppy's results: an IPv4 network holds IPv4 addresses only
// (IPv4-mapped IPv6 ones included: To4), an IPv6 one the others; then the network's prefix bits.
bool cidr_contains(const ip::Cidr& net, const ip::Ip& addr) {
  const bool v4 = ip::is_v4(addr);
  if (net.v4_syntax != v4) return false;
  const std::size_t first = net.v4_syntax ? 12 : 0;
  int bits = net.bits;
  for (std::size_t i = first; i < 16 && bits > 0; ++i, bits -= 8) {
    const unsigned mask = bits >= 8 ? 0xffu : (0xffu << (8 - bits)) & 0xffu;
    if ((net.ip[i] & mask) != (addr[i] & mask)) return false;
  }
  return true;
}

// ValidateIPBlock.
void ip_block(Errors& e, const json::object& block, const std::string& f) {
  const std::string cidr = string_at(block, "cidr");
  if (cidr.empty()) return e.required(f + ".cidr");
  static constexpr std::string_view kCidr = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
  const auto net = ip::parse_cidr(cidr);  // IsValidCIDR, then ParseCIDRSloppy
  if (!net) return e.invalid(f + ".cidr", q(cidr), kCidr);
  const auto except = strings_at(block, "except");
  for (std::size_t i = 0; i < except.size(); ++i) {
    const std::string ef = fmt::format("{}.except[{}]", f, i);
    const auto ex = ip::parse_cidr(except[i]);
    if (!ex) {
      e.invalid(ef, q(except[i]), kCidr);
      continue;
    }
    // The net's mask size is its prefix length (Mask.Size), as is the exception's.
    if (!cidr_contains(*net, ex->ip) || net->bits >= ex->bits)
      e.invalid(ef, q(except[i]), "must be a strict subset of `cidr`");
  }
}

// ValidateNetworkPolicyPeer.
void network_policy_peer(Errors& e, const json::object& peer, const std::string& f, bool allow_invalid_values) {
  int peers = 0;
  for (const char* k : {"podSelector", "namespaceSelector"})
    if (present(peer, k)) {
      ++peers;
      validate_label_selector(object_at(peer, k) ? *object_at(peer, k) : kNone, f + "." + k, e.out,
                              allow_invalid_values);
    }
  const bool has_block = present(peer, "ipBlock");
  if (has_block) {
    ++peers;
    ip_block(e, object_at(peer, "ipBlock") ? *object_at(peer, "ipBlock") : kNone, f + ".ipBlock");
  }
  if (peers == 0)
    e.required(f, "must specify a peer");
  else if (peers > 1 && has_block)
    e.forbidden(f, "may not specify both ipBlock and another peer");
}

// ValidateNetworkPolicySpec.
void network_policy_spec(Errors& e, const json::object& spec, bool allow_invalid_values) {
  validate_label_selector(object_at(spec, "podSelector") ? *object_at(spec, "podSelector") : kNone, "spec.podSelector",
                          e.out, allow_invalid_values);
  for (const auto& [list, peers_key] : {std::pair{"ingress", "from"}, std::pair{"egress", "to"}}) {
    const auto rules = items(spec, list);
    for (std::size_t i = 0; i < rules.size(); ++i) {
      const std::string rf = fmt::format("spec.{}[{}]", list, i);
      const auto ports = items(*rules[i], "ports");
      for (std::size_t j = 0; j < ports.size(); ++j)
        network_policy_port(e, *ports[j], fmt::format("{}.ports[{}]", rf, j));
      const auto peers = items(*rules[i], peers_key);
      for (std::size_t j = 0; j < peers.size(); ++j)
        network_policy_peer(e, *peers[j], fmt::format("{}.{}[{}]", rf, peers_key, j), allow_invalid_values);
    }
  }
  const auto types = strings_at(spec, "policyTypes");
  if (types.size() > 2)  // (the slice given by pointer: %#v of the slice)
    return e.invalid("spec.policyTypes", go_string_slice("networking.PolicyType", array_at(spec, "policyTypes")),
                     "may not specify more than two policyTypes");
  for (std::size_t i = 0; i < types.size(); ++i)
    if (types[i] != "Ingress" && types[i] != "Egress")
      e.not_supported(fmt::format("spec.policyTypes[{}]", i), types[i], {"Ingress", "Egress"});
}

// ---- Ingress ----------------------------------------------------------------------------------

struct IngressOptions {
  bool allow_invalid_secret_name = false;
  bool allow_invalid_wildcard_host_rule = false;
};

void dns_subdomain(Errors& e, const std::string& f, const std::string& value) {
  e.invalid(f, value, dns1123_subdomain_errors(value));
}

// validateIngressTypedLocalObjectReference (an IngressClass's parameters too).
void typed_local_object_reference(Errors& e, const json::object& ref, const std::string& f) {
  if (const auto group = string_ptr(ref, "apiGroup")) dns_subdomain(e, f + ".apiGroup", *group);
  for (const char* k : {"kind", "name"}) {
    const std::string v = string_at(ref, k);
    if (v.empty())
      e.required(f + "." + k, fmt::format("{} is required", k));
    else
      e.invalid(f + "." + k, v, path_segment_errors(v));
  }
}

// validateIngressBackend.
void ingress_backend(Errors& e, const json::object& backend, const std::string& f) {
  const bool resource = present(backend, "resource"), service = present(backend, "service");
  if (resource && service) return e.invalid(f, q(""), "cannot set both resource and service backends");
  if (resource) return typed_local_object_reference(e, *object_at(backend, "resource"), f + ".resource");
  if (!service) return e.invalid(f, q(""), "resource or service backend is required");
  const json::object& svc = object_at(backend, "service") ? *object_at(backend, "service") : kNone;
  const std::string name = string_at(svc, "name");
  if (name.empty())
    e.required(f + ".service.name");
  else
    e.invalid(f + ".service.name", name, dns1035_label_errors(name));  // ValidateServiceName
  const json::object& port = object_at(svc, "port") ? *object_at(svc, "port") : kNone;
  const std::string port_name = string_at(port, "name");
  const std::int64_t number = int_at(port, "number").value_or(0);
  if (!port_name.empty() && number != 0)
    e.invalid(f, q(""), "cannot set both port name & port number");
  else if (!port_name.empty())
    e.invalid(f + ".service.port.name", port_name, port_name_errors(port_name));
  else if (number != 0) {
    if (number < 1 || number > 65535) e.invalid(f + ".service.port.number", std::to_string(number), kPortRange);
  } else {
    e.required(f, "port name or number is required");
  }
}

// validateHTTPIngressPath.
void http_ingress_path(Errors& e, const json::object& path, const std::string& f) {
  const auto type = string_ptr(path, "pathType");
  if (!type) return e.required(f + ".pathType", "pathType must be specified");
  const std::string p = string_at(path, "path");
  const bool absolute = p.substr(0, 1) == "/";
  if (*type == "Exact" || *type == "Prefix") {
    if (!absolute) e.invalid(f + ".path", q(p), "must be an absolute path");
    if (!p.empty()) {
      for (const char* seq : {"//", "/./", "/../", "%2f", "%2F"})
        if (p.find(seq) != std::string::npos) e.invalid(f + ".path", q(p), fmt::format("must not contain '{}'", seq));
      for (std::string_view suffix : {"/..", "/."})
        if (p.size() >= suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0)
          e.invalid(f + ".path", q(p), fmt::format("cannot end with '{}'", suffix));
    }
  } else if (*type == "ImplementationSpecific") {
    if (!p.empty() && !absolute) e.invalid(f + ".path", q(p), "must be an absolute path");
  } else {
    e.not_supported(f + ".pathType", *type, {"Exact", "ImplementationSpecific", "Prefix"});  // sets.List: sorted
  }
  ingress_backend(e, object_at(path, "backend") ? *object_at(path, "backend") : kNone, f + ".backend");
}

// validateIngressRuleValue: an http rule's paths (none: required).
void ingress_rule_value(Errors& e, const json::object& rule, const std::string& f) {
  const json::object* http = object_at(rule, "http");
  if (!http) return;
  const auto paths = items(*http, "paths");
  if (paths.empty()) e.required(f + ".http.paths");
  for (std::size_t i = 0; i < paths.size(); ++i)
    http_ingress_path(e, *paths[i], fmt::format("{}.http.paths[{}]", f, i));
}

bool is_ip(const std::string& host) { return ip::parse_ip(host).has_value(); }  // ParseIPSloppy != nil

// validateIngressRules (called with at least one rule).
void ingress_rules(Errors& e, const std::vector<const json::object*>& rules, const IngressOptions& o) {
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const std::string f = fmt::format("spec.rules[{}]", i);
    const std::string host = string_at(*rules[i], "host");
    bool wildcard = false;
    if (!host.empty()) {
      if (is_ip(host)) e.invalid(f + ".host", q(host), "must be a DNS name, not an IP address");
      if (host.find('*') != std::string::npos) {
        e.invalid(f + ".host", host, wildcard_dns1123_subdomain_errors(host));
        wildcard = true;
      } else {
        dns_subdomain(e, f + ".host", host);
      }
    }
    if (!wildcard || !o.allow_invalid_wildcard_host_rule) ingress_rule_value(e, *rules[i], f);
  }
}

// validateTLSSecretName: none given is fine, else ValidateSecretName (a DNS subdomain).
std::vector<std::string> tls_secret_name_errors(const std::string& name) {
  return name.empty() ? std::vector<std::string>{} : dns1123_subdomain_errors(name);
}

// validateIngressTLS.
void ingress_tls(Errors& e, const std::vector<const json::object*>& tls, const IngressOptions& o) {
  for (std::size_t i = 0; i < tls.size(); ++i) {
    const auto hosts = strings_at(*tls[i], "hosts");
    for (std::size_t j = 0; j < hosts.size(); ++j) {
      const std::string f = fmt::format("spec.tls[{}].hosts[{}]", i, j);
      if (hosts[j].find('*') != std::string::npos)
        e.invalid(f, hosts[j], wildcard_dns1123_subdomain_errors(hosts[j]));
      else
        dns_subdomain(e, f, hosts[j]);
    }
    if (!o.allow_invalid_secret_name) {
      const std::string secret = string_at(*tls[i], "secretName");
      e.invalid(fmt::format("spec.tls[{}].secretName", i), secret, tls_secret_name_errors(secret));
    }
  }
}

// ValidateIngressSpec.
void ingress_spec(Errors& e, const json::object& spec, const IngressOptions& o) {
  const auto rules = items(spec, "rules");
  const bool has_default = present(spec, "defaultBackend");
  if (rules.empty() && !has_default) {
    // %#v of the []networking.IngressRule: nil when absent, else empty.
    const std::string shown = present(spec, "rules") ? "[]networking.IngressRule{}" : "[]networking.IngressRule(nil)";
    e.invalid("spec", shown, "either `defaultBackend` or `rules` must be specified");
  }
  if (has_default)
    ingress_backend(e, object_at(spec, "defaultBackend") ? *object_at(spec, "defaultBackend") : kNone,
                    "spec.defaultBackend");
  if (!rules.empty()) ingress_rules(e, rules, o);
  if (const auto tls = items(spec, "tls"); !tls.empty()) ingress_tls(e, tls, o);
  if (const auto cls = string_ptr(spec, "ingressClassName")) dns_subdomain(e, "spec.ingressClassName", *cls);
}

// ValidateIngressUpdate's options from the stored Ingress: an invalid secret name or wildcard rule
// that is already stored may stay.
IngressOptions ingress_options(const json::object* old) {
  IngressOptions o;
  const json::object* spec = old ? object_at(*old, "spec") : nullptr;
  if (!spec) return o;
  for (const json::object* tls : items(*spec, "tls"))
    if (!tls_secret_name_errors(string_at(*tls, "secretName")).empty()) o.allow_invalid_secret_name = true;
  for (const json::object* rule : items(*spec, "rules")) {
    if (string_at(*rule, "host").find('*') == std::string::npos) continue;
    Causes scratch;
    Errors se{scratch};
    ingress_rule_value(se, *rule, "");
    if (!scratch.empty()) o.allow_invalid_wildcard_host_rule = true;
  }
  return o;
}

constexpr std::string_view kIngressClassAnnotation = "kubernetes.io/ingress.class";

std::optional<std::string> ingress_class_annotation(const json::object& ingress) {
  const json::object* md = object_at(ingress, "metadata");
  const json::object* ann = md ? object_at(*md, "annotations") : nullptr;
  if (!ann || !ann->contains(kIngressClassAnnotation)) return std::nullopt;
  return string_at(*ann, kIngressClassAnnotation);
}

// ---- IngressClass -----------------------------------------------------------------------------

// validateIngressClassParametersReference.
void ingress_class_parameters(Errors& e, const json::object& params) {
  const std::string f = "spec.parameters";
  typed_local_object_reference(e, params, f);
  const auto scope = string_ptr(params, "scope");
  if (!scope) return e.required(f + ".scope");
  if (*scope != "Cluster" && *scope != "Namespace")
    return e.not_supported(f + ".scope", *scope, {"Cluster", "Namespace"});
  const auto ns = string_ptr(params, "namespace");
  if (*scope == "Namespace") {
    if (!ns)
      e.required(f + ".namespace", "`parameters.scope` is set to 'Namespace'");
    else
      e.invalid(f + ".namespace", *ns, dns1123_label_errors(*ns));  // ValidateNamespaceName
  }
  if (*scope == "Cluster" && ns) e.forbidden(f + ".namespace", "`parameters.scope` is set to 'Cluster'");
}

// validateIngressClassSpec.
void ingress_class_spec(Errors& e, const json::object& spec) {
  const std::string controller = string_at(spec, "controller");
  if (controller.size() > 250)  // maxLenIngressClassController
    e.out.push_back({"FieldValueTooLong", "Too long: may not be more than 250 bytes", "spec.controller"});
  domain_prefixed_path("spec.controller", controller, e.out);
  if (const json::object* params = object_at(spec, "parameters")) ingress_class_parameters(e, *params);
}

}  // namespace

bool is_networking_kind(const ResourceType& t) {
  return is(t, "networkpolicies") || is(t, "ingresses") || is(t, "ingressclasses");
}

void default_networking(const ResourceType& t, json::object& obj) {
  if (is(t, "networkpolicies")) {
    json::object& spec = object_in(obj, "spec");
    const json::array* types = array_at(spec, "policyTypes");
    if (!types || types->empty()) {
      json::array dflt{"Ingress"};
      if (const json::array* egress = array_at(spec, "egress"); egress && !egress->empty()) dflt.emplace_back("Egress");
      spec["policyTypes"] = std::move(dflt);
    }
    for (const char* list : {"ingress", "egress"})
      if (json::value* rules = spec.if_contains(list); rules && rules->is_array())
        for (json::value& rule : rules->as_array())
          if (json::value* ports = rule.is_object() ? rule.as_object().if_contains("ports") : nullptr;
              ports && ports->is_array())
            for (json::value& port : ports->as_array())
              if (port.is_object() && !present(port.as_object(), "protocol")) port.as_object()["protocol"] = "TCP";
  } else if (is(t, "ingressclasses")) {
    if (json::value* spec = obj.if_contains("spec"); spec && spec->is_object())
      if (json::value* params = spec->as_object().if_contains("parameters"); params && params->is_object())
        if (!present(params->as_object(), "scope")) params->as_object()["scope"] = "Cluster";
  }
}

void networking_causes(const ResourceType& t, const json::object& obj, const json::object* old, Causes& causes) {
  Errors e{causes};
  const json::object& spec = object_at(obj, "spec") ? *object_at(obj, "spec") : kNone;
  if (is(t, "networkpolicies")) {
    // ValidationOptionsForNetworking: an update whose stored podSelector is invalid lets the
    // selectors' values be anything.
    bool allow_invalid_values = false;
    if (old) {
      Causes scratch;
      const json::object* old_spec = object_at(*old, "spec");
      const json::object* sel = old_spec ? object_at(*old_spec, "podSelector") : nullptr;
      validate_label_selector(sel ? *sel : kNone, "", scratch);
      allow_invalid_values = !scratch.empty();
    }
    network_policy_spec(e, spec, allow_invalid_values);
  } else if (is(t, "ingresses")) {
    ingress_spec(e, spec, ingress_options(old));
    // ValidateIngressCreate: the annotation and ingressClassName, when both are given, agree.
    if (!old)
      if (const auto cls = string_ptr(spec, "ingressClassName"))
        if (const auto ann = ingress_class_annotation(obj); ann && *ann != *cls)
          e.invalid(fmt::format("annotations.{}", kIngressClassAnnotation), q(*ann),
                    "must match `ingressClassName` when both are specified");
  } else if (is(t, "ingressclasses")) {
    ingress_class_spec(e, spec);
  }
}

void ingress_status_causes(const json::object& ingress, Causes& causes) {
  load_balancer_ingress_causes(ingress, false, causes);  // ValidateIngressLoadBalancerStatus
}

std::vector<std::string> ingress_warnings(const json::object& ingress) {
  const json::object* spec = object_at(ingress, "spec");
  if (ingress_class_annotation(ingress) && !(spec && string_ptr(*spec, "ingressClassName")))
    return {fmt::format("annotation \"{}\" is deprecated, please use 'spec.ingressClassName' instead",
                        kIngressClassAnnotation)};
  return {};
}

}  // namespace gpupool::embedded
