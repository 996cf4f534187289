"""The package itself: fast import, lazy loading, stubs that match the module, progress display."""
import ast
import io
import os
import pathlib
import subprocess
import sys

import pytest

import gpupool
from gpupool import _gpupool, _progress

PACKAGE = pathlib.Path(gpupool.__file__).resolve().parent


def test_import_is_fast_and_lazy():
    # Best of a few runs in fresh interpreters, so a busy machine does not fail the test.
    code = ("import sys, time; t = time.perf_counter(); import gpupool; "
            "print(time.perf_counter() - t, 'gpupool._gpupool' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent))
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout.split()
            for _ in range(3)]
    assert min(float(r[0]) for r in runs) < 0.1
    assert all(r[1] == "False" for r in runs)  # the extension loads on first use


FACADE = {"Cluster", "NodeRow", "NodeList", "Instance", "JobInfo", "SubmitResult", "PodExplanation", "Verdict",
          "Explanation", "QuotaInfo", "PvcInfo", "LogIterator", "jobs_to_text", "pvcs_to_text", "connect"}


def test_every_exported_name_resolves():
    optional = (set() if _gpupool.HAVE_CLUSTER else FACADE) | (set() if _gpupool.HAVE_EMBEDDED else {"EmbeddedCluster"})
    missing = [n for n in gpupool.__all__ if n != "__version__" and n not in optional and not hasattr(gpupool, n)]
    assert missing == []
    with pytest.raises(AttributeError):
        gpupool.no_such_name


def _stub_names(path):
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_stubs_cover_the_module():
    stub = _stub_names(PACKAGE / "_gpupool.pyi")
    public = {n for n in dir(_gpupool) if not n.startswith("_")}
    assert public - stub == set()
    assert (PACKAGE / "py.typed").exists()
    package_stub = (PACKAGE / "__init__.pyi").read_text()
    for name in gpupool.__all__:
        if name != "__version__":
            assert f" {name} as {name}," in package_stub


def test_stub_members_exist():
    tree = ast.parse((PACKAGE / "_gpupool.pyi").read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and hasattr(_gpupool, node.name):
            cls = getattr(_gpupool, node.name)
            for item in node.body:
                name = getattr(item, "name", None) or getattr(getattr(item, "target", None), "id", None)
                if name and not name.startswith("__") and name != "Verdict":
                    assert hasattr(cls, name), f"{node.name}.{name} is in the stub but not in the module"


class _Info:
    """Stands in for a JobInfo: the line's words are the library's (JobInfo.progress_text)."""

    def __init__(self, status, phases):
        self.name, self.status = "job", status
        self.instances = [type("I", (), {"phase": p})() for p in phases]

    def progress_text(self):
        running = sum(1 for i in self.instances if i.phase == "Running")
        return f"{self.name}: {self.status} ({running}/{len(self.instances)} instances running)"


def test_progress_choice(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert _progress.reporter(None) is None  # not a terminal: nothing
    assert _progress.reporter(False) is None
    tty = Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    r = _progress.reporter(None)
    r(_Info("PENDING", ["Pending", "Pending"]))
    r(_Info("RUNNING", ["Running", "Running"]))
    r.close(None)
    out = tty.getvalue()
    assert out.count("\r") == 2 and out.endswith("\n") and out.count("\n") == 1  # one line, rewritten
    assert "job: RUNNING (2/2 instances running)" in out


@pytest.mark.skipif(os.environ.get("GPUPOOL_TEST_PIP") != "1", reason="slow (builds everything): set GPUPOOL_TEST_PIP=1")
def test_pip_install_into_a_venv(tmp_path):
    repo = pathlib.Path(__file__).resolve().parent.parent.parent
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index", str(repo)], check=True,
                   cwd=tmp_path)
    out = subprocess.run([str(venv / "bin" / "python"), "-c", "import gpupool; print(gpupool.Quantity('1024Mi'))"],
                         capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert out.strip() == "1Gi"
    if (repo / "cli" / "main.cpp").exists():
        assert (venv / "bin" / "gpupool").exists() and os.access(venv / "bin" / "gpupool", os.X_OK)


def test_version_is_written_once():
    # VERSION is the one place the version is written: CMake, setuptools and this package read it.
    root = pathlib.Path(__file__).resolve().parents[2]
    written = (root / "VERSION").read_text().strip()
    assert gpupool.__version__ == written
    assert _gpupool.__version__ == written
    for path in ("pyproject.toml", "CMakeLists.txt", "bindings/python/gpupool/__init__.py"):
        assert written not in (root / path).read_text(), f"{path} repeats the version {written}"
