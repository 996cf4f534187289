// Small helpers shared by the kube layer (private).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpupool::kube {

/// The whole file, or nullopt with `error` set to strerror(errno).
std::optional<std::string> read_file(const std::string& path, std::string* error = nullptr);

/// Directory part of a path ("." when none).
std::string dirname_of(const std::string& path);
/// `path` unchanged when absolute or empty, else dir + "/" + path.
std::string resolve_against(const std::string& dir, const std::string& path);

/// Percent-encodes a query value or path segment (RFC 3986 unreserved characters kept).
std::string url_encode(std::string_view text);

/// A kubeconfig server URL's parts: scheme, host (without brackets), port (the scheme's default when
/// absent) and path (without trailing slashes).
struct ServerUrl {
  std::string scheme, host, port, path;
};
ServerUrl parse_server_url(const std::string& server);

/// Removes leading and trailing ASCII whitespace.
std::string trim(std::string_view text);

}  // namespace gpupool::kube
