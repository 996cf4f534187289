"""Arena's submit flags as keyword arguments (the same SubmitOptions the command fills), and
cluster.top_jobs() (`arena top job`)."""
import pytest

import gpupool
from conftest import seed_job


def job(**overrides):
    options = dict(kind="job", name="arena", image="busybox:1.36", command="python train.py")
    options.update(overrides)
    return options


def test_keywords_fill_the_workload(tmp_path):
    config = tmp_path / "train.yaml"
    config.write_text("lr: 0.1\n")
    w = gpupool.to_workload(**job(
        kind="tf", workers=2, ps=1, chief=True, evaluator=True, ps_image="tensorflow/tensorflow:2.15.0",
        worker_image="tensorflow/tensorflow:2.15.0-gpu", annotations=["team=vision"], labels=["project=resnet"],
        image_pull_secrets=["harbor-cred"], image_pull_policy="IfNotPresent", retry=3, shell="bash",
        running_timeout="2h", ttl_after_finished="30m", clean_task_policy="All",
        config_files=[f"{config}:/etc/train/train.yaml"], sync_mode="git",
        sync_source="https://github.com/kubeflow/arena.git", devices=["amd.com/gpu=1"]))
    assert w.replicas.evaluator == 1 and w.replicas.chief == 1 and w.replicas.ps == 1
    assert w.annotations == {"team": "vision"}
    assert w.labels == {"project": "resnet", "app": "tfjob", "release": "arena"}  # Arena's app, release
    assert w.image_pull_secrets == ["harbor-cred"]
    assert w.backoff_limit == 3 and w.ttl_seconds_after_finished == 1800
    objects = gpupool.render(w, gpupool.Profile.builtin("generic")).objects
    assert [o["kind"] for o in objects] == ["ConfigMap", "TFJob"]
    assert objects[0]["data"] == {"config-0": "lr: 0.1\n"}
    tf = objects[1]
    assert tf["spec"]["runPolicy"]["activeDeadlineSeconds"] == 7200
    assert tf["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    ps = tf["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]
    evaluator = tf["spec"]["tfReplicaSpecs"]["Evaluator"]["template"]["spec"]
    assert ps["image"] == "tensorflow/tensorflow:2.15.0"
    assert evaluator["containers"][0]["image"] == "tensorflow/tensorflow:2.15.0-gpu"
    assert evaluator["containers"][0]["command"] == ["bash", "-c", "python train.py"]
    assert evaluator["initContainers"][0]["name"] == "init-code"
    assert evaluator["imagePullSecrets"] == [{"name": "harbor-cred"}]


def test_pytorch_workers_count_the_master_as_arena_does():
    w = gpupool.to_workload(**job(kind="pytorch", workers=3))
    assert w.replicas.master == 1 and w.replicas.workers == 2


@pytest.mark.parametrize("kind, keywords, field", [
    ("pytorch", dict(ps=1), "ps"),
    ("job", dict(evaluator=True), "evaluator"),
    ("mpi", dict(worker_image="busybox:1.36"), "worker_image"),
    ("deployment", dict(retry=2), "retry"),
    ("pod", dict(ttl_after_finished="1h"), "ttl_after_finished"),
    ("job", dict(clean_task_policy="All"), "clean_task_policy"),
    ("job", dict(image_pull_policy="Sometimes"), "image_pull_policy"),
    ("job", dict(labels=["no-equals"]), "labels[0]"),
    ("job", dict(devices=["amd.com/gpu=half"]), "devices[0]"),
    ("job", dict(config_files=["/nonexistent/gpupool.yaml:/etc/x"]), "config_files[0]"),
    ("job", dict(sync_mode="git"), "sync_source"),
])
def test_refusals_name_the_keyword(kind, keywords, field):
    with pytest.raises(gpupool.ValidationError) as e:
        gpupool.to_workload(**job(kind=kind, **keywords))
    assert e.value.field == field


def test_tf_per_role_keywords_render_into_their_replica_spec():
    w = gpupool.to_workload(**job(
        kind="tf", ps=1, chief=True, selectors=["pool=any"], ps_cpu="2", ps_gpus=1, ps_port=2224,
        ps_selectors=["pool=cpu"], worker_memory="2Gi", worker_memory_limit="4Gi", chief_port=2225,
        chief_cpu="3"))
    assert w.role_settings["PS"].gpus == 1 and w.role_settings["PS"].node_selector == {"pool": "cpu"}
    assert str(w.role_settings["Worker"].memory_limit) == "4Gi" and w.role_settings["Chief"].port == 2225
    tf = gpupool.render(w, gpupool.Profile.builtin("generic")).objects[-1]
    specs = tf["spec"]["tfReplicaSpecs"]
    ps = specs["PS"]["template"]["spec"]
    assert ps["nodeSelector"] == {"pool": "cpu"}
    assert ps["containers"][0]["resources"]["requests"]["cpu"] == "2"
    assert ps["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert ps["containers"][0]["ports"] == [{"containerPort": 2224, "name": "tfjob-port"}]
    worker = specs["Worker"]["template"]["spec"]
    assert worker["nodeSelector"] == {"pool": "any"}
    assert worker["containers"][0]["resources"]["limits"]["memory"] == "4Gi"
    chief = specs["Chief"]["template"]["spec"]["containers"][0]
    assert chief["resources"]["limits"]["cpu"] == "3"
    assert chief["ports"] == [{"containerPort": 2225, "name": "tfjob-port"}]
    assert tf["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"  # Arena's default for a TFJob


@pytest.mark.parametrize("kind, keywords, field, says", [
    ("pytorch", dict(worker_cpu="4"), "worker_cpu", 'applies to a TFJob only (kind="tf")'),
    ("mpi", dict(chief_selectors=["a=b"]), "chief_selectors", "use selectors"),
    ("tf", dict(ps_memory="1Gi"), "ps_memory", "give ps=N too"),
    ("tf", dict(evaluator_cpu="1"), "evaluator_cpu", "give evaluator=True too"),
    ("mpi", dict(share_memory="2Gi"), "share_memory", "use shm"),
    ("tf", dict(ps_affinity_policy="spread"), "ps_affinity_policy", "give ps=N too"),
    ("tf", dict(worker_affinity_constraint="required"), "worker_affinity_constraint", "worker_affinity_policy"),
    ("tf", dict(nproc_per_node="2"), "nproc_per_node", 'applies to a PyTorchJob only (kind="pytorch")'),
    ("pytorch", dict(nproc_per_node="many"), "nproc_per_node", "auto, cpu, gpu"),
    ("tf", dict(success_policy="Any"), "success_policy", "AllWorkers"),
    ("tf", dict(rdma=True), "rdma", "rdma is not supported: "),
    ("pytorch", dict(model_name="resnet"), "model_name", "model registry"),
    ("tf", dict(starting_timeout="5m"), "starting_timeout", "startingDeadlineSeconds"),
])
def test_option_refusals_speak_python(kind, keywords, field, says):
    with pytest.raises(gpupool.ValidationError) as e:
        gpupool.to_workload(**job(kind=kind, **keywords))
    assert e.value.field == field
    assert says in e.value.rule and "--" not in e.value.rule


def test_more_training_keywords_render():
    pt = gpupool.render(gpupool.to_workload(**job(kind="pytorch", workers=2, share_memory="2Gi",
                                                  nproc_per_node="gpu")),
                        gpupool.Profile.builtin("generic")).objects[-1]
    for role in ("Master", "Worker"):
        spec = pt["spec"]["pytorchReplicaSpecs"][role]["template"]["spec"]
        assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}} in spec["volumes"]
        assert {"name": "PET_NPROC_PER_NODE", "value": "gpu"} in spec["containers"][0]["env"]
    w = gpupool.to_workload(**job(kind="tf", success_policy="AllWorkers"))
    assert w.success_policy == "AllWorkers"
    tf = gpupool.render(w, gpupool.Profile.builtin("generic")).objects[-1]
    assert tf["spec"]["successPolicy"] == "AllWorkers"
    assert gpupool.to_workload(**job(kind="mpi", mounts_on_launcher=True)).kind == "MPIJob"
    w = gpupool.to_workload(**job(kind="tf", workers=2, worker_affinity_policy="spread",
                                  worker_affinity_constraint="required"))
    assert w.role_settings["Worker"].affinity_policy == "spread" and w.role_settings["Worker"].affinity_required
    worker = gpupool.render(w, gpupool.Profile.builtin("generic")).objects[-1]["spec"]["tfReplicaSpecs"]["Worker"]
    anti = worker["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == "kubernetes.io/hostname"


def test_top_jobs_counts_gpus_requested_and_allocated(seed_cluster):
    seed_cluster.submit(gpupool.to_workload(**seed_job(name="top", workers=2, tolerations=["all"])))
    seed_cluster.advance(5)  # the pods start on the cluster's manual clock
    seed_cluster.wait("top", until="Running", timeout=60, progress=False)
    jobs = {j.name: j for j in seed_cluster.top_jobs()}
    assert jobs["top"].gpus_requested == 2
    assert jobs["top"].gpus_allocated == 2
    text = gpupool.top_jobs_to_text(list(jobs.values()))
    assert "GPU(Requested)  GPU(Allocated)" in text
    assert text.endswith("Total Allocated/Requested GPUs of Training Jobs: 2/2\n")
