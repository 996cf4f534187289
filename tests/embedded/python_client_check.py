"""Drives the embedded server with the official Kubernetes Python client (python3-kubernetes).

Usage: python_client_check.py KUBECONFIG NAMESPACE
Prints one line per step ("step: result"); the C++ test (server_test.cpp) checks them.
"""
import json
import sys
import threading

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


def main():
    kubeconfig, ns = sys.argv[1], sys.argv[2]
    api_client = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api_client)
    apps = client.AppsV1Api(api_client)

    nodes = core.list_node()
    print("nodes:", ",".join(sorted(n.metadata.name for n in nodes.items)))

    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="py-pod", labels={"app": "py"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="main", image="busybox:1.36")]),
    )
    created = core.create_namespaced_pod(ns, pod)
    print("created:", created.metadata.name, created.metadata.namespace, bool(created.metadata.uid))

    patched = core.patch_namespaced_pod("py-pod", ns, {"metadata": {"labels": {"stage": "patched"}}})
    print("patched:", patched.metadata.labels.get("stage"), patched.metadata.labels.get("app"))

    listed = core.list_namespaced_pod(ns, label_selector="stage=patched")
    print("listed:", ",".join(p.metadata.name for p in listed.items))

    # Watch from the list's resourceVersion; a second thread makes the changes.
    rv = listed.metadata.resource_version

    def change():
        core.create_namespaced_pod(ns, client.V1Pod(
            metadata=client.V1ObjectMeta(name="py-pod-2"),
            spec=client.V1PodSpec(containers=[client.V1Container(name="main", image="busybox:1.36")])))
        core.delete_namespaced_pod("py-pod", ns)

    t = threading.Thread(target=change)
    t.start()
    seen = []
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, ns, resource_version=rv, timeout_seconds=10):
        # The scheduler and kubelet also modify py-pod-2; keep the first event of each kind.
        item = "%s %s" % (ev["type"], ev["object"].metadata.name)
        if item not in seen:
            seen.append(item)
        if item == "DELETED py-pod":
            w.stop()
    t.join()
    print("watched:", ";".join(s for s in seen if not s.startswith("MODIFIED")))

    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="py-deploy"),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels={"app": "py-deploy"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "py-deploy"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="main", image="busybox:1.36")]))))
    apps.create_namespaced_deployment(ns, dep)
    scaled = apps.patch_namespaced_deployment_scale("py-deploy", ns, {"spec": {"replicas": 4}})
    print("scaled:", scaled.spec.replicas)

    # Server-side apply (this client version has no apply helper, so through call_api): an
    # applier, another manager changing its field, a conflict, force.
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py-ssa"}, "data": {"a": "1"}}

    def apply(force=False):
        query = [("fieldManager", "py-applier")] + ([("force", "true")] if force else [])
        return api_client.call_api(
            "/api/v1/namespaces/{namespace}/configmaps/{name}", "PATCH", {"namespace": ns, "name": "py-ssa"}, query,
            {"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"}, body=json.dumps(cm),
            response_type="V1ConfigMap", auth_settings=["BearerToken"], _return_http_data_only=True)

    apply()
    core.patch_namespaced_config_map("py-ssa", ns, {"data": {"a": "2"}}, field_manager="py-editor")
    try:
        apply()
        print("conflict: none")
    except ApiException as e:
        status = json.loads(e.body)
        print("conflict:", e.status, status["reason"], status["details"]["causes"][0]["field"], "|", status["message"])
    forced = apply(force=True)
    print("forced:", forced.data["a"], ",".join(m.manager + "/" + m.operation for m in forced.metadata.managed_fields))

    try:
        core.list_namespaced_pod("default")
        print("forbidden: no")
    except ApiException as e:
        print("forbidden:", e.status, e.reason)

    try:
        core.read_namespaced_pod("missing", ns)
    except ApiException as e:
        print("notfound:", e.status)


if __name__ == "__main__":
    main()
