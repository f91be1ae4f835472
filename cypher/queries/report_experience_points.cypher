// The concept map's fallback when concepts carry no embedding: each experience of namespace $kb
// that exhibits a meta-concept, with its problem+goal embedding and (the first by id of) its
// meta-concepts.
// Parameters: $kb (namespace).
MATCH (e:Experience {kb: $kb})-[:EXHIBITS]->(m:MetaConcept {kb: $kb})
WHERE e.pg_embedding IS NOT NULL
WITH e, m ORDER BY m.id
WITH e, head(collect(m)) AS m
RETURN e.id AS id, left(e.problem, 120) AS label, e.pg_embedding AS embedding, m.id AS meta_id,
       m.name AS meta_name
ORDER BY id;
