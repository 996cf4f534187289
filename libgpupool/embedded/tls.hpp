// embedded/tls.hpp — the embedded cluster's PKI, generated in memory at start (OpenSSL): a CA, a
// server certificate for 127.0.0.1/localhost, and client certificates (CN = user, O = groups) as
// kubeadm issues them. Keys are EC P-256 and leave memory only in kubeconfig files and, for a
// cluster with a state file, the CA in the state's private directory beside them (0600, as
// kubeadm keeps /etc/kubernetes/pki/ca.key).
#pragma once

#include <openssl/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool::embedded {

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;
};

class CertificateAuthority {
 public:
  /// A fresh self-signed CA ("gpupool-embedded-ca"), valid for ten years.
  CertificateAuthority();
  /// The CA pem() wrote (certificate, then key); nullopt when `text` holds none that can sign: a
  /// certificate or key missing or unreadable, the key not the certificate's, or expired.
  static std::optional<CertificateAuthority> from_pem(const std::string& text);
  /// The certificate and its key, PEM: what from_pem() reads back.
  std::string pem() const { return ca_.cert_pem + ca_.key_pem; }
  const std::string& cert_pem() const noexcept { return ca_.cert_pem; }
  /// The CA's private key, PEM (P-256): what service account tokens are signed with too.
  const std::string& key_pem() const noexcept { return ca_.key_pem; }
  /// A serving certificate with SANs IP:127.0.0.1 and DNS:localhost.
  KeyPair issue_server() const;
  /// A client certificate: subject CN=<user>, O=<each group> (extendedKeyUsage clientAuth).
  KeyPair issue_client(const std::string& user, const std::vector<std::string>& groups) const;

 private:
  explicit CertificateAuthority(KeyPair ca) : ca_(std::move(ca)) {}
  KeyPair ca_;
};

/// crypto/tls X509KeyPair's error for a certificate and key in PEM (what a kubernetes.io/tls
/// Secret's tls.crt and tls.key are checked with: secret/strategy.go warningsForSecret), nullopt
/// when they make a pair. The PEM blocks are read as encoding/pem's Decode reads them, with Go's
/// messages (`tls: failed to find any PEM data in certificate input`, ...); what the blocks hold is
/// checked with OpenSSL: a certificate that does not parse is `x509: malformed certificate`, a key
/// `tls: failed to parse private key`, a key that is not the certificate's `tls: private key does
/// not match public key` (or `... type does not match public key type`).
std::optional<std::string> x509_key_pair_error(std::string_view cert_pem, std::string_view key_pem);

/// Subject CN and O values of a certificate: {CN, O...} (a client certificate's user and groups).
std::vector<std::string> certificate_subject(X509* cert);

}  // namespace gpupool::embedded
