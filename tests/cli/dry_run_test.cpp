// `gpupool submit --dry-run=client` renders without contacting the server (kubectl's
// --dry-run=client); `--dry-run` / `--dry-run=server` asks the server (dryRun=All).
#include <doctest/doctest.h>

#include "args.hpp"
#include "commands.hpp"
#include "run_cli.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace gpupool::cli;

using gpupool::cli::testing::one_line;
using gpupool::cli::testing::run_cli;

namespace {

/// A kubeconfig whose server nothing listens on (port 1 of loopback) and whose context's
/// namespace is "alice".
struct UnreachableKubeconfig {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpupool-dry-run-" + std::to_string(::getpid()));
  std::string path = (dir / "config").string();
  UnreachableKubeconfig() {
    std::filesystem::create_directories(dir);
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                           "clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:1\n"
                           "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n    namespace: alice\n"
                           "users:\n- name: u\n  user:\n    token: dry-run-test-token\n";
    ::chmod(path.c_str(), 0600);
  }
  ~UnreachableKubeconfig() { std::filesystem::remove_all(dir); }
};

}  // namespace

TEST_CASE("parser: a switch with optional values (--dry-run[=server|client])") {
  Parser p("gpupool", {});
  CommandSpec spec{"submit job", "", "", "", {FlagSpec{"dry-run", 0, "", "", false, {"server", "client"}}}, 0, 0};
  CHECK(p.parse(spec, {"--dry-run"}).get("dry-run") == "true");
  CHECK(p.parse(spec, {"--dry-run=client"}).get("dry-run") == "client");
  CHECK(p.parse(spec, {"--dry-run=server"}).get("dry-run") == "server");
  CHECK_FALSE(p.parse(spec, {"--dry-run=false"}).has("dry-run"));
  try {
    (void)p.parse(spec, {"--dry-run=maybe"});
    FAIL("accepted");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("=server / =client") != std::string::npos);
    CHECK(std::string(e.what()).find("\"maybe\"") != std::string::npos);
  }
  CHECK(p.help(spec).find("--dry-run[=server|client]") != std::string::npos);
}

TEST_CASE("submit --dry-run=client renders offline in the context's namespace; the server dry run needs the server") {
  UnreachableKubeconfig kc;
  auto client = run_cli({"submit", "mpi", "--kubeconfig", kc.path, "--name", "offline", "--image", "busybox",
                         "--toleration", "ssd_node", "--dry-run=client", "-o", "yaml", "echo hi"});
  CHECK(client.err == "");
  REQUIRE(client.code == 0);
  CHECK(client.out.find("kind: MPIJob") != std::string::npos);
  CHECK(client.out.find("apiVersion: kubeflow.org/v1\n") != std::string::npos);  // --mpi-api not given: v1
  CHECK(client.out.find("namespace: alice") != std::string::npos);
  CHECK(client.out.find("key: ssd_node") != std::string::npos);

  auto v2 = run_cli({"submit", "mpi", "--kubeconfig", kc.path, "--name", "offline", "--image", "busybox", "--mpi-api",
                     "v2beta1", "--dry-run=client", "-o", "json", "echo hi"});
  REQUIRE(v2.code == 0);
  CHECK(v2.out.find("\"apiVersion\": \"kubeflow.org/v2beta1\"") != std::string::npos);

  auto summary = run_cli({"submit", "job", "--kubeconfig", kc.path, "--name", "offline", "--image", "busybox",
                          "--dry-run=client", "echo hi"});
  REQUIRE(summary.code == 0);
  CHECK(summary.out == "job.batch/offline rendered (client dry run, nothing sent)\n");

  // The server dry run does contact the server: here it fails in one line, exit 1, and the
  // token never shows.
  auto server = run_cli({"submit", "job", "--kubeconfig", kc.path, "--name", "offline", "--image", "busybox",
                         "--dry-run=server", "echo hi"});
  CHECK(server.code == 1);
  CHECK(one_line(server.err));
  CHECK(server.err.find("dry-run-test-token") == std::string::npos);
}

TEST_CASE("submit --runtime-class NAME: the pods' runtimeClassName, in --help, a bad name refused in one line") {
  UnreachableKubeconfig kc;
  auto pytorch = run_cli({"submit", "pytorch", "--kubeconfig", kc.path, "--name", "rc", "--image", "busybox",
                          "--workers", "2", "--runtime-class", "nvidia", "--dry-run=client", "-o", "json", "echo hi"});
  CHECK(pytorch.err == "");
  REQUIRE(pytorch.code == 0);
  // Master and Worker: one per replica spec.
  std::size_t count = 0;
  for (auto at = pytorch.out.find("\"runtimeClassName\": \"nvidia\""); at != std::string::npos;
       at = pytorch.out.find("\"runtimeClassName\": \"nvidia\"", at + 1))
    ++count;
  CHECK(count == 2);

  auto none = run_cli({"submit", "job", "--kubeconfig", kc.path, "--name", "rc", "--image", "busybox",
                       "--dry-run=client", "-o", "yaml", "echo hi"});
  REQUIRE(none.code == 0);
  CHECK(none.out.find("runtimeClassName") == std::string::npos);

  auto help = run_cli({"submit", "job", "--help"});
  REQUIRE(help.code == 0);
  CHECK(help.out.find("--runtime-class NAME") != std::string::npos);

  auto bad = run_cli({"submit", "job", "--kubeconfig", kc.path, "--name", "rc", "--image", "busybox", "--runtime-class",
                      "Bad_Name", "--dry-run=client", "echo hi"});
  CHECK(bad.code != 0);
  CHECK(one_line(bad.err));
  CHECK(bad.err.find("runtimeClassName") != std::string::npos);
}
