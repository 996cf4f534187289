// UTF-8 as Go reads it (unicode/utf8): where the API server's Go code decodes text byte by byte or
// rune by rune (a JSON body's strings, a field selector's value), invalid bytes are each read as
// U+FFFD. One home for the decoding rules, used by the embedded server's body decoder and its
// field selectors.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpupool::utf8 {

/// The length of the valid UTF-8 sequence at s[i] (utf8.DecodeRune's rules: shortest form, no
/// surrogates, at most U+10FFFF), or 0 when none starts there.
std::size_t sequence(std::string_view s, std::size_t i);
/// utf8.Valid.
bool valid(std::string_view s);
/// `s` with each byte that starts no valid sequence replaced by U+FFFD, as ranging over a Go
/// string reads it.
std::string to_valid(std::string_view s);

}  // namespace gpupool::utf8
