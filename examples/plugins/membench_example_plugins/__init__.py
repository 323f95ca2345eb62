"""A membench plugin package: a memory system that lives outside membench (see README, Plugins)."""
