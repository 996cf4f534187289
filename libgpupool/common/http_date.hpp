// HTTP dates (RFC 9110 IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT"): the embedded server stamps
// its clock on every response; the client reads it to know the server's time (ages, durations).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace gpupool::detail {

std::string format_http_date(std::chrono::system_clock::time_point t);
/// nullopt unless `text` is an IMF-fixdate.
std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view text);

}  // namespace gpupool::detail
