// Cluster::exec, Cluster::port_forward and Cluster::tensorboard (the client side: WebSocket
// exec, SPDY-over-WebSocket port-forward and the plain SPDY fallback) against the embedded
// server with a test StreamHandler playing the kubelet.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpupool/cluster.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/error.hpp"
#include "gpupool/submit_options.hpp"
#include "local_stream_handler.hpp"
#include "streams_job.hpp"

using namespace std::chrono_literals;
using namespace gpupool;

namespace {

struct StreamsCluster {
  testing::EchoServer echo;
  std::shared_ptr<testing::LocalStreamHandler> handler = std::make_shared<testing::LocalStreamHandler>(echo.port());
  EmbeddedCluster admin;
  explicit StreamsCluster(bool websockets = true)
      : admin(EmbeddedClusterOptions{
            .topology = "seed", .server = {.users = {"alice"}, .stream_handler = handler, .websockets = websockets}}) {
    admin.submit(to_workload(gpupool::testing::streams_job()));
  }
};

using testing::echo_through;

}  // namespace

TEST_CASE("exec: input, output, stderr and the exit code; -i checked against the job") {
  StreamsCluster c;
  // Before the pods run there is nothing to exec into.
  CHECK_THROWS_WITH_AS(c.admin.exec("train", {"true"}), doctest::Contains("has no running instance"), Error);
  c.admin.server().advance(30s);
  JobExecOptions o;
  o.input = std::string("line one\nline two\n");
  ExecResult r = c.admin.exec("train", {"sh", "-c", "cat; echo on-stderr >&2; exit 4"}, o);
  CHECK(r.exit_code == 4);
  CHECK(r.stdout_text == "line one\nline two\n");
  CHECK(r.stderr_text == "on-stderr\n");
  // A large input goes through whole (stdin is half-closed at its end: v5's close signal).
  o.input = std::string(300000, 'z');
  r = c.admin.exec("train", {"wc", "-c"}, o);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text.find("300000") != std::string::npos);
  // -i: one of the job's instances.
  JobExecOptions w;
  w.instance = "train-worker-0";
  r = c.admin.exec("train", {"sh", "-c", "printf %s \"$0\"", "worker"}, w);
  CHECK(r.stdout_text == "worker");
  w.instance = "someone-else";
  CHECK_THROWS_WITH_AS(c.admin.exec("train", {"true"}, w),
                       doctest::Contains("pod \"someone-else\" is not an instance of job \"train\""), Error);
  // Output to sinks as it arrives.
  std::string streamed;
  JobExecOptions s;
  s.on_stdout = [&](std::string_view d) { streamed.append(d); };
  r = c.admin.exec("train", {"echo", "streamed"}, s);
  CHECK(streamed == "streamed\n");
  CHECK(r.stdout_text.empty());
  // The server's refusal before the upgrade is its Status.
  JobExecOptions bad;
  bad.container = "zz";
  try {
    c.admin.exec("train", {"true"}, bad);
    FAIL("expected an ApiError");
  } catch (const ApiError& e) {
    CHECK(e.code() == 400);
    CHECK(std::string(e.what()).find("container zz is not valid for pod train-launcher") != std::string::npos);
  }
  CHECK_THROWS_AS(c.admin.exec("train", {}), ValidationError);
}

TEST_CASE("port_forward: local ports reach the pod's; a refused port is reported per connection") {
  StreamsCluster c;
  CHECK_THROWS_WITH_AS(c.admin.port_forward("train", {{0, 80}}), doctest::Contains("has no running instance"), Error);
  c.admin.server().advance(30s);
  std::vector<std::string> errors;
  std::mutex mu;
  auto pf = c.admin.port_forward("train", parse_port_specs({":80", "0:81"}), "", [&](const std::string& e) {
    std::lock_guard lk(mu);
    errors.push_back(e);
  });
  REQUIRE(pf->ports().size() == 2);
  CHECK(pf->ports()[0].local > 0);
  CHECK(pf->ports()[0].remote == 80);
  CHECK(echo_through(pf->ports()[0].local, "hello") == "hello");
  CHECK(echo_through(pf->ports()[0].local, std::string(100000, 'q')) == std::string(100000, 'q'));
  CHECK(echo_through(pf->ports()[1].local, "nobody") == "");
  // A local port in use: nothing half started, one error naming the port.
  const int taken = pf->ports()[0].local;
  try {
    c.admin.port_forward("train", {{0, 80}, {taken, 80}});
    FAIL("expected a TransportError");
  } catch (const TransportError& e) {
    CHECK(std::string(e.what()).find("unable to listen on 127.0.0.1:" + std::to_string(taken)) != std::string::npos);
  }
  pf->stop();
  std::lock_guard lk(mu);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("an error occurred forwarding " + std::to_string(pf->ports()[1].local) +
                       " -> 81: error forwarding port 81 to pod default/train-launcher") == 0);
  CHECK(c.handler->forwards == 2);
}

TEST_CASE("exec and port_forward fall back to plain SPDY/3.1 when the WebSocket upgrade is refused") {
  StreamsCluster c(false);
  c.admin.server().advance(30s);
  JobExecOptions o;
  o.input = std::string(200000, 's');
  ExecResult r = c.admin.exec("train", {"sh", "-c", "wc -c; echo e >&2; exit 9"}, o);
  CHECK(r.exit_code == 9);
  CHECK(r.stdout_text.find("200000") != std::string::npos);
  CHECK(r.stderr_text == "e\n");
  JobExecOptions bad;
  bad.container = "zz";
  CHECK_THROWS_WITH_AS(c.admin.exec("train", {"true"}, bad), doctest::Contains("container zz is not valid"), ApiError);
  auto pf = c.admin.port_forward("train", {{0, 80}}, "train-worker-0");
  CHECK(echo_through(pf->ports()[0].local, "via spdy") == "via spdy");
  CHECK(c.handler->forwards == 1);
}

TEST_CASE("tensorboard: forwards to the job's TensorBoard pod, or says why it cannot") {
  StreamsCluster c;
  CHECK_THROWS_WITH_AS(c.admin.tensorboard("train"),
                       doctest::Contains("TensorBoard is not running yet: pod train-tensorboard"), Error);
  c.admin.server().advance(30s);
  auto tb = c.admin.tensorboard("train");
  CHECK(tb->ports()[0].remote == 6006);
  CHECK(echo_through(tb->ports()[0].local, "GET / HTTP/1.0\r\n\r\n") == "GET / HTTP/1.0\r\n\r\n");
  CHECK_THROWS_WITH_AS(c.admin.tensorboard("nope"), doctest::Contains("no job \"nope\""), ApiError);
}

TEST_CASE("parse_port_specs: kubectl's forms, and errors naming the spec") {
  auto p = parse_port_specs({"8080:80", "9000", ":7000"});
  REQUIRE(p.size() == 3);
  CHECK((p[0].local == 8080 && p[0].remote == 80));
  CHECK((p[1].local == 9000 && p[1].remote == 9000));
  CHECK((p[2].local == 0 && p[2].remote == 7000));
  CHECK_THROWS_WITH_AS(parse_port_specs({"80", "x:80"}), doctest::Contains("ports[1]"), ValidationError);
  CHECK_THROWS_AS(parse_port_specs({"8080:0"}), ValidationError);
  CHECK_THROWS_AS(parse_port_specs({"70000"}), ValidationError);
  CHECK_THROWS_AS(parse_port_specs({}), ValidationError);
}
