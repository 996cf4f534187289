#include "embedded/api.hpp"
#include "embedded/api_handlers.hpp"

#include "embedded/controllers_util.hpp"
#include "embedded/crd_schema.hpp"

#include "common/json_depth.hpp"
#include "common/limits.hpp"

#include "common/go_text.hpp"
#include "common/http_date.hpp"
#include "common/utf8.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "embedded/apply.hpp"
#include "embedded/events.hpp"
#include "embedded/patch.hpp"
#include "embedded/protobuf.hpp"
#include "embedded/rbac.hpp"
#include "embedded/scheduler.hpp"
#include "embedded/schema.hpp"
#include "embedded/table.hpp"
#include "embedded/typecheck.hpp"
#include "embedded/validation.hpp"
#include "embedded/validation_fields.hpp"
#include "gpupool/manifest.hpp"
#include "gpupool/names.hpp"

namespace gpupool::embedded {

namespace api {

// The field labels each kind supports (the scheme's AddFieldLabelConversionFunc per kind:
// pkg/apis/core/v1/conversion.go, pkg/apis/batch/v1/conversion.go, pkg/apis/events/v1/conversion.go;
// a custom resource's crConverter.ConvertFieldLabel; every other kind takes
// runtime.DefaultMetaV1FieldSelectorConversion), with their 400 BadRequest messages. `served` is
// the kind the request names (events.k8s.io/v1 Events are selected by their own names, converted
// to the stored core/v1 Event's).
FieldSelector field_selector(const ResourceType& served, std::string_view text) {
  FieldSelector sel = FieldSelector::parse(text);
  static const std::map<std::string, std::vector<std::string>> labels = {
      {"pods",
       {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork",
        "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName", "spec.host"}},
      {"nodes", {"spec.unschedulable"}},
      {"replicationcontrollers", {"status.replicas"}},
      {"events",
       {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
        "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
        "reportingComponent", "source", "type"}},
      {"namespaces", {"status.phase"}},
      {"secrets", {"type"}},
      {"services", {"spec.clusterIP", "spec.type"}},
      {"jobs.batch", {"status.successful"}}};
  // events/v1 AddFieldLabelConversionsForEvent: these labels only, mapped to the core/v1 Event's.
  static const std::map<std::string, std::string> event_v1 = {
      {"reason", "reason"},
      {"regarding.kind", "involvedObject.kind"},
      {"regarding.namespace", "involvedObject.namespace"},
      {"regarding.name", "involvedObject.name"},
      {"regarding.uid", "involvedObject.uid"},
      {"regarding.apiVersion", "involvedObject.apiVersion"},
      {"regarding.resourceVersion", "involvedObject.resourceVersion"},
      {"regarding.fieldPath", "involvedObject.fieldPath"},
      {"reportingController", "reportingComponent"},
      {"type", "type"},
      {"metadata.namespace", "metadata.namespace"},
      {"metadata.name", "metadata.name"}};
  const bool event_v1_view = served.group == "events.k8s.io" && served.resource == "events";
  const auto it = labels.find(served.group_resource());
  std::vector<std::string> converted;
  for (const auto& r : sel.requirements()) {
    if (event_v1_view) {
      const auto m = event_v1.find(r.path);
      if (m == event_v1.end()) throw StatusError::bad_request("field label not supported: " + r.path);
      converted.push_back(m->second);
      continue;
    }
    converted.push_back(r.path);
    if (served.schema) {
      // crConverter.ConvertFieldLabel: metadata.name, a namespaced one's metadata.namespace, and
      // the version's selectableFields (CustomResourceFieldSelectors, GA in v1.32).
      const auto& sf = served.schema->selectable_fields;
      if (r.path == "metadata.name" || (r.path == "metadata.namespace" && served.namespaced) ||
          std::find(sf.begin(), sf.end(), r.path) != sf.end())
        continue;
      throw StatusError::bad_request("field label not supported: " + r.path);
    }
    if (r.path == "metadata.name" || (r.path == "metadata.namespace" && served.resource != "namespaces")) continue;
    if (it != labels.end()) {
      if (std::find(it->second.begin(), it->second.end(), r.path) != it->second.end()) continue;
      if (served.group == "batch")
        throw StatusError::bad_request(fmt::format("field label \"{}\" not supported for Job", r.path));
      throw StatusError::bad_request("field label not supported: " + r.path);
    }
    throw StatusError::bad_request(
        fmt::format("\"{}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"", r.path));
  }
  sel.convert(std::move(converted), event_v1_view ? std::string("events") : served.group_resource());
  return sel;
}

// ---- small helpers -------------------------------------------------------------------------------

std::string q(const Request& r, const std::string& key, const std::string& dflt) {
  auto it = r.query.find(key);
  return it == r.query.end() ? dflt : it->second;
}
bool q_true(const Request& r, const std::string& key) {
  // strconv.ParseBool, as the API server parses boolean query parameters.
  const auto v = q(r, key);
  return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
}

std::optional<std::int64_t> q_int64(const Request& r, const std::string& key) {
  const auto it = r.query.find(key);
  if (it == r.query.end()) return std::nullopt;
  std::string err;
  const auto v = go_parse_int(it->second, &err);
  if (!v) throw StatusError::bad_request(err);
  return v;
}

// ValidateListOptions and validateWatchOptions (apimachinery/pkg/apis/meta/internalversion/
// validation/validation.go, v1.32, WatchList on): throws 422 `ListOptions.meta.k8s.io "" is invalid`.
void validate_list_options(const Request& r, bool watch) {
  // The options are decoded before they are validated: a number that does not parse is a 400.
  q_int64(r, "limit");
  q_int64(r, "timeoutSeconds");
  const std::string send_initial = q(r, "sendInitialEvents"), match = q(r, "resourceVersionMatch");
  const bool has_continue = !q(r, "continue").empty();
  std::vector<StatusCause> causes;
  auto forbidden = [&](const char* field, std::string msg) {
    causes.push_back({"FieldValueForbidden", "Forbidden: " + std::move(msg), field});
  };
  if (watch) {
    if (!send_initial.empty() && match != "NotOlderThan")
      forbidden("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
    if (!match.empty()) {
      if (send_initial.empty())
        forbidden("resourceVersionMatch",
                  "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");
      if (match != "NotOlderThan")
        causes.push_back({"FieldValueNotSupported",
                          fmt::format("Unsupported value: \"{}\": supported values: \"NotOlderThan\"", match),
                          "resourceVersionMatch"});
      if (has_continue)
        forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided");
    }
  } else {
    const std::string rv = q(r, "resourceVersion");
    if (!match.empty()) {
      if (rv.empty())
        forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided");
      if (has_continue)
        forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided");
      if (match != "Exact" && match != "NotOlderThan")
        causes.push_back(
            {"FieldValueNotSupported",
             fmt::format("Unsupported value: \"{}\": supported values: \"Exact\", \"NotOlderThan\", \"\"", match),
             "resourceVersionMatch"});
      if (match == "Exact" && rv == "0")
        forbidden("resourceVersionMatch", "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"");
    }
    if (!send_initial.empty()) forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list");
  }
  if (!causes.empty()) throw StatusError::invalid_options("ListOptions", std::move(causes));
}

Response json_response(int status, const json::value& v) {
  Response resp;
  resp.status = status;
  resp.body = json::serialize(v);
  return resp;
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    const auto j = path.find('/', i);
    const auto end = j == std::string_view::npos ? path.size() : j;
    if (end > i) out.emplace_back(path.substr(i, end - i));
    i = end;
  }
  return out;
}

void replace_invalid_utf8(json::value& v) {
  if (v.is_string()) {
    if (!utf8::valid(v.as_string())) v = json::string(utf8::to_valid(v.as_string()));
  } else if (v.is_array()) {
    for (auto& c : v.as_array()) replace_invalid_utf8(c);
  } else if (v.is_object()) {
    json::object fixed;
    for (auto& [k, c] : v.as_object()) {
      replace_invalid_utf8(c);
      fixed[utf8::valid(k) ? std::string(k) : utf8::to_valid(k)] = std::move(c);
    }
    v = std::move(fixed);
  }
}

json::value parse_body(const std::string& body, bool yaml) {
  if (yaml) {
    // The library's one YAML reader (render/manifest: YAML 1.2 core scalars, go-yaml's alias budget).
    try {
      return parse_yaml(body, "body");
    } catch (const ConfigError& e) {
      throw StatusError::bad_request(fmt::format("error converting YAML to JSON: {}", e.what()));
    }
  }
  // Go's encoding/json takes invalid UTF-8 in strings, each bad byte becoming U+FFFD, and nests
  // up to 10000 levels; Boost.JSON refuses both by default.
  json::parse_options opts = deep_json();
  opts.allow_invalid_utf8 = true;
  boost::system::error_code ec;
  auto v = json::parse(body, ec, {}, opts);
  if (ec)
    throw StatusError::bad_request(
        fmt::format("the object provided is unrecognized (must be of type JSON): {}", ec.message()));
  if (!utf8::valid(body)) replace_invalid_utf8(v);
  return v;
}

// kube-apiserver passes etcd's refusal of a larger object on as a 500 with no reason.

void check_namespace(const json::object& obj, const ResourceType& t, const std::string& url_ns) {
  if (const std::string ns = meta(obj, "namespace");
      !ns.empty() && !url_ns.empty() && ns != url_ns && !(t.group.empty() && t.resource == "namespaces"))
    throw StatusError::bad_request(
        "the namespace of the provided object does not match the namespace sent on the request");
}

void check_name(const json::object& obj, const ResourceType& t, const std::string& url_ns,
                const std::string& url_name) {
  check_namespace(obj, t, url_ns);
  const std::string name = meta(obj, "name");
  if (name.empty())  // ContextBasedNaming.ObjectName: errEmptyName
    throw StatusError::bad_request(
        fmt::format("the name of the object ({} based on URL) was undeterminable: name must be provided", url_name));
  if (name != url_name)
    throw StatusError::bad_request(
        fmt::format("the name of the object ({}) does not match the name on the URL ({})", name, url_name));
}

void dedup_owner_references(json::object& obj, std::vector<std::string>& warnings, bool after_mutating) {
  json::value* mdv = obj.if_contains("metadata");
  json::value* refs = mdv && mdv->is_object() ? mdv->as_object().if_contains("ownerReferences") : nullptr;
  if (!refs || !refs->is_array()) return;
  json::array kept;
  std::vector<std::string> duplicates;
  for (const auto& ref : refs->as_array()) {
    const bool seen =
        std::any_of(kept.begin(), kept.end(), [&](const json::value& k) { return util::json_equal(k, ref); });
    if (seen)
      duplicates.push_back(ref.is_object() ? str(ref.as_object(), "uid") : std::string());
    else
      kept.push_back(ref);
  }
  if (duplicates.empty()) return;
  *refs = std::move(kept);
  std::string uids;
  for (const auto& u : duplicates) uids += (uids.empty() ? "" : ", ") + u;
  warnings.push_back(fmt::format(
      ".metadata.ownerReferences contains duplicate entries{}; API server dedups owner references in 1.20+, and may "
      "reject such requests as early as 1.24; please fix your requests; duplicate UID(s) observed: {}",
      after_mutating ? " after mutating admission happens" : "", uids));
}

void check_stored_size(const json::object& obj) {
  const std::size_t size = json::serialize(obj).size();
  if (size > limits::kEtcdClientMaxSendBytes)
    throw StatusError(
        500, "",
        fmt::format("rpc error: code = ResourceExhausted desc = trying to send message larger than max ({} vs. {})",
                    size, limits::kEtcdClientMaxSendBytes));
  if (size > kEtcdMaxRequestBytes) throw StatusError(500, "", "etcdserver: request is too large");
}

json::object parse_object(const Request& r) {
  if (r.content_type.find("protobuf") != std::string::npos) return decode_kubernetes_protobuf(r.body);
  if (r.content_type.find("cbor") != std::string::npos)
    throw StatusError(415, "UnsupportedMediaType",
                      fmt::format("the body of the request was in an unknown format - accepted media types include: "
                                  "application/json, application/yaml"));
  const bool yaml = r.content_type.find("yaml") != std::string::npos;
  auto v = parse_body(r.body, yaml);
  if (!v.is_object()) throw StatusError::bad_request("the body of the request must be a JSON object");
  return std::move(v.as_object());
}

std::string str(const json::object& o, std::string_view key) {
  if (const auto* v = o.if_contains(key); v && v->is_string()) return std::string(v->as_string());
  return {};
}
const json::object* util_object(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_object() ? &v->as_object() : nullptr;
}
std::string meta(const json::object& o, std::string_view key) { return field_value(o, "metadata." + std::string(key)); }

bool allows_create_on_update(const ResourceType& t) {
  if (t.group.empty())
    return t.resource == "services" || t.resource == "endpoints" || t.resource == "events" ||
           t.resource == "limitranges";
  return t.group == "rbac.authorization.k8s.io" || (t.group == "events.k8s.io" && t.resource == "events") ||
         t.group == "coordination.k8s.io" || (t.group == "node.k8s.io" && t.resource == "runtimeclasses");
}

// metav1 validation ValidateCreateOptions / ValidateUpdateOptions / ValidatePatchOptions
// (apimachinery/pkg/apis/meta/v1/validation/validation.go), before the body is read: an apply
// patch's required field manager (and `force` only for one), ValidateFieldManager (at most 128
// bytes, printable runes: `invalid character U+0009 (at position 3)`), ValidateDryRun; a 422
// `CreateOptions.meta.k8s.io "" is invalid`.
WriteOptions write_options(const Request& r) {
  WriteOptions o;
  const auto dry = q(r, "dryRun");
  const std::string fm = q(r, "fieldManager");
  const std::string kind = r.method == "POST" ? "CreateOptions" : r.method == "PUT" ? "UpdateOptions" : "PatchOptions";
  std::vector<StatusCause> causes;
  fields::Errors errs{causes};
  if (kind == "PatchOptions") {
    const std::string ct = r.content_type.substr(0, r.content_type.find(';'));
    if (ct != "application/apply-patch+yaml") {
      if (r.query.count("force")) errs.forbidden("force", "may not be specified for non-apply patch");
    } else if (fm.empty()) {
      errs.required("fieldManager", "is required for apply patch");
    }
  }
  if (fm.size() > 128)
    causes.push_back({"FieldValueTooLong", "Too long: may not be more than 128 bytes", "fieldManager"});
  for (std::size_t i = 0; i < fm.size();) {
    const std::size_t n = utf8::sequence(fm, i);
    char32_t rune = 0xFFFD;  // an invalid byte reads as U+FFFD, which is printable
    if (n == 1) rune = static_cast<unsigned char>(fm[i]);
    if (n > 1) {
      rune = static_cast<unsigned char>(fm[i]) & (0x7F >> n);
      for (std::size_t k = 1; k < n; ++k) rune = (rune << 6) | (static_cast<unsigned char>(fm[i + k]) & 0x3F);
    }
    if (!gotext::is_print(rune))
      errs.invalid("fieldManager", fields::q(fm),
                   fmt::format("invalid character U+{:04X} (at position {})", static_cast<std::uint32_t>(rune), i));
    i += n ? n : 1;
  }
  if (!dry.empty() && dry != "All")  // field.NotSupported of the []string, printed with %#v
    causes.push_back({"FieldValueNotSupported",
                      fmt::format("Unsupported value: []string{{{}}}: supported values: \"All\"", fields::q(dry)),
                      "dryRun"});
  if (!causes.empty()) throw StatusError::invalid_options(kind, std::move(causes));
  o.dry_run = dry == "All";
  o.field_manager = fm;
  o.user = r.user;
  o.warnings = &r.warnings;
  return o;
}

std::string list_kind(const ResourceType& t) { return t.kind + "List"; }

// ---- discovery -----------------------------------------------------------------------------------

// The verbs discovery lists for a resource, and the only ones its endpoint serves (another is 405):
// the reviews are create-only; namespaces have no deletecollection (the namespace registry does
// not offer it); custom resources list theirs in apiextensions-apiserver's order.
const json::array& verbs_for(const ResourceType& t) {
  static const json::array review{"create"};
  static const json::array read_only{"get", "list"};
  static const json::array namespaces{"create", "delete", "get", "list", "patch", "update", "watch"};
  static const json::array custom{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"};
  static const json::array builtin{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
  if (is_access_review(t) || is_rules_review(t) || is_self_subject_review(t)) return review;
  if (t.group.empty() && t.resource == "bindings") return review;
  if (t.group.empty() && t.resource == "componentstatuses") return read_only;
  if (t.group.empty() && t.resource == "namespaces") return namespaces;
  return is_builtin_group(t.group) ? builtin : custom;
}

// The subresources a resource serves, as discovery lists them (name, kind, verbs, and the group and
// version of a kind from another group); a request for another is a 404, for another verb a 405.
struct Subresource {
  std::string name, kind;
  std::vector<std::string> verbs;
  std::string group, version;
};
std::vector<Subresource> subresources_of(const ResourceType& t, bool tokens) {
  std::vector<Subresource> out;
  if (t.has_status) out.push_back({"status", t.kind, {"get", "patch", "update"}, "", ""});
  if (t.has_scale) out.push_back({"scale", "Scale", {"get", "patch", "update"}, "autoscaling", "v1"});
  if (t.group.empty() && t.resource == "serviceaccounts" && tokens)
    out.push_back({"token", "TokenRequest", {"create"}, "authentication.k8s.io", "v1"});
  if (t.group.empty() && t.resource == "pods") {
    out.push_back({"attach", "PodAttachOptions", {"create", "get"}, "", ""});
    out.push_back({"binding", "Binding", {"create"}, "", ""});
    out.push_back({"ephemeralcontainers", "Pod", {"get", "patch", "update"}, "", ""});
    out.push_back({"eviction", "Eviction", {"create"}, "policy", "v1"});
    out.push_back({"exec", "PodExecOptions", {"create", "get"}, "", ""});
    out.push_back({"log", "Pod", {"get"}, "", ""});
    out.push_back({"portforward", "PodPortForwardOptions", {"create", "get"}, "", ""});
  }
  return out;
}

json::object resource_list(const Store& store, std::string_view group, std::string_view version, bool tokens) {
  json::array resources;
  for (const auto* t : store.types()) {
    if (t->group != group || t->version != version) continue;
    json::object e{{"name", t->resource},
                   {"singularName", t->singular},
                   {"namespaced", t->namespaced},
                   {"kind", t->kind},
                   {"verbs", verbs_for(*t)}};
    if (!t->short_names.empty()) {
      json::array sn;
      for (const auto& s : t->short_names) sn.push_back(json::value(s));
      e["shortNames"] = std::move(sn);
    }
    if (!t->categories.empty()) {
      json::array cs;
      for (const auto& s : t->categories) cs.push_back(json::value(s));
      e["categories"] = std::move(cs);
    }
    resources.push_back(std::move(e));
    for (const auto& sub : subresources_of(*t, tokens)) {
      json::array verbs;
      for (const auto& v : sub.verbs) verbs.emplace_back(v);
      json::object s{{"name", t->resource + "/" + sub.name},
                     {"singularName", ""},
                     {"namespaced", t->namespaced},
                     {"kind", sub.kind},
                     {"verbs", std::move(verbs)}};
      if (!sub.group.empty()) {
        s["group"] = sub.group;
        s["version"] = sub.version;
      }
      resources.push_back(std::move(s));
    }
  }
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version)},
          {"resources", std::move(resources)}};
}

json::object group_list(const Store& store) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> versions;
  for (const auto* t : store.types()) {
    if (t->group.empty()) continue;
    if (!versions.count(t->group)) order.push_back(t->group);
    auto& vs = versions[t->group];
    if (std::find(vs.begin(), vs.end(), t->version) == vs.end()) vs.push_back(t->version);
  }
  json::array groups;
  for (const auto& g : order) {
    json::array vs;
    for (const auto& v : versions[g]) vs.push_back(json::object{{"groupVersion", g + "/" + v}, {"version", v}});
    const auto& pv = versions[g].front();
    groups.push_back(json::object{{"name", g},
                                  {"versions", std::move(vs)},
                                  {"preferredVersion", json::object{{"groupVersion", g + "/" + pv}, {"version", pv}}}});
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", std::move(groups)}};
}

// ---- OpenAPI v3 -----------------------------------------------------------------------------------
// Just enough for kubectl: the root lists one document per group version, and each document has
// the PATCH operation of every kind with the fieldValidation parameter. kubectl's
// QueryParamVerifierV3 (cli-runtime/pkg/resource/query_param_verifier_v3.go) then validates on
// the server (fieldValidation=Strict) instead of downloading the v2 schema. The schemas are
// Kubernetes' own (data/openapi/, recorded from kube-apiserver v1.32), so `kubectl explain` works. /openapi/v2 is 404,
// which kubectl apply tolerates (it falls back to the patch metadata compiled into it).
Response openapi(const Store& store, const std::vector<std::string>& segs, const std::string& version) {
  if (segs.size() < 2 || segs[1] != "v3")
    throw StatusError(404, "NotFound", "the server could not find the requested resource");
  std::map<std::string, std::vector<const ResourceType*>> by_gv;
  for (const auto* t : store.types())
    by_gv[t->group.empty() ? "api/" + t->version : "apis/" + t->group + "/" + t->version].push_back(t);
  if (segs.size() == 2) {
    json::object paths;
    for (const auto& [gv, types] : by_gv) {
      (void)types;
      paths[gv] =
          json::object{{"serverRelativeURL", "/openapi/v3/" + gv + "?hash=" + std::to_string(store.revision())}};
    }
    return json_response(200, json::object{{"paths", std::move(paths)}});
  }
  std::string gv;
  for (std::size_t i = 2; i < segs.size(); ++i) gv += (i > 2 ? "/" : "") + segs[i];
  auto it = by_gv.find(gv);
  if (it == by_gv.end()) throw StatusError(404, "NotFound", "the server could not find the requested resource");
  json::object paths;
  for (const auto* t : it->second) {
    const std::string base = "/" + gv + (t->namespaced ? "/namespaces/{namespace}/" : "/") + t->resource + "/{name}";
    json::array params{
        json::object{{"name", "dryRun"}, {"in", "query"}, {"schema", json::object{{"type", "string"}}}},
        json::object{{"name", "fieldManager"}, {"in", "query"}, {"schema", json::object{{"type", "string"}}}},
        json::object{{"name", "fieldValidation"}, {"in", "query"}, {"schema", json::object{{"type", "string"}}}},
        json::object{{"name", "force"}, {"in", "query"}, {"schema", json::object{{"type", "boolean"}}}}};
    json::object gvk{{"group", t->group}, {"version", t->version}, {"kind", t->kind}};
    paths[base] = json::object{{"patch", json::object{{"operationId", "patch" + t->kind},
                                                      {"parameters", std::move(params)},
                                                      {"x-kubernetes-action", "patch"},
                                                      {"x-kubernetes-group-version-kind", std::move(gvk)}}}};
  }
  // The kinds' schemas: Kubernetes' own for the built-in group versions (embedded/schema.hpp);
  // a custom resource's from its CRD (openAPIV3Schema, ResourceType::schema), named as the API server names it
  // (the group reversed, the version, the kind: org.kubeflow.v1.TFJob).
  json::object schemas;
  const ResourceType& first = *it->second.front();
  if (const json::object* builtin = schema::components(first.group, first.version)) schemas = *builtin;
  for (const auto* t : it->second) {
    if (is_builtin_group(t->group)) continue;
    const json::object* openapi = t->schema ? t->schema->root.get() : nullptr;
    // A kind without a schema is published as an object that keeps every field.
    static const json::object kOpen{{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
    if (!openapi) openapi = &kOpen;
    std::string name;
    for (std::string_view g = t->group; !g.empty();) {
      const auto dot = g.rfind('.');
      name += std::string(dot == std::string_view::npos ? g : g.substr(dot + 1)) + ".";
      g = dot == std::string_view::npos ? std::string_view{} : g.substr(0, dot);
    }
    json::object s = *openapi;
    s["x-kubernetes-group-version-kind"] =
        json::array{json::object{{"group", t->group}, {"kind", t->kind}, {"version", t->version}}};
    schemas[name + t->version + "." + t->kind] = std::move(s);
  }
  return json_response(200, json::object{{"openapi", "3.0.0"},
                                         {"info", json::object{{"title", "Kubernetes"}, {"version", version}}},
                                         {"paths", std::move(paths)},
                                         {"components", json::object{{"schemas", std::move(schemas)}}}});
}

// ---- responses -----------------------------------------------------------------------------------

namespace {

std::vector<std::string> spec_replicas_path(const ResourceType& t) {
  return t.schema ? crd::split_path(t.schema->spec_replicas_path) : std::vector<std::string>{"spec", "replicas"};
}

}  // namespace

json::object scale_of(const ResourceType& t, const json::object& obj, bool to_patch) {
  // autoscaling/v1 Scale: status.selector is the label selector in text form (the apps registries'
  // scaleFromDeployment etc.: LabelSelectorAsSelector(spec.selector).String(); a custom
  // resource's scaleFromCustomResource: the string at labelSelectorPath).
  std::string selector;
  std::int64_t spec_replicas = 0, status_replicas = 0;
  auto int_at = [&](const std::vector<std::string>& path, std::int64_t& out) {
    const json::value* v = jpath::value_at(obj, path);
    if (v && v->is_int64()) out = v->as_int64();
    return v != nullptr;
  };
  const bool found = int_at(spec_replicas_path(t), spec_replicas);
  if (t.schema) {
    int_at(crd::split_path(t.schema->status_replicas_path), status_replicas);
    if (const json::value* s = jpath::value_at(obj, crd::split_path(t.schema->label_selector_path));
        s && s->is_string())
      selector = s->as_string();
    if (!found && to_patch) spec_replicas = std::numeric_limits<std::int32_t>::min();
  } else {
    if (const auto* s = obj.if_contains("spec"); s && s->is_object())
      selector = label_selector_string(s->as_object().if_contains("selector")).value_or("");
    int_at({"status", "replicas"}, status_replicas);
  }
  json::object md;
  for (const char* k : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"})
    if (const auto v = meta(obj, k); !v.empty()) md[k] = v;
  return {{"kind", "Scale"},
          {"apiVersion", "autoscaling/v1"},
          {"metadata", std::move(md)},
          // ScaleSpec.replicas and ScaleStatus.selector have omitempty.
          {"spec", spec_replicas ? json::object{{"replicas", spec_replicas}} : json::object{}},
          {"status", selector.empty() ? json::object{{"replicas", status_replicas}}
                                      : json::object{{"replicas", status_replicas}, {"selector", selector}}}};
}

json::object scaled(const ResourceType& t, const json::object& cur, const json::object& scale,
                    const std::string& manager) {
  const std::string name = meta(cur, "name");
  std::int64_t replicas = 0;
  if (const auto* s = scale.if_contains("spec"); s && s->is_object())
    if (const auto* rep = s->as_object().if_contains("replicas"); rep && rep->is_int64()) {
      if (!t.schema) validate_scale(name, *rep);  // (a custom resource's validator checks its path)
      replicas = rep->as_int64();
    }
  if (t.schema && replicas == std::numeric_limits<std::int32_t>::min())
    throw StatusError::bad_request(
        fmt::format("the spec replicas field \"{}\" cannot be empty", t.schema->spec_replicas_path));
  // unstructured.SetNestedField: the levels that are missing (or no maps) become maps.
  json::object out = cur;
  const auto path = spec_replicas_path(t);
  json::object* o = &out;
  for (std::size_t i = 0; i + 1 < path.size(); ++i) o = &util::ensure_object(*o, path[i]);
  (*o)[path.back()] = replicas;
  track_scale(cur, out, t, manager, path);
  return out;
}

bool wants_table(const Request& r) { return r.accept.find("as=Table") != std::string::npos; }

IncludeObject include_object(const Request& r) {
  const auto v = q(r, "includeObject", "Metadata");
  if (v == "None") return IncludeObject::None;
  if (v == "Object") return IncludeObject::Object;
  return IncludeObject::Metadata;
}

json::object Call::as_served(const json::object& o) const { return event_view ? core_event_to_v1(o) : o; }
json::object Call::as_stored(const json::object& o) const { return event_view ? v1_event_to_core(o) : o; }

WriteOptions Call::tracking(std::string manager) const {
  WriteOptions o = wo;
  // The main resource and its status subresource run the fieldmanager on the write (a status
  // write's entry is that subresource's); scale has its own (track_scale), binding and the others
  // none.
  if (!tg.subresource.empty() && tg.subresource != "status") return o;
  o.track_fields = [t = &t, manager = std::move(manager), time = to_rfc3339(now), sub = tg.subresource](
                       const json::object* old, json::object& next) {
    track_update(old, next, *t, manager, time, sub);
  };
  return o;
}

}  // namespace api

using namespace api;

Response status_response(const StatusError& e) {
  Response resp = json_response(e.code(), e.to_status());
  if (e.retry_after_seconds()) resp.headers.emplace_back("Retry-After", std::to_string(*e.retry_after_seconds()));
  return resp;
}

// ---- authorization -------------------------------------------------------------------------------

AccessDecision Api::decide(const AccessAttributes& a) const {
  // The privileged group first (authorizerfactory's system:masters), then the guide's rule, then RBAC.
  if (std::find(a.groups.begin(), a.groups.end(), "system:masters") != a.groups.end()) return {true, ""};
  if (a.resource_request) {
    const bool read = a.verb == "get" || a.verb == "list" || a.verb == "watch";
    if (a.group.empty() && a.resource == "nodes" && a.subresource.empty() && read)
      return {true, ""};  // nodes: visible to all
    if (a.group.empty() && a.resource == "namespaces" && a.subresource.empty() && read && a.name == a.user)
      return {true, ""};
    if (!a.ns.empty() && a.ns == a.user) {
      const ResourceType* t = nullptr;
      for (const auto* x : store_.types())
        if (x->group == a.group && x->resource == a.resource) t = x;
      if (t && t->namespaced) return {true, ""};
    }
  }
  return rbac_authorize(store_, a);
}

// decide()'s guide rule above, stated as the rules a SelfSubjectRulesReview lists for `user` in
// `ns`: nodes and its own namespace object readable, and everything in its own namespace (there,
// only its namespaced kinds are reachable). Change one with the other.
static std::vector<json::object> guide_rules(const std::string& user, std::string_view ns) {
  const auto strings = [](std::initializer_list<std::string_view> xs) {
    json::array a;
    for (const auto x : xs) a.emplace_back(x);
    return a;
  };
  const json::array read = strings({"get", "list", "watch"});
  std::vector<json::object> rules{{{"verbs", read}, {"apiGroups", strings({""})}, {"resources", strings({"nodes"})}},
                                  {{"verbs", read},
                                   {"apiGroups", strings({""})},
                                   {"resources", strings({"namespaces"})},
                                   {"resourceNames", strings({user})}}};
  if (ns == user)
    rules.push_back({{"verbs", strings({"*"})}, {"apiGroups", strings({"*"})}, {"resources", strings({"*"})}});
  return rules;
}

void Api::authorize(const Request& r, std::string_view verb, const ResourceType& t, std::string_view ns,
                    std::string_view name, std::string_view subresource) const {
  AccessAttributes a{r.user,
                     r.groups,
                     std::string(verb),
                     true,
                     t.group,
                     t.resource,
                     std::string(subresource),
                     t.namespaced ? std::string(ns) : std::string(),
                     std::string(name),
                     {}};
  if (decide(a).allowed) return;
  throw StatusError::forbidden(r.user, verb, t, t.namespaced ? ns : std::string_view{}, name, subresource);
}

// staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go, WithImpersonation and
// buildImpersonationRequests: each thing asked for (the user or service account, each group, each
// extra value, the uid) needs the `impersonate` verb on it; the request then runs as that user.
// A service account without Impersonate-Group gets its fixed groups (serviceaccount.MakeGroupNames);
// system:authenticated is added unless system:authenticated or system:unauthenticated is among
// the groups, and system:anonymous gets system:unauthenticated instead.
std::optional<Request> Api::impersonated(const Request& r) const {
  if (r.impersonate_user.empty()) return std::nullopt;  // the rest alone: impersonation_without_user
  const auto check = [&](std::string group, std::string resource, std::string sub, std::string ns,
                         const std::string& name) {
    AccessAttributes a{r.user, r.groups, "impersonate", true, group, resource, sub, ns, name, {}};
    if (decide(a).allowed) return;
    ResourceType t;
    t.group = std::move(group);
    t.resource = std::move(resource);
    throw StatusError::forbidden(r.user, "impersonate", t, ns, name, sub);
  };
  Request out = r;
  out.groups.clear();
  // serviceaccount.SplitUsername: system:serviceaccount:NS:NAME with a DNS-1123 label and subdomain.
  constexpr std::string_view kSA = "system:serviceaccount:";
  const std::string_view user = r.impersonate_user;
  std::string sa_ns, sa_name;
  if (user.starts_with(kSA)) {
    const std::string_view rest = user.substr(kSA.size());
    const auto colon = rest.find(':');
    if (colon != std::string_view::npos && rest.find(':', colon + 1) == std::string_view::npos &&
        gpupool::is_dns1123_label(rest.substr(0, colon)) && gpupool::is_dns1123_subdomain(rest.substr(colon + 1))) {
      sa_ns = rest.substr(0, colon);
      sa_name = rest.substr(colon + 1);
    }
  }
  if (!sa_name.empty()) {
    check("", "serviceaccounts", "", sa_ns, sa_name);
    if (r.impersonate_groups.empty()) out.groups = {"system:serviceaccounts", "system:serviceaccounts:" + sa_ns};
  } else {
    check("", "users", "", "", r.impersonate_user);
  }
  for (const auto& g : r.impersonate_groups) {
    check("", "groups", "", "", g);
    out.groups.push_back(g);
  }
  out.extra.clear();
  for (const auto& [key, values] : r.impersonate_extra)
    for (const auto& v : values) {
      check("authentication.k8s.io", "userextras", key, "", v);
      out.extra[key].push_back(v);
    }
  out.uid = r.impersonate_uid;
  if (!r.impersonate_uid.empty()) check("authentication.k8s.io", "uids", "", "", r.impersonate_uid);
  const auto has = [&](std::string_view g) {
    return std::find(out.groups.begin(), out.groups.end(), g) != out.groups.end();
  };
  if (user != "system:anonymous") {
    if (!has("system:authenticated") && !has("system:unauthenticated")) out.groups.emplace_back("system:authenticated");
  } else if (!has("system:unauthenticated")) {
    out.groups.emplace_back("system:unauthenticated");
  }
  out.user = r.impersonate_user;
  out.credential_id.clear();
  out.impersonate_user.clear();
  out.impersonate_groups.clear();
  out.impersonate_uid.clear();
  out.impersonate_extra.clear();
  return out;
}

// buildImpersonationRequests: groups, extras or a uid without Impersonate-User fail the request
// before anything is authorized, a plain-text 500 (responsewriters.InternalError: "Internal Server
// Error: %q: %v" of the RequestURI and the error, `&<>` escaped) listing the requests as Go prints
// a []v1.ObjectReference (Kind, Namespace, Name, UID, APIVersion, ResourceVersion, FieldPath).
namespace {
std::optional<Response> impersonation_without_user(const Request& r) {
  if (!r.impersonate_user.empty() ||
      (r.impersonate_groups.empty() && r.impersonate_extra.empty() && r.impersonate_uid.empty()))
    return std::nullopt;
  std::vector<std::string> refs;
  for (const auto& g : r.impersonate_groups) refs.push_back(fmt::format("{{Group  {}    }}", g));
  for (const auto& [key, values] : r.impersonate_extra)
    for (const auto& v : values) refs.push_back(fmt::format("{{UserExtra  {}  authentication.k8s.io/v1  {}}}", v, key));
  if (!r.impersonate_uid.empty())
    refs.push_back(fmt::format("{{UID  {}  authentication.k8s.io/v1  }}", r.impersonate_uid));
  std::string text = fmt::format("Internal Server Error: {}: requested [{}] without impersonating a user",
                                 go_quote(r.target.empty() ? r.path : r.target), fmt::join(refs, " "));
  std::string escaped;
  for (char c : text) escaped += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  Response resp;
  resp.status = 500;
  resp.content_type = "text/plain; charset=utf-8";
  resp.headers.emplace_back("X-Content-Type-Options", "nosniff");
  resp.body = escaped + "\n";
  return resp;
}
}  // namespace

// authorization.k8s.io/v1 SelfSubjectAccessReview and SubjectAccessReview
// (pkg/registry/authorization/*): the review comes back with status.allowed (and RBAC's reason),
// never stored. A SubjectAccessReview names its user and groups; the self review uses the caller's.
Response Api::access_review(const Request& r, const ResourceType& t) const {
  json::object review = parse_object(r);
  const json::object* spec = util_object(review, "spec");
  AccessAttributes a;
  if (t.resource == "subjectaccessreviews") {
    a.user = spec ? str(*spec, "user") : "";
    if (const json::value* g = spec ? spec->if_contains("groups") : nullptr; g && g->is_array())
      for (const auto& x : g->as_array())
        if (x.is_string()) a.groups.emplace_back(x.as_string());
  } else {
    a.user = r.user;
    a.groups = r.groups;
  }
  const json::object* ra = spec ? util_object(*spec, "resourceAttributes") : nullptr;
  const json::object* nra = spec ? util_object(*spec, "nonResourceAttributes") : nullptr;
  if (!ra && !nra) {
    throw StatusError::invalid(
        t, "",
        {StatusCause{"FieldValueRequired",
                     "Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                     "spec.resourceAttributes"}});
  }
  if (ra) {
    a.verb = str(*ra, "verb");
    a.group = str(*ra, "group");
    a.resource = str(*ra, "resource");
    a.subresource = str(*ra, "subresource");
    a.ns = str(*ra, "namespace");
    a.name = str(*ra, "name");
  } else {
    a.resource_request = false;
    a.verb = str(*nra, "verb");
    a.path = str(*nra, "path");
  }
  const AccessDecision d = decide(a);
  json::object status{{"allowed", d.allowed}};
  if (!d.reason.empty()) status["reason"] = d.reason;
  json::object out{
      {"kind", t.kind}, {"apiVersion", t.api_version()}, {"metadata", json::object{{"creationTimestamp", nullptr}}}};
  if (spec) out["spec"] = *spec;
  out["status"] = std::move(status);
  return json_response(201, out);
}

// core/v1 ComponentStatus (pkg/registry/core/componentstatus/rest.go, v1.32): no storage, each
// get and list probes the components. Here the scheduler and the controllers run in this process
// and the store is its etcd, so all three answer Healthy "ok" (kube-apiserver lists them in the
// order their probes finish; here in the order a healthy cluster usually shows). A name that is no
// component is the REST's plain error (a 500); a list filters by metadata.name and
// metadata.namespace only (matchesPredicate). The API is deprecated: every answer warns so.
Response Api::component_statuses(const Request& r, const ResourceType& t, const std::string& name) const {
  r.warnings.push_back("v1 ComponentStatus is deprecated in v1.19+");
  const auto status = [](const char* component) {
    return json::object{
        {"metadata", json::object{{"name", component}, {"creationTimestamp", nullptr}}},
        {"conditions", json::array{json::object{{"type", "Healthy"}, {"status", "True"}, {"message", "ok"}}}}};
  };
  const std::vector<const char*> components{"controller-manager", "scheduler", "etcd-0"};
  const auto now = store_.clock().now();
  if (!name.empty()) {
    if (std::find_if(components.begin(), components.end(), [&](const char* c) { return name == c; }) ==
        components.end())
      throw StatusError(500, "", fmt::format("Component not found: {}", name));
    json::object obj = status(name.c_str());
    if (wants_table(r))
      return json_response(200,
                           to_table(t, {std::make_shared<const json::object>(std::move(obj))}, now, include_object(r)));
    obj["kind"] = t.kind;
    obj["apiVersion"] = t.api_version();
    return json_response(200, obj);
  }
  validate_list_options(r, false);
  const LabelSelector labels = LabelSelector::parse(q(r, "labelSelector"));
  const FieldSelector fields = field_selector(t, q(r, "fieldSelector"));
  std::vector<std::shared_ptr<const json::object>> items;
  for (const char* c : components) {
    json::object obj = status(c);
    if (!labels.matches({}) || !fields.matches([&](const std::string& path) {
          return path == "metadata.name" ? std::string(c) : std::string();
        }))
      continue;
    items.push_back(std::make_shared<const json::object>(std::move(obj)));
  }
  if (wants_table(r)) {
    auto table = to_table(t, items, now, include_object(r));
    table["metadata"] = json::object{};
    return json_response(200, table);
  }
  json::array list_items;
  for (const auto& i : items) list_items.push_back(*i);
  return json_response(200, json::object{{"kind", list_kind(t)},
                                         {"apiVersion", t.api_version()},
                                         {"metadata", json::object{}},
                                         {"items", std::move(list_items)}});
}

// authorization.k8s.io/v1 SelfSubjectRulesReview (pkg/registry/authorization/selfsubjectrulesreview):
// the rules of every authorizer decide() asks, in its order, as the union authorizer's RulesFor
// gathers them: system:masters' everything (authorizerfactory's privileged group), the guide's
// rule (its own namespace, nodes, its namespace object), then RBAC's. The answer carries the
// status alone; kubectl breaks the rules down, compacts and sorts them.
Response Api::rules_review(const Request& r, const ResourceType& t) const {
  const json::object review = parse_object(r);
  const json::object* spec = util_object(review, "spec");
  const std::string ns = spec ? str(*spec, "namespace") : "";
  if (ns.empty()) throw StatusError::bad_request("no namespace on request");
  const auto strings = [](std::initializer_list<std::string_view> xs) {
    json::array a;
    for (const auto x : xs) a.emplace_back(x);
    return a;
  };
  std::vector<json::object> rules;
  if (std::find(r.groups.begin(), r.groups.end(), "system:masters") != r.groups.end()) {
    rules.push_back({{"verbs", strings({"*"})}, {"apiGroups", strings({"*"})}, {"resources", strings({"*"})}});
    rules.push_back({{"verbs", strings({"*"})}, {"nonResourceURLs", strings({"*"})}});
  }
  for (auto& rule : guide_rules(r.user, ns)) rules.push_back(std::move(rule));
  for (auto& rule : rbac_rules_for(store_, AccessAttributes{r.user, r.groups, "", true, "", "", "", "", "", ""}, ns))
    rules.push_back(std::move(rule));
  // The RBAC authorizer's conversion: a rule with resources is a ResourceRule, one with URLs a
  // NonResourceRule (a rule with both is both); empty lists are left out.
  json::array resource_rules, non_resource_rules;
  for (const auto& rule : rules) {
    const auto list = [&](std::string_view key) -> const json::array* {
      const json::value* v = rule.if_contains(key);
      return v && v->is_array() && !v->as_array().empty() ? &v->as_array() : nullptr;
    };
    const json::array* verbs = list("verbs");
    if (list("resources")) {
      json::object rr{{"verbs", verbs ? *verbs : json::array{}}};
      for (const char* key : {"apiGroups", "resources", "resourceNames"})
        if (const json::array* v = list(key)) rr[key] = *v;
      resource_rules.push_back(std::move(rr));
    }
    if (const json::array* urls = list("nonResourceURLs"))
      non_resource_rules.push_back(json::object{{"verbs", verbs ? *verbs : json::array{}}, {"nonResourceURLs", *urls}});
  }
  json::object out{{"kind", t.kind},
                   {"apiVersion", t.api_version()},
                   {"metadata", json::object{{"creationTimestamp", nullptr}}},
                   {"spec", json::object{}},
                   {"status", json::object{{"resourceRules", std::move(resource_rules)},
                                           {"nonResourceRules", std::move(non_resource_rules)},
                                           {"incomplete", false}}}};
  return json_response(201, out);
}

// authentication.k8s.io/v1 SelfSubjectReview (pkg/registry/authentication/selfsubjectreview):
// the caller as authentication (and impersonation) made it, whatever the body says; never stored.
Response Api::self_subject_review(const Request& r, const ResourceType& t) const {
  parse_object(r);  // a body that is not an object is refused as any create's
  json::object user{{"username", r.user}};
  if (!r.uid.empty()) user["uid"] = r.uid;
  json::array groups;
  for (const auto& g : r.groups) groups.emplace_back(g);
  if (!groups.empty()) user["groups"] = std::move(groups);
  std::map<std::string, std::vector<std::string>> extra = r.extra;  // (keys sorted, as Go writes a map)
  if (!r.credential_id.empty()) extra["authentication.kubernetes.io/credential-id"] = {r.credential_id};
  if (!extra.empty()) {
    json::object e;
    for (const auto& [k, vs] : extra) {
      json::array a;
      for (const auto& v : vs) a.emplace_back(v);
      e[k] = std::move(a);
    }
    user["extra"] = std::move(e);
  }
  json::object out{{"kind", t.kind},
                   {"apiVersion", t.api_version()},
                   {"metadata", json::object{{"creationTimestamp", to_rfc3339(store_.clock().now())}}},
                   {"status", json::object{{"userInfo", std::move(user)}}}};
  return json_response(201, out);
}

// ---- Api -----------------------------------------------------------------------------------------

Api::Api(Store& store, Options options) : store_(store), options_(std::move(options)) {
  crd_subscription_ = store_.subscribe([this](const WatchEvent& ev) {
    if (ev.type_info->group != "apiextensions.k8s.io" || ev.type_info->resource != "customresourcedefinitions") return;
    auto t = crd::resource_type(*ev.object, ev.object);
    if (!t) return;
    if (ev.type == EventType::Deleted) {
      store_.unregister_type(t->group, t->resource);
      return;
    }
    store_.register_type(*t);
    // Established already (a restored CRD, or this very status write): nothing to do. (A stored
    // CRD's status.conditions is null until then: a nil slice without omitempty.)
    const auto established = [](const json::value* st) {
      const json::value* c = st && st->is_object() ? st->as_object().if_contains("conditions") : nullptr;
      return c && c->is_array() && !c->as_array().empty();
    };
    if (established(ev.object->if_contains("status"))) return;
    const auto name = meta(*ev.object, "name");
    const auto now = to_rfc3339(store_.clock().now());
    try {
      store_.mutate(
          *ev.type_info, "", name,
          [&](json::object& crd) {
            json::array conds{json::object{{"type", "NamesAccepted"},
                                           {"status", "True"},
                                           {"reason", "NoConflicts"},
                                           {"message", "no conflicts found"},
                                           {"lastTransitionTime", now}},
                              json::object{{"type", "Established"},
                                           {"status", "True"},
                                           {"reason", "InitialNamesAccepted"},
                                           {"message", "the initial names have been accepted"},
                                           {"lastTransitionTime", now}}};
            auto& st = crd["status"];
            if (established(&st)) return;
            st = json::object{
                {"conditions", std::move(conds)},
                {"acceptedNames", crd.at("spec").as_object().contains("names") ? crd.at("spec").at("names")
                                                                               : json::value(json::object{})},
                {"storedVersions", json::array{json::value(t->version)}}};
          },
          {}, "status");
    } catch (const StatusError&) {
      // deleted meanwhile
    }
  });
}

Api::~Api() { store_.unsubscribe(crd_subscription_); }

Response Api::handle(const Request& r) const {
  Response resp = handle_unstamped(r);
  // Real API servers send Date (Go's net/http); here it is the cluster's clock, so clients can
  // compute ages against the embedded cluster's (possibly manual) time.
  resp.headers.emplace_back("Date", detail::format_http_date(store_.clock().now()));
  // Each warning once, as `299 - "text"` (k8s.io/apiserver/pkg/warning and
  // apimachinery/pkg/util/net NewWarningHeader: code 299, agent "-", " and \ escaped).
  std::vector<std::string> sent;
  for (const auto& w : r.warnings) {
    if (std::find(sent.begin(), sent.end(), w) != sent.end()) continue;
    sent.push_back(w);
    std::string quoted = "\"";
    for (char c : w) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    resp.headers.emplace_back("Warning", "299 - " + quoted + "\"");
  }
  return resp;
}

Response Api::handle_unstamped(const Request& r) const {
  try {
    return dispatch(r);
  } catch (const StatusError& e) {
    return status_response(e);
  } catch (const ValidationError& e) {
    return status_response(StatusError(422, "Invalid", e.what()));
  } catch (const std::exception& e) {
    return status_response(StatusError(500, "InternalError", fmt::format("Internal error occurred: {}", e.what())));
  }
}

namespace {

/// What kube-apiserver answers for a path under /apis/<group> that no built-in API serves (an
/// unknown group, or a custom resource group's unknown version or resource): its API groups are
/// chained aggregator -> kube-apiserver -> apiextensions-apiserver, and the last one's handler for a
/// CRD it does not have delegates to the not-found handler (apiextensions-apiserver
/// customresource_handler.go ServeHTTP; apiserver/pkg/util/notfoundhandler), which is Go's
/// http.NotFound: status 404, text/plain, "404 page not found", not a Status. Built-in groups
/// answer a NotFound Status instead (checked on kube-apiserver v1.32.13: /apis/apps/v1/nothings is
/// a Status, /apis/kubeflow.org/v1/nothings and /apis/nope.io/v1 are this page).
Response page_not_found() {
  Response resp;
  resp.status = 404;
  resp.content_type = "text/plain; charset=utf-8";
  resp.headers.emplace_back("X-Content-Type-Options", "nosniff");
  resp.body = "404 page not found\n";
  return resp;
}

}  // namespace

Response Api::dispatch(const Request& r) const {
  const auto segs = split_path(r.path);
  if (r.path == "/version" || r.path == "/version/") {
    return json_response(200, json::object{{"major", "1"},
                                           {"minor", "32"},
                                           {"gitVersion", options_.server_version},
                                           {"gitCommit", "0000000000000000000000000000000000000000"},
                                           {"gitTreeState", "clean"},
                                           {"buildDate", "2024-12-11T00:00:00Z"},
                                           {"goVersion", "go1.23.4"},
                                           {"compiler", "gc"},
                                           {"platform", "linux/amd64"}});
  }
  if (r.path == "/healthz" || r.path == "/livez" || r.path == "/readyz") {
    Response resp;
    resp.content_type = "text/plain; charset=utf-8";
    resp.body = "ok";
    return resp;
  }
  if (r.user.empty()) throw StatusError(401, "Unauthorized", "Unauthorized");
  if (auto refused = impersonation_without_user(r)) return *refused;
  if (auto as = impersonated(r)) return dispatch(*as);
  if (segs.empty()) {
    return json_response(200, json::object{{"paths", json::array{"/api", "/api/v1", "/apis", "/version"}}});
  }
  if (segs[0] == "openapi") return openapi(store_, segs, options_.server_version);
  if (segs[0] != "api" && segs[0] != "apis")
    throw StatusError(404, "NotFound", "the server could not find the requested resource");
  // Discovery.
  if (segs.size() == 1) {
    if (segs[0] == "api")
      return json_response(
          200,
          json::object{{"kind", "APIVersions"},
                       {"versions", json::array{"v1"}},
                       {"serverAddressByClientCIDRs",
                        json::array{json::object{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1:443"}}}}});
    return json_response(200, group_list(store_));
  }
  std::string group, version;
  std::size_t i;
  if (segs[0] == "api") {
    version = segs[1];
    i = 2;
    if (version != "v1") throw StatusError(404, "NotFound", "the server could not find the requested resource");
  } else {
    group = segs[1];
    if (segs.size() == 2) {
      auto gl = group_list(store_);
      for (auto& g : gl["groups"].as_array())
        if (g.as_object()["name"] == json::value(group)) {
          json::object out = g.as_object();
          out["kind"] = "APIGroup";
          out["apiVersion"] = "v1";
          return json_response(200, out);
        }
      if (!is_builtin_group(group)) return page_not_found();
      throw StatusError(404, "NotFound", "the server could not find the requested resource");
    }
    version = segs[2];
    i = 3;
  }
  if (segs.size() == i) {
    auto rl = resource_list(store_, group, version, tokens_ != nullptr);
    if (rl["resources"].as_array().empty()) {
      if (!is_builtin_group(group)) return page_not_found();
      throw StatusError(404, "NotFound", "the server could not find the requested resource");
    }
    return json_response(200, rl);
  }
  // Resource paths.
  Target tg;
  std::vector<std::string> rest(segs.begin() + static_cast<std::ptrdiff_t>(i), segs.end());
  if (!rest.empty() && rest[0] == "watch") {
    tg.watch = true;
    rest.erase(rest.begin());
  }
  std::string resource;
  if (rest.size() >= 3 && rest[0] == "namespaces" && group.empty() && rest[2] != "status" && rest[2] != "finalize") {
    tg.ns = rest[1];
    resource = rest[2];
    if (rest.size() > 3) tg.name = rest[3];
    if (rest.size() > 4) tg.subresource = rest[4];
    if (rest.size() > 5) throw StatusError(404, "NotFound", "the server could not find the requested resource");
  } else if (rest.size() >= 3 && rest[0] == "namespaces" && !group.empty()) {
    tg.ns = rest[1];
    resource = rest[2];
    if (rest.size() > 3) tg.name = rest[3];
    if (rest.size() > 4) tg.subresource = rest[4];
    if (rest.size() > 5) throw StatusError(404, "NotFound", "the server could not find the requested resource");
  } else {
    resource = rest[0];
    if (rest.size() > 1) tg.name = rest[1];
    if (rest.size() > 2) tg.subresource = rest[2];
    if (rest.size() > 3) throw StatusError(404, "NotFound", "the server could not find the requested resource");
  }
  tg.type = store_.find_type(group, version, resource);
  if (!tg.type && !group.empty() && !is_builtin_group(group)) return page_not_found();
  if (!tg.type) throw StatusError(404, "NotFound", "the server could not find the requested resource");
  if (is_access_review(*tg.type) || is_rules_review(*tg.type) || is_self_subject_review(*tg.type)) {
    // Authorized as any create (system:basic-user lets system:authenticated create the self
    // reviews; an impersonated system:anonymous or system:unauthenticated caller has no such rule).
    if (r.method == "POST") authorize(r, "create", *tg.type, "", "", "");
    if (r.method != "POST" || !tg.name.empty() || !tg.subresource.empty() || tg.watch)
      throw StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
    if (is_access_review(*tg.type)) return access_review(r, *tg.type);
    return is_rules_review(*tg.type) ? rules_review(r, *tg.type) : self_subject_review(r, *tg.type);
  }
  // events.k8s.io/v1 Events are the core/v1 Events seen through a conversion, one store for both
  // (embedded/events.hpp): `t` is what is stored, `served` what the request names.
  const ResourceType& served = *tg.type;
  const bool event_view = served.group == "events.k8s.io" && served.resource == "events";
  const ResourceType& t = event_view ? store_.type("", "events") : served;
  if (!t.namespaced && !tg.ns.empty())
    throw StatusError(404, "NotFound", "the server could not find the requested resource");
  if (q_true(r, "watch")) tg.watch = true;

  // pods/exec, pods/attach, pods/portforward: connect subresources (registry/core/pod/rest/
  // subresources.go), GET or POST only (ConnectMethods), authorized as get/create.
  if (t.group.empty() && t.resource == "pods" && !tg.name.empty() && connect_ &&
      (tg.subresource == "exec" || tg.subresource == "attach" || tg.subresource == "portforward")) {
    if (r.method != "GET" && r.method != "POST")
      throw StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
    authorize(r, r.method == "GET" ? "get" : "create", served, tg.ns, tg.name, tg.subresource);
    return connect_(r, tg.ns, tg.name, tg.subresource);
  }
  // Verb.
  std::string verb;
  if (r.method == "GET")
    verb = tg.watch ? "watch" : tg.name.empty() ? "list" : "get";
  else if (r.method == "POST")
    verb = "create";
  else if (r.method == "PUT")
    verb = "update";
  else if (r.method == "PATCH")
    verb = "patch";
  else if (r.method == "DELETE")
    verb = tg.name.empty() ? "deletecollection" : "delete";
  else
    throw StatusError(405, "MethodNotAllowed", fmt::format("{} is not supported", r.method));
  authorize(r, verb, served, tg.ns, tg.name, tg.subresource);
  if (tg.subresource.empty()) {
    const json::array& verbs = verbs_for(served);
    if (std::find(verbs.begin(), verbs.end(), json::value(verb)) == verbs.end())
      throw StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
  }
  // A missing event seen through events.k8s.io is `events.events.k8s.io "x" not found`.
  if (event_view && !tg.name.empty() &&
      (verb == "get" || verb == "update" || verb == "delete" ||
       (verb == "patch" && r.content_type.find("apply-patch") == std::string::npos)))
    if (!store_.find(t, tg.ns, tg.name)) throw StatusError::not_found(served, tg.name);
  if (!tg.subresource.empty()) {
    const auto subs = subresources_of(t, tokens_);
    const auto sub =
        std::find_if(subs.begin(), subs.end(), [&](const Subresource& x) { return x.name == tg.subresource; });
    if (sub == subs.end()) throw StatusError(404, "NotFound", "the server could not find the requested resource");
    if (std::find(sub->verbs.begin(), sub->verbs.end(), verb) == sub->verbs.end())
      throw StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
  }
  if (t.group.empty() && t.resource == "componentstatuses") return component_statuses(r, t, tg.name);
  Call c{r, tg, served, t, event_view, store_.clock().now(), verb, {}};
  if (verb == "get") return serve_get(c);
  if (verb == "list") return serve_list(c);
  if (verb == "watch") return serve_watch(c);
  // ---- writes ----
  // apiserver's MaxRequestBodyBytes (3 MiB): a longer write body is refused before it is decoded.
  if (r.body.size() > kMaxRequestBodyBytes)
    throw StatusError(413, "RequestEntityTooLarge",
                      fmt::format("Request entity too large: limit is {}", kMaxRequestBodyBytes));
  // A delete reads its options itself (from its body, or its query: api_delete.cpp).
  if (verb == "delete" || verb == "deletecollection") return serve_delete(c);
  c.wo = write_options(r);
  if (verb == "create") return serve_create(c);
  if (verb == "update") return serve_update(c);
  return serve_patch(c);
}

}  // namespace gpupool::embedded
