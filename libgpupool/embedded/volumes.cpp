#include "embedded/volumes.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "common/ascii.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/store.hpp"
#include "gpupool/names.hpp"
#include "gpupool/quantity.hpp"

namespace gpupool::embedded {

using namespace util;

namespace {

constexpr const char* kComponent = "persistentvolume-controller";
constexpr const char* kPvcProtection = "kubernetes.io/pvc-protection";
constexpr const char* kPvProtection = "kubernetes.io/pv-protection";

bool being_deleted(const json::object& o) { return object_at(o, {"metadata"})->contains("deletionTimestamp"); }
constexpr const char* kDefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class";

std::string class_of(const json::object& o) { return string_of(object_at(o, {"spec"}), "storageClassName"); }
using ctrl::phase_of;  // status.phase, of claims and volumes here

std::optional<Quantity> storage_at(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::object* m = object_at(o, path);
  const json::value* v = m ? m->if_contains("storage") : nullptr;
  if (!v || !v->is_string()) return std::nullopt;
  try {
    return Quantity::parse(v->as_string(), "storage");
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<std::string> access_modes(const json::object& o) {
  std::vector<std::string> out;
  if (const json::array* a = array_at(o, {"spec"}, "accessModes"))
    for (const auto& m : *a)
      if (m.is_string()) out.emplace_back(m.as_string());
  return out;
}

std::string volume_mode(const json::object& o) {
  const std::string m = string_of(object_at(o, {"spec"}), "volumeMode");
  return m.empty() ? "Filesystem" : m;
}

// The StorageClass named `name`, or null.
std::shared_ptr<const json::object> storage_class(const Store& store, const std::string& name) {
  return store.find(store.type("storage.k8s.io", "storageclasses"), "", name);
}

bool wait_for_first_consumer(const json::object& sc) {
  return string_of(&sc, "volumeBindingMode") == "WaitForFirstConsumer";
}

// The claims a pod's volumes name.
std::vector<std::string> claims_of(const json::object& pod) {
  std::vector<std::string> out;
  if (const json::array* vols = array_at(pod, {"spec"}, "volumes"))
    for (const auto& v : *vols)
      if (v.is_object())
        if (const json::object* c = object_at(v.as_object(), {"persistentVolumeClaim"}))
          if (auto n = string_of(c, "claimName"); !n.empty()) out.push_back(n);
  return out;
}

void set_annotation(json::object& o, std::string_view key, const std::string& value) {
  ensure_object(ensure_object(o, "metadata"), "annotations")[key] = value;
}

}  // namespace

void resolve_claims(const Store& store, const std::string& ns, std::vector<PodClaim>& claims) {
  // What VolumeBinding's PreFilter reads through its listers (podHasPVCs, GetPodVolumeClaims): the
  // claim, its deletion, its phase and, for an unbound one, its class's binding mode (no class, or a
  // class that does not exist, binds Immediately).
  const auto& pvcs = store.type("", "persistentvolumeclaims");
  for (PodClaim& c : claims) {
    auto pvc = store.find(pvcs, ns, c.name);
    if (!pvc)
      c.status = ClaimStatus::Missing;
    else if (object_at(*pvc, {"metadata"})->contains("deletionTimestamp"))
      c.status = ClaimStatus::Deleting;
    else if (phase_of(*pvc) == "Bound")
      c.status = ClaimStatus::Bound;
    else {
      const std::string cls = class_of(*pvc);
      auto sc = cls.empty() ? nullptr : storage_class(store, cls);
      c.status =
          sc && wait_for_first_consumer(*sc) ? ClaimStatus::UnboundWaitForFirstConsumer : ClaimStatus::UnboundImmediate;
    }
  }
}

VolumeController::VolumeController(Store& store, const Clock& clock) : store_(store), clock_(clock) {
  store_.add_admission(
      [this](AdmissionRequest& r) {
        // DefaultStorageClass: only on create, only when storageClassName is absent (nil), not "".
        if (r.operation != AdmissionRequest::Operation::Create || !r.object || !r.type || !r.type->group.empty() ||
            r.type->resource != "persistentvolumeclaims" || !r.subresource.empty())
          return;
        json::object& spec = ensure_object(*r.object, "spec");
        if (spec.contains("storageClassName") && !spec.at("storageClassName").is_null()) return;
        std::shared_ptr<const json::object> chosen;
        for (const auto& sc : store_.list(store_.type("storage.k8s.io", "storageclasses"), "").items) {
          if (annotation(*sc, kDefaultClassAnnotation) != "true") continue;
          // GetDefaultClass: the newest default class wins (ties: the name that sorts first).
          if (!chosen || string_of(object_at(*sc, {"metadata"}), "creationTimestamp") >
                             string_of(object_at(*chosen, {"metadata"}), "creationTimestamp"))
            chosen = sc;
        }
        if (chosen) spec["storageClassName"] = name_of(*chosen);
      },
      AdmissionStage::Mutating);
  store_.add_admission(
      [](AdmissionRequest& r) {
        // StorageObjectInUseProtection (plugin/pkg/admission/storage/storageobjectinuseprotection):
        // a created claim or volume gets its protection finalizer, last.
        if (r.operation != AdmissionRequest::Operation::Create || !r.object || !r.type || !r.type->group.empty() ||
            !r.subresource.empty())
          return;
        const char* f = r.type->resource == "persistentvolumeclaims" ? kPvcProtection
                        : r.type->resource == "persistentvolumes"    ? kPvProtection
                                                                     : nullptr;
        if (f) set_finalizer(ensure_object(*r.object, "metadata"), f, true);
      },
      AdmissionStage::Mutating);
  subscription_ = store_.subscribe([this](const WatchEvent& e) {
    WritingAs as("kube-controller-manager");
    on_event(e);
  });
  resync();
}

VolumeController::~VolumeController() { store_.unsubscribe(subscription_); }

void VolumeController::resync() {
  WritingAs as("kube-controller-manager");
  const auto& pvs = store_.type("", "persistentvolumes");
  for (const auto& pv : store_.list(pvs, "").items)
    if (phase_of(*pv).empty() || phase_of(*pv) == "Pending")
      if (!object_at(*pv, {"spec", "claimRef"})) {
        try {
          store_.mutate(
              pvs, "", name_of(*pv), [](json::object& o) { ensure_object(o, "status")["phase"] = "Available"; }, {},
              "status");
        } catch (const StatusError&) {}
      }
  for (const auto& pvc : store_.list(store_.type("", "persistentvolumeclaims"), "").items)
    if (phase_of(*pvc) != "Bound") sync_claim(namespace_of(*pvc), name_of(*pvc));
}

void VolumeController::on_event(const WatchEvent& e) {
  if (!e.type_info || !e.object) return;
  const ResourceType& t = *e.type_info;
  if (t.group.empty() && t.resource == "pods")  // a pod gone or changed may free the claims it names
    for (const auto& c : claims_of(*e.object)) protect_claim(namespace_of(*e.object), c);
  if (e.type == EventType::Deleted) {
    if (t.group.empty() && t.resource == "persistentvolumeclaims") released(*e.object);
    return;
  }
  if (t.group.empty() && t.resource == "persistentvolumeclaims")
    protect_claim(namespace_of(*e.object), name_of(*e.object));
  if (t.group.empty() && t.resource == "persistentvolumes") protect_volume(name_of(*e.object));
  if (t.group == "storage.k8s.io" && t.resource == "storageclasses") {
    resync();  // a class appeared or changed: pending claims may now provision
  } else if (t.group.empty() && t.resource == "persistentvolumes") {
    if (e.type == EventType::Added && !object_at(*e.object, {"spec", "claimRef"}) &&
        (phase_of(*e.object).empty() || phase_of(*e.object) == "Pending"))
      resync();  // a new Available volume may satisfy a pending claim
  } else if (t.group.empty() && t.resource == "persistentvolumeclaims") {
    if (phase_of(*e.object) != "Bound" && !object_at(*e.object, {"metadata"})->contains("deletionTimestamp"))
      sync_claim(namespace_of(*e.object), name_of(*e.object));
  } else if (t.group.empty() && t.resource == "pods") {
    // WaitForFirstConsumer: provision once a pod using the claim is bound to a node.
    const std::string node = string_of(object_at(*e.object, {"spec"}), "nodeName");
    const bool newly_bound =
        !node.empty() && (!e.old_object || string_of(object_at(*e.old_object, {"spec"}), "nodeName").empty());
    if (newly_bound)
      for (const auto& c : claims_of(*e.object)) sync_claim(namespace_of(*e.object), c, node);
  }
}

void VolumeController::released(const json::object& claim) {
  // syncVolume for a volume whose claim is gone: Released, then reclaimed per its policy (Delete:
  // the volume is deleted, which its protection lets go of now that it is not Bound; Retain: it
  // stays Released until an administrator acts).
  const auto& pvs = store_.type("", "persistentvolumes");
  for (const auto& pv : store_.list(pvs, "").items) {
    if (string_of(object_at(*pv, {"spec", "claimRef"}), "uid") != uid_of(claim)) continue;
    try {
      store_.mutate(
          pvs, "", name_of(*pv), [](json::object& o) { ensure_object(o, "status")["phase"] = "Released"; }, {},
          "status");
      if (string_of(object_at(*pv, {"spec"}), "persistentVolumeReclaimPolicy") == "Delete")
        store_.remove(pvs, "", name_of(*pv));
    } catch (const StatusError&) {}
  }
}

// The PVC protection controller (pkg/controller/volume/pvcprotection processPVC): a claim being
// deleted keeps its finalizer while a pod scheduled to a node names it in its volumes (podUsesPVC:
// whatever the pod's phase), and loses it, so that it goes, once none does; a claim without the
// finalizer that is not being deleted gets it (NeedToAddFinalizer).
void VolumeController::protect_claim(const std::string& ns, const std::string& name) {
  const auto& pvcs = store_.type("", "persistentvolumeclaims");
  auto pvc = store_.find(pvcs, ns, name);
  if (!pvc) return;
  const bool protected_ = ctrl::holds_finalizer(*pvc, kPvcProtection);
  if (being_deleted(*pvc)) {
    if (!protected_) return;
    for (const auto& pod : store_.list(store_.type("", "pods"), ns).items) {
      if (string_of(object_at(*pod, {"spec"}), "nodeName").empty()) continue;
      const auto claims = claims_of(*pod);
      if (std::find(claims.begin(), claims.end(), name) != claims.end()) return;  // in use
    }
  } else if (protected_) {
    return;
  }
  try {
    store_.mutate(pvcs, ns, name, [&](json::object& o) {
      set_finalizer(ensure_object(o, "metadata"), kPvcProtection, !being_deleted(o));
    });
  } catch (const StatusError&) {}
}

// The PV protection controller (pkg/controller/volume/pvprotection): a volume being deleted keeps
// its finalizer while it is Bound (isBeingUsed: status.phase), else loses it; one without it that
// is not being deleted gets it.
void VolumeController::protect_volume(const std::string& name) {
  const auto& pvs = store_.type("", "persistentvolumes");
  auto pv = store_.find(pvs, "", name);
  if (!pv) return;
  const bool protected_ = ctrl::holds_finalizer(*pv, kPvProtection);
  if (being_deleted(*pv) ? (!protected_ || phase_of(*pv) == "Bound") : protected_) return;
  try {
    store_.mutate(pvs, "", name, [&](json::object& o) {
      set_finalizer(ensure_object(o, "metadata"), kPvProtection, !being_deleted(o));
    });
  } catch (const StatusError&) {}
}

void VolumeController::sync_claim(const std::string& ns, const std::string& name, const std::string& selected_node) {
  const auto& pvcs = store_.type("", "persistentvolumeclaims");
  const auto& pvs = store_.type("", "persistentvolumes");
  auto pvc = store_.find(pvcs, ns, name);
  if (!pvc || phase_of(*pvc) == "Bound") return;
  const std::string cls = class_of(*pvc);
  const auto request = storage_at(*pvc, {"spec", "resources", "requests"});
  const auto modes = access_modes(*pvc);
  const auto now = clock_.now();
  auto event = [&](const char* type, const char* reason, const std::string& message,
                   const std::string& component = kComponent) {
    record_event(store_, std::chrono::time_point_cast<std::chrono::system_clock::duration>(now), *pvc, type, reason,
                 message, component);
  };

  // 1. A volume named by the claim, or the smallest Available volume that fits (findBestMatchForClaim).
  std::shared_ptr<const json::object> match;
  const std::string wanted = string_of(object_at(*pvc, {"spec"}), "volumeName");
  for (const auto& pv : store_.list(pvs, "").items) {
    if (!wanted.empty()) {
      if (name_of(*pv) == wanted) match = pv;
      continue;
    }
    if (object_at(*pv, {"spec", "claimRef"}) || phase_of(*pv) != "Available") continue;
    if (class_of(*pv) != cls || volume_mode(*pv) != volume_mode(*pvc)) continue;
    const auto cap = storage_at(*pv, {"spec", "capacity"});
    if (!cap || (request && *cap < *request)) continue;
    const auto offered = access_modes(*pv);
    bool all = true;
    for (const auto& m : modes) all = all && std::find(offered.begin(), offered.end(), m) != offered.end();
    if (!all) continue;
    if (!match || *cap < *storage_at(*match, {"spec", "capacity"})) match = pv;
  }
  if (!wanted.empty() && !match) return;  // pre-bound to a volume that does not exist (yet)

  std::string provisioner;
  if (!match) {
    if (cls.empty()) {
      event("Normal", "FailedBinding", "no persistent volumes available for this claim and no storage class is set");
      return;
    }
    auto sc = storage_class(store_, cls);
    if (!sc) {
      event("Warning", "ProvisioningFailed", fmt::format("storageclass.storage.k8s.io \"{}\" not found", cls));
      return;
    }
    if (wait_for_first_consumer(*sc) && selected_node.empty()) {
      event("Normal", "WaitForFirstConsumer", "waiting for first consumer to be created before binding");
      return;
    }
    // 2. The class's provisioner creates the volume (sig-storage-lib-external-provisioner).
    provisioner = string_of(sc.get(), "provisioner");
    const std::string pv_name = "pvc-" + uid_of(*pvc);
    json::object spec{
        {"capacity", json::object{{"storage", request ? request->to_string() : "0"}}},
        {"accessModes", json::array(object_at(*pvc, {"spec"})->contains("accessModes")
                                        ? object_at(*pvc, {"spec"})->at("accessModes").as_array()
                                        : json::array{})},
        {"persistentVolumeReclaimPolicy",
         string_of(sc.get(), "reclaimPolicy").empty() ? "Delete" : string_of(sc.get(), "reclaimPolicy")},
        {"storageClassName", cls},
        {"volumeMode", volume_mode(*pvc)},
        {"claimRef", json::object{{"kind", "PersistentVolumeClaim"},
                                  {"namespace", ns},
                                  {"name", name},
                                  {"uid", uid_of(*pvc)},
                                  {"apiVersion", "v1"},
                                  {"resourceVersion", string_of(object_at(*pvc, {"metadata"}), "resourceVersion")}}}};
    // The source a provisioner writes: a CSI driver's own volume where the provisioner's name is a
    // CSI driver name, else (an external provisioner, as the embedded one) a hostPath directory as
    // local-path-provisioner's: ValidatePersistentVolumeSpec refuses a driver named with a '/'.
    if (provisioner.size() <= 63 && dns1123_subdomain_errors(ascii::lower(provisioner)).empty())
      spec["csi"] = json::object{{"driver", provisioner}, {"volumeHandle", pv_name}};
    else
      spec["hostPath"] = json::object{{"path", "/var/lib/gpupool/volumes/" + pv_name}, {"type", "DirectoryOrCreate"}};
    if (!selected_node.empty())
      spec["nodeAffinity"] = json::object{
          {"required",
           json::object{{"nodeSelectorTerms",
                         json::array{json::object{
                             {"matchExpressions",
                              json::array{json::object{{"key", "kubernetes.io/hostname"},
                                                       {"operator", "In"},
                                                       {"values", json::array{json::value(selected_node)}}}}}}}}}}};
    json::object pv{
        {"metadata", json::object{{"name", pv_name},
                                  {"annotations", json::object{{"pv.kubernetes.io/provisioned-by", provisioner}}}}},
        {"spec", std::move(spec)}};
    try {
      match = std::make_shared<const json::object>(store_.create(pvs, "", std::move(pv)));
    } catch (const StatusError& e) {
      if (e.code() != 409) throw;
      match = store_.find(pvs, "", pv_name);  // provisioned already (an earlier attempt)
      if (!match) return;
    }
    event("Normal", "ProvisioningSucceeded", fmt::format("Successfully provisioned volume {}", pv_name), provisioner);
  }

  // 3. Bind both ways (bindVolumeToClaim, bindClaimToVolume, then the phases).
  const std::string pv_name = name_of(*match);
  const bool controller_bound = !object_at(*match, {"spec", "claimRef"});
  try {
    store_.mutate(pvs, "", pv_name, [&](json::object& o) {
      ensure_object(o, "spec")["claimRef"] =
          json::object{{"kind", "PersistentVolumeClaim"},
                       {"namespace", ns},
                       {"name", name},
                       {"uid", uid_of(*pvc)},
                       {"apiVersion", "v1"},
                       {"resourceVersion", string_of(object_at(*pvc, {"metadata"}), "resourceVersion")}};
      if (controller_bound) set_annotation(o, "pv.kubernetes.io/bound-by-controller", "yes");
    });
    auto bound_pv = store_.mutate(
        pvs, "", pv_name, [](json::object& o) { ensure_object(o, "status")["phase"] = "Bound"; }, {}, "status");
    store_.mutate(pvcs, ns, name, [&](json::object& o) {
      ensure_object(o, "spec")["volumeName"] = pv_name;
      set_annotation(o, "pv.kubernetes.io/bind-completed", "yes");
      if (wanted.empty()) set_annotation(o, "pv.kubernetes.io/bound-by-controller", "yes");
      if (!provisioner.empty()) {
        set_annotation(o, "volume.beta.kubernetes.io/storage-provisioner", provisioner);
        set_annotation(o, "volume.kubernetes.io/storage-provisioner", provisioner);
      }
      if (!selected_node.empty()) set_annotation(o, "volume.kubernetes.io/selected-node", selected_node);
    });
    store_.mutate(
        pvcs, ns, name,
        [&](json::object& o) {
          auto& st = ensure_object(o, "status");
          st["phase"] = "Bound";
          const json::object* spec = object_at(bound_pv, {"spec"});
          if (spec && spec->contains("accessModes")) st["accessModes"] = spec->at("accessModes");
          if (spec && spec->contains("capacity")) st["capacity"] = spec->at("capacity");
        },
        {}, "status");
  } catch (const StatusError&) {
    // Deleted meanwhile: the next change of the claim tries again.
  }
}

}  // namespace gpupool::embedded
