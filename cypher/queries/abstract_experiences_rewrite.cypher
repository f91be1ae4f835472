// Generated abstract experiences whose content changed (their usual steps): the old steps go
// (step_upsert writes the new ones in the same transaction) and the embeddings follow the content.
// $kb; $rows: [{id, pg_embedding, structure_embedding, context_embedding}]
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.id})
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(s:Step)
  DETACH DELETE s
}
CALL db.create.setNodeVectorProperty(e, 'pg_embedding', row.pg_embedding)
CALL db.create.setNodeVectorProperty(e, 'structure_embedding', row.structure_embedding)
CALL db.create.setNodeVectorProperty(e, 'context_embedding', row.context_embedding)
RETURN count(e) AS rewritten;
