"""The result store: one Parquet file per (stage, question), the catalog file, and read access to canonical tables."""
