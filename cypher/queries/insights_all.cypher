// Every insight with its concept (for a full recluster). $kb
MATCH (i:Insight {kb: $kb})
MATCH (c:Concept {kb: $kb, id: i.concept_id})
RETURN i.id AS insight_id, i.text AS text, c.id AS concept_id, c.label AS label, c.embedding AS embedding,
       null AS meta_id
ORDER BY concept_id, insight_id;
