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
