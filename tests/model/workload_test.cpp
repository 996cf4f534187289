#include <doctest/doctest.h>

#include "gpupool/error.hpp"
#include "gpupool/workload.hpp"

#include <functional>
#include <string>

using namespace gpupool;

namespace {

Workload base(WorkloadKind kind, std::string name = "train") {
  Workload w;
  w.name = std::move(name);
  w.kind = kind;
  w.image = "python:3.11";
  return w;
}

std::string error_of(const Workload& w, std::string* field = nullptr) {
  try {
    validate(w);
  } catch (const ValidationError& e) {
    if (field) *field = e.field();
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("kinds parse from Kubernetes names and the short forms users type") {
  struct Row {
    std::string text;
    WorkloadKind kind;
  };
  const Row rows[] = {{"Pod", WorkloadKind::Pod},
                      {"deployment", WorkloadKind::Deployment},
                      {"deploy", WorkloadKind::Deployment},
                      {"Job", WorkloadKind::Job},
                      {"mpi", WorkloadKind::MPIJob},
                      {"MPIJob", WorkloadKind::MPIJob},
                      {"tf", WorkloadKind::TFJob},
                      {"TFJob", WorkloadKind::TFJob},
                      {"pytorch", WorkloadKind::PyTorchJob},
                      {"PyTorchJob", WorkloadKind::PyTorchJob}};
  for (const auto& r : rows) {
    CAPTURE(r.text);
    CHECK(parse_workload_kind(r.text) == r.kind);
    CHECK(parse_workload_kind(to_string(r.kind)) == r.kind);
  }
  CHECK_THROWS_WITH_AS(parse_workload_kind("cronjob"), doctest::Contains("supported kinds"), ValidationError);
  CHECK(parse_restart_policy("ExitCode") == RestartPolicy::ExitCode);
  CHECK_THROWS_WITH_AS(parse_restart_policy("always"), doctest::Contains("\"Always\""), ValidationError);
  CHECK(parse_clean_pod_policy("Running") == CleanPodPolicy::Running);
  CHECK_THROWS_AS(parse_clean_pod_policy("running"), ValidationError);
}

TEST_CASE("names: each kind applies its own rule and the error names it") {
  const std::string long63(63, 'a');
  const std::string long60(60, 'a');
  struct Row {
    WorkloadKind kind;
    std::string name;
    bool ok;
    std::string rule_part;
  };
  const Row rows[] = {
      // Pods and Deployments: DNS-1123 subdomains (dots allowed, may start with a digit).
      {WorkloadKind::Pod, "my.pod-1", true, ""},
      {WorkloadKind::Deployment, "1st-deploy", true, ""},
      {WorkloadKind::Deployment, "My_Deploy", false, "a Deployment name must be a DNS-1123 subdomain"},
      // Jobs: subdomains that also fit a label value.
      {WorkloadKind::Job, long63, true, ""},
      {WorkloadKind::Job, long63 + "a", false, "a Job name must be a DNS-1123 subdomain and a label value"},
      // Kubeflow kinds: DNS-1035 labels (no dots, start with a letter), and the derived Services.
      {WorkloadKind::MPIJob, "mpi-dist", true, ""},
      {WorkloadKind::MPIJob, "1mpi", false, "a MPIJob name must be a DNS-1035 label"},
      {WorkloadKind::TFJob, "tf.dist", false, "a TFJob name must be a DNS-1035 label"},
      {WorkloadKind::PyTorchJob, long60, false, "names a Service \"" + long60 + "-master-0\""},
      {WorkloadKind::MPIJob, std::string(55, 'a'), false, "-launcher"},
      {WorkloadKind::Pod, "", false, "Required value"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    std::string field;
    std::string message = error_of(base(r.kind, r.name), &field);
    if (r.ok) {
      CHECK(message == "");
    } else {
      CHECK(field == "metadata.name");
      CHECK(message.find(r.rule_part) != std::string::npos);
    }
  }
}

TEST_CASE("derived replica names follow the operators' <name>-<type>-<index> scheme") {
  Workload w = base(WorkloadKind::TFJob, "tf");
  w.replicas = Replicas{2, 1, 1, 1};
  CHECK(derived_replica_names(w) == std::vector<std::string>{"tf-chief-0", "tf-ps-0", "tf-worker-0", "tf-worker-1"});
  Workload m = base(WorkloadKind::MPIJob, "mpi-dist");
  CHECK(derived_replica_names(m) == std::vector<std::string>{"mpi-dist-launcher", "mpi-dist-worker-0"});
  Workload p = base(WorkloadKind::PyTorchJob, "pt");
  p.replicas.workers = 0;
  CHECK(derived_replica_names(p) == std::vector<std::string>{"pt-master-0"});
  CHECK(derived_replica_names(base(WorkloadKind::Job)).empty());
}

TEST_CASE("a TensorBoard Service name must fit too") {
  Workload w = base(WorkloadKind::Job, std::string(55, 'j'));
  CHECK(error_of(w).empty());
  w.tensorboard.enabled = true;
  CHECK(error_of(w).find("TensorBoard Service") != std::string::npos);
}

TEST_CASE("what v1.32 accepts, the client accepts: relaxed env names, a relative workingDir") {
  // Checked on kube-apiserver v1.32.13: env names `1X` and `A B` and workingDir `rel/dir` are stored.
  for (const char* name : {"1X", "A B", "my.env-name", "_", "~!@#"}) {
    CAPTURE(name);
    Workload w = base(WorkloadKind::Job);
    w.env = {{name, "x", ""}};
    CHECK(error_of(w).empty());
  }
  Workload w = base(WorkloadKind::Job);
  w.working_dir = "rel/dir";
  CHECK(error_of(w).empty());
}

TEST_CASE("what v1.32 accepts, the client accepts: scheduler and pull secret names, an empty shm, mount paths") {
  // Golden podvalues, pod "lenient": kube-apiserver v1.32.13 checks neither schedulerName nor the
  // names of imagePullSecrets, takes a zero emptyDir sizeLimit, a relative or trailing-slash mount
  // path and a claim name that is no DNS subdomain.
  Workload w = base(WorkloadKind::Job);
  w.scheduler_name = "Orion Scheduler";
  w.image_pull_secrets = {"Reg Cred"};
  w.shm_size = Quantity::parse("0");
  w.volumes = {{"p", PvcSource{"Bad Claim", false}}};
  w.mounts = {{"p", "rel", "", false}, {"p", "/a/", "", false}, {"p", "/a", "x", false}};
  w.annotations = {{"Example.com/Key", "x"}};  // an annotation key's case does not matter
  CHECK(error_of(w).empty());
  // ... but their size does: no more than 256 KiB of keys and values.
  w.annotations = {{"big", std::string(256 * 1024, 'x')}};
  std::string field;
  CHECK(error_of(w, &field).find("Too long: may not be more than 262144 bytes") != std::string::npos);
  CHECK(field == "metadata.annotations");
}

TEST_CASE("every other kind of bad spec is an error naming its field") {
  using Mutate = std::function<void(Workload&)>;
  struct Row {
    WorkloadKind kind;
    Mutate mutate;
    std::string field, rule_part;
  };
  const Row rows[] = {
      {WorkloadKind::Job, [](Workload& w) { w.image.clear(); }, "image", "Required value"},
      {WorkloadKind::Job, [](Workload& w) { w.image = "Ubuntu:20.04"; }, "image", "lowercase"},
      {WorkloadKind::Job, [](Workload& w) { w.namespace_ = "Zhang.San"; }, "metadata.namespace", "DNS-1123 label"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.command = {"a"};
         w.shell = "b";
       },
       "shell", "not both"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.env = {{"\xc3\xa9", "x", ""}};
       },
       "env[0].name", "printable ASCII characters other than '='"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.env = {{"A=B", "x", ""}};
       },
       "env[0].name", "other than '='"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.pvcs = {PvcRequest{"v", "Bad_Class", Quantity::parse("1Gi"), {AccessMode::ReadWriteOnce}}};
       },
       "pvcs[0].spec.storageClassName", "RFC 1123 subdomain"},
      {WorkloadKind::Job, [](Workload& w) { w.resources.gpus = -1; }, "resources.gpus", "greater than or equal to 0"},
      {WorkloadKind::Job, [](Workload& w) { w.replicas.workers = 0; }, "replicas.workers",
       "greater than or equal to 1"},
      {WorkloadKind::Pod, [](Workload& w) { w.replicas.workers = 2; }, "replicas.workers", "must be 1"},
      {WorkloadKind::TFJob, [](Workload& w) { w.replicas.chief = 2; }, "replicas.chief", "between 0 and 1"},
      {WorkloadKind::TFJob, [](Workload& w) { w.replicas.workers = 0; }, "replicas.workers",
       "at least one Worker or a Chief"},
      {WorkloadKind::PyTorchJob, [](Workload& w) { w.replicas.master = 2; }, "replicas.master", "must be 1"},
      {WorkloadKind::MPIJob, [](Workload& w) { w.replicas.ps = 1; }, "replicas.ps", "only in a TFJob"},
      {WorkloadKind::Job, [](Workload& w) { w.replicas.master = 0; }, "replicas.master", "only in a PyTorchJob"},
      {WorkloadKind::MPIJob, [](Workload& w) { w.slots_per_worker = -1; }, "slotsPerWorker",
       "greater than or equal to 0"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.tolerations = {Toleration{"", TolerationOperator::Equal, "v", {}, {}}};
       },
       "tolerations[0].operator", ""},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.node_selector = {{"disk type", "ssd"}};
       },
       "nodeSelector[disk type]", ""},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.required_node_affinity = {{"zone", NodeSelectorOperator::In, {}}};
       },
       "nodeAffinity.matchExpressions[0].values", "'In' or 'NotIn'"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.required_node_affinity = {{"zone", NodeSelectorOperator::Exists, {"a"}}};
       },
       "nodeAffinity.matchExpressions[0].values", "'Exists' or 'DoesNotExist'"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.required_node_affinity = {{"gpus", NodeSelectorOperator::Gt, {"1", "2"}}};
       },
       "nodeAffinity.matchExpressions[0].values", "single value"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.pvcs = {PvcRequest{"a", "", Quantity::parse("1Gi"), {AccessMode::ReadWriteOnce}},
                   PvcRequest{"a", "", Quantity::parse("2Gi"), {AccessMode::ReadWriteOnce}}};
       },
       "pvcs[1].metadata.name", "Duplicate value"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.mounts = {{"missing", "/x", "", false}};
       },
       "volumeMounts[0].name", "Not found"},
      {WorkloadKind::Job, [](Workload& w) { w.shm_size = Quantity::parse("-1Gi"); }, "shmSize", "SizeLimit field"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.staging = SsdStaging{{{"data", "/mnt/data1/x"}}, "", ""};
       },
       "staging.inputs[0].source", "absolute"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.staging = SsdStaging{{{"/pvc/d", "/mnt/data1/x"}}, "/mnt/data1/out", ""};
       },
       "staging.results_target", "go together"},
      {WorkloadKind::Job, [](Workload& w) { w.priority_class_name = "High_Priority"; }, "priorityClassName", ""},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.labels = {{"team", "vision team"}};
       },
       "metadata.labels[team]", ""},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.annotations = {{"bad key", "x"}};
       },
       "metadata.annotations[bad key]", ""},
      {WorkloadKind::Deployment, [](Workload& w) { w.restart_policy = RestartPolicy::Never; }, "restartPolicy",
       "\"Always\""},
      {WorkloadKind::Job, [](Workload& w) { w.restart_policy = RestartPolicy::Always; }, "restartPolicy",
       "\"OnFailure\" or \"Never\""},
      {WorkloadKind::Pod, [](Workload& w) { w.restart_policy = RestartPolicy::ExitCode; }, "restartPolicy", "Kubeflow"},
      {WorkloadKind::Job, [](Workload& w) { w.backoff_limit = -1; }, "backoffLimit", "greater than or equal to 0"},
      {WorkloadKind::Job, [](Workload& w) { w.ttl_seconds_after_finished = -5; }, "ttlSecondsAfterFinished", ""},
      {WorkloadKind::Job, [](Workload& w) { w.clean_pod_policy = CleanPodPolicy::All; }, "cleanPodPolicy",
       "only for MPIJob"},
      {WorkloadKind::Job,
       [](Workload& w) {
         w.tensorboard.enabled = true;
         w.tensorboard.log_dir = "logs";
       },
       "tensorboard.logDir", "absolute"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.field);
    Workload w = base(r.kind);
    r.mutate(w);
    std::string field;
    std::string message = error_of(w, &field);
    REQUIRE(message != "");
    CHECK(field == r.field);
    CHECK(message.find(r.rule_part) != std::string::npos);
  }
}

TEST_CASE("valid specs of every kind pass") {
  for (auto kind : {WorkloadKind::Pod, WorkloadKind::Deployment, WorkloadKind::Job, WorkloadKind::MPIJob,
                    WorkloadKind::TFJob, WorkloadKind::PyTorchJob}) {
    CAPTURE(to_string(kind));
    Workload w = base(kind);
    w.resources.gpus = 1;
    w.tolerations = parse_tolerations({"ssd_node"});
    w.env = {{"A_B.c-d", "1", ""}};
    if (kind == WorkloadKind::Deployment) w.restart_policy = RestartPolicy::Always;
    CHECK(error_of(w) == "");
  }
}
