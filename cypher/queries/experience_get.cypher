// Experiences by id with their steps (in order, each with its text's vector: StepText), failure
// modes and outgoing relations.
// $kb; $ids
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(s:Step)
  OPTIONAL MATCH (s)-[:SAYS]->(t:StepText)
  WITH s, t ORDER BY s.order
  RETURN collect(s {.*, embedding: coalesce(t.embedding, s.embedding)}) AS steps
}
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_FAILURE]->(f:FailureMode)
  WITH f ORDER BY f.step_order, f.id
  RETURN collect(f {.*}) AS failure_modes
}
CALL (e) {
  OPTIONAL MATCH (e)-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]->(t:Experience {kb: $kb})
  WITH r, t ORDER BY type(r), t.id
  RETURN collect(CASE WHEN r IS NULL THEN NULL
    ELSE {type: type(r), target_id: t.id, weight: r.weight, reason: r.reason} END) AS relations
}
// The vectors' bytes are left out: the lists are the embeddings (kbgraph.store.vector_cache.VECTOR_BYTES).
RETURN e {.*, pg_embedding_bytes: null, structure_embedding_bytes: null} AS experience, steps, failure_modes, relations;
