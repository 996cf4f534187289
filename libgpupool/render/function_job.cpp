#include "gpupool/function_job.hpp"

#include "gpupool/error.hpp"
#include "gpupool/names.hpp"
#include "gpupool/staging.hpp"

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
#include <cctype>

namespace gpupool {

namespace json = boost::json;

namespace {

constexpr std::string_view kArgv0 = "gpupool-function";  // $0 of the launcher's sh -c
constexpr std::string_view kProgramKey = "main.py";
constexpr std::string_view kVolumeName = "gpupool-function";

bool is_identifier(std::string_view s) {
  // Python's identifiers in ASCII (a non-ASCII name is refused: the program must stay plain text).
  auto head = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !head(s.front())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return head(c) || (c >= '0' && c <= '9'); });
}

// The line `def NAME(` (or `async def`) at the start of a line, after decorators.
bool defines(std::string_view source, std::string_view name, bool async) {
  const std::string def = fmt::format("{}def {}(", async ? "async " : "", name);
  for (std::size_t at = source.find(def); at != std::string_view::npos; at = source.find(def, at + 1))
    if (at == 0 || source[at - 1] == '\n') return true;
  return false;
}

// What pip install takes as packages: requirement specifiers, never options.
void validate_package(std::string_view package, std::size_t i) {
  const std::string field = fmt::format("packages[{}]", i);
  if (package.empty())
    throw ValidationError(field, "", "Required value: a pip requirement, e.g. numpy or torch==2.5.1");
  if (package.front() == '-')
    throw ValidationError(field, std::string(package),
                          "is a pip option, not a package; set pip's options through the env (e.g. PIP_INDEX_URL)");
  if (std::any_of(package.begin(), package.end(), [](char c) { return c == '\n' || c == '\r' || c == '\0'; }))
    throw ValidationError(field, std::string(package), "must be one line");
}

// The sh script each replica runs. Packages first, as Kubeflow's get_script_for_python_packages
// does: a per-user install (--user), falling back to a system-wide one; then the program.
std::string launcher_script(const PythonFunction& f, bool inline_program) {
  std::string script = "set -e\n";
  if (!f.packages.empty()) {
    std::string packages;
    for (const auto& p : f.packages) packages += " " + shell_quote(p);
    const std::string pip =
        "PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet "
        "--no-warn-script-location";
    script += "python3 -m pip --version >/dev/null 2>&1 || python3 -m ensurepip --user || python3 -m ensurepip\n";
    script += fmt::format("{} --user{} || {}{}\n", pip, packages, pip, packages);
    script += fmt::format("echo gpupool: installed Python packages:{} >&2\n", packages);
  }
  if (inline_program)
    script += "exec python3 -c \"$1\"\n";
  else
    script += fmt::format("exec python3 {}/{}\n", kFunctionMountPath, kProgramKey);
  return script;
}

}  // namespace

void validate(const PythonFunction& f) {
  if (!is_identifier(f.name))
    throw ValidationError("function.name", f.name,
                          "must be a Python identifier (letters, digits and _, not starting with a digit): the name "
                          "of a function defined with def");
  if (f.source.find('\0') != std::string::npos)
    throw ValidationError("function.source", f.name, "contains a NUL byte; a Python source file cannot");
  if (defines(f.source, f.name, true))
    throw ValidationError("function.source", f.name,
                          fmt::format("{} is a coroutine function (async def); launch a plain function that calls "
                                      "asyncio.run() itself",
                                      f.name));
  if (!defines(f.source, f.name, false))
    throw ValidationError(
        "function.source", f.name,
        fmt::format("has no line `def {}(`: pass the dedented source of the function itself", f.name));
  json::value args;
  try {
    args = json::parse(f.args_json);
  } catch (const std::exception& e) {
    throw ValidationError("args", f.args_json, fmt::format("is not JSON ({}); pass a JSON object", e.what()));
  }
  if (!args.is_object())
    throw ValidationError(
        "args", f.args_json,
        fmt::format("must be a JSON object of keyword arguments ({}(**args)), e.g. {{\"lr\": 0.01}}", f.name));
  for (std::size_t i = 0; i < f.packages.size(); ++i) validate_package(f.packages[i], i);
}

std::string function_job_name(std::string_view function_name) {
  std::string name;
  for (char c : function_name) name += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  while (!name.empty() && name.front() == '-') name.erase(name.begin());
  while (!name.empty() && name.back() == '-') name.pop_back();
  if (!is_dns1035_label(name))
    throw ValidationError("name", name,
                          fmt::format("the job name made from the function's name {} is not a DNS-1035 label; pass "
                                      "name=\"my-job\"",
                                      function_name));
  return name;
}

std::string function_program(const PythonFunction& f) {
  validate(f);
  // The arguments travel as their JSON text, unchanged (a number keeps its digits), in a Python
  // string literal: a JSON string (what serialize(json::string) writes) is a valid Python string
  // literal too (", \\, \n, \t, \uXXXX).
  const std::string args = json::serialize(json::string(f.args_json));
  std::string source = f.source;
  if (!source.empty() && source.back() != '\n') source += '\n';
  return fmt::format(
      "# gpupool function job: runs {name}(**args) on every node (generated, see gpupool/function_job.hpp).\n"
      "{source}\n\n"
      "if __name__ == \"__main__\":\n"
      "    import json as _gpupool_json\n"
      "    {name}(**_gpupool_json.loads({args}))\n",
      fmt::arg("name", f.name), fmt::arg("source", source), fmt::arg("args", args));
}

Workload function_workload(Workload w, const PythonFunction& f, std::int32_t num_nodes) {
  if (!w.command.empty() || !w.shell.empty())
    throw ValidationError("command", w.command.empty() ? w.shell : w.command.front(),
                          fmt::format("a function job runs {}(); drop the command", f.name));
  if (num_nodes < 1)
    throw ValidationError("num_nodes", std::to_string(num_nodes), "must be at least 1: the nodes the function runs on");
  switch (w.kind) {
    case WorkloadKind::Deployment:
      throw ValidationError("kind", "Deployment",
                            "a Deployment restarts its pods forever; run a function as a Job or a PyTorchJob");
    case WorkloadKind::MPIJob:
      throw ValidationError("kind", "MPIJob",
                            "an MPIJob runs its command in the launcher only; run a function as a PyTorchJob (one "
                            "copy per node) or a Job");
    case WorkloadKind::PyTorchJob:
      w.replicas.master = 1;
      w.replicas.workers = num_nodes - 1;
      break;
    case WorkloadKind::Job:
      w.replicas.workers = num_nodes;
      w.indexed = true;  // JOB_COMPLETION_INDEX tells each copy which one it is
      break;
    case WorkloadKind::Pod:
      if (num_nodes != 1)
        throw ValidationError("num_nodes", std::to_string(num_nodes),
                              "a Pod runs on one node; use a Job or a PyTorchJob for more");
      break;
    default:
      w.replicas.workers = num_nodes;
      break;
  }
  const std::string program = function_program(f);
  const bool inline_program = program.size() <= kInlineFunctionLimit;
  w.command = {"sh", "-c", launcher_script(f, inline_program)};
  if (inline_program) {
    w.command.emplace_back(kArgv0);
    w.command.push_back(program);
  } else {
    const std::string name = w.name + "-function";
    w.config_maps.push_back({name, {{std::string(kProgramKey), program}}});
    w.volumes.push_back({std::string(kVolumeName), ConfigMapSource{name}});
    w.mounts.push_back({std::string(kVolumeName), std::string(kFunctionMountPath), "", true});
  }
  auto set_env = [&](const std::string& key, const std::string& value) {
    auto same = [&](const EnvVar& e) { return e.name == key; };
    if (std::none_of(w.env.begin(), w.env.end(), same)) w.env.push_back({key, value, ""});
  };
  set_env("PYTHONUNBUFFERED", "1");
  set_env("GPUPOOL_FUNCTION", f.name);
  validate(w);
  return w;
}

}  // namespace gpupool
