// The JSON parse options for API objects: Go's nesting limit instead of Boost.JSON's 32.
#pragma once

#include <boost/json/parse_options.hpp>

#include "common/limits.hpp"

namespace gpupool {

inline boost::json::parse_options deep_json() {
  boost::json::parse_options o;
  o.max_depth = limits::kMaxJsonDepth;
  return o;
}

}  // namespace gpupool
