"""The node's data source pool: subscribers, the sources they share, and what they count."""
