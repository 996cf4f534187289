#include "embedded/table.hpp"
#include "gpupool/node.hpp"
#include "gpupool/storage.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <boost/json/serialize.hpp>

#include "common/join.hpp"
#include "common/json_path.hpp"
#include "embedded/crd_schema.hpp"

namespace gpupool::embedded {

namespace json = boost::json;

namespace {

struct Column {
  const char* name;
  const char* type;
  int priority;
  const char* format = "";
};

using jpath::value_at;
std::string s(const json::value& v, std::initializer_list<std::string_view> path, std::string dflt = "") {
  const auto* x = value_at(v, path);
  if (x && x->is_string()) return std::string(x->as_string());
  return dflt;
}
std::int64_t n(const json::value& v, std::initializer_list<std::string_view> path) {
  const auto* x = value_at(v, path);
  if (x && x->is_int64()) return x->as_int64();
  if (x && x->is_uint64()) return static_cast<std::int64_t>(x->as_uint64());
  return 0;
}
std::string none_if_empty(const std::string& v) { return v.empty() ? "<none>" : v; }

std::string age(const json::value& obj, Clock::time_point now) {
  Clock::time_point created{};
  if (!parse_rfc3339(s(obj, {"metadata", "creationTimestamp"}), created)) return "<unknown>";
  return human_duration(now - created);
}

// The printers' lists of at most three ("a,b,c + 2 more..."), `none` when empty.
std::string first_three(const std::vector<std::string>& all, const char* none) {
  if (all.empty()) return none;
  std::vector<std::string> shown(all.begin(),
                                 all.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(all.size(), 3)));
  std::string out = text::join(shown, ",");
  if (all.size() > 3) out += fmt::format(" + {} more...", all.size() - 3);
  return out;
}

// formatEndpoints: ip:port for every port of every subset (an address alone without ports).
std::string endpoints_text(const json::value& o) {
  const auto* subsets = value_at(o, {"subsets"});
  if (!subsets || !subsets->is_array() || subsets->as_array().empty()) return "<none>";
  std::vector<std::string> list;
  for (const auto& ss : subsets->as_array()) {
    std::vector<std::string> ips;
    if (const auto* as = value_at(ss, {"addresses"}); as && as->is_array())
      for (const auto& a : as->as_array()) ips.push_back(s(a, {"ip"}));
    const auto* ports = value_at(ss, {"ports"});
    if (!ports || !ports->is_array() || ports->as_array().empty()) {
      list.insert(list.end(), ips.begin(), ips.end());
      continue;
    }
    for (const auto& p : ports->as_array())
      for (const auto& ip : ips) list.push_back(ip + ":" + std::to_string(n(p, {"port"})));
  }
  return first_three(list, "");
}

// Containers, Images, Selector of workload controllers' -o wide.
void containers_images(const json::value& spec_template, std::string& names, std::string& images) {
  std::vector<std::string> ns, is;
  if (const auto* cs = value_at(spec_template, {"spec", "containers"}); cs && cs->is_array())
    for (const auto& c : cs->as_array()) {
      ns.push_back(s(c, {"name"}));
      is.push_back(s(c, {"image"}));
    }
  names = text::join(ns, ",");
  images = text::join(is, ",");
}
// metav1.FormatLabelSelector.
std::string selector_text(const json::value* sel) {
  const auto text = label_selector_string(sel);
  if (!text) return "<error>";
  return text->empty() ? "<none>" : *text;
}

json::array node_row(const json::value& o, Clock::time_point now) {
  // printNode: STATUS from the Ready condition (+ SchedulingDisabled), ROLES from
  // node-role.kubernetes.io/<role> and kubernetes.io/role labels.
  std::string status = "Unknown";
  if (const auto* cs = value_at(o, {"status", "conditions"}); cs && cs->is_array())
    for (const auto& c : cs->as_array())
      if (s(c, {"type"}) == "Ready") status = s(c, {"status"}) == "True" ? "Ready" : "NotReady";
  if (const auto* u = value_at(o, {"spec", "unschedulable"}); u && u->is_bool() && u->as_bool())
    status += ",SchedulingDisabled";
  std::map<std::string, std::string> labels;
  if (const auto* ls = value_at(o, {"metadata", "labels"}); ls && ls->is_object())
    for (const auto& [k, v] : ls->as_object()) labels[std::string(k)] = v.is_string() ? std::string(v.as_string()) : "";
  std::string internal, external;
  if (const auto* as = value_at(o, {"status", "addresses"}); as && as->is_array())
    for (const auto& a : as->as_array()) {
      if (s(a, {"type"}) == "InternalIP" && internal.empty()) internal = s(a, {"address"});
      if (s(a, {"type"}) == "ExternalIP" && external.empty()) external = s(a, {"address"});
    }
  return {s(o, {"metadata", "name"}),
          status,
          node_roles_column(node_roles(labels)),
          age(o, now),
          s(o, {"status", "nodeInfo", "kubeletVersion"}),
          none_if_empty(internal),
          none_if_empty(external),
          s(o, {"status", "nodeInfo", "osImage"}),
          s(o, {"status", "nodeInfo", "kernelVersion"}),
          s(o, {"status", "nodeInfo", "containerRuntimeVersion"})};
}

json::array pod_row(const json::value& o, Clock::time_point now) {
  // printPod: READY ready/total containers, STATUS the reason or phase (a waiting or terminated
  // container's reason overrides), RESTARTS summed.
  std::int64_t total = 0, ready = 0, restarts = 0;
  if (const auto* cs = value_at(o, {"spec", "containers"}); cs && cs->is_array())
    total = static_cast<std::int64_t>(cs->as_array().size());
  std::string reason = s(o, {"status", "reason"});
  if (reason.empty()) reason = s(o, {"status", "phase"}, "Pending");
  if (const auto* st = value_at(o, {"status", "containerStatuses"}); st && st->is_array())
    for (const auto& c : st->as_array()) {
      restarts += n(c, {"restartCount"});
      if (const auto* r = value_at(c, {"ready"}); r && r->is_bool() && r->as_bool()) ++ready;
      const std::string waiting = s(c, {"state", "waiting", "reason"});
      const std::string term = s(c, {"state", "terminated", "reason"});
      if (!waiting.empty())
        reason = waiting;
      else if (!term.empty())
        reason = term;
    }
  // A pod marked for deletion: Terminating until it has finished (Unknown on a lost node).
  if (value_at(o, {"metadata", "deletionTimestamp"})) {
    const std::string phase = s(o, {"status", "phase"});
    if (s(o, {"status", "reason"}) == "NodeLost")
      reason = "Unknown";
    else if (phase != "Succeeded" && phase != "Failed")
      reason = "Terminating";
  }
  return {s(o, {"metadata", "name"}),
          fmt::format("{}/{}", ready, total),
          reason,
          restarts,
          age(o, now),
          none_if_empty(s(o, {"status", "podIP"})),
          none_if_empty(s(o, {"spec", "nodeName"})),
          none_if_empty(s(o, {"status", "nominatedNodeName"})),
          "<none>"};
}

json::array deployment_row(const json::value& o, Clock::time_point now) {
  std::string names, images;
  if (const auto* t = value_at(o, {"spec", "template"})) containers_images(*t, names, images);
  return {s(o, {"metadata", "name"}),
          fmt::format("{}/{}", n(o, {"status", "readyReplicas"}), n(o, {"spec", "replicas"})),
          n(o, {"status", "updatedReplicas"}),
          n(o, {"status", "availableReplicas"}),
          age(o, now),
          names,
          images,
          selector_text(value_at(o, {"spec", "selector"}))};
}

json::array replicaset_row(const json::value& o, Clock::time_point now) {
  std::string names, images;
  if (const auto* t = value_at(o, {"spec", "template"})) containers_images(*t, names, images);
  return {s(o, {"metadata", "name"}),
          n(o, {"spec", "replicas"}),
          n(o, {"status", "replicas"}),
          n(o, {"status", "readyReplicas"}),
          age(o, now),
          names,
          images,
          selector_text(value_at(o, {"spec", "selector"}))};
}

// labels.FormatLabels: key=value pairs sorted, comma-joined, <none> when there are none.
std::string format_labels(const json::value* map) {
  std::vector<std::string> pairs;
  if (map && map->is_object())
    for (const auto& [k, v] : map->as_object())
      pairs.push_back(std::string(k) + "=" + std::string(v.is_string() ? v.as_string() : ""));
  std::sort(pairs.begin(), pairs.end());
  return pairs.empty() ? "<none>" : text::join(pairs, ",");
}

// printPodTemplate: CONTAINERS and IMAGES (layoutContainerCells), POD LABELS.
json::array podtemplate_row(const json::value& o, Clock::time_point) {
  std::string names, images;
  if (const auto* t = value_at(o, {"template"})) containers_images(*t, names, images);
  return {s(o, {"metadata", "name"}), names, images, format_labels(value_at(o, {"template", "metadata", "labels"}))};
}

// printDaemonSet (1.32): the status counts, NODE SELECTOR (labels.FormatLabels of the template's
// nodeSelector: sorted, <none> when empty), AGE; wide: containers, images, selector.
json::array daemonset_row(const json::value& o, Clock::time_point now) {
  std::string names, images;
  if (const auto* t = value_at(o, {"spec", "template"})) containers_images(*t, names, images);
  return {s(o, {"metadata", "name"}),
          n(o, {"status", "desiredNumberScheduled"}),
          n(o, {"status", "currentNumberScheduled"}),
          n(o, {"status", "numberReady"}),
          n(o, {"status", "updatedNumberScheduled"}),
          n(o, {"status", "numberAvailable"}),
          format_labels(value_at(o, {"spec", "template", "spec", "nodeSelector"})),
          age(o, now),
          names,
          images,
          selector_text(value_at(o, {"spec", "selector"}))};
}

// printStatefulSet (1.32): READY as <status.readyReplicas>/<spec.replicas>, AGE; wide: containers,
// images.
json::array statefulset_row(const json::value& o, Clock::time_point now) {
  std::string names, images;
  if (const auto* t = value_at(o, {"spec", "template"})) containers_images(*t, names, images);
  auto count = [&](std::initializer_list<std::string_view> path) {
    const auto* v = value_at(o, path);
    return v && v->is_int64() ? v->as_int64() : 0;
  };
  return {s(o, {"metadata", "name"}),
          fmt::format("{}/{}", count({"status", "readyReplicas"}), count({"spec", "replicas"})), age(o, now), names,
          images};
}

// printControllerRevision (1.32): CONTROLLER as <kind>.<group>/<name> in lower case (the
// controller reference's; <none> without one), REVISION (a number in a "string" column), AGE.
json::array controllerrevision_row(const json::value& o, Clock::time_point now) {
  std::string controller = "<none>";
  if (const auto* refs = value_at(o, {"metadata", "ownerReferences"}); refs && refs->is_array())
    for (const auto& ref : refs->as_array()) {
      const auto* c = value_at(ref, {"controller"});
      if (!c || !c->is_bool() || !c->as_bool()) continue;
      const std::string api_version = s(ref, {"apiVersion"});
      const auto slash = api_version.find('/');
      const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
      std::string kind = s(ref, {"kind"});
      if (!group.empty()) kind += "." + group;
      for (auto& ch : kind) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      controller = kind.empty() ? s(ref, {"name"}) : kind + "/" + s(ref, {"name"});
      break;
    }
  return {s(o, {"metadata", "name"}), controller, n(o, {"revision"}), age(o, now)};
}

json::array job_row(const json::value& o, Clock::time_point now) {
  // printJob (1.32): STATUS from conditions (Complete, Failed, Suspended, Running), COMPLETIONS
  // succeeded/completions, DURATION start..completion (or ..now).
  std::string status = "Running";
  if (const auto* cs = value_at(o, {"status", "conditions"}); cs && cs->is_array())
    for (const auto& c : cs->as_array())
      if (s(c, {"status"}) == "True") {
        const auto t = s(c, {"type"});
        if (t == "Complete" || t == "Failed" || t == "Suspended") status = t;
        if (t == "FailureTarget") status = "FailureTarget";
        if (t == "SuccessCriteriaMet") status = "SuccessCriteriaMet";
      }
  const auto* comp = value_at(o, {"spec", "completions"});
  const std::string completions =
      comp && comp->is_int64()
          ? fmt::format("{}/{}", n(o, {"status", "succeeded"}), comp->as_int64())
          : fmt::format("{}/1 of {}", n(o, {"status", "succeeded"}), n(o, {"spec", "parallelism"}));
  std::string duration;
  Clock::time_point start{}, end = now;
  if (parse_rfc3339(s(o, {"status", "startTime"}), start)) {
    Clock::time_point done{};
    if (parse_rfc3339(s(o, {"status", "completionTime"}), done)) end = done;
    duration = human_duration(end - start);
  }
  std::string names, images;
  if (const auto* t = value_at(o, {"spec", "template"})) containers_images(*t, names, images);
  return {s(o, {"metadata", "name"}),
          status,
          completions,
          duration,
          age(o, now),
          names,
          images,
          selector_text(value_at(o, {"spec", "selector"}))};
}

// printCronJob (1.32): SCHEDULE, TIMEZONE (<none> unset), SUSPEND (printBoolPtr), ACTIVE (the
// Jobs in status.active), LAST SCHEDULE (translateTimestampSince, <none> before the first), AGE;
// wide: the job template's containers, images and selector.
json::array cronjob_row(const json::value& o, Clock::time_point now) {
  std::string last = "<none>";
  if (const auto* ls = value_at(o, {"status", "lastScheduleTime"}); ls && ls->is_string()) {
    Clock::time_point at{};
    last = parse_rfc3339(std::string(ls->as_string()), at) ? human_duration(now - at) : "<unknown>";
  }
  const auto* tz = value_at(o, {"spec", "timeZone"});
  const auto* suspend = value_at(o, {"spec", "suspend"});
  const auto* active = value_at(o, {"status", "active"});
  std::string names, images;
  if (const auto* t = value_at(o, {"spec", "jobTemplate", "spec", "template"})) containers_images(*t, names, images);
  return {s(o, {"metadata", "name"}),
          s(o, {"spec", "schedule"}),
          tz && tz->is_string() ? std::string(tz->as_string()) : "<none>",
          suspend && suspend->is_bool() ? (suspend->as_bool() ? "True" : "False") : "<unset>",
          active && active->is_array() ? static_cast<std::int64_t>(active->as_array().size()) : 0,
          last,
          age(o, now),
          names,
          images,
          selector_text(value_at(o, {"spec", "jobTemplate", "spec", "selector"}))};
}

// AccessModes in kubectl's short form (the model's access_modes_column).
std::string access_modes(const json::value& o, std::initializer_list<std::string_view> path) {
  std::vector<std::string> modes;
  if (const auto* am = value_at(o, path); am && am->is_array())
    for (const auto& m : am->as_array())
      if (m.is_string()) modes.emplace_back(m.as_string());
  return access_modes_column(modes);
}

// STATUS: the model's volume_status_column (Terminating while a protection finalizer keeps it).
std::string volume_phase(const json::value& o) {
  const auto* d = value_at(o, {"metadata", "deletionTimestamp"});
  return volume_status_column(s(o, {"status", "phase"}, "Pending"), d && !d->is_null());
}

json::array pvc_row(const json::value& o, Clock::time_point now) {
  std::string capacity = s(o, {"status", "capacity", "storage"});
  return {s(o, {"metadata", "name"}),
          volume_phase(o),
          s(o, {"spec", "volumeName"}),
          capacity,
          access_modes(o, {"status", "accessModes"}),
          s(o, {"spec", "storageClassName"}),
          "<unset>",
          age(o, now),
          s(o, {"spec", "volumeMode"}, "Filesystem")};
}

// printers.go printPersistentVolume: CLAIM is namespace/name.
json::array pv_row(const json::value& o, Clock::time_point now) {
  std::string claim;
  if (const auto* ref = value_at(o, {"spec", "claimRef"}); ref && ref->is_object())
    claim = s(*ref, {"namespace"}) + "/" + s(*ref, {"name"});
  return {s(o, {"metadata", "name"}),
          s(o, {"spec", "capacity", "storage"}),
          access_modes(o, {"spec", "accessModes"}),
          s(o, {"spec", "persistentVolumeReclaimPolicy"}, "Retain"),
          volume_phase(o),
          claim,
          s(o, {"spec", "storageClassName"}),
          "<unset>",
          s(o, {"status", "reason"}),
          age(o, now),
          s(o, {"spec", "volumeMode"}, "Filesystem")};
}

// printers.go printStorageClass: the default class is marked "(default)".
json::array storage_class_row(const json::value& o, Clock::time_point now) {
  std::string name = s(o, {"metadata", "name"});
  if (s(o, {"metadata", "annotations", "storageclass.kubernetes.io/is-default-class"}) == "true") name += " (default)";
  const auto* expand = value_at(o, {"allowVolumeExpansion"});
  return {name,
          s(o, {"provisioner"}),
          s(o, {"reclaimPolicy"}, "Delete"),
          s(o, {"volumeBindingMode"}, "Immediate"),
          expand && expand->is_bool() && expand->as_bool() ? "true" : "false",
          age(o, now)};
}

// loadBalancerStatusStringer / ingressLoadBalancerStatusStringer: the sorted set of each
// status.loadBalancer.ingress entry's IP, else its hostname (not clipped: the server's table is
// printed wide).
std::vector<std::string> load_balancer_addresses(const json::value& o) {
  std::set<std::string> addresses;
  if (const auto* lb = value_at(o, {"status", "loadBalancer", "ingress"}); lb && lb->is_array())
    for (const auto& i : lb->as_array()) {
      if (!s(i, {"ip"}).empty())
        addresses.insert(s(i, {"ip"}));
      else if (!s(i, {"hostname"}).empty())
        addresses.insert(s(i, {"hostname"}));
    }
  return {addresses.begin(), addresses.end()};
}

// getServiceExternalIP: the external IPs (ClusterIP, NodePort), the load balancer's addresses then
// the external IPs (<pending> when neither), the external name.
std::string service_external_ip(const json::value& o) {
  std::vector<std::string> external;
  if (const auto* ips = value_at(o, {"spec", "externalIPs"}); ips && ips->is_array())
    for (const auto& ip : ips->as_array()) external.emplace_back(ip.is_string() ? ip.as_string() : "");
  const std::string type = s(o, {"spec", "type"});
  if (type == "ClusterIP" || type == "NodePort") return external.empty() ? "<none>" : text::join(external, ",");
  if (type == "LoadBalancer") {
    std::vector<std::string> all = load_balancer_addresses(o);
    if (all.empty() && external.empty()) return "<pending>";
    all.insert(all.end(), external.begin(), external.end());
    return text::join(all, ",");
  }
  if (type == "ExternalName") return s(o, {"spec", "externalName"});
  return "<unknown>";
}

json::array service_row(const json::value& o, Clock::time_point now) {
  std::vector<std::string> ports;
  if (const auto* ps = value_at(o, {"spec", "ports"}); ps && ps->is_array())
    for (const auto& p : ps->as_array()) {
      std::string x = std::to_string(n(p, {"port"}));
      if (n(p, {"nodePort"})) x += ":" + std::to_string(n(p, {"nodePort"}));
      x += "/" + s(p, {"protocol"}, "TCP");
      ports.push_back(x);
    }
  return {s(o, {"metadata", "name"}),
          s(o, {"spec", "type"}, "ClusterIP"),
          none_if_empty(s(o, {"spec", "clusterIP"})),
          service_external_ip(o),
          ports.empty() ? "<none>" : text::join(ports, ","),
          age(o, now),
          format_labels(value_at(o, {"spec", "selector"}))};  // labels.FormatLabels
}

// printIngress: CLASS (<none>), HOSTS (formatHosts: the first three set, "*" when none, then
// "+ N more..." counting every rule past three), ADDRESS (ingressLoadBalancerStatusStringer), PORTS (formatPorts: 80,
// or 80, 443 with TLS).
json::array ingress_row(const json::value& o, Clock::time_point now) {
  std::vector<std::string> hosts;
  bool more = false;
  std::size_t rules = 0;
  if (const auto* rs = value_at(o, {"spec", "rules"}); rs && rs->is_array())
    for (const auto& r : rs->as_array()) {
      ++rules;
      if (hosts.size() == 3) more = true;
      if (!more && !s(r, {"host"}).empty()) hosts.push_back(s(r, {"host"}));
    }
  std::string host_text = hosts.empty() ? "*" : text::join(hosts, ",");
  if (!hosts.empty() && more) host_text += fmt::format(" + {} more...", rules - 3);
  const std::string address = text::join(load_balancer_addresses(o), ",");
  const auto* tls = value_at(o, {"spec", "tls"});
  return {s(o, {"metadata", "name"}),
          s(o, {"spec", "ingressClassName"}, "<none>"),
          host_text,
          address,
          tls && tls->is_array() && !tls->as_array().empty() ? "80, 443" : "80",
          age(o, now)};
}

// printIngressClass: PARAMETERS kind[.apiGroup]/name, <none> without parameters.
json::array ingress_class_row(const json::value& o, Clock::time_point now) {
  std::string params = "<none>";
  if (const auto* p = value_at(o, {"spec", "parameters"}); p && p->is_object()) {
    params = s(*p, {"kind"});
    if (const auto* g = value_at(*p, {"apiGroup"}); g && g->is_string()) params += "." + std::string(g->as_string());
    params += "/" + s(*p, {"name"});
  }
  return {s(o, {"metadata", "name"}), s(o, {"spec", "controller"}), params, age(o, now)};
}

// printEvent (always wide, as the server prints): LAST SEEN and FIRST SEEN from the legacy
// timestamps, else the event time (a series: its last observation and count), the object as
// kind/name, SUBOBJECT the field path, SOURCE component and host (else the reporting controller
// and instance).
json::array event_row(const json::value& o, Clock::time_point now) {
  const auto since = [&](std::string_view text) -> std::optional<std::string> {
    Clock::time_point at{};
    if (text.empty() || !parse_rfc3339(std::string(text), at)) return std::nullopt;
    return human_duration(now - at);
  };
  std::string first = since(s(o, {"firstTimestamp"})).value_or(since(s(o, {"eventTime"})).value_or("<unknown>"));
  std::string last = since(s(o, {"lastTimestamp"})).value_or(first);
  std::int64_t count = n(o, {"count"});
  if (const auto* series = value_at(o, {"series"}); series && series->is_object()) {
    last = since(s(o, {"series", "lastObservedTime"})).value_or("<unknown>");
    count = n(o, {"series", "count"});
  } else if (count == 0) {
    count = 1;  // a singleton of the new API has none
  }
  std::string kind = s(o, {"involvedObject", "kind"});
  for (auto& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string name = s(o, {"involvedObject", "name"});
  const auto first_set = [](std::string a, const std::string& b) { return a.empty() ? b : a; };
  const std::string component = first_set(s(o, {"source", "component"}), s(o, {"reportingComponent"}));
  const std::string instance = first_set(s(o, {"source", "host"}), s(o, {"reportingInstance"}));
  std::string message = s(o, {"message"});
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  while (!message.empty() && blank(message.back())) message.pop_back();
  message.erase(0, std::find_if_not(message.begin(), message.end(), blank) - message.begin());
  return {last,
          s(o, {"type"}),
          s(o, {"reason"}),
          name.empty() ? kind : kind + "/" + name,
          s(o, {"involvedObject", "fieldPath"}),
          instance.empty() ? component : component + ", " + instance,
          message,
          first,
          count,
          s(o, {"metadata", "name"})};
}

// The number of members of an object-valued field (0 when absent or not an object).
std::int64_t size_of(const json::value& o, std::initializer_list<std::string_view> path) {
  const auto* v = value_at(o, path);
  return v && v->is_object() ? static_cast<std::int64_t>(v->as_object().size()) : 0;
}

// printResourceQuota: each resource of status.hard in name order, "name: used/hard", in the Limit
// column when its name is "limits.<...>", else in Request; a quantity not there reads "0".
json::array resource_quota_row(const json::value& o, Clock::time_point now) {
  std::vector<std::string> names;
  if (const auto* hard = value_at(o, {"status", "hard"}); hard && hard->is_object())
    for (const auto& kv : hard->as_object()) names.emplace_back(kv.key());
  std::sort(names.begin(), names.end());
  std::vector<std::string> request, limit;
  for (const auto& name : names) {
    const auto quantity = [&](std::string_view field) {
      const auto* v = value_at(o, {"status", field, name});
      return v && v->is_string() && !v->as_string().empty() ? std::string(v->as_string()) : std::string("0");
    };
    (name.starts_with("limits.") ? limit : request).push_back(name + ": " + quantity("used") + "/" + quantity("hard"));
  }
  return {s(o, {"metadata", "name"}), age(o, now), text::join(request, ", "), text::join(limit, ", ")};
}

// printRoleBinding / printClusterRoleBinding (rbac.SubjectsStrings: users, groups, and service
// accounts as namespace/name; other kinds shown nowhere).
json::array role_binding_row(const json::value& o, Clock::time_point now) {
  std::vector<std::string> users, groups, sas;
  if (const auto* subjects = value_at(o, {"subjects"}); subjects && subjects->is_array())
    for (const auto& sub : subjects->as_array()) {
      const std::string kind = s(sub, {"kind"});
      if (kind == "ServiceAccount")
        sas.push_back(s(sub, {"namespace"}) + "/" + s(sub, {"name"}));
      else if (kind == "User")
        users.push_back(s(sub, {"name"}));
      else if (kind == "Group")
        groups.push_back(s(sub, {"name"}));
    }
  return {s(o, {"metadata", "name"}),
          s(o, {"roleRef", "kind"}) + "/" + s(o, {"roleRef", "name"}),
          age(o, now),
          text::join(users, ", "),
          text::join(groups, ", "),
          text::join(sas, ", ")};
}

}  // namespace

json::object to_table(const ResourceType& t, const std::vector<std::shared_ptr<const json::object>>& items,
                      Clock::time_point now, IncludeObject include) {
  std::vector<Column> cols;
  std::function<json::array(const json::value&, Clock::time_point)> row;
  std::vector<std::string> owned;  // names and types of printer columns, which `cols` points into
  const bool core = t.group.empty();
  if (core && t.resource == "nodes") {
    cols = {{"Name", "string", 0, "name"},   {"Status", "string", 0},
            {"Roles", "string", 0},          {"Age", "string", 0},
            {"Version", "string", 0},        {"Internal-IP", "string", 1},
            {"External-IP", "string", 1},    {"OS-Image", "string", 1},
            {"Kernel-Version", "string", 1}, {"Container-Runtime", "string", 1}};
    row = node_row;
  } else if (core && t.resource == "pods") {
    cols = {{"Name", "string", 0, "name"},
            {"Ready", "string", 0},
            {"Status", "string", 0},
            {"Restarts", "string", 0},
            {"Age", "string", 0},
            {"IP", "string", 1},
            {"Node", "string", 1},
            {"Nominated Node", "string", 1},
            {"Readiness Gates", "string", 1}};
    row = pod_row;
  } else if (t.group == "apps" && t.resource == "deployments") {
    cols = {{"Name", "string", 0, "name"}, {"Ready", "string", 0},   {"Up-to-date", "string", 0},
            {"Available", "string", 0},    {"Age", "string", 0},     {"Containers", "string", 1},
            {"Images", "string", 1},       {"Selector", "string", 1}};
    row = deployment_row;
  } else if (t.group == "apps" && t.resource == "replicasets") {
    cols = {{"Name", "string", 0, "name"}, {"Desired", "integer", 0}, {"Current", "integer", 0},
            {"Ready", "integer", 0},       {"Age", "string", 0},      {"Containers", "string", 1},
            {"Images", "string", 1},       {"Selector", "string", 1}};
    row = replicaset_row;
  } else if (t.group == "apps" && t.resource == "daemonsets") {
    cols = {{"Name", "string", 0, "name"},  {"Desired", "integer", 0},    {"Current", "integer", 0},
            {"Ready", "integer", 0},        {"Up-to-date", "integer", 0}, {"Available", "integer", 0},
            {"Node Selector", "string", 0}, {"Age", "string", 0},         {"Containers", "string", 1},
            {"Images", "string", 1},        {"Selector", "string", 1}};
    row = daemonset_row;
  } else if (t.group == "apps" && t.resource == "statefulsets") {
    cols = {{"Name", "string", 0, "name"},
            {"Ready", "string", 0},
            {"Age", "string", 0},
            {"Containers", "string", 1},
            {"Images", "string", 1}};
    row = statefulset_row;
  } else if (t.group == "apps" && t.resource == "controllerrevisions") {
    cols = {
        {"Name", "string", 0, "name"}, {"Controller", "string", 0}, {"Revision", "string", 0}, {"Age", "string", 0}};
    row = controllerrevision_row;
  } else if (t.group == "batch" && t.resource == "jobs") {
    cols = {{"Name", "string", 0, "name"}, {"Status", "string", 0},  {"Completions", "string", 0},
            {"Duration", "string", 0},     {"Age", "string", 0},     {"Containers", "string", 1},
            {"Images", "string", 1},       {"Selector", "string", 1}};
    row = job_row;
  } else if (t.group == "coordination.k8s.io" && t.resource == "leases") {
    cols = {{"Name", "string", 0, "name"}, {"Holder", "string", 0}, {"Age", "string", 0}};  // printLease
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      return {s(o, {"metadata", "name"}), s(o, {"spec", "holderIdentity"}), age(o, now)};
    };
  } else if (t.group == "networking.k8s.io" && t.resource == "networkpolicies") {
    cols = {{"Name", "string", 0, "name"}, {"Pod-Selector", "string", 0}, {"Age", "string", 0}};  // printNetworkPolicy
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      const json::value* sel = value_at(o, {"spec", "podSelector"});
      static const json::value kEmpty = json::object{};  // a struct: never nil
      return {s(o, {"metadata", "name"}), selector_text(sel ? sel : &kEmpty), age(o, now)};
    };
  } else if (t.group == "networking.k8s.io" && t.resource == "ingresses") {
    cols = {{"Name", "string", 0, "name"}, {"Class", "string", 0}, {"Hosts", "string", 0},
            {"Address", "string", 0},      {"Ports", "string", 0}, {"Age", "string", 0}};
    row = ingress_row;
  } else if (t.group == "networking.k8s.io" && t.resource == "ingressclasses") {
    cols = {
        {"Name", "string", 0, "name"}, {"Controller", "string", 0}, {"Parameters", "string", 0}, {"Age", "string", 0}};
    row = ingress_class_row;
  } else if (t.group == "node.k8s.io" && t.resource == "runtimeclasses") {
    cols = {{"Name", "string", 0, "name"}, {"Handler", "string", 0}, {"Age", "string", 0}};  // printRuntimeClass
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      return {s(o, {"metadata", "name"}), s(o, {"handler"}), age(o, now)};
    };
  } else if (t.group == "batch" && t.resource == "cronjobs") {
    cols = {{"Name", "string", 0, "name"}, {"Schedule", "string", 0},   {"Timezone", "string", 0},
            {"Suspend", "boolean", 0},     {"Active", "integer", 0},    {"Last Schedule", "string", 0},
            {"Age", "string", 0},          {"Containers", "string", 1}, {"Images", "string", 1},
            {"Selector", "string", 1}};
    row = cronjob_row;
  } else if (core && t.resource == "persistentvolumeclaims") {
    cols = {{"Name", "string", 0, "name"},
            {"Status", "string", 0},
            {"Volume", "string", 0},
            {"Capacity", "string", 0},
            {"Access Modes", "string", 0},
            {"StorageClass", "string", 0},
            {"VolumeAttributesClass", "string", 0},
            {"Age", "string", 0},
            {"VolumeMode", "string", 1}};
    row = pvc_row;
  } else if (core && t.resource == "persistentvolumes") {
    cols = {{"Name", "string", 0, "name"}, {"Capacity", "string", 0},
            {"Access Modes", "string", 0}, {"Reclaim Policy", "string", 0},
            {"Status", "string", 0},       {"Claim", "string", 0},
            {"StorageClass", "string", 0}, {"VolumeAttributesClass", "string", 0},
            {"Reason", "string", 0},       {"Age", "string", 0},
            {"VolumeMode", "string", 1}};
    row = pv_row;
  } else if (t.group == "storage.k8s.io" && t.resource == "storageclasses") {
    cols = {{"Name", "string", 0, "name"},      {"Provisioner", "string", 0},          {"ReclaimPolicy", "string", 0},
            {"VolumeBindingMode", "string", 0}, {"AllowVolumeExpansion", "string", 0}, {"Age", "string", 0}};
    row = storage_class_row;
  } else if (core && t.resource == "services") {
    cols = {{"Name", "string", 0, "name"}, {"Type", "string", 0},    {"Cluster-IP", "string", 0},
            {"External-IP", "string", 0},  {"Port(s)", "string", 0}, {"Age", "string", 0},
            {"Selector", "string", 1}};
    row = service_row;
  } else if (t.group == "storage.k8s.io" && t.resource == "csidrivers") {
    cols = {{"Name", "string", 0, "name"},    {"AttachRequired", "boolean", 0},
            {"PodInfoOnMount", "boolean", 0}, {"StorageCapacity", "boolean", 0},
            {"TokenRequests", "string", 0},   {"RequiresRepublish", "boolean", 0},
            {"Modes", "string", 0},           {"Age", "string", 0}};
    row = [](const json::value& o, Clock::time_point now) -> json::array {  // printCSIDriver
      const auto flag = [&](std::string_view k, bool dflt) {
        const json::value* v = value_at(o, {"spec", k});
        return v && v->is_bool() ? v->as_bool() : dflt;
      };
      std::vector<std::string> modes, audiences;
      if (const auto* m = value_at(o, {"spec", "volumeLifecycleModes"}); m && m->is_array())
        for (const auto& x : m->as_array()) modes.emplace_back(x.is_string() ? x.as_string() : "");
      std::string tokens = "<unset>";
      if (const auto* tr = value_at(o, {"spec", "tokenRequests"}); tr && tr->is_array()) {
        for (const auto& x : tr->as_array()) audiences.push_back(s(x, {"audience"}));
        tokens = text::join(audiences, ",");
      }
      return {s(o, {"metadata", "name"}),
              flag("attachRequired", true),
              flag("podInfoOnMount", false),
              flag("storageCapacity", false),
              tokens,
              flag("requiresRepublish", false),
              modes.empty() ? "<none>" : text::join(modes, ","),
              age(o, now)};
    };
  } else if (core && t.resource == "componentstatuses") {
    cols = {{"Name", "string", 0, "name"}, {"Status", "string", 0}, {"Message", "string", 0}, {"Error", "string", 0}};
    row = [](const json::value& o, Clock::time_point) -> json::array {  // printComponentStatus
      std::string status = "Unknown", message, error;
      if (const auto* cs = value_at(o, {"conditions"}); cs && cs->is_array())
        for (const auto& c : cs->as_array())
          if (s(c, {"type"}) == "Healthy") {
            status = s(c, {"status"}) == "True" ? "Healthy" : "Unhealthy";
            message = s(c, {"message"});
            error = s(c, {"error"});
            break;
          }
      return {s(o, {"metadata", "name"}), status, message, error};
    };
  } else if (core && t.resource == "podtemplates") {
    cols = {{"Name", "string", 0, "name"},
            {"Containers", "string", 0},
            {"Images", "string", 0},
            {"Pod Labels", "string", 0}};
    row = podtemplate_row;
  } else if (core && t.resource == "events") {
    cols = {{"Last Seen", "string", 0},   {"Type", "string", 0},       {"Reason", "string", 0},
            {"Object", "string", 0},      {"Subobject", "string", 1},  {"Source", "string", 1},
            {"Message", "string", 0},     {"First Seen", "string", 1}, {"Count", "string", 1},
            {"Name", "string", 1, "name"}};
    row = event_row;
  } else if (core && t.resource == "namespaces") {
    cols = {{"Name", "string", 0, "name"}, {"Status", "string", 0}, {"Age", "string", 0}};
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      return {s(o, {"metadata", "name"}), s(o, {"status", "phase"}, "Active"), age(o, now)};
    };
  } else if (t.schema && !t.schema->printer_columns.empty()) {
    // A CRD's additionalPrinterColumns (customresource/tableconvertor): NAME, then each column's
    // JSONPath; a date is shown as an age, a missing value as an empty cell.
    const auto& pc = t.schema->printer_columns;
    owned.reserve(pc.size() * 2);
    cols = {{"Name", "string", 0, "name"}};
    for (const auto& c : pc) {
      const json::object* o = c.is_object() ? &c.as_object() : nullptr;
      owned.push_back(o ? s(c, {"name"}) : "");
      const char* name = owned.back().c_str();
      owned.push_back(o ? s(c, {"type"}) : "");
      const int prio = o ? static_cast<int>(n(c, {"priority"})) : 0;
      cols.push_back({name, owned.back().c_str(), prio});
    }
    row = [&pc](const json::value& o, Clock::time_point now) -> json::array {
      json::array cells{s(o, {"metadata", "name"})};
      for (const auto& c : pc) {
        const std::string type = s(c, {"type"});
        const auto found = crd::json_path(o, s(c, {"jsonPath"}));
        const json::value* v = found.empty() ? nullptr : found.front();
        if (!v || v->is_null()) {
          cells.emplace_back(nullptr);
        } else if (type == "date") {
          Clock::time_point at{};
          if (!v->is_string())
            cells.emplace_back(nullptr);
          else
            cells.emplace_back(parse_rfc3339(std::string(v->as_string()), at) ? human_duration(now - at) : "<invalid>");
        } else if (type == "string") {
          cells.emplace_back(v->is_string() ? std::string(v->as_string()) : json::serialize(*v));
        } else if ((type == "integer" || type == "number") && v->is_number()) {
          // cellForJSONValue: an integer column truncates a float, a number column widens an int.
          const double d = v->to_number<double>();
          cells.push_back(type == "integer" ? json::value(static_cast<std::int64_t>(d)) : json::value(d));
        } else if (type == "boolean" && v->is_bool()) {
          cells.push_back(*v);
        } else {
          cells.emplace_back(nullptr);
        }
      }
      return cells;
    };
  } else if (t.group == "policy" && t.resource == "poddisruptionbudgets") {
    cols = {{"Name", "string", 0, "name"},
            {"Min Available", "string", 0},
            {"Max Unavailable", "string", 0},
            {"Allowed Disruptions", "integer", 0},
            {"Age", "string", 0}};
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      // printPodDisruptionBudget: an int-or-string, or N/A.
      auto field = [&](std::string_view key) -> std::string {
        const auto* v = value_at(o, {"spec", key});
        if (!v || v->is_null()) return "N/A";
        return v->is_string() ? std::string(v->as_string()) : std::to_string(n(o, {"spec", key}));
      };
      return {s(o, {"metadata", "name"}), field("minAvailable"), field("maxUnavailable"),
              n(o, {"status", "disruptionsAllowed"}), age(o, now)};
    };
  } else if (core && t.resource == "endpoints") {
    cols = {{"Name", "string", 0, "name"}, {"Endpoints", "string", 0}, {"Age", "string", 0}};
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      return {s(o, {"metadata", "name"}), endpoints_text(o), age(o, now)};
    };
  } else if (t.group == "discovery.k8s.io" && t.resource == "endpointslices") {
    cols = {{"Name", "string", 0, "name"},
            {"AddressType", "string", 0},
            {"Ports", "string", 0},
            {"Endpoints", "string", 0},
            {"Age", "string", 0}};
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      // formatDiscoveryPorts / formatDiscoveryEndpoints: the first three, then "+ N more...".
      std::vector<std::string> ports, addresses;
      if (const auto* ps = value_at(o, {"ports"}); ps && ps->is_array())
        for (const auto& p : ps->as_array()) {
          if (const auto* n = value_at(p, {"port"}); n && n->is_int64())
            ports.push_back(std::to_string(n->as_int64()));
          else if (const auto* nm = value_at(p, {"name"}); nm && nm->is_string())
            ports.emplace_back(nm->as_string());
          else
            ports.emplace_back("*");
        }
      if (const auto* es = value_at(o, {"endpoints"}); es && es->is_array())
        for (const auto& e : es->as_array())
          if (const auto* as = value_at(e, {"addresses"}); as && as->is_array())
            for (const auto& a : as->as_array())
              if (a.is_string()) addresses.emplace_back(a.as_string());
      return {s(o, {"metadata", "name"}), s(o, {"addressType"}), first_three(ports, "<unset>"),
              first_three(addresses, "<unset>"), age(o, now)};
    };
  } else if (core && t.resource == "configmaps") {
    cols = {{"Name", "string", 0, "name"}, {"Data", "string", 0}, {"Age", "string", 0}};
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      return {s(o, {"metadata", "name"}), size_of(o, {"data"}) + size_of(o, {"binaryData"}), age(o, now)};
    };
  } else if (core && t.resource == "secrets") {
    cols = {{"Name", "string", 0, "name"}, {"Type", "string", 0}, {"Data", "string", 0}, {"Age", "string", 0}};
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      return {s(o, {"metadata", "name"}), s(o, {"type"}), size_of(o, {"data"}), age(o, now)};
    };
  } else if (core && t.resource == "serviceaccounts") {
    cols = {{"Name", "string", 0, "name"}, {"Secrets", "string", 0}, {"Age", "string", 0}};
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      const auto* secrets = value_at(o, {"secrets"});
      return {s(o, {"metadata", "name"}),
              secrets && secrets->is_array() ? static_cast<std::int64_t>(secrets->as_array().size()) : 0, age(o, now)};
    };
  } else if (core && t.resource == "resourcequotas") {
    cols = {{"Name", "string", 0, "name"}, {"Age", "string", 0}, {"Request", "string", 0}, {"Limit", "string", 0}};
    row = resource_quota_row;
  } else if (t.group == "rbac.authorization.k8s.io" &&
             (t.resource == "rolebindings" || t.resource == "clusterrolebindings")) {
    cols = {{"Name", "string", 0, "name"}, {"Role", "string", 0},   {"Age", "string", 0},
            {"Users", "string", 1},        {"Groups", "string", 1}, {"ServiceAccounts", "string", 1}};
    row = role_binding_row;
  } else if (t.group == "scheduling.k8s.io" && t.resource == "priorityclasses") {
    cols = {{"Name", "string", 0, "name"},
            {"Value", "integer", 0},
            {"Global-Default", "boolean", 0},
            {"Age", "string", 0},
            {"PreemptionPolicy", "string", 0}};
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      const auto* global = value_at(o, {"globalDefault"});
      return {s(o, {"metadata", "name"}), n(o, {"value"}), global && global->is_bool() && global->as_bool(),
              age(o, now), s(o, {"preemptionPolicy"})};
    };
  } else if ((t.group == "apiextensions.k8s.io" && t.resource == "customresourcedefinitions") ||
             is_builtin_group(t.group)) {
    // A built-in kind without a printer of its own (LimitRange, Role, ClusterRole) gets the default
    // table (rest.NewDefaultTableConvertor): NAME, CREATED AT; so does a CRD (its own columns).
    cols = {{"Name", "string", 0, "name"}, {"Created At", "date", 0}};
    row = [](const json::value& o, Clock::time_point) -> json::array {
      return {s(o, {"metadata", "name"}), s(o, {"metadata", "creationTimestamp"})};
    };
  } else {
    cols = {{"Name", "string", 0, "name"}, {"Age", "date", 0}};
    row = [](const json::value& o, Clock::time_point now) -> json::array {
      return {s(o, {"metadata", "name"}), age(o, now)};
    };
  }
  json::array defs;
  for (const auto& c : cols) {
    json::object d{
        {"name", c.name}, {"type", c.type}, {"format", c.format}, {"description", ""}, {"priority", c.priority}};
    defs.push_back(std::move(d));
  }
  json::array rows;
  for (const auto& item : items) {
    json::value v(*item);
    json::object r{{"cells", row(v, now)}};
    if (include == IncludeObject::Object) {
      r["object"] = *item;
    } else if (include == IncludeObject::Metadata) {
      r["object"] = json::object{{"kind", "PartialObjectMetadata"},
                                 {"apiVersion", "meta.k8s.io/v1"},
                                 {"metadata", item->contains("metadata") ? item->at("metadata") : json::object{}}};
    }
    rows.push_back(std::move(r));
  }
  return json::object{{"kind", "Table"},
                      {"apiVersion", "meta.k8s.io/v1"},
                      {"metadata", json::object{}},
                      {"columnDefinitions", std::move(defs)},
                      {"rows", std::move(rows)}};
}

}  // namespace gpupool::embedded
