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
struct WatchEvent;

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

  /// The issuer of the legacy tokens the tokens controller puts in kubernetes.io/service-account-token
  /// Secrets (serviceaccount.LegacyIssuer).
  static constexpr std::string_view kLegacyIssuer = "kubernetes/serviceaccount";
  /// A legacy token of `account` for the Secret `secret_name` (pkg/serviceaccount/legacy.go
  /// LegacyClaims: sub and the namespace, secret and account claims; no expiry, no audience).
  std::string legacy_token(const boost::json::object& account, const std::string& secret_name) const;

 private:
  /// legacyValidator.Validate with lookup: the Secret it names is there, not being deleted, holds
  /// this very token and is not labelled invalid; the account is there with the uid claimed. The
  /// Secret's kubernetes.io/legacy-token-last-used label gets the day's date.
  std::optional<Identity> authenticate_legacy(std::string_view token, const boost::json::object& claims,
                                              std::chrono::system_clock::time_point now) const;
  std::string sign(const boost::json::object& claims) const;
  struct Key;
  Store& store_;
  std::unique_ptr<Key> key_;
};

/// kube-controller-manager's tokens controller (pkg/controller/serviceaccount/tokens_controller.go,
/// v1.32) for kubernetes.io/service-account-token Secrets: syncSecret fills a Secret naming an
/// account that exists (data token, ca.crt, namespace; the account's name and uid annotations) and
/// deletes one whose account is not there (or is another of that name); a Secret deleted leaves its
/// account's `secrets` list (removeSecretReference); an account deleted takes its token Secrets with
/// it (syncServiceAccount, deleteTokens). Runs inside the store's events, as the other controllers.
class TokensController {
 public:
  TokensController(Store& store, const ServiceAccountTokens& tokens, std::string root_ca_pem);
  ~TokensController();
  TokensController(const TokensController&) = delete;
  TokensController& operator=(const TokensController&) = delete;

 private:
  void on_event(const WatchEvent& e);
  void sync_secret(const boost::json::object& secret);
  Store& store_;
  const ServiceAccountTokens& tokens_;
  const std::string root_ca_pem_;
  std::uint64_t subscription_ = 0;
};

}  // namespace gpupool::embedded
