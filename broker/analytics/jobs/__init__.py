"""One module per job; each has ``compute`` (DataFrames and a summary, for tests) and ``run`` (writes)."""
