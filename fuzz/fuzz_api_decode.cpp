// libFuzzer target: decoding API responses — Node::from_json and PodRequirements::from_pod_json on
// whatever JSON the input holds (inputs that are not JSON are skipped: the transport rejects them).
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "fuzz_util.hpp"
#include "gpupool/node.hpp"
#include "gpupool/scheduling.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  boost::system::error_code ec;
  const boost::json::value value = boost::json::parse(gpupool_fuzz::as_text(data, size), ec);
  if (ec) return 0;
  gpupool_fuzz::run(data, size, [&](std::string_view) { (void)gpupool::Node::from_json(value); });
  gpupool_fuzz::run(data, size, [&](std::string_view) { (void)gpupool::PodRequirements::from_pod_json(value); });
  return 0;
}
