// Node: core/v1 Node <-> value type, and kubectl's node columns.
// Sources: kubectl printNode/findNodeRoles/getNodeInternalIP (pkg/printers/internalversion/printers.go),
// translateTimestampSince (with human_duration of gpupool/time.hpp).
#include "gpupool/node.hpp"

#include <algorithm>
#include <set>

#include <boost/json.hpp>

#include "common/join.hpp"
#include "gpupool/error.hpp"
#include "model/json_fields.hpp"

namespace gpupool {
namespace json = boost::json;

namespace {
using namespace json_fields;

json::object string_object(const std::map<std::string, std::string>& m) {
  json::object o;
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

json::object quantity_object(const std::map<std::string, Quantity>& m) {
  json::object o;
  for (const auto& [k, v] : m) o[k] = v.to_string();
  return o;
}

}  // namespace

std::vector<Node> Node::list_from_json(std::string_view node_list_json) {
  std::vector<Node> out;
  for_each_in_list(node_list_json, [&](Node&& n) { out.push_back(std::move(n)); });
  return out;
}

void Node::for_each_in_list(std::string_view node_list_json, const std::function<void(Node&&)>& fn) {
  json_fields::for_each_list_item(node_list_json, [&](const json::value& item, std::size_t) { fn(from_json(item)); });
}

Node Node::from_json(const json::value& value) {
  if (!value.is_object()) wrong_type("node", value, "a Node object");
  return from_json(value.get_object());
}

Node Node::from_json(const json::object& root) {
  Node n;
  static const std::string kMeta = "metadata", kSpec = "spec", kStatus = "status";
  const json::object* meta = object_at(root, "metadata", kMeta);
  if (!meta) throw ValidationError("metadata.name", "", "required: a Node needs metadata.name");
  n.name = string_at(*meta, "name", "metadata.name");
  if (n.name.empty()) throw ValidationError("metadata.name", "", "required: a Node needs metadata.name");
  n.labels = string_map(object_at(*meta, "labels", "metadata.labels"), "metadata.labels");
  n.annotations = string_map(object_at(*meta, "annotations", "metadata.annotations"), "metadata.annotations");
  if (std::string ts = string_at(*meta, "creationTimestamp", "metadata.creationTimestamp"); !ts.empty())
    n.created = parse_rfc3339(ts, "metadata.creationTimestamp");

  if (const json::object* spec = object_at(root, "spec", kSpec)) {
    if (const json::value* u = spec->if_contains("unschedulable"); u && !u->is_null()) {
      if (!u->is_bool()) wrong_type("spec.unschedulable", *u, "true or false");
      n.unschedulable = u->get_bool();
    }
    if (const json::array* taints = array_at(*spec, "taints", "spec.taints")) {
      for (std::size_t i = 0; i < taints->size(); ++i) {
        std::string f = "spec.taints[" + std::to_string(i) + "]";
        const json::value& tv = (*taints)[i];
        if (!tv.is_object()) wrong_type(f, tv, "an object");
        const json::object& t = tv.get_object();
        Taint taint;
        taint.key = string_at(t, "key", f + ".key");
        taint.value = string_at(t, "value", f + ".value");
        taint.effect = parse_taint_effect(string_at(t, "effect", f + ".effect"), f + ".effect");
        n.taints.push_back(std::move(taint));
      }
    }
  }

  if (const json::object* status = object_at(root, "status", kStatus)) {
    n.capacity = quantity_map(object_at(*status, "capacity", "status.capacity"), "status.capacity");
    n.allocatable = quantity_map(object_at(*status, "allocatable", "status.allocatable"), "status.allocatable");
    if (const json::array* addrs = array_at(*status, "addresses", "status.addresses")) {
      for (std::size_t i = 0; i < addrs->size(); ++i) {
        std::string f = "status.addresses[" + std::to_string(i) + "]";
        if (!(*addrs)[i].is_object()) wrong_type(f, (*addrs)[i], "an object");
        const json::object& a = (*addrs)[i].get_object();
        n.addresses.push_back({string_at(a, "type", f + ".type"), string_at(a, "address", f + ".address")});
      }
    }
    if (const json::array* conds = array_at(*status, "conditions", "status.conditions")) {
      for (std::size_t i = 0; i < conds->size(); ++i) {
        std::string f = "status.conditions[" + std::to_string(i) + "]";
        if (!(*conds)[i].is_object()) wrong_type(f, (*conds)[i], "an object");
        const json::object& c = (*conds)[i].get_object();
        if (string_at(c, "type", f + ".type") == "Ready") n.ready_status = string_at(c, "status", f + ".status");
      }
    }
    if (const json::object* info = object_at(*status, "nodeInfo", "status.nodeInfo")) {
      n.kubelet_version = string_at(*info, "kubeletVersion", "status.nodeInfo.kubeletVersion");
      n.os_image = string_at(*info, "osImage", "status.nodeInfo.osImage");
      n.kernel_version = string_at(*info, "kernelVersion", "status.nodeInfo.kernelVersion");
      n.container_runtime_version =
          string_at(*info, "containerRuntimeVersion", "status.nodeInfo.containerRuntimeVersion");
    }
  }
  return n;
}

json::object Node::to_json() const {
  json::object meta;
  meta["name"] = name;
  if (!labels.empty()) meta["labels"] = string_object(labels);
  if (!annotations.empty()) meta["annotations"] = string_object(annotations);
  if (created) meta["creationTimestamp"] = format_rfc3339(*created);

  json::object spec;
  if (unschedulable) spec["unschedulable"] = true;
  if (!taints.empty()) {
    json::array ts;
    for (const auto& t : taints) {
      json::object o;
      o["key"] = t.key;
      if (!t.value.empty()) o["value"] = t.value;
      o["effect"] = std::string(to_string(t.effect));
      ts.push_back(std::move(o));
    }
    spec["taints"] = std::move(ts);
  }

  json::object status;
  if (!capacity.empty()) status["capacity"] = quantity_object(capacity);
  if (!allocatable.empty()) status["allocatable"] = quantity_object(allocatable);
  if (!ready_status.empty()) {
    json::object ready;
    ready["type"] = "Ready";
    ready["status"] = ready_status;
    ready["reason"] = ready_status == "True" ? "KubeletReady" : "KubeletNotReady";
    status["conditions"] = json::array{std::move(ready)};
  }
  if (!addresses.empty()) {
    json::array as;
    for (const auto& a : addresses) as.push_back(json::object{{"type", a.type}, {"address", a.address}});
    status["addresses"] = std::move(as);
  }
  json::object info;
  if (!kubelet_version.empty()) info["kubeletVersion"] = kubelet_version;
  if (!os_image.empty()) info["osImage"] = os_image;
  if (!kernel_version.empty()) info["kernelVersion"] = kernel_version;
  if (!container_runtime_version.empty()) info["containerRuntimeVersion"] = container_runtime_version;
  if (!info.empty()) status["nodeInfo"] = std::move(info);

  json::object node;
  node["apiVersion"] = "v1";
  node["kind"] = "Node";
  node["metadata"] = std::move(meta);
  node["spec"] = std::move(spec);
  node["status"] = std::move(status);
  return node;
}

// getNodeInternalIP (kubectl prints "<none>" where this returns "").
std::string Node::internal_ip() const {
  for (const auto& a : addresses)
    if (a.type == "InternalIP") return a.address;
  return {};
}

// getNodeExternalIP
std::string Node::external_ip() const {
  for (const auto& a : addresses)
    if (a.type == "ExternalIP") return a.address;
  return {};
}

// findNodeRoles: "a node-role.kubernetes.io/<role>="" label" or "a kubernetes.io/role="<role>" label".
std::vector<std::string> node_roles(const std::map<std::string, std::string>& labels) {
  static constexpr std::string_view kPrefix = "node-role.kubernetes.io/";
  std::set<std::string> roles;
  for (const auto& [k, v] : labels) {
    if (k.starts_with(kPrefix)) {
      if (k.size() > kPrefix.size()) roles.insert(k.substr(kPrefix.size()));
    } else if (k == "kubernetes.io/role" && !v.empty()) {
      roles.insert(v);
    }
  }
  return {roles.begin(), roles.end()};
}

std::string node_roles_column(const std::vector<std::string>& roles) {
  return roles.empty() ? "<none>" : text::join(roles, ",");
}

std::vector<std::string> Node::roles() const { return node_roles(labels); }

std::string Node::roles_column() const { return node_roles_column(roles()); }

// printNode: Ready when the Ready condition is True, NotReady otherwise, Unknown without one; then
// SchedulingDisabled for spec.unschedulable.
std::string Node::status_column() const {
  std::string out = ready_status.empty() ? "Unknown" : (ready_status == "True" ? "Ready" : "NotReady");
  if (unschedulable) out += ",SchedulingDisabled";
  return out;
}

namespace {
// translateTimestampSince: "<unknown>" for a zero timestamp.
std::string age_of(const std::optional<Node::time_point>& created, std::chrono::system_clock::time_point now) {
  if (!created) return "<unknown>";
  return human_duration(std::chrono::duration_cast<std::chrono::nanoseconds>(now - *created));
}

std::int64_t allocatable_of(const Node& node, std::string_view resource, bool milli) {
  auto it = node.allocatable.find(std::string(resource));
  if (it == node.allocatable.end()) return 0;
  return milli ? it->second.milli_value() : it->second.value();
}
}  // namespace

std::string Node::age(std::chrono::system_clock::time_point now) const { return age_of(created, now); }

NodeSummary NodeSummary::of(const Node& node, std::string_view gpu_resource) {
  NodeSummary s;
  s.name = node.name;
  s.status = node.status_column();
  s.roles = node.roles_column();
  s.kubelet_version = node.kubelet_version;
  s.internal_ip = node.internal_ip();
  s.created = node.created;
  s.taints = node.taints;
  s.unschedulable = node.unschedulable;
  s.milli_cpu = allocatable_of(node, "cpu", true);
  s.memory = allocatable_of(node, "memory", false);
  s.gpus = allocatable_of(node, gpu_resource, false);
  return s;
}

std::string NodeSummary::age(std::chrono::system_clock::time_point now) const { return age_of(created, now); }

std::string NodeSummary::taints_column() const {
  std::string out;
  for (const auto& t : taints) out += (out.empty() ? "" : ",") + t.to_string();
  return out.empty() ? "<none>" : out;
}

}  // namespace gpupool
