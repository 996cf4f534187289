// gpupool/version.hpp — the library's version (CMake's project version).
#pragma once

#include <string_view>

namespace gpupool {

/// "0.1.0"
std::string_view version() noexcept;

}  // namespace gpupool
