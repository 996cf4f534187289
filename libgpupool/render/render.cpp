#include "gpupool/render.hpp"

#include "common/ascii.hpp"
#include "common/limits.hpp"
#include "render/render_trainjob.hpp"

#include "gpupool/error.hpp"
#include "gpupool/image.hpp"
#include "gpupool/queues.hpp"

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cctype>

namespace gpupool {

namespace json = boost::json;

namespace {

using ascii::lower;

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

json::array strings(const std::vector<std::string>& values) {
  json::array a;
  for (const auto& v : values) a.emplace_back(v);
  return a;
}

json::object string_map(const std::map<std::string, std::string>& m) {
  json::object o;
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

bool path_within(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/');
}

// Which replica a pod template is for; decides GPUs and command.
enum class Role { Single, Launcher, MpiWorker, Ps, Computing };

// Everything the kinds share, computed once from workload + profile.
struct Context {
  const Workload& w;
  const Profile& p;
  std::string ns{};
  std::string image{};
  std::string kind_label{};
  std::vector<Volume> volumes{};
  std::vector<VolumeMount> mounts{};
  std::string ps_image{};                    ///< TFJob PS; empty: image
  std::string worker_image{};                ///< TFJob Worker, Chief, Evaluator; empty: image
  std::vector<VolumeMount> config_mounts{};  ///< --config-file files, on the main containers
  bool uses_gpus = false;
  bool host_network = false;
  bool host_ipc = false;
  std::string scheduler{};
  std::string runtime_class{};  ///< the workload's pods' spec.runtimeClassName
  std::string queue{};          ///< the Kueue LocalQueue (the workload's or the profile's default), or ""

  json::object labels(std::string_view component = {}) const {
    json::object o;
    o[kManagedByLabel] = "gpupool";
    o[kJobNameLabel] = w.name;
    o[kKindLabel] = kind_label;
    if (!component.empty()) o[kComponentLabel] = component;
    return o;
  }

  json::object metadata(const std::string& name, std::string_view component = {}, bool user_meta = true) const {
    json::object m;
    m["name"] = name;
    m["namespace"] = ns;
    json::object l = labels(component);
    if (user_meta)
      for (const auto& [k, v] : w.labels)
        if (!l.contains(k)) l[k] = v;
    m["labels"] = std::move(l);
    if (user_meta && !w.annotations.empty()) m["annotations"] = string_map(w.annotations);
    return m;
  }
};

// ---- volumes -------------------------------------------------------------------------------

void add_profile_volumes(Context& c) {
  const Workload& w = c.w;
  const Profile& p = c.p;
  if (w.ssd) {
    if (p.local_ssds.empty())
      throw ValidationError(
          "ssd", "true",
          fmt::format("profile \"{}\" has no local SSDs; drop ssd=true or use a profile that lists local_ssds",
                      p.name));
    for (std::size_t i = 0; i < p.local_ssds.size(); ++i) {
      std::string name = fmt::format("local-ssd-{}", i + 1);
      c.volumes.push_back({name, HostPathSource{p.local_ssds[i].host_path, HostPathType::Unset}});
      c.mounts.push_back({name, p.local_ssds[i].mount_path, "", false});
    }
  }
  if (w.nfs) {
    if (!p.nfs)
      throw ValidationError("nfs", "true",
                            fmt::format("profile \"{}\" has no NFS share; drop nfs=true or mount a PVC", p.name));
    const NfsShare& share = *p.nfs;
    c.volumes.push_back({"nfs-share", NfsSource{share.server, share.path, false}});
    auto expand = [&](const std::string& s) { return replace_all(s, "{namespace}", c.ns); };
    // The shared datasets are read-only; only the user's own directory is writable.
    if (!share.datasets.mount_path.empty())
      c.mounts.push_back({"nfs-share", expand(share.datasets.mount_path), expand(share.datasets.sub_path), true});
    if (!share.home.mount_path.empty())
      c.mounts.push_back({"nfs-share", expand(share.home.mount_path), expand(share.home.sub_path), false});
  }
  if (w.shm_size) {
    c.volumes.push_back({"dshm", EmptyDirSource{true, w.shm_size}});
    c.mounts.push_back({"dshm", "/dev/shm", "", false});
  }
  if (w.tensorboard.enabled) {
    bool covered = std::any_of(c.mounts.begin(), c.mounts.end(),
                               [&](const VolumeMount& m) { return path_within(w.tensorboard.log_dir, m.mount_path); });
    if (!covered) {
      // As Arena does without a log volume: a node directory shared by the job and TensorBoard
      // (TensorBoard sees it when it runs on the same node; mount a PVC at the log dir otherwise).
      c.volumes.push_back(
          {"tensorboard-logs", HostPathSource{fmt::format("/tmp/gpupool-tensorboard/{}/{}", c.ns, w.name),
                                              HostPathType::DirectoryOrCreate}});
      c.mounts.push_back({"tensorboard-logs", w.tensorboard.log_dir, "", false});
    }
  }
}

json::object volume_json(const Volume& v) {
  json::object o;
  o["name"] = v.name;
  if (const auto* pvc = std::get_if<PvcSource>(&v.source)) {
    json::object s;
    s["claimName"] = pvc->claim_name;
    if (pvc->read_only) s["readOnly"] = true;
    o["persistentVolumeClaim"] = std::move(s);
  } else if (const auto* nfs = std::get_if<NfsSource>(&v.source)) {
    json::object s;
    s["server"] = nfs->server;
    s["path"] = nfs->path;
    if (nfs->read_only) s["readOnly"] = true;
    o["nfs"] = std::move(s);
  } else if (const auto* host = std::get_if<HostPathSource>(&v.source)) {
    json::object s;
    s["path"] = host->path;
    if (host->type != HostPathType::Unset) s["type"] = to_string(host->type);
    o["hostPath"] = std::move(s);
  } else if (const auto* empty = std::get_if<EmptyDirSource>(&v.source)) {
    json::object s;
    if (empty->memory) s["medium"] = "Memory";
    if (empty->size_limit) s["sizeLimit"] = empty->size_limit->to_string();
    o["emptyDir"] = std::move(s);
  } else if (const auto* cm = std::get_if<ConfigMapSource>(&v.source)) {
    o["configMap"] = json::object{{"name", cm->name}};
  }
  return o;
}

json::array mounts_json(const std::vector<VolumeMount>& mounts) {
  json::array a;
  for (const auto& m : mounts) {
    json::object o;
    o["name"] = m.volume;
    o["mountPath"] = m.mount_path;
    if (!m.sub_path.empty()) o["subPath"] = m.sub_path;
    if (m.read_only) o["readOnly"] = true;
    a.push_back(std::move(o));
  }
  return a;
}

// ---- Arena's --sync-mode and --config-file ----------------------------------------------------

json::object head(std::string_view api_version, std::string_view kind, json::object metadata);
json::array mounts_json(const std::vector<VolumeMount>& mounts);

// Arena's charts/*/values.yaml: gitImage and rsyncImage, used when --sync-image is not given.
constexpr std::string_view kArenaGitSyncImage = "registry.cn-zhangjiakou.aliyuncs.com/acs/git-sync:v3.3.5";
constexpr std::string_view kArenaRsyncImage = "registry.cn-zhangjiakou.aliyuncs.com/acs/rsync:v3.1.0-aliyun";

std::string config_map_name(const Workload& w) { return w.name + "-config"; }

// The volumes Arena's charts add for --sync-mode (emptyDir "code-sync", seen by the main container
// at <workingDir>/code, else /code) and --config-file (one ConfigMap; Arena mounts a ConfigMap per
// directory over the whole directory, gpupool mounts each file with subPath so the rest of the
// directory stays visible).
void add_arena_volumes(Context& c) {
  const Workload& w = c.w;
  if (w.code_sync) {
    c.volumes.push_back({"code-sync", EmptyDirSource{false, std::nullopt}});
    std::string dir = w.working_dir.empty() ? "/code" : w.working_dir;
    if (!w.working_dir.empty()) dir += dir.back() == '/' ? "code" : "/code";
    c.mounts.push_back({"code-sync", dir, "", false});
  }
  // The ConfigMap volume is no model VolumeSource: its mounts are kept apart and added to the
  // main containers only (add_config_files).
  for (std::size_t i = 0; i < w.config_files.size(); ++i)
    c.config_mounts.push_back({"config-files", w.config_files[i].path, fmt::format("config-{}", i), true});
}

void add_config_mounts(const Context& c, json::object& main) {
  if (c.config_mounts.empty()) return;
  json::value& mounts = main["volumeMounts"];
  if (!mounts.is_array()) mounts = json::array();
  for (auto& m : mounts_json(c.config_mounts)) mounts.as_array().push_back(std::move(m));
}

void add_config_volume(const Context& c, json::object& spec) {
  if (c.config_mounts.empty()) return;
  json::value& volumes = spec["volumes"];
  if (!volumes.is_array()) volumes = json::array();
  volumes.as_array().push_back(
      json::object{{"name", "config-files"}, {"configMap", json::object{{"name", config_map_name(c.w)}}}});
}

// A ConfigMap created with the submission (a function job's program, --config-file's files),
// checked as ValidateConfigMap checks it (storage.hpp validate).
json::object render_config_map(const Context& c, const ConfigMapRequest& cm, std::string_view field) {
  validate(cm, field);
  json::object o = head("v1", "ConfigMap", c.metadata(cm.name, "config", false));
  o["data"] = string_map(cm.data);
  return o;
}

// --config-file: one ConfigMap holding every file, keyed config-<i>.
json::object render_config_files(const Context& c) {
  ConfigMapRequest cm{config_map_name(c.w), {}};
  for (std::size_t i = 0; i < c.w.config_files.size(); ++i)
    cm.data[fmt::format("config-{}", i)] = c.w.config_files[i].content;
  return render_config_map(c, cm, "configFiles");
}

// Arena's init container "init-code" (charts/tfjob|pytorchjob|mpijob templates): git-sync once
// into /code/<project> (GIT_SYNC_REPO / GIT_SYNC_DEST / GIT_SYNC_ROOT / GIT_SYNC_ONE_TIME), or
// `rsync -avP SOURCE /code`; cpu and memory as the main container's.
json::object code_sync_container(const Context& c, const Resources& r) {
  const CodeSync& s = *c.w.code_sync;
  const bool git = s.mode == "git";
  json::object o;
  o["name"] = "init-code";
  o["image"] =
      c.p.catalog.resolve(s.image.empty() ? (git ? kArenaGitSyncImage : kArenaRsyncImage) : s.image, "codeSync.image");
  if (!c.w.image_pull_policy.empty()) o["imagePullPolicy"] = c.w.image_pull_policy;
  if (git) {
    // SubmitSyncCodeArgsBuilder.handleSyncCode: the project is the source's last path element
    // without ".git".
    std::string_view src = s.source;
    while (!src.empty() && src.back() == '/') src.remove_suffix(1);
    std::string_view project =
        src.substr(src.find_last_of('/') == std::string_view::npos ? 0 : src.find_last_of('/') + 1);
    project = project.substr(0, project.find(".git"));
    json::array env;
    for (auto [k, v] : {std::pair<std::string_view, std::string_view>{"GIT_SYNC_REPO", s.source},
                        {"GIT_SYNC_DEST", project},
                        {"GIT_SYNC_ROOT", "/code"},
                        {"GIT_SYNC_ONE_TIME", "true"}})
      env.push_back(json::object{{"name", k}, {"value", v}});
    o["env"] = std::move(env);
  } else {
    o["command"] = strings({"rsync", "-avP", s.source, "/code"});
  }
  json::object limits, requests;
  if (r.cpu_request) requests["cpu"] = limits["cpu"] = r.cpu_request->to_string();
  if (r.memory_request) requests["memory"] = limits["memory"] = r.memory_request->to_string();
  json::object res;
  if (!limits.empty()) res["limits"] = std::move(limits);
  if (!requests.empty()) res["requests"] = std::move(requests);
  if (!res.empty()) o["resources"] = std::move(res);
  o["volumeMounts"] = json::array{json::object{{"name", "code-sync"}, {"mountPath", "/code"}}};
  return o;
}

// ---- containers ----------------------------------------------------------------------------

std::vector<std::string> main_argv(const Workload& w) {
  if (!w.shell.empty()) return {w.shell_program, "-c", w.shell};
  return w.command;
}

json::object resources_json(const Context& c, const Resources& r, bool gpus) {
  json::object limits, requests;
  if (r.cpu_limit)
    limits["cpu"] = r.cpu_limit->to_string();
  else if (r.cpu_request && c.p.limits_from_requests)
    limits["cpu"] = r.cpu_request->to_string();
  if (r.memory_limit)
    limits["memory"] = r.memory_limit->to_string();
  else if (r.memory_request && c.p.limits_from_requests)
    limits["memory"] = r.memory_request->to_string();
  if (r.cpu_request) requests["cpu"] = r.cpu_request->to_string();
  if (r.memory_request) requests["memory"] = r.memory_request->to_string();
  // Extended resources: the request must equal the limit, so both are written.
  if (gpus && r.gpus > 0) {
    limits[c.p.gpu.resource] = std::to_string(r.gpus);
    requests[c.p.gpu.resource] = std::to_string(r.gpus);
  }
  for (const auto& [name, q] : r.extra) {
    limits[name] = q.to_string();
    requests[name] = q.to_string();
  }
  json::object o;
  if (!limits.empty()) o["limits"] = std::move(limits);
  if (!requests.empty()) o["requests"] = std::move(requests);
  return o;
}

json::array env_json(const Context& c, std::int64_t gpus) {
  json::array a;
  std::vector<EnvVar> env = c.w.env;
  if (gpus > 0)
    for (const auto& e : c.p.gpu.env) {
      bool user_set = std::any_of(c.w.env.begin(), c.w.env.end(), [&](const EnvVar& u) { return u.name == e.name; });
      if (!user_set) env.push_back({e.name, replace_all(e.value, "{gpus}", std::to_string(gpus)), e.field_path});
    }
  for (const auto& e : env) {
    json::object o;
    o["name"] = e.name;
    if (!e.field_path.empty()) {
      json::object ref;
      ref["fieldPath"] = e.field_path;
      json::object from;
      from["fieldRef"] = std::move(ref);
      o["valueFrom"] = std::move(from);
    } else {
      o["value"] = e.value;
    }
    a.push_back(std::move(o));
  }
  return a;
}

json::object container_json(const Context& c, const std::string& name, const std::vector<std::string>& command,
                            bool gpus, bool resources, const Resources& r) {
  json::object o;
  o["name"] = name;
  o["image"] = c.image;
  if (!c.w.image_pull_policy.empty())
    o["imagePullPolicy"] = c.w.image_pull_policy;  // Arena's --image-pull-policy, over the profile's
  else if (!c.p.image_pull_policy.empty())
    o["imagePullPolicy"] = c.p.image_pull_policy;
  if (!command.empty()) o["command"] = strings(command);
  if (!c.w.working_dir.empty()) o["workingDir"] = c.w.working_dir;
  json::array env = env_json(c, gpus ? r.gpus : 0);
  if (!env.empty()) o["env"] = std::move(env);
  if (resources) {
    json::object res = resources_json(c, r, gpus);
    if (!res.empty()) o["resources"] = std::move(res);
  }
  if (!c.mounts.empty()) o["volumeMounts"] = mounts_json(c.mounts);
  return o;
}

// Arena's --worker/--ps-affinity-policy and -constraint, as charts/tfjob/templates/_helpers.tpl
// (setWorkerAffinityFunction, setPSAffinityFunction) renders them on kubernetes.io/hostname:
//   spread:  podAntiAffinity to this job's pods of the same type (preferred: weight 100);
//   binpack: podAffinity to this job's pods (preferred: weight 100, then any PS / worker pods with
//            weights 60 and 30, the other type first), or (required) to this job's pods of the type.
// The chart selects on release=NAME, group-name=kubeflow.org and tf-replica-type=TYPE, labels
// training-operator v1.9.0 no longer sets; here the job is gpupool's job-name label (on every
// pod template) and the type training-operator's training.kubeflow.org/replica-type (lower case).
void add_role_affinity(json::object& spec, const std::string& job, std::string_view replica_type,
                       const RoleSettings& rs) {
  const std::string type = lower(replica_type);
  const std::string other = type == "ps" ? "worker" : "ps";
  auto term = [](const std::string& job_name, const std::string& rtype) {
    json::array exprs;
    auto in = [&](std::string_view key, const std::string& value) {
      exprs.push_back(json::object{{"key", key}, {"operator", "In"}, {"values", json::array{value}}});
    };
    if (!job_name.empty()) in(kJobNameLabel, job_name);
    if (!rtype.empty()) in("training.kubeflow.org/replica-type", rtype);
    return json::object{{"labelSelector", json::object{{"matchExpressions", std::move(exprs)}}},
                        {"topologyKey", "kubernetes.io/hostname"}};
  };
  auto weighted = [](std::int64_t weight, json::object t) {
    return json::object{{"weight", weight}, {"podAffinityTerm", std::move(t)}};
  };
  const bool spread = rs.affinity_policy == "spread";
  json::object rules;
  if (rs.affinity_required)
    rules["requiredDuringSchedulingIgnoredDuringExecution"] = json::array{term(job, type)};
  else if (spread)
    rules["preferredDuringSchedulingIgnoredDuringExecution"] = json::array{weighted(100, term(job, type))};
  else
    rules["preferredDuringSchedulingIgnoredDuringExecution"] =
        json::array{weighted(100, term(job, "")), weighted(60, term("", other)), weighted(30, term("", type))};
  if (!spec.contains("affinity")) spec["affinity"] = json::object{};
  spec["affinity"].as_object()[spread ? "podAntiAffinity" : "podAffinity"] = std::move(rules);
}

// replica_type: a Kubeflow ReplicaSpec's key ("PS", "Worker"...), whose role_settings apply; empty: none.
json::object pod_spec(const Context& c, Role role, const std::string& container_name,
                      std::optional<RestartPolicy> restart, std::string_view replica_type = {}) {
  const Workload& w = c.w;
  const auto rs_it = w.role_settings.find(std::string(replica_type));
  const RoleSettings* rs = rs_it == w.role_settings.end() ? nullptr : &rs_it->second;
  const Resources res = replica_type.empty() ? w.resources : resources_of(w, replica_type);
  json::object spec;
  if (!c.scheduler.empty()) spec["schedulerName"] = c.scheduler;
  if (c.host_network) {
    spec["hostNetwork"] = true;
    // With hostNetwork the pod must opt in to cluster DNS to resolve Services (e.g. the MPI
    // workers' names): kubernetes.io/docs/concepts/services-networking/dns-pod-service.
    spec["dnsPolicy"] = "ClusterFirstWithHostNet";
  }
  if (c.host_ipc) spec["hostIPC"] = true;
  if (!w.priority_class_name.empty()) spec["priorityClassName"] = w.priority_class_name;
  if (!c.runtime_class.empty()) spec["runtimeClassName"] = c.runtime_class;
  if (restart) spec["restartPolicy"] = to_string(*restart);
  // Arena's --<role>-selector replaces --selector for its role (submit_tfjob.go transformSelectorArrayToMap).
  if (rs && !rs->node_selector.empty())
    spec["nodeSelector"] = string_map(rs->node_selector);
  else if (!w.node_selector.empty())
    spec["nodeSelector"] = string_map(w.node_selector);
  if (!w.required_node_affinity.empty()) {
    json::array exprs;
    for (const auto& req : w.required_node_affinity) {
      json::object e;
      e["key"] = req.key;
      e["operator"] = to_string(req.op);
      if (!req.values.empty()) e["values"] = strings(req.values);
      exprs.push_back(std::move(e));
    }
    json::object term;
    term["matchExpressions"] = std::move(exprs);
    json::object required;
    required["nodeSelectorTerms"] = json::array{std::move(term)};
    json::object node_affinity;
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = std::move(required);
    json::object affinity;
    affinity["nodeAffinity"] = std::move(node_affinity);
    spec["affinity"] = std::move(affinity);
  }
  if (rs && !rs->affinity_policy.empty()) add_role_affinity(spec, w.name, replica_type, *rs);
  if (!w.tolerations.empty()) spec["tolerations"] = tolerations_json(w.tolerations);
  if (!w.image_pull_secrets.empty()) {
    json::array a;
    for (const auto& s : w.image_pull_secrets) {
      json::object o;
      o["name"] = s;
      a.push_back(std::move(o));
    }
    spec["imagePullSecrets"] = std::move(a);
  }
  bool gpus = (role != Role::Launcher && role != Role::Ps) || (rs && rs->gpus);
  bool runs_command = role != Role::MpiWorker;
  std::vector<std::string> command;
  if (runs_command) {
    command = main_argv(w);
    if (w.staging && !w.staging->results.empty()) {
      command = staged_command(*w.staging, command);
      // Time to stop the command and copy results back after SIGTERM (staging.hpp).
      spec["terminationGracePeriodSeconds"] = w.staging->grace_period_seconds;
    }
  } else if (w.mpi_api == MpiJobApi::V2Beta1) {
    command = {"/usr/sbin/sshd", "-De"};  // mpi-operator v2: the launcher reaches workers over SSH
  }
  // Stage data into the SSD before the pods that compute start (MPI: the workers).
  bool stages = w.staging && !w.staging->inputs.empty() &&
                (role == Role::Single || role == Role::Computing || role == Role::MpiWorker);
  json::array inits;
  if (w.code_sync) inits.push_back(code_sync_container(c, res));
  if (stages) {
    json::object init =
        container_json(c, "stage-in", {"sh", "-c", stage_in_script(*w.staging)}, false, false, w.resources);
    init.erase("env");
    init.erase("workingDir");
    inits.push_back(std::move(init));
  }
  if (!inits.empty()) spec["initContainers"] = std::move(inits);
  json::object main = container_json(c, container_name, command, gpus, role != Role::Launcher, res);
  if (rs && rs->port != 0)  // Arena's --<role>-port: the port training-operator's TFJob uses (tfjob-port)
    main["ports"] = json::array{json::object{{"containerPort", rs->port}, {"name", "tfjob-port"}}};
  if (role == Role::Ps && !c.ps_image.empty()) main["image"] = c.ps_image;
  if (role == Role::Computing && !c.worker_image.empty()) main["image"] = c.worker_image;
  add_config_mounts(c, main);
  spec["containers"] = json::array{std::move(main)};
  if (!c.volumes.empty()) {
    json::array vols;
    for (const auto& v : c.volumes) vols.push_back(volume_json(v));
    spec["volumes"] = std::move(vols);
  }
  add_config_volume(c, spec);
  return spec;
}

json::object pod_template(const Context& c, Role role, const std::string& container_name,
                          std::optional<RestartPolicy> restart, std::string_view replica_type = {}) {
  json::object meta;
  json::object l = c.labels("workload");
  for (const auto& [k, v] : c.w.labels)
    if (!l.contains(k)) l[k] = v;
  meta["labels"] = std::move(l);
  if (!c.w.annotations.empty()) meta["annotations"] = string_map(c.w.annotations);
  json::object t;
  t["metadata"] = std::move(meta);
  t["spec"] = pod_spec(c, role, container_name, restart, replica_type);
  return t;
}

// Kueue (kueue.x-k8s.io, v0.14): a job joins a LocalQueue by the label kueue.x-k8s.io/queue-name
// (pkg/controller/constants QueueLabel) and is created suspended at `suspend` (batch/v1 Job
// spec.suspend, Kubeflow runPolicy.suspend, JobSet and TrainJob spec.suspend), which Kueue's
// job webhooks would otherwise set (jobframework ApplyDefaultForSuspend): Kueue unsuspends it once
// its Workload is admitted. Pods and Deployments (`suspend` empty) carry the label only: Kueue's
// pod webhook gates each pod (pkg/controller/jobs/pod/pod_webhook.go Default: scheduling gate
// kueue.x-k8s.io/admission) and the Deployment webhook copies the label into the pod template
// (jobs/deployment/deployment_webhook.go Default), as done here too.
void queue_for_kueue(const Context& c, json::object& object, std::initializer_list<std::string_view> suspend) {
  if (c.queue.empty()) return;
  json::object& md = object["metadata"].as_object();
  md["labels"].as_object()[kQueueNameLabel] = c.queue;
  if (suspend.size() == 0) return;
  json::object* at = &object;
  for (auto it = suspend.begin(); it + 1 != suspend.end(); ++it) {
    json::value& next = (*at)[*it];
    if (!next.is_object()) next = json::object{};
    at = &next.as_object();
  }
  (*at)[*(suspend.end() - 1)] = true;
}

json::object head(std::string_view api_version, std::string_view kind, json::object metadata) {
  json::object o;
  o["apiVersion"] = api_version;
  o["kind"] = kind;
  o["metadata"] = std::move(metadata);
  return o;
}

// ---- kinds ---------------------------------------------------------------------------------

json::object selector(const Context& c, std::string_view component) {
  json::object match;
  match[kJobNameLabel] = c.w.name;
  match[kComponentLabel] = component;
  json::object s;
  s["matchLabels"] = std::move(match);
  return s;
}

json::object render_pod(const Context& c) {
  json::object o = head("v1", "Pod", c.metadata(c.w.name));
  o["metadata"].get_object()["labels"].get_object()[kComponentLabel] = "workload";
  o["spec"] = pod_spec(c, Role::Single, "main", c.w.restart_policy.value_or(RestartPolicy::Never));
  if (c.w.active_deadline_seconds) o["spec"].as_object()["activeDeadlineSeconds"] = *c.w.active_deadline_seconds;
  queue_for_kueue(c, o, {});
  return o;
}

json::object render_deployment(const Context& c) {
  json::object o = head("apps/v1", "Deployment", c.metadata(c.w.name));
  json::object spec;
  spec["replicas"] = c.w.replicas.workers;
  spec["selector"] = selector(c, "workload");
  // Pods with GPUs are replaced one at a time, the old pod stopped first (maxSurge 0,
  // maxUnavailable 1): the default RollingUpdate (25% each: maxSurge 1, maxUnavailable 0 for up to
  // 3 replicas) starts the new pod first, which a cluster whose GPUs or GPU quota the old pods
  // hold can never place, and `kubectl rollout restart` or a new image then waits for ever.
  if (c.uses_gpus)
    spec["strategy"] = json::object{{"type", "RollingUpdate"},
                                    {"rollingUpdate", json::object{{"maxSurge", 0}, {"maxUnavailable", 1}}}};
  spec["template"] = pod_template(c, Role::Single, "main", std::nullopt);
  if (!c.queue.empty())
    spec["template"].as_object()["metadata"].as_object()["labels"].as_object()[kQueueNameLabel] = c.queue;
  o["spec"] = std::move(spec);
  queue_for_kueue(c, o, {});
  return o;
}

json::object render_job(const Context& c) {
  json::object o = head("batch/v1", "Job", c.metadata(c.w.name));
  json::object spec;
  spec["parallelism"] = c.w.replicas.workers;
  spec["completions"] = c.w.replicas.workers;
  if (c.w.indexed) spec["completionMode"] = "Indexed";
  if (c.w.backoff_limit) spec["backoffLimit"] = *c.w.backoff_limit;
  if (c.w.ttl_seconds_after_finished) spec["ttlSecondsAfterFinished"] = *c.w.ttl_seconds_after_finished;
  if (c.w.active_deadline_seconds) spec["activeDeadlineSeconds"] = *c.w.active_deadline_seconds;
  spec["template"] = pod_template(c, Role::Single, "main", c.w.restart_policy.value_or(RestartPolicy::Never));
  o["spec"] = std::move(spec);
  queue_for_kueue(c, o, {"spec", "suspend"});
  return o;
}

// runPolicy of the Kubeflow kinds (training-operator RunPolicy; mpi-operator v2beta1 RunPolicy).
json::object run_policy(const Context& c, std::optional<CleanPodPolicy> fallback) {
  json::object r;
  std::optional<CleanPodPolicy> clean = c.w.clean_pod_policy ? c.w.clean_pod_policy : fallback;
  if (clean) r["cleanPodPolicy"] = to_string(*clean);
  if (c.w.ttl_seconds_after_finished) r["ttlSecondsAfterFinished"] = *c.w.ttl_seconds_after_finished;
  if (c.w.backoff_limit) r["backoffLimit"] = *c.w.backoff_limit;
  if (c.w.active_deadline_seconds) r["activeDeadlineSeconds"] = *c.w.active_deadline_seconds;
  return r;
}

json::object replica_spec(const Context& c, std::int32_t replicas, Role role, const std::string& container,
                          std::string_view replica_type = {}) {
  json::object r;
  r["replicas"] = replicas;
  // The operators default restartPolicy to Never; write it so the manifest says what happens.
  r["restartPolicy"] = to_string(c.w.restart_policy.value_or(RestartPolicy::Never));
  r["template"] = pod_template(c, role, container, std::nullopt, replica_type);
  return r;
}

json::object render_mpijob(const Context& c) {
  bool v2 = c.w.mpi_api == MpiJobApi::V2Beta1;
  json::object o = head(v2 ? "kubeflow.org/v2beta1" : "kubeflow.org/v1", "MPIJob", c.metadata(c.w.name));
  json::object spec;
  std::int32_t slots = c.w.slots_per_worker > 0
                           ? c.w.slots_per_worker
                           : static_cast<std::int32_t>(std::max<std::int64_t>(1, c.w.resources.gpus));
  spec["slotsPerWorker"] = slots;
  // cleanPodPolicy Running: when the launcher ends, the workers (which hold the GPUs) are deleted.
  spec["runPolicy"] = run_policy(c, CleanPodPolicy::Running);
  if (v2) {
    spec["mpiImplementation"] = "OpenMPI";
    spec["sshAuthMountPath"] = "/root/.ssh";
    // mpi-operator v2beta1 V2beta1MPIJobSpec: "if WaitForWorkersReady, the launcher is created only
    // after all workers are in Ready state" (default AtStartup). Workers may spend a while in
    // their stage-in init container; a launcher started at once would burn its backoff budget.
    spec["launcherCreationPolicy"] = "WaitForWorkersReady";
  }
  json::object replicas;
  // training-operator kubeflow.org/v1: MPIJobDefaultContainerName = "mpi" (the container the
  // operator manages), MPIJobDefaultRestartPolicy = Never; mpi-operator v2beta1 uses the first
  // container, so the same name serves both.
  replicas["Launcher"] = replica_spec(c, 1, Role::Launcher, "mpi");
  replicas["Worker"] = replica_spec(c, c.w.replicas.workers, Role::MpiWorker, "mpi");
  spec["mpiReplicaSpecs"] = std::move(replicas);
  o["spec"] = std::move(spec);
  queue_for_kueue(c, o, {"spec", "runPolicy", "suspend"});
  return o;
}

// TFJob and PyTorchJob (kubeflow.org/v1): runPolicy plus one ReplicaSpec per replica type with
// replicas > 0, each running the command in the operator's required container name.
struct ReplicaType {
  std::string_view name;
  std::int32_t count;
  Role role;
};
json::object render_training_job(const Context& c, std::string_view kind, std::string_view specs_key,
                                 const std::string& container, std::initializer_list<ReplicaType> types) {
  json::object o = head("kubeflow.org/v1", kind, c.metadata(c.w.name));
  json::object spec;
  json::object policy = run_policy(c, std::nullopt);
  if (!policy.empty()) spec["runPolicy"] = std::move(policy);
  json::object replicas;
  for (const auto& t : types)
    if (t.count > 0) replicas[t.name] = replica_spec(c, t.count, t.role, container, t.name);
  spec[specs_key] = std::move(replicas);
  // Arena's --success-policy AllWorkers (charts/tfjob/templates/tfjob.yaml `successPolicy:`).
  if (!c.w.success_policy.empty()) spec["successPolicy"] = c.w.success_policy;
  o["spec"] = std::move(spec);
  queue_for_kueue(c, o, {"spec", "runPolicy", "suspend"});
  return o;
}

json::object render_tfjob(const Context& c) {
  const Replicas& r = c.w.replicas;
  return render_training_job(c, "TFJob", "tfReplicaSpecs", "tensorflow",
                             {{"Chief", r.chief, Role::Computing},
                              {"PS", r.ps, Role::Ps},
                              {"Worker", r.workers, Role::Computing},
                              {"Evaluator", r.evaluator, Role::Computing}});
}

json::object render_pytorchjob(const Context& c) {
  const Replicas& r = c.w.replicas;
  return render_training_job(c, "PyTorchJob", "pytorchReplicaSpecs", "pytorch",
                             {{"Master", r.master, Role::Computing}, {"Worker", r.workers, Role::Computing}});
}

json::object pvc_object(const Profile& p, const PvcRequest& pvc, json::object metadata) {
  json::object o = head("v1", "PersistentVolumeClaim", std::move(metadata));
  json::object spec;
  if (!pvc.storage_class.empty()) spec["storageClassName"] = p.storage_class(pvc.storage_class);
  json::array modes;
  for (auto m : pvc.access_modes) modes.emplace_back(to_string(m));
  spec["accessModes"] = std::move(modes);
  json::object requests;
  requests["storage"] = pvc.size.to_string();
  json::object resources;
  resources["requests"] = std::move(requests);
  spec["resources"] = std::move(resources);
  o["spec"] = std::move(spec);
  return o;
}

json::object render_pvc(const Context& c, const PvcRequest& pvc) {
  return pvc_object(c.p, pvc, c.metadata(pvc.name, {}, false));
}

constexpr int kTensorBoardPort = 6006;

std::vector<json::object> render_tensorboard(const Context& c) {
  const Workload& w = c.w;
  std::string name = w.name + "-tensorboard";
  // TensorBoard reads the volume that holds the log directory, read-only.
  const VolumeMount* logs = nullptr;
  for (const auto& m : c.mounts)
    if (path_within(w.tensorboard.log_dir, m.mount_path) && (!logs || m.mount_path.size() > logs->mount_path.size()))
      logs = &m;
  const Volume* volume = nullptr;
  for (const auto& v : c.volumes)
    if (logs && v.name == logs->volume) volume = &v;

  json::object container;
  container["name"] = "tensorboard";
  container["image"] = c.p.catalog.resolve(w.tensorboard.image.empty() ? c.p.tensorboard_image : w.tensorboard.image,
                                           "tensorboard.image");
  container["command"] = strings({"tensorboard", "--logdir", w.tensorboard.log_dir, "--host", "0.0.0.0", "--port",
                                  std::to_string(kTensorBoardPort)});
  json::object port;
  port["name"] = "http";
  port["containerPort"] = kTensorBoardPort;
  container["ports"] = json::array{std::move(port)};
  if (logs) {
    VolumeMount ro = *logs;
    ro.read_only = true;
    container["volumeMounts"] = mounts_json({ro});
  }
  json::object pod;
  // Same placement as the job, so a node-local log directory is reachable on tainted nodes too.
  if (!w.node_selector.empty()) pod["nodeSelector"] = string_map(w.node_selector);
  if (!w.tolerations.empty()) pod["tolerations"] = tolerations_json(w.tolerations);
  if (volume && std::holds_alternative<HostPathSource>(volume->source)) {
    // A node-local log directory is only visible on the node that writes it: run TensorBoard
    // beside the pods that train (for an MPIJob the workers, which the operators label
    // training.kubeflow.org/replica-type=worker; the ranks write the summaries there).
    json::object match;
    match[kJobNameLabel] = w.name;
    if (w.kind == WorkloadKind::MPIJob)
      match["training.kubeflow.org/replica-type"] = "worker";
    else
      match[kComponentLabel] = "workload";
    json::object label_selector;
    label_selector["matchLabels"] = std::move(match);
    json::object term;
    term["labelSelector"] = std::move(label_selector);
    term["topologyKey"] = "kubernetes.io/hostname";
    json::object pod_affinity;
    pod_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = json::array{std::move(term)};
    json::object affinity;
    affinity["podAffinity"] = std::move(pod_affinity);
    pod["affinity"] = std::move(affinity);
  }
  pod["containers"] = json::array{std::move(container)};
  if (volume) pod["volumes"] = json::array{volume_json(*volume)};

  json::object tmeta;
  tmeta["labels"] = c.labels("tensorboard");
  json::object tmpl;
  tmpl["metadata"] = std::move(tmeta);
  tmpl["spec"] = std::move(pod);
  json::object dspec;
  dspec["replicas"] = 1;
  dspec["selector"] = selector(c, "tensorboard");
  dspec["template"] = std::move(tmpl);
  json::object deployment = head("apps/v1", "Deployment", c.metadata(name, "tensorboard", false));
  deployment["spec"] = std::move(dspec);

  json::object sport;
  sport["name"] = "http";
  sport["port"] = kTensorBoardPort;
  sport["targetPort"] = kTensorBoardPort;
  json::object sspec;
  sspec["type"] = "NodePort";
  sspec["selector"] = selector(c, "tensorboard")["matchLabels"];
  sspec["ports"] = json::array{std::move(sport)};
  json::object service = head("v1", "Service", c.metadata(name, "tensorboard", false));
  service["spec"] = std::move(sspec);
  return {std::move(deployment), std::move(service)};
}

// The mount a path is under: the one with the longest mount path (as the kernel resolves nested
// mounts); nullptr when none.
const VolumeMount* mount_of(const Context& c, const std::string& path) {
  const VolumeMount* best = nullptr;
  for (const auto& m : c.mounts)
    if (path_within(path, m.mount_path) && (!best || m.mount_path.size() > best->mount_path.size())) best = &m;
  return best;
}

// Why writing under this mount fails, or "" when it is writable: a readOnly mount, or a volume the
// kubelet mounts read-only (persistentVolumeClaim.readOnly, nfs.readOnly).
std::string read_only_reason(const Context& c, const VolumeMount& m) {
  if (m.read_only) return "readOnly";
  for (const auto& v : c.volumes) {
    if (v.name != m.volume) continue;
    if (const auto* pvc = std::get_if<PvcSource>(&v.source); pvc && pvc->read_only)
      return fmt::format("persistentVolumeClaim {} is readOnly", pvc->claim_name);
    if (const auto* nfs = std::get_if<NfsSource>(&v.source); nfs && nfs->read_only) return "nfs readOnly";
  }
  return "";
}

void check_staging(const Context& c) {
  const Workload& w = c.w;
  if (!w.staging) return;
  const SsdStaging& s = *w.staging;
  // A path the staging writes to: under a mount (else it is lost with the container), and writable.
  auto writable = [&](const std::string& path, const std::string& field, std::string_view fix) {
    const VolumeMount* m = mount_of(c, path);
    if (!m) throw ValidationError(field, path, fmt::format("is not under any mount; {}", fix));
    if (std::string why = read_only_reason(c, *m); !why.empty())
      throw ValidationError(field, path,
                            fmt::format("is on the read-only mount {} (volume \"{}\", {}); choose a path on a "
                                        "writable mount",
                                        m->mount_path, m->volume, why));
  };
  for (std::size_t i = 0; i < s.inputs.size(); ++i) {
    if (!mount_of(c, s.inputs[i].source))
      throw ValidationError(fmt::format("staging.inputs[{}].source", i), s.inputs[i].source,
                            "is not under any mount; mount the PVC or NFS share that holds the data");
    writable(s.inputs[i].cache, fmt::format("staging.inputs[{}].cache", i), "set ssd=true to mount the local SSDs");
  }
  if (!s.results_target.empty())
    writable(s.results_target, "staging.results_target", "mount the PVC to copy results to");
  if (!s.results.empty() && main_argv(w).empty())
    throw ValidationError("staging.results", s.results,
                          "copying results back needs a command (command or shell) to wrap");
  if (!s.results.empty() && w.kind == WorkloadKind::MPIJob)
    throw ValidationError("staging.results", s.results,
                          "an MPIJob's command runs in the launcher, not on the workers' SSDs; stage data in only, and "
                          "write results to a PVC");
}

}  // namespace

const json::object& Submission::workload() const {
  for (const auto& o : objects) {
    const json::value* kind = o.if_contains("kind");
    if (kind && kind->is_string() && kind->get_string() != "PersistentVolumeClaim" && kind->get_string() != "ConfigMap")
      return o;
  }
  throw Error("this submission has no workload object");
}

json::object render_pvc(const PvcRequest& pvc, const Profile& profile, std::string_view ns) {
  validate(pvc, "pvc");
  json::object m;
  m["name"] = pvc.name;
  m["namespace"] = ns.empty() ? profile.default_namespace : std::string(ns);
  m["labels"] = json::object{{kManagedByLabel, "gpupool"}};
  return pvc_object(profile, pvc, std::move(m));
}

std::string kubectl_name(std::string_view kind, std::string_view group, std::string_view name) {
  return fmt::format("{}{}{}/{}", lower(kind), group.empty() ? "" : ".", group, name);
}

std::string kubectl_name(const json::object& object) {
  auto text = [&](std::string_view key) -> std::string_view {
    const auto* v = object.if_contains(key);
    return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
  };
  std::string_view api_version = text("apiVersion");
  const auto slash = api_version.find('/');
  const auto* meta = object.if_contains("metadata");
  const auto* name = meta && meta->is_object() ? meta->get_object().if_contains("name") : nullptr;
  return kubectl_name(text("kind"), slash == std::string_view::npos ? "" : api_version.substr(0, slash),
                      name && name->is_string() ? std::string_view(name->get_string()) : "");
}

Submission render(const Workload& w, const Profile& p) {
  validate(w);
  Context c{w, p};
  c.ns = w.namespace_.empty() ? p.default_namespace : w.namespace_;
  c.image = p.catalog.resolve(w.image, "image");
  c.kind_label = lower(to_string(w.kind));
  c.volumes = w.volumes;
  c.mounts = w.mounts;
  if (!w.ps_image.empty()) c.ps_image = p.catalog.resolve(w.ps_image, "psImage");
  if (!w.worker_image.empty()) c.worker_image = p.catalog.resolve(w.worker_image, "workerImage");
  c.uses_gpus = w.resources.gpus > 0;
  c.host_network = w.host_network.value_or(p.host_network);
  c.host_ipc = w.host_ipc.value_or(p.host_ipc);
  c.queue = !w.queue.empty() ? w.queue : p.default_queue;
  if (!c.queue.empty() && w.kind == WorkloadKind::MPIJob && w.mpi_api != MpiJobApi::V2Beta1)
    throw ValidationError("queue", c.queue,
                          "Kueue queues mpi-operator's kubeflow.org/v2beta1 MPIJob only (its integration "
                          "kubeflow.org/mpijob); a training-operator kubeflow.org/v1 MPIJob would run unqueued: use "
                          "--mpi-api v2beta1 on a cluster with mpi-operator, or another kind");
  if (w.gang && c.queue.empty())
    throw ValidationError("gang", "true",
                          "gang scheduling goes through a Kueue LocalQueue, which admits all of a job's pods or none: "
                          "give a queue (--queue NAME) or set queue: in the profile");
  c.scheduler = !w.scheduler_name.empty() ? w.scheduler_name : (c.uses_gpus ? p.gpu.scheduler_name : std::string());
  c.runtime_class =
      !w.runtime_class_name.empty() ? w.runtime_class_name : (c.uses_gpus ? p.gpu.runtime_class : std::string());
  add_profile_volumes(c);
  add_arena_volumes(c);
  validate_volumes(c.volumes, c.mounts, "spec.");
  check_staging(c);

  Submission s;
  for (const auto& pvc : w.pvcs) s.objects.push_back(render_pvc(c, pvc));
  if (!w.config_files.empty()) s.objects.push_back(render_config_files(c));
  for (std::size_t i = 0; i < w.config_maps.size(); ++i)
    s.objects.push_back(render_config_map(c, w.config_maps[i], fmt::format("configMaps[{}]", i)));
  switch (w.kind) {
    case WorkloadKind::Pod:
      s.objects.push_back(render_pod(c));
      break;
    case WorkloadKind::Deployment:
      s.objects.push_back(render_deployment(c));
      break;
    case WorkloadKind::Job:
      s.objects.push_back(render_job(c));
      break;
    case WorkloadKind::MPIJob:
      s.objects.push_back(render_mpijob(c));
      break;
    case WorkloadKind::TFJob:
      s.objects.push_back(render_tfjob(c));
      break;
    case WorkloadKind::PyTorchJob:
      s.objects.push_back(render_pytorchjob(c));
      break;
    case WorkloadKind::TrainJob:  // (render_trainjob.cpp)
      s.objects.push_back(detail::render_trainjob(w, c.metadata(w.name), pod_template(c, Role::Computing, "node", {})));
      queue_for_kueue(c, s.objects.back(), {"spec", "suspend"});
      break;
    case WorkloadKind::JobSet:
      s.objects.push_back(detail::render_jobset(
          w, c.metadata(w.name),
          pod_template(c, Role::Computing, "node", w.restart_policy.value_or(RestartPolicy::Never))));
      queue_for_kueue(c, s.objects.back(), {"spec", "suspend"});
      break;
  }
  if (w.tensorboard.enabled)
    for (auto& o : render_tensorboard(c)) s.objects.push_back(std::move(o));
  for (const auto& o : s.objects) check_object_size(o);
  return s;
}

// The profile's checks run while the objects are built (a mount is known only once the profile's
// volumes are added), so the one way to accept exactly what render() accepts is to render.
void validate(const Workload& w, const Profile& p) { (void)render(w, p); }

void check_object_size(const json::object& object) {
  const std::size_t size = json::serialize(object).size();
  if (size <= limits::kMaxStoredObjectBytes) return;
  throw ValidationError(kubectl_name(object), fmt::format("{} bytes", size),
                        fmt::format("the API server stores at most {} bytes per object (etcd's request limit, 1.5 MiB) "
                                    "and would refuse it: move large data (a script, a config, a dataset) into a "
                                    "ConfigMap, a volume or the image",
                                    limits::kMaxStoredObjectBytes));
}

}  // namespace gpupool
