// Turning an API server's error response into gpupool::ApiError (private to the kube layer).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpupool/error.hpp"
#include "gpupool/transport.hpp"

namespace gpupool::kube {

/// The integer Retry-After header (client-go retryAfterSeconds: HTTP dates are ignored).
std::optional<int> retry_after_seconds(const HttpResponse& response);

/// The texts of one `Warning` header's warnings (RFC 7234 §5.5: `299 - "text"`, several
/// comma-separated allowed; backslash escapes in the quoted text), as client-go's
/// ParseWarningHeader reads them. A malformed value yields what was read before the fault.
std::vector<std::string> warning_texts(std::string_view header_value);

/// The ApiError for a non-2xx response: from its Status body (code, reason, message,
/// details.causes) or, for any other body (HTML, text, truncated JSON), a generic reason for the
/// HTTP code as client-go's NewGenericServerResponse gives, plus a short, printable excerpt.
ApiError decode_error(int http_status, std::string_view body, std::optional<int> retry_after = std::nullopt);

/// The generic Status reason for an HTTP code ("NotFound", "Conflict", ...).
const char* reason_for_code(int http_status);

}  // namespace gpupool::kube
