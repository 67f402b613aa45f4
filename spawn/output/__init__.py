"""How a node's items leave it: the sink to the store, the queue's outbox and spool, and
the node's files."""
