#include "embedded/tls.hpp"

#include <memory>
#include <stdexcept>

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "embedded/base64.hpp"
#include "gpupool/error.hpp"

namespace gpupool::embedded {
namespace {

template <class T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using PKey = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

[[noreturn]] void fail(const char* what) { throw Error(std::string("embedded cluster TLS setup failed: ") + what); }

PKey new_key() {
  EVP_PKEY* k = EVP_EC_gen("P-256");
  if (!k) fail("cannot generate an EC P-256 key");
  return PKey(k);
}

std::string to_pem(EVP_PKEY* k) {
  Bio b(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_PrivateKey(b.get(), k, nullptr, nullptr, 0, nullptr, nullptr)) fail("cannot encode a key");
  char* data = nullptr;
  const long n = BIO_get_mem_data(b.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}
std::string to_pem(X509* c) {
  Bio b(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_X509(b.get(), c)) fail("cannot encode a certificate");
  char* data = nullptr;
  const long n = BIO_get_mem_data(b.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}
PKey key_from_pem(const std::string& pem) {
  Bio b(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* k = PEM_read_bio_PrivateKey(b.get(), nullptr, nullptr, nullptr);
  if (!k) fail("cannot read a key");
  return PKey(k);
}
Cert cert_from_pem(const std::string& pem) {
  Bio b(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509* c = PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr);
  if (!c) fail("cannot read a certificate");
  return Cert(c);
}

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) fail("cannot build a certificate extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

Cert new_cert(EVP_PKEY* key, const std::string& cn, const std::vector<std::string>& orgs, long days) {
  Cert c(X509_new());
  X509_set_version(c.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(c.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c.get()), days * 24 * 3600);
  X509_set_pubkey(c.get(), key);
  X509_NAME* name = X509_get_subject_name(c.get());
  for (const auto& o : orgs)
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(o.c_str()), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return c;
}

}  // namespace

CertificateAuthority::CertificateAuthority() {
  PKey key = new_key();
  Cert c = new_cert(key.get(), "gpupool-embedded-ca", {}, 3650);
  X509_set_issuer_name(c.get(), X509_get_subject_name(c.get()));
  add_ext(c.get(), c.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_ext(c.get(), c.get(), NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign");
  add_ext(c.get(), c.get(), NID_subject_key_identifier, "hash");
  if (!X509_sign(c.get(), key.get(), EVP_sha256())) fail("cannot sign the CA certificate");
  ca_ = {to_pem(c.get()), to_pem(key.get())};
}

std::optional<CertificateAuthority> CertificateAuthority::from_pem(const std::string& text) {
  const auto read = [&]() -> std::optional<CertificateAuthority> {
    Bio cb(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
    Cert cert(PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr));
    Bio kb(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
    PKey key(PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr));
    if (!cert || !key || X509_check_private_key(cert.get(), key.get()) != 1 ||
        X509_cmp_current_time(X509_get0_notAfter(cert.get())) <= 0)
      return std::nullopt;
    return CertificateAuthority(KeyPair{to_pem(cert.get()), to_pem(key.get())});
  };
  auto ca = read();
  ERR_clear_error();  // a refused text leaves OpenSSL's reasons queued
  return ca;
}

namespace {
KeyPair issue(const KeyPair& ca, const std::string& cn, const std::vector<std::string>& orgs, bool server) {
  Cert ca_cert = cert_from_pem(ca.cert_pem);
  PKey ca_key = key_from_pem(ca.key_pem);
  PKey key = new_key();
  Cert c = new_cert(key.get(), cn, orgs, 365);
  X509_set_issuer_name(c.get(), X509_get_subject_name(ca_cert.get()));
  add_ext(c.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_ext(c.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment");
  add_ext(c.get(), ca_cert.get(), NID_ext_key_usage, server ? "serverAuth" : "clientAuth");
  add_ext(c.get(), ca_cert.get(), NID_authority_key_identifier, "keyid:always");
  if (server) add_ext(c.get(), ca_cert.get(), NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  if (!X509_sign(c.get(), ca_key.get(), EVP_sha256())) fail("cannot sign a certificate");
  return {to_pem(c.get()), to_pem(key.get())};
}
}  // namespace

KeyPair CertificateAuthority::issue_server() const { return issue(ca_, "gpupool-embedded-apiserver", {}, true); }

KeyPair CertificateAuthority::issue_client(const std::string& user, const std::vector<std::string>& groups) const {
  return issue(ca_, user, groups, false);
}

std::vector<std::string> certificate_subject(X509* cert) {
  std::vector<std::string> out;
  X509_NAME* name = X509_get_subject_name(cert);
  auto get = [&](int nid) {
    std::vector<std::string> vals;
    for (int i = X509_NAME_get_index_by_NID(name, nid, -1); i >= 0; i = X509_NAME_get_index_by_NID(name, nid, i)) {
      ASN1_STRING* d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
      unsigned char* utf8 = nullptr;
      const int n = ASN1_STRING_to_UTF8(&utf8, d);
      if (n >= 0) vals.emplace_back(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(n));
      OPENSSL_free(utf8);
    }
    return vals;
  };
  auto cn = get(NID_commonName);
  out.push_back(cn.empty() ? "" : cn.front());
  for (auto& o : get(NID_organizationName)) out.push_back(o);
  return out;
}

namespace {

// encoding/pem: a block's type and its bytes.
struct PemBlock {
  std::string type, bytes;
};

// getLine: up to the next '\n' (excluded), trailing spaces, tabs and '\r' dropped; and the rest.
std::pair<std::string_view, std::string_view> get_line(std::string_view data) {
  const auto nl = data.find('\n');
  std::string_view line = nl == std::string_view::npos ? data : data.substr(0, nl);
  const std::string_view rest = nl == std::string_view::npos ? std::string_view() : data.substr(nl + 1);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
  return {line, rest};
}

// pem.Decode: the next block that decodes, skipping what does not; nullopt when none is left.
std::optional<PemBlock> pem_decode(std::string_view& data) {
  std::string_view rest = data;
  for (;;) {
    // Past "-----BEGIN " at the start, or after a newline.
    if (rest.starts_with("-----BEGIN ")) {
      rest.remove_prefix(11);
    } else if (const auto at = rest.find("\n-----BEGIN "); at != std::string_view::npos) {
      rest.remove_prefix(at + 12);
    } else {
      return std::nullopt;
    }
    auto [type_line, after] = get_line(rest);
    rest = after;
    if (!type_line.ends_with("-----")) continue;
    type_line.remove_suffix(5);
    // Headers: "key: value" lines before the body.
    bool headers = false, truncated = false;
    for (;;) {
      if (rest.empty()) {
        truncated = true;
        break;
      }
      const auto [line, next] = get_line(rest);
      if (line.find(':') == std::string_view::npos) break;
      headers = true;
      rest = next;
    }
    if (truncated) return std::nullopt;
    std::size_t end_index = 0, trailer = 0;
    if (!headers && rest.starts_with("-----END ")) {
      trailer = 9;
    } else {
      end_index = rest.find("\n-----END ");
      if (end_index == std::string_view::npos) continue;
      trailer = end_index + 10;
    }
    std::string_view end_line = rest.substr(trailer);
    const std::size_t trailer_len = type_line.size() + 5;
    if (end_line.size() < trailer_len) continue;
    const std::string_view rest_of_end = end_line.substr(trailer_len);
    end_line = end_line.substr(0, trailer_len);
    if (!end_line.starts_with(type_line) || !end_line.ends_with("-----")) continue;
    if (!get_line(rest_of_end).first.empty()) continue;
    // The body without spaces and tabs; base64.StdEncoding skips '\r' and '\n'.
    std::string body;
    for (const char c : rest.substr(0, end_index))
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') body += c;
    auto bytes = base64_decode(body);
    if (!bytes) continue;
    data = get_line(rest.substr(end_index + 9)).second;
    return PemBlock{std::string(type_line), std::move(*bytes)};
  }
}

// fmt's %v of a []string: "[a b]".
std::string go_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? " " : "") + v[i];
  return out + "]";
}

}  // namespace

std::optional<std::string> x509_key_pair_error(std::string_view cert_pem, std::string_view key_pem) {
  // crypto/tls X509KeyPair (Go 1.23): every CERTIFICATE block, the other types skipped.
  std::vector<std::string> certs, skipped;
  while (auto b = pem_decode(cert_pem)) {
    if (b->type == "CERTIFICATE")
      certs.push_back(std::move(b->bytes));
    else
      skipped.push_back(std::move(b->type));
  }
  if (certs.empty()) {
    if (skipped.empty()) return "tls: failed to find any PEM data in certificate input";
    if (skipped.size() == 1 && skipped[0].ends_with("PRIVATE KEY"))
      return "tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs "
             "may have been switched";
    return "tls: failed to find \"CERTIFICATE\" PEM block in certificate input after skipping PEM blocks of the "
           "following types: " +
           go_strings(skipped);
  }
  // The first block whose type is "PRIVATE KEY" or ends in " PRIVATE KEY".
  skipped.clear();
  std::optional<PemBlock> key;
  while ((key = pem_decode(key_pem)) && key->type != "PRIVATE KEY" && !key->type.ends_with(" PRIVATE KEY"))
    skipped.push_back(key->type);
  if (!key) {
    if (skipped.empty()) return "tls: failed to find any PEM data in key input";
    if (skipped.size() == 1 && skipped[0] == "CERTIFICATE")
      return "tls: found a certificate rather than a key in the PEM for the private key";
    return "tls: failed to find PEM block with type ending in \"PRIVATE KEY\" in key input after skipping PEM blocks "
           "of the following types: " +
           go_strings(skipped);
  }
  const auto* der = reinterpret_cast<const unsigned char*>(certs[0].data());
  Cert cert(d2i_X509(nullptr, &der, static_cast<long>(certs[0].size())));
  if (!cert) return "x509: malformed certificate";
  const auto* kder = reinterpret_cast<const unsigned char*>(key->bytes.data());
  PKey pkey(d2i_AutoPrivateKey(nullptr, &kder, static_cast<long>(key->bytes.size())));
  if (!pkey) return "tls: failed to parse private key";
  EVP_PKEY* pub = X509_get0_pubkey(cert.get());
  if (!pub || EVP_PKEY_base_id(pub) != EVP_PKEY_base_id(pkey.get()))
    return "tls: private key type does not match public key type";
  if (EVP_PKEY_eq(pub, pkey.get()) != 1) return "tls: private key does not match public key";
  ERR_clear_error();
  return std::nullopt;
}

}  // namespace gpupool::embedded
