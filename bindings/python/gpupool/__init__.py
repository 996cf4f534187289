"""gpupool: launch GPU training workloads on Kubernetes from Python.

    import gpupool
    w = gpupool.to_workload(kind="mpi", name="mpi-dist", image="...", gpus=1, tolerations=["ssd_node"])
    print(gpupool.render(w, profile="generic").to_yaml())

The C++ extension (gpupool._gpupool) loads on first use of any name below, so `import gpupool`
stays fast.
"""
from __future__ import annotations

import importlib
from typing import Any

# Names re-exported from the extension module (see _gpupool.pyi for their signatures).
_NATIVE = (
    # errors
    "Error", "ValidationError", "ConfigError", "ApiError", "TransportError", "UnreachableError", "ResponseTooLargeError",
    "CancelledError", "StatusCause",
    # model
    "Quantity", "Taint", "TaintChange", "Toleration", "TolerationOperator", "Node", "NodeAddress", "NodeSummary",
    "ImageRef", "CatalogImage", "ImageCatalog", "PvcRequest", "PvcSource", "NfsSource", "HostPathSource",
    "EmptyDirSource", "ConfigMapSource", "ConfigMapRequest", "Volume", "VolumeMount", "Resources", "SsdStaging", "StageIn", "DEFAULT_STAGE_OUT_GRACE_SECONDS",
    "EnvVar", "NodeSelectorRequirement", "NodeSelectorOperator", "Replicas", "RoleSettings", "TensorBoard", "Workload", "MpiJobApi", "SubmitOptions",
    "validate_taints", "apply_taint_changes", "parse_taint", "parse_taint_changes", "parse_toleration", "parse_tolerations",
    "tolerated", "first_untolerated_filtering_taint", "count_intolerable_prefer_no_schedule",
    "human_duration", "validate_volumes", "shell_quote", "validate_workload", "parse_workload_kind",
    "to_workload", "function_workload", "parse_key_value", "parse_count",
    # render
    "NfsMount", "NfsShare", "LocalSsd", "GpuConvention", "Profile", "Submission", "render",
    "to_yaml", "to_json", "parse_manifests",
    # cluster (present once the library has the facade)
    "Cluster", "NodeRow", "NodeList", "Instance", "JobInfo", "SubmitResult", "ApplyResult", "PodExplanation", "Verdict",
    "Explanation", "QuotaInfo", "PvcInfo", "LogIterator", "ExecResult", "PortForward", "jobs_to_text", "top_jobs_to_text", "pvcs_to_text",
    "Explanation", "QuotaInfo", "QueueStatus", "FlavorQuota", "ClusterQueueInfo", "LocalQueueInfo", "QueuesReport",
    "PvcInfo", "LogIterator", "ExecResult", "PortForward", "jobs_to_text", "pvcs_to_text",
    "connect",
    # embedded cluster (present once the library has the embedded server)
    "EmbeddedCluster",
)
# Pure-Python helpers of the package, by module.
_PYTHON: dict[str, str] = {}

__all__ = sorted(set(_NATIVE) | set(_PYTHON) | {"__version__"})


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the library's, written once in the source tree's VERSION file
        value = importlib.import_module("gpupool._gpupool").__version__
    elif name in _PYTHON:
        value = getattr(importlib.import_module(_PYTHON[name]), name)
    elif name in _NATIVE:
        native = importlib.import_module("gpupool._gpupool")
        try:
            value = getattr(native, name)
        except AttributeError:
            raise AttributeError(
                f"gpupool.{name} is not available: this build of the extension lacks it "
                "(the library was built without the cluster facade)") from None
    else:
        raise AttributeError(f"module 'gpupool' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return __all__
