// common/openssl_errors.hpp — OpenSSL's error texts, loaded when one is worded (private).
//
// OpenSSL loads the text of every error of every library on its first use (~0.2 ms of CPU, 4% of
// a `gpupool get`), to word the errors of a process that most often has none. The command's own
// process starts OpenSSL without them (start_openssl_without_error_strings, cli/main.cpp); a
// library host's process is left as its host set it up. Whoever words an OpenSSL error goes
// through openssl_error_text (or calls load_openssl_error_strings before asking OpenSSL or Asio
// for a message), which loads the texts first if they are not there.
#pragma once

#include <string>

namespace gpupool {

/// For a process of gpupool's own (the command): OpenSSL starts without loading its error texts.
/// Call before anything else uses OpenSSL; does nothing where this OpenSSL lacks the loaders.
void start_openssl_without_error_strings();

/// Loads the error texts of the libraries a TLS client or server can fail in (once; a no-op where
/// OpenSSL loaded them at start).
void load_openssl_error_strings();

/// "error:0A00010B:SSL routines::wrong version number" for an ERR_get_error() code.
std::string openssl_error_text(unsigned long code);

}  // namespace gpupool
