// Kueue queues (gpupool/queues.hpp): Cluster::queues() for `gpupool queues`, where a queued job
// stands for `get` (its Workload's conditions), what the ClusterQueue lacks for `explain`, and
// --gang (a queue required, Kueue admitting all of a job's pods at once).
#include "cluster/queues.hpp"

#include "cluster/impl.hpp"
#include "cluster/text.hpp"

#include "gpupool/error.hpp"
#include "gpupool/queues.hpp"
#include "gpupool/scheduling.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <map>

namespace gpupool {

namespace json = boost::json;
using namespace detail;

namespace {

const ResourceRef kClusterQueues{"kueue.x-k8s.io", "v1beta1", "clusterqueues", "ClusterQueue", false};
const ResourceRef kLocalQueues{"kueue.x-k8s.io", "v1beta1", "localqueues", "LocalQueue", true};
const ResourceRef kWorkloads{"kueue.x-k8s.io", "v1beta1", "workloads", "Workload", true};

std::string quantity_text(const json::value* v) {
  if (!v) return "0";
  return v->is_string() ? std::string(v->as_string()) : json::serialize(*v);
}

bool is_gpu(const std::string& resource, const std::string& gpu_resource) {
  return resource == gpu_resource || resource.find("gpu") != std::string::npos;
}

// The ClusterQueue's rows: (flavor, resource, nominal, used), GPU resources first.
std::vector<FlavorQuota> quotas_of(const json::object& cq, const std::string& gpu_resource) {
  std::vector<FlavorQuota> out;
  std::map<std::pair<std::string, std::string>, std::string> used;
  if (const json::array* fr = arr_at(cq, {"status", "flavorsReservation"}))
    for (const auto& f : *fr)
      if (const json::array* rs = f.is_object() ? arr_at(f.as_object(), {"resources"}) : nullptr)
        for (const auto& r : *rs)
          if (r.is_object())
            used[{str_at(f.as_object(), {"name"}), str_at(r.as_object(), {"name"})}] =
                quantity_text(r.as_object().if_contains("total"));
  if (const json::array* groups = arr_at(cq, {"spec", "resourceGroups"}))
    for (const auto& g : *groups)
      if (const json::array* fs = g.is_object() ? arr_at(g.as_object(), {"flavors"}) : nullptr)
        for (const auto& f : *fs)
          if (const json::array* rs = f.is_object() ? arr_at(f.as_object(), {"resources"}) : nullptr)
            for (const auto& r : *rs) {
              if (!r.is_object()) continue;
              FlavorQuota q;
              q.flavor = str_at(f.as_object(), {"name"});
              q.resource = str_at(r.as_object(), {"name"});
              q.nominal = quantity_text(r.as_object().if_contains("nominalQuota"));
              auto u = used.find({q.flavor, q.resource});
              q.used = u == used.end() ? "0" : u->second;
              out.push_back(std::move(q));
            }
  std::stable_sort(out.begin(), out.end(), [&](const FlavorQuota& a, const FlavorQuota& b) {
    return is_gpu(a.resource, gpu_resource) && !is_gpu(b.resource, gpu_resource);
  });
  return out;
}

std::int64_t count_of(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::object* parent = &o;
  const json::value* v = nullptr;
  for (auto it = path.begin(); it != path.end(); ++it) {
    v = parent->if_contains(*it);
    if (!v) return 0;
    if (it + 1 != path.end()) {
      if (!v->is_object()) return 0;
      parent = &v->as_object();
    }
  }
  return v && v->is_int64() ? v->as_int64() : 0;
}

}  // namespace

bool detail::serves_kueue(const ClusterImpl& impl) { return impl.serves(kLocalQueues); }

QueuesReport Cluster::queues() const {
  if (!serves_kueue(*impl_))
    throw Error("the cluster serves no Kueue (kueue.x-k8s.io/v1beta1 LocalQueue): install Kueue to queue jobs");
  QueuesReport out;
  for (const auto& item : impl_->client->list_all(kLocalQueues, impl_->ns)) {
    const auto& o = item.as_object();
    out.local_queues.push_back({str_at(o, {"metadata", "namespace"}), str_at(o, {"metadata", "name"}),
                                str_at(o, {"spec", "clusterQueue"}), count_of(o, {"status", "pendingWorkloads"}),
                                count_of(o, {"status", "admittedWorkloads"})});
  }
  try {
    for (const auto& item : impl_->client->list_all(kClusterQueues, "")) {
      const auto& o = item.as_object();
      ClusterQueueInfo c;
      c.name = str_at(o, {"metadata", "name"});
      c.cohort = str_at(o, {"spec", "cohort"});
      c.queueing_strategy = str_at(o, {"spec", "queueingStrategy"});
      c.quotas = quotas_of(o, impl_->profile.gpu.resource);
      c.pending = count_of(o, {"status", "pendingWorkloads"});
      c.admitted = count_of(o, {"status", "admittedWorkloads"});
      out.cluster_queues.push_back(std::move(c));
    }
  } catch (const ApiError& e) {
    if (e.code() != 403) throw;  // a user who may not read ClusterQueues still sees its LocalQueues
  }
  return out;
}

std::string QueuesReport::to_text() const {
  std::vector<std::vector<std::string>> lq{{"NAMESPACE", "LOCALQUEUE", "CLUSTERQUEUE", "PENDING", "ADMITTED"}};
  for (const auto& q : local_queues)
    lq.push_back({q.namespace_, q.name, q.cluster_queue, std::to_string(q.pending), std::to_string(q.admitted)});
  std::vector<std::vector<std::string>> cq{
      {"CLUSTERQUEUE", "STRATEGY", "FLAVOR", "RESOURCE", "NOMINAL", "USED", "PENDING", "ADMITTED"}};
  for (const auto& c : cluster_queues) {
    if (c.quotas.empty())
      cq.push_back(
          {c.name, c.queueing_strategy, "-", "-", "-", "-", std::to_string(c.pending), std::to_string(c.admitted)});
    for (std::size_t i = 0; i < c.quotas.size(); ++i) {
      const auto& q = c.quotas[i];
      cq.push_back({i ? "" : c.name, i ? "" : c.queueing_strategy, q.flavor, q.resource, q.nominal, q.used,
                    i ? "" : std::to_string(c.pending), i ? "" : std::to_string(c.admitted)});
    }
  }
  std::string out = local_queues.empty() ? "No LocalQueues in this namespace.\n" : format_table(lq, 3);
  out += "\n";
  out += cluster_queues.empty() ? "No ClusterQueues.\n" : format_table(cq, 3);
  return out;
}

std::string QueueStatus::summary() const {
  if (state == "pending") return fmt::format("pending #{}{}{}", position, reason.empty() ? "" : ": ", reason);
  if (state == "evicted") return "evicted: " + reason;
  if (state.empty()) return "waiting for Kueue to create its Workload";
  return state;
}

std::optional<QueueStatus> detail::queue_status(const ClusterImpl& impl, const json::object& job) {
  const std::string queue = str_at(job, {"metadata", "labels", kQueueNameLabel});
  if (queue.empty() || !serves_kueue(impl)) return std::nullopt;
  QueueStatus s;
  s.queue = queue;
  const std::string uid = str_at(job, {"metadata", "uid"});
  // Kueue labels each Workload with its job's uid (constants.JobUIDLabel); the pending ones of the
  // LocalQueue, in Kueue's order (priority, then creation), give the position.
  const std::string ns = str_at(job, {"metadata", "namespace"});  // list_all_namespaces: not always impl.ns
  const json::array all = impl.client->list_all(kWorkloads, ns.empty() ? impl.ns : ns);
  std::vector<const json::object*> pending;
  const json::object* mine = nullptr;
  for (const auto& w : all) {
    const auto& o = w.as_object();
    const bool done = condition_true(o, "Finished"), admitted = condition_true(o, "QuotaReserved");
    if (str_at(o, {"metadata", "labels", "kueue.x-k8s.io/job-uid"}) == uid) mine = &o;
    if (str_at(o, {"spec", "queueName"}) == queue && !done && !admitted) pending.push_back(&o);
  }
  if (!mine) return s;
  s.workload = str_at(*mine, {"metadata", "name"});
  auto priority = [](const json::object* o) { return count_of(*o, {"spec", "priority"}); };
  std::stable_sort(pending.begin(), pending.end(), [&](const json::object* a, const json::object* b) {
    if (priority(a) != priority(b)) return priority(a) > priority(b);
    return str_at(*a, {"metadata", "creationTimestamp"}) < str_at(*b, {"metadata", "creationTimestamp"});
  });
  if (condition_true(*mine, "Finished")) {
    s.state = "finished";
  } else if (condition_true(*mine, "QuotaReserved")) {
    s.state = "admitted";
  } else {
    s.state = condition_true(*mine, "Evicted") ? "evicted" : "pending";
    for (std::size_t i = 0; i < pending.size(); ++i)
      if (pending[i] == mine) s.position = static_cast<std::int64_t>(i) + 1;
    const json::object* c = status_condition(*mine, condition_true(*mine, "Evicted") ? "Evicted" : "QuotaReserved");
    s.reason = c ? str_at(*c, {"message"}) : "";
    if (s.state == "evicted") s.state = "pending", s.reason = "evicted: " + s.reason;
    if (s.reason.empty()) s.reason = "not yet considered by Kueue (waiting behind the workloads ahead of it)";
  }
  return s;
}

std::vector<std::string> detail::queue_lacks(const ClusterImpl& impl, const std::string& ns,
                                             const QueueStatus& job_queue) {
  std::vector<std::string> out;
  const QueueStatus* status = &job_queue;
  if (status->state != "pending" || status->workload.empty()) return out;
  json::object lq;
  try {
    lq = impl.client->get(kLocalQueues, ns, status->queue);
  } catch (const ApiError& e) {
    if (e.code() != 404) throw;
    out.push_back(
        fmt::format("LocalQueue \"{}\" does not exist in namespace \"{}\": create it or submit with "
                    "another --queue (see `gpupool queues`)",
                    status->queue, ns));
    return out;
  }
  const std::string cq_name = str_at(lq, {"spec", "clusterQueue"});
  json::object cq;
  try {
    cq = impl.client->get(kClusterQueues, "", cq_name);
  } catch (const ApiError& e) {
    if (e.code() != 404 && e.code() != 403) throw;
    out.push_back(fmt::format("ClusterQueue \"{}\" of LocalQueue \"{}\" {}", cq_name, status->queue,
                              e.code() == 404 ? "does not exist" : "is not readable by you"));
    return out;
  }
  // What the job's Workload asks for, per resource, against each flavor's nominal quota and use.
  std::map<std::string, Quantity> asked;
  const json::object wl = impl.client->get(kWorkloads, ns, status->workload);
  if (const json::array* ps = arr_at(wl, {"spec", "podSets"}))
    for (const auto& p : *ps) {
      if (!p.is_object()) continue;
      const std::int64_t count = count_of(p.as_object(), {"count"});
      json::object pod;
      if (const json::object* t = obj_at(p.as_object(), {"template"})) pod = *t;
      for (const auto& [res, per] : PodRequirements::from_pod_json(pod).requests) asked[res] += per * count;
    }
  for (const auto& q : quotas_of(cq, impl.profile.gpu.resource)) {
    auto a = asked.find(q.resource);
    if (a == asked.end() || a->second.is_zero()) continue;
    const Quantity nominal = Quantity::parse(q.nominal), used = Quantity::parse(q.used);
    if (used + a->second <= nominal) continue;
    out.push_back(
        fmt::format("ClusterQueue \"{}\" lacks {} in flavor {}: nominal quota {}, {} in use by admitted "
                    "workloads, the job asks for {}{}",
                    cq_name, q.resource, q.flavor, q.nominal, q.used, a->second.to_string(),
                    a->second > nominal ? " (more than the whole quota: it can never be admitted)" : ""));
  }
  for (const auto& [res, q] : asked) {
    if (q.is_zero()) continue;
    bool covered = false;
    for (const auto& x : quotas_of(cq, impl.profile.gpu.resource)) covered = covered || x.resource == res;
    if (!covered)
      out.push_back(fmt::format("ClusterQueue \"{}\" has no quota for {}: Kueue cannot admit the job", cq_name, res));
  }
  if (out.empty()) out.push_back(fmt::format("queued in ClusterQueue \"{}\": {}", cq_name, status->summary()));
  return out;
}

void detail::require_kueue_for_gang(const ClusterImpl& impl, Workload& workload) {
  if (!serves_kueue(impl))
    throw ValidationError("--gang", "true",
                          "gang scheduling needs Kueue (kueue.x-k8s.io), which this cluster does not serve: install "
                          "Kueue, or submit without --gang");
  if (workload.queue.empty()) workload.queue = impl.profile.default_queue;
  if (workload.queue.empty())
    throw ValidationError("--gang", "true",
                          "gang scheduling goes through a Kueue LocalQueue: give --queue NAME (see `gpupool queues`) "
                          "or set queue: in the profile");
}

}  // namespace gpupool
