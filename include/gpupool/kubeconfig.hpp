// gpupool/kubeconfig.hpp — reading kubeconfig files the way kubectl / client-go do.
//
//   auto cfg = gpupool::load_kubeconfig();              // $KUBECONFIG or ~/.kube/config, else in-cluster
//   auto cfg = gpupool::load_kubeconfig({.path = "/etc/team.kubeconfig", .context = "alice@gpu"});
//
// Merging (client-go clientcmd.ClientConfigLoadingRules.Load): the files of KUBECONFIG (':'-separated)
// are read in order; for clusters, users and contexts the first file to define a name wins; the
// first file that sets current-context decides it; files that do not exist are skipped. An explicit
// `path` replaces KUBECONFIG and must exist. Relative paths in a file (certificate-authority,
// client-certificate, client-key, tokenFile, an exec command containing '/') are resolved against
// that file's directory (clientcmd.ResolveLocalPaths).
//
// Errors are gpupool::ConfigError naming the file and the key, e.g. `contexts[1].context.cluster`.
// Key material is kept in memory only; it never appears in error text or log messages.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpupool/logger.hpp"

namespace gpupool {

/// One `env` entry of an exec plugin.
struct ExecEnvVar {
  std::string name, value;
  bool operator==(const ExecEnvVar&) const = default;
};

/// users[].user.exec: a client-go credential plugin (client.authentication.k8s.io/v1 or v1beta1).
struct ExecConfig {
  std::string api_version;        ///< client.authentication.k8s.io/v1 or .../v1beta1
  std::string command;            ///< absolute when the kubeconfig gave a path with '/'
  std::vector<std::string> args;  ///< argv[1..]; never joined into a shell string
  std::vector<ExecEnvVar> env;    ///< added to the child's environment only
  std::string interactive_mode;   ///< Never | IfAvailable | Always (v1beta1 default IfAvailable)
  bool provide_cluster_info = false;
  std::string install_hint;
};

/// The cluster a context points at.
struct KubeCluster {
  std::string name;
  std::string server;                      ///< e.g. https://10.0.0.1:6443
  std::string certificate_authority_pem;   ///< from certificate-authority-data or the file
  std::string certificate_authority_file;  ///< the file it came from, for messages ("" if inline)
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  std::string proxy_url;
  bool disable_compression = false;
};

/// The user (AuthInfo) a context points at. Fields holding secrets are marked.
struct KubeUser {
  std::string name;
  std::string client_certificate_pem;
  std::string client_key_pem;   ///< secret
  std::string client_key_file;  ///< where the key came from ("" if inline), for messages
  std::string token;            ///< secret; static token
  std::string token_file;       ///< absolute; re-read whenever the file changes
  std::string username;
  std::string password;  ///< secret; basic auth
  std::optional<ExecConfig> exec;
};

/// A resolved configuration: one context with its cluster and user.
struct KubeConfig {
  std::string context;                     ///< the context's name ("" for in-cluster)
  std::string namespace_name = "default";  ///< the context's namespace, "default" when it sets none
  KubeCluster cluster;
  KubeUser user;
  std::string source;  ///< the file that defined the context, or "in-cluster"
};

/// Where to look. Every field is optional.
struct KubeConfigOptions {
  std::string path;     ///< like `kubectl --kubeconfig`: only this file, which must exist
  std::string context;  ///< like `kubectl --context`: overrides current-context
  Logger logger;        ///< warnings (files readable by others); empty: dropped
  /// Environment lookup (KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST/PORT). Empty: the process's.
  std::function<std::optional<std::string>(const std::string&)> getenv;
  /// The service-account directory for the in-cluster fallback.
  std::string in_cluster_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

/// Loads the configuration kubectl would use: `path`, else the files of $KUBECONFIG, else
/// ~/.kube/config, else (no file found and KUBERNETES_SERVICE_HOST set) the in-cluster config.
KubeConfig load_kubeconfig(const KubeConfigOptions& options = {});

/// Parses one kubeconfig held in memory; `file_name` names it in errors and anchors relative paths.
KubeConfig parse_kubeconfig(std::string_view yaml, const std::string& file_name, const std::string& context = {},
                            const Logger& logger = {});

/// The in-cluster configuration: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the
/// service account's token (re-read when it changes), ca.crt and namespace from `in_cluster_dir`
/// (client-go rest.InClusterConfig).
KubeConfig in_cluster_config(const KubeConfigOptions& options = {});

}  // namespace gpupool
