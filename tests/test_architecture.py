"""The import rules of ``docs/architecture.md`` hold for every module of the installed package.

Each module of ``eams`` is parsed (``ast``), and every import it makes is collected: top-level
ones, lazy ones inside functions, relative ones (resolved against the module's package) and
``importlib.import_module("…")`` with a literal name. Each import is an arrow between two
layers; an arrow the table below does not allow fails the test, naming the file and the module
it imports.
"""

from __future__ import annotations

import ast
import importlib
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Layer → the layers it may import (besides itself). The data flow is
# meter → calibrate → agent → scheduler; the ground (eams/*.py) is under everything and imports
# no component; the demo is the roof. eams.cli (the command root and its one-line error edge,
# run_cli) is ground: it names each group by module path and imports it only when called.
# eams.kube, the one Kubernetes layer, sits on the ground: it imports only the ground, and every
# part that talks to Kubernetes or reads its objects imports it.
ALLOWED: dict[str, set[str]] = {
    "ground": set(),
    "kube": {"ground"},
    "meter": {"ground"},
    # the power-state actuators (issue 31): one module per method, the safety rules, the
    # transitions; calibrate measures their costs, so they sit below it
    "actuators": {"ground", "kube", "meter"},
    "calibrate": {"ground", "kube", "meter", "actuators"},
    "agent": {"ground", "meter", "calibrate"},
    "scheduler": {
        "ground",
        "kube",
        "calibrate",
        "scheduler.auction",
        "scheduler.extender",
        "scheduler.bench",
        "scheduler.policies",
        "scheduler.record",
    },
    "scheduler.auction": {"ground", "calibrate", "scheduler"},
    # The decision record (issue 19): the ground and the scheduler's error root only, so the
    # extender, the power manager, the bench and the demo can all write and read it.
    "scheduler.record": {"ground", "kube", "scheduler"},
    "scheduler.extender": {
        "ground",
        "kube",
        "calibrate",
        "scheduler",
        "scheduler.auction",
        "scheduler.record",
    },
    "scheduler.policies": {
        "ground",
        "kube",
        "calibrate",
        "scheduler",
        "scheduler.auction",
        "scheduler.extender",
        "scheduler.record",
    },
    "scheduler.bench": {
        "ground",
        "kube",
        "calibrate",
        "scheduler",
        "scheduler.auction",
        "scheduler.extender",
        "scheduler.policies",
        "scheduler.record",
        "scheduler.power",  # the manager's policy core, run in simulated time
    },
    # eams power (and the power manager of issue 14): switches outlets and sends magic packets
    # (meter) through the power-state actuators; reads the calibrations (calibrate).
    "scheduler.power": {
        "ground",
        "kube",
        "meter",
        "actuators",
        "calibrate",
        "scheduler",
        "scheduler.record",
    },
    "demo": {
        "ground",
        "kube",
        "meter",
        "actuators",
        "calibrate",
        "agent",
        "scheduler",
        "scheduler.auction",
        "scheduler.extender",
        "scheduler.bench",
        "scheduler.policies",
        "scheduler.record",
        "scheduler.power",
    },
}
SCHEDULER_PARTS = ("auction", "extender", "bench", "policies", "record", "power")


def layer(module: str) -> str | None:
    """The layer of a module name of ours, ``None`` for a module that is not ours."""
    parts = module.split(".")
    if parts[0] != "eams":
        return None
    if len(parts) == 1:
        return "ground"
    head = parts[1]
    if head in ("kube", "meter", "actuators", "calibrate", "agent", "demo"):
        return head
    if head == "scheduler":
        if len(parts) > 2 and parts[2] in SCHEDULER_PARTS:
            return f"scheduler.{parts[2]}"
        return "scheduler"
    return "ground"


def modules() -> Iterator[tuple[str, Path, bool]]:
    """Every module of the installed ``eams`` package: (dotted name, file, is a package)."""
    seen: set[Path] = set()
    for package in _packages():
        for folder in importlib.import_module(package).__path__:
            for path in sorted(Path(folder).glob("*.py")):
                if path in seen:
                    continue
                seen.add(path)
                if path.name == "__init__.py":
                    yield package, path, True
                else:
                    yield f"{package}.{path.stem}", path, False


def _packages() -> list[str]:
    """The packages the distribution declares (``tests/test_packaging.py`` checks that every
    package folder is declared), each imported to find where it is installed."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return sorted(config["packages"])


def imports(path: Path, module: str, is_package: bool) -> set[str]:
    """Every module ``path`` imports: top level, lazy, relative (resolved), import_module."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            target = ".".join(p for p in (base, node.module or "") if p)
            found.add(target)
            if node.module is None:  # from . import x: x is a module
                found |= {f"{target}.{alias.name}" for alias in node.names}
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def forbidden_arrows() -> list[str]:
    """Every import that breaks :data:`ALLOWED`, as ``file: layer → layer (module)``."""
    broken = []
    for module, path, is_package in modules():
        source = layer(module)
        assert source is not None
        for target in sorted(imports(path, module, is_package)):
            dest = layer(target)
            if dest is None or dest == source or dest in ALLOWED[source]:
                continue
            broken.append(f"{path.resolve().relative_to(ROOT)}: {source} → {dest} ({target})")
    return broken


def test_every_import_follows_the_architecture() -> None:
    assert forbidden_arrows() == []


def test_the_walk_sees_the_whole_package() -> None:
    names = {module for module, _, _ in modules()}
    for expected in (
        "eams.telemetry",
        "eams.kube.listwatch",
        "eams.demo.run",
        "eams.meter.snmp.client",
        "eams.calibrate.wallpower.check",
        "eams.agent.sinks.influx_v1",
        "eams.scheduler.auction.methods",
        "eams.scheduler.policies.eams",
        "eams.scheduler.bench.sweep",
        "eams.scheduler.record.writer",
        "eams.scheduler.power.cli",
        "eams.actuators.actions",
        "eams.actuators.methods.outlet",
    ):
        assert expected in names


@pytest.mark.parametrize(
    ("source", "text", "is_package", "arrow"),
    [
        ("eams.calibrate.wallpower.load", "from eams.agent import x", False, "agent"),
        ("eams.scheduler.extender.app", "def f():\n    import eams.agent.sampler", False, "agent"),
        ("eams.telemetry", "from .meter import reading", False, "meter"),
        ("eams.meter.snmp", "from ...calibrate import fit", True, "calibrate"),
        ("eams.scheduler.policies.eams", "from ...bench import sweep", True, "scheduler.bench"),
        ("eams.scheduler.bench.sweep", "from eams.scheduler.policies import load", False, None),
        (
            "eams.scheduler.record.build",
            "from eams.scheduler.auction import clear",
            False,
            "scheduler.auction",
        ),
        ("eams.meter.cli", "importlib.import_module('eams.demo.run')", False, "demo"),
        ("eams.kube.patch", "import eams.scheduler.extender.taints", False, "scheduler.extender"),
        ("eams.meter.snmp.client", "from eams.kube import names", False, "kube"),
        ("eams.scheduler.power.kube_pods", "from eams.kube import requests", False, None),
        ("eams.actuators.safety", "from eams.calibrate import errors", False, "calibrate"),
        ("eams.actuators.methods", "from .. import steps", True, None),
    ],
)
def test_a_forbidden_arrow_is_seen(
    tmp_path: Path, source: str, text: str, is_package: bool, arrow: str | None
) -> None:
    """Each kind of import the walk must see (lazy, relative, import_module) is classified."""
    path = tmp_path / "m.py"
    path.write_text(text)
    dests = {layer(t) for t in imports(path, source, is_package)} - {None, layer(source)}
    allowed = ALLOWED[layer(source) or ""]
    bad = {d for d in dests if d not in allowed}
    assert bad == ({arrow} if arrow else set())
