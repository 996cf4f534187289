// The `gpupool` command: argument parsing, help, exit codes, one-line errors, and the seed's
// walkthrough end to end on a persistent embedded cluster (the command run as a user runs it).
#include <doctest/doctest.h>

#include "args.hpp"
#include "commands.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

using namespace gpupool::cli;

namespace {

struct Result {
  int code;
  std::string out, err;
};

Result run_cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  Io io{out, err, false};
  int code = run(args, io);
  return {code, out.str(), err.str()};
}

bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == s.size() - 1; }

}  // namespace

TEST_CASE("parser: long, short, inline and repeated flags, positionals after --") {
  Parser p("gpupool", {FlagSpec{"namespace", 'n', "NS", "", false}});
  CommandSpec spec{"submit mpi", "", "CMD", "",
                   {FlagSpec{"toleration", 0, "T", "", true}, FlagSpec{"gpus", 0, "N", "", false},
                    FlagSpec{"tensorboard", 0, "", "", false}},
                   0, -1};
  auto a = p.parse(spec, {"--toleration", "ssd_node", "--toleration=gpu_node", "-n", "alice", "--gpus=2", "--tensorboard",
                          "--", "python", "--not-a-flag"});
  CHECK(a.all("toleration") == std::vector<std::string>{"ssd_node", "gpu_node"});
  CHECK(a.get("namespace") == "alice");
  CHECK(a.get("gpus") == "2");
  CHECK(a.has("tensorboard"));
  CHECK(a.positionals() == std::vector<std::string>{"python", "--not-a-flag"});
  CHECK(p.parse(spec, {"-nbob"}).get("namespace") == "bob");

  struct Bad {
    std::vector<std::string> args;
    const char* says;
  };
  for (const auto& bad : std::vector<Bad>{{{"--unknown"}, "unknown flag --unknown"},
                                          {{"--gpus"}, "needs a value"},
                                          {{"--gpus", "1", "--gpus", "2"}, "more than once"},
                                          {{"--tensorboard=maybe"}, "takes no value"}}) {
    CAPTURE(bad.says);
    try {
      (void)p.parse(spec, bad.args);
      FAIL("accepted");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find(bad.says) != std::string::npos);
    }
  }
}

TEST_CASE("every command has --help; bad usage exits 2 with one line") {
  for (const auto& c : commands()) {
    std::vector<std::string> args;
    std::istringstream words(c.spec.path);
    for (std::string w; words >> w;) args.push_back(w);
    args.push_back("--help");
    CAPTURE(c.spec.path);
    Result r = run_cli(args);
    CHECK(r.code == 0);
    CHECK(r.out.find("Usage:\n  gpupool " + c.spec.path) != std::string::npos);
    CHECK(r.err.empty());
  }
  struct Row {
    std::vector<std::string> args;
    int code;
    const char* says;
  };
  const std::vector<Row> rows = {
      {{"frobnicate"}, 2, "unknown command \"frobnicate\""},
      {{"submit"}, 2, "needs a subcommand"},
      {{"submit", "mpi", "--gpus", "two", "--name", "x", "--image", "i"}, 2, "--gpus: invalid value \"two\""},
      {{"submit", "mpi", "--name", "x", "--image", "i", "--toleration", "a=b:Sometimes"}, 2, "--toleration"},
      {{"submit", "mpi", "--image", "i"}, 2, "--name"},
      {{"submit", "mpi", "--name", "Bad_Name", "--image", "i"}, 2, "Bad_Name"},
      {{"get"}, 2, "needs NAME"},
      {{"get", "a", "b"}, 2, "takes 1 argument"},
      {{"get", "x", "-o", "xml"}, 2, "--output"},
      {{"taint", "node-1"}, 2, "needs"},
      {{"taint", "node-1", "key=value:Never"}, 2, "taint[0]"},
      {{"wait", "x", "--timeout", "soon"}, 2, "--timeout"},
      {{"wait", "x", "--for", "Dancing"}, 2, "--for"},
      {{"nodes", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, "/nonexistent/kubeconfig"},
  };
  for (const auto& row : rows) {
    std::string joined;
    for (const auto& a : row.args) joined += a + " ";
    CAPTURE(joined);
    Result r = run_cli(row.args);
    CHECK(r.code == row.code);
    CHECK(one_line(r.err));
    CHECK(r.err.rfind("error: ", 0) == 0);
    CHECK(r.err.find(row.says) != std::string::npos);
    CHECK(r.out.empty());
  }
}

TEST_CASE("no arguments prints the overview") {
  Result r = run_cli({});
  CHECK(r.code == 0);
  CHECK(r.out.find("submit mpi|tf|pytorch|job|deployment") != std::string::npos);
}
