#include "embedded/schema.hpp"

#include "common/base64.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "common/builtin_data.hpp"
#include "common/go_text.hpp"
#include "embedded/clock.hpp"
#include "embedded/typecheck.hpp"
#include "gpupool/error.hpp"
#include "gpupool/quantity.hpp"
#include "gpupool/time.hpp"

namespace gpupool::embedded::schema {

namespace json = boost::json;

namespace {

constexpr std::string_view kRef = "#/components/schemas/";

// A schema compiled for decoding: what Go type a JSON value must fit.
struct Node {
  enum class Type {
    Any,
    Object,
    Map,
    Array,
    String,
    Bool,
    Int32,
    Int64,
    Float64,
    Quantity,
    IntOrString,
    Time,
    MicroTime
  } type = Type::Any;
  std::string go_struct;  // Object: the struct's name ("DeploymentSpec")
  std::string go_type;    // as encoding/json prints it: "int32", "v1.DeploymentSpec", "[]v1.Container"
  std::map<std::string, const Node*, std::less<>> fields;  // Object
  const Node* elem = nullptr;                              // Array, Map
  // Array: its element relationship as structured-merge-diff reads it from the OpenAPI
  // extensions (kube-openapi schemaconv getListElementRelationship).
  ListType list;
  // Array: how a strategic merge patch merges it (x-kubernetes-patch-strategy "merge" and
  // -patch-merge-key): "" replaced whole, "$primitive" a set of scalars, else the merge key.
  std::string patch_merge_key;
  // Object, Map: x-kubernetes-map-type "atomic" on its schema (a component's, such as
  // LabelSelector's +structType=atomic, or an inline map's, such as PodSpec.nodeSelector).
  bool atomic = false;
  // Object: the fields whose own property names a map type, overriding their component's
  // (PersistentVolumeSpec.claimRef is "granular", its ObjectReference atomic): true for atomic.
  std::map<std::string, bool, std::less<>> field_map_type;
  // Object: the fields a strategic merge patch replaces whole (x-kubernetes-patch-strategy
  // "replace": a PodDisruptionBudget's spec.selector).
  std::set<std::string, std::less<>> patch_replaced;
  bool quantities = false;             // a Quantity is reachable from here (canonical_quantities walks no other)
  bool empties = false;                // an omitempty list or map is reachable from here (omit_empty walks no other)
  bool nils = false;                   // a list or map kept when empty is reachable from here (nil_empty_collections)
  std::vector<std::string_view> kept;  // Object: its lists and maps kept when empty, its metav1.Times
  // Object: what the Go source says of a field and the OpenAPI document does not (data/gotypes,
  // tests/fidelity/record_gotypes.py): its type as encoding/json names it ("v1.Protocol", not
  // "string") and the zero value omitempty leaves out of the encoded object.
  struct GoField {
    std::string type;
    enum class Zero { Kept, Bool, String, Number, Slice, Map, Null } zero = Zero::Kept;
    int place = 0;         // its position in the struct
    bool pointer = false;  // a pointer (`type` names the element)
  };
  std::map<std::string, GoField, std::less<>> go_fields;
  // Object: the fields in the struct's order (those the Go source does not name last, by name), as
  // runtime.DefaultUnstructuredConverter visits them: its first error is the first field's.
  std::vector<std::pair<std::string_view, const Node*>> declared;
};

// A field of `parent` that is a slice or map without omitempty (and not a pointer): Go writes it
// even when empty, but the protobuf the API server stores built-in kinds in has no empty repeated
// field or map, so it is read back nil (`"rules": null`).
bool kept_collection(const Node& parent, std::string_view field, const Node& child) {
  if (child.type != Node::Type::Array && child.type != Node::Type::Map) return false;
  const auto g = parent.go_fields.find(field);
  return g != parent.go_fields.end() && g->second.zero == Node::GoField::Zero::Kept && !g->second.pointer;
}
// A pointer field without omitempty (data/gotypes "null"): nil encodes as null, so an absent one is
// stored null (a TypedLocalObjectReference's `"apiGroup": null`, an AzureFile volume's
// `"secretNamespace": null`).
bool kept_nil_pointer(const Node& parent, std::string_view field) {
  const auto g = parent.go_fields.find(field);
  return g != parent.go_fields.end() && g->second.zero == Node::GoField::Zero::Null && g->second.pointer;
}
// A metav1.Time or MicroTime field that is no pointer: omitempty does not leave out a struct, and the zero time
// encodes as null (a Job condition's `"lastProbeTime": null`).
// (ObjectMeta's creationTimestamp is the server's to set; templates get theirs null elsewhere.)
bool kept_time(const Node& parent, std::string_view field, const Node& child) {
  if ((child.type != Node::Type::Time && child.type != Node::Type::MicroTime) || field == "creationTimestamp")
    return false;
  const auto g = parent.go_fields.find(field);
  return g != parent.go_fields.end() && (g->second.type == "v1.Time" || g->second.type == "v1.MicroTime") &&
         !g->second.pointer;
}

// Types with their own JSON decoding (UnmarshalJSON), accepted as any JSON value here.
constexpr std::string_view kQuantity = "io.k8s.apimachinery.pkg.api.resource.Quantity";
constexpr std::string_view kTime = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
constexpr std::string_view kMicroTime = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";
constexpr std::string_view kIntOrString = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const std::set<std::string, std::less<>> kCustomDecoded = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
};

// resource.Quantity's UnmarshalJSON parses strings.TrimSpace of its text: blanks around it are not
// part of the quantity (in a body, or in a patched object the converter hands it).
std::string quantity_trim(std::string text) {
  constexpr std::string_view kBlank = " \t\n\v\f\r";
  const auto first = text.find_first_not_of(kBlank);
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(kBlank) - first + 1);
}

// ParseQuantity's error as decoding answers it (ErrFormatWrong, or ErrSuffix).
std::string quantity_error(const ValidationError& e) {
  return e.rule().find("suffix") != std::string::npos
             ? "unable to parse quantity's suffix"
             : "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
}

// x-kubernetes-list-type (atomic, set, map with x-kubernetes-list-map-keys); without it a
// patch strategy "merge" makes an associative list keyed by the patch merge key (a set without
// one); anything else is atomic.
ListType list_relationship(const json::object& s) {
  ListType out;
  auto text = [&](std::string_view k) {
    const json::value* v = s.if_contains(k);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
  };
  if (const std::string lt = text("x-kubernetes-list-type"); !lt.empty()) {
    if (lt == "set") out.kind = ListType::Kind::Set;
    if (lt == "map") {
      out.kind = ListType::Kind::Map;
      if (const json::value* keys = s.if_contains("x-kubernetes-list-map-keys"); keys && keys->is_array())
        for (const auto& k : keys->as_array())
          if (k.is_string()) out.keys.emplace_back(k.as_string());
    }
  } else if (const std::string ps = text("x-kubernetes-patch-strategy"); ps == "merge" || ps == "merge,retainKeys") {
    const std::string key = text("x-kubernetes-patch-merge-key");
    out.kind = key.empty() ? ListType::Kind::Set : ListType::Kind::Map;
    if (!key.empty()) out.keys.push_back(key);
  }
  return out;
}

// One group version's document and its compiled nodes.
struct Doc {
  json::object schemas;
  std::map<std::string, Node*, std::less<>> by_name;
  std::deque<Node> nodes;
  std::map<std::string, const Node*, std::less<>> kinds;
  std::map<std::string, std::string, std::less<>> kind_components;  // kind -> its component's name

  const json::object* schema(std::string_view name) const {
    const auto* v = schemas.if_contains(name);
    return v && v->is_object() ? &v->as_object() : nullptr;
  }

  static std::string_view ref_of(const json::object& s) {
    const json::value* r = s.if_contains("$ref");
    if (!r) {
      // A field that refers to a component is written {"allOf": [{"$ref": ...}], "default": ...}.
      if (const auto* all = s.if_contains("allOf");
          all && all->is_array() && all->as_array().size() == 1 && all->as_array()[0].is_object())
        r = all->as_array()[0].as_object().if_contains("$ref");
    }
    if (!r || !r->is_string()) return {};
    std::string_view ref = r->as_string();
    return ref.starts_with(kRef) ? ref.substr(kRef.size()) : std::string_view{};
  }

  // "io.k8s.api.apps.v1.DeploymentSpec" -> "v1.DeploymentSpec" (Go's package.Type).
  static std::string go_name(std::string_view component) {
    const auto last = component.rfind('.');
    const auto pkg = component.rfind('.', last - 1);
    return std::string(component.substr(pkg + 1));
  }

  const Node* component(std::string_view name) {
    if (auto it = by_name.find(name); it != by_name.end()) return it->second;
    Node& n = nodes.emplace_back();
    by_name.emplace(std::string(name), &n);  // before the fields: schemas may refer to themselves
    const json::object* s = schema(name);
    if (name == kQuantity) n.type = Node::Type::Quantity;
    if (name == kIntOrString) {
      // intstr.IntOrString's UnmarshalJSON: a JSON string, else json.Unmarshal into its int32,
      // whose UnmarshalTypeError the outer decoder words with the field (`... of type int32`).
      n.type = Node::Type::IntOrString;
      n.go_type = "int32";
      return &n;
    }
    if (!s || kCustomDecoded.count(name) || name == kQuantity) return &n;
    if (name == kTime || name == kMicroTime) {
      n.type = name == kTime ? Node::Type::Time : Node::Type::MicroTime;
      n.go_type = "string";  // UnmarshalJSON reads a JSON string first: encoding/json's errors say so
      return &n;
    }
    compile(*s, n);
    if (n.type == Node::Type::Object) {
      n.go_type = go_name(name);
      n.go_struct = n.go_type.substr(n.go_type.find('.') + 1);
      add_go_fields(name, n);
      declare(n);
    }
    return &n;
  }

  // Node::declared: the fields by their place in the Go struct, the others after them by name.
  static void declare(Node& n) {
    n.declared.clear();
    for (const auto& [k, f] : n.fields) n.declared.emplace_back(k, f);
    auto place = [&](std::string_view k) {
      const auto g = n.go_fields.find(k);
      return g == n.go_fields.end() ? std::numeric_limits<int>::max() : g->second.place;
    };
    std::stable_sort(n.declared.begin(), n.declared.end(),
                     [&](const auto& a, const auto& b) { return place(a.first) < place(b.first); });
  }

  // The struct's fields as data/gotypes/fields.json records them from the Go source.
  static void add_go_fields(std::string_view component, Node& n) {
    static const json::object go = [] {
      json::value v = json::parse(detail::builtin_data("gotypes/fields.json"));
      return v.is_object() ? std::move(v.as_object()) : json::object{};
    }();
    const json::value* fields = go.if_contains(component);
    if (!fields || !fields->is_object()) return;
    for (const auto& [k, f] : fields->as_object()) {
      // [type, zero, place] and, for a pointer, "ptr".
      if (!f.is_array() || f.as_array().size() < 3 || f.as_array().size() > 4 || !f.as_array()[0].is_string() ||
          !f.as_array()[1].is_string() || !f.as_array()[2].is_int64())
        continue;
      const std::string_view zero = f.as_array()[1].as_string();
      Node::GoField g{std::string(f.as_array()[0].as_string()), Node::GoField::Zero::Kept,
                      static_cast<int>(f.as_array()[2].as_int64()), f.as_array().size() == 4};
      if (zero == "bool") g.zero = Node::GoField::Zero::Bool;
      if (zero == "string") g.zero = Node::GoField::Zero::String;
      if (zero == "number") g.zero = Node::GoField::Zero::Number;
      if (zero == "slice") g.zero = Node::GoField::Zero::Slice;
      if (zero == "map") g.zero = Node::GoField::Zero::Map;
      if (zero == "null") g.zero = Node::GoField::Zero::Null;
      n.go_fields.emplace(std::string(k), std::move(g));
    }
  }

  const Node* inline_node(const json::object& s) {
    if (const auto ref = ref_of(s); !ref.empty()) return component(ref);
    Node& n = nodes.emplace_back();
    compile(s, n);
    if (n.type == Node::Type::Object) declare(n);
    return &n;
  }

  static const json::value* map_type(const json::object& s) {
    const json::value* m = s.if_contains("x-kubernetes-map-type");
    return m && m->is_string() ? m : nullptr;
  }

  void compile(const json::object& s, Node& n) {
    if (const json::value* m = map_type(s)) n.atomic = *m == "atomic";
    if (s.contains("x-kubernetes-int-or-string") || s.contains("x-kubernetes-preserve-unknown-fields") ||
        s.contains("oneOf") || s.contains("anyOf"))
      return;  // Any
    const json::value* tv = s.if_contains("type");
    const std::string_view type = tv && tv->is_string() ? std::string_view(tv->as_string()) : std::string_view{};
    const json::value* fmtv = s.if_contains("format");
    const std::string_view format =
        fmtv && fmtv->is_string() ? std::string_view(fmtv->as_string()) : std::string_view{};
    if (type == "string") {
      // metav1.Time decodes itself, from a JSON string: any other kind is encoding/json's type
      // error `... of type string` (its text is not checked here).
      n.type = Node::Type::String;
      n.go_type = format == "byte" ? "[]uint8" : "string";
    } else if (type == "boolean") {
      n.type = Node::Type::Bool;
      n.go_type = "bool";
    } else if (type == "integer") {
      n.type = format == "int32" ? Node::Type::Int32 : Node::Type::Int64;
      n.go_type = format == "int32" ? "int32" : "int64";
    } else if (type == "number") {
      n.type = Node::Type::Float64;
      n.go_type = "float64";
    } else if (type == "array") {
      n.list = list_relationship(s);
      if (const json::value* ps = s.if_contains("x-kubernetes-patch-strategy");
          ps && ps->is_string() && std::string_view(ps->as_string()).find("merge") != std::string_view::npos) {
        const json::value* key = s.if_contains("x-kubernetes-patch-merge-key");
        n.patch_merge_key = key && key->is_string() ? std::string(key->as_string()) : "$primitive";
      }
      const json::value* items = s.if_contains("items");
      if (!items || !items->is_object()) return;
      n.elem = inline_node(items->as_object());
      n.type = Node::Type::Array;
      n.go_type = "[]" + n.elem->go_type;
    } else if (type == "object") {
      if (const auto* props = s.if_contains("properties"); props && props->is_object()) {
        n.type = Node::Type::Object;
        for (const auto& [k, v] : props->as_object()) {
          if (!v.is_object()) continue;
          n.fields.emplace(std::string(k), inline_node(v.as_object()));
          if (const json::value* m = map_type(v.as_object()); m && !ref_of(v.as_object()).empty())
            n.field_map_type.emplace(std::string(k), *m == "atomic");
          if (const json::value* ps = v.as_object().if_contains("x-kubernetes-patch-strategy");
              ps && ps->is_string() && ps->as_string() == "replace")
            n.patch_replaced.emplace(k);
        }
      } else if (const auto* add = s.if_contains("additionalProperties"); add && add->is_object()) {
        n.elem = inline_node(add->as_object());
        n.type = Node::Type::Map;
        n.go_type = "map[string]" + n.elem->go_type;
      }
    }
  }
};

struct Registry {
  std::map<std::string, Doc, std::less<>> docs;  // "apps/v1", "v1"
};

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    for (const auto& name : detail::builtin_data_names("openapi")) {
      // "apps_v1" -> group "apps", version "v1"; "core_v1" -> the core group.
      const auto us = name.rfind('_');
      const std::string group = name.substr(0, us) == "core" ? "" : name.substr(0, us);
      const std::string version = name.substr(us + 1);
      const std::string gv = group.empty() ? version : group + "/" + version;
      Doc& d = reg.docs[gv];
      json::value v = json::parse(detail::builtin_data("openapi/" + name + ".json"));
      d.schemas = std::move(v.as_object()["components"].as_object()["schemas"].as_object());
      std::vector<std::pair<std::string, std::string>> roots;  // kind, component
      for (const auto& [cname, s] : d.schemas) {
        const auto* gvks = s.as_object().if_contains("x-kubernetes-group-version-kind");
        if (!gvks || !gvks->is_array()) continue;
        for (const auto& g : gvks->as_array()) {
          const auto& o = g.as_object();
          if (o.at("group").as_string() == group && o.at("version").as_string() == version)
            roots.emplace_back(std::string(o.at("kind").as_string()), std::string(cname));
        }
      }
      for (const auto& [kind, cname] : roots) {
        d.kinds[kind] = d.component(cname);
        d.kind_components[kind] = cname;
      }
      // Which nodes lead to a Quantity (to a fixed point: schemas refer to themselves): an Event,
      // a ConfigMap or a pod's metadata hold none, and canonical_quantities skips them whole.
      for (bool changed = true; changed;) {
        changed = false;
        for (Node& n : d.nodes) {
          if (n.quantities) continue;
          bool q = n.type == Node::Type::Quantity || (n.elem && n.elem->quantities);
          for (const auto& [k, f] : n.fields) q = q || f->quantities;
          if (q) n.quantities = changed = true;
        }
      }
      for (bool changed = true; changed;) {
        changed = false;
        for (Node& n : d.nodes) {
          if (n.empties) continue;
          bool e = n.elem && n.elem->empties;
          for (const auto& [k, f] : n.fields) e = e || f->empties;
          for (const auto& [k, g] : n.go_fields)
            e = e || g.zero == Node::GoField::Zero::Slice || g.zero == Node::GoField::Zero::Map;
          if (e) n.empties = changed = true;
        }
      }
      for (Node& n : d.nodes)
        for (const auto& [k, f] : n.fields)
          if (kept_collection(n, k, *f) || kept_time(n, k, *f) || kept_nil_pointer(n, k)) n.kept.push_back(k);
      for (bool changed = true; changed;) {
        changed = false;
        for (Node& n : d.nodes) {
          if (n.nils) continue;
          bool e = n.elem && n.elem->nils;
          for (const auto& [k, f] : n.fields)
            e = e || f->nils || kept_collection(n, k, *f) || kept_time(n, k, *f) || kept_nil_pointer(n, k);
          if (e) n.nils = changed = true;
        }
      }
    }
    return reg;
  }();
  return r;
}

const Node* root(std::string_view group, std::string_view version, std::string_view kind) {
  const auto& docs = registry().docs;
  const std::string gv = group.empty() ? std::string(version) : fmt::format("{}/{}", group, version);
  auto d = docs.find(gv);
  if (d == docs.end()) return nullptr;
  auto k = d->second.kinds.find(kind);
  return k == d->second.kinds.end() ? nullptr : k->second;
}

}  // namespace

namespace {

// The node at `dotted` (field names without indexes) below `n`, or null.
const Node* node_at(const Node* n, std::string_view dotted) {
  while (n && !dotted.empty()) {
    const auto dot = dotted.find('.');
    const std::string_view seg = dotted.substr(0, dot);
    dotted = dot == std::string_view::npos ? std::string_view{} : dotted.substr(dot + 1);
    while (n && n->type == Node::Type::Array) n = n->elem;  // (a dotted path names no index)
    if (!n) return nullptr;
    if (n->type == Node::Type::Map) {
      n = n->elem;
    } else if (n->type == Node::Type::Object) {
      const auto it = n->fields.find(seg);
      n = it == n->fields.end() ? nullptr : it->second;
    } else {
      return nullptr;
    }
  }
  return n;
}

}  // namespace

std::optional<ListType> list_type(std::string_view group, std::string_view version, std::string_view kind,
                                  std::string_view dotted) {
  const Node* n = node_at(root(group, version, kind), dotted);
  if (!n || n->type != Node::Type::Array) return std::nullopt;
  return n->list;
}

bool atomic_map(std::string_view group, std::string_view version, std::string_view kind, std::string_view dotted) {
  const auto dot = dotted.rfind('.');
  const Node* parent = dot == std::string_view::npos ? root(group, version, kind)
                                                     : node_at(root(group, version, kind), dotted.substr(0, dot));
  const std::string_view field = dot == std::string_view::npos ? dotted : dotted.substr(dot + 1);
  while (parent && (parent->type == Node::Type::Array || parent->type == Node::Type::Map)) parent = parent->elem;
  if (!parent || parent->type != Node::Type::Object) return false;
  if (const auto o = parent->field_map_type.find(field); o != parent->field_map_type.end()) return o->second;
  const auto f = parent->fields.find(field);
  return f != parent->fields.end() && f->second && f->second->atomic;
}

std::optional<std::string> patch_merge_key(std::string_view kind, std::string_view dotted) {
  // The built-in kinds' names are unique but Event's (core/v1 and events.k8s.io/v1, whose lists
  // merge alike); the first group version that has the kind answers.
  for (const auto& [gv, doc] : registry().docs) {
    const auto k = doc.kinds.find(kind);
    if (k == doc.kinds.end()) continue;
    const Node* n = node_at(k->second, dotted);
    if (!n || n->type != Node::Type::Array) return std::nullopt;
    return n->patch_merge_key;
  }
  return std::nullopt;
}

bool patch_replaces(std::string_view kind, std::string_view dotted) {
  const auto dot = dotted.rfind('.');
  const std::string_view parent = dot == std::string_view::npos ? std::string_view{} : dotted.substr(0, dot);
  const std::string_view field = dot == std::string_view::npos ? dotted : dotted.substr(dot + 1);
  for (const auto& [gv, doc] : registry().docs) {  // (as patch_merge_key: the first that has the kind)
    const auto k = doc.kinds.find(kind);
    if (k == doc.kinds.end()) continue;
    const Node* n = node_at(k->second, parent);
    while (n && n->type == Node::Type::Array) n = n->elem;
    return n && n->type == Node::Type::Object && n->patch_replaced.contains(field);
  }
  return false;
}

namespace {

// The JSON kind as encoding/json names it in UnmarshalTypeError.Value; for a number that does
// not fit an integer type, "number <literal>".
std::string json_kind(const json::value& v) { return std::string(go_value_names(v).json); }

// encoding/base64 StdEncoding.Decode on a []byte field's JSON string (encoding/json literalStore):
// the offset its CorruptInputError names, or nullopt when the text decodes. Quantum by quantum as
// decodeQuantum reads them: CR and LF skipped, '=' only as the padding of a quantum's last one or
// two characters and then only at the end, a quantum cut short at the end an error at its start.
std::optional<std::size_t> base64_error_offset(std::string_view src) {
  const auto b64 = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
  };
  const auto newline = [](char c) { return c == '\n' || c == '\r'; };
  std::size_t si = 0;
  while (si < src.size()) {
    for (int j = 0; j < 4; ++j) {
      if (si == src.size()) {
        if (j == 0) return std::nullopt;
        return si - static_cast<std::size_t>(j);
      }
      const char in = src[si++];
      if (b64(in)) continue;
      if (newline(in)) {
        --j;
        continue;
      }
      if (in != '=' || j < 2) return si - 1;
      if (j == 2) {  // "==" expected: the second '=' after any newlines
        while (si < src.size() && newline(src[si])) ++si;
        if (si == src.size()) return src.size();
        if (src[si] != '=') return si - 1;
        ++si;
      }
      while (si < src.size() && newline(src[si])) ++si;
      if (si < src.size()) return si;  // trailing garbage
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// Does `v` fit node `n`'s type? nullopt when it does, else UnmarshalTypeError.Value.
std::optional<std::string> misfit(const json::value& v, const Node& n) {
  if (v.is_null()) return std::nullopt;  // null leaves a Go field at its zero value
  switch (n.type) {
    case Node::Type::Any:
    case Node::Type::Quantity:
      return std::nullopt;
    case Node::Type::String:
    case Node::Type::Time:
    case Node::Type::MicroTime:
      return v.is_string() ? std::nullopt : std::optional(json_kind(v));
    case Node::Type::Bool:
      return v.is_bool() ? std::nullopt : std::optional(json_kind(v));
    case Node::Type::Object:
    case Node::Type::Map:
      return v.is_object() ? std::nullopt : std::optional(json_kind(v));
    case Node::Type::Array:
      return v.is_array() ? std::nullopt : std::optional(json_kind(v));
    case Node::Type::Float64:
      return v.is_number() ? std::nullopt : std::optional(json_kind(v));
    case Node::Type::IntOrString:
      if (v.is_string()) return std::nullopt;
      [[fallthrough]];
    case Node::Type::Int32:
    case Node::Type::Int64: {
      if (!v.is_number()) return json_kind(v);
      const bool i32 = n.type != Node::Type::Int64;
      const std::int64_t lo = i32 ? INT32_MIN : INT64_MIN, hi = i32 ? INT32_MAX : INT64_MAX;
      if (v.is_int64() && v.as_int64() >= lo && v.as_int64() <= hi) return std::nullopt;
      // UnmarshalTypeError.Value is the number's literal. The parsed body keeps its value only: a
      // whole number written with a fraction ("1000.0", as Python's json writes a float) is shown so.
      std::string text = number_text(v);
      if (v.is_double() && std::abs(v.as_double()) < 1e16 && text.find_first_of(".e") == std::string::npos)
        text += ".0";
      return "number " + text;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string quantity_text(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_double()) {
    std::string text = fmt::format("{}", v.as_double());
    if (const auto plus = text.find("e+"); plus != std::string::npos) text.erase(plus + 1, 1);
    return text;
  }
  return json::serialize(v);
}

namespace {

// A valid Time or MicroTime as the object is stored: its MarshalJSON writes t.UTC() with layout
// RFC3339 (the fraction dropped) or RFC3339Micro (six digits), whatever offset it was given in.
std::string canonical_time(std::string_view value, bool micro) {
  std::string text(value);
  std::replace(text.begin(), text.end(), ',', '.');  // time.Parse takes either separator
  // In whole seconds (years 1-9999: no nanosecond clock overflows), the fraction kept as text:
  // the offset moves whole minutes only.
  std::string out = gpupool::format_rfc3339(gpupool::parse_rfc3339(text));  // "...:05Z"
  if (!micro) return out;
  const auto dot = text.find('.');
  std::string digits = dot == std::string::npos ? "" : text.substr(dot + 1, 6);
  digits.resize(6, '0');
  out.insert(out.size() - 1, "." + digits);
  return out;
}

// Go's time.Parse of `value` with layout RFC3339 ("2006-01-02T15:04:05Z07:00") or, for
// metav1.MicroTime, RFC3339Micro ("2006-01-02T15:04:05.000000Z07:00"): nullopt when it parses,
// else the error text (`parsing time "x" as "<layout>": cannot parse "x" as "2006"`, `parsing time
// "x": month out of range`, `parsing time "x": extra text: "y"`). Go's general parser (time/format.go
// Parse), element by element, with its digit counts and range checks.
std::optional<std::string> go_time_error(std::string_view value, bool micro) {
  const std::string layout = micro ? "2006-01-02T15:04:05.000000Z07:00" : "2006-01-02T15:04:05Z07:00";
  std::string_view v = value;
  auto cannot = [&](std::string_view elem) {
    return fmt::format("parsing time {} as {}: cannot parse {} as {}", gotext::time_quote(value),
                       gotext::time_quote(layout), gotext::time_quote(v), gotext::time_quote(elem));
  };
  auto range = [&](std::string_view what) {
    return fmt::format("parsing time {}: {} out of range", gotext::time_quote(value), what);
  };
  auto digit = [&](std::size_t i) { return i < v.size() && v[i] >= '0' && v[i] <= '9'; };
  // getnum: one or two digits (fixed: exactly two).
  auto num = [&](bool fixed, int& out) {
    if (!digit(0)) return false;
    if (!digit(1)) {
      if (fixed) return false;
      out = v[0] - '0';
      v.remove_prefix(1);
      return true;
    }
    out = (v[0] - '0') * 10 + (v[1] - '0');
    v.remove_prefix(2);
    return true;
  };
  auto literal = [&](char c) {
    if (v.empty() || v[0] != c) return false;
    v.remove_prefix(1);
    return true;
  };
  if (v.size() < 4 || !digit(0) || !digit(1) || !digit(2) || !digit(3)) return cannot("2006");
  const int year = std::stoi(std::string(v.substr(0, 4)));
  v.remove_prefix(4);
  int month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!literal('-')) return cannot("-");
  if (!num(true, month)) return cannot("01");
  if (month < 1 || month > 12) return range("month");
  if (!literal('-')) return cannot("-");
  if (!num(true, day)) return cannot("02");
  if (day > 31) return range("day");
  if (!literal('T')) return cannot("T");
  if (!num(false, hour)) return cannot("15");
  if (hour > 23) return range("hour");
  if (!literal(':')) return cannot(":");
  if (!num(true, minute)) return cannot("04");
  if (minute > 59) return range("minute");
  if (!literal(':')) return cannot(":");
  if (!num(true, second)) return cannot("05");
  if (second > 59) return range("second");
  if (micro) {
    // stdFracSecond0: exactly six digits after a period or comma.
    if (v.size() < 7 || (v[0] != '.' && v[0] != ',')) return cannot(".000000");
    for (std::size_t i = 1; i < 7; ++i)
      if (!digit(i)) return cannot(".000000");
    v.remove_prefix(7);
  } else if (v.size() >= 2 && (v[0] == '.' || v[0] == ',') && digit(1)) {
    // A fractional second the layout does not mention is taken when parsing.
    std::size_t n = 2;
    while (digit(n)) ++n;
    v.remove_prefix(n);
  }
  // stdISO8601ColonTZ: "Z", or ±hh:mm.
  if (!v.empty() && v[0] == 'Z') {
    v.remove_prefix(1);
  } else {
    if (v.size() < 6 || v[3] != ':') return cannot("Z07:00");
    // An element's error shows the value where the element began (Parse's `hold`).
    const std::string_view tz = v.substr(0, 6), hold = v;
    v.remove_prefix(6);
    auto two = [&](std::size_t i, int& out) {
      if (!(tz[i] >= '0' && tz[i] <= '9' && tz[i + 1] >= '0' && tz[i + 1] <= '9')) return false;
      out = (tz[i] - '0') * 10 + (tz[i + 1] - '0');
      return true;
    };
    int zh = 0, zm = 0;
    const bool ok = two(1, zh) && two(4, zm);
    if (zh > 24) return range("time zone offset hour");
    if (zm > 60) return range("time zone offset minute");
    if (!ok || (tz[0] != '+' && tz[0] != '-')) {
      v = hold;
      return cannot("Z07:00");
    }
  }
  if (!v.empty())
    return fmt::format("parsing time {}: extra text: {}", gotext::time_quote(value), gotext::time_quote(v));
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (day < 1 || day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) return range("day");
  return std::nullopt;
}

struct Walker {
  Decoded& out;
  bool prune;
  std::string path;               // sigs.k8s.io/json's field path, with [i] for elements
  std::string go_path;            // encoding/json's Field: the keys from the root, without indexes
  bool in_resource_list = false;  // walking the values of a map of quantities

  // The fields of an object of struct node `n`, in document order.
  void fields(const Node& n, json::object& o) {
    const std::size_t plen = path.size(), glen = go_path.size();
    std::vector<std::string> unknown;
    for (auto& [k, child] : o) {
      path.resize(plen);
      go_path.resize(glen);
      if (!path.empty()) path += '.';
      path += k;
      auto f = n.fields.find(std::string_view(k));
      if (f == n.fields.end()) {
        out.unknown_fields.push_back(path);
        if (prune) unknown.emplace_back(k);
        continue;
      }
      // null leaves the Go field at its zero value: stored, it is as if absent.
      if (child.is_null()) {
        if (prune) unknown.emplace_back(k);
        continue;
      }
      const auto g = n.go_fields.find(std::string_view(k));
      const Node::GoField* go = g == n.go_fields.end() ? nullptr : &g->second;
      // So does omitempty's zero of a bool, string or number (not behind a pointer): Go's encoder
      // leaves it out, so the stored object has no such field (`hostIPC: false`), and defaulting
      // sees it unset (`restartPolicy: ""`). Empty lists and maps go once the object is valid
      // (omit_empty): validation's messages tell an empty map from none (%#v).
      if (prune && go && go->zero != Node::GoField::Zero::Slice && go->zero != Node::GoField::Zero::Map &&
          omitted_zero(*go, child)) {
        unknown.emplace_back(k);
        continue;
      }
      if (!go_path.empty()) go_path += '.';
      go_path += k;
      walk(*f->second, child, n.go_struct, go ? std::string_view(go->type) : std::string_view{});
    }
    for (const auto& k : unknown) o.erase(k);
    path.resize(plen);
    go_path.resize(glen);
  }

  static bool omitted_zero(const Node::GoField& go, const json::value& v) {
    using Zero = Node::GoField::Zero;
    switch (go.zero) {
      case Zero::Kept:
        return false;
      case Zero::Bool:
        return v.is_bool() && !v.as_bool();
      case Zero::String:
        return v.is_string() && v.as_string().empty();
      case Zero::Number:
        return (v.is_int64() && v.as_int64() == 0) || (v.is_uint64() && v.as_uint64() == 0) ||
               (v.is_double() && v.as_double() == 0 && go.type.starts_with("float"));
      case Zero::Slice:
        return v.is_array() && v.as_array().empty();
      case Zero::Map:
        return v.is_object() && v.as_object().empty();
      case Zero::Null:
        return false;
    }
    return false;
  }

  // What a JSON null decodes to as an element of a list or a value of a map: the type's zero.
  static json::value zero_value(const Node& n) {
    switch (n.type) {
      case Node::Type::Object:
        return json::object{};
      case Node::Type::String:
        return "";
      case Node::Type::Bool:
        return false;
      case Node::Type::Int32:
      case Node::Type::Int64:
        return 0;
      case Node::Type::Float64:
        return 0.0;
      case Node::Type::Quantity:
        return "0";  // the zero Quantity, as Go encodes it
      default:
        return nullptr;
    }
  }

  // The type encoding/json names for the element of a slice or map of Go type `t` ("" if unknown).
  static std::string_view element_type(std::string_view t) {
    if (t.starts_with("[]")) return t.substr(2);
    if (t.starts_with("map[")) {
      int depth = 0;
      for (std::size_t i = 3; i < t.size(); ++i) {
        if (t[i] == '[') ++depth;
        if (t[i] == ']' && --depth == 0) return t.substr(i + 1);
      }
    }
    return {};
  }

  // `v` is the value of a field of Go struct `in_struct`; `go_type` is the Go type the source gives
  // it, when known (the schema's types are the underlying ones: "string" for a v1.Protocol).
  void walk(const Node& n, json::value& v, const std::string& in_struct, std::string_view go_type = {}) {
    if (out.decode_error) return;  // decoding stopped
    if (n.type == Node::Type::Quantity) {
      // resource.Quantity's UnmarshalJSON: null, a string or a bare number, parsed by
      // ParseQuantity; its error stops decoding and is the answer.
      if (v.is_null()) return;
      const std::string written = quantity_text(v);
      const std::string text = quantity_trim(written);
      if (prune && v.is_string() && text != written && !text.empty()) v = text;
      try {
        const Quantity q = Quantity::parse(text);
        // SetDefaults_ResourceList (part of decoding): a ResourceList's value rounded up to
        // thousandths. Otherwise the text stays as written until the object is valid
        // (canonical_quantities): validation's messages show the quantity as Go parsed it.
        if (prune && in_resource_list) {
          const Quantity rounded = q.round_up_milli();
          if (rounded.nano_value() != q.nano_value()) v = rounded.to_string();
        }
      } catch (const ValidationError& e) {
        if (e.rule().find("magnitude too large") != std::string::npos) {  // gpupool's own limit, not Go's
          if (prune && in_resource_list) v = Quantity::canonical(text, true);
        } else {
          out.decode_error = quantity_error(e);
        }
      }
      return;
    }
    if ((n.type == Node::Type::Time || n.type == Node::Type::MicroTime) && v.is_string()) {
      // metav1.Time / MicroTime UnmarshalJSON: time.Parse's error stops decoding.
      if (auto e = go_time_error(v.as_string(), n.type == Node::Type::MicroTime))
        out.decode_error = *e;
      else if (prune)
        v = canonical_time(v.as_string(), n.type == Node::Type::MicroTime);
      return;
    }
    if (n.type == Node::Type::String && n.go_type == "[]uint8" && v.is_array()) {
      // encoding/json decodes a JSON array into a []byte element by element (numbers 0-255, null
      // a zero); encoded again it is base64.
      std::string bytes;
      for (const auto& e : v.as_array()) {
        const bool byte = e.is_null() || (e.is_int64() && e.as_int64() >= 0 && e.as_int64() <= 255) ||
                          (e.is_uint64() && e.as_uint64() <= 255);
        if (!byte) {
          if (!out.type_error)
            out.type_error = fmt::format("json: cannot unmarshal {} into Go struct field {}.{} of type uint8",
                                         e.is_number() ? "number " + number_text(e) : json_kind(e), in_struct, go_path);
          return;
        }
        bytes.push_back(static_cast<char>(e.is_null() ? 0 : e.is_int64() ? e.as_int64() : e.as_uint64()));
      }
      if (prune) v = base64_encode(bytes);
      return;
    }
    if (auto m = misfit(v, n)) {
      // A struct's type name comes from its schema, and so does that of a type decoding itself (as
      // its UnmarshalJSON words it: a Time reads a string, an IntOrString an int32); a named
      // string, number, list or map type's from the Go source ("v1.Protocol").
      const bool own =
          n.type == Node::Type::IntOrString || n.type == Node::Type::Time || n.type == Node::Type::MicroTime;
      const std::string_view type =
          own || n.type == Node::Type::Object || go_type.empty() ? std::string_view(n.go_type) : go_type;
      std::string error =
          fmt::format("json: cannot unmarshal {} into Go struct field {}.{} of type {}", *m, in_struct, go_path, type);
      if (own) {
        // An UnmarshalJSON's error stops decoding and wins over a type error met before it
        // (decodeState.unmarshal returns it, not the saved one), worded with the field.
        out.decode_error = std::move(error);
      } else if (!out.type_error) {
        out.type_error = std::move(error);
        out.misfit_go_type = type;
      }
      return;
    }
    if (n.type == Node::Type::String && n.go_type == "[]uint8" && v.is_string()) {
      // A []byte (Secret data, ConfigMap binaryData): base64, whose error is saved like a type error.
      if (const auto at = base64_error_offset(v.as_string())) {
        if (!out.type_error) out.type_error = fmt::format("illegal base64 data at input byte {}", *at);
      } else if (prune) {
        // Held as the bytes it decodes to (encoding/base64 skips line breaks and ignores the
        // unused bits of the last character), so stored and answered as their canonical encoding:
        // "AAECAW==" is "AAECAQ==".
        std::string text;
        for (char ch : v.as_string())
          if (ch != '\r' && ch != '\n') text += ch;
        if (const auto bytes = base64_decode(text))
          if (std::string canonical = base64_encode(*bytes); canonical != v.as_string()) v = std::move(canonical);
      }
      return;
    }
    if (v.is_null()) return;
    const std::size_t plen = path.size(), glen = go_path.size();
    switch (n.type) {
      case Node::Type::Object:
        fields(n, v.as_object());
        break;
      case Node::Type::Map:
        // map[ResourceName]Quantity: a ResourceList (requests, limits, capacity, hard, ...).
        in_resource_list = n.elem->type == Node::Type::Quantity;
        for (auto& [k, child] : v.as_object()) {
          path.resize(plen);
          path += fmt::format("[{}]", std::string_view(k));
          if (prune && child.is_null()) child = zero_value(*n.elem);
          walk(*n.elem, child, in_struct, element_type(go_type));
        }
        in_resource_list = false;
        break;
      case Node::Type::Array: {
        std::size_t i = 0;
        for (auto& child : v.as_array()) {
          path.resize(plen);
          path += fmt::format("[{}]", i++);
          // A null element decodes to the element type's zero value ({} for a struct, "" for a string).
          if (prune && child.is_null()) child = zero_value(*n.elem);
          walk(*n.elem, child, in_struct, element_type(go_type));
        }
        break;
      }
      default:
        break;
    }
    path.resize(plen);
    go_path.resize(glen);
  }
};

}  // namespace

std::string number_text(const json::value& v) {
  if (v.is_int64()) return std::to_string(v.as_int64());
  if (v.is_uint64()) return std::to_string(v.as_uint64());
  return fmt::format("{}", v.as_double());
}

std::optional<std::string> int32_misfit(const json::value& v) {
  static const Node kInt32 = [] {
    Node n;
    n.type = Node::Type::Int32;
    n.go_type = "int32";
    return n;
  }();
  return misfit(v, kInt32);
}

bool known(std::string_view group, std::string_view version, std::string_view kind) {
  return root(group, version, kind) != nullptr;
}

namespace {

// Every quantity under `v` as Go encodes it (String), or with `by_value` as the text of its value
// alone ("1." and "1" alike), for comparisons that weigh quantities by Cmp.
void canonical(const Node& n, json::value& v, int depth, bool by_value = false) {
  if (depth > 64) return;
  switch (n.type) {
    case Node::Type::Quantity: {
      if (!v.is_string() && !v.is_number()) return;
      const std::string text = quantity_text(v);
      try {
        if (!by_value) {
          v = Quantity::canonical(text);
        } else {  // the value in nano-units
          v = fmt::format("{}", Quantity::parse(quantity_trim(text)).nano_value());
        }
      } catch (const ValidationError&) {
        if (v.is_number()) v = text;  // (decoding refused it already)
      }
      return;
    }
    case Node::Type::Object:
      if (v.is_object() && n.quantities)
        for (auto& [k, child] : v.as_object())
          if (auto f = n.fields.find(std::string_view(k)); f != n.fields.end() && f->second->quantities)
            canonical(*f->second, child, depth + 1, by_value);
      return;
    case Node::Type::Map:
      if (v.is_object() && n.quantities)
        for (auto& [k, child] : v.as_object()) canonical(*n.elem, child, depth + 1, by_value);
      return;
    case Node::Type::Array:
      if (v.is_array() && n.quantities)
        for (auto& child : v.as_array()) canonical(*n.elem, child, depth + 1, by_value);
      return;
    default:
      return;
  }
}

}  // namespace

void canonical_quantities(std::string_view group, std::string_view version, std::string_view kind, json::object& obj) {
  const Node* r = root(group, version, kind);
  if (!r || !r->quantities) return;
  for (auto& [k, child] : obj)
    if (auto f = r->fields.find(std::string_view(k)); f != r->fields.end() && f->second->quantities)
      canonical(*f->second, child, 0);
}

bool quantities_by_value(std::string_view group, std::string_view version, std::string_view kind, json::object& obj) {
  const Node* r = root(group, version, kind);
  if (!r || !r->quantities) return false;
  for (auto& [k, child] : obj)
    if (auto f = r->fields.find(std::string_view(k)); f != r->fields.end() && f->second->quantities)
      canonical(*f->second, child, 0, true);
  return true;
}

namespace {
void drop_empty(const Node& n, json::object& o, int depth);
}  // namespace

void to_stored_form(std::string_view group, std::string_view version, std::string_view kind, json::object& obj) {
  canonical_quantities(group, version, kind, obj);
  omit_empty(group, version, kind, obj);
  nil_empty_collections(group, version, kind, obj);
}

Decoded decode_object_meta(json::object& obj, bool prune) {
  // A custom resource's metadata: schemaobjectmeta.GetObjectMetaWithOptions decodes it with
  // json.Unmarshal into a metav1.ObjectMeta of its own (the core group version's document holds
  // that schema), so a misfit names the field from ObjectMeta ("ObjectMeta.labels"), and Coerce
  // writes it back encoded (omitempty's empty lists and maps gone).
  Decoded out;
  json::value* md = obj.if_contains("metadata");
  if (!md || md->is_null()) return out;
  if (!md->is_object()) {  // UnmarshalTypeError into the struct itself
    const char* what = md->is_array() ? "array" : md->is_string() ? "string" : md->is_bool() ? "bool" : "number";
    out.type_error = fmt::format("json: cannot unmarshal {} into Go value of type v1.ObjectMeta", what);
    return out;
  }
  // Compiled with the core kinds (every one has metadata): looked up, never compiled here.
  const auto& docs = registry().docs;
  auto d = docs.find("v1");
  if (d == docs.end()) return out;
  auto meta = d->second.by_name.find("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  if (meta == d->second.by_name.end()) return out;
  // The metadata went through an unstructured map first: a JSON number is a float64 there, and
  // encoding it again writes an integral one below 1e21 as an integer ("1000.0" decodes into
  // generation's int64).
  std::function<void(json::value&)> integral = [&](json::value& v) {
    if (v.is_double()) {
      const double d = v.as_double();
      if (std::trunc(d) == d && std::fabs(d) < 9.2e18) v = static_cast<std::int64_t>(d);
    } else if (v.is_object()) {
      for (auto& kv : v.as_object()) integral(kv.value());
    } else if (v.is_array()) {
      for (auto& e : v.as_array()) integral(e);
    }
  };
  integral(*md);
  Walker w{out, prune, "metadata", "", false};
  w.fields(*meta->second, md->as_object());
  if (prune && !out.type_error && !out.decode_error) drop_empty(*meta->second, md->as_object(), 0);
  return out;
}

namespace {

// What walk_fields does with a field after `at` has seen it.
enum class Visit { Descend, Done, Erase };

// What walk_fields does on entering an object: nothing.
struct NoEnter {
  void operator()(const Node&, json::object&) const {}
};

// Calls `enter(node, object)` for each object of a struct type the walk enters, then
// `at(parent, key, value, node)` for each of its fields the schema knows, on the way down the
// struct values leading to a field `reach` marks: Descend goes on below it, Done leaves it, Erase
// removes it (once the walk has left its object).
template <class At, class Enter = NoEnter>
void walk_fields(const Node& n, json::object& o, bool Node::*reach, At& at, int depth, const Enter& enter = {}) {
  if (depth > 64) return;
  enter(n, o);
  std::vector<std::string> erase;
  for (auto& [k, child] : o) {
    auto f = n.fields.find(std::string_view(k));
    if (f == n.fields.end()) continue;
    const Node& c = *f->second;
    const Visit v = at(n, std::string_view(k), child, c);
    if (v == Visit::Erase) erase.emplace_back(k);
    if (v != Visit::Descend || !(c.*reach)) continue;
    if (c.type == Node::Type::Object && child.is_object()) {
      walk_fields(c, child.as_object(), reach, at, depth + 1, enter);
    } else if (c.elem && c.elem->type == Node::Type::Object) {
      if (c.type == Node::Type::Array && child.is_array()) {
        for (auto& e : child.as_array())
          if (e.is_object()) walk_fields(*c.elem, e.as_object(), reach, at, depth + 1, enter);
      } else if (c.type == Node::Type::Map && child.is_object()) {
        for (auto& kv : child.as_object())
          if (kv.value().is_object()) walk_fields(*c.elem, kv.value().as_object(), reach, at, depth + 1, enter);
      }
    }
  }
  for (const auto& k : erase) o.erase(k);
}

// Drops the empty lists and maps of omitempty fields under `n` (see omit_empty).
void drop_empty(const Node& n, json::object& o, int depth) {
  auto at = [](const Node& parent, std::string_view k, json::value& v, const Node&) {
    using Zero = Node::GoField::Zero;
    const auto g = parent.go_fields.find(k);
    const bool empty =
        g != parent.go_fields.end() && ((g->second.zero == Zero::Slice && v.is_array() && v.as_array().empty()) ||
                                        (g->second.zero == Zero::Map && v.is_object() && v.as_object().empty()));
    return empty ? Visit::Erase : Visit::Descend;
  };
  walk_fields(n, o, &Node::empties, at, depth);
}

}  // namespace

void omit_empty(std::string_view group, std::string_view version, std::string_view kind, json::object& obj) {
  if (const Node* r = root(group, version, kind); r && r->empties) drop_empty(*r, obj, 0);
}

void nil_empty_collections(std::string_view group, std::string_view version, std::string_view kind, json::object& obj) {
  // The lists and maps of fields kept when empty, absent (on entering their object) or empty, become
  // null; so do absent metav1.Time and MicroTime fields that are no pointers (kept_time).
  auto absent = [](const Node& n, json::object& o) {
    for (const std::string_view k : n.kept)
      if (!o.contains(k)) o[k] = nullptr;
  };
  auto empty = [](const Node& parent, std::string_view k, json::value& v, const Node& node) {
    if (!kept_collection(parent, k, node) ||
        !((v.is_array() && v.as_array().empty()) ||
          (node.type == Node::Type::Map && v.is_object() && v.as_object().empty())))
      return Visit::Descend;
    v = nullptr;
    return Visit::Done;
  };
  if (const Node* r = root(group, version, kind); r && r->nils) walk_fields(*r, obj, &Node::nils, empty, 0, absent);
}

namespace {
void add_zero_structs(std::string_view group, std::string_view version, std::string_view kind, json::object& obj);
void add_required_zeros(std::string_view group, std::string_view version, std::string_view kind, json::object& obj);
}  // namespace

std::optional<std::string> conversion_error(std::string_view group, std::string_view kind, const json::object& obj) {
  // Convert_v1_DaemonSet_To_apps_DaemonSet: the templateGeneration annotation must be a number
  // (strconv.ParseInt's error).
  if (group == "apps" && kind == "DaemonSet")
    if (const auto* md = obj.if_contains("metadata"); md && md->is_object())
      if (const auto* ann = md->as_object().if_contains("annotations"); ann && ann->is_object())
        if (const auto* v = ann->as_object().if_contains("deprecated.daemonset.template.generation");
            v && v->is_string()) {
          std::string err;
          if (!go_parse_int(v->as_string(), &err)) return err;
        }
  return std::nullopt;
}

Decoded decode(std::string_view group, std::string_view version, std::string_view kind, json::object& obj, bool prune) {
  Decoded out;
  const Node* r = root(group, version, kind);
  if (!r) return out;
  Walker w{out, prune, {}, {}, false};
  w.fields(*r, obj);
  if (!out.type_error && !out.decode_error) out.decode_error = conversion_error(group, kind, obj);
  if (prune && !out.type_error && !out.decode_error) {
    add_zero_structs(group, version, kind, obj);
    add_required_zeros(group, version, kind, obj);
  }
  return out;
}

namespace {

// The JSON encoding of a non-omitempty field's zero value: 0, "", false; null for a Time (its
// MarshalJSON), a slice, a map or a pointer.
json::value scalar_zero(const json::object& property, std::string_view ref) {
  if (!ref.empty()) return nullptr;
  const json::value* type = property.if_contains("type");
  const std::string_view t = type && type->is_string() ? std::string_view(type->as_string()) : std::string_view{};
  if (t == "integer" || t == "number") return 0;
  if (t == "string") return "";
  if (t == "boolean") return false;
  return nullptr;
}

json::object zero_of(const Doc& d, const json::object& s, int depth) {
  json::object out;
  const json::value* props = s.if_contains("properties");
  if (!props || !props->is_object() || depth > 16) return out;
  std::set<std::string, std::less<>> required;
  if (const auto* req = s.if_contains("required"); req && req->is_array())
    for (const auto& r : req->as_array())
      if (r.is_string()) required.emplace(r.as_string());
  for (const auto& [k, p] : props->as_object()) {
    if (!p.is_object()) continue;
    const auto& po = p.as_object();
    const json::value* def = po.if_contains("default");
    const std::string_view ref = Doc::ref_of(po);
    const json::object* target = ref.empty() ? nullptr : d.schema(ref);
    if (def && def->is_object() && def->as_object().empty() && target && target->contains("properties"))
      out[k] = zero_of(d, *target, depth + 1);  // a struct, not a pointer
    else if (required.count(std::string_view(k)) || k == "creationTimestamp")
      out[k] = scalar_zero(po, ref);  // no omitempty (metav1.Time ignores it): encoded as its zero
  }
  return out;
}

const Doc* doc_of(std::string_view group, std::string_view version) {
  const auto& docs = registry().docs;
  auto d = docs.find(group.empty() ? std::string(version) : fmt::format("{}/{}", group, version));
  return d == docs.end() ? nullptr : &d->second;
}

// A struct field of the kind (not a pointer: its schema's default is {}) that the body left out
// is there once decoded, as its zero value: Go encodes a struct even with omitempty, so a created
// Deployment or Job answers `"status": {}`.
// The document of a kind's group version and the kind's `properties`, or nulls.
std::pair<const Doc*, const json::object*> kind_properties(std::string_view group, std::string_view version,
                                                           std::string_view kind) {
  const Doc* d = doc_of(group, version);
  if (!d) return {nullptr, nullptr};
  auto k = d->kind_components.find(kind);
  const json::object* s = k == d->kind_components.end() ? nullptr : d->schema(k->second);
  const json::value* props = s ? s->if_contains("properties") : nullptr;
  if (!props || !props->is_object()) return {nullptr, nullptr};
  return {d, &props->as_object()};
}

void add_zero_structs(std::string_view group, std::string_view version, std::string_view kind, json::object& obj) {
  const auto [d, props] = kind_properties(group, version, kind);
  if (!props) return;
  for (const auto& [name, p] : *props) {
    if (!p.is_object() || obj.contains(name)) continue;
    const json::value* def = p.as_object().if_contains("default");
    const std::string_view ref = Doc::ref_of(p.as_object());
    const json::object* target = ref.empty() ? nullptr : d->schema(ref);
    if (def && def->is_object() && def->as_object().empty() && target && target->contains("properties"))
      obj[name] = zero_of(*d, *target, 1);
  }
}

// The schema a property's value has: its component (a $ref), else the property itself.
const json::object& resolved(const Doc& d, const json::object& p) {
  const std::string_view ref = Doc::ref_of(p);
  const json::object* target = ref.empty() ? nullptr : d.schema(ref);
  return target ? *target : p;
}

// Below the top level, the fields without omitempty (the schema's `required`, and every struct
// that is no pointer) that an object of the body leaves out are there once decoded, as Go's zero: "" / 0 / false for a
// plain string, integer or boolean, {} (itself filled) for a struct. A template's ownerReferences item
// {"controller": false} is stored with apiVersion, kind, name and uid "", a preferred node
// affinity term {"weight": 1} with "preference": {}, a handler's httpGet or tcpSocket without a
// port with "port": 0 (a required intstr.IntOrString, such as a StatefulSet's template keeps, which
// apps validation does not check: ValidatePodTemplateSpecForStatefulSet). Pointers, lists and maps
// (null in Go) and the other special strings (quantities, times) are left out. `component`: the struct's
// (its Node's go_fields say which required fields are pointers, such as an Ingress path's
// pathType: nil in Go, so left out too).
void fill_required(const Doc& d, const json::object& s, std::string_view component, json::object& o, int depth) {
  if (depth > 32) return;
  const json::value* pv = s.if_contains("properties");
  if (!pv || !pv->is_object()) return;
  const json::object& props = pv->as_object();
  const auto node = d.by_name.find(component);
  const Node* n = node == d.by_name.end() ? nullptr : node->second;
  auto pointer = [&](std::string_view field) {
    if (!n) return false;
    const auto g = n->go_fields.find(field);
    return g != n->go_fields.end() && g->second.pointer;
  };
  // A struct field that is no pointer (the OpenAPI's `default: {}`) is always there, required or
  // not: encoding/json writes a zero struct as {} (omitempty does not apply to structs).
  for (const auto& [k, p] : props) {
    if (o.contains(k) || !p.is_object() || pointer(k)) continue;
    const json::value* def = p.as_object().if_contains("default");
    if (def && def->is_object() && def->as_object().empty() && resolved(d, p.as_object()).contains("properties"))
      o[k] = json::object{};  // (filled below)
  }
  if (const auto* req = s.if_contains("required"); req && req->is_array())
    for (const auto& r : req->as_array()) {
      if (!r.is_string() || o.contains(r.as_string()) || pointer(r.as_string())) continue;
      const json::value* p = props.if_contains(r.as_string());
      if (!p || !p->is_object()) continue;
      const json::object& po = p->as_object();
      const json::object& target = resolved(d, po);
      const json::value* def = po.if_contains("default");
      const json::value* type = target.if_contains("type");
      const std::string_view t = type && type->is_string() ? std::string_view(type->as_string()) : "";
      if (def && def->is_object() && def->as_object().empty() && target.contains("properties"))
        o[r.as_string()] = json::object{};  // a struct (filled below)
      else if (t == "integer")              // every required integer is an int32 or int64, not a pointer (data/gotypes)
        o[r.as_string()] = 0;
      else if (const json::value* f = target.if_contains("format"); f && *f == "int-or-string")
        o[r.as_string()] = 0;  // intstr.IntOrString{} (Type Int, IntVal 0): MarshalJSON writes 0
      else if (target.contains("format") || target.contains("x-kubernetes-int-or-string"))
        continue;
      else if (t == "string")
        o[r.as_string()] = "";
      else if (t == "boolean")
        o[r.as_string()] = false;
    }
  for (auto& [k, v] : o) {
    const json::value* p = props.if_contains(k);
    if (!p || !p->is_object()) continue;
    const json::object& ps = resolved(d, p->as_object());
    if (v.is_object() && ps.contains("properties")) {
      fill_required(d, ps, Doc::ref_of(p->as_object()), v.as_object(), depth + 1);
      continue;
    }
    // A list's items or a map's values.
    const json::value* elem = v.is_array()    ? ps.if_contains("items")
                              : v.is_object() ? ps.if_contains("additionalProperties")
                                              : nullptr;
    if (!elem || !elem->is_object()) continue;
    const json::object& es = resolved(d, elem->as_object());
    if (!es.contains("properties")) continue;
    const std::string_view elem_component = Doc::ref_of(elem->as_object());
    if (v.is_array()) {
      for (auto& e : v.as_array())
        if (e.is_object()) fill_required(d, es, elem_component, e.as_object(), depth + 1);
    } else {
      for (auto& kv : v.as_object())
        if (kv.value().is_object()) fill_required(d, es, elem_component, kv.value().as_object(), depth + 1);
    }
  }
}

void add_required_zeros(std::string_view group, std::string_view version, std::string_view kind, json::object& obj) {
  const auto [d, props] = kind_properties(group, version, kind);
  if (!props) return;
  // The top level's own scalars without omitempty (data/gotypes: an Event's reportingComponent, a
  // ControllerRevision's revision, a PriorityClass's value): Go writes their zero. (Its times are
  // nil_empty_collections', kept_time.)
  if (const Node* r = root(group, version, kind))
    for (const auto& [k, g] : r->go_fields) {
      if (g.pointer || g.zero != Node::GoField::Zero::Kept || obj.contains(k)) continue;
      if (g.type == "string")
        obj[k] = "";
      else if (g.type == "int32" || g.type == "int64")
        obj[k] = 0;
      else if (g.type == "bool")
        obj[k] = false;
    }
  // Below the top level: apiVersion and kind are the request's, metadata and the rest are read by
  // validation as given.
  for (auto& [name, v] : obj) {
    const json::value* p = props->if_contains(name);
    if (!p || !p->is_object()) continue;
    const json::object& ps = resolved(*d, p->as_object());
    if (v.is_object() && ps.contains("properties")) {
      fill_required(*d, ps, Doc::ref_of(p->as_object()), v.as_object(), 1);
    } else if (v.is_array()) {  // a top-level list of structs (an EndpointSlice's endpoints)
      const json::value* items = ps.if_contains("items");
      if (!items || !items->is_object() || !resolved(*d, items->as_object()).contains("properties")) continue;
      for (auto& e : v.as_array())
        if (e.is_object())
          fill_required(*d, resolved(*d, items->as_object()), Doc::ref_of(items->as_object()), e.as_object(), 1);
    }
  }
}

}  // namespace

json::object zero_object(std::string_view group, std::string_view version, std::string_view kind) {
  const auto& docs = registry().docs;
  auto d = docs.find(group.empty() ? std::string(version) : fmt::format("{}/{}", group, version));
  if (d == docs.end()) return {};
  auto k = d->second.kind_components.find(kind);
  if (k == d->second.kind_components.end()) return {};
  const json::object* s = d->second.schema(k->second);
  return s ? zero_of(d->second, *s, 0) : json::object{};
}

json::object encoded_zero(std::string_view group, std::string_view version, std::string_view kind) {
  json::object z = zero_object(group, version, kind);
  add_required_zeros(group, version, kind, z);
  nil_empty_collections(group, version, kind, z);
  return z;
}

const json::object* components(std::string_view group, std::string_view version) {
  const auto& docs = registry().docs;
  auto d = docs.find(group.empty() ? std::string(version) : fmt::format("{}/{}", group, version));
  return d == docs.end() ? nullptr : &d->second.schemas;
}

namespace {

// runtime.DefaultUnstructuredConverter.FromUnstructured (apimachinery runtime/converter.go), as a
// strategic merge patch's result is converted to the typed object: a JSON value whose kind does
// not fit the Go field, worded by its reflect kinds. (Struct fields are visited here in name
// order, there in Go declaration order: with two misfits the first reported may differ.)
struct Converter {
  std::optional<std::string> err;

  static std::string_view kind(const json::value& v) { return go_value_names(v).kind; }
  static std::string_view element(std::string_view t) { return Walker::element_type(t); }
  bool fail(std::string e) {
    err = std::move(e);
    return false;
  }
  // A simple Go kind (string, bool, an integer or a float type `type`, kind `dk`). An integer is
  // converted as reflect's Convert does: an integral float to its integer, then wrapped to the
  // width (2147483648 into an int32 is -2147483648).
  bool scalar(json::value& v, std::string_view dk, std::string_view type) {
    const bool integer = dk == "int32" || dk == "int64" || dk == "uint8";
    const bool number = v.is_int64() || v.is_uint64() || v.is_double();
    if (dk == "string") {
      if (v.is_string()) return true;
      if (v.is_int64() || v.is_uint64()) return fail(fmt::format("cannot convert int64 to {}", type));
      return fail("unrecognized type: string");
    }
    if (dk == "bool") return v.is_bool() || fail("unrecognized type: bool");
    if (integer) {
      if (v.is_double() && v.as_double() != std::trunc(v.as_double()))
        return fail(fmt::format("cannot convert float64 to {}", type));
      if (!number) return fail(fmt::format("unrecognized type: {}", dk));
      const std::int64_t i = v.is_int64()    ? v.as_int64()
                             : v.is_uint64() ? static_cast<std::int64_t>(v.as_uint64())
                                             : static_cast<std::int64_t>(v.as_double());
      if (dk == "int32")
        v = static_cast<std::int32_t>(static_cast<std::uint32_t>(i));
      else if (dk == "uint8")
        v = static_cast<std::uint8_t>(i);
      else if (!v.is_int64())
        v = i;
      return true;
    }
    return number || fail(fmt::format("unrecognized type: {}", dk));  // float64
  }
  bool walk(const Node& n, json::value& v, std::string_view go_type) {
    if (v.is_null()) return true;
    switch (n.type) {
      case Node::Type::String:
        if (n.go_type == "[]uint8") {  // sliceFromUnstructured of a []byte
          if (v.is_string()) {
            if (const auto at = base64_error_offset(v.as_string()))
              return fail(fmt::format("error decoding from json: illegal base64 data at input byte {}", *at));
            return true;
          }
          if (!v.is_array()) return fail(fmt::format("cannot restore slice from {}", kind(v)));
          for (auto& e : v.as_array())
            if (!e.is_null() && !scalar(e, "uint8", "uint8")) return false;
          return true;
        }
        return scalar(v, "string", go_type.empty() ? std::string_view("string") : go_type);
      case Node::Type::Bool:
        return scalar(v, "bool", "bool");
      case Node::Type::Int32:
      case Node::Type::Int64: {
        const std::string_view k = n.type == Node::Type::Int32 ? "int32" : "int64";
        return scalar(v, k, go_type.empty() || go_type.starts_with("*") ? k : go_type);
      }
      case Node::Type::Float64:
        return scalar(v, "float64", "float64");
      case Node::Type::Object: {
        if (!v.is_object()) return fail(fmt::format("cannot restore struct from: {}", kind(v)));
        for (const auto& [name, field] : n.declared) {
          json::value* child = v.as_object().if_contains(name);
          if (!child) continue;
          const auto g = n.go_fields.find(name);
          std::string_view t = g == n.go_fields.end() ? std::string_view{} : std::string_view(g->second.type);
          if (t.starts_with("*")) t.remove_prefix(1);
          if (!walk(*field, *child, t)) return false;
        }
        return true;
      }
      case Node::Type::Map:
        if (!v.is_object()) return fail(fmt::format("cannot restore map from {}", kind(v)));
        for (auto& [k, child] : v.as_object())
          if (!walk(*n.elem, child, element(go_type))) return false;
        return true;
      case Node::Type::Array:
        if (!v.is_array()) return fail(fmt::format("cannot restore slice from {}", kind(v)));
        for (auto& child : v.as_array())
          if (!walk(*n.elem, child, element(go_type))) return false;
        return true;
      case Node::Type::Quantity:
        // resource.Quantity converts itself (UnmarshalJSON): ParseQuantity of the text, which for
        // anything but a string or a number ({}, true, []) fails as a format error.
        if (v.is_bool() || v.is_object() || v.is_array())
          return fail("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
        if (v.is_string()) {
          try {
            Quantity::parse(quantity_trim(std::string(v.as_string())));
          } catch (const ValidationError& e) {
            if (e.rule().find("magnitude too large") != std::string::npos) return true;
            return fail(quantity_error(e));
          }
        }
        return true;
      case Node::Type::IntOrString: {
        // intstr.IntOrString converts itself: a string, else json.Unmarshal into its int32.
        if (v.is_string()) return true;
        const bool fits = (v.is_int64() && v.as_int64() >= INT32_MIN && v.as_int64() <= INT32_MAX) ||
                          (v.is_uint64() && v.as_uint64() <= INT32_MAX) ||
                          (v.is_double() && v.as_double() == std::trunc(v.as_double()) && v.as_double() >= INT32_MIN &&
                           v.as_double() <= INT32_MAX);
        if (fits) return true;
        return fail(fmt::format("json: cannot unmarshal {} into Go value of type int32",
                                v.is_number() ? "number " + number_text(v) : std::string(go_value_names(v).json)));
      }
      case Node::Type::Time:
      case Node::Type::MicroTime:
        // metav1.Time converts itself: json.Unmarshal of the value into a string, then time.Parse.
        if (!v.is_string())
          return fail(fmt::format("json: cannot unmarshal {} into Go value of type string", v.is_object()  ? "object"
                                                                                            : v.is_array() ? "array"
                                                                                            : v.is_bool()  ? "bool"
                                                                                                           : "number"));
        if (auto e = go_time_error(v.as_string(), n.type == Node::Type::MicroTime)) return fail(*e);
        return true;
      default:
        return true;
    }
  }
};

}  // namespace

std::optional<std::string> converter_error(std::string_view group, std::string_view version, std::string_view kind,
                                           json::object& obj) {
  const Node* r = root(group, version, kind);
  if (!r) return std::nullopt;
  Converter c;
  json::value v(std::move(obj));
  c.walk(*r, v, {});
  obj = std::move(v.as_object());
  return c.err;
}

}  // namespace gpupool::embedded::schema
