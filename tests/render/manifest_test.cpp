#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/manifest.hpp"

#include <boost/json/parse.hpp>

#include <fstream>
#include <sstream>
#include <string>

using namespace gpupool;
namespace json = boost::json;

namespace {
std::string fixture(const std::string& name) {
  std::ifstream in(std::string(GPUPOOL_SOURCE_DIR) + "/tests/render/data/" + name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
json::value scalar(const std::string& yaml_value) {
  auto objects = parse_manifests("v: " + yaml_value + "\n");
  REQUIRE(objects.size() == 1);
  return objects[0].at("v");
}
}  // namespace

TEST_CASE("reading YAML scalars: quoted stays a string, plain resolves per the YAML 1.2 core schema") {
  struct Row {
    std::string yaml;
    json::value expected;
  };
  const Row rows[] = {
      {"\"10000\"", json::value("10000")},
      {"'100'", json::value("100")},
      {"1.14.1", json::value("1.14.1")},
      {"10", json::value(std::int64_t{10})},
      {"-5", json::value(std::int64_t{-5})},
      {"0x1F", json::value(std::int64_t{31})},
      {"0o17", json::value(std::int64_t{15})},
      {"0.5", json::value(0.5)},
      {"1e3", json::value(1000.0)},
      {"true", json::value(true)},
      {"False", json::value(false)},
      {"yes", json::value("yes")},
      {"~", json::value(nullptr)},
      {"null", json::value(nullptr)},
      {"", json::value(nullptr)},
      {"10Gi", json::value("10Gi")},
      {"18446744073709551615", json::value(std::uint64_t{18446744073709551615ull})},
      {"99999999999999999999", json::value("99999999999999999999")},
      {"!!str 42", json::value("42")},
      {"|\n  line1\n  line2\n", json::value("line1\nline2\n")},
  };
  for (const auto& r : rows) {
    CAPTURE(r.yaml);
    CHECK(scalar(r.yaml) == r.expected);
  }
}

TEST_CASE("writing YAML: strings a reader would retype are quoted; other values keep their type") {
  struct Row {
    json::value value;
    std::string yaml;
  };
  const Row rows[] = {
      {json::value("10000"), "v: \"10000\"\n"},
      {json::value("1.14.1"), "v: 1.14.1\n"},
      {json::value("0.0.0.0"), "v: 0.0.0.0\n"},
      {json::value("1Gi"), "v: 1Gi\n"},
      {json::value("500m"), "v: 500m\n"},
      {json::value("1e3"), "v: \"1e3\"\n"},
      {json::value("yes"), "v: \"yes\"\n"},
      {json::value("on"), "v: \"on\"\n"},
      {json::value("true"), "v: \"true\"\n"},
      {json::value("null"), "v: \"null\"\n"},
      {json::value(""), "v: \"\"\n"},
      {json::value("2001-12-14"), "v: \"2001-12-14\"\n"},
      {json::value("1:30"), "v: \"1:30\"\n"},
      {json::value(".inf"), "v: \".inf\"\n"},
      {json::value("0x1F"), "v: \"0x1F\"\n"},
      {json::value("a: b"), "v: \"a: b\"\n"},
      {json::value("line1\nline2"), "v: \"line1\\nline2\"\n"},
      {json::value(std::int64_t{10}), "v: 10\n"},
      {json::value(0.5), "v: 0.5\n"},
      {json::value(1.0), "v: 1.0\n"},
      {json::value(true), "v: true\n"},
      {json::value(nullptr), "v: ~\n"},
      {json::value(json::object{}), "v: {}\n"},
      {json::value(json::array{}), "v: []\n"},
  };
  for (const auto& r : rows) {
    json::object o;
    o["v"] = r.value;
    CAPTURE(r.yaml);
    CHECK(to_yaml(json::value(o)) == r.yaml);
    CHECK(parse_manifests(r.yaml).at(0) == o);  // and it reads back as the same value
  }
}

TEST_CASE("a guide-style multi-document manifest reads with its types and unmodelled fields, and round-trips") {
  auto objects = parse_manifests(fixture("guide-style.yaml"), "guide-style.yaml");
  REQUIRE(objects.size() == 2);
  CHECK(objects[0].at("kind") == "PersistentVolumeClaim");
  CHECK(objects[0].at("spec").at("resources").at("requests").at("storage") == "2Gi");
  const json::object& d = objects[1];
  CHECK(d.at("metadata").at("annotations").is_null());
  CHECK(d.at("spec").at("replicas") == 1);
  CHECK(d.at("spec").at("revisionHistoryLimit") == 3);
  const json::value& c = d.at("spec").at("template").at("spec").at("containers").at(0);
  CHECK(c.at("resources").at("limits").at("cpu") == 4);
  CHECK(c.at("resources").at("requests").at("cpu") == 0.5);
  CHECK(c.at("env").at(0).at("value") == "10000");
  CHECK(c.at("env").at(1).at("value") == "100");
  CHECK(c.at("securityContext").at("privileged") == false);
  CHECK(c.at("lifecycle").at("preStop").at("exec").at("command").at(2) == "sleep 5");
  CHECK(d.at("spec").at("template").at("spec").at("hostNetwork") == true);

  CHECK(parse_manifests(to_yaml(objects)) == objects);
  CHECK(parse_manifests(to_json(objects)) == objects);
  // Key order is kept.
  CHECK(objects[0].begin()->key() == "kind");
  CHECK(parse_manifests(to_yaml(objects))[0].begin()->key() == "kind");
}

TEST_CASE("JSON text reads as JSON, and a v1 List is expanded into its items") {
  std::string text = R"({"apiVersion": "v1", "kind": "List", "items": [
      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"tag": "1.14.1", "n": "10"}},
      {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}, "spec": {"x": [1, 2.5, true, null, "\u00e9"]}}]})";
  auto objects = parse_manifests(text);
  REQUIRE(objects.size() == 2);
  CHECK(objects[0].at("data").at("n") == "10");
  CHECK(objects[1].at("spec") == json::parse(R"({"x": [1, 2.5, true, null, "\u00e9"]})"));
  CHECK(json::parse(to_json(objects)).at("kind") == "List");
  CHECK(json::parse(to_json(std::vector<json::object>{objects[0]})) == objects[0]);
}

TEST_CASE("bad manifests are ConfigErrors naming the file and line") {
  struct Row {
    std::string text;
    int line;
    std::string message_part;
  };
  const Row rows[] = {
      {"apiVersion: v1\nkind: [Pod\n", 3, "not valid YAML"},
      {"apiVersion: v1\n---\n- a\n- b\n", 3, "must be a mapping"},
      {"? [a, b]\n: c\n", 1, "keys must be strings"},
      {"kind: List\nitems: [1]\n", 1, "every item of a List"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    try {
      (void)parse_manifests(r.text, "m.yaml");
      FAIL("accepted");
    } catch (const ConfigError& e) {
      CHECK(e.file() == "m.yaml");
      CHECK(e.line() == r.line);
      CHECK(std::string(e.what()).find(r.message_part) != std::string::npos);
    }
  }
  CHECK(parse_manifests("---\n---\n").empty());
}

TEST_CASE("parse_yaml reads one document of any shape with the same scalar rules") {
  CHECK(parse_yaml("[1, \"2\", 2.5, yes, true]") == json::parse(R"([1, "2", 2.5, "yes", true])"));
  CHECK(parse_yaml("").is_null());
  CHECK(parse_yaml("{\"a\": {\"b\": null}}") == json::parse(R"({"a": {"b": null}})"));
  CHECK_THROWS_WITH_AS(parse_yaml("a: 1\n---\nb: 2\n", "body"), doctest::Contains("body:3"), ConfigError);
}

TEST_CASE("strings with YAML syntax in them survive a write and read") {
  const std::string texts[] = {"- x", "#x",       "a #b", "key: v", ": ",    "@x",      "`x",    "%x",       "!x",
                               "&x",  "*x",       "|",    ">",      " lead", "trail ",  "\ttab", "é ü 中文", "{a}",
                               "[a]", "a,b",      "'q'",  "\"dq\"", "?",     "-",       "---",   "...",      "x\ny\n",
                               "\\",  "C:\\path", "~x",   "=x",     "<<x",   "0.0.0.0", "1.14.1"};
  for (const auto& t : texts) {
    CAPTURE(t);
    json::object o;
    o["v"] = t;
    o[t] = "as key";
    CHECK(parse_manifests(to_yaml(json::value(o))).at(0) == o);
  }
}
