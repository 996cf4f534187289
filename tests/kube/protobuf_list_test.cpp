// Client::for_each_page with ListOptions::protobuf against the bytes kube-apiserver v1.32.13 sent
// (tests/model/data/protobuf, recorded by its record.py): the Accept header client-go's protobuf
// clients send, pages read as protobuf with their continue token, a JSON answer read as before,
// and an error Status that came as protobuf.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpupool/client.hpp"
#include "gpupool/error.hpp"
#include "kube/fake_transport.hpp"
#include "model/kube_protobuf.hpp"
#include "model/protobuf_fixture.hpp"

using gpupool::test::FakeTransport;
using gpupool::test::respond;

namespace {

std::string fixture(const std::string& name) { return gpupool::test::protobuf_fixture(name); }

std::string accept_of(const gpupool::HttpRequest& r) {
  for (const auto& [k, v] : r.headers)
    if (k == "Accept") return v;
  return "";
}

gpupool::Client client_over(std::shared_ptr<FakeTransport> t) {
  gpupool::KubeConfig cfg;
  cfg.cluster.server = "https://k8s.example:6443";
  cfg.namespace_name = "alice";
  gpupool::ClientOptions o;
  o.transport_override = std::move(t);
  o.retry.sleep = [](std::chrono::milliseconds) {};
  return gpupool::Client(cfg, o);
}

const gpupool::ResourceRef kNodes{"", "v1", "nodes", "Node", false};

}  // namespace

TEST_CASE("for_each_page with protobuf: client-go's Accept, pages as the server sent them, continue") {
  const std::string first = fixture("nodes.pb"), last = fixture("nodes-more.pb");
  auto t = std::make_shared<FakeTransport>([&](const gpupool::HttpRequest& r, const gpupool::RequestCredentials&) {
    if (accept_of(r) != "application/vnd.kubernetes.protobuf,application/json")
      return respond(200, fixture("nodes-more.json"));  // the last page: no continue
    return respond(200, r.target.find("continue=") == std::string::npos ? first : last);
  });
  gpupool::Client c = client_over(t);
  gpupool::ListOptions lo;
  lo.protobuf = true;
  lo.limit = 4;
  std::vector<std::string> names;
  int pages = 0;
  c.for_each_page(kNodes, "", lo, [&](const gpupool::RawListPage& page) {
    ++pages;
    CHECK(page.protobuf);
    gpupool::protobuf::for_each_item(
        page.text, [&](boost::json::object&& n) { names.emplace_back(n.at("metadata").at("name").as_string()); });
  });
  CHECK(pages == 2);
  CHECK(names == std::vector<std::string>{"gpu-node-0", "gpu-node-1", "gpu-node-10", "gpu-node-100", "gpu-node-97"});
  const auto requests = t->requests();
  REQUIRE(requests.size() == 2);
  // The second page asked for the continue token the first protobuf page carried.
  CHECK(requests[1].target.find("continue=" + gpupool::protobuf::list_meta(first).continue_token.substr(0, 20)) !=
        std::string::npos);

  // Without the option: JSON is asked for and read as before.
  lo.protobuf = false;
  lo.limit = 0;
  c.for_each_page(kNodes, "", lo, [&](const gpupool::RawListPage& page) {
    CHECK_FALSE(page.protobuf);
    CHECK(page.text.find("\"NodeList\"") != std::string::npos);
  });
}

TEST_CASE("an error answered as a protobuf Status is the server's error, word for word") {
  auto t = std::make_shared<FakeTransport>([&](const gpupool::HttpRequest&, const gpupool::RequestCredentials&) {
    return respond(404, fixture("status-404.pb"));
  });
  gpupool::Client c = client_over(t);
  gpupool::ListOptions lo;
  lo.protobuf = true;
  try {
    c.for_each_page(kNodes, "", lo, [](const gpupool::RawListPage&) {});
    FAIL("no error");
  } catch (const gpupool::ApiError& e) {
    CHECK(e.code() == 404);
    CHECK(e.reason() == "NotFound");
    CHECK(std::string(e.status_message()) == "pods \"nope\" not found");
  }
}

TEST_CASE("list_stream: one request, client-go's Accept, the body in pieces as it came") {
  const std::string body = fixture("pods.pb");
  auto t = std::make_shared<FakeTransport>(
      [&](const gpupool::HttpRequest&, const gpupool::RequestCredentials&) { return respond(200, body); }, 100);
  gpupool::Client c = client_over(t);
  gpupool::ListOptions lo;
  lo.protobuf = true;
  lo.resource_version = "0";
  lo.all_namespaces = true;
  lo.field_selector = "spec.nodeName!=";
  std::string got;
  int pieces = 0;
  c.list_stream(gpupool::ResourceRef{"", "v1", "pods", "Pod"}, "", lo, [&](std::string_view piece) {
    ++pieces;
    got.append(piece);
    return true;
  });
  CHECK(got == body);
  CHECK(pieces == static_cast<int>((body.size() + 99) / 100));
  const auto requests = t->requests();
  REQUIRE(requests.size() == 1);
  CHECK(accept_of(requests[0]) == "application/vnd.kubernetes.protobuf,application/json");
  CHECK(requests[0].target.rfind("/api/v1/pods?", 0) == 0);
  CHECK(requests[0].target.find("resourceVersion=0") != std::string::npos);
  CHECK(requests[0].target.find("limit=") == std::string::npos);
  CHECK(requests[0].timeout.count() > 0);  // a list has the request timeout, unlike a watch

  // Pages are for_each_page's.
  lo.limit = 10;
  CHECK_THROWS_AS(c.list_stream(kNodes, "", lo, [](std::string_view) { return true; }), gpupool::ValidationError);
}

TEST_CASE("list_stream: an error answer is the ApiError for_each_page gives; retried only before the body") {
  int calls = 0;
  std::vector<gpupool::HttpResponse> answers;
  auto t = std::make_shared<FakeTransport>([&](const gpupool::HttpRequest&, const gpupool::RequestCredentials&) {
    return answers.at(static_cast<std::size_t>(calls++));
  });
  gpupool::Client c = client_over(t);
  gpupool::ListOptions lo;
  lo.protobuf = true;
  auto error_of = [&](auto&& list) -> gpupool::ApiError {
    try {
      list();
    } catch (const gpupool::ApiError& e) {
      return e;
    }
    FAIL("no error");
    return gpupool::ApiError(0, "", "");
  };
  // A protobuf Status, word for word as for_each_page has it.
  answers = {respond(404, fixture("status-404.pb")), respond(404, fixture("status-404.pb"))};
  const auto streamed = error_of([&] { c.list_stream(kNodes, "", lo, [](std::string_view) { return true; }); });
  const auto paged = error_of([&] { c.for_each_page(kNodes, "", lo, [](const gpupool::RawListPage&) {}); });
  CHECK(streamed.code() == 404);
  CHECK(streamed.reason() == "NotFound");
  CHECK(std::string(streamed.status_message()) == "pods \"nope\" not found");
  CHECK(std::string(streamed.what()) == paged.what());
  // A JSON 403 in another namespace says which is the kubeconfig's, as list() does.
  calls = 0;
  answers = {respond(
      403, gpupool::test::status_body(403, "Forbidden", "pods is forbidden: User \\\"bob\\\" cannot list resource"))};
  const auto forbidden = error_of([&] {
    c.list_stream(gpupool::ResourceRef{"", "v1", "pods", "Pod"}, "other", {}, [](std::string_view) { return true; });
  });
  CHECK(forbidden.code() == 403);
  CHECK(std::string(forbidden.what()).find("your kubeconfig's namespace is \"alice\"") != std::string::npos);
  // A 503 before the body is sent again; the body then reaches the sink once.
  calls = 0;
  answers = {respond(503, gpupool::test::status_body(503, "ServiceUnavailable", "busy")),
             respond(200, fixture("nodes.pb"))};
  std::string got;
  c.list_stream(kNodes, "", lo, [&](std::string_view piece) {
    got.append(piece);
    return true;
  });
  CHECK(calls == 2);
  CHECK(got == fixture("nodes.pb"));
}

namespace {

// Sends part of a body then fails, as a connection reset mid-list would.
class BrokenStream : public gpupool::Transport {
 public:
  int calls = 0;
  gpupool::HttpResponse send(const gpupool::HttpRequest&, const gpupool::RequestCredentials&) override {
    throw gpupool::TransportError("not used");
  }
  gpupool::HttpResponse stream(const gpupool::HttpRequest&, const gpupool::RequestCredentials&,
                               const gpupool::ChunkSink& sink, const gpupool::CancelToken&) override {
    ++calls;
    sink("k8s");
    throw gpupool::TransportError("connection reset by peer");
  }
};

}  // namespace

TEST_CASE("list_stream: no second request once the sink has a piece; the sink's exception is thrown") {
  auto broken = std::make_shared<BrokenStream>();
  gpupool::KubeConfig cfg;
  cfg.cluster.server = "https://k8s.example:6443";
  cfg.namespace_name = "alice";
  gpupool::ClientOptions o;
  o.transport_override = broken;
  o.retry.sleep = [](std::chrono::milliseconds) {};
  gpupool::Client c(cfg, o);
  CHECK_THROWS_AS(c.list_stream(kNodes, "", {}, [](std::string_view) { return true; }), gpupool::TransportError);
  CHECK(broken->calls == 1);  // the items already handed over would come twice

  auto t = std::make_shared<FakeTransport>([&](const gpupool::HttpRequest&, const gpupool::RequestCredentials&) {
    return respond(200, fixture("nodes.pb"));
  });
  gpupool::Client fake = client_over(t);
  int pieces = 0;
  CHECK_THROWS_AS(fake.list_stream(kNodes, "", {},
                                   [&](std::string_view) -> bool {
                                     if (++pieces == 3) throw gpupool::protobuf::DecodeError("bad item");
                                     return true;
                                   }),
                  gpupool::protobuf::DecodeError);
  CHECK(pieces == 3);  // the stream stopped there
  CHECK(t->requests().size() == 1);
}
