"""Bindings of the model layer: values go in, C++ applies the rules, values come out."""
import datetime as dt
import pickle

import pytest

import gpupool


@pytest.mark.parametrize("text, canonical, value, milli", [
    ("1024Mi", "1Gi", 1 << 30, (1 << 30) * 1000),
    ("0.5", "500m", 1, 500),
    ("1000m", "1", 1, 1000),
    ("1e3", "1e3", 1000, 1000000),
    ("1.5", "1500m", 2, 1500),
    ("-0.0005", "-500u", -1, -1),
])
def test_quantity_parse(text, canonical, value, milli):
    q = gpupool.Quantity(text)
    assert str(q) == canonical
    assert q.value() == value
    assert q.milli_value() == milli
    assert repr(q) == f"Quantity('{canonical}')"


def test_quantity_exact_and_arithmetic():
    big = gpupool.Quantity("123456789012345678901234")  # beyond int64, exact
    assert big.nano_value == 123456789012345678901234 * 10**9
    assert gpupool.Quantity("1Gi") == gpupool.Quantity("1024Mi")
    assert gpupool.Quantity("1Gi") + gpupool.Quantity("512Mi") == gpupool.Quantity("1536Mi")
    assert str(gpupool.Quantity("1Gi") - gpupool.Quantity("512Mi")) == "512Mi"
    assert str(gpupool.Quantity("500m") * 4) == "2"
    assert str(3 * gpupool.Quantity("1Gi")) == "3Gi"
    assert str(-gpupool.Quantity("2Gi")) == "-2Gi"
    assert gpupool.Quantity("100m") < gpupool.Quantity("1") <= gpupool.Quantity("1000m")
    assert hash(gpupool.Quantity("1Gi")) == hash(gpupool.Quantity("1024Mi"))
    assert gpupool.Quantity(3) == gpupool.Quantity("3")
    assert not gpupool.Quantity() and gpupool.Quantity("1m")
    assert gpupool.Quantity("1Gi").format == "BinarySI"
    assert pickle.loads(pickle.dumps(gpupool.Quantity("10Gi"))) == gpupool.Quantity("10Gi")
    with pytest.raises(TypeError):
        gpupool.Quantity(1.5)


def test_quantity_implicit_from_str():
    r = gpupool.Resources(cpu_request="4", memory_limit="16Gi", gpus=2)
    assert r.cpu_request == gpupool.Quantity(4)
    assert str(r.memory_limit) == "16Gi"
    assert r.cpu_limit is None


@pytest.mark.parametrize("text, key, op, value, effect", [
    ("ssd_node", "ssd_node", "Exists", "", None),
    ("all", "", "Exists", "", None),
    ("gpu_node=invalid:NoSchedule", "gpu_node", "Equal", "invalid", "NoSchedule"),
    ("gpu_node:NoExecute", "gpu_node", "Exists", "", "NoExecute"),
    ("k=v", "k", "Equal", "v", None),
    ("k=v:NoSchedule,Equal", "k", "Equal", "v", "NoSchedule"),
])
def test_toleration_parse(text, key, op, value, effect):
    t = gpupool.Toleration.parse(text)
    assert (t.key, t.operator.name, t.value, t.effect) == (key, op, value, effect)
    assert t == gpupool.Toleration(key=key, operator=op, value=value, effect=effect)


TAINTS = [gpupool.Taint("gpu_node", "invalid", "NoSchedule"), gpupool.Taint("ssd_node", "invalid", "NoSchedule"),
          gpupool.Taint("soft", "", "PreferNoSchedule")]


@pytest.mark.parametrize("toleration, tolerated", [
    ("ssd_node", [False, True, False]),
    ("all", [True, True, True]),
    ("gpu_node=invalid:NoSchedule", [True, False, False]),
    ("gpu_node=other:NoSchedule", [False, False, False]),
    ("soft:PreferNoSchedule", [False, False, True]),
])
def test_tolerates(toleration, tolerated):
    t = gpupool.Toleration.parse(toleration)
    assert [t.tolerates(x) for x in TAINTS] == tolerated
    assert [gpupool.tolerated(x, [t]) for x in TAINTS] == tolerated


def test_filter_and_score():
    tols = gpupool.parse_tolerations(["ssd_node", "ssd_node"])
    assert len(tols) == 1  # duplicates collapse
    assert gpupool.first_untolerated_filtering_taint(TAINTS, tols) == TAINTS[0]
    assert gpupool.first_untolerated_filtering_taint(TAINTS[1:], tols) is None  # PreferNoSchedule does not filter
    assert gpupool.count_intolerable_prefer_no_schedule(TAINTS, tols) == 1


def test_taint_round_trip_and_changes():
    t = gpupool.Taint.parse("gpu_node=invalid:NoSchedule")
    assert (t.key, t.value, t.effect) == ("gpu_node", "invalid", "NoSchedule")
    assert str(t) == "gpu_node=invalid:NoSchedule"
    assert gpupool.Taint.parse(str(t)) == t
    t.effect = "NoExecute"
    assert str(t) == "gpu_node=invalid:NoExecute"
    with pytest.raises(gpupool.ValidationError):
        t.effect = "Sometimes"
    removal = gpupool.TaintChange.parse("gpu_node-")
    assert removal.remove and not removal.effect_given
    taints = gpupool.apply_taint_changes([], ["a=1:NoSchedule", "b:NoExecute"])
    assert [str(x) for x in taints] == ["a=1:NoSchedule", "b:NoExecute"]
    assert [str(x) for x in gpupool.apply_taint_changes(taints, ["a-"])] == ["b:NoExecute"]
    with pytest.raises(gpupool.ValidationError):
        gpupool.apply_taint_changes(taints, ["zzz-"])
    with pytest.raises(gpupool.ValidationError):
        gpupool.validate_taints([gpupool.Taint("a", "1"), gpupool.Taint("a", "2")])


NODE = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "cn-beijing.192.168.3.230", "creationTimestamp": "2024-01-01T00:00:00Z",
                 "labels": {"kubernetes.io/hostname": "n230", "node-role.kubernetes.io/worker": ""}},
    "spec": {"taints": [{"key": "ssd_node", "value": "invalid", "effect": "NoSchedule"}], "unschedulable": True},
    "status": {"addresses": [{"type": "InternalIP", "address": "192.168.3.230"}],
               "conditions": [{"type": "Ready", "status": "True"}],
               "nodeInfo": {"kubeletVersion": "v1.12.6-aliyun.1"},
               "capacity": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "2"},
               "allocatable": {"cpu": "15800m", "memory": "63Gi", "nvidia.com/gpu": "2"}},
}


def test_node_from_json():
    n = gpupool.Node.from_json(NODE)
    assert n.name == "cn-beijing.192.168.3.230"
    assert n.internal_ip() == "192.168.3.230"
    assert n.roles() == ["worker"]
    assert n.status_column() == "Ready,SchedulingDisabled"
    assert n.taints == [gpupool.Taint("ssd_node", "invalid", "NoSchedule")]
    assert n.allocatable["cpu"] == gpupool.Quantity("15.8")
    assert n.created == dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    assert n.age(dt.datetime(2024, 1, 3, 23, tzinfo=dt.timezone.utc)) == "2d23h"
    assert gpupool.Node.from_json(n.to_json()) == n


def test_node_errors_name_the_field():
    bad = dict(NODE, status=dict(NODE["status"], capacity={"cpu": "lots"}))
    with pytest.raises(gpupool.ValidationError) as info:
        gpupool.Node.from_json(bad)
    assert info.value.field == "status.capacity[cpu]"


@pytest.mark.parametrize("delta, text", [
    (dt.timedelta(seconds=29), "29s"), (dt.timedelta(minutes=5, seconds=10), "5m10s"),
    (dt.timedelta(days=2, hours=23), "2d23h"),
])
def test_human_duration(delta, text):
    assert gpupool.human_duration(delta) == text


def test_image_ref_and_catalog():
    r = gpupool.ImageRef.parse("ubuntu")
    assert (r.registry(), r.repository(), r.normalized()) == ("docker.io", "library/ubuntu", "docker.io/library/ubuntu:latest")
    iiis = gpupool.Profile.builtin("iiis")
    resolved = iiis.catalog.resolve("ubuntu-pytorch:1.5.0")
    assert resolved.endswith("/ubuntu-pytorch:1.5.0") and resolved.startswith(iiis.catalog.prefix)
    with pytest.raises(gpupool.ValidationError) as info:
        iiis.catalog.resolve("ubuntu-pytorch:0.0.1")
    assert "1.5.0" in str(info.value)  # lists the tags that exist
    assert iiis.catalog.find("ubuntu-pytorch").gpu
    assert iiis.catalog.find("no-such-image") is None


def test_storage_values():
    pvc = gpupool.PvcRequest(name="data", storage_class="nfs", size="10Gi", access_modes=["RWX"])
    assert pvc.access_modes == ["ReadWriteMany"]
    pvc.validate()
    with pytest.raises(gpupool.ValidationError):
        gpupool.PvcRequest(name="data", size="0").validate()
    vols = [gpupool.Volume(name="data", source=gpupool.PvcSource(claim_name="data")),
            gpupool.Volume(name="ssd", source=gpupool.HostPathSource(path="/data", type="DirectoryOrCreate")),
            gpupool.Volume(name="shm", source=gpupool.EmptyDirSource(memory=True, size_limit="8Gi"))]
    assert isinstance(vols[1].source, gpupool.HostPathSource) and vols[1].source.type == "DirectoryOrCreate"
    mounts = [gpupool.VolumeMount(volume="data", mount_path="/data"), gpupool.VolumeMount(volume="ssd", mount_path="/mnt/data1")]
    gpupool.validate_volumes(vols, mounts)
    # v1.32 takes a relative mount path (ValidateVolumeMounts does not check it), not a "..".
    gpupool.validate_volumes(vols, [gpupool.VolumeMount(volume="data", mount_path="relative")])
    with pytest.raises(gpupool.ValidationError):
        gpupool.validate_volumes(vols, [gpupool.VolumeMount(volume="data", mount_path="/d", sub_path="../x")])


def test_kwargs_constructors_reject_unknown_names():
    with pytest.raises(TypeError, match="unexpected keyword argument 'gpu'"):
        gpupool.Resources(gpu=1)
    with pytest.raises(TypeError):
        gpupool.Workload(_private=1)


@pytest.mark.parametrize("text", ["plain", "it's", "$(rm -rf /) `x` \\ \"q\"", "a b\nc", ""])
def test_shell_quote_is_one_word_with_that_value(text):
    import subprocess
    out = subprocess.run(["sh", "-c", "printf %s " + gpupool.shell_quote(text)], capture_output=True, text=True,
                         check=True).stdout
    assert out == text


def test_validate_workload_refuses_what_render_refuses():
    # ssd=True needs a profile listing local SSDs: the generic profile (the default) has none.
    w = gpupool.to_workload(kind="job", name="j", image="ubuntu:22.04", command="true", ssd=True)
    with pytest.raises(gpupool.ValidationError) as rendered:
        gpupool.render(w)
    with pytest.raises(gpupool.ValidationError) as validated:
        gpupool.validate_workload(w)
    assert str(validated.value) == str(rendered.value) and validated.value.field == "ssd"
    gpupool.validate_workload(w, profile="iiis")  # the iiis profile has local SSDs
    gpupool.render(w, profile="iiis")
