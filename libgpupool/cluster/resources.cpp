#include "cluster/resources.hpp"

#include "common/json_path.hpp"
#include "gpupool/error.hpp"
#include "gpupool/node.hpp"
#include "model/json_fields.hpp"
#include "model/kube_protobuf.hpp"

#include <fmt/format.h>

#include <array>
#include <optional>
#include <string_view>

namespace gpupool::detail {

const ResourceRef kPods{"", "v1", "pods", "Pod"};
const ResourceRef kNodes{"", "v1", "nodes", "Node", false};
const ResourceRef kPvcs{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"};
const ResourceRef kServices{"", "v1", "services", "Service"};
const ResourceRef kQuotas{"", "v1", "resourcequotas", "ResourceQuota"};
const ResourceRef kEvents{"", "v1", "events", "Event"};
const ResourceRef kDeployments{"apps", "v1", "deployments", "Deployment"};
const ResourceRef kReplicaSets{"apps", "v1", "replicasets", "ReplicaSet"};
const ResourceRef kJobs{"batch", "v1", "jobs", "Job"};
const ResourceRef kTfJobs{"kubeflow.org", "v1", "tfjobs", "TFJob"};
const ResourceRef kPyTorchJobs{"kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"};
const ResourceRef kMpiJobsV1{"kubeflow.org", "v1", "mpijobs", "MPIJob"};
const ResourceRef kMpiJobsV2{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob"};
const ResourceRef kTrainJobs{"trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob"};
const ResourceRef kJobSets{"jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"};

std::optional<ResourceRef> known_resource(std::string_view api_version, std::string_view kind) {
  static const std::array<const ResourceRef*, 14> all{
      &kPods, &kNodes,  &kPvcs,        &kServices,  &kQuotas,    &kEvents,    &kDeployments,
      &kJobs, &kTfJobs, &kPyTorchJobs, &kMpiJobsV1, &kMpiJobsV2, &kTrainJobs, &kJobSets};
  for (const auto* r : all)
    if (r->kind == kind && r->api_version() == api_version) return *r;
  return std::nullopt;
}

ResourceRef resource_of(const Client& client, const boost::json::object& object) {
  std::string api_version = str_at(object, {"apiVersion"});
  std::string kind = str_at(object, {"kind"});
  if (auto r = known_resource(api_version, kind)) return *r;
  auto slash = api_version.find('/');
  std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  if (auto r = client.find_resource(group, kind)) return *r;
  throw ValidationError("kind", kind, fmt::format("the cluster serves no {} in API group \"{}\"", kind, group));
}

ResourceRef workload_resource(WorkloadKind kind, MpiJobApi mpi) {
  switch (kind) {
    case WorkloadKind::Pod:
      return kPods;
    case WorkloadKind::Deployment:
      return kDeployments;
    case WorkloadKind::Job:
      return kJobs;
    case WorkloadKind::MPIJob:
      return mpi == MpiJobApi::V2Beta1 ? kMpiJobsV2 : kMpiJobsV1;
    case WorkloadKind::TFJob:
      return kTfJobs;
    case WorkloadKind::PyTorchJob:
      return kPyTorchJobs;
    case WorkloadKind::TrainJob:
      return kTrainJobs;
    case WorkloadKind::JobSet:
      return kJobSets;
  }
  return kJobs;
}

const boost::json::object* obj_at(const boost::json::object& o, std::initializer_list<std::string_view> path) {
  return jpath::object_at(o, path);
}

namespace {
using jpath::value_at;
}  // namespace

std::string str_at(const boost::json::object& o, std::initializer_list<std::string_view> path) {
  const auto* v = value_at(o, path);
  if (!v) return {};
  if (v->is_string()) return std::string(v->get_string());
  if (v->is_int64()) return std::to_string(v->get_int64());
  if (v->is_uint64()) return std::to_string(v->get_uint64());
  if (v->is_bool()) return v->get_bool() ? "true" : "false";
  return {};
}

const boost::json::object* status_condition(const boost::json::object& o, std::string_view type) {
  if (const boost::json::array* cs = arr_at(o, {"status", "conditions"}))
    for (const auto& c : *cs)
      if (c.is_object() && str_at(c.as_object(), {"type"}) == type) return &c.as_object();
  return nullptr;
}

bool condition_true(const boost::json::object& o, std::string_view type) {
  const boost::json::object* c = status_condition(o, type);
  return c && str_at(*c, {"status"}) == "True";
}

std::optional<std::int64_t> int_at(const boost::json::object& o, std::initializer_list<std::string_view> path) {
  const auto* v = value_at(o, path);
  if (v && v->is_int64()) return v->get_int64();
  if (v && v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(v->get_uint64());
  return std::nullopt;
}

const boost::json::array* arr_at(const boost::json::object& o, std::initializer_list<std::string_view> path) {
  return jpath::array_at(o, path);
}

std::optional<std::chrono::system_clock::time_point> time_at(const boost::json::object& o,
                                                             std::initializer_list<std::string_view> path) {
  std::string text = str_at(o, path);
  if (text.empty()) return std::nullopt;
  return parse_rfc3339(text, "timestamp");
}

namespace {

std::int64_t count_or(const boost::json::object& o, const char* key, std::int64_t fallback) {
  const auto* v = o.if_contains(key);
  return v && v->is_int64()    ? v->as_int64()
         : v && v->is_uint64() ? static_cast<std::int64_t>(v->as_uint64())
                               : fallback;
}

/// `replica`: the key `o` has in a "...ReplicaSpecs" map, else "".
void collect_templates(const boost::json::object& o, const std::string& path, const std::string& replica,
                       std::vector<PodTemplateAt>& out) {
  for (const auto& [key, value] : o) {
    // A JobSet's replicatedJobs are a list (a TrainJob's runtimePatches hold no whole pod template).
    if (value.is_array() && key != "runtimePatches") {
      for (std::size_t i = 0; i < value.as_array().size(); ++i)
        if (value.as_array()[i].is_object())
          collect_templates(value.as_array()[i].as_object(), fmt::format("{}.{}[{}]", path, std::string(key), i),
                            replica, out);
      continue;
    }
    if (!value.is_object()) continue;
    const auto& child = value.as_object();
    const std::string at = path + "." + std::string(key);
    if (key == "template") {
      const auto* spec = child.if_contains("spec");
      if (spec && spec->is_object() && spec->as_object().contains("containers")) {
        out.push_back({&child, at + ".spec",
                       std::max<std::int64_t>(0, count_or(o, "replicas", count_or(o, "parallelism", 1))), replica});
        continue;
      }
    }
    if (key.ends_with("ReplicaSpecs"))
      for (const auto& [type, spec] : child) {
        if (spec.is_object()) collect_templates(spec.as_object(), at + "." + std::string(type), std::string(type), out);
      }
    else
      collect_templates(child, at, "", out);
  }
}

}  // namespace

std::vector<PodTemplateAt> pod_templates(const boost::json::object& object) {
  std::vector<PodTemplateAt> out;
  if (str_at(object, {"kind"}) == "Pod")
    out.push_back({&object, "spec", 1, ""});
  else if (const auto* spec = obj_at(object, {"spec"}))
    collect_templates(*spec, "spec", "", out);
  return out;
}

namespace {

/// A list streamed by Client::list_stream, decoded as it arrives by the reader of its encoding
/// (Kubernetes' protobuf, known by its magic "k8s\0", or JSON): each item goes to `on_object`
/// (protobuf, the model's fields only) or `on_json` as soon as it is complete, so what is held is
/// an item and a piece of the body.
class StreamedList {
 public:
  StreamedList(std::string what, std::function<void(boost::json::object&&)> on_object,
               std::function<void(const boost::json::value&)> on_json)
      : what_(std::move(what)), on_object_(std::move(on_object)), on_json_(std::move(on_json)) {}

  bool feed(std::string_view piece) {
    if (!protobuf_ && !json_) {
      head_.append(piece);
      if (protobuf::is_magic_prefix(head_)) return true;  // not known yet
      start(protobuf::is_kubernetes_protobuf(head_));
      piece = head_;
    }
    readable([&] {
      if (protobuf_)
        protobuf_->feed(piece);
      else
        json_->feed(piece);
    });
    head_.clear();
    return true;
  }
  void finish() {
    if (!protobuf_ && !json_) {
      start(protobuf::is_kubernetes_protobuf(head_));
      feed(head_);
    }
    readable([&] {
      if (protobuf_)
        protobuf_->finish();
      else
        json_->finish();
    });
  }

 private:
  void start(bool is_protobuf) {
    if (is_protobuf)
      protobuf_.emplace(on_object_, protobuf::ItemFields::model);
    else
      json_.emplace([this](const boost::json::value& item, std::size_t) { on_json_(item); });
  }
  // A protobuf list that cannot be read is the server's fault, as for_each_page has it.
  template <class F>
  void readable(F&& f) {
    try {
      f();
    } catch (const protobuf::DecodeError& e) {
      throw TransportError(fmt::format("GET {}: the server's protobuf list could not be read: {}", what_, e.what()));
    }
  }

  std::string what_;
  std::function<void(boost::json::object&&)> on_object_;
  std::function<void(const boost::json::value&)> on_json_;
  std::optional<protobuf::ItemReader> protobuf_;
  std::optional<json_fields::ListItemReader> json_;
  std::string head_;  // the first bytes, until they tell the encoding
};

}  // namespace

void for_each_node(const Client& client, const std::function<void(Node&&)>& fn) {
  ListOptions lo;
  lo.resource_version = "0";
  lo.protobuf = true;
  StreamedList list(
      "/api/v1/nodes", [&](boost::json::object&& n) { fn(Node::from_json(n)); },  // read in place, in the item's arena
      [&](const boost::json::value& n) { fn(Node::from_json(n)); });
  client.list_stream(kNodes, "", lo, [&](std::string_view piece) { return list.feed(piece); });
  list.finish();
}

bool for_each_active_pod(const Client& client, const std::string& own_ns,
                         const std::function<void(PodRequirements&&)>& fn) {
  ListOptions lo;
  lo.field_selector = std::string(kActivePodsSelector);
  lo.resource_version = "0";
  lo.protobuf = true;
  const auto list_in = [&](const std::string& ns) {
    StreamedList list(
        "/api/v1/pods", [&](boost::json::object&& p) { fn(PodRequirements::from_pod_json(p)); },
        [&](const boost::json::value& p) { fn(PodRequirements::from_pod_json(p)); });
    client.list_stream(kPods, ns, lo, [&](std::string_view piece) { return list.feed(piece); });
    list.finish();
  };
  lo.all_namespaces = true;
  try {
    list_in("");
    return true;
  } catch (const ApiError& e) {
    // One request: an ApiError is its answer, before any pod reached `fn` (list_stream hands a
    // non-2xx body to no sink), so falling back to the own namespace never counts a pod twice.
    if (e.code() != 403) throw;
  }
  lo.all_namespaces = false;
  list_in(own_ns);
  return false;
}

}  // namespace gpupool::detail
