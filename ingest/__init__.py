"""kbgraph.ingest — the ingestion pipeline of DESIGN §2 (trajectories → experiences), one module per stage."""
