// Cluster::list_all_namespaces (`gpupool list -A`): cluster-wide when the user may, else the
// namespaces it may read, judged by SelfSubjectRulesReview.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gpupool/cluster.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/submit_options.hpp"

using namespace gpupool;

namespace {

Workload job(const std::string& name) {
  SubmitOptions o;
  o.kind = "job";
  o.name = name;
  o.image = "busybox";
  o.command = "sleep 1";
  return to_workload(o);
}

std::vector<std::string> where(const std::vector<JobInfo>& jobs) {
  std::vector<std::string> out;
  for (const auto& j : jobs) out.push_back(j.namespace_ + "/" + j.name);
  return out;
}

}  // namespace

TEST_CASE("list -A: every namespace for the admin, the user's own for a user confined to it") {
  EmbeddedCluster admin{{.topology = "seed", .server = {.users = {"alice", "bob"}}}};
  Cluster alice = admin.connect("alice");
  Cluster bob = admin.connect("bob");
  alice.submit(job("train-a"));
  bob.submit(job("train-b"));
  admin.submit(job("train-d"));

  // The admin lists each kind cluster-wide: sorted by namespace, then name.
  CHECK(where(admin.list_all_namespaces()) ==
        std::vector<std::string>{"alice/train-a", "bob/train-b", "default/train-d"});
  const std::string text = jobs_to_text(admin.list_all_namespaces(), true);
  CHECK(text.rfind("NAMESPACE  NAME     STATUS", 0) == 0);
  CHECK(text.find("\nbob        train-b  ") != std::string::npos);

  // alice may not list cluster-wide nor list namespaces: the namespace she may read is hers.
  CHECK(where(alice.list_all_namespaces()) == std::vector<std::string>{"alice/train-a"});
  CHECK(where(alice.list()) == std::vector<std::string>{"alice/train-a"});
  // The one-namespace list is unchanged.
  CHECK(where(admin.list()) == std::vector<std::string>{"default/train-d"});
}
