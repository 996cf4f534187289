// gpupool::Client against the embedded API server over real HTTPS on 127.0.0.1.
#include <doctest/doctest.h>

#include <atomic>
#include <boost/json.hpp>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gpupool/client.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "gpupool/node.hpp"
#include "kube/temp_dir.hpp"
#include "kube/util.hpp"

using namespace std::chrono_literals;
namespace json = boost::json;
using gpupool::ApiError;
using gpupool::Client;
using gpupool::EmbeddedServer;
using gpupool::ResourceRef;

namespace {

const ResourceRef kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
const ResourceRef kPods{"", "v1", "pods", "Pod", true};

gpupool::ClientOptions fast_retries(std::vector<std::string>* logs = nullptr, std::mutex* mu = nullptr) {
  gpupool::ClientOptions o;
  o.retry.sleep = [](std::chrono::milliseconds) {};  // the server does not need us to wait
  o.retry.max_retries = 20;
  if (logs)
    o.logger = [logs, mu](gpupool::LogLevel, const std::string& m) {
      std::lock_guard lock(*mu);
      logs->push_back(m);
    };
  return o;
}

gpupool::KubeConfig config_for(const std::string& path) {
  gpupool::KubeConfigOptions o;
  o.path = path;
  return gpupool::load_kubeconfig(o);
}

json::object config_map(const std::string& name, const std::string& label = "kube-client-test") {
  return json::object{{"apiVersion", "v1"},
                      {"kind", "ConfigMap"},
                      {"metadata", {{"name", name}, {"labels", {{"suite", label}}}}},
                      {"data", {{"k", "v"}}}};
}

gpupool::EmbeddedOptions server_options(std::vector<std::string> users, const std::string& mpijob_version = "v1",
                                        const std::string& topology = "") {
  gpupool::EmbeddedOptions o;
  o.users = std::move(users);
  o.mpijob_version = mpijob_version;
  o.topology = topology;
  return o;
}

std::string fmt_name(int thread, int i) { return "job-" + std::to_string(thread) + "-" + std::to_string(i); }

std::string name_of(const json::value& obj) { return std::string(obj.at("metadata").at("name").as_string()); }

}  // namespace

TEST_CASE("TLS with the server's CA; a wrong CA is an error, never a silent downgrade") {
  EmbeddedServer server(server_options({"alice"}));
  auto cfg = config_for(server.kubeconfig("alice"));
  CHECK(cfg.namespace_name == "alice");
  Client alice(cfg, fast_retries());
  CHECK(alice.server_version().git_version == "v1.32.0");

  EmbeddedServer other(server_options({"alice"}));
  auto wrong = cfg;
  wrong.cluster.certificate_authority_pem = other.ca_pem();
  // A certificate not trusted is refused again on every try: reported at once, not retried.
  CHECK_THROWS_WITH_AS(Client(wrong, fast_retries()).server_version(), doctest::Contains("not trusted"),
                       gpupool::UnreachableError);
  auto system_store = cfg;
  system_store.cluster.certificate_authority_pem.clear();
  CHECK_THROWS_AS(Client(system_store, fast_retries()).server_version(), gpupool::UnreachableError);

  // insecure-skip-tls-verify is honoured, with a warning.
  auto insecure = system_store;
  insecure.cluster.insecure_skip_tls_verify = true;
  std::vector<std::string> logs;
  std::mutex mu;
  CHECK(Client(insecure, fast_retries(&logs, &mu)).server_version().major == "1");
  bool warned = false;
  for (const auto& m : logs) warned = warned || m.find("TLS verification is off") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("a response larger than max_response_bytes is an error, not retried, not an unbounded buffer") {
  EmbeddedServer server(server_options({"alice"}, "v1", "seed"));
  auto cfg = config_for(server.admin_kubeconfig());
  const ResourceRef nodes{"", "v1", "nodes", "Node", false};
  const std::size_t whole = json::serialize(Client(cfg, fast_retries()).list(nodes, "").items).size();
  REQUIRE(whole > 4096);
  auto o = fast_retries();
  int retries = 0;
  o.retry.sleep = [&](std::chrono::milliseconds) { ++retries; };
  o.transport.max_response_bytes = 4096;
  Client small(cfg, o);
  CHECK_THROWS_WITH_AS(small.list(nodes, ""),
                       doctest::Contains("larger than 4096 bytes (TransportOptions.max_response_bytes)"),
                       gpupool::ResponseTooLargeError);
  CHECK(retries == 0);  // the same request would get the same answer
  // Small answers still pass, and paging keeps each response under the limit.
  CHECK(small.server_version().major == "1");
  CHECK(small.list_all(nodes, "", {.limit = 1}).size() == 6);
}

// Client::for_each_page (the whole-cluster views' lists): the pages in order, as text with their
// continue tokens, the same items as list_all; a throw from the callback ends the walk and reaches
// the caller (the prefetch of the next page is waited for, not leaked).
TEST_CASE("for_each_page: every page in order as text, the next one prefetched; a throw stops it") {
  EmbeddedServer server(server_options({"alice"}, "v1", "seed"));
  Client c(config_for(server.admin_kubeconfig()), fast_retries());
  const ResourceRef nodes{"", "v1", "nodes", "Node", false};
  std::vector<std::string> names;
  int pages = 0;
  c.for_each_page(nodes, "", {.limit = 4}, [&](const gpupool::RawListPage& page) {
    ++pages;
    CHECK(!page.resource_version.empty());
    CHECK(page.continue_token.empty() == (pages == 2));
    for (const auto& n : gpupool::Node::list_from_json(page.text)) names.push_back(n.name);
  });
  CHECK(pages == 2);  // the seed's 6 nodes in pages of 4
  std::vector<std::string> want;
  for (const auto& n : c.list_all(nodes, "")) want.emplace_back(n.at("metadata").at("name").as_string());
  CHECK(names == want);
  int calls = 0;
  CHECK_THROWS_WITH(c.for_each_page(nodes, "", {.limit = 1},
                                    [&](const gpupool::RawListPage&) {
                                      if (++calls == 2) throw std::runtime_error("stop at the second page");
                                    }),
                    "stop at the second page");
  CHECK(calls == 2);
}

TEST_CASE("connections are reused across requests and threads") {
  EmbeddedServer server(server_options({"alice"}));
  std::vector<std::string> logs;
  std::mutex mu;
  Client c(config_for(server.kubeconfig("alice")), fast_retries(&logs, &mu));
  for (int i = 0; i < 20; ++i) c.list(kConfigMaps, "");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) c.list(kConfigMaps, "");
    });
  for (auto& th : threads) th.join();
  int requests = 0, connections = 0;
  for (const auto& m : logs) {
    requests += m.find("GET /api/v1/namespaces/alice/configmaps ->") != std::string::npos;
    connections += m.find("new connection") != std::string::npos;
  }
  CHECK(requests == 60);
  CHECK(connections >= 1);
  CHECK(connections <= 5);  // one for the sequential calls, at most one per concurrent thread
}

TEST_CASE("tls-server-name is verified against the certificate; proxy-url is used") {
  EmbeddedServer server(server_options({"alice"}));
  auto cfg = config_for(server.kubeconfig("alice"));
  struct Case {
    std::string tls_server_name;
    bool works;
  };
  // The server's certificate names IP:127.0.0.1 and DNS:localhost.
  for (const auto& tc : std::vector<Case>{{"", true}, {"localhost", true}, {"kubernetes.default.svc", false}}) {
    CAPTURE(tc.tls_server_name);
    auto c = cfg;
    c.cluster.tls_server_name = tc.tls_server_name;
    bool worked = true;
    try {
      Client(c, fast_retries()).server_version();
    } catch (const gpupool::TransportError&) {
      worked = false;
    }
    CHECK(worked == tc.works);
  }
  auto proxied = cfg;
  proxied.cluster.proxy_url = "http://127.0.0.1:1";  // nothing listens there: the request must fail
  auto o = fast_retries();
  o.retry.max_retries = 0;
  CHECK_THROWS_AS(Client(proxied, o).server_version(), gpupool::TransportError);
}

TEST_CASE("token, client certificate and exec-plugin users") {
  EmbeddedServer server(server_options({"alice", "bob"}));
  Client by_token(config_for(server.kubeconfig("alice")), fast_retries());
  Client by_cert(config_for(server.cert_kubeconfig("alice")), fast_retries());
  by_token.create(kConfigMaps, "", config_map("from-token"));
  CHECK(name_of(by_cert.get(kConfigMaps, "", "from-token")) == "from-token");

  // An exec plugin: the first run hands out a stale token, later runs the real one, so the 401
  // path (fetch again once, retry) is exercised.
  gpupool::test::TempDir dir;
  const std::string good = config_for(server.kubeconfig("alice")).user.token;
  dir.write("good", good);
  const std::string plugin = dir.write("plugin.sh", R"(#!/bin/sh
d=$(dirname "$0"); n=$(cat "$d/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$d/count"
if [ $n -eq 1 ]; then t=stale; else t=$(cat "$d/good"); fi
printf '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"%s"}}' "$t"
)",
                                       0700);
  auto cfg = config_for(server.kubeconfig("alice"));
  cfg.user.token.clear();
  cfg.user.exec = gpupool::ExecConfig{"client.authentication.k8s.io/v1", plugin, {}, {}, "Never", false, ""};
  Client by_exec(cfg, fast_retries());
  CHECK(name_of(by_exec.get(kConfigMaps, "", "from-token")) == "from-token");
  CHECK(name_of(by_exec.get(kConfigMaps, "", "from-token")) == "from-token");
  CHECK(gpupool::kube::read_file(dir.path() + "/count") == "2\n");  // stale, then good (cached afterwards)

  auto bad = config_for(server.kubeconfig("alice"));
  bad.user.token = "not-a-real-token";
  try {
    Client(bad, fast_retries()).list(kConfigMaps, "");
    FAIL("no error");
  } catch (const ApiError& e) {
    CHECK(e.code() == 401);
    CHECK(std::string(e.what()).find("not-a-real-token") == std::string::npos);
    // Which of the kubeconfig's credentials was refused, and what to renew (kubectl only says
    // "You must be logged in to the server").
    CHECK(std::string(e.what()) ==
          "Unauthorized (401): Unauthorized; the server did not accept the credentials of user \"" + bad.user.name +
              "\": its token was refused (wrong, expired or revoked): get a new one");
  }
  auto stale = cfg;  // the plugin now hands out a refused token every time
  dir.write("good", "stale");
  dir.write("count", "5\n");
  try {
    Client(stale, fast_retries()).list(kConfigMaps, "");
    FAIL("no error");
  } catch (const ApiError& e) {
    CHECK(e.code() == 401);
    CHECK(std::string(e.what()).ends_with("; the server did not accept the credentials of user \"" + stale.user.name +
                                          "\": the token of its exec plugin (" + plugin +
                                          ") was refused: log in again with the plugin"));
  }
}

TEST_CASE("in-cluster config: service-account token, CA and namespace files") {
  EmbeddedServer server(server_options({"alice"}));
  const auto alice = config_for(server.kubeconfig("alice"));
  gpupool::test::TempDir sa;
  sa.write("token", alice.user.token + "\n");
  sa.write("ca.crt", server.ca_pem());
  sa.write("namespace", "alice");
  gpupool::KubeConfigOptions o;
  o.in_cluster_dir = sa.path();
  const std::string port = std::to_string(server.port());
  o.getenv = [&](const std::string& k) -> std::optional<std::string> {
    if (k == "KUBERNETES_SERVICE_HOST") return "127.0.0.1";
    if (k == "KUBERNETES_SERVICE_PORT") return port;
    return std::nullopt;
  };
  auto cfg = gpupool::load_kubeconfig(o);  // no KUBECONFIG, no HOME: in-cluster
  CHECK(cfg.source == "in-cluster");
  Client c(cfg, fast_retries());
  c.create(kConfigMaps, "", config_map("in-cluster"));
  CHECK(name_of(c.get(kConfigMaps, "alice", "in-cluster")) == "in-cluster");
}

TEST_CASE("tokens never reach logs or error messages, even at debug level") {
  EmbeddedServer server(server_options({"alice", "bob"}));
  std::vector<std::string> texts;
  std::mutex mu;
  auto good = config_for(server.kubeconfig("alice"));
  auto bad = good;
  bad.user.token = "wrong-" + good.user.token;
  auto collect = [&](auto&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      std::lock_guard lock(mu);
      texts.emplace_back(e.what());
    }
  };
  Client ok(good, fast_retries(&texts, &mu));
  Client wrong(bad, fast_retries(&texts, &mu));
  collect([&] { ok.create(kConfigMaps, "", config_map("s")); });
  collect([&] { ok.get(kConfigMaps, "", "missing"); });
  collect([&] { ok.list(kConfigMaps, "bob"); });
  collect([&] {
    ok.patch(kConfigMaps, "", "s", gpupool::PatchType::json, json::array{json::object{{"op", "bogus"}}});
  });
  collect([&] { wrong.list(kConfigMaps, ""); });
  collect([&] { ok.logs("", "missing", {}, [](std::string_view) { return true; }); });
  CHECK(texts.size() >= 8);
  for (const auto& t : texts) {
    CAPTURE(t);
    CHECK(t.find(good.user.token) == std::string::npos);
  }
}

TEST_CASE("CRUD, selectors, pagination, patch types, dry run, delete") {
  EmbeddedServer server(server_options({"alice"}));
  Client c(config_for(server.kubeconfig("alice")), fast_retries());
  for (int i = 0; i < 7; ++i) c.create(kConfigMaps, "", config_map("cm-" + std::to_string(i), i % 2 ? "odd" : "even"));
  CHECK_THROWS_WITH_AS(c.create(kConfigMaps, "", config_map("cm-0")), doctest::Contains("AlreadyExists"), ApiError);

  auto odd = c.list_all(kConfigMaps, "", {.label_selector = "suite=odd"});
  CHECK(odd.size() == 3);
  auto page = c.list(kConfigMaps, "", {.label_selector = "suite in (odd,even)", .limit = 3});
  CHECK(page.items.size() == 3);
  CHECK_FALSE(page.continue_token.empty());
  CHECK(c.list_all(kConfigMaps, "", {.label_selector = "suite in (odd,even)", .limit = 3}).size() == 7);
  CHECK(c.list_all(kConfigMaps, "", {.field_selector = "metadata.name=cm-4"}).size() == 1);

  // update with resourceVersion; a stale one conflicts
  auto cm = c.get(kConfigMaps, "", "cm-0");
  auto stale = cm;
  cm["data"].as_object()["k"] = "v2";
  auto updated = c.update(kConfigMaps, "", cm);
  CHECK(updated.at("data").at("k").as_string() == "v2");
  CHECK_THROWS_WITH_AS(c.update(kConfigMaps, "", stale), doctest::Contains("Conflict"), ApiError);

  using gpupool::PatchType;
  c.patch(kConfigMaps, "", "cm-1", PatchType::merge, json::object{{"data", {{"m", "1"}}}});
  c.patch(kConfigMaps, "", "cm-1", PatchType::strategic, json::object{{"data", {{"s", "2"}}}});
  c.patch(kConfigMaps, "", "cm-1", PatchType::json,
          json::array{json::object{{"op", "add"}, {"path", "/data/j"}, {"value", "3"}}});
  c.patch(kConfigMaps, "", "cm-1", PatchType::apply,
          json::object{
              {"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "cm-1"}}}, {"data", {{"a", "4"}}}},
          {.field_manager = "gpupool-test", .force = true});
  auto patched = c.get(kConfigMaps, "", "cm-1").at("data").as_object();
  CHECK(patched.at("m").as_string() == "1");
  CHECK(patched.at("s").as_string() == "2");
  CHECK(patched.at("j").as_string() == "3");
  CHECK(patched.at("a").as_string() == "4");

  c.create(kConfigMaps, "", config_map("dry"), {.dry_run = true});
  CHECK_THROWS_WITH_AS(c.get(kConfigMaps, "", "dry"), doctest::Contains("NotFound"), ApiError);
  c.remove(kConfigMaps, "", "cm-2", {.propagation = gpupool::PropagationPolicy::foreground});
  CHECK_THROWS_AS(c.get(kConfigMaps, "", "cm-2"), ApiError);
}

TEST_CASE("Forbidden outside the kubeconfig's namespace says which namespace to use") {
  EmbeddedServer server(server_options({"alice", "bob"}));
  Client alice(config_for(server.kubeconfig("alice")), fast_retries());
  try {
    alice.list(kConfigMaps, "bob");
    FAIL("no error");
  } catch (const ApiError& e) {
    CHECK(e.code() == 403);
    CHECK(std::string(e.what()).find(
              "namespace \"bob\"; your kubeconfig's namespace is \"alice\": pass -n alice or omit --namespace") !=
          std::string::npos);
  }
}

TEST_CASE("discovery tells which MPIJob version is served") {
  for (std::string version : {"v1", "v2beta1"}) {
    EmbeddedServer server(server_options({"alice"}, version));
    Client c(config_for(server.kubeconfig("alice")), fast_retries());
    auto ref = c.find_resource("kubeflow.org", "MPIJob");
    REQUIRE(ref.has_value());
    CHECK(ref->version == version);
    CHECK(ref->resource == "mpijobs");
    CHECK(c.served_versions("").at(0) == "v1");
  }
}

TEST_CASE("watch delivers each event once across injected disconnects") {
  EmbeddedServer server(server_options({"alice"}));
  Client c(config_for(server.kubeconfig("alice")), fast_retries());
  const std::string start = c.list(kConfigMaps, "").resource_version;
  gpupool::FaultConfig faults;
  faults.rules["watch"].connection_reset = 0.5;
  server.set_faults(faults);
  std::mutex mu;
  std::vector<std::string> seen;
  gpupool::CancelToken cancel;
  std::thread watcher([&] {
    c.watch(
        kConfigMaps, "", {.resource_version = start},
        [&](const gpupool::WatchEvent& e) {
          std::lock_guard lock(mu);
          seen.push_back(e.type + " " + name_of(e.object));
          return seen.size() < 20;
        },
        cancel);
  });
  for (int i = 0; i < 10; ++i) c.create(kConfigMaps, "", config_map("w-" + std::to_string(i)));
  for (int i = 0; i < 10; ++i) c.remove(kConfigMaps, "", "w-" + std::to_string(i));
  watcher.join();
  std::multiset<std::string> got(seen.begin(), seen.end());
  CHECK(got.size() == 20);
  for (int i = 0; i < 10; ++i) {
    CHECK(got.count("ADDED w-" + std::to_string(i)) == 1);
    CHECK(got.count("DELETED w-" + std::to_string(i)) == 1);
  }
  CHECK(server.fault_counters().connection_reset > 0);
}

TEST_CASE("pod logs: a missing pod is NotFound") {
  EmbeddedServer server(server_options({"alice"}));
  Client c(config_for(server.kubeconfig("alice")), fast_retries());
  CHECK_THROWS_WITH_AS(c.logs("", "nope", {}, [](std::string_view) { return true; }), doctest::Contains("NotFound"),
                       ApiError);
}

TEST_CASE("pod log lines: tailLines and follow") {
  EmbeddedServer server(server_options({"alice"}, "v1", "seed"));
  Client c(config_for(server.kubeconfig("alice")), fast_retries());
  Client admin(config_for(server.admin_kubeconfig()), fast_retries());
  auto nodes = admin.list_all(ResourceRef{"", "v1", "nodes", "Node", false}, "");
  REQUIRE_FALSE(nodes.empty());
  json::object pod{{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"metadata", {{"name", "trainer"}}},
                   {"spec",
                    {{"nodeName", nodes.at(0).at("metadata").at("name")},
                     {"containers", json::array{json::object{{"name", "main"}, {"image", "busybox"}}}}}}};
  c.create(kPods, "", pod);
  server.advance(120s);
  std::vector<std::string> lines;
  c.logs("", "trainer", {.container = "main", .tail_lines = 2}, [&](std::string_view l) {
    lines.emplace_back(l);
    return true;
  });
  CHECK(lines.size() == 2);
  // follow: the stream stays open; the handler ends it after the first line.
  std::vector<std::string> followed;
  c.logs("", "trainer", {.container = "main", .follow = true, .tail_lines = 1}, [&](std::string_view l) {
    followed.emplace_back(l);
    return false;
  });
  REQUIRE(followed.size() == 1);
  CHECK(followed.at(0) == lines.back());
}

TEST_CASE("8 threads, idempotent creates under 20% faults: every object exactly once") {
  EmbeddedServer server(server_options({"alice"}));
  gpupool::FaultConfig faults;
  faults.rules["*"] = {
      .too_many_requests = 0.05, .internal_error = 0.05, .unavailable = 0.05, .connection_reset = 0.05};
  server.set_faults(faults);
  Client c(config_for(server.kubeconfig("alice")), fast_retries());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 15; ++i) {
        try {
          c.create_idempotent(kConfigMaps, "", config_map(fmt_name(t, i)));
        } catch (const gpupool::Error&) {
          ++failures;
        }
      }
    });
  for (auto& th : threads) th.join();
  server.set_faults({});
  CHECK(failures == 0);
  auto all = c.list_all(kConfigMaps, "", {.label_selector = "suite=kube-client-test"});
  std::set<std::string> names;
  for (const auto& o : all) names.insert(name_of(o));
  CHECK(all.size() == 120);
  CHECK(names.size() == 120);
  CHECK(server.fault_counters().total() > 0);
}

TEST_CASE("a server never reached fails at once; one that answered before is retried, with a warning per retry") {
  EmbeddedServer server(server_options({"alice"}));
  auto cfg = config_for(server.kubeconfig("alice"));
  std::vector<std::string> logs;
  std::mutex mu;
  int waits = 0;
  auto options = [&] {
    auto o = fast_retries(&logs, &mu);
    o.retry.max_retries = 3;
    o.retry.sleep = [&](std::chrono::milliseconds) { ++waits; };
    return o;
  };
  const std::string url = server.url();
  server.stop();  // the port is closed: connection refused

  SUBCASE("never reached: UnreachableError, no retry") {
    Client c(cfg, options());
    try {
      c.list(kConfigMaps, "alice");
      FAIL("listed against a closed port");
    } catch (const gpupool::UnreachableError& e) {
      CHECK(std::string(e.what()) ==
            "cannot reach " + url + ": connection refused (is the cluster up? check --context)");
    }
    CHECK(waits == 0);
    CHECK(logs.empty());
  }
  SUBCASE("no such host: UnreachableError naming it") {
    auto dns = cfg;
    dns.cluster.server = "https://no-such-host.invalid:6443";
    Client c(dns, options());
    CHECK_THROWS_WITH_AS(
        c.list(kConfigMaps, "alice"),
        "cannot reach https://no-such-host.invalid:6443: host name not found (is the cluster up? check --context)",
        gpupool::UnreachableError);
    CHECK(waits == 0);
  }
}

TEST_CASE("a server that answered and then went away is retried, one warning line per retry") {
  auto server = std::make_unique<EmbeddedServer>(server_options({"alice"}));
  auto cfg = config_for(server->kubeconfig("alice"));
  std::vector<std::string> logs;
  std::mutex mu;
  int waits = 0;
  auto o = fast_retries(&logs, &mu);
  o.retry.max_retries = 3;
  o.retry.sleep = [&](std::chrono::milliseconds) { ++waits; };
  std::vector<gpupool::LogLevel> levels;
  o.logger = [&](gpupool::LogLevel l, const std::string& m) {
    std::lock_guard lock(mu);
    if (l < gpupool::LogLevel::warning) return;  // the exchanges' debug lines
    levels.push_back(l);
    logs.push_back(m);
  };
  Client c(cfg, o);
  c.list(kConfigMaps, "alice");  // reached once
  server->stop();
  CHECK_THROWS_AS(c.list(kConfigMaps, "alice"), gpupool::UnreachableError);
  CHECK(waits == 3);
  REQUIRE(logs.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(levels[static_cast<std::size_t>(i)] == gpupool::LogLevel::warning);
    CHECK(logs[static_cast<std::size_t>(i)].rfind("retrying (" + std::to_string(i + 1) + "/3) in ", 0) == 0);
    CHECK(logs[static_cast<std::size_t>(i)].find("connection refused") != std::string::npos);
  }
}
