#include "embedded/endpoints.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"

namespace gpupool::embedded {

namespace json = boost::json;
using util::object_at;
using util::string_of;

namespace {

const json::object* selector_of(const json::object& svc) { return object_at(svc, {"spec", "selector"}); }

// A Service's selector is a plain map: every pair must be among the pod's labels.
bool selects(const json::object& selector, const json::object& pod) {
  const json::object* labels = object_at(pod, {"metadata", "labels"});
  for (const auto& [k, v] : selector) {
    const json::value* l = labels ? labels->if_contains(k) : nullptr;
    if (!l || *l != v) return false;
  }
  return true;
}

bool ready(const json::object& pod) {
  const json::object* st = object_at(pod, {"status"});
  const json::value* conds = st ? st->if_contains("conditions") : nullptr;
  return string_of(util::find_condition(conds && conds->is_array() ? &conds->as_array() : nullptr, "Ready"),
                   "status") == "True";
}

// The target port of a Service port for one pod (FindPort): a number, or a container port's name.
std::optional<std::int64_t> target_port(const json::object& sp, const json::object& pod) {
  const json::value* tp = sp.if_contains("targetPort");
  if (!tp) return util::int_of(&sp, "port", 0);
  if (tp->is_int64()) return tp->as_int64();
  if (!tp->is_string()) return std::nullopt;
  const std::string want(tp->as_string());
  const std::string proto = string_of(&sp, "protocol").empty() ? "TCP" : string_of(&sp, "protocol");
  if (const json::array* cs = util::array_at(pod, {"spec"}, "containers"))
    for (const auto& c : *cs)
      if (const json::array* ports = c.is_object() ? util::array_at(c.as_object(), {}, "ports") : nullptr)
        for (const auto& p : *ports)
          if (p.is_object() && string_of(&p.as_object(), "name") == want &&
              (string_of(&p.as_object(), "protocol").empty() ? "TCP" : string_of(&p.as_object(), "protocol")) == proto)
            return util::int_of(&p.as_object(), "containerPort", 0);
  return std::nullopt;
}

}  // namespace

EndpointsController::EndpointsController(Store& store, const Clock& clock) : store_(store), clock_(clock) {
  subscription_ = store_.subscribe([this](const WatchEvent& e) {
    WritingAs as("kube-controller-manager");
    on_event(e);
  });
}

EndpointsController::~EndpointsController() { store_.unsubscribe(subscription_); }

void EndpointsController::on_event(const WatchEvent& e) {
  if (!e.type_info || !e.object || !e.type_info->group.empty()) return;
  const std::string& res = e.type_info->resource;
  const std::string ns = util::namespace_of(*e.object);
  if (res == "services") {
    const std::string name = util::name_of(*e.object);
    if (e.type == EventType::Deleted) {
      // The controller deletes the Endpoints of a Service that is gone.
      try {
        store_.remove(store_.type("", "endpoints"), ns, name);
      } catch (const StatusError&) {
        // none was made (no selector) or it is gone already
      }
      return;
    }
    sync(ns, name, string_of(object_at(*e.object, {"metadata"}), "creationTimestamp"));
  } else if (res == "pods") {
    // Every Service of the namespace that selects the pod, before or after the change.
    const auto& services = store_.type("", "services");
    for (const auto& svc : store_.list(services, ns).items) {
      const json::object* sel = selector_of(*svc);
      if (!sel || sel->empty()) continue;
      if (selects(*sel, *e.object) || (e.old_object && selects(*sel, *e.old_object)))
        sync(ns, util::name_of(*svc), to_rfc3339(clock_.now()));
    }
  }
}

void EndpointsController::sync_slice(const json::object& svc, json::array endpoints, json::array ports,
                                     const json::object& svc_labels, const std::string& trigger) {
  // The EndpointSlice controller's one slice of an IPv4 Service (reconciler.go): generateName
  // "<service>-", owned by the Service, labelled with its labels plus kubernetes.io/service-name and
  // endpointslice.kubernetes.io/managed-by; `endpoints` and `ports` are null when empty.
  const auto& slices = store_.type("discovery.k8s.io", "endpointslices");
  const std::string ns = util::namespace_of(svc), name = util::name_of(svc);
  std::shared_ptr<const json::object> current;
  for (const auto& s : store_.list(slices, ns).items)
    if (string_of(object_at(*s, {"metadata", "labels"}), "kubernetes.io/service-name") == name &&
        util::controller_uid(*s) == util::uid_of(svc))
      current = s;
  json::object labels = svc_labels;
  labels["endpointslice.kubernetes.io/managed-by"] = "endpointslice-controller.k8s.io";
  labels["kubernetes.io/service-name"] = name;
  std::sort(endpoints.begin(), endpoints.end(), [](const json::value& a, const json::value& b) {
    return a.at("addresses").at(0).as_string() < b.at("addresses").at(0).as_string();
  });
  const json::value eps = endpoints.empty() ? json::value(nullptr) : json::value(std::move(endpoints));
  const json::value prts = ports.empty() ? json::value(nullptr) : json::value(std::move(ports));
  if (current) {
    const json::object* cur_labels = object_at(*current, {"metadata", "labels"});
    const json::value* ce = current->if_contains("endpoints");
    const json::value* cp = current->if_contains("ports");
    if (ce && cp && util::json_equal(*ce, eps) && util::json_equal(*cp, prts) && cur_labels &&
        util::json_equal(*cur_labels, labels))
      return;
  }
  json::object md{{"labels", std::move(labels)},
                  {"annotations", json::object{{"endpoints.kubernetes.io/last-change-trigger-time", trigger}}},
                  {"ownerReferences", json::array{util::controller_reference(svc)}}};
  json::object obj{{"metadata", std::move(md)}, {"addressType", "IPv4"}, {"endpoints", eps}, {"ports", prts}};
  try {
    if (current) {
      auto& m = obj["metadata"].as_object();
      m["name"] = util::name_of(*current);
      m["resourceVersion"] = string_of(object_at(*current, {"metadata"}), "resourceVersion");
      store_.update(slices, ns, std::move(obj));
    } else {
      obj["metadata"].as_object()["generateName"] = name + "-";
      store_.create(slices, ns, std::move(obj));
    }
  } catch (const StatusError&) {
    // changed meanwhile: the next event syncs again
  }
}

void EndpointsController::sync(const std::string& ns, const std::string& name, const std::string& trigger) {
  const auto& services = store_.type("", "services");
  const auto& endpoints = store_.type("", "endpoints");
  const auto svc = store_.find(services, ns, name);
  if (!svc) return;
  const json::object* sel = selector_of(*svc);
  if (!sel || sel->empty()) return;  // a Service without a selector: its Endpoints are the user's
  const json::array* svc_ports = util::array_at(*svc, {"spec"}, "ports");
  // One subset per distinct port list (RepackSubsets), addresses sorted by IP.
  using Ports = json::array;
  std::vector<std::tuple<std::string, Ports, json::array, json::array>> subsets;  // key, ports, ready, not ready
  json::array slice_endpoints, slice_ports;
  for (const auto& pod : store_.list(store_.type("", "pods"), ns).items) {
    if (!selects(*sel, *pod)) continue;
    const json::object* st = object_at(*pod, {"status"});
    const std::string ip = string_of(st, "podIP"), phase = string_of(st, "phase");
    // shouldPodBeInEndpoints: an address, not terminating, not finished.
    if (ip.empty() || object_at(*pod, {"metadata"})->contains("deletionTimestamp") || phase == "Succeeded" ||
        phase == "Failed")
      continue;
    Ports ports;
    bool resolved = true;
    for (const auto& p : svc_ports ? *svc_ports : json::array{}) {
      if (!p.is_object()) continue;
      const auto port = target_port(p.as_object(), *pod);
      if (!port) {
        resolved = false;
        break;
      }
      json::object ep{
          {"port", *port},
          {"protocol", string_of(&p.as_object(), "protocol").empty() ? "TCP" : string_of(&p.as_object(), "protocol")}};
      if (const std::string n = string_of(&p.as_object(), "name"); !n.empty()) ep["name"] = n;
      ports.push_back(std::move(ep));
    }
    if (!resolved) continue;
    json::object address{{"ip", ip}};
    if (const std::string node = string_of(object_at(*pod, {"spec"}), "nodeName"); !node.empty())
      address["nodeName"] = node;
    address["targetRef"] =
        json::object{{"kind", "Pod"}, {"namespace", ns}, {"name", util::name_of(*pod)}, {"uid", util::uid_of(*pod)}};
    const std::string key = json::serialize(ports);
    auto it = std::find_if(subsets.begin(), subsets.end(), [&](const auto& s) { return std::get<0>(s) == key; });
    if (it == subsets.end()) it = subsets.insert(subsets.end(), {key, ports, {}, {}});
    // The EndpointSlice's view of the same pod (endpointslice/utils.go podToEndpoint).
    const bool is_ready = ready(*pod);
    json::object ep{{"addresses", json::array{json::value(ip)}},
                    {"conditions", json::object{{"ready", is_ready}, {"serving", is_ready}, {"terminating", false}}}};
    if (address.contains("nodeName")) ep["nodeName"] = address.at("nodeName");
    ep["targetRef"] = address.at("targetRef");
    slice_endpoints.push_back(std::move(ep));
    if (slice_ports.empty() && !ports.empty()) {
      // discovery/v1 EndpointPort: the name is always set ("" for an unnamed port), a pointer that
      // kubectl describe dereferences.
      slice_ports = ports;
      for (auto& sp : slice_ports)
        if (!sp.as_object().contains("name")) sp.as_object()["name"] = "";
    }
    (is_ready ? std::get<2>(*it) : std::get<3>(*it)).push_back(std::move(address));
  }
  json::array out;
  auto by_ip = [](const json::value& a, const json::value& b) {
    return a.at("ip").as_string() < b.at("ip").as_string();
  };
  for (auto& [key, ports, ready_addrs, not_ready] : subsets) {
    std::sort(ready_addrs.begin(), ready_addrs.end(), by_ip);
    std::sort(not_ready.begin(), not_ready.end(), by_ip);
    json::object s;
    if (!ready_addrs.empty()) s["addresses"] = std::move(ready_addrs);
    if (!not_ready.empty()) s["notReadyAddresses"] = std::move(not_ready);
    if (!ports.empty()) s["ports"] = std::move(ports);
    out.push_back(std::move(s));
  }
  json::object labels;
  if (const json::object* l = object_at(*svc, {"metadata", "labels"})) labels = *l;
  if (string_of(object_at(*svc, {"spec"}), "clusterIP") == "None") labels["service.kubernetes.io/headless"] = "";
  sync_slice(*svc, std::move(slice_endpoints), std::move(slice_ports), labels, trigger);
  const auto current = store_.find(endpoints, ns, name);
  if (current) {
    const json::value* cur_subsets = current->if_contains("subsets");
    const json::object* cur_labels = object_at(*current, {"metadata", "labels"});
    const bool same_subsets = cur_subsets ? util::json_equal(*cur_subsets, json::value(out)) : out.empty();
    const bool same_labels = cur_labels ? util::json_equal(*cur_labels, labels) : labels.empty();
    if (same_subsets && same_labels) return;
  }
  json::object md{{"name", name},
                  {"namespace", ns},
                  {"annotations", json::object{{"endpoints.kubernetes.io/last-change-trigger-time", trigger}}}};
  if (!labels.empty()) md["labels"] = std::move(labels);
  json::object obj{{"metadata", std::move(md)}};
  if (!out.empty()) obj["subsets"] = std::move(out);
  try {
    if (current) {
      obj["metadata"].as_object()["resourceVersion"] = string_of(object_at(*current, {"metadata"}), "resourceVersion");
      store_.update(endpoints, ns, std::move(obj));
    } else {
      store_.create(endpoints, ns, std::move(obj));
    }
  } catch (const StatusError&) {
    // changed meanwhile: the next event syncs again
  }
}

}  // namespace gpupool::embedded
