// Walking a path of keys into Kubernetes JSON: one home for every layer (model, cluster, embedded).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace gpupool::jpath {

/// The value at `path` (keys of nested objects), or nullptr when a step is missing or a value on
/// the way is not an object. An empty path is `o` itself only for the value overload.
namespace detail {
template <class It>
const boost::json::value* walk(const boost::json::object& o, It first, It last) {
  const boost::json::object* cur = &o;
  const boost::json::value* v = nullptr;
  for (; first != last; ++first) {
    if (!cur) return nullptr;
    v = cur->if_contains(*first);
    if (!v) return nullptr;
    cur = v->is_object() ? &v->get_object() : nullptr;
  }
  return v;
}
}  // namespace detail

inline const boost::json::value* value_at(const boost::json::object& o, std::initializer_list<std::string_view> path) {
  return detail::walk(o, path.begin(), path.end());
}

/// value_at for a path known only at run time (a CRD's specReplicasPath, split at its dots).
inline const boost::json::value* value_at(const boost::json::object& o, const std::vector<std::string>& path) {
  return detail::walk(o, path.begin(), path.end());
}

inline const boost::json::value* value_at(const boost::json::value& v, std::initializer_list<std::string_view> path) {
  if (path.size() == 0) return &v;
  return v.is_object() ? value_at(v.get_object(), path) : nullptr;
}

/// The object at `path` (`o` itself for an empty path), or nullptr when missing or not an object.
inline const boost::json::object* object_at(const boost::json::object& o,
                                            std::initializer_list<std::string_view> path) {
  if (path.size() == 0) return &o;
  const boost::json::value* v = value_at(o, path);
  return v && v->is_object() ? &v->get_object() : nullptr;
}

/// The array at `path`, or nullptr when missing or not an array.
inline const boost::json::array* array_at(const boost::json::object& o, std::initializer_list<std::string_view> path) {
  const boost::json::value* v = value_at(o, path);
  return v && v->is_array() ? &v->get_array() : nullptr;
}

}  // namespace gpupool::jpath
