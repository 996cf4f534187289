// Bindings of the workload spec (workload.hpp) and the Arena-style options that build one
// (submit_options.hpp: the one place the option strings are parsed).
#include "common.hpp"

#include "gpupool/error.hpp"

#include "gpupool/submit_options.hpp"
#include "gpupool/workload.hpp"

namespace gpupool::py_bindings {
namespace {

/// Lets a pybind11 enum be given by its member name ("Exists"), as well as by value.
template <class E>
void accept_member_names(py::enum_<E>& e) {
  py::handle type = e;
  e.def(py::init([type](const std::string& name) {
          py::dict members = type.attr("__members__");
          if (!members.contains(name)) {
            std::string names;
            for (auto kv : members) names += (names.empty() ? "" : ", ") + kv.first.cast<std::string>();
            throw py::value_error("\"" + name + "\" is not a " + type.attr("__name__").cast<std::string>() +
                                  " (one of: " + names + ")");
          }
          return members[py::str(name)].cast<E>();
        }),
        py::arg("name"));
  py::implicitly_convertible<py::str, E>();
}

void bind_enums(py::module_& m) {
  py::enum_<TolerationOperator> op(m, "TolerationOperator");
  op.value("Equal", TolerationOperator::Equal).value("Exists", TolerationOperator::Exists);
  accept_member_names(op);

  py::enum_<MpiJobApi> mpi(m, "MpiJobApi",
                           "Which MPIJob API to render: Auto (what the cluster serves; V1 without a cluster), "
                           "V1 (training-operator) or V2Beta1 (mpi-operator).");
  mpi.value("Auto", MpiJobApi::Auto).value("V1", MpiJobApi::V1).value("V2Beta1", MpiJobApi::V2Beta1);
  accept_member_names(mpi);

  py::enum_<NodeSelectorOperator> nso(m, "NodeSelectorOperator");
  nso.value("In", NodeSelectorOperator::In)
      .value("NotIn", NodeSelectorOperator::NotIn)
      .value("Exists", NodeSelectorOperator::Exists)
      .value("DoesNotExist", NodeSelectorOperator::DoesNotExist)
      .value("Gt", NodeSelectorOperator::Gt)
      .value("Lt", NodeSelectorOperator::Lt);
  accept_member_names(nso);
}

void bind_parts(py::module_& m) {
  py::class_<EnvVar> env(m, "EnvVar", "An environment variable: a literal value, or field_path (valueFrom.fieldRef).");
  def_kwargs_init(env);
  env.def(py::init([](std::string name, std::string value, std::string field_path) {
            return EnvVar{std::move(name), std::move(value), std::move(field_path)};
          }),
          py::arg("name"), py::arg("value") = "", py::kw_only(), py::arg("field_path") = "")
      .def_readwrite("name", &EnvVar::name)
      .def_readwrite("value", &EnvVar::value)
      .def_readwrite("field_path", &EnvVar::field_path)
      // The value is left out: env values may carry credentials.
      .def("__repr__", [](const EnvVar& self) { return "EnvVar(name='" + self.name + "')"; });
  def_equality(env);

  py::class_<NodeSelectorRequirement> req(m, "NodeSelectorRequirement",
                                          "One expression of a required node-affinity term.");
  def_kwargs_init(req);
  req.def_readwrite("key", &NodeSelectorRequirement::key)
      .def_readwrite("operator", &NodeSelectorRequirement::op)
      .def_readwrite("values", &NodeSelectorRequirement::values)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "NodeSelectorRequirement", {"key", "operator", "values"});
      });
  def_equality(req);

  py::class_<Replicas> rep(m, "Replicas", "Replica counts; each kind reads the ones it has.");
  def_kwargs_init(rep);
  rep.def_readwrite("workers", &Replicas::workers)
      .def_readwrite("ps", &Replicas::ps)
      .def_readwrite("chief", &Replicas::chief)
      .def_readwrite("evaluator", &Replicas::evaluator)
      .def_readwrite("master", &Replicas::master)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "Replicas", {"workers", "ps", "chief", "master"});
      });
  def_equality(rep);

  py::class_<RoleSettings> role(m, "RoleSettings",
                                "What one TFJob replica type gets over the workload's resources and nodeSelector "
                                "(Arena's --worker-cpu, --ps-gpus, --chief-port, --evaluator-selector ...).");
  def_kwargs_init(role);
  role.def_readwrite("cpu_request", &RoleSettings::cpu_request)
      .def_readwrite("cpu_limit", &RoleSettings::cpu_limit)
      .def_readwrite("memory_request", &RoleSettings::memory_request)
      .def_readwrite("memory_limit", &RoleSettings::memory_limit)
      .def_readwrite("gpus", &RoleSettings::gpus)
      .def_readwrite("node_selector", &RoleSettings::node_selector)
      .def_readwrite("port", &RoleSettings::port)
      .def_readwrite("affinity_policy", &RoleSettings::affinity_policy)
      .def_readwrite("affinity_required", &RoleSettings::affinity_required)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "RoleSettings", {"cpu_request", "memory_request", "gpus", "node_selector", "port"});
      });
  def_equality(role);

  py::class_<TensorBoard> tb(m, "TensorBoard", "A TensorBoard Deployment + NodePort Service reading the log dir.");
  def_kwargs_init(tb);
  tb.def_readwrite("enabled", &TensorBoard::enabled)
      .def_readwrite("log_dir", &TensorBoard::log_dir)
      .def_readwrite("image", &TensorBoard::image)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "TensorBoard", {"enabled", "log_dir", "image"});
      });
  def_equality(tb);
}

void bind_workload_class(py::module_& m) {
  py::class_<Workload> w(m, "Workload",
                         "One portable spec for a training workload. Build it with keyword arguments, or from "
                         "Arena-style options with to_workload(). List and dict attributes return copies: assign "
                         "a whole new list to change one.");
  def_kwargs_init(w);
  w.def_readwrite("name", &Workload::name)
      .def_readwrite("namespace", &Workload::namespace_)
      .def_readwrite("mpi_api", &Workload::mpi_api)
      .def_readwrite("runtime", &Workload::runtime)
      .def_readwrite("image", &Workload::image)
      .def_readwrite("command", &Workload::command)
      .def_readwrite("shell", &Workload::shell)
      .def_readwrite("env", &Workload::env)
      .def_readwrite("working_dir", &Workload::working_dir)
      .def_readwrite("resources", &Workload::resources)
      .def_readwrite("replicas", &Workload::replicas)
      .def_readwrite("role_settings", &Workload::role_settings)
      .def_readwrite("success_policy", &Workload::success_policy)
      .def_readwrite("slots_per_worker", &Workload::slots_per_worker)
      .def_readwrite("tolerations", &Workload::tolerations)
      .def_readwrite("node_selector", &Workload::node_selector)
      .def_readwrite("required_node_affinity", &Workload::required_node_affinity)
      .def_readwrite("pvcs", &Workload::pvcs)
      .def_readwrite("config_maps", &Workload::config_maps)
      .def_readwrite("volumes", &Workload::volumes)
      .def_readwrite("mounts", &Workload::mounts)
      .def_readwrite("ssd", &Workload::ssd)
      .def_readwrite("nfs", &Workload::nfs)
      .def_readwrite("shm_size", &Workload::shm_size)
      .def_readwrite("staging", &Workload::staging)
      .def_readwrite("scheduler_name", &Workload::scheduler_name)
      .def_readwrite("host_network", &Workload::host_network)
      .def_readwrite("host_ipc", &Workload::host_ipc)
      .def_readwrite("priority_class_name", &Workload::priority_class_name)
      .def_readwrite("runtime_class_name", &Workload::runtime_class_name)
      .def_readwrite("queue", &Workload::queue)
      .def_readwrite("gang", &Workload::gang)
      .def_readwrite("image_pull_secrets", &Workload::image_pull_secrets)
      .def_readwrite("labels", &Workload::labels)
      .def_readwrite("annotations", &Workload::annotations)
      .def_readwrite("backoff_limit", &Workload::backoff_limit)
      .def_readwrite("ttl_seconds_after_finished", &Workload::ttl_seconds_after_finished)
      .def_readwrite("active_deadline_seconds", &Workload::active_deadline_seconds)
      .def_readwrite("image_pull_policy", &Workload::image_pull_policy)
      .def_readwrite("shell_program", &Workload::shell_program)
      .def_readwrite("ps_image", &Workload::ps_image)
      .def_readwrite("worker_image", &Workload::worker_image)
      .def_readwrite("indexed", &Workload::indexed)
      .def_readwrite("tensorboard", &Workload::tensorboard)
      .def(
          "validate", [](const Workload& self) { validate(self); },
          "Checks the spec as the API server and the operators would; raises ValidationError.")
      .def("derived_replica_names", [](const Workload& self) { return derived_replica_names(self); })
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "Workload", {"name", "kind", "image"});
      });
  GPUPOOL_PY_ENUM_PROPERTY(w, Workload, "kind", kind, parse_workload_kind, "kind");
  GPUPOOL_PY_OPTIONAL_ENUM_PROPERTY(w, Workload, "restart_policy", restart_policy, parse_restart_policy,
                                    "restartPolicy");
  GPUPOOL_PY_OPTIONAL_ENUM_PROPERTY(w, Workload, "clean_pod_policy", clean_pod_policy, parse_clean_pod_policy,
                                    "cleanPodPolicy");
  m.def(
      "parse_workload_kind",
      [](std::string_view text, std::string_view field) {
        return std::string(to_string(parse_workload_kind(text, field)));
      },
      py::arg("text"), py::arg("field") = "kind", "The Kubernetes kind for what users type (\"mpi\" -> \"MPIJob\").");
}

void bind_submit_options(py::module_& m) {
  py::class_<SubmitOptions> o(m, "SubmitOptions",
                              "Arena-style submission options as users type them (`gpupool submit` flags).");
  def_kwargs_init(o);
  o.def_readwrite("kind", &SubmitOptions::kind)
      .def_readwrite("name", &SubmitOptions::name)
      .def_readwrite("namespace", &SubmitOptions::namespace_)
      .def_readwrite("image", &SubmitOptions::image)
      .def_readwrite("gpus", &SubmitOptions::gpus)
      .def_readwrite("workers", &SubmitOptions::workers)
      .def_readwrite("ps", &SubmitOptions::ps)
      .def_readwrite("chief", &SubmitOptions::chief)
      .def_readwrite("cpu", &SubmitOptions::cpu)
      .def_readwrite("memory", &SubmitOptions::memory)
      .def_readwrite("cpu_limit", &SubmitOptions::cpu_limit)
      .def_readwrite("memory_limit", &SubmitOptions::memory_limit)
      .def_readwrite("gpu_limit", &SubmitOptions::gpu_limit)
      .def_readwrite("shm", &SubmitOptions::shm)
      .def_readwrite("tolerations", &SubmitOptions::tolerations)
      .def_readwrite("selectors", &SubmitOptions::selectors)
      .def_readwrite("data", &SubmitOptions::data)
      .def_readwrite("data_dirs", &SubmitOptions::data_dirs)
      .def_readwrite("pvc_create", &SubmitOptions::pvc_create)
      .def_readwrite("env", &SubmitOptions::env)
      .def_readwrite("ssd", &SubmitOptions::ssd)
      .def_readwrite("nfs", &SubmitOptions::nfs)
      .def_property(
          "stage_in", [](const SubmitOptions& self) { return self.stage_in; },
          [](SubmitOptions& self, py::object value) {
            // One "SOURCE:CACHE" string, or a list of them (--stage-in is repeatable).
            if (py::isinstance<py::str>(value))
              self.stage_in = {value.cast<std::string>()};
            else
              self.stage_in = value.cast<std::vector<std::string>>();
          })
      .def_readwrite("stage_out", &SubmitOptions::stage_out)
      .def_readwrite("stage_out_grace", &SubmitOptions::stage_out_grace)
      .def_readwrite("working_dir", &SubmitOptions::working_dir)
      .def_readwrite("tensorboard", &SubmitOptions::tensorboard)
      .def_readwrite("logdir", &SubmitOptions::logdir)
      .def_readwrite("mpi_api", &SubmitOptions::mpi_api)
      .def_readwrite("runtime", &SubmitOptions::runtime)
      .def_readwrite("scheduler_name", &SubmitOptions::scheduler_name)
      .def_readwrite("priority_class", &SubmitOptions::priority_class)
      .def_readwrite("runtime_class", &SubmitOptions::runtime_class)
      .def_readwrite("queue", &SubmitOptions::queue)
      .def_readwrite("gang", &SubmitOptions::gang)
      .def_readwrite("command", &SubmitOptions::command)
      .def_readwrite("argv", &SubmitOptions::argv)
      .def_readwrite("annotations", &SubmitOptions::annotations)
      .def_readwrite("labels", &SubmitOptions::labels)
      .def_readwrite("image_pull_secrets", &SubmitOptions::image_pull_secrets)
      .def_readwrite("image_pull_policy", &SubmitOptions::image_pull_policy)
      .def_readwrite("tensorboard_image", &SubmitOptions::tensorboard_image)
      .def_readwrite("retry", &SubmitOptions::retry)
      .def_readwrite("shell", &SubmitOptions::shell)
      .def_readwrite("running_timeout", &SubmitOptions::running_timeout)
      .def_readwrite("ttl_after_finished", &SubmitOptions::ttl_after_finished)
      .def_readwrite("clean_task_policy", &SubmitOptions::clean_task_policy)
      .def_readwrite("config_files", &SubmitOptions::config_files)
      .def_readwrite("sync_mode", &SubmitOptions::sync_mode)
      .def_readwrite("sync_source", &SubmitOptions::sync_source)
      .def_readwrite("sync_image", &SubmitOptions::sync_image)
      .def_readwrite("ps_image", &SubmitOptions::ps_image)
      .def_readwrite("worker_image", &SubmitOptions::worker_image)
      .def_readwrite("evaluator", &SubmitOptions::evaluator)
      .def_readwrite("devices", &SubmitOptions::devices)
      // TFJob's per-role options (Arena's --worker-cpu, --ps-gpus, --chief-selector ...).
      .def_readwrite("worker_cpu", &SubmitOptions::worker_cpu)
      .def_readwrite("worker_cpu_limit", &SubmitOptions::worker_cpu_limit)
      .def_readwrite("worker_memory", &SubmitOptions::worker_memory)
      .def_readwrite("worker_memory_limit", &SubmitOptions::worker_memory_limit)
      .def_readwrite("worker_selectors", &SubmitOptions::worker_selectors)
      .def_readwrite("worker_port", &SubmitOptions::worker_port)
      .def_readwrite("ps_cpu", &SubmitOptions::ps_cpu)
      .def_readwrite("ps_cpu_limit", &SubmitOptions::ps_cpu_limit)
      .def_readwrite("ps_memory", &SubmitOptions::ps_memory)
      .def_readwrite("ps_memory_limit", &SubmitOptions::ps_memory_limit)
      .def_readwrite("ps_selectors", &SubmitOptions::ps_selectors)
      .def_readwrite("ps_port", &SubmitOptions::ps_port)
      .def_readwrite("ps_gpus", &SubmitOptions::ps_gpus)
      .def_readwrite("chief_cpu", &SubmitOptions::chief_cpu)
      .def_readwrite("chief_cpu_limit", &SubmitOptions::chief_cpu_limit)
      .def_readwrite("chief_memory", &SubmitOptions::chief_memory)
      .def_readwrite("chief_memory_limit", &SubmitOptions::chief_memory_limit)
      .def_readwrite("chief_selectors", &SubmitOptions::chief_selectors)
      .def_readwrite("chief_port", &SubmitOptions::chief_port)
      .def_readwrite("evaluator_cpu", &SubmitOptions::evaluator_cpu)
      .def_readwrite("evaluator_cpu_limit", &SubmitOptions::evaluator_cpu_limit)
      .def_readwrite("evaluator_memory", &SubmitOptions::evaluator_memory)
      .def_readwrite("evaluator_memory_limit", &SubmitOptions::evaluator_memory_limit)
      .def_readwrite("evaluator_selectors", &SubmitOptions::evaluator_selectors)
      // More of Arena's training options (--share-memory, --nproc-per-node ...; refused ones too,
      // so that the error says what is missing).
      .def_readwrite("worker_affinity_policy", &SubmitOptions::worker_affinity_policy)
      .def_readwrite("worker_affinity_constraint", &SubmitOptions::worker_affinity_constraint)
      .def_readwrite("ps_affinity_policy", &SubmitOptions::ps_affinity_policy)
      .def_readwrite("ps_affinity_constraint", &SubmitOptions::ps_affinity_constraint)
      .def_readwrite("share_memory", &SubmitOptions::share_memory)
      .def_readwrite("nproc_per_node", &SubmitOptions::nproc_per_node)
      .def_readwrite("mounts_on_launcher", &SubmitOptions::mounts_on_launcher)
      .def_readwrite("success_policy", &SubmitOptions::success_policy)
      .def_readwrite("role_sequence", &SubmitOptions::role_sequence)
      .def_readwrite("starting_timeout", &SubmitOptions::starting_timeout)
      .def_readwrite("gputopology", &SubmitOptions::gputopology)
      .def_readwrite("rdma", &SubmitOptions::rdma)
      .def_readwrite("model_name", &SubmitOptions::model_name)
      .def_readwrite("model_source", &SubmitOptions::model_source)
      .def("to_workload", [](const SubmitOptions& self) { return to_workload_python(self); })
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "SubmitOptions", {"kind", "name", "image", "gpus"});
      });

  m.def(
      "to_workload",
      [](const std::optional<SubmitOptions>& options, const py::kwargs& kwargs) {
        if (options && !kwargs.empty())
          throw py::type_error("to_workload() takes either a SubmitOptions or keyword arguments, not both");
        return to_workload_python(options ? *options : from_kwargs<SubmitOptions>(kwargs));
      },
      py::arg("options") = py::none(),
      "Builds and validates the Workload that Arena-style options describe, e.g.\n"
      "to_workload(kind=\"mpi\", name=\"mpi-dist\", image=\"...\", gpus=1, tolerations=[\"ssd_node\"]).\n"
      "Raises ValidationError naming the option (\"--data[1]\").");
  m.def("parse_key_value", &parse_key_value, py::arg("text"), py::arg("field"));
  m.def("parse_count", &parse_count, py::arg("text"), py::arg("field"));
}

}  // namespace

Workload to_workload_python(const SubmitOptions& options) {
  try {
    return to_workload(options, OptionNames::Keyword);  // refusals by kind name the keyword
  } catch (const ValidationError& e) {
    throw with_keyword_names(e);
  }
}

ValidationError with_keyword_names(const ValidationError& e) {
  {
    const std::string& field = e.field();
    if (field.rfind("--", 0) != 0) return e;
    const auto bracket = field.find('[');
    const std::string flag = field.substr(0, bracket);
    return ValidationError(option_keyword(flag) + (bracket == std::string::npos ? "" : field.substr(bracket)),
                           e.value(), e.rule());
  }
}

void bind_workload(py::module_& m) {
  bind_enums(m);
  bind_parts(m);
  bind_workload_class(m);
  bind_submit_options(m);
}

}  // namespace gpupool::py_bindings
