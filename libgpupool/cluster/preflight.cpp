// The quota pre-flight of Cluster::submit (issue #14 item 2): before anything is created, the
// namespace's LimitRanges and ResourceQuotas judge the pods the submission will make.
//
// A Deployment or a Job is accepted even when every pod it would make is refused: the pods are
// refused later, by the ReplicaSet or Job controller, and the user sees a workload that never
// starts. So each distinct pod template of the submission is first created as a Pod with
// dryRun=All: the API server runs LimitRanger and ResourceQuota admission on it (admission runs on
// dry-run requests), and its refusal is the real one, word for word ("failed quota: q: must specify
// limits.cpu for: main", "exceeded quota: ...", a LimitRange maximum). A single pod can fit while
// all of them together do not: the defaulted pods the server returned are then charged, times
// their replica count, against each unscoped quota's status (used/hard), with the quota
// evaluator's own usage rule (embedded::pod_quota_usage, pkg/quota/v1/evaluator/core/pods.go).
#include "cluster/preflight.hpp"

#include "cluster/resources.hpp"
#include "embedded/quota.hpp"
#include "gpupool/error.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <vector>

namespace gpupool::detail {

namespace json = boost::json;

namespace {

struct PodTemplate {
  const json::object* tmpl;  // {metadata, spec}
  std::int64_t count;
};

std::int64_t int_or(const json::object& o, const char* key, std::int64_t fallback) {
  const auto* v = o.if_contains(key);
  return v && v->is_int64() ? v->as_int64() : v && v->is_uint64() ? static_cast<std::int64_t>(v->as_uint64()) : fallback;
}

/// Every pod template under `o` (spec.template of Deployments and Jobs, the replica specs of the
/// Kubeflow kinds), each with how many pods it makes (replicas / parallelism, default 1).
void collect(const json::object& o, std::vector<PodTemplate>& out) {
  for (const auto& [key, value] : o) {
    if (!value.is_object()) continue;
    const auto& child = value.as_object();
    if (key == "template") {
      const auto* spec = child.if_contains("spec");
      if (spec && spec->is_object() && spec->as_object().contains("containers")) {
        out.push_back({&child, std::max<std::int64_t>(0, int_or(o, "replicas", int_or(o, "parallelism", 1)))});
        continue;
      }
    }
    collect(child, out);
  }
}

std::string pretty(const embedded::ResourceList& l) {
  std::string s;
  for (const auto& [k, v] : l) s += (s.empty() ? "" : ",") + k + "=" + v.to_string();
  return s;
}

[[noreturn]] void refuse(const std::string& ns, const std::string& what, const ApiError* from) {
  throw ApiError(from ? from->code() : 403, from ? from->reason() : "Forbidden",
                 fmt::format("namespace \"{}\" would refuse this job's pods, so nothing was created: {}", ns, what),
                 from ? from->causes() : std::vector<StatusCause>{});
}

}  // namespace

void preflight(const Client& client, const Submission& submission, const std::string& ns) {
  std::vector<PodTemplate> templates;
  for (const auto& object : submission.objects) {
    if (str_at(object, {"kind"}) == "Pod") {
      templates.push_back({&object, 1});
      continue;
    }
    if (const auto* spec = obj_at(object, {"spec"})) collect(*spec, templates);
  }
  if (templates.empty()) return;

  embedded::ResourceList total;
  WriteOptions dry;
  dry.dry_run = true;
  dry.field_manager = "gpupool";
  for (const auto& t : templates) {
    if (t.count == 0) continue;
    json::object pod{{"apiVersion", "v1"}, {"kind", "Pod"}};
    json::object md;
    if (const auto* m = obj_at(*t.tmpl, {"metadata"})) md = *m;
    md.erase("name");
    md["generateName"] = "gpupool-preflight-";
    md["namespace"] = ns;
    pod["metadata"] = std::move(md);
    pod["spec"] = *obj_at(*t.tmpl, {"spec"});
    json::object admitted;
    try {
      admitted = client.create(kPods, ns, pod, dry);
    } catch (const ApiError& e) {
      // RBAC that lets the user create workloads but not bare pods says nothing about quota: the
      // pre-flight then leaves the judgement to the real creates.
      if (e.code() == 403 && e.status_message().find("cannot create resource") != std::string::npos) return;
      if (e.code() != 403 && e.code() != 422) throw;
      std::string why = e.status_message();
      if (auto at = why.find(" is forbidden: "); at != std::string::npos) why = why.substr(at + 15);
      refuse(ns, why, &e);
    }
    const auto usage = embedded::pod_quota_usage(admitted);
    for (const auto& [resource, q] : usage) total[resource] += q * t.count;
  }

  // All the pods together, against each quota's room. Scoped quotas (Terminating, BestEffort,
  // PriorityClass, ...) were judged pod by pod above; the sum is checked for unscoped ones.
  for (const auto& v : client.list_all(kQuotas, ns)) {
    if (!v.is_object()) continue;
    const auto& quota = v.as_object();
    const auto* scopes = arr_at(quota, {"spec", "scopes"});
    if ((scopes && !scopes->empty()) || obj_at(quota, {"spec", "scopeSelector"})) continue;
    const auto hard = embedded::resource_list(obj_at(quota, {"status", "hard"}) ? obj_at(quota, {"status", "hard"})
                                                                                 : obj_at(quota, {"spec", "hard"}));
    const auto used = embedded::resource_list(obj_at(quota, {"status", "used"}));
    embedded::ResourceList requested, used_of, limited;
    for (const auto& [resource, limit] : hard) {
      auto t = total.find(resource);
      if (t == total.end() || t->second.is_zero()) continue;
      auto u = used.find(resource);
      const Quantity in_use = u == used.end() ? Quantity{} : u->second;
      if (in_use + t->second > limit) {
        requested[resource] = t->second;
        used_of[resource] = in_use;
        limited[resource] = limit;
      }
    }
    if (!requested.empty())
      refuse(ns,
             fmt::format("exceeded quota: {}, requested (all {} of its pods): {}, used: {}, limited: {}",
                         str_at(quota, {"metadata", "name"}), [&] {
                           std::int64_t n = 0;
                           for (const auto& t : templates) n += t.count;
                           return n;
                         }(), pretty(requested), pretty(used_of), pretty(limited)),
             nullptr);
  }
}

void warn_unknown_storage_classes(const Client& client, const std::vector<json::object>& objects, const Logger& logger) {
  if (!logger) return;
  std::vector<std::string> wanted;
  for (const auto& o : objects)
    if (str_at(o, {"kind"}) == "PersistentVolumeClaim")
      if (auto cls = str_at(o, {"spec", "storageClassName"}); !cls.empty()) wanted.push_back(cls);
  if (wanted.empty()) return;
  static const ResourceRef kStorageClasses{"storage.k8s.io", "v1", "storageclasses", "StorageClass", false};
  std::vector<std::string> known;
  try {
    for (const auto& sc : client.list_all(kStorageClasses, "")) known.push_back(str_at(sc.as_object(), {"metadata", "name"}));
  } catch (const ApiError&) {
    return;  // not allowed to list them: nothing to say
  }
  for (const auto& cls : wanted) {
    if (std::find(known.begin(), known.end(), cls) != known.end()) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    logger(LogLevel::warning,
           fmt::format("storage class \"{}\" does not exist in this cluster (it has: {}); a claim of that class stays "
                       "Pending until it is created", cls, list.empty() ? "none" : list));
  }
}

}  // namespace gpupool::detail
