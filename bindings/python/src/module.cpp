// gpupool._gpupool: the extension module behind the `gpupool` Python package.
#include "common.hpp"

#include <gpupool/version.hpp>

PYBIND11_MODULE(_gpupool, m) {
  using namespace gpupool::py_bindings;
  m.doc() = "C++ core of gpupool (use the `gpupool` package, not this module).";
  m.attr("__version__") = std::string(gpupool::version());
  bind_errors(m);
  bind_model(m);
  bind_workload(m);
  bind_render(m);
  bind_function(m);
#ifdef GPUPOOL_PY_HAVE_CLUSTER
  bind_cluster(m);
#endif
#ifdef GPUPOOL_PY_HAVE_EMBEDDED
  bind_embedded(m);
#endif
  m.attr("HAVE_CLUSTER") = py::bool_(
#ifdef GPUPOOL_PY_HAVE_CLUSTER
      true
#else
      false
#endif
  );
  m.attr("HAVE_EMBEDDED") = py::bool_(
#ifdef GPUPOOL_PY_HAVE_EMBEDDED
      true
#else
      false
#endif
  );
}
