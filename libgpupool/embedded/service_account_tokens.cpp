#include "embedded/service_account_tokens.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include <fmt/format.h>

#include <algorithm>

#include "embedded/base64.hpp"
#include "embedded/clock.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"

namespace gpupool::embedded {

namespace json = boost::json;
using util::object_at;
using util::string_of;

namespace {

std::string base64url(std::string_view bytes) {
  std::string s = base64_encode(bytes);
  for (auto& c : s) c = c == '+' ? '-' : c == '/' ? '_' : c;
  while (!s.empty() && s.back() == '=') s.pop_back();
  return s;
}

std::optional<std::string> base64url_decode(std::string_view text) {
  std::string s(text);
  for (auto& c : s) {
    if (c == '+' || c == '/' || c == '=') return std::nullopt;  // not URL-safe base64 without padding
    c = c == '-' ? '+' : c == '_' ? '/' : c;
  }
  while (s.size() % 4) s += '=';
  return base64_decode(s);
}

std::int64_t unix_seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

constexpr std::int64_t kExtendedExpiration = 365 * 24 * 60 * 60;  // ExpirationExtensionSeconds

}  // namespace

struct ServiceAccountTokens::Key {
  EVP_PKEY* pkey = nullptr;
  std::string kid;
  ~Key() {
    if (pkey) EVP_PKEY_free(pkey);
  }
};

ServiceAccountTokens::ServiceAccountTokens(Store& store, const std::string& signing_key_pem)
    : store_(store), key_(std::make_unique<Key>()) {
  BIO* bio = BIO_new_mem_buf(signing_key_pem.data(), static_cast<int>(signing_key_pem.size()));
  key_->pkey = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ERR_clear_error();
  if (!key_->pkey) throw Error("embedded server: the service account signing key cannot be read");
  // The key id as kube-apiserver derives it (serviceaccount/jwt.go keyIDFromPublicKey): the
  // URL-safe base64 of the SHA-256 of the public key's PKIX DER.
  unsigned char* der = nullptr;
  const int len = i2d_PUBKEY(key_->pkey, &der);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(der, static_cast<std::size_t>(len), digest);
  OPENSSL_free(der);
  key_->kid = base64url(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

ServiceAccountTokens::~ServiceAccountTokens() = default;

namespace {

/// ES256 (RFC 7518 3.4): ECDSA P-256 over SHA-256, the signature as r || s, 32 bytes each.
std::string sign_es256(EVP_PKEY* key, std::string_view input) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::size_t len = 0;
  std::string der;
  bool ok = EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
            EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  if (ok) {
    der.resize(len);
    ok = EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(der.data()), &len,
                        reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
    der.resize(len);
  }
  EVP_MD_CTX_free(ctx);
  if (!ok) throw Error("embedded server: a service account token could not be signed");
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
  std::string raw(64, '\0');
  BN_bn2binpad(ECDSA_SIG_get0_r(sig), reinterpret_cast<unsigned char*>(raw.data()), 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(sig), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
  ECDSA_SIG_free(sig);
  return raw;
}

bool verify_es256(EVP_PKEY* key, std::string_view input, std::string_view raw) {
  if (raw.size() != 64) return false;
  ECDSA_SIG* sig = ECDSA_SIG_new();
  const auto* r = reinterpret_cast<const unsigned char*>(raw.data());
  ECDSA_SIG_set0(sig, BN_bin2bn(r, 32, nullptr), BN_bin2bn(r + 32, 32, nullptr));
  unsigned char* der = nullptr;
  const int len = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = len > 0 && EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
                  EVP_DigestVerify(ctx, der, static_cast<std::size_t>(len),
                                   reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  OPENSSL_free(der);
  ERR_clear_error();
  return ok;
}

StatusError token_request_invalid(const std::string& name, std::vector<StatusCause> causes) {
  std::string message = fmt::format("TokenRequest.authentication.k8s.io \"{}\" is invalid: ", name);
  for (std::size_t i = 0; i < causes.size(); ++i)
    message += (i ? ", " : "") + causes[i].field + ": " + causes[i].message;
  if (causes.size() > 1) message.insert(message.find(": ") + 2, "[").append("]");
  return StatusError(422, "Invalid", message, name, "authentication.k8s.io", "TokenRequest", std::move(causes));
}

}  // namespace

json::object ServiceAccountTokens::request(const std::string& ns, const std::string& name, const json::object& body,
                                           std::chrono::system_clock::time_point now) const {
  const json::object* md = object_at(body, {"metadata"});
  const std::string req_name = string_of(md, "name"), req_ns = string_of(md, "namespace");
  if (!req_name.empty() && req_name != name)
    throw token_request_invalid(
        name, {{"FieldValueInvalid",
                fmt::format("Invalid value: \"{}\": must match the service account name if specified", req_name),
                "metadata.name"}});
  if (!req_ns.empty() && req_ns != ns)
    throw token_request_invalid(
        name, {{"FieldValueInvalid",
                fmt::format("Invalid value: \"{}\": must match the service account namespace if specified", req_ns),
                "metadata.namespace"}});
  const auto account = store_.find(store_.type("", "serviceaccounts"), ns, name);
  if (!account) throw StatusError::not_found(store_.type("", "serviceaccounts"), name);
  const json::object* spec = object_at(body, {"spec"});
  json::array audiences;
  if (const json::value* a = spec ? spec->if_contains("audiences") : nullptr; a && a->is_array())
    for (const auto& v : a->as_array())
      if (v.is_string()) audiences.push_back(v);
  if (audiences.empty()) audiences.emplace_back(kIssuer);
  const std::int64_t seconds = util::int_of(spec, "expirationSeconds", 3600);  // SetDefaults_TokenRequestSpec
  std::vector<StatusCause> invalid;
  if (seconds < 600)
    invalid.push_back({"FieldValueInvalid",
                       fmt::format("Invalid value: {}: may not specify a duration less than 10 minutes", seconds),
                       "spec.expirationSeconds"});
  if (seconds > (std::int64_t{1} << 32))
    invalid.push_back({"FieldValueInvalid",
                       fmt::format("Invalid value: {}: may not specify a duration larger than 2^32 seconds", seconds),
                       "spec.expirationSeconds"});
  if (!invalid.empty()) throw token_request_invalid("", std::move(invalid));

  json::object kube{{"namespace", ns},
                    {"serviceaccount", json::object{{"name", name}, {"uid", util::uid_of(*account)}}}};
  json::value bound = nullptr;
  bool pod_bound = false;
  if (const json::object* ref = spec ? object_at(*spec, {"boundObjectRef"}) : nullptr) {
    const std::string kind = string_of(ref, "kind"), api_version = string_of(ref, "apiVersion"),
                      ref_name = string_of(ref, "name"), ref_uid = string_of(ref, "uid");
    const bool core = api_version == "v1" || api_version.empty();
    std::shared_ptr<const json::object> obj;
    if (core && kind == "Pod") {
      const ResourceType& pods = store_.type("", "pods");
      obj = store_.find(pods, ns, ref_name);
      if (!obj) throw StatusError::not_found(pods, ref_name);
      if (string_of(object_at(*obj, {"spec"}), "serviceAccountName") != name)
        throw StatusError::bad_request(fmt::format(
            "cannot bind token for serviceaccount \"{}\" to pod running with different serviceaccount name.", name));
      pod_bound = true;
      kube["pod"] = json::object{{"name", ref_name}, {"uid", util::uid_of(*obj)}};
      // ServiceAccountTokenPodNodeInfo: the pod's node, when it has one.
      if (const std::string node = string_of(object_at(*obj, {"spec"}), "nodeName"); !node.empty()) {
        const auto n = store_.find(store_.type("", "nodes"), "", node);
        json::object info{{"name", node}};
        if (n) info["uid"] = util::uid_of(*n);
        kube["node"] = std::move(info);
      }
    } else if (core && (kind == "Secret" || kind == "Node")) {
      const ResourceType& t = store_.type("", kind == "Secret" ? "secrets" : "nodes");
      obj = store_.find(t, kind == "Secret" ? ns : "", ref_name);
      if (!obj) throw StatusError::not_found(t, ref_name);
      kube[kind == "Secret" ? "secret" : "node"] = json::object{{"name", ref_name}, {"uid", util::uid_of(*obj)}};
    } else {
      const std::string gvk = api_version.find('/') == std::string::npos
                                  ? fmt::format("/{}, Kind={}", api_version, kind)
                                  : fmt::format("{}, Kind={}", api_version, kind);
      throw StatusError::bad_request(fmt::format("cannot bind token to object of type {}", gvk));
    }
    if (!ref_uid.empty() && ref_uid != util::uid_of(*obj))
      throw StatusError(
          409, "Conflict",
          fmt::format("Operation cannot be fulfilled on {} \"{}\": the UID in the bound object reference ({}) does not "
                      "match the UID in record. The object might have been deleted and then recreated",
                      kind, ref_name, ref_uid),
          ref_name, "", kind);
    bound = *ref;
  }
  // A pod's token asked for the kubelet's 3607 seconds lives a year, warning after 3607
  // (--service-account-extend-token-expiration, on by default).
  std::int64_t lifetime = seconds;
  const bool kube_audience =
      std::all_of(audiences.begin(), audiences.end(), [](const json::value& a) { return a.as_string() == kIssuer; });
  if (pod_bound && seconds == kWarnOnlyExpiration && kube_audience) {
    lifetime = kExtendedExpiration;
    kube["warnafter"] = unix_seconds(now) + seconds;
  }
  const std::int64_t iat = unix_seconds(now);
  json::object claims{{"aud", audiences},
                      {"exp", iat + lifetime},
                      {"iat", iat},
                      {"iss", kIssuer},
                      {"jti", store_.new_uid()},
                      {"kubernetes.io", std::move(kube)},
                      {"nbf", iat},
                      {"sub", fmt::format("system:serviceaccount:{}:{}", ns, name)}};
  const std::string token = sign(claims);
  json::object out_spec{{"audiences", std::move(audiences)}, {"expirationSeconds", seconds}, {"boundObjectRef", bound}};
  return json::object{
      {"kind", "TokenRequest"},
      {"apiVersion", "authentication.k8s.io/v1"},
      {"metadata", json::object{{"name", name}, {"namespace", ns}, {"creationTimestamp", to_rfc3339(now)}}},
      {"spec", std::move(out_spec)},
      {"status",
       json::object{{"token", token}, {"expirationTimestamp", to_rfc3339(now + std::chrono::seconds(lifetime))}}}};
}

std::string ServiceAccountTokens::sign(const json::object& claims) const {
  // serviceaccount/jwt.go JWTTokenGenerator: a JWS of the claims with the key's id.
  const std::string input = base64url(json::serialize(json::object{{"alg", "ES256"}, {"kid", key_->kid}})) + "." +
                            base64url(json::serialize(claims));
  return input + "." + base64url(sign_es256(key_->pkey, input));
}

std::string ServiceAccountTokens::legacy_token(const json::object& account, const std::string& secret_name) const {
  const std::string ns = util::namespace_of(account), name = util::name_of(account);
  return sign(json::object{{"iss", kLegacyIssuer},
                           {"kubernetes.io/serviceaccount/namespace", ns},
                           {"kubernetes.io/serviceaccount/secret.name", secret_name},
                           {"kubernetes.io/serviceaccount/service-account.name", name},
                           {"kubernetes.io/serviceaccount/service-account.uid", util::uid_of(account)},
                           {"sub", fmt::format("system:serviceaccount:{}:{}", ns, name)}});
}

std::optional<Identity> ServiceAccountTokens::authenticate_legacy(std::string_view token, const json::object& c,
                                                                  std::chrono::system_clock::time_point now) const {
  const std::string ns = string_of(&c, "kubernetes.io/serviceaccount/namespace"),
                    secret_name = string_of(&c, "kubernetes.io/serviceaccount/secret.name"),
                    name = string_of(&c, "kubernetes.io/serviceaccount/service-account.name"),
                    uid = string_of(&c, "kubernetes.io/serviceaccount/service-account.uid");
  if (ns.empty() || secret_name.empty() || name.empty() || uid.empty() ||
      string_of(&c, "sub") != fmt::format("system:serviceaccount:{}:{}", ns, name))
    return std::nullopt;
  const ResourceType& secrets = store_.type("", "secrets");
  const auto secret = store_.find(secrets, ns, secret_name);
  if (!secret || ctrl::deleting(*secret)) return std::nullopt;  // "Token has been invalidated"
  const json::object* data = object_at(*secret, {"data"});
  if (base64_decode(string_of(data, "token")).value_or(std::string()) != token)
    return std::nullopt;  // "Token does not match server's copy"
  const auto account = store_.find(store_.type("", "serviceaccounts"), ns, name);
  if (!account || ctrl::deleting(*account) || util::uid_of(*account) != uid) return std::nullopt;
  // patchSecretWithLastUsedDate (LegacyServiceAccountTokenTracking): the day it was last used,
  // also when it is refused below for being marked invalid.
  const std::string today = to_rfc3339(now).substr(0, 10);
  if (string_of(object_at(*secret, {"metadata", "labels"}), "kubernetes.io/legacy-token-last-used") != today) {
    try {
      store_.mutate(secrets, ns, secret_name, [&](json::object& o) {
        util::ensure_object(util::ensure_object(o, "metadata"), "labels")["kubernetes.io/legacy-token-last-used"] =
            today;
      });
    } catch (const StatusError&) {}
  }
  if (!string_of(object_at(*secret, {"metadata", "labels"}), "kubernetes.io/legacy-token-invalid-since").empty())
    return std::nullopt;
  return Identity{fmt::format("system:serviceaccount:{}:{}", ns, name),
                  {"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
                  "",
                  uid,
                  {}};
}

std::optional<Identity> ServiceAccountTokens::authenticate(std::string_view token,
                                                           std::chrono::system_clock::time_point now) const {
  const auto dot1 = token.find('.');
  const auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) return std::nullopt;
  const auto header = base64url_decode(token.substr(0, dot1));
  const auto payload = base64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1));
  const auto signature = base64url_decode(token.substr(dot2 + 1));
  if (!header || !payload || !signature) return std::nullopt;
  boost::system::error_code ec;
  const json::value h = json::parse(*header, ec);
  if (ec || !h.is_object() || string_of(&h.as_object(), "alg") != "ES256") return std::nullopt;
  if (!verify_es256(key_->pkey, token.substr(0, dot2), *signature)) return std::nullopt;
  const json::value p = json::parse(*payload, ec);
  if (ec || !p.is_object()) return std::nullopt;
  const json::object& c = p.as_object();
  if (string_of(&c, "iss") == kLegacyIssuer) return authenticate_legacy(token, c, now);
  // jwt.Expected with DefaultLeeway (1 minute) for exp and nbf; the issuer; one of the audiences
  // the API server's (pkg/serviceaccount/jwt.go Validate, authenticator audiences).
  const std::int64_t t = unix_seconds(now), leeway = 60;
  if (string_of(&c, "iss") != kIssuer || util::int_of(&c, "exp", 0) + leeway < t ||
      util::int_of(&c, "nbf", 0) - leeway > t)
    return std::nullopt;
  bool audience = false;
  if (const json::value* aud = c.if_contains("aud"); aud && aud->is_array())
    for (const auto& a : aud->as_array()) audience = audience || (a.is_string() && a.as_string() == kIssuer);
  if (!audience) return std::nullopt;
  const json::object* kube = object_at(c, {"kubernetes.io"});
  const std::string ns = string_of(kube, "namespace");
  const json::object* sa = kube ? object_at(*kube, {"serviceaccount"}) : nullptr;
  const std::string name = string_of(sa, "name"), uid = string_of(sa, "uid");
  // claims.go validator: the account (and a bound pod, secret or node) still there, the same one.
  const auto account = store_.find(store_.type("", "serviceaccounts"), ns, name);
  if (!account || util::uid_of(*account) != uid) return std::nullopt;
  Identity id{fmt::format("system:serviceaccount:{}:{}", ns, name),
              {"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
              "JTI=" + string_of(&c, "jti"),
              uid,
              {}};
  for (const auto& [claim, resource, namespaced] :
       {std::tuple{"pod", "pods", true}, std::tuple{"secret", "secrets", true}, std::tuple{"node", "nodes", false}}) {
    const json::object* ref = kube ? object_at(*kube, {claim}) : nullptr;
    if (!ref) continue;
    const auto obj = store_.find(store_.type("", resource), namespaced ? ns : "", string_of(ref, "name"));
    const bool pod_node = std::string_view(claim) == "node" && object_at(*kube, {"pod"});
    if (!pod_node && (!obj || util::uid_of(*obj) != string_of(ref, "uid"))) return std::nullopt;
    if (std::string_view(claim) != "secret") {
      id.extra[fmt::format("authentication.kubernetes.io/{}-name", claim)] = {string_of(ref, "name")};
      if (ref->contains("uid"))
        id.extra[fmt::format("authentication.kubernetes.io/{}-uid", claim)] = {string_of(ref, "uid")};
    }
  }
  return id;
}

namespace {

constexpr std::string_view kTokenSecretType = "kubernetes.io/service-account-token";
constexpr std::string_view kNameAnnotation = "kubernetes.io/service-account.name";
constexpr std::string_view kUidAnnotation = "kubernetes.io/service-account.uid";

std::string annotation_of(const json::object& o, std::string_view key) {
  return string_of(object_at(o, {"metadata", "annotations"}), key);
}

// deleteToken: with the Secret's uid as precondition; NotFound and Conflict are done.
void delete_token(Store& store, const std::string& ns, const std::string& name, const std::string& uid) {
  DeleteOptions how;
  if (!uid.empty()) how.precondition_uid = uid;
  try {
    store.remove(store.type("", "secrets"), ns, name, how);
  } catch (const StatusError&) {}
}

}  // namespace

TokensController::TokensController(Store& store, const ServiceAccountTokens& tokens, std::string root_ca_pem)
    : store_(store), tokens_(tokens), root_ca_pem_(std::move(root_ca_pem)) {
  subscription_ = store_.subscribe([this](const WatchEvent& e) { on_event(e); });
  // The informers' first list: every token Secret there already is.
  for (const auto& s : store_.list(store_.type("", "secrets"), "").items)
    if (string_of(s.get(), "type") == kTokenSecretType) sync_secret(*s);
}

TokensController::~TokensController() { store_.unsubscribe(subscription_); }

void TokensController::on_event(const WatchEvent& e) {
  if (!e.type_info || !e.object || !e.type_info->group.empty()) return;
  const json::object& o = *e.object;
  const std::string ns = util::namespace_of(o);
  if (e.type_info->resource == "serviceaccounts") {
    // syncServiceAccount of an account that is gone: deleteTokens, its token Secrets
    // (IsServiceAccountToken: the account's name, and its uid unless the Secret names none).
    if (e.type != EventType::Deleted) return;
    const std::string name = util::name_of(o), uid = util::uid_of(o);
    for (const auto& s : store_.list(store_.type("", "secrets"), ns).items)
      if (string_of(s.get(), "type") == kTokenSecretType && annotation_of(*s, kNameAnnotation) == name)
        if (const std::string su = annotation_of(*s, kUidAnnotation); su.empty() || su == uid)
          delete_token(store_, ns, util::name_of(*s), util::uid_of(*s));
    return;
  }
  if (e.type_info->resource != "secrets" || string_of(&o, "type") != kTokenSecretType) return;
  if (e.type != EventType::Deleted) return sync_secret(o);
  // syncSecret of a Secret that is gone: removeSecretReference from its account (the same uid).
  const std::string sa_name = annotation_of(o, kNameAnnotation), sa_uid = annotation_of(o, kUidAnnotation);
  const ResourceType& accounts = store_.type("", "serviceaccounts");
  const auto sa = sa_name.empty() ? nullptr : store_.find(accounts, ns, sa_name);
  if (!sa || (!sa_uid.empty() && util::uid_of(*sa) != sa_uid)) return;
  const std::string secret_name = util::name_of(o);
  const auto refers = [&](const json::value& r) {
    return r.is_object() && string_of(&r.as_object(), "name") == secret_name;
  };
  const json::array* refs = util::array_at(*sa, {}, "secrets");
  if (!refs || std::none_of(refs->begin(), refs->end(), refers)) return;
  try {
    store_.mutate(accounts, ns, sa_name, [&](json::object& account) {
      json::value* list = account.if_contains("secrets");
      if (!list || !list->is_array()) return;
      auto& a = list->as_array();
      a.erase(std::remove_if(a.begin(), a.end(), refers), a.end());
    });
  } catch (const StatusError&) {}
}

void TokensController::sync_secret(const json::object& secret) {
  const std::string ns = util::namespace_of(secret), name = util::name_of(secret);
  const std::string sa_name = annotation_of(secret, kNameAnnotation), sa_uid = annotation_of(secret, kUidAnnotation);
  if (sa_name.empty()) return;  // parseSecretQueueKey: no account named, nothing to do
  // getServiceAccount: the account of that name, and of that uid when the Secret names one.
  const auto sa = store_.find(store_.type("", "serviceaccounts"), ns, sa_name);
  if (!sa || (!sa_uid.empty() && util::uid_of(*sa) != sa_uid)) {
    delete_token(store_, ns, name, util::uid_of(secret));
    return;
  }
  // generateTokenIfNeeded: secretUpdateNeeded (ca.crt not the root CA, no namespace, no token).
  const json::object* data = object_at(secret, {"data"});
  const auto bytes = [&](const char* k) { return base64_decode(string_of(data, k)).value_or(std::string()); };
  const bool needs_ca = !root_ca_pem_.empty() && bytes("ca.crt") != root_ca_pem_;
  const bool needs_namespace = bytes("namespace").empty(), needs_token = bytes("token").empty();
  if (!needs_ca && !needs_namespace && !needs_token) return;
  const std::string rv = string_of(object_at(secret, {"metadata"}), "resourceVersion");
  try {
    store_.mutate(store_.type("", "secrets"), ns, name, [&](json::object& live) {
      // The live Secret: when it is not the one the event carried, a later event comes.
      if (string_of(object_at(live, {"metadata"}), "resourceVersion") != rv) return;
      json::object& d = util::ensure_object(live, "data");
      if (needs_ca) d["ca.crt"] = base64_encode(root_ca_pem_);
      if (needs_namespace) d["namespace"] = base64_encode(ns);
      if (needs_token) d["token"] = base64_encode(tokens_.legacy_token(*sa, name));
      json::object& ann = util::ensure_object(util::ensure_object(live, "metadata"), "annotations");
      ann[kNameAnnotation] = util::name_of(*sa);
      ann[kUidAnnotation] = util::uid_of(*sa);
    });
  } catch (const StatusError&) {
    // Conflict or NotFound: a later event, or nothing to fill.
  }
}

}  // namespace gpupool::embedded
