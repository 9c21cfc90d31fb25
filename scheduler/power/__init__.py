"""The power manager: which nodes of the fleet sleep and which wake (issue 14, DESIGN.md §5b).

``policy`` is its pure core — fleet state in, decisions out, no I/O — driven by the bench's
discrete-event simulator in simulated time and by the live manager service in real time.
"""
