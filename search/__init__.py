"""kbgraph.search — retrieval of docs/design.md §3: pure scoring functions apart from the Neo4j retrieval that runs them."""
