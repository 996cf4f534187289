#include "common/openssl_errors.hpp"

// The per-library loaders are the only public way to load the texts after OpenSSL was started
// without them (OPENSSL_init_crypto's LOAD_CRYPTO_STRINGS runs once, and not at all after
// NO_LOAD_CRYPTO_STRINGS); OpenSSL 3 keeps them as deprecated.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <sched.h>

#include <condition_variable>
#include <mutex>

namespace gpupool {

#ifndef OPENSSL_NO_DEPRECATED_3_0
#define GPUPOOL_OPENSSL_LOADERS 1
#endif

namespace {

struct BackgroundStart {
  std::mutex mu;
  std::condition_variable cv;
  bool running = false;
};

BackgroundStart& background_start() {
  static BackgroundStart b;
  return b;
}

/// OpenSSL's start without error texts, and a first client context (the methods it constructs
/// stay in the default library context for the command's own).
void start() {
#ifdef GPUPOOL_OPENSSL_LOADERS
  OPENSSL_init_ssl(
      OPENSSL_INIT_NO_LOAD_SSL_STRINGS | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS | OPENSSL_INIT_NO_ADD_ALL_CIPHERS,
      nullptr);
#endif
  SSL_CTX_free(SSL_CTX_new(TLS_client_method()));
  ERR_clear_error();
}

}  // namespace

void start_openssl_in_background() {
  BackgroundStart& b = background_start();
  // On another CPU than this one: a new thread is queued on its parent's CPU, where it waits for
  // the command to block (seen on Linux 6.18, ~0.7 ms), which would leave nothing to overlap.
  cpu_set_t others;
  CPU_ZERO(&others);
  const int here = ::sched_getcpu();
  if (here >= 0 && ::sched_getaffinity(0, sizeof others, &others) == 0) CPU_CLR(here, &others);
  pthread_attr_t attr;
  bool started = false;
  if (here >= 0 && CPU_COUNT(&others) > 0 && ::pthread_attr_init(&attr) == 0) {
    std::lock_guard lock(b.mu);
    b.running = true;
    pthread_t thread;
    started = ::pthread_attr_setaffinity_np(&attr, sizeof others, &others) == 0 &&
              ::pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
              ::pthread_create(
                  &thread, &attr,
                  [](void*) -> void* {
                    start();
                    BackgroundStart& bs = background_start();
                    std::lock_guard done(bs.mu);
                    bs.running = false;
                    bs.cv.notify_all();
                    return nullptr;
                  },
                  nullptr) == 0;
    b.running = started;
    ::pthread_attr_destroy(&attr);
  }
  if (!started) start();  // one CPU, or no thread to be had: in place
}

void await_openssl_start() {
  BackgroundStart& b = background_start();
  std::unique_lock lock(b.mu);
  b.cv.wait(lock, [&] { return !b.running; });
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
