// The largest meta-concepts of namespace $kb with their documents. $limit
MATCH (m:MetaConcept {kb: $kb})
OPTIONAL MATCH (e:Experience)-[:EXHIBITS]->(m)
WITH m, count(DISTINCT e) AS experiences
RETURN m.id AS id, m.name AS name, m.size AS concepts, experiences, m.version AS version, m.document AS document
ORDER BY experiences DESC, concepts DESC, name
LIMIT $limit;
