#include "gpupool/manifest.hpp"

#include "gpupool/error.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>
#include <boost/json/serialize.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <regex>
#include <sstream>

namespace gpupool {

namespace json = boost::json;

namespace {

// ---- writing ------------------------------------------------------------------------------

// Plain scalars a YAML reader (1.1 or 1.2: go-yaml, PyYAML, yaml-cpp users) may resolve to a
// non-string: booleans and nulls of YAML 1.1, and anything number-like. Quoting these keeps
// strings strings ("10000", "1.14.1", "yes", "0x1F").
bool needs_quotes(std::string_view s) {
  static constexpr std::array<std::string_view, 29> words{
      "y",    "Y",    "yes",  "Yes",   "YES",   "n",     "N",  "no", "No", "NO",
      "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off",
      "Off",  "OFF",  "null", "Null",  "NULL",  "~",     "<<", "=",  ""};
  for (auto w : words)
    if (s == w) return true;
  // Number-like forms of YAML 1.1 (a superset of 1.2's): ints with _ separators, hex/octal/
  // binary, floats, sexagesimal, .inf/.nan, and timestamps (yaml.org/type/{int,float,timestamp}).
  static const std::regex number_like(
      "[-+]?([0-9][0-9_]*)?(\\.[0-9_]*)?([eE][-+]?[0-9]+)?"
      "|[-+]?0x[0-9a-fA-F_]+|[-+]?0o?[0-7_]+|[-+]?0b[01_]+"
      "|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\\.[0-9_]*)?"
      "|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?");
  std::string text(s);
  if (std::regex_match(text, number_like) && text.find_first_of("0123456789") != std::string::npos) return true;
  for (auto special : {".inf", "-.inf", "+.inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"})
    if (text == special) return true;
  return false;
}

// Shortest text that reads back as the same double and as a float, not an integer.
std::string format_double(double d) {
  if (!std::isfinite(d)) throw ValidationError("value", fmt::format("{}", d), "JSON has no infinities or NaN");
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

void emit_string(YAML::Emitter& out, const std::string& s) {
  if (needs_quotes(s))
    out << YAML::DoubleQuoted << s;
  else if (s.find('\n') != std::string::npos)
    out << YAML::DoubleQuoted << s;  // keeps every character exactly (block scalars would chomp)
  else
    out << s;
}

void emit(YAML::Emitter& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::object: {
      const auto& o = v.get_object();
      if (o.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& kv : o) {
        out << YAML::Key;
        emit_string(out, std::string(kv.key()));
        out << YAML::Value;
        emit(out, kv.value());
      }
      out << YAML::EndMap;
      return;
    }
    case json::kind::array: {
      const auto& a = v.get_array();
      if (a.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const auto& item : a) emit(out, item);
      out << YAML::EndSeq;
      return;
    }
    case json::kind::string:
      emit_string(out, std::string(v.get_string()));
      return;
    case json::kind::bool_:
      out << (v.get_bool() ? "true" : "false");
      return;
    case json::kind::int64:
      out << std::to_string(v.get_int64());
      return;
    case json::kind::uint64:
      out << std::to_string(v.get_uint64());
      return;
    case json::kind::double_:
      out << format_double(v.get_double());
      return;
    case json::kind::null:
      out << YAML::Null;
      return;
  }
}

void write_json(std::string& out, const json::value& v, int indent) {
  std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  switch (v.kind()) {
    case json::kind::object: {
      const auto& o = v.get_object();
      if (o.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      bool first = true;
      for (const auto& kv : o) {
        if (!first) out += ",\n";
        first = false;
        out += pad + json::serialize(json::value(kv.key())) + ": ";
        write_json(out, kv.value(), indent + 2);
      }
      out += "\n" + std::string(static_cast<std::size_t>(indent), ' ') + "}";
      return;
    }
    case json::kind::array: {
      const auto& a = v.get_array();
      if (a.empty()) {
        out += "[]";
        return;
      }
      out += "[\n";
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i) out += ",\n";
        out += pad;
        write_json(out, a[i], indent + 2);
      }
      out += "\n" + std::string(static_cast<std::size_t>(indent), ' ') + "]";
      return;
    }
    case json::kind::double_:
      out += format_double(v.get_double());
      return;
    default:
      out += json::serialize(v);
      return;
  }
}

// ---- reading ------------------------------------------------------------------------------

int line_of(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

json::value plain_scalar(const std::string& s) {
  // YAML 1.2 core schema (yaml.org/spec/1.2.2 §10.3.2).
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  static const std::regex int_re("[-+]?[0-9]+");
  static const std::regex hex_re("0x[0-9a-fA-F]+");
  static const std::regex oct_re("0o[0-7]+");
  static const std::regex float_re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  auto parse_int = [&](std::string_view digits, int base, bool negative) -> json::value {
    std::uint64_t u = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), u, base);
    if (ec != std::errc() || ptr != digits.data() + digits.size()) return json::value(s);  // too large: keep text
    if (!negative) {
      if (u <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(u);
      return u;
    }
    if (u <= static_cast<std::uint64_t>(INT64_MAX) + 1) return static_cast<std::int64_t>(0 - u);
    return json::value(s);
  };
  if (std::regex_match(s, int_re)) {
    bool negative = s[0] == '-';
    std::string_view digits(s);
    if (s[0] == '-' || s[0] == '+') digits.remove_prefix(1);
    return parse_int(digits, 10, negative);
  }
  if (std::regex_match(s, hex_re)) return parse_int(std::string_view(s).substr(2), 16, false);
  if (std::regex_match(s, oct_re)) return parse_int(std::string_view(s).substr(2), 8, false);
  if (std::regex_match(s, float_re)) {
    double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) return d;
  }
  return json::value(s);
}

// YAML aliases can make a few hundred bytes expand into billions of nodes ("billion laughs"; found
// by fuzz/fuzz_manifest as a hang). go-yaml, which kubectl and the API server use, refuses such
// documents ("document contains excessive aliasing", yaml.v3 decode.go allowedAliasRatio: any
// ratio up to 400,000 decoded nodes). A document without aliases yields fewer nodes than it has
// bytes, so a budget of 400,000 + its size never rejects one.
//
// An alias inside the node its anchor names ("a: &x {b: *x}") makes yaml-cpp build a cycle, which a
// recursive conversion follows until the stack overflows (found by fuzz_manifest). go-yaml refuses
// it ("anchor 'x' value contains itself", yaml.v3 decode.go). A depth bound catches it, and also
// nesting no Kubernetes object has: yaml-cpp's own parser refuses documents nested deeper than 500
// levels (its DepthGuard), and a cycle bypasses that; the same bound applies here.
constexpr std::size_t kMaxYamlDepth = 500;

struct NodeBudget {
  std::size_t left;
  std::size_t depth = 0;
  void take(const YAML::Node& n, const std::string& file) {
    if (left == 0)
      throw ConfigError(file, "", "document contains excessive aliasing (YAML anchors expanding to too many nodes)",
                        line_of(n));
    --left;
  }
};

/// Counts one nesting level for as long as it lives.
struct Nesting {
  NodeBudget& budget;
  Nesting(NodeBudget& b, const YAML::Node& n, const std::string& file) : budget(b) {
    if (++budget.depth > kMaxYamlDepth) {
      --budget.depth;
      throw ConfigError(file, "",
                        fmt::format("nesting deeper than {} levels, or an alias (*name) inside the value of its own "
                                    "anchor (&name); an anchor's value must not contain itself",
                                    kMaxYamlDepth),
                        line_of(n));
    }
  }
  ~Nesting() { --budget.depth; }
  Nesting(const Nesting&) = delete;
  Nesting& operator=(const Nesting&) = delete;
};

json::value from_yaml(const YAML::Node& n, const std::string& file, NodeBudget& budget) {
  budget.take(n, file);
  Nesting nesting(budget, n, file);
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar: {
      const std::string& tag = n.Tag();
      if (tag == "!" || tag == "tag:yaml.org,2002:str") return json::value(n.Scalar());  // quoted / explicit string
      if (tag == "?") return plain_scalar(n.Scalar());
      json::value v = plain_scalar(n.Scalar());
      if (tag == "tag:yaml.org,2002:int" && !v.is_int64() && !v.is_uint64())
        throw ConfigError(file, "", fmt::format("\"{}\" is tagged !!int but is not an integer", n.Scalar()),
                          line_of(n));
      return v;
    }
    case YAML::NodeType::Sequence: {
      json::array a;
      for (const auto& item : n) a.push_back(from_yaml(item, file, budget));
      return a;
    }
    case YAML::NodeType::Map: {
      json::object o;
      for (const auto& kv : n) {
        if (!kv.first.IsScalar())
          throw ConfigError(file, "", "mapping keys must be strings (a Kubernetes object is JSON)", line_of(kv.first));
        o[kv.first.Scalar()] = from_yaml(kv.second, file, budget);
      }
      return o;
    }
  }
  return nullptr;
}

}  // namespace

std::string to_yaml(const json::value& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  emit(out, value);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

std::string to_yaml(const std::vector<json::object>& objects) {
  std::string text;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    if (i) text += "---\n";
    text += to_yaml(json::value(objects[i]));
  }
  return text;
}

std::string to_json(const json::value& value) {
  std::string out;
  write_json(out, value, 0);
  out += "\n";
  return out;
}

std::string to_json(const std::vector<json::object>& objects) {
  if (objects.size() == 1) return to_json(json::value(objects.front()));
  json::array items;
  for (const auto& o : objects) items.push_back(o);
  json::object list;
  list["apiVersion"] = "v1";
  list["kind"] = "List";
  list["items"] = std::move(items);
  return to_json(json::value(std::move(list)));
}

namespace {
// yaml-cpp 0.7's LoadAll loops forever, allocating a null document per turn, when a token cannot
// start a document node: a ',' outside a flow collection ("  - b\n ,"; found by fuzz_manifest as a
// timeout with 20+ GB of memory; upstream jbeder/yaml-cpp#1040, fixed in 0.8 by #1318/#1319).
// A first pass over the parser's events stops when a document starts at the very token the
// previous one did, i.e. the parser made no progress; only then does LoadAll run.
struct DocumentStarts : YAML::EventHandler {
  YAML::Mark last{};
  bool stuck = false, first = true;
  void OnDocumentStart(const YAML::Mark& mark) override {
    stuck = !first && mark.pos == last.pos;
    first = false;
    last = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

void check_parser_progress(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  while (parser.HandleNextDocument(starts))
    if (starts.stuck)
      throw ConfigError(file, "", "not valid YAML or JSON: unexpected token (e.g. a ',' outside [ ] or { })",
                        starts.last.line >= 0 ? starts.last.line + 1 : 0);
}

std::vector<YAML::Node> load_all(std::string_view text, const std::string& file) {
  try {
    std::string copy(text);
    check_parser_progress(copy, file);
    return YAML::LoadAll(copy);
  } catch (const YAML::Exception& e) {
    throw ConfigError(file, "", fmt::format("not valid YAML or JSON: {}", e.msg),
                      e.mark.line >= 0 ? e.mark.line + 1 : 0);
  }
}
}  // namespace

json::value parse_yaml(std::string_view text, std::string_view filename) {
  std::string file(filename);
  std::vector<YAML::Node> docs = load_all(text, file);
  if (docs.empty()) return nullptr;
  if (docs.size() > 1)
    throw ConfigError(file, "", "expected one YAML document, found several (separated by ---)", line_of(docs[1]));
  NodeBudget budget{400000 + text.size()};
  return from_yaml(docs.front(), file, budget);
}

std::vector<json::object> parse_manifests(std::string_view text, std::string_view filename) {
  std::string file(filename);
  std::vector<YAML::Node> docs = load_all(text, file);
  std::vector<json::object> out;
  NodeBudget budget{400000 + text.size()};
  for (const auto& doc : docs) {
    if (doc.IsNull() || !doc.IsDefined()) continue;
    if (!doc.IsMap())
      throw ConfigError(file, "", "each document must be a mapping (a Kubernetes object with apiVersion and kind)",
                        line_of(doc));
    json::value v = from_yaml(doc, file, budget);
    json::object& o = v.get_object();
    const json::value* kind = o.if_contains("kind");
    const json::value* items = o.if_contains("items");
    bool is_list = kind && kind->is_string() && std::string_view(kind->get_string()).ends_with("List") && items &&
                   items->is_array();
    if (!is_list) {
      out.push_back(std::move(o));
      continue;
    }
    for (const auto& item : items->get_array()) {
      if (!item.is_object()) throw ConfigError(file, "items", "every item of a List must be an object", line_of(doc));
      out.push_back(item.get_object());
    }
  }
  return out;
}

}  // namespace gpupool
