// gpupool/time.hpp — time as people type it and as Kubernetes prints it: durations ("1h30m"),
// ages as kubectl shows them ("2d23h"), and metav1.Time's RFC 3339 timestamps.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace gpupool {

/// Parses a Go duration (time.ParseDuration: "30s", "1h30m", "1.5h", "300ms", units ns us µs ms s
/// m h, several terms summed) extended with "d" (24h) so kubectl-style ages such as "2d23h" read
/// too. "0" alone is zero; no sign is allowed. nullopt when malformed.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);

/// kubectl's HumanDuration (k8s.io/apimachinery/pkg/util/duration): "29s", "5m10s", "2d23h",
/// "3y45d"...; "0s" for up to a second in the future, "<invalid>" beyond.
std::string human_duration(std::chrono::nanoseconds d);

/// RFC 3339 timestamps as metav1.Time writes and reads them ("2024-01-01T00:00:00Z"; offsets and
/// fractions accepted on input, truncated to seconds). parse_rfc3339 throws ValidationError(field...).
std::string format_rfc3339(std::chrono::sys_seconds t);
std::chrono::sys_seconds parse_rfc3339(std::string_view text, std::string_view field = "timestamp");

}  // namespace gpupool
