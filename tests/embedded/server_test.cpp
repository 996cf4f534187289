// The embedded server driven by the real clients: /usr/bin/kubectl and the official Python client.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "common/base64.hpp"
#include "embedded/http_server.hpp"
#include "embedded/server_store.hpp"
#include "embedded/tls.hpp"
#include "gpupool/embedded.hpp"
#include "shell_run.hpp"

using namespace gpupool;
using namespace gpupool::embedded;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

using Run = testing::ShellRun;
Run run(const std::string& cmd, const std::string& scratch) { return testing::shell_run(cmd, scratch); }

std::vector<std::vector<std::string>> table_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream ls(line);
    std::string c;
    while (ls >> c) cells.push_back(c);
    if (!cells.empty()) rows.push_back(cells);
  }
  return rows;
}

struct Cluster {
  EmbeddedServer server;
  std::string cache;
  explicit Cluster(std::string topology = "seed") : server(options(std::move(topology))) {
    cache = server.kubeconfig_dir() + "/kubectl-cache";
  }
  static EmbeddedOptions options(std::string topology) {
    EmbeddedOptions o;
    o.users = {"alice", "bob"};
    o.topology = std::move(topology);
    return o;
  }
  Run kubectl(const std::string& who, const std::string& args) {
    const std::string kc = who == "admin" ? server.admin_kubeconfig() : server.kubeconfig(who);
    return run("/usr/bin/kubectl --kubeconfig " + kc + " --cache-dir " + cache + " " + args, server.kubeconfig_dir());
  }
  const ResourceType& type(const char* g, const char* r) { return store_of(server).type(g, r); }
};

const char* kMaster = "cn-beijing.192.168.3.225";
const char* kWorker = "cn-beijing.192.168.3.228";

}  // namespace

TEST_CASE("kubectl get nodes prints the seed's columns") {
  Cluster c;
  auto r = c.kubectl("admin", "get nodes");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  auto rows = table_rows(r.out);
  REQUIRE(rows.size() == 7);
  CHECK(rows[0] == std::vector<std::string>{"NAME", "STATUS", "ROLES", "AGE", "VERSION"});
  CHECK(rows[1][0] == kMaster);
  CHECK(rows[1][1] == "Ready");
  CHECK(rows[1][2] == "master");
  CHECK(rows[4][0] == kWorker);
  CHECK(rows[4][2] == "<none>");
  // Ages come from the cluster clock: advancing it ages every node.
  const std::string before = rows[4][3];
  c.server.advance(std::chrono::hours(24 * 3));
  auto later = table_rows(c.kubectl("admin", "get nodes").out);
  CHECK(later[4][3] != before);
  auto wide = table_rows(c.kubectl("admin", "get nodes -o wide").out);
  CHECK(wide[0][5] == "INTERNAL-IP");
  CHECK(wide[4][5] == "192.168.3.228");
  // Users may read nodes too.
  CHECK(c.kubectl("alice", "get nodes").code == 0);
}

TEST_CASE("a topology's RuntimeClass is there at start; a pod naming it gets its scheduling") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gpupool-rtc-topology-" + std::to_string(::getpid()) + ".yaml"))
          .string();
  std::ofstream(path) << "nodes: [{name: gpu-1, internalIP: 10.0.0.1, labels: {nvidia.com/gpu.present: \"true\"},\n"
                         "         capacity: {cpu: \"8\", memory: 16Gi, pods: \"110\", nvidia.com/gpu: \"1\"},\n"
                         "         taints: [\"nvidia.com/gpu=present:NoSchedule\"]}]\n"
                         "runtimeClasses:\n"
                         "  - {name: nvidia, nodeSelector: {nvidia.com/gpu.present: \"true\"},\n"
                         "     tolerations: [\"nvidia.com/gpu:NoSchedule\"]}\n";
  Cluster c(path);
  std::filesystem::remove(path);
  auto get = c.kubectl("admin", "get runtimeclass nvidia -o jsonpath={.handler}");
  REQUIRE_MESSAGE(get.code == 0, get.err);
  CHECK(get.out == "nvidia");
  // Placed on the tainted GPU node by the class's toleration and node selector alone.
  auto run = c.kubectl("admin",
                       "run p --image=busybox --restart=Never --overrides="
                       "'{\"spec\":{\"runtimeClassName\":\"nvidia\"}}'");
  REQUIRE_MESSAGE(run.code == 0, run.err);
  auto placed = c.kubectl("admin", "get pod p -o jsonpath='{.spec.nodeSelector} {.spec.nodeName}'");
  REQUIRE_MESSAGE(placed.code == 0, placed.err);
  CHECK(placed.out == R"({"nvidia.com/gpu.present":"true"} gpu-1)");
}

TEST_CASE("a topology's refused RuntimeClass stops the start with one error naming it, nothing seeded") {
  const auto dir = std::filesystem::temp_directory_path() / ("gpupool-rtc-bad-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "topology.yaml").string();
  // Validation refuses the duplicate toleration (scheduling.tolerations[1]: Duplicate value).
  std::ofstream(path) << "nodes: [{name: gpu-1, internalIP: 10.0.0.1, capacity: {cpu: \"8\", memory: 16Gi}}]\n"
                         "runtimeClasses:\n"
                         "  - {name: nvidia, tolerations: [\"a=b:NoSchedule\", \"a=b:NoSchedule\"]}\n";
  EmbeddedOptions o = Cluster::options(path);
  o.state_file = (dir / "state.json").string();
  try {
    EmbeddedServer server(o);
    FAIL("the server started");
  } catch (const ConfigError& e) {
    CHECK(e.key() == "runtimeClasses[0]");
    CHECK(std::string(e.what()).find("Duplicate value") != std::string::npos);
  }
  // The state journaled nothing of the topology: a start with a good one seeds it whole.
  std::ofstream(path) << "nodes: [{name: gpu-1, internalIP: 10.0.0.1, capacity: {cpu: \"8\", memory: 16Gi}}]\n"
                         "runtimeClasses: [{name: nvidia}]\n";
  {
    EmbeddedServer server(o);
    auto& store = store_of(server);
    CHECK(store.find(store.type("", "nodes"), "", "gpu-1"));
    CHECK(store.find(store.type("node.k8s.io", "runtimeclasses"), "", "nvidia"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("kubectl get -o json: the stored objects, whole and in chunks (lists served from cached encodings)") {
  Cluster c;
  auto& store = store_of(c.server);
  const auto& cms = c.type("", "configmaps");
  for (const char* ns : {"alice", "bob"})
    for (int i = 0; i < 3; ++i)
      store.create(cms, ns,
                   json::object{{"metadata", json::object{{"name", "cm" + std::to_string(i)}}},
                                {"data", json::object{{"k", std::string(ns) + std::to_string(i)}}}});
  store.mutate(cms, "bob", "cm1", [](json::object& o) { o["data"].as_object()["k"] = "changed"; });
  // kubectl adds kind and apiVersion back to each item and leaves managedFields out (unless
  // --show-managed-fields); otherwise each item is the stored object.
  auto expected = [&](const ResourceType& t) {
    json::array out;
    for (const auto& o : store.list(t, "").items) {
      json::object item = *o;
      item["metadata"].as_object().erase("managedFields");
      out.push_back(std::move(item));
    }
    return out;
  };
  for (const char* args : {"get configmaps -A -o json", "get configmaps -A -o json --chunk-size=2"}) {
    CAPTURE(args);
    auto r = c.kubectl("admin", args);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(json::parse(r.out).as_object().at("items").as_array() == expected(cms));
  }
  auto r = c.kubectl("admin", "get nodes -o json --chunk-size=1");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto nodes = json::parse(r.out).as_object().at("items").as_array();
  CHECK(nodes.size() == 6);
  CHECK(nodes == expected(c.type("", "nodes")));
  r = c.kubectl("admin", "get configmap -n bob cm1 -o jsonpath={.data.k}");
  CHECK(r.out == "changed");
}

TEST_CASE("a write is answered before the controllers react to it; the next request sees what they did") {
  // kube-apiserver answers a create before its controllers see it; the embedded server runs them
  // once the answer is out (Store::DeferDispatch), and holds the next request back until they are
  // done (Store::settle). The deployment controller is held here until kubectl has its answer: a
  // server that ran the controllers first would wait out the bound below and then answer.
  Cluster c;
  Store& store = store_of(c.server);
  std::mutex mu;
  std::condition_variable cv;
  bool answered = false;
  std::optional<bool> answered_first;
  const auto id = store.subscribe([&](const WatchEvent& e) {
    if (e.type != EventType::Added || e.type_info->resource != "deployments") return;
    std::unique_lock lk(mu);
    cv.wait_for(lk, 10s, [&] { return answered; });
    answered_first = answered;
  });
  auto r = c.kubectl("admin", "create deployment probe --image=busybox");
  {
    std::lock_guard lk(mu);
    answered = true;
  }
  cv.notify_all();
  REQUIRE_MESSAGE(r.code == 0, r.err);
  r = c.kubectl("admin", "get pods -l app=probe -o name");
  CHECK(r.out.rfind("pod/probe-", 0) == 0);
  store.unsubscribe(id);
  std::lock_guard lk(mu);
  REQUIRE(answered_first.has_value());
  CHECK(*answered_first);
}

TEST_CASE("kubectl taint, label and cordon change the node; only the admin may") {
  Cluster c;
  const auto& nodes = c.type("", "nodes");
  auto taints = [&] {
    auto n = store_of(c.server).get(nodes, "", kWorker);
    const auto* t = n.at("spec").as_object().if_contains("taints");
    return t ? json::serialize(*t) : std::string("none");
  };
  auto r = c.kubectl("admin", std::string("taint nodes ") + kWorker + " gpu_node=invalid:NoSchedule");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out == std::string("node/") + kWorker + " tainted\n");
  CHECK(taints() == R"([{"effect":"NoSchedule","key":"gpu_node","value":"invalid"}])");
  // Adding an existing key+effect again is refused by kubectl itself; overwrite replaces.
  r = c.kubectl("admin", std::string("taint nodes ") + kWorker + " gpu_node=other:NoSchedule --overwrite");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(taints() == R"([{"effect":"NoSchedule","key":"gpu_node","value":"other"}])");
  r = c.kubectl("admin", std::string("taint nodes ") + kWorker + " ssd_node=invalid:NoSchedule");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  r = c.kubectl("admin", std::string("taint nodes ") + kWorker + " gpu_node:NoSchedule-");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out == std::string("node/") + kWorker + " untainted\n");
  CHECK(taints() == R"([{"effect":"NoSchedule","key":"ssd_node","value":"invalid"}])");

  r = c.kubectl("admin", std::string("label nodes ") + kWorker + " disktype=ssd");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  auto rows = table_rows(c.kubectl("admin", "get nodes -l disktype=ssd").out);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1][0] == kWorker);

  r = c.kubectl("admin", std::string("cordon ") + kWorker);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  rows = table_rows(c.kubectl("admin", std::string("get node ") + kWorker).out);
  CHECK(rows[1][1] == "Ready,SchedulingDisabled");
  CHECK(store_of(c.server).get(nodes, "", kWorker).at("spec").at("unschedulable") == true);

  r = c.kubectl("alice", std::string("taint nodes ") + kWorker + " x=y:NoSchedule");
  CHECK(r.code != 0);
  CHECK(r.err == std::string("Error from server (Forbidden): nodes \"") + kWorker +
                     "\" is forbidden: User \"alice\" cannot patch resource \"nodes\" in API group \"\" at the cluster "
                     "scope\n");
}

TEST_CASE("kubectl apply of a guide-style Deployment with PVC, NFS and hostPath volumes; get pods -o wide; delete") {
  Cluster c("iiis");
  const std::string manifest = std::string(GPUPOOL_SOURCE_DIR) + "/tests/embedded/data/guide-deployment.yaml";
  auto r = c.kubectl("alice", "apply -f " + manifest);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out == "persistentvolumeclaim/results-pvc created\ndeployment.apps/tf-train created\n");
  const auto& deploys = c.type("apps", "deployments");
  auto d = store_of(c.server).get(deploys, "alice", "tf-train");
  const auto& vols = d.at("spec").at("template").at("spec").at("volumes").as_array();
  REQUIRE(vols.size() == 4);
  CHECK(vols[1].at("nfs").at("server") == "10.1.0.20");
  CHECK(vols[2].at("hostPath").at("path") == "/data");
  CHECK(d.at("metadata").at("annotations").as_object().contains("kubectl.kubernetes.io/last-applied-configuration"));
  // Applied again: the GPU count is the YAML integer 1, stored as the quantity "1", so kubectl's
  // three-way diff sends a patch and says "configured" (kube-apiserver v1.32.13 answers the same).
  r = c.kubectl("alice", "apply -f " + manifest);
  CHECK(r.out == "persistentvolumeclaim/results-pvc unchanged\ndeployment.apps/tf-train configured\n");

  // The controllers made two pods, the scheduler bound them to GPU nodes, the kubelet starts them
  // once the clock moves.
  c.server.advance(30s);
  r = c.kubectl("alice", "get pods -o wide");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  auto rows = table_rows(r.out);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0] == std::vector<std::string>{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED",
                                            "NODE", "READINESS", "GATES"});
  const auto& nodes = c.type("", "nodes");
  for (std::size_t i = 1; i < rows.size(); ++i) {
    CAPTURE(r.out);
    CHECK(rows[i][0].rfind("tf-train-", 0) == 0);
    CHECK(rows[i][1] == "1/1");
    CHECK(rows[i][2] == "Running");
    CHECK(rows[i][4] == "30s");
    CHECK(store_of(c.server).find(nodes, "", rows[i][6]));  // NODE is a node of the cluster
  }
  const auto& pods = c.type("", "pods");
  // kubectl logs goes through pods/log to the simulated kubelet.
  r = c.kubectl("alice", "logs " + rows[1][0]);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(!r.out.empty());
  r = c.kubectl("alice", "logs " + rows[1][0] + " -c nope");
  CHECK(r.code == 1);

  r = c.kubectl("alice", "delete deployment tf-train");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out == "deployment.apps \"tf-train\" deleted\n");
  CHECK(!store_of(c.server).find(deploys, "alice", "tf-train"));
  CHECK(store_of(c.server).list(pods, "alice").items.empty());  // garbage-collected with their ReplicaSet
  r = c.kubectl("alice", "get deployment tf-train");
  CHECK(r.code == 1);
  CHECK(r.err == "Error from server (NotFound): deployments.apps \"tf-train\" not found\n");
}

TEST_CASE("a user is confined to its own namespace, with the real Forbidden message") {
  Cluster c;
  struct Row {
    std::string who, args, err;
  };
  const Row rows[] = {
      {"alice", "get pods -n bob",
       "Error from server (Forbidden): pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group "
       "\"\" "
       "in the namespace \"bob\"\n"},
      {"bob", "get deployments -n alice",
       "Error from server (Forbidden): deployments.apps is forbidden: User \"bob\" cannot list resource "
       "\"deployments\" "
       "in API group \"apps\" in the namespace \"alice\"\n"},
      {"alice", "get pods -A",
       "Error from server (Forbidden): pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group "
       "\"\" "
       "at the cluster scope\n"},
      {"alice", "delete node cn-beijing.192.168.3.230",
       "Error from server (Forbidden): nodes \"cn-beijing.192.168.3.230\" is forbidden: User \"alice\" cannot delete "
       "resource \"nodes\" in API group \"\" at the cluster scope\n"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.args);
    auto res = c.kubectl(r.who, r.args);
    CHECK(res.code == 1);
    CHECK(res.err == r.err);
  }
  CHECK(c.kubectl("alice", "get pods").err == "No resources found in alice namespace.\n");
  // The client-certificate kubeconfig authenticates as the same user.
  auto cert = run("/usr/bin/kubectl --kubeconfig " + c.server.cert_kubeconfig("bob") + " --cache-dir " + c.cache +
                      " get pods -n alice",
                  c.server.kubeconfig_dir());
  CHECK(cert.err.find("User \"bob\" cannot list resource \"pods\"") != std::string::npos);
  // A wrong token is Unauthorized.
  std::ifstream in(c.server.kubeconfig("alice"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const auto pos = text.find("token: ");
  REQUIRE(pos != std::string::npos);
  text.replace(pos + 7, 8, "deadbeef");
  const std::string bad = c.server.kubeconfig_dir() + "/bad.kubeconfig";
  std::ofstream(bad) << text;
  auto unauth =
      run("/usr/bin/kubectl --kubeconfig " + bad + " --cache-dir " + c.cache + " get pods", c.server.kubeconfig_dir());
  CHECK(unauth.code == 1);
  CHECK(unauth.err.find("Unauthorized") != std::string::npos);
}

TEST_CASE("the official Python client lists, creates, patches and watches") {
  Cluster c;
  const std::string script = std::string(GPUPOOL_SOURCE_DIR) + "/tests/embedded/python_client_check.py";
  auto r = run("/usr/bin/python3 " + script + " " + c.server.kubeconfig("alice") + " alice", c.server.kubeconfig_dir());
  REQUIRE_MESSAGE(r.code == 0, r.err);
  std::string expected_nodes;
  for (int i = 225; i <= 230; ++i)
    expected_nodes += (i > 225 ? "," : "") + std::string("cn-beijing.192.168.3.") + std::to_string(i);
  CHECK(r.out == "nodes: " + expected_nodes +
                     "\n"
                     "created: py-pod alice True\n"
                     "patched: patched py\n"
                     "listed: py-pod\n"
                     "watched: ADDED py-pod-2;DELETED py-pod\n"
                     "scaled: 4\n"
                     "conflict: 409 Conflict .data.a | Apply failed with 1 conflict: conflict with \"py-editor\" using "
                     "v1: .data.a\n"
                     "forced: 1 py-applier/Apply\n"
                     "forbidden: 403 Forbidden\n"
                     "notfound: 404\n");
  const auto& deploys = c.type("apps", "deployments");
  CHECK(store_of(c.server).get(deploys, "alice", "py-deploy").at("spec").at("replicas") == 4);
}

namespace {

struct Http {
  long status = 0;
  std::string body, headers;
  bool answered = false;  ///< a whole HTTP response arrived
};

// A client SSL_CTX that trusts only the CA of `ca_pem` and verifies the server.
SSL_CTX* client_context(const std::string& ca_pem) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), cert);
    X509_free(cert);
  }
  ERR_clear_error();
  BIO_free(bio);
  return ctx;
}

// A TLS connection to the server trusting only the cluster's CA: a bare OpenSSL client, since
// this layer's tests do not link the kube layer's transport. `connected`: the handshake passed.
struct TlsConn {
  int fd = -1;
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  bool connected = false;
  explicit TlsConn(const EmbeddedServer& s) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(s.port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    const timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ctx = client_context(s.ca_pem());
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1");
    connected = SSL_connect(ssl) == 1;
  }
  ~TlsConn() {
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    ::close(fd);
  }
  TlsConn(const TlsConn&) = delete;
  TlsConn& operator=(const TlsConn&) = delete;
  /// Writes `data` in one SSL_write, then reads until the server closes: what each SSL_read
  /// gave, in order (a TLS record at most each).
  std::vector<std::string> exchange(const std::string& data) {
    std::vector<std::string> reads;
    if (!connected || SSL_write(ssl, data.data(), static_cast<int>(data.size())) <= 0) return reads;
    char buf[16384];
    int n;
    while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) reads.emplace_back(buf, static_cast<std::size_t>(n));
    return reads;
  }
};

// One HTTPS request on a connection of its own (Connection: close).
Http https(const EmbeddedServer& s, const std::string& token, const std::string& method, const std::string& path,
           const std::string& body = "") {
  Http h;
  const std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                          "Authorization: Bearer " + token + "\r\nContent-Type: application/json\r\n" +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string in;
  for (const auto& piece : TlsConn(s).exchange(req)) in += piece;
  const auto head_end = in.find("\r\n\r\n");
  if (in.rfind("HTTP/1.1 ", 0) != 0 || head_end == std::string::npos) return h;
  h.status = std::stol(in.substr(9, 3));
  h.headers = in.substr(0, head_end + 2);
  std::string rest = in.substr(head_end + 4);
  if (h.headers.find("Transfer-Encoding: chunked") != std::string::npos) {
    for (std::size_t p = 0; p < rest.size();) {  // size CRLF data CRLF ... 0 CRLF CRLF
      const auto e = rest.find("\r\n", p);
      if (e == std::string::npos) return h;
      const std::size_t len = std::stoul(rest.substr(p, e - p), nullptr, 16);
      if (len == 0) break;
      h.body += rest.substr(e + 2, len);
      p = e + 2 + len + 2;
    }
  } else {
    const auto cl = h.headers.find("Content-Length: ");
    if (cl == std::string::npos) return h;
    const std::size_t want = std::stoul(h.headers.substr(cl + 16));
    if (rest.size() < want) return h;
    h.body = rest.substr(0, want);
  }
  h.answered = true;
  return h;
}

// Several requests written at once on one connection (one TLS record), the last with
// Connection: close; returns what each SSL_read gave, in order (a TLS record at most each).
std::vector<std::string> pipelined_reads(const EmbeddedServer& s, const std::string& token,
                                         const std::vector<std::pair<std::string, std::string>>& requests) {
  std::string all;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& [method, path] = requests[i];
    const std::string body = method == "POST" ? R"({"metadata":{"name":"piped"},"data":{"a":"b"}})" : "";
    all += method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
           (i + 1 == requests.size() ? "Connection: close\r\n" : "") + "\r\n" + body;
  }
  return TlsConn(s).exchange(all);
}

// The status codes of the responses in `text`, in order.
std::vector<int> statuses_in(const std::string& text) {
  std::vector<int> out;
  for (auto p = text.find("HTTP/1.1 "); p != std::string::npos; p = text.find("HTTP/1.1 ", p + 1))
    out.push_back(std::stoi(text.substr(p + 9, 3)));
  return out;
}

std::string token_of(const std::string& kubeconfig) {
  std::ifstream in(kubeconfig);
  std::string line;
  while (std::getline(in, line))
    if (auto p = line.find("token: "); p != std::string::npos) return line.substr(p + 7);
  return {};
}

}  // namespace

TEST_CASE("fault injection over HTTPS: 429 with Retry-After, 500, 503, resets, per verb, counted") {
  Cluster c;
  const std::string tok = token_of(c.server.kubeconfig("alice"));
  REQUIRE(!tok.empty());
  auto ok = https(c.server, tok, "GET", "/api/v1/namespaces/alice/pods");
  REQUIRE(ok.answered);
  CHECK(ok.status == 200);
  struct Row {
    FaultRule rule;
    long status;
    std::string reason;
  };
  const Row rows[] = {
      {FaultRule{.too_many_requests = 1.0, .retry_after_seconds = 7}, 429, "TooManyRequests"},
      {FaultRule{.internal_error = 1.0}, 500, "InternalError"},
      {FaultRule{.unavailable = 1.0}, 503, "ServiceUnavailable"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.reason);
    FaultConfig fc;
    fc.rules["list"] = r.rule;
    c.server.set_faults(fc);
    auto h = https(c.server, tok, "GET", "/api/v1/namespaces/alice/pods");
    REQUIRE(h.answered);
    CHECK(h.status == r.status);
    CHECK(json::parse(h.body).at("reason") == json::value(r.reason));
    if (r.status == 429) CHECK(h.headers.find("Retry-After: 7") != std::string::npos);
    // Other verbs are untouched.
    CHECK(https(c.server, tok, "GET", "/api/v1/nodes/cn-beijing.192.168.3.228").status == 200);
  }
  FaultConfig reset;
  reset.rules["create"] = FaultRule{.connection_reset = 1.0};
  c.server.set_faults(reset);
  auto h = https(c.server, tok, "POST", "/api/v1/namespaces/alice/configmaps", R"({"metadata":{"name":"cm"}})");
  CHECK(!h.answered);  // the connection was reset: no response at all
  CHECK(!store_of(c.server).find(c.type("", "configmaps"), "alice", "cm"));
  const auto counts = c.server.fault_counters();
  CHECK(counts.too_many_requests == 1);
  CHECK(counts.internal_error == 1);
  CHECK(counts.unavailable == 1);
  CHECK(counts.connection_reset == 1);
  c.server.set_faults({});
  auto kubectl = c.kubectl("alice", "get pods");
  CHECK(kubectl.code == 0);
}

TEST_CASE("the server stops cleanly with watches open, and its kubeconfigs are private") {
  auto server = std::make_unique<EmbeddedServer>(Cluster::options("seed"));
  const auto kc = server->kubeconfig("alice");
  struct stat st {};
  REQUIRE(::stat(kc.c_str(), &st) == 0);
  CHECK((st.st_mode & 077) == 0);
  const std::string dir = server->kubeconfig_dir();
  // A watch in another process that would otherwise run for a minute.
  const std::string cmd =
      "/usr/bin/kubectl --kubeconfig " + kc + " get pods -w --request-timeout=60s >/dev/null 2>&1 &";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  server->stop();
  server.reset();
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  CHECK(!std::filesystem::exists(dir));  // a directory it created itself is removed
}

namespace {

// kubectl apply -f of an inline manifest (written next to the kubeconfigs).
Run apply_text(Cluster& c, const std::string& who, const std::string& yaml, const std::string& extra = "") {
  static int n = 0;
  const std::string path = c.server.kubeconfig_dir() + "/manifest-" + std::to_string(++n) + ".yaml";
  std::ofstream(path) << yaml;
  return c.kubectl(who, "apply " + extra + " -f " + path);
}

}  // namespace

TEST_CASE("kubectl delete --cascade=foreground keeps the owner until its dependents are gone; orphan keeps them") {
  Cluster c;
  auto r = apply_text(c, "alice", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner\ndata:\n  a: b\n");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::string uid = c.kubectl("alice", "get configmap owner -o jsonpath={.metadata.uid}").out;
  REQUIRE(uid.size() == 36);
  r = apply_text(c, "alice",
                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dep\n  finalizers: [example.com/cleanup]\n"
                 "  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: " +
                     uid + ", blockOwnerDeletion: true}\n");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  r = c.kubectl("alice", "delete configmap owner --cascade=foreground --wait=false");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out == "configmap \"owner\" deleted\n");
  // GET still shows it: marked for deletion, waiting for its dependent.
  r = c.kubectl("alice", "get configmap owner -o jsonpath={.metadata.finalizers}/{.metadata.deletionTimestamp}");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out == "[\"foregroundDeletion\"]/2024-01-01T00:00:00Z");
  CHECK(c.kubectl("alice", "get configmap dep -o jsonpath={.metadata.deletionTimestamp}").out ==
        "2024-01-01T00:00:00Z");
  // The dependent's finalizer goes: it is deleted, and so is the owner.
  r = c.kubectl("alice", R"(patch configmap dep --type=merge -p '{"metadata":{"finalizers":null}}')");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  r = c.kubectl("alice", "get configmap owner dep");
  CHECK(r.err ==
        "Error from server (NotFound): configmaps \"owner\" not found\n"
        "Error from server (NotFound): configmaps \"dep\" not found\n");

  // Orphan: the ReplicaSet stays, without its ownerReference, and keeps its pod.
  r = apply_text(c, "alice",
                 "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"
                 "  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n"
                 "    spec:\n      containers:\n      - {name: c, image: busybox}\n");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  r = c.kubectl("alice", "delete deployment web --cascade=orphan");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  r = c.kubectl("alice",
                "get rs -l app=web -o jsonpath={.items[*].metadata.name}:{.items[*].metadata.ownerReferences}");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.rfind("web-", 0) == 0);
  CHECK(r.out.back() == ':');  // no ownerReferences left
  CHECK(store_of(c.server).list(c.type("", "pods"), "alice").items.size() == 1);
}

TEST_CASE("PVCs bind: default class, a named class, a static volume; pods wait for unbound claims") {
  Cluster c;
  // The store as a request made now would see it (store_of settles the answered writes).
  auto store = [&]() -> Store& { return store_of(c.server); };
  const auto& pvcs = c.type("", "persistentvolumeclaims");
  const auto& pods = c.type("", "pods");
  auto claim = [](const std::string& name, const std::string& cls_line) {
    return "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: " + name + "\nspec:\n" + cls_line +
           "  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n";
  };
  auto pod = [](const std::string& name, const std::string& claim_name) {
    return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
           "\nspec:\n  containers:\n  - {name: c, image: busybox, volumeMounts: [{name: d, mountPath: /d}]}\n"
           "  volumes:\n  - name: d\n    persistentVolumeClaim: {claimName: " +
           claim_name + "}\n";
  };
  auto scheduled_message = [&](const std::string& name) {
    auto p = store().get(pods, "alice", name);
    for (const auto& cond : p.at("status").at("conditions").as_array())
      if (cond.at("type") == "PodScheduled")
        return std::string(cond.at("status").as_string()) + ": " +
               std::string(cond.as_object().contains("message") ? cond.at("message").as_string() : "");
    return std::string("none");
  };

  // No class: DefaultStorageClass admission picks "standard", the provisioner makes the volume.
  auto r = apply_text(c, "alice", claim("data", ""));
  REQUIRE_MESSAGE(r.code == 0, r.err);
  auto pvc = store().get(pvcs, "alice", "data");
  CHECK(pvc.at("spec").at("storageClassName") == "standard");
  const std::string pv_name = "pvc-" + std::string(pvc.at("metadata").at("uid").as_string());
  CHECK(pvc.at("spec").at("volumeName") == json::value(pv_name));
  CHECK(pvc.at("status").at("phase") == "Bound");
  CHECK(pvc.at("status").at("capacity").at("storage") == "1Gi");
  CHECK(pvc.at("metadata").at("annotations").at("pv.kubernetes.io/bind-completed") == "yes");
  r = c.kubectl("alice", "get pvc data");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  auto rows = table_rows(r.out);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1] == std::vector<std::string>{"data", "Bound", pv_name, "1Gi", "RWO", "standard", "<unset>", "0s"});
  auto pv = store().get(c.type("", "persistentvolumes"), "", pv_name);
  CHECK(pv.at("status").at("phase") == "Bound");
  CHECK(pv.at("spec").at("claimRef").at("name") == "data");
  CHECK(pv.at("spec").at("persistentVolumeReclaimPolicy") == "Delete");
  // The embedded provisioner's name is no CSI driver name: a hostPath directory, as local-path's.
  CHECK(pv.at("spec").at("hostPath").at("path") == json::value("/var/lib/gpupool/volumes/" + pv_name));
  r = apply_text(c, "alice", pod("uses-data", "data"));
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(!store().get(pods, "alice", "uses-data").at("spec").at("nodeName").as_string().empty());

  // A class that does not exist (yet): the claim stays Pending, and so does a pod using it.
  r = apply_text(c, "alice", claim("fast", "  storageClassName: fast\n"));
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(store().get(pvcs, "alice", "fast").at("status").at("phase") == "Pending");
  r = c.kubectl("alice", "get events --field-selector reason=ProvisioningFailed -o jsonpath={.items[*].message}");
  CHECK(r.out == "storageclass.storage.k8s.io \"fast\" not found");
  r = apply_text(c, "alice", pod("uses-fast", "fast"));
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(scheduled_message("uses-fast") ==
        "False: 0/6 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/6 nodes are "
        "available: 6 Preemption is not helpful for scheduling.");
  r = apply_text(c, "alice", pod("uses-missing", "missing"));
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(scheduled_message("uses-missing") ==
        "False: 0/6 nodes are available: persistentvolumeclaim \"missing\" not found. preemption: 0/6 nodes are "
        "available: 6 Preemption is not helpful for scheduling.");
  // The admin installs the class: the claim binds and the waiting pod is scheduled.
  r = apply_text(c, "admin",
                 "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fast\n"
                 "provisioner: example.com/fast\n");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(store().get(pvcs, "alice", "fast").at("status").at("phase") == "Bound");
  CHECK(scheduled_message("uses-fast") == "True: ");
  CHECK(scheduled_message("uses-missing").rfind("False", 0) == 0);
  r = c.kubectl("admin", "get sc -o jsonpath={.items[*].metadata.name}");
  CHECK(r.out.find("fast managed-nfs-storage standard") != std::string::npos);
  // kubectl's columns for StorageClasses and PersistentVolumes.
  r = c.kubectl("admin", "get sc standard fast");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  rows = table_rows(r.out);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0] == std::vector<std::string>{"NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE",
                                            "ALLOWVOLUMEEXPANSION", "AGE"});
  CHECK(rows[1] == std::vector<std::string>{"standard", "(default)", "gpupool.io/embedded-provisioner", "Delete",
                                            "Immediate", "false", "0s"});
  CHECK(rows[2] == std::vector<std::string>{"fast", "example.com/fast", "Delete", "Immediate", "false", "0s"});
  r = c.kubectl("admin", "get pv " + pv_name);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  rows = table_rows(r.out);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1] ==
        std::vector<std::string>{pv_name, "1Gi", "RWO", "Delete", "Bound", "alice/data", "standard", "<unset>", "0s"});

  // storageClassName "": only a pre-provisioned volume of no class binds, the smallest that fits.
  for (std::string size : {"10Gi", "2Gi", "512Mi"}) {
    std::string name = "nfs-" + size;
    for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    r = apply_text(c, "admin",
                   "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + name +
                       "\nspec:\n  capacity: {storage: " + size +
                       "}\n  accessModes: [ReadWriteOnce, ReadWriteMany]\n  nfs: {server: 10.1.0.20, path: /x}\n");
    REQUIRE_MESSAGE(r.code == 0, r.err);
  }
  CHECK(store().get(c.type("", "persistentvolumes"), "", "nfs-2gi").at("status").at("phase") == "Available");
  r = apply_text(c, "alice", claim("static", "  storageClassName: \"\"\n"));
  REQUIRE_MESSAGE(r.code == 0, r.err);
  auto st = store().get(pvcs, "alice", "static");
  CHECK(st.at("status").at("phase") == "Bound");
  CHECK(st.at("spec").at("volumeName") == "nfs-2gi");
  CHECK(store().get(c.type("", "persistentvolumes"), "", "nfs-10gi").at("status").at("phase") == "Available");
  auto big = claim("too-big", "  storageClassName: \"\"\n");
  big.replace(big.find("1Gi"), 3, "20Gi");
  REQUIRE(apply_text(c, "alice", big).code == 0);
  CHECK(store().get(pvcs, "alice", "too-big").at("status").at("phase") == "Pending");
  r = c.kubectl("alice", "get events --field-selector reason=FailedBinding -o jsonpath={.items[*].message}");
  CHECK(r.out == "no persistent volumes available for this claim and no storage class is set");
  // The same event through events.k8s.io/v1: one store, the message as `note`.
  r = c.kubectl("alice",
                "get events.v1.events.k8s.io --field-selector reason=FailedBinding -o "
                "jsonpath={.items[*].note}/{.items[*].regarding.name}/{.items[*].apiVersion}");
  CHECK(r.out == "no persistent volumes available for this claim and no storage class is set/too-big/events.k8s.io/v1");
  // Deleting a claim reclaims its volume: provisioned ones (Delete) go, static ones (Retain) are Released.
  REQUIRE(c.kubectl("alice", "delete pod uses-data").code == 0);
  REQUIRE(c.kubectl("alice", "delete pvc data static").code == 0);
  CHECK(!store().find(c.type("", "persistentvolumes"), "", pv_name));
  CHECK(store().get(c.type("", "persistentvolumes"), "", "nfs-2gi").at("status").at("phase") == "Released");
}

TEST_CASE("kubectl apply --server-side: field ownership, conflicts with another manager, --force-conflicts, removal") {
  Cluster c;
  const auto& deploys = c.type("apps", "deployments");
  auto manifest = [](const std::string& extra_label, const std::string& extra_env) {
    return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app: web\n" + extra_label +
           "spec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n"
           "      labels: {app: web}\n    spec:\n      containers:\n      - name: c\n        image: busybox\n"
           "        env:\n        - {name: A, value: \"1\"}\n" +
           extra_env;
  };
  const std::string full = manifest("    tier: front\n", "        - {name: B, value: \"2\"}\n");
  auto r = apply_text(c, "alice", full, "--server-side");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out == "deployment.apps/web serverside-applied\n");
  auto managed = [&] {  // (the Deployment controller's status entry left out)
    const json::object d = store_of(c.server).get(deploys, "alice", "web");
    json::array mf;
    for (const auto& e : d.at("metadata").at("managedFields").as_array())
      if (e.at("manager") != "kube-controller-manager") mf.push_back(e);
    return mf;
  };
  auto mf = managed();
  REQUIRE(mf.size() == 1);
  CHECK(mf[0].at("manager") == "kubectl");
  CHECK(mf[0].at("operation") == "Apply");
  CHECK(mf[0].at("fieldsType") == "FieldsV1");
  const auto& fields = mf[0].at("fieldsV1").as_object();
  CHECK(fields.at("f:spec").at("f:replicas").as_object().empty());
  // (An applied map is no member of its own: kube-apiserver records {"f:labels":{"f:app":{}}}.)
  CHECK(!fields.at("f:metadata").at("f:labels").as_object().contains("."));
  CHECK(fields.at("f:metadata").at("f:labels").as_object().contains("f:app"));
  const auto& container = fields.at("f:spec").at("f:template").at("f:spec").at("f:containers").at(R"(k:{"name":"c"})");
  CHECK(container.as_object().contains("."));
  CHECK(container.at("f:env").as_object().contains(R"(k:{"name":"B"})"));

  // Another manager changes replicas: it owns that field now.
  r = c.kubectl("alice", R"(patch deployment web --type=merge -p '{"spec":{"replicas":3}}')");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  mf = managed();
  REQUIRE(mf.size() == 2);
  CHECK(mf[1].at("manager") == "kubectl-patch");
  CHECK(mf[1].at("operation") == "Update");
  CHECK(!mf[0].at("fieldsV1").at("f:spec").as_object().contains("f:replicas"));

  // Applying replicas: 1 again conflicts, with the API server's message.
  r = apply_text(c, "alice", full, "--server-side");
  CHECK(r.code == 1);
  CHECK(r.err.find("Apply failed with 1 conflict: conflict with \"kubectl-patch\" using apps/v1: .spec.replicas") !=
        std::string::npos);
  CHECK(store_of(c.server).get(deploys, "alice", "web").at("spec").at("replicas") == 3);
  // --force-conflicts takes the field; the other manager, left with nothing, disappears.
  r = apply_text(c, "alice", full, "--server-side --force-conflicts");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(store_of(c.server).get(deploys, "alice", "web").at("spec").at("replicas") == 1);
  mf = managed();
  REQUIRE(mf.size() == 1);
  CHECK(mf[0].at("manager") == "kubectl");

  // Fields the applier stops applying are removed: the tier label and env B.
  r = apply_text(c, "alice", manifest("", ""), "--server-side");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  auto d = store_of(c.server).get(deploys, "alice", "web");
  CHECK(json::serialize(d.at("metadata").at("labels")) == R"({"app":"web"})");
  const auto& env = d.at("spec").at("template").at("spec").at("containers").at(0).at("env").as_array();
  CHECK(json::serialize(env) == R"([{"name":"A","value":"1"}])");
  // ... but not a field another manager also set: a label added by kubectl label stays.
  REQUIRE(c.kubectl("alice", "label deployment web team=ml").code == 0);
  REQUIRE(apply_text(c, "alice", manifest("    team: ml\n", ""), "--server-side").code == 0);
  REQUIRE(apply_text(c, "alice", manifest("", ""), "--server-side").code == 0);
  CHECK(store_of(c.server).get(deploys, "alice", "web").at("metadata").at("labels").as_object().contains("team"));
}

TEST_CASE("kubectl's typed generators send protobuf: create deployment, expose, run, create configmap/secret") {
  Cluster c;
  auto r = c.kubectl("alice", "create deployment web --image=nginx --replicas=2 --port=8080 -- sleep 3600");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out == "deployment.apps/web created\n");
  auto d = store_of(c.server).get(c.type("apps", "deployments"), "alice", "web");
  CHECK(d.at("spec").at("replicas") == 2);
  CHECK(json::serialize(d.at("spec").at("selector")) == R"({"matchLabels":{"app":"web"}})");
  CHECK(d.at("metadata").at("labels").at("app") == "web");
  const auto& container = d.at("spec").at("template").at("spec").at("containers").at(0);
  CHECK(container.at("name") == "nginx");
  CHECK(container.at("image") == "nginx");
  CHECK(json::serialize(container.at("command")) == R"(["sleep","3600"])");
  CHECK(container.at("ports").at(0).at("containerPort") == 8080);
  CHECK(d.at("spec").at("strategy").at("type") == "RollingUpdate");  // an empty type was defaulted
  const auto& entries = d.at("metadata").at("managedFields").as_array();
  CHECK(std::any_of(entries.begin(), entries.end(), [](const json::value& e) {
    return e.at("manager") == "kubectl-create" && e.at("operation") == "Update";
  }));

  r = c.kubectl("alice", "expose deployment web --port=80 --target-port=8080 --type=NodePort");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out == "service/web exposed\n");
  auto svc = store_of(c.server).get(c.type("", "services"), "alice", "web");
  CHECK(svc.at("spec").at("type") == "NodePort");
  CHECK(json::serialize(svc.at("spec").at("selector")) == R"({"app":"web"})");
  CHECK(svc.at("spec").at("ports").at(0).at("port") == 80);
  CHECK(svc.at("spec").at("ports").at(0).at("targetPort") == 8080);

  r = c.kubectl("alice", "run pp --image=busybox --restart=Never --labels=x=y -- sleep 10");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  auto pod = store_of(c.server).get(c.type("", "pods"), "alice", "pp");
  CHECK(pod.at("spec").at("restartPolicy") == "Never");
  CHECK(pod.at("metadata").at("labels").at("x") == "y");
  CHECK(json::serialize(pod.at("spec").at("containers").at(0).at("args")) == R"(["sleep","10"])");

  REQUIRE(c.kubectl("alice", "create configmap cm1 --from-literal=a=b").code == 0);
  CHECK(c.kubectl("alice", "get configmap cm1 -o jsonpath={.data.a}").out == "b");
  REQUIRE(c.kubectl("alice", "create secret generic s1 --from-literal=k=v").code == 0);
  CHECK(c.kubectl("alice", "get secret s1 -o jsonpath={.data.k}").out == "dg==");  // base64 of "v"
}

TEST_CASE("kubectl create job|quota|serviceaccount|priorityclass|pdb|role|rolebinding (protobuf) and auth can-i") {
  Cluster c;
  // Each of these sends a protobuf body (kubectl 1.32's typed generators).
  for (const auto& step : std::vector<std::pair<std::string, std::string>>{
           {"create job j --image=busybox", "job.batch/j created\n"},
           {"create quota q --hard=pods=10,requests.cpu=4", "resourcequota/q created\n"},
           {"create serviceaccount sa1", "serviceaccount/sa1 created\n"},
           {"create pdb pdb1 --selector=app=x --min-available=1", "poddisruptionbudget.policy/pdb1 created\n"},
           {"create role r1 --verb=get --resource=pods", "role.rbac.authorization.k8s.io/r1 created\n"},
           {"create rolebinding rb1 --role=r1 --user=bob", "rolebinding.rbac.authorization.k8s.io/rb1 created\n"}}) {
    const std::string& args = step.first;
    auto r = c.kubectl("alice", args);
    CHECK_MESSAGE(r.code == 0, args, ": ", r.err);
    CHECK(r.out == step.second);
  }
  auto r = c.kubectl("admin", "create priorityclass high --value=1000 --description=urgent");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(store_of(c.server).get(c.type("scheduling.k8s.io", "priorityclasses"), "", "high").at("value") == 1000);
  // The Job as the real registry stores it: the generated selector on its uid, the four labels.
  const auto job = store_of(c.server).get(c.type("batch", "jobs"), "alice", "j");
  const std::string uid(job.at("metadata").at("uid").as_string());
  CHECK(json::serialize(job.at("spec").at("selector")) ==
        R"({"matchLabels":{"batch.kubernetes.io/controller-uid":")" + uid + R"("}})");
  CHECK(job.at("spec").at("template").at("metadata").at("labels").at("job-name") == "j");
  CHECK(job.at("metadata").at("labels").at("controller-uid").as_string() == uid);
  CHECK(job.at("spec").at("manualSelector") == false);
  CHECK(job.at("spec").at("podReplacementPolicy") == "TerminatingOrFailed");
  const auto quota = store_of(c.server).get(c.type("", "resourcequotas"), "alice", "q");
  CHECK(json::serialize(quota.at("spec").at("hard")) == R"({"pods":"10","requests.cpu":"4"})");
  CHECK(
      store_of(c.server).get(c.type("policy", "poddisruptionbudgets"), "alice", "pdb1").at("spec").at("minAvailable") ==
      1);

  // RBAC: alice's Role lets bob get pods in alice's namespace, nothing more.
  auto can = [&](const std::string& who, const std::string& args) {
    auto res = c.kubectl(who, "auth can-i " + args);
    return res.out;
  };
  CHECK(can("admin", "get pods -n alice --as=bob") == "yes\n");
  CHECK(can("admin", "list pods -n alice --as=bob") == "no\n");
  CHECK(can("admin", "get pods -n bob --as=carol") == "no\n");
  CHECK(can("bob", "get pods -n alice") == "yes\n");
  CHECK(can("bob", "delete pods -n alice") == "no\n");
  CHECK(can("alice", "create deployments -n alice") == "yes\n");  // the guide's rule: her own namespace
  CHECK(c.kubectl("bob", "get pod nothing-here -n alice").err.find("NotFound") != std::string::npos);  // allowed: a 404
  r = c.kubectl("bob", "get pods -n alice");
  CHECK(r.code == 1);
  CHECK(
      r.err ==
      "Error from server (Forbidden): pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" "
      "in the namespace \"alice\"\n");
  // Impersonation needs the impersonate verb: bob does not have it.
  r = c.kubectl("bob", "get pods -n bob --as=alice");
  CHECK(r.err ==
        "Error from server (Forbidden): users \"alice\" is forbidden: User \"bob\" cannot impersonate resource "
        "\"users\" in API group \"\" at the cluster scope\n");
  // The review itself, with RBAC's reason.
  const std::string review = c.server.kubeconfig_dir() + "/review.json";
  std::ofstream(review) << R"({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview",)"
                           R"("spec":{"resourceAttributes":{"namespace":"alice","verb":"get","resource":"pods"}}})";
  r = c.kubectl("bob", "create --validate=false -o jsonpath={.status} -f " + review);
  CHECK(r.out ==
        R"({"allowed":true,"reason":"RBAC: allowed by RoleBinding \"rb1/alice\" of Role \"r1\" to User \"bob\""})");
  CHECK(c.kubectl("admin", "get selfsubjectaccessreviews").err ==
        "Error from server (MethodNotAllowed): the server does not allow this method on the requested resource\n");
}

TEST_CASE("kubectl prints the API's warnings: duplicate env, deprecated labels, fractional bytes") {
  Cluster c;
  const std::string dir = c.server.kubeconfig_dir();
  {
    std::ofstream f(dir + "/warn.yaml");
    f << R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: warn}
spec:
  selector: {matchLabels: {app: warn}}
  template:
    metadata: {labels: {app: warn}}
    spec:
      nodeSelector: {beta.kubernetes.io/arch: amd64}
      containers:
      - name: main
        image: busybox
        resources: {requests: {memory: 100m}}
        env: [{name: A, value: "1"}, {name: A, value: "2"}, {name: B, value: "1"}, {name: B, value: "$(B)x"}]
)";
  }
  auto r = c.kubectl("alice", "apply -f " + dir + "/warn.yaml");
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(r.err ==
        "Warning: spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "
        "\"kubernetes.io/arch\" instead\n"
        "Warning: spec.template.spec.containers[0].resources.requests[memory]: fractional byte value \"100m\" is "
        "invalid, must be an integer\n"
        "Warning: spec.template.spec.containers[0].env[1]: hides previous definition of \"A\", which may be dropped "
        "when using apply\n");
  // The same spec again: no change, no warnings (the strategies warn when the spec changes).
  r = c.kubectl("alice", "apply -f " + dir + "/warn.yaml");
  CHECK(r.err.empty());
  // A pod is warned on create.
  r = c.kubectl("alice", "run p --image=busybox --env=X=1 --env=X=2");
  CHECK(r.code == 0);
  CHECK(r.err.find("Warning: spec.containers[0].env[1]: hides previous definition of \"X\"") != std::string::npos);
}

TEST_CASE("a Service's Endpoints and EndpointSlice follow its pods; describe service shows them") {
  Cluster c("iiis");
  REQUIRE(c.kubectl("alice", "create deployment web --image=nginx --replicas=2 --port=8080").code == 0);
  auto r = c.kubectl("alice", "expose deployment web --port=80 --target-port=8080");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  // No pod runs yet: the objects exist, with nothing in them (as kube-controller-manager makes them).
  const auto& endpoints = c.type("", "endpoints");
  CHECK(!store_of(c.server).get(endpoints, "alice", "web").contains("subsets"));
  c.server.advance(30s);  // the kubelet starts the pods: each gets an IP and becomes Ready
  auto ep = store_of(c.server).get(endpoints, "alice", "web");
  REQUIRE(ep.contains("subsets"));
  const auto& subset = ep.at("subsets").at(0).as_object();
  REQUIRE(subset.at("addresses").as_array().size() == 2);
  CHECK(subset.at("ports").at(0).at("port") == 8080);
  CHECK(subset.at("addresses").at(0).at("targetRef").at("kind") == "Pod");
  r = c.kubectl("alice", "get endpointslices -o jsonpath={.items[0].endpoints[*].conditions.ready}");
  CHECK(r.out == "true true");
  r = c.kubectl("alice", "describe service web");
  CHECK(r.out.find("Endpoints:                " + std::string(subset.at("addresses").at(0).at("ip").as_string()) +
                   ":8080,") != std::string::npos);
  // Scaled to nothing: empty again; deleted: gone (the slice with its owner).
  REQUIRE(c.kubectl("alice", "scale deployment web --replicas=0").code == 0);
  c.server.advance(60s);
  CHECK(!store_of(c.server).get(endpoints, "alice", "web").contains("subsets"));
  REQUIRE(c.kubectl("alice", "delete service web").code == 0);
  c.server.advance(1s);
  CHECK(!store_of(c.server).find(endpoints, "alice", "web"));
  CHECK(c.kubectl("alice", "get endpointslices -o name").out.empty());
}

namespace {

// A kubeconfig's `key: <base64>` value, decoded (client-certificate-data, client-key-data).
std::string kubeconfig_data(const std::string& kubeconfig, const std::string& key) {
  std::ifstream in(kubeconfig);
  std::string line;
  while (std::getline(in, line))
    if (auto p = line.find(key + ": "); p != std::string::npos)
      return gpupool::base64_decode(line.substr(p + key.size() + 2)).value_or("");
  return {};
}

// A bare OpenSSL client with a client certificate that keeps the TLS sessions it is given
// (sess_set_new_cb), as the command keeps its session file.
struct SessionClient {
  SSL_CTX* ctx = nullptr;
  std::vector<SSL_SESSION*> tickets;  // the sessions of the current connection's new tickets

  SessionClient(const std::string& ca_pem, const std::string& cert, const std::string& key) {
    ctx = client_context(ca_pem);
    REQUIRE_FALSE(cert.empty());
    BIO* cb = BIO_new_mem_buf(cert.data(), static_cast<int>(cert.size()));
    X509* x = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    BIO_free(cb);
    BIO* kb = BIO_new_mem_buf(key.data(), static_cast<int>(key.size()));
    EVP_PKEY* k = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    BIO_free(kb);
    REQUIRE((x && k && SSL_CTX_use_certificate(ctx, x) == 1 && SSL_CTX_use_PrivateKey(ctx, k) == 1));
    X509_free(x);
    EVP_PKEY_free(k);
    ERR_clear_error();
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    // The server closes after its answer (Connection: close) without close_notify: as the
    // library's transport does, take that as the end (else OpenSSL makes the session unresumable).
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_app_data(ctx, this);
    SSL_CTX_sess_set_new_cb(ctx, [](SSL* ssl, SSL_SESSION* sess) {
      static_cast<SessionClient*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)))->tickets.push_back(sess);
      return 1;  // the reference is ours
    });
  }
  ~SessionClient() {
    for (auto* t : tickets) SSL_SESSION_free(t);
    SSL_CTX_free(ctx);
  }
  SessionClient(const SessionClient&) = delete;
  SessionClient& operator=(const SessionClient&) = delete;

  struct Answer {
    long status = 0;
    bool resumed = false;
    std::string cipher;  // the suite the server chose
    std::string body;    // what follows the head
  };
  // GET `path` on a new connection offering `session` (may be null); `tickets` then holds the
  // sessions the server sent on it.
  Answer get(int port, const std::string& path, SSL_SESSION* session, const std::string& extra_headers = {}) {
    for (auto* t : tickets) SSL_SESSION_free(t);
    tickets.clear();
    Answer a;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    const timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1");
    if (session) SSL_set_session(ssl, session);
    std::string in;
    if (SSL_connect(ssl) == 1) {
      a.resumed = SSL_session_reused(ssl) == 1;
      a.cipher = SSL_CIPHER_get_name(SSL_get_current_cipher(ssl));
      const std::string req =
          "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra_headers + "\r\n";
      if (SSL_write(ssl, req.data(), static_cast<int>(req.size())) > 0) {
        char buf[16384];
        int n;
        while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) in.append(buf, static_cast<std::size_t>(n));
      }
      SSL_shutdown(ssl);  // a connection freed without it makes its sessions unresumable
    }
    SSL_free(ssl);
    ::close(fd);
    if (in.rfind("HTTP/1.1 ", 0) == 0) a.status = std::stol(in.substr(9, 3));
    if (const auto head_end = in.find("\r\n\r\n"); head_end != std::string::npos) a.body = in.substr(head_end + 4);
    return a;
  }
  // GET on a new connection offering a fresh decode of `der` (a session as the command keeps it in
  // its file: each process decodes its own copy).
  Answer get_with(int port, const std::string& path, const std::string& der) {
    const auto* in = reinterpret_cast<const unsigned char*>(der.data());
    SSL_SESSION* session = d2i_SSL_SESSION(nullptr, &in, static_cast<long>(der.size()));
    REQUIRE(session);
    const auto answer = get(port, path, session);
    SSL_SESSION_free(session);
    return answer;
  }
  // The newest ticket's session, encoded.
  std::string newest_ticket() const {
    REQUIRE_FALSE(tickets.empty());
    std::string der(static_cast<std::size_t>(i2d_SSL_SESSION(tickets.back(), nullptr)), '\0');
    auto* out = reinterpret_cast<unsigned char*>(der.data());
    REQUIRE(i2d_SSL_SESSION(tickets.back(), &out) == static_cast<int>(der.size()));
    return der;
  }
};

}  // namespace

TEST_CASE("TLS resumption: the certificate's user again, and no new ticket while the ticket is fresh") {
  Cluster c("none");
  const std::string kubeconfig = c.server.cert_kubeconfig("alice");
  SessionClient alice(c.server.ca_pem(), kubeconfig_data(kubeconfig, "client-certificate-data"),
                      kubeconfig_data(kubeconfig, "client-key-data"));
  const std::string own = "/api/v1/namespaces/alice/pods", other = "/api/v1/namespaces/bob/pods";
  const auto full = alice.get(c.server.port(), own, nullptr);
  CHECK(full.status == 200);  // alice, by her certificate, in her namespace
  CHECK_FALSE(full.resumed);
  REQUIRE(alice.tickets.size() >= 1);  // a full handshake gets tickets (OpenSSL sends two)
  const std::string der = alice.newest_ticket();
  const auto offer = [&](const std::string& path) { return alice.get_with(c.server.port(), path, der); };
  const auto resumed = offer(own);
  CHECK(resumed.resumed);
  CHECK(resumed.status == 200);  // the identity comes back with the session
  CHECK(alice.tickets.empty());  // a fresh ticket is not replaced: nothing to encode or store
  const auto again = offer(other);
  CHECK(again.resumed);        // the same ticket resumes again
  CHECK(again.status == 403);  // still alice: not an administrator, not anonymous
  CHECK(alice.tickets.empty());
}

TEST_CASE("the cipher suite is the one kube-apiserver (Go's crypto/tls) picks, not the client's first") {
  Cluster c("none");
  const std::string kubeconfig = c.server.cert_kubeconfig("alice");
  const auto suite = [&](int max_version, const char* tls13, const char* tls12) {
    SessionClient client(c.server.ca_pem(), kubeconfig_data(kubeconfig, "client-certificate-data"),
                         kubeconfig_data(kubeconfig, "client-key-data"));
    SSL_CTX_set_max_proto_version(client.ctx, max_version);
    if (tls13) REQUIRE(SSL_CTX_set_ciphersuites(client.ctx, tls13) == 1);
    if (tls12) REQUIRE(SSL_CTX_set_cipher_list(client.ctx, tls12) == 1);
    const auto a = client.get(c.server.port(), "/version", nullptr);
    CHECK(a.status == 200);
    return a.cipher;
  };
  // Checked against kube-apiserver v1.32.13 with `openssl s_client` (OpenSSL 3.0's default order
  // puts TLS_AES_256_GCM_SHA384 first): AES-128-GCM, and ChaCha20 for a client that prefers it.
  CHECK(suite(TLS1_3_VERSION, nullptr, nullptr) == "TLS_AES_128_GCM_SHA256");
  CHECK(suite(TLS1_3_VERSION, "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256", nullptr) ==
        "TLS_CHACHA20_POLY1305_SHA256");
  CHECK(suite(TLS1_3_VERSION, "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256", nullptr) ==
        "TLS_AES_256_GCM_SHA384");
  CHECK(suite(TLS1_2_VERSION, nullptr, nullptr) == "ECDHE-ECDSA-AES128-GCM-SHA256");
  CHECK(suite(TLS1_2_VERSION, nullptr, "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256") ==
        "ECDHE-ECDSA-CHACHA20-POLY1305");
  CHECK(suite(TLS1_2_VERSION, nullptr, "AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384") ==
        "ECDHE-ECDSA-AES256-GCM-SHA384");  // no RSA key exchange (Go 1.22 dropped it by default)
}

TEST_CASE("client certificates and tokens are judged as kube-apiserver's authenticators judge them") {
  // Checked on kube-apiserver v1.32.13 (curl with a certificate of another CA, the cluster's
  // certificate with a wrong token, the other CA's with the right token; SelfSubjectReview for
  // the user): the certificate is asked for, not required, and judged by the x509 authenticator
  // (a 401), not by the handshake; a verified certificate wins over any token sent with it.
  CertificateAuthority ca, other;
  const KeyPair serving = ca.issue_server(), alice_pair = ca.issue_client("alice", {"team"}),
                rogue_pair = other.issue_client("mallory", {"system:masters"});
  HttpServer::Options o;
  o.cert_pem = serving.cert_pem;
  o.key_pem = serving.key_pem;
  o.client_ca_pem = ca.cert_pem();
  o.tokens = {{"bob-token", Identity{"bob", {"system:authenticated"}, {}, {}, {}}}};
  FaultInjector faults;
  HttpServer server(
      o,
      [](const Request& r) {
        if (r.user.empty()) return status_response(StatusError(401, "Unauthorized", "Unauthorized"));
        Response resp;
        resp.content_type = "text/plain";
        resp.body = r.user;
        return resp;
      },
      faults);
  SessionClient alice(ca.cert_pem(), alice_pair.cert_pem, alice_pair.key_pem);
  SessionClient mallory(ca.cert_pem(), rogue_pair.cert_pem, rogue_pair.key_pem);
  const std::string bob = "Authorization: Bearer bob-token\r\n", wrong = "Authorization: Bearer nope\r\n";
  auto a = mallory.get(server.port(), "/", nullptr);
  CHECK(a.status == 401);  // a handshake, then the Status (it was a handshake failure)
  CHECK(a.body.find("\"reason\":\"Unauthorized\"") != std::string::npos);
  a = mallory.get(server.port(), "/", nullptr, bob);
  CHECK(a.status == 200);
  CHECK(a.body == "bob");  // the token, after the certificate failed
  a = alice.get(server.port(), "/", nullptr, wrong);
  CHECK(a.status == 200);
  CHECK(a.body == "alice");  // the certificate; the wrong token is not looked at
  a = alice.get(server.port(), "/", nullptr, bob);
  CHECK(a.body == "alice");  // the certificate first, as x509 comes before tokens
  // A resumed session of the refused certificate is refused again.
  const auto resumed = mallory.get_with(server.port(), "/", mallory.newest_ticket());
  CHECK(resumed.resumed);
  CHECK(resumed.status == 401);
  // bearertoken.Authenticator: the scheme in any case (the official Python client sends "bearer"),
  // the header trimmed, a third part ignored; an empty token or another scheme is no token.
  for (const char* header : {"Authorization: bearer bob-token\r\n", "Authorization: BEARER bob-token\r\n",
                             "Authorization:   Bearer bob-token  \r\n", "Authorization: Bearer bob-token extra\r\n"}) {
    CAPTURE(header);
    a = mallory.get(server.port(), "/", nullptr, header);
    CHECK(a.status == 200);
    CHECK(a.body == "bob");
  }
  for (const char* header : {"Authorization: Basic bob-token\r\n", "Authorization: Bearer  bob-token\r\n",
                             "Authorization: Bearerbob-token\r\n"}) {
    CAPTURE(header);
    CHECK(mallory.get(server.port(), "/", nullptr, header).status == 401);
  }
}

TEST_CASE("TLS sessions age by the server's clock: renewed past half their lifetime, refused past it") {
  CertificateAuthority ca;
  const KeyPair serving = ca.issue_server(), alice_pair = ca.issue_client("alice", {"team"});
  std::atomic<std::int64_t> now{1'000'000'000};
  HttpServer::Options o;
  o.cert_pem = serving.cert_pem;
  o.key_pem = serving.key_pem;
  o.client_ca_pem = ca.cert_pem();
  o.tls_session_clock = [&now] { return now.load(); };
  FaultInjector faults;
  HttpServer server(
      o,
      [](const Request& r) {
        Response resp;
        resp.content_type = "text/plain";
        resp.body = r.user;  // who the connection authenticated as
        return resp;
      },
      faults);
  SessionClient alice(ca.cert_pem(), alice_pair.cert_pem, alice_pair.key_pem);
  const auto full = alice.get(server.port(), "/", nullptr);
  CHECK(full.status == 200);
  CHECK(full.body == "alice");
  CHECK_FALSE(full.resumed);
  const std::string der = alice.newest_ticket();
  const auto lifetime = static_cast<std::int64_t>(SSL_SESSION_get_ticket_lifetime_hint(alice.tickets.back()));
  REQUIRE(lifetime > 100);
  const std::int64_t issued = now.load();

  now = issued + lifetime / 2 - 10;  // fresh: resumed, not replaced
  auto a = alice.get_with(server.port(), "/", der);
  CHECK(a.resumed);
  CHECK(a.body == "alice");
  CHECK(alice.tickets.empty());

  now = issued + lifetime / 2 + 10;  // past half its lifetime: resumed and renewed
  a = alice.get_with(server.port(), "/", der);
  CHECK(a.resumed);
  CHECK(a.body == "alice");
  CHECK_FALSE(alice.tickets.empty());

  now = issued + lifetime + 1;  // expired: refused, a full handshake (the certificate sent again)
  a = alice.get_with(server.port(), "/", der);
  CHECK_FALSE(a.resumed);
  CHECK(a.status == 200);
  CHECK(a.body == "alice");
}

TEST_CASE("pipelined requests: plain answers leave together, a write's answer at once") {
  Cluster c("seed");
  const std::string token = token_of(c.server.kubeconfig("alice"));
  REQUIRE_FALSE(token.empty());
  const std::string own = "/api/v1/namespaces/alice/";
  // Five reads written at once: their answers (200, 404, 403, 200, 200) in one TLS write, so
  // the first read of the client has them all, in order.
  auto reads = pipelined_reads(c.server, token,
                               {{"GET", own + "pods"},
                                {"GET", own + "pods/nothing"},
                                {"GET", "/api/v1/namespaces/bob/pods"},
                                {"GET", "/api/v1/nodes?limit=1"},  // (all five within one TLS record)
                                {"GET", own + "configmaps"}});
  REQUIRE(!reads.empty());
  CHECK(statuses_in(reads.front()) == std::vector<int>{200, 404, 403, 200, 200});
  std::string whole;
  for (const auto& r : reads) whole += r;
  CHECK(statuses_in(whole) == std::vector<int>{200, 404, 403, 200, 200});

  // A write between reads: the answers before it leave with its own, before its controllers
  // run; the read after it is answered on its own.
  reads = pipelined_reads(c.server, token,
                          {{"GET", own + "pods"}, {"POST", own + "configmaps"}, {"GET", own + "configmaps/piped"}});
  REQUIRE(reads.size() >= 2);
  CHECK(statuses_in(reads[0]) == std::vector<int>{200, 201});
  whole.clear();
  for (const auto& r : reads) whole += r;
  CHECK(statuses_in(whole) == std::vector<int>{200, 201, 200});
}

TEST_CASE("kubectl auth can-i --list: the rules of the caller's authorizers in a namespace") {
  Cluster c;
  const auto rows = [&](const std::string& who, const std::string& args) {
    auto r = c.kubectl(who, "auth can-i --list " + args);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    std::set<std::string> out;
    for (const auto& row : table_rows(r.out)) {
      std::string line;
      for (const auto& cell : row) line += (line.empty() ? "" : " ") + cell;
      out.insert(line);
    }
    return out;
  };
  // Her own namespace (the guide's rule), nodes, her namespace object, system:basic-user's reviews,
  // and the discovery and public-info paths (twice: two roles grant them).
  auto alice = rows("alice", "-n alice");
  CHECK(alice.count("*.* [] [] [*]") == 1);
  CHECK(alice.count("nodes [] [] [get list watch]") == 1);
  CHECK(alice.count("namespaces [] [alice] [get list watch]") == 1);
  CHECK(alice.count("selfsubjectrulesreviews.authorization.k8s.io [] [] [create]") == 1);
  CHECK(alice.count("[/healthz] [] [get]") == 1);
  // Elsewhere, nothing but what every user has, until a RoleBinding grants more.
  CHECK(rows("alice", "-n bob").count("*.* [] [] [*]") == 0);
  REQUIRE(c.kubectl("admin", "create role r --verb=get --resource=pods --resource-name=p1 -n bob").code == 0);
  REQUIRE(c.kubectl("admin", "create rolebinding rb --role=r --user=alice -n bob").code == 0);
  CHECK(rows("alice", "-n bob").count("pods [] [p1] [get]") == 1);
  CHECK(rows("alice", "-n default").count("pods [] [p1] [get]") == 0);
  // system:masters: everything, from the privileged group and from cluster-admin.
  CHECK(rows("admin", "-n default").count("[*] [] [*]") == 1);
}

TEST_CASE("kubectl auth whoami: the caller as authenticated, a certificate's credential id, impersonation") {
  Cluster c;
  // A client certificate's user carries its SHA-256 fingerprint as x509's credential id; a token's
  // user and an impersonated one carry none. kubectl sends the review as protobuf.
  const auto whoami = [&](const std::string& who, const std::string& args = "") {
    auto r = c.kubectl(who, "auth whoami -o json " + args);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const json::object review = json::parse(r.out).as_object();
    CHECK(review.at("kind") == "SelfSubjectReview");
    CHECK(review.at("apiVersion") == "authentication.k8s.io/v1");
    return json::serialize(review.at("status").at("userInfo"));
  };
  const std::string pem = kubeconfig_data(c.server.admin_kubeconfig(), "client-certificate-data");
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  REQUIRE(cert);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  REQUIRE(X509_digest(cert, EVP_sha256(), md, &len) == 1);
  X509_free(cert);
  std::string fingerprint;
  for (unsigned int i = 0; i < len; ++i) fingerprint += fmt::format("{:02x}", md[i]);
  CHECK(
      whoami("admin") ==
      R"({"username":"admin","groups":["system:masters","system:authenticated"],"extra":{"authentication.kubernetes.io/credential-id":["X509SHA256=)" +
          fingerprint + R"("]}})");
  CHECK(whoami("alice") == R"({"username":"alice","groups":["system:authenticated"]})");
  CHECK(whoami("admin", "--as=bob --as-group=devs") ==
        R"({"username":"bob","groups":["devs","system:authenticated"]})");
  // Answered, never stored: nothing to list, and a status in the body is not taken.
  auto r = c.kubectl("admin", "get selfsubjectreviews");
  CHECK(r.code == 1);
  CHECK(r.err.find("MethodNotAllowed") != std::string::npos);
  r =
      run("echo '{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\",\"status\":{\"userInfo\":"
          "{\"username\":\"forged\"}}}' | /usr/bin/kubectl --kubeconfig " +
              c.server.kubeconfig("alice") + " create -f - -o jsonpath={.status.userInfo.username}",
          c.server.kubeconfig_dir());
  CHECK_MESSAGE(r.code == 0, r.err);
  CHECK(r.out == "alice");
}
