// embedded/streams.hpp — pods/exec, pods/attach and pods/portforward (connect subresources).
//
// The checks and answers are the API server's (pkg/registry/core/pod/strategy.go: ExecLocation,
// AttachLocation, PortForwardLocation, streamLocation, validateContainer). What would happen at
// the kubelet happens in a gpupool::StreamHandler when one is installed: exec over WebSocket
// (v5.channel.k8s.io / v4.channel.k8s.io), port-forward over SPDY/3.1 tunnelled in a WebSocket
// (SPDY/3.1+portforward.k8s.io) or over a plain SPDY/3.1 upgrade. Without a handler the answers
// are those of an API server that cannot reach its kubelets.
#pragma once

#include <memory>
#include <string>

#include "embedded/api.hpp"
#include "gpupool/embedded.hpp"

namespace gpupool::embedded {

class Streams {
 public:
  Streams(Store& store, std::shared_ptr<StreamHandler> handler, bool websockets)
      : store_(store), handler_(std::move(handler)), websockets_(websockets) {}
  /// For Api::set_connect_handler. Throws StatusError for the refusals before an upgrade.
  Response connect(const Request& r, const std::string& ns, const std::string& name,
                   const std::string& subresource) const;

 private:
  Store& store_;
  std::shared_ptr<StreamHandler> handler_;
  bool websockets_;
};

}  // namespace gpupool::embedded
