#include "embedded/validation.hpp"
#include "embedded/typecheck.hpp"

#include "embedded/admission.hpp"
#include "embedded/apply.hpp"
#include "embedded/base64.hpp"
#include "embedded/clock.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/crd_schema.hpp"
#include "embedded/schema.hpp"
#include "embedded/tls.hpp"
#include "embedded/validation_fields.hpp"
#include "embedded/validation_kinds.hpp"
#include "embedded/validation_networking.hpp"
#include "embedded/warnings.hpp"
#include "gpupool/resources.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "common/time_zone_file.hpp"
#include "gpupool/cron.hpp"
#include "gpupool/names.hpp"
#include "gpupool/quantity.hpp"
#include "gpupool/scheduling.hpp"

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
      core("limitranges", "LimitRange", "limitrange", true, false, {"limits"}),
      // A pod template kept for others to use (what a controller or a user's tool stamps pods from).
      core("podtemplates", "PodTemplate", "podtemplate", true, false, {}),
      // The legacy way to bind a pod (Api::serve_create, as pods/binding), never stored.
      core("bindings", "Binding", "binding", true, false, {}),
      // Computed on each read (Api::component_statuses), never stored.
      core("componentstatuses", "ComponentStatus", "componentstatus", false, false, {"cs"}),
  };
  auto typed = [&](std::string group, std::string version, std::string res, std::string kind, std::string singular,
                   bool ns, std::vector<std::string> short_names, std::vector<std::string> cats = {}) {
    ResourceType t =
        core(std::move(res), std::move(kind), std::move(singular), ns, true, std::move(short_names), std::move(cats));
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
  // apps/v1 DaemonSet (its controller: controller_daemonset.cpp) and the ControllerRevisions its
  // controller keeps its templates' history in (no status, no short name, no category).
  out.push_back(typed("apps", "v1", "daemonsets", "DaemonSet", "daemonset", true, {"ds"}, {"all"}));
  auto revisions = typed("apps", "v1", "controllerrevisions", "ControllerRevision", "controllerrevision", true, {});
  revisions.has_status = false;
  out.push_back(std::move(revisions));
  // apps/v1 StatefulSet (its controller: controller_statefulset.cpp), with the scale subresource
  // (kubectl scale sts).
  auto sts = typed("apps", "v1", "statefulsets", "StatefulSet", "statefulset", true, {"sts"}, {"all"});
  sts.has_scale = true;
  out.push_back(std::move(sts));
  out.push_back(std::move(job));
  // batch/v1 CronJob (its controller: controller_cronjob.cpp). Deleting one deletes its Jobs
  // (cronJobStrategy's DefaultGarbageCollectionPolicy for batch/v1: DeleteDependents).
  out.push_back(typed("batch", "v1", "cronjobs", "CronJob", "cronjob", true, {"cj"}, {"all"}));
  auto sc = typed("storage.k8s.io", "v1", "storageclasses", "StorageClass", "storageclass", false, {"sc"});
  sc.has_status = false;
  out.push_back(std::move(sc));
  // A CSI driver's registration (what the NFS and CephFS CSI charts install): stored and validated.
  auto csi = typed("storage.k8s.io", "v1", "csidrivers", "CSIDriver", "csidriver", false, {});
  csi.has_status = false;
  out.push_back(std::move(csi));
  auto ev = typed("events.k8s.io", "v1", "events", "Event", "event", true, {"ev"});
  ev.has_status = false;
  out.push_back(std::move(ev));
  // Admission and authorization objects (embedded/limitrange, priority, rbac).
  auto pc = typed("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", "priorityclass", false, {"pc"});
  pc.has_status = false;
  out.push_back(std::move(pc));
  out.push_back(
      typed("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", "poddisruptionbudget", true, {"pdb"}));
  // node.k8s.io/v1 RuntimeClass (the container runtime handler a pod names, e.g. the NVIDIA GPU
  // operator's `nvidia`): validated, and read by the RuntimeClass admission plugin (admission.cpp).
  auto rc = typed("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", "runtimeclass", false, {});
  rc.has_status = false;
  out.push_back(std::move(rc));
  // networking.k8s.io/v1 NetworkPolicy, Ingress (with ingresses/status) and IngressClass: defaulted
  // and validated (embedded/validation_networking), acted on by no controller (a cluster's network
  // plugin and ingress controller do; kube-controller-manager has none for them).
  auto netpol = typed("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", "networkpolicy", true, {"netpol"});
  netpol.has_status = false;
  out.push_back(std::move(netpol));
  out.push_back(typed("networking.k8s.io", "v1", "ingresses", "Ingress", "ingress", true, {"ing"}));
  auto ingress_class = typed("networking.k8s.io", "v1", "ingressclasses", "IngressClass", "ingressclass", false, {});
  ingress_class.has_status = false;
  out.push_back(std::move(ingress_class));
  // coordination.k8s.io/v1 Lease (leader election, node heartbeats): stored and validated only.
  auto lease = typed("coordination.k8s.io", "v1", "leases", "Lease", "lease", true, {});
  lease.has_status = false;
  out.push_back(std::move(lease));
  // The endpoints controller's slices (embedded/endpoints), which `kubectl describe service` reads.
  auto slices = typed("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", "endpointslice", true, {});
  slices.has_status = false;
  out.push_back(std::move(slices));
  for (auto [res, kind, ns] : {std::tuple{"roles", "Role", true}, std::tuple{"rolebindings", "RoleBinding", true},
                               std::tuple{"clusterroles", "ClusterRole", false},
                               std::tuple{"clusterrolebindings", "ClusterRoleBinding", false}}) {
    std::string singular = kind;
    for (auto& c : singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto r = typed("rbac.authorization.k8s.io", "v1", res, kind, singular, ns, {});
    r.has_status = false;
    out.push_back(std::move(r));
  }
  // Access reviews (embedded/rbac): answered on create, never stored.
  for (auto [res, kind] : {std::pair{"selfsubjectaccessreviews", "SelfSubjectAccessReview"},
                           std::pair{"selfsubjectrulesreviews", "SelfSubjectRulesReview"},
                           std::pair{"subjectaccessreviews", "SubjectAccessReview"}}) {
    std::string singular = kind;
    for (auto& c : singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto r = typed("authorization.k8s.io", "v1", res, kind, singular, false, {});
    r.has_status = false;
    out.push_back(std::move(r));
  }
  // `kubectl auth whoami` (embedded/api.cpp): answered on create, never stored.
  auto review =
      typed("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", "selfsubjectreview", false, {});
  review.has_status = false;
  out.push_back(std::move(review));
  auto crds = typed("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                    "customresourcedefinition", false, {"crd", "crds"});
  crds.categories = {"api-extensions"};
  out.push_back(std::move(crds));
  // The Kubeflow kinds as their operators' CRDs define them (installed by the server too).
  for (const auto& c : crd::kubeflow_crds(mpijob_version))
    if (auto k = crd::resource_type(*c, c)) out.push_back(std::move(*k));
  for (const auto& c : crd::kueue_crds())  // Kueue's kinds (the embedded Kueue, controller_kueue.cpp)
    if (auto k = crd::resource_type(*c, c)) out.push_back(std::move(*k));
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
  // field.ErrorList: `Invalid value: "<value>": <detail>`, the value quoted as Go's %q quotes it.
  for (const auto& e : errs)
    causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(value), e), field});
}

// The kind's name rule (ValidateObjectMeta's nameFn) on metadata.name, or with `prefix` on
// metadata.generateName, whose trailing dash is masked first (apimachinery maskTrailingDash).
void validate_name(const ResourceType& t, const std::string& name, Causes& causes, bool prefix = false) {
  if (name.empty()) return;
  const char* field = prefix ? "metadata.generateName" : "metadata.name";
  std::string checked = name;
  if (prefix && checked.size() > 1 && checked.back() == '-') checked.back() = 'a';
  auto add = [&](const std::vector<std::string>& errors) { add_errors(causes, errors, field, name); };
  if (t.resource == "namespaces" || (t.group == "apps" && t.resource == "statefulsets"))  // ValidateStatefulSetName
    add(dns1123_label_errors(checked));
  else if (t.resource == "services")
    add(dns1035_label_errors(checked));
  else if (t.group == "rbac.authorization.k8s.io")
    // rbac/validation ValidateRBACName: IsValidPathSegmentName, a generateName's too (unmasked).
    add(path_segment_errors(name));
  else if ((t.group == "policy" && t.resource == "poddisruptionbudgets") || (t.group.empty() && t.resource == "events"))
    // No rule of the strategy's (a core/v1 Event's: legacyValidateEvent alone): rest.BeforeCreate's
    // ValidateObjectMetaAccessor with path.ValidatePathSegmentName (a generateName:
    // IsValidPathSegmentPrefix, unmasked). (An events.k8s.io/v1 Event's strict rules: a subdomain.)
    add(path_segment_errors(name, prefix));
  else if (t.resource == "nodes") {
    if (checked.find('/') != std::string::npos || checked == "." || checked == "..")
      causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: \"{}\": may not contain '/'", name), field});
  } else {  // the rest, custom resources included (customResourceValidator: NameIsDNSSubdomain)
    add(dns1123_subdomain_errors(checked));
  }
}

// ValidateOwnerReferences. Go prints a pointer field of a reference as 0xc000000000 (FIDELITY.md,
// Go structs in messages).
void validate_owner_references(const json::object& md, Causes& causes) {
  const json::value* refs = md.if_contains("ownerReferences");
  auto go_ref = [](const json::object& r) {
    auto ptr = [&](std::string_view k) { return r.contains(k) && !r.at(k).is_null() ? "0xc000000000" : "nil"; };
    return fmt::format(
        "v1.OwnerReference{{APIVersion:{}, Kind:{}, Name:{}, UID:{}, Controller:(*bool)({}), "
        "BlockOwnerDeletion:(*bool)({})}}",
        go_quote(str(r, "apiVersion")), go_quote(str(r, "kind")), go_quote(str(r, "name")), go_quote(str(r, "uid")),
        ptr("controller"), ptr("blockOwnerDeletion"));
  };
  std::string first_controller;
  if (refs && refs->is_array())
    for (const auto& rv : refs->as_array()) {
      static const json::object kNone;
      const json::object& r = rv.is_object() ? rv.as_object() : kNone;
      // schema.FromAPIVersionAndKind: ParseGroupVersion leaves no version for "", "/", "g/" or
      // more than one slash.
      const std::string api = str(r, "apiVersion");
      const auto slashes = std::count(api.begin(), api.end(), '/');
      const std::string version = slashes == 0 ? api : slashes == 1 ? api.substr(api.find('/') + 1) : "";
      auto invalid = [&](const char* f, const std::string& v, std::string_view why) {
        causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(v), why),
                          std::string("metadata.ownerReferences.") + f});
      };
      if (version.empty()) invalid("apiVersion", api, "version must not be empty");
      if (str(r, "kind").empty()) invalid("kind", "", "kind must not be empty");
      if (str(r, "name").empty()) invalid("name", "", "name must not be empty");
      if (str(r, "uid").empty()) invalid("uid", "", "uid must not be empty");
      if (api == "v1" && str(r, "kind") == "Event")  // BannedOwners
        causes.push_back(
            {"FieldValueInvalid",
             fmt::format("Invalid value: {}: /v1, Kind=Event is disallowed from being an owner", go_ref(r)),
             "metadata.ownerReferences"});
      if (const json::value* c = r.if_contains("controller"); c && c->is_bool() && c->as_bool()) {
        const std::string mine = str(r, "kind") + "/" + str(r, "name");
        if (first_controller.empty()) {
          first_controller = mine;
        } else {
          std::string all = "[]v1.OwnerReference{";
          for (std::size_t i = 0; i < refs->as_array().size(); ++i)
            all += (i ? ", " : "") + go_ref(refs->as_array()[i].is_object() ? refs->as_array()[i].as_object() : kNone);
          all += "}";
          causes.push_back({"FieldValueInvalid",
                            fmt::format("Invalid value: {}: Only one reference can have Controller set to true. "
                                        "Found \"true\" in references for {} and {}",
                                        all, first_controller, mine),
                            "metadata.ownerReferences"});
        }
      }
    }
}

// ValidateFinalizers: each name, then the two that cannot go together.
void validate_finalizers(const json::object& md, Causes& causes) {
  const std::vector<std::string> names = fields::strings_at(md, "finalizers");
  for (const auto& name : names) add_errors(causes, qualified_name_errors(name), "metadata.finalizers", name);
  const auto has = [&](std::string_view f) { return std::find(names.begin(), names.end(), f) != names.end(); };
  if (has("orphan") && has("foregroundDeletion"))
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: finalizer orphan and foregroundDeletion cannot be both set",
                                  fields::go_strings(names)),
                      "metadata.finalizers"});
}

// core/validation's validateKubeFinalizerName (IsStandardFinalizerName) of `name` at `field`.
void kube_finalizer_name(const std::string& name, const std::string& field, Causes& causes) {
  if (name.find('/') == std::string::npos && name != "kubernetes" && name != "orphan" && name != "foregroundDeletion")
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: name is neither a standard finalizer name nor is it fully "
                                  "qualified",
                                  go_quote(name)),
                      field});
}

// validateKubeFinalizerName on each finalizer, which core/validation's ValidateObjectMeta and
// ValidateObjectMetaUpdate add to apimachinery's rules.
void validate_kube_finalizer_names(const json::object& md, Causes& causes) {
  const std::vector<std::string> names = fields::strings_at(md, "finalizers");
  for (std::size_t i = 0; i < names.size(); ++i)
    kube_finalizer_name(names[i], fmt::format("metadata.finalizers[{}]", i), causes);
}

}  // namespace

// ValidateObjectMeta's ValidateLabels and ValidateAnnotations (keys are qualified names, case
// aside; keys and values together at most 256 KiB). `at` is "metadata." for an object's own
// metadata, "spec.template." for a pod template's (ValidatePodTemplateSpec: sic, no "metadata").
void validate_labels_and_annotations(const json::object& md, const std::string& at, Causes& causes) {
  if (const auto* l = md.if_contains("labels"); l && l->is_object())
    for (const auto& [k, v] : l->as_object()) {
      add_errors(causes, qualified_name_errors(k), at + "labels", std::string(k));
      const std::string val = v.is_string() ? std::string(v.as_string()) : "";
      add_errors(causes, label_value_errors(val), at + "labels", val);
    }
  if (const auto* a = md.if_contains("annotations"); a && a->is_object()) {
    std::size_t size = 0;
    for (const auto& [k, v] : a->as_object()) {
      add_errors(causes, annotation_key_errors(k), at + "annotations", std::string(k));
      size += k.size() + (v.is_string() ? v.as_string().size() : 0);
    }
    if (size > kMaxAnnotationsBytes)
      causes.push_back({"FieldValueTooLong",
                        fmt::format("Too long: may not be more than {} bytes", kMaxAnnotationsBytes),
                        at + "annotations"});
  }
}

namespace {

// ValidateObjectMetaAccessor past the name and namespace (a create's name rules are the kind's,
// checked before this; an update's name and namespace are the stored object's): the generation,
// labels, annotations, owner references and finalizers. `kube`: core/validation's
// ValidateObjectMeta, which checks each finalizer with validateKubeFinalizerName too.
void object_meta_causes(const json::object& md, bool kube, Causes& causes) {
  if (const auto* g = md.if_contains("generation"); g && g->is_int64() && g->as_int64() < 0)
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: must be greater than or equal to 0", g->as_int64()),
                      "metadata.generation"});
  validate_labels_and_annotations(md, "metadata.", causes);
  validate_owner_references(md, causes);
  validate_finalizers(md, causes);
  if (kube) validate_kube_finalizer_names(md, causes);
}

// ValidateObjectMetaAccessorUpdate past what rest.BeforeUpdate has restored from the old object
// by then (resourceVersion, generation, uid, the creation and deletion times; the name and
// namespace are the URL's): no finalizer added to an object being deleted, then labels,
// annotations and owner references. `kube`: core/validation's ValidateObjectMetaUpdate, which
// adds validateKubeFinalizerName.
void object_meta_update_causes(const json::object& md, const json::object& old_md, bool kube, Causes& causes) {
  if (old_md.contains("deletionTimestamp")) {  // ValidateNoNewFinalizers (sets.String: sorted)
    const std::vector<std::string> before = fields::strings_at(old_md, "finalizers");
    std::set<std::string> extra;
    for (auto& f : fields::strings_at(md, "finalizers"))
      if (std::find(before.begin(), before.end(), f) == before.end()) extra.insert(f);
    if (!extra.empty())
      causes.push_back({"FieldValueForbidden",
                        fmt::format("Forbidden: no new finalizers can be added if the object is being deleted, found "
                                    "new finalizers {}",
                                    fields::go_strings({extra.begin(), extra.end()})),
                        "metadata.finalizers"});
  }
  // ValidateImmutableField of the deletion fields, which rest.BeforeUpdate restores only where
  // the old object has them (metadata.name and namespace are checked against the URL, uid and
  // creationTimestamp restored). field.Invalid prints a set time as time.Time's String, a set
  // grace period bare, a nil one "null".
  const auto differs = [&](std::string_view k) { return !same_value(md.if_contains(k), old_md.if_contains(k)); };
  if (differs("uid"))  // (types.UID, printed quoted)
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: field is immutable", go_quote(str(md, "uid"))), "metadata.uid"});
  if (differs("deletionTimestamp")) {
    const std::string value = go_time_text(str(md, "deletionTimestamp")).value_or("\"null\"");
    causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: field is immutable", value),
                      "metadata.deletionTimestamp"});
  }
  if (differs("deletionGracePeriodSeconds")) {
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: field is immutable",
                                  go_pointer_value(md.if_contains("deletionGracePeriodSeconds"))),
                      "metadata.deletionGracePeriodSeconds"});
  }
  validate_labels_and_annotations(md, "metadata.", causes);
  validate_owner_references(md, causes);
  if (kube) validate_kube_finalizer_names(md, causes);
}

json::object& obj_at(json::object& o, std::string_view key) {
  auto& v = o[key];
  if (!v.is_object()) v = json::object{};
  return v.as_object();
}
void set_default(json::object& o, std::string_view key, json::value v) {
  if (!o.contains(key) || o.at(key).is_null()) o[key] = std::move(v);
}

// A string field Go defaults when it is "" (absent, null or empty).
void default_if_empty(json::object& o, std::string_view key, std::string_view v) {
  const json::value* cur = o.if_contains(key);
  if (!cur || cur->is_null() || (cur->is_string() && cur->as_string().empty())) o[key] = v;
}

// The +default markers of the in-tree volume sources (core/v1 zz_generated.defaults.go,
// SetObjectDefaults_Pod): ISCSI's and RBD's and ScaleIO's strings when "", AzureDisk's pointers when
// unset. A source that does not decode as an object is validation's to refuse.
void default_legacy_volume_sources(json::object& source) {
  auto obj = [&](const char* key) -> json::object* {
    json::value* v = source.if_contains(key);
    return v && v->is_object() ? &v->as_object() : nullptr;
  };
  if (json::object* iscsi = obj("iscsi")) default_if_empty(*iscsi, "iscsiInterface", "default");
  if (json::object* rbd = obj("rbd")) {
    default_if_empty(*rbd, "pool", "rbd");
    default_if_empty(*rbd, "user", "admin");
    default_if_empty(*rbd, "keyring", "/etc/ceph/keyring");
  }
  if (json::object* disk = obj("azureDisk")) {
    set_default(*disk, "cachingMode", "ReadWrite");
    set_default(*disk, "fsType", "ext4");
    set_default(*disk, "readOnly", false);
    set_default(*disk, "kind", "Shared");
  }
  if (json::object* sio = obj("scaleIO")) {
    default_if_empty(*sio, "storageMode", "ThinProvisioned");
    default_if_empty(*sio, "fsType", "xfs");
  }
}

// A field Go defaults when it is zero (absent, null or 0).
void default_if_zero(json::object& o, std::string_view key, std::int64_t v) {
  const json::value* cur = o.if_contains(key);
  if (!cur || cur->is_null() || (cur->is_int64() && cur->as_int64() == 0)) o[key] = v;
}

// The handlers' defaults (SetDefaults_HTTPGetAction: path "/", scheme HTTP; a gRPC probe's
// service ""), and SetDefaults_Probe's counts for each probe of a container.
void default_handler(json::object& h) {
  if (auto* get = h.if_contains("httpGet"); get && get->is_object()) {
    auto& g = get->as_object();
    if (str(g, "path").empty()) g["path"] = "/";
    if (str(g, "scheme").empty()) g["scheme"] = "HTTP";
  }
  if (auto* grpc = h.if_contains("grpc"); grpc && grpc->is_object()) set_default(grpc->as_object(), "service", "");
}
void default_probes_and_hooks(json::object& c) {
  for (const char* which : {"livenessProbe", "readinessProbe", "startupProbe"})
    if (auto* p = c.if_contains(which); p && p->is_object()) {
      auto& po = p->as_object();
      default_if_zero(po, "timeoutSeconds", 1);
      default_if_zero(po, "periodSeconds", 10);
      default_if_zero(po, "successThreshold", 1);
      default_if_zero(po, "failureThreshold", 3);
      default_handler(po);
    }
  if (auto* lc = c.if_contains("lifecycle"); lc && lc->is_object())
    for (const char* hook : {"postStart", "preStop"})
      if (auto* h = lc->as_object().if_contains(hook); h && h->is_object()) default_handler(h->as_object());
}

// pkg/api/pod dropDisabledFields: the fields whose feature gates are off in v1.32 are dropped as
// a pod or template is written (UserNamespacesSupport, SupplementalGroupsPolicy, PodLevelResources,
// DynamicResourceAllocation, ClusterTrustBundleProjection, InPlacePodVerticalScaling, ImageVolume,
// SELinuxChangePolicy), and a procMount is forced to Default (ProcMountType).
void drop_disabled_fields(json::object& spec) {
  for (const char* key : {"hostUsers", "resources", "resourceClaims"}) spec.erase(key);
  if (auto* sc = spec.if_contains("securityContext"); sc && sc->is_object())
    for (const char* key : {"supplementalGroupsPolicy", "seLinuxChangePolicy"}) sc->as_object().erase(key);
  std::set<std::string> image_volumes;  // dropImageVolumes: the volumes, then their mounts
  if (auto* vs = spec.if_contains("volumes"); vs && vs->is_array()) {
    auto& arr = vs->as_array();
    for (std::size_t i = arr.size(); i-- > 0;) {
      if (!arr[i].is_object()) continue;
      auto& v = arr[i].as_object();
      if (const auto* img = v.if_contains("image"); img && !img->is_null()) {
        image_volumes.insert(str(v, "name"));
        arr.erase(arr.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (auto* pj = v.if_contains("projected"); pj && pj->is_object())
        if (auto* srcs = pj->as_object().if_contains("sources"); srcs && srcs->is_array())
          for (auto& src : srcs->as_array())
            if (src.is_object()) src.as_object().erase("clusterTrustBundle");
    }
    if (arr.empty()) spec.erase("volumes");  // (omitempty: no volumes left, no field)
  }
  for (const char* list : {"containers", "initContainers", "ephemeralContainers"})
    if (auto* cs = spec.if_contains(list); cs && cs->is_array())
      for (auto& c : cs->as_array()) {
        if (!c.is_object()) continue;
        auto& co = c.as_object();
        co.erase("resizePolicy");
        if (auto* res = co.if_contains("resources"); res && res->is_object()) res->as_object().erase("claims");
        if (auto* mounts = co.if_contains("volumeMounts"); mounts && mounts->is_array() && !image_volumes.empty()) {
          auto& ms = mounts->as_array();
          ms.erase(std::remove_if(ms.begin(), ms.end(),
                                  [&](const json::value& m) {
                                    return m.is_object() && image_volumes.count(str(m.as_object(), "name"));
                                  }),
                   ms.end());
          if (ms.empty()) co.erase("volumeMounts");  // (omitempty)
        }
        if (auto* sc = co.if_contains("securityContext");
            sc && sc->is_object() && sc->as_object().contains("procMount"))
          sc->as_object()["procMount"] = "Default";
      }
}

// SetDefaults_ResourceList: quantities are rounded up to milli precision ("0.0001" is 1m). (Other
// quantities keep their text, which validation's messages quote as Go parsed it; Kubernetes
// writes them back canonically: FIDELITY.md.)
void round_up_to_milli(json::object& resources) {
  for (const char* kind : {"limits", "requests"})
    if (auto* list = resources.if_contains(kind); list && list->is_object())
      for (auto& kv : list->as_object()) {
        if (!kv.value().is_string()) continue;
        try {
          const Quantity q = Quantity::parse(kv.value().as_string());
          const Quantity rounded = q.round_up_milli();  // (from_milli(milli_value()) caps at 2^63-1 milli: 1E)
          if (rounded != q && !q.is_negative()) kv.value() = json::string(rounded.to_string());
        } catch (const std::exception&) {
          // decoding refused it already
        }
      }
}

// An embedded ObjectMeta (a template's, a claim template's) as Go encodes it: the struct is always
// there, and its creationTimestamp (a zero metav1.Time, no omitempty) is null.
void zero_template_meta(json::object& holder) {
  json::object& meta = obj_at(holder, "metadata");
  if (!meta.contains("creationTimestamp")) meta["creationTimestamp"] = nullptr;
}

// A claim template as stored (a StatefulSet's volumeClaimTemplates item, a generic ephemeral
// volume's volumeClaimTemplate): its metadata and spec are structs, the spec's resources too
// ({} when empty); SetDefaults_PersistentVolumeClaimSpec's volumeMode.
void default_claim_template(json::object& claim) {
  zero_template_meta(claim);
  json::object& cs = obj_at(claim, "spec");
  set_default(cs, "volumeMode", "Filesystem");
  set_default(cs, "resources", json::object{});
}

// The downward API's references in an env var's valueFrom or a downwardAPI file:
// SetDefaults_ObjectFieldSelector (a fieldRef's apiVersion is v1), and a resourceFieldRef's divisor,
// a resource.Quantity struct (not a pointer: omitempty leaves it), written "0" when unset.
void default_field_refs(json::object& holder) {
  if (auto* ref = holder.if_contains("fieldRef"); ref && ref->is_object())
    set_default(ref->as_object(), "apiVersion", "v1");
  if (auto* ref = holder.if_contains("resourceFieldRef"); ref && ref->is_object())
    set_default(ref->as_object(), "divisor", "0");
}

namespace {
bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool alnum(char c) { return lower_alnum(c) || (c >= 'A' && c <= 'Z'); }
bool word(char c) { return alnum(c) || c == '_'; }

// distribution/reference's path-component: lowercase alphanumeric runs, each pair separated by
// ".", "_", "__" or a run of "-".
bool path_component(std::string_view s) {
  std::size_t i = 0;
  while (true) {
    const std::size_t start = i;
    while (i < s.size() && lower_alnum(s[i])) ++i;
    if (i == start) return false;
    if (i == s.size()) return true;
    if (s[i] == '.' || (s[i] == '_' && (i + 1 >= s.size() || s[i + 1] != '_'))) {
      ++i;
    } else if (s[i] == '_') {
      i += 2;
    } else if (s[i] == '-') {
      while (i < s.size() && s[i] == '-') ++i;
    } else {
      return false;
    }
  }
}

// Its domain: a host (dot-separated labels of letters, digits and inner "-", or "[ipv6]") with an
// optional ":port".
bool domain_component(std::string_view s) {
  if (const auto colon = s.rfind(':');
      colon != std::string_view::npos && s.find(']', colon) == std::string_view::npos) {
    const std::string_view port = s.substr(colon + 1);
    if (port.empty() || port.find_first_not_of("0123456789") != std::string_view::npos) return false;
    s = s.substr(0, colon);
  }
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']')
    return s.size() > 2 &&
           s.substr(1, s.size() - 2).find_first_not_of("0123456789abcdefABCDEF:") == std::string_view::npos;
  std::size_t i = 0;
  while (true) {
    const std::size_t end = std::min(s.find('.', i), s.size());
    const std::string_view label = s.substr(i, end - i);
    if (label.empty() || !alnum(label.front()) || !alnum(label.back())) return false;
    for (char c : label)
      if (!alnum(c) && c != '-') return false;
    if (end == s.size()) return true;
    i = end + 1;
  }
}
}  // namespace

// SetDefaults_Container's pull policy: pkg/util/parsers ParseImageName's tag, which is "latest" for
// a reference without tag or digest and "" when the reference does not parse
// (dockerref.ParseNormalizedNamed: docker.io/library/ prepended to a bare name, the repository
// lowercase, not a 64-hex identifier, distribution/reference's grammar, at most 255 characters of
// name, a digest of a known algorithm and length); Always only for "latest".
std::string image_pull_policy_default(const std::string& image) {
  const std::string always = "Always", if_not_present = "IfNotPresent";
  if (image.size() == 64 && image.find_first_not_of("0123456789abcdef") == std::string::npos) return if_not_present;
  // splitDockerDomain
  std::string domain = "docker.io", remainder = image;
  if (const auto i = image.find('/'); i != std::string::npos) {
    const std::string first = image.substr(0, i);
    const bool upper = std::any_of(first.begin(), first.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
    if (first.find_first_of(".:") != std::string::npos || first == "localhost" || upper) {
      domain = first;
      remainder = image.substr(i + 1);
    }
  }
  if (domain == "docker.io" && remainder.find('/') == std::string::npos) remainder = "library/" + remainder;
  const std::string full = domain + "/" + remainder;
  // reference := name [":" tag] ["@" digest]
  std::string_view rest = full, tag, digest;
  bool tagged = false, digested = false;
  if (const auto at = rest.find('@'); at != std::string_view::npos) {
    digest = rest.substr(at + 1);
    rest = rest.substr(0, at);
    digested = true;
  }
  if (const auto colon = rest.rfind(':'); colon != std::string_view::npos && colon > rest.rfind('/')) {
    tag = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    tagged = true;
  }
  const std::string_view name = rest;
  if (name.size() > 255) return if_not_present;
  if (tagged && (tag.empty() || tag.size() > 128 || !word(tag.front()) ||
                 !std::all_of(tag.begin(), tag.end(), [](char c) { return word(c) || c == '.' || c == '-'; })))
    return if_not_present;
  // The repository (name past the domain) lowercase, every component of the name valid.
  for (std::size_t i = 0, n = 0; i <= name.size(); ++n) {
    const std::size_t end = std::min(name.find('/', i), name.size());
    const std::string_view part = name.substr(i, end - i);
    if (!(path_component(part) || (n == 0 && end < name.size() && domain_component(part)))) return if_not_present;
    i = end + 1;
  }
  if (digested) {  // digest.Parse: an available algorithm, its hex length, lowercase
    const auto colon = digest.find(':');
    const std::string_view algorithm = digest.substr(0, colon),
                           hex = colon == digest.npos ? "" : digest.substr(colon + 1);
    const std::size_t want = algorithm == "sha256" ? 64 : algorithm == "sha384" ? 96 : algorithm == "sha512" ? 128 : 0;
    if (want == 0 || hex.size() != want || hex.find_first_not_of("0123456789abcdef") != std::string_view::npos)
      return if_not_present;
    return tag == "latest" ? always : if_not_present;  // a digest without a tag leaves the tag "" (not "latest")
  }
  return !tagged || tag == "latest" ? always : if_not_present;
}

// Pod defaulting (pkg/apis/core/v1/defaults.go) for what shows in `kubectl get -o yaml`.
void default_pod_spec(json::object& spec) {
  // The v1 conversion: serviceAccount is the deprecated alias of serviceAccountName, which wins
  // when both are set (Convert_v1_PodSpec_To_core_PodSpec); the object is written back with the
  // name in both (Convert_core_PodSpec_To_v1_PodSpec).
  if (std::string sa =
          str(spec, "serviceAccountName").empty() ? str(spec, "serviceAccount") : str(spec, "serviceAccountName");
      !sa.empty()) {
    spec["serviceAccountName"] = sa;
    spec["serviceAccount"] = std::move(sa);
  } else {
    spec.erase("serviceAccount");  // (both "": omitempty)
  }
  drop_disabled_fields(spec);
  set_default(spec, "restartPolicy", "Always");
  set_default(spec, "dnsPolicy", "ClusterFirst");
  set_default(spec, "schedulerName", "default-scheduler");
  set_default(spec, "terminationGracePeriodSeconds", 30);
  set_default(spec, "securityContext", json::object{});
  // SetDefaults_HostPathVolumeSource (type ""), SetDefaults_{Secret,ConfigMap,DownwardAPI,Projected}
  // VolumeSource (defaultMode 0644 = 420).
  if (auto* vs = spec.if_contains("volumes"); vs && vs->is_array())
    for (auto& v : vs->as_array()) {
      if (!v.is_object()) continue;
      auto& vo = v.as_object();
      // SetDefaults_Volume: a volume without a source is an emptyDir.
      if (std::none_of(vo.begin(), vo.end(),
                       [](const auto& kv) { return kv.key() != "name" && !kv.value().is_null(); }))
        vo["emptyDir"] = json::object{};
      if (auto* hp = vo.if_contains("hostPath"); hp && hp->is_object()) set_default(hp->as_object(), "type", "");
      if (auto* eph = vo.if_contains("ephemeral"); eph && eph->is_object())
        if (auto* tpl = eph->as_object().if_contains("volumeClaimTemplate"); tpl && tpl->is_object())
          default_claim_template(tpl->as_object());
      for (const char* src : {"secret", "configMap", "downwardAPI", "projected"})
        if (auto* so = vo.if_contains(src); so && so->is_object()) set_default(so->as_object(), "defaultMode", 420);
      default_legacy_volume_sources(vo);
      // SetDefaults_ObjectFieldSelector for the downward API's files, in the volume or projected.
      auto default_items = [](json::value* src) {
        if (auto* items = src && src->is_object() ? src->as_object().if_contains("items") : nullptr;
            items && items->is_array())
          for (auto& it : items->as_array())
            if (it.is_object()) default_field_refs(it.as_object());
      };
      default_items(vo.if_contains("downwardAPI"));
      if (auto* pj = vo.if_contains("projected"); pj && pj->is_object())
        if (auto* srcs = pj->as_object().if_contains("sources"); srcs && srcs->is_array())
          for (auto& src : srcs->as_array()) {
            if (!src.is_object()) continue;
            default_items(src.as_object().if_contains("downwardAPI"));
            // SetDefaults_ServiceAccountTokenProjection: an hour.
            if (auto* sat = src.as_object().if_contains("serviceAccountToken"); sat && sat->is_object())
              set_default(sat->as_object(), "expirationSeconds", 3600);
          }
    }
  for (const char* list : {"containers", "initContainers", "ephemeralContainers"}) {
    auto* cs = spec.if_contains(list);
    if (!cs || !cs->is_array()) continue;
    for (auto& c : cs->as_array()) {
      if (!c.is_object()) continue;
      auto& co = c.as_object();
      default_probes_and_hooks(co);
      default_if_empty(co, "imagePullPolicy", image_pull_policy_default(str(co, "image")));
      set_default(co, "terminationMessagePath", "/dev/termination-log");
      set_default(co, "terminationMessagePolicy", "File");
      set_default(co, "resources", json::object{});
      if (auto* res = co.if_contains("resources"); res && res->is_object()) round_up_to_milli(res->as_object());
      if (auto* env = co.if_contains("env"); env && env->is_array())
        for (auto& e : env->as_array())
          if (e.is_object())
            if (auto* from = e.as_object().if_contains("valueFrom"); from && from->is_object())
              default_field_refs(from->as_object());
      // SetDefaults_ContainerPort: protocol TCP.
      if (auto* ports = co.if_contains("ports"); ports && ports->is_array())
        for (auto& p : ports->as_array())
          if (p.is_object()) set_default(p.as_object(), "protocol", "TCP");
    }
  }
}

// SetDefaults_Pod (pkg/apis/core/v1/defaults.go), for pods only, not templates: enableServiceLinks,
// and each container's requests default to its limits where a request is not given.
void default_pod(json::object& pod) {
  auto& spec = obj_at(pod, "spec");
  set_default(spec, "enableServiceLinks", true);
  // Convert_v1_Pod_To_core_Pod: a Pod's negative terminationGracePeriodSeconds is 1 (a pod
  // template's is left as it is, and warned about).
  if (auto* g = spec.if_contains("terminationGracePeriodSeconds"); g && g->is_int64() && g->as_int64() < 0) *g = 1;
  // defaultHostNetworkPorts: with hostNetwork, an unset host port is the container port.
  if (const auto* hn = spec.if_contains("hostNetwork"); hn && hn->is_bool() && hn->as_bool())
    for (const char* list : {"containers", "initContainers"})
      if (auto* cs = spec.if_contains(list); cs && cs->is_array())
        for (auto& c : cs->as_array())
          if (auto* ports = c.is_object() ? c.as_object().if_contains("ports") : nullptr; ports && ports->is_array())
            for (auto& p : ports->as_array())
              if (const auto* cp = p.is_object() ? p.as_object().if_contains("containerPort") : nullptr;
                  cp && cp->is_int64() && cp->as_int64() != 0)
                default_if_zero(p.as_object(), "hostPort", cp->as_int64());
  for (const char* list : {"containers", "initContainers"}) {
    auto* cs = spec.if_contains(list);
    if (!cs || !cs->is_array()) continue;
    for (auto& c : cs->as_array()) {
      if (!c.is_object()) continue;
      auto* res = c.as_object().if_contains("resources");
      if (!res || !res->is_object()) continue;
      const auto* lim = res->as_object().if_contains("limits");
      if (!lim || !lim->is_object() || lim->as_object().empty()) continue;
      // A copy: adding "requests" may rehash the resources object and move "limits".
      const json::object limits = lim->as_object();
      auto& req = obj_at(res->as_object(), "requests");
      for (const auto& kv : limits)
        if (!req.contains(kv.key())) req[kv.key()] = kv.value();
    }
  }
}

// The DefaultTolerationSeconds admission plugin (plugin/pkg/admission/defaulttolerationseconds):
// a pod that does not already tolerate node.kubernetes.io/not-ready or /unreachable with effect
// NoExecute (an empty key or effect counts) gets `Exists`/`NoExecute` for 300 s of each.
void default_toleration_seconds(json::object& spec) {
  bool not_ready = false, unreachable = false;
  if (const auto* ts = spec.if_contains("tolerations"); ts && ts->is_array())
    for (const auto& tv : ts->as_array()) {
      if (!tv.is_object()) continue;
      const std::string key = str(tv.as_object(), "key"), effect = str(tv.as_object(), "effect");
      if (!effect.empty() && effect != "NoExecute") continue;
      not_ready = not_ready || key.empty() || key == "node.kubernetes.io/not-ready";
      unreachable = unreachable || key.empty() || key == "node.kubernetes.io/unreachable";
    }
  if (not_ready && unreachable) return;
  auto& v = spec["tolerations"];
  if (!v.is_array()) v = json::array{};
  for (const auto& [key, has] :
       {std::pair{"node.kubernetes.io/not-ready", not_ready}, std::pair{"node.kubernetes.io/unreachable", unreachable}})
    if (!has)
      v.as_array().push_back(
          json::object{{"key", key}, {"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", 300}});
}

// podStrategy.PrepareForCreate mutatePodAffinity (MatchLabelKeysInPodAffinity, on in v1.32): each
// pod (anti-)affinity term with a label selector gets `key In (value)` for its matchLabelKeys and
// `key NotIn (value)` for its mismatchLabelKeys that the pod's labels hold (preferred terms first).
void apply_match_label_keys(json::object& pod) {
  const json::object* md =
      pod.contains("metadata") && pod.at("metadata").is_object() ? &pod.at("metadata").as_object() : nullptr;
  const json::value* lv = md ? md->if_contains("labels") : nullptr;
  if (!lv || !lv->is_object()) return;
  const json::object labels = lv->as_object();
  auto apply = [&](json::value& term) {
    if (!term.is_object()) return;
    auto* sel = term.as_object().if_contains("labelSelector");
    if (!sel || !sel->is_object()) return;
    for (const auto& [list, op] : {std::pair{"matchLabelKeys", "In"}, std::pair{"mismatchLabelKeys", "NotIn"}}) {
      const auto* keys = term.as_object().if_contains(list);
      if (!keys || !keys->is_array()) continue;
      for (const auto& k : keys->as_array()) {
        const auto* value = k.is_string() ? labels.if_contains(k.as_string()) : nullptr;
        if (!value) continue;
        auto& exprs = sel->as_object()["matchExpressions"];
        if (!exprs.is_array()) exprs = json::array{};
        exprs.as_array().push_back(json::object{{"key", k}, {"operator", op}, {"values", json::array{*value}}});
      }
    }
  };
  auto* spec = pod.if_contains("spec");
  auto* aff = spec && spec->is_object() ? spec->as_object().if_contains("affinity") : nullptr;
  if (!aff || !aff->is_object()) return;
  for (const char* kind : {"podAffinity", "podAntiAffinity"}) {
    auto* pa = aff->as_object().if_contains(kind);
    if (!pa || !pa->is_object()) continue;
    if (auto* pref = pa->as_object().if_contains("preferredDuringSchedulingIgnoredDuringExecution");
        pref && pref->is_array())
      for (auto& w : pref->as_array())
        if (auto* term = w.is_object() ? w.as_object().if_contains("podAffinityTerm") : nullptr) apply(*term);
    if (auto* req = pa->as_object().if_contains("requiredDuringSchedulingIgnoredDuringExecution");
        req && req->is_array())
      for (auto& term : req->as_array()) apply(term);
  }
}

// Two quantities as the API holds them; an unparsable one (validation refuses it later) is unequal.
bool same_quantity(const json::value& a, const json::value& b) {
  try {
    if (!a.is_string() || !b.is_string()) return false;
    return Quantity::parse(a.as_string()) == Quantity::parse(b.as_string());
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

// pkg/apis/core/helper/qos GetPodQOS: only cpu and memory count. BestEffort when no container sets
// either; Guaranteed when every container limits both and its requests equal its limits.
std::string pod_qos_class(const json::object& spec) {
  bool any = false, guaranteed = true;
  for (const char* list : {"containers", "initContainers"}) {
    const auto* cs = spec.if_contains(list);
    if (!cs || !cs->is_array()) continue;
    for (const auto& c : cs->as_array()) {
      if (!c.is_object()) continue;
      const auto* res = c.as_object().if_contains("resources");
      const json::object none;
      const json::object& r = res && res->is_object() ? res->as_object() : none;
      const auto* lim = r.if_contains("limits");
      const auto* req = r.if_contains("requests");
      const json::object& l = lim && lim->is_object() ? lim->as_object() : none;
      const json::object& q = req && req->is_object() ? req->as_object() : none;
      for (const char* k : {"cpu", "memory"}) {
        const bool has_l = l.contains(k), has_q = q.contains(k);
        if (has_l || has_q) any = true;
        if (!has_l)
          guaranteed = false;
        else if (has_q && !same_quantity(q.at(k), l.at(k)))
          guaranteed = false;
      }
    }
  }
  return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

namespace {

// An integer field that must not be negative (apimachinery validation.ValidateNonnegativeField):
// `Invalid value: -1: must be greater than or equal to 0`, the value unquoted as Go prints an int.
const json::object* spec_of(const json::object& obj) {
  const json::value* s = obj.if_contains("spec");
  return s && s->is_object() ? &s->as_object() : nullptr;
}
// The spec, or an empty one: validated as Go validates a zero spec struct.
const json::object& spec_or_empty(const json::object& obj) {
  static const json::object kNoSpec;
  const json::object* s = spec_of(obj);
  return s ? *s : kNoSpec;
}

}  // namespace

void validate_scale(std::string_view name, const json::value& replicas) {
  // pkg/apis/autoscaling/validation/validation.go ValidateScale.
  Causes causes;
  const json::object holder{{"replicas", replicas}};
  non_negative(&holder, "replicas", "spec.replicas", causes);
  if (causes.empty()) return;
  ResourceType scale;
  scale.group = "autoscaling";
  scale.version = "v1";
  scale.kind = "Scale";
  scale.resource = "scale";
  throw StatusError::invalid(scale, name, std::move(causes));
}

// A PodTemplateSpec as the API server returns it: the pod spec defaulted, and the template's
// metadata present with creationTimestamp null (Go serializes a zero metav1.Time in an embedded
// ObjectMeta as null).
void default_pod_template(json::object& tpl) {
  default_pod_spec(obj_at(tpl, "spec"));
  zero_template_meta(tpl);
}

// A Node as the API server stores it after any write: NodeStatus.daemonEndpoints and nodeInfo are
// structs without omitempty, so a node that never had a kubelet still shows them zeroed
// (`kubeletEndpoint: {Port: 0}`, ten empty strings), and a condition written without times keeps
// them as null (metav1.Time serialises its zero value as null).
void default_node(json::object& node) {
  json::object& status = obj_at(node, "status");
  // SetDefaults_NodeStatus: no allocatable but a capacity (a map, even empty): allocatable is it.
  if (const json::value* cap = status.if_contains("capacity"); cap && cap->is_object())
    if (const json::value* alloc = status.if_contains("allocatable"); !alloc || alloc->is_null())
      status["allocatable"] = json::object(cap->as_object());
  set_default(obj_at(obj_at(status, "daemonEndpoints"), "kubeletEndpoint"), "Port", 0);
  json::object& info = obj_at(status, "nodeInfo");
  for (const char* k : {"machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
                        "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture"})
    set_default(info, k, "");
  if (auto* conds = status.if_contains("conditions"); conds && conds->is_array())
    for (auto& c : conds->as_array())
      if (c.is_object()) {
        set_default(c.as_object(), "lastHeartbeatTime", nullptr);
        set_default(c.as_object(), "lastTransitionTime", nullptr);
      }
}

namespace {
// What both phases read of a write: the object (with a metadata object), its kind and name.
struct Written {
  json::object& obj;
  const ResourceType& t;
  std::string name;
  bool create;
  bool core;
};
std::optional<Written> written(AdmissionRequest& r) {
  if (!r.object || !r.type) return std::nullopt;
  if (auto& mdv = (*r.object)["metadata"]; !mdv.is_object()) mdv = json::object{};
  return Written{*r.object, *r.type, str((*r.object)["metadata"].as_object(), "name"),
                 r.operation == AdmissionRequest::Operation::Create, r.type->group.empty()};
}
}  // namespace

namespace {

constexpr std::string_view kTemplateGeneration = "deprecated.daemonset.template.generation";

// A DaemonSet's templateGeneration as Convert_v1_DaemonSet_To_apps_DaemonSet reads it from the
// annotation (strconv.ParseInt; 0 without one).
std::int64_t template_generation(const json::object& ds) {
  const json::value* md = ds.if_contains("metadata");
  const json::value* ann = md && md->is_object() ? md->as_object().if_contains("annotations") : nullptr;
  const json::value* v = ann && ann->is_object() ? ann->as_object().if_contains(kTemplateGeneration) : nullptr;
  if (!v || !v->is_string()) return 0;
  return go_parse_int(v->as_string()).value_or(0);
}

// Convert_apps_DaemonSet_To_v1_DaemonSet: the annotation written with the number.
void set_template_generation(json::object& ds, std::int64_t generation) {
  json::value& ann = obj_at(ds, "metadata")["annotations"];
  if (!ann.is_object()) ann = json::object{};
  ann.as_object()[kTemplateGeneration] = std::to_string(generation);
}

// SetObjectDefaults_StatefulSet as a body is decoded, then the round trip through the internal
// type: podManagementPolicy OrderedReady; an updateStrategy without a type is RollingUpdate (with
// a rollingUpdate), whose partition is 0 (a rollingUpdate of any type gets one: the internal
// Partition is no pointer); the PVC retention policy Retain/Retain (StatefulSetAutoDeletePVC is on
// in v1.32); replicas 1, revisionHistoryLimit 10; ordinals.start 0 (no omitempty); the pod
// template's defaults; each volumeClaimTemplate a PersistentVolumeClaim's (SetDefaults_-
// PersistentVolumeClaim and -Spec), written back with apiVersion v1 and kind PersistentVolumeClaim
// (Convert_apps_StatefulSetSpec_To_v1_StatefulSetSpec) and its ObjectMeta's creationTimestamp null.
void default_statefulset(json::object& obj) {
  auto& spec = obj_at(obj, "spec");
  if (str(spec, "podManagementPolicy").empty()) spec["podManagementPolicy"] = "OrderedReady";
  auto& strategy = obj_at(spec, "updateStrategy");
  if (str(strategy, "type").empty()) {
    strategy["type"] = "RollingUpdate";
    set_default(strategy, "rollingUpdate", json::object{});
  }
  if (auto* ru = strategy.if_contains("rollingUpdate"); ru && ru->is_object())
    set_default(ru->as_object(), "partition", 0);
  auto& retention = obj_at(spec, "persistentVolumeClaimRetentionPolicy");
  for (const char* k : {"whenDeleted", "whenScaled"})
    if (str(retention, k).empty()) retention[k] = "Retain";
  set_default(spec, "replicas", 1);
  set_default(spec, "revisionHistoryLimit", 10);
  if (auto* ord = spec.if_contains("ordinals"); ord && ord->is_object()) set_default(ord->as_object(), "start", 0);
  if (auto* tpl = spec.if_contains("template"); tpl && tpl->is_object()) default_pod_template(tpl->as_object());
  if (auto* vcts = spec.if_contains("volumeClaimTemplates"); vcts && vcts->is_array())
    for (auto& v : vcts->as_array()) {
      if (!v.is_object()) continue;
      json::object& claim = v.as_object();
      claim["apiVersion"] = "v1";
      claim["kind"] = "PersistentVolumeClaim";
      default_claim_template(claim);
      json::object& st = obj_at(claim, "status");
      if (str(st, "phase").empty()) st["phase"] = "Pending";
    }
}

// statefulSetStrategy's dropStatefulSetDisabledFields (PrepareForCreate / PrepareForUpdate, `old`
// null on create): MaxUnavailableStatefulSet is alpha (off) in v1.32, so rollingUpdate.maxUnavailable
// is dropped unless the old StatefulSet used it.
void drop_statefulset_disabled_fields(json::object& obj, const json::object* old) {
  if (old)
    if (const json::object* ru = util::object_at(*old, {"spec", "updateStrategy", "rollingUpdate"});
        ru && fields::present(*ru, "maxUnavailable"))
      return;
  if (auto* spec = obj.if_contains("spec"); spec && spec->is_object())
    if (auto* st = spec->as_object().if_contains("updateStrategy"); st && st->is_object())
      if (auto* ru = st->as_object().if_contains("rollingUpdate"); ru && ru->is_object())
        ru->as_object().erase("maxUnavailable");
}

// A claim's data sources as its strategy leaves them (registry/core/persistentvolumeclaim
// PrepareForCreate / PrepareForUpdate, pkg/api/persistentvolumeclaim/util.go), `old_spec` null on
// create: DropDisabledFields drops a dataSourceRef naming a namespace (the
// CrossNamespaceVolumeDataSource gate is off in v1.32) unless the old claim had one;
// EnforceDataSourceBackwardsCompatibility drops a dataSource that is neither a PVC nor a
// VolumeSnapshot when dataSourceRef is unset and the old claim had no data source;
// NormalizeDataSources copies one to the other when only one is set.
void claim_data_sources(json::object& spec, const json::object* old_spec) {
  auto set = [&](const char* k) { return fields::present(spec, k); };
  auto set_in = [](const json::object* o, const char* k) { return o && fields::present(*o, k); };
  auto obj = [&](const char* k) -> const json::object& {
    const json::object* o = fields::object_at(spec, k);
    return o ? *o : fields::kNone;
  };
  if (set("dataSourceRef") && !str(obj("dataSourceRef"), "namespace").empty() && !set_in(old_spec, "dataSourceRef"))
    spec.erase("dataSourceRef");
  if (!set_in(old_spec, "dataSource") && !set_in(old_spec, "dataSourceRef") && !set("dataSourceRef") &&
      set("dataSource")) {
    const json::object& ds = obj("dataSource");
    const std::string kind = str(ds, "kind"), group = str(ds, "apiGroup");
    const bool pvc = kind == "PersistentVolumeClaim" && group.empty();
    const bool snapshot = kind == "VolumeSnapshot" && group == "snapshot.storage.k8s.io";
    if (!pvc && !snapshot) spec.erase("dataSource");
  }
  // TypedLocalObjectReference / TypedObjectReference: apiGroup a pointer (kept when ""), kind
  // and name plain strings without omitempty (written out when "").
  auto copy_ref = [&](const json::object& from) {
    json::object to;
    if (const auto* g = from.if_contains("apiGroup"); g && !g->is_null()) to["apiGroup"] = *g;
    to["kind"] = str(from, "kind");
    to["name"] = str(from, "name");
    return to;
  };
  if (set("dataSource") && !set("dataSourceRef"))
    spec["dataSourceRef"] = copy_ref(obj("dataSource"));
  else if (set("dataSourceRef") && !set("dataSource") && str(obj("dataSourceRef"), "namespace").empty())
    spec["dataSource"] = copy_ref(obj("dataSourceRef"));
}

// Convert_v1_PodStatus_To_core_PodStatus and back (pkg/apis/core/v1/conversion.go), as every pod
// body is decoded and encoded: podIP is authoritative (podIPs becomes it alone when it is set and
// podIPs does not start with it), and podIP is then podIPs[0]'s.
void convert_pod_ips(json::object& pod) {
  json::value* stv = pod.if_contains("status");
  if (!stv || !stv->is_object()) return;
  json::object& st = stv->as_object();
  const std::string pod_ip = str(st, "podIP");
  const json::array* ips = fields::array_at(st, "podIPs");
  const bool has_ips = ips && !ips->empty();
  const std::string first = has_ips && (*ips)[0].is_object() ? str((*ips)[0].as_object(), "ip") : "";
  if (!pod_ip.empty() && (!has_ips || first != pod_ip))
    st["podIPs"] = json::array{json::object{{"ip", pod_ip}}};
  else if (has_ips && !first.empty())
    st["podIP"] = first;
}

// The status a created object of `t` starts from once its strategy cleared the client's: the
// status struct's zero as Go encodes it (a ReplicaSet's replicas 0, a Service's loadBalancer {},
// a DaemonSet's four counts), computed once per kind.
const json::object& zero_status(const ResourceType& t) {
  static std::mutex mu;
  static std::map<std::string, json::object, std::less<>> by_kind;
  const std::string key = t.api_version() + "/" + t.kind;
  std::lock_guard lk(mu);
  auto it = by_kind.find(key);
  if (it == by_kind.end()) {
    const json::object zero = schema::zero_object(t.group, t.version, t.kind);
    const json::value* st = zero.if_contains("status");
    it = by_kind.emplace(key, st && st->is_object() ? st->as_object() : json::object{}).first;
  }
  return it->second;
}

// The registries' PrepareForCreate: a client's status is not taken on create. Every built-in
// kind with a status served here but the Node clears it (pkg/registry/*/strategy.go:
// `x.Status = XStatus{}`; podStrategy then sets the phase and QoS class, namespaceStrategy the
// phase, both below); persistentvolumeStrategy sets phase Pending and lastPhaseTransitionTime
// (PersistentVolumeLastPhaseTransitionTime, GA in v1.31); a custom resource with the status
// subresource loses it (apiextensions customresource strategy.go PrepareForCreate); a
// CustomResourceDefinition's status lists the storage version as stored (its strategy.go).
void clear_created_status(const ResourceType& t, json::object& obj, const Clock* clock) {
  if (!t.has_status || (t.group.empty() && t.resource == "nodes")) return;
  if (t.schema) {
    obj.erase("status");
    return;
  }
  json::object status = zero_status(t);
  if (t.group.empty() && t.resource == "persistentvolumes") {
    status["phase"] = "Pending";
    if (clock) status["lastPhaseTransitionTime"] = to_rfc3339(clock->now());
  } else if (t.group == "apps" && t.resource == "statefulsets") {
    status["availableReplicas"] = 0;  // no omitempty, though not `required` in the OpenAPI document
  } else if (t.group == "apiextensions.k8s.io" && t.resource == "customresourcedefinitions") {
    status["storedVersions"] = crd::storage_versions(obj);
  }
  obj["status"] = std::move(status);
}

// persistentvolumeStatusStrategy.PrepareForUpdate: a phase change the client gave no new
// lastPhaseTransitionTime for (none, or the old one) is stamped now; an unchanged phase without
// one keeps the old.
void stamp_pv_phase_transition(json::object& obj, const json::object& old, const Clock* clock) {
  json::object& st = obj_at(obj, "status");
  const json::object* old_st = util::object_at(old, {"status"});
  const json::object& was = old_st ? *old_st : fields::kNone;
  const json::value* given = st.if_contains("lastPhaseTransitionTime");
  const bool unset = !given || given->is_null();
  const json::value* old_time = was.if_contains("lastPhaseTransitionTime");
  if (str(st, "phase") == str(was, "phase")) {
    if (unset && old_time && !old_time->is_null()) st["lastPhaseTransitionTime"] = *old_time;
  } else if (clock && (unset || (old_time && util::json_equal(*given, *old_time)))) {
    st["lastPhaseTransitionTime"] = to_rfc3339(clock->now());
  }
}

}  // namespace

void builtin_defaults(AdmissionRequest& r) {
  const auto w = written(r);
  if (!w) return;
  auto& [obj, t, name, create, core] = *w;
  if (core && t.resource == "pods") convert_pod_ips(obj);
  if (core && t.resource == "namespaces" && r.subresource == "status")  // SetDefaults_NamespaceStatus
    if (auto& st = obj_at(obj, "status"); str(st, "phase").empty()) st["phase"] = "Active";
  // (No reference into `obj` is kept: the defaults below insert keys, which may rehash it.)
  if (core && t.resource == "nodes") {
    default_node(obj);
    if (r.subresource.empty()) default_node_spec(obj, r.old_object);
  }
  if (r.subresource.empty()) default_kind(t, obj);
  if (t.group == "apiextensions.k8s.io" && t.resource == "customresourcedefinitions") crd::default_definition(obj);
  // SetDefaults_Namespace and the namespace strategy's Canonicalize: every named namespace carries
  // kubernetes.io/metadata.name with its name.
  if (core && t.resource == "namespaces" && !name.empty()) {
    auto& labels = obj["metadata"].as_object()["labels"];
    if (!labels.is_object()) labels = json::object{};
    labels.as_object()["kubernetes.io/metadata.name"] = name;
  }
  // namespaceStrategy.PrepareForUpdate: the spec's finalizers are the stored ones (only the
  // finalize subresource changes them).
  if (core && t.resource == "namespaces" && r.subresource.empty() &&
      r.operation == AdmissionRequest::Operation::Update && r.old_object) {
    const json::object* old_spec = spec_of(*r.old_object);
    if (const json::value* f = old_spec ? old_spec->if_contains("finalizers") : nullptr)
      obj_at(obj, "spec")["finalizers"] = *f;
    else if (json::value* spec = obj.if_contains("spec"); spec && spec->is_object())
      spec->as_object().erase("finalizers");
  }
  // Scheme defaults (SetDefaults_*, applied as a body is decoded): the writer's managedFields
  // include them. (Here on create only for most kinds; see below for the workloads.)
  // A pod's defaults come on update too: a PUT's body is decoded (and defaulted) like a create's,
  // and ValidatePodUpdate compares it with the stored pod.
  if (core && t.resource == "pods" && (r.subresource.empty() || r.subresource == "ephemeralcontainers") &&
      r.operation == AdmissionRequest::Operation::Update) {
    default_pod_spec(obj_at(obj, "spec"));
    default_pod(obj);
  }
  // A status write's body is decoded (and defaulted) too: a load balancer address's ipMode.
  if (core && t.resource == "services" && r.subresource == "status") default_service(obj);
  if (core && t.resource == "persistentvolumeclaims" && r.subresource.empty() &&
      r.operation == AdmissionRequest::Operation::Update && r.old_object) {
    static const json::object kNoSpec;
    const json::object* old_spec = spec_of(*r.old_object);
    claim_data_sources(obj_at(obj, "spec"), old_spec ? old_spec : &kNoSpec);  // PrepareForUpdate
  }
  if (r.subresource.empty() && (create || r.operation == AdmissionRequest::Operation::Update)) {
    if (core && t.resource == "pods") {
      if (create) {  // (an update's: above)
        default_pod_spec(obj_at(obj, "spec"));
        default_pod(obj);
      }
    } else if (t.group == "discovery.k8s.io" && t.resource == "endpointslices") {
      // SetDefaults_EndpointPort: a port's name "" and protocol TCP when unset (pointers: "" stays).
      if (json::value* ports = obj.if_contains("ports"); ports && ports->is_array())
        for (auto& port : ports->as_array())
          if (port.is_object()) {
            set_default(port.as_object(), "name", "");
            set_default(port.as_object(), "protocol", "TCP");
          }
      // The strategy's dropTopologyOnV1 (PrepareForCreate and PrepareForUpdate): a v1 write sets no
      // deprecatedTopology (a stored v1 slice has none to carry a node name over from). An update
      // that brought one counts as a change for the generation, computed before the drop.
      if (json::value* endpoints = obj.if_contains("endpoints"); endpoints && endpoints->is_array())
        for (auto& ep : endpoints->as_array())
          if (ep.is_object() && ep.as_object().erase("deprecatedTopology") && !create) r.spec_changed = true;
    } else if (core && t.resource == "endpoints") {
      if (json::value* subsets = obj.if_contains("subsets"); subsets && subsets->is_array())
        for (auto& ss : subsets->as_array())
          if (json::value* ports = ss.is_object() ? ss.as_object().if_contains("ports") : nullptr;
              ports && ports->is_array())
            for (auto& port : ports->as_array())
              if (port.is_object()) default_if_empty(port.as_object(), "protocol", "TCP");  // SetDefaults_EndpointPort
    } else if (core && t.resource == "secrets") {
      set_default(obj, "type", "Opaque");  // SetDefaults_Secret
      // Convert_v1_Secret_To_core_Secret: stringData overwrites data (the internal type has no
      // stringData, so it is never stored or answered).
      if (const auto* sd = obj.if_contains("stringData"); sd && sd->is_object() && !sd->as_object().empty()) {
        json::object& data = obj_at(obj, "data");
        for (const auto& [k, v] : sd->as_object())
          data[k] = base64_encode(v.is_string() ? std::string_view(v.as_string()) : std::string_view());
      }
      obj.erase("stringData");
    } else if (core && t.resource == "serviceaccounts") {
      // The strategy's cleanSecretReferences (PrepareForCreate / PrepareForUpdate): a secret
      // reference keeps its name only.
      if (auto* secrets = obj.if_contains("secrets"); secrets && secrets->is_array())
        for (auto& ref : secrets->as_array()) {
          const std::string name = ref.is_object() ? str(ref.as_object(), "name") : std::string();
          ref = name.empty() ? json::object{} : json::object{{"name", name}};
        }
    } else if (core && t.resource == "persistentvolumeclaims") {
      set_default(obj_at(obj, "spec"), "volumeMode", "Filesystem");
      // pvcutil.DropDisabledSpecFields: the VolumeAttributesClass gate is off in v1.32 (an update
      // keeps the field when the old claim uses it).
      const json::object* old_spec = r.old_object ? spec_of(*r.old_object) : nullptr;
      if (!old_spec || !fields::present(*old_spec, "volumeAttributesClassName"))
        obj_at(obj, "spec").erase("volumeAttributesClassName");
      if (create) claim_data_sources(obj_at(obj, "spec"), nullptr);
    } else if (core && t.resource == "persistentvolumes") {
      set_default(obj_at(obj, "spec"), "volumeMode", "Filesystem");
      set_default(obj_at(obj, "spec"), "persistentVolumeReclaimPolicy", "Retain");
      // SetObjectDefaults_PersistentVolume: the volume sources' defaults, as a pod's.
      json::object& pv = obj_at(obj, "spec");
      if (auto* hp = pv.if_contains("hostPath"); hp && hp->is_object()) set_default(hp->as_object(), "type", "");
      default_legacy_volume_sources(pv);
      // pvutil.DropDisabledSpecFields: the VolumeAttributesClass gate is off in v1.32 (an update
      // keeps the field when the old volume uses it).
      const json::object* old_spec = r.old_object ? spec_of(*r.old_object) : nullptr;
      if (!old_spec || !fields::present(*old_spec, "volumeAttributesClassName")) pv.erase("volumeAttributesClassName");
    } else if (t.group == "storage.k8s.io" && t.resource == "storageclasses") {
      set_default(obj, "reclaimPolicy", "Delete");
      set_default(obj, "volumeBindingMode", "Immediate");
    } else if (t.group == "scheduling.k8s.io" && t.resource == "priorityclasses") {
      set_default(obj, "preemptionPolicy", "PreemptLowerPriority");  // SetDefaults_PriorityClass
    }
  }
  if ((create || r.operation == AdmissionRequest::Operation::Update) && r.subresource.empty() &&
      t.group == "storage.k8s.io" && t.resource == "csidrivers") {
    // SetDefaults_CSIDriver (SELinuxMountReadWriteOncePod is on in v1.32: seLinuxMount too).
    auto& spec = obj_at(obj, "spec");
    for (const char* k : {"podInfoOnMount", "storageCapacity", "requiresRepublish", "seLinuxMount"})
      set_default(spec, k, false);
    set_default(spec, "attachRequired", true);
    set_default(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType");
    if (const json::value* m = spec.if_contains("volumeLifecycleModes"); !m || !m->is_array() || m->as_array().empty())
      spec["volumeLifecycleModes"] = json::array{"Persistent"};
  }
  // Scheme defaults (SetDefaults_*) run on every decode of a body, updates and patches included: a
  // volume or container patched into a workload's template later gets its defaults too.
  if ((create || r.operation == AdmissionRequest::Operation::Update) && r.subresource.empty()) {
    if (t.group == "apps" && t.resource == "deployments") {
      auto& spec = obj_at(obj, "spec");
      set_default(spec, "replicas", 1);
      set_default(spec, "revisionHistoryLimit", 10);
      set_default(spec, "progressDeadlineSeconds", 600);
      // SetDefaults_Deployment: strategy type RollingUpdate, whose rollingUpdate gets 25% / 25%.
      auto& strategy = obj_at(spec, "strategy");
      set_default(strategy, "type", "RollingUpdate");
      if (str(strategy, "type") == "RollingUpdate") {
        auto& ru = obj_at(strategy, "rollingUpdate");
        set_default(ru, "maxUnavailable", "25%");
        set_default(ru, "maxSurge", "25%");
      }
      if (auto* tpl = spec.if_contains("template"); tpl && tpl->is_object()) default_pod_template(tpl->as_object());
    } else if (t.group == "apps" && t.resource == "replicasets") {
      auto& spec = obj_at(obj, "spec");
      set_default(spec, "replicas", 1);
      if (auto* tpl = spec.if_contains("template"); tpl && tpl->is_object()) default_pod_template(tpl->as_object());
    } else if (t.group == "apps" && t.resource == "daemonsets") {
      // SetDefaults_DaemonSet: updateStrategy RollingUpdate, whose rollingUpdate gets maxUnavailable
      // 1 and maxSurge 0; revisionHistoryLimit 10; the pod template's defaults.
      auto& spec = obj_at(obj, "spec");
      auto& strategy = obj_at(spec, "updateStrategy");
      if (str(strategy, "type").empty()) strategy["type"] = "RollingUpdate";
      if (str(strategy, "type") == "RollingUpdate") {
        auto& ru = obj_at(strategy, "rollingUpdate");
        set_default(ru, "maxUnavailable", 1);
        set_default(ru, "maxSurge", 0);
      }
      // The round trip through the internal type, whose bounds are no pointers: a rollingUpdate
      // (an OnDelete one's too) carries both, 0 where unset.
      if (auto* ru = strategy.if_contains("rollingUpdate"); ru && ru->is_object()) {
        set_default(ru->as_object(), "maxUnavailable", 0);
        set_default(ru->as_object(), "maxSurge", 0);
      }
      set_default(spec, "revisionHistoryLimit", 10);
      if (auto* tpl = spec.if_contains("template"); tpl && tpl->is_object()) default_pod_template(tpl->as_object());
    } else if (t.group == "apps" && t.resource == "statefulsets") {
      default_statefulset(obj);
    } else if (t.group == "apps" && t.resource == "controllerrevisions") {
      set_default(obj, "revision", 0);  // an int64 without omitempty
    } else if (core && t.resource == "podtemplates") {
      // SetObjectDefaults_PodTemplate: the template's pod defaults.
      if (auto* tpl = obj.if_contains("template"); tpl && tpl->is_object()) default_pod_template(tpl->as_object());
    } else if (is_networking_kind(t)) {
      default_networking(t, obj);
    } else if (core && t.resource == "services") {
      default_service(obj);  // SetObjectDefaults_Service
    } else if (t.group == "batch" && t.resource == "jobs") {
      auto& spec = obj_at(obj, "spec");
      // SetDefaults_Job: both counts 1 when neither is set; else only a missing parallelism.
      if (!spec.contains("completions") && !spec.contains("parallelism")) spec["completions"] = 1;
      set_default(spec, "parallelism", 1);
      // backoffLimit: 6, or MaxInt32 when backoffLimitPerIndex limits each index instead.
      const json::value* per_index = spec.if_contains("backoffLimitPerIndex");
      set_default(spec, "backoffLimit",
                  per_index && !per_index->is_null() ? std::int64_t{2147483647} : std::int64_t{6});
      set_default(spec, "completionMode", "NonIndexed");
      set_default(spec, "suspend", false);
      // SetDefaults_Job: a podFailurePolicy's onPodConditions patterns without a status are "True";
      // manualSelector false, podReplacementPolicy by podFailurePolicy (null is none).
      json::value* pfp = spec.if_contains("podFailurePolicy");
      const bool has_pfp = pfp && pfp->is_object();
      if (has_pfp)
        if (auto* rules = pfp->as_object().if_contains("rules"); rules && rules->is_array())
          for (auto& rule : rules->as_array())
            if (auto* pats = rule.is_object() ? rule.as_object().if_contains("onPodConditions") : nullptr;
                pats && pats->is_array())
              for (auto& pat : pats->as_array())
                if (pat.is_object())
                  if (const json::value* st = pat.as_object().if_contains("status");
                      !st || st->is_null() || (st->is_string() && st->get_string().empty()))
                    pat.as_object()["status"] = "True";
      set_default(spec, "manualSelector", false);
      set_default(spec, "podReplacementPolicy", has_pfp ? "Failed" : "TerminatingOrFailed");
      if (auto* tpl = spec.if_contains("template"); tpl && tpl->is_object()) default_pod_template(tpl->as_object());
    } else if (t.group == "batch" && t.resource == "cronjobs") {
      // SetDefaults_CronJob; the job template gets no Job defaults (SetDefaults_Job is the Job's,
      // not its spec's), its pod template the pod's (SetObjectDefaults_CronJob). Both templates'
      // ObjectMeta are structs: encoded with creationTimestamp null.
      auto& spec = obj_at(obj, "spec");
      if (str(spec, "concurrencyPolicy").empty()) spec["concurrencyPolicy"] = "Allow";
      set_default(spec, "suspend", false);
      set_default(spec, "successfulJobsHistoryLimit", 3);
      set_default(spec, "failedJobsHistoryLimit", 1);
      if (auto* jt = spec.if_contains("jobTemplate"); jt && jt->is_object()) {
        zero_template_meta(jt->as_object());
        if (auto* js = jt->as_object().if_contains("spec"); js && js->is_object())
          if (auto* tpl = js->as_object().if_contains("template"); tpl && tpl->is_object())
            default_pod_template(tpl->as_object());
      }
    }
  }
  // leaseStrategy.PrepareForCreate / PrepareForUpdate: CoordinatedLeaderElection (alpha, off in
  // v1.32) drops spec.strategy and spec.preferredHolder unless the old lease had them.
  if (t.group == "coordination.k8s.io" && t.resource == "leases" && r.subresource.empty() &&
      (create || r.operation == AdmissionRequest::Operation::Update))
    if (auto* spec = obj.if_contains("spec"); spec && spec->is_object()) {
      const json::object* old_spec = r.old_object ? spec_of(*r.old_object) : nullptr;
      for (const char* k : {"strategy", "preferredHolder"})
        if (!old_spec || !old_spec->contains(k) || old_spec->at(k).is_null()) spec->as_object().erase(k);
    }
  // A DaemonSet's spec.templateGeneration (internal only) travels in apps/v1 as the annotation
  // deprecated.daemonset.template.generation: decoding takes it out (its ParseInt error refused it
  // already: schema.cpp), and the fieldmanager sees the object converted back, with the body's
  // number, 0 when it had none. The strategies set it after validation (builtin_validation).
  if (t.group == "apps" && t.resource == "daemonsets" && (r.subresource.empty() || r.subresource == "status") &&
      (create || r.operation == AdmissionRequest::Operation::Update))
    set_template_generation(obj, template_generation(obj));
  // The fieldmanager runs here, between decoding and the strategies and admission plugins
  // (handlers/create.go, update.go, patch.go): what follows is owned by no writer.
  if (r.options && r.options->track_fields) {
    r.options->track_fields(r.old_object, obj);
  } else if (const char* manager = WritingAs::current();
             manager && r.clock && (r.subresource.empty() || r.subresource == "status")) {
    // A controller's, the scheduler's or the kubelet's own write (store.hpp WritingAs).
    track_update(r.old_object, obj, t, manager, to_rfc3339(r.clock->now()), r.subresource);
  }
  // The strategies' PrepareForCreate, the REST layer's allocations and the admission plugins.
  // DefaultTolerationSeconds handles creates and updates.
  if (core && t.resource == "pods" && r.subresource.empty() && r.operation == AdmissionRequest::Operation::Update)
    default_toleration_seconds(obj_at(obj, "spec"));
  if (t.group == "apps" && t.resource == "statefulsets" && r.subresource.empty() &&
      (create || r.operation == AdmissionRequest::Operation::Update))
    drop_statefulset_disabled_fields(obj, create ? nullptr : r.old_object);
  if (create && r.subresource.empty()) {
    clear_created_status(t, obj, r.clock);
    if (core && t.resource == "pods") {
      default_toleration_seconds(obj_at(obj, "spec"));
      apply_match_label_keys(obj);
      apparmor_version_skew(obj, r.options ? r.options->warnings : nullptr);
      auto& st = obj_at(obj, "status");
      set_default(st, "phase", "Pending");
      set_default(st, "qosClass", json::string(pod_qos_class(obj_at(obj, "spec"))));
    } else if (core && t.resource == "nodes") {
      // kube-controller-manager's TTL controller (pkg/controller/ttl) annotates every node with the
      // object TTL kubelets use for their caches: 0 s up to 100 nodes, which an embedded cluster is.
      set_default(obj_at(obj_at(obj, "metadata"), "annotations"), "node.alpha.kubernetes.io/ttl", "0");
    } else if (core && t.resource == "namespaces") {
      // namespaceStrategy.PrepareForCreate: the status Active, the kubernetes finalizer added to
      // the spec's (after the body's own).
      json::object& spec = obj_at(obj, "spec");
      json::array finalizers =
          fields::array_at(spec, "finalizers") ? *fields::array_at(spec, "finalizers") : json::array{};
      if (std::find(finalizers.begin(), finalizers.end(), json::value("kubernetes")) == finalizers.end())
        finalizers.emplace_back("kubernetes");
      spec["finalizers"] = std::move(finalizers);
      obj["status"] = json::object{{"phase", "Active"}};
    } else if (core && t.resource == "persistentvolumeclaims") {  // (a PV's status: clear_created_status)
      set_default(obj_at(obj, "status"), "phase", "Pending");
    } else if (core && t.resource == "services") {
      // beginCreate: the IP family fields, cluster IPs and node ports (embedded/validation_service.cpp).
      allocate_service(t, obj, r.options && r.options->dry_run);
    } else if (t.group == "batch" && t.resource == "jobs") {
      prepare_job_create(obj);
    }
  }
  if (core && t.resource == "services" && r.subresource.empty() && r.operation == AdmissionRequest::Operation::Update &&
      r.old_object)
    update_service(t, obj, *r.old_object, r.options && r.options->dry_run);  // beginUpdate, PrepareForUpdate
  if (core && t.resource == "persistentvolumes" && r.subresource == "status" && r.old_object)
    stamp_pv_phase_transition(obj, *r.old_object, r.clock);
}

// validateNodeTaints on `taints` at path `at`: each key a qualified name, each value a label value
// (its messages joined by ";"), an effect Kubernetes knows, and no key twice for one effect (the
// taint shown as core.Taint's %#v; a set timeAdded's time.Time printing is not reproduced).
void node_taints(const json::array& taints, const std::string& at, std::vector<StatusCause>& causes) {
  std::map<std::string, std::set<std::string>> seen;  // effect -> keys
  static const json::object kEmpty;
  for (std::size_t i = 0; i < taints.size(); ++i) {
    const json::object& t = taints[i].is_object() ? taints[i].as_object() : kEmpty;
    const std::string f = fmt::format("{}[{}]", at, i);
    const std::string key = str(t, "key"), value = str(t, "value"), effect = str(t, "effect");
    for (const auto& msg : qualified_name_errors(key))
      causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(key), msg), f + ".key"});
    if (const auto errs = label_value_errors(value); !errs.empty()) {
      std::string joined;
      for (const auto& m : errs) joined += (joined.empty() ? "" : ";") + m;
      causes.push_back(
          {"FieldValueInvalid", fmt::format("Invalid value: {}: {}", go_quote(value), joined), f + ".value"});
    }
    if (effect.empty())
      causes.push_back({"FieldValueRequired", "Required value", f + ".effect"});
    else if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute")
      causes.push_back(
          {"FieldValueNotSupported",
           fmt::format("Unsupported value: {}: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                       go_quote(effect)),
           f + ".effect"});
    if (seen[effect].count(key)) {
      if (!t.contains("timeAdded") || t.at("timeAdded").is_null())
        causes.push_back(
            {"FieldValueDuplicate",
             fmt::format("Duplicate value: core.Taint{{Key:{}, Value:{}, Effect:{}, TimeAdded:<nil>}}: taints must be "
                         "unique by key and effect pair",
                         go_quote(key), go_quote(value), go_quote(effect)),
             f});
      continue;
    }
    seen[effect].insert(key);
  }
}

// ValidatePersistentVolumeClaimSpec (a claim's, or an ephemeral volume's claim template's, at
// `prefix`): at least one access mode; a storage request above zero; storageClassName a DNS-1123
// subdomain (ValidateClassName); a known volumeMode.
void pvc_spec_causes(const json::object& sp, const std::string& prefix, std::vector<StatusCause>& causes,
                     bool allow_invalid_api_group) {
  fields::Errors e{causes};
  const json::array* modes = fields::array_at(sp, "accessModes");
  const bool no_modes = !modes || modes->empty();
  if (no_modes) e.required(prefix + "accessModes", "at least 1 access mode is required");
  // ValidatePersistentVolumeClaimSpec: the selector after the access modes' presence.
  if (const json::object* sel = fields::object_at(sp, "selector"))
    validate_label_selector(*sel, prefix + "selector", causes);
  access_mode_causes(modes, prefix + "accessModes", causes);
  const json::value* req = nullptr;
  if (const json::object* res = fields::object_at(sp, "resources"))
    if (const json::object* rq = fields::object_at(*res, "requests")) req = rq->if_contains("storage");
  if (!req || req->is_null()) {
    e.required(prefix + "resources[storage]");
  } else {
    try {
      const Quantity q = Quantity::parse(req->is_string() ? std::string(req->as_string()) : json::serialize(*req));
      if (!(q > Quantity::parse("0")))
        e.invalid(prefix + "resources[storage]", go_quote(q.to_string()), "must be greater than zero");
    } catch (const ValidationError&) {
      // decoding refused it already
    }
  }
  if (const auto cls = str(sp, "storageClassName"); !cls.empty())
    e.invalid(prefix + "storageClassName", cls, dns1123_subdomain_errors(cls));
  // (volumeMode is a pointer: "" is kept, not defaulted, and refused)
  if (const auto mode = str(sp, "volumeMode"); sp.contains("volumeMode") && mode != "Block" && mode != "Filesystem")
    e.not_supported(prefix + "volumeMode", mode, {"Block", "Filesystem"});
  // validateDataSource / validateDataSourceRef, then how the two agree.
  auto ref_at = [&](const char* k) -> const json::object* {
    static const json::object kNone;
    return fields::present(sp, k) ? (fields::object_at(sp, k) ? fields::object_at(sp, k) : &kNone) : nullptr;
  };
  const json::object* ds = ref_at("dataSource");
  const json::object* dsr = ref_at("dataSourceRef");
  for (const auto& [ref, key] : {std::pair{ds, "dataSource"}, std::pair{dsr, "dataSourceRef"}}) {
    if (!ref) continue;
    const std::string at = prefix + key;
    if (str(*ref, "name").empty()) e.required(at + ".name");
    const std::string kind = str(*ref, "kind"), group = str(*ref, "apiGroup");
    if (kind.empty()) e.required(at + ".kind");
    if (group.empty() && kind != "PersistentVolumeClaim")
      e.invalid(at, go_quote(kind), "must be 'PersistentVolumeClaim' when referencing the default apiGroup");
    if (!group.empty() && !allow_invalid_api_group) e.invalid(at + ".apiGroup", group, dns1123_subdomain_errors(group));
    if (ref == dsr)
      if (const std::string ns = str(*ref, "namespace"); !ns.empty())
        e.invalid(at + ".namespace", ns, dns1123_label_errors(ns));
  }
  // The value is a *field.Path, printed with %#v (its parent pointer as FIDELITY.md's 0xc000000000).
  const std::string path_value = "field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0xc000000000)}";
  const std::string spec_path = prefix.substr(0, prefix.size() - 1);
  if (dsr && !str(*dsr, "namespace").empty()) {
    if (ds) e.invalid(spec_path, path_value, "may not be specified when dataSourceRef.namespace is specified");
  } else if (ds && dsr) {
    // isDataSourceEqualDataSourceRef: apiGroup (both unset, or equal), kind and name.
    const bool g1_set = fields::present(*ds, "apiGroup"), g2_set = fields::present(*dsr, "apiGroup");
    const bool equal = g1_set == g2_set && (!g1_set || str(*ds, "apiGroup") == str(*dsr, "apiGroup")) &&
                       str(*ds, "kind") == str(*dsr, "kind") && str(*ds, "name") == str(*dsr, "name");
    if (!equal) e.invalid(spec_path, path_value, "must match dataSourceRef");
  }
}

// apps/validation ValidateDeploymentStrategy and ValidateRollingUpdateDeployment. The strategy is
// printed with %#v: a set rollingUpdate pointer as 0xc000000000 (FIDELITY.md, Go structs in messages).
void deployment_strategy(const json::object& st, Causes& causes) {
  const std::string type = str(st, "type");
  const json::value* ru = st.if_contains("rollingUpdate");
  const json::object* rolling = ru && ru->is_object() ? &ru->as_object() : nullptr;
  if (type == "Recreate") {
    if (rolling)
      causes.push_back({"FieldValueForbidden", "Forbidden: may not be specified when strategy `type` is 'Recreate'",
                        "spec.strategy.rollingUpdate"});
  } else if (type == "RollingUpdate") {
    if (!rolling) {
      causes.push_back({"FieldValueRequired", "Required value: this should be defaulted and never be nil",
                        "spec.strategy.rollingUpdate"});
      return;
    }
    const std::string at = "spec.strategy.rollingUpdate.";
    non_negative_or_percent(rolling, "maxUnavailable", at + "maxUnavailable", causes);
    non_negative_or_percent(rolling, "maxSurge", at + "maxSurge", causes);
    static const json::value kZero = 0;  // (defaulted: never absent once valid)
    const json::value* mu = rolling->if_contains("maxUnavailable");
    const json::value* ms = rolling->if_contains("maxSurge");
    const GoIntOrString unavailable(mu ? *mu : kZero), surge(ms ? *ms : kZero);
    if (unavailable.value() == 0 && surge.value() == 0)
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: may not be 0 when `maxSurge` is 0", unavailable.go()),
                        at + "maxUnavailable"});
    not_more_than_100_percent(rolling, "maxUnavailable", at + "maxUnavailable", causes);
  } else {
    causes.push_back({"FieldValueNotSupported",
                      fmt::format("Unsupported value: apps.DeploymentStrategy{{Type:{}, "
                                  "RollingUpdate:(*apps.RollingUpdateDeployment)({})}}: supported values: "
                                  "\"Recreate\", \"RollingUpdate\"",
                                  go_quote(type), rolling ? "0xc000000000" : "nil"),
                      "spec.strategy"});
  }
}

namespace {

// ValidateConfigMapUpdate / ValidateSecretUpdate's own rules: a Secret's type never changes, and
// once `immutable` is set it stays set and the data (a ConfigMap's binaryData too) stays as it is.
// reflect.DeepEqual tells a nil map from an empty one: the stored object's empty data decodes as
// nil (protobuf), a body's `data: {}` as an empty map.
Causes config_update_causes(const ResourceType& t, const json::object& obj, const json::object& old) {
  Causes out;
  const bool secret = t.resource == "secrets";
  if (secret && str(obj, "type") != str(old, "type"))
    out.push_back({"FieldValueInvalid",
                   fmt::format("Invalid value: {}: field is immutable", go_quote(str(obj, "type"))), "type"});
  const json::value* was = old.if_contains("immutable");
  if (!was || !was->is_bool() || !was->as_bool()) return out;
  const std::string why = "Forbidden: field is immutable when `immutable` is set";
  if (const json::value* now = obj.if_contains("immutable"); !now || !now->is_bool() || !now->as_bool())
    out.push_back({"FieldValueForbidden", why, "immutable"});
  auto differs = [&](const char* key) {
    const json::value* a = old.if_contains(key);
    const json::value* b = obj.if_contains(key);
    const bool a_nil = !a || a->is_null() || (a->is_object() && a->as_object().empty());
    const bool b_nil = !b || b->is_null();
    return a_nil != b_nil || (!a_nil && !util::json_equal(*a, *b));
  };
  for (const char* key : {"data", "binaryData"})
    if ((!secret || std::string_view(key) == "data") && differs(key)) out.push_back({"FieldValueForbidden", why, key});
  return out;
}

// A template's pod spec is validated even when absent (an empty PodSpec has no containers): the
// template is a struct in Go, decoded as a zero one and defaulted.
const json::object& absent_pod_spec() {
  static const json::object kNoPodSpec = [] {
    json::object spec;
    default_pod_spec(spec);
    return spec;
  }();
  return kNoPodSpec;
}

// ValidatePodTemplateSpec on `tpl` (null: an absent template) at `prefix` ("spec.template.",
// "template."): its labels and annotations, then its pod spec.
void pod_template_spec_causes(const json::object* tpl, const std::string& prefix, Causes& causes) {
  const json::object* tmeta = tpl ? fields::object_at(*tpl, "metadata") : nullptr;
  const json::object* ps = tpl ? fields::object_at(*tpl, "spec") : nullptr;
  if (tmeta) validate_labels_and_annotations(*tmeta, prefix, causes);
  validate_pod_spec(ps ? *ps : absent_pod_spec(), tmeta, prefix + "spec.", PodSpecOf::Template, causes);
}

// apps/validation ValidateDaemonSetSpec (v1.32): the selector (ValidateLabelSelector; one that
// parses must match the template's labels, a missing one matching nothing; an empty one is
// refused), the template (ValidatePodTemplateSpec), restartPolicy Always only, no
// activeDeadlineSeconds, minReadySeconds, the update strategy (ValidateDaemonSetUpdateStrategy,
// ValidateRollingUpdateDaemonSet), revisionHistoryLimit. (templateGeneration is the strategy's:
// never negative, and ValidateDaemonSetSpecUpdate's rules always hold after PrepareForUpdate.)
void daemonset_spec_causes(const json::object& obj, Causes& causes) {
  const json::object& sp = spec_or_empty(obj);
  const json::object* sel = fields::object_at(sp, "selector");
  const json::object* tpl = fields::object_at(sp, "template");
  const json::object* tmeta = tpl ? fields::object_at(*tpl, "metadata") : nullptr;
  const json::object* labels = tmeta ? fields::object_at(*tmeta, "labels") : nullptr;
  bool parses = true;
  if (sel) {
    const std::size_t before = causes.size();
    validate_label_selector(*sel, "spec.selector", causes);
    parses = causes.size() == before;  // (LabelSelectorAsSelector refuses what ValidateLabelSelector does)
  }
  if (parses && (!sel || !util::selector_matches(*sel, labels)))
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: `selector` does not match template `labels`", go_map(labels)),
                      "spec.template.metadata.labels"});
  if (sel) {
    const json::object* ml = fields::object_at(*sel, "matchLabels");
    const json::array* me = fields::array_at(*sel, "matchExpressions");
    if ((!ml || ml->empty()) && (!me || me->empty()))
      causes.push_back(
          {"FieldValueInvalid",
           fmt::format("Invalid value: {}: empty selector is invalid for daemonset", go_label_selector(sel)),
           "spec.selector"});
  }
  pod_template_spec_causes(tpl, "spec.template.", causes);
  template_restart_policy_causes(false, &sp, "spec.", causes, "DaemonSet");
  non_negative(&sp, "minReadySeconds", "spec.minReadySeconds", causes);
  static const json::object kNone;
  const json::object* st = fields::object_at(sp, "updateStrategy");
  const std::string type = str(st ? *st : kNone, "type");
  const json::object* ru = st ? fields::object_at(*st, "rollingUpdate") : nullptr;
  if (type == "RollingUpdate") {
    const std::string at = "spec.updateStrategy.rollingUpdate.";
    if (!ru) {
      causes.push_back({"FieldValueRequired", "Required value", "spec.updateStrategy.rollingUpdate"});
    } else {
      non_negative_or_percent(ru, "maxUnavailable", at + "maxUnavailable", causes);
      non_negative_or_percent(ru, "maxSurge", at + "maxSurge", causes);
      not_more_than_100_percent(ru, "maxUnavailable", at + "maxUnavailable", causes);
      not_more_than_100_percent(ru, "maxSurge", at + "maxSurge", causes);
      // Exactly one of them non-zero (getIntOrPercentValue; a nil one is the zero IntOrString).
      static const json::value kZero = 0;
      const json::value* mu = ru->if_contains("maxUnavailable");
      const json::value* ms = ru->if_contains("maxSurge");
      const GoIntOrString unavailable(mu && !mu->is_null() ? *mu : kZero), surge(ms && !ms->is_null() ? *ms : kZero);
      if (unavailable.value() != 0 && surge.value() != 0)
        causes.push_back({"FieldValueInvalid",
                          fmt::format("Invalid value: {}: may not be set when maxUnavailable is non-zero", surge.go()),
                          at + "maxSurge"});
      else if (unavailable.value() == 0 && surge.value() == 0)
        causes.push_back(
            {"FieldValueRequired", "Required value: cannot be 0 when maxSurge is 0", at + "maxUnavailable"});
    }
  } else if (type != "OnDelete") {
    // NotSupported prints the strategy with %#v: a set rollingUpdate pointer as 0xc000000000.
    causes.push_back({"FieldValueNotSupported",
                      fmt::format("Unsupported value: apps.DaemonSetUpdateStrategy{{Type:{}, "
                                  "RollingUpdate:(*apps.RollingUpdateDaemonSet)({})}}: supported values: "
                                  "\"RollingUpdate\", \"OnDelete\"",
                                  go_quote(type), ru ? "0xc000000000" : "nil"),
                      "spec.updateStrategy"});
  }
  non_negative(&sp, "revisionHistoryLimit", "spec.revisionHistoryLimit", causes);
}

// apps/validation ValidateStatefulSetSpec (v1.32): podManagementPolicy, the update strategy (a
// rollingUpdate's partition; maxUnavailable is dropped first, its gate being off), the PVC
// retention policy, replicas, minReadySeconds, ordinals.start, the selector (required, valid, not
// empty), then ValidatePodTemplateSpecForStatefulSet (a non-empty selector matching the template's
// labels, which a missing one never does; the template's labels and annotations: its pod spec is
// not validated, nor are the volumeClaimTemplates), restartPolicy Always only and no
// activeDeadlineSeconds.
void statefulset_spec_causes(const json::object& obj, Causes& causes) {
  const json::object& sp = spec_or_empty(obj);
  if (const std::string policy = str(sp, "podManagementPolicy"); policy.empty())
    causes.push_back({"FieldValueRequired", "Required value", "spec.podManagementPolicy"});
  else if (policy != "OrderedReady" && policy != "Parallel")
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: must be 'OrderedReady' or 'Parallel'", go_quote(policy)),
                      "spec.podManagementPolicy"});
  static const json::object kNone;
  const json::object* st = fields::object_at(sp, "updateStrategy");
  const std::string type = str(st ? *st : kNone, "type");
  const json::object* ru = st ? fields::object_at(*st, "rollingUpdate") : nullptr;
  auto max_unavailable = [&] {  // (*intstr.IntOrString): %#v of a pointer field
    return ru && fields::present(*ru, "maxUnavailable") ? "0xc000000000" : "nil";
  };
  if (type.empty()) {
    causes.push_back({"FieldValueRequired", "Required value", "spec.updateStrategy"});
  } else if (type == "OnDelete") {
    if (ru)
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: apps.RollingUpdateStatefulSetStrategy{{Partition:{}, "
                                    "MaxUnavailable:(*intstr.IntOrString)({})}}: only allowed for updateStrategy "
                                    "'RollingUpdate'",
                                    fields::int_at(*ru, "partition").value_or(0), max_unavailable()),
                        "spec.updateStrategy.rollingUpdate"});
  } else if (type == "RollingUpdate") {
    if (ru) non_negative(ru, "partition", "spec.updateStrategy.rollingUpdate.partition", causes);
  } else {
    // %#v of the strategy: a set rollingUpdate pointer as 0xc000000000 (FIDELITY.md).
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: apps.StatefulSetUpdateStrategy{{Type:{}, "
                                  "RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)({})}}: must be "
                                  "'RollingUpdate' or 'OnDelete'",
                                  go_quote(type), ru ? "0xc000000000" : "nil"),
                      "spec.updateStrategy"});
  }
  if (const json::object* policy = fields::object_at(sp, "persistentVolumeClaimRetentionPolicy"))
    for (const char* k : {"whenDeleted", "whenScaled"})
      if (const std::string v = str(*policy, k); v != "Retain" && v != "Delete")
        causes.push_back({"FieldValueNotSupported",
                          fmt::format("Unsupported value: {}: supported values: \"Retain\", \"Delete\"", go_quote(v)),
                          fmt::format("spec.persistentVolumeClaimRetentionPolicy.{}", k)});
  non_negative(&sp, "replicas", "spec.replicas", causes);
  non_negative(&sp, "minReadySeconds", "spec.minReadySeconds", causes);
  if (const json::object* ord = fields::object_at(sp, "ordinals"))
    non_negative(ord, "start", "spec.ordinals.start", causes);
  const json::object* sel = fields::object_at(sp, "selector");
  const SelectorCheck selector = required_selector_causes(sel, "statefulset", causes);
  const json::object* tpl = fields::object_at(sp, "template");
  const json::object* tmeta = tpl ? fields::object_at(*tpl, "metadata") : nullptr;
  const json::object* ps = tpl ? fields::object_at(*tpl, "spec") : nullptr;
  const json::object& pod_spec = ps ? *ps : absent_pod_spec();
  if (!selector.parses) {
    // LabelSelectorAsSelector's error: field.Invalid with no detail.
    causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}", go_label_selector(sel)), "spec.selector"});
  } else {
    const json::object* labels = tmeta ? fields::object_at(*tmeta, "labels") : nullptr;
    // A missing selector is labels.Nothing() (never empty, matching nothing); an empty one
    // labels.Everything() (empty: not compared).
    if (!selector.empty && (!sel || !util::selector_matches(*sel, labels)))
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: `selector` does not match template `labels`", go_map(labels)),
                        "spec.template.metadata.labels"});
    if (tmeta) {
      validate_labels_and_annotations(*tmeta, "spec.template.", causes);
      if (const json::object* ann = fields::object_at(*tmeta, "annotations"))
        validate_template_annotations(*ann, pod_spec, causes);
    }
  }
  template_restart_policy_causes(false, &sp, "spec.", causes, "StatefulSet");
}

// ValidateStatefulSetUpdate's last rule: past replicas, ordinals, template, updateStrategy,
// persistentVolumeClaimRetentionPolicy and minReadySeconds, the spec is unchanged
// (apiequality.Semantic: `stored`, the new object in its stored form, against the old one).
Causes statefulset_update_causes(const json::object& stored, const json::object& old) {
  auto rest = [](const json::object& o) {
    const json::value* sp = o.if_contains("spec");
    json::object spec = sp && sp->is_object() ? sp->as_object() : json::object{};
    for (const char* k : {"replicas", "template", "updateStrategy", "minReadySeconds", "ordinals",
                          "persistentVolumeClaimRetentionPolicy"})
      spec.erase(k);
    return json::value(std::move(spec));
  };
  if (semantic_equal(rest(stored), rest(old))) return {};
  return {{"FieldValueForbidden",
           "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
           "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
           "spec"}};
}

// ValidateStatefulSetStatus, ValidateDeploymentStatus, ValidateReplicaSetStatus (apps
// validation.go, their XStatusUpdate's rules after the metadata): the counts never negative
// (observedGeneration and collisionCount where set), those counting pods none above
// status.replicas, and availableReplicas not above readyReplicas, worded per kind.
void replica_status_causes(const ResourceType& t, const json::object& obj, Causes& causes) {
  struct Rules {
    std::initializer_list<const char*> non_negative, within_replicas;
    std::string_view over_ready;
  };
  static const Rules kStatefulSet{{"replicas", "readyReplicas", "currentReplicas", "updatedReplicas",
                                   "availableReplicas", "observedGeneration", "collisionCount"},
                                  {"readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"},
                                  "cannot be greater than status.readyReplicas"};
  static const Rules kDeployment{{"observedGeneration", "replicas", "updatedReplicas", "readyReplicas",
                                  "availableReplicas", "unavailableReplicas", "collisionCount"},
                                 {"updatedReplicas", "readyReplicas", "availableReplicas"},
                                 "cannot be greater than readyReplicas"};
  static const Rules kReplicaSet{
      {"replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"},
      {"fullyLabeledReplicas", "readyReplicas", "availableReplicas"},
      "cannot be greater than readyReplicas"};
  const Rules& rules = t.resource == "statefulsets"  ? kStatefulSet
                       : t.resource == "deployments" ? kDeployment
                                                     : kReplicaSet;
  static const json::object kNone;
  const json::object* stp = fields::object_at(obj, "status");
  const json::object& st = stp ? *stp : kNone;
  for (const char* k : rules.non_negative) non_negative(&st, k, fmt::format("status.{}", k), causes);
  auto count = [&](const char* k) { return fields::int_at(st, k).value_or(0); };
  const std::int64_t replicas = count("replicas");
  for (const char* k : rules.within_replicas)
    if (count(k) > replicas)
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: cannot be greater than status.replicas", count(k)),
                        fmt::format("status.{}", k)});
  if (count("availableReplicas") > count("readyReplicas"))
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: {}", count("availableReplicas"), rules.over_ready),
                      "status.availableReplicas"});
}

// metav1validation.ValidateConditions (apimachinery meta/v1/validation): a metav1.Condition list
// (a PodDisruptionBudget's): no type twice, each type a label name, a known status, a
// non-negative observedGeneration, lastTransitionTime and reason set, the reason's format and
// length, the message's length.
void metav1_conditions_causes(const json::array* conditions, const std::string& at, Causes& causes) {
  if (!conditions) return;
  fields::Errors e{causes};
  static const std::regex kReason("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$");
  std::set<std::string, std::less<>> seen;
  for (std::size_t i = 0; i < conditions->size(); ++i) {
    const json::object& c = (*conditions)[i].is_object() ? (*conditions)[i].as_object() : fields::kNone;
    const std::string f = fmt::format("{}[{}]", at, i);
    const std::string type = fields::string_at(c, "type"), status = fields::string_at(c, "status");
    const std::string reason = fields::string_at(c, "reason"), message = fields::string_at(c, "message");
    if (!seen.insert(type).second) e.duplicate(f + ".type", fields::q(type));
    e.invalid(f + ".type", type, qualified_name_errors(type));
    if (status != "False" && status != "True" && status != "Unknown")
      e.not_supported(f + ".status", status, {"False", "True", "Unknown"});
    if (const auto g = fields::int_at(c, "observedGeneration"); g && *g < 0)
      e.invalid(f + ".observedGeneration", std::to_string(*g), "must be greater than or equal to zero");
    if (fields::string_at(c, "lastTransitionTime").empty()) e.required(f + ".lastTransitionTime", "must be set");
    if (reason.empty()) {
      e.required(f + ".reason", "must be set");
    } else {
      if (!std::regex_match(reason, kReason))
        e.invalid(f + ".reason", fields::q(reason),
                  "a condition reason must start with alphabetic character, optionally followed by a string of "
                  "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
                  "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used "
                  "for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')");
      if (reason.size() > 1024)
        causes.push_back({"FieldValueTooLong", "Too long: may not be more than 1024 bytes", f + ".reason"});
    }
    if (message.size() > 32 * 1024)
      causes.push_back({"FieldValueTooLong", "Too long: may not be more than 32768 bytes", f + ".message"});
  }
}

// ValidatePersistentVolumeClaimStatusUpdate's rules past the metadata: the capacity's quantities
// not negative (validateBasicResource: the value as int64), the allocated resources' names
// (validatePersistentVolumeClaimResourceKey: a qualified name, of the native ones only storage)
// and quantities, and the resize statuses (RecoverVolumeExpansionFailure, on in v1.32), at
// `status.allocatedResourceStatus` (sic) naming the resource. Go walks these maps in random
// order; several bad keys come here in key order (FIDELITY.md difference 20).
void pvc_status_causes(const json::object& obj, Causes& causes) {
  fields::Errors e{causes};
  const json::object* st = fields::object_at(obj, "status");
  if (!st) return;
  auto basic = [&](const std::string& at, const json::value& v) {
    if (!v.is_string()) return true;
    try {
      const Quantity qty = Quantity::parse(v.as_string());
      if (!qty.is_negative()) return true;
      e.invalid(at, std::to_string(qty.value()), "must be a valid resource quantity");
    } catch (const std::exception&) {
      // refused when decoded
    }
    return false;
  };
  auto resource_key = [&](const std::string& at, const std::string& key) {
    const auto errs = qualified_name_errors(key);
    e.invalid(at, key, errs);
    if (!errs.empty()) return false;
    if (is_native_resource(key) && key != "storage") {
      e.not_supported(at, key, {"storage"});
      return false;
    }
    return true;
  };
  if (const json::object* cap = fields::object_at(*st, "capacity"))
    for (const auto& k : fields::sorted_keys(cap)) basic(fmt::format("status.capacity[{}]", k), cap->at(k));
  if (const json::object* statuses = fields::object_at(*st, "allocatedResourceStatuses"))
    for (const auto& k : fields::sorted_keys(statuses)) {
      resource_key("status.allocatedResourceStatus", k);
      const json::value& v = statuses->at(k);
      const std::string_view s = v.is_string() ? std::string_view(v.as_string()) : std::string_view{};
      if (s != "ControllerResizeInProgress" && s != "ControllerResizeInfeasible" && s != "NodeResizeInProgress" &&
          s != "NodeResizeInfeasible" && s != "NodeResizePending")
        causes.push_back({"FieldValueNotSupported",
                          fmt::format("Unsupported value: {}: supported values: \"ControllerResizeInProgress\", "
                                      "\"ControllerResizeInfeasible\", \"NodeResizeInProgress\", "
                                      "\"NodeResizeInfeasible\", \"NodeResizePending\"",
                                      k),  // a ResourceName, a fmt.Stringer: unquoted
                          "status.allocatedResourceStatus"});
    }
  if (const json::object* alloc = fields::object_at(*st, "allocatedResources"))
    for (const auto& k : fields::sorted_keys(alloc))
      if (resource_key("status.allocatedResources", k))
        basic(fmt::format("status.allocatedResources[{}]", k), alloc->at(k));
}

// ValidatePodDisruptionBudgetStatusUpdate (policy/v1): the conditions, then the four counts
// never negative.
void pdb_status_causes(const json::object& obj, Causes& causes) {
  const json::object* st = fields::object_at(obj, "status");
  metav1_conditions_causes(st ? fields::array_at(*st, "conditions") : nullptr, "status.conditions", causes);
  for (const char* k : {"disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"})
    non_negative(st, k, fmt::format("status.{}", k), causes);
}

// apps/validation ValidateControllerRevisionCreate / ValidateControllerRevisionUpdate's own
// rules (validateControllerRevision's metadata is the strategy's): revision never negative; on
// create, data a JSON object; on update, data unchanged (ValidateImmutableField prints the
// RawExtension with %#v: its bytes in hex).
void controller_revision_causes(const json::object& obj, const json::object* old, Causes& spec, Causes& immutable) {
  non_negative(&obj, "revision", "revision", spec);
  const json::value* data = obj.if_contains("data");
  const bool nil = !data || data->is_null();
  if (!old) {
    if (nil)
      spec.push_back({"FieldValueRequired", "Required value: data is mandatory", "data"});
    else if (!data->is_object())
      spec.push_back({"FieldValueRequired", "Required value: data must be a valid JSON object", "data"});
    return;
  }
  const json::value* was = old->if_contains("data");
  if (same_value(was, data)) return;
  std::string raw = "[]uint8(nil)";
  if (!nil) {
    raw = "[]uint8{";
    const std::string bytes = go_marshal(*data);
    for (std::size_t i = 0; i < bytes.size(); ++i)
      raw += fmt::format("{}0x{:x}", i ? ", " : "", static_cast<unsigned char>(bytes[i]));
    raw += "}";
  }
  immutable.push_back(
      {"FieldValueInvalid",
       fmt::format("Invalid value: runtime.RawExtension{{Raw:{}, Object:runtime.Object(nil)}}: field is immutable",
                   raw),
       "data"});
}

// validateCronJobSpec (batch/validation, v1.32): the schedule (cron.ParseStandard, and TZ only
// where the old schedule had it), startingDeadlineSeconds, the time zone when new or changed
// (validateTimeZone: IANA name characters, not Local, time.LoadLocation), concurrencyPolicy, the
// job template (ValidateJobTemplateSpec: validateJobSpec at spec.jobTemplate.spec, no selector,
// no manualSelector), then the history limits.
void cronjob_spec_causes(const json::object& obj, const json::object* old_obj, Causes& causes) {
  static const json::object kNone;
  const json::object& sp = spec_or_empty(obj);
  const json::object* old_sp = old_obj ? spec_of(*old_obj) : nullptr;
  fields::Errors e{causes};
  const std::string schedule = str(sp, "schedule");
  const json::value* tzv = sp.if_contains("timeZone");
  const bool has_tz = tzv && !tzv->is_null();
  const std::string tz = str(sp, "timeZone");
  if (schedule.empty()) {
    e.required("spec.schedule");
  } else {
    const bool allow_tz = old_sp && str(*old_sp, "schedule").find("TZ") != std::string::npos;
    try {
      (void)CronSchedule::parse(schedule, [](std::string_view zone) { return load_time_zone(zone); });
    } catch (const ValidationError& err) {
      e.invalid("spec.schedule", go_quote(schedule), err.rule());
    }
    const bool mentions_tz = schedule.find("TZ") != std::string::npos;
    if (allow_tz && mentions_tz && has_tz)
      e.invalid("spec.schedule", go_quote(schedule), "cannot use both timeZone field and TZ or CRON_TZ in schedule");
    else if (!allow_tz && mentions_tz)
      e.invalid("spec.schedule", go_quote(schedule),
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
  }
  non_negative(&sp, "startingDeadlineSeconds", "spec.startingDeadlineSeconds", causes);
  const json::value* old_tzv = old_sp ? old_sp->if_contains("timeZone") : nullptr;
  const bool old_has_tz = old_tzv && !old_tzv->is_null();
  const bool tz_changed = !old_sp || old_has_tz != has_tz || (has_tz && str(*old_sp, "timeZone") != tz);
  if (tz_changed && has_tz) {
    auto bad_part = [](std::string_view part) {
      if (part == "." || part == ".." || part.empty() || part.size() > 14 || part.front() == '-') return true;
      return part.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz.-_0123456789+") !=
             std::string_view::npos;
    };
    bool bad_chars = false;
    for (std::size_t from = 0;;) {
      const std::size_t slash = tz.find('/', from);
      bad_chars = bad_chars || bad_part(std::string_view(tz).substr(from, slash - from));
      if (slash == std::string::npos) break;
      from = slash + 1;
    }
    if (tz.empty()) {
      e.invalid("spec.timeZone", go_quote(tz), "timeZone must be nil or non-empty string");
    } else if (bad_chars) {
      e.invalid("spec.timeZone", go_quote(tz), "unknown time zone " + tz);
    } else {
      std::string lower = tz;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "local")
        e.invalid("spec.timeZone", go_quote(tz),
                  "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones");
      try {
        (void)load_time_zone(tz);
      } catch (const ValidationError& err) {
        e.invalid("spec.timeZone", go_quote(tz), err.rule());
      }
    }
  }
  if (const std::string policy = str(sp, "concurrencyPolicy"); policy.empty())
    e.required("spec.concurrencyPolicy");
  else if (policy != "Allow" && policy != "Forbid" && policy != "Replace")
    e.not_supported("spec.concurrencyPolicy", policy, {"Allow", "Forbid", "Replace"});
  // ValidateJobTemplateSpec -> validateJobSpec at spec.jobTemplate.spec.
  const json::object* jt = fields::object_at(sp, "jobTemplate");
  const json::object& js = jt && fields::object_at(*jt, "spec") ? *fields::object_at(*jt, "spec") : kNone;
  const std::string at = "spec.jobTemplate.spec.";
  {  // job_spec_causes words its fields from a Job's spec: moved under the template's path
    Causes job;
    job_spec_causes(js, job);
    for (auto& c : job) {
      if (c.field.rfind("spec.", 0) == 0) c.field = at + c.field.substr(5);
      causes.push_back(std::move(c));
    }
  }
  pod_template_spec_causes(fields::object_at(js, "template"), at + "template.", causes);
  template_restart_policy_causes(true, &js, at, causes);
  if (const json::value* sel = js.if_contains("selector"); sel && !sel->is_null())
    e.invalid(at + "selector", go_label_selector(sel->is_object() ? &sel->as_object() : &kNone),
              "`selector` will be auto-generated");
  if (const json::value* ms = js.if_contains("manualSelector"); ms && ms->is_bool() && ms->as_bool())
    causes.push_back({"FieldValueNotSupported", "Unsupported value: true: supported values: \"nil\", \"false\"",
                      at + "manualSelector"});
  non_negative(&sp, "successfulJobsHistoryLimit", "spec.successfulJobsHistoryLimit", causes);
  non_negative(&sp, "failedJobsHistoryLimit", "spec.failedJobsHistoryLimit", causes);
}

// ValidateDaemonSetStatusUpdate / ValidateStatefulSetStatusUpdate's apimachinery IsDecremented:
// status.collisionCount may not go down, nor be unset once set.
void collision_count_decremented(const json::object& obj, const json::object& old, Causes& causes) {
  static const json::object kNone;
  const json::object* st = fields::object_at(obj, "status");
  const json::object* old_st = fields::object_at(old, "status");
  const auto now = fields::int_at(st ? *st : kNone, "collisionCount");
  if (const auto was = fields::int_at(old_st ? *old_st : kNone, "collisionCount"); was && (!now || *now < *was))
    causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: cannot be decremented", now.value_or(0)),
                      "status.collisionCount"});
}

// The causes of a write in kube-apiserver's order. A create's (and a subresource's update's) are
// the strategy's: the metadata, then the kind's rules. An update's start with rest.BeforeUpdate's
// validateCommonFields — apimachinery's ValidateObjectMetaAccessor and
// ValidateObjectMetaAccessorUpdate — and go on with the strategy's ValidateUpdate, which runs
// ValidateObjectMeta (`meta`), ValidateObjectMetaUpdate and the spec rules once or twice, kind by
// kind (pkg/registry/<group>/<kind>/strategy.go): so a bad label is two to five causes there.
struct CauseParts {
  Causes meta;            // the strategy's ValidateObjectMeta
  Causes generated;       // a Job's validateGeneratedSelector (ValidateJob: after the metadata)
  Causes service_update;  // ValidateServiceUpdate's own rules (before ValidateService's metadata)
  Causes spec;            // the kind's own rules
  Causes job_name;        // ValidateJob's last rule: an Indexed Job's pod hostnames
  Causes volume;          // volumevalidation.ValidatePersistentVolume (after a PV's own rules)
  Causes immutable;       // the fields an update may not change
};

Causes assemble_causes(const AdmissionRequest& r, bool kube, const CauseParts& p) {
  const auto& [meta, generated, service_update, spec, job_name, volume, immutable] = p;
  Causes out;
  auto add = [&out](const auto&... parts) { (out.insert(out.end(), parts.begin(), parts.end()), ...); };
  const ResourceType& t = *r.type;
  const json::value* old_mdv = r.old_object ? r.old_object->if_contains("metadata") : nullptr;
  const bool status = r.subresource == "status";
  if (r.operation != AdmissionRequest::Operation::Update || !old_mdv || !old_mdv->is_object() ||
      (!r.subresource.empty() && !status)) {
    if (r.operation == AdmissionRequest::Operation::Create && t.group == "policy" &&
        t.resource == "poddisruptionbudgets" && r.subresource.empty()) {
      // rest.BeforeCreate: the strategy's Validate (ValidatePodDisruptionBudget, the spec only);
      // only when it passes, ValidateObjectMetaAccessor (`meta`, with path-segment names).
      add(spec.empty() ? meta : spec);
      return out;
    }
    add(meta, generated, service_update, spec, volume, job_name, immutable);
    return out;
  }
  const json::object& obj = *r.object;
  const json::object& md = obj.at("metadata").as_object();
  const json::object& old_md = old_mdv->as_object();
  // ValidateObjectMetaAccessor with path.ValidatePathSegmentName: a generateName may not contain
  // '/' or '%' (the name is the URL's).
  if (const std::string gen = str(md, "generateName"); !gen.empty())
    for (const char* c : {"/", "%"})
      if (gen.find(c) != std::string::npos)
        out.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: may not contain '{}'", go_quote(gen), c),
                       "metadata.generateName"});
  object_meta_causes(md, false, out);
  object_meta_update_causes(md, old_md, false, out);
  Causes update_meta;  // ValidateObjectMetaUpdate
  object_meta_update_causes(md, old_md, kube, update_meta);
  const bool core = t.group.empty();
  const std::string& res = t.resource;
  if (status && t.group == "apps" && res == "statefulsets") {
    // ValidateStatefulSetStatusUpdate: the status counts, ValidateObjectMetaUpdate, then
    // collisionCount.
    add(spec, update_meta, immutable);
  } else if (status) {
    // The status strategies' ValidateXStatusUpdate (customResourceValidator.ValidateStatusUpdate):
    // ValidateObjectMetaUpdate, then the status rules.
    add(update_meta, spec, immutable);
  } else if (t.schema) {
    // customResourceValidator.ValidateUpdate: ValidateObjectMetaAccessorUpdate, then the schema.
    add(update_meta, spec, immutable);
  } else if (t.group == "batch" && res == "jobs") {
    // ValidateJob (metadata, generated selector, ValidateJobSpec), then ValidateJobUpdate
    // (metadata, ValidateJobSpecUpdate: ValidateJobSpec again, then the immutable fields).
    add(meta, generated, spec, job_name, update_meta, spec, immutable);
  } else if (t.group == "apps" && (res == "replicasets" || res == "daemonsets")) {
    // ValidateReplicaSet, then ValidateReplicaSetUpdate (metadata, ValidateReplicaSetSpec again);
    // ValidateDaemonSet, then ValidateDaemonSetUpdate (metadata, ValidateDaemonSetSpecUpdate,
    // ValidateDaemonSetSpec again), then the selector.
    add(meta, spec, update_meta, spec, immutable);
  } else if (t.group == "apps" && res == "controllerrevisions") {
    // ValidateControllerRevisionUpdate: ValidateObjectMetaUpdate, validateControllerRevision
    // (ValidateObjectMeta, revision), then data.
    add(update_meta, meta, spec, immutable);
  } else if ((t.group == "apps" && (res == "deployments" || res == "statefulsets")) ||
             (core && (res == "resourcequotas" || res == "podtemplates")) || t.group == "scheduling.k8s.io" ||
             (t.group == "batch" && res == "cronjobs") || t.group == "coordination.k8s.io") {
    // ValidateDeploymentUpdate, ValidateStatefulSetUpdate, ValidateResourceQuotaUpdate,
    // ValidatePriorityClassUpdate, ValidateCronJobUpdate, ValidateLeaseUpdate, ValidatePodTemplateUpdate:
    // ValidateObjectMetaUpdate and the spec (then a StatefulSet's unchangeable fields), no
    // ValidateObjectMeta.
    add(update_meta, spec, immutable);
  } else if ((core && res == "pods") || (t.group == "networking.k8s.io" && res == "ingresses")) {
    // ValidatePodUpdate: ValidateObjectMetaUpdate, then validatePodMetadataAndSpec;
    // ValidateIngressUpdate: ValidateObjectMetaUpdate, then validateIngress (metadata, spec).
    add(update_meta, meta, spec, immutable);
  } else if (t.group == "storage.k8s.io" && res == "csidrivers") {
    // ValidateCSIDriverUpdate: ValidateObjectMetaUpdate, the spec, then the immutable fields.
    add(update_meta, spec, immutable);
  } else if (t.group == "networking.k8s.io" && res == "networkpolicies") {
    // The strategy's ValidateUpdate: ValidateNetworkPolicy (metadata, spec), then
    // ValidateNetworkPolicyUpdate (ValidateObjectMetaUpdate, the spec again).
    add(meta, spec, update_meta, spec, immutable);
  } else if (t.group == "networking.k8s.io" && res == "ingressclasses") {
    // ValidateIngressClassUpdate: ValidateObjectMetaUpdate, the immutable controller, then
    // ValidateIngressClass (metadata, spec).
    add(update_meta, immutable, meta, spec);
  } else if (core && res == "services") {
    // ValidateServiceUpdate: metadata, its own rules, then ValidateService.
    add(update_meta, service_update, meta, spec, immutable);
  } else if (core && res == "persistentvolumes") {
    // The strategy's ValidateUpdate: ValidatePersistentVolume, volumevalidation's, then
    // ValidatePersistentVolumeUpdate (ValidatePersistentVolume again, no ValidateObjectMetaUpdate,
    // then the immutable source, volume mode and node affinity).
    add(meta, spec, volume, meta, spec, immutable);
  } else if (core && res == "persistentvolumeclaims") {
    // ValidatePersistentVolumeClaim, then ValidatePersistentVolumeClaimUpdate (metadata,
    // ValidatePersistentVolumeClaim again, the immutable spec).
    add(meta, spec, update_meta, meta, spec, immutable);
  } else if (core && (res == "configmaps" || res == "secrets" || res == "serviceaccounts" || res == "endpoints")) {
    // ValidateConfigMapUpdate, ValidateSecretUpdate, ValidateServiceAccountUpdate,
    // ValidateEndpointsUpdate: metadata, their own rules, then the kind's Validate.
    add(update_meta);
    if (res == "configmaps" || res == "secrets") add(config_update_causes(t, obj, *r.old_object));
    add(meta, spec, immutable);
  } else if (t.group == "rbac.authorization.k8s.io") {
    // The RBAC strategies' ValidateUpdate: ValidateX, then ValidateXUpdate, which runs ValidateX
    // again before ValidateObjectMetaUpdate (then a binding's roleRef).
    add(meta, spec, meta, spec, update_meta, immutable);
  } else if ((core && (res == "namespaces" || res == "nodes")) || t.group == "storage.k8s.io" ||
             t.group == "node.k8s.io") {
    // ValidateX, then ValidateXUpdate (metadata and the update's rules; a RuntimeClass's
    // strategy: ValidateRuntimeClass, then ValidateRuntimeClassUpdate).
    add(meta, spec, update_meta, immutable);
  } else if ((t.group == "policy" && res == "poddisruptionbudgets") || (core && res == "events")) {
    // ValidatePodDisruptionBudget: the spec only; a core/v1 Event's ValidateEventUpdate: the legacy
    // rules only (checked before, embedded/events.cpp).
    add(spec, immutable);
  } else {
    add(meta, spec, immutable);
  }
  return out;
}

}  // namespace

void event_v1_meta_causes(const json::object& md, Causes& causes) {
  static const ResourceType kEventV1 = [] {
    ResourceType t;
    t.group = "events.k8s.io";
    t.resource = "events";
    return t;
  }();
  validate_name(kEventV1, str(md, "generateName"), causes, true);
  const std::string name = str(md, "name");
  if (name.empty())
    causes.push_back({"FieldValueRequired", "Required value: name or generateName is required", "metadata.name"});
  validate_name(kEventV1, name, causes);
  object_meta_causes(md, true, causes);
}

void builtin_validation(AdmissionRequest& r) {
  const auto w = written(r);
  if (!w) return;
  auto& [obj, t, name, create, core] = *w;
  const auto& md = obj["metadata"].as_object();
  // The kinds whose validation is core/validation's ValidateObjectMeta and ValidateObjectMetaUpdate
  // (validateKubeFinalizerName): core, apps, batch, and the groups whose validation.go calls them
  // (networking, scheduling, storage, rbac, discovery; a core/v1 Event has none); node.k8s.io, coordination.k8s.io,
  // policy and apiextensions use apimachinery's, which leaves finalizer names to any form.
  const bool kube = (core && t.resource != "events") || t.group == "apps" || t.group == "batch" ||
                    t.group == "networking.k8s.io" || t.group == "scheduling.k8s.io" || t.group == "storage.k8s.io" ||
                    t.group == "rbac.authorization.k8s.io" || t.group == "discovery.k8s.io";
  // The strategy's metadata rules (ValidateObjectMeta): on create, a missing name is one error
  // among the object's others.
  CauseParts parts;
  if (r.options) parts.spec = r.options->strategy_causes;  // (an Event's legacy rules: api_create.cpp)
  Causes& meta = parts.meta;
  validate_name(t, str(md, "generateName"), meta, true);  // (an update's too: it may change)
  if (create) {
    if (name.empty())
      meta.push_back({"FieldValueRequired", "Required value: name or generateName is required", "metadata.name"});
    validate_name(t, name, meta);
  }
  object_meta_causes(md, kube, meta);
  Causes& causes = parts.spec;
  Causes revision_data;  // a ControllerRevision's data changed (ValidateControllerRevisionUpdate)
  if (r.subresource == "ephemeralcontainers" && core && t.resource == "pods" && r.old_object) {
    // ValidatePodEphemeralContainersUpdate: validatePodMetadataAndSpec,
    // ValidatePodSpecificAnnotationUpdates, then the ephemeral containers' own rules.
    validate_pod_spec(spec_or_empty(obj), &md, "spec.", PodSpecOf::UpdatedPod, causes);
    const json::value* old_md = r.old_object->if_contains("metadata");
    const json::object& old_meta = old_md && old_md->is_object() ? old_md->as_object() : json::object{};
    validate_pod_annotation_updates(md, old_meta, spec_or_empty(obj), causes);
    static const json::object kNoSpec;
    const json::object* old_spec = spec_of(*r.old_object);
    validate_ephemeral_containers_update(old_meta, spec_or_empty(obj), old_spec ? *old_spec : kNoSpec, causes);
  } else if (r.subresource.empty()) {
    if (core && t.resource == "pods") {
      if (const auto* spec = obj.if_contains("spec"); spec && spec->is_object())
        validate_pod_spec(spec->as_object(), &md, "spec.", create ? PodSpecOf::NewPod : PodSpecOf::UpdatedPod, causes);
      else
        causes.push_back({"FieldValueRequired", "Required value", "spec.containers"});
      if (const json::object* old_spec = r.old_object ? spec_of(*r.old_object) : nullptr; !create && old_spec) {
        const json::value* old_md = r.old_object->if_contains("metadata");
        validate_pod_annotation_updates(md, old_md && old_md->is_object() ? old_md->as_object() : json::object{},
                                        spec_or_empty(obj), causes);
        validate_pod_update(spec_or_empty(obj), *old_spec, causes);
      }
    } else if ((t.group == "apps" && (t.resource == "deployments" || t.resource == "replicasets")) ||
               (t.group == "batch" && t.resource == "jobs")) {
      // pkg/apis/apps/validation/validation.go ValidateDeploymentSpec / ValidateReplicaSetSpec and
      // pkg/apis/batch/validation/validation.go validateJobSpec: counts are never negative.
      const json::object& sp = spec_or_empty(obj);
      bool template_checked = true;
      if (t.group == "apps") {
        non_negative(spec_of(obj), "replicas", "spec.replicas", causes);
        // ValidateReplicaSetSpec: minReadySeconds before the selector (a Deployment's comes last).
        if (t.resource == "replicasets") non_negative(spec_of(obj), "minReadySeconds", "spec.minReadySeconds", causes);
        template_checked = replicated_template_causes(obj, causes);
      } else {
        job_spec_causes(sp, causes);  // validateJobSpec
      }
      if (template_checked) pod_template_spec_causes(fields::object_at(sp, "template"), "spec.template.", causes);
      if (template_checked) template_restart_policy_causes(t.group == "batch", spec_of(obj), "spec.", causes);
      if (t.group == "batch") {
        job_generated_selector_causes(obj, create || !r.old_object || job_had_prefixed_labels(*r.old_object),
                                      parts.generated);
        job_selector_causes(obj, causes);
        // ValidateJob: an Indexed Job's last pod hostname (<name>-<completions-1>) a DNS-1123 label.
        if (str(sp, "completionMode") == "Indexed")
          if (const auto n = fields::int_at(sp, "completions"); n && *n > 0)
            if (const std::string host = fmt::format("{}-{}", name, *n - 1); !dns1123_label_errors(host).empty())
              parts.job_name.push_back(
                  {"FieldValueInvalid",
                   fmt::format("Invalid value: {}: will not able to create pod with invalid DNS label: {}",
                               go_quote(name), host),
                   "metadata.name"});
      }
      // ValidateDeploymentSpec: the strategy after the template, then minReadySeconds,
      // revisionHistoryLimit and progressDeadlineSeconds (defaulted to 600), which must exceed
      // minReadySeconds.
      if (t.resource == "deployments") {
        if (const auto* st = sp.if_contains("strategy"); st && st->is_object())
          deployment_strategy(st->as_object(), causes);
        non_negative(&sp, "minReadySeconds", "spec.minReadySeconds", causes);
        non_negative(&sp, "revisionHistoryLimit", "spec.revisionHistoryLimit", causes);
        if (const auto pds = fields::int_at(sp, "progressDeadlineSeconds")) {
          non_negative(&sp, "progressDeadlineSeconds", "spec.progressDeadlineSeconds", causes);
          if (*pds <= fields::int_at(sp, "minReadySeconds").value_or(0))
            causes.push_back({"FieldValueInvalid",
                              fmt::format("Invalid value: {}: must be greater than minReadySeconds", *pds),
                              "spec.progressDeadlineSeconds"});
        }
      }
    } else if (t.group == "apps" && t.resource == "daemonsets") {
      daemonset_spec_causes(obj, causes);
    } else if (t.group == "apps" && t.resource == "statefulsets") {
      statefulset_spec_causes(obj, causes);
    } else if (t.group == "apps" && t.resource == "controllerrevisions") {
      controller_revision_causes(obj, create ? nullptr : r.old_object, causes, revision_data);
    } else if (t.group == "batch" && t.resource == "cronjobs") {
      cronjob_spec_causes(obj, create ? nullptr : r.old_object, causes);
      // ValidateCronJobCreate's last rule: the controller names its Jobs <name>-<11 characters>.
      if (create && name.size() > 52)
        parts.job_name.push_back({"FieldValueInvalid",
                                  fmt::format("Invalid value: {}: must be no more than 52 characters", go_quote(name)),
                                  "metadata.name"});
    } else if (t.group == "coordination.k8s.io" && t.resource == "leases") {
      // coordination/validation ValidateLeaseSpec (strategy and preferredHolder are dropped first).
      const json::object& sp = spec_or_empty(obj);
      if (const auto d = fields::int_at(sp, "leaseDurationSeconds"); d && *d <= 0)
        causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: must be greater than 0", *d),
                          "spec.leaseDurationSeconds"});
      if (const auto n = fields::int_at(sp, "leaseTransitions"); n && *n < 0)
        causes.push_back({"FieldValueInvalid", fmt::format("Invalid value: {}: must be greater than or equal to 0", *n),
                          "spec.leaseTransitions"});
    } else if (t.group == "node.k8s.io" && t.resource == "runtimeclasses") {
      validate_runtime_class(obj, causes);
    } else if (is_networking_kind(t)) {
      networking_causes(t, obj, create ? nullptr : r.old_object, causes);
    } else if (core && t.resource == "podtemplates") {
      // ValidatePodTemplate / ValidatePodTemplateUpdate: ValidatePodTemplateSpec at "template"
      // (its labels and annotations, then the pod spec; no ephemeral containers).
      pod_template_spec_causes(fields::object_at(obj, "template"), "template.", causes);
    } else if (core && t.resource == "services") {
      // ValidateServiceUpdate's rules, then ValidateService (embedded/validation_service.cpp).
      if (!create && r.old_object) validate_service_update(obj, *r.old_object, parts.service_update);
      validate_service(obj, causes);
    } else if (t.group == "storage.k8s.io" && t.resource == "csidrivers") {
      csi_driver_spec_causes(spec_or_empty(obj), causes);
    } else if (core && t.resource == "endpoints") {
      endpoint_subsets_causes(obj, causes);
    } else if (t.group == "discovery.k8s.io" && t.resource == "endpointslices") {
      endpoint_slice_causes(obj, causes);
    } else if (core && t.resource == "namespaces") {
      // ValidateNamespace past the metadata: each spec finalizer (validateFinalizerName: a
      // qualified name, then validateKubeFinalizerName), all at spec.finalizers.
      for (const auto& f : fields::strings_at(spec_or_empty(obj), "finalizers")) {
        add_errors(causes, qualified_name_errors(f), "spec.finalizers", f);
        kube_finalizer_name(f, "spec.finalizers", causes);
      }
    } else if (core && t.resource == "persistentvolumes") {
      validate_persistent_volume_spec(spec_or_empty(obj), name, causes);
      // pkg/volume/validation ValidatePersistentVolume (checkMountOption): the mount options
      // annotation only on the sources that take mount options.
      constexpr std::string_view kMountOptions = "volume.beta.kubernetes.io/mount-options";
      static const char* const kMountable[] = {"gcePersistentDisk",
                                               "awsElasticBlockStore",
                                               "glusterfs",
                                               "nfs",
                                               "rbd",
                                               "quobyte",
                                               "iscsi",
                                               "cinder",
                                               "cephfs",
                                               "azureFile",
                                               "vsphereVolume",
                                               "azureDisk",
                                               "photonPersistentDisk"};
      const json::object& sp = spec_or_empty(obj);
      if (util::annotation(obj, kMountOptions) && std::none_of(std::begin(kMountable), std::end(kMountable),
                                                               [&](const char* k) { return fields::present(sp, k); }))
        parts.volume.push_back({"FieldValueForbidden", "Forbidden: may not specify mount options for this volume type",
                                fmt::format("metadata.annotations.{}", kMountOptions)});
    } else if (core && t.resource == "persistentvolumeclaims") {
      // ValidationOptionsForPersistentVolumeClaim: an old claim with a data source's apiGroup set
      // lets its invalid group stay (allowInvalidAPIGroupInDataSourceOrRef).
      bool allow_invalid_group = false;
      if (!create && r.old_object)
        if (const json::object* os = spec_of(*r.old_object))
          for (const char* k : {"dataSource", "dataSourceRef"})
            if (const auto* ref = os->if_contains(k); ref && ref->is_object())
              if (const auto* g = ref->as_object().if_contains("apiGroup"); g && !g->is_null())
                allow_invalid_group = true;
      pvc_spec_causes(spec_or_empty(obj), "spec.", causes, allow_invalid_group);
    } else if (t.schema) {
      // customResourceStrategy.Validate / ValidateUpdate: the structural schema's rules.
      for (auto& c : crd::validate(obj, r.old_object, *t.schema, r.options ? r.options->warnings : nullptr, meta))
        causes.push_back(std::move(c));
    } else if (core && t.resource == "nodes") {
      // ValidateNodeSpecificAnnotations (the taints annotation, decoded as []core.Taint), then the
      // spec's taints.
      const json::object* ann = md.if_contains("annotations") && md.at("annotations").is_object()
                                    ? &md.at("annotations").as_object()
                                    : nullptr;
      if (const std::string tv = ann ? str(*ann, "scheduler.alpha.kubernetes.io/taints") : ""; !tv.empty()) {
        static const GoField kFields[] = {
            {"key", "Key", "string"}, {"value", "Value", "string"}, {"effect", "Effect", "core.TaintEffect"}};
        json::array list;
        if (const auto error = go_decode_list(tv, "Taint", kFields, list))
          causes.push_back({"FieldValueInvalid",
                            fmt::format("Invalid value: \"scheduler.alpha.kubernetes.io/taints\": {}", *error),
                            "metadata.annotations"});
        else
          node_taints(list, "metadata.annotations.scheduler.alpha.kubernetes.io/taints", causes);
      }
      if (const auto* spec = obj.if_contains("spec"); spec && spec->is_object())
        if (const auto* taints = spec->as_object().if_contains("taints"); taints && taints->is_array())
          node_taints(taints->as_array(), "metadata.taints",
                      causes);  // (sic: validateNodeTaints is given metadata's path)
    }
  }
  // (ValidatePriorityClassUpdate runs no ValidatePriorityClass: an update only its own rules.)
  if (r.subresource.empty() && (create || t.group != "scheduling.k8s.io")) validate_kind(t, obj, causes);
  if (r.subresource.empty() && !create && r.old_object) validate_kind_update(t, obj, *r.old_object, causes);
  if (r.subresource == "status" && t.group == "batch" && t.resource == "jobs" && r.old_object)
    job_status_update_causes(obj, *r.old_object, causes);  // ValidateJobUpdateStatus's status rules
  if (r.subresource == "status" && t.group == "networking.k8s.io" && t.resource == "ingresses")
    ingress_status_causes(obj, causes);  // ValidateIngressStatusUpdate's status rules
  if (r.subresource == "status" && core && t.resource == "services")
    load_balancer_ingress_causes(obj, true, causes);  // ValidateServiceStatusUpdate's status rules
  if (r.subresource == "status" && t.group == "apps" && t.resource == "daemonsets" && r.old_object) {
    // ValidateDaemonSetStatusUpdate: validateDaemonSetStatus's counts, then collisionCount, which
    // may not go down (IsDecremented: nor be unset once set).
    const json::object* st = fields::object_at(obj, "status");
    for (const char* k :
         {"currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady", "observedGeneration",
          "updatedNumberScheduled", "numberAvailable", "numberUnavailable", "collisionCount"})
      non_negative(st, k, fmt::format("status.{}", k), causes);
    collision_count_decremented(obj, *r.old_object, causes);
  }
  // The object in its stored form (schema::to_stored_form), made once when first needed: Go compares
  // the decoded object with the stored one (apiequality.Semantic) for a StatefulSet's spec, the
  // immutable fields and the generation the warnings follow, and the write stores it. Nothing
  // changes obj from here to the write. (The structured bindings by name: clang 14 lets no lambda
  // capture one.)
  std::optional<json::object> stored;
  const std::function<const json::object&()> stored_form = [&stored, &given = obj, &kind = t]() -> const json::object& {
    if (!stored) {
      stored = given;
      schema::to_stored_form(kind.group, kind.version, kind.kind, *stored);
    }
    return *stored;
  };
  Causes sts_update;  // ValidateStatefulSetUpdate's spec rule, ValidateStatefulSetStatusUpdate's collisionCount
  if (t.group == "apps" && t.resource == "statefulsets" && !create && r.old_object && r.subresource.empty())
    sts_update = statefulset_update_causes(stored_form(), *r.old_object);
  if (t.group == "apps" && r.subresource == "status" && r.old_object &&
      (t.resource == "statefulsets" || t.resource == "deployments" || t.resource == "replicasets")) {
    replica_status_causes(t, obj, causes);
    if (t.resource != "replicasets") collision_count_decremented(obj, *r.old_object, sts_update);
  }
  if (t.group == "policy" && t.resource == "poddisruptionbudgets" && r.subresource == "status")
    pdb_status_causes(obj, causes);
  if (core && t.resource == "pods" && r.subresource == "status" && r.old_object)
    validate_pod_status_update(obj, *r.old_object, causes);
  if (core && t.resource == "persistentvolumeclaims" && r.subresource == "status") pvc_status_causes(obj, causes);
  if (core && t.resource == "namespaces" && r.subresource == "status") {
    // ValidateNamespaceStatusUpdate: Active until the namespace is deleted, Terminating after.
    const json::object* st = fields::object_at(obj, "status");
    const std::string phase = st ? fields::string_at(*st, "phase") : "";
    if (!fields::present(md, "deletionTimestamp")) {
      if (phase != "Active")
        causes.push_back(
            {"FieldValueInvalid",
             fmt::format("Invalid value: {}: may only be 'Active' if `deletionTimestamp` is empty", fields::q(phase)),
             "status.Phase"});
    } else if (phase != "Terminating") {
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: may only be 'Terminating' if `deletionTimestamp` is not empty",
                                    fields::q(phase)),
                        "status.Phase"});
    }
  }
  if (r.subresource == "status" && core && t.resource == "nodes") {  // ValidateNodeUpdate's
    node_resources(obj, causes);
    node_addresses(obj, causes);
  }
  if (r.subresource == "status" && t.schema && r.old_object)
    for (auto& c : crd::validate_status(obj, *r.old_object, *t.schema, r.options ? r.options->warnings : nullptr))
      causes.push_back(std::move(c));
  // A CRD's x-kubernetes-validations rules must compile (crd_schema.hpp validate_definition).
  if (t.group == "apiextensions.k8s.io" && t.resource == "customresourcedefinitions" && r.subresource.empty())
    for (auto& c : crd::validate_definition(obj)) causes.push_back(std::move(c));
  // ValidateXUpdate: the object's own rules, then the fields an update may not change.
  parts.immutable = immutable_causes(r, stored_form);
  parts.immutable.insert(parts.immutable.end(), revision_data.begin(), revision_data.end());
  parts.immutable.insert(parts.immutable.end(), sts_update.begin(), sts_update.end());
  Causes all = assemble_causes(r, kube, parts);
  if (!all.empty()) throw StatusError::invalid(t, name, std::move(all));
  // Warnings, once the object is valid (rest.BeforeCreate / BeforeUpdate): a new pod's
  // (podStrategy.WarningsOnUpdate returns none), a workload's template on create or when its spec
  // changes (the strategies' WarningsOnUpdate check the generation).
  if (r.options && r.options->warnings && r.subresource.empty()) {
    std::vector<std::string> w;
    if (core && t.resource == "pods" && create) {
      if (const auto* spec = spec_of(obj)) w = pod_warnings(md, *spec, "");
    } else if (t.schema) {
      // customResourceStrategy's generateWarningsFromObj: each finalizer the write adds (sorted),
      // by apiextensions' validateKubeFinalizerName.
      std::set<std::string> added;
      for (auto& f : fields::strings_at(md, "finalizers")) added.insert(f);
      if (r.old_object)
        if (const json::value* om = r.old_object->if_contains("metadata"); om && om->is_object())
          for (const auto& f : fields::strings_at(om->as_object(), "finalizers")) added.erase(f);
      for (const auto& f : added) {
        for (const auto& msg : qualified_name_errors(f))
          w.push_back(fmt::format("metadata.finalizers: {}: {}", go_quote(f), msg));
        if (f.find('/') == std::string::npos && f != "orphan" && f != "foregroundDeletion" && f != "kubernetes")
          w.push_back(
              fmt::format("metadata.finalizers: {}: prefer a domain-qualified finalizer name{} to avoid "
                          "accidental conflicts with other finalizer writers",
                          go_quote(f), f.find('.') != std::string::npos ? " including a path (/)" : ""));
      }
    } else if (core && t.resource == "nodes") {
      w = node_warnings(obj);
    } else if (core && t.resource == "secrets") {
      // secret/strategy.go warningsForSecret (WarningsOnCreate and WarningsOnUpdate): a
      // kubernetes.io/tls Secret's certificate and key as tls.X509KeyPair reads them.
      if (str(obj, "type") == "kubernetes.io/tls") {
        const json::object* data = util::object_at(obj, {"data"});
        const auto bytes = [&](const char* k) {
          const json::value* v = data ? data->if_contains(k) : nullptr;
          return v && v->is_string() ? base64_decode(v->as_string()).value_or(std::string()) : std::string();
        };
        if (auto e = x509_key_pair_error(bytes("tls.crt"), bytes("tls.key"))) w.push_back(std::move(*e));
      }
    } else if (core && t.resource == "persistentvolumeclaims") {
      w = claim_warnings(obj);
    } else if (core && t.resource == "persistentvolumes") {
      w = pv_warnings(obj);  // persistentvolumeStrategy's WarningsOnCreate / WarningsOnUpdate
    } else if (t.group == "discovery.k8s.io" && t.resource == "endpointslices" && create) {
      if (str(obj, "addressType") == "FQDN")  // warnOnDeprecatedAddressType (sic: "spec.")
        w.emplace_back("spec.addressType: FQDN endpoints are deprecated");
    } else if (core && t.resource == "services") {
      w = service_warnings(obj);  // svcStrategy's WarningsOnCreate / WarningsOnUpdate
    } else if (t.group == "node.k8s.io" && t.resource == "runtimeclasses") {
      w = runtime_class_warnings(obj);  // runtimeclass/strategy.go WarningsOnCreate / WarningsOnUpdate
    } else if (t.group == "networking.k8s.io" && t.resource == "ingresses" && create) {
      w = ingress_warnings(obj);  // ingressStrategy.WarningsOnCreate (WarningsOnUpdate: none)
    } else if (core && t.resource == "serviceaccounts") {
      // serviceaccount/strategy.go warnIfHasEnforceMountableSecretsAnnotation: when a write sets
      // the annotation the ServiceAccount admission plugin still honours (not when it was there).
      constexpr std::string_view kEnforce = "kubernetes.io/enforce-mountable-secrets";
      if (util::annotation(obj, kEnforce) && !(r.old_object && util::annotation(*r.old_object, kEnforce)))
        w.push_back(fmt::format(
            "metadata.annotations[{}]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted "
            "secrets",
            kEnforce));
    } else if ((t.group == "apps" && (t.resource == "deployments" || t.resource == "replicasets" ||
                                      t.resource == "statefulsets" || t.resource == "daemonsets")) ||
               (t.group == "batch" && t.resource == "jobs")) {
      const json::object* old_spec = r.old_object ? spec_of(*r.old_object) : nullptr;
      const json::object* spec = spec_of(obj);
      auto member = [](const json::object& o, std::string_view key) -> const json::object* {
        const auto* v = o.if_contains(key);
        return v && v->is_object() ? &v->as_object() : nullptr;
      };
      const json::object* tpl = spec ? member(*spec, "template") : nullptr;
      // The strategies warn when the generation moves: the spec changed, or for a Deployment its
      // annotations (deployment/strategy.go PrepareForUpdate).
      auto annotations = [&](const json::object& o) -> const json::value* {
        const auto* m = o.if_contains("metadata");
        return m && m->is_object() ? m->as_object().if_contains("annotations") : nullptr;
      };
      const json::value* na = annotations(obj);
      const json::value* oa = r.old_object ? annotations(*r.old_object) : nullptr;
      const bool annotations_moved = t.resource == "deployments" && (!na != !oa || (na && !util::json_equal(*na, *oa)));
      // A DaemonSet's when its templateGeneration moves: the template changed. (Compared as the
      // generation is: the new spec in its stored form, apiequality.Semantic.)
      const json::object* stored_spec = old_spec ? spec_of(stored_form()) : nullptr;
      const json::value* old_tpl = old_spec ? old_spec->if_contains("template") : nullptr;
      const bool changed = old_spec && stored_spec &&
                           (t.resource == "daemonsets" ? !same_value(old_tpl, stored_spec->if_contains("template"))
                                                       : !semantic_equal(*old_spec, *stored_spec));
      if (tpl && (create || !old_spec || annotations_moved || changed)) {
        static const json::object kEmpty;
        const json::object* tmeta = member(*tpl, "metadata");
        if (const json::object* tspec = member(*tpl, "spec"))
          w = pod_warnings(tmeta ? *tmeta : kEmpty, *tspec, "spec.template.");
      }
      // statefulSetStrategy's WarningsOnCreate / WarningsOnUpdate: each volumeClaimTemplate's
      // claim spec, on every update too (there at "...[i].Spec.": sic).
      if (const json::array* vcts =
              t.resource == "statefulsets" && spec ? fields::array_at(*spec, "volumeClaimTemplates") : nullptr)
        for (std::size_t i = 0; i < vcts->size(); ++i)
          if (const json::object* cs = (*vcts)[i].is_object() ? member((*vcts)[i].as_object(), "spec") : nullptr)
            for (auto& x :
                 claim_spec_warnings(*cs, fmt::format("spec.volumeClaimTemplates[{}].{}", i, create ? "" : "Spec.")))
              w.push_back(std::move(x));
    } else if (core && t.resource == "podtemplates") {
      // podTemplateStrategy: GetWarningsForPodTemplate at "template" on create, and on an update
      // that moves the generation (the template changed, apiequality.Semantic).
      const json::object* tpl = fields::object_at(obj, "template");
      const json::value* old_tpl = r.old_object ? r.old_object->if_contains("template") : nullptr;
      const bool changed = create || !r.old_object || !same_value(old_tpl, stored_form().if_contains("template"));
      if (const json::object* tspec = tpl ? fields::object_at(*tpl, "spec") : nullptr; tspec && changed) {
        static const json::object kEmpty;
        const json::object* tmeta = fields::object_at(*tpl, "metadata");
        w = pod_warnings(tmeta ? *tmeta : kEmpty, *tspec, "template.");
      }
    } else if (t.group == "batch" && t.resource == "cronjobs") {
      // cronJobStrategy: WarningsForJobSpec at spec.jobTemplate.spec on create and when the
      // generation moves (the spec changed); an update whose schedule still names a TZ is warned
      // (with the strategy's own path, "spec.spec.schedule").
      const json::object* old_spec = r.old_object ? spec_of(*r.old_object) : nullptr;
      const json::object* spec = spec_of(obj);
      const json::object* tpl = spec ? util::object_at(*spec, {"jobTemplate", "spec", "template"}) : nullptr;
      const json::object* stored_spec = old_spec ? spec_of(stored_form()) : nullptr;
      if (tpl && (create || !old_spec || !stored_spec || !semantic_equal(*old_spec, *stored_spec))) {
        static const json::object kEmpty;
        const json::object* tmeta = util::object_at(*tpl, {"metadata"});
        if (const json::object* tspec = util::object_at(*tpl, {"spec"}))
          w = pod_warnings(tmeta ? *tmeta : kEmpty, *tspec, "spec.jobTemplate.spec.template.");
      }
      if (!create && spec && str(*spec, "schedule").find("TZ") != std::string::npos)
        w.push_back(
            "cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see "
            "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details");
    }
    // WarningsOnCreate of pods, Deployments, ReplicaSets, Jobs and CronJobs: first, a name that is
    // no DNS label (%v of the messages: "[a b]").
    const bool pod = core && t.resource == "pods";
    if (create && (pod || (t.group == "apps" && (t.resource == "deployments" || t.resource == "replicasets")) ||
                   (t.group == "batch" && (t.resource == "jobs" || t.resource == "cronjobs"))))
      if (const auto msgs = dns1123_label_errors(name); !msgs.empty()) {
        std::string list;
        for (const auto& m : msgs) list += (list.empty() ? "" : " ") + m;
        r.options->warnings->push_back(
            fmt::format("metadata.name: this is used in {}, which can result in surprising behavior; a DNS label is "
                        "recommended: [{}]",
                        pod ? "the Pod's hostname" : "Pod names and hostnames", list));
      }
    for (auto& x : w) r.options->warnings->push_back(std::move(x));
  }
  // The object is stored as Kubernetes encodes it: every quantity as Go prints it (once valid,
  // since validation's messages show them as Go parsed them).
  // pods/binding is a storage-level update of the stored pod (assignPod's GuaranteedUpdate): nothing
  // is decoded, and its quantities are canonical already.
  // networkPolicyStrategy.PrepareForUpdate bumps the generation on !reflect.DeepEqual of the specs:
  // the decoded one (an empty list or map is not nil there) against the stored one (where it is).
  if (t.group == "networking.k8s.io" && t.resource == "networkpolicies" && r.subresource.empty() && !create &&
      r.old_object) {
    const json::value* now = obj.if_contains("spec");
    const json::value* before = r.old_object->if_contains("spec");
    r.spec_changed = !now != !before || (now && !util::json_equal(*now, *before));
  }
  if (stored)
    obj = std::move(*stored);
  else if (r.subresource != "scale" && r.subresource != "binding")
    schema::to_stored_form(t.group, t.version, t.kind, obj);
  if (t.group == "batch" && t.resource == "jobs") default_job_labels(obj);
  // daemonSetStrategy.PrepareForCreate / PrepareForUpdate (and the status strategy's, which keeps
  // the old spec): templateGeneration at least 1 on create, the old one on update, one more when
  // the template changed (apiequality.Semantic: compared once both are canonical).
  if (t.group == "apps" && t.resource == "daemonsets" && (r.subresource.empty() || r.subresource == "status")) {
    std::int64_t generation = std::max<std::int64_t>(template_generation(obj), 1);
    if (!create && r.old_object) {
      generation = template_generation(*r.old_object);
      const json::object* old_spec = spec_of(*r.old_object);
      const json::object* spec = spec_of(obj);
      if (r.subresource.empty() && !same_value(old_spec ? old_spec->if_contains("template") : nullptr,
                                               spec ? spec->if_contains("template") : nullptr))
        ++generation;
    }
    set_template_generation(obj, generation);
  }
}

}  // namespace gpupool::embedded
