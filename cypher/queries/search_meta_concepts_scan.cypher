// Student search, concept documents by exact scan: every meta-concept of namespace $kb scored by
// cosine against $vector, the $k best with their documents, how many raw concepts they merge and
// how many experiences exhibit them (as search_meta_concepts returns them). Used when the
// namespace holds few enough meta-concepts to scan (search_namespace_size): exact, one request,
// and independent of what other namespaces hold in the shared index.
MATCH (m:MetaConcept {kb: $kb})
WHERE m.embedding IS NOT NULL
WITH m, vector.similarity.cosine(m.embedding, $vector) AS score
ORDER BY score DESC, m.id
LIMIT $k
RETURN collect({id: m.id, name: m.name, document: m.document, score: score,
  concepts: coalesce(m.size, 0), experiences: COUNT { (:Experience)-[:EXHIBITS]->(m) }}) AS rows;
