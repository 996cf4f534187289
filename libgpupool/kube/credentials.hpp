// Where a request's credentials come from (private to the kube layer): a static token or client
// certificate, a token file re-read when it changes, or an exec credential plugin whose answer is
// cached until its expirationTimestamp and fetched again once after a 401.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "gpupool/kubeconfig.hpp"
#include "gpupool/transport.hpp"

namespace gpupool::kube {

using WallClock = std::function<std::chrono::system_clock::time_point()>;

/// What an exec plugin returned.
struct ExecCredential {
  RequestCredentials credentials;
  std::optional<std::chrono::system_clock::time_point> expires;
};

/// Runs the plugin (posix_spawn, argv as given, env only for the child, stdin /dev/null) and
/// parses its ExecCredential. Throws ConfigError (key "exec") naming the user and command.
ExecCredential run_exec_plugin(const KubeConfig& config, const Logger& logger);

/// Parses an ExecCredential document (exposed for tests and fuzzing). `where` prefixes errors.
ExecCredential parse_exec_credential(std::string_view json, const std::string& api_version, const std::string& where,
                                     const std::string& who = "the exec plugin");

class CredentialSource {
 public:
  CredentialSource(KubeConfig config, Logger logger, WallClock now = {});
  /// The credentials to send now. Thread-safe; may run the exec plugin or re-read the token file.
  RequestCredentials current();
  /// After a 401 with `used`: drops a cached exec credential / re-reads the token file. Returns
  /// true when different credentials are now available, so the request is worth one more try.
  bool refresh_after_unauthorized(const RequestCredentials& used);

 private:
  RequestCredentials read_token_file_locked();

  KubeConfig config_;
  Logger logger_;
  WallClock now_;
  std::mutex mutex_;
  std::optional<ExecCredential> exec_cache_;
  // token file change detection
  std::string token_from_file_;
  long long token_mtime_ns_ = -1, token_size_ = -1, token_inode_ = -1;
};

}  // namespace gpupool::kube
