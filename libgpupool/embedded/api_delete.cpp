// Api::serve_delete: DELETE of an object or a collection (apiserver
// endpoints/handlers/delete.go).
#include <fmt/format.h>

#include <climits>
#include <set>

#include "common/ascii.hpp"
#include "embedded/api_handlers.hpp"
#include "embedded/protobuf.hpp"
#include "embedded/schema.hpp"
#include "embedded/validation_fields.hpp"

namespace gpupool::embedded {

using namespace api;

namespace {

// A delete's options as handlers/delete.go reads them.
struct DeleteRequest {
  std::optional<std::int64_t> grace;
  std::optional<bool> orphan;
  std::optional<std::string> propagation;
  std::vector<std::string> dry_run;
  std::optional<std::string> uid, resource_version;
};

// An error the handler passes on as it is (not an API status): a 500 with its text.
[[noreturn]] void go_error(std::string message) { throw StatusError(500, "", std::move(message)); }

// The meta internal version scheme (apimachinery meta/internalversion/scheme): DeleteOptions is
// decoded in any version (with CreateOptions, UpdateOptions and the unversioned Status kinds);
// meta.k8s.io/v1 knows the other option types too, none of which converts to DeleteOptions.
void check_delete_options_kind(const json::object& body) {
  static const std::set<std::string, std::less<>> kUnversioned = {"DeleteOptions", "CreateOptions",  "UpdateOptions",
                                                                  "Status",        "APIVersions",    "APIGroupList",
                                                                  "APIGroup",      "APIResourceList"};
  static const std::set<std::string, std::less<>> kMetaV1 = {
      "ListOptions", "GetOptions",   "PatchOptions",          "WatchEvent",
      "Table",       "TableOptions", "PartialObjectMetadata", "PartialObjectMetadataList"};
  std::string api = str(body, "apiVersion"), kind = str(body, "kind");
  if (kind.empty()) kind = "DeleteOptions";  // the handler's default group version and kind
  if (api.empty()) api = "meta.k8s.io/v1";
  if (!kUnversioned.count(kind) && !(api == "meta.k8s.io/v1" && kMetaV1.count(kind)))
    go_error(
        fmt::format("no kind \"{}\" is registered for version \"{}\" in scheme "
                    "\"pkg/apis/meta/internalversion/scheme/register.go:27\"",
                    kind, api));
  if (kind != "DeleteOptions")
    go_error(fmt::format("converting (v1.{}) to (v1.DeleteOptions): unknown conversion", kind));
}

// encoding/json decoding a body into metav1.DeleteOptions: the first UnmarshalTypeError in
// document order (unknown fields are ignored).
DeleteRequest options_from_body(const std::string& text) {
  if (const auto err = go_json_syntax_error(text)) go_error("couldn't get version/kind; json parse error: " + *err);
  const json::value v = parse_body(text);
  if (!v.is_object())
    go_error(
        fmt::format("couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type "
                    "struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string "
                    "\"json:\\\"kind,omitempty\\\"\" }}",
                    go_value_names(v).json));
  const json::object& body = v.as_object();
  check_delete_options_kind(body);
  std::optional<std::string> error;
  const auto misfit = [&](const json::value& value, std::string_view field, std::string_view type) {
    if (error) return;
    const std::string what = value.is_number() && type == "int64" ? "number " + schema::number_text(value)
                                                                  : std::string(go_value_names(value).json);
    error = fmt::format("json: cannot unmarshal {} into Go struct field {} of type {}", what, field, type);
  };
  DeleteRequest d;
  for (const auto& [key, value] : body) {
    if (value.is_null()) continue;
    const std::string_view k = key;
    if (k == "gracePeriodSeconds") {
      if (value.is_int64())
        d.grace = value.as_int64();
      else if (value.is_uint64() && value.as_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
        d.grace = static_cast<std::int64_t>(value.as_uint64());
      else
        misfit(value, "DeleteOptions.gracePeriodSeconds", "int64");
    } else if (k == "orphanDependents" || k == "ignoreStoreReadErrorWithClusterBreakingPotential") {
      if (!value.is_bool())
        misfit(value, fmt::format("DeleteOptions.{}", k), "bool");
      else if (k == "orphanDependents")
        d.orphan = value.as_bool();
    } else if (k == "propagationPolicy") {
      if (value.is_string())
        d.propagation = std::string(value.as_string());
      else
        misfit(value, "DeleteOptions.propagationPolicy", "v1.DeletionPropagation");
    } else if (k == "dryRun") {
      if (!value.is_array()) {
        misfit(value, "DeleteOptions.dryRun", "[]string");
        continue;
      }
      for (const auto& e : value.as_array()) {
        if (e.is_string())
          d.dry_run.emplace_back(e.as_string());
        else if (e.is_null())
          d.dry_run.emplace_back();
        else
          misfit(e, "DeleteOptions.dryRun", "string");
      }
    } else if (k == "preconditions") {
      if (!value.is_object()) {
        misfit(value, "DeleteOptions.preconditions", "v1.Preconditions");
        continue;
      }
      for (const auto& [pk, pv] : value.as_object()) {
        if (pv.is_null() || (pk != "uid" && pk != "resourceVersion")) continue;
        if (!pv.is_string()) {
          misfit(pv, fmt::format("Preconditions.preconditions.{}", std::string_view(pk)),
                 pk == "uid" ? "types.UID" : "string");
          continue;
        }
        (pk == "uid" ? d.uid : d.resource_version) = std::string(pv.as_string());
      }
    }
  }
  if (error) go_error(*error);
  return d;
}

// metainternalversionscheme.ParameterCodec on the query: strconv's errors are 400s.
DeleteRequest options_from_query(const Request& r) {
  DeleteRequest d;
  if (const auto it = r.query.find("gracePeriodSeconds"); it != r.query.end()) {
    std::string err;
    d.grace = go_parse_int(it->second, &err);
    if (!d.grace) throw StatusError::bad_request(err);
  }
  if (const auto it = r.query.find("orphanDependents"); it != r.query.end()) {
    // Convert_Slice_string_To_Pointer_bool: "0" and "false" (any case) are false, all else true.
    const std::string v = ascii::lower(it->second);
    d.orphan = !(v == "0" || v == "false");
  }
  if (const auto it = r.query.find("propagationPolicy"); it != r.query.end()) d.propagation = it->second;
  for (auto [it, end] = r.query.equal_range("dryRun"); it != end; ++it) d.dry_run.push_back(it->second);
  return d;
}

// ValidateDeleteOptions: 422 `DeleteOptions.meta.k8s.io "" is invalid: ...`.
void validate(const DeleteRequest& d) {
  std::vector<StatusCause> causes;
  if (d.orphan && d.propagation)
    causes.push_back({"FieldValueInvalid",
                      fmt::format("Invalid value: {}: orphanDependents and deletionPropagation cannot be both set",
                                  go_quote(*d.propagation)),
                      "propagationPolicy"});
  if (d.propagation && *d.propagation != "Foreground" && *d.propagation != "Background" && *d.propagation != "Orphan")
    causes.push_back({"FieldValueNotSupported",
                      fmt::format("Unsupported value: {}: supported values: \"Foreground\", \"Background\", "
                                  "\"Orphan\", \"nil\"",
                                  go_quote(*d.propagation)),
                      "propagationPolicy"});
  if (std::any_of(d.dry_run.begin(), d.dry_run.end(), [](const std::string& s) { return s != "All"; }))
    causes.push_back({"FieldValueNotSupported",
                      fmt::format("Unsupported value: {}: supported values: \"All\"", fields::go_strings(d.dry_run)),
                      "dryRun"});
  if (!causes.empty()) throw StatusError::invalid_options("DeleteOptions", std::move(causes));
}

// The registries whose Delete answers with the deleted object (ReturnDeletedObject: true in their
// storage.go, v1.32) rather than a Status naming it.
bool returns_deleted_object(const ResourceType& t) {
  static const std::set<std::string, std::less<>> kCore = {
      "pods",           "services",    "serviceaccounts", "namespaces", "persistentvolumes", "persistentvolumeclaims",
      "resourcequotas", "podtemplates"};
  static const std::set<std::string, std::less<>> kStorage = {"storageclasses", "csidrivers", "csinodes",
                                                              "volumeattachments", "volumeattributesclasses"};
  return (t.group.empty() && kCore.count(t.resource)) || (t.group == "storage.k8s.io" && kStorage.count(t.resource)) ||
         t.group == "resource.k8s.io";  // (deviceclasses, resourceclaims, their templates, resourceslices)
}

}  // namespace

Response Api::serve_delete(const Call& c) const {
  const auto& [r, tg, served, t, event_view, now, verb, wo] = c;
  // The options come from the body when there is one — the query is then not read, its dryRun
  // included — else from the query; then they are validated, before the object is looked up.
  // handlers/delete.go DeleteCollection reads its list options (the selectors) first.
  ListOptions lo;
  if (verb == "deletecollection") {
    lo.labels = LabelSelector::parse(q(r, "labelSelector"));
    lo.fields = field_selector(served, q(r, "fieldSelector"));
  }
  // handlers/delete.go decodes the body in the request's content type: a typed client's protobuf
  // DeleteOptions (`kubectl auth reconcile` recreating a binding) as well as JSON.
  const DeleteRequest d = r.body.empty() ? options_from_query(r)
                          : r.content_type.find("protobuf") != std::string::npos
                              ? options_from_body(json::serialize(decode_kubernetes_protobuf_delete_options(r.body)))
                              : options_from_body(r.body);
  validate(d);
  DeleteOptions dopt;
  dopt.dry_run = !d.dry_run.empty();
  if (d.propagation) dopt.propagation = parse_propagation(*d.propagation);
  if (d.orphan) dopt.propagation = *d.orphan ? Propagation::Orphan : Propagation::Background;
  dopt.grace_period = d.grace;
  dopt.precondition_uid = d.uid;
  dopt.precondition_resource_version = d.resource_version;
  // pkg/registry/batch/job/storage: a Job deleted without a policy orphans its pods, and says so.
  if (t.group == "batch" && t.resource == "jobs" && !d.propagation && !d.orphan)
    r.warnings.push_back(
        "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them "
        "or set propagationPolicy=Orphan to suppress this warning");
  if (verb == "deletecollection") {
    auto res = store_.list(t, tg.ns, lo);
    json::array items;
    for (const auto& it : res.items) {
      try {
        // registry.Store.DeleteCollection answers the items it listed, as they were.
        store_.remove(t, meta(*it, "namespace"), meta(*it, "name"), dopt);
        json::object item = c.as_served(json::object(*it));
        if (is_builtin_group(t.group)) {  // a built-in kind's list items carry no kind or apiVersion
          item.erase("kind");
          item.erase("apiVersion");
        }
        items.push_back(std::move(item));
      } catch (const StatusError& e) {
        if (e.code() != 404) throw;
      }
    }
    json::object list_meta{{"resourceVersion", std::to_string(store_.revision())}};
    if (!is_builtin_group(t.group)) list_meta["continue"] = "";  // (an unstructured list's)
    return json_response(200, json::object{{"kind", list_kind(served)},
                                           {"apiVersion", served.api_version()},
                                           {"metadata", std::move(list_meta)},
                                           {"items", std::move(items)}});
  }
  bool deleted = true;
  auto gone_obj = store_.remove(t, tg.ns, tg.name, dopt, &deleted);
  // handlers/delete.go: an object still there (finalizers) comes back as itself, 200 — 202 only
  // when the request set orphanDependents=false; one gone comes back as itself where the registry
  // returns deleted objects, else as a Status naming it.
  if (!deleted) return json_response(d.orphan && !*d.orphan ? 202 : 200, c.as_served(std::move(gone_obj)));
  if (returns_deleted_object(t)) return json_response(200, c.as_served(std::move(gone_obj)));
  json::object details{{"name", tg.name}, {"kind", served.resource}, {"uid", meta(gone_obj, "uid")}};
  if (!served.group.empty()) details["group"] = served.group;
  return json_response(200, json::object{{"kind", "Status"},
                                         {"apiVersion", "v1"},
                                         {"metadata", json::object{}},
                                         {"status", "Success"},
                                         {"details", std::move(details)}});
}

}  // namespace gpupool::embedded
