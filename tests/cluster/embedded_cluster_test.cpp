// EmbeddedCluster: the profile, clock and state choices the command, Python and the tests share.
#include <doctest/doctest.h>

#include "gpupool/embedded_cluster.hpp"
#include "gpupool/error.hpp"
#include "kube/temp_dir.hpp"

#include <chrono>

using namespace gpupool;
using namespace std::chrono_literals;

namespace {

constexpr const char* kSsdNode = "cn-beijing.192.168.3.230";

bool has_taint(const Cluster& cluster, const std::string& node, const std::string& key) {
  for (const auto& row : cluster.nodes().rows)
    if (row.node.name == node)
      for (const auto& t : row.node.taints)
        if (t.key == key) return true;
  return false;
}

}  // namespace

TEST_CASE("a cluster of its own: the topology's profile, a manual clock, stop() ends it") {
  EmbeddedCluster seed;
  CHECK(seed.profile().name == "generic");
  CHECK(seed.nodes().rows.size() == 6);
  CHECK_FALSE(seed.joined());
  const auto before = seed.server().now();
  seed.server().advance(90s);
  CHECK(seed.server().now() - before >= 90s);
  CHECK(seed.server().now() - before < 100s);  // manual: only advance() moves it

  CHECK(EmbeddedCluster({.topology = "iiis"}).profile().name == "iiis");
  CHECK(EmbeddedCluster({.topology = "iiis", .connect = {.profile = "generic"}}).profile().name == "generic");
  CHECK(EmbeddedCluster({.topology = "none"}).nodes().rows.empty());

  seed.stop();
  CHECK(seed.stopped());
  CHECK_THROWS_WITH_AS(seed.server(), doctest::Contains("stopped"), Error);
  CHECK_THROWS_AS(seed.url(), Error);
  seed.stop();  // idempotent
}

TEST_CASE("connect(user): the user's namespace, the cluster's profile unless another is asked for") {
  EmbeddedCluster iiis({.topology = "iiis", .server = {.users = {"zhangsan"}}});
  Cluster user = iiis.connect("zhangsan");
  CHECK(user.namespace_name() == "zhangsan");
  CHECK(user.profile().name == "iiis");
  CHECK(iiis.connect("zhangsan", "generic").profile().name == "generic");
  CHECK_THROWS_AS(user.taint(kSsdNode, {"x=y:NoSchedule"}), ApiError);  // nodes are not the user's
}

TEST_CASE("a shared state: served by one, joined by another, kept after the owner stops") {
  test::TempDir dir;
  EmbeddedCluster owner({.topology = "seed", .state = dir.path()});
  CHECK_FALSE(owner.joined());
  owner.taint(kSsdNode, {"ssd_node=invalid:NoSchedule"});
  {
    EmbeddedCluster other({.topology = "seed", .state = dir.path()});
    CHECK(other.joined());
    CHECK(other.url() == owner.url());
    CHECK(has_taint(other, kSsdNode, "ssd_node"));
    CHECK_THROWS_WITH_AS(other.server(), doctest::Contains("joined the one served by another process"), Error);
    CHECK_THROWS_AS(EmbeddedCluster({.topology = "seed", .state = dir.path(), .may_join = false}), Error);
  }
  owner.stop();
  EmbeddedCluster later({.topology = "seed", .state = dir.path(), .serve = false});  // as one command owns it
  CHECK_FALSE(later.joined());
  CHECK(has_taint(later, kSsdNode, "ssd_node"));
}
