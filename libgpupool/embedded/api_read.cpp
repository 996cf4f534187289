// Api::serve_get, Api::serve_list: GET of an object or a list (apiserver
// endpoints/handlers/get.go: GetResource, ListResource).
#include <fmt/format.h>

#include "embedded/api_handlers.hpp"

namespace gpupool::embedded {

using namespace api;

Response Api::serve_get(const Call& c) const {
  const auto& [r, tg, served, t, event_view, now, verb, wo] = c;
  if (tg.subresource == "log") {
    LogRequest lr{tg.ns,
                  tg.name,
                  q(r, "container"),
                  q_true(r, "follow"),
                  std::nullopt,
                  q_true(r, "previous"),
                  q_true(r, "timestamps")};
    if (const auto tl = q(r, "tailLines"); !tl.empty()) lr.tail_lines = std::stoll(tl);
    store_.get(t, tg.ns, tg.name);  // 404 for a missing pod
    if (logs_) return logs_(lr);
    Response resp;
    resp.content_type = "text/plain";
    return resp;
  }
  auto obj = store_.get(t, tg.ns, tg.name);
  if (tg.subresource == "scale") return json_response(200, scale_of(t, obj));
  if (wants_table(r))
    return json_response(200,
                         to_table(t, {std::make_shared<const json::object>(std::move(obj))}, now, include_object(r)));
  return json_response(200, c.as_served(std::move(obj)));
}

Response Api::serve_list(const Call& c) const {
  const auto& [r, tg, served, t, event_view, now, verb, wo] = c;
  validate_list_options(r, false);
  ListOptions lo;
  lo.labels = LabelSelector::parse(q(r, "labelSelector"));
  lo.fields = field_selector(t, q(r, "fieldSelector"));
  if (const auto l = q(r, "limit"); !l.empty()) lo.limit = std::stoll(l);
  lo.continue_token = q(r, "continue");
  auto res = store_.list(t, tg.ns, lo);
  json::object md{{"resourceVersion", std::to_string(res.resource_version)}};
  if (!res.continue_token.empty()) md["continue"] = res.continue_token;
  if (res.remaining) md["remainingItemCount"] = *res.remaining;
  if (wants_table(r)) {
    auto table = to_table(t, res.items, now, include_object(r));
    table["metadata"] = std::move(md);
    return json_response(200, table);
  }
  json::array items;
  items.reserve(res.items.size());
  // A built-in kind's list items carry no kind/apiVersion (typed items are serialized without
  // TypeMeta); custom resources' items keep theirs (unstructured).
  const bool bare_items = is_builtin_group(t.group);
  for (const auto& it : res.items) {
    items.push_back(c.as_served(*it));
    if (bare_items) {
      items.back().as_object().erase("kind");
      items.back().as_object().erase("apiVersion");
    }
  }
  return json_response(200, json::object{{"kind", list_kind(served)},
                                         {"apiVersion", served.api_version()},
                                         {"metadata", std::move(md)},
                                         {"items", std::move(items)}});
}

}  // namespace gpupool::embedded
