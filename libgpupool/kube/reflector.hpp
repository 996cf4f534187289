// kube/reflector.hpp — one watch kept alive, as client-go's tools/cache Reflector does
// (staging/src/k8s.io/client-go/tools/cache/reflector.go, ListAndWatch): list when there is no
// resourceVersion to start from, watch from the list's version, resume from the last version seen
// (bookmarks included) when a connection closes or fails, back off while connections keep failing
// or closing empty, and re-list when the server answers 410 Gone (Expired), handing the handler
// the difference against the objects it already knows as ADDED/MODIFIED/DELETED (the "store" of
// the Reflector: the last object delivered per namespace/name). Private to the kube layer;
// Client::watch is its public face.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <string>

#include "gpupool/client.hpp"

namespace gpupool::kube {

struct ClientCore;

class Reflector {
 public:
  /// Watches `ref` in `ns` with `client`, handing events to `handler` until it returns false or
  /// `cancel` fires. The references must outlive the Reflector.
  Reflector(const ClientCore& client, const ResourceRef& ref, const std::string& ns, const WatchOptions& options,
            const WatchHandler& handler, const CancelToken& cancel);

  /// Runs until the handler stops or `cancel` fires; returns the last resourceVersion seen.
  std::string list_and_watch();

 private:
  /// Hands `ev` to the handler after updating the known objects; false once the handler stopped.
  bool deliver(const WatchEvent& ev);
  /// (Re-)list: delivers what changed since the objects known, then resumes from the list's version.
  void relist();
  /// relist(), false when `cancel` ended it.
  bool relist_unless_cancelled();

  const ClientCore& client_;
  const ResourceRef& ref_;
  const std::string& ns_;
  const WatchOptions& options_;
  const WatchHandler& handler_;
  const CancelToken& cancel_;
  std::string rv_;
  std::map<std::string, boost::json::object> known_;  // namespace/name -> last object delivered
  bool stop_ = false;
};

}  // namespace gpupool::kube
