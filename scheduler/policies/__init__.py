"""Scheduler plug-ins for the benchmark harness, one module per scheduler.

Each module exports ``NAME`` (the name manifests use) and ``make(cluster, params, seed)``
returning a :class:`eams.scheduler.bench.policy.ScoringPolicy` or
:class:`~eams.scheduler.bench.policy.BatchPolicy`; its docstring names where the policy comes
from. Adding a file here adds a scheduler (the registry below discovers them).
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

__all__ = ["available", "load"]


def available() -> dict[str, ModuleType]:
    """Every plug-in by its ``NAME``."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "make"):
            found[module.NAME] = module
    return found


def load(name: str) -> ModuleType:
    """The plug-in called ``name``.

    Raises
    ------
    KeyError
        If no plug-in has that name (manifests are validated against :func:`available` first).
    """
    return available()[name]
