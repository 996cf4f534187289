// Job queries of the facade: get, list, delete, logs and wait.
#include "cluster/diagnose.hpp"
#include "cluster/impl.hpp"
#include "cluster/queues.hpp"
#include "embedded/controllers_util.hpp"

#include "gpupool/error.hpp"
#include "gpupool/render.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

namespace gpupool {

namespace json = boost::json;
using namespace detail;
using Clock = std::chrono::system_clock;

namespace {

constexpr WorkloadKind kAllKinds[] = {WorkloadKind::MPIJob,     WorkloadKind::TFJob,  WorkloadKind::PyTorchJob,
                                      WorkloadKind::TrainJob,   WorkloadKind::JobSet, WorkloadKind::Job,
                                      WorkloadKind::Deployment, WorkloadKind::Pod};

bool condition_true(const json::object& o, std::string_view type) {
  if (const auto* conds = arr_at(o, {"status", "conditions"}))
    for (const auto& c : *conds)
      if (c.is_object() && str_at(c.as_object(), {"type"}) == type && str_at(c.as_object(), {"status"}) == "True")
        return true;
  return false;
}

/// The job's state from its object and pods. Kubeflow kinds: the last true condition of
/// Created/Running/Restarting/Succeeded/Failed (training-operator's JobStatus); Job: Complete /
/// Failed conditions, else running pods; Deployment: ready replicas; Pod: its phase.
JobStatus derive_status(WorkloadKind kind, const json::object& workload, const std::vector<Instance>& pods) {
  bool any_running = std::any_of(pods.begin(), pods.end(), [](const Instance& i) { return i.phase == "Running"; });
  switch (kind) {
    case WorkloadKind::MPIJob:
    case WorkloadKind::TFJob:
    case WorkloadKind::PyTorchJob: {
      JobStatus status = JobStatus::Pending;
      if (const auto* conds = arr_at(workload, {"status", "conditions"}))
        for (const auto& c : *conds) {
          if (!c.is_object() || str_at(c.as_object(), {"status"}) != "True") continue;
          std::string type = str_at(c.as_object(), {"type"});
          if (type == "Succeeded")
            status = JobStatus::Succeeded;
          else if (type == "Failed")
            status = JobStatus::Failed;
          else if (type == "Running" || type == "Restarting")
            status = JobStatus::Running;
          else if (type == "Created")
            status = JobStatus::Pending;
        }
      return status;
    }
    case WorkloadKind::TrainJob:  // Complete / Failed (trainer), Completed / Failed (JobSet)
    case WorkloadKind::JobSet:
      if (condition_true(workload, "Complete") || condition_true(workload, "Completed")) return JobStatus::Succeeded;
      if (condition_true(workload, "Failed")) return JobStatus::Failed;
      return any_running ? JobStatus::Running : JobStatus::Pending;
    case WorkloadKind::Job:
      if (condition_true(workload, "Complete")) return JobStatus::Succeeded;
      if (condition_true(workload, "Failed")) return JobStatus::Failed;
      return any_running ? JobStatus::Running : JobStatus::Pending;
    case WorkloadKind::Deployment: {
      auto ready = str_at(workload, {"status", "readyReplicas"});
      return (!ready.empty() && ready != "0") || any_running ? JobStatus::Running : JobStatus::Pending;
    }
    case WorkloadKind::Pod: {
      std::string phase = str_at(workload, {"status", "phase"});
      if (phase == "Running") return JobStatus::Running;
      if (phase == "Succeeded") return JobStatus::Succeeded;
      if (phase == "Failed") return JobStatus::Failed;
      if (phase == "Pending" || phase.empty()) return JobStatus::Pending;
      return JobStatus::Unknown;
    }
  }
  return JobStatus::Unknown;
}

/// Pods of a job: gpupool's label first; for objects gpupool did not create, the labels the
/// controllers set (job-name for batch/v1 Jobs, training.kubeflow.org/job-name for Kubeflow).
std::string fallback_selector(WorkloadKind kind, const json::object& workload, const std::string& name) {
  switch (kind) {
    case WorkloadKind::Job:
      return "job-name=" + name;
    case WorkloadKind::Deployment: {
      std::string sel;
      if (const auto* ml = obj_at(workload, {"spec", "selector", "matchLabels"}))
        for (const auto& [k, v] : *ml)
          if (v.is_string()) sel += (sel.empty() ? "" : ",") + std::string(k) + "=" + std::string(v.get_string());
      return sel;
    }
    case WorkloadKind::Pod:
      return "";
    case WorkloadKind::TrainJob:  // the JobSet is named as the TrainJob
    case WorkloadKind::JobSet:
      return "jobset.sigs.k8s.io/jobset-name=" + name;
    default:
      return "training.kubeflow.org/job-name=" + name;
  }
}

/// Keeps the pods the workload controls, through its ReplicaSets (Deployment) or Jobs (an MPIJob's
/// launcher) or directly: labels alone are not enough, since the guide's Deployments share labels
/// (name=my-ubuntu-tf), and a selector then matches the others' pods too.
json::array owned_pods(const detail::ClusterImpl& impl, WorkloadKind kind, const json::object& workload,
                       json::array pods) {
  std::set<std::string> owners{str_at(workload, {"metadata", "uid"})};
  auto add_children = [&](const ResourceRef& ref) {
    for (const auto& c : impl.client->list_all(ref, impl.ns))
      if (c.is_object() && owners.count(embedded::util::controller_uid(c.as_object())))
        owners.insert(str_at(c.as_object(), {"metadata", "uid"}));
  };
  if (kind == WorkloadKind::Deployment) add_children(kReplicaSets);
  if (kind == WorkloadKind::TrainJob) add_children(kJobSets);
  if (kind != WorkloadKind::Deployment && kind != WorkloadKind::Job) add_children(kJobs);
  json::array out;
  for (auto& p : pods)
    if (p.is_object() && owners.count(embedded::util::controller_uid(p.as_object()))) out.push_back(std::move(p));
  return out;
}

/// The priority class the job's pods run with (what Arena's get shows as PRIORITY): the pods'
/// (admission may have filled in a globalDefault class), else the first pod template's.
std::string priority_class_of(const json::object& workload, const json::array& pods) {
  for (const auto& p : pods)
    if (p.is_object())
      if (auto pc = str_at(p.as_object(), {"spec", "priorityClassName"}); !pc.empty()) return pc;
  for (const auto& t : pod_templates(workload))
    if (auto pc = str_at(*t.tmpl, {"spec", "priorityClassName"}); !pc.empty()) return pc;
  return "";
}

int instance_rank(const std::string& pod) {
  for (auto [needle, rank] : {std::pair{"-launcher", 0}, {"-master-", 1}, {"-chief-", 2}, {"-worker-", 3}, {"-ps-", 4}})
    if (pod.find(needle) != std::string::npos) return rank;
  return 5;
}

}  // namespace

struct JobLookup {
  WorkloadKind kind;
  ResourceRef ref;
  json::object object;
};

namespace {

/// The workloads named `name`, one per kind at most; stops at the first unless `all`.
/// The resource of a workload kind as the cluster serves it (MPIJob at the version it serves);
/// nullopt when it serves none.
std::optional<ResourceRef> served_resource(const detail::ClusterImpl& impl, WorkloadKind kind) {
  if (kind == WorkloadKind::MPIJob) return impl.client->find_resource("kubeflow.org", "MPIJob");
  ResourceRef ref = workload_resource(kind, MpiJobApi::V1);
  if (!impl.serves(ref)) return std::nullopt;
  return ref;
}

/// Whether a request for `kind`'s objects failed because the server does not serve the type
/// after all: the generic NotFound of an unknown path (kube::decode_error), e.g. a CRD removed
/// since discovery was cached by an earlier command. Client has dropped its cached discovery by
/// then; this drops the cluster's own note of the type and asks again, live.
bool kind_gone(const detail::ClusterImpl& impl, WorkloadKind kind, const ApiError& e) {
  if (e.code() != 404 || e.status_message() != "the server could not find the requested resource") return false;
  impl.forget_served();
  return !served_resource(impl, kind);
}

/// The lists a `get` reads of a job of impl.ns, asked in the same round trip as its name (each
/// null when that failed: it is read again, and fails, where it is needed).
struct Prefetched {
  std::optional<json::array> pods;      ///< labelled with the job's name, not its TensorBoard's
  std::optional<json::array> services;  ///< its TensorBoard's
};

ListOptions job_pods_selector(const std::string& name) {
  ListOptions lo;
  lo.label_selector = fmt::format("{}={},{}!=tensorboard", kJobNameLabel, name, kComponentLabel);
  return lo;
}

ListOptions tensorboard_selector(const std::string& name) {
  ListOptions lo;
  lo.label_selector = fmt::format("{}={},{}=tensorboard", kJobNameLabel, name, kComponentLabel);
  return lo;
}

std::vector<JobLookup> find_workloads(const detail::ClusterImpl& impl, const std::string& name, bool all,
                                      std::vector<Client::Read> also = {},
                                      std::vector<Client::ReadResult>* also_found = nullptr) {
  std::vector<JobLookup> out;
  // Every served kind asked at once (one round trip: the GETs are pipelined), the answers read in
  // kind order, as asking each kind in turn until one has the name (`all`: every kind) would.
  // `also`: the caller's own reads in the same round trip (get: the job's pods and TensorBoard
  // services; submit: its pods' dry runs).
  std::vector<WorkloadKind> kinds;
  std::vector<Client::Read> reads;
  for (WorkloadKind kind : kAllKinds)
    if (auto served = served_resource(impl, kind)) {
      kinds.push_back(kind);
      reads.push_back({std::move(*served), impl.ns, name});
    }
  for (auto& r : also) reads.push_back(std::move(r));
  auto found = impl.client->read_each(reads, !all);
  for (std::size_t i = 0; i < kinds.size(); ++i)
    if (found[i].object) out.push_back(JobLookup{kinds[i], reads[i].ref, std::move(*found[i].object)});
  if (also_found)
    also_found->assign(std::make_move_iterator(found.begin() + static_cast<std::ptrdiff_t>(kinds.size())),
                       std::make_move_iterator(found.end()));
  // What another of them controls is part of it, not a workload of its own (a TrainJob's JobSet
  // has the TrainJob's name).
  std::set<std::string> uids;
  for (const auto& j : out) uids.insert(str_at(j.object, {"metadata", "uid"}));
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const JobLookup& j) { return uids.count(embedded::util::controller_uid(j.object)); }),
            out.end());
  return out;
}

std::optional<JobLookup> find_workload(const detail::ClusterImpl& impl, const Cluster&, const std::string& name,
                                       Prefetched* prefetch = nullptr) {
  std::vector<Client::Read> also;
  std::vector<Client::ReadResult> also_found;
  if (prefetch) {
    also.push_back({kPods, impl.ns, "", job_pods_selector(name), true});
    also.push_back({kServices, impl.ns, "", tensorboard_selector(name), true});
  }
  auto found = find_workloads(impl, name, false, std::move(also), &also_found);
  if (prefetch && also_found.size() == 2) {
    if (auto& p = also_found[0]; p.ok) prefetch->pods = std::move(p.items);
    if (auto& sv = also_found[1]; sv.ok) prefetch->services = std::move(sv.items);
  }
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

std::string kinds_list(const std::vector<JobLookup>& found, const std::string& name) {
  std::string out;
  for (const auto& j : found) out += (out.empty() ? "" : ", ") + kubectl_name(j.ref.kind, j.ref.group, name);
  return out;
}

// A pod's (or pod template's) effective request of one resource, as the scheduler computes it.
Quantity pod_request(const json::object& pod, const std::string& resource) {
  auto req = PodRequirements::from_pod_json(pod);
  auto it = req.requests.find(resource);
  return it == req.requests.end() ? Quantity() : it->second;
}

// GPUs a job asks for (its pod templates, each times its pods) and holds (its pods bound to a
// node and not finished), of the profile's GPU resource.
void count_gpus(const detail::ClusterImpl& impl, const json::object& workload, const json::array& pods, JobInfo& info) {
  const std::string& gpu = impl.profile.gpu.resource;
  for (const auto& t : pod_templates(workload)) info.gpus_requested += t.pods * pod_request(*t.tmpl, gpu).value();
  // A TrainJob's pod template lives in its runtime: its trainer asks resourcesPerNode on numNodes
  // (Kubeflow Trainer v1alpha1 Trainer); the rest of the runtime asks no GPUs of gpupool's making.
  if (str_at(workload, {"kind"}) == "TrainJob") {
    const json::value* trainer = workload.at("spec").as_object().if_contains("trainer");
    if (trainer && trainer->is_object()) {
      const json::object& t = trainer->as_object();
      json::object container{{"name", "node"}};
      if (const json::value* r = t.if_contains("resourcesPerNode")) container["resources"] = *r;
      json::object pod_spec;
      pod_spec["containers"] = json::array{std::move(container)};
      json::object per_node;
      per_node["spec"] = std::move(pod_spec);
      const json::value* n = t.if_contains("numNodes");
      info.gpus_requested += (n && n->is_int64() ? n->as_int64() : 1) * pod_request(per_node, gpu).value();
    }
  }
  for (const auto& p : pods) {
    const auto& pod = p.as_object();
    const std::string phase = str_at(pod, {"status", "phase"});
    if (str_at(pod, {"spec", "nodeName"}).empty() || phase == "Succeeded" || phase == "Failed") continue;
    info.gpus_allocated += pod_request(pod, gpu).value();
  }
}

/// Reads of the nodes in `nodes` whose IP `node_ips` does not hold yet (appended to `reads`),
/// speculative: a user that may not read nodes still sees the node's name.
void add_node_reads(const std::set<std::string>& nodes, const std::map<std::string, std::string>& node_ips,
                    std::vector<Client::Read>& reads) {
  for (const auto& n : nodes)
    if (!n.empty() && !node_ips.count(n)) {
      Client::Read r{kNodes, "", n};
      r.speculative = true;
      reads.push_back(std::move(r));
    }
}

/// The InternalIP of each node read by add_node_reads (reads[i] answered by found[i]); the
/// node's name where it has none or could not be read.
void take_node_ips(const std::vector<Client::Read>& reads, const std::vector<Client::ReadResult>& found,
                   std::map<std::string, std::string>& node_ips) {
  for (std::size_t i = 0; i < reads.size(); ++i) {
    if (reads[i].ref.resource != kNodes.resource) continue;
    std::string ip;
    if (i < found.size() && found[i].object) ip = Node::from_json(*found[i].object).internal_ip();
    node_ips[reads[i].name] = ip.empty() ? reads[i].name : ip;
  }
}

void read_node_ips(const detail::ClusterImpl& impl, const std::set<std::string>& nodes,
                   std::map<std::string, std::string>& node_ips) {
  std::vector<Client::Read> reads;
  add_node_reads(nodes, node_ips, reads);
  if (!reads.empty()) take_node_ips(reads, impl.client->read_each(reads), node_ips);
}

JobInfo build_info(const detail::ClusterImpl& impl, const JobLookup& job, std::map<std::string, std::string>& node_ips,
                   Prefetched* prefetched = nullptr) {
  JobInfo info;
  const auto& o = job.object;
  info.name = str_at(o, {"metadata", "name"});
  info.namespace_ = str_at(o, {"metadata", "namespace"});
  info.kind = job.kind;
  info.created = time_at(o, {"metadata", "creationTimestamp"}).value_or(Clock::time_point{});
  info.started = time_at(o, {"status", "startTime"});
  info.finished = time_at(o, {"status", "completionTime"});

  // What find_workloads read with the name (a job of impl.ns); anything else is read here.
  if (prefetched && !info.namespace_.empty() && info.namespace_ != impl.ns) prefetched = nullptr;
  json::array pods;
  if (job.kind == WorkloadKind::Pod) {
    pods.push_back(o);
  } else {
    ListOptions lo = job_pods_selector(info.name);
    // The job's own namespace (list_all_namespaces reads jobs of other namespaces than impl.ns).
    const std::string& ns = info.namespace_.empty() ? impl.ns : info.namespace_;
    pods = prefetched && prefetched->pods ? std::move(*prefetched->pods) : impl.client->list_all(kPods, ns, lo);
    if (pods.empty()) {
      lo.label_selector = fallback_selector(job.kind, o, info.name);
      if (!lo.label_selector.empty()) pods = owned_pods(impl, job.kind, o, impl.client->list_all(kPods, ns, lo));
    }
  }
  if (std::string pc = priority_class_of(o, pods); !pc.empty()) info.priority = pc;
  auto ip_of = [&](const std::string& node) -> std::string {
    if (node.empty()) return "";
    read_node_ips(impl, {node}, node_ips);
    return node_ips[node];
  };
  // A started pod carries its node's IP: the kubelet sets status.hostIP to the node's first
  // InternalIP, else ExternalIP (pkg/kubelet/kubelet_pods.go generateAPIPodStatus,
  // nodeutil.GetNodeHostIPs), which is also what Arena's NODE column shows. Only the nodes of
  // pods without one (scheduled, not reported by their kubelet yet) are read.
  std::set<std::string> nodes;
  for (const auto& p : pods) {
    const auto& pod = p.as_object();
    Instance i;
    i.name = str_at(pod, {"metadata", "name"});
    i.phase = str_at(pod, {"status", "phase"});
    if (i.phase.empty()) i.phase = "Pending";
    i.node = str_at(pod, {"spec", "nodeName"});
    if (!i.node.empty() && !node_ips.count(i.node)) {
      if (std::string host_ip = str_at(pod, {"status", "hostIP"}); !host_ip.empty())
        node_ips[i.node] = std::move(host_ip);
      else
        nodes.insert(i.node);
    }
    i.created = time_at(pod, {"metadata", "creationTimestamp"}).value_or(info.created);
    info.instances.push_back(std::move(i));
    if (!info.started) {
      // Deployments and Pods have no job start time: the first pod start stands in.
      if (auto t = time_at(pod, {"status", "startTime"}); t && job.kind != WorkloadKind::Job) info.started = t;
    }
  }
  std::sort(info.instances.begin(), info.instances.end(), [](const Instance& a, const Instance& b) {
    return std::pair(instance_rank(a.name), a.name) < std::pair(instance_rank(b.name), b.name);
  });
  info.status = derive_status(job.kind, o, info.instances);  // from the pods' phases, not their nodes
  // The nodes' IPs and, for a job that is stuck, the controllers' FailedCreate events: one round
  // trip. Only those events are read (a field of events the API server selects on:
  // pkg/registry/core/event/strategy.go ToSelectableFields): a busy namespace holds thousands.
  const bool stuck = info.status == JobStatus::Pending || info.instances.empty() ||
                     (job.kind == WorkloadKind::Deployment && rollout_unfinished(o));
  std::vector<Client::Read> reads;
  add_node_reads(nodes, node_ips, reads);
  if (stuck) {
    Client::Read events{kEvents, info.namespace_.empty() ? impl.ns : info.namespace_, ""};
    events.list.field_selector = "reason=FailedCreate";
    reads.push_back(std::move(events));
  }
  std::vector<Client::ReadResult> found;
  if (!reads.empty()) found = impl.client->read_each(reads);
  take_node_ips(reads, found, node_ips);
  for (auto& i : info.instances) i.node_ip = i.node.empty() ? "" : node_ips[i.node];
  count_gpus(impl, o, pods, info);
  info.observed = impl.client->server_now();
  info.queue = queue_status(impl, o);  // Kueue (cluster/queues.cpp)
  if (stuck) {
    // Stuck? Say why when the API can tell (a missing scheduler or operator, refused pods).
    const json::array& events = found.back().items;
    info.notes = stuck_notes(impl, StuckInput{job.kind, job.ref.group, o, pods, &events, info.observed});
  }
  if (info.queue && info.queue->state != "admitted" && info.queue->state != "finished")
    info.notes.push_back(fmt::format("queued in LocalQueue \"{}\": {}", info.queue->queue, info.queue->summary()));

  // TensorBoard: the NodePort of the job's TensorBoard Service, on the IP of the node running it
  // (or of the first node when it is not scheduled yet).
  const ListOptions so = tensorboard_selector(info.name);
  const json::array services = prefetched && prefetched->services ? std::move(*prefetched->services)
                                                                  : impl.client->list_all(kServices, impl.ns, so);
  for (const auto& s : services) {
    const auto* ports = arr_at(s.as_object(), {"spec", "ports"});
    if (!ports || ports->empty() || !ports->front().is_object()) continue;
    std::string port = str_at(ports->front().as_object(), {"nodePort"});
    if (port.empty()) continue;
    // The URL only once the TensorBoard pod runs; until then, why it does not (issue #20).
    std::string ip;
    const json::object* waiting = nullptr;
    const json::array tb_pods = impl.client->list_all(kPods, impl.ns, so);
    for (const auto& p : tb_pods) {
      if (str_at(p.as_object(), {"status", "phase"}) == "Running") {
        ip = str_at(p.as_object(), {"status", "hostIP"});  // as the instances' IPs above
        if (ip.empty()) ip = ip_of(str_at(p.as_object(), {"spec", "nodeName"}));
      } else if (!waiting) {
        waiting = &p.as_object();
      }
    }
    if (!ip.empty())
      info.tensorboard_url = fmt::format("http://{}:{}", ip, port);
    else
      info.notes.push_back(waiting ? tensorboard_note(*waiting)
                                   : "TensorBoard is not running: its Deployment has no pod yet");
  }
  return info;
}

}  // namespace

JobInfo Cluster::get(const std::string& name) const {
  Prefetched prefetched;
  auto job = find_workload(*impl_, *this, name, &prefetched);
  if (!job)
    throw ApiError(404, "NotFound",
                   fmt::format("no job \"{}\" in namespace \"{}\" (looked for MPIJob, TFJob, PyTorchJob, "
                               "TrainJob, JobSet, Job, Deployment and Pod); see `gpupool list`",
                               name, impl_->ns));
  std::map<std::string, std::string> node_ips;
  return build_info(*impl_, *job, node_ips, &prefetched);
}

std::vector<JobInfo> Cluster::list() const {
  std::vector<JobInfo> out;
  std::map<std::string, std::string> node_ips;
  ListOptions lo;
  lo.label_selector = fmt::format("{}=gpupool,{}!=tensorboard", kManagedByLabel, kComponentLabel);
  for (WorkloadKind kind : kAllKinds) {
    const auto served = served_resource(*impl_, kind);
    if (!served) continue;
    const ResourceRef& ref = *served;
    json::array items;
    try {
      items = impl_->client->list_all(ref, impl_->ns, lo);
    } catch (const ApiError& e) {
      if (!kind_gone(*impl_, kind, e)) throw;
    }
    for (const auto& item : items) {
      const auto& o = item.as_object();
      // Pods a gpupool workload's controller created carry the labels too; only bare Pods count.
      if (kind == WorkloadKind::Pod && obj_at(o, {"metadata"}) && arr_at(o, {"metadata", "ownerReferences"})) continue;
      out.push_back(build_info(*impl_, JobLookup{kind, ref, o}, node_ips));
    }
  }
  std::sort(out.begin(), out.end(), [](const JobInfo& a, const JobInfo& b) { return a.name < b.name; });
  return out;
}

namespace {

/// Whether a SelfSubjectRulesReview's resourceRules allow `verb` on group/resource
/// (authorization/v1 ResourceRule: "*" matches every verb, group and resource).
bool rules_allow(const json::object& review, const std::string& verb, const std::string& group,
                 const std::string& resource) {
  const auto* rules = arr_at(review, {"status", "resourceRules"});
  if (!rules) return false;
  auto has = [](const json::object& rule, const char* key, const std::string& want) {
    const auto* values = rule.if_contains(key);
    if (!values || !values->is_array()) return false;
    for (const auto& v : values->as_array())
      if (v.is_string() && (v.as_string() == "*" || v.as_string() == want)) return true;
    return false;
  };
  for (const auto& r : *rules)
    if (r.is_object() && has(r.as_object(), "verbs", verb) && has(r.as_object(), "apiGroups", group) &&
        has(r.as_object(), "resources", resource))
      return true;
  return false;
}

const ResourceRef kNamespaces{"", "v1", "namespaces", "Namespace", false};
const ResourceRef kRulesReviews{"authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview",
                                false};

}  // namespace

std::vector<JobInfo> Cluster::list_all_namespaces() const {
  std::vector<JobInfo> out;
  std::map<std::string, std::string> node_ips;
  ListOptions lo;
  lo.label_selector = fmt::format("{}=gpupool,{}!=tensorboard", kManagedByLabel, kComponentLabel);
  // Filled on the first kind the user may not list cluster-wide: the namespaces it may see, and
  // per namespace what its rules allow (nullopt: the review failed; then the list is tried).
  std::optional<std::vector<std::string>> namespaces;
  std::map<std::string, std::optional<json::object>> reviews;
  auto visible_namespaces = [&]() -> const std::vector<std::string>& {
    if (namespaces) return *namespaces;
    namespaces.emplace();
    try {
      for (const auto& n : impl_->client->list_all(kNamespaces, ""))
        namespaces->push_back(str_at(n.as_object(), {"metadata", "name"}));
    } catch (const ApiError& e) {
      if (e.code() != 403) throw;
      namespaces->push_back(impl_->ns);  // may not list namespaces: its own is the one it knows
    }
    return *namespaces;
  };
  auto may_list = [&](const std::string& ns, const ResourceRef& ref) {
    auto it = reviews.find(ns);
    if (it == reviews.end()) {
      std::optional<json::object> review;
      try {
        review = impl_->client->create(kRulesReviews, "",
                                       json::object{{"apiVersion", "authorization.k8s.io/v1"},
                                                    {"kind", "SelfSubjectRulesReview"},
                                                    {"spec", json::object{{"namespace", ns}}}});
      } catch (const ApiError&) {
        // No review (an old server, or not allowed): try the list itself below.
      }
      it = reviews.emplace(ns, std::move(review)).first;
    }
    return !it->second || rules_allow(*it->second, "list", ref.group, ref.resource);
  };
  for (WorkloadKind kind : kAllKinds) {
    const auto served = served_resource(*impl_, kind);
    if (!served) continue;
    const ResourceRef& ref = *served;
    json::array items;
    try {
      ListOptions all = lo;
      all.all_namespaces = true;
      items = impl_->client->list_all(ref, "", all);
    } catch (const ApiError& e) {
      if (kind_gone(*impl_, kind, e)) continue;
      if (e.code() != 403) throw;
      for (const auto& ns : visible_namespaces()) {
        if (!may_list(ns, ref)) continue;
        try {
          for (auto& item : impl_->client->list_all(ref, ns, lo)) items.push_back(std::move(item));
        } catch (const ApiError& denied) {
          if (denied.code() != 403) throw;
        }
      }
    }
    for (const auto& item : items) {
      const auto& o = item.as_object();
      if (kind == WorkloadKind::Pod && obj_at(o, {"metadata"}) && arr_at(o, {"metadata", "ownerReferences"})) continue;
      out.push_back(build_info(*impl_, JobLookup{kind, ref, o}, node_ips));
    }
  }
  std::sort(out.begin(), out.end(), [](const JobInfo& a, const JobInfo& b) {
    return std::tie(a.namespace_, a.name) < std::tie(b.namespace_, b.name);
  });
  return out;
}

std::vector<JobInfo> Cluster::top_jobs() const { return list(); }

std::string Cluster::delete_job(const std::string& name) {
  const auto found = find_workloads(*impl_, name, true);
  if (found.empty()) throw ApiError(404, "NotFound", fmt::format("no job \"{}\" in namespace \"{}\"", name, impl_->ns));
  // Made by other tools, one name may hold several kinds: deleting one of them at a guess is not
  // what the user asked.
  if (found.size() > 1)
    throw Error(
        fmt::format("\"{}\" names {} workloads in namespace \"{}\": {}; delete the one you mean with kubectl "
                    "delete KIND/{}",
                    name, found.size(), impl_->ns, kinds_list(found, name), name));
  const JobLookup* job = &found.front();
  DeleteOptions d;
  d.propagation = PropagationPolicy::background;
  impl_->client->remove(job->ref, impl_->ns, name, d);
  // The TensorBoard gpupool created with the job goes with it, and the ConfigMaps created with it
  // (component "config": --config-file's files, a function job's program).
  ListOptions lo;
  lo.label_selector = fmt::format("{}={},{} in (tensorboard,config)", kJobNameLabel, name, kComponentLabel);
  static const ResourceRef kConfigMaps{"", "v1", "configmaps", "ConfigMap"};
  for (const ResourceRef* ref : {&kDeployments, &kServices, &kConfigMaps})
    for (const auto& item : impl_->client->list_all(*ref, impl_->ns, lo)) {
      try {
        impl_->client->remove(*ref, impl_->ns, str_at(item.as_object(), {"metadata", "name"}), d);
      } catch (const ApiError& e) {
        if (e.code() != 404) throw;
      }
    }
  return kubectl_name(job->ref.kind, job->ref.group, name);
}

namespace detail {

void refuse_taken_name(const detail::ClusterImpl& impl, const std::string& name, std::vector<Client::Read> also,
                       std::vector<Client::ReadResult>* also_found) {
  const auto found = find_workloads(impl, name, false, std::move(also), also_found);
  if (!found.empty())
    throw ApiError(409, "AlreadyExists",
                   fmt::format("a job named \"{}\" already exists in namespace \"{}\" ({}); delete it first (gpupool "
                               "delete {}) or choose another --name",
                               name, impl.ns, kinds_list(found, name), name));
}

}  // namespace detail

void detail::check_instance_of(const JobInfo& info, const std::string& pod) {
  // -i POD: one of this job's own pods only.
  std::string names;
  bool mine = false;
  for (const auto& i : info.instances) {
    mine = mine || i.name == pod;
    names += (names.empty() ? "" : ", ") + i.name;
  }
  if (!mine)
    throw Error(fmt::format("pod \"{}\" is not an instance of job \"{}\"; its instances: {}", pod, info.name,
                            names.empty() ? "none yet" : names));
}

void Cluster::logs(const std::string& name, const JobLogOptions& options,
                   const std::function<bool(const std::string& line)>& on_line, const CancelToken& cancel) const {
  std::string pod = options.instance;
  {
    CancelScope scope(cancel);  // a slow or failing server does not hold a cancelled call
    JobInfo info;
    try {
      info = get(name);
      if (!pod.empty()) {
        detail::check_instance_of(info, pod);
      } else {
        if (info.instances.empty())
          throw Error(
              fmt::format("job \"{}\" has no pods yet; try again when `gpupool get {}` lists instances", name, name));
        pod = info.instances.front().name;
      }
      const auto started = [&] {
        for (const auto& i : info.instances)
          if (i.name == pod) return i.phase != "Pending";
        return false;
      };
      if (!started()) {
        if (options.follow) {
          // -f: wait for it to start (wait() shows progress on a terminal), then stream.
          wait(name, WaitFor::Running, std::chrono::hours(24), {}, cancel);
        } else {
          // No log yet: say why it has not started, from explain.
          std::string why;
          for (const auto& p : explain(name).pods)
            if (p.pod == pod) {
              if (!p.quota.empty())
                why = p.quota;
              else if (!p.events.empty())
                why = p.events.back();
            }
          throw Error(fmt::format("job \"{}\" is PENDING: pod \"{}\" has not started, so it has no log yet{}{}", name,
                                  pod, why.empty() ? "" : ": ", why));
        }
      }
    } catch (const CancelledError&) {
      return;  // as when the stream is cancelled: the caller asked to stop
    }
  }
  LogOptions lo;
  lo.container = options.container;
  lo.follow = options.follow;
  lo.tail_lines = options.tail_lines;
  impl_->client->logs(
      impl_->ns, pod, lo, [&](std::string_view line) { return on_line(std::string(line)); }, cancel);
}

WaitFor parse_wait_for(std::string_view text, std::string_view field) {
  std::string t = detail::lower(text);
  if (t == "running") return WaitFor::Running;
  if (t == "succeeded" || t == "complete" || t == "completed") return WaitFor::Succeeded;
  if (t == "finished" || t == "done") return WaitFor::Finished;
  throw ValidationError(std::string(field), std::string(text), "expected Running, Succeeded or Finished");
}

JobInfo Cluster::wait(const std::string& name, WaitFor until, std::chrono::milliseconds timeout,
                      const std::function<void(const JobInfo&)>& on_change, const CancelToken& cancelled_by) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Every request of this thread (find_workload, get) observes the caller's token: a request in
  // flight or a retry's back-off ends soon after it fires.
  CancelScope scope(cancelled_by);
  auto cancelled = [&] { return CancelledError(fmt::format("waiting for job \"{}\" was cancelled", name)); };
  std::optional<JobLookup> job;
  try {
    job = find_workload(*impl_, *this, name);
  } catch (const CancelledError&) {
    throw cancelled();
  }
  if (!job) throw ApiError(404, "NotFound", fmt::format("no job \"{}\" in namespace \"{}\"", name, impl_->ns));
  // A Deployment runs until deleted: waiting for it to succeed or finish
  // could only time out.
  if ((job->kind == WorkloadKind::Deployment) && until != WaitFor::Running)
    throw Error(
        fmt::format("deployment \"{}\" never succeeds or finishes: a Deployment runs until it is deleted; "
                    "wait for Running instead",
                    name));

  // Two watches — the workload object (its status) and its pods (phases, nodes) — only signal;
  // this thread re-reads the job on every signal. Nothing polls.
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t generation = 1;
  std::exception_ptr watch_error;
  CancelToken cancel;
  auto signal = [&] {
    std::lock_guard lock(m);
    ++generation;
    cv.notify_all();
  };
  auto watcher = [&](ResourceRef ref, WatchOptions wo) {
    try {
      impl_->client->watch(
          ref, impl_->ns, wo,
          [&](const WatchEvent&) {
            signal();
            return !cancel.cancelled();
          },
          cancel);
    } catch (...) {
      std::lock_guard lock(m);
      if (!cancel.cancelled()) watch_error = std::current_exception();
      cv.notify_all();
    }
  };
  WatchOptions on_object;
  on_object.field_selector = "metadata.name=" + name;
  on_object.resource_version = str_at(job->object, {"metadata", "resourceVersion"});
  WatchOptions on_pods;
  on_pods.label_selector = fmt::format("{}={}", kJobNameLabel, name);
  std::thread t1(watcher, job->ref, on_object);
  std::thread t2(watcher, kPods, on_pods);
  auto stop = [&] {
    cancel.cancel();
    t1.join();
    t2.join();
  };

  std::uint64_t seen = 0;
  std::optional<JobInfo> last;
  try {
    for (;;) {
      {
        std::unique_lock lock(m);
        // The caller's token has no way to wake us: look at it every 50 ms.
        bool woken = false;
        for (;;) {
          if (cancelled_by.cancelled()) throw cancelled();
          const auto slice = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
          woken = cv.wait_until(lock, slice, [&] { return generation != seen || watch_error; });
          if (woken || std::chrono::steady_clock::now() >= deadline) break;
        }
        if (!woken)
          throw Error(fmt::format("timed out after {} waiting for job \"{}\" to be {} (it is {})",
                                  human_duration(timeout), name,
                                  until == WaitFor::Running     ? "Running"
                                  : until == WaitFor::Succeeded ? "Succeeded"
                                                                : "finished",
                                  last ? to_string(last->status) : "unknown"));
        if (watch_error) std::rethrow_exception(watch_error);
        seen = generation;
      }
      JobInfo info;
      try {
        info = get(name);
      } catch (const CancelledError&) {
        throw cancelled();
      }
      bool changed = !last || last->status != info.status || last->instances.size() != info.instances.size();
      if (changed && on_change) on_change(info);
      last = info;
      bool finished = info.status == JobStatus::Succeeded || info.status == JobStatus::Failed;
      bool done =
          (until == WaitFor::Running && (info.status == JobStatus::Running || info.status == JobStatus::Succeeded)) ||
          (until == WaitFor::Succeeded && info.status == JobStatus::Succeeded) ||
          (until == WaitFor::Finished && finished);
      if (done) {
        stop();
        return info;
      }
      if (info.status == JobStatus::Failed)
        throw Error(fmt::format("job \"{}\" failed; see `gpupool logs {}` and `gpupool explain {}`", name, name, name));
    }
  } catch (...) {
    stop();
    throw;
  }
}

}  // namespace gpupool
