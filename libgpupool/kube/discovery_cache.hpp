// kube/discovery_cache.hpp — discovery documents kept between processes, as kubectl keeps them in
// ~/.kube/cache/discovery (client-go discovery/cached/disk/cached_discovery.go, v1.32):
// - one directory per server (cli-runtime genericclioptions/config_flags.go computeDiscoverCacheDir:
//   the URL without its scheme, every character outside [A-Za-z0-9.] replaced by '_');
// - a file is used while it is younger than the TTL (kubectl: 6 hours, config_flags.go
//   toDiscoveryClient), judged by its modification time (getCachedFile);
// - Invalidate() makes every file not written by this process unusable, and Fresh() tells whether
//   everything used so far was written by this process: kubectl's REST mapper
//   (restmapper/discovery.go DeferredDiscoveryRESTMapper) invalidates and looks again when a lookup
//   misses and the cache was not fresh. Client does the same, and also invalidates when the server
//   answers 404 "the server could not find the requested resource" (a type the cache said exists).
// Writes are atomic (a temporary file renamed over the old one) so concurrent commands never read
// half a file; a file that cannot be read or parsed is a miss, never an error.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace gpupool::kube {

class DiscoveryCache {
 public:
  /// The default TTL: kubectl's (cli-runtime config_flags.go: `time.Duration(6*time.Hour)`).
  static constexpr std::chrono::hours kDefaultTtl{6};

  /// `root`/discovery/<server, made a file name>; `server` is the kubeconfig's URL.
  DiscoveryCache(const std::string& root, const std::string& server, std::chrono::seconds ttl = kDefaultTtl);

  /// The directory of this server's files.
  const std::string& directory() const { return dir_; }
  /// The text of `name` (a relative path such as "servergroups.json" or "apps/v1/serverresources.json")
  /// when present, younger than the TTL and not invalidated; nullopt otherwise.
  std::optional<std::string> read(const std::string& name);
  /// Stores `body` as `name` (best effort: a cache that cannot be written is no cache).
  void write(const std::string& name, std::string_view body);
  /// cached_discovery.go Invalidate(): files not written by this process are no longer used.
  void invalidate();
  /// cached_discovery.go Fresh(): every file used so far was written by this process.
  bool fresh() const;

  /// The directory name kubectl would use for `server` (computeDiscoverCacheDir).
  static std::string server_directory_name(const std::string& server);

 private:
  std::string dir_;
  std::chrono::seconds ttl_;
  mutable std::mutex mu_;
  std::set<std::string> ours_;
  bool invalidated_ = false;
  bool fresh_ = true;
};

}  // namespace gpupool::kube
