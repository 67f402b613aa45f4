"""The fetch side every polled source shares: the guarded fetcher, when a resource is due,
and the node's scheduler."""
