// explain(): why a job's pods are pending, or where a workload would fit — the events the
// scheduler recorded plus a local fit check of every node with the model's scheduling rules (the
// same code the embedded scheduler runs).
#include "cluster/impl.hpp"
#include "cluster/queues.hpp"

#include "gpupool/error.hpp"
#include "gpupool/scheduling.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdlib>

namespace gpupool {

namespace json = boost::json;
using namespace detail;

namespace {

/// The cluster's nodes with the pods bound to them accounted (cluster-wide when the user may list
/// every namespace's pods, else its own).
std::vector<NodeInfo> node_infos(const detail::ClusterImpl& impl, PlacementState& state) {
  std::vector<NodeInfo> infos;
  std::map<std::string, size_t> index;
  for_each_node(*impl.client, [&](Node&& node) {
    index[node.name] = infos.size();
    infos.push_back(state.make_node_info(std::move(node)));
  });
  for_each_active_pod(*impl.client, impl.ns, [&](PodRequirements&& pod) {
    if (auto it = index.find(pod.node_name); it != index.end()) state.add_pod(infos[it->second], pod);
  });
  return infos;
}

std::vector<NodeVerdict> verdicts(const PodRequirements& pod, const std::vector<NodeInfo>& nodes,
                                  PlacementState& state) {
  return explain(pod, nodes, state).verdicts;
}

/// The pods a rendered workload object makes, one per template: (replica name, pod object).
std::vector<std::pair<std::string, json::object>> replica_pods(const json::object& workload) {
  std::vector<std::pair<std::string, json::object>> out;
  const std::string name = str_at(workload, {"metadata", "name"});
  for (const auto& t : pod_templates(workload)) {
    if (t.tmpl == &workload) {  // a Pod is its own template
      out.emplace_back(name, workload);
      continue;
    }
    json::object pod;
    if (const auto* m = obj_at(*t.tmpl, {"metadata"})) pod["metadata"] = *m;
    if (const auto* s = obj_at(*t.tmpl, {"spec"})) pod["spec"] = *s;
    out.emplace_back(t.replica.empty() ? name : fmt::format("{}-{}", name, lower(t.replica)), std::move(pod));
  }
  return out;
}

}  // namespace

Explanation Cluster::explain(const std::string& name) const {
  JobInfo info = get(name);
  Explanation out;
  out.name = name;
  PlacementState state;
  std::vector<NodeInfo> nodes = node_infos(*impl_, state);
  json::array events = impl_->client->list_all(kEvents, impl_->ns);
  // Repeated identical warnings (the scheduler retries) are shown once with their count, as
  // kubectl describe shows an aggregated event's count.
  auto warnings_about = [&](const std::string& object) {
    std::vector<std::pair<std::string, int>> seen;
    for (const auto& e : events) {
      const auto& o = e.as_object();
      if (str_at(o, {"involvedObject", "name"}) != object || str_at(o, {"type"}) != "Warning") continue;
      std::string msg = fmt::format("{}: {}", str_at(o, {"reason"}), str_at(o, {"message"}));
      std::string count = str_at(o, {"count"});
      int n = count.empty() ? 1 : std::max(1, std::atoi(count.c_str()));
      auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == msg; });
      if (it == seen.end())
        seen.emplace_back(std::move(msg), n);
      else
        it->second += n;
    }
    std::vector<std::string> msgs;
    msgs.reserve(seen.size());
    for (auto& [msg, n] : seen) msgs.push_back(n > 1 ? fmt::format("{} (x{})", msg, n) : std::move(msg));
    return msgs;
  };
  // Admission refusals are recorded on the controller that could not create the pod (FailedCreate
  // "Error creating: pods ... is forbidden: ..."): a quota's is shown with each pod; every refusal,
  // a missing scheduler or operator come from get() as notes.
  std::string quota;
  for (const auto& e : events) {
    const auto& o = e.as_object();
    std::string msg = str_at(o, {"message"});
    if (str_at(o, {"involvedObject", "name"}).rfind(name, 0) != 0) continue;
    if (msg.find("exceeded quota") != std::string::npos || msg.find("failed quota") != std::string::npos) quota = msg;
  }
  for (const auto& n : info.notes)
    if (quota.empty() || n.find(quota) == std::string::npos) out.notes.push_back(n);
  if (info.queue)  // Kueue: what the job's ClusterQueue lacks (cluster/queues.cpp)
    for (auto& l : queue_lacks(*impl_, info.namespace_, *info.queue)) out.notes.push_back(std::move(l));
  for (const auto& inst : info.instances) {
    PodExplanation p;
    p.pod = inst.name;
    p.phase = inst.phase;
    p.node = inst.node;
    p.events = warnings_about(inst.name);
    json::object pod = impl_->client->get(kPods, impl_->ns, inst.name);
    PodRequirements req = PodRequirements::from_pod_json(pod);
    if (!inst.node.empty()) {
      // Already bound: its own requests are counted on its node; explain the others as they are.
      req.node_name.clear();
    }
    p.nodes = verdicts(req, nodes, state);
    p.quota = quota;
    out.pods.push_back(std::move(p));
  }
  if (info.instances.empty() && !quota.empty()) {
    PodExplanation p;
    p.pod = name;
    p.phase = "no pods created";
    p.quota = quota;
    out.pods.push_back(std::move(p));
  }
  return out;
}

Explanation Cluster::explain(const Workload& workload) const {
  Submission s = render(workload, workload.kind == WorkloadKind::MPIJob);
  Explanation out;
  out.name = workload.name;
  PlacementState state;
  std::vector<NodeInfo> nodes = node_infos(*impl_, state);
  for (const auto& [replica, pod] : replica_pods(s.workload())) {
    PodExplanation p;
    p.pod = replica;
    p.nodes = verdicts(PodRequirements::from_pod_json(pod), nodes, state);
    out.pods.push_back(std::move(p));
  }
  return out;
}

}  // namespace gpupool
