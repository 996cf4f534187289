#!/usr/bin/env python3
"""Records the OpenAPI v3 schemas of the built-in kinds the embedded server serves, from a REAL
control plane (../shared/oracle), into data/openapi/<group>_<version>.json (compiled into the library).

  record_openapi.py --kubeconfig ~/.cache/k8s-oracle/kubeconfig

Each file holds `components.schemas` of one group version, cut to what the served kinds reach
(their own schemas and every $ref from them). The embedded server decodes request bodies by these
schemas (field types, unknown fields) and serves them at /openapi/v3 for `kubectl explain`.
"""
import argparse
import json
import os
import subprocess

# group/version -> kinds the embedded server stores (libgpupool/embedded/validation.cpp builtin_types)
SERVED = {
    "api/v1": ["Namespace", "Node", "Pod", "Service", "PersistentVolumeClaim", "PersistentVolume", "ResourceQuota",
               "Event", "ConfigMap", "Secret", "ServiceAccount", "Endpoints", "LimitRange", "Binding", "PodTemplate"],
    "apis/apps/v1": ["Deployment", "ReplicaSet", "DaemonSet", "ControllerRevision", "StatefulSet"],
    "apis/batch/v1": ["Job", "CronJob"],
    "apis/storage.k8s.io/v1": ["StorageClass", "CSIDriver"],
    "apis/events.k8s.io/v1": ["Event"],
    "apis/scheduling.k8s.io/v1": ["PriorityClass"],
    "apis/policy/v1": ["PodDisruptionBudget"],
    "apis/rbac.authorization.k8s.io/v1": ["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"],
    "apis/authorization.k8s.io/v1": ["SelfSubjectAccessReview", "SelfSubjectRulesReview", "SubjectAccessReview"],
    "apis/authentication.k8s.io/v1": ["SelfSubjectReview"],
    "apis/apiextensions.k8s.io/v1": ["CustomResourceDefinition"],
    "apis/discovery.k8s.io/v1": ["EndpointSlice"],
    "apis/coordination.k8s.io/v1": ["Lease"],
    "apis/node.k8s.io/v1": ["RuntimeClass"],
    "apis/networking.k8s.io/v1": ["NetworkPolicy", "Ingress", "IngressClass"],
}
REF = "#/components/schemas/"


def refs(node, out):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith(REF):
            out.add(r[len(REF):])
        for v in node.values():
            refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "data", "openapi"))
    o = ap.parse_args()
    for gv, kinds in SERVED.items():
        doc = json.loads(subprocess.run(["kubectl", "--kubeconfig", o.kubeconfig, "get", "--raw", "/openapi/v3/" + gv],
                                        check=True, capture_output=True, text=True).stdout)
        schemas = doc["components"]["schemas"]
        group, version = (gv.split("/")[1:] if gv.startswith("apis/") else ["", "v1"])
        roots = [name for name, s in schemas.items()
                 if any(g.get("group", "") == group and g.get("version") == version and g.get("kind") in kinds
                        for g in s.get("x-kubernetes-group-version-kind", []))]
        missing = set(kinds) - {g["kind"] for n in roots for g in schemas[n]["x-kubernetes-group-version-kind"]}
        if missing:
            raise SystemExit("record_openapi: %s has no schema for %s" % (gv, ", ".join(sorted(missing))))
        keep, todo = set(), list(roots)
        while todo:
            n = todo.pop()
            if n in keep:
                continue
            keep.add(n)
            found = set()
            refs(schemas[n], found)
            todo.extend(found - keep)
        out = {"components": {"schemas": {n: schemas[n] for n in sorted(keep)}}}
        path = os.path.join(o.out, (group or "core") + "_" + version + ".json")
        with open(path, "w") as f:
            json.dump(out, f, separators=(",", ":"), sort_keys=True)
            f.write("\n")
        print("recorded %s: %d schemas, %d bytes" % (path, len(keep), os.path.getsize(path)))


if __name__ == "__main__":
    main()
