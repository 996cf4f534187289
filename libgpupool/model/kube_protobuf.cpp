// model/kube_protobuf.cpp — Kubernetes' protobuf encoding: the schema (field numbers of k8s.io/api's
// generated.proto) and the wire format, for the request bodies the embedded server decodes and
// the lists the client reads.
#include "model/kube_protobuf.hpp"

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <boost/json.hpp>

#include "common/base64.hpp"
#include "gpupool/time.hpp"

namespace gpupool::protobuf {

namespace json = boost::json;

namespace {

// ---- schema ------------------------------------------------------------------------------------

enum class Type {
  String,
  Int,
  Bool,
  Bytes,
  Message,
  MapStringString,
  MapStringBytes,
  MapStringQuantity,
  Quantity,
  IntOrString,
  Time
};

struct Message;
struct Field {
  int number;
  const char* json;
  Type type;
  bool repeated = false;
  const Message* message = nullptr;
  bool pointer = false;  ///< a *T in the Go type: an explicit zero is kept
};
struct Message {
  std::vector<Field> fields;
  const Field* find(int number) const {
    for (const auto& f : fields)
      if (f.number == number) return &f;
    return nullptr;
  }
};

Field str(int n, const char* j) { return {n, j, Type::String}; }
Field strs(int n, const char* j) { return {n, j, Type::String, true}; }
Field pstr(int n, const char* j) { return {n, j, Type::String, false, nullptr, true}; }  // a *string
Field num(int n, const char* j, bool pointer = false) { return {n, j, Type::Int, false, nullptr, pointer}; }
Field flag(int n, const char* j, bool pointer = false) { return {n, j, Type::Bool, false, nullptr, pointer}; }
Field msg(int n, const char* j, const Message& m, bool repeated = false) { return {n, j, Type::Message, repeated, &m}; }
/// A message whose fields the JSON holds in the enclosing object (a Go embedded struct).
Field inline_msg(int n, const Message& m) { return {n, "", Type::Message, false, &m}; }
Field of(int n, const char* j, Type t) { return {n, j, t}; }

struct Schema {
  // k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto
  Message owner_reference{{str(1, "kind"), str(3, "name"), str(4, "uid"), str(5, "apiVersion"),
                           flag(6, "controller", true), flag(7, "blockOwnerDeletion", true)}};
  Message object_meta{{str(1, "name"), str(2, "generateName"), str(3, "namespace"), str(5, "uid"),
                       str(6, "resourceVersion"), of(8, "creationTimestamp", Type::Time),
                       of(9, "deletionTimestamp", Type::Time), of(11, "labels", Type::MapStringString),
                       of(12, "annotations", Type::MapStringString), msg(13, "ownerReferences", owner_reference, true),
                       strs(14, "finalizers")}};
  Message selector_requirement{{str(1, "key"), str(2, "operator"), strs(3, "values")}};
  Message label_selector{
      {of(1, "matchLabels", Type::MapStringString), msg(2, "matchExpressions", selector_requirement, true)}};
  // k8s.io/api/core/v1/generated.proto
  Message container_port{
      {str(1, "name"), num(2, "hostPort"), num(3, "containerPort"), str(4, "protocol"), str(5, "hostIP")}};
  Message env_var{{str(1, "name"), str(2, "value")}};
  Message resources{{of(1, "limits", Type::MapStringQuantity), of(2, "requests", Type::MapStringQuantity)}};
  Message volume_mount{{str(1, "name"), flag(2, "readOnly"), str(3, "mountPath"), str(4, "subPath")}};
  Message container{{str(1, "name"), str(2, "image"), strs(3, "command"), strs(4, "args"), str(5, "workingDir"),
                     msg(6, "ports", container_port, true), msg(7, "env", env_var, true),
                     msg(8, "resources", resources), msg(9, "volumeMounts", volume_mount, true),
                     str(13, "terminationMessagePath"), str(14, "imagePullPolicy"), flag(16, "stdin"),
                     flag(17, "stdinOnce"), flag(18, "tty"), str(20, "terminationMessagePolicy"),
                     str(24, "restartPolicy")}};
  Message toleration{
      {str(1, "key"), str(2, "operator"), str(3, "value"), str(4, "effect"), num(5, "tolerationSeconds", true)}};
  Message node_selector_requirement{{str(1, "key"), str(2, "operator"), strs(3, "values")}};
  Message node_selector_term{{msg(1, "matchExpressions", node_selector_requirement, true),
                              msg(2, "matchFields", node_selector_requirement, true)}};
  Message node_selector{{msg(1, "nodeSelectorTerms", node_selector_term, true)}};
  Message preferred_term{{num(1, "weight"), msg(2, "preference", node_selector_term)}};
  Message node_affinity{{msg(1, "requiredDuringSchedulingIgnoredDuringExecution", node_selector),
                         msg(2, "preferredDuringSchedulingIgnoredDuringExecution", preferred_term, true)}};
  Message affinity{{msg(1, "nodeAffinity", node_affinity)}};
  Message pvc_source{{str(1, "claimName"), flag(2, "readOnly")}};
  // Volume {name = 1; volumeSource = 2}: VolumeSource is inline in the JSON (`json:",inline"`).
  Message volume_source{{msg(10, "persistentVolumeClaim", pvc_source)}};
  Message volume{{str(1, "name"), inline_msg(2, volume_source)}};
  Message pod_spec{{msg(1, "volumes", volume, true),
                    msg(2, "containers", container, true),
                    str(3, "restartPolicy"),
                    num(4, "terminationGracePeriodSeconds", true),
                    num(5, "activeDeadlineSeconds", true),
                    str(6, "dnsPolicy"),
                    of(7, "nodeSelector", Type::MapStringString),
                    str(8, "serviceAccountName"),
                    str(9, "serviceAccount"),
                    str(10, "nodeName"),
                    flag(11, "hostNetwork"),
                    flag(12, "hostPID"),
                    flag(13, "hostIPC"),
                    str(16, "hostname"),
                    str(17, "subdomain"),
                    str(19, "schedulerName"),
                    msg(18, "affinity", affinity),
                    msg(20, "initContainers", container, true),
                    msg(22, "tolerations", toleration, true),
                    str(24, "priorityClassName"),
                    num(25, "priority", true),
                    Field{29, "runtimeClassName", Type::String, false, nullptr, true},
                    str(31, "preemptionPolicy"),
                    of(32, "overhead", Type::MapStringQuantity)}};
  Message pod_template{{msg(1, "metadata", object_meta), msg(2, "spec", pod_spec)}};
  Message pod_status{{str(1, "phase"), str(11, "nominatedNodeName")}};
  Message pod{{msg(1, "metadata", object_meta), msg(2, "spec", pod_spec), msg(3, "status", pod_status)}};
  // A Pod as PodRequirements::from_pod_json reads it (for_each_item's ItemFields::model): the
  // same field numbers, without what it never reads (images, commands, env, ports, mounts, labels,
  // annotations, ...), so a whole-cluster view builds a fraction of the tree per pod.
  Message object_meta_model_pod{
      {str(1, "name"), str(3, "namespace"), msg(13, "ownerReferences", owner_reference, true)}};
  Message container_model{{msg(8, "resources", resources), str(24, "restartPolicy")}};
  Message pod_spec_model{{msg(1, "volumes", volume, true), msg(2, "containers", container_model, true),
                          of(7, "nodeSelector", Type::MapStringString), str(10, "nodeName"),
                          msg(18, "affinity", affinity), msg(20, "initContainers", container_model, true),
                          msg(22, "tolerations", toleration, true), of(32, "overhead", Type::MapStringQuantity)}};
  Message pod_model{
      {msg(1, "metadata", object_meta_model_pod), msg(2, "spec", pod_spec_model), msg(3, "status", pod_status)}};
  // Node: what gpupool's Node (model/node.hpp) reads.
  Message taint{{str(1, "key"), str(2, "value"), str(3, "effect"), of(4, "timeAdded", Type::Time)}};
  Message node_spec{{str(1, "podCIDR"), str(3, "providerID"), flag(4, "unschedulable"), msg(5, "taints", taint, true)}};
  Message node_condition{{str(1, "type"), str(2, "status"), of(3, "lastHeartbeatTime", Type::Time),
                          of(4, "lastTransitionTime", Type::Time), str(5, "reason"), str(6, "message")}};
  Message node_address{{str(1, "type"), str(2, "address")}};
  Message node_info{{str(1, "machineID"), str(2, "systemUUID"), str(3, "bootID"), str(4, "kernelVersion"),
                     str(5, "osImage"), str(6, "containerRuntimeVersion"), str(7, "kubeletVersion"),
                     str(8, "kubeProxyVersion"), str(9, "operatingSystem"), str(10, "architecture")}};
  Message node_status{{of(1, "capacity", Type::MapStringQuantity), of(2, "allocatable", Type::MapStringQuantity),
                       str(3, "phase"), msg(4, "conditions", node_condition, true),
                       msg(5, "addresses", node_address, true), msg(7, "nodeInfo", node_info)}};
  Message node{{msg(1, "metadata", object_meta), msg(2, "spec", node_spec), msg(3, "status", node_status)}};
  // A Node as Node::from_json reads it (ItemFields::model): no uid, owners, finalizers, podCIDR,
  // condition times and reasons, taints' timeAdded, nodeInfo's ids (formatting the conditions'
  // times alone was 2% of a view's client CPU).
  Message object_meta_model_node{{str(1, "name"), of(8, "creationTimestamp", Type::Time),
                                  of(11, "labels", Type::MapStringString),
                                  of(12, "annotations", Type::MapStringString)}};
  Message taint_model{{str(1, "key"), str(2, "value"), str(3, "effect")}};
  Message node_spec_model{{flag(4, "unschedulable"), msg(5, "taints", taint_model, true)}};
  Message node_condition_model{{str(1, "type"), str(2, "status")}};
  Message node_info_model{
      {str(4, "kernelVersion"), str(5, "osImage"), str(6, "containerRuntimeVersion"), str(7, "kubeletVersion")}};
  Message node_status_model{{of(1, "capacity", Type::MapStringQuantity), of(2, "allocatable", Type::MapStringQuantity),
                             msg(4, "conditions", node_condition_model, true), msg(5, "addresses", node_address, true),
                             msg(7, "nodeInfo", node_info_model)}};
  Message node_model{{msg(1, "metadata", object_meta_model_node), msg(2, "spec", node_spec_model),
                      msg(3, "status", node_status_model)}};
  Message service_port{{str(1, "name"), str(2, "protocol"), num(3, "port"), of(4, "targetPort", Type::IntOrString),
                        num(5, "nodePort"), str(6, "appProtocol")}};
  Message service_spec{{msg(1, "ports", service_port, true), of(2, "selector", Type::MapStringString),
                        str(3, "clusterIP"), str(4, "type"), strs(5, "externalIPs"), str(7, "sessionAffinity"),
                        str(8, "loadBalancerIP"), str(10, "externalName"), str(11, "externalTrafficPolicy"),
                        strs(18, "clusterIPs"), strs(19, "ipFamilies"), str(17, "ipFamilyPolicy"),
                        str(22, "internalTrafficPolicy")}};
  Message service{{msg(1, "metadata", object_meta), msg(2, "spec", service_spec)}};
  Message config_map{{msg(1, "metadata", object_meta), of(2, "data", Type::MapStringString),
                      of(3, "binaryData", Type::MapStringBytes), flag(4, "immutable", true)}};
  Message secret{{msg(1, "metadata", object_meta), of(2, "data", Type::MapStringBytes), str(3, "type"),
                  of(4, "stringData", Type::MapStringString), flag(5, "immutable", true)}};
  Message namespace_{{msg(1, "metadata", object_meta)}};
  // k8s.io/api/apps/v1/generated.proto
  Message rolling_update{{of(1, "maxUnavailable", Type::IntOrString), of(2, "maxSurge", Type::IntOrString)}};
  Message strategy{{str(1, "type"), msg(2, "rollingUpdate", rolling_update)}};
  Message deployment_spec{{num(1, "replicas", true), msg(2, "selector", label_selector),
                           msg(3, "template", pod_template), msg(4, "strategy", strategy), num(5, "minReadySeconds"),
                           num(6, "revisionHistoryLimit", true), flag(7, "paused"),
                           num(9, "progressDeadlineSeconds", true)}};
  Message deployment{{msg(1, "metadata", object_meta), msg(2, "spec", deployment_spec)}};
  // core/v1: what `kubectl create quota|serviceaccount` and LimitRange manifests send.
  Message scoped_requirement{{str(1, "scopeName"), str(2, "operator"), strs(3, "values")}};
  Message scope_selector{{msg(1, "matchExpressions", scoped_requirement, true)}};
  Message quota_spec{
      {of(1, "hard", Type::MapStringQuantity), strs(2, "scopes"), msg(3, "scopeSelector", scope_selector)}};
  Message resource_quota{{msg(1, "metadata", object_meta), msg(2, "spec", quota_spec)}};
  Message object_reference{{str(1, "kind"), str(2, "namespace"), str(3, "name"), str(4, "uid"), str(5, "apiVersion"),
                            str(6, "resourceVersion"), str(7, "fieldPath")}};
  Message local_reference{{str(1, "name")}};
  Message service_account{{msg(1, "metadata", object_meta), msg(2, "secrets", object_reference, true),
                           msg(3, "imagePullSecrets", local_reference, true),
                           flag(4, "automountServiceAccountToken", true)}};
  Message limit_range_item{{str(1, "type"), of(2, "max", Type::MapStringQuantity),
                            of(3, "min", Type::MapStringQuantity), of(4, "default", Type::MapStringQuantity),
                            of(5, "defaultRequest", Type::MapStringQuantity),
                            of(6, "maxLimitRequestRatio", Type::MapStringQuantity)}};
  Message limit_range_spec{{msg(1, "limits", limit_range_item, true)}};
  Message limit_range{{msg(1, "metadata", object_meta), msg(2, "spec", limit_range_spec)}};
  // batch/v1 (`kubectl create job`).
  Message job_spec{{num(1, "parallelism", true), num(2, "completions", true), num(3, "activeDeadlineSeconds", true),
                    msg(4, "selector", label_selector), flag(5, "manualSelector", true),
                    msg(6, "template", pod_template), num(7, "backoffLimit", true),
                    num(8, "ttlSecondsAfterFinished", true), str(9, "completionMode"), flag(10, "suspend", true),
                    num(12, "backoffLimitPerIndex", true), num(13, "maxFailedIndexes", true),
                    str(14, "podReplacementPolicy"), str(15, "managedBy")}};
  Message job{{msg(1, "metadata", object_meta), msg(2, "spec", job_spec)}};
  // `kubectl create cronjob`: the spec and its job template.
  Message job_template{{msg(1, "metadata", object_meta), msg(2, "spec", job_spec)}};
  Message cronjob_spec{{str(1, "schedule"), str(8, "timeZone"), num(2, "startingDeadlineSeconds", true),
                        str(3, "concurrencyPolicy"), flag(4, "suspend", true), msg(5, "jobTemplate", job_template),
                        num(6, "successfulJobsHistoryLimit", true), num(7, "failedJobsHistoryLimit", true)}};
  Message cronjob{{msg(1, "metadata", object_meta), msg(2, "spec", cronjob_spec)}};
  // scheduling/v1, policy/v1 (`kubectl create priorityclass|pdb`).
  Message priority_class{{msg(1, "metadata", object_meta), num(2, "value"), flag(3, "globalDefault"),
                          str(4, "description"), str(5, "preemptionPolicy")}};
  Message pdb_spec{{of(1, "minAvailable", Type::IntOrString), msg(2, "selector", label_selector),
                    of(3, "maxUnavailable", Type::IntOrString), str(4, "unhealthyPodEvictionPolicy")}};
  Message pdb{{msg(1, "metadata", object_meta), msg(2, "spec", pdb_spec)}};
  // networking/v1 (`kubectl create ingress`); IngressRule's ingressRuleValue is inline in the JSON.
  Message typed_local_reference{{pstr(1, "apiGroup"), str(2, "kind"), str(3, "name")}};
  Message service_backend_port{{str(1, "name"), num(2, "number")}};
  Message ingress_service_backend{{str(1, "name"), msg(2, "port", service_backend_port)}};
  Message ingress_backend{{msg(4, "service", ingress_service_backend), msg(3, "resource", typed_local_reference)}};
  Message http_ingress_path{{str(1, "path"), pstr(3, "pathType"), msg(2, "backend", ingress_backend)}};
  Message http_ingress_rule_value{{msg(1, "paths", http_ingress_path, true)}};
  Message ingress_rule_value{{msg(1, "http", http_ingress_rule_value)}};
  Message ingress_rule{{str(1, "host"), inline_msg(2, ingress_rule_value)}};
  Message ingress_tls{{strs(1, "hosts"), str(2, "secretName")}};
  Message ingress_spec{{pstr(4, "ingressClassName"), msg(1, "defaultBackend", ingress_backend),
                        msg(2, "tls", ingress_tls, true), msg(3, "rules", ingress_rule, true)}};
  Message ingress{{msg(1, "metadata", object_meta), msg(2, "spec", ingress_spec)}};
  // rbac/v1 (`kubectl create role|rolebinding|clusterrole|clusterrolebinding`).
  Message policy_rule{{strs(1, "verbs"), strs(2, "apiGroups"), strs(3, "resources"), strs(4, "resourceNames"),
                       strs(5, "nonResourceURLs")}};
  Message aggregation_rule{{msg(1, "clusterRoleSelectors", label_selector, true)}};
  Message role{{msg(1, "metadata", object_meta), msg(2, "rules", policy_rule, true),
                msg(3, "aggregationRule", aggregation_rule)}};
  Message subject{{str(1, "kind"), str(2, "apiGroup"), str(3, "name"), str(4, "namespace")}};
  Message role_ref{{str(1, "apiGroup"), str(2, "kind"), str(3, "name")}};
  Message role_binding{
      {msg(1, "metadata", object_meta), msg(2, "subjects", subject, true), msg(3, "roleRef", role_ref)}};
  // authorization/v1 (`kubectl auth can-i`).
  Message resource_attributes{{str(1, "namespace"), str(2, "verb"), str(3, "group"), str(4, "version"),
                               str(5, "resource"), str(6, "subresource"), str(7, "name")}};
  Message non_resource_attributes{{str(1, "path"), str(2, "verb")}};
  Message ssar_spec{
      {msg(1, "resourceAttributes", resource_attributes), msg(2, "nonResourceAttributes", non_resource_attributes)}};
  Message ssar{{msg(1, "metadata", object_meta), msg(2, "spec", ssar_spec)}};
  // authorization.k8s.io/v1 SelfSubjectRulesReview (`kubectl auth can-i --list`): its spec's namespace.
  Message rules_review_spec{{str(1, "namespace")}};
  Message rules_review{{msg(1, "metadata", object_meta), msg(2, "spec", rules_review_spec)}};
  // authentication.k8s.io/v1 SelfSubjectReview (`kubectl auth whoami`): its status is the server's
  // to fill, so only the metadata is read.
  Message self_subject_review{{msg(1, "metadata", object_meta)}};
  // authentication.k8s.io/v1 TokenRequest (`kubectl create token`): the spec asked for.
  Message bound_object_reference{{str(1, "kind"), str(2, "apiVersion"), str(3, "name"), str(4, "uid")}};
  Message token_request_spec{
      {strs(1, "audiences"), num(4, "expirationSeconds"), msg(3, "boundObjectRef", bound_object_reference)}};
  Message token_request{{msg(1, "metadata", object_meta), msg(2, "spec", token_request_spec)}};

  // meta/v1 DeleteOptions (a DELETE's body from a typed client) and its Preconditions: the
  // pointer fields keep their zero values.
  Message preconditions{{pstr(1, "uid"), pstr(2, "resourceVersion")}};
  Message delete_options{{num(1, "gracePeriodSeconds", true), msg(2, "preconditions", preconditions),
                          flag(3, "orphanDependents", true), pstr(4, "propagationPolicy"), strs(5, "dryRun")}};

  // meta/v1 Status: what kube-apiserver answers an error in, when the request accepted protobuf.
  Message status_cause{{str(1, "reason"), str(2, "message"), str(3, "field")}};
  Message status_details{{str(1, "name"), str(2, "group"), str(3, "kind"), msg(4, "causes", status_cause, true),
                          num(5, "retryAfterSeconds"), str(6, "uid")}};
  Message status{
      {str(2, "status"), str(3, "message"), str(4, "reason"), msg(5, "details", status_details), num(6, "code")}};

  struct Kind {
    const char* api_version;
    const char* kind;
    const Message* message;
  };
  // Every kind whose protobuf body is decoded (one message serves Role and ClusterRole: Role has
  // no field 3, ClusterRole's aggregationRule).
  std::vector<Kind> kinds{{"v1", "Pod", &pod},
                          {"v1", "Service", &service},
                          {"v1", "ConfigMap", &config_map},
                          {"v1", "Secret", &secret},
                          {"v1", "Namespace", &namespace_},
                          {"v1", "ResourceQuota", &resource_quota},
                          {"v1", "ServiceAccount", &service_account},
                          {"v1", "LimitRange", &limit_range},
                          {"apps/v1", "Deployment", &deployment},
                          {"batch/v1", "Job", &job},
                          {"batch/v1", "CronJob", &cronjob},
                          {"scheduling.k8s.io/v1", "PriorityClass", &priority_class},
                          {"policy/v1", "PodDisruptionBudget", &pdb},
                          {"networking.k8s.io/v1", "Ingress", &ingress},
                          {"rbac.authorization.k8s.io/v1", "Role", &role},
                          {"rbac.authorization.k8s.io/v1", "ClusterRole", &role},
                          {"rbac.authorization.k8s.io/v1", "RoleBinding", &role_binding},
                          {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &role_binding},
                          {"authorization.k8s.io/v1", "SelfSubjectAccessReview", &ssar},
                          {"authorization.k8s.io/v1", "SubjectAccessReview", &ssar},
                          {"authorization.k8s.io/v1", "SelfSubjectRulesReview", &rules_review},
                          {"authentication.k8s.io/v1", "SelfSubjectReview", &self_subject_review},
                          {"authentication.k8s.io/v1", "TokenRequest", &token_request}};

  const Message* kind(std::string_view api_version, std::string_view kind) const {
    for (const auto& k : kinds)
      if (api_version == k.api_version && kind == k.kind) return k.message;
    return nullptr;
  }
  std::string kind_list() const {
    std::string out;
    for (const auto& k : kinds) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", k.api_version, k.kind);
    return out;
  }
};

const Schema& schema() {
  static const Schema s;
  return s;
}

// ---- wire format -------------------------------------------------------------------------------

[[noreturn]] void malformed(const char* what) { throw DecodeError(what); }

struct Reader {
  std::string_view in;
  /// The next varint; false, with nothing consumed, when `in` ends inside it (the rest of a
  /// streamed body has not arrived).
  bool try_varint(std::uint64_t& v) {
    v = 0;
    for (std::size_t at = 0; at < 10; ++at) {
      if (at >= in.size()) return false;
      const auto b = static_cast<unsigned char>(in[at]);
      v |= static_cast<std::uint64_t>(b & 0x7f) << (7 * at);
      if (!(b & 0x80)) {
        in.remove_prefix(at + 1);
        return true;
      }
    }
    malformed("varint too long");
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    if (!try_varint(v)) malformed("truncated varint");
    return v;
  }
  std::string_view bytes() {
    const auto n = varint();
    if (n > in.size()) malformed("truncated field");
    auto out = in.substr(0, n);
    in.remove_prefix(n);
    return out;
  }
  void skip(int wire) {
    switch (wire) {
      case 0:
        varint();
        return;
      case 1:
        if (in.size() < 8) malformed("truncated fixed64");
        in.remove_prefix(8);
        return;
      case 2:
        bytes();
        return;
      case 5:
        if (in.size() < 4) malformed("truncated fixed32");
        in.remove_prefix(4);
        return;
      default:
        malformed("unsupported wire type");
    }
  }
};

// Calls each(number, bytes) for the length-delimited fields of a message, skipping the others.
template <class F>
void each_bytes_field(std::string_view message, F&& each) {
  Reader r{message};
  while (!r.in.empty()) {
    const auto key = r.varint();
    const int number = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    if (wire == 2)
      each(number, r.bytes());
    else
      r.skip(wire);
  }
}

// The (key, value) of a map entry message {key = 1; value = 2} (also TypeMeta {apiVersion = 1; kind = 2}).
std::pair<std::string_view, std::string_view> map_entry(std::string_view entry) {
  std::string_view k, v;
  each_bytes_field(entry, [&](int number, std::string_view bytes) {
    if (number == 1)
      k = bytes;
    else if (number == 2)
      v = bytes;
  });
  return {k, v};
}

json::object decode(const Message& m, std::string_view bytes, const json::storage_ptr& sp);

// One field's value, or null when it is a zero a Go `omitempty` would drop. Every value is made
// in `sp`'s storage (a list item's arena, see for_each_item).
json::value value_of(const Field& f, Reader& r, int wire, const json::storage_ptr& sp) {
  switch (f.type) {
    case Type::String: {
      if (wire != 2) malformed("a string field is not length-delimited");
      const auto s = r.bytes();
      if (s.empty() && !f.repeated && !f.pointer) return json::value(nullptr, sp);
      return json::value(json::string_view(s.data(), s.size()), sp);
    }
    case Type::Bytes:
      return json::value(base64_encode(std::string(r.bytes())), sp);
    case Type::Int: {
      if (wire != 0) malformed("an integer field is not a varint");
      const auto v = static_cast<std::int64_t>(r.varint());  // int32 negatives are sign-extended
      if (v == 0 && !f.pointer) return json::value(nullptr, sp);
      return json::value(v, sp);
    }
    case Type::Bool: {
      if (wire != 0) malformed("a bool field is not a varint");
      const bool v = r.varint() != 0;
      if (!v && !f.pointer) return json::value(nullptr, sp);
      return json::value(v, sp);
    }
    case Type::Message: {
      json::object o = decode(*f.message, r.bytes(), sp);
      if (o.empty() && !f.repeated) return json::value(nullptr, sp);
      return json::value(std::move(o));
    }
    case Type::Quantity: {
      const auto q = map_entry(r.bytes()).first;
      return json::value(json::string_view(q.data(), q.size()), sp);
    }
    case Type::IntOrString: {
      // intstr.IntOrString {type = 1 (0 Int, 1 String); intVal = 2; strVal = 3}
      Reader m{r.bytes()};
      std::int64_t type = 0, int_val = 0;
      std::string_view str_val;
      while (!m.in.empty()) {
        const auto key = m.varint();
        const int number = static_cast<int>(key >> 3), w = static_cast<int>(key & 7);
        if (number == 1 && w == 0)
          type = static_cast<std::int64_t>(m.varint());
        else if (number == 2 && w == 0)
          int_val = static_cast<std::int32_t>(m.varint());
        else if (number == 3 && w == 2)
          str_val = m.bytes();
        else
          m.skip(w);
      }
      if (type == 1) return json::value(json::string_view(str_val.data(), str_val.size()), sp);
      if (int_val == 0) return json::value(nullptr, sp);
      return json::value(int_val, sp);
    }
    case Type::Time: {
      // meta/v1 Time {seconds = 1; nanos = 2}; the zero time is null.
      Reader m{r.bytes()};
      std::int64_t seconds = 0;
      while (!m.in.empty()) {
        const auto key = m.varint();
        if ((key >> 3) == 1 && (key & 7) == 0)
          seconds = static_cast<std::int64_t>(m.varint());
        else
          m.skip(static_cast<int>(key & 7));
      }
      if (seconds == 0) return json::value(nullptr, sp);
      return json::value(format_rfc3339(std::chrono::sys_seconds(std::chrono::seconds(seconds))), sp);
    }
    default:
      malformed("unexpected map field");
  }
}

json::object decode(const Message& m, std::string_view bytes, const json::storage_ptr& sp) {
  json::object out(sp);
  Reader r{bytes};
  while (!r.in.empty()) {
    const auto key = r.varint();
    const int number = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
    const Field* f = m.find(number);
    if (!f) {
      r.skip(wire);
      continue;
    }
    if (f->type == Type::MapStringString || f->type == Type::MapStringBytes || f->type == Type::MapStringQuantity) {
      if (wire != 2) malformed("a map entry is not length-delimited");
      const auto [k, v] = map_entry(r.bytes());
      auto& map = out[f->json];
      if (!map.is_object()) map = json::object(sp);
      const json::string_view key_text(k.data(), k.size());
      if (f->type == Type::MapStringString) {
        map.as_object()[key_text] = json::string_view(v.data(), v.size());
      } else if (f->type == Type::MapStringBytes) {
        map.as_object()[key_text] = base64_encode(std::string(v));
      } else {
        const auto q = map_entry(v).first;
        map.as_object()[key_text] = json::string_view(q.data(), q.size());
      }
      continue;
    }
    json::value v = value_of(*f, r, wire, sp);
    if (!*f->json) {  // inline: its fields are the enclosing object's
      if (v.is_object())
        for (auto& [k, member] : v.as_object()) out[k] = std::move(member);
      continue;
    }
    if (f->repeated) {
      auto& list = out[f->json];
      if (!list.is_array()) list = json::array(sp);
      list.as_array().push_back(std::move(v));
    } else if (!v.is_null()) {
      out[f->json] = std::move(v);
    }
  }
  return out;
}

/// The TypeMeta and raw message of a body: the magic "k8s\0" then a runtime.Unknown
/// (k8s.io/apimachinery/pkg/runtime generated.proto: typeMeta = 1 {apiVersion = 1, kind = 2},
/// raw = 2, contentEncoding = 3, contentType = 4).
struct Envelope {
  std::string api_version, kind;
  std::string_view raw;
};

Envelope envelope(std::string_view body) {
  if (!is_kubernetes_protobuf(body)) malformed("it does not start with the magic \"k8s\\0\"");
  Envelope e;
  std::string content_encoding;
  each_bytes_field(body.substr(4), [&](int number, std::string_view field) {
    if (number == 1) {
      const auto [av, k] = map_entry(field);  // TypeMeta {apiVersion = 1; kind = 2}
      e.api_version = av;
      e.kind = k;
    } else if (number == 2) {
      e.raw = field;
    } else if (number == 3) {
      content_encoding = field;  // runtime.Unknown's contentType (4) is always protobuf here
    }
  });
  if (!content_encoding.empty()) malformed("content encodings are not supported");
  return e;
}

}  // namespace

DecodeError DecodeError::unknown(std::string api_version, std::string kind) {
  DecodeError e("a kind not decoded here");
  e.api_version_ = std::move(api_version);
  e.kind_ = std::move(kind);
  e.unknown_kind_ = true;
  return e;
}

namespace {
constexpr std::string_view kMagic("k8s\0", 4);
}  // namespace

bool is_kubernetes_protobuf(std::string_view body) { return body.starts_with(kMagic); }

bool is_magic_prefix(std::string_view head) { return head.size() < kMagic.size() && kMagic.starts_with(head); }

std::string object_kinds() { return schema().kind_list(); }

json::object decode_object(std::string_view body) {
  const Envelope e = envelope(body);
  const Message* m = schema().kind(e.api_version, e.kind);
  if (!m) throw DecodeError::unknown(e.api_version, e.kind);
  json::object out = decode(*m, e.raw, {});
  json::object obj{{"apiVersion", e.api_version}, {"kind", e.kind}};
  for (auto& [k, v] : out) obj[k] = std::move(v);
  return obj;
}

json::object decode_delete_options(std::string_view body) {
  const Envelope e = envelope(body);
  if (e.kind != "DeleteOptions") throw DecodeError::unknown(e.api_version, e.kind);
  json::object obj{{"apiVersion", e.api_version}, {"kind", e.kind}};
  for (auto& [k, v] : decode(schema().delete_options, e.raw, {})) obj[k] = std::move(v);
  return obj;
}

json::object decode_status(std::string_view body) {
  const Envelope e = envelope(body);
  if (e.api_version != "v1" || e.kind != "Status") throw DecodeError::unknown(e.api_version, e.kind);
  json::object obj{{"kind", "Status"}, {"apiVersion", "v1"}};
  for (auto& [k, v] : decode(schema().status, e.raw, {})) obj[k] = std::move(v);
  return obj;
}

namespace {

// ListMeta {selfLink = 1; resourceVersion = 2; continue = 3; remainingItemCount = 4}.
ListMeta read_list_meta(std::string_view bytes) {
  ListMeta meta;
  Reader m{bytes};
  while (!m.in.empty()) {
    const auto k = m.varint();
    const int n = static_cast<int>(k >> 3), w = static_cast<int>(k & 7);
    if (n == 2 && w == 2)
      meta.resource_version = m.bytes();
    else if (n == 3 && w == 2)
      meta.continue_token = m.bytes();
    else if (n == 4 && w == 0)
      meta.remaining_item_count = static_cast<std::int64_t>(m.varint());
    else
      m.skip(w);
  }
  return meta;
}

}  // namespace

ListMeta list_meta(std::string_view body) {
  ListMeta meta;
  each_bytes_field(envelope(body).raw, [&](int number, std::string_view bytes) {
    if (number == 1) meta = read_list_meta(bytes);
  });
  return meta;
}

namespace {
// The first block of an item's arena: a pod of the generated cluster decodes into ~3 KB.
constexpr std::size_t kItemArena = 4096;
}  // namespace

ListMeta for_each_item(std::string_view body, const std::function<void(json::object&& item)>& each, ItemFields fields) {
  ItemReader reader(each, fields);
  reader.feed(body);
  return reader.finish();
}

namespace {

// A field's key, and its length for a length-delimited one, read from the start of `in` without
// its value: `head` bytes of key and length, then `size` bytes of value. False when `in` ends
// first (the rest of the field has not arrived).
struct FieldHead {
  int number = 0, wire = 0;
  std::size_t head = 0;
  std::uint64_t size = 0;
};
bool field_head(std::string_view in, FieldHead& f) {
  Reader r{in};
  std::uint64_t key = 0;
  if (!r.try_varint(key)) return false;
  f.number = static_cast<int>(key >> 3);
  f.wire = static_cast<int>(key & 7);
  switch (f.wire) {
    case 0: {
      std::uint64_t ignored = 0;
      if (!r.try_varint(ignored)) return false;
      f.size = 0;
      break;
    }
    case 1:
      f.size = 8;
      break;
    case 2:
      if (!r.try_varint(f.size)) return false;
      break;
    case 5:
      f.size = 4;
      break;
    default:
      malformed("unsupported wire type");
  }
  f.head = in.size() - r.in.size();
  return true;
}

}  // namespace

ItemReader::ItemReader(std::function<void(json::object&& item)> each, ItemFields fields)
    : each_(std::move(each)), fields_(fields) {}

void ItemReader::feed(std::string_view piece) {
  if (pending_.empty()) {  // most fields are read straight out of the piece, without a copy
    const std::size_t used = consume(piece);
    pending_.assign(piece.substr(used));
  } else {
    pending_.append(piece);
    const std::size_t used = consume(pending_);
    pending_.erase(0, used);
  }
}

ListMeta ItemReader::finish() {
  if (state_ == State::magic) {
    if (!is_kubernetes_protobuf(pending_)) malformed("it does not start with the magic \"k8s\\0\"");
  }
  if (state_ != State::envelope || !pending_.empty()) malformed("truncated field");
  if (!item_) throw DecodeError::unknown(api_version_, kind_);
  // Go's encoder always writes raw for a list (its ListMeta at least): a body without it was cut
  // after the TypeMeta.
  if (!seen_raw_) malformed("truncated body: the list itself (runtime.Unknown raw) is missing");
  return meta_;
}

// runtime.Unknown {typeMeta = 1 {apiVersion = 1; kind = 2}; raw = 2; contentEncoding = 3;
// contentType = 4}: raw is read as it arrives (list_field), the others whole.
void ItemReader::envelope_field(int number, std::string_view bytes) {
  if (number == 1) {
    const auto [av, k] = map_entry(bytes);
    api_version_ = av;
    kind_ = k;
    const Schema& sc = schema();
    const bool model = fields_ == ItemFields::model;
    item_ = api_version_ != "v1"  ? nullptr
            : kind_ == "PodList"  ? (model ? &sc.pod_model : &sc.pod)
            : kind_ == "NodeList" ? (model ? &sc.node_model : &sc.node)
                                  : nullptr;
  } else if (number == 3 && !bytes.empty()) {
    malformed("content encodings are not supported");  // runtime.Unknown's contentType is always protobuf here
  }
}

// PodList / NodeList {metadata = 1 (ListMeta); items = 2 (repeated)}.
void ItemReader::list_field(int number, std::string_view bytes) {
  if (number == 2) {
    // Each item in an arena of its own: one allocation or two where the tree took hundreds
    // (malloc and free were a third of a view's client CPU). The arena is shared by the item's
    // values, so an item kept by `each` keeps it alive.
    each_(decode(*static_cast<const Message*>(item_), bytes,
                 json::make_shared_resource<json::monotonic_resource>(kItemArena)));
  } else if (number == 1) {
    meta_ = read_list_meta(bytes);
  }
}

std::size_t ItemReader::consume(std::string_view in) {
  std::size_t pos = 0;
  for (;;) {
    const std::string_view rest = in.substr(pos);
    if (state_ == State::magic) {
      if (is_magic_prefix(rest)) return pos;
      if (!is_kubernetes_protobuf(rest)) malformed("it does not start with the magic \"k8s\\0\"");
      pos += kMagic.size();
      state_ = State::envelope;
      continue;
    }
    if (state_ == State::raw && raw_left_ == 0) {
      state_ = State::envelope;
      continue;
    }
    FieldHead f;
    if (rest.empty() || !field_head(rest, f)) return pos;
    if (state_ == State::envelope && f.number == 2 && f.wire == 2) {  // raw: the list, read as it comes
      if (!item_) throw DecodeError::unknown(api_version_, kind_);
      if (seen_raw_) malformed("two lists in one body");
      seen_raw_ = true;
      raw_left_ = f.size;
      state_ = State::raw;
      pos += f.head;
      continue;
    }
    if (state_ == State::raw && (f.head > raw_left_ || f.size > raw_left_ - f.head)) malformed("truncated field");
    if (rest.size() - f.head < f.size) return pos;  // the field's value has not all arrived
    const std::string_view value = rest.substr(f.head, static_cast<std::size_t>(f.size));
    if (f.wire == 2) {
      if (state_ == State::raw)
        list_field(f.number, value);
      else
        envelope_field(f.number, value);
    }
    pos += f.head + static_cast<std::size_t>(f.size);
    if (state_ == State::raw) raw_left_ -= f.head + f.size;
  }
}

}  // namespace gpupool::protobuf
