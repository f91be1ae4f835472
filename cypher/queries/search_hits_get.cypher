// Student search, the returned experiences $ids of namespace $kb in full (steps in order,
// failure modes, outgoing relations) but without their embeddings, which a caller reading
// results does not need.
UNWIND $ids AS id
MATCH (e:Experience {kb: $kb, id: id})
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(s:Step)
  WITH s ORDER BY s.order
  RETURN collect(s {.*, embedding: null}) AS steps
}
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_FAILURE]->(f:FailureMode)
  WITH f ORDER BY f.step_order, f.id
  RETURN collect(f {.*, embedding: null}) AS failure_modes
}
CALL (e) {
  OPTIONAL MATCH (e)-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]->(t:Experience {kb: $kb})
  WITH r, t ORDER BY type(r), t.id
  RETURN collect(CASE WHEN r IS NULL THEN NULL
    ELSE {type: type(r), target_id: t.id, weight: r.weight, reason: r.reason} END) AS relations
}
RETURN e {.*, pg_embedding: null, structure_embedding: null, context_embedding: null} AS experience,
  steps, failure_modes, relations;
