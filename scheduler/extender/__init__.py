"""The kube-scheduler extender: serves the energy-aware ε-auction over the extender v1 protocol.

``eams.scheduler.extender.app.create_app(settings, clock)`` builds the FastAPI service and
``eams extender serve`` runs it under uvicorn; see this folder's README.md for the routes,
metrics and deployment. Nothing is imported here, so ``eams --help`` stays light.
"""
