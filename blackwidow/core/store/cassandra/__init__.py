"""The Cassandra store: the store itself (`store`), its rows, statements, schema and reads.
Nothing here is imported for a sqlite:// store: the driver loads only with `store`."""
