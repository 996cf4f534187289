#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include "common/base64.hpp"
#include "common/block_yaml.hpp"
#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "kube/mutator.hpp"
#include "kube/temp_dir.hpp"
#include "kube/util.hpp"

using gpupool::ConfigError;
using gpupool::KubeConfigOptions;
using gpupool::test::TempDir;

namespace {

// Two kubeconfigs that both define cluster "shared" and context "both", with different values,
// so every merge rule shows in which file's value wins.
const char* kFileA = R"(apiVersion: v1
kind: Config
current-context: ctx-a
clusters:
- name: shared
  cluster: {server: "https://a.example:6443"}
- name: only-a
  cluster: {server: "https://only-a:6443"}
users:
- name: alice
  user: {token: token-a}
contexts:
- name: ctx-a
  context: {cluster: shared, user: alice, namespace: alice}
- name: both
  context: {cluster: only-a, user: alice}
)";

const char* kFileB = R"(apiVersion: v1
kind: Config
current-context: ctx-b
clusters:
- name: shared
  cluster: {server: "https://b.example:6443"}
users:
- name: alice
  user: {token: token-b}
- name: bob
  user: {token: token-bob}
contexts:
- name: ctx-b
  context: {cluster: shared, user: bob, namespace: bob}
- name: both
  context: {cluster: shared, user: bob, namespace: from-b}
)";

const char* kFileNoCurrent = R"(clusters:
- name: shared
  cluster: {server: "https://c.example"}
contexts:
- name: ctx-c
  context: {cluster: shared}
)";

KubeConfigOptions with_env(std::map<std::string, std::string> env) {
  KubeConfigOptions o;
  o.getenv = [env = std::move(env)](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  return o;
}

}  // namespace

TEST_CASE("KUBECONFIG files merge as client-go does: first file to set a key wins") {
  TempDir dir;
  const std::string a = dir.write("a.yaml", kFileA), b = dir.write("b.yaml", kFileB),
                    c = dir.write("c.yaml", kFileNoCurrent), missing = dir.path() + "/missing.yaml";
  struct Case {
    std::string kubeconfig, context_override;
    std::string context, server, ns, token;
  };
  const std::vector<Case> cases = {
      {a + ":" + b, "", "ctx-a", "https://a.example:6443", "alice", "token-a"},
      {b + ":" + a, "", "ctx-b", "https://b.example:6443", "bob", "token-bob"},
      // "both" is defined in both files; A's definition wins (cluster only-a, no namespace).
      {a + ":" + b, "both", "both", "https://only-a:6443", "default", "token-a"},
      {b + ":" + a, "both", "both", "https://b.example:6443", "from-b", "token-bob"},
      // ctx-b comes from B but cluster "shared" and user... "bob" only in B; "shared" from A.
      {a + ":" + b, "ctx-b", "ctx-b", "https://a.example:6443", "bob", "token-bob"},
      // Missing files are skipped; empty entries ignored.
      {missing + "::" + b, "", "ctx-b", "https://b.example:6443", "bob", "token-bob"},
      // current-context from the first file that sets it.
      {c + ":" + b, "", "ctx-b", "https://c.example", "bob", "token-bob"},
      {c, "ctx-c", "ctx-c", "https://c.example", "default", ""},
  };
  for (const auto& tc : cases) {
    CAPTURE(tc.kubeconfig);
    CAPTURE(tc.context_override);
    auto o = with_env({{"KUBECONFIG", tc.kubeconfig}});
    o.context = tc.context_override;
    auto cfg = gpupool::load_kubeconfig(o);
    CHECK(cfg.context == tc.context);
    CHECK(cfg.cluster.server == tc.server);
    CHECK(cfg.namespace_name == tc.ns);
    CHECK(cfg.user.token == tc.token);
  }
}

TEST_CASE("explicit path replaces KUBECONFIG and must exist; HOME/.kube/config is the default") {
  TempDir dir;
  const std::string a = dir.write("a.yaml", kFileA), b = dir.write("home/.kube/config", kFileB);
  auto o = with_env({{"KUBECONFIG", b}, {"HOME", dir.path() + "/home"}});
  o.path = a;
  CHECK(gpupool::load_kubeconfig(o).context == "ctx-a");
  o.path = dir.path() + "/nope.yaml";
  CHECK_THROWS_AS(gpupool::load_kubeconfig(o), ConfigError);
  auto home_only = with_env({{"HOME", dir.path() + "/home"}});
  CHECK(gpupool::load_kubeconfig(home_only).context == "ctx-b");
  auto nothing = with_env({{"HOME", dir.path() + "/nowhere"}});
  CHECK_THROWS_WITH_AS(gpupool::load_kubeconfig(nothing), doctest::Contains("no kubeconfig found"), ConfigError);
}

TEST_CASE("relative paths resolve against the kubeconfig's directory; -data is base64") {
  TempDir dir;
  dir.write("certs/ca.crt", "CA-PEM");
  dir.write("certs/client.crt", "CERT-PEM");
  dir.write("certs/client.key", "KEY-PEM");
  dir.write("certs/token", "file-token\n");
  const std::string path = dir.write("kc.yaml", R"(current-context: c
clusters:
- name: k
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority: certs/ca.crt
    tls-server-name: kubernetes.default
    proxy-url: http://proxy:3128
users:
- name: u
  user:
    client-certificate: certs/client.crt
    client-key: certs/client.key
- name: t
  user:
    tokenFile: certs/token
- name: d
  user:
    client-certificate-data: )" + gpupool::base64_encode("CERT-DATA") +
                                                    R"(
    client-key-data: )" + gpupool::base64_encode("KEY-DATA") +
                                                    R"(
contexts:
- name: c
  context: {cluster: k, user: u, namespace: team}
- name: t
  context: {cluster: k, user: t}
- name: d
  context: {cluster: k, user: d}
)");
  KubeConfigOptions o;
  o.path = path;
  auto cfg = gpupool::load_kubeconfig(o);
  CHECK(cfg.cluster.server == "https://10.0.0.1:6443");
  CHECK(cfg.cluster.certificate_authority_pem == "CA-PEM");
  CHECK(cfg.cluster.certificate_authority_file == dir.path() + "/certs/ca.crt");
  CHECK(cfg.cluster.tls_server_name == "kubernetes.default");
  CHECK(cfg.cluster.proxy_url == "http://proxy:3128");
  CHECK(cfg.user.client_certificate_pem == "CERT-PEM");
  CHECK(cfg.user.client_key_pem == "KEY-PEM");
  CHECK(cfg.namespace_name == "team");
  o.context = "t";
  CHECK(gpupool::load_kubeconfig(o).user.token_file == dir.path() + "/certs/token");
  o.context = "d";
  auto d = gpupool::load_kubeconfig(o);
  CHECK(d.user.client_certificate_pem == "CERT-DATA");
  CHECK(d.user.client_key_pem == "KEY-DATA");
}

TEST_CASE("exec plugin settings are read and validated") {
  const std::string text = R"(current-context: c
clusters: [{name: k, cluster: {server: "https://k"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: ./bin/plugin
      args: [get-token, --cluster, "a b"]
      env: [{name: FOO, value: bar}]
      provideClusterInfo: true
)";
  auto cfg = gpupool::parse_kubeconfig(text, "/etc/kc/config");
  REQUIRE(cfg.user.exec);
  CHECK(cfg.user.exec->command == "/etc/kc/./bin/plugin");
  CHECK(cfg.user.exec->args == std::vector<std::string>{"get-token", "--cluster", "a b"});
  CHECK(cfg.user.exec->env == std::vector<gpupool::ExecEnvVar>{{"FOO", "bar"}});
  CHECK(cfg.user.exec->interactive_mode == "IfAvailable");
  CHECK(cfg.user.exec->provide_cluster_info);
}

TEST_CASE("bad kubeconfigs name the file and the key") {
  const std::string head = "current-context: c\nclusters: [{name: k, cluster: {server: \"https://k\"}}]\n";
  struct Case {
    std::string yaml, key, message;
  };
  const std::vector<Case> cases = {
      {"current-context: c\ncontexts: [{name: c, context: {cluster: nope}}]\n", "contexts[0].context.cluster",
       "cluster \"nope\" is not defined"},
      {head + "contexts: [{name: x, context: {cluster: k}}, {name: c, context: {cluster: zz}}]\n",
       "contexts[1].context.cluster", "\"zz\""},
      {head + "contexts: [{name: c, context: {cluster: k, user: ghost}}]\n", "contexts[0].context.user",
       "user \"ghost\" is not defined"},
      {head + "contexts: [{name: d, context: {cluster: k}}]\n", "current-context",
       "context \"c\" not found; defined: d"},
      {"clusters: [{name: k, cluster: {server: \"https://k\"}}]\ncontexts: [{name: d, context: {cluster: k}}]\n",
       "current-context", "no context selected"},
      {"current-context: c\nclusters: [{name: k, cluster: {insecure-skip-tls-verify: true}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "clusters[0].cluster.server", "has no server"},
      {"current-context: c\nclusters: [{name: k, cluster: {server: https://k, certificate-authority-data: '@@@'}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "clusters[0].cluster.certificate-authority-data", "not valid base64"},
      {"current-context: c\nclusters: [{name: k, cluster: {server: https://k, certificate-authority: /x, "
       "certificate-authority-data: QUJD}}]\ncontexts: [{name: c, context: {cluster: k}}]\n",
       "clusters[0].cluster.certificate-authority", "both specified"},
      {"current-context: c\nclusters: [{name: k, cluster: {server: https://k, insecure-skip-tls-verify: true, "
       "certificate-authority-data: QUJD}}]\ncontexts: [{name: c, context: {cluster: k}}]\n",
       "clusters[0].cluster.insecure-skip-tls-verify", "not allowed"},
      {"current-context: c\nclusters: [{name: k, cluster: {server: https://k, insecure-skip-tls-verify: maybe}}]\n"
       "contexts: [{name: c, context: {cluster: k}}]\n",
       "clusters[0].cluster.insecure-skip-tls-verify", "expected true or false"},
      {head + "contexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: "
              "{client-certificate-data: QUJD}}]\n",
       "users[0].user.client-key", "must be specified"},
      {head +
           "contexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {token: t, username: x}}]\n",
       "users[0].user.token", "more than one authentication method"},
      {head + "contexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {tokenFile: "
              "/nonexistent/tok}}]\n",
       "users[0].user.tokenFile", "cannot read \"/nonexistent/tok\""},
      {head + "contexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {exec: {command: x}}}]\n",
       "users[0].user.exec.apiVersion", "not supported"},
      {head + "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
              "users: [{name: u, user: {exec: {command: x, apiVersion: client.authentication.k8s.io/v1}}}]\n",
       "users[0].user.exec.interactiveMode", "must be specified"},
      {head + "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
              "users: [{name: u, user: {exec: {command: x, apiVersion: client.authentication.k8s.io/v1beta1, env: "
              "[{name: A}]}}}]\n",
       "users[0].user.exec.env[0].value", "must be specified"},
      {head + "contexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {auth-provider: {name: "
              "gcp}}}]\n",
       "users[0].user.auth-provider", "use an exec plugin"},
      {head + "contexts: [{name: c, context: {cluster: k}}, {name: c, context: {cluster: k}}]\n", "contexts[1].name",
       "duplicate name \"c\""},
      {"clusters: {k: 1}\n", "clusters", "expected a list"},
      {"- just\n- a list\n", "", "expected a YAML mapping"},
      {"clusters: [\n", "", "not valid YAML"},
  };
  for (const auto& tc : cases) {
    CAPTURE(tc.yaml);
    try {
      gpupool::parse_kubeconfig(tc.yaml, "/home/u/.kube/config");
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(e.file() == "/home/u/.kube/config");
      CHECK(e.key() == tc.key);
      CHECK(std::string(e.what()).find(tc.message) != std::string::npos);
    }
  }
}

TEST_CASE("a kubeconfig holding keys that group or others can read gets a warning") {
  TempDir dir;
  const std::string yaml = std::string(kFileA);
  struct Case {
    unsigned mode;
    bool warned;
  };
  for (auto tc : {Case{0600, false}, Case{0640, true}, Case{0644, true}, Case{0400, false}}) {
    CAPTURE(tc.mode);
    const std::string path = dir.write("kc.yaml", yaml, tc.mode);
    std::vector<std::string> logs;
    KubeConfigOptions o;
    o.path = path;
    o.logger = [&](gpupool::LogLevel, const std::string& m) { logs.push_back(m); };
    auto cfg = gpupool::load_kubeconfig(o);
    CHECK(!logs.empty() == tc.warned);
    for (const auto& m : logs) {
      CHECK(m.find("chmod 600") != std::string::npos);
      CHECK(m.find("token-a") == std::string::npos);
    }
  }
}

TEST_CASE("in-cluster config from the service account") {
  TempDir dir;
  dir.write("sa/token", "sa-token");
  dir.write("sa/ca.crt", "SA-CA");
  dir.write("sa/namespace", "ml-team\n");
  struct Case {
    std::string host, port, pod_ns, server, ns;
  };
  for (const auto& tc : std::vector<Case>{{"10.96.0.1", "443", "", "https://10.96.0.1:443", "ml-team"},
                                          {"fd00::1", "6443", "", "https://[fd00::1]:6443", "ml-team"},
                                          {"10.96.0.1", "443", "override", "https://10.96.0.1:443", "override"}}) {
    auto o = with_env({{"KUBERNETES_SERVICE_HOST", tc.host},
                       {"KUBERNETES_SERVICE_PORT", tc.port},
                       {"POD_NAMESPACE", tc.pod_ns},
                       {"HOME", dir.path() + "/nohome"}});
    o.in_cluster_dir = dir.path() + "/sa";
    auto cfg = gpupool::load_kubeconfig(o);  // no kubeconfig anywhere: falls back to in-cluster
    CHECK(cfg.cluster.server == tc.server);
    CHECK(cfg.namespace_name == tc.ns);
    CHECK(cfg.cluster.certificate_authority_pem == "SA-CA");
    CHECK(cfg.user.token_file == dir.path() + "/sa/token");
    CHECK(cfg.user.token.empty());  // read on use, so rotation is picked up
  }
  auto no_env = with_env({});
  CHECK_THROWS_WITH_AS(gpupool::in_cluster_config(no_env), doctest::Contains("KUBERNETES_SERVICE_HOST"), ConfigError);
}

TEST_CASE("base64 round trip and rejection") {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    CHECK(gpupool::base64_decode(gpupool::base64_encode(s)) == s);
  }
  CHECK(gpupool::base64_encode("abc") == "YWJj");
  CHECK_FALSE(gpupool::base64_decode("YWJ"));
  CHECK_FALSE(gpupool::base64_decode("Y=Jj"));
  CHECK_FALSE(gpupool::base64_decode("YW*j"));
  // In a kubeconfig, *-data may be wrapped over several lines (Go's decoder skips \r and \n).
  auto cfg = gpupool::parse_kubeconfig(
      "current-context: c\nclusters: [{name: k, cluster: {server: https://k, "
      "certificate-authority-data: \"QUJD\\r\\nREVG\"}}]\n"
      "contexts: [{name: c, context: {cluster: k}}]\n",
      "kc");
  CHECK(cfg.cluster.certificate_authority_pem == "ABCDEF");
}

TEST_CASE("mangled kubeconfigs give ConfigError or a config, never another exception") {
  std::string base = kFileA;  // with alice's token replaced by an exec plugin
  base.replace(
      base.find("{token: token-a}"), 16,
      "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: x, args: [a], env: [{name: A, value: b}]}}");
  REQUIRE(gpupool::parse_kubeconfig(base, "base.yaml").user.exec.has_value());
  gpupool::test::Mutator mutator(42, "{}[]:,-'\"\n #&*!|>%@`abc012");
  int config_errors = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string text = mutator.mutate(base, 4);
    try {
      gpupool::parse_kubeconfig(text, "fuzz.yaml");
    } catch (const ConfigError&) {
      ++config_errors;
    } catch (const std::exception& e) {
      CAPTURE(text);
      const std::string why = std::string("unexpected exception: ") + e.what() + " (" + typeid(e).name() + ")";
      FAIL(why);
    }
  }
  CHECK(config_errors > 100);
}

TEST_CASE("a block-style kubeconfig (read without yaml-cpp) still names the line of its error") {
  const std::string yaml =
      "apiVersion: v1\n"
      "current-context: c\n"
      "clusters:\n"
      "- name: k\n"
      "  cluster:\n"
      "    server: https://k\n"
      "    insecure-skip-tls-verify: maybe\n"
      "contexts:\n"
      "- name: c\n"
      "  context:\n"
      "    cluster: k\n";
  REQUIRE(gpupool::detail::load_block_yaml(yaml));  // the fast reader takes this file
  try {
    gpupool::parse_kubeconfig(yaml, "/home/u/.kube/config");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.key() == "clusters[0].cluster.insecure-skip-tls-verify");
    CHECK(e.line() == 7);  // from yaml-cpp's reading of it, made for the error
  }
  // Without an error, the same file gives the same config as yaml-cpp's reading would.
  const std::string good = yaml.substr(0, yaml.find("    insecure")) + yaml.substr(yaml.find("contexts:"));
  const auto cfg = gpupool::parse_kubeconfig(good, "/home/u/.kube/config");
  CHECK(cfg.cluster.server == "https://k");
  CHECK(cfg.context == "c");
}
