#include "gpupool/submit_options.hpp"

#include "gpupool/error.hpp"
#include "gpupool/names.hpp"

#include <fmt/format.h>

#include <charconv>

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

}  // namespace

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

Workload to_workload(const SubmitOptions& o) {
  Workload w;
  w.kind = parse_workload_kind(o.kind, "kind");
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
  w.replicas.ps = o.ps;
  w.replicas.chief = o.chief ? 1 : 0;
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
  } else if (f == "ssd" || f == "nfs") {
    option = "--" + f;
  } else {
    return e;
  }
  return ValidationError(option, e.value(), e.rule());
}

}  // namespace gpupool
