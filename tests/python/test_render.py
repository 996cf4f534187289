"""Workloads, Arena-style options, rendering with a site profile, and manifest text both ways."""
import json
import os

import pytest

import gpupool
from conftest import SEED_COMMAND, SEED_IMAGE, seed_job


def test_to_workload_from_options():
    w = gpupool.to_workload(**seed_job(tolerations=["ssd_node", "gpu_node"], data=["data:/data:ro"], env=["A=1"]))
    assert w.kind == "MPIJob"
    assert w.name == "mpi-dist"
    assert w.resources.gpus == 1
    assert w.shell == SEED_COMMAND
    assert [t.key for t in w.tolerations] == ["ssd_node", "gpu_node"]
    assert [(e.name, e.value) for e in w.env] == [("A", "1")]
    assert any(m.mount_path == "/data" and m.read_only for m in w.mounts)
    # The same through a SubmitOptions value.
    options = gpupool.SubmitOptions(**seed_job())
    assert options.to_workload().tolerations == gpupool.to_workload(options).tolerations
    with pytest.raises(TypeError):
        gpupool.to_workload(options, name="x")


def test_workload_by_keywords():
    w = gpupool.Workload(name="train", kind="pytorch", image="ubuntu-pytorch:1.5.0",
                         command=["python", "train.py"], resources=gpupool.Resources(gpus=2, memory_request="16Gi"),
                         replicas=gpupool.Replicas(workers=3), tolerations=[gpupool.Toleration.parse("all")],
                         ssd=True, nfs=True, shm_size="8Gi", restart_policy="OnFailure",
                         env=[gpupool.EnvVar("SECRET_TOKEN", "hunter2")])
    assert w.kind == "PyTorchJob" and w.restart_policy == "OnFailure"
    assert w.derived_replica_names()[0] == "train-master-0"
    assert "hunter2" not in repr(w) and "hunter2" not in repr(w.env)
    w.validate()
    w.restart_policy = None
    assert w.restart_policy is None
    assert w.mpi_api == gpupool.MpiJobApi.Auto  # what the cluster serves, unless set
    w.mpi_api = "V2Beta1"
    assert w.mpi_api == gpupool.MpiJobApi.V2Beta1
    assert gpupool.to_workload(kind="mpi", name="m", image="busybox", mpi_api="v1").mpi_api == gpupool.MpiJobApi.V1


def _containers(obj):
    found = []

    def walk(x):
        if isinstance(x, dict):
            if "containers" in x:
                found.extend(x["containers"])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(obj)
    return found


def test_render_seed_job():
    w = gpupool.to_workload(**seed_job())
    sub = gpupool.render(w, profile="generic")
    obj = sub.workload()
    assert (obj["apiVersion"], obj["kind"], obj["metadata"]["name"]) == ("kubeflow.org/v1", "MPIJob", "mpi-dist")
    assert obj["metadata"]["labels"]["gpupool.io/job-name"] == "mpi-dist"
    launcher = obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    assert {"key": "ssd_node", "operator": "Exists"} in launcher["tolerations"]
    images = {c["image"] for c in _containers(obj)}
    assert images == {SEED_IMAGE}
    worker = obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == 1 or worker["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert len(sub) == 1 and "MPIJob/mpi-dist" in repr(sub)


def test_render_profile_object_and_iiis_conventions():
    iiis = gpupool.Profile.builtin("iiis")
    w = gpupool.to_workload(kind="deployment", name="train", image="ubuntu-pytorch:1.5.0", gpus=1, ssd=True)
    obj = gpupool.render(w, profile=iiis).workload()
    text = json.dumps(obj)
    assert iiis.gpu.resource in text
    assert iiis.catalog.prefix + "/ubuntu-pytorch:1.5.0" in text
    for ssd in iiis.local_ssds:
        assert ssd.mount_path in text
    assert gpupool.render(w, profile="iiis").objects == gpupool.render(w, profile=iiis).objects
    with pytest.raises(gpupool.ValidationError):
        gpupool.render(w, profile="generic")  # ssd=True without local SSDs in the profile


def test_runtime_class_keyword_reaches_every_pod():
    w = gpupool.to_workload(**seed_job(runtime_class="nvidia"))
    assert w.runtime_class_name == "nvidia"
    specs = gpupool.render(w, profile="generic").workload()["spec"]["mpiReplicaSpecs"]
    assert {r: specs[r]["template"]["spec"]["runtimeClassName"] for r in specs} == {
        "Launcher": "nvidia", "Worker": "nvidia"}
    # The profile's GPU runtime class, for GPU workloads only; the keyword wins.
    profile = gpupool.Profile.builtin("generic")
    profile.gpu.runtime_class = "nvidia"
    assert "runtime_class='nvidia'" in repr(profile.gpu)
    gpu = gpupool.to_workload(kind="job", name="g", image="busybox", gpus=1)
    assert gpupool.render(gpu, profile=profile).workload()["spec"]["template"]["spec"]["runtimeClassName"] == "nvidia"
    cpu = gpupool.to_workload(kind="job", name="c", image="busybox")
    assert "runtimeClassName" not in gpupool.render(cpu, profile=profile).workload()["spec"]["template"]["spec"]
    own = gpupool.to_workload(kind="job", name="o", image="busybox", gpus=1, runtime_class="kata")
    assert gpupool.render(own, profile=profile).workload()["spec"]["template"]["spec"]["runtimeClassName"] == "kata"
    with pytest.raises(gpupool.ValidationError, match="runtimeClassName"):
        gpupool.render(gpupool.to_workload(kind="job", name="b", image="busybox", runtime_class="Bad_Name"),
                       profile="generic")


def test_yaml_and_json_round_trip():
    w = gpupool.to_workload(**seed_job(pvc_create=["data:nfs:10Gi:/data"]))
    sub = gpupool.render(w, profile="iiis")
    assert [o["kind"] for o in sub.objects] == ["PersistentVolumeClaim", "MPIJob"]
    yaml_text = sub.to_yaml()
    assert yaml_text.count("---") >= 1
    assert gpupool.parse_manifests(yaml_text) == sub.objects
    assert gpupool.parse_manifests(sub.to_json()) == sub.objects
    assert json.loads(sub.to_json())["kind"] == "List"
    assert gpupool.to_yaml(sub.objects) == yaml_text
    assert gpupool.parse_manifests(gpupool.to_yaml(sub.objects[0])) == [sub.objects[0]]


def test_manifests_keep_unknown_fields_and_types():
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {port: \"10000\", on: \"true\"}\nx-extra: [1, 2.5, null, true]\n"
    [obj] = gpupool.parse_manifests(text)
    assert obj["data"] == {"port": "10000", "on": "true"}
    assert obj["x-extra"] == [1, 2.5, None, True]
    assert gpupool.parse_manifests(gpupool.to_yaml(obj)) == [obj]
    with pytest.raises(TypeError):
        gpupool.to_yaml({"bad": object()})


def test_html_reprs_show_yaml():
    w = gpupool.to_workload(**seed_job(name="a<b>"[0:1] + "-x"))
    html = w._repr_html_()
    assert html.startswith("<pre>") and "kind: MPIJob" in html
    sub = gpupool.render(w)
    assert sub._repr_html_() == html
    bad = gpupool.Workload(name="Bad_Name", kind="job", image="ubuntu")
    assert "invalid workload" in bad._repr_html_() and "Bad_Name" in bad._repr_html_()


def test_profiles():
    assert gpupool.Profile.builtin_names() == sorted(gpupool.Profile.builtin_names())
    assert {"generic", "iiis"} <= set(gpupool.Profile.builtin_names())
    iiis = gpupool.Profile.builtin("iiis")
    assert iiis.storage_class("nfs") != "nfs"
    assert iiis.storage_class("my-class") == "my-class"
    assert iiis == gpupool.Profile.builtin("iiis") and iiis != gpupool.Profile.builtin("generic")
    # A file path is taken wherever a profile name is (one rule: Profile.resolve).
    lab = os.path.join(os.path.dirname(__file__), "..", "model", "data", "lab-profile.yaml")
    assert gpupool.Profile.resolve(lab).name == "lab"
    w = gpupool.Workload(name="train", kind="job", image="torch:2.2")
    assert gpupool.render(w, profile=lab).workload()["metadata"]["namespace"] == "ml"
