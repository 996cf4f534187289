// The API server's warnings on pods and pod templates (see warnings.cpp).
#pragma once

#include <boost/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gpupool::embedded {

/// The warnings kube-apiserver v1.32 returns for a pod (at = "") or a workload's pod template
/// (at = "spec.template."): deprecated node labels, annotations and volume plugins, duplicate
/// image pull secrets, env names and ports, fractional byte quantities, a negative
/// grace period. Each is "<field path>: <what>", as kubectl prints after "Warning: ".
/// GetWarningsForPersistentVolumeClaim: the deprecated beta storage-class annotation and a
/// fractional byte count of spec.resources' storage request or limit (on create and update).
std::vector<std::string> claim_warnings(const boost::json::object& claim);
/// GetWarningsForPersistentVolumeClaimSpec on a claim spec whose fields are named under `at`
/// ("spec." for a claim's, "spec.volumeClaimTemplates[0]." for a StatefulSet's template).
std::vector<std::string> claim_spec_warnings(const boost::json::object& spec, std::string_view at);
std::vector<std::string> pod_warnings(const boost::json::object& meta, const boost::json::object& spec,
                                      std::string_view at);
/// GetWarningsForRuntimeClass (pkg/api/node/util.go): each deprecated node label among
/// scheduling.nodeSelector's keys, on create and update (Go ranges over a map: the embedded server
/// warns in the object's key order).
std::vector<std::string> runtime_class_warnings(const boost::json::object& runtime_class);
/// GetWarningsForPersistentVolume: the deprecated beta annotations, the Recycle reclaim policy,
/// deprecated node labels in the node affinity, deprecated volume plugins (create and update).
std::vector<std::string> pv_warnings(const boost::json::object& pv);

}  // namespace gpupool::embedded
