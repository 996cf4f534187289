"""The facade against the embedded cluster (real HTTPS on 127.0.0.1), as the seed walkthrough does it."""
import os
import pathlib
import signal
import threading
import time

import pytest

import gpupool
from conftest import SEED_NODES, needs_embedded, seed_job

pytestmark = needs_embedded


def instance_ips(info):
    return {i.node_ip for i in info.instances}


def test_nodes_as_kubectl_shows_them(seed_cluster):
    nodes = seed_cluster.nodes()
    assert [row.node.name for row in nodes] == SEED_NODES
    assert len(nodes) == 6 and nodes[-1].node.name == SEED_NODES[-1]
    text = nodes.to_text()
    assert text.split("\n")[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert str(nodes) == text
    assert "ssd_node=invalid:NoSchedule" in nodes.to_text(wide=True)
    assert nodes._repr_html_() == nodes.to_html() and "<table" in nodes.to_html()
    assert nodes[5].node.taints == [gpupool.Taint("ssd_node", "invalid", "NoSchedule")]
    assert nodes.gpu_resource == "nvidia.com/gpu"
    # Each row keeps the node's columns (NodeSummary), not the whole Node.
    first = nodes[0].node
    assert isinstance(first, gpupool.NodeSummary)
    assert text.split("\n")[1].split()[:3] == [first.name, first.status, first.roles]
    assert first.gpus == nodes[0].gpus_total and first.milli_cpu > 0 and first.memory > 0


def test_taint_and_untaint(seed_cluster):
    seed_cluster.taint(SEED_NODES[0], "extra=1:PreferNoSchedule", gpupool.TaintChange.parse("other:NoExecute"))
    taints = seed_cluster.nodes()[0].node.taints
    assert gpupool.Taint("extra", "1", "PreferNoSchedule") in taints
    assert gpupool.Taint("other", "", "NoExecute") in taints
    seed_cluster.taint(SEED_NODES[0], "extra-", "other-")
    assert all(t.key not in ("extra", "other") for t in seed_cluster.nodes()[0].node.taints)
    with pytest.raises(gpupool.ValidationError):
        seed_cluster.taint(SEED_NODES[0], "bad=taint:Sometimes")


@pytest.mark.parametrize("tolerations, nodes", [
    (["ssd_node"], {"192.168.3.230"}),
    (["ssd_node", "gpu_node"], {"192.168.3.228", "192.168.3.229", "192.168.3.230"}),
])
def test_seed_job_lands_on_tolerated_nodes(seed_cluster, tolerations, nodes):
    result = seed_cluster.submit("mpi", **{k: v for k, v in seed_job(tolerations=tolerations).items() if k != "kind"})
    assert result.name == "mpi-dist" and any("mpijob" in c for c in result.created)
    seed_cluster.advance(5)
    info = seed_cluster.wait("mpi-dist", "Running", timeout=30, progress=False)
    assert info.status == "RUNNING"
    assert info.trainer() == "MPIJOB"
    assert info.instances and instance_ips(info) <= nodes
    if len(nodes) == 1:
        assert instance_ips(info) == nodes
    text = str(info)
    assert "STATUS: RUNNING" in text and "mpi-dist" in text
    assert info._repr_html_() == info.to_html()
    running = sum(1 for i in info.instances if i.phase == "Running")
    assert info.progress_text() == f"mpi-dist: RUNNING ({running}/{len(info.instances)} instances running)"
    as_json = info.to_json()
    assert as_json["status"] == "RUNNING" and as_json["trainer"] == "MPIJOB"
    assert {i["nodeIP"] for i in as_json["instances"]} == instance_ips(info)
    assert [j.name for j in seed_cluster.list()] == ["mpi-dist"]
    assert "mpi-dist" in gpupool.jobs_to_text(seed_cluster.list())


def test_wait_sees_every_change_and_advancing_clock(seed_cluster):
    seed_cluster.submit(gpupool.to_workload(**seed_job()))
    seen = []

    def on_change(info):
        seen.append(info.status)
        if info.status == "PENDING":
            seed_cluster.advance(5)  # runs on the calling thread, between watch events

    info = seed_cluster.wait("mpi-dist", until="Running", timeout=30, on_change=on_change, progress=False)
    assert info.status == "RUNNING" and seen[0] == "PENDING" and seen[-1] == "RUNNING"


def test_wait_times_out(seed_cluster):
    seed_cluster.submit(gpupool.to_workload(**seed_job()))
    with pytest.raises(gpupool.Error, match="timed out"):
        seed_cluster.wait("mpi-dist", "Running", timeout=0.2, progress=False)  # the clock never moves


def test_ctrl_c_interrupts_wait(seed_cluster):
    seed_cluster.submit(gpupool.to_workload(**seed_job()))
    waiting = threading.Event()

    def interrupt():
        waiting.wait(10)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()  # runs only if wait() releases the GIL
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        seed_cluster.wait("mpi-dist", "Succeeded", timeout=600, on_change=lambda info: waiting.set(), progress=False)
    assert time.monotonic() - start < 10
    assert seed_cluster.get("mpi-dist").status == "PENDING"  # the connection is still usable


# Run in a child process: the child's wait() blocks on a cluster whose clock never moves; the test
# (the parent) sends it a real SIGINT once the child's main thread is inside the C++ call (a helper
# thread in the child sees the main thread's top Python frame at the wait() line, so no Python code
# of the main thread is running that could take the signal on its own). Without the binding
# releasing the GIL, the helper never runs and the child never says it is waiting; without it
# checking for signals, the child sits in wait() for its 600 s timeout. Either way the parent gives
# up after 30 s, kills the child, and the test fails.
CTRL_C_CHILD = r"""
import sys, threading, time
import gpupool
main = threading.main_thread().ident
ready = threading.Event()


def tell_parent_when_blocked():
    ready.wait()
    while sys._current_frames()[main].f_code.co_name != "<module>":  # still in on_change
        time.sleep(0.01)
    print("waiting", flush=True)


threading.Thread(target=tell_parent_when_blocked, daemon=True).start()
with gpupool.EmbeddedCluster(topology="seed") as cluster:
    cluster.submit("job", name="forever", image="busybox", command="echo hi")
    try:
        cluster.wait("forever", "Succeeded", timeout=600, on_change=lambda info: ready.set(), progress=False)
        print("returned", flush=True)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
        # The call was cancelled cleanly: the connection still answers.
        print("status", cluster.get("forever").status, flush=True)
"""


def test_ctrl_c_from_outside_interrupts_wait_in_a_child_process():
    import select
    import subprocess
    import sys
    child = subprocess.Popen([sys.executable, "-c", CTRL_C_CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        readable, _, _ = select.select([child.stdout], [], [], 30)
        if not readable:
            pytest.fail("the child never got inside wait() with the GIL released (30 s)")
        first = child.stdout.readline()
        assert first == "waiting\n", child.stderr.read() if child.poll() is not None else first
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        try:
            out, err = child.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("wait() ignored Ctrl-C: the child had to be killed 30 s after SIGINT")
        took = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, err
    assert out.splitlines() == ["KeyboardInterrupt", "status PENDING"], (out, err)
    assert took < 10, took


def test_ctrl_c_interrupts_following_logs(seed_cluster):
    seed_cluster.submit(gpupool.to_workload(**seed_job()))
    seed_cluster.advance(5)
    seed_cluster.wait("mpi-dist", "Running", timeout=30, progress=False)
    seed_cluster.advance(60)
    first = list(seed_cluster.logs("mpi-dist"))[0]
    reading = threading.Event()

    def interrupt():
        reading.wait(10)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    it = seed_cluster.logs("mpi-dist", follow=True)
    assert next(it) == first
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        reading.set()
        for _ in it:  # the clock is frozen: the stream idles until Ctrl-C
            pass
    it.close()  # the C++ stream was cancelled and its thread joined; close() does not wait for the server
    assert time.monotonic() - start < 10
    assert seed_cluster.get("mpi-dist").status == "RUNNING"


def test_explain_pending_job(seed_cluster):
    seed_cluster.submit(gpupool.to_workload(**seed_job(name="no-toleration", tolerations=[])))
    explanation = seed_cluster.explain("no-toleration")
    assert explanation.name == "no-toleration" and explanation.pods
    verdicts = explanation.pods[0].nodes
    assert {v.node for v in verdicts} == set(SEED_NODES)
    assert not any(v.fits for v in verdicts)
    reasons = " ".join(r for v in verdicts for r in v.reasons)
    assert "ssd_node" in reasons and "gpu_node" in reasons
    assert str(explanation) == explanation.to_text() and explanation._repr_html_() == explanation.to_html()


def test_explain_workload_not_submitted(seed_cluster):
    explanation = seed_cluster.explain(gpupool.to_workload(**seed_job(tolerations=["ssd_node"])))
    fits = {v.node for p in explanation.pods for v in p.nodes if v.fits}
    assert fits == {SEED_NODES[5]}


def test_logs_iterate(seed_cluster):
    seed_cluster.submit(gpupool.to_workload(**seed_job()))
    seed_cluster.advance(5)
    seed_cluster.wait("mpi-dist", "Running", timeout=30, progress=False)
    seed_cluster.advance(60)
    lines = list(seed_cluster.logs("mpi-dist"))
    assert lines and all(isinstance(line, str) for line in lines)
    assert list(seed_cluster.logs("mpi-dist", tail_lines=1)) == lines[-1:]
    with seed_cluster.logs("mpi-dist", follow=True) as it:
        assert next(it) == lines[0]  # closing stops following


def test_api_errors_carry_the_status(seed_cluster):
    with pytest.raises(gpupool.ApiError) as info:
        seed_cluster.get("no-such-job")
    assert info.value.code == 404 and info.value.reason == "NotFound"
    seed_cluster.submit(gpupool.to_workload(**seed_job()))
    assert seed_cluster.delete("mpi-dist") == "mpijob.kubeflow.org/mpi-dist"
    with pytest.raises(gpupool.ApiError):
        seed_cluster.get("mpi-dist")


def test_dry_run_creates_nothing(seed_cluster):
    result = seed_cluster.submit(gpupool.to_workload(**seed_job()), dry_run=True)
    assert result.submission.workload()["kind"] == "MPIJob"
    assert seed_cluster.list() == []


def test_user_connection_namespace_and_no_secrets():
    with gpupool.EmbeddedCluster(topology="seed", users=["alice"]) as embedded:
        _check_alice(embedded)


def _check_alice(embedded):
    path = embedded.kubeconfig("alice")
    token = next(line.split(":", 1)[1].strip() for line in pathlib.Path(path).read_text().splitlines()
                 if line.strip().startswith("token:"))
    alice = gpupool.connect(kubeconfig=path)
    assert alice.namespace == "alice"
    assert token not in repr(alice)
    with pytest.raises(gpupool.ApiError) as info:
        alice.taint(SEED_NODES[0], "x=y:NoSchedule")  # nodes are not alice's to change
    assert info.value.code == 403 and token not in str(info.value)
    assert embedded.connect("alice").namespace == "alice"


def test_pvcs(seed_cluster):
    seed_cluster.create_pvc(gpupool.PvcRequest(name="data", size="10Gi"))
    assert [p.name for p in seed_cluster.pvcs()] == ["data"]
    assert "data" in gpupool.pvcs_to_text(seed_cluster.pvcs())
    seed_cluster.delete_pvc("data")
    assert all(p.name != "data" for p in seed_cluster.pvcs())


def test_embedded_clock_and_stop():
    with gpupool.EmbeddedCluster(topology="seed") as cluster:
        before = cluster.now()
        cluster.advance(90)
        assert (cluster.now() - before).total_seconds() == pytest.approx(90, abs=1)
        assert cluster.url.startswith("https://127.0.0.1:")
        assert not cluster.stopped and cluster.profile.name == "generic"
    assert cluster.stopped
    with pytest.raises(gpupool.Error, match="stopped"):
        cluster.advance(1)
    cluster.stop()  # idempotent


def test_shared_state_served_to_the_command_and_kept(tmp_path):
    """state=True: the topology's shared state (issue #16), served to `gpupool --embedded` commands and
    kept when the cluster stops; a second EmbeddedCluster on it joins the first."""
    import subprocess
    cli = os.environ.get("GPUPOOL_CLI")
    if not cli:
        pytest.skip("GPUPOOL_CLI is not set (ctest sets it)")
    env = dict(os.environ, GPUPOOL_STATE_DIR=str(tmp_path))
    with gpupool.EmbeddedCluster(topology="seed", state=str(tmp_path)) as owner:
        assert not owner.joined
        owner.taint(SEED_NODES[3], "gpu_node=invalid:NoSchedule")
        with gpupool.EmbeddedCluster(topology="seed", state=str(tmp_path)) as other:
            assert other.joined and other.url == owner.url and "joined=True" in repr(other)
            with pytest.raises(gpupool.Error, match="joined the one served by another process"):
                other.advance(1)
        # The command joins this process's server instead of loading the file.
        status = subprocess.run([cli, "cluster", "status", "seed"], env=env, capture_output=True, text=True)
        assert f"served by: pid {os.getpid()} on {owner.url}" in status.stdout
        made = subprocess.run([cli, "--embedded", "seed", "submit", "job", "--name", "from-cli", "--image", "busybox",
                               "--", "true"], env=env, capture_output=True, text=True)
        assert made.returncode == 0, made.stderr
        assert any(j.name == "from-cli" for j in owner.list())
    # Stopped: the next owner (the command, in-process) finds both writes.
    nodes = subprocess.run([cli, "--embedded", "seed", "nodes", "-o", "wide"], env=env, capture_output=True, text=True)
    assert "gpu_node=invalid:NoSchedule" in nodes.stdout
    listed = subprocess.run([cli, "--embedded", "seed", "list"], env=env, capture_output=True, text=True)
    assert "from-cli" in listed.stdout


def test_every_time_and_duration_binding_converts_as_its_stub_says():
    """Each binding that returns or takes a datetime / timedelta (see _gpupool.pyi) is called once."""
    import datetime
    with gpupool.EmbeddedCluster(topology="seed") as cluster:
        cluster.submit(**seed_job(kind="job", name="timed", tolerations=["all"], command="true"))
        cluster.create_pvc(gpupool.PvcRequest(name="timed-data", size="1Gi"))
        cluster.advance(datetime.timedelta(minutes=11))  # advance takes a timedelta (a batch pod runs 10 min) ...
        cluster.advance(2.5)                             # ... or seconds
        now = cluster.now()
        assert isinstance(now, datetime.datetime)
        info = cluster.wait("timed", until="Finished", timeout=datetime.timedelta(seconds=5))
        for field in ("created", "observed", "started", "finished"):
            assert isinstance(getattr(info, field), datetime.datetime), field
        assert isinstance(info.training_duration(), datetime.timedelta)
        assert info.training_duration() >= datetime.timedelta(minutes=10)
        assert all(isinstance(i.created, datetime.datetime) for i in info.instances)
        nodes = cluster.nodes()
        assert isinstance(nodes.observed, datetime.datetime)
        pvcs = cluster.pvcs()
        assert isinstance(pvcs[0].created, datetime.datetime)
        assert "timed-data" in gpupool.pvcs_to_text(pvcs, now)
        assert gpupool.human_duration(datetime.timedelta(hours=2, minutes=3)) == "123m"
    n = gpupool.Node(name="n", created=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc))
    assert isinstance(n.created, datetime.datetime)
    assert n.age(datetime.datetime(2026, 1, 3, tzinfo=datetime.timezone.utc)) == "2d"


def test_quota_preflight_and_limits():
    """The guide's quota sets limits.cpu / limits.memory: a job without limits is refused before anything
    is created, with the quota's own reason; cpu_limit= / memory_limit= (or the iiis profile) pass it."""
    with gpupool.EmbeddedCluster(topology="seed", users=["alice"]) as embedded:
        import subprocess
        subprocess.run(["/usr/bin/kubectl", "--kubeconfig", embedded.admin_kubeconfig(), "-n", "alice", "create",
                        "quota", "team", "--hard=limits.cpu=8,limits.memory=32Gi"], check=True, capture_output=True)
        alice = embedded.connect("alice")
        with pytest.raises(gpupool.ApiError) as info:
            alice.submit("deployment", name="no-limits", image="busybox", command="sleep 1000", cpu="1", memory="1Gi")
        assert info.value.code == 403
        assert info.value.status_message.endswith("failed quota: team: must specify limits.cpu for: main; "
                                                  "limits.memory for: main")
        assert alice.list() == []
        alice.submit("deployment", name="limited", image="busybox", command="sleep 1000", cpu="1", memory="1Gi",
                     cpu_limit="1", memory_limit="1Gi")
        iiis = embedded.connect("alice", profile="iiis")
        iiis.submit("deployment", name="guide", image="ubuntu-tensorflow:2.3.0", command="sleep 1000", cpu="1",
                    memory="1Gi")
        assert sorted(j.name for j in alice.list()) == ["guide", "limited"]
        with pytest.raises(gpupool.ValidationError, match="gpu_limit"):
            alice.submit("job", name="x", image="busybox", gpus=1, gpu_limit=2)


def test_apply_existing_manifests():
    """Cluster.apply: the guide's manifests as text or dicts, kubectl's words, and a dry run."""
    manifests = (pathlib.Path(__file__).resolve().parents[2] / "examples" / "manifests")
    text = (manifests / "nfs-pvc-example.yaml").read_text() + "\n---\n" + (manifests / "ubuntu-tf-example.yaml").read_text()
    with gpupool.EmbeddedCluster(topology="iiis") as cluster:  # the topology's own profile: iiis
        assert cluster.profile.name == "iiis"
        assert cluster.apply(text, dry_run=True).lines == [
            "persistentvolumeclaim/my-pvc created (server dry run)",
            "deployment.apps/my-first-ubuntu-tf created (server dry run)"]
        result = cluster.apply(text)
        assert result.lines == ["persistentvolumeclaim/my-pvc created", "deployment.apps/my-first-ubuntu-tf created"]
        image = result.objects[1]["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image == "harbor.iiis.co/library/ubuntu-tensorflow:2.3.0"
        objects = gpupool.parse_manifests(text)
        objects[1]["spec"]["replicas"] = 2
        assert cluster.apply(objects).lines == ["persistentvolumeclaim/my-pvc unchanged",
                                                "deployment.apps/my-first-ubuntu-tf configured"]
        assert "ApplyResult(lines=[" in repr(result)
        with pytest.raises(TypeError):
            cluster.apply([1, 2])


def test_embedded_run_container_needs_podman_or_docker(monkeypatch, tmp_path):
    """run="container" runs the images with podman or docker; without either, one clear error."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(gpupool.Error, match="neither podman nor docker is on PATH"):
        gpupool.EmbeddedCluster(topology="seed", run="container")


def test_embedded_run_local_runs_the_command_for_real():
    """run="local" (issue #17): the job's command runs as a local process; its output is the log and
    exec runs beside it. The default stays the simulation."""
    with pytest.raises(gpupool.Error, match="run"):
        gpupool.EmbeddedCluster(topology="seed", run="vm")
    with gpupool.EmbeddedCluster(topology="seed", run="local", manual_clock=False) as cluster:
        cluster.submit("job", name="pylocal", image="busybox", command="echo hi from $HOSTNAME; exit 0")
        info = cluster.wait("pylocal", "Succeeded", timeout=60)
        assert info.status == "SUCCEEDED"
        lines = list(cluster.logs("pylocal"))
        assert len(lines) == 1 and lines[0].startswith("hi from pylocal-")
        cluster.submit("pod", name="pysleeper", image="busybox", command="sleep 1000")
        cluster.wait("pysleeper", "Running", timeout=60)
        r = cluster.exec("pysleeper", ["sh", "-c", "echo $HOSTNAME; exit 7"])
        assert (r.exit_code, r.stdout) == (7, "pysleeper\n")
        cluster.delete("pysleeper")


KUEUE = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: p100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: gpus}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: p100, resources: [{name: nvidia.com/gpu, nominalQuota: 2}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team, namespace: default}
spec: {clusterQueue: gpus}
"""


def test_queue_keyword_and_queues():
    """queue= submits into a Kueue LocalQueue; cluster.queues() and get().queue show the queue's state."""
    with gpupool.EmbeddedCluster(topology="seed") as cluster:
        cluster.apply(KUEUE)
        for name in ("first", "second"):
            cluster.submit("job", name=name, image="busybox", gpus=2, queue="team", command="true")
        report = cluster.queues()
        assert [(q.name, q.cluster_queue, q.pending, q.admitted) for q in report.local_queues] == [
            ("team", "gpus", 1, 1)]
        quota = report.cluster_queues[0].quotas[0]
        assert (quota.flavor, quota.resource, quota.nominal, quota.used) == ("p100", "nvidia.com/gpu", "2", "2")
        assert "gpus" in str(report)
        assert cluster.get("first").queue.state == "admitted"
        second = cluster.get("second").queue
        assert (second.queue, second.state, second.position) == ("team", "pending", 1)
        assert "insufficient unused quota for nvidia.com/gpu in flavor p100" in second.reason
        with pytest.raises(gpupool.ValidationError, match="--queue"):
            cluster.submit("job", name="gang", image="busybox", gpus=1, gang=True, command="true")
