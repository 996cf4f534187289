// embedded/patch.hpp — the patch formats the API server accepts, as pure JSON functions.
//  - JSON merge patch (RFC 7386): objects merge recursively, null deletes, anything else replaces.
//  - JSON patch (RFC 6902): add, remove, replace, move, copy, test.
//  - Strategic merge patch (k8s.io/apimachinery/pkg/util/strategicpatch): like merge patch, but
//    lists declared `patchStrategy:"merge"` in the Go types merge element-wise by their
//    patchMergeKey (containers by name, volumes by name, env by name, ...; taints and tolerations
//    have no strategy and are replaced), with the directives `$patch`
//    (delete/replace/merge), `$setElementOrder/<list>`, `$deleteFromPrimitiveList/<list>` and
//    `$retainKeys`.
// Errors are StatusError 400 BadRequest (malformed patch) or 422 (a failed `test`).
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>

namespace gpupool::embedded {

/// The object a JSON or merge patch of `target` produced, with its keys in the order kube-apiserver
/// decodes them: json-patch re-encodes each level it touched (a merge patch's merged objects and
/// the values it put where the target had no object, at every level; the containers along a JSON
/// patch's paths) from a Go map, in sorted key order; the rest keeps its order. (The first type
/// error of such an object is the first in that order.)
boost::json::object patched_decode_order(const boost::json::object& patched, const boost::json::value& target,
                                         const boost::json::value& patch, bool json_patch_type);

/// The patch map as strategicpatch.StrategicMergeMapPatch leaves it after merging (kube-apiserver
/// quotes it in a decoding error): each merged map without its `$patch: replace`, `$retainKeys`,
/// and `$setElementOrder/<list>` directives and the lists they ordered.
boost::json::value strategic_patch_consumed(const boost::json::value& patch);

boost::json::value merge_patch(const boost::json::value& target, const boost::json::value& patch);
boost::json::value json_patch(const boost::json::value& target, const boost::json::array& ops);
/// `kind` selects the merge keys (e.g. "Pod", "Deployment", "Node", "Scale"): any built-in kind.
/// Custom resources take none (the API server answers 415; the caller refuses them first).
boost::json::value strategic_merge_patch(const boost::json::value& target, const boost::json::value& patch,
                                         std::string_view kind);
/// The patchMergeKey of a list at a dotted path within an object of `kind` ("spec.template.spec.
/// containers" -> "name"), "" for lists that are replaced whole. Primitive lists merged as sets
/// (finalizers) return "$primitive".
std::string merge_key(std::string_view kind, std::string_view path);

}  // namespace gpupool::embedded
