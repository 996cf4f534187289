#include "embedded/crd_schema.hpp"
#include "common/json_depth.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <mutex>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "common/builtin_data.hpp"
#include "common/join.hpp"
#include "embedded/cel.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/typecheck.hpp"

namespace gpupool::embedded::crd {

namespace json = boost::json;

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> keys;
  if (path.empty()) return keys;
  for (const auto piece : text::split(path[0] == '.' ? std::string_view(path).substr(1) : std::string_view(path), '.'))
    keys.emplace_back(piece);
  return keys;
}

namespace {

// ---- reading a schema node -----------------------------------------------------------------------

const json::object* member(const json::object* s, std::string_view key) {
  if (!s) return nullptr;
  const json::value* v = s->if_contains(key);
  return v && v->is_object() ? &v->as_object() : nullptr;
}
const json::object* property(const json::object* s, std::string_view key) {
  return member(member(s, "properties"), key);
}
const json::object* additional(const json::object* s) { return member(s, "additionalProperties"); }
const json::object* items(const json::object* s) { return member(s, "items"); }
bool flag(const json::object* s, std::string_view key) {
  const json::value* v = s ? s->if_contains(key) : nullptr;
  return v && v->is_bool() && v->as_bool();
}
const json::value* default_of(const json::object* s) {
  const json::value* v = s ? s->if_contains("default") : nullptr;
  return v && !v->is_null() ? v : nullptr;
}
bool nullable(const json::object* s) { return flag(s, "nullable"); }

bool any_rules(const json::value& v);
bool any_rules(const json::object& o) {
  for (const auto& [k, c] : o)
    if (k == "x-kubernetes-validations" || any_rules(c)) return true;
  return false;
}
bool any_rules(const json::value& v) {
  if (v.is_object()) {
    for (const auto& [k, c] : v.as_object())
      if (k == "x-kubernetes-validations" || any_rules(c)) return true;
  } else if (v.is_array()) {
    for (const auto& c : v.as_array())
      if (any_rules(c)) return true;
  }
  return false;
}

// ---- pruning (schema/pruning/algorithm.go) -------------------------------------------------------

bool is_meta_field(std::string_view k) { return k == "apiVersion" || k == "kind" || k == "metadata"; }

struct Pruner {
  std::vector<std::string> unknown;
  std::string path;  // UnknownFieldPathOptions.ParentPath, joined

  void append_key(std::string_view k) {
    if (!path.empty()) path += '.';
    path += k;
  }
  void record(std::string_view k) {
    const std::size_t len = path.size();
    append_key(k);
    unknown.push_back(path);
    path.resize(len);
  }

  // prune, or with `preserve` skipPrune (under x-kubernetes-preserve-unknown-fields unknown fields
  // stay; known ones are still pruned inside).
  void prune(json::value& x, const json::object* s, bool embedded, bool preserve = false) {
    if (!preserve && s && flag(s, "x-kubernetes-preserve-unknown-fields")) return prune(x, s, false, true);
    if (preserve && !s) return;
    const std::size_t len = path.size();
    if (x.is_object()) {
      auto& o = x.as_object();
      std::vector<std::string> drop;
      for (auto& [k, v] : o) {
        if (!s) {
          record(k);
          drop.emplace_back(k);
          continue;
        }
        if ((embedded || flag(s, "x-kubernetes-embedded-resource")) && is_meta_field(k)) continue;
        const json::object* child = property(s, k);
        if (!child) child = additional(s);
        if (child) {
          append_key(k);
          prune(v, child, false);
        } else if (!preserve) {
          if (!is_meta_field(k) || !path.empty()) record(k);
          drop.emplace_back(k);
        }
        path.resize(len);
      }
      for (const auto& k : drop) o.erase(k);
    } else if (x.is_array()) {
      std::size_t i = 0;
      for (auto& v : x.as_array()) {
        path += fmt::format("[{}]", i++);
        prune(v, s ? items(s) : nullptr, false, preserve);
        path.resize(len);
      }
    }
  }
};

// schema/defaulting/prunenulls.go
const json::object* field_schema(const json::object* s, std::string_view k) {
  if (!s) return nullptr;
  if (const json::object* p = property(s, k)) return p;
  return additional(s);
}

void prune_nulls(json::value& x, const json::object* s) {
  if (x.is_object()) {
    auto& o = x.as_object();
    std::vector<std::string> drop;
    for (auto& [k, v] : o) {
      const json::object* fs = field_schema(s, k);
      if (v.is_null() && fs && !nullable(fs) && !default_of(fs))
        drop.emplace_back(k);
      else
        prune_nulls(v, fs);
    }
    for (const auto& k : drop) o.erase(k);
  } else if (x.is_array()) {
    for (auto& v : x.as_array()) prune_nulls(v, s ? items(s) : nullptr);
  }
}

// schema/defaulting/algorithm.go Default
void default_value(json::value& x, const json::object* s) {
  if (!s) return;
  auto non_nullable_null = [](const json::value& v, const json::object* fs) {
    return v.is_null() && fs && !nullable(fs);
  };
  if (x.is_object()) {
    auto& o = x.as_object();
    if (const json::object* props = member(s, "properties"))
      for (const auto& [k, p] : *props) {
        const json::object* ps = p.is_object() ? &p.as_object() : nullptr;
        const json::value* d = default_of(ps);
        if (!d) continue;
        const json::value* cur = o.if_contains(k);
        if (!cur || non_nullable_null(*cur, ps)) o[k] = *d;
      }
    for (auto& [k, v] : o) {
      if (const json::object* p = property(s, k)) {
        default_value(v, p);
      } else if (const json::object* a = additional(s)) {
        if (non_nullable_null(v, a)) {
          if (const json::value* d = default_of(a)) v = *d;
        }
        default_value(v, a);
      }
    }
  } else if (x.is_array()) {
    const json::object* is = items(s);
    for (auto& v : x.as_array()) {
      if (non_nullable_null(v, is))
        if (const json::value* d = default_of(is)) v = *d;
      default_value(v, is);
    }
  }
}

// ---- printing values as Go prints them -----------------------------------------------------------

using cel::go_float;

std::string go_number(const json::value& v) {
  if (v.is_int64()) return std::to_string(v.as_int64());
  if (v.is_uint64()) return std::to_string(v.as_uint64());
  return go_float(v.as_double());
}

// %#v of a decoded JSON value (map[string]interface {}{"k":"v"}, []interface {}{1, "a"}).
std::string go_sharp(const json::value& v) {
  switch (v.kind()) {
    case json::kind::object: {
      std::vector<std::pair<std::string, const json::value*>> kv;
      for (const auto& [k, c] : v.as_object()) kv.emplace_back(std::string(k), &c);
      std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::string out = "map[string]interface {}{";
      for (std::size_t i = 0; i < kv.size(); ++i)
        out += fmt::format("{}{}:{}", i ? ", " : "", go_quote(kv[i].first), go_sharp(*kv[i].second));
      return out + "}";
    }
    case json::kind::array: {
      std::string out = "[]interface {}{";
      bool first = true;
      for (const auto& c : v.as_array()) {
        out += (first ? "" : ", ") + go_sharp(c);
        first = false;
      }
      return out + "}";
    }
    case json::kind::string:
      return go_quote(v.as_string());
    case json::kind::bool_:
      return v.as_bool() ? "true" : "false";
    case json::kind::null:
      return "interface {}(nil)";
    default:
      return go_number(v);
  }
}

// field.Error.ErrorBody's value: simple types with %v, strings with %q, the rest with %#v.
std::string bad_value(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "\"null\"";
    case json::kind::string:
      return go_quote(v.as_string());
    case json::kind::bool_:
      return v.as_bool() ? "true" : "false";
    case json::kind::object:
    case json::kind::array:
      return go_sharp(v);
    default:
      return go_number(v);
  }
}

// ---- kube-openapi's SchemaValidator (validation/validate) ----------------------------------------

// The schema's type as spec.StringOrArray (x-kubernetes-int-or-string is "integer,string").
std::vector<std::string> types_of(const json::object& s) {
  if (flag(&s, "x-kubernetes-int-or-string")) return {"integer", "string"};
  if (auto t = util::string_of(&s, "type"); !t.empty()) return {t};
  return {};
}
bool contains(const std::vector<std::string>& v, std::string_view x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// typeValidator.schemaInfoForType for decoded JSON.
std::string type_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return "string";
    case json::kind::bool_:
      return "boolean";
    case json::kind::int64:
    case json::kind::uint64:
      return "integer";
    case json::kind::double_:
      return "number";
    case json::kind::array:
      return "array";
    case json::kind::object:
      return "object";
    default:
      return "";
  }
}

bool is_integral(double d) { return d == static_cast<double>(static_cast<long long>(d)) && std::abs(d) < 9.2e18; }

double as_double(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  return v.as_double();
}

// strfmt's date-time (ParseDateTime's layouts: RFC 3339 with or without fractions and colon in
// the zone, the ISO 8601 local and reduced-precision forms).
bool is_date_time(std::string_view s) {
  static const std::regex re(R"(^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?$)");
  if (!std::regex_match(s.begin(), s.end(), re)) return false;
  const int month = std::stoi(std::string(s.substr(5, 2))), day = std::stoi(std::string(s.substr(8, 2)));
  const int hour = std::stoi(std::string(s.substr(11, 2))), minute = std::stoi(std::string(s.substr(14, 2)));
  return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && minute <= 59;
}

// CorrelatedObject.correlateOldValueForChildAtNewIndex (apiserver/pkg/cel/common/equality.go): an
// item of a list-type map correlates with the old item of the same keys; other lists' items do not.
const json::value* correlated_item(const json::object& s, const json::array* old, const json::value& item) {
  if (!old || util::string_of(&s, "x-kubernetes-list-type") != "map" || !item.is_object()) return nullptr;
  const json::value* keys = s.if_contains("x-kubernetes-list-map-keys");
  if (!keys || !keys->is_array()) return nullptr;
  for (const auto& o : *old) {
    if (!o.is_object()) continue;
    bool same = true;
    for (const auto& k : keys->as_array()) {
      if (!k.is_string()) continue;
      const json::value* a = item.as_object().if_contains(k.as_string());
      const json::value* b = o.as_object().if_contains(k.as_string());
      if (!a != !b || (a && !util::json_equal(*a, *b))) {
        same = false;
        break;
      }
    }
    if (same) return &o;
  }
  return nullptr;
}

struct Validator {
  std::vector<StatusCause>& out;
  std::string field_prefix = {};  // the field.Path the schema's root stands at ("status"), or none

  // One kube-openapi error, converted as kubeOpenAPIResultToFieldErrors converts it.
  enum class Code { Type, Required, Enum, TooLong, TooMany, Other };
  void error(Code code, const std::string& name, const std::string& message, const json::value& value,
             const std::vector<std::string>& enum_values = {}, std::int64_t limit = -1) {
    std::string path = name;
    if (!path.empty() && path != ".") {
      if (path[0] == '.') path.erase(0, 1);
      if (!field_prefix.empty()) path = field_prefix + "." + path;
    } else {
      path = field_prefix.empty() ? "<nil>" : field_prefix;
    }
    switch (code) {
      case Code::Required:
        out.push_back({"FieldValueRequired", "Required value", path});
        break;
      case Code::Enum: {
        std::string values;
        for (const auto& v : enum_values) values += (values.empty() ? "" : ", ") + go_quote(v);
        out.push_back({"FieldValueNotSupported",
                       fmt::format("Unsupported value: {}: supported values: {}", bad_value(value), values), path});
        break;
      }
      case Code::TooLong:
        out.push_back({"FieldValueTooLong", fmt::format("Too long: may not be more than {} bytes", limit), path});
        break;
      case Code::TooMany:
        out.push_back({"FieldValueTooMany",
                       fmt::format("Too many: {}: must have at most {} items", bad_value(value), limit), path});
        break;
      // A nil Value is printed as "" (kubeOpenAPIResultToFieldErrors), not as null.
      case Code::Type:
        out.push_back({"FieldValueTypeInvalid",
                       fmt::format("Invalid value: {}: {}", value.is_null() ? "\"\"" : bad_value(value), message),
                       path});
        break;
      case Code::Other:
        out.push_back({"FieldValueInvalid",
                       fmt::format("Invalid value: {}: {}", value.is_null() ? "\"\"" : bad_value(value), message),
                       path});
        break;
    }
  }

  // errors.InvalidType: typeFailWithData when the value is a string.
  void invalid_type(const std::string& path, const std::string& type, const std::string& value) {
    error(Code::Type, path, fmt::format("{} in body must be of type {}: {}", path, type, go_quote(value)),
          json::value(value));
  }

  // SchemaValidator.Validate: type, schema props (anyOf/allOf/oneOf/not), string, format,
  // number, slice, common (enum), object, in that order. With `old`, the value `data` had before
  // an update (where the old object correlates with it): validation ratcheting
  // (apiserver/validation/ratcheting.go ratchetingValueValidator.Validate) drops the errors of a
  // value left unchanged.
  void validate(const json::value& data, const json::object& s, const std::string& path,
                const json::value* old = nullptr) {
    const std::size_t mark = out.size();
    check(data, s, path, old);
    if (old && out.size() > mark && util::json_equal(data, *old))
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(mark), out.end());
  }
  void check(const json::value& data, const json::object& s, const std::string& path, const json::value* old) {
    const auto types = types_of(s);
    const std::string format = util::string_of(&s, "format");
    if (data.is_null()) {
      if (!types.empty() && !nullable(&s)) invalid_type(path, text::join(types, ","), "null");
      enum_check(data, s, path);
      return;
    }
    // typeValidator (formats other than those apiextensions keeps are stripped first).
    if (!types.empty()) {
      const std::string t = type_name(data);
      const bool float_int = t == "number" && is_integral(data.as_double()) && contains(types, "integer");
      const bool int_float = t == "integer" && contains(types, "number");
      if (!(contains(types, t) || float_int || int_float)) invalid_type(path, text::join(types, ","), t);
    }
    any_of(data, s, path);
    if (data.is_string()) string_checks(data.as_string(), s, path, format);
    if (data.is_number()) number_checks(data, s, path);
    if (data.is_array()) slice_checks(data.as_array(), s, path, old && old->is_array() ? &old->as_array() : nullptr);
    enum_check(data, s, path);
    if (data.is_object())
      object_checks(data.as_object(), s, path, old && old->is_object() ? &old->as_object() : nullptr);
  }

  // schemaPropsValidator: allOf, anyOf, oneOf. Their own errors are not openapierrors.Validation,
  // so kubeOpenAPIResultToFieldErrors reports them at the root ("<nil>") with an empty value.
  void any_of(const json::value& data, const json::object& s, const std::string& path) {
    auto composite = [&](const std::string& message) {
      out.push_back({"FieldValueInvalid", "Invalid value: \"\": " + message, "<nil>"});
    };
    for (const char* key : {"anyOf", "oneOf", "allOf"}) {
      const json::value* v = s.if_contains(key);
      if (!v || !v->is_array() || v->as_array().empty()) continue;
      std::vector<std::vector<StatusCause>> results;
      std::size_t valid = 0;
      for (const auto& sub : v->as_array()) {
        if (!sub.is_object()) continue;
        std::vector<StatusCause> r;
        Validator{r, field_prefix}.validate(data, sub.as_object(), path);
        if (r.empty()) ++valid;
        results.push_back(std::move(r));
      }
      const std::string_view k = key;
      const std::vector<StatusCause>* best = nullptr;  // the first failure (MatchCount is not tracked)
      for (const auto& r : results)
        if (!r.empty()) {
          best = &r;
          break;
        }
      if (k == "anyOf" && valid == 0) {
        composite(fmt::format("{} must validate at least one schema (anyOf)", go_quote(path)));
        if (best) out.insert(out.end(), best->begin(), best->end());
      } else if (k == "oneOf" && valid != 1) {
        composite(fmt::format("{} must validate one and only one schema (oneOf). {}", go_quote(path),
                              valid == 0 ? "" : fmt::format("Found {} valid alternatives", valid)));
        if (valid == 0 && best) out.insert(out.end(), best->begin(), best->end());
      } else if (k == "allOf") {
        for (const auto& r : results) out.insert(out.end(), r.begin(), r.end());
        if (valid != results.size())
          composite(fmt::format("{} must validate all the schemas (allOf). Failing at least {} schemas", go_quote(path),
                                results.size() - valid));
      }
    }
  }

  void string_checks(std::string_view str, const json::object& s, const std::string& path, const std::string& format) {
    std::int64_t runes = 0;
    for (unsigned char c : str) runes += (c & 0xC0) != 0x80;
    if (const json::value* m = s.if_contains("maxLength");
        m && m->is_number() && runes > m->to_number<std::int64_t>()) {
      error(Code::TooLong, path, "", json::value(str), {}, m->to_number<std::int64_t>());
    } else if (const json::value* n = s.if_contains("minLength");
               n && n->is_number() && runes < n->to_number<std::int64_t>()) {
      error(Code::Other, path,
            fmt::format("{} in body should be at least {} chars long", path, n->to_number<std::int64_t>()),
            json::value(str));
    } else if (const std::string pattern = util::string_of(&s, "pattern"); !pattern.empty()) {
      bool ok = true;
      if (const auto re = cel::Regex::compile(pattern)) {  // (one that does not compile is not enforced)
        try {
          ok = re->search(str).has_value();
        } catch (const std::runtime_error&) {
          ok = false;  // too complex to finish matching: refused
        }
      }
      if (!ok) error(Code::Other, path, fmt::format("{} in body should match '{}'", path, pattern), json::value(str));
    }
    // formatValidator: of the formats apiextensions keeps, date-time is the one CRDs use.
    if ((format == "date-time" || format == "datetime") && !is_date_time(str))
      error(Code::Type, path, fmt::format("{} in body must be of type {}: {}", path, format, go_quote(str)),
            json::value(str));
  }

  void number_checks(const json::value& data, const json::object& s, const std::string& path) {
    const double d = as_double(data);
    auto limit = [&](const char* key) -> std::optional<double> {
      const json::value* v = s.if_contains(key);
      if (!v || !v->is_number()) return std::nullopt;
      return as_double(*v);
    };
    if (auto m = limit("multipleOf"); m && *m > 0 && std::fmod(d, *m) != 0)
      error(Code::Other, path, fmt::format("{} in body should be a multiple of {}", path, go_float(*m)), data);
    if (auto m = limit("minimum")) {
      const bool excl = flag(&s, "exclusiveMinimum");
      if (excl ? d <= *m : d < *m)
        error(Code::Other, path,
              fmt::format("{} in body should be greater than {}{}", path, excl ? "" : "or equal to ", go_float(*m)),
              data);
    }
    if (auto m = limit("maximum")) {
      const bool excl = flag(&s, "exclusiveMaximum");
      if (excl ? d >= *m : d > *m)
        error(Code::Other, path,
              fmt::format("{} in body should be less than {}{}", path, excl ? "" : "or equal to ", go_float(*m)), data);
    }
  }

  void slice_checks(const json::array& a, const json::object& s, const std::string& path, const json::array* old) {
    if (const json::object* is = items(&s))
      for (std::size_t i = 0; i < a.size(); ++i)
        validate(a[i], *is, fmt::format("{}[{}]", path, i), correlated_item(s, old, a[i]));
    const auto size = static_cast<std::int64_t>(a.size());
    if (const json::value* m = s.if_contains("minItems"); m && m->is_number() && size < m->to_number<std::int64_t>())
      error(Code::Other, path,
            fmt::format("{} in body should have at least {} items", path, m->to_number<std::int64_t>()),
            json::value(size));
    if (const json::value* m = s.if_contains("maxItems"); m && m->is_number() && size > m->to_number<std::int64_t>())
      error(Code::TooMany, path, "", json::value(size), {}, m->to_number<std::int64_t>());
    if (flag(&s, "uniqueItems"))
      for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (util::json_equal(a[i], a[j])) {
            error(Code::Other, path, fmt::format("{} in body shouldn't contain duplicates", path), json::value(""));
            return;
          }
  }

  void enum_check(const json::value& data, const json::object& s, const std::string& path) {
    const json::value* e = s.if_contains("enum");
    if (!e || !e->is_array() || e->as_array().empty()) return;
    std::vector<std::string> values;
    for (const auto& v : e->as_array()) {
      if (util::json_equal(v, data) || (v.is_number() && data.is_number() && as_double(v) == as_double(data))) return;
      values.push_back(v.is_string() ? std::string(v.as_string()) : json::serialize(v));
    }
    error(Code::Enum, path, "", data, values);
  }

  void object_checks(const json::object& o, const json::object& s, const std::string& path, const json::object* old) {
    // CorrelatedObject.Key; the root's apiVersion and kind are not ratcheted.
    auto old_of = [&](std::string_view k) -> const json::value* {
      if (!old || (path.empty() && field_prefix.empty() && (k == "apiVersion" || k == "kind"))) return nullptr;
      return old->if_contains(k);
    };
    const auto n = static_cast<std::int64_t>(o.size());
    if (const json::value* m = s.if_contains("minProperties"); m && m->is_number() && n < m->to_number<std::int64_t>())
      error(Code::Other, path,
            fmt::format("{} in body should have at least {} properties", path, m->to_number<std::int64_t>()),
            json::value(n));
    if (const json::value* m = s.if_contains("maxProperties"); m && m->is_number() && n > m->to_number<std::int64_t>())
      error(Code::TooMany, path, "", json::value(n), {}, m->to_number<std::int64_t>());
    const json::object* props = member(&s, "properties");
    if (const json::object* a = additional(&s))
      for (const auto& [k, v] : o)
        if (!props || !props->contains(k)) validate(v, *a, path + "." + std::string(k), old_of(k));
    if (props)
      for (const auto& [k, p] : *props) {
        const json::value* v = o.if_contains(k);
        if (v && p.is_object())
          validate(*v, p.as_object(), path.empty() ? std::string(k) : path + "." + std::string(k), old_of(k));
      }
    if (const json::value* req = s.if_contains("required"); req && req->is_array())
      for (const auto& r : req->as_array())
        if (r.is_string() && !o.contains(r.as_string()))
          error(Code::Required, path + "." + std::string(r.as_string()), "", json::value(nullptr));
  }
};

// ---- the scale subresource's replicas paths (customResourceValidator.ValidateScaleSpec/Status) ----------

// unstructured.NestedInt64's errors: `<.path> accessor error: <v> is of the type <T>, expected <U>`.
std::string go_type_of(const json::value& v) { return std::string(go_value_names(v).type); }
std::string go_plain(const json::value& v) {  // %v
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_number()) return go_number(v);
  return go_print(v);
}

void replicas_at(const json::object& obj, const std::string& replicas_path, std::vector<StatusCause>& out) {
  if (replicas_path.empty()) return;
  const std::vector<std::string> keys = split_path(replicas_path);
  auto accessor_error = [&](std::size_t upto, const json::value& v, const char* expected) {
    std::string path;
    for (std::size_t i = 0; i <= upto; ++i) path += "." + keys[i];
    out.push_back({"FieldValueInvalid",
                   fmt::format("Invalid value: 0: {} accessor error: {} is of the type {}, expected {}", path,
                               go_plain(v), go_type_of(v), expected),
                   replicas_path});
  };
  const json::value* cur = nullptr;
  const json::object* o = &obj;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!o) return accessor_error(i, *cur, "map[string]interface{}");
    cur = o->if_contains(keys[i]);
    if (!cur) return;  // not found: nothing to check
    o = cur->is_object() ? &cur->as_object() : nullptr;
  }
  if (!cur->is_int64()) return accessor_error(keys.size() - 1, *cur, "int64");
  const std::int64_t n = cur->as_int64();
  if (n < 0)
    out.push_back(
        {"FieldValueInvalid", fmt::format("Invalid value: {}: should be a non-negative integer", n), replicas_path});
  else if (n > 2147483647)
    out.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: should be less than or equal to 2147483647", n),
                   replicas_path});
}

// ---- x-kubernetes-list-type (schema/listtype/validation.go) --------------------------------------

struct ListTypes {
  std::vector<StatusCause>& out;

  void object(const json::object& o, const json::object* s, const std::string& path) {
    if (!s) return;
    if (const json::object* a = additional(s))
      for (const auto& [k, v] : o) value(v, a, fmt::format("{}[{}]", path, std::string_view(k)));
    if (member(s, "properties"))
      for (const auto& [k, v] : o)
        if (const json::object* p = property(s, k))
          value(v, p, path.empty() ? std::string(k) : path + "." + std::string(k));
  }
  void value(const json::value& v, const json::object* s, const std::string& path) {
    if (v.is_array())
      array(v.as_array(), s, path);
    else if (v.is_object())
      object(v.as_object(), s, path);
  }
  // validateListSet: the index of the second occurrence of each repeated value.
  static std::vector<std::size_t> repeats(const std::vector<std::string>& keys) {
    std::map<std::string, int> seen;
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (++seen[keys[i]] == 2) out.push_back(i);
    return out;
  }
  void array(const json::array& a, const json::object* s, const std::string& path) {
    const std::string type = util::string_of(s, "x-kubernetes-list-type");
    if (type == "set" && a.size() > 1) {
      std::vector<std::string> keys;
      for (const auto& x : a) keys.push_back(json::serialize(x));
      for (auto i : repeats(keys))
        out.push_back({"FieldValueDuplicate", "Duplicate value: " + bad_value(a[i]), fmt::format("{}[{}]", path, i)});
    } else if (type == "map") {
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!a[i].is_null() && !a[i].is_object()) {
          out.push_back(
              {"FieldValueInvalid",
               fmt::format("Invalid value: {}: must be an object for an array of list-type map", bad_value(a[i])),
               fmt::format("{}[{}]", path, i)});
          return;
        }
      std::vector<std::string> names;
      if (const json::value* ks = s ? s->if_contains("x-kubernetes-list-map-keys") : nullptr; ks && ks->is_array())
        for (const auto& k : ks->as_array())
          if (k.is_string()) names.emplace_back(k.as_string());
      if (a.size() > 1 && !names.empty()) {
        std::vector<std::string> keys;
        std::vector<json::object> shown;
        for (const auto& x : a) {
          json::object key;
          if (x.is_object())
            for (const auto& n : names)
              if (const json::value* kv = x.as_object().if_contains(n)) key[n] = *kv;
          keys.push_back(names.size() == 1 && key.empty() ? std::string("\x01unspecified") : json::serialize(key));
          shown.push_back(std::move(key));
        }
        for (auto i : repeats(keys))
          out.push_back(
              {"FieldValueDuplicate", "Duplicate value: " + go_sharp(shown[i]), fmt::format("{}[{}]", path, i)});
      }
    }
    if (const json::object* is = items(s))
      for (std::size_t i = 0; i < a.size(); ++i) value(a[i], is, fmt::format("{}[{}]", path, i));
  }
};

// ---- CEL: x-kubernetes-validations (apiserver/schema/cel/validation.go) ---------------------------

// fieldErrorForReason: a failed rule's error by its `reason`; the value shown is the schema's type.
StatusCause rule_error(const std::string& path, const std::string& type, const std::string& detail,
                       const std::string& reason) {
  if (reason == "FieldValueForbidden") return {"FieldValueForbidden", "Forbidden: " + detail, path};
  if (reason == "FieldValueRequired") return {"FieldValueRequired", "Required value: " + detail, path};
  if (reason == "FieldValueDuplicate") return {"FieldValueDuplicate", "Duplicate value: " + go_quote(type), path};
  return {"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(type), detail), path};
}

// The rules of one schema node, compiled (compilation.go Compile).
struct CompiledRule {
  const json::object* rule;
  cel::Program program, message;
  bool optional_old_self = false;
};
std::vector<CompiledRule> compile_rules(const json::object& s, bool root) {
  std::vector<CompiledRule> out;
  const json::value* rules = s.if_contains("x-kubernetes-validations");
  if (!rules || !rules->is_array()) return out;
  for (const auto& r : rules->as_array()) {
    if (!r.is_object()) continue;
    const json::object& ro = r.as_object();
    CompiledRule c{&ro, {}, {}, false};
    if (const json::value* o = ro.if_contains("optionalOldSelf"); o && o->is_bool()) c.optional_old_self = o->as_bool();
    c.program = cel::compile(util::string_of(&ro, "rule"), &s, root, c.optional_old_self);
    if (const std::string me = util::string_of(&ro, "messageExpression"); !me.empty())
      c.message = cel::compile(me, &s, root, false);
    out.push_back(std::move(c));
  }
  return out;
}

// cel.ValidFieldPath (apiserver/schema/cel/validation.go): a fieldPath (`.a.b`, `['a.b']`, a map's
// `.key` or `['key']`) through the schema's properties, as the field.Path it names ("a.b",
// "m[key]") and the schema it reaches; else `error` holds ValidFieldPath's error.
struct FieldPathAt {
  std::string path;
  const json::object* schema = nullptr;
  std::string error;
};
FieldPathAt field_path_at(std::string_view jp, const json::object& schema, bool allow_array_notation) {
  // The scanner: '.', '[' and ']' alone, a single-quoted string whole (to the end when it is not
  // closed), other text up to a delimiter.
  std::vector<std::string> toks;
  for (std::size_t i = 0; i < jp.size();) {
    if (jp[i] == '.' || jp[i] == '[' || jp[i] == ']') {
      toks.emplace_back(1, jp[i++]);
    } else if (jp[i] == '\'') {
      std::size_t j = i + 1;
      while (j < jp.size() && !(jp[j] == '\'' && jp[j - 1] != '\\')) ++j;
      j = std::min(j + 1, jp.size());
      toks.emplace_back(jp.substr(i, j - i));
      i = j;
    } else {
      std::size_t j = i;
      while (j < jp.size() && jp[j] != '.' && jp[j] != '[' && jp[j] != ']') ++j;
      toks.emplace_back(jp.substr(i, j - i));
      i = j;
    }
  }
  FieldPathAt out;
  out.schema = &schema;
  const auto fail = [&](std::string why) {
    out.error = std::move(why);
    out.schema = nullptr;
    return out;
  };
  // appendToPath: a property of an object with properties, else a key of a map.
  auto step = [&](const std::string& name) {
    if (member(out.schema, "properties")) {
      out.schema = property(out.schema, name);
      if (!out.schema) return false;
      out.path += (out.path.empty() ? "" : ".") + name;
    } else if (const json::object* a = additional(out.schema)) {
      out.schema = a;
      out.path += "[" + name + "]";
    } else {
      return false;
    }
    return true;
  };
  for (std::size_t i = 0; i < toks.size(); ++i) {
    if (toks[i] == "[") {
      if (!allow_array_notation) return fail("array notation is not allowed");
      if (i + 1 >= toks.size()) return fail("unexpected end of JSON path");
      const std::string& q = toks[++i];
      if (q.size() < 2 || q.front() != '\'' || q.back() != '\'')
        return fail("expected single quoted string but got " + q);
      // unescapeSingleQuote
      std::string key;
      for (std::size_t k = 1; k + 1 < q.size(); ++k) {
        if (q[k] != '\\') {
          key += q[k];
          continue;
        }
        // unescapeMatcher `\\.`: a backslash and the character after it (a last one stays).
        if (k + 2 >= q.size()) {
          key += q[k];
          continue;
        }
        static const std::string_view from = "abfnrtv'\\", to = "\a\b\f\n\r\t\v'\\";
        const auto at = from.find(q[k + 1]);
        if (at == std::string_view::npos)
          return fail(std::string("invalid string literal: invalid escape char \\") + q[k + 1]);
        key += to[at];
        ++k;
      }
      if (!step(key)) return fail("does not refer to a valid field");
      if (i + 1 >= toks.size()) return fail("unexpected end of JSON path");
      if (toks[++i] != "]") return fail("expected ] but got " + toks[i]);
    } else if (toks[i] == ".") {
      if (i + 1 >= toks.size()) return fail("unexpected end of JSON path");
      if (!step(toks[++i])) return fail("does not refer to a valid field");
    } else {
      return fail("expected [ or . but got: " + toks[i]);
    }
  }
  return out;
}

std::optional<std::string> valid_field_path(std::string_view jp, const json::object& schema) {
  FieldPathAt at = field_path_at(jp, schema, true);
  if (!at.schema) return std::nullopt;
  return std::move(at.path);
}

// compilation.go compileRule's error details.
std::string compile_error(const cel::Program& p, std::string_view compile, std::string_view instantiate) {
  return std::string(p.instantiation_failed ? instantiate : compile) + p.error;
}

// ruleErrorString / ruleMessageOrDefault.
std::string trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}
std::string rule_error_string(const json::object& r) {
  const std::string m = util::string_of(&r, "message");
  return trimmed(m.empty() ? util::string_of(&r, "rule") : m);
}
std::string rule_message(const json::object& r) {
  const std::string m = util::string_of(&r, "message");
  return m.empty() ? "failed rule: " + rule_error_string(r) : trimmed(m);
}

// Validator.validate: the rules of every node holding a value, depth first. `old` is the value
// the node had (self's oldSelf: map keys, list-type map items by their keys); ratcheting: a
// failed rule that does not use oldSelf on a value equal to its old one (or, where the value
// does not correlate, under an unchanged nearest correlatable parent) is a warning, not an error.
struct CelWalk {
  std::vector<StatusCause>& out;
  std::vector<std::string>* warnings;
  std::map<const json::object*, bool> has_rules = {};  // whether a schema node's subtree declares rules
  // celconfig.RuntimeCELCostBudget: what the request's rules may cost together (in cel.hpp's units);
  // once spent, or once one rule goes over celconfig.PerCallLimit, no further rule runs.
  std::int64_t budget = 10'000'000;
  bool stopped = false;

  bool rules_below(const json::object& s) {
    auto [it, fresh] = has_rules.try_emplace(&s, false);
    if (fresh) it->second = any_rules(s);
    return it->second;
  }

  // `rold`: the value the ratcheting correlation found for this node (null: none); `parent_equal`:
  // whether the nearest correlated ancestor is unchanged (ratchetingOptions.shouldRatchetError).
  void value(const json::value& v, const json::value* old, const json::object* s, const std::string& path, bool root,
             const json::value* rold, bool parent_equal) {
    if (stopped || !s || v.is_null() || !rules_below(*s)) return;  // (equality is only worked out where rules are)
    const bool ratchet = rold ? util::json_equal(v, *rold) : parent_equal;
    rules(v, old, *s, path, root, ratchet);
    // allOf's own rules (their errors are ratcheted by the nearest parent only).
    if (const json::value* all = s->if_contains("allOf"); all && all->is_array())
      for (const auto& sub : all->as_array())
        if (sub.is_object()) rules(v, old, sub.as_object(), path, false, parent_equal);
    const bool child_parent_equal = rold ? ratchet : parent_equal;
    if (v.is_object()) {
      const json::object* oo = old && old->is_object() ? &old->as_object() : nullptr;
      const json::object* ro = rold && rold->is_object() ? &rold->as_object() : nullptr;
      const std::string map_type = util::string_of(s, "x-kubernetes-map-type");
      const bool correlatable = map_type.empty() || map_type == "granular" || map_type == "atomic";
      const json::object* props = member(s, "properties");
      const json::object* add = additional(s);
      for (const auto& [k, x] : v.as_object()) {
        const bool declared = props && props->contains(k);
        const json::object* ks = declared ? property(s, k) : add;
        if (!ks) continue;
        const bool typemeta = root && (k == "apiVersion" || k == "kind");
        const json::value* ox = oo && correlatable ? oo->if_contains(k) : nullptr;
        const json::value* rx = ro && !typemeta ? ro->if_contains(k) : nullptr;
        const std::string child = !declared      ? fmt::format("{}[{}]", path, std::string_view(k))
                                  : path.empty() ? std::string(k)
                                                 : path + "." + std::string(k);
        value(x, ox, ks, child, false, rx, typemeta ? false : child_parent_equal);
      }
    } else if (v.is_array()) {
      const json::object* is = items(s);
      const json::array* oa = old && old->is_array() ? &old->as_array() : nullptr;
      const json::array* ra = rold && rold->is_array() ? &rold->as_array() : nullptr;
      for (std::size_t i = 0; i < v.as_array().size(); ++i) {
        const json::value& x = v.as_array()[i];
        value(x, correlated_item(*s, oa, x), is, fmt::format("{}[{}]", path, i), false, correlated_item(*s, ra, x),
              child_parent_equal);
      }
    }
  }

  void rules(const json::value& v, const json::value* old, const json::object& s, const std::string& path, bool root,
             bool ratchet) {
    if (!s.contains("x-kubernetes-validations")) return;
    const std::string type = util::string_of(&s, "type");
    const std::string shown = path.empty() ? "<nil>" : path;
    for (const auto& c : compile_rules(s, root)) {
      if (!c.program.ast) {
        const std::string err = compile_error(c.program, "compilation failed: ", "program instantiation failed: ");
        out.push_back(rule_error(shown, type, "rule compile error: " + err, ""));
        continue;
      }
      // Transition rules run only on an update with a comparable old value (unless optionalOldSelf).
      if (c.program.uses_old_self && !old && !c.optional_old_self) continue;
      if (stopped) return;
      if (budget <= 0) {
        out.push_back(rule_error(
            shown, type, "validation failed due to running out of cost budget, no further validation rules will be run",
            ""));
        stopped = true;
        return;
      }
      const cel::Result r = cel::evaluate(c.program, v, old, &s, root, c.optional_old_self);
      if (r.kind == cel::Result::Kind::Error && r.text.starts_with("operation cancelled: actual cost limit exceeded")) {
        out.push_back(rule_error(
            shown, type,
            fmt::format("'{}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        r.text, rule_error_string(*c.rule)),
            ""));
        stopped = true;
        return;
      }
      if (static_cast<std::int64_t>(r.cost) > budget) {
        out.push_back(rule_error(
            shown, type, "validation failed due to running out of cost budget, no further validation rules will be run",
            ""));
        stopped = true;
        return;
      }
      budget -= static_cast<std::int64_t>(r.cost);
      if (r.kind == cel::Result::Kind::Error) {
        if (r.text.starts_with("no such overload"))
          out.push_back(
              rule_error(shown, type,
                         fmt::format("'{}': call arguments did not match a supported operator, function or macro "
                                     "signature for rule: {}",
                                     r.text, rule_error_string(*c.rule)),
                         ""));
        else
          out.push_back(
              rule_error(shown, type, fmt::format("{} evaluating rule: {}", r.text, rule_error_string(*c.rule)), ""));
        continue;
      }
      if (r.is_true) continue;
      std::string at = shown;
      if (const std::string fp = util::string_of(c.rule, "fieldPath"); !fp.empty())
        if (const auto normalized = valid_field_path(fp, s)) at = path.empty() ? *normalized : path + "." + *normalized;
      std::string detail = rule_message(*c.rule);
      if (c.message.ast) {  // evalMessageExpression: a failure falls back to the message
        const cel::Result m = cel::evaluate(c.message, v, old, &s, root, false);
        if (m.kind == cel::Result::Kind::Value && m.type == "string") {
          const std::string t = trimmed(m.str);
          if (!t.empty() && t.find('\n') == std::string::npos) detail = t;
        }
      }
      StatusCause e = rule_error(at, type, detail, util::string_of(c.rule, "reason"));
      if (!c.program.uses_old_self && ratchet) {
        if (warnings) warnings->push_back(e.field + ": " + e.message);
      } else {
        out.push_back(std::move(e));
      }
    }
  }
};

}  // namespace

std::optional<ResourceType> resource_type(const json::object& crd, const std::shared_ptr<const json::object>& owner) {
  const auto* spec = crd.if_contains("spec");
  if (!spec || !spec->is_object()) return std::nullopt;
  const auto& s = spec->as_object();
  ResourceType t;
  t.group = util::string_of(&s, "group");
  const auto* names = s.if_contains("names");
  if (!names || !names->is_object()) return std::nullopt;
  t.resource = util::string_of(&names->as_object(), "plural");
  t.kind = util::string_of(&names->as_object(), "kind");
  t.singular = util::string_of(&names->as_object(), "singular");
  if (t.singular.empty()) {
    t.singular = t.kind;
    for (auto& c : t.singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (const auto* sn = names->as_object().if_contains("shortNames"); sn && sn->is_array())
    for (const auto& x : sn->as_array())
      if (x.is_string()) t.short_names.emplace_back(x.as_string());
  if (const auto* cs = names->as_object().if_contains("categories"); cs && cs->is_array())
    for (const auto& x : cs->as_array())
      if (x.is_string()) t.categories.emplace_back(x.as_string());
  t.namespaced = util::string_of(&s, "scope") != "Cluster";
  if (const auto* vs = s.if_contains("versions"); vs && vs->is_array()) {
    for (const auto& v : vs->as_array()) {
      if (!v.is_object()) continue;
      const auto& vo = v.as_object();
      const bool served = !vo.if_contains("served") || vo.at("served") == true;
      const bool storage = vo.if_contains("storage") && vo.at("storage") == true;
      if (served && (t.version.empty() || storage)) {
        t.version = util::string_of(&vo, "name");
        t.schema = crd::from_version(vo, owner);
        const auto* sub = vo.if_contains("subresources");
        t.has_status = sub && sub->is_object() && sub->as_object().contains("status");
        t.has_scale = sub && sub->is_object() && sub->as_object().contains("scale");
      }
    }
  }
  if (t.group.empty() || t.resource.empty() || t.kind.empty() || t.version.empty()) return std::nullopt;
  return t;
}

namespace {

// data/crds key -> the CRD's metadata.name.
constexpr std::pair<const char*, const char*> kShipped[] = {
    {"training-operator_mpijobs", "mpijobs.kubeflow.org"},
    {"mpi-operator_mpijobs", "mpijobs.kubeflow.org"},
    {"training-operator_tfjobs", "tfjobs.kubeflow.org"},
    {"training-operator_pytorchjobs", "pytorchjobs.kubeflow.org"},
    {"trainer_trainjobs", "trainjobs.trainer.kubeflow.org"},
    {"trainer_trainingruntimes", "trainingruntimes.trainer.kubeflow.org"},
    {"trainer_clustertrainingruntimes", "clustertrainingruntimes.trainer.kubeflow.org"},
    {"jobset_jobsets", "jobsets.jobset.x-k8s.io"},
    // Kueue v0.14.8's CRDs (config/components/crd/bases, the last release whose only and storage
    // version is kueue.x-k8s.io/v1beta1), installed with the embedded Kueue (controller_kueue.cpp).
    {"kueue_resourceflavors", "resourceflavors.kueue.x-k8s.io"},
    {"kueue_clusterqueues", "clusterqueues.kueue.x-k8s.io"},
    {"kueue_localqueues", "localqueues.kueue.x-k8s.io"},
    {"kueue_workloads", "workloads.kueue.x-k8s.io"}};
constexpr std::size_t kFirstKueue = 8;  // kShipped[kFirstKueue..] are Kueue's

// A shipped CRD by its data/crds key, parsed when first asked for (then kept).
const json::object* shipped(std::string_view key) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<json::object>, std::less<>> parsed;
  std::lock_guard lk(mu);
  if (auto it = parsed.find(key); it != parsed.end()) return it->second.get();
  const auto text = detail::builtin_data(fmt::format("crds/{}.json", key));
  if (text.empty()) return nullptr;
  auto obj = std::make_unique<json::object>(json::parse(text, {}, deep_json()).as_object());
  // As created, defaulted: shipped_key() then knows a stored one (its spec defaulted on create).
  default_definition(*obj);
  return parsed.emplace(std::string(key), std::move(obj)).first->second.get();
}

}  // namespace

std::vector<std::shared_ptr<const json::object>> kubeflow_crds(std::string_view mpijob_version) {
  std::vector<std::shared_ptr<const json::object>> out;
  for (const char* n : {mpijob_version == "v2beta1" ? "mpi-operator_mpijobs" : "training-operator_mpijobs",
                        "training-operator_tfjobs", "training-operator_pytorchjobs", "trainer_trainjobs",
                        "trainer_trainingruntimes", "trainer_clustertrainingruntimes", "jobset_jobsets"})
    if (const json::object* c = shipped(n))
      out.emplace_back(std::shared_ptr<const json::object>(), c);  // (kept for good)
  return out;
}

std::vector<std::shared_ptr<const json::object>> kueue_crds() {
  std::vector<std::shared_ptr<const json::object>> out;
  for (std::size_t i = kFirstKueue; i < std::size(kShipped); ++i)
    if (const json::object* c = shipped(kShipped[i].first)) out.emplace_back(std::shared_ptr<const json::object>(), c);
  return out;
}

std::string shipped_key(const json::object& crd) {
  const json::value* spec = crd.if_contains("spec");
  if (!spec) return {};
  const std::string name = util::string_of(member(&crd, "metadata"), "name");
  for (const auto& [key, crd_name] : kShipped) {
    if (name != crd_name) continue;  // (parse no file of another CRD)
    const json::object* c = shipped(key);
    if (c && util::json_equal(c->at("spec"), *spec)) return key;
  }
  return {};
}

std::vector<json::object> default_cluster_training_runtimes() {
  std::vector<json::object> out;
  const auto text = detail::builtin_data("crds/trainer_runtimes.json");
  if (text.empty()) return out;
  const json::value list = json::parse(text, {}, deep_json());
  for (const auto& item : list.at("items").as_array()) out.push_back(item.as_object());
  return out;
}

const json::object* shipped_spec(std::string_view key) {
  const json::object* c = shipped(key);
  return c ? &c->at("spec").as_object() : nullptr;
}

std::vector<const json::value*> json_path(const json::value& root, std::string_view path) {
  std::vector<const json::value*> cur{&root};
  std::size_t i = 0;
  auto step_key = [&](std::string_view key) {
    std::vector<const json::value*> next;
    for (const auto* v : cur)
      if (v->is_object())
        if (const json::value* c = v->as_object().if_contains(key)) next.push_back(c);
    cur = std::move(next);
  };
  while (i < path.size()) {
    if (path[i] == '.') {
      const std::size_t end = path.find_first_of(".[", i + 1);
      const std::string_view key =
          path.substr(i + 1, end == std::string_view::npos ? std::string_view::npos : end - i - 1);
      if (!key.empty()) step_key(key);
      i = end == std::string_view::npos ? path.size() : end;
    } else if (path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string_view::npos) return {};
      std::string_view sel = path.substr(i + 1, close - i - 1);
      i = close + 1;
      if (sel.size() >= 2 && (sel.front() == '\'' || sel.front() == '"')) {
        step_key(sel.substr(1, sel.size() - 2));
        continue;
      }
      std::vector<const json::value*> next;
      for (const auto* v : cur) {
        if (!v->is_array()) continue;
        const auto& a = v->as_array();
        const auto n = static_cast<long long>(a.size());
        auto bound = [&](std::string_view s, long long dflt) {
          if (s.empty()) return dflt;
          long long x = 0;
          std::from_chars(s.data(), s.data() + s.size(), x);
          if (x < 0) x += n;
          return std::clamp(x, 0LL, n);
        };
        if (sel == "*") {
          for (const auto& e : a) next.push_back(&e);
        } else if (const auto colon = sel.find(':'); colon != std::string_view::npos) {
          const long long from = bound(sel.substr(0, colon), 0), to = bound(sel.substr(colon + 1), n);
          for (long long k = from; k < to; ++k) next.push_back(&a[static_cast<std::size_t>(k)]);
        } else {
          long long k = 0;
          std::from_chars(sel.data(), sel.data() + sel.size(), k);
          if (k < 0) k += n;
          if (k >= 0 && k < n) next.push_back(&a[static_cast<std::size_t>(k)]);
        }
      }
      cur = std::move(next);
    } else {
      return {};
    }
  }
  return cur;
}

std::shared_ptr<const Schema> from_version(const json::object& version,
                                           const std::shared_ptr<const json::object>& owner) {
  const json::object* sch = member(member(&version, "schema"), "openAPIV3Schema");
  if (!sch) return nullptr;
  auto out = std::make_shared<Schema>();
  out->root = owner ? std::shared_ptr<const json::object>(owner, sch) : std::make_shared<const json::object>(*sch);
  out->has_validation_rules = any_rules(*sch);
  out->spec_replicas_path = util::string_of(member(member(&version, "subresources"), "scale"), "specReplicasPath");
  out->status_replicas_path = util::string_of(member(member(&version, "subresources"), "scale"), "statusReplicasPath");
  out->label_selector_path = util::string_of(member(member(&version, "subresources"), "scale"), "labelSelectorPath");
  if (const json::value* cols = version.if_contains("additionalPrinterColumns"); cols && cols->is_array())
    out->printer_columns = cols->as_array();
  if (const json::value* sf = version.if_contains("selectableFields"); sf && sf->is_array())
    for (const json::value& f : sf->as_array()) {
      std::string path = f.is_object() ? util::string_of(&f.as_object(), "jsonPath") : std::string();
      if (path.starts_with('.')) path.erase(0, 1);
      out->selectable_fields.push_back(std::move(path));
    }
  return out;
}

std::vector<std::string> coerce(json::object& obj, const Schema& s) {
  Pruner p;
  json::value v(std::move(obj));
  p.prune(v, s.root.get(), true);
  prune_nulls(v, s.root.get());
  obj = std::move(v.as_object());
  std::sort(p.unknown.begin(), p.unknown.end());
  return std::move(p.unknown);
}

void apply_defaults(json::object& obj, const Schema& s) {
  json::value v(std::move(obj));
  default_value(v, s.root.get());
  obj = std::move(v.as_object());
}

namespace {

// strategy.go hasBlockingErr: after these error types the CEL rules are not run.
void cel_rules(const json::object& obj, const json::object* old, const Schema& s, std::vector<StatusCause>& out,
               std::vector<std::string>* warnings, const std::vector<StatusCause>& before = {}) {
  if (!s.has_validation_rules) return;
  auto blocks = [](const StatusCause& c) {
    return c.reason == "FieldValueNotSupported" || c.reason == "FieldValueRequired" ||
           c.reason == "FieldValueTooLong" || c.reason == "FieldValueTooMany" || c.reason == "FieldValueTypeInvalid";
  };
  const bool blocking =
      std::any_of(before.begin(), before.end(), blocks) || std::any_of(out.begin(), out.end(), blocks);
  if (blocking)
    out.push_back({"FieldValueInvalid",
                   "Invalid value: \"null\": some validation rules were not checked because the object was invalid; "
                   "correct the existing errors to complete validation",
                   "<nil>"});
  else if (old) {
    const json::value now(obj), before(*old);
    CelWalk{out, warnings}.value(now, &before, s.root.get(), "", true, &before, false);
  } else {
    CelWalk{out, warnings}.value(json::value(obj), nullptr, s.root.get(), "", true, nullptr, false);
  }
}

}  // namespace

std::vector<StatusCause> validate(const json::object& obj, const json::object* old, const Schema& s,
                                  std::vector<std::string>* warnings, const std::vector<StatusCause>& before) {
  std::vector<StatusCause> out;
  const json::value now(obj);
  const json::value old_value = old ? json::value(*old) : json::value();
  Validator{out}.validate(now, *s.root, "", old ? &old_value : nullptr);
  replicas_at(obj, s.spec_replicas_path, out);
  replicas_at(obj, s.status_replicas_path, out);
  ListTypes{out}.object(obj, s.root.get(), "");
  cel_rules(obj, old, s, out, warnings, before);
  return out;
}

std::vector<StatusCause> validate_status(const json::object& obj, const json::object& old, const Schema& s,
                                         std::vector<std::string>* warnings) {
  std::vector<StatusCause> out;
  if (const json::value* st = obj.if_contains("status"))
    if (const json::object* ss = property(s.root.get(), "status"))
      Validator{out, "status"}.validate(*st, *ss, "", old.if_contains("status"));
  replicas_at(obj, s.status_replicas_path, out);
  std::vector<StatusCause> lists, old_lists;
  ListTypes{lists}.object(obj, s.root.get(), "");
  if (!lists.empty()) ListTypes{old_lists}.object(old, s.root.get(), "");
  if (old_lists.empty()) out.insert(out.end(), lists.begin(), lists.end());
  cel_rules(obj, &old, s, out, warnings);
  return out;
}

}  // namespace gpupool::embedded::crd

namespace gpupool::embedded::crd {

namespace {

// %#v of an apiextensions.ValidationRule, as the CRD's errors show it (a set pointer field prints
// its address in Go, which is not reproducible: shown as 0xc000000000).
std::string rule_go_value(const json::object& r) {
  auto ptr = [&](const char* key, const char* type) -> std::string {
    const json::value* v = r.if_contains(key);
    return fmt::format("(*{})({})", type, v && !v->is_null() ? "0xc000000000" : "nil");
  };
  return fmt::format(
      "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, "
      "OptionalOldSelf:{}}}",
      go_quote(util::string_of(&r, "rule")), go_quote(util::string_of(&r, "message")),
      go_quote(util::string_of(&r, "messageExpression")), ptr("reason", "apiextensions.FieldValueErrorReason"),
      go_quote(util::string_of(&r, "fieldPath")), ptr("optionalOldSelf", "bool"));
}

bool has_newlines(std::string_view s) { return s.find('\n') != std::string_view::npos; }

// ValidateCustomResourceDefinitionOpenAPISchema's x-kubernetes-validations part. The rules' own
// fields first (schema errors); when the node and its children have none, every rule and
// messageExpression must compile (a rule to a bool, a messageExpression to a string), a rule
// using oldSelf must not sit where old values do not correlate (items of lists other than
// list-type map), and optionalOldSelf needs oldSelf. `uncorrelatable`: the path of the highest
// such list, or "".
void definition_rules(const json::object& s, const std::string& path, bool root, const std::string& uncorrelatable,
                      std::vector<StatusCause>& schema_errors, std::vector<StatusCause>& cel_errors) {
  const std::size_t mark = schema_errors.size();
  if (const json::object* p = member(&s, "properties"))
    for (const auto& [k, v] : *p)
      if (v.is_object())
        definition_rules(v.as_object(), fmt::format("{}.properties[{}]", path, std::string_view(k)), false,
                         uncorrelatable, schema_errors, cel_errors);
  if (const json::object* is = items(&s)) {
    const bool map_list = util::string_of(&s, "x-kubernetes-list-type") == "map";
    definition_rules(*is, path + ".items", false, !uncorrelatable.empty() || map_list ? uncorrelatable : path,
                     schema_errors, cel_errors);
  }
  if (const json::object* a = additional(&s))
    definition_rules(*a, path + ".additionalProperties", false, uncorrelatable, schema_errors, cel_errors);
  const json::value* rules = s.if_contains("x-kubernetes-validations");
  if (!rules || !rules->is_array()) return;
  const auto& list = rules->as_array();
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_object()) continue;
    const json::object& r = list[i].as_object();
    const std::string at = fmt::format("{}.x-kubernetes-validations[{}]", path, i);
    const std::string rule = trimmed(util::string_of(&r, "rule")), msg = util::string_of(&r, "message");
    auto invalid = [&](const std::string& value, std::string_view what, std::string_view field) {
      schema_errors.push_back(
          {"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(value), what), at + std::string(field)});
    };
    if (rule.empty())
      schema_errors.push_back({"FieldValueRequired", "Required value: rule is not specified", at + ".rule"});
    else if (!msg.empty() && trimmed(msg).empty())
      invalid(msg, "message must be non-empty if specified", ".message");
    else if (has_newlines(trimmed(msg)))
      invalid(msg, "message must not contain line breaks", ".message");
    else if (has_newlines(rule) && trimmed(msg).empty())
      schema_errors.push_back({"FieldValueRequired",
                               "Required value: message must be specified if rule contains line breaks",
                               at + ".message"});
    if (const std::string me = util::string_of(&r, "messageExpression"); !me.empty() && trimmed(me).empty())
      schema_errors.push_back({"FieldValueRequired", "Required value: messageExpression must be non-empty if specified",
                               at + ".messageExpression"});
    if (const json::value* reason = r.if_contains("reason"); reason && reason->is_string()) {
      const std::string_view rs = reason->as_string();
      if (rs != "FieldValueRequired" && rs != "FieldValueForbidden" && rs != "FieldValueInvalid" &&
          rs != "FieldValueDuplicate")
        schema_errors.push_back(
            {"FieldValueNotSupported",
             fmt::format("Unsupported value: {}: supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", "
                         "\"FieldValueInvalid\", \"FieldValueRequired\"",
                         go_quote(rs)),
             at + ".reason"});
    }
    if (const std::string fp = util::string_of(&r, "fieldPath"); !fp.empty()) {
      if (trimmed(fp).empty()) invalid(fp, "fieldPath must be non-empty if specified", ".fieldPath");
      if (has_newlines(fp)) invalid(fp, "fieldPath must not contain line breaks", ".fieldPath");
      if (!valid_field_path(fp, s)) invalid(fp, "fieldPath must be a valid path", ".fieldPath");
    }
  }
  // "If any schema related validation errors have been found at this level or deeper, skip CEL
  // expression validation."
  if (schema_errors.size() > mark) return;
  const auto compiled = compile_rules(s, root);
  for (const CompiledRule& c : compiled) {
    const std::size_t index = static_cast<std::size_t>(
        std::find_if(list.begin(), list.end(),
                     [&](const json::value& v) { return v.is_object() && &v.as_object() == c.rule; }) -
        list.begin());
    const std::string at = fmt::format("{}.x-kubernetes-validations[{}]", path, index);
    if (!c.program.ast)
      cel_errors.push_back(
          {"FieldValueInvalid",
           fmt::format("Invalid value: {}: {}", rule_go_value(*c.rule),
                       compile_error(c.program, "compilation failed: ", "program instantiation failed: ")),
           at + ".rule"});
    else if (c.program.result_type != "bool")
      cel_errors.push_back(
          {"FieldValueInvalid",
           fmt::format("Invalid value: {}: cel expression must evaluate to a bool", rule_go_value(*c.rule)),
           at + ".rule"});
    if (!util::string_of(c.rule, "messageExpression").empty()) {
      if (!c.message.ast)
        cel_errors.push_back({"FieldValueInvalid",
                              fmt::format("Invalid value: {}: {}", rule_go_value(*c.rule),
                                          compile_error(c.message, "messageExpression compilation failed: ",
                                                        "messageExpression instantiation failed: ")),
                              at + ".messageExpression"});
      else if (c.message.result_type != "string")
        cel_errors.push_back(
            {"FieldValueInvalid",
             fmt::format("Invalid value: {}: messageExpression must evaluate to a string", rule_go_value(*c.rule)),
             at + ".messageExpression"});
    }
    if (c.program.uses_old_self) {
      if (!uncorrelatable.empty())
        cel_errors.push_back(
            {"FieldValueInvalid",
             fmt::format(
                 "Invalid value: {}: oldSelf cannot be used on the uncorrelatable portion of the schema within {}",
                 go_quote(util::string_of(c.rule, "rule")), uncorrelatable),
             at + ".rule"});
    } else if (const json::value* o = c.rule->if_contains("optionalOldSelf"); o && o->is_bool()) {
      cel_errors.push_back({"FieldValueInvalid",
                            fmt::format("Invalid value: {}: may not be set if oldSelf is not used in rule",
                                        o->as_bool() ? "true" : "false"),
                            at + ".optionalOldSelf"});
    }
  }
}

}  // namespace

// ValidateCustomResourceSelectableFields: each jsonPath a valid path (cel.ValidFieldPath, no array
// notation) outside metadata to a string, boolean or integer, none twice, at most 8.
void selectable_fields(const json::array& fields, const json::object& schema, const std::string& at,
                       std::vector<StatusCause>& out) {
  constexpr std::size_t kMaxSelectableFields = 8;
  std::set<std::string> unique;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const std::string field = fmt::format("{}[{}].jsonPath", at, i);
    const std::string jp = fields[i].is_object() ? util::string_of(&fields[i].as_object(), "jsonPath") : "";
    if (jp.empty()) {
      out.push_back({"FieldValueRequired", "Required value", field});
      continue;
    }
    const auto invalid = [&](const std::string& why) {
      out.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(jp), why), field});
    };
    const FieldPathAt path = field_path_at(jp, schema, false);
    if (!path.schema) {
      invalid("is an invalid path: " + path.error);
      continue;
    }
    if (path.path == "metadata" || path.path.starts_with("metadata.") || path.path.starts_with("metadata["))
      invalid("must not point to fields in metadata");
    const std::string type = util::string_of(path.schema, "type");
    if (type != "string" && type != "boolean" && type != "integer")
      invalid(
          "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are "
          "allowed.");
    if (!unique.insert(path.path).second)
      out.push_back({"FieldValueDuplicate", fmt::format("Duplicate value: {}", go_quote(jp)), field});
  }
  if (unique.size() > kMaxSelectableFields)
    out.push_back({"FieldValueTooMany",
                   fmt::format("Too many: {}: must have at most {} items", unique.size(), kMaxSelectableFields), at});
}

std::vector<StatusCause> validate_definition(const json::object& crd) {
  std::vector<StatusCause> out;
  const json::object* spec = member(&crd, "spec");
  const json::value* versions = spec ? spec->if_contains("versions") : nullptr;
  if (!versions || !versions->is_array()) return out;
  const auto& vs = versions->as_array();
  // The internal version keeps one spec.validation when every version has the same schema.
  bool same = true;
  for (std::size_t i = 1; i < vs.size(); ++i)
    if (!util::json_equal(
            vs[i].is_object() ? vs[i].as_object().contains("schema") ? vs[i].as_object().at("schema") : json::value()
                              : json::value(),
            vs[0].is_object() ? vs[0].as_object().contains("schema") ? vs[0].as_object().at("schema") : json::value()
                              : json::value()))
      same = false;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    if (!vs[i].is_object()) continue;
    const json::object* sch = member(member(&vs[i].as_object(), "schema"), "openAPIV3Schema");
    if (!sch) continue;
    std::vector<StatusCause> schema_errors, cel_errors;
    definition_rules(*sch,
                     same ? std::string("spec.validation.openAPIV3Schema")
                          : fmt::format("spec.versions[{}].schema.openAPIV3Schema", i),
                     true, "", schema_errors, cel_errors);
    out.insert(out.end(), schema_errors.begin(), schema_errors.end());
    out.insert(out.end(), cel_errors.begin(), cel_errors.end());
    if (same) break;
  }
  // selectableFields: the internal version keeps one list when every version has the same
  // (conversion.go), validated against the common schema (validateCustomResourceDefinitionSpec),
  // else each version's against its own (validateCustomResourceDefinitionVersion); without that
  // schema, refused with the messages as they are written there.
  const auto fields_of = [](const json::value& v) {
    const json::value* f = v.is_object() ? v.as_object().if_contains("selectableFields") : nullptr;
    return f && f->is_array() ? f->as_array() : json::array();
  };
  const auto schema_of = [](const json::value& v) {
    return v.is_object() ? member(member(&v.as_object(), "schema"), "openAPIV3Schema") : nullptr;
  };
  bool same_fields = true;
  for (std::size_t i = 1; i < vs.size(); ++i)
    same_fields = same_fields && util::json_equal(fields_of(vs[i]), fields_of(vs[0]));
  for (std::size_t i = 0; i < vs.size(); ++i) {
    const json::array fields = fields_of(vs[i]);
    if (fields.empty()) continue;
    const std::string at = same_fields ? "spec.selectableFields" : fmt::format("spec.versions[{}].selectableFields", i);
    const json::object* sch = (same_fields ? same : !same) ? schema_of(vs[i]) : nullptr;
    if (!sch)
      out.push_back({"FieldValueInvalid",
                     same_fields
                         ? "Invalid value: \"\": selectableFields may only be set when validations.schema is included"
                         : "Invalid value: \"\": selectableFields may only be set when "
                           "version.schema.openAPIV3Schema is not included",
                     at});
    else
      selectable_fields(fields, *sch, at, out);
    if (same_fields) break;
  }
  return out;
}

json::array storage_versions(const json::object& crd) {
  json::array stored;
  const json::object* spec = util::object_at(crd, {"spec"});
  const json::value* versions = spec ? spec->if_contains("versions") : nullptr;
  if (versions && versions->is_array())
    for (const auto& v : versions->as_array()) {
      const json::value* storage = v.is_object() ? v.as_object().if_contains("storage") : nullptr;
      if (storage && storage->is_bool() && storage->as_bool()) {
        stored.push_back(json::value(util::string_of(&v.as_object(), "name")));
        break;
      }
    }
  return stored;
}

void default_definition(json::object& crd) {
  json::object& spec = util::ensure_object(crd, "spec");
  json::object& names = util::ensure_object(spec, "names");
  const std::string kind = util::string_of(&names, "kind");
  if (util::string_of(&names, "singular").empty()) {
    std::string lower = kind;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    names["singular"] = lower;
  }
  if (util::string_of(&names, "listKind").empty() && !kind.empty()) names["listKind"] = kind + "List";
  if (const json::value* conv = spec.if_contains("conversion"); !conv || conv->is_null())
    spec["conversion"] = json::object{{"strategy", "None"}};
  json::value* at = spec.if_contains("conversion");
  for (const char* k : {"webhook", "clientConfig", "service"})
    at = at && at->is_object() ? at->as_object().if_contains(k) : nullptr;
  if (at && at->is_object())
    if (const json::value* port = at->as_object().if_contains("port"); !port || port->is_null())
      at->as_object()["port"] = 443;
  const json::object* status = util::object_at(crd, {"status"});
  const json::value* stored = status ? status->if_contains("storedVersions") : nullptr;
  if (!stored || !stored->is_array() || stored->as_array().empty())
    util::ensure_object(crd, "status")["storedVersions"] = storage_versions(crd);
}

const json::object* schema_at(const Schema& s, std::string_view dotted) {
  const json::object* at = s.root.get();
  while (at && !dotted.empty()) {
    // A list's items stand in for the list (a dotted path names no index).
    for (int depth = 0; depth < 64 && items(at) && util::string_of(at, "type") == "array"; ++depth) at = items(at);
    const auto dot = dotted.find('.');
    const std::string_view seg = dotted.substr(0, dot);
    dotted = dot == std::string_view::npos ? std::string_view{} : dotted.substr(dot + 1);
    const json::object* field = property(at, seg);
    at = field ? field : additional(at);
  }
  return at;
}

std::vector<std::string> list_keys(const Schema& s, std::string_view dotted) {
  const json::object* n = schema_at(s, dotted);
  const std::string type = util::string_of(n, "x-kubernetes-list-type");
  if (type == "set") return {"$primitive"};
  std::vector<std::string> keys;
  if (type == "map")
    if (const json::value* k = n->if_contains("x-kubernetes-list-map-keys"); k && k->is_array())
      for (const auto& key : k->as_array())
        if (key.is_string()) keys.emplace_back(key.as_string());
  return keys;
}

bool atomic_map(const Schema& s, std::string_view dotted) {
  return util::string_of(schema_at(s, dotted), "x-kubernetes-map-type") == "atomic";
}

}  // namespace gpupool::embedded::crd
