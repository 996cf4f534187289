#include "embedded/patch.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"
#include "embedded/schema.hpp"
#include "embedded/store.hpp"
#include "embedded/typecheck.hpp"

namespace gpupool::embedded {

namespace json = boost::json;

namespace {

// json-patch v4's pruneNulls: an object's null members go, at every depth (lists keep their
// null elements).
json::value prune_nulls(json::value v) {
  if (v.is_object()) {
    json::object out;
    for (auto& [k, m] : v.as_object())
      if (!m.is_null()) out[k] = prune_nulls(std::move(m));
    return out;
  }
  if (v.is_array())
    for (auto& e : v.as_array())
      if (!e.is_null()) e = prune_nulls(std::move(e));
  return v;
}

}  // namespace

json::value merge_patch(const json::value& target, const json::value& patch) {
  // json-patch v4 MergePatch (RFC 7386): a member set where the target has none (or null), or
  // where the target is no object, is the patch's value without its null members; an object
  // merges into an object; anything else replaces as it is.
  if (!target.is_object()) return prune_nulls(patch);
  if (!patch.is_object()) return patch;
  json::object out = target.as_object();
  for (const auto& [k, v] : patch.as_object()) {
    if (v.is_null()) {
      out.erase(k);
      continue;
    }
    const auto* cur = out.if_contains(k);
    out[k] = !cur || cur->is_null() ? prune_nulls(v) : merge_patch(*cur, v);
  }
  return out;
}

// ---- JSON patch ----------------------------------------------------------------------------------

namespace {

// A JSON patch that decodes but does not apply (a missing path, a bad pointer or index, a missing
// op, path or value, a failed test) is a 422 whose message is NewGenericServerResponse's, without
// the patch library's own words (handlers/patch.go applyJSPatch: patchObj.Apply error).
[[noreturn]] void bad_patch(const std::string& why) {
  (void)why;  // what went wrong, for a reader of this file; the API server does not say it
  throw StatusError(422, "Invalid", "the server rejected our request due to an error in our request");
}

std::vector<std::string> split_pointer(std::string_view ptr) {
  // json-patch v4 (findObject, decodePatchKey): the path is split at '/' and its first part
  // dropped — the empty one before the leading slash, or whatever a path without one starts with
  // ("metadata/labels" is "/labels"); a path without '/' names nothing. Each part's "~1" is '/',
  // then "~0" is '~' (other escapes stay as written).
  std::vector<std::string> out;
  if (ptr.empty()) return out;
  const auto first = ptr.find('/');
  if (first == std::string_view::npos) bad_patch(fmt::format("invalid JSON pointer \"{}\"", ptr));
  std::size_t start = first + 1;
  while (true) {
    const auto slash = ptr.find('/', start);
    std::string part(ptr.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    for (const auto& [from, to] : {std::pair{"~1", "/"}, std::pair{"~0", "~"}})
      for (std::size_t at = part.find(from); at != std::string::npos; at = part.find(from, at + 1))
        part.replace(at, 2, to);
    out.push_back(std::move(part));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

json::value* resolve(json::value& root, const std::vector<std::string>& parts, std::size_t n) {
  json::value* cur = &root;
  for (std::size_t i = 0; i < n; ++i) {
    if (cur->is_object()) {
      cur = cur->as_object().if_contains(parts[i]);
    } else if (cur->is_array()) {
      auto& a = cur->as_array();
      std::size_t idx = 0;
      try {
        idx = std::stoul(parts[i]);
      } catch (...) {
        return nullptr;
      }
      cur = idx < a.size() ? &a[idx] : nullptr;
    } else {
      return nullptr;
    }
    if (!cur) return nullptr;
  }
  return cur;
}

void add_at(json::value& root, const std::string& path, json::value v, bool replace) {
  auto parts = split_pointer(path);
  if (parts.empty()) {
    root = std::move(v);
    return;
  }
  json::value* parent = resolve(root, parts, parts.size() - 1);
  if (!parent) bad_patch(fmt::format("doc is missing path: \"{}\": missing value", path));
  const auto& last = parts.back();
  if (parent->is_object()) {
    // evanphx/json-patch v4 (what the API server uses): replacing a missing key of an object sets
    // it, as add does; only arrays check the index.
    parent->as_object()[last] = std::move(v);
  } else if (parent->is_array()) {
    auto& a = parent->as_array();
    if (last == "-" && !replace) {
      a.push_back(std::move(v));
      return;
    }
    std::size_t idx = 0;
    try {
      idx = std::stoul(last);
    } catch (...) {
      bad_patch(fmt::format("invalid array index in path \"{}\"", path));
    }
    if (replace) {
      if (idx >= a.size()) bad_patch(fmt::format("replace operation does not apply: doc is missing path: {}", path));
      a[idx] = std::move(v);
    } else {
      if (idx > a.size()) bad_patch(fmt::format("add operation does not apply: index out of range: {}", path));
      a.insert(a.begin() + static_cast<std::ptrdiff_t>(idx), std::move(v));
    }
  } else {
    bad_patch(fmt::format("doc is missing path: \"{}\"", path));
  }
}

json::value remove_at(json::value& root, const std::string& path) {
  auto parts = split_pointer(path);
  if (parts.empty()) bad_patch("cannot remove the whole document");
  json::value* parent = resolve(root, parts, parts.size() - 1);
  const auto& last = parts.back();
  if (parent && parent->is_object()) {
    auto& o = parent->as_object();
    if (auto it = o.find(last); it != o.end()) {
      json::value v = it->value();
      o.erase(it);
      return v;
    }
  } else if (parent && parent->is_array()) {
    auto& a = parent->as_array();
    std::size_t idx = a.size();
    try {
      idx = std::stoul(last);
    } catch (...) {}
    if (idx < a.size()) {
      json::value v = a[idx];
      a.erase(a.begin() + static_cast<std::ptrdiff_t>(idx));
      return v;
    }
  }
  bad_patch(fmt::format("remove operation does not apply: doc is missing path: \"{}\": missing value", path));
}

std::string op_str(const json::object& op, std::string_view key) {
  const auto* v = op.if_contains(key);
  if (!v || !v->is_string()) bad_patch(fmt::format("missing or invalid \"{}\" in JSON patch operation", key));
  return std::string(v->as_string());
}

}  // namespace

namespace {

// json-patch v4's lazyNode.equal for a test op: objects and arrays member by member, scalars by
// their compacted raw text. The document is the object as the API server's encoder wrote it,
// which escapes '&', '<', '>', U+2028 and U+2029 in strings (\u0026 ...) where a client's patch
// writes them plainly: such a string never tests equal. (A patch's own escapes are not kept here:
// one that writes \u0026 fails here and passes there.)
bool test_equal(const json::value& doc, const json::value& patch) {
  if (doc.is_object()) {
    if (!patch.is_object() || patch.as_object().size() != doc.as_object().size()) return false;
    for (const auto& [k, v] : doc.as_object()) {
      const json::value* o = patch.as_object().if_contains(k);
      if (!o || !test_equal(v, *o)) return false;
    }
    return true;
  }
  if (doc.is_array()) {
    if (!patch.is_array() || patch.as_array().size() != doc.as_array().size()) return false;
    for (std::size_t i = 0; i < doc.as_array().size(); ++i)
      if (!test_equal(doc.as_array()[i], patch.as_array()[i])) return false;
    return true;
  }
  if (doc.is_string()) {
    const std::string_view s = doc.as_string();
    const bool escaped = s.find_first_of("&<>") != std::string_view::npos ||
                         s.find("\xe2\x80\xa8") != std::string_view::npos ||
                         s.find("\xe2\x80\xa9") != std::string_view::npos;
    return !escaped && patch.is_string() && patch.as_string() == s;
  }
  return util::json_equal(doc, patch);
}

}  // namespace

json::value json_patch(const json::value& target, const json::array& ops) {
  json::value doc = target;
  for (const auto& opv : ops) {
    // Not decodable as a list of operations: 400, as DecodePatch's error.
    if (!opv.is_object()) throw StatusError::bad_request("a JSON patch must be an array of operation objects");
    const auto& op = opv.as_object();
    const std::string kind = op_str(op, "op");
    const std::string path = op_str(op, "path");
    if (kind == "add" || kind == "replace") {
      // v4: an operation without "value" writes null.
      const auto* v = op.if_contains("value");
      add_at(doc, path, v ? *v : json::value(nullptr), kind == "replace");
    } else if (kind == "remove") {
      remove_at(doc, path);
    } else if (kind == "move") {
      auto v = remove_at(doc, op_str(op, "from"));
      add_at(doc, path, std::move(v), false);
    } else if (kind == "copy") {
      auto parts = split_pointer(op_str(op, "from"));
      const json::value* v = resolve(doc, parts, parts.size());
      if (!v) bad_patch("copy operation does not apply: doc is missing from path");
      add_at(doc, path, json::value(*v), false);
    } else if (kind == "test") {
      auto parts = split_pointer(path);
      const json::value* v = resolve(doc, parts, parts.size());
      const auto* want = op.if_contains("value");
      if (!v || !want || !test_equal(*v, *want)) bad_patch(fmt::format("testing value {} failed: test failed", path));
    } else {
      bad_patch(fmt::format("Unexpected kind: {}", kind));
    }
  }
  return doc;
}

// ---- strategic merge patch ------------------------------------------------------------------------

std::string merge_key(std::string_view kind, std::string_view path) {
  // The kind's schema says (embedded/schema.hpp patch_merge_key); the table below answers for
  // paths it does not know (a Scale's, a kind without a recorded schema).
  if (auto key = schema::patch_merge_key(kind, path)) return *key;
  // patchStrategy/patchMergeKey tags from k8s.io/api (core/v1 types.go, apps/v1, batch/v1, meta/v1).
  // NodeSpec.taints and PodSpec.tolerations carry no patchStrategy: they are replaced whole (kubectl
  // taint sends the complete new list, as `kubectl -v=9 taint` shows).
  static const std::pair<std::string_view, std::string_view> suffix_keys[] = {
      {"containers", "name"},
      {"initContainers", "name"},
      {"ephemeralContainers", "name"},
      {"volumes", "name"},
      {"volumeMounts", "mountPath"},
      {"volumeDevices", "devicePath"},
      {"env", "name"},
      {"ports", "containerPort"},
      {"imagePullSecrets", "name"},
      {"hostAliases", "ip"},
      {"ownerReferences", "uid"},
      {"conditions", "type"},
      {"addresses", "type"},
      {"finalizers", "$primitive"},
      {"topologySpreadConstraints", "topologyKey"},
      {"resourceClaims", "name"},
      {"schedulingGates", "name"},
  };
  (void)kind;
  const auto dot = path.rfind('.');
  const auto last = dot == std::string_view::npos ? path : path.substr(dot + 1);
  // Service ports merge by port (ServiceSpec.Ports: patchMergeKey:"port").
  if (last == "ports" && kind == "Service" && path == "spec.ports") return "port";
  // Node status.addresses is merged by type; a pod's status lists are not ours to worry about.
  for (const auto& [name, key] : suffix_keys)
    if (last == name) return std::string(key);
  return {};
}

namespace {

json::value smp(const json::value& target, const json::value& patch, std::string_view kind, const std::string& path);

// The position of `v` in `list` by merge key (or by value for "$primitive"), -1 when absent.
long index_in(const json::array& list, const json::value& v, const std::string& key) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json::value& e = list[i];
    if (key == "$primitive"
            ? util::json_equal(e, v)
            : (e.is_object() && v.is_object() && e.as_object().if_contains(key) && v.as_object().if_contains(key) &&
               util::json_equal(e.as_object().at(key), v.as_object().at(key))))
      return static_cast<long>(i);
  }
  return -1;
}

// strategicpatch mergeSlice's "enforce the order" (normalizeElementOrder + mergeSortedSlice): the
// merged items named in the patch come in the patch's order, the others in the original's, and
// each server-only item goes before the next patch item only when both are in the original and it
// is there first. So `env: [B, A]` patched onto `[A]` gives `[B, A]`, and a new volume goes first.
json::array enforce_order(json::array merged, const json::array& original, const json::array& patch,
                          const std::string& key) {
  std::vector<std::pair<long, json::value>> in_patch;
  json::array server_only;
  for (auto& item : merged) {
    const long i = index_in(patch, item, key);
    if (i >= 0)
      in_patch.emplace_back(i, std::move(item));
    else
      server_only.push_back(std::move(item));
  }
  std::stable_sort(in_patch.begin(), in_patch.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  json::array out;
  std::size_t l = 0, r = 0;
  while (l < server_only.size() || r < in_patch.size()) {
    if (r >= in_patch.size()) {
      out.push_back(std::move(server_only[l++]));
    } else if (l >= server_only.size()) {
      out.push_back(std::move(in_patch[r++].second));
    } else {
      const long li = index_in(original, server_only[l], key), ri = index_in(original, in_patch[r].second, key);
      if (li >= 0 && ri >= 0 && li < ri)
        out.push_back(std::move(server_only[l++]));
      else
        out.push_back(std::move(in_patch[r++].second));
    }
  }
  return out;
}

// strategicpatch sliceElementType: the elements of both lists are of one Go type (a map, a
// list, a string, a bool, an int64 or a float64; a null is none), the first not a list.
void check_element_types(const json::array& cur, const json::array& patch) {
  const auto type_of = [](const json::value& v) {
    return v.is_int64() || v.is_uint64() ? json::kind::int64 : v.kind();
  };
  std::optional<json::kind> prev;
  for (const json::array* list : {&cur, &patch})
    for (const auto& v : *list) {
      if (!prev) {
        prev = type_of(v);
        if (*prev == json::kind::array)  // mergepatch.ErrNoListOfLists: NewGenericServerResponse(422)
          throw StatusError(422, "Invalid", "the server rejected our request due to an error in our request");
      } else if (*prev != type_of(v)) {
        // A plain error: a 500 with its text (fmt.Sprint of the two lists).
        throw StatusError(500, "",
                          fmt::format("list element types are not identical: [{} {}]", go_print(json::value(cur)),
                                      go_print(json::value(patch))));
      }
    }
}

json::value merge_list(const json::array& cur, const json::array& patch, const std::string& key, std::string_view kind,
                       const std::string& path) {
  if (!cur.empty() || !patch.empty()) check_element_types(cur, patch);
  // `$patch: replace` as an element replaces the whole list with the other elements.
  for (const auto& p : patch)
    if (p.is_object() && p.as_object().if_contains("$patch") && p.as_object().at("$patch") == "replace") {
      json::array out;
      for (const auto& q : patch)
        if (!(q.is_object() && q.as_object().if_contains("$patch"))) out.push_back(q);
      return out;
    }
  if (key == "$primitive") {
    json::array out = cur;
    for (const auto& p : patch)
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    return enforce_order(std::move(out), cur, patch, key);
  }
  json::array out = cur;
  for (const auto& p : patch) {
    if (!p.is_object()) {
      out.push_back(p);
      continue;
    }
    const auto& po = p.as_object();
    const auto* kv = po.if_contains(key);
    if (!kv)  // mergepatch.ErrNoMergeKey, a plain error: a 500 with its text (the item as Go's %v)
      throw StatusError(500, "", fmt::format("map: {} does not contain declared merge key: {}", go_print(p), key));
    auto it = std::find_if(out.begin(), out.end(), [&](const json::value& e) {
      return e.is_object() && e.as_object().if_contains(key) && util::json_equal(e.as_object().at(key), *kv);
    });
    const auto* directive = po.if_contains("$patch");
    if (directive && *directive == "delete") {
      // Delete every element with that key (several taints may share a key with different effects).
      out.erase(std::remove_if(out.begin(), out.end(),
                               [&](const json::value& e) {
                                 return e.is_object() && e.as_object().if_contains(key) &&
                                        util::json_equal(e.as_object().at(key), *kv);
                               }),
                out.end());
      continue;
    }
    if (it == out.end()) {
      json::object clean = po;
      clean.erase("$patch");
      out.push_back(smp(json::object{}, clean, kind, path));
    } else {
      *it = smp(*it, p, kind, path);
    }
  }
  return enforce_order(std::move(out), cur, patch, key);
}

void apply_order(json::array& list, const json::array& order, const std::string& key) {
  // $setElementOrder: the listed elements come first, in that order; the rest keep their order.
  json::array sorted;
  std::vector<bool> used(list.size(), false);
  for (const auto& o : order) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (used[i]) continue;
      const bool same = key == "$primitive" ? list[i] == o
                                            : (o.is_object() && list[i].is_object() && o.as_object().if_contains(key) &&
                                               list[i].as_object().if_contains(key) &&
                                               list[i].as_object().at(key) == o.as_object().at(key));
      if (same) {
        sorted.push_back(list[i]);
        used[i] = true;
      }
    }
  }
  for (std::size_t i = 0; i < list.size(); ++i)
    if (!used[i]) sorted.push_back(list[i]);
  list = std::move(sorted);
}

json::value smp(const json::value& target, const json::value& patch, std::string_view kind, const std::string& path) {
  if (!patch.is_object()) return patch;
  const auto& po = patch.as_object();
  if (const auto* d = po.if_contains("$patch")) {
    if (*d == "replace") {
      json::object out = po;
      out.erase("$patch");
      return out;
    }
    if (*d == "delete") return nullptr;
  }
  json::object out = target.is_object() ? target.as_object() : json::object{};
  if (const auto* rk = po.if_contains("$retainKeys"); rk && rk->is_array()) {
    json::object kept;
    for (const auto& k : rk->as_array())
      if (k.is_string())
        if (const auto* v = out.if_contains(k.as_string())) kept[k.as_string()] = *v;
    out = std::move(kept);
  }
  std::vector<std::pair<std::string, const json::value*>> orders;
  for (const auto& [k, v] : po) {
    const std::string ks(k);
    if (ks == "$patch" || ks == "$retainKeys") continue;
    if (ks.rfind("$setElementOrder/", 0) == 0) {
      orders.emplace_back(ks.substr(17), &v);
      continue;
    }
    if (ks.rfind("$deleteFromPrimitiveList/", 0) == 0) {
      const std::string field = ks.substr(25);
      if (auto* lst = out.if_contains(field); lst && lst->is_array() && v.is_array()) {
        auto& a = lst->as_array();
        for (const auto& del : v.as_array()) a.erase(std::remove(a.begin(), a.end(), del), a.end());
      }
      continue;
    }
    const std::string sub = path.empty() ? ks : path + "." + ks;
    if (v.is_null()) {
      out.erase(k);
      continue;
    }
    const auto* cur = out.if_contains(k);
    if (v.is_array()) {
      const std::string key = merge_key(kind, sub);
      if (!key.empty() && cur && cur->is_array()) {
        out[k] = merge_list(cur->as_array(), v.as_array(), key, kind, sub);
      } else {
        json::array clean;
        for (const auto& e : v.as_array())
          if (!(e.is_object() && e.as_object().if_contains("$patch") && e.as_object().at("$patch") == "delete")) {
            if (e.is_object()) {
              json::object eo = e.as_object();
              eo.erase("$patch");
              clean.push_back(std::move(eo));
            } else {
              clean.push_back(e);
            }
          }
        out[k] = std::move(clean);
      }
    } else if (v.is_object() && cur && cur->is_object() && schema::patch_replaces(kind, sub)) {
      out[k] = v;  // mergeMapHandler, patchStrategy "replace": the patch's map as sent (its nulls too)
    } else {
      json::value merged = smp(cur ? *cur : json::value(nullptr), v, kind, sub);
      if (merged.is_null())
        out.erase(k);
      else
        out[k] = std::move(merged);
    }
  }
  for (const auto& [field, order] : orders) {
    if (auto* lst = out.if_contains(field); lst && lst->is_array() && order->is_array()) {
      const std::string key = merge_key(kind, path.empty() ? field : path + "." + field);
      apply_order(lst->as_array(), order->as_array(), key);
    }
  }
  return out;
}

}  // namespace

json::value strategic_merge_patch(const json::value& target, const json::value& patch, std::string_view kind) {
  if (!patch.is_object()) bad_patch("a strategic merge patch must be a JSON object");
  // Every built-in kind (and autoscaling/v1 Scale) takes one; the API server refuses it for
  // custom resources (415, api_patch.cpp) before this is reached.
  return smp(target, patch, kind, "");
}

json::value strategic_patch_consumed(const json::value& patch) {
  if (!patch.is_object()) return patch;
  json::object out;
  const json::object& p = patch.as_object();
  const std::string_view order = "$setElementOrder/";
  for (const auto& [k, v] : p) {
    const std::string_view key = k;
    if (key.starts_with(order) || key == "$retainKeys" || (key == "$patch" && v == "replace")) continue;
    if (p.contains(std::string(order) + std::string(key))) continue;  // a list merged in that order
    out[k] = v.is_object() ? strategic_patch_consumed(v) : v;
  }
  return out;
}

namespace {

json::object sorted_keys(const json::object& o) {
  std::vector<std::string_view> keys;
  for (const auto& [k, v] : o) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  json::object out;
  for (auto k : keys) out[k] = o.at(k);
  return out;
}

// pruneNulls re-encodes every object of the value it walks from a Go map: each level sorted.
void sort_all(json::value& v) {
  if (v.is_object()) {
    v.as_object() = sorted_keys(v.as_object());
    for (auto& [k, x] : v.as_object()) sort_all(x);
  } else if (v.is_array()) {
    for (auto& x : v.as_array()) sort_all(x);
  }
}

// Merge patch (json-patch v4 mergeDocs): the target's levels the patch merged into (`was`: the
// target's level before); a value the patch put where the target had no object went through
// pruneNulls (sorted at every level), one put over an object (merge's `return patch`) keeps the
// patch's order.
void sort_merged(json::object& o, const json::object* was, const json::object& patch) {
  o = sorted_keys(o);
  for (const auto& [k, pv] : patch) {
    json::value* v = o.if_contains(k);
    if (!v || pv.is_null()) continue;
    const json::value* cur = was ? was->if_contains(k) : nullptr;
    if (!cur || !cur->is_object())
      sort_all(*v);
    else if (pv.is_object() && v->is_object())
      sort_merged(v->as_object(), &cur->as_object(), pv.as_object());
  }
}

// JSON patch: the containers along an operation's path.
void sort_along(json::value& v, const std::vector<std::string>& parts, std::size_t i) {
  if (v.is_object()) {
    v.as_object() = sorted_keys(v.as_object());
    if (i < parts.size())
      if (json::value* child = v.as_object().if_contains(parts[i])) sort_along(*child, parts, i + 1);
  } else if (v.is_array() && i < parts.size()) {
    const std::string& p = parts[i];
    if (!p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; }))
      if (const std::size_t n = std::stoul(p); n < v.as_array().size()) sort_along(v.as_array()[n], parts, i + 1);
  }
}

}  // namespace

json::object patched_decode_order(const json::object& patched, const json::value& target, const json::value& patch,
                                  bool json_patch_type) {
  json::value out(patched);
  if (!json_patch_type) {
    if (patch.is_object())
      sort_merged(out.as_object(), target.is_object() ? &target.as_object() : nullptr, patch.as_object());
    return std::move(out.as_object());
  }
  if (patch.is_array())
    for (const auto& op : patch.as_array())
      if (op.is_object())
        for (const char* k : {"path", "from"})
          if (const json::value* p = op.as_object().if_contains(k); p && p->is_string() && !p->as_string().empty()) {
            std::vector<std::string> parts;
            try {
              parts = split_pointer(p->as_string());
            } catch (const StatusError&) {
              continue;
            }
            sort_along(out, parts, 0);
          }
  return std::move(out.as_object());
}

}  // namespace gpupool::embedded
