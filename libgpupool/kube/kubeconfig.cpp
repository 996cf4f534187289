// Kubeconfig loading and merging. The rules follow client-go's clientcmd package:
// loader.go (ClientConfigLoadingRules.Load: first file to set a map key wins, missing KUBECONFIG
// entries skipped, ResolveLocalPaths), validation.go (validateClusterInfo / validateAuthInfo) and
// v1 conversion (duplicate names in one file are an error).
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>
#include <cstdlib>
#include <map>
#include <set>

#include "common/base64.hpp"
#include "common/block_yaml.hpp"
#include "common/join.hpp"
#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "kube/util.hpp"

namespace gpupool {
namespace {

using kube::dirname_of;
using kube::read_file;
using kube::resolve_against;

/// One named entry (cluster, user or context) and where it was defined.
struct Entry {
  YAML::Node body;      // the `cluster:` / `user:` / `context:` mapping (may be null)
  std::string file;     // the kubeconfig that defined it
  std::string prefix;   // e.g. "clusters[1]"
  std::string section;  // "cluster" / "user" / "context"
  std::string key(const std::string& field) const { return prefix + "." + section + "." + field; }
};

struct Merged {
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current_context, current_context_file;
  std::vector<std::string> files;
};

int line_of(const YAML::Node& node) {
  if (!node.IsDefined()) return 0;  // a missing key (yaml-cpp's "zombie" node has no mark)
  return node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
}

/// `fast`: the block-style reader first (no marks), yaml-cpp for what it hands back.
YAML::Node parse_yaml(std::string_view text, const std::string& file, bool fast) {
  if (fast)
    if (auto node = detail::load_block_yaml(text)) return std::move(*node);
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(file, "", "not valid YAML: " + e.msg + "; fix the file or point KUBECONFIG elsewhere",
                      e.mark.line >= 0 ? e.mark.line + 1 : 0);
  }
}

void merge_section(Merged& m, const YAML::Node& root, const std::string& file, const char* list_key,
                   const char* section, std::map<std::string, Entry>& into) {
  const YAML::Node list = root[list_key];
  if (!list || list.IsNull()) return;
  if (!list.IsSequence())
    throw ConfigError(file, list_key, fmt::format("expected a list of {{name, {}}} entries", section), line_of(list));
  std::set<std::string> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    std::string prefix = fmt::format("{}[{}]", list_key, i);
    if (!item.IsMap())
      throw ConfigError(file, prefix, "expected a mapping with name and " + std::string(section), line_of(item));
    const YAML::Node name = item["name"];
    if (!name || !name.IsScalar() || name.Scalar().empty())
      throw ConfigError(file, prefix + ".name", "every entry needs a non-empty name", line_of(item));
    const std::string& n = name.Scalar();
    // clientcmd v1 conversion: "duplicate name \"x\" in list".
    if (!seen.insert(n).second)
      throw ConfigError(file, prefix + ".name",
                        fmt::format("duplicate name \"{}\" in {}; names must be unique", n, list_key), line_of(name));
    const YAML::Node body = item[section];
    if (body && !body.IsNull() && !body.IsMap())
      throw ConfigError(file, prefix + "." + section, "expected a mapping", line_of(body));
    into.try_emplace(n, Entry{body, file, prefix, section});  // first file to set a key wins
  }
  (void)m;
}

void merge_document(Merged& m, const YAML::Node& root, const std::string& file) {
  if (!root || root.IsNull()) return;  // an empty file contributes nothing (clientcmd: empty config)
  if (!root.IsMap()) throw ConfigError(file, "", "not a kubeconfig: expected a YAML mapping at the top", line_of(root));
  m.files.push_back(file);
  merge_section(m, root, file, "clusters", "cluster", m.clusters);
  merge_section(m, root, file, "users", "user", m.users);
  merge_section(m, root, file, "contexts", "context", m.contexts);
  const YAML::Node cc = root["current-context"];
  if (cc && cc.IsScalar() && !cc.Scalar().empty() && m.current_context.empty()) {
    m.current_context = cc.Scalar();
    m.current_context_file = file;
  }
}

// ---- typed field access ------------------------------------------------------------------------

std::optional<std::string> opt_string(const Entry& e, const std::string& field) {
  if (!e.body) return std::nullopt;
  const YAML::Node v = e.body[field];
  if (!v || v.IsNull()) return std::nullopt;
  if (!v.IsScalar()) throw ConfigError(e.file, e.key(field), "expected a string", line_of(v));
  return v.Scalar();
}

std::string string_field(const Entry& e, const std::string& field) { return opt_string(e, field).value_or(""); }

bool bool_field(const Entry& e, const std::string& field) {
  auto s = opt_string(e, field);
  if (!s) return false;
  if (*s == "true" || *s == "True" || *s == "TRUE") return true;
  if (*s == "false" || *s == "False" || *s == "FALSE") return false;
  throw ConfigError(e.file, e.key(field), fmt::format("expected true or false, got \"{}\"", *s),
                    line_of(e.body[field]));
}

/// A *-data field: base64 in the file, returned decoded. Never echoes the value (it may be a key).
std::string data_field(const Entry& e, const std::string& field) {
  auto s = opt_string(e, field);
  if (!s) return {};
  std::string compact;  // Go's base64 decoder ignores line breaks; so do we
  for (char c : *s)
    if (c != '\n' && c != '\r') compact += c;
  auto decoded = base64_decode(compact);
  if (!decoded)
    throw ConfigError(e.file, e.key(field), "is not valid base64; paste the output of `base64 -w0 FILE`",
                      line_of(e.body[field]));
  return *decoded;
}

std::string read_referenced(const Entry& e, const std::string& field, const std::string& path) {
  std::string err;
  auto text = read_file(path, &err);
  if (!text)
    throw ConfigError(e.file, e.key(field), fmt::format("cannot read \"{}\": {}", path, err), line_of(e.body[field]));
  return *text;
}

void warn_if_readable_by_others(const std::string& path, const Logger& logger) {
  if (!logger || path.empty()) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  if ((st.st_mode & 077) != 0)
    logger(LogLevel::warning,
           fmt::format("{} holds credentials and is readable by group or others (mode {:04o}); run: chmod 600 {}", path,
                       st.st_mode & 07777, path));
}

// ---- resolution --------------------------------------------------------------------------------

KubeCluster resolve_cluster(const std::string& name, const Entry& e) {
  KubeCluster c;
  c.name = name;
  c.server = string_field(e, "server");
  if (c.server.empty())
    throw ConfigError(e.file, e.key("server"),
                      fmt::format("cluster \"{}\" has no server; set it to https://HOST:PORT", name), line_of(e.body));
  if (c.server.find("://") == std::string::npos) c.server = "https://" + c.server;  // client-go defaults to https
  if (c.server.rfind("https://", 0) != 0 && c.server.rfind("http://", 0) != 0)
    throw ConfigError(e.file, e.key("server"), fmt::format("\"{}\" is not an http(s) URL", c.server),
                      line_of(e.body["server"]));
  while (c.server.size() > 8 && c.server.back() == '/') c.server.pop_back();
  const std::string ca_file = resolve_against(dirname_of(e.file), string_field(e, "certificate-authority"));
  const std::string ca_data = data_field(e, "certificate-authority-data");
  // validation.go validateClusterInfo: both set is an error.
  if (!ca_file.empty() && !ca_data.empty())
    throw ConfigError(e.file, e.key("certificate-authority"),
                      "certificate-authority-data and certificate-authority are both specified; keep one");
  c.certificate_authority_pem = !ca_data.empty()  ? ca_data
                                : ca_file.empty() ? ""
                                                  : read_referenced(e, "certificate-authority", ca_file);
  c.certificate_authority_file = ca_file;
  c.insecure_skip_tls_verify = bool_field(e, "insecure-skip-tls-verify");
  // client-go transport.TLSConfigFor: "specifying a root certificates file with the insecure flag is not allowed".
  if (c.insecure_skip_tls_verify && !c.certificate_authority_pem.empty())
    throw ConfigError(
        e.file, e.key("insecure-skip-tls-verify"),
        "a certificate authority together with insecure-skip-tls-verify is not allowed; remove one of them");
  c.tls_server_name = string_field(e, "tls-server-name");
  c.proxy_url = string_field(e, "proxy-url");
  c.disable_compression = bool_field(e, "disable-compression");
  return c;
}

ExecConfig resolve_exec(const Entry& e, const YAML::Node& node) {
  const std::string base = e.key("exec");
  auto scalar = [&](const char* field) -> std::string {
    const YAML::Node v = node[field];
    if (!v || v.IsNull()) return {};
    if (!v.IsScalar()) throw ConfigError(e.file, base + "." + field, "expected a string", line_of(v));
    return v.Scalar();
  };
  if (!node.IsMap())
    throw ConfigError(e.file, base, "expected a mapping with command, args, env, apiVersion", line_of(node));
  ExecConfig x;
  x.api_version = scalar("apiVersion");
  x.command = scalar("command");
  x.install_hint = scalar("installHint");
  x.interactive_mode = scalar("interactiveMode");
  if (x.command.empty())
    throw ConfigError(e.file, base + ".command", "command must be specified to use an exec authentication plugin",
                      line_of(node));
  // ResolveLocalPaths: a relative command containing a separator is relative to the file.
  if (x.command.find('/') != std::string::npos) x.command = resolve_against(dirname_of(e.file), x.command);
  if (x.api_version != "client.authentication.k8s.io/v1" && x.api_version != "client.authentication.k8s.io/v1beta1")
    throw ConfigError(
        e.file, base + ".apiVersion",
        fmt::format("\"{}\" is not supported; use client.authentication.k8s.io/v1 or v1beta1", x.api_version),
        line_of(node));
  if (x.interactive_mode.empty()) {
    // validation.go: v1 requires interactiveMode; v1beta1 defaults to IfAvailable.
    if (x.api_version == "client.authentication.k8s.io/v1")
      throw ConfigError(e.file, base + ".interactiveMode",
                        "must be specified for client.authentication.k8s.io/v1 (Never, IfAvailable or Always)",
                        line_of(node));
    x.interactive_mode = "IfAvailable";
  } else if (x.interactive_mode != "Never" && x.interactive_mode != "IfAvailable" && x.interactive_mode != "Always") {
    throw ConfigError(e.file, base + ".interactiveMode",
                      fmt::format("\"{}\" is not one of Never, IfAvailable, Always", x.interactive_mode),
                      line_of(node));
  }
  if (const YAML::Node args = node["args"]; args && !args.IsNull()) {
    if (!args.IsSequence()) throw ConfigError(e.file, base + ".args", "expected a list of strings", line_of(args));
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (!args[i].IsScalar())
        throw ConfigError(e.file, fmt::format("{}.args[{}]", base, i), "expected a string", line_of(args[i]));
      x.args.push_back(args[i].Scalar());
    }
  }
  if (const YAML::Node env = node["env"]; env && !env.IsNull()) {
    if (!env.IsSequence()) throw ConfigError(e.file, base + ".env", "expected a list of {name, value}", line_of(env));
    for (std::size_t i = 0; i < env.size(); ++i) {
      const YAML::Node item = env[i];
      std::string key = fmt::format("{}.env[{}]", base, i);
      if (!item.IsMap() || !item["name"] || !item["name"].IsScalar() || item["name"].Scalar().empty())
        throw ConfigError(e.file, key + ".name", "env name must be specified", line_of(item));
      if (!item["value"] || !item["value"].IsScalar())
        throw ConfigError(e.file, key + ".value", "env value must be specified", line_of(item));
      x.env.push_back({item["name"].Scalar(), item["value"].Scalar()});
    }
  }
  if (const YAML::Node pci = node["provideClusterInfo"]; pci && pci.IsScalar())
    x.provide_cluster_info = pci.Scalar() == "true";
  return x;
}

KubeUser resolve_user(const std::string& name, const Entry& e, const Logger& logger) {
  KubeUser u;
  u.name = name;
  const std::string dir = dirname_of(e.file);
  if (e.body && e.body["auth-provider"] && !e.body["auth-provider"].IsNull())
    throw ConfigError(e.file, e.key("auth-provider"),
                      "auth-provider plugins were removed from Kubernetes clients; use an exec plugin (e.g. kubelogin, "
                      "gke-gcloud-auth-plugin) instead",
                      line_of(e.body["auth-provider"]));
  const std::string cert_file = resolve_against(dir, string_field(e, "client-certificate"));
  const std::string cert_data = data_field(e, "client-certificate-data");
  const std::string key_file = resolve_against(dir, string_field(e, "client-key"));
  const std::string key_data = data_field(e, "client-key-data");
  // validation.go validateAuthInfo.
  if (!cert_file.empty() && !cert_data.empty())
    throw ConfigError(e.file, e.key("client-certificate"),
                      "client-certificate-data and client-certificate are both specified; keep one");
  if (!key_file.empty() && !key_data.empty())
    throw ConfigError(e.file, e.key("client-key"), "client-key-data and client-key are both specified; keep one");
  const bool has_cert = !cert_file.empty() || !cert_data.empty();
  const bool has_key = !key_file.empty() || !key_data.empty();
  if (has_cert && !has_key)
    throw ConfigError(e.file, e.key("client-key"),
                      "client-key-data or client-key must be specified to use a client certificate");
  if (has_key && !has_cert)
    throw ConfigError(e.file, e.key("client-certificate"),
                      "client-certificate-data or client-certificate must be specified with a client key");
  u.client_certificate_pem =
      cert_data.empty() && !cert_file.empty() ? read_referenced(e, "client-certificate", cert_file) : cert_data;
  u.client_key_pem = key_data.empty() && !key_file.empty() ? read_referenced(e, "client-key", key_file) : key_data;
  u.client_key_file = key_file;
  u.token = string_field(e, "token");
  u.token_file = resolve_against(dir, string_field(e, "tokenFile"));
  if (!u.token_file.empty() && u.token.empty()) {
    std::string err;
    if (!read_file(u.token_file, &err))
      throw ConfigError(e.file, e.key("tokenFile"), fmt::format("cannot read \"{}\": {}", u.token_file, err),
                        line_of(e.body["tokenFile"]));
  }
  u.username = string_field(e, "username");
  u.password = string_field(e, "password");
  if ((!u.token.empty() || !u.token_file.empty()) && (!u.username.empty() || !u.password.empty()))
    throw ConfigError(e.file, e.key("token"),
                      "more than one authentication method found (token and username/password); only one is allowed");
  if (e.body && e.body["exec"] && !e.body["exec"].IsNull()) u.exec = resolve_exec(e, e.body["exec"]);

  // A file holding key material should be private (issue 8: warn when group/others can read it).
  if (!u.token.empty() || !key_data.empty() || !u.password.empty()) warn_if_readable_by_others(e.file, logger);
  warn_if_readable_by_others(key_file, logger);
  warn_if_readable_by_others(u.token_file, logger);
  return u;
}

std::string join_names(const std::map<std::string, Entry>& m) {
  std::string out;
  for (const auto& [k, _] : m) out += (out.empty() ? "" : ", ") + k;
  return out.empty() ? "(none)" : out;
}

KubeConfig resolve(const Merged& m, const std::string& context_override, const Logger& logger) {
  const std::string files = text::join(m.files, ":");
  const std::string ctx_name = !context_override.empty() ? context_override : m.current_context;
  if (ctx_name.empty())
    throw ConfigError(
        files, "current-context",
        fmt::format("no context selected; run `kubectl config use-context NAME` or pass a context (defined: {})",
                    join_names(m.contexts)));
  auto ctx = m.contexts.find(ctx_name);
  if (ctx == m.contexts.end()) {
    const std::string& where = !context_override.empty() ? files : m.current_context_file;
    throw ConfigError(where, context_override.empty() ? "current-context" : "context",
                      fmt::format("context \"{}\" not found; defined: {}", ctx_name, join_names(m.contexts)));
  }
  const Entry& ce = ctx->second;
  KubeConfig cfg;
  cfg.context = ctx_name;
  cfg.source = ce.file;
  std::string ns = string_field(ce, "namespace");
  cfg.namespace_name = ns.empty() ? "default" : ns;

  const std::string cluster_name = string_field(ce, "cluster");
  if (cluster_name.empty())
    throw ConfigError(ce.file, ce.key("cluster"), fmt::format("context \"{}\" names no cluster", ctx_name),
                      line_of(ce.body));
  auto cl = m.clusters.find(cluster_name);
  if (cl == m.clusters.end())
    throw ConfigError(
        ce.file, ce.key("cluster"),
        fmt::format("cluster \"{}\" is not defined in {}; defined: {}", cluster_name, files, join_names(m.clusters)),
        line_of(ce.body["cluster"]));
  cfg.cluster = resolve_cluster(cluster_name, cl->second);

  const std::string user_name = string_field(ce, "user");
  if (!user_name.empty()) {
    auto us = m.users.find(user_name);
    if (us == m.users.end())
      throw ConfigError(
          ce.file, ce.key("user"),
          fmt::format("user \"{}\" is not defined in {}; defined: {}", user_name, files, join_names(m.users)),
          line_of(ce.body["user"]));
    cfg.user = resolve_user(user_name, us->second, logger);
  }
  return cfg;
}

std::optional<std::string> lookup(const KubeConfigOptions& o, const std::string& name) {
  if (o.getenv) return o.getenv(name);
  const char* v = std::getenv(name.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

namespace {

/// `load(fast, logger)` read with the block-style reader (the common case: no line numbers are
/// needed); an error is worded again from yaml-cpp's reading, which has the lines
/// (detail::read_with_lines). The warnings of the first attempt are said once it succeeds.
template <class Load>
KubeConfig with_lines_on_error(const Logger& logger, Load&& load) {
  std::vector<std::pair<LogLevel, std::string>> said;
  const Logger hold = [&said](LogLevel level, const std::string& message) { said.emplace_back(level, message); };
  bool held = false;
  KubeConfig cfg = detail::read_with_lines([&](bool fast) {
    held = fast;
    return load(fast, fast ? (logger ? hold : Logger{}) : logger);
  });
  if (held)
    for (const auto& [level, message] : said) logger(level, message);
  return cfg;
}

}  // namespace

KubeConfig parse_kubeconfig(std::string_view yaml, const std::string& file_name, const std::string& context,
                            const Logger& logger) {
  return with_lines_on_error(logger, [&](bool fast, const Logger& log) {
    Merged m;
    merge_document(m, parse_yaml(yaml, file_name, fast), file_name);
    if (m.files.empty()) m.files.push_back(file_name);
    return resolve(m, context, log);
  });
}

KubeConfig in_cluster_config(const KubeConfigOptions& options) {
  auto host = lookup(options, "KUBERNETES_SERVICE_HOST");
  auto port = lookup(options, "KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty())
    throw ConfigError(
        "in-cluster", "KUBERNETES_SERVICE_HOST",
        "unable to load in-cluster configuration: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must "
        "be defined (are we running in a pod?)");
  KubeConfig cfg;
  cfg.source = "in-cluster";
  cfg.cluster.name = "in-cluster";
  // net.JoinHostPort: IPv6 literals are bracketed.
  cfg.cluster.server = host->find(':') != std::string::npos ? fmt::format("https://[{}]:{}", *host, *port)
                                                            : fmt::format("https://{}:{}", *host, *port);
  const std::string dir = options.in_cluster_dir;
  cfg.user.name = "serviceaccount";
  cfg.user.token_file = dir + "/token";
  std::string err;
  if (!read_file(cfg.user.token_file, &err))
    throw ConfigError(cfg.user.token_file, "token", "cannot read the service-account token: " + err);
  if (auto ca = read_file(dir + "/ca.crt")) {
    cfg.cluster.certificate_authority_pem = *ca;
    cfg.cluster.certificate_authority_file = dir + "/ca.crt";
  }
  // clientcmd inClusterClientConfig.Namespace: POD_NAMESPACE, then the service account's namespace file.
  if (auto pod_ns = lookup(options, "POD_NAMESPACE"); pod_ns && !pod_ns->empty()) {
    cfg.namespace_name = *pod_ns;
  } else if (auto ns = read_file(dir + "/namespace"); ns && !kube::trim(*ns).empty()) {
    cfg.namespace_name = kube::trim(*ns);
  }
  return cfg;
}

namespace {

KubeConfig resolve_loaded(const Merged& m, const KubeConfigOptions& options, const std::vector<std::string>& candidates,
                          bool explicit_path, const Logger& logger) {
  if (m.contexts.empty() && m.clusters.empty() && m.current_context.empty() && options.context.empty()) {
    // The deferred loader falls back to in-cluster config when no kubeconfig provides anything.
    auto host = lookup(options, "KUBERNETES_SERVICE_HOST");
    if (!explicit_path && host && !host->empty()) return in_cluster_config(options);
    throw ConfigError(candidates.empty() ? "~/.kube/config" : text::join(candidates, ":"), "",
                      "no kubeconfig found; set KUBECONFIG, pass a kubeconfig path, or create ~/.kube/config");
  }
  return resolve(m, options.context, logger);
}

}  // namespace

KubeConfig load_kubeconfig(const KubeConfigOptions& options) {
  std::vector<std::string> candidates;
  bool explicit_path = !options.path.empty();
  if (explicit_path) {
    candidates.push_back(options.path);
  } else if (auto env = lookup(options, "KUBECONFIG"); env && !env->empty()) {
    std::set<std::string> seen;  // filepath.SplitList + deduplication
    std::size_t start = 0;
    while (start <= env->size()) {
      auto end = env->find(':', start);
      if (end == std::string::npos) end = env->size();
      std::string f = env->substr(start, end - start);
      if (!f.empty() && seen.insert(f).second) candidates.push_back(f);
      start = end + 1;
    }
  } else if (auto home = lookup(options, "HOME"); home && !home->empty()) {
    candidates.push_back(*home + "/.kube/config");
  }

  std::vector<std::pair<std::string, std::string>> texts;  // (file, its text)
  for (const auto& file : candidates) {
    std::string err;
    auto text = read_file(file, &err);
    if (!text) {
      if (explicit_path || file_exists(file))
        throw ConfigError(file, "", "cannot read kubeconfig: " + err + "; check the path and its permissions");
      continue;  // loader.go: missing files in KUBECONFIG are skipped
    }
    texts.emplace_back(file, std::move(*text));
  }
  return with_lines_on_error(options.logger, [&](bool fast, const Logger& log) {
    Merged m;
    for (const auto& [file, text] : texts) merge_document(m, parse_yaml(text, file, fast), file);
    return resolve_loaded(m, options, candidates, explicit_path, log);
  });
}

}  // namespace gpupool
