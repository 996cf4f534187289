#!/usr/bin/python3
"""Differential fidelity suite (issue #13): the same kubectl scenarios against a real control plane
and the embedded cluster, answers normalized and compared with goldens recorded from the real one.

  fidelity.py --kubeconfig K --record     run against a REAL control plane, write tests/fidelity/golden/
  fidelity.py --kubeconfig K --check      run against any server, compare with the goldens
  fidelity.py --serve GPUPOOL --check     start `GPUPOOL cluster serve` and check it (what ctest runs)

Every step is a real /usr/bin/kubectl call (so protobuf bodies, strategic merge and dry-run go the way
kubectl sends them), or a `gpupool` command run against the same server (`--gpupool PATH`; with
--serve, the served binary). Output is normalized: uids, resourceVersions, timestamps, ages, managedFields,
generated name suffixes, cluster IPs; pods lose status and nodeName (the oracle has no kubelet and
its nodes are not the embedded topology's). Known differences are explained in FIDELITY.md.
"""
import argparse
import difflib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")


def pod(name, containers, extra=""):
    return ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{%s"containers":%s}}'
            % (name, extra, json.dumps(containers)))


C_NONE = [{"name": "main", "image": "busybox"}]
C_LIM = [{"name": "main", "image": "busybox",
          "resources": {"limits": {"cpu": "500m", "memory": "256Mi", "nvidia.com/gpu": "1"}}}]

def node(name, labels, taints):
    return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                       "spec": {"taints": taints}})


def node_status(gpus):
    res = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    if gpus:
        res["nvidia.com/gpu"] = str(gpus)
    return json.dumps({"status": {"capacity": res, "allocatable": res,
                                  "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                                  "message": "kubelet is posting ready status"}]}})


def spod(name, fid=None, tolerations=(), requests=None, affinity=None):
    """A pod for the scheduling scenario: every one is placed among the scenario's nodes only."""
    spec = {"containers": [{"name": "main", "image": "busybox"}]}
    if requests:
        spec["containers"][0]["resources"] = {"requests": requests, "limits": requests}
    if fid:
        spec["nodeSelector"] = {"fid": fid}
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if affinity:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": affinity}]}}}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


FID_NODES = ["fid-gpu", "fid-ssd", "fid-plain"]
ALL = {"operator": "Exists"}  # Arena's --toleration all


def placed(name, pod_json, ok=True):
    """Creates a pod, waits for the scheduler's verdict, and prints where it went or why not."""
    return [
        (["create", "-f", "-"], pod_json),
        (["wait", "--for=condition=PodScheduled" + ("" if ok else "=false"), "--timeout=30s", "pod/" + name], None),
        (["get", "pod", name, "-o",
          'jsonpath=node={.spec.nodeName} {.status.conditions[?(@.type=="PodScheduled")].reason}: '
          '{.status.conditions[?(@.type=="PodScheduled")].message}{"\\n"}'], None),
    ]


def scheduling_steps():
    # Before any node exists (the embedded cluster runs with --topology none, like the oracle).
    steps = placed("early", spod("early", "none"), ok=False)
    for name, labels, taints, gpus in [
        ("fid-gpu", {"fid": "gpu", "gpus": "2"}, [{"key": "gpu_node", "value": "invalid", "effect": "NoSchedule"}], 2),
        ("fid-ssd", {"fid": "ssd"}, [{"key": "ssd_node", "effect": "NoSchedule"},
                                     {"key": "noexec", "value": "1", "effect": "NoExecute"}], 0),
        ("fid-plain", {"fid": "plain"}, [{"key": "pref", "value": "yes", "effect": "PreferNoSchedule"}], 0),
    ]:
        steps += [
            (["create", "-f", "-"], node(name, labels, taints)),
            (["get", "node", name, "-o", "jsonpath={.spec.taints}"], None),
            (["patch", "node", name, "--subresource=status", "--type=merge", "-p", node_status(gpus)], None),
            (["taint", "node", name, "node.kubernetes.io/not-ready:NoSchedule-"], None),
        ]
    steps.append((["get", "node", "fid-gpu", "-o", "json"], None))
    gpu = {"nvidia.com/gpu": "1"}
    steps += placed("plain", spod("plain", "plain"))  # PreferNoSchedule only scores
    steps += placed("untolerated", spod("untolerated", "gpu", requests=gpu), ok=False)
    steps += placed("equal", spod("equal", "gpu", [{"key": "gpu_node", "operator": "Equal", "value": "invalid",
                                                    "effect": "NoSchedule"}], gpu))
    steps += placed("wrong-value", spod("wrong-value", "gpu", [{"key": "gpu_node", "operator": "Equal",
                                                                "value": "valid", "effect": "NoSchedule"}]), ok=False)
    steps += placed("wrong-effect", spod("wrong-effect", "gpu", [{"key": "gpu_node", "operator": "Equal",
                                                                  "value": "invalid", "effect": "NoExecute"}]), ok=False)
    steps += placed("exists", spod("exists", "gpu", [{"key": "gpu_node", "operator": "Exists"}], gpu))
    steps += placed("gpu-full", spod("gpu-full", "gpu", [ALL], gpu), ok=False)  # both GPUs taken
    steps += placed("too-many", spod("too-many", None, [ALL], {"nvidia.com/gpu": "3"}), ok=False)
    steps += placed("ssd-arena", spod("ssd-arena", "ssd", [{"key": "ssd_node", "operator": "Exists"}]), ok=False)
    steps += placed("ssd-all", spod("ssd-all", "ssd", [ALL]))
    steps += placed("ssd-noexec", spod("ssd-noexec", "ssd", [
        {"key": "ssd_node", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "noexec", "operator": "Equal", "value": "1", "effect": "NoExecute", "tolerationSeconds": 60}]))
    steps += placed("cpu", spod("cpu", None, [ALL], {"cpu": "5", "memory": "1Gi"}), ok=False)
    steps += placed("cpu-mem", spod("cpu-mem", "plain", [], {"cpu": "5", "memory": "9Gi"}), ok=False)
    steps += placed("aff-notin", spod("aff-notin", None, [ALL], affinity=[
        {"key": "fid", "operator": "NotIn", "values": ["gpu", "plain"]}]))
    steps += placed("aff-gt", spod("aff-gt", None, [ALL], affinity=[
        {"key": "gpus", "operator": "Gt", "values": ["1"]}, {"key": "fid", "operator": "Exists"}]))
    steps += placed("aff-lt", spod("aff-lt", None, [ALL], affinity=[
        {"key": "gpus", "operator": "Lt", "values": ["2"]}]), ok=False)
    steps += placed("aff-none", spod("aff-none", None, [ALL], affinity=[
        {"key": "fid", "operator": "DoesNotExist"}]), ok=False)
    steps += placed("aff-in", spod("aff-in", None, [], affinity=[
        {"key": "fid", "operator": "In", "values": ["plain", "gpu"]}]))
    # The scheduler writes one event per attempt whose pod differs (its resourceVersion is part of
    # the event's key): how many attempts a pod got is timing, so the messages are compared as a set.
    steps.append((["get", "events", "--field-selector=reason=FailedScheduling,involvedObject.name=untolerated",
                   "-o", 'jsonpath={range .items[*]}{.message}{"\\n"}{end}'], None, "uniq"))
    steps.append((["get", "events", "--field-selector=reason=Scheduled,involvedObject.name=equal", "-o", "json"], None))
    return steps


def workload_steps():
    """Deployment -> ReplicaSet -> Pods, the controllers' events, and garbage collection in its three
    propagation modes. No node exists, so the pods stay unscheduled (and are deleted at once)."""
    pods = ["get", "pods", "-l", "app=web", "-o",
            'jsonpath={range .items[*]}{.metadata.ownerReferences[0].kind} {.metadata.labels.app} '
            '{.metadata.deletionTimestamp}{"\\n"}{end}']
    rs = ["get", "rs", "-l", "app=web", "-o",
          'jsonpath={range .items[*]}{.spec.replicas} {.metadata.ownerReferences[0].kind} '
          '{.metadata.ownerReferences[0].blockOwnerDeletion} {.metadata.annotations}{"\\n"}{end}']
    events = ["get", "events", "-o", 'jsonpath={range .items[*]}{.involvedObject.kind} {.type} {.reason} '
              '{.message} {.source.component} {.reportingComponent}{"\\n"}{end}']
    return [
        (["create", "deployment", "web", "--image=busybox", "--replicas=2"], None),
        (["wait", "--for=jsonpath={.status.replicas}=2", "--timeout=30s", "deployment/web"], None),
        (["get", "deployment", "web", "-o", "jsonpath={.status}"], None),
        (["get", "deployment", "web", "-o", "wide"], None),
        (["get", "rs", "-o", "wide"], None),
        (["get", "pods", "-o", "wide"], None, "uniq"),
        (["describe", "deployment", "web"], None),
        (rs, None),
        (pods, None, "uniq"),
        (events, None, "uniq"),
        (["scale", "deployment", "web", "--replicas=1"], None),
        (["wait", "--for=jsonpath={.status.replicas}=1", "--timeout=30s", "deployment/web"], None),
        (pods, None, "uniq"),
        # Orphan: the ReplicaSet stays, without its owner reference.
        (["delete", "deployment", "web", "--cascade=orphan"], None),
        (["wait", "--for=delete", "--timeout=30s", "deployment/web"], None),  # the orphan finalizer is done
        (rs, None),
        # Foreground: the pods go first, then the ReplicaSet.
        (["delete", "rs", "-l", "app=web", "--cascade=foreground", "--wait=true", "--timeout=30s"], None),
        (pods, None),
        # Background (the default): the owner goes at once, the garbage collector takes the rest.
        (["create", "deployment", "web", "--image=busybox", "--replicas=1"], None),
        (["wait", "--for=jsonpath={.status.replicas}=1", "--timeout=30s", "deployment/web"], None),
        (["delete", "deployment", "web"], None),
        (["wait", "--for=delete", "--timeout=30s", "rs", "-l", "app=web"], None),
        (["wait", "--for=delete", "--timeout=30s", "pods", "-l", "app=web"], None),
        (rs, None),
        # Defaults apply to updates too: a volume and a container patched in later get theirs.
        (["create", "deployment", "vol", "--image=busybox", "--replicas=0"], None),
        (["patch", "deployment", "vol", "-p", json.dumps({"spec": {"template": {"spec": {
            "volumes": [{"name": "ssd", "hostPath": {"path": "/data"}}, {"name": "cfg", "configMap": {"name": "c"}}],
            "containers": [{"name": "side", "image": "busybox:1.36", "ports": [{"containerPort": 80}]}]}}}})], None),
        (["get", "deployment", "vol", "-o", "jsonpath={.spec.template.spec}"], None),
    ]


def job_steps():
    """A Job's pods finishing, as a kubelet would report it (no kubelet in the oracle: the pod status is
    patched through the status subresource), and what the Job controller makes of it."""
    def finish(job, phase, exit_code):
        name = ["get", "pods", "-l", "job-name=" + job, "-o", "jsonpath={.items[0].metadata.name}"]
        pod = "POD_" + job.upper()
        return [(name, None, "capture:" + pod),
                (["patch", "pod", "{%s}" % pod, "--subresource=status", "--type=merge", "-p", json.dumps({"status": {
                    "phase": phase, "containerStatuses": [{
                        "name": "main", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
                        "state": {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                                                 "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:01Z"}}}]}})],
                 None)]
    job = lambda name, extra: json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": dict({
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}, **extra)})
    status = lambda name: ["get", "job", name, "-o", "json"]
    events = ["get", "events", "--field-selector=involvedObject.kind=Job", "-o",
              'jsonpath={range .items[*]}{.involvedObject.name} {.type} {.reason} {.message}{"\\n"}{end}']
    steps = [(["create", "-f", "-"], job("ok", {}))]
    steps += [(["wait", "--for=jsonpath={.status.active}=1", "--timeout=30s", "job/ok"], None)]
    steps += finish("ok", "Succeeded", 0)
    steps += [(["wait", "--for=condition=Complete", "--timeout=30s", "job/ok"], None), (status("ok"), None)]
    steps += [(["create", "-f", "-"], job("bad", {"backoffLimit": 0}))]
    steps += [(["wait", "--for=jsonpath={.status.active}=1", "--timeout=30s", "job/bad"], None)]
    steps += finish("bad", "Failed", 1)
    steps += [(["wait", "--for=condition=Failed", "--timeout=30s", "job/bad"], None), (status("bad"), None)]
    steps += [(events, None, "uniq")]
    return steps


def submission_steps():
    """The objects gpupool submits (tests/fidelity/data/submissions.json: `gpupool submit ... --dry-run=client
    -o json` of the guide's Deployment with its SSD, NFS, PVC and shm volumes and staging, a Job with
    tolerations, a selector and a hostPath, a bare GPU pod), as the server stores them after defaulting."""
    data = json.load(open(os.path.join(HERE, "data", "submissions.json")))
    steps = []
    for key, kind in [("guide", "deployment"), ("job", "job"), ("pod", "pod")]:
        obj = data[key]
        name = obj["metadata"]["name"]
        steps += [(["create", "-f", "-"], json.dumps(obj))]
        if kind == "deployment":
            # The Deployment's status is its controller's: read it once the controller has scaled the
            # ReplicaSet up (status.updatedReplicas), not between its writes, on either server.
            steps += [(["wait", "--for=jsonpath={.status.updatedReplicas}=1", "--timeout=30s",
                        f"deployment/{name}"], None)]
        steps += [(["get", kind, name, "-o", "json"], None)]
    return steps


def kubeflow_steps():
    """The Kubeflow jobs gpupool submits (tests/fidelity/data/kubeflow.json: `gpupool submit mpi|pytorch|tf
    ... --dry-run=client -o json`: GPUs, workers, tolerations, SSD, NFS, shm and PVC volumes, env), created
    against training-operator v1.9.0's CRDs: the stored spec after pruning and defaulting. (Only the spec:
    the embedded operator runs, the oracle has none, so status differs by design.)"""
    data = json.load(open(os.path.join(HERE, "data", "kubeflow.json")))
    steps = []
    for key, kind in [("mpi", "mpijob"), ("pytorch", "pytorchjob"), ("tf", "tfjob")]:
        obj = data[key]
        steps += [(["create", "-f", "-", "-o", "jsonpath={.spec}"], json.dumps(obj)),
                  (["get", kind, obj["metadata"]["name"], "-o", "jsonpath={.metadata.generation} {.metadata.labels}"], None)]
    return steps


def arena_flags_steps():
    """Arena's submit flags (issue #15 item 3) as `gpupool submit` sends them, against training-operator
    v1.9.0's CRDs and the built-in kinds: what the server stores of each (the TFJob's Evaluator and
    per-replica images, runPolicy's activeDeadlineSeconds / ttlSecondsAfterFinished / backoffLimit /
    cleanPodPolicy, the git-sync and rsync init containers, the --config-file ConfigMap and its
    subPath mounts, a --device resource, labels, annotations, imagePullSecrets, imagePullPolicy,
    --shell, a Pod's and a Job's activeDeadlineSeconds), refusals where a flag cannot apply, and
    `gpupool delete` taking the ConfigMap with the job."""
    gp = ["gpupool"]
    config = os.path.join(HERE, "data", "arena-config.yaml")
    common = ["--image", "busybox:1.36", "--annotation", "team=vision", "-l", "project=resnet",
              "--image-pull-secret", "harbor-cred", "--image-pull-policy", "IfNotPresent", "--shell", "bash"]
    return [
        (gp + ["submit", "tf", "--name", "arena-tf", "--workers", "2", "--ps", "1", "--chief", "--evaluator",
               "--ps-image", "busybox:1.35", "--worker-image", "busybox:1.36-glibc", "--retry", "3",
               "--running-timeout", "2h", "--ttl-after-finished", "30m", "--clean-task-policy", "All"] + common +
         ["python train.py"], None),
        (["get", "tfjob", "arena-tf", "-o", "jsonpath={.metadata.labels} {.metadata.annotations.team} {.spec}{\"\\n\"}"], None),
        # TFJob's per-role flags (submit_tfjob.go): each role's resources, GPUs, port and nodeSelector,
        # and Arena's default cleanPodPolicy Running.
        (gp + ["submit", "tf", "--name", "arena-tf-roles", "--image", "busybox:1.36", "--workers", "2", "--ps", "1",
               "--chief", "--evaluator", "--gpus", "1", "--selector", "pool=any", "--worker-cpu", "2",
               "--worker-memory", "2Gi", "--worker-memory-limit", "4Gi", "--worker-port", "2223",
               "--worker-selector", "pool=gpu", "--ps-cpu", "1", "--ps-cpu-limit", "2", "--ps-memory", "1Gi",
               "--ps-gpus", "1", "--ps-port", "2224", "--ps-selector", "pool=cpu", "--chief-cpu", "3",
               "--chief-memory", "3Gi", "--chief-port", "2225", "--chief-selector", "pool=chief",
               "--evaluator-cpu", "1", "--evaluator-memory-limit", "1Gi", "--evaluator-selector", "pool=eval",
               "python train.py"], None),
        (["get", "tfjob", "arena-tf-roles", "-o", "jsonpath={.spec.runPolicy}" + "".join(
            "{\"\\n\"}%s {.spec.tfReplicaSpecs.%s.template.spec.nodeSelector} "
            "{.spec.tfReplicaSpecs.%s.template.spec.containers[0].resources} "
            "{.spec.tfReplicaSpecs.%s.template.spec.containers[0].ports}" % ((role,) * 4)
            for role in ("Chief", "PS", "Worker", "Evaluator")) + "{\"\\n\"}"], None),
        # --success-policy (spec.successPolicy) and the Worker / PS pod (anti-)affinity of the chart's
        # helpers; --share-memory and --nproc-per-node on a PyTorchJob (the dshm volume, PET_NPROC_PER_NODE).
        (gp + ["submit", "tf", "--name", "arena-tf-place", "--image", "busybox:1.36", "--workers", "2", "--ps", "1",
               "--success-policy", "AllWorkers", "--worker-affinity-policy", "spread", "--ps-affinity-policy",
               "binpack", "--ps-affinity-constraint", "required", "--share-memory", "1Gi", "python train.py"], None),
        (["get", "tfjob", "arena-tf-place", "-o", "jsonpath={.spec.successPolicy}" + "".join(
            "{\"\\n\"}%s {.spec.tfReplicaSpecs.%s.template.spec.affinity} "
            "{.spec.tfReplicaSpecs.%s.template.spec.volumes}" % ((role,) * 3)
            for role in ("PS", "Worker")) + "{\"\\n\"}"], None),
        (gp + ["submit", "pytorch", "--name", "arena-pt-shm", "--image", "busybox:1.36", "--workers", "2",
               "--share-memory", "2Gi", "--nproc-per-node", "gpu", "python train.py"], None),
        (["get", "pytorchjob", "arena-pt-shm", "-o", "jsonpath={.spec.pytorchReplicaSpecs.Worker.template.spec}"
          "{\"\\n\"}"], None),
        (gp + ["submit", "mpi", "--name", "arena-dep", "--image", "busybox", "--rdma", "--", "true"], None),
        (gp + ["submit", "tf", "--name", "arena-dep", "--image", "busybox", "--starting-timeout", "5m", "--",
               "true"], None),
        (gp + ["submit", "tf", "--name", "arena-dep", "--image", "busybox", "--ps-cpu", "1", "--", "true"], None),
        (gp + ["submit", "pytorch", "--name", "arena-dep", "--image", "busybox", "--worker-selector", "a=b", "--",
               "true"], None),
        (gp + ["submit", "pytorch", "--name", "arena-pt", "--workers", "3", "--working-dir", "/root",
               "--sync-mode", "git", "--sync-source", "https://github.com/kubeflow/arena.git",
               "--config-file", config + ":/etc/train/train.yaml", "--device", "example.com/fpga=1",
               "--cpu", "1", "--memory", "1Gi"] + common + ["python train.py"], None),
        (["get", "pytorchjob", "arena-pt", "-o", "jsonpath={.spec}"], None),
        (["get", "configmap", "arena-pt-config", "-o", "jsonpath={.metadata.labels} {.data}{\"\\n\"}"], None),
        (gp + ["submit", "job", "--name", "arena-job", "--retry", "2", "--running-timeout", "10m",
               "--ttl-after-finished", "1h", "--sync-mode", "rsync", "--sync-source", "10.0.0.5::code/project",
               "--sync-image", "instrumentisto/rsync-ssh:alpine3.20"] + common + ["python train.py"], None),
        (["get", "job", "arena-job", "-o", "jsonpath={.spec.backoffLimit} {.spec.activeDeadlineSeconds} "
          "{.spec.ttlSecondsAfterFinished} {.spec.template.spec}{\"\\n\"}"], None),
        (gp + ["submit", "pod", "--name", "arena-pod", "--running-timeout", "90s", "--config-file",
               config + ":/etc/a.yaml"] + common + ["python train.py"], None),
        (["get", "pod", "arena-pod", "-o", "jsonpath={.spec.activeDeadlineSeconds} {.spec.containers[0]} "
          "{.spec.volumes}{\"\\n\"}"], None),
        # Flags that cannot apply: refused before anything is sent (exit 2, one line).
        (gp + ["submit", "deployment", "--name", "arena-dep", "--image", "busybox", "--retry", "2", "--", "true"],
         None),
        (gp + ["submit", "pytorch", "--name", "arena-dep", "--image", "busybox", "--ps", "1", "--", "true"], None),
        (gp + ["submit", "pod", "--name", "arena-dep", "--image", "busybox", "--ttl-after-finished", "1h", "--",
               "true"], None),
        (["get", "deployments,configmaps", "-l", "gpupool.io/job-name", "-o", "name"], None),
        (gp + ["delete", "arena-pt"], None),
        (gp + ["delete", "arena-pod"], None),
        (["get", "configmaps", "-l", "gpupool.io/job-name", "-o", "name"], None),
    ]


def function_job_steps():
    """A Python function launched as a job (issue #15 item 4; tests/fidelity/data/function-job.json is
    gpupool.function_workload(train, kind=job|pytorch, num_nodes=2, ...) rendered with the generic
    profile: an inline Indexed Job, a ConfigMap holding a larger program and the Job mounting it, and a
    PyTorchJob against training-operator's CRD): what the servers store of each."""
    objs = json.load(open(os.path.join(HERE, "data", "function-job.json")))
    c0 = "{.spec.template.spec.containers[0]"
    show = {"ConfigMap": "{.metadata.name} {.metadata.labels}",
            "Job": ("{.spec.completionMode} {.spec.completions} {.spec.parallelism} {.spec.template.spec.volumes} "
                    + c0 + ".volumeMounts} " + c0 + ".env} " + c0 + ".command[2]}"),
            "PyTorchJob": "{.spec.pytorchReplicaSpecs.Worker.replicas} {.spec.pytorchReplicaSpecs.Master.template.spec}"}
    return [(["create", "-f", "-", "-o", "jsonpath=" + show[o["kind"]]], json.dumps(o)) for o in objs]


def kueue_steps():
    """Kueue v0.14.8's CRDs (data/crds/kueue_*.json, kueue.x-k8s.io/v1beta1; shared with other users of
    the oracle, so installed when absent and never deleted): the ResourceFlavor, ClusterQueue and
    LocalQueue a site writes, stored with their defaults; the CRDs' CEL rules and enums refusing bad
    fields; the Workload Kueue makes for a job; and a queued Job as `gpupool submit --queue` renders
    it (the queue label, spec.suspend). The ClusterQueue has no GPU quota, so the embedded Kueue keeps
    the job pending and suspended, as the oracle (no Kueue controller) leaves it. Controller behaviour
    is tested in tests/embedded/kueue_test.cpp."""
    def kobj(kind, name, spec, namespaced=False, **top):
        md = {"name": name}
        return json.dumps(dict({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": kind, "metadata": md, "spec": spec},
                               **top))
    flavor = {"nodeLabels": {"gpu": "a100"}, "nodeTaints": [{"key": "gpu", "value": "a100", "effect": "NoSchedule"}]}
    groups = [{"coveredResources": ["cpu", "nvidia.com/gpu"],
               "flavors": [{"name": "kueue-fid-a100", "resources": [{"name": "cpu", "nominalQuota": "8"},
                                                                     {"name": "nvidia.com/gpu", "nominalQuota": 0}]}]}]
    cq_spec = {"namespaceSelector": {}, "queueingStrategy": "StrictFIFO", "resourceGroups": groups,
               "preemption": {"withinClusterQueue": "LowerPriority"}}
    podset = {"name": "main", "count": 2, "template": {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}}
    dry = ["create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec}"]
    return [
        (["create", "-f", "-", "-o", "jsonpath={.spec}"], kobj("ResourceFlavor", "kueue-fid-a100", flavor)),
        (["create", "-f", "-", "-o", "jsonpath={.spec}"], kobj("ClusterQueue", "kueue-fid-cq", cq_spec)),
        (["create", "-f", "-", "-o", "jsonpath={.spec}"],
         kobj("LocalQueue", "kueue-team", {"clusterQueue": "kueue-fid-cq"})),
        (["get", "localqueue", "kueue-team", "-o", "jsonpath={.metadata.name} {.spec.clusterQueue}"], None),
        (["get", "clusterqueue", "kueue-fid-cq", "-o", "jsonpath={.spec.queueingStrategy} {.spec.resourceGroups}"], None),
        # Refused: an enum, the CEL rules of each kind, an immutable field.
        (dry, kobj("ClusterQueue", "kueue-fid-bad", dict(cq_spec, queueingStrategy="Random"))),
        (dry, kobj("ClusterQueue", "kueue-fid-bad", dict(cq_spec, resourceGroups=[dict(groups[0], flavors=[
            {"name": "kueue-fid-a100", "resources": [{"name": "cpu", "nominalQuota": "8"}]}])]))),
        (dry, kobj("ClusterQueue", "kueue-fid-bad", dict(cq_spec, resourceGroups=[dict(groups[0], flavors=[
            {"name": "kueue-fid-a100", "resources": [{"name": "cpu", "nominalQuota": "8", "borrowingLimit": "1"},
                                                     {"name": "nvidia.com/gpu", "nominalQuota": 0}]}])]))),
        (dry, kobj("ResourceFlavor", "kueue-fid-bad", {"nodeTaints": [{"key": "gpu", "effect": "Sometimes"}]})),
        (dry, kobj("LocalQueue", "kueue-bad", {})),
        (["patch", "localqueue", "kueue-team", "--type=merge", "-p", '{"spec":{"clusterQueue":"other"}}'], None),
        # The Workload of a job, as Kueue makes it (defaults), and CEL on its podSets.
        (dry, kobj("Workload", "job-kueue-train-00000", {"queueName": "kueue-team", "podSets": [podset]})),
        (dry, kobj("Workload", "job-kueue-train-00000", {"queueName": "kueue-team", "podSets": [dict(podset, minCount=3)]})),
        (dry, kobj("Workload", "job-kueue-train-00000", {"queueName": "kueue-team", "priorityClassName": "high",
                                                         "podSets": [podset]})),
        # A queued Job as gpupool submits it: labelled, suspended.
        (["gpupool", "submit", "job", "--name", "kueue-train", "--image", "busybox", "--gpus", "1", "--workers", "2",
          "--queue", "kueue-team", "--", "sleep", "1"], None),
        (["get", "job", "kueue-train", "-o",
          "jsonpath={.spec.suspend} {.spec.parallelism} {.metadata.labels.kueue\\.x-k8s\\.io/queue-name}"], None),
        (["gpupool", "submit", "job", "--name", "kueue-bad", "--image", "busybox", "--queue", "Bad_Queue", "--",
          "true"], None),
        (["delete", "clusterqueue", "kueue-fid-cq"], None),
        (["delete", "resourceflavor", "kueue-fid-a100"], None),
    ]


def vpod(name, containers=None, **spec):
    """A pod for the podvalues scenario: one valid container unless `containers`, plus `spec` fields."""
    body = {"containers": containers if containers is not None else [{"name": "main", "image": "busybox"}]}
    body.update(spec)
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body})


def vc(**fields):
    """A container named main running busybox, with `fields`."""
    c = {"name": "main", "image": "busybox"}
    c.update(fields)
    return c


REPO = os.path.dirname(os.path.dirname(HERE))
GUIDE_MANIFESTS = os.path.join(REPO, "examples", "manifests")  # the guide's Deployment and PVC, unchanged
GUIDE_QUOTA = os.path.join(HERE, "data", "guide-quota.yaml")


def gpupool_apply_steps():
    """`gpupool apply` and the quota pre-flight of submit/apply (issue #14 items 1 and 2), run as a user
    runs them (`gpupool --kubeconfig K -n NS ...`): the guide's manifests applied unchanged (client and
    server dry runs, created, unchanged, configured), the objects and field manager they leave, the
    guide's quota refusing a job before anything is created, and the rollback of a half-done apply."""
    gp = ["gpupool", "--profile", "iiis"]
    deployment = open(os.path.join(GUIDE_MANIFESTS, "ubuntu-tf-example.yaml")).read()
    relabelled = deployment.replace("  labels:\n    name: my-ubuntu-tf\nspec:",
                                    "  labels:\n    name: my-ubuntu-tf\n    team: vision\nspec:", 1)
    assert relabelled != deployment
    small = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}

    def dep(name, labels, selector, resources=None):
        c = {"name": "main", "image": "busybox", "command": ["sleep", "infinity"]}
        if resources:
            c["resources"] = resources
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                "spec": {"replicas": 1, "selector": {"matchLabels": selector},
                         "template": {"metadata": {"labels": labels}, "spec": {"containers": [c]}}}}
    half_done = "\n---\n".join(json.dumps(o) for o in [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "first"}, "data": {"a": "1"}},
        dep("mismatch", {"app": "a"}, {"app": "b"}, small)])  # the server refuses the selector
    return [
        (gp + ["apply", "-f", GUIDE_MANIFESTS, "--dry-run=client"], None),
        (gp + ["apply", "-f", GUIDE_MANIFESTS, "--dry-run=server"], None),
        (gp + ["apply", "-f", os.path.join(GUIDE_MANIFESTS, "nfs-pvc-example.yaml"), "--dry-run=server", "-o", "json"],
         None),
        (["get", "deployments,pvc", "-o", "name"], None),  # nothing stored yet
        (gp + ["apply", "-f", GUIDE_MANIFESTS], None),
        (gp + ["apply", "-f", GUIDE_MANIFESTS], None),
        (gp + ["apply", "-f", "-"], relabelled),
        (["get", "deployment", "my-first-ubuntu-tf", "-o", "json"], None),
        # The claim as applied; whether it binds is the provisioner's affair (FIDELITY.md, difference 22).
        (["get", "pvc", "my-pvc", "-o", "jsonpath={.metadata.labels} {.spec.storageClassName} {.spec.accessModes} "
          "{.spec.resources} {.spec.volumeMode}{\"\\n\"}"], None),
        (["get", "deployment,pvc", "-o", 'jsonpath={range .items[*]}{.kind}: '
          '{.metadata.managedFields[?(@.operation=="Apply")].manager}{"\\n"}{end}'], None),
        # The guide's quota, applied as it is; its controller counts the Deployment's pod.
        (gp + ["apply", "-f", GUIDE_QUOTA], None),
        (["wait", "--for=jsonpath={.status.used.limits\\.cpu}=4", "--timeout=30s", "resourcequota/compute"], None),
        (["get", "resourcequota", "compute", "-o", "jsonpath={.status}"], None),
        # Refused before anything is created: no limits (the generic profile does not copy requests) ...
        (["gpupool", "--profile", "generic", "submit", "deployment", "--name", "nolimits", "--image", "busybox",
          "--cpu", "1", "--memory", "1Gi", "--", "sleep", "infinity"], None),
        # ... and more than the quota's room, all pods together (the iiis profile's limits are the requests).
        (gp + ["submit", "deployment", "--name", "big", "--image", "busybox", "--workers", "2", "--cpu", "3",
               "--memory", "4Gi", "--", "sleep", "infinity"], None),
        (gp + ["submit", "job", "--name", "fits", "--image", "busybox", "--cpu", "1", "--memory", "1Gi",
               "--dry-run", "--", "true"], None),
        (gp + ["apply", "-f", "-"], json.dumps(dep("nolimits-applied", {"app": "n"}, {"app": "n"},
                                                     {"requests": {"cpu": "100m"}}))),
        (gp + ["apply", "-f", "-"], json.dumps(dep("big-applied", {"app": "b"}, {"app": "b"},
                                                     {"requests": {"cpu": "5", "memory": "1Gi"},
                                                      "limits": {"cpu": "5", "memory": "1Gi"}}))),
        # A half-done apply: the ConfigMap it created is deleted again.
        (gp + ["apply", "-f", "-"], half_done),
        (["get", "configmap", "first"], None),
        (["get", "deployments,jobs,pvc", "-o", "name"], None),
    ]


def gpupool_loop_steps():
    """The daily loop of issue #14 after a submit, run with the gpupool command as a user runs it on a
    cluster where the job cannot start (no node fits: both servers leave its pod Pending): get, list,
    logs and explain say why; exec, port-forward and tensorboard refuse; a name held by another kind;
    wait --for Succeeded of a Deployment; logs -i of a pod that is not the job's; quota with none;
    taint and untaint as kubectl does them (on an unschedulable node, so no pod lands there)."""
    gp = ["gpupool"]
    node = "loop-fid-n1"
    return [
        (gp + ["submit", "job", "--name", "loop1", "--image", "busybox", "--", "sleep", "100"], None),
        (["wait", "--for=condition=PodScheduled=false", "pod", "-l", "job-name=loop1", "--timeout=30s"], None),
        (["get", "pods", "-l", "job-name=loop1", "-o", "jsonpath={.items[0].metadata.name}"], None, "capture:POD"),
        (gp + ["get", "loop1"], None),
        (gp + ["list"], None),
        (gp + ["logs", "loop1"], None),
        (gp + ["logs", "loop1", "-i", "nosuchpod"], None),
        (gp + ["explain", "loop1"], None),
        (gp + ["exec", "loop1", "--", "ls"], None),
        (gp + ["port-forward", "loop1", "8080:80"], None),
        (gp + ["tensorboard", "loop1"], None),
        # Another kind holding the name: a second submit is refused; get and delete name the kinds.
        (["create", "deployment", "loop1", "--image=busybox"], None),
        (gp + ["submit", "deployment", "--name", "loop1", "--image", "busybox", "--", "sleep", "100"], None),
        (gp + ["delete", "loop1"], None),
        (["delete", "deployment", "loop1"], None),
        (gp + ["submit", "deployment", "--name", "loopd", "--image", "busybox", "--", "sleep", "100"], None),
        (gp + ["wait", "loopd", "--for", "Succeeded"], None),
        (gp + ["logs", "loopd", "-i", "{POD}"], None),
        (gp + ["quota"], None),
        (gp + ["taint", node, "a=b:NoSchedule"], None),
        (gp + ["taint", node, "a=c:NoSchedule"], None),
        (gp + ["taint", node, "a=c:NoSchedule", "--overwrite"], None),
        (gp + ["taint", node, "a:"], None),
        (gp + ["taint", node, "a-"], None),
        (["get", "node", node, "-o", 'jsonpath={.spec.taints[?(@.key=="a")]}'], None),
        (gp + ["delete", "loop1", "loopd"], None),
        (["get", "jobs,deployments", "-o", "name"], None),
    ]


def podvalues_steps():
    """Value rules of ValidatePodSpec and friends (issue #20): each bad pod is sent as a server dry run,
    so the answer is the 422 with its causes in Kubernetes' order; good pods show the defaults."""
    dry = ["create", "--dry-run=server", "-f", "-"]
    show = ["create", "--dry-run=server", "-o", "json", "-f", "-"]
    probe = {"exec": {"command": ["true"]}}
    bad = [
        vpod("cnames", [{"name": "Bad_Name", "image": "busybox"}, {"name": "a"}, {"name": "a", "image": "b"}, {"image": "c"}]),
        vpod("ports", [vc(ports=[{"containerPort": 0}, {"containerPort": 70000, "hostPort": -1, "protocol": "tcp"},
                                 {"containerPort": 80, "name": "web"}, {"containerPort": 81, "name": "web"},
                                 {"containerPort": 82, "name": "Bad_Port"}, {"containerPort": 83, "name": "123"},
                                 {"containerPort": 84, "name": "a--b"}, {"containerPort": 85, "name": "abcdefghijklmnopq"}])]),
        vpod("hostports", [vc(ports=[{"containerPort": 80, "hostPort": 8080}]),
                           vc(name="side", ports=[{"containerPort": 81, "hostPort": 8080}])]),
        vpod("hostnet", [vc(ports=[{"containerPort": 80, "hostPort": 81}])], hostNetwork=True),
        vpod("policies", [vc(imagePullPolicy="Sometimes", terminationMessagePolicy="Nope")]),
        vpod("imagews", [vc(image=" busybox ")]),
        vpod("env", [vc(env=[{"name": "A", "valueFrom": {}}, {"name": "B", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                             {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}, "secretKeyRef": {"name": "s", "key": "k"}}},
                             {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.foo"}}},
                             {"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['a b']"}}},
                             {"name": "F", "valueFrom": {"configMapKeyRef": {"name": "Bad_Name", "key": "a b"}}},
                             {"name": "G", "valueFrom": {"secretKeyRef": {"name": "", "key": ""}}},
                             {"name": "H", "valueFrom": {"resourceFieldRef": {"resource": "limits.foo"}}},
                             {"name": "I", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1Mi"}}},
                             {"name": "", "value": "x"}])]),
        vpod("envfrom", [vc(envFrom=[{}, {"prefix": "A=B", "configMapRef": {"name": "c"}},
                                     {"configMapRef": {"name": "c"}, "secretRef": {"name": "s"}},
                                     {"configMapRef": {"name": "Bad_Name"}}, {"secretRef": {"name": ""}}])]),
        vpod("negcpu", [vc(resources={"requests": {"cpu": "-1"}})]),
        vpod("reqlim", [vc(resources={"limits": {"cpu": "1"}, "requests": {"cpu": "2"}})]),
        vpod("gpunolimit", [vc(resources={"requests": {"nvidia.com/gpu": "1"}})]),
        vpod("gpuneq", [vc(resources={"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1"}})]),
        vpod("gpufrac", [vc(resources={"limits": {"nvidia.com/gpu": "0.5"}})]),
        vpod("resname", [vc(resources={"limits": {"foo": "1"}})]),
        vpod("resnative", [vc(resources={"limits": {"kubernetes.io/foo": "1"}})]),
        vpod("resbadname", [vc(resources={"limits": {"example.com/a b": "1"}})]),
        vpod("hugepages", [vc(resources={"limits": {"hugepages-2Mi": "2Mi"}})]),
        vpod("hugepages2", [vc(resources={"limits": {"hugepages-2Mi": "3Mi", "memory": "1Gi"}})]),
        vpod("hugepages3", [vc(resources={"limits": {"hugepages-1Gi": "2Gi", "cpu": "1"}, "requests": {"hugepages-1Gi": "1Gi"}})]),
        vpod("mounts", [vc(volumeMounts=[{"name": "nope", "mountPath": "/a"}, {"name": "v", "mountPath": ""},
                                         {"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b", "subPath": "../x"},
                                         {"name": "v", "mountPath": "/c", "subPath": "/abs"},
                                         {"name": "v", "mountPath": "/d", "subPath": "s", "subPathExpr": "e"},
                                         {"name": "v", "mountPath": "/e", "mountPropagation": "Bogus"},
                                         {"name": "", "mountPath": "/f"}])],
             volumes=[{"name": "v", "emptyDir": {}}]),
        vpod("probes", [vc(livenessProbe={"initialDelaySeconds": -1, "successThreshold": 2},
                           readinessProbe={"exec": {"command": ["true"]}, "httpGet": {"port": 80}, "terminationGracePeriodSeconds": 5},
                           startupProbe={"tcpSocket": {"port": 70000}, "successThreshold": 3, "timeoutSeconds": -1})]),
        vpod("handlers", [vc(livenessProbe={"httpGet": {"port": "Bad_Name", "scheme": "FTP", "httpHeaders": [{"name": "a b", "value": "x"}]},
                                            "terminationGracePeriodSeconds": 0},
                             readinessProbe={"exec": {}}, startupProbe={"grpc": {"port": 0}},
                             lifecycle={"postStart": {}, "preStop": {"sleep": {"seconds": 100}}})]),
        vpod("sleepzero", [vc(lifecycle={"preStop": {"sleep": {"seconds": 0}}})], terminationGracePeriodSeconds=10),
        vpod("csec", [vc(securityContext={"runAsUser": -1, "runAsGroup": -1, "procMount": "Bogus",
                                          "seccompProfile": {"type": "Bogus"}})]),
        vpod("csec2", [vc(securityContext={"privileged": True, "allowPrivilegeEscalation": False,
                                           "capabilities": {"add": ["CAP_SYS_ADMIN"]},
                                           "seccompProfile": {"type": "Localhost"}})]),
        vpod("csec3", [vc(securityContext={"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "p"}})]),
        vpod("psec", securityContext={"fsGroup": -1, "runAsUser": -1, "runAsGroup": 2147483648, "supplementalGroups": [1, -1],
                                      "sysctls": [{"name": "", "value": "1"}, {"name": "Bad Name", "value": "1"},
                                                  {"name": "net.ipv4.ip_forward", "value": "1"}, {"name": "net.ipv4.ip_forward", "value": "0"}],
                                      "fsGroupChangePolicy": "Bogus", "seccompProfile": {"type": "Localhost", "localhostProfile": "../p"}},
             hostNetwork=True),
        vpod("psec2", shareProcessNamespace=True, hostPID=True, hostUsers=False, hostIPC=True,
             securityContext={"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}, {"name": "kernel/msgmax", "value": "1"}]}),
        vpod("dnspolicy", dnsPolicy="Bogus"),
        vpod("dnsnone", dnsPolicy="None"),
        vpod("dnsnone2", dnsPolicy="None", dnsConfig={"searches": ["a"]}),
        vpod("dnsconfig", dnsConfig={"nameservers": ["1.1.1.1", "1.0.0.1", "8.8.8.8", "x"], "searches": ["Bad_Domain", "ok.example.", "."],
                                     "options": [{"name": ""}, {"name": "ndots", "value": "2"}]}),
        vpod("hostaliases", hostAliases=[{"ip": "x", "hostnames": ["Bad_Host", "ok"]}, {"ip": "::1", "hostnames": ["a"]}]),
        vpod("spread", topologySpreadConstraints=[
            {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Bogus"},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 0},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "nodeAffinityPolicy": "Bogus", "nodeTaintsPolicy": "Bogus"},
            {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["app", "Bad Key"],
             "labelSelector": {"matchLabels": {"app": "x"}}}]),
        vpod("spread2", topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["app"]},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}}]),
        vpod("tolerations", tolerations=[{"key": "a", "operator": "Bogus"}, {"key": "b", "operator": "Exists", "value": "v"},
                                         {"key": "c", "effect": "NoSchedule", "tolerationSeconds": 5}, {"operator": "Equal", "value": "v"},
                                         {"key": "d", "effect": "Bogus"}, {"key": "Bad Key", "value": "Bad Value!"}]),
        vpod("volumes", [vc(volumeMounts=[{"name": "two", "mountPath": "/two"}])], volumes=[
            {"name": "two", "emptyDir": {}, "hostPath": {"path": "/x"}},
            {"name": "Bad_Name", "emptyDir": {}}, {"name": "dup", "emptyDir": {}}, {"name": "dup", "emptyDir": {}},
            {"name": "hp1", "hostPath": {"path": ""}}, {"name": "hp2", "hostPath": {"path": "/a/../b", "type": "Bogus"}},
            {"name": "nfs", "nfs": {"server": "", "path": "rel"}}, {"name": "ed", "emptyDir": {"sizeLimit": "-1"}},
            {"name": "pvc", "persistentVolumeClaim": {"claimName": ""}},
            {"name": "sec", "secret": {"secretName": "", "defaultMode": 512, "items": [{"key": "", "path": ""}, {"key": "k", "path": "../x", "mode": -1}]}},
            {"name": "cm", "configMap": {"name": "", "items": [{"key": "k", "path": "/abs"}, {"key": "k", "path": "..data/x"}]}},
            {"name": "", "emptyDir": {}}]),
        vpod("volumes2", volumes=[{"name": "csi", "csi": {"driver": ""}}, {"name": "dapi", "downwardAPI": {"items": [{"path": "x", "fieldRef": {"fieldPath": "metadata.foo"}}]}},
                                  {"name": "pj", "projected": {"sources": [{"configMap": {"name": "c"}}, {}]}}]),
        vpod("podfields", restartPolicy="Sometimes", activeDeadlineSeconds=0, readinessGates=[{"conditionType": "bad type!"}],
             nodeName="Bad_Node!", hostname="Bad_Host", subdomain="Bad.Sub", serviceAccountName="Bad_SA",
             schedulingGates=[{"name": "a"}, {"name": "a"}, {"name": "bad gate"}]),
        vpod("podfields2", activeDeadlineSeconds=4294967296, nodeSelector={"bad key!": "v"}, os={"name": "plan9"}),
        vpod("nodeselector", nodeSelector={"k": "bad value!"}, nodeName="n1", schedulingGates=[{"name": "g"}]),
        vpod("priorityname", priorityClassName="Bad_Name"),
        vpod("preemption", preemptionPolicy="Bogus"),
        vpod("runtimeclass", [vc(name="Bad_Name")], runtimeClassName="gvisor"),
        vpod("overhead", overhead={"cpu": "100m"}),
        vpod("overhead2", overhead={"cpu": "-1"}),
        vpod("oswindows", [vc(securityContext={"runAsUser": 1, "privileged": False, "capabilities": {}, "readOnlyRootFilesystem": True})],
             initContainers=[vc(name="i", securityContext={"seccompProfile": {"type": "RuntimeDefault"}, "procMount": "Default"})],
             os={"name": "windows"}, hostPID=True, hostIPC=False, shareProcessNamespace=False,
             securityContext={"fsGroup": 1, "runAsGroup": 1, "supplementalGroups": [], "sysctls": [{"name": "kernel.msgmax", "value": "1"}],
                              "seLinuxOptions": {"level": "s0"}}),
        vpod("oslinux", [vc(securityContext={"windowsOptions": {"runAsUserName": "u"}})], initContainers=[
            vc(name="i", securityContext={"windowsOptions": {"runAsUserName": "u"}})], os={"name": "linux"},
             securityContext={"windowsOptions": {"runAsUserName": "u"}}),
        vpod("init", [vc()], initContainers=[
            vc(name="main"), vc(name="i1", restartPolicy="Never", lifecycle={"postStart": probe}, livenessProbe=probe,
                                readinessProbe=probe, startupProbe=probe),
            vc(name="side", restartPolicy="Always", livenessProbe={"exec": {"command": ["true"]}, "successThreshold": 2},
               lifecycle={"preStop": {}}),
            vc(name="i2", ports=[{"containerPort": 80, "hostPort": 80}, {"containerPort": 81, "hostPort": 80}]),
            {"name": "", "image": ""}]),
        vpod("regular", [vc(restartPolicy="Always")]),
        json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "annotations", "annotations": {
            "Bad Key": "x", "kubernetes.io/config.mirror": "m", "controller.kubernetes.io/pod-deletion-cost": "+10",
            "seccomp.security.alpha.kubernetes.io/pod": "localhost/../p",
            "container.apparmor.security.beta.kubernetes.io/nope": "bogus"}},
            "spec": {"containers": [vc()]}}),
        json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "annotations2", "annotations": {
            "controller.kubernetes.io/pod-deletion-cost": "4294967296", "seccomp.security.alpha.kubernetes.io/pod": "bogus"}},
            "spec": {"containers": [vc()]}}),
        json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "annotations": {"a/b/c": "x"}}}),
        vpod("affinity", affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []},
                             "preferredDuringSchedulingIgnoredDuringExecution": [
                                 {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}},
                                 {"weight": 101, "preference": {"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}}]},
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}, "topologyKey": ""},
                {"namespaces": ["Bad_NS"], "namespaceSelector": {"matchLabels": {"bad key!": "x"}}, "topologyKey": "bad key!"}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 200, "podAffinityTerm": {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
                                                    "topologyKey": "zone"}}]}}),
        json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "labelkeys", "labels": {"app": "x", "tier": "t"}},
                    "spec": {"containers": [vc()], "affinity": {
                        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": "zone", "matchLabelKeys": ["app"]},
                            {"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                             "matchLabelKeys": ["app", "Bad Key"], "mismatchLabelKeys": ["app"]}]},
                        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 1, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"tier": "t"}},
                                                              "mismatchLabelKeys": ["tier"]}}]}}}}),
        vpod("projected", volumes=[{"name": "pj", "projected": {"defaultMode": 1000, "sources": [
            {"configMap": {"name": "", "items": [{"key": "k", "path": "a"}]}},
            {"secret": {"name": "s", "items": [{"key": "k", "path": "a"}]}},
            {"downwardAPI": {"items": [{"path": "a", "fieldRef": {"fieldPath": "metadata.name"}}]}},
            {"serviceAccountToken": {"path": "", "expirationSeconds": 60}},
            {"configMap": {"name": "c"}, "secret": {"name": "s"}}]}}]),
        vpod("projected2", volumes=[{"name": "pj", "projected": {"sources": [{"serviceAccountToken": {"path": "../t"}}]}}]),
        vpod("devices", [vc(volumeDevices=[{"name": "ed", "devicePath": "/dev/a"}, {"name": "pvc", "devicePath": "/dev/../b"},
                                           {"name": "pvc", "devicePath": "/m"}, {"name": "nope", "devicePath": ""}],
                            volumeMounts=[{"name": "pvc", "mountPath": "/m"}])],
             volumes=[{"name": "ed", "emptyDir": {}}, {"name": "pvc", "persistentVolumeClaim": {"claimName": "c"}}]),
        vpod("rro", [vc(volumeMounts=[{"name": "v", "mountPath": "/a", "recursiveReadOnly": "Enabled", "mountPropagation": "HostToContainer"},
                                      {"name": "v", "mountPath": "/b", "recursiveReadOnly": "Bogus"},
                                      {"name": "v", "mountPath": "/c", "mountPropagation": "Bidirectional"}])],
             volumes=[{"name": "v", "emptyDir": {}}]),
        vpod("apparmor", [vc(securityContext={"appArmorProfile": {"type": "Localhost", "localhostProfile": " p "}}),
                          vc(name="b", securityContext={"appArmorProfile": {"type": "Bogus"}}),
                          vc(name="c", securityContext={"appArmorProfile": {"type": "RuntimeDefault", "localhostProfile": "p"}}),
                          vc(name="d", securityContext={"appArmorProfile": {"type": "Localhost"}})],
             securityContext={"appArmorProfile": {"type": "Localhost", "localhostProfile": ""}}),
        vpod("ephemeral2", ephemeralContainers=[
            {"name": "main", "image": "busybox", "ports": [{"containerPort": 80}], "targetContainerName": "nope",
             "volumeMounts": [{"name": "v", "mountPath": "/v", "subPath": "x"}], "lifecycle": {"preStop": {"exec": {"command": ["x"]}}}},
            {"name": "", "image": " b", "resources": {"limits": {"cpu": "1"}}, "stdin": True}],
             volumes=[{"name": "v", "emptyDir": {}}]),
        vpod("ephemeral", ephemeralContainers=[{"name": "debug", "image": "busybox"}]),
        vpod("nocontainers", []),
        vpod("gpu", [vc(resources={"limits": {"nvidia.com/gpu": "1", "cpu": "1"}, "requests": {"nvidia.com/gpu": "1", "cpu": "2"}})]),
    ]
    good = vpod("good", [vc(ports=[{"containerPort": 80, "name": "http"}, {"containerPort": 53, "protocol": "UDP"}],
                            env=[{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                 {"name": "LIM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                                 {"name": "ANN", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['a']"}}}],
                            envFrom=[{"prefix": "P_", "configMapRef": {"name": "c", "optional": True}}],
                            resources={"limits": {"cpu": "1", "memory": "64Mi", "nvidia.com/gpu": "1"}},
                            livenessProbe={"httpGet": {"port": "http"}}, readinessProbe={"tcpSocket": {"port": 80}},
                            startupProbe={"grpc": {"port": 9000}}, lifecycle={"preStop": {"sleep": {"seconds": 5}}},
                            volumeMounts=[{"name": "data", "mountPath": "/data", "subPath": "a/b"}, {"name": "shm", "mountPath": "/dev/shm"}],
                            securityContext={"runAsUser": 1000, "allowPrivilegeEscalation": False, "seccompProfile": {"type": "RuntimeDefault"}})],
                initContainers=[vc(name="side", restartPolicy="Always", readinessProbe={"exec": {"command": ["true"]}})],
                volumes=[{"name": "data", "hostPath": {"path": "/mnt/ssd", "type": "DirectoryOrCreate"}},
                         {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                         {"name": "nfs", "nfs": {"server": "nfs.example", "path": "/share"}}, {"name": "dflt"}],
                securityContext={"fsGroup": 1000, "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65000"}]},
                dnsPolicy="None", dnsConfig={"nameservers": ["1.1.1.1"], "searches": ["example.com"], "options": [{"name": "ndots", "value": "2"}]},
                hostAliases=[{"ip": "127.0.0.1", "hostnames": ["foo.local"]}],
                topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2,
                                            "labelSelector": {"matchLabels": {"app": "x"}}, "matchLabelKeys": ["pod-template-hash"]}],
                tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}, {"operator": "Exists"}],
                restartPolicy="OnFailure", activeDeadlineSeconds=100, readinessGates=[{"conditionType": "example.com/ready"}])
    tpl_spec = {"containers": [vc(ports=[{"containerPort": 0}], livenessProbe={})], "volumes": [{"name": "v", "hostPath": {"path": "/a/../b"}}]}
    deploy = json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                         "spec": {"selector": {"matchLabels": {"app": "d"}},
                                  "template": {"metadata": {"labels": {"app": "d", "bad key!": "v"},
                                                            "annotations": {"Bad Key": "x",
                                                                            "controller.kubernetes.io/pod-deletion-cost": "x"}},
                                               "spec": tpl_spec}}})
    job = json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                      "spec": {"template": {"spec": {"restartPolicy": "Never", "dnsPolicy": "None",
                                                     "containers": [vc(resources={"requests": {"nvidia.com/gpu": "1"}})]}}}})
    tplhost = json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "h"},
                          "spec": {"selector": {"matchLabels": {"app": "h"}},
                                   "template": {"metadata": {"labels": {"app": "h"}},
                                                "spec": {"hostNetwork": True, "containers": [vc(ports=[{"containerPort": 80}])],
                                                         "preemptionPolicy": "Bogus", "priorityClassName": "Bad_Name",
                                                         "ephemeralContainers": [{"name": "e", "image": "busybox"}]}}}})
    # What v1.32 takes and gpupool's client checks must take too (tests/model/workload_test.cpp).
    lenient = vpod("lenient", [vc(volumeMounts=[{"name": "dshm", "mountPath": "rel"}, {"name": "p", "mountPath": "/a/"},
                                                {"name": "p", "mountPath": "/a", "subPath": "x"}])],
                   schedulerName="Orion Scheduler", imagePullSecrets=[{"name": "Reg Cred"}],
                   volumes=[{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "0"}},
                            {"name": "p", "persistentVolumeClaim": {"claimName": "Bad Claim"}}])
    lenient = lenient.replace('"name": "lenient"}', '"name": "lenient", "annotations": {"Example.com/Key": "x"}}')
    # Fields whose feature gates are off in v1.32 are dropped (a procMount becomes Default), and
    # quantities are rounded up to milli precision.
    gated = vpod("gated", [vc(resizePolicy=[{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                              securityContext={"procMount": "Bogus"},
                              resources={"claims": [{"name": "c"}], "requests": {"cpu": "0.0001"}})],
                 hostUsers=False, resources={"limits": {"cpu": "1"}}, resourceClaims=[{"name": "c", "resourceClaimName": "x"}],
                 securityContext={"supplementalGroupsPolicy": "Strict", "seLinuxChangePolicy": "Recursive"},
                 volumes=[{"name": "img", "image": {"reference": "busybox"}},
                          {"name": "pj", "projected": {"sources": [{"clusterTrustBundle": {"name": "x", "path": "p"}}]}}])
    # Quantities are stored as Go prints them.
    canon = vpod("canon", [vc(resources={"limits": {"cpu": "0.5", "memory": "1.5Gi", "ephemeral-storage": "1e3", "example.com/x": "2000m"},
                                         "requests": {"cpu": "250m", "memory": "1000Mi", "ephemeral-storage": "1000"}})],
                 volumes=[{"name": "a", "emptyDir": {"sizeLimit": "1.5Gi"}}])
    # matchLabelKeys and mismatchLabelKeys of pod (anti-)affinity are merged into the selector.
    labelkeys = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "labelkeysok", "labels": {"app": "x", "tier": "t"}},
                            "spec": {"containers": [vc()], "affinity": {"podAntiAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [
                                    {"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b"}},
                                     "matchLabelKeys": ["app", "missing"], "mismatchLabelKeys": ["tier"]}]}}}})
    # Files of configMap, secret, downward API and projected volumes that overlap: warnings.
    overlap = vpod("overlap", volumes=[
        {"name": "cm", "configMap": {"name": "c", "items": [{"key": "a", "path": "x"}, {"key": "b", "path": "x/y/"}, {"key": "c", "path": "x"}]}},
        {"name": "sec", "secret": {"secretName": "s", "items": [{"key": "a", "path": "p"}, {"key": "b", "path": "p"}]}},
        {"name": "pj", "projected": {"sources": [
            {"configMap": {"name": "c", "items": [{"key": "a", "path": "t"}]}},
            {"serviceAccountToken": {"path": "t/token"}}, {"configMap": {"name": "d"}},
            {"downwardAPI": {"items": [{"path": "t/x", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}}],
        serviceAccountName="default")
    return ([(dry, b) for b in bad] + [(show, good), (show, gated), (show, canon), (show, labelkeys), (dry, overlap), (dry, lenient), (dry, deploy), (dry, job), (dry, tplhost),
            (show, vpod("hostnetok", [vc(ports=[{"containerPort": 80}])], hostNetwork=True)),
            # Mutating admission runs before validation: a LimitRange's default limit below the
            # request is refused by validation; an unknown priority class by Priority before it.
            (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
                                                "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}})),
            (dry, vpod("overdefault", [vc(resources={"requests": {"cpu": "1"}})])),
            (dry, vpod("unknownclass", [vc(name="Bad_Name")], priorityClassName="nope")),
            # ValidatePodUpdate: what an update of a pod may change.
            (["create", "-f", "-"], vpod("upd", [vc(env=[{"name": "A", "value": "1"}], resources={"limits": {"cpu": "0.5"}})],
                                         activeDeadlineSeconds=100, tolerations=[{"key": "a", "operator": "Exists"}])),
        ] + [(["patch", "pod", "upd", "--type=" + kind, "-p", body], None) for kind, body in [
            ("json", '[{"op":"replace","path":"/spec/containers/0/env/0/value","value":"2"}]'),
            ("json", '[{"op":"replace","path":"/spec/activeDeadlineSeconds","value":200}]'),
            ("json", '[{"op":"remove","path":"/spec/activeDeadlineSeconds"}]'),
            ("json", '[{"op":"replace","path":"/spec/containers/0/image","value":""}]'),
            ("json", '[{"op":"replace","path":"/spec/tolerations/0/key","value":"b"}]'),
            ("json", '[{"op":"add","path":"/spec/containers/-","value":{"name":"x","image":"busybox"}}]'),
            ("json", '[{"op":"add","path":"/spec/schedulingGates","value":[{"name":"g"}]}]'),
            ("merge", '{"spec":{"activeDeadlineSeconds":50,"containers":[{"name":"main","image":"busybox:1.36"}],'
                      '"tolerations":[{"key":"a","operator":"Exists"},{"key":"c","operator":"Exists"}]}}'),
            ("strategic", '{"spec":{"activeDeadlineSeconds":50,"containers":[{"name":"main","image":"busybox:1.36"}]}}'),
            ("json", '[{"op":"add","path":"/spec/tolerations/-","value":{"key":"c","operator":"Exists"}}]'),
        ]] + [
            (["replace", "-f", "-"], vpod("upd", [vc(image="busybox:1.36", env=[{"name": "A", "value": "1"}],
                                                     resources={"limits": {"cpu": "500m"}})],
                                          activeDeadlineSeconds=50, tolerations=[{"key": "a", "operator": "Exists"},
                                                                                 {"key": "c", "operator": "Exists"}])),
            (["get", "pod", "upd", "-o", "jsonpath={.spec.containers[0].image} {.spec.activeDeadlineSeconds} {.spec.tolerations[*].key}"], None)])


def valleft_steps():
    """Rules of issue #20 the embedded server once skipped: Node podCIDRs (ValidateNode and
    ValidateNodeUpdate), LimitRange cross-field rules (their values printed as Go's
    resource.Quantity), PodDisruptionBudget bounds, and the inner rules of every volume source."""
    dry = ["create", "--dry-run=server", "-f", "-"]
    spec = ["create", "--dry-run=server", "-o", "jsonpath={.spec}", "-f", "-"]

    def nd(name, **spec_fields):
        return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec_fields})

    steps = [(dry, nd("valleft-bad", podCIDR="10.0.0.0/33", podCIDRs=["10.0.0.0/33", "10.1.0.0/24", "fd00::/64"])),
             (dry, nd("valleft-bad", podCIDR="10.0.0.0/24", podCIDRs=["10.0.0.0/24", "10.1.0.0/24"])),
             (dry, nd("valleft-bad", podCIDRs=["x", "10.0.0.0/24", "x"])),
             (dry, nd("valleft-bad", podCIDRs=["10.0.0.0/24", "fd00::/64", "10.2.0.0/24"])),
             (dry, nd("valleft-bad", podCIDRs=[""])),
             (dry, nd("valleft-bad", podCIDRs=["fd00::/64", "fd00::/64"])),
             (dry, nd("valleft-bad", podCIDRs=["10.0.0.0/024", "::ffff:10.0.0.0/120"])),
             (spec, nd("valleft-ok", podCIDR="10.0.0.0/24")),
             (spec, nd("valleft-ok", podCIDR="10.0.0.0/24", podCIDRs=["10.1.0.0/24", "fd00::/64"])),
             (spec, nd("valleft-ok", podCIDRs=["fd00::/0000064", "010.2.0.0/24"])),
             (dry, nd("valleft-bad", podCIDRs=["10.0.0.0/+24"])),
             (dry, nd("valleft-bad", taints=[{"key": "bad key!", "value": "bad value!", "effect": ""}, {"key": "a", "effect": "Bogus"},
                                             {"key": "a", "effect": "Bogus"}, {"key": "", "effect": "NoSchedule"}])),
             (dry, json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "valleft-bad", "annotations": {
                 "scheduler.alpha.kubernetes.io/taints": '[{"Key":"bad key!","effect":"NoSchedule"},{"key":"bad key!","EFFECT":"NoSchedule"}]'}}})),
             (dry, json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "valleft-bad", "annotations": {
                 "scheduler.alpha.kubernetes.io/taints": '{"key":"a"}'}}})),
             (dry, json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "valleft-bad", "annotations": {
                 "scheduler.alpha.kubernetes.io/taints": '[{"value":1}]'}}})),
             (dry, json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "valleft-bad"},
                               "status": {"capacity": {"cpu": "-1"}, "allocatable": {"pods": "1.5"}}})),
             (spec, nd("valleft-ok", configSource={"configMap": {"name": "a"}}, unschedulable=True)),
             (["create", "-o", "jsonpath={.spec}", "-f", "-"], nd("valleft-n1", podCIDR="10.0.0.0/24", providerID="p1", externalID="e1")),
             (["patch", "node", "valleft-n1", "--type=merge", "-p", '{"spec":{"podCIDR":"10.9.0.0/24"}}'], None),
             (["patch", "node", "valleft-n1", "--type=merge", "-p", '{"spec":{"podCIDRs":["10.0.0.0/24","fd00::/64"]}}'], None),
             (["patch", "node", "valleft-n1", "--type=merge", "-p", '{"spec":{"providerID":"p2","externalID":"e2"}}'], None),
             (["patch", "node", "valleft-n1", "--type=merge", "-p", '{"spec":{"unschedulable":true}}'], None),
             (["patch", "node", "valleft-n1", "--subresource=status", "--type=merge", "-p",
               '{"status":{"addresses":[{"type":"InternalIP","address":"1.2.3.4"},{"type":"Hostname","address":"h"},'
               '{"type":"InternalIP","address":"1.2.3.4"}]}}'], None),
             (["patch", "node", "valleft-n1", "--subresource=status", "--type=merge", "-p",
               '{"status":{"capacity":{"cpu":"-1","memory":"1Gi"},"allocatable":{"example.com/x":"0.5"}}}'], None),
             (["delete", "node", "valleft-n1"], None)]

    def lr(*items):
        return json.dumps({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"}, "spec": {"limits": list(items)}})
    for items in [
        [{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}],
        [{"type": "Container", "min": {"memory": "2Gi"}, "max": {"memory": "1.5Gi"}}],
        [{"type": "Container", "min": {"cpu": "500m"}, "max": {"cpu": "1"}, "default": {"cpu": "2"}, "defaultRequest": {"cpu": "100m"}}],
        [{"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "2"}}],
        [{"type": "Container", "max": {"memory": "1Gi"}, "defaultRequest": {"memory": "1.5Gi"}}],
        [{"type": "Container", "maxLimitRequestRatio": {"cpu": "0.5"}}],
        [{"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}}],
        [{"type": "Container", "min": {"cpu": "0"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}}],
        [{"type": "Container", "min": {"memory": "100Mi"}, "max": {"memory": "1Gi"}, "maxLimitRequestRatio": {"memory": "12.5"}}],
        [{"type": "Container", "default": {"nvidia.com/gpu": "2"}, "defaultRequest": {"nvidia.com/gpu": "1"}}],
        [{"type": "Container", "max": {"hugepages-2Mi": "4Mi"}, "defaultRequest": {"hugepages-2Mi": "2Mi"}}],
        [{"type": "Pod", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "1"}, "min": {"cpu": "2"}, "max": {"cpu": "1"}}],
        [{"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}],
        [{"type": "PersistentVolumeClaim", "min": {"storage": "2Gi"}, "max": {"storage": "1Gi"}}],
        [{"type": "Container"}, {"type": "Container"}],
        [{"type": "Container", "max": {"foo": "1"}}],
        [{"type": "Container", "min": {"example.com/a b": "1"}}],
        [{"type": "example.com/custom", "max": {"foo": "1"}}],
        [{"type": "Container", "min": {"cpu": "1.5"}, "max": {"cpu": "1"}}],
        [{"type": "Container", "min": {"cpu": "0.0000000001"}, "max": {"cpu": "10n"}, "default": {"cpu": "1e-10"}}],
    ]:
        steps.append((dry, lr(*items)))
    steps.append((["create", "-o", "jsonpath={.spec}", "-f", "-"],
                  lr({"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "4"}})))
    steps.append((["delete", "limitrange", "lr"], None))

    def pdb(**spec_fields):
        return json.dumps({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"}, "spec": spec_fields})
    for fields in [dict(minAvailable=1, maxUnavailable=1), dict(minAvailable="50%", maxUnavailable="10%", selector={"matchLabels": {"a": "b"}}),
                   dict(minAvailable="150%"), dict(maxUnavailable="101%"), dict(minAvailable="000100%"), dict(minAvailable="99999999999999999999%"),
                   dict(minAvailable=1, maxUnavailable="x", unhealthyPodEvictionPolicy="AlwaysAllow"),
                   dict(unhealthyPodEvictionPolicy="Bogus"), dict(selector={"matchLabels": {"bad key!": "x"},
                                                                           "matchExpressions": [{"key": "a", "operator": "In"}]})]:
        steps.append((dry, pdb(**fields)))

    volumes = [
        {"name": "git", "gitRepo": {"repository": "", "directory": "../x"}},
        {"name": "gce", "gcePersistentDisk": {"pdName": "", "partition": 256}},
        {"name": "aws", "awsElasticBlockStore": {"volumeID": "", "partition": -1}},
        {"name": "iscsi", "iscsi": {"targetPortal": "", "iqn": "bogus", "lun": 256, "chapAuthSession": True, "initiatorName": "iqn.bad"}},
        {"name": "iscsi2", "iscsi": {"targetPortal": "t", "iqn": "eui.123", "initiatorName": "naa.1"}},
        {"name": "iscsi3", "iscsi": {"targetPortal": "x" * 60, "iqn": "iqn.2001-04.com.example:storage", "initiatorName": "x"}},
        {"name": "gluster", "glusterfs": {"endpoints": "", "path": ""}},
        {"name": "flocker", "flocker": {}},
        {"name": "flocker2", "flocker": {"datasetName": "a/b", "datasetUUID": "u"}},
        {"name": "rbd", "rbd": {"monitors": [], "image": ""}},
        {"name": "cinder", "cinder": {"volumeID": "", "secretRef": {}}},
        {"name": "ceph", "cephfs": {"monitors": []}},
        {"name": "quobyte", "quobyte": {"registry": "host,[::1]:80,h:1:2", "volume": ""}},
        {"name": "quobyte2", "quobyte": {"registry": "", "volume": "v"}},
        {"name": "quobyte3", "quobyte": {"registry": "h:1", "tenant": "t" * 65, "volume": "v"}},
        {"name": "fc", "fc": {}},
        {"name": "fc2", "fc": {"targetWWNs": ["a", "b"], "wwids": ["c"]}},
        {"name": "fc3", "fc": {"targetWWNs": ["a"], "lun": 300}},
        {"name": "flex", "flexVolume": {"driver": "", "options": {"Kubernetes.IO/x": "1", "ok": "3"}}},
        {"name": "azf", "azureFile": {"secretName": "", "shareName": ""}},
        {"name": "vs", "vsphereVolume": {"volumePath": ""}},
        {"name": "photon", "photonPersistentDisk": {"pdID": ""}},
        {"name": "pwx", "portworxVolume": {"volumeID": ""}},
        {"name": "azd", "azureDisk": {"diskName": "", "diskURI": "", "cachingMode": "Bogus", "kind": "Bogus"}},
        {"name": "azd2", "azureDisk": {"diskName": "d", "diskURI": "https://x", "kind": "Managed"}},
        {"name": "sos", "storageos": {"volumeName": "Bad_Name", "volumeNamespace": "Bad_NS", "secretRef": {}}},
        {"name": "sio", "scaleIO": {"gateway": "", "system": "", "volumeName": "", "secretRef": {"name": "s"}}},
        {"name": "csi", "csi": {"driver": "d.example.com", "nodePublishSecretRef": {"name": "Bad_Secret"}}},
        {"name": "csi2", "csi": {"driver": "d.example.com", "nodePublishSecretRef": {}}},
        {"name": "eph", "ephemeral": {}},
        {"name": "eph2", "ephemeral": {"volumeClaimTemplate": {"metadata": {
            "name": "x", "namespace": "y", "labels": {"bad key!": "v"}, "annotations": {"Bad Key": "x"}, "generateName": "g",
            "finalizers": [], "creationTimestamp": None, "generation": 0}, "spec": {"accessModes": ["Bogus"], "storageClassName": "Bad_Class",
                                                                         "resources": {"requests": {"storage": "0"}}}}}},
    ]
    steps.append((dry, vpod("volsources", volumes=volumes)))
    steps.append((dry, vpod("p" * 190, volumes=[{"name": "v" * 63, "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}])))

    # windowsOptions (validateWindowsSecurityContextOptions) and hostProcess consistency.
    def wo(**o):
        return {"windowsOptions": o}
    steps += [
        (dry, vpod("win", [vc(securityContext=wo(gmsaCredentialSpecName="Bad_Name", gmsaCredentialSpec="", runAsUserName="")),
                           vc(name="b", securityContext=wo(runAsUserName="a\\b\\c")),
                           vc(name="c", securityContext=wo(runAsUserName="bad domain!\\" + "u" * 105)),
                           vc(name="d", securityContext=wo(runAsUserName="dom\\..")),
                           vc(name="e", securityContext=wo(runAsUserName="x\u0007y")),
                           vc(name="f", securityContext=wo(runAsUserName="d\\u@v")),
                           vc(name="g", securityContext=wo(runAsUserName="ok.example.com\\user"))],
                   securityContext=wo(runAsUserName="\\"))),
        (dry, vpod("hostprocess", [vc(securityContext=wo(hostProcess=False)), vc(name="b")],
                   initContainers=[vc(name="i", securityContext=wo(hostProcess=True))], securityContext=wo(hostProcess=True))),
        (dry, vpod("hostprocess2", [vc(securityContext=wo(hostProcess=True)), vc(name="b")])),
        (dry, vpod("hostprocess3", [vc(securityContext=wo(hostProcess=True))], hostNetwork=True)),
    ]

    # seccomp and AppArmor annotations against the fields (ValidatePodCreate), the AppArmor
    # annotations copied into the fields and back (applyAppArmorVersionSkew), their warnings.
    def apod(name, annotations, containers, **spec_fields):
        body = json.loads(vpod(name, containers, **spec_fields))
        body["metadata"]["annotations"] = annotations
        return json.dumps(body)
    sc_ann = "container.seccomp.security.alpha.kubernetes.io/"
    aa_ann = "container.apparmor.security.beta.kubernetes.io/"
    steps += [
        (dry, apod("mismatch", {"seccomp.security.alpha.kubernetes.io/pod": "runtime/default", sc_ann + "main": "localhost/a",
                                sc_ann + "b": "unconfined", aa_ann + "main": "localhost/x", aa_ann + "b": "unconfined",
                                aa_ann + "c": "runtime/default"},
                   [vc(securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "b"},
                                        "appArmorProfile": {"type": "Localhost", "localhostProfile": "y"}}),
                    vc(name="b", securityContext={"seccompProfile": {"type": "RuntimeDefault"}}),
                    vc(name="c", securityContext={"seccompProfile": {"type": "Unconfined"}})],
                   securityContext={"seccompProfile": {"type": "Unconfined"}, "appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}})),
        (["create", "--dry-run=server", "-o", "json", "-f", "-"],
         apod("skew", {aa_ann + "main": "localhost/x", aa_ann + "b": "runtime/default", aa_ann + "c": "bogus", aa_ann + "i": "unconfined",
                       "seccomp.security.alpha.kubernetes.io/pod": "runtime/default", sc_ann + "main": "unconfined"},
              [vc(), vc(name="b"), vc(name="c"), vc(name="d", securityContext={"appArmorProfile": {"type": "Localhost", "localhostProfile": "q"}}),
               vc(name="e")],
              initContainers=[vc(name="i")], securityContext={"appArmorProfile": {"type": "RuntimeDefault"}})),
        (["create", "--dry-run=server", "-o", "json", "-f", "-"],
         apod("skewok", {aa_ann + "main": "localhost/x", aa_ann + "b": "runtime/default", aa_ann + "i": "unconfined",
                         "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
                         sc_ann + "main": "unconfined"},
              [vc(), vc(name="b"), vc(name="c", securityContext={"runAsUser": 1}),
               vc(name="d", securityContext={"appArmorProfile": {"type": "Localhost", "localhostProfile": "q"}}), vc(name="e")],
              initContainers=[vc(name="i")], securityContext={"appArmorProfile": {"type": "RuntimeDefault"}})),
        (["create", "--dry-run=server", "-o", "jsonpath={.metadata.annotations}", "-f", "-"],
         apod("skewwin", {aa_ann + "main": "localhost/x"}, [vc()], os={"name": "windows"})),
        (dry, json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "tplann"},
                          "spec": {"selector": {"matchLabels": {"app": "t"}},
                                   "template": {"metadata": {"labels": {"app": "t"}, "annotations": {
                                       aa_ann + "main": "runtime/default", aa_ann + "b": "unconfined",
                                       sc_ann + "main": "unconfined", "seccomp.security.alpha.kubernetes.io/pod": "unconfined"}},
                                                "spec": {"containers": [vc(), vc(name="b", securityContext={"appArmorProfile": {"type": "Unconfined"}})]}}}})),
    ]

    # Quantities beyond gpupool's 128-bit range, stored in Go's canonical form (or as written
    # when ParseQuantity keeps the text).
    for q in ["1e400", "123e400", "1000e400", "1e399", "1.5e400", "-2e31", "100000000000000000000000000000000",
              "1234567890123456789012345678901234.5", "200000000000000000000000000000000000000E",
              "100000000000000000000000000000000.0000000001", "99999999999999999999999999999999999Ei", "1e30k"]:
        steps.append((["create", "--raw", "/api/v1/namespaces/NS/limitranges?dryRun=All", "-f", "-"],
                      json.dumps({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "q"},
                                  "spec": {"limits": [{"type": "Container", "max": {"cpu": q}}]}})))

    # A fractional extended resource shows the resource.Quantity ParseQuantity made: an inf.Dec for
    # a binary suffix with a fraction, an int64Amount for a short decimal.
    for q in ["0.0005Ki", "1.5e-1"]:
        steps.append((dry, vpod("frac", [vc(resources={"limits": {"example.com/x": q}})])))

    # A gated pod's node selector and required node affinity: only additions (ValidatePodUpdate).
    req = {"key": "zone", "operator": "In", "values": ["a"]}
    steps.append((["create", "-f", "-"], vpod("gated", [vc()], schedulingGates=[{"name": "g"}], nodeSelector={"a": "1"},
                                            affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                                                "nodeSelectorTerms": [{"matchExpressions": [req]}, {"matchFields": [
                                                    {"key": "metadata.name", "operator": "In", "values": ["n"]}]}]}}})))
    for patch in ['{"spec":{"nodeSelector":{"a":"1","b":"2"}}}', '{"spec":{"nodeSelector":{"a":"2","b":"2"}}}',
                  '{"spec":{"nodeSelector":null}}',
                  '{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":['
                  '{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]},{"key":"x","operator":"Exists"}]},'
                  '{"matchFields":[{"key":"metadata.name","operator":"In","values":["n"]}]}]}}}}}',
                  '{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":['
                  '{"matchExpressions":[{"key":"zone","operator":"In","values":["b"]}]},{"matchFields":[]}]}}}}}',
                  '{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":['
                  '{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}}}}',
                  '{"spec":{"affinity":null}}']:
        steps.append((["patch", "pod", "gated", "--type=merge", "-p", patch], None))
    steps.append((["get", "pod", "gated", "-o", "jsonpath={.spec.nodeSelector} {.spec.affinity}"], None))

    # ValidatePodSpecificAnnotationUpdates: AppArmor and mirror annotations stay as they are.
    steps.append((["create", "-f", "-"], apod("annupd", {aa_ann + "main": "runtime/default"}, [vc()])))
    for patch in ['{"metadata":{"annotations":{"' + aa_ann + 'main":"unconfined"}}}',
                  '{"metadata":{"annotations":{"' + aa_ann + 'main":null}}}',
                  '{"metadata":{"annotations":{"kubernetes.io/config.mirror":"x"}}}',
                  '{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"x"}}}',
                  '{"metadata":{"annotations":{"ok":"1"}}}']:
        steps.append((["patch", "pod", "annupd", "--type=merge", "-p", patch], None))

    # The tolerations annotation (ValidateTolerationsInPodAnnotations).
    for value in ['[{"key":"a","operator":"Bogus"},{"Key":"b","Operator":"Exists","Value":"v"},{"key":"c","effect":"NoSchedule","tolerationSeconds":5}]',
                  'x', '{"key":"a"}', '[1]', '[{"key":1}]', '[{"tolerationSeconds":"5"}]', '', '[{"key":"ok","operator":"Exists"}]', '  ']:
        steps.append((dry, apod("tolann", {"scheduler.alpha.kubernetes.io/tolerations": value}, [vc()])))
    return steps


# Each scenario: a list of steps; a step is (kubectl args, stdin or None). NS is the scenario's namespace.
def workload_json(kind, selector, restart=None):
    """A Deployment whose template is labelled app=w, with `selector` (None: no selector field)."""
    spec = {"template": {"metadata": {"labels": {"app": "w"}},
                         "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    if selector is not None:
        spec["selector"] = selector
    if restart:
        spec["template"]["spec"]["restartPolicy"] = restart
    return json.dumps({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"}, "spec": spec})


def _spec_patch(text, template_ads=None, template_owner=None, template_affinity=None, **spec):
    """workload_json's object with more spec fields, and template changes."""
    o = json.loads(text)
    o["spec"].update(spec)
    tpl = o["spec"]["template"]
    if template_ads is not None:
        tpl["spec"]["activeDeadlineSeconds"] = template_ads
    if template_owner is not None:
        tpl["metadata"]["ownerReferences"] = [template_owner]
    if template_affinity is not None:
        tpl["spec"]["affinity"] = template_affinity
    return json.dumps(o)


UNKNOWN_DEPLOYMENT = json.dumps({
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "unk", "labels": {"a": "b"}, "bogus": 1},
    "spec": {"replica": 2, "replicas": 0, "selector": {"matchLabels": {"app": "unk"}},
             "template": {"metadata": {"labels": {"app": "unk"}},
                          "spec": {"containers": [{"name": "c", "image": "busybox", "imagee": "x",
                                                   "ports": [{"containerPort": 80, "hostport": 1}]}]}}}})

# Custom resources (issue #20): a CRD's structural schema prunes, defaults and validates as
# apiextensions-apiserver does; printer columns, the status and scale subresources, the CEL
# transition rule `self == oldSelf`. Widget (tests/fidelity/data/widget-crd.json) exercises every
# schema keyword; PyTorchJob is training-operator v1.9.0's own CRD, which the embedded server ships.
# (Cases with errors under two properties are left out: kube-openapi visits properties in Go map
# order, so the real server's order of those errors varies from run to run.)
def widget(name, spec):
    return json.dumps({"apiVersion": "fid.example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})


def pytorchjob(spec, metadata=None):
    return json.dumps({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                       "metadata": metadata or {"name": "p"}, "spec": spec})


PT_POD = {"containers": [{"name": "pytorch", "image": "busybox"}]}
CRD_DRY = ["create", "--dry-run=server", "-f", "-", "-o", "json"]
CRD_CASES = [
    {}, {"size": "medium"}, {"size": "small", "replicas": 11}, {"size": "small", "replicas": -1},
    {"size": "small", "name": "toolong"}, {"size": "small", "name": "AB"}, {"size": "small", "short": "a"},
    {"size": "small", "tags": ["a", "b", "a"]}, {"size": "small", "tags": ["a", "b", "c", "d"]},
    {"size": "small", "ports": [{"name": "a"}, {"name": "a", "port": 1}]}, {"size": "small", "ports": [{"port": 1}]},
    {"size": "small", "port": True}, {"size": "small", "ratio": 1.5},
    {"size": "small", "labels": {"a": "1", "b": "2", "c": "3"}}, {"size": "small", "labels": {"a": 1}},
    {"size": "small", "since": "yesterday"}, {"size": "small", "since": "2024-01-02T03:04:05Z"},
    {"size": "small", "note": None, "mode": None, "owner": None, "extra": {"known": "x", "free": {"a": 1}},
     "ports": [{"name": "p"}], "port": "http"},
    {"size": "small", "replicas": 2.0},
]
CRD_STEPS = [(CRD_DRY, widget("x", c)) for c in CRD_CASES] + [
    (["create", "--dry-run=server", "-f", "-"], widget("x", {"size": "small", "bogus": 1})),
    (["create", "--validate=warn", "--dry-run=server", "-f", "-", "-o", "json"],
     widget("x", {"size": "small", "bogus": 1, "note": None, "extra": {"known": 1, "free": 2}})),
    (["create", "-f", "-"], widget("big", {"size": "large", "replicas": 3, "tags": ["t1", "t2"],
                                           "ports": [{"name": "a"}, {"name": "b"}], "owner": "me"})),
    (["create", "-f", "-"], widget("small", {"size": "small"})),
    (["get", "widgets"], None),
    (["get", "wg", "-o", "wide"], None),
    (["patch", "widget", "big", "--type=merge", "-p", '{"spec":{"owner":"you"}}'], None),
    (["patch", "widget", "big", "--type=merge", "-p", '{"spec":{"owner":"me","size":"small"}}'], None),
    (["patch", "widget", "big", "--type=merge", "-p", '{"spec":{"replicas":"x"}}'], None),
    (["patch", "widget", "big", "--type=json", "-p", '[{"op":"add","path":"/spec/zzz","value":1}]'], None),
    (["patch", "widget", "big", "--type=strategic", "-p", '{"spec":{}}'], None),
    (["patch", "widget", "big", "--type=merge", "-p", '{"status":{"ready":true}}'], None),
    (["patch", "widget", "big", "--subresource=status", "--type=merge", "-p", '{"status":{"ready":true,"replicas":"x"}}'], None),
    (["patch", "widget", "big", "--subresource=status", "--type=merge", "-p", '{"status":{"ready":true,"replicas":3}}'], None),
    (["get", "widget", "big", "-o", 'jsonpath={.metadata.generation} {.status} {.spec.size}{"\\n"}'], None),
    (["scale", "widget", "big", "--replicas=4"], None),
    (["get", "widget", "big", "-o", "json"], None),
    (["get", "crd", "widgets.fid.example.com", "-o",
      'jsonpath={.status.conditions[*].type} {.status.acceptedNames.kind} {.status.storedVersions}{"\\n"}'], None),
    (["explain", "widget.spec.ports"], None),
    (["delete", "widget", "big", "small"], None),
    # training-operator v1.9.0's PyTorchJob: its schema as shipped.
    (["create", "--dry-run=server", "-f", "-"], pytorchjob(
        {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"metadata": {"labels": {"a": "b"}, "bogus": 1},
                                                                        "spec": {"containers": [{"name": "pytorch", "image": "busybox", "imagee": "x"}]}}}},
         "foo": None}, {"name": "p", "bogus": 1})),
    (CRD_DRY, pytorchjob({"runPolicy": {"backoffLimit": "x"}})),
    (CRD_DRY, pytorchjob({"pytorchReplicaSpecs": {"Master": {"template": {"spec": {"containers": [{"image": "b"}]}}}}})),
    (CRD_DRY, pytorchjob({"pytorchReplicaSpecs": {"Master": {"template": {"spec": {"containers": [
        {"name": "a", "image": "b", "resources": {"limits": {"cpu": "lots"}}}]}}}}})),
    (CRD_DRY, pytorchjob(5)),
    (CRD_DRY, pytorchjob({"pytorchReplicaSpecs": {"Worker": {"replicas": 1.5}}})),
    (CRD_DRY, pytorchjob({"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "a", "image": "b"}, {"name": "a", "image": "c"}]}}}}})),
    (CRD_DRY, pytorchjob({"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "pytorch", "image": "busybox", "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"key": "k"}}}],
         "ports": [{"containerPort": 80}]}]}}}}, "runPolicy": {"suspend": None, "cleanPodPolicy": None}})),
    (["get", "crd", "pytorchjobs.kubeflow.org", "-o",
      'jsonpath={.spec.versions[0].additionalPrinterColumns[*].name} {.status.acceptedNames.kind}{"\\n"}'], None),
    (["explain", "pytorchjob.spec.runPolicy.schedulingPolicy.queue"], None),
]

# CEL rules (x-kubernetes-validations) and validation ratcheting (issue #20): Gadget
# (tests/fidelity/data/cel-crd.json, made by gen_cel_crd.py) carries a table of rules that must all
# hold (`checks`), rules that fail at run time (`errs`), and the rule kinds CRD authors write on
# `spec`: message, messageExpression, reason, fieldPath, transition rules, optionalOldSelf. The
# cel-old objects were stored under the same CRD without rules (SETUP), so updates of them are
# ratcheted. A CRD whose rules do not compile is refused (cel-crd-bad.json). Each failing request
# fails at one schema node: Go visits properties in map order, so errors of two nodes come in an
# order that varies from run to run.
def gadget(name, spec=None, **top):
    body = {"apiVersion": "fid.example.com/v1", "kind": "Gadget", "metadata": {"name": name}}
    if spec is not None:
        body["spec"] = spec
    body.update(top)
    return json.dumps(body)


CEL_VALUES = {"n": 3, "d": 1.5, "s": "Hello, World", "b": True, "l": [3, 1, 2], "ls": ["a", "b"], "m": {"k": "v"},
              "o": {}, "ios": "50%", "t": "2024-01-02T03:04:05Z", "du": "1h30m"}
CEL_DRY = ["create", "--dry-run=server", "-f", "-"]


def cel_bad_crd(rules, items_of=None):
    """A CRD whose spec.x (a string list, or with `items_of` its items) carries `rules`."""
    x = {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 5}}
    if items_of:
        x["items"]["x-kubernetes-validations"] = rules
    else:
        x["x-kubernetes-validations"] = rules
    return json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                       "metadata": {"name": "gadgetbads.fid.example.com"},
                       "spec": {"group": "fid.example.com", "scope": "Cluster", "names": {"kind": "GadgetBad", "plural": "gadgetbads"},
                                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                                    "type": "object", "properties": {"spec": {"type": "object", "properties": {"x": x}}}}}}]}})

CEL_STEPS = [
    (["get", "crd", "gadgets.fid.example.com", "-o",
      'jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.x-kubernetes-validations[*].rule}{"\\n"}'], None),
    (["create", "--dry-run=server", "-f", "-"], open(os.path.join(HERE, "data", "cel-crd-bad.json")).read()),
    # versions with different schemas: each version's rules, at spec.versions[i]
    (["create", "--dry-run=server", "-f", "-"], json.dumps(dict(json.loads(cel_bad_crd([])), spec=dict(
        json.loads(cel_bad_crd([]))["spec"], versions=[
            {"name": v, "served": True, "storage": v == "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-validations": [{"rule": r}], "properties": {"n": {"type": "integer"}}}}}}}
            for v, r in (("v1", "self.n > 0"), ("v2", "self.m > 0"))])))),
    # a rule's own fields are checked first; with errors there, no rule of the node is compiled
    (["create", "--dry-run=server", "-f", "-"], cel_bad_crd([
        {"rule": ""}, {"rule": "true", "message": "   "}, {"rule": "true", "message": "a\nb"}, {"rule": "true ||\nfalse"},
        {"rule": "true", "messageExpression": "  "}, {"rule": "true", "reason": "Bogus"}, {"rule": "true", "fieldPath": ".nosuch"},
        {"rule": "true", "fieldPath": " "}, {"rule": "self.nosuch"}])),
    # syntax errors as cel-go's ANTLR parser words them
    (["create", "--dry-run=server", "-f", "-"], cel_bad_crd([{"rule": r} for r in [
        "self.n > > 1", "(self.n > 1", "self.n > 1)", "self.", "1 +* 2 == 3", "self.n self.n", "self.n == 1 ? true", "'abc",
        "self.n # 1", "[1, 2", "{'a': 1", "self.l.all(1, true)", "has(self)", "self.n.foo(", "1.5u == 1u",
        "99999999999999999999 > 1", "-9223372036854775809 < 0", "r'\\d' == b\"x\"", "'\\q' == ''",
        # cel-go's limits: rules nested 250 deep, a visit 250 deep; runs of ! and - are flat
        "(" * 260 + "true" + ")" * 260, "1" + " + 1" * 260 + " > 0", "!" * 301 + "true", "-" * 300 + "1 < 0", "!-1"]])),
    (["create", "--dry-run=server", "-f", "-"], cel_bad_crd([
        {"rule": "self == oldSelf"}, {"rule": "self.size() > 0", "optionalOldSelf": False}, {"rule": "self.size() > 0"}], items_of=True)),
    (CEL_DRY, gadget("cel-checks", checks=CEL_VALUES)),
    (CEL_DRY, gadget("cel-errs", errs=CEL_VALUES)),
    (CEL_DRY, gadget("cel-x", {"minReplicas": 5, "maxReplicas": 2})),
    (CEL_DRY, gadget("cel-x", {"banned": "x"})),
    (CEL_DRY, gadget("cel-x", {"name": "averylongname"})),
    (CEL_DRY, gadget("cel-x", {"team": "t"})),
    (CEL_DRY, gadget("cel-x", {"tags": ["a", "a"]})),
    (CEL_DRY, gadget("cel-x", {"mode": "turbo"})),
    (CEL_DRY, gadget("cel-x", {"mode": "broken"})),
    (CEL_DRY, gadget("cel-x", {"ports": [{"name": "a", "port": 3}]})),
    (CEL_DRY, gadget("cel-x", {"count": 101})),
    (CEL_DRY, gadget("x-bad", {})),
    (CEL_DRY, gadget("cel-x", {"minReplicas": "x"})),
    (CEL_DRY + ["-o", "jsonpath={.spec}"], gadget("cel-x", {"size": 5, "tags": ["a", "b"], "mode": "slow"})),
    # property names CEL cannot spell (x-y, namespace), int-or-string
    (CEL_DRY, gadget("cel-x", misc={"x-y": "a", "namespace": "a"})),
    (CEL_DRY, gadget("cel-x", misc={"x-y": "a", "namespace": "b", "ios": 5, "free": {"a": 2}})),
    (CEL_DRY, gadget("cel-x", misc={"ios": "6%"})),
    (CEL_DRY, gadget("cel-x", misc={"ios": "5%"})),
    # the status subresource runs the rules too
    (["create", "-f", "-"], gadget("cel-st", {})),
    (["patch", "gadget", "cel-st", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Weird"}}'], None),
    (["patch", "gadget", "cel-st", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Ok"}}'], None),
    (["patch", "gadget", "cel-st", "--type=merge", "-p", '{"status":{"phase":"Weird"},"extra":"e"}'], None),
    (["delete", "gadget", "cel-st"], None),
    # transition rules run on update only
    (["create", "-f", "-"], gadget("cel-one", {"minReplicas": 2, "maxReplicas": 5, "size": 3})),
    (["patch", "gadget", "cel-one", "--type=merge", "-p", '{"spec":{"minReplicas":1}}'], None),
    (["patch", "gadget", "cel-one", "--type=merge", "-p", '{"spec":{"size":2}}'], None),
    (["patch", "gadget", "cel-one", "--type=merge", "-p", '{"spec":{"minReplicas":3,"size":4}}'], None),
    # ratcheting: values stored before the rules came are let be while unchanged
    (["get", "gadget", "cel-old", "cel-old2", "-o", 'jsonpath={range .items[*]}{.spec}{"\\n"}{end}'], None),
    (["patch", "gadget", "cel-old", "--type=merge", "-p", '{"extra":"x"}'], None),
    (["patch", "gadget", "cel-old", "--type=merge", "-p", '{"spec":{"note":"n"}}'], None),
    (["patch", "gadget", "cel-old", "--type=merge", "-p", '{"spec":{"count":150}}'], None),
    (["patch", "gadget", "cel-old2", "--type=json", "-p", '[{"op":"add","path":"/spec/ports/-","value":{"name":"c","port":6}}]'], None),
    (["patch", "gadget", "cel-old2", "--type=json", "-p", '[{"op":"replace","path":"/spec/ports/0/port","value":5}]'], None),
    (["label", "gadget", "cel-old2", "x=y"], None),
    (["get", "gadget", "cel-old2", "-o", "jsonpath={.spec.ports}"], None),
    (["delete", "gadget", "cel-one", "cel-old", "cel-old2"], None),
]

# metav1.Time and MicroTime decode themselves with Go's time.Parse (RFC 3339, RFC 3339 with six
# fractional digits): its error texts, element by element. Sent raw: kubectl would refuse them first.
TIMES = ["yesterday", "2024-13-01T00:00:00Z", "2024-01-01T00:00:00", "2024-01-01T24:00:00Z", "2024-02-30T00:00:00Z",
         "2023-02-29T00:00:00Z", "2024-02-29T00:00:00Z", "2024-01-01 00:00:00Z", "", None, "2024-01-01T00:00:00.5Z",
         "2024-01-01T00:00:00,5Z", "2024-01-01T00:00:00+25:00", "2024-01-01T00:00:00+01:61",
         "2024-01-01T00:00:00x01:00", "2024-01-01T00:00:00+0100", "2024-01-01T1:00:00Z", "2024-01-01T00:00:00Zjunk",
         "2024-1-01T00:00:00Z", "20240101", 5]
MICRO_TIMES = ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00.123456Z", "2024-01-01T00:00:00.123Z",
               "2024-01-01T00:00:00.1234567Z"]
TIMESTAMP_STEPS = [
    (["create", "--raw", "/api/v1/namespaces/NS/configmaps?dryRun=All", "-f", "-", "-o", "jsonpath={.metadata.name}"],
     json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t", "creationTimestamp": t}}))
    for t in TIMES] + [
    (["create", "--raw", "/apis/events.k8s.io/v1/namespaces/NS/events?dryRun=All", "-f", "-"],
     json.dumps({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}, "eventTime": t,
                 "reportingController": "a/b", "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal",
                 "regarding": {"kind": "Pod", "name": "p"}}))
    for t in MICRO_TIMES]

# events.k8s.io/v1 creates: legacyValidateEvent, then the strict rules (ValidateEventCreate).
def v1_event(**fields):
    return json.dumps(dict({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}}, **fields))


EVENT_OK = {"eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "a/b", "reportingInstance": "i",
            "action": "A", "reason": "R", "type": "Normal"}
EVENT_STEPS = [(["create", "--raw", "/apis/events.k8s.io/v1/namespaces/NS/events?dryRun=All", "-f", "-"], body) for body in [
    v1_event(),
    v1_event(eventTime="2024-01-01T00:00:00.000000Z"),
    v1_event(regarding={"namespace": "other"}, type="x"),
    v1_event(**dict(EVENT_OK, reportingController="bad name!", regarding={"namespace": "NAMESPACE"})),
    v1_event(**dict(EVENT_OK, regarding={"namespace": "NAMESPACE"}, series={"count": 1}, deprecatedCount=3,
                    deprecatedSource={"component": "x"}, deprecatedFirstTimestamp="2024-01-01T00:00:00Z")),
    v1_event(**dict(EVENT_OK, regarding={"namespace": "NAMESPACE"}, note="x" * 1100)),
    v1_event(**dict(EVENT_OK, regarding={"namespace": "NAMESPACE"}, action="a" * 129, reason="r" * 129)),
]]

# Quantities are stored as Go encodes them again: canonical text (or the text as given when
# ParseQuantity keeps it), ResourceList values rounded up to thousandths (SetDefaults_ResourceList),
# an emptyDir sizeLimit not. Sent raw, so the server sees the text (and bare numbers) as written.
QUANTITIES = ["0.5", "1.5Gi", "1024Mi", "2000m", "1.5", "100M", "1e3", "0.1", "1536Mi", "1.0", "01", "+1", "1000",
              "1.50", "12e2", 2, 0.25, "1Ki", "1000Ki", "1.5Ki", "1e30", "123456789012345678901234567890", "1.5E40",
              "9223372036854775807", "9223372036854775808", "0.000000001", "1n", "0.1n", "1Ei", "8Ei", "100000Ei",
              "1e-30", "1000000000000000000000m", "-1.5", "-0.0001"]
QUANTITY_STEPS = [
    (["create", "--raw", "/api/v1/namespaces/NS/limitranges?dryRun=All", "-f", "-"],
     json.dumps({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "q"},
                 "spec": {"limits": [{"type": "Container", "max": {"cpu": q}}]}}))
    for q in QUANTITIES] + [
    (["create", "--raw", "/api/v1/namespaces/NS/pods?dryRun=All", "-f", "-"],
     json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
                 "spec": {"containers": [{"name": "c", "image": "busybox",
                                          "resources": {"requests": {"cpu": "0.5", "memory": "1.5Gi"},
                                                        "limits": {"cpu": "1.0001", "memory": "1536Mi"}},
                                          "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}],
                          "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "0.0000001"}}]}}))]

# Server-side apply with several managers: conflicts over several fields at once (a list item by its
# merge key), --force-conflicts taking them over, a conflict with another applier, and the order of
# the managedFields entries (sortEncodedManagedFields: Apply first, then time and manager).
def ssa_deployment(labels_team, replicas, image, x):
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ssa", "labels": {"team": labels_team}},
                       "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "ssa"}},
                                "template": {"metadata": {"labels": {"app": "ssa"}},
                                             "spec": {"containers": [{"name": "busybox", "image": image,
                                                                      "env": [{"name": "X", "value": x}]}]}}}})


def ssa_configmap(data):
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}, "data": data})


APPLY_STEPS = [
    (["create", "deployment", "ssa", "--image=busybox", "--replicas=2"], None),
    (["apply", "--server-side", "--field-manager=mgr-a", "-f", "-"], ssa_deployment("a", 3, "nginx", "1")),
    (["apply", "--server-side", "--field-manager=mgr-a", "--force-conflicts", "-f", "-"], ssa_deployment("a", 3, "nginx", "1")),
    (["apply", "--server-side", "--field-manager=mgr-b", "-f", "-"], ssa_deployment("b", 4, "redis", "2")),
    # (Only the appliers: the Deployment controller's own entry is known difference 14.)
    (["get", "deployment", "ssa", "-o",
      'jsonpath={.spec.replicas} {.metadata.managedFields[?(@.operation=="Apply")].manager}{"\\n"}'], None),
    (["create", "configmap", "cm1", "--from-literal=a=1", "--from-literal=b=2"], None),
    (["apply", "--server-side", "--field-manager=mgr-c", "-f", "-"], ssa_configmap({"a": "9", "b": "8", "c": "7"})),
    (["apply", "--server-side", "--field-manager=mgr-c", "--force-conflicts", "-f", "-"], ssa_configmap({"a": "9", "b": "8", "c": "7"})),
    (["apply", "--server-side", "--field-manager=mgr-d", "-f", "-"], ssa_configmap({"c": "6"})),
    (["apply", "--server-side", "--field-manager=mgr-d", "-f", "-"], ssa_configmap({"c": "7"})),
    (["get", "configmap", "cm1", "-o", 'jsonpath={.data} {.metadata.managedFields[*].manager}{"\\n"}'], None),
]

# kubectl describe of the kinds users meet besides workloads (kubectl's describers read the objects,
# their Endpoints/EndpointSlices and events): a Service's endpoints, a budget's status and NoPods
# event from the disruption controller, quota, LimitRange, RBAC, a namespace's labels.
DESCRIBE_STEPS = [
    (["create", "configmap", "dc", "--from-literal=a=1"], None),
    (["create", "service", "clusterip", "dsvc", "--tcp=80:8080", "--tcp=443:8443"], None),
    (["create", "service", "clusterip", "dheadless", "--clusterip=None"], None),
    (["create", "quota", "dq", "--hard=pods=3,requests.cpu=2"], None),
    (["create", "serviceaccount", "dsa"], None),
    (["create", "secret", "generic", "dsec", "--from-literal=k=v"], None),
    (["create", "role", "drole", "--verb=get", "--resource=pods"], None),
    (["create", "rolebinding", "drb", "--role=drole", "--user=bob"], None),
    (["create", "pdb", "dpdb", "--selector=app=x", "--min-available=1"], None),
    (["create", "pdb", "dpdb2", "--selector=app=y", "--max-unavailable=50%"], None),
    (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "dlr"},
                                        "spec": {"limits": [{"type": "Container", "default": {"cpu": "300m"},
                                                             "max": {"cpu": "1"}}]}})),
    (["wait", "--for=jsonpath={.status.observedGeneration}=1", "pdb/dpdb", "pdb/dpdb2"], None),
    (["wait", "--for=jsonpath={.metadata.name}=dsvc", "endpoints/dsvc"], None),
] + [(["describe", r], None) for r in
     ["configmap/dc", "service/dsvc", "service/dheadless", "quota/dq", "serviceaccount/dsa", "secret/dsec",
      "role/drole", "rolebinding/drb", "pdb/dpdb", "pdb/dpdb2", "limitrange/dlr"]] + [
    (["get", "pdb"], None),
    (["get", "pdb", "dpdb", "-o", "jsonpath={.status}"], None),
    (["get", "endpoints"], None),
    (["get", "endpoints", "dheadless", "-o", "json"], None),
    (["get", "endpointslices", "-o", 'jsonpath={range .items[*]}{.metadata.generateName} {.addressType} '
      '{.metadata.labels} {.metadata.ownerReferences[0].kind} {.endpoints} {.ports}{"\\n"}{end}'], None, "uniq"),
    (["get", "namespace", "NAMESPACE", "-o", "jsonpath={.metadata.labels}"], None),
    (["delete", "service", "dsvc"], None),
    (["get", "endpoints", "-o", "name"], None),
]

# The value rules of the other kinds users write (ConfigMap and Secret keys and types, quota names
# and values, LimitRange types, RBAC rules and bindings, StorageClass, PV and PVC enums, priority
# limits, budgets, Job and Deployment counts): the answers of a server dry run.
KIND_BODIES = [
    # (one error per map: Go visits a map's keys in random order)
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"bad key": "1"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"ok": "2"}, "binaryData": {"ok": "AA=="}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"..x": "3"}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"bad key": "AA=="}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "kubernetes.io/basic-auth"},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "kubernetes.io/dockerconfigjson",
     "data": {".dockerconfigjson": "e30="}},
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": {"bad/name/x": "1"}}},
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": {"pods": "-1"}}},
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": {"gpus": "1"}}},
    {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l"}, "spec": {"limits": [{"type": "Bogus"}]}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"}, "value": 2000000000},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
     "roleRef": {"kind": "Role", "name": ""}, "subjects": [{"kind": "User"}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
     "roleRef": {"kind": "Thing", "name": "r"}, "subjects": [{"kind": "Robot", "name": "x"}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
     "rules": [{"verbs": [], "resources": ["pods"]}, {"verbs": ["get"], "apiGroups": [""]}]},
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "x",
     "reclaimPolicy": "Bogus", "volumeBindingMode": "Sometimes"},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p"},
     "spec": {"accessModes": ["ReadWriteMany", "Bogus"], "volumeMode": "Bogus", "resources": {"requests": {"storage": "1Gi"}}}},
    {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
     "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"},
              "persistentVolumeReclaimPolicy": "Bogus"}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}, "spec": {"minAvailable": -1}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}, "spec": {"maxUnavailable": "half"}},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
     "spec": {"ttlSecondsAfterFinished": -1,
              "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "b"}]}}}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
     "spec": {"minReadySeconds": -1, "revisionHistoryLimit": -1, "selector": {"matchLabels": {"a": "b"}},
              "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "b"}]}}}},
]
KIND_STEPS = [(["create", "--dry-run=server", "-f", "-"], json.dumps(b)) for b in KIND_BODIES]

SCENARIOS = {
    # pods/exec, pods/attach, pods/portforward (strategy.go streamLocation / PortForwardLocation):
    # what an API server without kubelets answers; kubectl 1.32 execs over WebSocket. (-n before
    # "--": the -n the runner appends lands in the remote command.)
    "streams": [
        (["create", "-f", "-"], pod("p1", C_NONE, '"nodeName":"streams-fid-n1",')),
        (["create", "-f", "-"], pod("p2", [{"name": "main", "image": "busybox"}, {"name": "side", "image": "busybox"}],
                                    '"nodeName":"streams-fid-n2",')),
        (["create", "-f", "-"], pod("p3", C_NONE, '"schedulerName":"streams-no-such-scheduler",')),
        (["create", "-f", "-"], pod("p4", C_NONE, '"nodeName":"streams-fid-ghost",')),
        (["exec", "-n", "NAMESPACE", "p1", "--", "ls"], None),
        (["exec", "-n", "NAMESPACE", "p1", "-c", "zz", "--", "ls"], None),
        (["exec", "-n", "NAMESPACE", "p2", "-c", "side", "--", "ls", "-l"], None),
        (["exec", "-n", "NAMESPACE", "p3", "--", "ls"], None),
        (["exec", "-n", "NAMESPACE", "p4", "--", "ls"], None),
        (["exec", "-n", "NAMESPACE", "nope", "--", "ls"], None),
        (["attach", "p1"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/pods/p1/exec?command=ls&stdout=true"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/pods/p2/exec?command=ls&stdout=true"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/pods/p2/exec?command=ls&stdout=true&container=side"], None),
        (["create", "--raw", "/api/v1/namespaces/NS/pods/p2/exec?command=ls&stdout=true&container=side", "-f", "-"], "{}"),
        (["replace", "--raw", "/api/v1/namespaces/NS/pods/p1/exec?command=ls", "-f", "-"], "{}"),
        (["get", "--raw", "/api/v1/namespaces/NS/pods/p1/portforward?ports=8080,abc"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/pods/p1/portforward?ports=70000"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/pods/p1/portforward?ports=80"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/pods/p3/portforward"], None),
        (["create", "--raw", "/api/v1/namespaces/NS/pods/p2/portforward", "-f", "-"], "{}"),
        # p3 stays Pending on both (no scheduler of its name): kubectl refuses before any request.
        (["port-forward", "p3", "8080:80"], None),
    ],
    "quota": [
        (["create", "quota", "compute", "--hard=limits.cpu=1,limits.memory=1Gi,requests.nvidia.com/gpu=1,pods=2,count/services=1"], None),
        (["create", "-f", "-"], pod("nolimits", C_NONE)),
        (["create", "-f", "-"], pod("withlimits", C_LIM)),
        (["create", "-f", "-"], pod("second", C_LIM)),
        (["get", "pod", "withlimits", "-o", "json"], None),
        (["create", "service", "clusterip", "a", "--tcp=80:80"], None),
        (["create", "service", "clusterip", "b", "--tcp=80:80"], None),
    ],
    "limitrange": [
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
                                            "spec": {"limits": [{"type": "Container",
                                                                 "default": {"cpu": "300m", "memory": "200Mi"},
                                                                 "defaultRequest": {"cpu": "100m", "memory": "100Mi"},
                                                                 "max": {"cpu": "1"}}]}})),
        (["create", "-f", "-"], pod("defaulted", C_NONE)),
        (["get", "pod", "defaulted", "-o", "json"], None),
        (["create", "-f", "-"], pod("toobig", [{"name": "main", "image": "busybox",
                                                "resources": {"limits": {"cpu": "2"}}}])),
    ],
    "priority": [
        (["create", "-f", "-"], pod("unknown", C_NONE, '"priorityClassName":"nope",')),
        (["create", "priorityclass", "fid-high", "--value=1000", "--description=fidelity"], None),
        (["create", "-f", "-"], pod("known", C_NONE, '"priorityClassName":"fid-high",')),
        (["get", "pod", "known", "-o", "jsonpath={.spec.priority} {.spec.priorityClassName}"], None),
        (["get", "priorityclass", "system-node-critical", "-o", "json"], None),
        (["delete", "priorityclass", "fid-high"], None),
    ],
    "immutable": [
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
                                            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                                                     "resources": {"requests": {"storage": "1Gi"}}}})),
        (["get", "pvc", "c", "-o", "json"], None),
        (["create", "deployment", "d", "--image=busybox"], None),
        (["get", "deployment", "d", "-o", "json"], None),
        (["patch", "deployment", "d", "--type=merge", "-p",
          '{"spec":{"selector":{"matchLabels":{"x":"y"}},"template":{"metadata":{"labels":{"x":"y"}}}}}'], None),
        (["create", "service", "clusterip", "s", "--tcp=80:8080"], None),
        (["patch", "service", "s", "--type=merge", "-p", '{"spec":{"clusterIP":"10.0.0.99"}}'], None),
        (["create", "job", "j", "--image=busybox"], None),
        (["patch", "job", "j", "--type=merge", "-p", '{"spec":{"template":{"spec":{"activeDeadlineSeconds":5}}}}'], None),
    ],
    "names": [
        (["create", "configmap", "a" * 253], None),
        (["create", "configmap", "a" * 254], None),
        (["create", "configmap", "Upper"], None),
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": "l", "labels": {"k": "v" * 64}}})),
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": "l", "labels": {"k" * 64: "v"}}})),
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": "l", "labels": {"k": "v" * 63}}})),
    ],
    "services": [
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "bad"}, "spec": {
            "ports": [{"port": 99999}, {"port": 0, "targetPort": 70000, "name": "b"}]}})),
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "bad2"}, "spec": {
            "type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}})),
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "two"}, "spec": {
            "selector": {"app": "x"}, "ports": [{"port": 80, "name": "http"}, {"port": 6006, "targetPort": "tb", "name": "tb"}]}})),
        (["get", "service", "two", "-o", "jsonpath={.spec.ports}"], None),
    ],
    "conflict": [
        (["create", "configmap", "x", "--from-literal=a=1"], None),
        (["create", "configmap", "x", "--from-literal=a=1"], None),
        (["replace", "-f", "-"], '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"1"},"data":{"a":"2"}}'),
        (["get", "configmap", "missing"], None),
        (["delete", "configmap", "missing"], None),
    ],
    "rbac": [
        (["get", "pods", "--as=bob"], None),
        (["auth", "can-i", "list", "pods", "--as=bob"], None),
        (["create", "role", "reader", "--verb=get,list", "--resource=pods"], None),
        (["create", "rolebinding", "bob-reads", "--role=reader", "--user=bob"], None),
        (["auth", "can-i", "list", "pods", "--as=bob"], None),
        (["auth", "can-i", "create", "pods", "--as=bob"], None),
        (["get", "pods", "--as=bob"], None),
        (["get", "role", "reader", "-o", "json"], None),
        (["get", "rolebinding", "bob-reads", "-o", "json"], None),
    ],
    "generators": [
        (["create", "serviceaccount", "sa"], None),
        (["get", "serviceaccount", "sa", "-o", "json"], None),
        (["create", "poddisruptionbudget", "pdb", "--selector=app=x", "--min-available=1"], None),
        (["get", "pdb", "pdb", "-o", "json"], None),
        (["create", "job", "j", "--image=busybox"], None),
        (["get", "job", "j", "-o", "json"], None),
        (["create", "configmap", "dry", "--from-literal=a=b", "--dry-run=server", "-o", "json"], None),
        (["get", "configmap", "dry"], None),
    ],
    "merge": [
        (["create", "-f", "-"], json.dumps({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "m"}},
                     "template": {"metadata": {"labels": {"app": "m"}}, "spec": {
                         "tolerations": [{"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"}],
                         "volumes": [{"name": "ssd0", "hostPath": {"path": "/ssd0"}}],
                         "containers": [{"name": "main", "image": "busybox", "env": [{"name": "A", "value": "1"}],
                                         "volumeMounts": [{"name": "ssd0", "mountPath": "/ssd0"}]}]}}}})),
        (["patch", "deployment", "m", "-p", json.dumps({"spec": {"template": {"spec": {
            "tolerations": [{"key": "ssd_node", "operator": "Exists"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            "containers": [{"name": "main", "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "3"}]}]}}}})], None),
        (["get", "deployment", "m", "-o", "jsonpath={.spec.template.spec}"], None),
        (["apply", "--server-side", "--field-manager=one", "-f", "-"],
         '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa"},"data":{"a":"1"}}'),
        (["apply", "--server-side", "--field-manager=two", "-f", "-"],
         '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa"},"data":{"a":"2"}}'),
        (["apply", "--server-side", "--field-manager=two", "--force-conflicts", "-f", "-"],
         '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa"},"data":{"a":"2"}}'),
        (["get", "configmap", "ssa", "-o", "jsonpath={.data}"], None),
    ],
    "scheduling": scheduling_steps(),
    "workloads": workload_steps(),
    "watch": [
        # Labelled: a real control plane also publishes kube-root-ca.crt into each new namespace, at
        # a moment of its own; the watches select the scenario's own ConfigMaps.
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "1"},
                                            "metadata": {"name": "a", "labels": {"fid": "w"}}})),
        (["get", "configmap", "a", "-o", "jsonpath={.metadata.resourceVersion}"], None, "capture:RV"),
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "1"},
                                            "metadata": {"name": "b", "labels": {"fid": "w"}}})),
        (["patch", "configmap", "a", "--type=merge", "-p", '{"data":{"k":"2"}}'], None),
        (["delete", "configmap", "b"], None),
        # Every change after RV, in order, then the server ends the watch (timeoutSeconds).
        (["get", "--raw", "/api/v1/namespaces/NS/configmaps?watch=1&resourceVersion={RV}&timeoutSeconds=1"
                          "&labelSelector=fid%3Dw"], None),
        # Field and label selectors apply to watches too.
        (["get", "--raw", "/api/v1/namespaces/NS/configmaps?watch=1&resourceVersion={RV}&timeoutSeconds=1"
                          "&fieldSelector=metadata.name%3Db"], None),
        # A version older than the watch cache's window: 410 Gone, as an ERROR event.
        (["get", "--raw", "/api/v1/namespaces/NS/configmaps?watch=1&resourceVersion=1&timeoutSeconds=1"
                          "&labelSelector=fid%3Dw"], None),
    ],
    # Watch lists (WatchList, beta and on in v1.32): the option rules of validateWatchOptions, and a
    # watch from a version with sendInitialEvents=false. (sendInitialEvents=true needs etcd's
    # RequestWatchProgress, which the oracle's etcd 3.4 lacks: FIDELITY.md, known difference 11.)
    "watchlist": [
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "1"},
                                            "metadata": {"name": "a", "labels": {"fid": "l"}}})),
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "2"},
                                            "metadata": {"name": "b", "labels": {"fid": "l"}}})),
        (["get", "configmap", "a", "-o", "jsonpath={.metadata.resourceVersion}"], None, "capture:RV"),
        (["get", "--raw", "/api/v1/namespaces/NS/configmaps?watch=1&sendInitialEvents=false&allowWatchBookmarks=true"
                          "&resourceVersionMatch=NotOlderThan&resourceVersion={RV}&timeoutSeconds=1&labelSelector=fid%3Dl"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/configmaps?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan"
                          "&timeoutSeconds=1&continue=x"], None),
        # ValidateListOptions: the rules of a list.
        (["get", "--raw", "/api/v1/namespaces/NS/configmaps?resourceVersionMatch=Exact"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/configmaps?resourceVersionMatch=Newest&resourceVersion=5"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/configmaps?resourceVersionMatch=Exact&resourceVersion=0"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/configmaps?sendInitialEvents=true"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/configmaps?watch=1&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
                          "&resourceVersionMatch=Exact&timeoutSeconds=1"], None),
    ],
    "jobs": job_steps(),
    "podvalues": podvalues_steps(),
    "submissions": submission_steps(),
    "gpupoolapply": gpupool_apply_steps(),
    "gpupoolloop": gpupool_loop_steps(),
    "kubeflow": kubeflow_steps(),
    "arenaflags": arena_flags_steps(),
    "pyfunction": function_job_steps(),
    "kueue": kueue_steps(),
    # Decoding by the kinds' schemas: unknown fields under each fieldValidation (kubectl create sends
    # Strict, --validate=warn Warn, --validate=false Ignore; kubectl patch sends none, so Warn), an
    # unknown directive, and unknown fields dropped from what is stored.
    "unknown": [
        (["create", "-f", "-"], UNKNOWN_DEPLOYMENT),
        (["create", "-f", "-", "--validate=warn"], UNKNOWN_DEPLOYMENT),
        (["get", "deployment", "unk", "-o", "jsonpath={.metadata.name}{.metadata.labels}{.spec.template.spec.containers}{.spec.replicas}"], None),
        (["patch", "deployment", "unk", "-p", '{"spec":{"foo":1}}'], None),
        (["patch", "deployment", "unk", "--type=merge", "-p", '{"spec":{"template":{"spec":{"bar":{"x":1}}}}}'], None),
        (["patch", "deployment", "unk", "--type=json", "-p", '[{"op":"add","path":"/spec/baz","value":1}]'], None),
        (["create", "--raw", "/apis/apps/v1/namespaces/NS/deployments?fieldValidation=Bogus", "-f", "-"], UNKNOWN_DEPLOYMENT),
        (["create", "-f", "-", "--validate=false", "--dry-run=server", "-o", "jsonpath={.spec.template.spec.containers}"],
         UNKNOWN_DEPLOYMENT.replace('"unk"', '"unk2"')),
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                            "data": {"a": 1}})),
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                            "spec": {"containers": {"name": "c"}}})),
    ],
    # What the API fuzzer's comparison with the oracle found (fuzz/oracle_compare.py): workload spec
    # rules (selector, template labels, restartPolicy), fields set to null, a missing provisioner,
    # invalid UTF-8, an unparsable quantity, PUT creating a Service, PATCH of a missing object.
    "specrules": [
        (["create", "--dry-run=server", "-f", "-"], workload_json("Deployment", None)),
        (["create", "--dry-run=server", "-f", "-"], workload_json("Deployment", {})),
        (["create", "--dry-run=server", "-f", "-"], workload_json("Deployment", {"matchLabels": {}})),
        (["create", "--dry-run=server", "-f", "-"], workload_json("Deployment", {"matchLabels": None})),
        (["create", "--dry-run=server", "-f", "-"], workload_json("Deployment", {"matchLabels": {"app": "other"}})),
        (["create", "--dry-run=server", "-f", "-"], workload_json("Deployment", {"matchLabels": {"app": "w"}}, "Never")),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                                "metadata": {"name": "r"}, "spec": {}})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "batch/v1", "kind": "Job",
                                                                "metadata": {"name": "j"}, "spec": None})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "b"}]}}}})),
    ] + [
        # spec.managedBy (JobManagedBy, on in v1.32): a domain-prefixed path of at most 63 bytes.
        (["create", "--dry-run=server", "-o", "jsonpath={.spec.managedBy}", "-f", "-"],
         json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"mb{i}"},
                     "spec": {"managedBy": by, "template": {"spec": {"restartPolicy": "Never",
                                                                     "containers": [{"name": "c", "image": "b"}]}}}}))
        for i, by in enumerate(["NoExecute", "", "acme.io/ctl", "Acme.io/x y", "/x", "a/", "kueue.x-k8s.io/multikueue",
                                "example.com/" + "x" * 60])
    ] + [
        # ValidateDeploymentSpec's last rules (progressDeadlineSeconds defaulted to 600 must exceed
        # minReadySeconds), a ReplicaSet template's activeDeadlineSeconds, and what Go writes for
        # fields without omitempty a body leaves out below the top level (a template's owner
        # reference, a preferred node affinity term).
        (["create", "--dry-run=server", "-f", "-"], _spec_patch(workload_json("Deployment", {"matchLabels": {"app": "w"}}),
                                                                minReadySeconds=-1, revisionHistoryLimit=-2,
                                                                progressDeadlineSeconds=-1)),
        (["create", "--dry-run=server", "-f", "-"], _spec_patch(workload_json("Deployment", {"matchLabels": {"app": "w"}}),
                                                                minReadySeconds=700)),
        (["create", "--dry-run=server", "-f", "-"], _spec_patch(workload_json("ReplicaSet", {"matchLabels": {"app": "w"}}),
                                                                minReadySeconds=-3, template_ads=30)),
        (["create", "--dry-run=server", "-o", "jsonpath={.spec.template.metadata.ownerReferences} "
          "{.spec.template.spec.affinity}", "-f", "-"],
         _spec_patch(workload_json("Deployment", {"matchLabels": {"app": "w"}}), template_owner={"controller": False},
                     template_affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                         {"weight": 3}]}})),
        # (the accounts the pods below name: the ServiceAccount plugin refuses a pod whose account
        # does not exist, before validation)
        (["create", "serviceaccount", "x"], None),
        (["create", "serviceaccount", "y"], None),
    ] + [
        # serviceAccount, the deprecated alias of serviceAccountName (the v1 conversion: the name
        # wins, and both are written back).
        (["create", "--dry-run=server", "-o", "jsonpath={.spec.serviceAccount}/{.spec.serviceAccountName}", "-f", "-"],
         pod("sa%d" % i, C_NONE, extra))
        for i, extra in enumerate(['"serviceAccount":"x",', '"serviceAccountName":"y",',
                                   '"serviceAccount":"x","serviceAccountName":"y",', '"serviceAccount":"X_1",'])
    ] + [
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                                                "metadata": {"name": "s"}, "provisioner": None})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
            "spec": {"containers": [{"name": "c", "image": "b", "resources": {"requests": {"cpu": "lots"}}}]}})),
        (["create", "-f", "-"], '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u8"},"data":{"k":"a\udcffb"}}'),
        (["get", "configmap", "u8", "-o", "jsonpath={.data.k}"], None),
        (["replace", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "put"},
                                             "spec": {"ports": [{"port": 80}]}})),
        (["replace", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "put"}})),
        (["patch", "deployment", "missing", "--type=merge", "-p", '{"spec":{"replicas":"x"}}'], None),
        (["patch", "storageclass", "missing", "-p", '{"metadata":{"labels":{"a":"b"}}}'], None),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                                "metadata": {"name": "t", "deletionTimestamp": 5}})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                                "metadata": {"name": "g", "generateName": "Bad_Name-"}})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                                "metadata": {"generateName": "Bad\fName"}})),
        (["create", "-f", "-"], workload_json("Deployment", {"matchLabels": {"app": "w"}})),
        (["patch", "deployment", "w", "--subresource=scale", "--type=merge", "-p", '{"spec":{"replicas":false}}'], None),
        (["patch", "deployment", "w", "--subresource=scale", "--type=merge", "-p", '{"spec":{"replicas":3000000000}}'], None),
        (["patch", "deployment", "w", "-p", '{"spec":{"replicas":1},"$patch":"replace"}'], None),
        (["patch", "deployment", "w", "--type=merge", "-p", '{"metadata":{"name":null}}'], None),
        (["patch", "deployment", "w", "--type=merge", "-p", '{"metadata":{"name":"other"}}'], None),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                                                                "spec": None})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                                                                "spec": {"type": "Sideways", "ports": [{"port": 80}]}})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                                                "metadata": {"name": "c"}, "spec": None})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "-1"}}}})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"completionMode": "Sometimes", "template": {"spec": {"restartPolicy": "Never",
                                                                         "containers": [{"name": "c", "image": "b"}]}}}})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w2"},
            "spec": {"strategy": {"type": "Sideways"}, "selector": {"matchLabels": {"app": "w"}},
                     "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "c", "image": "b"}]}}}})),
        # ValidateNodeSelectorRequirement: Gt/Lt take one value, not necessarily an integer.
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gt"},
            "spec": {"containers": [{"name": "c", "image": "b"}], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["1-2"]}]}]}}}}})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gt"},
            "spec": {"containers": [{"name": "c", "image": "b"}], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gpu", "operator": "Lt", "values": ["1", "2"]}]}]}}}}})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "aff"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {"metadata": {"labels": {"app": "a"}}, "spec": {
                "containers": [{"name": "c", "image": "b"}], "affinity": {"nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "gpu", "operator": "Exists", "values": ["x"]},
                                              {"key": "gpu", "operator": "Near", "values": ["x"]},
                                              {"key": "gpu", "operator": "In"}]}]}}}}}}})),
        # validateNodeTaints: unique by key and effect (reported at metadata.taints[i]).
        (["create", "--dry-run=server", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "dupt"},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}, {"key": "k", "value": "v", "effect": "NoSchedule"},
                                {"key": "k", "effect": "NoExecute"}, {"key": "k", "value": "w", "effect": "NoSchedule"}]}})),
    ],
    # The writer's managedFields include the fields the scheme defaults filled in (they are tracked
    # after decoding), not what strategies, allocators and admission plugins add; so a server-side
    # apply of a defaulted field conflicts with the creator.
    "managedfields": [
        (["create", "-f", "-"], workload_json("Deployment", {"matchLabels": {"app": "w"}})),
        (["get", "deployment", "w", "-o", 'jsonpath={.metadata.managedFields[?(@.manager=="kubectl-create")].fieldsV1}'], None),
        (["run", "p", "--image=busybox"], None),
        (["get", "pod", "p", "-o", 'jsonpath={.metadata.managedFields[?(@.manager=="kubectl-run")].fieldsV1}'], None),
        (["create", "service", "clusterip", "s", "--tcp=80"], None),
        (["get", "service", "s", "-o", 'jsonpath={.metadata.managedFields[?(@.manager=="kubectl-create")].fieldsV1}'], None),
        (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
                                            "spec": {"accessModes": ["ReadWriteOnce"],
                                                     "resources": {"requests": {"storage": "1Gi"}}}})),
        (["get", "pvc", "c", "-o", 'jsonpath={.metadata.managedFields[?(@.manager=="kubectl-create")].fieldsV1}'], None),
        (["create", "job", "j", "--image=busybox"], None),
        (["get", "job", "j", "-o", 'jsonpath={.metadata.managedFields[?(@.manager=="kubectl-create")].fieldsV1}'], None),
        (["patch", "deployment", "w", "--type=merge", "-p", '{"spec":{"minReadySeconds":3}}'], None),
        (["get", "deployment", "w", "-o", 'jsonpath={.metadata.managedFields[?(@.manager=="kubectl-patch")].fieldsV1}'], None),
        (["apply", "--server-side", "--field-manager=tool", "-f", "-"], json.dumps({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"},
            "spec": {"revisionHistoryLimit": 5, "selector": {"matchLabels": {"app": "w"}},
                     "template": {"metadata": {"labels": {"app": "w"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})),
    ],
    # kubectl explain reads the schemas the server publishes at /openapi/v3.
    "crd": CRD_STEPS,
    "cel": CEL_STEPS,
    "timestamps": TIMESTAMP_STEPS,
    "events": EVENT_STEPS,
    "quantities": QUANTITY_STEPS,
    "applyconflicts": APPLY_STEPS,
    "describe": DESCRIBE_STEPS,
    "kinds": KIND_STEPS,
    "valleft": valleft_steps(),
    "explain": [
        (["explain", "deployment.spec.replicas"], None),
        (["explain", "pod.spec.tolerations"], None),
        (["explain", "job.spec", "--recursive"], None),
        (["explain", "persistentvolumeclaims.spec.resources"], None),
        (["explain", "priorityclass"], None),
        (["explain", "pod.spec.nosuchfield"], None),
    ],
    # The API's warnings (pkg/api/pod/warnings.go), which kubectl prints as "Warning: ...".
    "warnings": [
        (["create", "-f", "-"], json.dumps({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "w"}},
                     "template": {"metadata": {"labels": {"app": "w"},
                                               "annotations": {"scheduler.alpha.kubernetes.io/critical-pod": ""}},
                                  "spec": {
                         "nodeSelector": {"beta.kubernetes.io/os": "linux"},
                         "terminationGracePeriodSeconds": -5,
                         "imagePullSecrets": [{"name": "r"}, {"name": "r"}],
                         "volumes": [{"name": "g", "gitRepo": {"repository": "https://example.com/x.git"}}],
                         "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "failure-domain.beta.kubernetes.io/zone",
                                                        "whenUnsatisfiable": "ScheduleAnyway"}],
                         "containers": [
                             {"name": "main", "image": "busybox",
                              "resources": {"limits": {"memory": "1500m", "ephemeral-storage": "0.5"}},
                              "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "$(A)2"}, {"name": "A", "value": "3"}],
                              "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 80}]},
                             {"name": "side", "image": "busybox",
                              "ports": [{"containerPort": 80, "hostPort": 8080, "name": "http"}]}]}}}})),
        # No spec change, no warnings; a change warns again.
        (["annotate", "deployment", "w", "x=y"], None),
        (["scale", "deployment", "w", "--replicas=0"], None),
        (["set", "env", "deployment/w", "-c", "side", "B=1"], None),
        (["run", "p", "--image=busybox", "--env=X=1", "--env=X=2", "--labels=beta.kubernetes.io/arch=amd64"], None),
        (["label", "pod", "p", "z=1"], None),
        # Pod (anti-)affinity terms without a labelSelector match no pod (a dry run: nothing stored).
        (["create", "--dry-run=server", "-f", "-", "-o", "name"], json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "aff"},
            "spec": {"containers": [{"name": "main", "image": "busybox"}], "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b"}}}, {"topologyKey": "zone"}],
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}]},
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]}}}})),
    ],
    # Requests that once crashed or fooled the embedded server (issue #20), as the real one answers.
    "badinput": [
        (["create", "-f", "-"], json.dumps({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "neg"},
            "spec": {"replicas": -1, "selector": {"matchLabels": {"app": "neg"}},
                     "template": {"metadata": {"labels": {"app": "neg"}},
                                  "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}})),
        (["create", "--dry-run=server", "-f", "-"], json.dumps({
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "neg"},
            "spec": {"replicas": -1, "selector": {"matchLabels": {"app": "neg"}},
                     "template": {"metadata": {"labels": {"app": "neg"}},
                                  "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}})),
        (["create", "deployment", "d", "--image=busybox", "--replicas=0"], None),
        (["patch", "deployment", "d", "--type=merge", "-p", '{"spec":{"replicas":-1}}'], None),
        (["patch", "deployment", "d", "--type=merge", "-p", '{"spec":{"replicas":"x"}}'], None),
        (["scale", "deployment", "d", "--replicas=-1"], None),
        (["get", "deployment", "d"], None),
        (["create", "-f", "-"], pod("port", [{"name": "main", "image": "busybox", "ports": [{"containerPort": "eighty"}]}])),
        (["create", "-f", "-"], pod("env", [{"name": "main", "image": "busybox", "env": [{"name": "\u00e9", "value": "1"}]}])),
        (["create", "-f", "-"], pod("envok", [{"name": "main", "image": "busybox",
                                               "env": [{"name": "1X", "value": "1"}, {"name": "A B", "value": "2"}],
                                               "workingDir": "relative/dir"}])),
        (["create", "-f", "-"], json.dumps({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "negjob"},
            "spec": {"parallelism": -1, "completions": -1, "backoffLimit": -1,
                     "template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "main", "image": "busybox"}]}}}})),
        (["create", "-f", "-"], json.dumps({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "badclass"},
            "spec": {"storageClassName": "Bad_Class", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}})),
        (["create", "-f", "-"], pod("huge", [{"name": "main", "image": "busybox",
                                              "env": [{"name": "BIG", "value": "x" * (2 * 1024 * 1024)}]}])),
        (["get", "pods", "-o", "name"], None),
    ],
    # JSON patches that decode but do not apply are 422 with the generic message
    # (handlers/patch.go); ones that do not decode are 400.
    "patches": [
        (["create", "configmap", "c", "--from-literal=a=1"], None),
        (["patch", "configmap", "c", "--type=json", "-p", '[{"op":"remove","path":"/data/nope"}]'], None),
        (["patch", "configmap", "c", "--type=json", "-p", '[{"op":"replace","path":"/data/nope","value":"x"}]'], None),
        (["patch", "configmap", "c", "--type=json", "-p", '[{"op":"add","path":"/nope/deeper","value":"x"}]'], None),
        (["patch", "configmap", "c", "--type=json", "-p", '[{"op":"test","path":"/data/a","value":"2"}]'], None),
        (["patch", "configmap", "c", "--type=json", "-p", '[{"op":"frobnicate","path":"/data/a"}]'], None),
        (["patch", "configmap", "c", "--type=json", "-p", '[{"op":"add","path":"/data/b"}]'], None),
        (["patch", "configmap", "c", "--type=json", "-p", '[{"op":"move","from":"/data/nope","path":"/data/b"}]'], None),
        (["patch", "configmap", "c", "--type=json", "-p", '[{"op":"test","path":"/data/a","value":"1"},{"op":"add","path":"/data/b","value":"2"}]'], None),
        (["get", "configmap", "c", "-o", "jsonpath={.data}"], None),
    ],
    "lists": [
        (["create", "secret", "generic", "s1", "--from-literal=k=v"], None),
        (["create", "secret", "generic", "s2", "--from-literal=k=v"], None),
        (["create", "secret", "generic", "s3", "--from-literal=k=v"], None),
        (["get", "--raw", "/api/v1/namespaces/NS/secrets?limit=2"], None),
        (["get", "secrets", "--field-selector=metadata.name=s2", "-o", "name"], None),
        (["get", "secrets", "--field-selector=type=Opaque", "-o", "name", "--chunk-size=1"], None),
        (["get", "secrets", "--field-selector=spec.nope=1"], None),
        (["get", "secrets", "-l", "a in (b", "-o", "name"], None),
    ],
}

# Kubeflow Trainer v2.3.0's TrainJob and JobSet v0.12.0's JobSet as gpupool submits them, accepted by
# the real API server with the projects' CRDs and runtimes installed (SETUP): the stored specs after
# the CRDs' defaults, and bad fields refused by schema, CEL and strict decoding with the same words.
# The oracle runs no Trainer or JobSet controller, so only API answers are compared; the
# controllers are tested in tests/embedded/trainjob_controller_test.cpp.
def _trainjob(**spec):
    base = {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"image": "busybox", "numNodes": 1}}
    base.update(spec)
    return json.dumps({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                       "metadata": {"name": "bad"}, "spec": base})


TRAINJOB_STEPS = [
    (["gpupool", "submit", "trainjob", "--name", "tj", "--image", "busybox", "--workers", "2", "--cpu", "1",
      "--toleration", "ssd_node", "--selector", "disk=ssd", "--env", "EPOCHS=3", "--", "python", "train.py"], None),
    (["get", "trainjob", "tj", "-o", "jsonpath={.spec}"], None),
    (["get", "trainjob", "tj", "-o", "jsonpath={.metadata.labels}"], None),
    (["gpupool", "submit", "trainjob", "--name", "tj2", "--runtime", "deepspeed-distributed", "--image", "busybox",
      "--", "python", "train.py"], None),
    (["get", "trainjob", "tj2", "-o", "jsonpath={.spec.runtimeRef}"], None),
    (["gpupool", "submit", "jobset", "--name", "js", "--image", "busybox", "--workers", "2", "--toleration",
      "ssd_node", "--", "echo", "hi"], None),
    (["get", "jobset", "js", "-o", "jsonpath={.spec}"], None),
    (["create", "-f", "-"], _trainjob(trainer={"image": "busybox", "numNodes": "two"})),
    (["create", "-f", "-"], _trainjob(runtimeRef={"kind": "ClusterTrainingRuntime"})),
    (["create", "-f", "-"], _trainjob(managedBy="someone-else")),
    (["create", "-f", "-"], _trainjob(trainer={"image": "busybox", "nodes": 2})),
    (["create", "-f", "-"], _trainjob(runtimePatches=[{"trainingRuntimeSpec": {}}])),
    (["create", "-f", "-"], json.dumps({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "badjs"},
        "spec": {"replicatedJobs": [{"replicas": 1, "template": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}]}})),
    (["patch", "trainjob", "tj", "--type=merge", "-p", '{"spec":{"trainer":{"numNodes":3}}}'], None),
    (["get", "clustertrainingruntime", "torch-distributed", "-o", "jsonpath={.spec}"], None),
    (["explain", "trainjob.spec.runtimePatches.trainingRuntimeSpec.template.spec.replicatedJobs"], None),
]
SCENARIOS["trainjob"] = TRAINJOB_STEPS


# TrainJob and JobSet in a Kueue queue: as `gpupool submit -q` renders them (the queue label, suspended),
# the runtime patch the embedded Kueue writes into an admitted TrainJob (manager kueue.x-k8s.io/manager:
# the podSet label, the flavor's nodeSelector and tolerations per replicatedJob; emptied when evicted;
# a renamed manager is accepted: runtimePatches is a list map keyed by manager, so the entry is a new
# one, which the manager's `self == oldSelf` rule has nothing to compare with), and the Workloads of both kinds (a JobSet: one podSet per replicatedJob). No
# LocalQueue exists, so the embedded Kueue admits nothing, as the oracle (no Kueue controller).
# Admission itself is tested in tests/embedded/kueue_test.cpp.
def _kueue_patch(replicated_jobs):
    return {"manager": "kueue.x-k8s.io/manager",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": replicated_jobs}}}}


def _workload(name, podsets):
    return json.dumps({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": name},
                       "spec": {"queueName": "kq-team", "podSets": [
                           {"name": n, "count": c, "template": {"spec": {"restartPolicy": "Never", "containers": [
                               {"name": "node", "image": "busybox",
                                "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}} for n, c in podsets]}})


KUEUE_PODSET_PATCH = [{"name": "node", "template": {"spec": {"template": {
    "metadata": {"labels": {"kueue.x-k8s.io/podset": "node"}},
    "spec": {"nodeSelector": {"gpu": "a100"},
             "tolerations": [{"key": "gpu", "operator": "Equal", "value": "a100", "effect": "NoSchedule"}]}}}}}]
# Storage object in-use protection (FIDELITY.md 7): the claim's finalizer, a deleted claim kept
# while a scheduled pod names it, gone once the pod is; an unused claim and a volume deleted at once.
_CLAIM = ('{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"%s"},"spec":{"storageClassName":"",'
          '"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}')
SCENARIOS["protection"] = [
    (["create", "-f", "-", "-o", "jsonpath={.metadata.finalizers}"], _CLAIM % "data"),
    (["create", "-f", "-", "-o", "name"], _CLAIM % "free"),
    (["create", "-f", "-", "-o", "name"],
     pod("user", C_NONE, '"nodeName":"protection-fid-node","volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"data"}}],')),
    (["delete", "pvc", "data", "--wait=false"], None),
    (["delete", "pvc", "free", "--timeout=30s"], None),
    (["get", "pvc", "data", "-o", "jsonpath={.metadata.finalizers} {.metadata.deletionGracePeriodSeconds}"], None),
    (["get", "pvc"], None),
    (["delete", "pod", "user", "--force", "--grace-period=0"], None),
    # (its line depends on whether the claim was still there when it looked: not shown)
    (["wait", "--for=delete", "pvc/data", "--timeout=30s"], None, "capture:waited"),
    (["get", "pvc"], None),
    (["create", "-f", "-", "-o", "jsonpath={.metadata.finalizers}"],
     '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"protection-fid-pv"},"spec":{"capacity":'
     '{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp/protection-fid"}}}'),
    (["delete", "pv", "protection-fid-pv", "--timeout=30s"], None),
]

# ValidateObjectMeta's owner references and finalizers, and the hostIP-without-hostPort warning
# (found by fuzz.py --add-fields): server dry runs.
def _meta_pod(name, **md):
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": dict(name=name, **md),
                       "spec": {"containers": [{"name": "main", "image": "busybox"}]}})


_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": True}
SCENARIOS["objectmeta"] = [
    (["create", "--dry-run=server", "-f", "-"], _meta_pod("o1", ownerReferences=[{"blockOwnerDeletion": False}])),
    (["create", "--dry-run=server", "-f", "-"], _meta_pod("o2", ownerReferences=[{"apiVersion": "a/b/c", "kind": "K"}])),
    (["create", "--dry-run=server", "-f", "-"], _meta_pod("o3", ownerReferences=[_OWNER, dict(_OWNER, name="rs2")])),
    (["create", "--dry-run=server", "-f", "-"],
     _meta_pod("o4", ownerReferences=[{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}])),
    (["create", "--dry-run=server", "-f", "-"], _meta_pod("f1", finalizers=["-1", "bad", "example.com/ok"])),
    (["create", "--dry-run=server", "-f", "-"], _meta_pod("f2", finalizers=["orphan", "foregroundDeletion"])),
    (["create", "--dry-run=server", "-o", "name", "-f", "-"],
     pod("h1", [{"name": "main", "image": "busybox", "ports": [{"containerPort": 80, "hostIP": "10.1.2.3"}]}])),
    # metadata.generation: the client's value where the strategy sets none (ValidateObjectMeta:
    # non-negative; rest.BeforeUpdate keeps the stored one), 1 where it does.
    (["create", "--dry-run=server", "-f", "-"], _meta_pod("g1", generation=-1, labels={"-a": "b"})),
    (["create", "-o", "jsonpath={.metadata.generation}", "-f", "-"],
     json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "objectmeta-gen", "generation": 7}})),
    (["patch", "configmap", "objectmeta-gen", "-o", "jsonpath={.metadata.generation}", "-p",
      '{"metadata":{"generation":9},"data":{"a":"b"}}'], None),
    (["replace", "-o", "jsonpath={.metadata.generation}", "-f", "-"],
     json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "objectmeta-gen", "generation": -5}})),
    (["delete", "configmap", "objectmeta-gen"], None),
    (["create", "--dry-run=server", "-o", "jsonpath={.metadata.generation}", "-f", "-"],
     json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "objectmeta-d", "generation": -4},
                 "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                     "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})),
]

# Addresses as validation parses them (netutils.ParseIPSloppy / ParseCIDRSloppy, the fork of Go
# 1.16's parser: leading zeros in IPv4 fields and prefix lengths, long hex groups, an IPv4 tail;
# an IPv4-mapped CIDR is of the IPv4 family): a pod's hostAliases and nameservers, a node's
# podCIDRs, a Service's externalIPs. Server dry runs.
def _address_pod(name, ip):
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": {"containers": [{"name": "main", "image": "busybox"}],
                                "hostAliases": [{"ip": ip, "hostnames": ["a"]}],
                                "dnsPolicy": "None", "dnsConfig": {"nameservers": [ip]}}})


def _cidr_node(name, cidrs):
    return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {"podCIDRs": cidrs}})


SCENARIOS["addresses"] = [
    (["create", "--dry-run=server", "-o", "name", "-f", "-"], _address_pod(f"a{i}", ip))
    for i, ip in enumerate(["0001.2.3.4", "::ffff:001.2.3.4", "00001::", "1:2:3:4:5:6:1.2.3.4", "1.2.3.256",
                            "1:2:3:4:5:6:7:1.2.3.4", "fe80::1%eth0", "1::2::3"])
] + [
    (["create", "--dry-run=server", "-o", "name", "-f", "-"], _cidr_node(f"addresses-fid-n{i}", cidrs))
    for i, cidrs in enumerate([["10.0.0.0/000000000008"], ["0010.0.0.0/8"], ["::1/0000000000000000128"],
                               ["1.2.3.4/8/8"], ["10.0.0.0/33"], ["::ffff:102:304/120", "::1/64"],
                               ["::ffff:1.2.3.4/96", "10.0.0.0/8"]])
] + [
    (["create", "--dry-run=server", "-o", "name", "-f", "-"],
     json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "addresses-svc"},
                 "spec": {"ports": [{"port": 80}], "externalIPs": ["0010.1.2.3", "::ffff:0001.2.3.4", "1.2.3"]}})),
    # Accepted, with GetWarningsForService's net/netip warnings (leading zeros, non-canonical IPv6).
    (["create", "--dry-run=server", "-o", "name", "-f", "-"],
     json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "addresses-warn"},
                 "spec": {"type": "LoadBalancer", "ports": [{"port": 80}], "loadBalancerIP": "A_B",
                          "externalIPs": ["010.1.2.3", "2001:DB8::1", "::ffff:0102:0304", "00001::"],
                          "loadBalancerSourceRanges": ["10.0.0.0/08", "2001:DB8::/32", " 10.0.0.0/8",
                                                       "2001:db8:0:0::/64"]}})),
]

# A claim's data sources (ValidatePersistentVolumeClaimSpec, the claim strategy's
# EnforceDataSourceBackwardsCompatibility and NormalizeDataSources, a dataSourceRef naming a
# namespace dropped with its feature gate off; apiGroup written as null when unset), an
# ephemeral volume's claim template (SetDefaults_PersistentVolumeClaimSpec), and image volumes
# (ImageVolume gate off: dropImageVolumes drops them and their mounts). Server dry runs.
def _ds_claim(name, **sources):
    return json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                       "spec": dict({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                                    **sources)})


_PVC_REF = {"kind": "PersistentVolumeClaim", "name": "x"}
SCENARIOS["claimvolumes"] = [
    (["create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.dataSource} {.spec.dataSourceRef}"],
     _ds_claim(f"ds{i}", **sources))
    for i, sources in enumerate([
        {"dataSource": _PVC_REF}, {"dataSourceRef": _PVC_REF},
        {"dataSource": _PVC_REF, "dataSourceRef": dict(_PVC_REF, name="y")},
        {"dataSource": {"kind": "Foo", "name": "x"}}, {"dataSource": {"kind": "Foo", "name": "x", "apiGroup": "ex.com"}},
        {"dataSourceRef": {"kind": "Foo", "name": "x", "apiGroup": "a/b/c"}}, {"dataSourceRef": {"kind": "0"}},
        {"dataSourceRef": {"name": "100m", "namespace": "-1"}},
        {"dataSource": _PVC_REF, "dataSourceRef": dict(_PVC_REF, namespace="other")},
        {"dataSource": dict(_PVC_REF, apiGroup=""), "dataSourceRef": _PVC_REF}, {"dataSourceRef": {}},
    ])
] + [
    (["create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.volumes[0].ephemeral.volumeClaimTemplate.spec}"],
     json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ds-eph"},
                 "spec": {"containers": [{"name": "c", "image": "busybox"}], "volumes": [{"name": "v", "ephemeral": {
                     "volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "dataSource": _PVC_REF,
                                                      "resources": {"requests": {"storage": "1Gi"}}}}}}]}})),
    (["create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.volumes} {.spec.containers[0].volumeMounts}"],
     json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "img-vol"},
                 "spec": {"containers": [{"name": "c", "image": "busybox", "volumeMounts": [
                     {"name": "img", "mountPath": "/a"}, {"name": "d", "mountPath": "/b"},
                     {"name": "n", "mountPath": "/c"}]}],
                     "volumes": [{"name": "img", "image": {"reference": "busybox"}}, {"name": "d", "emptyDir": {}},
                                 {"name": "n", "image": None, "emptyDir": {}}]}})),
]

# What kube-controller-manager puts in every namespace: the serviceaccount controller's "default"
# ServiceAccount and the root CA publisher's kube-root-ca.crt (its CA differs between servers: only
# its first line is shown), each put back when deleted or changed.
_ROOT_CA = "configmap/kube-root-ca.crt"
_ROOT_CA_KEYS = ("go-template={{range $k, $v := .metadata.annotations}}{{$k}}={{$v}} {{end}}"
                 "{{range $k, $v := .data}}{{$k}}={{slice $v 0 27}} {{end}}{{\"\\n\"}}")
SCENARIOS["namespacedefaults"] = [
    (["wait", "--for=create", "serviceaccount/default", "--timeout=30s"], None),
    (["get", "serviceaccounts"], None),
    (["get", "serviceaccount", "default", "-o", "json"], None),
    (["wait", "--for=create", _ROOT_CA, "--timeout=30s"], None),
    (["get", _ROOT_CA], None),
    (["get", _ROOT_CA, "-o", _ROOT_CA_KEYS], None),
    (["patch", _ROOT_CA, "-o", "go-template={{.metadata.annotations}} {{len .data}}{{\"\\n\"}}", "-p",
      '{"metadata":{"annotations":{"kubernetes.io/description":null,"mine":"1"}},"data":{"extra":"y"}}'], None),
    (["wait", "--for=jsonpath={.metadata.annotations.kubernetes\\.io/description}", _ROOT_CA, "--timeout=30s"], None),
    (["get", _ROOT_CA, "-o", _ROOT_CA_KEYS], None),
    (["delete", "serviceaccount", "default"], None),
    (["wait", "--for=create", "serviceaccount/default", "--timeout=30s"], None),
    (["delete", _ROOT_CA], None),
    (["wait", "--for=create", _ROOT_CA, "--timeout=30s"], None),
    (["get", _ROOT_CA, "-o", _ROOT_CA_KEYS], None),
    (["get", "serviceaccounts", "-o", "name"], None),
]

# The ServiceAccount admission plugin (on by default in kube-apiserver): a pod's account ("default"
# unless it names one) must exist; its token, the cluster CA and the namespace are projected into
# every container unless automountServiceAccountToken (pod first, then account) says no; a mount
# already at the path or a kube-api-access-* volume already there is kept; the account's
# imagePullSecrets go to a pod without any; an account that enforces its mountable secrets refuses
# others. (FIDELITY.md 31: OpenShift's fork projects openshift-service-ca.crt too; scrub drops it.)
_SA_OUT = ("jsonpath={.spec.serviceAccountName} {.spec.volumes} {.spec.initContainers[*].volumeMounts} "
           "{.spec.containers[*].volumeMounts} {.spec.imagePullSecrets}")
_TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
SCENARIOS["serviceaccounts"] = [
    (["wait", "--for=create", "serviceaccount/default", "--timeout=30s"], None),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"], pod("p0", C_NONE)),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     pod("p1", C_NONE * 1 + [{"name": "side", "image": "busybox"}], '"initContainers":[{"name":"init","image":"busybox"}],')),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"], pod("p2", C_NONE, '"automountServiceAccountToken":false,')),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"], pod("p3", C_NONE, '"serviceAccountName":"nobody",')),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     '{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"gen-"},"spec":{"serviceAccount":"nobody",'
     '"containers":[{"name":"main","image":"busybox"}]}}'),
    (["create", "serviceaccount", "quiet"], None),
    (["patch", "serviceaccount", "quiet", "-p",
      '{"automountServiceAccountToken":false,"imagePullSecrets":[{"name":"reg2"},{"name":"reg1"}]}'], None),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"], pod("p4", C_NONE, '"serviceAccountName":"quiet",')),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     pod("p5", C_NONE, '"serviceAccountName":"quiet","automountServiceAccountToken":true,'
                       '"imagePullSecrets":[{"name":"mine"}],')),
    # A container with its own mount at the token path keeps it; the other gets the account's.
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     pod("p6", [{"name": "main", "image": "busybox", "volumeMounts": [{"name": "own", "mountPath": _TOKEN_PATH}]},
                {"name": "side", "image": "busybox"}], '"volumes":[{"name":"own","emptyDir":{}}],')),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     pod("p7", [{"name": "main", "image": "busybox", "volumeMounts": [{"name": "own", "mountPath": _TOKEN_PATH}]}],
         '"volumes":[{"name":"own","emptyDir":{}}],')),
    # A kube-api-access-* volume of the pod's own is the one mounted (and not added again).
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     pod("p8", C_NONE, '"volumes":[{"name":"kube-api-access-mine1","emptyDir":{}}],')),
    (["create", "serviceaccount", "strict"], None),
    (["annotate", "serviceaccount", "strict", "kubernetes.io/enforce-mountable-secrets=true"], None),
    (["annotate", "serviceaccount", "strict", "--overwrite", "kubernetes.io/enforce-mountable-secrets=1"], None),
    (["patch", "serviceaccount", "strict", "-p", '{"secrets":[{"name":"ok"}],"imagePullSecrets":[{"name":"reg"}]}'],
     None),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     pod("p9", C_NONE, '"serviceAccountName":"strict","volumes":[{"name":"s","secret":{"secretName":"ok"}}],')),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     pod("p10", C_NONE, '"serviceAccountName":"strict","volumes":[{"name":"s","secret":{"secretName":"other"}}],')),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     pod("p11", [{"name": "main", "image": "busybox", "envFrom": [{"secretRef": {"name": "other"}}]}],
         '"serviceAccountName":"strict",')),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     pod("p12", [{"name": "main", "image": "busybox",
                  "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]}],
         '"serviceAccountName":"strict","initContainers":[{"name":"init","image":"busybox",'
         '"env":[{"name":"I","valueFrom":{"secretKeyRef":{"name":"other","key":"k"}}}]}],')),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     pod("p13", C_NONE, '"serviceAccountName":"strict","imagePullSecrets":[{"name":"reg"},{"name":"nope"}],')),
    # Mirror pods (a kubelet's static pods) may name no account and no secret.
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"m1","annotations":{"kubernetes.io/config.mirror":"x"}},'
     '"spec":{"nodeName":"n1","containers":[{"name":"main","image":"busybox"}]}}'),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"m2","annotations":{"kubernetes.io/config.mirror":"x"}},'
     '"spec":{"nodeName":"n1","serviceAccountName":"default","containers":[{"name":"main","image":"busybox"}]}}'),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"],
     '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"m3","annotations":{"kubernetes.io/config.mirror":"x"}},'
     '"spec":{"nodeName":"n1","containers":[{"name":"main","image":"busybox",'
     '"envFrom":[{"secretRef":{"name":"s"}}]}]}}'),
    # A controller's pods go through the same plugin; the template does not.
    (["create", "deployment", "web", "--image=busybox"], None),
    (["wait", "--for=create", "pod", "-l", "app=web", "--timeout=30s"], None),
    (["get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].spec.serviceAccountName} "
      "{.items[*].spec.volumes[*].name} {.items[*].spec.containers[*].volumeMounts[*].mountPath}"], None),
    (["get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.volumes}|"
      "{.spec.template.spec.serviceAccountName}|"], None),
    (["delete", "serviceaccount", "quiet"], None),
    (["create", "--dry-run=server", "-o", _SA_OUT, "-f", "-"], pod("p14", C_NONE, '"serviceAccountName":"quiet",')),
]

# pods/eviction (what `kubectl drain` posts): a pod that is Pending is deleted whatever its budget;
# a running one (its status patched Ready, as a kubelet would report it) only when the one budget
# selecting it allows a disruption, which the eviction then uses up; refusals: the budget's 429, a
# pod with two budgets (500), a name that is not the URL's, a pod not there, dry-run options that
# disagree.
def _eviction(name, extra=None):
    return json.dumps(dict({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}, **(extra or {})))


def _running(pod):
    return (["patch", "pod", pod, "--subresource=status", "--type=merge", "-p", json.dumps({"status": {
        "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})], None)


_EVICT = lambda pod: ["create", "--raw", "/api/v1/namespaces/NS/pods/%s/eviction" % pod, "-f", "-"]
_PDB_STATUS = ("jsonpath={.status.currentHealthy} {.status.desiredHealthy} {.status.disruptionsAllowed} "
               "{.status.disruptedPods}")
SCENARIOS["eviction"] = [
    (["create", "-f", "-"], pod("p0", C_NONE)),
    (_EVICT("p0"), _eviction("p0")),
    (["get", "pod", "p0"], None),
    (["create", "-f", "-"], '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","labels":{"app":"e"}},'
                            '"spec":{"containers":[{"name":"main","image":"busybox"}]}}'),
    (["create", "-f", "-"], '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2","labels":{"app":"e"}},'
                            '"spec":{"containers":[{"name":"main","image":"busybox"}]}}'),
    (["create", "pdb", "keep", "--selector=app=e", "--min-available=2"], None),
    # Pending: evicted whatever the budget says.
    (_EVICT("p1"), _eviction("p1", {"deleteOptions": {"dryRun": ["All"]}})),
    (["get", "pod", "p1", "-o", "name"], None),
    _running("p1"),
    _running("p2"),
    (["wait", "--for=jsonpath={.status.currentHealthy}=2", "pdb/keep", "--timeout=30s"], None),
    (["get", "pdb", "keep", "-o", _PDB_STATUS], None),
    (_EVICT("p1"), _eviction("p1")),
    (_EVICT("p1"), _eviction("p2")),
    (_EVICT("nope"), _eviction("nope")),
    (_EVICT("p1"), _eviction("p1", {"deleteOptions": {"dryRun": []}, "apiVersion": "policy/v1beta1"})),
    (["create", "--raw", "/api/v1/namespaces/NS/pods/p1/eviction?dryRun=All", "-f", "-"],
     _eviction("p1", {"deleteOptions": {"dryRun": ["All"]}})),
    (["patch", "pdb", "keep", "--type=merge", "-p", '{"spec":{"minAvailable":1}}'], None),
    (["wait", "--for=jsonpath={.status.disruptionsAllowed}=1", "pdb/keep", "--timeout=30s"], None),
    (["create", "--raw", "/api/v1/namespaces/NS/pods/p1/eviction?dryRun=All", "-f", "-"], _eviction("p1")),
    (["get", "pdb", "keep", "-o", _PDB_STATUS], None),
    (["get", "pod", "p1", "-o", "name"], None),
    (_EVICT("p1"), _eviction("p1")),
    (["get", "pod", "p1", "-o", "name"], None),
    (["wait", "--for=jsonpath={.status.disruptionsAllowed}=0", "pdb/keep", "--timeout=30s"], None),
    (["get", "pdb", "keep", "-o", _PDB_STATUS + " {.status.conditions[0].reason}"], None),
    (_EVICT("p2"), _eviction("p2")),
    (["create", "pdb", "also", "--selector=app=e", "--max-unavailable=1"], None),
    (_EVICT("p2"), _eviction("p2")),
    (["get", "pods", "-o", "name"], None),
]

# serviceaccounts/token (`kubectl create token`) and the tokens it gives, as the service account
# authenticator takes them (`--token` alone, a kubeconfig without the admin's credentials): the
# account's user, uid, groups and the token's jti; a pod-bound token's pod; a token for another
# audience: 401; a binding refused (no such pod, another account's pod, another uid). (The tokens
# themselves differ: kube-apiserver signs with its RSA key, RS256; the
# embedded server with its CA's P-256 key, ES256.)
def _as_token(token, *args):
    return ["--kubeconfig=/dev/null", "--server={SERVER}", "--insecure-skip-tls-verify", "--token={%s}" % token] + list(args)


SCENARIOS["tokens"] = [
    (["wait", "--for=create", "serviceaccount/default", "--timeout=30s"], None),
    (["config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"], None, "capture:SERVER"),
    (["create", "token", "default", "-o", "jsonpath={.kind} {.metadata.name} {.spec} {.status.token}"], None,
     "capture:IGNORED"),
    (["create", "token", "default", "-o", "jsonpath={.kind} {.apiVersion} {.metadata.name} {.metadata.namespace} "
      "{.spec}"], None),
    (["create", "token", "default"], None, "capture:T1"),
    (_as_token("T1", "auth", "whoami"), None),
    (_as_token("T1", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"), None),
    (_as_token("T1", "get", "pods"), None),
    (["create", "token", "default", "--audience=x"], None, "capture:TX"),
    (_as_token("TX", "auth", "whoami"), None),
    (["create", "token", "nope"], None),
    (["create", "token", "default", "--duration=5m"], None),
    (["create", "token", "default", "--audience=x,y", "--duration=20m", "-o", "jsonpath={.spec}"], None),
    (["create", "-f", "-"], pod("p", C_NONE)),
    (["create", "token", "default", "--bound-object-kind=Pod", "--bound-object-name=p", "-o",
      "jsonpath={.spec.boundObjectRef.kind} {.spec.boundObjectRef.name}"], None),
    (["create", "token", "default", "--bound-object-kind=Pod", "--bound-object-name=p"], None, "capture:TP"),
    (_as_token("TP", "auth", "whoami"), None),
    (["create", "token", "default", "--bound-object-kind=Pod", "--bound-object-name=q"], None),
    (["create", "serviceaccount", "other"], None),
    (["create", "token", "other", "--bound-object-kind=Pod", "--bound-object-name=p"], None),
    (["create", "token", "default", "--bound-object-kind=Pod", "--bound-object-name=p",
      "--bound-object-uid=00000000-0000-0000-0000-000000000000"], None),
    (["create", "secret", "generic", "s", "--from-literal=a=b"], None),
    (["create", "token", "default", "--bound-object-kind=Secret", "--bound-object-name=s"], None, "capture:TS"),
    (_as_token("TS", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"), None),
    (["create", "token", "other"], None, "capture:TO"),
    (_as_token("TO", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"), None),
    # (Not compared: a token whose account or bound object is deleted. kube-apiserver keeps a
    # token it authenticated for 10 s and reads accounts and secrets from its informers' caches,
    # so whether it is refused right after depends on timing; FIDELITY.md difference 38.)
]

# The server's tables of the kinds users list most after workloads (pkg/printers/internalversion:
# ConfigMap, Secret, ServiceAccount, ResourceQuota, RoleBinding, ClusterRoleBinding, PriorityClass;
# LimitRange, Role and ClusterRole have none: the default NAME, CREATED AT).
_PRINTED = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}, "data": {"a": "1", "b": "2"},
     "binaryData": {"c": "YWJj"}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}, "type": "Opaque", "data": {"a": "YWJj"}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa1"}, "secrets": [{"name": "s1"}, {"name": "s2"}]},
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "rq1"},
     "spec": {"hard": {"pods": "10", "requests.cpu": "4", "limits.memory": "8Gi", "requests.nvidia.com/gpu": "2"}}},
    {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr1"},
     "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r1"},
     "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                       "metadata": {"name": "rb1", "namespace": "NAMESPACE"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r1"},
     "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
                  {"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"},
                  {"kind": "ServiceAccount", "name": "sa1", "namespace": "NAMESPACE"}]},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "printers-fid-pc"},
     "value": 1000, "preemptionPolicy": "Never"},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "printers-fid-cr"},
     "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "printers-fid-crb"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "printers-fid-cr"},
     "subjects": [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"},
                  {"kind": "ServiceAccount", "name": "sa1", "namespace": "NAMESPACE"}]},
]
_PRINTED_NAMES = ["configmap/cm1", "secret/s1", "serviceaccount/sa1", "resourcequota/rq1", "limitrange/lr1", "role/r1",
                  "rolebinding/rb1", "priorityclass/printers-fid-pc", "clusterrole/printers-fid-cr",
                  "clusterrolebinding/printers-fid-crb"]
_EVENTS = [
    {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "ev1"}, "type": "Normal", "reason": "Pulled",
     "message": "  pulled image  ",
     "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "NAMESPACE", "fieldPath": "spec.containers{main}"},
     "source": {"component": "kubelet", "host": "node-a"}, "firstTimestamp": "2026-01-01T00:00:00Z",
     "lastTimestamp": "2026-01-02T00:00:00Z", "count": 3},
    {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "ev2"}, "type": "Warning",
     "reason": "Failed", "note": "boom", "action": "Starting", "eventTime": "2026-01-01T00:00:00.000001Z",
     "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
     "regarding": {"kind": "Pod", "name": "p2", "namespace": "NAMESPACE"},
     "series": {"count": 4, "lastObservedTime": "2026-01-03T00:00:00.000000Z"}},
    # legacyValidateEvent on core/v1 creates: the involved object's namespace, and with an eventTime
    # the reporting fields (reportingComponent, as core/v1 names it)
    {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "bad1"}, "type": "Normal", "reason": "R",
     "involvedObject": {"kind": "Pod", "name": "p1"}},
    {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "bad2"}, "type": "Normal", "reason": "R",
     "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "elsewhere"}},
    {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "bad3"}, "type": "Normal",
     "eventTime": "2026-01-01T00:00:00.000000Z", "reportingComponent": "Not_Qualified!",
     "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "NAMESPACE"}},
]
SCENARIOS["printers"] = (
    [(["create", "-o", "name", "-f", "-"], json.dumps(o)) for o in _PRINTED + _EVENTS]
    # ... and updates (ValidateEventUpdate's legacy part; core/v1 patches)
    + [(["patch", "event", "ev1", "--type=merge", "-p", p], None) for p in (
        '{"involvedObject":{"namespace":"elsewhere"}}', '{"eventTime":"2026-01-01T00:00:00.000000Z"}')]
    + [(["patch", "event", "ev1", "--type=merge", "-p", '{"message":"  pulled image  ","count":3}', "-o", "name"], None)]
    + [(["get", "events", "-o", "wide"], None), (["get", "events"], None)]
    + [(["wait", "--for=jsonpath={.status.hard.pods}=10", "--timeout=30s", "resourcequota/rq1"], None)]
    + [(["get", n], None) for n in _PRINTED_NAMES]
    + [(["get", n, "-o", "wide"], None) for n in ("rolebinding/rb1", "clusterrolebinding/printers-fid-crb")]
    + [(["delete", n], None) for n in _PRINTED_NAMES[-3:]]
)

# `kubectl auth whoami` (authentication.k8s.io/v1 SelfSubjectReview): the caller as authentication
# and impersonation made it, whatever the body says. Impersonated, so that both servers' answers
# are alike (the admins differ: a token with a uid there, a certificate with its credential id here).
_SSR = '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview","status":{"userInfo":{"username":"forged"}}}'
SCENARIOS["whoami"] = [
    (["auth", "whoami", "--as=bob", "--as-group=devs", "-o", "json"], None),
    (["auth", "whoami", "--as=bob"], None),
    (["create", "--validate=false", "--as=carol", "-o", "json", "-f", "-"], _SSR),
    (["get", "selfsubjectreviews"], None),
    (["explain", "selfsubjectreview.status.userInfo"], None),
]

# `kubectl auth can-i --list` (authorization.k8s.io/v1 SelfSubjectRulesReview): the rules RBAC binds
# to the caller in a namespace. Only rules both servers share are shown: the embedded cluster's
# guide rule (FIDELITY.md difference 4) and the oracle's OpenShift roles (difference 31) add others.
_SSRR = '{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"NAMESPACE"}}'
SCENARIOS["rulesreview"] = [
    (["create", "clusterrole", "rulesreview-fid", "--verb=get,list", "--resource=pods,deployments.apps",
      "--resource-name=x"], None),
    (["create", "rolebinding", "rr", "--clusterrole=rulesreview-fid", "--user=dave"], None),
    (["create", "--validate=false", "--as=dave", "-f", "-", "-o",
      'jsonpath={.status.resourceRules[?(@.resourceNames[0]=="x")]}'], _SSRR),
    (["create", "--validate=false", "--as=dave", "-f", "-", "-o",
      'jsonpath={.status.resourceRules[?(@.verbs[0]=="create")]} {.status.incomplete} {.spec}'], _SSRR),
    (["create", "--validate=false", "--as=erin", "-f", "-", "-o",
      'jsonpath={.status.resourceRules[?(@.resourceNames[0]=="x")]}'], _SSRR),
    (["create", "--validate=false", "-f", "-"],
     '{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{}}'),
    (["get", "selfsubjectrulesreviews"], None),
    (["delete", "clusterrole", "rulesreview-fid"], None),
]

# kubectl rollout of a Deployment: history with the change-cause the controller copies to the new
# ReplicaSet, `rollout undo` taking the earlier ReplicaSet back (FindNewReplicaSet: the same template)
# under a new revision with its revision-history, and an undo to a revision that is not there.
_RS_COLUMNS = ("custom-columns=REV:.metadata.annotations.deployment\\.kubernetes\\.io/revision,"
               "HISTORY:.metadata.annotations.deployment\\.kubernetes\\.io/revision-history,"
               "CAUSE:.metadata.annotations.kubernetes\\.io/change-cause,IMAGE:.spec.template.spec.containers[0].image")
# (not the replicas: the oracle's pods never become available, so its rolling update keeps the old
# ReplicaSet up; see difference 5)
_RS_SORT = "--sort-by=.metadata.annotations.deployment\\.kubernetes\\.io/revision"
_REV = "jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}="
SCENARIOS["rollout"] = [
    (["create", "deployment", "web", "--image=busybox:1"], None),
    (["wait", "--for=" + _REV + "1", "--timeout=30s", "deployment/web"], None),
    (["set", "image", "deployment/web", "busybox=busybox:2"], None),
    (["wait", "--for=" + _REV + "2", "--timeout=30s", "deployment/web"], None),
    (["get", "rs", "-l", "app=web", "-o",
      'jsonpath={.items[?(@.spec.template.spec.containers[0].image=="busybox:2")].metadata.name}'], None, "capture:RS2"),
    (["annotate", "deployment/web", "kubernetes.io/change-cause=bump"], None),
    (["wait", "--for=jsonpath={.metadata.annotations.kubernetes\\.io/change-cause}=bump", "--timeout=30s", "rs/{RS2}"],
     None),
    (["rollout", "history", "deployment/web"], None),
    (["rollout", "undo", "deployment/web"], None),
    (["wait", "--for=" + _REV + "3", "--timeout=30s", "deployment/web"], None),
    (["get", "rs", "-l", "app=web", _RS_SORT, "-o", _RS_COLUMNS], None),
    (["rollout", "history", "deployment/web"], None),
    (["rollout", "undo", "deployment/web", "--to-revision=2"], None),
    (["wait", "--for=" + _REV + "4", "--timeout=30s", "deployment/web"], None),
    (["get", "rs", "-l", "app=web", _RS_SORT, "-o", _RS_COLUMNS], None),
    (["rollout", "undo", "deployment/web", "--to-revision=9"], None),
    (["get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image} {.metadata.annotations}"],
     None),
]

# A Deployment's rollout as the deployment controller paces it (no kubelet in the oracle: each pod
# is made Ready by patching its status, as a kubelet would report it). RollingUpdate with 4
# replicas (maxSurge and maxUnavailable 25%: 1 and 1): the new ReplicaSet grows and the old one
# shrinks only as pods become available; a scale in the middle of it is shared in proportion
# (sync.go scale); pause and resume; Recreate scales the old ReplicaSet to 0 and makes the new one
# only when no old pod is left; revisionHistoryLimit deletes the oldest ReplicaSets; a rollout
# that makes no progress for progressDeadlineSeconds times out.
_RS_REPLICAS = ("custom-columns=REV:.metadata.annotations.deployment\\.kubernetes\\.io/revision,"
                "DESIRED:.spec.replicas,CURRENT:.status.replicas,READY:.status.readyReplicas,"
                "AVAILABLE:.status.availableReplicas,"
                "ANN:.metadata.annotations.deployment\\.kubernetes\\.io/desired-replicas,"
                "MAX:.metadata.annotations.deployment\\.kubernetes\\.io/max-replicas")
_DEP_STATUS = ("jsonpath={.status.replicas} {.status.updatedReplicas} {.status.readyReplicas} "
               "{.status.availableReplicas} {.status.unavailableReplicas} "
               "{.status.conditions[*].type} {.status.conditions[*].status} {.status.conditions[*].reason}")


def _rev_hash(dep, rev, var):
    """Captures the pod-template-hash of `dep`'s ReplicaSet of revision `rev` as {var}."""
    return (["get", "rs", "-l", "app=" + dep, "-o",
             'jsonpath={.items[?(@.metadata.annotations.deployment\\.kubernetes\\.io/revision=="%s")]'
             '.metadata.labels.pod-template-hash}' % rev], None, "capture:" + var)


def _ready_pods(var, n, start=0):
    """Makes the first n pods (by name) of the ReplicaSet whose hash is {var} Ready."""
    steps = []
    for i in range(n):
        name = "%s_P%d" % (var, start + i)
        steps.append((["get", "pods", "-l", "pod-template-hash={%s}" % var, "--sort-by=.metadata.name",
                       "--field-selector=status.phase=Pending", "-o", "jsonpath={.items[0].metadata.name}"], None,
                      "capture:" + name))
        steps.append(_running("{%s}" % name))
    return steps


def _wait_rs(var, replicas):
    return (["wait", "--for=jsonpath={.spec.replicas}=%d" % replicas, "--timeout=30s", "rs", "-l",
             "pod-template-hash={%s}" % var], None)


def _wait_dep(dep, path, value):
    return (["wait", "--for=jsonpath={%s}=%s" % (path, value), "--timeout=30s", "deployment/" + dep], None)


_RECREATE = json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "rec"}, "spec": {
    "replicas": 2, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 1,
    "selector": {"matchLabels": {"app": "rec"}}, "template": {"metadata": {"labels": {"app": "rec"}},
                                                              "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}}})
_SLOW = json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "slow"}, "spec": {
    "replicas": 1, "progressDeadlineSeconds": 2, "selector": {"matchLabels": {"app": "slow"}},
    "template": {"metadata": {"labels": {"app": "slow"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
SCENARIOS["rolling"] = (
    [(["create", "deployment", "web", "--image=busybox:1", "--replicas=4"], None),
     _wait_dep("web", ".status.replicas", "4"),
     _rev_hash("web", "1", "H1")]
    + _ready_pods("H1", 4)
    + [_wait_dep("web", ".status.availableReplicas", "4"),
       (["get", "deployment", "web", "-o", _DEP_STATUS], None),
       (["set", "image", "deployment/web", "busybox=busybox:2"], None),
       _wait_dep("web", ".metadata.annotations.deployment\\.kubernetes\\.io/revision", "2"),
       _rev_hash("web", "2", "H2"),
       _wait_rs("H1", 3), _wait_rs("H2", 2),
       _wait_dep("web", ".status.replicas", "5"),
       (["get", "rs", "-l", "app=web", _RS_SORT, "-o", _RS_REPLICAS], None),
       (["get", "deployment", "web", "-o", _DEP_STATUS], None)]
    + _ready_pods("H2", 1)
    + [_wait_rs("H1", 2), _wait_rs("H2", 3),
       (["get", "rs", "-l", "app=web", _RS_SORT, "-o", _RS_REPLICAS], None),
       # Scaled in the middle of the rollout: the 4 more replicas shared between both ReplicaSets.
       (["scale", "deployment/web", "--replicas=8"], None),
       _wait_dep("web", ".status.observedGeneration", "3"),
       (["wait", "--for=jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/desired-replicas}=8",
         "--timeout=30s", "rs", "-l", "app=web"], None),
       (["get", "rs", "-l", "app=web", _RS_SORT, "-o", _RS_REPLICAS], None),
       (["rollout", "pause", "deployment/web"], None),
       _wait_dep("web", '.status.conditions[?(@.type=="Progressing")].reason', "DeploymentPaused"),
       (["set", "image", "deployment/web", "busybox=busybox:3"], None),
       (["get", "rs", "-l", "app=web", _RS_SORT, "-o", _RS_REPLICAS], None),
       (["get", "deployment", "web", "-o", _DEP_STATUS], None),
       (["rollout", "resume", "deployment/web"], None),
       _wait_dep("web", ".metadata.annotations.deployment\\.kubernetes\\.io/revision", "3"),
       _rev_hash("web", "3", "H3"),
       _wait_rs("H3", 4), _wait_rs("H1", 2),
       _wait_dep("web", ".status.updatedReplicas", "4"),
       (["get", "rs", "-l", "app=web", _RS_SORT, "-o", _RS_REPLICAS], None),
       (["get", "deployment", "web", "-o", _DEP_STATUS], None),
       # Recreate, revisionHistoryLimit 1.
       (["create", "-f", "-"], _RECREATE),
       _wait_dep("rec", ".status.replicas", "2"),
       _rev_hash("rec", "1", "R1")]
    + _ready_pods("R1", 2)
    + [_wait_dep("rec", ".status.availableReplicas", "2"),
       (["set", "image", "deployment/rec", "c=busybox:2"], None),
       _wait_dep("rec", ".metadata.annotations.deployment\\.kubernetes\\.io/revision", "2"),
       _rev_hash("rec", "2", "R2"),
       _wait_dep("rec", ".status.replicas", "2"),
       (["get", "rs", "-l", "app=rec", _RS_SORT, "-o", _RS_REPLICAS], None),
       (["get", "pods", "-l", "app=rec", "-o", "jsonpath={.items[*].metadata.labels.pod-template-hash}"], None)]
    + _ready_pods("R2", 2)
    + [_wait_dep("rec", ".status.availableReplicas", "2"),
       (["set", "image", "deployment/rec", "c=busybox:3"], None),
       _wait_dep("rec", ".metadata.annotations.deployment\\.kubernetes\\.io/revision", "3"),
       _rev_hash("rec", "3", "R3")]
    + _ready_pods("R3", 2)
    + [_wait_dep("rec", ".status.availableReplicas", "2"),
       _wait_dep("rec", '.status.conditions[?(@.type=="Progressing")].reason', "NewReplicaSetAvailable"),
       (["wait", "--for=delete", "--timeout=30s", "rs", "-l", "pod-template-hash={R1}"], None),
       (["get", "rs", "-l", "app=rec", _RS_SORT, "-o", _RS_REPLICAS], None),
       (["get", "deployment", "rec", "-o", _DEP_STATUS], None),
       # No progress for progressDeadlineSeconds.
       (["create", "-f", "-"], _SLOW),
       _wait_dep("slow", ".status.replicas", "1"),
       _rev_hash("slow", "1", "S1"),
       _wait_dep("slow", '.status.conditions[?(@.type=="Progressing")].reason', "ProgressDeadlineExceeded"),
       (["get", "deployment", "slow", "-o", _DEP_STATUS], None),
       (["get", "deployment", "slow", "-o",
         'jsonpath={.status.conditions[?(@.type=="Progressing")].message}'], None),
       (["rollout", "status", "deployment/slow", "--timeout=10s"], None)]
)

# Graceful deletion of pods (rest.BeforeDelete, the pod strategy's CheckGracefulDelete): a pod bound
# to a node is marked (deletionTimestamp now + its grace period, deletionGracePeriodSeconds) and
# shown Terminating until its node's kubelet deletes it; the node here does not exist, so no kubelet
# ever does, on either server. Only a shorter grace period changes the mark; --force
# --grace-period=0 removes it; a finished pod and one on no node go at once.
def _bound_pod(name, extra=None):
    spec = dict({"nodeName": "graceful-fid-nowhere", "containers": [{"name": "c", "image": "busybox"}]}, **(extra or {}))
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


_GRACE = "jsonpath={.metadata.deletionGracePeriodSeconds} {.metadata.deletionTimestamp}"
SCENARIOS["graceful"] = [
    (["create", "-f", "-"], _bound_pod("g1")),
    (["create", "-f", "-"], _bound_pod("g2", {"terminationGracePeriodSeconds": 5})),
    (["create", "-f", "-"], _bound_pod("g3")),
    (["create", "-f", "-"], pod("g4", C_NONE)),
    (["delete", "pod", "g1", "--wait=false"], None),
    (["get", "pod", "g1", "-o", _GRACE], None),
    (["get", "pods", "g1"], None),
    (["delete", "pod", "g1", "--wait=false", "--grace-period=60"], None),
    (["get", "pod", "g1", "-o", _GRACE], None),
    (["delete", "pod", "g1", "--wait=false", "--grace-period=10"], None),
    (["get", "pod", "g1", "-o", _GRACE], None),
    (["delete", "pod", "g1", "--force", "--grace-period=0"], None),
    (["get", "pod", "g1"], None),
    (["delete", "pod", "g2", "--wait=false"], None),
    (["get", "pod", "g2", "-o", _GRACE], None),
    (["delete", "pod", "g2", "--wait=false", "--grace-period=0"], None),
    (["get", "pod", "g2", "-o", "name"], None),
    (["patch", "pod", "g3", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Succeeded"}}', "-o", "name"],
     None),
    (["delete", "pod", "g3", "--wait=false"], None),
    (["get", "pod", "g3", "-o", "name"], None),
    (["delete", "pod", "g4", "--wait=false"], None),
    (["get", "pod", "g4", "-o", "name"], None),
    (["delete", "pod", "g2", "--force", "--grace-period=0"], None),
]

# A Job's pod failure backoff (job_controller.go manageJob, backoff_utils.go): after a failure its
# replacement waits 10 s (doubled for each failure since the last success), counted from when the
# failed pod finished (here its creation: no kubelet reports a finish time); at backoffLimit the Job
# fails. Each pod fails through its status, as a kubelet would report it.
_FLAKY = json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "flaky"}, "spec": {
    "backoffLimit": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}})
_FAIL = '{"status":{"phase":"Failed"}}'
SCENARIOS["jobbackoff"] = [
    (["create", "-f", "-"], _FLAKY),
    (["wait", "--for=jsonpath={.status.active}=1", "--timeout=30s", "job/flaky"], None),
    (["get", "pods", "-l", "job-name=flaky", "-o", "jsonpath={.items[0].metadata.name}"], None, "capture:P1"),
    (["patch", "pod", "{P1}", "--subresource=status", "--type=merge", "-p", _FAIL, "-o", "name"], None),
    (["wait", "--for=jsonpath={.status.failed}=1", "--timeout=30s", "job/flaky"], None),
    (["get", "job", "flaky", "-o", "jsonpath=active={.status.active} failed={.status.failed}"], None),
    (["get", "pods", "-l", "job-name=flaky", "-o", "name"], None),
    (["wait", "--for=jsonpath={.status.active}=1", "--timeout=30s", "job/flaky"], None),
    (["get", "pods", "-l", "job-name=flaky", "--field-selector=status.phase=Pending", "-o",
      "jsonpath={.items[0].metadata.name}"], None, "capture:P2"),
    (["patch", "pod", "{P2}", "--subresource=status", "--type=merge", "-p", _FAIL, "-o", "name"], None),
    (["wait", "--for=condition=Failed", "--timeout=30s", "job/flaky"], None),
    (["get", "job", "flaky", "-o",
      "jsonpath=active={.status.active} failed={.status.failed} {.status.conditions[*].type} "
      "{.status.conditions[*].reason}"], None),
    (["get", "pods", "-l", "job-name=flaky", "--sort-by=.metadata.creationTimestamp", "-o", "name"], None),
]

# The Job controller's tracking (job_controller.go trackJobStatusAndRemoveFinalizers): every pod it
# makes carries batch.kubernetes.io/job-tracking; a finished pod loses it once counted, so the counts
# survive the pod's deletion; a pod deleted before it finishes counts as failed (and its replacement
# waits out the failure backoff); a Job without completions ends with its first
# success once nothing runs; an Indexed Job's completedIndexes; activeDeadlineSeconds (FailureTarget,
# its running pods deleted and counted failed, then Failed); the finalizer taken off the pods of a
# Job deleted in the background or with --cascade=orphan. Pods finish through their status, as a
# kubelet would report it.
def _tjob(name, **spec):
    return json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": dict({
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}, **spec)})


_DONE = '{"status":{"phase":"Succeeded"}}'
_FINALIZERS = 'jsonpath={range .items[*]}{.status.phase} {.metadata.finalizers}{"\\n"}{end}'
_JOBSTATUS = ("jsonpath=active={.status.active} succeeded={.status.succeeded} failed={.status.failed} "
              "terminating={.status.terminating} ready={.status.ready} uncounted={.status.uncountedTerminatedPods} "
              "indexes={.status.completedIndexes} {.status.conditions[*].type} {.status.conditions[*].reason}")


def _pending(job, var, index=None):
    sel = "job-name=" + job + ("" if index is None else ",batch.kubernetes.io/job-completion-index=%d" % index)
    return (["get", "pods", "-l", sel, "--field-selector=status.phase!=Succeeded", "-o",
             "jsonpath={.items[0].metadata.name}"], None, "capture:" + var)


def _succeed(var):
    return (["patch", "pod", "{%s}" % var, "--subresource=status", "--type=merge", "-p", _DONE, "-o", "name"], None)


def _finish(job, var, index=None, until=None):
    """A pod of the Job succeeds (index: the pod of that completion index), then what the Job controller
    makes of it is waited for (`until`: kubectl wait's --for)."""
    return [_pending(job, var, index), _succeed(var), (["wait", "--for=" + until, "--timeout=30s", "job/" + job], None)]


SCENARIOS["jobtracking"] = [
    (["create", "-f", "-"], _tjob("track", parallelism=2, completions=3)),
    (["wait", "--for=jsonpath={.status.active}=2", "--timeout=30s", "job/track"], None),
    (["get", "pods", "-l", "job-name=track", "-o", _FINALIZERS], None),
    *_finish("track", "T1", until="jsonpath={.status.succeeded}=1"),
    (["wait", "--for=jsonpath={.status.active}=2", "--timeout=30s", "job/track"], None),
    (["get", "pod", "{T1}", "-o", "jsonpath={.status.phase} {.metadata.finalizers}"], None),
    (["get", "pods", "-l", "job-name=track", "--sort-by=.status.phase", "-o", _FINALIZERS], None),
    (["delete", "pod", "{T1}"], None),
    (["get", "job", "track", "-o", _JOBSTATUS], None),
    _pending("track", "T2"),
    (["delete", "pod", "{T2}", "--wait=false"], None),
    (["wait", "--for=jsonpath={.status.failed}=1", "--timeout=30s", "job/track"], None),
    (["wait", "--for=jsonpath={.status.terminating}=0", "--timeout=30s", "job/track"], None),
    (["get", "pod", "{T2}", "-o", "name"], None),
    # (Not active: v1.32 reports 0 during the backoff, the embedded controller the running pod as
    # the upstream fix does, FIDELITY.md difference 40.)
    (["get", "job", "track", "-o", _JOBSTATUS.replace("active={.status.active} ", "")], None),
    (["wait", "--for=jsonpath={.status.active}=2", "--timeout=60s", "job/track"], None),
    (["get", "pods", "-l", "job-name=track", "--sort-by=.status.phase", "-o", _FINALIZERS], None),
    (["delete", "job", "track"], None),
    (["wait", "--for=delete", "pod", "-l", "job-name=track", "--timeout=30s"], None),
    (["get", "pods", "-l", "job-name=track", "-o", "name"], None),
    # No completions: the first success ends it once nothing else runs; no pod is made meanwhile.
    (["create", "-f", "-"], _tjob("anyone", parallelism=2)),
    (["wait", "--for=jsonpath={.status.active}=2", "--timeout=30s", "job/anyone"], None),
    *_finish("anyone", "A1", until="jsonpath={.status.succeeded}=1"),
    (["get", "job", "anyone", "-o", _JOBSTATUS], None),
    *_finish("anyone", "A2", until="condition=Complete"),
    (["get", "job", "anyone", "-o", _JOBSTATUS], None),
    (["get", "pods", "-l", "job-name=anyone", "-o", _FINALIZERS], None),
    # Indexed: completedIndexes as intervals.
    (["create", "-f", "-"], _tjob("ix", parallelism=3, completions=3, completionMode="Indexed")),
    (["wait", "--for=jsonpath={.status.active}=3", "--timeout=30s", "job/ix"], None),
    *_finish("ix", "I1", 1, until="jsonpath={.status.succeeded}=1"),
    (["get", "job", "ix", "-o", _JOBSTATUS], None),
    *_finish("ix", "I2", 2, until="jsonpath={.status.succeeded}=2"),
    (["get", "job", "ix", "-o", _JOBSTATUS], None),
    *_finish("ix", "I0", 0, until="condition=Complete"),
    (["get", "job", "ix", "-o", _JOBSTATUS], None),
    # activeDeadlineSeconds: the running pods deleted and counted failed, then Failed.
    (["create", "-f", "-"], _tjob("late", parallelism=2, activeDeadlineSeconds=3)),
    (["wait", "--for=condition=Failed", "--timeout=60s", "job/late"], None),
    (["get", "job", "late", "-o", _JOBSTATUS], None),
    (["get", "pods", "-l", "job-name=late", "-o", "name"], None),
    # --cascade=orphan: the pod keeps running without its owner and loses the finalizer.
    (["create", "-f", "-"], _tjob("orph")),
    (["wait", "--for=jsonpath={.status.active}=1", "--timeout=30s", "job/orph"], None),
    _pending("orph", "O1"),
    (["delete", "job", "orph", "--cascade=orphan"], None),
    (["wait", "--for=delete", "job/orph", "--timeout=30s"], None),
    (["delete", "pod", "{O1}", "--timeout=30s"], None),
    (["get", "events", "--field-selector=involvedObject.kind=Job", "--sort-by=.metadata.creationTimestamp", "-o",
      'jsonpath={range .items[*]}{.involvedObject.name} {.type} {.reason}{"\\n"}{end}'], None, "uniq"),
]

# podFailurePolicy (pod_failure_policy.go matchPodFailurePolicy): a failure its Ignore rule matches
# is not counted (backoffLimit 0 notwithstanding), one its FailJob rule matches fails the Job with the
# rule's message, a condition rule (DisruptionTarget) too. Pods fail through their status, with the
# container's exit code, as a kubelet would report it.
def _fail_with(var, code, extra=None):
    status = {"phase": "Failed", "containerStatuses": [{
        "name": "c", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
        "state": {"terminated": {"exitCode": code, "reason": "Error",
                                 "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:01Z"}}}]}
    if extra:
        status.update(extra)
    return (["patch", "pod", "{%s}" % var, "--subresource=status", "--type=merge", "-p",
             json.dumps({"status": status}), "-o", "name"], None)


_POLICY = {"backoffLimit": 0, "podFailurePolicy": {"rules": [
    {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [42]}},
    {"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "NotIn", "values": [42, 43]}},
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
    {"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue"}]}]}}
SCENARIOS["jobfailurepolicy"] = [
    (["create", "-f", "-"], _tjob("ign", **_POLICY)),
    (["wait", "--for=jsonpath={.status.active}=1", "--timeout=30s", "job/ign"], None),
    _pending("ign", "G1"),
    _fail_with("G1", 42),
    # (Deleted and waited for: it goes once the Job controller has taken its finalizer off.)
    (["delete", "pod", "{G1}", "--timeout=30s"], None),
    (["get", "job", "ign", "-o", _JOBSTATUS], None),
    (["wait", "--for=jsonpath={.status.active}=1", "--timeout=60s", "job/ign"], None),
    _pending("ign", "G2"),
    _fail_with("G2", 43, {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]}),
    (["delete", "pod", "{G2}", "--timeout=30s"], None),
    (["get", "job", "ign", "-o", _JOBSTATUS], None),
    (["wait", "--for=jsonpath={.status.active}=1", "--timeout=60s", "job/ign"], None),
    _pending("ign", "G3"),
    _fail_with("G3", 7),
    (["wait", "--for=condition=Failed", "--timeout=30s", "job/ign"], None),
    (["get", "job", "ign", "-o", _JOBSTATUS], None),
    (["get", "job", "ign", "-o", "jsonpath={.status.conditions[*].message}"], None),
    (["create", "-f", "-"], _tjob("cond", **_POLICY)),
    (["wait", "--for=jsonpath={.status.active}=1", "--timeout=30s", "job/cond"], None),
    _pending("cond", "C1"),
    (["patch", "pod", "{C1}", "--subresource=status", "--type=merge", "-p",
      '{"status":{"phase":"Failed","conditions":[{"type":"ConfigIssue","status":"True"}]}}', "-o", "name"], None),
    (["wait", "--for=condition=Failed", "--timeout=30s", "job/cond"], None),
    (["get", "job", "cond", "-o", _JOBSTATUS], None),
    (["get", "job", "cond", "-o", "jsonpath={.status.conditions[*].message}"], None),
]

# successPolicy (success_policy.go matchSuccessPolicy, JobSuccessPolicy on in v1.32): an Indexed
# Job done when a rule's indexes succeeded (or succeededCount of them), its other pods deleted and
# not counted; SetDefaults_Job's backoffLimit with backoffLimitPerIndex.
SCENARIOS["jobsuccesspolicy"] = [
    (["create", "-f", "-"], _tjob("leader", parallelism=3, completions=3, completionMode="Indexed",
                                  successPolicy={"rules": [{"succeededIndexes": "0"}]})),
    (["wait", "--for=jsonpath={.status.active}=3", "--timeout=30s", "job/leader"], None),
    *_finish("leader", "L1", 1, until="jsonpath={.status.succeeded}=1"),
    (["get", "job", "leader", "-o", _JOBSTATUS], None),
    *_finish("leader", "L0", 0, until="condition=Complete"),
    (["get", "job", "leader", "-o", _JOBSTATUS], None),
    (["get", "job", "leader", "-o", "jsonpath={.status.conditions[*].message}"], None),
    (["get", "pods", "-l", "job-name=leader", "--sort-by=.status.phase", "-o", _FINALIZERS], None),
    (["create", "-f", "-"], _tjob("some", parallelism=4, completions=4, completionMode="Indexed",
                                  successPolicy={"rules": [{"succeededIndexes": "1-3", "succeededCount": 2}]})),
    (["wait", "--for=jsonpath={.status.active}=4", "--timeout=30s", "job/some"], None),
    *_finish("some", "S3", 3, until="jsonpath={.status.succeeded}=1"),
    *_finish("some", "S0", 0, until="jsonpath={.status.succeeded}=2"),
    (["get", "job", "some", "-o", _JOBSTATUS], None),
    *_finish("some", "S1", 1, until="condition=Complete"),
    (["get", "job", "some", "-o", _JOBSTATUS], None),
    (["get", "job", "some", "-o", "jsonpath={.status.conditions[*].message}"], None),
    (["create", "-f", "-", "-o", "jsonpath={.spec.backoffLimit} {.spec.backoffLimitPerIndex}"],
     _tjob("perindex", completions=2, completionMode="Indexed", backoffLimitPerIndex=1)),
]

# backoffLimitPerIndex (JobBackoffLimitPerIndex, on in v1.32): an index's failed pod keeps its
# finalizer until its replacement (job-index-failure-count one more) is made; an index that reaches
# the limit fails and is not run again (failedIndexes); all indexes done with one failed, or more
# failed indexes than maxFailedIndexes, fail the Job.
_PERINDEX = ("jsonpath=active={.status.active} succeeded={.status.succeeded} failed={.status.failed} "
             "failedIndexes={.status.failedIndexes} completed={.status.completedIndexes} "
             "{.status.conditions[*].type} {.status.conditions[*].reason}")


def _index_pod(job, index, var):
    return (["get", "pods", "-l", "job-name=%s,batch.kubernetes.io/job-completion-index=%d" % (job, index),
             "--field-selector=status.phase!=Failed", "-o", "jsonpath={.items[0].metadata.name}"], None, "capture:" + var)


SCENARIOS["jobperindex"] = [
    (["create", "-f", "-"], _tjob("pi", parallelism=2, completions=2, completionMode="Indexed", backoffLimitPerIndex=1)),
    (["wait", "--for=jsonpath={.status.active}=2", "--timeout=30s", "job/pi"], None),
    (["get", "pods", "-l", "job-name=pi", "-o",
      "jsonpath={.items[*].metadata.annotations.batch\\.kubernetes\\.io/job-index-failure-count}"], None),
    _index_pod("pi", 0, "P0"),
    _fail_with("P0", 1),
    (["wait", "--for=jsonpath={.status.failed}=1", "--timeout=30s", "job/pi"], None),
    _index_pod("pi", 0, "P0B"),
    (["get", "pod", "{P0B}", "-o",
      "jsonpath={.metadata.annotations.batch\\.kubernetes\\.io/job-index-failure-count} {.metadata.finalizers}"], None),
    (["get", "pod", "{P0}", "-o", "jsonpath={.status.phase} {.metadata.finalizers}"], None),
    (["get", "job", "pi", "-o", _PERINDEX], None),
    _fail_with("P0B", 1),
    (["wait", "--for=jsonpath={.status.failed}=2", "--timeout=30s", "job/pi"], None),
    (["get", "job", "pi", "-o", _PERINDEX], None),
    (["get", "pods", "-l", "job-name=pi,batch.kubernetes.io/job-completion-index=0", "-o",
      'jsonpath={range .items[*]}{.status.phase} {.metadata.finalizers}{"\\n"}{end}'], None),
    _index_pod("pi", 1, "P1"),
    _succeed("P1"),
    (["wait", "--for=condition=Failed", "--timeout=30s", "job/pi"], None),
    (["get", "job", "pi", "-o", _PERINDEX], None),
    (["create", "-f", "-"], _tjob("mx", parallelism=3, completions=3, completionMode="Indexed", backoffLimitPerIndex=0,
                                  maxFailedIndexes=0)),
    (["wait", "--for=jsonpath={.status.active}=3", "--timeout=30s", "job/mx"], None),
    _index_pod("mx", 2, "M2"),
    _fail_with("M2", 1),
    (["wait", "--for=condition=Failed", "--timeout=30s", "job/mx"], None),
    (["get", "job", "mx", "-o", _PERINDEX], None),
    (["get", "pods", "-l", "job-name=mx", "-o", "name"], None),
]

# A Job's status written through the status subresource (ValidateJobUpdateStatus with the options
# jobStatusStrategy gives while JobManagedBy is on): Jobs another controller manages (spec.managedBy),
# as MultiKueue writes them, so that the Job controller stays out of the way.
def _status(job, status):
    return (["patch", "job", job, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}),
             "-o", "jsonpath={.status}"], None)


_T0, _T1, _T2 = "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z", "2026-01-02T00:00:00Z"
_DONE_CONDS = [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]
SCENARIOS["jobstatus"] = [
    (["create", "-f", "-", "-o", "name"], _tjob("ext", managedBy="example.com/mine", parallelism=2, completions=4)),
    _status("ext", {"active": -1, "succeeded": -2, "ready": -1, "terminating": -3}),
    _status("ext", {"active": 1, "ready": 2}),
    _status("ext", {"uncountedTerminatedPods": {"succeeded": ["a", "a"], "failed": ["", "a", "b"]}}),
    _status("ext", {"completedIndexes": "1", "failedIndexes": "0"}),
    _status("ext", {"completionTime": _T1}),
    _status("ext", {"conditions": [{"type": "Complete", "status": "True"}]}),
    _status("ext", {"conditions": [{"type": "Failed", "status": "True"}, {"type": "Complete", "status": "True"}]}),
    _status("ext", {"startTime": _T1, "completionTime": _T0, "conditions": _DONE_CONDS}),
    _status("ext", {"startTime": _T0, "active": 2, "ready": 1, "succeeded": 2, "failed": 1,
                    "uncountedTerminatedPods": {"succeeded": ["u1"]}}),
    _status("ext", {"failed": 0, "succeeded": 1}),
    _status("ext", {"startTime": _T2}),
    _status("ext", {"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "FailureTarget", "status": "True"}]}),
    _status("ext", {"conditions": _DONE_CONDS, "completionTime": _T1}),
    _status("ext", {"active": 0, "ready": 0, "terminating": 1, "uncountedTerminatedPods": {},
                    "conditions": _DONE_CONDS, "completionTime": _T1}),
    _status("ext", {"active": 0, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {},
                    "conditions": _DONE_CONDS, "completionTime": _T1}),
    _status("ext", {"active": 1, "completionTime": _T2}),
    _status("ext", {"conditions": [{"type": "SuccessCriteriaMet", "status": "False"}]}),
    (["create", "-f", "-", "-o", "name"], _tjob("extix", managedBy="example.com/mine", parallelism=3, completions=3,
                                                completionMode="Indexed", backoffLimitPerIndex=1)),
    _status("extix", {"completedIndexes": "2-1"}),
    _status("extix", {"completedIndexes": "0-5"}),
    _status("extix", {"completedIndexes": "1,0"}),
    _status("extix", {"completedIndexes": "x,1-2-3"}),
    _status("extix", {"completedIndexes": "0-1", "failedIndexes": "1,2"}),
    _status("extix", {"completedIndexes": "0", "failedIndexes": "2"}),
    _status("extix", {"conditions": [{"type": "Failed", "status": "True"}]}),
    _status("extix", {"conditions": [{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}]}),
]

# pods/ephemeralcontainers, what `kubectl debug` patches: an ephemeral container added (defaulted,
# targeting a container); one removed, one with fields an ephemeral container may not have, a
# static (mirror) pod: refused; the subresource serves get, patch and update only (405 otherwise).
# (Changing an existing one is refused too, but kube-apiserver's message then carries cmp.Diff's
# rendering of the Go structs, which is not reproduced: FIDELITY.md difference 34.)
_EPH = "/api/v1/namespaces/NS/pods/p1/ephemeralcontainers"
SCENARIOS["debug"] = [
    (["create", "-f", "-"], pod("p1", [{"name": "p1", "image": "busybox"}])),
    (["debug", "p1", "--image=busybox", "--container=dbg", "--target=p1"], None),
    (["get", "pod", "p1", "-o", "jsonpath={.spec.ephemeralContainers}"], None),
    (["patch", "pod", "p1", "--subresource=ephemeralcontainers", "--type=json", "-p",
      '[{"op":"remove","path":"/spec/ephemeralContainers/0"}]'], None),
    (["patch", "pod", "p1", "--subresource=ephemeralcontainers", "--type=strategic", "-p",
      '{"spec":{"ephemeralContainers":[{"name":"e2","image":"busybox","ports":[{"containerPort":80}],'
      '"resources":{"limits":{"cpu":"1"}},"readinessProbe":{"exec":{"command":["true"]}}}]}}'], None),
    (["patch", "pod", "p1", "--subresource=ephemeralcontainers", "--type=strategic", "-p",
      '{"spec":{"ephemeralContainers":[{"name":"p1","image":"busybox"}]}}'], None),
    (["patch", "pod", "p1", "--subresource=ephemeralcontainers", "--type=merge", "-o",
      "jsonpath={.spec.ephemeralContainers[*].name} {.metadata.labels}", "-p",
      '{"metadata":{"labels":{"x":"y"}},"spec":{"ephemeralContainers":[{"name":"dbg","image":"busybox",'
      '"targetContainerName":"p1","imagePullPolicy":"Always","resources":{},'
      '"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"},'
      '{"name":"e3","image":"busybox"}]}}'], None),
    (["create", "--raw", _EPH, "-f", "-"], "{}"),
    (["delete", "--raw", _EPH], None),
    (["get", "pod", "p1", "-o", "name"], None),
    (["create", "-f", "-"],
     '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"m1","annotations":{"kubernetes.io/config.mirror":"x"}},'
     '"spec":{"nodeName":"debug-fid-nowhere","containers":[{"name":"main","image":"busybox"}]}}'),
    (["debug", "m1", "--image=busybox", "--container=dbg"], None),
    (["delete", "pod", "m1", "--force", "--grace-period=0"], None),
]

# batch/v1 CronJob: the defaulted object and its table, cronJobStrategy's validation (robfig/cron's
# messages, the time zone rules, the job template's rules at spec.jobTemplate.spec, the 52-character
# name), an update, `kubectl create job --from=cronjob/...`, and the CronJob controller: a run at the
# next minute (named <cronjob>-<minutes since the epoch>, the scheduled-timestamp annotation, the
# active list), its Job finished, then removed by a history limit of 0, and the CronJob's deletion
# taking its Jobs with it.
def _cronjob(name="cj", job_spec=None, **spec):
    job = {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}
    job.update(job_spec or {})
    body = dict({"schedule": "0 2 * * *", "jobTemplate": {"spec": job}}, **spec)
    return json.dumps({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name}, "spec": body})


_CJ_ANNOTATION_KEYS = "go-template={{range $k, $v := .metadata.annotations}}{{$k}} {{end}}"
SCENARIOS["cronjob"] = [
    (["create", "-f", "-", "-o", "json"], _cronjob("nightly")),
    (["get", "cronjobs"], None),
    (["get", "cronjob", "nightly", "-o", "wide"], None),
    (["get", "cj", "nightly", "-o", "name"], None),
    (["create", "-f", "-"], _cronjob(schedule="61 * * * *")),
    (["create", "-f", "-"], _cronjob(schedule="@fortnightly")),
    (["create", "-f", "-"], _cronjob(schedule="* * *")),
    (["create", "-f", "-"], _cronjob(schedule="*/0 * * * *")),
    (["create", "-f", "-"], _cronjob(schedule="5-1 * * * MON-XYZ")),
    (["create", "-f", "-"], _cronjob(schedule="TZ=UTC 0 * * * *")),
    (["create", "-f", "-"], _cronjob(schedule="", timeZone="Mars/Olympus", concurrencyPolicy="Sometimes",
                                     startingDeadlineSeconds=-1, successfulJobsHistoryLimit=-1,
                                     failedJobsHistoryLimit=-2)),
    (["create", "-f", "-"], _cronjob(timeZone="Local")),
    (["create", "-f", "-"], _cronjob(timeZone="local")),
    (["create", "-f", "-"], _cronjob(timeZone="")),
    (["create", "-f", "-"], _cronjob(timeZone="../etc/passwd")),
    (["create", "-f", "-"], _cronjob(timeZone="America/New-York-City-Zone")),
    (["create", "-f", "-"], _cronjob(name="x" * 53)),
    (["create", "-f", "-"], _cronjob(job_spec={
        "selector": {"matchLabels": {"a": "b"}}, "manualSelector": True, "backoffLimit": -1, "completions": -1,
        "template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "busybox"}]}}})),
    (["create", "-f", "-"], _cronjob(job_spec={"podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {
        "operator": "In", "values": [1]}}]}})),
    (["create", "-f", "-", "-o", "jsonpath={.spec.timeZone} {.spec.schedule} {.status}"],
     _cronjob("berlin", timeZone="Europe/Berlin", schedule="30 1 * * mon-fri")),
    (["create", "-f", "-", "-o", "name"], _cronjob("hourly", schedule="@hourly")),
    (["patch", "cronjob", "nightly", "--type=merge", "-p", '{"spec":{"suspend":true,"schedule":"*/5 * * * *"}}',
      "-o", "jsonpath={.metadata.generation} {.spec.suspend} {.spec.schedule}"], None),
    (["patch", "cronjob", "nightly", "--type=merge", "-p", '{"spec":{"schedule":"0 0 31 2 *"}}', "-o",
      "jsonpath={.metadata.generation}"], None),
    (["patch", "cronjob", "nightly", "--type=merge", "-p", '{"spec":{"schedule":"bad","timeZone":"Nowhere"}}'],
     None),
    (["get", "cronjob", "nightly", "berlin"], None),
    (["create", "job", "--from=cronjob/nightly", "manual-1", "-o",
      "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.metadata.annotations}"],
     None),
    (["create", "-f", "-", "-o", "name"], _cronjob("minutely", schedule="* * * * *", successfulJobsHistoryLimit=0)),
    (["wait", "--for=jsonpath={.status.active[0].kind}=Job", "--timeout=90s", "cronjob/minutely"], None),
    (["patch", "cronjob", "minutely", "--type=merge", "-p", '{"spec":{"suspend":true}}', "-o", "name"], None),
    (["get", "cronjob", "minutely", "-o", "jsonpath={.status.active[0].name}"], None, "capture:J1"),
    (["get", "cronjob", "minutely", "-o",
      "jsonpath={.status.active[0].apiVersion} {.status.active[0].kind} {.status.active[0].namespace}"], None),
    (["get", "job", "{J1}", "-o", _CJ_ANNOTATION_KEYS], None),
    (["get", "job", "{J1}", "-o",
      "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.spec.template.spec.restartPolicy}"],
     None),
    (["wait", "--for=jsonpath={.status.active}=1", "--timeout=30s", "job/{J1}"], None),
    (["get", "pods", "-l", "job-name={J1}", "-o", "jsonpath={.items[0].metadata.name}"], None, "capture:P1"),
    (["patch", "pod", "{P1}", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Succeeded"}}', "-o",
      "name"], None),
    (["wait", "--for=delete", "job/{J1}", "--timeout=60s"], None, "capture:waited"),
    (["get", "cronjob", "minutely", "-o",
      "go-template={{if .status.active}}active{{else}}none active{{end}} {{if .status.lastSuccessfulTime}}succeeded{{end}}"], None),
    (["delete", "cronjob", "nightly"], None),
    (["wait", "--for=delete", "job/manual-1", "--timeout=60s"], None, "capture:waited"),
    (["delete", "cronjob", "minutely", "berlin", "hourly"], None),
]

# apps/v1 DaemonSet's controller: a pod for each node it should run on (the template's nodeSelector,
# the nodes' NoSchedule and NoExecute taints against the template's tolerations and the daemon
# tolerations it adds), pinned by a metadata.name node affinity and placed by the scheduler; a node
# untainted gets its pod, a NoExecute taint takes it away; the ControllerRevision and the rolling
# update of a new template (maxUnavailable 1: the old pod deleted, the new one only once it is gone,
# which without a kubelet is never); the status counts; deletion. Pods never run: the oracle has no
# kubelet, and the nodes tell the embedded server's simulated one it is stopped.
def _ds(name, image="busybox", tolerations=None):
    spec = {"nodeSelector": {"dsfid": "yes"}, "containers": [{"name": "c", "image": image}]}
    if tolerations:
        spec["tolerations"] = tolerations
    return json.dumps({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}})


_DS_STATUS = ("jsonpath=desired={.status.desiredNumberScheduled} current={.status.currentNumberScheduled} "
              "misscheduled={.status.numberMisscheduled} ready={.status.numberReady} "
              "updated={.status.updatedNumberScheduled} unavailable={.status.numberUnavailable} "
              "observed={.status.observedGeneration}")
_DS_PODS = ("go-template={{range .items}}{{.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms}} {{index .metadata.labels \"pod-template-generation\"}} {{len .spec.tolerations}}"
            "{{\"\\n\"}}{{end}}")


def daemonset_steps():
    steps = []
    for name, taints in [("ds-fid-a", []), ("ds-fid-b", [{"key": "gpu_node", "value": "invalid", "effect": "NoSchedule"}]),
                         ("ds-fid-c", [{"key": "noexec", "value": "1", "effect": "NoExecute"}])]:
        # (No kubelet on the oracle's nodes; the embedded server's simulated one is told it is stopped.)
        no_kubelet = json.loads(node(name, {"dsfid": "yes"}, taints))
        no_kubelet["metadata"]["annotations"] = {"gpupool.io/simulate-kubelet": "stopped"}
        steps += [
            (["create", "-f", "-", "-o", "name"], json.dumps(no_kubelet)),
            (["patch", "node", name, "--subresource=status", "--type=merge", "-p", node_status(0), "-o", "name"], None),
            (["taint", "node", name, "node.kubernetes.io/not-ready:NoSchedule-"], None),
        ]
    steps += [
        (["create", "-f", "-", "-o", "name"], _ds("agent")),
        (["create", "-f", "-", "-o", "name"], _ds("gpu-agent", tolerations=[{"key": "gpu_node", "operator": "Exists"}])),
        (["wait", "--for=jsonpath={.status.desiredNumberScheduled}=1", "--timeout=30s", "ds/agent"], None),
        (["wait", "--for=jsonpath={.status.currentNumberScheduled}=2", "--timeout=30s", "ds/gpu-agent"], None),
        (["get", "ds", "agent", "-o", _DS_STATUS], None),
        (["get", "ds", "gpu-agent", "-o", _DS_STATUS], None),
        (["get", "pods", "-l", "app=gpu-agent", "--sort-by=.spec.affinity.nodeAffinity."
          "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values[0]", "-o",
          _DS_PODS], None),
        (["get", "pods", "-l", "app=agent", "-o", "jsonpath={.items[0].spec.tolerations}"], None),
        (["get", "pods", "-l", "app=agent", "-o",
          "go-template={{range .items}}{{range $k, $v := .metadata.labels}}{{$k}} {{end}}{{end}}"], None),
        (["wait", "--for=condition=PodScheduled", "--timeout=30s", "pod", "-l", "app=agent"], None, "capture:waited"),
        (["get", "pods", "-l", "app=agent", "-o", "jsonpath={.items[*].spec.nodeName}"], None),
        (["get", "controllerrevisions", "-l", "app=agent", "-o",
          "jsonpath={.items[*].revision} {.items[*].metadata.ownerReferences[0].kind}"], None),
        # The NoExecute taint removed from node c: agent runs there too.
        (["taint", "node", "ds-fid-c", "noexec-"], None),
        (["wait", "--for=jsonpath={.status.currentNumberScheduled}=2", "--timeout=30s", "ds/agent"], None),
        (["get", "ds", "agent", "-o", _DS_STATUS], None),
        # A NoExecute taint on node a: its daemon pod goes.
        (["taint", "node", "ds-fid-a", "evict=now:NoExecute"], None),
        (["wait", "--for=jsonpath={.status.desiredNumberScheduled}=1", "--timeout=30s", "ds/agent"], None),
        (["wait", "--for=jsonpath={.status.currentNumberScheduled}=1", "--timeout=30s", "ds/agent"], None),
        (["get", "ds", "agent", "-o", _DS_STATUS], None),
        # A new template: the old pod (never available) is replaced at once, a second revision.
        (["set", "image", "ds/agent", "c=busybox:2", "-o", "name"], None),
        (["wait", "--for=jsonpath={.status.updatedNumberScheduled}=1", "--timeout=30s", "ds/agent"], None),
        (["get", "pods", "-l", "app=agent", "-o", "jsonpath={.items[*].spec.containers[0].image}"], None),
        (["get", "controllerrevisions", "-l", "app=agent", "--sort-by=.revision", "-o",
          "jsonpath={.items[*].revision}"], None),
        (["get", "ds", "agent", "-o", _DS_STATUS], None),
        # Deleted: its pods are marked for deletion, and stay Terminating (their nodes have no kubelet).
        (["delete", "ds", "agent", "gpu-agent"], None),
        (["get", "pods", "-l", "app in (agent,gpu-agent)", "-o",
          "go-template={{range .items}}{{if .metadata.deletionTimestamp}}terminating {{end}}{{end}}"], None),
        (["delete", "node", "ds-fid-a", "ds-fid-b", "ds-fid-c"], None),
    ]
    return steps


SCENARIOS["daemonset"] = daemonset_steps()

# apps/v1 StatefulSet's controller: OrderedReady makes <set>-0 and waits for it to be ready (no
# pod here ever is: they fit no node), with its claim from volumeClaimTemplates, its identity
# (hostname, subdomain, the pod-name and pod-index labels) and the ControllerRevision; Parallel makes
# every replica at once and scales down from the highest ordinal; a rolling update with a partition
# replaces the highest ordinal first and waits for it; the claims outlive the set (Retain).
def _sts(name, replicas, policy="OrderedReady", claims=False, partition=None):
    spec = {"replicas": replicas, "serviceName": name + "-svc", "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"nodeSelector": {"sts-fid": "nowhere"}, "containers": [{"name": "c", "image": "busybox"}]}}}
    if claims:
        spec["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    if partition is not None:
        spec["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}}
    return json.dumps({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name}, "spec": spec})


_STS_STATUS = ("go-template=replicas={{.status.replicas}} ready={{.status.readyReplicas}} "
               "current={{.status.currentReplicas}} updated={{.status.updatedReplicas}} "
               "available={{.status.availableReplicas}} observed={{.status.observedGeneration}} "
               "{{if eq .status.currentRevision .status.updateRevision}}one revision{{else}}two revisions{{end}}")
_STS_PODS = ["-o", "custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image,"
             "HOST:.spec.hostname,SUB:.spec.subdomain", "--sort-by=.metadata.name"]
SCENARIOS["statefulset"] = [
    (["create", "-f", "-", "-o", "name"], _sts("web", 2, claims=True)),
    (["wait", "--for=jsonpath={.status.replicas}=1", "--timeout=30s", "sts/web"], None),
    (["get", "pods", "-l", "app=web"] + _STS_PODS, None),
    (["get", "pvc", "-l", "app=web", "-o", "name"], None),
    (["get", "pod", "web-0", "-o",
      "go-template={{range $k, $v := .metadata.labels}}{{$k}}={{if eq $k \"controller-revision-hash\"}}<rev>"
      "{{else}}{{$v}}{{end}} {{end}}{{.metadata.generateName}} {{range .spec.volumes}}{{.name}}:"
      "{{if .persistentVolumeClaim}}{{.persistentVolumeClaim.claimName}}{{end}} {{end}}"], None),
    (["get", "sts", "web", "-o", _STS_STATUS], None),
    (["get", "events", "--field-selector", "involvedObject.name=web", "-o",
      "custom-columns=REASON:.reason,MESSAGE:.message", "--sort-by=.message"], None),
    (["get", "controllerrevisions", "-l", "app=web", "-o", "jsonpath={.items[*].revision}"], None),
    (["create", "-f", "-", "-o", "name"], _sts("par", 3, policy="Parallel", partition=1)),
    (["wait", "--for=jsonpath={.status.replicas}=3", "--timeout=30s", "sts/par"], None),
    (["get", "pods", "-l", "app=par"] + _STS_PODS, None),
    (["scale", "sts", "par", "--replicas=1"], None),
    (["wait", "--for=jsonpath={.status.replicas}=1", "--timeout=30s", "sts/par"], None),
    (["get", "pods", "-l", "app=par"] + _STS_PODS, None),
    (["scale", "sts", "par", "--replicas=3"], None),
    (["wait", "--for=jsonpath={.status.replicas}=3", "--timeout=30s", "sts/par"], None),
    (["set", "image", "sts/par", "c=busybox:2", "-o", "name"], None),
    (["wait", "--for=jsonpath={.status.updatedReplicas}=1", "--timeout=30s", "sts/par"], None),
    (["get", "pods", "-l", "app=par"] + _STS_PODS, None),
    (["get", "sts", "par", "-o", _STS_STATUS], None),
    (["get", "sts", "web", "par"], None),
    (["delete", "sts", "web", "par"], None),
    (["wait", "--for=delete", "pod/web-0", "--timeout=30s"], None, "capture:waited"),
    (["get", "pvc", "-o", "name"], None),
]

# Adoption and release (pkg/controller/controller_ref_manager.go): a StatefulSet, ReplicaSet and
# DaemonSet deleted with --cascade=orphan and made again (the StatefulSet with another serviceName,
# an immutable field) take the same pods and ControllerRevision back; a pod whose labels no longer
# match is released (no ownerReferences left) and replaced. Captured uids show which owner is whose.
def _rs_adopt(name, replicas):
    return json.dumps({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"nodeSelector": {"sts-fid": "nowhere"}, "containers": [{"name": "c", "image": "busybox"}]}}}})


def _sts_adopt(service):
    sts = json.loads(_sts("web", 2, policy="Parallel"))
    sts["spec"]["serviceName"] = service
    return json.dumps(sts)


_OWNED = ["-o", "custom-columns=NAME:.metadata.name,UID:.metadata.uid,OWNER:.metadata.ownerReferences[*].uid,"
          "KIND:.metadata.ownerReferences[*].kind,CONTROLLER:.metadata.ownerReferences[*].controller,"
          "BLOCK:.metadata.ownerReferences[*].blockOwnerDeletion", "--sort-by=.metadata.name"]


def adoption_steps():
    steps = [
        (["create", "-f", "-", "-o", "name"], _sts_adopt("web-svc")),
        (["wait", "--for=jsonpath={.status.replicas}=2", "--timeout=30s", "sts/web"], None),
        (["get", "pod", "web-0", "-o", "jsonpath={.metadata.uid}"], None, "capture:POD0"),
        (["get", "pod", "web-1", "-o", "jsonpath={.metadata.uid}"], None, "capture:POD1"),
        (["get", "controllerrevisions", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}"], None,
         "capture:REV"),
        (["get", "controllerrevisions", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.uid}"], None,
         "capture:REVUID"),
        (["delete", "sts", "web", "--cascade=orphan"], None),
        (["get", "pods", "-l", "app=web"] + _OWNED, None),
        (["get", "controllerrevisions", "-l", "app=web"] + _OWNED, None),
        (["create", "-f", "-", "-o", "name"], _sts_adopt("web-svc2")),
        (["get", "sts", "web", "-o", "jsonpath={.metadata.uid}"], None, "capture:SET2"),
        (["wait", "--for=jsonpath={.status.replicas}=2", "--timeout=30s", "sts/web"], None),
        (["get", "pods", "-l", "app=web"] + _OWNED, None),
        (["get", "controllerrevisions", "-l", "app=web"] + _OWNED, None),
        (["get", "controllerrevisions", "-l", "app=web", "-o", "jsonpath={.items[*].revision}"], None),
        (["get", "sts", "web", "-o", _STS_STATUS + " {{.status.currentRevision}} {{.status.updateRevision}}"], None),
        # A ReplicaSet: the same.
        (["create", "-f", "-", "-o", "name"], _rs_adopt("front", 2)),
        (["wait", "--for=jsonpath={.status.replicas}=2", "--timeout=30s", "rs/front"], None),
        (["get", "pods", "-l", "app=front", "-o", "jsonpath={.items[0].metadata.name}"], None, "capture:F0"),
        (["get", "pods", "-l", "app=front", "-o", "jsonpath={.items[1].metadata.name}"], None, "capture:F1"),
        (["delete", "rs", "front", "--cascade=orphan"], None),
        (["get", "pods", "-l", "app=front"] + _OWNED, None),
        (["create", "-f", "-", "-o", "name"], _rs_adopt("front", 2)),
        (["get", "rs", "front", "-o", "jsonpath={.metadata.uid}"], None, "capture:RS2"),
        (["wait", "--for=jsonpath={.status.replicas}=2", "--timeout=30s", "rs/front"], None),
        (["get", "pods", "-l", "app=front"] + _OWNED, None),
        # A pod relabelled out of the selector is released and replaced (scaled to 3 to have a
        # status that only the release and the replacements reach).
        (["label", "pod", "{F0}", "app=moved", "--overwrite"], None),
        (["scale", "rs", "front", "--replicas=3"], None),
        (["wait", "--for=jsonpath={.status.observedGeneration}=2", "--timeout=30s", "rs/front"], None),
        (["wait", "--for=jsonpath={.status.replicas}=3", "--timeout=30s", "rs/front"], None),
        (["get", "pod", "{F0}"] + _OWNED, None),
        (["get", "pods", "-l", "app=front", "-o",
          "go-template={{range .items}}{{(index .metadata.ownerReferences 0).uid}}{{\"\\n\"}}{{end}}"], None),
    ]
    # A DaemonSet on one node (no kubelet on the oracle's; the embedded one is told it is stopped).
    no_kubelet = json.loads(node("adopt-fid-a", {"dsfid": "adopt"}, []))
    no_kubelet["metadata"]["annotations"] = {"gpupool.io/simulate-kubelet": "stopped"}
    ds = json.loads(_ds("agent"))
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"dsfid": "adopt"}
    steps += [
        (["create", "-f", "-", "-o", "name"], json.dumps(no_kubelet)),
        (["patch", "node", "adopt-fid-a", "--subresource=status", "--type=merge", "-p", node_status(0), "-o", "name"],
         None),
        (["taint", "node", "adopt-fid-a", "node.kubernetes.io/not-ready:NoSchedule-"], None),
        (["create", "-f", "-", "-o", "name"], json.dumps(ds)),
        (["wait", "--for=jsonpath={.status.currentNumberScheduled}=1", "--timeout=30s", "ds/agent"], None),
        (["get", "pods", "-l", "app=agent", "-o", "jsonpath={.items[0].metadata.name}"], None, "capture:D0"),
        (["get", "controllerrevisions", "-l", "app=agent", "-o", "jsonpath={.items[0].metadata.name}"], None,
         "capture:DREV"),
        (["delete", "ds", "agent", "--cascade=orphan"], None),
        (["get", "pods", "-l", "app=agent"] + _OWNED, None),
        (["create", "-f", "-", "-o", "name"], json.dumps(ds)),
        (["get", "ds", "agent", "-o", "jsonpath={.metadata.uid}"], None, "capture:DS2"),
        (["wait", "--for=jsonpath={.status.currentNumberScheduled}=1", "--timeout=30s", "ds/agent"], None),
        (["get", "pods", "-l", "app=agent"] + _OWNED, None),
        (["get", "controllerrevisions", "-l", "app=agent"] + _OWNED, None),
        (["get", "ds", "agent", "-o", _DS_STATUS], None),
        (["delete", "ds", "agent", "--cascade=orphan"], None),
        (["delete", "pods", "-l", "app=agent", "--force", "--grace-period=0"], None),
        (["delete", "node", "adopt-fid-a"], None),
    ]
    return steps


SCENARIOS["adoption"] = adoption_steps()

# The pod garbage collector (pkg/controller/podgc, v1.32): an unscheduled pod being deleted is
# marked Failed (gcUnscheduledTerminating, within its 20 s period); the pods of a deleted node are
# marked Failed with the DisruptionTarget condition DeletionByPodGC and deleted with a grace of 0
# after the 40 s quarantine (gcOrphaned). Finalizers keep two of them to look at.
def _gc_pod(name, node_name=None, finalizer=False):
    spec = {"containers": [{"name": "c", "image": "busybox"}]}
    if node_name:
        spec["nodeName"] = node_name
    else:
        spec["nodeSelector"] = {"sts-fid": "nowhere"}
    md = {"name": name}
    if finalizer:
        md["finalizers"] = ["example.com/hold"]
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec})


_GC_SHOW = ["-o", "jsonpath={.status.phase} {.metadata.deletionGracePeriodSeconds} {.status.conditions}"]
_NO_FINALIZERS = ["--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]', "-o", "name"]


def podgc_steps():
    no_kubelet = json.loads(node("podgc-fid-a", {"podgc": "yes"}, []))
    no_kubelet["metadata"]["annotations"] = {"gpupool.io/simulate-kubelet": "stopped"}
    return [
        (["create", "-f", "-", "-o", "name"], json.dumps(no_kubelet)),
        (["create", "-f", "-", "-o", "name"], _gc_pod("held", "podgc-fid-a", finalizer=True)),
        (["create", "-f", "-", "-o", "name"], _gc_pod("free", "podgc-fid-a")),
        (["create", "-f", "-", "-o", "name"], _gc_pod("unscheduled", finalizer=True)),
        (["wait", "--for=condition=PodScheduled=false", "--timeout=30s", "pod/unscheduled"], None),
        (["delete", "pod", "unscheduled", "--wait=false"], None),
        (["wait", "--for=jsonpath={.status.phase}=Failed", "--timeout=60s", "pod/unscheduled"], None),
        (["get", "pod", "unscheduled", "-o",
          'jsonpath={.status.phase} {.metadata.deletionGracePeriodSeconds} '
          '{.status.conditions[?(@.type=="DisruptionTarget")]}'], None),
        (["get", "pod", "held"] + _GC_SHOW, None),
        (["delete", "node", "podgc-fid-a"], None),
        (["wait", "--for=delete", "pod/free", "--timeout=120s"], None),
        (["get", "pod", "held"] + _GC_SHOW, None),
        (["get", "pods"], None),
        (["patch", "pod", "held"] + _NO_FINALIZERS, None),
        (["patch", "pod", "unscheduled"] + _NO_FINALIZERS, None),
        (["get", "pods"], None),
    ]


SCENARIOS["podgc"] = podgc_steps()

# The garbage collector's attemptToDeleteItem (garbagecollector.go classifyReferences): an object
# none of whose owners exists (no such name, another uid) is deleted; one with an owner that exists
# loses its references to absent owners; one naming a kind that is not served is left alone.
def _cm_owned(name, refs):
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "ownerReferences": refs}})


_GHOST = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "11111111-2222-3333-4444-555555555555"}
SCENARIOS["danglingowners"] = [
    (["create", "configmap", "owner", "-o", "name"], None),
    (["get", "configmap", "owner", "-o", "jsonpath={.metadata.uid}"], None, "capture:OWNER"),
    (["create", "-f", "-", "-o", "name"], _cm_owned("dangling", [_GHOST])),
    (["create", "-f", "-", "-o", "name"], _cm_owned("wronguid", [dict(_GHOST, name="owner")])),
    (["create", "-f", "-", "-o", "name"],
     _cm_owned("unknownkind", [dict(_GHOST, apiVersion="example.com/v1", kind="Foo")])),
    (["create", "configmap", "mixed", "-o", "name"], None),
    (["patch", "configmap", "mixed", "--type=json", "-o", "name", "-p",
      '[{"op":"add","path":"/metadata/ownerReferences","value":[%s,{"apiVersion":"v1","kind":"ConfigMap",'
      '"name":"owner","uid":"{OWNER}"}]}]' % json.dumps(_GHOST)], None),
    (["wait", "--for=delete", "configmap/dangling", "configmap/wronguid", "--timeout=30s"], None, "capture:waited"),
    (["wait", "--for=jsonpath={.metadata.ownerReferences[0].name}=owner", "configmap/mixed", "--timeout=30s"], None),
    (["get", "configmap", "owner", "mixed", "unknownkind", "-o",
      "custom-columns=NAME:.metadata.name,OWNERS:.metadata.ownerReferences[*].name,"
      "UIDS:.metadata.ownerReferences[*].uid"], None),
    (["get", "configmap", "dangling", "wronguid", "-o", "name"], None),
]

# coordination.k8s.io/v1 Lease (leader election): the stored object (renewTime and acquireTime
# as MicroTime), the table, ValidateLeaseSpec, the fields of the CoordinatedLeaderElection gate
# (off in v1.32) dropped, an update without a resourceVersion refused (AllowUnconditionalUpdate
# false), a PUT of a missing lease creating it (AllowCreateOnUpdate).
def _lease(name, **spec):
    return json.dumps({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
                       "spec": spec})


SCENARIOS["lease"] = [
    (["create", "-f", "-", "-o", "json"],
     _lease("l1", holderIdentity="me", leaseDurationSeconds=15, acquireTime="2026-01-01T00:00:00.000000Z",
            renewTime="2026-01-01T01:00:05.500000+01:00", leaseTransitions=0)),
    (["get", "lease", "l1", "-o",
      'go-template={{if eq .spec.renewTime "2026-01-01T00:00:05.500000Z"}}in UTC{{else}}{{.spec.renewTime}}{{end}}'],
     None),
    # metav1.Time too: stored in UTC, the fraction dropped.
    (["create", "-f", "-", "-o", 'go-template={{if eq .firstTimestamp "2026-01-01T00:00:00Z"}}in UTC{{else}}'
      '{{.firstTimestamp}}{{end}} {{if eq .lastTimestamp "2026-01-01T00:00:00Z"}}truncated{{else}}{{.lastTimestamp}}'
      '{{end}}'],
     json.dumps({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "lease-fid-e1"},
                 "involvedObject": {"kind": "Pod", "name": "x", "namespace": "NAMESPACE"}, "reason": "R",
                 "message": "m", "firstTimestamp": "2026-01-01T01:00:00+01:00",
                 "lastTimestamp": "2026-01-01T00:00:00.9Z"})),
    (["get", "leases"], None),
    (["create", "-f", "-"], _lease("bad", leaseDurationSeconds=0, leaseTransitions=-1)),
    (["create", "-f", "-"], _lease("bad", renewTime="yesterday")),
    (["create", "-f", "-"], _lease("bad", acquireTime="2026-01-01T00:00:00Z")),
    (["create", "-f", "-", "-o", "jsonpath={.spec}"],
     _lease("l2", holderIdentity="x", strategy="OldestEmulationVersion", preferredHolder="x")),
    (["replace", "--raw", "/apis/coordination.k8s.io/v1/namespaces/NS/leases/l1", "-f", "-"],
     _lease("l1", holderIdentity="you")),
    (["replace", "-f", "-", "-o", "jsonpath={.spec.holderIdentity}"], _lease("l3", holderIdentity="new")),
    (["patch", "lease", "l1", "--type=merge", "-p", '{"spec":{"holderIdentity":"you","leaseTransitions":1}}', "-o",
      "jsonpath={.spec.holderIdentity} {.spec.leaseTransitions} {.spec.renewTime}"], None),
    (["get", "leases", "l1", "l2", "l3"], None),
    (["delete", "lease", "l1", "l2", "l3"], None),
]

# apps/v1 DaemonSet and ControllerRevision, the API side: the defaulted object (SetDefaults_DaemonSet,
# the pod template's defaults, the templateGeneration annotation apps/v1 carries), its managed
# fields, the table (a node selector no node matches: the controller schedules nothing on either
# server), ValidateDaemonSetSpec's refusals, the immutable selector, generation and
# templateGeneration on updates, the template's warnings (and no DNS-label warning for the name);
# a ControllerRevision written by hand: its data rules, its table with a controller reference, its
# immutable data. Nothing shown depends on the DaemonSet controller's status or revisions.
def _ds(name="ds1", selector=None, labels=None, pod=None, meta=None, **spec):
    tpl = {"metadata": {"labels": {"app": "ds"} if labels is None else labels},
           "spec": dict({"containers": [{"name": "c", "image": "busybox"}]}, **(pod or {}))}
    body = dict({"selector": {"matchLabels": {"app": "ds"}} if selector is None else selector, "template": tpl},
                **spec)
    if selector == "none":
        del body["selector"]
    return json.dumps({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": dict({"name": name}, **(meta or {})),
                       "spec": body})


def _cr(name, **fields):
    return json.dumps(dict({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": name}},
                           **fields))


_DS_NOWHERE = {"nodeSelector": {"gpupool.dev/fidelity": "nowhere", "beta.kubernetes.io/arch": "amd64"}}
_DS_TG = "jsonpath={.metadata.generation} {.metadata.annotations}"
SCENARIOS["daemonsetapi"] = [
    (["create", "-f", "-", "-o", "json"], _ds(pod=_DS_NOWHERE)),
    (["get", "ds", "ds1", "-o",
      'jsonpath={.metadata.managedFields[?(@.manager=="kubectl-create")].fieldsV1}'], None),
    (["get", "ds", "ds1", "-o", "wide"], None),
    (["get", "daemonset", "ds1", "-o", "custom-columns=NAME:.metadata.name,SELECTOR:.spec.selector,"
      "STRATEGY:.spec.updateStrategy.type,HISTORY:.spec.revisionHistoryLimit"], None),
    (["create", "-f", "-", "-o", "jsonpath={.metadata.name} {.metadata.annotations}"], _ds("ds.dot")),
    (["create", "-f", "-", "-o", _DS_TG],
     _ds("ds-tg", meta={"annotations": {"deprecated.daemonset.template.generation": "5"}})),
    (["create", "-f", "-", "-o", _DS_TG],
     _ds("ds-tgneg", meta={"annotations": {"deprecated.daemonset.template.generation": "-3"}})),
    (["create", "-f", "-"], _ds("bad", meta={"annotations": {"deprecated.daemonset.template.generation": "abc"}})),
    (["create", "-f", "-", "-o", "jsonpath={.spec.updateStrategy}"],
     _ds("ds-ondelete", updateStrategy={"type": "OnDelete", "rollingUpdate": {"maxSurge": 1}})),
    (["create", "-f", "-"], _ds("bad", selector="none")),
    (["create", "-f", "-"], _ds("bad", selector={"matchLabels": {"app": "other"}})),
    (["create", "-f", "-"], _ds("bad", selector={})),
    (["create", "-f", "-"], _ds("bad", selector={"matchExpressions": [{"key": "app", "operator": "Bogus"}]})),
    (["create", "-f", "-"], _ds("bad", selector={"matchLabels": {"a b": "c"}}, labels={"a b": "c"})),
    (["create", "-f", "-"], _ds("bad", pod={"restartPolicy": "OnFailure"})),
    (["create", "-f", "-"], _ds("bad", pod={"activeDeadlineSeconds": 5})),
    (["create", "-f", "-"], _ds("bad", updateStrategy={"type": "Sometimes"})),
    (["create", "-f", "-"], _ds("bad", updateStrategy={"type": "Sometimes", "rollingUpdate": {"maxSurge": 1}})),
    (["create", "-f", "-"], _ds("bad", updateStrategy={"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}})),
    (["create", "-f", "-"], _ds("bad", updateStrategy={"rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}})),
    (["create", "-f", "-"], _ds("bad", updateStrategy={"rollingUpdate": {"maxUnavailable": "150%", "maxSurge": "x"}})),
    (["create", "-f", "-"], _ds("bad", updateStrategy={"rollingUpdate": {"maxUnavailable": -1, "maxSurge": "200%"}})),
    (["create", "-f", "-"], _ds("bad", minReadySeconds=-1, revisionHistoryLimit=-2)),
    (["create", "-f", "-"], _ds("Bad.Name")),
    (["create", "-f", "-"],
     json.dumps({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "bad"},
                 "spec": {"selector": {"matchLabels": {"a": "b"}}}})),
    (["patch", "ds", "ds1", "--type=merge", "-p",
      '{"spec":{"selector":{"matchLabels":{"app":"e"}},"template":{"metadata":{"labels":{"app":"e","x":"Bad Value"}}}}}'],
     None),
    (["patch", "ds", "ds1", "--type=merge", "-p", '{"metadata":{"labels":{"a":"b c"}},"spec":{"minReadySeconds":-1}}'],
     None),
    (["patch", "ds", "ds1", "--type=merge", "-p", '{"spec":{"minReadySeconds":5}}', "-o", _DS_TG], None),
    (["patch", "ds", "ds1", "--type=merge", "-p", '{"spec":{"template":{"metadata":{"labels":{"v":"2"}}}}}', "-o",
      _DS_TG], None),
    (["patch", "ds", "ds1", "--type=merge", "-p",
      '{"metadata":{"annotations":{"deprecated.daemonset.template.generation":"9"}}}', "-o", _DS_TG], None),
    (["patch", "ds", "ds1", "--type=merge", "-p",
      '{"metadata":{"annotations":{"deprecated.daemonset.template.generation":null}}}', "-o", _DS_TG], None),
    (["patch", "ds", "ds1", "--type=merge", "-p",
      # (One deprecated key at a time: Go warns in map order, which varies.)
      '{"spec":{"template":{"spec":{"nodeSelector":{"beta.kubernetes.io/arch":null,"beta.kubernetes.io/os":"linux"}}}}}',
      "-o", _DS_TG], None),
    (["patch", "ds", "ds1", "--type=merge", "-p", '{"spec":{"updateStrategy":{"type":"OnDelete","rollingUpdate":null}}}',
      "-o", "jsonpath={.metadata.generation} {.spec.updateStrategy}"], None),
    (["get", "ds", "ds1", "-o", "wide"], None),
    (["create", "-f", "-", "-o", "json"], _cr("cr0", revision=3, data={"spec": {"template": {"b": 1, "a": [1, 2.5, "x<"]}}})),
    (["get", "controllerrevision", "cr0", "-o", "jsonpath={.metadata.uid}"], None, "capture:U0"),
    (["create", "-f", "-", "-o", "name"], _cr("cr1", data={})),
    (["patch", "controllerrevision", "cr1", "--type=merge", "-p",
      '{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ControllerRevision","name":"cr0",'
      '"uid":"{U0}","controller":true}]}}', "-o", "name"], None),
    (["get", "controllerrevision", "cr0", "cr1"], None),
    (["get", "controllerrevision", "cr1", "-o", "jsonpath={.revision}"], None),
    (["create", "-f", "-"], _cr("bad", revision=-1, data={})),
    (["create", "-f", "-"], _cr("bad", revision=1)),
    (["create", "-f", "-"], _cr("bad", revision=1, data=None)),
    (["create", "-f", "-"], _cr("bad", revision=1, data=[1])),
    (["create", "-f", "-"], _cr("bad", revision=1, data="s")),
    (["create", "-f", "-"], _cr("bad", revision="x", data={})),
    (["patch", "controllerrevision", "cr0", "--type=merge", "-p", '{"data":{"x":1}}'], None),
    (["patch", "controllerrevision", "cr0", "--type=merge", "-p", '{"revision":7}', "-o", "jsonpath={.revision}"],
     None),
    (["patch", "controllerrevision", "cr0", "--type=merge", "-p", '{"revision":-7,"metadata":{"labels":{"a":"b c"}}}'],
     None),
    (["patch", "controllerrevision", "cr0", "--type=json", "-p", '[{"op":"remove","path":"/data"}]'], None),
    (["get", "controllerrevision", "cr0", "-o", "jsonpath={.metadata.managedFields[*].fieldsV1}"], None),
    (["delete", "controllerrevision", "cr1", "cr0"], None),
    (["delete", "ds", "ds1", "ds.dot", "ds-tg", "ds-tgneg", "ds-ondelete"], None),
]

def _sts(name="st1", selector=None, labels=None, pod=None, meta=None, claims=None, **spec):
    """An inert StatefulSet (no replicas unless given: the oracle's controller acts on it)."""
    tpl = {"metadata": {"labels": {"app": "st"} if labels is None else labels},
           "spec": dict({"containers": [{"name": "c", "image": "busybox"}]}, **(pod or {}))}
    body = dict({"replicas": 0, "serviceName": "st",
                 "selector": {"matchLabels": {"app": "st"}} if selector is None else selector, "template": tpl},
                **spec)
    if selector == "none":
        del body["selector"]
    if claims is not None:
        body["volumeClaimTemplates"] = claims
    return json.dumps({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": dict({"name": name}, **(meta or {})),
                       "spec": body})


_STS_CLAIM = {"metadata": {"name": "data"},
              "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1500m"}}}}
SCENARIOS["statefulsetapi"] = [
    (["create", "-f", "-", "-o", "json"],
     _sts(claims=[_STS_CLAIM], updateStrategy={"rollingUpdate": {"maxUnavailable": 2}})),
    (["get", "sts", "st1", "-o",
      'jsonpath={.metadata.managedFields[?(@.manager=="kubectl-create")].fieldsV1}'], None),
    (["get", "sts", "st1"], None),
    (["get", "statefulsets", "st1", "-o", "wide"], None),
    (["get", "statefulset", "st1", "-o", "custom-columns=NAME:.metadata.name,SERVICE:.spec.serviceName,"
      "POLICY:.spec.podManagementPolicy,STRATEGY:.spec.updateStrategy,HISTORY:.spec.revisionHistoryLimit"], None),
    (["create", "-f", "-", "-o", "jsonpath={.metadata.generation} {.spec}"],
     _sts("st2", podManagementPolicy="Parallel", updateStrategy={"type": "OnDelete"}, ordinals={},
          persistentVolumeClaimRetentionPolicy={"whenScaled": "Delete"}, minReadySeconds=3)),
    (["create", "-f", "-", "-o", "jsonpath={.spec.updateStrategy} {.spec.ordinals} {.spec.volumeClaimTemplates}"],
     _sts("st3", updateStrategy={"type": "RollingUpdate"}, ordinals={"start": 2},
          claims=[{"metadata": {"name": "x", "labels": {"a": "b"}}, "spec": {}}, {}],
          pod={"containers": []})),
    (["create", "-f", "-", "-o", "jsonpath={.spec.updateStrategy}"],
     _sts("st4", updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 3}})),
    (["create", "-f", "-"], _sts("bad", selector="none")),
    (["create", "-f", "-"], _sts("bad", selector={"matchLabels": {"app": "other"}})),
    (["create", "-f", "-"], _sts("bad", selector={})),
    (["create", "-f", "-"], _sts("bad", selector={"matchExpressions": [{"key": "app", "operator": "Bogus"}]})),
    (["create", "-f", "-"], _sts("bad", selector={"matchLabels": {"a b": "c"}}, labels={"a b": "c"})),
    (["create", "-f", "-"], _sts("bad", pod={"restartPolicy": "Never"})),
    (["create", "-f", "-"], _sts("bad", pod={"restartPolicy": "OnFailure", "activeDeadlineSeconds": 5})),
    (["create", "-f", "-"], _sts("bad", podManagementPolicy="Bogus")),
    (["create", "-f", "-"], _sts("bad", updateStrategy={"type": "Sometimes"})),
    (["create", "-f", "-"], _sts("bad", updateStrategy={"type": "OnDelete", "rollingUpdate": {"partition": 2}})),
    (["create", "-f", "-"], _sts("bad", updateStrategy={"rollingUpdate": {"partition": -1}})),
    (["create", "-f", "-"], _sts("bad", replicas=-1, minReadySeconds=-1, ordinals={"start": -1})),
    (["create", "-f", "-"],
     _sts("bad", persistentVolumeClaimRetentionPolicy={"whenDeleted": "Bogus", "whenScaled": "Keep"})),
    # Neither the pod spec nor the claim templates are validated (ValidatePodTemplateSpecForStatefulSet).
    (["create", "-f", "-", "-o", "name"],
     _sts("st5", claims=[{"metadata": {"name": "Bad_Name"}, "spec": {"accessModes": []}}],
          pod={"containers": [{"name": "C_", "image": ""}]})),
    (["create", "-f", "-"], _sts("Bad.Name")),
    (["create", "-f", "-"], _sts("bad", labels={"app": "st", "x": "Bad Value"},
                                 meta={"labels": {"a": "b c"}})),
    (["create", "-f", "-"],
     json.dumps({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "bad"}, "spec": {}})),
    (["create", "-f", "-"],
     json.dumps({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "bad"}, "spec": {
         "replicas": 0, "serviceName": "st", "selector": {"matchLabels": {"app": "st"}},
         "template": {"metadata": {"labels": {"app": "st"},
                                   "annotations": {"controller.kubernetes.io/pod-deletion-cost": "x"}},
                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})),
    (["patch", "sts", "st1", "--type=merge", "-p", '{"spec":{"replicas":3}}', "--dry-run=server", "-o",
      "jsonpath={.metadata.generation} {.spec.replicas}"], None),
    (["patch", "sts", "st1", "--type=merge", "-p",
      '{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}}}', "-o",
      "jsonpath={.metadata.generation} {.spec.template.spec.containers[0].image}"], None),
    (["patch", "sts", "st1", "--type=merge", "-p",
      '{"spec":{"minReadySeconds":4,"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Delete"},'
      '"updateStrategy":{"rollingUpdate":{"partition":1}},"ordinals":{"start":1}}}', "-o",
      "jsonpath={.metadata.generation} {.spec.minReadySeconds} {.spec.persistentVolumeClaimRetentionPolicy} "
      "{.spec.updateStrategy} {.spec.ordinals}"], None),
    (["patch", "sts", "st1", "--type=merge", "-p", '{"spec":{"serviceName":"other"}}'], None),
    (["patch", "sts", "st1", "--type=merge", "-p", '{"spec":{"revisionHistoryLimit":3}}'], None),
    (["patch", "sts", "st1", "--type=merge", "-p", '{"spec":{"podManagementPolicy":"Parallel"}}'], None),
    (["patch", "sts", "st1", "--type=json", "-p",
      '[{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/resources/requests/storage","value":"2Gi"}]'],
     None),
    (["patch", "sts", "st1", "--type=merge", "-p",
      '{"spec":{"selector":{"matchLabels":{"app":"e"}},"template":{"metadata":{"labels":{"app":"e"}}}}}'], None),
    (["patch", "sts", "st1", "--type=merge", "-p",
      '{"metadata":{"labels":{"a":"b c"}},"spec":{"minReadySeconds":-1,"serviceName":"x"}}'], None),
    (["patch", "sts", "st1", "--type=merge", "-p", '{"metadata":{"labels":{"v":"1"}}}', "-o",
      "jsonpath={.metadata.generation} {.metadata.labels}"], None),
    (["patch", "sts", "st1", "--type=strategic", "-p",
      '{"spec":{"template":{"spec":{"containers":[{"name":"d","image":"busybox"}]}}}}', "-o",
      "jsonpath={.metadata.generation} {.spec.template.spec.containers[*].name}"], None),
    (["patch", "sts", "st1", "--type=merge", "-p", '{"spec":{"updateStrategy":{"rollingUpdate":{"maxUnavailable":1}}}}',
      "-o", "jsonpath={.spec.updateStrategy}"], None),
    (["scale", "sts", "st1", "--replicas=2", "--dry-run=server"], None),
    (["scale", "statefulset", "st1", "--replicas=0"], None),
    (["scale", "sts", "st1", "--replicas=-1"], None),
    (["get", "sts", "st1", "-o", "jsonpath={.metadata.generation} {.spec.replicas}"], None),
    (["patch", "sts", "st1", "--subresource=status", "--type=merge", "-p",
      '{"status":{"replicas":1,"readyReplicas":2,"currentReplicas":-1,"availableReplicas":2,"observedGeneration":-1}}'],
     None),
    (["apply", "-f", "-", "-o", "name"], _sts("st6", claims=[_STS_CLAIM])),
    (["apply", "-f", "-", "-o", "jsonpath={.metadata.generation} {.spec.template.spec.containers[*].image}"],
     _sts("st6", claims=[_STS_CLAIM], pod={"containers": [{"name": "c", "image": "busybox:1.36"},
                                                           {"name": "d", "image": "busybox"}]})),
    (["get", "sts", "st6", "-o",
      'jsonpath={.metadata.managedFields[?(@.manager=="kubectl-client-side-apply")].fieldsV1}'], None),
    (["apply", "--server-side", "-f", "-", "-o",
      'jsonpath={.metadata.managedFields[?(@.manager=="kubectl")].fieldsV1}'],
     _sts("st7", claims=[_STS_CLAIM], updateStrategy={"type": "OnDelete"}, ordinals={"start": 1})),
    (["get", "--raw", "/apis/apps/v1/namespaces/NS/statefulsets/st1/scale"], None),
    (["get", "sts", "st1", "st2", "st4", "-o", "wide"], None),
    (["delete", "sts", "st1", "st2", "st3", "st4", "st5", "st6", "st7"], None),
]

# Strategic merge patches on every built-in kind (session 27): kube-apiserver takes them for any kind
# with a Go type, not only the workload kinds, so their directives ($patch, $deleteFromPrimitiveList,
# $setElementOrder) act instead of being stored as keys; a Scale too. And selectors printed as
# LabelSelectorAsSelector(...).String() writes them (keys sorted, In values sorted), in the SELECTOR
# column and a Scale's status.selector.
_SMP_DEPLOY = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sel"},
    "spec": {"replicas": 0,
             "selector": {"matchLabels": {"zeta": "1", "alpha": "2"},
                          "matchExpressions": [{"key": "mid", "operator": "In", "values": ["y", "x"]},
                                               {"key": "beta", "operator": "Exists"},
                                               {"key": "gone", "operator": "DoesNotExist"},
                                               {"key": "nope", "operator": "NotIn", "values": ["b", "a"]}]},
             "template": {"metadata": {"labels": {"zeta": "1", "alpha": "2", "mid": "x", "beta": ""}},
                          "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}}
SCENARIOS["smpkinds"] = [
    (["create", "role", "r", "--verb=get", "--resource=pods"], None),
    (["label", "role", "r", "a=1", "b=2"], None),
    (["patch", "role", "r", "--type=strategic", "-p", '{"metadata":{"labels":{"$patch":"replace","x":"y"}}}',
      "-o", "jsonpath={.metadata.labels}"], None),
    (["patch", "role", "r", "--type=merge", "-p", '{"metadata":{"labels":{"$patch":"replace","x":"y"}}}'], None),
    (["create", "-f", "-"], json.dumps({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb", "finalizers": ["example.com/a", "example.com/b"]},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "x"}}}})),
    (["patch", "pdb", "pdb", "--type=strategic", "-p",
      '{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/a"]}}',
      "-o", "jsonpath={.metadata.finalizers}"], None),
    (["patch", "pdb", "pdb", "--type=strategic", "-p", '{"metadata":{"finalizers":["example.com/c"]}}',
      "-o", "jsonpath={.metadata.finalizers}"], None),
    (["patch", "pdb", "pdb", "--type=strategic", "-p",
      '{"metadata":{"$setElementOrder/finalizers":["example.com/c","example.com/b"]}}',
      "-o", "jsonpath={.metadata.finalizers}"], None),
    (["patch", "pdb", "pdb", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]',
      "-o", "jsonpath={.metadata.finalizers}"], None),
    (["create", "-f", "-"], json.dumps({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l", "labels": {"k": "v"}},
        "spec": {"holderIdentity": "a"}})),
    (["patch", "lease", "l", "--type=strategic", "-p", '{"metadata":{"labels":{"$patch":"delete"}}}',
      "-o", "jsonpath={.metadata}"], None),
    (["apply", "-f", "-"], json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "1"}})),
    (["create", "-f", "-"], json.dumps(_SMP_DEPLOY)),
    (["get", "deployment", "sel", "-o", "wide"], None),
    (["get", "--raw", "/apis/apps/v1/namespaces/NS/deployments/sel/scale"], None),
    (["patch", "deployment", "sel", "--subresource=scale", "--type=strategic", "-p",
      '{"metadata":{"labels":{"$patch":"replace"}},"spec":{"replicas":0}}', "-o", "jsonpath={.spec}"], None),
    (["delete", "role/r", "pdb/pdb", "lease/l", "deployment/sel", "configmap/applied"], None),
]

# An empty list or map in a field without omitempty is stored by kube-apiserver as protobuf, which
# has no empty repeated field or map: it reads back null (session 27, found by fuzz.py's StatefulSet).
SCENARIOS["emptylists"] = [
    (["create", "-f", "-", "-o", "jsonpath={.rules}"], json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "none"}, "rules": []})),
    (["get", "role", "none", "-o", "json"], None),
    (["create", "-f", "-", "-o", "json"], json.dumps({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "es"},
        "addressType": "IPv4", "endpoints": [], "ports": []})),
    (["create", "-f", "-", "-o", "jsonpath={.spec.template.spec}"], json.dumps({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "st"},
        "spec": {"replicas": 0, "serviceName": "st", "selector": {"matchLabels": {"app": "st"}},
                 "template": {"metadata": {"labels": {"app": "st"}}, "spec": {"containers": []}}}})),
    (["create", "-f", "-", "-o", "jsonpath={.spec.podFailurePolicy}"], json.dumps({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"suspend": True, "podFailurePolicy": {"rules": []},
                 "template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "main", "image": "busybox"}]}}}})),
    # A nil slice or map without omitempty is null too: a Role created without rules.
    (["create", "-f", "-", "-o", "jsonpath={.rules}"], json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "norules"}})),
    (["get", "role", "norules", "-o", "json"], None),
    (["delete", "role/none", "role/norules", "endpointslice/es", "statefulset/st", "job/j"], None),
]

# Updates that change nothing Go can see (apiequality.Semantic on decoded objects: a Quantity by
# value, a nil map equal to an empty one) pass the immutable-field rules and bump no generation:
# a suspended Job's template given "1024Mi" for the stored "1Gi", "0.5" for "500m", or an empty
# annotations map; an unbound claim's request; a StatefulSet's claim template; a pod's resources;
# a Deployment's template (its generation stays). A real change is still refused.
def _sem_container(**res):
    return {"name": "main", "image": "busybox",
            "resources": res or {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}}


def _json_patch(path, value):
    return json.dumps([{"op": "replace", "path": path, "value": value}])


_SEM_RES = "/spec/template/spec/containers/0/resources"
SCENARIOS["semanticupdates"] = [
    (["create", "-f", "-"], json.dumps({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "sem"},
        "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never",
                                                         "containers": [_sem_container()]}}}})),
    (["patch", "job", "sem", "--type=merge", "-p", '{"spec":{"template":{"metadata":{"annotations":{}}}}}',
      "-o", "jsonpath={.spec.template.metadata.annotations} {.metadata.generation}{\"\\n\"}"], None),
    (["patch", "job", "sem", "--type=json", "-p", _json_patch(_SEM_RES + "/requests/memory", "1024Mi"),
      "-o", "jsonpath={.spec.template.spec.containers[0].resources}{\"\\n\"}"], None),
    (["patch", "job", "sem", "--type=json", "-p", _json_patch(_SEM_RES + "/requests/cpu", "0.5"),
      "-o", "jsonpath={.spec.template.spec.containers[0].resources}{\"\\n\"}"], None),
    (["patch", "job", "sem", "--type=json", "-p", _json_patch(_SEM_RES + "/limits", {"memory": "2048Mi"}),
      "-o", "jsonpath={.spec.template.spec.containers[0].resources}{\"\\n\"}"], None),
    (["patch", "job", "sem", "--type=json", "-p", _json_patch(_SEM_RES + "/requests/memory", "2Gi")], None),
    (["create", "-f", "-"], json.dumps({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "sem"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "sem-none",
                 "resources": {"requests": {"storage": "1Gi"}}}})),
    (["patch", "pvc", "sem", "--type=merge", "-p", '{"spec":{"resources":{"requests":{"storage":"1024Mi"}}}}',
      "-o", "jsonpath={.spec.resources}{\"\\n\"}"], None),
    (["patch", "pvc", "sem", "--type=merge", "-p", '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}'],
     None),
    (["create", "-f", "-"], json.dumps({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "sem"},
        "spec": {"replicas": 0, "serviceName": "sem", "selector": {"matchLabels": {"app": "sem"}},
                 "template": {"metadata": {"labels": {"app": "sem"}}, "spec": {"containers": [_sem_container()]}},
                 "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                     "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})),
    (["patch", "sts", "sem", "--type=json", "-p",
      _json_patch("/spec/volumeClaimTemplates/0/spec/resources/requests/storage", "1024Mi"),
      "-o", "jsonpath={.spec.volumeClaimTemplates[0].spec.resources} {.metadata.generation}{\"\\n\"}"], None),
    (["patch", "sts", "sem", "--type=json", "-p",
      _json_patch("/spec/volumeClaimTemplates/0/spec/resources/requests/storage", "2Gi")], None),
    (["create", "-f", "-"], json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sem"},
        "spec": {"containers": [_sem_container()]}})),
    (["patch", "pod", "sem", "--type=json", "-p",
      _json_patch("/spec/containers/0/resources/requests/memory", "1024Mi"),
      "-o", "jsonpath={.spec.containers[0].resources}{\"\\n\"}"], None),
    (["patch", "pod", "sem", "--type=json", "-p",
      _json_patch("/spec/containers/0/resources/requests/memory", "2Gi")], None),
    # (Its template warns, on create and when the generation moves: not for a respelt quantity.)
    (["create", "-f", "-"], json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sem"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "sem"}},
                 "template": {"metadata": {"labels": {"app": "sem"}},
                              "spec": {"nodeSelector": {"beta.kubernetes.io/os": "linux"},
                                       "containers": [_sem_container()]}}}})),
    (["patch", "deployment", "sem", "--type=json", "-p", _json_patch(_SEM_RES + "/requests/memory", "1024Mi"),
      "-o", "jsonpath={.metadata.generation} {.spec.template.spec.containers[0].resources}{\"\\n\"}"], None),
    (["patch", "deployment", "sem", "--type=merge", "-p",
      '{"spec":{"selector":{"matchLabels":{"app":"sem"},"matchExpressions":[]}}}',
      "-o", "jsonpath={.metadata.generation} {.spec.selector}{\"\\n\"}"], None),
    (["delete", "job/sem", "pvc/sem", "sts/sem", "pod/sem", "deployment/sem", "--wait=false"], None),
]

# The field manager's decodeLiveOrNew (fieldmanager.go): a request's managedFields that reset them
# (`[]`, or `[{}]`) leave none but this write's own; entries that do not decode (an unknown
# fieldsType, no operation) give way to the live object's; entries that decode are taken. And a
# DaemonSet's deprecated.daemonset.template.generation annotation that is no integer: a strategic
# merge patch's conversion error is a 500 with ParseInt's message.
_MF = "jsonpath={.metadata.managedFields[*].manager}{\"\\n\"}"
SCENARIOS["managedreset"] = [
    (["create", "configmap", "mr", "--from-literal=a=b"], None),
    (["patch", "configmap", "mr", "--type=merge", "-p", '{"metadata":{"managedFields":[]}}', "-o", _MF], None),
    (["get", "configmap", "mr", "-o", _MF], None),
    (["create", "configmap", "mr2", "--from-literal=a=b"], None),
    (["patch", "configmap", "mr2", "--type=merge", "-p", '{"metadata":{"managedFields":[{}]},"data":{"c":"d"}}',
      "-o", _MF], None),
    (["create", "configmap", "mr3", "--from-literal=a=b"], None),
    (["patch", "configmap", "mr3", "--type=json", "-p",
      '[{"op":"add","path":"/metadata/managedFields","value":[{"fieldsType":"a"}]}]', "-o", _MF], None),
    (["patch", "configmap", "mr3", "--type=json", "-p",
      '[{"op":"add","path":"/metadata/managedFields","value":[{"manager":"x","fieldsType":"FieldsV1"}]}]',
      "-o", _MF], None),
    (["patch", "configmap", "mr3", "--type=json", "-p",
      '[{"op":"add","path":"/metadata/managedFields","value":[{"manager":"someone","operation":"Update",'
      '"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}]}]',
      "-o", "jsonpath={.metadata.managedFields}{\"\\n\"}"], None),
    (["create", "-f", "-"], json.dumps({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "mr"},
        "spec": {"selector": {"matchLabels": {"app": "mr"}},
                 "template": {"metadata": {"labels": {"app": "mr"}},
                              "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}})),
    (["patch", "daemonset", "mr", "--type=strategic", "-p",
      '{"metadata":{"annotations":{"deprecated.daemonset.template.generation":"Exists"}}}'], None),
    (["patch", "daemonset", "mr", "--type=strategic", "-p",
      '{"metadata":{"annotations":{"deprecated.daemonset.template.generation":"7"}}}',
      "-o", "jsonpath={.metadata.annotations} {.metadata.generation}{\"\\n\"}"], None),
    (["delete", "configmap/mr", "configmap/mr2", "configmap/mr3", "daemonset/mr"], None),
]

# SetDefaults_Container's imagePullPolicy: Always only when ParseImageName's tag is "latest" (no tag
# and no digest, or ":latest"); a reference that does not parse (uppercase repository, a 64-hex
# identifier, a bad separator, tag or digest, a name over 255 characters) leaves its tag "" and
# IfNotPresent.
_PULL_IMAGES = [
    "busybox", "busybox:1.36", "Busybox", "a/b/c", "localhost/x", "localhost:5000/x:latest", "Example.com/x",
    "example.com/X", "busybox@sha256:" + "a" * 64, "busybox:latest@sha256:" + "a" * 64,
    "busybox:latest@sha256:" + "A" * 64, "busybox:latest@sha256:abc", "busybox:latest@md5:" + "a" * 32, "a" * 64,
    "x:", "x:-bad", "x__y", "x___y", "x--y:latest", "[::1]:5000/x", "UPPER/x:1", "a.b/c..d",
    "x:" + "t" * 129, "a/" * 130 + "b",
    "a..b", "a._b", "a__b", "a-_b", "a_-b", "-a", "a-", "a.", "example.com:abc/x", "example.com:/x", "[::1]/x",
    "[]/x", "Ex-ample.com/x", "-ex.com/x", "ex-.com/x", "x:t@sha256:" + "a" * 64, "x@sha512:" + "a" * 128,
    "x:latest@sha384:" + "a" * 96, "x:a.b-c_D", "x:.bad", "localhost/X", "docker.io/Busybox", "UPPER:5000/x",
    "a/b:tag/c", "a//b", "x:latest@sha256:" + "a" * 63, "a-----b:latest", "x@sha256:" + "a" * 64 + "@x",
]
SCENARIOS["imagepull"] = [
    (["create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.containers[0].imagePullPolicy}{\"\\n\"}"],
     json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pull-%d" % i},
                 "spec": {"containers": [{"name": "main", "image": image}]}}))
    for i, image in enumerate(_PULL_IMAGES)
]

# node.k8s.io/v1 RuntimeClass and the RuntimeClass admission plugin: a class as stored (its
# overhead's quantities canonical), discovery, the table, describe, ValidateRuntimeClass's refusals
# (the handler a DNS label, the overhead as container limits, the scheduling labels and
# tolerations, whose path says "tolerations" twice), the deprecated node label warning, the
# immutable handler, no unconditional update; then pods naming a class: the overhead, node
# selector and tolerations it adds (MergeTolerations keeps a superset only), a class not found, a
# conflicting node selector, and an overhead of the pod's own (equal, different, or without a
# class overhead).
def _rtc(name, handler="runc", **fields):
    return json.dumps(dict({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                            "handler": handler}, **fields))


def _rtc_pod(name, cls=None, generate=False, **spec):
    spec = dict({"containers": [{"name": "main", "image": "busybox"}]}, **spec)
    if cls:
        spec["runtimeClassName"] = cls
    meta = {"generateName": name} if generate else {"name": name}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


RTC_NAMES = ["rtc-fid-nvidia", "rtc-fid-plain", "rtc-fid-warn", "rtc-fid-empty", "rtc-fid-new", "rtc-fid-gpu"]
_RTC_GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
_RTC_POD = ("jsonpath={.spec.runtimeClassName} overhead={.spec.overhead} nodeSelector={.spec.nodeSelector} "
            "tolerations={.spec.tolerations}{\"\\n\"}")
SCENARIOS["runtimeclass"] = [
    (["api-resources", "-o", "wide", "--api-group=node.k8s.io"], None),
    (["create", "-f", "-", "-o", "json"],
     _rtc("rtc-fid-nvidia", "nvidia", overhead={"podFixed": {"cpu": "0.25", "memory": "0.5Gi"}},
          scheduling={"nodeSelector": {"rtc-fid": "gpu"}, "tolerations": [_RTC_GPU]})),
    (["create", "-f", "-"], _rtc("rtc-fid-plain")),
    (["create", "-f", "-"], _rtc("rtc-fid-empty", overhead={})),
    (["create", "-f", "-", "-o", "name"],
     _rtc("rtc-fid-warn", scheduling={"nodeSelector": {"beta.kubernetes.io/arch": "amd64"},
                                      "tolerations": [{"operator": "Exists"}]})),
    (["create", "-f", "-"], _rtc("rtc-fid-bad", "Bad_Handler")),
    (["create", "-f", "-"], _rtc("Bad_Name", "")),
    (["create", "-f", "-"], _rtc("rtc-fid-bad", overhead={"podFixed": {"cpu": "-1"}})),
    # An extended resource as a limit alone is valid (only a request needs its limit).
    (["create", "-f", "-"], _rtc("rtc-fid-gpu", overhead={"podFixed": {"nvidia.com/gpu": "1"}})),
    (["create", "-f", "-"], _rtc("rtc-fid-bad", scheduling={"nodeSelector": {"bad key!": "v"}})),
    (["create", "-f", "-"], _rtc("rtc-fid-bad", scheduling={"nodeSelector": {"k": "bad value!"}})),
    (["create", "-f", "-"], _rtc("rtc-fid-bad", scheduling={"tolerations": [
        {"key": "a", "operator": "Bogus"}, {"key": "b", "operator": "Exists", "value": "v"}]})),
    (["create", "-f", "-"], _rtc("rtc-fid-bad", scheduling={"tolerations": [_RTC_GPU, dict(_RTC_GPU)]})),
    (["create", "-f", "-"], _rtc("rtc-fid-bad", scheduling={"tolerations": [
        {"key": "x", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
        {"key": "x", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 6}]})),
    (["create", "-f", "-"], json.dumps({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                        "metadata": {"name": "rtc-fid-bad"}})),
    (["get", "runtimeclass"] + RTC_NAMES[:4], None),
    (["get", "runtimeclass", "rtc-fid-nvidia", "-o", "wide"], None),
    (["describe", "runtimeclass", "rtc-fid-nvidia"], None),
    (["patch", "runtimeclass", "rtc-fid-plain", "--type=merge", "-p", '{"handler":"crun"}'], None),
    (["patch", "runtimeclass", "rtc-fid-plain", "--type=merge", "-p",
      '{"scheduling":{"nodeSelector":{"a":"b"}}}', "-o", "jsonpath={.scheduling}"], None),
    (["replace", "--raw", "/apis/node.k8s.io/v1/runtimeclasses/rtc-fid-plain", "-f", "-"], _rtc("rtc-fid-plain")),
    (["replace", "-f", "-", "-o", "jsonpath={.handler}"], _rtc("rtc-fid-new", "kata")),
    (["explain", "runtimeclass.scheduling"], None),
    # Pods naming a class.
    (["create", "-f", "-", "-o", _RTC_POD], _rtc_pod("p-nvidia", "rtc-fid-nvidia")),
    (["create", "-f", "-", "-o", _RTC_POD],
     _rtc_pod("p-merged", "rtc-fid-nvidia", nodeSelector={"zone": "a"},
              tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "x", "effect": "NoSchedule"},
                           {"key": "other", "operator": "Exists"}])),
    (["create", "-f", "-"], _rtc_pod("p-conflict", "rtc-fid-nvidia", nodeSelector={"rtc-fid": "cpu"})),
    (["create", "-f", "-"], _rtc_pod("p-missing", "rtc-fid-none")),
    (["create", "-f", "-"], _rtc_pod("p-gen-", "rtc-fid-none", generate=True)),
    (["create", "-f", "-", "-o", _RTC_POD],
     _rtc_pod("p-same", "rtc-fid-nvidia", overhead={"memory": "512Mi", "cpu": "250m"})),
    (["create", "-f", "-"], _rtc_pod("p-other", "rtc-fid-nvidia", overhead={"cpu": "1"})),
    (["create", "-f", "-"], _rtc_pod("p-own", "rtc-fid-plain", overhead={"cpu": "1"})),
    (["create", "-f", "-"], _rtc_pod("p-own-empty", "rtc-fid-empty", overhead={"cpu": "1"})),
    (["create", "-f", "-", "-o", _RTC_POD], _rtc_pod("p-plain", "rtc-fid-plain")),
    (["create", "-f", "-", "-o", _RTC_POD], _rtc_pod("p-empty", "rtc-fid-empty")),
    (["create", "-f", "-", "-o", _RTC_POD], _rtc_pod("p-all", "rtc-fid-warn")),
    (["get", "pod", "p-nvidia", "-o", "json"], None),
    # An empty name is looked up too: the API's Get of "" fails (a 500).
    (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-emptyname"},
                                        "spec": {"runtimeClassName": "",
                                                 "containers": [{"name": "main", "image": "busybox"}]}})),
    (["delete", "pod", "--all", "--grace-period=0", "--force"], None, "capture:deleted"),
    (["delete", "runtimeclass"] + RTC_NAMES, None),
]

# networking.k8s.io/v1 NetworkPolicy, Ingress and IngressClass (served since session 30): discovery,
# the scheme defaults (a policy's policyTypes and port protocol, a class's parameters scope),
# ValidateNetworkPolicy / ValidateIngressCreate / ValidateIngressClass's refusals (ports, peers,
# ipBlocks, policyTypes; rules, paths and backends, hosts, TLS, the class annotation; a class's
# controller and parameters), the update rules (a policy's spec errors twice, an Ingress's
# relaxed options, a class's immutable controller), the ingress.class warning, the status
# subresource's address rules, the tables, describe, explain and server-side apply.
def _netpol(name, **spec):
    return json.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name},
                       "spec": dict({"podSelector": {}}, **spec)})


def _ing(name, annotations=None, **spec):
    meta = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return json.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec})


def _ing_path(path="/", path_type="Prefix", backend=None):
    p = {"path": path, "backend": backend if backend is not None else
         {"service": {"name": "tensorboard", "port": {"number": 6006}}}}
    if path_type is not None:
        p["pathType"] = path_type
    return p


def _ing_rule(host=None, *paths):
    r = {"http": {"paths": list(paths) or [_ing_path()]}}
    if host is not None:
        r["host"] = host
    return r


def _ingclass(name, **spec):
    return json.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": name},
                       "spec": dict({"controller": "example.com/ingress"}, **spec)})


INGCLASS_NAMES = ["ingc-fid-nginx", "ingc-fid-ns", "ingc-fid-plain"]
SCENARIOS["networking"] = [
    (["api-resources", "-o", "wide", "--api-group=networking.k8s.io"], None),
    # NetworkPolicy: the defaults, then each of ValidateNetworkPolicySpec's refusals.
    (["create", "-f", "-", "-o", "json"],
     _netpol("np-train", podSelector={"matchLabels": {"app": "train"}},
             ingress=[{"from": [{"podSelector": {}}, {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                       "ports": [{"port": 8080}, {"port": "http", "protocol": "UDP"}, {"port": 9000, "endPort": 9100}]}])),
    (["create", "-f", "-", "-o", "jsonpath={.spec.policyTypes}{\"\\n\"}"],
     _netpol("np-egress", egress=[{"to": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]}])),
    (["create", "-f", "-", "-o", "jsonpath={.spec.policyTypes}{\"\\n\"}"],
     _netpol("np-deny", policyTypes=["Egress"])),
    (["create", "-f", "-"], _netpol("np-bad", ingress=[{"ports": [
        {"protocol": "ICMP"}, {"port": 0}, {"port": 70000, "endPort": 80}, {"port": "http", "endPort": 90},
        {"endPort": 91}, {"port": "Bad_Name"}, {"port": "toolongportname"}]}])),
    (["create", "-f", "-"], _netpol("np-bad", ingress=[{"from": [
        {}, {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}, {"ipBlock": {"cidr": ""}},
        {"ipBlock": {"cidr": "10.0.0.0/33"}},
        {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24", "10.0.0.0/16", "10.0.0.0/8", "bad", "10.0.1.0/24"]}},
        {"ipBlock": {"cidr": "fd00::/64", "except": ["10.0.0.0/24", "fd00::/80"]}},
        {"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}]}])),
    (["create", "-f", "-"], _netpol("np-bad", egress=[{"to": [{"podSelector": {"matchLabels": {"bad key!": "v"}}}],
                                                       "ports": [{"port": 53, "protocol": "udp"}]}],
                                    policyTypes=["Ingress", "Egress", "Ingress"])),
    (["create", "-f", "-"], _netpol("np-bad", policyTypes=["Ingress", "Sideways"],
                                    podSelector={"matchLabels": {"app": "bad value!"}})),
    (["get", "networkpolicy"], None),
    (["get", "netpol", "np-train", "-o", "wide"], None),
    (["describe", "networkpolicy", "np-train"], None),
    (["patch", "networkpolicy", "np-deny", "--type=merge", "-p",
      '{"spec":{"ingress":[{"ports":[{"port":0}]}]}}'], None),
    (["patch", "networkpolicy", "np-deny", "--type=merge", "-p",
      '{"spec":{"ingress":[{"ports":[{"port":443}]}]}}', "-o", "jsonpath={.metadata.generation} {.spec}{\"\\n\"}"],
     None),
    (["replace", "--raw", "/apis/networking.k8s.io/v1/namespaces/NS/networkpolicies/np-egress", "-f", "-"],
     _netpol("np-egress").replace('"metadata": {', '"metadata": {"namespace": "NAMESPACE", ')),
    (["replace", "--raw", "/apis/networking.k8s.io/v1/namespaces/NS/networkpolicies/np-none", "-f", "-"],
     _netpol("np-none").replace('"metadata": {', '"metadata": {"namespace": "NAMESPACE", ')),
    (["apply", "--server-side", "--field-manager=fid", "-f", "-", "-o", "jsonpath={.spec}{\"\\n\"}"],
     _netpol("np-ssa", ingress=[{"ports": [{"port": 80}]}])),
    (["apply", "--server-side", "--field-manager=fid", "-f", "-", "-o", "jsonpath={.spec}{\"\\n\"}"],
     _netpol("np-ssa", ingress=[{"ports": [{"port": 81}]}], egress=[{}])),
    (["explain", "networkpolicy.spec.ingress.ports"], None),
    # IngressClass.
    (["create", "-f", "-", "-o", "json"],
     _ingclass("ingc-fid-nginx", controller="k8s.io/ingress-nginx",
               parameters={"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"})),
    (["create", "-f", "-", "-o", "jsonpath={.spec.parameters}{\"\\n\"}"],
     _ingclass("ingc-fid-ns", parameters={"kind": "ConfigMap", "name": "cfg", "scope": "Namespace",
                                          "namespace": "ingress"})),
    (["create", "-f", "-"], _ingclass("ingc-fid-plain")),
    (["create", "-f", "-"], _ingclass("ingc-fid-bad", controller="")),
    (["create", "-f", "-"], _ingclass("ingc-fid-bad", controller="nginx")),
    (["create", "-f", "-"], _ingclass("ingc-fid-bad", controller="Bad_Host/x y")),
    (["create", "-f", "-"], _ingclass("ingc-fid-bad", controller="example.com/" + "c" * 250)),
    (["create", "-f", "-"], _ingclass("ingc-fid-bad", parameters={"kind": "", "name": "a/b", "apiGroup": "Bad_Group",
                                                                  "scope": "Namespace"})),
    (["create", "-f", "-"], _ingclass("ingc-fid-bad", parameters={"kind": "..", "name": "n", "scope": "Cluster",
                                                                  "namespace": "x"})),
    (["create", "-f", "-"], _ingclass("ingc-fid-bad", parameters={"kind": "K", "name": "n", "scope": "Global"})),
    (["create", "-f", "-"], _ingclass("ingc-fid-bad", parameters={"kind": "K", "name": "n", "scope": "Namespace",
                                                                  "namespace": "Bad.NS"})),
    (["get", "ingressclass"] + INGCLASS_NAMES, None),
    (["patch", "ingressclass", "ingc-fid-plain", "--type=merge", "-p", '{"spec":{"controller":"example.com/other"}}'],
     None),
    (["patch", "ingressclass", "ingc-fid-plain", "--type=merge", "-p", '{"spec":{"controller":"bad"}}'], None),
    # Ingress.
    (["create", "-f", "-", "-o", "json"],
     _ing("ing-tb", ingressClassName="ingc-fid-nginx", tls=[{"hosts": ["tb.example.com"], "secretName": "tb-tls"}],
          rules=[_ing_rule("tb.example.com", _ing_path("/tb"), _ing_path("/exact", "Exact")),
                 _ing_rule("*.example.com"), _ing_rule(None, _ing_path("", "ImplementationSpecific"))])),
    (["create", "-f", "-", "-o", "name"],
     _ing("ing-annotated", {"kubernetes.io/ingress.class": "nginx"},
          defaultBackend={"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "static"}})),
    (["create", "-f", "-"], _ing("ing-bad", {"kubernetes.io/ingress.class": "nginx"}, ingressClassName="other",
                                 defaultBackend={"service": {"name": "s", "port": {"name": "http"}}})),
    (["create", "-f", "-"], _ing("ing-bad")),
    (["create", "-f", "-"], _ing("ing-bad", rules=[])),
    (["create", "-f", "-"], _ing("ing-bad", ingressClassName="Bad_Class", rules=[_ing_rule(None, 
        _ing_path("/a", None), _ing_path("a", "Exact"), _ing_path("/a//b/./c/..", "Prefix"),
        _ing_path("/x%2f", "Prefix"), _ing_path("rel", "ImplementationSpecific"), _ing_path("/", "Regex"))])),
    (["create", "-f", "-"], _ing("ing-bad", rules=[_ing_rule(None,
        _ing_path(backend={}),
        _ing_path(backend={"service": {"name": "s", "port": {"number": 80}}, "resource": {"kind": "K", "name": "n"}}),
        _ing_path(backend={"service": {"name": "s"}}),
        _ing_path(backend={"service": {"name": "s", "port": {"name": "http", "number": 80}}}),
        _ing_path(backend={"service": {"name": "9svc", "port": {"number": 70000}}}),
        _ing_path(backend={"service": {"name": "", "port": {"name": "Bad_Port"}}}),
        _ing_path(backend={"resource": {"apiGroup": "Bad", "kind": "", "name": ""}}))])),
    (["create", "-f", "-"], _ing("ing-bad", rules=[
        _ing_rule("10.0.0.1"), _ing_rule("Bad.Host"), _ing_rule("*.*.example.com"), _ing_rule("a.*.com"),
        {"host": "nohttp.example.com"}, {"host": "empty.example.com", "http": {"paths": []}}],
        tls=[{"hosts": ["*.example.com", "Bad_Host", "*bad"], "secretName": "Bad_Secret"}, {}])),
    (["get", "ingress"], None),
    (["create", "-f", "-", "-o", "name"], _ing("ing-many", rules=[_ing_rule(h) for h in
                                                              ["a.example.com", "", "b.example.com", "c.example.com",
                                                               "d.example.com", "e.example.com"]])),
    (["get", "ingress", "ing-many", "-o", "wide"], None),
    (["describe", "ingress", "ing-tb"], None),
    (["patch", "ingress", "ing-tb", "--subresource=status", "--type=merge", "-p",
      '{"status":{"loadBalancer":{"ingress":[{"ip":"bad-ip"},{"hostname":"10.1.2.3"},{"hostname":"Bad_Host"}]}}}'],
     None),
    (["patch", "ingress", "ing-tb", "--subresource=status", "--type=merge", "-p",
      '{"status":{"loadBalancer":{"ingress":[{"ip":"192.168.10.10"},{"hostname":"lb.example.com"},{"ip":"10.0.0.2"}]}}}',
      "-o", "jsonpath={.status}{\"\\n\"}"], None),
    (["get", "ingress", "ing-tb"], None),
    (["patch", "ingress", "ing-tb", "--type=merge", "-p", '{"spec":{"rules":[{"host":"new.example.com","http":'
      '{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"s","port":{"number":80}}}}]}}]}}',
      "-o", "jsonpath={.metadata.generation} {.status}{\"\\n\"}"], None),
    (["patch", "ingress", "ing-tb", "--type=merge", "-p", '{"spec":{"rules":null}}'], None),
    (["explain", "ingress.spec.rules.http.paths"], None),
    # `kubectl create ingress` sends protobuf.
    (["create", "ingress", "ing-gen", "--class=ingc-fid-nginx", "--rule=tb.example.com/tb*=tensorboard:6006,tls=tb-tls",
      "--rule=/exact=api:http", "--default-backend=fallback:80", "--annotation=team=vision", "-o", "json"], None),
    (["create", "ingress", "ing-gen-bad", "--rule=Bad_Host/=svc:80"], None),
    (["create", "ingress", "ing-gen-empty-class", "--class=", "--rule=/=svc:80", "-o", "jsonpath={.spec}{\"\\n\"}"],
     None),
    (["delete", "ingress", "--all"], None),
    (["delete", "networkpolicy", "--all"], None),
    (["delete", "ingressclass"] + INGCLASS_NAMES, None),
]

# Services as `kubectl get svc` shows them (getServiceExternalIP: the external IPs, a load
# balancer's addresses or <pending>, the external name), and the `kubernetes` Service in `default`
# that kube-apiserver's kubernetesservice controller creates (found in session 30: the embedded
# server had none).
def _svc(name, **spec):
    return json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                       "spec": dict({"selector": {"app": "x"}, "ports": [{"port": 80}]}, **spec)})


SCENARIOS["servicetable"] = [
    (["create", "-f", "-", "-o", "name"], _svc("lb", type="LoadBalancer", ports=[{"port": 80, "nodePort": 30571}])),
    (["create", "-f", "-", "-o", "name"],
     _svc("lb-ext", type="LoadBalancer", externalIPs=["192.0.2.9"], ports=[{"port": 80, "nodePort": 30572}])),
    (["create", "-f", "-", "-o", "name"], _svc("eips", externalIPs=["192.0.2.1", "192.0.2.2"])),
    (["create", "-f", "-", "-o", "name"],
     _svc("np", type="NodePort", externalIPs=["192.0.2.3"], ports=[{"port": 80, "nodePort": 30573}])),
    (["create", "-f", "-", "-o", "name"], json.dumps({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
                                                     "spec": {"type": "ExternalName", "externalName": "db.example.com"}})),
    (["get", "svc", "-o", "custom-columns=NAME:.metadata.name,TYPE:.spec.type"], None),
    (["get", "svc", "-o", "wide"], None, "squeeze"),
    (["patch", "svc", "lb", "--subresource=status", "--type=merge", "-p",
      '{"status":{"loadBalancer":{"ingress":[{"hostname":"lb.example.com"},{"ip":"198.51.100.7"},{"ip":"198.51.100.20"}]}}}',
      "-o", "name"], None),
    (["patch", "svc", "lb-ext", "--subresource=status", "--type=merge", "-p",
      '{"status":{"loadBalancer":{"ingress":[{"ip":"198.51.100.8"}]}}}', "-o", "name"], None),
    (["get", "svc", "lb", "lb-ext", "-o", "custom-columns=NAME:.metadata.name,STATUS:.status"], None),
    # ValidateServiceStatusUpdate: ValidateLoadBalancerStatus.
    (["patch", "svc", "lb", "--subresource=status", "--type=merge", "-p",
      '{"status":{"loadBalancer":{"ingress":[{"ip":"bad"},{"hostname":"h.example.com","ipMode":"VIP"},'
      '{"ip":"198.51.100.9","ipMode":"Bogus"},{"hostname":"10.1.1.1"},{"hostname":"Bad_Host"}]}}}'], None),
    (["patch", "svc", "eips", "--subresource=status", "--type=merge", "-p",
      '{"status":{"loadBalancer":{"ingress":[{"ip":"bad"}]}}}'], None),
    (["patch", "svc", "lb", "--subresource=status", "--type=merge", "-p",
      '{"status":{"loadBalancer":{"ingress":[{"ip":"198.51.100.10","ipMode":"Proxy"}]}}}',
      "-o", "jsonpath={.status}{\"\\n\"}"], None),
    (["patch", "svc", "lb", "--subresource=status", "--type=merge", "-p",
      '{"status":{"loadBalancer":{"ingress":[{"hostname":"lb.example.com"},{"ip":"198.51.100.7"},{"ip":"198.51.100.20"}]}}}',
      "-o", "name"], None),
    (["get", "svc", "lb", "lb-ext"], None, "squeeze"),
    (["get", "svc", "-A", "--field-selector", "metadata.namespace=default", "-o",
      "custom-columns=NAME:.metadata.name,LABELS:.metadata.labels,TYPE:.spec.type,PORT:.spec.ports[0].port,"
      "PORTNAME:.spec.ports[0].name,PROTOCOL:.spec.ports[0].protocol,POLICY:.spec.ipFamilyPolicy,"
      "FAMILIES:.spec.ipFamilies,AFFINITY:.spec.sessionAffinity,SELECTOR:.spec.selector,"
      "TRAFFIC:.spec.internalTrafficPolicy"], None),
    (["delete", "svc", "--all", "-o", "name"], None),
]

# The RBAC objects kube-apiserver bootstraps (bootstrappolicy: admin, edit, view and their
# system:aggregate-to-* parts, the components' and controllers' roles, their bindings, the
# kube-system Roles), used as users use them (`kubectl create rolebinding --clusterrole=view` for a
# job's service account), and kube-controller-manager's ClusterRole aggregation: a role labelled
# aggregate-to-edit adds its rules to edit (and admin), and takes them away when deleted (found in
# session 30: the embedded server had cluster-admin and the discovery roles only).
_BOOT = ["-l", "kubernetes.io/bootstrapping=rbac-defaults"]
_SA = "--as=system:serviceaccount:fid-rbacbootstrap:default"
SCENARIOS["rbacbootstrap"] = [
    (["get", "clusterroles"] + _BOOT + ["-o", "custom-columns=NAME:.metadata.name,AGGREGATES:.aggregationRule"], None),
    (["get", "clusterrolebindings"] + _BOOT + ["-o", "custom-columns=NAME:.metadata.name,ROLE:.roleRef.name,"
                                                     "SUBJECTS:.subjects"], None),
    (["get", "roles", "-A"] + _BOOT + ["-o", "custom-columns=NS:.metadata.namespace,NAME:.metadata.name"], None),
    (["get", "rolebindings", "-A"] + _BOOT + ["-o", "custom-columns=NS:.metadata.namespace,NAME:.metadata.name,"
                                                    "ROLE:.roleRef.name,SUBJECTS:.subjects"], None),
    (["get", "clusterrole", "view", "-o", "json"], None),
    (["get", "clusterrole", "edit", "-o", "jsonpath={.aggregationRule}{\"\\n\"}{.rules}{\"\\n\"}"], None),
    (["get", "clusterrole", "admin", "-o", "jsonpath={.metadata.labels}{\"\\n\"}{.rules}{\"\\n\"}"], None),
    (["get", "clusterrole", "system:node", "system:kube-scheduler", "system:controller:job-controller", "-o",
      "jsonpath={range .items[*]}{.metadata.name} {.rules}{\"\\n\"}{end}"], None),
    (["auth", "can-i", "list", "pods", _SA], None),
    (["create", "rolebinding", "sa-view", "--clusterrole=view", "--serviceaccount=fid-rbacbootstrap:default"], None),
    (["auth", "can-i", "list", "pods", _SA], None),
    (["auth", "can-i", "delete", "pods", _SA], None),
    (["auth", "can-i", "get", "secrets", _SA], None),
    (["create", "rolebinding", "sa-edit", "--clusterrole=edit", "--serviceaccount=fid-rbacbootstrap:default"], None),
    (["auth", "can-i", "create", "deployments.apps", _SA], None),
    (["auth", "can-i", "list", "pytorchjobs.kubeflow.org", _SA], None),
    (["create", "-f", "-", "-o", "name"], json.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "fid-aggregate-training", "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
        "rules": [{"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs", "tfjobs"], "verbs": ["get", "list", "create"]},
                  {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]})),
    (["wait", "--for=jsonpath={.rules[0].apiGroups[0]}=kubeflow.org", "clusterrole/edit", "--timeout=20s"], None),
    (["get", "clusterrole", "edit", "admin", "-o", "jsonpath={range .items[*]}{.metadata.name} {.rules[0]}{\"\\n\"}{end}"],
     None),
    (["auth", "can-i", "list", "pytorchjobs.kubeflow.org", _SA], None),
    (["delete", "clusterrole", "fid-aggregate-training"], None),
    (["wait", "--for=jsonpath={.rules[0].resources[0]}=pods/attach", "clusterrole/edit", "--timeout=20s"], None),
    (["get", "clusterrole", "edit", "-o", "jsonpath={.rules[0]}{\"\\n\"}"], None),
    (["auth", "can-i", "list", "pytorchjobs.kubeflow.org", _SA], None),
]

# core/v1 PodTemplate (served since session 30): the stored template (the pod defaults,
# creationTimestamp null), the table (CONTAINERS, IMAGES, POD LABELS sorted),
# ValidatePodTemplateSpec's refusals at "template" (labels, the pod spec, no ephemeral
# containers), the warnings of GetWarningsForPodTemplate on create and when the template changes,
# generation, no create on PUT, explain.
def _podtemplate(name, labels=None, **spec):
    spec = dict({"containers": [{"name": "main", "image": "busybox"}]}, **spec)
    tpl = {"spec": spec}
    if labels is not None:
        tpl["metadata"] = {"labels": labels}
    return json.dumps({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name}, "template": tpl})


SCENARIOS["podtemplate"] = [
    (["create", "-f", "-", "-o", "json"], _podtemplate("pt-train", {"role": "worker", "app": "train"},
                                                       containers=[{"name": "main", "image": "pytorch/pytorch:2.5",
                                                                    "resources": {"limits": {"nvidia.com/gpu": 1}}},
                                                                   {"name": "side", "image": "busybox"}])),
    (["create", "-f", "-", "-o", "name"], _podtemplate("pt-plain")),
    (["create", "-f", "-", "-o", "name"], _podtemplate("pt-warn", nodeSelector={"beta.kubernetes.io/arch": "amd64"})),
    (["create", "-f", "-"], _podtemplate("pt-bad", {"bad key!": "v"}, containers=[{"name": "Bad_Name", "image": ""}])),
    (["create", "-f", "-"], _podtemplate("pt-bad", ephemeralContainers=[{"name": "dbg", "image": "busybox"}])),
    (["create", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "pt-bad"}})),
    (["get", "podtemplates"], None),
    (["patch", "podtemplate", "pt-plain", "--type=merge", "-p",
      '{"template":{"spec":{"nodeSelector":{"beta.kubernetes.io/os":"linux"}}}}',
      "-o", "jsonpath={.metadata.generation}{\"\\n\"}"], None),
    (["patch", "podtemplate", "pt-plain", "--type=merge", "-p", '{"metadata":{"labels":{"x":"y"}}}',
      "-o", "jsonpath={.metadata.generation}{\"\\n\"}"], None),
    # apiequality.Semantic weighs a quantity by value: "1" written "1." leaves the generation.
    (["patch", "podtemplate", "pt-train", "--type=json", "-p",
      '[{"op":"replace","path":"/template/spec/containers/0/resources/limits/nvidia.com~1gpu","value":"1."}]',
      "-o", "jsonpath={.metadata.generation}{\"\\n\"}"], None),
    (["patch", "podtemplate", "pt-plain", "--type=merge", "-p",
      '{"template":{"spec":{"containers":[{"name":"main","image":"busybox","ports":[{"containerPort":70000}]}]}}}'],
     None),
    (["replace", "--raw", "/api/v1/namespaces/NS/podtemplates/pt-none", "-f", "-"],
     _podtemplate("pt-none").replace('"metadata": {', '"metadata": {"namespace": "NAMESPACE", ', 1)),
    (["explain", "podtemplate.template"], None),
    (["delete", "podtemplates", "--all"], None),
]

# core/v1 ComponentStatus (`kubectl get componentstatuses`, served since session 30): computed on
# each read, the deprecation warning, discovery's get/list, a component not found (a 500), the
# selectors. The oracle runs its scheduler and controller manager with --secure-port=0, so only
# etcd-0's health is compared (FIDELITY.md difference 42).
SCENARIOS["componentstatus"] = [
    (["get", "componentstatus", "etcd-0"], None),
    (["get", "cs", "etcd-0", "-o", "json"], None),
    (["get", "cs", "-o", "name"], None, "uniq"),
    (["get", "cs", "--field-selector", "metadata.name=etcd-0"], None),
    (["get", "cs", "--field-selector", "metadata.name!=etcd-0", "-o", "name"], None, "uniq"),
    (["get", "cs", "-l", "a=b"], None),
    (["get", "cs", "--field-selector", "status.phase=x"], None),
    (["get", "cs", "no-such-component"], None),
    (["delete", "cs", "etcd-0"], None),
    (["get", "cs", "etcd-0", "--as=nobody"], None),
]

# storage.k8s.io/v1 CSIDriver (served since session 30; what the NFS and CephFS CSI charts install):
# SetDefaults_CSIDriver, validateCSIDriverSpec's refusals, the immutable fields (at
# "spec.attachedRequired", sic), the generation counted from none on the first spec change, no
# unconditional update, the table, explain.
def _csidriver(name, **spec):
    return json.dumps({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
                       "spec": spec})


CSI_NAMES = ["nfs.csi.fid.example.com", "cephfs.csi.fid.example.com", "tokens.csi.fid.example.com"]
SCENARIOS["csidriver"] = [
    (["create", "-f", "-", "-o", "json"], _csidriver(CSI_NAMES[0])),
    (["create", "-f", "-", "-o", "jsonpath={.spec}{\"\\n\"}"],
     _csidriver(CSI_NAMES[1], attachRequired=False, podInfoOnMount=True, fsGroupPolicy="File",
                volumeLifecycleModes=["Persistent", "Ephemeral"])),
    (["create", "-f", "-", "-o", "name"],
     _csidriver(CSI_NAMES[2], tokenRequests=[{"audience": "vault"}, {"audience": "", "expirationSeconds": 3600}],
                requiresRepublish=True, storageCapacity=True)),
    (["create", "-f", "-"], _csidriver("bad.csi.fid.example.com", fsGroupPolicy="Sometimes",
                                       volumeLifecycleModes=["Persistent", "Forever"],
                                       tokenRequests=[{"audience": "a", "expirationSeconds": 60},
                                                      {"audience": "a"},
                                                      {"audience": "b", "expirationSeconds": 4294967297}])),
    (["create", "-f", "-"], _csidriver("Bad_Name")),
    (["get", "csidrivers"] + CSI_NAMES, None),
    (["patch", "csidriver", CSI_NAMES[0], "--type=merge", "-p",
      '{"spec":{"attachRequired":false,"volumeLifecycleModes":["Ephemeral"]}}'], None),
    (["patch", "csidriver", CSI_NAMES[0], "--type=merge", "-p", '{"spec":{"podInfoOnMount":true}}',
      "-o", "jsonpath={.metadata.generation}{\"\\n\"}"], None),
    (["patch", "csidriver", CSI_NAMES[0], "--type=merge", "-p", '{"metadata":{"labels":{"a":"b"}}}',
      "-o", "jsonpath={.metadata.generation}{\"\\n\"}"], None),
    (["patch", "csidriver", CSI_NAMES[0], "--type=merge", "-p", '{"spec":{"storageCapacity":true}}',
      "-o", "jsonpath={.metadata.generation}{\"\\n\"}"], None),
    (["replace", "--raw", "/apis/storage.k8s.io/v1/csidrivers/" + CSI_NAMES[1], "-f", "-"],
     _csidriver(CSI_NAMES[1], attachRequired=False)),
    (["explain", "csidriver.spec.fsGroupPolicy"], None),
    (["delete", "csidriver"] + CSI_NAMES, None),
]

# Binding a pod by hand (what a custom scheduler does; the official Python client's
# create_namespaced_binding posts to the legacy `bindings` resource, client-go's Bind to
# pods/binding): the name in the URL against the Binding's, ValidatePodBinding's aggregate (a
# 500), a pod already assigned or gated (409 on pods/binding), a missing pod, a dry run.
def _binding(name, node="fid-node-a", kind="Node"):
    target = {"name": node} if node else {}
    if kind:
        target["kind"] = kind
    return json.dumps({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": target})


def _unscheduled(name, **spec):
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": dict({"schedulerName": "fid-nobody", "containers": [{"name": "main", "image": "busybox"}]},
                                    **spec)})


SCENARIOS["binding"] = [
    (["create", "-f", "-", "-o", "name"], _unscheduled("bind-a")),
    (["create", "-f", "-", "-o", "name"], _unscheduled("bind-b")),
    (["create", "-f", "-", "-o", "name"], _unscheduled("bind-gated", schedulingGates=[{"name": "example.com/wait"}])),
    (["create", "--raw", "/api/v1/namespaces/NS/pods/bind-a/binding", "-f", "-"], _binding("other")),
    (["create", "--raw", "/api/v1/namespaces/NS/pods/bind-a/binding", "-f", "-"], _binding("bind-a", node="", kind="Pod")),
    (["create", "--raw", "/api/v1/namespaces/NS/pods/bind-a/binding", "-f", "-"], _binding("bind-a", node="")),
    (["create", "--raw", "/api/v1/namespaces/NS/pods/bind-a/binding?dryRun=All", "-f", "-"], _binding("bind-a")),
    (["get", "pod", "bind-a", "-o", "jsonpath={.spec.nodeName}|{.status.conditions}{\"\\n\"}"], None),
    (["create", "--raw", "/api/v1/namespaces/NS/pods/bind-a/binding", "-f", "-"], _binding("bind-a")),
    (["get", "pod", "bind-a", "-o", "jsonpath={.spec.nodeName} {.status.conditions[0].type}={.status.conditions[0].status}{\"\\n\"}"], None),
    (["create", "--raw", "/api/v1/namespaces/NS/pods/bind-a/binding", "-f", "-"], _binding("bind-a", node="fid-node-b")),
    (["create", "--raw", "/api/v1/namespaces/NS/bindings", "-f", "-"], _binding("bind-b", kind="")),
    (["get", "pod", "bind-b", "-o", "jsonpath={.spec.nodeName}{\"\\n\"}"], None),
    (["create", "--raw", "/api/v1/namespaces/NS/bindings", "-f", "-"], _binding("bind-b")),
    (["create", "--raw", "/api/v1/namespaces/NS/bindings", "-f", "-"], _binding("bind-missing")),
    (["create", "--raw", "/api/v1/namespaces/NS/bindings", "-f", "-"], _binding("bind-gated")),
    (["create", "--raw", "/api/v1/namespaces/NS/bindings", "-f", "-"], _binding("bind-b", node="", kind="Pod")),
    (["get", "--raw", "/api/v1/namespaces/NS/bindings"], None),
    (["delete", "pod", "--all", "--grace-period=0", "--force"], None),
]

# validateKubeFinalizerName: the groups whose validation calls core/validation's ValidateObjectMeta
# (networking, scheduling, storage, rbac, discovery, and core, apps, batch) refuse a finalizer name
# that is neither standard nor domain-qualified; node.k8s.io, coordination.k8s.io and policy use
# apimachinery's and take it (found by fuzz.py in session 30).
_FIN = ["1Gi", "example.com/ok"]
SCENARIOS["finalizernames"] = [
    (["create", "--dry-run=server", "-f", "-"], json.dumps(body)) for body in [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "pc-fin", "finalizers": _FIN},
         "value": 5},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc-fin", "finalizers": _FIN},
         "provisioner": "example.com/x"},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r-fin", "finalizers": _FIN}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "es-fin", "finalizers": _FIN},
         "addressType": "IPv4", "endpoints": []},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np-fin", "finalizers": _FIN},
         "spec": {"podSelector": {}}},
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "rc-fin", "finalizers": _FIN},
         "handler": "x"},
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l-fin", "finalizers": _FIN}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb-fin", "finalizers": _FIN},
         "spec": {"minAvailable": 1}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-fin", "finalizers": _FIN}},
    ]
] + [
    # An update is checked the same way (ValidateObjectMetaUpdate).
    (["create", "-f", "-", "-o", "name"], json.dumps({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                                     "metadata": {"name": "pc-fin-fidelity"}, "value": 5})),
    (["patch", "priorityclass", "pc-fin-fidelity", "--type=merge", "-p", '{"metadata":{"finalizers":["1Gi"]}}'], None),
    (["delete", "priorityclass", "pc-fin-fidelity"], None),
]

# Discovery as kubectl api-resources shows it: a custom resource's verbs in apiextensions-apiserver's
# order, the CRD kind's category, and namespaces without deletecollection (a 405, after authorization).
SCENARIOS["discovery"] = [
    (["api-resources", "-o", "wide", "--api-group=apiextensions.k8s.io"], None),
    (["api-resources", "-o", "wide", "--api-group=kubeflow.org"], None),
    (["api-resources", "-o", "wide", "--api-group=rbac.authorization.k8s.io"], None),
    (["delete", "--raw", "/api/v1/namespaces"], None),
    (["delete", "--raw", "/api/v1/namespaces", "--as=nobody"], None),
]

SCENARIOS["kueuetrain"] = [
    (["gpupool", "submit", "trainjob", "--name", "kq-tj", "--image", "busybox", "--workers", "2", "--cpu", "1",
      "--queue", "kq-team", "--", "python", "train.py"], None),
    (["get", "trainjob", "kq-tj", "-o", "jsonpath={.spec.suspend} {.metadata.labels}"], None),
    (["gpupool", "submit", "jobset", "--name", "kq-js", "--image", "busybox", "--workers", "2", "--queue", "kq-team",
      "--", "echo", "hi"], None),
    (["get", "jobset", "kq-js", "-o", "jsonpath={.spec.suspend} {.metadata.labels}"], None),
    (["patch", "trainjob", "kq-tj", "--type=json", "-p",
      json.dumps([{"op": "add", "path": "/spec/runtimePatches/-", "value": _kueue_patch(KUEUE_PODSET_PATCH)}])], None),
    (["get", "trainjob", "kq-tj", "-o", "jsonpath={.spec.runtimePatches[1]}"], None),
    (["patch", "trainjob", "kq-tj", "--type=json", "-p",
      '[{"op":"replace","path":"/spec/runtimePatches/1/manager","value":"someone"}]'], None),
    (["patch", "trainjob", "kq-tj", "--type=json", "-p",
      '[{"op":"remove","path":"/spec/runtimePatches/1/trainingRuntimeSpec/template/spec/replicatedJobs"}]'], None),
    (["get", "trainjob", "kq-tj", "-o", "jsonpath={.spec.runtimePatches[1]}"], None),
    (["create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec}"],
     _workload("trainjob-kq-tj-00000", [("node", 2)])),
    (["create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.podSets[*].name} {.spec.podSets[*].count}"],
     _workload("jobset-kq-js-00000", [("driver", 1), ("workers", 2)])),
    # A ClusterQueue created by server-side apply (`gpupool apply -f`) gets its schema's defaults too.
    (["apply", "--server-side", "-f", "-", "-o", "jsonpath={.spec.queueingStrategy} {.spec.preemption}"],
     json.dumps({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "kq-fid-cq"},
                 "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                     {"name": "kq-fid", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}})),
    (["delete", "clusterqueue", "kq-fid-cq"], None),
]
TRAINER_CRDS = [os.path.join(HERE, "..", "..", "data", "crds", n + ".json")
                for n in ("trainer_trainjobs", "trainer_trainingruntimes", "trainer_clustertrainingruntimes",
                          "jobset_jobsets")]

# Quiet steps around a scenario (not compared): cluster-scoped leftovers of an earlier run go first;
# bound pods are force-deleted (no kubelet confirms their end in the oracle), then the nodes.
KUBEFLOW_CRDS = [os.path.join(HERE, "..", "..", "data", "crds", n + ".json")
                 for n in ("training-operator_mpijobs", "training-operator_tfjobs")]
CRD_FILES = [os.path.join(HERE, "data", "widget-crd.json"),
             os.path.join(HERE, "..", "..", "data", "crds", "training-operator_pytorchjobs.json")]
STREAMS_NODES = ["streams-fid-n1", "streams-fid-n2"]
# A client's status on create (an object exported with `kubectl get -o yaml` and created again):
# every registry strategy but the Node's clears it (PrepareForCreate), the status struct's zero
# encoded as Go does; a PersistentVolume starts Pending with lastPhaseTransitionTime, a Namespace
# Active, a pod Pending with its QoS class, a custom resource with the status subresource without
# one, a CRD with its storage version stored. Also the defaults and encodings met on the way: a
# node's allocatable from its capacity, a CRD's names and conversion, a TypedLocalObjectReference's
# apiGroup null, a StatefulSet template's handler port 0 (its template is not validated), and the
# writer's managedFields of atomic structs (LabelSelector, an Ingress backend's port) and of a
# custom resource's keyed list (containers, x-kubernetes-list-type map).
def _withstatus(api, kind, name, spec=None, status=None, **top):
    o = {"apiVersion": api, "kind": kind, "metadata": {"name": name}}
    if spec is not None:
        o["spec"] = spec
    o.update(top)
    if status is not None:
        o["status"] = status
    return json.dumps(o)


_CS_ST = 'jsonpath={.status}{"\\n"}'
_CS_MF = 'jsonpath={.metadata.managedFields[?(@.manager=="kubectl-create")].fieldsV1}{"\\n"}'
_CS_POD = {"metadata": {"labels": {"app": "cs"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
_CS_SEL = {"matchLabels": {"app": "cs"}}
_CS_CLUSTER = [["delete", "--ignore-not-found", "pv/fid-createstatus-pv", "node/fid-createstatus-node",
                "namespace/fid-createstatus-ns", "crd/things.createstatus.fid.example.com"]]
SCENARIOS["createstatus"] = [
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("apps/v1", "Deployment", "d", {"selector": _CS_SEL, "template": _CS_POD},
                                                      {"replicas": 5, "readyReplicas": 2, "observedGeneration": 3})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("apps/v1", "ReplicaSet", "rs", {"replicas": 0, "selector": _CS_SEL, "template": _CS_POD},
                                                      {"replicas": 5, "readyReplicas": 2})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("apps/v1", "StatefulSet", "sts",
                                                      {"replicas": 0, "serviceName": "x", "selector": _CS_SEL, "template": _CS_POD},
                                                      {"replicas": 5, "availableReplicas": 2, "currentRevision": "r"})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("apps/v1", "DaemonSet", "ds",
                                                      {"selector": _CS_SEL, "template": dict(_CS_POD, spec=dict(_CS_POD["spec"], nodeSelector={"none": "x"}))},
                                                      {"numberReady": 5, "currentNumberScheduled": 1, "numberMisscheduled": 0, "desiredNumberScheduled": 2})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("batch/v1", "Job", "j",
                                                      {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
                                                      {"active": 1, "succeeded": 2})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("batch/v1", "CronJob", "cj",
                                                      {"schedule": "0 0 1 1 *", "suspend": True, "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}},
                                                      {"lastScheduleTime": "2026-01-01T00:00:00Z"})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("v1", "Pod", "p",
                                                      {"schedulerName": "fid-nobody", "containers": [{"name": "c", "image": "busybox"}]},
                                                      {"phase": "Running", "hostIP": "10.0.0.1", "message": "m"})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("v1", "Service", "s", {"ports": [{"port": 80}]},
                                                      {"loadBalancer": {"ingress": [{"ip": "10.0.0.2"}]}})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("v1", "PersistentVolumeClaim", "c",
                                                      {"storageClassName": "", "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                                                      {"phase": "Bound", "capacity": {"storage": "1Gi"}})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("v1", "ResourceQuota", "q", {"hard": {"pods": "3"}},
                                                      {"hard": {"pods": "1"}, "used": {"pods": "0"}})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("networking.k8s.io/v1", "Ingress", "i",
                                                      {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}},
                                                      {"loadBalancer": {"ingress": [{"ip": "10.0.0.3"}]}})),
    (["get", "ingress", "i", "-o", _CS_MF], None),
    (["create", "-f", "-", "-o", 'jsonpath={.spec.defaultBackend}{"\\n"}'],
     _withstatus("networking.k8s.io/v1", "Ingress", "i2", {"defaultBackend": {"resource": {"kind": "Bucket", "name": "b"}}})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("policy/v1", "PodDisruptionBudget", "pdb", {"minAvailable": 1, "selector": _CS_SEL},
                                                      {"currentHealthy": 3, "desiredHealthy": 1, "disruptionsAllowed": 2, "expectedPods": 3})),
    (["get", "pdb", "pdb", "-o", _CS_MF], None),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("v1", "Namespace", "fid-createstatus-ns", None, {"phase": "Terminating"})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("v1", "PersistentVolume", "fid-createstatus-pv",
                                                      {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "fid-none",
                                                       "azureFile": {"secretName": "s", "shareName": "x"}},
                                                      {"phase": "Bound", "message": "m"})),
    (["get", "pv", "fid-createstatus-pv", "-o", 'jsonpath={.spec.azureFile}{"\\n"}'], None),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("v1", "Node", "fid-createstatus-node", None,
                                                      {"capacity": {"cpu": "4", "memory": "1Gi"}})),
    (["create", "-f", "-", "-o", 'jsonpath={.spec} {.status}{"\\n"}'],
     _withstatus("apiextensions.k8s.io/v1", "CustomResourceDefinition", "things.createstatus.fid.example.com",
                 {"group": "createstatus.fid.example.com", "names": {"kind": "Thing", "plural": "things"}, "scope": "Namespaced",
                  "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}]},
                 {"storedVersions": ["v0"], "acceptedNames": {"kind": "X", "plural": "xs"}})),
    (["create", "-f", "-", "-o", 'jsonpath={.status}{.spec.template.spec.containers[0].lifecycle}{"\\n"}'],
     _withstatus("apps/v1", "StatefulSet", "sts2", {"replicas": 0, "serviceName": "x", "selector": _CS_SEL,
                 "template": dict(_CS_POD, spec={"containers": [{"name": "c", "image": "busybox",
                                                                 "lifecycle": {"preStop": {"httpGet": {"path": "/stop"}},
                                                                               "postStart": {"tcpSocket": {"host": "h"}}}}]})})),
    (["create", "-f", "-", "-o", _CS_ST], _withstatus("kubeflow.org/v1", "PyTorchJob", "pt",
                                                      {"runPolicy": {"suspend": True}, "pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": _CS_POD}}},
                                                      {"conditions": [{"type": "Succeeded", "status": "True"}]})),
    (["get", "pytorchjob", "pt", "-o", _CS_MF], None),
]

# The status subresource's validation (what a controller or an operator writes, and `kubectl
# patch --subresource=status`): ValidateDeploymentStatus, ValidateReplicaSetStatus and the
# collisionCount that may not go down; ValidatePodDisruptionBudgetStatusUpdate with
# metav1validation.ValidateConditions; ValidatePersistentVolumeClaimStatusUpdate's capacity,
# allocated resources and resize statuses; ValidatePodStatusUpdate's custom condition types (at
# `metadata.conditions`, sic), nominated node, immutable QoS class, container state transitions,
# podIPs and hostIPs; the podIP / podIPs conversion; a container status's zero structs; a
# namespace's phase. Successful
# patches print the object's name only (the controllers of the oracle write these statuses too).
def _status_patch(kind, name, status, out="name"):
    return (["patch", kind, name, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}),
             "-o", out], None)


_SU_SEL = {"matchLabels": {"app": "su-none"}}
_SU_POD = {"metadata": {"labels": {"app": "su-none"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
_SU_CS = 'jsonpath={.status.podIP} {.status.podIPs}{"\\n"}'
SCENARIOS["statusupdates"] = [
    (["create", "-f", "-", "-o", "name"], _withstatus("apps/v1", "Deployment", "d", {"replicas": 0, "selector": _SU_SEL, "template": _SU_POD})),
    (["create", "-f", "-", "-o", "name"], _withstatus("apps/v1", "ReplicaSet", "rs", {"replicas": 0, "selector": _SU_SEL, "template": _SU_POD})),
    (["create", "-f", "-", "-o", "name"], _withstatus("policy/v1", "PodDisruptionBudget", "pdb", {"minAvailable": 1, "selector": _SU_SEL})),
    (["create", "-f", "-", "-o", "name"], _withstatus("v1", "PersistentVolumeClaim", "c",
                                                      {"storageClassName": "fid-none", "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}})),
    (["create", "-f", "-", "-o", "name"], _withstatus("v1", "Pod", "p", {"schedulerName": "fid-nobody", "restartPolicy": "Never",
                                                                        "containers": [{"name": "c", "image": "busybox"}]})),
    _status_patch("deployment", "d", {"replicas": -1}),
    _status_patch("deployment", "d", {"replicas": 2, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 5}),
    _status_patch("deployment", "d", {"observedGeneration": -2, "collisionCount": -1, "unavailableReplicas": -1}),
    _status_patch("deployment", "d", {"collisionCount": 3}),
    _status_patch("deployment", "d", {"collisionCount": 1}),
    _status_patch("replicaset", "rs", {"replicas": 1, "fullyLabeledReplicas": 2, "readyReplicas": 3, "availableReplicas": 4}),
    _status_patch("replicaset", "rs", {"replicas": -1, "observedGeneration": -1}),
    _status_patch("pdb", "pdb", {"disruptionsAllowed": -1, "currentHealthy": -1, "desiredHealthy": -1, "expectedPods": -1}),
    _status_patch("pdb", "pdb", {"conditions": [{"type": "X", "status": "Maybe"}]}),
    _status_patch("pdb", "pdb", {"conditions": [{"type": "bad type!", "status": "True", "reason": "9bad", "lastTransitionTime": "2026-01-01T00:00:00Z",
                                                 "observedGeneration": -1},
                                                {"type": "bad type!", "status": "False", "reason": "Ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
    # (One bad key a map: Go walks a map in random order.)
    _status_patch("pvc", "c", {"capacity": {"storage": "-1Gi"}}),
    _status_patch("pvc", "c", {"allocatedResourceStatuses": {"storage": "Bogus"}}),
    _status_patch("pvc", "c", {"allocatedResourceStatuses": {"cpu": "NodeResizePending"}}),
    _status_patch("pvc", "c", {"allocatedResources": {"storage": "-2Gi"}}),
    _status_patch("pvc", "c", {"allocatedResources": {"memory": "1Gi"}}),
    _status_patch("pvc", "c", {"allocatedResources": {"bad key!": "1"}}),
    _status_patch("pvc", "c", {"allocatedResources": {"storage": "2Gi"}, "allocatedResourceStatuses": {"storage": "ControllerResizeInProgress"}},
                  'jsonpath={.status.allocatedResources} {.status.allocatedResourceStatuses}{"\\n"}'),
    _status_patch("pod", "p", {"podIP": "10.0.0.9"}, _SU_CS),
    _status_patch("pod", "p", {"podIP": "10.0.0.7", "podIPs": [{"ip": "10.0.0.9"}, {"ip": "fd00::9"}]}, _SU_CS),
    _status_patch("pod", "p", {"podIP": None, "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}, _SU_CS),
    _status_patch("pod", "p", {"conditions": [{"type": "bad type!", "status": "True"}, {"type": "Ready", "status": "Maybe"}]}),
    _status_patch("pod", "p", {"podIP": "nope", "podIPs": None}),
    _status_patch("pod", "p", {"podIP": None, "podIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.1"}]}),
    _status_patch("pod", "p", {"podIP": None, "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}, {"ip": "10.0.0.2"}]}),
    _status_patch("pod", "p", {"hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.2"}]}),
    _status_patch("pod", "p", {"hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.1"}]}),
    _status_patch("pod", "p", {"hostIP": "bad", "hostIPs": [{"ip": "bad"}, {"ip": "fd00::1"}]}),
    _status_patch("pod", "p", {"nominatedNodeName": "Bad_Node"}),
    _status_patch("pod", "p", {"qosClass": "Guaranteed"}),
    _status_patch("pod", "p", {"containerStatuses": [{"name": "c", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
                                                     "state": {"terminated": {"exitCode": 0}}}]},
                  'jsonpath={.status.containerStatuses[0]}{"\\n"}'),
    _status_patch("pod", "p", {"containerStatuses": [{"name": "c", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
                                                     "state": {"running": {}}}]}),
    # ValidateNamespaceStatusUpdate (Active until deleted), SetDefaults_NamespaceStatus.
    _status_patch("namespace", "NAMESPACE", {"phase": "Terminating"}),
    _status_patch("namespace", "NAMESPACE", {"phase": None}, 'jsonpath={.status.phase}{"\\n"}'),
]

# A Deployment changed six times in a row (`kubectl set env`, as a script or an editor loop does):
# each change is rolled out, none waits for a later second (the embedded controllers throttled an
# owner past 20 syncs in a second of the clock, session 31).
_RE_REV = 'jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision} {.metadata.generation}{"\\n"}'
SCENARIOS["rapidedits"] = [
    (["create", "deployment", "web", "--image=busybox", "--replicas=0", "-o", "name"], None),
] + [(["set", "env", "deployment/web", "STEP=%d" % i, "-o", "name"], None) for i in range(1, 7)] + [
    (["rollout", "status", "deployment/web", "--timeout=30s"], None),
    (["get", "deployment", "web", "-o", _RE_REV], None),
    (["get", "replicasets", "-o", "custom-columns=REVISION:.metadata.annotations.deployment\\.kubernetes\\.io/revision,"
      "STEP:.spec.template.spec.containers[0].env[0].value", "--sort-by=.metadata.creationTimestamp"], None, "uniq"),
]

# managedFields of the subresources (session 32): a write through status is tracked as that
# subresource's entry; server-side apply through status applies the config's status (it was
# acknowledged and dropped); the scale subresource's writes as managedfields.ScaleHandler leaves
# them (an Update entry loses spec.replicas on any scale write and gets it back without a time
# when the write did not change it, an Apply entry keeps it, the writer owns it when changed), and
# the conflict that names the scale writer (`with subresource "scale"`), the one a re-apply after
# `kubectl scale` meets. A custom resource's scale reads and writes its CRD's specReplicasPath,
# statusReplicasPath and labelSelectorPath, and refuses a patch that leaves no replicas.
def _sf_mf(manager):
    return (["get", "deployment", "d", "-o",
             'jsonpath={range .metadata.managedFields[?(@.manager=="%s")]}%s {.operation} {.subresource} t={.time} '
             '{.fieldsV1}{"\\n"}{end}' % (manager, manager)], None)


_SF_ALL = ('jsonpath={range .metadata.managedFields[*]}{.manager} {.operation} {.subresource} t={.time} '
           '{.fieldsV1}{"\\n"}{end}')
_SF_SCALE = 'jsonpath={.spec} {.status}{"\\n"}'
_SF_DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d"}},
                       "template": {"metadata": {"labels": {"app": "d"}},
                                    "spec": {"containers": [{"name": "busybox", "image": "busybox"}]}}}}
_SF_COND = {"type": "Mine", "status": "True", "lastUpdateTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}
SCENARIOS["subresourcefields"] = [
    (["create", "deployment", "d", "--image=busybox", "--replicas=0"], None),
    (["scale", "deployment", "d", "--replicas=0"], None),
    _sf_mf("kubectl-create"),
    (["patch", "deployment", "d", "--type=merge", "-p", '{"spec":{"replicas":1}}', "-o", "name"], None),
    (["scale", "deployment", "d", "--replicas=1"], None),
    _sf_mf("kubectl-patch"),
    (["scale", "deployment", "d", "--replicas=2"], None),
    _sf_mf("kubectl-patch"),
    _sf_mf("kubectl"),
    (["patch", "deployment", "d", "--subresource=scale", "--type=merge", "-p", '{"spec":{"replicas":2}}', "-o", "name"], None),
    _sf_mf("kubectl"),
    (["apply", "--server-side", "--field-manager=ssa", "-f", "-"], json.dumps(_SF_DEPLOY)),
    (["apply", "--server-side", "--field-manager=ssa", "--force-conflicts", "-f", "-"], json.dumps(_SF_DEPLOY)),
    _sf_mf("kubectl"),
    (["scale", "deployment", "d", "--replicas=3"], None),
    _sf_mf("ssa"),
    (["scale", "deployment", "d", "--replicas=0"], None),
    _sf_mf("ssa"),
    _sf_mf("kubectl"),
    (["patch", "deployment", "d", "--subresource=status", "--type=merge", "-p",
      json.dumps({"status": {"conditions": [dict(_SF_COND, type="Custom")]}}), "-o", "name"], None),
    (["patch", "deployment", "d", "--subresource=status", "--type=merge", "-p",
      json.dumps({"status": {"conditions": [dict(_SF_COND, type="Custom")]}}), "-o", "name"], None),
    _sf_mf("kubectl-patch"),
    (["apply", "--server-side", "--subresource=status", "--field-manager=me", "-f", "-"],
     json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                 "spec": {"replicas": 7}, "status": {"conditions": [_SF_COND]}})),
    (["get", "deployment", "d", "-o", 'jsonpath={.spec.replicas} {.status.conditions[?(@.type=="Mine")].status}{"\\n"}'], None),
    _sf_mf("me"),
    (["apply", "--server-side", "--subresource=status", "--field-manager=me2", "-f", "-"],
     json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                 "status": {"conditions": [dict(_SF_COND, status="False")]}})),
    (["apply", "--server-side", "--subresource=status", "--field-manager=me", "-f", "-"],
     json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "status": {}})),
    (["get", "deployment", "d", "-o", 'jsonpath={.status.conditions[?(@.type=="Mine")].status}{"\\n"}'], None),
    _sf_mf("me"),
    (["apply", "--server-side", "--subresource=status", "--field-manager=me", "-f", "-"],
     '{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nosuch"}, "status": {}}'),
    # A custom resource's scale paths.
    (["wait", "--for=condition=Established", "crd/gangs.fid.example.com"], None),
    (["create", "-f", "-", "-o", "name"], '{"apiVersion": "fid.example.com/v1", "kind": "Gang", "metadata": {"name": "g"}, "spec": {"size": 2}}'),
    (["get", "gang", "g", "--subresource=scale", "-o", _SF_SCALE], None),
    (["patch", "gang", "g", "--subresource=status", "--type=merge", "-p", '{"status":{"have":1,"sel":"a=b"}}', "-o", "name"], None),
    (["scale", "gang", "g", "--replicas=5"], None),
    (["get", "gang", "g", "-o", 'jsonpath={.spec} {.status}{"\\n"}'], None),
    (["get", "gang", "g", "--subresource=scale", "-o", _SF_SCALE], None),
    (["get", "gang", "g", "-o", _SF_ALL], None),
    (["patch", "gang", "g", "--subresource=scale", "--type=merge", "-p", '{"spec":{"replicas":-1}}'], None),
    (["patch", "gang", "g", "--subresource=status", "--type=merge", "-p", '{"status":{"have":-2}}'], None),
    (["create", "-f", "-", "-o", "name"], '{"apiVersion": "fid.example.com/v1", "kind": "Gang", "metadata": {"name": "e"}, "spec": {"note": "x"}}'),
    (["get", "gang", "e", "--subresource=scale", "-o", _SF_SCALE], None),
    (["patch", "gang", "e", "--subresource=scale", "--type=merge", "-p", '{"metadata":{"labels":{"a":"b"}}}'], None),
    (["patch", "gang", "e", "--subresource=scale", "--type=merge", "-p", '{"spec":{"replicas":0}}', "-o", "name"], None),
    (["get", "gang", "e", "-o", 'jsonpath={.spec}{"\\n"}'], None),
    (["replace", "--raw", "/apis/fid.example.com/v1/namespaces/NS/gangs/e/scale", "-f", "-"],
     '{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "e"}, "spec": {"replicas": 4}}'),
    (["get", "gang", "e", "-o", 'jsonpath={.spec}{"\\n"}'], None),
    (["get", "gang", "e", "-o", _SF_ALL], None),
    (["apply", "--server-side", "--field-manager=ssa", "-f", "-"],
     '{"apiVersion": "fid.example.com/v1", "kind": "Gang", "metadata": {"name": "a"}, "spec": {"size": 1}}'),
    (["scale", "gang", "a", "--replicas=2"], None),
    (["get", "gang", "a", "-o", _SF_ALL], None),
    (["apply", "--server-side", "--field-manager=ssa", "-f", "-"],
     '{"apiVersion": "fid.example.com/v1", "kind": "Gang", "metadata": {"name": "a"}, "spec": {"note": "n"}}'),
    (["scale", "gang", "a", "--replicas=3"], None),
    (["get", "gang", "a", "-o", _SF_ALL], None),
    (["apply", "--server-side", "--field-manager=ssa", "-f", "-"],
     '{"apiVersion": "fid.example.com/v1", "kind": "Gang", "metadata": {"name": "a"}, "spec": {"note": "n", "size": 9}}'),
    (["get", "gang", "a", "-o", 'jsonpath={.spec}{"\\n"}'], None),
    (["delete", "gang", "g", "e", "a"], None),
]

# The managedFields entries of the control plane's own writes (session 32): the controllers'
# creates and updates as kube-controller-manager (a ReplicaSet and its pods, a Deployment's and a
# Job's status through the status subresource, Endpoints, EndpointSlices, the namespace's
# kube-root-ca.crt, a quota's status, the legacy recorder's Events) and the scheduler's
# PodScheduled condition as kube-scheduler; the oracle's binaries are named "-1.32" (normalized).
_CF_MF = 'jsonpath={range .metadata.managedFields[*]}{.manager} {.operation} {.subresource} {.fieldsV1}{"\\n"}{end}'
_CF_ITEMS = ('jsonpath={range .items[*]}{range .metadata.managedFields[*]}{.manager} {.operation} {.subresource} '
             '{.fieldsV1}{"\\n"}{end}{end}')
SCENARIOS["controllerfields"] = [
    (["create", "deployment", "web", "--image=busybox", "--replicas=1", "-o", "name"], None),
    (["wait", "--for=jsonpath={.status.replicas}=1", "deployment/web"], None),
    (["wait", "--for=condition=Progressing", "deployment/web"], None),
    (["get", "deployment", "web", "-o", _CF_MF], None),
    (["get", "replicasets", "-l", "app=web", "-o", _CF_ITEMS], None),
    (["wait", "--for=condition=PodScheduled=false", "pod", "-l", "app=web"], None),
    (["get", "pods", "-l", "app=web", "-o", _CF_ITEMS], None),
    (["create", "job", "j", "--image=busybox", "-o", "name"], None),
    (["wait", "--for=jsonpath={.status.active}=1", "job/j"], None),
    (["get", "job", "j", "-o", _CF_MF], None),
    (["get", "events", "--field-selector", "involvedObject.kind=Job,reason=SuccessfulCreate", "-o", _CF_ITEMS], None),
    (["create", "service", "clusterip", "s", "--tcp=80", "-o", "name"], None),
    (["wait", "--for=create", "endpoints/s"], None),
    (["get", "endpoints", "s", "-o", _CF_MF], None),
    (["wait", "--for=create", "endpointslices", "-l", "kubernetes.io/service-name=s"], None, "capture:SLICE"),
    (["get", "endpointslices", "-l", "kubernetes.io/service-name=s", "-o", _CF_ITEMS], None),
    (["get", "configmap", "kube-root-ca.crt", "-o", _CF_MF], None),
    (["create", "quota", "q", "--hard=pods=5", "-o", "name"], None),
    (["wait", "--for=jsonpath={.status.used.pods}=2", "quota/q"], None),
    (["get", "quota", "q", "-o", _CF_MF], None),
    (["delete", "deployment/web", "job/j", "service/s", "quota/q"], None),
]

# The TTL-after-finished controller (ttlafterfinished_controller.go): a finished Job with
# ttlSecondsAfterFinished is deleted once its TTL has passed (Foreground: its pods first). A Job of
# completions 0 is Complete at once; a TTL of 0 deletes it at once, one of an hour keeps it (the
# exact second is checked on a manual clock: ttlafterfinished_test.cpp). The wait's own line
# depends on whether the Job was still there when kubectl looked: only its exit is shown.
def _ttl_job(name, completions=0, **spec):
    tmpl = {"spec": {"restartPolicy": "Never", "nodeSelector": {"fid": "nowhere"},
                     "containers": [{"name": "c", "image": "busybox"}]}}
    return json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                       "spec": dict(spec, completions=completions, template=tmpl)})


SCENARIOS["ttlafterfinished"] = [
    (["create", "-f", "-", "-o", "name"], _ttl_job("zero", ttlSecondsAfterFinished=0)),
    (["wait", "--for=delete", "job/zero", "--timeout=30s"], None, "capture:W"),
    (["get", "job", "zero", "-o", "name"], None),
    (["create", "-f", "-", "-o", "name"], _ttl_job("hour", ttlSecondsAfterFinished=3600)),
    (["wait", "--for=condition=Complete", "job/hour", "--timeout=30s"], None),
    (["get", "job", "hour", "-o", 'jsonpath={.spec.ttlSecondsAfterFinished} {.status.conditions[*].type}{"\\n"}'], None),
    (["create", "-f", "-", "-o", "name"], _ttl_job("none")),
    (["wait", "--for=condition=Complete", "job/none", "--timeout=30s"], None),
    # A Job that fails (its deadline passes while its pod cannot be scheduled) goes with its pod.
    (["create", "-f", "-", "-o", "name"], _ttl_job("failed", 1, activeDeadlineSeconds=1, ttlSecondsAfterFinished=0)),
    (["wait", "--for=delete", "job/failed", "--timeout=60s"], None, "capture:W"),
    (["get", "job", "failed", "-o", "name"], None),
    (["get", "pods", "-l", "job-name=failed", "-o", "name"], None),
    (["get", "jobs", "-o", "name"], None),
    (["delete", "jobs", "--all", "-o", "name"], None),
]

# Field selectors as each kind's field label conversion and ToSelectableFields have them (session
# 33): events.k8s.io/v1's own names (regarding.*, reportingController) mapped to the core Event's
# and the core names refused; a core Event's `source` its reportingComponent when source.component
# is empty; a pod's unset spec.hostNetwork "false"; a Job's unset status.succeeded "0".
def _fl_event(name, reason, extra):
    return json.dumps(dict({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name}, "reason": reason,
                            "message": "m", "type": "Normal"}, **extra))


_FL_REASONS = 'jsonpath={range .items[*]}{.reason} {end}{"\\n"}'
SCENARIOS["fieldlabels"] = [
    (["create", "-f", "-", "-o", "name"], _fl_event("e1", "FromSource", {
        "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "NAMESPACE"}, "source": {"component": "fid-src"}})),
    (["create", "-f", "-", "-o", "name"], _fl_event("e2", "FromController", {
        "type": "Warning", "involvedObject": {"kind": "ConfigMap", "name": "c1", "namespace": "NAMESPACE"},
        "reportingComponent": "fid-ctl", "reportingInstance": "fid-ctl-1", "action": "Do",
        "eventTime": "2026-01-01T00:00:00.000000Z"})),
] + [(["get", "events", "--field-selector", f, "-o", _FL_REASONS], None)
     for f in ("source=fid-src", "source=fid-ctl", "source!=fid-ctl", "reportingComponent=fid-ctl", "involvedObject.kind=Pod")] + [
    (["get", "events.v1.events.k8s.io", "--field-selector", f, "-o", _FL_REASONS], None)
    for f in ("regarding.kind=Pod", "regarding.name=c1", "reportingController=fid-ctl",
              "reason=FromSource", "type=Warning", "metadata.name=e2", "regarding.kind!=Pod,type=Normal",
              "involvedObject.kind=Pod", "source=fid-src", "reportingComponent=fid-ctl", "note=m")] + [
    (["get", "--raw", "/apis/events.k8s.io/v1/namespaces/NS/events?fieldSelector=regarding.name%3Dp1"], None),
    (["run", "hn", "--image=busybox", "--overrides", '{"spec":{"hostNetwork":true}}', "-o", "name"], None),
    (["run", "nh", "--image=busybox", "-o", "name"], None),
] + [(["get", "pods", "--field-selector", f, "-o", "name"], None)
     for f in ("spec.hostNetwork=false", "spec.hostNetwork=true", "spec.hostNetwork!=false", "spec.hostNetwork!=true")] + [
    (["create", "-f", "-", "-o", "name"], _ttl_job("j", 1)),
] + [(["get", "jobs", "--field-selector", f, "-o", "name"], None)
     for f in ("status.successful=0", "status.successful!=0", "status.successful=1")] + [
    (["delete", "jobs", "--all", "-o", "name"], None),
    (["delete", "pods", "hn", "nh", "-o", "name"], None),
]

# CustomResourceFieldSelectors (GA in v1.32, session 32): a CRD version's selectableFields select its
# objects in lists and watches (a value of any of the three types, `!=`, the empty value), other
# labels refused as crConverter.ConvertFieldLabel refuses them (a watch selects through the same
# rule: store_test); and ValidateCustomResourceSelectableFields
# refusing paths (cel.ValidFieldPath without array notation), metadata, other types, duplicates,
# more than 8.
def _sieve(name, **spec):
    return json.dumps({"apiVersion": "fid.example.com/v1", "kind": "Sieve", "metadata": {"name": name}, "spec": spec})


def _sieve_fields(*paths):
    return (["patch", "crd", "sieves.fid.example.com", "--type=json", "-p",
             json.dumps([{"op": "replace", "path": "/spec/versions/0/selectableFields",
                          "value": [{"jsonPath": p} for p in paths]}]), "-o", "name"], None)


SCENARIOS["crdselectors"] = [
    (["wait", "--for=condition=Established", "crd/sieves.fid.example.com", "--timeout=30s"], None),
    (["create", "-f", "-", "-o", "name"], _sieve("red", color="red", size=3, enabled=True)),
    (["create", "-f", "-", "-o", "name"], _sieve("blue", color="blue", size=5, enabled=False)),
    (["create", "-f", "-", "-o", "name"], _sieve("plain")),
] + [(["get", "sieves", "--field-selector", f, "-o", "name"], None)
     for f in ("spec.color=red", "spec.color!=red", "spec.color=", "spec.size=5", "spec.size=05", "spec.enabled=true",
               "spec.enabled=false", "metadata.name=red,spec.size=3", "spec.other=x", "spec.size>3", "status.x=y")] + [
    _sieve_fields(".spec.nosuch"),
    _sieve_fields(".spec.color", ".spec.color"),
    _sieve_fields(".metadata.name"),
    _sieve_fields("spec.color"),
    _sieve_fields(".spec.tags"),
    _sieve_fields(".spec.ratio", ".spec"),
    _sieve_fields(".spec.labels['a']"),
    _sieve_fields(".spec.labels.a", ".spec.on", ".spec.true", ""),
    _sieve_fields(".spec."),
    _sieve_fields(*[".spec.color"] * 2 + [".spec.size", ".spec.enabled", ".spec.true", ".spec.other", ".spec.labels.a",
                    ".spec.labels.b", ".spec.labels.c", ".spec.labels.d"]),
    _sieve_fields(".spec.color", ".spec.other"),
    (["get", "sieves", "--field-selector", "spec.other=", "-o", "name"], None),
    (["get", "sieves", "--field-selector", "spec.size=3", "-o", "name"], None),
    (["delete", "sieves", "--all", "-o", "name"], None),
]

# The tokens controller (tokens_controller.go, session 32): a kubernetes.io/service-account-token
# Secret naming an account gets token, ca.crt and namespace and the account's uid annotation, and
# its token authenticates as the account; one naming no account is deleted; deleting the account
# deletes its token Secrets.
def _token_secret(name, account):
    return json.dumps({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                       "metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": account}}})


SCENARIOS["tokensecrets"] = [
    (["config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"], None, "capture:SERVER"),
    (["create", "serviceaccount", "tok", "-o", "name"], None),
    (["create", "-f", "-", "-o", "name"], _token_secret("tok-secret", "tok")),
    (["wait", "--for=jsonpath={.data.token}", "secret/tok-secret", "--timeout=30s"], None),
    (["get", "secret", "tok-secret", "-o", "go-template={{range $k, $v := .data}}{{$k}} {{end}}"
      "{{.data.namespace | base64decode}} {{index .metadata.annotations \"kubernetes.io/service-account.uid\"}}\n"], None),
    (["get", "serviceaccount", "tok", "-o", "jsonpath={.metadata.uid}{\"\\n\"}"], None),
    (["get", "secret", "tok-secret", "-o", "go-template={{.data.token | base64decode}}"], None, "capture:T"),
    (_as_token("T", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}{\"\\n\"}"), None),
    (["get", "secret", "tok-secret", "-o", "go-template={{index .metadata.labels \"kubernetes.io/legacy-token-last-used\" | len}}\n"], None),
    (["create", "-f", "-", "-o", "name"], _token_secret("orphan", "nobody")),
    (["wait", "--for=delete", "secret/orphan", "--timeout=30s"], None, "capture:W"),
    (["get", "secret", "orphan", "-o", "name"], None),
    (["create", "-f", "-", "-o", "name"], _token_secret("tok-secret2", "tok")),
    (["wait", "--for=jsonpath={.data.token}", "secret/tok-secret2", "--timeout=30s"], None),
    (["delete", "serviceaccount", "tok", "-o", "name"], None),
    (["wait", "--for=delete", "secret/tok-secret", "secret/tok-secret2", "--timeout=30s"], None, "capture:W"),
    (["get", "secrets", "--field-selector", "type=kubernetes.io/service-account-token", "-o", "name"], None),
    # (The token of the deleted account: kube-apiserver's token cache takes it for 10 s more, known
    # difference 38.)
]

# Secret and ConfigMap content (ValidateSecret, ValidateConfigMap, warningsForSecret; session 32):
# the docker config types' JSON, the 1 MiB limits, the TLS key pair warning.
_BIG = "a" * (1 << 20)
SCENARIOS["secretcontent"] = [
    (["create", "secret", "generic", "d1", "--type=kubernetes.io/dockerconfigjson", "--from-literal=.dockerconfigjson=notjson"], None),
    (["create", "secret", "generic", "d2", "--type=kubernetes.io/dockerconfigjson", "--from-literal=.dockerconfigjson=[1]"], None),
    (["create", "secret", "generic", "d3", "--type=kubernetes.io/dockercfg", "--from-literal=.dockercfg={\"a\":"], None),
    (["create", "secret", "generic", "d4", "--type=kubernetes.io/dockercfg", "--from-literal=.dockercfg=null", "-o", "name"], None),
    (["create", "secret", "generic", "d5", "--type=kubernetes.io/dockerconfigjson", "--from-literal=.dockerconfigjson=\"x\""], None),
    (["create", "secret", "generic", "d6", "--type=kubernetes.io/dockerconfigjson", "--from-literal=.dockerconfigjson={} x"], None),
    (["create", "secret", "generic", "d7", "--type=kubernetes.io/dockerconfigjson", "--from-literal=.dockerconfigjson=",
      "--from-literal=x=y"], None),
    (["create", "secret", "docker-registry", "d8", "--docker-server=x", "--docker-username=u", "--docker-password=p", "-o", "name"], None),
    (["patch", "secret", "d8", "--type=merge", "-p", '{"data":{".dockerconfigjson":"e30="}}', "-o", "name"], None),
    (["patch", "secret", "d8", "--type=merge", "-p", '{"data":{".dockerconfigjson":"Ww=="}}', "-o", "name"], None),
    (["create", "-f", "-", "-o", "name"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                                                      "data": {"x": _BIG[:-10]}, "binaryData": {"y": "YWJjZGVmZ2hpams="}})),
    (["create", "-f", "-", "-o", "name"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fits"},
                                                      "data": {"x": _BIG[:-10]}, "binaryData": {"y": "YWJjZGVmZ2hpag=="}})),
    (["create", "-f", "-", "-o", "name"], json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "big"},
                                                      "stringData": {"x": _BIG, "y": "z"}})),
    (["create", "-f", "-", "-o", "name"], json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "fits"},
                                                      "stringData": {"x": _BIG}})),
    (["create", "secret", "generic", "t1", "--type=kubernetes.io/tls", "--from-literal=tls.crt=x", "--from-literal=tls.key=y", "-o", "name"], None),
    (["create", "secret", "generic", "t2", "--type=kubernetes.io/tls", "--from-literal=tls.crt=-----BEGIN PRIVATE KEY-----\nQQ==\n-----END PRIVATE KEY-----\n",
      "--from-literal=tls.key=y", "-o", "name"], None),
    (["create", "secret", "generic", "t3", "--type=kubernetes.io/tls", "--from-literal=tls.crt=-----BEGIN X-----\nQQ==\n-----END X-----\n-----BEGIN Y-----\n-----END Y-----\n",
      "--from-literal=tls.key=y", "-o", "name"], None),
    (["create", "secret", "generic", "t4", "--type=kubernetes.io/tls", "--from-literal=tls.crt=-----BEGIN CERTIFICATE-----\nQQ==\n-----END CERTIFICATE-----\n",
      "--from-literal=tls.key=-----BEGIN CERTIFICATE-----\nQQ==\n-----END CERTIFICATE-----\n", "-o", "name"], None),
    (["create", "secret", "generic", "t5", "--type=kubernetes.io/tls", "--from-literal=tls.crt=-----BEGIN CERTIFICATE-----\nQQ==\n-----END CERTIFICATE-----\n",
      "--from-literal=tls.key=-----BEGIN A-----\n-----END A-----\n-----BEGIN B-----\n-----END B-----\n", "-o", "name"], None),
    (["create", "secret", "generic", "t6", "--type=kubernetes.io/tls", "--from-literal=tls.crt=-----BEGIN CERTIFICATE-----\nQQ==\n-----END CERTIFICATE-----\n",
      "--from-literal=tls.key=", "-o", "name"], None),
    (["patch", "secret", "t1", "--type=merge", "-p", '{"data":{"tls.crt":"eQ=="}}', "-o", "name"], None),
]

# Impersonation (apiserver endpoints/filters/impersonation.go): a service account's groups when no
# group is asked for, the uid and extras (as-user-extra in the kubeconfig: kubectl has no flag),
# system:authenticated added unless system:(un)authenticated is asked for, system:anonymous made
# unauthenticated, a user name that is no service account's.
_WHO = ["-o", "jsonpath={.status.userInfo}{\"\\n\"}"]
SCENARIOS["impersonation"] = [
    (["create", "rolebinding", "grp", "--clusterrole=view", "--group=system:serviceaccounts:NAMESPACE", "-o", "name"], None),
    (["create", "configmap", "c1", "--from-literal=a=b", "-o", "name"], None),
    (["get", "configmap", "c1", "--as=system:serviceaccount:NAMESPACE:anyone", "-o", "name"], None),
    (["auth", "can-i", "list", "configmaps", "--as=system:serviceaccount:NAMESPACE:anyone"], None),
    (["get", "configmap", "c1", "--as=system:serviceaccount:NAMESPACE:anyone", "--as-group=g", "-o", "name"], None),
    (["auth", "whoami", "--as=system:serviceaccount:NAMESPACE:anyone"] + _WHO, None),
    (["auth", "whoami", "--as=system:serviceaccount:NAMESPACE:anyone", "--as-group=extra"] + _WHO, None),
    (["auth", "whoami", "--as=system:serviceaccount:bad"] + _WHO, None),
    (["auth", "whoami", "--as=system:serviceaccount:NAMESPACE:Bad_Name"] + _WHO, None),
    (["auth", "whoami", "--as=u", "--as-uid=abc"] + _WHO, None),
    (["auth", "whoami", "--as=u", "--as-group=g", "--as-uid=abc", "-o", "jsonpath={.status.userInfo.uid}"], None),
    (["auth", "whoami", "--as=u", "--as-group=system:authenticated"] + _WHO, None),
    (["auth", "whoami", "--as=u", "--as-group=system:unauthenticated"] + _WHO, None),
    (["auth", "can-i", "create", "pods", "--as=system:anonymous"], None),
    (["get", "configmap", "c1", "--as=system:anonymous"], None),
    (["auth", "whoami", "--as=system:anonymous"] + _WHO, None),
    (["auth", "whoami", "--as=u"] + _WHO, None, "kubeconfig-user:" + json.dumps({"as-user-extra": {"scopes": ["a", "b"]}})),
    (["auth", "whoami", "--as=u"] + _WHO, None,
     "kubeconfig-user:" + json.dumps({"as-user-extra": {"acme.com/project": ["p1"], "Team": ["t"]}})),
    (["auth", "whoami", "--as=system:serviceaccount:NAMESPACE:anyone", "--as-uid=u1"] + _WHO, None,
     "kubeconfig-user:" + json.dumps({"as-user-extra": {"k": ["v"]}})),
]

# The PodSecurity admission plugin (plugin/pkg/admission/security/podsecurity,
# staging/src/k8s.io/pod-security-admission) in its default configuration: the namespace labels
# and their validation, pods refused at the enforce level with every check's message in order,
# warnings at the warn level for pods and workload templates, versions, significant pod updates,
# and the existing pods a stricter enforce level warns about.
_PSA = "pod-security.kubernetes.io/"
_RESTRICTED_OK = {"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                  "containers": [{"name": "c", "image": "x", "securityContext": {
                      "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}]}


def _psa_pod(name, spec, meta=None):
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": dict({"name": name}, **(meta or {})), "spec": spec})


def _psa_workload(api, kind, name, pod_spec):
    template = {"metadata": {"labels": {"app": name}}, "spec": pod_spec}
    spec = {"selector": {"matchLabels": {"app": name}}, "template": template}
    if kind == "Deployment":
        spec["replicas"] = 0
    if kind == "StatefulSet":
        spec.update(replicas=0, serviceName=name)
    if kind == "Job":
        spec = {"suspend": True, "template": dict(template, spec=dict(pod_spec, restartPolicy="Never"))}
    if kind == "CronJob":
        spec = {"schedule": "0 0 * * *", "suspend": True, "jobTemplate": {"spec": {"template": dict(
            template, spec=dict(pod_spec, restartPolicy="Never"))}}}
    return json.dumps({"apiVersion": api, "kind": kind, "metadata": {"name": name}, "spec": spec})


_BASELINE_BAD = {
    "hostPID": True,
    "securityContext": {"seLinuxOptions": {"type": "spc_t", "user": "u"}, "seccompProfile": {"type": "Unconfined"},
                        "sysctls": [{"name": "kernel.msgmax", "value": "1"}, {"name": "net.ipv4.tcp_rmem", "value": "1 2 3"}]},
    "volumes": [{"name": "h", "hostPath": {"path": "/tmp"}}, {"name": "e", "emptyDir": {}}],
    "initContainers": [{"name": "i", "image": "x", "securityContext": {"privileged": True,
                                                                        "capabilities": {"add": ["NET_ADMIN", "CHOWN"]}}}],
    "containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 9, "hostPort": 10}],
                    "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]},
                                        "appArmorProfile": {"type": "Unconfined"}}},
                   {"name": "b", "image": "x", "ports": [{"containerPort": 81, "hostPort": 8081}],
                    "securityContext": {"seccompProfile": {"type": "Unconfined"}}}],
}
_RESTRICTED_BAD = {
    "securityContext": {"runAsUser": 0},
    "volumes": [{"name": "n", "nfs": {"server": "s", "path": "/p"}}, {"name": "g", "gitRepo": {"repository": "r"}},
                {"name": "c", "configMap": {"name": "c"}}],
    "containers": [{"name": "a", "image": "x", "securityContext": {"runAsNonRoot": False, "allowPrivilegeEscalation": True,
                                                                    "capabilities": {"add": ["NET_BIND_SERVICE", "KILL"], "drop": ["ALL"]}}},
                   {"name": "b", "image": "x", "securityContext": {"runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}}}],
}
SCENARIOS["podsecurity"] = [
    (["label", "namespace", "NAMESPACE", _PSA + "enforce=restricted", _PSA + "warn=baseline"], None),
    (["run", "p1", "--image=x"], None),
    (["run", "p2", "--image=x", "--overrides", json.dumps({"spec": {"containers": [
        {"name": "p2", "image": "x", "securityContext": {"privileged": True}}]}})], None),
    (["create", "-f", "-", "-o", "name"], _psa_pod("ok", _RESTRICTED_OK)),
    (["create", "--dry-run=server", "-f", "-"], _psa_pod("rbad", _RESTRICTED_BAD)),
    (["create", "--dry-run=server", "-f", "-"], _psa_pod("rbad2", dict(_RESTRICTED_BAD, securityContext={
        "runAsNonRoot": True, "seccompProfile": {"type": "Localhost", "localhostProfile": "p"}}))),
    (["create", "--dry-run=server", "-f", "-"], _psa_pod("win", {"os": {"name": "windows"}, "containers": [
        {"name": "c", "image": "x"}]})),
    (["label", "namespace", "NAMESPACE", _PSA + "enforce=bogus", "--overwrite"], None),
    (["label", "namespace", "NAMESPACE", _PSA + "enforce-version=1.30", _PSA + "audit=nope", _PSA + "warn-version=v1.01",
      "--overwrite"], None),
    (["label", "namespace", "NAMESPACE", _PSA + "enforce-version=v1.24"], None),
    (["create", "--dry-run=server", "-f", "-"], _psa_pod("old", {"os": {"name": "windows"}, "containers": [
        {"name": "c", "image": "x", "securityContext": {"runAsNonRoot": True}}]})),
    (["create", "--dry-run=server", "-f", "-"], _psa_pod("old2", dict(_RESTRICTED_OK, securityContext={
        "runAsNonRoot": True, "sysctls": [{"name": "net.ipv4.tcp_keepalive_time", "value": "1"}]}))),
    (["label", "namespace", "NAMESPACE", _PSA + "enforce=baseline", _PSA + "enforce-version=latest", "--overwrite"], None),
    (["run", "p3", "--image=x", "--overrides", json.dumps({"spec": {"hostNetwork": True, "containers": [
        {"name": "p3", "image": "x"}]}})], None),
    (["create", "--dry-run=server", "-f", "-"], _psa_pod("bbad", _BASELINE_BAD, {"annotations": {
        "container.apparmor.security.beta.kubernetes.io/b": "unconfined"}})),
    (["create", "-f", "-", "-o", "name"], _psa_pod("base", {"containers": [{"name": "c", "image": "x"}]})),
    (["label", "namespace", "NAMESPACE", _PSA + "warn=restricted", "--overwrite"], None),
    (["create", "-f", "-", "-o", "name"], _psa_pod("base2", {"containers": [{"name": "c", "image": "x"}]})),
    (["create", "-f", "-", "-o", "name"], _psa_workload("apps/v1", "Deployment", "d", {"hostPID": True, "containers": [
        {"name": "c", "image": "x"}]})),
    (["create", "--dry-run=server", "-f", "-", "-o", "name"],
     _psa_workload("apps/v1", "Deployment", "d2", {"containers": [{"name": "c", "image": "x"}]})),
    (["create", "--dry-run=server", "-f", "-", "-o", "name"],
     _psa_workload("apps/v1", "StatefulSet", "s", {"containers": [{"name": "c", "image": "x"}]})),
    (["create", "--dry-run=server", "-f", "-", "-o", "name"],
     _psa_workload("apps/v1", "DaemonSet", "ds", {"containers": [{"name": "c", "image": "x"}]})),
    (["create", "--dry-run=server", "-f", "-", "-o", "name"],
     _psa_workload("apps/v1", "ReplicaSet", "rs", {"containers": [{"name": "c", "image": "x"}]})),
    (["create", "--dry-run=server", "-f", "-", "-o", "name"],
     _psa_workload("batch/v1", "Job", "j", {"containers": [{"name": "c", "image": "x"}]})),
    (["create", "--dry-run=server", "-f", "-", "-o", "name"],
     _psa_workload("batch/v1", "CronJob", "cj", dict(_RESTRICTED_OK))),
    (["scale", "deployment", "d", "--replicas=0"], None),
    (["label", "pod", "base", "a=b"], None),
    (["set", "image", "pod/base", "c=y"], None),
    (["label", "namespace", "NAMESPACE", _PSA + "warn-"], None),
    (["label", "namespace", "NAMESPACE", _PSA + "enforce=restricted", "--overwrite"], None),
    (["set", "image", "pod/base", "c=z"], None),
    (["label", "namespace", "NAMESPACE", _PSA + "enforce-", _PSA + "audit=restricted"], None),
    (["run", "p5", "--image=x", "-o", "name"], None),
    (["get", "pods", "-o", "name"], None),
]

# DefaultIngressClass (plugin/pkg/admission/network/defaultingressclass): a new Ingress without a
# class (neither spec.ingressClassName nor the kubernetes.io/ingress.class annotation) gets the
# default IngressClass, the newest (or, created in the same second, the first by name).
_DIC = ["dic-fid-b", "dic-fid-a"]


def _dic_class(name):
    return json.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {
        "name": name, "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
        "spec": {"controller": "example.com/x"}})


_ING_CLASS = ["-o", "jsonpath={.spec.ingressClassName}|{.metadata.annotations}{\"\\n\"}"]
SCENARIOS["defaultingressclass"] = [
    (["create", "ingress", "i0", "--rule=foo.com/=svc:80"] + _ING_CLASS, None),
    (["create", "-f", "-", "-o", "name"], _dic_class(_DIC[0])),
    (["create", "ingress", "i1", "--rule=foo.com/=svc:80"] + _ING_CLASS, None),
    (["create", "ingress", "i2", "--rule=foo.com/=svc:80", "--class=mine"] + _ING_CLASS, None),
    (["create", "ingress", "i3", "--rule=foo.com/=svc:80", "--annotation=kubernetes.io/ingress.class=other"] + _ING_CLASS, None),
    (["create", "-f", "-", "-o", "name"], _dic_class(_DIC[1])),
    (["create", "ingress", "i4", "--rule=foo.com/=svc:80"] + _ING_CLASS, None),
    (["patch", "ingress", "i0", "--type=merge", "-p", '{"metadata":{"labels":{"a":"b"}}}'] + _ING_CLASS, None),
    (["delete", "ingressclass"] + _DIC, None),
    (["create", "ingress", "i5", "--rule=foo.com/=svc:80"] + _ING_CLASS, None),
]

# `kubectl auth reconcile`: a RoleBinding whose roleRef changed is deleted and created again; the
# DELETE carries a protobuf DeleteOptions body (handlers/delete.go decodes it in its content type).
_RECON_ROLE = ('{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r1","namespace":"NAMESPACE"},'
               '"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}')


def _recon_binding(kind, name, user):
    return json.dumps({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                       "metadata": {"name": "rb1", "namespace": "NAMESPACE"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
                       "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]})


SCENARIOS["authreconcile"] = [
    (["auth", "reconcile", "-f", "-"], _RECON_ROLE + "\n" + _recon_binding("Role", "r1", "alice")),
    (["auth", "reconcile", "--remove-extra-subjects", "-f", "-"], _recon_binding("Role", "r1", "bob")),
    (["get", "rolebinding", "rb1", "-o", "jsonpath={.roleRef} {.subjects}{\"\\n\"}"], None),
    (["auth", "reconcile", "-f", "-"], _recon_binding("ClusterRole", "view", "bob")),
    (["get", "rolebinding", "rb1", "-o", "jsonpath={.roleRef} {.subjects}{\"\\n\"}"], None),
    (["delete", "rolebinding", "rb1"], None),
]

# Query parameters and options (item 17 of the workflow report): numbers that do not parse (400,
# strconv's words), PodLogOptions validation (before the pod is looked up), the write options'
# fieldManager, force and dryRun rules (metav1 validation: 422 with the options kind).
_CM = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}'
SCENARIOS["queryoptions"] = [
    (["get", "--raw", "/api/v1/namespaces/NS/pods?limit=abc"], None),
    (["get", "--raw", "/api/v1/namespaces/NS/pods?timeoutSeconds=1x"], None),
    (["get", "--raw", "/api/v1/namespaces/NS/pods?watch=1&timeoutSeconds=abc"], None),
    (["get", "--raw", "/api/v1/namespaces/NS/pods?limit=99999999999999999999"], None),
    (["get", "--raw", "/api/v1/namespaces/NS/pods/nosuch/log?tailLines=abc"], None),
    (["get", "--raw", "/api/v1/namespaces/NS/pods/nosuch/log?tailLines=-1"], None),
    (["get", "--raw", "/api/v1/namespaces/NS/pods/nosuch/log?sinceSeconds=0"], None),
    (["get", "--raw", "/api/v1/namespaces/NS/pods/nosuch/log?limitBytes=-1&sinceSeconds=-2&stream=Bogus"], None),
    (["get", "--raw", "/api/v1/namespaces/NS/pods/nosuch/log?sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z"], None),
    (["get", "--raw", "/api/v1/namespaces/NS/pods/nosuch/log?limitBytes=10"], None),
    (["create", "configmap", "a", "--from-literal=a=b", "--field-manager=" + "m" * 129], None),
    (["create", "configmap", "a", "--from-literal=a=b", "--field-manager=bad\tmgr"], None),
    (["create", "configmap", "a", "--from-literal=a=b", "--field-manager=" + "m" * 128, "-o", "name"], None),
    (["patch", "configmap", "a", "-p", '{"data":{"x":"1"}}', "--field-manager=" + "m" * 129], None),
    (["apply", "--server-side", "--field-manager=" + "m" * 129, "-f", "-"], _CM),
    (["apply", "--server-side", "--field-manager=", "-f", "-"], _CM),
    (["create", "--raw", "/api/v1/namespaces/NS/configmaps?dryRun=Bogus", "-f", "-"], _CM),
    (["replace", "--raw", "/api/v1/namespaces/NS/configmaps/a?dryRun=Bogus&fieldManager=x%01y", "-f", "-"],
     _CM.replace('"b"', '"a"')),
    (["get", "configmap", "a", "-o", "jsonpath={.data}"], None),
]

# Server-side apply after client-side apply (session 32): kubectl's migration (csaupgrade merges
# the client-side entry, "." markers and all, into its Apply entry, then re-applies) keeps a map
# applied member by member (structured-merge-diff's prune puts back what the new config owns
# below a field: the data and labels were removed); lastappliedmanager.go forgives kubectl's
# conflicts on fields whose live value is still the last-applied annotation's, and
# lastappliedupdater.go rewrites that annotation.
def _ssa_cm(name, data, labels=None):
    md = {"name": name}
    if labels:
        md["labels"] = labels
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data})


_SM_MF = ('jsonpath={range .metadata.managedFields[*]}{.manager} {.operation} {.fieldsV1}{"\\n"}{end}')
_SM_LA = 'jsonpath={.data} {.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}'
SCENARIOS["ssamigration"] = [
    (["apply", "-f", "-"], _ssa_cm("one", {"k": "v"}, {"set": "p"})),
    (["apply", "--server-side", "-f", "-"], _ssa_cm("one", {"k": "v"}, {"set": "p"})),
    (["get", "configmap", "one", "-o", 'jsonpath={.data} {.metadata.labels}{"\\n"}'], None),
    (["get", "configmap", "one", "-o", _SM_MF], None),
    (["apply", "--server-side", "-f", "-"], _ssa_cm("one", {"k": "v2"}, {"set": "p"})),
    (["get", "configmap", "one", "-o", _SM_LA], None),
    (["create", "configmap", "csa", "--from-literal=k=v", "--save-config", "-o", "name"], None),
    (["apply", "--server-side", "-f", "-"], _ssa_cm("csa", {"k": "v2"})),
    (["get", "configmap", "csa", "-o", _SM_LA], None),
    (["get", "configmap", "csa", "-o", _SM_MF], None),
    # A value another writer changed since is no longer the annotation's: that conflict stands.
    (["create", "configmap", "csb", "--from-literal=k=v", "--from-literal=j=w", "--save-config", "-o", "name"], None),
    (["patch", "configmap", "csb", "--type=merge", "-p", '{"data":{"k":"other"}}', "-o", "name"], None),
    (["apply", "--server-side", "-f", "-"], _ssa_cm("csb", {"k": "v3", "j": "w2"})),
    (["apply", "--server-side", "--field-manager=tool", "-f", "-"], _ssa_cm("csb", {"j": "w3"})),
    # An Apply entry owning the map itself, the new config its members only.
    (["patch", "configmap", "one", "--type=json", "-p",
      '[{"op":"replace","path":"/metadata/managedFields","value":[{"manager":"m","operation":"Apply","apiVersion":"v1",'
      '"fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:set":{}}}}}]}]',
      "-o", "name"], None),
    (["apply", "--server-side", "--field-manager=m", "-o", 'jsonpath={.data} {.metadata.labels}{"\\n"}', "-f", "-"],
     _ssa_cm("one", {"k": "v2"}, {"set": "p"})),
    (["apply", "--server-side", "--field-manager=m", "-o", 'jsonpath={.data} {.metadata.labels}{"\\n"}', "-f", "-"],
     _ssa_cm("one", {"k": "v2"})),
    # A Deployment applied client-side, then server-side with the same manifest.
    (["apply", "-f", "-"], json.dumps(_SF_DEPLOY)),
    (["apply", "--server-side", "-f", "-"], json.dumps(_SF_DEPLOY)),
    (["get", "deployment", "d", "-o", 'jsonpath={.spec.replicas} {.spec.template.metadata.labels}{"\\n"}'], None),
    (["delete", "configmap/one", "configmap/csa", "configmap/csb", "deployment/d"], None),
]

# An object leaving a watch's selector (session 32): the DELETED event carries the last state the
# selector matched, at the change's resourceVersion (cache_watcher.go convertToWatchEvent), where
# the embedded server sent the new state; a field selector the same.
SCENARIOS["watchleave"] = [
    (["create", "-f", "-", "-o", "name"], json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "1"},
                                                      "metadata": {"name": "a", "labels": {"fid": "w"}}})),
    (["get", "configmap", "a", "-o", "jsonpath={.metadata.resourceVersion}"], None, "capture:RV"),
    (["patch", "configmap", "a", "--type=merge", "-p", '{"metadata":{"labels":{"fid":"gone"}},"data":{"k":"2"}}',
      "-o", "name"], None),
    (["label", "configmap", "a", "fid=w", "--overwrite", "-o", "name"], None),
    (["get", "--raw", "/api/v1/namespaces/NS/configmaps?watch=1&resourceVersion={RV}&timeoutSeconds=1"
                      "&labelSelector=fid%3Dw"], None),
    (["get", "--raw", "/api/v1/namespaces/NS/configmaps?watch=1&resourceVersion={RV}&timeoutSeconds=1"
                      "&fieldSelector=metadata.name%21%3Da"], None),
    (["delete", "configmap", "a"], None),
]

SETUP = {"scheduling": [["delete", "node", "--ignore-not-found"] + FID_NODES],
         # pods/exec, attach, portforward: a node without addresses, and one whose InternalIP has no kubelet.
         "streams": [["delete", "node", "--ignore-not-found"] + STREAMS_NODES,
                     ["create", "-f", os.path.join(HERE, "data", "streams-node-n1.json")],
                     ["create", "-f", os.path.join(HERE, "data", "streams-node-n2.json")],
                     ["patch", "node", "streams-fid-n2", "--subresource=status", "--type=merge", "-p",
                      '{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}]}}']],
         "valleft": [["delete", "node", "--ignore-not-found", "valleft-n1"]],
         # The CRDs (the embedded server ships PyTorchJob's: its create fails, as intended).
         "kubeflow": [["create", "-f", f] for f in CRD_FILES[1:] + KUBEFLOW_CRDS] +
                     [["wait", "--for=condition=established", "--timeout=30s"] + ["crd/" + n for n in
                      ("mpijobs.kubeflow.org", "tfjobs.kubeflow.org", "pytorchjobs.kubeflow.org")]],
         # The Gadget CRD without its rules, two objects it then accepts, then the CRD with them.
         "cel": [["delete", "crd", "gadgets.fid.example.com", "--ignore-not-found"],
                 ["create", "-f", os.path.join(HERE, "data", "cel-crd-lax.json")],
                 ["wait", "--for=condition=established", "--timeout=30s", "crd/gadgets.fid.example.com"],
                 ["create", "-f", os.path.join(HERE, "data", "cel-old.yaml")],
                 ["replace", "-f", os.path.join(HERE, "data", "cel-crd.json")]],
         "crd": [["create", "-f", f] for f in CRD_FILES] +
                [["wait", "--for=condition=established", "--timeout=30s", "crd/widgets.fid.example.com",
                  "crd/pytorchjobs.kubeflow.org"]]}
# Arena's flags render Kubeflow kinds: the same CRDs as the kubeflow scenario.
SETUP["arenaflags"] = SETUP["kubeflow"]
# A function job's PyTorchJob needs training-operator's CRD (the embedded server ships it).
SETUP["pyfunction"] = [["create", "-f", CRD_FILES[1]],
                       ["wait", "--for=condition=established", "--timeout=30s", "crd/pytorchjobs.kubeflow.org"]]
# Kueue's CRDs: shared on the oracle (created when absent, never deleted; the embedded server ships them,
# so there the creates fail, as intended); the scenario's cluster-scoped objects from an earlier run go.
KUEUE_CRDS = ["resourceflavors", "clusterqueues", "localqueues", "workloads"]
SETUP["kueue"] = [["create", "-f", os.path.join(HERE, "..", "..", "data", "crds", "kueue_%s.json" % n)]
                  for n in KUEUE_CRDS] + [
    ["wait", "--for=condition=established", "--timeout=30s"] + ["crd/%s.kueue.x-k8s.io" % n for n in KUEUE_CRDS],
    ["delete", "clusterqueue", "kueue-fid-cq", "--ignore-not-found"],
    ["delete", "resourceflavor", "kueue-fid-a100", "--ignore-not-found"]]
# Installed only where missing (create, not apply; cluster-scoped, shared: never deleted afterwards).
SETUP["trainjob"] = [["create", "-f", f] for f in TRAINER_CRDS] + [
    ["wait", "--for=condition=established", "--timeout=30s", "crd/trainjobs.trainer.kubeflow.org",
     "crd/clustertrainingruntimes.trainer.kubeflow.org", "crd/jobsets.jobset.x-k8s.io"],
    ["create", "-f", os.path.join(HERE, "..", "..", "data", "crds", "trainer_runtimes.json")]]
SETUP["kueuetrain"] = SETUP["kueue"][:len(KUEUE_CRDS) + 1] + SETUP["trainjob"] + [
    ["delete", "clusterqueue", "kq-fid-cq", "--ignore-not-found"]]
# The guide's PVC names the NFS class; with the class present, neither server warns about it.
SETUP["gpupoolapply"] = [["create", "-f", os.path.join(HERE, "data", "nfs-storageclass.json")]]
SETUP["gpupoolloop"] = [["delete", "node", "--ignore-not-found", "loop-fid-n1"],
                        ["create", "-f", os.path.join(HERE, "data", "loop-node.json")]]
TEARDOWN = {"gpupoolloop": [["delete", "node", "--ignore-not-found", "loop-fid-n1"]],
            "valleft": [["delete", "node", "--ignore-not-found", "valleft-n1"]],
            "cel": [["delete", "crd", "gadgets.fid.example.com", "--ignore-not-found"]],
            "gpupoolapply": [["delete", "storageclass", "managed-nfs-storage", "--ignore-not-found"]],
            "streams": [["delete", "pods", "--all", "--force", "--grace-period=0"],
                        ["delete", "node", "--ignore-not-found"] + STREAMS_NODES],
            "scheduling": [["delete", "pods", "--all", "--force", "--grace-period=0"],
                           ["delete", "node", "--ignore-not-found"] + FID_NODES]}
SETUP["discovery"] = SETUP["kubeflow"]
SETUP["runtimeclass"] = [["delete", "runtimeclass", "--ignore-not-found"] + RTC_NAMES]
SETUP["createstatus"] = _CS_CLUSTER + SETUP["pyfunction"]
SETUP["crdselectors"] = [["delete", "crd", "--ignore-not-found", "sieves.fid.example.com"],
                         ["create", "-f", os.path.join(HERE, "data", "sieve-crd.json")]]
TEARDOWN["crdselectors"] = [["delete", "--ignore-not-found", "crd/sieves.fid.example.com"]]
SETUP["subresourcefields"] = [["create", "-f", os.path.join(HERE, "data", "gang-crd.json")]]
TEARDOWN["subresourcefields"] = [["delete", "--ignore-not-found", "crd/gangs.fid.example.com"]]
TEARDOWN["createstatus"] = _CS_CLUSTER
SETUP["rbacbootstrap"] = [["delete", "clusterrole", "--ignore-not-found", "fid-aggregate-training"]]
SETUP["csidriver"] = [["delete", "csidriver", "--ignore-not-found"] + CSI_NAMES]
SETUP["finalizernames"] = [["delete", "priorityclass", "--ignore-not-found", "pc-fin-fidelity"]]
SETUP["networking"] = [["delete", "ingressclass", "--ignore-not-found"] + INGCLASS_NAMES]
SETUP["rulesreview"] = [["delete", "clusterrole", "rulesreview-fid", "--ignore-not-found"]]
SETUP["defaultingressclass"] = [["delete", "ingressclass", "--ignore-not-found"] + _DIC]
TEARDOWN["defaultingressclass"] = [["delete", "ingressclass", "--ignore-not-found"] + _DIC]
SETUP["printers"] = [["delete", n, "--ignore-not-found"] for n in _PRINTED_NAMES[-3:]]
TEARDOWN["kueuetrain"] = [["delete", "clusterqueue", "kq-fid-cq", "--ignore-not-found"]]
TEARDOWN["kueue"] = [["delete", "clusterqueue", "kueue-fid-cq", "--ignore-not-found"],
                     ["delete", "resourceflavor", "kueue-fid-a100", "--ignore-not-found"]]

UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def scrub(v, key=""):
    """Replaces run-dependent values in a decoded object."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k == "managedFields":
                continue
            if k in ("uid", "resourceVersion", "creationTimestamp") and isinstance(x, str):
                out[k] = "<" + k + ">"
            elif k == "continue" and isinstance(x, str):
                out[k] = "<continue token>"  # opaque to clients
            elif k in ("clusterIP", "clusterIPs"):
                out[k] = "<ip>"
            elif k == "status" and v.get("kind") in ("Pod", "PodDisruptionBudget"):
                continue  # Pod: no kubelet in the oracle; PDB: FIDELITY.md, known difference 6
            elif k == "nodeName":
                continue
            elif k == "sources" and isinstance(x, list):
                # 31: OpenShift's ServiceAccount admission also projects openshift-service-ca.crt.
                out[k] = [scrub(e, k) for e in x
                          if not (isinstance(e, dict) and (e.get("configMap") or {}).get("name") == "openshift-service-ca.crt")]
            else:
                out[k] = scrub(x, k)
        return out
    if isinstance(v, list):
        return [scrub(x, key) for x in v]
    if isinstance(v, str):
        return TS.sub("<time>", UID.sub("<uid>", v))
    return v


# Differences FIDELITY.md explains, normalized on both sides (the number is its list item).
EXPLAINED = [
    # 3: the old Job template is printed as a Go struct by Kubernetes, as JSON by the embedded server.
    (re.compile(r"spec\.template: Invalid value: .*: field is immutable"), "spec.template: Invalid value: <template>: field is immutable"),
    # 8: pod-template-hash is a hash of Go's printing of the template.
    (re.compile(r'ReplicaSet \\"([\w-]+)-[a-z0-9]{6,10}\\"'), r'ReplicaSet \\"\1-<hash>\\"'),
    # 1: the go-cmp diff of two specs after an immutability message (pods: ValidatePodUpdate; claims:
    # ValidatePersistentVolumeClaimUpdate); its lines start with a space, a non-breaking space
    # (go-cmp's, at random), '-' or '+'.
    (re.compile(r"(if it was previously negative\)|volumeAttributesClassName for bound claims)\n"
                r"(?:(?!\$ kubectl|\* ).*\n)*"), r"\1\n"),
    # 19: a Go struct printed with %#v shows its pointer fields' addresses.
    (re.compile(r"\)\(0x[0-9a-f]+\)"), ")(0x<address>)"),
    # 31: the oracle's OpenShift fork bootstraps two RBAC roles (and their bindings) of its own.
    (re.compile(r"^.*(system:openshift:public-info-viewer|service-ca-cert-publisher).*\n", re.M), ""),
]


HOST = socket.gethostname()


def normalize(text, ns):
    text = text.replace(ns, "NS")
    # The oracle's binaries are named kube-apiserver-1.32 etc. (its build), and a component's
    # managedFields manager is its binary's name (rest.DefaultUserAgent): a cluster's are plain.
    text = re.sub(r"\b(kube-(?:apiserver|controller-manager|scheduler))-1\.32\b", r"\1", text)
    # Event names: the involved object's name and a hex timestamp; a scheduler's reportingInstance
    # ends in the host's name.
    text = re.sub(r'("name": "[^"]+)\.[0-9a-f]{12,16}"', r'\1.<hex>"', text)
    text = re.sub(r'(scheduler)-' + re.escape(HOST) + '"', r'\1-<host>"', text)
    # 12: the patched object a merge patch's type error quotes is printed in Go's field order, which
    # the embedded server (JSON as stored) does not keep.
    text = re.sub(r'patch: Invalid value: "\{.*\}": json: cannot unmarshal', 'patch: Invalid value: "<patched object>": json: cannot unmarshal', text)
    # 10: the size gRPC measures is of the protobuf request to etcd, which the embedded server
    # does not encode.
    text = re.sub(r"trying to send message larger than max \(\d+ vs\. 2097152\)",
                  "trying to send message larger than max (<size> vs. 2097152)", text)
    # A name generated from generateName ends in 5 random characters.
    text = re.sub(r"(Bad\\fName)[a-z0-9]{5}\b", r"\1<suffix>", text)
    # The ServiceAccount admission plugin's volume: kube-api-access- and 5 random characters.
    text = re.sub(r"\bkube-api-access-[a-z0-9]{5}\b", "kube-api-access-<rand>", text)
    # 31: OpenShift's fork projects openshift-service-ca.crt into that volume too (compact JSON of
    # jsonpath; scrub drops it from whole objects).
    text = text.replace(',{"configMap":{"items":[{"key":"service-ca.crt","path":"service-ca.crt"}],'
                        '"name":"openshift-service-ca.crt"}}', "")
    # The oldest version a watch cache still holds depends on the server's history.
    text = re.sub(r"too old resource version: (\d+) \(\d+\)", r"too old resource version: \1 (<oldest>)", text)
    # 8: pod-template-hash (and the pods' random suffixes) in the workloads scenario's names.
    text = re.sub(r"\bweb-[a-z0-9]{6,10}-[a-z0-9]{5}\b", "web-<hash>-<rand>", text)
    text = re.sub(r"\bweb-[a-z0-9]{6,10}\b", "web-<hash>", text)
    text = re.sub(r"pod-template-hash=[a-z0-9]{6,10}\b", "pod-template-hash=<hash>", text)
    # The gpupoolloop scenario's pods: a Job's (name-xxxxx) and a Deployment's (name-<hash>-xxxxx).
    text = re.sub(r"\b(loop1|loopd)-(?:[a-z0-9]{6,10}-)?[a-z0-9]{5}\b", r"\1-<rand>", text)
    # kubectl describe prints times as RFC 1123; its generic describer (a kind without a describer
    # of its own) prints metadata.resourceVersion.
    text = re.sub(r"(Resource Version:\s+)\d+\b", r"\1<resourceVersion>", text)
    text = re.sub(r"\b[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d [+-]\d{4}\b", "<time>", text)
    # The NetworkPolicy describer prints its creationTimestamp as Go's time.Time String.
    text = re.sub(r"(Created on:\s+)\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4} UTC\b", r"\1<time>", text)
    for rx, repl in EXPLAINED:
        text = rx.sub(repl, text)
    # A watch: one JSON event per line.
    lines = text.splitlines()
    if len(lines) > 1 and all(l.startswith("{") for l in lines):
        try:
            return "".join(json.dumps(scrub(json.loads(l)), sort_keys=True) + "\n" for l in lines)
        except ValueError:
            pass
    try:
        doc = json.loads(text)
        text = json.dumps(scrub(doc), indent=1, sort_keys=True) + "\n"
        for rx, repl in EXPLAINED:
            text = rx.sub(repl, text)
        return text
    except ValueError:
        pass
    text = UID.sub("<uid>", TS.sub("<time>", text))
    text = re.sub(r"\b\d+(\.\d+)?(ms|s|m|h|d)\d*(s|m)?\b", "<age>", text)  # AGE columns
    text = re.sub(r"\b10\.\d+\.\d+\.\d+\b", "<ip>", text)
    return text


def _kubeconfig_with_user_fields(env, fields):
    """A copy of the current kubeconfig (minified) whose user has `fields` too; the caller deletes it."""
    view = subprocess.run([KUBECTL, "config", "view", "--raw", "--minify", "-o", "json"], env=env,
                          capture_output=True, text=True, check=True)
    config = json.loads(view.stdout)
    for u in config.get("users", []):
        u.setdefault("user", {}).update(fields)
    fd, path = tempfile.mkstemp(suffix=".kubeconfig")
    with os.fdopen(fd, "w") as f:
        json.dump(config, f)
    return path


def run_scenario(kubeconfig, name, steps):
    ns = "fid-" + name
    env = dict(os.environ, KUBECONFIG=kubeconfig)
    base = [KUBECTL, "--request-timeout=20s"]
    # A namespace left by an earlier run is still being finalized: wait for it to go.
    for _ in range(600):
        if subprocess.run(base + ["get", "namespace", ns], env=env, capture_output=True).returncode != 0:
            break
        time.sleep(0.1)
    for args in SETUP.get(name, []):
        subprocess.run(base + args, env=env, capture_output=True, text=True)
    subprocess.run(base + ["create", "namespace", ns], env=env, capture_output=True, text=True)
    out = []
    captured = {}
    for args, stdin, *post in steps:
        a = [ns if x == "NAMESPACE" else x.replace("/namespaces/NS/", "/namespaces/%s/" % ns).replace(":NAMESPACE", ":" + ns)
             for x in args] + ["-n", ns]
        for k, v in captured.items():
            a = [x.replace("{" + k + "}", v) for x in a]
        if stdin:  # a body naming the scenario's namespace
            stdin = stdin.replace('"NAMESPACE"', json.dumps(ns))
        if args[0] == "gpupool":  # the command as a user runs it, against the same server
            if not GPUPOOL[0]:
                sys.exit("fidelity: scenario %s runs gpupool: give --gpupool PATH (or --serve)" % name)
            cmd = [GPUPOOL[0], "--kubeconfig", kubeconfig, "-n", ns] + a[1:-2]
            p = subprocess.run(cmd, env=env, input=stdin, capture_output=True, text=True, errors="surrogateescape")
            shown = " ".join(os.path.relpath(x, REPO) if x.startswith(REPO + "/") else x for x in args)
            out.append("$ " + shown + "\n")
        else:
            step_env = env
            user_fields = [json.loads(x[len("kubeconfig-user:"):]) for x in post if x.startswith("kubeconfig-user:")]
            if user_fields:  # fields of the kubeconfig's user kubectl has no flag for (as-user-extra)
                step_env = dict(env, KUBECONFIG=_kubeconfig_with_user_fields(env, user_fields[0]))
            try:
                p = subprocess.run(base + a, env=step_env, input=stdin, capture_output=True, text=True,
                                   errors="surrogateescape")
            finally:
                if user_fields:
                    os.unlink(step_env["KUBECONFIG"])
            shown = " ".join(x if len(x) < 80 else x[:20] + "...(%d)" % len(x) for x in args)
            if user_fields:
                shown += " # kubeconfig user " + json.dumps(user_fields[0], sort_keys=True)
            out.append("$ kubectl " + shown + "\n")
        out.append("exit %d\n" % p.returncode)
        stdout = p.stdout
        capture = [x[8:] for x in post if x.startswith("capture:")]
        if capture:  # a value later steps use ({NAME}); it differs between servers, so it is not shown
            captured[capture[0]] = stdout.strip()
            stdout = ""
        if "uniq" in post:
            stdout = "".join(sorted(set(stdout.splitlines(True))))
        # A captured name differs between servers: shown by its name (longest first: a pod's name
        # holds its ReplicaSet's hash). A number, such as a resourceVersion, is left to
        # normalize(): "410" is also a code.
        by_length = sorted(captured.items(), key=lambda kv: -len(kv[1]))
        for k, v in by_length:
            if v and not v.isdigit():
                stdout = re.sub(r"\b" + re.escape(v) + r"\b", "<" + k + ">", stdout)
        if stdout:
            stdout = normalize(stdout, ns)
            if "squeeze" in post:  # a table whose column widths follow a normalized value (a cluster IP)
                stdout = re.sub(r"  +", "  ", stdout)
            out.append(stdout)
        stderr = p.stderr
        for k, v in by_length:
            if v and not v.isdigit():
                stderr = re.sub(r"\b" + re.escape(v) + r"\b", "<" + k + ">", stderr)
        if stderr:
            out.append("stderr: " + normalize(stderr, ns))
    for args in TEARDOWN.get(name, []):
        subprocess.run(base + args + ["-n", ns], env=env, capture_output=True, text=True)
    subprocess.run(base + ["delete", "namespace", ns, "--wait=false"], env=env, capture_output=True, text=True)
    return "".join(out)


GPUPOOL = [None]  # the gpupool command of the scenarios' gpupool steps (--gpupool, or --serve's)


def serve(gpupool, tmp):
    log = open(os.path.join(tmp, "serve.log"), "w")
    proc = subprocess.Popen([gpupool, "cluster", "serve", "--topology", "none", "--kubeconfig-dir", tmp], stdout=log, stderr=subprocess.STDOUT)
    kc = os.path.join(tmp, "admin.kubeconfig")
    for _ in range(600):  # polls for the server's own signal, not a fixed wait
        if os.path.exists(kc) and "serving on" in open(os.path.join(tmp, "serve.log")).read():
            return proc, kc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    sys.exit("fidelity: `gpupool cluster serve` did not start: " + open(os.path.join(tmp, "serve.log")).read())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig")
    ap.add_argument("--serve", metavar="GPUPOOL", help="start GPUPOOL cluster serve and use it")
    ap.add_argument("--gpupool", metavar="GPUPOOL", help="the gpupool command that scenarios run as a client "
                    "(default: --serve's, else build/gcc/gpupool)")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", action="store_true")
    mode.add_argument("--check", action="store_true")
    ap.add_argument("scenarios", nargs="*", help="default: all")
    o = ap.parse_args()
    if bool(o.kubeconfig) == bool(o.serve):
        ap.error("give exactly one of --kubeconfig and --serve")
    if o.record and o.serve:
        ap.error("--record takes answers from a real control plane (--kubeconfig), never from the embedded one")
    GPUPOOL[0] = o.gpupool or o.serve or (os.path.join(REPO, "build", "gcc", "gpupool")
                                          if os.path.exists(os.path.join(REPO, "build", "gcc", "gpupool")) else None)
    names = o.scenarios or sorted(SCENARIOS)
    for n in names:
        if n not in SCENARIOS:
            ap.error("unknown scenario %r (known: %s)" % (n, ", ".join(sorted(SCENARIOS))))
    failed = run(o, names, o.serve, o.kubeconfig)
    real = os.environ.get("GPUPOOL_REAL_K8S")
    if o.check and o.serve and real:  # the same check, live against a real control plane
        print("live against the real control plane in", real)
        failed += [n + " (real)" for n in run(o, names, None, os.path.join(real, "kubeconfig"))]
    if failed:
        print("fidelity: %d scenarios differ from the recorded answers of the real control plane: %s"
              % (len(failed), ", ".join(failed)))
        return 1
    return 0


def run(o, names, gpupool, kubeconfig):
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        proc, kc = serve(gpupool, tmp) if gpupool else (None, kubeconfig)
        try:
            for n in names:
                got = run_scenario(kc, n, SCENARIOS[n])
                path = os.path.join(GOLDEN, n + ".txt")
                if o.record:
                    os.makedirs(GOLDEN, exist_ok=True)
                    with open(path, "w") as f:
                        f.write(got)
                    print("recorded", path)
                    continue
                want = open(path).read()
                if got != want:
                    failed.append(n)
                    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                               "real (" + path + ")", "this server"))
                else:
                    print("identical:", n)
        finally:
            if proc:
                proc.terminate()
                proc.wait()
    return failed


if __name__ == "__main__":
    sys.exit(main())
