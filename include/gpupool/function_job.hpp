// gpupool/function_job.hpp — a Python function launched as a job.
//
// What Kubeflow's CustomTrainer does (kubeflow/sdk, kubeflow/trainer/backends/kubernetes/utils.py:
// get_command_using_train_func, get_script_for_python_packages), with gpupool's tolerations,
// storage and profiles: the function's source and its keyword arguments become a small Python
// program that every replica runs with `python3`, after `pip install --user` of the packages asked
// for. The framework sets the env that tells each copy who it is: a PyTorchJob's operator sets
// MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE; an Indexed Job's controller sets
// JOB_COMPLETION_INDEX.
//
// Where the program goes:
//   - inline, when it is at most kInlineFunctionLimit bytes: it is an argument of the container's
//     command (["sh", "-c", LAUNCHER, "gpupool-function", PROGRAM]; the launcher runs
//     `python3 -c "$1"`), so nothing else is created;
//   - otherwise in a ConfigMap `<job>-function` (key main.py) created with the submission and
//     deleted with the job, mounted read-only at kFunctionMountPath; the launcher runs
//     `python3 /etc/gpupool/function/main.py`.
// 32 KiB keeps the workload object readable in `kubectl get -o yaml` (a PyTorchJob holds the command
// twice, Master and Worker) and far below Linux's 128 KiB limit on one argument (MAX_ARG_STRLEN);
// a ConfigMap holds up to 1 MiB (kMaxConfigMapBytes).
//
// The Python package extracts a function's source (inspect.getsource) and refuses closures, lambdas
// and functions that use names from outside their own body; this header checks what it can without
// Python: a Python identifier, a `def` of that name, arguments that are a JSON object, pip
// requirement specifiers.
#pragma once

#include "gpupool/workload.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

struct PythonFunction {
  std::string name;                   ///< the function's name, called as name(**args)
  std::string source;                 ///< its source, dedented: "def name(...):\n    ..."
  std::string args_json = "{}";       ///< keyword arguments: a JSON object's text
  std::vector<std::string> packages;  ///< pip requirement specifiers ("numpy", "torch==2.5.1") installed first
};

/// A program larger than this goes into a ConfigMap; smaller ones run inline (see above).
inline constexpr std::size_t kInlineFunctionLimit = 32 * 1024;
/// Where the ConfigMap holding a large program is mounted.
inline constexpr std::string_view kFunctionMountPath = "/etc/gpupool/function";

/// Throws ValidationError naming the field ("function.name", "args", "packages[i]") and the fix.
void validate(const PythonFunction& function);

/// The job name a function gets when none is given: its name in lower case, '_' as '-' ("train_mnist"
/// -> "train-mnist"). ValidationError (field "name") when that is not a DNS-1035 label.
std::string function_job_name(std::string_view function_name);

/// The Python program each replica runs: the function's source, then name(**args) with the
/// arguments decoded from JSON.
std::string function_program(const PythonFunction& function);

/// The function job: `base` (kind, name, image, resources, tolerations, storage, env, ... as
/// to_workload() built them from the usual submit options) running `function` on `num_nodes`
/// nodes: a PyTorchJob gets 1 Master and num_nodes-1 Workers, a Job num_nodes Indexed completions,
/// a Pod needs num_nodes 1, another kind num_nodes workers. The command, PYTHONUNBUFFERED=1 (logs
/// as they are printed) and GPUPOOL_FUNCTION=<name> are set, and for a large program the ConfigMap,
/// its volume and mount. ValidationError when base has a command (the function is the command), its
/// kind cannot run a function (a Deployment restarts it forever; an MPIJob's workers do not run the
/// command), num_nodes is below 1, or the function is invalid.
Workload function_workload(Workload base, const PythonFunction& function, std::int32_t num_nodes = 1);

}  // namespace gpupool
