// embedded/api_handlers.hpp (private) — what Api::dispatch (api.cpp) hands the handler of each
// verb (api_read.cpp, api_watch.cpp, api_create.cpp, api_patch.cpp, api_delete.cpp), as the
// apiserver's endpoints/handlers each get a RequestScope, and the request helpers they share.
#pragma once

#include <boost/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/limits.hpp"
#include "embedded/api.hpp"
#include "embedded/apply.hpp"
#include "embedded/events.hpp"
#include "embedded/patch.hpp"
#include "embedded/scheduler.hpp"
#include "embedded/schema.hpp"
#include "embedded/selector.hpp"
#include "embedded/store.hpp"
#include "embedded/table.hpp"
#include "embedded/typecheck.hpp"
#include "embedded/validation.hpp"

namespace gpupool::embedded::api {

namespace json = boost::json;

/// What a resource path names: /api(s)/.../[namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]].
struct Target {
  const ResourceType* type = nullptr;
  std::string ns, name, subresource;
  bool watch = false;
};

/// One request on its way to a verb's handler.
struct Call {
  const Request& r;
  Target tg;
  /// events.k8s.io/v1 Events are the core/v1 Events seen through a conversion, one store for both
  /// (embedded/events.hpp): `t` is what is stored, `served` what the request names.
  const ResourceType& served;
  const ResourceType& t;
  bool event_view = false;
  std::chrono::system_clock::time_point now;
  std::string verb;   ///< get, list, watch, create, update, patch, delete, deletecollection
  WriteOptions wo{};  ///< writes: dryRun, fieldManager, user, warnings

  /// The object as the request's version shows it, and back.
  json::object as_served(const json::object& o) const;
  json::object as_stored(const json::object& o) const;
  /// `wo` recording the writer's managedFields after decoding and defaulting.
  /// The write options with `manager`'s field tracking, where the target (the main resource, its
  /// status) has it.
  WriteOptions tracking(std::string manager) const;
};

/// The apiserver's MaxRequestBodyBytes and etcd's request limit (common/limits.hpp).
using limits::kMaxRequestBodyBytes;
inline constexpr std::size_t kEtcdMaxRequestBytes = limits::kMaxStoredObjectBytes;

/// A query parameter, or `dflt`.
std::string q(const Request& r, const std::string& key, const std::string& dflt = "");
bool q_true(const Request& r, const std::string& key);
/// An int64 query parameter (nullopt when absent) as the parameter codec converts it
/// (runtime.Convert_Slice_string_To_int64: strconv.ParseInt): 400 `strconv.ParseInt: parsing
/// "abc": invalid syntax` when it does not parse.
std::optional<std::int64_t> q_int64(const Request& r, const std::string& key);
/// The list and watch options' rules (resourceVersion, resourceVersionMatch, limit, ...).
void validate_list_options(const Request& r, bool watch);
/// A kind's field selector, with the kind's field labels (400 for others).
FieldSelector field_selector(const ResourceType& t, std::string_view text);
Response json_response(int status, const json::value& v);
/// A request body: JSON, or YAML for apply patches; 400 as the apiserver words it.
json::value parse_body(const std::string& body, bool yaml = false);
json::object parse_object(const Request& r);
/// 500 `etcdserver: request is too large` above etcd's limit.
void check_stored_size(const json::object& obj);
std::string str(const json::object& o, std::string_view key);
std::string meta(const json::object& o, std::string_view key);
/// An updated or patched object's namespace and name against the URL's (400 otherwise):
/// rest.EnsureObjectNamespaceMatchesRequestNamespace (a Namespace's own expected namespace is "",
/// ExpectedNamespaceForResource), then handlers/rest.go checkName.
void check_name(const json::object& obj, const ResourceType& t, const std::string& url_ns, const std::string& url_name);
/// The body's namespace, when it has one, is the URL's (else 400), as the create handler checks it
/// before the strategy's validation.
void check_namespace(const json::object& obj, const ResourceType& t, const std::string& url_ns);
/// handlers/rest.go dedupOwnerReferencesAndAddWarning: an owner reference equal to an earlier one
/// with its uid is dropped, with a warning naming the duplicate uids (`after_mutating`: the
/// wording of the check after mutating admission, the only one a patch gets).
void dedup_owner_references(json::object& obj, std::vector<std::string>& warnings, bool after_mutating);
/// The kinds whose PUT of a missing object creates it (AllowCreateOnUpdate).
bool allows_create_on_update(const ResourceType& t);
WriteOptions write_options(const Request& r);
std::string list_kind(const ResourceType& t);
/// autoscaling/v1 Scale of an object with a scale subresource (a custom resource's from its CRD's
/// subresources.scale paths). `to_patch`: the Scale a patch is applied to, whose spec.replicas is
/// the smallest int32 when a custom resource has none (etcd.go's invalidSpecReplicas).
json::object scale_of(const ResourceType& t, const json::object& obj, bool to_patch = false);
/// The object `cur` with the replicas `scale` asks for (0 when absent), validated (ValidateScale;
/// a custom resource's own validation judges its value) and managedFields as the ScaleHandler
/// leaves them for a write by `manager` (track_scale).
json::object scaled(const ResourceType& t, const json::object& cur, const json::object& scale,
                    const std::string& manager);
bool wants_table(const Request& r);
IncludeObject include_object(const Request& r);

}  // namespace gpupool::embedded::api
