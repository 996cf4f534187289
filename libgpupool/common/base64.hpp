// common/base64.hpp — standard base64 (RFC 4648 §4, with padding), shared by the kube layer
// (kubeconfig *-data fields, exec plugin info) and the embedded server (continue tokens, kubeconfigs).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpupool {

std::string base64_encode(std::string_view bytes);
/// nullopt when `text` is not valid padded base64 (no whitespace allowed).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace gpupool
