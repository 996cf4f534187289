// Bindings of site profiles (profile.hpp), rendering (render.hpp) and manifest text (manifest.hpp).
#include <utility>

#include "common.hpp"

#include "gpupool/error.hpp"
#include "gpupool/manifest.hpp"
#include "gpupool/profile.hpp"
#include "gpupool/render.hpp"

namespace gpupool::py_bindings {
namespace {

std::vector<boost::json::object> objects_from_python(py::handle objects) {
  std::vector<boost::json::object> out;
  for (auto item : objects) {
    boost::json::value v = from_python(item);
    if (!v.is_object()) throw py::type_error("each manifest object must be a dict");
    out.push_back(std::move(v.get_object()));
  }
  return out;
}

py::list objects_to_python(const std::vector<boost::json::object>& objects) {
  py::list out;
  for (const auto& o : objects) out.append(to_python(o));
  return out;
}

/// `<pre>` with the text HTML-escaped (Python's html.escape, quote=True).
std::string html_pre(const std::string& text) {
  py::object escape = py::module_::import("html").attr("escape");
  return "<pre>" + escape(text).cast<std::string>() + "</pre>";
}

Profile profile_from(py::handle profile) {
  // A name or a file, as Cluster.connect(profile=...) and the command's --profile take it.
  if (profile.is_none()) return Profile::resolve("");
  if (py::isinstance<py::str>(profile)) return Profile::resolve(profile.cast<std::string>());
  return profile.cast<Profile>();
}

void bind_profile(py::module_& m) {
  py::class_<NfsMount> nm(m, "NfsMount", "A directory of the NFS export mounted into pods.");
  def_kwargs_init(nm);
  nm.def_readwrite("sub_path", &NfsMount::sub_path)
      .def_readwrite("mount_path", &NfsMount::mount_path)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "NfsMount", {"sub_path", "mount_path"});
      });
  def_equality(nm);

  py::class_<NfsShare> ns(m, "NfsShare", "The site's shared NFS export.");
  def_kwargs_init(ns);
  ns.def_readwrite("server", &NfsShare::server)
      .def_readwrite("path", &NfsShare::path)
      .def_readwrite("datasets", &NfsShare::datasets)
      .def_readwrite("home", &NfsShare::home)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "NfsShare", {"server", "path", "datasets", "home"});
      });
  def_equality(ns);

  py::class_<LocalSsd> ssd(m, "LocalSsd", "A node-local SSD: the node's directory and where pods see it.");
  def_kwargs_init(ssd);
  ssd.def_readwrite("host_path", &LocalSsd::host_path)
      .def_readwrite("mount_path", &LocalSsd::mount_path)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "LocalSsd", {"host_path", "mount_path"});
      });
  def_equality(ssd);

  py::class_<GpuConvention> gpu(m, "GpuConvention", "How GPUs are requested on a site.");
  def_kwargs_init(gpu);
  gpu.def_readwrite("resource", &GpuConvention::resource)
      .def_readwrite("scheduler_name", &GpuConvention::scheduler_name)
      .def_readwrite("runtime_class", &GpuConvention::runtime_class)
      .def_readwrite("env", &GpuConvention::env)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "GpuConvention", {"resource", "scheduler_name", "runtime_class"});
      });
  def_equality(gpu);

  py::class_<Profile> p(m, "Profile", "A site profile: one cluster's conventions (registry, storage, SSDs, GPUs).");
  def_kwargs_init(p);
  p.def_static("builtin", &Profile::builtin, py::arg("name"),
               "A profile compiled into the library (\"iiis\", \"generic\").")
      .def_static("builtin_names", &Profile::builtin_names)
      .def_static(
          "resolve", &Profile::resolve, py::arg("name_or_path"),
          "A built-in profile by name, or a file when it contains '/' or ends in .yaml / .yml; \"\" is generic.")
      .def_static("load", &Profile::load, py::arg("path"),
                  "Reads a profile file; ConfigError names file, line and key.")
      .def_static("parse", &Profile::parse, py::arg("text"), py::arg("filename") = "<profile>")
      .def_readwrite("name", &Profile::name)
      .def_readwrite("description", &Profile::description)
      .def_readwrite("default_namespace", &Profile::default_namespace)
      .def_readwrite("catalog", &Profile::catalog)
      .def_readwrite("storage_classes", &Profile::storage_classes)
      .def_readwrite("nfs", &Profile::nfs)
      .def_readwrite("local_ssds", &Profile::local_ssds)
      .def_readwrite("gpu", &Profile::gpu)
      .def_readwrite("host_network", &Profile::host_network)
      .def_readwrite("host_ipc", &Profile::host_ipc)
      .def_readwrite("limits_from_requests", &Profile::limits_from_requests)
      .def_readwrite("image_pull_policy", &Profile::image_pull_policy)
      .def_readwrite("tensorboard_image", &Profile::tensorboard_image)
      .def_readwrite("default_queue", &Profile::default_queue)
      .def("storage_class", &Profile::storage_class, py::arg("alias_or_name"))
      .def("__repr__", [](const Profile& self) { return "Profile(name='" + self.name + "')"; });
  def_equality(p);
}

void bind_submission(py::module_& m) {
  py::class_<Submission>(m, "Submission", "The Kubernetes objects of one submission, in apply order.")
      .def_property_readonly(
          "objects", [](const Submission& self) { return objects_to_python(self.objects); },
          "The objects as dicts (a new list on every access).")
      .def(
          "workload", [](const Submission& self) { return to_python(self.workload()); },
          "The workload object (the first that is not a PVC).")
      .def("to_yaml", [](const Submission& self) { return to_yaml(self.objects); })
      .def("to_json", [](const Submission& self) { return to_json(self.objects); })
      .def("__len__", [](const Submission& self) { return self.objects.size(); })
      .def("_repr_html_", [](const Submission& self) { return html_pre(to_yaml(self.objects)); })
      .def("__repr__", [](const Submission& self) {
        std::string out = "Submission([";
        bool first = true;
        for (const auto& o : self.objects) {
          auto text = [&](const char* key) -> std::string {
            const auto* v = o.if_contains(key);
            return v && v->is_string() ? std::string(v->get_string()) : std::string();
          };
          std::string name;
          if (const auto* md = o.if_contains("metadata"); md && md->is_object()) {
            if (const auto* n = md->get_object().if_contains("name"); n && n->is_string()) name = n->get_string();
          }
          out += (first ? "" : ", ") + text("kind") + "/" + name;
          first = false;
        }
        return out + "])";
      });
}

}  // namespace

void bind_render(py::module_& m) {
  bind_profile(m);
  bind_submission(m);

  m.def(
      "render",
      [](const Workload& workload, py::object profile) { return render(workload, profile_from(std::move(profile))); },
      py::arg("workload"), py::arg("profile") = py::none(),
      "Workload + site profile -> the Kubernetes objects of its submission. `profile` is a Profile or the name of\n"
      "a built-in one (\"iiis\", \"generic\"); None means \"generic\".");

  m.def(
      "validate_workload", [](const Workload& w, py::object profile) { validate(w, profile_from(std::move(profile))); },
      py::arg("workload"), py::arg("profile") = py::none(),
      "Raises ValidationError for exactly what render(workload, profile) refuses (profile: a Profile, a built-in\n"
      "name, or None for \"generic\").");

  // A workload shows its YAML (rendered with the generic profile) in a notebook.
  py::type::of<Workload>().attr("_repr_html_") = py::cpp_function(
      [](const Workload& self) -> std::string {
        try {
          return html_pre(to_yaml(render(self, Profile::builtin("generic")).objects));
        } catch (const Error& e) {
          return html_pre(std::string("invalid workload: ") + e.what());
        }
      },
      py::is_method(py::type::of<Workload>()), py::name("_repr_html_"));

  m.def(
      "to_yaml",
      [](py::handle objects) {
        if (py::isinstance<py::dict>(objects)) return to_yaml(from_python(objects));
        return to_yaml(objects_from_python(objects));
      },
      py::arg("objects"), "YAML text of one object (a dict) or several (documents separated by \"---\").");
  m.def(
      "to_json",
      [](py::handle objects) {
        if (py::isinstance<py::dict>(objects)) return to_json(from_python(objects));
        return to_json(objects_from_python(objects));
      },
      py::arg("objects"), "Indented JSON of one object, or a v1 List of several.");
  m.def(
      "parse_manifests",
      [](std::string_view text, std::string_view filename) {
        return objects_to_python(parse_manifests(text, filename));
      },
      py::arg("text"), py::arg("filename") = "<manifest>",
      "Reads YAML or JSON (one or many documents; v1 Lists expanded) into dicts, keeping every field.");
}

}  // namespace gpupool::py_bindings
