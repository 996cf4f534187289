// EmbeddedCluster: an embedded API server (embedded.hpp) plus a Cluster connected to it as the admin,
// usable as a context manager:  with gpupool.EmbeddedCluster(topology="seed") as cluster: ...
#include "cluster.hpp"

#include "gpupool/embedded.hpp"
#include "gpupool/embedded_state.hpp"
#include "gpupool/error.hpp"

#include <pybind11/chrono.h>

#include <fmt/format.h>

namespace gpupool::py_bindings {
namespace {

/// The Python EmbeddedCluster: a Cluster (connected with the admin kubeconfig) that owns its server,
/// or, with state=, a session on the topology's shared state (issue #16): it serves that state to
/// other processes (`gpupool --embedded`, kubectl), or joins the process that serves it already.
struct EmbeddedCluster : Cluster {
  EmbeddedCluster(Cluster cluster, std::shared_ptr<EmbeddedServer> server, std::shared_ptr<EmbeddedSession> session)
      : Cluster(std::move(cluster)), server(std::move(server)), session(std::move(session)) {}
  std::shared_ptr<EmbeddedServer> server;
  std::shared_ptr<EmbeddedSession> session;

  void stop() {
    std::shared_ptr<EmbeddedServer> stopping = std::move(server);
    std::shared_ptr<EmbeddedSession> closing = std::move(session);
    py::gil_scoped_release unlocked;
    stopping.reset();  // ~EmbeddedServer stops serving
    if (closing) closing->close();  // the owner folds its journal into the snapshot, lets go of the lock
  }
  bool stopped() const { return !server && !session; }  // one of the two while it runs
  bool joined() const { return session && session->joined(); }
  EmbeddedServer& running() const {
    if (stopped()) throw Error("the embedded cluster was stopped; create a new EmbeddedCluster");
    if (joined())
      throw Error(fmt::format("this EmbeddedCluster joined the one served by another process ({}); its server, "
                              "clock and user kubeconfigs are that process's", session->url()));
    return server ? *server : *session->server();
  }
  std::string url() const {
    if (stopped()) throw Error("the embedded cluster was stopped; create a new EmbeddedCluster");
    return joined() ? session->url() : running().url();
  }
};

std::unique_ptr<EmbeddedCluster> start(std::string topology, std::vector<std::string> users, std::optional<std::string> profile,
                                       std::optional<bool> manual_clock, std::string mpijob_version, int port,
                                       std::string kubeconfig_dir, py::object state) {
  EmbeddedOptions o;
  o.topology = std::move(topology);
  o.users = std::move(users);
  o.mpijob_version = std::move(mpijob_version);
  o.port = port;
  o.kubeconfig_dir = std::move(kubeconfig_dir);
  // state: False (a cluster of its own), True (the topology's shared state in the default
  // directory) or a directory.
  std::optional<std::string> state_dir;
  if (py::isinstance<py::str>(state)) state_dir = state.cast<std::string>();
  else if (!state.is_none() && state.cast<bool>()) state_dir = "";
  // A shared cluster runs on the wall clock unless asked otherwise: other processes see it move.
  o.manual_clock = manual_clock.value_or(!state_dir.has_value());
  ConnectOptions c;
  c.profile = profile.value_or("");
  c.logger = python_logger();
  py::gil_scoped_release unlocked;
  if (state_dir) {
    const std::string name = o.topology;
    auto session = std::make_shared<EmbeddedSession>(
        EmbeddedSessionOptions{.topology = name, .state_dir = *state_dir, .serve = true, .server = std::move(o)});
    c.kubeconfig = session->admin_kubeconfig();
    if (c.profile.empty() && session->paths().topology == "iiis") c.profile = "iiis";
    return std::make_unique<EmbeddedCluster>(Cluster::connect(c), nullptr, std::move(session));
  }
  auto server = std::make_shared<EmbeddedServer>(std::move(o));
  c.kubeconfig = server->admin_kubeconfig();
  return std::make_unique<EmbeddedCluster>(Cluster::connect(c), std::move(server), nullptr);
}

}  // namespace

void bind_embedded(py::module_& m) {
  py::class_<EmbeddedCluster, Cluster>(
      m, "EmbeddedCluster",
      "A Kubernetes API server in this process (HTTPS on 127.0.0.1) with a Cluster connected to it as the admin.\n"
      "    with gpupool.EmbeddedCluster(topology=\"seed\") as cluster:\n"
      "        print(cluster.nodes())\n"
      "With manual_clock (the default) time moves only by advance(), so pods start when you advance the clock.\n"
      "state=True (or a directory) serves the topology's shared state, the one `gpupool --embedded TOPOLOGY`\n"
      "commands and kubectl see, or joins the process that serves it already (see `joined`); its writes\n"
      "are kept across runs. A shared cluster runs on the wall clock unless manual_clock=True.")
      .def(py::init(&start), py::kw_only(), py::arg("topology") = "seed", py::arg("users") = std::vector<std::string>{},
           py::arg("profile") = py::none(), py::arg("manual_clock") = py::none(), py::arg("mpijob_version") = "v1",
           py::arg("port") = 0, py::arg("kubeconfig_dir") = "", py::arg("state") = false)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](EmbeddedCluster& self, py::args) { self.stop(); })
      .def("stop", &EmbeddedCluster::stop, "Stops and frees the server (idempotent); watches end.")
      .def_property_readonly("url", [](const EmbeddedCluster& self) { return self.url(); })
      .def_property_readonly("joined", &EmbeddedCluster::joined,
                             "True when state= found the topology served by another process and joined it.")
      .def_property_readonly("port", [](const EmbeddedCluster& self) { return self.running().port(); })
      .def_property_readonly("kubeconfig_dir", [](const EmbeddedCluster& self) { return self.running().kubeconfig_dir(); })
      .def("admin_kubeconfig",
           [](const EmbeddedCluster& self) {
             return self.joined() ? self.session->admin_kubeconfig() : self.running().admin_kubeconfig();
           },
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
        return "EmbeddedCluster(url='" + (self.stopped() ? std::string("stopped") : self.url()) + "', namespace='" +
               self.namespace_name() + "'" + (self.joined() ? ", joined=True" : "") + ")";
      });
}

}  // namespace gpupool::py_bindings
