"""Run commands on the node being calibrated: here (subprocess) or over SSH (paramiko).

One module per runner behind one contract: :mod:`.base` (the :class:`Runner` and :class:`Job`
protocols), :mod:`.local` (:class:`LocalRunner`) and :mod:`.ssh` (:class:`SshRunner` on the
one SSH transport, :mod:`eams.ssh`). The names are re-exported here.
"""

from eams.calibrate.runners.base import STOP_GRACE_S, Job, Runner
from eams.calibrate.runners.local import LocalJob, LocalRunner
from eams.calibrate.runners.ssh import SshJob, SshRunner

__all__ = [
    "STOP_GRACE_S",
    "Job",
    "LocalJob",
    "LocalRunner",
    "Runner",
    "SshJob",
    "SshRunner",
]
