"""What several test modules share: fixture builders, worker scripts, expected official figures, paths.

Test modules import from here, never from each other (tests/tree/test_layers.py checks it)."""
