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

[[noreturn]] void refuse(const std::string& ns, const std::string& what, const ApiError* from) {
  throw ApiError(from ? from->code() : 403, from ? from->reason() : "Forbidden",
                 fmt::format("namespace \"{}\" would refuse this job's pods, so nothing was created: {}", ns, what),
                 from ? from->causes() : std::vector<StatusCause>{});
}

}  // namespace

PreflightPods preflight_pods(const Submission& submission, const std::string& ns) {
  PreflightPods out;
  for (const auto& object : submission.objects)
    for (const auto& t : pod_templates(object)) {
      out.total += t.pods;  // every pod of the submission
      if (t.pods == 0) continue;
      json::object pod{{"apiVersion", "v1"}, {"kind", "Pod"}};
      json::object md;
      if (const auto* m = obj_at(*t.tmpl, {"metadata"})) md = *m;
      md.erase("name");
      md["generateName"] = "gpupool-preflight-";
      md["namespace"] = ns;
      pod["metadata"] = std::move(md);
      pod["spec"] = *obj_at(*t.tmpl, {"spec"});
      out.pods.push_back(std::move(pod));
      out.counts.push_back(t.pods);
    }
  return out;
}

std::vector<Client::Read> preflight_reads(const PreflightPods& pods, const std::string& ns) {
  std::vector<Client::Read> reads;
  for (const auto& pod : pods.pods) {
    Client::Read r{kPods, ns, ""};
    r.speculative = true;  // a refusal is asked again by preflight(), which words it
    r.dry_run_create = &pod;
    r.field_manager = "gpupool";
    reads.push_back(std::move(r));
  }
  // More than one pod: the namespace's quotas are read too, to charge them all together.
  if (pods.total > 1 && !pods.pods.empty()) reads.push_back({kQuotas, ns, "", {}, true});
  return reads;
}

void preflight(const Client& client, const Submission& submission, const std::string& ns) {
  preflight(client, preflight_pods(submission, ns), ns);
}

void preflight(const Client& client, const PreflightPods& pods, const std::string& ns,
               const std::vector<Client::ReadResult>* admitted_already) {
  if (pods.pods.empty()) return;
  embedded::ResourceList total;
  WriteOptions dry;
  dry.dry_run = true;
  dry.field_manager = "gpupool";
  dry.report_warnings = false;  // the workload's own create warns about its template
  for (std::size_t i = 0; i < pods.pods.size(); ++i) {
    json::object admitted;
    if (admitted_already && i < admitted_already->size() && (*admitted_already)[i].ok &&
        (*admitted_already)[i].object) {
      admitted = *(*admitted_already)[i].object;  // sent with the submission's reads
    } else {
      try {
        admitted = client.create(kPods, ns, pods.pods[i], dry);
      } catch (const ApiError& e) {
        // RBAC that lets the user create workloads but not bare pods says nothing about quota: the
        // pre-flight then leaves the judgement to the real creates.
        if (e.code() == 403 && e.status_message().find("cannot create resource") != std::string::npos) return;
        if (e.code() != 403 && e.code() != 422) throw;
        std::string why = e.status_message();
        if (auto at = why.find(" is forbidden: "); at != std::string::npos) why = why.substr(at + 15);
        refuse(ns, why, &e);
      }
    }
    const auto usage = embedded::pod_quota_usage(admitted);
    for (const auto& [resource, q] : usage) total[resource] += q * pods.counts[i];
  }

  // One pod in all: the dry run above was ResourceQuota admission's own verdict on exactly what
  // will be created (its usage plus the quota's used against hard), so there is no sum to check.
  if (pods.total == 1) return;
  // All the pods together, against each quota's room. Scoped quotas (Terminating, BestEffort,
  // PriorityClass, ...) were judged pod by pod above; the sum is checked for unscoped ones.
  const bool quotas_read =
      admitted_already && admitted_already->size() == pods.pods.size() + 1 && admitted_already->back().ok;
  const json::array quotas = quotas_read ? admitted_already->back().items : client.list_all(kQuotas, ns);
  for (const auto& v : quotas) {
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
                         str_at(quota, {"metadata", "name"}), pods.total, embedded::pretty(requested),
                         embedded::pretty(used_of), embedded::pretty(limited)),
             nullptr);
  }
}

void warn_unknown_storage_classes(const Client& client, const std::vector<json::object>& objects,
                                  const Logger& logger) {
  if (!logger) return;
  std::vector<std::string> wanted;
  for (const auto& o : objects)
    if (str_at(o, {"kind"}) == "PersistentVolumeClaim")
      if (auto cls = str_at(o, {"spec", "storageClassName"}); !cls.empty()) wanted.push_back(cls);
  if (wanted.empty()) return;
  static const ResourceRef kStorageClasses{"storage.k8s.io", "v1", "storageclasses", "StorageClass", false};
  std::vector<std::string> known;
  try {
    for (const auto& sc : client.list_all(kStorageClasses, ""))
      known.push_back(str_at(sc.as_object(), {"metadata", "name"}));
  } catch (const ApiError&) {
    return;  // not allowed to list them: nothing to say
  }
  for (const auto& cls : wanted) {
    if (std::find(known.begin(), known.end(), cls) != known.end()) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    logger(LogLevel::warning,
           fmt::format("storage class \"{}\" does not exist in this cluster (it has: {}); a claim of that class stays "
                       "Pending until it is created",
                       cls, list.empty() ? "none" : list));
  }
}

}  // namespace gpupool::detail
