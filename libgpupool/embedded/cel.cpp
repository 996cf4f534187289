// embedded/cel.cpp — see cel.hpp. A recursive-descent parser of CEL's grammar (cel-go
// parser/gen/CEL.g4), a checker that types each node from the structural schema (cel-go checker,
// apiserver/pkg/cel/common/schemas.go), and a tree-walking evaluator with cel-go's runtime errors
// (common/types/err.go, overflow.go) and its commutative && / || (interpreter/interpretable.go).
#include "embedded/cel.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <type_traits>
#include <vector>

// The matcher keeps its backtracking state on the heap, up to BOOST_REGEX_MAX_BLOCKS blocks of 4 KiB
// (32 MiB: enough for `^(a|b)*$` on a string as large as a stored object may be).
#define BOOST_REGEX_MAX_BLOCKS 8192
#include <fmt/format.h>
#include <boost/regex.hpp>

#include "common/base64.hpp"
#include "common/go_text.hpp"
#include "embedded/ip_parse.hpp"
#include "embedded/typecheck.hpp"
#include "gpupool/error.hpp"
#include "gpupool/quantity.hpp"

namespace gpupool::embedded::cel {

namespace json = boost::json;

struct Regex::Impl {
  boost::regex re;
};

std::shared_ptr<const Regex> Regex::compile(std::string_view pattern) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Regex>, std::less<>> cache;
  std::lock_guard lock(mu);
  if (auto it = cache.find(pattern); it != cache.end()) return it->second;
  std::shared_ptr<const Regex> out;
  try {
    auto impl = std::make_shared<Impl>();
    impl->re = boost::regex(pattern.begin(), pattern.end(), boost::regex::perl);
    auto r = std::make_shared<Regex>();
    r->impl = std::move(impl);
    out = std::move(r);
  } catch (const boost::regex_error&) {
    // does not compile: nullptr
  }
  if (cache.size() > 512) cache.clear();  // a bound on what hostile CRDs can make it hold
  cache.emplace(std::string(pattern), out);
  return out;
}

std::optional<std::pair<std::size_t, std::size_t>> Regex::search(std::string_view text, std::size_t from) const {
  boost::match_results<std::string_view::const_iterator> m;
  // As RE2 without flags: '.' does not match a newline, ^ and $ match at the ends of the text only.
  if (!boost::regex_search(text.begin() + static_cast<std::ptrdiff_t>(from), text.end(), m, impl->re,
                           boost::match_not_dot_newline | boost::match_single_line |
                               (from > 0 ? boost::match_prev_avail : boost::match_default)))
    return std::nullopt;
  const auto begin = static_cast<std::size_t>(m[0].first - text.begin());
  return std::make_pair(begin, begin + static_cast<std::size_t>(m[0].length()));
}

std::string go_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  if (d == 0) return std::signbit(d) ? "-0" : "0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // "1.2345e+04"
  const auto e = sci.find('e');
  std::string digits = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  std::string sign;
  if (!digits.empty() && digits[0] == '-') {
    sign = "-";
    digits.erase(0, 1);
  }
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int nd = static_cast<int>(digits.size()), dp = exp + 1;
  int eprec = 6;
  if (eprec > nd && nd >= dp) eprec = nd;
  if (exp < -4 || exp >= eprec) {
    std::string m = digits.substr(0, 1);
    if (nd > 1) m += "." + digits.substr(1);
    return fmt::format("{}{}e{}{:02d}", sign, m, exp < 0 ? '-' : '+', std::abs(exp));
  }
  if (dp <= 0) return sign + "0." + std::string(static_cast<std::size_t>(-dp), '0') + digits;
  if (dp >= nd) return sign + digits + std::string(static_cast<std::size_t>(dp - nd), '0');
  return sign + digits.substr(0, static_cast<std::size_t>(dp)) + "." + digits.substr(static_cast<std::size_t>(dp));
}

namespace {

// ---- static types --------------------------------------------------------------------------------

struct Type;
using TypeP = std::shared_ptr<const Type>;
struct Type {
  enum K {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    List,
    Map,
    Object,
    Timestamp,
    Duration,
    Optional,
    Quantity,
    TypeT,
    Url,
    Ip,
    Cidr
  } k = Dyn;
  TypeP a, b;                            // list element / optional value; map key and value
  const json::object* schema = nullptr;  // Object: its schema
  bool root = false;                     // Object: the resource itself (apiVersion, kind, metadata)
  bool meta = false;                     // Object: the resource's metadata (name, generateName)
};

TypeP mk(Type::K k, TypeP a = nullptr, TypeP b = nullptr) {
  auto t = std::make_shared<Type>();
  t->k = k;
  t->a = std::move(a);
  t->b = std::move(b);
  return t;
}
TypeP prim(Type::K k) {
  static const TypeP cache[] = {mk(Type::Dyn),  mk(Type::Null),   mk(Type::Bool),   mk(Type::Int),
                                mk(Type::Uint), mk(Type::Double), mk(Type::String), mk(Type::Bytes)};
  if (k <= Type::Bytes) return cache[k];
  return mk(k);
}
TypeP list_of(TypeP e) { return mk(Type::List, std::move(e)); }
TypeP map_of(TypeP k, TypeP v) { return mk(Type::Map, std::move(k), std::move(v)); }
TypeP optional_of(TypeP e) { return mk(Type::Optional, std::move(e)); }

std::string type_name(const TypeP& t) {
  switch (t->k) {
    case Type::Dyn:
      return "dyn";
    case Type::Null:
      return "null_type";
    case Type::Bool:
      return "bool";
    case Type::Int:
      return "int";
    case Type::Uint:
      return "uint";
    case Type::Double:
      return "double";
    case Type::String:
      return "string";
    case Type::Bytes:
      return "bytes";
    case Type::List:
      return "list(" + type_name(t->a) + ")";
    case Type::Map:
      return "map(" + type_name(t->a) + ", " + type_name(t->b) + ")";
    case Type::Object:
      return "object";
    case Type::Timestamp:
      return "google.protobuf.Timestamp";
    case Type::Duration:
      return "google.protobuf.Duration";
    case Type::Optional:
      return "optional_type(" + type_name(t->a) + ")";
    case Type::Quantity:
      return "kubernetes.Quantity";
    case Type::TypeT:
      return "type";
    case Type::Url:
      return "kubernetes.URL";
    case Type::Ip:
      return "net.IP";
    case Type::Cidr:
      return "net.CIDR";
  }
  return "dyn";
}

const json::object* obj_member(const json::object* s, std::string_view key) {
  if (!s) return nullptr;
  const json::value* v = s->if_contains(key);
  return v && v->is_object() ? &v->as_object() : nullptr;
}
std::string str_member(const json::object* s, std::string_view key) {
  if (!s) return {};
  const json::value* v = s->if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}
bool flag_member(const json::object* s, std::string_view key) {
  if (!s) return false;
  const json::value* v = s->if_contains(key);
  return v && v->is_bool() && v->as_bool();
}

// apiserver/pkg/cel/common/schemas.go SchemaDeclType: the CEL type of a structural schema node, or
// null when it has none (no type and not int-or-string, an array without items): such a field is
// not visible to rules. A resource's root and an x-kubernetes-embedded-resource object also show
// apiVersion, kind and metadata.name/generateName.
TypeP of_schema(const json::object* s, bool root = false) {
  if (!s) return nullptr;
  if (flag_member(s, "x-kubernetes-int-or-string")) return prim(Type::Dyn);
  root = root || flag_member(s, "x-kubernetes-embedded-resource");
  const std::string type = str_member(s, "type");
  const std::string format = str_member(s, "format");
  if (type == "integer") return prim(Type::Int);
  if (type == "number") return prim(Type::Double);
  if (type == "boolean") return prim(Type::Bool);
  if (type == "string") {
    if (format == "date-time" || format == "date") return prim(Type::Timestamp);
    if (format == "duration") return prim(Type::Duration);
    if (format == "byte") return prim(Type::Bytes);
    return prim(Type::String);
  }
  if (type == "array") {
    TypeP e = of_schema(obj_member(s, "items"));
    return e ? list_of(std::move(e)) : nullptr;
  }
  if (type == "object" || root) {
    if (const json::object* add = obj_member(s, "additionalProperties")) {
      TypeP v = of_schema(add);
      return v ? map_of(prim(Type::String), std::move(v)) : nullptr;
    }
    auto t = std::const_pointer_cast<Type>(mk(Type::Object));
    t->schema = s;
    t->root = root;
    return t;
  }
  return nullptr;
}

// apiserver/pkg/cel/escaping.go Escape: the CEL name of a property ("x-y" is x__dash__y,
// "namespace" __namespace__), or "" when it has none (a leading digit, other characters).
std::string escape(std::string_view name) {
  static const char* const reserved[] = {"true",     "false",   "null",      "in",       "as",  "break",  "const",
                                         "continue", "else",    "for",       "function", "if",  "import", "let",
                                         "loop",     "package", "namespace", "return",   "var", "void",   "while"};
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return {};
  for (const char* r : reserved)
    if (name == r) return "__" + std::string(name) + "__";
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '_' && i + 1 < name.size() && name[i + 1] == '_') {
      out += "__underscores__";
      ++i;
    } else if (c == '.') {
      out += "__dot__";
    } else if (c == '-') {
      out += "__dash__";
    } else if (c == '/') {
      out += "__slash__";
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      out += c;
    } else {
      return {};
    }
  }
  return out;
}

// The type of `field` of an object type, or null when the schema does not declare it.
TypeP field_type(const Type& t, std::string_view field) {
  if (t.meta) {
    if (field == "name" || field == "generateName") return prim(Type::String);
    return nullptr;
  }
  if (t.root) {
    if (field == "apiVersion" || field == "kind") return prim(Type::String);
    if (field == "metadata") {
      auto m = std::const_pointer_cast<Type>(mk(Type::Object));
      m->meta = true;
      return m;
    }
  }
  if (const json::object* props = obj_member(t.schema, "properties"))
    for (const auto& [k, v] : *props)
      // (A keyword is its escaped name, and since v1.31 also itself: DeclTypeProvider
      // FindStructFieldType with recognizeKeywordAsFieldName, `metadata.namespace`.)
      if (v.is_object() && (escape(k) == field || (k == field && escape(k) == "__" + std::string(field) + "__")))
        return of_schema(&v.as_object());  // null: not visible
  return nullptr;
}

// Whether a value of type b may stand where a is expected (dyn on either side matches anything),
// or with `exact` Type.IsEquivalentType: the same type, dyn only to dyn.
bool same_type(const TypeP& a, const TypeP& b, bool exact) {
  if (!exact && (a->k == Type::Dyn || b->k == Type::Dyn)) return true;
  if (a->k != b->k) return false;
  switch (a->k) {
    case Type::List:
    case Type::Optional:
      return same_type(a->a, b->a, exact);
    case Type::Map:
      return same_type(a->a, b->a, exact) && same_type(a->b, b->b, exact);
    case Type::Object:
      return a->schema == b->schema && a->root == b->root && a->meta == b->meta;
    default:
      return true;
  }
}
bool assignable(const TypeP& a, const TypeP& b) { return same_type(a, b, false); }
bool equivalent(const TypeP& a, const TypeP& b) { return same_type(a, b, true); }
// The more general of two assignable types (cel-go mostGeneral: list literals, the ternary).
TypeP join(const TypeP& a, const TypeP& b) { return b->k == Type::Dyn ? b : a; }

// The type names an expression may use as values: `type(x) == string`.
bool type_ident(std::string_view name) {
  for (const char* t : {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type"})
    if (name == t) return true;
  return false;
}

// ---- values --------------------------------------------------------------------------------------

struct Value;
using List = std::vector<Value>;
using Map = std::vector<std::pair<Value, Value>>;
struct Value {
  enum K {
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    ListV,
    MapV,
    Timestamp,
    Duration,
    Optional,
    QuantityV,
    TypeV,
    UrlV,
    IpV,
    CidrV,
    Error
  } k = Null;
  bool b = false;
  std::int64_t i = 0;   // Int; Timestamp: seconds since the epoch; Duration: nanoseconds
  std::uint64_t u = 0;  // Uint; Timestamp: nanoseconds within the second
  double d = 0;
  std::string s;                     // String, Bytes, Error (its message)
  std::shared_ptr<const List> list;  // ListV; Optional: none when empty
  std::shared_ptr<const Map> map;
  bool object = false;  // a MapV that is an object of the schema

  static Value boolean(bool v) {
    Value x;
    x.k = Bool;
    x.b = v;
    return x;
  }
  static Value integer(std::int64_t v) {
    Value x;
    x.k = Int;
    x.i = v;
    return x;
  }
  static Value unsigned_(std::uint64_t v) {
    Value x;
    x.k = Uint;
    x.u = v;
    return x;
  }
  static Value dbl(double v) {
    Value x;
    x.k = Double;
    x.d = v;
    return x;
  }
  static Value string(std::string v, K k = String) {
    Value x;
    x.k = k;
    x.s = std::move(v);
    return x;
  }
  static Value error(std::string msg) {
    Value x;
    x.k = Error;
    x.s = std::move(msg);
    return x;
  }
  static Value of_list(List l) {
    Value x;
    x.k = ListV;
    x.list = std::make_shared<const List>(std::move(l));
    return x;
  }
  static Value of_map(Map m, bool object = false) {
    Value x;
    x.k = MapV;
    x.map = std::make_shared<const Map>(std::move(m));
    x.object = object;
    return x;
  }
  static Value optional(const Value* v) {  // optional.of(*v), or optional.none() for null
    Value x;
    x.k = Optional;
    x.list = std::make_shared<const List>(v ? List{*v} : List{});
    return x;
  }
  static Value duration(std::int64_t nanos) {
    Value x;
    x.k = Duration;
    x.i = nanos;
    return x;
  }
  static Value timestamp(std::int64_t secs, std::uint64_t nanos) {
    Value x;
    x.k = Timestamp;
    x.i = secs;
    x.u = nanos;
    return x;
  }
  bool is_error() const { return k == Error; }
};

Value no_overload() { return Value::error("no such overload"); }

std::string value_type_name(const Value& v) {
  switch (v.k) {
    case Value::Null:
      return "null_type";
    case Value::Bool:
      return "bool";
    case Value::Int:
      return "int";
    case Value::Uint:
      return "uint";
    case Value::Double:
      return "double";
    case Value::String:
      return "string";
    case Value::Bytes:
      return "bytes";
    case Value::ListV:
      return "list";
    case Value::MapV:
      return v.object ? "object" : "map";
    case Value::Timestamp:
      return "google.protobuf.Timestamp";
    case Value::Duration:
      return "google.protobuf.Duration";
    case Value::Optional:
      return "optional_type";
    case Value::QuantityV:
      return "kubernetes.Quantity";
    case Value::TypeV:
      return "type";
    case Value::UrlV:
      return "kubernetes.URL";
    case Value::IpV:
      return "net.IP";
    case Value::CidrV:
      return "net.CIDR";
    case Value::Error:
      return "";
  }
  return "";
}

// Go's RFC 3339 with nanoseconds (time.RFC3339Nano), in UTC.
std::string format_timestamp(std::int64_t secs, std::uint64_t nanos) {
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::string out = fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}", tm.tm_year + 1900, tm.tm_mon + 1,
                                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (nanos) {
    std::string f = fmt::format("{:09d}", nanos);
    while (!f.empty() && f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out + "Z";
}
// strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s": cel-go's string(duration).
std::string format_duration(std::int64_t nanos) {
  const bool neg = nanos < 0;
  const unsigned __int128 n = neg ? static_cast<unsigned __int128>(-static_cast<__int128>(nanos)) : nanos;
  std::string frac = fmt::format("{:09d}", static_cast<std::uint64_t>(n % 1000000000));
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return fmt::format("{}{}{}s", neg ? "-" : "", static_cast<std::uint64_t>(n / 1000000000),
                     frac.empty() ? "" : "." + frac);
}

std::string display(const Value& v) {
  switch (v.k) {
    case Value::Null:
      return "null";
    case Value::Bool:
      return v.b ? "true" : "false";
    case Value::Int:
      return std::to_string(v.i);
    case Value::Uint:
      return std::to_string(v.u) + "u";
    case Value::Double:
      return go_float(v.d);
    case Value::String:
      return go_quote(v.s);
    case Value::Bytes:
      return "b" + go_quote(v.s);
    case Value::ListV: {
      std::string out = "[";
      for (std::size_t i = 0; i < v.list->size(); ++i) out += (i ? ", " : "") + display((*v.list)[i]);
      return out + "]";
    }
    case Value::MapV: {
      std::string out = "{";
      for (std::size_t i = 0; i < v.map->size(); ++i)
        out += (i ? ", " : "") + display((*v.map)[i].first) + ": " + display((*v.map)[i].second);
      return out + "}";
    }
    case Value::Timestamp:
      return "timestamp(\"" + format_timestamp(v.i, v.u) + "\")";
    case Value::Duration:
      return "duration(\"" + format_duration(v.i) + "\")";
    case Value::Optional:
      return v.list->empty() ? "optional.none()" : "optional.of(" + display(v.list->front()) + ")";
    case Value::QuantityV:
      return "quantity(" + go_quote(v.s) + ")";
    case Value::TypeV:
      return v.s;
    case Value::UrlV:
      return "url(" + go_quote(v.s) + ")";
    case Value::IpV:
      return "ip(" + go_quote(v.s) + ")";
    case Value::CidrV:
      return "cidr(" + go_quote(v.s) + ")";
    case Value::Error:
      return "error: " + v.s;
  }
  return "";
}

// ---- time ----------------------------------------------------------------------------------------

// days_from_civil (H. Hinnant): days since 1970-01-01 of a proleptic Gregorian date.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// time.Parse(time.RFC3339, s): "2006-01-02T15:04:05Z07:00" with optional fractional seconds.
bool parse_rfc3339(std::string_view s, std::int64_t& secs, std::uint64_t& nanos) {
  auto digits = [&](std::size_t at, std::size_t n, int& out) {
    if (at + n > s.size()) return false;
    out = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      out = out * 10 + (s[i] - '0');
    }
    return true;
  };
  int y, mo, d, h, mi, se;
  if (!digits(0, 4, y) || s.size() < 20 || s[4] != '-' || !digits(5, 2, mo) || s[7] != '-' || !digits(8, 2, d) ||
      (s[10] != 'T' && s[10] != 't') || !digits(11, 2, h) || s[13] != ':' || !digits(14, 2, mi) || s[16] != ':' ||
      !digits(17, 2, se))
    return false;
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || se > 59)
    return false;
  std::size_t i = 19;
  nanos = 0;
  if (i < s.size() && s[i] == '.') {
    std::size_t n = 0;
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (n < 9) nanos = nanos * 10 + static_cast<std::uint64_t>(s[i] - '0');
      ++n;
      ++i;
    }
    if (n == 0) return false;
    for (; n < 9; ++n) nanos *= 10;
  }
  int offset = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh, om;
    if (!digits(i + 1, 2, oh) || i + 3 >= s.size() || s[i + 3] != ':' || !digits(i + 4, 2, om) || oh > 23 || om > 59)
      return false;
    offset = (oh * 60 + om) * 60 * (s[i] == '-' ? -1 : 1);
    i += 6;
  } else {
    return false;
  }
  if (i != s.size()) return false;
  secs = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 + mi * 60 + se -
         offset;
  return true;
}

// ---- JSON (by its schema) to values: apiserver/pkg/cel/common/values.go UnstructuredToVal --------

Value to_value(const json::value& v, const json::object* s, bool root = false) {
  root = root || flag_member(s, "x-kubernetes-embedded-resource");
  const std::string type = str_member(s, "type");
  switch (v.kind()) {
    case json::kind::null:
      return Value{};
    case json::kind::bool_:
      return Value::boolean(v.as_bool());
    case json::kind::int64:
      if (type == "number") return Value::dbl(static_cast<double>(v.as_int64()));
      return Value::integer(v.as_int64());
    case json::kind::uint64:
      if (type == "number") return Value::dbl(static_cast<double>(v.as_uint64()));
      if (v.as_uint64() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return Value::unsigned_(v.as_uint64());
      return Value::integer(static_cast<std::int64_t>(v.as_uint64()));
    case json::kind::double_:
      if (type == "integer" && std::abs(v.as_double()) < 9.2e18 && v.as_double() == std::trunc(v.as_double()))
        return Value::integer(static_cast<std::int64_t>(v.as_double()));
      return Value::dbl(v.as_double());
    case json::kind::string: {
      const std::string format = str_member(s, "format");
      const std::string str(v.as_string());
      if (type == "string" && format == "date-time") {
        std::int64_t secs;
        std::uint64_t nanos;
        if (!parse_rfc3339(str, secs, nanos)) return Value::error("Invalid date-time formatted string " + str);
        return Value::timestamp(secs, nanos);
      }
      if (type == "string" && format == "date") {
        std::int64_t secs;
        std::uint64_t nanos;
        if (!parse_rfc3339(str + "T00:00:00Z", secs, nanos) || str.size() != 10)
          return Value::error("Invalid date formatted string " + str);
        return Value::timestamp(secs, nanos);
      }
      if (type == "string" && format == "byte") {
        auto bytes = base64_decode(str);
        if (!bytes) return Value::error("Invalid byte formatted string " + str);
        return Value::string(std::move(*bytes), Value::Bytes);
      }
      if (type == "string" && format == "duration") {
        const std::optional<std::int64_t> n = gotext::parse_duration(str);
        if (!n) return Value::error("Invalid duration " + str);
        return Value::duration(*n);
      }
      return Value::string(str);
    }
    case json::kind::array: {
      List l;
      const json::object* is = obj_member(s, "items");
      for (const auto& x : v.as_array()) l.push_back(to_value(x, is));
      return Value::of_list(std::move(l));
    }
    case json::kind::object: {
      Map m;
      const json::object* props = obj_member(s, "properties");
      const json::object* add = obj_member(s, "additionalProperties");
      for (const auto& [k, x] : v.as_object()) {
        if (root && k == "metadata") {  // model.WithTypeAndObjectMeta: name and generateName only
          Map meta;
          if (x.is_object())
            for (const char* f : {"name", "generateName"})
              if (const json::value* y = x.as_object().if_contains(f))
                meta.emplace_back(Value::string(f), to_value(*y, nullptr));
          m.emplace_back(Value::string("metadata"), Value::of_map(std::move(meta), true));
          continue;
        }
        const json::object* ks = obj_member(props, k);
        if (!ks) ks = add;
        if (!ks && props && !(root && (k == "apiVersion" || k == "kind"))) continue;  // not visible to CEL
        // An object's fields go by their CEL names; a map's keys stay as they are.
        std::string key(k);
        if (props) {
          key = escape(k);
          if (key.empty()) continue;
        }
        m.emplace_back(Value::string(std::move(key)), to_value(x, ks));
      }
      return Value::of_map(std::move(m), props != nullptr || root);
    }
  }
  return Value{};
}

// ---- lexer ---------------------------------------------------------------------------------------

struct Tok {
  enum T { End, Int, Uint, Double, String, Bytes, Ident, Punct, Bad } t = End;
  std::string text;  // the token as written
  std::size_t pos = 0;
  Value v;  // a literal's value
};

struct Issue {
  std::size_t pos;  // kNoLocation: the whole expression
  std::string msg;
};
constexpr std::size_t kNoLocation = static_cast<std::size_t>(-1);

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

struct Lexer {
  std::string_view src;
  std::vector<Issue>& issues;

  std::vector<Tok> run() {
    std::vector<Tok> out;
    std::size_t i = 0;
    while (true) {
      while (i < src.size() && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r' || src[i] == '\f'))
        ++i;
      if (i + 1 < src.size() && src[i] == '/' && src[i + 1] == '/') {  // a comment to the end of the line
        while (i < src.size() && src[i] != '\n') ++i;
        continue;
      }
      Tok t;
      t.pos = i;
      if (i >= src.size()) {
        t.t = Tok::End;
        t.text = "<EOF>";
        out.push_back(t);
        return out;
      }
      const char c = src[i];
      // string and bytes literals, with r/b prefixes (r, b, rb, br in either case)
      auto lower = [&](std::size_t k) {
        return k < src.size() ? static_cast<char>(std::tolower(static_cast<unsigned char>(src[k]))) : '\0';
      };
      auto quote = [&](std::size_t k) { return k < src.size() && (src[k] == '"' || src[k] == '\''); };
      std::size_t p = i;
      bool raw = false, bytes = false;
      if ((lower(i) == 'r' || lower(i) == 'b') && quote(i + 1)) {
        raw = lower(i) == 'r';
        bytes = lower(i) == 'b';
        p = i + 1;
      } else if (((lower(i) == 'r' && lower(i + 1) == 'b') || (lower(i) == 'b' && lower(i + 1) == 'r')) &&
                 quote(i + 2)) {
        raw = bytes = true;
        p = i + 2;
      }
      if (quote(p)) {
        if (!string_literal(p, raw, bytes, t)) {  // ANTLR's lexer reports it and goes on after it
          i = p;
          continue;
        }
        t.text = std::string(src.substr(i, p - i));
        i = p;
        out.push_back(std::move(t));
        continue;
      }
      if (is_ident_start(c)) {
        std::size_t j = i;
        while (j < src.size() && (is_ident_start(src[j]) || is_digit(src[j]))) ++j;
        t.t = Tok::Ident;
        t.text = std::string(src.substr(i, j - i));
        i = j;
        out.push_back(std::move(t));
        continue;
      }
      if (is_digit(c) || (c == '.' && i + 1 < src.size() && is_digit(src[i + 1]))) {
        i = number(i, t);
        out.push_back(std::move(t));
        continue;
      }
      static const char* const puncts[] = {"==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*",
                                           "/",  "%",  "?",  ":",  ".",  ",",  "[", "]", "{", "}", "(", ")"};
      bool found = false;
      for (const char* pn : puncts)
        if (src.substr(i).starts_with(pn)) {
          t.t = Tok::Punct;
          t.text = pn;
          i += t.text.size();
          found = true;
          break;
        }
      if (!found) {
        issues.push_back({i, fmt::format("Syntax error: token recognition error at: '{}'", src.substr(i, 1))});
        ++i;
        continue;
      }
      out.push_back(std::move(t));
    }
  }

  std::size_t number(std::size_t i, Tok& t) {
    std::size_t j = i;
    if (src.substr(i).starts_with("0x") || src.substr(i).starts_with("0X")) {
      j = i + 2;
      while (j < src.size() && std::isxdigit(static_cast<unsigned char>(src[j]))) ++j;
      const std::string digits(src.substr(i + 2, j - i - 2));
      const bool u = j < src.size() && (src[j] == 'u' || src[j] == 'U');
      t.text = std::string(src.substr(i, j - i + (u ? 1 : 0)));
      std::uint64_t n = 0;
      const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), n, 16);
      if (r.ec != std::errc() || digits.empty())
        issues.push_back({i, fmt::format("invalid {} literal", u ? "uint" : "int")});
      t.t = u ? Tok::Uint : Tok::Int;
      t.v = Value::unsigned_(n);  // an int's range is checked by the parser, once the sign is known
      return j + (u ? 1 : 0);
    }
    bool is_float = false;
    while (j < src.size() && is_digit(src[j])) ++j;
    if (j + 1 < src.size() && src[j] == '.' && is_digit(src[j + 1])) {
      is_float = true;
      ++j;
      while (j < src.size() && is_digit(src[j])) ++j;
    }
    if (j < src.size() && (src[j] == 'e' || src[j] == 'E')) {
      std::size_t k = j + 1;
      if (k < src.size() && (src[k] == '+' || src[k] == '-')) ++k;
      if (k < src.size() && is_digit(src[k])) {
        is_float = true;
        j = k;
        while (j < src.size() && is_digit(src[j])) ++j;
      }
    }
    const std::string text(src.substr(i, j - i));
    if (is_float) {
      t.t = Tok::Double;
      t.text = text;
      t.v = Value::dbl(std::strtod(text.c_str(), nullptr));
      return j;
    }
    const bool u = j < src.size() && (src[j] == 'u' || src[j] == 'U');
    std::uint64_t n = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), n, 10);
    if (r.ec != std::errc()) issues.push_back({i, fmt::format("invalid {} literal", u ? "uint" : "int")});
    t.t = u ? Tok::Uint : Tok::Int;
    t.text = text + (u ? "u" : "");
    t.v = Value::unsigned_(n);
    return j + (u ? 1 : 0);
  }

  // cel-go parser/unescape.go: the escapes of a quoted literal (not of a raw one).
  bool string_literal(std::size_t& p, bool raw, bool bytes, Tok& t) {
    const char q = src[p];
    const bool triple = src.substr(p).starts_with(std::string(3, q));
    const std::size_t start = p;
    p += triple ? 3 : 1;
    std::string out;
    while (true) {
      if (p >= src.size() || (!triple && (src[p] == '\n' || src[p] == '\r'))) {
        issues.push_back(
            {start, fmt::format("Syntax error: token recognition error at: '{}'", src.substr(start, p - start))});
        return false;
      }
      if (triple ? src.substr(p).starts_with(std::string(3, q)) : src[p] == q) {
        p += triple ? 3 : 1;
        break;
      }
      if (src[p] == '\\' && !raw) {
        if (p + 1 >= src.size()) return false;
        const char e = src[p + 1];
        p += 2;
        switch (e) {
          case 'a':
            out += '\a';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'n':
            out += '\n';
            break;
          case 'r':
            out += '\r';
            break;
          case 't':
            out += '\t';
            break;
          case 'v':
            out += '\v';
            break;
          case '\\':
            out += '\\';
            break;
          case '\'':
            out += '\'';
            break;
          case '"':
            out += '"';
            break;
          case '`':
            out += '`';
            break;
          case '?':
            out += '?';
            break;
          case 'x':
          case 'X':
          case 'u':
          case 'U': {
            const std::size_t n = (e == 'x' || e == 'X') ? 2 : e == 'u' ? 4 : 8;
            std::uint32_t cp = 0;
            const auto r = std::from_chars(src.data() + p, src.data() + std::min(src.size(), p + n), cp, 16);
            if (r.ptr != src.data() + p + n) {
              issues.push_back({start, "Syntax error: token recognition error at: '" +
                                           std::string(src.substr(start, p - start)) + "'"});
              return false;
            }
            p += n;
            if (bytes && n == 2)
              out += static_cast<char>(cp);
            else
              append_utf8(out, cp);
            break;
          }
          default:
            if (e >= '0' && e <= '3' && p + 1 < src.size() && src[p] >= '0' && src[p] <= '7' && src[p + 1] >= '0' &&
                src[p + 1] <= '7') {
              const unsigned cp = static_cast<unsigned>((e - '0') * 64 + (src[p] - '0') * 8 + (src[p + 1] - '0'));
              p += 2;
              if (bytes)
                out += static_cast<char>(cp);
              else
                append_utf8(out, cp);
              break;
            }
            issues.push_back({start, "Syntax error: token recognition error at: '" +
                                         std::string(src.substr(start, p - start)) + "'"});
            return false;
        }
        continue;
      }
      out += src[p++];
    }
    t.t = bytes ? Tok::Bytes : Tok::String;
    t.v = Value::string(std::move(out), bytes ? Value::Bytes : Value::String);
    return true;
  }
};

// ---- the syntax tree and parser ------------------------------------------------------------------

enum class Macro { None, All, Exists, ExistsOne, Map, MapFilter, Filter };

struct Node {
  enum Op { Lit, Ident, Select, Has, OptSelect, Call, ListLit, MapLit, Compr, Index, OptIndex, Cond, And, Or } op = Lit;
  std::size_t pos = 0;
  std::string name;     // Ident, Select/Has field, Call function
  Value lit;            // Lit
  bool member = false;  // Call: args[0] is the target
  Macro macro = Macro::None;
  std::string var;  // Compr: the iteration variable
  std::vector<std::unique_ptr<Node>> args;
  TypeP type;
  std::size_t depth = 0;  // how deep parser.go's Visit recurses into this node (see Parser::settle)
};
using NodeP = std::unique_ptr<Node>;

NodeP node(Node::Op op, std::size_t pos) {
  auto n = std::make_unique<Node>();
  n->op = op;
  n->pos = pos;
  return n;
}
NodeP call(std::string name, std::size_t pos, std::vector<NodeP> args, bool member = false) {
  auto n = node(Node::Call, pos);
  n->name = std::move(name);
  n->args = std::move(args);
  n->member = member;
  return n;
}

struct Parser {
  std::vector<Tok> toks;
  std::vector<Issue>& issues;
  std::size_t at = 0;
  int depth = 0;

  const Tok& peek(std::size_t ahead = 0) const { return toks[std::min(at + ahead, toks.size() - 1)]; }
  bool is(std::string_view p, std::size_t ahead = 0) const {
    const Tok& t = peek(ahead);
    return t.t == Tok::Punct && t.text == p;
  }
  bool is_kw(std::string_view k) const { return peek().t == Tok::Ident && peek().text == k; }
  struct Fail {};
  // The depth parser.go's Visit reaches, worked out as each node is built: relations, arithmetic,
  // member calls (macros too), selections, indexes and conditionals count; global calls, literals,
  // unary operators and the balanced && / || do not. Over 250 the expression is refused, which
  // also bounds how deep the checker and the evaluator recurse.
  NodeP settle(NodeP n) {
    std::size_t below = 0;
    for (const auto& a : n->args) below = std::max(below, a->depth);
    bool counted = false;
    switch (n->op) {
      case Node::Select:
      case Node::Has:
      case Node::OptSelect:
      case Node::Index:
      case Node::OptIndex:
      case Node::Cond:
      case Node::Compr:
        counted = true;
        break;
      case Node::Call:
        counted =
            n->member || n->name == "@in" || (n->name.size() > 2 && n->name.front() == '_' && n->name.back() == '_');
        break;
      default:
        break;
    }
    n->depth = below + (counted ? 1 : 0);
    if (n->depth > 250) fail("max recursion depth exceeded", kNoLocation);
    return n;
  }

  [[noreturn]] void fail(std::string msg, std::size_t pos) {
    issues.push_back({pos, std::move(msg)});
    throw Fail{};
  }
  void expect(std::string_view p) {
    if (!is(p)) fail(fmt::format("Syntax error: missing '{}' at '{}'", p, peek().text), peek().pos);
    ++at;
  }
  // ANTLR's report when the token is not the one a rule needs: "mismatched input", or
  // "extraneous input" when dropping it would let the parse go on (the next token fits).
  void expect_one_of(std::string_view p, std::string_view expecting) {
    if (is(p)) {
      ++at;
      return;
    }
    fail(fmt::format("Syntax error: mismatched input '{}' expecting {}", peek().text, expecting), peek().pos);
  }
  static bool starts_primary(const Tok& t) {
    if (t.t == Tok::Punct)
      return t.text == "[" || t.text == "{" || t.text == "(" || t.text == "." || t.text == "-" || t.text == "!";
    return t.t != Tok::End && t.t != Tok::Bad;
  }
  bool call_args = false;  // the primary being parsed may also be a call's closing ')'

  NodeP parse() {
    try {
      NodeP e = expr();
      if (peek().t != Tok::End)
        fail(fmt::format("Syntax error: {} input '{}' expecting <EOF>",
                         peek(1).t == Tok::End ? "extraneous" : "mismatched", peek().text),
             peek().pos);
      return e;
    } catch (const Fail&) {
      return nullptr;
    }
  }

  NodeP expr() {
    if (++depth > 250) fail("expression recursion limit exceeded: 250", kNoLocation);
    NodeP c = or_expr();
    if (is("?")) {
      const std::size_t pos = peek().pos;
      ++at;
      NodeP t = or_expr();
      expect_one_of(":", "':'");
      NodeP f = expr();
      auto n = node(Node::Cond, pos);
      n->args.push_back(std::move(c));
      n->args.push_back(std::move(t));
      n->args.push_back(std::move(f));
      c = settle(std::move(n));
    }
    --depth;
    return c;
  }
  // A chain of || (&&) becomes a balanced tree, as cel-go's parser/helper.go balancer builds it.
  static NodeP balanced(Node::Op op, std::vector<NodeP>& terms, const std::vector<std::size_t>& ops, std::size_t lo,
                        std::size_t hi) {
    const std::size_t mid = (lo + hi + 1) / 2;
    auto n = node(op, ops[mid]);
    n->args.push_back(mid == lo ? std::move(terms[mid]) : balanced(op, terms, ops, lo, mid - 1));
    n->args.push_back(mid == hi ? std::move(terms[mid + 1]) : balanced(op, terms, ops, mid + 1, hi));
    return n;  // (not counted; settled by the caller)
  }
  NodeP logical(Node::Op op, std::string_view token, NodeP (Parser::*operand)()) {
    std::vector<NodeP> terms;
    std::vector<std::size_t> ops;
    terms.push_back((this->*operand)());
    while (is(token)) {
      ops.push_back(peek().pos);
      ++at;
      terms.push_back((this->*operand)());
    }
    if (ops.empty()) return std::move(terms[0]);
    return settle_tree(balanced(op, terms, ops, 0, ops.size() - 1));
  }
  // A balanced tree's own nodes are not counted: their depth is their deepest term's.
  NodeP settle_tree(NodeP n) {
    for (auto& a : n->args)
      if (a->op == n->op) a = settle_tree(std::move(a));
    return settle(std::move(n));
  }
  NodeP or_expr() { return logical(Node::Or, "||", &Parser::and_expr); }
  NodeP and_expr() { return logical(Node::And, "&&", &Parser::relation); }
  NodeP relation() {
    NodeP l = addition();
    while (true) {
      std::string op;
      for (const char* o : {"==", "!=", "<=", ">=", "<", ">"})
        if (is(o)) op = o;
      if (op.empty() && is_kw("in")) op = "in";
      if (op.empty()) return l;
      const std::size_t pos = peek().pos;
      ++at;
      std::vector<NodeP> args;
      args.push_back(std::move(l));
      args.push_back(addition());
      l = settle(call(op == "in" ? "@in" : "_" + op + "_", pos, std::move(args)));
    }
  }
  NodeP addition() {
    NodeP l = multiplication();
    while (is("+") || is("-")) {
      const std::string op = peek().text;
      const std::size_t pos = peek().pos;
      ++at;
      std::vector<NodeP> args;
      args.push_back(std::move(l));
      args.push_back(multiplication());
      l = settle(call("_" + op + "_", pos, std::move(args)));
    }
    return l;
  }
  NodeP multiplication() {
    NodeP l = unary();
    while (is("*") || is("/") || is("%")) {
      const std::string op = peek().text;
      const std::size_t pos = peek().pos;
      ++at;
      std::vector<NodeP> args;
      args.push_back(std::move(l));
      args.push_back(unary());
      l = settle(call("_" + op + "_", pos, std::move(args)));
    }
    return l;
  }
  // CEL.g4: unary is `member`, `'!'+ member` or `'-'+ member`; an even run of either is the member
  // itself (parser.go VisitLogicalNot, VisitNegate), a '-' before a number literal makes it negative.
  NodeP unary() {
    const bool negative_literal = is("-") && (peek(1).t == Tok::Int || peek(1).t == Tok::Double);
    if (is("!") || (is("-") && !negative_literal)) {
      const std::string op = peek().text;
      const std::size_t pos = peek().pos;
      std::size_t count = 0;
      while (is(op)) {
        ++at;
        ++count;
      }
      NodeP m = member();
      if (count % 2 == 0) {
        fix_int(m.get());
        return m;
      }
      if (op == "-" && m->op == Node::Lit && m->lit.k == Value::Uint && m->name == "int") {
        if (m->lit.u > 9223372036854775808ull) fail("invalid int literal", pos);
        m->lit = Value::integer(static_cast<std::int64_t>(0 - m->lit.u));
        m->name.clear();
        m->pos = pos;
        return m;
      }
      if (op == "-" && m->op == Node::Lit && m->lit.k == Value::Double && m->name == "double") {
        m->lit.d = -m->lit.d;
        m->name.clear();
        m->pos = pos;
        return m;
      }
      fix_int(m.get());
      std::vector<NodeP> args;
      args.push_back(std::move(m));
      return settle(call(op == "!" ? "!_" : "-_", pos, std::move(args)));
    }
    NodeP n = member();
    fix_int(n.get());
    return n;
  }
  // An int literal not negated: its range is int64's.
  void fix_int(Node* n) {
    if (n->op == Node::Lit && n->name == "int") {
      if (n->lit.u > 9223372036854775807ull) fail("invalid int literal", n->pos);
      n->lit = Value::integer(static_cast<std::int64_t>(n->lit.u));
      n->name.clear();
    } else if (n->op == Node::Lit && n->name == "double") {
      n->name.clear();
    }
  }

  NodeP member() {
    NodeP e = primary();
    while (true) {
      if (is(".")) {
        const std::size_t pos = peek().pos;
        ++at;
        bool optional = false;
        if (is("?")) {  // cel.OptionalTypes: `.?field`
          optional = true;
          ++at;
        }
        if (peek().t != Tok::Ident)
          fail(fmt::format("Syntax error: no viable alternative at input '.{}'",
                           peek().t == Tok::End ? "" : peek().text),
               peek().pos);
        const std::string name = peek().text;
        ++at;
        fix_int(e.get());
        if (is("(")) {
          const std::size_t cpos = peek().pos;
          ++at;
          std::vector<NodeP> args = arg_list(")");
          e = settle(method(std::move(e), name, cpos, std::move(args)));
        } else {
          auto n = node(optional ? Node::OptSelect : Node::Select, pos);
          n->name = name;
          n->args.push_back(std::move(e));
          e = settle(std::move(n));
        }
      } else if (is("[")) {
        const std::size_t pos = peek().pos;
        ++at;
        fix_int(e.get());
        bool optional = false;
        if (is("?")) {  // cel.OptionalTypes: `[?key]`
          optional = true;
          ++at;
        }
        auto n = node(optional ? Node::OptIndex : Node::Index, pos);
        n->args.push_back(std::move(e));
        n->args.push_back(expr());
        expect("]");
        e = settle(std::move(n));
      } else {
        return e;
      }
    }
  }

  std::vector<NodeP> arg_list(std::string_view close) {
    std::vector<NodeP> args;
    if (is(close)) {
      ++at;
      return args;
    }
    while (true) {
      call_args = close == ")" && args.empty();
      args.push_back(expr());
      if (is(",")) {
        ++at;
        if (is(close)) break;  // a trailing comma
        continue;
      }
      break;
    }
    expect_one_of(close, fmt::format("{{'{}', ','}}", close));
    return args;
  }

  // The macros (cel-go parser/macro.go) and member calls.
  NodeP method(NodeP target, const std::string& name, std::size_t pos, std::vector<NodeP> args) {
    // Namespaced functions: ext.Sets' sets.contains/equivalent/intersects, optional.of/none.
    if (target->op == Node::Ident &&
        ((target->name == "sets" && (name == "contains" || name == "equivalent" || name == "intersects")) ||
         (target->name == "ip" && name == "isCanonical") ||
         (target->name == "optional" && (name == "of" || name == "none"))))
      return call(target->name + "." + name, pos, std::move(args));
    Macro m = Macro::None;
    if (name == "all" && args.size() == 2)
      m = Macro::All;
    else if (name == "exists" && args.size() == 2)
      m = Macro::Exists;
    else if (name == "exists_one" && args.size() == 2)
      m = Macro::ExistsOne;
    else if (name == "map" && args.size() == 2)
      m = Macro::Map;
    else if (name == "map" && args.size() == 3)
      m = Macro::MapFilter;
    else if (name == "filter" && args.size() == 2)
      m = Macro::Filter;
    if (m != Macro::None) {
      if (args[0]->op != Node::Ident) fail("argument must be a simple name", args[0]->pos);
      auto n = node(Node::Compr, pos);
      n->macro = m;
      n->name = name;
      n->var = args[0]->name;
      n->args.push_back(std::move(target));
      for (std::size_t i = 1; i < args.size(); ++i) n->args.push_back(std::move(args[i]));
      return n;
    }
    std::vector<NodeP> all;
    all.push_back(std::move(target));
    for (auto& a : args) all.push_back(std::move(a));
    return call(name, pos, std::move(all), true);
  }

  NodeP primary() {
    const Tok& t = peek();
    const bool in_call_args = call_args;
    call_args = false;
    if (in_call_args && !starts_primary(t)) call_args = true;  // kept for the message below
    switch (t.t) {
      case Tok::Int:
      case Tok::Uint:
      case Tok::Double:
      case Tok::String:
      case Tok::Bytes: {
        auto n = node(Node::Lit, t.pos);
        n->lit = t.v;
        if (t.t == Tok::Int) n->name = "int";  // a range still to check, once the sign is known
        if (t.t == Tok::Double) n->name = "double";
        ++at;
        return n;
      }
      case Tok::Ident: {
        const std::string name = t.text;
        const std::size_t pos = t.pos;
        if (name == "true" || name == "false") {
          auto n = node(Node::Lit, pos);
          n->lit = Value::boolean(name == "true");
          ++at;
          return n;
        }
        if (name == "null") {
          ++at;
          return node(Node::Lit, pos);
        }
        ++at;
        if (is("(")) {
          const std::size_t cpos = peek().pos;
          ++at;
          std::vector<NodeP> args = arg_list(")");
          if (name == "has") {
            if (args.size() != 1 || args[0]->op != Node::Select)
              fail("invalid argument to has() macro", args.empty() ? cpos : args[0]->pos);
            args[0]->op = Node::Has;
            return settle(std::move(args[0]));
          }
          return settle(call(name, cpos, std::move(args)));
        }
        auto n = node(Node::Ident, pos);
        n->name = name;
        return n;
      }
      case Tok::Punct:
        // CEL.g4 literal: a '-' sign is part of a number literal (`!-1` is `!` of -1).
        if (t.text == "-" && (peek(1).t == Tok::Int || peek(1).t == Tok::Double)) {
          const std::size_t pos = t.pos;
          ++at;
          auto n = node(Node::Lit, pos);
          if (peek().t == Tok::Int) {
            if (peek().v.u > 9223372036854775808ull) fail("invalid int literal", pos);
            n->lit = Value::integer(static_cast<std::int64_t>(0 - peek().v.u));
          } else {
            n->lit = Value::dbl(-peek().v.d);
          }
          ++at;
          return n;
        }
        if (t.text == "(") {
          ++at;
          NodeP e = expr();
          expect(")");
          return e;
        }
        if (t.text == "[") {
          auto n = node(Node::ListLit, t.pos);
          ++at;
          n->args = arg_list("]");
          return settle(std::move(n));
        }
        if (t.text == "{") {
          auto n = node(Node::MapLit, t.pos);
          ++at;
          if (is("}")) {
            ++at;
            return n;
          }
          while (true) {
            n->args.push_back(expr());
            expect_one_of(":", "':'");
            n->args.push_back(expr());
            if (is(",")) {
              ++at;
              if (is("}")) break;
              continue;
            }
            break;
          }
          expect_one_of("}", "{'}', ','}");
          return settle(std::move(n));
        }
        break;
      default:
        break;
    }
    fail(fmt::format("Syntax error: {} input '{}' expecting {{'[', '{{', '(', {}'.', '-', '!', 'true', 'false', "
                     "'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}}",
                     t.t != Tok::End && starts_primary(peek(1)) ? "extraneous" : "mismatched", t.text,
                     call_args ? "')', " : ""),
         t.pos);
  }
};

}  // namespace

struct Ast {
  NodeP root;
  std::string source;
};

namespace {

// ---- the checker ---------------------------------------------------------------------------------

struct Checker {
  std::vector<Issue>& issues;
  std::vector<std::pair<std::string, TypeP>> scope;
  std::vector<Issue> late;  // the AST validators' issues, reported when the checker finds none
  int in_format = 0;        // the checker is under a format() call (inExemptFunction)

  TypeP lookup(const std::string& name) const {
    for (auto it = scope.rbegin(); it != scope.rend(); ++it)
      if (it->first == name) return it->second;
    return nullptr;
  }
  TypeP error(std::size_t pos, std::string msg) {
    issues.push_back({pos, std::move(msg)});
    return prim(Type::Dyn);
  }
  TypeP no_match(const Node& n, const std::vector<TypeP>& args) {
    std::string shown;
    std::size_t from = 0;
    if (n.member) {
      shown = type_name(args[0]) + ".";
      from = 1;
    }
    shown += "(";
    for (std::size_t i = from; i < args.size(); ++i) shown += (i > from ? ", " : "") + type_name(args[i]);
    return error(n.pos, fmt::format("found no matching overload for '{}' applied to '{})'", n.name, shown));
  }

  static TypeP joined(const TypeP& prev, const TypeP& t) {
    if (!prev) return t;
    return assignable(prev, t) ? join(prev, t) : prim(Type::Dyn);
  }

  TypeP check(Node& n) {
    n.type = check_node(n);
    return n.type;
  }

  TypeP check_node(Node& n) {
    switch (n.op) {
      case Node::Lit:
        switch (n.lit.k) {
          case Value::Null:
            return prim(Type::Null);
          case Value::Bool:
            return prim(Type::Bool);
          case Value::Int:
            return prim(Type::Int);
          case Value::Uint:
            return prim(Type::Uint);
          case Value::Double:
            return prim(Type::Double);
          case Value::String:
            return prim(Type::String);
          case Value::Bytes:
            return prim(Type::Bytes);
          default:
            return prim(Type::Dyn);
        }
      case Node::Ident:
        if (TypeP t = lookup(n.name)) return t;
        if (type_ident(n.name)) return prim(Type::TypeT);
        return error(n.pos, fmt::format("undeclared reference to '{}' (in container '')", n.name));
      case Node::Select:
      case Node::Has:
      case Node::OptSelect: {
        TypeP t = check(*n.args[0]);
        const bool chained = n.op == Node::OptSelect && t->k == Type::Optional;
        if (chained) t = t->a;
        TypeP ft;
        if (t->k == Type::Object) {
          ft = field_type(*t, n.name);
          if (!ft) return error(n.pos, fmt::format("undefined field '{}'", n.name));
        } else if (t->k == Type::Map) {
          ft = t->b;
        } else if (t->k == Type::Dyn) {
          ft = prim(Type::Dyn);
        } else {
          return error(n.pos, fmt::format("type '{}' does not support field selection", type_name(t)));
        }
        if (n.op == Node::OptSelect) return optional_of(ft);
        return n.op == Node::Has ? prim(Type::Bool) : ft;
      }
      // cel.ValidateHomogeneousAggregateLiterals (cel/validator.go): a literal's elements (keys,
      // values) have one type; a list reports its first odd element, a map every odd entry.
      case Node::ListLit: {
        TypeP elem, first;
        bool reported = in_format > 0;  // (literals under a format() call are exempt)
        for (auto& a : n.args) {
          const TypeP t = check(*a);
          if (!first)
            first = t;
          else if (!reported && !equivalent(first, t)) {
            late.push_back({a->pos, fmt::format("expected type '{}' but found '{}'", type_name(first), type_name(t))});
            reported = true;
          }
          elem = joined(elem, t);
        }
        return list_of(elem ? elem : prim(Type::Dyn));
      }
      case Node::MapLit: {
        TypeP k, v, k0, v0;
        for (std::size_t i = 0; i + 1 < n.args.size(); i += 2) {
          const TypeP kt = check(*n.args[i]), vt = check(*n.args[i + 1]);
          if (!k0) {
            k0 = kt;
            v0 = vt;
          } else if (in_format == 0) {
            if (!equivalent(k0, kt))
              late.push_back(
                  {n.args[i]->pos, fmt::format("expected type '{}' but found '{}'", type_name(k0), type_name(kt))});
            if (!equivalent(v0, vt))
              late.push_back(
                  {n.args[i + 1]->pos, fmt::format("expected type '{}' but found '{}'", type_name(v0), type_name(vt))});
          }
          k = joined(k, kt);
          v = joined(v, vt);
        }
        return map_of(k ? k : prim(Type::Dyn), v ? v : prim(Type::Dyn));
      }
      case Node::Index:
      case Node::OptIndex: {
        TypeP c = check(*n.args[0]);
        const TypeP i = check(*n.args[1]);
        if (n.op == Node::OptIndex && c->k == Type::Optional) c = c->a;
        auto wrap = [&](TypeP t) { return n.op == Node::OptIndex ? optional_of(std::move(t)) : t; };
        if (c->k == Type::List && (i->k == Type::Int || i->k == Type::Uint || i->k == Type::Dyn)) return wrap(c->a);
        if (c->k == Type::Map && assignable(c->a, i)) return wrap(c->b);
        if (c->k == Type::Dyn) return wrap(prim(Type::Dyn));
        Node shown;
        shown.name = "_[_]";
        shown.pos = n.pos;
        return no_match(shown, {c, i});
      }
      case Node::Cond: {
        const TypeP c = check(*n.args[0]), t = check(*n.args[1]), f = check(*n.args[2]);
        if ((c->k != Type::Bool && c->k != Type::Dyn) || !assignable(t, f)) {
          Node shown;
          shown.name = "_?_:_";
          shown.pos = n.pos;
          return no_match(shown, {c, t, f});
        }
        return join(t, f);
      }
      case Node::And:
      case Node::Or: {
        const TypeP l = check(*n.args[0]), r = check(*n.args[1]);
        if ((l->k != Type::Bool && l->k != Type::Dyn) || (r->k != Type::Bool && r->k != Type::Dyn)) {
          Node shown;
          shown.name = n.op == Node::And ? "_&&_" : "_||_";
          shown.pos = n.pos;
          return no_match(shown, {l, r});
        }
        return prim(Type::Bool);
      }
      case Node::Compr: {
        const TypeP range = check(*n.args[0]);
        TypeP var;
        if (range->k == Type::List)
          var = range->a;
        else if (range->k == Type::Map)
          var = range->a;
        else if (range->k == Type::Dyn)
          var = prim(Type::Dyn);
        else
          return error(n.args[0]->pos, fmt::format("expression of type '{}' cannot be range of a comprehension "
                                                   "(must be list, map, or dynamic)",
                                                   type_name(range)));
        scope.emplace_back(n.var, var);
        std::vector<TypeP> bodies;
        for (std::size_t i = 1; i < n.args.size(); ++i) bodies.push_back(check(*n.args[i]));
        scope.pop_back();
        const bool has_pred = n.macro != Macro::Map;
        if (has_pred && bodies[0]->k != Type::Bool && bodies[0]->k != Type::Dyn) {
          Node shown;
          shown.name = n.macro == Macro::All ? "_&&_" : n.macro == Macro::Exists ? "_||_" : "_?_:_";
          shown.pos = n.args[1]->pos;
          return no_match(shown, n.macro == Macro::All || n.macro == Macro::Exists
                                     ? std::vector<TypeP>{prim(Type::Bool), bodies[0]}
                                     : std::vector<TypeP>{bodies[0], prim(Type::Dyn), prim(Type::Dyn)});
        }
        switch (n.macro) {
          case Macro::Map:
            return list_of(bodies[0]);
          case Macro::MapFilter:
            return list_of(bodies[1]);
          case Macro::Filter:
            return list_of(var);
          default:
            return prim(Type::Bool);
        }
      }
      case Node::Call:
        break;
    }
    const bool format = n.member && n.name == "format";
    in_format += format;
    std::vector<TypeP> args;
    for (auto& a : n.args) args.push_back(check(*a));
    in_format -= format;
    if (TypeP r = resolve(n, args)) return r;
    return prim(Type::Dyn);
  }

  // The overloads of cel-go's standard library, ext.Strings and Kubernetes' lists library.
  TypeP resolve(Node& n, const std::vector<TypeP>& a) {
    const std::string& f = n.name;
    auto is = [](const TypeP& t, Type::K k) { return t->k == k || t->k == Type::Dyn; };
    auto numeric = [&](const TypeP& t) { return is(t, Type::Int) || is(t, Type::Uint) || is(t, Type::Double); };
    const std::size_t argc = a.size() - (n.member ? 1 : 0);
    auto known = [&](std::initializer_list<const char*> names) {
      return std::any_of(names.begin(), names.end(), [&](const char* x) { return f == x; });
    };
    if (f == "_==_" || f == "_!=_") {
      if (assignable(a[0], a[1]) || a[0]->k == Type::Null || a[1]->k == Type::Null) return prim(Type::Bool);
      return no_match(n, a);
    }
    if (f == "_<_" || f == "_<=_" || f == "_>_" || f == "_>=_") {
      const auto k0 = a[0]->k, k1 = a[1]->k;
      const bool num0 = k0 == Type::Int || k0 == Type::Uint || k0 == Type::Double;
      const bool num1 = k1 == Type::Int || k1 == Type::Uint || k1 == Type::Double;
      if (k0 == Type::Dyn || k1 == Type::Dyn) {
        const TypeP& other = k0 == Type::Dyn ? a[1] : a[0];
        if (other->k == Type::Dyn || numeric(other) || other->k == Type::String || other->k == Type::Bytes ||
            other->k == Type::Bool || other->k == Type::Timestamp || other->k == Type::Duration)
          return prim(Type::Bool);
        return no_match(n, a);
      }
      if ((num0 && num1) || (k0 == k1 && (k0 == Type::String || k0 == Type::Bytes || k0 == Type::Bool ||
                                          k0 == Type::Timestamp || k0 == Type::Duration)))
        return prim(Type::Bool);
      return no_match(n, a);
    }
    if (f == "_+_" || f == "_-_" || f == "_*_" || f == "_/_" || f == "_%_") {
      const auto k0 = a[0]->k, k1 = a[1]->k;
      if (k0 == Type::Dyn && k1 == Type::Dyn) return prim(Type::Dyn);
      if (k0 == Type::Dyn || k1 == Type::Dyn) {
        const TypeP& other = k0 == Type::Dyn ? a[1] : a[0];
        if (f == "_+_" && other->k == Type::List) return other;
        return prim(Type::Dyn);
      }
      if (k0 == k1 && (k0 == Type::Int || k0 == Type::Uint || (k0 == Type::Double && f != "_%_"))) return a[0];
      if (f == "_+_") {
        if (k0 == k1 && (k0 == Type::String || k0 == Type::Bytes || k0 == Type::Duration)) return a[0];
        if (k0 == Type::List && k1 == Type::List && assignable(a[0]->a, a[1]->a))
          return list_of(join(a[0]->a, a[1]->a));
        if (k0 == Type::List && k1 == Type::List) return list_of(prim(Type::Dyn));
        if ((k0 == Type::Timestamp && k1 == Type::Duration) || (k0 == Type::Duration && k1 == Type::Timestamp))
          return prim(Type::Timestamp);
      }
      if (f == "_-_") {
        if (k0 == Type::Timestamp && k1 == Type::Timestamp) return prim(Type::Duration);
        if (k0 == Type::Timestamp && k1 == Type::Duration) return prim(Type::Timestamp);
        if (k0 == Type::Duration && k1 == Type::Duration) return prim(Type::Duration);
      }
      return no_match(n, a);
    }
    if (f == "-_") {
      if (a[0]->k == Type::Int || a[0]->k == Type::Double || a[0]->k == Type::Dyn) return a[0];
      return no_match(n, a);
    }
    if (f == "!_") {
      if (is(a[0], Type::Bool)) return prim(Type::Bool);
      return no_match(n, a);
    }
    if (f == "@in") {
      if (a[1]->k == Type::Dyn) return prim(Type::Bool);
      if (a[1]->k == Type::List && assignable(a[0], a[1]->a)) return prim(Type::Bool);
      if (a[1]->k == Type::Map && assignable(a[0], a[1]->a)) return prim(Type::Bool);
      return no_match(n, a);
    }
    if (f == "size") {
      if (argc == 0 && n.member) {
        const auto k = a[0]->k;
        if (k == Type::String || k == Type::Bytes || k == Type::List || k == Type::Map || k == Type::Dyn)
          return prim(Type::Int);
      } else if (argc == 1 && !n.member) {
        const auto k = a[0]->k;
        if (k == Type::String || k == Type::Bytes || k == Type::List || k == Type::Map || k == Type::Dyn)
          return prim(Type::Int);
      }
      return no_match(n, a);
    }
    // conversions
    if (!n.member && argc == 1 &&
        known({"int", "uint", "double", "string", "bytes", "bool", "dyn", "duration", "timestamp"})) {
      const auto k = a[0]->k;
      if (f == "dyn") return prim(Type::Dyn);
      if ((f == "duration" || f == "timestamp") && n.args[0]->op == Node::Lit && n.args[0]->lit.k == Value::String) {
        std::int64_t x;
        std::uint64_t y;
        const bool valid = f == "duration" ? gotext::parse_duration(n.args[0]->lit.s).has_value()
                                           : parse_rfc3339(n.args[0]->lit.s, x, y);
        if (!valid) late.push_back({n.args[0]->pos, fmt::format("invalid {} argument", f)});
      }
      bool ok = k == Type::Dyn;
      if (f == "int")
        ok = ok || k == Type::Int || k == Type::Uint || k == Type::Double || k == Type::String || k == Type::Timestamp;
      if (f == "uint") ok = ok || k == Type::Int || k == Type::Uint || k == Type::Double || k == Type::String;
      if (f == "double") ok = ok || k == Type::Int || k == Type::Uint || k == Type::Double || k == Type::String;
      if (f == "string")
        ok = ok || k == Type::Int || k == Type::Uint || k == Type::Double || k == Type::String || k == Type::Bytes ||
             k == Type::Bool || k == Type::Timestamp || k == Type::Duration || k == Type::Ip || k == Type::Cidr;
      if (f == "bytes") ok = ok || k == Type::Bytes || k == Type::String;
      if (f == "bool") ok = ok || k == Type::Bool || k == Type::String;
      if (f == "duration") ok = ok || k == Type::Duration || k == Type::String;
      if (f == "timestamp") ok = ok || k == Type::Timestamp || k == Type::String || k == Type::Int;
      if (!ok) return no_match(n, a);
      static const std::pair<const char*, Type::K> result[] = {
          {"int", Type::Int},     {"uint", Type::Uint}, {"double", Type::Double},     {"string", Type::String},
          {"bytes", Type::Bytes}, {"bool", Type::Bool}, {"duration", Type::Duration}, {"timestamp", Type::Timestamp}};
      for (const auto& [name, k2] : result)
        if (f == name) return prim(k2);
    }
    if (!n.member && (f == "sets.contains" || f == "sets.equivalent" || f == "sets.intersects")) {
      if (argc == 2 && (a[0]->k == Type::List || a[0]->k == Type::Dyn) &&
          (a[1]->k == Type::List || a[1]->k == Type::Dyn))
        return prim(Type::Bool);
      return no_match(n, a);
    }
    // apiserver/pkg/cel/library/urls.go
    if (!n.member && (f == "url" || f == "isURL")) {
      if (argc == 1 && (a[0]->k == Type::String || a[0]->k == Type::Dyn))
        return prim(f == "url" ? Type::Url : Type::Bool);
      return no_match(n, a);
    }
    if (n.member && a[0]->k == Type::Url &&
        (f == "getScheme" || f == "getHost" || f == "getHostname" || f == "getPort" || f == "getEscapedPath" ||
         f == "getQuery")) {
      if (argc != 0) return no_match(n, a);
      return f == "getQuery" ? map_of(prim(Type::String), list_of(prim(Type::String))) : prim(Type::String);
    }
    // apiserver/pkg/cel/library/ip.go, cidr.go
    if (!n.member && (f == "ip" || f == "isIP" || f == "cidr" || f == "isCIDR")) {
      if (argc == 1 && (a[0]->k == Type::String || a[0]->k == Type::Dyn))
        return prim(f == "ip" ? Type::Ip : f == "cidr" ? Type::Cidr : Type::Bool);
      return no_match(n, a);
    }
    if (!n.member && f == "ip.isCanonical") {
      if (argc == 1 && (a[0]->k == Type::String || a[0]->k == Type::Dyn)) return prim(Type::Bool);
      return no_match(n, a);
    }
    if (n.member && a[0]->k == Type::Ip &&
        (f == "family" || f == "isUnspecified" || f == "isLoopback" || f == "isLinkLocalMulticast" ||
         f == "isLinkLocalUnicast" || f == "isGlobalUnicast")) {
      if (argc != 0) return no_match(n, a);
      return prim(f == "family" ? Type::Int : Type::Bool);
    }
    if (n.member && a[0]->k == Type::Cidr &&
        (f == "containsIP" || f == "containsCIDR" || f == "ip" || f == "prefixLength" || f == "masked")) {
      if (f == "containsIP" && argc == 1 && (a[1]->k == Type::Ip || a[1]->k == Type::String || a[1]->k == Type::Dyn))
        return prim(Type::Bool);
      if (f == "containsCIDR" && argc == 1 &&
          (a[1]->k == Type::Cidr || a[1]->k == Type::String || a[1]->k == Type::Dyn))
        return prim(Type::Bool);
      if (argc == 0 && f == "ip") return prim(Type::Ip);
      if (argc == 0 && f == "prefixLength") return prim(Type::Int);
      if (argc == 0 && f == "masked") return prim(Type::Cidr);
      return no_match(n, a);
    }
    // apiserver/pkg/cel/library/quantity.go
    if (!n.member && (f == "quantity" || f == "isQuantity")) {
      if (argc == 1 && (a[0]->k == Type::String || a[0]->k == Type::Dyn))
        return prim(f == "quantity" ? Type::Quantity : Type::Bool);
      return no_match(n, a);
    }
    if (!a.empty() && a[0]->k == Type::Quantity &&
        (f == "sign" || f == "isGreaterThan" || f == "isLessThan" || f == "compareTo" || f == "asApproximateFloat" ||
         f == "asInteger" || f == "isInteger" || f == "add" || f == "sub")) {
      const bool unary = f == "sign" || f == "asApproximateFloat" || f == "asInteger" || f == "isInteger";
      if (unary && argc == (n.member ? 0u : 1u) && n.member == (f != "sign"))
        return prim(f == "sign" || f == "asInteger" ? Type::Int : f == "isInteger" ? Type::Bool : Type::Double);
      if (!unary && n.member && argc == 1) {
        const auto k = a[1]->k;
        if ((f == "add" || f == "sub") && (k == Type::Quantity || k == Type::Int || k == Type::Dyn))
          return prim(Type::Quantity);
        if (f != "add" && f != "sub" && (k == Type::Quantity || k == Type::Dyn))
          return prim(f == "compareTo" ? Type::Int : Type::Bool);
      }
      return no_match(n, a);
    }
    if (!n.member && f == "type" && argc == 1) return prim(Type::TypeT);
    if (!n.member && f == "optional.of" && argc == 1) return optional_of(a[0]);
    if (!n.member && f == "optional.none" && argc == 0) return optional_of(prim(Type::Dyn));
    if (n.member) {
      const TypeP& t = a[0];
      auto args_are = [&](std::initializer_list<Type::K> ks) {
        if (argc != ks.size()) return false;
        std::size_t i = 1;
        for (auto k : ks)
          if (!is(a[i++], k)) return false;
        return true;
      };
      const bool str = is(t, Type::String);
      if (known({"contains", "startsWith", "endsWith", "matches"})) {
        if (str && args_are({Type::String})) {
          if (f == "matches") check_regex(n);
          return prim(Type::Bool);
        }
        return no_match(n, a);
      }
      if (known({"lowerAscii", "upperAscii", "trim"})) {
        if (str && argc == 0) return prim(Type::String);
        return no_match(n, a);
      }
      // ext.Strings v1 format (its arguments' list is exempt from the homogeneous-literal rule)
      if (f == "format") {
        if (str && argc == 1 && (a[1]->k == Type::List || a[1]->k == Type::Dyn)) {
          check_format(n);
          return prim(Type::String);
        }
        return no_match(n, a);
      }
      // apiserver/pkg/cel/library/regex.go
      if (f == "find" || f == "findAll") {
        if (str && f == "find" && args_are({Type::String})) return prim(Type::String);
        if (str && f == "findAll" && (args_are({Type::String}) || args_are({Type::String, Type::Int})))
          return list_of(prim(Type::String));
        return no_match(n, a);
      }
      if (f == "charAt") {
        if (str && args_are({Type::Int})) return prim(Type::String);
        return no_match(n, a);
      }
      if (f == "indexOf" || f == "lastIndexOf") {
        if (str && (args_are({Type::String}) || args_are({Type::String, Type::Int}))) return prim(Type::Int);
        if (t->k == Type::List && argc == 1 && assignable(t->a, a[1])) return prim(Type::Int);
        return no_match(n, a);
      }
      if (f == "replace") {
        if (str && (args_are({Type::String, Type::String}) || args_are({Type::String, Type::String, Type::Int})))
          return prim(Type::String);
        return no_match(n, a);
      }
      if (f == "split") {
        if (str && (args_are({Type::String}) || args_are({Type::String, Type::Int})))
          return list_of(prim(Type::String));
        return no_match(n, a);
      }
      if (f == "substring") {
        if (str && (args_are({Type::Int}) || args_are({Type::Int, Type::Int}))) return prim(Type::String);
        return no_match(n, a);
      }
      if (f == "join") {
        if ((t->k == Type::Dyn || (t->k == Type::List && is(t->a, Type::String))) &&
            (argc == 0 || args_are({Type::String})))
          return prim(Type::String);
        return no_match(n, a);
      }
      if (known({"isSorted", "sum", "min", "max"})) {
        if (argc == 0 && (t->k == Type::List || t->k == Type::Dyn)) {
          const TypeP e = t->k == Type::List ? t->a : prim(Type::Dyn);
          const bool comparable = e->k == Type::Dyn || e->k == Type::Int || e->k == Type::Uint ||
                                  e->k == Type::Double || e->k == Type::String || e->k == Type::Bytes ||
                                  e->k == Type::Bool || e->k == Type::Timestamp || e->k == Type::Duration;
          const bool summable = e->k == Type::Dyn || e->k == Type::Int || e->k == Type::Uint || e->k == Type::Double ||
                                e->k == Type::Duration;
          if (f == "isSorted" && comparable) return prim(Type::Bool);
          if (f == "sum" && summable) return e;
          if ((f == "min" || f == "max") && comparable) return e;
        }
        return no_match(n, a);
      }
      // cel-go's timestamp and duration accessors (checker/decls standard library)
      if (known({"getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek", "getHours",
                 "getMinutes", "getSeconds", "getMilliseconds"})) {
        const bool for_duration = known({"getHours", "getMinutes", "getSeconds", "getMilliseconds"});
        if ((t->k == Type::Timestamp || t->k == Type::Dyn) && (argc == 0 || args_are({Type::String})))
          return prim(Type::Int);
        if (for_duration && t->k == Type::Duration && argc == 0) return prim(Type::Int);
        return no_match(n, a);
      }
      if (t->k == Type::Optional || t->k == Type::Dyn) {
        if (f == "hasValue" && argc == 0) return prim(Type::Bool);
        if (f == "value" && argc == 0) return t->k == Type::Optional ? t->a : t;
        if (f == "orValue" && argc == 1 && (t->k == Type::Dyn || assignable(t->a, a[1])))
          return t->k == Type::Optional ? join(t->a, a[1]) : a[1];
        if (known({"hasValue", "value", "orValue"})) return no_match(n, a);
      }
    }
    return error(n.pos, fmt::format("undeclared reference to '{}' (in container '')", f));
  }

  // ext/formatting.go stringFormatValidator: a literal format string with a literal list of
  // arguments is checked when the rule is compiled, clause by clause against the arguments' types.
  void check_format(const Node& n) {
    const Node& fmt_node = *n.args[0];
    const Node& list = *n.args[1];
    if (fmt_node.op != Node::Lit || fmt_node.lit.k != Value::String || list.op != Node::ListLit) return;
    const std::string& f = fmt_node.lit.s;
    auto kind_name = [](const TypeP& t) {
      return t->k == Type::List ? std::string("list") : t->k == Type::Map ? std::string("map") : type_name(t);
    };
    std::size_t argi = 0;
    for (std::size_t i = 0; i < f.size();) {
      if (f[i] != '%') {
        ++i;
        continue;
      }
      if (i + 1 < f.size() && f[i + 1] == '%') {
        i += 2;
        continue;
      }
      if (argi >= list.args.size()) return late.push_back({n.pos, fmt::format("index {} out of range", argi)});
      if (i + 1 >= f.size()) return late.push_back({n.pos, "unexpected end of string"});
      const Node& arg = *list.args[argi++];
      ++i;
      if (f[i] == '.') {
        std::size_t j = i + 1;
        while (j < f.size() && f[j] >= '0' && f[j] <= '9') ++j;
        if (j >= f.size())
          return late.push_back({n.pos,
                                 "could not parse formatting clause: error while parsing precision: could not find "
                                 "end of precision specifier"});
        i = j;
      }
      const char c = f[i++];
      const Type::K k = arg.type ? arg.type->k : Type::Dyn;
      auto one_of = [&](std::initializer_list<Type::K> ks) {
        return k == Type::Dyn || std::find(ks.begin(), ks.end(), k) != ks.end();
      };
      std::string bad;
      switch (c) {
        case 's':
          if (!one_of({Type::String, Type::Bool, Type::Bytes, Type::Int, Type::Uint, Type::Double, Type::Map,
                       Type::List, Type::TypeT, Type::Duration, Type::Timestamp, Type::Null}))
            bad =
                "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, "
                "durations, and timestamps";
          break;
        case 'd':
          if (!one_of({Type::Int, Type::Uint})) bad = "decimal clause can only be used on integers";
          break;
        case 'f':
          if (!one_of({Type::Double})) bad = "fixed-point clause can only be used on doubles";
          break;
        case 'e':
          if (!one_of({Type::Double})) bad = "scientific clause can only be used on doubles";
          break;
        case 'b':
          if (!one_of({Type::Int, Type::Uint, Type::Bool})) bad = "only integers and bools can be formatted as binary";
          break;
        case 'x':
        case 'X':
          if (!one_of({Type::Int, Type::Uint, Type::String, Type::Bytes}))
            bad = "only integers, byte buffers, and strings can be formatted as hex";
          break;
        case 'o':
          if (!one_of({Type::Int, Type::Uint})) bad = "octal clause can only be used on integers";
          break;
        default:
          return late.push_back(
              {n.pos, fmt::format("could not parse formatting clause: unrecognized formatting clause \"{}\"", c)});
      }
      if (!bad.empty())
        return late.push_back(
            {arg.pos, fmt::format("error during formatting: {}, was given {}", bad, kind_name(arg.type))});
    }
    if (list.args.size() > argi)
      late.push_back({n.pos, fmt::format("too many arguments supplied to string.format (expected {}, got {})", argi,
                                         list.args.size())});
  }

  // cel-go's regex validator: a constant pattern must compile.
  void check_regex(const Node& n) {
    const Node& pat = *n.args[1];
    if (pat.op != Node::Lit || pat.lit.k != Value::String) return;
    if (!Regex::compile(pat.lit.s)) late.push_back({pat.pos, "invalid matches argument"});
  }
};

// ---- evaluation ----------------------------------------------------------------------------------

int compare_numbers(const Value& a, const Value& b) {  // -1, 0, 1; 2 for NaN
  auto as_ld = [](const Value& v) -> long double {
    return v.k == Value::Int ? static_cast<long double>(v.i) : v.k == Value::Uint ? static_cast<long double>(v.u) : v.d;
  };
  if (a.k == Value::Int && b.k == Value::Int) return a.i < b.i ? -1 : a.i > b.i;
  if (a.k == Value::Uint && b.k == Value::Uint) return a.u < b.u ? -1 : a.u > b.u;
  if (a.k == Value::Int && b.k == Value::Uint) {
    if (a.i < 0) return -1;
    const auto u = static_cast<std::uint64_t>(a.i);
    return u < b.u ? -1 : u > b.u;
  }
  if (a.k == Value::Uint && b.k == Value::Int) return -compare_numbers(b, a);
  const long double x = as_ld(a), y = as_ld(b);
  if (std::isnan(x) || std::isnan(y)) return 2;
  return x < y ? -1 : x > y;
}
bool is_number(const Value& v) { return v.k == Value::Int || v.k == Value::Uint || v.k == Value::Double; }

// cel-go's heterogeneous equality: numbers across types, lists and maps member by member.
Value equals(const Value& a, const Value& b) {
  if (a.is_error()) return a;
  if (b.is_error()) return b;
  if (is_number(a) && is_number(b)) return Value::boolean(compare_numbers(a, b) == 0);
  if (a.k != b.k) return Value::boolean(false);
  switch (a.k) {
    case Value::Null:
      return Value::boolean(true);
    case Value::Bool:
      return Value::boolean(a.b == b.b);
    case Value::String:
    case Value::Bytes:
      return Value::boolean(a.s == b.s);
    case Value::Timestamp:
      return Value::boolean(a.i == b.i && a.u == b.u);
    case Value::Duration:
      return Value::boolean(a.i == b.i);
    case Value::QuantityV:
      return Value::boolean(Quantity::parse(a.s) == Quantity::parse(b.s));
    case Value::TypeV:
    case Value::UrlV:
    case Value::IpV:
    case Value::CidrV:
      return Value::boolean(a.s == b.s);  // (IPs and CIDRs are held in canonical form)
    case Value::ListV:
    case Value::Optional: {
      if (a.list->size() != b.list->size()) return Value::boolean(false);
      for (std::size_t i = 0; i < a.list->size(); ++i) {
        Value e = equals((*a.list)[i], (*b.list)[i]);
        if (e.is_error() || !e.b) return e;
      }
      return Value::boolean(true);
    }
    case Value::MapV: {
      if (a.map->size() != b.map->size()) return Value::boolean(false);
      for (const auto& [k, v] : *a.map) {
        const Value* other = nullptr;
        for (const auto& [k2, v2] : *b.map)
          if (auto e = equals(k, k2); !e.is_error() && e.b) other = &v2;
        if (!other) return Value::boolean(false);
        Value e = equals(v, *other);
        if (e.is_error() || !e.b) return e;
      }
      return Value::boolean(true);
    }
    default:
      return Value::boolean(false);
  }
}

// -1, 0, 1, or 2 when the two cannot be ordered (an error).
int compare(const Value& a, const Value& b) {
  if (is_number(a) && is_number(b)) return compare_numbers(a, b);
  if (a.k != b.k) return 2;
  switch (a.k) {
    case Value::String:
    case Value::Bytes:
      return a.s < b.s ? -1 : a.s > b.s;
    case Value::Bool:
      return a.b < b.b ? -1 : a.b > b.b;
    case Value::Duration:
      return a.i < b.i ? -1 : a.i > b.i;
    case Value::Timestamp:
      return a.i != b.i ? (a.i < b.i ? -1 : 1) : (a.u < b.u ? -1 : a.u > b.u);
    default:
      return 2;
  }
}

std::size_t runes(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}
// The byte offset of code point `i` (s.size() when i is the length).
std::size_t rune_offset(std::string_view s, std::size_t i) {
  std::size_t n = 0;
  for (std::size_t b = 0; b < s.size(); ++b)
    if ((static_cast<unsigned char>(s[b]) & 0xC0) != 0x80) {
      if (n == i) return b;
      ++n;
    }
  return s.size();
}

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

Value int_overflow() { return Value::error("integer overflow"); }
Value uint_overflow() { return Value::error("unsigned integer overflow"); }

Value arith(const std::string& op, const Value& a, const Value& b) {
  if (a.k == Value::Int && b.k == Value::Int) {
    std::int64_t r;
    if (op == "_+_") return __builtin_add_overflow(a.i, b.i, &r) ? int_overflow() : Value::integer(r);
    if (op == "_-_") return __builtin_sub_overflow(a.i, b.i, &r) ? int_overflow() : Value::integer(r);
    if (op == "_*_") return __builtin_mul_overflow(a.i, b.i, &r) ? int_overflow() : Value::integer(r);
    if (op == "_/_") {
      if (b.i == 0) return Value::error("division by zero");
      if (a.i == kMin && b.i == -1) return int_overflow();
      return Value::integer(a.i / b.i);
    }
    if (op == "_%_") {
      if (b.i == 0) return Value::error("modulus by zero");
      if (a.i == kMin && b.i == -1) return int_overflow();
      return Value::integer(a.i % b.i);
    }
  }
  if (a.k == Value::Uint && b.k == Value::Uint) {
    std::uint64_t r;
    if (op == "_+_") return __builtin_add_overflow(a.u, b.u, &r) ? uint_overflow() : Value::unsigned_(r);
    if (op == "_-_") return __builtin_sub_overflow(a.u, b.u, &r) ? uint_overflow() : Value::unsigned_(r);
    if (op == "_*_") return __builtin_mul_overflow(a.u, b.u, &r) ? uint_overflow() : Value::unsigned_(r);
    if (op == "_/_") return b.u == 0 ? Value::error("division by zero") : Value::unsigned_(a.u / b.u);
    if (op == "_%_") return b.u == 0 ? Value::error("modulus by zero") : Value::unsigned_(a.u % b.u);
  }
  if (a.k == Value::Double && b.k == Value::Double) {
    if (op == "_+_") return Value::dbl(a.d + b.d);
    if (op == "_-_") return Value::dbl(a.d - b.d);
    if (op == "_*_") return Value::dbl(a.d * b.d);
    if (op == "_/_") return Value::dbl(a.d / b.d);
  }
  if (op == "_+_") {
    if (a.k == Value::String && b.k == Value::String) return Value::string(a.s + b.s);
    if (a.k == Value::Bytes && b.k == Value::Bytes) return Value::string(a.s + b.s, Value::Bytes);
    if (a.k == Value::ListV && b.k == Value::ListV) {
      List l = *a.list;
      l.insert(l.end(), b.list->begin(), b.list->end());
      return Value::of_list(std::move(l));
    }
  }
  // time arithmetic (cel-go common/types/timestamp.go, duration.go)
  std::int64_t r;
  if (a.k == Value::Duration && b.k == Value::Duration) {
    if (op == "_+_") return __builtin_add_overflow(a.i, b.i, &r) ? int_overflow() : Value::duration(r);
    if (op == "_-_") return __builtin_sub_overflow(a.i, b.i, &r) ? int_overflow() : Value::duration(r);
  }
  auto shift = [](const Value& t, std::int64_t nanos) {
    __int128 total = static_cast<__int128>(t.i) * 1000000000 + t.u + nanos;
    std::int64_t secs = static_cast<std::int64_t>(total / 1000000000);
    __int128 rem = total % 1000000000;
    if (rem < 0) {
      rem += 1000000000;
      --secs;
    }
    return Value::timestamp(secs, static_cast<std::uint64_t>(rem));
  };
  if (op == "_+_" && a.k == Value::Timestamp && b.k == Value::Duration) return shift(a, b.i);
  if (op == "_+_" && a.k == Value::Duration && b.k == Value::Timestamp) return shift(b, a.i);
  if (op == "_-_" && a.k == Value::Timestamp && b.k == Value::Duration) {
    if (b.i == kMin) return int_overflow();
    return shift(a, -b.i);
  }
  if (op == "_-_" && a.k == Value::Timestamp && b.k == Value::Timestamp) {
    const __int128 d = (static_cast<__int128>(a.i) - b.i) * 1000000000 + (static_cast<__int128>(a.u) - b.u);
    if (d > kMax || d < kMin) return int_overflow();
    return Value::duration(static_cast<std::int64_t>(d));
  }
  return no_overload();
}

// The whole string as a number of type T (int(), uint(), double() of a string), or nullopt.
template <class T>
std::optional<T> whole_number(const std::string& s) {
  T n{};
  if constexpr (std::is_floating_point_v<T>) {
    char* end = nullptr;
    n = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return std::nullopt;
  } else {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), n);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  }
  return n;
}

Value convert(const std::string& f, const Value& v) {
  if (f == "dyn") return v;
  if (f == "int") {
    switch (v.k) {
      case Value::Int:
        return v;
      case Value::Uint:
        return v.u > static_cast<std::uint64_t>(kMax) ? int_overflow() : Value::integer(static_cast<std::int64_t>(v.u));
      case Value::Double:
        if (!(v.d > -9223372036854775808.0 && v.d < 9223372036854775807.0)) return int_overflow();
        return Value::integer(static_cast<std::int64_t>(v.d));
      case Value::String:
        if (const auto n = whole_number<std::int64_t>(v.s)) return Value::integer(*n);
        return Value::error("type conversion error from 'string' to 'int'");
      case Value::Timestamp:
        return Value::integer(v.i);
      default:
        break;
    }
  }
  if (f == "uint") {
    switch (v.k) {
      case Value::Uint:
        return v;
      case Value::Int:
        return v.i < 0 ? uint_overflow() : Value::unsigned_(static_cast<std::uint64_t>(v.i));
      case Value::Double:
        if (!(v.d > -1 && v.d < 18446744073709551616.0)) return uint_overflow();
        return Value::unsigned_(static_cast<std::uint64_t>(v.d));
      case Value::String:
        if (const auto n = whole_number<std::uint64_t>(v.s)) return Value::unsigned_(*n);
        return Value::error("type conversion error from 'string' to 'uint'");
      default:
        break;
    }
  }
  if (f == "double") {
    switch (v.k) {
      case Value::Double:
        return v;
      case Value::Int:
        return Value::dbl(static_cast<double>(v.i));
      case Value::Uint:
        return Value::dbl(static_cast<double>(v.u));
      case Value::String:
        if (const auto d = whole_number<double>(v.s)) return Value::dbl(*d);
        return Value::error("type conversion error from 'string' to 'double'");
      default:
        break;
    }
  }
  if (f == "string") {
    switch (v.k) {
      case Value::String:
        return v;
      case Value::Int:
        return Value::string(std::to_string(v.i));
      case Value::Uint:
        return Value::string(std::to_string(v.u));
      case Value::Double:
        return Value::string(go_float(v.d));
      case Value::Bool:
        return Value::string(v.b ? "true" : "false");
      case Value::Bytes:
        return Value::string(v.s);
      case Value::Timestamp:
        return Value::string(format_timestamp(v.i, v.u));
      case Value::Duration:
        return Value::string(format_duration(v.i));
      case Value::IpV:
      case Value::CidrV:
        return Value::string(v.s);
      default:
        break;
    }
  }
  if (f == "bytes") {
    if (v.k == Value::Bytes) return v;
    if (v.k == Value::String) return Value::string(v.s, Value::Bytes);
  }
  if (f == "bool") {
    if (v.k == Value::Bool) return v;
    if (v.k == Value::String) {  // strconv.ParseBool
      for (const char* t : {"1", "t", "T", "TRUE", "true", "True"})
        if (v.s == t) return Value::boolean(true);
      for (const char* t : {"0", "f", "F", "FALSE", "false", "False"})
        if (v.s == t) return Value::boolean(false);
      return Value::error("type conversion error from 'string' to 'bool'");
    }
  }
  if (f == "duration") {
    if (v.k == Value::Duration) return v;
    if (v.k == Value::String) {
      const std::optional<std::int64_t> n = gotext::parse_duration(v.s);
      if (!n) return Value::error("type conversion error from 'string' to 'google.protobuf.Duration'");
      return Value::duration(*n);
    }
  }
  if (f == "timestamp") {
    if (v.k == Value::Timestamp) return v;
    if (v.k == Value::Int) return Value::timestamp(v.i, 0);
    if (v.k == Value::String) {
      std::int64_t secs;
      std::uint64_t nanos;
      if (!parse_rfc3339(v.s, secs, nanos))
        return Value::error("type conversion error from 'string' to 'google.protobuf.Timestamp'");
      return Value::timestamp(secs, nanos);
    }
  }
  return no_overload();
}

std::string ascii_case(std::string s, bool upper) {
  for (char& c : s)
    c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c))
                                : std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// strings.TrimSpace's set, as ext.Strings trims (unicode.IsSpace).
std::string trim_space(std::string_view s) {
  auto space_at_front = [&](std::size_t& n) {
    if (s.empty()) return false;
    const unsigned char c = static_cast<unsigned char>(s[0]);
    if (c == ' ' || (c >= '\t' && c <= '\r')) return n = 1, true;
    if (s.starts_with("\xC2\x85") || s.starts_with("\xC2\xA0")) return n = 2, true;
    if (s.starts_with("\xE2\x80\xA8") || s.starts_with("\xE2\x80\xA9") || s.starts_with("\xE3\x80\x80"))
      return n = 3, true;
    return false;
  };
  std::size_t n = 0;
  while (space_at_front(n)) s.remove_prefix(n);
  while (!s.empty()) {
    const unsigned char c = static_cast<unsigned char>(s.back());
    if (c == ' ' || (c >= '\t' && c <= '\r'))
      s.remove_suffix(1);
    else if (s.ends_with("\xC2\x85") || s.ends_with("\xC2\xA0"))
      s.remove_suffix(2);
    else if (s.ends_with("\xE2\x80\xA8") || s.ends_with("\xE2\x80\xA9") || s.ends_with("\xE3\x80\x80"))
      s.remove_suffix(3);
    else
      break;
  }
  return std::string(s);
}

// ---- ext/formatting.go: string.format(list) ---------------------------------------------------------

// The type names format's errors give.
std::string format_type_name(const Value& v) {
  switch (v.k) {
    case Value::ListV:
      return "list";
    case Value::MapV:
      return "map";
    default:
      return value_type_name(v);
  }
}

// en_US grouping of an integer part, as golang.org/x/text/message prints %f and %e.
std::string group_thousands(std::string num) {
  const std::size_t start = (!num.empty() && num[0] == '-') ? 1 : 0;
  std::size_t end = num.find_first_of(".e", start);
  if (end == std::string::npos) end = num.size();
  for (std::ptrdiff_t i = static_cast<std::ptrdiff_t>(end) - 3; i > static_cast<std::ptrdiff_t>(start); i -= 3)
    num.insert(static_cast<std::size_t>(i), ",");
  return num;
}

std::string format_value(const Value& v, bool quoted, std::string& err);

// How golang.org/x/text/message prints %e for en_US: "1.234500 × 10⁰³", narrow no-break spaces
// around the ×. (ext/formatting.go builds "%<precision>e", a width: the precision is always 6.)
std::string en_us_scientific(double d) {
  const std::string e = fmt::format("{:.6e}", d);  // "1.234500e+03"
  const auto at = e.find('e');
  static const char* const sup[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
  std::string out = e.substr(0, at) + "\u202f×\u202f10";
  if (e[at + 1] == '-') out += "⁻";
  for (std::size_t i = at + 2; i < e.size(); ++i) out += sup[e[i] - '0'];
  return out;
}

// FormatString (%s), and the CEL-literal forms lists and maps print their members in.
std::string format_string(const Value& v, std::string& err) {
  switch (v.k) {
    case Value::ListV: {
      std::string out = "[";
      for (std::size_t i = 0; i < v.list->size() && err.empty(); ++i)
        out += (i ? ", " : "") + format_value((*v.list)[i], true, err);
      return out + "]";
    }
    case Value::MapV: {
      std::vector<std::pair<std::string, std::string>> pairs;
      for (const auto& [k, x] : *v.map) pairs.emplace_back(format_value(k, true, err), format_value(x, true, err));
      std::stable_sort(pairs.begin(), pairs.end());
      std::string out = "{";
      for (std::size_t i = 0; i < pairs.size(); ++i) out += (i ? ", " : "") + pairs[i].first + ":" + pairs[i].second;
      return out + "}";
    }
    case Value::Null:
      return "null";
    case Value::Int:
    case Value::Uint:
    case Value::Double:
    case Value::Bool:
    case Value::String:
    case Value::Bytes:
    case Value::Timestamp:
    case Value::Duration:
      return convert("string", v).s;
    case Value::TypeV:
      return v.s;
    default:
      err =
          "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and "
          "timestamps, was given " +
          format_type_name(v);
      return {};
  }
}

// clauseForType and quoteForCEL: a list's or a map's member as a CEL literal.
std::string format_value(const Value& v, bool quoted, std::string& err) {
  switch (v.k) {
    case Value::Timestamp:
      return "timestamp(" + go_quote(format_timestamp(v.i, v.u)) + ")";
    case Value::Duration:
      return "duration(" + go_quote(format_duration(v.i)) + ")";
    case Value::Double:
      if (std::isnan(v.d) || std::isinf(v.d)) return go_quote(convert("string", v).s);
      return fmt::format("{:.6f}", v.d);
    case Value::TypeV:
      return "type(" + v.s + ")";
    case Value::String:
      return quoted ? go_quote(v.s) : v.s;
    case Value::Bytes:
      return quoted ? "b" + go_quote(v.s) : v.s;
    default:
      return format_string(v, err);
  }
}

// Go's %b, %x, %o of an int64: a sign, then the magnitude.
std::string signed_in_base(std::int64_t i, char base) {
  const std::uint64_t m = i < 0 ? 0 - static_cast<std::uint64_t>(i) : static_cast<std::uint64_t>(i);
  const std::string digits = base == 'b'   ? fmt::format("{:b}", m)
                             : base == 'x' ? fmt::format("{:x}", m)
                                           : fmt::format("{:o}", m);
  return (i < 0 ? "-" : "") + digits;
}

Value format(const std::string& f, const List& args) {
  std::string out, err;
  std::size_t argi = 0;
  for (std::size_t i = 0; i < f.size();) {
    if (f[i] != '%') {
      out += f[i++];
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '%') {
      out += '%';
      i += 2;
      continue;
    }
    if (argi >= args.size()) return Value::error(fmt::format("index {} out of range", argi));
    if (i + 1 >= f.size()) return Value::error("unexpected end of string");
    const Value& v = args[argi++];
    ++i;
    std::optional<int> precision;
    if (f[i] == '.') {
      std::size_t j = i + 1;
      while (j < f.size() && f[j] >= '0' && f[j] <= '9') ++j;
      if (j >= f.size())
        return Value::error(
            "could not parse formatting clause: error while parsing precision: could not find end of precision "
            "specifier");
      precision = j > i + 1 ? std::stoi(f.substr(i + 1, j - i - 1)) : 0;
      i = j;
    }
    const char c = f[i++];
    auto fail = [&](const std::string& what) { return Value::error("error during formatting: " + what); };
    const std::string tn = format_type_name(v);
    switch (c) {
      case 's': {
        const std::string x = format_string(v, err);
        if (!err.empty()) return fail(err);
        out += x;
        break;
      }
      case 'd':
        if (v.k == Value::Int)
          out += std::to_string(v.i);
        else if (v.k == Value::Uint)
          out += std::to_string(v.u);
        else
          return fail("decimal clause can only be used on integers, was given " + tn);
        break;
      case 'f':
      case 'e': {
        double d;
        if (v.k == Value::Double)
          d = v.d;
        else if (v.k == Value::String && (v.s == "NaN" || v.s == "Infinity" || v.s == "-Infinity"))
          d = v.s == "NaN" ? std::nan("") : v.s == "Infinity" ? HUGE_VAL : -HUGE_VAL;
        else
          return fail(std::string(c == 'f' ? "fixed-point" : "scientific") +
                      " clause can only be used on doubles, was given " + tn);
        const int p = precision.value_or(6);
        if (std::isnan(d))
          out += "NaN";
        else if (std::isinf(d))
          out += d > 0 ? "+Inf" : "-Inf";
        else if (c == 'f')
          out += group_thousands(fmt::format("{:.{}f}", d, p));
        else
          out += en_us_scientific(d);
        break;
      }
      case 'b':
        if (v.k == Value::Int)
          out += signed_in_base(v.i, 'b');
        else if (v.k == Value::Uint)
          out += fmt::format("{:b}", v.u);
        else if (v.k == Value::Bool)
          out += v.b ? "1" : "0";
        else
          return fail("only integers and bools can be formatted as binary, was given " + tn);
        break;
      case 'x':
      case 'X': {
        std::string x;
        if (v.k == Value::Int)
          x = signed_in_base(v.i, 'x');
        else if (v.k == Value::Uint)
          x = fmt::format("{:x}", v.u);
        else if (v.k == Value::String || v.k == Value::Bytes)
          for (unsigned char ch : v.s) x += fmt::format("{:02x}", ch);
        else
          return fail("only integers, byte buffers, and strings can be formatted as hex, was given " + tn);
        if (c == 'X') x = ascii_case(x, true);
        out += x;
        break;
      }
      case 'o':
        if (v.k == Value::Int)
          out += signed_in_base(v.i, 'o');
        else if (v.k == Value::Uint)
          out += fmt::format("{:o}", v.u);
        else
          return fail("octal clause can only be used on integers, was given " + tn);
        break;
      default:
        return Value::error(fmt::format("could not parse formatting clause: unrecognized formatting clause \"{}\"", c));
    }
  }
  return Value::string(out);
}

// ---- library/ip.go and cidr.go on Go's net/netip ------------------------------------------------------

// Addresses as net/netip holds them (embedded/ip_parse.hpp, shared with the Service warnings): an
// IPv4 address's four bytes are the last of its 16.
using Addr = ip::NetipAddr;
const std::uint8_t* addr_bytes(const Addr& a) { return a.ip.data() + (a.is4 ? 12 : 0); }
std::size_t addr_len(const Addr& a) { return a.is4 ? 4 : 16; }
bool is_mapped(const Addr& a) { return !a.is4 && ip::is_v4(a.ip); }  // Is4In6
// An address the CEL value holds (its text was parsed when the value was made).
Addr read_addr(const std::string& s) {
  std::string err;
  return ip::netip_parse_addr(s, err).value_or(Addr{});
}

// parseIPAddr (library/ip.go): the canonical text of an IP, or an error in `err`.
std::string parse_ip(const std::string& s, std::string& err) {
  std::string perr;
  const auto n = ip::netip_parse_addr(s, perr);
  if (!n) {
    err = fmt::format("IP Address {} parse error during conversion from string: {}", go_quote(s), perr);
    return {};
  }
  if (!n->zone.empty()) {
    err = fmt::format("IP address {} with zone value is not allowed", go_quote(s));
    return {};
  }
  if (is_mapped(*n)) {
    err = fmt::format("IPv4-mapped IPv6 address {} is not allowed", go_quote(s));
    return {};
  }
  return ip::netip_string(*n);
}

// parseCIDR (library/cidr.go): "addr/bits" with the address as given (netip.Prefix keeps its host
// bits), or netip.ParsePrefix's error in `err`.
std::string parse_cidr(const std::string& s, std::string& err) {
  std::string perr;
  const auto p = ip::netip_parse_prefix(s, perr);
  if (!p) {
    err = "network address parse error during conversion from string: " + perr;
    return {};
  }
  if (is_mapped(p->addr)) {
    err = fmt::format("IPv4-mapped IPv6 address {} is not allowed", go_quote(s));
    return {};
  }
  return ip::netip_string(p->addr) + "/" + std::to_string(p->bits);
}

// The first `bits` bits of an address, the rest zero.
Addr masked_addr(Addr a, int bits) {
  std::uint8_t* b = a.ip.data() + (a.is4 ? 12 : 0);
  for (std::size_t i = 0; i < addr_len(a); ++i) {
    const int keep = std::clamp(bits - static_cast<int>(i) * 8, 0, 8);
    b[i] = static_cast<std::uint8_t>(b[i] & (0xff00 >> keep));
  }
  return a;
}

// (Two addresses of one family.)
bool same_prefix(const Addr& x, const Addr& y, int bits) { return masked_addr(x, bits).ip == masked_addr(y, bits).ip; }

Value net_call(const std::string& f, const std::vector<Value>& args) {
  const Value& t = args[0];
  if (t.k == Value::IpV && args.size() == 1) {
    const Addr a = read_addr(t.s);
    const std::uint8_t* b = addr_bytes(a);
    const bool v4 = a.is4;
    if (f == "family") return Value::integer(v4 ? 4 : 6);
    if (f == "isUnspecified")
      return Value::boolean(std::all_of(b, b + (v4 ? 4 : 16), [](unsigned char c) { return c == 0; }));
    if (f == "isLoopback") {
      if (v4) return Value::boolean(b[0] == 127);
      return Value::boolean(std::all_of(b, b + 15, [](unsigned char c) { return c == 0; }) && b[15] == 1);
    }
    if (f == "isLinkLocalMulticast")
      return Value::boolean(v4 ? (b[0] == 224 && b[1] == 0 && b[2] == 0) : (b[0] == 0xff && (b[1] & 0x0f) == 0x02));
    if (f == "isLinkLocalUnicast")
      return Value::boolean(v4 ? (b[0] == 169 && b[1] == 254) : (b[0] == 0xfe && (b[1] & 0xc0) == 0x80));
    if (f == "isGlobalUnicast") {  // netip.Addr.IsGlobalUnicast
      const bool unspecified = std::all_of(b, b + (v4 ? 4 : 16), [](unsigned char c) { return c == 0; });
      if (v4)
        return Value::boolean(!unspecified && !(b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255) &&
                              b[0] != 127 && !(b[0] >= 224 && b[0] <= 239) && !(b[0] == 169 && b[1] == 254));
      const bool loopback = std::all_of(b, b + 15, [](unsigned char c) { return c == 0; }) && b[15] == 1;
      return Value::boolean(!unspecified && !loopback && b[0] != 0xff && !(b[0] == 0xfe && (b[1] & 0xc0) == 0x80));
    }
    return no_overload();
  }
  if (t.k == Value::CidrV) {
    const auto slash = t.s.find('/');
    const Addr a = read_addr(t.s.substr(0, slash));
    const int bits = std::stoi(t.s.substr(slash + 1));
    if (args.size() == 1) {
      if (f == "ip") return Value::string(ip::netip_string(a), Value::IpV);
      if (f == "prefixLength") return Value::integer(bits);
      if (f == "masked")
        return Value::string(ip::netip_string(masked_addr(a, bits)) + "/" + std::to_string(bits), Value::CidrV);
      return no_overload();
    }
    const Value& o = args[1];
    std::string err;
    if (f == "containsIP") {
      const std::string ip = o.k == Value::IpV ? o.s : o.k == Value::String ? parse_ip(o.s, err) : std::string();
      if (o.k != Value::IpV && o.k != Value::String) return no_overload();
      if (!err.empty()) return Value::error(err);
      const Addr x = read_addr(ip);
      return Value::boolean(x.is4 == a.is4 && same_prefix(x, a, bits));
    }
    if (f == "containsCIDR") {
      const std::string c = o.k == Value::CidrV ? o.s : o.k == Value::String ? parse_cidr(o.s, err) : std::string();
      if (o.k != Value::CidrV && o.k != Value::String) return no_overload();
      if (!err.empty()) return Value::error("network address parse error during conversion from string: " + err);
      const auto cs = c.find('/');
      const Addr x = read_addr(c.substr(0, cs));
      const int xbits = std::stoi(c.substr(cs + 1));
      // Prefix.Overlaps and a prefix no longer than the other's
      return Value::boolean(x.is4 == a.is4 && bits <= xbits && same_prefix(x, a, bits));
    }
  }
  return no_overload();
}

// ---- library/urls.go on Go's net/url ----------------------------------------------------------------

// The parts of a URL as url.Parse splits it.
struct UrlParts {
  std::string scheme, authority, host, path, query;
  bool has_authority = false;
};
UrlParts split_url(std::string_view s) {
  UrlParts u;
  if (const auto hash = s.find('#'); hash != std::string_view::npos) s = s.substr(0, hash);
  std::size_t i = 0;
  if (!s.empty() && std::isalpha(static_cast<unsigned char>(s[0]))) {
    while (i < s.size() &&
           (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '+' || s[i] == '-' || s[i] == '.'))
      ++i;
    if (i < s.size() && s[i] == ':') {
      u.scheme = ascii_case(std::string(s.substr(0, i)), false);
      s.remove_prefix(i + 1);
    }
  }
  if (const auto q = s.find('?'); q != std::string_view::npos) {
    u.query = std::string(s.substr(q + 1));
    s = s.substr(0, q);
  }
  if (s.starts_with("//")) {
    u.has_authority = true;
    s.remove_prefix(2);
    const auto slash = s.find('/');
    u.authority = std::string(s.substr(0, slash));
    s = slash == std::string_view::npos ? std::string_view() : s.substr(slash);
    const auto at = u.authority.rfind('@');
    u.host = at == std::string::npos ? u.authority : u.authority.substr(at + 1);
  }
  u.path = std::string(s);
  return u;
}

// url.ParseRequestURI's verdict: "" when `s` is an absolute URI or an absolute path, else Go's error.
std::string url_error(const std::string& s) {
  const std::string quoted = "parse " + go_quote(s) + ": ";
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return quoted + "net/url: invalid control character in URL";
  if (s.empty()) return quoted + "empty url";
  if (s[0] == ':') return quoted + "missing protocol scheme";
  const UrlParts u = split_url(s);
  if (u.scheme.empty() && (s.empty() || s[0] != '/')) return quoted + "invalid URI for request";
  if (!u.scheme.empty() && !u.has_authority && (u.path.empty() || u.path[0] != '/'))
    return quoted + "invalid URI for request";
  if (u.has_authority) {
    std::string host = u.host;
    if (!host.empty() && host[0] == '[') {
      const auto close = host.find(']');
      if (close == std::string::npos) return quoted + "missing ']' in host";
      const std::string rest = host.substr(close + 1);
      if (!rest.empty() && (rest[0] != ':' || rest.find_first_not_of("0123456789", 1) != std::string::npos))
        return quoted + "invalid port " + go_quote(rest) + " after host";
    } else if (const auto colon = host.rfind(':'); colon != std::string::npos) {
      const std::string port = host.substr(colon);
      if (port.find_first_not_of("0123456789", 1) != std::string::npos)
        return quoted + "invalid port " + go_quote(port) + " after host";
      host = host.substr(0, colon);
    }
    for (unsigned char c : host)
      if (!(std::isalnum(c) ||
            std::string_view("-._~!$&'()*+,;=:[]%").find(static_cast<char>(c)) != std::string_view::npos) &&
          c < 0x80)
        return quoted + "invalid character " + go_quote(std::string(1, static_cast<char>(c))) + " in host name";
  }
  return {};
}

// net/url's unescape of a query component: '+' is a space, %XX a byte.
std::string query_unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+')
      out += ' ';
    else if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
             std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else
      out += s[i];
  }
  return out;
}

Value url_call(const std::string& f, const std::string& s) {
  const UrlParts u = split_url(s);
  // URL.Hostname and URL.Port: a trailing ":digits" is the port; IPv6 brackets go.
  std::string hostname = u.host, port;
  if (const auto colon = hostname.rfind(':');
      colon != std::string::npos && hostname.find_first_not_of("0123456789", colon + 1) == std::string::npos &&
      (hostname[0] != '[' || hostname.rfind(']') < colon)) {
    port = hostname.substr(colon + 1);
    hostname = hostname.substr(0, colon);
  }
  if (hostname.size() >= 2 && hostname.front() == '[' && hostname.back() == ']')
    hostname = hostname.substr(1, hostname.size() - 2);
  if (f == "getScheme") return Value::string(u.scheme);
  if (f == "getHost") return Value::string(u.host);
  if (f == "getHostname") return Value::string(hostname);
  if (f == "getPort") return Value::string(port);
  if (f == "getEscapedPath") return Value::string(u.path);
  if (f == "getQuery") {  // url.Values: pairs split at '&' (one with ';' is dropped), values in order
    Map m;
    std::size_t from = 0;
    while (from <= u.query.size() && !u.query.empty()) {
      const auto amp = u.query.find('&', from);
      const std::string pair = u.query.substr(from, amp == std::string::npos ? std::string::npos : amp - from);
      from = amp == std::string::npos ? u.query.size() + 1 : amp + 1;
      if (pair.empty() || pair.find(';') != std::string::npos) continue;
      const auto eq = pair.find('=');
      const Value key = Value::string(query_unescape(pair.substr(0, eq)));
      const Value val = Value::string(eq == std::string::npos ? "" : query_unescape(pair.substr(eq + 1)));
      bool found = false;
      for (auto& [k, v] : m)
        if (k.s == key.s) {
          List l = *v.list;
          l.push_back(val);
          v = Value::of_list(std::move(l));
          found = true;
        }
      if (!found) m.emplace_back(key, Value::of_list(List{val}));
    }
    return Value::of_map(std::move(m));
  }
  return no_overload();
}

// The Kubernetes quantity library's methods (library/quantity.go), on gpupool's Quantity.
Value quantity_call(const std::string& f, const std::vector<Value>& a) {
  const Quantity q = Quantity::parse(a[0].s);
  const __int128 n = q.nano_value();
  if (a.size() == 1) {
    if (f == "sign") return Value::integer(n > 0 ? 1 : n < 0 ? -1 : 0);
    if (f == "asApproximateFloat") return Value::dbl(static_cast<double>(static_cast<long double>(n) / 1e9L));
    const bool integral = n % 1000000000 == 0 && n / 1000000000 <= kMax && n / 1000000000 >= kMin;
    if (f == "isInteger") return Value::boolean(integral);
    if (f == "asInteger")
      return integral ? Value::integer(static_cast<std::int64_t>(n / 1000000000))
                      : Value::error("cannot convert value to integer");
    return no_overload();
  }
  const Value& b = a[1];
  Quantity other;
  if (b.k == Value::QuantityV)
    other = Quantity::parse(b.s);
  else if (b.k == Value::Int && (f == "add" || f == "sub"))
    other = Quantity::from_int(b.i);
  else
    return no_overload();
  if (f == "add" || f == "sub")
    return Value::string((f == "add" ? q + other : q - other).to_string(), Value::QuantityV);
  const int c = q < other ? -1 : q > other ? 1 : 0;
  if (f == "compareTo") return Value::integer(c);
  if (f == "isGreaterThan") return Value::boolean(c == 1);
  if (f == "isLessThan") return Value::boolean(c == -1);
  return no_overload();
}

Value member_call(const std::string& f, const std::vector<Value>& a) {
  const Value& t = a[0];
  const std::size_t argc = a.size() - 1;
  auto arg_is = [&](std::size_t i, Value::K k) { return i < a.size() && a[i].k == k; };
  if (f == "size" && argc == 0) {
    if (t.k == Value::String) return Value::integer(static_cast<std::int64_t>(runes(t.s)));
    if (t.k == Value::Bytes) return Value::integer(static_cast<std::int64_t>(t.s.size()));
    if (t.k == Value::ListV) return Value::integer(static_cast<std::int64_t>(t.list->size()));
    if (t.k == Value::MapV) return Value::integer(static_cast<std::int64_t>(t.map->size()));
    return no_overload();
  }
  if (t.k == Value::String) {
    const std::string& s = t.s;
    if (f == "contains" && arg_is(1, Value::String)) return Value::boolean(s.find(a[1].s) != std::string::npos);
    if (f == "startsWith" && arg_is(1, Value::String)) return Value::boolean(s.starts_with(a[1].s));
    if (f == "endsWith" && arg_is(1, Value::String)) return Value::boolean(s.ends_with(a[1].s));
    if ((f == "matches" || f == "find" || f == "findAll") && arg_is(1, Value::String) &&
        (argc == 1 || (f == "findAll" && argc == 2 && arg_is(2, Value::Int)))) {
      const auto re = Regex::compile(a[1].s);
      if (!re) return Value::error("error parsing regexp: " + a[1].s);
      try {
        if (f == "matches") return Value::boolean(re->search(s).has_value());
        if (f == "find") {
          const auto m = re->search(s);
          return Value::string(m ? s.substr(m->first, m->second - m->first) : std::string());
        }
        const std::int64_t limit = argc == 2 ? a[2].i : -1;
        List out;
        for (std::size_t from = 0; from <= s.size() && (limit < 0 || static_cast<std::int64_t>(out.size()) < limit);) {
          const auto m = re->search(s, from);
          if (!m) break;
          out.push_back(Value::string(s.substr(m->first, m->second - m->first)));
          from = m->second > m->first ? m->second : m->second + 1;  // past an empty match
        }
        return Value::of_list(std::move(out));
      } catch (const std::runtime_error& e) {
        return Value::error(e.what());
      }
    }
    if (f == "format" && argc == 1 && a[1].k == Value::ListV) return format(s, *a[1].list);
    if (f == "lowerAscii" && argc == 0) return Value::string(ascii_case(s, false));
    if (f == "upperAscii" && argc == 0) return Value::string(ascii_case(s, true));
    if (f == "trim" && argc == 0) return Value::string(trim_space(s));
    if (f == "charAt" && arg_is(1, Value::Int)) {
      const std::int64_t i = a[1].i, n = static_cast<std::int64_t>(runes(s));
      if (i < 0 || i > n) return Value::error(fmt::format("index out of range: {}", i));
      if (i == n) return Value::string("");
      const std::size_t b = rune_offset(s, static_cast<std::size_t>(i)),
                        e = rune_offset(s, static_cast<std::size_t>(i + 1));
      return Value::string(s.substr(b, e - b));
    }
    if ((f == "indexOf" || f == "lastIndexOf") && arg_is(1, Value::String) && (argc == 1 || arg_is(2, Value::Int))) {
      const std::string& sub = a[1].s;
      const std::int64_t n = static_cast<std::int64_t>(runes(s));
      if (f == "indexOf") {
        const std::int64_t from = argc == 2 ? a[2].i : 0;
        if (from < 0 || from > n) return Value::error(fmt::format("index out of range: {}", from));
        const auto p = s.find(sub, rune_offset(s, static_cast<std::size_t>(from)));
        return Value::integer(p == std::string::npos ? -1 : static_cast<std::int64_t>(runes(s.substr(0, p))));
      }
      const std::int64_t from = argc == 2 ? a[2].i : n;
      if (from < 0 || from > n) return Value::error(fmt::format("index out of range: {}", from));
      const auto p = s.rfind(sub, rune_offset(s, static_cast<std::size_t>(from)));
      return Value::integer(p == std::string::npos ? -1 : static_cast<std::int64_t>(runes(s.substr(0, p))));
    }
    if (f == "replace" && arg_is(1, Value::String) && arg_is(2, Value::String) &&
        (argc == 2 || arg_is(3, Value::Int))) {
      std::int64_t limit = argc == 3 ? a[3].i : -1;
      const std::string& from = a[1].s;
      const std::string& to = a[2].s;
      std::string out;
      std::size_t i = 0;
      while (limit != 0) {
        std::size_t p;
        if (from.empty()) {  // Go's strings.Replace: the empty string matches between every rune
          if (i > s.size()) break;
          out += to;
          --limit;
          if (i == s.size()) {
            i = s.size() + 1;
            break;
          }
          std::size_t j = i + 1;
          while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
          out += s.substr(i, j - i);
          i = j;
          continue;
        }
        if ((p = s.find(from, i)) == std::string::npos) break;
        out += s.substr(i, p - i) + to;
        i = p + from.size();
        --limit;
      }
      if (i <= s.size()) out += s.substr(i);
      return Value::string(out);
    }
    if (f == "split" && arg_is(1, Value::String) && (argc == 1 || arg_is(2, Value::Int))) {
      const std::int64_t limit = argc == 2 ? a[2].i : -1;
      const std::string& sep = a[1].s;
      List out;
      if (limit == 0) return Value::of_list(std::move(out));
      if (sep.empty()) {
        std::size_t i = 0;
        while (i < s.size()) {
          if (limit > 0 && static_cast<std::int64_t>(out.size()) == limit - 1) {
            out.push_back(Value::string(s.substr(i)));
            return Value::of_list(std::move(out));
          }
          std::size_t j = i + 1;
          while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
          out.push_back(Value::string(s.substr(i, j - i)));
          i = j;
        }
        return Value::of_list(std::move(out));
      }
      std::size_t i = 0;
      while (true) {
        if (limit > 0 && static_cast<std::int64_t>(out.size()) == limit - 1) break;
        const auto p = s.find(sep, i);
        if (p == std::string::npos) break;
        out.push_back(Value::string(s.substr(i, p - i)));
        i = p + sep.size();
      }
      out.push_back(Value::string(s.substr(i)));
      return Value::of_list(std::move(out));
    }
    if (f == "substring" && arg_is(1, Value::Int) && (argc == 1 || arg_is(2, Value::Int))) {
      const std::int64_t n = static_cast<std::int64_t>(runes(s));
      const std::int64_t b = a[1].i, e = argc == 2 ? a[2].i : n;
      if (b < 0 || b > n) return Value::error(fmt::format("index out of range: {}", b));
      if (e < 0 || e > n) return Value::error(fmt::format("index out of range: {}", e));
      if (b > e) return Value::error(fmt::format("invalid substring range. start: {}, end: {}", b, e));
      const std::size_t bb = rune_offset(s, static_cast<std::size_t>(b)),
                        eb = rune_offset(s, static_cast<std::size_t>(e));
      return Value::string(s.substr(bb, eb - bb));
    }
  }
  if (t.k == Value::ListV) {
    const List& l = *t.list;
    if (f == "join" && (argc == 0 || arg_is(1, Value::String))) {
      std::string out;
      for (std::size_t i = 0; i < l.size(); ++i) {
        if (l[i].k != Value::String) return no_overload();
        out += (i && argc == 1 ? a[1].s : "") + l[i].s;
      }
      return Value::string(out);
    }
    if ((f == "indexOf" || f == "lastIndexOf") && argc == 1) {
      std::int64_t found = -1;
      for (std::size_t i = 0; i < l.size(); ++i) {
        Value e = equals(l[i], a[1]);
        if (e.is_error()) return e;
        if (e.b) {
          found = static_cast<std::int64_t>(i);
          if (f == "indexOf") break;
        }
      }
      return Value::integer(found);
    }
    // apiserver/pkg/cel/library/lists.go
    if (f == "isSorted" && argc == 0) {
      for (std::size_t i = 1; i < l.size(); ++i) {
        const int c = compare(l[i - 1], l[i]);
        if (c == 2) return no_overload();
        if (c > 0) return Value::boolean(false);
      }
      return Value::boolean(true);
    }
    if ((f == "min" || f == "max") && argc == 0) {
      if (l.empty()) return Value::error(fmt::format("{}(list) argument must not be empty", f));
      Value best = l[0];
      for (std::size_t i = 1; i < l.size(); ++i) {
        const int c = compare(l[i], best);
        if (c == 2) return no_overload();
        if ((f == "min" && c < 0) || (f == "max" && c > 0)) best = l[i];
      }
      return best;
    }
    if (f == "sum" && argc == 0) {
      if (l.empty()) return Value::integer(0);
      Value acc = l[0];
      for (std::size_t i = 1; i < l.size(); ++i) {
        acc = arith("_+_", acc, l[i]);
        if (acc.is_error()) return acc;
      }
      return acc;
    }
  }
  if (t.k == Value::QuantityV) return quantity_call(f, a);
  if (t.k == Value::UrlV && argc == 0) return url_call(f, t.s);
  if (t.k == Value::IpV || t.k == Value::CidrV) return net_call(f, a);
  if (t.k == Value::Duration && argc == 0) {
    if (f == "getHours") return Value::integer(t.i / 3600000000000LL);
    if (f == "getMinutes") return Value::integer(t.i / 60000000000LL);
    if (f == "getSeconds") return Value::integer(t.i / 1000000000LL);
    if (f == "getMilliseconds") return Value::integer(t.i / 1000000LL);
  }
  if (t.k == Value::Timestamp && (argc == 0 || arg_is(1, Value::String))) {
    // A time zone: UTC, or a fixed offset [+-]HH:MM (IANA names are not known here).
    std::int64_t offset = 0;
    if (argc == 1 && a[1].s != "UTC") {
      const std::string& z = a[1].s;
      int h = 0, m = 0;
      if (z.size() != 6 || (z[0] != '+' && z[0] != '-') || z[3] != ':' ||
          std::sscanf(z.c_str() + 1, "%2d:%2d", &h, &m) != 2)
        return Value::error("unknown time zone " + z);
      offset = (h * 3600 + m * 60) * (z[0] == '-' ? -1 : 1);
    }
    const std::int64_t secs = t.i + offset;
    const std::int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
    const std::int64_t sod = secs - days * 86400;
    // civil_from_days (H. Hinnant)
    const std::int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    const std::int64_t doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    const std::int64_t d = doy - (153 * mp + 2) / 5 + 1, mo = mp < 10 ? mp + 3 : mp - 9,
                       y = yoe + era * 400 + (mo <= 2);
    if (f == "getFullYear") return Value::integer(y);
    if (f == "getMonth") return Value::integer(mo - 1);
    if (f == "getDayOfMonth") return Value::integer(d - 1);
    if (f == "getDate") return Value::integer(d);
    if (f == "getDayOfYear") return Value::integer(days - days_from_civil(y, 1, 1));
    if (f == "getDayOfWeek") return Value::integer(((days % 7) + 11) % 7);  // 1970-01-01 was a Thursday
    if (f == "getHours") return Value::integer(sod / 3600);
    if (f == "getMinutes") return Value::integer(sod / 60 % 60);
    if (f == "getSeconds") return Value::integer(sod % 60);
    if (f == "getMilliseconds") return Value::integer(static_cast<std::int64_t>(t.u / 1000000));
  }
  if (t.k == Value::Optional) {
    if (f == "hasValue" && argc == 0) return Value::boolean(!t.list->empty());
    if (f == "value" && argc == 0)
      return t.list->empty() ? Value::error("optional.none() dereference") : t.list->front();
    if (f == "orValue" && argc == 1) return t.list->empty() ? a[1] : t.list->front();
  }
  return no_overload();
}

// The cost of a value an operation reads: strings by their length, aggregates by their size.
std::uint64_t size_cost(const Value& v) {
  switch (v.k) {
    case Value::String:
    case Value::Bytes:
      return v.s.size() / 10;
    case Value::ListV:
      return v.list->size();
    case Value::MapV:
      return v.map->size();
    default:
      return 0;
  }
}

// interpreter: what an evaluation stopped by its cost limit answers.
constexpr const char* kCancelled = "operation cancelled: actual cost limit exceeded";

struct Evaluator {
  std::vector<std::pair<std::string, Value>> env;
  std::uint64_t cost = 0, limit = 0;  // evaluation steps so far, and how many the call may take
  bool cancelled() const { return cost > limit; }

  const Value* lookup(const std::string& name) const {
    for (auto it = env.rbegin(); it != env.rend(); ++it)
      if (it->first == name) return &it->second;
    return nullptr;
  }

  static Value select(const Value& v, const std::string& field, bool presence) {
    if (v.is_error()) return v;
    if (v.k != Value::MapV) return no_overload();
    for (const auto& [k, x] : *v.map)
      if (k.k == Value::String && k.s == field) return presence ? Value::boolean(true) : x;
    // A keyword field selected by its own name (field_type): the object holds it escaped.
    if (escape(field) == "__" + field + "__")
      for (const auto& [k, x] : *v.map)
        if (k.k == Value::String && k.s == "__" + field + "__") return presence ? Value::boolean(true) : x;
    if (presence) return Value::boolean(false);
    return Value::error("no such key: " + field);
  }

  static Value index(const Value& c, const Value& i) {
    if (c.k == Value::ListV) {
      std::int64_t idx;
      if (i.k == Value::Int)
        idx = i.i;
      else if (i.k == Value::Uint && i.u <= static_cast<std::uint64_t>(kMax))
        idx = static_cast<std::int64_t>(i.u);
      else if (i.k == Value::Double && i.d == std::trunc(i.d) && std::abs(i.d) < 9e18)
        idx = static_cast<std::int64_t>(i.d);
      else
        return Value::error("unsupported index type '" + value_type_name(i) + "' in list");
      if (idx < 0 || idx >= static_cast<std::int64_t>(c.list->size()))
        return Value::error(fmt::format("index out of bounds: {}", idx));
      return (*c.list)[static_cast<std::size_t>(idx)];
    }
    if (c.k == Value::MapV) {
      for (const auto& [k, v] : *c.map)
        if (auto e = equals(k, i); !e.is_error() && e.b) return v;
      return Value::error("no such key: " + (i.k == Value::String ? i.s : display(i)));
    }
    return no_overload();
  }

  Value truth(const Value& v) { return v.k == Value::Bool || v.is_error() ? v : no_overload(); }

  Value eval(const Node& n) {
    if (++cost > limit) return Value::error(kCancelled);
    switch (n.op) {
      case Node::Lit:
        return n.lit;
      case Node::Ident: {
        if (const Value* v = lookup(n.name)) return *v;
        if (type_ident(n.name)) return Value::string(n.name, Value::TypeV);
        return Value::error("no such attribute: " + n.name);
      }
      case Node::Select:
        return select(eval(*n.args[0]), n.name, false);
      case Node::Has:
        return select(eval(*n.args[0]), n.name, true);
      case Node::OptSelect: {
        Value v = eval(*n.args[0]);
        if (v.k == Value::Optional) {
          if (v.list->empty()) return v;
          v = v.list->front();
        }
        const Value present = select(v, n.name, true);
        if (present.is_error()) return present;
        if (!present.b) return Value::optional(nullptr);
        const Value field = select(v, n.name, false);
        return Value::optional(&field);
      }
      case Node::ListLit: {
        List l;
        for (const auto& a : n.args) {
          Value v = eval(*a);
          if (v.is_error()) return v;
          l.push_back(std::move(v));
        }
        return Value::of_list(std::move(l));
      }
      case Node::MapLit: {
        Map m;
        for (std::size_t i = 0; i + 1 < n.args.size(); i += 2) {
          Value k = eval(*n.args[i]);
          if (k.is_error()) return k;
          if (k.k != Value::String && k.k != Value::Int && k.k != Value::Uint && k.k != Value::Bool)
            return Value::error(fmt::format("unsupported key type: {}", value_type_name(k)));
          Value v = eval(*n.args[i + 1]);
          if (v.is_error()) return v;
          for (const auto& [k2, v2] : m)
            if (auto e = equals(k, k2); !e.is_error() && e.b) return Value::error("Failed with repeated key");
          m.emplace_back(std::move(k), std::move(v));
        }
        return Value::of_map(std::move(m));
      }
      case Node::OptIndex: {
        Value c = eval(*n.args[0]);
        if (c.k == Value::Optional) {
          if (c.list->empty()) return c;
          c = c.list->front();
        }
        if (c.is_error()) return c;
        const Value i = eval(*n.args[1]);
        if (i.is_error()) return i;
        const Value v = index(c, i);
        if (v.is_error() && (v.s.starts_with("index out of bounds") || v.s.starts_with("no such key")))
          return Value::optional(nullptr);
        return v.is_error() ? v : Value::optional(&v);
      }
      case Node::Index: {
        Value c = eval(*n.args[0]);
        if (c.is_error()) return c;
        Value i = eval(*n.args[1]);
        if (i.is_error()) return i;
        return index(c, i);
      }
      case Node::Cond: {
        Value c = eval(*n.args[0]);
        if (c.is_error()) return c;
        if (c.k != Value::Bool) return no_overload();
        return eval(*n.args[c.b ? 1 : 2]);
      }
      case Node::And:
      case Node::Or: {
        // interpreter/interpretable.go evalAnd/evalOr: a deciding operand wins over an error on either side.
        const bool decide = n.op == Node::Or;
        Value l = truth(eval(*n.args[0]));
        if (l.k == Value::Bool && l.b == decide) return l;
        Value r = truth(eval(*n.args[1]));
        if (r.k == Value::Bool && r.b == decide) return r;
        if (l.is_error()) return l;
        if (r.is_error()) return r;
        return Value::boolean(!decide);
      }
      case Node::Compr:
        return comprehension(n);
      case Node::Call:
        break;
    }
    std::vector<Value> args;
    for (const auto& a : n.args) {
      Value v = eval(*a);
      if (v.is_error()) return v;
      args.push_back(std::move(v));
    }
    return apply(n, args);
  }

  Value comprehension(const Node& n) {
    Value range = eval(*n.args[0]);
    if (range.is_error()) return range;
    List items;
    if (range.k == Value::ListV)
      items = *range.list;
    else if (range.k == Value::MapV)
      for (const auto& [k, v] : *range.map) items.push_back(k);
    else
      return no_overload();
    Value result = n.macro == Macro::All ? Value::boolean(true) : Value::boolean(false);
    std::int64_t count = 0;
    List out;
    for (const Value& x : items) {
      if (cancelled()) return Value::error(kCancelled);
      env.emplace_back(n.var, x);
      Value p = eval(*n.args[1]);
      Value t;
      if (n.macro == Macro::MapFilter && p.k == Value::Bool && p.b) t = eval(*n.args[2]);
      env.pop_back();
      switch (n.macro) {
        case Macro::All:
        case Macro::Exists: {
          const bool decide = n.macro == Macro::Exists;
          p = truth(p);
          if (p.k == Value::Bool && p.b == decide) return p;
          if (p.is_error() && !result.is_error()) result = p;
          break;
        }
        case Macro::ExistsOne:
          p = truth(p);
          if (p.is_error()) return p;
          count += p.b;
          break;
        case Macro::Map:
          if (p.is_error()) return p;
          out.push_back(std::move(p));
          break;
        case Macro::MapFilter:
          p = truth(p);
          if (p.is_error()) return p;
          if (p.b) {
            if (t.is_error()) return t;
            out.push_back(std::move(t));
          }
          break;
        case Macro::Filter:
          p = truth(p);
          if (p.is_error()) return p;
          if (p.b) out.push_back(x);
          break;
        case Macro::None:
          break;
      }
    }
    switch (n.macro) {
      case Macro::All:
      case Macro::Exists:
        return result;
      case Macro::ExistsOne:
        return Value::boolean(count == 1);
      default:
        return Value::of_list(std::move(out));
    }
  }

  Value apply(const Node& n, const std::vector<Value>& a) {
    const std::string& f = n.name;
    for (const auto& x : a) cost += size_cost(x);
    if (cancelled()) return Value::error(kCancelled);
    if (f == "_==_") return equals(a[0], a[1]);
    if (f == "_!=_") {
      Value e = equals(a[0], a[1]);
      if (!e.is_error()) e.b = !e.b;
      return e;
    }
    if (f == "_<_" || f == "_<=_" || f == "_>_" || f == "_>=_") {
      const int c = compare(a[0], a[1]);
      if (c == 2) return (is_number(a[0]) && is_number(a[1])) ? Value::boolean(false) : no_overload();
      if (f == "_<_") return Value::boolean(c < 0);
      if (f == "_<=_") return Value::boolean(c <= 0);
      if (f == "_>_") return Value::boolean(c > 0);
      return Value::boolean(c >= 0);
    }
    if (f == "_+_" || f == "_-_" || f == "_*_" || f == "_/_" || f == "_%_") return arith(f, a[0], a[1]);
    if (f == "-_") {
      if (a[0].k == Value::Int) return a[0].i == kMin ? int_overflow() : Value::integer(-a[0].i);
      if (a[0].k == Value::Double) return Value::dbl(-a[0].d);
      return no_overload();
    }
    if (f == "!_") return a[0].k == Value::Bool ? Value::boolean(!a[0].b) : no_overload();
    if (f == "@in") {
      if (a[1].k == Value::ListV) {
        for (const auto& x : *a[1].list)
          if (auto e = equals(x, a[0]); !e.is_error() && e.b) return Value::boolean(true);
        return Value::boolean(false);
      }
      if (a[1].k == Value::MapV) {
        for (const auto& [k, v] : *a[1].map)
          if (auto e = equals(k, a[0]); !e.is_error() && e.b) return Value::boolean(true);
        return Value::boolean(false);
      }
      return no_overload();
    }
    if (!n.member && f == "size" && a.size() == 1) return member_call("size", a);
    if (!n.member && a.size() == 1) {
      for (const char* c : {"int", "uint", "double", "string", "bytes", "bool", "dyn", "duration", "timestamp"})
        if (f == c) return convert(f, a[0]);
    }
    if (n.member) return member_call(f, a);
    // ext/sets.go
    if ((f == "sets.contains" || f == "sets.equivalent" || f == "sets.intersects") && a.size() == 2 &&
        a[0].k == Value::ListV && a[1].k == Value::ListV) {
      auto has = [](const List& l, const Value& x) {
        return std::any_of(l.begin(), l.end(), [&](const Value& y) {
          const Value e = equals(x, y);
          return !e.is_error() && e.b;
        });
      };
      auto contains = [&](const List& l, const List& sub) {
        return std::all_of(sub.begin(), sub.end(), [&](const Value& x) { return has(l, x); });
      };
      if (f == "sets.contains") return Value::boolean(contains(*a[0].list, *a[1].list));
      if (f == "sets.equivalent")
        return Value::boolean(contains(*a[0].list, *a[1].list) && contains(*a[1].list, *a[0].list));
      return Value::boolean(
          std::any_of(a[0].list->begin(), a[0].list->end(), [&](const Value& x) { return has(*a[1].list, x); }));
    }
    if ((f == "ip" || f == "isIP" || f == "ip.isCanonical") && a.size() == 1 && a[0].k == Value::String) {
      std::string err;
      const std::string canonical = parse_ip(a[0].s, err);
      if (f == "isIP") return Value::boolean(err.empty());
      if (!err.empty()) return Value::error(err);
      if (f == "ip.isCanonical") return Value::boolean(canonical == a[0].s);
      return Value::string(canonical, Value::IpV);
    }
    if ((f == "cidr" || f == "isCIDR") && a.size() == 1 && a[0].k == Value::String) {
      std::string err;
      const std::string canonical = parse_cidr(a[0].s, err);
      if (f == "isCIDR") return Value::boolean(err.empty());
      // (parseCIDR and stringToCIDR both put their context before netip's error)
      if (!err.empty()) return Value::error("network address parse error during conversion from string: " + err);
      return Value::string(canonical, Value::CidrV);
    }
    if ((f == "url" || f == "isURL") && a.size() == 1 && a[0].k == Value::String) {
      const std::string err = url_error(a[0].s);
      if (f == "isURL") return Value::boolean(err.empty());
      if (!err.empty()) return Value::error("URL parse error during conversion from string: " + err);
      return Value::string(a[0].s, Value::UrlV);
    }
    if ((f == "quantity" || f == "isQuantity") && a.size() == 1 && a[0].k == Value::String) {
      try {
        (void)Quantity::parse(a[0].s);
      } catch (const ValidationError& e) {
        if (f == "isQuantity") return Value::boolean(false);
        // resource.ParseQuantity's errors (gpupool's hints after them are not Go's).
        std::string msg = e.rule();
        for (std::string_view go :
             {"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
              "unable to parse quantity's suffix", "unable to parse numeric part of quantity"})
          if (msg.starts_with(go)) msg = std::string(go);
        return Value::error(msg);
      }
      if (f == "isQuantity") return Value::boolean(true);
      return Value::string(a[0].s, Value::QuantityV);
    }
    if (f == "sign" && a.size() == 1 && a[0].k == Value::QuantityV) return quantity_call(f, a);
    if (f == "type" && a.size() == 1) {
      static const std::pair<Value::K, const char*> names[] = {
          {Value::Int, "int"},        {Value::Uint, "uint"},   {Value::Double, "double"}, {Value::Bool, "bool"},
          {Value::String, "string"},  {Value::Bytes, "bytes"}, {Value::ListV, "list"},    {Value::MapV, "map"},
          {Value::Null, "null_type"}, {Value::TypeV, "type"}};
      for (const auto& [k, name] : names)
        if (a[0].k == k) return Value::string(name, Value::TypeV);
      return Value::string(value_type_name(a[0]), Value::TypeV);
    }
    if (f == "optional.of" && a.size() == 1) return Value::optional(&a[0]);
    if (f == "optional.none" && a.empty()) return Value::optional(nullptr);
    return no_overload();
  }
};

// cel-go common.Source: "ERROR: <input>:L:C: msg" and the line with a caret under the column.
std::string format_issues(std::string_view src, std::vector<Issue> issues) {
  std::stable_sort(issues.begin(), issues.end(), [](const Issue& a, const Issue& b) { return a.pos < b.pos; });
  std::string out;
  for (const auto& is : issues) {
    if (is.pos == kNoLocation) {
      out += (out.empty() ? "" : "\n") + fmt::format("ERROR: <input>:-1:0: {}", is.msg);
      continue;
    }
    std::size_t line = 1, line_start = 0;
    for (std::size_t i = 0; i < is.pos && i < src.size(); ++i)
      if (src[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    const std::size_t col = runes(src.substr(line_start, is.pos - line_start));
    std::size_t line_end = src.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = src.size();
    if (!out.empty()) out += "\n";
    out += fmt::format("ERROR: <input>:{}:{}: {}\n | {}\n | {}^", line, col + 1, is.msg,
                       src.substr(line_start, line_end - line_start), std::string(col, '.'));
  }
  return out;
}

std::string constant_conversions(const Node& n) {
  if (n.op == Node::Call && !n.member && n.args.size() == 1 && n.args[0]->op == Node::Lit)
    for (const char* c : {"int", "uint", "double", "string", "bytes", "bool", "duration", "timestamp"})
      if (n.name == c) {
        const Value v = convert(n.name, n.args[0]->lit);
        if (v.is_error()) return v.s;
      }
  for (const auto& a : n.args)
    if (std::string err = constant_conversions(*a); !err.empty()) return err;
  return {};
}

bool references(const Node& n, std::string_view name) {
  if (n.op == Node::Ident && n.name == name) return true;
  return std::any_of(n.args.begin(), n.args.end(), [&](const NodeP& a) { return references(*a, name); });
}

}  // namespace

Program compile(std::string_view expr, const json::object* schema, bool resource_root, bool optional_old_self) {
  Program p;
  std::vector<Issue> issues;
  // parser.go: at most 100,000 code points; the visitor's recursion at most 250 deep.
  if (const std::size_t size = runes(expr); size > 100000) {
    p.error = format_issues(
        expr, {{kNoLocation, fmt::format("expression code point size exceeds limit: size: {}, limit 100000", size)}});
    return p;
  }
  Lexer lx{expr, issues};
  std::vector<Tok> toks = lx.run();
  Parser ps{std::move(toks), issues};
  NodeP root = ps.parse();
  if (!root || !issues.empty()) {
    p.error = format_issues(expr, issues);
    return p;
  }
  TypeP self = of_schema(schema, resource_root);
  if (!self) self = prim(Type::Dyn);
  Checker ck{issues, {}, {}};
  ck.scope.emplace_back("self", self);
  ck.scope.emplace_back("oldSelf", optional_old_self ? optional_of(self) : self);
  const TypeP result = ck.check(*root);
  if (issues.empty()) issues = std::move(ck.late);
  if (!issues.empty()) {
    p.error = format_issues(expr, issues);
    return p;
  }
  // The planner evaluates a conversion of a literal when it builds the program.
  if (std::string err = constant_conversions(*root); !err.empty()) {
    p.error = std::move(err);
    p.instantiation_failed = true;
    return p;
  }
  p.result_type = type_name(result);
  p.uses_old_self = references(*root, "oldSelf");
  auto ast = std::make_shared<Ast>();
  ast->root = std::move(root);
  ast->source = std::string(expr);
  p.ast = std::move(ast);
  return p;
}

Result evaluate(const Program& p, const json::value& self, const json::value* old_self, const json::object* schema,
                bool resource_root, bool optional_old_self, std::uint64_t limit) {
  Result r;
  if (!p.ast) {
    r.kind = Result::Kind::Error;
    r.text = p.error;
    return r;
  }
  Evaluator ev;
  ev.limit = limit;
  ev.env.emplace_back("self", to_value(self, schema, resource_root));
  if (optional_old_self) {
    const Value old = old_self ? to_value(*old_self, schema, resource_root) : Value{};
    ev.env.emplace_back("oldSelf", Value::optional(old_self ? &old : nullptr));
  } else if (old_self) {
    ev.env.emplace_back("oldSelf", to_value(*old_self, schema, resource_root));
  }
  Value v = ev.eval(*p.ast->root);
  r.cost = ev.cost;
  if (ev.cancelled()) v = Value::error(kCancelled);  // even where && or || would have absorbed it
  if (v.is_error()) {
    r.kind = Result::Kind::Error;
    r.text = v.s;
    return r;
  }
  r.type = value_type_name(v);
  r.text = display(v);
  r.is_true = v.k == Value::Bool && v.b;
  if (v.k == Value::String) r.str = v.s;
  return r;
}

}  // namespace gpupool::embedded::cel
