// Reliability under faults (issue 8 item 1): the Cluster facade and the REST client against the
// embedded API server injecting 429 / 500 / 503 / connection resets / lost responses, watches cut
// mid-stream, a server restart, and cancellation of wait() and logs().
#include <doctest/doctest.h>

#include "gpupool/client.hpp"
#include "gpupool/cluster.hpp"
#include "gpupool/embedded_cluster.hpp"
#include "gpupool/error.hpp"
#include "gpupool/submit_options.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace gpupool;
namespace json = boost::json;

namespace {

const ResourceRef kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
const ResourceRef kBatchJobs{"batch", "v1", "jobs", "Job", true};

std::string name_of(const json::object& o) { return std::string(o.at("metadata").at("name").as_string()); }
std::string rv_of(const json::object& o) { return std::string(o.at("metadata").at("resourceVersion").as_string()); }

KubeConfig config_for(const std::string& path) {
  KubeConfigOptions o;
  o.path = path;
  return load_kubeconfig(o);
}

Workload small_job(const std::string& name, const std::string& duration = "") {
  SubmitOptions o;
  o.kind = "job";
  o.name = name;
  o.image = "busybox";
  o.command = "echo hello";
  Workload w = to_workload(o);
  if (!duration.empty()) w.annotations["gpupool.io/simulate-duration"] = duration;
  return w;
}

/// Records what a callback thread saw and lets the test wait for it (no sleeping).
template <class T>
struct Seen {
  std::mutex m;
  std::condition_variable cv;
  std::vector<T> items;
  void add(T item) {
    std::lock_guard lock(m);
    items.push_back(std::move(item));
    cv.notify_all();
  }
  /// Waits until pred(items) holds; false after `limit` (a guard against a hang, not a delay).
  template <class Pred>
  bool wait_until(Pred pred, std::chrono::seconds limit = 60s) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, limit, [&] { return pred(items); });
  }
  std::vector<T> copy() {
    std::lock_guard lock(m);
    return items;
  }
};

}  // namespace

TEST_CASE("1,000 submissions from 8 threads under 20% faults: exactly 1,000 workloads, none lost or duplicated") {
  EmbeddedOptions eo;
  eo.users = {"alice"};
  EmbeddedServer server(eo);
  // 20% of all requests fail: 429 with Retry-After (5%), 500 (5%), 503 (5%), a reset before the
  // request is read (2.5%), and a reset after it was carried out, the answer lost (2.5%).
  FaultConfig faults;
  faults.seed = 8;
  faults.rules["*"] = FaultRule{.too_many_requests = 0.05,
                                .internal_error = 0.05,
                                .unavailable = 0.05,
                                .connection_reset = 0.025,
                                .retry_after_seconds = 1,
                                .lost_response = 0.025};
  // The client's waits are recorded instead of slept: the test runs at the server's speed.
  std::mutex sleeps_mu;
  std::vector<std::chrono::milliseconds> sleeps;
  ConnectOptions co{.kubeconfig = server.kubeconfig("alice")};
  co.retry.sleep = [&](std::chrono::milliseconds d) {
    std::lock_guard lock(sleeps_mu);
    sleeps.push_back(d);
  };
  // The 429 answers the client retried after. Not every injected 429 is one: an answer to a read
  // sent with others (pipelined) is dropped unread when the reads before it already found what
  // was asked, or when the connection fails further on and the reads are sent again one by one.
  std::atomic<std::uint64_t> retried_429{0};
  co.logger = [&](LogLevel, const std::string& message) {
    if (message.find("the server answered 429") != std::string::npos) ++retried_429;
  };
  Cluster cluster = Cluster::connect(co);
  server.set_faults(faults);

  constexpr int kThreads = 8, kPerThread = 125;
  std::atomic<int> succeeded{0};
  std::mutex errors_mu;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        try {
          SubmitResult r = cluster.submit(small_job("soak-" + std::to_string(t) + "-" + std::to_string(i)));
          if (r.created.size() == 1) ++succeeded;
        } catch (const Error& e) {
          std::lock_guard lock(errors_mu);
          errors.emplace_back(e.what());
        }
      }
    });
  for (auto& th : threads) th.join();
  const FaultCounters injected = server.fault_counters();
  server.set_faults({});

  // Every call succeeded (with 10 retries a request fails only if 11 attempts in a row do:
  // 0.2^11 ~ 2e-8); any error would have to be a gpupool::Error with a message.
  for (const auto& e : errors) CHECK_MESSAGE(!e.empty(), "an error without a message");
  CHECK(errors.empty());
  CHECK(succeeded == kThreads * kPerThread);
  // Exactly 1,000 Jobs, each from its own submission (the submission-id annotation).
  json::array jobs = cluster.client().list_all(kBatchJobs, "alice");
  std::set<std::string> names, ids;
  for (const auto& j : jobs) {
    names.insert(name_of(j.as_object()));
    ids.insert(std::string(j.at("metadata").at("annotations").at("gpupool.io/submission-id").as_string()));
  }
  CHECK(jobs.size() == 1000);
  CHECK(names.size() == 1000);
  CHECK(ids.size() == 1000);
  // Faults really happened, of every kind, about 20% of requests.
  CHECK(injected.requests >= 1000);
  CHECK(injected.too_many_requests > 0);
  CHECK(injected.internal_error > 0);
  CHECK(injected.unavailable > 0);
  CHECK(injected.connection_reset > 0);
  CHECK(injected.lost_response > 0);
  CHECK(injected.total() * 100 >= injected.requests * 15);
  // Retry-After was honoured: at least one wait of >= 1 s per 429 retried after (most injected ones).
  const auto long_waits =
      std::count_if(sleeps.begin(), sleeps.end(), [](std::chrono::milliseconds d) { return d >= 1000ms; });
  CHECK(retried_429 * 10 >= injected.too_many_requests * 9);
  CHECK(static_cast<std::uint64_t>(long_waits) >= retried_429);
  std::printf(
      "fault soak: %llu requests, %llu faults injected (429: %llu, 500: %llu, 503: %llu, reset: %llu, "
      "lost response: %llu), %d submissions succeeded, %zu errors, %zu Jobs stored\n",
      static_cast<unsigned long long>(injected.requests), static_cast<unsigned long long>(injected.total()),
      static_cast<unsigned long long>(injected.too_many_requests),
      static_cast<unsigned long long>(injected.internal_error), static_cast<unsigned long long>(injected.unavailable),
      static_cast<unsigned long long>(injected.connection_reset),
      static_cast<unsigned long long>(injected.lost_response), succeeded.load(), errors.size(), jobs.size());
}

TEST_CASE("a watch survives 100 forced mid-stream disconnects without missing or repeating an event") {
  EmbeddedOptions eo;
  eo.users = {"alice"};
  EmbeddedServer server(eo);
  ClientOptions co;
  co.retry.sleep = [](std::chrono::milliseconds) {};
  Client c(config_for(server.kubeconfig("alice")), co);
  const std::string start = c.list(kConfigMaps, "").resource_version;

  constexpr int kCuts = 100;
  Seen<std::pair<std::string, std::string>> events;  // ("ADDED name", resourceVersion)
  CancelToken cancel;
  std::thread watcher([&] {
    c.watch(
        kConfigMaps, "", {.resource_version = start},
        [&](const WatchEvent& e) {
          events.add({e.type + " " + name_of(e.object), rv_of(e.object)});
          return true;
        },
        cancel);
  });
  auto has = [](const std::string& what) {
    return [what](const auto& items) {
      return std::any_of(items.begin(), items.end(), [&](const auto& e) { return e.first == what; });
    };
  };
  auto cm = [](const std::string& name) {
    return json::object{
        {"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}, {"data", {{"k", "v"}}}};
  };
  int cut_total = 0, cuts_that_hit = 0;
  for (int i = 0; i < kCuts; ++i) {
    const std::string name = "cm-" + std::to_string(i);
    c.create(kConfigMaps, "", cm(name));
    REQUIRE(events.wait_until(has("ADDED " + name)));
    // The stream that delivered the event is open: cut it, then change things while it is down.
    const int cut = server.disconnect_streams();
    cut_total += cut;
    if (cut > 0) ++cuts_that_hit;
    c.create(kConfigMaps, "", cm("gap-" + std::to_string(i)));
    if (i % 2 == 1) c.remove(kConfigMaps, "", "cm-" + std::to_string(i - 1));
  }
  REQUIRE(events.wait_until(has("ADDED gap-" + std::to_string(kCuts - 1))));
  REQUIRE(events.wait_until(has("DELETED cm-" + std::to_string(kCuts - 2))));
  cancel.cancel();
  watcher.join();

  CHECK(cuts_that_hit == kCuts);
  CHECK(cut_total >= kCuts);
  const auto seen = events.copy();
  std::map<std::string, int> count;
  for (const auto& e : seen) ++count[e.first];
  for (int i = 0; i < kCuts; ++i) {
    CHECK(count["ADDED cm-" + std::to_string(i)] == 1);
    CHECK(count["ADDED gap-" + std::to_string(i)] == 1);
    if (i % 2 == 0) CHECK(count["DELETED cm-" + std::to_string(i)] == 1);
  }
  CHECK(seen.size() == 2 * kCuts + kCuts / 2);
  // In order: resourceVersions only grow (a repeat after a resume would go back).
  for (std::size_t i = 1; i < seen.size(); ++i) CHECK(std::stoull(seen[i - 1].second) < std::stoull(seen[i].second));
  std::printf("watch: %d forced mid-stream disconnects (%d streams cut), %zu events, each delivered once in order\n",
              cuts_that_hit, cut_total, seen.size());
}

TEST_CASE("wait() survives a restart of the server (same port, state kept)") {
  EmbeddedCluster embedded({.topology = "seed", .server = {.users = {"alice"}}});
  EmbeddedServer& server = embedded.server();
  const int port = server.port();
  Cluster cluster = embedded.connect("alice");  // real retry waits
  cluster.submit(small_job("survivor", "20s"));

  Seen<JobStatus> states;
  std::optional<JobInfo> result;
  std::exception_ptr error;
  std::thread waiter([&] {
    try {
      result = cluster.wait("survivor", WaitFor::Succeeded, 120s, [&](const JobInfo& j) { states.add(j.status); });
    } catch (...) {
      error = std::current_exception();
    }
    states.add(JobStatus::Unknown);  // wakes the test when wait() ends
  });
  auto reached = [](JobStatus s) {
    return [s](const std::vector<JobStatus>& v) { return std::find(v.begin(), v.end(), s) != v.end(); };
  };
  auto ended = reached(JobStatus::Unknown);
  REQUIRE(states.wait_until([](const auto& v) { return !v.empty(); }));
  // Nothing polls: wait() learns of RUNNING only from its watches, so they are connected now.
  for (int i = 0; i < 12; ++i) {
    server.advance(5s);
    if (states.wait_until(reached(JobStatus::Running), 2s)) break;
  }
  REQUIRE(states.wait_until(reached(JobStatus::Running)));

  server.restart();  // every connection dropped, the port closed and opened again
  CHECK(server.port() == port);
  // Only watches that reconnected after the restart can tell wait() the job finished.
  for (int i = 0; i < 12; ++i) {
    server.advance(5s);
    if (states.wait_until(ended, 2s)) break;
  }
  REQUIRE(states.wait_until(ended));
  waiter.join();
  if (error) std::rethrow_exception(error);
  REQUIRE(result);
  CHECK(result->status == JobStatus::Succeeded);
  CHECK(reached(JobStatus::Succeeded)(states.copy()));
}

TEST_CASE("a cancelled wait() or logs(follow) returns promptly") {
  EmbeddedCluster embedded({.topology = "seed", .server = {.users = {"alice"}}});
  EmbeddedServer& server = embedded.server();
  Cluster cluster = embedded.connect("alice");
  cluster.submit(small_job("forever", "forever"));

  SUBCASE("wait") {
    CancelToken cancel;
    Seen<JobStatus> states;
    std::chrono::steady_clock::time_point cancelled_at, returned_at;
    std::string message;
    std::thread waiter([&] {
      try {
        cluster.wait(
            "forever", WaitFor::Succeeded, 600s, [&](const JobInfo& j) { states.add(j.status); }, cancel);
      } catch (const Error& e) {
        message = e.what();
      }
      returned_at = std::chrono::steady_clock::now();
    });
    REQUIRE(states.wait_until([](const auto& v) { return !v.empty(); }));
    cancelled_at = std::chrono::steady_clock::now();
    cancel.cancel();
    waiter.join();
    CHECK(message.find("cancelled") != std::string::npos);
    CHECK(returned_at - cancelled_at < 5s);  // the timeout was 10 minutes
  }
  SUBCASE("logs follow") {
    server.advance(10s);
    CancelToken cancel;
    Seen<std::string> lines;
    std::chrono::steady_clock::time_point returned_at;
    std::thread reader([&] {
      JobLogOptions follow;
      follow.follow = true;
      cluster.logs(
          "forever", follow,
          [&](const std::string& l) {
            lines.add(l);
            return true;
          },
          cancel);
      returned_at = std::chrono::steady_clock::now();
    });
    REQUIRE(lines.wait_until([](const auto& v) { return !v.empty(); }));
    const auto cancelled_at = std::chrono::steady_clock::now();
    cancel.cancel();  // the stream is idle: the clock does not move
    reader.join();
    CHECK(returned_at - cancelled_at < 5s);
  }
}

namespace {

/// Waits until the server's fault counters satisfy `pred` (a guard of 60 s against a hang).
template <class Pred>
bool until_counters(const EmbeddedServer& server, Pred pred) {
  const auto limit = std::chrono::steady_clock::now() + 60s;
  while (!pred(server.fault_counters())) {
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

TEST_CASE("cancel ends a request wait() or logs() is already retrying: held by the server, or in a back-off") {
  EmbeddedCluster embedded({.topology = "seed", .server = {.users = {"alice"}}});
  EmbeddedServer& server = embedded.server();
  Cluster cluster = embedded.connect("alice");  // real retry waits
  cluster.submit(small_job("held", "forever"));

  // What the server does to every GET of one object from now on, and how to tell it is doing it.
  FaultConfig faults;
  std::function<std::uint64_t(const FaultCounters&)> count;  // of GETs held / answered 429
  SUBCASE("the server holds the answer for 10 minutes") {
    faults.rules["get"] = FaultRule{.latency = 600s};
    count = [](const FaultCounters& c) { return c.delayed; };
  }
  SUBCASE("the server answers 429 with Retry-After: 600") {
    faults.rules["get"] = FaultRule{.too_many_requests = 1.0, .retry_after_seconds = 600};
    count = [](const FaultCounters& c) { return c.too_many_requests; };
  }

  for (const bool logs : {false, true}) {
    CAPTURE(logs);
    CancelToken cancel;
    Seen<JobStatus> states;
    Seen<std::string> ended;  // what the call ended with, once it returned
    std::thread caller([&] {
      std::string outcome = "returned";
      try {
        if (logs) {
          JobLogOptions follow;  // no instance given: logs() first looks the job up with GETs
          follow.follow = true;
          cluster.logs(
              "held", follow, [](const std::string&) { return true; }, cancel);
        } else {
          cluster.wait(
              "held", WaitFor::Succeeded, 600s, [&](const JobInfo& j) { states.add(j.status); }, cancel);
        }
      } catch (const CancelledError& e) {
        outcome = std::string("CancelledError: ") + e.what();
      } catch (const std::exception& e) {
        outcome = std::string("other: ") + e.what();
      }
      ended.add(outcome);
    });
    if (!logs) REQUIRE(states.wait_until([](const auto& v) { return !v.empty(); }));  // its watches are up
    const std::uint64_t before = count(server.fault_counters());
    server.set_faults(faults);
    if (!logs) server.advance(10s);  // the job's pod changes: wait() re-reads the job with GETs
    REQUIRE(until_counters(server,
                           [&](const FaultCounters& c) { return count(c) > before; }));  // a GET is held / backing off
    const auto cancelled_at = std::chrono::steady_clock::now();
    cancel.cancel();
    const bool returned = ended.wait_until([](const auto& v) { return !v.empty(); }, 30s);
    const auto took = std::chrono::steady_clock::now() - cancelled_at;
    server.set_faults({});
    if (!returned) server.restart();  // ends a held answer, so that the thread can be joined
    caller.join();
    REQUIRE(returned);
    const std::string outcome = ended.copy().front();
    CAPTURE(outcome);
    if (logs) {
      CHECK(outcome == "returned");  // logs() returns when cancelled, as for a cancelled stream
    } else {
      CHECK(outcome == "CancelledError: waiting for job \"held\" was cancelled");
    }
    CHECK(took < 5s);  // the transport polls the token every 50 ms while it waits
    std::printf("cancel of %s during a %s GET: returned after %lld ms\n", logs ? "logs()" : "wait()",
                faults.rules["get"].latency.count() ? "held" : "backing-off",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  }
}
