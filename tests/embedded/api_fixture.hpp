// The cluster admin's requests to the embedded API, for the API-level suites and fuzz/fuzz_api:
// admin_request builds one, and ApiFixture (an API with the namespace "default") sends them
// (validation_test, validation_service_test).
#pragma once

#include <string>

#include "embedded/api.hpp"

namespace gpupool::embedded::testing {

// A request as user "admin" in group system:masters. `path` may carry a query ("?a=1&b=2"):
// it is split into Request::query (a part without '=' is a key with an empty value).
inline Request admin_request(std::string method, std::string path, std::string body = "",
                             std::string content_type = "application/json", std::string accept = "application/json") {
  Request r;
  r.method = std::move(method);
  const auto qm = path.find('?');
  r.path = path.substr(0, qm);
  if (qm != std::string::npos) {
    const std::string q = path.substr(qm + 1);
    for (std::size_t i = 0; i <= q.size();) {
      auto amp = q.find('&', i);
      if (amp == std::string::npos) amp = q.size();
      const auto part = q.substr(i, amp - i);
      const auto eq = part.find('=');
      r.query.emplace(part.substr(0, eq), eq == std::string::npos ? "" : part.substr(eq + 1));
      i = amp + 1;
    }
  }
  r.body = std::move(body);
  r.content_type = std::move(content_type);
  r.accept = std::move(accept);
  r.user = "admin";
  r.groups = {"system:masters"};
  return r;
}

struct ApiFixture {
  Clock clock = Clock::manual();
  Store store{clock};
  Api api{store, {}};
  ApiFixture() {
    store.create(store.type("", "namespaces"), "",
                 boost::json::object{{"metadata", boost::json::object{{"name", "default"}}}});
  }
  Response call(std::string method, std::string path, std::string body = "",
                std::string content_type = "application/json") {
    return api.handle(admin_request(std::move(method), std::move(path), std::move(body), std::move(content_type)));
  }
};

}  // namespace gpupool::embedded::testing
