#include "gpupool/error.hpp"

#include <fmt/format.h>

namespace gpupool {

ValidationError::ValidationError(std::string field, std::string value, std::string rule)
    : Error(fmt::format("{}: invalid value \"{}\": {}", field, value, rule)),
      field_(std::move(field)),
      value_(std::move(value)),
      rule_(std::move(rule)) {}

namespace {
std::string config_message(const std::string& file, const std::string& key, const std::string& message, int line) {
  std::string where = line > 0 ? fmt::format("{}:{}", file, line) : file;
  return key.empty() ? fmt::format("{}: {}", where, message) : fmt::format("{}: {}: {}", where, key, message);
}
std::string api_message(int code, const std::string& reason, const std::string& message) {
  if (message.empty()) return fmt::format("{} ({})", reason.empty() ? "API error" : reason, code);
  return fmt::format("{} ({}): {}", reason.empty() ? "API error" : reason, code, message);
}
}  // namespace

ConfigError::ConfigError(std::string file, std::string key, const std::string& message, int line)
    : Error(config_message(file, key, message, line)), file_(std::move(file)), key_(std::move(key)), line_(line) {}

ApiError::ApiError(int code, std::string reason, std::string message, std::vector<StatusCause> causes,
                   std::optional<int> retry_after_seconds)
    : Error(api_message(code, reason, message)),
      code_(code),
      reason_(std::move(reason)),
      message_(std::move(message)),
      causes_(std::move(causes)),
      retry_after_(retry_after_seconds) {}

}  // namespace gpupool
