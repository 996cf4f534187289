"""Type stubs of gpupool's C++ extension module (bindings/python/src)."""
import datetime
import enum
from typing import Any, Callable, Dict, Iterator, List, Literal, Optional, Sequence, Tuple, Union, overload

TaintEffectName = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
AccessModeName = Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod", "RWO", "ROX", "RWX", "RWOP"]
Seconds = Union[float, int, datetime.timedelta]
JSONObject = Dict[str, Any]
QuantityLike = Union["Quantity", str, int]

HAVE_CLUSTER: bool
HAVE_EMBEDDED: bool

# ---- errors --------------------------------------------------------------------------------------
class Error(RuntimeError): ...
class ValidationError(Error, ValueError):
    field: str
    value: str
    rule: str
class ConfigError(Error):
    file: str
    key: str
    line: int
class ApiError(Error):
    code: int
    reason: str
    status_message: str
    causes: Sequence[StatusCause]
    retry_after_seconds: Optional[int]
class TransportError(Error): ...
class UnreachableError(TransportError): ...
class ResponseTooLargeError(TransportError): ...
class CancelledError(Error): ...

class StatusCause:
    def __init__(self, *, reason: str = "", message: str = "", field: str = "") -> None: ...
    @property
    def reason(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def field(self) -> str: ...

# ---- model ---------------------------------------------------------------------------------------
class Quantity:
    def __init__(self, value: Union[str, int, Quantity] = 0) -> None: ...
    @staticmethod
    def parse(text: str, field: str = "quantity") -> Quantity: ...
    @staticmethod
    def from_milli(milli: int) -> Quantity: ...
    def to_string(self) -> str: ...
    def value(self) -> int: ...
    def milli_value(self) -> int: ...
    @property
    def nano_value(self) -> int: ...
    @property
    def format(self) -> Literal["DecimalSI", "BinarySI", "DecimalExponent"]: ...
    def is_zero(self) -> bool: ...
    def is_negative(self) -> bool: ...
    def __add__(self, other: Quantity) -> Quantity: ...
    def __sub__(self, other: Quantity) -> Quantity: ...
    def __mul__(self, n: int) -> Quantity: ...
    def __rmul__(self, n: int) -> Quantity: ...
    def __neg__(self) -> Quantity: ...
    def __lt__(self, other: Quantity) -> bool: ...
    def __le__(self, other: Quantity) -> bool: ...
    def __gt__(self, other: Quantity) -> bool: ...
    def __ge__(self, other: Quantity) -> bool: ...
    def __hash__(self) -> int: ...

class Taint:
    key: str
    value: str
    effect: TaintEffectName
    def __init__(self, key: str, value: str = "", effect: TaintEffectName = "NoSchedule") -> None: ...
    @staticmethod
    def parse(text: str, field: str = "taint") -> Taint: ...
    def to_string(self) -> str: ...
    def validate(self, field: str = "taint") -> None: ...

class TaintChange:
    taint: Taint
    remove: bool
    effect_given: bool
    def __init__(self, text: str) -> None: ...
    @staticmethod
    def parse(text: str, field: str = "taint") -> TaintChange: ...

class TolerationOperator(enum.Enum):
    Equal = 0
    Exists = 1

class Toleration:
    key: str
    operator: TolerationOperator
    value: str
    effect: Optional[TaintEffectName]
    toleration_seconds: Optional[int]
    def __init__(self, *, key: str = "", operator: Union[TolerationOperator, str] = "Equal", value: str = "",
                 effect: Optional[TaintEffectName] = None, toleration_seconds: Optional[int] = None) -> None: ...
    @staticmethod
    def parse(text: str, field: str = "toleration") -> Toleration: ...
    @staticmethod
    def all() -> Toleration: ...
    def tolerates(self, taint: Taint) -> bool: ...
    def to_string(self) -> str: ...
    def validate(self, field: str = "toleration") -> None: ...

def validate_taints(taints: Sequence[Taint], field: str = "spec.taints") -> None: ...
def apply_taint_changes(taints: Sequence[Taint], changes: Sequence[Union[TaintChange, str]], overwrite: bool = True) -> List[Taint]: ...
def parse_taint(text: str, field: str = "taint") -> Taint: ...
def parse_taint_changes(texts: Sequence[str], field: str = "taint") -> List[TaintChange]: ...
def parse_toleration(text: str, field: str = "toleration") -> Toleration: ...
def parse_tolerations(texts: Sequence[str], field: str = "toleration") -> List[Toleration]: ...
def tolerated(taint: Taint, tolerations: Sequence[Toleration]) -> bool: ...
def first_untolerated_filtering_taint(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Optional[Taint]: ...
def count_intolerable_prefer_no_schedule(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int: ...
def human_duration(duration: datetime.timedelta) -> str: ...

class NodeAddress:
    type: str
    address: str
    def __init__(self, **fields: Any) -> None: ...

class Node:
    name: str
    labels: Dict[str, str]
    annotations: Dict[str, str]
    taints: List[Taint]
    unschedulable: bool
    addresses: List[NodeAddress]
    ready_status: str
    kubelet_version: str
    created: Optional[datetime.datetime]
    capacity: Dict[str, Quantity]
    allocatable: Dict[str, Quantity]
    def __init__(self, **fields: Any) -> None: ...
    @staticmethod
    def from_json(node: JSONObject) -> Node: ...
    def to_json(self) -> JSONObject: ...
    def internal_ip(self) -> str: ...
    def roles(self) -> List[str]: ...
    def roles_column(self) -> str: ...
    def status_column(self) -> str: ...
    def age(self, now: Optional[datetime.datetime] = None) -> str: ...

class NodeSummary:
    @staticmethod
    def of(node: Node, gpu_resource: str) -> NodeSummary: ...
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def roles(self) -> str: ...
    @property
    def kubelet_version(self) -> str: ...
    @property
    def internal_ip(self) -> str: ...
    @property
    def created(self) -> Optional[datetime.datetime]: ...
    @property
    def taints(self) -> List[Taint]: ...
    @property
    def unschedulable(self) -> bool: ...
    @property
    def milli_cpu(self) -> int: ...
    @property
    def memory(self) -> int: ...
    @property
    def gpus(self) -> int: ...
    def taints_column(self) -> str: ...
    def age(self, now: Optional[datetime.datetime] = None) -> str: ...

class ImageRef:
    domain: str
    path: str
    tag: str
    digest: str
    @staticmethod
    def parse(text: str, field: str = "image") -> ImageRef: ...
    def registry(self) -> str: ...
    def repository(self) -> str: ...
    def normalized(self) -> str: ...
    def to_string(self) -> str: ...

class CatalogImage:
    name: str
    tags: List[str]
    gpu: bool
    cuda: str
    framework: str
    notes: str
    def __init__(self, **fields: Any) -> None: ...

class ImageCatalog:
    prefix: str
    images: List[CatalogImage]
    def __init__(self, **fields: Any) -> None: ...
    def find(self, name: str) -> Optional[CatalogImage]: ...
    def resolve(self, text: str, field: str = "image") -> str: ...

class PvcRequest:
    name: str
    storage_class: str
    size: Quantity
    access_modes: List[str]
    def __init__(self, *, name: str = ..., storage_class: str = ..., size: QuantityLike = ...,
                 access_modes: Sequence[AccessModeName] = ...) -> None: ...
    def validate(self, field: str = "pvc") -> None: ...

class PvcSource:
    claim_name: str
    read_only: bool
    def __init__(self, *, claim_name: str = ..., read_only: bool = ...) -> None: ...
class NfsSource:
    server: str
    path: str
    read_only: bool
    def __init__(self, *, server: str = ..., path: str = ..., read_only: bool = ...) -> None: ...
class HostPathSource:
    path: str
    type: str
    def __init__(self, *, path: str = ..., type: str = ...) -> None: ...
class EmptyDirSource:
    memory: bool
    size_limit: Optional[Quantity]
    def __init__(self, *, memory: bool = ..., size_limit: Optional[QuantityLike] = ...) -> None: ...

class ConfigMapSource:
    name: str
    def __init__(self, *, name: str = ...) -> None: ...
class ConfigMapRequest:
    name: str
    data: Dict[str, str]
    def __init__(self, *, name: str = ..., data: Dict[str, str] = ...) -> None: ...

VolumeSource = Union[PvcSource, NfsSource, HostPathSource, EmptyDirSource, ConfigMapSource]

class Volume:
    name: str
    source: VolumeSource
    def __init__(self, *, name: str = ..., source: VolumeSource = ...) -> None: ...
class VolumeMount:
    volume: str
    mount_path: str
    sub_path: str
    read_only: bool
    def __init__(self, *, volume: str = ..., mount_path: str = ..., sub_path: str = ..., read_only: bool = ...) -> None: ...
def validate_volumes(volumes: Sequence[Volume], mounts: Sequence[VolumeMount], field_prefix: str = "") -> None: ...

class Resources:
    cpu_request: Optional[Quantity]
    cpu_limit: Optional[Quantity]
    memory_request: Optional[Quantity]
    memory_limit: Optional[Quantity]
    gpus: int
    extra: Dict[str, Quantity]
    def __init__(self, *, cpu_request: Optional[QuantityLike] = ..., cpu_limit: Optional[QuantityLike] = ...,
                 memory_request: Optional[QuantityLike] = ..., memory_limit: Optional[QuantityLike] = ...,
                 gpus: int = ..., extra: Dict[str, QuantityLike] = ...) -> None: ...
    def validate(self, field: str = "resources") -> None: ...

class RoleSettings:
    """What one TFJob replica type ("PS", "Worker", "Chief", "Evaluator") gets over the workload's
    resources and nodeSelector (Arena's per-role flags)."""
    cpu_request: Optional[Quantity]
    cpu_limit: Optional[Quantity]
    memory_request: Optional[Quantity]
    memory_limit: Optional[Quantity]
    gpus: Optional[int]
    node_selector: Dict[str, str]
    port: int
    affinity_policy: str  # "spread" | "binpack" | "" (Arena's --worker/--ps-affinity-policy)
    affinity_required: bool  # Arena's --*-affinity-constraint required
    def __init__(self, *, cpu_request: Optional[QuantityLike] = ..., cpu_limit: Optional[QuantityLike] = ...,
                 memory_request: Optional[QuantityLike] = ..., memory_limit: Optional[QuantityLike] = ...,
                 gpus: Optional[int] = ..., node_selector: Dict[str, str] = ..., port: int = ...,
                 affinity_policy: str = ..., affinity_required: bool = ...) -> None: ...

class StageIn:
    source: str
    cache: str
    def __init__(self, *, source: str = ..., cache: str = ...) -> None: ...

DEFAULT_STAGE_OUT_GRACE_SECONDS: int

class SsdStaging:
    inputs: List[StageIn]
    results: str
    results_target: str
    grace_period_seconds: int
    def __init__(self, *, inputs: Sequence[StageIn] = ..., results: str = ..., results_target: str = ...,
                 grace_period_seconds: int = ...) -> None: ...
    def validate(self, field: str = "staging") -> None: ...
def shell_quote(text: str) -> str: ...

# ---- workload ------------------------------------------------------------------------------------
class MpiJobApi(enum.Enum):
    Auto = 0
    V1 = 1
    V2Beta1 = 2

class NodeSelectorOperator(enum.Enum):
    In = 0
    NotIn = 1
    Exists = 2
    DoesNotExist = 3
    Gt = 4
    Lt = 5

class EnvVar:
    name: str
    value: str
    field_path: str
    def __init__(self, name: str, value: str = "", *, field_path: str = "") -> None: ...

class NodeSelectorRequirement:
    key: str
    operator: NodeSelectorOperator
    values: List[str]
    def __init__(self, *, key: str = ..., operator: Union[NodeSelectorOperator, str] = ..., values: Sequence[str] = ...) -> None: ...

class Replicas:
    workers: int
    ps: int
    chief: int
    master: int
    evaluator: int
    def __init__(self, *, workers: int = ..., ps: int = ..., chief: int = ..., master: int = ..., evaluator: int = ...) -> None: ...

class TensorBoard:
    enabled: bool
    log_dir: str
    image: str
    def __init__(self, *, enabled: bool = ..., log_dir: str = ..., image: str = ...) -> None: ...

class Workload:
    """List and dict attributes return copies: assign a whole new list to change one."""
    name: str
    namespace: str
    kind: str
    mpi_api: MpiJobApi
    runtime: str
    image: str
    command: List[str]
    shell: str
    env: List[EnvVar]
    working_dir: str
    resources: Resources
    replicas: Replicas
    slots_per_worker: int
    tolerations: List[Toleration]
    node_selector: Dict[str, str]
    required_node_affinity: List[NodeSelectorRequirement]
    pvcs: List[PvcRequest]
    config_maps: List[ConfigMapRequest]
    volumes: List[Volume]
    mounts: List[VolumeMount]
    ssd: bool
    nfs: bool
    shm_size: Optional[Quantity]
    staging: Optional[SsdStaging]
    scheduler_name: str
    host_network: Optional[bool]
    host_ipc: Optional[bool]
    priority_class_name: str
    runtime_class_name: str
    queue: str
    gang: bool
    image_pull_secrets: List[str]
    labels: Dict[str, str]
    annotations: Dict[str, str]
    restart_policy: Optional[str]
    backoff_limit: Optional[int]
    clean_pod_policy: Optional[str]
    ttl_seconds_after_finished: Optional[int]
    active_deadline_seconds: Optional[int]
    image_pull_policy: str
    shell_program: str
    ps_image: str
    worker_image: str
    role_settings: Dict[str, RoleSettings]
    success_policy: str  # TFJob spec.successPolicy: "" or "AllWorkers"
    indexed: bool
    tensorboard: TensorBoard
    def __init__(self, **fields: Any) -> None: ...
    def validate(self) -> None: ...
    def derived_replica_names(self) -> List[str]: ...
    def _repr_html_(self) -> str: ...

def validate_workload(workload: Workload, profile: Union[Profile, str, None] = None) -> None: ...
def parse_workload_kind(text: str, field: str = "kind") -> str: ...

class SubmitOptions:
    kind: str
    name: str
    namespace: str
    image: str
    gpus: int
    workers: int
    ps: int
    chief: bool
    cpu: str
    memory: str
    cpu_limit: str
    memory_limit: str
    gpu_limit: int
    shm: str
    tolerations: List[str]
    selectors: List[str]
    data: List[str]
    data_dirs: List[str]
    pvc_create: List[str]
    env: List[str]
    ssd: bool
    nfs: bool
    @property
    def stage_in(self) -> List[str]: ...
    @stage_in.setter
    def stage_in(self, value: Union[str, Sequence[str]]) -> None: ...
    stage_out: str
    stage_out_grace: int
    working_dir: str
    tensorboard: bool
    logdir: str
    mpi_api: str
    runtime: str
    scheduler_name: str
    priority_class: str
    runtime_class: str
    queue: str
    gang: bool
    command: str
    argv: List[str]
    annotations: List[str]
    labels: List[str]
    image_pull_secrets: List[str]
    image_pull_policy: str
    tensorboard_image: str
    retry: int
    shell: str
    running_timeout: str
    ttl_after_finished: str
    clean_task_policy: str
    config_files: List[str]
    sync_mode: str
    sync_source: str
    sync_image: str
    ps_image: str
    worker_image: str
    evaluator: bool
    devices: List[str]
    # TFJob's per-role options (Arena's --worker-cpu, --ps-memory-limit, --chief-selector ...):
    worker_cpu: str
    worker_cpu_limit: str
    worker_memory: str
    worker_memory_limit: str
    worker_selectors: List[str]
    worker_port: int
    ps_cpu: str
    ps_cpu_limit: str
    ps_memory: str
    ps_memory_limit: str
    ps_selectors: List[str]
    ps_port: int
    chief_cpu: str
    chief_cpu_limit: str
    chief_memory: str
    chief_memory_limit: str
    chief_selectors: List[str]
    chief_port: int
    evaluator_cpu: str
    evaluator_cpu_limit: str
    evaluator_memory: str
    evaluator_memory_limit: str
    evaluator_selectors: List[str]
    worker_affinity_policy: str  # "none" | "spread" | "binpack"
    worker_affinity_constraint: str  # "preferred" | "required"
    ps_affinity_policy: str
    ps_affinity_constraint: str
    # More of Arena's training options: share_memory (tf, pytorch; Arena's --shm), nproc_per_node
    # (pytorch), mounts_on_launcher (mpi), success_policy (tf: "ChiefWorker" | "AllWorkers").
    share_memory: str
    nproc_per_node: str
    mounts_on_launcher: bool
    success_policy: str
    # Arena options gpupool refuses for every kind (the ValidationError says what is missing).
    role_sequence: str
    starting_timeout: str
    gputopology: bool
    rdma: bool
    model_name: str
    model_source: str
    ps_gpus: int
    def __init__(self, **options: Any) -> None: ...
    def to_workload(self) -> Workload: ...

@overload
def to_workload(options: SubmitOptions) -> Workload: ...
@overload
def to_workload(**options: Any) -> Workload: ...
def function_workload(func: Callable[..., Any], *, kind: str = "pytorch", num_nodes: int = 1,
                      packages: Optional[Sequence[str]] = None, args: Optional[Dict[str, Any]] = None,
                      **options: Any) -> Workload:
    """The Workload that runs func(**args) on num_nodes nodes; options are submit()'s keywords."""
def parse_key_value(text: str, field: str) -> Tuple[str, str]: ...
def parse_count(text: str, field: str) -> int: ...

# ---- profiles, rendering, manifests ---------------------------------------------------------------
class NfsMount:
    sub_path: str
    mount_path: str
    def __init__(self, **fields: Any) -> None: ...
class NfsShare:
    server: str
    path: str
    datasets: NfsMount
    home: NfsMount
    def __init__(self, **fields: Any) -> None: ...
class LocalSsd:
    host_path: str
    mount_path: str
    def __init__(self, **fields: Any) -> None: ...
class GpuConvention:
    resource: str
    scheduler_name: str
    runtime_class: str
    env: List[EnvVar]
    def __init__(self, **fields: Any) -> None: ...

class Profile:
    name: str
    description: str
    default_namespace: str
    catalog: ImageCatalog
    storage_classes: Dict[str, str]
    nfs: Optional[NfsShare]
    local_ssds: List[LocalSsd]
    gpu: GpuConvention
    host_network: bool
    host_ipc: bool
    limits_from_requests: bool
    image_pull_policy: str
    tensorboard_image: str
    default_queue: str
    def __init__(self, **fields: Any) -> None: ...
    @staticmethod
    def builtin(name: str) -> Profile: ...
    @staticmethod
    def builtin_names() -> List[str]: ...
    @staticmethod
    def resolve(name_or_path: str) -> Profile: ...
    @staticmethod
    def load(path: str) -> Profile: ...
    @staticmethod
    def parse(text: str, filename: str = "<profile>") -> Profile: ...
    def storage_class(self, alias_or_name: str) -> str: ...

class Submission:
    @property
    def objects(self) -> List[JSONObject]: ...
    def workload(self) -> JSONObject: ...
    def to_yaml(self) -> str: ...
    def to_json(self) -> str: ...
    def __len__(self) -> int: ...
    def _repr_html_(self) -> str: ...

def render(workload: Workload, profile: Union[Profile, str, None] = None) -> Submission: ...
def to_yaml(objects: Union[JSONObject, Sequence[JSONObject]]) -> str: ...
def to_json(objects: Union[JSONObject, Sequence[JSONObject]]) -> str: ...
def parse_manifests(text: str, filename: str = "<manifest>") -> List[JSONObject]: ...

# ---- the cluster facade --------------------------------------------------------------------------
class NodeRow:
    @property
    def node(self) -> NodeSummary: ...
    @property
    def gpus_total(self) -> int: ...
    @property
    def gpus_allocated(self) -> int: ...

class NodeList:
    @property
    def rows(self) -> List[NodeRow]: ...
    @property
    def gpu_resource(self) -> str: ...
    @property
    def allocation_from_own_namespace_only(self) -> bool: ...
    @property
    def observed(self) -> datetime.datetime: ...
    def to_text(self, wide: bool = False) -> str: ...
    def to_top_text(self) -> str: ...
    def to_html(self) -> str: ...
    def _repr_html_(self) -> str: ...
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> NodeRow: ...
    def __iter__(self) -> Iterator[NodeRow]: ...

class Instance:
    name: str
    phase: str
    node: str
    node_ip: str
    created: datetime.datetime

class JobInfo:
    name: str
    namespace: str
    kind: str
    status: Literal["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "UNKNOWN"]
    priority: str
    created: datetime.datetime
    started: Optional[datetime.datetime]
    finished: Optional[datetime.datetime]
    observed: datetime.datetime
    instances: List[Instance]
    tensorboard_url: Optional[str]
    notes: List[str]
    gpus_requested: int
    gpus_allocated: int
    queue: Optional[QueueStatus]
    def trainer(self) -> str: ...
    def training_duration(self) -> datetime.timedelta: ...
    def to_text(self) -> str: ...
    def to_html(self) -> str: ...
    def progress_text(self) -> str: ...
    def to_json(self) -> JSONObject: ...
    def _repr_html_(self) -> str: ...

def jobs_to_text(jobs: Sequence[JobInfo], with_namespace: bool = False) -> str: ...
def top_jobs_to_text(jobs: Sequence[JobInfo]) -> str: ...

class SubmitResult:
    name: str
    namespace: str
    created: List[str]
    submission: Submission

class ApplyResult:
    lines: List[str]
    objects: List[JSONObject]

class PodExplanation:
    class Verdict:
        node: str
        fits: bool
        reasons: List[str]
    pod: str
    phase: str
    node: str
    events: List[str]
    nodes: List[PodExplanation.Verdict]
    quota: str

Verdict = PodExplanation.Verdict

class Explanation:
    name: str
    pods: List[PodExplanation]
    notes: List[str]
    def to_text(self) -> str: ...
    def to_html(self) -> str: ...
    def _repr_html_(self) -> str: ...

class QuotaInfo:
    name: str
    resources: List[Tuple[str, str, str]]

class QueueStatus:
    queue: str
    workload: str
    state: str
    position: int
    reason: str
    def summary(self) -> str: ...

class FlavorQuota:
    flavor: str
    resource: str
    nominal: str
    used: str

class ClusterQueueInfo:
    name: str
    cohort: str
    queueing_strategy: str
    quotas: List[FlavorQuota]
    pending: int
    admitted: int

class LocalQueueInfo:
    namespace: str
    name: str
    cluster_queue: str
    pending: int
    admitted: int

class QueuesReport:
    local_queues: List[LocalQueueInfo]
    cluster_queues: List[ClusterQueueInfo]
    def to_text(self) -> str: ...

class PvcInfo:
    name: str
    status: str
    volume: str
    capacity: str
    access_modes: str
    storage_class: str
    created: datetime.datetime

def pvcs_to_text(pvcs: Sequence[PvcInfo], now: Optional[datetime.datetime] = None) -> str: ...

class ExecResult:
    @property
    def exit_code(self) -> int: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...

class PortForward:
    @property
    def ports(self) -> List[Tuple[int, int]]: ...
    @property
    def local_port(self) -> int: ...
    @property
    def url(self) -> str: ...
    def stop(self) -> None: ...
    def __enter__(self) -> PortForward: ...
    def __exit__(self, *exc: Any) -> None: ...

PortSpec = Union[str, int, Tuple[int, int]]

class LogIterator(Iterator[str]):
    def __next__(self) -> str: ...
    def close(self) -> None: ...
    def __enter__(self) -> LogIterator: ...
    def __exit__(self, *exc: Any) -> None: ...

class Cluster:
    @staticmethod
    def connect(*, kubeconfig: Optional[str] = None, context: Optional[str] = None, namespace: Optional[str] = None,
                profile: Optional[str] = None) -> Cluster: ...
    @property
    def namespace(self) -> str: ...
    @property
    def profile(self) -> Profile: ...
    def mpi_job_api(self) -> MpiJobApi: ...
    def nodes(self) -> NodeList: ...
    def taint(self, node: str, *changes: Union[str, TaintChange], overwrite: bool = False) -> Literal["tainted", "untainted", "modified"]: ...
    def pvcs(self) -> List[PvcInfo]: ...
    def create_pvc(self, pvc: PvcRequest) -> None: ...
    def delete_pvc(self, name: str) -> None: ...
    def quotas(self) -> List[QuotaInfo]: ...
    def queues(self) -> QueuesReport: ...
    def render(self, workload: Workload, use_server_mpi_api: bool = True) -> Submission: ...
    @overload
    def submit(self, workload: Union[Workload, SubmitOptions], *, dry_run: bool = False) -> SubmitResult: ...
    @overload
    def submit(self, kind: Optional[str] = None, *, dry_run: bool = False, **options: Any) -> SubmitResult: ...
    def submit_function(self, func: Callable[..., Any], *, kind: str = "pytorch", num_nodes: int = 1,
                        packages: Optional[Sequence[str]] = None, args: Optional[Dict[str, Any]] = None,
                        dry_run: bool = False, **options: Any) -> SubmitResult:
        """Runs func(**args) as a job on num_nodes nodes; options are submit()'s keywords."""
    def apply(self, manifests: Union[str, Sequence[JSONObject]], *, dry_run: bool = False,
              force_conflicts: bool = False) -> ApplyResult: ...
    def get(self, name: str) -> JobInfo: ...
    def list(self) -> List[JobInfo]: ...
    def list_all_namespaces(self) -> List[JobInfo]: ...
    def top_jobs(self) -> List[JobInfo]: ...
    def delete(self, name: str) -> str: ...
    def logs(self, name: str, *, instance: str = "", container: str = "", follow: bool = False,
             tail_lines: Optional[int] = None) -> LogIterator: ...
    def wait(self, name: str, until: Literal["Running", "Succeeded", "Finished"] = "Running", timeout: Seconds = 300.0,
             *, on_change: Optional[Callable[[JobInfo], None]] = None, progress: Optional[bool] = None) -> JobInfo: ...
    def explain(self, job: Union[str, Workload]) -> Explanation: ...
    def exec(self, name: str, command: Sequence[str], *, instance: Optional[str] = None, container: Optional[str] = None,
             stdin: Union[str, bytes, None] = None, tty: bool = False) -> ExecResult: ...
    def port_forward(self, name: str, ports: Union[PortSpec, Sequence[PortSpec]], *,
                     instance: Optional[str] = None) -> PortForward: ...
    def tensorboard(self, name: str, *, port: int = 0) -> PortForward: ...

def connect(*, kubeconfig: Optional[str] = None, context: Optional[str] = None, namespace: Optional[str] = None,
            profile: Optional[str] = None) -> Cluster: ...

class EmbeddedCluster(Cluster):
    def __init__(self, *, topology: str = "seed", users: Sequence[str] = (), profile: Optional[str] = None,
                 manual_clock: Optional[bool] = None, mpijob_version: Literal["v1", "v2beta1"] = "v1", port: int = 0,
                 kubeconfig_dir: str = "", state: Union[bool, str] = False,
                 run: Literal["simulate", "local", "container"] = "simulate") -> None: ...
    def __enter__(self) -> EmbeddedCluster: ...
    def __exit__(self, *exc: Any) -> None: ...
    def stop(self) -> None: ...
    @property
    def stopped(self) -> bool: ...
    @property
    def url(self) -> str: ...
    @property
    def joined(self) -> bool: ...
    @property
    def port(self) -> int: ...
    @property
    def kubeconfig_dir(self) -> str: ...
    def admin_kubeconfig(self) -> str: ...
    def kubeconfig(self, user: str) -> str: ...
    def cert_kubeconfig(self, user: str) -> str: ...
    def connect(self, user: str, *, profile: Optional[str] = None) -> Cluster: ...  # type: ignore[override]
    def now(self) -> datetime.datetime: ...
    def advance(self, by: Seconds) -> None: ...
