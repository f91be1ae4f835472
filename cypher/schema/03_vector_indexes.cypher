// HNSW vector indexes, cosine. $dimension is the embedder's (384 for all-MiniLM-L6-v2).
// Neo4j reports cosine scores as (1 + cos) / 2: convert back before mixing scores.
CREATE VECTOR INDEX experience_pg_embedding IF NOT EXISTS
FOR (n:Experience) ON n.pg_embedding
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX experience_structure_embedding IF NOT EXISTS
FOR (n:Experience) ON n.structure_embedding
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
// One vector per distinct step text (steps share it through SAYS); the old per-step index
// step_embedding is dropped once no step keeps a vector (kbgraph.store.step_texts).
CREATE VECTOR INDEX step_text_embedding IF NOT EXISTS
FOR (n:StepText) ON n.embedding
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX failure_mode_embedding IF NOT EXISTS
FOR (n:FailureMode) ON n.embedding
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX meta_concept_embedding IF NOT EXISTS
FOR (n:MetaConcept) ON n.embedding
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
// LangGraph store: one vector per indexed field of an item (IndexConfig fields).
CREATE VECTOR INDEX store_vector_embedding IF NOT EXISTS
FOR (n:StoreVector) ON n.embedding
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}};
