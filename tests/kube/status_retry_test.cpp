#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gpupool/retry.hpp"
#include "kube/status.hpp"

using namespace std::chrono_literals;
using gpupool::kube::decode_error;

TEST_CASE("non-2xx responses decode into ApiError from the Status body") {
  const std::string invalid = R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"Pod \"p\" is invalid: spec.containers[0].image: Required value","reason":"Invalid",
    "details":{"name":"p","kind":"Pod","causes":[{"reason":"FieldValueRequired","message":"Required value",
    "field":"spec.containers[0].image"}]},"code":422})";
  auto e = decode_error(422, invalid);
  CHECK(e.code() == 422);
  CHECK(e.reason() == "Invalid");
  CHECK(e.status_message() == "Pod \"p\" is invalid: spec.containers[0].image: Required value");
  REQUIRE(e.causes().size() == 1);
  CHECK(e.causes()[0] == gpupool::StatusCause{"FieldValueRequired", "Required value", "spec.containers[0].image"});

  struct Case {
    int code;
    std::string body, reason, message_part;
    std::optional<int> retry_after;
  };
  const std::vector<Case> cases = {
      {404,
       R"({"kind":"Status","reason":"NotFound","message":"pods \"x\" not found","code":404})",
       "NotFound",
       "pods \"x\" not found",
       {}},
      {429, R"({"kind":"Status","reason":"TooManyRequests","message":"slow down","details":{"retryAfterSeconds":7}})",
       "TooManyRequests", "slow down", 7},
      {409,
       R"({"kind":"Status","code":409})",
       "Conflict",
       "the server reported a conflict",
       {}},  // reason/message filled in
      {502, "<html><body><h1>502 Bad Gateway</h1></body></html>\n", "InternalError", "an HTML page of 51 bytes", {}},
      {500, R"({"kind":"Status","message":"trunc)", "InternalError", "a non-JSON body", {}},
      {503, "", "ServiceUnavailable", "the server is currently unable to handle the request", {}},
      {403, R"({"error":"nope"})", "Forbidden", "JSON that is not a Status", {}},
      {401, "Unauthorized\n", "Unauthorized", "the server has asked for the client to provide credentials", {}},
      {418, std::string("\x01\x02binary"), "Unknown", "status code 418", {}},
  };
  for (const auto& tc : cases) {
    CAPTURE(tc.body);
    auto err = decode_error(tc.code, tc.body);
    CHECK(err.code() == tc.code);
    CHECK(err.reason() == tc.reason);
    CHECK(std::string(err.what()).find(tc.message_part) != std::string::npos);
    CHECK(err.retry_after_seconds() == tc.retry_after);
    CHECK(std::string(err.what()).find('\x01') == std::string::npos);  // excerpts are printable
  }
  // Go's http.NotFound page (kube-apiserver, for a group or custom resource it does not serve) is
  // the generic NotFound, word for word as client-go makes it, with nothing appended.
  auto page = decode_error(404, "404 page not found\n");
  CHECK(page.reason() == "NotFound");
  CHECK(page.status_message() == "the server could not find the requested resource");
  CHECK(std::string(decode_error(404, "<h1>404 page not found</h1>").status_message()).find("an HTML page") !=
        std::string::npos);
  // A huge body is excerpted, not copied whole into the message.
  auto big = decode_error(500, std::string(1 << 20, 'x'));
  CHECK(std::string(big.what()).size() < 600);
}

TEST_CASE("Retry-After header is read as client-go does (integers only)") {
  struct Case {
    std::string value;
    std::optional<int> seconds;
  };
  for (const auto& tc : std::vector<Case>{
           {"3", 3}, {"0", 0}, {"", {}}, {"-1", {}}, {"Wed, 21 Oct 2015 07:28:00 GMT", {}}, {"12x", {}}}) {
    gpupool::HttpResponse r;
    r.headers = {{"retry-after", tc.value}};
    CHECK(gpupool::kube::retry_after_seconds(r) == tc.seconds);
  }
}

TEST_CASE("retry decisions: which failures are retried and how long to wait") {
  gpupool::RetryPolicy p;
  p.max_retries = 10;
  p.initial_backoff = 100ms;
  p.max_backoff = 1000ms;
  p.jitter = 0.5;
  struct Case {
    std::optional<int> status, retry_after;
    bool replay_safe;
    int retries_done;
    bool retry;
    std::chrono::milliseconds delay;  // with random = 0
  };
  const std::vector<Case> cases = {
      {429, {}, false, 0, true, 100ms},  // 429 is never processed: always retried
      {429, 3, false, 0, true, 3000ms},  // Retry-After wins when longer than the backoff
      {503, 1, false, 0, true, 1000ms},  // checkWait: 5xx + Retry-After, any verb
      {503, {}, false, 0, false, 0ms},   // 5xx without advice: only when replay-safe
      {503, {}, true, 0, true, 100ms},  {500, {}, true, 2, true, 400ms},  // exponential: 100 * 2^2
      {500, {}, true, 6, true, 1000ms},                                   // capped
      {501, 5, true, 0, false, 0ms},                                      // Not Implemented is final
      {404, {}, true, 0, false, 0ms},   {409, {}, true, 0, false, 0ms},
      {{}, {}, true, 0, true, 100ms},                                     // no response: replay-safe verbs only
      {{}, {}, false, 0, false, 0ms},   {429, {}, true, 10, false, 0ms},  // attempts capped
  };
  for (const auto& tc : cases) {
    CAPTURE(tc.status.value_or(0));
    CAPTURE(tc.retries_done);
    auto d = gpupool::decide_retry(p, tc.retries_done, tc.replay_safe, {tc.status, tc.retry_after}, 0.0);
    CHECK(d.retry == tc.retry);
    if (tc.retry) CHECK(d.delay == tc.delay);
  }
  // Jitter adds up to jitter * backoff.
  CHECK(p.backoff(1, 0.0) == 100ms);
  CHECK(p.backoff(1, 1.0) == 150ms);
  CHECK(p.backoff(3, 0.5) == 500ms);
  CHECK(p.backoff(30, 0.0) == 1000ms);
}
