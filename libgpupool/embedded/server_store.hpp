// The object store behind an EmbeddedServer's HTTP API, for in-process callers inside the library
// and its tests (the public header keeps the store's type private).
#pragma once

#include "embedded/store.hpp"
#include "gpupool/embedded.hpp"

namespace gpupool {

struct EmbeddedServerAccess {
  /// The store, once the controllers have reacted to every write the server has answered
  /// (Store::settle): an in-process reader sees what an HTTP request made now would see.
  static embedded::Store& store(EmbeddedServer& server);
};

/// Where a cluster whose state is `state_file` keeps its CA (certificate and key, 0600), so that
/// kube-root-ca.crt and the kubeconfigs of earlier runs stay true: in the state's private
/// directory of keys, created 0700 when missing (state.cpp).
std::string embedded_ca_file(const std::string& state_file);

namespace embedded {
inline Store& store_of(EmbeddedServer& server) { return EmbeddedServerAccess::store(server); }
}  // namespace embedded

}  // namespace gpupool
