"""What a run was made from and whether it still holds: the run manifest, dataset releases and ``membench verify``."""
