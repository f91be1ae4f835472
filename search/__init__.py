"""kbgraph.search — retrieval of DESIGN §3: pure scoring functions apart from the Neo4j retrieval that runs them."""
