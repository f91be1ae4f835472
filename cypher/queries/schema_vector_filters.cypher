// The properties each of the named vector indexes covers: its vector, then (Neo4j 2026) the
// filter properties it declares with `WITH [n.kb, …]` (kbgraph.store.schema.filtering_indexes).
// $names
SHOW VECTOR INDEXES
YIELD name, properties
WHERE name IN $names
RETURN name, properties;
