// Size limits of the Kubernetes API, one home for the client's checks and the embedded server.
#pragma once

#include <cstddef>

namespace gpupool::limits {

/// kube-apiserver refuses a request body larger than this with 413
/// (k8s.io/apiserver/pkg/server/config.go: MaxRequestBodyBytes = 3 MiB).
inline constexpr std::size_t kMaxRequestBodyBytes = 3 * 1024 * 1024;

/// etcd refuses to store a larger object ("etcdserver: request is too large", passed on by
/// kube-apiserver as a 500): etcd's --max-request-bytes default, 1.5 MiB. Measured here on the
/// object's JSON (etcd sees the protobuf encoding, a little shorter).
inline constexpr std::size_t kMaxStoredObjectBytes = 1536 * 1024;

/// kube-apiserver's etcd client refuses to send a request larger than this (the gRPC
/// MaxCallSendMsgSize it configures, 2 MiB): `rpc error: code = ResourceExhausted desc = trying to
/// send message larger than max (N vs. 2097152)`, before etcd sees it.
inline constexpr std::size_t kEtcdClientMaxSendBytes = 2 * 1024 * 1024;

/// Go's encoding/json nests up to this many levels (scanner.go maxNestingDepth); a CRD's schema
/// goes far deeper than Boost.JSON's default of 32, so every JSON read of API objects uses it.
inline constexpr std::size_t kMaxJsonDepth = 10000;

}  // namespace gpupool::limits
