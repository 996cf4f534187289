// The umbrella header alone is enough for a small program: it is the only gpupool include here.
#include <gpupool/gpupool.hpp>

#include <doctest/doctest.h>

#include <chrono>

TEST_CASE("gpupool/gpupool.hpp alone declares the public API a small use needs") {
  using namespace std::chrono_literals;
  gpupool::SubmitOptions job;
  job.kind = "mpi";
  job.name = "mpi-dist";
  job.image = "horovod:0.13.11";
  job.gpus = 1;
  job.tolerations = {"ssd_node"};
  const gpupool::Submission submission =
      gpupool::render(gpupool::to_workload(job), gpupool::Profile::builtin("generic"));
  CHECK(gpupool::to_yaml(submission.objects).find("ssd_node") != std::string::npos);

  const auto changes = gpupool::parse_taint_changes({"ssd_node=invalid:NoSchedule", "gpu_node-"});
  REQUIRE(changes.size() == 2);
  CHECK(changes[1].remove);
  CHECK(gpupool::human_duration(2min + 3s) == "2m3s");
  CHECK(gpupool::parse_log_level("info") == gpupool::LogLevel::info);
  CHECK_THROWS_AS(gpupool::parse_log_level("loud"), gpupool::ValidationError);
  CHECK(gpupool::topology_profile("iiis") == "iiis");
  CHECK(gpupool::topology_profile("seed").empty());

  gpupool::EmbeddedClusterOptions options;  // what EmbeddedCluster starts with by default
  CHECK(options.topology == "seed");
  CHECK_FALSE(options.state.has_value());
  CHECK(!gpupool::version().empty());
}
