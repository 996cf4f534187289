// embedded/tls.hpp — the embedded cluster's PKI, generated in memory at start (OpenSSL): a CA, a
// server certificate for 127.0.0.1/localhost, and client certificates (CN = user, O = groups) as
// kubeadm issues them. Keys are EC P-256 and never leave memory except in kubeconfig files.
#pragma once

#include <openssl/types.h>

#include <string>
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
  const std::string& cert_pem() const noexcept { return ca_.cert_pem; }
  /// A serving certificate with SANs IP:127.0.0.1 and DNS:localhost.
  KeyPair issue_server() const;
  /// A client certificate: subject CN=<user>, O=<each group> (extendedKeyUsage clientAuth).
  KeyPair issue_client(const std::string& user, const std::vector<std::string>& groups) const;

 private:
  KeyPair ca_;
};

/// Subject CN and O values of a certificate: {CN, O...} (a client certificate's user and groups).
std::vector<std::string> certificate_subject(X509* cert);

}  // namespace gpupool::embedded
