// bench_submit — the submit comparison's server and its gpupool C++ client. Run by bench/run.sh.
//
//   bench_submit serve <dir> [--no-pvc]  start the embedded API server (seed topology) with the claim
//                                     "data" the Deployments mount (bound, as the guide's users mount an
//                                     existing PVC; --no-pvc leaves it missing, so every pod fails the
//                                     scheduler's VolumeBinding PreFilter), write its admin kubeconfig
//                                     path to <dir>/kubeconfig.path, serve until stdin closes
//   bench_submit cxx <kubeconfig> N C [prefix] [namespace]  create N Deployments (tolerations + PVC mount) through
//                                     gpupool::Client, C threads sharing one Client; prints jobs/s and
//                                     client CPU per job (CPU time of this process: the server runs in
//                                     another one)
//   bench_submit raw <kubeconfig> N C [prefix] [namespace]  the baseline load generator: C keep-alive
//                                     HTTP/1.1 connections over TLS (OpenSSL on a plain socket, one
//                                     request in flight per connection, as wrk or hey without
//                                     pipelining), POSTing the same Deployment bodies, serialized before
//                                     the clock starts; prints jobs/s
//   bench_submit compare N C [reps]   issue 18 item 5 in one process: for each of `reps` rounds a fresh
//                                     embedded server (seed topology + the claim), N creates with C
//                                     connections by the raw generator, then a fresh server and N
//                                     creates with C threads through gpupool::Client; prints the
//                                     median of each (jobs/s, and jobs per CPU second of the process,
//                                     server included) and gpupool / raw
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string_view>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "cpu_time.hpp"
#include "gpupool/client.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/kubeconfig.hpp"

namespace json = boost::json;

namespace {

using bench::cpu_seconds;

// The same object bench_py.py's deployment() sends.
json::object deployment(const std::string& name) {
  json::object labels{{"app", name}};
  json::object container{{"name", "trainer"},
                         {"image", "harbor.example.org/library/pytorch:2.1.0-cuda12"},
                         {"command", json::array{"bash", "-c", "python train.py --data /data"}},
                         {"resources", json::object{{"limits", json::object{{"nvidia.com/gpu", "1"}}}}},
                         {"volumeMounts", json::array{json::object{{"name", "data"}, {"mountPath", "/data"}}}}};
  json::object pvc{{"name", "data"}, {"persistentVolumeClaim", json::object{{"claimName", "data"}}}};
  json::array tolerations{
      json::object{{"key", "gpu_node"}, {"operator", "Equal"}, {"value", "invalid"}, {"effect", "NoSchedule"}},
      json::object{{"key", "ssd_node"}, {"operator", "Exists"}}};
  json::object pod_spec{{"containers", json::array{std::move(container)}},
                        {"volumes", json::array{std::move(pvc)}},
                        {"tolerations", std::move(tolerations)}};
  json::object tmpl{{"metadata", json::object{{"labels", labels}}}, {"spec", std::move(pod_spec)}};
  json::object spec{
      {"replicas", 1}, {"selector", json::object{{"matchLabels", labels}}}, {"template", std::move(tmpl)}};
  return json::object{{"apiVersion", "apps/v1"},
                      {"kind", "Deployment"},
                      {"metadata", json::object{{"name", name}, {"labels", labels}}},
                      {"spec", std::move(spec)}};
}

// A fresh embedded server holding the seed topology and, unless `with_pvc` is false, the bound
// claim "data" the benchmark Deployments mount.
std::unique_ptr<gpupool::EmbeddedServer> make_server(bool with_pvc) {
  gpupool::EmbeddedOptions options;
  options.topology = "seed";
  auto server = std::make_unique<gpupool::EmbeddedServer>(options);
  if (with_pvc) {
    // The claim every benchmark Deployment mounts (bench_py.py sends the same objects), created
    // through the API like any user's; the default StorageClass binds it at once.
    gpupool::KubeConfigOptions kopts;
    kopts.path = server->admin_kubeconfig();
    gpupool::Client client(gpupool::load_kubeconfig(kopts));
    client.create(
        gpupool::ResourceRef{"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true}, "default",
        json::object{
            {"apiVersion", "v1"},
            {"kind", "PersistentVolumeClaim"},
            {"metadata", json::object{{"name", "data"}}},
            {"spec", json::object{{"accessModes", json::array{"ReadWriteOnce"}},
                                  {"resources", json::object{{"requests", json::object{{"storage", "10Gi"}}}}}}}});
  }
  return server;
}

int cmd_serve(const std::string& dir, bool with_pvc) {
  auto server = make_server(with_pvc);
  {
    std::ofstream out(dir + "/kubeconfig.path");
    out << server->admin_kubeconfig() << "\n";
  }
  std::string line;
  while (std::getline(std::cin, line)) {}
  return 0;
}

struct Rate {
  double jobs_per_s = 0, cpu_ms_per_job = 0;
  int failed = 0;
};

// Runs `work` on `conc` threads; the rate of `n` jobs since (c0, t0).
Rate run_threads(int n, int conc, const std::function<void()>& work, const std::atomic<int>& failed, double c0,
                 std::chrono::steady_clock::time_point t0) {
  std::vector<std::thread> threads;
  for (int t = 0; t < conc; ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - c0;
  return Rate{n / wall, cpu / n * 1e3, failed.load()};
}

Rate run_cxx(const std::string& kubeconfig, int n, int conc, const std::string& prefix, const std::string& ns) {
  const double c0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  gpupool::KubeConfigOptions kopts;
  kopts.path = kubeconfig;
  gpupool::Client client(gpupool::load_kubeconfig(kopts));
  const gpupool::ResourceRef deployments{"apps", "v1", "deployments", "Deployment", true};
  std::atomic<int> next{0}, failed{0};
  auto work = [&] {
    for (int i = next++; i < n; i = next++) {
      try {
        client.create(deployments, ns,
                      deployment(prefix + "bench-cxx-c" + std::to_string(conc) + "-" + std::to_string(i)));
      } catch (const std::exception& e) {
        if (failed++ == 0) std::fprintf(stderr, "bench_submit: %s\n", e.what());
      }
    }
  };
  return run_threads(n, conc, work, failed, c0, t0);
}

int cmd_cxx(const std::string& kubeconfig, int n, int conc, const std::string& prefix, const std::string& ns) {
  const Rate r = run_cxx(kubeconfig, n, conc, prefix, ns);
  std::printf("gpupool C++ Client, %d client thread(s): %d jobs in %.2f s = %.1f jobs/s, client CPU %.3f ms/job%s\n",
              conc, n, n / r.jobs_per_s, r.jobs_per_s, r.cpu_ms_per_job, r.failed ? " (SOME FAILED)" : "");
  std::printf("RESULT submit_cxx_c%d_n%d %.3f %.4f\n", conc, n, r.jobs_per_s, r.cpu_ms_per_job);
  return r.failed ? 1 : 0;
}

// ---- the raw load generator ---------------------------------------------------------------------

struct SslCtxDeleter {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using SslCtx = std::unique_ptr<SSL_CTX, SslCtxDeleter>;

std::string ssl_error(const char* what) {
  char buf[256];
  ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
  return std::string(what) + ": " + buf;
}

// A client TLS context from the kubeconfig: its CA verifies the server's chain (the host name is
// not checked: the benchmark talks to the address the kubeconfig names), its client certificate
// (if any) authenticates.
SslCtx make_ctx(const gpupool::KubeConfig& kc) {
  SslCtx ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) throw std::runtime_error(ssl_error("SSL_CTX_new"));
  // The server's only protocol: HTTP/1.1 (the embedded server offers no h2; neither is asked of the
  // real one here, so both clients speak the same protocol).
  static const unsigned char alpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx.get(), alpn, sizeof alpn);
  auto pem_bio = [](const std::string& pem) {
    return std::unique_ptr<BIO, decltype(&BIO_free)>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                                     &BIO_free);
  };
  if (!kc.cluster.certificate_authority_pem.empty() && !kc.cluster.insecure_skip_tls_verify) {
    auto bio = pem_bio(kc.cluster.certificate_authority_pem);
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, cert);
      X509_free(cert);
    }
    ERR_clear_error();
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  if (!kc.user.client_certificate_pem.empty()) {
    auto cbio = pem_bio(kc.user.client_certificate_pem);
    X509* cert = PEM_read_bio_X509(cbio.get(), nullptr, nullptr, nullptr);
    auto kbio = pem_bio(kc.user.client_key_pem);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kbio.get(), nullptr, nullptr, nullptr);
    const bool ok =
        cert && key && SSL_CTX_use_certificate(ctx.get(), cert) == 1 && SSL_CTX_use_PrivateKey(ctx.get(), key) == 1;
    X509_free(cert);
    EVP_PKEY_free(key);
    if (!ok) throw std::runtime_error(ssl_error("client certificate"));
  }
  return ctx;
}

// One keep-alive connection: a request written whole, its response read whole (Content-Length or
// chunked), then the next.
class RawConn {
 public:
  RawConn(SSL_CTX* ctx, const std::string& host, const std::string& port) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || !res)
      throw std::runtime_error("cannot resolve " + host);
    fd_ = ::socket(res->ai_family, SOCK_STREAM, 0);
    const int rc = fd_ < 0 ? -1 : ::connect(fd_, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc != 0) throw std::runtime_error("cannot connect to " + host + ":" + port);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ssl_ = SSL_new(ctx);
    SSL_set_fd(ssl_, fd_);
    if (SSL_connect(ssl_) != 1) throw std::runtime_error(ssl_error("TLS handshake"));
  }
  ~RawConn() {
    if (ssl_) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
  }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  /// Sends one request and reads its response; returns the status code.
  int round_trip(const std::string& request) {
    for (std::size_t off = 0; off < request.size();) {
      const int w = SSL_write(ssl_, request.data() + off, static_cast<int>(request.size() - off));
      if (w <= 0) throw std::runtime_error(ssl_error("write"));
      off += static_cast<std::size_t>(w);
    }
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) fill();
    const int status = std::atoi(buf_.c_str() + 9);  // "HTTP/1.1 201 Created"
    std::string head = buf_.substr(0, end);
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
    std::size_t pos = end + 4;
    if (const auto cl = head.find("\r\ncontent-length:"); cl != std::string::npos) {
      const std::size_t len = std::strtoul(head.c_str() + cl + 17, nullptr, 10);
      while (buf_.size() < pos + len) fill();
      buf_.erase(0, pos + len);
    } else if (head.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
      for (;;) {
        std::size_t eol;
        while ((eol = buf_.find("\r\n", pos)) == std::string::npos) fill();
        const std::size_t size = std::strtoul(buf_.c_str() + pos, nullptr, 16);
        pos = eol + 2;
        while (buf_.size() < pos + size + 2) fill();  // the chunk and its CRLF (no trailers)
        pos += size + 2;
        if (size == 0) break;
      }
      buf_.erase(0, pos);
    } else {
      throw std::runtime_error("response without a length");
    }
    return status;
  }

 private:
  void fill() {
    char tmp[16384];
    const int r = SSL_read(ssl_, tmp, sizeof tmp);
    if (r <= 0) throw std::runtime_error(ssl_error("read"));
    buf_.append(tmp, static_cast<std::size_t>(r));
  }
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string buf_;
};

Rate run_raw(const std::string& kubeconfig, int n, int conc, const std::string& prefix, const std::string& ns) {
  gpupool::KubeConfigOptions kopts;
  kopts.path = kubeconfig;
  const gpupool::KubeConfig kc = gpupool::load_kubeconfig(kopts);
  // https://host[:port]
  std::string rest = kc.cluster.server.substr(kc.cluster.server.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  const auto colon = rest.rfind(':');
  const std::string host = colon == std::string::npos ? rest : rest.substr(0, colon);
  const std::string port = colon == std::string::npos ? "443" : rest.substr(colon + 1);
  std::string auth;
  if (!kc.user.token.empty()) auth = "Authorization: Bearer " + kc.user.token + "\r\n";
  // BENCH_RAW_HEADERS: extra header lines ("K: v\r\n"-separated by '|'), to compare request shapes.
  if (const char* extra = std::getenv("BENCH_RAW_HEADERS"))
    for (std::string_view rest_h(extra); !rest_h.empty();) {
      const auto bar = rest_h.find('|');
      auth += std::string(rest_h.substr(0, bar)) + "\r\n";
      rest_h = bar == std::string_view::npos ? std::string_view{} : rest_h.substr(bar + 1);
    }
  // Every request is ready before the clock starts: the generator only writes and reads.
  std::vector<std::string> requests;
  requests.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const std::string body =
        json::serialize(deployment(prefix + "bench-raw-c" + std::to_string(conc) + "-" + std::to_string(i)));
    requests.push_back("POST /apis/apps/v1/namespaces/" + ns + "/deployments HTTP/1.1\r\nHost: " + rest +
                       "\r\nUser-Agent: bench-raw\r\nAccept: application/json\r\nContent-Type: application/json\r\n" +
                       auth + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  SslCtx ctx = make_ctx(kc);
  const double c0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<int> next{0}, failed{0};
  auto work = [&] {
    try {
      RawConn conn(ctx.get(), host, port);
      for (int i = next++; i < n; i = next++)
        if (const int status = conn.round_trip(requests[static_cast<std::size_t>(i)]); status != 201)
          if (failed++ == 0) std::fprintf(stderr, "bench_submit raw: HTTP %d\n", status);
    } catch (const std::exception& e) {
      failed += n;  // the connection is gone: the run does not count
      std::fprintf(stderr, "bench_submit raw: %s\n", e.what());
    }
  };
  return run_threads(n, conc, work, failed, c0, t0);
}

int cmd_raw(const std::string& kubeconfig, int n, int conc, const std::string& prefix, const std::string& ns) {
  const Rate r = run_raw(kubeconfig, n, conc, prefix, ns);
  std::printf(
      "raw keep-alive HTTP/1.1 generator, %d connection(s): %d jobs in %.2f s = %.1f jobs/s, CPU %.3f ms/job%s\n", conc,
      n, n / r.jobs_per_s, r.jobs_per_s, r.cpu_ms_per_job, r.failed ? " (SOME FAILED)" : "");
  std::printf("RESULT submit_raw_c%d_n%d %.3f %.4f\n", conc, n, r.jobs_per_s, r.cpu_ms_per_job);
  return r.failed ? 1 : 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Both clients against the same kind of server in this process: each run gets a fresh server (its
// cost per create grows with what it holds), the two alternate so a change in the machine's load
// hits both, and the medians are compared. Two figures per client: jobs per second of wall time
// (throughput; on a shared machine it moves with the load) and jobs per CPU second of this process,
// which holds the server and the client (what the same two cores could sustain, independent of
// how much of them the process got).
int cmd_compare(int n, int conc, int reps) {
  std::vector<double> raw, cxx, raw_cpu, cxx_cpu;
  int failed = 0;
  for (int r = 0; r < reps; ++r) {
    for (const bool use_raw : {true, false}) {
      auto server = make_server(true);
      const Rate rate = use_raw ? run_raw(server->admin_kubeconfig(), n, conc, "", "default")
                                : run_cxx(server->admin_kubeconfig(), n, conc, "", "default");
      failed += rate.failed;
      (use_raw ? raw : cxx).push_back(rate.jobs_per_s);
      (use_raw ? raw_cpu : cxx_cpu).push_back(1e3 / rate.cpu_ms_per_job);
      std::printf("  round %d %-8s %8.1f jobs/s  %8.1f jobs per CPU second (server + client)\n", r + 1,
                  use_raw ? "raw" : "gpupool", rate.jobs_per_s, 1e3 / rate.cpu_ms_per_job);
      std::fflush(stdout);
    }
  }
  const double mr = median(raw), mc = median(cxx), cr = median(raw_cpu), cc = median(cxx_cpu);
  std::printf(
      "submit vs a raw keep-alive HTTP/1.1 generator, %d creates, %d connection(s)/thread(s), median of %d fresh "
      "servers each:\n  wall: raw %.1f jobs/s, gpupool C++ Client %.1f jobs/s, ratio %.2f\n"
      "  CPU (server + client in this process): raw %.1f jobs per CPU second, gpupool %.1f, ratio %.2f "
      "(target >= 0.90)%s\n",
      n, conc, reps, mr, mc, mc / mr, cr, cc, cc / cr, failed ? " (SOME FAILED)" : "");
  std::printf("RESULT submit_vs_raw_c%d_n%d %.3f %.3f %.3f %.3f %.3f %.3f\n", conc, n, mr, mc, mc / mr, cr, cc,
              cc / cr);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "serve" && argc == 3) return cmd_serve(argv[2], true);
    if (cmd == "serve" && argc == 4 && std::string(argv[3]) == "--no-pvc") return cmd_serve(argv[2], false);
    if (cmd == "cxx" && argc >= 5 && argc <= 7)
      return cmd_cxx(argv[2], std::stoi(argv[3]), std::stoi(argv[4]), argc >= 6 ? argv[5] : "",
                     argc == 7 ? argv[6] : "default");
    if (cmd == "raw" && argc >= 5 && argc <= 7)
      return cmd_raw(argv[2], std::stoi(argv[3]), std::stoi(argv[4]), argc >= 6 ? argv[5] : "",
                     argc == 7 ? argv[6] : "default");
    if (cmd == "compare" && (argc == 4 || argc == 5))
      return cmd_compare(std::stoi(argv[2]), std::stoi(argv[3]), argc == 5 ? std::stoi(argv[4]) : 3);
    std::fprintf(
        stderr,
        "usage: bench_submit serve <dir> [--no-pvc] | cxx <kubeconfig> N concurrency [name-prefix] [namespace] | raw "
        "<kubeconfig> N concurrency [name-prefix] [namespace] | compare N concurrency [reps]\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_submit: %s\n", e.what());
    return 1;
  }
}
