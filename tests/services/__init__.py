"""Real servers the test suite runs on loopback: Cassandra, Redis and PostgreSQL."""
