// Fields an update may not change, as the registries' ValidateUpdate rules refuse them (422
// Invalid): a claim's spec, a Job's template and selector, a Deployment's selector, a Service's
// cluster IP.
#include <fmt/format.h>

#include "embedded/admission.hpp"
#include "embedded/controllers_util.hpp"

namespace gpupool::embedded {
namespace {

using util::object_at;
using util::string_of;

std::string quoted(std::string_view s) { return json::serialize(json::value(s)); }

// fmt %#v of a metav1.LabelSelector, as field.Invalid prints it.
std::string go_label_selector(const json::object* sel) {
  std::string labels = "map[string]string(nil)";
  if (const json::object* ml = sel ? object_at(*sel, {"matchLabels"}) : nullptr; ml) {
    std::map<std::string, std::string> sorted;
    for (const auto& [k, v] : *ml) sorted[std::string(k)] = v.is_string() ? std::string(v.as_string()) : json::serialize(v);
    labels = "map[string]string{";
    bool first = true;
    for (const auto& [k, v] : sorted) {
      labels += (first ? "" : ", ") + quoted(k) + ":" + quoted(v);
      first = false;
    }
    labels += "}";
  }
  std::string exprs = "[]v1.LabelSelectorRequirement(nil)";
  if (const json::array* me = sel ? util::array_at(*sel, {}, "matchExpressions") : nullptr; me && !me->empty()) {
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

const json::value* at(const json::object& o, std::initializer_list<std::string_view> path, std::string_view key) {
  const json::object* parent = object_at(o, path);
  return parent ? parent->if_contains(key) : nullptr;
}
bool same(const json::value* a, const json::value* b) {
  if (!a || a->is_null()) return !b || b->is_null();
  return b && util::json_equal(*a, *b);
}

}  // namespace

void immutable_fields(AdmissionRequest& r) {
  if (r.operation != AdmissionRequest::Operation::Update || !r.type || !r.object || !r.old_object || !r.subresource.empty())
    return;
  const ResourceType& t = *r.type;
  json::object& obj = *r.object;
  const json::object& old = *r.old_object;
  std::vector<StatusCause> causes;
  if (t.group == "apps" && t.resource == "deployments") {
    // apps/validation ValidateDeploymentUpdate (apps/v1): spec.selector is immutable.
    if (!same(at(old, {"spec"}, "selector"), at(obj, {"spec"}, "selector")))
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: field is immutable", go_label_selector(object_at(obj, {"spec", "selector"}))),
                        "spec.selector"});
  } else if (t.group == "batch" && t.resource == "jobs") {
    // batch/validation ValidateJobSpecUpdate: selector and template are immutable. (The real
    // message prints the template as a Go struct dump with pointer addresses; here it is its JSON.)
    if (!same(at(old, {"spec"}, "selector"), at(obj, {"spec"}, "selector")))
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: field is immutable", go_label_selector(object_at(obj, {"spec", "selector"}))),
                        "spec.selector"});
    if (!same(at(old, {"spec"}, "template"), at(obj, {"spec"}, "template"))) {
      const json::value* tpl = at(obj, {"spec"}, "template");
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: field is immutable", tpl ? json::serialize(*tpl) : "null"),
                        "spec.template"});
    }
  } else if (t.group.empty() && t.resource == "services") {
    // The service registry keeps an allocated IP a write leaves out (patchAllocatedValues); core
    // validation ValidateServiceUpdate refuses another (validateServiceClusterIPsRelatedFields):
    // the error names clusterIPs[0], which the registry derives from clusterIP.
    const std::string before = string_of(object_at(old, {"spec"}), "clusterIP");
    json::object& spec = util::ensure_object(obj, "spec");
    const std::string after = string_of(&spec, "clusterIP");
    if (!before.empty() && after.empty()) {
      spec["clusterIP"] = before;
      if (const json::value* ips = at(old, {"spec"}, "clusterIPs"); ips && !spec.contains("clusterIPs")) spec["clusterIPs"] = *ips;
    } else if (!before.empty() && after != before) {
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: []string{{{}}}: may not change once set", quoted(after)), "spec.clusterIPs[0]"});
    }
  } else if (t.group.empty() && t.resource == "persistentvolumeclaims") {
    // core/validation ValidatePersistentVolumeClaimUpdate: the spec is immutable but for
    // volumeName set once (the binder), a class set where there was none, and, once bound, the
    // storage request and volumeAttributesClassName. (The real message appends a go-cmp diff of
    // the two specs.)
    json::object a = object_at(old, {"spec"}) ? *object_at(old, {"spec"}) : json::object{};
    json::object b = object_at(obj, {"spec"}) ? *object_at(obj, {"spec"}) : json::object{};
    // Decoding defaults what a full-object write leaves out (SetDefaults_PersistentVolumeClaimSpec).
    if (!b.contains("volumeMode") && a.contains("volumeMode")) b["volumeMode"] = "Filesystem";
    if (string_of(&a, "volumeName").empty()) {
      if (const json::value* v = b.if_contains("volumeName")) a["volumeName"] = *v;
      else a.erase("volumeName");
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
    if (!util::json_equal(a, b))
      causes.push_back({"FieldValueForbidden",
                        "Forbidden: spec is immutable after creation except resources.requests and "
                        "volumeAttributesClassName for bound claims",
                        "spec"});
  }
  if (!causes.empty()) throw StatusError::invalid(t, util::name_of(obj), std::move(causes));
}

}  // namespace gpupool::embedded
