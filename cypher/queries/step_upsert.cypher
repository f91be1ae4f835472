// Writes a batch of steps, each attached to its experience (step_link_next chains them) and to the
// vector of its text: one StepText per distinct `action: text` of the namespace, MERGEd on (kb, key)
// (key: the text's sha256, kbgraph.core.ids.text_hash). A vector is written only when this creates
// its StepText: a vector given for a text already stored yields to the stored one. MERGE of the
// SAYS edge locks the StepText, so an add and a delete of the same text take turns
// (experience_delete removes a StepText only when no step SAYS it any more).
// $kb; $rows: [{id, experience_id, key, props: {order, action, text, ...}, embedding, next_id}]
// (embedding: null for a text the namespace already held when the writer looked).
// Returns the keys of the StepTexts still without a vector: texts a delete removed after the
// writer looked (ExperienceStore.write refuses the batch; the writer embeds them and writes again).
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.experience_id})
MERGE (s:Step {kb: $kb, id: row.id})
SET s += row.props, s.experience_id = row.experience_id
REMOVE s.embedding
MERGE (e)-[:HAS_STEP]->(s)
MERGE (v:StepText {kb: $kb, key: row.key})
MERGE (s)-[:SAYS]->(v)
WITH v, row
CALL (v, row) {
  WITH v, row WHERE v.embedding IS NULL AND row.embedding IS NOT NULL
  CALL db.create.setNodeVectorProperty(v, 'embedding', row.embedding)
}
WITH collect(CASE WHEN v.embedding IS NULL THEN v.key END) AS missing, count(*) AS written
RETURN written, missing;
