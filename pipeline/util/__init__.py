"""Generic helpers with no membench knowledge: file locks, coalesced work, fingerprints, threads, heap, registries."""
