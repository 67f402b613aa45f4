"""What a monitor shard's leader keeps between cycles (`shard.ShardMemory`): its crawlers,
what the nodes reported, and the crawl windows' timers."""
