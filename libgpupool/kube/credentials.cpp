// Credential plugins follow client-go's plugin/pkg/client/auth/exec/exec.go: the plugin's env is
// the parent's plus `env` plus KUBERNETES_EXEC_INFO; the returned apiVersion must match; status
// needs a token or a certificate/key pair; a credential without expirationTimestamp stays valid
// until a 401.
#include "kube/credentials.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <map>

#include "common/base64.hpp"
#include "gpupool/error.hpp"
#include "gpupool/time.hpp"
#include "kube/util.hpp"

extern char** environ;

namespace gpupool::kube {
namespace {

std::string tail(const std::string& s, std::size_t n) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

std::string exec_info(const KubeConfig& cfg) {
  const ExecConfig& x = *cfg.user.exec;
  boost::json::object spec{{"interactive", false}};
  if (x.provide_cluster_info) {
    boost::json::object cluster{{"server", cfg.cluster.server}};
    if (!cfg.cluster.tls_server_name.empty()) cluster["tls-server-name"] = cfg.cluster.tls_server_name;
    if (cfg.cluster.insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    if (!cfg.cluster.certificate_authority_pem.empty())
      cluster["certificate-authority-data"] = base64_encode(cfg.cluster.certificate_authority_pem);
    if (!cfg.cluster.proxy_url.empty()) cluster["proxy-url"] = cfg.cluster.proxy_url;
    spec["cluster"] = std::move(cluster);
  }
  boost::json::object root{{"kind", "ExecCredential"}, {"apiVersion", x.api_version}, {"spec", std::move(spec)}};
  return boost::json::serialize(root);
}

struct ChildResult {
  int status = 0;
  std::string out, err;
};

ChildResult spawn_and_collect(const std::vector<std::string>& argv, const std::vector<std::string>& envp,
                              const std::string& what, const std::string& hint, const std::string& where) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw ConfigError(where, "exec", what + ": pipe failed");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw ConfigError(where, "exec", what + ": pipe failed");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : envp) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = 0;
  // posix_spawnp searches PATH like exec.Command's LookPath; argv is never given to a shell.
  int rc = ::posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    std::string msg = fmt::format("{}: cannot run \"{}\": {}", what, argv[0], std::strerror(rc));
    if (!hint.empty()) msg += "\n\n" + hint;
    throw ConfigError(where, "exec", msg);
  }
  ChildResult r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
        if (r.out.size() > (1u << 20)) n = 0;  // a credential is small; stop reading runaway output
      }
      if (n <= 0 && !(n < 0 && errno == EINTR)) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  r.status = status;
  return r;
}

}  // namespace

ExecCredential parse_exec_credential(std::string_view json, const std::string& api_version, const std::string& where,
                                     const std::string& who) {
  boost::json::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  // The output may hold a token: never quote it in errors.
  if (ec || !v.is_object())
    throw ConfigError(
        where, "exec",
        who + fmt::format(": the plugin's output is not an ExecCredential JSON object ({} bytes)", json.size()));
  const auto& o = v.as_object();
  auto str = [](const boost::json::object& obj, const char* k) -> std::string {
    const auto* p = obj.if_contains(k);
    return p && p->is_string() ? std::string(p->as_string()) : std::string();
  };
  if (str(o, "kind") != "ExecCredential")
    throw ConfigError(where, "exec",
                      who + ": the plugin's output has kind \"" + str(o, "kind") + "\", expected ExecCredential");
  if (str(o, "apiVersion") != api_version)
    throw ConfigError(where, "exec",
                      who + fmt::format(": the plugin is configured for {} but returned apiVersion \"{}\"", api_version,
                                        str(o, "apiVersion")));
  const auto* status = o.if_contains("status");
  if (!status || !status->is_object())
    throw ConfigError(where, "exec", who + ": the plugin did not return a status field");
  const auto& st = status->as_object();
  ExecCredential c;
  c.credentials.bearer_token = str(st, "token");
  c.credentials.client_certificate_pem = str(st, "clientCertificateData");
  c.credentials.client_key_pem = str(st, "clientKeyData");
  if (c.credentials.client_certificate_pem.empty() != c.credentials.client_key_pem.empty())
    throw ConfigError(where, "exec", who + ": the plugin returned only a client certificate or only a key, not both");
  if (c.credentials.bearer_token.empty() && c.credentials.client_certificate_pem.empty())
    throw ConfigError(where, "exec", who + ": the plugin returned neither a token nor a client certificate/key pair");
  if (const auto* exp = st.if_contains("expirationTimestamp"); exp && !exp->is_null()) {
    try {
      if (!exp->is_string()) throw ValidationError("status.expirationTimestamp", "", "not a string");
      c.expires =
          parse_rfc3339(std::string_view(exp->as_string()), "status.expirationTimestamp");  // model's metav1.Time rules
    } catch (const ValidationError&) {
      throw ConfigError(where, "exec", who + ": the plugin returned an expirationTimestamp that is not RFC 3339");
    }
  }
  return c;
}

ExecCredential run_exec_plugin(const KubeConfig& cfg, const Logger& logger) {
  const ExecConfig& x = *cfg.user.exec;
  const std::string what = fmt::format("exec plugin \"{}\" of user \"{}\"", x.command, cfg.user.name);
  const std::string where = cfg.source;
  if (x.interactive_mode == "Always")
    throw ConfigError(where, "exec",
                      what +
                          " needs an interactive terminal (interactiveMode: Always), which gpupool does not provide; "
                          "log in with the plugin first or set interactiveMode: IfAvailable");
  std::vector<std::string> argv{x.command};
  argv.insert(argv.end(), x.args.begin(), x.args.end());
  // The child's environment: ours, the plugin's env (overriding), KUBERNETES_EXEC_INFO.
  std::map<std::string, std::string> env;
  std::vector<std::string> order;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq);
    if (env.emplace(k, kv.substr(eq + 1)).second) order.push_back(k);
  }
  auto set = [&](const std::string& k, const std::string& v) {
    if (env.insert_or_assign(k, v).second) order.push_back(k);
  };
  for (const auto& e : x.env) set(e.name, e.value);
  set("KUBERNETES_EXEC_INFO", exec_info(cfg));
  std::vector<std::string> envp;
  for (const auto& k : order) envp.push_back(k + "=" + env[k]);

  if (logger) logger(LogLevel::debug, "running " + what);
  ChildResult r = spawn_and_collect(argv, envp, what, x.install_hint, where);
  if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
    std::string how = WIFEXITED(r.status) ? fmt::format("exited with status {}", WEXITSTATUS(r.status))
                                          : fmt::format("was killed by signal {}", WTERMSIG(r.status));
    if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 127 && !x.install_hint.empty()) how += "\n\n" + x.install_hint;
    std::string err = trim(tail(r.err, 500));
    throw ConfigError(where, "exec", what + " " + how + (err.empty() ? "" : ": " + err));
  }
  return parse_exec_credential(r.out, x.api_version, where, what);
}

CredentialSource::CredentialSource(KubeConfig config, Logger logger, WallClock now)
    : config_(std::move(config)), logger_(std::move(logger)), now_(std::move(now)) {
  if (!now_) now_ = [] { return std::chrono::system_clock::now(); };
}

RequestCredentials CredentialSource::read_token_file_locked() {
  RequestCredentials c;
  struct stat st {};
  const std::string& path = config_.user.token_file;
  if (::stat(path.c_str(), &st) == 0) {
    long long mtime = static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec;
    if (mtime != token_mtime_ns_ || st.st_size != token_size_ || static_cast<long long>(st.st_ino) != token_inode_) {
      if (auto text = read_file(path)) {
        token_from_file_ = trim(*text);
        token_mtime_ns_ = mtime;
        token_size_ = st.st_size;
        token_inode_ = static_cast<long long>(st.st_ino);
      }
    }
  } else if (token_from_file_.empty()) {
    throw ConfigError(path, "tokenFile", fmt::format("cannot read the token file: {}", std::strerror(errno)));
  }
  c.bearer_token = token_from_file_;
  return c;
}

RequestCredentials CredentialSource::current() {
  const KubeUser& u = config_.user;
  RequestCredentials c;
  c.client_certificate_pem = u.client_certificate_pem;
  c.client_key_pem = u.client_key_pem;
  c.username = u.username;
  c.password = u.password;
  if (!u.token.empty()) {
    c.bearer_token = u.token;
    return c;
  }
  std::lock_guard lock(mutex_);
  if (!u.token_file.empty()) {
    c.bearer_token = read_token_file_locked().bearer_token;
    return c;
  }
  if (u.exec) {
    if (!exec_cache_ || (exec_cache_->expires && now_() >= *exec_cache_->expires))
      exec_cache_ = run_exec_plugin(config_, logger_);
    RequestCredentials e = exec_cache_->credentials;
    if (e.client_certificate_pem.empty()) {  // a token from the plugin; keep a kubeconfig client cert
      e.client_certificate_pem = c.client_certificate_pem;
      e.client_key_pem = c.client_key_pem;
    }
    return e;
  }
  return c;
}

bool CredentialSource::refresh_after_unauthorized(const RequestCredentials& used) {
  const KubeUser& u = config_.user;
  if (!u.token.empty()) return false;
  std::lock_guard lock(mutex_);
  if (!u.token_file.empty()) {
    token_mtime_ns_ = -1;  // force a re-read
    return read_token_file_locked().bearer_token != used.bearer_token;
  }
  if (u.exec) {
    if (exec_cache_ && (exec_cache_->credentials.bearer_token != used.bearer_token ||
                        exec_cache_->credentials.client_certificate_pem != used.client_certificate_pem))
      return true;  // another thread already fetched a new credential
    exec_cache_ = run_exec_plugin(config_, logger_);
    return true;
  }
  return false;
}

}  // namespace gpupool::kube
