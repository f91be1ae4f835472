// Every meta-concept of namespace $kb with its sizes: concepts that are instances of it,
// experiences that exhibit it, insights about it; and its document, cut to $excerpt characters.
// Parameters: $kb (namespace), $excerpt (maximum characters of the document returned).
MATCH (m:MetaConcept {kb: $kb})
RETURN m.id AS id, m.name AS name, m.version AS version,
       COUNT { (c:Concept {kb: $kb})-[:INSTANCE_OF]->(m) } AS concepts,
       COUNT { (e:Experience {kb: $kb})-[:EXHIBITS]->(m) } AS experiences,
       COUNT { (i:Insight {kb: $kb})-[:ABOUT]->(m) } AS insights,
       left(coalesce(m.document, ''), $excerpt) AS excerpt, size(coalesce(m.document, '')) AS document_chars
ORDER BY experiences DESC, concepts DESC, name, id;
