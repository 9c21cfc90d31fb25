"""``eams calibrate``: sweep, fit, show and fleet."""

import click


@click.group()
def calibrate() -> None:
    """Fit each node's power model P(u) = P_idle + (P_max − P_idle)·u from load sweeps."""
