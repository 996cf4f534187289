#include "embedded/typecheck.hpp"

#include "embedded/crd_schema.hpp"
#include "embedded/patch.hpp"
#include "embedded/schema.hpp"

#include <cctype>
#include <charconv>
#include <map>
#include <set>
#include <string_view>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

namespace gpupool::embedded {

namespace json = boost::json;

std::optional<std::string> type_error(const ResourceType& t, const json::object& obj) {
  // Kubernetes' published schema of the kind (embedded/schema.hpp); a custom resource's metadata
  // is an ObjectMeta (the rest is its structural schema's). Without pruning, decoding only reads
  // the object. An error of a type that decodes itself (a Time) stops decoding and wins.
  auto d = t.schema ? schema::decode_object_meta(const_cast<json::object&>(obj), false)
                    : schema::decode(t.group, t.version, t.kind, const_cast<json::object&>(obj), false);
  return d.decode_error ? d.decode_error : d.type_error;
}

void check_patched_types(const ResourceType& t, json::object& patched, const json::value* strategic_patch) {
  // apiserver/pkg/endpoints/handlers/patch.go: errors.NewInvalid(schema.GroupKind{}, "",
  // field.ErrorList{field.Invalid(field.NewPath("patch"), <patched object or patch>, err)}). A
  // JSON or merge patch's result is decoded from JSON (the patched object is quoted); a strategic
  // merge patch's is converted from its map (applyPatchToObject: FromUnstructured's error, the
  // patch quoted with %+v as the merge left it).
  std::string value, err;
  if (strategic_patch) {
    auto e = schema::converter_error(t.group, t.version, t.kind, patched);
    // Then the versioned object is converted to the internal one (patch.go applyPatchToObject's
    // unsafeConvertor.Convert), whose error is returned as it is: a 500 with its message.
    if (!e) {
      if (auto c = schema::conversion_error(t.group, t.kind, patched)) throw StatusError(500, "", *c);
      return;
    }
    value = go_print(strategic_patch_consumed(*strategic_patch));
    err = *e;
  } else {
    auto e = type_error(t, patched);
    if (!e) return;
    value = json::serialize(patched);
    err = *e;
  }
  const std::string cause = fmt::format("Invalid value: {}: {}", go_quote(value), err);
  throw StatusError(422, "Invalid", fmt::format(" \"\" is invalid: patch: {}", cause), "", "", "",
                    {{"FieldValueInvalid", cause, "patch"}});
}

FieldValidation field_validation(std::string_view value, std::string_view options_kind) {
  if (value.empty() || value == "Warn") return FieldValidation::Warn;
  if (value == "Strict") return FieldValidation::Strict;
  if (value == "Ignore") return FieldValidation::Ignore;
  // apimachinery meta/v1/validation ValidateFieldValidation: NotSupported, the values sorted.
  const std::string cause =
      fmt::format("Unsupported value: {}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"", go_quote(value));
  throw StatusError::invalid_options(options_kind, {{"FieldValueNotSupported", cause, "fieldValidation"}});
}

namespace {

std::string unknown_list(const std::vector<std::string>& fields) {
  std::string out = "strict decoding error: ";
  for (std::size_t i = 0; i < fields.size(); ++i)
    out += fmt::format("{}unknown field {}", i ? ", " : "", go_quote(fields[i]));
  return out;
}

void warn_unknown(const std::vector<std::string>& fields, std::vector<std::string>* warnings) {
  if (!warnings) return;
  for (const auto& f : fields) warnings->push_back(fmt::format("unknown field {}", go_quote(f)));
}

}  // namespace

namespace {

// A custom resource's decoding (customresource_handler.go schemaCoercingDecoder): its metadata as
// ObjectMeta, the rest pruned by the structural schema; then the codec's defaulting. The unknown
// fields: metadata's first, then the pruned ones, sorted.
schema::Decoded decode_custom(const ResourceType& t, json::object& obj) {
  schema::Decoded d = schema::decode_object_meta(obj, true);
  for (auto& f : crd::coerce(obj, *t.schema)) d.unknown_fields.push_back(std::move(f));
  crd::apply_defaults(obj, *t.schema);
  return d;
}

}  // namespace

void decode_body(const ResourceType& t, json::object& body, FieldValidation fv, std::vector<std::string>* warnings) {
  // apimachinery runtime/serializer: NewBadRequest("<Kind> in version \"<v>\" cannot be handled as a <Kind>: <err>")
  auto refuse = [&](const std::string& err) {
    return StatusError::bad_request(
        fmt::format("{} in version \"{}\" cannot be handled as a {}: {}", t.kind, t.version, t.kind, err));
  };
  const auto d = t.schema ? decode_custom(t, body) : schema::decode(t.group, t.version, t.kind, body, true);
  if (d.decode_error) throw refuse(*d.decode_error);
  if (d.type_error) throw refuse(*d.type_error);
  if (d.unknown_fields.empty()) return;
  if (fv == FieldValidation::Strict) throw refuse(unknown_list(d.unknown_fields));
  if (fv == FieldValidation::Warn) warn_unknown(d.unknown_fields, warnings);
}

void decode_patched(const ResourceType& t, json::object& patched, FieldValidation fv,
                    std::vector<std::string>* warnings) {
  const std::string before = fv == FieldValidation::Strict ? json::serialize(patched) : std::string();
  const auto d = t.schema ? decode_custom(t, patched) : schema::decode(t.group, t.version, t.kind, patched, true);
  if (d.unknown_fields.empty()) return;
  if (fv == FieldValidation::Strict) {
    const std::string cause = fmt::format("Invalid value: {}: {}", go_quote(before), unknown_list(d.unknown_fields));
    throw StatusError(422, "Invalid", fmt::format(" \"\" is invalid: patch: {}", cause), "", "", "",
                      {{"FieldValueInvalid", cause, "patch"}});
  }
  if (fv == FieldValidation::Warn) warn_unknown(d.unknown_fields, warnings);
}

namespace {

// encoding/json quoteChar: a byte as the scanner's errors show it, strconv.Quote(string(c)) (the
// rune U+0000..U+00FF) between single quotes.
std::string go_quote_char(unsigned char c) {
  if (c == '\'') return "'\\''";
  if (c == '"') return "'\"'";
  std::string rune;
  if (c < 0x80) {
    rune = std::string(1, static_cast<char>(c));
  } else {
    rune = {static_cast<char>(0xc0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3f))};
  }
  const std::string quoted = gotext::quote(rune);
  return "'" + quoted.substr(1, quoted.size() - 2) + "'";
}

// A recursive reading of one JSON value in the order encoding/json's scanner meets its bytes,
// stopping at the first error with the scanner's wording.
struct GoScan {
  std::string_view s;
  std::size_t i = 0;
  std::optional<std::string> err;

  bool end() const { return i >= s.size(); }
  unsigned char at() const { return static_cast<unsigned char>(s[i]); }
  bool fail(std::string_view context) {
    if (!err)
      err =
          end() ? "unexpected end of JSON input" : fmt::format("invalid character {} {}", go_quote_char(at()), context);
    return false;
  }
  // Where the input ends inside a literal, a number or an escape, the scanner's end-of-input step
  // (scanner.eof feeds it a space) fails on that space.
  bool fail_at_space(std::string_view context) {
    if (!err) err = fmt::format("invalid character {} {}", go_quote_char(end() ? ' ' : at()), context);
    return false;
  }
  void ws() {
    while (!end() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  static bool digit(unsigned char c) { return c >= '0' && c <= '9'; }
  bool value() {
    ws();
    if (end()) return fail("");
    switch (at()) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        return string();
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        if (at() == '-' || digit(at())) return number();
        return fail("looking for beginning of value");
    }
  }
  bool literal(std::string_view word) {
    for (std::size_t k = 0; k < word.size(); ++k, ++i)
      if (end() || at() != static_cast<unsigned char>(word[k]))
        return fail_at_space(
            fmt::format("in literal {} (expecting {})", word, go_quote_char(static_cast<unsigned char>(word[k]))));
    return true;
  }
  bool number() {
    if (at() == '-') {
      ++i;
      if (end() || !digit(at())) return fail_at_space("in numeric literal");
    }
    if (at() == '0') {
      ++i;
    } else {
      while (!end() && digit(at())) ++i;
    }
    if (!end() && at() == '.') {
      ++i;
      if (end() || !digit(at())) return fail_at_space("after decimal point in numeric literal");
      while (!end() && digit(at())) ++i;
    }
    if (!end() && (at() == 'e' || at() == 'E')) {
      ++i;
      if (!end() && (at() == '+' || at() == '-')) ++i;
      if (end() || !digit(at())) return fail_at_space("in exponent of numeric literal");
      while (!end() && digit(at())) ++i;
    }
    return true;
  }
  bool string() {
    ++i;  // the opening quote
    while (true) {
      if (end()) return fail("");
      const unsigned char c = at();
      if (c == '"') {
        ++i;
        return true;
      }
      if (c < 0x20) return fail("in string literal");
      ++i;
      if (c != '\\') continue;
      if (end()) return fail_at_space("in string escape code");
      if (at() == 'u') {
        ++i;
        for (int k = 0; k < 4; ++k, ++i)
          if (end() || !std::isxdigit(at())) return fail_at_space("in \\u hexadecimal character escape");
        continue;
      }
      if (std::string_view("\"\\/bfnrt").find(static_cast<char>(at())) == std::string_view::npos)
        return fail("in string escape code");
      ++i;
    }
  }
  bool object() {
    ++i;
    ws();
    if (end()) return fail("");
    if (at() == '}') {
      ++i;
      return true;
    }
    while (true) {
      if (end()) return fail("");
      if (at() != '"') return fail("looking for beginning of object key string");
      if (!string()) return false;
      ws();
      if (end() || at() != ':') return fail("after object key");
      ++i;
      if (!value()) return false;
      ws();
      if (end()) return fail("");
      if (at() == '}') {
        ++i;
        return true;
      }
      if (at() != ',') return fail("after object key:value pair");
      ++i;
      ws();
    }
  }
  bool array() {
    ++i;
    ws();
    if (end()) return fail("");
    if (at() == ']') {
      ++i;
      return true;
    }
    while (true) {
      if (!value()) return false;
      ws();
      if (end()) return fail("");
      if (at() == ']') {
        ++i;
        return true;
      }
      if (at() != ',') return fail("after array element");
      ++i;
    }
  }
};

}  // namespace

namespace {

template <typename T>
std::optional<T> go_parse(std::string_view s, std::string* err, std::string_view func) {
  T n = 0;
  // ParseInt takes a sign, "+" too (from_chars only "-"); ParseUint none.
  std::string_view digits = s;
  if (std::is_signed_v<T> && digits.size() > 1 && digits.front() == '+' && digits[1] != '-') digits.remove_prefix(1);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec == std::errc() && end == digits.data() + digits.size()) return n;
  if (err)
    *err =
        fmt::format("strconv.{}: parsing {}: {}", func, go_quote(s),
                    ec == std::errc::result_out_of_range && end == digits.data() + digits.size() ? "value out of range"
                                                                                                 : "invalid syntax");
  return std::nullopt;
}

}  // namespace

std::optional<std::int64_t> go_parse_int(std::string_view s, std::string* err) {
  return go_parse<std::int64_t>(s, err, "ParseInt");
}
std::optional<std::uint64_t> go_parse_uint(std::string_view s, std::string* err) {
  return go_parse<std::uint64_t>(s, err, "ParseUint");
}

std::optional<std::string> go_json_syntax_error(std::string_view text) {
  GoScan scan{text, 0, std::nullopt};
  if (scan.value()) {
    scan.ws();
    if (!scan.end()) scan.fail("after top-level value");
  }
  return scan.err;
}

// Go's json.Marshal of a decoded JSON value (map keys sorted, compact, HTML characters escaped):
// the bytes a ControllerRevision's data holds after a patch or a kubectl write.
std::string go_marshal(const json::value& v) {
  switch (v.kind()) {
    case json::kind::object: {
      std::vector<std::pair<std::string, const json::value*>> members;
      for (const auto& [k, x] : v.as_object()) members.emplace_back(std::string(k), &x);
      std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::string out = "{";
      for (const auto& [k, x] : members)
        out += (out.size() > 1 ? "," : "") + go_marshal(json::value(k)) + ":" + go_marshal(*x);
      return out + "}";
    }
    case json::kind::array: {
      std::string out = "[";
      for (const auto& x : v.as_array()) out += (out.size() > 1 ? "," : "") + go_marshal(x);
      return out + "]";
    }
    case json::kind::string: {
      std::string out = "\"";
      const std::string_view text = v.as_string();
      for (std::size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        const auto c = static_cast<unsigned char>(ch);
        if (text.substr(i, 2) == "\xe2\x80" && i + 2 < text.size() &&
            (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {  // U+2028, U+2029
          out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
          i += 2;
        } else if (c == '"' || c == '\\')
          out += {'\\', ch};
        else if (c == '\n')
          out += "\\n";
        else if (c == '\r')
          out += "\\r";
        else if (c == '\t')
          out += "\\t";
        else if (c == '\b')  // (Go 1.22 on: \b and \f short)
          out += "\\b";
        else if (c == '\f')
          out += "\\f";
        else if (c < 0x20 || c == '<' || c == '>' || c == '&')
          out += fmt::format("\\u{:04x}", c);
        else
          out += ch;
      }
      return out + "\"";
    }
    case json::kind::double_: {
      const double d = v.as_double();
      if (std::trunc(d) == d && std::fabs(d) < 1e21) return fmt::format("{:.0f}", d);
      return fmt::format("{}", d);
    }
    default:
      return json::serialize(v);
  }
}

void check_scale_patched(const json::object& scale) {
  // autoscaling/v1 Scale: spec.replicas is an int32 (ScaleSpec), the only typed field a patch of
  // the scale subresource sets. Worded as check_patched_types words a patched object.
  const json::value* spec = scale.if_contains("spec");
  const json::value* rep = spec && spec->is_object() ? spec->as_object().if_contains("replicas") : nullptr;
  if (!rep) return;
  const auto kind = schema::int32_misfit(*rep);
  if (!kind) return;
  const std::string cause = fmt::format(
      "Invalid value: {}: json: cannot unmarshal {} into Go struct field ScaleSpec.spec.replicas of type int32",
      go_quote(json::serialize(scale)), *kind);
  throw StatusError(422, "Invalid", fmt::format(" \"\" is invalid: patch: {}", cause), "", "", "",
                    {{"FieldValueInvalid", cause, "patch"}});
}

GoValueNames go_value_names(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return {"string", "string", "string"};
    case json::kind::bool_:
      return {"bool", "bool", "bool"};
    case json::kind::object:
      return {"object", "map", "map[string]interface {}"};
    case json::kind::array:
      return {"array", "slice", "[]interface {}"};
    case json::kind::double_:
      return {"number", "float64", "float64"};
    case json::kind::null:
      return {"null", "invalid", "<nil>"};
    default:  // (integers decode as int64: UnmarshalCaseSensitivePreserveInts)
      return {"number", "int64", "int64"};
  }
}

std::string go_print(const json::value& v) {
  switch (v.kind()) {
    case json::kind::object: {
      // fmt prints a map with its keys sorted.
      std::vector<std::pair<std::string, const json::value*>> kv;
      for (const auto& [k, c] : v.as_object()) kv.emplace_back(std::string(k), &c);
      std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::string out = "map[";
      for (std::size_t i = 0; i < kv.size(); ++i) out += (i ? " " : "") + kv[i].first + ":" + go_print(*kv[i].second);
      return out + "]";
    }
    case json::kind::array: {
      std::string out = "[";
      bool first = true;
      for (const auto& c : v.as_array()) {
        if (!first) out += " ";
        first = false;
        out += go_print(c);
      }
      return out + "]";
    }
    case json::kind::string:
      return std::string(v.as_string());
    case json::kind::bool_:
      return v.as_bool() ? "true" : "false";
    case json::kind::null:
      return "<nil>";
    default:
      return schema::number_text(v);
  }
}

}  // namespace gpupool::embedded
