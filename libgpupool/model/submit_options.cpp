#include "gpupool/submit_options.hpp"

#include "gpupool/error.hpp"
#include "gpupool/names.hpp"
#include "gpupool/time.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
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

// ---- the kinds each option applies to: one table ----------------------------------------------

using Kinds = unsigned;
constexpr Kinds bit(WorkloadKind k) { return 1U << static_cast<unsigned>(k); }
constexpr WorkloadKind kKinds[] = {WorkloadKind::Pod,      WorkloadKind::Deployment, WorkloadKind::Job,
                                   WorkloadKind::MPIJob,   WorkloadKind::TFJob,      WorkloadKind::PyTorchJob,
                                   WorkloadKind::TrainJob, WorkloadKind::JobSet};
constexpr Kinds kTF = bit(WorkloadKind::TFJob);
constexpr Kinds kKubeflow = bit(WorkloadKind::MPIJob) | kTF | bit(WorkloadKind::PyTorchJob);
constexpr Kinds kAllKinds = 0xFFU;
constexpr Kinds kNoKind = 0;  ///< an Arena flag gpupool refuses for every kind: `lacks` says what is missing

/// What users type to pick a kind (parse_workload_kind takes these).
std::string_view kind_word(WorkloadKind k) {
  switch (k) {
    case WorkloadKind::Pod:
      return "pod";
    case WorkloadKind::Deployment:
      return "deployment";
    case WorkloadKind::Job:
      return "job";
    case WorkloadKind::MPIJob:
      return "mpi";
    case WorkloadKind::TFJob:
      return "tf";
    case WorkloadKind::PyTorchJob:
      return "pytorch";
    case WorkloadKind::TrainJob:
      return "trainjob";
    case WorkloadKind::JobSet:
      return "jobset";
  }
  return "";
}

/// One option that applies to some kinds only. Given for another kind, to_workload() refuses it
/// with "FLAG applies to KINDS only (FIX): a KIND has no LACKS[; use INSTEAD]", the command hides it
/// from that kind's --help, and Python's error names its keyword argument.
struct KindRule {
  std::string_view flag;
  Kinds kinds;               ///< the kinds it applies to
  std::string_view lacks;    ///< what the other kinds lack (what the option sets)
  std::string_view instead;  ///< an option that does the same for every kind, or ""
  bool (*given)(const SubmitOptions&);
  std::string (*value)(const SubmitOptions&);
};

std::string count_text(std::int64_t n) { return std::to_string(n); }

// given / value of a string option (given when not empty) and of a repeatable one (its first value).
#define GP_STRING(member) \
  [](const SubmitOptions& o) { return !o.member.empty(); }, [](const SubmitOptions& o) { return std::string(o.member); }
#define GP_LIST(member)                                     \
  [](const SubmitOptions& o) { return !o.member.empty(); }, \
      [](const SubmitOptions& o) { return o.member.empty() ? std::string() : o.member.front(); }
#define GP_COUNT(member, unset)                               \
  [](const SubmitOptions& o) { return o.member != (unset); }, \
      [](const SubmitOptions& o) { return count_text(o.member); }
#define GP_SWITCH(member) \
  [](const SubmitOptions& o) { return o.member; }, [](const SubmitOptions&) { return std::string("true"); }

// Where Arena defines each: pkg/argsbuilder/submit.go (SubmitArgsBuilder.AddCommandFlags) for the
// flags of every job type; submit_tfjob.go / submit_pytorchjob.go / submit_mpijob.go
// (AddCommandFlags) for a type's own. The kinds Arena has no submit command for (Pod, Deployment,
// Job, TrainJob, JobSet) take the flags whose field they have.
const KindRule kKindRules[] = {
    {"--workers", kAllKinds & ~bit(WorkloadKind::Pod), "replica count", "", GP_COUNT(workers, 1)},
    // TFJob's replica types and images (submit_tfjob.go).
    {"--ps", kTF, "PS replicas", "", GP_COUNT(ps, 0)},
    {"--chief", kTF, "Chief replica", "", GP_SWITCH(chief)},
    {"--evaluator", kTF, "Evaluator replica", "", GP_SWITCH(evaluator)},
    {"--ps-image", kTF, "PS replicas", "--image", GP_STRING(ps_image)},
    {"--worker-image", kTF, "per-role images", "--image", GP_STRING(worker_image)},
    {"--mpi-api", bit(WorkloadKind::MPIJob), "MPIJob API version", "",
     [](const SubmitOptions& o) { return !o.mpi_api.empty() && o.mpi_api != "auto"; },
     [](const SubmitOptions& o) { return o.mpi_api; }},
    {"--runtime", bit(WorkloadKind::TrainJob), "spec.runtimeRef", "", GP_STRING(runtime)},
    // A TrainJob (Kubeflow Trainer v2.3.0 TrainJobSpec) has no backoffLimit, activeDeadlineSeconds
    // or ttlSecondsAfterFinished of its own (its runtime's JobSet does); a JobSet has no
    // activeDeadlineSeconds; a Pod no backoffLimit or TTL; a Deployment none of them.
    {"--retry", bit(WorkloadKind::Job) | kKubeflow | bit(WorkloadKind::JobSet), "backoffLimit of its own", "",
     GP_COUNT(retry, -1)},
    {"--running-timeout", bit(WorkloadKind::Pod) | bit(WorkloadKind::Job) | kKubeflow,
     "activeDeadlineSeconds of its own", "", GP_STRING(running_timeout)},
    {"--ttl-after-finished", bit(WorkloadKind::Job) | kKubeflow | bit(WorkloadKind::JobSet),
     "ttlSecondsAfterFinished of its own", "", GP_STRING(ttl_after_finished)},
    {"--clean-task-policy", kKubeflow, "runPolicy.cleanPodPolicy", "", GP_STRING(clean_task_policy)},
    // TFJob's per-role flags (submit_tfjob.go AddCommandFlags; charts/tfjob/templates/tfjob.yaml
    // renders each into its role's ReplicaSpec). PyTorchJob and MPIJob have none in Arena.
    {"--worker-cpu", kTF, "per-role resources", "--cpu", GP_STRING(worker_cpu)},
    {"--worker-cpu-limit", kTF, "per-role resources", "--cpu-limit", GP_STRING(worker_cpu_limit)},
    {"--worker-memory", kTF, "per-role resources", "--memory", GP_STRING(worker_memory)},
    {"--worker-memory-limit", kTF, "per-role resources", "--memory-limit", GP_STRING(worker_memory_limit)},
    {"--worker-port", kTF, "per-role ports", "", GP_COUNT(worker_port, 0)},
    {"--worker-selector", kTF, "per-role nodeSelector", "--selector", GP_LIST(worker_selectors)},
    {"--ps-cpu", kTF, "PS replicas", "--cpu", GP_STRING(ps_cpu)},
    {"--ps-cpu-limit", kTF, "PS replicas", "--cpu-limit", GP_STRING(ps_cpu_limit)},
    {"--ps-memory", kTF, "PS replicas", "--memory", GP_STRING(ps_memory)},
    {"--ps-memory-limit", kTF, "PS replicas", "--memory-limit", GP_STRING(ps_memory_limit)},
    {"--ps-gpus", kTF, "PS replicas", "--gpus", GP_COUNT(ps_gpus, -1)},
    {"--ps-port", kTF, "PS replicas", "", GP_COUNT(ps_port, 0)},
    {"--ps-selector", kTF, "PS replicas", "--selector", GP_LIST(ps_selectors)},
    {"--chief-cpu", kTF, "Chief replica", "--cpu", GP_STRING(chief_cpu)},
    {"--chief-cpu-limit", kTF, "Chief replica", "--cpu-limit", GP_STRING(chief_cpu_limit)},
    {"--chief-memory", kTF, "Chief replica", "--memory", GP_STRING(chief_memory)},
    {"--chief-memory-limit", kTF, "Chief replica", "--memory-limit", GP_STRING(chief_memory_limit)},
    {"--chief-port", kTF, "Chief replica", "", GP_COUNT(chief_port, 0)},
    {"--chief-selector", kTF, "Chief replica", "--selector", GP_LIST(chief_selectors)},
    {"--evaluator-cpu", kTF, "Evaluator replica", "--cpu", GP_STRING(evaluator_cpu)},
    {"--evaluator-cpu-limit", kTF, "Evaluator replica", "--cpu-limit", GP_STRING(evaluator_cpu_limit)},
    {"--evaluator-memory", kTF, "Evaluator replica", "--memory", GP_STRING(evaluator_memory)},
    {"--evaluator-memory-limit", kTF, "Evaluator replica", "--memory-limit", GP_STRING(evaluator_memory_limit)},
    {"--evaluator-selector", kTF, "Evaluator replica", "--selector", GP_LIST(evaluator_selectors)},
    {"--worker-affinity-policy", kTF, "per-role pod affinity", "", GP_STRING(worker_affinity_policy)},
    {"--worker-affinity-constraint", kTF, "per-role pod affinity", "", GP_STRING(worker_affinity_constraint)},
    {"--ps-affinity-policy", kTF, "PS replicas", "", GP_STRING(ps_affinity_policy)},
    {"--ps-affinity-constraint", kTF, "PS replicas", "", GP_STRING(ps_affinity_constraint)},
    // --share-memory: tf and pytorch in Arena (submit_tfjob.go / submit_pytorchjob.go); --shm is
    // gpupool's own, for every kind.
    {"--share-memory", kTF | bit(WorkloadKind::PyTorchJob), "/dev/shm option of its own in Arena", "--shm",
     GP_STRING(share_memory)},
    {"--nproc-per-node", bit(WorkloadKind::PyTorchJob), "torchrun processes per node", "", GP_STRING(nproc_per_node)},
    {"--mounts-on-launcher", bit(WorkloadKind::MPIJob), "launcher", "", GP_SWITCH(mounts_on_launcher)},
    {"--success-policy", kTF, "spec.successPolicy", "", GP_STRING(success_policy)},
    // Arena flags that need what a plain cluster with the upstream operators lacks: refused for
    // every kind, with what is missing.
    {"--role-sequence", kNoKind,
     "Arena sets the annotation job-role-sequence, which only ACK's training operator reads; "
     "training-operator v1.9.0 starts every role at once",
     "", GP_STRING(role_sequence)},
    {"--starting-timeout", kNoKind,
     "Arena sets runPolicy.startingDeadlineSeconds, which training-operator v1.9.0's RunPolicy does not have", "",
     GP_STRING(starting_timeout)},
    {"--gputopology", kNoKind,
     "Arena's GPU topology scheduling needs ACK's gpu-topology scheduler and its aliyun.com/gpu resource", "",
     GP_SWITCH(gputopology)},
    {"--rdma", kNoKind, "Arena's RDMA needs ACK's RDMA device plugin (the rdma/hca resource)", "", GP_SWITCH(rdma)},
    {"--model-name", kNoKind,
     "Arena registers the job's model in its model registry (arena model), which gpupool lacks", "",
     GP_STRING(model_name)},
    {"--model-source", kNoKind,
     "Arena registers the job's model in its model registry (arena model), which gpupool lacks", "",
     GP_STRING(model_source)},
};
#undef GP_STRING
#undef GP_LIST
#undef GP_COUNT
#undef GP_SWITCH

const KindRule* kind_rule(std::string_view flag) {
  for (const auto& r : kKindRules)
    if (r.flag == flag) return &r;
  return nullptr;
}

std::string refusal_text(const KindRule& r, WorkloadKind kind, OptionNames names) {
  const bool keyword = names == OptionNames::Keyword;
  if (r.kinds == kNoKind) {
    std::string out =
        fmt::format("{} is not supported: {}", keyword ? option_keyword(r.flag) : std::string(r.flag), r.lacks);
    if (!r.instead.empty())
      out += fmt::format("; use {}", keyword ? option_keyword(r.instead) : std::string(r.instead));
    return out;
  }
  std::vector<std::string> kinds, words;
  for (WorkloadKind k : kKinds)
    if (r.kinds & bit(k)) {
      kinds.emplace_back(to_string(k));
      words.push_back(keyword ? fmt::format("\"{}\"", kind_word(k)) : std::string(kind_word(k)));
    }
  auto a = [](std::string_view kind) { return kind == "MPIJob" ? "an" : "a"; };  // "an em-pee-eye"
  std::string list = fmt::format("{} {}", a(kinds.front()), kinds.front());
  for (std::size_t i = 1; i < kinds.size(); ++i) list += (i + 1 == kinds.size() ? " or " : ", ") + kinds[i];
  const std::string fix =
      keyword ? fmt::format("kind={}", fmt::join(words, "|")) : fmt::format("submit {}", fmt::join(words, "|"));
  std::string out =
      fmt::format("{} applies to {} only ({}): {} {} has no {}", keyword ? option_keyword(r.flag) : std::string(r.flag),
                  list, fix, a(to_string(kind)), to_string(kind), r.lacks);
  if (!r.instead.empty()) out += fmt::format("; use {}", keyword ? option_keyword(r.instead) : std::string(r.instead));
  return out;
}

}  // namespace

std::string option_refusal(WorkloadKind kind, std::string_view flag, OptionNames names) {
  const KindRule* r = kind_rule(flag);
  if (!r || (r->kinds & bit(kind)) != 0) return "";
  return refusal_text(*r, kind, names);
}

std::string option_keyword(std::string_view flag) {
  std::string k(flag.substr(flag.rfind("--", 0) == 0 ? 2 : 0));
  // Repeatable flags are plural keyword arguments.
  static constexpr std::string_view kPlural[] = {
      "toleration", "selector", "annotation",      "label",       "image-pull-secret", "config-file",
      "device",     "data-dir", "worker-selector", "ps-selector", "chief-selector",    "evaluator-selector"};
  if (std::find(std::begin(kPlural), std::end(kPlural), k) != std::end(kPlural)) k += "s";
  for (auto& c : k)
    if (c == '-') c = '_';
  return k;
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

// TFJob's per-role flags (submit_tfjob.go AddCommandFlags, setTFNodeSelectors; rendered as
// charts/tfjob/templates/tfjob.yaml does): each role's settings, for a role the job has.
void add_role_options(const SubmitOptions& o, Workload& w, OptionNames names) {
  struct Role {
    std::string_view type, flag;
    const std::string &cpu, &cpu_limit, &memory, &memory_limit;
    const std::vector<std::string>& selectors;
    std::int32_t port;
    std::int64_t gpus;
    const std::string &affinity_policy, &affinity_constraint;
    std::int32_t count;
    std::string_view needs, needs_keyword;
  };
  static const std::string kNone;  // the roles without affinity flags
  const Role roles[] = {
      {"Worker", "--worker", o.worker_cpu, o.worker_cpu_limit, o.worker_memory, o.worker_memory_limit,
       o.worker_selectors, o.worker_port, -1, o.worker_affinity_policy, o.worker_affinity_constraint,
       w.replicas.workers, "--workers N", "workers=N"},
      {"PS", "--ps", o.ps_cpu, o.ps_cpu_limit, o.ps_memory, o.ps_memory_limit, o.ps_selectors, o.ps_port, o.ps_gpus,
       o.ps_affinity_policy, o.ps_affinity_constraint, w.replicas.ps, "--ps N", "ps=N"},
      {"Chief", "--chief", o.chief_cpu, o.chief_cpu_limit, o.chief_memory, o.chief_memory_limit, o.chief_selectors,
       o.chief_port, -1, kNone, kNone, w.replicas.chief, "--chief", "chief=True"},
      {"Evaluator", "--evaluator", o.evaluator_cpu, o.evaluator_cpu_limit, o.evaluator_memory, o.evaluator_memory_limit,
       o.evaluator_selectors, 0, -1, kNone, kNone, w.replicas.evaluator, "--evaluator", "evaluator=True"},
  };
  for (const Role& r : roles) {
    RoleSettings rs;
    std::string first, first_value;  // the first of the role's flags given
    auto given = [&](std::string_view what, const std::string& value) {
      const std::string flag = fmt::format("{}-{}", r.flag, what);
      if (first.empty()) {
        first = flag;
        first_value = value;
      }
      return flag;
    };
    auto quantity = [&](const std::string& value, std::string_view what, std::optional<Quantity>& out) {
      if (!value.empty()) out = quantity_option(value, given(what, value));
    };
    quantity(r.cpu, "cpu", rs.cpu_request);
    quantity(r.cpu_limit, "cpu-limit", rs.cpu_limit);
    quantity(r.memory, "memory", rs.memory_request);
    quantity(r.memory_limit, "memory-limit", rs.memory_limit);
    // The chart's limits: `{{ if .Values.workerCPULimit }} ... {{ else if .Values.workerCPU }}`.
    if (rs.cpu_request && !rs.cpu_limit) rs.cpu_limit = rs.cpu_request;
    if (rs.memory_request && !rs.memory_limit) rs.memory_limit = rs.memory_request;
    for (std::size_t i = 0; i < r.selectors.size(); ++i) {
      auto [k, v] = parse_key_value(r.selectors[i], indexed(given("selector", r.selectors[i]), i));
      rs.node_selector[k] = v;
    }
    if (r.port != 0) {
      given("port", std::to_string(r.port));
      rs.port = r.port;
    }
    if (r.gpus < -1)
      throw ValidationError(given("gpus", std::to_string(r.gpus)), std::to_string(r.gpus), "must be 0 or more");
    if (r.gpus >= 0) {
      given("gpus", std::to_string(r.gpus));
      rs.gpus = r.gpus;
    }
    // The chart's helpers: policy none|spread|binpack, constraint preferred|required (any other
    // value renders nothing there; refused here).
    if (!r.affinity_policy.empty()) {
      const std::string flag = given("affinity-policy", r.affinity_policy);
      if (r.affinity_policy != "none" && r.affinity_policy != "spread" && r.affinity_policy != "binpack")
        throw ValidationError(flag, r.affinity_policy,
                              "expected spread (one pod per node), binpack (pods together) or none");
      if (r.affinity_policy != "none") rs.affinity_policy = r.affinity_policy;
    }
    if (!r.affinity_constraint.empty()) {
      const std::string flag = given("affinity-constraint", r.affinity_constraint);
      const std::string policy = fmt::format("{}-affinity-policy", r.flag);
      if (r.affinity_constraint != "preferred" && r.affinity_constraint != "required")
        throw ValidationError(flag, r.affinity_constraint, "expected preferred or required");
      if (r.affinity_policy.empty() || r.affinity_policy == "none")
        throw ValidationError(flag, r.affinity_constraint,
                              fmt::format("says how {} applies: give it too (spread or binpack)",
                                          names == OptionNames::Keyword ? option_keyword(policy) : policy));
      rs.affinity_required = r.affinity_constraint == "required";
    }
    if (first.empty()) continue;
    if (r.count == 0)
      throw ValidationError(names == OptionNames::Keyword ? option_keyword(first) : first, first_value,
                            fmt::format("sets the {} replicas, and the job has none: give {} too", r.type,
                                        names == OptionNames::Keyword ? r.needs_keyword : r.needs));
    w.role_settings[std::string(r.type)] = std::move(rs);
  }
}
}  // namespace

Workload to_workload(const SubmitOptions& o, OptionNames names) {
  Workload w;
  w.kind = parse_workload_kind(o.kind, "kind");
  // Options given that cannot apply to this kind (kKindRules): one reason, before anything else.
  for (const auto& r : kKindRules)
    if ((r.kinds & bit(w.kind)) == 0 && r.given(o))
      throw ValidationError(names == OptionNames::Keyword ? option_keyword(r.flag) : std::string(r.flag), r.value(o),
                            refusal_text(r, w.kind, names));
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
  if (!o.share_memory.empty()) {
    if (!o.shm.empty())
      throw ValidationError("--share-memory", o.share_memory,
                            "is Arena's name for --shm (a memory-backed /dev/shm): give one of the two");
    w.shm_size = quantity_option(o.share_memory, "--share-memory");
  }
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
  w.runtime_class_name = o.runtime_class;
  add_arena_options(o, w);
  add_role_options(o, w, names);
  if (!o.nproc_per_node.empty()) {
    // submit_pytorchjob.go check(): auto, cpu, gpu or a number (strconv.Atoi); setEnvs puts it in
    // PET_NPROC_PER_NODE over an --env of that name. torchrun wants at least one process.
    const std::string& n = o.nproc_per_node;
    bool number = !n.empty() && std::all_of(n.begin(), n.end(), [](unsigned char ch) { return std::isdigit(ch); });
    if (n != "auto" && n != "cpu" && n != "gpu" && !(number && n.size() < 10 && std::stoi(n) >= 1))
      throw ValidationError("--nproc-per-node", n, "expected auto, cpu, gpu or a number of processes (1 or more)");
    std::erase_if(w.env, [](const EnvVar& e) { return e.name == "PET_NPROC_PER_NODE"; });
    w.env.push_back(EnvVar{"PET_NPROC_PER_NODE", n, ""});
  }
  if (!o.success_policy.empty()) {
    // submit_tfjob.go check() and transform(): ChiefWorker (Arena's default) is training-operator's "".
    if (o.success_policy == "AllWorkers")
      w.success_policy = "AllWorkers";
    else if (o.success_policy != "ChiefWorker")
      throw ValidationError("--success-policy", o.success_policy,
                            "expected ChiefWorker (the job succeeds with the chief, or worker 0) or AllWorkers");
  }
  // Arena's default --clean-task-policy of a TFJob is Running (submit_tfjob.go AddCommandFlags),
  // over training-operator's None (v1.9.0 tensorflow_defaults.go): when the job succeeds, its pods
  // still running, the parameter servers above all (they never exit by themselves), are deleted.
  // Not applied elsewhere: Arena's PyTorchJob default (Running, submit_pytorchjob.go) would delete
  // the workers still running when the master succeeds, with the logs `gpupool logs` reads of
  // every instance; Arena's MPIJob default (All, submit_mpijob.go) is for its chart's
  // kubeflow.org/v1alpha1 MPIJob, not the v1 / v2beta1 rendered here, which keeps render()'s
  // Running (the launcher's pod and log stay). --clean-task-policy gives either when wanted.
  if (o.clean_task_policy.empty() && w.kind == WorkloadKind::TFJob) w.clean_pod_policy = CleanPodPolicy::Running;
  // Arena's charts label a TFJob / PyTorchJob and its pods app=<tfjob|pytorchjob> and
  // release=<name> (charts/tfjob/templates/tfjob.yaml, charts/pytorchjob/templates/pytorchjob.yaml
  // metadata.labels), which `arena list`, `arena get` and `arena top job` select on
  // (pkg/training/trainer.go GetTrainingJobLabels: "app=<type>,release"): the same here, so that a
  // job submitted with gpupool shows in Arena's views too; a --label of either key wins. (Arena's
  // MPIJob views read kubeflow.org/v1alpha1, not the MPIJob API rendered here.)
  if (w.kind == WorkloadKind::TFJob || w.kind == WorkloadKind::PyTorchJob) {
    w.labels.try_emplace("app", w.kind == WorkloadKind::TFJob ? "tfjob" : "pytorchjob");
    w.labels.try_emplace("release", w.name);
  }
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
  } else if (starts("roleSettings[")) {
    // roleSettings[PS].resources.limits[cpu] -> --ps-cpu-limit; [Chief].port -> --chief-port; ...
    const std::size_t close = f.find(']');
    std::string role = f.substr(13, close - 13);
    std::transform(role.begin(), role.end(), role.begin(), [](unsigned char c) { return std::tolower(c); });
    const std::string rest = f.substr(close + 1);
    const bool limit = rest.find(".limits[") != std::string::npos;
    if (rest.find("[cpu]") != std::string::npos)
      option = "--" + role + (limit ? "-cpu-limit" : "-cpu");
    else if (rest.find("[memory]") != std::string::npos)
      option = "--" + role + (limit ? "-memory-limit" : "-memory");
    else if (rest == ".resources.gpus")
      option = "--" + role + "-gpus";
    else if (rest == ".port")
      option = "--" + role + "-port";
    else if (rest.rfind(".nodeSelector", 0) == 0)
      option = "--" + role + "-selector";
    else
      return e;
  } else {
    // The Workload fields Arena's flags set: exact names, and prefixes (a map's or a list's entries).
    static constexpr std::pair<std::string_view, std::string_view> kExact[] = {
        {"backoffLimit", "--retry"},
        {"ttlSecondsAfterFinished", "--ttl-after-finished"},
        {"activeDeadlineSeconds", "--running-timeout"},
        {"cleanPodPolicy", "--clean-task-policy"},
        {"successPolicy", "--success-policy"},
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
