#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <random>
#include <set>
#include <string>

#include <fmt/format.h>

#include "controller_world.hpp"
#include "embedded/controllers.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/kubelet.hpp"
#include "embedded/store.hpp"
#include "gpupool/topology.hpp"

using namespace gpupool::embedded;
using namespace gpupool::embedded::testing;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

const char* kDeployment = R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
  "spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},
          "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}})";

}  // namespace

TEST_CASE("pod-template-hash: stable, template-sensitive, SafeEncodeString alphabet") {
  const auto a = obj(R"({"spec":{"containers":[{"name":"c","image":"nginx:1"}]}})");
  const auto b = obj(R"({"spec":{"containers":[{"name":"c","image":"nginx:2"}]}})");
  CHECK(pod_template_hash(a) == pod_template_hash(a));
  CHECK(pod_template_hash(a) != pod_template_hash(b));
  for (char c : pod_template_hash(a)) CHECK(std::string("bcdfghjklmnpqrstvwxz2456789").find(c) != std::string::npos);
  // Each byte picks alphabet[byte % 27]: '0' is 48 -> 21 -> '4', '1' -> 22 -> '5', 'a' is 97 -> 16 -> 'v'.
  CHECK(safe_encode_string("01a") == "45v");
}

TEST_CASE("Deployment -> ReplicaSet -> pods; a deleted pod is replaced; scaling; status") {
  World w;
  w.store.create(w.store.type("apps", "deployments"), "default", obj(kDeployment));
  const auto rss = w.list("apps", "replicasets");
  REQUIRE(rss.size() == 1);
  const std::string rs_name = at(rss[0], "metadata.name");
  const std::string hash = at(rss[0], "metadata.labels.pod-template-hash");
  CHECK(rs_name == "web-" + hash);
  CHECK(rss[0].at("metadata").at("ownerReferences").at(0).at("controller") == true);
  auto names = w.pod_names();
  REQUIRE(names.size() == 3);
  for (const auto& n : names) {
    CAPTURE(n);
    CHECK(n.rfind(rs_name + "-", 0) == 0);
    CHECK(n.size() == rs_name.size() + 6);  // "-" + 5 random characters
  }
  // Not yet running: unavailable.
  auto d = w.get("apps", "deployments", "web");
  CHECK(d.at("status").at("unavailableReplicas").as_int64() == 3);

  w.advance(1s);  // bind + ContainerCreating
  w.advance(1s);  // Running and Ready
  d = w.get("apps", "deployments", "web");
  CHECK(d.at("status").at("readyReplicas").as_int64() == 3);
  CHECK(d.at("status").at("availableReplicas").as_int64() == 3);
  CHECK(d.at("status").at("updatedReplicas").as_int64() == 3);
  bool available = false, progressed = false;
  for (const auto& c : d.at("status").at("conditions").as_array()) {
    if (c.at("type") == "Available")
      available = c.at("status") == "True" && c.at("reason") == "MinimumReplicasAvailable";
    if (c.at("type") == "Progressing")
      progressed = c.at("reason") == "NewReplicaSetAvailable" &&
                   c.at("message") == json::value("ReplicaSet \"" + rs_name + "\" has successfully progressed.");
  }
  CHECK(available);
  CHECK(progressed);

  // The guide's FAQ: delete a pod and the ReplicaSet makes a new one.
  const std::string victim = *names.begin();
  w.store.remove(w.pods, "default", victim);
  auto after = w.pod_names();
  CHECK(after.size() == 3);
  CHECK(!after.count(victim));

  // Scale down to 1, then up to 2.
  w.store.mutate(w.store.type("apps", "deployments"), "default", "web",
                 [](json::object& o) { o["spec"].as_object()["replicas"] = 1; });
  CHECK(w.pod_names().size() == 1);
  w.store.mutate(w.store.type("apps", "deployments"), "default", "web",
                 [](json::object& o) { o["spec"].as_object()["replicas"] = 2; });
  CHECK(w.pod_names().size() == 2);
  CHECK(w.get("apps", "replicasets", rs_name).at("spec").at("replicas").as_int64() == 2);

  // A new template makes a new ReplicaSet and retires the old one as the new pods become
  // available (2 replicas: maxSurge 25% rounds up to 1, maxUnavailable 25% down to 0).
  w.store.mutate(w.store.type("apps", "deployments"), "default", "web", [](json::object& o) {
    o["spec"].as_object()["template"].as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["image"] =
        "nginx:2";
  });
  CHECK(w.list("apps", "replicasets").size() == 2);
  CHECK(w.get("apps", "replicasets", rs_name).at("spec").at("replicas").as_int64() == 2);
  for (int i = 0; i < 10; ++i) w.advance(1s);
  CHECK(w.get("apps", "replicasets", rs_name).at("spec").at("replicas").as_int64() == 0);
  CHECK(w.pod_names().size() == 2);
  // Deleting the Deployment deletes everything it owns.
  w.store.remove(w.store.type("apps", "deployments"), "default", "web");
  CHECK(w.list("apps", "replicasets").empty());
  CHECK(w.pod_names().empty());
}

TEST_CASE("a Deployment changed many times within one second rolls out every change at once") {
  // kube-controller-manager's workqueue dedupes a key but never throttles it: `kubectl set env`
  // six times in a row leaves observedGeneration == generation and six new ReplicaSets. The
  // embedded controllers deferred an owner past 20 syncs in a second of the clock, so the last
  // changes waited for the next second (found comparing with the oracle, session 31).
  World w;
  const auto& deployments = w.store.type("apps", "deployments");
  w.store.create(deployments, "default", obj(kDeployment));
  for (int v = 1; v <= 6; ++v)
    w.store.mutate(deployments, "default", "web", [&](json::object& d) {
      d["spec"].as_object()["template"].as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["env"] =
          json::array{json::object{{"name", "V"}, {"value", std::to_string(v)}}};
    });
  const auto d = w.get("apps", "deployments", "web");
  CHECK(at(d, "metadata.generation") == "7");
  CHECK(at(d, "status.observedGeneration") == "7");
  CHECK(util::annotation(d, "deployment.kubernetes.io/revision").value_or("") == "7");
  CHECK(w.list("apps", "replicasets").size() == 7);
}

TEST_CASE("Deployment rollback takes the ReplicaSet of the same template back under a new revision") {
  // FindNewReplicaSet matches templates, the pod-template-hash label aside and member order
  // aside; SetNewReplicaSetAnnotations copies the Deployment's annotations and keeps the old
  // revision in revision-history.
  World w;
  const auto& deployments = w.store.type("apps", "deployments");
  w.store.create(deployments, "default", obj(kDeployment));
  const auto annotation = [](const json::object& o, const char* key) {
    return util::annotation(o, key).value_or("<none>");
  };
  const auto image_of = [](const json::object& rs) {
    return std::string(rs.at("spec").at("template").at("spec").at("containers").at(0).at("image").as_string());
  };
  const auto by_image = [&](const std::string& img) {
    for (const auto& rs : w.list("apps", "replicasets"))
      if (image_of(rs) == img) return rs;
    FAIL("no ReplicaSet of " << img);
    return json::object{};
  };
  w.store.mutate(deployments, "default", "web", [](json::object& d) {
    d["spec"].as_object()["template"].as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["image"] =
        "nginx:2";
  });
  w.store.mutate(deployments, "default", "web", [](json::object& d) {
    d["metadata"].as_object()["annotations"].as_object()["kubernetes.io/change-cause"] = "bump";
  });
  CHECK(annotation(by_image("nginx:2"), "kubernetes.io/change-cause") == "bump");
  // Back to the first template, its members written in another order.
  w.store.mutate(deployments, "default", "web", [](json::object& d) {
    d["spec"].as_object()["template"] =
        obj(R"({"spec":{"containers":[{"image":"nginx","name":"c"}]},"metadata":{"labels":{"app":"web"}}})");
    d["metadata"].as_object()["annotations"].as_object().erase("kubernetes.io/change-cause");
  });
  REQUIRE(w.list("apps", "replicasets").size() == 2);
  for (int i = 0; i < 10; ++i) w.advance(1s);  // the rollout, as its pods become available
  const auto back = by_image("nginx");
  CHECK(annotation(back, "deployment.kubernetes.io/revision") == "3");
  CHECK(annotation(back, "deployment.kubernetes.io/revision-history") == "1");
  CHECK(back.at("spec").at("replicas") == 3);
  CHECK(by_image("nginx:2").at("spec").at("replicas") == 0);
  const auto d = w.get("apps", "deployments", "web");
  CHECK(annotation(d, "deployment.kubernetes.io/revision") == "3");
  // Its Progressing condition names the ReplicaSet taken back, not one this template's hash names.
  const std::string back_name(back.at("metadata").at("name").as_string());
  bool named = false;
  for (const auto& c : d.at("status").at("conditions").as_array())
    if (c.at("type") == "Progressing")
      named = std::string(c.at("message").as_string()).find("\"" + back_name + "\"") != std::string::npos;
  CHECK(named);
}

namespace {

json::object deployment(const std::string& name, int replicas, const std::string& extra_spec = "") {
  return obj(fmt::format(R"({{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"{0}"}},
    "spec":{{{2}"replicas":{1},"selector":{{"matchLabels":{{"app":"{0}"}}}},
      "template":{{"metadata":{{"labels":{{"app":"{0}"}}}},"spec":{{"containers":[{{"name":"c","image":"nginx:1"}}]}}}}}}}})",
                         name, replicas, extra_spec));
}

void set_image(World& w, const std::string& name, const std::string& image) {
  w.store.mutate(w.store.type("apps", "deployments"), "default", name, [&](json::object& d) {
    d["spec"].as_object()["template"].as_object()["spec"].as_object()["containers"].as_array()[0].as_object()["image"] =
        image;
  });
}

// The ReplicaSets of a Deployment by image: spec.replicas (-1: none of that image).
std::int64_t rs_replicas(const World& w, const std::string& image) {
  for (const auto& rs : w.list("apps", "replicasets"))
    if (rs.at("spec").at("template").at("spec").at("containers").at(0).at("image") == json::value(image))
      return rs.at("spec").at("replicas").as_int64();
  return -1;
}

std::string progressing(const json::object& d, const char* key = "reason") {
  if (const auto* c = util::find_condition(util::array_at(d, {"status"}, "conditions"), "Progressing"))
    return util::string_of(c, key);
  return "<none>";
}

}  // namespace

TEST_CASE("RollingUpdate: every step of a rollout within maxSurge and maxUnavailable") {
  // rolling.go: 4 replicas, maxSurge 1 and maxUnavailable 1 (25% rounded up and down): never more
  // than 5 pods asked for, never fewer than 3 available; the old ReplicaSet shrinks only as new
  // pods become available.
  World w;
  w.store.create(w.store.type("apps", "deployments"), "default", deployment("web", 4));
  w.advance(1s);
  w.advance(1s);
  REQUIRE(w.get("apps", "deployments", "web").at("status").at("availableReplicas") == 4);
  set_image(w, "web", "nginx:2");
  // At once (no new pod available yet): one surge pod, and one old pod let go (maxUnavailable).
  CHECK(rs_replicas(w, "nginx:2") == 2);
  CHECK(rs_replicas(w, "nginx:1") == 3);
  bool old_kept_while_new_unready = false;
  for (int step = 0; step < 20; ++step) {
    CAPTURE(step);
    std::int64_t asked = 0, ready = 0;
    for (const auto& rs : w.list("apps", "replicasets")) asked += rs.at("spec").at("replicas").as_int64();
    for (const auto& p : w.list("", "pods"))
      if (!p.at("metadata").as_object().contains("deletionTimestamp") && ctrl::pod_ready(p)) ++ready;
    CHECK(asked <= 5);
    CHECK(ready >= 3);
    if (rs_replicas(w, "nginx:1") > 0 && rs_replicas(w, "nginx:2") < 4) old_kept_while_new_unready = true;
    w.advance(1s);
  }
  CHECK(old_kept_while_new_unready);
  CHECK(rs_replicas(w, "nginx:1") == 0);
  CHECK(rs_replicas(w, "nginx:2") == 4);
  const auto d = w.get("apps", "deployments", "web");
  CHECK(progressing(d) == "NewReplicaSetAvailable");
  CHECK(d.at("status").at("updatedReplicas") == 4);
  CHECK(!d.at("status").as_object().contains("unavailableReplicas"));
  // The controller's events: the surge first, then the old ReplicaSet down step by step.
  std::vector<std::string> scaling;
  for (const auto& e : w.list("", "events"))
    if (e.at("reason") == "ScalingReplicaSet") scaling.push_back(std::string(e.at("message").as_string()));
  REQUIRE(scaling.size() >= 4);
  CHECK(scaling[1].find("Scaled up replica set web-") == 0);
  CHECK(scaling[1].find("from 0 to 1") != std::string::npos);
}

TEST_CASE("Recreate: the new ReplicaSet is made once no old pod is left") {
  // recreate.go: the old ReplicaSets scaled to 0 first; while a pod of theirs has not ended (here
  // Terminating on a node whose kubelet is stopped, so nothing stops it), no new ReplicaSet; its
  // deletion (deployment_controller.go deletePod) lets the rollout go on.
  World w;
  w.store.create(w.store.type("apps", "deployments"), "default",
                 deployment("rec", 2, R"("strategy":{"type":"Recreate"},)"));
  w.advance(1s);
  w.advance(1s);
  const auto old_pods = w.pod_names();
  REQUIRE(old_pods.size() == 2);
  w.store.mutate(w.store.type("", "nodes"), "", "cn-beijing.192.168.3.230", [](json::object& n) {
    ctrl::ensure_object(ctrl::ensure_object(n, "metadata"), "annotations")["gpupool.io/simulate-kubelet"] = "stopped";
  });
  set_image(w, "rec", "nginx:2");
  CHECK(rs_replicas(w, "nginx:1") == 0);
  for (int i = 0; i < 3; ++i) w.advance(1s);
  CHECK(w.pod_names() == old_pods);  // Terminating, still running
  CHECK(rs_replicas(w, "nginx:2") == -1);
  DeleteOptions force;
  force.grace_period = 0;
  w.store.remove(w.pods, "default", *old_pods.begin(), force);
  CHECK(rs_replicas(w, "nginx:2") == -1);
  w.store.remove(w.pods, "default", *old_pods.rbegin(), force);
  CHECK(rs_replicas(w, "nginx:2") == 2);
  CHECK(w.pod_names().size() == 2);
  for (const auto& p : old_pods) CHECK(!w.pod_names().count(p));
}

TEST_CASE("progressDeadlineSeconds: a rollout without progress times out on the cluster's clock") {
  World w;  // pods are never bound here (no advance()): nothing progresses
  w.store.create(w.store.type("apps", "deployments"), "default",
                 deployment("slow", 1, R"("progressDeadlineSeconds":30,)"));
  const auto rs_name = at(w.list("apps", "replicasets").at(0), "metadata.name");
  CHECK(progressing(w.get("apps", "deployments", "slow")) == "ReplicaSetUpdated");
  w.clock.advance(29s);
  w.controllers.sync();
  CHECK(progressing(w.get("apps", "deployments", "slow")) == "ReplicaSetUpdated");
  w.clock.advance(3s);  // requeued for a second after the deadline
  w.controllers.sync();
  const auto d = w.get("apps", "deployments", "slow");
  CHECK(progressing(d) == "ProgressDeadlineExceeded");
  CHECK(progressing(d, "status") == "False");
  CHECK(progressing(d, "message") == "ReplicaSet \"" + rs_name + "\" has timed out progressing.");
}

TEST_CASE("minReadySeconds: a ready pod is available only once ready that long") {
  World w;
  w.store.create(w.store.type("apps", "deployments"), "default", deployment("web", 2, R"("minReadySeconds":10,)"));
  auto rs = w.list("apps", "replicasets").at(0);
  CHECK(rs.at("spec").at("minReadySeconds") == 10);
  const std::string rs_name = at(rs, "metadata.name");
  w.advance(1s);
  w.advance(1s);  // Running and Ready
  CHECK(w.get("apps", "replicasets", rs_name).at("status").at("readyReplicas") == 2);
  int seconds = 0;
  while (!w.get("apps", "replicasets", rs_name).at("status").as_object().contains("availableReplicas") &&
         seconds < 30) {
    w.advance(1s);
    ++seconds;
  }
  CHECK(seconds >= 9);  // Ready at the second advance, available 10 s (+ the recheck's 1 s) later
  CHECK(seconds <= 10);
  CHECK(w.get("apps", "deployments", "web").at("status").at("availableReplicas") == 2);
}

TEST_CASE("A paused Deployment does not roll out; revisionHistoryLimit deletes the oldest ReplicaSets") {
  World w;
  const auto& deployments = w.store.type("apps", "deployments");
  w.store.create(deployments, "default", deployment("web", 2, R"("revisionHistoryLimit":1,)"));
  w.advance(1s);
  w.advance(1s);
  w.store.mutate(deployments, "default", "web", [](json::object& d) { d["spec"].as_object()["paused"] = true; });
  CHECK(progressing(w.get("apps", "deployments", "web")) == "DeploymentPaused");
  CHECK(progressing(w.get("apps", "deployments", "web"), "status") == "Unknown");
  set_image(w, "web", "nginx:2");
  for (int i = 0; i < 5; ++i) w.advance(1s);
  CHECK(rs_replicas(w, "nginx:2") == -1);
  w.store.mutate(deployments, "default", "web", [](json::object& d) { d["spec"].as_object()["paused"] = false; });
  for (int i = 0; i < 10; ++i) w.advance(1s);
  CHECK(rs_replicas(w, "nginx:2") == 2);
  CHECK(rs_replicas(w, "nginx:1") == 0);
  set_image(w, "web", "nginx:3");
  for (int i = 0; i < 10; ++i) w.advance(1s);
  // The current ReplicaSet and one old one: the first is gone.
  CHECK(rs_replicas(w, "nginx:3") == 2);
  CHECK(rs_replicas(w, "nginx:2") == 0);
  CHECK(rs_replicas(w, "nginx:1") == -1);
  CHECK(w.list("apps", "replicasets").size() == 2);
}

TEST_CASE("Scaling in the middle of a rollout shares the replicas in proportion") {
  World w;
  const auto& deployments = w.store.type("apps", "deployments");
  w.store.create(deployments, "default", deployment("web", 4));
  w.advance(1s);
  w.advance(1s);
  set_image(w, "web", "nginx:2");  // not advanced: the new pods stay pending
  REQUIRE(rs_replicas(w, "nginx:1") == 3);
  REQUIRE(rs_replicas(w, "nginx:2") == 2);
  w.store.mutate(deployments, "default", "web", [](json::object& d) { d["spec"].as_object()["replicas"] = 8; });
  // sync.go scale: 10 allowed (8 + maxSurge 2) where 5 were asked for: each ReplicaSet grows by
  // its share of the max-replicas it was sized for (3 * 10 / 5 and 2 * 10 / 5).
  CHECK(rs_replicas(w, "nginx:1") == 6);
  CHECK(rs_replicas(w, "nginx:2") == 4);
  for (const auto& rs : w.list("apps", "replicasets")) {
    CHECK(util::annotation(rs, "deployment.kubernetes.io/desired-replicas") == "8");
    CHECK(util::annotation(rs, "deployment.kubernetes.io/max-replicas") == "10");
  }
}

TEST_CASE("batch/v1 Job: parallelism, completions, backoffLimit, conditions") {
  struct Row {
    const char* name;
    int completions, parallelism, backoff;
    const char* exit_code;
    const char* condition;
    const char* reason;
    std::int64_t succeeded, failed;
  };
  const Row rows[] = {
      {"ok", 3, 2, 6, "0", "Complete", "CompletionsReached", 3, 0},
      {"bad", 1, 1, 2, "1", "Failed", "BackoffLimitExceeded", 0, 3},
  };
  for (const auto& r : rows) {
    CAPTURE(std::string(r.name));
    World w;
    w.store.create(w.store.type("batch", "jobs"), "default",
                   obj(fmt::format(R"({{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"{}"}},
                     "spec":{{"completions":{},"parallelism":{},"backoffLimit":{},
                     "template":{{"metadata":{{"annotations":{{"gpupool.io/simulate-duration":"10s",
                       "gpupool.io/simulate-exit-code":"{}"}}}},
                     "spec":{{"restartPolicy":"Never","containers":[{{"name":"c","image":"busybox"}}]}}}}}}}})",
                                   r.name, r.completions, r.parallelism, r.backoff, r.exit_code)));
    CHECK(w.pod_names().size() == static_cast<std::size_t>(std::min(r.completions, r.parallelism)));
    for (const auto& n : w.pod_names()) CHECK(n.rfind(std::string(r.name) + "-", 0) == 0);
    auto job = w.get("batch", "jobs", r.name);
    CHECK(job.at("status").at("active").as_int64() == std::min(r.completions, r.parallelism));
    CHECK(at(job, "status.startTime") == "2024-01-01T00:00:00Z");
    for (int i = 0; i < 30; ++i) w.advance(5s);  // (the failures' backoff: 10 s, then 20 s)
    job = w.get("batch", "jobs", r.name);
    const auto& st = job.at("status").as_object();
    CHECK((st.contains("succeeded") ? st.at("succeeded").as_int64() : 0) == r.succeeded);
    CHECK((st.contains("failed") ? st.at("failed").as_int64() : 0) == r.failed);
    CHECK(!st.contains("active"));
    bool found = false;
    for (const auto& c : st.at("conditions").as_array())
      if (c.at("type") == r.condition) found = c.at("status") == "True" && c.at("reason") == r.reason;
    CHECK(found);
  }
}

TEST_CASE("batch/v1 Job: a failed pod's replacement waits 10 s, the next 20 s (pod failure backoff)") {
  // job_controller.go manageJob and backoff_utils.go: 10 s after the last failure, doubled per
  // failure since the last success, counted from when the failed pod finished.
  World w;
  w.store.create(w.store.type("batch", "jobs"), "default",
                 obj(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"flaky"},
                   "spec":{"backoffLimit":5,"template":{"metadata":{"annotations":{
                     "gpupool.io/simulate-duration":"3s","gpupool.io/simulate-exit-code":"1"}},
                   "spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}})"));
  const auto failed_count = [&] {
    const auto st = w.get("batch", "jobs", "flaky").at("status").as_object();
    return st.contains("failed") ? st.at("failed").as_int64() : 0;
  };
  // Advance second by second until the first failure, then count the seconds to the next pod.
  int t = 0;
  while (failed_count() == 0 && t < 30) {
    w.advance(1s);
    ++t;
  }
  REQUIRE(failed_count() == 1);
  CHECK(w.pod_names().size() == 1);  // the failed pod only: the replacement waits
  int waited = 0;
  while (w.pod_names().size() == 1 && waited < 60) {
    w.advance(1s);
    ++waited;
  }
  CHECK(waited >= 9);
  CHECK(waited <= 11);
  while (failed_count() == 1 && t < 120) {
    w.advance(1s);
    ++t;
  }
  REQUIRE(failed_count() == 2);
  waited = 0;
  while (w.pod_names().size() == 2 && waited < 60) {
    w.advance(1s);
    ++waited;
  }
  CHECK(waited >= 19);
  CHECK(waited <= 21);
}

namespace {
// A Job whose pods run `duration` and exit with `exit_code` (the simulated kubelet).
json::object sim_job(const std::string& name, const std::string& spec, const std::string& duration,
                     const std::string& exit_code = "0") {
  return obj(fmt::format(R"({{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"{}"}},
    "spec":{{{}"template":{{"metadata":{{"annotations":{{"gpupool.io/simulate-duration":"{}",
      "gpupool.io/simulate-exit-code":"{}"}}}},
    "spec":{{"restartPolicy":"Never","containers":[{{"name":"c","image":"busybox"}}]}}}}}}}})",
                         name, spec, duration, exit_code));
}
std::int64_t count_at(const json::object& job, std::string_view key) {
  const json::object* st = job.at("status").if_object();
  return st && st->contains(key) ? st->at(key).as_int64() : 0;
}
// A pod deleted as `kubectl delete pod` does, once its kubelet and the controllers have acted.
void delete_pod(World& w, const std::string& name) {
  w.store.remove(w.pods, "default", name);
  w.kubelet.sync();
  w.controllers.sync();
}
std::vector<std::string> condition_types(const json::object& job) {
  std::vector<std::string> out;
  if (const auto* cs = util::array_at(job, {"status"}, "conditions"))
    for (const auto& c : *cs) out.push_back(at(c.as_object(), "type") + "=" + at(c.as_object(), "reason"));
  return out;
}
}  // namespace

TEST_CASE("batch/v1 Job tracking: finalizer on its pods, counts that outlive the pods, deletion counted failed") {
  // job_controller.go: pods made with batch.kubernetes.io/job-tracking; a finished pod is recorded
  // in uncountedTerminatedPods, loses the finalizer and is counted; a pod deleted before it finishes
  // counts as failed (isPodFailed) and its replacement waits out the failure backoff.
  World w;
  w.store.create(w.store.type("batch", "jobs"), "default", sim_job("t", R"("completions":3,)", "3s"));
  REQUIRE(w.pod_names().size() == 1);
  const std::string first = *w.pod_names().begin();
  CHECK(ctrl::holds_finalizer(w.get("", "pods", first), kJobTrackingFinalizer));
  for (int i = 0; i < 5; ++i) w.advance(1s);
  const auto done = w.get("", "pods", first);
  REQUIRE(at(done, "status.phase") == "Succeeded");
  CHECK(!ctrl::holds_finalizer(done, kJobTrackingFinalizer));
  auto job = w.get("batch", "jobs", "t");
  CHECK(count_at(job, "succeeded") == 1);
  CHECK(util::json_equal(job.at("status").at("uncountedTerminatedPods"), json::object{}));
  // The finished pod deleted: the count stays, no pod is made for it.
  w.store.remove(w.pods, "default", first);
  CHECK(!w.pod_names().count(first));
  job = w.get("batch", "jobs", "t");
  CHECK(count_at(job, "succeeded") == 1);
  REQUIRE(w.pod_names().size() == 1);  // the second completion's pod
  const std::string second = *w.pod_names().begin();
  CHECK(at(w.get("", "pods", second), "status.phase") != "Succeeded");
  // The running pod deleted: Terminating until its kubelet has stopped it (the finalizer alone
  // would hold it), then counted failed and gone; the replacement waits 10 s.
  delete_pod(w, second);
  CHECK(!w.pod_names().count(second));
  job = w.get("batch", "jobs", "t");
  CHECK(count_at(job, "failed") == 1);
  CHECK(count_at(job, "succeeded") == 1);
  CHECK(count_at(job, "active") == 0);
  CHECK(count_at(job, "terminating") == 0);
  CHECK(w.pod_names().empty());
  int waited = 0;
  while (w.pod_names().empty() && waited < 30) {
    w.advance(1s);
    ++waited;
  }
  CHECK(waited >= 9);
  CHECK(waited <= 11);
  for (int i = 0; i < 20; ++i) w.advance(1s);
  job = w.get("batch", "jobs", "t");
  CHECK(count_at(job, "succeeded") == 3);
  CHECK(count_at(job, "failed") == 1);
  CHECK(condition_types(job) ==
        std::vector<std::string>{"SuccessCriteriaMet=CompletionsReached", "Complete=CompletionsReached"});
  for (const auto& p : w.list("", "pods")) CHECK(!ctrl::holds_finalizer(p, kJobTrackingFinalizer));
}

TEST_CASE("batch/v1 Job: activeDeadlineSeconds on the cluster's clock, its running pods deleted and counted failed") {
  World w;
  w.store.create(w.store.type("batch", "jobs"), "default",
                 sim_job("late", R"("parallelism":2,"activeDeadlineSeconds":30,)", "1h"));
  CHECK(w.pod_names().size() == 2);
  for (int i = 0; i < 29; ++i) w.advance(1s);
  auto job = w.get("batch", "jobs", "late");
  CHECK(condition_types(job).empty());
  CHECK(count_at(job, "active") == 2);
  w.advance(1s);
  w.advance(1s);
  job = w.get("batch", "jobs", "late");
  CHECK(condition_types(job) == std::vector<std::string>{"FailureTarget=DeadlineExceeded", "Failed=DeadlineExceeded"});
  CHECK(count_at(job, "failed") == 2);
  CHECK(count_at(job, "active") == 0);
  CHECK(w.pod_names().empty());
  std::set<std::string> reasons;
  for (const auto& e : w.list("", "events")) reasons.insert(at(e, "reason"));
  CHECK(reasons.count("DeadlineExceeded"));
  CHECK(reasons.count("SuccessfulDelete"));
}

TEST_CASE("batch/v1 Job: no completions ends at the first success once nothing runs; Indexed completedIndexes") {
  World w;
  w.store.create(w.store.type("batch", "jobs"), "default", sim_job("any", R"("parallelism":2,)", "3s"));
  for (int i = 0; i < 10; ++i) w.advance(1s);
  auto job = w.get("batch", "jobs", "any");
  CHECK(count_at(job, "succeeded") == 2);
  CHECK(w.pod_names().size() == 2);  // none made after the first success
  CHECK(condition_types(job) ==
        std::vector<std::string>{"SuccessCriteriaMet=CompletionsReached", "Complete=CompletionsReached"});
  w.store.create(w.store.type("batch", "jobs"), "default",
                 sim_job("ix", R"("parallelism":2,"completions":5,"completionMode":"Indexed",)", "3s"));
  for (int i = 0; i < 4; ++i) w.advance(1s);
  job = w.get("batch", "jobs", "ix");
  CHECK(at(job, "status.completedIndexes") == "0,1");
  CHECK(count_at(job, "succeeded") == 2);
  for (int i = 0; i < 20; ++i) w.advance(1s);
  job = w.get("batch", "jobs", "ix");
  CHECK(at(job, "status.completedIndexes") == "0-4");
  CHECK(count_at(job, "succeeded") == 5);
}

TEST_CASE("batch/v1 Job podFailurePolicy: Ignore is not counted, FailJob fails the Job with the rule's message") {
  const std::string policy = R"("backoffLimit":0,"podFailurePolicy":{"rules":[
      {"action":"Ignore","onExitCodes":{"operator":"In","values":[42]}},
      {"action":"FailJob","onExitCodes":{"containerName":"c","operator":"In","values":[3]}}]},)";
  World w;
  w.store.create(w.store.type("batch", "jobs"), "default", sim_job("ign", policy, "3s", "42"));
  for (int i = 0; i < 40; ++i) w.advance(1s);
  auto job = w.get("batch", "jobs", "ign");
  CHECK(count_at(job, "failed") == 0);  // backoffLimit 0, yet every failure ignored
  CHECK(condition_types(job).empty());
  CHECK(w.pod_names().size() >= 3);  // replaced again and again (after the failure backoff)
  w.store.create(w.store.type("batch", "jobs"), "default", sim_job("fatal", policy, "3s", "3"));
  for (int i = 0; i < 5; ++i) w.advance(1s);
  job = w.get("batch", "jobs", "fatal");
  CHECK(condition_types(job) == std::vector<std::string>{"FailureTarget=PodFailurePolicy", "Failed=PodFailurePolicy"});
  std::string pod;
  for (const auto& p : w.list("", "pods"))
    if (at(p, "metadata.name").rfind("fatal-", 0) == 0) pod = at(p, "metadata.name");
  const auto* conds = util::array_at(job, {"status"}, "conditions");
  REQUIRE(conds);
  CHECK(at(conds->back().as_object(), "message") ==
        "Container c for pod default/" + pod + " failed with exit code 3 matching FailJob rule at index 1");
  CHECK(count_at(job, "failed") == 1);
  // With a podFailurePolicy only failed pods count: a running pod deleted is Failed by its kubelet
  // (SIGTERM: exit code 143, which no rule matches) before it goes, so it is counted, not held.
  w.store.create(w.store.type("batch", "jobs"), "default", sim_job("gone", policy, "1h"));
  w.advance(1s);
  std::string running;
  for (const auto& p : w.list("", "pods"))
    if (at(p, "metadata.name").rfind("gone-", 0) == 0) running = at(p, "metadata.name");
  REQUIRE(!running.empty());
  delete_pod(w, running);
  CHECK(!w.pod_names().count(running));
  job = w.get("batch", "jobs", "gone");
  CHECK(count_at(job, "failed") == 1);
  CHECK(condition_types(job) ==
        std::vector<std::string>{"FailureTarget=BackoffLimitExceeded", "Failed=BackoffLimitExceeded"});
}

TEST_CASE("batch/v1 Job backoffLimitPerIndex: each index backs off on its own, then fails (failedIndexes)") {
  World w;
  w.store.create(w.store.type("batch", "jobs"), "default",
                 sim_job("pi", R"("completions":1,"completionMode":"Indexed","backoffLimitPerIndex":2,)", "3s", "1"));
  const auto job_at = [&] { return w.get("batch", "jobs", "pi"); };
  std::vector<int> waits;  // seconds from a failure to the index's next pod
  std::size_t pods = w.pod_names().size(), failures = 0;
  int since_failure = -1;
  for (int t = 0; t < 120 && !util::find_condition(util::array_at(job_at(), {"status"}, "conditions"), "Failed"); ++t) {
    w.advance(1s);
    std::size_t failed_pods = 0;
    for (const auto& p : w.list("", "pods")) failed_pods += at(p, "status.phase") == "Failed" ? 1 : 0;
    if (since_failure >= 0) ++since_failure;
    if (failed_pods > failures) {
      failures = failed_pods;
      since_failure = 0;
    }
    if (w.pod_names().size() > pods) {
      waits.push_back(since_failure);
      pods = w.pod_names().size();
      since_failure = -1;
    }
  }
  const auto job = job_at();
  CHECK(condition_types(job) == std::vector<std::string>{"FailureTarget=FailedIndexes", "Failed=FailedIndexes"});
  CHECK(at(job, "status.failedIndexes") == "0");
  CHECK(count_at(job, "failed") == 3);
  REQUIRE(waits.size() == 2);
  CHECK(waits[0] >= 9);
  CHECK(waits[0] <= 11);
  CHECK(waits[1] >= 19);
  CHECK(waits[1] <= 21);
  std::multiset<std::string> counts;
  for (const auto& p : w.list("", "pods"))
    counts.insert(*util::annotation(p, "batch.kubernetes.io/job-index-failure-count"));
  CHECK(counts == std::multiset<std::string>{"0", "1", "2"});
}

TEST_CASE("batch/v1 Job deleted: its pods lose the tracking finalizer (in the background and orphaned)") {
  for (const Propagation how : {Propagation::Background, Propagation::Orphan}) {
    CAPTURE(static_cast<int>(how));
    World w;
    w.store.create(w.store.type("batch", "jobs"), "default", sim_job("j", "", "1h"));
    w.advance(1s);
    REQUIRE(w.pod_names().size() == 1);
    const std::string pod = *w.pod_names().begin();
    DeleteOptions o;
    o.propagation = how;
    w.store.remove(w.store.type("batch", "jobs"), "default", "j", o);
    w.kubelet.sync();
    w.controllers.sync();
    if (how == Propagation::Background) {
      CHECK(w.pod_names().empty());
    } else {
      REQUIRE(w.pod_names().count(pod));
      const auto p = w.get("", "pods", pod);
      CHECK(!ctrl::holds_finalizer(p, kJobTrackingFinalizer));
      CHECK(!util::controller_ref(p));
      CHECK(at(p, "status.phase") == "Running");
    }
  }
}

TEST_CASE("batch/v1 Job managed by another controller (spec.managedBy): no pods, no status") {
  for (const std::string by : {"kueue.x-k8s.io/multikueue", "kubernetes.io/job-controller"}) {
    CAPTURE(by);
    World w;
    w.store.create(w.store.type("batch", "jobs"), "default",
                   obj(fmt::format(R"({{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"mk"}},
                     "spec":{{"managedBy":"{}","template":{{"spec":{{"restartPolicy":"Never",
                       "containers":[{{"name":"c","image":"busybox"}}]}}}}}}}})",
                                   by)));
    for (int i = 0; i < 3; ++i) w.advance(5s);
    const bool ours = by == "kubernetes.io/job-controller";
    CHECK(w.pod_names().size() == (ours ? 1U : 0U));
    // Created with the zero status (jobStrategy.PrepareForCreate); only the job controller fills it.
    CHECK(w.get("batch", "jobs", "mk").at("status").as_object().empty() == !ours);
  }
}

TEST_CASE(
    "MPIJob launcher names: training-operator v1 names the pod itself, v2beta1's launcher Job gives it a suffix") {
  for (const std::string version : {"v1", "v2beta1"}) {
    CAPTURE(version);
    Clock clock = Clock::manual();
    Store store{clock, Store::Options{.history = 10000, .mpijob_version = version}};
    Controllers controllers{store, clock};
    store.create(store.type("", "namespaces"), "", obj(R"({"metadata":{"name":"default"}})"));
    const std::string tmpl = R"({"spec":{"containers":[{"name":"mpi","image":"horovod"}]}})";
    store.create(store.type("kubeflow.org", "mpijobs"), "default",
                 obj(R"({"metadata":{"name":"mpi-dist"},"spec":{"mpiReplicaSpecs":{
                       "Launcher":{"replicas":1,"template":)" +
                     tmpl + R"(},
                       "Worker":{"replicas":1,"template":)" +
                     tmpl + R"(}}}})"));
    std::set<std::string> names;
    for (const auto& p : store.list(store.type("", "pods"), "default").items) names.insert(at(*p, "metadata.name"));
    REQUIRE(names.size() == 2);
    CHECK(names.count("mpi-dist-worker-0") == 1);
    const std::string launcher = *names.begin();
    if (version == "v1") {
      CHECK(launcher == "mpi-dist-launcher");
    } else {
      // The seed's form: mpi-dist-launcher-jgms7 (generateName of the launcher Job's pods).
      CHECK(launcher.rfind("mpi-dist-launcher-", 0) == 0);
      CHECK(launcher.size() == std::string("mpi-dist-launcher-jgms7").size());
      CHECK(store.find(store.type("batch", "jobs"), "default", "mpi-dist-launcher"));
    }
  }
}

namespace {
// A random JSON document: nested objects and arrays of every kind of scalar.
json::value random_json(std::mt19937& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 0 ? 9u : 7u));
  switch (kind) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return static_cast<std::int64_t>(rng() % 5) - 2;
    case 3:
      return static_cast<std::uint64_t>(rng() % 3);
    case 4:
      return static_cast<double>(rng() % 3);
    case 5:
    case 6:
      return json::string(std::string(1, static_cast<char>('a' + rng() % 3)));
    case 7: {
      json::array a;
      for (unsigned i = 0, n = rng() % 4; i < n; ++i) a.push_back(random_json(rng, depth - 1));
      return a;
    }
    default: {
      json::object o;
      for (unsigned i = 0, n = rng() % 4; i < n; ++i)
        o[std::string(1, static_cast<char>('k' + rng() % 4))] = random_json(rng, depth - 1);
      return o;
    }
  }
}
// A copy of `v` with one random change somewhere (or none), members re-inserted in reverse order.
json::value mutate(const json::value& v, std::mt19937& rng) {
  if (v.is_object()) {
    json::object out;
    const auto& o = v.as_object();
    const std::size_t pick = o.empty() ? 0 : rng() % (o.size() + 2);
    std::size_t i = 0;
    for (auto it = o.end(); it != o.begin();) {
      --it;
      out[it->key()] = i++ == pick ? mutate(it->value(), rng) : it->value();
    }
    if (pick == o.size() + 1 && rng() % 2) out["new"] = 1;
    return out;
  }
  if (v.is_array()) {
    json::array out = v.as_array();
    if (!out.empty() && rng() % 2)
      out[rng() % out.size()] = mutate(out[rng() % out.size()], rng);
    else if (rng() % 4 == 0)
      out.push_back(nullptr);
    return out;
  }
  if (v.is_int64() && v.as_int64() >= 0 && rng() % 2) return static_cast<std::uint64_t>(v.as_int64());
  return rng() % 3 == 0 ? random_json(rng, 0) : v;
}
}  // namespace

TEST_CASE("json_equal answers what boost::json's operator== answers, over random documents") {
  // util::json_equal replaces operator== on the write path (Boost 1.81's object::equal deep-copies
  // every member it visits); it must agree with it everywhere, key order and int64/uint64 included.
  std::mt19937 rng(7);
  int equal = 0, different = 0;
  for (int i = 0; i < 20000; ++i) {
    const json::value a = random_json(rng, 4);
    const json::value b = mutate(a, rng);
    const bool want = a == b;
    INFO("a = " << json::serialize(a) << ", b = " << json::serialize(b));
    REQUIRE(util::json_equal(a, b) == want);
    REQUIRE(util::json_equal(b, a) == want);
    (want ? equal : different)++;
  }
  // Both answers were exercised often.
  CHECK(equal > 2000);
  CHECK(different > 2000);
}

TEST_CASE("a huge maxSurge percentage is resolved within int32, not overflowed (fuzz_api finding)") {
  // Found by fuzz/fuzz_api.cpp under UBSan: 9163737455847408640% of 25 replicas overflowed int64.
  // Kubernetes resolves it in float64 (intstr.GetScaledValueFromIntOrPercent, math.Ceil); the
  // embedded controller keeps the result within int32, the replica counts' type.
  for (const char* surge : {R"("9163737455847408640%")", "9163737455847408640", R"("50%")"}) {
    CAPTURE(surge);
    World w;
    auto d = obj(kDeployment);
    d["spec"].as_object()["replicas"] = 25;
    d["spec"].as_object()["strategy"] =
        json::parse(fmt::format(R"({{"type":"RollingUpdate","rollingUpdate":{{"maxSurge":{}}}}})", surge));
    w.store.create(w.store.type("apps", "deployments"), "default", d);
    const auto rs = w.list("apps", "replicasets");
    REQUIRE(rs.size() == 1);
    const std::string max_replicas(
        rs[0].at("metadata").at("annotations").at("deployment.kubernetes.io/max-replicas").as_string());
    if (std::string(surge) == R"("50%")")
      CHECK(max_replicas == "38");  // 25 + ceil(12.5)
    else
      CHECK(max_replicas == std::to_string(25LL + 2147483647LL));
  }
  // A maxSurge that is no percent never reaches the controller: ValidateRollingUpdateDeployment
  // refuses it, as kube-apiserver does.
  World w;
  auto d = obj(kDeployment);
  d["spec"].as_object()["strategy"] = json::parse(R"({"type":"RollingUpdate","rollingUpdate":{"maxSurge":"nan%"}})");
  try {
    w.store.create(w.store.type("apps", "deployments"), "default", d);
    FAIL("created");
  } catch (const StatusError& e) {
    CHECK(e.code() == 422);
    CHECK(std::string(e.what()).find("spec.strategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:1, "
                                     "IntVal:0, StrVal:\"nan%\"}: a valid percent string") != std::string::npos);
  }
  CHECK(w.list("apps", "replicasets").empty());
}

TEST_CASE("TFJob: a replica type's Service and TF_CONFIG use its tfjob-port (Arena's --ps-port)") {
  World w;
  w.store.create(w.store.type("kubeflow.org", "tfjobs"), "default", obj(R"({"apiVersion":"kubeflow.org/v1",
    "kind":"TFJob","metadata":{"name":"ports"},"spec":{"tfReplicaSpecs":{
      "PS":{"replicas":1,"template":{"spec":{"containers":[{"name":"tensorflow","image":"busybox",
        "ports":[{"containerPort":2224,"name":"tfjob-port"}]}]}}},
      "Worker":{"replicas":1,"template":{"spec":{"containers":[{"name":"tensorflow","image":"busybox"}]}}}}}})"));
  const auto ps = w.get("", "services", "ports-ps-0");
  CHECK(ps.at("spec").at("ports").at(0).at("port") == 2224);
  CHECK(ps.at("spec").at("ports").at(0).at("targetPort") == 2224);
  CHECK(w.get("", "services", "ports-worker-0").at("spec").at("ports").at(0).at("port") == 2222);  // the default
  std::string tf_config;
  const auto worker = w.get("", "pods", "ports-worker-0");
  for (const auto& e : worker.at("spec").at("containers").at(0).at("env").as_array())
    if (e.at("name") == "TF_CONFIG") tf_config = std::string(e.at("value").as_string());
  CHECK(tf_config.find("ports-ps-0.default.svc:2224") != std::string::npos);
  CHECK(tf_config.find("ports-worker-0.default.svc:2222") != std::string::npos);
}

TEST_CASE("an owner over the syncs-per-second limit is synced in the next second, not forgotten") {
  // A rate-limited workqueue requeues a key; dropping it left an owner's work undone until some
  // later event. The limit is on syncs that create a whole burst (500 pods): 20 in a second of
  // the clock, 10,000 pods; what is left comes in the next second, at sync() without any event.
  World w;
  json::object rs = obj(kDeployment);
  rs["kind"] = "ReplicaSet";
  rs["spec"].as_object()["replicas"] = 10500;
  w.store.create(w.store.type("apps", "replicasets"), "default", rs);
  auto pods = [&] { return w.store.list(w.pods, "default").items.size(); };
  CHECK(pods() <= 10000);  // the last bursts came over the limit
  CHECK(pods() >= 9900);   // (a generated name that collides fails that one create)
  w.controllers.sync();    // the same second: still deferred
  CHECK(pods() <= 10000);
  w.clock.advance(1s);
  w.controllers.sync();
  CHECK(pods() == 10500);
}
