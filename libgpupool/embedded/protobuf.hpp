// embedded/protobuf.hpp — request bodies in Kubernetes' protobuf encoding, as kubectl's typed
// clients send them (Content-Type application/vnd.kubernetes.protobuf: `kubectl create
// deployment`, `kubectl expose`, `kubectl run`, `kubectl create configmap|secret|namespace`).
//
// The body is the magic "k8s\0" then a runtime.Unknown (k8s.io/apimachinery/pkg/runtime
// generated.proto: typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3,
// contentType = 4) whose `raw` is the object's message. Decoded here into the JSON the API server
// would have received, for the kinds and fields those commands write, with the field numbers of
// k8s.io/api's generated.proto (core/v1, apps/v1) and apimachinery's meta/v1, intstr and
// resource. As Go's encoding/json with `omitempty` would, zero values of non-pointer fields are
// left out (so defaulting sees them as unset); pointer fields (replicas, ...) keep an explicit 0.
// Unknown fields are skipped, as the decoder of a newer client's message would.
#pragma once

#include <boost/json.hpp>
#include <string_view>

namespace gpupool::embedded {

/// True for a body starting with the magic "k8s\0".
bool is_kubernetes_protobuf(std::string_view body);

/// The object a protobuf body carries, as JSON (apiVersion and kind from its TypeMeta). Throws
/// StatusError 415 UnsupportedMediaType for kinds not decoded here, 400 for a malformed body.
boost::json::object decode_kubernetes_protobuf(std::string_view body);

}  // namespace gpupool::embedded
