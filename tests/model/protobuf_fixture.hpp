// The bytes kube-apiserver v1.32.13 sent, recorded by tests/model/data/protobuf/record.py (the
// same lists as JSON and as protobuf, and a protobuf error Status).
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gpupool::test {

inline std::string protobuf_fixture(const std::string& name) {
  std::ifstream in(std::string(GPUPOOL_SOURCE_DIR) + "/tests/model/data/protobuf/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gpupool::test
