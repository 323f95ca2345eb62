"""The benchmark config: its pydantic model, load errors, the resolved specs record and the commands printed for it."""
