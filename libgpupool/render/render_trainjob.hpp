// render/render_trainjob.hpp — the TrainJob (Kubeflow Trainer v2) and JobSet kinds, built from the
// pod template render.cpp makes for every kind (private to the render layer).
#pragma once

#include <boost/json/object.hpp>

#include "gpupool/workload.hpp"

namespace gpupool::detail {

/// A trainer.kubeflow.org/v1alpha1 TrainJob: runtimeRef (w.runtime, default the
/// ClusterTrainingRuntime torch-distributed), trainer {image, command, env, numNodes,
/// resourcesPerNode} from the template's one container, and the rest of the template (labels,
/// annotations, volumes and mounts, tolerations, nodeSelector, affinity, imagePullSecrets) as a
/// runtimePatch of the replicatedJob "node". Throws ValidationError for a template field a
/// runtimePatch cannot carry (schedulerName, hostNetwork, priorityClassName, init containers...).
boost::json::object render_trainjob(const Workload& w, boost::json::object metadata,
                                    const boost::json::object& pod_template);

/// A jobset.x-k8s.io/v1alpha2 JobSet: one replicatedJob "node" (replicas 1) whose Job runs
/// w.replicas.workers Indexed pods from `pod_template`; backoffLimit on the Job,
/// ttlSecondsAfterFinished on the JobSet.
boost::json::object render_jobset(const Workload& w, boost::json::object metadata, boost::json::object pod_template);

}  // namespace gpupool::detail
