"""``kbgraph bench …``: the benchmark commands."""
