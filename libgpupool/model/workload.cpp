#include "gpupool/workload.hpp"
#include "gpupool/scheduling.hpp"

#include "common/ascii.hpp"
#include "gpupool/error.hpp"
#include "gpupool/image.hpp"
#include "gpupool/names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <utility>

namespace gpupool {

namespace {

[[noreturn]] void fail(std::string field, std::string value, std::string rule) {
  throw ValidationError(std::move(field), std::move(value), std::move(rule));
}

using ascii::lower;

template <class E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [e, name] : table)
    if (e == value) return name;
  return "";
}

template <class E, std::size_t N>
E parse_from(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view text,
             std::string_view field) {
  std::string names;
  for (const auto& [e, name] : table) {
    if (name == text) return e;
    names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", name);
  }
  fail(std::string(field), std::string(text), "supported values: " + names);
}

constexpr std::array<std::pair<WorkloadKind, std::string_view>, 8> kKinds{{{WorkloadKind::Pod, "Pod"},
                                                                           {WorkloadKind::Deployment, "Deployment"},
                                                                           {WorkloadKind::Job, "Job"},
                                                                           {WorkloadKind::MPIJob, "MPIJob"},
                                                                           {WorkloadKind::TFJob, "TFJob"},
                                                                           {WorkloadKind::PyTorchJob, "PyTorchJob"},
                                                                           {WorkloadKind::TrainJob, "TrainJob"},
                                                                           {WorkloadKind::JobSet, "JobSet"}}};
constexpr std::array<std::pair<RestartPolicy, std::string_view>, 4> kRestart{{{RestartPolicy::Always, "Always"},
                                                                              {RestartPolicy::OnFailure, "OnFailure"},
                                                                              {RestartPolicy::Never, "Never"},
                                                                              {RestartPolicy::ExitCode, "ExitCode"}}};
constexpr std::array<std::pair<CleanPodPolicy, std::string_view>, 3> kClean{
    {{CleanPodPolicy::None, "None"}, {CleanPodPolicy::Running, "Running"}, {CleanPodPolicy::All, "All"}}};

bool is_kubeflow(WorkloadKind k) {
  return k == WorkloadKind::MPIJob || k == WorkloadKind::TFJob || k == WorkloadKind::PyTorchJob;
}

// The name rule each kind's API applies:
//  - Pod, Deployment: metadata.name is a DNS-1123 subdomain (ValidatePodName, ValidateDeploymentName).
//  - Job: a DNS-1123 subdomain, and the Job controller copies it into the pods' label
//    batch.kubernetes.io/job-name, so it is also a label value (at most 63 characters).
//  - MPIJob, TFJob, PyTorchJob: the training operators require a DNS-1035 label (their
//    validation: NameIsDNS1035Label) because each replica gets a Service named
//    <name>-<replica type>-<index>, which must itself be a DNS-1035 label.
void validate_name(const Workload& w) {
  std::string kind(to_string(w.kind));
  if (w.name.empty()) fail("metadata.name", "", fmt::format("Required value: every {} needs a name", kind));
  switch (w.kind) {
    case WorkloadKind::Pod:
    case WorkloadKind::Deployment: {
      auto errors = dns1123_subdomain_errors(w.name);
      if (!errors.empty())
        fail("metadata.name", w.name,
             fmt::format("a {} name must be a DNS-1123 subdomain: {}", kind, fmt::join(errors, "; ")));
      break;
    }
    case WorkloadKind::Job: {
      auto errors = dns1123_subdomain_errors(w.name);
      if (errors.empty() && w.name.size() > 63)
        errors.push_back("must be no more than 63 characters (it becomes the pods' job-name label value)");
      if (!errors.empty())
        fail("metadata.name", w.name,
             fmt::format("a Job name must be a DNS-1123 subdomain and a label value: {}", fmt::join(errors, "; ")));
      break;
    }
    default: {
      auto errors = dns1035_label_errors(w.name);
      if (!errors.empty())
        fail("metadata.name", w.name,
             fmt::format("a {} name must be a DNS-1035 label: {}", kind, fmt::join(errors, "; ")));
      for (const auto& derived : derived_replica_names(w)) {
        auto derived_errors = dns1035_label_errors(derived);
        if (!derived_errors.empty())
          fail("metadata.name", w.name,
               fmt::format("the {} {} \"{}\", which must be a DNS-1035 label: {}; use a shorter name", kind,
                           w.kind == WorkloadKind::TrainJob || w.kind == WorkloadKind::JobSet
                               ? "runs in a JobSet that names a Service or pod hostname"
                               : "operator names a Service",
                           derived, fmt::join(derived_errors, "; ")));
      }
    }
  }
  if (w.tensorboard.enabled) {
    std::string service = w.name + "-tensorboard";
    auto errors = dns1035_label_errors(service);
    if (!errors.empty())
      fail("metadata.name", w.name,
           fmt::format("the TensorBoard Service \"{}\" must be a DNS-1035 label: {}; use a shorter name", service,
                       fmt::join(errors, "; ")));
  }
}

void validate_count(std::int32_t n, std::string_view field, std::int32_t min, std::int32_t max = 1 << 30) {
  if (n < min || n > max) {
    std::string rule = max == (1 << 30) ? fmt::format("must be greater than or equal to {}", min)
                       : min == max     ? fmt::format("must be {}", min)
                                        : fmt::format("must be between {} and {}", min, max);
    fail(std::string(field), std::to_string(n), rule);
  }
}

void validate_replicas(const Workload& w) {
  const Replicas& r = w.replicas;
  switch (w.kind) {
    case WorkloadKind::Pod:
      validate_count(r.workers, "replicas.workers", 1, 1);
      break;
    case WorkloadKind::Deployment:
      validate_count(r.workers, "replicas.workers", 0);
      break;
    case WorkloadKind::Job:
    case WorkloadKind::MPIJob:
    case WorkloadKind::TrainJob:  // trainer.numNodes (the CRD: minimum 1 is not declared; 0 nodes run nothing)
    case WorkloadKind::JobSet:
      validate_count(r.workers, "replicas.workers", 1);
      break;
    case WorkloadKind::TFJob:
      validate_count(r.workers, "replicas.workers", 0);
      validate_count(r.ps, "replicas.ps", 0);
      validate_count(r.chief, "replicas.chief", 0, 1);          // tfjob validation: Chief replicas must be 1 at most
      validate_count(r.evaluator, "replicas.evaluator", 0, 1);  // Arena's tfjob chart: Evaluator replicas 1
      if (r.workers + r.chief == 0) fail("replicas.workers", "0", "a TFJob needs at least one Worker or a Chief");
      break;
    case WorkloadKind::PyTorchJob:
      validate_count(r.master, "replicas.master", 1, 1);  // pytorchjob validation: Master replicas must be 1
      validate_count(r.workers, "replicas.workers", 0);
      break;
  }
  if (w.kind != WorkloadKind::TFJob && (r.ps != 0 || r.chief != 0 || r.evaluator != 0))
    fail(r.ps      ? "replicas.ps"
         : r.chief ? "replicas.chief"
                   : "replicas.evaluator",
         std::to_string(r.ps      ? r.ps
                        : r.chief ? r.chief
                                  : r.evaluator),
         "PS, Chief and Evaluator replicas exist only in a TFJob");
  if (w.kind != WorkloadKind::PyTorchJob && r.master != 1)
    fail("replicas.master", std::to_string(r.master), "Master replicas exist only in a PyTorchJob; leave it at 1");
  if (w.slots_per_worker < 0)
    fail("slotsPerWorker", std::to_string(w.slots_per_worker), "must be greater than or equal to 0");
}

void validate_restart(const Workload& w) {
  if (!w.restart_policy) return;
  RestartPolicy p = *w.restart_policy;
  std::string value(to_string(p));
  if (w.kind == WorkloadKind::Deployment && p != RestartPolicy::Always)
    fail("restartPolicy", value, "a Deployment's pods must use restartPolicy \"Always\"");
  if ((w.kind == WorkloadKind::Job || w.kind == WorkloadKind::JobSet) &&
      (p == RestartPolicy::Always || p == RestartPolicy::ExitCode))
    fail("restartPolicy", value, fmt::format("a {}'s pods use \"OnFailure\" or \"Never\"", to_string(w.kind)));
  if (w.kind == WorkloadKind::TrainJob)
    fail("restartPolicy", value,
         "a TrainJob's runtime sets its pods' restart policy; use kind jobset or job to set it");
  if (w.kind == WorkloadKind::Pod && p == RestartPolicy::ExitCode)
    fail("restartPolicy", value, "ExitCode exists only for the Kubeflow kinds; a Pod uses Always, OnFailure or Never");
}

// IsEnvVarName: [-._a-zA-Z][-._a-zA-Z0-9]*
void validate_labels(const std::map<std::string, std::string>& labels, std::string_view field) {
  for (const auto& [k, v] : labels) {
    validate_qualified_name(k, fmt::format("{}[{}]", field, k));
    validate_label_value(v, fmt::format("{}[{}]", field, k));
  }
}

// ValidateAnnotations: keys by annotation_key_errors, and the total size.
void validate_annotations(const std::map<std::string, std::string>& annotations, std::string_view field) {
  std::size_t size = 0;
  for (const auto& [k, v] : annotations) {
    if (auto errs = annotation_key_errors(k); !errs.empty()) fail(fmt::format("{}[{}]", field, k), k, errs.front());
    size += k.size() + v.size();
  }
  if (size > kMaxAnnotationsBytes)
    fail(std::string(field), std::to_string(size),
         fmt::format("Too long: may not be more than {} bytes", kMaxAnnotationsBytes));
}

}  // namespace

std::string_view to_string(WorkloadKind kind) noexcept { return name_of(kKinds, kind); }
std::string_view to_string(RestartPolicy p) noexcept { return name_of(kRestart, p); }
std::string_view to_string(CleanPodPolicy p) noexcept { return name_of(kClean, p); }
RestartPolicy parse_restart_policy(std::string_view text, std::string_view field) {
  return parse_from(kRestart, text, field);
}
CleanPodPolicy parse_clean_pod_policy(std::string_view text, std::string_view field) {
  return parse_from(kClean, text, field);
}

WorkloadKind parse_workload_kind(std::string_view text, std::string_view field) {
  static const std::pair<std::string_view, WorkloadKind> aliases[] = {{"pod", WorkloadKind::Pod},
                                                                      {"deployment", WorkloadKind::Deployment},
                                                                      {"deploy", WorkloadKind::Deployment},
                                                                      {"job", WorkloadKind::Job},
                                                                      {"mpijob", WorkloadKind::MPIJob},
                                                                      {"mpi", WorkloadKind::MPIJob},
                                                                      {"tfjob", WorkloadKind::TFJob},
                                                                      {"tf", WorkloadKind::TFJob},
                                                                      {"pytorchjob", WorkloadKind::PyTorchJob},
                                                                      {"pytorch", WorkloadKind::PyTorchJob},
                                                                      {"trainjob", WorkloadKind::TrainJob},
                                                                      {"jobset", WorkloadKind::JobSet}};
  std::string l = lower(text);
  for (const auto& [alias, kind] : aliases)
    if (l == alias) return kind;
  fail(std::string(field), std::string(text),
       "supported kinds: Pod, Deployment, Job, MPIJob (mpi), TFJob (tf), PyTorchJob (pytorch), TrainJob, JobSet");
}

std::vector<std::string> derived_replica_names(const Workload& w) {
  std::vector<std::string> out;
  auto add = [&](std::string_view role, std::int32_t count) {
    // Only the last index matters for length, but list each one the operator creates.
    for (std::int32_t i = 0; i < count; ++i) out.push_back(fmt::format("{}-{}-{}", w.name, role, i));
  };
  switch (w.kind) {
    case WorkloadKind::MPIJob:
      out.push_back(w.name + "-launcher");
      add("worker", w.replicas.workers);
      break;
    case WorkloadKind::TFJob:
      add("chief", w.replicas.chief);
      add("ps", w.replicas.ps);
      add("worker", w.replicas.workers);
      add("evaluator", w.replicas.evaluator);
      break;
    case WorkloadKind::PyTorchJob:
      add("master", w.replicas.master);
      add("worker", w.replicas.workers);
      break;
    case WorkloadKind::TrainJob:
    case WorkloadKind::JobSet:
      // JobSet's headless Service `<name>` gives each pod the hostname `<name>-node-0-<index>`.
      out.push_back(w.name);
      for (std::int32_t i = 0; i < w.replicas.workers; ++i) out.push_back(fmt::format("{}-node-0-{}", w.name, i));
      break;
    default:
      break;
  }
  return out;
}

Resources resources_of(const Workload& w, std::string_view type) {
  Resources r = w.resources;
  if ((w.kind == WorkloadKind::MPIJob && type == "Launcher") || (w.kind == WorkloadKind::TFJob && type == "PS"))
    r.gpus = 0;
  auto it = w.role_settings.find(std::string(type));
  if (it == w.role_settings.end()) return r;
  const RoleSettings& rs = it->second;
  if (rs.cpu_request) r.cpu_request = rs.cpu_request;
  if (rs.cpu_limit) r.cpu_limit = rs.cpu_limit;
  if (rs.memory_request) r.memory_request = rs.memory_request;
  if (rs.memory_limit) r.memory_limit = rs.memory_limit;
  if (rs.gpus) r.gpus = *rs.gpus;
  return r;
}

namespace {
// The fields Arena's submit flags set (submit_options.hpp names each flag's source in Arena).
void validate_arena_fields(const Workload& w) {
  // validatePullPolicy (pkg/apis/core/validation/validation.go).
  if (!w.image_pull_policy.empty() && w.image_pull_policy != "Always" && w.image_pull_policy != "IfNotPresent" &&
      w.image_pull_policy != "Never")
    fail("imagePullPolicy", w.image_pull_policy,
         "Unsupported value: supported values: \"Always\", \"IfNotPresent\", \"Never\"");
  if (w.shell_program.empty() || w.shell_program.find_first_of(" \t\n") != std::string::npos)
    fail("shellProgram", w.shell_program, "name one shell program, e.g. sh or bash");
  if (w.kind != WorkloadKind::TFJob && (!w.ps_image.empty() || !w.worker_image.empty()))
    fail(w.ps_image.empty() ? "workerImage" : "psImage", w.ps_image.empty() ? w.worker_image : w.ps_image,
         "per-replica images exist only in a TFJob; use image");
  if (!w.ps_image.empty()) (void)ImageRef::parse(w.ps_image, "psImage");
  if (!w.worker_image.empty()) (void)ImageRef::parse(w.worker_image, "workerImage");
  if (w.active_deadline_seconds) {
    if (w.kind == WorkloadKind::Deployment)
      fail("activeDeadlineSeconds", std::to_string(*w.active_deadline_seconds),
           "a Deployment runs until deleted and has no such field; use a Job or a Kubeflow kind");
    // ValidatePodSpec: "must be between 1 and 2147483647, inclusive" (a Job's own field is only
    // non-negative, but its pods' would be refused the same way by an operator that copies it).
    if (*w.active_deadline_seconds < 1 || *w.active_deadline_seconds > 2147483647)
      fail("activeDeadlineSeconds", std::to_string(*w.active_deadline_seconds),
           "must be between 1 and 2147483647, inclusive");
  }
  if (w.code_sync) {
    const CodeSync& s = *w.code_sync;
    if (s.mode != "git" && s.mode != "rsync")
      fail("codeSync.mode", s.mode, "Unsupported value: supported values: \"git\", \"rsync\"");
    if (s.source.empty())
      fail("codeSync.source", "",
           s.mode == "git" ? "Required value: the repository to clone, e.g. https://github.com/kubeflow/arena.git"
                           : "Required value: what rsync copies, e.g. 10.0.0.5::code/project");
    if (!s.image.empty()) (void)ImageRef::parse(s.image, "codeSync.image");
  }
  // Arena's TFJob per-role flags (submit_tfjob.go): only a TFJob's replica types, each present.
  for (const auto& [type, rs] : w.role_settings) {
    const std::string at = fmt::format("roleSettings[{}]", type);
    if (w.kind != WorkloadKind::TFJob) fail(at, type, "per-role settings exist only in a TFJob");
    const std::int32_t count = type == "PS"          ? w.replicas.ps
                               : type == "Worker"    ? w.replicas.workers
                               : type == "Chief"     ? w.replicas.chief
                               : type == "Evaluator" ? w.replicas.evaluator
                                                     : -1;
    if (count < 0) fail(at, type, "Unsupported value: supported values: \"PS\", \"Worker\", \"Chief\", \"Evaluator\"");
    if (count == 0) fail(at, type, fmt::format("the TFJob has no {} replicas to apply it to", type));
    // ValidateContainerPorts (pkg/apis/core/validation/validation.go): "must be between 1 and 65535, inclusive".
    if (rs.port != 0 && (rs.port < 1 || rs.port > 65535))
      fail(at + ".port", std::to_string(rs.port), "must be between 1 and 65535, inclusive");
    validate_labels(rs.node_selector, at + ".nodeSelector");
    validate(resources_of(w, type), at + ".resources");
  }
  std::set<std::string> paths;
  for (std::size_t i = 0; i < w.config_files.size(); ++i) {
    const std::string& path = w.config_files[i].path;
    std::string at = fmt::format("configFiles[{}].path", i);
    if (path.empty() || path.front() != '/' || path.back() == '/')
      fail(at, path, "must be an absolute file path in the container, e.g. /etc/app/config.yaml");
    if (!paths.insert(path).second) fail(at, path, "Duplicate value: two files at one path");
  }
}
}  // namespace

void validate(const Workload& w) {
  validate_replicas(w);
  validate_name(w);
  if (!w.namespace_.empty()) {
    auto errors = dns1123_label_errors(w.namespace_);
    if (!errors.empty())
      fail("metadata.namespace", w.namespace_,
           fmt::format("a namespace must be a DNS-1123 label: {}", fmt::join(errors, "; ")));
  }
  if (w.image.empty())
    fail("image", "", "Required value: name an image, e.g. ubuntu-pytorch:1.5.0 or docker.io/library/python:3.11");
  (void)ImageRef::parse(w.image, "image");  // shorthand is a valid reference too; the profile expands it
  if (!w.command.empty() && !w.shell.empty())
    fail("shell", w.shell, "give either command (an argv list) or shell (a string run by sh -c), not both");
  if (w.kind != WorkloadKind::Job && w.kind != WorkloadKind::MPIJob && w.kind != WorkloadKind::TFJob &&
      w.kind != WorkloadKind::PyTorchJob && w.kind != WorkloadKind::JobSet &&
      (w.backoff_limit || w.ttl_seconds_after_finished))
    fail(w.backoff_limit ? "backoffLimit" : "ttlSecondsAfterFinished",
         std::to_string(w.backoff_limit.value_or(w.ttl_seconds_after_finished.value_or(0))),
         fmt::format("a {} has no such field; use a Job or a Kubeflow kind", to_string(w.kind)));
  // workingDir: v1.32 has no rule for it (a relative directory is accepted, resolved by the
  // container runtime against the image's working directory).
  for (std::size_t i = 0; i < w.env.size(); ++i) validate_env_var_name(w.env[i].name, fmt::format("env[{}].name", i));
  validate(w.resources, "resources");
  for (std::size_t i = 0; i < w.tolerations.size(); ++i) validate(w.tolerations[i], fmt::format("tolerations[{}]", i));
  validate_labels(w.node_selector, "nodeSelector");
  for (std::size_t i = 0; i < w.required_node_affinity.size(); ++i) {
    const auto& req = w.required_node_affinity[i];
    std::string at = fmt::format("nodeAffinity.matchExpressions[{}]", i);
    // ValidateNodeSelectorRequirement: the scheduling model's one copy of the rule.
    validate(req, false, at);
  }
  std::set<std::string> pvc_names;
  for (std::size_t i = 0; i < w.pvcs.size(); ++i) {
    validate(w.pvcs[i], fmt::format("pvcs[{}]", i));
    if (!pvc_names.insert(w.pvcs[i].name).second)
      fail(fmt::format("pvcs[{}].metadata.name", i), w.pvcs[i].name, "Duplicate value: two claims share this name");
  }
  std::set<std::string> config_map_names;
  for (std::size_t i = 0; i < w.config_maps.size(); ++i) {
    validate(w.config_maps[i], fmt::format("configMaps[{}]", i));
    if (!config_map_names.insert(w.config_maps[i].name).second)
      fail(fmt::format("configMaps[{}].metadata.name", i), w.config_maps[i].name,
           "Duplicate value: two ConfigMaps share this name");
  }
  if (w.indexed && w.kind != WorkloadKind::Job)
    fail("completionMode", "Indexed",
         fmt::format("only a Job has completionMode; a {} numbers its replicas itself", to_string(w.kind)));
  validate_volumes(w.volumes, w.mounts);
  // The shm volume is an emptyDir: its sizeLimit may be zero, not negative (validateVolumeSource).
  if (w.shm_size && w.shm_size->is_negative())
    fail("shmSize", w.shm_size->to_string(), "Forbidden: SizeLimit field must be a valid resource quantity");
  if (w.staging) validate(*w.staging, "staging");
  // (v1.32's ValidatePodSpec checks neither schedulerName nor the imagePullSecrets' names.)
  if (!w.priority_class_name.empty()) validate_dns1123_subdomain(w.priority_class_name, "priorityClassName");
  // ValidateRuntimeClassName: a RuntimeClass's name (NameIsDNSSubdomain).
  if (!w.runtime_class_name.empty()) validate_dns1123_subdomain(w.runtime_class_name, "runtimeClassName");
  // Kueue's jobframework.ValidateQueueName: the label's value names a LocalQueue (a DNS subdomain).
  if (!w.queue.empty()) validate_dns1123_subdomain(w.queue, "queue");
  validate_labels(w.labels, "metadata.labels");
  validate_annotations(w.annotations, "metadata.annotations");
  validate_restart(w);
  if (w.backoff_limit && *w.backoff_limit < 0)
    fail("backoffLimit", std::to_string(*w.backoff_limit), "must be greater than or equal to 0");
  if (w.ttl_seconds_after_finished && *w.ttl_seconds_after_finished < 0)
    fail("ttlSecondsAfterFinished", std::to_string(*w.ttl_seconds_after_finished),
         "must be greater than or equal to 0");
  if (w.clean_pod_policy && !is_kubeflow(w.kind))
    fail("cleanPodPolicy", std::string(to_string(*w.clean_pod_policy)),
         "cleanPodPolicy exists only for MPIJob, TFJob and PyTorchJob");
  validate_arena_fields(w);
  // training-operator v1.9.0 TFJobSpec.SuccessPolicy: "" or "AllWorkers" (tensorflow types.go).
  if (!w.success_policy.empty()) {
    if (w.kind != WorkloadKind::TFJob) fail("successPolicy", w.success_policy, "successPolicy exists only for TFJob");
    if (w.success_policy != "AllWorkers")
      fail("successPolicy", w.success_policy, "expected AllWorkers, or empty for the chief's (or worker 0's) success");
  }
  if (!w.runtime.empty()) {
    if (w.kind != WorkloadKind::TrainJob) fail("runtime", w.runtime, "a training runtime applies to a TrainJob only");
    // runtimeRef.name names a ClusterTrainingRuntime object: a DNS-1123 subdomain.
    validate_dns1123_subdomain(w.runtime, "runtime");
  }
  if (w.kind == WorkloadKind::TrainJob)
    for (std::size_t i = 0; i < w.env.size(); ++i)
      // torch.go Validate: the torch plugin sets these itself (TorchRunReservedEnvNames).
      if (w.env[i].name.rfind("PET_", 0) == 0 &&
          (w.env[i].name == "PET_NNODES" || w.env[i].name == "PET_NPROC_PER_NODE" || w.env[i].name == "PET_NODE_RANK" ||
           w.env[i].name == "PET_MASTER_ADDR" || w.env[i].name == "PET_MASTER_PORT"))
        fail(fmt::format("env[{}].name", i), w.env[i].name,
             "the torch runtime sets this variable itself; use numProcPerNode / --workers instead");
  if (w.tensorboard.enabled && (w.tensorboard.log_dir.empty() || w.tensorboard.log_dir.front() != '/'))
    fail("tensorboard.logDir", w.tensorboard.log_dir, "must be an absolute path (start with '/')");
}

}  // namespace gpupool
