"""Power management of the cluster's nodes: for now the ``eams power`` commands (wake, suspend,
power off one node by hand, through :mod:`eams.calibrate.powerstates`); the power manager that
decides when (issue 14) will join them here."""
