// Fields an update may not change, as the registries' ValidateUpdate rules refuse them (422
// Invalid): a claim's spec, a Job's template and selector, a Deployment's, ReplicaSet's or
// DaemonSet's selector. (A Service's cluster IPs: validation_service.cpp.)
#include <fmt/format.h>

#include <functional>

#include "embedded/admission.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/validation.hpp"
#include "embedded/validation_fields.hpp"
#include "embedded/validation_kinds.hpp"

#include "gpupool/quantity.hpp"

namespace gpupool::embedded {
namespace {

using util::object_at;
using util::string_of;

std::string quoted(std::string_view s) { return json::serialize(json::value(s)); }

}  // namespace

// fmt %#v of a map[string]string, as field.Invalid prints it (keys sorted, as fmt does).
std::string go_map(const json::object* m) {
  if (!m) return "map[string]string(nil)";
  std::map<std::string, std::string> sorted;
  for (const auto& [k, v] : *m)
    sorted[std::string(k)] = v.is_string() ? std::string(v.as_string()) : v.is_null() ? "" : json::serialize(v);
  std::string out = "map[string]string{";
  bool first = true;
  for (const auto& [k, v] : sorted) {
    out += (first ? "" : ", ") + quoted(k) + ":" + quoted(v);
    first = false;
  }
  return out + "}";
}

// fmt %#v of a metav1.LabelSelector, as field.Invalid prints it.
std::string go_label_selector(const json::object* sel) {
  if (!sel) return "\"null\"";  // field.Invalid's value: a nil pointer is "null"
  const std::string labels = go_map(sel ? object_at(*sel, {"matchLabels"}) : nullptr);
  std::string exprs = "[]v1.LabelSelectorRequirement(nil)";
  if (const json::array* me = sel ? util::array_at(*sel, {}, "matchExpressions") : nullptr; me && me->empty())
    exprs = "[]v1.LabelSelectorRequirement{}";
  else if (me) {
    exprs = "[]v1.LabelSelectorRequirement{";
    for (std::size_t i = 0; i < me->size(); ++i) {
      const json::object* e = (*me)[i].is_object() ? &(*me)[i].as_object() : nullptr;
      std::string values = "[]string(nil)";
      if (const json::array* vs = e ? util::array_at(*e, {}, "values") : nullptr) {
        values = "[]string{";
        for (std::size_t j = 0; j < vs->size(); ++j)
          values += (j ? ", " : "") + quoted((*vs)[j].is_string() ? std::string_view((*vs)[j].as_string()) : "");
        values += "}";
      }
      exprs += fmt::format("{}v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}", i ? ", " : "",
                           quoted(string_of(e, "key")), quoted(string_of(e, "operator")), values);
    }
    exprs += "}";
  }
  return fmt::format("v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{}}}", labels, exprs);
}

namespace {

const json::value* at(const json::object& o, std::initializer_list<std::string_view> path, std::string_view key) {
  const json::object* parent = object_at(o, path);
  return parent ? parent->if_contains(key) : nullptr;
}

// ValidateImmutableField of a claim's or volume's volumeMode (its path without "spec.", sic): the
// stored forms compared, the value as given shown.
void volume_mode_immutable(const json::object& old, const json::object& stored, const json::object& given,
                           std::vector<StatusCause>& causes) {
  if (!same_value(at(old, {"spec"}, "volumeMode"), at(stored, {"spec"}, "volumeMode")))
    causes.push_back(
        {"FieldValueInvalid",
         fmt::format("Invalid value: {}: field is immutable", go_pointer_value(at(given, {"spec"}, "volumeMode"))),
         "volumeMode"});
}

}  // namespace

// apiequality.Semantic.DeepEqual as far as JSON tells: a nil slice equals an empty one
// (apimachinery third_party/forked/golang/reflect/deep_equal.go), so a member that is null or []
// equals no member: a patch adding `matchExpressions: []` to a selector leaves it the same. (An
// empty map equals nil too, but {} is also a set pointer to a zero struct, which does not.)
bool nil_or_empty_list(const json::value* v) { return !v || v->is_null() || (v->is_array() && v->as_array().empty()); }

bool semantic_equal(const json::value& a, const json::value& b) {
  if (nil_or_empty_list(&a) && nil_or_empty_list(&b)) return true;
  if (a.is_object() && b.is_object()) {
    const json::object& ao = a.as_object();
    const json::object& bo = b.as_object();
    for (const auto& [k, v] : ao)
      if (const json::value* w = bo.if_contains(k); w ? !semantic_equal(v, *w) : !nil_or_empty_list(&v)) return false;
    for (const auto& [k, w] : bo)
      if (!ao.contains(k) && !nil_or_empty_list(&w)) return false;
    return true;
  }
  if (a.is_array() && b.is_array()) {
    const json::array& aa = a.as_array();
    const json::array& ba = b.as_array();
    if (aa.size() != ba.size()) return false;
    for (std::size_t i = 0; i < aa.size(); ++i)
      if (!semantic_equal(aa[i], ba[i])) return false;
    return true;
  }
  return util::json_equal(a, b);
}

bool same_value(const json::value* a, const json::value* b) {
  if (!a || a->is_null()) return !b || b->is_null();
  return b && semantic_equal(*a, *b);
}

std::string go_pointer_value(const json::value* v) {
  if (!v || v->is_null()) return "\"null\"";
  return v->is_string() ? quoted(v->as_string()) : json::serialize(*v);
}

std::vector<StatusCause> immutable_causes(AdmissionRequest& r, const std::function<const json::object&()>& stored) {
  std::vector<StatusCause> causes;
  if (r.operation != AdmissionRequest::Operation::Update || !r.type || !r.object || !r.old_object ||
      !r.subresource.empty())
    return causes;
  const ResourceType& t = *r.type;
  // Go compares the decoded new object with the stored one (apiequality.Semantic: a Quantity by
  // value, nil and empty slices and maps alike): here `stored()`, made only for the kinds with
  // such rules. The messages show the new values as given (`values: []` is `[]string{}`, not nil).
  const json::object& given = *r.object;
  const json::object& old = *r.old_object;
  if (t.group == "apps" && (t.resource == "deployments" || t.resource == "replicasets" || t.resource == "daemonsets")) {
    const json::object& obj = stored();
    // The deployment, replicaset and daemonset strategies' ValidateUpdate (apps/v1): spec.selector
    // is immutable.
    if (!same_value(at(old, {"spec"}, "selector"), at(obj, {"spec"}, "selector")))
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: field is immutable",
                                    go_label_selector(object_at(given, {"spec", "selector"}))),
                        "spec.selector"});
  } else if (t.group == "storage.k8s.io" && t.resource == "csidrivers") {
    // ValidateCSIDriverUpdate: attachRequired (at "attachedRequired", sic: a *bool, shown as its
    // value) and volumeLifecycleModes (%#v of the slice) are immutable.
    const json::value* now = at(given, {"spec"}, "attachRequired");
    if (!same_value(at(old, {"spec"}, "attachRequired"), now))
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: field is immutable",
                                    now && now->is_bool() ? (now->as_bool() ? "true" : "false") : "null"),
                        "spec.attachedRequired"});
    const json::value* modes = at(given, {"spec"}, "volumeLifecycleModes");
    if (!same_value(at(old, {"spec"}, "volumeLifecycleModes"), modes))
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: field is immutable",
                                    fields::go_string_slice("storage.VolumeLifecycleMode",
                                                            modes && modes->is_array() ? &modes->as_array() : nullptr)),
                        "spec.volumeLifecycleModes"});
  } else if (t.group == "storage.k8s.io" && t.resource == "storageclasses") {
    // ValidateStorageClassUpdate: parameters (reflect.DeepEqual: {} is not nil), provisioner and
    // reclaimPolicy may not change, volumeBindingMode is immutable.
    if (!same_value(given.if_contains("parameters"), old.if_contains("parameters")))
      causes.push_back({"FieldValueForbidden", "Forbidden: updates to parameters are forbidden.", "parameters"});
    for (const char* k : {"provisioner", "reclaimPolicy"})
      if (string_of(&given, k) != string_of(&old, k))
        causes.push_back({"FieldValueForbidden", fmt::format("Forbidden: updates to {} are forbidden.", k), k});
    if (!same_value(given.if_contains("volumeBindingMode"), old.if_contains("volumeBindingMode")))
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: field is immutable",
                                    go_pointer_value(given.if_contains("volumeBindingMode"))),
                        "volumeBindingMode"});
  } else if (t.group == "rbac.authorization.k8s.io" &&
             (t.resource == "rolebindings" || t.resource == "clusterrolebindings")) {
    // Validate(Cluster)RoleBindingUpdate: the roleRef may not change (shown as rbac.RoleRef's %#v).
    const json::object* ref = object_at(given, {"roleRef"});
    const json::object* was = object_at(old, {"roleRef"});
    bool changed = false;
    for (const char* k : {"apiGroup", "kind", "name"}) changed = changed || string_of(ref, k) != string_of(was, k);
    if (changed)
      causes.push_back(
          {"FieldValueInvalid",
           fmt::format("Invalid value: rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}: cannot change roleRef",
                       fields::q(string_of(ref, "apiGroup")), fields::q(string_of(ref, "kind")),
                       fields::q(string_of(ref, "name"))),
           "roleRef"});
  } else if (t.group == "discovery.k8s.io" && t.resource == "endpointslices") {
    // ValidateEndpointSliceUpdate: addressType is immutable (a string: shown quoted).
    if (string_of(&old, "addressType") != string_of(&given, "addressType"))
      causes.push_back(
          {"FieldValueInvalid",
           fmt::format("Invalid value: {}: field is immutable", fields::q(string_of(&given, "addressType"))),
           "addressType"});
  } else if (t.group == "networking.k8s.io" && t.resource == "ingressclasses") {
    // validateIngressClassSpecUpdate: ValidateImmutableField(spec.controller) (a string: quoted).
    const std::string now = string_of(object_at(given, {"spec"}), "controller");
    if (string_of(object_at(old, {"spec"}), "controller") != now)
      causes.push_back(
          {"FieldValueInvalid", fmt::format("Invalid value: {}: field is immutable", quoted(now)), "spec.controller"});
  } else if (t.group == "node.k8s.io" && t.resource == "runtimeclasses") {
    // ValidateRuntimeClassUpdate: ValidateImmutableField(handler) (a string: shown quoted).
    if (string_of(&old, "handler") != string_of(&given, "handler"))
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: field is immutable", quoted(string_of(&given, "handler"))),
                        "handler"});
  } else if (t.group == "batch" && t.resource == "jobs") {
    const json::object& obj = stored();
    // batch/validation ValidateJobSpecUpdate after ValidateJobSpec: validateCompletions, then
    // selector, template, completionMode, podFailurePolicy, backoffLimitPerIndex, managedBy and
    // successPolicy are immutable. (ValidateImmutableField's field.Invalid prints a nil pointer as
    // "null" and a set one's value: a number bare, a string quoted, successPolicy and
    // podFailurePolicy as their Go struct dumps; the template is one too, here its JSON.)
    auto immutable = [&](const char* key) {
      const json::value* now = at(obj, {"spec"}, key);
      if (same_value(at(old, {"spec"}, key), now)) return;
      const json::value* shown = at(given, {"spec"}, key);
      const std::string_view k = key;
      const json::object* policy = shown && shown->is_object() ? &shown->as_object() : nullptr;
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: field is immutable",
                                    policy && k == "successPolicy"      ? go_success_policy(*policy)
                                    : policy && k == "podFailurePolicy" ? go_pod_failure_policy(*policy)
                                                                        : go_pointer_value(shown)),
                        fmt::format("spec.{}", key)});
    };
    const json::value* completions = at(obj, {"spec"}, "completions");
    if (string_of(object_at(obj, {"spec"}), "completionMode") != "Indexed") {
      immutable("completions");
    } else if (!same_value(at(old, {"spec"}, "completions"), completions) && completions && !completions->is_null() &&
               !same_value(completions, at(obj, {"spec"}, "parallelism"))) {
      // An Indexed Job's completions change only with parallelism (to the same number).
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: can only be modified in tandem with spec.parallelism",
                                    go_pointer_value(at(given, {"spec"}, "completions"))),
                        "spec.completions"});
    }
    if (!same_value(at(old, {"spec"}, "selector"), at(obj, {"spec"}, "selector")))
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: field is immutable",
                                    go_label_selector(object_at(given, {"spec", "selector"}))),
                        "spec.selector"});
    // pkg/registry/batch/job/strategy.go: AllowMutableSchedulingDirectives for a suspended Job that
    // never started (Kueue's way of placing a queued Job); validatePodTemplateUpdate then ignores
    // nodeSelector, tolerations, labels, annotations, schedulingGates and node affinity.
    const json::value* old_tpl = at(old, {"spec"}, "template");
    json::value relaxed;
    const json::value* sv = at(old, {"spec"}, "suspend");
    const json::value* new_tpl = at(obj, {"spec"}, "template");
    if (sv && sv->is_bool() && sv->as_bool() && !at(old, {"status"}, "startTime") && old_tpl && old_tpl->is_object() &&
        new_tpl && new_tpl->is_object()) {
      relaxed = *old_tpl;
      json::object& o = relaxed.as_object();
      const json::object& n = new_tpl->as_object();
      auto take = [](json::object& dst, const json::object* src, std::string_view key) {
        if (const json::value* v = src ? src->if_contains(key) : nullptr)
          dst[key] = *v;
        else
          dst.erase(key);
      };
      json::object& meta = util::ensure_object(o, "metadata");
      take(meta, object_at(n, {"metadata"}), "labels");
      take(meta, object_at(n, {"metadata"}), "annotations");
      json::object& spec = util::ensure_object(o, "spec");
      for (const char* k : {"nodeSelector", "tolerations", "schedulingGates"}) take(spec, object_at(n, {"spec"}), k);
      const json::object* new_aff = object_at(n, {"spec", "affinity"});
      json::object aff = object_at(spec, {"affinity"}) ? *object_at(spec, {"affinity"}) : json::object{};
      take(aff, new_aff, "nodeAffinity");
      if (aff.empty() && !new_aff)
        spec.erase("affinity");
      else
        spec["affinity"] = std::move(aff);
      if (meta.empty() && !n.contains("metadata")) o.erase("metadata");
      old_tpl = &relaxed;
    }
    if (!same_value(old_tpl, new_tpl)) {
      const json::value* tpl = at(given, {"spec"}, "template");
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: field is immutable", tpl ? json::serialize(*tpl) : "null"),
                        "spec.template"});
    }
    for (const char* key : {"completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"})
      immutable(key);
  } else if (t.group.empty() && t.resource == "persistentvolumes") {
    const json::object& obj = stored();
    // ValidatePersistentVolumeUpdate's own rules: the PersistentVolumeSource is immutable after
    // creation (but a CSI source may gain a controllerExpandSecretRef; the real message appends a
    // go-cmp diff: FIDELITY.md difference 1), then volumeMode.
    static const char* const kSources[] = {"gcePersistentDisk",
                                           "awsElasticBlockStore",
                                           "hostPath",
                                           "glusterfs",
                                           "nfs",
                                           "rbd",
                                           "iscsi",
                                           "cinder",
                                           "cephfs",
                                           "fc",
                                           "flocker",
                                           "flexVolume",
                                           "azureFile",
                                           "vsphereVolume",
                                           "quobyte",
                                           "azureDisk",
                                           "photonPersistentDisk",
                                           "portworxVolume",
                                           "scaleIO",
                                           "local",
                                           "storageos",
                                           "csi"};
    json::object a, b;
    const json::object* before = object_at(old, {"spec"});
    const json::object* now = object_at(obj, {"spec"});
    for (const char* k : kSources) {
      if (before && before->contains(k)) a[k] = before->at(k);
      if (now && now->contains(k)) b[k] = now->at(k);
    }
    if (const json::object* csi = object_at(a, {"csi"}); csi && !fields::present(*csi, "controllerExpandSecretRef"))
      if (json::value* n = b.if_contains("csi"); n && n->is_object()) n->as_object().erase("controllerExpandSecretRef");
    if (!semantic_equal(a, b))
      causes.push_back({"FieldValueForbidden", "Forbidden: spec.persistentvolumesource is immutable after creation",
                        "spec.persistentvolumesource"});
    volume_mode_immutable(old, obj, given, causes);
  } else if (t.group.empty() && t.resource == "persistentvolumeclaims") {
    const json::object& obj = stored();
    // core/validation ValidatePersistentVolumeClaimUpdate: the spec is immutable but for
    // volumeName set once (the binder), a class set where there was none, and, once bound, the
    // storage request and volumeAttributesClassName. (The real message appends a go-cmp diff of
    // the two specs.)
    json::object a = object_at(old, {"spec"}) ? *object_at(old, {"spec"}) : json::object{};
    json::object b = object_at(obj, {"spec"}) ? *object_at(obj, {"spec"}) : json::object{};
    // Decoding defaults what a full-object write leaves out (SetDefaults_PersistentVolumeClaimSpec).
    if (!b.contains("volumeMode") && a.contains("volumeMode")) b["volumeMode"] = "Filesystem";
    if (string_of(&a, "volumeName").empty()) {
      if (const json::value* v = b.if_contains("volumeName"))
        a["volumeName"] = *v;
      else
        a.erase("volumeName");
    }
    if ((!a.contains("storageClassName") || a.at("storageClassName").is_null()) && b.contains("storageClassName"))
      a["storageClassName"] = b.at("storageClassName");
    const bool bound = string_of(object_at(obj, {"status"}), "phase") == "Bound";
    if (bound) {
      for (json::object* s : {&a, &b}) {
        s->erase("volumeAttributesClassName");
        if (json::value* req = s->contains("resources") && (*s)["resources"].is_object()
                                   ? (*s)["resources"].as_object().if_contains("requests")
                                   : nullptr;
            req && req->is_object())
          req->as_object().erase("storage");
      }
    }
    if (!semantic_equal(a, b))
      causes.push_back({"FieldValueForbidden",
                        "Forbidden: spec is immutable after creation except resources.requests and "
                        "volumeAttributesClassName for bound claims",
                        "spec"});
    // A smaller storage request only down to above status.capacity (RecoverVolumeExpansionFailure,
    // on in v1.32); a missing request or capacity is zero.
    auto storage = [](const json::object* o, std::initializer_list<std::string_view> path) -> __int128 {
      const std::string text = string_of(o ? object_at(*o, path) : nullptr, "storage");
      try {
        return text.empty() ? 0 : Quantity::parse(text).nano_value();
      } catch (const std::exception&) {
        return 0;  // (refused by the spec's own validation)
      }
    };
    const __int128 now = storage(&obj, {"spec", "resources", "requests"});
    if (now < storage(&old, {"spec", "resources", "requests"}) && now <= storage(&old, {"status", "capacity"}))
      causes.push_back({"FieldValueForbidden", "Forbidden: field can not be less than status.capacity",
                        "spec.resources.requests.storage"});
    // The volume mode, and volumeAttributesClassName, which the disabled VolumeAttributesClass
    // gate lets no update change.
    volume_mode_immutable(old, obj, given, causes);
    if (!same_value(at(old, {"spec"}, "volumeAttributesClassName"), at(obj, {"spec"}, "volumeAttributesClassName")))
      causes.push_back({"FieldValueForbidden",
                        "Forbidden: update is forbidden when the VolumeAttributesClass feature gate is disabled",
                        "spec.volumeAttributesClassName"});
  }
  return causes;
}

// ---- Jobs: pkg/registry/batch/job/strategy.go and pkg/apis/batch/validation ----------------------

namespace {

constexpr const char* kControllerUid = "batch.kubernetes.io/controller-uid";
constexpr const char* kJobName = "batch.kubernetes.io/job-name";
constexpr const char* kLegacyControllerUid = "controller-uid";
constexpr const char* kLegacyJobName = "job-name";

bool manual_selector(const json::object& job) {
  const json::value* m = at(job, {"spec"}, "manualSelector");
  return m && m->is_bool() && m->as_bool();
}

using util::selector_matches;

}  // namespace

void prepare_job_create(json::object& job) {
  json::object& spec = util::ensure_object(job, "spec");
  const std::string name = util::name_of(job), uid = string_of(object_at(job, {"metadata"}), "uid");
  json::object& tpl_meta = util::ensure_object(util::ensure_object(spec, "template"), "metadata");
  // SetDefaults_Job (at decoding, before this): a Job without labels takes its template's label
  // map itself when the template has one (even empty), so the labels generated below are the
  // Job's too; a template without labels gets a new map here, which the Job does not share
  // until the storage round trip defaults it again (default_job_labels).
  const json::object* own = object_at(util::ensure_object(job, "metadata"), {"labels"});
  const bool shares_template_labels = (!own || own->empty()) && object_at(tpl_meta, {"labels"});
  if (!manual_selector(job)) {
    // generateSelector: the name and uid labels the user did not set, and a selector on the uid.
    json::object& labels = util::ensure_object(tpl_meta, "labels");
    for (const char* k : {kLegacyJobName, kJobName})
      if (!labels.contains(k)) labels[k] = name;
    for (const char* k : {kLegacyControllerUid, kControllerUid})
      if (!labels.contains(k)) labels[k] = uid;
    json::object& match = util::ensure_object(util::ensure_object(spec, "selector"), "matchLabels");
    if (!match.contains(kControllerUid)) match[kControllerUid] = uid;
  }
  if (shares_template_labels)
    if (const json::object* tl = object_at(tpl_meta, {"labels"}); tl && !tl->empty())
      util::ensure_object(job, "metadata")["labels"] = *tl;
}

void default_job_labels(json::object& job) {
  json::object& meta = util::ensure_object(job, "metadata");
  const json::object* own = object_at(meta, {"labels"});
  if (own && !own->empty()) return;
  if (const json::object* tl = object_at(job, {"spec", "template", "metadata", "labels"}); tl && !tl->empty())
    meta["labels"] = *tl;
}

void job_generated_selector_causes(const json::object& job, bool require_prefixed_labels,
                                   std::vector<StatusCause>& causes) {
  // validateGeneratedSelector: with a generated selector (not manualSelector), the template
  // carries the name and uid labels and the selector selects them.
  const json::object* sel = object_at(job, {"spec", "selector"});
  if (manual_selector(job) || !sel) return;
  const json::object* labels = object_at(job, {"spec", "template", "metadata", "labels"});
  const std::string name = util::name_of(job), uid = string_of(object_at(job, {"metadata"}), "uid");
  // core/validation ValidateHasLabel: a missing label is Required, a wrong one Invalid with the
  // whole label map as its value.
  auto has_label = [&](const char* key, const std::string& want) {
    const json::value* v = labels ? labels->if_contains(key) : nullptr;
    const std::string field = fmt::format("spec.template.metadata.labels[{}]", key);
    if (!v)
      causes.push_back({"FieldValueRequired", fmt::format("Required value: must be '{}'", want), field});
    else if (!v->is_string() || v->as_string() != want)
      causes.push_back(
          {"FieldValueInvalid", fmt::format("Invalid value: {}: must be '{}'", go_map(labels), want), field});
  };
  has_label(kLegacyControllerUid, uid);
  has_label(kLegacyJobName, name);
  json::object expected{{kLegacyControllerUid, uid}, {kLegacyJobName, name}};
  if (require_prefixed_labels) {  // JobValidationOptions.RequirePrefixedLabels
    has_label(kControllerUid, uid);
    has_label(kJobName, name);
    expected[kControllerUid] = uid;
    expected[kJobName] = name;
  }
  // Only a selector that parses (LabelSelectorAsSelector) is compared.
  std::vector<StatusCause> unparsable;
  validate_label_selector(*sel, "spec.selector", unparsable);
  if (unparsable.empty() && !selector_matches(*sel, &expected))
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: `selector` not auto-generated", go_label_selector(sel)),
                      "spec.selector"});
}

bool job_had_prefixed_labels(const json::object& old_job) {
  const json::object* labels = object_at(old_job, {"spec", "template", "metadata", "labels"});
  return labels && labels->contains(kJobName) && labels->contains(kControllerUid);
}

SelectorCheck required_selector_causes(const json::object* sel, std::string_view empty_for,
                                       std::vector<StatusCause>& causes) {
  SelectorCheck out;
  if (!sel) {
    causes.push_back({"FieldValueRequired", "Required value", "spec.selector"});
    return out;
  }
  const std::size_t before = causes.size();
  validate_label_selector(*sel, "spec.selector", causes);
  out.parses = causes.size() == before;  // (NewRequirement refuses what ValidateLabelSelector does)
  const json::object* ml = object_at(*sel, {"matchLabels"});
  const json::array* me = util::array_at(*sel, {}, "matchExpressions");
  out.empty = (!ml || ml->empty()) && (!me || me->empty());
  if (out.empty && !empty_for.empty())
    causes.push_back(
        {"FieldValueInvalid",
         fmt::format("Invalid value: {}: empty selector is invalid for {}", go_label_selector(sel), empty_for),
         "spec.selector"});
  return out;
}

void job_selector_causes(const json::object& job, std::vector<StatusCause>& causes) {
  // ValidateJobSpec: a selector is required and valid (ValidateLabelSelector); one that parses
  // must match the template's labels — a missing one is labels.Nothing(), which matches nothing.
  const json::object* sel = object_at(job, {"spec", "selector"});
  const json::object* labels = object_at(job, {"spec", "template", "metadata", "labels"});
  if (required_selector_causes(sel, {}, causes).parses && (!sel || !selector_matches(*sel, labels)))
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: `selector` does not match template `labels`", go_map(labels)),
                      "spec.template.metadata.labels"});
}

bool replicated_template_causes(const json::object& obj, std::vector<StatusCause>& causes) {
  // apps/validation ValidateDeploymentSpec / ValidateReplicaSetSpec: a selector is required, valid
  // (ValidateLabelSelector) and not empty; one that LabelSelectorAsSelector cannot parse is
  // `invalid label selector` and the template goes unchecked; else the template's labels must
  // match it (a missing selector matches nothing).
  const json::object* sel = object_at(obj, {"spec", "selector"});
  const json::object* labels = object_at(obj, {"spec", "template", "metadata", "labels"});
  const auto [parses, empty] = required_selector_causes(sel, "deployment", causes);
  if (!parses) {
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: invalid label selector", go_label_selector(sel)),
                      "spec.selector"});
    return false;
  }
  if (!sel || (!empty && !selector_matches(*sel, labels)))
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: `selector` does not match template `labels`", go_map(labels)),
                      "spec.template.metadata.labels"});
  return true;
}

void template_restart_policy_causes(bool batch, const json::object* spec, std::string_view spec_path,
                                    std::vector<StatusCause>& causes, std::string_view apps_kind) {
  static const json::object kNone;
  const json::object& sp = spec ? *spec : kNone;
  const std::string policy = string_of(object_at(sp, {"template", "spec"}), "restartPolicy");
  const std::string field = fmt::format("{}template.spec.restartPolicy", spec_path);
  if (batch) {
    // batch/validation validateJobSpec: OnFailure or Never; Always (the template default) or none
    // is Required, anything else NotSupported; with a podFailurePolicy only Never.
    const json::value* pfp = sp.if_contains("podFailurePolicy");
    if (policy == "Always" || policy.empty())
      causes.push_back({"FieldValueRequired", "Required value: valid values: \"OnFailure\", \"Never\"", field});
    else if (policy != "OnFailure" && policy != "Never")
      causes.push_back(
          {"FieldValueNotSupported",
           fmt::format("Unsupported value: {}: supported values: \"OnFailure\", \"Never\"", quoted(policy)), field});
    else if (pfp && !pfp->is_null() && policy != "Never")
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: only \"Never\" is supported when podFailurePolicy is specified",
                                    quoted(policy)),
                        field});
  } else {
    // apps/validation ValidatePodTemplateSpecForReplicaSet, and ValidateDaemonSetSpec's and
    // ValidateStatefulSetSpec's own copies: Always only (empty: no template, whose default would be
    // Always), and no activeDeadlineSeconds ("in <kind>").
    if (policy != "Always" && !policy.empty())
      causes.push_back({"FieldValueNotSupported",
                        fmt::format("Unsupported value: {}: supported values: \"Always\"", quoted(policy)), field});
    if (const json::object* ps = object_at(sp, {"template", "spec"}))
      if (const json::value* ads = ps->if_contains("activeDeadlineSeconds"); ads && !ads->is_null())
        causes.push_back({"FieldValueForbidden",
                          fmt::format("Forbidden: activeDeadlineSeconds in {} is not Supported", apps_kind),
                          fmt::format("{}template.spec.activeDeadlineSeconds", spec_path)});
  }
}

}  // namespace gpupool::embedded
