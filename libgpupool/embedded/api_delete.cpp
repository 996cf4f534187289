// Api::serve_delete: DELETE of an object or a collection (apiserver
// endpoints/handlers/delete.go).
#include <fmt/format.h>

#include "embedded/api_handlers.hpp"

namespace gpupool::embedded {

using namespace api;

Response Api::serve_delete(const Call& c) const {
  const auto& [r, tg, served, t, event_view, now, verb, wo] = c;
  DeleteOptions dopt;
  dopt.dry_run = wo.dry_run;
  if (!r.body.empty()) {
    auto body = parse_body(r.body);
    if (body.is_object()) {
      const auto& b = body.as_object();
      if (const auto p = str(b, "propagationPolicy"); !p.empty()) dopt.propagation = parse_propagation(p);
      if (const auto* orphan = b.if_contains("orphanDependents"); orphan && orphan->is_bool())
        dopt.propagation = orphan->as_bool() ? Propagation::Orphan : Propagation::Background;
      if (const auto* dr = b.if_contains("dryRun"); dr && dr->is_array() && !dr->as_array().empty())
        dopt.dry_run = true;
      if (const auto* pre = b.if_contains("preconditions"); pre && pre->is_object()) {
        if (const auto u = str(pre->as_object(), "uid"); !u.empty()) dopt.precondition_uid = u;
        if (const auto v = str(pre->as_object(), "resourceVersion"); !v.empty()) dopt.precondition_resource_version = v;
      }
    }
  }
  if (const auto p = q(r, "propagationPolicy"); !p.empty()) dopt.propagation = parse_propagation(p);
  if (verb == "deletecollection") {
    ListOptions lo;
    lo.labels = LabelSelector::parse(q(r, "labelSelector"));
    lo.fields = field_selector(t, q(r, "fieldSelector"));
    auto res = store_.list(t, tg.ns, lo);
    json::array items;
    for (const auto& it : res.items) {
      try {
        items.push_back(c.as_served(store_.remove(t, meta(*it, "namespace"), meta(*it, "name"), dopt)));
      } catch (const StatusError& e) {
        if (e.code() != 404) throw;
      }
    }
    return json_response(
        200, json::object{{"kind", list_kind(served)},
                          {"apiVersion", served.api_version()},
                          {"metadata", json::object{{"resourceVersion", std::to_string(store_.revision())}}},
                          {"items", std::move(items)}});
  }
  bool deleted = true;
  auto gone_obj = store_.remove(t, tg.ns, tg.name, dopt, &deleted);
  // handlers/delete.go: an object still there (finalizers) comes back as itself, 200 — 202 only
  // when the request set orphanDependents=false.
  if (!deleted || (t.group.empty() && t.resource == "pods"))
    return json_response(200, c.as_served(std::move(gone_obj)));
  json::object details{{"name", tg.name}, {"kind", served.resource}, {"uid", meta(gone_obj, "uid")}};
  if (!served.group.empty()) details["group"] = served.group;
  return json_response(200, json::object{{"kind", "Status"},
                                         {"apiVersion", "v1"},
                                         {"metadata", json::object{}},
                                         {"status", "Success"},
                                         {"details", std::move(details)}});
}

}  // namespace gpupool::embedded
