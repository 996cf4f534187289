"""A Python function launched as a job: Cluster.submit_function / gpupool.function_workload (issue #15, item 4)."""
import math

import pytest

import gpupool
from conftest import needs_embedded

IMAGE = "docker.io/library/python:3.11"
SCALE = 3  # a module global: functions that read it are refused


def train(lr, steps=2, tag="run"):
    import os
    print(f"{tag}: rank={os.environ.get('RANK')} world={os.environ.get('WORLD_SIZE')} "
          f"master={os.environ.get('MASTER_ADDR')} lr={lr} steps={steps}")


def uses_global(x):
    return x * SCALE


def uses_module_imported_outside(x):
    return math.sqrt(x)


def uses_helper(x):
    return train(x)


def declares_global():
    global SCALE
    SCALE = 4


def default_from_outside(x=SCALE):
    return x


def self_contained(n, name="fn"):
    import math as m

    def square(v):  # a helper inside: its names are the function's own
        return v * v

    total = sum(square(i) for i in range(n))
    print(f"{name}: total={total} sqrt={m.isqrt(total)} len={len([1, 2])}")


def make_closure():
    factor = 2

    def scaled(x):
        return x * factor
    return scaled


def pod_spec(obj, replica):
    return obj["spec"]["pytorchReplicaSpecs"][replica]["template"]["spec"]


def test_pytorch_on_two_nodes_renders_master_and_worker_running_the_function():
    w = gpupool.function_workload(train, kind="pytorch", num_nodes=2, image=IMAGE, gpus=1,
                                  tolerations=["ssd_node"], args={"lr": 0.1, "tag": "t"})
    assert (w.name, w.kind, w.replicas.master, w.replicas.workers) == ("train", "PyTorchJob", 1, 1)
    job = gpupool.render(w, profile="generic").workload()
    assert job["kind"] == "PyTorchJob"
    for replica in ("Master", "Worker"):
        spec = pod_spec(job, replica)
        c = spec["containers"][0]
        assert c["command"][:2] == ["sh", "-c"] and c["command"][3] == "gpupool-function"
        program = c["command"][4]
        assert program.startswith("# gpupool function job") and "def train(lr, steps=2, tag=\"run\"):" in program
        assert 'train(**_gpupool_json.loads("{\\"lr\\": 0.1, \\"tag\\": \\"t\\"}"))' in program
        env = {e["name"]: e["value"] for e in c["env"]}
        assert env["PYTHONUNBUFFERED"] == "1" and env["GPUPOOL_FUNCTION"] == "train"
        assert c["resources"]["limits"]["nvidia.com/gpu"] == "1"
        assert {"key": "ssd_node", "operator": "Exists"} in spec["tolerations"]


def test_a_job_gets_indexed_completions_and_packages_are_installed_first():
    w = gpupool.function_workload(self_contained, kind="job", num_nodes=3, image=IMAGE, name="sq",
                                  packages=["numpy==2.1.0"], args={"n": 4})
    job = gpupool.render(w, profile="generic").workload()
    assert (job["kind"], job["spec"]["completionMode"], job["spec"]["parallelism"]) == ("Job", "Indexed", 3)
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert "--user 'numpy==2.1.0'" in script and script.index("pip install") < script.index("exec python3")


@pytest.mark.parametrize("func, names", [
    (uses_global, "SCALE"),
    (uses_module_imported_outside, "math"),
    (uses_helper, "train"),
    (declares_global, "SCALE"),
    (default_from_outside, "SCALE"),
])
def test_functions_that_use_names_from_outside_are_refused(func, names):
    with pytest.raises(gpupool.ValidationError) as e:
        gpupool.function_workload(func, image=IMAGE)
    assert e.value.field == "function" and e.value.value == func.__name__
    assert f"{func.__name__} uses names from outside its own body: {names}" in str(e.value)
    assert isinstance(e.value, gpupool.Error) and isinstance(e.value, ValueError)


def test_lambdas_and_closures_are_refused():
    with pytest.raises(gpupool.ValidationError, match="lambda has no name"):
        gpupool.function_workload(lambda: None, image=IMAGE)
    with pytest.raises(gpupool.ValidationError, match="scaled is a closure over factor"):
        gpupool.function_workload(make_closure(), image=IMAGE)
    with pytest.raises(TypeError, match="not int"):
        gpupool.function_workload(3, image=IMAGE)
    with pytest.raises(TypeError, match="bound method"):
        gpupool.function_workload(gpupool.Workload().validate, image=IMAGE)


def test_arguments_must_be_json():
    with pytest.raises(gpupool.ValidationError) as e:
        gpupool.function_workload(train, image=IMAGE, args={"lr": object()})
    assert e.value.field == "args" and "JSON-serialisable" in str(e.value)
    with pytest.raises(gpupool.ValidationError, match="JSON-serialisable"):
        gpupool.function_workload(train, image=IMAGE, args={"lr": float("nan")})
    with pytest.raises(gpupool.ValidationError, match="dict of keyword arguments"):
        gpupool.function_workload(train, image=IMAGE, args=[1])


def test_options_that_the_function_replaces_are_refused():
    for option in ("command", "argv", "workers"):
        with pytest.raises(TypeError, match=option):
            gpupool.function_workload(train, image=IMAGE, **{option: "x" if option != "workers" else 2})
    with pytest.raises(gpupool.ValidationError) as e:
        gpupool.function_workload(train, kind="mpi", image=IMAGE)
    assert e.value.field == "kind"
    with pytest.raises(gpupool.ValidationError) as e:
        gpupool.function_workload(train, kind="nosuchkind", image=IMAGE)
    assert e.value.field == "kind"
    with pytest.raises(gpupool.ValidationError) as e:  # the usual options keep their checks and names
        gpupool.function_workload(train, image=IMAGE, tolerations=["=bad"])
    assert e.value.field.startswith("tolerations[0]")


@needs_embedded
def test_submit_function_on_the_embedded_cluster_and_its_config_map_goes_with_the_job():
    with gpupool.EmbeddedCluster(topology="seed") as cluster:
        r = cluster.submit_function(train, kind="pytorch", num_nodes=2, image=IMAGE, args={"lr": 0.1})
        assert r.created == ["pytorchjob.kubeflow.org/train"]
        info = cluster.get("train")
        assert info.trainer() == "PYTORCHJOB" and len(info.instances) == 2
        # A program over the inline limit travels in a ConfigMap, deleted with the job.
        big = {"blob": "x" * (40 * 1024)}
        r = cluster.submit_function(train, kind="job", name="bigargs", image=IMAGE, args={"lr": big})
        assert r.created == ["configmap/bigargs-function", "job.batch/bigargs"]
        assert cluster.delete("bigargs") == "job.batch/bigargs"
        # Submitted again: its ConfigMap's name is free again (a left-over one would be a 409 AlreadyExists).
        r = cluster.submit_function(train, kind="job", name="bigargs", image=IMAGE, args={"lr": big})
        assert r.created == ["configmap/bigargs-function", "job.batch/bigargs"]


@needs_embedded
def test_run_local_runs_the_function_for_real():
    """run="local": the launcher runs as a local process with python3; the log is the function's output."""
    with gpupool.EmbeddedCluster(topology="seed", run="local", manual_clock=False) as cluster:
        cluster.submit_function(self_contained, kind="job", name="sq", image=IMAGE, args={"n": 4, "name": "local"})
        info = cluster.wait("sq", "Succeeded", timeout=60)
        assert info.status == "SUCCEEDED"
        assert list(cluster.logs("sq")) == ["local: total=14 sqrt=3 len=2"]
        # Two nodes of a PyTorchJob: each copy sees the operator's RANK / WORLD_SIZE / MASTER_ADDR (the
        # pods keep MASTER_ADDR=dist-master-0; run="local" hands the processes the local address of
        # that Service, 127.0.0.1).
        cluster.submit_function(train, kind="pytorch", num_nodes=2, name="dist", image=IMAGE, args={"lr": 0.5})
        info = cluster.wait("dist", "Succeeded", timeout=60)
        # The job succeeds when its master does; the worker may still be writing: follow each log
        # to its container's end.
        lines = sorted(line for i in info.instances for line in cluster.logs("dist", instance=i.name, follow=True))
        assert lines == ["run: rank=0 world=2 master=127.0.0.1 lr=0.5 steps=2",
                         "run: rank=1 world=2 master=127.0.0.1 lr=0.5 steps=2"]
