// fuzz/fuzz_api.cpp — a stateful fuzzer of the embedded API server's request handling, in process
// (Api::handle, no HTTPS): each input is a sequence of requests (create, update, merge/strategic/
// JSON patch, delete, get, list, scale) on pods, deployments, replicasets, jobs, PVCs, nodes,
// services, storage classes, with bodies built from valid templates and mutated at chosen paths
// by fuzzer-chosen values, or raw fuzzer text. The built-in controllers run (synchronously, as in
// the server), so the objects a request stores are acted on too: the `spec.replicas: -1` crash of
// issue #20 was there.
//
// Asserted after every request: no crash, hang or sanitizer report; the response is JSON; an
// error is a Status whose code is the HTTP status; a success is an object (with kind) and after
// a write the store holds an object of that name whose resourceVersion is not newer than the
// store's; every stored object has a name and a resourceVersion; and the state a watcher builds
// from the store's events (ADDED/MODIFIED/DELETED, subscribed before the first request) is the
// stored state, object for object and version for version.
//
// GPUPOOL_FUZZ_TRACE=<file>: every request and its status are appended to <file> as JSON lines,
// and {"end": true} after each input, so that fuzz/oracle_compare.py can send the same sequences
// to a real kube-apiserver and compare the status codes.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "../tests/embedded/api_fixture.hpp"
#include "embedded/api.hpp"
#include "embedded/controllers.hpp"

namespace json = boost::json;
using namespace gpupool::embedded;
using gpupool::embedded::testing::admin_request;  // every request is the cluster admin's

namespace {

[[noreturn]] void fail(const std::string& why, const std::string& body) {
  std::fprintf(stderr, "fuzz_api: %s\nbody: %.2000s\n", why.c_str(), body.c_str());
  std::abort();
}

struct Kind {
  const char* group;
  const char* resource;
  const char* prefix;  // URL prefix up to the resource (namespaced: in namespace default)
  const char* tmpl;    // a valid object (name filled in)
};

const Kind kKinds[] = {
    {"", "pods", "/api/v1/namespaces/default/pods",
     R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"N","labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"busybox","ports":[{"containerPort":80}],"env":[{"name":"E","value":"v"}],"resources":{"requests":{"cpu":"1"},"limits":{"cpu":"2"}}}],"tolerations":[{"key":"k","operator":"Exists"}]}})"},
    {"apps", "deployments", "/apis/apps/v1/namespaces/default/deployments",
     R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"N"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}})"},
    {"apps", "replicasets", "/apis/apps/v1/namespaces/default/replicasets",
     R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"N"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}})"},
    {"batch", "jobs", "/apis/batch/v1/namespaces/default/jobs",
     R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"N"},"spec":{"parallelism":2,"completions":3,"backoffLimit":1,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}})"},
    {"", "persistentvolumeclaims", "/api/v1/namespaces/default/persistentvolumeclaims",
     R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"N"},"spec":{"storageClassName":"fast","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})"},
    {"", "nodes", "/api/v1/nodes",
     R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"N","labels":{"gpu":"a100"}},"spec":{"taints":[{"key":"k","value":"v","effect":"NoSchedule"}]},"status":{"capacity":{"cpu":"8","nvidia.com/gpu":"4"},"allocatable":{"cpu":"8","nvidia.com/gpu":"4"},"conditions":[{"type":"Ready","status":"True"}]}})"},
    {"", "services", "/api/v1/namespaces/default/services",
     R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"N"},"spec":{"selector":{"app":"a"},"ports":[{"port":80}]}})"},
    {"storage.k8s.io", "storageclasses", "/apis/storage.k8s.io/v1/storageclasses",
     R"({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"N"},"provisioner":"x"})"},
};

// Paths where a mutation lands (created as needed); "#" is an array index the fuzzer picks.
const char* const kPaths[] = {
    "spec.replicas",
    "spec.parallelism",
    "spec.completions",
    "spec.backoffLimit",
    "spec",
    "spec.template.spec.containers",
    "spec.template.spec.containers.#.ports.#.containerPort",
    "spec.containers.#.ports.#.containerPort",
    "spec.containers.#.env.#.name",
    "spec.containers.#.resources.requests.cpu",
    "spec.containers.#.resources.limits",
    "spec.containers",
    "spec.containers.#.image",
    "spec.containers.#.name",
    "spec.tolerations.#.operator",
    "spec.tolerations.#.tolerationSeconds",
    "spec.taints.#.effect",
    "spec.taints",
    "spec.storageClassName",
    "spec.resources.requests.storage",
    "spec.accessModes",
    "spec.selector",
    "spec.selector.matchLabels",
    "spec.template.metadata.labels",
    "spec.ports.#.port",
    "spec.type",
    "metadata.name",
    "metadata.labels",
    "metadata.labels.x",
    "metadata.annotations",
    "metadata.namespace",
    "metadata.ownerReferences",
    "metadata.finalizers",
    "metadata.deletionTimestamp",
    "metadata.resourceVersion",
    "metadata.generateName",
    "metadata",
    "status",
    "status.phase",
    "status.conditions",
    "kind",
    "apiVersion",
    "spec.nodeName",
    "spec.volumes",
    "spec.containers.#.volumeMounts",
    "spec.strategy.type",
    "spec.template.spec.restartPolicy",
    "provisioner",
    "spec.suspend",
    "spec.completionMode",
};

json::value fuzz_value(FuzzedDataProvider& in, int depth = 0) {
  switch (in.ConsumeIntegralInRange<int>(0, depth > 2 ? 6 : 9)) {
    case 0:
      return json::value(in.ConsumeIntegralInRange<std::int64_t>(-3, 5));
    case 1:
      return json::value(in.ConsumeIntegral<std::int64_t>());
    case 2:
      return json::value(in.ConsumeFloatingPoint<double>());
    case 3:
      return json::value(in.ConsumeRandomLengthString(24));
    case 4:
      return json::value(in.ConsumeBool());
    case 5:
      return json::value(nullptr);
    case 6: {
      static const char* const words[] = {"",
                                          "a",
                                          "x",
                                          "-1",
                                          "1Gi",
                                          "NoSchedule",
                                          "Exists",
                                          "Always",
                                          "Never",
                                          "ReadWriteOnce",
                                          "2024-01-01T00:00:00Z",
                                          "default",
                                          "Bad_Name",
                                          "é",
                                          "a/b",
                                          "100m",
                                          "1e3",
                                          "Indexed",
                                          "RollingUpdate",
                                          "kubernetes"};
      return json::value(words[in.ConsumeIntegralInRange<std::size_t>(0, std::size(words) - 1)]);
    }
    case 7: {
      json::array a;
      for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n) a.push_back(fuzz_value(in, depth + 1));
      return a;
    }
    case 8: {
      json::object o;
      for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n)
        o[in.ConsumeRandomLengthString(8)] = fuzz_value(in, depth + 1);
      return o;
    }
    default: {
      boost::system::error_code ec;
      auto v = json::parse(in.ConsumeRandomLengthString(64), ec);
      return ec ? json::value(nullptr) : v;
    }
  }
}

void set_path(json::value& root, std::string_view path, json::value v, FuzzedDataProvider& in) {
  json::value* cur = &root;
  while (true) {
    const auto dot = path.find('.');
    const std::string_view part = path.substr(0, dot);
    if (part == "#") {
      if (!cur->is_array()) *cur = json::array{};
      auto& a = cur->as_array();
      const std::size_t i = in.ConsumeIntegralInRange<std::size_t>(0, a.size());
      if (i == a.size()) a.push_back(json::object{});
      cur = &a[i];
    } else {
      if (!cur->is_object()) *cur = json::object{};
      cur = &cur->as_object()[part];
    }
    if (dot == std::string_view::npos) break;
    path.remove_prefix(dot + 1);
  }
  *cur = std::move(v);
}

std::string body_for(const Kind& k, const std::string& name, FuzzedDataProvider& in, bool raw_allowed) {
  if (raw_allowed && in.ConsumeIntegralInRange<int>(0, 15) == 0) return in.ConsumeRandomLengthString(256);
  std::string t = k.tmpl;
  t.replace(t.find("\"N\""), 3, "\"" + name + "\"");
  json::value v = json::parse(t);
  for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n) {
    const char* path = kPaths[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kPaths) - 1)];
    set_path(v, path, fuzz_value(in), in);
  }
  return json::serialize(v);
}

void check_store(Store& store) {
  for (const Kind& k : kKinds) {
    const auto& t = store.type(k.group, k.resource);
    for (const auto& obj : store.list(t, "", {}).items) {
      const auto* md = obj->if_contains("metadata");
      if (!md || !md->is_object()) fail("a stored object has no metadata", json::serialize(*obj));
      const auto* name = md->as_object().if_contains("name");
      const auto* rv = md->as_object().if_contains("resourceVersion");
      if (!name || !name->is_string() || name->as_string().empty())
        fail("a stored object has no name", json::serialize(*obj));
      if (!rv || !rv->is_string()) fail("a stored object has no resourceVersion", json::serialize(*obj));
      const auto v = std::strtoull(rv->as_string().c_str(), nullptr, 10);
      if (v == 0 || v > store.revision()) fail("a stored resourceVersion is beyond the store's", json::serialize(*obj));
    }
  }
}

// Requests sent over the whole run, printed at exit (RELIABILITY.md counts requests, not inputs).
struct RequestCount {
  std::uint64_t n = 0;
  ~RequestCount() { std::fprintf(stderr, "fuzz_api: %llu requests\n", static_cast<unsigned long long>(n)); }
} g_requests;

// The trace file of GPUPOOL_FUZZ_TRACE, or null.
std::ofstream* trace() {
  static std::ofstream* t = [] {
    const char* path = std::getenv("GPUPOOL_FUZZ_TRACE");
    return path && *path ? new std::ofstream(path, std::ios::app) : nullptr;
  }();
  return t;
}

void trace_request(const Request& r, int status) {
  if (!trace()) return;
  std::string path = r.path;
  for (const auto& [k, v] : r.query) path += (path.find('?') == std::string::npos ? "?" : "&") + k + "=" + v;
  *trace() << json::serialize(json::object{{"method", r.method},
                                           {"path", path},
                                           {"content_type", r.content_type},
                                           {"body", r.body},
                                           {"status", status}})
           << "\n";
}

// A watcher's view: what the events say is stored, by type, namespace/name.
using View = std::map<std::tuple<std::string, std::string, std::string>, std::string>;  // -> resourceVersion

void check_view(Store& store, const View& view) {
  View stored;
  for (const Kind& k : kKinds) {
    const auto& t = store.type(k.group, k.resource);
    for (const auto& obj : store.list(t, "", {}).items) {
      const auto& md = obj->at("metadata").as_object();
      const auto* ns = md.if_contains("namespace");
      stored[{k.resource, ns && ns->is_string() ? std::string(ns->as_string()) : "",
              std::string(md.at("name").as_string())}] = std::string(md.at("resourceVersion").as_string());
    }
  }
  for (const auto& [key, rv] : stored) {
    auto it = view.find(key);
    if (it == view.end()) fail("a stored object no watch event announced", std::get<0>(key) + "/" + std::get<2>(key));
    if (it->second != rv)
      fail("a watcher's version of an object differs from the store's", std::get<2>(key) + " " + rv);
  }
  auto fuzzed = [](const std::string& resource) {
    for (const Kind& k : kKinds)
      if (resource == k.resource) return true;
    return false;
  };
  for (const auto& [key, rv] : view)
    if (fuzzed(std::get<0>(key)) && !stored.count(key))
      fail("a watcher still sees an object the store no longer holds", std::get<2>(key) + " " + rv);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Clock clock = Clock::manual();
  Store store(clock);
  Controllers controllers(store, clock);
  Api api(store, {});
  store.create(store.type("", "namespaces"), "", json::object{{"metadata", json::object{{"name", "default"}}}});
  View view;
  const auto sub = store.subscribe([&](const WatchEvent& e) {
    const auto& md = e.object->at("metadata").as_object();
    const auto* ns = md.if_contains("namespace");
    const std::tuple key{e.type_info->resource, ns && ns->is_string() ? std::string(ns->as_string()) : "",
                         std::string(md.at("name").as_string())};
    if (e.type == EventType::Deleted)
      view.erase(key);
    else
      view[key] = std::to_string(e.resource_version);
  });
  static const char* const names[] = {"a", "b", "c-1"};
  for (int step = 0; step < 12 && in.remaining_bytes() > 0; ++step) {
    const Kind& k = kKinds[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kKinds) - 1)];
    const std::string name = names[in.ConsumeIntegralInRange<std::size_t>(0, std::size(names) - 1)];
    const std::string item = std::string(k.prefix) + "/" + name;
    Request r;
    bool write = true;
    switch (in.ConsumeIntegralInRange<int>(0, 10)) {
      case 0:
      case 1:
        r = admin_request("POST", k.prefix, body_for(k, name, in, true), "application/json");
        break;
      case 2:
        r = admin_request("POST", std::string(k.prefix) + "?dryRun=All", body_for(k, name, in, true),
                          "application/json");
        break;
      case 3: {
        // An update of the stored object, mutated (or a fresh body when there is none).
        std::string body = body_for(k, name, in, true);
        const auto& t = store.type(k.group, k.resource);
        if (auto cur = store.find(t, t.namespaced ? "default" : "", name)) {
          json::value v = *cur;
          const char* path = kPaths[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kPaths) - 1)];
          set_path(v, path, fuzz_value(in), in);
          body = json::serialize(v);
        }
        r = admin_request("PUT", item, std::move(body), "application/json");
        break;
      }
      case 4: {
        json::value patch = json::object{};
        const char* path = kPaths[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kPaths) - 1)];
        set_path(patch, path, fuzz_value(in), in);
        r = admin_request("PATCH", item, json::serialize(patch), "application/merge-patch+json");
        break;
      }
      case 5: {
        json::value patch = json::object{};
        const char* path = kPaths[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kPaths) - 1)];
        set_path(patch, path, fuzz_value(in), in);
        if (in.ConsumeBool()) patch.as_object()["$patch"] = in.ConsumeBool() ? "replace" : "delete";
        r = admin_request("PATCH", item, json::serialize(patch), "application/strategic-merge-patch+json");
        break;
      }
      case 6: {
        static const char* const ops[] = {"add", "remove", "replace", "move", "copy", "test", "bogus"};
        json::array patch;
        for (int n = in.ConsumeIntegralInRange<int>(1, 3); n > 0; --n) {
          std::string ptr = "/" + std::string(kPaths[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kPaths) - 1)]);
          for (auto& c : ptr)
            if (c == '.') c = '/';
          for (std::size_t p; (p = ptr.find('#')) != std::string::npos;)
            ptr.replace(p, 1, in.ConsumeBool() ? "0" : "-");
          json::object op{{"op", ops[in.ConsumeIntegralInRange<std::size_t>(0, std::size(ops) - 1)]}, {"path", ptr}};
          if (in.ConsumeBool()) op["value"] = fuzz_value(in);
          if (in.ConsumeBool()) op["from"] = "/spec";
          patch.push_back(std::move(op));
        }
        r = admin_request("PATCH", item, json::serialize(patch), "application/json-patch+json");
        break;
      }
      case 7:
        r = admin_request("DELETE", item, in.ConsumeBool() ? "" : R"({"propagationPolicy":"Foreground"})",
                          "application/json");
        break;
      case 8: {
        const bool has_scale = std::string(k.resource) == "deployments" || std::string(k.resource) == "replicasets";
        json::object patch{{"spec", json::object{{"replicas", fuzz_value(in)}}}};
        r = admin_request("PATCH", item + (has_scale ? "/scale" : "/status"), json::serialize(patch),
                          "application/merge-patch+json");
        break;
      }
      case 9:
        r = admin_request("GET", item, "", "");
        write = false;
        break;
      default:
        r = admin_request("GET", k.prefix, "", "");
        write = false;
        break;
    }
    const Response resp = api.handle(r);
    ++g_requests.n;
    trace_request(r, resp.status);
    if (resp.stream) continue;
    boost::system::error_code ec;
    const json::value v = json::parse(resp.body, ec);
    if (ec || !v.is_object()) fail("a response that is not a JSON object", resp.body);
    const auto& o = v.as_object();
    const auto* kind = o.if_contains("kind");
    if (!kind || !kind->is_string()) fail("a response with no kind", resp.body);
    if (resp.status >= 400) {
      if (kind->as_string() != "Status") fail("an error that is not a Status", resp.body);
      const auto* code = o.if_contains("code");
      if (!code || !code->is_int64() || code->as_int64() != resp.status)
        fail("a Status whose code is not the HTTP status", resp.body);
    } else if (resp.status < 200) {
      fail("an informational status", resp.body);
    }
    if (write && resp.status < 300 && r.method != "DELETE" && !r.query.count("dryRun")) {
      // The object a write answered with is the stored one (or the controllers' newer version).
      const auto* md = o.if_contains("metadata");
      const auto* rv = md && md->is_object() ? md->as_object().if_contains("resourceVersion") : nullptr;
      if (kind->as_string() != "Scale" &&
          (!rv || !rv->is_string() || std::strtoull(rv->as_string().c_str(), nullptr, 10) > store.revision()))
        fail("a write answered with no or a future resourceVersion", resp.body);
    }
    check_store(store);
    check_view(store, view);
    clock.advance(std::chrono::seconds(in.ConsumeIntegralInRange<int>(0, 90)));
  }
  store.unsubscribe(sub);
  if (trace()) *trace() << "{\"end\":true}\n" << std::flush;
  return 0;
}
