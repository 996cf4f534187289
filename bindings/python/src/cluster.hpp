// Private: the facade binding's pieces the embedded binding reuses.
#pragma once

#include "common.hpp"

#include "gpupool/cluster.hpp"

namespace gpupool::py_bindings {

/// A Logger forwarding to Python's logging.getLogger("gpupool") (takes the GIL; safe from any thread).
Logger python_logger();
/// Per-connection port-forward errors to the "gpupool" logger at ERROR level.
PortForwardErrorHandler python_error_logger();

/// Seconds (int/float) or a datetime.timedelta.
std::chrono::milliseconds duration_from(py::handle value);

}  // namespace gpupool::py_bindings
