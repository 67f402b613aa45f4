"""Metric exposition both sides serve: `/metrics` access and the process's own figures."""
