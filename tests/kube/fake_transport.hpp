// A scripted Transport for client unit tests: every request is recorded and answered by a
// handler; a streamed 2xx body is delivered in small chunks so line splitting is exercised.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

#include "gpupool/error.hpp"
#include "gpupool/transport.hpp"

namespace gpupool::test {

class FakeTransport : public Transport {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&, const RequestCredentials&)>;
  explicit FakeTransport(Handler handler, std::size_t chunk = 7) : handler_(std::move(handler)), chunk_(chunk) {}

  HttpResponse send(const HttpRequest& req, const RequestCredentials& creds) override {
    record(req, creds);
    return handler_(req, creds);
  }
  HttpResponse stream(const HttpRequest& req, const RequestCredentials& creds, const ChunkSink& sink,
                      const CancelToken& cancel) override {
    record(req, creds);
    HttpResponse r = handler_(req, creds);
    if (r.status < 200 || r.status >= 300) return r;
    for (std::size_t i = 0; i < r.body.size() && !cancel.cancelled(); i += chunk_)
      if (!sink(std::string_view(r.body).substr(i, chunk_))) break;
    r.body.clear();
    return r;
  }

  /// Batches (Transport::send_each) answered one by one, as the default does; counted.
  std::vector<HttpResponse> send_each(const std::vector<HttpRequest>& reqs, const RequestCredentials& creds) override {
    {
      std::lock_guard lock(mutex_);
      batch_sizes_.push_back(reqs.size());
    }
    return Transport::send_each(reqs, creds);
  }
  std::vector<std::size_t> batch_sizes() const {
    std::lock_guard lock(mutex_);
    return batch_sizes_;
  }

  std::vector<HttpRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  std::vector<RequestCredentials> credentials() const {
    std::lock_guard lock(mutex_);
    return creds_;
  }

 private:
  void record(const HttpRequest& req, const RequestCredentials& creds) {
    std::lock_guard lock(mutex_);
    requests_.push_back(req);
    creds_.push_back(creds);
  }
  Handler handler_;
  std::size_t chunk_;
  mutable std::mutex mutex_;
  std::vector<HttpRequest> requests_;
  std::vector<RequestCredentials> creds_;
  std::vector<std::size_t> batch_sizes_;
};

inline HttpResponse respond(int status, std::string body, HttpHeaders headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

inline std::string status_body(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","status":"Failure","code":)" + std::to_string(code) + R"(,"reason":")" +
         reason + R"(","message":")" + message + R"("})";
}

}  // namespace gpupool::test
