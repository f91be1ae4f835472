// HNSW vector indexes, cosine, on Neo4j 2026 (replaces 03_vector_indexes.cypher there): the same
// indexes, each declaring the namespace (kb) — and, for experiences, the status — as filter
// properties, so that Cypher 25's `SEARCH n IN (VECTOR INDEX … WHERE n.kb = $kb …)` returns the
// namespace's nearest nodes from inside the index (kbgraph.search.candidates). $dimension is the
// embedder's. Neo4j reports cosine scores as (1 + cos) / 2: convert back before mixing scores.
CYPHER 25 CREATE VECTOR INDEX experience_pg_embedding IF NOT EXISTS
FOR (n:Experience) ON n.pg_embedding WITH [n.kb, n.status]
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
CYPHER 25 CREATE VECTOR INDEX experience_structure_embedding IF NOT EXISTS
FOR (n:Experience) ON n.structure_embedding WITH [n.kb, n.status]
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
CYPHER 25 CREATE VECTOR INDEX step_text_embedding IF NOT EXISTS
FOR (n:StepText) ON n.embedding WITH [n.kb]
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
CYPHER 25 CREATE VECTOR INDEX failure_mode_embedding IF NOT EXISTS
FOR (n:FailureMode) ON n.embedding WITH [n.kb]
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
CYPHER 25 CREATE VECTOR INDEX meta_concept_embedding IF NOT EXISTS
FOR (n:MetaConcept) ON n.embedding WITH [n.kb]
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
// LangGraph store: one vector per indexed field of an item (IndexConfig fields); the item's
// namespace path and expiry stay filters after the index (a prefix is not an index predicate).
CYPHER 25 CREATE VECTOR INDEX store_vector_embedding IF NOT EXISTS
FOR (n:StoreVector) ON n.embedding WITH [n.kb]
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
