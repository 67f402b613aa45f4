"""The node's HTTP face, one flask-smorest blueprint per resource (see spawn.app)."""
