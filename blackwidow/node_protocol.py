"""Header names of the hub <-> node protocol, shared by the hub's client and the node's app."""

ASSIGNED_HEADER = "X-Blackwidow-Assigned"  # on a poll: the crawler ids still wanted there
GENERATION_HEADER = "X-Blackwidow-Generation"  # on every call: the node's registration
