// render/render_trainjob.cpp — TrainJob and JobSet manifests (render_trainjob.hpp).
//
// Field names are Kubeflow Trainer v2.3.0's (pkg/apis/trainer/v1alpha1/trainjob_types.go:
// TrainJobSpec.runtimeRef / trainer / runtimePatches, RuntimePatch.manager /
// trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.template.{metadata, spec},
// PodSpecPatch, ContainerPatch) and JobSet v0.12.0's (api/jobset/v1alpha2/jobset_types.go).
#include "render/render_trainjob.hpp"

#include <fmt/format.h>
#include <boost/json/serialize.hpp>

#include <string>

#include "gpupool/error.hpp"

namespace gpupool::detail {

namespace json = boost::json;

namespace {

// The runtimePatches manager gpupool writes as (RuntimePatch.manager: "who owns this patch").
constexpr const char* kManager = "gpupool.io/submit";
// The trainer's replicatedJob and container in every Trainer runtime (constants.Node).
constexpr const char* kNode = "node";

// What a PodSpecPatch cannot carry, with the Workload field or profile setting behind it.
const char* why_not(std::string_view key) {
  if (key == "schedulerName") return "a scheduler (--scheduler, or the profile's GPU scheduler)";
  if (key == "hostNetwork" || key == "dnsPolicy") return "host networking (the profile's host_network)";
  if (key == "hostIPC") return "the host IPC namespace (the profile's host_ipc)";
  if (key == "priorityClassName") return "a priority class (--priority)";
  if (key == "runtimeClassName") return "a runtime class (--runtime-class, or the profile's gpu.runtime_class)";
  if (key == "initContainers") return "an init container (--stage-in)";
  if (key == "restartPolicy") return "a restart policy";
  if (key == "workingDir") return "a working directory (--working-dir)";
  if (key == "imagePullPolicy") return "an image pull policy (the profile's image_pull_policy)";
  return nullptr;
}

[[noreturn]] void refuse(std::string_view key, const json::value& value) {
  const char* what = why_not(key);
  throw ValidationError(
      std::string(key), value.is_string() ? std::string(value.as_string()) : json::serialize(value),
      fmt::format("a TrainJob cannot set {}: its runtimePatches carry only volumes, mounts, env, tolerations, "
                  "nodeSelector, affinity and imagePullSecrets (Kubeflow Trainer PodSpecPatch); use kind jobset or "
                  "pytorch, or a TrainingRuntime that sets it",
                  what ? what : key));
}

// An object in render.hpp's key order: apiVersion, kind, metadata, spec.
json::object object(std::string_view api_version, std::string_view kind, json::object metadata, json::object spec) {
  json::object o;
  o["apiVersion"] = api_version;
  o["kind"] = kind;
  o["metadata"] = std::move(metadata);
  o["spec"] = std::move(spec);
  return o;
}

}  // namespace

json::object render_trainjob(const Workload& w, json::object metadata, const json::object& pod_template) {
  const json::object& spec = pod_template.at("spec").as_object();
  const json::object& container = spec.at("containers").as_array().at(0).as_object();

  json::object trainer;
  json::object container_patch{{"name", kNode}};
  for (const auto& [k, v] : container) {
    if (k == "name") continue;
    if (k == "image" || k == "command" || k == "args" || k == "env")
      trainer[k] = v;
    else if (k == "resources")
      trainer["resourcesPerNode"] = v;
    else if (k == "volumeMounts")
      container_patch[k] = v;
    else
      refuse(k, v);
  }
  trainer["numNodes"] = w.replicas.workers;

  json::object pod_patch;
  for (const auto& [k, v] : spec) {
    if (k == "containers") continue;
    if (k == "volumes" || k == "nodeSelector" || k == "affinity" || k == "tolerations" || k == "imagePullSecrets" ||
        k == "terminationGracePeriodSeconds" || k == "serviceAccountName" || k == "securityContext")
      pod_patch[k] = v;
    else
      refuse(k, v);
  }
  if (container_patch.size() > 1) pod_patch["containers"] = json::array{std::move(container_patch)};

  json::object pod_template_patch;
  if (const json::value* md = pod_template.if_contains("metadata")) pod_template_patch["metadata"] = *md;
  if (!pod_patch.empty()) pod_template_patch["spec"] = std::move(pod_patch);
  json::object rjob{{"name", kNode},
                    {"template", json::object{{"spec", json::object{{"template", std::move(pod_template_patch)}}}}}};
  json::object patch{
      {"manager", kManager},
      {"trainingRuntimeSpec",
       json::object{
           {"template", json::object{{"spec", json::object{{"replicatedJobs", json::array{std::move(rjob)}}}}}}}}};

  json::object tspec;
  tspec["runtimeRef"] = json::object{{"name", w.runtime.empty() ? "torch-distributed" : w.runtime},
                                     {"apiGroup", "trainer.kubeflow.org"},
                                     {"kind", "ClusterTrainingRuntime"}};
  tspec["trainer"] = std::move(trainer);
  tspec["runtimePatches"] = json::array{std::move(patch)};
  return object("trainer.kubeflow.org/v1alpha1", "TrainJob", std::move(metadata), std::move(tspec));
}

json::object render_jobset(const Workload& w, json::object metadata, json::object pod_template) {
  json::object job;
  job["parallelism"] = w.replicas.workers;
  job["completions"] = w.replicas.workers;
  // Indexed: each pod knows its rank (JOB_COMPLETION_INDEX) and gets the hostname
  // <jobset>-node-0-<index> under the JobSet's headless Service.
  job["completionMode"] = "Indexed";
  if (w.backoff_limit) job["backoffLimit"] = *w.backoff_limit;
  job["template"] = std::move(pod_template);
  json::object rjob{{"name", kNode}, {"replicas", 1}, {"template", json::object{{"spec", std::move(job)}}}};
  json::object spec;
  spec["replicatedJobs"] = json::array{std::move(rjob)};
  if (w.ttl_seconds_after_finished) spec["ttlSecondsAfterFinished"] = *w.ttl_seconds_after_finished;
  return object("jobset.x-k8s.io/v1alpha2", "JobSet", std::move(metadata), std::move(spec));
}

}  // namespace gpupool::detail
