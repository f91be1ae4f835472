// Student search, concept documents: the meta-concepts of namespace $kb nearest to $vector
// (index meta_concept_embedding, over-fetched to $fetch), the first $k with their documents,
// how many raw concepts they merge and how many experiences exhibit them.
CALL db.index.vector.queryNodes('meta_concept_embedding', $fetch, $vector) YIELD node, score
WITH collect([node, score]) AS hits
WITH size(hits) AS fetched, [h IN hits WHERE h[0].kb = $kb][..$k] AS ours
CALL (ours) {
  UNWIND ours AS h
  WITH h[0] AS m, h[1] AS score
  RETURN collect({id: m.id, name: m.name, document: m.document, score: score,
    concepts: coalesce(m.size, 0), experiences: COUNT { (:Experience)-[:EXHIBITS]->(m) }}) AS rows
}
RETURN fetched, rows;
