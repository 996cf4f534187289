// A Python function as a job (function_job.hpp): the program, the launcher, the workload and its
// ConfigMap; the generated launcher is run for real with /usr/bin/python3.
#include <doctest/doctest.h>

#include "shell_run.hpp"

#include "gpupool/error.hpp"
#include "gpupool/function_job.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/render.hpp"
#include "gpupool/staging.hpp"

#include <boost/json/serialize.hpp>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

using namespace gpupool;
namespace json = boost::json;

namespace {

const char* const kTrain =
    "def train(lr, steps=1, tags=None):\n"
    "    import os\n"
    "    print(f\"rank={os.environ.get('RANK')} world={os.environ.get('WORLD_SIZE')} lr={lr} steps={steps} "
    "tags={tags}\")\n";

PythonFunction train(std::string args = R"({"lr": 0.5, "tags": ["a'b", "c\"d\n"]})") {
  return PythonFunction{"train", kTrain, std::move(args), {}};
}

Workload base(WorkloadKind kind) {
  Workload w;
  w.name = "fn";
  w.kind = kind;
  w.image = "docker.io/library/python:3.11";
  w.resources.gpus = 1;
  return w;
}

const json::object& container_of(const json::object& pod_spec) { return pod_spec.at("containers").at(0).as_object(); }

std::string env_value(const json::object& container, std::string_view name) {
  for (const auto& e : container.at("env").as_array())
    if (e.at("name").as_string() == name) return std::string(e.at("value").as_string());
  return "<unset>";
}

// Runs argv (the container's command) with a clean env plus `env`, python3 from /usr/bin.
testing::ShellRun run_argv(const std::vector<std::string>& argv, const std::string& env) {
  std::string line = "env -i PATH=/usr/bin:/bin " + env;
  for (const auto& a : argv) line += " " + shell_quote(a);
  const std::string scratch = std::filesystem::temp_directory_path() / ("gpupool-fn-" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  auto r = testing::shell_run(line, scratch);
  std::filesystem::remove_all(scratch);
  return r;
}

}  // namespace

TEST_CASE("a PyTorchJob function on 2 nodes: Master + Worker run the inline launcher with python3") {
  Workload w = function_workload(base(WorkloadKind::PyTorchJob), train(), 2);
  CHECK(w.replicas.master == 1);
  CHECK(w.replicas.workers == 1);
  CHECK(w.config_maps.empty());
  Submission s = render(w, Profile::builtin("generic"));
  REQUIRE(s.objects.size() == 1);
  const json::object& job = s.workload();
  CHECK(job.at("kind") == "PyTorchJob");
  for (const char* replica : {"Master", "Worker"}) {
    CAPTURE(replica);
    const auto& spec = job.at("spec").at("pytorchReplicaSpecs").at(replica);
    CHECK(spec.at("replicas") == 1);
    const json::object& c = container_of(spec.at("template").at("spec").as_object());
    const auto& cmd = c.at("command").as_array();
    REQUIRE(cmd.size() == 5);
    CHECK(cmd[0] == "sh");
    CHECK(cmd[1] == "-c");
    CHECK(std::string(cmd[2].as_string()).find("exec python3 -c \"$1\"") != std::string::npos);
    CHECK(cmd[3] == "gpupool-function");
    CHECK(cmd[4].as_string() == function_program(train()));
    CHECK(env_value(c, "PYTHONUNBUFFERED") == "1");
    CHECK(env_value(c, "GPUPOOL_FUNCTION") == "train");
  }
}

TEST_CASE("the generated launcher runs the function with its JSON arguments under /usr/bin/python3") {
  if (::access("/usr/bin/python3", X_OK) != 0) return;  // the machines that run the suite have it
  Workload w = function_workload(base(WorkloadKind::PyTorchJob), train(), 2);
  auto r = run_argv(w.command, "RANK=1 WORLD_SIZE=2");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out == "rank=1 world=2 lr=0.5 steps=1 tags=[\"a'b\", 'c\"d\\n']\n");
  // The arguments' JSON text reaches Python unchanged: an integer beyond 64 bits keeps its digits.
  PythonFunction show{
      "show", "def show(n, x):\n    print(n, x)\n", R"({"n": 123456789012345678901234567890, "x": 0.1})", {}};
  CHECK(run_argv(function_workload(base(WorkloadKind::Job), show).command, "").out ==
        "123456789012345678901234567890 0.1\n");
  // A failing function fails the container.
  PythonFunction bad{"boom", "def boom():\n    raise SystemExit(3)\n", "{}", {}};
  CHECK(run_argv(function_workload(base(WorkloadKind::Job), bad).command, "").code == 3);
}

TEST_CASE("a Job function: num_nodes Indexed completions (JOB_COMPLETION_INDEX)") {
  Workload w = function_workload(base(WorkloadKind::Job), train(), 3);
  const json::object job = render(w, Profile::builtin("generic")).workload();
  CHECK(job.at("spec").at("completionMode") == "Indexed");
  CHECK(job.at("spec").at("parallelism") == 3);
  CHECK(job.at("spec").at("completions") == 3);
  // A plain Job keeps the default completion mode.
  Workload plain = base(WorkloadKind::Job);
  plain.command = {"true"};
  CHECK_FALSE(render(plain, Profile::builtin("generic")).workload().at("spec").as_object().contains("completionMode"));
}

TEST_CASE("a program over the inline limit goes into a ConfigMap created first and mounted read-only") {
  PythonFunction big = train();
  big.source += "\n    # " + std::string(kInlineFunctionLimit, 'x') + "\n";
  Workload w = function_workload(base(WorkloadKind::PyTorchJob), big, 2);
  REQUIRE(w.config_maps.size() == 1);
  Submission s = render(w, Profile::builtin("generic"));
  REQUIRE(s.objects.size() == 2);
  const json::object& cm = s.objects[0];
  CHECK(cm.at("kind") == "ConfigMap");
  CHECK(cm.at("metadata").at("name") == "fn-function");
  CHECK(cm.at("metadata").at("labels").at(kJobNameLabel) == "fn");
  CHECK(cm.at("metadata").at("labels").at(kComponentLabel) == "config");
  CHECK(cm.at("data").at("main.py").as_string() == function_program(big));
  const json::object& job = s.workload();
  CHECK(job.at("kind") == "PyTorchJob");
  const json::object& pod = job.at("spec").at("pytorchReplicaSpecs").at("Worker").at("template").at("spec").as_object();
  CHECK(json::serialize(pod.at("volumes")) == R"([{"name":"gpupool-function","configMap":{"name":"fn-function"}}])");
  const json::object& c = container_of(pod);
  CHECK(json::serialize(c.at("volumeMounts")) ==
        R"([{"name":"gpupool-function","mountPath":"/etc/gpupool/function","readOnly":true}])");
  CHECK(c.at("command").as_array().size() == 3);
  CHECK(std::string(c.at("command").at(2).as_string()).find("exec python3 /etc/gpupool/function/main.py") !=
        std::string::npos);
  // Just at the limit it is still inline.
  PythonFunction edge = train();
  edge.source += "# ";
  edge.source += std::string(kInlineFunctionLimit - function_program(edge).size(), 'y');
  REQUIRE(function_program(edge).size() == kInlineFunctionLimit);
  CHECK(function_workload(base(WorkloadKind::Job), edge).config_maps.empty());
  // Beyond a ConfigMap's 1 MiB: refused before anything is sent.
  PythonFunction huge = train();
  huge.source += "# " + std::string(kMaxConfigMapBytes, 'z') + "\n";
  CHECK_THROWS_WITH_AS(function_workload(base(WorkloadKind::Job), huge), doctest::Contains("at most 1048576 bytes"),
                       ValidationError);
}

TEST_CASE("packages are pip-installed per user first, quoted, before the program runs") {
  PythonFunction f = train();
  f.packages = {"numpy", "torch==2.5.1", "weird'name"};
  const std::string script = function_workload(base(WorkloadKind::Job), f).command.at(2);
  CHECK(script.find("python3 -m pip install --quiet --no-warn-script-location --user 'numpy' 'torch==2.5.1' "
                    "'weird'\\''name' || ") != std::string::npos);
  CHECK(script.find("PIP_DISABLE_PIP_VERSION_CHECK=1") != std::string::npos);
  CHECK(script.find("pip install") < script.find("exec python3"));
  CHECK(function_workload(base(WorkloadKind::Job), train()).command.at(2).find("pip") == std::string::npos);
}

TEST_CASE("function jobs refuse what cannot run, naming the field") {
  struct Case {
    const char* what;
    std::function<void()> call;
    const char* field;
  };
  auto with = [](auto change) {
    PythonFunction f = train();
    change(f);
    return f;
  };
  const Case cases[] = {
      {"a name that is not an identifier",
       [&] { function_workload(base(WorkloadKind::Job), with([](auto& f) { f.name = "1train"; })); }, "function.name"},
      {"source without its def",
       [&] { function_workload(base(WorkloadKind::Job), with([](auto& f) { f.name = "other"; })); }, "function.source"},
      {"an async def",
       [&] {
         function_workload(base(WorkloadKind::Job), with([](auto& f) { f.source = "async def train():\n  pass\n"; }));
       },
       "function.source"},
      {"args not JSON", [&] { function_workload(base(WorkloadKind::Job), train("{lr: 1}")); }, "args"},
      {"args not an object", [&] { function_workload(base(WorkloadKind::Job), train("[1, 2]")); }, "args"},
      {"a package that is a pip option",
       [&] { function_workload(base(WorkloadKind::Job), with([](auto& f) { f.packages = {"--index-url=x"}; })); },
       "packages[0]"},
      {"a command besides the function",
       [&] {
         Workload w = base(WorkloadKind::Job);
         w.shell = "echo";
         function_workload(w, train());
       },
       "command"},
      {"a Deployment", [&] { function_workload(base(WorkloadKind::Deployment), train()); }, "kind"},
      {"an MPIJob", [&] { function_workload(base(WorkloadKind::MPIJob), train()); }, "kind"},
      {"no nodes", [&] { function_workload(base(WorkloadKind::PyTorchJob), train(), 0); }, "num_nodes"},
      {"a Pod on 2 nodes", [&] { function_workload(base(WorkloadKind::Pod), train(), 2); }, "num_nodes"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    try {
      c.call();
      FAIL("accepted");
    } catch (const ValidationError& e) {
      CHECK(e.field() == c.field);
    }
  }
}

TEST_CASE("a job name from the function's name") {
  CHECK(function_job_name("train_mnist") == "train-mnist");
  CHECK(function_job_name("_Train_") == "train");
  CHECK_THROWS_AS(function_job_name("_2x"), ValidationError);
}

TEST_CASE("ConfigMaps of a workload are checked as the API server checks them") {
  Workload w = base(WorkloadKind::Job);
  w.command = {"true"};
  w.config_maps = {{"Bad_Name", {}}};
  CHECK_THROWS_WITH_AS(validate(w), doctest::Contains("configMaps[0].metadata.name"), ValidationError);
  w.config_maps = {{"ok", {{"a/b", "x"}}}};
  CHECK_THROWS_WITH_AS(validate(w), doctest::Contains("configMaps[0].data[a/b]"), ValidationError);
  w.config_maps = {{"ok", {}}, {"ok", {}}};
  CHECK_THROWS_WITH_AS(validate(w), doctest::Contains("Duplicate value"), ValidationError);
  w.config_maps.clear();
  w.kind = WorkloadKind::PyTorchJob;
  w.indexed = true;
  CHECK_THROWS_WITH_AS(validate(w), doctest::Contains("completionMode"), ValidationError);
}
