// Service account tokens on the cluster's clock (the oracle's answers are in the fidelity scenario
// `tokens`): what the authenticator accepts and refuses, and that a token is not a secret that
// can be reworded — any change to it is refused.
#include <doctest/doctest.h>

#include <chrono>

#include "embedded/service_account_tokens.hpp"
#include "embedded/store.hpp"
#include "embedded/tls.hpp"

using namespace gpupool::embedded;
namespace json = boost::json;

namespace {

struct Fixture {
  Clock clock = Clock::manual();
  Store store{clock};
  CertificateAuthority ca;
  ServiceAccountTokens tokens{store, ca.key_pem()};
  Fixture() {
    store.create(store.type("", "namespaces"), "", json::object{{"metadata", json::object{{"name", "ns"}}}});
    store.create(store.type("", "serviceaccounts"), "ns", json::object{{"metadata", json::object{{"name", "sa"}}}});
  }
  std::string token(json::object spec = {}) {
    return std::string(tokens.request("ns", "sa", json::object{{"spec", std::move(spec)}}, clock.now())
                           .at("status")
                           .at("token")
                           .as_string());
  }
};

}  // namespace

TEST_CASE("service account tokens: the account's identity while valid, for this server, of the same account") {
  Fixture f;
  const std::string t = f.token();
  const auto id = f.tokens.authenticate(t, f.clock.now());
  REQUIRE(id);
  CHECK(id->user == "system:serviceaccount:ns:sa");
  CHECK(id->groups ==
        std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"});
  CHECK(id->uid == f.store.get(f.store.type("", "serviceaccounts"), "ns", "sa").at("metadata").at("uid").as_string());
  CHECK(id->credential_id.rfind("JTI=", 0) == 0);
  // Expired (an hour, and the validator's minute of leeway), another audience, a changed byte.
  CHECK_FALSE(f.tokens.authenticate(t, f.clock.now() + std::chrono::seconds(3600 + 61)));
  CHECK(f.tokens.authenticate(t, f.clock.now() + std::chrono::seconds(3600 + 59)));
  CHECK_FALSE(f.tokens.authenticate(f.token(json::object{{"audiences", json::array{"x"}}}), f.clock.now()));
  std::string tampered = t;
  tampered[t.find('.') + 5] = tampered[t.find('.') + 5] == 'A' ? 'B' : 'A';
  CHECK_FALSE(f.tokens.authenticate(tampered, f.clock.now()));
  CHECK_FALSE(f.tokens.authenticate("not-a-jwt", f.clock.now()));
  // Another server's key does not sign for this one.
  CertificateAuthority other;
  ServiceAccountTokens elsewhere{f.store, other.key_pem()};
  CHECK_FALSE(elsewhere.authenticate(t, f.clock.now()));
  // The account deleted and made again: another uid, the old token refused.
  f.store.remove(f.store.type("", "serviceaccounts"), "ns", "sa");
  CHECK_FALSE(f.tokens.authenticate(t, f.clock.now()));
  f.store.create(f.store.type("", "serviceaccounts"), "ns", json::object{{"metadata", json::object{{"name", "sa"}}}});
  CHECK_FALSE(f.tokens.authenticate(t, f.clock.now()));
  CHECK(f.tokens.authenticate(f.token(), f.clock.now()));
}

TEST_CASE("service account tokens: requests refused as kube-apiserver refuses them") {
  Fixture f;
  auto refused = [&](const std::string& name, json::object body) {
    try {
      f.tokens.request("ns", name, body, f.clock.now());
    } catch (const StatusError& e) {
      return std::to_string(e.code()) + " " + e.status_message();
    }
    return std::string("accepted");
  };
  CHECK(refused("nope", {}) == "404 serviceaccounts \"nope\" not found");
  CHECK(refused("sa", {{"spec", json::object{{"expirationSeconds", 599}}}}) ==
        "422 TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not "
        "specify a duration less than 10 minutes");
  CHECK(refused("sa",
                {{"spec", json::object{{"boundObjectRef",
                                        json::object{{"kind", "ConfigMap"}, {"apiVersion", "v1"}, {"name", "c"}}}}}}) ==
        "400 cannot bind token to object of type /v1, Kind=ConfigMap");
  CHECK(refused("sa", {{"metadata", json::object{{"name", "other"}}}}) ==
        "422 TokenRequest.authentication.k8s.io \"sa\" is invalid: metadata.name: Invalid value: \"other\": must "
        "match the service account name if specified");
}
