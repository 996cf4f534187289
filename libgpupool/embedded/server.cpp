// EmbeddedServer: wires the store, the REST API, the HTTPS front, the PKI and the kubeconfigs.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <openssl/rand.h>

#include <condition_variable>
#include <deque>
#include <thread>

#include <sstream>
#include "embedded/admission.hpp"
#include "embedded/api.hpp"
#include "embedded/base64.hpp"
#include "embedded/controllers.hpp"
#include "embedded/controllers_util.hpp"
#include "embedded/crd_schema.hpp"
#include "embedded/disruption.hpp"
#include "embedded/endpoints.hpp"
#include "embedded/faults.hpp"
#include "embedded/http_server.hpp"
#include "embedded/journal.hpp"
#include "embedded/kubelet.hpp"
#include "embedded/local_runtime.hpp"
#include "embedded/namespace_controllers.hpp"
#include "embedded/quota.hpp"
#include "embedded/rbac.hpp"
#include "embedded/scheduler.hpp"
#include "embedded/server_store.hpp"
#include "embedded/service_account_tokens.hpp"
#include "embedded/streams.hpp"
#include "embedded/tls.hpp"
#include "embedded/volumes.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/names.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/topology.hpp"

namespace gpupool {

using namespace gpupool::embedded;
namespace fs = std::filesystem;

namespace {

std::string random_token() {
  unsigned char bytes[24];
  if (RAND_bytes(bytes, sizeof bytes) != 1)
    throw Error("embedded server: cannot generate a token (OpenSSL RAND_bytes)");
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

/// A kubeconfig holds a token or a key: created 0600 from the start (never readable by others, not
/// even for a moment), and complete or absent.
void write_private(const fs::path& path, const std::string& text) { write_file_durably(path.string(), text); }

std::string kubeconfig_text(const std::string& server, const std::string& ca_pem, const std::string& user,
                            const std::string& ns, const std::string& user_block) {
  const std::string cluster = "gpupool-embedded";
  const std::string context = user + "@" + cluster;
  return fmt::format(
      "apiVersion: v1\n"
      "kind: Config\n"
      "clusters:\n"
      "- name: {cluster}\n"
      "  cluster:\n"
      "    server: {server}\n"
      "    certificate-authority-data: {ca}\n"
      "users:\n"
      "- name: {user}\n"
      "  user:\n"
      "{user_block}"
      "contexts:\n"
      "- name: {context}\n"
      "  context:\n"
      "    cluster: {cluster}\n"
      "    user: {user}\n"
      "    namespace: {ns}\n"
      "current-context: {context}\n"
      "preferences: {{}}\n",
      fmt::arg("cluster", cluster), fmt::arg("server", server), fmt::arg("ca", base64_encode(ca_pem)),
      fmt::arg("user", user), fmt::arg("user_block", user_block), fmt::arg("context", context), fmt::arg("ns", ns));
}

std::string cert_block(const KeyPair& kp) {
  return fmt::format("    client-certificate-data: {}\n    client-key-data: {}\n", base64_encode(kp.cert_pem),
                     base64_encode(kp.key_pem));
}

/// The cluster's CA: a cluster with a state keeps its own, as a real cluster does (the published
/// kube-root-ca.crt and the kubeconfigs of earlier runs stay true); a new one when there is none
/// or the saved one is unusable; a fresh one for a cluster without a state.
CertificateAuthority cluster_ca(const std::string& state_file) {
  if (state_file.empty()) return CertificateAuthority();
  const std::string file = embedded_ca_file(state_file);
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (auto saved = CertificateAuthority::from_pem(text.str())) return std::move(*saved);
  CertificateAuthority fresh;
  write_private(file, fresh.pem());
  return fresh;
}

// The `kubernetes` Service in `default` that kube-apiserver's kubernetesservice controller creates
// (pkg/controlplane/controller/kubernetesservice CreateOrUpdateMasterServiceIfNeeded, v1.32): the
// first address of the service range, port 443 "https" to the server's own port, no selector,
// single-stack. Created when missing (a fresh cluster, or one whose state lost it); an existing
// one is left as it is, as that controller leaves it. Its Endpoints are not written: the oracle's
// endpoint reconciler is off too (FIDELITY.md).
void create_kubernetes_service(embedded::Store& store, int port) {
  const auto& services = store.type("", "services");
  if (store.find(services, "default", "kubernetes")) return;
  json::object labels{{"provider", "kubernetes"}, {"component", "apiserver"}};
  json::object https{{"protocol", "TCP"}, {"port", 443}, {"name", "https"}, {"targetPort", port}};
  store.create(services, "default",
               json::object{{"metadata", json::object{{"name", "kubernetes"}, {"labels", std::move(labels)}}},
                            {"spec", json::object{{"ports", json::array{std::move(https)}},
                                                  {"clusterIP", "10.96.0.1"},
                                                  {"ipFamilyPolicy", "SingleStack"},
                                                  {"sessionAffinity", "None"},
                                                  {"type", "ClusterIP"}}}});
}

}  // namespace

struct EmbeddedServer::Impl {
  EmbeddedOptions options;
  Clock clock;
  std::unique_ptr<Store> store;
  // The control plane over the store (declared after it: destroyed first).
  std::unique_ptr<QuotaController> quota;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Controllers> controllers;
  std::unique_ptr<VolumeController> volumes;
  std::unique_ptr<EndpointsController> endpoints;
  std::unique_ptr<NamespaceControllers> namespaces;
  std::unique_ptr<ClusterRoleAggregationController> role_aggregation;
  std::unique_ptr<DisruptionController> disruption;
  std::unique_ptr<Kubelet> kubelet;
  std::unique_ptr<ServiceAccountTokens> tokens;
  std::unique_ptr<TokensController> token_secrets;  // after tokens (it signs with them)
  std::unique_ptr<Api> api;
  std::unique_ptr<Streams> streams;
  FaultInjector faults;
  CertificateAuthority ca;
  std::unique_ptr<HttpServer> http;
  std::shared_ptr<FileJournal> journal;  // with a state file: every committed write, durably
  std::string dir;
  bool own_dir = false;
  std::mutex stop_mu;
  bool stopped = false;
  // With a real clock a ticker lets the kubelet make progress as time passes.
  std::thread ticker;
  std::mutex tick_mu;
  std::condition_variable tick_cv;
  bool tick_stop = false;

  void sync() {
    // Time moves on from what the answered writes led to: the controllers have seen them first.
    store->settle();
    controllers->sync();
    kubelet->sync();
    scheduler->sync();
    if (journal && journal->size() > options.journal_limit) compact();
  }

  void compact() {
    store->settle();  // what the controllers make of the answered writes belongs in it
    // Nothing written since the snapshot (a read-only command): it stands as it is.
    journal->sync();
    if (journal->size() == 0 && std::filesystem::exists(options.state_file) &&
        !std::filesystem::exists(options.state_file + ".log.old"))
      return;
    journal->compact([this] { return store->snapshot(); });
  }

  Response logs(const LogRequest& lr) {
    LogOptions lo;
    lo.container = lr.container;
    lo.previous = lr.previous;
    lo.tail_lines = lr.tail_lines;
    lo.timestamps = lr.timestamps;
    Response resp;
    resp.content_type = "text/plain";
    resp.body = kubelet->logs(lr.ns, lr.pod, lo);
    if (!lr.follow) return resp;
    // Follow: what was printed so far, then each new line as the clock makes the container print it.
    struct Feed {
      std::mutex mu;
      std::condition_variable cv;
      std::deque<std::string> lines;
      bool ended = false;
    };
    auto feed = std::make_shared<Feed>();
    Kubelet* k = kubelet.get();
    const auto id = k->follow(
        lr.ns, lr.pod, lo,
        [feed](const std::string& line) {
          std::lock_guard lk(feed->mu);
          feed->lines.push_back(line);
          feed->cv.notify_all();
        },
        [feed] {
          std::lock_guard lk(feed->mu);
          feed->ended = true;
          feed->cv.notify_all();
        });
    std::string first = std::move(resp.body);
    resp.body.clear();
    resp.stream = [k, id, feed, first](const ChunkWriter& write, const std::atomic<bool>& stopping) {
      bool alive = first.empty() || write(first);
      while (alive && !stopping) {
        std::unique_lock lk(feed->mu);
        feed->cv.wait_for(lk, std::chrono::milliseconds(200), [&] { return feed->ended || !feed->lines.empty(); });
        auto lines = std::move(feed->lines);
        feed->lines.clear();
        const bool ended = feed->ended;
        lk.unlock();
        for (const auto& l : lines)
          if (!(alive = write(l))) break;
        if (ended) break;
        if (lines.empty() && !(alive = write(""))) break;  // the client hung up
      }
      k->unfollow(id);
    };
    return resp;
  }

  explicit Impl(EmbeddedOptions o)
      : options(std::move(o)),
        clock(options.manual_clock ? Clock::manual() : Clock::real()),
        faults(options.faults),
        ca(cluster_ca(options.state_file)) {}
};

RunMode parse_run_mode(const std::string& text, const std::string& field) {
  if (text == "simulate") return RunMode::Simulate;
  if (text == "local") return RunMode::Local;
  if (text == "container") return RunMode::Container;
  throw ValidationError(field, text,
                        "must be \"simulate\" (the default: containers are simulated), \"local\" "
                        "(their commands run as local processes) or \"container\" (their images run with "
                        "podman or docker)");
}

const char* to_string(RunMode mode) noexcept {
  switch (mode) {
    case RunMode::Local:
      return "local";
    case RunMode::Container:
      return "container";
    default:
      return "simulate";
  }
}

EmbeddedServer::EmbeddedServer(const EmbeddedOptions& options) : impl_(std::make_unique<Impl>(options)) {
  auto& im = *impl_;
  for (const auto& u : im.options.users) {
    validate_dns1123_label(u, "users");  // the user's namespace carries its name
    if (u == "admin") throw ValidationError("users", u, "\"admin\" is reserved for the cluster administrator");
  }
  if (im.options.mpijob_version != "v1" && im.options.mpijob_version != "v2beta1")
    throw ValidationError("mpijob_version", im.options.mpijob_version, "must be \"v1\" or \"v2beta1\"");
  Store::Options so;
  so.mpijob_version = im.options.mpijob_version;
  im.store = std::make_unique<Store>(im.clock, so);
  install_admission_plugins(*im.store);
  // The default scheduler, plus every scheduler a built-in site profile names (e.g. iiis's
  // orion-scheduler) and any the caller adds: a workload rendered for a site is scheduled here too.
  SchedulerOptions sched;
  for (const auto& name : Profile::builtin_names())
    if (auto s = Profile::builtin(name).gpu.scheduler_name; !s.empty()) sched.scheduler_names.push_back(s);
  for (const auto& s : im.options.scheduler_names) sched.scheduler_names.push_back(s);
  im.scheduler = std::make_unique<Scheduler>(*im.store, im.clock, std::move(sched));
  im.controllers = std::make_unique<Controllers>(*im.store, im.clock, im.options.kubeflow_operators,
                                                 im.options.terminated_pod_gc_threshold);
  im.volumes = std::make_unique<VolumeController>(*im.store, im.clock);
  im.endpoints = std::make_unique<EndpointsController>(*im.store, im.clock);
  im.namespaces = std::make_unique<NamespaceControllers>(*im.store, im.ca.cert_pem());
  im.role_aggregation = std::make_unique<ClusterRoleAggregationController>(*im.store);
  im.disruption = std::make_unique<DisruptionController>(*im.store, im.clock);
  // ResourceQuota is the last admission plugin (after DefaultStorageClass and the other mutating
  // plugins), as in kube-apiserver's plugin order.
  im.quota = std::make_unique<QuotaController>(*im.store);
  im.kubelet = std::make_unique<Kubelet>(*im.store, im.clock);
  std::string container_runtime;
  if (im.options.run == RunMode::Container && (container_runtime = find_container_runtime()).empty())
    throw Error(
        "run mode container: neither podman nor docker is on PATH; install one of them, or use --run local to run "
        "the commands as local processes");
  if (im.options.run != RunMode::Simulate) {
    // Pod directories live beside the state file (kept across commands), else in a fresh
    // temporary directory of this server's.
    std::string root;
    const bool own = im.options.state_file.empty();
    if (own) {
      std::string tmpl = (std::filesystem::temp_directory_path() / "gpupool-local-XXXXXX").string();
      if (!::mkdtemp(tmpl.data())) throw Error("run mode local: cannot create a temporary directory for the pods");
      root = tmpl;
    } else {
      // embedded-T.json -> embedded-T.local (EmbeddedStatePaths::local_dir)
      root = std::filesystem::absolute(im.options.state_file).replace_extension(".local").string();
    }
    im.kubelet->run_locally(root, own, container_runtime);
    if (!im.options.stream_handler) im.options.stream_handler = local_stream_handler(*im.kubelet->local_runtime());
  }
  Api::Options ao;
  ao.server_version = im.options.server_version;
  im.api = std::make_unique<Api>(*im.store, ao);
  im.tokens = std::make_unique<ServiceAccountTokens>(*im.store, im.ca.key_pem());
  im.token_secrets = std::make_unique<TokensController>(*im.store, *im.tokens, im.ca.cert_pem());
  im.api->set_token_issuer(im.tokens.get());
  if (LocalRuntime* local = im.kubelet->local_runtime())
    // The kubelet's token manager (pkg/kubelet/token): a TokenRequest for the pod's account,
    // bound to the pod, with the projection's audience and lifetime.
    local->set_token_requester(
        [&im](const json::object& pod, const json::object& projection) -> std::optional<std::string> {
          json::object spec{
              {"expirationSeconds", util::int_of(&projection, "expirationSeconds", 3600)},
              {"boundObjectRef",
               json::object{
                   {"kind", "Pod"}, {"apiVersion", "v1"}, {"name", util::name_of(pod)}, {"uid", util::uid_of(pod)}}}};
          if (const std::string aud = util::string_of(&projection, "audience"); !aud.empty())
            spec["audiences"] = json::array{json::value(aud)};
          try {
            const json::object tr = im.tokens->request(
                util::namespace_of(pod), util::string_of(util::object_at(pod, {"spec"}), "serviceAccountName"),
                json::object{{"spec", std::move(spec)}}, im.clock.now());
            return std::string(tr.at("status").at("token").as_string());
          } catch (const StatusError&) {
            return std::nullopt;  // the account or the pod gone meanwhile
          }
        });
  im.api->set_log_provider([&im](const LogRequest& lr) { return im.logs(lr); });
  im.streams = std::make_unique<Streams>(*im.store, im.options.stream_handler, im.options.websockets);
  im.api->set_connect_handler(
      [streams = im.streams.get()](const Request& r, const std::string& ns, const std::string& name,
                                   const std::string& sub) { return streams->connect(r, ns, name, sub); });

  // A saved state replaces the topology: the cluster continues where the last command left it
  // (the snapshot, then the journal of writes committed after it).
  bool restored = false;
  if (!im.options.state_file.empty()) {
    json::object snap = load_state(im.options.state_file);
    if (!snap.empty()) {
      im.store->restore(snap);
      restored = true;
    }
  }
  // "none" (or empty): no nodes, as a control plane without kubelets starts; nodes are created
  // through the API (they then get the not-ready taint, as TaintNodesByCondition gives them).
  std::optional<Topology> topo;
  if (!im.options.topology.empty() && im.options.topology != "none" && !restored) {
    topo =
        fs::exists(im.options.topology) ? Topology::load(im.options.topology) : Topology::builtin(im.options.topology);
    // Its RuntimeClasses are created as a client would (validated like any): each is tried as a
    // dry run first, so that a refused one stops the start with one error naming it before
    // anything is written (or journaled: a later start would take that state for the cluster).
    const auto& runtime_classes = im.store->type("node.k8s.io", "runtimeclasses");
    WriteOptions dry;
    dry.dry_run = true;
    for (std::size_t i = 0; i < topo->runtime_classes.size(); ++i) {
      try {
        im.store->create(runtime_classes, "", topo->runtime_classes[i].to_object(), dry);
      } catch (const StatusError& e) {
        throw ConfigError(im.options.topology, fmt::format("runtimeClasses[{}]", i), e.what());
      }
    }
  }
  if (!im.options.state_file.empty()) {
    im.journal = std::make_shared<FileJournal>(im.options.state_file);
    im.store->set_journal(im.journal);
  }

  // Namespaces every cluster has, then one per user.
  const auto& ns_type = im.store->type("", "namespaces");
  std::vector<std::string> namespaces{"default", "kube-system", "kube-public", "kube-node-lease"};
  namespaces.insert(namespaces.end(), im.options.users.begin(), im.options.users.end());
  for (const auto& ns : namespaces) {
    if (im.store->find(ns_type, "", ns)) continue;
    im.store->create(
        ns_type, "",
        json::object{
            {"metadata", json::object{{"name", ns}, {"labels", json::object{{"kubernetes.io/metadata.name", ns}}}}}});
  }
  create_system_priority_classes(*im.store);
  create_bootstrap_rbac(*im.store);
  // The Kubeflow operators' CRDs, as a cluster with the operators installed lists them.
  const auto& crd_type = im.store->type("apiextensions.k8s.io", "customresourcedefinitions");
  auto shipped_crds = crd::kubeflow_crds(im.options.mpijob_version);
  for (auto& c : crd::kueue_crds()) shipped_crds.push_back(std::move(c));  // and Kueue's (controller_kueue.cpp)
  for (const auto& c : shipped_crds) {
    const auto* md = c->if_contains("metadata");
    const auto* name = md && md->is_object() ? md->as_object().if_contains("name") : nullptr;
    if (name && name->is_string() && !im.store->find(crd_type, "", name->as_string()))
      im.store->create(crd_type, "", *c);
  }
  // Kubeflow Trainer's default ClusterTrainingRuntimes, as its manifests install them.
  const auto& ctr_type = im.store->type("trainer.kubeflow.org", "clustertrainingruntimes");
  for (auto& r : crd::default_cluster_training_runtimes()) {
    const std::string name(r.at("metadata").at("name").as_string());
    if (im.store->find(ctr_type, "", name)) continue;
    if (ctr_type.schema) crd::apply_defaults(r, *ctr_type.schema);  // as a create through the API defaults it
    im.store->create(ctr_type, "", std::move(r));
  }
  if (!restored) {
    // StorageClasses: "standard", the default class (as kind and minikube install one), and every
    // class a built-in site profile names (iiis: managed-nfs-storage, ...), all provisioned
    // immediately by the embedded provisioner.
    std::vector<std::string> classes{"standard"};
    for (const auto& name : Profile::builtin_names())
      for (const auto& [alias, cls] : Profile::builtin(name).storage_classes)
        if (std::find(classes.begin(), classes.end(), cls) == classes.end()) classes.push_back(cls);
    const auto& sc_type = im.store->type("storage.k8s.io", "storageclasses");
    for (const auto& cls : classes) {
      json::object md{{"name", cls}};
      if (cls == "standard") md["annotations"] = json::object{{"storageclass.kubernetes.io/is-default-class", "true"}};
      im.store->create(sc_type, "",
                       json::object{{"metadata", std::move(md)},
                                    {"provisioner", kEmbeddedProvisioner},
                                    {"reclaimPolicy", "Delete"},
                                    {"volumeBindingMode", "Immediate"}});
    }
  }
  if (topo) {
    const auto& nodes = im.store->type("", "nodes");
    WriteOptions wo;
    wo.keep_creation_timestamp = true;
    wo.seeded_node = true;
    const auto now = std::chrono::time_point_cast<std::chrono::system_clock::duration>(im.clock.now());
    {
      WritingAs kubelet("kubelet");  // each node registers itself (its kubelet's create)
      for (const auto& n : topo->nodes) im.store->create(nodes, "", n.to_node_object(now), wo);
    }
    const auto& runtime_classes = im.store->type("node.k8s.io", "runtimeclasses");
    for (const auto& rc : topo->runtime_classes) im.store->create(runtime_classes, "", rc.to_object());
  }

  im.sync();
  im.store->start_watch_cache();

  // PKI and identities.
  const KeyPair server_cert = im.ca.issue_server();
  HttpServer::Options ho;
  ho.port = im.options.port;
  ho.cert_pem = server_cert.cert_pem;
  ho.key_pem = server_cert.key_pem;
  ho.client_ca_pem = im.ca.cert_pem();
  std::map<std::string, std::string> user_tokens;
  for (const auto& u : im.options.users) {
    const auto tok = random_token();
    user_tokens[u] = tok;
    ho.tokens[tok] = Identity{u, {"system:authenticated"}, {}, {}, {}};
  }
  ho.authenticate_token = [tokens = im.tokens.get(), clock = &im.clock](std::string_view token) {
    return tokens->authenticate(token, clock->now());
  };
  const Api* api = im.api.get();
  Store* store = im.store.get();
  im.http = std::make_unique<HttpServer>(
      std::move(ho),
      [api, store](const Request& r) {
        // A request sees what every answered write led to (Store::DeferDispatch).
        store->settle();
        if (r.method == "GET" || r.method == "HEAD" || r.method == "OPTIONS") return api->handle(r);
        // A write is answered before its controllers run, as kube-apiserver answers before its
        // controllers see the change: they run once the answer is out (Response::after).
        auto deferred = std::make_shared<Store::DeferDispatch>(*store);
        Response resp = api->handle(r);
        deferred->answered();  // before the answer can reach the client
        resp.after = [deferred] { deferred->finish(); };
        return resp;
      },
      im.faults);
  create_kubernetes_service(*im.store, im.http->port());
  im.sync();

  // Kubeconfigs.
  if (im.options.kubeconfig_dir.empty()) {
    char tmpl[] = "/tmp/gpupool-embedded-XXXXXX";
    if (!::mkdtemp(tmpl)) throw Error("embedded server: cannot create a directory under /tmp for the kubeconfigs");
    im.dir = tmpl;
    im.own_dir = true;
  } else {
    im.dir = im.options.kubeconfig_dir;
    std::error_code ec;
    fs::create_directories(im.dir, ec);
    if (ec) throw ConfigError(im.dir, "kubeconfig_dir", "cannot create the directory: " + ec.message());
  }
  const std::string server = url();
  write_private(admin_kubeconfig(), kubeconfig_text(server, im.ca.cert_pem(), "admin", "default",
                                                    cert_block(im.ca.issue_client("admin", {"system:masters"}))));
  for (const auto& u : im.options.users) {
    write_private(kubeconfig(u),
                  kubeconfig_text(server, im.ca.cert_pem(), u, u, fmt::format("    token: {}\n", user_tokens[u])));
    write_private(cert_kubeconfig(u),
                  kubeconfig_text(server, im.ca.cert_pem(), u, u, cert_block(im.ca.issue_client(u, {}))));
  }
  if (!im.options.manual_clock) {
    im.ticker = std::thread([&im] {
      std::unique_lock lk(im.tick_mu);
      while (!im.tick_cv.wait_for(lk, std::chrono::milliseconds(200), [&] { return im.tick_stop; })) {
        lk.unlock();
        im.sync();
        lk.lock();
      }
    });
  }
}

EmbeddedServer::~EmbeddedServer() { stop(); }

void EmbeddedServer::stop() {
  std::lock_guard lk(impl_->stop_mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  if (impl_->http) impl_->http->stop();
  if (impl_->kubelet) impl_->kubelet->stop_local();
  if (impl_->ticker.joinable()) {
    {
      std::lock_guard tl(impl_->tick_mu);
      impl_->tick_stop = true;
    }
    impl_->tick_cv.notify_all();
    impl_->ticker.join();
  }
  if (impl_->own_dir) {
    std::error_code ec;
    fs::remove_all(impl_->dir, ec);
  }
}

std::string EmbeddedServer::url() const { return fmt::format("https://127.0.0.1:{}", port()); }
int EmbeddedServer::port() const { return impl_->http->port(); }
const std::string& EmbeddedServer::ca_pem() const { return impl_->ca.cert_pem(); }
const std::string& EmbeddedServer::kubeconfig_dir() const { return impl_->dir; }
std::string EmbeddedServer::admin_kubeconfig() const { return (fs::path(impl_->dir) / "admin.kubeconfig").string(); }
std::string EmbeddedServer::kubeconfig(const std::string& user) const {
  return (fs::path(impl_->dir) / (user + ".kubeconfig")).string();
}
std::string EmbeddedServer::cert_kubeconfig(const std::string& user) const {
  return (fs::path(impl_->dir) / (user + "-cert.kubeconfig")).string();
}

std::chrono::system_clock::time_point EmbeddedServer::now() const {
  return std::chrono::time_point_cast<std::chrono::system_clock::duration>(impl_->clock.now());
}

void EmbeddedServer::advance(std::chrono::nanoseconds d) {
  impl_->store->settle();  // the answered writes' controllers act at the time they were answered
  impl_->clock.advance(d);
  impl_->sync();
}

int EmbeddedServer::disconnect_streams() { return impl_->http->disconnect_streams(); }

void EmbeddedServer::restart() {
  std::lock_guard lk(impl_->stop_mu);
  if (impl_->stopped) throw Error("embedded server: restart() after stop(); create a new server instead");
  impl_->http->restart();
}

void EmbeddedServer::set_faults(const FaultConfig& faults) { impl_->faults.configure(faults); }
FaultCounters EmbeddedServer::fault_counters() const { return impl_->faults.counters(); }

void EmbeddedServer::save_state(const std::string& path) const {
  if (impl_->journal && path == impl_->options.state_file) {
    impl_->compact();  // the snapshot now holds the journal's writes; the journal starts empty
    return;
  }
  impl_->store->settle();
  write_file_durably(path, json::serialize(impl_->store->snapshot()));
}

embedded::Store& EmbeddedServerAccess::store(EmbeddedServer& server) {
  server.impl_->store->settle();
  return *server.impl_->store;
}

}  // namespace gpupool
