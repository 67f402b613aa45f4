"""What hub and node share: settings, errors, tokens, serving, logs, the node protocol, the
store, the queue client and metric exposition. Imports neither side."""
