// Api::serve_create, Api::serve_update: POST and PUT (apiserver endpoints/handlers/create.go,
// update.go).
#include <fmt/format.h>

#include "common/join.hpp"
#include "embedded/api_handlers.hpp"
#include "embedded/disruption.hpp"
#include "embedded/service_account_tokens.hpp"

namespace gpupool::embedded {

using namespace api;

Response Api::serve_create(const Call& c) const {
  const auto& [r, tg, served, t, event_view, now, verb, wo] = c;
  if (tg.subresource == "binding" || (t.group.empty() && t.resource == "bindings")) {
    // pods/binding (registry/core/pod/storage BindingREST.Create), and the legacy bindings
    // resource (LegacyBindingREST: the same, named by the body): the name in the URL must be the
    // Binding's, ValidatePodBinding's errors come back as their aggregate (a plain error: 500), then
    // assignPod, implemented by the scheduler's bind_pod.
    auto body = parse_object(r);
    const auto member = [&body](std::string_view key) -> const json::object* {
      const json::value* v = body.if_contains(key);
      return v && v->is_object() ? &v->as_object() : nullptr;
    };
    const json::object* md = member("metadata");
    const std::string name = md ? str(*md, "name") : "";
    if (!tg.subresource.empty() && name != tg.name)
      throw StatusError::bad_request("name in URL does not match name in Binding object");
    const json::object* target = member("target");
    const std::string node = target ? str(*target, "name") : "", kind = target ? str(*target, "kind") : "";
    std::vector<std::string> errors;
    if (!kind.empty() && kind != "Node")
      errors.push_back(
          fmt::format("target.kind: Unsupported value: {}: supported values: \"Node\", \"<empty>\"", go_quote(kind)));
    if (node.empty()) errors.push_back("target.name: Required value");
    if (errors.size() == 1) throw StatusError(500, "", errors.front());
    if (errors.size() > 1) throw StatusError(500, "", "[" + text::join(errors, ", ") + "]");
    if (!wo.dry_run) bind_pod(store_, tg.ns, name, node);
    return json_response(201, json::object{{"kind", "Status"},
                                           {"apiVersion", "v1"},
                                           {"metadata", json::object{}},
                                           {"status", "Success"},
                                           {"code", 201}});
  }
  if (tg.subresource == "token") {
    // serviceaccounts/token (registry/core/serviceaccount/storage/token.go): a TokenRequest.
    auto body = parse_object(r);
    if (const auto kind = str(body, "kind"); !kind.empty() && kind != "TokenRequest")
      throw StatusError::bad_request(
          fmt::format("the kind in the data ({}) does not match the expected kind (TokenRequest)", kind));
    return json_response(201, tokens_->request(tg.ns, tg.name, body, now));
  }
  if (tg.subresource == "eviction") {
    // pods/eviction (registry/core/pod/storage/eviction.go): a policy/v1 (or v1beta1) Eviction.
    auto body = parse_object(r);
    if (const auto kind = str(body, "kind"); !kind.empty() && kind != "Eviction")
      throw StatusError::bad_request(
          fmt::format("the kind in the data ({}) does not match the expected kind (Eviction)", kind));
    const json::object status = evict_pod(store_, now, tg.ns, tg.name, body, wo.dry_run);
    return json_response(static_cast<int>(status.at("code").as_int64()), status);
  }
  if (!tg.name.empty()) throw StatusError(405, "MethodNotAllowed", "POST is not supported on a named object");
  const FieldValidation fv = field_validation(q(r, "fieldValidation"), "CreateOptions");
  auto body = parse_object(r);
  if (const auto kind = str(body, "kind"); !kind.empty() && kind != t.kind)
    throw StatusError::bad_request(
        fmt::format("the kind in the data ({}) does not match the expected kind ({})", kind, t.kind));
  decode_body(served, body, fv, &r.warnings);
  dedup_owner_references(body, r.warnings, false);
  // An Event's own rules, which name it as the core kind it is stored as (`Event`), after the
  // namespace check.
  if (t.group.empty() && t.resource == "events") check_namespace(body, t, tg.ns);
  if (event_view)
    validate_event_create(t, body, tg.ns, true);
  else if (t.group.empty() && t.resource == "events")
    validate_event_create(t, core_event_to_v1(body), tg.ns, false);
  if (r.body.size() > kEtcdMaxRequestBytes / 2) check_stored_size(body);
  body = c.as_stored(std::move(body));
  WriteOptions co = c.tracking(update_manager(wo.field_manager, r.user_agent));
  co.client_create = true;
  auto created = store_.create(t, tg.ns, std::move(body), co);
  return json_response(201, c.as_served(std::move(created)));
}

Response Api::serve_update(const Call& c) const {
  const auto& [r, tg, served, t, event_view, now, verb, wo] = c;
  const FieldValidation fv = field_validation(q(r, "fieldValidation"), "UpdateOptions");
  auto body = parse_object(r);
  if (tg.subresource == "scale") {
    const auto want_rv = meta(body, "resourceVersion");
    const auto cur = store_.get(t, tg.ns, tg.name);
    json::object obj = scaled(t, cur, body, update_manager(wo.field_manager, r.user_agent));
    if (!want_rv.empty() && want_rv != meta(cur, "resourceVersion")) throw StatusError::conflict(t, tg.name);
    WriteOptions so = wo;
    so.scale = true;
    return json_response(200, scale_of(t, store_.update(t, tg.ns, std::move(obj), so)));
  }
  // handlers/update.go: the body is decoded first, then its name checked against the URL's.
  decode_body(served, body, fv, &r.warnings);
  check_name(body, t, tg.ns, tg.name);
  dedup_owner_references(body, r.warnings, false);
  if (r.body.size() > kEtcdMaxRequestBytes / 2) check_stored_size(body);
  body = c.as_stored(std::move(body));
  WriteOptions uo = c.tracking(update_manager(wo.field_manager, r.user_agent));
  const bool event = t.group.empty() && t.resource == "events";
  // A PUT of a missing object creates it for the kinds whose strategies AllowCreateOnUpdate
  // (pkg/registry: Service, Endpoints, Event, LimitRange, the RBAC kinds), else 404.
  if (tg.subresource.empty() && allows_create_on_update(t) && !store_.find(t, tg.ns, tg.name)) {
    if (event) validate_event_create(t, core_event_to_v1(body), tg.ns, event_view);
    return json_response(201, c.as_served(store_.create(t, tg.ns, std::move(body), uo)));
  }
  if (event) uo.strategy_causes = event_update_causes(core_event_to_v1(body), tg.ns, event_view);
  return json_response(200, c.as_served(store_.update(t, tg.ns, std::move(body), uo, tg.subresource)));
}

}  // namespace gpupool::embedded
