"""Cluster.exec / port_forward / tensorboard from Python, against an embedded server whose
StreamHandler runs exec locally and forwards ports to an echo server (tests/streams_server.cpp)."""
import os
import pathlib
import socket
import subprocess
import threading

import pytest

import gpupool
from conftest import needs_cluster

SERVER = pathlib.Path(gpupool.__file__).resolve().parents[3] / "tests" / "streams_test_server"


@pytest.fixture
def streams_cluster():
    if not SERVER.exists():
        pytest.skip("tests/streams_test_server is not built (run from a build tree)")
    # The server is a C++ test binary, instrumented on its own under TSan (scripts/tsan.sh): the
    # libtsan preload the interpreter needs must not reach it, or the commands it execs (sh) inherit it.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    proc = subprocess.Popen([str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        kubeconfig = proc.stdout.readline().strip()
        cluster = gpupool.connect(kubeconfig=kubeconfig)
        cluster.submit("mpi", name="train", image="registry.example.com/horovod:latest", gpus=1, workers=1,
                       command="python train.py", tensorboard=True)
        proc.stdin.write("advance 30\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "ok"
        yield cluster
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def echo_through(port, data):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
        return got


@needs_cluster
def test_exec_returns_exit_code_and_output(streams_cluster):
    r = streams_cluster.exec("train", ["sh", "-c", "cat; echo oops >&2; exit 5"], stdin="fed to stdin\n")
    assert isinstance(r, gpupool.ExecResult)
    assert (r.exit_code, r.stdout, r.stderr) == (5, "fed to stdin\n", "oops\n")
    r = streams_cluster.exec("train", ["printf", "%s", "worker"], instance="train-worker-0")
    assert (r.exit_code, r.stdout) == (0, "worker")
    with pytest.raises(gpupool.Error, match='pod "nope" is not an instance of job "train"'):
        streams_cluster.exec("train", ["true"], instance="nope")
    with pytest.raises(gpupool.ApiError, match="container zz is not valid for pod train-launcher"):
        streams_cluster.exec("train", ["true"], container="zz")


@needs_cluster
def test_exec_releases_the_gil(streams_cluster, tmp_path):
    # The command waits for a Python thread to write to a FIFO: only possible while exec() has
    # released the GIL (without it the command gives up after 20 s and fails).
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "w") as f:
            f.write("from another thread\n")

    t = threading.Thread(target=writer)
    t.start()
    r = streams_cluster.exec("train", ["timeout", "20", "cat", str(fifo)])
    t.join()
    assert (r.exit_code, r.stdout) == (0, "from another thread\n")


@needs_cluster
def test_port_forward_context_manager(streams_cluster):
    with streams_cluster.port_forward("train", [":80", (0, 80)]) as pf:
        assert [remote for _, remote in pf.ports] == [80, 80]
        assert all(local > 0 for local, _ in pf.ports)
        assert echo_through(pf.local_port, b"hello") == b"hello"
        assert echo_through(pf.ports[1][0], b"x" * 100000) == b"x" * 100000
    with pytest.raises(gpupool.ValidationError, match=r"ports\[0\]"):
        streams_cluster.port_forward("train", ["nope:80"])


@needs_cluster
def test_tensorboard(streams_cluster):
    with streams_cluster.tensorboard("train") as tb:
        assert tb.url == f"http://127.0.0.1:{tb.local_port}"
        assert tb.ports[0][1] == 6006
        assert echo_through(tb.local_port, b"GET /") == b"GET /"
