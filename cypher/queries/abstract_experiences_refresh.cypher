// Refreshes generated abstract experiences (workflows) that already exist. Their id is the
// workflow's (domain and operations), so it stays while their group grows, but what they say
// follows the group: the success rate over all instances' runs, the generalizability, and the
// usual steps (replaced here; step_upsert writes the new ones in the same transaction) with the
// embeddings that follow from them. Their learning state (counters, quality, status) is kept; one
// archived because its workflow had dissolved is active again, the workflow being shared again.
// $kb; $rows: [{id, content: {...}, success_rate, pg_embedding, structure_embedding, context_embedding}]
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.id})
SET e += row.content, e.success_rate = row.success_rate
WITH e, row, e.dissolved = true AS back
SET e.status = CASE WHEN back THEN 'active' ELSE e.status END,
    e.archived_run = CASE WHEN back THEN null ELSE e.archived_run END,
    e.archived_at = CASE WHEN back THEN null ELSE e.archived_at END,
    e.archived_reason = CASE WHEN back THEN null ELSE e.archived_reason END,
    e.dissolved = null
WITH e, row
CALL (e) {
  OPTIONAL MATCH (e)-[:HAS_STEP]->(s:Step)
  DETACH DELETE s
}
CALL db.create.setNodeVectorProperty(e, 'pg_embedding', row.pg_embedding)
CALL db.create.setNodeVectorProperty(e, 'structure_embedding', row.structure_embedding)
CALL db.create.setNodeVectorProperty(e, 'context_embedding', row.context_embedding)
RETURN count(e) AS refreshed;
