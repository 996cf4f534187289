// libFuzzer target: parse_kubeconfig on an in-memory kubeconfig (no files are read for inline data).
#include "fuzz_util.hpp"
#include "gpupool/kubeconfig.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpupool_fuzz::run(
      data, size, [](std::string_view text) { (void)gpupool::parse_kubeconfig(text, "/nonexistent/fuzz/kubeconfig"); });
}
