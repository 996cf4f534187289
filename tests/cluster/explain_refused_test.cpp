// explain of a job whose pods admission refuses: the controller's FailedCreate reason, not
// "no pods to explain" (issue #13).
#include <doctest/doctest.h>

#include "seed_cluster.hpp"

#include "embedded/server_store.hpp"
#include "gpupool/cluster.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/submit_options.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

using namespace gpupool;
namespace json = boost::json;

namespace {

using testing::Seed;

/// What a user types for a job (the command's flags).
SubmitOptions job_options(const char* kind, const char* name, const char* command) {
  SubmitOptions o;
  o.kind = kind;
  o.name = name;
  o.image = "busybox";
  o.command = command;
  return o;
}

}  // namespace

TEST_CASE("explain: a Deployment and a Job whose pods a quota refuses show the FailedCreate reason") {
  Seed seed;
  EmbeddedServer& server = seed.server;
  Cluster& admin = seed.admin;
  // The guide's quota: limits.cpu and limits.memory, so pods without limits are refused.
  embedded::store_of(server).create(
      embedded::store_of(server).type("", "resourcequotas"), "default",
      json::parse(R"({"metadata":{"name":"team"},"spec":{"hard":{"limits.cpu":"8","limits.memory":"32Gi"}}})")
          .as_object());
  for (const char* kind : {"job", "deployment"}) {
    CAPTURE(kind);
    SubmitOptions o;
    o.kind = kind;
    o.name = std::string("no-limits-") + kind;
    o.image = "busybox";
    o.command = "sleep 1";
    // Made without gpupool's pre-flight (which refuses it, see below), as kubectl apply would.
    for (const auto& object : admin.render(to_workload(o)).objects) {
      const std::string kind_name(object.at("kind").as_string());
      const ResourceRef ref = kind_name == "Job" ? ResourceRef{"batch", "v1", "jobs", "Job", true}
                                                 : ResourceRef{"apps", "v1", "deployments", "Deployment", true};
      admin.client().create(ref, "default", object);
    }
    const Explanation e = admin.explain(o.name);
    const std::string text = e.to_text();
    CAPTURE(text);
    CHECK(text.find("no pods to explain") == std::string::npos);
    CHECK(text.find("no pods created") != std::string::npos);
    CHECK(text.find("is forbidden: failed quota: team: must specify limits.cpu for: ") != std::string::npos);
  }
}

TEST_CASE("submit under the guide's quota: refused before anything is created, or created with limits") {
  Seed seed;
  EmbeddedServer& server = seed.server;
  Cluster& admin = seed.admin;
  auto& store = embedded::store_of(server);
  const auto& quotas = store.type("", "resourcequotas");
  store.create(quotas, "default",
               json::parse(R"({"metadata":{"name":"team"},"spec":{"hard":{"limits.cpu":"8","limits.memory":"32Gi",
                               "requests.nvidia.com/gpu":"2"}}})")
                   .as_object());
  auto count = [&](const char* group, const char* resource) {
    return embedded::store_of(server).list(store.type(group, resource), "default", {}).items.size();
  };
  SubmitOptions o;
  o.kind = "deployment";
  o.name = "train";
  o.image = "busybox";
  o.command = "sleep 1000";
  o.tolerations = {"all"};

  SUBCASE("no limits: the quota's own reason, nothing created") {
    try {
      admin.submit(to_workload(o));
      FAIL("submitted");
    } catch (const ApiError& e) {
      CHECK(e.code() == 403);
      CHECK(std::string(e.status_message()) ==
            "namespace \"default\" would refuse this job's pods, so nothing was created: failed quota: team: must "
            "specify limits.cpu for: main; limits.memory for: main");
    }
    CHECK(count("apps", "deployments") == 0);
    CHECK(count("", "pods") == 0);
  }
  SUBCASE("a JobSet's pods, in its replicatedJobs, are judged too") {
    o.kind = "jobset";
    try {
      admin.submit(to_workload(o));
      FAIL("submitted");
    } catch (const ApiError& e) {
      CHECK(e.code() == 403);
      CHECK(std::string(e.status_message()).find("failed quota: team: must specify limits.cpu for: node") !=
            std::string::npos);
    }
    CHECK(count("jobset.x-k8s.io", "jobsets") == 0);
  }
  SUBCASE("with limits: created, and its pods run") {
    o.cpu = "2";
    o.memory = "4Gi";
    o.cpu_limit = "2";
    o.memory_limit = "4Gi";
    admin.submit(to_workload(o));
    CHECK(count("apps", "deployments") == 1);
    CHECK(count("", "pods") == 1);
  }
  SUBCASE("a profile whose limits default to the requests (iiis) needs only --cpu and --memory") {
    REQUIRE(Profile::builtin("iiis").limits_from_requests);
    Cluster site = Cluster::connect({.kubeconfig = server.admin_kubeconfig(), .profile = "iiis"});
    o.cpu = "2";
    o.memory = "4Gi";
    site.submit(to_workload(o));
    const auto pods = embedded::store_of(server).list(store.type("", "pods"), "default", {}).items;
    REQUIRE(pods.size() == 1);
    const auto& limits = pods[0]->at("spec").at("containers").at(0).at("resources").at("limits");
    CHECK(limits.at("cpu") == "2");
    CHECK(limits.at("memory") == "4Gi");
  }
  SUBCASE("one pod: the dry run's verdict is the quota's, so the quotas are not listed again") {
    std::vector<std::string> requests;
    std::mutex mu;
    Cluster counted = Cluster::connect(
        {.kubeconfig = server.admin_kubeconfig(), .logger = [&](LogLevel level, const std::string& line) {
           std::lock_guard lock(mu);
           if (level == LogLevel::debug) requests.push_back(line);
         }});
    auto quota_lists = [&] {
      std::lock_guard lock(mu);
      return std::count_if(requests.begin(), requests.end(), [](const std::string& l) {
        return l.rfind("GET /api/v1/namespaces/default/resourcequotas", 0) == 0;
      });
    };
    o.cpu_limit = "1";
    o.memory_limit = "1Gi";
    o.gpus = 3;
    try {
      counted.submit(to_workload(o));
      FAIL("submitted");
    } catch (const ApiError& e) {
      CHECK(e.code() == 403);
      CHECK(std::string(e.status_message()) ==
            "namespace \"default\" would refuse this job's pods, so nothing was created: exceeded quota: team, "
            "requested: requests.nvidia.com/gpu=3, used: requests.nvidia.com/gpu=0, limited: "
            "requests.nvidia.com/gpu=2");
    }
    CHECK(count("apps", "deployments") == 0);
    o.gpus = 2;
    counted.submit(to_workload(o));
    CHECK(count("apps", "deployments") == 1);
    {
      std::lock_guard lock(mu);
      CHECK(!requests.empty());  // the debug lines are what is counted
    }
    CHECK(quota_lists() == 0);
    // Two replicas: their sum is checked against the quota's status, which needs the list.
    o.name = "train-2";
    o.gpus = 0;
    o.workers = 2;
    counted.submit(to_workload(o));
    CHECK(quota_lists() == 1);
  }
  SUBCASE("each pod fits, all together do not: refused with what the job asks") {
    o.kind = "job";
    o.workers = 3;
    o.gpus = 1;
    o.cpu_limit = "1";
    o.memory_limit = "1Gi";
    try {
      admin.submit(to_workload(o));
      FAIL("submitted");
    } catch (const ApiError& e) {
      CHECK(std::string(e.status_message()) ==
            "namespace \"default\" would refuse this job's pods, so nothing was created: exceeded quota: team, "
            "requested (all 3 of its pods): requests.nvidia.com/gpu=3, used: requests.nvidia.com/gpu=0, limited: "
            "requests.nvidia.com/gpu=2");
    }
    CHECK(count("batch", "jobs") == 0);
  }
}

TEST_CASE("get: a job's pods are the ones it owns, not every pod its labels match; PRIORITY from its pods") {
  Seed seed;
  EmbeddedServer& server = seed.server;
  Cluster& admin = seed.admin;
  auto& store = embedded::store_of(server);
  store.create(store.type("scheduling.k8s.io", "priorityclasses"), "",
               json::parse(R"({"metadata":{"name":"high"},"value":1000})").as_object());
  // The guide's Deployments, made with kubectl apply: the same labels and selector on both.
  for (const char* name : {"my-first-ubuntu-tf", "my-second-ubuntu-tf"}) {
    json::object d =
        json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"name":"my-ubuntu-tf"}},
      "spec":{"replicas":1,"selector":{"matchLabels":{"name":"my-ubuntu-tf"}},
              "template":{"metadata":{"labels":{"name":"my-ubuntu-tf"}},
                          "spec":{"priorityClassName":"high","tolerations":[{"operator":"Exists"}],
                                  "containers":[{"name":"main","image":"busybox"}]}}}})")
            .as_object();
    d["metadata"].as_object()["name"] = name;
    admin.client().create(ResourceRef{"apps", "v1", "deployments", "Deployment", true}, "default", d);
  }
  REQUIRE(embedded::store_of(server).list(store.type("", "pods"), "default", {}).items.size() == 2);
  const JobInfo first = admin.get("my-first-ubuntu-tf");
  REQUIRE(first.instances.size() == 1);
  CHECK(first.instances[0].name.rfind("my-first-ubuntu-tf-", 0) == 0);
  CHECK(first.priority == "high");
  const JobInfo second = admin.get("my-second-ubuntu-tf");
  REQUIRE(second.instances.size() == 1);
  CHECK(second.instances[0].name.rfind("my-second-ubuntu-tf-", 0) == 0);
}

TEST_CASE("logs: a pending job says why in one error; -i must name one of the job's pods") {
  Seed seed;
  Cluster& admin = seed.admin;
  SubmitOptions o = job_options("job", "pending", "echo hi");
  o.selectors = {"no-such-label=x"};  // no node has it: the pod stays Pending
  admin.submit(to_workload(o));
  const std::string pod = admin.get("pending").instances.at(0).name;
  auto collect = [](const std::string&) { return true; };
  try {
    admin.logs("pending", {}, collect);
    FAIL("logs of a pending job");
  } catch (const Error& e) {
    const std::string what = e.what();
    CAPTURE(what);
    CHECK(what.rfind("job \"pending\" is PENDING: pod \"" + pod +
                         "\" has not started, so it has no log yet: FailedScheduling: 0/6 nodes are "
                         "available: ",
                     0) == 0);
    CHECK(what.find("didn't match Pod's node affinity/selector") != std::string::npos);
  }
  JobLogOptions other;
  other.instance = "someone-elses-pod";
  CHECK_THROWS_WITH_AS(
      admin.logs("pending", other, collect),
      ("pod \"someone-elses-pod\" is not an instance of job \"pending\"; its instances: " + pod).c_str(), Error);
}

TEST_CASE("one job name, one kind: a name taken by another kind is refused before anything is created") {
  Seed seed;
  EmbeddedServer& server = seed.server;
  Cluster& admin = seed.admin;
  SubmitOptions o = job_options("deployment", "dup", "sleep 1000");
  admin.submit(to_workload(o));
  o.kind = "job";
  try {
    admin.submit(to_workload(o));
    FAIL("a second job named dup");
  } catch (const ApiError& e) {
    CHECK(e.code() == 409);
    CHECK(e.status_message() ==
          "a job named \"dup\" already exists in namespace \"default\" (deployment.apps/dup); "
          "delete it first (gpupool delete dup) or choose another --name");
  }
  auto& store = embedded::store_of(server);
  CHECK(embedded::store_of(server).list(store.type("batch", "jobs"), "default", {}).items.empty());
  // Made by another tool, the name held by two kinds: delete says which, and deletes neither.
  admin.client().create(ResourceRef{"batch", "v1", "jobs", "Job", true}, "default",
                        admin.render(to_workload(o)).workload());
  CHECK_THROWS_WITH_AS(
      admin.delete_job("dup"),
      "\"dup\" names 2 workloads in namespace \"default\": job.batch/dup, deployment.apps/dup; delete the "
      "one you mean with kubectl delete KIND/dup",
      Error);
  CHECK(embedded::store_of(server).list(store.type("batch", "jobs"), "default", {}).items.size() == 1);
  CHECK(embedded::store_of(server).list(store.type("apps", "deployments"), "default", {}).items.size() == 1);
}
