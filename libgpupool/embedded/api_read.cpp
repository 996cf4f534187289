// Api::serve_get, Api::serve_list: GET of an object or a list (apiserver
// endpoints/handlers/get.go: GetResource, ListResource).
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "embedded/api_handlers.hpp"
#include "embedded/crd_schema.hpp"

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
    // pkg/registry/core/pod/rest/log.go LogREST.Get: the options decoded (a number that does not
    // parse: 400), then ValidatePodLogOptions (pkg/apis/core/validation, without stream
    // selection: PodLogsQuerySplitStreams is off in v1.32), then the pod looked up.
    const auto tail = q_int64(r, "tailLines"), limit_bytes = q_int64(r, "limitBytes"),
               since = q_int64(r, "sinceSeconds");
    std::vector<StatusCause> causes;
    if (tail && *tail < 0)
      causes.push_back({"FieldValueInvalid",
                        fmt::format("Invalid value: {}: must be greater than or equal to 0", *tail), "tailLines"});
    if (limit_bytes && *limit_bytes < 1)
      causes.push_back(
          {"FieldValueInvalid", fmt::format("Invalid value: {}: must be greater than 0", *limit_bytes), "limitBytes"});
    if (since && r.query.count("sinceTime"))
      causes.push_back({"FieldValueForbidden",
                        "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified",
                        "[]"});  // field.NewPath("") prints as []
    else if (since && *since < 1)
      causes.push_back(
          {"FieldValueInvalid", fmt::format("Invalid value: {}: must be greater than 0", *since), "sinceSeconds"});
    if (r.query.count("stream")) causes.push_back({"FieldValueForbidden", "Forbidden: may not be specified", "stream"});
    if (!causes.empty()) {
      ResourceType options;
      options.kind = "PodLogOptions";
      throw StatusError::invalid(options, tg.name, std::move(causes));
    }
    lr.tail_lines = tail;
    store_.get(t, tg.ns, tg.name);  // 404 for a missing pod
    if (logs_) return logs_(lr);
    Response resp;
    resp.content_type = "text/plain";
    return resp;
  }
  // A miss answered without an exception (clients probe for names: `gpupool get` asks each kind).
  const auto stored = store_.find(t, tg.ns, tg.name);
  if (!stored) return status_response(StatusError::not_found(t, tg.name));
  json::object obj = *stored;
  if (tg.subresource == "scale") {
    // apiextensions ScaleREST.Get: a custom resource without a value at specReplicasPath has no
    // Scale (an InternalError, as NewInternalError words it).
    json::object scale = scale_of(t, obj, true);
    const json::value* replicas = scale.at("spec").as_object().if_contains("replicas");
    if (replicas && replicas->is_int64() && replicas->as_int64() == std::numeric_limits<std::int32_t>::min()) {
      const std::string why =
          fmt::format("the spec replicas field \"{}\" does not exist", t.schema->spec_replicas_path);
      throw StatusError(500, "InternalError", "Internal error occurred: " + why, "", "", "", {{"", why, ""}});
    }
    return json_response(200, std::move(scale));
  }
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
  lo.fields = field_selector(served, q(r, "fieldSelector"));
  // A list at resourceVersion=0 is served from kube-apiserver's watch cache, which ignores the
  // limit: the whole list in one page, no continue (apiserver storage/cacher/cacher.go
  // computeListLimit, v1.32: "the limit is ignored for requests that set RV == 0").
  if (const auto l = q(r, "limit"); !l.empty() && q(r, "resourceVersion") != "0") lo.limit = *q_int64(r, "limit");
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
  json::object list{{"kind", list_kind(served)},
                    {"apiVersion", served.api_version()},
                    {"metadata", std::move(md)},
                    {"items", json::array{}}};
  if (!event_view) {
    // The envelope serialized with no items, then the items' cached encodings spliced in before
    // its closing `]}`: no copy of an object is built (Store::list_encodings).
    const std::string envelope = json::serialize(list);
    const auto encoded = store_.list_encodings(t, res.items);
    std::size_t size = envelope.size() + encoded.size();
    for (const auto& e : encoded) size += e->size();
    Response resp;
    resp.body.reserve(size);
    resp.body.append(envelope, 0, envelope.size() - 2);
    for (std::size_t i = 0; i < encoded.size(); ++i) {
      if (i > 0) resp.body += ',';
      resp.body += *encoded[i];
    }
    resp.body.append(envelope, envelope.size() - 2);
    return resp;
  }
  // events.k8s.io/v1 Events: core/v1 Events converted per request, without TypeMeta.
  json::array& items = list["items"].as_array();
  items.reserve(res.items.size());
  for (const auto& it : res.items) {
    items.push_back(c.as_served(*it));
    items.back().as_object().erase("kind");
    items.back().as_object().erase("apiVersion");
  }
  return json_response(200, list);
}

}  // namespace gpupool::embedded
