"""examples/python/launch.py: the launcher a training script would use, on the embedded cluster."""
import importlib.util

from conftest import REPO, SEED_IMAGE, needs_embedded


def _launcher():
    spec = importlib.util.spec_from_file_location("launch", REPO / "examples" / "python" / "launch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_embedded
def test_launcher_runs_the_seed_job(capsys):
    code = _launcher().main(["--embedded", "seed", "--kind", "mpi", "--name", "mpi-dist", "--gpus", "1",
                             "--toleration", "ssd_node", "--image", SEED_IMAGE, "--", "mpirun", "python", "train.py"])
    out = capsys.readouterr().out
    assert code == 0
    assert "STATUS: RUNNING" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("mpi-dist ")]
    assert rows and all(row[-1] == "192.168.3.230" for row in rows)  # only the ssd_node machine is tolerated


@needs_embedded
def test_launcher_reports_bad_options(capsys):
    code = _launcher().main(["--embedded", "seed", "--name", "x", "--image", SEED_IMAGE, "--data", "nocolon"])
    assert code == 1
    assert "data[0]: invalid value \"nocolon\"" in capsys.readouterr().err  # the keyword argument it set
