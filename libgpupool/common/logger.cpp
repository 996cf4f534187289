// Log levels by name, and the Logger that writes one line per message to a stream.
#include "gpupool/logger.hpp"

#include "gpupool/error.hpp"

#include <memory>
#include <mutex>
#include <ostream>

namespace gpupool {

const char* to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warning:
      return "warning";
    case LogLevel::error:
      return "error";
  }
  return "unknown";
}

LogLevel parse_log_level(std::string_view text, std::string_view field) {
  for (LogLevel l : {LogLevel::debug, LogLevel::info, LogLevel::warning, LogLevel::error})
    if (text == to_string(l)) return l;
  throw ValidationError(std::string(field), std::string(text), "expected debug, info, warning or error");
}

Logger stream_logger(std::ostream& out, LogLevel threshold) {
  auto mutex = std::make_shared<std::mutex>();
  return [&out, threshold, mutex](LogLevel level, const std::string& message) {
    if (level < threshold) return;
    std::lock_guard lock(*mutex);
    out << to_string(level) << ": " << message << "\n";
  };
}

}  // namespace gpupool
