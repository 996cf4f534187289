// gpupool::parse_duration: Go's time.ParseDuration plus days.
#include <doctest/doctest.h>

#include "gpupool/time.hpp"

using namespace gpupool;
using namespace std::chrono_literals;

TEST_CASE("Go durations, plus days") {
  struct Row {
    const char* text;
    std::optional<std::chrono::nanoseconds> expected;
  };
  const Row rows[] = {
      {"30s", 30s},        {"1h30m", 90min},          {"2d23h", 71h},
      {"300ms", 300ms},    {"1.5h", 90min},           {"0", 0s},
      {"10us", 10us},      {"\u00b5s", std::nullopt}, {"", std::nullopt},
      {"5", std::nullopt}, {"-5s", std::nullopt},     {"5x", std::nullopt},
      {"h", std::nullopt}, {"1m30", std::nullopt},    {"2.5µs", 2500ns},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    CHECK(parse_duration(r.text) == r.expected);
  }
}
