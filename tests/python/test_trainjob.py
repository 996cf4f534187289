"""Kubeflow Trainer v2 TrainJob and JobSet from Python, on the embedded cluster (kind="trainjob")."""
import pytest

import gpupool
from conftest import needs_embedded

pytestmark = needs_embedded


def test_render_trainjob_kind_and_runtime():
    w = gpupool.to_workload(kind="trainjob", name="tj", image="busybox", workers=2, gpus=1,
                            runtime="deepspeed-distributed", tolerations=["ssd_node"])
    assert w.runtime == "deepspeed-distributed"
    objects = gpupool.render(w, profile="generic").objects
    tj = [o for o in objects if o["kind"] == "TrainJob"][0]
    assert tj["spec"]["runtimeRef"]["name"] == "deepspeed-distributed"
    assert tj["spec"]["trainer"]["numNodes"] == 2
    patch = tj["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    assert patch["template"]["spec"]["template"]["spec"]["tolerations"] == [{"key": "ssd_node", "operator": "Exists"}]


def test_submit_trainjob_runs_on_the_tolerated_node(seed_cluster):
    result = seed_cluster.submit("trainjob", name="tj", image="busybox", gpus=1, workers=2, command="python train.py",
                                 tolerations=["ssd_node"])
    assert result.created == ["trainjob.trainer.kubeflow.org/tj"]
    seed_cluster.advance(5)
    info = seed_cluster.wait("tj", "Running", timeout=30, progress=False)
    assert info.trainer() == "TRAINJOB"
    names = sorted(i.name for i in info.instances)
    assert [n[:len("tj-node-0-0-")] for n in names] == ["tj-node-0-0-", "tj-node-0-1-"]
    assert {i.node_ip for i in info.instances} == {"192.168.3.230"}
    # top job: the trainer's resourcesPerNode on numNodes (its pod template lives in the runtime).
    top = {j.name: j for j in seed_cluster.top_jobs()}
    assert (top["tj"].gpus_requested, top["tj"].gpus_allocated) == (2, 2)


def test_trainjob_options_are_checked():
    with pytest.raises(gpupool.ValidationError, match="applies to a TrainJob only"):
        gpupool.to_workload(kind="pytorch", name="pt", image="busybox", runtime="torch-distributed")
