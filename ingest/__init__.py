"""kbgraph.ingest — the ingestion pipeline of docs/design.md §2 (trajectories → experiences), one module per stage."""
