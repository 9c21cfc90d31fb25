"""Typed scheduler and emulator parameters: the ``params`` section of a sweep manifest, given to
every plug-in's ``make`` (the manifest itself is parsed by :mod:`eams.scheduler.bench.manifest`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Params(BaseModel):
    """Scheduler and emulator parameters (units in the names).

    ``extender_window_ms`` is the batch window W of the ``eams-batch`` scheduler's extender, ms
    of simulated time (study §4: 200 ms; > 0); the ``eams`` scheduler always runs the extender
    without a window (each pod's immediate single-pod bid score). Both replay
    deterministically: the extender's clock is moved in simulated time (issue 33).
    ``extender_weight`` is the KubeSchedulerConfiguration extender ``weight``;
    ``telemetry_period_s`` the agents' period in simulated seconds.
    ``percentage_of_nodes_to_score`` is kube-scheduler's setting of that name for the per-pod
    schedulers: 0 = its adaptive default (all nodes below 100, 420 of 1,000), 100 = every
    feasible node. Unknown keys are refused, as everywhere in a manifest.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    batch_window_s: float = Field(default=0.2, ge=0)
    percentage_of_nodes_to_score: int = Field(default=0, ge=0, le=100)
    milp_time_limit_s: float = Field(default=1.0, gt=0)
    milp_max_batch: int = Field(default=64, ge=1)
    milp_candidates_per_pod: int = Field(default=16, ge=1)
    target_utilisation_pct: float = Field(default=40, gt=0, lt=100)
    extender_weight: int = Field(default=5, ge=1)
    extender_window_ms: float = Field(default=200.0, gt=0)
    extender_timeout_s: float = Field(default=5.0, gt=0)
    telemetry_period_s: float = Field(default=5.0, gt=0)
