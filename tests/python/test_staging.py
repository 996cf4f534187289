"""SSD staging from Python: the same options as `gpupool submit` (--stage-in, --stage-out,
--stage-out-grace), errors naming the keyword argument, and the read-only target refused."""
import pytest

import gpupool
from conftest import needs_embedded


def job(**options):
    base = dict(kind="job", name="staged", image="busybox", command="python train.py", ssd=True)
    base.update(options)
    return base


def test_stage_in_takes_one_string_or_a_list_and_stage_out_works_alone():
    w = gpupool.to_workload(**job(data=["d:/pvc"], stage_in="/pvc/a:/mnt/data1/a"))
    assert w.staging.inputs == [gpupool.StageIn(source="/pvc/a", cache="/mnt/data1/a")]
    w = gpupool.to_workload(**job(data=["d:/pvc"], stage_in=["/pvc/a:/mnt/data1/a", "/pvc/b:/mnt/data1/b"]))
    assert [i.cache for i in w.staging.inputs] == ["/mnt/data1/a", "/mnt/data1/b"]
    assert w.staging.results == ""
    w = gpupool.to_workload(**job(data=["d:/pvc"], stage_out="/mnt/data1/out:/pvc/out", stage_out_grace=600))
    assert w.staging.inputs == []
    assert (w.staging.results, w.staging.results_target, w.staging.grace_period_seconds) == (
        "/mnt/data1/out", "/pvc/out", 600)
    assert gpupool.to_workload(**job(stage_out="/a:/b")).staging.grace_period_seconds == \
        gpupool.DEFAULT_STAGE_OUT_GRACE_SECONDS == 300
    options = gpupool.SubmitOptions(stage_in="/a:/b")
    assert options.stage_in == ["/a:/b"]


@pytest.mark.parametrize("options, field", [
    (dict(stage_in=["/a:/b", "/c"]), "stage_in[1]"),
    (dict(stage_out="/ssd/out"), "stage_out"),
    (dict(stage_out_grace=60), "stage_out_grace"),
    (dict(stage_out="/a:/b", stage_out_grace=1), "stage_out_grace"),
])
def test_bad_staging_options_name_the_keyword(options, field):
    with pytest.raises(gpupool.ValidationError) as info:
        gpupool.to_workload(**job(**options))
    assert info.value.field == field


@needs_embedded
def test_a_read_only_stage_out_target_is_refused_naming_the_keyword_and_the_mount():
    with gpupool.EmbeddedCluster(topology="seed", profile="iiis") as cluster:
        with pytest.raises(gpupool.ValidationError) as info:
            cluster.submit("job", name="staged", image="busybox", command="python train.py", ssd=True,
                           data=["results:/results:ro"], stage_out="/mnt/data1/out:/results/run-1")
        assert info.value.field == "stage_out"
        assert str(info.value) == ('stage_out: invalid value "/results/run-1": is on the read-only mount /results '
                                   '(volume "results", readOnly); choose a path on a writable mount')
        assert cluster.list() == []  # nothing was created
        # The same workload built by hand names the Workload's field.
        w = gpupool.to_workload(**job(data=["results:/results:ro"], stage_out="/mnt/data1/out:/results/run-1"))
        with pytest.raises(gpupool.ValidationError) as info:
            cluster.submit(w)
        assert info.value.field == "staging.results_target"
