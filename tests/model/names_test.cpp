// Rows follow k8s.io/apimachinery/pkg/util/validation/validation_test.go (TestIsDNS1123Label,
// TestIsDNS1123Subdomain, TestIsDNS1035Label, TestIsQualifiedName, TestIsValidLabelValue).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gpupool/error.hpp"
#include "gpupool/names.hpp"

using namespace gpupool;

namespace {
struct Row {
  std::string value;
  bool valid;
};
std::string rep(char c, std::size_t n) { return std::string(n, c); }
}  // namespace

TEST_CASE("dns1123 label") {
  const std::vector<Row> rows = {
      {"a", true},          {"ab", true},          {"abc", true},  {"a1", true},   {"a-1", true},  {"a--1--2--b", true},
      {"0", true},          {"01", true},          {"012", true},  {"1a", true},   {"1-a", true},  {"1--a--b--2", true},
      {rep('a', 63), true}, {"", false},           {"A", false},   {"ABC", false}, {"aBc", false}, {"A1", false},
      {"A-1", false},       {"1-A", false},        {"-", false},   {"a-", false},  {"-a", false},  {"1-", false},
      {"-1", false},        {"_", false},          {"a_", false},  {"_a", false},  {"a_b", false}, {"1_", false},
      {"_1", false},        {"1_2", false},        {".", false},   {"a.", false},  {".a", false},  {"a.b", false},
      {"1.", false},        {".1", false},         {"1.2", false}, {" ", false},   {"a ", false},  {" a", false},
      {"a b", false},       {rep('a', 64), false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.value);
    CHECK(is_dns1123_label(r.value) == r.valid);
    CHECK(dns1123_label_errors(r.value).empty() == r.valid);
    if (r.valid)
      CHECK_NOTHROW(validate_dns1123_label(r.value, "metadata.name"));
    else
      CHECK_THROWS_AS(validate_dns1123_label(r.value, "metadata.name"), ValidationError);
  }
}

TEST_CASE("dns1123 label messages") {
  CHECK(dns1123_label_errors("a.b") == std::vector<std::string>{"must not contain dots"});
  CHECK(dns1123_label_errors("A") ==
        std::vector<std::string>{
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
            "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"});
  auto too_long = dns1123_label_errors(rep('a', 64));
  REQUIRE(too_long.size() == 1);
  CHECK(too_long[0] == "must be no more than 63 characters");
  try {
    validate_dns1123_label("Team_A", "metadata.namespace");
    FAIL("expected a ValidationError");
  } catch (const ValidationError& e) {
    CHECK(e.field() == "metadata.namespace");
    CHECK(e.value() == "Team_A");
    CHECK(std::string(e.what()).find("metadata.namespace: invalid value \"Team_A\": a lowercase RFC 1123 label") == 0);
  }
}

TEST_CASE("dns1123 subdomain") {
  const std::vector<Row> rows = {
      {"a", true},
      {"a.b.c.d.e", true},
      {"aa.bb.cc.dd.ee", true},
      {"1.2.3.4.5", true},
      {"11.22.33.44.55", true},
      {"a-1.b-2", true},
      {"mpi-dist-launcher", true},
      {rep('a', 253), true},
      {rep('a', 63) + "." + rep('b', 63), true},
      {"", false},
      {"A", false},
      {"aBc", false},
      {"a.B", false},
      {"-", false},
      {"a-", false},
      {"-a", false},
      {"a.-b", false},
      {"a-.b", false},
      {"_", false},
      {"a_b", false},
      {".", false},
      {"a.", false},
      {".a", false},
      {"a..b", false},
      {" ", false},
      {"a b", false},
      {rep('a', 254), false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.value);
    CHECK(is_dns1123_subdomain(r.value) == r.valid);
    CHECK(dns1123_subdomain_errors(r.value).empty() == r.valid);
  }
  CHECK(dns1123_subdomain_errors("My.Job") ==
        std::vector<std::string>{
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"});
  CHECK(dns1123_subdomain_errors(rep('a', 254)) == std::vector<std::string>{"must be no more than 253 characters"});
  CHECK_THROWS_AS(validate_dns1123_subdomain("My.Job", "metadata.name"), ValidationError);
}

TEST_CASE("wildcard dns1123 subdomain") {
  // IsWildcardDNS1123Subdomain: "*." and a DNS-1123 subdomain (an Ingress's wildcard hosts).
  const std::vector<Row> rows = {
      {"*.example.com", true},
      {"*.a", true},
      {"*.a-b.c", true},
      {"*", false},
      {"*.", false},
      {"a.example", false},
      {"*.*.example.com", false},
      {"a.*.com", false},
      {"*.Example.com", false},
      {"**.a", false},
      {"*.a.", false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.value);
    CHECK(wildcard_dns1123_subdomain_errors(r.value).empty() == r.valid);
  }
  CHECK(wildcard_dns1123_subdomain_errors("a.*.com") ==
        std::vector<std::string>{
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist "
            "of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. "
            "'*.example.com', regex used for validation is "
            "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"});
  // Too long and (then) no wildcard: both messages, the length first.
  CHECK(wildcard_dns1123_subdomain_errors(rep('a', 254)).size() == 2);
  CHECK(wildcard_dns1123_subdomain_errors("*." + rep('a', 252)).front() == "must be no more than 253 characters");
}

TEST_CASE("dns1035 label") {
  const std::vector<Row> rows = {
      {"a", true},          {"ab", true},         {"abc", true},  {"a1", true},   {"a-1", true},
      {"a--1--2--b", true}, {rep('a', 63), true}, {"0", false},   {"01", false},  {"1a", false},
      {"1-a", false},       {"", false},          {"A", false},   {"aBc", false}, {"a-", false},
      {"-a", false},        {"a_b", false},       {"a.b", false}, {" a", false},  {rep('a', 64), false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.value);
    CHECK(is_dns1035_label(r.value) == r.valid);
    CHECK(dns1035_label_errors(r.value).empty() == r.valid);
  }
  try {
    validate_dns1035_label("1tensorboard", "metadata.name");
    FAIL("expected a ValidationError");
  } catch (const ValidationError& e) {
    CHECK(e.rule() ==
          "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
          "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
          "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')");
  }
}

TEST_CASE("qualified name") {
  const std::vector<Row> rows = {
      {"simple", true},
      {"now-with-dashes", true},
      {"1-starts-with-num", true},
      {"1234", true},
      {"simple/simple", true},
      {"now-with-dashes/simple", true},
      {"now-with-dashes/now-with-dashes", true},
      {"now.with.dots/simple", true},
      {"now-with.dashes-and.dots/simple", true},
      {"1-num.2-num/3-num", true},
      {"1234/5678", true},
      {"1.2.3.4/5678", true},
      {"Uppercase_Is_OK_123", true},
      {"example.com/Uppercase_Is_OK_123", true},
      {"requests.storage-foo", true},
      {"node-role.kubernetes.io/master", true},
      {"ssd_node", true},
      {rep('a', 63), true},
      {rep('a', 253) + "/" + rep('b', 63), true},
      {"nospecialchars%^=@", false},
      {"cantendwithadash-", false},
      {"-cantstartwithadash-", false},
      {"only/one/slash", false},
      {"Example.com/abc", false},
      {"example_com/abc", false},
      {"example.com/", false},
      {"/simple", false},
      {rep('a', 64), false},
      {rep('a', 254) + "/abc", false},
      {"", false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.value);
    CHECK(is_qualified_name(r.value) == r.valid);
    CHECK(qualified_name_errors(r.value).empty() == r.valid);
  }
}

TEST_CASE("qualified name messages") {
  const std::string name_regex =
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
      "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
      "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  CHECK(qualified_name_errors("/simple") == std::vector<std::string>{"prefix part must be non-empty"});
  CHECK(qualified_name_errors("example.com/") == std::vector<std::string>{"name part must be non-empty", name_regex});
  CHECK(qualified_name_errors("gpu node") == std::vector<std::string>{name_regex});
  CHECK(qualified_name_errors(rep('a', 64)) ==
        std::vector<std::string>{"name part must be no more than 63 characters"});
  auto prefix = qualified_name_errors("Example.com/abc");
  REQUIRE(prefix.size() == 1);
  CHECK(prefix[0].rfind("prefix part a lowercase RFC 1123 subdomain", 0) == 0);
  auto slashes = qualified_name_errors("a/b/c");
  REQUIRE(slashes.size() == 1);
  CHECK(slashes[0].rfind("a qualified name must consist of", 0) == 0);
  CHECK(slashes[0].find("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')") !=
        std::string::npos);
  try {
    validate_qualified_name("gpu node", "spec.taints[0].key");
    FAIL("expected a ValidationError");
  } catch (const ValidationError& e) {
    CHECK(e.field() == "spec.taints[0].key");
    CHECK(e.rule() == name_regex);
  }
}

TEST_CASE("label value") {
  const std::vector<Row> rows = {
      {"simple", true},
      {"now-with-dashes", true},
      {"1-starts-with-num", true},
      {"end-with-num-1", true},
      {"1234", true},
      {"", true},
      {"invalid", true},
      {"A_b.C-9", true},
      {rep('a', 63), true},
      {"nospecialchars%^=@", false},
      {"Tama-nui-te-rā.is.Māori.sun", false},
      {"\\backslashes\\are\\bad", false},
      {"-starts-with-dash", false},
      {"ends-with-dash-", false},
      {".starts.with.dot", false},
      {"ends.with.dot.", false},
      {"a/b", false},
      {rep('a', 64), false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.value);
    CHECK(is_label_value(r.value) == r.valid);
    CHECK(label_value_errors(r.value).empty() == r.valid);
  }
  CHECK(label_value_errors("-x") ==
        std::vector<std::string>{
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
            "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"});
  CHECK_THROWS_AS(validate_label_value("-x", "spec.taints[0].value"), ValidationError);
  CHECK_NOTHROW(validate_label_value("", "spec.taints[0].value"));
}

TEST_CASE("path segment name (apimachinery path.ValidatePathSegmentName)") {
  using V = std::vector<std::string>;
  CHECK(path_segment_errors("a.B_c").empty());
  CHECK(path_segment_errors(".") == V{"may not be '.'"});
  CHECK(path_segment_errors("..") == V{"may not be '..'"});
  CHECK(path_segment_errors("a/%b") == V{"may not contain '/'", "may not contain '%'"});
  // A generateName (IsValidPathSegmentPrefix): only the characters.
  CHECK(path_segment_errors("..", true).empty());
  CHECK(path_segment_errors("x/", true) == V{"may not contain '/'"});
}
