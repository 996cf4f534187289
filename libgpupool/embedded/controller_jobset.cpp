// embedded/controller_jobset.cpp — the JobSet controller (kubernetes-sigs/jobset v0.12.0,
// pkg/controllers/jobset_controller.go): plan_jobset.
//
// A JobSet (jobset.x-k8s.io/v1alpha2) runs, for every replicatedJob and each of its `replicas`,
// one batch/v1 Job `<jobset>-<replicatedJob>-<index>` (placement.GenJobName) from the
// replicatedJob's template, labelled and annotated as labelAndAnnotateObject does (job and pod
// template), with the pods' subdomain set to the headless Service `<jobset>` (or
// network.subdomain) that createHeadlessSvcIfNecessary creates when DNS hostnames are enabled (the
// default). The Jobs run Indexed (the JobSet webhook's default when DNS hostnames are on), so the
// Job controller names the pods `<job>-<index>-xxxxx` with hostname `<job>-<index>`.
// Status: replicatedJobsStatus {name, ready, succeeded, failed, active, suspended} per
// replicatedJob (in spec order), conditions Completed (AllJobsCompleted, every Job complete: the
// default success policy "All"), Failed (FailedJobs, the first failed Job named: the default
// failure policy, no restarts), Suspended (SuspendedJobs / ResumeJobs), terminalState.
// Simplifications: no failurePolicy restarts, successPolicy targets, startupPolicy, dependsOn,
// coordinator, exclusive placement or volumeClaimPolicies (the runtimes gpupool uses have none).
#include <openssl/sha.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "embedded/controllers.hpp"
#include "embedded/controllers_util.hpp"

namespace gpupool::embedded {
using namespace ctrl;  // the controllers' helpers (controllers_util.hpp)

namespace {

constexpr const char* kPrefix = "jobset.sigs.k8s.io/";

// jobHashKey: the SHA-1 of "<namespace>/<job name>", in hex.
std::string job_key(const std::string& ns, const std::string& job) {
  const std::string in = ns + "/" + job;
  unsigned char md[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(in.data()), in.size(), md);
  std::string out;
  for (unsigned char c : md) out += fmt::format("{:02x}", c);
  return out;
}

bool bool_at(const json::object* o, std::string_view key) {
  const json::value* v = o ? o->if_contains(key) : nullptr;
  return v && v->is_bool() && v->as_bool();
}

void merge_into(json::object& to, const json::object& from) {
  for (const auto& [k, v] : from) to[k] = v;
}

bool job_has_condition(const json::object& job, std::string_view type) {
  const json::object* c = util::find_condition(util::array_at(job, {"status"}, "conditions"), type);
  return c && string_of(c, "status") == "True";
}

}  // namespace

Plan plan_jobset(const json::object& js, const Children& children, Clock::time_point now) {
  Plan plan;
  const std::string name = name_of(js), ns = namespace_of(js), uid = uid_of(js);
  const json::object* spec = object_at(js, {"spec"});
  const json::object* network = object_at(js, {"spec", "network"});
  const std::string subdomain = !string_of(network, "subdomain").empty() ? string_of(network, "subdomain") : name;
  const json::value* dns = network ? network->if_contains("enableDNSHostnames") : nullptr;
  const bool dns_hostnames = !dns || !dns->is_bool() || dns->as_bool();
  const bool suspend = bool_at(spec, "suspend");
  const std::int64_t restarts = int_of(object_at(js, {"status"}), "restarts", 0);

  std::map<std::string, const json::object*> jobs, services;
  for (const auto& c : children) {
    if (string_of(c.get(), "kind") == "Service")
      services[name_of(*c)] = c.get();
    else
      jobs[name_of(*c)] = c.get();
  }

  json::object status = object_at(js, {"status"}) ? *object_at(js, {"status"}) : json::object{};
  json::array conditions;
  if (const json::array* c = util::array_at(js, {"status"}, "conditions")) conditions = *c;
  const bool finished = !string_of(&status, "terminalState").empty();

  const json::array* rjobs = util::array_at(js, {"spec"}, "replicatedJobs");
  // globalReplicas: the Jobs of every replicatedJob.
  // groupReplicas / groupJobIndex: the same, within the replicatedJob's group ("default").
  auto group_of = [](const json::object& r) {
    return string_of(&r, "groupName").empty() ? std::string("default") : string_of(&r, "groupName");
  };
  std::int64_t global = 0;
  std::map<std::string, std::int64_t> group_total, group_next;
  if (rjobs)
    for (const auto& r : *rjobs)
      if (r.is_object()) {
        global += count_of(&r.as_object(), "replicas", 1);
        group_total[group_of(r.as_object())] += count_of(&r.as_object(), "replicas", 1);
      }

  if (!finished && dns_hostnames && !services.count(subdomain)) {
    json::object svc{{"apiVersion", "v1"},
                     {"kind", "Service"},
                     {"metadata", json::object{{"name", subdomain},
                                               {"namespace", ns},
                                               {"ownerReferences", json::array{util::controller_reference(js)}}}},
                     {"spec", json::object{{"clusterIP", "None"},
                                           {"selector", json::object{{std::string(kPrefix) + "jobset-name", name}}},
                                           {"publishNotReadyAddresses", true}}}};
    if (const json::value* p = network ? network->if_contains("publishNotReadyAddresses") : nullptr; p && p->is_bool())
      svc["spec"].as_object()["publishNotReadyAddresses"] = p->as_bool();
    plan.create.push_back({"", "services", std::move(svc)});
  }

  json::array rj_status;
  std::int64_t total = 0, succeeded_jobs = 0;
  std::string first_failed;
  std::int64_t global_index = 0;
  if (rjobs)
    for (const auto& rv : *rjobs) {
      if (!rv.is_object()) continue;
      const json::object& r = rv.as_object();
      const std::string rname = string_of(&r, "name");
      const std::int64_t replicas = count_of(&r, "replicas", 1);
      const std::string group = group_of(r);
      std::int64_t ready = 0, succeeded = 0, failed = 0, active = 0, suspended = 0;
      for (std::int64_t i = 0; i < replicas; ++i, ++global_index, ++group_next[group]) {
        const std::string job_name = fmt::format("{}-{}-{}", name, rname, i);
        ++total;
        auto it = jobs.find(job_name);
        if (it == jobs.end()) {
          if (finished) continue;
          // constructJob + labelAndAnnotateObject (job and pod template alike).
          const std::map<std::string, std::string> marks{{"jobset-name", name},
                                                         {"jobset-uid", uid},
                                                         {"replicatedjob-name", rname},
                                                         {"restart-attempt", std::to_string(restarts)},
                                                         {"replicatedjob-replicas", std::to_string(replicas)},
                                                         {"global-replicas", std::to_string(global)},
                                                         {"job-index", std::to_string(i)},
                                                         {"job-key", job_key(ns, job_name)},
                                                         {"job-global-index", std::to_string(global_index)},
                                                         {"group-name", group},
                                                         {"group-replicas", std::to_string(group_total[group])},
                                                         {"job-group-index", std::to_string(group_next[group])}};
          auto mark = [&](json::object& md) {
            // (one member at a time: adding one to `md` may move the other)
            for (const char* field : {"labels", "annotations"}) {
              auto& m = ensure_object(md, field);
              for (const auto& [k, v] : marks) m[std::string(kPrefix) + k] = v;
            }
          };
          const json::object* tmpl = object_at(r, {"template"});
          json::object md;
          if (const json::object* tmd = tmpl ? object_at(*tmpl, {"metadata"}) : nullptr)
            for (const char* k : {"labels", "annotations"})
              if (const json::value* v = tmd->if_contains(k)) md[k] = *v;
          md["name"] = job_name;
          md["namespace"] = ns;
          md["ownerReferences"] = json::array{util::controller_reference(js)};
          mark(md);
          json::object jspec = tmpl && object_at(*tmpl, {"spec"}) ? *object_at(*tmpl, {"spec"}) : json::object{};
          // The JobSet webhook's defaults (jobset_webhook.go Default): Indexed completion and
          // restartPolicy OnFailure when the template leaves them unset.
          if (!jspec.contains("completionMode")) jspec["completionMode"] = "Indexed";
          auto& ptmpl = ensure_object(jspec, "template");
          mark(ensure_object(ptmpl, "metadata"));
          auto& pspec = ensure_object(ptmpl, "spec");
          if (!pspec.contains("restartPolicy")) pspec["restartPolicy"] = "OnFailure";
          if (dns_hostnames) pspec["subdomain"] = subdomain;
          jspec["suspend"] = suspend;
          json::object job{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", std::move(md)}};
          job["spec"] = std::move(jspec);
          plan.create.push_back({"batch", "jobs", std::move(job)});
          if (suspend) ++suspended;
          continue;
        }
        const json::object& job = *it->second;
        const json::object* jspec = object_at(job, {"spec"});
        const json::object* jst = object_at(job, {"status"});
        if (job_has_condition(job, "Complete")) {
          ++succeeded;
          ++succeeded_jobs;
          continue;
        }
        if (job_has_condition(job, "Failed")) {
          ++failed;
          if (first_failed.empty()) first_failed = job_name;
          continue;
        }
        // updateReplicatedJobsStatuses: ready when its succeeded + ready pods reach its pods count.
        const std::int64_t pods = std::min(count_of(jspec, "parallelism", 1), count_of(jspec, "completions", 1));
        if (int_of(jst, "succeeded", 0) + int_of(jst, "ready", 0) >= pods) ++ready;
        if (int_of(jst, "active", 0) > 0) ++active;
        const bool job_suspended = bool_at(jspec, "suspend");
        if (job_suspended) ++suspended;
        // suspendJobs / resumeJobsIfNecessary: the Jobs follow the JobSet's suspend.
        if (!finished && job_suspended != suspend) {
          json::object next = job;
          json::object& nspec = next["spec"].as_object();
          nspec["suspend"] = suspend;
          // resumeJob: what Kueue may have changed on the replicatedJob's pod template while the
          // JobSet was suspended reaches the Job before it runs (collections.MergeMaps of labels,
          // annotations and nodeSelector, the template's winning; MergeSlices of tolerations and
          // schedulingGates: those missing appended).
          if (const json::object* from = suspend ? nullptr : object_at(r, {"template", "spec", "template"})) {
            json::object& to = ensure_object(nspec, "template");
            for (const char* k : {"labels", "annotations"})
              if (const json::object* m = object_at(*from, {"metadata", k}))
                merge_into(ensure_object(ensure_object(to, "metadata"), k), *m);
            if (const json::object* m = object_at(*from, {"spec", "nodeSelector"}))
              merge_into(ensure_object(ensure_object(to, "spec"), "nodeSelector"), *m);
            for (const char* k : {"tolerations", "schedulingGates"})
              if (const json::array* a = util::array_at(*from, {"spec"}, k)) {
                json::value& cur = ensure_object(to, "spec")[k];
                if (!cur.is_array()) cur = json::array{};
                for (const auto& x : *a)
                  if (std::none_of(cur.as_array().begin(), cur.as_array().end(),
                                   [&](const json::value& y) { return util::json_equal(x, y); }))
                    cur.as_array().push_back(x);
              }
          }
          plan.update.push_back({"batch", "jobs", std::move(next)});
        }
      }
      rj_status.push_back(json::object{{"name", rname},
                                       {"ready", ready},
                                       {"succeeded", succeeded},
                                       {"failed", failed},
                                       {"active", active},
                                       {"suspended", suspended}});
    }
  status["replicatedJobsStatus"] = std::move(rj_status);
  if (!status.contains("restarts")) status["restarts"] = 0;

  if (!finished) {
    if (!first_failed.empty()) {
      const std::string msg =
          fmt::format("jobset failed due to one or more job failures (first failed job: {})", first_failed);
      util::set_condition(conditions, condition("Failed", true, "FailedJobs", msg, now));
      plan.events.push_back({"Warning", "FailedJobs", msg});
      status["terminalState"] = "Failed";
    } else if (total > 0 && succeeded_jobs == total) {
      util::set_condition(conditions,
                          condition("Completed", true, "AllJobsCompleted", "jobset completed successfully", now));
      plan.events.push_back({"Normal", "AllJobsCompleted", "jobset completed successfully"});
      status["terminalState"] = "Completed";
    } else {
      const json::object* was = util::find_condition(&conditions, "Suspended");
      const bool was_true = was && string_of(was, "status") == "True";
      if (suspend && !was_true) {
        util::set_condition(conditions, condition("Suspended", true, "SuspendedJobs", "jobset is suspended", now));
        plan.events.push_back({"Normal", "SuspendedJobs", "jobset is suspended"});
      } else if (!suspend && was_true) {
        util::set_condition(conditions, condition("Suspended", false, "ResumeJobs", "jobset is resumed", now));
        plan.events.push_back({"Normal", "ResumeJobs", "jobset is resumed"});
      }
    }
    // A finished JobSet deletes the Jobs still running (jobset_controller.go: deleteJobs of the
    // active Jobs once the JobSet is finished).
    if (status.contains("terminalState"))
      for (const auto& [jn, j] : jobs)
        if (!job_has_condition(*j, "Complete") && !job_has_condition(*j, "Failed"))
          plan.remove.push_back({"batch", "jobs", jn});
  }
  if (!conditions.empty()) status["conditions"] = std::move(conditions);
  const json::object* old = object_at(js, {"status"});
  if (!old || !util::json_equal(*old, status)) plan.status = std::move(status);
  return plan;
}

}  // namespace gpupool::embedded
