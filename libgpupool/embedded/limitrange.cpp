// The LimitRanger admission plugin (plugin/pkg/admission/limitranger/admission.go) and the
// defaulting of LimitRange objects (pkg/apis/core/v1/defaults.go SetDefaults_LimitRangeItem).
#include <set>

#include <fmt/format.h>

#include "embedded/admission.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/quota.hpp"

namespace gpupool::embedded {
namespace {

using util::object_at;
using util::string_of;

bool is(const ResourceType& t, std::string_view resource) { return t.group.empty() && t.resource == resource; }

// SetDefaults_LimitRangeItem: for Container items, default limits from max, default requests from
// the default limits, then from min.
void default_limit_range(json::object& lr) {
  json::value* limits =
      lr.contains("spec") && lr["spec"].is_object() ? lr["spec"].as_object().if_contains("limits") : nullptr;
  if (!limits || !limits->is_array()) return;
  for (auto& item : limits->as_array()) {
    if (!item.is_object() || string_of(&item.as_object(), "type") != "Container") continue;
    json::object& it = item.as_object();
    auto fill = [&](const char* to, const char* from) {
      const json::object* found = object_at(it, {from});
      if (!found || found->empty()) return;
      const json::object src = *found;  // a copy: adding `to` may rehash `it` and move `from`
      json::object& dst = util::ensure_object(it, to);
      for (const auto& [k, v] : src)
        if (!dst.contains(k)) dst[k] = v;
    };
    fill("default", "max");
    fill("defaultRequest", "default");
    fill("defaultRequest", "min");
  }
}

struct Values {
  std::int64_t request = 0, limit = 0, enforced = 0;
};

// requestLimitEnforcedValues: milli-units unless one of them is too large for them.
Values values(const Quantity* req, const Quantity* lim, const Quantity& enforced) {
  constexpr std::int64_t kMaxMilliValue = std::numeric_limits<std::int64_t>::max() / 1000;
  Values v{req ? req->value() : 0, lim ? lim->value() : 0, enforced.value()};
  if (v.request <= kMaxMilliValue && v.limit <= kMaxMilliValue && v.enforced <= kMaxMilliValue)
    v = {req ? req->milli_value() : 0, lim ? lim->milli_value() : 0, enforced.milli_value()};
  return v;
}

const Quantity* find(const ResourceList& l, const std::string& k) {
  auto it = l.find(k);
  return it == l.end() ? nullptr : &it->second;
}

void min_constraint(const std::string& type, const std::string& r, const Quantity& enforced,
                    const ResourceList& request, const ResourceList& limit, std::vector<std::string>& errs) {
  const Quantity *req = find(request, r), *lim = find(limit, r);
  const Values v = values(req, lim, enforced);
  if (!req)
    errs.push_back(
        fmt::format("minimum {} usage per {} is {}.  No request is specified", r, type, enforced.to_string()));
  else if (v.request < v.enforced)
    errs.push_back(fmt::format("minimum {} usage per {} is {}, but request is {}", r, type, enforced.to_string(),
                               req->to_string()));
  else if (lim && v.limit < v.enforced)
    errs.push_back(
        fmt::format("minimum {} usage per {} is {}, but limit is {}", r, type, enforced.to_string(), lim->to_string()));
}

void max_constraint(const std::string& type, const std::string& r, const Quantity& enforced,
                    const ResourceList& request, const ResourceList& limit, std::vector<std::string>& errs) {
  const Quantity *req = find(request, r), *lim = find(limit, r);
  const Values v = values(req, lim, enforced);
  if (!lim)
    errs.push_back(fmt::format("maximum {} usage per {} is {}.  No limit is specified", r, type, enforced.to_string()));
  else if (v.limit > v.enforced)
    errs.push_back(
        fmt::format("maximum {} usage per {} is {}, but limit is {}", r, type, enforced.to_string(), lim->to_string()));
  else if (req && v.request > v.enforced)
    errs.push_back(fmt::format("maximum {} usage per {} is {}, but request is {}", r, type, enforced.to_string(),
                               req->to_string()));
}

void max_request_constraint(const std::string& type, const std::string& r, const Quantity& enforced,
                            const ResourceList& request, std::vector<std::string>& errs) {
  const Quantity* req = find(request, r);
  const Values v = values(req, nullptr, enforced);
  if (!req)
    errs.push_back(
        fmt::format("maximum {} usage per {} is {}.  No request is specified", r, type, enforced.to_string()));
  else if (v.request > v.enforced)
    errs.push_back(fmt::format("maximum {} usage per {} is {}, but request is {}", r, type, enforced.to_string(),
                               req->to_string()));
}

void ratio_constraint(const std::string& type, const std::string& r, const Quantity& enforced,
                      const ResourceList& request, const ResourceList& limit, std::vector<std::string>& errs) {
  const Quantity *req = find(request, r), *lim = find(limit, r);
  const Values v = values(req, lim, enforced);
  if (!req || v.request == 0) {
    errs.push_back(
        fmt::format("{} max limit to request ratio per {} is {}, but no request is specified or request is 0", r, type,
                    enforced.to_string()));
    return;
  }
  if (!lim || v.limit == 0) {
    errs.push_back(fmt::format("{} max limit to request ratio per {} is {}, but no limit is specified or limit is 0", r,
                               type, enforced.to_string()));
    return;
  }
  double observed = static_cast<double>(v.limit) / static_cast<double>(v.request);
  const double display = observed;
  double max_ratio = static_cast<double>(enforced.value());
  if (enforced.value() <= std::numeric_limits<std::int64_t>::max() / 1000) {
    observed *= 1000;
    max_ratio = static_cast<double>(enforced.milli_value());
  }
  if (observed > max_ratio)
    errs.push_back(fmt::format("{} max limit to request ratio per {} is {}, but provided ratio is {:f}", r, type,
                               enforced.to_string(), display));
}

// utilerrors.NewAggregate(errs).Error(): one message as is, several deduplicated in "[a, b]".
std::string aggregate(const std::vector<std::string>& errs) {
  std::vector<std::string> seen;
  for (const auto& e : errs)
    if (std::find(seen.begin(), seen.end(), e) == seen.end()) seen.push_back(e);
  if (seen.size() == 1) return seen.front();
  return fmt::format("[{}]", fmt::join(seen, ", "));
}

// min, max and maxLimitRequestRatio of one item against requests/limits (map keys in sorted
// order; Go iterates its maps at random).
void check_item(const json::object& item, const std::string& type, const ResourceList& requests,
                const ResourceList& limits, std::vector<std::string>& errs) {
  for (const auto& [k, v] : resource_list(object_at(item, {"min"}))) min_constraint(type, k, v, requests, limits, errs);
  for (const auto& [k, v] : resource_list(object_at(item, {"max"}))) max_constraint(type, k, v, requests, limits, errs);
  for (const auto& [k, v] : resource_list(object_at(item, {"maxLimitRequestRatio"})))
    ratio_constraint(type, k, v, requests, limits, errs);
}

// A container's requests as the API server holds them at admission: a limit fills a missing
// request (SetDefaults_Pod runs when the body is decoded, before admission).
ResourceList container_requests(const json::object& c) {
  ResourceList req = resource_list(object_at(c, {"resources", "requests"}));
  for (const auto& [k, v] : resource_list(object_at(c, {"resources", "limits"}))) req.emplace(k, v);
  return req;
}

// PodMutateLimitFunc: the Container items' default requests and limits fill what each container
// leaves unset, noted in the kubernetes.io/limit-ranger annotation.
void mutate_pod(const json::object& lr, json::object& pod) {
  json::object defaults_req, defaults_lim;
  if (const json::array* items = util::array_at(lr, {"spec"}, "limits"))
    for (const auto& item : *items) {
      if (!item.is_object() || string_of(&item.as_object(), "type") != "Container") continue;
      if (const json::object* d = object_at(item.as_object(), {"defaultRequest"}))
        for (const auto& [k, v] : *d) defaults_req[k] = v;
      if (const json::object* d = object_at(item.as_object(), {"default"}))
        for (const auto& [k, v] : *d) defaults_lim[k] = v;
    }
  std::vector<std::string> notes;
  for (const auto& [key, prefix] :
       {std::pair{"containers", "container"}, std::pair{"initContainers", "init container"}}) {
    json::value* cs =
        pod.contains("spec") && pod["spec"].is_object() ? pod["spec"].as_object().if_contains(key) : nullptr;
    if (!cs || !cs->is_array()) continue;
    for (auto& cv : cs->as_array()) {
      if (!cv.is_object()) continue;
      json::object& c = cv.as_object();
      json::object& res = util::ensure_object(c, "resources");
      // What decoding already defaulted: requests from limits.
      const ResourceList requests = container_requests(c);
      std::set<std::string> set_req, set_lim;
      for (const auto& [k, v] : defaults_lim) {
        const json::object* lim = object_at(res, {"limits"});
        if (!lim || !lim->contains(k)) {
          util::ensure_object(res, "limits")[k] = v;
          set_lim.insert(k);
        }
      }
      for (const auto& [k, v] : defaults_req) {
        if (!requests.count(k)) {
          util::ensure_object(res, "requests")[k] = v;
          set_req.insert(k);
        }
      }
      const std::string name = string_of(&c, "name");
      if (!set_req.empty())
        notes.push_back(fmt::format("{} request for {} {}", fmt::join(set_req, ", "), prefix, name));
      if (!set_lim.empty()) notes.push_back(fmt::format("{} limit for {} {}", fmt::join(set_lim, ", "), prefix, name));
    }
  }
  if (notes.empty()) return;
  std::string text = "LimitRanger plugin set: ";
  for (std::size_t i = 0; i < notes.size(); ++i) text += (i ? "; " : "") + notes[i];
  util::ensure_object(util::ensure_object(pod, "metadata"), "annotations")["kubernetes.io/limit-ranger"] = text;
}

// PodValidateLimitFunc / PersistentVolumeClaimValidateLimitFunc.
std::vector<std::string> validate(const json::object& lr, const ResourceType& t, const json::object& obj) {
  std::vector<std::string> errs;
  const json::array* items = util::array_at(lr, {"spec"}, "limits");
  if (!items) return errs;
  for (const auto& iv : *items) {
    if (!iv.is_object()) continue;
    const json::object& item = iv.as_object();
    const std::string type = string_of(&item, "type");
    if (is(t, "pods") && type == "Container") {
      for (const char* key : {"containers", "initContainers"})
        if (const json::array* cs = util::array_at(obj, {"spec"}, key))
          for (const auto& c : *cs)
            if (c.is_object())
              check_item(item, type, container_requests(c.as_object()),
                         resource_list(object_at(c.as_object(), {"resources", "limits"})), errs);
    } else if (is(t, "pods") && type == "Pod") {
      check_item(item, type, pod_requests(obj, false), pod_limits(obj, false), errs);
    } else if (is(t, "persistentvolumeclaims") && type == "PersistentVolumeClaim") {
      const ResourceList requests = resource_list(object_at(obj, {"spec", "resources", "requests"}));
      for (const auto& [k, v] : resource_list(object_at(item, {"min"}))) min_constraint(type, k, v, requests, {}, errs);
      for (const auto& [k, v] : resource_list(object_at(item, {"max"})))
        max_request_constraint(type, k, v, requests, errs);
    }
  }
  return errs;
}

}  // namespace

void limit_ranger(Store& store, AdmissionRequest& r, bool mutate) {
  if (!r.type || !r.object) return;
  using Op = AdmissionRequest::Operation;
  if (is(*r.type, "limitranges")) {
    if (mutate && r.subresource.empty() && r.operation != Op::Delete) default_limit_range(*r.object);
    return;
  }
  // SupportsAttributes: pods on create, claims on create and update, no subresources; an object
  // being deleted is left alone.
  if (!r.subresource.empty()) return;
  const bool pod = is(*r.type, "pods"), claim = is(*r.type, "persistentvolumeclaims");
  if (!(pod && r.operation == Op::Create) && !(claim && (r.operation == Op::Create || r.operation == Op::Update)))
    return;
  if (r.old_object && object_at(*r.old_object, {"metadata"}) &&
      object_at(*r.old_object, {"metadata"})->contains("deletionTimestamp"))
    return;
  const auto ranges = store.list(store.type("", "limitranges"), r.ns).items;
  if (ranges.empty()) return;
  if (mutate) {
    if (pod)
      for (const auto& lr : ranges) mutate_pod(*lr, *r.object);  // Admit: every range's defaults, in turn
    return;
  }
  for (const auto& lr : ranges)
    if (const auto errs = validate(*lr, *r.type, *r.object); !errs.empty())
      throw admission_forbidden(r, aggregate(errs));
}

}  // namespace gpupool::embedded
