// Bindings of the cluster facade (cluster.hpp). Every call that may touch the network releases the
// GIL. wait() and logs() run in a worker thread and the calling thread waits in short slices with
// the GIL released, checking for signals between them, so Ctrl-C interrupts them: the worker's
// CancelToken is fired and the C++ call ends within ~50 ms (its watches and streams closed) before
// the KeyboardInterrupt propagates. Python callbacks (on_change, progress) run on the calling
// thread only.
#include "cluster.hpp"

#include "gpupool/error.hpp"
#include "gpupool/manifest.hpp"
#include "gpupool/submit_options.hpp"

#include <pybind11/chrono.h>
#include <pybind11/functional.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

namespace gpupool::py_bindings {
namespace {

using namespace std::chrono_literals;
constexpr auto kSignalCheckInterval = 100ms;

py::object optional_datetime(const std::optional<std::chrono::system_clock::time_point>& t) {
  return t ? to_datetime(*t) : py::none();
}

/// State shared between a worker thread running a blocking facade call and the Python thread
/// consuming what it produces. The worker never touches Python objects.
template <class Item>
struct Channel {
  std::mutex m;
  std::condition_variable cv;
  std::deque<Item> items;
  bool done = false;
  bool cancelled = false;
  CancelToken token;  ///< handed to the facade call: cancel() fires it
  std::exception_ptr error;

  void push(Item item) {
    std::lock_guard lock(m);
    items.push_back(std::move(item));
    cv.notify_all();
  }
  void finish(std::exception_ptr e = nullptr) {
    std::lock_guard lock(m);
    done = true;
    error = std::move(e);
    cv.notify_all();
  }
  bool is_cancelled() {
    std::lock_guard lock(m);
    return cancelled;
  }
  void cancel() {
    std::lock_guard lock(m);
    cancelled = true;
    token.cancel();
  }
  /// Waits (GIL released, in slices, checking signals with the GIL held) until an item is available
  /// or the worker finished. Returns the item, or nullopt when finished and drained; rethrows the
  /// worker's exception; on a signal, cancels and raises the signal's exception.
  std::optional<Item> next() {
    for (;;) {
      {
        py::gil_scoped_release release;
        std::unique_lock lock(m);
        cv.wait_for(lock, kSignalCheckInterval, [&] { return !items.empty() || done; });
        if (!items.empty()) {
          Item item = std::move(items.front());
          items.pop_front();
          return item;
        }
        if (done) {
          if (error) std::rethrow_exception(error);
          return std::nullopt;
        }
      }
      if (PyErr_CheckSignals() != 0) {
        cancel();
        throw py::error_already_set();
      }
    }
  }
};

/// Runs `work` on a thread. If the Python side stops early (Ctrl-C, iterator closed or dropped),
/// the channel's token is cancelled and the thread joined: the facade call ends promptly.
template <class Item>
class Worker {
 public:
  template <class F>
  explicit Worker(F work) : channel_(std::make_shared<Channel<Item>>()) {
    auto channel = channel_;
    thread_ = std::thread([channel, work = std::move(work)]() mutable {
      try {
        work(*channel);
        channel->finish();
      } catch (...) {
        channel->finish(std::current_exception());
      }
    });
  }
  ~Worker() { stop(); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  Channel<Item>& channel() { return *channel_; }
  /// Cancels the worker's call (if still running) and joins it, the GIL released meanwhile.
  void stop() {
    if (!thread_.joinable()) return;
    channel_->cancel();
    py::gil_scoped_release release;
    thread_.join();
  }

 private:
  std::shared_ptr<Channel<Item>> channel_;
  std::thread thread_;
};

struct Cancelled {};  // thrown inside a worker's callback to unwind a cancelled facade call

/// The iterator cluster.logs() returns: one line per __next__.
class LogIterator {
 public:
  LogIterator(Cluster cluster, std::string name, JobLogOptions options)
      : worker_([cluster = std::move(cluster), name = std::move(name),
                 options = std::move(options)](Channel<std::string>& ch) {
          try {
            cluster.logs(
                name, options,
                [&](const std::string& line) {
                  if (ch.is_cancelled()) return false;
                  ch.push(line);
                  return true;
                },
                ch.token);
          } catch (const Cancelled&) {}
        }) {}
  std::string next() {
    auto line = worker_.channel().next();
    if (!line) {
      worker_.stop();
      throw py::stop_iteration();
    }
    return *line;
  }
  void close() { worker_.stop(); }

 private:
  Worker<std::string> worker_;
};

JobInfo wait_interruptibly(const Cluster& cluster, const std::string& name, WaitFor until,
                           std::chrono::milliseconds timeout, const std::vector<py::object>& callbacks) {
  auto result = std::make_shared<std::optional<JobInfo>>();
  Worker<JobInfo> worker([cluster, name, until, timeout, result](Channel<JobInfo>& ch) {
    JobInfo info = cluster.wait(
        name, until, timeout,
        [&](const JobInfo& change) {
          if (ch.is_cancelled()) throw Cancelled{};
          ch.push(change);
        },
        ch.token);
    *result = std::move(info);  // read only after the channel reports done (under its mutex)
  });
  while (auto change = worker.channel().next()) {
    for (const auto& cb : callbacks) cb(*change);
  }
  worker.stop();
  return **result;
}

Workload workload_from(py::handle workload, const py::kwargs& options) {
  if (py::isinstance<Workload>(workload)) {
    if (!options.empty()) throw py::type_error("submit() takes a Workload or Arena-style keyword options, not both");
    return workload.cast<Workload>();
  }
  if (py::isinstance<SubmitOptions>(workload)) {
    if (!options.empty()) throw py::type_error("submit() takes SubmitOptions or keyword options, not both");
    return to_workload_python(workload.cast<SubmitOptions>());
  }
  py::dict kw;
  for (auto item : options) kw[item.first] = item.second;
  if (!workload.is_none()) {
    if (!py::isinstance<py::str>(workload))
      throw py::type_error("submit() takes a Workload, SubmitOptions, or a kind (\"mpi\", ...) with keyword options");
    kw["kind"] = workload;
  }
  return to_workload_python(from_kwargs<SubmitOptions>(kw));
}

void bind_results(py::module_& m) {
  py::class_<NodeRow>(m, "NodeRow", "A node with its GPUs total / allocated.")
      .def_readonly("node", &NodeRow::node)
      .def_readonly("gpus_total", &NodeRow::gpus_total)
      .def_readonly("gpus_allocated", &NodeRow::gpus_allocated)
      .def("__repr__", [](const NodeRow& self) {
        return "NodeRow(node='" + self.node.name + "', gpus_total=" + std::to_string(self.gpus_total) +
               ", gpus_allocated=" + std::to_string(self.gpus_allocated) + ")";
      });

  py::class_<NodeList>(m, "NodeList", "Nodes as `gpupool nodes` shows them; iterable over NodeRow.")
      .def_readonly("rows", &NodeList::rows)
      .def_readonly("gpu_resource", &NodeList::gpu_resource)
      .def_readonly("allocation_from_own_namespace_only", &NodeList::allocation_from_own_namespace_only)
      .def_property_readonly("observed", [](const NodeList& self) { return to_datetime(self.observed); })
      .def("to_text", &NodeList::to_text, py::arg("wide") = false)
      .def("to_top_text", &NodeList::to_top_text)
      .def("to_html", &NodeList::to_html)
      .def("_repr_html_", &NodeList::to_html)
      .def("__str__", [](const NodeList& self) { return self.to_text(); })
      .def("__len__", [](const NodeList& self) { return self.rows.size(); })
      .def("__getitem__",
           [](const NodeList& self, std::ptrdiff_t i) {
             auto n = static_cast<std::ptrdiff_t>(self.rows.size());
             if (i < 0) i += n;
             if (i < 0 || i >= n) throw py::index_error("node index out of range");
             return self.rows[static_cast<std::size_t>(i)];
           })
      .def("__iter__", [](py::object self) { return py::iter(self.attr("rows")); })
      .def("__repr__", [](const NodeList& self) { return "NodeList(" + std::to_string(self.rows.size()) + " nodes)"; });

  py::class_<Instance>(m, "Instance", "One pod of a job.")
      .def_readonly("name", &Instance::name)
      .def_readonly("phase", &Instance::phase)
      .def_readonly("node", &Instance::node)
      .def_readonly("node_ip", &Instance::node_ip)
      .def_property_readonly("created", [](const Instance& self) { return to_datetime(self.created); })
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "Instance", {"name", "phase", "node", "node_ip"});
      });

  py::class_<JobInfo>(m, "JobInfo", "What `arena get NAME` prints; str() gives the seed's layout.")
      .def_readonly("name", &JobInfo::name)
      .def_readonly("namespace", &JobInfo::namespace_)
      .def_property_readonly("kind", [](const JobInfo& self) { return std::string(to_string(self.kind)); })
      .def_property_readonly(
          "status", [](const JobInfo& self) { return std::string(to_string(self.status)); },
          "\"PENDING\", \"RUNNING\", \"SUCCEEDED\", \"FAILED\" or \"UNKNOWN\".")
      .def_readonly("priority", &JobInfo::priority)
      .def_property_readonly("created", [](const JobInfo& self) { return to_datetime(self.created); })
      .def_property_readonly("started", [](const JobInfo& self) { return optional_datetime(self.started); })
      .def_property_readonly("finished", [](const JobInfo& self) { return optional_datetime(self.finished); })
      .def_property_readonly("observed", [](const JobInfo& self) { return to_datetime(self.observed); })
      .def_readonly("instances", &JobInfo::instances)
      .def_readonly("tensorboard_url", &JobInfo::tensorboard_url)
      .def_readonly("notes", &JobInfo::notes)
      .def_readonly("queue", &JobInfo::queue, "Kueue: the job's LocalQueue and where it stands, or None.")
      .def("trainer", &JobInfo::trainer)
      .def("training_duration", &JobInfo::training_duration)
      .def_readonly("gpus_requested", &JobInfo::gpus_requested)
      .def_readonly("gpus_allocated", &JobInfo::gpus_allocated)
      .def("to_text", &JobInfo::to_text)
      .def("to_html", &JobInfo::to_html)
      .def("progress_text", &JobInfo::progress_text,
           "One line for a display that follows wait(): \"mpi-dist: RUNNING (1/2 instances running)\".")
      .def(
          "to_json", [](const JobInfo& self) { return to_python(self.to_json()); },
          "What `gpupool get -o json` prints.")
      .def("_repr_html_", &JobInfo::to_html)
      .def("__str__", &JobInfo::to_text)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "JobInfo", {"name", "namespace", "kind", "status"});
      });

  m.def("jobs_to_text", &jobs_to_text, py::arg("jobs"), py::arg("with_namespace") = false,
        "`arena list`: NAME STATUS TRAINER AGE NODE (with_namespace: NAMESPACE first).");
  m.def("top_jobs_to_text", &top_jobs_to_text, py::arg("jobs"),
        "`arena top job`: NAME STATUS TRAINER AGE GPU(Requested) GPU(Allocated) NODE, and the total.");

  py::class_<SubmitResult>(m, "SubmitResult", "What submit() created.")
      .def_readonly("name", &SubmitResult::name)
      .def_readonly("namespace", &SubmitResult::namespace_)
      .def_readonly("created", &SubmitResult::created)
      .def_readonly("submission", &SubmitResult::submission)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "SubmitResult", {"name", "namespace", "created"});
      });

  py::class_<ApplyResult>(m, "ApplyResult", "What apply() did, in kubectl's words.")
      .def_readonly("lines", &ApplyResult::lines)
      .def_property_readonly("objects",
                             [](const ApplyResult& self) {
                               py::list out;
                               for (const auto& o : self.objects) out.append(to_python(o));
                               return out;
                             })
      .def("__repr__", [](const ApplyResult& self) {
        std::string lines;
        for (const auto& l : self.lines) lines += (lines.empty() ? "'" : ", '") + l + "'";
        return "ApplyResult(lines=[" + lines + "])";
      });

  py::class_<PodExplanation> pe(m, "PodExplanation", "Why one pod is (or would be) where it is.");
  py::class_<NodeVerdict>(pe, "Verdict", "The local fit check of one node.")
      .def_readonly("node", &NodeVerdict::node)
      .def_readonly("fits", &NodeVerdict::fits)
      .def_readonly("reasons", &NodeVerdict::reasons)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "Verdict", {"node", "fits", "reasons"});
      });
  pe.def_readonly("pod", &PodExplanation::pod)
      .def_readonly("phase", &PodExplanation::phase)
      .def_readonly("node", &PodExplanation::node)
      .def_readonly("events", &PodExplanation::events)
      .def_readonly("nodes", &PodExplanation::nodes)
      .def_readonly("quota", &PodExplanation::quota)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "PodExplanation", {"pod", "phase", "node"});
      });
  m.attr("Verdict") = pe.attr("Verdict");

  py::class_<Explanation>(m, "Explanation", "Why a job's pods are pending, or where a workload would fit.")
      .def_readonly("name", &Explanation::name)
      .def_readonly("pods", &Explanation::pods)
      .def_readonly("notes", &Explanation::notes)
      .def("to_text", &Explanation::to_text)
      .def("to_html", &Explanation::to_html)
      .def("_repr_html_", &Explanation::to_html)
      .def("__str__", &Explanation::to_text)
      .def("__repr__", [](const Explanation& self) {
        return "Explanation(name='" + self.name + "', pods=" + std::to_string(self.pods.size()) + ")";
      });

  // Kueue (gpupool/queues.hpp).
  py::class_<QueueStatus>(m, "QueueStatus", "Where a queued job stands, from its Kueue Workload's conditions.")
      .def_readonly("queue", &QueueStatus::queue)
      .def_readonly("workload", &QueueStatus::workload)
      .def_readonly("state", &QueueStatus::state)
      .def_readonly("position", &QueueStatus::position)
      .def_readonly("reason", &QueueStatus::reason)
      .def("summary", &QueueStatus::summary)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "QueueStatus", {"queue", "state", "position", "reason"});
      });
  py::class_<FlavorQuota>(m, "FlavorQuota", "One resource of one flavor of a ClusterQueue: nominal and used.")
      .def_readonly("flavor", &FlavorQuota::flavor)
      .def_readonly("resource", &FlavorQuota::resource)
      .def_readonly("nominal", &FlavorQuota::nominal)
      .def_readonly("used", &FlavorQuota::used)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "FlavorQuota", {"flavor", "resource", "nominal", "used"});
      });
  py::class_<ClusterQueueInfo>(m, "ClusterQueueInfo", "A Kueue ClusterQueue: quota per flavor, workload counts.")
      .def_readonly("name", &ClusterQueueInfo::name)
      .def_readonly("cohort", &ClusterQueueInfo::cohort)
      .def_readonly("queueing_strategy", &ClusterQueueInfo::queueing_strategy)
      .def_readonly("quotas", &ClusterQueueInfo::quotas)
      .def_readonly("pending", &ClusterQueueInfo::pending)
      .def_readonly("admitted", &ClusterQueueInfo::admitted)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "ClusterQueueInfo", {"name", "pending", "admitted"});
      });
  py::class_<LocalQueueInfo>(m, "LocalQueueInfo", "A Kueue LocalQueue and its ClusterQueue.")
      .def_readonly("namespace", &LocalQueueInfo::namespace_)
      .def_readonly("name", &LocalQueueInfo::name)
      .def_readonly("cluster_queue", &LocalQueueInfo::cluster_queue)
      .def_readonly("pending", &LocalQueueInfo::pending)
      .def_readonly("admitted", &LocalQueueInfo::admitted)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "LocalQueueInfo", {"name", "cluster_queue", "pending", "admitted"});
      });
  py::class_<QueuesReport>(m, "QueuesReport", "What `gpupool queues` lists; str() gives its tables.")
      .def_readonly("local_queues", &QueuesReport::local_queues)
      .def_readonly("cluster_queues", &QueuesReport::cluster_queues)
      .def("to_text", &QueuesReport::to_text)
      .def("__str__", &QueuesReport::to_text);

  py::class_<QuotaInfo>(m, "QuotaInfo", "A ResourceQuota: per resource (name, used, hard).")
      .def_readonly("name", &QuotaInfo::name)
      .def_readonly("resources", &QuotaInfo::resources)
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "QuotaInfo", {"name", "resources"});
      });

  py::class_<PvcInfo>(m, "PvcInfo", "A PVC as `gpupool pvc list` shows it.")
      .def_readonly("name", &PvcInfo::name)
      .def_readonly("status", &PvcInfo::status)
      .def_readonly("volume", &PvcInfo::volume)
      .def_readonly("capacity", &PvcInfo::capacity)
      .def_readonly("access_modes", &PvcInfo::access_modes)
      .def_readonly("storage_class", &PvcInfo::storage_class)
      .def_property_readonly("created", [](const PvcInfo& self) { return to_datetime(self.created); })
      .def("__repr__", [](py::handle self) {
        return repr_fields(self, "PvcInfo", {"name", "status", "capacity"});
      });
  m.def(
      "pvcs_to_text",
      [](const std::vector<PvcInfo>& pvcs, py::object now) {
        return pvcs_to_text(pvcs, now.is_none() ? std::chrono::system_clock::now() : from_datetime(now));
      },
      py::arg("pvcs"), py::arg("now") = py::none());

  py::class_<LogIterator>(m, "LogIterator", "Log lines of a job's pod; close() stops following.")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &LogIterator::next)
      .def("close", &LogIterator::close)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](LogIterator& self, py::args) { self.close(); });
}

ConnectOptions connect_options(const std::optional<std::string>& kubeconfig, const std::optional<std::string>& context,
                               const std::optional<std::string>& ns, const std::optional<std::string>& profile) {
  ConnectOptions o;
  o.kubeconfig = kubeconfig.value_or("");
  o.context = context.value_or("");
  o.namespace_ = ns.value_or("");
  o.profile = profile.value_or("");
  o.logger = python_logger();
  return o;
}

void bind_cluster_class(py::module_& m) {
  using release = py::call_guard<py::gil_scoped_release>;
  auto connect = [](std::optional<std::string> kubeconfig, std::optional<std::string> context,
                    std::optional<std::string> ns, std::optional<std::string> profile) {
    auto options = connect_options(std::move(kubeconfig), std::move(context), std::move(ns), std::move(profile));
    py::gil_scoped_release unlocked;
    return Cluster::connect(options);
  };
  const char* connect_doc =
      "Connects to a cluster with a kubeconfig (None: KUBECONFIG, then ~/.kube/config, then the pod's service\n"
      "account), optionally another context, namespace, and a site profile (a built-in name or a file).\n"
      "Does not contact the server yet.";

  py::class_<Cluster> c(m, "Cluster",
                        "A connection to one cluster, in one namespace, with one site profile. Thread-safe.");
  c.def_static("connect", connect, py::kw_only(), py::arg("kubeconfig") = py::none(), py::arg("context") = py::none(),
               py::arg("namespace") = py::none(), py::arg("profile") = py::none(), connect_doc)
      .def_property_readonly("namespace", &Cluster::namespace_name)
      .def_property_readonly("profile", &Cluster::profile)
      .def("mpi_job_api", &Cluster::mpi_job_api, release(), "The MPIJob version the server serves.")
      .def("nodes", &Cluster::nodes, release(), "Nodes with roles, taints and GPUs total/allocated.")
      .def(
          "taint",
          [](Cluster& self, const std::string& node, py::args changes, bool overwrite) {
            // kubectl's words go to the library as they are; TaintChange values are taken as given.
            std::vector<std::string> words;
            std::vector<TaintChange> values;
            for (auto change : changes) {
              if (py::isinstance<py::str>(change))
                words.push_back(change.cast<std::string>());
              else
                values.push_back(change.cast<TaintChange>());
            }
            if (!words.empty() && !values.empty()) {  // a mix: each word parsed where it stands
              values.clear();
              std::size_t i = 0;
              for (auto change : changes) {
                values.push_back(
                    py::isinstance<py::str>(change)
                        ? parse_taint_change(change.cast<std::string>(), "taint[" + std::to_string(i) + "]")
                        : change.cast<TaintChange>());
                ++i;
              }
            }
            py::gil_scoped_release unlocked;
            return values.empty() ? self.taint(node, words, overwrite) : self.taint(node, values, overwrite);
          },
          py::arg("node"), py::arg("overwrite") = false,
          "kubectl-style taint changes on a node: taint(\"node\", \"gpu_node=invalid:NoSchedule\", \"old-\").")
      .def("pvcs", &Cluster::pvcs, release())
      .def("create_pvc", &Cluster::create_pvc, release(), py::arg("pvc"))
      .def("delete_pvc", &Cluster::delete_pvc, release(), py::arg("name"))
      .def("quotas", &Cluster::quotas, release())
      .def("queues", &Cluster::queues, release(),
           "Kueue's LocalQueues (this namespace) and ClusterQueues with nominal and used quota per flavor.")
      .def("render", &Cluster::render, release(), py::arg("workload"), py::arg("use_server_mpi_api") = true,
           "The objects submit() would create.")
      .def(
          "submit",
          [](Cluster& self, py::object workload, bool dry_run, const py::kwargs& options) {
            Workload w = workload_from(workload, options);
            const bool from_options = !py::isinstance<Workload>(workload);
            py::gil_scoped_release unlocked;
            try {
              return self.submit(w, dry_run);
            } catch (const ValidationError& e) {
              // Checks against the profile's mounts (e.g. a read-only stage_out target) name the option.
              if (from_options) throw with_keyword_names(with_option_names(e));
              throw;
            }
          },
          py::arg("workload") = py::none(), py::kw_only(), py::arg("dry_run") = false,
          "Creates every object of a submission. Pass a Workload, or a kind with Arena-style options:\n"
          "submit(\"mpi\", name=\"mpi-dist\", image=\"...\", gpus=1, tolerations=[\"ssd_node\"]).")
      .def(
          "submit_function",
          [](Cluster& self, py::handle func, const std::string& kind, std::int32_t num_nodes, py::handle packages,
             py::handle args, bool dry_run, const py::kwargs& options) {
            Workload w = function_workload_python(func, kind, num_nodes, packages, args, options);
            py::gil_scoped_release unlocked;
            return self.submit(w, dry_run);
          },
          py::arg("func"), py::kw_only(), py::arg("kind") = "pytorch", py::arg("num_nodes") = 1,
          py::arg("packages") = py::none(), py::arg("args") = py::none(), py::arg("dry_run") = false,
          "Runs func(**args) as a job on num_nodes nodes (Kubeflow's CustomTrainer, with gpupool's options):\n"
          "submit_function(train, kind=\"pytorch\", num_nodes=2, image=\"...\", gpus=1, args={\"lr\": 0.01}).\n"
          "func must be self-contained: imports inside it, no closures or globals (ValidationError otherwise).")
      .def(
          "apply",
          [](Cluster& self, py::object manifests, bool dry_run, bool force_conflicts) {
            // YAML or JSON text (one or many documents), or objects (dicts).
            std::vector<boost::json::object> objects;
            if (py::isinstance<py::str>(manifests)) {
              objects = parse_manifests(manifests.cast<std::string>(), "<manifests>");
            } else {
              for (auto item : manifests) {
                boost::json::value v = from_python(item);
                if (!v.is_object()) throw py::type_error("apply() takes YAML/JSON text or a list of objects (dicts)");
                objects.push_back(std::move(v.as_object()));
              }
            }
            py::gil_scoped_release unlocked;
            return self.apply(std::move(objects), dry_run, force_conflicts);
          },
          py::arg("manifests"), py::kw_only(), py::arg("dry_run") = false, py::arg("force_conflicts") = false,
          "Server-side apply of existing manifests (`gpupool apply -f`): checked against the profile and the\n"
          "namespace's quotas first; what it created is deleted again when an object fails.")
      .def("get", &Cluster::get, release(), py::arg("name"), "What `arena get NAME` shows.")
      .def("list", &Cluster::list, release(), "Every gpupool job of the namespace.")
      .def("list_all_namespaces", &Cluster::list_all_namespaces, release(),
           "Every gpupool job of every namespace the user may read, sorted by namespace and name.")
      .def("top_jobs", &Cluster::top_jobs, release(),
           "`arena top job`: every job with gpus_requested / gpus_allocated (top_jobs_to_text prints them).")
      .def("delete", &Cluster::delete_job, release(), py::arg("name"),
           "Deletes the job and what gpupool created with it (not PVCs), cascading; returns what was deleted as\n"
           "kubectl names it, e.g. \"deployment.apps/web\".")
      .def(
          "logs",
          [](const Cluster& self, const std::string& name, std::string instance, std::string container, bool follow,
             std::optional<std::int64_t> tail_lines) {
            JobLogOptions o;
            o.instance = std::move(instance);
            o.container = std::move(container);
            o.follow = follow;
            o.tail_lines = tail_lines;
            return std::make_unique<LogIterator>(self, name, std::move(o));
          },
          py::arg("name"), py::kw_only(), py::arg("instance") = "", py::arg("container") = "",
          py::arg("follow") = false, py::arg("tail_lines") = py::none(),
          "An iterator over the log lines of the job's pod.")
      .def(
          "wait",
          [](const Cluster& self, const std::string& name, std::string_view until, py::object timeout,
             py::object on_change, py::object progress) {
            WaitFor w = parse_wait_for(until, "until");
            std::vector<py::object> callbacks;
            py::object reporter = py::module_::import("gpupool._progress").attr("reporter")(progress);
            if (!reporter.is_none()) callbacks.push_back(reporter);
            if (!on_change.is_none()) callbacks.push_back(on_change);
            try {
              JobInfo info = wait_interruptibly(self, name, w, duration_from(std::move(timeout)), callbacks);
              if (!reporter.is_none()) reporter.attr("close")(info);
              return info;
            } catch (...) {
              if (!reporter.is_none()) {
                // Keep the original error; closing the display must not replace it.
                py::error_scope keep;
                try {
                  reporter.attr("close")(py::none());
                } catch (const py::error_already_set&) {}
              }
              throw;
            }
          },
          py::arg("name"), py::arg("until") = "Running", py::arg("timeout") = 300.0, py::kw_only(),
          py::arg("on_change") = py::none(), py::arg("progress") = py::none(),
          "Waits (watching, not polling) until the job is Running / Succeeded / Finished; returns its JobInfo.\n"
          "timeout: seconds or a timedelta. on_change(JobInfo) sees every new state. progress: None shows live\n"
          "progress in a notebook and a one-line display on a terminal (nothing otherwise); False: never.\n"
          "Ctrl-C interrupts it.")
      .def(
          "explain",
          [](const Cluster& self, py::object what) {
            if (py::isinstance<py::str>(what)) {
              auto name = what.cast<std::string>();
              py::gil_scoped_release unlocked;
              return self.explain(name);
            }
            auto w = what.cast<Workload>();
            py::gil_scoped_release unlocked;
            return self.explain(w);
          },
          py::arg("job"), "Why a job's pods are pending (a job name), or where a Workload would fit.")
      .def("__repr__", [](const Cluster& self) {
        // Only the namespace and profile: nothing from the kubeconfig (no server credentials).
        return "Cluster(namespace='" + self.namespace_name() + "', profile='" + self.profile().name + "')";
      });

  m.def("connect", connect, py::kw_only(), py::arg("kubeconfig") = py::none(), py::arg("context") = py::none(),
        py::arg("namespace") = py::none(), py::arg("profile") = py::none(), connect_doc);
}

}  // namespace

PortForwardErrorHandler python_error_logger() {
  const Logger log = python_logger();
  return [log](const std::string& message) { log(LogLevel::error, message); };
}

Logger python_logger() {
  return [](LogLevel level, const std::string& message) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    py::error_scope keep;  // logging must never disturb a pending Python error
    try {
      static const int levels[] = {10, 20, 30, 40};  // logging.DEBUG ... logging.ERROR
      // The "gpupool" logger, looked up once (logging keeps one object per name for the process);
      // a record below its effective level costs one isEnabledFor call, not a getLogger and a log
      // per request (the transport writes a debug line for each).
      static py::object* const logger =
          new py::object(py::module_::import("logging").attr("getLogger")("gpupool"));  // never freed: outlives exit
      const int l = levels[static_cast<int>(level)];
      if (logger->attr("isEnabledFor")(l).cast<bool>()) logger->attr("log")(l, message);
    } catch (const py::error_already_set&) {}
  };
}

std::chrono::milliseconds duration_from(py::handle value) {
  double seconds;
  if (py::hasattr(value, "total_seconds"))
    seconds = value.attr("total_seconds")().cast<double>();
  else
    seconds = value.cast<double>();
  if (!(seconds >= 0))
    throw ValidationError("timeout", py::str(value).cast<std::string>(), "must be at least 0 seconds");
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

namespace {

/// `ports` as kubectl's specs ("8080:80", ":80", "80"), ints (the same port locally) or
/// (local, remote) tuples.
std::vector<PortForward::Port> ports_from(py::handle ports) {
  if (py::isinstance<py::str>(ports) || py::isinstance<py::int_>(ports)) ports = py::make_tuple(ports);
  std::vector<PortForward::Port> out;
  std::size_t i = 0;
  for (auto item : ports) {
    std::string spec = py::str(item).cast<std::string>();
    if (py::isinstance<py::tuple>(item) && py::len(item) == 2) {
      auto t = item.cast<py::tuple>();
      spec = py::str(t[0]).cast<std::string>() + ":" + py::str(t[1]).cast<std::string>();
    }
    try {
      out.push_back(parse_port_specs({spec}).front());
    } catch (const ValidationError& e) {  // the library's check, named by its place in `ports`
      throw ValidationError("ports[" + std::to_string(i) + "]", e.value(), e.rule());
    }
    ++i;
  }
  if (out.empty()) throw ValidationError("ports", "", "give at least one port: [LOCAL:]REMOTE, e.g. \"8080:80\"");
  return out;
}

py::str decoded(const std::string& bytes) {
  return py::reinterpret_steal<py::str>(
      PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "replace"));
}

void bind_streams(py::module_& m) {
  py::class_<ExecResult>(m, "ExecResult", "What a command run by Cluster.exec() did.")
      .def_readonly("exit_code", &ExecResult::exit_code)
      .def_property_readonly("stdout", [](const ExecResult& r) { return decoded(r.stdout_text); })
      .def_property_readonly("stderr", [](const ExecResult& r) { return decoded(r.stderr_text); })
      .def("__repr__", [](const ExecResult& r) {
        return "ExecResult(exit_code=" + std::to_string(r.exit_code) +
               ", stdout=" + py::repr(decoded(r.stdout_text)).cast<std::string>() +
               ", stderr=" + py::repr(decoded(r.stderr_text)).cast<std::string>() + ")";
      });
  py::class_<PortForward>(
      m, "PortForward", "Local ports on 127.0.0.1 forwarded to a pod; a context manager (leaving it stops forwarding).")
      .def_property_readonly(
          "ports",
          [](const PortForward& pf) {
            std::vector<std::pair<int, int>> out;
            for (const auto& p : pf.ports()) out.emplace_back(p.local, p.remote);
            return out;
          },
          "(local, remote) pairs; local ports asked as 0 are the ones chosen.")
      .def_property_readonly(
          "local_port", [](const PortForward& pf) { return pf.ports().front().local; }, "The first local port.")
      .def_property_readonly(
          "url", [](const PortForward& pf) { return "http://127.0.0.1:" + std::to_string(pf.ports().front().local); },
          "http://127.0.0.1:<first local port> (TensorBoard's address).")
      .def("stop", &PortForward::stop, py::call_guard<py::gil_scoped_release>())
      .def(
          "__enter__", [](PortForward& pf) -> PortForward& { return pf; }, py::return_value_policy::reference)
      .def("__exit__", [](PortForward& pf, py::args) {
        py::gil_scoped_release unlocked;
        pf.stop();
      });

  auto c = py::reinterpret_borrow<py::class_<Cluster>>(m.attr("Cluster"));
  c.def(
       "exec",
       [](const Cluster& self, const std::string& name, std::vector<std::string> command,
          std::optional<std::string> instance, std::optional<std::string> container, py::object input, bool tty) {
         JobExecOptions o;
         o.instance = instance.value_or("");
         o.container = container.value_or("");
         o.tty = tty;
         if (py::isinstance<py::bytes>(input))
           o.input = input.cast<std::string>();
         else if (!input.is_none())
           o.input = input.cast<std::string>();
         py::gil_scoped_release unlocked;
         return self.exec(name, command, o);
       },
       py::arg("name"), py::arg("command"), py::kw_only(), py::arg("instance") = py::none(),
       py::arg("container") = py::none(), py::arg("stdin") = py::none(), py::arg("tty") = false,
       "Runs a command (a list of words) in one of the job's pods, as `kubectl exec`, and waits for it:\n"
       "ExecResult(exit_code, stdout, stderr). stdin: text or bytes sent as its input. instance: the pod\n"
       "(default: the job's first running pod).")
      .def(
          "port_forward",
          [](const Cluster& self, const std::string& name, py::object ports, std::optional<std::string> instance) {
            auto specs = ports_from(std::move(ports));
            py::gil_scoped_release unlocked;
            return self.port_forward(name, specs, instance.value_or(""), python_error_logger());
          },
          py::arg("name"), py::arg("ports"), py::kw_only(), py::arg("instance") = py::none(),
          "Forwards local ports to one of the job's running pods, as `kubectl port-forward`: ports are\n"
          "\"LOCAL:REMOTE\" / \":REMOTE\" (a free local port) / REMOTE strings, ints or (local, remote) tuples.\n"
          "Use it as a context manager: `with cluster.port_forward(\"job\", [\":8888\"]) as pf: pf.local_port`.")
      .def(
          "tensorboard",
          [](const Cluster& self, const std::string& name, int port) {
            py::gil_scoped_release unlocked;
            return self.tensorboard(name, port, python_error_logger());
          },
          py::arg("name"), py::kw_only(), py::arg("port") = 0,
          "Forwards a local port (0: a free one) to the job's TensorBoard pod; .url is its address.");
}

}  // namespace

void bind_cluster(py::module_& m) {
  bind_results(m);
  bind_cluster_class(m);
  bind_streams(m);
}

}  // namespace gpupool::py_bindings
