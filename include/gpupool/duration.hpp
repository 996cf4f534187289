// gpupool/duration.hpp — durations as people type them (the other direction, printing ages as
// kubectl does, is human_duration in gpupool/node.hpp).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace gpupool {

/// Parses a Go duration (time.ParseDuration: "30s", "1h30m", "1.5h", "300ms", units ns us µs ms s
/// m h, several terms summed) extended with "d" (24h) so kubectl-style ages such as "2d23h" read
/// too. "0" alone is zero; no sign is allowed. nullopt when malformed.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);

}  // namespace gpupool
