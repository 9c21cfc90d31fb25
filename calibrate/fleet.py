"""``eams calibrate fleet``: sweep several nodes one after another from one place.

Inventory (YAML)::

    meter: snmp://public@10.0.0.2        # the PDU all nodes hang off (a node may override it)
    out_dir: calibration                 # where NAME.json files go (relative to the inventory)
    reference: mini-1                    # speed reference node (default: the first node)
    identity: ~/.ssh/eams_ed25519        # SSH defaults (optional)
    known_hosts: ~/.ssh/known_hosts
    nodes:
      mini-1: {ssh: root@10.0.0.11, outlet: 1}
      mini-2: {ssh: root@10.0.0.12:2222, outlet: 2}
      bench:  {outlet: 3}                # no ssh: this machine

Nodes are swept in the order listed; one that fails does not stop the others. Speeds are
relative to the reference node's bogo-ops/s at full load (each node is its own reference when
the reference node failed). One summary table ends the run.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eams.calibrate.calfile import Calibration
from eams.calibrate.errors import CalibrationError, SweepError
from eams.calibrate.run import SpeedReferenceSpec, SshOptions, fit_and_save, sweep_node
from eams.calibrate.sweep import ProgressCallback, SweepPlan
from eams.calibrate.sweeprecord import SweepRecord
from eams.errors import EamsError
from eams.validation import describe_validation_error
from eams.yamlfile import read_yaml


class NodeEntry(BaseModel):
    """One node of the inventory: its SSH target (``None``: this machine) and outlet."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ssh: str | None = None
    outlet: Annotated[int, Field(ge=1)]
    meter: str | None = None


class Inventory(BaseModel):
    """The fleet inventory (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    meter: str | None = None
    out_dir: Path = Path("calibration")
    reference: str | None = None
    identity: Path | None = None
    known_hosts: Path | None = None
    nodes: Annotated[dict[str, NodeEntry], Field(min_length=1)]

    @classmethod
    def load(cls, path: Path) -> Inventory:
        """Read and check an inventory; relative paths are taken from its folder.

        Raises
        ------
        SweepError
            Naming the file and field: unreadable, not YAML, a missing or unknown field, a
            node without a meter, or a reference that is not a node.
        """
        raw = read_yaml(path, SweepError)
        try:
            inventory = cls.model_validate(raw)
        except ValidationError as exc:
            problems = describe_validation_error(
                exc, template="field '{path}': {message}", dotted_index=True
            )
            raise SweepError(f"{path}: {problems}") from exc
        for name, entry in inventory.nodes.items():
            if (entry.meter or inventory.meter) is None:
                raise SweepError(f"{path}: field 'nodes.{name}.meter': no meter for this node")
        if inventory.reference is not None and inventory.reference not in inventory.nodes:
            raise SweepError(f"{path}: field 'reference': {inventory.reference!r} is not a node")
        base = path.parent

        def rooted(p: Path | None) -> Path | None:
            return None if p is None else base / p.expanduser()

        return inventory.model_copy(
            update={
                "out_dir": rooted(inventory.out_dir),
                "identity": rooted(inventory.identity),
                "known_hosts": rooted(inventory.known_hosts),
            }
        )


@dataclass(frozen=True, slots=True)
class NodeOutcome:
    """What happened to one node: its calibration and file, or the error (one line)."""

    node: str
    calibration: Calibration | None
    path: Path | None
    error: str | None


def run_fleet(
    inventory: Inventory,
    *,
    plan: SweepPlan | None = None,
    accept_unknown_host: bool = False,
    progress: Callable[[str], AbstractContextManager[ProgressCallback]] | None = None,
) -> list[NodeOutcome]:
    """Sweep every node in order, then fit each against the reference node's speed.

    ``progress(node)`` (e.g. :func:`eams.calibrate.progress.progress_bar`) gives each node's
    sweep its progress callback.

    Returns
    -------
    list of NodeOutcome
        In inventory order; a failed node has ``error`` set (its partial data, if any, is in
        ``NAME.partial.json`` as the message says).
    """
    options = SshOptions(inventory.identity, inventory.known_hosts, accept_unknown_host)
    records: dict[str, SweepRecord] = {}
    errors: dict[str, str] = {}
    for name, entry in inventory.nodes.items():
        try:
            with progress(name) if progress else nullcontext(None) as callback:
                records[name] = sweep_node(
                    name,
                    meter_url=entry.meter or inventory.meter or "",
                    outlet=entry.outlet,
                    out=inventory.out_dir / f"{name}.json",
                    ssh=entry.ssh,
                    ssh_options=options,
                    plan=plan,
                    progress=callback,
                )
        except EamsError as exc:
            errors[name] = str(exc)
    reference_name = inventory.reference or next(iter(inventory.nodes))
    reference = SpeedReferenceSpec()
    ref_record = records.get(reference_name)
    ref_full = [lv for lv in (ref_record.levels if ref_record else []) if lv.commanded_pct == 100]
    if ref_full and ref_full[-1].bogo_ops_per_s:
        reference = SpeedReferenceSpec(reference_name, ref_full[-1].bogo_ops_per_s)
    outcomes = []
    for name in inventory.nodes:
        if name in errors:
            outcomes.append(NodeOutcome(name, None, None, errors[name]))
            continue
        out = inventory.out_dir / f"{name}.json"
        try:
            outcomes.append(
                NodeOutcome(name, fit_and_save(records[name], out, reference), out, None)
            )
        except CalibrationError as exc:
            outcomes.append(NodeOutcome(name, None, None, str(exc)))
    return outcomes
