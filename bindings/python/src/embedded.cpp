// EmbeddedCluster: an embedded API server (embedded.hpp) plus a Cluster connected to it as the admin,
// usable as a context manager:  with gpupool.EmbeddedCluster(topology="seed") as cluster: ...
#include "cluster.hpp"

#include "gpupool/embedded.hpp"
#include "gpupool/error.hpp"

#include <pybind11/chrono.h>

namespace gpupool::py_bindings {
namespace {

/// The Python EmbeddedCluster: a Cluster (connected with the admin kubeconfig) that owns its server.
struct EmbeddedCluster : Cluster {
  EmbeddedCluster(Cluster cluster, std::shared_ptr<EmbeddedServer> server)
      : Cluster(std::move(cluster)), server(std::move(server)) {}
  std::shared_ptr<EmbeddedServer> server;

  void stop() {
    std::shared_ptr<EmbeddedServer> stopping = std::move(server);
    py::gil_scoped_release unlocked;
    stopping.reset();  // ~EmbeddedServer stops serving
  }
  EmbeddedServer& running() const {
    if (!server) throw Error("the embedded cluster was stopped; create a new EmbeddedCluster");
    return *server;
  }
};

std::unique_ptr<EmbeddedCluster> start(std::string topology, std::vector<std::string> users, std::optional<std::string> profile,
                                       bool manual_clock, std::string mpijob_version, int port,
                                       std::string kubeconfig_dir) {
  EmbeddedOptions o;
  o.topology = std::move(topology);
  o.users = std::move(users);
  o.manual_clock = manual_clock;
  o.mpijob_version = std::move(mpijob_version);
  o.port = port;
  o.kubeconfig_dir = std::move(kubeconfig_dir);
  ConnectOptions c;
  c.profile = profile.value_or("");
  c.logger = python_logger();
  py::gil_scoped_release unlocked;
  auto server = std::make_shared<EmbeddedServer>(std::move(o));
  c.kubeconfig = server->admin_kubeconfig();
  return std::make_unique<EmbeddedCluster>(Cluster::connect(c), std::move(server));
}

}  // namespace

void bind_embedded(py::module_& m) {
  py::class_<EmbeddedCluster, Cluster>(
      m, "EmbeddedCluster",
      "A Kubernetes API server in this process (HTTPS on 127.0.0.1) with a Cluster connected to it as the admin.\n"
      "    with gpupool.EmbeddedCluster(topology=\"seed\") as cluster:\n"
      "        print(cluster.nodes())\n"
      "With manual_clock (the default) time moves only by advance(), so pods start when you advance the clock.")
      .def(py::init(&start), py::kw_only(), py::arg("topology") = "seed", py::arg("users") = std::vector<std::string>{},
           py::arg("profile") = py::none(), py::arg("manual_clock") = true, py::arg("mpijob_version") = "v1",
           py::arg("port") = 0, py::arg("kubeconfig_dir") = "")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](EmbeddedCluster& self, py::args) { self.stop(); })
      .def("stop", &EmbeddedCluster::stop, "Stops and frees the server (idempotent); watches end.")
      .def_property_readonly("url", [](const EmbeddedCluster& self) { return self.running().url(); })
      .def_property_readonly("port", [](const EmbeddedCluster& self) { return self.running().port(); })
      .def_property_readonly("kubeconfig_dir", [](const EmbeddedCluster& self) { return self.running().kubeconfig_dir(); })
      .def("admin_kubeconfig", [](const EmbeddedCluster& self) { return self.running().admin_kubeconfig(); },
           "Path of the admin's kubeconfig (client certificate in system:masters).")
      .def("kubeconfig", [](const EmbeddedCluster& self, const std::string& user) { return self.running().kubeconfig(user); },
           py::arg("user"), "Path of a user's kubeconfig (bearer token; namespace = user).")
      .def("cert_kubeconfig",
           [](const EmbeddedCluster& self, const std::string& user) { return self.running().cert_kubeconfig(user); },
           py::arg("user"))
      .def(
          "connect",
          [](const EmbeddedCluster& self, const std::string& user, std::optional<std::string> profile) {
            ConnectOptions c;
            c.kubeconfig = self.running().kubeconfig(user);
            c.profile = profile.value_or(self.profile().name);
            c.logger = python_logger();
            py::gil_scoped_release unlocked;
            return Cluster::connect(c);
          },
          py::arg("user"), py::kw_only(), py::arg("profile") = py::none(),
          "A Cluster acting as one of the users (in the user's own namespace).")
      .def("now", [](const EmbeddedCluster& self) { return to_datetime(self.running().now()); }, "The cluster clock.")
      .def(
          "advance",
          [](EmbeddedCluster& self, py::object by) {
            auto d = duration_from(by);
            EmbeddedServer& server = self.running();
            py::gil_scoped_release unlocked;
            server.advance(d);
          },
          py::arg("by"), "Moves the cluster clock forward (seconds or a timedelta); pods progress accordingly.")
      .def("__repr__", [](const EmbeddedCluster& self) {
        return "EmbeddedCluster(url='" + (self.server ? self.server->url() : std::string("stopped")) + "', namespace='" +
               self.namespace_name() + "')";
      });
}

}  // namespace gpupool::py_bindings
