// ASCII character classes for the hand-matched grammars (Kubernetes names, image references):
// one home for them, locale-free and constexpr, unlike <cctype>.
#pragma once

#include <string>
#include <string_view>

namespace gpupool::ascii {

constexpr bool digit(char c) noexcept { return c >= '0' && c <= '9'; }
constexpr bool alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
constexpr bool alnum(char c) noexcept { return alpha(c) || digit(c); }
/// [a-z0-9]
constexpr bool lower_alnum(char c) noexcept { return (c >= 'a' && c <= 'z') || digit(c); }
/// [0-9a-fA-F]
constexpr bool hex_digit(char c) noexcept { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
/// `s` with A-Z made a-z (other bytes as they are, whatever the process's locale).
inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace gpupool::ascii
