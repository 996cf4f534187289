// embedded/endpoints.hpp — the endpoints controller (kube-controller-manager's
// pkg/controller/endpoint): every Service with a selector has an Endpoints object of its name,
// labelled as the Service, holding the selected pods' addresses — ready ones under `addresses`,
// the others under `notReadyAddresses` — with the Service's target ports resolved per pod, and
// the annotation endpoints.kubernetes.io/last-change-trigger-time. `kubectl describe service`
// reads them, and the EndpointSlice controller's slice (discovery.k8s.io/v1), which it reads
// first. A deleted Service's slice goes with it (owner reference); its Endpoints are deleted here.
#pragma once

#include <cstdint>
#include <string>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "embedded/clock.hpp"

namespace gpupool::embedded {

class Store;
struct WatchEvent;

class EndpointsController {
 public:
  EndpointsController(Store& store, const Clock& clock);
  ~EndpointsController();
  EndpointsController(const EndpointsController&) = delete;
  EndpointsController& operator=(const EndpointsController&) = delete;

 private:
  void on_event(const WatchEvent& e);
  /// Brings the Endpoints of Service ns/name up to date; `trigger` is the change's time.
  void sync(const std::string& ns, const std::string& name, const std::string& trigger);
  void sync_slice(const boost::json::object& svc, boost::json::array endpoints, boost::json::array ports,
                  const boost::json::object& svc_labels, const std::string& trigger);
  Store& store_;
  const Clock& clock_;
  std::uint64_t subscription_ = 0;
};

}  // namespace gpupool::embedded
