#include "embedded/validation_kinds.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <variant>

#include <fmt/format.h>

#include "common/ascii.hpp"
#include "common/join.hpp"
#include "embedded/admission.hpp"
#include "embedded/base64.hpp"
#include "embedded/clock.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/ip_parse.hpp"
#include "embedded/schema.hpp"
#include "embedded/typecheck.hpp"
#include "embedded/validation.hpp"
#include "embedded/validation_fields.hpp"
#include "gpupool/names.hpp"
#include "gpupool/quantity.hpp"
#include "gpupool/resources.hpp"

namespace gpupool::embedded {

namespace json = boost::json;
using fields::sorted_keys;
using util::object_at;
using util::string_of;

namespace {

// validation.IsConfigMapKey.
std::vector<std::string> config_map_key_errors(const std::string& key) {
  std::vector<std::string> out;
  if (key.size() > 253) out.push_back("must be no more than 253 characters");
  static const std::regex re("^[-._a-zA-Z0-9]+$");
  if (!std::regex_match(key, re))
    out.push_back(
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
        "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')");
  if (key == ".")
    out.push_back("must not be '.'");
  else if (key == "..")
    out.push_back("must not be '..'");
  else if (key.rfind("..", 0) == 0)
    out.push_back("must not start with '..'");
  return out;
}

void keys(const json::object* data, const char* field, std::vector<StatusCause>& causes) {
  for (const auto& k : sorted_keys(data))
    for (const auto& msg : config_map_key_errors(k))
      causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(k), msg),
                        fmt::format("{}[{}]", field, k)});
}

// The bytes of a Secret's data or a ConfigMap's binaryData value (base64 in the stored JSON; a
// value that does not decode is refused when decoded, before validation).
std::string decoded_bytes(const json::value& v) {
  if (!v.is_string()) return {};
  return base64_decode(v.as_string()).value_or(std::string());
}

// The total size the values of `m` add up to (len of each value: a ConfigMap's data as text,
// base64 values decoded).
std::size_t total_size(const json::object* m, bool base64) {
  std::size_t n = 0;
  if (m)
    for (const auto& [k, v] : *m) n += base64 ? decoded_bytes(v).size() : v.is_string() ? v.as_string().size() : 0;
  return n;
}

// core.MaxSecretSize, the limit of a Secret's data and of a ConfigMap's data and binaryData.
constexpr std::size_t kMaxSecretSize = 1 << 20;

// json.Unmarshal(b, &map[string]interface{}{}): encoding/json's syntax error, else a top-level
// value that is neither an object nor null (UnmarshalTypeError); nullopt when it decodes.
std::optional<std::string> go_unmarshal_map_error(std::string_view b) {
  if (auto e = go_json_syntax_error(b)) return e;
  boost::system::error_code ec;
  const json::value v = json::parse(b, ec);
  if (ec || v.is_object() || v.is_null()) return std::nullopt;
  return fmt::format("json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                     go_value_names(v).json);
}

void not_supported(const json::object& o, std::string_view key, std::string_view field,
                   std::initializer_list<std::string_view> allowed, std::vector<StatusCause>& causes) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_string()) return;
  const std::string_view s = v->as_string();
  if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return;
  std::string list;
  for (auto a : allowed) list += (list.empty() ? "" : ", ") + go_quote(a);
  causes.push_back({"FieldValueNotSupported",
                    fmt::format("Unsupported value: {}: supported values: {}", go_quote(s), list), std::string(field)});
}

// A []string as Go's %#v prints it: []string{"a", "b"}.
std::string go_strings(const json::array& a) {
  std::string out = "[]string{";
  for (std::size_t i = 0; i < a.size(); ++i)
    out += (i ? ", " : "") + go_quote(a[i].is_string() ? std::string(a[i].as_string()) : "");
  return out + "}";
}

// netutils.IPFamilyOfCIDRString: 4 or 6 for a CIDR ParseCIDRSloppy accepts (an IPv4-mapped IPv6
// address counts as IPv4: IPFamilyOf's To4() != nil), else nullopt.
std::optional<int> cidr_family(const std::string& s) {
  const auto c = ip::parse_cidr(s);
  if (!c) return std::nullopt;
  return ip::is_v4(c->ip) ? 4 : 6;
}

// ValidateNode's podCIDRs rules (IsValidCIDR on each, then IsDualStackCIDRStrings: at most one
// CIDR per family, none twice).
void node_pod_cidrs(const json::object* spec, std::vector<StatusCause>& causes) {
  const json::array* cidrs = spec ? util::array_at(*spec, {}, "podCIDRs") : nullptr;
  if (!cidrs || cidrs->empty()) return;
  auto text = [&](std::size_t i) {
    return (*cidrs)[i].is_string() ? std::string((*cidrs)[i].as_string()) : std::string();
  };
  std::optional<std::size_t> first_bad;
  bool v4 = false, v6 = false;
  for (std::size_t i = 0; i < cidrs->size(); ++i) {
    const auto family = cidr_family(text(i));
    if (!family) {
      causes.push_back(
          {"FieldValueInvalid",
           fmt::format("Invalid value: {}: must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                       go_quote(text(i))),
           fmt::format("spec.podCIDRs[{}]", i)});
      if (!first_bad) first_bad = i;
    }
    (family == 6 ? v6 : v4) = true;
  }
  if (cidrs->size() < 2) return;
  if (first_bad)
    causes.push_back(
        {"InternalError",
         fmt::format("Internal error: invalid PodCIDRs. failed to check with dual stack with error:invalid "
                     "CIDR[{}]: <nil> (invalid CIDR address: {})",
                     *first_bad, text(*first_bad)),
         "spec.podCIDRs"});
  if (first_bad || !(v4 && v6) || cidrs->size() > 2)
    causes.push_back(
        {"FieldValueInvalid",
         fmt::format("Invalid value: {}: may specify no more than one CIDR for each IP family", go_strings(*cidrs)),
         "spec.podCIDRs"});
  std::set<std::string> seen;
  for (std::size_t i = 0; i < cidrs->size(); ++i)
    if (!seen.insert(text(i)).second)
      causes.push_back({"FieldValueDuplicate", fmt::format("Duplicate value: {}", go_quote(text(i))),
                        fmt::format("spec.podCIDRs[{}]", i)});
}

}  // namespace

int GoQuantity::cmp(const GoQuantity& y) {
  if (dec || y.dec) dec = true, i_value = 0, i_scale = 0;
  return value < y.value ? -1 : value > y.value ? 1 : 0;
}

const std::string& GoQuantity::str() {
  if (s.empty()) s = value.to_string();
  return s;
}

// Quantity.MilliValue = ScaledValue(-3): for an int64Amount, AsScaledInt64 (amount.go), whose
// positiveScaleInt64 returns int64Multiply's wrapped product for a scale up to 9 and 0 when a
// longer one overflows, and whose negativeScaleInt64 rounds away from zero; for an inf.Dec, the
// quotient rounded as scaledValue rounds it (within gpupool's range).
std::int64_t GoQuantity::milli_value() const {
  if (dec) {
    // scaledValue: the quotient truncated, plus one when anything remains, then big.Int's Int64()
    // (its low 64 bits).
    const __int128 n = value.nano_value();
    __int128 m = n / 1'000'000;
    if (n % 1'000'000 != 0) ++m;
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(static_cast<unsigned __int128>(m)));
  }
  const int scale = i_scale + 3;
  if (scale < 0) {
    std::int64_t v = i_value;
    bool fraction = false;
    for (int i = 0; i < -scale; ++i) {
      fraction = fraction || v % 10 != 0;
      v /= 10;
      if (v == 0) return fraction ? (i_value > 0 ? 1 : -1) : 0;
    }
    return fraction ? (i_value > 0 ? v + 1 : v - 1) : v;
  }
  const auto multiply = [](std::int64_t a, std::int64_t b, bool& ok) {
    ok = true;
    if (a == 0 || b == 0 || a == 1 || b == 1) return a * b;
    if (a == INT64_MIN || b == INT64_MIN) return ok = false, std::int64_t{0};
    const auto c = static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
    ok = c / b == a;
    return c;
  };
  bool ok = true;
  if (scale <= 9) {
    std::int64_t p = 1;
    for (int i = 0; i < scale; ++i) p *= 10;
    return multiply(i_value, p, ok);
  }
  std::int64_t v = i_value;
  for (int i = 0; i < scale; ++i) {
    v = multiply(v, 10, ok);
    if (!ok) return 0;
  }
  return v;
}

std::string GoQuantity::go() const {
  return fmt::format(
      "resource.Quantity{{i:resource.int64Amount{{value:{}, scale:{}}}, d:resource.infDecAmount{{Dec:(*inf.Dec)({})}}, "
      "s:{}, Format:\"{}\"}}",
      i_value, i_scale, dec ? "0xc000000000" : "nil", go_quote(s), format);
}

// resource.ParseQuantity's result for a valid `text` (nullopt beyond gpupool's range): its fast
// path keeps an int64Amount (and the text itself when it is canonical), the rest an inf.Dec.
std::optional<GoQuantity> go_parse_quantity(const std::string& text) {
  GoQuantity g;
  try {
    g.value = Quantity::parse(text);
  } catch (const ValidationError&) {
    return std::nullopt;
  }
  g.text = text;
  if (text == "0") {
    g.s = "0";
    return g;
  }
  std::size_t i = 0;
  bool positive = true;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) positive = text[i++] != '-';
  while (i < text.size() && text[i] == '0') ++i;
  std::string num, denom;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) num += text[i++];
  if (num.empty()) num = "0";
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) denom += text[i++];
  }
  const std::string suffix = text.substr(i);
  static const std::map<std::string, int, std::less<>> kSi = {{"", 0},  {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3},
                                                              {"M", 6}, {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  static const std::map<std::string, int, std::less<>> kBinary = {{"Ki", 10}, {"Mi", 20}, {"Gi", 30},
                                                                  {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  int exponent = 0, precision = 0, scale = 0;
  std::int64_t mantissa = 1;
  bool binary = false;
  if (auto it = kSi.find(suffix); it != kSi.end()) {
    exponent = it->second;
  } else if (auto b = kBinary.find(suffix); b != kBinary.end()) {
    exponent = b->second;
    binary = true;
    g.format = "BinarySI";
  } else {
    exponent = std::stoi(suffix.substr(1));  // e<n> / E<n> (Quantity::parse checked it)
    g.format = "DecimalExponent";
  }
  if (!binary) {
    scale = exponent;
    precision = 18 - static_cast<int>(num.size() + denom.size());
  } else if (denom.empty()) {
    mantissa = std::int64_t{1} << exponent;
    precision = 15 - static_cast<int>(num.size()) - static_cast<int>(static_cast<float>(exponent) * 3 / 10) - 1;
  } else {
    precision = -1;
  }
  if (precision >= 0) {
    scale -= static_cast<int>(denom.size());
    const std::string shifted = num + denom;
    std::int64_t v = 0, result = 0;
    if (scale >= -9 && shifted.size() <= 18 &&
        (v = std::stoll(shifted), !__builtin_mul_overflow(v, mantissa, &result))) {
      g.i_value = positive ? result : -result;
      g.i_scale = scale;
      const bool canonical = binary ? exponent % 10 == 0 && (v & 7) != 0
                                    : scale % 3 == 0 && !shifted.ends_with("000") && shifted[0] != '0';
      if (canonical) g.s = text;
      return g;
    }
  }
  g.dec = true;
  // Below one, a binary quantity is printed in decimal.
  if (binary && g.value.nano_value() != 0 && g.value.nano_value() > -1000000000 && g.value.nano_value() < 1000000000)
    g.format = "DecimalSI";
  return g;
}

namespace {

// ValidateLimitRange for item `limit` at `f`: resource names (validateLimitRangeResourceName:
// validateContainerResourceName for Pod and Container items, validateResourceName otherwise),
// defaults forbidden for Pod items, storage bounds for PersistentVolumeClaim items, then each
// resource's cross-field rules in Go's order. (Kubernetes walks its maps in random order; the
// embedded server in sorted order: FIDELITY.md, known difference 2.)
void limit_range_item(const json::object& limit, const std::string& f, std::vector<StatusCause>& causes) {
  const std::string type = string_of(&limit, "type");
  const bool container_like = type == "Pod" || type == "Container";
  std::set<std::string> keys;
  auto names = [&](const char* list) {
    for (const auto& k : sorted_keys(object_at(limit, {list}))) {
      keys.insert(k);
      for (const auto& msg : container_resource_name_errors(k)) {
        if (!container_like && (msg == "must be a standard resource for containers" ||
                                msg == "doesn't follow extended resource name standard"))
          continue;  // validateResourceName stops before the container rules
        causes.push_back(
            {"FieldValueInvalid", fmt::format("Invalid value: {}: {}", k, msg), fmt::format("{}.{}[{}]", f, list, k)});
      }
    }
  };
  names("max");
  names("min");
  if (type == "Pod") {
    for (const char* list : {"default", "defaultRequest"})
      if (const json::object* o = object_at(limit, {list}); o && !o->empty())
        causes.push_back({"FieldValueForbidden", "Forbidden: may not be specified when `type` is 'Pod'",
                          fmt::format("{}.{}", f, list)});
  } else {
    names("default");
    names("defaultRequest");
  }
  if (type == "PersistentVolumeClaim") {
    const json::object* mn = object_at(limit, {"min"});
    const json::object* mx = object_at(limit, {"max"});
    if (!(mn && mn->contains("storage")) && !(mx && mx->contains("storage")))
      causes.push_back({"FieldValueRequired",
                        "Required value: either minimum or maximum storage value is required, but neither was provided",
                        f + ".limits"});
  }
  names("maxLimitRequestRatio");
  for (const auto& k : keys) {
    auto get = [&](const char* list) -> std::optional<GoQuantity> {
      if (type == "Pod" && (std::string_view(list) == "default" || std::string_view(list) == "defaultRequest"))
        return std::nullopt;
      const json::object* o = object_at(limit, {list});
      const json::value* v = o ? o->if_contains(k) : nullptr;
      if (!v || v->is_null()) return std::nullopt;
      return go_parse_quantity(schema::quantity_text(*v));
    };
    auto mn = get("min"), mx = get("max"), def = get("default"), req = get("defaultRequest"),
         ratio = get("maxLimitRequestRatio");
    auto invalid = [&](const char* list, GoQuantity& shown, std::string detail) {
      causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", shown.go(), detail),
                        fmt::format("{}.{}[{}]", f, list, k)});
    };
    // The pairs Go compares, in its order: {greater, lesser, the list named, the value shown,
    // the words of each side}. (Each message's String() calls run before its value is printed,
    // as Go evaluates them.)
    struct Pair {
      std::optional<GoQuantity>* big;
      std::optional<GoQuantity>* small;
      const char* list;
      std::optional<GoQuantity>* shown;
      const char* big_words;
      const char* small_words;
    };
    const Pair pairs[] = {{&mn, &mx, "min", &mn, "min value", "max value"},
                          {&mn, &req, "defaultRequest", &req, "min value", "default request value"},
                          {&req, &mx, "defaultRequest", &req, "default request value", "max value"},
                          {&req, &def, "defaultRequest", &req, "default request value", "default limit value"},
                          {&mn, &def, "default", &mn, "min value", "default value"},
                          {&def, &mx, "default", &mx, "default value", "max value"}};
    for (const auto& p : pairs) {
      if (!*p.big || !*p.small || (*p.big)->cmp(**p.small) <= 0) continue;
      std::string d =
          fmt::format("{} {} is greater than {} {}", p.big_words, (*p.big)->str(), p.small_words, (*p.small)->str());
      invalid(p.list, **p.shown, d);
    }
    if (ratio && ratio->cmp(*go_parse_quantity("1")) < 0) {
      std::string d = fmt::format("ratio {} is less than 1", ratio->str());
      invalid("maxLimitRequestRatio", *ratio, d);
    }
    if (ratio && mn && mx) {
      // In thousandths while all three fit, else in units (Value / MilliValue round up).
      constexpr std::int64_t kMaxMilli = INT64_MAX / 1000;
      double r = static_cast<double>(ratio->value.value());
      std::int64_t lo = mn->value.value(), hi = mx->value.value();
      if (ratio->value.value() < kMaxMilli && lo < kMaxMilli && hi < kMaxMilli) {
        r = static_cast<double>(ratio->value.milli_value()) / 1000;
        lo = mn->value.milli_value();
        hi = mx->value.milli_value();
      }
      const double limit_ratio = static_cast<double>(hi) / static_cast<double>(lo);
      if (r > limit_ratio) {
        // Go's %f: six decimals, +Inf / NaN spelled its way.
        const std::string shown = std::isinf(limit_ratio)   ? (limit_ratio > 0 ? "+Inf" : "-Inf")
                                  : std::isnan(limit_ratio) ? "NaN"
                                                            : fmt::format("{:f}", limit_ratio);
        std::string d = fmt::format("ratio {} is greater than max/min = {}", ratio->str(), shown);
        invalid("maxLimitRequestRatio", *ratio, d);
      }
    }
    // Resources that may not be overcommitted (extended resources, hugepages): default equals
    // defaultRequest.
    if (!is_overcommit_allowed(k) && def && req && def->cmp(*req) != 0) {
      std::string d =
          fmt::format("default value {} must equal to defaultRequest value {} in {}", def->str(), req->str(), k);
      invalid("defaultRequest", *req, d);
    }
  }
}

// A PodDisruptionBudgetSpec's pointer field as %#v prints it.
std::string go_pointer(const json::object* spec, std::string_view key, std::string_view type) {
  const json::value* v = spec ? spec->if_contains(key) : nullptr;
  return fmt::format("(*{})({})", type, v && !v->is_null() ? "0xc000000000" : "nil");
}

}  // namespace

namespace {

// Go's %q of a []string: ["a" "b"].
std::string go_q_list(std::initializer_list<std::string_view> items) {
  std::string out = "[";
  for (auto it = items.begin(); it != items.end(); ++it) out += (it == items.begin() ? "" : " ") + go_quote(*it);
  return out + "]";
}

// batch/validation parseIndexInterval: "" when fine, else the error.
std::string index_interval(std::string_view text, std::int64_t completions, std::int64_t& x, std::int64_t& y) {
  const auto parts = text::split(text, '-');
  if (parts.size() > 2)
    return fmt::format(
        "the fragment {} violates the requirement that an index interval can have at most two parts "
        "separated by '-'",
        fields::q(text));
  // strconv.Atoi: an optional sign, then decimal digits, within int64.
  const auto atoi = [](std::string_view d, std::int64_t& out) {  // strconv.Atoi
    const auto n = go_parse_int(d);
    if (n) out = *n;
    return n.has_value();
  };
  if (!atoi(parts[0], x)) return fmt::format("cannot convert string to integer for index: {}", fields::q(parts[0]));
  if (x >= completions) return fmt::format("too large index: {}", fields::q(parts[0]));
  y = x;
  if (parts.size() > 1) {
    if (!atoi(parts[1], y)) return fmt::format("cannot convert string to integer for index: {}", fields::q(parts[1]));
    if (y >= completions) return fmt::format("too large index: {}", fields::q(parts[1]));
    if (x >= y) return fmt::format("non-increasing order, previous: {}, current: {}", x, y);
  }
  return "";
}

// validateIndexesFormat: the number of indexes, or the error's text.
std::variant<std::int64_t, std::string> indexes_format(std::string_view text, std::int64_t completions) {
  if (text.empty()) return std::int64_t{0};
  std::optional<std::int64_t> last;
  std::int64_t total = 0;
  for (const auto part : text::split(text, ',')) {
    std::int64_t x = 0, y = 0;
    if (auto err = index_interval(part, completions, x, y); !err.empty()) return err;
    if (last && *last >= x) return fmt::format("non-increasing order, previous: {}, current: {}", *last, x);
    total += y - x + 1;
    last = y;
  }
  return total;
}

}  // namespace

namespace {

bool job_condition_is(const json::object& job, std::string_view type, std::string_view status) {
  const json::array* cs = util::array_at(job, {"status"}, "conditions");
  if (!cs) return false;
  return std::any_of(cs->begin(), cs->end(), [&](const json::value& c) {
    return c.is_object() && util::string_of(&c.as_object(), "type") == type &&
           util::string_of(&c.as_object(), "status") == status;
  });
}
bool job_condition_true(const json::object& job, std::string_view type) { return job_condition_is(job, type, "True"); }

// validateFailedIndexesNotOverlapCompleted
std::string indexes_overlap(std::string_view completed, std::string_view failed, std::int64_t completions) {
  if (completed.empty() || failed.empty()) return "";
  const auto cs = text::split(completed, ','), fs = text::split(failed, ',');
  std::size_t ci = 0, fi = 0;
  std::int64_t cx = 0, cy = 0, fx = 0, fy = 0;
  bool c_err = !index_interval(cs[0], completions, cx, cy).empty();
  bool f_err = !index_interval(fs[0], completions, fx, fy).empty();
  while (ci < cs.size() && fi < fs.size()) {
    if (c_err) {
      if (++ci < cs.size()) c_err = !index_interval(cs[ci], completions, cx, cy).empty();
    } else if (f_err) {
      if (++fi < fs.size()) f_err = !index_interval(fs[fi], completions, fx, fy).empty();
    } else {
      if (cx <= fy && fx <= cy)
        return fmt::format("failedIndexes and completedIndexes overlap at index: {}", std::max(cx, fx));
      if (cx <= fx) {
        if (++ci < cs.size()) c_err = !index_interval(cs[ci], completions, cx, cy).empty();
      } else if (++fi < fs.size()) {
        f_err = !index_interval(fs[fi], completions, fx, fy).empty();
      }
    }
  }
  return "";
}

// %#v of a *batch.UncountedTerminatedPods (dereferenced).
std::string go_uncounted(const json::object* u) {
  const auto list = [&](std::string_view key) {
    const json::value* v = u ? u->if_contains(key) : nullptr;
    if (!v || !v->is_array()) return std::string("[]types.UID(nil)");
    std::string out = "[]types.UID{";
    for (std::size_t i = 0; i < v->as_array().size(); ++i) {
      const json::value& e = v->as_array()[i];
      out += (i ? ", " : "") + fields::q(e.is_string() ? std::string_view(e.get_string()) : std::string_view());
    }
    return out + "}";
  };
  return fmt::format("batch.UncountedTerminatedPods{{Succeeded:{}, Failed:{}}}", list("succeeded"), list("failed"));
}

}  // namespace

std::optional<std::string> go_time_text(const std::string& rfc3339) {
  Clock::time_point at;
  if (rfc3339.empty() || !parse_rfc3339(rfc3339, at)) return std::nullopt;
  std::string value = to_rfc3339(at);  // 2030-01-01T00:00:00Z -> 2030-01-01 00:00:00 +0000 UTC
  value[value.find('T')] = ' ';
  value.replace(value.size() - 1, 1, " +0000 UTC");
  return value;
}

void job_status_update_causes(const json::object& job, const json::object& old, std::vector<StatusCause>& causes) {
  fields::Errors e{causes};
  const auto omitted = [&](const std::string& f, std::string_view detail) {
    causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}", detail), f});
  };
  const json::object* spec = util::object_at(job, {"spec"});
  const json::object* st = util::object_at(job, {"status"});
  const json::object* old_st = util::object_at(old, {"status"});
  const auto count = [](const json::object* o, std::string_view k) { return util::int_of(o, k, 0); };
  const auto has = [](const json::object* o, std::string_view k) {
    const json::value* v = o ? o->if_contains(k) : nullptr;
    return v && !v->is_null();
  };
  const auto text = [](const json::object* o, std::string_view k) { return util::string_of(o, k); };
  const auto same = [&](std::string_view k) {
    const json::value* a = st ? st->if_contains(k) : nullptr;
    const json::value* b = old_st ? old_st->if_contains(k) : nullptr;
    const bool na = !a || a->is_null(), nb = !b || b->is_null();
    return na == nb && (na || util::json_equal(*a, *b));
  };
  // jobStatusStrategy getStatusValidationOptions (JobManagedBy on in v1.32).
  const bool indexed = text(spec, "completionMode") == "Indexed";
  const auto finished = [&](const json::object& j) {
    return job_condition_true(j, "Complete") || job_condition_true(j, "Failed");
  };
  const bool finished_changed = finished(old) != finished(job);
  const bool complete_changed = job_condition_true(old, "Complete") != job_condition_true(job, "Complete");
  const bool failed_changed = job_condition_true(old, "Failed") != job_condition_true(job, "Failed");
  const bool failure_target_changed =
      job_condition_true(old, "FailureTarget") != job_condition_true(job, "FailureTarget");
  const bool criteria_changed =
      job_condition_true(old, "SuccessCriteriaMet") != job_condition_true(job, "SuccessCriteriaMet");
  const bool completed_indexes_changed = text(old_st, "completedIndexes") != text(st, "completedIndexes");
  const bool failed_indexes_changed = !same("failedIndexes");
  const bool active_changed = count(old_st, "active") != count(st, "active");
  const bool start_changed = !same("startTime");
  const bool completion_changed = !same("completionTime");
  const bool uncounted_changed = [&] {
    // Semantic.DeepEqual of the *UncountedTerminatedPods: nil and empty lists differ.
    const json::value* a = st ? st->if_contains("uncountedTerminatedPods") : nullptr;
    const json::value* b = old_st ? old_st->if_contains("uncountedTerminatedPods") : nullptr;
    return !((!a || a->is_null()) && (!b || b->is_null())) && (!a || !b || !util::json_equal(*a, *b));
  }();
  const bool ready_changed = !same("ready");
  const bool terminating_changed = !same("terminating");
  const json::value* suspend_v = spec ? spec->if_contains("suspend") : nullptr;
  const bool suspend = suspend_v && suspend_v->is_bool() && suspend_v->as_bool();
  const json::value* completions_v = spec ? spec->if_contains("completions") : nullptr;
  const bool has_completions = completions_v && completions_v->is_int64();
  const std::int64_t completions = has_completions ? completions_v->as_int64() : 0;
  const bool suspended_zero = suspend && has_completions && completions == 0;
  const bool resuming = job_condition_true(old, "Suspended") && job_condition_is(job, "Suspended", "False");
  const json::value* parallelism_v = spec ? spec->if_contains("parallelism") : nullptr;
  const bool reject_decreasing_succeeded =
      !indexed ||
      !(has_completions && parallelism_v && parallelism_v->is_int64() && parallelism_v->as_int64() == completions);
  const bool per_index = has(spec, "backoffLimitPerIndex");

  // validateJobStatus
  for (const char* k : {"active", "succeeded", "failed"}) non_negative(st, k, fmt::format("status.{}", k), causes);
  for (const char* k : {"ready", "terminating"})
    if (has(st, k)) non_negative(st, k, fmt::format("status.{}", k), causes);
  if (const json::object* u = util::object_at(job, {"status", "uncountedTerminatedPods"})) {
    std::set<std::string> seen;
    for (const char* list : {"succeeded", "failed"})
      if (const json::array* uids = util::array_at(*u, {}, list))
        for (std::size_t i = 0; i < uids->size(); ++i) {
          const std::string uid = (*uids)[i].is_string() ? std::string((*uids)[i].get_string()) : std::string();
          const std::string f = fmt::format("status.uncountedTerminatedPods.{}[{}]", list, i);
          if (uid.empty())
            e.invalid(f, "\"\"", "must not be empty");
          else if (!seen.insert(uid).second)
            e.duplicate(f, fields::q(uid));
        }
  }
  const bool complete = job_condition_true(job, "Complete"), failed = job_condition_true(job, "Failed");
  const bool failure_target = job_condition_true(job, "FailureTarget");
  const bool criteria = job_condition_true(job, "SuccessCriteriaMet");
  const bool is_finished = complete || failed;
  if ((complete_changed || failed_changed) && complete && failed)
    omitted("status.conditions", "cannot set Complete=True and Failed=true conditions");
  if ((complete_changed || failure_target_changed) && complete && failure_target)
    omitted("status.conditions", "cannot set Complete=True and FailureTarget=true conditions");
  if ((complete_changed || completion_changed) && has(st, "completionTime") && !complete)
    e.invalid("status.completionTime", go_time_text(text(st, "completionTime")).value_or(text(st, "completionTime")),
              "cannot set completionTime when there is no Complete=True condition");
  if ((complete_changed || completion_changed) && !has(st, "completionTime") && complete)
    e.required("status.completionTime", "completionTime is required for Complete jobs");
  if ((start_changed || completion_changed) && has(st, "startTime") && has(st, "completionTime")) {
    const auto s0 = time_from_rfc3339(text(st, "startTime")), c0 = time_from_rfc3339(text(st, "completionTime"));
    if (s0 && c0 && *c0 < *s0)
      e.invalid("status.completionTime", go_time_text(text(st, "completionTime")).value_or(text(st, "completionTime")),
                "completionTime cannot be set before startTime");
  }
  if ((failed_changed || failed_indexes_changed) && failed && !failure_target)
    omitted("status.conditions", "cannot set Failed=True condition without the FailureTarget=true condition");
  if ((complete_changed || criteria_changed) && complete && !criteria)
    omitted("status.conditions", "cannot set Complete=True condition without the SuccessCriteriaMet=true condition");
  if ((finished_changed || active_changed) && count(st, "active") > 0 && is_finished)
    e.invalid("status.active", std::to_string(count(st, "active")), "active>0 is invalid for finished job");
  if ((finished_changed || start_changed) && !suspended_zero && !has(st, "startTime") && is_finished)
    e.required("status.startTime", "startTime is required for finished job");
  if ((finished_changed || uncounted_changed) && is_finished) {
    const json::object* u = util::object_at(job, {"status", "uncountedTerminatedPods"});
    const json::array* us = u ? util::array_at(*u, {}, "succeeded") : nullptr;
    const json::array* uf = u ? util::array_at(*u, {}, "failed") : nullptr;
    if ((us ? us->size() : 0) + (uf ? uf->size() : 0) > 0)
      e.invalid("status.uncountedTerminatedPods", go_uncounted(u),
                "uncountedTerminatedPods needs to be empty for finished job");
  }
  if (completed_indexes_changed && has_completions)
    if (auto r = indexes_format(text(st, "completedIndexes"), completions); std::holds_alternative<std::string>(r))
      e.invalid("status.completedIndexes", fields::q(text(st, "completedIndexes")),
                "error parsing completedIndexes: " + std::get<std::string>(r));
  if (failed_indexes_changed && has_completions && per_index && has(st, "failedIndexes"))
    if (auto r = indexes_format(text(st, "failedIndexes"), completions); std::holds_alternative<std::string>(r))
      e.invalid("status.failedIndexes", fields::q(text(st, "failedIndexes")),
                "error parsing failedIndexes: " + std::get<std::string>(r));
  if (completed_indexes_changed && !text(st, "completedIndexes").empty() && !indexed)
    e.invalid("status.completedIndexes", fields::q(text(st, "completedIndexes")),
              "cannot set non-empty completedIndexes when non-indexed completion mode");
  if (failed_indexes_changed && !per_index && has(st, "failedIndexes"))
    e.invalid("status.failedIndexes", fields::q(text(st, "failedIndexes")),
              "cannot set non-null failedIndexes when backoffLimitPerIndex is null");
  if ((failed_indexes_changed || completed_indexes_changed) && has_completions && has(st, "failedIndexes"))
    if (auto err = indexes_overlap(text(st, "completedIndexes"), text(st, "failedIndexes"), completions); !err.empty())
      e.invalid("status.failedIndexes", fields::q(text(st, "failedIndexes")), err);
  if ((finished_changed || terminating_changed) && count(st, "terminating") > 0 && is_finished)
    e.invalid("status.terminating", std::to_string(count(st, "terminating")),
              "terminating>0 is invalid for finished job");
  if ((ready_changed || active_changed) && has(st, "ready") && count(st, "ready") > count(st, "active"))
    e.invalid("status.ready", std::to_string(count(st, "ready")), "cannot set more ready pods than active");
  if (criteria && failed) omitted("status.conditions", "cannot set SuccessCriteriaMet=True and Failed=true conditions");
  if (criteria && failure_target)
    omitted("status.conditions", "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions");
  if (has(spec, "successPolicy") && !criteria && complete)
    omitted("status.conditions", "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True");
  // ValidateJobStatusUpdate
  for (const char* type : {"Failed", "Complete", "FailureTarget"})
    if (job_condition_true(old, type) && !job_condition_true(job, type))
      omitted("status.conditions", fmt::format("cannot disable the terminal {}=True condition", type));
  if (count(st, "failed") < count(old_st, "failed"))
    e.invalid("status.failed", std::to_string(count(st, "failed")), "cannot decrease the failed counter");
  if (reject_decreasing_succeeded && count(st, "succeeded") < count(old_st, "succeeded"))
    e.invalid("status.succeeded", std::to_string(count(st, "succeeded")), "cannot decrease the succeeded counter");
  if (has(st, "completionTime") && has(old_st, "completionTime") && !same("completionTime"))
    e.invalid("status.completionTime", go_time_text(text(st, "completionTime")).value_or(text(st, "completionTime")),
              "completionTime cannot be mutated");
  if (start_changed && !resuming && has(old_st, "startTime") && !suspend)
    e.required("status.startTime", "startTime cannot be removed for unsuspended job");
  if (job_condition_true(old, "SuccessCriteriaMet") && !criteria)
    omitted("status.conditions", "cannot disable the SuccessCriteriaMet=True condition");
  if (job_condition_true(old, "Complete") && !job_condition_true(old, "SuccessCriteriaMet") && criteria)
    omitted("status.conditions", "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions");
}

void domain_prefixed_path(const std::string& f, const std::string& value, std::vector<StatusCause>& causes) {
  fields::Errors e{causes};
  const auto slash = value.find('/');
  if (value.empty()) {
    e.required(f);
  } else if (slash == std::string::npos || slash == 0 || slash + 1 == value.size()) {
    e.invalid(f, go_quote(value), "must be a domain-prefixed path (such as \"acme.io/foo\")");
  } else {
    const std::string host = value.substr(0, slash), path = value.substr(slash + 1);
    e.invalid(f, host, dns1123_subdomain_errors(host));
    static constexpr std::string_view kPath = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";  // httpPathFmt
    if (path.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/-._~%!$&'()*+,;=:") !=
        std::string::npos)
      e.invalid(f, go_quote(path), fmt::format("Invalid path (regex used for validation is '{}')", kPath));
  }
}

std::string go_success_policy(const json::object& policy) {
  const auto rule = [](const json::object& r) {
    return fmt::format("batch.SuccessPolicyRule{{SucceededIndexes:{}, SucceededCount:{}}}",
                       go_pointer(&r, "succeededIndexes", "string"), go_pointer(&r, "succeededCount", "int32"));
  };
  return fmt::format("batch.SuccessPolicy{{Rules:{}}}",
                     fields::go_struct_slice("batch.SuccessPolicyRule", util::array_at(policy, {}, "rules"), rule));
}

std::string go_pod_failure_policy(const json::object& policy) {
  const auto pattern = [](const json::object& p) {
    return fmt::format("batch.PodFailurePolicyOnPodConditionsPattern{{Type:{}, Status:{}}}",
                       go_quote(fields::string_at(p, "type")), go_quote(fields::string_at(p, "status")));
  };
  const auto rule = [&](const json::object& r) {
    return fmt::format("batch.PodFailurePolicyRule{{Action:{}, OnExitCodes:{}, OnPodConditions:{}}}",
                       go_quote(fields::string_at(r, "action")),
                       go_pointer(&r, "onExitCodes", "batch.PodFailurePolicyOnExitCodesRequirement"),
                       fields::go_struct_slice("batch.PodFailurePolicyOnPodConditionsPattern",
                                               util::array_at(r, {}, "onPodConditions"), pattern));
  };
  return fmt::format("batch.PodFailurePolicy{{Rules:{}}}",
                     fields::go_struct_slice("batch.PodFailurePolicyRule", util::array_at(policy, {}, "rules"), rule));
}

void csi_driver_spec_causes(const json::object& spec, std::vector<StatusCause>& causes) {
  fields::Errors e{causes};
  // validateCSIDriverSpec (storage/validation, v1.32): the pointers SetDefaults_CSIDriver sets are
  // required (attachRequired at "attachedRequired", sic), fsGroupPolicy and each lifecycle mode
  // among the supported, token requests' audiences once each and their lifetimes bounded.
  if (!fields::present(spec, "attachRequired")) e.required("spec.attachedRequired");
  if (!fields::present(spec, "podInfoOnMount")) e.required("spec.podInfoOnMount");
  if (!fields::present(spec, "storageCapacity")) e.required("spec.storageCapacity");
  if (fields::present(spec, "fsGroupPolicy"))
    if (const std::string p = fields::string_at(spec, "fsGroupPolicy");
        p != "ReadWriteOnceWithFSType" && p != "File" && p != "None")
      e.not_supported("spec.fsGroupPolicy", p, {"File", "None", "ReadWriteOnceWithFSType"});
  std::set<std::string> audiences;
  const auto requests = fields::items(spec, "tokenRequests");
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const std::string f = fmt::format("spec.tokenRequests[{}]", i);
    const std::string audience = fields::string_at(*requests[i], "audience");
    if (!audiences.insert(audience).second) {
      e.duplicate(f + ".audience", go_quote(audience));
      continue;
    }
    if (const auto s = fields::int_at(*requests[i], "expirationSeconds")) {
      if (*s < 600)
        e.invalid(f + ".expirationSeconds", std::to_string(*s), "may not specify a duration less than 10 minutes");
      if (*s > (std::int64_t{1} << 32))
        e.invalid(f + ".expirationSeconds", std::to_string(*s), "may not specify a duration larger than 2^32 seconds");
    }
  }
  for (const auto& mode : fields::strings_at(spec, "volumeLifecycleModes"))
    if (mode != "Persistent" && mode != "Ephemeral")
      e.not_supported("spec.volumeLifecycleModes", mode, {"Persistent", "Ephemeral"});
  if (!fields::present(spec, "seLinuxMount")) e.required("spec.seLinuxMount");  // the gate is on
}

void job_spec_causes(const json::object& spec, std::vector<StatusCause>& causes) {
  // validateJobSpec's order: the counts, activeDeadlineSeconds, backoffLimit, the TTL, then the rest.
  for (const char* k :
       {"parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"})
    non_negative(&spec, k, std::string("spec.") + k, causes);
  const auto completions = fields::int_at(spec, "completions");
  const auto parallelism = fields::int_at(spec, "parallelism");
  const auto per_index = fields::int_at(spec, "backoffLimitPerIndex");
  const auto max_failed = fields::int_at(spec, "maxFailedIndexes");
  if (per_index) non_negative(&spec, "backoffLimitPerIndex", "spec.backoffLimitPerIndex", causes);
  if (max_failed) {
    non_negative(&spec, "maxFailedIndexes", "spec.maxFailedIndexes", causes);
    if (!per_index)
      causes.push_back(
          {"FieldValueRequired", "Required value: when maxFailedIndexes is specified", "spec.backoffLimitPerIndex"});
  }
  // managedBy (the JobManagedBy gate is on in v1.32): IsDomainPrefixedPath, at most 63 bytes.
  if (fields::present(spec, "managedBy")) {
    const std::string by = fields::string_at(spec, "managedBy");
    domain_prefixed_path("spec.managedBy", by, causes);
    if (by.size() > 63)
      causes.push_back({"FieldValueTooLong", "Too long: may not be more than 63 bytes", "spec.managedBy"});
  }
  const json::value* modev = spec.if_contains("completionMode");
  const std::string mode = modev && modev->is_string() ? std::string(modev->as_string()) : "";
  const bool indexed = mode == "Indexed";
  if (modev) {
    if (mode != "NonIndexed" && !indexed)
      fields::Errors{causes}.not_supported("spec.completionMode", mode, {"NonIndexed", "Indexed"});
    if (indexed) {
      if (!completions)
        causes.push_back({"FieldValueRequired", "Required value: when completion mode is Indexed", "spec.completions"});
      if (parallelism && *parallelism > 100000)
        causes.push_back({"FieldValueInvalid",
                          fmt::format("Invalid value: {}: must be less than or equal to 100000 when completion mode "
                                      "is Indexed",
                                      *parallelism),
                          "spec.parallelism"});
      if (completions && max_failed && *max_failed > *completions)
        causes.push_back({"FieldValueInvalid",
                          fmt::format("Invalid value: {}: must be less than or equal to completions", *max_failed),
                          "spec.maxFailedIndexes"});
      if (max_failed && *max_failed > 100000)
        causes.push_back({"FieldValueInvalid",
                          fmt::format("Invalid value: {}: must be less than or equal to 100000", *max_failed),
                          "spec.maxFailedIndexes"});
      if (completions && *completions > 100000 && per_index) {
        if (!max_failed)
          causes.push_back({"FieldValueRequired", "Required value: must be specified when completions is above 100000",
                            "spec.maxFailedIndexes"});
        if (parallelism && *parallelism > 10000)
          causes.push_back({"FieldValueInvalid",
                            fmt::format("Invalid value: {}: must be less than or equal to 10000 when completions are "
                                        "above 100000 and used with backoff limit per index",
                                        *parallelism),
                            "spec.parallelism"});
        if (max_failed && *max_failed > 10000)
          causes.push_back({"FieldValueInvalid",
                            fmt::format("Invalid value: {}: must be less than or equal to 10000 when completions are "
                                        "above 100000 and used with backoff limit per index",
                                        *max_failed),
                            "spec.maxFailedIndexes"});
      }
    }
  }
  if (!indexed) {
    if (per_index)
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: requires indexed completion mode", *per_index),
                        "spec.backoffLimitPerIndex"});
    if (max_failed)
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: requires indexed completion mode", *max_failed),
                        "spec.maxFailedIndexes"});
  }
  // validatePodFailurePolicy: at most 20 rules, each with one known action and either exit codes
  // or pod conditions.
  const json::object* pfp = object_at(spec, {"podFailurePolicy"});
  if (pfp) {
    std::set<std::string, std::less<>> containers;
    for (const char* list : {"containers", "initContainers"})
      if (const json::array* cs = util::array_at(spec, {"template", "spec"}, list))
        for (const auto& c : *cs)
          if (c.is_object()) containers.insert(string_of(&c.as_object(), "name"));
    const json::array* rules = util::array_at(*pfp, {}, "rules");
    if (rules && rules->size() > 20)
      causes.push_back({"FieldValueTooMany", fmt::format("Too many: {}: must have at most 20 items", rules->size()),
                        "spec.podFailurePolicy.rules"});
    for (std::size_t i = 0; rules && i < rules->size(); ++i) {
      const json::object& rule = (*rules)[i].is_object() ? (*rules)[i].as_object() : fields::kNone;
      const std::string rp = fmt::format("spec.podFailurePolicy.rules[{}]", i);
      const std::string action = string_of(&rule, "action");
      if (action.empty())
        causes.push_back({"FieldValueRequired",
                          "Required value: valid values: " + go_q_list({"Count", "FailIndex", "FailJob", "Ignore"}),
                          rp + ".action"});
      else if (action == "FailIndex" && !per_index)
        causes.push_back(
            {"FieldValueInvalid",
             fmt::format("Invalid value: {}: requires the backoffLimitPerIndex to be set", go_quote(action)),
             rp + ".action"});
      else if (action != "Count" && action != "FailIndex" && action != "FailJob" && action != "Ignore")
        fields::Errors{causes}.not_supported(rp + ".action", action, {"Count", "FailIndex", "FailJob", "Ignore"});
      const json::object* codes = object_at(rule, {"onExitCodes"});
      const json::array* conds = util::array_at(rule, {}, "onPodConditions");
      if (codes) {  // validatePodFailurePolicyRuleOnExitCodes
        const std::string cp = rp + ".onExitCodes";
        const std::string op = string_of(codes, "operator");
        if (op.empty())
          causes.push_back(
              {"FieldValueRequired", "Required value: valid values: " + go_q_list({"In", "NotIn"}), cp + ".operator"});
        else if (op != "In" && op != "NotIn")
          fields::Errors{causes}.not_supported(cp + ".operator", op, {"In", "NotIn"});
        if (const json::value* cn = codes->if_contains("containerName");
            cn && cn->is_string() && !containers.count(std::string_view(cn->as_string())))
          causes.push_back({"FieldValueInvalid",
                            fmt::format("Invalid value: {}: must be one of the container or initContainer names in the "
                                        "pod template",
                                        go_quote(cn->as_string())),
                            cp + ".containerName"});
        const json::value* vv = codes->if_contains("values");
        const json::array* values = vv && vv->is_array() ? &vv->as_array() : nullptr;
        auto go_values = [&] {
          if (!values) return std::string("[]int32(nil)");
          std::string out = "[]int32{";
          for (std::size_t j = 0; j < values->size(); ++j)
            out += (j ? ", " : "") + ((*values)[j].is_int64() ? std::to_string((*values)[j].as_int64()) : "0");
          return out + "}";
        };
        if (!values || values->empty())
          causes.push_back({"FieldValueInvalid",
                            fmt::format("Invalid value: {}: at least one value is required", go_values()),
                            cp + ".values"});
        else if (values->size() > 255)
          causes.push_back({"FieldValueTooMany",
                            fmt::format("Too many: {}: must have at most 255 items", values->size()), cp + ".values"});
        bool ordered = true;
        std::set<std::int64_t> seen;
        for (std::size_t j = 0; values && j < values->size(); ++j) {
          const std::int64_t v = (*values)[j].is_int64() ? (*values)[j].as_int64() : 0;
          const std::string vp = fmt::format("{}.values[{}]", cp, j);
          if (op == "In" && v == 0)
            causes.push_back({"FieldValueInvalid", "Invalid value: 0: must not be 0 for the In operator", vp});
          if (!seen.insert(v).second)
            causes.push_back({"FieldValueDuplicate", fmt::format("Duplicate value: {}", v), vp});
          if (j > 0 && ((*values)[j - 1].is_int64() ? (*values)[j - 1].as_int64() : 0) > v) ordered = false;
        }
        if (!ordered)
          causes.push_back(
              {"FieldValueInvalid", fmt::format("Invalid value: {}: must be ordered", go_values()), cp + ".values"});
      }
      if (conds && !conds->empty()) {  // validatePodFailurePolicyRuleOnPodConditions
        const std::string pp = rp + ".onPodConditions";
        if (conds->size() > 20)
          causes.push_back(
              {"FieldValueTooMany", fmt::format("Too many: {}: must have at most 20 items", conds->size()), pp});
        for (std::size_t j = 0; j < conds->size(); ++j) {
          const json::object& c = (*conds)[j].is_object() ? (*conds)[j].as_object() : fields::kNone;
          const std::string cp = fmt::format("{}[{}]", pp, j);
          const std::string type = string_of(&c, "type");
          for (const auto& m : qualified_name_errors(type))
            causes.push_back(
                {"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(type), m), cp + ".type"});
          const std::string status = string_of(&c, "status");
          if (status.empty())
            causes.push_back({"FieldValueRequired",
                              "Required value: valid values: " + go_q_list({"False", "True", "Unknown"}),
                              cp + ".status"});
          else if (status != "False" && status != "True" && status != "Unknown")
            fields::Errors{causes}.not_supported(cp + ".status", status, {"False", "True", "Unknown"});
        }
      }
      if (codes && conds && !conds->empty())
        causes.push_back({"FieldValueInvalid",
                          "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported", rp});
      if (!codes && (!conds || conds->empty()))
        causes.push_back(
            {"FieldValueInvalid", "Invalid value: specifying one of OnExitCodes and OnPodConditions is required", rp});
    }
  }
  // successPolicy: Indexed only (printed with %#v), then validateSuccessPolicy.
  if (const json::object* sp = object_at(spec, {"successPolicy"})) {
    const json::array* rules = util::array_at(*sp, {}, "rules");
    if (!indexed) {
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: requires indexed completion mode", go_success_policy(*sp)),
                        "spec.successPolicy"});
    } else {
      if (!rules || rules->empty())
        causes.push_back({"FieldValueRequired",
                          "Required value: at least one rules must be specified when the successPolicy is specified",
                          "spec.successPolicy.rules"});
      if (rules && rules->size() > 20)
        causes.push_back({"FieldValueTooMany", fmt::format("Too many: {}: must have at most 20 items", rules->size()),
                          "spec.successPolicy.rules"});
      for (std::size_t i = 0; rules && i < rules->size(); ++i) {
        const json::object& r = (*rules)[i].is_object() ? (*rules)[i].as_object() : fields::kNone;
        const std::string rp = fmt::format("spec.successPolicy.rules[{}]", i);
        const json::value* si = r.if_contains("succeededIndexes");
        const auto count = fields::int_at(r, "succeededCount");
        if (!si && !r.contains("succeededCount"))
          causes.push_back({"FieldValueRequired",
                            "Required value: at least one of succeededCount or succeededIndexes must be specified",
                            rp});
        std::int64_t total = 0;
        if (si && si->is_string()) {
          const std::string text(si->as_string());
          if (text.size() > 64 * 1024)
            causes.push_back(
                {"FieldValueTooLong", "Too long: may not be more than 65536 bytes", rp + ".succeededIndexes"});
          const auto parsed = indexes_format(text, completions.value_or(0));
          if (const auto* err = std::get_if<std::string>(&parsed))
            causes.push_back(
                {"FieldValueInvalid",
                 fmt::format("Invalid value: {}: error parsing succeededIndexes: {}", go_quote(text), *err),
                 rp + ".succeededIndexes"});
          else
            total = std::get<std::int64_t>(parsed);
        }
        if (count) {
          const std::string cp = rp + ".succeededCount";
          if (*count < 0)
            causes.push_back({"FieldValueInvalid",
                              fmt::format("Invalid value: {}: must be greater than or equal to 0", *count), cp});
          if (*count > completions.value_or(0))
            causes.push_back({"FieldValueInvalid",
                              fmt::format("Invalid value: {}: must be less than or equal to {} (the number of "
                                          "specified completions)",
                                          *count, completions.value_or(0)),
                              cp});
          if (si && *count > total)
            causes.push_back({"FieldValueInvalid",
                              fmt::format("Invalid value: {}: must be less than or equal to {} (the number of indexes "
                                          "in the specified succeededIndexes field)",
                                          *count, total),
                              cp});
        }
      }
    }
  }
  // validatePodReplacementPolicy: with a podFailurePolicy only Failed.
  if (const json::value* rp = spec.if_contains("podReplacementPolicy"); rp && rp->is_string()) {
    const std::string v(rp->as_string());
    if (pfp) {
      if (v != "Failed") fields::Errors{causes}.not_supported("spec.podReplacementPolicy", v, {"Failed"});
    } else if (v != "Failed" && v != "TerminatingOrFailed") {
      fields::Errors{causes}.not_supported("spec.podReplacementPolicy", v, {"Failed", "TerminatingOrFailed"});
    }
  }
}

GoIntOrString::GoIntOrString(const json::value& v) {
  if (v.is_string()) is_string = true, str_val = v.as_string();
  if (v.is_int64()) int_val = v.as_int64();
}

std::string GoIntOrString::go() const {
  return fmt::format("intstr.IntOrString{{Type:{}, IntVal:{}, StrVal:{}}}", is_string ? 1 : 0, int_val,
                     go_quote(str_val));
}

bool GoIntOrString::valid_percent() const {
  return is_string && str_val.size() > 1 && str_val.back() == '%' &&
         str_val.find_first_not_of("0123456789") == str_val.size() - 1;
}

std::optional<std::int64_t> GoIntOrString::percent() const {
  if (!valid_percent()) return std::nullopt;
  const long long n = std::strtoll(str_val.c_str(), nullptr, 10);  // (saturates, as Atoi's value does)
  return static_cast<std::int64_t>(n);
}

std::int64_t GoIntOrString::value() const {
  if (auto p = percent()) return *p;
  if (!is_string) return int_val;
  // IntValue: strconv.Atoi of the string (an optional sign, then digits only), 0 when it is not one.
  const std::string_view d = str_val.starts_with('+') || str_val.starts_with('-') ? std::string_view(str_val).substr(1)
                                                                                  : std::string_view(str_val);
  if (d.empty() || d.find_first_not_of("0123456789") != std::string_view::npos) return 0;
  return static_cast<std::int64_t>(std::strtoll(str_val.c_str(), nullptr, 10));
}

void non_negative_or_percent(const json::object* o, std::string_view key, std::string field,
                             std::vector<StatusCause>& causes) {
  const json::value* v = o ? o->if_contains(key) : nullptr;
  if (!v) return;
  if (v->is_int64()) return non_negative(o, key, std::move(field), causes);
  if (!v->is_string()) return;
  const GoIntOrString x(*v);
  if (!x.valid_percent())
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: a valid percent string must be a numeric string followed by an "
                                  "ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                                  x.go()),
                      std::move(field)});
}

void not_more_than_100_percent(const json::object* o, std::string_view key, std::string field,
                               std::vector<StatusCause>& causes) {
  const json::value* v = o ? o->if_contains(key) : nullptr;
  if (!v) return;
  const GoIntOrString x(*v);
  if (auto p = x.percent(); p && *p > 100)
    causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: must not be greater than 100%", x.go()),
                      std::move(field)});
}

void non_negative(const json::object* o, std::string_view key, std::string field, std::vector<StatusCause>& causes) {
  const json::value* v = o ? o->if_contains(key) : nullptr;
  if (v && v->is_int64() && v->as_int64() < 0)
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: must be greater than or equal to 0", v->as_int64()),
                      std::move(field)});
}

namespace {

// ValidateTopologySelectorTerm's key -> values of a term (validateTopologySelectorLabelRequirement:
// values required and unique, the key a label name; no key twice).
std::map<std::string, std::set<std::string>> topology_selector_term(const json::object& term, const std::string& f,
                                                                    fields::Causes& causes) {
  fields::Errors e{causes};
  std::map<std::string, std::set<std::string>> keys;
  if (const json::array* exprs = fields::array_at(term, "matchLabelExpressions"))
    for (std::size_t i = 0; i < exprs->size(); ++i) {
      const json::object& req = (*exprs)[i].is_object() ? (*exprs)[i].as_object() : fields::kNone;
      const std::string at = fmt::format("{}.matchLabelExpressions[{}]", f, i);
      const std::vector<std::string> values = fields::strings_at(req, "values");
      if (values.empty()) e.required(at + ".values");
      std::set<std::string> set;
      for (std::size_t j = 0; j < values.size(); ++j)
        if (!set.insert(values[j]).second) e.duplicate(fmt::format("{}.values[{}]", at, j), fields::q(values[j]));
      const std::string key = fields::string_at(req, "key");
      e.invalid(at + ".key", key, qualified_name_errors(key));
      if (keys.contains(key)) e.duplicate(at + ".key", fields::q(key));
      keys[key] = std::move(set);
    }
  return keys;
}

}  // namespace

void rbac_role_causes(const json::object& role, bool namespaced, fields::Causes& causes) {
  // rbac/validation ValidateRole / ValidateClusterRole past the metadata: ValidatePolicyRule on
  // each rule, then a ClusterRole's aggregationRule.
  fields::Errors e{causes};
  if (const json::array* rules = fields::array_at(role, "rules"))
    for (std::size_t i = 0; i < rules->size(); ++i) {
      const json::object& r = (*rules)[i].is_object() ? (*rules)[i].as_object() : fields::kNone;
      const std::string at = fmt::format("rules[{}]", i);
      auto count = [&](const char* k) { return fields::array_at(r, k) ? fields::array_at(r, k)->size() : 0; };
      if (count("verbs") == 0) e.required(at + ".verbs", "verbs must contain at least one value");
      if (count("nonResourceURLs") > 0) {
        const std::string urls = fields::go_strings(fields::strings_at(r, "nonResourceURLs"));
        if (namespaced) e.invalid(at + ".nonResourceURLs", urls, "namespaced rules cannot apply to non-resource URLs");
        if (count("apiGroups") > 0 || count("resources") > 0 || count("resourceNames") > 0)
          e.invalid(at + ".nonResourceURLs", urls,
                    "rules cannot apply to both regular resources and non-resource URLs");
        continue;
      }
      if (count("apiGroups") == 0) e.required(at + ".apiGroups", "resource rules must supply at least one api group");
      if (count("resources") == 0) e.required(at + ".resources", "resource rules must supply at least one resource");
    }
  if (namespaced || !fields::present(role, "aggregationRule")) return;
  const json::object& rule =
      fields::object_at(role, "aggregationRule") ? *fields::object_at(role, "aggregationRule") : fields::kNone;
  const auto selectors = fields::items(rule, "clusterRoleSelectors");
  if (selectors.empty())
    e.required("aggregationRule.clusterRoleSelectors",
               "at least one clusterRoleSelector required if aggregationRule is non-nil");
  for (std::size_t i = 0; i < selectors.size(); ++i) {
    // ValidateLabelSelector, then LabelSelectorAsSelector, which fails where it does (its nil
    // labels.Selector shown "null").
    const std::string at = fmt::format("aggregationRule.clusterRoleSelectors[{}]", i);
    const std::size_t before = causes.size();
    validate_label_selector(*selectors[i], at, causes);
    if (causes.size() != before) e.invalid(at, "\"null\"", "invalid label selector.");
  }
}

void rbac_binding_causes(const json::object& binding, bool namespaced, fields::Causes& causes) {
  // rbac/validation ValidateRoleBinding / ValidateClusterRoleBinding past the metadata: the
  // roleRef (after SetDefaults_RoleBinding), then ValidateRoleBindingSubject on each subject.
  fields::Errors e{causes};
  const json::object& ref =
      fields::object_at(binding, "roleRef") ? *fields::object_at(binding, "roleRef") : fields::kNone;
  constexpr std::string_view kGroup = "rbac.authorization.k8s.io";
  if (const std::string group = fields::string_at(ref, "apiGroup"); group != kGroup)
    e.not_supported("roleRef.apiGroup", group, {kGroup});
  const std::string kind = fields::string_at(ref, "kind");
  if (namespaced && kind != "Role" && kind != "ClusterRole")
    e.not_supported("roleRef.kind", kind, {"Role", "ClusterRole"});
  else if (!namespaced && kind != "ClusterRole")
    e.not_supported("roleRef.kind", kind, {"ClusterRole"});
  if (const std::string name = fields::string_at(ref, "name"); name.empty())
    e.required("roleRef.name");
  else
    e.invalid("roleRef.name", name, path_segment_errors(name));  // ValidateRBACName
  const auto subjects = fields::items(binding, "subjects");
  for (std::size_t i = 0; i < subjects.size(); ++i) {
    const json::object& s = *subjects[i];
    const std::string at = fmt::format("subjects[{}]", i);
    const std::string name = fields::string_at(s, "name"), group = fields::string_at(s, "apiGroup");
    if (name.empty()) e.required(at + ".name");
    const std::string sk = fields::string_at(s, "kind");
    if (sk == "ServiceAccount") {
      if (!name.empty()) e.invalid(at + ".name", name, dns1123_subdomain_errors(name));  // ValidateServiceAccountName
      if (!group.empty()) e.not_supported(at + ".apiGroup", group, {""});
      if (!namespaced && fields::string_at(s, "namespace").empty()) e.required(at + ".namespace");
    } else if (sk == "User" || sk == "Group") {
      if (group != kGroup) e.not_supported(at + ".apiGroup", group, {kGroup});
    } else {
      e.not_supported(at + ".kind", sk, {"ServiceAccount", "User", "Group"});
    }
  }
}

void storage_class_causes(const json::object& sc, fields::Causes& causes) {
  // storage/validation ValidateStorageClass past the metadata.
  fields::Errors e{causes};
  const std::string provisioner = fields::string_at(sc, "provisioner");  // validateProvisioner
  if (provisioner.empty()) e.required("provisioner");
  const std::string lower = ascii::lower(provisioner);
  if (!provisioner.empty()) e.invalid("provisioner", lower, qualified_name_errors(lower));
  if (const json::object* params = fields::object_at(sc, "parameters")) {  // validateParameters (empty allowed)
    constexpr std::size_t kMaxLen = 512, kMaxSize = 256 * 1024;
    std::size_t size = 0;
    if (params->size() > kMaxLen) {
      causes.push_back(
          {"FieldValueTooLong", fmt::format("Too long: may not be more than {} bytes", kMaxLen), "parameters"});
    } else {
      for (const auto& [k, v] : *params) {
        if (k.empty()) e.invalid("parameters", fields::q(""), "field can not be empty.");
        size += k.size() + (v.is_string() ? v.as_string().size() : 0);
      }
      if (size > kMaxSize)
        causes.push_back(
            {"FieldValueTooLong", fmt::format("Too long: may not be more than {} bytes", kMaxSize), "parameters"});
    }
  }
  if (!fields::string_at(sc, "reclaimPolicy").empty())  // validateReclaimPolicy: "" is let through
    not_supported(sc, "reclaimPolicy", "reclaimPolicy", {"Delete", "Retain"}, causes);
  not_supported(sc, "volumeBindingMode", "volumeBindingMode", {"Immediate", "WaitForFirstConsumer"}, causes);
  // validateAllowedTopologies: a term whose expressions equal an earlier term's is a duplicate.
  // (Its list of the earlier ones starts with as many nil maps as there are terms, which
  // Semantic.DeepEqual finds equal to a term without expressions: one duplicate each.)
  if (const json::array* terms = fields::array_at(sc, "allowedTopologies"); terms && !terms->empty()) {
    std::vector<std::map<std::string, std::set<std::string>>> seen(terms->size());
    for (std::size_t i = 0; i < terms->size(); ++i) {
      const std::string at = fmt::format("allowedTopologies[{}]", i);
      auto keys = topology_selector_term((*terms)[i].is_object() ? (*terms)[i].as_object() : fields::kNone, at, causes);
      for (const auto& earlier : seen)
        if (earlier == keys) e.duplicate(at + ".matchLabelExpressions", "\"\"");
      seen.push_back(std::move(keys));
    }
  }
}

void default_kind(const ResourceType& t, json::object& obj) {
  if (t.group != "rbac.authorization.k8s.io" || (t.resource != "rolebindings" && t.resource != "clusterrolebindings"))
    return;
  // SetDefaults_RoleBinding / _ClusterRoleBinding and SetDefaults_Subject.
  if (auto* ref = obj.if_contains("roleRef");
      ref && ref->is_object() && string_of(&ref->as_object(), "apiGroup").empty())
    ref->as_object()["apiGroup"] = "rbac.authorization.k8s.io";
  if (auto* subs = obj.if_contains("subjects"); subs && subs->is_array())
    for (auto& s : subs->as_array()) {
      if (!s.is_object()) continue;
      auto& so = s.as_object();
      const std::string kind = string_of(&so, "kind");
      if (string_of(&so, "apiGroup").empty() && (kind == "User" || kind == "Group"))
        so["apiGroup"] = "rbac.authorization.k8s.io";
    }
}

void validate_kind(const ResourceType& t, const json::object& obj, std::vector<StatusCause>& causes) {
  const bool core = t.group.empty();
  const json::object* spec = object_at(obj, {"spec"});
  if (core && t.resource == "configmaps") {
    // ValidateConfigMap: data keys (and a key also in binaryData), then binaryData keys.
    const json::object* data = object_at(obj, {"data"});
    const json::object* binary = object_at(obj, {"binaryData"});
    for (const auto& k : sorted_keys(data)) {
      for (const auto& msg : config_map_key_errors(k))
        causes.push_back(
            {"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(k), msg), fmt::format("data[{}]", k)});
      if (binary && binary->contains(k))
        causes.push_back({"FieldValueInvalid",
                          fmt::format("Invalid value: {}: duplicate of key present in binaryData", go_quote(k)),
                          fmt::format("data[{}]", k)});
    }
    keys(binary, "binaryData", causes);
    // The whole object's size (pkg/apis/core/validation/validation.go ValidateConfigMap: TooLong at
    // field.NewPath(""), which the Status shows as "[]").
    if (total_size(data, false) + total_size(binary, true) > kMaxSecretSize)
      causes.push_back(
          {"FieldValueTooLong", fmt::format("Too long: may not be more than {} bytes", kMaxSecretSize), "[]"});
  } else if (core && t.resource == "secrets") {
    // ValidateSecret: data keys and their total size, then what the type requires.
    const json::object* data = object_at(obj, {"data"});
    keys(data, "data", causes);
    if (total_size(data, true) > kMaxSecretSize)
      causes.push_back(
          {"FieldValueTooLong", fmt::format("Too long: may not be more than {} bytes", kMaxSecretSize), "data"});
    const std::string type = string_of(&obj, "type");
    auto has = [&](const char* k) { return data && data->contains(k); };
    auto required = [&](std::string field) {
      causes.push_back({"FieldValueRequired", "Required value", std::move(field)});
    };
    if (type == "kubernetes.io/service-account-token") {
      if (string_of(object_at(obj, {"metadata", "annotations"}), "kubernetes.io/service-account.name").empty())
        required("metadata.annotations[kubernetes.io/service-account.name]");
    } else if (type == "kubernetes.io/dockercfg" || type == "kubernetes.io/dockerconfigjson") {
      // The key must be there and hold JSON (json.Unmarshal into a map), its contents redacted.
      const char* key = type == "kubernetes.io/dockercfg" ? ".dockercfg" : ".dockerconfigjson";
      if (!has(key))
        required(fmt::format("data[{}]", key));
      else if (const auto err = go_unmarshal_map_error(decoded_bytes(data->at(key))))
        causes.push_back({"FieldValueInvalid", "Invalid value: \"<secret contents redacted>\": " + *err,
                          fmt::format("data[{}]", key)});
    } else if (type == "kubernetes.io/basic-auth" && !has("username") && !has("password")) {
      required("data[username]");
      required("data[password]");
    } else if (type == "kubernetes.io/ssh-auth" && string_of(data, "ssh-privatekey").empty()) {
      required("data[ssh-privatekey]");
    } else if (type == "kubernetes.io/tls") {
      if (!has("tls.crt")) required("data[tls.crt]");
      if (!has("tls.key")) required("data[tls.key]");
    }
  } else if (core && t.resource == "resourcequotas") {
    // ValidateResourceQuotaSpec: each hard entry's name (ValidateResourceQuotaResourceName; a
    // ResourceName prints unquoted) and value (ValidateResourceQuantityValue), then the scopes.
    // (Go walks the hard map in random order; here sorted: FIDELITY.md difference 20.)
    const json::object* hard = spec ? object_at(*spec, {"hard"}) : nullptr;
    const auto keys = sorted_keys(hard);
    for (const auto& k : keys) {
      const std::string field = fmt::format("spec.hard[{}]", k);
      for (const auto& e : quota_resource_name_errors(k))
        causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", k, e), field});
      validate_resource_quantity_value(k, hard->at(k), field, causes);
    }
    // validateResourceQuotaScopes: each scope standard and valid for every standard hard resource;
    // not both of a pair. The scopes print as a Go slice.
    const json::array* scopes = spec ? util::array_at(*spec, {}, "scopes") : nullptr;
    static const std::set<std::string, std::less<>> kScopes = {
        "Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"};
    auto conflicting = [](const std::set<std::string, std::less<>>& seen) {
      return (seen.count("BestEffort") && seen.count("NotBestEffort")) ||
             (seen.count("Terminating") && seen.count("NotTerminating"));
    };
    const std::string shown_scopes = fields::go_string_slice("core.ResourceQuotaScope", scopes);
    if (scopes && !scopes->empty()) {
      auto invalid = [&](std::string_view why) {
        causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", shown_scopes, why), "spec.scopes"});
      };
      std::set<std::string, std::less<>> seen;
      for (const auto& sv : *scopes) {
        const std::string scope = sv.is_string() ? std::string(sv.as_string()) : "";
        if (!kScopes.count(scope)) invalid("unsupported scope");
        for (const auto& k : keys)
          if (is_standard_quota_resource_name(k) && !is_quota_scope_valid_for_resource(scope, k))
            invalid("unsupported scope applied to resource");
        seen.insert(scope);
      }
      if (conflicting(seen)) invalid("conflicting scopes");
    }
    // validateScopeSelector / validateScopedResourceSelectorRequirement: the same rules for each
    // match expression (its path unindexed, sic), plus the operators'.
    if (const json::object* sel = spec ? object_at(*spec, {"scopeSelector"}) : nullptr) {
      const std::string at = "spec.scopeSelector.matchExpressions";
      const json::array* exprs = util::array_at(*sel, {}, "matchExpressions");
      const auto requirement = [](const json::object& e) {
        return fmt::format("core.ScopedResourceSelectorRequirement{{ScopeName:{}, Operator:{}, Values:{}}}",
                           go_quote(string_of(&e, "scopeName")), go_quote(string_of(&e, "operator")),
                           fields::go_string_slice("string", util::array_at(e, {}, "values")));
      };
      const std::string shown_sel =
          fmt::format("core.ScopeSelector{{MatchExpressions:{}}}",
                      fields::go_struct_slice("core.ScopedResourceSelectorRequirement", exprs, requirement));
      std::set<std::string, std::less<>> seen;
      for (std::size_t i = 0; exprs && i < exprs->size(); ++i) {
        const json::object& e = (*exprs)[i].is_object() ? (*exprs)[i].as_object() : fields::kNone;
        const std::string scope = string_of(&e, "scopeName"), op = string_of(&e, "operator");
        const json::array* values = util::array_at(e, {}, "values");
        auto invalid = [&](const std::string& f, const std::string& shown, std::string_view why) {
          causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", shown, why), f});
        };
        if (!kScopes.count(scope)) invalid(at + ".scopeName", go_quote(scope), "unsupported scope");
        for (const auto& k : keys)
          if (is_standard_quota_resource_name(k) && !is_quota_scope_valid_for_resource(scope, k))
            invalid(at, shown_sel, "unsupported scope applied to resource");
        if ((scope == "BestEffort" || scope == "NotBestEffort" || scope == "Terminating" || scope == "NotTerminating" ||
             scope == "CrossNamespacePodAffinity") &&
            op != "Exists")
          invalid(at + ".operator", go_quote(op),
                  "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, "
                  "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort "
                  "or ResourceQuotaScopeCrossNamespacePodAffinity");
        if (op == "In" || op == "NotIn") {
          if (!values || values->empty())
            causes.push_back({"FieldValueRequired",
                              "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for "
                              "scope selector",
                              at + ".values"});
        } else if (op == "Exists" || op == "DoesNotExist") {
          if (values && !values->empty())
            invalid(at + ".values", fields::go_string_slice("string", values),
                    "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector");
        } else {
          invalid(at + ".operator", go_quote(op), "not a valid selector operator");
        }
        seen.insert(scope);
      }
      if (conflicting(seen))  // (it prints spec.scopes, sic)
        causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: conflicting scopes", shown_scopes), at});
    }
  } else if (core && t.resource == "limitranges") {
    // ValidateLimitRange: each item's type (validateLimitRangeTypeName: a standard type, or a
    // qualified name with a prefix), no type twice, then the item's resources.
    if (const json::array* limits = spec ? util::array_at(*spec, {}, "limits") : nullptr) {
      std::set<std::string> types;
      for (std::size_t i = 0; i < limits->size(); ++i) {
        static const json::object kEmpty;
        const json::object& item = (*limits)[i].is_object() ? (*limits)[i].as_object() : kEmpty;
        const std::string type = string_of(&item, "type");
        const std::string field = fmt::format("spec.limits[{}].type", i);
        const auto errs = qualified_name_errors(type);
        for (const auto& e : errs)
          causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(type), e), field});
        if (errs.empty() && type.find('/') == std::string::npos && type != "Pod" && type != "Container" &&
            type != "PersistentVolumeClaim")
          causes.push_back(
              {"FieldValueInvalid",
               fmt::format("Invalid value: {}: must be a standard limit type or fully qualified", go_quote(type)),
               field});
        if (!types.insert(type).second)
          causes.push_back({"FieldValueDuplicate", fmt::format("Duplicate value: {}", go_quote(type)), field});
        limit_range_item(item, fmt::format("spec.limits[{}]", i), causes);
      }
    }
  } else if (t.group == "storage.k8s.io" && t.resource == "storageclasses") {
    storage_class_causes(obj, causes);
  } else if (t.group == "rbac.authorization.k8s.io" && (t.resource == "roles" || t.resource == "clusterroles")) {
    rbac_role_causes(obj, t.resource == "roles", causes);
  } else if (t.group == "rbac.authorization.k8s.io" &&
             (t.resource == "rolebindings" || t.resource == "clusterrolebindings")) {
    rbac_binding_causes(obj, t.resource == "rolebindings", causes);
  } else if (t.group == "scheduling.k8s.io" && t.resource == "priorityclasses") {
    priority_class_causes(obj, causes);  // (a create's: validation.cpp runs it on create only)
  } else if (t.group == "policy" && t.resource == "poddisruptionbudgets") {
    // ValidatePodDisruptionBudgetSpec: not both bounds (the spec printed with %#v, its pointers
    // with addresses), each bound a non-negative integer or a percent up to 100%, the selector,
    // the eviction policy.
    auto set = [&](const char* k) { return spec && spec->contains(k) && !spec->at(k).is_null(); };
    if (set("minAvailable") && set("maxUnavailable"))
      causes.push_back(
          {"FieldValueInvalid",
           fmt::format(
               "Invalid value: policy.PodDisruptionBudgetSpec{{MinAvailable:{}, Selector:{}, MaxUnavailable:{}, "
               "UnhealthyPodEvictionPolicy:{}}}: minAvailable and maxUnavailable cannot be both set",
               go_pointer(spec, "minAvailable", "intstr.IntOrString"), go_pointer(spec, "selector", "v1.LabelSelector"),
               go_pointer(spec, "maxUnavailable", "intstr.IntOrString"),
               go_pointer(spec, "unhealthyPodEvictionPolicy", "policy.UnhealthyPodEvictionPolicyType")),
           "spec"});
    for (const char* k : {"minAvailable", "maxUnavailable"}) {
      non_negative_or_percent(spec, k, fmt::format("spec.{}", k), causes);
      not_more_than_100_percent(spec, k, fmt::format("spec.{}", k), causes);
    }
    if (const json::object* sel = spec ? object_at(*spec, {"selector"}) : nullptr)
      validate_label_selector(*sel, "spec.selector", causes);
    if (spec)
      not_supported(*spec, "unhealthyPodEvictionPolicy", "spec.unhealthyPodEvictionPolicy",
                    {"AlwaysAllow", "IfHealthyBudget"}, causes);
  } else if (core && t.resource == "nodes") {
    // (after the taints: validation.cpp)
    node_resources(obj, causes);
    node_pod_cidrs(spec, causes);
  }
}

void node_resources(const json::object& node, std::vector<StatusCause>& causes) {
  // ValidateNodeResources: status.capacity, then status.allocatable (Go walks each map in random
  // order; here sorted), each entry by ValidateResourceQuantityValue (its path a child: sic).
  for (const char* list : {"capacity", "allocatable"}) {
    const json::object* res = object_at(node, {"status", list});
    for (const auto& k : sorted_keys(res))
      validate_resource_quantity_value(k, res->at(k), fmt::format("status.{}.{}", list, k), causes);
  }
}

void node_addresses(const json::object& node, std::vector<StatusCause>& causes) {
  // ValidateNodeUpdate: no address twice in status.addresses (the repeat shown as
  // core.NodeAddress's %#v).
  if (const json::array* addresses = util::array_at(node, {"status"}, "addresses")) {
    std::set<std::pair<std::string, std::string>> seen;
    for (std::size_t i = 0; i < addresses->size(); ++i) {
      const json::object* a = (*addresses)[i].is_object() ? &(*addresses)[i].as_object() : nullptr;
      const std::string type = string_of(a, "type"), address = string_of(a, "address");
      if (!seen.emplace(type, address).second)
        causes.push_back(
            {"FieldValueDuplicate",
             fmt::format("Duplicate value: core.NodeAddress{{Type:{}, Address:{}}}", go_quote(type), go_quote(address)),
             fmt::format("status.addresses[{}]", i)});
    }
  }
}

void validate_kind_update(const ResourceType& t, const json::object& obj, const json::object& old,
                          std::vector<StatusCause>& causes) {
  if (t.group == "scheduling.k8s.io" && t.resource == "priorityclasses") priority_class_update_causes(obj, old, causes);
  if (!t.group.empty() || t.resource != "nodes") return;
  // ValidateNodeUpdate: no address twice, podCIDRs may only be set where none were, providerID
  // likewise, and externalID never changes.
  const json::object* spec = object_at(obj, {"spec"});
  const json::object* old_spec = object_at(old, {"spec"});
  node_addresses(obj, causes);
  const json::array* now = spec ? util::array_at(*spec, {}, "podCIDRs") : nullptr;
  const json::array* before = old_spec ? util::array_at(*old_spec, {}, "podCIDRs") : nullptr;
  if (before && !before->empty()) {
    const std::string msg = "Forbidden: node updates may not change podCIDR except from \"\" to valid";
    if (!now || now->size() != before->size()) {
      causes.push_back({"FieldValueForbidden", msg, "spec.podCIDRs"});
    } else {
      for (std::size_t i = 0; i < before->size(); ++i)  // one cause per changed element
        if (!util::json_equal((*before)[i], (*now)[i])) causes.push_back({"FieldValueForbidden", msg, "spec.podCIDRs"});
    }
  }
  const std::string provider = string_of(old_spec, "providerID");
  if (!provider.empty() && provider != string_of(spec, "providerID"))
    causes.push_back({"FieldValueForbidden",
                      "Forbidden: node updates may not change providerID except from \"\" to valid",
                      "spec.providerID"});
  if (string_of(old_spec, "externalID") != string_of(spec, "externalID"))
    causes.push_back({"FieldValueForbidden", "Forbidden: may not be updated", "spec.externalID"});
}

void default_node_spec(json::object& node, const json::object* old) {
  auto* sv = node.if_contains("spec");
  if (!sv || !sv->is_object()) return;
  auto& spec = sv->as_object();
  // Convert_v1_NodeSpec_To_core_NodeSpec and back: podCIDR wins over a podCIDRs that starts
  // elsewhere (and replaces it), fills an empty podCIDRs, and is podCIDRs[0] once encoded.
  const std::string single = string_of(&spec, "podCIDR");
  const json::array* list = util::array_at(spec, {}, "podCIDRs");
  const bool listed = list && !list->empty();
  if (!single.empty() && (!listed || !((*list)[0].is_string() && (*list)[0].as_string() == single)))
    spec["podCIDRs"] = json::array{json::string(single)};
  if (const json::array* l = util::array_at(spec, {}, "podCIDRs");
      l && !l->empty() && (*l)[0].is_string() && !(*l)[0].as_string().empty())
    spec["podCIDR"] = (*l)[0];
  // dropDisabledFields: configSource only while an update's old node has one; status.config
  // never on create.
  const json::object* old_spec = old ? object_at(*old, {"spec"}) : nullptr;
  if (!old_spec || !old_spec->contains("configSource")) spec.erase("configSource");
  if (!old)
    if (auto* st = node.if_contains("status"); st && st->is_object()) st->as_object().erase("config");
}

std::vector<std::string> node_warnings(const json::object& node) {
  // nodeStrategy's fieldIsDeprecatedWarnings.
  std::vector<std::string> out;
  const json::object* spec = object_at(node, {"spec"});
  if (spec && spec->contains("configSource") && !spec->at("configSource").is_null())
    out.push_back("spec.configSource: the feature is removed");
  if (!string_of(spec, "externalID").empty())
    out.push_back("spec.externalID: this field is deprecated, and is unused by Kubernetes");
  return out;
}

}  // namespace gpupool::embedded
