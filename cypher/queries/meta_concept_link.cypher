// Concept -[:INSTANCE_OF]-> meta-concept; its insights -[:ABOUT]-> it; the experiences they
// came from -[:EXHIBITS]-> it. $kb; $rows: [{concept_id, meta_id}]
UNWIND $rows AS row
MATCH (c:Concept {kb: $kb, id: row.concept_id})
MATCH (m:MetaConcept {kb: $kb, id: row.meta_id})
MERGE (c)-[:INSTANCE_OF]->(m)
WITH c, m
MATCH (i:Insight {kb: $kb, concept_id: c.id})
MERGE (i)-[:ABOUT]->(m)
WITH i, m
MATCH (i)-[:FROM]->(e:Experience)
MERGE (e)-[:EXHIBITS]->(m)
RETURN count(*) AS linked;
