// gpupool/render.hpp — Workload + Profile -> the Kubernetes objects of one submission.
//
// Objects come out as Boost.JSON objects in `kubectl apply` order: the PVCs to create, the
// ConfigMaps (labelled gpupool.io/component: config), the workload, then (tensorboard.enabled) a TensorBoard Deployment
// and its NodePort Service. Keys are in a fixed order (apiVersion, kind, metadata, spec, ...), quantities in canonical
// form. Every object carries the labels
//   app.kubernetes.io/managed-by: gpupool
//   gpupool.io/job-name: <workload name>
//   gpupool.io/kind: <mpijob|tfjob|pytorchjob|job|deployment|pod>
// and pods also gpupool.io/component: workload | tensorboard.
//
// What goes where: GPUs (the profile's resource name, with its env) go to the replicas that
// compute — every replica of Pod/Deployment/Job, MPIJob workers (not the launcher), TFJob workers
// and chief (not PS), PyTorchJob master and workers. The command runs in every replica except MPI
// workers (the operator keeps v1 workers alive; v2beta1 workers run sshd for the launcher).
// Serialize with manifest.hpp (to_yaml / to_json).
#pragma once

#include "gpupool/profile.hpp"
#include "gpupool/workload.hpp"

#include <boost/json/object.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

/// The label keys gpupool puts on what it creates.
inline constexpr std::string_view kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kJobNameLabel = "gpupool.io/job-name";
inline constexpr std::string_view kKindLabel = "gpupool.io/kind";
inline constexpr std::string_view kComponentLabel = "gpupool.io/component";

struct Submission {
  std::vector<boost::json::object> objects;  ///< in apply order
  /// The workload object (the first that is not a PVC or a ConfigMap).
  const boost::json::object& workload() const;
};

/// Validates the workload (workload.hpp validate()), applies the profile (image catalog, GPU
/// resource and env, scheduler, host networking, SSD / NFS / shm mounts, storage class aliases,
/// default namespace) and builds the objects. Throws ValidationError for a spec the profile cannot
/// satisfy (e.g. ssd=true on a profile without local SSDs).
Submission render(const Workload& workload, const Profile& profile);

/// Accepts exactly what render(workload, profile) accepts, throwing the same ValidationError:
/// validate(workload) and the checks that need the profile (catalog image, SSD / NFS shares, the
/// staging paths' mounts, volume names with the profile's mounts, object sizes).
void validate(const Workload& workload, const Profile& profile);

/// How kubectl names an object in its output: the kind in lower case, ".group" unless it is the
/// core group, then "/name" — "mpijob.kubeflow.org/mpi-dist", "service/mpi-dist-tensorboard".
std::string kubectl_name(std::string_view kind, std::string_view group, std::string_view name);
/// The same for an object, its group taken from apiVersion.
std::string kubectl_name(const boost::json::object& object);

/// Throws ValidationError (field: the object's kubectl name) when the object is larger than the
/// API server can store (etcd's 1.5 MiB request limit), naming its size and what to do, so that
/// nothing is sent; render() and Cluster::apply() check every object.
void check_object_size(const boost::json::object& object);

/// A standalone PersistentVolumeClaim (`gpupool pvc create`): the profile's storage class aliases
/// apply; labelled app.kubernetes.io/managed-by=gpupool. Empty ns: the profile's default namespace.
boost::json::object render_pvc(const PvcRequest& pvc, const Profile& profile, std::string_view ns);

}  // namespace gpupool
