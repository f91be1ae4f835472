// Writes a batch of steps, each attached to its experience (step_link_next chains them).
// $kb; $rows: [{id, experience_id, props: {order, action, text, ...}, embedding, next_id}]
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.experience_id})
MERGE (s:Step {kb: $kb, id: row.id})
SET s += row.props, s.experience_id = row.experience_id
MERGE (e)-[:HAS_STEP]->(s)
WITH s, row
CALL db.create.setNodeVectorProperty(s, 'embedding', row.embedding)
RETURN count(s) AS written;
