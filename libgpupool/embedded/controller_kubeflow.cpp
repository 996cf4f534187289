// embedded/controller_kubeflow.cpp — the Kubeflow operators (training-operator v1 TFJob,
// PyTorchJob, MPIJob; mpi-operator v2beta1 MPIJob): plan_kubeflow_job.
#include "embedded/controllers.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

namespace {

struct Flavor {
  std::string kind;           // "TFJob"
  std::string specs_key;      // "tfReplicaSpecs"
  std::string operator_name;  // "tfjob-controller"
  int port = 0;               // default port of the Service per replica (0: no Services)
  std::string port_name;
  bool mpi_v2 = false;
};

Flavor flavor_of(const json::object& job) {
  const std::string kind = string_of(&job, "kind");
  const std::string api = string_of(&job, "apiVersion");
  if (kind == "TFJob") return {kind, "tfReplicaSpecs", "tfjob-controller", 2222, "tfjob-port"};
  if (kind == "PyTorchJob") return {kind, "pytorchReplicaSpecs", "pytorchjob-controller", 23456, "pytorchjob-port"};
  if (api == "kubeflow.org/v2beta1") return {kind, "mpiReplicaSpecs", "mpi-operator", 0, "", true};
  return {kind, "mpiReplicaSpecs", "mpijob-controller", 0, ""};
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Replica types in the order the operators iterate them.
std::vector<std::string> replica_types(const Flavor& f, const json::object* specs) {
  static const std::map<std::string, std::vector<std::string>> order{
      {"TFJob", {"Chief", "Evaluator", "Master", "PS", "Worker"}},
      {"PyTorchJob", {"Master", "Worker"}},
      {"MPIJob", {"Launcher", "Worker"}}};
  std::vector<std::string> out;
  if (!specs) return out;
  for (const auto& t : order.at(f.kind))
    if (specs->contains(t)) out.push_back(t);
  return out;
}

bool is_master_role(const Flavor& f, const json::object* specs, const std::string& rtype, std::int64_t index) {
  if (f.kind == "MPIJob") return rtype == "Launcher";
  if (f.kind == "PyTorchJob") return rtype == "Master";
  if (specs && (specs->contains("Chief") || specs->contains("Master"))) return rtype == "Chief" || rtype == "Master";
  return rtype == "Worker" && index == 0;
}

std::string clean_pod_policy(const json::object& job) {
  std::string p = string_of(object_at(job, {"spec", "runPolicy"}), "cleanPodPolicy");
  if (p.empty()) p = string_of(object_at(job, {"spec"}), "cleanPodPolicy");
  return p.empty() ? "None" : p;
}

// The port of a replica type: its default container's port of the operator's port name (the
// webhook defaults it), else the default port (GetPortFromTFJob / getPortFromPyTorchJob).
std::int64_t replica_port(const Flavor& f, const json::object* specs, const std::string& rtype) {
  const char* container = f.kind == "TFJob" ? "tensorflow" : "pytorch";
  if (const json::array* cs = util::array_at(*specs, {rtype, "template", "spec"}, "containers"))
    for (const auto& c : *cs) {
      if (!c.is_object() || string_of(&c.as_object(), "name") != container) continue;
      if (const json::value* ports = c.as_object().if_contains("ports"); ports && ports->is_array())
        for (const auto& p : ports->as_array())
          if (p.is_object() && string_of(&p.as_object(), "name") == f.port_name)
            return int_of(&p.as_object(), "containerPort", f.port);
    }
  return f.port;
}

json::object env_var(const std::string& name, const std::string& value) {
  return json::object{{"name", name}, {"value", value}};
}

// The env each operator adds to a replica's pod, in its order:
//  - PyTorchJob (training-operator pkg/controller.v1/pytorch/envvar.go setPodEnv, master.go): every
//    container gets PYTHONUNBUFFERED; with a Master replica, MASTER_PORT, PET_MASTER_PORT,
//    MASTER_ADDR, PET_MASTER_ADDR (the master's Service, "<job>-master-0"), WORLD_SIZE (replicas x
//    nprocPerNode), RANK and PET_NODE_RANK (workers: index + 1); PET_NPROC_PER_NODE when set;
//    PET_NNODES (the replica count) unless elastic.
//  - TFJob (tensorflow/tensorflow.go genTFConfigJSONStr, tfjob_controller.go SetClusterSpec):
//    TF_CONFIG on the "tensorflow" container, when the job has more than one replica; the cluster
//    lists "<job>-<type>-<i>.<ns>.svc:<port>" per type (Go marshals the map with sorted keys).
json::array operator_env(const Flavor& f, const json::object& job, const std::string& rtype, std::int64_t index,
                         std::int64_t world) {
  const json::object* specs = object_at(job, {"spec", f.specs_key});
  const std::string name = name_of(job), ns = namespace_of(job);
  json::array env;
  if (f.kind == "PyTorchJob") {
    env.push_back(env_var("PYTHONUNBUFFERED", "1"));
    const json::object* spec = object_at(job, {"spec"});
    const std::string nproc = string_of(spec, "nprocPerNode");
    std::int64_t per_node = 1;
    if (!nproc.empty() && std::all_of(nproc.begin(), nproc.end(), [](char c) { return std::isdigit(c); }))
      per_node = std::stoll(nproc);
    if (specs->contains("Master")) {
      const std::string port = std::to_string(replica_port(f, specs, "Master"));
      const std::string addr = name + "-master-0";
      const std::int64_t rank = rtype == "Worker" ? index + 1 : index;
      for (const auto& [k, v] : {std::pair<std::string, std::string>{"MASTER_PORT", port},
                                 {"PET_MASTER_PORT", port},
                                 {"MASTER_ADDR", addr},
                                 {"PET_MASTER_ADDR", addr},
                                 {"WORLD_SIZE", std::to_string(world * per_node)},
                                 {"RANK", std::to_string(rank)},
                                 {"PET_NODE_RANK", std::to_string(rank)}})
        env.push_back(env_var(k, v));
    }
    if (!nproc.empty()) env.push_back(env_var("PET_NPROC_PER_NODE", nproc));
    if (!object_at(job, {"spec", "elasticPolicy"})) env.push_back(env_var("PET_NNODES", std::to_string(world)));
  } else if (f.kind == "TFJob" && world != 1) {
    json::object cluster;
    for (const auto& t : replica_types(f, specs)) {
      json::array hosts;
      const std::int64_t port = replica_port(f, specs, t);
      for (std::int64_t k = 0; k < int_of(object_at(*specs, {t}), "replicas", 1); ++k)
        hosts.push_back(json::string(fmt::format("{}-{}-{}.{}.svc:{}", name, lower(t), k, ns, port)));
      cluster[lower(t)] = std::move(hosts);
    }
    json::object tf{{"cluster", std::move(cluster)},
                    {"task", json::object{{"type", lower(rtype)}, {"index", index}}},
                    {"environment", "cloud"}};
    env.push_back(env_var("TF_CONFIG", json::serialize(tf)));
  }
  return env;
}

}  // namespace

Plan plan_kubeflow_job(const json::object& job, const Children& children, Clock::time_point now) {
  Plan plan;
  const Flavor f = flavor_of(job);
  const std::string name = name_of(job), ns = namespace_of(job);
  const json::object* specs = object_at(job, {"spec", f.specs_key});
  const auto types = replica_types(f, specs);

  std::map<std::string, const json::object*> pods_by_name, services_by_name, jobs_by_name;
  for (const auto& c : children) {
    const std::string kind = string_of(c.get(), "kind");
    (kind == "Pod" ? pods_by_name : kind == "Service" ? services_by_name : jobs_by_name)[name_of(*c)] = c.get();
  }
  json::object status = object_at(job, {"status"}) ? *object_at(job, {"status"}) : json::object{};
  json::array conditions;
  if (const json::array* c = util::array_at(job, {"status"}, "conditions")) conditions = *c;
  const bool finished = [&] {
    for (const char* t : {"Succeeded", "Failed"})
      if (const auto* c = util::find_condition(&conditions, t); c && string_of(c, "status") == "True") return true;
    return false;
  }();
  // Created: training-operator's onOwnerCreateFunc ("TFJob %s is created."); mpi-operator and the
  // training-operator MPIJob controller say "MPIJob %s/%s is created.".
  if (!util::find_condition(&conditions, "Created"))
    util::set_condition(conditions, condition("Created", true, f.kind + "Created",
                                              f.kind == "MPIJob" ? fmt::format("MPIJob {}/{} is created.", ns, name)
                                                                 : fmt::format("{} {} is created.", f.kind, name),
                                              now));
  // runPolicy.suspend (Kueue suspends queued jobs): training-operator v1.9 controller.v1/common/job.go
  // ReconcileJobs deletes a suspended job's pods and services, sets Running False and Suspended True
  // ("<Kind>Suspended", "<Kind> <name> is suspended."); on resume Suspended False ("<Kind>Resumed",
  // "... is resumed.") and startTime reset.
  const json::object* run_policy = object_at(job, {"spec", "runPolicy"});
  const json::value* suspend = run_policy ? run_policy->if_contains("suspend") : nullptr;
  const json::object* suspended_c = util::find_condition(&conditions, "Suspended");
  const bool was_suspended = suspended_c && string_of(suspended_c, "status") == "True";
  if (!finished && suspend && suspend->is_bool() && suspend->as_bool()) {
    for (const auto& c : children) {
      const std::string kind = string_of(c.get(), "kind");
      plan.remove.push_back({kind == "Job" ? "batch" : "",
                             kind == "Pod"       ? "pods"
                             : kind == "Service" ? "services"
                                                 : "jobs",
                             name_of(*c)});
    }
    const std::string msg = fmt::format("{} {} is suspended.", f.kind, name);
    if (const json::object* running = util::find_condition(&conditions, "Running");
        running && string_of(running, "status") == "True")
      util::set_condition(conditions, condition("Running", false, f.kind + "Suspended", msg, now));
    if (!was_suspended) util::set_condition(conditions, condition("Suspended", true, f.kind + "Suspended", msg, now));
    if (json::value* rs = status.if_contains("replicaStatuses"); rs && rs->is_object())
      for (auto& [rt, st] : rs->as_object())
        if (st.is_object()) st.as_object().erase("active");
    status["conditions"] = std::move(conditions);
    const json::object* old = object_at(job, {"status"});
    if (!old || !util::json_equal(*old, status)) plan.status = std::move(status);
    return plan;
  }
  if (was_suspended) {
    util::set_condition(conditions, condition("Suspended", false, f.kind + "Resumed",
                                              fmt::format("{} {} is resumed.", f.kind, name), now));
    status["startTime"] = to_rfc3339(now);
  }
  if (!status.contains("startTime")) status["startTime"] = to_rfc3339(now);

  // World size for PyTorch's env (sum of replicas).
  std::int64_t world = 0;
  // A replica spec holds `replicas` itself (not under spec, as a Deployment does).
  for (const auto& t : types) world += count_of(object_at(*specs, {t}), "replicas", 1);

  json::object replica_statuses;
  std::map<std::string, std::int64_t> active, succeeded, failed;
  std::vector<std::string> members;  // pod names (for cleanPodPolicy)
  for (const auto& rtype : types) {
    const json::object& rspec = *object_at(*specs, {rtype});
    const std::int64_t n = count_of(&rspec, "replicas", 1);
    const std::string rt = lower(rtype);
    const json::object empty;
    const json::object* tmpl = object_at(rspec, {"template"});
    std::string restart = string_of(&rspec, "restartPolicy");
    if (restart.empty() || restart == "ExitCode") restart = "Never";
    for (std::int64_t i = 0; i < n; ++i) {
      // The v2beta1 launcher is a batch/v1 Job; its pod belongs to that Job.
      if (f.mpi_v2 && rtype == "Launcher") {
        const std::string jname = name + "-launcher";
        auto it = jobs_by_name.find(jname);
        if (it == jobs_by_name.end()) {
          if (finished) continue;
          json::object pod_tmpl = tmpl ? *tmpl : empty;
          auto& labels = ensure_object(ensure_object(pod_tmpl, "metadata"), "labels");
          labels["training.kubeflow.org/job-name"] = name;
          labels["training.kubeflow.org/job-role"] = "launcher";
          labels["training.kubeflow.org/operator-name"] = f.operator_name;
          ensure_object(pod_tmpl, "spec")["restartPolicy"] = restart == "Always" ? "OnFailure" : restart;
          json::object ljob{
              {"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata",
               json::object{{"name", jname},
                            {"namespace", ns},
                            {"labels", json::object{{"training.kubeflow.org/job-name", name},
                                                    {"training.kubeflow.org/job-role", "launcher"},
                                                    {"training.kubeflow.org/operator-name", f.operator_name}}},
                            {"ownerReferences", json::array{util::controller_reference(job)}}}},
              {"spec", json::object{{"backoffLimit", 6}, {"template", std::move(pod_tmpl)}}}};
          plan.create.push_back({"batch", "jobs", std::move(ljob)});
          continue;
        }
        const json::object* js = object_at(*it->second, {"status"});
        const json::array* jc = util::array_at(*it->second, {"status"}, "conditions");
        if (util::find_condition(jc, "Complete"))
          ++succeeded[rtype];
        else if (util::find_condition(jc, "Failed"))
          ++failed[rtype];
        else if (int_of(js, "active", 0) > 0)
          active[rtype] += int_of(js, "ready", 0) > 0 ? 1 : 0;
        continue;
      }
      // training-operator v1 (pkg/controller.v1/mpi, MPIJobReconciler.newLauncher) creates the
      // launcher as a Pod named mpiJob.Name + "-launcher" itself; the seed's
      // "mpi-dist-launcher-jgms7" is the pod of a launcher *Job*, which is what the standalone
      // mpi-operator (v1alpha1/v1alpha2, and v2beta1's newLauncherJob above) creates. So v1 keeps
      // the bare name and v2beta1 gives the seed's form.
      const std::string pod_name =
          f.kind == "MPIJob" && rtype == "Launcher" ? name + "-launcher" : fmt::format("{}-{}-{}", name, rt, i);
      members.push_back(pod_name);
      std::map<std::string, std::string> labels;
      if (f.mpi_v2) {
        labels = {{"training.kubeflow.org/job-name", name},
                  {"training.kubeflow.org/job-role", rt},
                  {"training.kubeflow.org/operator-name", f.operator_name},
                  {"training.kubeflow.org/replica-index", std::to_string(i)}};
      } else {
        labels = {{"training.kubeflow.org/job-name", name},
                  {"training.kubeflow.org/operator-name", f.operator_name},
                  {"training.kubeflow.org/replica-type", rt},
                  {"training.kubeflow.org/replica-index", std::to_string(i)}};
        if (is_master_role(f, specs, rtype, i)) labels["training.kubeflow.org/job-role"] = "master";
      }
      auto it = pods_by_name.find(pod_name);
      if (it == pods_by_name.end()) {
        if (finished) continue;
        json::object pod = pod_from_template(tmpl ? *tmpl : empty, job, pod_name, "", labels);
        auto& pspec = ensure_object(pod, "spec");
        pspec["restartPolicy"] = restart;
        if (!f.mpi_v2 && f.port) pspec["hostname"] = pod_name;
        // The rendezvous environment the operators set (operator_env); the template's env first.
        const auto env_add = operator_env(f, job, rtype, i, world);
        if (json::value* cs = pspec.if_contains("containers"); cs && cs->is_array() && !env_add.empty())
          for (auto& c : cs->as_array()) {
            if (!c.is_object()) continue;
            if (f.kind == "TFJob" && string_of(&c.as_object(), "name") != "tensorflow") continue;
            json::value& env = c.as_object()["env"];
            if (!env.is_array()) env = json::array{};
            for (const auto& e : env_add) env.as_array().push_back(e);
          }
        plan.create.push_back({"", "pods", std::move(pod)});
        if (f.port && !services_by_name.count(pod_name)) {
          // The replica type's port (training-operator v1.9.0 common/service.go CreateNewService:
          // GetPortFromJob), e.g. Arena's --worker-port, as TF_CONFIG names it.
          const std::int64_t port = replica_port(f, specs, rtype);
          json::object sel;
          for (const auto& [k, v] : labels)
            if (k != "training.kubeflow.org/job-role") sel[k] = v;
          json::object svc_labels;
          for (const auto& [k, v] : labels) svc_labels[k] = v;
          plan.create.push_back(
              {"", "services",
               json::object{
                   {"apiVersion", "v1"},
                   {"kind", "Service"},
                   {"metadata", json::object{{"name", pod_name},
                                             {"namespace", ns},
                                             {"labels", std::move(svc_labels)},
                                             {"ownerReferences", json::array{util::controller_reference(job)}}}},
                   {"spec", json::object{{"clusterIP", "None"},
                                         {"selector", std::move(sel)},
                                         {"ports", json::array{json::object{{"name", f.port_name},
                                                                            {"port", port},
                                                                            {"protocol", "TCP"},
                                                                            {"targetPort", port}}}}}}}});
        }
        continue;
      }
      const std::string ph = phase_of(*it->second);
      if (ph == "Succeeded")
        ++succeeded[rtype];
      else if (ph == "Failed")
        ++failed[rtype];
      else if (ph == "Running")
        ++active[rtype];
    }
    replica_statuses[rtype] =
        json::object{{"active", active[rtype]}, {"succeeded", succeeded[rtype]}, {"failed", failed[rtype]}};
    if (f.mpi_v2) {
      auto& rs = replica_statuses[rtype].as_object();
      for (const char* k : {"active", "succeeded", "failed"})
        if (rs[k].as_int64() == 0) rs.erase(k);
    }
  }
  // mpi-operator v2beta1: one headless Service named after the job, selecting the workers.
  if (f.mpi_v2 && !services_by_name.count(name) && !finished)
    plan.create.push_back(
        {"", "services",
         json::object{
             {"apiVersion", "v1"},
             {"kind", "Service"},
             {"metadata",
              json::object{{"name", name},
                           {"namespace", ns},
                           {"labels", json::object{{"training.kubeflow.org/job-name", name},
                                                   {"training.kubeflow.org/operator-name", f.operator_name}}},
                           {"ownerReferences", json::array{util::controller_reference(job)}}}},
             {"spec", json::object{{"clusterIP", "None"},
                                   {"publishNotReadyAddresses", true},
                                   {"selector", json::object{{"training.kubeflow.org/job-name", name},
                                                             {"training.kubeflow.org/job-role", "worker"}}}}}}});
  status["replicaStatuses"] = std::move(replica_statuses);

  if (!finished) {
    auto total = [&](const std::string& t) {
      return specs && specs->contains(t) ? count_of(object_at(*specs, {t}), "replicas", 1) : 0;
    };
    // Who decides success: the launcher (MPI), the master (PyTorch), the chief/master or worker 0
    // (TF's default success policy) — and any permanently failed replica fails the job.
    bool success = false, running = false;
    std::string failed_type;
    if (f.kind == "MPIJob") {
      success = succeeded["Launcher"] > 0;
      running = active["Launcher"] > 0 && active["Worker"] == total("Worker");
    } else if (f.kind == "PyTorchJob") {
      success = specs && specs->contains("Master") ? succeeded["Master"] == total("Master")
                                                   : succeeded["Worker"] == total("Worker") && total("Worker") > 0;
      running = active["Master"] > 0 || active["Worker"] > 0;
    } else {
      if (specs && (specs->contains("Chief") || specs->contains("Master"))) {
        const std::string lead = specs->contains("Chief") ? "Chief" : "Master";
        success = succeeded[lead] == total(lead);
        running = active[lead] > 0;
      } else {
        success = pods_by_name.count(name + "-worker-0") && phase_of(*pods_by_name[name + "-worker-0"]) == "Succeeded";
        running = active["Worker"] > 0;
      }
    }
    for (const auto& t : types)
      if (failed[t] > 0 && failed_type.empty()) failed_type = t;
    const std::string who = fmt::format("{}/{}", ns, name);
    auto finish = [&] {
      status["completionTime"] = to_rfc3339(now);
      if (json::object* rc = const_cast<json::object*>(util::find_condition(&conditions, "Running"))) {
        json::object off = *rc;
        off["status"] = "False";
        off["lastTransitionTime"] = to_rfc3339(now);
        util::set_condition(conditions, off);
      }
      const std::string policy = clean_pod_policy(job);
      for (const auto& m : members) {
        auto it = pods_by_name.find(m);
        if (it == pods_by_name.end()) continue;
        if (policy == "All" || (policy == "Running" && !terminal(*it->second))) plan.remove.push_back({"", "pods", m});
      }
    };
    if (success) {
      util::set_condition(conditions, condition("Succeeded", true, f.kind + "Succeeded",
                                                fmt::format("{} {} successfully completed.", f.kind, who), now));
      finish();
    } else if (!failed_type.empty()) {
      const std::string msg = f.kind == "MPIJob" ? fmt::format("MPIJob {} has failed", who)
                                                 : fmt::format("{} {} has failed because {} {} replica(s) failed.",
                                                               f.kind, who, failed[failed_type], failed_type);
      util::set_condition(conditions, condition("Failed", true, f.kind + "Failed", msg, now));
      finish();
    } else if (running) {
      util::set_condition(conditions, condition("Running", true, f.kind + "Running",
                                                fmt::format("{} {} is running.", f.kind, who), now));
    }
  }
  status["conditions"] = std::move(conditions);
  const json::object* old = object_at(job, {"status"});
  if (!old || !util::json_equal(*old, status)) plan.status = std::move(status);
  return plan;
}

}  // namespace gpupool::embedded
