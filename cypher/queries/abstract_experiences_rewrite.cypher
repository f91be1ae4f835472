// Generated abstract experiences whose content changed (their usual steps): the old steps go
// (step_upsert writes the new ones in the same transaction) and the embeddings follow the content.
// The old steps' vectors (StepText) no step says any more are deleted, under their write lock (see
// experience_delete), but for those of the texts in $keep: the new steps' texts, which step_upsert
// links again right after (their writer did not embed a text the namespace held).
// $kb; $rows: [{id, pg_embedding, structure_embedding, context_embedding, pg_embedding_bytes,
//   structure_embedding_bytes}] (the bytes: kbgraph.store.vector_cache.VECTOR_BYTES); $keep: step text keys
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.id})
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(:Step)-[:SAYS]->(v:StepText)
  RETURN collect(DISTINCT v) AS texts
}
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(s:Step)
  DETACH DELETE s
}
CALL db.create.setNodeVectorProperty(e, 'pg_embedding', row.pg_embedding)
CALL db.create.setNodeVectorProperty(e, 'structure_embedding', row.structure_embedding)
CALL db.create.setNodeVectorProperty(e, 'context_embedding', row.context_embedding)
SET e.pg_embedding_bytes = row.pg_embedding_bytes, e.structure_embedding_bytes = row.structure_embedding_bytes
WITH collect(texts) AS texts, count(e) AS rewritten
CALL (texts) {
  UNWIND texts AS some
  UNWIND some AS v
  WITH DISTINCT v WHERE NOT v.key IN $keep
  SET v._lock = true
  WITH v WHERE v.kb IS NOT NULL
  REMOVE v._lock
  WITH v WHERE COUNT { (v)<-[:SAYS]-() } = 0
  DELETE v
}
RETURN rewritten;
