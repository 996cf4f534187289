// Private helpers shared by the binding translation units of gpupool._gpupool.
// The binding layer is thin: conversions and Python protocol glue only; every rule lives in C++.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace gpupool {
struct SubmitOptions;
struct Workload;
class ValidationError;
}  // namespace gpupool

namespace gpupool::py_bindings {

/// to_workload() for Python callers: a ValidationError names the keyword argument
/// ("tolerations[0]", "data_dirs[1]", "cpu_limit") instead of the command's flag ("--toleration[0]").
Workload to_workload_python(const SubmitOptions& options);
/// The same renaming for an error naming a flag ("--stage-out" -> "stage_out"); others unchanged.
ValidationError with_keyword_names(const ValidationError& error);

namespace py = pybind11;

/// function_workload() for Python: the function's parts from gpupool._function, the usual submit
/// options as keywords (function.cpp).
Workload function_workload_python(py::handle func, const std::string& kind, std::int32_t num_nodes, py::handle packages,
                                  py::handle args, const py::kwargs& options);

void bind_errors(py::module_& m);
void bind_model(py::module_& m);
void bind_workload(py::module_& m);
void bind_render(py::module_& m);
void bind_function(py::module_& m);
#ifdef GPUPOOL_PY_HAVE_CLUSTER
void bind_cluster(py::module_& m);
#endif
#ifdef GPUPOOL_PY_HAVE_EMBEDDED
void bind_embedded(py::module_& m);
#endif

/// Boost.JSON <-> plain Python values (dict, list, str, int, float, bool, None).
py::object to_python(const boost::json::value& value);
boost::json::value from_python(py::handle object);

/// A timezone-aware UTC datetime.datetime for a system_clock time point, and back (a naive datetime
/// is taken as local time, as datetime.timestamp() does).
py::object to_datetime(std::chrono::system_clock::time_point t);
std::chrono::system_clock::time_point from_datetime(py::handle datetime);

/// An exact Python int from a 128-bit integer.
py::object int128_to_python(__int128 value);

/// "Type(a=..., b=...)" from the named attributes of `self` (each shown with repr()).
std::string repr_fields(py::handle self, const char* type_name, std::initializer_list<const char*> fields);

/// Builds a T from keyword arguments: each keyword must name a property of T's Python class
/// (TypeError otherwise) and is assigned through it, so the property's conversion rules apply.
template <class T>
T from_kwargs(const py::kwargs& kwargs) {
  py::object self = py::cast(T{});
  py::object type = py::type::of(self);
  py::object property = py::module_::import("builtins").attr("property");
  for (auto item : kwargs) {
    std::string key = py::str(item.first);
    if (key.empty() || key[0] == '_' || !py::hasattr(type, key.c_str()) ||
        !py::isinstance(type.attr(key.c_str()), property)) {
      throw py::type_error(std::string(py::str(type.attr("__name__"))) + "() got an unexpected keyword argument '" +
                           key + "'");
    }
    py::setattr(self, item.first, item.second);
  }
  return self.cast<T>();
}

/// Adds `__init__(**kwargs)` (see from_kwargs) to a bound class.
template <class T, class... Extra>
void def_kwargs_init(py::class_<T, Extra...>& cls) {
  cls.def(py::init([](const py::kwargs& kwargs) { return from_kwargs<T>(kwargs); }));
}

/// Adds __eq__/__ne__ from C++ operator== (and no __hash__: the values are mutable).
template <class T, class... Extra>
void def_equality(py::class_<T, Extra...>& cls) {
  cls.def(
      "__eq__", [](const T& a, const T& b) { return a == b; }, py::is_operator());
  cls.def(
      "__ne__", [](const T& a, const T& b) { return !(a == b); }, py::is_operator());
  cls.attr("__hash__") = py::none();
}

// NOLINTBEGIN(bugprone-macro-parentheses): Type is a type name, used as `Type&`.
/// A string property over an enum field: get via to_string(e), set via parse(text, field).
#define GPUPOOL_PY_ENUM_PROPERTY(cls, Type, pyname, member, parse_fn, field)        \
  (cls).def_property(                                                               \
      pyname, [](const Type& self) { return std::string(to_string(self.member)); }, \
      [](Type& self, std::string_view text) { self.member = parse_fn(text, field); })

/// The same for an optional enum field (None <-> nullopt).
#define GPUPOOL_PY_OPTIONAL_ENUM_PROPERTY(cls, Type, pyname, member, parse_fn, field) \
  (cls).def_property(                                                                 \
      pyname,                                                                         \
      [](const Type& self) -> py::object {                                            \
        if (!self.member) return py::none();                                          \
        return py::str(std::string(to_string(*self.member)));                         \
      },                                                                              \
      [](Type& self, std::optional<std::string> text) {                               \
        if (text)                                                                     \
          self.member = parse_fn(*text, field);                                       \
        else                                                                          \
          self.member.reset();                                                        \
      })
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace gpupool::py_bindings
