// The embedded cluster's shared state (issue #16): journal, snapshot, compaction, locking, sessions,
// permissions. Cross-process behaviour (kill -9, concurrent commands) is in tests/cli/state_test.cpp.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "embedded/journal.hpp"
#include "embedded/server_store.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/embedded_state.hpp"
#include "gpupool/error.hpp"

using namespace gpupool;
using namespace gpupool::embedded;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("gpupool-state-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

json::object config_map(const std::string& name) {
  return json::object{{"metadata", json::object{{"name", name}}}, {"data", json::object{{"k", name}}}};
}

std::string md(const json::object& o, std::string_view key) { return field_value(o, "metadata." + std::string(key)); }

EmbeddedOptions with_state(const std::string& state_file) {
  EmbeddedOptions o;
  o.topology = "seed";
  o.state_file = state_file;
  return o;
}

}  // namespace

TEST_CASE("an acknowledged write survives a server that never saved: the journal brings it back") {
  TempDir dir;
  const std::string state = (dir.path / "s.json").string();
  std::uint64_t revision = 0;
  {
    EmbeddedServer a(with_state(state));
    auto& cms = store_of(a).type("", "configmaps");
    for (int i = 0; i < 20; ++i) store_of(a).create(cms, "default", config_map("cm-" + std::to_string(i)));
    store_of(a).remove(cms, "default", "cm-7");
    store_of(a).mutate(cms, "default", "cm-3", [](json::object& o) { o["data"].as_object()["k"] = "changed"; });
    revision = store_of(a).revision();
    // Dropped as kill -9 would leave it: no save_state(), so no snapshot, only the journal.
  }
  CHECK_FALSE(fs::exists(state));
  REQUIRE(fs::exists(state + ".log"));

  EmbeddedServer b(with_state(state));
  auto& cms = store_of(b).type("", "configmaps");
  CHECK(store_of(b).find(cms, "default", "cm-19"));
  CHECK_FALSE(store_of(b).find(cms, "default", "cm-7"));
  CHECK(store_of(b).get(cms, "default", "cm-3").at("data").at("k") == "changed");
  CHECK(store_of(b).find(store_of(b).type("", "nodes"), "", "cn-beijing.192.168.3.228"));  // the topology, once
  // resourceVersions keep growing; a watch from before the restart is 410 Gone, as after an etcd
  // compaction, so a client relists instead of missing what happened in between.
  CHECK(store_of(b).revision() >= revision);
  auto created = store_of(b).create(cms, "default", config_map("after"));
  CHECK(std::stoull(std::string(created.at("metadata").at("resourceVersion").as_string())) > revision);
  try {
    store_of(b).open_watch(cms, "default", revision - 3);
    FAIL("a watch from before the restart was accepted");
  } catch (const StatusError& e) {
    CHECK(e.code() == 410);
    CHECK(e.reason() == "Expired");
  }
}

TEST_CASE("save_state folds the journal into the snapshot; loading it again gives the same objects") {
  TempDir dir;
  const std::string state = (dir.path / "s.json").string();
  {
    EmbeddedServer a(with_state(state));
    store_of(a).create(store_of(a).type("", "configmaps"), "default", config_map("kept"));
    a.save_state(state);
    CHECK(fs::file_size(state + ".log") == 0);
    CHECK(slurp(state).find("\"kept\"") != std::string::npos);
  }
  EmbeddedServer b(with_state(state));
  CHECK(store_of(b).find(store_of(b).type("", "configmaps"), "default", "kept"));
}

TEST_CASE("a torn last journal line was never acknowledged and is dropped; other damage is refused") {
  TempDir dir;
  const std::string state = (dir.path / "s.json").string();
  {
    EmbeddedServer a(with_state(state));
    a.save_state(state);
    store_of(a).create(store_of(a).type("", "configmaps"), "default", config_map("whole"));
  }
  SUBCASE("torn tail") {
    std::ofstream(state + ".log", std::ios::app)
        << R"({"rv":999999,"op":"put","group":"","resource":"configmaps","obj)";
    EmbeddedServer b(with_state(state));
    CHECK(store_of(b).find(store_of(b).type("", "configmaps"), "default", "whole"));
    CHECK(store_of(b).revision() < 999999);
    // The next record starts on a line of its own: the journal stays readable.
    store_of(b).create(store_of(b).type("", "configmaps"), "default", config_map("next"));
    CHECK(load_state(state).at("revision").to_number<std::uint64_t>() == store_of(b).revision());
  }
  SUBCASE("a corrupt line in the middle") {
    std::string log = slurp(state + ".log");
    std::ofstream(state + ".log", std::ios::trunc) << "{not json\n" << log;
    try {
      EmbeddedServer b(with_state(state));
      FAIL("a corrupt journal was loaded");
    } catch (const ConfigError& e) {
      CHECK(e.file() == state + ".log");
      CHECK(e.line() == 1);
      CHECK(std::string(e.what()).find("gpupool cluster reset") != std::string::npos);
    }
  }
  SUBCASE("a truncated snapshot") {
    std::string snap = slurp(state);
    std::ofstream(state, std::ios::trunc) << snap.substr(0, snap.size() / 2);
    try {
      EmbeddedServer b(with_state(state));
      FAIL("a truncated snapshot was loaded");
    } catch (const ConfigError& e) {
      CHECK(e.file() == state);
      CHECK(std::string(e.what()).find("truncated or corrupt") != std::string::npos);
      CHECK(std::string(e.what()).find("gpupool cluster reset") != std::string::npos);
    }
    CHECK(slurp(state).size() == snap.size() / 2);  // refused, never silently replaced
  }
}

TEST_CASE("compaction while writers write: every write is in snapshot + journal") {
  TempDir dir;
  const std::string state = (dir.path / "s.json").string();
  constexpr int kThreads = 4, kEach = 150;
  {
    EmbeddedOptions o = with_state(state);
    o.journal_limit = 8 * 1024;  // compact often
    EmbeddedServer a(o);
    auto& cms = store_of(a).type("", "configmaps");
    std::atomic<bool> done{false};
    std::thread compactor([&] {
      while (!done) a.advance(1ms);  // each sync() compacts once the journal passes the limit
    });
    std::vector<std::thread> writers;
    for (int t = 0; t < kThreads; ++t)
      writers.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) store_of(a).create(cms, "default", config_map(fmt::format("w{}-{}", t, i)));
      });
    for (auto& w : writers) w.join();
    done = true;
    compactor.join();
    CHECK(fs::exists(state));  // compacted at least once (the first time past 8 KiB of writes)
    // ... so the journal (one line per committed change) no longer holds every write. (Counted in
    // records, not bytes: how many writes land between two compactions depends on the threads'
    // timing, which TSan changes.)
    const std::string log = slurp(state + ".log");
    CHECK(std::count(log.begin(), log.end(), '\n') < kThreads * kEach);
  }
  EmbeddedServer b(with_state(state));
  auto& cms = store_of(b).type("", "configmaps");
  int found = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kEach; ++i) found += store_of(b).find(cms, "default", fmt::format("w{}-{}", t, i)) != nullptr;
  CHECK(found == kThreads * kEach);
}

TEST_CASE("every namespace holds the default ServiceAccount and kube-root-ca.crt; the CA lasts with the state") {
  // kube-controller-manager's serviceaccount controller and root CA publisher, and a CA kept with
  // the state (in its private directory of keys) so that the published CA stays true.
  TempDir dir;
  const std::string state = (dir.path / "embedded-seed.json").string();
  const fs::path ca_file = dir.path / "embedded-seed" / "ca.pem";
  auto opts = with_state(state);
  opts.users = {"alice"};
  const auto sa_uid = [](Store& s, const std::string& ns) {
    const auto sa = s.find(s.type("", "serviceaccounts"), ns, "default");
    return sa ? md(*sa, "uid") : std::string();
  };
  const auto root_ca = [](Store& s, const std::string& ns) {
    return s.find(s.type("", "configmaps"), ns, "kube-root-ca.crt");
  };
  const std::string description =
      "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
      "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
      "clusters.";
  std::string ca, rv;
  {
    EmbeddedServer server(opts);
    Store& s = store_of(server);
    ca = server.ca_pem();
    for (const std::string ns : {"default", "kube-system", "kube-public", "kube-node-lease", "alice"}) {
      CAPTURE(ns);
      CHECK(!sa_uid(s, ns).empty());
      const auto cm = root_ca(s, ns);
      REQUIRE(cm);
      CHECK(cm->at("data").as_object() == json::object{{"ca.crt", ca}});
      CHECK(cm->at("metadata").at("annotations").as_object() ==
            json::object{{"kubernetes.io/description", description}});
    }
    // A namespace created later gets both; a deleted one is created again; a changed one put back.
    s.create(s.type("", "namespaces"), "", json::object{{"metadata", json::object{{"name", "late"}}}});
    CHECK(!sa_uid(s, "late").empty());
    REQUIRE(root_ca(s, "late"));
    const std::string uid = sa_uid(s, "alice");
    s.remove(s.type("", "serviceaccounts"), "alice", "default");
    CHECK(!sa_uid(s, "alice").empty());
    CHECK(sa_uid(s, "alice") != uid);
    s.mutate(s.type("", "configmaps"), "alice", "kube-root-ca.crt", [](json::object& cm) {
      cm["data"] = json::object{{"ca.crt", "forged"}, {"extra", "x"}};
      cm["metadata"].as_object()["annotations"] = json::object{{"mine", "1"}};
    });
    const auto cm = root_ca(s, "alice");
    CHECK(cm->at("data").as_object() == json::object{{"ca.crt", ca}});
    CHECK(cm->at("metadata").at("annotations").as_object() ==
          json::object{{"mine", "1"}, {"kubernetes.io/description", description}});
    s.remove(s.type("", "configmaps"), "alice", "kube-root-ca.crt");
    REQUIRE(root_ca(s, "alice"));
    rv = md(*root_ca(s, "alice"), "resourceVersion");
  }
  CHECK(mode_of(ca_file) == 0600);
  CHECK(mode_of(ca_file.parent_path()) == 0700);
  {
    // The same CA again: nothing to publish anew.
    EmbeddedServer server(opts);
    CHECK(server.ca_pem() == ca);
    CHECK(md(*root_ca(store_of(server), "alice"), "resourceVersion") == rv);
  }
  std::ofstream(ca_file) << "not a CA";
  {
    // An unusable CA file: a new CA, published in every namespace.
    EmbeddedServer server(opts);
    CHECK(server.ca_pem() != ca);
    CHECK(root_ca(store_of(server), "alice")->at("data").at("ca.crt").as_string() == server.ca_pem());
    CHECK(slurp(ca_file).find(server.ca_pem()) == 0);
  }
}

TEST_CASE("the state directory is private and holds no secrets") {
  TempDir dir;
  fs::permissions(dir.path, fs::perms::all);  // 0777: tightened on first use
  std::string token;
  {
    EmbeddedSessionOptions so;
    so.topology = "seed";
    so.state_dir = dir.path.string();
    so.serve = true;
    so.server.users = {"alice"};
    EmbeddedSession s(so);
    store_of(*s.server()).create(store_of(*s.server()).type("", "configmaps"), "alice", config_map("x"));
    const std::string kc = slurp(s.server()->kubeconfig("alice"));
    token = kc.substr(kc.find("token: ") + 7, 48);
    CHECK(mode_of(dir.path) == 0700);
    CHECK(mode_of(s.paths().kubeconfig_dir) == 0700);
    for (const auto& f :
         {s.paths().endpoint, s.paths().lock, s.paths().snapshot + ".log", s.server()->admin_kubeconfig(),
          s.server()->kubeconfig("alice"), s.server()->cert_kubeconfig("alice")})
      CHECK_MESSAGE(mode_of(f) == 0600, f);
    s.close();
    CHECK(mode_of(s.paths().snapshot) == 0600);
  }
  REQUIRE(token.size() == 48);
  for (const auto& e : fs::directory_iterator(dir.path)) {
    if (!e.is_regular_file()) continue;
    const std::string text = slurp(e.path());
    CHECK_MESSAGE(text.find(token) == std::string::npos, e.path());
    CHECK_MESSAGE(text.find("PRIVATE KEY") == std::string::npos, e.path());
    CHECK_MESSAGE(text.find("client-key-data") == std::string::npos, e.path());
  }
}

TEST_CASE("sessions: one owner serves, others join; a second server is refused; a command waits its turn") {
  TempDir dir;
  auto opts = [&](bool serve) {
    EmbeddedSessionOptions so;
    so.topology = "seed";
    so.state_dir = dir.path.string();
    so.serve = serve;
    return so;
  };
  {
    EmbeddedSession a(opts(true));
    REQUIRE_FALSE(a.joined());
    auto running = running_embedded(a.paths());
    REQUIRE(running);
    CHECK(running->pid == ::getpid());
    CHECK(running->url == a.url());

    EmbeddedSession b(opts(false));
    CHECK(b.joined());
    CHECK(b.server() == nullptr);
    CHECK(b.url() == a.url());
    CHECK(b.admin_kubeconfig() == a.admin_kubeconfig());

    auto c = opts(true);
    c.may_join = false;
    try {
      EmbeddedSession second(c);
      FAIL("a second server for the same state started");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("is already served by pid " + std::to_string(::getpid())) != std::string::npos);
    }
    try {
      reset_embedded(a.paths());
      FAIL("reset while served");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("stop it first: gpupool cluster stop seed") != std::string::npos);
    }
  }
  CHECK_FALSE(running_embedded(EmbeddedStatePaths::of("seed", dir.path.string())));

  auto d = std::make_unique<EmbeddedSession>(opts(false));
  REQUIRE_FALSE(d->joined());
  std::promise<std::string> told;
  auto e_opts = opts(false);
  e_opts.wait_notice_after = 0ms;
  e_opts.on_wait = [&](const std::string& m) { told.set_value(m); };
  auto e = std::async(std::launch::async, [&] { return std::make_unique<EmbeddedSession>(e_opts); });
  const std::string notice = told.get_future().get();  // told while d holds the lock
  CHECK(notice.find("waiting for the embedded cluster's lock held by pid " + std::to_string(::getpid())) == 0);
  try {
    reset_embedded(d->paths());
    FAIL("reset while in use");
  } catch (const Error& err) {
    CHECK(std::string(err.what()).find("is in use by pid") != std::string::npos);
  }
  d->close();
  auto owner = e.get();  // it had to wait for d
  CHECK_FALSE(owner->joined());
  CHECK(owner->server() != nullptr);
  owner->close();
  const auto paths = owner->paths();
  REQUIRE(fs::exists(paths.snapshot));
  reset_embedded(paths);
  CHECK_FALSE(fs::exists(paths.snapshot));
  CHECK_FALSE(fs::exists(paths.snapshot + ".log"));
}
