// explain of a job whose pods admission refuses: the controller's FailedCreate reason, not
// "no pods to explain" (issue #13).
#include <doctest/doctest.h>

#include "embedded/store.hpp"
#include "gpupool/cluster.hpp"
#include "gpupool/embedded.hpp"
#include "gpupool/submit_options.hpp"

#include <boost/json.hpp>

using namespace gpupool;
namespace json = boost::json;

TEST_CASE("explain: a Deployment and a Job whose pods a quota refuses show the FailedCreate reason") {
  EmbeddedOptions eo;
  eo.topology = "seed";
  EmbeddedServer server{eo};
  Cluster admin = Cluster::connect({.kubeconfig = server.admin_kubeconfig()});
  // The guide's quota: limits.cpu and limits.memory, so pods without limits are refused.
  server.store().create(server.store().type("", "resourcequotas"), "default",
                        json::parse(R"({"metadata":{"name":"team"},"spec":{"hard":{"limits.cpu":"8","limits.memory":"32Gi"}}})")
                            .as_object());
  for (const char* kind : {"job", "deployment"}) {
    CAPTURE(kind);
    SubmitOptions o;
    o.kind = kind;
    o.name = std::string("no-limits-") + kind;
    o.image = "busybox";
    o.command = "sleep 1";
    admin.submit(to_workload(o));
    const Explanation e = admin.explain(o.name);
    const std::string text = e.to_text();
    CAPTURE(text);
    CHECK(text.find("no pods to explain") == std::string::npos);
    CHECK(text.find("no pods created") != std::string::npos);
    CHECK(text.find("is forbidden: failed quota: team: must specify limits.cpu for: ") != std::string::npos);
  }
}
