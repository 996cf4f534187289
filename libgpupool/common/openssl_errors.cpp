#include "common/openssl_errors.hpp"

// The per-library loaders are the only public way to load the texts after OpenSSL was started
// without them (OPENSSL_init_crypto's LOAD_CRYPTO_STRINGS runs once, and not at all after
// NO_LOAD_CRYPTO_STRINGS); OpenSSL 3 keeps them as deprecated.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <mutex>

namespace gpupool {

#ifndef OPENSSL_NO_DEPRECATED_3_0
#define GPUPOOL_OPENSSL_LOADERS 1
#endif

void start_openssl_without_error_strings() {
#ifdef GPUPOOL_OPENSSL_LOADERS
  OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_SSL_STRINGS | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS, nullptr);
#endif
}

void load_openssl_error_strings() {
#ifdef GPUPOOL_OPENSSL_LOADERS
  static std::once_flag once;
  // Each loader returns at once when its library's texts are already there (it looks its first
  // reason up), so this costs nothing in a process that loaded them at start. The libraries are
  // those a connection, a certificate, a key or a session can fail in; others are worded by code
  // ("lib(N)::reason(M)", as OpenSSL words an unknown one).
  std::call_once(once, [] {
    ERR_load_ERR_strings();  // the library names and the system errors
    ERR_load_SSL_strings();
    ERR_load_X509_strings();
    ERR_load_X509V3_strings();
    ERR_load_PEM_strings();
    ERR_load_ASN1_strings();
    ERR_load_EVP_strings();
    ERR_load_BIO_strings();
    ERR_load_BUF_strings();
    ERR_load_BN_strings();
    ERR_load_RSA_strings();
    ERR_load_EC_strings();
    ERR_load_DH_strings();
    ERR_load_DSA_strings();
    ERR_load_OBJ_strings();
    ERR_load_CRYPTO_strings();
    ERR_load_CONF_strings();
    ERR_load_RAND_strings();
    ERR_load_OSSL_STORE_strings();
    ERR_load_KDF_strings();
  });
#endif
}

std::string openssl_error_text(unsigned long code) {
  load_openssl_error_strings();
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

}  // namespace gpupool
