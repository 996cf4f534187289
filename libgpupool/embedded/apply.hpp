// embedded/apply.hpp — server-side apply and field ownership (metadata.managedFields), after
// sigs.k8s.io/structured-merge-diff as the API server's fieldmanager uses it.
//
// Every write through the API records who set which field. A field set is fieldsV1: "f:<name>"
// for fields of structs and maps, "k:{<key fields>}" for items of lists keyed by a merge key
// (containers, env, volumes, ports by containerPort+protocol, ...), "v:<value>" for items of set
// lists (finalizers), "." for an item or a map that is itself owned; leaves are {}. Other lists
// (tolerations, taints, args, command) are atomic: owned whole.
//
//  - An Update (create, PUT, merge/JSON/strategic patch) by manager M (fieldManager, else the
//    User-Agent up to its first "/") makes M (operation Update) own every field it changed, and
//    takes those fields from every other manager, without conflicts.
//  - An Apply by M merges M's configuration into the object (maps and keyed lists element-wise,
//    atomic lists and scalars replaced). A field that would change and that another manager owns
//    is a conflict: 409 Conflict "Apply failed with 1 conflict: conflict with "kubectl-patch"
//    using apps/v1: .spec.replicas", one FieldManagerConflict cause per field — unless force, which
//    takes the fields. Fields M applied before and applies no longer are removed, unless another
//    manager owns them too. M's Apply entry then holds exactly the fields of its configuration.
// Not modelled: ownership per subresource (status, scale writes are not recorded), the exact
// schema of custom resources (their lists are atomic, maps granular).
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool::embedded {

namespace json = boost::json;
struct ResourceType;

/// The manager of a non-apply write: `field_manager`, else the User-Agent's product ("kubectl"
/// for "kubectl/v1.32.0 (linux/amd64) ..."), else "unknown".
std::string update_manager(std::string_view field_manager, std::string_view user_agent);

/// Records an Update by `manager` at `time` (RFC 3339) in `next`'s metadata.managedFields, from the
/// differences to `old` (null for a create). A `next` without managedFields inherits old's. A write
/// through a subresource ("status", "ephemeralcontainers") records an entry of that subresource.
void track_update(const json::object* old, json::object& next, const ResourceType& t, const std::string& manager,
                  const std::string& time, std::string_view subresource = {});

/// A write of the scale subresource by `manager` that sets the replicas at `replicas` (keys:
/// spec.replicas, a custom resource's specReplicasPath) from `old`'s to `next`'s: `next`'s
/// managedFields as kube-apiserver's ScaleHandler leaves them (see apply.cpp).
void track_scale(const json::object& old, json::object& next, const ResourceType& t, const std::string& manager,
                 const std::vector<std::string>& replicas);

/// Server-side apply of `config` by `manager` onto `live` (null: the object is created). Returns
/// the object to store, managedFields included. Throws StatusError 409 on conflicts (unless force).
/// Through the "status" subresource only the config's status is applied (the status strategy
/// resets the rest) and the entry is that subresource's.
json::object server_side_apply(const json::object* live, const json::object& config, const ResourceType& t,
                               const std::string& manager, bool force, const std::string& time,
                               std::string_view subresource = {});

}  // namespace gpupool::embedded
