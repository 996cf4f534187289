// common/go_text.hpp: strconv.Quote, time's quote and time.ParseDuration as Go 1.24 (Kubernetes
// v1.32's) runs them. The expected values are derived by hand from Go's strconv/quote.go,
// strconv/isprint.go (Unicode 15.0.0) and time/format.go.
#include <doctest/doctest.h>

#include "common/go_text.hpp"

#include <cstdint>
#include <limits>
#include <string>

namespace gotext = gpupool::gotext;

TEST_CASE("go_text: strconv.Quote escapes what IsPrint refuses, and invalid bytes as \\x") {
  CHECK(gotext::quote("") == "\"\"");
  CHECK(gotext::quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(gotext::quote("\a\b\f\n\r\t\v\x01\x7f") == "\"\\a\\b\\f\\n\\r\\t\\v\\x01\\x7f\"");
  CHECK(gotext::quote("\xff") == "\"\\xff\"");
  CHECK(gotext::quote("\xe2\x82") == "\"\\xe2\\x82\"");           // a sequence cut short: byte by byte
  CHECK(gotext::quote("\xed\xa0\x80") == "\"\\xed\\xa0\\x80\"");  // a surrogate
  CHECK(gotext::quote("\xc3\xa9") == "\"\xc3\xa9\"");             // é
  CHECK(gotext::quote("\xef\xbf\xbd") == "\"\xef\xbf\xbd\"");     // U+FFFD itself is printable
  CHECK(gotext::quote("\u00a0") == "\"\\u00a0\"");                // spaces other than ' ' are not
  CHECK(gotext::quote("\u202f") == "\"\\u202f\"");
  CHECK(gotext::quote("\u00ad") == "\"\\u00ad\"");  // Cf
  CHECK(gotext::quote("\u0085") == "\"\\u0085\"");  // Cc beyond ASCII
  CHECK(gotext::quote("\ue000") == "\"\\ue000\"");  // Co
  CHECK(gotext::quote("\u0378") == "\"\\u0378\"");  // unassigned (Cn)
  CHECK(gotext::quote("\U000E0001") == "\"\\U000e0001\"");
  CHECK(gotext::quote("\U0010FFFF") == "\"\\U0010ffff\"");
  CHECK(gotext::quote("\U0001F600") == "\"\U0001F600\"");   // So
  CHECK(gotext::quote("\U0001FAE8") == "\"\U0001FAE8\"");   // assigned in Unicode 15.0
  CHECK(gotext::quote("\U0001FAE9") == "\"\\U0001fae9\"");  // not before Unicode 16.0
  CHECK(gotext::is_print(' '));
  CHECK_FALSE(gotext::is_print('\t'));
  CHECK(gotext::is_print(0x10FFFD) == false);
}

TEST_CASE("go_text: the time package's quote writes every byte from 0x80 up as \\x") {
  CHECK(gotext::time_quote("a\"\\\xc3\xa9\x01\x7f\xff") == "\"a\\\"\\\\\\xc3\\xa9\\x01\x7f\\xff\"");
}

TEST_CASE("go_text: time.ParseDuration") {
  const auto ok = [](const char* s) { return gotext::parse_duration(s); };
  const auto error = [](const char* s) {
    std::string err;
    CHECK_FALSE(gotext::parse_duration(s, &err).has_value());
    return err;
  };
  CHECK(ok("0") == 0);
  CHECK(ok("-0") == 0);
  CHECK(ok("1h30m") == std::int64_t{5400} * 1000000000);
  CHECK(ok("1.5h") == std::int64_t{5400} * 1000000000);
  CHECK(ok("-1.5s") == -1500000000);
  CHECK(ok(".5s") == 500000000);
  CHECK(ok("5.s") == 5000000000);
  CHECK(ok("1us") == 1000);
  CHECK(ok("1\u00b5s") == 1000);
  CHECK(ok("1\u03bcs") == 1000);
  CHECK(ok("0.000000001s") == 1);
  CHECK(ok("9223372036854775807ns") == std::numeric_limits<std::int64_t>::max());
  CHECK(ok("-9223372036854775808ns") == std::numeric_limits<std::int64_t>::min());
  CHECK(error("9223372036854775808ns") == "time: invalid duration \"9223372036854775808ns\"");
  CHECK(error("") == "time: invalid duration \"\"");
  CHECK(error("-") == "time: invalid duration \"-\"");
  CHECK(error(".s") == "time: invalid duration \".s\"");
  CHECK(error("1") == "time: missing unit in duration \"1\"");
  CHECK(error("1.2.3s") == "time: missing unit in duration \"1.2.3s\"");
  CHECK(error("1d") == "time: unknown unit \"d\" in duration \"1d\"");
  CHECK(error("1\xc3\xa9") == "time: unknown unit \"\\xc3\\xa9\" in duration \"1\\xc3\\xa9\"");
  CHECK(error("3000000h") == "time: invalid duration \"3000000h\"");
}
