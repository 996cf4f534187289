#include "embedded/admission.hpp"

#include <fmt/format.h>

#include "embedded/controllers_util.hpp"

namespace gpupool::embedded {

std::string admission_name(const AdmissionRequest& r, bool mutating) {
  // admission/errors.go extractResourceName: the request's name, else the object's name, else its
  // generateName — mutating plugins run before the registry generates the name (rest.BeforeCreate).
  const json::object* md = r.object ? util::object_at(*r.object, {"metadata"})
                                    : r.old_object ? util::object_at(*r.old_object, {"metadata"}) : nullptr;
  const std::string name = util::string_of(md, "name");
  const std::string generate = util::string_of(md, "generateName");
  if (mutating && r.operation == AdmissionRequest::Operation::Create && !generate.empty() && name.starts_with(generate) &&
      name.size() == generate.size() + 5)
    return generate;
  if (!name.empty()) return name;
  return generate.empty() ? "Unknown" : generate;
}

StatusError admission_forbidden(const AdmissionRequest& r, std::string_view why, bool mutating) {
  // apimachinery/pkg/api/errors NewForbidden: `%s %q is forbidden: %v` with the group resource.
  const std::string name = admission_name(r, mutating);
  return StatusError(403, "Forbidden", fmt::format("{} \"{}\" is forbidden: {}", r.type->group_resource(), name, why),
                     name, r.type->group, r.type->resource);
}

void install_admission_plugins(Store& store) {
  // kube-apiserver runs every mutating plugin, then validation, then every validating plugin
  // (LimitRanger, Priority, ..., ResourceQuota last). The immutable fields of updates are checked by
  // validation itself (builtin_admission: immutable_causes).
  store.add_admission([&store](AdmissionRequest& r) { limit_ranger(store, r, true); });
  store.add_admission([&store](AdmissionRequest& r) { priority_admission(store, r); });
  store.add_admission([&store](AdmissionRequest& r) { limit_ranger(store, r, false); });
}

}  // namespace gpupool::embedded
