// The SSD staging flags of `gpupool submit`: --stage-in (repeatable), --stage-out (alone or with
// --stage-in), --stage-out-grace, and the client-side refusal of a read-only stage-out target.
#include <doctest/doctest.h>

#include "run_cli.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using gpupool::cli::testing::one_line;
using gpupool::cli::testing::run_cli;
using gpupool::cli::testing::run_shell;

namespace {

std::vector<std::string> submit(std::vector<std::string> flags) {
  std::vector<std::string> args = {"--profile", "iiis", "submit",   "job",   "--name",           "staged", "--image",
                                   "busybox",   "-n",   "zhangsan", "--ssd", "--dry-run=client", "-o",     "yaml"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", "python", "train.py"});
  return args;
}

}  // namespace

TEST_CASE("submit: --stage-in is repeatable, --stage-out works alone, --stage-out-grace sets the grace period") {
  auto both =
      run_cli(submit({"--data", "data:/pvc", "--stage-in", "/pvc/a:/mnt/data1/a", "--stage-in", "/pvc/b:/mnt/data1/b",
                      "--stage-out", "/mnt/data1/out:/pvc/out", "--stage-out-grace", "600"}));
  REQUIRE(both.code == 0);
  CHECK(both.out.find("'/pvc/a/' '/mnt/data1/a/'") != std::string::npos);  // both inputs in the init container
  CHECK(both.out.find("'/pvc/b/' '/mnt/data1/b/'") != std::string::npos);
  CHECK(both.out.find("terminationGracePeriodSeconds: 600\n") != std::string::npos);
  CHECK(both.out.find("- gpupool-staging\n") != std::string::npos);

  auto out_only = run_cli(submit({"--data", "data:/pvc", "--stage-out", "/mnt/data1/out:/pvc/out"}));
  REQUIRE(out_only.code == 0);
  CHECK(out_only.out.find("initContainers") == std::string::npos);
  CHECK(out_only.out.find("terminationGracePeriodSeconds: 300\n") != std::string::npos);
  CHECK(out_only.out.find("copying results back from %s to %s") != std::string::npos);

  auto grace_alone = run_cli(submit({"--stage-out-grace", "600"}));
  CHECK(grace_alone.code == 2);
  CHECK(grace_alone.err ==
        "error: --stage-out-grace: invalid value \"600\": applies to copying results back: give --stage-out "
        "RESULTS:TARGET too\n");
  auto bad_second =
      run_cli(submit({"--data", "data:/pvc", "--stage-in", "/pvc/a:/mnt/data1/a", "--stage-in", "/pvc/b"}));
  CHECK(bad_second.code == 2);
  CHECK(bad_second.err.rfind("error: --stage-in[1]: invalid value \"/pvc/b\": expected SOURCE:CACHE", 0) == 0);
}

TEST_CASE("submit: a stage-out target on a read-only mount is refused client-side, naming --stage-out and the mount") {
  struct Row {
    std::vector<std::string> flags;
    std::string err;
  };
  const Row rows[] = {
      {{"--data", "results:/results:ro", "--stage-out", "/mnt/data1/out:/results/run-1"},
       "error: --stage-out: invalid value \"/results/run-1\": is on the read-only mount /results (volume \"results\", "
       "readOnly); choose a path on a writable mount\n"},
      {{"--data-dir", "/srv/results:/results:ro", "--stage-out", "/mnt/data1/out:/results/run-1"},
       "error: --stage-out: invalid value \"/results/run-1\": is on the read-only mount /results (volume "
       "\"data-dir-0\", readOnly); choose a path on a writable mount\n"},
      // The profile's NFS datasets are mounted read-only; the user's NFS directory is writable.
      {{"--nfs", "--stage-out", "/mnt/data1/out:/share/datasets/run-1"},
       "error: --stage-out: invalid value \"/share/datasets/run-1\": is on the read-only mount /share/datasets "
       "(volume \"nfs-share\", readOnly); choose a path on a writable mount\n"},
      {{"--nfs", "--stage-in", "/share/datasets/a:/mnt/data1/a", "--stage-in", "/share/datasets/b:/share/datasets/c"},
       "error: --stage-in[1]: invalid value \"/share/datasets/c\": is on the read-only mount /share/datasets (volume "
       "\"nfs-share\", readOnly); choose a path on a writable mount\n"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.err);
    auto res = run_cli(submit(r.flags));
    CHECK(res.code == 2);
    CHECK(res.out.empty());  // nothing rendered
    CHECK(one_line(res.err));
    CHECK(res.err == r.err);
  }
  CHECK(run_cli(submit({"--nfs", "--stage-out", "/mnt/data1/out:/share/zhangsan/run-1"})).code == 0);
}

TEST_CASE("submit to a cluster: the read-only stage-out target is refused before anything is created") {
  const std::filesystem::path state =
      std::filesystem::temp_directory_path() / ("gpupool-staging-cli-" + std::to_string(::getpid()));
  std::filesystem::create_directories(state);
  const std::string gp = "GPUPOOL_STATE_DIR='" + state.string() + "' '" GPUPOOL_CLI "' --embedded seed --profile iiis ";
  auto r = run_shell(gp +
                     "submit job --name staged --image busybox --ssd --data results:/results:ro "
                     "--stage-out /mnt/data1/out:/results/run-1 -- python train.py");
  CHECK(r.code == 2);
  CHECK(r.out ==
        "error: --stage-out: invalid value \"/results/run-1\": is on the read-only mount /results (volume \"results\", "
        "readOnly); choose a path on a writable mount\n");
  auto list = run_shell(gp + "list");
  CHECK(list.code == 0);
  CHECK(list.out.find("staged") == std::string::npos);
  std::filesystem::remove_all(state);
}
