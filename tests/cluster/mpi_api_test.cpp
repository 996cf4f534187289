// Which MPIJob API a submission uses: Auto asks the cluster (discovery); an explicit V1 / V2Beta1
// is kept even when the cluster serves the other one.
#include <doctest/doctest.h>

#include "gpupool/cluster.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/submit_options.hpp"

#include <boost/json.hpp>

using namespace gpupool;

namespace {

Workload mpi_job(const std::string& mpi_api) {
  SubmitOptions o;
  o.kind = "mpi";
  o.name = "mpi-api";
  o.image = "busybox";
  o.mpi_api = mpi_api;
  o.command = "echo hi";
  return to_workload(o);
}

std::string api_version_rendered(const Cluster& cluster, const Workload& w) {
  return std::string(cluster.render(w).workload().at("apiVersion").as_string());
}

}  // namespace

TEST_CASE("--mpi-api: empty or auto means what the cluster serves; v1 / v2beta1 are kept") {
  CHECK(mpi_job("").mpi_api == MpiJobApi::Auto);
  CHECK(mpi_job("auto").mpi_api == MpiJobApi::Auto);
  CHECK(mpi_job("v1").mpi_api == MpiJobApi::V1);
  CHECK(mpi_job("kubeflow.org/v2beta1").mpi_api == MpiJobApi::V2Beta1);

  for (std::string served : {"v1", "v2beta1"}) {
    CAPTURE(served);
    EmbeddedCluster cluster({.topology = "seed", .server = {.mpijob_version = served}});
    CHECK(api_version_rendered(cluster, mpi_job("")) == "kubeflow.org/" + served);
    CHECK(api_version_rendered(cluster, mpi_job("v1")) == "kubeflow.org/v1");
    CHECK(api_version_rendered(cluster, mpi_job("v2beta1")) == "kubeflow.org/v2beta1");
    // Without asking the cluster, Auto renders v1.
    CHECK(std::string(cluster.render(mpi_job(""), false).workload().at("apiVersion").as_string()) == "kubeflow.org/v1");
    // Auto submits what is served; the stored object is of that version.
    SubmitResult r = cluster.submit(mpi_job(""));
    CHECK(r.created.back() == "mpijob.kubeflow.org/mpi-api");
    CHECK(std::string(r.submission.workload().at("apiVersion").as_string()) == "kubeflow.org/" + served);
  }
}

TEST_CASE("an MPIJob version the cluster does not serve: the error names the version it serves, nothing created") {
  for (std::string served : {"v1", "v2beta1"}) {
    CAPTURE(served);
    const std::string other = served == "v1" ? "v2beta1" : "v1";
    EmbeddedCluster cluster({.topology = "seed", .server = {.mpijob_version = served}});
    try {
      (void)cluster.submit(mpi_job(other));
      FAIL("submitted");
    } catch (const ApiError& e) {
      CHECK(e.code() == 404);
      const std::string msg = e.what();
      CHECK(msg.find("the cluster does not serve MPIJob in kubeflow.org/" + other +
                     "; it serves MPIJob in kubeflow.org/" + served + "; submit with --mpi-api " + served) !=
            std::string::npos);
      CHECK(msg.find("could not find the requested resource") == std::string::npos);
    }
    CHECK(cluster.list().empty());
  }
}
