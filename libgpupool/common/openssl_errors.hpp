// common/openssl_errors.hpp — how the command's process starts OpenSSL, and OpenSSL's error texts,
// loaded when one is worded (private).
//
// OpenSSL loads the text of every error of every library on its first use (~0.2 ms of CPU, 4% of
// a `gpupool get`), to word the errors of a process that most often has none. The command's own
// process starts OpenSSL without them (start_openssl_in_background, cli/main.cpp); a
// library host's process is left as its host set it up. Whoever words an OpenSSL error goes
// through openssl_error_text (or calls load_openssl_error_strings before asking OpenSSL or Asio
// for a message), which loads the texts first if they are not there.
#pragma once

#include <string>

namespace gpupool {

/// For a process of gpupool's own (the command): OpenSSL starts without loading its error texts,
/// on a thread of its own that also builds a first TLS client context and drops it. OpenSSL 3.0's
/// first use — its configuration, then every cipher, digest, key and signature type of the default
/// provider constructed and named — is ~1.1 ms, a quarter of a `gpupool get`; this way it runs
/// while the process initialises, parses its arguments, reads the kubeconfig and connects, and the
/// command's own context is then built from what it left (~0.15 ms). The thread is placed on
/// another CPU than the caller's (with one CPU the start runs in place). The legacy table of cipher
/// names is not filled (OPENSSL_INIT_NO_ADD_ALL_CIPHERS, ~0.05 ms): TLS fetches its ciphers from
/// the provider, and only encrypted PEM keys look one up by name, which neither kubectl nor
/// gpupool reads. Call before anything else uses OpenSSL (cli/main.cpp: a constructor that runs
/// before the other static initialisers); where this OpenSSL lacks the loaders, OpenSSL starts
/// as it would by itself.
void start_openssl_in_background();

/// Returns once a start begun by start_openssl_in_background has finished (at once when none
/// was begun). Call before building a TLS context, so that the two do not construct the same
/// methods side by side.
void await_openssl_start();

/// Loads the error texts of the libraries a TLS client or server can fail in (once; a no-op where
/// OpenSSL loaded them at start).
void load_openssl_error_strings();

/// "error:0A00010B:SSL routines::wrong version number" for an ERR_get_error() code.
std::string openssl_error_text(unsigned long code);

}  // namespace gpupool
