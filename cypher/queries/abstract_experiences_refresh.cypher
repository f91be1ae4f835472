// Refreshes generated abstract experiences (workflows) that already exist. Their id is the
// workflow's (domain and operations), so it stays while their group grows, but what they say
// follows the group: the success rate over all instances' runs, the generalizability, and the
// usual steps (replaced here; step_upsert writes the new ones in the same transaction) with the
// embeddings that follow from them. Their learning state (counters, quality, status) is kept.
// $kb; $rows: [{id, content: {...}, success_rate, pg_embedding, structure_embedding, context_embedding}]
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.id})
SET e += row.content, e.success_rate = row.success_rate
WITH e, row
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(s:Step)
  DETACH DELETE s
}
CALL db.create.setNodeVectorProperty(e, 'pg_embedding', row.pg_embedding)
CALL db.create.setNodeVectorProperty(e, 'structure_embedding', row.structure_embedding)
CALL db.create.setNodeVectorProperty(e, 'context_embedding', row.context_embedding)
RETURN count(e) AS refreshed;
