// A Python function launched as a job: function_workload() and Cluster.submit_function().
// The function's parts come from gpupool._function (inspect); the job from gpupool/function_job.hpp.
#include "common.hpp"

#include "gpupool/error.hpp"
#include "gpupool/function_job.hpp"
#include "gpupool/submit_options.hpp"

namespace gpupool::py_bindings {

Workload function_workload_python(py::handle func, const std::string& kind, std::int32_t num_nodes, py::handle packages,
                                  py::handle args, const py::kwargs& options) {
  for (const char* taken : {"kind", "command", "argv", "workers"})
    if (options.contains(taken))
      throw py::type_error(std::string("submit_function() got '") + taken +
                           (std::string_view(taken) == "workers" ? "': give num_nodes, the nodes the function runs on"
                            : std::string_view(taken) == "kind"  ? "' twice"
                                                                 : "': the function is the command"));
  auto parts = py::module_::import("gpupool._function").attr("function_parts")(func, args, packages).cast<py::tuple>();
  PythonFunction f;
  f.name = parts[0].cast<std::string>();
  f.source = parts[1].cast<std::string>();
  f.args_json = parts[2].cast<std::string>();
  f.packages = parts[3].cast<std::vector<std::string>>();
  py::dict kw;
  for (auto item : options) kw[item.first] = item.second;
  kw["kind"] = kind;
  if (!kw.contains("name") || kw["name"].is_none()) kw["name"] = function_job_name(f.name);
  Workload base = to_workload_python(from_kwargs<SubmitOptions>(kw));
  return function_workload(std::move(base), f, num_nodes);
}

void bind_function(py::module_& m) {
  m.def(
      "function_workload",
      [](py::handle func, const std::string& kind, std::int32_t num_nodes, py::handle packages, py::handle args,
         const py::kwargs& options) {
        return function_workload_python(func, kind, num_nodes, packages, args, options);
      },
      py::arg("func"), py::kw_only(), py::arg("kind") = "pytorch", py::arg("num_nodes") = 1,
      py::arg("packages") = py::none(), py::arg("args") = py::none(),
      "The Workload that runs func(**args) on num_nodes nodes (see Cluster.submit_function); the other keywords\n"
      "are submit()'s options (image, gpus, tolerations, data, env, ...). The job is named after the function\n"
      "unless name= is given.");
}

}  // namespace gpupool::py_bindings
