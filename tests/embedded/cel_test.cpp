// The CEL evaluator of x-kubernetes-validations rules (embedded/cel.hpp): expressions to values and
// errors, compile errors as cel-go words them, and rules run by crd::validate (messages, reasons,
// fieldPath, transition rules, ratcheting). The rows marked "oracle" are also rules of the
// fidelity scenario "cel" (tests/fidelity/data/cel-crd.json), whose goldens hold the real
// apiserver's verdict on them.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "embedded/cel.hpp"
#include "embedded/crd_schema.hpp"

using namespace gpupool;
using namespace gpupool::embedded;
namespace json = boost::json;

namespace {

const json::object& schema() {
  static const json::object s = json::parse(R"J({"type":"object","properties":{
    "n":{"type":"integer"},"d":{"type":"number"},"s":{"type":"string"},"b":{"type":"boolean"},
    "l":{"type":"array","items":{"type":"integer"}},"ls":{"type":"array","items":{"type":"string"}},
    "m":{"type":"object","additionalProperties":{"type":"string"}},
    "o":{"type":"object","properties":{"x":{"type":"integer"}}},
    "ios":{"x-kubernetes-int-or-string":true},"x-y":{"type":"string"},"namespace":{"type":"string"},
    "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true},"untyped":{"x-kubernetes-preserve-unknown-fields":true},
    "day":{"type":"string","format":"date"},"raw":{"type":"string","format":"byte"},
    "t":{"type":"string","format":"date-time"},"du":{"type":"string","format":"duration"}}})J")
                                    .as_object();
  return s;
}
const json::value& self() {
  static const json::value v = json::parse(R"J({"n":3,"d":1.5,"s":"Hello, World","b":true,"l":[3,1,2],"ls":["a","b"],
    "m":{"k":"v"},"o":{},"ios":"50%","x-y":"dash","namespace":"ns","free":{"a":1},"untyped":1,"day":"2024-01-02","raw":"aGk=","t":"2024-01-02T03:04:05Z","du":"1h30m"})J");
  return v;
}

std::string eval(std::string_view expr) {
  const cel::Program p = cel::compile(expr, &schema());
  if (!p.ast) return "compile: " + p.error;
  const cel::Result r = cel::evaluate(p, self(), nullptr, &schema());
  return r.kind == cel::Result::Kind::Error ? "error: " + r.text : r.text;
}

}  // namespace

TEST_CASE("cel: literals, operators, functions and macros evaluate as cel-go evaluates them") {
  const std::pair<const char*, const char*> rows[] = {
      // literals
      {"1", "1"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"0x1F", "31"},
      {"7u", "7u"},
      {"2.5e3", "2500"},
      {"'a\\tb'", "\"a\\tb\""},
      {"r'a\\tb'", "\"a\\\\tb\""},
      {"\"\"\"x\"y\"\"\"", "\"x\\\"y\""},
      {"'\\u00e9'", "\"é\""},
      {"b'ab'", "b\"ab\""},
      {"null", "null"},
      {"[dyn(1), dyn('a')]", "[1, \"a\"]"},
      {"{'a': 1}", "{\"a\": 1}"},
      {"[1, 'a']", "compile"},
      {"[1, dyn(2)]", "compile"},
      {"{'a': 1, 'b': 'x'}", "compile"},
      {"sets.contains([1, 2], [2])", "true"},
      {"sets.intersects([1], [2])", "false"},
      {"'a1b22'.findAll('[0-9]+')", "[\"1\", \"22\"]"},
      {"'a1b22'.find('[0-9]+')", "\"1\""},
      // arithmetic and CEL's overflow errors (oracle)
      {"self.n * 2 + 1", "7"},
      {"7 / 2", "3"},
      {"-7 % 3", "-1"},
      {"1.0 / 0.0", "+Inf"},
      {"9223372036854775807 + 1", "error: integer overflow"},
      {"-9223372036854775808 - 1", "error: integer overflow"},
      {"1 / 0", "error: division by zero"},
      {"1 % 0", "error: modulus by zero"},
      {"1u - 2u", "error: unsigned integer overflow"},
      {"'ab' + 'c'", "\"abc\""},
      {"[1] + [2]", "[1, 2]"},
      // comparisons, across numeric types
      {"1 < 1.5", "true"},
      {"2u > 1", "true"},
      {"'a' < 'b'", "true"},
      {"self.d == 1.5", "true"},
      {"[1, 2] == [1, 2]", "true"},
      {"{'a': 1} == {'a': 1}", "true"},
      {"dyn(1) == 1.0", "true"},
      {"dyn(1) == 'a'", "false"},
      // && and || absorb errors when the other side decides (oracle)
      {"false && 1 / 0 == 1", "false"},
      {"1 / 0 == 1 && false", "false"},
      {"1 / 0 == 1 || true", "true"},
      {"true && 1 / 0 == 1", "error: division by zero"},
      {"!true", "false"},
      {"self.n > 2 ? 'big' : 'small'", "\"big\""},
      // fields, has(), indexing, in
      {"has(self.o.x)", "false"},
      {"has(self.n)", "true"},
      {"self.o.x", "error: no such key: x"},
      {"self.l[1]", "1"},
      {"self.l[3]", "error: index out of bounds: 3"},
      {"self.m['k']", "\"v\""},
      {"self.m['z']", "error: no such key: z"},
      {"2 in self.l", "true"},
      {"'k' in self.m", "true"},
      {"'z' in self.m", "false"},
      // property names CEL cannot spell are escaped (apiserver/pkg/cel/escaping.go)
      {"self.x__dash__y", "\"dash\""},
      {"self.__namespace__", "\"ns\""},
      {"has(self.x__dash__y)", "true"},
      {"self.x_y", "compile"},
      // an object without properties has no fields, even with x-kubernetes-preserve-unknown-fields;
      // a field with no type is not visible (SchemaDeclType)
      {"self.free.a", "compile"},
      {"self.untyped", "compile"},
      {"self.day < self.t", "true"},
      {"self.raw == b'hi'", "true"},
      // size and strings
      {"size(self.s)", "12"},
      {"self.s.size()", "12"},
      {"size('é')", "1"},
      {"self.l.size()", "3"},
      {"self.s.startsWith('Hello')", "true"},
      {"self.s.endsWith('World')", "true"},
      {"self.s.contains(', ')", "true"},
      {"self.s.matches('^H.*d$')", "true"},
      {"self.s.lowerAscii()", "\"hello, world\""},
      {"self.s.upperAscii()", "\"HELLO, WORLD\""},
      {"'  x '.trim()", "\"x\""},
      {"'a,b,c'.split(',')", "[\"a\", \"b\", \"c\"]"},
      {"'a,b,c'.split(',', 2)", "[\"a\", \"b,c\"]"},
      {"self.ls.join('-')", "\"a-b\""},
      {"self.s.indexOf('o')", "4"},
      {"self.s.lastIndexOf('o')", "8"},
      {"self.s.substring(7)", "\"World\""},
      {"self.s.substring(0, 5)", "\"Hello\""},
      {"'abc'.charAt(1)", "\"b\""},
      {"'aaa'.replace('a', 'b', 2)", "\"bba\""},
      {"'abc'.reverse()", "compile"},
      {"'abc'.substring(2, 1)", "error: invalid substring range. start: 2, end: 1"},
      // macros
      {"self.l.all(x, x > 0)", "true"},
      {"self.l.exists(x, x > 2)", "true"},
      {"self.l.exists_one(x, x > 1)", "false"},
      {"self.l.map(x, x * 2)", "[6, 2, 4]"},
      {"self.l.filter(x, x > 1)", "[3, 2]"},
      {"self.l.map(x, x > 1, x * 10)", "[30, 20]"},
      {"self.m.all(k, k == 'k')", "true"},
      {"[0, 1].all(x, 1 / x > 0)", "error: division by zero"},
      {"[0, 1].all(x, 1 / x < 0)", "false"},
      {"[1, 0].exists(x, 1 / x > 0)", "true"},
      {"[0].all(x, 1 / x > 0)", "error: division by zero"},
      // the Kubernetes list library
      {"self.l.isSorted()", "false"},
      {"self.l.sum()", "6"},
      {"self.l.min()", "1"},
      {"self.l.max()", "3"},
      {"[1, 2].indexOf(2)", "1"},
      {"[].min()", "error: min(list) argument must not be empty"},
      // conversions
      {"int('42')", "42"},
      {"int(2.9)", "2"},
      {"uint(3)", "3u"},
      {"double(1)", "1"},
      {"string(1.5)", "\"1.5\""},
      {"string(self.n)", "\"3\""},
      {"int(self.s)", "error: type conversion error from 'string' to 'int'"},
      {"uint(self.n - 4)", "error: unsigned integer overflow"},
      {"int(self.d * 1e19)", "error: integer overflow"},
      {"int('x')", "compile"},
      {"duration('x')", "compile"},
      {"timestamp('2024-13-01T00:00:00Z')", "compile"},
      {"bool('true')", "true"},
      {"string(1e21)", "\"1e+21\""},
      {"string(1000000.0)", "\"1e+06\""},
      // the Kubernetes quantity library
      {"quantity('1.5Gi').isGreaterThan(quantity('1G'))", "true"},
      {"quantity('500m').compareTo(quantity('0.5'))", "0"},
      {"quantity('1k') == quantity('1000')", "true"},
      {"quantity('50k').add(20) == quantity('50020')", "true"},
      {"sign(quantity('50k').sub(quantity('100k')))", "-1"},
      {"quantity('2k').asInteger()", "2000"},
      {"quantity('1.5').isInteger()", "false"},
      {"quantity('1.5').asApproximateFloat()", "1.5"},
      {"isQuantity('1x')", "false"},
      {"quantity(self.s)",
       "error: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
      {"quantity('1.5').asInteger()", "error: cannot convert value to integer"},
      {"quantity('1').add('2')", "compile"},
      // type(), optional field selection, timestamp and duration accessors
      {"type(self.ios) == string", "true"},
      {"type(self.n) == int", "true"},
      {"type(self.l) == list", "true"},
      {"self.?n.orValue(1)", "3"},
      {"self.o.?x.orValue(7)", "7"},
      {"self.o.?x.hasValue()", "false"},
      {"self.m[?'k'].orValue('')", "\"v\""},
      {"self.m[?'z'].orValue('none')", "\"none\""},
      {"self.l[?5].hasValue()", "false"},
      {"self.t.getFullYear()", "2024"},
      {"self.t.getMonth()", "0"},
      {"self.t.getDate()", "2"},
      {"self.t.getDayOfMonth()", "1"},
      {"self.t.getDayOfWeek()", "2"},
      {"self.t.getDayOfYear()", "1"},
      {"self.t.getHours()", "3"},
      {"self.t.getHours('+02:00')", "5"},
      {"self.t.getMinutes()", "4"},
      {"self.t.getSeconds()", "5"},
      {"self.du.getMinutes()", "90"},
      {"quantity('1').sign()", "compile"},
      {"sign(quantity('-1'))", "-1"},
      // ext.Strings format (its list of arguments may mix types)
      {"'%s-%d-%s'.format(['a', 1, true])", "\"a-1-true\""},
      {"'%.2f|%e|%.1e'.format([1234.5, 1234.5, 0.000123])",
       // (strconv.Quote escapes U+202F NARROW NO-BREAK SPACE: a space separator, not IsPrint)
       "\"1,234.50|1.234500\\u202f×\\u202f10⁰³|1.230000\\u202f×\\u202f10⁻⁰⁴\""},
      {"'%s'.format([[1, 'a', 2.5]])", "\"[1, \\\"a\\\", 2.500000]\""},
      {"'%x %X %o %b'.format([255, 'hi', 8, 5])", "\"ff 6869 10 101\""},
      {"'%s %s'.format([self.t, self.du])", "\"2024-01-02T03:04:05Z 5400s\""},
      {"'100%%'.format([])", "\"100%\""},
      {"'%d'.format(self.ls)",
       "error: error during formatting: decimal clause can only be used on integers, was given string"},
      {"'%d %d'.format(self.l)", "\"3 1\""},
      {"'%d %d %d %d'.format(self.l)", "error: index 3 out of range"},
      {"'%d'.format(['x'])", "compile"},
      {"'%d %d'.format([1])", "compile"},
      // the Kubernetes URL library
      {"isURL('https://user@example.com:8443/a/b?x=1&y=2&x=3')", "true"},
      {"isURL('example.com')", "false"},
      {"isURL('/a/b')", "true"},
      {"url('HTTPS://Example.com:8443/a').getScheme()", "\"https\""},
      {"url('https://example.com:8443/a').getHost()", "\"example.com:8443\""},
      {"url('https://[::1]:80/').getHostname()", "\"::1\""},
      {"url('https://example.com:8443/a').getPort()", "\"8443\""},
      {"url('https://example.com/a%20b').getEscapedPath()", "\"/a%20b\""},
      {"url('https://e.com/?x=1&y=a+b&x=3').getQuery()", "{\"x\": [\"1\", \"3\"], \"y\": [\"a b\"]}"},
      {"url(self.s)",
       "error: URL parse error during conversion from string: parse \"Hello, World\": invalid URI for request"},
      // the Kubernetes IP and CIDR libraries
      {"isIP('01.2.3.4')", "false"},
      {"string(ip('2001:DB8:0:0::1'))", "\"2001:db8::1\""},
      {"ip('fe80::1').isLinkLocalUnicast()", "true"},
      {"ip.isCanonical('2001:DB8::1')", "false"},
      {"ip('10.0.0.1').isGlobalUnicast()", "true"},
      {"isIP('::ffff:1.2.3.4')", "false"},
      {"string(cidr('10.1.2.3/8').masked())", "\"10.0.0.0/8\""},
      {"cidr('10.0.0.0/8').containsIP('10.2.3.4')", "true"},
      {"cidr('10.1.0.0/16').containsCIDR(cidr('10.0.0.0/8'))", "false"},
      {"cidr('2001:db8::/32').containsIP('2001:db8:1::1')", "true"},
      {"cidr(self.s)",
       "error: network address parse error during conversion from string: network address parse error during "
       "conversion from string: netip.ParsePrefix(\"Hello, World\"): no '/'"},
      // int-or-string is dyn: either overload at run time
      {"self.ios == '50%'", "true"},
      {"self.ios + 1", "error: no such overload"},
      // durations and timestamps (format date-time and duration are typed so)
      {"self.du == duration('90m')", "true"},
      {"string(self.du)", "\"5400s\""},
      {"self.t + duration('1h') > self.t", "true"},
      {"string(self.t)", "\"2024-01-02T03:04:05Z\""},
      {"timestamp('2024-01-02T04:04:05+01:00') == self.t", "true"},
      {"string(duration('1.5s'))", "\"1.5s\""},
  };
  for (const auto& row : rows) {
    const char* expr = row.first;
    const char* want = row.second;
    CAPTURE(std::string(expr));
    if (std::string_view(want) == "compile")
      CHECK(eval(expr).starts_with("compile: "));
    else
      CHECK(eval(expr) == want);
  }
}

TEST_CASE("cel: compile errors as cel-go reports them (oracle)") {
  CHECK(eval("self.nosuch > 1") ==
        "compile: ERROR: <input>:1:5: undefined field 'nosuch'\n | self.nosuch > 1\n | ....^");
  CHECK(eval("self.n == 'x'") ==
        "compile: ERROR: <input>:1:8: found no matching overload for '_==_' applied to '(int, string)'\n | self.n == "
        "'x'\n | .......^");
  CHECK(eval("foo(self.n)") ==
        "compile: ERROR: <input>:1:4: undeclared reference to 'foo' (in container '')\n | foo(self.n)\n | ...^");
  CHECK(eval("self.s.startsWith(1)") ==
        "compile: ERROR: <input>:1:18: found no matching overload for 'startsWith' applied to 'string.(int)'\n"
        " | self.s.startsWith(1)\n | .................^");
  CHECK(eval("self.n +") ==
        "compile: ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', "
        "'true', "
        "'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.n +\n | ........^");
  // ANTLR's wording: extraneous when dropping the token lets the parse go on, else mismatched (oracle)
  CHECK(eval("self.n > > 1")
            .starts_with("compile: ERROR: <input>:1:10: Syntax error: extraneous input '>' expecting {'['"));
  CHECK(eval("self.n self.n") ==
        "compile: ERROR: <input>:1:8: Syntax error: mismatched input 'self' expecting <EOF>\n | self.n self.n\n | "
        ".......^");
  CHECK(eval("self.n > 1)") ==
        "compile: ERROR: <input>:1:11: Syntax error: extraneous input ')' expecting <EOF>\n | self.n > 1)\n | "
        "..........^");
  CHECK(eval("(self.n > 1") ==
        "compile: ERROR: <input>:1:12: Syntax error: missing ')' at '<EOF>'\n | (self.n > 1\n | ...........^");
  CHECK(
      eval("[1, 2") ==
      "compile: ERROR: <input>:1:6: Syntax error: mismatched input '<EOF>' expecting {']', ','}\n | [1, 2\n | .....^");
  CHECK(eval("self.") ==
        "compile: ERROR: <input>:1:6: Syntax error: no viable alternative at input '.'\n | self.\n | .....^");
  CHECK(eval("self.n # 1") ==
        "compile: ERROR: <input>:1:8: Syntax error: token recognition error at: '#'\n | self.n # 1\n | .......^\n"
        "ERROR: <input>:1:10: Syntax error: extraneous input '1' expecting <EOF>\n | self.n # 1\n | .........^");
  CHECK(eval("has(self)") == "compile: ERROR: <input>:1:5: invalid argument to has() macro\n | has(self)\n | ....^");
  CHECK(eval("99999999999999999999 > 1") ==
        "compile: ERROR: <input>:1:1: invalid int literal\n | 99999999999999999999 > 1\n | ^");
  CHECK(eval("'abc'.matches('[')") ==
        "compile: ERROR: <input>:1:15: invalid matches argument\n | 'abc'.matches('[')\n | ..............^");
  // cel-go's limits (oracle): 250 nested rules, a visit 250 deep, 100,000 code points; long runs of
  // ! and - and long && / || chains are flat, and nothing here recurses without bound.
  auto repeat = [](std::string_view x, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out += x;
    return out;
  };
  CHECK(eval(repeat("(", 300) + "true" + repeat(")", 300)) ==
        "compile: ERROR: <input>:-1:0: expression recursion limit exceeded: 250");
  CHECK(eval("1" + repeat(" + 1", 5000) + " > 0") == "compile: ERROR: <input>:-1:0: max recursion depth exceeded");
  CHECK(eval("'" + repeat("a", 100001) + "' == ''") ==
        "compile: ERROR: <input>:-1:0: expression code point size exceeds limit: size: 100009, limit 100000");
  CHECK(eval(repeat("!", 30001) + "true") == "false");
  CHECK(eval(repeat("-", 300) + "1 < 0") == "false");
  CHECK(eval("true" + repeat(" && true", 12000)) == "true");
  CHECK(
      eval("!-1") ==
      "compile: ERROR: <input>:1:1: found no matching overload for '!_' applied to '(int)'\n | !-1\n | ^");  // -1 is a
                                                                                                             // literal
  // Regular expressions run without recursion: a long input does not exhaust the stack; one too
  // long for the matcher's heap budget (32 MiB) is an error, where RE2 would finish.
  {
    const json::object sch = json::parse(R"J({"type":"object","properties":{"s":{"type":"string"}}})J").as_object();
    const cel::Program p =
        cel::compile("self.s.matches('^(a|b)*$') && !self.s.matches('^a*$') && self.s.find('a+b').size() > 0", &sch);
    REQUIRE(p.ast);
    const json::value long_one = json::object{{"s", std::string(300'000, 'a') + "b"}};
    CHECK(cel::evaluate(p, long_one, nullptr, &sch).is_true);
    const json::value huge = json::object{{"s", std::string(3'000'000, 'a') + "b"}};
    CHECK(cel::evaluate(p, huge, nullptr, &sch, false, false, UINT64_MAX).text ==
          "Ran out of stack space trying to match the regular expression.");
    // The per-call cost limit stops it first (celconfig.PerCallLimit).
    CHECK(cel::evaluate(p, huge, nullptr, &sch).text == "operation cancelled: actual cost limit exceeded");
    CHECK(eval("'ab\\ncd'.matches('^cd')") == "false");
    CHECK(eval("'ab\\ncd'.matches('b.c')") == "false");
  }
  CHECK(cel::compile("self.n", &schema()).result_type == "int");
  CHECK(cel::compile("self.ios", &schema()).result_type == "dyn");
  // oldSelf is declared like self; a rule that names it is a transition rule.
  CHECK(cel::compile("self.n == oldSelf.n", &schema()).uses_old_self);
  CHECK_FALSE(cel::compile("self.n == 1", &schema()).uses_old_self);
  const cel::Program opt = cel::compile("!oldSelf.hasValue() || oldSelf.value().n <= self.n", &schema(), false, true);
  REQUIRE(opt.ast);
  CHECK(cel::evaluate(opt, self(), nullptr, &schema(), false, true).is_true);
  const json::value bigger = json::parse(R"J({"n":5})J");
  CHECK_FALSE(cel::evaluate(opt, self(), &bigger, &schema(), false, true).is_true);
}

namespace {

crd::Schema rules_schema() {
  crd::Schema s;
  s.root = std::make_shared<const json::object>(json::parse(R"J({"type":"object","properties":{
    "spec":{"type":"object",
      "x-kubernetes-validations":[
        {"rule":"self.min <= self.max","message":"min must not exceed max","fieldPath":".min"},
        {"rule":"size(self.name) < 6","messageExpression":"'name ' + self.name + ' is too long'"},
        {"rule":"!has(self.banned)","reason":"FieldValueForbidden","message":"banned is forbidden"},
        {"rule":"self.min >= oldSelf.min","message":"min may only grow"}],
      "properties":{"min":{"type":"integer"},"max":{"type":"integer"},"name":{"type":"string"},"banned":{"type":"string"},
                    "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
                      "items":{"type":"object","properties":{"name":{"type":"string"},"port":{"type":"integer","maximum":100}},
                               "x-kubernetes-validations":[{"rule":"self.port % 2 == 0","message":"even ports only"}]}}}}}})J")
                                                    .as_object());
  s.has_validation_rules = true;
  return s;
}

json::object with_spec(std::string_view spec) {
  return json::object{
      {"apiVersion", "x/v1"}, {"kind", "W"}, {"metadata", json::object{{"name", "w"}}}, {"spec", json::parse(spec)}};
}

std::string causes(const std::vector<StatusCause>& cs) {
  std::string out;
  for (const auto& c : cs) out += c.field + " " + c.reason + " " + c.message + "\n";
  return out;
}

}  // namespace

TEST_CASE("crd::validate runs x-kubernetes-validations: message, messageExpression, reason, fieldPath (oracle)") {
  const crd::Schema s = rules_schema();
  CHECK(causes(crd::validate(with_spec(R"J({"min":1,"max":2,"name":"abc"})J"), nullptr, s)).empty());
  CHECK(causes(crd::validate(with_spec(R"J({"min":3,"max":2,"name":"abcdefg","banned":"x"})J"), nullptr, s)) ==
        "spec.min FieldValueInvalid Invalid value: \"object\": min must not exceed max\n"
        "spec FieldValueInvalid Invalid value: \"object\": name abcdefg is too long\n"
        "spec FieldValueForbidden Forbidden: banned is forbidden\n");
  // A runtime error names the rule; the transition rule waits for an update.
  CHECK(
      causes(crd::validate(with_spec(R"J({"max":2,"name":"a"})J"), nullptr, s)) ==
      "spec FieldValueInvalid Invalid value: \"object\": no such key: min evaluating rule: min must not exceed max\n");
  const json::object old = with_spec(R"J({"min":2,"max":5,"name":"a"})J");
  CHECK(causes(crd::validate(with_spec(R"J({"min":1,"max":5,"name":"a"})J"), &old, s)) ==
        "spec FieldValueInvalid Invalid value: \"object\": min may only grow\n");
  CHECK(causes(crd::validate(with_spec(R"J({"min":1,"max":5,"name":"a","ports":[{"name":"a","port":3}]})J"), nullptr,
                             s)) == "spec.ports[0] FieldValueInvalid Invalid value: \"object\": even ports only\n");
}

TEST_CASE("crd::validate ratchets: errors on values an update leaves unchanged are dropped or become warnings") {
  const crd::Schema s = rules_schema();
  // An odd port and a port over the maximum, stored before the rules were added.
  const json::object old =
      with_spec(R"J({"min":1,"max":5,"name":"a","ports":[{"name":"a","port":101},{"name":"b","port":4}]})J");
  // Another field changes; the bad item stays as it was: no errors, the failed rule is a warning.
  std::vector<std::string> warnings;
  CHECK(
      causes(crd::validate(
                 with_spec(R"J({"min":1,"max":6,"name":"a","ports":[{"name":"a","port":101},{"name":"b","port":4}]})J"),
                 &old, s, &warnings))
          .empty());
  CHECK(warnings == std::vector<std::string>{"spec.ports[0]: Invalid value: \"object\": even ports only"});
  // The same item changed: its errors count again.
  warnings.clear();
  CHECK(causes(crd::validate(
            with_spec(R"J({"min":1,"max":5,"name":"a","ports":[{"name":"a","port":103},{"name":"b","port":4}]})J"),
            &old, s, &warnings)) ==
        "spec.ports[0].port FieldValueInvalid Invalid value: 103: spec.ports[0].port in body should be less than or "
        "equal to 100\n"
        "spec.ports[0] FieldValueInvalid Invalid value: \"object\": even ports only\n");
  CHECK(warnings.empty());
  // On create nothing is ratcheted.
  CHECK_FALSE(causes(crd::validate(old, nullptr, s)).empty());
}

TEST_CASE("crd::validate_definition refuses rules that do not compile, with apiextensions' message (oracle)") {
  const json::object crd =
      json::parse(R"J({"spec":{"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"type":"object",
    "properties":{"spec":{"type":"object","properties":{"n":{"type":"integer"}},
      "x-kubernetes-validations":[{"rule":"self.n > 1"},{"rule":"self.nosuch > 1"},{"rule":"self.n"},
                                  {"rule":"self.n > 1","messageExpression":"1"}]}}}}}]}})J")
          .as_object();
  CHECK(causes(crd::validate_definition(crd)) ==
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule FieldValueInvalid Invalid "
        "value: "
        "apiextensions.ValidationRule{Rule:\"self.nosuch > 1\", Message:\"\", MessageExpression:\"\", "
        "Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: "
        "compilation failed: "
        "ERROR: <input>:1:5: undefined field 'nosuch'\n | self.nosuch > 1\n | ....^\n"
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[2].rule FieldValueInvalid Invalid "
        "value: "
        "apiextensions.ValidationRule{Rule:\"self.n\", Message:\"\", MessageExpression:\"\", "
        "Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: cel "
        "expression must "
        "evaluate to a bool\n"
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[3].messageExpression "
        "FieldValueInvalid Invalid "
        "value: apiextensions.ValidationRule{Rule:\"self.n > 1\", Message:\"\", MessageExpression:\"1\", "
        "Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: "
        "messageExpression "
        "must evaluate to a string\n");
}

TEST_CASE("crd::validate stops rules that cost too much, as the runtime cost budget does") {
  crd::Schema s;
  s.root = std::make_shared<const json::object>(json::parse(R"J({"type":"object","properties":{
    "spec":{"type":"object","properties":{"l":{"type":"array","items":{"type":"integer"}}},
      "x-kubernetes-validations":[{"rule":"self.l.all(x, self.l.all(y, self.l.all(z, x + y + z >= 0)))"},
                                  {"rule":"size(self.l) < 1000"}]}}})J")
                                                    .as_object());
  s.has_validation_rules = true;
  json::array l;
  for (int i = 0; i < 200; ++i) l.push_back(i);
  // 8,000,000 iterations: the first rule is cancelled, and no rule runs after it.
  CHECK(
      causes(crd::validate(with_spec(json::serialize(json::object{{"l", l}})), nullptr, s)) ==
      "spec FieldValueInvalid Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further "
      "validation rules will be run due to call cost exceeds limit for rule: self.l.all(x, self.l.all(y, self.l.all(z, "
      "x + y + z >= 0)))\n");
  json::array small{1, 2};
  CHECK(causes(crd::validate(with_spec(json::serialize(json::object{{"l", small}})), nullptr, s)).empty());
}
