#!/usr/bin/python3
"""Records the fixtures of tests/model/kube_protobuf_test.cpp from a real kube-apiserver (the oracle
of ../shared/oracle, v1.32.13): the same lists once as application/json and once as
application/vnd.kubernetes.protobuf, so the test can check that the protobuf reader gives what
the JSON gives.

  record.py KUBECONFIG   (the cluster must hold bench_load's objects: bench/bench_load.cpp)

Adds its own objects first (namespace proto-fixture: a PriorityClass, a Deployment whose pods
carry ownerReferences, a pod with a sidecar init container, node affinity with matchFields and
preferred terms, claim and configMap volumes), records, then deletes them.
"""
import base64
import json
import os
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
KC = sys.argv[1]
cfg = yaml.safe_load(open(KC))
cluster = cfg["clusters"][0]["cluster"]
token = cfg["users"][0]["user"]["token"]
ca = tempfile.NamedTemporaryFile(suffix=".crt", delete=False)
ca.write(base64.b64decode(cluster["certificate-authority-data"]))
ca.close()
ctx = ssl.create_default_context(cafile=ca.name)


def get(path, accept):
    req = urllib.request.Request(cluster["server"] + path, headers={"Authorization": "Bearer " + token, "Accept": accept})
    return urllib.request.urlopen(req, context=ctx).read()


def kubectl(*args, stdin=None):
    subprocess.run(["kubectl", "--kubeconfig", KC, *args], input=stdin, text=True, check=True, capture_output=True)


OBJECTS = """
apiVersion: v1
kind: Namespace
metadata: {name: proto-fixture}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: proto-fixture-high}
value: 1000
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: train, namespace: proto-fixture}
spec:
  replicas: 2
  selector: {matchLabels: {app: train}}
  template:
    metadata: {labels: {app: train}}
    spec:
      containers:
      - name: main
        image: busybox
        resources: {requests: {cpu: 250m, memory: 64Mi, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}
      tolerations: [{key: gpu_node, operator: Equal, value: invalid, effect: NoSchedule}]
---
apiVersion: v1
kind: Pod
metadata: {name: sidecar, namespace: proto-fixture, labels: {app: sidecar}}
spec:
  priorityClassName: proto-fixture-high
  nodeName: gpu-node-3
  initContainers:
  - {name: log, image: busybox, restartPolicy: Always, resources: {requests: {cpu: "1", memory: 1Gi}}}
  - {name: setup, image: busybox, resources: {requests: {cpu: "2"}}}
  containers:
  - {name: main, image: busybox, resources: {requests: {cpu: 500m, memory: 2Gi}, limits: {cpu: "1", memory: 2Gi}}}
  nodeSelector: {pool: batch}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: zone, operator: In, values: [a, b]}]
        - matchFields: [{key: metadata.name, operator: In, values: [gpu-node-3]}]
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 5
        preference: {matchExpressions: [{key: ssd, operator: Exists}]}
  tolerations:
  - {operator: Exists}
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 30}
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: data-proto, readOnly: true}}
  - {name: cfg, configMap: {name: cfg}}
"""

kubectl("apply", "-f", "-", stdin=OBJECTS)
try:
    lists = {
        "pods": "/api/v1/namespaces/proto-fixture/pods",
        "bench-pods": "/api/v1/namespaces/user-1/pods?limit=3",
        "bench-pods-5": "/api/v1/namespaces/user-5/pods?limit=2",
        "bench-pods-4": "/api/v1/namespaces/user-4/pods?limit=2",
        "nodes": "/api/v1/nodes?limit=4",
        "nodes-more": "/api/v1/nodes?fieldSelector=metadata.name%3Dgpu-node-97",
    }
    # An error to a request that accepted protobuf: a protobuf Status.
    try:
        get("/api/v1/namespaces/proto-fixture/pods/nope", "application/vnd.kubernetes.protobuf,application/json")
    except urllib.error.HTTPError as e:
        open(os.path.join(HERE, "status-404.pb"), "wb").write(e.read())
    for name, path in lists.items():
        for accept, ext in (("application/json", "json"), ("application/vnd.kubernetes.protobuf", "pb")):
            with open(os.path.join(HERE, f"{name}.{ext}"), "wb") as f:
                f.write(get(path, accept))
finally:
    # The oracle has no kubelets: a bound pod's graceful deletion would wait for one forever.
    kubectl("-n", "proto-fixture", "delete", "pod", "--all", "--force", "--grace-period=0")
    kubectl("delete", "--wait=false", "--ignore-not-found", "-f", "-", stdin=OBJECTS)
