// embedded/events.hpp — events.k8s.io/v1 is another view of the core/v1 Events, not a second store
// (the API server keeps one `events` resource and converts; pkg/apis/events/v1/conversion.go):
//
//   core/v1 Event          events.k8s.io/v1 Event
//   involvedObject    <->  regarding
//   message           <->  note
//   source            <->  deprecatedSource
//   firstTimestamp    <->  deprecatedFirstTimestamp
//   lastTimestamp     <->  deprecatedLastTimestamp
//   count             <->  deprecatedCount
//   reportingComponent<->  reportingController
//   eventTime, series, reason, action, related, type, reportingInstance, metadata: the same.
#pragma once

#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "gpupool/error.hpp"  // StatusCause

namespace gpupool::embedded {

namespace json = boost::json;
struct ResourceType;

/// A stored core/v1 Event as events.k8s.io/v1 serves it.
json::object core_event_to_v1(const json::object& core);
/// An events.k8s.io/v1 Event as it is stored (core/v1).
json::object v1_event_to_core(const json::object& v1);
/// ValidateEventCreate for an event created in namespace `ns`, given as events.k8s.io/v1 shows it
/// (a core/v1 body through core_event_to_v1): the legacy rules (the regarding object's namespace,
/// the reporting controller a qualified name, the required reporting fields and their lengths),
/// then, `strict` (a create through events.k8s.io/v1), the strict ones (series, eventTime, type
/// Normal|Warning, no deprecated fields). Throws StatusError 422 Invalid naming the fields as the
/// request's version names them.
void validate_event_create(const ResourceType& t, const json::object& v1, std::string_view ns, bool strict);
/// ValidateEventUpdate's legacy part, the rules above without the strict ones: what a PUT or PATCH
/// of an event of either version must pass (`strict` names the reporting field as events.k8s.io/v1
/// does); the update's WriteOptions::strategy_causes, after validateCommonFields'. events.k8s.io/v1's
/// immutable fields are not checked (FIDELITY.md difference 36).
std::vector<StatusCause> event_update_causes(const json::object& v1, std::string_view ns, bool strict);

}  // namespace gpupool::embedded
