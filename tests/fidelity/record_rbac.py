#!/usr/bin/env python3
"""Records the RBAC objects kube-apiserver bootstraps (its storage_rbac post-start hook:
plugin/pkg/auth/authorizer/rbac/bootstrappolicy, the objects labelled
kubernetes.io/bootstrapping=rbac-defaults) from a REAL control plane (../shared/oracle) into
data/rbac/bootstrap.json, which the embedded server creates at start-up.

  record_rbac.py --kubeconfig ~/.cache/k8s-oracle/kubeconfig

Kept per object: kind, namespace, name, labels, annotations, rules, aggregationRule, roleRef,
subjects (as the oracle stores them: the aggregated roles' rules as its aggregation controller
filled them). Left out: the oracle's OpenShift additions (its fork's system:openshift:* role and
binding, and the service-ca publisher's), which upstream Kubernetes does not create.
"""
import argparse
import json
import os
import subprocess

KINDS = [("clusterroles", "ClusterRole"), ("clusterrolebindings", "ClusterRoleBinding"),
         ("roles", "Role"), ("rolebindings", "RoleBinding")]


def openshift(name):
    return "openshift" in name or "service-ca-cert-publisher" in name


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "data", "rbac",
                                                  "bootstrap.json"))
    o = ap.parse_args()
    out = []
    for resource, kind in KINDS:
        doc = json.loads(subprocess.run(
            ["kubectl", "--kubeconfig", o.kubeconfig, "get", resource, "-A", "-o", "json",
             "-l", "kubernetes.io/bootstrapping=rbac-defaults"],
            check=True, capture_output=True, text=True).stdout)
        items = sorted(doc["items"], key=lambda x: (x["metadata"].get("namespace", ""), x["metadata"]["name"]))
        for item in items:
            md = item["metadata"]
            if openshift(md["name"]) or openshift(item.get("roleRef", {}).get("name", "")):
                continue
            obj = {"kind": kind, "metadata": {k: md[k] for k in ("namespace", "name", "labels", "annotations")
                                              if k in md}}
            for k in ("aggregationRule", "rules", "roleRef", "subjects"):
                if k in item:
                    obj[k] = item[k]
            out.append(obj)
    with open(o.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print("recorded %d objects in %s" % (len(out), os.path.abspath(o.out)))


if __name__ == "__main__":
    main()
