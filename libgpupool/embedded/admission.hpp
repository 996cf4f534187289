// embedded/admission.hpp — what the embedded API server's admission plugins share: the
// admission.NewForbidden error (staging/src/k8s.io/apiserver/pkg/admission/errors.go), and the
// plugins the server installs in the API server's order (mutating first, ResourceQuota last; see
// install_admission in admission.cpp).
#pragma once

#include <string_view>

#include "embedded/store.hpp"

namespace gpupool::embedded {

/// admission.NewForbidden: 403 Forbidden `<resource>[.<group>] "<name>" is forbidden: <why>` with
/// details {name, group, kind: resource}. `mutating`: the error comes from a mutating plugin, which
/// runs before the name of a generateName object exists — the real message then carries the
/// generateName prefix (`pods "web-5d8f-" is forbidden: ...`) where a validating plugin names the
/// generated name.
StatusError admission_forbidden(const AdmissionRequest& r, std::string_view why, bool mutating = false);

/// The name admission errors carry (see admission_forbidden).
std::string admission_name(const AdmissionRequest& r, bool mutating);

}  // namespace gpupool::embedded
