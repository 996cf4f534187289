// The Cluster facade: connection, nodes, taints, PVCs, quotas, rendering and submission.
// Job queries (get/list/wait/logs/delete) are in jobs.cpp, displays in format.cpp.
#include "cluster/impl.hpp"
#include "cluster/preflight.hpp"
#include "cluster/queues.hpp"

#include "gpupool/error.hpp"
#include "gpupool/image.hpp"
#include "gpupool/manifest.hpp"
#include "gpupool/storage.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <future>
#include <optional>
#include <random>
#include <unordered_map>
#include <utility>

namespace gpupool {

namespace json = boost::json;
using namespace detail;

Cluster::Cluster(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {

std::string random_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}{:016x}", rng(), rng());
}

struct Placed {
  ResourceRef ref;
  std::string ns, name;
  std::string text() const {
    return fmt::format("{} in namespace \"{}\"", kubectl_name(ref.kind, ref.group, name), ns);
  }
};

/// Whether a failed create may still have stored the object: no answer, or a 429/5xx after the
/// retries ran out (the write may have landed before the answer was lost). A 4xx other than 429
/// is the server refusing it (validation, admission, quota, a taken name): nothing was stored.
bool may_have_landed(std::exception_ptr e) {
  try {
    std::rethrow_exception(std::move(e));
  } catch (const CancelledError&) {
    return true;
  } catch (const ApiError& a) {
    return a.code() == 429 || a.code() >= 500;
  } catch (const TransportError&) {
    return true;
  } catch (...) {
    return false;
  }
}

/// Deletes what a failed submission stored, newest first, with the client's retries (faults on
/// the way are retried as for any DELETE); a 404 means already gone. `in_flight`: the object whose
/// create failed in a way that may have stored it; deleted only if it carries this submission's
/// id (the name may be someone else's). Returns what could not be removed, each with the reason.
std::vector<std::string> roll_back(const Client& client, const std::vector<Placed>& created,
                                   const std::optional<Placed>& in_flight, const std::string& id) {
  CancelScope uncancellable;  // a cancelled caller still gets its half-done submission undone
  DeleteOptions d;
  d.propagation = PropagationPolicy::background;
  std::vector<std::string> left;
  auto remove = [&](const Placed& p, const DeleteOptions& options) {
    try {
      client.remove(p.ref, p.ns, p.name, options);
    } catch (const ApiError& e) {
      if (e.code() != 404) left.push_back(fmt::format("{} ({})", p.text(), e.what()));
    } catch (const Error& e) {
      left.push_back(fmt::format("{} ({})", p.text(), e.what()));
    }
  };
  if (in_flight) {
    try {
      json::object stored = client.get(in_flight->ref, in_flight->ns, in_flight->name);
      if (str_at(stored, {"metadata", "annotations", client.options().submission_id_annotation}) == id) {
        DeleteOptions mine = d;
        mine.precondition_uid = str_at(stored, {"metadata", "uid"});  // exactly the object we stored
        remove(*in_flight, mine);
      }
    } catch (const ApiError& e) {
      if (e.code() != 404)
        left.push_back(fmt::format("{}, if its create went through ({})", in_flight->text(), e.what()));
    } catch (const Error& e) {
      left.push_back(fmt::format("{}, if its create went through ({})", in_flight->text(), e.what()));
    }
  }
  for (auto it = created.rbegin(); it != created.rend(); ++it) remove(*it, d);
  return left;
}

/// Rethrows `original` (same type, code and fields) with `note` added to its message.
[[noreturn]] void rethrow_with_note(std::exception_ptr original, const std::string& note) {
  try {
    std::rethrow_exception(std::move(original));
  } catch (const ApiError& e) {
    throw ApiError(e.code(), e.reason(), e.status_message() + note, e.causes(), e.retry_after_seconds());
  } catch (const ResponseTooLargeError& e) {
    throw ResponseTooLargeError(e.what() + note);
  } catch (const TransportError& e) {
    throw TransportError(e.what() + note);
  } catch (const CancelledError& e) {
    throw CancelledError(e.what() + note);
  } catch (const ValidationError& e) {
    throw ValidationError(e.field(), e.value(), e.rule() + note);
  } catch (const std::exception& e) {
    throw Error(e.what() + note);
  }
}

}  // namespace

Cluster Cluster::connect(const ConnectOptions& options) {
  KubeConfigOptions ko;
  ko.context = options.context;
  ko.logger = options.logger;
  if (options.kubeconfig.find(':') != std::string::npos) {
    // Several files: merged exactly as $KUBECONFIG would be.
    std::string list = options.kubeconfig;
    ko.getenv = [list](const std::string& name) -> std::optional<std::string> {
      if (name == "KUBECONFIG") return list;
      if (const char* v = std::getenv(name.c_str())) return std::string(v);
      return std::nullopt;
    };
  } else {
    ko.path = options.kubeconfig;
  }
  KubeConfig config = load_kubeconfig(ko);
  auto impl = std::make_shared<Impl>();
  impl->ns = options.namespace_.empty() ? config.namespace_name : options.namespace_;
  impl->kubeconfig_namespace = config.namespace_name;
  impl->profile = Profile::resolve(options.profile);
  impl->logger = options.logger;
  ClientOptions co;
  co.logger = options.logger;
  co.transport.logger = options.logger;
  co.retry = options.retry;
  co.cache_dir = options.cache_dir;
  impl->client = std::make_unique<Client>(std::move(config), std::move(co));
  return Cluster(std::move(impl));
}

const std::string& Cluster::namespace_name() const { return impl_->ns; }
const Profile& Cluster::profile() const { return impl_->profile; }
const Client& Cluster::client() const { return *impl_->client; }

void detail::ClusterImpl::forget_served() const {
  std::lock_guard lock(mu);
  served.clear();
}

bool detail::ClusterImpl::serves(const ResourceRef& ref) const {
  if (ref.group.empty() || ref.group == "apps" || ref.group == "batch") return true;
  std::lock_guard lock(mu);
  auto key = ref.group + "/" + ref.version + "/" + ref.resource;
  if (auto it = served.find(key); it != served.end()) return it->second;
  bool found = false;
  for (int attempt = 0; attempt < 2 && !found; ++attempt) {
    try {
      for (const auto& r : client->resources(ref.group, ref.version))
        if (r.name == ref.resource) found = true;
    } catch (const ApiError& e) {
      if (e.code() != 404) throw;
    }
    if (!found && !client->refresh_discovery()) break;  // a miss on another process's cache: ask live
  }
  served[key] = found;
  return found;
}

namespace {

/// Refuses an object of a custom resource version the cluster does not serve before anything is
/// created, naming the versions it serves (a POST there would only answer 404 "the server could
/// not find the requested resource"): an MPIJob rendered for v2beta1 on a training-operator
/// cluster, or a TrainJob where Kubeflow Trainer is not installed.
void require_served(const detail::ClusterImpl& impl, const ResourceRef& ref) {
  if (impl.serves(ref)) return;
  std::vector<std::string> versions;
  for (const auto& v : impl.client->served_versions(ref.group))
    for (const auto& r : impl.client->resources(ref.group, v))
      if (r.kind == ref.kind) versions.push_back(ref.group + "/" + v);
  if (versions.empty())
    throw ApiError(404, "NotFound",
                   fmt::format("the cluster serves no {} (API group {}): install its operator or CRD, or submit "
                               "another kind",
                               ref.kind, ref.group));
  std::string hint;
  if (ref.kind == "MPIJob")
    hint = fmt::format(
        "; submit with --mpi-api {} (Python mpi_api=\"{}\"), or leave it out to use what the "
        "cluster serves",
        versions.front().substr(ref.group.size() + 1), versions.front().substr(ref.group.size() + 1));
  throw ApiError(404, "NotFound",
                 fmt::format("the cluster does not serve {} in {}/{}; it serves {} in {}{}", ref.kind, ref.group,
                             ref.version, ref.kind, fmt::join(versions, ", "), hint));
}

}  // namespace

MpiJobApi Cluster::mpi_job_api() const {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->mpi) return *impl_->mpi;
  }
  auto ref = impl_->client->find_resource("kubeflow.org", "MPIJob");
  if (!ref)
    throw ApiError(404, "NotFound",
                   "the cluster serves no MPIJob (kubeflow.org): install the MPI operator or submit another kind");
  MpiJobApi api = ref->version == "v2beta1" ? MpiJobApi::V2Beta1 : MpiJobApi::V1;
  std::lock_guard lock(impl_->mu);
  impl_->mpi = api;
  return api;
}

// ---- nodes -------------------------------------------------------------------------------------

NodeList Cluster::nodes() const {
  NodeList out;
  out.gpu_resource = impl_->profile.gpu.resource;
  // The nodes and the pods are two independent lists: the nodes are read on another thread while
  // the pods' pages arrive here (the server encodes both at once). Each node is summarized as
  // soon as it is decoded and dropped: only the row is kept.
  const CancelToken* cancel = CancelScope::current();  // the caller's cancellation reaches both
  auto nodes_read = std::async(std::launch::async, [&] {
    std::optional<CancelScope> scope;
    if (cancel) scope.emplace(*cancel);
    for_each_node(*impl_->client, [&](Node&& node) {
      NodeRow row;
      row.node = NodeSummary::of(node, out.gpu_resource);
      row.gpus_total = row.node.gpus;
      out.rows.push_back(std::move(row));
    });
  });
  // GPUs in use: pods bound to a node and not finished. Cluster-wide when allowed; a user confined
  // to its namespace sees its own pods only (and the list says so).
  std::unordered_map<std::string, std::int64_t> allocated;
  bool own_namespace_only = false;
  try {
    own_namespace_only = !for_each_active_pod(*impl_->client, impl_->ns, [&](PodRequirements&& pod) {
      if (pod.node_name.empty()) return;
      if (auto it = pod.requests.find(out.gpu_resource); it != pod.requests.end())
        allocated[pod.node_name] += it->second.value();
    });
  } catch (...) {
    nodes_read.wait();  // never leave the other thread writing into `out`
    throw;
  }
  nodes_read.get();  // the nodes' error, if any
  out.allocation_from_own_namespace_only = own_namespace_only;
  for (NodeRow& row : out.rows)
    if (auto it = allocated.find(row.node.name); it != allocated.end()) row.gpus_allocated = it->second;
  std::sort(out.rows.begin(), out.rows.end(),
            [](const NodeRow& a, const NodeRow& b) { return a.node.name < b.node.name; });
  out.observed = impl_->client->server_now();
  return out;
}

std::string Cluster::taint(const std::string& node, const std::vector<std::string>& changes, bool overwrite) {
  return taint(node, parse_taint_changes(changes), overwrite);
}

std::string Cluster::taint(const std::string& node, const std::vector<TaintChange>& changes, bool overwrite) {
  json::object object = impl_->client->get(kNodes, "", node);
  Node current = Node::from_json(object);
  Node changed = current;
  TaintOutcome outcome = taint_node(node, current.taints, changes, overwrite);
  changed.taints = std::move(outcome.taints);
  // spec.taints has no patch strategy in core/v1 types.go, so a strategic merge patch replaces the
  // whole list, as kubectl taint's patch does. The resourceVersion makes it a compare-and-swap.
  json::object spec;
  json::object rendered = changed.to_json();
  if (auto* s = rendered.if_contains("spec"); s && s->as_object().contains("taints"))
    spec["taints"] = s->as_object().at("taints");
  else
    spec["taints"] = json::array();
  json::object patch{{"metadata", json::object{{"resourceVersion", str_at(object, {"metadata", "resourceVersion"})}}},
                     {"spec", std::move(spec)}};
  impl_->client->patch(kNodes, "", node, PatchType::strategic, patch);
  return outcome.operation;
}

// ---- storage and quotas ------------------------------------------------------------------------

std::vector<PvcInfo> Cluster::pvcs() const {
  std::vector<PvcInfo> out;
  for (const auto& item : impl_->client->list_all(kPvcs, impl_->ns)) {
    const auto& o = item.as_object();
    PvcInfo p;
    p.name = str_at(o, {"metadata", "name"});
    p.status =
        volume_status_column(str_at(o, {"status", "phase"}), !str_at(o, {"metadata", "deletionTimestamp"}).empty());
    p.volume = str_at(o, {"spec", "volumeName"});
    p.capacity = str_at(o, {"status", "capacity", "storage"});
    if (const auto* modes = arr_at(o, {"status", "accessModes"});
        modes || (modes = arr_at(o, {"spec", "accessModes"}))) {
      std::vector<std::string> names;
      for (const auto& m : *modes)
        if (m.is_string()) names.emplace_back(m.get_string());
      p.access_modes = access_modes_column(names);
    }
    p.storage_class = str_at(o, {"spec", "storageClassName"});
    std::string ts = str_at(o, {"metadata", "creationTimestamp"});
    if (!ts.empty()) p.created = parse_rfc3339(ts, "metadata.creationTimestamp");
    out.push_back(std::move(p));
  }
  return out;
}

void Cluster::create_pvc(const PvcRequest& pvc) {
  const json::object claim = render_pvc(pvc, impl_->profile, impl_->ns);
  detail::warn_unknown_storage_classes(*impl_->client, {claim}, impl_->logger);
  impl_->client->create_idempotent(kPvcs, impl_->ns, claim);
}

void Cluster::delete_pvc(const std::string& name) { impl_->client->remove(kPvcs, impl_->ns, name); }

std::vector<QuotaInfo> Cluster::quotas() const {
  std::vector<QuotaInfo> out;
  for (const auto& item : impl_->client->list_all(kQuotas, impl_->ns)) {
    const auto& o = item.as_object();
    QuotaInfo q;
    q.name = str_at(o, {"metadata", "name"});
    if (const auto* hard = obj_at(o, {"spec", "hard"})) {
      for (const auto& [resource, value] : *hard) {
        std::string used = str_at(o, {"status", "used", resource});
        q.resources.emplace_back(std::string(resource), used.empty() ? "0" : used,
                                 value.is_string() ? std::string(value.get_string()) : json::serialize(value));
      }
    }
    out.push_back(std::move(q));
  }
  return out;
}

// ---- submission --------------------------------------------------------------------------------

Submission Cluster::render(Workload workload, bool use_server_mpi_api) const {
  if (workload.namespace_.empty()) workload.namespace_ = impl_->ns;
  if (workload.gang) detail::require_kueue_for_gang(*impl_, workload);  // cluster/queues.cpp
  // Only when the caller left the version to the cluster: an explicit V1 / V2Beta1 is kept.
  if (workload.kind == WorkloadKind::MPIJob && use_server_mpi_api && workload.mpi_api == MpiJobApi::Auto)
    workload.mpi_api = mpi_job_api();
  return gpupool::render(workload, impl_->profile);
}

SubmitResult Cluster::submit(const Workload& workload, bool dry_run) {
  SubmitResult result;
  result.submission = render(workload);
  result.name = workload.name;
  result.namespace_ = workload.namespace_.empty() ? impl_->ns : workload.namespace_;
  // The namespace's quotas and LimitRanges judge the pods first: a workload whose pods would all
  // be refused is not created at all.
  // The pods' dry runs go with the name's reads (one round trip): they store nothing.
  const detail::PreflightPods pods = detail::preflight_pods(result.submission, result.namespace_);
  std::vector<Client::ReadResult> admitted;
  if (!dry_run && result.namespace_ == impl_->ns)
    detail::refuse_taken_name(*impl_, workload.name, detail::preflight_reads(pods, result.namespace_), &admitted);
  detail::preflight(*impl_->client, pods, result.namespace_, &admitted);
  detail::warn_unknown_storage_classes(*impl_->client, result.submission.objects, impl_->logger);
  WriteOptions wo;
  wo.dry_run = dry_run;
  wo.field_manager = "gpupool";
  // One id for every object of this submission: a retried create recognises its own object.
  const std::string id = random_id();
  std::vector<Placed> created;
  std::optional<Placed> in_flight;  // the object being created
  for (const auto& object : result.submission.objects) require_served(*impl_, resource_of(*impl_->client, object));
  try {
    for (auto& object : result.submission.objects) {
      ResourceRef ref = resource_of(*impl_->client, object);
      auto& meta = object["metadata"].as_object();
      auto& annotations =
          meta["annotations"].is_object() ? meta["annotations"].as_object() : meta["annotations"].emplace_object();
      annotations[impl_->client->options().submission_id_annotation] = id;
      std::string ns = str_at(object, {"metadata", "namespace"});
      if (ns.empty()) ns = result.namespace_;
      in_flight = Placed{ref, ns, str_at(object, {"metadata", "name"})};
      json::object stored = impl_->client->create_idempotent(ref, ns, object, wo);
      in_flight.reset();
      std::string name = str_at(stored, {"metadata", "name"});
      if (!dry_run) created.push_back({ref, ns, name});
      result.created.push_back(kubectl_name(ref.kind, ref.group, name));
    }
  } catch (...) {
    // Leave nothing half done: remove what this submission stored. The error raised is the
    // original one; if some object could not be removed, it also names what remains.
    const std::exception_ptr original = std::current_exception();
    if (dry_run || (!in_flight && created.empty())) throw;
    if (in_flight && !may_have_landed(original)) in_flight.reset();
    const std::vector<std::string> left = roll_back(*impl_->client, created, in_flight, id);
    if (left.empty()) throw;
    std::string list;
    for (const auto& l : left) list += (list.empty() ? "" : "; ") + l;
    rethrow_with_note(original, fmt::format(" [the submission was not completed and {} of its objects could not be "
                                            "deleted: {}; delete {} yourself, e.g. with kubectl delete]",
                                            left.size(), list, left.size() == 1 ? "it" : "them"));
  }
  return result;
}

}  // namespace gpupool

// ---- apply -------------------------------------------------------------------------------------

namespace gpupool {

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// An object without what the server and controllers change by themselves (versions, managed
/// fields, status): what is left is what an apply configures.
json::object without_bookkeeping(json::object o) {
  o.erase("status");
  if (auto* md = o.if_contains("metadata"); md && md->is_object())
    for (const char* k : {"managedFields", "resourceVersion", "generation"}) md->as_object().erase(k);
  return o;
}

}  // namespace

std::vector<json::object> Cluster::prepare_manifests(std::vector<json::object> objects) const {
  const Profile& p = impl_->profile;
  for (auto& object : objects) {
    const std::string kind = str_at(object, {"kind"});
    if (kind.empty() || str_at(object, {"apiVersion"}).empty() || str_at(object, {"metadata", "name"}).empty())
      throw ValidationError("manifest", kind.empty() ? "<no kind>" : kind,
                            "every object needs apiVersion, kind and metadata.name");
    check_object_size(object);
    // kubectl's rule: an object's own namespace must be the one the command works in.
    if (const std::string ns = str_at(object, {"metadata", "namespace"}); !ns.empty() && ns != impl_->ns)
      throw ValidationError("metadata.namespace", ns,
                            fmt::format("{}/{} is for namespace \"{}\", this connection works in \"{}\"; pass -n {} to "
                                        "apply it there",
                                        detail::lower(kind), str_at(object, {"metadata", "name"}), ns, impl_->ns, ns));
    for (const auto& at : pod_templates(object)) {
      // pod_templates() points into `object`, which is ours to change.
      json::object& spec = const_cast<json::object&>(*obj_at(*at.tmpl, {"spec"}));
      const std::string& path = at.spec_path;
      for (const char* list : {"initContainers", "containers"}) {
        auto* cs = spec.if_contains(list);
        if (!cs || !cs->is_array()) continue;
        std::size_t i = 0;
        for (auto& c : cs->as_array()) {
          const std::string field = fmt::format("{}.{}[{}]", path, list, i++);
          if (!c.is_object()) continue;
          auto& co = c.as_object();
          if (auto* image = co.if_contains("image"); image && image->is_string()) {
            const std::string written(image->as_string());
            const std::string resolved = p.catalog.resolve(written, field + ".image");
            if (resolved != written) *image = resolved;
            // A short name the catalog does not list but nearly does: probably a typo.
            const ImageRef ref = ImageRef::parse(resolved, field + ".image");
            if (resolved == written && ref.domain.empty() && ref.path.find('/') == std::string::npos && impl_->logger)
              for (const auto& entry : p.catalog.images)
                if (entry.name != ref.path && edit_distance(entry.name, ref.path) <= 2)
                  impl_->logger(LogLevel::warning,
                                fmt::format("{}.image: \"{}\" is not in the {} profile's catalog; did you mean {}?",
                                            field, written, p.name, entry.name));
          }
          // A GPU container without the env the site's GPUs need (Orion's ORION_*): a warning, since the
          // manifest's author may set it another way (an envFrom, an image default).
          bool wants_gpu = false;
          for (const char* part : {"limits", "requests"})
            if (const auto* r = obj_at(co, {"resources", part}); r && r->contains(p.gpu.resource)) wants_gpu = true;
          if (impl_->logger && !p.gpu.env.empty() && wants_gpu) {
            std::string missing;
            for (const auto& e : p.gpu.env) {
              bool has = false;
              if (const auto* env = co.if_contains("env"); env && env->is_array())
                for (const auto& v : env->as_array())
                  has = has || (v.is_object() && str_at(v.as_object(), {"name"}) == e.name);
              if (!has) missing += (missing.empty() ? "" : ", ") + e.name;
            }
            if (!missing.empty())
              impl_->logger(LogLevel::warning,
                            fmt::format("{}: asks for {} but lacks {}, which the {} profile sets for GPU containers",
                                        field, p.gpu.resource, missing, p.name));
          }
          // GPUs: the site's resource name only (a request for another is never scheduled there).
          for (const char* part : {"limits", "requests"})
            if (const auto* res = obj_at(co, {"resources", part}))
              for (const auto& [name, q] : *res) {
                const std::string n(name);
                if (n != p.gpu.resource && n.size() > 4 && n.compare(n.size() - 4, 4, "/gpu") == 0)
                  throw ValidationError(
                      fmt::format("{}.resources.{}", field, part), n,
                      fmt::format("this cluster's GPUs are \"{}\" (profile {}); ask for that resource", p.gpu.resource,
                                  p.name));
              }
        }
      }
    }
  }
  return objects;
}

ApplyResult Cluster::apply(std::vector<json::object> objects, bool dry_run, bool force_conflicts) {
  ApplyResult result;
  Submission checked;
  checked.objects = prepare_manifests(std::move(objects));
  detail::preflight(*impl_->client, checked, impl_->ns);
  detail::warn_unknown_storage_classes(*impl_->client, checked.objects, impl_->logger);
  PatchOptions po;
  po.dry_run = dry_run;
  po.field_manager = "gpupool";
  po.force = force_conflicts;
  std::vector<Placed> created;
  try {
    for (const auto& object : checked.objects) {
      const ResourceRef ref = resource_of(*impl_->client, object);
      const std::string ns = ref.namespaced ? impl_->ns : "";
      const std::string name = str_at(object, {"metadata", "name"});
      std::optional<json::object> before;
      try {
        before = impl_->client->get(ref, ns, name);
      } catch (const ApiError& e) {
        if (e.code() != 404) throw;
      }
      json::object stored = impl_->client->patch(ref, ns, name, PatchType::apply, object, po);
      // kubectl's words: created, or configured when the apply changed anything, else unchanged.
      // Compared by content, not resourceVersion: controllers write status (a claim's binding) at
      // moments of their own, and a dry run stores nothing.
      const char* verb = !before                                                       ? "created"
                         : without_bookkeeping(*before) == without_bookkeeping(stored) ? "unchanged"
                                                                                       : "configured";
      if (!before && !dry_run) created.push_back({ref, ns, name});
      result.lines.push_back(
          fmt::format("{} {}{}", kubectl_name(ref.kind, ref.group, name), verb, dry_run ? " (server dry run)" : ""));
      result.objects.push_back(std::move(stored));
    }
  } catch (...) {
    // Undo what this apply created; what it configured stays configured (the objects that were
    // there before are not this call's to delete).
    const std::exception_ptr original = std::current_exception();
    if (dry_run || created.empty()) throw;
    const std::vector<std::string> left = roll_back(*impl_->client, created, std::nullopt, "");
    if (left.empty()) throw;
    std::string list;
    for (const auto& l : left) list += (list.empty() ? "" : "; ") + l;
    rethrow_with_note(original,
                      fmt::format(" [the apply was not completed and {} of the objects it created could not be "
                                  "deleted: {}]",
                                  left.size(), list));
  }
  return result;
}

}  // namespace gpupool
