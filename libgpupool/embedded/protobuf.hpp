// embedded/protobuf.hpp — request bodies in Kubernetes' protobuf encoding, as kubectl's typed
// clients send them (Content-Type application/vnd.kubernetes.protobuf: `kubectl create
// deployment`, `kubectl expose`, `kubectl run`, `kubectl create configmap|secret|namespace`).
// The decoding is model/kube_protobuf's; this gives its errors the API server's Status.
#pragma once

#include <boost/json.hpp>
#include <string_view>

namespace gpupool::embedded {

/// True for a body starting with the magic "k8s\0".
bool is_kubernetes_protobuf(std::string_view body);

/// The object a protobuf body carries, as JSON (apiVersion and kind from its TypeMeta). Throws
/// StatusError 415 UnsupportedMediaType for kinds not decoded here, 400 for a malformed body.
boost::json::object decode_kubernetes_protobuf(std::string_view body);

/// The same for a DELETE's body: a meta/v1 DeleteOptions in whatever group version.
boost::json::object decode_kubernetes_protobuf_delete_options(std::string_view body);

}  // namespace gpupool::embedded
