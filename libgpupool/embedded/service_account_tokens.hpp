// embedded/service_account_tokens.hpp — service account tokens, as kube-apiserver issues and
// accepts them: serviceaccounts/NAME/token (TokenRequest, pkg/registry/core/serviceaccount/storage/
// token.go; what `kubectl create token` posts) answers a JWT signed with the cluster's key (ES256:
// the embedded CA's P-256 key; kube-apiserver's --service-account-signing-key-file), and the
// service account authenticator (pkg/serviceaccount/jwt.go, claims.go) turns such a bearer token
// back into its account: user system:serviceaccount:NS:NAME with the account's uid, groups
// system:serviceaccounts and system:serviceaccounts:NS, and the token's jti as its credential id —
// while the token is unexpired, meant for this API server (its audience) and the account is the
// same one (its uid).
#pragma once

#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "embedded/http_server.hpp"

namespace gpupool::embedded {

class Store;

class ServiceAccountTokens {
 public:
  /// `signing_key_pem`: the P-256 private key tokens are signed with (the cluster CA's).
  ServiceAccountTokens(Store& store, const std::string& signing_key_pem);
  ~ServiceAccountTokens();
  ServiceAccountTokens(const ServiceAccountTokens&) = delete;
  ServiceAccountTokens& operator=(const ServiceAccountTokens&) = delete;

  /// The issuer and the API server's audience (kube-apiserver --service-account-issuer; its
  /// --api-audiences default to the issuer).
  static constexpr std::string_view kIssuer = "https://kubernetes.default.svc.cluster.local";
  /// WarnOnlyBoundTokenExpirationSeconds (pkg/serviceaccount/claims.go): the lifetime the
  /// ServiceAccount plugin's projected token asks for; a pod-bound token of it lives a year.
  static constexpr std::int64_t kWarnOnlyExpiration = 60 * 60 + 7;

  /// POST serviceaccounts/NAME/token: the TokenRequest answered (status.token, expirationTimestamp),
  /// or StatusError: 404 for an account that is not there, 422 for spec.expirationSeconds under 10
  /// minutes or over 2^32 seconds, for a bound object of another kind than Pod or Secret, or one
  /// that is not there (404) or not the uid named (409).
  boost::json::object request(const std::string& ns, const std::string& name, const boost::json::object& body,
                              std::chrono::system_clock::time_point now) const;

  /// A bearer token of this issuer's: the identity it stands for, or nullopt when the token is not
  /// one (then other authenticators may know it), or when it is expired, not yet valid, for another
  /// audience, badly signed, or its account (or bound object) is gone or another one of that name.
  std::optional<Identity> authenticate(std::string_view token, std::chrono::system_clock::time_point now) const;

 private:
  struct Key;
  Store& store_;
  std::unique_ptr<Key> key_;
};

}  // namespace gpupool::embedded
