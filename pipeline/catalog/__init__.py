"""The DuckDB catalog's views over the stored tables, and the text that documents every view and column."""
