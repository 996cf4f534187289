// embedded/table.hpp — server-side printing: the meta.k8s.io/v1 Table kubectl asks for with
// `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`. Columns follow kubernetes
// pkg/printers/internalversion/printers.go (nodes, pods, deployments, replicasets, jobs, PVCs,
// namespaces, services, events); anything else gets NAME and AGE like a CRD without
// additionalPrinterColumns. Columns with priority 1 are the ones `-o wide` adds.
#pragma once

#include "gpupool/time.hpp"

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "embedded/clock.hpp"
#include "embedded/store.hpp"

namespace gpupool::embedded {

enum class IncludeObject { None, Metadata, Object };

/// kubectl's AGE formatting: the model's HumanDuration (gpupool/time.hpp), one rule for all.
using gpupool::human_duration;

boost::json::object to_table(const ResourceType& t,
                             const std::vector<std::shared_ptr<const boost::json::object>>& items,
                             Clock::time_point now, IncludeObject include);

}  // namespace gpupool::embedded
