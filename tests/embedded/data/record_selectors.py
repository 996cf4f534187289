#!/usr/bin/python3
"""Records selectors.json: which of a few labelled ConfigMaps each label selector and each field
selector below lists, or the BadRequest message refusing it, from a real kube-apiserver
(../shared/oracle: record_selectors.py ~/.cache/k8s-oracle/kubeconfig > selectors.json). The
embedded server must answer alike (store_test.cpp: its LabelSelector and FieldSelector and the
list handler's field label check)."""
import json
import subprocess
import sys
import urllib.parse

LABEL_SELECTORS = ['n>1', 'n<7', 'n > 1', 'n>x', 'n>1.5', 'n>-1', 'n<10000000000000000000', 'n>1,n<4', 'n>1,n<6', 'n gt 1', 'n>', 'n<', 'n> 1,b', 'n>>1', 'n<=5', 'n>=5', '!n', '!', 'n!', '!n=1', 'a=(b)', 'a in ()', 'a in (,)', 'a in (x,,y)', 'a in (x y)', 'a in x', 'a notin (x)', 'a in (in)', 'in in (in)', 'n,', ',n', 'n,,m', 'n=1=2', 'n==', 'n!=', 'n=', 'n = 5', 'n== 5', 'n in (5, x)', 'n in (5', 'n=5)', '(n)', 'n in ((5))', 'a/b/c', '-n', 'n-', 'UPPER', 'x.y/Z', 'example.com/n=5', 'toolongggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg', 'n=toolongggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg', 'n=a b', 'n==5,!n', 'a in (b),c notin (d),!e', 'n>01', 'n>+1', 'n<9223372036854775807', 'n>9223372036854775808', 'n > 4 ,n<6', 'n!==5', 'n=!5', 'n<>5', 'n=5,', 'n in (a,b,c,a)', 'n>-1.5', 'n in (-a,-b)', 'n in (b,a,b)', 'n notin (5,x)', 'n!=5', 'n>4,n<6', 'n>6', 'n<5', 'n<6,m', '!m,n', 'm<2', 'n in (5,007)', 'n>006', 'n<007', 'n>-10', 'n!= ', 'n=', 'n==', 'n in (,5)']
OBJECTS = {"a1": {"n": "5"}, "a2": {"n": "x"}, "a3": {}, "a4": {"n": "007"}, "a5": {"m": "1", "n": "6"}}
FIELD_SELECTORS = ['metadata.name=a1', 'metadata.name==a1', 'metadata.name!=a1', 'metadata.name', 'metadata.name=a=b', '=a1', 'metadata.name=', ',', 'metadata.name=a1,', ',metadata.name=a1', 'metadata.name=a1,,metadata.namespace=x', 'metadata.name=a\\,1', 'metadata.name=a\\=1', 'metadata.name=a\\\\1', 'metadata.name=a\\1', 'metadata.name=a1\\', 'metadata.name in (a1)', ' metadata.name = a1 ', 'metadata.name!=a1,metadata.namespace=label-selectors', 'metadata.namespace!=label-selectors', 'metadata.name=a1,metadata.name=a2', 'spec.x=1', 'metadata.name>a', 'metadata.name!==a1', 'metadata.name=!a1', 'metadata.name==', '!metadata.name', 'metadata.name=a b', 'metadata.labels=x', 'metadata.name=a1,metadata.name=a\\1', 'b=\\1,a=\\2', 'metadata.name=a\\x', 'metadata.name=\\é', 'metadata.name==a1,x', 'z,metadata.name=a1', 'metadata.name=a2,spec.x=1,a.b=c', 'metadata.name=a\\\\b']
NAMESPACE = "selectors"


def kubectl(kubeconfig, *args, stdin=None):
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig] + list(args), capture_output=True, text=True,
                          input=stdin)


def main():
    kubeconfig = sys.argv[1]
    kubectl(kubeconfig, "create", "namespace", NAMESPACE)
    for name, labels in OBJECTS.items():
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}
        kubectl(kubeconfig, "-n", NAMESPACE, "apply", "-f", "-", stdin=json.dumps(cm)).check_returncode()
    golden = {"objects": OBJECTS}
    for query, selectors in (("labelSelector", LABEL_SELECTORS), ("fieldSelector", FIELD_SELECTORS)):
        cases = golden.setdefault(query, [])
        for s in selectors:
            path = "/api/v1/namespaces/%s/configmaps?%s=%s" % (NAMESPACE, query, urllib.parse.quote(s, safe=""))
            r = kubectl(kubeconfig, "get", "--raw", path)
            if r.returncode == 0:
                items = json.loads(r.stdout)["items"]
                cases.append({"selector": s, "matches": sorted(i["metadata"]["name"] for i in items
                                                               if i["metadata"]["name"] in OBJECTS)})
            else:
                prefix = "Error from server (BadRequest): "
                message = r.stderr.strip()
                if not message.startswith(prefix):
                    sys.exit("unexpected answer to %r: %s" % (s, message))
                cases.append({"selector": s, "error": message[len(prefix):]})
    kubectl(kubeconfig, "delete", "namespace", NAMESPACE, "--wait=false")
    print(json.dumps(golden, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
