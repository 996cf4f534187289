// embedded/base64.hpp — standard base64 (RFC 4648, with padding) for continue tokens and the
// kubeconfig's *-data fields.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpupool::embedded {

std::string base64_encode(std::string_view bytes);
/// nullopt when `text` is not valid padded base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace gpupool::embedded
