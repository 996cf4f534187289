// The state behind a Cluster (detail::ClusterImpl) and helpers shared by the facade's source files.
#pragma once

#include "cluster/resources.hpp"
#include "common/ascii.hpp"
#include "gpupool/client.hpp"
#include "gpupool/cluster.hpp"

#include <boost/json/object.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace gpupool {

struct detail::ClusterImpl {
  std::unique_ptr<Client> client;
  Profile profile;
  std::string ns;                    ///< the namespace this connection works in
  std::string kubeconfig_namespace;  ///< the context's namespace (for Forbidden hints)
  Logger logger;                     ///< ConnectOptions::logger (warnings for the caller)
  mutable std::mutex mu;
  mutable std::optional<MpiJobApi> mpi;        ///< discovered MPIJob version
  mutable std::map<std::string, bool> served;  ///< "group/version/resource" -> served

  /// Whether the server serves the resource (built-in groups always; others by discovery, cached).
  bool serves(const ResourceRef& ref) const;
  /// Forgets what serves() learnt (a request met the NotFound of a type discovery said exists).
  void forget_served() const;
};

namespace detail {

using ascii::lower;
/// Refuses (409 AlreadyExists, naming the kind that holds it) a job name that a workload of any
/// kind already has in the connection's namespace: gpupool's commands find jobs by name alone.
/// `also`: other reads sent in the same round trip (their answers in `also_found`, in order).
void refuse_taken_name(const detail::ClusterImpl& impl, const std::string& name, std::vector<Client::Read> also = {},
                       std::vector<Client::ReadResult>* also_found = nullptr);
/// -i POD of logs/exec/port-forward: throws gpupool::Error unless `pod` is one of the job's instances.
void check_instance_of(const JobInfo& info, const std::string& pod);

}  // namespace detail
}  // namespace gpupool
