// Insights not yet attached to a meta-concept, with their concept and its meta-concept if it has
// one. $kb
MATCH (i:Insight {kb: $kb})
WHERE NOT (i)-[:ABOUT]->(:MetaConcept)
MATCH (c:Concept {kb: $kb, id: i.concept_id})
OPTIONAL MATCH (c)-[:INSTANCE_OF]->(m:MetaConcept)
CALL (i) {
  OPTIONAL MATCH (i)-[:FROM]->(e:Experience)
  WITH e ORDER BY e.id
  RETURN coalesce(head(collect(e.actions)), []) AS actions
}
RETURN i.id AS insight_id, i.text AS text, c.id AS concept_id, c.label AS label, c.embedding AS embedding,
       m.id AS meta_id, actions
ORDER BY concept_id, insight_id;
