// The quota pre-flight of Cluster::submit: see preflight.cpp.
#pragma once

#include "gpupool/client.hpp"
#include "gpupool/logger.hpp"
#include "gpupool/render.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gpupool::detail {

/// Throws ApiError (403 Forbidden, one line naming the quota or LimitRange, the resource, used /
/// hard and what the job asks) when the namespace would refuse the submission's pods; returns
/// when they would be admitted. Creates nothing (dry-run requests and reads only).
void preflight(const Client& client, const Submission& submission, const std::string& ns);

/// The pods the pre-flight asks the server to admit (a dry-run create each): one per pod template
/// that makes pods, named by generateName.
struct PreflightPods {
  std::vector<boost::json::object> pods;
  std::vector<std::int64_t> counts;  ///< how many pods each one's template makes
  std::int64_t total = 0;            ///< every pod of the submission
};
PreflightPods preflight_pods(const Submission& submission, const std::string& ns);

/// Their dry-run creates as speculative Client::Reads, to be sent with other reads (they point
/// into `pods`, which must outlive them), and the namespace's quotas when there is more than one pod.
std::vector<Client::Read> preflight_reads(const PreflightPods& pods, const std::string& ns);

/// preflight() of `pods`; `admitted`: what read_each answered to preflight_reads(pods) (a dry run
/// that was not answered with the pod is sent again here, and its refusal worded).
void preflight(const Client& client, const PreflightPods& pods, const std::string& ns,
               const std::vector<Client::ReadResult>* admitted = nullptr);

/// A claim naming a StorageClass the cluster does not have is accepted by the API server and then
/// stays Pending forever: tell the caller (a warning naming the classes that exist). Silent when
/// the classes cannot be listed (a user without that permission).
void warn_unknown_storage_classes(const Client& client, const std::vector<boost::json::object>& objects,
                                  const Logger& logger);

}  // namespace gpupool::detail
