// embedded/controller_kubeflow.cpp — the Kubeflow operators (training-operator v1 TFJob,
// PyTorchJob, MPIJob; mpi-operator v2beta1 MPIJob): plan_kubeflow_job.
#include "embedded/controllers.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/encoder.h>
#include <openssl/evp.h>

#include <fmt/format.h>

#include "common/ascii.hpp"
#include "embedded/base64.hpp"
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

using ascii::lower;

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

// ---- mpi-operator v2beta1 (pkg/controller/mpi_job_controller.go, v0.8.2) ----
// What its MPIJobController adds besides the pods and the launcher Job:
//  - the ConfigMap `<job>-config` (newConfigMap, updateDiscoverHostsInConfigMap): `hostfile`, one
//    line per worker `<job>-worker-<i>.<job>.<ns>.svc slots=<slotsPerWorker>` (Intel MPI and MPICH:
//    `<host>:<slots>`; the launcher first with runLauncherAsWorker), and `discover_hosts.sh`
//    echoing the Running workers' names, sorted; kept up to date while the job runs;
//  - the Secret `<job>-ssh` of type kubernetes.io/ssh-auth (newSSHAuthSecret): an ECDSA P-521 key,
//    `ssh-privatekey` PEM ("EC PRIVATE KEY") and `ssh-publickey` in authorized_keys form;
//  - on every pod (setupSSHOnPod): the volume ssh-auth (that Secret: id_rsa, id_rsa.pub,
//    authorized_keys; mode 0600 at /root/.ssh) mounted at sshAuthMountPath on the first container;
//    hostname = the pod's name, subdomain = the job (its headless Service);
//  - workers (newWorker): K_MPI_JOB_ROLE=worker, `/usr/sbin/sshd -De` when the first container has
//    neither command nor args, a DNS search `<job>.<ns>.svc.cluster.local`;
//  - the launcher (newLauncherPodTemplate): K_MPI_JOB_ROLE=launcher, the implementation's env
//    (ompiEnvVars + OMPI_MCA_orte_set_default_slots; intelEnvVars + I_MPI_PERHOST; mpichEnvVars),
//    NVIDIA_VISIBLE_DEVICES / NVIDIA_DRIVER_CAPABILITIES emptied unless it runs as a worker, and the
//    ConfigMap mounted at /etc/mpi (hostfile 0444, discover_hosts.sh 0555).
// The spec's defaults (v2beta1/default.go): slotsPerWorker 1, sshAuthMountPath /root/.ssh,
// mpiImplementation OpenMPI.
struct MpiSpec {
  std::int64_t slots = 1;
  std::string ssh_path = "/root/.ssh", impl = "OpenMPI";
  bool launcher_as_worker = false;
  std::int64_t workers = 0;
};

MpiSpec mpi_spec(const json::object& job) {
  MpiSpec m;
  const json::object* spec = object_at(job, {"spec"});
  m.slots = int_of(spec, "slotsPerWorker", 1);
  if (const std::string p = string_of(spec, "sshAuthMountPath"); !p.empty()) m.ssh_path = p;
  if (const std::string i = string_of(spec, "mpiImplementation"); !i.empty()) m.impl = i;
  const json::value* law = spec ? spec->if_contains("runLauncherAsWorker") : nullptr;
  m.launcher_as_worker = law && law->is_bool() && law->as_bool();
  m.workers = int_of(object_at(job, {"spec", "mpiReplicaSpecs", "Worker"}), "replicas", 0);
  return m;
}

json::object app_labels(const std::string& job) { return json::object{{"app", job}}; }

// newConfigMap + updateDiscoverHostsInConfigMap; `running`: the names of the Running workers.
json::object mpi_config_map(const json::object& job, std::vector<std::string> running) {
  const MpiSpec m = mpi_spec(job);
  const std::string name = name_of(job), ns = namespace_of(job);
  auto host = [&](const std::string& pod) { return fmt::format("{}.{}.{}.svc", pod, name, ns); };
  auto line = [&](const std::string& pod) {
    return m.impl == "OpenMPI" ? fmt::format("{} slots={}\n", host(pod), m.slots)
                               : fmt::format("{}:{}\n", host(pod), m.slots);
  };
  std::string hostfile;
  if (m.launcher_as_worker) hostfile += line(name + "-launcher");
  for (std::int64_t i = 0; i < m.workers; ++i) hostfile += line(fmt::format("{}-worker-{}", name, i));
  std::sort(running.begin(), running.end());
  std::string discover = "#!/bin/sh\n";
  if (m.launcher_as_worker) discover += fmt::format("echo {}\n", host(name + "-launcher"));
  for (const auto& p : running) discover += fmt::format("echo {}\n", host(p));
  return json::object{{"apiVersion", "v1"},
                      {"kind", "ConfigMap"},
                      {"metadata", json::object{{"name", name + "-config"},
                                                {"namespace", ns},
                                                {"labels", app_labels(name)},
                                                {"ownerReferences", json::array{util::controller_reference(job)}}}},
                      {"data", json::object{{"hostfile", hostfile}, {"discover_hosts.sh", discover}}}};
}

// An SSH wire-format string: uint32 length, then the bytes (RFC 4251 section 5).
std::string ssh_string(std::string_view s) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((s.size() >> (24 - 8 * i)) & 0xff);
  return out.append(s);
}

// newSSHAuthSecret: a fresh ECDSA P-521 key (nullopt when OpenSSL cannot make one).
std::optional<json::object> mpi_ssh_secret(const json::object& job) {
  EVP_PKEY* key = EVP_EC_gen("P-521");
  if (!key) return std::nullopt;
  std::string pem, point(200, '\0');
  unsigned char* der = nullptr;
  std::size_t der_len = 0, point_len = 0;
  // x509.MarshalECPrivateKey + pem "EC PRIVATE KEY": OpenSSL's "type-specific" (SEC1) encoding.
  if (OSSL_ENCODER_CTX* enc =
          OSSL_ENCODER_CTX_new_for_pkey(key, OSSL_KEYMGMT_SELECT_KEYPAIR, "PEM", "type-specific", nullptr)) {
    if (OSSL_ENCODER_to_data(enc, &der, &der_len) == 1 && der) pem.assign(reinterpret_cast<char*>(der), der_len);
    OPENSSL_free(der);
    OSSL_ENCODER_CTX_free(enc);
  }
  const bool has_point =
      EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, reinterpret_cast<unsigned char*>(point.data()),
                                      point.size(), &point_len) == 1;
  EVP_PKEY_free(key);
  if (pem.empty() || !has_point) return std::nullopt;
  point.resize(point_len);
  // ssh.MarshalAuthorizedKey: "<type> <base64 of the wire key>\n" (RFC 5656 section 3.1).
  const std::string wire = ssh_string("ecdsa-sha2-nistp521") + ssh_string("nistp521") + ssh_string(point);
  const std::string authorized = "ecdsa-sha2-nistp521 " + base64_encode(wire) + "\n";
  const std::string name = name_of(job);
  return json::object{
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata", json::object{{"name", name + "-ssh"},
                                {"namespace", namespace_of(job)},
                                {"labels", app_labels(name)},
                                {"ownerReferences", json::array{util::controller_reference(job)}}}},
      {"type", "kubernetes.io/ssh-auth"},
      {"data", json::object{{"ssh-privatekey", base64_encode(pem)}, {"ssh-publickey", base64_encode(authorized)}}}};
}

void push_env(json::object& container, const std::string& name, const std::string& value) {
  json::value& env = container["env"];
  if (!env.is_array()) env = json::array{};
  env.as_array().push_back(env_var(name, value));
}

void push_volume(json::object& pod_spec, json::object& container, json::object volume, const std::string& mount) {
  json::value& vols = pod_spec["volumes"];
  if (!vols.is_array()) vols = json::array{};
  const std::string vname = string_of(&volume, "name");
  vols.as_array().push_back(std::move(volume));
  json::value& mounts = container["volumeMounts"];
  if (!mounts.is_array()) mounts = json::array{};
  mounts.as_array().push_back(json::object{{"name", vname}, {"mountPath", mount}});
}

// What newWorker / newLauncherPodTemplate add to a pod spec (`role`: "worker" or "launcher").
void decorate_mpi_pod(const json::object& job, json::object& pod_spec, const std::string& pod_hostname,
                      const std::string& role) {
  const MpiSpec m = mpi_spec(job);
  const std::string name = name_of(job), ns = namespace_of(job);
  pod_spec["hostname"] = pod_hostname;
  pod_spec["subdomain"] = name;
  if (const json::value* hn = pod_spec.if_contains("hostNetwork"); hn && hn->is_bool() && hn->as_bool())
    pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet";
  json::value* cs = pod_spec.if_contains("containers");
  if (!cs || !cs->is_array() || cs->as_array().empty() || !cs->as_array()[0].is_object()) return;
  json::object& c = cs->as_array()[0].as_object();
  if (role == "worker") {
    auto& dns = ensure_object(pod_spec, "dnsConfig");
    json::value& searches = dns["searches"];
    if (!searches.is_array()) searches = json::array{};
    searches.as_array().push_back(json::string(fmt::format("{}.{}.svc.cluster.local", name, ns)));
    const json::value* cmd = c.if_contains("command");
    const json::value* args = c.if_contains("args");
    if ((!cmd || !cmd->is_array() || cmd->as_array().empty()) &&
        (!args || !args->is_array() || args->as_array().empty()))
      c["command"] = json::array{"/usr/sbin/sshd", "-De"};
    push_env(c, "K_MPI_JOB_ROLE", "worker");
  } else {
    push_env(c, "K_MPI_JOB_ROLE", "launcher");
    const std::string slots = std::to_string(m.slots);
    if (m.impl == "OpenMPI") {
      push_env(c, "OMPI_MCA_orte_keep_fqdn_hostnames", "true");
      push_env(c, "OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile");
      push_env(c, "OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10");
      push_env(c, "OMPI_MCA_orte_set_default_slots", slots);
    } else if (m.impl == "Intel") {
      push_env(c, "I_MPI_HYDRA_HOST_FILE", "/etc/mpi/hostfile");
      push_env(c, "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10");
      push_env(c, "I_MPI_PERHOST", slots);
    } else if (m.impl == "MPICH") {
      push_env(c, "HYDRA_HOST_FILE", "/etc/mpi/hostfile");
      push_env(c, "HYDRA_LAUNCH_EXTRA_ARGS", "-o ConnectionAttempts=10");
    }
    if (!m.launcher_as_worker)
      for (const char* v : {"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"}) {
        json::value& env = c["env"];
        env.as_array().push_back(json::object{{"name", v}});
      }
  }
  json::object secret{{"secretName", name + "-ssh"},
                      {"items", json::array{json::object{{"key", "ssh-privatekey"}, {"path", "id_rsa"}},
                                            json::object{{"key", "ssh-publickey"}, {"path", "id_rsa.pub"}},
                                            json::object{{"key", "ssh-publickey"}, {"path", "authorized_keys"}}}}};
  if (m.ssh_path == "/root/.ssh") secret["defaultMode"] = 0600;
  push_volume(pod_spec, c, json::object{{"name", "ssh-auth"}, {"secret", std::move(secret)}}, m.ssh_path);
  if (role == "launcher")
    push_volume(
        pod_spec, c,
        json::object{
            {"name", "mpi-job-config"},
            {"configMap",
             json::object{{"name", name + "-config"},
                          {"items", json::array{json::object{{"key", "hostfile"}, {"path", "hostfile"}, {"mode", 0444}},
                                                json::object{{"key", "discover_hosts.sh"},
                                                             {"path", "discover_hosts.sh"},
                                                             {"mode", 0555}}}}}}},
        "/etc/mpi");
}

}  // namespace

Plan plan_kubeflow_job(const json::object& job, const Children& children, Clock::time_point now) {
  Plan plan;
  const Flavor f = flavor_of(job);
  const std::string name = name_of(job), ns = namespace_of(job);
  const json::object* specs = object_at(job, {"spec", f.specs_key});
  const auto types = replica_types(f, specs);

  std::map<std::string, const json::object*> pods_by_name, services_by_name, jobs_by_name, configs_by_name;
  for (const auto& c : children) {
    const std::string kind = string_of(c.get(), "kind");
    if (kind == "ConfigMap" || kind == "Secret") {
      configs_by_name[kind + "/" + name_of(*c)] = c.get();
      continue;
    }
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
          decorate_mpi_pod(job, ensure_object(pod_tmpl, "spec"), jname, "launcher");
          json::object ljob{
              {"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", json::object{{"name", jname},
                                        {"namespace", ns},
                                        {"labels", app_labels(name)},  // newLauncherJob
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
        if (f.mpi_v2) decorate_mpi_pod(job, pspec, pod_name, "worker");
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
  // mpi-operator v2beta1 (syncHandler, while the launcher has not finished): the ConfigMap (kept
  // up to date) and the SSH Secret, before the pods that mount them.
  if (f.mpi_v2 && !finished) {
    std::vector<std::string> running;
    for (const auto& [pname, p] : pods_by_name)
      if (pname.rfind(name + "-worker-", 0) == 0 && phase_of(*p) == "Running") running.push_back(pname);
    json::object cm = mpi_config_map(job, std::move(running));
    std::vector<Plan::Create> first;
    if (auto it = configs_by_name.find("ConfigMap/" + name + "-config"); it == configs_by_name.end()) {
      first.push_back({"", "configmaps", std::move(cm)});
    } else if (const json::object* data = object_at(*it->second, {"data"});
               !data || !util::json_equal(*data, cm["data"].as_object())) {
      json::object updated = *it->second;
      updated["data"] = cm["data"];
      plan.update.push_back({"", "configmaps", std::move(updated)});
    }
    if (!configs_by_name.count("Secret/" + name + "-ssh"))
      if (auto secret = mpi_ssh_secret(job)) first.push_back({"", "secrets", std::move(*secret)});
    plan.create.insert(plan.create.begin(), std::make_move_iterator(first.begin()),
                       std::make_move_iterator(first.end()));
  }
  // mpi-operator v2beta1 (newJobService, newService): one headless Service named after the job,
  // labelled app=<job>, selecting the job's pods (launcher and workers: their DNS names
  // `<pod>.<job>.<ns>.svc` are the hostfile's), publishing not-ready addresses only when the
  // launcher runs as a worker.
  if (f.mpi_v2 && !services_by_name.count(name) && !finished) {
    json::object sspec{{"clusterIP", "None"},
                       {"selector", json::object{{"training.kubeflow.org/operator-name", f.operator_name},
                                                 {"training.kubeflow.org/job-name", name}}}};
    if (mpi_spec(job).launcher_as_worker) sspec["publishNotReadyAddresses"] = true;
    plan.create.push_back(
        {"", "services",
         json::object{{"apiVersion", "v1"},
                      {"kind", "Service"},
                      {"metadata", json::object{{"name", name},
                                                {"namespace", ns},
                                                {"labels", app_labels(name)},
                                                {"ownerReferences", json::array{util::controller_reference(job)}}}},
                      {"spec", std::move(sspec)}}});
  }
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
