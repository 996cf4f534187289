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

namespace embedded {
inline Store& store_of(EmbeddedServer& server) { return EmbeddedServerAccess::store(server); }
}  // namespace embedded

}  // namespace gpupool
