// Turning an API server's error response into gpupool::ApiError (private to the kube layer).
#pragma once

#include <optional>
#include <string_view>

#include "gpupool/error.hpp"
#include "gpupool/transport.hpp"

namespace gpupool::kube {

/// The integer Retry-After header (client-go retryAfterSeconds: HTTP dates are ignored).
std::optional<int> retry_after_seconds(const HttpResponse& response);

/// The ApiError for a non-2xx response: from its Status body (code, reason, message,
/// details.causes) or, for any other body (HTML, text, truncated JSON), a generic reason for the
/// HTTP code as client-go's NewGenericServerResponse gives, plus a short, printable excerpt.
ApiError decode_error(int http_status, std::string_view body, std::optional<int> retry_after = std::nullopt);

/// The generic Status reason for an HTTP code ("NotFound", "Conflict", ...).
const char* reason_for_code(int http_status);

}  // namespace gpupool::kube
