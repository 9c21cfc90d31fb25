"""Every power action, done, refused, failed or dry, as one log line and one counter step.

The line (logger ``eams.power``, INFO; ``eams power`` also prints it)::

    power transition: node=mini3 to=suspended method=wol result=ok who=root
      why="nightly drain" steps="ssh://root@192.0.2.13:22: systemctl --no-block suspend"
      elapsed_s=0.41

(one line; wrapped here). The counter ``eams_power_transitions_total{node,to,method,result}``
lives on :data:`REGISTRY`, a private registry that a long-running process (the power manager,
issue 14) serves on ``/metrics``; ``result`` is ``ok``, ``failed``, ``refused`` or ``dry_run``,
``to`` the state asked for: ``running``, ``suspended``, ``soft_off`` or ``off``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter

log = logging.getLogger("eams.power")

REGISTRY = CollectorRegistry(auto_describe=True)
"""The registry of :data:`TRANSITIONS` (served by whoever runs the actions for long)."""
TRANSITIONS = Counter(
    "eams_power_transitions",
    "Power actions on nodes, by node, target state, method and result.",
    ["node", "to", "method", "result"],
    registry=REGISTRY,
)
RESULTS = ("ok", "failed", "refused", "dry_run")
STATES = ("running", "suspended", "soft_off", "off")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


@dataclass(frozen=True, slots=True)
class Transition:
    """One power action and its outcome.

    Attributes
    ----------
    node : str
        The node (or the MAC of a raw wake).
    to : str
        The state asked for (:data:`STATES`).
    method : str
        ``wol``, ``ssh``, ``outlet`` (the node's), or ``mac`` for a raw wake.
    result : str
        :data:`RESULTS`.
    who : str
        The user (or component) that asked.
    why : str
        The reason given.
    steps : tuple of str
        What was done (or, for a dry run or a refusal, what would have been), in order.
    elapsed_s : float
        From the first step to the outcome (s).
    detail : str
        The error or refusal, or what the operator should know (``--force`` overrides).
    acted_s : (float, float) or None
        Monotonic window (s) in which the last step that changes the node's state ran (the
        ``systemctl`` over an open connection, the SET and its read-back, the datagram):
        narrower than the whole action, which also connects and plans. ``None`` when nothing
        was done. Not part of the log line.
    """

    node: str
    to: str
    method: str
    result: str
    who: str
    why: str
    steps: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    detail: str = ""
    acted_s: tuple[float, float] | None = None

    def line(self) -> str:
        """The one-line log record (see the module docstring)."""
        parts = [
            f"node={self.node}",
            f"to={self.to}",
            f"method={self.method}",
            f"result={self.result}",
            f"who={self.who}",
            f"why={_quote(self.why)}",
            f"steps={_quote('; '.join(self.steps))}",
            f"elapsed_s={self.elapsed_s:.2f}",
        ]
        if self.detail:
            parts.append(f"detail={_quote(self.detail)}")
        return "power transition: " + " ".join(parts)


def record(transition: Transition) -> Transition:
    """Log ``transition`` and count it; returns it.

    Raises
    ------
    ValueError
        For a result or state outside :data:`RESULTS` / :data:`STATES` (a bug, not input).
    """
    if transition.result not in RESULTS or transition.to not in STATES:
        raise ValueError(f"bad transition result/state: {transition.result}, {transition.to}")
    level = logging.INFO if transition.result in ("ok", "dry_run") else logging.WARNING
    log.log(level, "%s", transition.line())
    TRANSITIONS.labels(transition.node, transition.to, transition.method, transition.result).inc()
    return transition


class _Echo(logging.Handler):
    def __init__(self, write: Callable[[str], None]) -> None:
        super().__init__(logging.INFO)
        self._write = write

    def emit(self, record: logging.LogRecord) -> None:
        self._write(record.getMessage())


def echo_transitions(write: Callable[[str], None]) -> logging.Handler:
    """Send every transition line to ``write`` (the command line prints them on stdout), and
    only there: the ``eams.power`` logger stops propagating, so a refusal's line does not also
    reach stderr beside the command's one error line. Returns the handler (remove it with
    ``logging.getLogger("eams.power").removeHandler``)."""
    for old in [h for h in log.handlers if isinstance(h, _Echo)]:
        log.removeHandler(old)  # one echo at a time (a command invoked twice in one process)
    handler = _Echo(write)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    return handler
