"""The benchmark harness: trace replay against the baseline schedulers and the ρ sweep from a
manifest (AR-3, AR-7, AR-8), and the auction engine's clearing-time benchmark.

It imports the plug-ins (:mod:`eams.scheduler.policies`) and what they are written against
(:mod:`eams.scheduler.policies.base`); no plug-in imports the bench.
"""
