// The HTTP/1.1 transport (make_http_transport) against a scripted server on 127.0.0.1: framing
// (Content-Length, chunked), gzip, keep-alive reuse and its limits, a server closing an idle
// connection, timeouts, cancel, the response size limit, proxies and what goes on the wire.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <future>
#include <string>
#include <thread>

#include "gpupool/error.hpp"
#include "gpupool/transport.hpp"
#include "kube/connect.hpp"
#include "kube/http_test_server.hpp"

using namespace std::chrono_literals;
using gpupool::HttpRequest;
using gpupool::RequestCredentials;
using gpupool::TransportError;
using gpupool::test::http_reply;
using gpupool::test::HttpTestServer;
using gpupool::test::Reply;
using gpupool::test::ServedRequest;

namespace {

std::shared_ptr<gpupool::Transport> transport_for(const std::string& server, gpupool::TransportOptions o = {},
                                                  const std::string& proxy = "") {
  gpupool::KubeCluster cluster;
  cluster.name = "test";
  cluster.server = server;
  cluster.proxy_url = proxy;
  return gpupool::make_http_transport(cluster, std::move(o));
}

/// A socket listening on 127.0.0.1 (a free port, in `a`) that nobody accepts on.
int loopback_listener(int backlog, sockaddr_in& a) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  a = sockaddr_in{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, backlog) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  return fd;
}

HttpRequest get(const std::string& target) {
  HttpRequest r;
  r.target = target;
  return r;
}

std::string gzip(const std::string& text) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(compressBound(static_cast<uLong>(text.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string chunked(const std::vector<std::string>& pieces, const std::string& trailer = "") {
  std::string out = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n";
  for (const auto& p : pieces) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx", p.size());
    out += std::string(size) + ";ext=1\r\n" + p + "\r\n";
  }
  return out + "0\r\n" + trailer + "\r\n";
}

/// The requests a server handled, in order (its handler runs on the server's threads).
class Seen {
 public:
  /// Keeps `r`; returns how many were kept.
  std::size_t add(const ServedRequest& r) {
    std::lock_guard lock(mu_);
    all_.push_back(r);
    return all_.size();
  }
  std::vector<ServedRequest> all() {
    std::lock_guard lock(mu_);
    return all_;
  }
  void clear() {
    std::lock_guard lock(mu_);
    all_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<ServedRequest> all_;
};

/// "/x" of "GET /x HTTP/1.1".
std::string target_of(const ServedRequest& r) {
  const std::string line = r.line();
  const auto from = line.find(' ') + 1;
  return line.substr(from, line.rfind(' ') - from);
}

}  // namespace

TEST_CASE("keep-alive: sequential requests share one connection; the wire has what it should") {
  Seen requests;
  HttpTestServer server([&](const ServedRequest& r) {
    return Reply{http_reply(200, "{\"n\":" + std::to_string(requests.add(r)) + "}")};
  });
  gpupool::TransportOptions o;
  o.user_agent = "gpupool-test/9";
  auto t = transport_for(server.url() + "/prefix/", o);
  RequestCredentials token;
  token.bearer_token = "tok-1";
  for (int i = 1; i <= 5; ++i) {
    auto r = t->send(get("/api/v1/pods?limit=1"), token);
    CHECK(r.status == 200);
    CHECK(r.body == "{\"n\":" + std::to_string(i) + "}");
    REQUIRE(r.header("content-length"));
  }
  HttpRequest post;
  post.method = "POST";
  post.target = "/api/v1/namespaces/a/configmaps";
  post.body = "{\"a\":1}";
  post.headers = {{"Content-Type", "application/json"}, {"Accept", "application/yaml"}};
  RequestCredentials basic;
  basic.username = "u";
  basic.password = "p";
  CHECK(t->send(post, basic).status == 200);
  CHECK(server.connections() == 1);
  const auto seen = requests.all();
  REQUIRE(seen.size() == 6);
  CHECK(seen[0].line() == "GET /prefix/api/v1/pods?limit=1 HTTP/1.1");
  CHECK(seen[0].has_header("Host: 127.0.0.1:" + std::to_string(server.port())));
  CHECK(seen[0].has_header("User-Agent: gpupool-test/9"));
  CHECK(seen[0].has_header("Authorization: Bearer tok-1"));
  CHECK(seen[0].has_header("Accept: application/json"));
  CHECK(seen[0].has_header("Accept-Encoding: gzip"));
  CHECK(seen[5].line() == "POST /prefix/api/v1/namespaces/a/configmaps HTTP/1.1");
  CHECK(seen[5].has_header("Authorization: Basic dTpw"));  // base64("u:p")
  CHECK(seen[5].has_header("Accept: application/yaml"));
  CHECK(seen[5].has_header("Content-Length: 7"));
  CHECK(seen[5].body == "{\"a\":1}");
}

TEST_CASE("concurrent requests get connections of their own; at most max_idle_connections stay") {
  std::promise<void> all_in;
  std::atomic<int> arrived{0};
  std::shared_future<void> go = all_in.get_future().share();
  HttpTestServer server([&](const ServedRequest&) {
    if (++arrived == 4) all_in.set_value();
    go.wait();  // four requests in flight at once: four connections
    return Reply{http_reply(200, "{}")};
  });
  gpupool::TransportOptions o;
  o.max_idle_connections = 2;
  auto t = transport_for(server.url(), o);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&] { CHECK(t->send(get("/x"), {}).status == 200); });
  for (auto& th : threads) th.join();
  CHECK(server.connections() == 4);
  // Two were kept: two sequential requests reuse them, a third of them in parallel is not needed.
  CHECK(t->send(get("/y"), {}).status == 200);
  CHECK(t->send(get("/y"), {}).status == 200);
  CHECK(server.connections() == 4);
}

TEST_CASE("a server that closed an idle connection: the next request goes out once more on a new one") {
  std::vector<std::string> lines;
  HttpTestServer server([&](const ServedRequest& r) {
    lines.push_back(r.line());
    // The first answer says nothing about closing, then the connection goes (an idle timeout).
    return Reply{http_reply(200, "{}"), /*close=*/r.connection == 1};
  });
  auto t = transport_for(server.url());
  CHECK(t->send(get("/first"), {}).status == 200);
  CHECK(t->send(get("/second"), {}).status == 200);
  CHECK(server.connections() == 2);
  CHECK(lines == std::vector<std::string>{"GET /first HTTP/1.1", "GET /second HTTP/1.1"});
  // Connection: close is honoured: the next request does not even try the closed connection.
  HttpTestServer closing([&](const ServedRequest&) {
    return Reply{http_reply(200, "{}", "Connection: close\r\n"), true};
  });
  auto c = transport_for(closing.url());
  for (int i = 0; i < 3; ++i) CHECK(c->send(get("/z"), {}).status == 200);
  CHECK(closing.connections() == 3);
  CHECK(closing.requests() == 3);
}

TEST_CASE("send_each: GETs pipelined on one connection, each answer matched to its request in order") {
  Seen requests;
  // Each answer names its request; the third is a chunked one, the fourth a 404, so the reader
  // must find where each ends in what arrives together.
  HttpTestServer server([&](const ServedRequest& r) {
    requests.add(r);
    const std::string target = target_of(r);
    if (target == "/c") return Reply{chunked({"{\"at\":", "\"/c\"}"})};
    if (target == "/d") return Reply{http_reply(404, "{\"at\":\"/d\"}")};
    return Reply{http_reply(200, "{\"at\":\"" + target + "\"}")};
  });
  auto t = transport_for(server.url());
  const std::vector<std::string> targets{"/a", "/b", "/c", "/d", "/e"};
  std::vector<HttpRequest> reqs;
  for (const auto& x : targets) reqs.push_back(get(x));
  auto answers = t->send_each(reqs, {});
  REQUIRE(answers.size() == targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    CHECK(answers[i].body == "{\"at\":\"" + targets[i] + "\"}");
    CHECK(answers[i].status == (targets[i] == "/d" ? 404 : 200));
  }
  CHECK(server.connections() == 1);
  auto seen = requests.all();
  REQUIRE(seen.size() == 5);
  for (std::size_t i = 0; i < 5; ++i) CHECK(seen[i].line() == "GET " + targets[i] + " HTTP/1.1");
  // The requests were on the wire before the first answer: one round trip, not five.
  CHECK(seen[0].buffered_after > 0);
  // The connection is kept for the next request.
  CHECK(t->send(get("/f"), {}).status == 200);
  CHECK(server.connections() == 1);

  // A POST is not pipelined (it may not be sent twice): one by one, each after the answer before.
  requests.clear();
  HttpRequest post = get("/p");
  post.method = "POST";
  post.body = "{}";
  auto mixed = t->send_each({get("/a"), post, get("/b")}, {});
  REQUIRE(mixed.size() == 3);
  CHECK(mixed[2].body == "{\"at\":\"/b\"}");
  seen = requests.all();
  REQUIRE(seen.size() == 3);
  for (const auto& r : seen) CHECK(r.buffered_after == 0);

  // A POST that changes nothing (a server dry run) is pipelined with the GETs, its body with it.
  requests.clear();
  HttpRequest dry = get("/dry?dryRun=All");
  dry.method = "POST";
  dry.body = R"({"kind":"Pod"})";
  dry.no_side_effects = true;
  auto together = t->send_each({get("/a"), dry, get("/b")}, {});
  REQUIRE(together.size() == 3);
  CHECK(together[1].body == "{\"at\":\"/dry?dryRun=All\"}");
  CHECK(together[2].body == "{\"at\":\"/b\"}");
  seen = requests.all();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].buffered_after > 0);  // the POST and the GET after it were on the wire already
  CHECK(seen[1].line() == "POST /dry?dryRun=All HTTP/1.1");
  CHECK(seen[1].body == R"({"kind":"Pod"})");
  CHECK(seen[1].buffered_after > 0);
}

TEST_CASE("send_each: a pipeline the server ends early goes on one by one on a new connection") {
  std::vector<std::string> lines;
  std::mutex mu;
  // The first connection answers two requests, the second with Connection: close, and drops the
  // three it had received after it unanswered.
  HttpTestServer server([&](const ServedRequest& r) {
    std::lock_guard lock(mu);
    lines.push_back(std::to_string(r.connection) + " " + r.line());
    const std::string target = target_of(r);
    const bool last = r.connection == 1 && target == "/2";
    return Reply{http_reply(200, target, last ? "Connection: close\r\n" : ""), last};
  });
  auto t = transport_for(server.url());
  std::vector<HttpRequest> reqs;
  for (int i = 1; i <= 5; ++i) reqs.push_back(get("/" + std::to_string(i)));
  auto answers = t->send_each(reqs, {});
  REQUIRE(answers.size() == 5);
  for (int i = 1; i <= 5; ++i) CHECK(answers[static_cast<std::size_t>(i - 1)].body == "/" + std::to_string(i));
  CHECK(server.connections() == 2);
  CHECK(lines == std::vector<std::string>{"1 GET /1 HTTP/1.1", "1 GET /2 HTTP/1.1", "2 GET /3 HTTP/1.1",
                                          "2 GET /4 HTTP/1.1", "2 GET /5 HTTP/1.1"});

  // A reused connection the server had closed while idle: the whole pipeline on a new one.
  HttpTestServer idle_close([&](const ServedRequest& r) { return Reply{http_reply(200, "{}"), r.connection == 1}; });
  auto u = transport_for(idle_close.url());
  CHECK(u->send(get("/warm"), {}).status == 200);
  auto again = u->send_each({get("/x"), get("/y")}, {});
  REQUIRE(again.size() == 2);
  CHECK(again[0].status == 200);
  CHECK(again[1].status == 200);
  CHECK(idle_close.connections() == 2);
  CHECK(idle_close.requests() == 3);
}

TEST_CASE("an answer cut in the middle is an error, not sent again") {
  HttpTestServer server([&](const ServedRequest& r) {
    if (r.line().find("/cut") != std::string::npos)
      return Reply{"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"partial\":", true};
    return Reply{http_reply(200, "{}")};
  });
  auto t = transport_for(server.url());
  CHECK(t->send(get("/warm"), {}).status == 200);  // the next request goes out on a reused connection
  CHECK_THROWS_WITH_AS(t->send(get("/cut"), {}), doctest::Contains("in the middle of the body"), TransportError);
  CHECK(server.requests() == 2);  // not re-sent: part of the answer had arrived
}

TEST_CASE("chunked bodies with extensions and trailers; the connection is reused after them") {
  HttpTestServer server([&](const ServedRequest&) {
    return Reply{chunked({"{\"items\":", "[1,2,", std::string(70000, ' ') + "3]}"}, "X-Trailer: t\r\n")};
  });
  auto t = transport_for(server.url());
  for (int i = 0; i < 2; ++i) {
    auto r = t->send(get("/list"), {});
    CHECK(r.status == 200);
    CHECK(r.body == "{\"items\":[1,2," + std::string(70000, ' ') + "3]}");
  }
  CHECK(server.connections() == 1);
}

TEST_CASE("gzip answers are decoded (asked for unless disable-compression); bodies are limited decoded") {
  const std::string big = "{\"items\":[" + std::string(200000, '7') + "]}";
  bool asked = false;
  HttpTestServer server([&](const ServedRequest& r) {
    asked = r.has_header("Accept-Encoding: gzip");
    const std::string z = gzip(big);
    if (r.line().find("/chunked") != std::string::npos) {
      std::vector<std::string> pieces;
      for (std::size_t i = 0; i < z.size(); i += 100) pieces.push_back(z.substr(i, 100));
      std::string reply = chunked(pieces);
      return Reply{reply.replace(reply.find("\r\n") + 2, 0, "Content-Encoding: gzip\r\n")};
    }
    return Reply{http_reply(200, z, "Content-Encoding: gzip\r\n")};
  });
  auto t = transport_for(server.url());
  CHECK(t->send(get("/whole"), {}).body == big);
  CHECK(asked);
  CHECK(t->send(get("/chunked"), {}).body == big);
  // The limit counts the decoded bytes: a small compressed answer that inflates past it is refused.
  gpupool::TransportOptions small;
  small.max_response_bytes = 100000;
  CHECK_THROWS_WITH_AS(transport_for(server.url(), small)->send(get("/whole"), {}),
                       doctest::Contains("larger than 100000 bytes (TransportOptions.max_response_bytes)"),
                       gpupool::ResponseTooLargeError);
  gpupool::KubeCluster plain;
  plain.server = server.url();
  plain.disable_compression = true;
  CHECK(gpupool::make_http_transport(plain)->send(get("/whole"), {}).body == big);
  CHECK_FALSE(asked);
}

TEST_CASE("a response larger than max_response_bytes is ResponseTooLargeError; the next request still works") {
  HttpTestServer server([&](const ServedRequest& r) {
    return Reply{http_reply(200, r.line().find("/big") != std::string::npos ? std::string(5000, 'x') : "{}")};
  });
  gpupool::TransportOptions o;
  o.max_response_bytes = 4096;
  auto t = transport_for(server.url(), o);
  const std::string where = "GET http://127.0.0.1:" + std::to_string(server.port()) + "/big: the response from";
  CHECK_THROWS_WITH_AS(t->send(get("/big?x=1"), {}), doctest::Contains(where.c_str()), gpupool::ResponseTooLargeError);
  CHECK(t->send(get("/small"), {}).body == "{}");
}

TEST_CASE("request_timeout and HttpRequest::timeout bound a held answer") {
  HttpTestServer server([&](const ServedRequest&) { return Reply{"", false, /*hold=*/true}; });
  gpupool::TransportOptions o;
  o.request_timeout = 150ms;
  auto t = transport_for(server.url(), o);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(t->send(get("/held"), {}), doctest::Contains("did not answer in time"), TransportError);
  CHECK(std::chrono::steady_clock::now() - start >= 150ms);
  auto r = get("/held");
  r.timeout = 50ms;
  CHECK_THROWS_WITH_AS(t->send(r, {}), doctest::Contains("no complete answer within 50 ms"), TransportError);
  server.release();
}

TEST_CASE("cancel: a held send and an idle stream end soon after the token fires, from another thread") {
  HttpTestServer server([&](const ServedRequest& r) {
    if (r.line().find("/watch") != std::string::npos)  // one event, then silence
      return Reply{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n{\"a\"}\n\r\n", false, true};
    return Reply{"", false, true};
  });
  auto t = transport_for(server.url());
  {
    gpupool::CancelToken cancel;
    auto r = get("/held");
    r.cancel = &cancel;
    std::thread canceller([&] {
      server.wait_for_requests(1);
      cancel.cancel();
    });
    CHECK_THROWS_WITH_AS(t->send(r, {}), doctest::Contains("/held: cancelled"), TransportError);
    canceller.join();
  }
  {
    gpupool::CancelToken cancel;
    std::string got;
    std::promise<void> first;
    bool signalled = false;
    std::thread canceller([&, f = first.get_future()]() mutable {
      f.wait();
      cancel.cancel();
    });
    auto resp = t->stream(
        get("/watch?watch=true"), {},
        [&](std::string_view chunk) {
          got.append(chunk);
          if (!signalled) first.set_value();
          signalled = true;
          return true;
        },
        cancel);
    canceller.join();
    CHECK(resp.status == 200);
    CHECK(got == "{\"a\"}\n");
  }
  server.release();
}

TEST_CASE("stream: a sink returning false stops it; a non-2xx answer comes back whole") {
  HttpTestServer server([&](const ServedRequest& r) {
    if (r.line().find("/gone") != std::string::npos) return Reply{http_reply(410, "{\"code\":410}")};
    return Reply{chunked({"a\n", "b\n", "c\n"})};
  });
  auto t = transport_for(server.url());
  gpupool::CancelToken never;
  std::vector<std::string> pieces;
  auto r = t->stream(
      get("/w"), {},
      [&](std::string_view c) {
        pieces.emplace_back(c);
        return false;
      },
      never);
  CHECK(r.status == 200);
  CHECK(r.body.empty());
  CHECK(pieces.size() == 1);
  auto gone = t->stream(
      get("/gone"), {}, [&](std::string_view) { return true; }, never);
  CHECK(gone.status == 410);
  CHECK(gone.body == "{\"code\":410}");
}

TEST_CASE("proxy-url: an http server is asked through the proxy in absolute form; a refused CONNECT is named") {
  std::vector<std::string> lines;
  HttpTestServer proxy([&](const ServedRequest& r) {
    lines.push_back(r.line());
    if (r.line().rfind("CONNECT", 0) == 0) return Reply{http_reply(403, "no")};
    return Reply{http_reply(200, "{\"via\":\"proxy\"}")};
  });
  auto t = transport_for("http://api.example:8080/base", {}, proxy.url());
  CHECK(t->send(get("/api?x=1"), {}).body == "{\"via\":\"proxy\"}");
  CHECK(lines.at(0) == "GET http://api.example:8080/base/api?x=1 HTTP/1.1");
  auto s = transport_for("https://api.example:6443", {}, "http://user:pw@127.0.0.1:" + std::to_string(proxy.port()));
  CHECK_THROWS_WITH_AS(s->send(get("/api"), {}), doctest::Contains("refused to tunnel to api.example:6443: HTTP 403"),
                       TransportError);
  CHECK(lines.at(1) == "CONNECT api.example:6443 HTTP/1.1");
  auto tls_proxy = transport_for("https://api.example:6443", {}, "https://127.0.0.1:1080");
  CHECK_THROWS_WITH_AS(tls_proxy->send(get("/api"), {}), doctest::Contains("cluster.proxy-url"), gpupool::ConfigError);
}

TEST_CASE("unreachable servers and proxies are UnreachableError naming the server") {
  HttpTestServer server([&](const ServedRequest&) { return Reply{http_reply(200, "{}")}; });
  const int port = server.port();
  // A port nothing listens on: bind one, learn it, close it.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string closed = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  ::close(fd);
  CHECK_THROWS_WITH_AS(
      transport_for("http://" + closed)->send(get("/"), {}),
      ("cannot reach http://" + closed + ": connection refused (is the cluster up? check --context)").c_str(),
      gpupool::UnreachableError);
  const std::string through = "through the proxy " + closed;
  CHECK_THROWS_WITH_AS(
      transport_for("http://127.0.0.1:" + std::to_string(port), {}, "http://" + closed)->send(get("/"), {}),
      doctest::Contains(through.c_str()), gpupool::UnreachableError);
}

TEST_CASE("connect_timeout bounds a connect that gets no answer") {
  // A listener whose accept queue is full: Linux drops further SYNs, so a connect neither
  // succeeds nor is refused until the client gives up.
  sockaddr_in a{};
  const int lfd = loopback_listener(0, a);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {  // fill the queue (non-blocking: the later ones stay in SYN-SENT)
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    fillers.push_back(fd);
  }
  gpupool::TransportOptions o;
  o.connect_timeout = 200ms;
  o.request_timeout = 60s;
  const std::string server = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  CHECK_THROWS_WITH_AS(
      transport_for(server, o)->send(get("/"), {}),
      ("cannot reach " + server + ": connection timed out (is the cluster up? check --context)").c_str(),
      gpupool::UnreachableError);
  for (int fd : fillers) ::close(fd);
  ::close(lfd);
}

TEST_CASE("connect_to_server: the TLS context is asked for while TCP connects; what it throws is thrown") {
  // A listener nobody accepts on: the kernel completes the handshake and queues the connection.
  sockaddr_in a{};
  const int l = loopback_listener(4, a);
  gpupool::KubeCluster cluster;
  cluster.name = "test";
  cluster.server = "https://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  bool reached_when_asked = false;
  int asked = 0;
  const gpupool::kube::TlsSource source = [&]() -> const gpupool::kube::TlsContext* {
    ++asked;
    ::pollfd p{l, POLLIN, 0};
    reached_when_asked = ::poll(&p, 1, 5000) == 1;  // the connection is queued already: returns at once
    throw TransportError("no TLS context in this test");
  };
  CHECK_THROWS_WITH_AS(gpupool::kube::connect_to_server(cluster, source, 10s), "no TLS context in this test",
                       TransportError);
  CHECK(asked == 1);
  CHECK(reached_when_asked);
  // Nothing listening: the context's failure is still the one reported (as when it was built
  // before connecting), the refused connection after it.
  ::close(l);
  asked = 0;
  const gpupool::kube::TlsSource failing = [&]() -> const gpupool::kube::TlsContext* {
    ++asked;
    throw TransportError("the kubeconfig's client certificate or key cannot be loaded");
  };
  CHECK_THROWS_WITH_AS(gpupool::kube::connect_to_server(cluster, failing, 10s),
                       "the kubeconfig's client certificate or key cannot be loaded", TransportError);
  CHECK(asked == 1);
  // Through a proxy nobody answers on: the same.
  cluster.proxy_url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  asked = 0;
  CHECK_THROWS_WITH_AS(gpupool::kube::connect_to_server(cluster, failing, 10s),
                       "the kubeconfig's client certificate or key cannot be loaded", TransportError);
  CHECK(asked == 1);
  cluster.proxy_url.clear();
  // Plain http:// asks for no context.
  cluster.server = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  asked = 0;
  CHECK_THROWS_AS(gpupool::kube::connect_to_server(cluster, failing, 10s), gpupool::UnreachableError);
  CHECK(asked == 0);
}
