// A store with the seed nodes, the controllers and a kubelet, for the controllers' tests; pods are
// bound by bind_all() (the scheduler has its own tests).
#pragma once

#include <boost/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "embedded/controllers.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/kubelet.hpp"
#include "embedded/store.hpp"
#include "gpupool/topology.hpp"

namespace gpupool::embedded::testing {

namespace json = boost::json;

inline json::object obj(std::string_view text) { return json::parse(text).as_object(); }
inline std::string at(const json::object& o, std::string_view path) { return field_value(o, path); }

struct World {
  Clock clock = Clock::manual();
  Store store{clock};
  const ResourceType& pods = store.type("", "pods");
  Controllers controllers{store, clock};
  Kubelet kubelet{store, clock, KubeletOptions{}};
  World() {
    store.create(store.type("", "namespaces"), "", obj(R"({"metadata":{"name":"default"}})"));
    for (const auto& n : gpupool::Topology::builtin("seed").nodes)
      store.create(store.type("", "nodes"), "", n.to_node_object(clock.now()));
  }
  std::vector<json::object> list(const std::string& group, const std::string& resource) const {
    std::vector<json::object> out;
    for (const auto& o : store.list(store.type(group, resource), "default").items) out.push_back(*o);
    return out;
  }
  std::set<std::string> pod_names() const {
    std::set<std::string> out;
    for (const auto& p : list("", "pods")) out.insert(at(p, "metadata.name"));
    return out;
  }
  void bind_all() {
    for (const auto& p : list("", "pods"))
      if (at(p, "spec.nodeName").empty())
        // (As the scheduler binds: through pods/binding, which ValidatePodUpdate does not judge.)
        store.mutate(
            pods, "default", at(p, "metadata.name"),
            [](json::object& o) { o["spec"].as_object()["nodeName"] = "cn-beijing.192.168.3.230"; }, {}, "binding");
  }
  void advance(Clock::duration d) {
    bind_all();
    clock.advance(d);
    kubelet.sync();
    bind_all();
    kubelet.sync();
    controllers.sync();  // owners due again at this time (a deadline, minReadySeconds)
  }
  json::object get(const std::string& group, const std::string& resource, const std::string& name) const {
    return store.get(store.type(group, resource), "default", name);
  }
};

}  // namespace gpupool::embedded::testing
