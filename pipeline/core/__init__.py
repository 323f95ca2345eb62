"""The shapes every layer shares: canonical records and schemas, partition keys, families, statuses, tokens."""
