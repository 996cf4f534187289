#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/base64.hpp"
#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "gpupool/node.hpp"
#include "kube/credentials.hpp"
#include "kube/temp_dir.hpp"
#include "kube/util.hpp"

using namespace std::chrono_literals;
using gpupool::ConfigError;
using gpupool::kube::CredentialSource;
using gpupool::test::TempDir;

namespace {

// The plugin records its argv, KUBERNETES_EXEC_INFO and one env var, counts its runs, and answers
// with token "tok-<run>" (or a cert/key pair when MODE=cert) expiring at EXPIRY.
const char* kPlugin = R"(#!/bin/sh
dir=$(dirname "$0")
n=$(cat "$dir/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$dir/count"
for a in "$@"; do printf '%s\n' "$a"; done > "$dir/argv"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$dir/info"
printf '%s' "$PLUGIN_FOO" > "$dir/foo"
if [ "$MODE" = fail ]; then echo "login required: run plugin login" >&2; exit 3; fi
if [ "$MODE" = garbage ]; then echo "not json tok-$n"; exit 0; fi
if [ "$MODE" = cert ]; then
  printf '{"kind":"ExecCredential","apiVersion":"%s","status":{"clientCertificateData":"CERT-%s","clientKeyData":"KEY-%s"}}' "$API" $n $n
  exit 0
fi
printf '{"kind":"ExecCredential","apiVersion":"%s","status":{"token":"tok-%s","expirationTimestamp":"%s"}}' "$API" $n "$EXPIRY"
)";

gpupool::KubeConfig plugin_config(const TempDir& dir, const std::string& api, const std::string& mode,
                                  const std::string& expiry = "2030-01-01T00:00:00Z") {
  gpupool::KubeConfig cfg;
  cfg.source = dir.path() + "/kubeconfig";
  cfg.context = "c";
  cfg.cluster.server = "https://10.1.2.3:6443";
  cfg.cluster.certificate_authority_pem = "CA";
  cfg.user.name = "exec-user";
  gpupool::ExecConfig x;
  x.api_version = api;
  x.command = dir.write("plugin.sh", kPlugin, 0700);
  x.args = {"get-token", "--name", "two words", "$HOME;rm -rf /"};
  x.env = {{"PLUGIN_FOO", "bar baz"}, {"MODE", mode}, {"API", api}, {"EXPIRY", expiry}};
  x.interactive_mode = "Never";
  x.provide_cluster_info = true;
  cfg.user.exec = x;
  return cfg;
}

std::string file(const TempDir& dir, const std::string& name) {
  return gpupool::kube::read_file(dir.path() + "/" + name).value_or("<missing>");
}

}  // namespace

TEST_CASE("exec plugin: argv without a shell, env for the child only, KUBERNETES_EXEC_INFO") {
  for (std::string api : {"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}) {
    CAPTURE(api);
    TempDir dir;
    CredentialSource src(plugin_config(dir, api, "token"), {});
    auto c = src.current();
    CHECK(c.bearer_token == "tok-1");
    CHECK(file(dir, "argv") == "get-token\n--name\ntwo words\n$HOME;rm -rf /\n");
    CHECK(file(dir, "foo") == "bar baz");
    CHECK(std::getenv("PLUGIN_FOO") == nullptr);  // never set in our own environment
    auto info = boost::json::parse(file(dir, "info")).as_object();
    CHECK(info.at("kind").as_string() == "ExecCredential");
    CHECK(info.at("apiVersion").as_string() == api);
    CHECK(info.at("spec").at("interactive").as_bool() == false);
    CHECK(info.at("spec").at("cluster").at("server").as_string() == "https://10.1.2.3:6443");
    CHECK(info.at("spec").at("cluster").at("certificate-authority-data").as_string() == gpupool::base64_encode("CA"));
  }
}

TEST_CASE("exec credential is cached until expirationTimestamp and fetched again once after a 401") {
  TempDir dir;
  std::chrono::system_clock::time_point now = gpupool::parse_rfc3339("2029-12-31T23:59:00Z");
  CredentialSource src(plugin_config(dir, "client.authentication.k8s.io/v1", "token", "2030-01-01T00:00:00Z"), {},
                       [&] { return now; });
  CHECK(src.current().bearer_token == "tok-1");
  CHECK(src.current().bearer_token == "tok-1");
  CHECK(file(dir, "count") == "1\n");
  now += 59s;
  CHECK(src.current().bearer_token == "tok-1");
  now += 1s;  // reached expiry
  CHECK(src.current().bearer_token == "tok-2");
  CHECK(file(dir, "count") == "2\n");
  // A 401 with tok-2 refetches once; a second thread reporting the same stale token does not run it again.
  gpupool::RequestCredentials stale;
  stale.bearer_token = "tok-2";
  now -= 10s;
  CHECK(src.refresh_after_unauthorized(stale));
  CHECK(src.current().bearer_token == "tok-3");
  CHECK(src.refresh_after_unauthorized(stale));
  CHECK(file(dir, "count") == "3\n");
}

TEST_CASE("exec plugin returning a client certificate") {
  TempDir dir;
  CredentialSource src(plugin_config(dir, "client.authentication.k8s.io/v1beta1", "cert"), {});
  auto c = src.current();
  CHECK(c.client_certificate_pem == "CERT-1");
  CHECK(c.client_key_pem == "KEY-1");
  CHECK(c.bearer_token.empty());
}

TEST_CASE("exec plugin failures are ConfigErrors that never quote the plugin's output") {
  struct Case {
    std::string mode, message;
  };
  for (const auto& tc : std::vector<Case>{{"fail", "exited with status 3: login required: run plugin login"},
                                          {"garbage", "not an ExecCredential JSON object"}}) {
    TempDir dir;
    CredentialSource src(plugin_config(dir, "client.authentication.k8s.io/v1", tc.mode), {});
    try {
      src.current();
      FAIL("no error");
    } catch (const ConfigError& e) {
      std::string what = e.what();
      CHECK(what.find(tc.message) != std::string::npos);
      CHECK(what.find("exec-user") != std::string::npos);
      CHECK(what.find("tok-") == std::string::npos);
    }
  }
  TempDir dir;
  auto cfg = plugin_config(dir, "client.authentication.k8s.io/v1", "token");
  cfg.user.exec->command = dir.path() + "/no-such-plugin";
  cfg.user.exec->install_hint = "install it with: apt install the-plugin";
  CHECK_THROWS_WITH_AS(CredentialSource(cfg, {}).current(), doctest::Contains("install it with"), ConfigError);
  cfg.user.exec->interactive_mode = "Always";
  CHECK_THROWS_WITH_AS(CredentialSource(cfg, {}).current(), doctest::Contains("interactive"), ConfigError);
}

TEST_CASE("ExecCredential documents") {
  const std::string v1 = "client.authentication.k8s.io/v1";
  struct Case {
    std::string json, error;  // empty error: valid
  };
  const std::vector<Case> cases = {
      {R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t"}})", ""},
      {R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"t"}})",
       "returned apiVersion"},
      {R"({"kind":"Other","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t"}})",
       "expected ExecCredential"},
      {R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1"})", "status"},
      {R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{}})", "neither a token"},
      {R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"clientKeyData":"k"}})",
       "not both"},
      {R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t","expirationTimestamp":"soon"}})",
       "RFC 3339"},
      {R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t")",
       "not an ExecCredential"},
      {"[]", "not an ExecCredential"},
  };
  for (const auto& tc : cases) {
    CAPTURE(tc.json);
    if (tc.error.empty()) {
      CHECK(gpupool::kube::parse_exec_credential(tc.json, v1, "kc").credentials.bearer_token == "t");
    } else {
      CHECK_THROWS_WITH_AS(gpupool::kube::parse_exec_credential(tc.json, v1, "kc"), doctest::Contains(tc.error.c_str()),
                           ConfigError);
    }
  }
}

TEST_CASE("token file is re-read when it changes") {
  TempDir dir;
  gpupool::KubeConfig cfg;
  cfg.user.token_file = dir.write("token", "first\n");
  CredentialSource src(cfg, {});
  CHECK(src.current().bearer_token == "first");
  dir.write("token", "second-longer");  // size differs, so the change is seen even within one mtime tick
  CHECK(src.current().bearer_token == "second-longer");
  gpupool::RequestCredentials used;
  used.bearer_token = "second-longer";
  CHECK_FALSE(src.refresh_after_unauthorized(used));  // same token: retrying is pointless
  gpupool::KubeConfig fixed;
  fixed.user.token = "static";
  CredentialSource s2(fixed, {});
  CHECK(s2.current().bearer_token == "static");
  CHECK_FALSE(s2.refresh_after_unauthorized(s2.current()));
}
