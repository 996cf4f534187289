// The `gpupool` command: argument parsing, help, exit codes, one-line errors, and the seed's
// walkthrough end to end on a persistent embedded cluster (the command run as a user runs it).
#include <doctest/doctest.h>

#include "args.hpp"
#include "commands.hpp"
#include "embedded/server_store.hpp"
#include "gpupool/client.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/version.hpp"
#include "run_cli.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace gpupool::cli;

using gpupool::cli::testing::one_line;
using gpupool::cli::testing::Result;
using gpupool::cli::testing::run_cli;

namespace {}  // namespace

TEST_CASE("parser: long, short, inline and repeated flags, positionals after --") {
  Parser p("gpupool", {FlagSpec{"namespace", 'n', "NS", "", false}});
  CommandSpec spec{"submit mpi",
                   "",
                   "CMD",
                   "",
                   {FlagSpec{"toleration", 0, "T", "", true}, FlagSpec{"gpus", 0, "N", "", false},
                    FlagSpec{"tensorboard", 0, "", "", false}},
                   0,
                   -1};
  auto a = p.parse(spec, {"--toleration", "ssd_node", "--toleration=gpu_node", "-n", "alice", "--gpus=2",
                          "--tensorboard", "--", "python", "--not-a-flag"});
  CHECK(a.all("toleration") == std::vector<std::string>{"ssd_node", "gpu_node"});
  CHECK(a.get("namespace") == "alice");
  CHECK(a.get("gpus") == "2");
  CHECK(a.has("tensorboard"));
  CHECK(a.positionals() == std::vector<std::string>{"python", "--not-a-flag"});
  CHECK(p.parse(spec, {"-nbob"}).get("namespace") == "bob");

  struct Bad {
    std::vector<std::string> args;
    const char* says;
  };
  for (const auto& bad : std::vector<Bad>{{{"--unknown"}, "unknown flag --unknown"},
                                          {{"--gpus"}, "needs a value"},
                                          {{"--gpus", "1", "--gpus", "2"}, "more than once"},
                                          {{"--tensorboard=maybe"}, "takes no value"}}) {
    CAPTURE(bad.says);
    try {
      (void)p.parse(spec, bad.args);
      FAIL("accepted");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find(bad.says) != std::string::npos);
    }
  }
}

TEST_CASE("every command has --help; bad usage exits 2 with one line") {
  for (const auto& c : commands()) {
    std::vector<std::string> args;
    std::istringstream words(c.spec.path);
    for (std::string w; words >> w;) args.push_back(w);
    args.push_back("--help");
    CAPTURE(c.spec.path);
    Result r = run_cli(args);
    CHECK(r.code == 0);
    CHECK(r.out.find("Usage:\n  gpupool " + c.spec.path) != std::string::npos);
    CHECK(r.err.empty());
  }
  struct Row {
    std::vector<std::string> args;
    int code;
    const char* says;
  };
  const std::vector<Row> rows = {
      {{"frobnicate"}, 2, "unknown command \"frobnicate\""},
      {{"submit"}, 2, "needs a subcommand"},
      {{"submit", "mpi", "--gpus", "two", "--name", "x", "--image", "i"}, 2, "--gpus: invalid value \"two\""},
      {{"submit", "mpi", "--name", "x", "--image", "i", "--toleration", "a=b:Sometimes"}, 2, "--toleration"},
      {{"submit", "mpi", "--image", "i"}, 2, "--name"},
      {{"submit", "mpi", "--name", "Bad_Name", "--image", "i"}, 2, "Bad_Name"},
      {{"get"}, 2, "needs NAME"},
      {{"get", "a", "b"}, 2, "takes 1 argument"},
      {{"get", "x", "-o", "xml"}, 2, "--output"},
      {{"taint", "node-1"}, 2, "needs"},
      {{"taint", "node-1", "key=value:Never"}, 2, "taint[0]"},
      {{"wait", "x", "--timeout", "soon"}, 2, "--timeout"},
      {{"wait", "x", "--for", "Dancing"}, 2, "--for"},
      {{"nodes", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, "/nonexistent/kubeconfig"},
      // --loglevel is global: accepted after any command, and before it.
      {{"nodes", "--loglevel", "debug", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, "/nonexistent/kubeconfig"},
      {{"--loglevel", "debug", "nodes", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, "/nonexistent/kubeconfig"},
      {{"nodes", "--loglevel", "chatty", "--kubeconfig", "/nonexistent/kubeconfig"}, 2, "--loglevel"},
      // Before the command only global flags may come: a command flag there is named, with the fix.
      {{"--gpus", "2", "get", "x"}, 2, "unknown flag --gpus before the command; command flags go after it"},
      {{"--kubeconfig", "/k"}, 2, "\"gpupool\" needs a command"},
      {{"-"}, 2, "\"gpupool\" needs a command"},
      {{"--"}, 2, "\"gpupool\" needs a command"},
      {{"--gpus=2"}, 2, "unknown flag --gpus=2 before the command"},
  };
  for (const auto& row : rows) {
    std::string joined;
    for (const auto& a : row.args) joined += a + " ";
    CAPTURE(joined);
    Result r = run_cli(row.args);
    CHECK(r.code == row.code);
    CHECK(one_line(r.err));
    CHECK(r.err.rfind("error: ", 0) == 0);
    CHECK(r.err.find(row.says) != std::string::npos);
    CHECK(r.out.empty());
  }
}

TEST_CASE("no arguments prints the overview") {
  Result r = run_cli({});
  CHECK(r.code == 0);
  CHECK(r.out.find("submit KIND      submit a training job: mpi, tf, pytorch, trainjob, jobset") != std::string::npos);
}

namespace {

/// Runs the installed-style binary with a fresh state directory, like a user at a terminal.
struct Terminal {
  std::filesystem::path state = std::filesystem::temp_directory_path() /
                                ("gpupool-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(rand()));
  Terminal() { std::filesystem::create_directories(state); }
  ~Terminal() { std::filesystem::remove_all(state); }

  Result operator()(const std::string& args) const {
    std::string cmd = "GPUPOOL_STATE_DIR='" + state.string() + "' '" GPUPOOL_CLI "' --embedded seed " + args + " 2>" +
                      (state / "err").string();
    Result r{0, "", ""};
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(state / "err");
    r.err.assign(std::istreambuf_iterator<char>(err), {});
    return r;
  }
};

}  // namespace

TEST_CASE("the seed's walkthrough at a terminal: state persists between commands") {
  Terminal gp;
  Result nodes = gp("nodes");
  REQUIRE(nodes.code == 0);
  CHECK(nodes.out.rfind("NAME                       STATUS   ROLES    AGE     VERSION\n"
                        "cn-beijing.192.168.3.225   Ready    master   2d23h   v1.12.6-aliyun.1\n",
                        0) == 0);
  CHECK(gp("taint cn-beijing.192.168.3.228 gpu_node=invalid:NoSchedule").out ==
        "node/cn-beijing.192.168.3.228 tainted\n");
  CHECK(gp("taint cn-beijing.192.168.3.229 gpu_node=invalid:NoSchedule").code == 0);
  CHECK(gp("taint cn-beijing.192.168.3.230 ssd_node=invalid:NoSchedule").code == 0);
  // The taints persisted: a second process sees them.
  CHECK(gp("nodes -o wide").out.find("ssd_node=invalid:NoSchedule") != std::string::npos);

  const std::string submit =
      "submit mpi --name=mpi-dist --gpus=1 --workers=1 --toleration ssd_node "
      "--image=registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5 "
      "--tensorboard --loglevel debug 'mpirun python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py'";
  Result submitted = gp(submit);
  CAPTURE(submitted.err);
  REQUIRE(submitted.code == 0);
  CHECK(submitted.err.find("debug: POST /apis/kubeflow.org/v1/namespaces/default/mpijobs") != std::string::npos);
  CHECK(submitted.out.find("mpijob.kubeflow.org/mpi-dist created\n") != std::string::npos);
  REQUIRE(gp("wait mpi-dist --for Running --timeout 1m").code == 0);
  // The job is Running once its launcher and worker are; its TensorBoard is a Deployment of its own
  // whose pod may still be starting (as on a real cluster: each pod's kubelet reports it after
  // its startup), so `get` is read again until it shows the URL, for at most a minute.
  Result get = gp("get mpi-dist");
  for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
       get.out.find("TensorBoard is not running yet") != std::string::npos &&
       std::chrono::steady_clock::now() < deadline;)
    get = gp("get mpi-dist");
  CAPTURE(get.out);
  REQUIRE(get.code == 0);
  CHECK(get.out.rfind("STATUS: RUNNING\nNAMESPACE: default\nPRIORITY: N/A\nTRAINING DURATION: ", 0) == 0);
  CHECK(get.out.find("\nNAME      STATUS   TRAINER  AGE") != std::string::npos);
  CHECK(get.out.find("mpi-dist-launcher  192.168.3.230\n") != std::string::npos);
  CHECK(get.out.find("mpi-dist-worker-0  192.168.3.230\n") != std::string::npos);
  CHECK(get.out.find("Your tensorboard will be available on:\nhttp://192.168.3.") != std::string::npos);

  // Submitting the same name again is refused in one line, with nothing created twice.
  std::string quiet = submit;
  quiet.erase(quiet.find("--loglevel debug "), 17);  // debug lines are what --loglevel debug asks for
  Result again = gp(quiet);
  CHECK(again.code == 1);
  CHECK(one_line(again.err));
  CHECK(gp("list").out.find("mpi-dist") != std::string::npos);
  const Result all = gp("list -A");  // every namespace the admin may read, a NAMESPACE column first
  CAPTURE(all.out);
  CHECK(all.out.rfind("NAMESPACE  NAME      STATUS", 0) == 0);
  CHECK(all.out.find("\ndefault    mpi-dist  RUNNING") != std::string::npos);

  CHECK(gp("delete mpi-dist").code == 0);
  CHECK(gp("get mpi-dist").code == 1);

  // The dry run prints manifests kubectl accepts, and stores nothing.
  Result dry = gp("submit mpi --name dry --image busybox --toleration ssd_node --dry-run -o yaml 'echo hi'");
  REQUIRE(dry.code == 0);
  CHECK(dry.out.find("kind: MPIJob") != std::string::npos);
  CHECK(dry.out.find("key: ssd_node") != std::string::npos);
  CHECK(gp("get dry").code == 1);
}

TEST_CASE("cluster serve: kubectl works against it and SIGTERM stops it cleanly") {
  auto dir = std::filesystem::temp_directory_path() / ("gpupool-serve-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  int out[2];
  REQUIRE(::pipe(out) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    std::string kd = (dir / "kc").string();
    ::setenv("GPUPOOL_STATE_DIR", (dir / "state").c_str(), 1);  // not the user's own state
    ::execl(GPUPOOL_CLI, GPUPOOL_CLI, "cluster", "serve", "--topology", "seed", "--kubeconfig-dir", kd.c_str(), "-u",
            "alice", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  // Read until the server says it is ready.
  std::string banner;
  char c;
  while (banner.find("press Ctrl-C to stop\n") == std::string::npos && ::read(out[0], &c, 1) == 1) banner += c;
  CAPTURE(banner);
  auto at = banner.find("admin kubeconfig: ");
  REQUIRE(at != std::string::npos);
  std::string admin = banner.substr(at + 18, banner.find('\n', at) - at - 18);
  std::string cmd = "/usr/bin/kubectl --kubeconfig '" + admin + "' get nodes --no-headers 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string nodes;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) nodes.append(buf, n);
  ::pclose(p);
  CHECK(nodes.find("cn-beijing.192.168.3.230") != std::string::npos);
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  ::close(out[0]);
  std::filesystem::remove_all(dir);
}

TEST_CASE("submit failing half-way under faults: exit 1, one line naming the refusal, nothing left") {
  // The API server runs in this process: the Service (the submission's last object) is refused
  // as a ResourceQuota refuses it, and 20% of requests fail (500, 503, resets, lost answers).
  gpupool::EmbeddedOptions eo;
  eo.users = {"alice"};
  eo.topology = "seed";
  gpupool::EmbeddedServer server(eo);
  gpupool::embedded::store_of(server).add_admission([](gpupool::embedded::AdmissionRequest& r) {
    if (r.operation == gpupool::embedded::AdmissionRequest::Operation::Create && r.type &&
        r.type->resource == "services")
      throw gpupool::embedded::StatusError(403, "Forbidden",
                                           "services \"half-tensorboard\" is forbidden: exceeded quota: no-services, "
                                           "requested: services=1, used: services=0, limited: services=0",
                                           "half-tensorboard", "", "services");
  });
  gpupool::FaultConfig faults;
  faults.seed = 5;
  faults.rules["*"] =
      gpupool::FaultRule{.internal_error = 0.05, .unavailable = 0.05, .connection_reset = 0.05, .lost_response = 0.05};
  server.set_faults(faults);
  const auto err = std::filesystem::temp_directory_path() / ("gpupool-cli-half-" + std::to_string(::getpid()));
  const std::string cmd = std::string("'" GPUPOOL_CLI "' --kubeconfig '") + server.kubeconfig("alice") +
                          "' submit job --name half --image busybox --pvc-create half-data:standard:1Gi:/data "
                          "--tensorboard 'echo hi' >/dev/null 2>'" +
                          err.string() + "'";
  const int status = std::system(cmd.c_str());
  const gpupool::FaultCounters injected = server.fault_counters();
  server.set_faults({});
  std::ifstream in(err);
  const std::string stderr_text{std::istreambuf_iterator<char>(in), {}};
  std::filesystem::remove(err);
  CAPTURE(stderr_text);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  // One `warning: retrying (n/10) ...` line per retry of a fault, then the one error line.
  std::vector<std::string> lines;
  {
    std::istringstream split(stderr_text);
    for (std::string l; std::getline(split, l);) lines.push_back(l);
  }
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.back().rfind("error: Forbidden (403): services \"half-tensorboard\" is forbidden: exceeded quota", 0) ==
        0);
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) CHECK(lines[i].rfind("warning: retrying (", 0) == 0);
  CHECK(injected.total() > 0);
  // Nothing of the submission remains: PVC, Job, TensorBoard Deployment (and what they made).
  gpupool::KubeConfigOptions ko;
  ko.path = server.admin_kubeconfig();
  gpupool::Client admin(gpupool::load_kubeconfig(ko));
  for (const gpupool::ResourceRef& ref :
       {gpupool::ResourceRef{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true},
        gpupool::ResourceRef{"batch", "v1", "jobs", "Job", true},
        gpupool::ResourceRef{"apps", "v1", "deployments", "Deployment", true},
        gpupool::ResourceRef{"apps", "v1", "replicasets", "ReplicaSet", true},
        gpupool::ResourceRef{"", "v1", "services", "Service", true},
        gpupool::ResourceRef{"", "v1", "pods", "Pod", true}}) {
    CAPTURE(ref.resource);
    CHECK(admin.list_all(ref, "alice").empty());
  }
}

TEST_CASE("the command's own OpenSSL start: a client certificate, the server verified, a wrong key named at once") {
  // The command's process starts OpenSSL on a thread of its own, with flags of its own
  // (cli/main.cpp, common/openssl_errors.cpp): a full handshake from it must still read a PEM
  // certificate and key, send them and verify the server (a start without the digests' legacy
  // names could do none of it), and a key that does not load is the kubeconfig's error, said once.
  gpupool::EmbeddedOptions eo;
  eo.topology = "none";
  eo.users = {"alice", "bob"};
  gpupool::EmbeddedServer server(eo);
  const std::string cli = std::string("GPUPOOL_CACHE_DIR=off '") + GPUPOOL_CLI + "' --loglevel debug --kubeconfig '";
  const Result ok = gpupool::cli::testing::run_shell(cli + server.cert_kubeconfig("alice") + "' list");
  CAPTURE(ok.out);
  CHECK(ok.code == 0);
  // alice's lists (anonymous would be refused), over a TLS connection, in a table.
  CHECK(ok.out.find("GET /apis/batch/v1/namespaces/alice/jobs?") != std::string::npos);
  CHECK(ok.out.find("403") == std::string::npos);
  CHECK(ok.out.find(", new connection: TCP ") != std::string::npos);
  CHECK(ok.out.ends_with("NAME  STATUS  TRAINER  AGE  NODE\n"));

  // alice's certificate with bob's key.
  std::ifstream in(server.cert_kubeconfig("alice"));
  std::string text{std::istreambuf_iterator<char>(in), {}};
  std::ifstream bob_in(server.cert_kubeconfig("bob"));
  const std::string bob{std::istreambuf_iterator<char>(bob_in), {}};
  auto key_of = [](const std::string& t) {
    const auto at = t.find("client-key-data: ");
    REQUIRE(at != std::string::npos);
    return t.substr(at, t.find('\n', at) - at);
  };
  const std::string alice_key = key_of(text);
  text.replace(text.find(alice_key), alice_key.size(), key_of(bob));
  const auto wrong = std::filesystem::temp_directory_path() / ("gpupool-wrong-key-" + std::to_string(::getpid()));
  std::ofstream(wrong) << text;
  std::filesystem::permissions(wrong, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const Result refused = gpupool::cli::testing::run_shell(cli + wrong.string() + "' list");
  std::filesystem::remove(wrong);
  CAPTURE(refused.out);
  CHECK(refused.code == 1);
  CHECK(refused.out.find("retrying") == std::string::npos);
  CHECK(
      refused.out.ends_with("error: kubeconfig: user: the client certificate or key cannot be loaded (PEM expected, "
                            "and the key must match the certificate): check client-certificate(-data) and "
                            "client-key(-data), or the exec plugin's clientCertificateData and clientKeyData\n"));
}

TEST_CASE("an unreachable cluster: one line naming the address and what to check, exit 1, no retries") {
  // A port that was just bound and closed again refuses connections.
  gpupool::EmbeddedOptions eo;
  eo.topology = "none";
  gpupool::EmbeddedServer server(eo);
  const std::string url = server.url();
  const std::string kubeconfig = server.admin_kubeconfig();
  const auto copy =
      std::filesystem::temp_directory_path() / ("gpupool-dead-" + std::to_string(::getpid()) + ".kubeconfig");
  std::filesystem::copy_file(kubeconfig, copy, std::filesystem::copy_options::overwrite_existing);
  server.stop();
  Result r = run_cli({"--kubeconfig", copy.string(), "list"});
  std::filesystem::remove(copy);
  CHECK(r.code == 1);
  CHECK(r.err == "error: cannot reach " + url + ": connection refused (is the cluster up? check --context)\n");
}

namespace {

/// A listener on 127.0.0.1 that answers each connection's first bytes with `answer` and closes it.
class RawServer {
 public:
  explicit RawServer(std::string answer) : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      for (int c; (c = ::accept(fd_, nullptr, nullptr)) >= 0; ::close(c)) {
        char buf[512];
        [[maybe_unused]] auto got = ::recv(c, buf, sizeof buf, 0);
        [[maybe_unused]] auto sent = ::send(c, answer_.data(), answer_.size(), MSG_NOSIGNAL);
      }
    });
  }
  ~RawServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string answer_;
  int fd_ = -1, port_ = 0;
  std::thread thread_;
};

/// `gpupool list` against `server`, in this process and as the command's own process: their
/// exit codes and what each printed on stderr.
std::pair<Result, Result> list_against(const RawServer& server) {
  const auto dir = std::filesystem::temp_directory_path() / ("gpupool-raw-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto kubeconfig = dir / "kubeconfig";
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n"
                               "    server: "
                            << server.url()
                            << "\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context:\n"
                               "    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: abc\n";
  std::filesystem::permissions(kubeconfig, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  Result in_process = run_cli({"--kubeconfig", kubeconfig.string(), "list"});
  Result command = gpupool::cli::testing::run_shell("GPUPOOL_CACHE_DIR=" + (dir / "cache").string() + " " +
                                                    GPUPOOL_CLI + " --kubeconfig " + kubeconfig.string() + " list");
  std::filesystem::remove_all(dir);
  return {in_process, command};
}

const std::string kInsecure =
    "insecure-skip-tls-verify is set in the kubeconfig, so the server's identity is not checked\n";

}  // namespace

TEST_CASE("a server that refuses the TLS handshake: one line at once, in OpenSSL's or kubectl's words") {
  SUBCASE("a plain HTTP server at an https:// address (kubectl: server gave HTTP response to HTTPS client)") {
    RawServer plain("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    const std::string expected = "error: cannot complete the TLS handshake with " + plain.url() +
                                 ": the server answered in plain HTTP; if it serves no TLS, set the kubeconfig's "
                                 "cluster.server to http://" +
                                 plain.url().substr(8) + ", else check the port\n";
    auto [in_process, command] = list_against(plain);
    CHECK(in_process.code == 1);
    CHECK(in_process.err == expected);
    CHECK(command.code == 1);
    CHECK(command.out.ends_with(kInsecure + expected));  // the command's warning, then the error: no retries
  }
  SUBCASE("a TLS alert: OpenSSL's text, also from the command, which starts OpenSSL without its error texts") {
    // A fatal handshake_failure alert record (TLS 1.0 record version, as servers send before they
    // chose a version). The command's process loads OpenSSL's texts only to word an error
    // (cli/main.cpp); this test's process loaded them at start: both must word it alike.
    RawServer alert(std::string("\x15\x03\x01\x00\x02\x02\x28", 7));
    const std::string expected = "error: cannot complete the TLS handshake with " + alert.url() +
                                 ": error:0A000410:SSL routines::sslv3 alert handshake failure\n";
    auto [in_process, command] = list_against(alert);
    CHECK(in_process.code == 1);
    CHECK(in_process.err == expected);
    CHECK(command.code == 1);
    CHECK(command.out.ends_with(kInsecure + expected));
  }
  SUBCASE("alerts about the client's certificate or the protocol version say what to do") {
    struct Case {
      char description;  // the alert's (RFC 8446 section 6)
      std::string text;
    };
    const std::vector<Case> cases = {
        {'\x74',
         "error:0A00045C:SSL routines::tlsv13 alert certificate required; the server asks for a client certificate: "
         "set client-certificate(-data) and client-key(-data) for the kubeconfig's user"},
        {'\x2a',
         "error:0A000412:SSL routines::sslv3 alert bad certificate; the server refused the kubeconfig's client "
         "certificate: renew it, or check that the cluster's CA signed it"},
        {'\x46',
         "error:0A00042E:SSL routines::tlsv1 alert protocol version; the server and gpupool share no TLS version "
         "(gpupool speaks TLS 1.2 and 1.3)"},
    };
    for (const auto& c : cases) {
      RawServer alert(std::string("\x15\x03\x01\x00\x02\x02", 6) + c.description);
      auto [in_process, command] = list_against(alert);
      CHECK(in_process.err == "error: cannot complete the TLS handshake with " + alert.url() + ": " + c.text + "\n");
    }
  }
}

TEST_CASE("messages of the daily-loop trial (issue #14 item 13)") {
  // A global flag without its value.
  Result r = run_cli({"--profile"});
  CHECK(r.code == 2);
  CHECK(r.err == "error: flag --profile needs a value; see \"gpupool --help\"\n");
  // Versions.
  r = run_cli({"--version"});
  CHECK(r.code == 0);
  CHECK(r.out == "gpupool " + std::string(gpupool::version()) + "\n");
  Terminal gp;
  Result v = gp("version");
  CHECK(v.code == 0);
  CHECK(v.out == "Client Version: gpupool " + std::string(gpupool::version()) + "\nServer Version: v1.32.0\n");
  // A byte unit as people write it.
  Result mem = gp("submit job --name m --image busybox --memory 16GB -- true");
  CHECK(mem.code == 2);
  CHECK(mem.err.find("did you mean \"16Gi\" (16×2^30 bytes) or \"16G\" (16×10^9)?") != std::string::npos);
  // No quota at all is said, not printed as nothing.
  CHECK(gp("quota").out == "no ResourceQuota in namespace \"default\"\n");
  // A Deployment never succeeds: refused at once, not after the timeout.
  REQUIRE(gp("submit deployment --name d --image busybox -- sleep 100").code == 0);
  Result w = gp("wait d --for Succeeded --timeout 10m");
  CHECK(w.code == 1);
  CHECK(w.err ==
        "error: deployment \"d\" never succeeds or finishes: a Deployment runs until it is deleted; wait for "
        "Running instead\n");
  // A profile that does not exist is bad usage.
  Result p = gp("--profile nosuch nodes");
  CHECK(p.code == 2);
  CHECK(p.err.rfind("error: --profile: nosuch: no built-in profile of this name", 0) == 0);
  // A claim of a class the cluster lacks: created, with a warning naming the classes there are.
  Result c = gp("pvc create lost --storage-class nosuch");
  CHECK(c.code == 0);
  CHECK(c.err.find("warning: storage class \"nosuch\" does not exist in this cluster (it has: cephfs, "
                   "managed-nfs-storage, standard)") != std::string::npos);
  // Each kind lists only its own flags.
  CHECK(run_cli({"submit", "pod", "--name", "x", "--image", "busybox", "--workers", "2"}).code == 2);
  CHECK(run_cli({"submit", "tf", "--help"}).out.find("--mpi-api") == std::string::npos);
  CHECK(run_cli({"submit", "mpi", "--help"}).out.find("--mpi-api") != std::string::npos);
  // --dry-run=client needs no kubeconfig: -n's namespace, else "default".
  const auto render =
      gpupool::cli::testing::run_shell("HOME=/nonexistent KUBECONFIG= '" GPUPOOL_CLI
                                       "' submit job --name x --image busybox --dry-run=client -o yaml -- true");
  CHECK(render.code == 0);
  CHECK(render.out.find("namespace: default") != std::string::npos);
}

TEST_CASE("wait on a terminal: a failure clears the progress line before the error") {
  gpupool::EmbeddedOptions eo;
  eo.topology = "seed";
  eo.manual_clock = false;
  gpupool::EmbeddedServer server(eo);
  // A job whose only pod exits 1 at once (the embedded kubelet's simulation annotations).
  auto job = boost::json::parse(R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"fails"},
    "spec":{"backoffLimit":0,"template":{"metadata":{"annotations":{"gpupool.io/simulate-startup":"0s",
      "gpupool.io/simulate-duration":"0s","gpupool.io/simulate-exit-code":"1"}},
      "spec":{"restartPolicy":"Never","tolerations":[{"operator":"Exists"}],
              "containers":[{"name":"main","image":"busybox"}]}}}})")
                 .as_object();
  gpupool::embedded::store_of(server).create(gpupool::embedded::store_of(server).type("batch", "jobs"), "default", job);
  std::ostringstream out, err;
  Io io{out, err, /*out_is_terminal=*/true};
  const int code =
      run({"--kubeconfig", server.admin_kubeconfig(), "wait", "fails", "--for", "Succeeded", "--timeout", "1m"}, io);
  CHECK(code == 1);
  CHECK(err.str().find("failed") != std::string::npos);
  const std::string shown = out.str();
  CAPTURE(shown);
  REQUIRE(shown.find('\r') != std::string::npos);  // the progress line was drawn
  CHECK(shown.size() >= 4);
  CHECK(shown.substr(shown.size() - 4) == "\r\x1b[K");  // and cleared before the error
}

TEST_CASE("the server's warnings are printed, one line each") {
  Terminal gp;
  Result r = gp("submit job --name envdup --image busybox -e A=1 -e A=2 'sleep 1'");
  CAPTURE(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err ==
        "warning: spec.template.spec.containers[0].env[1]: hides previous definition of \"A\", which may be dropped "
        "when using apply\n");
}

TEST_CASE("submit trainjob on the seed: tolerations reach the pods through the runtime patch; get shows them") {
  Terminal gp;
  REQUIRE(gp("taint cn-beijing.192.168.3.228 gpu_node=invalid:NoSchedule").code == 0);
  REQUIRE(gp("taint cn-beijing.192.168.3.229 gpu_node=invalid:NoSchedule").code == 0);
  REQUIRE(gp("taint cn-beijing.192.168.3.230 ssd_node=invalid:NoSchedule").code == 0);
  Result submitted =
      gp("submit trainjob --name tj --gpus 1 --workers 2 --toleration ssd_node --image busybox "
         "'python train.py'");
  CAPTURE(submitted.err);
  REQUIRE(submitted.code == 0);
  CHECK(submitted.out.find("trainjob.trainer.kubeflow.org/tj created\n") != std::string::npos);
  REQUIRE(gp("wait tj --for Running --timeout 1m").code == 0);
  Result get = gp("get tj");
  CAPTURE(get.out);
  REQUIRE(get.code == 0);
  CHECK(get.out.rfind("STATUS: RUNNING\n", 0) == 0);
  CHECK(get.out.find("TRAINJOB") != std::string::npos);
  // Both nodes of the job on the only node its toleration admits (two GPUs there).
  for (const char* index : {"0", "1"}) {
    const std::string pod = std::string("tj-node-0-") + index + "-";
    const auto at = get.out.find(pod);
    REQUIRE(at != std::string::npos);
    const auto eol = get.out.find('\n', at);
    CHECK(get.out.substr(at, eol - at).find("192.168.3.230") != std::string::npos);
  }
  CHECK(gp("list").out.find("TRAINJOB") != std::string::npos);
  // A JobSet is a kind of its own.
  Result js = gp("submit jobset --name js --workers 1 --image busybox --toleration ssd_node 'echo hi'");
  CAPTURE(js.err);
  CHECK(js.out.find("jobset.jobset.x-k8s.io/js created\n") != std::string::npos);
  CHECK(gp("delete tj").code == 0);
  CHECK(gp("get tj").code == 1);
}

TEST_CASE("submit trainjob -q: the first of two 2-GPU TrainJobs on a 2-GPU queue runs, get shows the second pending") {
  Terminal gp;
  // The README's queue: LocalQueue "team" on a 2-GPU ClusterQueue.
  REQUIRE(gp("apply -f '" GPUPOOL_SOURCE_DIR "/examples/kueue/queues.yaml'").code == 0);
  for (const char* name : {"tj1", "tj2"}) {
    Result r = gp(std::string("submit trainjob --name ") + name +
                  " --gpus 1 --workers 2 --toleration all -q team --image busybox 'python train.py'");
    CAPTURE(r.err);
    REQUIRE(r.code == 0);
  }
  Result first = gp("get tj1");
  CAPTURE(first.out);
  CHECK(first.out.find("QUEUE: team (admitted)\n") != std::string::npos);
  CHECK(first.out.find("tj1-node-0-1-") != std::string::npos);
  Result second = gp("get tj2");
  CAPTURE(second.out);
  CHECK(second.out.rfind("STATUS: PENDING\n", 0) == 0);
  CHECK(second.out.find("QUEUE: team (pending #1: couldn't assign flavors to pod set node: insufficient unused quota "
                        "for nvidia.com/gpu in flavor p100, 2 more needed)\n") != std::string::npos);
  // The first gone, its quota goes to the second, which runs.
  REQUIRE(gp("delete tj1").code == 0);
  REQUIRE(gp("wait tj2 --for Running --timeout 1m").code == 0);
  CHECK(gp("get tj2").out.find("QUEUE: team (admitted)\n") != std::string::npos);
}
