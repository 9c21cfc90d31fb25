"""The energy-aware ε-auction engine (study §5): bids from marginal energy and headroom, and a
Bertsekas forward–reverse auction with ε-scaling over node slots. Pure numpy/scipy, no I/O."""

from eams.scheduler.auction import bids
from eams.scheduler.auction.auction import clear, solve
from eams.scheduler.auction.bids import priority_weight
from eams.scheduler.auction.dual import dual_bound
from eams.scheduler.auction.model import AuctionParams, Clearing, Method, Nodes, Pods

__all__ = [
    "AuctionParams",
    "Clearing",
    "Method",
    "Nodes",
    "Pods",
    "bids",
    "clear",
    "dual_bound",
    "priority_weight",
    "solve",
]
