#include "gpupool/version.hpp"

namespace gpupool {

std::string_view version() noexcept { return GPUPOOL_VERSION_STRING; }

}  // namespace gpupool
