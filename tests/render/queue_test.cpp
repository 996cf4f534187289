// Kueue's queue label and suspension as render() writes them per kind (render.cpp queue_for_kueue),
// the profile's default queue, and --gang's need of a queue.
#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/queues.hpp"
#include "gpupool/render.hpp"
#include "gpupool/submit_options.hpp"

#include <boost/json/serialize.hpp>

#include <string>

using namespace gpupool;
namespace json = boost::json;

namespace {

std::string text_at(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::value* v = nullptr;
  const json::object* cur = &o;
  for (auto key : path) {
    if (!cur) return "<missing>";
    v = cur->if_contains(key);
    if (!v) return "<missing>";
    cur = v->is_object() ? &v->as_object() : nullptr;
  }
  return v->is_string() ? std::string(v->as_string()) : json::serialize(*v);
}

Workload queued(std::string_view kind, std::string queue = "team-a") {
  SubmitOptions o;
  o.kind = std::string(kind);
  o.name = "train";
  o.image = "busybox";
  o.gpus = 1;
  o.queue = std::move(queue);
  o.command = "true";
  if (kind == "mpi") o.mpi_api = "v2beta1";  // Kueue's MPIJob integration is mpi-operator's
  return to_workload(o);
}

}  // namespace

TEST_CASE("--queue: the label on every kind, suspended where Kueue's integration expects it") {
  struct Row {
    const char* kind;
    std::initializer_list<std::string_view> suspend;  // empty: no suspend field (Kueue gates the pods)
  };
  const Row rows[] = {
      {"job", {"spec", "suspend"}},
      {"mpi", {"spec", "runPolicy", "suspend"}},
      {"pytorch", {"spec", "runPolicy", "suspend"}},
      {"tf", {"spec", "runPolicy", "suspend"}},
      {"pod", {}},
      {"deployment", {}},
  };
  const Profile p = Profile::builtin("generic");
  for (const auto& r : rows) {
    CAPTURE(r.kind);
    const json::object o = render(queued(r.kind), p).workload();
    CHECK(text_at(o, {"metadata", "labels", kQueueNameLabel}) == "team-a");
    if (r.suspend.size())
      CHECK(text_at(o, r.suspend) == "true");
    else
      CHECK(json::serialize(o).find("\"suspend\"") == std::string::npos);
    // The Deployment webhook copies the label into the pod template (deployment_webhook.go Default).
    if (std::string_view(r.kind) == "deployment")
      CHECK(text_at(o, {"spec", "template", "metadata", "labels", kQueueNameLabel}) == "team-a");
    // Without a queue: neither label nor suspend.
    const json::object plain = render(queued(r.kind, ""), p).workload();
    CHECK(text_at(plain, {"metadata", "labels", kQueueNameLabel}) == "<missing>");
    CHECK(json::serialize(plain).find("\"suspend\"") == std::string::npos);
  }
}

TEST_CASE("a profile's default queue applies to jobs that name none; a job's own queue wins") {
  Profile p = Profile::parse("name: site\nqueue: gpu-queue\n");
  CHECK(p.default_queue == "gpu-queue");
  CHECK(text_at(render(queued("job", ""), p).workload(), {"metadata", "labels", kQueueNameLabel}) == "gpu-queue");
  CHECK(text_at(render(queued("job", "mine"), p).workload(), {"metadata", "labels", kQueueNameLabel}) == "mine");
  CHECK_THROWS_WITH_AS(Profile::parse("name: site\nqueue: Bad_Queue\n"), doctest::Contains("queue"), ConfigError);
}

TEST_CASE("a training-operator v1 MPIJob is refused a queue: Kueue manages v2beta1 MPIJobs only") {
  Workload w = queued("mpi");
  w.mpi_api = MpiJobApi::V1;
  CHECK_THROWS_WITH_AS(render(w, Profile::builtin("generic")), doctest::Contains("--mpi-api v2beta1"), ValidationError);
}

TEST_CASE("a queue name must name a LocalQueue (a DNS subdomain); --gang needs a queue") {
  CHECK_THROWS_WITH_AS(queued("job", "Bad_Queue"), doctest::Contains("queue"), ValidationError);
  Workload w = queued("job", "");
  w.gang = true;
  CHECK_THROWS_WITH_AS(render(w, Profile::builtin("generic")), doctest::Contains("--queue"), ValidationError);
  w.queue = "team-a";
  CHECK(text_at(render(w, Profile::builtin("generic")).workload(), {"spec", "suspend"}) == "true");
}
