"""Power management of the cluster's nodes (issue 14, DESIGN.md §5b): which nodes of the fleet
sleep and which wake.

``policy`` is the power manager's pure core — fleet state in, decisions out, no I/O — driven by
the bench's discrete-event simulator in simulated time and by the live manager service in real
time; ``manager`` is that service's loop, which reaches the world only through the
``ports`` (observer, marker, actuator: README.md); ``cli`` holds the ``eams power`` commands
(wake, suspend, power off one node by hand, through :mod:`eams.actuators`).
"""
