// libFuzzer target: image reference parsing (ImageRef::parse) and re-parsing what to_string() prints.
#include "fuzz_util.hpp"
#include "gpupool/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return gpupool_fuzz::run(data, size, [](std::string_view text) {
    const auto ref = gpupool::ImageRef::parse(text);
    (void)gpupool::ImageRef::parse(ref.to_string());
  });
}
