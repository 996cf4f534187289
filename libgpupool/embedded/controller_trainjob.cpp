// embedded/controller_trainjob.cpp — Kubeflow Trainer v2.3.0's TrainJob controller
// (pkg/controller/trainjob_controller.go with the runtime framework's jobset and torch plugins):
// plan_trainjob.
//
// A TrainJob (trainer.kubeflow.org/v1alpha1) names a ClusterTrainingRuntime or TrainingRuntime;
// the controller builds a JobSet `<trainjob>` from the runtime's template as the framework does:
//  - runtime/core/trainingruntime.go newRuntimeInfo: the template's labels and annotations plus
//    the runtimePatches' template metadata go on the JobSet; each runtimePatch's
//    trainingRuntimeSpec.template.spec is strategic-merged into the template's spec
//    (replicatedJobs by name, then the Job template as batch/v1 merges it: containers, volumes,
//    env by name, volumeMounts by mountPath, tolerations replaced, nodeSelector merged);
//    trainer.resourcesPerNode is merged onto the `node` container of the replicatedJob whose
//    trainjob-ancestor-step label is "trainer";
//  - the trainer pod set's count is trainer.numNodes (else mlPolicy.numNodes, else 1), written to
//    that replicatedJob's parallelism and completions (jobset.go SyncParallelCount);
//  - torch plugin (torch.go EnforceMLPolicy, when mlPolicy.torch is set): PET_NNODES,
//    PET_NPROC_PER_NODE (numProcPerNode, else "auto" with GPUs, else the CPUs per node, at least 1),
//    PET_NODE_RANK (the Job completion index), PET_MASTER_ADDR `<trainjob>-node-0-0.<trainjob>`,
//    PET_MASTER_PORT 29500, and container port 29500;
//  - jobset builder.go Trainer: the trainer's image, command, args and env on the `node` container;
//  - the JobSet's suspend is the TrainJob's; ownerReference to the TrainJob (controller,
//    blockOwnerDeletion). An existing JobSet is rebuilt only while either is suspended (jobset.go
//    Build), so resuming a TrainJob resumes its JobSet.
// Status (jobset.go Status, trainjob_controller.go): Complete and Failed copied from the JobSet's
// Completed and Failed conditions, jobsStatus from its replicatedJobsStatus, Suspended
// (Suspended "TrainJob is suspended" / Resumed "TrainJob is resumed"). A runtimeRef of another
// kind fails the TrainJob (TrainingRuntimeNotSupported); a missing runtime is reported as the
// controller's TrainJobResourcesCreationFailed event and retried when the TrainJob changes.
// Not modelled: initializers' storage env, activeDeadlineSeconds, the MPI/JAX/XGBoost plugins'
// extra objects, managedBy delegation beyond skipping.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "embedded/controllers.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/patch.hpp"
#include "embedded/store.hpp"
#include "gpupool/error.hpp"
#include "gpupool/quantity.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

namespace {

constexpr const char* kAncestorLabel = "trainer.kubeflow.org/trainjob-ancestor-step";
constexpr int kTrainerPort = 29500;  // constants.ContainerTrainerPort

// apply.UpsertEnvVars: replace the variable of that name, or append it.
void upsert_env(json::object& container, const json::object& var) {
  auto& env = container["env"];
  if (!env.is_array()) env = json::array{};
  for (auto& e : env.as_array())
    if (e.is_object() && string_of(&e.as_object(), "name") == string_of(&var, "name")) {
      e = var;
      return;
    }
  env.as_array().push_back(var);
}

json::object* container_named(json::object& pod_spec, std::string_view name) {
  if (auto* cs = pod_spec.if_contains("containers"); cs && cs->is_array())
    for (auto& c : cs->as_array())
      if (c.is_object() && string_of(&c.as_object(), "name") == name) return &c.as_object();
  return nullptr;
}

void merge_map(json::object& into, const json::object* from) {
  if (from)
    for (const auto& [k, v] : *from) into[k] = v;
}

// A resource count (Quantity.Value(): rounded up), 0 when absent or malformed.
std::int64_t quantity_value(const json::object* list, std::string_view key) {
  const json::value* v = list ? list->if_contains(key) : nullptr;
  if (!v || !v->is_string()) return 0;
  try {
    return Quantity::parse(v->as_string()).value();
  } catch (const ValidationError&) {
    return 0;
  }
}

// runtime.GetNumGPUPerNode: the first resource whose name contains "gpu", requests before limits.
std::int64_t gpus_per_node(const json::object* res) {
  auto num = [](const json::object* list) -> std::int64_t {
    if (list)
      for (const auto& [k, v] : *list) {
        std::string n(k);
        for (auto& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (n.find("gpu") != std::string::npos) return quantity_value(list, k);
      }
    return 0;
  };
  const std::int64_t req = num(res ? object_at(*res, {"requests"}) : nullptr);
  const std::int64_t lim = num(res ? object_at(*res, {"limits"}) : nullptr);
  return req == 0 && lim > 0 ? lim : req;
}

// torch.go getNumCPUPerNode: requests.cpu, else limits.cpu.
std::int64_t cpus_per_node(const json::object* res) {
  const std::int64_t req = quantity_value(res ? object_at(*res, {"requests"}) : nullptr, "cpu");
  return req != 0 ? req : quantity_value(res ? object_at(*res, {"limits"}) : nullptr, "cpu");
}

// The runtimePatches merged into the template (trainingruntime.go mergeRuntimePatches), the
// replicatedJobs keeping the runtime's order.
void merge_runtime_patches(const json::object& trainjob, json::object& template_spec) {
  const json::array* patches = util::array_at(trainjob, {"spec"}, "runtimePatches");
  if (!patches) return;
  for (const auto& pv : *patches) {
    if (!pv.is_object()) continue;
    const json::array* prj =
        util::array_at(pv.as_object(), {"trainingRuntimeSpec", "template", "spec"}, "replicatedJobs");
    if (!prj) continue;
    auto& rjobs = template_spec["replicatedJobs"];
    if (!rjobs.is_array()) rjobs = json::array{};
    for (const auto& p : *prj) {
      if (!p.is_object()) continue;
      const std::string rname = string_of(&p.as_object(), "name");
      json::object* target = nullptr;
      for (auto& r : rjobs.as_array())
        if (r.is_object() && string_of(&r.as_object(), "name") == rname) target = &r.as_object();
      if (!target) {
        rjobs.as_array().push_back(p);  // (a merge-by-name list appends what it lacks)
        continue;
      }
      const json::object* ptmpl = object_at(p.as_object(), {"template"});
      if (!ptmpl) continue;
      json::value cur = target->contains("template") ? (*target)["template"] : json::value(json::object{});
      // The Job template merges as batch/v1 declares it (the patch keys are a JobTemplateSpec's).
      (*target)["template"] = strategic_merge_patch(cur, *ptmpl, "Job");
    }
  }
}

}  // namespace

std::shared_ptr<const json::object> trainjob_runtime(const Store& store, const json::object& tj) {
  const json::object* ref = object_at(tj, {"spec", "runtimeRef"});
  const bool cluster = !ref || !ref->contains("kind") || string_of(ref, "kind") == "ClusterTrainingRuntime";
  return store.find(store.type("trainer.kubeflow.org", cluster ? "clustertrainingruntimes" : "trainingruntimes"),
                    cluster ? "" : namespace_of(tj), string_of(ref, "name"));
}

Plan plan_trainjob(const json::object& tj, const json::object* runtime, const Children& jobsets,
                   Clock::time_point now) {
  Plan plan;
  const std::string name = name_of(tj), ns = namespace_of(tj);
  const json::object* spec = object_at(tj, {"spec"});
  const json::object* trainer = object_at(tj, {"spec", "trainer"});
  const json::value* sv = spec ? spec->if_contains("suspend") : nullptr;
  const bool suspend = sv && sv->is_bool() && sv->as_bool();
  // IsManagedByExternalController: another manager's TrainJob is left alone.
  if (const std::string m = string_of(spec, "managedBy"); !m.empty() && m != "trainer.kubeflow.org/trainjob-controller")
    return plan;

  json::object status = object_at(tj, {"status"}) ? *object_at(tj, {"status"}) : json::object{};
  json::array conditions;
  if (const json::array* c = util::array_at(tj, {"status"}, "conditions")) conditions = *c;
  auto cond_true = [&](std::string_view type) {
    const json::object* c = util::find_condition(&conditions, type);
    return c && string_of(c, "status") == "True";
  };
  // removeFailedCondition (a deadline's failure stays).
  if (const json::object* f = util::find_condition(&conditions, "Failed");
      f && string_of(f, "reason") != "DeadlineExceeded") {
    json::array kept;
    for (auto& c : conditions)
      if (!(c.is_object() && string_of(&c.as_object(), "type") == "Failed")) kept.push_back(std::move(c));
    conditions = std::move(kept);
  }
  const bool finished = cond_true("Complete") || cond_true("Failed");

  const json::object* ref = object_at(tj, {"spec", "runtimeRef"});
  const std::string group = ref && ref->contains("apiGroup") ? string_of(ref, "apiGroup") : "trainer.kubeflow.org";
  const std::string kind = ref && ref->contains("kind") ? string_of(ref, "kind") : "ClusterTrainingRuntime";
  const json::object* existing = jobsets.empty() ? nullptr : jobsets.front().get();
  const json::value* jss =
      existing && object_at(*existing, {"spec"}) ? object_at(*existing, {"spec"})->if_contains("suspend") : nullptr;
  const bool jobset_suspended = jss && jss->is_bool() && jss->as_bool();
  const bool supported =
      group == "trainer.kubeflow.org" && (kind == "ClusterTrainingRuntime" || kind == "TrainingRuntime");

  if (!supported) {
    // RuntimeRefToRuntimeRegistryKey: schema.GroupKind.String(), "Kind.group".
    const std::string msg = fmt::format("unsupported runtime: {}.{}", kind, group);
    util::set_condition(conditions, condition("Failed", true, "TrainingRuntimeNotSupported", msg, now));
  } else if (!finished && !runtime) {
    plan.events.push_back(
        {"Warning", "TrainJobResourcesCreationFailed",
         fmt::format("TrainJob resources reconciliation failed: {}: {}.trainer.kubeflow.org \"{}\" not found",
                     kind == "ClusterTrainingRuntime" ? "not found ClusterTrainingRuntime specified in TrainJob"
                                                      : "TrainingRuntime specified in TrainJob is not found",
                     kind == "ClusterTrainingRuntime" ? "clustertrainingruntimes" : "trainingruntimes",
                     string_of(ref, "name"))});
  } else if (!finished && (!existing || suspend || jobset_suspended)) {
    // The JobSet as the runtime framework builds it.
    json::object tspec = object_at(*runtime, {"spec", "template", "spec"})
                             ? *object_at(*runtime, {"spec", "template", "spec"})
                             : json::object{};
    json::object labels, annotations;
    merge_map(labels, object_at(*runtime, {"spec", "template", "metadata", "labels"}));
    merge_map(annotations, object_at(*runtime, {"spec", "template", "metadata", "annotations"}));
    if (const json::array* patches = util::array_at(tj, {"spec"}, "runtimePatches"))
      for (const auto& p : *patches)
        if (p.is_object()) {
          merge_map(labels, object_at(p.as_object(), {"trainingRuntimeSpec", "template", "metadata", "labels"}));
          merge_map(annotations,
                    object_at(p.as_object(), {"trainingRuntimeSpec", "template", "metadata", "annotations"}));
        }
    merge_runtime_patches(tj, tspec);
    const json::object* ml = object_at(*runtime, {"spec", "mlPolicy"});
    const json::object* res_per_node = trainer ? object_at(*trainer, {"resourcesPerNode"}) : nullptr;
    if (auto* rjobs = tspec.if_contains("replicatedJobs"); rjobs && rjobs->is_array())
      for (auto& rv : rjobs->as_array()) {
        if (!rv.is_object()) continue;
        json::object& r = rv.as_object();
        const bool is_trainer =
            string_of(object_at(r, {"template", "metadata", "labels"}), kAncestorLabel) == "trainer";
        if (is_trainer || !string_of(object_at(r, {"template", "metadata", "labels"}), kAncestorLabel).empty())
          r["replicas"] = 1;  // builder.go Trainer / Initializer
        // (references into `r` only after its last new member: adding one may move the others)
        json::object& jspec = ensure_object(ensure_object(r, "template"), "spec");
        std::int64_t count = util::int_of(&jspec, "parallelism", 1);
        if (is_trainer && ml) count = util::int_of(ml, "numNodes", 1);
        if (is_trainer && trainer && trainer->contains("numNodes")) count = util::int_of(trainer, "numNodes", 1);
        jspec["parallelism"] = count;
        jspec["completions"] = count;
        json::object& pspec = ensure_object(ensure_object(jspec, "template"), "spec");
        json::object* node = is_trainer ? container_named(pspec, "node") : nullptr;
        if (!node) continue;
        if (res_per_node) {
          json::value cur = node->contains("resources") ? (*node)["resources"] : json::value(json::object{});
          (*node)["resources"] = strategic_merge_patch(cur, *res_per_node, "Pod");
        }
        if (!trainer) continue;
        if (const json::value* v = trainer->if_contains("image")) (*node)["image"] = *v;
        if (const json::value* v = trainer->if_contains("command")) (*node)["command"] = *v;
        if (const json::value* v = trainer->if_contains("args")) (*node)["args"] = *v;
        if (const json::array* env = util::array_at(*trainer, {}, "env"))
          for (const auto& e : *env)
            if (e.is_object()) upsert_env(*node, e.as_object());
        if (ml && ml->contains("torch")) {
          const json::object* res = node->contains("resources") && (*node)["resources"].is_object()
                                        ? &(*node)["resources"].as_object()
                                        : nullptr;
          std::string nproc = "auto";
          if (trainer->contains("numProcPerNode"))
            nproc = std::to_string(util::int_of(trainer, "numProcPerNode", 1));
          else if (gpus_per_node(res) == 0)
            nproc = std::to_string(std::max<std::int64_t>(1, cpus_per_node(res)));
          upsert_env(*node, json::object{{"name", "PET_NNODES"}, {"value", std::to_string(count)}});
          upsert_env(*node, json::object{{"name", "PET_NPROC_PER_NODE"}, {"value", nproc}});
          upsert_env(*node,
                     json::object{{"name", "PET_NODE_RANK"},
                                  {"valueFrom",
                                   json::object{{"fieldRef", json::object{{"fieldPath",
                                                                           "metadata.annotations['batch.kubernetes.io/"
                                                                           "job-completion-index']"}}}}}});
          upsert_env(*node,
                     json::object{{"name", "PET_MASTER_ADDR"}, {"value", fmt::format("{}-node-0-0.{}", name, name)}});
          upsert_env(*node, json::object{{"name", "PET_MASTER_PORT"}, {"value", std::to_string(kTrainerPort)}});
          auto& ports = (*node)["ports"];
          if (!ports.is_array()) ports = json::array{};
          bool has = false;
          for (const auto& p : ports.as_array())
            has = has || (p.is_object() && util::int_of(&p.as_object(), "containerPort", 0) == kTrainerPort);
          if (!has) ports.as_array().push_back(json::object{{"containerPort", kTrainerPort}});
        }
      }
    tspec["suspend"] = suspend;
    json::object md{{"name", name}, {"namespace", ns}};
    if (!labels.empty()) md["labels"] = std::move(labels);
    if (!annotations.empty()) md["annotations"] = std::move(annotations);
    json::object owner = util::controller_reference(tj);
    owner["blockOwnerDeletion"] = true;
    md["ownerReferences"] = json::array{std::move(owner)};
    if (!existing) {
      plan.create.push_back({"jobset.x-k8s.io", "jobsets",
                             json::object{{"apiVersion", "jobset.x-k8s.io/v1alpha2"},
                                          {"kind", "JobSet"},
                                          {"metadata", std::move(md)},
                                          {"spec", std::move(tspec)}}});
    } else if (jobset_suspended != suspend) {
      // Server-side apply of the built JobSet (force ownership) when the suspend changes: its
      // spec's fields replace those the controller owns (so a resumed JobSet gets the patches
      // written while it was suspended, e.g. Kueue's), the rest of the object stays.
      json::object next = *existing;
      json::object& nspec = ensure_object(next, "spec");
      for (const auto& [k, v] : tspec) nspec[k] = v;
      plan.update.push_back({"jobset.x-k8s.io", "jobsets", std::move(next)});
    }
  }

  // setSuspendedCondition.
  {
    const bool was_true = cond_true("Suspended");
    if (suspend && !was_true)
      util::set_condition(conditions, condition("Suspended", true, "Suspended", "TrainJob is suspended", now));
    else if (!suspend && was_true)
      util::set_condition(conditions, condition("Suspended", false, "Resumed", "TrainJob is resumed", now));
  }
  // jobset.go Status: the JobSet's Completed / Failed as Complete / Failed, and its Jobs' counts.
  if (existing) {
    const json::array* jconds = util::array_at(*existing, {"status"}, "conditions");
    for (const auto& [from, to] : {std::pair{"Completed", "Complete"}, std::pair{"Failed", "Failed"}})
      if (const json::object* c = util::find_condition(jconds, from); c && string_of(c, "status") == "True") {
        json::object copy = *c;
        copy["type"] = to;
        util::set_condition(conditions, copy);
      }
    json::array js;
    if (const json::array* rs = util::array_at(*existing, {"status"}, "replicatedJobsStatus"))
      for (const auto& r : *rs) {
        if (!r.is_object()) continue;
        json::object o{{"name", string_of(&r.as_object(), "name")}};
        for (const char* k : {"ready", "succeeded", "failed", "active", "suspended"})
          o[k] = util::int_of(&r.as_object(), k, 0);
        js.push_back(std::move(o));
      }
    if (js.empty())
      status.erase("jobsStatus");
    else
      status["jobsStatus"] = std::move(js);
  }
  if (conditions.empty())
    status.erase("conditions");
  else
    status["conditions"] = std::move(conditions);
  const json::object* old = object_at(tj, {"status"});
  if (!(old ? util::json_equal(*old, status) : status.empty())) plan.status = std::move(status);
  return plan;
}

}  // namespace gpupool::embedded
