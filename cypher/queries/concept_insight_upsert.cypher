// Pass 1 of ingestion: concepts and the insights learned about them, each insight FROM its
// experience. An insight already attached to a meta-concept makes its new experience EXHIBIT it.
// Concept embeddings are the label's; they are kept once set.
// $kb; $rows: [{concept_id, label, embedding, insight_id, text, experience_id}]
UNWIND $rows AS row
MATCH (e:Experience {kb: $kb, id: row.experience_id})
MERGE (c:Concept {kb: $kb, id: row.concept_id})
ON CREATE SET c.label = row.label
MERGE (i:Insight {kb: $kb, id: row.insight_id})
ON CREATE SET i.text = row.text, i.concept_id = row.concept_id, i.concept = row.label
MERGE (i)-[:FROM]->(e)
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
