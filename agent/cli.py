"""``eams agent``: the node daemon."""

import click


@click.group()
def agent() -> None:
    """Publish age-stamped power headroom of this node (and, on the PDU owner, every node)."""
