// embedded/base64.hpp — base64 lives in common/base64.hpp; these names keep embedded code unchanged.
#pragma once

#include "common/base64.hpp"

namespace gpupool::embedded {

using gpupool::base64_decode;
using gpupool::base64_encode;

}  // namespace gpupool::embedded
