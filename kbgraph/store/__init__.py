"""The store layer: the Neo4j gateway, the named Cypher queries, the schema, the experience
reads and writes, and the Neo4j server kbgraph installs and manages."""
