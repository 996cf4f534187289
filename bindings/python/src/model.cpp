// Bindings of the model layer's value types: Quantity, taints and tolerations, Node, images,
// storage, resources, staging. Kinds, effects and modes are strings ("NoSchedule", "ReadWriteMany")
// converted with the C++ to_string()/parse_*() functions.
#include "common.hpp"

#include "gpupool/image.hpp"
#include "gpupool/node.hpp"
#include "gpupool/quantity.hpp"
#include "gpupool/resources.hpp"
#include "gpupool/staging.hpp"
#include "gpupool/storage.hpp"
#include "gpupool/taint.hpp"

#include <pybind11/chrono.h>
#include <pybind11/operators.h>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace gpupool::py_bindings {
namespace {

const char* format_name(Quantity::Format f) {
  switch (f) {
    case Quantity::Format::DecimalSI:
      return "DecimalSI";
    case Quantity::Format::BinarySI:
      return "BinarySI";
    case Quantity::Format::DecimalExponent:
      return "DecimalExponent";
  }
  return "DecimalSI";
}

Quantity quantity_from(py::handle value) {
  if (py::isinstance<Quantity>(value)) return value.cast<Quantity>();
  if (py::isinstance<py::bool_>(value)) throw py::type_error("Quantity() takes a str or an int, not a bool");
  if (py::isinstance<py::int_>(value)) return Quantity::from_int(value.cast<std::int64_t>());
  if (py::isinstance<py::str>(value)) return Quantity::parse(value.cast<std::string>());
  throw py::type_error("Quantity() takes a str such as \"10Gi\" or \"500m\", or an int");
}

void bind_quantity(py::module_& m) {
  py::class_<Quantity> q(m, "Quantity",
                         "A Kubernetes resource quantity (\"500m\", \"10Gi\", \"1e3\"), exact, printed canonically.");
  q.def(py::init([](py::object value) { return quantity_from(value); }), py::arg("value") = 0)
      .def_static(
          "parse", [](std::string_view text, std::string_view field) { return Quantity::parse(text, field); },
          py::arg("text"), py::arg("field") = "quantity")
      .def_static("from_milli", &Quantity::from_milli, py::arg("milli"))
      .def("__str__", &Quantity::to_string)
      .def("to_string", &Quantity::to_string)
      .def("__repr__", [](const Quantity& self) { return "Quantity('" + self.to_string() + "')"; })
      .def("value", &Quantity::value, "Rounded away from zero to an integer (Go's Value()).")
      .def("milli_value", &Quantity::milli_value, "In thousandths, rounded away from zero (Go's MilliValue()).")
      .def_property_readonly("nano_value", [](const Quantity& self) { return int128_to_python(self.nano_value()); })
      .def_property_readonly("format", [](const Quantity& self) { return format_name(self.format()); })
      .def("is_zero", &Quantity::is_zero)
      .def("is_negative", &Quantity::is_negative)
      .def("__bool__", [](const Quantity& self) { return !self.is_zero(); })
      .def("__hash__", [](const Quantity& self) { return py::hash(int128_to_python(self.nano_value())); })
      .def(py::self + py::self)
      .def(py::self - py::self)
      .def(py::self * std::int64_t())
      .def(
          "__rmul__", [](const Quantity& self, std::int64_t n) { return self * n; }, py::is_operator())
      .def(-py::self)
      .def(py::self == py::self)
      .def(py::self != py::self)
      .def(py::self < py::self)
      .def(py::self <= py::self)
      .def(py::self > py::self)
      .def(py::self >= py::self)
      .def(py::pickle([](const Quantity& self) { return self.to_string(); },
                      [](const std::string& text) { return Quantity::parse(text); }));
  py::implicitly_convertible<py::str, Quantity>();
  py::implicitly_convertible<py::int_, Quantity>();
}

void bind_taints(py::module_& m) {
  py::class_<Taint> taint(m, "Taint",
                          "A node taint: key, value, effect (\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\").");
  taint
      .def(py::init([](std::string key, std::string value, std::string_view effect) {
             return Taint{std::move(key), std::move(value), parse_taint_effect(effect)};
           }),
           py::arg("key"), py::arg("value") = "", py::arg("effect") = "NoSchedule")
      .def_static(
          "parse", [](std::string_view text, std::string_view field) { return parse_taint(text, field); },
          py::arg("text"), py::arg("field") = "taint", "kubectl's form: \"key=value:Effect\" or \"key:Effect\".")
      .def_readwrite("key", &Taint::key)
      .def_readwrite("value", &Taint::value)
      .def("to_string", &Taint::to_string)
      .def("__str__", &Taint::to_string)
      .def("__repr__",
           [](py::handle self) {
             return repr_fields(self, "Taint", {"key", "value", "effect"});
           })
      .def(
          "validate", [](const Taint& self, std::string_view field) { validate(self, field); },
          py::arg("field") = "taint");
  GPUPOOL_PY_ENUM_PROPERTY(taint, Taint, "effect", effect, parse_taint_effect, "effect");
  def_equality(taint);

  m.def(
      "validate_taints", [](const std::vector<Taint>& taints, std::string_view field) { validate(taints, field); },
      py::arg("taints"), py::arg("field") = "spec.taints");

  py::class_<TaintChange> change(m, "TaintChange", "One argument of `kubectl taint nodes NODE ...`.");
  change
      .def_static(
          "parse", [](std::string_view text, std::string_view field) { return parse_taint_change(text, field); },
          py::arg("text"), py::arg("field") = "taint",
          "\"key=value:Effect\", \"key:Effect\", removals \"key-\", \"key:Effect-\".")
      .def_readwrite("taint", &TaintChange::taint)
      .def_readwrite("remove", &TaintChange::remove)
      .def_readwrite("effect_given", &TaintChange::effect_given)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "TaintChange", {"taint", "remove", "effect_given"});
      });
  // TaintChange::parse is the only constructor on purpose: that is where the syntax lives.
  py::implicitly_convertible<py::str, TaintChange>();
  change.def(py::init([](std::string_view text) { return parse_taint_change(text); }), py::arg("text"));

  m.def("apply_taint_changes", &apply_taint_changes, py::arg("taints"), py::arg("changes"), py::arg("overwrite") = true,
        "kubectl's reorganizeTaints: the node's new taint list.");

  py::class_<Toleration> tol(m, "Toleration", "A pod toleration (core/v1 semantics).");
  tol.def(py::init([](std::string key, TolerationOperator op, std::string value, std::optional<std::string_view> effect,
                      std::optional<std::int64_t> seconds) {
            Toleration t;
            t.key = std::move(key);
            t.op = op;
            t.value = std::move(value);
            if (effect) t.effect = parse_taint_effect(*effect);
            t.toleration_seconds = seconds;
            return t;
          }),
          py::kw_only(), py::arg("key") = "", py::arg("operator") = "Equal", py::arg("value") = "",
          py::arg("effect") = py::none(), py::arg("toleration_seconds") = py::none())
      .def_static(
          "parse", [](std::string_view text, std::string_view field) { return parse_toleration(text, field); },
          py::arg("text"), py::arg("field") = "toleration",
          "What users type after --toleration: \"ssd_node\", \"all\", \"key=value:Effect\", \"key:Effect\", "
          "\"key=value\", \"key=value:effect,operator\".")
      .def_static("all", &Toleration::all, "Tolerates every taint.")
      .def_readwrite("key", &Toleration::key)
      .def_readwrite("operator", &Toleration::op)
      .def_readwrite("value", &Toleration::value)
      .def_readwrite("toleration_seconds", &Toleration::toleration_seconds)
      .def("tolerates", &Toleration::tolerates, py::arg("taint"), "core/v1 ToleratesTaint.")
      .def("to_string", &Toleration::to_string)
      .def("__str__", &Toleration::to_string)
      .def("__repr__",
           [](py::handle self) {
             return repr_fields(self, "Toleration", {"key", "operator", "value", "effect", "toleration_seconds"});
           })
      .def(
          "validate", [](const Toleration& self, std::string_view field) { validate(self, field); },
          py::arg("field") = "toleration");
  GPUPOOL_PY_OPTIONAL_ENUM_PROPERTY(tol, Toleration, "effect", effect, parse_taint_effect, "effect");
  def_equality(tol);

  m.def(
      "parse_toleration", [](std::string_view text, std::string_view field) { return parse_toleration(text, field); },
      py::arg("text"), py::arg("field") = "toleration");
  m.def("parse_tolerations", &parse_tolerations, py::arg("texts"), py::arg("field") = "toleration",
        "Parses a repeated --toleration flag; results accumulate in order, duplicates collapse.");
  m.def(
      "parse_taint", [](std::string_view text, std::string_view field) { return parse_taint(text, field); },
      py::arg("text"), py::arg("field") = "taint");
  m.def("parse_taint_changes", &parse_taint_changes, py::arg("texts"), py::arg("field") = "taint",
        "Parses the changes of one `kubectl taint` command line (\"k=v:NoSchedule\", \"k-\"), in order.");
  m.def("tolerated", &tolerated, py::arg("taint"), py::arg("tolerations"));
  m.def("first_untolerated_filtering_taint", &first_untolerated_filtering_taint, py::arg("taints"),
        py::arg("tolerations"),
        "The scheduler's TaintToleration filter: the first NoSchedule/NoExecute taint not tolerated.");
  m.def("count_intolerable_prefer_no_schedule", &count_intolerable_prefer_no_schedule, py::arg("taints"),
        py::arg("tolerations"));
}

void bind_node(py::module_& m) {
  m.def(
      "human_duration", [](std::chrono::nanoseconds d) { return human_duration(d); }, py::arg("duration"),
      "kubectl's HumanDuration of a datetime.timedelta (\"29s\", \"5m10s\", \"2d23h\").");

  py::class_<NodeAddress> addr(m, "NodeAddress");
  def_kwargs_init(addr);
  addr.def_readwrite("type", &NodeAddress::type)
      .def_readwrite("address", &NodeAddress::address)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "NodeAddress", {"type", "address"});
      });
  def_equality(addr);

  py::class_<Node> node(m, "Node", "A cluster node, built from a core/v1 Node object.");
  def_kwargs_init(node);
  node.def_static(
          "from_json", [](py::handle obj) { return Node::from_json(from_python(obj)); }, py::arg("node"),
          "Reads a core/v1 Node object (a dict).")
      .def("to_json", [](const Node& self) { return to_python(self.to_json()); })
      .def_readwrite("name", &Node::name)
      .def_readwrite("labels", &Node::labels)
      .def_readwrite("annotations", &Node::annotations)
      .def_readwrite("taints", &Node::taints)
      .def_readwrite("unschedulable", &Node::unschedulable)
      .def_readwrite("addresses", &Node::addresses)
      .def_readwrite("ready_status", &Node::ready_status)
      .def_readwrite("kubelet_version", &Node::kubelet_version)
      .def_property(
          "created",
          [](const Node& self) -> py::object {
            if (!self.created) return py::none();
            return to_datetime(*self.created);
          },
          [](Node& self, py::object value) {
            if (value.is_none()) {
              self.created.reset();
            } else {
              self.created = std::chrono::time_point_cast<std::chrono::seconds>(from_datetime(value));
            }
          })
      .def_readwrite("capacity", &Node::capacity)
      .def_readwrite("allocatable", &Node::allocatable)
      .def("internal_ip", &Node::internal_ip)
      .def("roles", &Node::roles)
      .def("roles_column", &Node::roles_column)
      .def("status_column", &Node::status_column)
      .def(
          "age",
          [](const Node& self, py::object now) {
            return self.age(now.is_none() ? std::chrono::system_clock::now() : from_datetime(now));
          },
          py::arg("now") = py::none())
      .def("__repr__", [](const Node& self) { return "Node(name='" + self.name + "')"; });
  def_equality(node);

  py::class_<NodeSummary> summary(m, "NodeSummary",
                                  "What the whole-cluster views keep of a node: its columns and allocatable figures.");
  summary
      .def_static("of", &NodeSummary::of, py::arg("node"), py::arg("gpu_resource"),
                  "The summary of a Node, counting `gpu_resource` as its GPUs.")
      .def_readonly("name", &NodeSummary::name)
      .def_readonly("status", &NodeSummary::status)
      .def_readonly("roles", &NodeSummary::roles)
      .def_readonly("kubelet_version", &NodeSummary::kubelet_version)
      .def_readonly("internal_ip", &NodeSummary::internal_ip)
      .def_property_readonly("created",
                             [](const NodeSummary& self) -> py::object {
                               if (!self.created) return py::none();
                               return to_datetime(*self.created);
                             })
      .def_readonly("taints", &NodeSummary::taints)
      .def_readonly("unschedulable", &NodeSummary::unschedulable)
      .def_readonly("milli_cpu", &NodeSummary::milli_cpu)
      .def_readonly("memory", &NodeSummary::memory)
      .def_readonly("gpus", &NodeSummary::gpus)
      .def("taints_column", &NodeSummary::taints_column)
      .def(
          "age",
          [](const NodeSummary& self, py::object now) {
            return self.age(now.is_none() ? std::chrono::system_clock::now() : from_datetime(now));
          },
          py::arg("now") = py::none())
      .def("__repr__", [](const NodeSummary& self) { return "NodeSummary(name='" + self.name + "')"; });
  def_equality(summary);
}

void bind_images(py::module_& m) {
  py::class_<ImageRef> ref(m, "ImageRef", "A parsed container image reference.");
  ref.def_static(
         "parse", [](std::string_view text, std::string_view field) { return ImageRef::parse(text, field); },
         py::arg("text"), py::arg("field") = "image")
      .def_readwrite("domain", &ImageRef::domain)
      .def_readwrite("path", &ImageRef::path)
      .def_readwrite("tag", &ImageRef::tag)
      .def_readwrite("digest", &ImageRef::digest)
      .def("registry", &ImageRef::registry)
      .def("repository", &ImageRef::repository)
      .def("normalized", &ImageRef::normalized)
      .def("to_string", &ImageRef::to_string)
      .def("__str__", &ImageRef::to_string)
      .def("__repr__", [](const ImageRef& self) { return "ImageRef('" + self.to_string() + "')"; });
  def_equality(ref);

  py::class_<CatalogImage> img(m, "CatalogImage", "One image of a site's catalog.");
  def_kwargs_init(img);
  img.def_readwrite("name", &CatalogImage::name)
      .def_readwrite("tags", &CatalogImage::tags)
      .def_readwrite("gpu", &CatalogImage::gpu)
      .def_readwrite("cuda", &CatalogImage::cuda)
      .def_readwrite("framework", &CatalogImage::framework)
      .def_readwrite("notes", &CatalogImage::notes)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "CatalogImage", {"name", "tags", "gpu", "cuda"});
      });
  def_equality(img);

  py::class_<ImageCatalog> cat(m, "ImageCatalog", "A registry prefix and the images it offers.");
  def_kwargs_init(cat);
  cat.def_readwrite("prefix", &ImageCatalog::prefix)
      .def_readwrite("images", &ImageCatalog::images)
      .def(
          "find",
          [](const ImageCatalog& self, std::string_view name) -> std::optional<CatalogImage> {
            const CatalogImage* found = self.find(name);
            if (!found) return std::nullopt;
            return *found;
          },
          py::arg("name"))
      .def("resolve", &ImageCatalog::resolve, py::arg("text"), py::arg("field") = "image",
           "Resolves shorthand (\"ubuntu-pytorch:1.5.0\") to the full reference.")
      .def("__repr__", [](const ImageCatalog& self) {
        return "ImageCatalog(prefix='" + self.prefix + "', images=" + std::to_string(self.images.size()) + ")";
      });
}

void bind_storage(py::module_& m) {
  py::class_<PvcRequest> pvc(m, "PvcRequest", "A PersistentVolumeClaim to create with a submission.");
  def_kwargs_init(pvc);
  pvc.def_readwrite("name", &PvcRequest::name)
      .def_readwrite("storage_class", &PvcRequest::storage_class)
      .def_readwrite("size", &PvcRequest::size)
      .def_property(
          "access_modes",
          [](const PvcRequest& self) {
            std::vector<std::string> out;
            for (auto mode : self.access_modes) out.emplace_back(to_string(mode));
            return out;
          },
          [](PvcRequest& self, const std::vector<std::string>& modes) {
            std::vector<AccessMode> out;
            for (const auto& mode : modes) out.push_back(parse_access_mode(mode));
            self.access_modes = std::move(out);
          })
      .def(
          "validate", [](const PvcRequest& self, std::string_view field) { validate(self, field); },
          py::arg("field") = "pvc")
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "PvcRequest", {"name", "storage_class", "size", "access_modes"});
      });
  def_equality(pvc);

  py::class_<PvcSource> pvcs(m, "PvcSource", "persistentVolumeClaim: an existing claim.");
  def_kwargs_init(pvcs);
  pvcs.def_readwrite("claim_name", &PvcSource::claim_name)
      .def_readwrite("read_only", &PvcSource::read_only)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "PvcSource", {"claim_name", "read_only"});
      });
  def_equality(pvcs);

  py::class_<NfsSource> nfs(m, "NfsSource", "nfs: a direct NFS export.");
  def_kwargs_init(nfs);
  nfs.def_readwrite("server", &NfsSource::server)
      .def_readwrite("path", &NfsSource::path)
      .def_readwrite("read_only", &NfsSource::read_only)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "NfsSource", {"server", "path", "read_only"});
      });
  def_equality(nfs);

  py::class_<HostPathSource> host(m, "HostPathSource", "hostPath: a node directory, e.g. a local SSD.");
  def_kwargs_init(host);
  host.def_readwrite("path", &HostPathSource::path);
  GPUPOOL_PY_ENUM_PROPERTY(host, HostPathSource, "type", type, parse_host_path_type, "hostPath.type");
  host.def("__repr__", [](py::handle self) { return repr_fields(self, "HostPathSource", {"path", "type"}); });
  def_equality(host);

  py::class_<EmptyDirSource> empty(m, "EmptyDirSource", "emptyDir; memory=True gives a tmpfs.");
  def_kwargs_init(empty);
  empty.def_readwrite("memory", &EmptyDirSource::memory)
      .def_readwrite("size_limit", &EmptyDirSource::size_limit)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "EmptyDirSource", {"memory", "size_limit"});
      });
  def_equality(empty);

  py::class_<ConfigMapSource> cms(m, "ConfigMapSource", "configMap: a ConfigMap's keys as files.");
  def_kwargs_init(cms);
  cms.def_readwrite("name", &ConfigMapSource::name).def("__repr__", [](py::handle self) {
    return repr_fields(self, "ConfigMapSource", {"name"});
  });
  def_equality(cms);

  py::class_<ConfigMapRequest> cmr(m, "ConfigMapRequest", "A ConfigMap to create with a submission.");
  def_kwargs_init(cmr);
  cmr.def_readwrite("name", &ConfigMapRequest::name)
      .def_readwrite("data", &ConfigMapRequest::data)
      .def("__repr__", [](py::handle self) { return repr_fields(self, "ConfigMapRequest", {"name"}); });
  def_equality(cmr);

  py::class_<Volume> vol(m, "Volume",
                         "A pod volume: a name and a source (PvcSource, NfsSource, HostPathSource, EmptyDirSource, "
                         "ConfigMapSource).");
  def_kwargs_init(vol);
  vol.def_readwrite("name", &Volume::name)
      .def_readwrite("source", &Volume::source)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "Volume", {"name", "source"});
      });
  def_equality(vol);

  py::class_<VolumeMount> mount(m, "VolumeMount", "A container's view of a volume.");
  def_kwargs_init(mount);
  mount.def_readwrite("volume", &VolumeMount::volume)
      .def_readwrite("mount_path", &VolumeMount::mount_path)
      .def_readwrite("sub_path", &VolumeMount::sub_path)
      .def_readwrite("read_only", &VolumeMount::read_only)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "VolumeMount", {"volume", "mount_path", "sub_path", "read_only"});
      });
  def_equality(mount);

  m.def("validate_volumes", &validate_volumes, py::arg("volumes"), py::arg("mounts"), py::arg("field_prefix") = "");
}

void bind_resources(py::module_& m) {
  py::class_<Resources> res(m, "Resources", "Per-replica compute resources.");
  def_kwargs_init(res);
  res.def_readwrite("cpu_request", &Resources::cpu_request)
      .def_readwrite("cpu_limit", &Resources::cpu_limit)
      .def_readwrite("memory_request", &Resources::memory_request)
      .def_readwrite("memory_limit", &Resources::memory_limit)
      .def_readwrite("gpus", &Resources::gpus)
      .def_readwrite("extra", &Resources::extra)
      .def(
          "validate", [](const Resources& self, std::string_view field) { validate(self, field); },
          py::arg("field") = "resources")
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "Resources",
                           {"cpu_request", "cpu_limit", "memory_request", "memory_limit", "gpus", "extra"});
      });
  def_equality(res);
}

void bind_staging(py::module_& m) {
  py::class_<StageIn> in(m, "StageIn", "One directory copied into the SSD cache before the run.");
  def_kwargs_init(in);
  in.def_readwrite("source", &StageIn::source)
      .def_readwrite("cache", &StageIn::cache)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "StageIn", {"source", "cache"});
      });
  def_equality(in);
  py::class_<SsdStaging> st(m, "SsdStaging",
                            "Stage data into the local SSD before the run, copy results back after (also when the "
                            "pod is terminated, within grace_period_seconds).");
  def_kwargs_init(st);
  st.def_readwrite("inputs", &SsdStaging::inputs)
      .def_readwrite("results", &SsdStaging::results)
      .def_readwrite("results_target", &SsdStaging::results_target)
      .def_readwrite("grace_period_seconds", &SsdStaging::grace_period_seconds)
      .def(
          "validate", [](const SsdStaging& self, std::string_view field) { validate(self, field); },
          py::arg("field") = "staging")
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "SsdStaging", {"inputs", "results", "results_target", "grace_period_seconds"});
      });
  def_equality(st);
  m.attr("DEFAULT_STAGE_OUT_GRACE_SECONDS") = kDefaultStageOutGraceSeconds;
  m.def("shell_quote", &shell_quote, py::arg("text"), "POSIX single-quoting: one shell word whose value is text.");
}

}  // namespace

void bind_model(py::module_& m) {
  bind_quantity(m);
  bind_taints(m);
  bind_node(m);
  bind_images(m);
  bind_storage(m);
  bind_resources(m);
  bind_staging(m);
}

}  // namespace gpupool::py_bindings
