"""``membench``: the command-line entry point over the result store (and ``forget``, which rewrites it)."""
