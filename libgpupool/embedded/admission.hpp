// embedded/admission.hpp — what the embedded API server's admission plugins share: the
// admission.NewForbidden error (staging/src/k8s.io/apiserver/pkg/admission/errors.go), and the
// plugins the server installs in the API server's order (mutating first, ResourceQuota last; see
// install_admission in admission.cpp).
#pragma once

#include <functional>
#include <string_view>

#include "embedded/store.hpp"

namespace gpupool::embedded {

/// admission.NewForbidden: 403 Forbidden `<resource>[.<group>] "<name>" is forbidden: <why>` with
/// details {name, group, kind: resource}. `mutating`: the error comes from a mutating plugin, which
/// runs before the name of a generateName object exists — the real message then carries the
/// generateName prefix (`pods "web-5d8f-" is forbidden: ...`) where a validating plugin names the
/// generated name.
StatusError admission_forbidden(const AdmissionRequest& r, std::string_view why, bool mutating = false);

/// The name admission errors carry (see admission_forbidden).
std::string admission_name(const AdmissionRequest& r, bool mutating);

/// Installs, in kube-apiserver's order, the admission plugins and update rules that are not part
/// of a controller: LimitRanger's defaults (mutating), ServiceAccount (mutating, validating),
/// Priority (mutating, and PriorityClass validation), LimitRanger's min/max checks (validating).
/// ResourceQuota (QuotaController, quota.hpp) must be added after these, as the last plugin.
void install_admission_plugins(Store& store);

/// LimitRanger (plugin/pkg/admission/limitranger): `mutate` fills the Container items' default
/// requests and limits into a new pod (annotation kubernetes.io/limit-ranger) and defaults new
/// LimitRange objects; otherwise validates pods and claims against min, max and
/// maxLimitRequestRatio: 403 `pods "x" is forbidden: maximum cpu usage per Container is 2, but
/// limit is 3`.
void limit_ranger(Store& store, AdmissionRequest& r, bool mutate);

/// ServiceAccount (plugin/pkg/admission/serviceaccount): `mutate` gives a new pod its service
/// account ("default" unless named), refused with 403 `pods "x" is forbidden: error looking up
/// service account ns/sa: serviceaccount "sa" not found` when the account does not exist; mounts the
/// kube-api-access-* projected volume (token, kube-root-ca.crt, namespace) into every container
/// unless automountServiceAccountToken is false on the pod or the account; copies the account's
/// imagePullSecrets into a pod without any. Otherwise validates (the account exists; its mountable
/// secrets when it enforces them; mirror pods refer to no account, secret or token).
void service_account_admission(Store& store, AdmissionRequest& r, bool mutate);

/// PodSecurity (plugin/pkg/admission/security/podsecurity, embedded/pod_security.cpp; validating):
/// the pod-security.kubernetes.io/{enforce,audit,warn}[-version] labels of namespaces validated;
/// pods refused (403 `violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`)
/// at the enforce level; pods and pod templates of workloads warned about at the warn level.
void pod_security_admission(Store& store, AdmissionRequest& r);

/// Priority (plugin/pkg/admission/priority): a new pod gets spec.priority and preemptionPolicy
/// from its PriorityClass (or the globalDefault class, or 0); an unknown class is 403 `pods "x" is
/// forbidden: no PriorityClass with name foo was found`.
void priority_admission(Store& store, AdmissionRequest& r);
/// Priority's Validate: no second globalDefault PriorityClass (403).
void priority_validation(Store& store, AdmissionRequest& r);
/// ValidatePriorityClass past its metadata: system- names reserved, user values up to 1e9, a known
/// preemption policy (a create's rules; an update runs ValidatePriorityClassUpdate alone).
void priority_class_causes(const boost::json::object& pc, std::vector<StatusCause>& causes);
/// ValidatePriorityClassUpdate past its metadata: value and preemptionPolicy immutable.
void priority_class_update_causes(const boost::json::object& pc, const boost::json::object& old,
                                  std::vector<StatusCause>& causes);

/// The built-in system-node-critical and system-cluster-critical classes (created when absent).
void create_system_priority_classes(Store& store);

/// The update rules on immutable fields: PVC spec, Job spec.selector and spec.template,
/// Deployment spec.selector, Service spec.clusterIP (kept when an update leaves it out). Returns the
/// 422 causes; builtin validation (validation.cpp) adds them to its own, as ValidateXUpdate does.
/// `stored` gives the new object in its stored form (made on first call), which the rules compare.
std::vector<StatusCause> immutable_causes(AdmissionRequest& r, const std::function<const json::object&()>& stored);

/// A new Job as pkg/registry/batch/job PrepareForCreate and SetDefaults_Job leave it: manualSelector
/// false, podReplacementPolicy, the generated selector on its uid and the four job labels on the
/// template (unless spec.manualSelector), the Job's labels from the template's when it has none.
/// Needs metadata.uid.
void prepare_job_create(json::object& job);

/// SetDefaults_Job as the storage round trip applies it again to a created or updated Job (the
/// encoded object decoded back: etcd3's store, a dry run's copyInto): no labels of its own, it
/// takes its template's. After validation, which sees the labels the body brought.
void default_job_labels(json::object& job);
/// batch/validation validateGeneratedSelector (ValidateJob, before the spec): without
/// manualSelector, the generated labels present on the template — the batch.kubernetes.io ones
/// only with `require_prefixed_labels` (an update of a Job whose template lacked them does not
/// require them) — and the selector on them (`selector` not auto-generated).
void job_generated_selector_causes(const json::object& job, bool require_prefixed_labels,
                                   std::vector<StatusCause>& causes);
/// Whether an (old) Job's template has both batch.kubernetes.io labels (validationOptionsForJob's
/// RequirePrefixedLabels on update).
bool job_had_prefixed_labels(const json::object& old_job);
/// A workload's required spec.selector: Required when absent, else ValidateLabelSelector's causes
/// and, when `empty_for` names the kind ("deployment", "statefulset"), `empty selector is invalid
/// for <kind>`. `parses`: LabelSelectorAsSelector would take it; `empty`: it selects everything.
struct SelectorCheck {
  bool parses = true;
  bool empty = false;
};
SelectorCheck required_selector_causes(const json::object* sel, std::string_view empty_for,
                                       std::vector<StatusCause>& causes);
/// ValidateJobSpec's selector rules: required, valid, and matching the template's labels.
void job_selector_causes(const json::object& job, std::vector<StatusCause>& causes);
/// fmt %#v of a map[string]string (keys sorted) and of a metav1.LabelSelector ("null" when
/// absent), as field.Invalid prints them.
std::string go_map(const json::object* m);
std::string go_label_selector(const json::object* sel);
/// A Deployment's or ReplicaSet's selector (required, valid, not empty) and its template's labels.
/// False when the selector does not parse (`invalid label selector`): the template is not
/// validated then (ValidateDeploymentSpec / ValidateReplicaSetSpec).
bool replicated_template_causes(const json::object& obj, std::vector<StatusCause>& causes);
/// The template's restartPolicy: Always for apps workloads, OnFailure or Never for Jobs (Never
/// only with a podFailurePolicy). `spec`: the workload's spec (null: none), at field path
/// `spec_path` ("spec.", or a CronJob's "spec.jobTemplate.spec."). `apps_kind` names the workload
/// in the activeDeadlineSeconds message ("ReplicaSet" for Deployments too, "DaemonSet", "StatefulSet").
void template_restart_policy_causes(bool batch, const json::object* spec, std::string_view spec_path,
                                    std::vector<StatusCause>& causes, std::string_view apps_kind = "ReplicaSet");

}  // namespace gpupool::embedded
