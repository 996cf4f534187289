// fuzz/fuzz_util.hpp — shared helper of the libFuzzer targets in fuzz/.
//
// Every target feeds the raw input to one parser. A gpupool::Error (ValidationError, ConfigError,
// ApiError, TransportError) is the documented answer to bad input and is accepted; any other
// exception escaping, a crash, a sanitizer report, a leak or a hang is a bug that libFuzzer reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpupool/error.hpp"

namespace gpupool_fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Runs fn(text); swallows only gpupool::Error.
template <class Fn>
int run(const std::uint8_t* data, std::size_t size, Fn&& fn) {
  try {
    fn(as_text(data, size));
  } catch (const gpupool::Error&) {}
  return 0;
}

}  // namespace gpupool_fuzz
