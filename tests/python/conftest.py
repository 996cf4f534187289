"""pytest setup for the gpupool Python package.

Run from a build tree (ctest does this):  PYTHONPATH=<build>/bindings/python python3 -m pytest tests/python
or against an installed package:          python3 -m pytest tests/python
"""
import pathlib

import pytest

import gpupool
from gpupool import _gpupool

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent

needs_cluster = pytest.mark.skipif(not _gpupool.HAVE_CLUSTER, reason="built without the cluster facade")
needs_embedded = pytest.mark.skipif(not _gpupool.HAVE_EMBEDDED, reason="built without the embedded server")

# The seed's MPI job (Arena's --toleration walkthrough).
SEED_IMAGE = "registry.cn-hangzhou.aliyuncs.com/tensorflow-samples/horovod:0.13.11-tf1.10.0-torch0.4.0-py3.5"
SEED_COMMAND = ("mpirun python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py --model resnet101 "
                "--batch_size 64 --variable_update horovod --train_dir=/training_logs --summary_verbosity=3 "
                "--save_summaries_steps=10")
SEED_NODES = [f"cn-beijing.192.168.3.{n}" for n in range(225, 231)]


def seed_job(**overrides):
    options = dict(kind="mpi", name="mpi-dist", image=SEED_IMAGE, gpus=1, workers=1, command=SEED_COMMAND,
                   tolerations=["ssd_node"])
    options.update(overrides)
    return options


@pytest.fixture
def seed_cluster():
    """An embedded cluster with the seed topology and the walkthrough's taints, stopped afterwards."""
    if not _gpupool.HAVE_EMBEDDED:
        pytest.skip("built without the embedded server")
    with gpupool.EmbeddedCluster(topology="seed") as cluster:
        cluster.taint(SEED_NODES[3], "gpu_node=invalid:NoSchedule")
        cluster.taint(SEED_NODES[4], "gpu_node=invalid:NoSchedule")
        cluster.taint(SEED_NODES[5], "ssd_node=invalid:NoSchedule")
        yield cluster
