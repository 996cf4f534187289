#include "commands.hpp"

#include "connection.hpp"
#include "gpupool/time.hpp"
#include "streams.hpp"

#include "gpupool/cluster.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/embedded_state.hpp"
#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "gpupool/manifest.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/render.hpp"
#include "gpupool/submit_options.hpp"
#include "gpupool/topology.hpp"
#include "gpupool/version.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>

namespace gpupool::cli {

namespace {

// ---- flag helpers ------------------------------------------------------------------------------

FlagSpec flag(std::string name, char s, std::string value, std::string help, bool repeatable = false) {
  return FlagSpec{std::move(name), s, std::move(value), std::move(help), repeatable};
}
FlagSpec sw(std::string name, std::string help, char s = 0) {
  return FlagSpec{std::move(name), s, "", std::move(help), false};
}

std::chrono::milliseconds duration_flag(const ParsedArgs& a, const std::string& name, const std::string& fallback) {
  std::string text = a.get(name, fallback);
  auto d = parse_duration(text);
  if (!d || d->count() < 0) throw ValidationError("--" + name, text, "expected a duration such as 30s, 5m or 1h30m");
  return std::chrono::duration_cast<std::chrono::milliseconds>(*d);
}

std::int64_t count_flag(const ParsedArgs& a, const std::string& name, std::int64_t fallback) {
  auto v = a.optional(name);
  return v ? parse_count(*v, "--" + name) : fallback;
}

std::string output_flag(const ParsedArgs& a, std::initializer_list<std::string_view> allowed) {
  std::string o = a.get("output");
  if (o.empty()) return o;
  for (auto x : allowed)
    if (o == x) return o;
  std::string list;
  for (auto x : allowed) list += (list.empty() ? "" : ", ") + std::string(x);
  throw ValidationError("--output", o, "expected one of " + list);
}

// ---- the submit command ------------------------------------------------------------------------

/// Arena's submit flags (SubmitOptions cites where Arena defines each).
std::vector<FlagSpec> arena_submit_flags() {
  return {
      flag("annotation", 'a', "K=V", "annotation on the job and its pods", true),
      flag("label", 'l', "K=V", "label on the job and its pods", true),
      flag("image-pull-secret", 0, "NAME", "Secret to pull the image with (imagePullSecrets)", true),
      flag("image-pull-policy", 0, "POLICY", "Always, IfNotPresent or Never (default: the profile's)"),
      flag("tensorboard-image", 0, "IMAGE", "TensorBoard's image (with --tensorboard)"),
      flag("retry", 0, "N", "retries before the job fails (backoffLimit)"),
      flag("shell", 0, "SHELL", "shell that runs COMMAND as SHELL -c COMMAND (default sh), e.g. bash"),
      flag("running-timeout", 0, "DURATION", "stop the job after this long, e.g. 2h (activeDeadlineSeconds)"),
      flag("ttl-after-finished", 0, "DURATION", "delete the finished job after this long, e.g. 1h"),
      flag("clean-task-policy", 0, "POLICY",
           "pods to delete when the job ends: None, Running or All (tf: Running, as Arena)"),
      flag("config-file", 0, "HOST[:PATH]", "put a local file into the containers at PATH (a ConfigMap)", true),
      flag("sync-mode", 0, "git|rsync", "fetch code into <working-dir>/code (or /code) before the command"),
      flag("sync-source", 0, "SOURCE", "with --sync-mode: the git repository URL, or rsync's HOST::MODULE/PATH"),
      flag("sync-image", 0, "IMAGE", "with --sync-mode: the init container's image (default: Arena's)"),
      flag("device", 0, "RESOURCE=N", "an extra resource per replica, e.g. amd.com/gpu=1", true),
      flag("mpi-api", 0, "VERSION", "MPIJob API: v1 or v2beta1 (default: what the cluster serves)"),
      flag("ps", 0, "N", "parameter servers"),
      flag("ps-image", 0, "IMAGE", "the parameter servers' image (default --image)"),
      flag("worker-image", 0, "IMAGE", "the workers', chief's and evaluator's image (default --image)"),
      sw("chief", "add a chief replica"),
      sw("evaluator", "add an evaluator replica"),
      flag("share-memory", 0, "SIZE", "memory-backed /dev/shm of this size, e.g. 2Gi (Arena's name for --shm)"),
      flag("nproc-per-node", 0, "N", "processes per node: auto, cpu, gpu or a number (PET_NPROC_PER_NODE)"),
      sw("mounts-on-launcher", "the launcher mounts the data too (gpupool's launcher always does)"),
      flag("success-policy", 0, "POLICY", "when the job succeeds: ChiefWorker (default) or AllWorkers"),
      // Refused for every kind (the library says what is missing): hidden from every --help.
      flag("role-sequence", 0, "ROLES", "ACK's start order of the roles (not supported)"),
      flag("starting-timeout", 0, "DURATION", "runPolicy.startingDeadlineSeconds (not supported)"),
      sw("gputopology", "ACK's GPU topology scheduling (not supported)"),
      sw("rdma", "ACK's RDMA devices (not supported)"),
      flag("model-name", 0, "NAME", "Arena's model registry (not supported)"),
      flag("model-source", 0, "URI", "Arena's model registry (not supported)"),
  };
}

/// TFJob's per-role flags, as Arena's submit_tfjob.go names them: --ROLE-cpu, --ROLE-memory (the
/// request, and the limit unless --ROLE-*-limit), --ROLE-selector, --ROLE-port, --ps-gpus.
std::vector<FlagSpec> tf_role_flags() {
  std::vector<FlagSpec> f;
  for (std::string role : {"worker", "ps", "chief", "evaluator"}) {
    const std::string who = role == "ps"       ? "the parameter servers'"
                            : role == "worker" ? "the workers'"
                                               : "the " + role + "'s";
    f.push_back(flag(role + "-cpu", 0, "CPU", who + " CPU request, and limit unless --" + role + "-cpu-limit"));
    f.push_back(flag(role + "-cpu-limit", 0, "CPU", who + " CPU limit"));
    f.push_back(
        flag(role + "-memory", 0, "MEM", who + " memory request, and limit unless --" + role + "-memory-limit"));
    f.push_back(flag(role + "-memory-limit", 0, "MEM", who + " memory limit"));
    if (role == "ps") f.push_back(flag("ps-gpus", 0, "N", "GPUs per parameter server (default none)"));
    if (role != "evaluator") f.push_back(flag(role + "-port", 0, "PORT", who + " port (tfjob-port; default 2222)"));
    f.push_back(flag(role + "-selector", 0, "K=V", who + " node label, instead of --selector", true));
    if (role == "worker" || role == "ps") {
      f.push_back(flag(role + "-affinity-policy", 0, "POLICY",
                       who + " placement: spread (one per node), binpack (together) or none"));
      f.push_back(flag(role + "-affinity-constraint", 0, "RULE",
                       "how --" + role + "-affinity-policy applies: preferred (default) or required"));
    }
  }
  return f;
}

/// The flags of `submit KIND`: all of them; --help lists those that apply to the kind.
std::vector<FlagSpec> submit_flags(const std::string& kind) {
  std::vector<FlagSpec> f = {
      flag("name", 0, "NAME", "job name (DNS-1123 label)"),
      flag("image", 'i', "IMAGE",
           "container image, or a shorthand of the profile's catalog (e.g. ubuntu-pytorch:1.5.0)"),
      flag("gpus", 0, "N", "GPUs per worker"),
      flag("cpu", 0, "CPU", "CPU request per replica, e.g. 4 or 500m"),
      flag("memory", 0, "MEM", "memory request per replica, e.g. 16Gi"),
      flag("cpu-limit", 0, "CPU", "CPU limit per replica (a quota on limits.cpu needs one)"),
      flag("memory-limit", 0, "MEM", "memory limit per replica (a quota on limits.memory needs one)"),
      flag("gpu-limit", 0, "N", "GPUs per replica as a limit (the same as --gpus: a GPU request equals its limit)"),
      flag("shm", 0, "SIZE", "memory-backed /dev/shm of this size, e.g. 8Gi"),
      flag("toleration", 0, "T",
           "tolerate tainted nodes: KEY, all, KEY=VALUE:EFFECT, KEY:EFFECT or KEY=VALUE:EFFECT,OPERATOR", true),
      flag("selector", 0, "K=V", "run only on nodes with this label", true),
      flag("data", 'd', "PVC:/PATH[:ro]", "mount a PVC", true),
      flag("data-dir", 0, "/HOST:/PATH[:ro]", "mount a host directory", true),
      flag("pvc-create", 0, "NAME:CLASS:SIZE[:/PATH]",
           "create a PVC with the job (CLASS may be the profile's nfs/cephfs alias)", true),
      sw("ssd", "mount the node's local SSDs at the profile's paths"),
      sw("nfs", "mount the profile's NFS share (datasets read-only, your own directory read-write)"),
      flag("stage-in", 0, "SRC:CACHE", "copy SRC (PVC/NFS) into CACHE (SSD) before the command", true),
      flag("stage-out", 0, "RESULTS:TARGET",
           "copy RESULTS (SSD) to TARGET (a writable PVC/NFS path) after the command, also when the pod is stopped"),
      flag("stage-out-grace", 0, "SECONDS",
           "after SIGTERM, time to stop the command and copy results back (default 300)"),
      flag("env", 'e', "K=V", "environment variable", true),
      flag("working-dir", 0, "DIR", "working directory of the command"),
      sw("tensorboard", "run TensorBoard on the log dir, reachable on a NodePort"),
      flag("logdir", 0, "DIR", "TensorBoard log directory (default /training_logs)"),
      flag("scheduler", 0, "NAME", "schedulerName (default: the profile's for GPU jobs)"),
      flag("priority", 0, "CLASS", "priorityClassName"),
      flag("runtime-class", 0, "NAME",
           "the pods' RuntimeClass, e.g. nvidia with the NVIDIA GPU operator (default: the profile's for GPU jobs)"),
      flag("queue", 'q', "NAME",
           "Kueue LocalQueue: the job waits there, suspended, until admitted (default: the profile's)"),
      sw("gang", "start all pods together or none (Kueue's all-or-nothing admission; needs a queue)"),
      FlagSpec{"dry-run",
               0,
               "",
               "create nothing: server (the default) has the server validate every object (dryRun=All); "
               "client only renders them, without contacting the server",
               false,
               {"server", "client"}},
      flag("output", 'o', "FORMAT", "print the objects instead of a summary: yaml or json"),
  };
  f.insert(f.begin() + 3, flag("workers", 0, "N",
                               kind == "deployment" ? "replicas"
                               : kind == "job"      ? "pods, run in parallel (parallelism = completions)"
                               : kind == "pytorch"  ? "pods, the master included (as Arena counts): N-1 Worker replicas"
                                                    : "number of workers"));
  for (auto& x : arena_submit_flags()) f.push_back(std::move(x));
  for (auto& x : tf_role_flags()) f.push_back(std::move(x));
  f.push_back(flag("runtime", 0, "NAME", "the ClusterTrainingRuntime to run on (default torch-distributed)"));
  // Every kind parses every flag; one that cannot apply is hidden from --help and refused by the
  // library with the reason (option_refusal).
  const WorkloadKind k = parse_workload_kind(kind);
  for (auto& x : f) x.hidden = !option_refusal(k, "--" + x.name).empty();
  return f;
}

SubmitOptions submit_options(const std::string& kind, const ParsedArgs& a) {
  SubmitOptions o;
  o.kind = kind;
  o.name = a.get("name");
  o.namespace_ = a.get("namespace");
  o.image = a.get("image");
  o.gpus = count_flag(a, "gpus", 0);
  o.workers = static_cast<std::int32_t>(count_flag(a, "workers", 1));
  o.ps = static_cast<std::int32_t>(count_flag(a, "ps", 0));
  o.chief = a.has("chief");
  o.cpu = a.get("cpu");
  o.memory = a.get("memory");
  o.cpu_limit = a.get("cpu-limit");
  o.memory_limit = a.get("memory-limit");
  if (a.has("gpu-limit")) o.gpu_limit = count_flag(a, "gpu-limit", 0);
  o.shm = a.get("shm");
  o.tolerations = a.all("toleration");
  o.selectors = a.all("selector");
  o.data = a.all("data");
  o.data_dirs = a.all("data-dir");
  o.pvc_create = a.all("pvc-create");
  o.env = a.all("env");
  o.ssd = a.has("ssd");
  o.nfs = a.has("nfs");
  o.stage_in = a.all("stage-in");
  o.stage_out = a.get("stage-out");
  o.stage_out_grace = count_flag(a, "stage-out-grace", -1);
  o.working_dir = a.get("working-dir");
  o.tensorboard = a.has("tensorboard");
  o.logdir = a.get("logdir");
  o.mpi_api = a.get("mpi-api");
  o.runtime = a.get("runtime");
  o.scheduler_name = a.get("scheduler");
  o.priority_class = a.get("priority");
  o.runtime_class = a.get("runtime-class");
  o.annotations = a.all("annotation");
  o.labels = a.all("label");
  o.image_pull_secrets = a.all("image-pull-secret");
  o.image_pull_policy = a.get("image-pull-policy");
  o.tensorboard_image = a.get("tensorboard-image");
  o.retry = static_cast<std::int32_t>(count_flag(a, "retry", -1));
  o.shell = a.get("shell");
  o.running_timeout = a.get("running-timeout");
  o.ttl_after_finished = a.get("ttl-after-finished");
  o.clean_task_policy = a.get("clean-task-policy");
  o.config_files = a.all("config-file");
  o.sync_mode = a.get("sync-mode");
  o.sync_source = a.get("sync-source");
  o.sync_image = a.get("sync-image");
  o.ps_image = a.get("ps-image");
  o.worker_image = a.get("worker-image");
  o.evaluator = a.has("evaluator");
  o.devices = a.all("device");
  o.share_memory = a.get("share-memory");
  o.nproc_per_node = a.get("nproc-per-node");
  o.mounts_on_launcher = a.has("mounts-on-launcher");
  o.success_policy = a.get("success-policy");
  o.role_sequence = a.get("role-sequence");
  o.starting_timeout = a.get("starting-timeout");
  o.gputopology = a.has("gputopology");
  o.rdma = a.has("rdma");
  o.model_name = a.get("model-name");
  o.model_source = a.get("model-source");
  struct RoleFlags {
    const char* role;
    std::string *cpu, *cpu_limit, *memory, *memory_limit;
    std::vector<std::string>* selectors;
    std::int32_t* port;
  };
  for (const RoleFlags& r :
       {RoleFlags{"worker", &o.worker_cpu, &o.worker_cpu_limit, &o.worker_memory, &o.worker_memory_limit,
                  &o.worker_selectors, &o.worker_port},
        RoleFlags{"ps", &o.ps_cpu, &o.ps_cpu_limit, &o.ps_memory, &o.ps_memory_limit, &o.ps_selectors, &o.ps_port},
        RoleFlags{"chief", &o.chief_cpu, &o.chief_cpu_limit, &o.chief_memory, &o.chief_memory_limit, &o.chief_selectors,
                  &o.chief_port},
        RoleFlags{"evaluator", &o.evaluator_cpu, &o.evaluator_cpu_limit, &o.evaluator_memory, &o.evaluator_memory_limit,
                  &o.evaluator_selectors, nullptr}}) {
    const std::string role = r.role;
    *r.cpu = a.get(role + "-cpu");
    *r.cpu_limit = a.get(role + "-cpu-limit");
    *r.memory = a.get(role + "-memory");
    *r.memory_limit = a.get(role + "-memory-limit");
    *r.selectors = a.all(role + "-selector");
    if (r.port) {
      // The Workload's check names the range (1-65535); a huge number stays out of range.
      *r.port = static_cast<std::int32_t>(std::min<std::int64_t>(count_flag(a, role + "-port", 0), 65536));
    }
  }
  o.ps_gpus = count_flag(a, "ps-gpus", -1);
  o.worker_affinity_policy = a.get("worker-affinity-policy");
  o.worker_affinity_constraint = a.get("worker-affinity-constraint");
  o.ps_affinity_policy = a.get("ps-affinity-policy");
  o.ps_affinity_constraint = a.get("ps-affinity-constraint");
  o.queue = a.get("queue");
  o.gang = a.has("gang");
  const auto& pos = a.positionals();
  if (pos.size() == 1)
    o.command = pos[0];  // Arena's form: one shell string
  else if (pos.size() > 1)
    o.argv = pos;  // after --: an argv
  return o;
}

int run_submit(const std::string& kind, const ParsedArgs& a, Io& io) {
  std::string output = output_flag(a, {"yaml", "json"});
  SubmitOptions options = submit_options(kind, a);
  Workload workload = to_workload(options);
  const std::string dry = a.get("dry-run");  // "", "true" / "server", or "client"
  const bool dry_run = !dry.empty();
  SubmitResult r;
  std::optional<Connection> conn;
  if (dry == "client") {
    // kubectl's --dry-run=client: nothing is contacted and no kubeconfig is needed. The namespace is
    // -n's, else the kubeconfig's context's when there is one, else "default"; an MPIJob's version
    // is --mpi-api's (v1 when it is not given).
    if (workload.namespace_.empty()) workload.namespace_ = a.get("namespace");
    if (workload.namespace_.empty() && !a.has("embedded")) {
      try {
        KubeConfigOptions ko;
        ko.path = a.get("kubeconfig");
        ko.context = a.get("context");
        workload.namespace_ = load_kubeconfig(ko).namespace_name;
      } catch (const Error&) {  // no kubeconfig (or an unusable one): not needed here
      }
    }
    if (workload.namespace_.empty()) workload.namespace_ = "default";
    std::string profile = a.get("profile");
    if (profile.empty()) profile = topology_profile(a.get("embedded"));
    try {
      r.submission = render(workload, Profile::resolve(profile));
    } catch (const ValidationError& e) {
      throw with_option_names(e);  // checks against the profile's mounts name the flag
    }
    r.name = workload.name;
    for (const auto& object : r.submission.objects) r.created.push_back(kubectl_name(object));
  } else {
    conn.emplace(Connection::open(a));
    try {
      r = conn->cluster().submit(workload, dry_run);
    } catch (const ValidationError& e) {
      throw with_option_names(e);
    }
  }
  if (output == "yaml")
    io.out << to_yaml(r.submission.objects);
  else if (output == "json")
    io.out << to_json(r.submission.objects);
  else
    for (const auto& c : r.created)
      io.out << c
             << (dry == "client" ? " rendered (client dry run, nothing sent)\n"
                 : dry_run       ? " created (server dry run)\n"
                                 : " created\n");
  if (conn) conn->close();
  return 0;
}

// ---- apply -------------------------------------------------------------------------------------

/// The manifests of every -f: a file, "-" (standard input), or a directory's .yaml/.yml/.json files
/// (with -R its subdirectories' too), as kubectl apply reads them.
std::vector<boost::json::object> read_manifests(const ParsedArgs& a) {
  namespace fs = std::filesystem;
  std::vector<boost::json::object> out;
  auto read_file = [&](const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ValidationError("--filename", path.string(), "cannot read this file");
    std::stringstream text;
    text << in.rdbuf();
    for (auto& o : parse_manifests(text.str(), path.string())) out.push_back(std::move(o));
  };
  if (a.all("filename").empty()) throw UsageError("apply needs -f FILE, -f DIR or -f - (standard input)");
  for (const auto& f : a.all("filename")) {
    if (f == "-") {
      std::stringstream text;
      text << std::cin.rdbuf();
      for (auto& o : parse_manifests(text.str(), "<stdin>")) out.push_back(std::move(o));
    } else if (fs::is_directory(f)) {
      std::vector<fs::path> files;
      auto take = [&](const fs::directory_entry& e) {
        const auto ext = e.path().extension();
        if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) files.push_back(e.path());
      };
      if (a.has("recursive"))
        for (const auto& e : fs::recursive_directory_iterator(f)) take(e);
      else
        for (const auto& e : fs::directory_iterator(f)) take(e);
      std::sort(files.begin(), files.end());
      for (const auto& p : files) read_file(p);
    } else if (fs::exists(f)) {
      read_file(f);
    } else {
      throw ValidationError("--filename", f, "no such file or directory");
    }
  }
  if (out.empty()) throw ValidationError("--filename", a.all("filename").front(), "no objects to apply");
  return out;
}

int run_apply(const ParsedArgs& a, Io& io) {
  const std::string output = output_flag(a, {"yaml", "json"});
  const std::string dry = a.get("dry-run");  // "", "true" / "server", or "client"
  auto objects = read_manifests(a);
  auto conn = Connection::open(a);
  ApplyResult r;
  if (dry == "client") {  // checked against the profile, nothing sent
    r.objects = conn.cluster().prepare_manifests(std::move(objects));
    for (const auto& o : r.objects) r.lines.push_back(kubectl_name(o) + " checked (client dry run, nothing sent)");
  } else {
    r = conn.cluster().apply(std::move(objects), !dry.empty(), a.has("force-conflicts"));
  }
  if (output == "yaml")
    io.out << to_yaml(r.objects);
  else if (output == "json")
    io.out << to_json(r.objects);
  else
    for (const auto& line : r.lines) io.out << line << "\n";
  conn.close();
  return 0;
}

// ---- job commands ------------------------------------------------------------------------------

int run_get(const ParsedArgs& a, Io& io) {
  std::string output = output_flag(a, {"wide", "json", "yaml"});
  auto conn = Connection::open(a);
  JobInfo info = conn.cluster().get(a.positionals()[0]);
  if (output == "json" || output == "yaml") {
    const boost::json::value o = info.to_json();
    io.out << (output == "json" ? to_json(o) : to_yaml(o));
  } else {
    io.out << info.to_text();
    if (output == "wide") {
      io.out << "\n";
      for (const auto& i : info.instances)
        io.out << fmt::format("{}  {}  {}\n", i.name, i.phase, i.node.empty() ? "<none>" : i.node);
    }
  }
  conn.close();
  return 0;
}

int run_list(const ParsedArgs& a, Io& io) {
  auto conn = Connection::open(a);
  if (a.has("all-namespaces")) {
    io.out << jobs_to_text(conn.cluster().list_all_namespaces(), true);
  } else {
    io.out << jobs_to_text(conn.cluster().list());
  }
  conn.close();
  return 0;
}

int run_delete(const ParsedArgs& a, Io& io) {
  auto conn = Connection::open(a);
  int status = 0;
  for (const auto& name : a.positionals()) {
    try {
      // kubectl's line: `deployment.apps "x" deleted`.
      const std::string deleted = conn.cluster().delete_job(name);
      io.out << fmt::format("{} \"{}\" deleted\n", deleted.substr(0, deleted.rfind('/')), name);
    } catch (const ApiError& e) {
      io.err << "error: " << e.what() << "\n";
      status = 1;
    }
  }
  conn.close();
  return status;
}

int run_logs(const ParsedArgs& a, Io& io) {
  auto conn = Connection::open(a);
  JobLogOptions lo;
  lo.instance = a.get("instance");
  lo.container = a.get("container");
  lo.follow = a.has("follow");
  if (auto t = a.optional("tail")) lo.tail_lines = parse_count(*t, "--tail");
  conn.cluster().logs(a.positionals()[0], lo, [&](const std::string& line) {
    io.out << line << "\n";
    io.out.flush();
    return true;  // Ctrl-C ends the command (default SIGINT action)
  });
  conn.close();
  return 0;
}

int run_wait(const ParsedArgs& a, Io& io) {
  WaitFor until = parse_wait_for(a.get("for", "Running"), "--for");
  auto timeout = duration_flag(a, "timeout", "10m");
  auto conn = Connection::open(a);
  const bool progress = io.out_is_terminal;
  bool shown = false;
  std::size_t width = 0;  // of the line shown last: a shorter one pads it out
  JobInfo info;
  try {
    info = conn.cluster().wait(a.positionals()[0], until, timeout, [&](const JobInfo& j) {
      if (!progress) return;
      const std::string line = j.progress_text();
      io.out << "\r" << line << std::string(width > line.size() ? width - line.size() : 0, ' ');
      io.out.flush();
      width = line.size();
      shown = true;
    });
  } catch (...) {
    // The error goes on a line of its own, not after a half-overwritten progress line.
    if (shown) io.out << "\r\x1b[K" << std::flush;
    throw;
  }
  if (progress) io.out << "\n";
  io.out << fmt::format("job \"{}\" is {}\n", info.name, to_string(info.status));
  conn.close();
  return 0;
}

int run_explain(const ParsedArgs& a, Io& io) {
  auto conn = Connection::open(a);
  io.out << conn.cluster().explain(a.positionals()[0]).to_text();
  conn.close();
  return 0;
}

// ---- cluster commands --------------------------------------------------------------------------

int run_nodes(const ParsedArgs& a, Io& io) {
  std::string output = output_flag(a, {"wide"});
  auto conn = Connection::open(a);
  io.out << conn.cluster().nodes().to_text(output == "wide");
  conn.close();
  return 0;
}

int run_top_job(const ParsedArgs& a, Io& io) {
  auto conn = Connection::open(a);
  io.out << top_jobs_to_text(conn.cluster().top_jobs());
  conn.close();
  return 0;
}

int run_top_node(const ParsedArgs& a, Io& io) {
  auto conn = Connection::open(a);
  io.out << conn.cluster().nodes().to_top_text();
  conn.close();
  return 0;
}

int run_taint(const ParsedArgs& a, Io& io) {
  const auto& pos = a.positionals();
  const std::vector<TaintChange> changes = parse_taint_changes({pos.begin() + 1, pos.end()});
  auto conn = Connection::open(a);
  const std::string done = conn.cluster().taint(pos[0], changes, a.has("overwrite"));
  io.out << fmt::format("node/{} {}\n", pos[0], done);
  conn.close();
  return 0;
}

int run_pvc_create(const ParsedArgs& a, Io& io) {
  PvcRequest pvc;
  pvc.name = a.positionals()[0];
  pvc.storage_class = a.get("storage-class");
  pvc.size = Quantity::parse(a.get("size", "10Gi"), "--size");
  if (a.has("access-mode")) {
    pvc.access_modes.clear();
    for (const auto& m : a.all("access-mode")) pvc.access_modes.push_back(parse_access_mode(m, "--access-mode"));
  }
  validate(pvc, "pvc");
  auto conn = Connection::open(a);
  conn.cluster().create_pvc(pvc);
  io.out << fmt::format("persistentvolumeclaim/{} created\n", pvc.name);
  conn.close();
  return 0;
}

int run_pvc_list(const ParsedArgs& a, Io& io) {
  auto conn = Connection::open(a);
  {
    auto pvcs = conn.cluster().pvcs();
    io.out << pvcs_to_text(pvcs, conn.cluster().client().server_now());
  }
  conn.close();
  return 0;
}

int run_pvc_delete(const ParsedArgs& a, Io& io) {
  auto conn = Connection::open(a);
  for (const auto& name : a.positionals()) {
    conn.cluster().delete_pvc(name);
    io.out << fmt::format("persistentvolumeclaim \"{}\" deleted\n", name);
  }
  conn.close();
  return 0;
}

int run_images(const ParsedArgs& a, Io& io) {
  Profile profile = a.has("embedded") || a.has("kubeconfig") || a.has("context")
                        ? Connection::open(a).cluster().profile()
                        : Profile::resolve(a.get("profile"));
  io.out << catalog_to_text(profile.catalog);
  return 0;
}

int run_queues(const ParsedArgs& a, Io& io) {
  auto conn = Connection::open(a);
  io.out << conn.cluster().queues().to_text();
  conn.close();
  return 0;
}

int run_quota(const ParsedArgs& a, Io& io) {
  auto conn = Connection::open(a);
  const auto quotas = conn.cluster().quotas();
  if (quotas.empty()) io.out << fmt::format("no ResourceQuota in namespace \"{}\"\n", conn.cluster().namespace_name());
  for (const auto& q : quotas) {
    io.out << q.name << "\n";
    for (const auto& [resource, used, hard] : q.resources) io.out << fmt::format("  {}: {}/{}\n", resource, used, hard);
  }
  conn.close();
  return 0;
}

/// Whether `cluster serve` shares the topology's state (issue #16): --state / --fresh, else yes for
/// a built-in topology (the one `--embedded NAME` commands use), no for none or a file. (A switch
/// given =false reads as absent, so "not shared" needs a switch of its own.)
bool serve_shares_state(const ParsedArgs& a, const std::string& topology) {
  if (a.has("state") && a.has("fresh")) throw UsageError("--state and --fresh exclude each other");
  if (a.has("fresh")) return false;
  if (a.has("state")) return true;
  const auto names = Topology::builtin_names();
  return std::find(names.begin(), names.end(), topology) != names.end();
}

int run_serve(const ParsedArgs& a, Io& io) {
  EmbeddedClusterOptions o;
  o.topology = a.get("topology", "seed");
  o.manual_clock = false;
  o.server.port = static_cast<int>(count_flag(a, "port", 0));
  o.server.kubeconfig_dir = a.get("kubeconfig-dir");
  o.server.users = a.all("user");
  o.server.mpijob_version = a.get("mpi-api", "v1");
  const bool shared = serve_shares_state(a, o.topology);
  o.server.run = shared ? embedded_run_mode(a, o.topology) : run_mode_flag(a);
  if (shared) {
    o.state = "";
    o.may_join = false;
    o.on_wait = [&io](const std::string& m) { io.err << m << "\n"; };
  }
  // Block SIGINT/SIGTERM before the server starts its threads (they inherit the mask), so the
  // signal reaches sigwait below and the server stops cleanly.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  EmbeddedCluster cluster(o);
  if (shared && a.has("run")) remember_run_mode(EmbeddedStatePaths::of(o.topology), o.server.run);
  const EmbeddedServer& server = cluster.server();
  const std::string topology = a.get("topology", "seed");
  io.out << fmt::format("gpupool embedded cluster \"{}\" serving on {}\n", topology, server.url())
         << fmt::format("admin kubeconfig: {}\n", server.admin_kubeconfig());
  for (const auto& u : a.all("user")) io.out << fmt::format("user {} kubeconfig: {}\n", u, server.kubeconfig(u));
  if (shared)
    io.out << fmt::format("state: {} (shared with `gpupool --embedded {}` commands)\n",
                          EmbeddedStatePaths::of(topology).snapshot, topology);
  io.out << "press Ctrl-C to stop\n";
  io.out.flush();
  int sig = 0;
  sigwait(&set, &sig);
  cluster.stop();
  io.out << "stopped\n";
  return 0;
}

EmbeddedStatePaths state_paths(const ParsedArgs& a) {
  return EmbeddedStatePaths::of(a.positionals().empty() ? "seed" : a.positionals()[0]);
}

int run_version(const ParsedArgs& a, Io& io) {
  io.out << fmt::format("Client Version: gpupool {}\n", gpupool::version());
  if (a.has("client")) return 0;
  io.out.flush();
  auto conn = Connection::open(a);
  const auto v = conn.cluster().client().server_version();
  io.out << fmt::format("Server Version: {}\n", v.git_version);
  conn.close();
  return 0;
}

int run_cluster_status(const ParsedArgs& a, Io& io) {
  const auto p = state_paths(a);
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto size = [&](const std::string& f) { return fs::exists(f) ? fs::file_size(f, ec) : 0; };
  io.out << fmt::format("topology: {}\n", p.topology);
  if (auto e = running_embedded(p))
    io.out << fmt::format("served by: pid {} on {}\nadmin kubeconfig: {}\n", e->pid, e->url, e->admin_kubeconfig);
  else
    io.out << "served by: none (each --embedded command runs it in-process)\n";
  if (fs::exists(p.snapshot) || fs::exists(p.snapshot + ".log"))
    io.out << fmt::format("state: {} ({} bytes, journal {} bytes)\n", p.snapshot, size(p.snapshot),
                          size(p.snapshot + ".log"));
  else
    io.out << fmt::format("state: none yet ({} is created by the first command)\n", p.snapshot);
  return 0;
}

int run_cluster_stop(const ParsedArgs& a, Io& io) {
  const auto p = state_paths(a);
  if (stop_embedded(p))
    io.out << fmt::format("embedded cluster \"{}\" stopped\n", p.topology);
  else
    io.out << fmt::format("embedded cluster \"{}\" is not being served\n", p.topology);
  return 0;
}

int run_cluster_reset(const ParsedArgs& a, Io& io) {
  const auto p = state_paths(a);
  reset_embedded(p);
  io.out << fmt::format("embedded cluster \"{}\" reset: the next command starts from the topology\n", p.topology);
  return 0;
}

// ---- the table ---------------------------------------------------------------------------------

/// Every command; a `submit KIND`'s flags are left to its lazy_flags (complete_spec builds them).
std::vector<Command> build_commands() {
  std::vector<Command> c;
  auto add = [&](CommandSpec spec, Handler h) { c.push_back(Command{std::move(spec), std::move(h), {}}); };
  add({"",
       "gpupool: launch GPU training workloads on Kubernetes",
       "COMMAND",
       "Commands:\n"
       "  submit KIND      submit a training job: mpi, tf, pytorch, trainjob, jobset, job, deployment, pod\n"
       "  apply -f FILE    apply existing manifests (server-side apply), checked against the profile\n"
       "  get NAME         a job's status and where each instance runs\n"
       "  list             jobs in the namespace\n"
       "  logs NAME        a job's log\n"
       "  wait NAME        wait until a job is Running or Succeeded\n"
       "  explain NAME     why a job's pods are pending\n"
       "  exec NAME -- CMD...   run a command in a job's pod\n"
       "  port-forward NAME [LOCAL:]REMOTE...   forward local ports to a job's pod\n"
       "  tensorboard NAME   the job's TensorBoard on http://127.0.0.1:PORT\n"
       "  delete NAME...   delete jobs\n"
       "  nodes            the cluster's nodes\n"
       "  top node         GPUs per node\n"
       "  top job          GPUs requested and allocated per job\n"
       "  taint NODE K=V:EFFECT[-]...   taint or untaint a node\n"
       "  pvc create|list|delete   persistent volume claims\n"
       "  quota            the namespace's resource quotas\n"
       "  queues           Kueue's LocalQueues and ClusterQueues (quota per flavor)\n"
       "  images           the profile's image catalog\n"
       "  version          client and server versions (also --version: the client's)\n"
       "  cluster serve    run an embedded cluster in the foreground\n"
       "  cluster status|stop|reset   the embedded cluster's server and state\n\n"
       "Run \"gpupool COMMAND --help\" for a command's flags. Without --kubeconfig, the kubeconfig\n"
       "kubectl would use is read; --embedded seed runs everything on a local embedded cluster.",
       {},
       0,
       -1},
      {});
  add({"submit",
       "Submit a training job",
       "KIND",
       "Kinds: mpi, tf, pytorch, trainjob, jobset, job, deployment, pod.",
       {},
       0,
       -1},
      {});
  struct KindInfo {
    const char* cmd;
    const char* kind;
    const char* what;
    const char* note;  // said before the usage notes ("" for none)
  };
  for (auto k :
       {KindInfo{"mpi", "mpi", "an MPIJob (Horovod / mpirun: a launcher and workers)", ""},
        KindInfo{"tf", "tf", "a TFJob (PS / Worker / Chief)", ""},
        KindInfo{"pytorch", "pytorch", "a PyTorchJob (Master + Workers)", ""},
        KindInfo{"trainjob", "trainjob", "a Kubeflow Trainer v2 TrainJob (a training runtime on --workers nodes)", ""},
        KindInfo{"jobset", "jobset", "a JobSet (one replicated Job of --workers indexed pods)", ""},
        KindInfo{"job", "job", "a batch/v1 Job", ""},
        KindInfo{"deployment", "deployment", "a Deployment (the guide's long-running GPU container)",
                 "With --gpus, its pods are replaced old pod first (RollingUpdate maxSurge 0, maxUnavailable 1):\n"
                 "a new image or `kubectl rollout restart` never waits for GPUs the old pods hold.\n\n"},
        KindInfo{"pod", "pod", "a bare Pod", ""}}) {
    std::string kind = k.kind;
    add({fmt::format("submit {}", k.cmd),
         fmt::format("Submit {}", k.what),
         "[COMMAND | -- ARGV...]",
         std::string(k.note) +
             "COMMAND is one shell string (run with sh -c); after --, the words are the argv.\n\n"
             "Example (the seed's job):\n"
             "  gpupool submit mpi --name mpi-dist --gpus 1 --workers 1 --toleration ssd_node \\\n"
             "    --image "
             "registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5 "
             "\\\n"
             "    --tensorboard \"mpirun python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py --model "
             "resnet101\"",
         {},
         0,
         -1},
        [kind](const ParsedArgs& a, Io& io) { return run_submit(kind, a, io); });
    c.back().lazy_flags = [kind] { return submit_flags(kind); };
  }
  add({"apply",
       "Apply existing manifests (YAML or JSON) with server-side apply, as kubectl apply",
       "",
       "Every object is checked against the profile first (catalog images, the GPU resource, the namespace)\n"
       "and the namespace's quotas; on a failure, what this apply created is deleted again.\n\n"
       "Examples:\n  gpupool --profile iiis apply -f deployment.yaml\n  gpupool apply -f manifests/ -R "
       "--dry-run=server",
       {flag("filename", 'f', "FILE|DIR|-", "a manifest file, a directory of them, or - for standard input", true),
        sw("recursive", "with -f DIR, also its subdirectories", 'R'),
        FlagSpec{"dry-run",
                 0,
                 "",
                 "send nothing to store: server (the default) has the server validate and admit every object; "
                 "client only checks them against the profile",
                 false,
                 {"server", "client"}},
        sw("force-conflicts", "take over fields another manager owns (server-side apply --force-conflicts)"),
        flag("output", 'o', "FORMAT", "print the applied objects: yaml or json")},
       0,
       0},
      run_apply);
  add({"get",
       "Show a job: status, duration, and the node of each instance",
       "NAME",
       "",
       {flag("output", 'o', "FORMAT", "wide, json or yaml")},
       1,
       1},
      run_get);
  add({"list",
       "List the jobs gpupool submitted in the namespace",
       "",
       "",
       {sw("all-namespaces", "the jobs of every namespace you may read (a NAMESPACE column first)", 'A')},
       0,
       0},
      run_list);
  add({"logs",
       "Print a job's log (the launcher / master / first worker unless -i is given)",
       "NAME",
       "",
       {sw("follow", "stream new lines until the pod ends or Ctrl-C", 'f'),
        flag("instance", 'i', "POD", "the pod to read"), flag("container", 'c', "NAME", "the container"),
        flag("tail", 't', "N", "only the last N lines")},
       1,
       1},
      run_logs);
  add({"exec",
       "Run a command in one of a job's pods, as kubectl exec; exits with the command's code",
       "NAME -- COMMAND [ARGS...]",
       "Examples:\n  gpupool exec mpi-dist -- nvidia-smi\n  gpupool exec mpi-dist -i mpi-dist-worker-0 -it -- bash",
       {flag("instance", 'i', "POD", "the pod (default: the job's first running pod)"),
        flag("container", 'c', "NAME", "the container"), sw("stdin", "send standard input to the command"),
        sw("tty", "allocate a terminal (raw mode when stdin is one)", 't')},
       2,
       -1},
      run_exec);
  add({"port-forward",
       "Forward local ports to one of a job's pods, as kubectl port-forward (until Ctrl-C)",
       "NAME [LOCAL:]REMOTE...",
       "Examples:\n  gpupool port-forward mpi-dist 8888:8888\n  gpupool port-forward mpi-dist :6006",
       {flag("instance", 'i', "POD", "the pod (default: the job's first running pod)")},
       2,
       -1},
      run_port_forward);
  add({"tensorboard",
       "Open the job's TensorBoard (--tensorboard) on http://127.0.0.1:PORT (until Ctrl-C)",
       "NAME",
       "",
       {flag("port", 0, "PORT", "the local port (default: a free one)")},
       1,
       1},
      run_tensorboard);
  add({"delete",
       "Delete jobs (their pods, services and TensorBoard go with them; PVCs stay)",
       "NAME...",
       "",
       {},
       1,
       -1},
      run_delete);
  add({"wait",
       "Wait until a job is Running, Succeeded or finished",
       "NAME",
       "",
       {flag("for", 0, "STATE", "Running (default), Succeeded or Finished"),
        flag("timeout", 0, "DURATION", "give up after this long (default 10m)")},
       1,
       1},
      run_wait);
  add({"explain", "Explain why a job's pods are pending (taints, selectors, resources, quota)", "NAME", "", {}, 1, 1},
      run_explain);
  add({"nodes",
       "List the cluster's nodes (NAME STATUS ROLES AGE VERSION)",
       "",
       "",
       {flag("output", 'o', "FORMAT", "wide: add INTERNAL-IP, GPUS and TAINTS")},
       0,
       0},
      run_nodes);
  add({"top", "Show resource usage", "node|job", "", {}, 0, -1}, {});
  add({"top job", "GPUs requested and allocated per job, as arena top job", "", "", {}, 0, 0}, run_top_job);
  add({"top node", "GPUs total and allocated per node, and for the cluster", "", "", {}, 0, 0}, run_top_node);
  add({"taint",
       "Taint or untaint a node, like kubectl taint",
       "NODE KEY[=VALUE]:EFFECT[-]...",
       "Examples:\n  gpupool taint cn-beijing.192.168.3.228 gpu_node=invalid:NoSchedule\n"
       "  gpupool taint cn-beijing.192.168.3.228 gpu_node-",
       {sw("overwrite", "replace a taint the node has with the same key and effect (else an error, as kubectl)")},
       2,
       -1},
      run_taint);
  add({"pvc", "Persistent volume claims", "create|list|delete", "", {}, 0, -1}, {});
  add({"pvc create",
       "Create a PVC",
       "NAME",
       "",
       {flag("storage-class", 0, "CLASS", "StorageClass, or the profile's alias (nfs, cephfs)"),
        flag("size", 0, "SIZE", "requested size (default 10Gi)"),
        flag("access-mode", 0, "MODE", "ReadWriteMany (default), ReadWriteOnce, ... or RWX/RWO/ROX", true)},
       1,
       1},
      run_pvc_create);
  add({"pvc list", "List PVCs in the namespace", "", "", {}, 0, 0}, run_pvc_list);
  add({"pvc delete", "Delete PVCs (their data may be lost)", "NAME...", "", {}, 1, -1}, run_pvc_delete);
  add({"quota", "Show the namespace's resource quotas (used / hard)", "", "", {}, 0, 0}, run_quota);
  add({"queues", "List Kueue's LocalQueues and ClusterQueues: nominal and used quota per flavor", "", "", {}, 0, 0},
      run_queues);
  add({"images", "List the profile's image catalog", "", "", {}, 0, 0}, run_images);
  add({"version",
       "Print the client's version and the server's (kubectl version's two lines)",
       "",
       "",
       {sw("client", "the client's version only, without contacting the server")},
       0,
       0},
      run_version);
  add({"cluster", "The embedded cluster", "serve|status|stop|reset", "", {}, 0, -1}, {});
  add({"cluster serve",
       "Run an embedded Kubernetes API server in the foreground until Ctrl-C",
       "",
       "",
       {flag("topology", 0, "NAME|FILE",
             "seed (default), iiis, a topology file, or none (no nodes: create them with kubectl)"),
        flag("port", 'p', "PORT", "port on 127.0.0.1 (default: any free port)"),
        flag("kubeconfig-dir", 0, "DIR", "where to write the kubeconfigs"),
        flag("user", 'u', "NAME", "a user with a namespace of its own", true),
        flag("mpi-api", 0, "VERSION", "MPIJob version served: v1 (default) or v2beta1"),
        sw("state",
           "serve the topology's shared state, the one `--embedded NAME` commands use (the default for "
           "seed and iiis; also for a topology file)"),
        sw("fresh", "serve a cluster of its own instead, started from the topology and gone when it stops")},
       0,
       0},
      run_serve);
  add({"cluster status",
       "Whether the topology's embedded cluster is being served, and where its state is",
       "[TOPOLOGY]",
       "",
       {},
       0,
       1},
      run_cluster_status);
  add({"cluster stop",
       "Stop the process serving the topology's embedded cluster (its state is kept)",
       "[TOPOLOGY]",
       "",
       {},
       0,
       1},
      run_cluster_stop);
  add({"cluster reset",
       "Delete the topology's embedded cluster state: the next command starts afresh",
       "[TOPOLOGY]",
       "",
       {},
       0,
       1},
      run_cluster_reset);
  return c;
}

/// The table as build_commands() makes it: enough to find a command by its path.
const std::vector<Command>& command_table() {
  static const std::vector<Command> table = build_commands();
  return table;
}

const Command* find_command(const std::string& path) {
  for (const auto& c : command_table())
    if (c.spec.path == path) return &c;
  return nullptr;
}

/// A command's spec with its flags (the lazy ones built now).
CommandSpec complete_spec(const Command& c) {
  CommandSpec spec = c.spec;
  if (c.lazy_flags) spec.flags = c.lazy_flags();
  return spec;
}

bool is_global_with_value(const std::string& arg) {
  for (const auto& f : global_flags()) {
    if (f.value_name.empty()) continue;
    if (arg == "--" + f.name || (f.short_name && arg == std::string("-") + f.short_name)) return true;
  }
  return false;
}

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

}  // namespace

const std::vector<FlagSpec>& global_flags() {
  static const std::vector<FlagSpec> flags = {
      flag("kubeconfig", 0, "PATH", "kubeconfig file(s), ':'-separated (default: $KUBECONFIG or ~/.kube/config)"),
      flag("context", 0, "NAME", "kubeconfig context"),
      flag("namespace", 'n', "NS", "namespace (default: the context's)"),
      flag("profile", 0, "NAME|FILE", "site profile: generic (default), iiis, or a file"),
      flag("embedded", 0, "TOPOLOGY",
           "use a local embedded cluster (seed, iiis or a file) whose state persists between "
           "commands (also $GPUPOOL_EMBEDDED)"),
      flag("run", 0, "MODE",
           "with --embedded: simulate (default: containers are simulated) or local: the commands "
           "you submitted run for real as local processes (the image is not pulled or run; "
           "volumes are directories under the state dir, seen at their mountPath through a mount "
           "namespace, else with rewritten paths; $GPUPOOL_LOCAL_MOUNTS=namespace|userns|paths). Remembered: "
           "later commands on the same cluster keep it. A one-shot command stops the processes it "
           "started when it exits; `cluster serve --run local` keeps them running"),
      flag("loglevel", 0, "LEVEL", "gpupool's own messages on stderr: debug, info, warning (default), error"),
      sw("help", "show help", 'h'),
  };
  return flags;
}

const std::vector<Command>& commands() {
  static const std::vector<Command> all = [] {
    std::vector<Command> c = command_table();
    for (auto& x : c) {
      x.spec = complete_spec(x);
      x.lazy_flags = nullptr;
    }
    return c;
  }();
  return all;
}

int run(const std::vector<std::string>& args, Io& io) {
  // The command path is the leading words that name a command; global flags may come first.
  std::string path;
  std::vector<std::string> rest;
  bool path_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!path_done && !a.empty() && a[0] != '-') {
      std::string candidate = path.empty() ? a : path + " " + a;
      if (find_command(candidate)) {
        path = candidate;
        continue;
      }
      path_done = true;
    }
    if (!path_done && is_global_with_value(a) && i + 1 < args.size()) {
      rest.push_back(a);
      rest.push_back(args[++i]);
      continue;
    }
    if (a == "--") path_done = true;
    rest.push_back(a);
  }
  if (args.size() == 1 && args[0] == "--version") {  // the client only, as `kubectl version --client`
    io.out << fmt::format("gpupool {}\n", gpupool::version());
    return 0;
  }
  if (path == "exec") rest = expand_exec_shorthand(std::move(rest));
  const Command* cmd = find_command(path);
  Parser parser("gpupool", global_flags());
  try {
    const CommandSpec spec = complete_spec(*cmd);
    bool help = std::find(rest.begin(), rest.end(), "--help") != rest.end() ||
                std::find(rest.begin(), rest.end(), "-h") != rest.end();
    auto dashdash = std::find(rest.begin(), rest.end(), "--");
    if (help && std::find(rest.begin(), dashdash, "--help") == dashdash &&
        std::find(rest.begin(), dashdash, "-h") == dashdash)
      help = false;
    if (help || !cmd->run) {
      if (!help && path.empty() && !rest.empty() && rest.front()[0] == '-') {
        // Before any command word only global flags may come; "-" and "--" name no flag.
        const std::string& first = rest.front();
        const auto start = first.find_first_not_of('-');
        const std::string name = start == std::string::npos ? "" : first.substr(start, first.find('=', start) - start);
        bool global = false;
        for (const auto& f : global_flags())
          global = global || (!name.empty() &&
                              (name == f.name || (f.short_name && first.size() == 2 && first[1] == f.short_name)));
        if (global && rest.size() == 1 && is_global_with_value(first))
          throw UsageError(fmt::format("flag {} needs a value; see \"gpupool --help\"", first));
        if (!global && !name.empty())
          throw UsageError(
              fmt::format("unknown flag {} before the command; command flags go after it (e.g. \"gpupool "
                          "get NAME {}\"); see \"gpupool --help\"",
                          first, first));
        throw UsageError("\"gpupool\" needs a command; see \"gpupool --help\"");
      }
      if (!help && !rest.empty() && rest.front()[0] != '-')
        throw UsageError(fmt::format("unknown command \"{}{}\"; see \"gpupool {}--help\"",
                                     path.empty() ? "" : path + " ", rest.front(), path.empty() ? "" : path + " "));
      if (!help && path.empty() && rest.empty()) {
        io.out << parser.help(spec);
        return 0;
      }
      if (!help)
        throw UsageError(fmt::format("\"gpupool {}\" needs a subcommand; see \"gpupool {} --help\"", path, path));
      io.out << parser.help(spec);
      return 0;
    }
    ParsedArgs parsed = parser.parse(spec, rest);
    return cmd->run(parsed, io);
  } catch (const UsageError& e) {
    io.err << "error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const ValidationError& e) {
    io.err << "error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    io.err << "error: " << one_line(e.what()) << "\n";
    return 1;
  }
}

}  // namespace gpupool::cli
