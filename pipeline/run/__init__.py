"""The per-question stage driver: what is still to do, failure rows, the endpoint breaker, progress and stale units."""
