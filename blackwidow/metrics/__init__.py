"""Prometheus metrics: the hub's figures (cluster, monitor, API) and the `/metrics` view that
hub and nodes alike serve."""
