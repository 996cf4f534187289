#include "model/json_fields.hpp"

#include <boost/json/serialize.hpp>

#include "gpupool/error.hpp"

namespace gpupool::json_fields {
namespace json = boost::json;

void wrong_type(const std::string& field, const json::value& v, std::string_view want) {
  throw ValidationError(field, json::serialize(v), "must be " + std::string(want));
}

const json::object& as_object(const json::value& v, const std::string& field) {
  if (!v.is_object()) wrong_type(field, v, "an object");
  return v.get_object();
}

const json::object* object_at(const json::object& o, std::string_view key, const std::string& field) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return nullptr;
  return &as_object(*v, field);
}

const json::array* array_at(const json::object& o, std::string_view key, const std::string& field) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return nullptr;
  if (!v->is_array()) wrong_type(field, *v, "an array");
  return &v->get_array();
}

std::string string_at(const json::object& o, std::string_view key, const std::string& field) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return {};
  if (!v->is_string()) wrong_type(field, *v, "a string");
  return std::string(v->get_string());
}

std::map<std::string, std::string> string_map(const json::object* o, const std::string& field) {
  std::map<std::string, std::string> out;
  if (!o) return out;
  for (const auto& kv : *o) {
    std::string f = field + "[" + std::string(kv.key()) + "]";
    if (!kv.value().is_string()) wrong_type(f, kv.value(), "a string");
    out.emplace(std::string(kv.key()), std::string(kv.value().get_string()));
  }
  return out;
}

std::map<std::string, Quantity> quantity_map(const json::object* o, const std::string& field) {
  std::map<std::string, Quantity> out;
  if (!o) return out;
  for (const auto& kv : *o) {
    std::string f = field + "[" + std::string(kv.key()) + "]";
    const json::value& v = kv.value();
    if (v.is_string()) {
      // Quantity.UnmarshalJSON trims surrounding whitespace before parsing.
      std::string_view text = v.get_string();
      const auto first = text.find_first_not_of(" \t\r\n\v\f");
      text = first == std::string_view::npos ? std::string_view() : text.substr(first);
      text = text.substr(0, text.find_last_not_of(" \t\r\n\v\f") + 1);
      out.emplace(std::string(kv.key()), Quantity::parse(text, f));
    }
    else if (v.is_int64() || v.is_uint64())
      out.emplace(std::string(kv.key()), Quantity::parse(json::serialize(v), f));
    else
      wrong_type(f, v, "a quantity string such as \"500m\" or \"16Gi\"");
  }
  return out;
}

}  // namespace gpupool::json_fields
