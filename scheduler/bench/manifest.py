"""Sweep manifests: YAML files that pin trace, cluster, schedulers, ρ values, seeds and parameters.

A manifest is validated once, completely, with pydantic; unknown keys and unknown scheduler names
are refused, naming the field. The same manifest replays to the same numbers (AR-8): every random
choice is drawn from a generator seeded from ``seeds``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from eams.kube.taints import Effect, Operator
from eams.scheduler.bench.errors import ManifestError
from eams.scheduler.policies import available
from eams.scheduler.policies.base import Params
from eams.scheduler.power.policy import PolicyConfig
from eams.validation import describe_validation_error
from eams.yamlfile import read_yaml


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaintSpec(_Strict):
    key: str
    value: str = ""
    effect: Effect = "NoSchedule"


class TolerationSpec(_Strict):
    key: str = ""
    operator: Operator = "Equal"
    value: str = ""
    effect: str = ""


class NodeGroup(_Strict):
    """A fraction of the nodes that carries extra labels and taints."""

    fraction: float = Field(gt=0, le=1)
    labels: dict[str, str] = {}
    taints: list[TaintSpec] = []


class PodClass(_Strict):
    """A fraction of the pods that carries tolerations and a nodeSelector."""

    fraction: float = Field(gt=0, le=1)
    tolerations: list[TolerationSpec] = []
    node_selector: dict[str, str] = {}


class Source(_Strict):
    """A published source of sleep-state figures: its ``title`` and ``url``, and ``figures``,
    which of the state's numbers it gives and where in it (a table, a section; or the document
    that relayed them when the figures were not read in the original)."""

    title: str = Field(min_length=1)
    url: str = Field(pattern=r"^https?://\S+$")
    figures: str = Field(min_length=1)


class PowerStatesSpec(_Strict):
    """The sleep state of every simulated node, named as the calibration file's schema-2 power
    states name them (``Calibration.sleep_power_w``, ``.wake_energy_j``,
    ``PowerStates.wake_time_s``; ``suspend_*`` from its ``suspend`` transition's ``time_s`` and
    ``energy_j``). The wake time is until the node takes pods again (Ready).

    ``state``: ``suspend-to-ram`` (ACPI S3: memory kept, a resume) or ``soft-off`` (ACPI S5: a
    boot). The draw asleep is either ``sleep_power_w`` (the same for every node) or
    ``sleep_power_fraction_of_max`` × each node's measured power at 100 % load (server states
    are published that way). ``None`` energies are the times × the node's own measured draw: its
    idle draw while suspending, its draw at 50 % load while waking (the PDU simulator's
    ``NodePower`` boot-power default). ``wake_failure_rate`` is the fraction of wakes that never
    reach Ready (seeded), to exercise the failed-wake path.

    Figures without a source are refused: ``sources`` names the publication of every number
    (:class:`Source`; what is an assumption of this project says so in its ``figures``). The
    default, :data:`MINI_PC_S3`, is a mini PC in suspend-to-RAM (the testbed); the 1,000-node
    manifest carries server figures. A sweep on real hardware should put the calibrated figures
    here.

    Raises
    ------
    ValueError
        (as a ManifestError when read from a manifest) without a source, or with neither or both
        of the two sleep draws.
    """

    state: Literal["suspend-to-ram", "soft-off"] = "suspend-to-ram"
    sleep_power_w: float | None = Field(default=None, ge=0)
    sleep_power_fraction_of_max: float | None = Field(default=None, ge=0, le=1)
    suspend_time_s: float = Field(gt=0)
    suspend_energy_j: float | None = Field(default=None, ge=0)
    wake_time_s: float = Field(gt=0)
    wake_energy_j: float | None = Field(default=None, ge=0)
    wake_failure_rate: float = Field(default=0.0, ge=0, lt=1)
    sources: list[Source] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_sleep_draw(self) -> PowerStatesSpec:
        if (self.sleep_power_w is None) == (self.sleep_power_fraction_of_max is None):
            raise ValueError(
                "give exactly one of sleep_power_w and sleep_power_fraction_of_max "
                f"(got {self.sleep_power_w} and {self.sleep_power_fraction_of_max})"
            )
        return self


MINI_PC_S3 = PowerStatesSpec(
    state="suspend-to-ram",
    sleep_power_w=3.0,
    suspend_time_s=2.0,
    wake_time_s=15.0,
    sources=[
        Source(
            title="EPA ENERGY STAR / Climate Savers Computing Initiative, Power Management "
            "Virtual Summit: Computer Power Management (slide 5)",
            url="http://downloads.energystar.gov/dl_00009/CSCI-EPA_Power_Management_Virtual_Summit.zip",
            figures="sleep_power_w 3: 'System Standby (S3) drops power to 1-3 W' (its top)",
        ),
        Source(
            title="Linux kernel documentation, System Power Management States "
            "(Documentation/power/states.txt)",
            url="https://www.kernel.org/doc/Documentation/power/states.txt",
            figures="5 s of wake_time_s: 'Suspend-to-RAM to the On state should take about "
            "3-5 seconds'; the other 10 s (the kubelet reporting Ready) and suspend_time_s "
            "2 s are this project's assumptions",
        ),
    ],
)
"""A mini PC in suspend-to-RAM: 3 W asleep, 2 s to suspend, 15 s until Ready again (the same
figures as the PDU simulator's ``NodePower``); the testbed's sleep state."""


class PowerManagerSpec(_Strict):
    """Which power managements every scheduler runs under: ``none`` (every node stays awake;
    an empty node draws its measured idle power) and ``policy`` (the power manager,
    :class:`eams.scheduler.power.policy.PowerPolicy` with ``policy``, in simulated time).
    ``no_sleep_nodes``: the first this many nodes hold a role that forbids sleeping (the k3s
    server, the PDU owner). ``tick_s``: the manager's loop period — it is asked at most once
    per tick (after the events of an instant, or at the instant the policy names), as the live
    manager polls its cluster (cluster-autoscaler's ``--scan-interval`` is 10 s)."""

    modes: list[Literal["none", "policy"]] = Field(default=["none", "policy"], min_length=1)
    policy: PolicyConfig = PolicyConfig()
    no_sleep_nodes: int = Field(default=0, ge=0)
    tick_s: float = Field(default=5.0, ge=0)


class ClusterSpec(_Strict):
    """The simulated cluster.

    ``power_states`` is the nodes' sleep state (used only under a power manager:
    without one every node stays awake and an empty node draws its measured active idle).
    ``power_cap_ratio`` sets each node's cap as a multiple of its measured power at 100 % load.
    """

    nodes: int = Field(default=1000, ge=1)
    server_models: int = Field(default=8, ge=1)
    min_cores: int = Field(default=8, ge=1)
    max_cores: int = Field(default=64, ge=1)
    hw_year_from: int = 2016
    hw_year_to: int = 2030
    max_pods_per_node: int = Field(default=110, ge=1)
    power_states: PowerStatesSpec = MINI_PC_S3
    power_cap_ratio: float = Field(default=1.0, gt=0)
    groups: list[NodeGroup] = []


class SyntheticSpec(_Strict):
    """Synthetic workload: Poisson arrivals, lognormal durations, cpu drawn from ``cpu_choices``."""

    pods: int = Field(default=2000, ge=1)
    cpu_choices: list[float] = [0.5, 1, 2, 4, 8]
    duration_median_s: float = Field(default=600, gt=0)
    duration_sigma: float = Field(default=1.0, ge=0)
    mem_mib_per_core: float = Field(default=2048, ge=0)


class TraceSpec(_Strict):
    """Where the pods come from; ``path`` is relative to the data folder (``EAMS_DATA_DIR``)."""

    source: Literal["synthetic", "alibaba-gpu-2023", "alibaba-2017-batch"] = "synthetic"
    path: str | None = None
    max_pods: int | None = Field(default=None, ge=1)
    max_duration_s: float | None = Field(default=None, gt=0)
    tenants: int = Field(default=4, ge=1)
    tenant_quotas: list[float] | None = None
    synthetic: SyntheticSpec = SyntheticSpec()
    classes: list[PodClass] = []


class Manifest(_Strict):
    """One sweep: every scheduler × power-manager mode × ρ × seed is one cell.

    ``workers``: worker processes of the local Dask cluster the cells run on (``eams bench
    sweep --workers`` overrides it; a cluster given with ``--cluster`` has its own). It changes
    how fast a sweep runs, never its figures, and is left out of ``results.json``."""

    name: str
    trace: TraceSpec = TraceSpec()
    cluster: ClusterSpec = ClusterSpec()
    schedulers: list[str]
    rho: list[float] = Field(min_length=1)
    seeds: list[int] = Field(min_length=1)
    params: Params = Params()
    power_manager: PowerManagerSpec = PowerManagerSpec()
    workers: int = Field(default=2, ge=1)

    @field_validator("schedulers")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        known = available()
        for name in names:
            if name not in known:
                raise ValueError(f"unknown scheduler {name!r}; known: {', '.join(sorted(known))}")
        return names

    @field_validator("rho")
    @classmethod
    def _positive(cls, values: list[float]) -> list[float]:
        for value in values:
            if not value > 0:
                raise ValueError(f"ρ must be > 0, got {value}")
        return values


def load_manifest(path: str | Path) -> Manifest:
    """Read and validate a manifest file.

    Raises
    ------
    ManifestError
        When the file is missing, is not YAML, or a field is invalid (the field path is named).
    """
    return parse_manifest(read_yaml(path, ManifestError), source=str(path))


def parse_manifest(data: object, source: str = "<manifest>") -> Manifest:
    """Validate an already-parsed manifest mapping; errors name ``source`` and the field."""
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(f"{source}: {describe_validation_error(exc)}") from exc
