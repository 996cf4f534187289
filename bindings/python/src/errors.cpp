// The C++ exception hierarchy as Python exceptions (error.hpp):
//   Error(RuntimeError)
//   ├── ValidationError(Error, ValueError)   .field .value .rule
//   ├── ConfigError(Error)                   .file .key .line
//   ├── ApiError(Error)                      .code .reason .status_message .causes .retry_after_seconds
//   ├── TransportError(Error)
//   │   ├── UnreachableError(TransportError)
//   │   └── ResponseTooLargeError(TransportError)
//   └── CancelledError(Error)
// str(exc) is the C++ what(), which never holds secrets.
#include "common.hpp"

#include "gpupool/error.hpp"

#include <utility>
#include <vector>

namespace gpupool::py_bindings {
namespace {

// Exception types live as long as the interpreter; held as borrowed handles (never destroyed, so
// nothing runs after finalisation). Written once at import, read by the translator.
struct ErrorTypes {
  PyObject* error = nullptr;
  PyObject* validation = nullptr;
  PyObject* config = nullptr;
  PyObject* api = nullptr;
  PyObject* transport = nullptr;
  PyObject* too_large = nullptr;
  PyObject* unreachable = nullptr;
  PyObject* cancelled = nullptr;
};
ErrorTypes& types() {
  static ErrorTypes t;
  return t;
}

PyObject* new_type(py::module_& m, const char* name, const char* doc, py::tuple bases,
                   const std::vector<std::pair<const char*, py::object>>& defaults) {
  std::string qualified = std::string("gpupool.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  py::handle h(type);
  for (auto& [attr, value] : defaults) h.attr(attr) = value;
  m.add_object(name, h);  // the module holds the reference
  return type;
}

void raise(PyObject* type, const char* message, const std::vector<std::pair<const char*, py::object>>& attributes) {
  py::object exc = py::reinterpret_borrow<py::object>(type)(message);
  for (auto& [attr, value] : attributes) exc.attr(attr) = value;
  PyErr_SetObject(type, exc.ptr());  // the translator returns with the Python error set
}

}  // namespace

void bind_errors(py::module_& m) {
  py::class_<StatusCause>(m, "StatusCause", "One entry of a Kubernetes Status' details.causes.")
      .def(py::init([](std::string reason, std::string message, std::string field) {
             return StatusCause{std::move(reason), std::move(message), std::move(field)};
           }),
           py::kw_only(), py::arg("reason") = "", py::arg("message") = "", py::arg("field") = "")
      .def_readonly("reason", &StatusCause::reason)
      .def_readonly("message", &StatusCause::message)
      .def_readonly("field", &StatusCause::field)
      .def(
          "__eq__", [](const StatusCause& a, const StatusCause& b) { return a == b; }, py::is_operator())
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "StatusCause", {"reason", "message", "field"});
      });

  py::handle builtins = py::module_::import("builtins");
  auto& t = types();
  t.error = new_type(m, "Error", "Base of every gpupool exception.", py::make_tuple(builtins.attr("RuntimeError")), {});
  py::handle error(t.error);
  t.validation = new_type(m, "ValidationError", "A value given by the user breaks a rule (.field, .value, .rule).",
                          py::make_tuple(error, builtins.attr("ValueError")),
                          {{"field", py::str("")}, {"value", py::str("")}, {"rule", py::str("")}});
  t.config = new_type(m, "ConfigError", "A configuration file is unreadable or wrong (.file, .key, .line).",
                      py::make_tuple(error), {{"file", py::str("")}, {"key", py::str("")}, {"line", py::int_(0)}});
  t.api = new_type(m, "ApiError",
                   "The API server answered with a non-2xx Status (.code, .reason, .status_message, .causes).",
                   py::make_tuple(error),
                   {{"code", py::int_(0)},
                    {"reason", py::str("")},
                    {"status_message", py::str("")},
                    {"causes", py::tuple()},
                    {"retry_after_seconds", py::none()}});
  t.transport = new_type(m, "TransportError", "The server could not be reached or the exchange broke.",
                         py::make_tuple(error), {});
  t.unreachable = new_type(m, "UnreachableError",
                           "No connection could be made (refused, host not found, TLS handshake refused); not "
                           "retried until the server has answered once.",
                           py::make_tuple(py::handle(t.transport)), {});
  t.too_large = new_type(m, "ResponseTooLargeError",
                         "A response body or watch/log line exceeded max_response_bytes; not retried.",
                         py::make_tuple(py::handle(t.transport)), {});
  t.cancelled = new_type(m, "CancelledError",
                         "The call was cancelled while it waited (a request in flight abandoned or a back-off cut "
                         "short); not retried.",
                         py::make_tuple(error), {});

  // NOLINTNEXTLINE(performance-unnecessary-value-param): pybind11::ExceptionTranslator takes it by value.
  py::register_exception_translator([](std::exception_ptr p) {
    auto& t = types();
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ValidationError& e) {
      raise(t.validation, e.what(),
            {{"field", py::str(e.field())}, {"value", py::str(e.value())}, {"rule", py::str(e.rule())}});
    } catch (const ConfigError& e) {
      raise(t.config, e.what(), {{"file", py::str(e.file())}, {"key", py::str(e.key())}, {"line", py::int_(e.line())}});
    } catch (const ApiError& e) {
      py::object retry = e.retry_after_seconds() ? py::object(py::int_(*e.retry_after_seconds())) : py::none();
      raise(t.api, e.what(),
            {{"code", py::int_(e.code())},
             {"reason", py::str(e.reason())},
             {"status_message", py::str(e.status_message())},
             {"causes", py::cast(e.causes())},
             {"retry_after_seconds", retry}});
    } catch (const UnreachableError& e) {
      raise(t.unreachable, e.what(), {});
    } catch (const ResponseTooLargeError& e) {
      raise(t.too_large, e.what(), {});
    } catch (const TransportError& e) {
      raise(t.transport, e.what(), {});
    } catch (const CancelledError& e) {
      raise(t.cancelled, e.what(), {});
    } catch (const Error& e) {
      raise(t.error, e.what(), {});
    }
  });
}

}  // namespace gpupool::py_bindings
