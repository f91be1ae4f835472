// Every insight with its concept (for a full recluster). $kb
MATCH (i:Insight {kb: $kb})
MATCH (c:Concept {kb: $kb, id: i.concept_id})
CALL (i) {
  OPTIONAL MATCH (i)-[:FROM]->(e:Experience)
  WITH e ORDER BY e.id
  RETURN coalesce(head(collect(e.actions)), []) AS actions
}
RETURN i.id AS insight_id, i.text AS text, c.id AS concept_id, c.label AS label, c.embedding AS embedding,
       null AS meta_id, actions
ORDER BY concept_id, insight_id;
