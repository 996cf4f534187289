// Api::serve_patch: PATCH in its four types (apiserver endpoints/handlers/patch.go).
#include <fmt/format.h>

#include "embedded/api_handlers.hpp"
#include "embedded/crd_schema.hpp"

namespace gpupool::embedded {

using namespace api;

namespace {

// handlers/patch.go decodes a patch as its patcher's Go type before it applies it (kjson
// UnmarshalStrict, under the default Warn and under Strict): a syntax error or another JSON type
// is a 400, prefixed `error decoding patch: ` but for a strategic merge patch. A null JSON or
// strategic patch changes nothing; a null merge patch is jsonpatch's ErrBadJSONPatch.
json::value decode_patch(const std::string& body, const std::string& ct) {
  const bool json_patch_type = ct == "application/json-patch+json";
  const std::string prefix = ct == "application/strategic-merge-patch+json" ? "" : "error decoding patch: ";
  if (const auto err = go_json_syntax_error(body)) throw StatusError::bad_request(prefix + *err);
  json::value patch = parse_body(body, false);
  const auto kind = [](const json::value& v) { return go_value_names(v).json; };
  const auto refuse = [&](const json::value& v, std::string_view go_type) {
    return StatusError::bad_request(
        fmt::format("{}json: cannot unmarshal {} into Go value of type {}", prefix, kind(v), go_type));
  };
  if (patch.is_null()) {
    if (ct == "application/merge-patch+json") throw StatusError::bad_request("Invalid JSON Patch");
    return json_patch_type ? json::value(json::array{}) : json::value(json::object{});
  }
  if (!json_patch_type) {
    if (!patch.is_object()) throw refuse(patch, "map[string]interface {}");
    return patch;
  }
  if (!patch.is_array()) throw refuse(patch, "[]handlers.jsonPatchOp");
  for (const auto& op : patch.as_array()) {
    if (op.is_null()) continue;
    if (!op.is_object()) throw refuse(op, "handlers.jsonPatchOp");
    for (const char* f : {"op", "path", "from"})  // jsonPatchOp's string fields
      if (const json::value* v = op.as_object().if_contains(f); v && !v->is_null() && !v->is_string())
        throw StatusError::bad_request(fmt::format(
            "{}json: cannot unmarshal {} into Go struct field jsonPatchOp.{} of type string", prefix, kind(*v), f));
  }
  return patch;
}

}  // namespace

Response Api::serve_patch(const Call& c) const {
  const auto& [r, tg, served, t, event_view, now, verb, wo] = c;
  const std::string ct = r.content_type.substr(0, r.content_type.find(';'));
  const bool apply = ct == "application/apply-patch+yaml";
  // (an apply patch's field manager is required: write_options)
  // Every built-in kind takes strategic merge patches; custom resources do not.
  if (ct == "application/strategic-merge-patch+json" && !is_builtin_group(t.group))
    throw StatusError(415, "UnsupportedMediaType",
                      "the body of the request was in an unknown format - accepted media types include: "
                      "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml");
  if (ct != "application/merge-patch+json" && ct != "application/strategic-merge-patch+json" &&
      ct != "application/json-patch+json" && !apply)
    throw StatusError(415, "UnsupportedMediaType",
                      "the body of the request was in an unknown format - accepted media types include: "
                      "application/json-patch+json, application/merge-patch+json, "
                      "application/apply-patch+yaml, application/strategic-merge-patch+json");
  // handlers/patch.go reads the object before it applies the patch: a missing one is 404
  // whatever the patch holds (an apply patch creates it instead).
  if ((!apply || !tg.subresource.empty()) && !store_.find(t, tg.ns, tg.name)) throw StatusError::not_found(t, tg.name);
  const json::value patch = apply ? parse_body(r.body, true) : decode_patch(r.body, ct);
  if (apply && !patch.is_object()) throw StatusError::bad_request("an apply patch must be an object");
  const bool force = q_true(r, "force");
  const FieldValidation fv = field_validation(q(r, "fieldValidation"), "PatchOptions");
  const std::string manager = apply ? wo.field_manager : update_manager(wo.field_manager, r.user_agent);
  if (apply && !store_.find(t, tg.ns, tg.name)) {
    // Server-side apply of an object that does not exist creates it.
    json::object obj = server_side_apply(nullptr, c.as_stored(patch.as_object()), t, manager, force, to_rfc3339(now));
    // A custom resource's applied object is decoded as any write's (customresource_handler.go
    // schemaCoercingDecoder): its structural schema's defaults are set.
    if (t.schema) crd::apply_defaults(obj, *t.schema);
    return json_response(201, c.as_served(store_.create(t, tg.ns, std::move(obj), wo)));
  }
  for (int attempt = 0;; ++attempt) {
    json::object cur = store_.get(t, tg.ns, tg.name);
    json::value base = tg.subresource == "scale" ? json::value(scale_of(t, cur, true)) : json::value(c.as_served(cur));
    json::value next;
    if (ct == "application/json-patch+json") {
      try {
        next = json_patch(base, patch.as_array());
      } catch (const StatusError&) {
        // apiserver handlers/patch.go applyJSPatch: a patch that does not apply (a missing path,
        // a failed test, an unknown op) is NewGenericServerResponse(422), its text not shown.
        throw StatusError(422, "Invalid", "the server rejected our request due to an error in our request");
      }
    } else if (ct == "application/merge-patch+json") {
      next = merge_patch(base, patch);
    } else if (apply) {
      next =
          server_side_apply(&cur, c.as_stored(patch.as_object()), t, manager, force, to_rfc3339(now), tg.subresource);
      if (t.schema) crd::apply_defaults(next.as_object(), *t.schema);  // (as above)
    } else {
      next = strategic_merge_patch(base, patch, tg.subresource == "scale" ? "Scale" : t.kind);
      if (tg.subresource != "scale" && next.is_object()) check_patched_types(t, next.as_object(), &patch);
    }
    if (!next.is_object()) throw StatusError::bad_request("the patch did not produce an object");
    if (!apply && tg.subresource != "scale" && ct != "application/strategic-merge-patch+json") {
      json::object ordered = patched_decode_order(next.as_object(), base, patch, ct == "application/json-patch+json");
      check_patched_types(t, ordered, nullptr);
    }
    if (!apply && tg.subresource != "scale") decode_patched(served, next.as_object(), fv, &r.warnings);
    if (tg.subresource == "scale") check_scale_patched(next.as_object());
    if (!apply && tg.subresource != "scale") {
      check_name(next.as_object(), t, tg.ns, tg.name);
    }
    json::object out = c.as_stored(std::move(next.as_object()));
    std::vector<StatusCause> event_causes;
    if (t.group.empty() && t.resource == "events")
      event_causes = event_update_causes(core_event_to_v1(out), tg.ns, event_view);
    dedup_owner_references(out, r.warnings, true);
    if (r.body.size() > 4096) check_stored_size(out);
    const std::string read_version = meta(cur, "resourceVersion");
    if (tg.subresource == "scale") out = scaled(t, cur, out, manager);
    // A resourceVersion in the patch is a precondition; otherwise the version read above is. A
    // patch that removes it asks for an unconditional update (registry.Store: refused where the
    // strategy allows none, a custom resource's).
    if (apply && meta(out, "resourceVersion").empty()) out["metadata"].as_object()["resourceVersion"] = read_version;
    try {
      WriteOptions po = apply ? wo : c.tracking(manager);
      po.uid_precondition = false;
      po.strategy_causes = std::move(event_causes);
      po.scale = tg.subresource == "scale";
      auto updated = store_.update(t, tg.ns, std::move(out), po, tg.subresource == "scale" ? "" : tg.subresource);
      if (tg.subresource == "scale") return json_response(200, scale_of(t, updated));
      return json_response(200, c.as_served(std::move(updated)));
    } catch (const StatusError& e) {
      // The API server retries a patch internally when the object changed under it.
      const bool explicit_rv = patch.is_object() && patch.as_object().if_contains("metadata") &&
                               patch.as_object().at("metadata").is_object() &&
                               patch.as_object().at("metadata").as_object().contains("resourceVersion");
      if (e.reason() != "Conflict" || explicit_rv || attempt >= 5) throw;
    }
  }
}

}  // namespace gpupool::embedded
