"""What every scheduler plug-in is written against: the plug-in kinds, what they are given and
their typed parameters. Nothing here imports the bench (the bench imports this).

* :mod:`.policy` — :class:`ScoringPolicy`, :class:`BatchPolicy`, :class:`NodeState` (the live
  allocation), :class:`WorkloadPod` (a pending pod);
* :mod:`.cluster` — :class:`Cluster` (the static nodes), :class:`NodeMeta` (labels and
  :class:`eams.kube.taints.Taint` s);
* :mod:`.power` — :class:`PowerCurves` (measured curves on :data:`LEVELS`) and their fitted lines;
* :mod:`.workload` — :class:`Workload` (the replayed pods), :class:`PodConstraints`
  (:class:`eams.kube.taints.Toleration` s and a node selector);
* :mod:`.params` — :class:`Params`, the manifest's ``params`` section.

A plug-in's ``make(cluster: Cluster, params: Params, seed: int)`` returns a policy.
"""

from eams.scheduler.policies.base.cluster import Cluster, NodeMeta
from eams.scheduler.policies.base.params import Params
from eams.scheduler.policies.base.policy import BatchPolicy, NodeState, ScoringPolicy, WorkloadPod
from eams.scheduler.policies.base.power import LEVELS, PowerCurves
from eams.scheduler.policies.base.workload import PodConstraints, Workload

__all__ = [
    "LEVELS",
    "BatchPolicy",
    "Cluster",
    "NodeMeta",
    "NodeState",
    "Params",
    "PodConstraints",
    "PowerCurves",
    "ScoringPolicy",
    "Workload",
    "WorkloadPod",
]
