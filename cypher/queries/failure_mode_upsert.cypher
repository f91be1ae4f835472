// Writes a batch of failure modes, each attached to its experience.
// $kb; $rows: [{id, experience_id, props: {description, issue_type, recovery, step_order, action, signature,
//   signature_action, signature_error,
//   recovery_kind, recovered, concrete, run_id, run_succeeded}, embedding}]
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.experience_id})
MERGE (f:FailureMode {kb: $kb, id: row.id})
SET f += row.props, f.experience_id = row.experience_id
MERGE (e)-[:HAS_FAILURE]->(f)
WITH f, row
CALL db.create.setNodeVectorProperty(f, 'embedding', row.embedding)
RETURN count(f) AS written;
