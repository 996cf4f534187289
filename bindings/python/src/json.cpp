// Conversions between Boost.JSON values, datetimes, 128-bit integers and Python objects.
#include "common.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <cmath>

namespace gpupool::py_bindings {

py::object to_python(const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::null:
      return py::none();
    case boost::json::kind::bool_:
      return py::bool_(value.get_bool());
    case boost::json::kind::int64:
      return py::int_(value.get_int64());
    case boost::json::kind::uint64:
      return py::int_(value.get_uint64());
    case boost::json::kind::double_:
      return py::float_(value.get_double());
    case boost::json::kind::string: {
      const auto& s = value.get_string();
      return py::str(s.data(), s.size());
    }
    case boost::json::kind::array: {
      py::list out;
      for (const auto& v : value.get_array()) out.append(to_python(v));
      return out;
    }
    case boost::json::kind::object: {
      py::dict out;  // keeps the object's key order
      for (const auto& kv : value.get_object()) {
        out[py::str(kv.key().data(), kv.key().size())] = to_python(kv.value());
      }
      return out;
    }
  }
  return py::none();
}

boost::json::value from_python(py::handle object) {
  if (object.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(object)) return object.cast<bool>();
  if (py::isinstance<py::int_>(object)) {
    // int64 when it fits, else uint64; anything larger is not representable in JSON numbers here.
    try {
      return object.cast<std::int64_t>();
    } catch (const py::cast_error&) {
      return object.cast<std::uint64_t>();
    }
  }
  if (py::isinstance<py::float_>(object)) {
    double d = object.cast<double>();
    if (!std::isfinite(d)) throw py::value_error("JSON has no NaN or infinity");
    return d;
  }
  if (py::isinstance<py::str>(object)) return boost::json::string(object.cast<std::string>());
  if (py::isinstance<py::dict>(object)) {
    boost::json::object out;
    for (auto kv : object.cast<py::dict>()) {
      if (!py::isinstance<py::str>(kv.first)) throw py::type_error("JSON object keys must be str");
      out[kv.first.cast<std::string>()] = from_python(kv.second);
    }
    return out;
  }
  if (py::isinstance<py::list>(object) || py::isinstance<py::tuple>(object)) {
    boost::json::array out;
    for (auto v : object) out.push_back(from_python(v));
    return out;
  }
  throw py::type_error(std::string("cannot convert a ") + std::string(py::str(py::type::of(object).attr("__name__"))) +
                       " to JSON (use dict, list, str, int, float, bool or None)");
}

py::object to_datetime(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  auto micros = duration_cast<microseconds>(t.time_since_epoch()).count();
  py::module_ datetime = py::module_::import("datetime");
  py::object utc = datetime.attr("timezone").attr("utc");
  py::object epoch = datetime.attr("datetime")(1970, 1, 1, py::arg("tzinfo") = utc);
  return epoch + datetime.attr("timedelta")(py::arg("microseconds") = micros);
}

std::chrono::system_clock::time_point from_datetime(py::handle datetime) {
  using namespace std::chrono;
  double seconds = datetime.attr("timestamp")().cast<double>();
  return system_clock::time_point(duration_cast<system_clock::duration>(duration<double>(seconds)));
}

py::object int128_to_python(__int128 value) {
  bool negative = value < 0;
  unsigned __int128 magnitude =
      negative ? -static_cast<unsigned __int128>(value) : static_cast<unsigned __int128>(value);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(magnitude % 10)));
    magnitude /= 10;
  } while (magnitude != 0);
  if (negative) digits.insert(digits.begin(), '-');
  return py::int_(py::str(digits));
}

std::string repr_fields(py::handle self, const char* type_name, std::initializer_list<const char*> fields) {
  std::string out = type_name;
  out += '(';
  bool first = true;
  for (const char* f : fields) {
    if (!first) out += ", ";
    first = false;
    out += f;
    out += '=';
    out += py::repr(self.attr(f)).cast<std::string>();
  }
  out += ')';
  return out;
}

}  // namespace gpupool::py_bindings
