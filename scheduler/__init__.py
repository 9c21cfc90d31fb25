"""Energy-aware pod placement: the ε-auction engine, the kube-scheduler extender serving it,
and the benchmark harness that measures it against baseline schedulers."""
