// The quota pre-flight of Cluster::submit: see preflight.cpp.
#pragma once

#include "gpupool/client.hpp"
#include "gpupool/logger.hpp"
#include "gpupool/render.hpp"

#include <string>

namespace gpupool::detail {

/// Throws ApiError (403 Forbidden, one line naming the quota or LimitRange, the resource, used /
/// hard and what the job asks) when the namespace would refuse the submission's pods; returns
/// when they would be admitted. Creates nothing (dry-run requests and reads only).
void preflight(const Client& client, const Submission& submission, const std::string& ns);

/// A claim naming a StorageClass the cluster does not have is accepted by the API server and then
/// stays Pending forever: tell the caller (a warning naming the classes that exist). Silent when
/// the classes cannot be listed (a user without that permission).
void warn_unknown_storage_classes(const Client& client, const std::vector<boost::json::object>& objects,
                                  const Logger& logger);

}  // namespace gpupool::detail
