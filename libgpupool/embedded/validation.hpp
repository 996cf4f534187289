// embedded/validation.hpp — the built-in resource types and the API server's defaulting and
// validation of the objects gpupool writes (apis/core/validation, apps/validation, batch/validation).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "embedded/store.hpp"

namespace gpupool::embedded {

/// Every type the embedded server serves from the start (core/v1, apps/v1, batch/v1, events,
/// apiextensions CRDs, kubeflow.org with the given MPIJob version).
std::vector<ResourceType> builtin_types(const std::string& mpijob_version);

/// What Store runs for every write before the mutating admission plugins: scheme defaults (as a
/// body is decoded), the fieldmanager, the strategies' PrepareForCreate and the REST layer's
/// allocations.
void builtin_defaults(AdmissionRequest& r);

/// What Store runs after the mutating admission plugins and before the validating ones (the
/// strategies' Validate in rest.BeforeCreate / BeforeUpdate, then their warnings): throws
/// StatusError 422 Invalid with causes.
void builtin_validation(AdmissionRequest& r);

/// Whose pod spec is validated: a new Pod's (with ValidatePodCreate's rules), an updated Pod's
/// (validatePodMetadataAndSpec's, as ValidatePodUpdate runs them) or a workload template's
/// (ValidatePodTemplateSpec's).
enum class PodSpecOf { NewPod, UpdatedPod, Template };

/// ValidatePodSpecificAnnotations on `meta` (the pod's or template's metadata, if any), then
/// ValidatePodSpec (pkg/apis/core/validation) on a defaulted pod spec, appending their causes in
/// Kubernetes' order; `prefix` is the spec's path ("spec." or "spec.template.spec.").
/// (embedded/validation_pod.cpp)
void validate_pod_spec(const boost::json::object& spec, const boost::json::object* meta, const std::string& prefix,
                       PodSpecOf of, std::vector<StatusCause>& causes);

/// core/validation's ValidateObjectMeta with NameIsDNSSubdomain of an events.k8s.io/v1 Event's
/// metadata on create (its strict rules): generateName, name, then the rest.
void event_v1_meta_causes(const boost::json::object& md, std::vector<StatusCause>& causes);

/// ValidateEndpoints past the metadata: validateEndpointSubsets' addresses and ports.
/// (embedded/validation_service.cpp)
void endpoint_subsets_causes(const boost::json::object& endpoints, std::vector<StatusCause>& causes);

/// discovery/validation ValidateEndpointSlice past the metadata: the address type, endpoints
/// and ports. (embedded/validation_service.cpp)
void endpoint_slice_causes(const boost::json::object& slice, std::vector<StatusCause>& causes);

/// ValidatePersistentVolumeClaimSpec's and ValidatePersistentVolumeSpec's access mode rules at
/// `field`: each a supported mode, ReadWriteOncePod alone. (embedded/validation_pod.cpp)
void access_mode_causes(const boost::json::array* modes, const std::string& field, std::vector<StatusCause>& causes);

/// ValidatePersistentVolumeSpec (not an inline volume's) on a PersistentVolume `pv_name`'s spec:
/// access modes, capacity, reclaim policy, node affinity, exactly one source with its rules,
/// class name and volume mode. (embedded/validation_pod.cpp)
void validate_persistent_volume_spec(const boost::json::object& spec, const std::string& pv_name,
                                     std::vector<StatusCause>& causes);

/// ValidateRuntimeClass's rules after the metadata (pkg/apis/node/validation): the handler a DNS
/// label, the overhead as container limits, the scheduling node selector and tolerations.
/// (embedded/validation_pod.cpp)
void validate_runtime_class(const boost::json::object& runtime_class, std::vector<StatusCause>& causes);

/// ValidatePodSpecificAnnotations on a pod template's annotations `ann` (at
/// spec.template.annotations) alone, as ValidatePodTemplateSpecForStatefulSet runs it without
/// ValidatePodSpec. (embedded/validation_pod.cpp)
void validate_template_annotations(const boost::json::object& ann, const boost::json::object& spec,
                                   std::vector<StatusCause>& causes);

/// ValidatePodSpecificAnnotationUpdates: AppArmor and mirror pod annotations are neither added,
/// removed nor changed by an update, then the pod's annotations are validated again.
void validate_pod_annotation_updates(const boost::json::object& meta, const boost::json::object& old_meta,
                                     const boost::json::object& spec, std::vector<StatusCause>& causes);

/// ValidatePodUpdate's own rules (after the updated pod's values are validated): containers are
/// neither added nor removed and keep an image, activeDeadlineSeconds only shrinks, tolerations
/// are only added, scheduling gates only removed, and nothing else of the spec changes.
void validate_pod_update(const boost::json::object& spec, const boost::json::object& old_spec,
                         std::vector<StatusCause>& causes);

/// A pod spec's QoS class (pkg/apis/core/helper/qos GetPodQOS): BestEffort when no container
/// requests or limits cpu or memory, Guaranteed when every container limits both and requests
/// what it limits, Burstable otherwise. (embedded/validation.cpp)
std::string pod_qos_class(const boost::json::object& spec);

/// ValidatePodStatusUpdate's own rules (pods/status, after the metadata): custom condition types
/// (at `metadata.conditions[i].Type`, as Go words it), the nominated node's name, the QoS class
/// immutable, terminated containers staying terminated, podIPs and hostIPs.
void validate_pod_status_update(const boost::json::object& pod, const boost::json::object& old,
                                std::vector<StatusCause>& causes);

/// ValidatePodEphemeralContainersUpdate's own rules (pods/ephemeralcontainers, after the pod's
/// spec and annotations are validated): a static (mirror) pod takes none, and every existing
/// ephemeral container stays as it is.
void validate_ephemeral_containers_update(const boost::json::object& old_meta, const boost::json::object& spec,
                                          const boost::json::object& old_spec, std::vector<StatusCause>& causes);

/// apiequality.Semantic.DeepEqual of two objects in their stored form (schema::to_stored_form):
/// null, [] and an absent member are one nil; {} is not (a pointer to an empty struct).
/// (embedded/immutable.cpp)
bool semantic_equal(const boost::json::value& a, const boost::json::value& b);
/// Two optional JSON values as Go's typed fields compare them: absent and null are one nil.
bool same_value(const boost::json::value* a, const boost::json::value* b);
/// field.Invalid's value of a pointer field: "null" when nil, a string quoted, else the value.
std::string go_pointer_value(const boost::json::value* v);

/// ValidateObjectMeta's label and annotation rules, under `at` ("metadata." or "spec.template.").
void validate_labels_and_annotations(const boost::json::object& meta, const std::string& at,
                                     std::vector<StatusCause>& causes);

/// ValidatePersistentVolumeClaimSpec's rules on `spec`, its fields named under `prefix` ("spec."),
/// for claims and ephemeral volumes' claim templates. (embedded/validation.cpp)
void pvc_spec_causes(const boost::json::object& spec, const std::string& prefix, std::vector<StatusCause>& causes,
                     bool allow_invalid_api_group = false);

/// unversionedvalidation.ValidateLabelSelector on `selector` at `field`; `allow_invalid_values`: its
/// AllowInvalidLabelValueInSelector option. (embedded/validation_pod.cpp)
void validate_label_selector(const boost::json::object& selector, const std::string& field,
                             std::vector<StatusCause>& causes, bool allow_invalid_values = false);

/// ValidateResourceQuantityValue on resource `name`'s quantity `value` at `field`: not negative, and
/// a whole number for the integer resources. (embedded/validation_pod.cpp)
void validate_resource_quantity_value(const std::string& name, const boost::json::value& value,
                                      const std::string& field, std::vector<StatusCause>& causes);

/// A field of an internal Go struct that encoding/json fills from an annotation's JSON: its JSON
/// name (matched case-insensitively), Go name and Go type ("string" kinds, or "int64").
struct GoField {
  const char* json;
  const char* go;
  const char* go_type;
};

/// encoding/json's Unmarshal of `text` into []core.<type> (the tolerations and taints
/// annotations): the first error as Go words it, or nullopt with `out` holding each element's
/// known fields under their JSON names. (embedded/validation_pod.cpp)
std::optional<std::string> go_decode_list(const std::string& text, std::string_view type,
                                          std::span<const GoField> fields, boost::json::array& out);

/// A Service as decoded (SetObjectDefaults_Service): session affinity None, type ClusterIP, each
/// port's protocol TCP and its zero targetPort the port, the traffic policies and a LoadBalancer's
/// allocateLoadBalancerNodePorts. (embedded/validation_service.cpp)
void default_service(boost::json::object& svc);

/// The service REST layer's allocations on create (beginCreate: normalizeClusterIPs, then
/// Allocators.allocateCreate on a single-stack IPv4 cluster): the IP family fields, a cluster IP,
/// node ports (a dry run's as its PortAllocationOperation picks them). Throws StatusError 422 with
/// the allocator's causes alone, as they come before validation.
void allocate_service(const ResourceType& t, boost::json::object& svc, bool dry_run);

/// The same on update (beginUpdate: patchAllocatedValues, normalizeClusterIPs, allocateUpdate), then
/// the strategy's PrepareForUpdate (dropTypeDependentFields); `old` is the stored service.
void update_service(const ResourceType& t, boost::json::object& svc, const boost::json::object& old, bool dry_run);

/// ValidateLoadBalancerStatus on `obj`'s status.loadBalancer.ingress (a Service's, `ip_mode`: with
/// its ipMode rules and only for type LoadBalancer) and ValidateIngressLoadBalancerStatus (an
/// Ingress's, without). (embedded/validation_service.cpp)
void load_balancer_ingress_causes(const boost::json::object& obj, bool ip_mode, std::vector<StatusCause>& causes);

/// ValidateServiceUpdate's own rules, before ValidateService's: the cluster IPs and IP families
/// neither changed nor released unless single-stack, a LoadBalancer's class kept, its health check
/// node port too.
void validate_service_update(const boost::json::object& svc, const boost::json::object& old,
                             std::vector<StatusCause>& causes);

/// ValidateService's rules after ValidateObjectMeta (pkg/apis/core/validation), appending their
/// causes in Kubernetes' order.
void validate_service(const boost::json::object& svc, std::vector<StatusCause>& causes);

/// GetWarningsForService's warnings but the addresses' (deprecated topology annotation, ignored
/// externalIPs / externalName).
std::vector<std::string> service_warnings(const boost::json::object& svc);

/// The pod strategy's applyAppArmorVersionSkew on a new pod: AppArmor annotations and profile
/// fields made to agree, a deprecation warning appended for each annotation without a field.
void apparmor_version_skew(boost::json::object& pod, std::vector<std::string>* warnings);

/// ValidateScale: the replicas of an autoscaling/v1 Scale written to a scale subresource. Throws
/// StatusError 422 (`Scale.autoscaling "<name>" is invalid: spec.replicas: ...`).
void validate_scale(std::string_view name, const boost::json::value& replicas);

}  // namespace gpupool::embedded
