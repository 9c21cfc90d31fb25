"""Scheduler plug-ins for the benchmark harness, one module (or folder) per scheduler.

Each plug-in exports ``NAME`` (the name manifests use) and ``make(cluster, params, seed)``
returning a :class:`~eams.scheduler.policies.base.ScoringPolicy` or
:class:`~eams.scheduler.policies.base.BatchPolicy`; its docstring names where the policy comes
from. Plug-ins import only :mod:`eams.scheduler.policies.base` (what they are written against)
and each other, never the bench: the bench imports them. Adding a file here adds a scheduler
(the registry below discovers them).
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
