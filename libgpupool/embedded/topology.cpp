#include "gpupool/topology.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <boost/json.hpp>

#include "common/builtin_data.hpp"
#include "common/strict_yaml.hpp"
#include "embedded/clock.hpp"
#include "gpupool/error.hpp"
#include "gpupool/names.hpp"
#include "gpupool/time.hpp"

namespace gpupool {
namespace {

// The strict reader shared with site profiles (common/strict_yaml.hpp), plus the topology's kinds
// of values.
struct Reader : detail::StrictYamlReader {
  using StrictYamlReader::StrictYamlReader;

  std::string scalar(const YAML::Node& n, const std::string& key) const { return string(n, key); }

  std::map<std::string, std::string> labels(const YAML::Node& n, const std::string& key) const {
    if (!n.IsMap()) fail(n, key, "must be a map of label keys to values");
    std::map<std::string, std::string> out;
    for (const auto& kv : n) {
      const std::string k = scalar(kv.first, key);
      const std::string field = key + "." + k;
      const std::string v = kv.second.IsNull() ? std::string() : scalar(kv.second, field);
      if (auto errs = qualified_name_errors(k); !errs.empty()) fail(kv.first, field, "invalid label key: " + errs[0]);
      if (auto errs = label_value_errors(v); !errs.empty()) fail(kv.second, field, "invalid label value: " + errs[0]);
      out[k] = v;
    }
    return out;
  }

  std::map<std::string, Quantity> resources(const YAML::Node& n, const std::string& key) const {
    if (!n.IsMap()) fail(n, key, "must be a map of resource names to quantities (cpu: \"32\")");
    std::map<std::string, Quantity> out;
    for (const auto& kv : n) {
      const std::string k = scalar(kv.first, key);
      const std::string field = key + "." + k;
      if (!is_qualified_name(k)) fail(kv.first, field, "not a valid resource name");
      try {
        out[k] = Quantity::parse(scalar(kv.second, field), field);
      } catch (const ValidationError& e) {
        fail(kv.second, field, fmt::format("invalid quantity \"{}\": {}", e.value(), e.rule()));
      }
      if (out[k].is_negative()) fail(kv.second, field, "must be greater than or equal to 0");
    }
    return out;
  }

  std::vector<Taint> taints(const YAML::Node& n, const std::string& key) const {
    if (!n.IsSequence()) fail(n, key, "must be a list of taints (\"key=value:Effect\" or {key, value, effect})");
    std::vector<Taint> out;
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string field = fmt::format("{}[{}]", key, i);
      const YAML::Node& t = n[i];
      try {
        if (t.IsScalar()) {
          out.push_back(parse_taint(t.Scalar(), field));
        } else if (t.IsMap()) {
          Taint taint;
          for (const auto& kv : t) {
            const std::string k = scalar(kv.first, field);
            if (k == "key")
              taint.key = scalar(kv.second, field + ".key");
            else if (k == "value")
              taint.value = kv.second.IsNull() ? "" : scalar(kv.second, field + ".value");
            else if (k == "effect")
              taint.effect = parse_taint_effect(scalar(kv.second, field + ".effect"), field + ".effect");
            else
              fail(kv.first, field + "." + k, "unknown key (expected key, value, effect)");
          }
          if (!t["effect"]) fail(t, field + ".effect", "required (NoSchedule, PreferNoSchedule or NoExecute)");
          validate(taint, field);
          out.push_back(taint);
        } else {
          fail(t, field, "must be \"key=value:Effect\" or a map {key, value, effect}");
        }
      } catch (const ValidationError& e) {
        fail(t, e.field(), fmt::format("invalid value \"{}\": {}", e.value(), e.rule()));
      }
      for (std::size_t j = 0; j + 1 < out.size(); ++j)
        if (out[j].key == out.back().key && out[j].effect == out.back().effect)
          fail(t, field,
               fmt::format("duplicate taint {}:{} (a node holds one taint per key and effect)", out.back().key,
                           to_string(out.back().effect)));
    }
    return out;
  }

  // A list of tolerations in --toleration's forms ("key=value:Effect", "key", "all").
  std::vector<Toleration> tolerations(const YAML::Node& n, const std::string& key) const {
    if (!n.IsSequence()) fail(n, key, "must be a list of tolerations (\"key=value:Effect\")");
    std::vector<Toleration> out;
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string field = fmt::format("{}[{}]", key, i);
      try {
        out.push_back(parse_toleration(scalar(n[i], field), field));
      } catch (const ValidationError& e) {
        fail(n[i], e.field(), fmt::format("invalid value \"{}\": {}", e.value(), e.rule()));
      }
    }
    return out;
  }

  // `runtimeClasses`: name (a DNS subdomain), handler (a DNS label, default the name), overhead,
  // nodeSelector, tolerations (--toleration's forms).
  std::vector<TopologyRuntimeClass> runtime_classes(const YAML::Node& n, const std::string& key) const {
    if (!n.IsSequence()) fail(n, key, "must be a list of RuntimeClasses ({name, handler, ...})");
    std::vector<TopologyRuntimeClass> out;
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string prefix = fmt::format("{}[{}]", key, i);
      const YAML::Node& c = n[i];
      if (!c.IsMap()) fail(c, prefix, "must be a map with at least a name");
      TopologyRuntimeClass rc;
      for (const auto& kv : c) {
        const std::string k = scalar(kv.first, prefix);
        const std::string field = prefix + "." + k;
        if (k == "name")
          rc.name = scalar(kv.second, field);
        else if (k == "handler")
          rc.handler = scalar(kv.second, field);
        else if (k == "overhead")
          rc.overhead = resources(kv.second, field);
        else if (k == "nodeSelector")
          rc.node_selector = labels(kv.second, field);
        else if (k == "tolerations")
          rc.tolerations = tolerations(kv.second, field);
        else
          fail(kv.first, field,
               "unknown key (a RuntimeClass takes name, handler, overhead, nodeSelector, tolerations)");
      }
      if (rc.handler.empty()) rc.handler = rc.name;
      if (rc.name.empty()) fail(c, prefix + ".name", "required");
      if (auto errs = dns1123_subdomain_errors(rc.name); !errs.empty()) fail(c["name"], prefix + ".name", errs[0]);
      if (auto errs = dns1123_label_errors(rc.handler); !errs.empty())
        fail(c["handler"] ? c["handler"] : c["name"], prefix + ".handler", errs[0]);
      for (const auto& other : out)
        if (other.name == rc.name) fail(c, prefix + ".name", "duplicate RuntimeClass \"" + rc.name + "\"");
      out.push_back(std::move(rc));
    }
    return out;
  }

  static bool is_ipv4(std::string_view s) {
    int parts = 0;
    std::size_t i = 0;
    while (parts < 4) {
      std::size_t begin = i;
      int value = 0;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - begin < 3) value = value * 10 + (s[i++] - '0');
      if (i == begin || value > 255 || (i - begin > 1 && s[begin] == '0')) return false;
      ++parts;
      if (parts < 4) {
        if (i >= s.size() || s[i] != '.') return false;
        ++i;
      }
    }
    return i == s.size();
  }

  // Applies one key of a node (or of `defaults`) to `node`.
  void apply(TopologyNode& node, const std::string& k, const YAML::Node& v, const std::string& field, bool is_default,
             bool& allocatable_set) const {
    if (k == "name" && !is_default) {
      node.name = scalar(v, field);
      if (auto errs = dns1123_subdomain_errors(node.name); !errs.empty()) fail(v, field, errs[0]);
    } else if (k == "internalIP" && !is_default) {
      node.internal_ip = scalar(v, field);
      if (!is_ipv4(node.internal_ip)) fail(v, field, "must be an IPv4 address such as 192.168.3.225");
    } else if (k == "roles") {
      node.roles = strings(v, field);
      for (const auto& r : node.roles)
        if (!is_qualified_name("node-role.kubernetes.io/" + r)) fail(v, field, "invalid role \"" + r + "\"");
    } else if (k == "labels") {
      for (auto& [lk, lv] : labels(v, field)) node.labels[lk] = lv;
    } else if (k == "taints") {
      node.taints = taints(v, field);
    } else if (k == "capacity") {
      for (auto& [rk, rv] : resources(v, field)) node.capacity[rk] = rv;
    } else if (k == "allocatable") {
      for (auto& [rk, rv] : resources(v, field)) node.allocatable[rk] = rv;
      allocatable_set = true;
    } else if (k == "kubeletVersion") {
      node.kubelet_version = scalar(v, field);
    } else if (k == "age") {
      auto d = parse_duration(scalar(v, field));
      if (!d) fail(v, field, "must be a duration such as 2d23h, 90m or 30s");
      node.age = std::chrono::duration_cast<std::chrono::seconds>(*d);
    } else if (k == "unschedulable") {
      node.unschedulable = boolean(v, field);
    } else if (k == "osImage") {
      node.os_image = scalar(v, field);
    } else if (k == "kernelVersion") {
      node.kernel_version = scalar(v, field);
    } else if (k == "containerRuntimeVersion") {
      node.container_runtime_version = scalar(v, field);
    } else {
      fail(v, field,
           is_default ? "unknown key (defaults take roles, labels, taints, capacity, allocatable, kubeletVersion, age, "
                        "unschedulable, osImage, kernelVersion, containerRuntimeVersion)"
                      : "unknown key (a node takes name, internalIP, roles, labels, taints, capacity, allocatable, "
                        "kubeletVersion, age, unschedulable, osImage, kernelVersion, containerRuntimeVersion)");
    }
  }

  Topology read(std::string_view text) const {
    const YAML::Node root = load(text, "(yaml)");
    if (!root.IsMap()) throw ConfigError(file(), "(root)", "a topology is a map with a `nodes` list", line_of(root));
    Topology topo;
    YAML::Node defaults, nodes;
    bool has_defaults = false, has_nodes = false;
    for (const auto& kv : root) {
      const std::string k = scalar(kv.first, "(root)");
      if (k == "name")
        topo.name = scalar(kv.second, "name");
      else if (k == "description")
        topo.description = scalar(kv.second, "description");
      else if (k == "profile")
        topo.profile = scalar(kv.second, "profile");
      else if (k == "defaults")
        defaults = kv.second, has_defaults = true;
      else if (k == "nodes")
        nodes = kv.second, has_nodes = true;
      else if (k == "runtimeClasses")
        topo.runtime_classes = runtime_classes(kv.second, k);
      else
        fail(kv.first, k, "unknown key (expected name, description, profile, defaults, nodes, runtimeClasses)");
    }
    if (!has_nodes) throw ConfigError(file(), "nodes", "required: the list of nodes", std::max(1, line_of(root)));
    if (!nodes.IsSequence() || nodes.size() == 0) fail(nodes, "nodes", "must be a non-empty list of nodes");
    if (has_defaults && !defaults.IsMap()) fail(defaults, "defaults", "must be a map");

    TopologyNode base;
    bool base_allocatable = false;
    if (has_defaults)
      for (const auto& kv : defaults) {
        const std::string k = scalar(kv.first, "defaults");
        apply(base, k, kv.second, "defaults." + k, true, base_allocatable);
      }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const std::string prefix = fmt::format("nodes[{}]", i);
      const YAML::Node& n = nodes[i];
      if (!n.IsMap()) fail(n, prefix, "must be a map with at least name and internalIP");
      TopologyNode node = base;
      bool allocatable_set = base_allocatable;
      for (const auto& kv : n) {
        const std::string k = scalar(kv.first, prefix);
        apply(node, k, kv.second, prefix + "." + k, false, allocatable_set);
      }
      if (node.name.empty()) fail(n, prefix + ".name", "required");
      if (node.internal_ip.empty()) fail(n, prefix + ".internalIP", "required (the node's InternalIP address)");
      for (const auto& [rk, rv] : node.capacity) node.allocatable.try_emplace(rk, rv);
      for (const auto& [rk, rv] : node.allocatable) {
        auto cap = node.capacity.find(rk);
        if (cap == node.capacity.end())
          fail(n, prefix + ".allocatable." + rk, "has no capacity; add it under capacity too");
        if (rv > cap->second)
          fail(n, prefix + ".allocatable." + rk,
               fmt::format("{} exceeds capacity {}", rv.to_string(), cap->second.to_string()));
      }
      for (const auto& other : topo.nodes) {
        if (other.name == node.name) fail(n, prefix + ".name", "duplicate node name \"" + node.name + "\"");
        if (other.internal_ip == node.internal_ip)
          fail(n, prefix + ".internalIP", "duplicate address " + node.internal_ip + " (also node " + other.name + ")");
      }
      (void)allocatable_set;
      topo.nodes.push_back(std::move(node));
    }
    return topo;
  }
};

std::string iso(std::chrono::system_clock::time_point t) {
  return embedded::to_rfc3339(std::chrono::time_point_cast<embedded::Clock::duration>(t));
}

}  // namespace

std::map<std::string, std::string> TopologyNode::effective_labels() const {
  // What the kubelet registers (pkg/kubelet/kubelet_node_status.go initialNode: hostname, os and arch
  // labels, GA and beta forms), plus the role labels kubeadm-style installers add.
  std::map<std::string, std::string> out{{"beta.kubernetes.io/arch", "amd64"},
                                         {"beta.kubernetes.io/os", "linux"},
                                         {"kubernetes.io/arch", "amd64"},
                                         {"kubernetes.io/hostname", name},
                                         {"kubernetes.io/os", "linux"}};
  for (const auto& r : roles) out["node-role.kubernetes.io/" + r] = "";
  for (const auto& [k, v] : labels) out[k] = v;
  return out;
}

boost::json::object TopologyRuntimeClass::to_object() const {
  namespace json = boost::json;
  json::object o{{"apiVersion", "node.k8s.io/v1"},
                 {"kind", "RuntimeClass"},
                 {"metadata", json::object{{"name", name}}},
                 {"handler", handler}};
  if (!overhead.empty()) {
    json::object fixed;
    for (const auto& [k, v] : overhead) fixed[k] = v.to_string();
    o["overhead"] = json::object{{"podFixed", std::move(fixed)}};
  }
  json::object scheduling;
  if (!node_selector.empty()) {
    json::object selector;
    for (const auto& [k, v] : node_selector) selector[k] = v;
    scheduling["nodeSelector"] = std::move(selector);
  }
  if (!tolerations.empty()) scheduling["tolerations"] = tolerations_json(tolerations);
  if (!scheduling.empty()) o["scheduling"] = std::move(scheduling);
  return o;
}

boost::json::object TopologyNode::to_node_object(std::chrono::system_clock::time_point now) const {
  namespace json = boost::json;
  const std::string created = iso(now - age);
  const std::string heartbeat = iso(now);
  json::object labels_json;
  for (const auto& [k, v] : effective_labels()) labels_json[k] = v;
  json::object metadata{{"name", name}, {"labels", std::move(labels_json)}, {"creationTimestamp", created}};
  metadata["annotations"] = json::object{{"node.alpha.kubernetes.io/ttl", "0"},
                                         {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}};
  json::object spec;
  if (!taints.empty()) {
    json::array ts;
    for (const auto& t : taints) {
      json::object o{{"key", t.key}, {"effect", std::string(to_string(t.effect))}};
      if (!t.value.empty()) o["value"] = t.value;
      if (t.effect == TaintEffect::NoExecute) o["timeAdded"] = created;  // only NoExecute taints carry it
      ts.push_back(std::move(o));
    }
    spec["taints"] = std::move(ts);
  }
  if (unschedulable) spec["unschedulable"] = true;
  json::object capacity_json, allocatable_json;
  for (const auto& [k, v] : capacity) capacity_json[k] = v.to_string();
  for (const auto& [k, v] : allocatable) allocatable_json[k] = v.to_string();
  auto condition = [&](const char* type, const char* status, const char* reason, const char* message) {
    return json::object{
        {"type", type},     {"status", status},  {"lastHeartbeatTime", heartbeat}, {"lastTransitionTime", created},
        {"reason", reason}, {"message", message}};
  };
  // Condition wording as the kubelet sets it (pkg/kubelet/nodestatus/setters.go).
  json::array conditions{
      condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
      condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
      condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
      condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")};
  json::object node_info{{"kubeletVersion", kubelet_version},
                         {"kubeProxyVersion", kubelet_version},
                         {"operatingSystem", "linux"},
                         {"architecture", "amd64"},
                         {"osImage", os_image},
                         {"kernelVersion", kernel_version},
                         {"containerRuntimeVersion", container_runtime_version},
                         {"machineID", ""},
                         {"systemUUID", ""},
                         {"bootID", ""}};
  json::object status{{"capacity", std::move(capacity_json)},
                      {"allocatable", std::move(allocatable_json)},
                      {"addresses", json::array{json::object{{"type", "InternalIP"}, {"address", internal_ip}},
                                                json::object{{"type", "Hostname"}, {"address", name}}}},
                      {"conditions", std::move(conditions)},
                      {"nodeInfo", std::move(node_info)},
                      {"daemonEndpoints", json::object{{"kubeletEndpoint", json::object{{"Port", 10250}}}}}};
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Node"},
                      {"metadata", std::move(metadata)},
                      {"spec", std::move(spec)},
                      {"status", std::move(status)}};
}

Topology Topology::parse(std::string_view yaml, std::string_view file) { return Reader{std::string(file)}.read(yaml); }

Topology Topology::load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string(), "(file)", "cannot read the topology file; check the path");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path.string());
}

std::vector<std::string> Topology::builtin_names() {
  auto names = detail::builtin_data_names("topologies");
  std::sort(names.begin(), names.end());
  return names;
}

Topology Topology::builtin(std::string_view name) {
  const std::string path = fmt::format("topologies/{}.yaml", name);
  const auto text = detail::builtin_data(path);
  if (text.empty()) {
    std::string known;
    for (const auto& n : builtin_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError(
        "<builtin>", std::string(name),
        fmt::format("no built-in topology by this name; choose one of: {} (or give a YAML file path)", known));
  }
  return parse(text, "builtin:" + path);
}

Topology Topology::resolve(std::string_view spec) {
  const bool is_path = spec.find('/') != std::string_view::npos || spec.ends_with(".yaml") || spec.ends_with(".yml");
  return is_path ? load(std::filesystem::path(std::string(spec))) : builtin(spec);
}

}  // namespace gpupool
