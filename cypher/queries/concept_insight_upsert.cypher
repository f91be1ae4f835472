// Pass 1 of ingestion: concepts and the insights learned about them, each insight FROM its
// experience. An insight already attached to a meta-concept makes its new experience EXHIBIT it.
// Concept embeddings are the label's; they are kept once set. Each insight keeps its evidence:
// the runs it was learnt from (runs), their tasks (tasks), the runs that then succeeded
// (succeeded) and, for an insight about a fix, the runs where the fix went through (worked) —
// sets, so re-ingesting a run adds nothing. An insight of the rule-based reflector keeps what it says
// as data (record: a StatementRecord's JSON, null for a free lesson).
// $kb; $rows: [{concept_id, label, embedding, insight_id, text, record, experience_id, run, task, succeeded, worked}]
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.experience_id})
MERGE (c:Concept {kb: $kb, id: row.concept_id})
ON CREATE SET c.label = row.label
MERGE (i:Insight {kb: $kb, id: row.insight_id})
ON CREATE SET i.text = row.text, i.concept_id = row.concept_id, i.concept = row.label
MERGE (i)-[:FROM]->(e)
SET i.record = coalesce(i.record, row.record),
    i.runs = coalesce(i.runs, []) + [r IN [row.run] WHERE NOT r IN coalesce(i.runs, [])],
    i.tasks = coalesce(i.tasks, []) + [t IN [row.task] WHERE t IS NOT NULL AND NOT t IN coalesce(i.tasks, [])],
    i.succeeded = coalesce(i.succeeded, [])
      + [r IN [row.run] WHERE row.succeeded AND NOT r IN coalesce(i.succeeded, [])],
    i.worked = coalesce(i.worked, []) + [r IN [row.run] WHERE row.worked AND NOT r IN coalesce(i.worked, [])]
WITH c, i, e, row
CALL (i, e) {
  OPTIONAL MATCH (i)-[:ABOUT]->(m:MetaConcept)
  WITH e, collect(m) AS metas
  FOREACH (m IN metas | MERGE (e)-[:EXHIBITS]->(m))
}
WITH DISTINCT c, row
WHERE c.embedding IS NULL
CALL db.create.setNodeVectorProperty(c, 'embedding', row.embedding)
RETURN count(*) AS embedded;
