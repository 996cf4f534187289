// Test helpers: the pod spec and main container of a rendered workload object.
#pragma once

#include <doctest/doctest.h>

#include <boost/json/object.hpp>

#include <string_view>

namespace gpupool::testing {

/// The pod spec of a workload object: a Pod's spec, a template's spec, or a Kubeflow replica's.
inline const boost::json::object& pod_spec_of(const boost::json::object& workload, std::string_view replica = {}) {
  const boost::json::object& spec = workload.at("spec").as_object();
  if (workload.at("kind") == "Pod") return spec;
  if (spec.contains("template")) return spec.at("template").at("spec").as_object();
  for (const char* key : {"mpiReplicaSpecs", "tfReplicaSpecs", "pytorchReplicaSpecs"})
    if (spec.contains(key)) return spec.at(key).at(replica).at("template").at("spec").as_object();
  FAIL("no pod spec");
  throw 0;
}

/// The first (main) container of a pod spec.
inline const boost::json::object& container_of(const boost::json::object& pod_spec) {
  return pod_spec.at("containers").at(0).as_object();
}

}  // namespace gpupool::testing
