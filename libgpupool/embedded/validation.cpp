#include "embedded/validation.hpp"

#include <set>

#include <fmt/format.h>

#include "gpupool/names.hpp"

namespace gpupool::embedded {

std::vector<ResourceType> builtin_types(const std::string& mpijob_version) {
  auto core = [](std::string res, std::string kind, std::string singular, bool ns, bool status,
                 std::vector<std::string> short_names, std::vector<std::string> cats = {}) {
    ResourceType t;
    t.group = "";
    t.version = "v1";
    t.resource = std::move(res);
    t.kind = std::move(kind);
    t.singular = std::move(singular);
    t.namespaced = ns;
    t.has_status = status;
    t.short_names = std::move(short_names);
    t.categories = std::move(cats);
    return t;
  };
  std::vector<ResourceType> out{
      core("namespaces", "Namespace", "namespace", false, true, {"ns"}),
      core("nodes", "Node", "node", false, true, {"no"}),
      core("pods", "Pod", "pod", true, true, {"po"}, {"all"}),
      core("services", "Service", "service", true, true, {"svc"}, {"all"}),
      core("persistentvolumeclaims", "PersistentVolumeClaim", "persistentvolumeclaim", true, true, {"pvc"}),
      core("persistentvolumes", "PersistentVolume", "persistentvolume", false, true, {"pv"}),
      core("resourcequotas", "ResourceQuota", "resourcequota", true, true, {"quota"}),
      core("events", "Event", "event", true, false, {"ev"}),
      core("configmaps", "ConfigMap", "configmap", true, false, {"cm"}),
      core("secrets", "Secret", "secret", true, false, {}),
      core("serviceaccounts", "ServiceAccount", "serviceaccount", true, false, {"sa"}),
      core("endpoints", "Endpoints", "endpoints", true, false, {"ep"}),
  };
  auto typed = [&](std::string group, std::string version, std::string res, std::string kind, std::string singular,
                   bool ns, std::vector<std::string> short_names, std::vector<std::string> cats = {}) {
    ResourceType t = core(std::move(res), std::move(kind), std::move(singular), ns, true, std::move(short_names),
                          std::move(cats));
    t.group = std::move(group);
    t.version = std::move(version);
    return t;
  };
  auto deploy = typed("apps", "v1", "deployments", "Deployment", "deployment", true, {"deploy"}, {"all"});
  deploy.has_scale = true;
  auto rs = typed("apps", "v1", "replicasets", "ReplicaSet", "replicaset", true, {"rs"}, {"all"});
  rs.has_scale = true;
  auto job = typed("batch", "v1", "jobs", "Job", "job", true, {}, {"all"});
  job.orphan_by_default = true;  // batch/v1 Job's DefaultGarbageCollectionPolicy is OrphanDependents
  out.push_back(std::move(deploy));
  out.push_back(std::move(rs));
  out.push_back(std::move(job));
  auto ev = typed("events.k8s.io", "v1", "events", "Event", "event", true, {"ev"});
  ev.has_status = false;
  out.push_back(std::move(ev));
  out.push_back(typed("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                      "customresourcedefinition", false, {"crd", "crds"}));
  out.push_back(typed("kubeflow.org", mpijob_version, "mpijobs", "MPIJob", "mpijob", true, {}));
  out.push_back(typed("kubeflow.org", "v1", "tfjobs", "TFJob", "tfjob", true, {}));
  out.push_back(typed("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", "pytorchjob", true, {}));
  return out;
}

namespace {

using Causes = std::vector<StatusCause>;

std::string str(const json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key); v && v->is_string()) return std::string(v->as_string());
  return {};
}

void add_errors(Causes& causes, const std::vector<std::string>& errs, const std::string& field,
                const std::string& value) {
  // field.ErrorList: `Invalid value: "<value>": <detail>`
  for (const auto& e : errs)
    causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: \"{}\": {}", value, e), field});
}

void validate_name(const ResourceType& t, const std::string& name, Causes& causes) {
  if (name.empty()) return;
  if (t.resource == "namespaces") add_errors(causes, dns1123_label_errors(name), "metadata.name", name);
  else if (t.resource == "services") add_errors(causes, dns1035_label_errors(name), "metadata.name", name);
  else if (t.resource == "nodes" || t.group == "kubeflow.org" || t.resource == "events") {
    if (name.find('/') != std::string::npos || name == "." || name == "..")
      causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: \"{}\": may not contain '/'", name),
                        "metadata.name"});
  } else {
    add_errors(causes, dns1123_subdomain_errors(name), "metadata.name", name);
  }
}

void validate_labels(const json::object& md, Causes& causes) {
  if (const auto* l = md.if_contains("labels"); l && l->is_object())
    for (const auto& [k, v] : l->as_object()) {
      add_errors(causes, qualified_name_errors(k), "metadata.labels", std::string(k));
      const std::string val = v.is_string() ? std::string(v.as_string()) : "";
      add_errors(causes, label_value_errors(val), fmt::format("metadata.labels"), val);
    }
}

}  // namespace

void builtin_admission(AdmissionRequest& r) {
  if (!r.object || !r.type) return;
  json::object& obj = *r.object;
  const ResourceType& t = *r.type;
  auto& mdv = obj["metadata"];
  if (!mdv.is_object()) mdv = json::object{};
  auto& md = mdv.as_object();
  const std::string name = str(md, "name");
  Causes causes;
  if (r.operation == AdmissionRequest::Operation::Create) validate_name(t, name, causes);
  validate_labels(md, causes);
  if (!causes.empty()) throw StatusError::invalid(t, name, std::move(causes));
}

}  // namespace gpupool::embedded
