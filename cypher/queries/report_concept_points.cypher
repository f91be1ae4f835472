// Concepts of namespace $kb with their label embedding and meta-concept: the points of the
// report's concept map. A concept without a meta-concept comes with null meta_id.
// Parameters: $kb (namespace).
MATCH (c:Concept {kb: $kb})
OPTIONAL MATCH (c)-[:INSTANCE_OF]->(m:MetaConcept {kb: $kb})
WITH c, m ORDER BY m.id
WITH c, head(collect(m)) AS m
RETURN c.id AS id, c.label AS label, c.embedding AS embedding, m.id AS meta_id, m.name AS meta_name
ORDER BY id;
