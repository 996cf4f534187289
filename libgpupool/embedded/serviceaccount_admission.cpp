// The ServiceAccount admission plugin (plugin/pkg/admission/serviceaccount/admission.go, v1.32),
// on by default in kube-apiserver: a new pod runs as a service account of its namespace
// ("default" unless it names one), which must exist; its token, the cluster's CA and the
// namespace are projected into every container at /var/run/secrets/kubernetes.io/serviceaccount
// (a kube-api-access-<5 random> volume) unless automountServiceAccountToken says no; the account's
// imagePullSecrets are the pod's when it has none. Mirror pods (kubelets' static pods) may refer to
// no account, no secret and no token.
#include <fmt/format.h>

#include <set>

#include "embedded/admission.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/service_account_tokens.hpp"

namespace gpupool::embedded {
namespace {

using util::object_at;
using util::string_of;

constexpr std::string_view kDefaultAccount = "default";
constexpr std::string_view kVolumePrefix = "kube-api-access-";
constexpr std::string_view kTokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount";
constexpr std::string_view kMirrorAnnotation = "kubernetes.io/config.mirror";
constexpr std::string_view kEnforceMountableSecrets = "kubernetes.io/enforce-mountable-secrets";

bool applies(const AdmissionRequest& r) {
  // shouldIgnore: pods only, not their subresources (ephemeralcontainers is not served here).
  return r.operation == AdmissionRequest::Operation::Create && r.object && r.subresource.empty() &&
         r.type->group.empty() && r.type->resource == "pods";
}

bool is_mirror(const json::object& pod) { return util::annotation(pod, kMirrorAnnotation).has_value(); }

/// getServiceAccount: the account, or a 403 naming it (the real plugin looks it up in its informer,
/// then live — ten times for "default", which its controller may still be creating; here the
/// namespace controller made "default" with the namespace).
std::shared_ptr<const json::object> account(Store& store, const AdmissionRequest& r, const std::string& name,
                                            bool mutating) {
  auto sa = store.find(store.type("", "serviceaccounts"), r.ns, name);
  if (!sa)
    throw admission_forbidden(
        r, fmt::format("error looking up service account {}/{}: serviceaccount \"{}\" not found", r.ns, name, name),
        mutating);
  return sa;
}

bool should_automount(const json::object& sa, const json::object& spec) {
  for (const json::object* o : {&spec, &sa})
    if (const json::value* v = o->if_contains("automountServiceAccountToken"); v && v->is_bool()) return v->as_bool();
  return true;
}

/// TokenVolumeSource: the token (WarnOnlyBoundTokenExpirationSeconds), kube-root-ca.crt's
/// ca.crt, the namespace; defaultMode set explicitly (kubernetes#104464). (OpenShift's fork adds
/// openshift-service-ca.crt as a fourth source; upstream Kubernetes has these three.)
json::object token_volume(const std::string& name) {
  json::array sources{
      json::object{{"serviceAccountToken",
                    json::object{{"expirationSeconds", ServiceAccountTokens::kWarnOnlyExpiration}, {"path", "token"}}}},
      json::object{
          {"configMap", json::object{{"name", "kube-root-ca.crt"},
                                     {"items", json::array{json::object{{"key", "ca.crt"}, {"path", "ca.crt"}}}}}}},
      json::object{{"downwardAPI",
                    json::object{{"items", json::array{json::object{
                                               {"path", "namespace"},
                                               {"fieldRef", json::object{{"apiVersion", "v1"},
                                                                         {"fieldPath", "metadata.namespace"}}}}}}}}}};
  return json::object{{"name", name},
                      {"projected", json::object{{"sources", std::move(sources)}, {"defaultMode", 420}}}};
}

/// mountServiceAccountToken: the first kube-api-access-* volume's name if there is one, else a new
/// one; a read-only mount of it in each init and app container without a mount at the token path;
/// the volume added when some container got the mount and none was there.
void mount_token(Store& store, json::object& spec) {
  std::string volume;
  if (const json::value* vs = spec.if_contains("volumes"); vs && vs->is_array())
    for (const auto& v : vs->as_array())
      if (v.is_object())
        if (std::string n = string_of(&v.as_object(), "name"); n.starts_with(kVolumePrefix)) {
          volume = std::move(n);
          break;
        }
  const bool has_volume = !volume.empty();
  if (!has_volume) volume = store.generate_name(kVolumePrefix);
  bool needs_volume = false;
  for (const char* list : {"initContainers", "containers"}) {
    json::value* cs = spec.if_contains(list);
    if (!cs || !cs->is_array()) continue;
    for (auto& c : cs->as_array()) {
      if (!c.is_object()) continue;
      json::value& mounts = c.as_object()["volumeMounts"];
      if (!mounts.is_array()) mounts = json::array{};
      bool mounted = false;
      for (const auto& m : mounts.as_array())
        if (m.is_object() && string_of(&m.as_object(), "mountPath") == kTokenMountPath) mounted = true;
      if (mounted) continue;
      mounts.as_array().push_back(
          json::object{{"name", volume}, {"readOnly", true}, {"mountPath", std::string(kTokenMountPath)}});
      needs_volume = true;
    }
  }
  if (has_volume || !needs_volume) return;
  json::value& vs = spec["volumes"];
  if (!vs.is_array()) vs = json::array{};
  vs.as_array().push_back(token_volume(volume));
}

/// The names in `list` (an array of {name}) of `o`.
std::set<std::string> names_in(const json::object& o, std::string_view list) {
  std::set<std::string> out;
  if (const json::value* v = o.if_contains(list); v && v->is_array())
    for (const auto& e : v->as_array())
      if (e.is_object()) out.insert(string_of(&e.as_object(), "name"));
  return out;
}

/// limitSecretReferences (an account annotated kubernetes.io/enforce-mountable-secrets=true): the
/// pod may use only the account's secrets, and only its imagePullSecrets.
void limit_secret_references(const AdmissionRequest& r, const json::object& sa, const json::object& spec) {
  const std::string account_name = util::name_of(sa);
  const std::set<std::string> mountable = names_in(sa, "secrets");
  auto refuse = [&](const std::string& why) { throw admission_forbidden(r, why, false); };
  if (const json::value* vs = spec.if_contains("volumes"); vs && vs->is_array())
    for (const auto& v : vs->as_array())
      if (const json::object* secret = v.is_object() ? object_at(v.as_object(), {"secret"}) : nullptr)
        if (std::string n = string_of(secret, "secretName"); !mountable.count(n))
          refuse(fmt::format(
              "volume with secret.secretName=\"{}\" is not allowed because service account {} does not reference "
              "that secret",
              n, account_name));
  for (const auto& [list, what] :
       {std::pair{"initContainers", "init container"}, std::pair{"containers", "container"}}) {
    const json::value* cs = spec.if_contains(list);
    if (!cs || !cs->is_array()) continue;
    for (const auto& c : cs->as_array()) {
      if (!c.is_object()) continue;
      const json::object& co = c.as_object();
      const std::string cname = string_of(&co, "name");
      if (const json::value* env = co.if_contains("env"); env && env->is_array())
        for (const auto& e : env->as_array())
          if (const json::object* ref =
                  e.is_object() ? object_at(e.as_object(), {"valueFrom", "secretKeyRef"}) : nullptr)
            if (std::string n = string_of(ref, "name"); !mountable.count(n))
              refuse(
                  fmt::format("{} {} with envVar {} referencing secret.secretName=\"{}\" is not allowed because "
                              "service account {} does not reference that secret",
                              what, cname, string_of(&e.as_object(), "name"), n, account_name));
      if (const json::value* from = co.if_contains("envFrom"); from && from->is_array())
        for (const auto& e : from->as_array())
          if (const json::object* ref = e.is_object() ? object_at(e.as_object(), {"secretRef"}) : nullptr)
            if (std::string n = string_of(ref, "name"); !mountable.count(n))
              refuse(
                  fmt::format("{} {} with envFrom referencing secret.secretName=\"{}\" is not allowed because "
                              "service account {} does not reference that secret",
                              what, cname, n, account_name));
    }
  }
  const std::set<std::string> pull = names_in(sa, "imagePullSecrets");
  if (const json::value* ps = spec.if_contains("imagePullSecrets"); ps && ps->is_array())
    for (std::size_t i = 0; i < ps->as_array().size(); ++i) {
      const json::value& p = ps->as_array()[i];
      const std::string n = p.is_object() ? string_of(&p.as_object(), "name") : "";
      if (!pull.count(n))
        refuse(fmt::format(
            "imagePullSecrets[{}].name=\"{}\" is not allowed because service account {} does not reference that "
            "imagePullSecret",
            i, n, account_name));
    }
}

/// Whether a mirror pod refers to a secret (podutil.VisitPodSecretNames, for the sources a pod
/// spec can name one in).
bool refers_to_secrets(const json::object& spec) {
  if (const json::value* ps = spec.if_contains("imagePullSecrets"); ps && ps->is_array() && !ps->as_array().empty())
    return true;
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"})
    if (const json::value* cs = spec.if_contains(list); cs && cs->is_array())
      for (const auto& c : cs->as_array()) {
        if (!c.is_object()) continue;
        if (const json::value* env = c.as_object().if_contains("env"); env && env->is_array())
          for (const auto& e : env->as_array())
            if (e.is_object() && object_at(e.as_object(), {"valueFrom", "secretKeyRef"})) return true;
        if (const json::value* from = c.as_object().if_contains("envFrom"); from && from->is_array())
          for (const auto& e : from->as_array())
            if (e.is_object() && object_at(e.as_object(), {"secretRef"})) return true;
      }
  if (const json::value* vs = spec.if_contains("volumes"); vs && vs->is_array())
    for (const auto& v : vs->as_array()) {
      if (!v.is_object()) continue;
      const json::object& vo = v.as_object();
      if (object_at(vo, {"secret"}) || object_at(vo, {"cephfs", "secretRef"}) ||
          object_at(vo, {"cinder", "secretRef"}) || object_at(vo, {"flexVolume", "secretRef"}) ||
          object_at(vo, {"iscsi", "secretRef"}) || object_at(vo, {"rbd", "secretRef"}) ||
          object_at(vo, {"scaleIO", "secretRef"}) || object_at(vo, {"storageos", "secretRef"}) ||
          object_at(vo, {"csi", "nodePublishSecretRef"}) ||
          !string_of(object_at(vo, {"azureFile"}), "secretName").empty())
        return true;
      if (const json::array* sources = util::array_at(vo, {"projected"}, "sources"))
        for (const auto& s : *sources)
          if (s.is_object() && object_at(s.as_object(), {"secret"})) return true;
    }
  return false;
}

void validate_mirror_pod(const AdmissionRequest& r, const json::object& spec) {
  if (!string_of(&spec, "serviceAccountName").empty())
    throw admission_forbidden(r, "a mirror pod may not reference service accounts");
  if (refers_to_secrets(spec)) throw admission_forbidden(r, "a mirror pod may not reference secrets");
  if (const json::value* vs = spec.if_contains("volumes"); vs && vs->is_array())
    for (const auto& v : vs->as_array())
      if (const json::array* sources =
              v.is_object() ? util::array_at(v.as_object(), {"projected"}, "sources") : nullptr)
        for (const auto& s : *sources)
          if (s.is_object() && object_at(s.as_object(), {"serviceAccountToken"}))
            throw admission_forbidden(r, "a mirror pod may not use ServiceAccountToken volume projections");
}

}  // namespace

void service_account_admission(Store& store, AdmissionRequest& r, bool mutate) {
  if (!applies(r)) return;
  json::object& pod = *r.object;
  json::object& spec = util::ensure_object(pod, "spec");
  if (is_mirror(pod)) {
    if (!mutate) validate_mirror_pod(r, spec);
    return;
  }
  if (mutate) {
    if (string_of(&spec, "serviceAccountName").empty()) {
      spec["serviceAccountName"] = kDefaultAccount;
      spec["serviceAccount"] = kDefaultAccount;  // written back under both names (v1 conversion)
    }
    const auto sa = account(store, r, string_of(&spec, "serviceAccountName"), true);
    if (should_automount(*sa, spec)) mount_token(store, spec);
    const json::value* ps = spec.if_contains("imagePullSecrets");
    if (!ps || !ps->is_array() || ps->as_array().empty()) {
      json::array pull;  // in the account's order
      if (const json::value* from = sa->if_contains("imagePullSecrets"); from && from->is_array())
        for (const auto& e : from->as_array())
          pull.push_back(json::object{{"name", e.is_object() ? string_of(&e.as_object(), "name") : ""}});
      if (!pull.empty()) spec["imagePullSecrets"] = std::move(pull);
    }
    return;
  }
  const std::string name = string_of(&spec, "serviceAccountName");
  if (name.empty())
    throw admission_forbidden(r, fmt::format("no service account specified for pod {}/{}", r.ns, util::name_of(pod)));
  const auto sa = account(store, r, name, false);
  const auto enforce = util::annotation(*sa, kEnforceMountableSecrets);
  if (enforce && (*enforce == "true" || *enforce == "1" || *enforce == "t" || *enforce == "T" || *enforce == "TRUE" ||
                  *enforce == "True"))
    limit_secret_references(r, *sa, spec);
}

}  // namespace gpupool::embedded
