"""The one Kubernetes layer of EAMS: what kube-scheduler, kubectl and client-go know, said once.

The extender, the power manager, the bench's emulated kube-scheduler, the policies, the
power-state safety check and the demo are its users; it imports only the ground
(``eams.errors``) and third-party packages. One module per concept:

* :mod:`.names` — every well-known name: Kubernetes' (taint effects, the node-lifecycle
  controller's taints, the mirror-pod annotation, the merge-patch type) and ours (``eams.io/*``);
* :mod:`.quantity` — resource quantities, parsed exactly as apimachinery does;
* :mod:`.requests` — a pod's effective requests, kube-scheduler's rule (sidecars, init
  containers, pod-level resources, overhead);
* :mod:`.pods` — the pod model (:class:`~.pods.PodObject`) and the workload-pod rule
  (:class:`~.pods.PodRef`);
* :mod:`.nodes` — a node's allocatable resources and Ready condition;
* :mod:`.nodeview` — one node read from the API: cordon, taints, Ready, its pods
  (:class:`~.nodeview.NodeView`, :class:`~.nodeview.Cluster`);
* :mod:`.taints` — taints and tolerations, kube-scheduler's TaintToleration rule;
* :mod:`.patch` — node merge patches of ``spec.taints`` with resourceVersion and 409 retry;
* :mod:`.client` — the client configuration (explicit kubeconfig, ``$KUBECONFIG``, in-cluster);
* :mod:`.listwatch` — list then watch one resource (bookmarks, relist on 410, backoff);
* :mod:`.errors` — :class:`~.errors.KubeError` and below.
"""
