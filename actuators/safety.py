"""The rules a node must pass before it is suspended, powered off or has its outlet cut.

1. Never the k3s server or the PDU's owner (its inventory roles): nothing overrides this.
2. The Kubernetes API must say what runs on the node; if it cannot be asked, refuse.
3. The node must be cordoned (``spec.unschedulable``), tainted (a NoSchedule or NoExecute
   taint) and drained (no pod left that is not a DaemonSet's or a static pod's mirror) — what
   the power manager (issue 14) does first, and ``kubectl cordon``, ``taint`` and ``drain``
   do by hand.

Rules 2 and 3 yield to ``--force`` (the operator takes the responsibility; the override is
logged with the transition). Outlets are only ever the inventory's: an action switches the
outlet of the node's own entry and nothing else. Sources: DESIGN.md §5b; cluster-autoscaler's
scale-down and ``kubectl drain`` treat DaemonSet and mirror pods the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from eams.actuators.errors import ClusterUnreachable, PowerRefused
from eams.actuators.inventory import NodeEntry
from eams.kube.errors import ApiUnreachable, KubeConfigError
from eams.kube.nodeview import NodeView

MAX_PODS_NAMED = 5
"""A refusal names at most this many pods, then says how many more there are."""


def check_roles(name: str, entry: NodeEntry) -> None:
    """Rule 1: refuse a node whose roles forbid sleeping.

    Raises
    ------
    PowerRefused
        Not forceable: "node mini1 is the k3s server: never suspended or switched off".
    """
    roles = entry.never_sleeps()
    if roles:
        raise PowerRefused(
            f"node {name} is {' and '.join(roles)}: never suspended or switched off "
            "(the inventory's k3s_server / pdu_owner; --force does not override this)",
            forceable=False,
        )


def drain_problems(view: NodeView) -> list[str]:
    """What keeps ``view`` from sleeping under rule 3, in words (empty: it may sleep)."""
    problems = []
    if not view.unschedulable:
        problems.append("not cordoned (spec.unschedulable)")
    if not view.tainted:
        problems.append("not tainted (no NoSchedule or NoExecute taint)")
    pods = view.workload_pods
    if pods:
        named = ", ".join(map(str, pods[:MAX_PODS_NAMED]))
        more = f" and {len(pods) - MAX_PODS_NAMED} more" if len(pods) > MAX_PODS_NAMED else ""
        problems.append(f"runs {len(pods)} pod(s) not owned by a DaemonSet ({named}{more})")
    return problems


def check_sleep(
    name: str,
    entry: NodeEntry,
    node_view: Callable[[str], NodeView],
    *,
    force: bool = False,
) -> list[str]:
    """Apply rules 1–3 before node ``name`` sleeps or loses power.

    Parameters
    ----------
    name : str
        The node (as Kubernetes names it).
    entry : NodeEntry
        Its inventory entry.
    node_view : callable
        ``name -> NodeView`` from the API (:meth:`eams.kube.nodeview.Cluster.node`); raises
        :class:`ClusterUnreachable`, or the Kubernetes layer's ``ApiUnreachable`` or
        ``KubeConfigError``, when it cannot say.
    force : bool
        Override rules 2 and 3 (never rule 1).

    Returns
    -------
    list of str
        The rules overridden by ``force``, in words, for the transition's log line (empty
        when every rule passed).

    Raises
    ------
    PowerRefused
        Rule 1 (not forceable), or rule 3 without ``force``; the message says what is missing.
    ClusterUnreachable
        Rule 2 without ``force``.
    """
    check_roles(name, entry)
    try:
        view = node_view(name)
    except (ClusterUnreachable, ApiUnreachable, KubeConfigError) as exc:
        if not force:
            raise ClusterUnreachable(
                f"node {name}: cannot tell what runs on it: {exc}; refused (--force overrides)"
            ) from exc
        return [f"--force: pods not checked ({exc})"]
    problems = drain_problems(view)
    if problems and not force:
        raise PowerRefused(
            f"node {name} is {'; '.join(problems)}: cordon, taint and drain it first "
            f"(kubectl cordon {name}; kubectl taint; kubectl drain {name} --ignore-daemonsets), "
            "or --force",
            forceable=True,
        )
    return [f"--force: {'; '.join(problems)}"] if problems else []
