// An embedded API with the namespace "default", called as the cluster admin: the fixture of the
// API-level validation suites (validation_test, validation_service_test).
#pragma once

#include <string>

#include "embedded/api.hpp"

namespace gpupool::embedded::testing {

struct ApiFixture {
  Clock clock = Clock::manual();
  Store store{clock};
  Api api{store, {}};
  ApiFixture() {
    store.create(store.type("", "namespaces"), "",
                 boost::json::object{{"metadata", boost::json::object{{"name", "default"}}}});
  }
  // `path` may carry a query ("?a=1&b=2").
  Response call(std::string method, std::string path, std::string body = "",
                std::string content_type = "application/json") {
    Request r;
    r.method = std::move(method);
    const auto qm = path.find('?');
    r.path = path.substr(0, qm);
    if (qm != std::string::npos) {
      std::string q = path.substr(qm + 1);
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
    r.accept = "application/json";
    r.user = "admin";
    r.groups = {"system:masters"};
    return api.handle(r);
  }
};

}  // namespace gpupool::embedded::testing
