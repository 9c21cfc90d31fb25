"""Sweep manifests: YAML files that pin trace, cluster, schedulers, ρ values, seeds and parameters.

A manifest is validated once, completely, with pydantic; unknown keys and unknown scheduler names
are refused, naming the field. The same manifest replays to the same numbers (AR-8): every random
choice is drawn from a generator seeded from ``seeds``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from eams.scheduler.bench.errors import ManifestError
from eams.scheduler.policies import available
from eams.scheduler.policies.base import Params
from eams.validation import describe_validation_error


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaintSpec(_Strict):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "NoExecute", "PreferNoSchedule"] = "NoSchedule"


class TolerationSpec(_Strict):
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
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


class ClusterSpec(_Strict):
    """The simulated cluster.

    ``empty_node`` says what an empty node draws: ``off`` (powered down, 0 W, the study's §5.1
    wake-cost assumption) or ``idle`` (its measured active-idle power). ``power_cap_ratio`` sets
    each node's cap as a multiple of its measured power at 100 % load.
    """

    nodes: int = Field(default=1000, ge=1)
    server_models: int = Field(default=8, ge=1)
    min_cores: int = Field(default=8, ge=1)
    max_cores: int = Field(default=64, ge=1)
    hw_year_from: int = 2016
    hw_year_to: int = 2030
    max_pods_per_node: int = Field(default=110, ge=1)
    empty_node: Literal["off", "idle"] = "off"
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
    """One sweep: every scheduler × every ρ × every seed is one cell."""

    name: str
    trace: TraceSpec = TraceSpec()
    cluster: ClusterSpec = ClusterSpec()
    schedulers: list[str]
    rho: list[float] = Field(min_length=1)
    seeds: list[int] = Field(min_length=1)
    params: Params = Params()
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
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ManifestError(f"{path}: cannot read manifest: {exc}") from exc
    return parse_manifest(data, source=str(path))


def parse_manifest(data: object, source: str = "<manifest>") -> Manifest:
    """Validate an already-parsed manifest mapping; errors name ``source`` and the field."""
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(f"{source}: {describe_validation_error(exc)}") from exc
