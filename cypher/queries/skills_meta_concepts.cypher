// Skills export: every meta-concept of namespace $kb with the state changes its operation makes
// (verbs; null when written before they were kept), its document's sections and statements
// (JSON, with their evidence), and, for a document written before statements were kept, what backs
// each sentence: per insight of its concepts, the text and the runs, tasks and succeeded runs it
// was learnt from (as insight_evidence reads them).
MATCH (m:MetaConcept {kb: $kb})
CALL (m) {
  OPTIONAL MATCH (c:Concept {kb: $kb})-[:INSTANCE_OF]->(m)
  OPTIONAL MATCH (i:Insight {kb: $kb, concept_id: c.id})
  WITH i ORDER BY i.id
  RETURN collect(CASE WHEN i IS NULL THEN NULL ELSE {text: i.text, runs: coalesce(i.runs, []),
    tasks: coalesce(i.tasks, []), succeeded: coalesce(i.succeeded, [])} END) AS insights
}
RETURN m.id AS id, m.name AS name, m.verbs AS verbs, coalesce(m.version, 1) AS version,
  coalesce(m.when_to_use, []) AS when_to_use, coalesce(m.why, []) AS why, coalesce(m.how, []) AS how,
  coalesce(m.pitfalls, []) AS pitfalls, m.statements AS statements, insights
ORDER BY id;
