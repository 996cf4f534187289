// A tiny C++ application using gpupool: the seed's `--toleration ssd_node`, as gpupool reads it.
#include <gpupool/taint.hpp>

#include <iostream>

int main() {
  auto toleration = gpupool::parse_toleration("ssd_node");
  gpupool::Taint ssd{"ssd_node", "invalid", gpupool::TaintEffect::NoSchedule};
  gpupool::Taint gpu{"gpu_node", "invalid", gpupool::TaintEffect::NoSchedule};
  std::cout << "toleration " << toleration.to_string() << "\n"
            << "  tolerates " << ssd.to_string() << ": " << std::boolalpha << toleration.tolerates(ssd) << "\n"
            << "  tolerates " << gpu.to_string() << ": " << toleration.tolerates(gpu) << "\n";
}
