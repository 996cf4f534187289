// embedded/volumes.hpp — PersistentVolumeClaims bind, as the PV controller, an external
// provisioner and the DefaultStorageClass admission plugin make them bind on a real cluster.
//
//  - Admission (plugin/pkg/admission/storage/storageclass/setdefault): a claim created without
//    spec.storageClassName gets the default StorageClass (annotation
//    storageclass.kubernetes.io/is-default-class: "true"; the newest when several are).
//  - Binding (pkg/controller/volume/persistentvolume/pv_controller.go syncUnboundClaim): a pending
//    claim first binds an Available PersistentVolume of its class that is large enough and offers
//    its access modes (the smallest such); else, with a class whose volumeBindingMode is Immediate,
//    the class's provisioner creates PV "pvc-<claim uid>" (capacity = the request, reclaim policy of
//    the class) and the two are bound: PV spec.claimRef + status.phase Bound, claim spec.volumeName,
//    the pv.kubernetes.io/bind-completed and bound-by-controller annotations, status.phase Bound
//    with capacity and accessModes. WaitForFirstConsumer classes provision once a pod using the
//    claim is bound to a node (annotation volume.kubernetes.io/selected-node). Failures are
//    events on the claim, worded as the controller words them: ProvisioningFailed
//    `storageclass.storage.k8s.io "x" not found`, FailedBinding `no persistent volumes available
//    for this claim and no storage class is set`, WaitForFirstConsumer. A deleted claim's volume is
//    deleted (reclaim policy Delete) or Released (Retain).
//  - Protection (StorageObjectInUseProtection admission, the PVC and PV protection controllers):
//    claims get kubernetes.io/pvc-protection and volumes kubernetes.io/pv-protection when created;
//    a deleted claim stays (deletionTimestamp set) while a scheduled pod names it, a deleted
//    volume while it is Bound.
//
// The scheduler asks resolve_claims() what it knows of a pod's claims; the VolumeBinding plugin judges.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>

#include "embedded/clock.hpp"
#include "gpupool/scheduling.hpp"

namespace gpupool::embedded {

class Store;
struct WatchEvent;
namespace json = boost::json;

/// Sets the status of each claim (of a pod in namespace `ns`) from the store, for the
/// VolumeBinding plugin (model/plugins/volume_binding.cpp), which decides what they mean.
void resolve_claims(const Store& store, const std::string& ns, std::vector<PodClaim>& claims);

/// The provisioner name of the StorageClasses the embedded cluster creates.
inline constexpr const char* kEmbeddedProvisioner = "gpupool.io/embedded-provisioner";

class VolumeController {
 public:
  /// Installs the DefaultStorageClass admission plugin and starts binding.
  VolumeController(Store& store, const Clock& clock);
  ~VolumeController();
  VolumeController(const VolumeController&) = delete;
  VolumeController& operator=(const VolumeController&) = delete;

  /// Tries every pending claim again.
  void resync();

 private:
  void on_event(const WatchEvent& e);
  void released(const json::object& claim);
  void protect_claim(const std::string& ns, const std::string& name);
  void protect_volume(const std::string& name);
  void sync_claim(const std::string& ns, const std::string& name, const std::string& selected_node = {});
  Store& store_;
  const Clock& clock_;
  std::uint64_t subscription_ = 0;
};

}  // namespace gpupool::embedded
