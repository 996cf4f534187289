// EmbeddedCluster (embedded_cluster.hpp): an embedded API server plus a Cluster connected to it as the
// admin, usable as a context manager:  with gpupool.EmbeddedCluster(topology="seed") as cluster: ...
#include "cluster.hpp"

#include "gpupool/embedded_cluster.hpp"

#include <pybind11/chrono.h>

#include <utility>

namespace gpupool::py_bindings {
namespace {

/// state: False (a cluster of its own), True (the topology's shared state in the default directory)
/// or a directory.
std::optional<std::string> state_dir(py::handle state) {
  if (py::isinstance<py::str>(state)) return state.cast<std::string>();
  if (!state.is_none() && state.cast<bool>()) return std::string();
  return std::nullopt;
}

std::unique_ptr<EmbeddedCluster> start(std::string topology, std::vector<std::string> users,
                                       const std::optional<std::string>& profile, std::optional<bool> manual_clock,
                                       std::string mpijob_version, int port, std::string kubeconfig_dir,
                                       py::object state, const std::string& run) {
  EmbeddedClusterOptions o;
  o.topology = std::move(topology);
  o.state = state_dir(std::move(state));
  o.manual_clock = manual_clock;
  o.server.users = std::move(users);
  o.server.mpijob_version = std::move(mpijob_version);
  o.server.port = port;
  o.server.kubeconfig_dir = std::move(kubeconfig_dir);
  o.server.run = parse_run_mode(run);
  o.connect.profile = profile.value_or("");
  o.connect.logger = python_logger();
  py::gil_scoped_release unlocked;
  return std::make_unique<EmbeddedCluster>(o);
}

}  // namespace

void bind_embedded(py::module_& m) {
  py::class_<EmbeddedCluster, Cluster>(
      m, "EmbeddedCluster",
      "A Kubernetes API server in this process (HTTPS on 127.0.0.1) with a Cluster connected to it as the admin.\n"
      "    with gpupool.EmbeddedCluster(topology=\"seed\") as cluster:\n"
      "        print(cluster.nodes())\n"
      "With manual_clock (the default) time moves only by advance(), so pods start when you advance the clock.\n"
      "profile=None takes the topology's own (iiis for the iiis topology), else generic.\n"
      "state=True (or a directory) serves the topology's shared state, the one `gpupool --embedded TOPOLOGY`\n"
      "commands and kubectl see, or joins the process that serves it already (see `joined`); its writes\n"
      "are kept across runs. A shared cluster runs on the wall clock unless manual_clock=True.\n"
      "run=\"simulate\" (the default) simulates containers; run=\"local\" runs each container's command for real\n"
      "as a local process (the image is not pulled or run): its output is the pod's log, its exit code the\n"
      "container's state, and exec runs in the pod's directory and env; volumes are directories of the state\n"
      "seen at their mountPath, Kubeflow peers reach each other on 127.0.0.1. run=\"container\" runs the images\n"
      "with podman or docker instead. Only the commands you submit run.")
      .def(py::init(&start), py::kw_only(), py::arg("topology") = "seed", py::arg("users") = std::vector<std::string>{},
           py::arg("profile") = py::none(), py::arg("manual_clock") = py::none(), py::arg("mpijob_version") = "v1",
           py::arg("port") = 0, py::arg("kubeconfig_dir") = "", py::arg("state") = false, py::arg("run") = "simulate")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](EmbeddedCluster& self, const py::args&) {
             py::gil_scoped_release unlocked;  // the arguments stay the caller's: no reference dropped unlocked
             self.stop();
           })
      .def("stop", &EmbeddedCluster::stop, py::call_guard<py::gil_scoped_release>(),
           "Stops and frees the server (idempotent); watches end.")
      .def_property_readonly("stopped", &EmbeddedCluster::stopped)
      .def_property_readonly("url", &EmbeddedCluster::url)
      .def_property_readonly("joined", &EmbeddedCluster::joined,
                             "True when state= found the topology served by another process and joined it.")
      .def_property_readonly("port", [](const EmbeddedCluster& self) { return self.server().port(); })
      .def_property_readonly("kubeconfig_dir",
                             [](const EmbeddedCluster& self) { return self.server().kubeconfig_dir(); })
      .def("admin_kubeconfig", &EmbeddedCluster::admin_kubeconfig,
           "Path of the admin's kubeconfig (client certificate in system:masters).")
      .def(
          "kubeconfig",
          [](const EmbeddedCluster& self, const std::string& user) { return self.server().kubeconfig(user); },
          py::arg("user"), "Path of a user's kubeconfig (bearer token; namespace = user).")
      .def(
          "cert_kubeconfig",
          [](const EmbeddedCluster& self, const std::string& user) { return self.server().cert_kubeconfig(user); },
          py::arg("user"))
      .def(
          "connect",
          [](const EmbeddedCluster& self, const std::string& user, std::optional<std::string> profile) {
            return self.connect(user, profile.value_or(""));
          },
          py::arg("user"), py::kw_only(), py::arg("profile") = py::none(), py::call_guard<py::gil_scoped_release>(),
          "A Cluster acting as one of the users (in the user's own namespace).")
      .def(
          "now", [](const EmbeddedCluster& self) { return to_datetime(self.server().now()); }, "The cluster clock.")
      .def(
          "advance",
          [](EmbeddedCluster& self, py::object by) {
            auto d = duration_from(std::move(by));
            EmbeddedServer& server = self.server();
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
