#include "embedded/apply.hpp"

#include "embedded/schema.hpp"

#include <algorithm>
#include <optional>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"
#include "embedded/crd_schema.hpp"
#include "embedded/patch.hpp"
#include "embedded/store.hpp"
#include "embedded/typecheck.hpp"

namespace gpupool::embedded {

namespace {

using Path = std::vector<std::string>;  // fieldsV1 keys: "f:spec", "k:{\"name\":\"c\"}", "v:\"x\""

bool typed(const ResourceType& t) {
  // Built-in kinds have an OpenAPI schema (keyed lists); custom resources their structural one.
  return !t.schema && is_builtin_group(t.group);
}

std::string last_segment(const std::string& dotted) {
  const auto dot = dotted.rfind('.');
  return dot == std::string::npos ? dotted : dotted.substr(dot + 1);
}

// Structs and maps marked atomic in the kind's schema (x-kubernetes-map-type: every LabelSelector
// and OwnerReference, a Service's selector map, a pod spec's nodeSelector, an Ingress backend's
// port, ...), and a ControllerRevision's data (a RawExtension: an untyped value, owned whole).
bool atomic_struct(const std::string& dotted, const ResourceType& t) {
  if (t.group == "apps" && t.resource == "controllerrevisions") return dotted == "data";
  if (t.schema) return crd::atomic_map(*t.schema, dotted);
  return typed(t) && schema::atomic_map(t.group, t.version, t.kind, dotted);
}

// The key fields of an associative list (none for atomic lists, "$primitive" for sets), as
// structured-merge-diff reads the kind's schema (x-kubernetes-list-type and -list-map-keys, else
// the patch strategy and merge key); where the schema has no such list, the patch merge keys.
std::vector<std::string> list_keys(const ResourceType& t, const std::string& dotted) {
  if (t.schema) return crd::list_keys(*t.schema, dotted);
  if (!typed(t)) return {};
  if (const auto lt = schema::list_type(t.group, t.version, t.kind, dotted)) {
    if (lt->kind == schema::ListType::Kind::Map) return lt->keys;
    if (lt->kind == schema::ListType::Kind::Set) return {"$primitive"};
    return {};
  }
  const auto last = last_segment(dotted);
  if (last == "ports") {
    if (dotted == "spec.ports") return {"port", "protocol"};  // ServiceSpec.Ports
    return {"containerPort", "protocol"};                     // Container.Ports
  }
  const std::string key = merge_key(t.kind, dotted);
  if (key.empty()) return {};
  return {key};
}

std::string key_json(const json::object& item, const std::vector<std::string>& keys) {
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  json::object k;
  for (const auto& name : sorted) {
    if (const auto* v = item.if_contains(name))
      k[name] = *v;
    else if (name == "protocol")
      k[name] = "TCP";  // defaulted
  }
  return json::serialize(k);
}

bool item_matches(const json::value& item, const json::object& key) {
  if (!item.is_object()) return false;
  for (const auto& [k, v] : key) {
    const auto* iv = item.as_object().if_contains(k);
    if (iv ? *iv != v : !(k == "protocol" && v == "TCP")) return false;
  }
  return true;
}

json::object set_of_object(const json::object& o, const std::string& dotted, const ResourceType& t, bool update);

// The field set of a value. `update`: the set an Update compares (structured-merge-diff's
// compare): every granular map, struct and associative list is a member itself ("."), so one that
// a write adds is owned by its writer; track_update keeps only what changed. Otherwise the set of
// an applied configuration (structured-merge-diff's ToFieldSet), where a map or struct is no
// member of its own: `labels: {app: x}` applied is {"f:labels": {"f:app": {}}}, as kube-apiserver
// records it.
json::object set_of_value(const json::value& v, const std::string& dotted, const ResourceType& t, bool update = false) {
  if (v.is_object()) {
    if (atomic_struct(dotted, t)) return {};
    // An empty map or struct is no leaf: an Update that empties it changed its members, not it
    // (structured-merge-diff's Compare adds a path only where the old value had none).
    if (v.as_object().empty()) return update ? json::object{{".", json::object{}}} : json::object{};
    json::object s = set_of_object(v.as_object(), dotted, t, update);
    if (update) s["."] = json::object{};
    return s;
  }
  if (v.is_array()) {
    const auto keys = list_keys(t, dotted);
    if (keys.empty() || v.as_array().empty()) return {};
    json::object s;
    for (const auto& item : v.as_array()) {
      if (keys[0] == "$primitive") {
        s["v:" + json::serialize(item)] = json::object{};
      } else if (dotted == "metadata.ownerReferences" && item.is_object()) {
        s["k:" + key_json(item.as_object(), keys)] = json::object{};  // OwnerReference: +structType=atomic
      } else if (item.is_object()) {
        json::object is = set_of_object(item.as_object(), dotted, t, update);
        is["."] = json::object{};
        s["k:" + key_json(item.as_object(), keys)] = std::move(is);
      }
    }
    if (update) s["."] = json::object{};
    return s;
  }
  return {};
}

json::object set_of_object(const json::object& o, const std::string& dotted, const ResourceType& t,
                           bool update = false) {
  json::object out;
  for (const auto& [k, child] : o) {
    const std::string path = dotted.empty() ? std::string(k) : dotted + "." + std::string(k);
    out["f:" + std::string(k)] = set_of_value(child, path, t, update);
  }
  return out;
}

// Every member of a set (leaves, and nodes marked ".").
void members(const json::object& s, Path& prefix, std::vector<Path>& out) {
  for (const auto& [k, v] : s) {
    if (k == "." || !v.is_object()) continue;
    prefix.emplace_back(k);
    const auto& child = v.as_object();
    if (child.empty() || child.contains(".")) out.push_back(prefix);
    members(child, prefix, out);
    prefix.pop_back();
  }
}
std::vector<Path> members(const json::object& s) {
  std::vector<Path> out;
  Path prefix;
  members(s, prefix, out);
  return out;
}

const json::object* node_at(const json::object& s, const Path& p) {
  const json::object* cur = &s;
  for (const auto& e : p) {
    const auto* v = cur->if_contains(e);
    if (!v || !v->is_object()) return nullptr;
    cur = &v->as_object();
  }
  return cur;
}
bool contains(const json::object& s, const Path& p) {
  const auto* n = node_at(s, p);
  return n && (n->empty() || n->contains("."));
}
bool is_leaf(const json::object& s, const Path& p) {
  const auto* n = node_at(s, p);
  return n && n->empty();
}

void remove_member(json::object& s, const Path& p, std::size_t i = 0) {
  auto* v = s.if_contains(p[i]);
  if (!v || !v->is_object()) return;
  auto& n = v->as_object();
  if (i + 1 == p.size()) {
    if (!n.empty()) {
      n.erase(".");
      if (!n.empty()) return;  // still the parent of other members
    }
    s.erase(p[i]);
    return;
  }
  remove_member(n, p, i + 1);
  if (n.empty()) s.erase(p[i]);
}

void add_member(json::object& s, const Path& p, bool marked) {
  json::object* cur = &s;
  for (const auto& e : p) {
    auto& v = (*cur)[e];
    if (!v.is_object()) v = json::object{};
    cur = &v.as_object();
  }
  if (marked) (*cur)["."] = json::object{};
}

// The value a path names in an object, or null.
const json::value* value_at(const json::value& root, const Path& p) {
  const json::value* cur = &root;
  for (const auto& e : p) {
    const std::string_view body = std::string_view(e).substr(2);
    if (e[0] == 'f') {
      cur = cur->is_object() ? cur->as_object().if_contains(body) : nullptr;
    } else if (cur->is_array()) {
      const json::value want = json::parse(body);
      const json::value* found = nullptr;
      for (const auto& item : cur->as_array())
        if (e[0] == 'k' ? item_matches(item, want.as_object()) : item == want) found = &item;
      cur = found;
    } else {
      cur = nullptr;
    }
    if (!cur) return nullptr;
  }
  return cur;
}

void remove_value(json::value& root, const Path& p) {
  if (p.empty()) return;
  json::value* parent = const_cast<json::value*>(value_at(root, Path(p.begin(), p.end() - 1)));
  if (!parent) return;
  const std::string& e = p.back();
  const std::string_view body = std::string_view(e).substr(2);
  if (e[0] == 'f' && parent->is_object()) {
    parent->as_object().erase(body);
  } else if (parent->is_array()) {
    const json::value want = json::parse(body);
    auto& a = parent->as_array();
    a.erase(std::remove_if(a.begin(), a.end(),
                           [&](const json::value& item) {
                             return e[0] == 'k' ? item_matches(item, want.as_object()) : item == want;
                           }),
            a.end());
  }
}

// fieldpath.Path.String(): .spec.replicas, .spec.containers[name="c"].image, .metadata.finalizers[="x"]
std::string path_text(const Path& p) {
  std::string out;
  for (const auto& e : p) {
    const std::string body = e.substr(2);
    if (e[0] == 'f') {
      out += "." + body;
    } else if (e[0] == 'v') {
      out += "[=" + body + "]";
    } else {
      out += "[";
      bool first = true;
      const json::value key = json::parse(body);
      for (const auto& [k, v] : key.as_object()) {
        out += (first ? "" : ",") + std::string(k) + "=" + json::serialize(v);
        first = false;
      }
      out += "]";
    }
  }
  return out;
}

// The fields the field manager ignores (fieldmanager's stripMeta and the status/spec reset).
// The object as the fieldmanager compares it: without the fields no writer owns, and without the
// status a write of the main resource cannot change (kept when `status` is true: a write through
// the status subresource, whose strategy resets everything else).
json::object strip(const json::object& o, const ResourceType& t, bool status = false) {
  json::object out = o;
  out.erase("apiVersion");
  out.erase("kind");
  if (t.has_status && !status) out.erase("status");
  if (auto* md = out.if_contains("metadata"); md && md->is_object()) {
    auto& m = md->as_object();
    for (const char* k : {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                          "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"})
      m.erase(k);
    if (m.empty()) out.erase("metadata");
  }
  return out;
}

json::value merge(const json::value& live, const json::value& cfg, const std::string& dotted, const ResourceType& t) {
  if (cfg.is_object() && live.is_object() && !atomic_struct(dotted, t)) {
    json::object out = live.as_object();
    for (const auto& [k, v] : cfg.as_object()) {
      const std::string path = dotted.empty() ? std::string(k) : dotted + "." + std::string(k);
      const auto* l = out.if_contains(k);
      out[k] = l ? merge(*l, v, path, t) : v;
    }
    return out;
  }
  if (cfg.is_array() && live.is_array()) {
    const auto keys = list_keys(t, dotted);
    if (!keys.empty() && keys[0] == "$primitive") {
      json::array out = live.as_array();
      for (const auto& v : cfg.as_array())
        if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
      return out;
    }
    if (!keys.empty()) {
      json::array out = live.as_array();
      for (const auto& item : cfg.as_array()) {
        if (!item.is_object()) continue;
        const json::value key = json::parse(key_json(item.as_object(), keys));
        auto it = std::find_if(out.begin(), out.end(),
                               [&](const json::value& l) { return item_matches(l, key.as_object()); });
        if (it == out.end())
          out.push_back(item);
        else
          *it = merge(*it, item, dotted, t);
      }
      return out;
    }
  }
  return cfg;
}

json::array managed_fields_of(const json::object& o) {
  if (const auto* md = o.if_contains("metadata"); md && md->is_object())
    if (const auto* mf = md->as_object().if_contains("managedFields"); mf && mf->is_array()) return mf->as_array();
  return {};
}

std::string str(const json::object& o, std::string_view k) {
  const auto* v = o.if_contains(k);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

json::object& fields_of(json::value& entry) {
  auto& e = entry.as_object();
  auto& f = e["fieldsV1"];
  if (!f.is_object()) f = json::object{};
  return f.as_object();
}

// A member without members of its own is written {} (fieldpath's serialization), never {".": {}}.
void collapse_lone_marks(json::object& set) {
  for (auto& [k, v] : set) {
    if (!v.is_object()) continue;
    json::object& child = v.as_object();
    if (child.size() == 1 && child.contains("."))
      child.clear();
    else
      collapse_lone_marks(child);
  }
}

void set_managed_fields(json::object& o, json::array entries) {
  auto& md = o["metadata"];
  if (!md.is_object()) md = json::object{};
  for (auto& e : entries)
    if (e.is_object()) collapse_lone_marks(fields_of(e));
  // An entry that owns nothing is dropped.
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [](json::value& e) { return !e.is_object() || fields_of(e).empty(); }),
                entries.end());
  // fieldmanager's sortEncodedManagedFields: by operation (Apply before Update), time, manager,
  // apiVersion, subresource. (RFC 3339 times in one format compare as strings.)
  auto key = [](const json::value& e) {
    const auto& o = e.as_object();
    return std::tuple{str(o, "operation"), str(o, "time"), str(o, "manager"), str(o, "apiVersion"),
                      str(o, "subresource")};
  };
  std::stable_sort(entries.begin(), entries.end(),
                   [&](const json::value& a, const json::value& b) { return key(a) < key(b); });
  if (entries.empty())
    md.as_object().erase("managedFields");
  else
    md.as_object()["managedFields"] = std::move(entries);
}

// A managedFields entry; `time` empty: none (ScaleHandler's re-added entries), `subresource`
// empty: the main resource's.
json::object entry(const std::string& manager, const char* operation, const ResourceType& t, const std::string& time,
                   json::object fields, std::string_view subresource = {}) {
  json::object e{{"manager", manager}, {"operation", operation}, {"apiVersion", t.api_version()}};
  if (!time.empty()) e["time"] = time;
  e["fieldsType"] = "FieldsV1";
  e["fieldsV1"] = std::move(fields);
  if (!subresource.empty()) e["subresource"] = subresource;
  return e;
}

// BuildManagerIdentifier (managedfields.go): an entry is one manager's by manager, operation,
// subresource and, for an Update, apiVersion.
bool same_manager(const json::object& e, const std::string& manager, std::string_view operation,
                  const std::string& api_version, std::string_view subresource) {
  return str(e, "manager") == manager && str(e, "operation") == operation && str(e, "subresource") == subresource &&
         (operation == "Apply" || str(e, "apiVersion") == api_version);
}

}  // namespace

std::string update_manager(std::string_view field_manager, std::string_view user_agent) {
  // fieldmanager's managerOrUserAgent / prefixFromUserAgent.
  if (!field_manager.empty()) return std::string(field_manager);
  const auto product = user_agent.substr(0, user_agent.find('/'));
  if (product.empty()) return "unknown";
  return std::string(product.substr(0, 128));
}

namespace {

// Does an associative list below `v` hold an item without its key field? structured-merge-diff
// then fails to make the object's field set ("associative list with keys has an element that
// omits key field"), and the fieldmanager's UpdateNoErrors removes managedFields instead.
bool omits_list_key(const json::value& v, const std::string& dotted, const ResourceType& t) {
  if (v.is_object()) {
    for (const auto& [k, child] : v.as_object())
      if (omits_list_key(child, dotted.empty() ? std::string(k) : dotted + "." + std::string(k), t)) return true;
    return false;
  }
  if (!v.is_array()) return false;
  const auto keys = list_keys(t, dotted);
  const bool associative = !keys.empty() && keys[0] != "$primitive";
  for (const auto& item : v.as_array()) {
    if (associative && !item.is_object()) return true;
    if (associative)
      for (const auto& k : keys)
        if (k != "protocol" && !item.as_object().contains(k)) return true;  // (protocol is defaulted)
    if (omits_list_key(item, dotted, t)) return true;
  }
  return false;
}

// A fieldsV1 set as fieldpath reads it: members ".", "f:...", "k:...", "v:..." or "i:...", each a set.
bool decodable_set(const json::value& set) {
  if (!set.is_object()) return false;
  for (const auto& [k, v] : set.as_object()) {
    const std::string_view key = k;
    if (key != "." && !(key.size() >= 2 && key[1] == ':' && std::string_view("fkvi").find(key[0]) != key.npos))
      return false;
    if (!decodable_set(v)) return false;
  }
  return true;
}

// DecodeManagedFields' checks of every entry (managedfields.go): the operation Apply or Update, an
// apiVersion, fieldsType FieldsV1 and a fieldsV1 fieldpath can read.
bool decodable(const json::array& entries) {
  return std::all_of(entries.begin(), entries.end(), [](const json::value& e) {
    if (!e.is_object()) return false;
    const json::object& o = e.as_object();
    const std::string op = str(o, "operation");
    const json::value* fields = o.if_contains("fieldsV1");
    return (op == "Apply" || op == "Update") && !str(o, "apiVersion").empty() && str(o, "fieldsType") == "FieldsV1" &&
           (!fields || fields->is_null() || decodable_set(*fields));
  });
}

// isResetManagedFields: an empty list (not null), or one entry equal to ManagedFieldsEntry{}.
bool resets(const json::array& entries) {
  if (entries.empty()) return true;
  if (entries.size() != 1 || !entries[0].is_object()) return false;
  return std::all_of(entries[0].as_object().begin(), entries[0].as_object().end(), [](const auto& kv) {
    return kv.value().is_null() || (kv.value().is_string() && kv.value().as_string().empty());
  });
}

// DecodeManagedFields: entries of one manager identity (BuildManagerIdentifier) are one map key,
// the last in the list wins (a scale write can store two, see track_scale).
json::array decoded_entries(json::array entries) {
  json::array out;
  for (auto& e : entries) {
    if (!e.is_object()) continue;
    const json::object& o = e.as_object();
    const std::string op = str(o, "operation");
    auto same = [&](const json::value& x) {
      return x.is_object() &&
             same_manager(x.as_object(), str(o, "manager"), op, str(o, "apiVersion"), str(o, "subresource"));
    };
    if (auto it = std::find_if(out.begin(), out.end(), same); it != out.end())
      *it = std::move(e);
    else
      out.push_back(std::move(e));
  }
  return out;
}

// fieldmanager.go decodeLiveOrNew: the request's managedFields when they decode; else the live
// object's (none when they do not decode either), so a client unaware of managedFields loses none.
// A request that resets them (`[]`, `[{}]`) starts from none: a create, or nullopt for an update,
// which then tracks nothing (skipnonapplied.go: an existing object without managed fields is not
// tracked; only an explicit reset is taken that way, since the embedded controllers write without
// entries of their own, FIDELITY.md item 14).
std::optional<json::array> managed_before(const json::object* old, const json::object& next) {
  const json::object* md = util::object_at(next, {"metadata"});
  const json::value* given = md ? md->if_contains("managedFields") : nullptr;
  if (given && given->is_array()) {
    if (resets(given->as_array())) return old ? std::nullopt : std::optional<json::array>(json::array{});
    if (decodable(given->as_array())) return decoded_entries(given->as_array());
  }
  json::array live = old ? managed_fields_of(*old) : json::array{};
  return decodable(live) ? decoded_entries(std::move(live)) : json::array{};
}

}  // namespace

void track_update(const json::object* old, json::object& next, const ResourceType& t, const std::string& manager,
                  const std::string& time, std::string_view subresource) {
  if (omits_list_key(next, "", t)) {
    if (auto* md = next.if_contains("metadata"); md && md->is_object()) md->as_object().erase("managedFields");
    return;
  }
  // fieldmanager.go Update: a subresource's write keeps the live object's entries whatever the
  // request holds (decodeLiveOrNew's ignoreManagedFieldsFromRequestObject).
  std::optional<json::array> before =
      subresource.empty() || !old
          ? managed_before(old, next)
          : std::optional<json::array>(decodable(managed_fields_of(*old)) ? decoded_entries(managed_fields_of(*old))
                                                                          : json::array{});
  if (!before) {
    if (auto* md = next.if_contains("metadata"); md && md->is_object()) md->as_object().erase("managedFields");
    return;
  }
  json::array entries = std::move(*before);
  // A created object is compared with the kind's zero value, as the fieldmanager compares it with
  // r.New(): the structs that zero value holds (spec, template, strategy, ...) are nobody's.
  const bool status = subresource == "status";
  json::value old_clean = old ? json::value(strip(*old, t, status))
                              : json::value(strip(schema::encoded_zero(t.group, t.version, t.kind), t));
  if (!old_clean.as_object().contains("metadata")) old_clean.as_object()["metadata"] = json::object{};  // always there
  json::value next_clean = strip(next, t, status);
  if (!next_clean.as_object().contains("metadata")) next_clean.as_object()["metadata"] = json::object{};  // the same
  // The fieldmanager reads the typed object as runtime.DefaultUnstructuredConverter writes it:
  // omitempty's empty lists and maps are not there (`hard: {}` is no field of anyone's).
  schema::omit_empty(t.group, t.version, t.kind, old_clean.as_object());
  schema::omit_empty(t.group, t.version, t.kind, next_clean.as_object());
  const json::object next_set = set_of_object(next_clean.as_object(), "", t, true);
  const json::object old_set = set_of_object(old_clean.as_object(), "", t, true);
  std::vector<std::pair<Path, bool>> changed;  // path, marked (".")
  std::vector<Path> gone;
  for (const auto& p : members(next_set)) {
    const json::value* before = value_at(old_clean, p);
    const bool marked = !is_leaf(next_set, p);
    if (!before || (!marked && !util::json_equal(*before, *value_at(next_clean, p)))) changed.emplace_back(p, marked);
  }
  for (const auto& p : members(old_set))
    if (!value_at(next_clean, p)) gone.push_back(p);
  if (changed.empty() && gone.empty()) {
    set_managed_fields(next, std::move(entries));
    return;
  }
  // An Update takes what it changed from everyone; what it removed is nobody's any more.
  json::value* mine = nullptr;
  for (auto& e : entries) {
    if (!e.is_object()) continue;
    auto& fs = fields_of(e);
    for (const auto& [p, marked] : changed) remove_member(fs, p);
    for (const auto& p : gone) remove_member(fs, p);
    if (same_manager(e.as_object(), manager, "Update", t.api_version(), subresource)) mine = &e;
  }
  if (!mine) {
    entries.push_back(entry(manager, "Update", t, time, {}, subresource));
    mine = &entries.back();
  }
  mine->as_object()["time"] = time;
  for (const auto& [p, marked] : changed) add_member(fields_of(*mine), p, marked);
  set_managed_fields(next, std::move(entries));
}

namespace {

constexpr std::string_view kLastApplied = "kubectl.kubernetes.io/last-applied-configuration";

// lastappliedmanager.go allowedConflictsFromLastApplied: the field set of the object's
// last-applied-configuration (of the live object's own apiVersion), less what differs from, or
// is missing in, the live object; nullopt where there is none (or it does not decode).
std::optional<json::object> last_applied_fields(const json::object& live, const ResourceType& t) {
  const json::object* ann = util::object_at(live, {"metadata", "annotations"});
  const json::value* text = ann ? ann->if_contains(kLastApplied) : nullptr;
  if (!text || !text->is_string() || text->as_string().empty()) return std::nullopt;
  boost::system::error_code ec;
  json::value last = json::parse(text->as_string(), ec);
  if (ec || !last.is_object() || str(last.as_object(), "apiVersion") != t.api_version()) return std::nullopt;
  const json::value last_clean = strip(last.as_object(), t);
  const json::value live_clean = strip(live, t);
  const json::object set = set_of_object(last_clean.as_object(), "", t);
  json::object allowed;
  for (const auto& p : members(set)) {
    const json::value* a = value_at(last_clean, p);
    const json::value* b = value_at(live_clean, p);
    if (a && b && (!is_leaf(set, p) || util::json_equal(*a, *b))) add_member(allowed, p, false);
  }
  return allowed;
}

}  // namespace

json::object server_side_apply(const json::object* live, const json::object& config, const ResourceType& t,
                               const std::string& manager, bool force, const std::string& time,
                               std::string_view subresource) {
  // Through the status subresource the config's status is what applies: the status strategy resets
  // the rest (its GetResetFields: spec, and a Deployment's labels, a pod's ownerReferences, ...),
  // so the fieldmanager takes none of it as applied. (Metadata a status strategy would keep, as a
  // Deployment's annotations, is not applied that way here.)
  json::object cfg;
  if (subresource == "status") {
    if (const json::value* st = config.if_contains("status"); st && !st->is_null()) cfg["status"] = *st;
  } else {
    cfg = strip(config, t);
  }
  const json::object applied = set_of_object(cfg, "", t);
  json::array entries = live ? decoded_entries(managed_fields_of(*live)) : json::array{};
  json::value merged;
  if (live) {
    merged = merge(json::value(*live), json::value(cfg), "", t);
  } else {
    merged = config;
    if (t.has_status) merged.as_object().erase("status");
  }
  const json::value before = live ? json::value(*live) : json::value(json::object{});
  auto is_mine = [&](const json::value& e) {
    return e.is_object() && same_manager(e.as_object(), manager, "Apply", t.api_version(), subresource);
  };

  // Conflicts: a field this apply changes that another manager owns.
  struct Conflict {
    std::size_t entry;
    Path path;
  };
  std::vector<Conflict> conflicts;
  const auto applied_members = members(applied);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].is_object() || is_mine(entries[i])) continue;
    const auto& fs = fields_of(entries[i]);
    for (const auto& p : applied_members) {
      if (!is_leaf(applied, p) || !contains(fs, p)) continue;
      const json::value* a = value_at(before, p);
      const json::value* b = value_at(merged, p);
      if ((a && b && util::json_equal(*a, *b)) || (!a && !b)) continue;
      conflicts.push_back({i, p});
    }
  }
  // In fieldpath.Set's iteration order (structured-merge-diff): at each level the paths that end
  // there before the deeper ones, each group in PathElement order (field names, keys, values, indexes).
  std::stable_sort(conflicts.begin(), conflicts.end(), [](const Conflict& x, const Conflict& y) {
    const Path &a = x.path, &b = y.path;
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    if (i == a.size() || i == b.size()) return a.size() < b.size();
    const bool a_leaf = i + 1 == a.size(), b_leaf = i + 1 == b.size();
    if (a_leaf != b_leaf) return a_leaf;
    auto rank = [](const std::string& e) { return e[0] == 'f' ? 0 : e[0] == 'k' ? 1 : e[0] == 'v' ? 2 : 3; };
    if (rank(a[i]) != rank(b[i])) return rank(a[i]) < rank(b[i]);
    return a[i].compare(2, std::string::npos, b[i], 2, std::string::npos) < 0;
  });
  // lastappliedmanager.go: kubectl's server-side apply (manager "kubectl") takes over what its
  // client-side apply set: conflicts on fields whose live value is still the one the
  // last-applied-configuration annotation holds are forced, and only the others are reported.
  std::vector<Conflict> reported = conflicts;
  if (!conflicts.empty() && !force && manager == "kubectl" && live)
    if (const auto allowed = last_applied_fields(*live, t)) {
      std::erase_if(reported, [&](const Conflict& c) { return contains(*allowed, c.path); });
      if (reported.empty()) force = true;
    }
  if (!conflicts.empty() && !force) {
    conflicts = std::move(reported);
    // fieldmanager/internal/conflict.go: NewConflictError, printManager.
    auto who = [&](std::size_t i) {
      const auto& e = entries[i].as_object();
      std::string s = fmt::format("\"{}\"", str(e, "manager"));
      if (const std::string sub = str(e, "subresource"); !sub.empty())
        s += fmt::format(" with subresource \"{}\"", sub);
      if (str(e, "operation") == "Update") s += " using " + str(e, "apiVersion");
      return s;
    };
    std::vector<StatusCause> causes;
    for (const auto& c : conflicts)
      causes.push_back({"FieldManagerConflict", "conflict with " + who(c.entry), path_text(c.path)});
    std::string message;
    if (conflicts.size() == 1) {
      message = fmt::format("Apply failed with 1 conflict: conflict with {}: {}", who(conflicts[0].entry),
                            path_text(conflicts[0].path));
    } else {
      std::vector<std::pair<std::string, std::vector<std::string>>> by_manager;
      for (const auto& c : conflicts) {
        const std::string m = who(c.entry);
        auto it = std::find_if(by_manager.begin(), by_manager.end(), [&](const auto& x) { return x.first == m; });
        if (it == by_manager.end()) it = by_manager.insert(by_manager.end(), {m, {}});
        it->second.push_back(path_text(c.path));
      }
      std::sort(by_manager.begin(), by_manager.end());
      std::vector<std::string> lines;
      for (const auto& [m, paths] : by_manager) {
        lines.push_back(fmt::format("conflicts with {}:", m));
        for (const auto& p : paths) lines.push_back("- " + p);
      }
      message = fmt::format("Apply failed with {} conflicts: {}", conflicts.size(), fmt::join(lines, "\n"));
    }
    throw StatusError(409, "Conflict", message, "", "", "", std::move(causes));
  }
  for (const auto& c : conflicts) remove_member(fields_of(entries[c.entry]), c.path);  // force: taken

  // Fields this manager applied before and applies no more go, unless someone else has a say
  // (structured-merge-diff merge/update.go prune: everything last applied is removed, then
  // addBackOwnedItems puts back what any manager owns, the new config included, a field being
  // owned where an owned path lies below it — EnsureNamedFieldsAreMembers. A map applied member
  // by member (`data: {k: v}`) after an entry that owned the map itself keeps the map: kubectl's
  // client-side to server-side apply migration writes exactly such an entry.)
  for (auto& e : entries) {
    if (!is_mine(e)) continue;
    for (const auto& p : members(fields_of(e))) {
      if (contains(applied, p)) continue;
      if (p.back().starts_with("f:") && node_at(applied, p)) continue;
      bool shared = false;
      for (auto& other : entries)
        if (!is_mine(other) && node_at(fields_of(other), p)) shared = true;
      if (!shared) remove_value(merged, p);
    }
  }
  // managedFieldsUpdater.Apply: the entry's time moves only when the apply changed the object;
  // a manager that only co-owns fields keeps its old time, or gets none.
  auto without_fields = [](json::value v) {
    if (auto* md = v.is_object() ? v.as_object().if_contains("metadata") : nullptr; md && md->is_object())
      md->as_object().erase("managedFields");
    return v;
  };
  const bool changed = !live || !util::json_equal(without_fields(merged), without_fields(before));
  bool replaced = false;
  for (auto& e : entries)
    if (is_mine(e)) {
      const std::string old_time = str(e.as_object(), "time");
      e = entry(manager, "Apply", t, changed ? time : old_time, applied, subresource);
      replaced = true;
    }
  if (!replaced) entries.push_back(entry(manager, "Apply", t, changed ? time : std::string(), applied, subresource));
  json::object out = std::move(merged.as_object());
  set_managed_fields(out, std::move(entries));
  // lastappliedupdater.go: an apply by "kubectl" rewrites an existing last-applied-configuration
  // annotation to the applied configuration (without that annotation), as
  // UnstructuredJSONScheme encodes it: json.Marshal's text and a newline.
  if (manager == "kubectl")
    if (const json::object* ann = util::object_at(out, {"metadata", "annotations"})) {
      const json::value* have = ann->if_contains(kLastApplied);
      if (have && have->is_string() && !have->as_string().empty()) {
        json::object applied_config = config;
        if (auto* md = applied_config.if_contains("metadata"); md && md->is_object())
          if (auto* cann = md->as_object().if_contains("annotations"); cann && cann->is_object())
            cann->as_object().erase(kLastApplied);
        const std::string text = go_marshal(applied_config) + "\n";
        out["metadata"].as_object()["annotations"].as_object()[kLastApplied] = text;
      }
    }
  return out;
}

void track_scale(const json::object& old, json::object& next, const ResourceType& t, const std::string& manager,
                 const std::vector<std::string>& replicas_keys) {
  // pkg/registry/apps/*/storage scaleUpdatedObjectInfo with managedfields.ScaleHandler
  // (staging/.../util/managedfields/scalehandler.go): the parent's entries owning spec.replicas
  // are turned into autoscaling/v1 Scale entries (ToSubresource), the write is tracked on the Scale
  // by its manager (an Update of subresource "scale"), and ToParent maps them back. An Update
  // entry's identity holds its apiVersion (BuildManagerIdentifier), which the Scale's entries no
  // longer match, so every Update entry loses spec.replicas and, when the write left it owning the
  // field, gets it back in an entry of its own, without a time (`t[manager]` is looked up under
  // the converted identity); where the entry kept other fields, both are stored and the next
  // decode keeps the later one (decoded_entries). An Apply entry (whose identity has no apiVersion) keeps the field
  // unless the write changed it. The writer owns the field when the write changed it.
  // (skipnonapplied.go also skips tracking a Scale whose converted entries are none.)
  json::array entries = managed_fields_of(old);
  if (!decodable(entries)) return;
  entries = decoded_entries(std::move(entries));
  if (replicas_keys.empty()) return;
  Path replicas;
  for (const auto& k : replicas_keys) replicas.push_back("f:" + k);
  auto replicas_of = [&](const json::object& o) { return jpath::value_at(o, replicas_keys); };
  // The Scale holds an int32 with omitempty: a count of 0 is no field there, so a write to 0
  // removes the field (everyone loses it, the writer gets nothing) and one from 0 adds it.
  auto count = [](const json::value* v) { return v && v->is_int64() ? v->as_int64() : 0; };
  const std::int64_t before = count(replicas_of(old)), after = count(replicas_of(next));
  const bool changed = before != after;
  // The Scale's entries are those owning the field; with none, the write is not tracked at all
  // (skipnonapplied.go: an update of an object without managed fields records nothing), so a
  // replica count no one owns stays no one's.
  // (ToParent still encodes the parent's entries as decoded.)
  if (std::none_of(entries.begin(), entries.end(),
                   [&](json::value& e) { return e.is_object() && contains(fields_of(e), replicas); }))
    return set_managed_fields(next, std::move(entries));
  std::vector<json::object> again;  // entries of the Scale's that come back as entries of their own
  auto replicas_only = [&] {
    json::object fields;
    add_member(fields, replicas, false);
    return fields;
  };
  for (auto& e : entries) {
    if (!e.is_object() || !contains(fields_of(e), replicas)) continue;
    const bool apply = str(e.as_object(), "operation") == "Apply";
    if (apply && !changed) continue;
    if (!apply && !changed)
      again.push_back(
          entry(str(e.as_object(), "manager"), "Update", t, {}, replicas_only(), str(e.as_object(), "subresource")));
    remove_member(fields_of(e), replicas);
    if (fields_of(e).empty()) e = nullptr;  // (dropped below)
  }
  if (changed && after != 0) again.push_back(entry(manager, "Update", t, {}, replicas_only(), "scale"));
  entries.erase(std::remove_if(entries.begin(), entries.end(), [](const json::value& e) { return e.is_null(); }),
                entries.end());
  // An entry that comes back beside one of the same manager that kept other fields is stored as
  // a second entry of that manager; the next decode keeps one of them (decoded_entries).
  for (auto& a : again) entries.push_back(std::move(a));
  set_managed_fields(next, std::move(entries));
}

}  // namespace gpupool::embedded
