// `gpupool taint` against kubectl taint itself (issue #14 item 7): the same changes on two nodes of
// one server, kubectl on one and gpupool on the other, print the same lines and exit alike.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gpupool/embedded.hpp"
#include "run_cli.hpp"

namespace {

using Run = gpupool::cli::testing::Result;
Run run(const std::string& cmd) { return gpupool::cli::testing::run_shell(cmd); }

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("gpupool taint prints what kubectl taint prints, refusals included") {
  gpupool::EmbeddedOptions eo;
  eo.topology = "seed";
  gpupool::EmbeddedServer server(eo);
  const std::string kc = server.admin_kubeconfig();
  const std::string a = "cn-beijing.192.168.3.228", b = "cn-beijing.192.168.3.229";
  const std::vector<std::string> steps = {
      "x=1:NoSchedule",
      "x=2:NoSchedule",
      "x=2:NoSchedule --overwrite",
      "x=3:NoExecute",
      "x:NoExecute-",
      "x-",
      "x-",
      "x:NoSchedule-",
      "y=1:PreferNoSchedule z=1:NoSchedule",
      "y- w=1:NoSchedule",
      "w=2:NoSchedule --overwrite",
  };
  for (const auto& step : steps) {
    CAPTURE(step);
    Run want = run("/usr/bin/kubectl --kubeconfig '" + kc + "' taint node " + a + " " + step);
    Run got = run("'" GPUPOOL_CLI "' --kubeconfig '" + kc + "' taint " + b + " " + step);
    CHECK(got.code == want.code);
    CHECK(got.out == replace_all(want.out, a, b));
  }
  // And the nodes end with the same taints.
  const std::string taints = " -o jsonpath='{range .spec.taints[*]}{.key}={.value}:{.effect} {end}'";
  CHECK(run("/usr/bin/kubectl --kubeconfig '" + kc + "' get node " + a + taints).out ==
        run("/usr/bin/kubectl --kubeconfig '" + kc + "' get node " + b + taints).out);
}
