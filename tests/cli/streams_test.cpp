// gpupool exec / port-forward / tensorboard against the embedded server with a test
// StreamHandler playing the kubelet: the remote exit code becomes the command's, stdin goes
// through, ports forward; bad usage exits 2 with one line.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>

#include "gpupool/embedded_cluster.hpp"
#include "gpupool/submit_options.hpp"
#include "local_stream_handler.hpp"
#include "run_cli.hpp"
#include "streams_job.hpp"

using namespace std::chrono_literals;
using namespace gpupool;
using gpupool::cli::testing::one_line;
using gpupool::cli::testing::run_cli;
using gpupool::cli::testing::run_shell;

namespace {

struct Fixture {
  gpupool::testing::EchoServer echo;
  std::shared_ptr<gpupool::testing::LocalStreamHandler> handler =
      std::make_shared<gpupool::testing::LocalStreamHandler>(echo.port());
  EmbeddedCluster admin{
      EmbeddedClusterOptions{.topology = "seed", .server = {.users = {"alice"}, .stream_handler = handler}}};
  std::string kubeconfig = admin.server().admin_kubeconfig();
  Fixture() {
    admin.submit(to_workload(gpupool::testing::streams_job()));
    admin.server().advance(30s);
  }
  std::string cli() const { return std::string(GPUPOOL_CLI) + " --kubeconfig " + kubeconfig + " "; }
};

using gpupool::testing::Background;
using gpupool::testing::echo_through;

int port_of(const std::string& line, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(line, m, std::regex(pattern)) ? std::stoi(m[1]) : 0;
}

}  // namespace

TEST_CASE("gpupool exec: output, stdin and the remote exit code") {
  Fixture f;
  auto r = run_cli({"--kubeconfig", f.kubeconfig, "exec", "train", "--", "sh", "-c", "echo out; echo err >&2; exit 7"});
  CHECK(r.code == 7);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  r = run_shell("printf 'piped input' | " + f.cli() + "exec train --stdin -i train-worker-0 -- cat");
  CHECK(r.code == 0);
  CHECK(r.out == "piped input");
  // -it before --: stdin and a terminal (stdin is a pipe here: no raw mode; stderr merges).
  r = run_shell("printf 'x' | " + f.cli() + "exec train -it -- sh -c 'cat; echo e >&2'");
  CHECK(r.code == 0);
  CHECK(r.out == "xe\n");
  CHECK(f.handler->execs == 3);
}

TEST_CASE("gpupool exec: bad usage exits 2, refusals 1, each with one line") {
  Fixture f;
  auto r = run_cli({"--kubeconfig", f.kubeconfig, "exec", "train"});
  CHECK(r.code == 2);
  CHECK(one_line(r.err));
  r = run_cli({"--kubeconfig", f.kubeconfig, "exec", "train", "-i", "other", "--", "true"});
  CHECK(r.code == 1);
  CHECK(r.err ==
        "error: pod \"other\" is not an instance of job \"train\"; its instances: train-launcher, train-worker-0\n");
  r = run_cli({"--kubeconfig", f.kubeconfig, "exec", "train", "-c", "zz", "--", "true"});
  CHECK(r.code == 1);
  CHECK(r.err == "error: BadRequest (400): container zz is not valid for pod train-launcher\n");
  r = run_cli({"--kubeconfig", f.kubeconfig, "port-forward", "train", "x:80"});
  CHECK(r.code == 2);
  CHECK(one_line(r.err));
  r = run_cli({"--kubeconfig", f.kubeconfig, "port-forward", "train"});
  CHECK(r.code == 2);
  r = run_cli({"exec", "--help"});
  CHECK(r.code == 0);
  CHECK(r.out.find("gpupool exec [flags] NAME -- COMMAND") != std::string::npos);
  CHECK(f.handler->execs == 0);
}

TEST_CASE("gpupool port-forward and tensorboard: print where, then forward until stopped") {
  Fixture f;
  {
    Background pf(f.cli() + "port-forward train :80");
    const int port = port_of(pf.first_line, R"(^Forwarding from 127\.0\.0\.1:(\d+) -> 80\n$)");
    REQUIRE_MESSAGE(port > 0, pf.first_line);
    CHECK(echo_through(port, "through gpupool") == "through gpupool");
  }
  {
    Background tb(f.cli() + "tensorboard train");
    const int port = port_of(tb.first_line, R"(^TensorBoard of job "train": http://127\.0\.0\.1:(\d+)\n$)");
    REQUIRE_MESSAGE(port > 0, tb.first_line);
    CHECK(echo_through(port, "GET /") == "GET /");
  }
  CHECK(f.handler->forwards == 2);
}
