#include "gpupool/submit_options.hpp"

#include "gpupool/error.hpp"
#include "gpupool/names.hpp"
#include "gpupool/time.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpupool {

namespace {

std::string indexed(std::string_view flag, size_t i) { return fmt::format("{}[{}]", flag, i); }

/// Splits "a:b[:c]" at ':' into at most `max` parts (the last part keeps any further ':').
std::vector<std::string> split_colon(std::string_view text, size_t max) {
  std::vector<std::string> parts;
  while (parts.size() + 1 < max) {
    auto pos = text.find(':');
    if (pos == std::string_view::npos) break;
    parts.emplace_back(text.substr(0, pos));
    text.remove_prefix(pos + 1);
  }
  parts.emplace_back(text);
  return parts;
}

/// A mount spec's optional ":ro" / ":rw" tail.
bool read_only_suffix(std::vector<std::string>& parts, const std::string& field, std::string_view text) {
  if (parts.size() < 3) return false;
  if (parts[2] == "ro") return true;
  if (parts[2] == "rw") return false;
  throw ValidationError(field, std::string(text), "the third part must be \"ro\" or \"rw\"");
}

/// A mount path typed in a flag: absolute (the kubelet would resolve a relative one against the
/// container root).
void check_mount_path(const std::string& path, const std::string& field, std::string_view text) {
  if (path.empty() || path[0] != '/')
    throw ValidationError(field, std::string(text), "the mount path \"" + path + "\" must be absolute, e.g. /data");
}

Quantity quantity_option(const std::string& text, std::string_view field) {
  Quantity q = Quantity::parse(text, field);
  if (q.is_negative()) throw ValidationError(std::string(field), text, "must not be negative");
  return q;
}

/// Whole seconds of a Go duration as Arena reads it (cobra DurationVar, then int64(d.Seconds())),
/// at least one second.
std::int64_t duration_seconds(const std::string& text, std::string_view flag) {
  auto d = parse_duration(text);
  if (!d) throw ValidationError(std::string(flag), text, "expected a duration such as 90s, 30m or 2h22m");
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(*d).count();
  if (seconds < 1) throw ValidationError(std::string(flag), text, "must be at least 1s; leave the flag out for none");
  return seconds;
}

/// Arena's setConfigFiles: "HOST[:CONTAINER]", ~/ is $HOME, a relative host path is made absolute,
/// the container path defaults to the host file's absolute path and must be absolute.
ConfigFile read_config_file(const std::string& text, const std::string& field) {
  auto parts = split_colon(text, 3);
  if (parts.size() > 2 || parts[0].empty())
    throw ValidationError(field, text, "expected HOST_FILE[:CONTAINER_FILE], e.g. ./train.yaml:/etc/train/train.yaml");
  std::string host = parts[0];
  if (host.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    host = std::string(home ? home : "") + host.substr(1);
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path absolute = fs::absolute(host, ec);
  if (!ec) host = absolute.lexically_normal().string();
  ConfigFile file;
  file.path = parts.size() == 2 ? parts[1] : host;
  if (file.path.empty() || file.path.front() != '/')
    throw ValidationError(field, text, "the path of the file in the container must be absolute");
  if (!fs::is_regular_file(host, ec))
    throw ValidationError(field, text, fmt::format("{} is not a readable file on this machine", host));
  std::ifstream in(host, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  if (!in) throw ValidationError(field, text, fmt::format("cannot read {}", host));
  file.content = content.str();
  return file;
}

bool kubeflow(WorkloadKind k) {
  return k == WorkloadKind::MPIJob || k == WorkloadKind::TFJob || k == WorkloadKind::PyTorchJob;
}

}  // namespace

std::string option_refusal(WorkloadKind kind, std::string_view flag) {
  const std::string k(to_string(kind));
  if (flag == "--workers" && kind == WorkloadKind::Pod)
    return "--workers does not apply to a Pod: it is one replica; submit a job or a deployment for several";
  if ((flag == "--ps" || flag == "--ps-image" || flag == "--worker-image" || flag == "--evaluator" ||
       flag == "--chief") &&
      kind != WorkloadKind::TFJob)
    return fmt::format("{} applies to a TFJob only (submit tf); a {} has no PS, Chief or Evaluator replicas", flag, k);
  if (flag == "--runtime" && kind != WorkloadKind::TrainJob)
    return fmt::format("--runtime applies to a TrainJob only (submit trainjob), not a {}", k);
  if (flag == "--mpi-api" && kind != WorkloadKind::MPIJob)
    return fmt::format("--mpi-api applies to an MPIJob only (submit mpi), not a {}", k);
  // A TrainJob (Kubeflow Trainer v2.3.0 TrainJobSpec) has no backoffLimit, activeDeadlineSeconds or
  // ttlSecondsAfterFinished of its own (its runtime's JobSet does); a JobSet has no activeDeadlineSeconds.
  if ((flag == "--retry" || flag == "--running-timeout" || flag == "--ttl-after-finished") &&
      kind == WorkloadKind::TrainJob)
    return fmt::format(
        "{} does not apply to a TrainJob: its ClusterTrainingRuntime sets it; submit a jobset or "
        "a pytorch job to set it yourself",
        flag);
  if (flag == "--running-timeout" && kind == WorkloadKind::JobSet)
    return "--running-timeout does not apply to a JobSet: it has no activeDeadlineSeconds; submit a job or a pod";
  if (flag == "--retry" && (kind == WorkloadKind::Pod || kind == WorkloadKind::Deployment))
    return fmt::format("--retry does not apply to a {}: it has no backoffLimit; submit a job or a Kubeflow kind", k);
  if (flag == "--running-timeout" && kind == WorkloadKind::Deployment)
    return "--running-timeout does not apply to a Deployment: it runs until deleted; submit a job or a pod";
  if (flag == "--ttl-after-finished" && (kind == WorkloadKind::Pod || kind == WorkloadKind::Deployment))
    return fmt::format(
        "--ttl-after-finished does not apply to a {}: it has no ttlSecondsAfterFinished; submit a job "
        "or a Kubeflow kind",
        k);
  if (flag == "--clean-task-policy" && !kubeflow(kind))
    return fmt::format(
        "--clean-task-policy does not apply to a {}: only MPIJob, TFJob and PyTorchJob have "
        "runPolicy.cleanPodPolicy",
        k);
  return "";
}

std::pair<std::string, std::string> parse_key_value(std::string_view text, std::string_view field) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw ValidationError(std::string(field), std::string(text), "expected KEY=VALUE");
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

std::int64_t parse_count(std::string_view text, std::string_view field) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0)
    throw ValidationError(std::string(field), std::string(text), "expected a whole number, 0 or more");
  return value;
}

namespace {
// The options of Arena's flags (the fields' comments in submit_options.hpp cite Arena's source).
void add_arena_options(const SubmitOptions& o, Workload& w) {
  for (size_t i = 0; i < o.annotations.size(); ++i) {
    auto [k, v] = parse_key_value(o.annotations[i], indexed("--annotation", i));
    w.annotations[k] = v;
  }
  for (size_t i = 0; i < o.labels.size(); ++i) {
    auto [k, v] = parse_key_value(o.labels[i], indexed("--label", i));
    w.labels[k] = v;
  }
  for (size_t i = 0; i < o.image_pull_secrets.size(); ++i) {
    // The pods' imagePullSecrets are LocalObjectReferences: a Secret's name (DNS-1123 subdomain).
    validate_dns1123_subdomain(o.image_pull_secrets[i], indexed("--image-pull-secret", i));
    w.image_pull_secrets.push_back(o.image_pull_secrets[i]);
  }
  w.image_pull_policy = o.image_pull_policy;
  if (!o.tensorboard_image.empty()) {
    if (!o.tensorboard)
      throw ValidationError("--tensorboard-image", o.tensorboard_image,
                            "sets TensorBoard's image: give --tensorboard too");
    w.tensorboard.image = o.tensorboard_image;
  }
  if (o.retry < -1) throw ValidationError("--retry", std::to_string(o.retry), "must be 0 or more");
  if (o.retry >= 0) w.backoff_limit = o.retry;
  if (!o.shell.empty()) {
    if (!o.argv.empty())
      throw ValidationError(
          "--shell", o.shell,
          "runs a COMMAND string as SHELL -c COMMAND; an argv after -- runs as given, without a shell");
    w.shell_program = o.shell;
  }
  if (!o.running_timeout.empty()) w.active_deadline_seconds = duration_seconds(o.running_timeout, "--running-timeout");
  if (!o.ttl_after_finished.empty()) {
    const std::int64_t ttl = duration_seconds(o.ttl_after_finished, "--ttl-after-finished");
    if (ttl > 2147483647)
      throw ValidationError("--ttl-after-finished", o.ttl_after_finished, "must be at most 2147483647s");
    w.ttl_seconds_after_finished = static_cast<std::int32_t>(ttl);
  }
  if (!o.clean_task_policy.empty())
    w.clean_pod_policy = parse_clean_pod_policy(o.clean_task_policy, "--clean-task-policy");
  for (size_t i = 0; i < o.config_files.size(); ++i)
    w.config_files.push_back(read_config_file(o.config_files[i], indexed("--config-file", i)));
  if (!o.sync_mode.empty()) {
    if (o.sync_mode != "git" && o.sync_mode != "rsync")
      throw ValidationError("--sync-mode", o.sync_mode, "expected git or rsync");
    if (o.sync_source.empty())
      throw ValidationError("--sync-source", "",
                            o.sync_mode == "git"
                                ? "--sync-mode git needs the repository: --sync-source URL"
                                : "--sync-mode rsync needs what to copy: --sync-source HOST::MODULE/PATH");
    w.code_sync = CodeSync{o.sync_mode, o.sync_source, o.sync_image};
  } else if (!o.sync_source.empty() || !o.sync_image.empty()) {
    throw ValidationError(o.sync_source.empty() ? "--sync-image" : "--sync-source",
                          o.sync_source.empty() ? o.sync_image : o.sync_source,
                          "fetches code before the command: give --sync-mode git or --sync-mode rsync too");
  }
  for (size_t i = 0; i < o.devices.size(); ++i) {
    const std::string field = indexed("--device", i);
    auto [name, count] = parse_key_value(o.devices[i], field);
    w.resources.extra[name] = quantity_option(count, field);
  }
}
}  // namespace

Workload to_workload(const SubmitOptions& o) {
  Workload w;
  w.kind = parse_workload_kind(o.kind, "kind");
  // Options given that cannot apply to this kind: one reason each, before anything else.
  auto refuse_if = [&](bool given, std::string_view flag, const std::string& value) {
    if (!given) return;
    if (std::string why = option_refusal(w.kind, flag); !why.empty())
      throw ValidationError(std::string(flag), value, why);
  };
  refuse_if(o.workers != 1, "--workers", std::to_string(o.workers));
  refuse_if(o.ps != 0, "--ps", std::to_string(o.ps));
  refuse_if(o.chief, "--chief", "true");
  refuse_if(o.evaluator, "--evaluator", "true");
  refuse_if(!o.ps_image.empty(), "--ps-image", o.ps_image);
  refuse_if(!o.worker_image.empty(), "--worker-image", o.worker_image);
  refuse_if(!o.mpi_api.empty() && o.mpi_api != "auto", "--mpi-api", o.mpi_api);
  refuse_if(!o.runtime.empty(), "--runtime", o.runtime);
  refuse_if(o.retry != -1, "--retry", std::to_string(o.retry));
  refuse_if(!o.running_timeout.empty(), "--running-timeout", o.running_timeout);
  refuse_if(!o.ttl_after_finished.empty(), "--ttl-after-finished", o.ttl_after_finished);
  refuse_if(!o.clean_task_policy.empty(), "--clean-task-policy", o.clean_task_policy);
  w.name = o.name;
  w.namespace_ = o.namespace_;
  w.image = o.image;
  if (o.name.empty()) throw ValidationError("--name", "", "a job needs a name: --name NAME");
  if (o.image.empty()) throw ValidationError("--image", "", "a job needs an image: --image IMAGE");
  if (!o.command.empty() && !o.argv.empty())
    throw ValidationError("command", o.command, "give a shell string or an argv, not both");
  w.shell = o.command;
  w.command = o.argv;
  if (o.workers < 0) throw ValidationError("--workers", std::to_string(o.workers), "must be 0 or more");
  w.replicas.workers = o.workers;
  if (w.kind == WorkloadKind::PyTorchJob) {
    // Arena counts the master as a worker: pkg/training/submit_pytorchjob.go, SubmitPytorchJob
    // ("the master is also considered as a worker": WorkerCount - 1 Worker replicas).
    if (o.workers < 1)
      throw ValidationError("--workers", std::to_string(o.workers),
                            "counts the master too, as Arena does: 1 is the master alone, N is the master and N-1 "
                            "workers");
    w.replicas.workers = o.workers - 1;
  }
  w.replicas.ps = o.ps;
  w.replicas.chief = o.chief ? 1 : 0;
  w.replicas.evaluator = o.evaluator ? 1 : 0;
  w.ps_image = o.ps_image;
  w.worker_image = o.worker_image;
  w.resources.gpus = o.gpus;
  if (o.gpu_limit < -1) throw ValidationError("--gpu-limit", std::to_string(o.gpu_limit), "must be 0 or more");
  if (o.gpus < 0) throw ValidationError("--gpus", std::to_string(o.gpus), "must be 0 or more");
  if (!o.cpu.empty()) w.resources.cpu_request = quantity_option(o.cpu, "--cpu");
  if (!o.memory.empty()) w.resources.memory_request = quantity_option(o.memory, "--memory");
  if (!o.cpu_limit.empty()) w.resources.cpu_limit = quantity_option(o.cpu_limit, "--cpu-limit");
  if (!o.memory_limit.empty()) w.resources.memory_limit = quantity_option(o.memory_limit, "--memory-limit");
  if (o.gpu_limit >= 0) {
    if (o.gpus != 0 && o.gpus != o.gpu_limit)
      throw ValidationError(
          "--gpu-limit", std::to_string(o.gpu_limit),
          fmt::format("must equal --gpus ({}): Kubernetes requires a GPU request to equal its limit", o.gpus));
    w.resources.gpus = o.gpu_limit;
  }
  if (!o.shm.empty()) w.shm_size = quantity_option(o.shm, "--shm");
  w.tolerations = parse_tolerations(o.tolerations, "--toleration");

  for (size_t i = 0; i < o.selectors.size(); ++i) {
    auto [k, v] = parse_key_value(o.selectors[i], indexed("--selector", i));
    w.node_selector[k] = v;
  }
  for (size_t i = 0; i < o.env.size(); ++i) {
    auto [k, v] = parse_key_value(o.env[i], indexed("--env", i));
    w.env.push_back(EnvVar{k, v, ""});
  }
  for (size_t i = 0; i < o.data.size(); ++i) {
    const std::string field = indexed("--data", i);
    auto parts = split_colon(o.data[i], 3);
    if (parts.size() < 2 || parts[0].empty() || parts[1].empty())
      throw ValidationError(field, o.data[i], "expected PVC_NAME:/mount/path[:ro]");
    bool ro = read_only_suffix(parts, field, o.data[i]);
    validate_dns1123_subdomain(parts[0], field);
    check_mount_path(parts[1], field, o.data[i]);
    // The volume is named after the claim when that is a valid volume (DNS-1123 label) name.
    std::string volume = is_dns1123_label(parts[0]) ? parts[0] : fmt::format("data-{}", i);
    w.volumes.push_back(Volume{volume, PvcSource{parts[0], ro}});
    w.mounts.push_back(VolumeMount{volume, parts[1], "", ro});
  }
  for (size_t i = 0; i < o.data_dirs.size(); ++i) {
    const std::string field = indexed("--data-dir", i);
    auto parts = split_colon(o.data_dirs[i], 3);
    if (parts.size() < 2 || parts[0].empty() || parts[1].empty())
      throw ValidationError(field, o.data_dirs[i], "expected /host/path:/mount/path[:ro]");
    bool ro = read_only_suffix(parts, field, o.data_dirs[i]);
    if (parts[0][0] != '/') throw ValidationError(field, o.data_dirs[i], "the host path must be absolute");
    check_mount_path(parts[1], field, o.data_dirs[i]);
    std::string volume = fmt::format("data-dir-{}", i);
    w.volumes.push_back(Volume{volume, HostPathSource{parts[0], HostPathType::Directory}});
    w.mounts.push_back(VolumeMount{volume, parts[1], "", ro});
  }
  for (size_t i = 0; i < o.pvc_create.size(); ++i) {
    const std::string field = indexed("--pvc-create", i);
    auto parts = split_colon(o.pvc_create[i], 4);
    if (parts.size() < 3 || parts[0].empty() || parts[2].empty())
      throw ValidationError(field, o.pvc_create[i], "expected NAME:STORAGE_CLASS:SIZE[:/mount/path]");
    PvcRequest pvc;
    pvc.name = parts[0];
    pvc.storage_class = parts[1];
    pvc.size = quantity_option(parts[2], field);
    validate(pvc, field);
    if (parts.size() == 4) {
      check_mount_path(parts[3], field, o.pvc_create[i]);
      if (!is_dns1123_label(pvc.name))
        throw ValidationError(field, o.pvc_create[i], "to mount it, the claim name must be a DNS-1123 label");
      w.volumes.push_back(Volume{pvc.name, PvcSource{pvc.name, false}});
      w.mounts.push_back(VolumeMount{pvc.name, parts[3], "", false});
    }
    w.pvcs.push_back(std::move(pvc));
  }
  w.ssd = o.ssd;
  w.nfs = o.nfs;
  if (!o.stage_in.empty() || !o.stage_out.empty()) {
    SsdStaging s;
    for (size_t i = 0; i < o.stage_in.size(); ++i) {
      auto parts = split_colon(o.stage_in[i], 2);
      if (parts.size() != 2)
        throw ValidationError(indexed("--stage-in", i), o.stage_in[i], "expected SOURCE:CACHE (absolute paths)");
      s.inputs.push_back(StageIn{parts[0], parts[1]});
    }
    if (!o.stage_out.empty()) {
      auto parts = split_colon(o.stage_out, 2);
      if (parts.size() != 2)
        throw ValidationError("--stage-out", o.stage_out, "expected RESULTS:TARGET (absolute paths)");
      s.results = parts[0];
      s.results_target = parts[1];
    }
    w.staging = s;
  }
  if (o.stage_out_grace != -1) {
    if (o.stage_out.empty())
      throw ValidationError("--stage-out-grace", std::to_string(o.stage_out_grace),
                            "applies to copying results back: give --stage-out RESULTS:TARGET too");
    w.staging->grace_period_seconds = o.stage_out_grace;
  }
  w.working_dir = o.working_dir;
  w.tensorboard.enabled = o.tensorboard;
  if (!o.logdir.empty()) w.tensorboard.log_dir = o.logdir;
  if (o.mpi_api == "v2beta1" || o.mpi_api == "kubeflow.org/v2beta1")
    w.mpi_api = MpiJobApi::V2Beta1;
  else if (o.mpi_api == "v1" || o.mpi_api == "kubeflow.org/v1")
    w.mpi_api = MpiJobApi::V1;
  else if (o.mpi_api.empty() || o.mpi_api == "auto")
    w.mpi_api = MpiJobApi::Auto;
  else
    throw ValidationError("--mpi-api", o.mpi_api, "expected v1, v2beta1 or auto (what the cluster serves)");
  w.runtime = o.runtime;
  w.scheduler_name = o.scheduler_name;
  w.priority_class_name = o.priority_class;
  add_arena_options(o, w);
  w.queue = o.queue;
  w.gang = o.gang;
  try {
    validate(w);
  } catch (const ValidationError& e) {
    throw with_option_names(e);
  }
  return w;
}

ValidationError with_option_names(const ValidationError& e) {
  // staging.inputs[i].source|cache -> --stage-in[i]; staging.results|results_target -> --stage-out.
  const std::string& f = e.field();
  auto starts = [&](std::string_view prefix) { return f.rfind(prefix, 0) == 0; };
  std::string option;
  if (starts("staging.inputs[")) {
    const std::size_t open = std::string_view("staging.inputs").size();
    option = "--stage-in" + f.substr(open, f.find(']') - open + 1);  // "[i]"
  } else if (f == "staging.results" || f == "staging.results_target") {
    option = "--stage-out";
  } else if (f == "staging.grace_period_seconds") {
    option = "--stage-out-grace";
  } else if (f == "staging") {
    option = "--stage-in";
  } else if (f == "ssd" || f == "nfs" || f == "queue" || f == "gang") {
    option = "--" + f;
  } else {
    // The Workload fields Arena's flags set: exact names, and prefixes (a map's or a list's entries).
    static constexpr std::pair<std::string_view, std::string_view> kExact[] = {
        {"backoffLimit", "--retry"},
        {"ttlSecondsAfterFinished", "--ttl-after-finished"},
        {"activeDeadlineSeconds", "--running-timeout"},
        {"cleanPodPolicy", "--clean-task-policy"},
        {"imagePullPolicy", "--image-pull-policy"},
        {"shellProgram", "--shell"},
        {"psImage", "--ps-image"},
        {"workerImage", "--worker-image"},
        {"tensorboard.image", "--tensorboard-image"},
        {"codeSync.image", "--sync-image"},
        {"codeSync.source", "--sync-source"}};
    static constexpr std::pair<std::string_view, std::string_view> kPrefix[] = {
        {"metadata.labels", "--label"},
        {"metadata.annotations", "--annotation"},
        {"configFiles", "--config-file"},
        {"resources.extra[", "--device"}};
    for (const auto& [field, flag] : kExact)
      if (f == field) option = flag;
    for (const auto& [prefix, flag] : kPrefix)
      if (starts(prefix)) option = flag;
    if (option.empty()) return e;
  }
  return ValidationError(option, e.value(), e.rule());
}

}  // namespace gpupool
