#!/usr/bin/python3
"""Randomized differential check of what the API server accepts, refuses and defaults.

Hand-picked scenarios (fidelity.py) test the rules someone thought of; this one mutates realistic
objects at random — a Pod, a Deployment, a Job, a PVC, a ResourceQuota and a Service: a leaf
replaced by another type or by an edge value, a member dropped, duplicated or added (with
--add-fields also fields the kind's schema has and the base leaves out) — and sends each as a
server dry run (POST ...?dryRun=All), so nothing is stored and the cases are independent. The
answer is the HTTP status, the Warning headers and the body (the defaulted object, or the Status
with its causes), normalized.

  fuzz.py live ORACLE_KC OTHER_KC [--seed S] [--cases N] [--kinds K,..] [--add-fields]
                                                   compare two servers now, print differences
  fuzz.py record ORACLE_KC [same options] [--append]  write (or add to) golden/fuzz.jsonl from a REAL server
  fuzz.py check (--kubeconfig KC | --serve GPUPOOL)  replay golden/fuzz.jsonl, compare
  fuzz.py check --kubeconfig ORACLE_KC --refresh     replay on a REAL server and write its answers into
                                                   the four golden files (the same cases)
  fuzz.py updates ORACLE_KC OTHER_KC [same options]  PUTs (dry runs) of each server's own stored
                                                   object with the same changes, compare now
  fuzz.py record-updates ORACLE_KC [same options] [--append]  write (or add to) golden/fuzz_updates.jsonl
                                                   (check replays it after golden/fuzz.jsonl)
  fuzz.py patches ORACLE_KC OTHER_KC [same options]  the updates' changes as PATCHes (dry runs), compare now
  fuzz.py record-patches ORACLE_KC [same options] [--append]  write (or add to) golden/fuzz_patches.jsonl
                                                   (check replays it after the updates)
  fuzz.py deletes ORACLE_KC OTHER_KC [same options]  DELETEs (dry runs) of each server's stored object,
                                                   with the options clients send, compare now
  fuzz.py record-deletes ORACLE_KC [same options] [--append]  write (or add to) golden/fuzz_deletes.jsonl
                                                   (check replays it after the patches)

live, updates, patches and deletes take --namespace NS (default fid-fuzz), so that two runs against
one server do not meet. The updates change a stored object's metadata (labels, annotations, finalizers, owners, the
fields it may not change) and the fields updates of its kind are about (a pod's image, deadline and
tolerations, a claim's request, a ConfigMap's or Secret's data when immutable, a selector), as well
as random leaves.

The patches make the same changes (the cases of the updates of a seed) in the three patch types
clients send, chosen per case: a JSON merge patch (RFC 7386), a strategic merge patch as kubectl
writes it (lists merged by key, its directives now and then; refused for custom resources) or a JSON
patch (RFC 6902: add, replace and remove, now and then a test or a bad op); and a few patches clients
get wrong (not JSON, JSON not an object, one renaming the object).

The deletes are dry runs (dryRun=All in the query, or in the body: kube-apiserver then ignores the
query) of the stored objects, of a name not there, or of a kind's collection selecting nothing or the
stored object alone, with the options clients send and get wrong: a grace period, a propagation
policy, orphanDependents (and both), dry runs not known, and a DeleteOptions body with preconditions
(the object's own uid and resourceVersion or others), fields of the wrong type or unknown, another
kind or apiVersion, or not JSON. The answer compared includes whether the object is still there.

The golden files hold the cases themselves with the real server's answers, so a check replays
exactly what was recorded, whatever the generator has become since.
"""
import argparse
import copy
import http.client
import json
import os
import random
import re
import sys
import tempfile
import time
import urllib.parse

import raw_client
from fidelity import serve  # `gpupool cluster serve --topology none`, as the scenarios start it

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden", "fuzz.jsonl")
UPDATES_GOLDEN = os.path.join(HERE, "golden", "fuzz_updates.jsonl")
PATCHES_GOLDEN = os.path.join(HERE, "golden", "fuzz_patches.jsonl")
NAMESPACE = "fid-fuzz"


# ---- the objects mutated: what gpupool and the cluster guide's users send --------------------------

def base_pod():
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "fuzz", "labels": {"app": "train", "gpupool.io/job-name": "fuzz"},
                     "annotations": {"gpupool.io/submitted-by": "alice"}},
        "spec": {
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "nodeSelector": {"accelerator": "nvidia-a100"},
            "tolerations": [{"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"},
                            {"key": "ssd_node", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{
                "name": "main", "image": "harbor.example.edu/library/pytorch:2.1-cuda12",
                "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", "rsync -a /nfs/data/ /ssd1/data/ && python train.py"],
                "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "ports": [{"name": "tensorboard", "containerPort": 6006, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"},
                              "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"}},
                "volumeMounts": [{"name": "ssd1", "mountPath": "/ssd1"},
                                 {"name": "nfs", "mountPath": "/nfs", "readOnly": True},
                                 {"name": "results", "mountPath": "/results", "subPath": "alice"}],
            }],
            "volumes": [
                {"name": "ssd1", "hostPath": {"path": "/mnt/ssd1", "type": "Directory"}},
                {"name": "nfs", "nfs": {"server": "10.0.0.5", "path": "/export/share"}},
                {"name": "results", "persistentVolumeClaim": {"claimName": "alice-cephfs"}},
            ],
            "terminationGracePeriodSeconds": 30,
            "activeDeadlineSeconds": 86400,
            "hostIPC": False,
            "securityContext": {"runAsUser": 1000, "fsGroup": 1000},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-1", "gpu-2"]}]}]}}},
        },
    }


def base_deployment():
    pod = base_pod()
    pod["spec"]["restartPolicy"] = "Always"
    del pod["spec"]["activeDeadlineSeconds"]
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "fuzz", "labels": {"app": "train"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "train"}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
                 "template": {"metadata": {"labels": {"app": "train"}}, "spec": pod["spec"]}},
    }


def base_job():
    pod = base_pod()
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "fuzz"},
        "spec": {"parallelism": 2, "completions": 4, "backoffLimit": 3, "ttlSecondsAfterFinished": 600,
                 "template": {"metadata": {"labels": {"app": "train"}}, "spec": pod["spec"]}},
    }


def base_claim():  # the guide's CephFS claim
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "fuzz", "labels": {"owner": "alice"}},
            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "cephfs", "volumeMode": "Filesystem",
                     "resources": {"requests": {"storage": "100Gi"}}}}


def base_service():  # a job's TensorBoard
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "fuzz", "labels": {"gpupool.io/component": "tensorboard"}},
            "spec": {"type": "ClusterIP", "selector": {"app": "train"}, "sessionAffinity": "None",
                     "ports": [{"name": "tensorboard", "port": 6006, "targetPort": 6006, "protocol": "TCP"}]}}


def base_quota():  # the guide's per-user quota
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "fuzz"},
            "spec": {"hard": {"requests.nvidia.com/gpu": "4", "limits.cpu": "32", "limits.memory": "128Gi",
                              "pods": "10", "persistentvolumeclaims": "5"},
                     "scopes": ["NotTerminating"]}}


def kubeflow_replica(n, container, gpus="2"):
    """A replica spec as `gpupool submit` renders it for training-operator's kinds."""
    return {"replicas": n, "restartPolicy": "Never", "template": {
        "metadata": {"labels": {"app.kubernetes.io/managed-by": "gpupool", "gpupool.io/job-name": "fuzz",
                                "gpupool.io/component": "workload"}},
        "spec": {"tolerations": [{"key": "gpu_node", "operator": "Exists"}],
                 "containers": [{"name": container, "image": "harbor.example.edu/library/pytorch:2.1-cuda12",
                                 "command": ["sh", "-c", "python train.py"],
                                 "resources": {"limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": gpus},
                                               "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": gpus}},
                                 "volumeMounts": [{"name": "data", "mountPath": "/data"},
                                                  {"name": "dshm", "mountPath": "/dev/shm"}]}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                             {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}]}}}


def kubeflow_job(kind, specs_key, specs):
    return {"apiVersion": "kubeflow.org/v1", "kind": kind,
            "metadata": {"name": "fuzz", "labels": {"app.kubernetes.io/managed-by": "gpupool",
                                                    "gpupool.io/job-name": "fuzz"}},
            "spec": {"runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3}, specs_key: specs}}


def base_pytorchjob():  # `gpupool submit pytorch`: a Master and two Workers with GPUs
    return kubeflow_job("PyTorchJob", "pytorchReplicaSpecs",
                        {"Master": kubeflow_replica(1, "pytorch"), "Worker": kubeflow_replica(2, "pytorch")})


def base_tfjob():  # `gpupool submit tf`: a PS and two Workers
    return kubeflow_job("TFJob", "tfReplicaSpecs",
                        {"PS": kubeflow_replica(1, "tensorflow", "0"), "Worker": kubeflow_replica(2, "tensorflow")})


def base_mpijob():  # `gpupool submit mpi`: a Launcher and two Workers, a slot per GPU
    job = kubeflow_job("MPIJob", "mpiReplicaSpecs",
                       {"Launcher": kubeflow_replica(1, "mpi", "0"), "Worker": kubeflow_replica(2, "mpi")})
    job["spec"]["slotsPerWorker"] = 2
    return job


def base_trainjob():  # `gpupool submit trainjob` (Kubeflow Trainer v2), as rendered into data/
    return json.load(open(os.path.join(HERE, "data", "fuzz-trainjob.json")))


def base_jobset():  # `gpupool submit jobset`
    return json.load(open(os.path.join(HERE, "data", "fuzz-jobset.json")))


def base_configmap():  # a job's launch script and settings, mounted into its pods
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "fuzz", "labels": {"gpupool.io/job-name": "fuzz"}},
            "data": {"train.sh": "#!/bin/sh\npython train.py --epochs 10\n", "config.yaml": "lr: 0.001\n"},
            "binaryData": {"vocab.bin": "AAECAw=="}}


def base_configmap_immutable():  # the same, frozen: only its metadata may change
    return dict(base_configmap(), immutable=True)


def base_secret():  # a user's tracking-service token
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "fuzz", "labels": {"owner": "alice"}},
            "type": "Opaque", "data": {"WANDB_API_KEY": "czNjcmV0"}}


def base_secret_immutable():
    return dict(base_secret(), immutable=True)


def base_serviceaccount():  # a namespace's workloads' identity, pulling from the registry
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "fuzz", "labels": {"owner": "alice"}},
            "secrets": [{"name": "wandb"}], "imagePullSecrets": [{"name": "harbor-pull"}],
            "automountServiceAccountToken": False}


def base_replicaset():
    """A ReplicaSet of no replicas (no pods to run), its own labels: app=train is the Pod's, which a
    ReplicaSet selecting it would adopt and delete."""
    pod = base_pod()
    pod["spec"]["restartPolicy"] = "Always"
    del pod["spec"]["activeDeadlineSeconds"]
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "fuzz", "labels": {"app": "serve"}},
        "spec": {"replicas": 0, "minReadySeconds": 10, "selector": {"matchLabels": {"app": "serve"}},
                 "template": {"metadata": {"labels": {"app": "serve"}}, "spec": pod["spec"]}},
    }


def _always_template(labels):
    pod = base_pod()
    pod["spec"]["restartPolicy"] = "Always"
    del pod["spec"]["activeDeadlineSeconds"]
    return {"metadata": {"labels": labels}, "spec": pod["spec"]}


def base_cronjob():  # a nightly evaluation run (served since session 26)
    job = base_job()
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "fuzz"},
            "spec": {"schedule": "30 2 * * 1-5", "timeZone": "Europe/Berlin", "concurrencyPolicy": "Forbid",
                     "startingDeadlineSeconds": 300, "successfulJobsHistoryLimit": 2, "failedJobsHistoryLimit": 1,
                     "suspend": True, "jobTemplate": {"metadata": {"labels": {"app": "eval"}}, "spec": job["spec"]}}}


def base_daemonset():  # a GPU node's exporter, suspended on no node (its selector matches none)
    tmpl = _always_template({"app": "exporter"})
    tmpl["spec"]["nodeSelector"] = {"fuzz.example.com/none": "true"}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "fuzz", "labels": {"app": "exporter"}},
            "spec": {"selector": {"matchLabels": {"app": "exporter"}}, "minReadySeconds": 5,
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                     "revisionHistoryLimit": 3, "template": tmpl}}


def base_statefulset():  # a parameter server with its own claim, no replicas
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "fuzz", "labels": {"app": "ps"}},
            "spec": {"replicas": 0, "serviceName": "fuzz", "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": "ps"}},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                     "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"},
                     "volumeClaimTemplates": [{"metadata": {"name": "ckpt"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}],
                     "template": _always_template({"app": "ps"})}}


def base_lease():  # a controller's leader election
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "fuzz"},
            "spec": {"holderIdentity": "trainer-0", "leaseDurationSeconds": 15, "leaseTransitions": 2,
                     "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": "2026-01-01T00:00:10.000000Z"}}


def base_networkpolicy():  # a user's namespace: training pods take TensorBoard traffic only from their team
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "fuzz"},
            "spec": {"podSelector": {"matchLabels": {"app": "train"}}, "policyTypes": ["Ingress", "Egress"],
                     "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "vision"}}},
                                           {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                                  "ports": [{"protocol": "TCP", "port": 6006}, {"port": 9000, "endPort": 9100}]}],
                     "egress": [{"to": [{"podSelector": {}}], "ports": [{"port": "dns", "protocol": "UDP"}]}]}}


def base_ingress():  # a job's TensorBoard behind the cluster's ingress controller
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "fuzz"},
            "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["tb.example.com"], "secretName": "tb-tls"}],
                     "rules": [{"host": "tb.example.com", "http": {"paths": [
                         {"path": "/tb", "pathType": "Prefix",
                          "backend": {"service": {"name": "tensorboard", "port": {"number": 6006}}}}]}}]}}


def base_podtemplate():  # a training worker's template kept for a launcher to stamp pods from
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "fuzz"},
            "template": {"metadata": {"labels": {"app": "train", "role": "worker"}},
                         "spec": {"restartPolicy": "Never", "tolerations": [
                             {"key": "gpu_node", "operator": "Equal", "value": "invalid", "effect": "NoSchedule"}],
                             "containers": [{"name": "main", "image": "pytorch/pytorch:2.5",
                                             "command": ["python", "train.py"],
                                             "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "16Gi"}}}]}}}


def base_limitrange():  # a user namespace's container defaults and bounds, and its claims' sizes
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "fuzz", "labels": {"owner": "alice"}},
            "spec": {"limits": [
                {"type": "Container", "default": {"cpu": "2", "memory": "8Gi"},
                 "defaultRequest": {"cpu": "1", "memory": "4Gi"}, "max": {"cpu": "32", "memory": "128Gi"},
                 "min": {"cpu": "100m", "memory": "64Mi"}, "maxLimitRequestRatio": {"cpu": "4"}},
                {"type": "PersistentVolumeClaim", "max": {"storage": "500Gi"}, "min": {"storage": "1Gi"}}]}}


def base_pdb():  # a distributed job's workers, not drained below three at a time
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "fuzz", "labels": {"gpupool.io/job-name": "fuzz"}},
            "spec": {"minAvailable": 3, "selector": {"matchLabels": {"gpupool.io/job-name": "fuzz"}},
                     "unhealthyPodEvictionPolicy": "AlwaysAllow"}}


def base_priorityclass():  # the cluster's tier for interactive jobs, preempting none
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "fuzz", "labels": {"gpupool.io/tier": "interactive"}},
            "value": 1000, "globalDefault": False, "preemptionPolicy": "Never",
            "description": "Interactive notebooks: scheduled before batch training, preempt nothing."}


def base_storageclass():  # the guide's CephFS class, not the default one
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "fuzz", "labels": {"owner": "admin"}},
            "provisioner": "cephfs.csi.ceph.com", "reclaimPolicy": "Retain", "volumeBindingMode": "Immediate",
            "allowVolumeExpansion": True, "mountOptions": ["noatime"],
            "parameters": {"clusterID": "ceph-1", "fsName": "cephfs",
                           "csi.storage.k8s.io/provisioner-secret-name": "csi-cephfs-secret",
                           "csi.storage.k8s.io/provisioner-secret-namespace": "ceph-csi"}}


def base_pv():  # the NFS share of the guide, as an administrator's volume of a class nobody provisions
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "fuzz", "labels": {"share": "nfs"}},
            "spec": {"capacity": {"storage": "1Ti"}, "accessModes": ["ReadWriteMany", "ReadOnlyMany"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "fuzz-nfs",
                     "volumeMode": "Filesystem", "mountOptions": ["nfsvers=4.1"],
                     "nfs": {"server": "10.0.0.5", "path": "/export/share", "readOnly": False}}}


def base_role():  # what a user may do with jobs in their namespace
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "fuzz", "labels": {"owner": "alice"}},
            "rules": [{"apiGroups": ["", "batch"], "resources": ["pods", "pods/log", "jobs"],
                       "verbs": ["get", "list", "watch", "create", "delete"]},
                      {"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs"], "verbs": ["*"],
                       "resourceNames": ["train"]}]}


def base_rolebinding():  # the Role granted to a user, a group and the namespace's default ServiceAccount
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "fuzz", "labels": {"owner": "alice"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "fuzz"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
                         {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "vision-team"},
                         {"kind": "ServiceAccount", "name": "default", "namespace": "fid-fuzz"}]}


def base_clusterrole():  # read-only access to the cluster's GPU nodes and classes, aggregated to view
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "fuzz", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "false"}},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
                      {"apiGroups": ["scheduling.k8s.io", "storage.k8s.io"],
                       "resources": ["priorityclasses", "storageclasses"], "verbs": ["get", "list"]},
                      {"nonResourceURLs": ["/metrics", "/healthz/*"], "verbs": ["get"]}]}


def base_clusterrolebinding():
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "fuzz", "labels": {"owner": "admin"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "fuzz"},
            "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "gpu-users"},
                         {"kind": "ServiceAccount", "name": "gpupool", "namespace": "gpupool-system"}]}


def base_runtimeclass():  # GPU nodes' container runtime, with their taint tolerated
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "fuzz"},
            "handler": "nvidia", "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
            "scheduling": {"nodeSelector": {"accelerator": "nvidia-a100"},
                           "tolerations": [{"key": "gpu_node", "operator": "Exists", "effect": "NoSchedule"}]}}


def base_ingressclass():  # the cluster's ingress controller, the default class
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "fuzz"},
            "spec": {"controller": "k8s.io/ingress-nginx",
                     "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external",
                                    "scope": "Namespace", "namespace": "ingress"}}}


def base_csidriver():  # the CephFS CSI driver the guide's class provisions with
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "fuzz.csi.ceph.com"},
            "spec": {"attachRequired": False, "podInfoOnMount": False, "fsGroupPolicy": "File",
                     "volumeLifecycleModes": ["Persistent"], "requiresRepublish": False, "storageCapacity": False,
                     "seLinuxMount": False}}


def base_namespace():  # a user's namespace, labelled for the team's quota and policies
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "fuzz", "labels": {"team": "vision", "gpupool.io/user": "alice"},
                         "annotations": {"scheduler.alpha.kubernetes.io/node-selector": "accelerator=nvidia-a100"}},
            "spec": {"finalizers": ["kubernetes"]}}


def base_endpoints():  # a headless training master's address, kept by hand (no selector)
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "fuzz", "labels": {"app": "train"}},
            "subsets": [{"addresses": [{"ip": "10.1.2.3", "hostname": "master-0", "nodeName": "gpu-1"}],
                         "notReadyAddresses": [{"ip": "10.1.2.4"}],
                         "ports": [{"name": "nccl", "port": 29500, "protocol": "TCP"}]}]}


def base_endpointslice():  # the same, as an EndpointSlice
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "fuzz", "labels": {"kubernetes.io/service-name": "fuzz"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": True}, "hostname": "master-0",
                           "nodeName": "gpu-1", "zone": "a"}],
            "ports": [{"name": "nccl", "port": 29500, "protocol": "TCP"}]}


def base_event():  # what a controller records about a training pod (core/v1), in the cases' namespace
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "fuzz"},
            "involvedObject": {"kind": "Pod", "namespace": "$NAMESPACE", "name": "train-0", "apiVersion": "v1"},
            "reason": "Preempted", "message": "Preempted by a higher-priority job", "type": "Warning",
            "source": {"component": "gpupool-scheduler"}, "count": 1,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"}


def base_eventv1():  # the same, as events.k8s.io/v1 writes it
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "fuzz"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "gpupool.io/scheduler",
            "reportingInstance": "gpupool-scheduler-0", "action": "Preempting", "reason": "Preempted",
            "regarding": {"kind": "Pod", "namespace": "$NAMESPACE", "name": "train-0", "apiVersion": "v1"},
            "note": "Preempted by a higher-priority job", "type": "Warning"}


KINDS = {
    "pod": (base_pod, "/api/v1/namespaces/%s/pods"),
    "deployment": (base_deployment, "/apis/apps/v1/namespaces/%s/deployments"),
    "job": (base_job, "/apis/batch/v1/namespaces/%s/jobs"),
    "claim": (base_claim, "/api/v1/namespaces/%s/persistentvolumeclaims"),
    "service": (base_service, "/api/v1/namespaces/%s/services"),
    "quota": (base_quota, "/api/v1/namespaces/%s/resourcequotas"),
    # A custom resource (training-operator's CRD, data/crds): its structural schema's validation,
    # pruning and defaults. Only with --kinds: the default set is the six built-in kinds, so the
    # seeds recorded before keep their cases.
    "pytorchjob": (base_pytorchjob, "/apis/kubeflow.org/v1/namespaces/%s/pytorchjobs"),
    "tfjob": (base_tfjob, "/apis/kubeflow.org/v1/namespaces/%s/tfjobs"),
    "mpijob": (base_mpijob, "/apis/kubeflow.org/v1/namespaces/%s/mpijobs"),
    "trainjob": (base_trainjob, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs"),
    "jobset": (base_jobset, "/apis/jobset.x-k8s.io/v1alpha2/namespaces/%s/jobsets"),
    # Only with --kinds in live and record too; the updates' default has all but the immutable ones.
    "configmap": (base_configmap, "/api/v1/namespaces/%s/configmaps"),
    "configmap-immutable": (base_configmap_immutable, "/api/v1/namespaces/%s/configmaps"),
    "secret": (base_secret, "/api/v1/namespaces/%s/secrets"),
    "secret-immutable": (base_secret_immutable, "/api/v1/namespaces/%s/secrets"),
    "serviceaccount": (base_serviceaccount, "/api/v1/namespaces/%s/serviceaccounts"),
    "replicaset": (base_replicaset, "/apis/apps/v1/namespaces/%s/replicasets"),
    "cronjob": (base_cronjob, "/apis/batch/v1/namespaces/%s/cronjobs"),
    "daemonset": (base_daemonset, "/apis/apps/v1/namespaces/%s/daemonsets"),
    "statefulset": (base_statefulset, "/apis/apps/v1/namespaces/%s/statefulsets"),
    "lease": (base_lease, "/apis/coordination.k8s.io/v1/namespaces/%s/leases"),
    "networkpolicy": (base_networkpolicy, "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies"),
    "ingress": (base_ingress, "/apis/networking.k8s.io/v1/namespaces/%s/ingresses"),
    "podtemplate": (base_podtemplate, "/api/v1/namespaces/%s/podtemplates"),
    "endpoints": (base_endpoints, "/api/v1/namespaces/%s/endpoints"),
    "endpointslice": (base_endpointslice, "/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices"),
    "event": (base_event, "/api/v1/namespaces/%s/events"),
    "eventv1": (base_eventv1, "/apis/events.k8s.io/v1/namespaces/%s/events"),
    "limitrange": (base_limitrange, "/api/v1/namespaces/%s/limitranges"),
    "pdb": (base_pdb, "/apis/policy/v1/namespaces/%s/poddisruptionbudgets"),
    "role": (base_role, "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles"),
    "rolebinding": (base_rolebinding, "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings"),
    # Cluster-scoped (their path has no namespace, collection() leaves it out): --namespace does
    # not keep two runs against one server apart for these, their names are the same.
    "priorityclass": (base_priorityclass, "/apis/scheduling.k8s.io/v1/priorityclasses"),
    "storageclass": (base_storageclass, "/apis/storage.k8s.io/v1/storageclasses"),
    "pv": (base_pv, "/api/v1/persistentvolumes"),
    "clusterrole": (base_clusterrole, "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
    "clusterrolebinding": (base_clusterrolebinding, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"),
    "runtimeclass": (base_runtimeclass, "/apis/node.k8s.io/v1/runtimeclasses"),
    "ingressclass": (base_ingressclass, "/apis/networking.k8s.io/v1/ingressclasses"),
    "csidriver": (base_csidriver, "/apis/storage.k8s.io/v1/csidrivers"),
    "namespace": (base_namespace, "/api/v1/namespaces"),
}


def collection(kind, namespace):
    """The path of the kind's collection in the namespace (none for a cluster-scoped kind)."""
    path = KINDS[kind][1]
    return path % namespace if "%s" in path else path
DEFAULT_KINDS = ["pod", "deployment", "job", "claim", "service", "quota"]
CRDS = dict({k: os.path.join(HERE, "..", "..", "data", "crds", "training-operator_%ss.json" % k)
             for k in ("pytorchjob", "tfjob", "mpijob")},
            trainjob=os.path.join(HERE, "..", "..", "data", "crds", "trainer_trainjobs.json"),
            jobset=os.path.join(HERE, "..", "..", "data", "crds", "jobset_jobsets.json"))

# Edge values, by the kind of value they replace (and a few for any leaf).
STRINGS = ["", " ", "a", "A_B", "-a", "a-", "a.b", "a/b", "a/b/c", "1", "1.5", "-1", "0x10", "1e3", "../x",
           "/abs", "x" * 64, "x" * 254, "é", "a b", "Always", "Never", "Exists", "NoExecute", "TCP", "None",
           "kubernetes.io/x", "example.com/gpu", "nvidia.com/gpu", "1Gi", "100m", "0"]
NUMBERS = [0, -1, 1, 2, 65535, 65536, 2147483647, 2147483648, 9007199254740993, 1.5, -0.5, 1e3]
# (None finer than a thousandth: rounded up, their struct in a message is FIDELITY.md's difference 19.)
QUANTITIES = ["0", "1", "-1", "1.5", "0.5", "100m", "1m", "1Ki", "1Mi", "1Gi", "1G", "1e3", "1E", "+1", " 1",
              "1 ", "1.", ".5", "1k", "1ki", "01", "9223372036854775807", "99999999999999999999", "abc", ""]
ANY = [None, True, False, {}, [], "x", 1]


def leaves(v, path=()):
    """Every (path, value) of a JSON value, containers included."""
    yield path, v
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from leaves(x, path + (i,))


def get(v, path):
    for p in path:
        v = v[p]
    return v


def under_quantities(path):
    return any(p in ("limits", "requests", "hard") for p in path) or (path and path[-1] in ("maxSurge", "maxUnavailable"))


# ---- the kinds' schemas (data/openapi, recorded from the real server), to add fields they know ------

REF = "#/components/schemas/"
ROOTS = {"pod": "io.k8s.api.core.v1.Pod", "deployment": "io.k8s.api.apps.v1.Deployment",
         "job": "io.k8s.api.batch.v1.Job", "claim": "io.k8s.api.core.v1.PersistentVolumeClaim",
         "service": "io.k8s.api.core.v1.Service", "quota": "io.k8s.api.core.v1.ResourceQuota",
         "configmap": "io.k8s.api.core.v1.ConfigMap", "configmap-immutable": "io.k8s.api.core.v1.ConfigMap",
         "secret": "io.k8s.api.core.v1.Secret", "secret-immutable": "io.k8s.api.core.v1.Secret",
         "serviceaccount": "io.k8s.api.core.v1.ServiceAccount", "replicaset": "io.k8s.api.apps.v1.ReplicaSet",
         "cronjob": "io.k8s.api.batch.v1.CronJob", "daemonset": "io.k8s.api.apps.v1.DaemonSet",
         "statefulset": "io.k8s.api.apps.v1.StatefulSet", "lease": "io.k8s.api.coordination.v1.Lease",
         "networkpolicy": "io.k8s.api.networking.v1.NetworkPolicy", "ingress": "io.k8s.api.networking.v1.Ingress",
         "podtemplate": "io.k8s.api.core.v1.PodTemplate", "limitrange": "io.k8s.api.core.v1.LimitRange",
         "pdb": "io.k8s.api.policy.v1.PodDisruptionBudget", "role": "io.k8s.api.rbac.v1.Role",
         "rolebinding": "io.k8s.api.rbac.v1.RoleBinding", "priorityclass": "io.k8s.api.scheduling.v1.PriorityClass",
         "storageclass": "io.k8s.api.storage.v1.StorageClass", "pv": "io.k8s.api.core.v1.PersistentVolume",
         "clusterrole": "io.k8s.api.rbac.v1.ClusterRole", "clusterrolebinding": "io.k8s.api.rbac.v1.ClusterRoleBinding",
         "runtimeclass": "io.k8s.api.node.v1.RuntimeClass", "ingressclass": "io.k8s.api.networking.v1.IngressClass",
         "csidriver": "io.k8s.api.storage.v1.CSIDriver", "namespace": "io.k8s.api.core.v1.Namespace",
         "endpoints": "io.k8s.api.core.v1.Endpoints", "endpointslice": "io.k8s.api.discovery.v1.EndpointSlice",
         "event": "io.k8s.api.core.v1.Event", "eventv1": "io.k8s.api.events.v1.Event"}
_SCHEMAS = {}


def schemas():
    if not _SCHEMAS:
        data = os.path.join(os.path.dirname(os.path.dirname(HERE)), "data", "openapi")
        for f in sorted(os.listdir(data)):
            if f.endswith(".json"):
                _SCHEMAS.update(json.load(open(os.path.join(data, f)))["components"]["schemas"])
    return _SCHEMAS


def resolve(s):
    """A schema with its $ref (or single allOf $ref) followed; (schema, component name or None)."""
    for _ in range(8):
        ref = s.get("$ref") or (s.get("allOf") or [{}])[0].get("$ref")
        if not ref:
            return s, None
        name = ref[len(REF):]
        s = schemas().get(name, {})
        if name.endswith(("resource.Quantity", "intstr.IntOrString")):
            return s, name
    return s, None


def crd_schema(kind):
    crd = json.load(open(CRDS[kind]))
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def schema_at(kind, path):
    s, _ = resolve(crd_schema(kind) if kind in CRDS else {"$ref": REF + ROOTS[kind]})
    for p in path:
        if isinstance(p, int):
            s = s.get("items", {})
        else:
            s = s.get("properties", {}).get(p) or s.get("additionalProperties") or {}
        s, _ = resolve(s)
    return s


def value_for(rng, s, depth=0):
    """A random value of the type a property's schema gives (enums and edge values favoured)."""
    s, name = resolve(s)
    if name and name.endswith("resource.Quantity"):
        return rng.choice(QUANTITIES)
    if (name and name.endswith("intstr.IntOrString")) or s.get("x-kubernetes-int-or-string"):
        return rng.choice(["25%", "101%", "0", 0, 1, -1, "a", "8080", 70000])
    t = s.get("type")
    if t == "string":
        return rng.choice((s.get("enum") or []) * 3 + STRINGS)
    if t == "integer":
        return rng.choice([0, 1, -1, 2, 30, 65536, 2147483648])
    if t == "number":
        return rng.choice([0, 0.5, -1])
    if t == "boolean":
        return rng.choice([True, False])
    if t == "array":
        return [] if depth > 2 or rng.random() < 0.2 else [value_for(rng, s.get("items", {}), depth + 1)]
    props = s.get("properties")
    if props and depth <= 2:
        out = {}
        for k in sorted(rng.sample(sorted(props), min(len(props), rng.choice([1, 1, 2])))):
            out[k] = value_for(rng, props[k], depth + 1)
        return out
    if s.get("additionalProperties"):
        return {rng.choice(["a", "example.com/x", "A_B"]): value_for(rng, s["additionalProperties"], depth + 1)}
    return {}


def add_known_field(rng, kind, obj):
    """Sets a field the kind's schema has and obj does not, somewhere in obj."""
    spots = [p for p, v in leaves(obj) if isinstance(v, dict)]
    rng.shuffle(spots)
    for path in spots[:8]:
        props = schema_at(kind, path).get("properties", {})
        missing = sorted(k for k in props if k not in get(obj, path) and k not in ("status", "metadata"))
        if missing:
            k = rng.choice(missing)
            get(obj, path)[k] = v = value_for(rng, props[k])
            return "add %s = %s" % ("/".join(str(p) for p in path + (k,)), json.dumps(v)[:60])
    return "no field to add"


def mutate(rng, obj, kind=None):
    """One random change to obj, in place; returns its description. With `kind` (--add-fields),
    also fields of the kind that the base object does not set."""
    if kind and rng.random() < 0.3:
        return add_known_field(rng, kind, obj)
    paths = [p for p, _ in leaves(obj) if p and p[:1] not in (("apiVersion",), ("kind",))]
    if not paths:  # an earlier change left nothing but apiVersion and kind
        return "nothing left to change"
    path = rng.choice(paths)
    parent, key = get(obj, path[:-1]), path[-1]
    cur = parent[key]
    op = rng.random()
    where = "/".join(str(p) for p in path)
    if op < 0.12 and isinstance(parent, dict):
        del parent[key]
        return "drop " + where
    if op < 0.2 and isinstance(parent, list):
        parent.append(copy.deepcopy(cur))
        return "duplicate " + where
    if op < 0.27 and isinstance(cur, dict):
        name = rng.choice(["unknownField", "Name", "name ", "x-extra"])
        cur[name] = rng.choice(["v", 1, True, None, {}])
        return "add %s/%s" % (where, name)
    if isinstance(cur, str) and under_quantities(path):
        new = rng.choice(QUANTITIES)
    elif isinstance(cur, bool) or op > 0.9:
        new = rng.choice(ANY)
    elif isinstance(cur, (int, float)):
        new = rng.choice(NUMBERS + ["1"])
    elif isinstance(cur, str):
        new = rng.choice(STRINGS + [cur.upper(), cur + "-x", 1])
    elif isinstance(cur, list):
        new = rng.choice([[], [None], None, {}, "x", cur[:1] * 2])
    else:
        new = rng.choice([{}, None, [], "x"])
    parent[key] = new
    return "set %s = %s" % (where, json.dumps(new)[:40])


def generate(seed, n, add_fields=False, kinds=None):
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        kind = rng.choice(kinds or DEFAULT_KINDS)
        obj = KINDS[kind][0]()
        changes = [mutate(rng, obj, kind if add_fields else None) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        md = obj.get("metadata")
        if isinstance(md, dict) and md.get("name") == "fuzz":  # distinct names: the answers name them
            md["name"] = "fuzz-%d" % i
        cases.append({"id": i, "kind": kind, "changes": changes, "body": json.dumps(obj)})
    return cases


# ---- talking to a server -----------------------------------------------------------------------------

class Server(raw_client.Server):
    """The server of a kubeconfig, with the namespace the cases go to (the suite's, or another so
    that two runs against one server do not meet)."""

    def __init__(self, kubeconfig, namespace=NAMESPACE):
        super().__init__(kubeconfig)
        self.namespace = namespace

    def ensure_namespace(self):
        """The namespace, and no default StorageClass (the oracle has none; a claim without a
        class would get the default one's name)."""
        body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})
        status, _, _ = self.request("POST", "/api/v1/namespaces", body)
        if status not in (201, 409):
            sys.exit("fuzz: cannot create namespace %s (%d)" % (self.namespace, status))
        for kind, path in CRDS.items():  # the custom resources' definitions (the oracle has none)
            crd = json.load(open(path))
            name = crd["metadata"]["name"]
            status, _, _ = self.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name)
            if status == 404:
                self.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json.dumps(crd))
                for _ in range(100):  # until Established (its REST endpoint served)
                    status, _, _ = self.request("GET", collection(kind, self.namespace))
                    if status == 200:
                        break
                    time.sleep(0.1)
        default = "storageclass.kubernetes.io/is-default-class"
        _, _, data = self.request("GET", "/apis/storage.k8s.io/v1/storageclasses")
        for sc in json.loads(data).get("items", []):
            if sc["metadata"].get("annotations", {}).get(default) == "true":
                patch = json.dumps({"metadata": {"annotations": {default: "false"}}})
                self.request("PATCH", "/apis/storage.k8s.io/v1/storageclasses/" + sc["metadata"]["name"], patch,
                             "application/merge-patch+json")


VOLATILE = {"uid", "creationTimestamp", "resourceVersion", "managedFields", "time", "lastPhaseTransitionTime",
            "clusterIP", "clusterIPs", "nodePort"}  # (allocated: differ between servers and runs)


UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
UUID_IN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


ADDRESS = re.compile(r"\b0xc[0-9a-f]{9}\b")


TOKEN_VOLUME = re.compile(r"\bkube-api-access-[a-z0-9]{5}\b")
# FIDELITY.md 31: OpenShift's ServiceAccount admission also projects openshift-service-ca.crt.
OPENSHIFT_SOURCE = {"configMap": {"items": [{"key": "service-ca.crt", "path": "service-ca.crt"}],
                                  "name": "openshift-service-ca.crt"}}


def scrub(v):
    if isinstance(v, str) and UUID.match(v):  # a Job's controller-uid labels and selector
        return "<uid>"
    if isinstance(v, str):  # Go's %#v of a pointer (FIDELITY.md, Go structs in messages); the
        # ServiceAccount plugin's volume, named with 5 random characters
        return TOKEN_VOLUME.sub("kube-api-access-<rand>", ADDRESS.sub("0x<address>", v))
    if isinstance(v, dict):
        return {k: ("<" + k + ">" if k in VOLATILE else
                    scrub([e for e in x if e != OPENSHIFT_SOURCE] if k == "sources" and isinstance(x, list) else x))
                for k, x in v.items()}
    if isinstance(v, list):
        return [scrub(x) for x in v]
    return v


def generated_names(v, rx, repl):
    """`v` with every name generated from the body's generateName (it and 5 random characters of
    names.SimpleNameGenerator's alphabet, different on each server) written `<generateName><rand>`."""
    if isinstance(v, str):
        return rx.sub(repl, v)
    if isinstance(v, dict):
        return {k: generated_names(x, rx, repl) for k, x in v.items()}
    if isinstance(v, list):
        return [generated_names(x, rx, repl) for x in v]
    return v


def answer(server, case, method="POST", path=None, content_type=None):
    path = path or collection(case["kind"], server.namespace) + "?dryRun=All"
    body = case["body"].replace("$NAMESPACE", server.namespace)  # (an Event's object is in the cases' namespace)
    status, headers, data = server.request(method, path, body.encode(), content_type)
    warnings = sorted(v for k, v in headers if k.lower() == "warning")
    try:
        body = scrub(json.loads(data))
    except ValueError:
        body = data.decode(errors="replace")
    try:
        meta = json.loads(case["body"]).get("metadata")
        gen = meta.get("generateName") if isinstance(meta, dict) else None
    except (ValueError, AttributeError):
        gen = None
    if case["kind"] == "limitrange" and isinstance(body, dict) and body.get("kind") == "Status":
        # A LimitRange without a name is named by a new UUID (limitrange/strategy.go), which its
        # Status message quotes.
        body["message"] = UUID_IN.sub("<uid>", body.get("message", ""))
    if isinstance(gen, str) and gen and isinstance(body, dict):
        body = generated_names(body, re.compile(re.escape(gen) + r"[bcdfghjklmnpqrstvwxz2456789]{5}"),
                               gen.replace("\\", "\\\\") + "<rand>")
    return {"status": status, "warnings": warnings, "body": body}


MAP_ORDERED = re.compile(r"\.resources\.(limits|requests)\b|^spec\.hard\[|\.(labels|annotations|matchLabels|nodeSelector)$"
                         r"|^spec\.selector$|^spec\.limits\[\d+\]\.(max|min|default|defaultRequest|maxLimitRequestRatio)\["
                         r"|^spec\.capacity\[")


def same(want, got, kind=None):
    """Equal answers; a Status whose causes differ only in the order Go walks a map in (resources'
    limits and requests, a quota's hard, a LimitRange item's resources, a PV's capacity, labels,
    annotations, selectors: FIDELITY.md difference 20) counts as equal. For a custom resource the
    structural schema's validator walks properties in Go map order: kube-apiserver's own order of
    its causes changes from one request to the next, so any order counts."""
    if want == got:
        return True
    w, g = want["body"], got["body"]
    if (want["status"], want["warnings"]) != (got["status"], got["warnings"]) or not all(
            isinstance(x, dict) and x.get("kind") == "Status" for x in (w, g)):
        return False
    wc, gc = (x.get("details", {}).get("causes", []) for x in (w, g))
    key = lambda c: json.dumps(c, sort_keys=True)
    fixed = lambda cs: [c for c in cs if kind not in CRDS and not MAP_ORDERED.search(c.get("field", ""))]
    prefix = lambda x: x.get("message", "").split(" is invalid: ")[0]
    strip = lambda x: {k: v for k, v in x.items() if k not in ("message", "details")}
    return (sorted(wc, key=key) == sorted(gc, key=key) and fixed(wc) == fixed(gc) and prefix(w) == prefix(g)
            and strip(w) == strip(g) and {k: v for k, v in w.get("details", {}).items() if k != "causes"}
            == {k: v for k, v in g.get("details", {}).items() if k != "causes"})


def show_diff(case, want, got):
    print("case %d (%s: %s)" % (case["id"], case["kind"], "; ".join(case["changes"])))
    for k in ("status", "warnings"):
        if want[k] != got[k]:
            print("  %s: real %s, this server %s" % (k, json.dumps(want[k]), json.dumps(got[k])))
    if want["body"] != got["body"]:
        w, g = want["body"], got["body"]
        if isinstance(w, dict) and isinstance(g, dict) and w.get("kind") == "Status" and g.get("kind") == "Status":
            print("  real:        %s" % w.get("message"))
            print("  this server: %s" % g.get("message"))
            if w.get("details") != g.get("details") and w.get("message") == g.get("message"):
                print("  details: real %s\n           this %s" % (json.dumps(w.get("details")), json.dumps(g.get("details"))))
        else:
            wl = json.dumps(w, indent=1, sort_keys=True).splitlines()
            gl = json.dumps(g, indent=1, sort_keys=True).splitlines()
            import difflib
            for line in list(difflib.unified_diff(wl, gl, "real", "this server", n=1, lineterm=""))[:40]:
                print("  " + line)


# ---- updates: a PUT (dry run) of a stored object, changed -----------------------------------------

UPDATE_KINDS = ["deployment", "job", "service", "pytorchjob", "jobset", "claim", "pod", "configmap", "secret",
                "serviceaccount", "replicaset"]  # (the quota base is refused)
UPDATE_ALL = UPDATE_KINDS + ["configmap-immutable", "secret-immutable", "tfjob", "mpijob", "trainjob"]  # --kinds all
DELETE = object()

# The fields updates are about, each with values more telling than a random leaf's edge value: what
# users and controllers change (labels, finalizers, owners, an image, a deadline) and what may not
# change. A value is set (the dicts on its way made), dropped (DELETE), or computed from the current
# one (a function). Lists of (path, values): an update's change picks one half the time.


def appended(item):
    return lambda cur: (cur if isinstance(cur, list) else []) + [item]


def without_first(cur):
    return cur[1:] if isinstance(cur, list) else cur


OWNER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "6f1e3c2a-0b7d-4c59-9a3e-2d1f5b8c7e40"}
METADATA_EDITS = [
    (("metadata", "labels", "team"), ["ml", "", "-x", "a/b/c", "x" * 64, 1, None, DELETE]),
    (("metadata", "labels", "example.com/"), ["x"]),
    (("metadata", "labels"), [None, {}, {"A_B/c": "x"}, "x"]),
    (("metadata", "annotations", "example.com/note"), ["x", "", 1, None, "x" * 262144]),
    (("metadata", "annotations"), [None, {}, {"a b": "x"}, []]),
    (("metadata", "finalizers"), [[], ["example.com/cleanup"], ["cleanup"], ["kubernetes"], ["orphan"],
                                  ["foregroundDeletion"], ["a/b/c"], [""], ["example.com/x", "example.com/x"],
                                  "x", None, [1], appended("example.com/cleanup"), without_first]),
    (("metadata", "ownerReferences"), [
        [OWNER], [dict(OWNER, controller=True, blockOwnerDeletion=True)],
        [dict(OWNER, controller=True), dict(OWNER, name="other", uid=OWNER["uid"][:-1] + "1", controller=True)],
        [dict(OWNER, uid="")], [{k: v for k, v in OWNER.items() if k != "name"}], [dict(OWNER, apiVersion="")],
        [dict(OWNER, kind="")], [dict(OWNER, name="a b")], [OWNER, OWNER], [], None, "x", [None]]),
    (("metadata", "name"), ["other", "", DELETE]),
    (("metadata", "namespace"), ["default", "", DELETE]),
    (("metadata", "generateName"), ["fuzz-", "a b"]),
    (("metadata", "uid"), [OWNER["uid"], "", DELETE]),
    (("metadata", "generation"), [5, -1, DELETE]),
    (("metadata", "deletionGracePeriodSeconds"), [30, -1]),
    (("metadata", "deletionTimestamp"), ["2030-01-01T00:00:00Z"]),
    (("metadata", "creationTimestamp"), [None, "2020-01-01T00:00:00Z", "x"]),
    (("metadata", "selfLink"), ["/x"]),
]
NEW_TOLERATION = {"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
POD_SPEC_EDITS = [  # under a pod's spec: image, deadline and added tolerations are what a pod's update may change
    (("containers", 0, "image"), ["harbor.example.edu/library/pytorch:2.2-cuda12", "", " ", "a b", None, DELETE]),
    (("activeDeadlineSeconds",), [3600, 86400, 86401, 0, -1, 1.5, None, DELETE]),
    (("tolerations",), [appended(NEW_TOLERATION), appended(dict(NEW_TOLERATION, operator="Equal")),
                        without_first, [], None]),
    (("tolerations", 0, "tolerationSeconds"), [60, -1]),
    (("tolerations", 0, "effect"), ["NoExecute", "Sometimes"]),
    (("containers", 0, "resources", "limits", "cpu"), ["9", "8000m"]),
    (("containers", 0, "command"), [["python", "eval.py"]]),
    (("containers", 0, "env", 0, "value"), ["0"]),
    (("containers",), [appended({"name": "sidecar", "image": "busybox"})]),
    (("restartPolicy",), ["Always", "OnFailure", "Never"]),
    (("nodeName",), ["gpu-1", "a b"]),
    (("nodeSelector", "accelerator"), ["nvidia-h100"]),
    (("schedulingGates",), [[{"name": "example.com/gate"}]]),
    (("terminationGracePeriodSeconds",), [60, -1]),
]
CONFIGMAP_EDITS = [
    (("data", "train.sh"), ["python eval.py\n", "", None, 1, DELETE]),
    (("data", "eval.yaml"), ["lr: 0.01\n", ""]),
    (("data", "a b"), ["x"]),
    (("data", ".."), ["x"]),
    (("data", "vocab.bin"), ["also binary data's key"]),
    (("data",), [None, {}, "x", DELETE]),
    (("binaryData", "vocab.bin"), ["AAECAwQ=", "not base64!", "", None, DELETE]),
    (("binaryData", "x" * 254), ["AA=="]),
    (("binaryData",), [None, {}, DELETE]),
    (("immutable",), [True, False, None, "yes", DELETE]),
]
SECRET_EDITS = [
    (("data", "WANDB_API_KEY"), ["bjN3", "not base64!", "", None, 1, DELETE]),
    (("data", "a b"), ["eA=="]),
    (("data", "tls.crt"), ["eA=="]),
    (("stringData", "WANDB_API_KEY"), ["n3w", "", 1, None]),
    (("stringData", "a b"), ["x"]),
    (("stringData",), [None, {}, "x"]),
    (("type",), ["kubernetes.io/tls", "kubernetes.io/dockerconfigjson", "kubernetes.io/service-account-token",
                 "example.com/custom", "", "Opaque ", None, 1, DELETE]),
    (("immutable",), [True, False, None, "yes", DELETE]),
    (("data",), [None, {}, DELETE]),
]
UPDATE_EDITS = {
    "pod": [(("spec",) + p, v) for p, v in POD_SPEC_EDITS],
    "replicaset": [(("spec",) + p, v) for p, v in [
        (("replicas",), [1, -1, None, "1"]),
        (("minReadySeconds",), [0, -1, 30]),
        (("selector", "matchLabels", "app"), ["other", ""]),
        (("selector", "matchLabels", "tier"), ["gpu"]),
        (("template", "metadata", "labels", "app"), ["other", DELETE]),
        (("template", "metadata", "labels", "tier"), ["gpu"])]]
        + [(("spec", "template", "spec") + p, v) for p, v in POD_SPEC_EDITS],
    "claim": [(("spec",) + p, v) for p, v in [
        (("resources", "requests", "storage"), ["200Gi", "50Gi", "100Gi", "0", "abc", DELETE]),
        (("resources", "limits", "storage"), ["1Gi", "200Gi"]),
        (("accessModes",), [["ReadWriteOnce"], [], ["ReadWriteMany", "ReadWriteMany"],
                            ["ReadWriteOncePod", "ReadWriteMany"], ["Sometimes"]]),
        (("storageClassName",), ["other", "", None, "a b"]),
        (("volumeName",), ["pv-1", "a b"]),
        (("volumeMode",), ["Block", "x"]),
        (("volumeAttributesClassName",), ["gold", ""]),
        (("selector",), [{"matchLabels": {"owner": "alice"}}]),
        (("dataSource",), [{"kind": "PersistentVolumeClaim", "name": "data"}])]],
    "configmap": CONFIGMAP_EDITS,
    "configmap-immutable": CONFIGMAP_EDITS,
    "secret": SECRET_EDITS,
    "secret-immutable": SECRET_EDITS,
    "serviceaccount": [
        (("secrets",), [appended({"name": "other"}), [], None, [{"name": ""}], [{"name": "a b"}], [{}], "x"]),
        (("secrets", 0, "namespace"), ["other"]),
        (("imagePullSecrets",), [appended({"name": "other"}), [{}], [{"name": ""}], None, "x"]),
        (("automountServiceAccountToken",), [True, None, "yes", DELETE])],
    "limitrange": [(("spec", "limits", 0) + p, v) for p, v in [
        (("default", "cpu"), ["4", "33", "50m", DELETE]),
        (("defaultRequest", "memory"), ["200Gi", "1Gi"]),
        (("max",), [{}, DELETE]),
        (("maxLimitRequestRatio", "memory"), ["0.5", "2"]),
        (("type",), ["Pod", "Sometimes", ""])]] + [
        (("spec", "limits"), [appended({"type": "Pod", "max": {"nvidia.com/gpu": "8"}}), without_first, [], None])],
    "pdb": [(("spec",) + p, v) for p, v in [
        (("minAvailable",), [1, "50%", "150%", -1, "x", None, DELETE]),
        (("maxUnavailable",), [1, "10%", -1]),
        (("selector",), [{"matchLabels": {"app": "train"}}, {}, None, {"matchLabels": {"a b": "x"}}]),
        (("unhealthyPodEvictionPolicy",), ["IfHealthyBudget", "Sometimes", None])]],
    "priorityclass": [
        (("value",), [1001, 1000000001, -1, "1", None]),
        (("globalDefault",), [True, None]),
        (("preemptionPolicy",), ["PreemptLowerPriority", "Sometimes", None, DELETE]),
        (("description",), ["", None, DELETE])],
    "storageclass": [
        (("provisioner",), ["nfs.csi.k8s.io", "", "a b"]),
        (("parameters", "fsName"), ["other", DELETE]),
        (("reclaimPolicy",), ["Delete", "Recycle", None]),
        (("volumeBindingMode",), ["WaitForFirstConsumer", "Sometimes", None]),
        (("allowVolumeExpansion",), [False, None]),
        (("mountOptions",), [appended("hard"), [], None]),
        (("allowedTopologies",), [[{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}], [{}]])],
    "pv": [(("spec",) + p, v) for p, v in [
        (("capacity", "storage"), ["2Ti", "0", "abc", DELETE]),
        (("accessModes",), [["ReadWriteOnce"], [], ["Sometimes"]]),
        (("persistentVolumeReclaimPolicy",), ["Delete", "Recycle", "Sometimes"]),
        (("storageClassName",), ["other", "", None]),
        (("volumeMode",), ["Block", "x"]),
        (("nfs", "server"), ["10.0.0.6", ""]),
        (("claimRef",), [{"namespace": "fid-fuzz", "name": "data"}, {"name": "data"}, {}]),
        (("nodeAffinity",), [{"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-1"]}]}]}}])]],
    "role": [
        (("rules",), [appended({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}), without_first,
                      [], None, [{}], [{"verbs": ["get"]}]]),
        (("rules", 0, "verbs"), [[], ["*"], appended("patch")]),
        (("rules", 0, "nonResourceURLs"), [["/metrics"]])],
    "rolebinding": [
        (("roleRef", "name"), ["other", ""]),
        (("roleRef", "kind"), ["ClusterRole", "Sometimes"]),
        (("subjects",), [appended({"kind": "User", "name": "bob"}), without_first, [], None, [{}]]),
        (("subjects", 0, "kind"), ["ServiceAccount", "Sometimes"])],
    "endpoints": [(("subsets", 0) + p, v) for p, v in [
        (("addresses", 0, "ip"), ["10.1.2.5", "127.0.0.1", "::1", "x", ""]),
        (("addresses",), [appended({"ip": "10.1.2.6"}), [], None]),
        (("notReadyAddresses",), [[], None]),
        (("ports",), [appended({"name": "tb", "port": 6006}), appended({"port": 6006}), [], None]),
        (("ports", 0, "protocol"), ["UDP", "", "x"])]],
    "endpointslice": [
        (("addressType",), ["IPv6", "FQDN", "x", ""]),
        (("endpoints", 0, "addresses"), [["10.1.2.5"], ["::1"], ["a.example.com"], [], None]),
        (("endpoints", 0, "conditions", "ready"), [False, None]),
        (("endpoints", 0, "hints"), [{"forZones": [{"name": "a"}]}]),
        (("ports",), [appended({"name": "tb", "port": 6006}), appended({"port": 6006}), [], None]),
        (("ports", 0, "protocol"), ["UDP", "", None])],
    "event": [
        (("count",), [2, 0, -1, None]),
        (("lastTimestamp",), ["2026-01-01T00:01:00Z", None, "x"]),
        (("message",), ["Preempted again", "", None]),
        (("involvedObject", "namespace"), ["other", "", DELETE]),
        (("eventTime",), ["2026-01-01T00:00:00.000000Z"]),
        (("series",), [{"count": 2, "lastObservedTime": "2026-01-01T00:02:00.000000Z"}, {}])],
    "eventv1": [
        (("note",), ["Preempted again", "", None]),
        (("reason",), ["Evicted", ""]),
        (("regarding", "namespace"), ["other", "", DELETE]),
        (("deprecatedCount",), [2, 0]),
        (("series",), [{"count": 2, "lastObservedTime": "2026-01-01T00:02:00.000000Z"}, {"count": 1}, {}]),
        (("type",), ["Normal", "Sometimes"])],
    "runtimeclass": [
        (("handler",), ["runc", "", "A_B"]),
        (("overhead", "podFixed", "nvidia.com/gpu"), ["1", "-1"]),
        (("scheduling", "nodeSelector", "accelerator"), ["nvidia-h100", "a b"]),
        (("scheduling", "tolerations"), [appended(NEW_TOLERATION), [], None])],
    "ingressclass": [(("spec",) + p, v) for p, v in [
        (("controller",), ["example.com/other", "", "nginx"]),
        (("parameters", "scope"), ["Cluster", "Sometimes"]),
        (("parameters", "namespace"), [DELETE, "a b"]),
        (("parameters",), [None, {}])]],
    "csidriver": [(("spec",) + p, v) for p, v in [
        (("attachRequired",), [True, None]),
        (("podInfoOnMount",), [True]),
        (("fsGroupPolicy",), ["None", "ReadWriteOnceWithFSType", "Sometimes"]),
        (("volumeLifecycleModes",), [["Ephemeral"], ["Persistent", "Persistent"], []]),
        (("tokenRequests",), [[{"audience": "ceph"}], [{"audience": "ceph"}, {"audience": "ceph"}]])]],
    "namespace": [
        (("spec", "finalizers"), [[], ["kubernetes", "example.com/x"], ["x"], None]),
        (("metadata", "labels", "kubernetes.io/metadata.name"), ["other", DELETE]),
        (("status", "phase"), ["Terminating", "Sometimes"])],
}


def set_path(obj, path, value):
    """Sets obj at path to value (or what value makes of the current one, or drops it), making the
    objects on the way; False, obj unchanged, where there is nothing to drop or the way is blocked
    (an earlier change left something else there, or a list is shorter)."""
    for p, after in zip(path, path[1:]):
        if isinstance(obj, dict) and p not in obj and isinstance(after, str) and value is not DELETE:
            obj[p] = {}
        if not (isinstance(obj, dict) and p in obj or isinstance(obj, list) and isinstance(p, int) and p < len(obj)):
            return False
        obj = obj[p]
    key = path[-1]
    if not (isinstance(obj, dict) or isinstance(obj, list) and isinstance(key, int) and key < len(obj)):
        return False
    if value is DELETE:
        if isinstance(obj, list) or key not in obj:
            return False
        del obj[key]
    elif callable(value):
        obj[key] = value(copy.deepcopy(obj.get(key) if isinstance(obj, dict) else obj[key]))
    else:
        obj[key] = copy.deepcopy(value)
    return True


def update_change(rng, obj, kind, add_fields):
    """One random change to a stored object, in place; its description. Half the time one of the
    fields updates are about (metadata's, the kind's), otherwise mutate's."""
    if rng.random() < 0.5:
        path, values = rng.choice(METADATA_EDITS + UPDATE_EDITS.get(kind, []))
        value = rng.choice(values)
        if set_path(obj, path, value):
            where = "/".join(str(p) for p in path)
            if value is DELETE:
                return "drop " + where
            shown = get(obj, path)
            return "set %s = %s" % (where, json.dumps(shown)[:60])
    return mutate(rng, obj, kind if add_fields else None)


def base_unbound_claim():
    """The guide's claim, of a class neither server has: the embedded cluster provisions its own
    classes' claims (FIDELITY.md difference 22), the oracle none, and a bound claim's spec is
    another's (volumeName) with other rules for its update."""
    return dict(base_claim(), spec=dict(base_claim()["spec"], storageClassName="fuzz-unprovisioned"))


UPDATE_BASES = {"claim": base_unbound_claim}  # (otherwise the kind's own)


def stored_base(server, kind):
    """The kind's base object, created for real on `server` as fuzzu-<kind> (an earlier one deleted
    first), as stored, without status and managedFields: what the updates start from."""
    base = UPDATE_BASES.get(kind, KINDS[kind][0])()
    name = "fuzzu-" + kind
    base["metadata"]["name"] = name
    if kind == "pod":
        # The ServiceAccount plugin's volume and mount, brought by the pod under a fixed name: the
        # plugin then adds nothing (it uses a kube-api-access-* volume the pod has), so both servers
        # store the same pod (its own would be named at random, and OpenShift's has a fourth source).
        base["spec"]["volumes"].append({"name": "kube-api-access-fuzz0", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}})
        for c in base["spec"]["containers"]:
            c["volumeMounts"].append({"name": "kube-api-access-fuzz0", "readOnly": True,
                                      "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})
    path = collection(kind, server.namespace)
    server.request("DELETE", path + "/" + name)
    for _ in range(100):
        if server.request("GET", path + "/" + name)[0] == 404:
            break
        time.sleep(0.1)
    status, _, data = server.request("POST", path, json.dumps(base).replace("$NAMESPACE", server.namespace))
    if status != 201:
        sys.exit("fuzz: cannot create %s/%s (%d): %s" % (kind, name, status, data[:300]))
    obj = json.loads(data)
    if kind == "pv":  # the binder makes it Available: wait, so that the updates do not race it
        for _ in range(100):
            if obj.get("status", {}).get("phase") != "Pending":
                break
            time.sleep(0.1)
            obj = json.loads(server.request("GET", path + "/" + name)[2])
    obj.pop("status", None)
    obj["metadata"].pop("managedFields", None)
    return obj


def edits(a, b, path=()):
    """The edits that turn a into b: (path, value) and (path, DELETE); a list whose length changed
    is replaced whole."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [(path + (k,), DELETE) for k in a if k not in b]
        for k, v in b.items():
            out += edits(a[k], v, path + (k,)) if k in a else [(path + (k,), v)]
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [e for i in range(len(a)) for e in edits(a[i], b[i], path + (i,))]
    return [] if a == b and type(a) is type(b) else [(path, b)]


def apply_edits(obj, changes):
    for path, v in changes:
        if not path:
            return copy.deepcopy(v)
        parent = get(obj, path[:-1])
        if v is DELETE:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(v)
    return obj


TEMPLATE_VALUE = re.compile(r'Invalid value: (core\.PodTemplateSpec\{|\{"metadata"|\{"spec").*')
# The go-cmp diff of the old and new spec Kubernetes appends to a claim's, a pod's and a
# PersistentVolume's source's immutability message: lines starting with a space, go-cmp's random
# non-breaking space, '-' or '+'.
SPEC_DIFF = re.compile(r"(for bound claims|if it was previously negative\)|persistentvolumesource is immutable after creation)"
                       r"\n(?:[-+ \u00a0].*\n)*")


def comparable_update(a):
    """An update's answer without what differs by design: the status the embedded cluster's
    operators wrote (the oracle runs none for custom resources), the Go %#v of a whole
    core.PodTemplateSpec in a Job's immutable-template error (FIDELITY.md, Go structs in messages:
    the embedded server prints the template as JSON), and the go-cmp diff after a claim's or a
    pod's `spec is immutable` / `pod updates may not change fields` (FIDELITY.md difference 1: the
    embedded server ends the message there)."""
    b = a["body"]
    if isinstance(b, dict) and b.get("kind") != "Status":
        b.pop("status", None)
    if isinstance(b, dict) and b.get("kind") == "Status":  # the stored objects' uids, in a precondition's words
        b["message"] = UUID_IN.sub("<uid>", b.get("message", ""))
    if isinstance(b, dict) and b.get("kind") == "Status":
        b["message"] = SPEC_DIFF.sub(r"\1", b["message"])
        for c in b.get("details", {}).get("causes", []):
            c["message"] = UUID_IN.sub(
                "<uid>", SPEC_DIFF.sub(r"\1", TEMPLATE_VALUE.sub("Invalid value: <template>", c.get("message", ""))))
        b["message"] = "<message>" if "core.PodTemplateSpec{" in b.get("message", "") or (
            "spec.template: Invalid value: {" in b.get("message", "")) else b.get("message")
    return a


def update_cases(seed, count, kinds, add_fields, real_bases):
    """The generated updates, each (case, edits): random changes chosen on the real server's stored
    objects, and the edits that make them (applied to each server's own object)."""
    rng = random.Random(seed)
    for i in range(count):
        kind = rng.choice(kinds)
        changed = copy.deepcopy(real_bases[kind])
        changes = [update_change(rng, changed, kind, add_fields) for _ in range(rng.choice([1, 1, 1, 2]))]
        yield {"id": i, "kind": kind, "changes": changes}, edits(real_bases[kind], changed)


def put_update(server, base, change_edits, kind):
    """A server's answer, comparable, to the PUT (dry run) of its stored `base` with the edits. The
    controllers write the objects' status meanwhile: unless a change is the version's, the body
    carries the server's current resourceVersion (a dry run stores nothing)."""
    body = apply_edits(copy.deepcopy(base), change_edits)
    path = collection(kind, server.namespace) + "/fuzzu-" + kind + "?dryRun=All"
    if not any(p[:2] == ("metadata", "resourceVersion") or p in ((), ("metadata",)) for p, _ in change_edits):
        if isinstance(body.get("metadata"), dict):
            _, _, data = server.request("GET", path.split("?")[0])
            body["metadata"]["resourceVersion"] = json.loads(data)["metadata"]["resourceVersion"]
    return comparable_update(answer(server, {"kind": kind, "body": json.dumps(body)}, "PUT", path)), body


def update_kinds(o):
    return UPDATE_ALL if o.kinds == "all" else o.kinds.split(",") if o.kinds else UPDATE_KINDS


def live_updates(o):
    """PUTs (dry runs) of each server's own stored object with the same random changes: the
    changes are chosen on the real server's object, and its edits applied to the other's (their
    uids, resourceVersions and allocations differ)."""
    real, other = Server(o.oracle, o.namespace), Server(o.embedded, o.namespace)
    real.ensure_namespace()
    other.ensure_namespace()
    kinds = update_kinds(o)
    bases = {k: (stored_base(real, k), stored_base(other, k)) for k in kinds}
    tried, differ = dict.fromkeys(kinds, 0), dict.fromkeys(kinds, 0)
    for case, change_edits in update_cases(o.seed, o.cases, kinds, o.add_fields, {k: b[0] for k, b in bases.items()}):
        kind = case["kind"]
        tried[kind] += 1
        want, body = put_update(real, bases[kind][0], change_edits, kind)
        got, _ = put_update(other, bases[kind][1], change_edits, kind)
        if not same(want, got, kind):
            differ[kind] += 1
            show_diff(dict(case, body=json.dumps(body)), want, got)
    print("%d updates, %d differ (%s)" % (o.cases, sum(differ.values()),
                                        ", ".join("%s %d/%d" % (k, differ[k], tried[k]) for k in kinds)))
    return 1 if any(differ.values()) else 0


# Edits as JSON lines: a removal is {"path": [...], "delete": true}.
def edits_to_json(change_edits):
    return [{"path": list(p), "delete": True} if v is DELETE else {"path": list(p), "value": v} for p, v in change_edits]


def edits_from_json(items):
    return [(tuple(e["path"]), DELETE if e.get("delete") else e["value"]) for e in items]


def record_updates(o):
    """golden/fuzz_updates.jsonl: the generated updates with the real server's answers."""
    real = Server(o.oracle)
    real.ensure_namespace()
    kinds = update_kinds(o)
    bases = {k: stored_base(real, k) for k in kinds}
    with open(UPDATES_GOLDEN, "a" if o.append else "w") as f:
        for case, change_edits in update_cases(o.seed, o.cases, kinds, o.add_fields, bases):
            want, _ = put_update(real, bases[case["kind"]], change_edits, case["kind"])
            f.write(json.dumps(dict(case, edits=edits_to_json(change_edits), answer=want), sort_keys=True) + "\n")
    print("recorded %d updates in %s%s" % (o.cases, UPDATES_GOLDEN, " (appended)" if o.append else ""))
    return 0


def replay(golden, server, answer_of, agrees, show, refresh=False):
    """Replays a golden file of stored-object cases on `server`: each kind's base created there,
    each case's request sent (`answer_of(server, base, case)`: the answer and the case as shown);
    returns (cases, differing). `refresh` (a REAL server): the file is written again with its
    answers, the cases kept."""
    lines = [json.loads(line) for line in open(golden)] if os.path.exists(golden) else []
    bases = {k: stored_base(server, k) for k in sorted({c["kind"] for c in lines})}
    differ = 0
    for line in lines:
        case = copy.deepcopy(line)
        want = case.pop("answer")
        got, shown = answer_of(server, bases[case["kind"]], case)
        if not agrees(want, got, case["kind"]):
            differ += 1
            show(shown, want, got)
            line["answer"] = got
    if refresh:
        with open(golden, "w") as f:
            for line in lines:
                f.write(json.dumps(line, sort_keys=True) + "\n")
    return len(lines), differ


def check_updates(server, refresh=False):
    """Replays golden/fuzz_updates.jsonl: the recorded edits PUT as dry runs."""
    def answer_of(server, base, case):
        got, body = put_update(server, base, edits_from_json(case.pop("edits")), case["kind"])
        return got, dict(case, body=json.dumps(body))
    return replay(UPDATES_GOLDEN, server, answer_of, same, show_diff, refresh)


# ---- patches: a PATCH (dry run) of a stored object, the updates' changes -------------------------

PATCH_TYPES = {"merge": "application/merge-patch+json", "strategic": "application/strategic-merge-patch+json",
               "json": "application/json-patch+json"}


def same_json(a, b):
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)  # (Python's 1 == True, 1 == 1.0)


def merge_patch(base, change_edits):
    """The RFC 7386 patch making the edits: the members changed, the removed ones null, and a list
    with an item changed replaced whole (a merge patch cannot address an item). A value null, or
    null inside a new object, removes a member: not quite the change the update made."""
    changed = apply_edits(copy.deepcopy(base), change_edits)
    patch = {}
    for path, v in change_edits:
        item = next((n for n, p in enumerate(path) if isinstance(p, int)), None)
        if item is not None:
            path, v = path[:item], get(changed, path[:item])
        if not path:
            return v
        at = patch
        for p in path[:-1]:
            at = at.setdefault(p, {})
        at[path[-1]] = None if v is DELETE else v
    return patch


def patch_meta(kind, path):
    """(patch strategy, merge key) of the field at path in the kind's schema, as a strategic merge
    patch merges it (x-kubernetes-patch-strategy, x-kubernetes-patch-merge-key)."""
    if not path or isinstance(path[-1], int):
        return "", None
    prop = schema_at(kind, path[:-1]).get("properties", {}).get(path[-1]) or {}
    return prop.get("x-kubernetes-patch-strategy", ""), prop.get("x-kubernetes-patch-merge-key")


def strategic_list(rng, kind, path, old, new, notes):
    """The members of a strategic merge patch turning the list `old` at path (of the merge strategy)
    into `new`, as kubectl's CreateTwoWayMergePatch writes them: items by merge key, the changed
    ones as their own patches, `$patch: delete` for those removed, `$setElementOrder` for the
    order; a primitive list's new values, `$deleteFromPrimitiveList` for those removed. Now and
    then the whole list instead (merged by key: items removed stay), or with `$patch: replace`."""
    name = path[-1]
    _, key = patch_meta(kind, path)
    if key:
        keyed = all(isinstance(x, dict) and key in x for x in old + new)
        if not keyed or len({json.dumps(x[key]) for x in new}) < len(new) or rng.random() < 0.15:
            return {name: new}
        if rng.random() < 0.12:
            notes.append("$patch: replace in " + "/".join(map(str, path)))
            return {name: new + [{"$patch": "replace"}]}
        olds = {json.dumps(x[key]): x for x in old}
        news = {json.dumps(x[key]) for x in new}
        items = []
        for x in new:
            was = olds.get(json.dumps(x[key]))
            if was is None:
                items.append(x)
            elif not same_json(was, x):
                items.append(dict(strategic_patch(rng, kind, was, x, notes, path + (0,)), **{key: x[key]}))
        items += [{key: x[key], "$patch": "delete"} for x in old if json.dumps(x[key]) not in news]
        out = {"$setElementOrder/" + name: [{key: x[key]} for x in new]}
        return dict(out, **{name: items}) if items else out
    if any(isinstance(x, (dict, list)) for x in old + new):
        return {name: new}
    out = {"$setElementOrder/" + name: new}
    added = [x for x in new if not any(same_json(x, y) for y in old)]
    removed = [x for x in old if not any(same_json(x, y) for y in new)]
    if added:
        out[name] = added
    if removed:
        out["$deleteFromPrimitiveList/" + name] = removed
    return out


def strategic_patch(rng, kind, base, changed, notes, path=()):
    """The strategic merge patch turning the object `base` into `changed`: maps merged (members
    removed null), lists of the merge strategy as strategic_list has them, other values replaced;
    `$retainKeys` now and then where the schema's strategy has it, and rarely a map sent whole
    with `$patch: replace`."""
    patch = {k: None for k in base if k not in changed}
    for k, new in changed.items():
        old = base.get(k)
        if k in base and same_json(old, new):
            continue
        strategy, _ = patch_meta(kind, path + (k,))
        if isinstance(old, dict) and isinstance(new, dict):
            if path and not UUID_IN.search(json.dumps(new)) and rng.random() < 0.04:  # (a uid is the real server's)
                notes.append("$patch: replace of " + "/".join(map(str, path + (k,))))
                patch[k] = dict(new, **{"$patch": "replace"})
                continue
            patch[k] = strategic_patch(rng, kind, old, new, notes, path + (k,))
            if "retainKeys" in strategy and rng.random() < 0.5:
                notes.append("$retainKeys in " + "/".join(map(str, path + (k,))))
                patch[k]["$retainKeys"] = sorted(new)
        elif isinstance(old, list) and isinstance(new, list) and "merge" in strategy.split(","):
            patch.update(strategic_list(rng, kind, path + (k,), old, new, notes))
        else:
            patch[k] = new
    return patch


def pointer(path):
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def has_path(obj, path):
    try:
        get(obj, path)
        return True
    except (KeyError, IndexError, TypeError):
        return False


def testable_leaf(rng, base):
    """A (path, value) of the base that is the same on both servers (a spec's, the data's, the name):
    not an allocated or generated one, nor one the controllers write."""
    spots = [(p, v) for p, v in leaves(base) if p and p[0] not in ("metadata", "apiVersion", "kind")
             and not VOLATILE & set(map(str, p)) and not UUID_IN.search(json.dumps(v))]
    return rng.choice(spots) if spots and rng.random() < 0.8 else (("metadata", "name"), base["metadata"]["name"])


BAD_OPS = [{"op": "remove", "path": "/spec/notThere"}, {"op": "replace", "path": "/metadata/labels/not-there", "value": "x"},
           {"op": "add", "path": "/notThere/x", "value": 1}, {"op": "add", "path": "metadata/labels", "value": {}},
           {"op": "add", "path": "/metadata/finalizers/7", "value": "example.com/x"},
           {"op": "frobnicate", "path": "/metadata/labels"}, {"op": "add", "path": "/metadata/labels/a~2b", "value": "x"},
           {"op": "move", "from": "/metadata/labels/not-there", "path": "/metadata/labels/x"},
           {"op": "add", "value": "x"}, {"op": "test", "path": "/metadata/name"}]


def json_patch(rng, base, change_edits, notes):
    """The RFC 6902 patch making the edits: replace what the base has, add what it has not, remove;
    an item appended to a list as an add at its end (`-`) half the time. Now and then a `test` op
    first (of a value both servers have, or of another value: the patch fails), or a bad op last."""
    ops = []
    for path, v in change_edits:
        if v is DELETE:
            ops.append({"op": "remove", "path": pointer(path)})
        elif not has_path(base, path):
            ops.append({"op": "add", "path": pointer(path), "value": v})
        else:
            old = get(base, path)
            if (isinstance(old, list) and isinstance(v, list) and len(v) == len(old) + 1 and same_json(v[:-1], old)
                    and rng.random() < 0.5):
                ops.append({"op": "add", "path": pointer(path) + "/-", "value": v[-1]})
            else:
                ops.append({"op": "replace", "path": pointer(path), "value": v})
    r = rng.random()
    if r < 0.15:
        path, v = testable_leaf(rng, base)
        if r < 0.05:
            v = rng.choice(["x", 0, None, [v]])
        notes.append("test %s = %s" % (pointer(path), json.dumps(v)[:40]))
        ops.insert(0, {"op": "test", "path": pointer(path), "value": v})
    elif r < 0.22:
        op = rng.choice(BAD_OPS)
        notes.append("bad op " + json.dumps(op))
        ops.append(op)
    return ops


MALFORMED = [("invalid JSON", '{"metadata": {"labels": '), ("not JSON", "labels: {team: ml}"), ("empty body", ""),
             ("a list", "[]"), ("a string", '"x"'), ("null", "null"), ("a number", "1"),
             ("an object", '{"op": "add", "path": "/metadata/labels/team", "value": "ml"}')]


def malformed(rng, ptype, notes):
    """A patch clients get wrong: not JSON, JSON of the wrong shape, or one renaming the object."""
    if rng.random() < 0.35:
        notes.append("rename")
        return json.dumps([{"op": "replace", "path": "/metadata/name", "value": "fuzzu-renamed"}] if ptype == "json"
                          else {"metadata": {"name": "fuzzu-renamed"}})
    what, body = rng.choice(MALFORMED)
    notes.append("malformed: " + what)
    return body


def patch_cases(seed, count, kinds, add_fields, real_bases):
    """The updates' changes (update_cases', the same for a seed) as patches: each case's patch type
    and the choices of its patch drawn from an rng of its own (seed, case), so that update_cases'
    rng, and the updates of a seed, stay what they are. A custom resource's patch is rarely a
    strategic one (refused: 415)."""
    for case, change_edits in update_cases(seed, count, kinds, add_fields, real_bases):
        rng = random.Random("patch %d %d" % (seed, case["id"]))
        kind, base, notes = case["kind"], real_bases[case["kind"]], []
        ptype = rng.choice(["merge", "json"] * 5 + ["strategic"] if kind in CRDS else list(PATCH_TYPES))
        if rng.random() < 0.06:
            body = malformed(rng, ptype, notes)
        elif ptype == "merge":
            body = json.dumps(merge_patch(base, change_edits))
        elif ptype == "strategic":
            body = json.dumps(strategic_patch(rng, kind, base, apply_edits(copy.deepcopy(base), change_edits), notes))
        else:
            body = json.dumps(json_patch(rng, base, change_edits, notes))
        yield dict(case, changes=case["changes"] + notes, type=ptype, patch=body)


# FIDELITY.md difference 12: the patched object a patch's decoding error quotes (`patch: Invalid
# value: "{...}": json: cannot unmarshal ...`, a time or base64 that does not parse) is printed by
# Kubernetes in Go's struct field order, its patched levels with sorted keys, and by the embedded
# server in its stored order; besides, it holds the version, times and status of each server's own
# object. As fidelity.py does, the object is left out.
PATCHED_OBJECT = re.compile(r'(patch: Invalid value: |^Invalid value: )"\{(?:[^"\\]|\\.)*"')


def comparable_patch(a):
    """A patch's answer as comparable_update has it, without the patched object its decoding
    error quotes (PATCHED_OBJECT)."""
    a = comparable_update(a)
    b = a["body"]
    if isinstance(b, dict) and b.get("kind") == "Status":
        b["message"] = PATCHED_OBJECT.sub(r'\1"<patched object>"', b.get("message", ""))
        for c in b.get("details", {}).get("causes", []):
            if c.get("field") == "patch":
                c["message"] = PATCHED_OBJECT.sub(r'\1"<patched object>"', c.get("message", ""))
    return a


def patch_answer(server, case):
    """A server's answer, comparable, to the case's PATCH (dry run) of its stored fuzzu-<kind>;
    None when the server closed the connection instead of answering (kube-apiserver v1.32 panics
    on a strategic merge key whose value is a list or a map, `hash of unhashable type`: its panic
    recovery drops the connection; the embedded server answers, so such cases are not compared)."""
    path = collection(case["kind"], server.namespace) + "/fuzzu-" + case["kind"] + "?dryRun=All"
    try:
        return comparable_patch(answer(server, {"kind": case["kind"], "body": case["patch"]}, "PATCH", path,
                                       PATCH_TYPES[case["type"]]))
    except http.client.RemoteDisconnected:
        server.conn = None
        return None


def show_patch_diff(case, want, got):
    show_diff(case, want, got)
    print("  %s patch: %s" % (case["type"], case["patch"][:400]))


def live_patches(o):
    """PATCHes (dry runs) of each server's own stored object: the updates' changes, the patches
    made on the real server's object (they name list items by merge key, not by uid)."""
    real, other = Server(o.oracle, o.namespace), Server(o.embedded, o.namespace)
    real.ensure_namespace()
    other.ensure_namespace()
    kinds = update_kinds(o)
    bases = {k: stored_base(real, k) for k in kinds}
    for k in kinds:
        stored_base(other, k)
    tried, differ, dropped = {}, {}, 0
    for case in patch_cases(o.seed, o.cases, kinds, o.add_fields, bases):
        for key in (case["kind"], case["type"]):
            tried[key] = tried.get(key, 0) + 1
        want = patch_answer(real, case)
        if want is None:
            dropped += 1
            continue
        got = patch_answer(other, case)
        if not same(want, got, case["kind"]):
            for key in (case["kind"], case["type"]):
                differ[key] = differ.get(key, 0) + 1
            show_patch_diff(case, want, got)
    counts = lambda keys: ", ".join("%s %d/%d" % (k, differ.get(k, 0), tried[k]) for k in keys if k in tried)
    print("%d patches, %d differ (%s; %s)%s" % (o.cases, sum(differ.get(k, 0) for k in kinds), counts(kinds),
                                              counts(PATCH_TYPES),
                                              "; the real server dropped %d, not compared" % dropped if dropped else ""))
    return 1 if differ else 0


def record_patches(o):
    """golden/fuzz_patches.jsonl: the generated patches with the real server's answers."""
    real = Server(o.oracle)
    real.ensure_namespace()
    kinds = update_kinds(o)
    bases = {k: stored_base(real, k) for k in kinds}
    with open(PATCHES_GOLDEN, "a" if o.append else "w") as f:
        for case in patch_cases(o.seed, o.cases, kinds, o.add_fields, bases):
            want = patch_answer(real, case)
            if want is not None:  # (a dropped connection is no answer to record)
                f.write(json.dumps(dict(case, answer=want), sort_keys=True) + "\n")
    print("recorded %d patches in %s%s" % (o.cases, PATCHES_GOLDEN, " (appended)" if o.append else ""))
    return 0


def check_patches(server, refresh=False):
    """Replays golden/fuzz_patches.jsonl: the recorded patches sent as dry runs."""
    return replay(PATCHES_GOLDEN, server, lambda srv, _, case: (patch_answer(srv, case), case), same, show_patch_diff,
                  refresh)

# ---- deletes: a DELETE (dry run) of a stored object, with the options clients send ----------------

DELETES_GOLDEN = os.path.join(HERE, "golden", "fuzz_deletes.jsonl")

# kube-apiserver reads a DELETE's options from its body when it has one, and then ignores the query
# (its dryRun too: a body without dryRun deletes for real). So every body carries dryRun ["All"]
# unless its dryRun is one the server refuses; a request without a body has dryRun in its query,
# All or a value refused. The other query parameters go along with bodies too, to see them ignored.
DELETE_QUERY = [("gracePeriodSeconds", ["0", "30", "-1", "x"]),
                ("propagationPolicy", ["Orphan", "Background", "Foreground", "orphan", "Bad", ""]),
                ("orphanDependents", ["true", "false", "x"])]
QUERY_DRY_RUNS = [["All"]] * 8 + [["bad"], ["All", "bad"]]
BODY_DRY_RUNS = [["All"]] * 8 + [["All", "All"], ["bad"], "All"]  # ("All": not a list, refused)
BODY_HEADS = [{"kind": "DeleteOptions", "apiVersion": "v1"}] * 10 + [
    {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}, {},  # (the DeleteOptions of the default)
    {"kind": "DeleteOptions", "apiVersion": "batch/v1"},  # a group's own (old clients')
    {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v2"}, {"kind": "DeleteOption", "apiVersion": "v1"},
    {"kind": "Pod", "apiVersion": "v1"}, {"kind": "ListOptions", "apiVersion": "meta.k8s.io/v1"}]  # not options
# $UID and $RV stand for the stored object's, read from each server just before the request.
BODY_FIELDS = [
    ("preconditions", [{"uid": "$UID"}, {"resourceVersion": "$RV"}, {"uid": "$UID", "resourceVersion": "$RV"},
                       {"uid": "6f1e3c2a-0b7d-4c59-9a3e-2d1f5b8c7e40"}, {"resourceVersion": "1"},
                       {"uid": "$UID", "resourceVersion": "1"}, {"uid": ""}, {"resourceVersion": "abc"}, {},
                       {"uid": 5}, {"name": "x"}, "x"]),
    ("gracePeriodSeconds", [0, 30, -1, 1, "30", None, 1.5]),
    ("propagationPolicy", ["Orphan", "Background", "Foreground", "orphan", "Bad", "", None, 1]),
    ("orphanDependents", [True, False, None, "true"]),
    ("ignoreStoreReadErrorWithClusterBreakingPotential", [False, True]),  # (its feature gate off in v1.32)
    ("force", [True]), ("metadata", [{"name": "x"}]),  # unknown fields
]
# (Not "null": kube-apiserver takes it for options without dryRun and deletes.)
MALFORMED_BODIES = ['{"kind": "DeleteOptions", "dryRun": ["All"]', 'dryRun: [All]', '[]', '"x"', "{}x"]
SELECTORS = [[("labelSelector", "fuzz-none=1")],  # nothing
             [("fieldSelector", "metadata.name=fuzzu-$KIND")],  # the fuzz object alone
             [("labelSelector", "$LABEL"), ("fieldSelector", "metadata.name=fuzzu-$KIND")],  # (and a label of it)
             [("labelSelector", "a b")]]  # (not a selector)


def delete_options(rng, notes):
    """A DELETE's options: (query pairs, body text or None), described in notes."""
    query = [(k, rng.choice(vs)) for k, vs in DELETE_QUERY if rng.random() < 0.25]
    if rng.random() < 0.1:  # both ways of saying what to do with the dependents: refused together
        query = [q for q in query if q[0] not in ("propagationPolicy", "orphanDependents")] + [
            ("orphanDependents", rng.choice(["true", "false"])),
            ("propagationPolicy", rng.choice(["Orphan", "Background", "Foreground"]))]
    body = None
    if rng.random() < 0.5:
        if rng.random() < 0.08:
            body = rng.choice(MALFORMED_BODIES)
        else:
            opts = dict(rng.choice(BODY_HEADS))
            for k, vs in BODY_FIELDS:
                if rng.random() < 0.25:
                    opts[k] = rng.choice(vs)
            opts["dryRun"] = rng.choice(BODY_DRY_RUNS)
            body = json.dumps(opts)
        notes.append("body " + body)
        if rng.random() < 0.5:
            query.append(("dryRun", "All"))
    else:
        query += [("dryRun", v) for v in rng.choice(QUERY_DRY_RUNS)]
    return query, body


def delete_cases(seed, count, kinds):
    """The generated deletes: a DELETE of the kind's stored fuzzu-<kind> (mostly), of a name not
    there, or a deletecollection of the kind's collection selecting nothing or the fuzz object
    alone; an rng of its own (the other modes' cases stay what they are)."""
    rng = random.Random("delete %d" % seed)
    for i in range(count):
        kind, notes = rng.choice(kinds), []
        target = rng.choice(["object"] * 8 + ["missing", "collection", "collection"])
        query, body = delete_options(rng, notes)
        if target == "collection":
            query = rng.choice(SELECTORS) + query
        name = {"object": "/fuzzu-" + kind, "missing": "/fuzzu-missing", "collection": ""}[target]
        yield {"id": i, "kind": kind, "name": name, "query": query, "body": body,
               "changes": ["DELETE %s%s?%s" % (kind, name, "&".join("%s=%s" % q for q in query))] + notes}


def stored(server, kind):
    """The stored fuzzu-<kind> of `server`, None when there is none or it is being deleted."""
    status, _, data = server.request("GET", collection(kind, server.namespace) + "/fuzzu-" + kind)
    obj = json.loads(data) if status == 200 else None
    return None if obj is None or "deletionTimestamp" in obj["metadata"] else obj


RECORD_VERSION = re.compile(r"(the ResourceVersion in record \()\d+")


def comparable_delete(a):
    """A delete's answer as comparable_update has it, without what differs by design: the time an
    object (or a collection's item) is marked deleted at, the statuses the controllers wrote in a
    deleted collection's items, and the server's own resourceVersion a failed precondition quotes."""
    a = comparable_update(a)
    b = a["body"]
    if not isinstance(b, dict):
        return a
    for item in [b] + (b.get("items") if isinstance(b.get("items"), list) else []):
        if isinstance(item.get("metadata"), dict) and "deletionTimestamp" in item["metadata"]:
            item["metadata"]["deletionTimestamp"] = "<deletionTimestamp>"
        if item is not b:
            item.pop("status", None)
    if b.get("kind") == "Status":
        b["message"] = RECORD_VERSION.sub(r"\1<resourceVersion>", b.get("message", ""))
    return a


def delete_answer(server, case):
    """A server's answer, comparable, to the case's DELETE (query and body with the stored object's
    uid, resourceVersion, name and a label in place of $UID, $RV, $KIND and $LABEL), and whether
    the object is still stored after it: if not, it is created again (stored_base) for the next
    cases. A resourceVersion precondition that failed because a controller wrote the object between
    the read and the DELETE is tried again."""
    for _ in range(3):
        obj = stored(server, case["kind"]) or stored_base(server, case["kind"])
        md = obj["metadata"]
        label = "%s=%s" % next(iter(md["labels"].items())) if md.get("labels") else "fuzz-none!=1"  # (all have)
        fill = lambda s: (s.replace("$UID", md["uid"]).replace("$RV", md["resourceVersion"])
                          .replace("$KIND", case["kind"]).replace("$LABEL", label))
        query = urllib.parse.urlencode([(k, fill(v)) for k, v in case["query"]])
        path = collection(case["kind"], server.namespace) + case["name"] + "?" + query
        a = answer(server, {"kind": case["kind"], "body": fill(case["body"] or "")}, "DELETE", path)
        after = stored(server, case["kind"])
        raced = a["status"] == 409 and "$RV" in (case["body"] or "") and after is not None and (
            after["metadata"]["resourceVersion"] != md["resourceVersion"])
        if not raced:
            break
    a["stored after"] = after is not None
    if after is None:
        stored_base(server, case["kind"])
    return comparable_delete(a)


def same_delete(want, got, kind):
    return same(want, got, kind) and want["stored after"] == got["stored after"]


def show_delete_diff(case, want, got):
    show_diff(dict(case, body=case["body"] or ""), want, got)
    if want["stored after"] != got["stored after"]:
        print("  stored after: real %s, this server %s" % (want["stored after"], got["stored after"]))


def live_deletes(o):
    """DELETEs (dry runs) of each server's own stored object, compared now."""
    real, other = Server(o.oracle, o.namespace), Server(o.embedded, o.namespace)
    real.ensure_namespace()
    other.ensure_namespace()
    kinds = update_kinds(o)
    for k in kinds:
        stored_base(real, k)
        stored_base(other, k)
    tried, differ = dict.fromkeys(kinds, 0), dict.fromkeys(kinds, 0)
    for case in delete_cases(o.seed, o.cases, kinds):
        tried[case["kind"]] += 1
        want, got = delete_answer(real, case), delete_answer(other, case)
        if not same_delete(want, got, case["kind"]):
            differ[case["kind"]] += 1
            show_delete_diff(case, want, got)
    print("%d deletes, %d differ (%s)" % (o.cases, sum(differ.values()),
                                        ", ".join("%s %d/%d" % (k, differ[k], tried[k]) for k in kinds)))
    return 1 if any(differ.values()) else 0


def record_deletes(o):
    """golden/fuzz_deletes.jsonl: the generated deletes with the real server's answers."""
    real = Server(o.oracle)
    real.ensure_namespace()
    kinds = update_kinds(o)
    for k in kinds:
        stored_base(real, k)
    with open(DELETES_GOLDEN, "a" if o.append else "w") as f:
        for case in delete_cases(o.seed, o.cases, kinds):
            f.write(json.dumps(dict(case, answer=delete_answer(real, case)), sort_keys=True) + "\n")
    print("recorded %d deletes in %s%s" % (o.cases, DELETES_GOLDEN, " (appended)" if o.append else ""))
    return 0


def check_deletes(server, refresh=False):
    """Replays golden/fuzz_deletes.jsonl: the recorded deletes sent."""
    return replay(DELETES_GOLDEN, server, lambda srv, _, case: (delete_answer(srv, case), case), same_delete,
                  show_delete_diff, refresh)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    live = sub.add_parser("live", help="compare a real server with another now")
    live.add_argument("oracle")
    live.add_argument("embedded")
    upd = sub.add_parser("updates", help="compare a real server with another now, on PUTs of stored objects")
    upd.add_argument("oracle")
    upd.add_argument("embedded")
    rec = sub.add_parser("record", help="write the golden file from a REAL server")
    rec.add_argument("oracle")
    recu = sub.add_parser("record-updates", help="write the updates' golden file from a REAL server")
    recu.add_argument("oracle")
    pat = sub.add_parser("patches", help="compare a real server with another now, on PATCHes of stored objects")
    pat.add_argument("oracle")
    pat.add_argument("embedded")
    recp = sub.add_parser("record-patches", help="write the patches' golden file from a REAL server")
    recp.add_argument("oracle")
    dele = sub.add_parser("deletes", help="compare a real server with another now, on DELETEs of stored objects")
    dele.add_argument("oracle")
    dele.add_argument("embedded")
    recd = sub.add_parser("record-deletes", help="write the deletes' golden file from a REAL server")
    recd.add_argument("oracle")
    for p in (rec, recu, recp, recd):
        p.add_argument("--append", action="store_true",
                       help="add the cases to the golden file instead of replacing it (another seed, --add-fields)")
    for p in (live, rec, upd, recu, pat, recp, dele, recd):
        p.add_argument("--seed", type=int, default=18)
        p.add_argument("--cases", type=int, default=400)
        p.add_argument("--add-fields", action="store_true",
                       help="also set fields the base objects leave out, from the kinds' schemas")
        p.add_argument("--kinds", help="comma-separated subset of " + ",".join(KINDS) + (
            " or all (default: %s; all adds %s)" % (",".join(UPDATE_KINDS), ",".join(UPDATE_ALL[len(UPDATE_KINDS):]))
            if p in (upd, recu, pat, recp, dele, recd) else " (default: the six built-in kinds)"))
    for p in (live, upd, pat, dele):  # (not record: the golden answers name the suite's namespace)
        p.add_argument("--namespace", default=NAMESPACE,
                       help="namespace of the cases (default %s), so that two runs against one server do not meet"
                       % NAMESPACE)
    chk = sub.add_parser("check", help="replay the golden file against a server")
    g = chk.add_mutually_exclusive_group(required=True)
    g.add_argument("--kubeconfig")
    g.add_argument("--serve", metavar="GPUPOOL")
    chk.add_argument("--refresh", action="store_true",
                     help="with --kubeconfig of a REAL server: write the golden files again with its answers "
                          "(the same cases; after a change of the real server's configuration)")
    o = ap.parse_args()
    if getattr(o, "refresh", False) and not o.kubeconfig:
        ap.error("--refresh: only with --kubeconfig of a real server")
    stored = ("updates", "record-updates", "patches", "record-patches", "deletes", "record-deletes")
    if getattr(o, "kinds", None) and not (o.mode in stored and o.kinds == "all"
                                          or set(o.kinds.split(",")) <= set(KINDS)):
        ap.error("--kinds: known kinds are " + ",".join(KINDS) + " (and, for updates, patches and deletes, all)")

    if o.mode == "updates":
        return live_updates(o)
    if o.mode == "record-updates":
        return record_updates(o)
    if o.mode == "patches":
        return live_patches(o)
    if o.mode == "record-patches":
        return record_patches(o)
    if o.mode == "deletes":
        return live_deletes(o)
    if o.mode == "record-deletes":
        return record_deletes(o)
    if o.mode == "record":
        server = Server(o.oracle)
        server.ensure_namespace()
        with open(GOLDEN, "a" if o.append else "w") as f:
            for case in generate(o.seed, o.cases, o.add_fields, o.kinds.split(",") if o.kinds else None):
                f.write(json.dumps(dict(case, answer=answer(server, case)), sort_keys=True) + "\n")
        print("recorded %d cases in %s%s" % (o.cases, GOLDEN, " (appended)" if o.append else ""))
        return 0
    if o.mode == "live":
        real, other = Server(o.oracle, o.namespace), Server(o.embedded, o.namespace)
        real.ensure_namespace()
        other.ensure_namespace()
        pairs = [(c, answer(real, c)) for c in generate(o.seed, o.cases, o.add_fields, o.kinds.split(",") if o.kinds else None)]
    else:
        pairs = [(c, c.pop("answer")) for c in map(json.loads, open(GOLDEN))]
    with tempfile.TemporaryDirectory() as tmp:
        proc = None
        if o.mode == "check" and o.serve:
            proc, kc = serve(o.serve, tmp)
            other = Server(kc)
            other.ensure_namespace()
        elif o.mode == "check":
            other = Server(o.kubeconfig)
            other.ensure_namespace()
        try:
            differ = 0
            refresh = getattr(o, "refresh", False)
            for n, (case, want) in enumerate(pairs):
                got = answer(other, case)
                if not same(want, got, case["kind"]):
                    differ += 1
                    show_diff(case, want, got)
                    if refresh:
                        pairs[n] = (case, got)
            if refresh:
                with open(GOLDEN, "w") as f:
                    for case, want in pairs:
                        f.write(json.dumps(dict(case, answer=want), sort_keys=True) + "\n")
            updates, updates_differ = check_updates(other, refresh) if o.mode == "check" else (0, 0)
            patches, patches_differ = check_patches(other, refresh) if o.mode == "check" else (0, 0)
            deletes, deletes_differ = check_deletes(other, refresh) if o.mode == "check" else (0, 0)
        finally:
            if proc:
                proc.terminate()
                proc.wait()
    accepted = sum(1 for _, w in pairs if w["status"] == 201)
    print("%d cases (%d accepted by the real server), %d differ" % (len(pairs), accepted, differ))
    if o.mode == "check":
        print("%d updates, %d differ" % (updates, updates_differ))
        print("%d patches, %d differ" % (patches, patches_differ))
        print("%d deletes, %d differ" % (deletes, deletes_differ))
    return 1 if differ or updates_differ or patches_differ or deletes_differ else 0


if __name__ == "__main__":
    sys.exit(main())
