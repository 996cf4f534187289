// RunMode::Local through the facade: port-forward and `tensorboard` reach the pod's own process
// (here a stand-in `tensorboard`, a tiny HTTP server put first on PATH) on its local port.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "gpupool/embedded_cluster.hpp"
#include "gpupool/error.hpp"
#include "gpupool/submit_options.hpp"
#include "local_stream_handler.hpp"

using namespace std::chrono_literals;
using namespace gpupool;
namespace fs = std::filesystem;

namespace {

// Prints "listening" once bound, then answers every GET with a page naming itself.
constexpr const char* kStandIn = R"(#!/usr/bin/python3
import http.server, sys
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"stand-in TensorBoard, logdir " + args[args.index("--logdir") + 1].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
server = http.server.HTTPServer(("127.0.0.1", port), Page)
print("listening", flush=True)
server.serve_forever()
)";

struct StandInOnPath {
  fs::path dir;
  std::string old_path;
  StandInOnPath() {
    char tmpl[] = "/tmp/gpupool-standin-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    dir = tmpl;
    std::ofstream(dir / "tensorboard") << kStandIn;
    fs::permissions(dir / "tensorboard", fs::perms::owner_all);
    old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", (dir.string() + ":" + old_path).c_str(), 1);
  }
  ~StandInOnPath() {
    ::setenv("PATH", old_path.c_str(), 1);
    fs::remove_all(dir);
  }
};

}  // namespace

TEST_CASE("local run: tensorboard and port-forward reach the pod's process on its local port") {
  StandInOnPath stand_in;
  EmbeddedCluster c(EmbeddedClusterOptions{.topology = "seed", .server = {.run = RunMode::Local}});
  SubmitOptions o;
  o.kind = "job";
  o.name = "tb";
  o.image = "python:3.11";
  o.tensorboard = true;
  o.argv = {"true"};
  c.submit(to_workload(o));
  // The TensorBoard pod starts as soon as it is bound, and the stand-in listens a moment later:
  // bounded waits on those local processes, which run in real time.
  std::unique_ptr<PortForward> pf;
  for (int i = 0; i < 600 && !pf; ++i) try {
      pf = c.tensorboard("tb", 0, [](const std::string&) {});
    } catch (const Error&) {
      std::this_thread::sleep_for(50ms);
    }
  REQUIRE(pf);
  std::string page;
  for (int i = 0; i < 600 && page.rfind("HTTP/", 0) != 0; ++i)
    if ((page = testing::echo_through(pf->ports()[0].local, "GET / HTTP/1.0\r\n\r\n")).rfind("HTTP/", 0) != 0)
      std::this_thread::sleep_for(50ms);
  CHECK(page.rfind("HTTP/1.0 200", 0) == 0);
  CHECK(page.find("stand-in TensorBoard, logdir ") != std::string::npos);
  pf->stop();
}
