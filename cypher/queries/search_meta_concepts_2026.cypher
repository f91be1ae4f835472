// Student search, concept documents, on Neo4j 2026: as search_meta_concepts, but the index
// meta_concept_embedding keeps namespace $kb itself (declared in it), so its $fetch nearest
// documents are all this namespace's; the first $k with their documents, how many raw concepts
// they merge and how many experiences exhibit them.
CYPHER 25
MATCH (m:MetaConcept)
  SEARCH m IN (VECTOR INDEX meta_concept_embedding FOR $vector WHERE m.kb = $kb LIMIT $fetch) SCORE AS score
WITH m, score ORDER BY score DESC, m.id
WITH collect([m, score]) AS hits
WITH size(hits) AS fetched, hits[..$k] AS ours
CALL (ours) {
  UNWIND ours AS h
  WITH h[0] AS m, h[1] AS score
  RETURN collect({id: m.id, name: m.name, document: m.document, score: score,
    concepts: coalesce(m.size, 0), experiences: COUNT { (:Experience)-[:EXHIBITS]->(m) }}) AS rows
}
RETURN fetched, rows;
