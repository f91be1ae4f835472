// Migration to one vector per step text (kbgraph.store.step_texts): each step of $rows links to
// its text's vector (StepText {kb, key}, MERGEd; a new one takes the step's vector) and loses its
// own. Returns how many steps were converted and how many kept a vector other than their text's
// stored one (copies of a text that disagreed; the stored vector is kept).
// $kb; $rows: [{id, key}] (key: sha256 of the step's `action: text`)
UNWIND $rows AS row
MATCH (s:Step {kb: $kb, id: row.id})
WHERE s.embedding IS NOT NULL
MERGE (v:StepText {kb: $kb, key: row.key})
MERGE (s)-[:SAYS]->(v)
WITH s, v, v.embedding IS NOT NULL AND v.embedding <> s.embedding AS disagrees
CALL (s, v) {
  WITH s, v WHERE v.embedding IS NULL
  CALL db.create.setNodeVectorProperty(v, 'embedding', s.embedding)
}
REMOVE s.embedding
RETURN count(s) AS steps, count(CASE WHEN disagrees THEN 1 END) AS disagreeing;
