"""examples/notebooks/quickstart.ipynb runs end to end (nbclient, the python3 kernel) on the embedded cluster."""
import os
import pytest

from conftest import REPO, needs_embedded

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")


@needs_embedded
def test_quickstart_notebook_runs(tmp_path):
    nb = nbformat.read(REPO / "examples" / "notebooks" / "quickstart.ipynb", as_version=4)
    # The kernel must import the same gpupool as this test run (the build tree under ctest).
    import gpupool
    package_root = os.path.dirname(os.path.dirname(gpupool.__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env=env)
    outputs = {i: c.get("outputs", []) for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    errors = [o for outs in outputs.values() for o in outs if o.get("output_type") == "error"]
    assert not errors
    html = [o["data"]["text/html"] for outs in outputs.values() for o in outs
            if o.get("output_type") in ("execute_result", "display_data", "update_display_data") and "text/html" in o.get("data", {})]
    joined = "\n".join(html)
    assert "<table" in joined                 # the node list
    assert "kind: MPIJob" in joined           # the workload's YAML
    assert "192.168.3.230" in joined          # the job's instances, on the ssd_node machine
    assert "gpu_node" in joined               # explain(): the taints the pending job does not tolerate
    assert "PYTORCHJOB" in joined             # the function launched as a PyTorchJob, shown by get()
    assert "train-worker-0" in joined         # ... with its two nodes' pods
    assert "completionMode: Indexed" in joined and "gpupool-function" in joined  # function_workload()'s YAML
    # Section 8: the PyTorchJob ran as two local processes that talked through the operator's env.
    streams = "".join(o.get("text", "") for outs in outputs.values() for o in outs if o.get("output_type") == "stream")
    assert "rank 0 of 2: w=" in streams and "rank 1 of 2: w=" in streams, streams
    assert "kind: PyTorchJob" in streams      # the manifest for the real cluster
    # Section 7: two TrainJobs in a 2-GPU Kueue queue: the first admitted, the second pending, then run.
    assert "TRAINJOB" in streams and "QUEUE: team (admitted)" in streams, streams
    assert "QUEUE: team (pending #1: couldn't assign flavors to pod set node: insufficient unused quota" in streams
    assert "gpt-node-0-1-" in streams
