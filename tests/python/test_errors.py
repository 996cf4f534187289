"""The C++ exception hierarchy as Python exceptions, with their attributes."""
import pytest

import gpupool


@pytest.mark.parametrize("name, bases", [
    ("Error", (RuntimeError,)),
    ("ValidationError", ("Error", ValueError)),
    ("ConfigError", ("Error",)),
    ("ApiError", ("Error",)),
    ("TransportError", ("Error",)),
    ("ResponseTooLargeError", ("TransportError", "Error")),
    ("UnreachableError", ("TransportError", "Error")),
    ("CancelledError", ("Error",)),
])
def test_hierarchy(name, bases):
    cls = getattr(gpupool, name)
    for base in bases:
        base = getattr(gpupool, base) if isinstance(base, str) else base
        assert issubclass(cls, base)
    assert cls.__module__ == "gpupool"


@pytest.mark.parametrize("call, field, value", [
    (lambda: gpupool.Quantity("10Gx"), "quantity", "10Gx"),
    (lambda: gpupool.Quantity.parse("1..5", field="memory"), "memory", "1..5"),
    (lambda: gpupool.Toleration.parse("=x:NoSchedule"), "toleration", "=x:NoSchedule"),
    (lambda: gpupool.Taint.parse("gpu_node=invalid:Sometimes"), "taint", "gpu_node=invalid:Sometimes"),
    (lambda: gpupool.Taint("k", "v", "Never"), "effect", "Never"),
    (lambda: gpupool.ImageRef.parse("ubuntu@sha256:abc"), "image", "ubuntu@sha256:abc"),
    (lambda: gpupool.to_workload(kind="mpi", name="x", image="ubuntu", data=["nocolon"]), "data[0]", "nocolon"),
    (lambda: gpupool.to_workload(kind="mpi", name="x", image="ubuntu", tolerations=["=x:NoSchedule"]), "tolerations[0]",
     "=x:NoSchedule"),
    (lambda: gpupool.to_workload(kind="job", name="x", image="ubuntu", cpu_limit="lots"), "cpu_limit", "lots"),
    (lambda: gpupool.to_workload(kind="mpi", name="Bad_Name", image="ubuntu"), None, "Bad_Name"),
])
def test_validation_error_attributes(call, field, value):
    with pytest.raises(gpupool.ValidationError) as info:
        call()
    e = info.value
    if field is not None:
        assert e.field == field
    assert e.value == value
    assert e.rule and e.rule in str(e)
    assert isinstance(e, ValueError) and isinstance(e, gpupool.Error)


def test_config_error_attributes():
    with pytest.raises(gpupool.ConfigError) as info:
        gpupool.Profile.parse("name: x\ngpu:\n  resource: 5\n  bogus: 1\n", filename="site.yaml")
    e = info.value
    assert e.file == "site.yaml"
    assert e.line == 4
    assert "bogus" in e.key
    assert str(e).startswith("site.yaml:4: ")


def test_config_error_from_manifest():
    with pytest.raises(gpupool.ConfigError) as info:
        gpupool.parse_manifests("- just\n- a list\n", filename="m.yaml")
    assert info.value.file == "m.yaml"
    assert info.value.line >= 1


def test_catch_all_as_error():
    with pytest.raises(gpupool.Error):
        gpupool.Profile.builtin("no-such-profile")


def test_status_cause():
    c = gpupool.StatusCause(reason="FieldValueInvalid", message="bad", field="spec.x")
    assert (c.reason, c.message, c.field) == ("FieldValueInvalid", "bad", "spec.x")
    assert c == gpupool.StatusCause(reason="FieldValueInvalid", message="bad", field="spec.x")
    assert "spec.x" in repr(c)


def test_api_error_defaults():
    # Class-level defaults exist so code can read the attributes of any ApiError.
    assert gpupool.ApiError.code == 0 and gpupool.ApiError.causes == ()
