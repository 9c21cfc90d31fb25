"""Sweep manifests: YAML files that pin trace, cluster, schedulers, ρ values, seeds and parameters.

A manifest is validated once, completely, with pydantic; unknown keys and unknown scheduler names
are refused, naming the field. The same manifest replays to the same numbers (AR-8): every random
choice is drawn from a generator seeded from ``seeds``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

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


class PowerStatesSpec(_Strict):
    """The measured sleep state of every simulated node, named as the calibration file's
    schema-2 power states name them (``Calibration.sleep_power_w``, ``.wake_energy_j``,
    ``PowerStates.wake_time_s``; ``suspend_*`` from its ``suspend`` transition's ``time_s`` and
    ``energy_j``). The wake time is until the node takes pods again (Ready).

    The defaults are an **assumption**, sized for a mini PC in suspend-to-RAM (ACPI S3), the
    same as the PDU simulator's ``NodePower`` (``meter/simulator/node.py``): 3 W asleep, 2 s to
    suspend at the node's idle draw, and a wake of 15 s until the node is Ready again (5 s
    resume plus about 10 s for the kubelet to report) at the node's draw at 50 % load. ``None``
    energies are those times × those draws on each node's own measured curve. A sweep on real
    hardware should put the calibrated figures here. ``wake_failure_rate`` is the fraction of
    wakes that never reach Ready (seeded), to exercise the failed-wake path.
    """

    sleep_power_w: float = Field(default=3.0, ge=0)
    suspend_time_s: float = Field(default=2.0, gt=0)
    suspend_energy_j: float | None = Field(default=None, ge=0)
    wake_time_s: float = Field(default=15.0, gt=0)
    wake_energy_j: float | None = Field(default=None, ge=0)
    wake_failure_rate: float = Field(default=0.0, ge=0, lt=1)


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

    ``power_states`` is the nodes' measured sleep state (used only under a power manager:
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
    power_states: PowerStatesSpec = PowerStatesSpec()
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
