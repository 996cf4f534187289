// A submission that fails half-way leaves nothing behind (issue 8 item 1), with the embedded API
// server injecting faults into the creates and into the rollback's own deletes, and a later object
// of the submission refused for good — as a ResourceQuota refuses it ("exceeded quota", 403).
#include <doctest/doctest.h>

#include "embedded/server_store.hpp"
#include "gpupool/client.hpp"
#include "gpupool/cluster.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/error.hpp"
#include "gpupool/submit_options.hpp"

#include <boost/json.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace gpupool;
namespace json = boost::json;

namespace {

const ResourceRef kPvcs{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true};
const ResourceRef kJobs{"batch", "v1", "jobs", "Job", true};
const ResourceRef kDeployments{"apps", "v1", "deployments", "Deployment", true};
const ResourceRef kServices{"", "v1", "services", "Service", true};
const ResourceRef kReplicaSets{"apps", "v1", "replicasets", "ReplicaSet", true};
const ResourceRef kPods{"", "v1", "pods", "Pod", true};

/// A job with `pvcs` new PVCs and a TensorBoard: PVCs, Job, Deployment, Service, in this order.
Workload job_with_extras(const std::string& name, int pvcs) {
  SubmitOptions o;
  o.kind = "job";
  o.name = name;
  o.image = "busybox";
  o.command = "echo hello";
  o.tensorboard = true;
  for (int i = 0; i < pvcs; ++i)
    o.pvc_create.push_back(name + "-data" + std::to_string(i) + ":standard:1Gi:/data" + std::to_string(i));
  return to_workload(o);
}

/// Refuses every Service create as the ResourceQuota admission plugin refuses an object over a
/// `services: 0` quota (k8s.io/apiserver/pkg/admission/plugin/resourcequota: 403 Forbidden,
/// "exceeded quota"): the last object of a job_with_extras submission fails for good.
void refuse_services(EmbeddedServer& server) {
  embedded::store_of(server).add_admission([](embedded::AdmissionRequest& r) {
    if (r.operation != embedded::AdmissionRequest::Operation::Create || !r.type || r.type->resource != "services" ||
        !r.object)
      return;
    const std::string name(r.object->at("metadata").at("name").as_string());
    throw embedded::StatusError(403, "Forbidden",
                                "services \"" + name +
                                    "\" is forbidden: exceeded quota: no-services, requested: services=1, used: "
                                    "services=0, limited: services=0",
                                name, "", "services");
  });
}

/// Every object of the kinds a submission (or its controllers) stores, in `ns`, by name.
std::vector<std::string> stored_objects(const Client& c, const std::string& ns) {
  std::vector<std::string> out;
  for (const ResourceRef* ref : {&kPvcs, &kJobs, &kDeployments, &kServices, &kReplicaSets, &kPods})
    for (const auto& item : c.list_all(*ref, ns))
      out.push_back(ref->resource + "/" + std::string(item.at("metadata").at("name").as_string()));
  return out;
}

FaultRule twenty_percent() {
  return FaultRule{.too_many_requests = 0.05,
                   .internal_error = 0.05,
                   .unavailable = 0.05,
                   .connection_reset = 0.025,
                   .retry_after_seconds = 1,
                   .lost_response = 0.025};
}

struct Setup {
  EmbeddedCluster embedded;
  EmbeddedServer& server = embedded.server();
  Cluster cluster = embedded.connect("alice");
  Client admin = [&] {
    KubeConfigOptions ko;
    ko.path = embedded.admin_kubeconfig();
    return Client(load_kubeconfig(ko));
  }();
  static RetryPolicy without_sleeps(RetryPolicy retry) {
    retry.sleep = [](std::chrono::milliseconds) {};  // waits recorded nowhere: the test runs at the server's speed
    return retry;
  }
  explicit Setup(RetryPolicy retry = {})
      : embedded({.topology = "seed", .connect = {.retry = without_sleeps(retry)}, .server = {.users = {"alice"}}}) {}
};

}  // namespace

TEST_CASE("100 half-done submissions under 20% faults: each raises the refusal and leaves nothing behind") {
  Setup s;
  refuse_services(s.server);
  FaultConfig faults;
  faults.seed = 20261123;
  faults.rules["*"] = twenty_percent();
  s.server.set_faults(faults);
  std::mt19937 rng(8);  // how many PVCs each submission creates first (0-2)

  constexpr int kRuns = 100;
  int refused = 0, other_errors = 0, succeeded = 0;
  std::size_t objects_before_refusal = 0;
  for (int i = 0; i < kRuns; ++i) {
    const int pvcs = static_cast<int>(rng() % 3);
    objects_before_refusal += static_cast<std::size_t>(pvcs) + 2;  // PVCs, Job, Deployment
    try {
      s.cluster.submit(job_with_extras("half-" + std::to_string(i), pvcs));
      ++succeeded;
    } catch (const ApiError& e) {
      // The original refusal, unchanged: no rollback note (every delete got through in the end).
      const std::string what = e.what();
      CAPTURE(what);
      CHECK(e.code() == 403);
      CHECK(e.reason() == "Forbidden");
      CHECK(std::string(e.what()).find("services \"half-" + std::to_string(i) +
                                       "-tensorboard\" is forbidden: exceeded quota") != std::string::npos);
      CHECK(std::string(e.what()).find("could not be deleted") == std::string::npos);
      ++refused;
    } catch (const Error& e) {
      MESSAGE(e.what());
      ++other_errors;
    }
  }
  const FaultCounters injected = s.server.fault_counters();
  s.server.set_faults({});
  CHECK(succeeded == 0);
  CHECK(other_errors == 0);
  CHECK(refused == kRuns);
  const auto left = stored_objects(s.admin, "alice");
  CAPTURE(left.size());
  CHECK(left.empty());
  for (const auto& l : left) CAPTURE(l);
  // Faults really happened, of every kind, on the creates and on the rollbacks' deletes.
  CHECK(injected.too_many_requests > 0);
  CHECK(injected.internal_error > 0);
  CHECK(injected.unavailable > 0);
  CHECK(injected.connection_reset > 0);
  CHECK(injected.lost_response > 0);
  CHECK(injected.total() * 100 >= injected.requests * 15);
  std::printf(
      "rollback under faults: %d half-done submissions (%zu objects created then deleted), %llu requests, "
      "%llu faults injected (429: %llu, 500: %llu, 503: %llu, reset: %llu, lost response: %llu); %zu objects left\n",
      kRuns, objects_before_refusal, static_cast<unsigned long long>(injected.requests),
      static_cast<unsigned long long>(injected.total()), static_cast<unsigned long long>(injected.too_many_requests),
      static_cast<unsigned long long>(injected.internal_error), static_cast<unsigned long long>(injected.unavailable),
      static_cast<unsigned long long>(injected.connection_reset),
      static_cast<unsigned long long>(injected.lost_response), left.size());
}

TEST_CASE("the rollback's deletes are retried through faults; one that finally fails is named in the error") {
  Setup s;
  refuse_services(s.server);

  SUBCASE("retryable faults on 30% of deletes: retried, nothing left") {
    FaultConfig faults;
    faults.seed = 3;
    faults.rules["delete"] = FaultRule{.too_many_requests = 0.1,
                                       .internal_error = 0.05,
                                       .unavailable = 0.05,
                                       .connection_reset = 0.05,
                                       .lost_response = 0.05};
    s.server.set_faults(faults);
    for (int i = 0; i < 10; ++i) {
      try {
        s.cluster.submit(job_with_extras("retried-" + std::to_string(i), 2));
        FAIL("the Service was not refused");
      } catch (const ApiError& e) {
        const std::string what = e.what();
        CAPTURE(what);
        CHECK(e.code() == 403);
        CHECK(what.find("could not be deleted") == std::string::npos);
      }
    }
    const FaultCounters injected = s.server.fault_counters();
    s.server.set_faults({});
    MESSAGE("faults on the rollbacks' deletes: " << injected.total() << " of " << injected.requests << " requests");
    CHECK(injected.total() >= 5);       // 40 deletes at 30%
    CHECK(injected.lost_response > 0);  // a delete that went through, its answer lost: the retry's 404 is success
    CHECK(stored_objects(s.admin, "alice").empty());
  }

  SUBCASE("every delete fails (503 through all retries): the original error, naming what remains") {
    FaultConfig faults;
    faults.rules["delete"] = FaultRule{.unavailable = 1.0};
    s.server.set_faults(faults);
    try {
      s.cluster.submit(job_with_extras("stuck", 1));
      FAIL("the Service was not refused");
    } catch (const ApiError& e) {
      const std::string what = e.what();
      CAPTURE(what);
      CHECK(e.code() == 403);  // still the refusal that stopped the submission
      CHECK(e.reason() == "Forbidden");
      CHECK(what.find("services \"stuck-tensorboard\" is forbidden: exceeded quota") != std::string::npos);
      CHECK(what.find("3 of its objects could not be deleted") != std::string::npos);
      for (const char* named : {"persistentvolumeclaim/stuck-data0 in namespace \"alice\"",
                                "job.batch/stuck in namespace", "deployment.apps/stuck-tensorboard in namespace"})
        CHECK(what.find(named) != std::string::npos);
      CHECK(what.find("ServiceUnavailable") != std::string::npos);
    }
    s.server.set_faults({});
    // What the error names is what is really there.
    CHECK_NOTHROW(s.admin.get(kPvcs, "alice", "stuck-data0"));
    CHECK_NOTHROW(s.admin.get(kJobs, "alice", "stuck"));
    CHECK_NOTHROW(s.admin.get(kDeployments, "alice", "stuck-tensorboard"));
  }

  SUBCASE("a delete refused for good (403, not retried) is named too; the others are deleted") {
    embedded::store_of(s.server).add_admission([](embedded::AdmissionRequest& r) {
      if (r.operation == embedded::AdmissionRequest::Operation::Delete && r.type && r.type->resource == "jobs")
        throw embedded::StatusError(403, "Forbidden", "jobs.batch \"kept\" is forbidden: deletion denied by policy",
                                    "kept", "batch", "jobs");
    });
    try {
      s.cluster.submit(job_with_extras("kept", 1));
      FAIL("the Service was not refused");
    } catch (const ApiError& e) {
      const std::string what = e.what();
      CAPTURE(what);
      CHECK(e.code() == 403);
      CHECK(what.find("services \"kept-tensorboard\" is forbidden") != std::string::npos);
      CHECK(what.find("1 of its objects could not be deleted: job.batch/kept in namespace \"alice\"") !=
            std::string::npos);
      CHECK(what.find("deletion denied by policy") != std::string::npos);
    }
    // The claim's deletion was accepted; the Job's pod that stays still uses it, so the PVC
    // protection keeps it, being deleted, until that pod is gone (as on a real cluster).
    const auto claim = s.admin.get(kPvcs, "alice", "kept-data0");
    CHECK(claim.at("metadata").as_object().contains("deletionTimestamp"));
    CHECK_THROWS_AS(s.admin.get(kDeployments, "alice", "kept-tensorboard"), ApiError);
    CHECK_NOTHROW(s.admin.get(kJobs, "alice", "kept"));
  }
}

TEST_CASE("a create whose answer was lost is found by its submission id and deleted; someone else's is not") {
  RetryPolicy no_retries;
  no_retries.max_retries = 0;  // the lost answer is the create's last: submit fails not knowing
  Setup s(no_retries);
  FaultConfig faults;
  faults.rules["create"] = FaultRule{.lost_response = 1.0};
  s.server.set_faults(faults);
  try {
    s.cluster.submit(job_with_extras("lost", 1));
    FAIL("a lost answer was taken for success");
  } catch (const TransportError& e) {
    CHECK(std::string(e.what()).find("could not be deleted") == std::string::npos);
  }
  // The first create's answer was lost: the pre-flight's dry run, pipelined with the name's reads.
  // The transport sends what the connection did not answer once more, alone, on a fresh one; that
  // answer is lost too, and the speculative dry run is left to the pre-flight, whose own create (on
  // the kept-alive connection of the name's reads, then once more on a fresh one) loses its answers.
  CHECK(s.server.fault_counters().lost_response >= 1);
  CHECK(s.server.fault_counters().lost_response <= 4);
  s.server.set_faults({});
  CHECK(stored_objects(s.admin, "alice").empty());

  // The same name already held by someone else's PVC: the lost answer was a 409, and the PVC
  // without this submission's id stays.
  json::object theirs{{"apiVersion", "v1"},
                      {"kind", "PersistentVolumeClaim"},
                      {"metadata", {{"name", "theirs-data0"}}},
                      {"spec",
                       {{"accessModes", json::array{"ReadWriteOnce"}},
                        {"storageClassName", "standard"},
                        {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
  s.admin.create(kPvcs, "alice", theirs);
  s.server.set_faults(faults);
  CHECK_THROWS_AS(s.cluster.submit(job_with_extras("theirs", 1)), TransportError);
  s.server.set_faults({});
  CHECK(stored_objects(s.admin, "alice") == std::vector<std::string>{"persistentvolumeclaims/theirs-data0"});
}
