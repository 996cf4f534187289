// embedded/validation_fields.hpp — what the hand-written validation of a kind reads of a JSON
// object, field by field as Go's typed struct would hold it, and field.ErrorList's wording
// (validation_pod.cpp, validation_service.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "embedded/typecheck.hpp"  // go_quote
#include "gpupool/error.hpp"       // StatusCause

namespace gpupool::embedded::fields {

namespace json = boost::json;
using Causes = std::vector<StatusCause>;

inline const json::object kNone;  // Go's zero struct, for an item that is no object

inline const json::object* object_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_object() ? &v->as_object() : nullptr;
}
inline const json::array* array_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_array() ? &v->as_array() : nullptr;
}
inline std::string string_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}
// A Go pointer (or map, or slice) field that JSON set: present and not null.
inline bool present(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && !v->is_null();
}
inline std::optional<std::int64_t> int_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v && v->is_int64()) return v->as_int64();
  if (v && v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  return std::nullopt;
}
inline bool true_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_bool() && v->as_bool();
}
inline std::string q(std::string_view s) { return go_quote(s); }

// A map's keys in order (where Go walks a map in random order and several bad keys may come).
inline std::vector<std::string> sorted_keys(const json::object* o) {
  std::vector<std::string> out;
  if (o)
    for (const auto& [k, v] : *o) out.emplace_back(k);
  std::sort(out.begin(), out.end());
  return out;
}
// A []string field's items ("" for an item that is no string).
inline std::vector<std::string> strings_at(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const json::array* a = array_at(o, key))
    for (const auto& v : *a) out.push_back(v.is_string() ? std::string(v.as_string()) : std::string());
  return out;
}
// The items of a list of structs (an item that is no object counts as Go's zero struct).
inline std::vector<const json::object*> items(const json::object& o, std::string_view key) {
  std::vector<const json::object*> out;
  if (const json::array* a = array_at(o, key))
    for (const auto& v : *a) out.push_back(v.is_object() ? &v.as_object() : &kNone);
  return out;
}
// A []string as %#v prints it: []string{"a", "b"}.
inline std::string go_strings(const std::vector<std::string>& v) {
  std::string out = "[]string{";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + q(v[i]);
  return out + "}";
}

// Go's %#v of a slice of strings of type `type` ([]string, []core.ResourceQuotaScope, ...): nil
// when absent, else its items quoted (an item that is no string as "").
inline std::string go_string_slice(std::string_view type, const json::array* a) {
  if (!a) return fmt::format("[]{}(nil)", type);
  std::string out = fmt::format("[]{}{{", type);
  for (std::size_t i = 0; i < a->size(); ++i)
    out += (i ? ", " : "") + q((*a)[i].is_string() ? std::string_view((*a)[i].as_string()) : std::string_view());
  return out + "}";
}
// Go's %#v of a slice of structs of type `type`: nil when absent, else `[]T{<item(o)>, ...}` (an
// item that is no object as Go's zero struct).
template <class Item>
std::string go_struct_slice(std::string_view type, const json::array* a, const Item& item) {
  if (!a) return fmt::format("[]{}(nil)", type);
  std::string out = fmt::format("[]{}{{", type);
  for (std::size_t i = 0; i < a->size(); ++i)
    out += (i ? ", " : "") + item((*a)[i].is_object() ? (*a)[i].as_object() : kNone);
  return out + "}";
}

// field.ErrorList, appended in order.
struct Errors {
  Causes& out;
  void required(const std::string& f, std::string_view detail = {}) {
    out.push_back(
        {"FieldValueRequired", detail.empty() ? "Required value" : fmt::format("Required value: {}", detail), f});
  }
  void invalid(const std::string& f, const std::string& shown, std::string_view detail) {
    out.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", shown, detail), f});
  }
  void invalid(const std::string& f, const std::string& value, const std::vector<std::string>& details) {
    for (const auto& d : details) invalid(f, q(value), d);
  }
  void not_supported(const std::string& f, const std::string& value,
                     std::initializer_list<std::string_view> supported) {
    std::string list;
    for (auto s : supported) list += (list.empty() ? "" : ", ") + q(s);
    out.push_back(
        {"FieldValueNotSupported", fmt::format("Unsupported value: {}: supported values: {}", q(value), list), f});
  }
  void forbidden(const std::string& f, std::string_view detail) {
    out.push_back({"FieldValueForbidden", fmt::format("Forbidden: {}", detail), f});
  }
  void duplicate(const std::string& f, const std::string& shown) {
    out.push_back({"FieldValueDuplicate", fmt::format("Duplicate value: {}", shown), f});
  }
  void not_found(const std::string& f, const std::string& shown) {
    out.push_back({"FieldValueNotFound", fmt::format("Not found: {}", shown), f});
  }
};

// validation.IsValidPortNum's message (a port number outside 1..65535).
inline constexpr std::string_view kPortRange = "must be between 1 and 65535, inclusive";

}  // namespace gpupool::embedded::fields
