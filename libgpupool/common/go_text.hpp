// Go's text rules that more than one layer reproduces in its messages: strconv.Quote (fmt's %q of a
// string), the time package's own quote, and time.ParseDuration. One home for them, used by the cron
// schedules (model) and the embedded server's validation, schema and CEL errors.
//
// Sources (read, not copied; Kubernetes v1.32 is built with Go 1.24, Unicode 15.0.0): strconv
// (quote.go appendQuotedWith, appendEscapedRune, IsPrint; isprint.go), time/format.go (quote,
// ParseDuration, leadingInt, leadingFraction).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpupool::gotext {

/// strconv.IsPrint: letters, marks, numbers, punctuation, symbols (Unicode 15.0.0) and the ASCII
/// space.
bool is_print(char32_t r);

/// strconv.Quote: `s` in double quotes, printable runes as they are, the others escaped (\a \b \f
/// \n \r \t \v, \xNN below U+0020 and for U+007F, \uNNNN, \UNNNNNNNN), each byte that starts no
/// valid UTF-8 sequence as \xNN.
std::string quote(std::string_view s);

/// The time package's own quote (format.go), for its parse errors: `s` in double quotes with '"'
/// and '\\' escaped and every byte of a non-ASCII or control character as \xNN.
std::string time_quote(std::string_view s);

/// time.ParseDuration ([-+]?([0-9]*(\.[0-9]*)?[a-z]+)+ or "0", units ns us µs μs ms s m h): the
/// duration in nanoseconds, or nullopt with Go's error text in `err` (`time: invalid duration
/// "x"`, `time: missing unit in duration "1"`, `time: unknown unit "d" in duration "1d"`).
std::optional<std::int64_t> parse_duration(std::string_view s, std::string* err = nullptr);

}  // namespace gpupool::gotext
