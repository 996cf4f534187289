// kube/streams.hpp — the client side of pods/exec and pods/portforward (private to the kube
// layer; Client::exec and Client::port_forward call it).
#pragma once

#include <memory>
#include <string>

#include "gpupool/client.hpp"
#include "kube/credentials.hpp"

namespace gpupool::kube {

struct StreamContext {
  const KubeConfig& config;
  CredentialSource& credentials;
  std::string user_agent;
  std::chrono::milliseconds connect_timeout{10'000};
};

/// `path` is the pod's URL path (/api/v1/namespaces/NS/pods/NAME).
int exec_in_pod(const StreamContext& ctx, const std::string& path, const ExecOptions& options, const ExecIO& io,
                const CancelToken& cancel);
std::unique_ptr<PortForward> forward_ports(const StreamContext& ctx, const std::string& path,
                                           std::vector<PortForward::Port> ports, PortForwardErrorHandler on_error);

}  // namespace gpupool::kube
