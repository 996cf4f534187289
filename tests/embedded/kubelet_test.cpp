#include <doctest/doctest.h>

#include <optional>

#include "embedded/clock.hpp"

using namespace gpupool::embedded;
using namespace std::chrono_literals;

TEST_CASE("manual clock stands still until advanced") {
  auto clock = Clock::manual();
  const auto t0 = clock.now();
  CHECK(clock.now() == t0);
  clock.advance(30s);
  CHECK(clock.now() - t0 == 30s);
  clock.advance(-5s);  // time never goes back
  CHECK(clock.now() - t0 == 30s);
  Clock copy = clock;
  copy.advance(1s);
  CHECK(clock.now() - t0 == 30s);
  CHECK(copy.now() - t0 == 31s);
}

TEST_CASE("rfc3339 formatting and parsing") {
  struct Row {
    const char* text;
    bool ok;
    const char* canonical;
  };
  const Row rows[] = {
      {"2024-01-01T00:00:00Z", true, "2024-01-01T00:00:00Z"},
      {"2024-02-29T23:59:59Z", true, "2024-02-29T23:59:59Z"},
      {"2024-01-01T08:00:00+08:00", true, "2024-01-01T00:00:00Z"},
      {"2023-12-31T19:30:00-04:30", true, "2024-01-01T00:00:00Z"},
      {"2024-01-01T00:00:00.5Z", true, "2024-01-01T00:00:00Z"},
      {"2023-02-29T00:00:00Z", false, ""},
      {"2024-01-01 00:00:00Z", false, ""},
      {"2024-01-01T00:00:00", false, ""},
      {"2024-13-01T00:00:00Z", false, ""},
      {"2024-01-01T00:00:00Zjunk", false, ""},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    Clock::time_point t{};
    REQUIRE(parse_rfc3339(r.text, t) == r.ok);
    if (r.ok) CHECK(to_rfc3339(t) == r.canonical);
  }
  CHECK(to_rfc3339(Clock::default_start()) == "2024-01-01T00:00:00Z");
  CHECK(to_rfc3339_micro(Clock::default_start() + 1500us) == "2024-01-01T00:00:00.001500Z");
}

TEST_CASE("Go durations, plus days") {
  struct Row {
    const char* text;
    std::optional<Clock::duration> expected;
  };
  const Row rows[] = {
      {"30s", 30s},      {"1h30m", 90min}, {"2d23h", 71h},          {"300ms", 300ms}, {"1.5h", 90min},
      {"0", 0s},         {"10us", 10us},   {"\u00b5s", std::nullopt}, {"", std::nullopt}, {"5", std::nullopt},
      {"-5s", std::nullopt}, {"5x", std::nullopt}, {"h", std::nullopt}, {"1m30", std::nullopt}, {"2.5µs", 2500ns},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    CHECK(parse_duration(r.text) == r.expected);
  }
}
