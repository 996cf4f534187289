// What a Client keeps between processes (ClientOptions::cache_dir): discovery documents, used and
// invalidated as kubectl's ~/.kube/cache/discovery, and the TLS session, resumed by the next Client.
#include <doctest/doctest.h>
#include <openssl/ssl.h>
#include <sys/stat.h>
#include <utime.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gpupool/client.hpp"
#include "gpupool/cluster.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/error.hpp"
#include "gpupool/kubeconfig.hpp"
#include "gpupool/submit_options.hpp"
#include "kube/discovery_cache.hpp"
#include "kube/temp_dir.hpp"

namespace json = boost::json;
namespace fs = std::filesystem;
using gpupool::Client;
using gpupool::EmbeddedServer;

namespace {

struct Logged {
  std::mutex mu;
  std::vector<std::string> lines;
  int count(const std::string& needle) {
    std::lock_guard lock(mu);
    return static_cast<int>(
        std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(needle) != l.npos; }));
  }
  void clear() {
    std::lock_guard lock(mu);
    lines.clear();
  }
  /// A connection to `server` whose debug lines (one per request) come here.
  gpupool::Cluster connect(const gpupool::EmbeddedServer& server) {
    gpupool::ConnectOptions co;
    co.kubeconfig = server.admin_kubeconfig();
    co.logger = [this](gpupool::LogLevel, const std::string& m) {
      std::lock_guard lock(mu);
      lines.push_back(m);
    };
    return gpupool::Cluster::connect(co);
  }
};

Client client_for(const std::string& kubeconfig, const std::string& cache, Logged& log) {
  gpupool::KubeConfigOptions ko;
  ko.path = kubeconfig;
  gpupool::ClientOptions o;
  o.retry.sleep = [](std::chrono::milliseconds) {};
  o.cache_dir = cache;
  o.logger = [&log](gpupool::LogLevel, const std::string& m) {
    std::lock_guard lock(log.mu);
    log.lines.push_back(m);
  };
  return Client(gpupool::load_kubeconfig(ko), std::move(o));
}

gpupool::EmbeddedOptions users(std::vector<std::string> names) {
  gpupool::EmbeddedOptions o;
  o.users = std::move(names);
  return o;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// The discovery cache's directory of `server` under `cache` (kubectl's ~/.kube/cache/discovery/<host_port>).
fs::path server_dir(const std::string& cache, const EmbeddedServer& server) {
  return fs::path(cache) / "discovery" / gpupool::kube::DiscoveryCache::server_directory_name(server.url());
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

}  // namespace

TEST_CASE("the cache directory is named after the server as kubectl names it") {
  using gpupool::kube::DiscoveryCache;
  CHECK(DiscoveryCache::server_directory_name("https://127.0.0.1:6443") == "127.0.0.1_6443");
  CHECK(DiscoveryCache::server_directory_name("https://api.example.org/k8s/clusters/c-1") ==
        "api.example.org_k8s_clusters_c_1");
  CHECK(DiscoveryCache::server_directory_name("http://[::1]:8080") == "___1__8080");
}

TEST_CASE("discovery is fetched once and then read from the cache by the next client") {
  EmbeddedServer server(users({"alice"}));
  gpupool::test::TempDir cache;
  Logged first, second;
  {
    Client c = client_for(server.kubeconfig("alice"), cache.path(), first);
    REQUIRE(c.find_resource("kubeflow.org", "MPIJob").has_value());
  }
  CHECK(first.count("GET /apis ->") == 1);
  CHECK(first.count("GET /apis/kubeflow.org/v1 ->") == 1);
  const fs::path dir = server_dir(cache.path(), server);
  CHECK(fs::exists(dir / "servergroups.json"));
  CHECK(fs::exists(dir / "kubeflow.org" / "v1" / "serverresources.json"));
  CHECK(mode_of(dir / "servergroups.json") == 0600);

  Client c = client_for(server.kubeconfig("alice"), cache.path(), second);
  auto ref = c.find_resource("kubeflow.org", "MPIJob");
  REQUIRE(ref.has_value());
  CHECK(ref->version == "v1");
  CHECK(second.count("GET /apis") == 0);  // neither the group list nor the group's resources
}

TEST_CASE("a lookup that misses in another process's documents looks again, live (kubectl's reset)") {
  EmbeddedServer server(users({"alice"}));
  gpupool::test::TempDir cache;
  Logged first, second;
  { REQUIRE(client_for(server.kubeconfig("alice"), cache.path(), first).find_resource("kubeflow.org", "MPIJob")); }
  const fs::path rs = server_dir(cache.path(), server) / "kubeflow.org" / "v1" / "serverresources.json";
  // A stale copy: the resources of kubeflow.org/v1 before the MPI operator was installed.
  json::object doc = json::parse(read(rs)).as_object();
  json::array kept;
  for (const auto& r : doc.at("resources").as_array())
    if (r.at("kind") != "MPIJob") kept.push_back(r);
  doc["resources"] = kept;
  write(rs, json::serialize(doc));

  Client c = client_for(server.kubeconfig("alice"), cache.path(), second);
  auto ref = c.find_resource("kubeflow.org", "MPIJob");
  REQUIRE(ref.has_value());  // found by the second, live look
  CHECK(second.count("GET /apis/kubeflow.org/v1 ->") == 1);
  CHECK_FALSE(c.refresh_discovery());  // everything used now was fetched by this client
}

TEST_CASE("documents older than six hours are not used") {
  EmbeddedServer server(users({"alice"}));
  gpupool::test::TempDir cache;
  Logged first, second;
  { REQUIRE(client_for(server.kubeconfig("alice"), cache.path(), first).find_resource("kubeflow.org", "MPIJob")); }
  const fs::path dir = server_dir(cache.path(), server);
  const std::time_t old = std::time(nullptr) - 6 * 3600 - 60;
  const utimbuf times{old, old};
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) REQUIRE(::utime(e.path().c_str(), &times) == 0);
  Client c = client_for(server.kubeconfig("alice"), cache.path(), second);
  REQUIRE(c.find_resource("kubeflow.org", "MPIJob").has_value());
  CHECK(second.count("GET /apis ->") == 1);
  CHECK(second.count("GET /apis/kubeflow.org/v1 ->") == 1);
}

TEST_CASE("a 404 for a type the cache said exists invalidates the cache") {
  EmbeddedServer server(users({"alice"}));
  gpupool::test::TempDir cache;
  Logged first, second;
  { REQUIRE(client_for(server.kubeconfig("alice"), cache.path(), first).find_resource("kubeflow.org", "MPIJob")); }
  const fs::path rs = server_dir(cache.path(), server) / "kubeflow.org" / "v1" / "serverresources.json";
  // A type that was removed since (its CRD deleted) but is still in the cached copy.
  json::object doc = json::parse(read(rs)).as_object();
  doc["resources"].as_array().push_back(
      json::object{{"name", "ghosts"}, {"kind", "Ghost"}, {"namespaced", true}, {"verbs", json::array{"get"}}});
  write(rs, json::serialize(doc));

  Client c = client_for(server.admin_kubeconfig(), cache.path(), second);
  auto ghost = c.find_resource("kubeflow.org", "Ghost");
  REQUIRE(ghost.has_value());  // the cache says so
  CHECK(second.count("GET /apis/kubeflow.org/v1 ->") == 0);
  try {
    c.get(*ghost, "default", "boo");
    FAIL("a removed type must be NotFound");
  } catch (const gpupool::ApiError& e) {
    CHECK(e.code() == 404);
  }
  CHECK_FALSE(c.find_resource("kubeflow.org", "Ghost").has_value());  // asked live after the 404
  CHECK(second.count("GET /apis/kubeflow.org/v1 ->") == 1);
}

TEST_CASE("the next client resumes the TLS session; another user has a session of its own") {
  EmbeddedServer server(users({"alice", "bob"}));
  gpupool::test::TempDir cache;
  Logged first, second, third, none;
  const gpupool::ResourceRef pods{"", "v1", "pods", "Pod", true};
  { client_for(server.cert_kubeconfig("alice"), cache.path(), first).list(pods, ""); }
  CHECK(first.count("(full handshake)") == 1);
  const fs::path tls = fs::path(cache.path()) / "tls";
  REQUIRE(fs::exists(tls));
  CHECK(mode_of(tls) == 0700);
  int files = 0;
  for (const auto& e : fs::directory_iterator(tls)) {
    ++files;
    CHECK(mode_of(e.path()) == 0600);  // it holds the resumption secret
  }
  CHECK(files == 1);

  fs::path alice_session;
  for (const auto& e : fs::directory_iterator(tls)) alice_session = e.path();
  const std::string written = read(alice_session);
  {
    // What is kept is what resuming needs: the session without the server's certificate, which
    // the process that made it verified and which a resumed handshake does not look at again.
    const auto* der = reinterpret_cast<const unsigned char*>(written.data());
    SSL_SESSION* s = d2i_SSL_SESSION(nullptr, &der, static_cast<long>(written.size()));
    REQUIRE(s != nullptr);
    CHECK(SSL_SESSION_is_resumable(s) == 1);
    CHECK(SSL_SESSION_get0_peer(s) == nullptr);
    SSL_SESSION_free(s);
  }
  { client_for(server.cert_kubeconfig("alice"), cache.path(), second).list(pods, ""); }
  CHECK(second.count("(resumed)") == 1);
  // A session that resumed is left on disk as it was (not rewritten by every command), and the
  // next process resumes it again.
  CHECK(read(alice_session) == written);
  Logged again;
  { client_for(server.cert_kubeconfig("alice"), cache.path(), again).list(pods, ""); }
  CHECK(again.count("(resumed)") == 1);
  CHECK(read(alice_session) == written);

  // bob's certificate is another identity: alice's session is not offered for it.
  { client_for(server.cert_kubeconfig("bob"), cache.path(), third).list(pods, ""); }
  CHECK(third.count("(full handshake)") == 1);
  files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tls)) ++files;
  CHECK(files == 2);

  // Without a cache directory nothing is kept and nothing is said about resumption.
  { client_for(server.cert_kubeconfig("alice"), "", none).list(pods, ""); }
  CHECK(none.count("new connection") == 1);
  CHECK(none.count("resumed") == 0);
}

TEST_CASE("a session the server refuses: the full handshake reads the CA and the client certificate then") {
  // With a session file, the CA and the client certificate are read only if the handshake is a
  // full one. Server b is given server a's session: it cannot resume it (its ticket keys are its
  // own), so the handshake verifies b's certificate against the kubeconfig's CA and sends alice's
  // certificate when b asks for it: the list is alice's (not anonymous), and b's session is kept.
  EmbeddedServer a(users({"alice"})), b(users({"alice"}));
  gpupool::test::TempDir cache;
  const gpupool::ResourceRef pods{"", "v1", "pods", "Pod", true};
  const fs::path tls = fs::path(cache.path()) / "tls";
  auto files = [&] {
    std::set<fs::path> out;
    for (const auto& e : fs::directory_iterator(tls)) out.insert(e.path());
    return out;
  };
  Logged first_a, first_b, refused, again;
  { client_for(a.cert_kubeconfig("alice"), cache.path(), first_a).list(pods, ""); }
  const auto only_a = files();
  REQUIRE(only_a.size() == 1);
  { client_for(b.cert_kubeconfig("alice"), cache.path(), first_b).list(pods, ""); }
  auto both = files();
  REQUIRE(both.size() == 2);
  both.erase(*only_a.begin());
  const fs::path b_file = *both.begin();
  fs::copy_file(*only_a.begin(), b_file, fs::copy_options::overwrite_existing);
  { client_for(b.cert_kubeconfig("alice"), cache.path(), refused).list(pods, ""); }
  CHECK(refused.count("(full handshake)") == 1);
  CHECK(read(b_file) != read(*only_a.begin()));  // b's own session written
  { client_for(b.cert_kubeconfig("alice"), cache.path(), again).list(pods, ""); }
  CHECK(again.count("(resumed)") == 1);
}

TEST_CASE("a key that fits no certificate, found out by a full handshake after a kept session: no retries") {
  // As above, server b cannot resume a's session, so alice's certificate and key are read for the
  // full handshake; the key here is bob's. That is the user's configuration, which no retry mends:
  // ConfigError at once (kubectl: "tls: private key does not match public key"), not ten retries.
  EmbeddedServer a(users({"alice", "bob"})), b(users({"alice", "bob"}));
  gpupool::test::TempDir cache;
  const gpupool::ResourceRef pods{"", "v1", "pods", "Pod", true};
  const fs::path tls = fs::path(cache.path()) / "tls";
  Logged first_a, first_b;
  { client_for(a.cert_kubeconfig("alice"), cache.path(), first_a).list(pods, ""); }
  std::set<fs::path> only_a;
  for (const auto& e : fs::directory_iterator(tls)) only_a.insert(e.path());
  REQUIRE(only_a.size() == 1);
  { client_for(b.cert_kubeconfig("alice"), cache.path(), first_b).list(pods, ""); }
  fs::path b_file;
  for (const auto& e : fs::directory_iterator(tls))
    if (!only_a.count(e.path())) b_file = e.path();
  REQUIRE(!b_file.empty());
  fs::copy_file(*only_a.begin(), b_file, fs::copy_options::overwrite_existing);

  gpupool::KubeConfigOptions ko;
  ko.path = b.cert_kubeconfig("alice");
  gpupool::KubeConfig cfg = gpupool::load_kubeconfig(ko);
  ko.path = b.cert_kubeconfig("bob");
  cfg.user.client_key_pem = gpupool::load_kubeconfig(ko).user.client_key_pem;
  Logged log;
  int pauses = 0;
  gpupool::ClientOptions o;
  o.retry.sleep = [&pauses](std::chrono::milliseconds) { ++pauses; };
  o.cache_dir = cache.path();
  o.logger = [&log](gpupool::LogLevel, const std::string& m) {
    std::lock_guard lock(log.mu);
    log.lines.push_back(m);
  };
  Client wrong(cfg, std::move(o));
  CHECK_THROWS_WITH_AS(wrong.list(pods, ""), doctest::Contains("client certificate or key cannot be loaded"),
                       gpupool::ConfigError);
  CHECK(pauses == 0);
  CHECK(log.count("retrying") == 0);
}

TEST_CASE("a CRD removed since the cache was written: list and get skip its kind, the cache is refreshed") {
  EmbeddedServer server;
  gpupool::test::TempDir cache;
  auto connect = [&] {
    gpupool::ConnectOptions co;
    co.kubeconfig = server.admin_kubeconfig();
    co.cache_dir = cache.path();
    return gpupool::Cluster::connect(co);
  };
  {
    gpupool::Cluster first = connect();
    CHECK(first.list().empty());  // every kind's group is now in the cache, TrainJob's included
  }
  REQUIRE(fs::exists(server_dir(cache.path(), server) / "trainer.kubeflow.org"));
  // The cluster without Kubeflow Trainer now (kubectl, a real client); kube-apiserver answers a
  // list of a type it no longer serves with Go's "404 page not found" page.
  const std::string kubectl = "kubectl --kubeconfig '" + server.admin_kubeconfig() + "' ";
  REQUIRE(std::system((kubectl + "delete crd trainjobs.trainer.kubeflow.org >/dev/null").c_str()) == 0);
  gpupool::Cluster second = connect();
  CHECK(second.list().empty());  // not an error: TrainJob is not served any more
  CHECK(second.list_all_namespaces().empty());
  CHECK_THROWS_AS(second.get("nothing"), gpupool::Error);  // not found, not a 404 of the type
  // The next process reads a refreshed cache: the group's other types, no TrainJob.
  const std::string resources =
      read(server_dir(cache.path(), server) / "trainer.kubeflow.org" / "v1alpha1" / "serverresources.json");
  CHECK(resources.find("\"trainingruntimes\"") != std::string::npos);
  CHECK(resources.find("\"trainjobs\"") == std::string::npos);
}

namespace {

/// (GET requests, round trips) among the log's request lines: a round trip is a request sent
/// alone or the first of a pipelined batch.
std::pair<int, int> get_round_trips(Logged& log, std::vector<std::string>* node_reads = nullptr) {
  int requests = 0, round_trips = 0;
  std::lock_guard lock(log.mu);
  for (const auto& l : log.lines) {
    if (l.rfind("GET ", 0) != 0 || l.find(" -> ") == std::string::npos) continue;
    ++requests;
    if (node_reads && l.rfind("GET /api/v1/nodes/", 0) == 0) node_reads->push_back(l);
    const auto p = l.find("pipelined ");
    if (p == std::string::npos || l.compare(p, 12, "pipelined 1/") == 0) ++round_trips;
  }
  return {requests, round_trips};
}

}  // namespace

TEST_CASE("get: the job's name, pods and TensorBoard services in one round trip, nodes only for pods not started") {
  gpupool::EmbeddedOptions eo;
  eo.topology = "seed";
  eo.manual_clock = true;
  EmbeddedServer server(eo);
  Logged log;
  gpupool::Cluster cluster = log.connect(server);
  gpupool::SubmitOptions o;
  o.kind = "mpi";
  o.name = "rt";
  o.image = "busybox";
  o.gpus = 1;
  o.workers = 3;
  o.command = "sleep 100";
  cluster.submit(gpupool::to_workload(o));

  // Pods whose kubelet has not reported yet have no status.hostIP: their nodes are read, all of
  // them in one more round trip. (The embedded kubelet reports at once, so the reports are
  // taken back here, with kubectl.)
  const std::string kubectl = "kubectl --kubeconfig '" + server.admin_kubeconfig() + "' ";
  for (const auto& p : cluster.client().list_all({"", "v1", "pods", "Pod", true}, "default")) {
    const std::string name(p.as_object().at("metadata").as_object().at("name").as_string());
    REQUIRE(std::system((kubectl + "patch pod " + name +
                         " --subresource=status --type=merge -p '{\"status\":{\"hostIP\":null,\"hostIPs\":null}}'"
                         " >/dev/null")
                            .c_str()) == 0);
  }
  log.clear();
  gpupool::JobInfo info = cluster.get("rt");
  REQUIRE(info.instances.size() == 4);
  std::set<std::string> nodes;
  for (const auto& i : info.instances) nodes.insert(i.node);
  REQUIRE(nodes.size() >= 2);  // one GET per node would show as more round trips
  for (const auto& i : info.instances) CHECK(i.node_ip.rfind("192.168.", 0) == 0);
  std::vector<std::string> node_reads;
  auto [requests, round_trips] = get_round_trips(log, &node_reads);
  CHECK(node_reads.size() == nodes.size());
  CHECK(requests >= 8 + 2 + 2);  // the kinds, the pods and services, the nodes
  CHECK(round_trips == 2);

  // Reported: each pod carries its node's IP (status.hostIP, the node's InternalIP), so get
  // reads no node at all: one round trip, the same IPs.
  server.advance(std::chrono::seconds(5));
  std::map<std::string, std::string> before;
  for (const auto& i : info.instances) before[i.name] = i.node_ip;
  log.clear();
  info = cluster.get("rt");
  REQUIRE(info.instances.size() == 4);
  for (const auto& i : info.instances) {
    CHECK(i.phase == "Running");
    CHECK(i.node_ip == before[i.name]);
  }
  node_reads.clear();
  std::tie(requests, round_trips) = get_round_trips(log, &node_reads);
  CHECK(node_reads.empty());
  CHECK(round_trips == 1);
}

TEST_CASE("submit: the name's reads and the pods' dry runs in one round trip, the create in one more") {
  gpupool::EmbeddedOptions eo;
  eo.topology = "seed";
  EmbeddedServer server(eo);
  Logged log;
  gpupool::Cluster cluster = log.connect(server);
  CHECK(cluster.list().empty());  // connected, discovery read
  gpupool::SubmitOptions o;
  o.kind = "tf";  // two pod templates (PS and Worker): two dry runs
  o.name = "rt2";
  o.image = "busybox";
  o.gpus = 1;
  o.workers = 2;
  o.ps = 1;
  o.command = "sleep 100";
  log.clear();
  cluster.submit(gpupool::to_workload(o));
  int round_trips = 0, dry_runs = 0, creates = 0;
  {
    std::lock_guard lock(log.mu);
    for (const auto& l : log.lines) {
      if (l.find(" -> ") == std::string::npos || (l.rfind("GET ", 0) != 0 && l.rfind("POST ", 0) != 0)) continue;
      if (l.find("dryRun=All") != std::string::npos) {
        ++dry_runs;
        CHECK(l.find("pipelined") != std::string::npos);  // with the name's reads
      } else if (l.rfind("POST ", 0) == 0) {
        ++creates;
      }
      const auto p = l.find("pipelined ");
      if (p == std::string::npos || l.compare(p, 12, "pipelined 1/") == 0) ++round_trips;
    }
  }
  CHECK(dry_runs == 2);
  CHECK(creates == 1);
  // The kinds, the dry runs and the quotas (three pods are charged together), then the create.
  CHECK(round_trips == 2);
  // A refusal of the dry run is still worded by the pre-flight, and nothing is created.
  const std::string kubectl = "kubectl --kubeconfig '" + server.admin_kubeconfig() + "' ";
  REQUIRE(std::system((kubectl + "create quota tiny --hard=pods=1 >/dev/null").c_str()) == 0);
  o.name = "rt3";
  try {
    cluster.submit(gpupool::to_workload(o));
    FAIL("the quota did not refuse the job");
  } catch (const gpupool::ApiError& e) {
    CHECK(std::string(e.what()).find("namespace \"default\" would refuse this job's pods, so nothing was created") !=
          std::string::npos);
  }
  CHECK(cluster.list().size() == 1);
}
