// gpupool/logger.hpp — where the library's warnings and debug notes go.
//
// gpupool never writes to stderr itself: every note (an insecure TLS setting, a kubeconfig readable
// by others, a retry) is handed to a Logger the caller supplies. An empty Logger drops them.
// Messages never contain secrets (tokens, keys, exec credentials).
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace gpupool {

enum class LogLevel { debug, info, warning, error };

/// Receives one message. Must be callable from several threads at once.
using Logger = std::function<void(LogLevel, const std::string& message)>;

/// Returns "debug", "info", "warning" or "error".
const char* to_string(LogLevel level) noexcept;
/// The inverse of to_string; ValidationError naming `field` for anything else.
LogLevel parse_log_level(std::string_view text, std::string_view field = "loglevel");

/// A Logger writing "<level>: <message>" lines to `out` for messages at `threshold` or above (what
/// the command does on stderr). `out` must outlive the Logger; lines from several threads do not mix.
Logger stream_logger(std::ostream& out, LogLevel threshold = LogLevel::warning);

}  // namespace gpupool
