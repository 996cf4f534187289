// A Service's validation (embedded/validation_service.cpp): the causes, in order, and the
// allocator's refusals that come alone before them. Every expected answer was recorded from
// kube-apiserver v1.32.13 (the oracle).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "api_fixture.hpp"
#include "embedded/api.hpp"

using namespace gpupool;
using namespace gpupool::embedded;
namespace json = boost::json;

namespace {

struct ServiceFixture : testing::ApiFixture {
  Response create(const std::string& name, const std::string& spec, bool dry_run = true) {
    return call("POST", std::string("/api/v1/namespaces/default/services") + (dry_run ? "?dryRun=All" : ""),
                R"({"apiVersion":"v1","kind":"Service","metadata":{"name":")" + name + R"("},"spec":)" + spec + "}");
  }
};

// The causes of a Status, each "field: message".
std::vector<std::string> causes_of(const Response& r) {
  std::vector<std::string> out;
  const auto s = json::parse(r.body).as_object();
  if (const auto* d = s.if_contains("details"))
    if (const auto* cs = d->as_object().if_contains("causes"))
      for (const auto& c : cs->as_array())
        out.push_back(std::string(c.at("field").as_string()) + ": " + std::string(c.at("message").as_string()));
  return out;
}

json::object spec_of(const Response& r) { return json::parse(r.body).as_object().at("spec").as_object(); }

const std::string kQualified =
    "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
    "'example.com/MyName')";
const std::string kNamePart =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const std::string kLabelValue =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

}  // namespace

TEST_CASE("ValidateService: ports, selector, affinity, type and duplicate ports, in Go's order") {
  ServiceFixture f;
  const auto r = f.create("bad", R"({"selector":{"bad key/x/y":"a b"},"sessionAffinity":"Sticky","type":"Fancy",
      "ports":[{"name":"web","port":80,"protocol":"tcp","targetPort":"http--x"},
               {"name":"web","port":0,"targetPort":70000,"appProtocol":"-h"},{"targetPort":"x"}]})");
  CHECK(r.status == 422);
  const std::vector<std::string> want = {
      R"(spec.ports[0].protocol: Unsupported value: "tcp": supported values: "SCTP", "TCP", "UDP")",
      R"(spec.ports[0].targetPort: Invalid value: "http--x": must not contain consecutive hyphens)",
      R"(spec.ports[1].name: Duplicate value: "web")",
      "spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
      "spec.ports[1].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
      R"(spec.ports[1].appProtocol: Invalid value: "-h": )" + kNamePart,
      "spec.ports[2].name: Required value",
      "spec.ports[2].port: Invalid value: 0: must be between 1 and 65535, inclusive",
      R"(spec.selector: Invalid value: "bad key/x/y": )" + kQualified,
      R"(spec.selector: Invalid value: "a b": )" + kLabelValue,
      R"(spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None")",
      R"(spec.type: Unsupported value: "Fancy": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort")",
      R"(spec.ports[2]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), Port:0, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0})",
  };
  CHECK(causes_of(r) == want);
}

TEST_CASE("ValidateService: a zero targetPort is the port; a null port is a zero ServicePort") {
  ServiceFixture f;
  // SetDefaults_Service: targetPort 0 or "" is the port.
  auto ok =
      f.create("zero", R"({"ports":[{"name":"a","port":80,"targetPort":0},{"name":"b","port":81,"targetPort":""}]})");
  REQUIRE(ok.status == 201);
  const auto ports = spec_of(ok).at("ports").as_array();
  CHECK(ports[0].at("targetPort").as_int64() == 80);
  CHECK(ports[1].at("targetPort").as_int64() == 81);
  const auto r = f.create("null", R"({"ports":[null]})");
  CHECK(r.status == 422);
  CHECK(causes_of(r) ==
        std::vector<std::string>{"spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                                 "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive"});
}

TEST_CASE("ValidateService: ExternalName, LoadBalancer and traffic policy rules") {
  ServiceFixture f;
  auto r = f.create("ext", R"({"type":"ExternalName","externalName":"Not_A.Host.","ipFamilyPolicy":"SingleStack",
      "clusterIP":"10.0.0.5","ports":[{"port":80,"nodePort":30080}]})");
  CHECK(r.status == 422);
  CHECK(
      causes_of(r) ==
      std::vector<std::string>{
          "spec.clusterIPs: Forbidden: may not be set for ExternalName services",
          "spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services",
          R"(spec.externalName: Invalid value: "Not_A.Host": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'))"});
  r = f.create("cip", R"({"type":"ClusterIP","externalTrafficPolicy":"Local","healthCheckNodePort":5,
      "loadBalancerClass":"x","allocateLoadBalancerNodePorts":true,"loadBalancerSourceRanges":["1.2.3.0/24"],
      "ports":[{"port":80,"nodePort":30000}]})");
  CHECK(r.status == 422);
  CHECK(causes_of(r) ==
        std::vector<std::string>{
            "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
            "spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'",
            "spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'",
            "spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'",
            R"(spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services)",
            "spec.healthCheckNodePort: Invalid value: 5: may only be set when `type` is 'LoadBalancer' and "
            "`externalTrafficPolicy` is 'Local'"});
  r = f.create("ips", R"({"externalIPs":["0.0.0.0","x","fe80::1"],"internalTrafficPolicy":"",
      "trafficDistribution":"Far","ports":[{"port":80}]})");
  CHECK(
      causes_of(r) ==
      std::vector<std::string>{
          R"(spec.externalIPs[0]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0))",
          R"(spec.externalIPs[1]: Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff))",
          R"(spec.externalIPs[2]: Invalid value: "fe80::1": may not be in the link-local range (169.254.0.0/16, fe80::/10))",
          R"(spec.internalTrafficPolicy: Unsupported value: "": supported values: "Cluster", "Local")",
          R"(spec.trafficDistribution: Unsupported value: "Far": supported values: "PreferClose")"});
}

TEST_CASE("the service allocator refuses before validation, its causes alone") {
  ServiceFixture f;
  // Out of the node port range (a dry run's allocator checks no range, only ports it holds).
  const std::string spec =
      R"({"type":"NodePort","ports":[{"name":"Bad","port":80,"nodePort":80},{"port":81,"nodePort":80}]})";
  auto r = f.create("np", spec, false);
  CHECK(r.status == 422);
  CHECK(causes_of(r) ==
        std::vector<std::string>{"spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. "
                                 "The range of valid ports is 30000-32767"});
  r = f.create("np", spec);
  CHECK(causes_of(r) ==
        std::vector<std::string>{"spec.ports[1].nodePort: Invalid value: 80: provided port is already allocated"});
  // The IP family fields (initIPFamilyFields on a single-stack IPv4 cluster).
  r = f.create("v6", R"({"clusterIP":"fd00::1","ports":[{"port":80}]})");
  CHECK(causes_of(r) ==
        std::vector<std::string>{
            R"(spec.clusterIPs[0]: Invalid value: []string{"fd00::1"}: IPv6 is not configured on this cluster)"});
  r = f.create("dual", R"({"ipFamilyPolicy":"RequireDualStack","ports":[{"port":80}]})");
  CHECK(
      causes_of(r) ==
      std::vector<std::string>{
          R"(spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services)"});
  // Headless and selectorless: RequireDualStack with both families.
  const auto ok = f.create("headless", R"({"clusterIP":"None"})");
  REQUIRE(ok.status == 201);
  CHECK(spec_of(ok).at("ipFamilyPolicy") == "RequireDualStack");
  CHECK(spec_of(ok).at("ipFamilies") == json::array{"IPv4", "IPv6"});
}

TEST_CASE("ValidateServiceUpdate: cluster IPs kept; a type change drops what the new type does not use") {
  ServiceFixture f;
  REQUIRE(f.create("s", R"({"selector":{"app":"x"},"ports":[{"name":"a","port":80}]})", false).status == 201);
  const auto patch = [&](const std::string& body) {
    return f.call("PATCH", "/api/v1/namespaces/default/services/s?dryRun=All", body, "application/merge-patch+json");
  };
  auto r = patch(R"({"spec":{"clusterIP":"10.0.0.99"}})");
  CHECK(r.status == 422);
  CHECK(causes_of(r) == std::vector<std::string>{
                            R"(spec.clusterIPs[0]: Invalid value: []string{"10.0.0.99"}: may not change once set)"});
  r = patch(R"({"spec":{"type":"ExternalName","externalName":"x.com"}})");
  REQUIRE(r.status == 200);
  const auto spec = spec_of(r);
  for (const char* gone : {"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"})
    CHECK_MESSAGE(!spec.contains(gone), gone);
  r = patch(R"({"spec":{"type":"LoadBalancer","externalTrafficPolicy":"Local"}})");
  REQUIRE(r.status == 200);
  // A dry run's node ports are its PortAllocationOperation's dummies: 32769, then the health check's.
  CHECK(spec_of(r).at("ports").as_array()[0].at("nodePort").as_int64() == 32769);
  CHECK(spec_of(r).at("healthCheckNodePort").as_int64() == 32770);
  CHECK(spec_of(r).at("allocateLoadBalancerNodePorts") == true);
}
