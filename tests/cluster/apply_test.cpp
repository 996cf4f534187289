// Cluster::apply (`gpupool apply -f`): existing manifests, server-side apply, kubectl's words,
// the profile's checks, the quota pre-flight and the rollback of what an apply created.
#include <doctest/doctest.h>

#include <fstream>
#include <mutex>
#include <sstream>

#include "embedded/server_store.hpp"
#include "gpupool/cluster.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/error.hpp"
#include "gpupool/manifest.hpp"

using namespace gpupool;
namespace json = boost::json;

namespace {

std::vector<json::object> example(const char* file) {
  std::ifstream in(std::string(GPUPOOL_SOURCE_DIR) + "/examples/manifests/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return parse_manifests(text.str(), file);
}

struct Site {
  std::mutex mu;
  std::vector<std::string> warnings;
  // The iiis topology picks the iiis profile.
  EmbeddedCluster cluster{{.topology = "iiis", .connect = {.logger = [this](LogLevel l, const std::string& m) {
                                                 std::lock_guard lk(mu);
                                                 if (l == LogLevel::warning) warnings.push_back(m);
                                               }}}};
  EmbeddedServer& server = cluster.server();
  std::size_t count(const char* group, const char* resource) {
    return embedded::store_of(server)
        .list(embedded::store_of(server).type(group, resource), "default", {})
        .items.size();
  }
};

}  // namespace

TEST_CASE("apply: the guide's manifests created, then unchanged, then configured; a dry run stores nothing") {
  Site site;
  auto objects = example("nfs-pvc-example.yaml");
  for (auto& o : example("ubuntu-tf-example.yaml")) objects.push_back(o);

  ApplyResult dry = site.cluster.apply(objects, /*dry_run=*/true);
  CHECK(dry.lines == std::vector<std::string>{"persistentvolumeclaim/my-pvc created (server dry run)",
                                              "deployment.apps/my-first-ubuntu-tf created (server dry run)"});
  CHECK(site.count("apps", "deployments") == 0);

  ApplyResult first = site.cluster.apply(objects);
  CHECK(first.lines ==
        std::vector<std::string>{"persistentvolumeclaim/my-pvc created", "deployment.apps/my-first-ubuntu-tf created"});
  // The catalog's shorthand went out as the full reference.
  const auto d = embedded::store_of(site.server)
                     .get(embedded::store_of(site.server).type("apps", "deployments"), "default", "my-first-ubuntu-tf");
  CHECK(d.at("spec").at("template").at("spec").at("containers").at(0).at("image") ==
        "harbor.iiis.co/library/ubuntu-tensorflow:2.3.0");
  CHECK(site.cluster.apply(objects).lines == std::vector<std::string>{"persistentvolumeclaim/my-pvc unchanged",
                                                                      "deployment.apps/my-first-ubuntu-tf unchanged"});
  objects[1]["spec"].as_object()["replicas"] = 2;
  CHECK(site.cluster.apply(objects).lines == std::vector<std::string>{"persistentvolumeclaim/my-pvc unchanged",
                                                                      "deployment.apps/my-first-ubuntu-tf configured"});
  CHECK(site.cluster.apply(objects, true).lines.back() ==
        "deployment.apps/my-first-ubuntu-tf unchanged (server dry run)");
}

TEST_CASE("apply: the profile's checks refuse before anything is sent") {
  Site site;
  auto deployment = example("ubuntu-tf-example.yaml");
  auto& container = deployment[0]["spec"]
                        .as_object()["template"]
                        .as_object()["spec"]
                        .as_object()["containers"]
                        .as_array()[0]
                        .as_object();

  SUBCASE("another site's GPU resource") {
    auto& limits = container["resources"].as_object()["limits"].as_object();
    limits.erase("virtaitech.com/gpu");
    limits["nvidia.com/gpu"] = 1;
    try {
      site.cluster.apply(deployment);
      FAIL("applied");
    } catch (const ValidationError& e) {
      CHECK(e.field() == "spec.template.spec.containers[0].resources.limits");
      CHECK(e.value() == "nvidia.com/gpu");
      CHECK(e.rule() == "this cluster's GPUs are \"virtaitech.com/gpu\" (profile iiis); ask for that resource");
    }
  }
  SUBCASE("a catalogued image with a tag the catalog lacks") {
    container["image"] = "ubuntu-tensorflow:9.9";
    CHECK_THROWS_AS(site.cluster.apply(deployment), ValidationError);
  }
  SUBCASE("another namespace") {
    deployment[0]["metadata"].as_object()["namespace"] = "zhangsan";
    CHECK_THROWS_WITH_AS(
        site.cluster.apply(deployment),
        "metadata.namespace: invalid value \"zhangsan\": deployment/my-first-ubuntu-tf is for namespace "
        "\"zhangsan\", this connection works in \"default\"; pass -n zhangsan to apply it there",
        ValidationError);
  }
  SUBCASE("the guide's quota wants limits the manifest lacks") {
    container["resources"].as_object().erase("limits");
    embedded::store_of(site.server)
        .create(embedded::store_of(site.server).type("", "resourcequotas"), "default",
                json::parse(R"({"metadata":{"name":"team"},"spec":{"hard":{"limits.cpu":"8","limits.memory":"32Gi"}}})")
                    .as_object());
    CHECK_THROWS_AS(site.cluster.apply(deployment), ApiError);
  }
  CHECK(site.count("apps", "deployments") == 0);

  SUBCASE("a typo of a catalog name is applied as written, with a warning") {
    container["image"] = "ubuntu-tensorflw:2.3.0";
    site.cluster.apply(deployment, true);
    REQUIRE(site.warnings.size() == 1);
    CHECK(site.warnings[0] ==
          "spec.template.spec.containers[0].image: \"ubuntu-tensorflw:2.3.0\" is not in the iiis "
          "profile's catalog; did you mean ubuntu-tensorflow?");
  }
}

TEST_CASE("apply: when an object fails, what this apply created is deleted and the server's error raised") {
  Site site;
  auto objects = example("nfs-pvc-example.yaml");
  objects.push_back(
      json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}})").as_object());
  try {
    site.cluster.apply(objects);
    FAIL("applied");
  } catch (const ApiError& e) {
    CHECK(e.code() == 422);
    CHECK(std::string(e.what()).find("ConfigMap \"Bad_Name\" is invalid: metadata.name") != std::string::npos);
  }
  CHECK(site.count("", "persistentvolumeclaims") == 0);
  CHECK(site.count("", "configmaps") <= 1);  // kube-root-ca.crt at most: no Bad_Name
}

TEST_CASE("apply: a GPU container without the site's GPU env is applied, with a warning naming what is missing") {
  Site site;
  auto deployment = example("ubuntu-tf-example.yaml");
  site.cluster.apply(deployment, true);
  CHECK(site.warnings.empty());  // the example sets all of it
  auto& env = deployment[0]["spec"]
                  .as_object()["template"]
                  .as_object()["spec"]
                  .as_object()["containers"]
                  .as_array()[0]
                  .as_object()["env"]
                  .as_array();
  env.erase(env.begin(), env.begin() + 2);  // ORION_GMEM, ORION_RATIO
  site.cluster.apply(deployment, true);
  REQUIRE(site.warnings.size() == 1);
  CHECK(site.warnings[0] ==
        "spec.template.spec.containers[0]: asks for virtaitech.com/gpu but lacks ORION_GMEM, "
        "ORION_RATIO, which the iiis profile sets for GPU containers");
}
